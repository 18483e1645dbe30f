/* py_sampling.c: Python bindings of the sampling ops (issue 12), torch's signatures:
 * Tensor.exponential_(lambd=1) / geometric_(p) / log_normal_(mean=1, std=2) / cauchy_(median=0,
 * sigma=1), torch.multinomial / Tensor.multinomial(num_samples, replacement=False),
 * torch.poisson(input) and torch.binomial(count, prob), each with generator= (py_random.h). */
#include "py_common.h"
#include "py_random.h"

#include "core/autograd.h"

#define METHOD(name) (PyCFunction)(void (*)(void))(name)
#define VA (METH_VARARGS | METH_KEYWORDS)
#define SELF_T(o) (((AmpcTensorObject *)(o))->t)

typedef ampc_status (*fill2_fn)(ampc_tensor *t, double a, double b);

static ampc_status fill_exponential(ampc_tensor *t, double a, double b) { return ampc_exponential_(t, a); }
static ampc_status fill_geometric(ampc_tensor *t, double a, double b) { return ampc_geometric_(t, a); }
static ampc_status fill_log_normal(ampc_tensor *t, double a, double b) { return ampc_log_normal_(t, a, b); }
static ampc_status fill_cauchy(ampc_tensor *t, double a, double b) { return ampc_cauchy_(t, a, b); }

/* Parses (a=da, b=db, *, generator) per kwlist/fmt and fills self in place; returns self. */
static PyObject *fill_(PyObject *self, PyObject *args, PyObject *kwargs, char **kwlist, const char *fmt, double da,
                       double db, fill2_fn fill, const char *op) {
    PyObject *a = NULL, *b = NULL, *gen = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, fmt, kwlist, &a, &b, &gen)) return NULL;
    double va = da, vb = db;
    if (a && ampc_py_double(a, &va, op, kwlist[0]) < 0) return NULL;
    if (b && ampc_py_double(b, &vb, op, kwlist[1]) < 0) return NULL;
    ampc_tensor *t = SELF_T(self);
    if (ampc_py_check(ampc_autograd_check_inplace(t)) < 0) return NULL;
    gen_scope g;
    if (ampc_py_gen_enter(&g, gen, t->device, op) < 0) return NULL;
    ampc_status st = fill(t, va, vb);
    if (st != AMPC_OK) ampc_py_raise();
    if (ampc_py_gen_exit(&g) < 0) return NULL;
    Py_INCREF(self);
    return self;
}

static PyObject *tensor_exponential_(PyObject *self, PyObject *args, PyObject *kwargs) {
    static char *kwlist[] = {"lambd", "_unused", "generator", NULL};
    return fill_(self, args, kwargs, kwlist, "|O$OO:exponential_", 1.0, 0.0, fill_exponential, "exponential_");
}

static PyObject *tensor_geometric_(PyObject *self, PyObject *args, PyObject *kwargs) {
    static char *kwlist[] = {"p", "_unused", "generator", NULL};
    PyObject *p = args && PyTuple_GET_SIZE(args) ? PyTuple_GET_ITEM(args, 0)
                                                 : (kwargs ? PyDict_GetItemString(kwargs, "p") : NULL);
    if (!p) {
        PyErr_SetString(PyExc_TypeError, "geometric_() missing 1 required positional argument: 'p'");
        return NULL;
    }
    return fill_(self, args, kwargs, kwlist, "|O$OO:geometric_", 0.5, 0.0, fill_geometric, "geometric_");
}

static PyObject *tensor_log_normal_(PyObject *self, PyObject *args, PyObject *kwargs) {
    static char *kwlist[] = {"mean", "std", "generator", NULL};
    return fill_(self, args, kwargs, kwlist, "|OO$O:log_normal_", 1.0, 2.0, fill_log_normal, "log_normal_");
}

static PyObject *tensor_cauchy_(PyObject *self, PyObject *args, PyObject *kwargs) {
    static char *kwlist[] = {"median", "sigma", "generator", NULL};
    return fill_(self, args, kwargs, kwlist, "|OO$O:cauchy_", 0.0, 1.0, fill_cauchy, "cauchy_");
}

/* multinomial(input, num_samples, replacement=False, *, generator=None, out=None) */
static PyObject *multinomial_of(PyObject *input, PyObject *num, int replacement, PyObject *gen, PyObject *out) {
    const char *op = "multinomial";
    if (out && out != Py_None) {
        PyErr_SetString(PyExc_NotImplementedError, "multinomial(): out= is not supported by ampc");
        return NULL;
    }
    ampc_tensor *p = ampc_py_unwrap(input, op, "input");
    if (!p) return NULL;
    if (!PyLong_Check(num)) {
        PyErr_Format(PyExc_TypeError, "multinomial(): argument 'num_samples' must be int, not %s", Py_TYPE(num)->tp_name);
        return NULL;
    }
    long long n = PyLong_AsLongLong(num);
    if (n == -1 && PyErr_Occurred()) return NULL;
    gen_scope g;
    if (ampc_py_gen_enter(&g, gen, p->device, op) < 0) return NULL;
    ampc_tensor *t = ampc_multinomial(p, (int64_t)n, replacement != 0);
    if (!t) ampc_py_raise();
    if (ampc_py_gen_exit(&g) < 0) {
        ampc_tensor_decref(t);
        return NULL;
    }
    return ampc_py_wrap(t);
}

static PyObject *py_multinomial(PyObject *m, PyObject *args, PyObject *kwargs) {
    static char *kwlist[] = {"input", "num_samples", "replacement", "generator", "out", NULL};
    PyObject *input, *num, *gen = NULL, *out = NULL;
    int replacement = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OO|p$OO:multinomial", kwlist, &input, &num, &replacement, &gen,
                                     &out))
        return NULL;
    return multinomial_of(input, num, replacement, gen, out);
}

static PyObject *tensor_multinomial(PyObject *self, PyObject *args, PyObject *kwargs) {
    static char *kwlist[] = {"num_samples", "replacement", "generator", NULL};
    PyObject *num, *gen = NULL;
    int replacement = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|p$O:multinomial", kwlist, &num, &replacement, &gen)) return NULL;
    return multinomial_of(self, num, replacement, gen, NULL);
}

typedef ampc_tensor *(*make2_fn)(const ampc_tensor *a, const ampc_tensor *b);

static PyObject *run_made(ampc_tensor *a, ampc_tensor *b, PyObject *gen, const char *op) {
    gen_scope g;
    if (ampc_py_gen_enter(&g, gen, a->device, op) < 0) return NULL;
    ampc_tensor *t = b ? ampc_binomial(a, b) : ampc_poisson(a);
    if (!t) ampc_py_raise();
    if (ampc_py_gen_exit(&g) < 0) {
        ampc_tensor_decref(t);
        return NULL;
    }
    return ampc_py_wrap(t);
}

static PyObject *py_poisson(PyObject *m, PyObject *args, PyObject *kwargs) {
    static char *kwlist[] = {"input", "generator", NULL};
    PyObject *input, *gen = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|O:poisson", kwlist, &input, &gen)) return NULL;
    ampc_tensor *a = ampc_py_unwrap(input, "poisson", "input");
    return a ? run_made(a, NULL, gen, "poisson") : NULL;
}

static PyObject *py_binomial(PyObject *m, PyObject *args, PyObject *kwargs) {
    static char *kwlist[] = {"count", "prob", "generator", NULL};
    PyObject *count, *prob, *gen = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OO|O:binomial", kwlist, &count, &prob, &gen)) return NULL;
    ampc_tensor *a = ampc_py_unwrap(count, "binomial", "count");
    ampc_tensor *b = a ? ampc_py_unwrap(prob, "binomial", "prob") : NULL;
    return b ? run_made(a, b, gen, "binomial") : NULL;
}

PyMethodDef ampc_py_module_methods_sampling[] = {
    {"multinomial", METHOD(py_multinomial), VA, "multinomial(input, num_samples, replacement=False, *, generator=None)"},
    {"poisson", METHOD(py_poisson), VA, "poisson(input, generator=None): Poisson draws with rates input"},
    {"binomial", METHOD(py_binomial), VA, "binomial(count, prob, generator=None): Binomial draws"},
    {NULL, NULL, 0, NULL},
};

PyMethodDef ampc_py_tensor_methods_sampling[] = {
    {"exponential_", METHOD(tensor_exponential_), VA, "exponential_(lambd=1, *, generator=None)"},
    {"geometric_", METHOD(tensor_geometric_), VA, "geometric_(p, *, generator=None)"},
    {"log_normal_", METHOD(tensor_log_normal_), VA, "log_normal_(mean=1, std=2, *, generator=None)"},
    {"cauchy_", METHOD(tensor_cauchy_), VA, "cauchy_(median=0, sigma=1, *, generator=None)"},
    {"multinomial", METHOD(tensor_multinomial), VA, "multinomial(num_samples, replacement=False, *, generator=None)"},
    {NULL, NULL, 0, NULL},
};
