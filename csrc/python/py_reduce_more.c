/* py_reduce_more.c: Python bindings of issue 12's scans, with torch's signatures:
 *   cumprod(input, dim, *, dtype=None), x.cumprod(dim, *, dtype=None), x.cumprod_(dim, *, dtype=None)
 *   logcumsumexp(input, dim), x.logcumsumexp(dim)
 *   cummax/cummin(input, dim), x.cummax/cummin(dim) -> ampc.return_types.cummax/cummin (values, indices)
 * Binding only: the rules are the core's (core/reduce_scan.c). */
#include "py_common.h"

#define T(o) (((AmpcTensorObject *)(o))->t)
#define VK (METH_VARARGS | METH_KEYWORDS)
#define FN(f) ((PyCFunction)(void (*)(void))(f))

static int dim_arg(PyObject *o, int64_t *dim, const char *op) {
    if (!PyIndex_Check(o)) {
        PyErr_Format(PyExc_TypeError, "%s(): argument 'dim' must be int, not %s", op, Py_TYPE(o)->tp_name);
        return -1;
    }
    *dim = PyLong_AsLongLong(o);
    return (*dim == -1 && PyErr_Occurred()) ? -1 : 0;
}

/* ---- cumprod ---- */

static PyObject *cumprod_run(PyObject *x, PyObject *dim_o, PyObject *dtype_o, int inplace) {
    const char *op = inplace ? "cumprod_" : "cumprod";
    ampc_tensor *a = ampc_py_unwrap(x, op, "input");
    int64_t dim;
    ampc_dtype dtype = AMPC_DTYPE_UNDEFINED;
    if (!a || dim_arg(dim_o, &dim, op) < 0 || ampc_py_dtype(dtype_o, &dtype, op) < 0) return NULL;
    ampc_tensor *r = ampc_cumprod(a, dim, dtype);
    if (!inplace || !r) return ampc_py_wrap(r);
    ampc_status st = ampc_copy_(a, r); /* into self, recorded as a copy of the scan (torch: CumprodBackward0) */
    ampc_tensor_decref(r);
    if (ampc_py_check(st) < 0) return NULL;
    Py_INCREF(x);
    return x;
}
static PyObject *m_cumprod(PyObject *m, PyObject *args, PyObject *kw) {
    static char *names[] = {"input", "dim", "dtype", NULL};
    PyObject *x, *dim_o, *dtype_o = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OO|$O:cumprod", names, &x, &dim_o, &dtype_o)) return NULL;
    return cumprod_run(x, dim_o, dtype_o, 0);
}
static PyObject *cumprod_method(PyObject *self, PyObject *args, PyObject *kw, int inplace) {
    static char *names[] = {"dim", "dtype", NULL};
    PyObject *dim_o, *dtype_o = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kw, inplace ? "O|$O:cumprod_" : "O|$O:cumprod", names, &dim_o, &dtype_o))
        return NULL;
    return cumprod_run(self, dim_o, dtype_o, inplace);
}
static PyObject *t_cumprod(PyObject *self, PyObject *args, PyObject *kw) { return cumprod_method(self, args, kw, 0); }
static PyObject *t_cumprod_(PyObject *self, PyObject *args, PyObject *kw) { return cumprod_method(self, args, kw, 1); }

/* ---- logcumsumexp ---- */

static PyObject *logcumsumexp_run(PyObject *x, PyObject *dim_o) {
    ampc_tensor *a = ampc_py_unwrap(x, "logcumsumexp", "input");
    int64_t dim;
    if (!a || dim_arg(dim_o, &dim, "logcumsumexp") < 0) return NULL;
    return ampc_py_wrap(ampc_logcumsumexp(a, dim));
}
static PyObject *m_logcumsumexp(PyObject *m, PyObject *args, PyObject *kw) {
    static char *names[] = {"input", "dim", NULL};
    PyObject *x, *dim_o;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OO:logcumsumexp", names, &x, &dim_o)) return NULL;
    return logcumsumexp_run(x, dim_o);
}
static PyObject *t_logcumsumexp(PyObject *self, PyObject *args, PyObject *kw) {
    static char *names[] = {"dim", NULL};
    PyObject *dim_o;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O:logcumsumexp", names, &dim_o)) return NULL;
    return logcumsumexp_run(self, dim_o);
}

/* ---- cummax / cummin ---- */

static PyStructSequence_Field ext_fields[] = {{"values", NULL}, {"indices", NULL}, {NULL, NULL}};
static PyStructSequence_Desc cummax_desc = {"ampc.return_types.cummax", NULL, ext_fields, 2};
static PyStructSequence_Desc cummin_desc = {"ampc.return_types.cummin", NULL, ext_fields, 2};

static PyObject *cumext_run(ampc_op op, PyObject *x, PyObject *dim_o) {
    static PyTypeObject *types[2];
    const char *name = op == AMPC_OP_CUMMAX ? "cummax" : "cummin";
    ampc_tensor *a = ampc_py_unwrap(x, name, "input");
    int64_t dim;
    if (!a || dim_arg(dim_o, &dim, name) < 0) return NULL;
    ampc_tensor *v, *i;
    if (ampc_py_check(ampc_cummax_cummin(op, a, dim, &v, &i)) < 0) return NULL;
    PyTypeObject **type = &types[op == AMPC_OP_CUMMAX ? 0 : 1];
    if (!*type) *type = PyStructSequence_NewType(op == AMPC_OP_CUMMAX ? &cummax_desc : &cummin_desc);
    PyObject *pv = ampc_py_wrap(v), *pi = ampc_py_wrap(i);
    PyObject *r = (*type && pv && pi) ? PyStructSequence_New(*type) : NULL;
    if (!r) {
        Py_XDECREF(pv);
        Py_XDECREF(pi);
        return NULL;
    }
    PyStructSequence_SET_ITEM(r, 0, pv);
    PyStructSequence_SET_ITEM(r, 1, pi);
    return r;
}
static PyObject *cumext_function(ampc_op op, PyObject *args, PyObject *kw) {
    static char *names[] = {"input", "dim", NULL};
    PyObject *x, *dim_o;
    if (!PyArg_ParseTupleAndKeywords(args, kw, op == AMPC_OP_CUMMAX ? "OO:cummax" : "OO:cummin", names, &x, &dim_o))
        return NULL;
    return cumext_run(op, x, dim_o);
}
static PyObject *cumext_method(ampc_op op, PyObject *self, PyObject *args, PyObject *kw) {
    static char *names[] = {"dim", NULL};
    PyObject *dim_o;
    if (!PyArg_ParseTupleAndKeywords(args, kw, op == AMPC_OP_CUMMAX ? "O:cummax" : "O:cummin", names, &dim_o)) return NULL;
    return cumext_run(op, self, dim_o);
}
static PyObject *m_cummax(PyObject *m, PyObject *a, PyObject *k) { return cumext_function(AMPC_OP_CUMMAX, a, k); }
static PyObject *m_cummin(PyObject *m, PyObject *a, PyObject *k) { return cumext_function(AMPC_OP_CUMMIN, a, k); }
static PyObject *t_cummax(PyObject *s, PyObject *a, PyObject *k) { return cumext_method(AMPC_OP_CUMMAX, s, a, k); }
static PyObject *t_cummin(PyObject *s, PyObject *a, PyObject *k) { return cumext_method(AMPC_OP_CUMMIN, s, a, k); }

PyMethodDef ampc_py_module_methods_reduce_more[] = {
    {"cumprod", FN(m_cumprod), VK, "cumprod(input, dim, *, dtype=None): running products along dim"},
    {"logcumsumexp", FN(m_logcumsumexp), VK, "logcumsumexp(input, dim): running log(sum(exp(x)))"},
    {"cummax", FN(m_cummax), VK, "cummax(input, dim) -> (values, indices): running maximum"},
    {"cummin", FN(m_cummin), VK, "cummin(input, dim) -> (values, indices): running minimum"},
    {NULL, NULL, 0, NULL},
};

PyMethodDef ampc_py_tensor_methods_reduce_more[] = {
    {"cumprod", FN(t_cumprod), VK, NULL},
    {"cumprod_", FN(t_cumprod_), VK, NULL},
    {"logcumsumexp", FN(t_logcumsumexp), VK, NULL},
    {"cummax", FN(t_cummax), VK, NULL},
    {"cummin", FN(t_cummin), VK, NULL},
    {NULL, NULL, 0, NULL},
};
