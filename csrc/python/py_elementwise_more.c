/* py_elementwise_more.c: the hand-bound elementwise functions of issue 12 whose signatures the
 * generated bindings of py_elementwise.c cannot express: polygamma(n, input) and logit(input,
 * eps=None) (rows with a parameter), and torch's compositions of existing ops (rsub,
 * float_power, ldexp, square_, round_, positive, the module-level in-place xlogy_/gcd_/lcm_).
 *
 * Binding only: arguments are parsed here and every rule, dtype and error is the core's
 * (core/elementwise.c); compositions call the same core frontends as torch's composite ops, so
 * their gradients are recorded by the ops they are made of (float_power is PowBackward1, as in
 * torch). */
#include "py_common.h"

#include <math.h>

#define T(o) (((AmpcTensorObject *)(o))->t)

static PyObject *self_ref(PyObject *self) {
    Py_INCREF(self);
    return self;
}

/* A tensor or a Python number as a wrapped 0-dim CPU tensor (new reference). */
static ampc_tensor *operand(PyObject *o, const char *fname, const char *arg) {
    return ampc_py_tensor_or_scalar(o, ampc_cpu_device(), fname, arg);
}

static int given(PyObject *o) { return o && o != Py_None; }

/* ------------------------------------------------------------------ rows with a parameter */

/* op(x; p0) into `out` (given), in place into x (inplace), or as a new tensor */
static PyObject *param_run(ampc_op op, const char *fname, PyObject *x, ampc_scalar p0, PyObject *out, int inplace) {
    ampc_tensor *t = ampc_py_unwrap(x, fname, "input");
    if (!t) return NULL;
    if (inplace) return ampc_py_check(ampc_elementwise_params_(op, t, p0, ampc_scalar_none())) < 0 ? NULL : self_ref(x);
    if (given(out)) {
        ampc_tensor *o = ampc_py_unwrap(out, fname, "out");
        const ampc_tensor *ins[1] = {t};
        ampc_scalar ps[1] = {p0};
        if (!o || ampc_py_check(ampc_elementwise_into(op, o, 1, ins, ps, 1)) < 0) return NULL;
        return self_ref(out);
    }
    return ampc_py_wrap(ampc_elementwise_params(op, t, NULL, p0, ampc_scalar_none()));
}

/* polygamma(n, input, *, out=None); x.polygamma(n), x.polygamma_(n) */
static PyObject *m_polygamma(PyObject *m, PyObject *args, PyObject *kw) {
    static char *names[] = {"n", "input", "out", NULL};
    long long n;
    PyObject *x, *out = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "LO|$O:polygamma", names, &n, &x, &out)) return NULL;
    return param_run(AMPC_OP_POLYGAMMA, "polygamma", x, ampc_scalar_int(n), out, 0);
}
static PyObject *polygamma_method(PyObject *self, PyObject *args, PyObject *kw, int inplace) {
    static char *names[] = {"n", NULL};
    long long n;
    if (!PyArg_ParseTupleAndKeywords(args, kw, inplace ? "L:polygamma_" : "L:polygamma", names, &n)) return NULL;
    return param_run(AMPC_OP_POLYGAMMA, inplace ? "polygamma_" : "polygamma", self, ampc_scalar_int(n), NULL, inplace);
}
static PyObject *t_polygamma(PyObject *self, PyObject *args, PyObject *kw) { return polygamma_method(self, args, kw, 0); }
static PyObject *t_polygamma_(PyObject *self, PyObject *args, PyObject *kw) { return polygamma_method(self, args, kw, 1); }

/* eps: a float or None (NaN, which the formula reads as "no clamp", as torch) */
static int eps_arg(PyObject *o, ampc_scalar *eps) {
    *eps = ampc_scalar_float(NAN);
    if (!given(o)) return 0;
    double v = PyFloat_AsDouble(o);
    if (v == -1.0 && PyErr_Occurred()) return -1;
    *eps = ampc_scalar_float(v);
    return 0;
}

/* logit(input, eps=None, *, out=None), logit_(input, eps=None); x.logit(eps=None), x.logit_(eps=None) */
static PyObject *logit_function(PyObject *args, PyObject *kw, int inplace) {
    static char *names[] = {"input", "eps", "out", NULL};
    PyObject *x, *eps_o = NULL, *out = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kw, inplace ? "O|O$O:logit_" : "O|O$O:logit", names, &x, &eps_o, &out))
        return NULL;
    ampc_scalar eps;
    if (eps_arg(eps_o, &eps) < 0) return NULL;
    return param_run(AMPC_OP_LOGIT, inplace ? "logit_" : "logit", x, eps, inplace ? NULL : out, inplace);
}
static PyObject *m_logit(PyObject *m, PyObject *args, PyObject *kw) { return logit_function(args, kw, 0); }
static PyObject *m_logit_(PyObject *m, PyObject *args, PyObject *kw) { return logit_function(args, kw, 1); }
static PyObject *logit_method(PyObject *self, PyObject *args, PyObject *kw, int inplace) {
    static char *names[] = {"eps", NULL};
    PyObject *eps_o = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kw, inplace ? "|O:logit_" : "|O:logit", names, &eps_o)) return NULL;
    ampc_scalar eps;
    if (eps_arg(eps_o, &eps) < 0) return NULL;
    return param_run(AMPC_OP_LOGIT, inplace ? "logit_" : "logit", self, eps, NULL, inplace);
}
static PyObject *t_logit(PyObject *self, PyObject *args, PyObject *kw) { return logit_method(self, args, kw, 0); }
static PyObject *t_logit_(PyObject *self, PyObject *args, PyObject *kw) { return logit_method(self, args, kw, 1); }

/* ------------------------------------------------------------------ compositions */

/* rsub(input, other, *, alpha=1) = other - alpha * input */
static PyObject *m_rsub(PyObject *m, PyObject *args, PyObject *kw) {
    static char *names[] = {"input", "other", "alpha", NULL};
    PyObject *x, *y, *alpha_o = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OO|$O:rsub", names, &x, &y, &alpha_o)) return NULL;
    ampc_scalar alpha = ampc_scalar_none();
    if (given(alpha_o) && ampc_py_scalar(alpha_o, &alpha, "rsub", "alpha") < 0) return NULL;
    ampc_tensor *a = ampc_py_unwrap(x, "rsub", "input");
    if (!a) return NULL;
    ampc_tensor *b = operand(y, "rsub", "other");
    if (!b) return NULL;
    PyObject *r = ampc_py_wrap(ampc_binary(AMPC_OP_SUB, b, a, alpha));
    ampc_tensor_decref(b);
    return r;
}

/* float_power(input, exponent): pow in float64 (both operands cast first, as torch) */
static ampc_tensor *as_double(PyObject *o, const char *arg) {
    ampc_tensor *t = operand(o, "float_power", arg);
    if (!t) return NULL;
    if (t->is_wrapped_number) return t; /* a number is already a double (or an int that pow reads exactly) */
    ampc_tensor *d = ampc_to(t, AMPC_FLOAT64, t->device, false);
    ampc_tensor_decref(t);
    return d;
}
static PyObject *float_power_run(PyObject *x, PyObject *e, PyObject *out, PyObject *inplace_self) {
    if (inplace_self && T(inplace_self)->dtype != AMPC_FLOAT64) {
        PyErr_Format(PyExc_RuntimeError, "the base given to float_power_ has dtype %s but the operation's result "
                     "requires dtype Double", ampc_dtype_torch_name(T(inplace_self)->dtype));
        return NULL;
    }
    if (!AmpcTensor_Check(x) && !AmpcTensor_Check(e)) {
        PyErr_SetString(PyExc_TypeError, "float_power(): expected a Tensor for 'input' or 'exponent'");
        return NULL;
    }
    ampc_tensor *a = as_double(x, "input");
    ampc_tensor *b = a ? as_double(e, "exponent") : NULL;
    PyObject *r = NULL;
    if (b) {
        if (inplace_self) {
            if (ampc_py_check(ampc_binary_(AMPC_OP_POW, T(inplace_self), b, ampc_scalar_none())) == 0) r = self_ref(inplace_self);
        } else if (given(out)) {
            ampc_tensor *o = ampc_py_unwrap(out, "float_power", "out");
            const ampc_tensor *ins[2] = {a, b};
            ampc_scalar none = ampc_scalar_none();
            if (o && ampc_py_check(ampc_elementwise_into(AMPC_OP_POW, o, 2, ins, &none, 1)) == 0) r = self_ref(out);
        } else {
            r = ampc_py_wrap(ampc_binary(AMPC_OP_POW, a, b, ampc_scalar_none()));
        }
    }
    ampc_tensor_decref(a);
    ampc_tensor_decref(b);
    return r;
}
static PyObject *m_float_power(PyObject *m, PyObject *args, PyObject *kw) {
    static char *names[] = {"input", "exponent", "out", NULL};
    PyObject *x, *e, *out = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OO|$O:float_power", names, &x, &e, &out)) return NULL;
    return float_power_run(x, e, out, NULL);
}
static PyObject *float_power_method(PyObject *self, PyObject *args, PyObject *kw, int inplace) {
    static char *names[] = {"exponent", NULL};
    PyObject *e;
    if (!PyArg_ParseTupleAndKeywords(args, kw, inplace ? "O:float_power_" : "O:float_power", names, &e)) return NULL;
    return float_power_run(self, e, NULL, inplace ? self : NULL);
}
static PyObject *t_float_power(PyObject *self, PyObject *args, PyObject *kw) { return float_power_method(self, args, kw, 0); }
static PyObject *t_float_power_(PyObject *self, PyObject *args, PyObject *kw) { return float_power_method(self, args, kw, 1); }

/* ldexp(input, other) = input * 2 ** other, both in their promoted floating dtype (torch: an
 * fp16 input with int exponents stays fp16) */
static PyObject *ldexp_run(PyObject *x, PyObject *y, PyObject *out, int inplace) {
    ampc_tensor *a0 = ampc_py_unwrap(x, "ldexp", "input");
    ampc_tensor *e0 = a0 ? ampc_py_unwrap(y, "ldexp", "other") : NULL;
    if (!e0) return NULL;
    ampc_dtype dt = ampc_promote_types(a0->dtype, e0->dtype);
    if (!ampc_dtype_is_floating(dt)) dt = ampc_get_default_dtype();
    ampc_tensor *a = inplace ? (ampc_tensor_incref(a0), a0) : ampc_to(a0, dt, a0->device, false);
    ampc_tensor *e = a ? ampc_to(e0, dt, e0->device, false) : NULL;
    ampc_tensor *two = e ? ampc_wrap_scalar(ampc_scalar_float(2.0), ampc_cpu_device()) : NULL;
    ampc_tensor *scale = two ? ampc_binary(AMPC_OP_POW, two, e, ampc_scalar_none()) : NULL;
    ampc_tensor_decref(two);
    ampc_tensor_decref(e);
    if (!scale) {
        ampc_tensor_decref(a);
        return ampc_py_raise();
    }
    PyObject *r = NULL;
    if (inplace) {
        if (ampc_py_check(ampc_binary_(AMPC_OP_MUL, a, scale, ampc_scalar_none())) == 0) r = self_ref(x);
    } else if (given(out)) {
        ampc_tensor *o = ampc_py_unwrap(out, "ldexp", "out");
        const ampc_tensor *ins[2] = {a, scale};
        ampc_scalar none = ampc_scalar_none();
        if (o && ampc_py_check(ampc_elementwise_into(AMPC_OP_MUL, o, 2, ins, &none, 1)) == 0) r = self_ref(out);
    } else {
        r = ampc_py_wrap(ampc_binary(AMPC_OP_MUL, a, scale, ampc_scalar_none()));
    }
    ampc_tensor_decref(scale);
    ampc_tensor_decref(a);
    return r;
}
static PyObject *m_ldexp(PyObject *m, PyObject *args, PyObject *kw) {
    static char *names[] = {"input", "other", "out", NULL};
    PyObject *x, *y, *out = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OO|$O:ldexp", names, &x, &y, &out)) return NULL;
    return ldexp_run(x, y, out, 0);
}
static PyObject *m_ldexp_(PyObject *m, PyObject *args, PyObject *kw) {
    static char *names[] = {"input", "other", NULL};
    PyObject *x, *y;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OO:ldexp_", names, &x, &y)) return NULL;
    return ldexp_run(x, y, NULL, 1);
}
static PyObject *ldexp_method(PyObject *self, PyObject *args, PyObject *kw, int inplace) {
    static char *names[] = {"other", NULL};
    PyObject *y;
    if (!PyArg_ParseTupleAndKeywords(args, kw, inplace ? "O:ldexp_" : "O:ldexp", names, &y)) return NULL;
    return ldexp_run(self, y, NULL, inplace);
}
static PyObject *t_ldexp(PyObject *self, PyObject *args, PyObject *kw) { return ldexp_method(self, args, kw, 0); }
static PyObject *t_ldexp_(PyObject *self, PyObject *args, PyObject *kw) { return ldexp_method(self, args, kw, 1); }

/* square_(input) = input.pow_(2) */
static PyObject *square_inplace(PyObject *x) {
    ampc_tensor *t = ampc_py_unwrap(x, "square_", "input");
    ampc_tensor *two = t ? ampc_wrap_scalar(ampc_scalar_int(2), ampc_cpu_device()) : NULL;
    if (!two) return t ? ampc_py_raise() : NULL;
    ampc_status st = ampc_binary_(AMPC_OP_POW, t, two, ampc_scalar_none());
    ampc_tensor_decref(two);
    return ampc_py_check(st) < 0 ? NULL : self_ref(x);
}
static PyObject *m_square_(PyObject *m, PyObject *x) { return square_inplace(x); }
static PyObject *t_square_(PyObject *self, PyObject *unused) { return square_inplace(self); }

/* round_(input, *, decimals=0) */
static PyObject *m_round_(PyObject *m, PyObject *args, PyObject *kw) {
    static char *names[] = {"input", "decimals", NULL};
    PyObject *x;
    long long decimals = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O|$L:round_", names, &x, &decimals)) return NULL;
    ampc_tensor *t = ampc_py_unwrap(x, "round_", "input");
    if (!t) return NULL;
    return ampc_py_check(ampc_round_(t, decimals)) < 0 ? NULL : self_ref(x);
}

/* x.positive(): x itself (torch refuses bool) */
static PyObject *t_positive(PyObject *self, PyObject *unused) {
    if (T(self)->dtype == AMPC_BOOL) {
        PyErr_SetString(PyExc_RuntimeError, "The `+` operator, on a bool tensor is not supported.");
        return NULL;
    }
    return self_ref(self);
}

/* ampc.name_(input, other) = input.name_(other) for the binary rows torch also exposes so */
static PyObject *call_method_inplace(const char *method, PyObject *args, PyObject *kw) {
    if (kw && PyDict_Size(kw)) {
        PyErr_Format(PyExc_TypeError, "%s() takes no keyword arguments", method);
        return NULL;
    }
    if (PyTuple_GET_SIZE(args) != 2) {
        PyErr_Format(PyExc_TypeError, "%s() takes 2 positional arguments but %zd were given", method, PyTuple_GET_SIZE(args));
        return NULL;
    }
    PyObject *x = PyTuple_GET_ITEM(args, 0);
    if (!ampc_py_unwrap(x, method, "input")) return NULL;
    return PyObject_CallMethod(x, method, "O", PyTuple_GET_ITEM(args, 1));
}
static PyObject *m_xlogy_(PyObject *m, PyObject *args, PyObject *kw) { return call_method_inplace("xlogy_", args, kw); }
static PyObject *m_gcd_(PyObject *m, PyObject *args, PyObject *kw) { return call_method_inplace("gcd_", args, kw); }
static PyObject *m_lcm_(PyObject *m, PyObject *args, PyObject *kw) { return call_method_inplace("lcm_", args, kw); }

/* ------------------------------------------------------------------ method tables */

#define VK (METH_VARARGS | METH_KEYWORDS)
#define FN(f) ((PyCFunction)(void (*)(void))(f))

PyMethodDef ampc_py_tensor_methods_elementwise_more[] = {
    {"polygamma", FN(t_polygamma), VK, "polygamma(n)"},
    {"polygamma_", FN(t_polygamma_), VK, NULL},
    {"logit", FN(t_logit), VK, "logit(eps=None)"},
    {"logit_", FN(t_logit_), VK, NULL},
    {"float_power", FN(t_float_power), VK, NULL},
    {"float_power_", FN(t_float_power_), VK, NULL},
    {"ldexp", FN(t_ldexp), VK, NULL},
    {"ldexp_", FN(t_ldexp_), VK, NULL},
    {"square_", t_square_, METH_NOARGS, NULL},
    {"positive", t_positive, METH_NOARGS, NULL},
    {NULL, NULL, 0, NULL},
};

PyMethodDef ampc_py_module_methods_elementwise_more[] = {
    {"polygamma", FN(m_polygamma), VK, "polygamma(n, input, *, out=None)"},
    {"logit", FN(m_logit), VK, "logit(input, eps=None, *, out=None)"},
    {"logit_", FN(m_logit_), VK, NULL},
    {"rsub", FN(m_rsub), VK, "rsub(input, other, *, alpha=1): other - alpha * input"},
    {"float_power", FN(m_float_power), VK, "float_power(input, exponent, *, out=None): pow in float64"},
    {"ldexp", FN(m_ldexp), VK, "ldexp(input, other, *, out=None): input * 2 ** other"},
    {"ldexp_", FN(m_ldexp_), VK, NULL},
    {"square_", m_square_, METH_O, NULL},
    {"round_", FN(m_round_), VK, NULL},
    {"xlogy_", FN(m_xlogy_), VK, NULL},
    {"gcd_", FN(m_gcd_), VK, NULL},
    {"lcm_", FN(m_lcm_), VK, NULL},
    {NULL, NULL, 0, NULL},
};
