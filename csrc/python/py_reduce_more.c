/* py_reduce_more.c: Python bindings of issue 12's scans, with torch's signatures:
 *   cumprod(input, dim, *, dtype=None), x.cumprod(dim, *, dtype=None), x.cumprod_(dim, *, dtype=None)
 *   logcumsumexp(input, dim), x.logcumsumexp(dim)
 *   cummax/cummin(input, dim), x.cummax/cummin(dim) -> ampc.return_types.cummax/cummin (values, indices)
 *   nansum/nanmean(input, dim=None, keepdim=False, *, dtype=None), count_nonzero(input, dim=None),
 *   nan_to_num(input, nan=0.0, posinf=None, neginf=None) and nan_to_num_: compositions of core
 *   ops (where, isnan, sum), as torch's CompositeImplicit versions, so their gradients are the
 *   recorded ops'.
 * Binding only: the rules are the core's (core/reduce_scan.c, reduce.c, elementwise.c). */
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

/* ---- NaN-aware reductions and nan_to_num ---- */

static ampc_tensor *number(double v) { return ampc_wrap_scalar(ampc_scalar_float(v), ampc_cpu_device()); }

/* x with NaN (and, when the fills are given, +-inf) replaced: a chain of where()s */
static ampc_tensor *replace_where(ampc_tensor *x, ampc_op test, double fill, ampc_tensor *r) {
    ampc_tensor *mask = ampc_unary(test, x), *v = mask ? number(fill) : NULL;
    ampc_tensor *out = v ? ampc_where(mask, v, r) : NULL;
    ampc_tensor_decref(mask);
    ampc_tensor_decref(v);
    ampc_tensor_decref(r);
    return out;
}

/* the largest finite value of a floating dtype (torch's default posinf / -neginf) */
static double dtype_max(ampc_dtype dt) {
    switch (dt) {
    case AMPC_FLOAT64: return 1.7976931348623157e308;
    case AMPC_FLOAT16: return 65504.0;
    case AMPC_BFLOAT16: return 3.38953138925153547590e38;
    default: return 3.40282346638528859812e38;
    }
}

static int opt_double(PyObject *o, double *v, double dflt) {
    *v = dflt;
    if (!o || o == Py_None) return 0;
    *v = PyFloat_AsDouble(o);
    return (*v == -1.0 && PyErr_Occurred()) ? -1 : 0;
}

static PyObject *nan_to_num_run(PyObject *x, PyObject *nan_o, PyObject *pos_o, PyObject *neg_o, int inplace) {
    const char *op = inplace ? "nan_to_num_" : "nan_to_num";
    ampc_tensor *a = ampc_py_unwrap(x, op, "input");
    if (!a) return NULL;
    double nan_v, pos_v, neg_v;
    double mx = dtype_max(a->dtype);
    if (opt_double(nan_o, &nan_v, 0.0) < 0 || opt_double(pos_o, &pos_v, mx) < 0 || opt_double(neg_o, &neg_v, -mx) < 0)
        return NULL;
    ampc_tensor *r;
    if (!ampc_dtype_is_floating(a->dtype)) {
        r = ampc_clone(a); /* integers and bool hold no NaN or inf */
    } else {
        ampc_tensor_incref(a);
        r = replace_where(a, AMPC_OP_ISNAN, nan_v, a);
        r = r ? replace_where(a, AMPC_OP_ISPOSINF, pos_v, r) : NULL;
        r = r ? replace_where(a, AMPC_OP_ISNEGINF, neg_v, r) : NULL;
    }
    if (!inplace || !r) return ampc_py_wrap(r);
    ampc_status st = ampc_copy_(a, r);
    ampc_tensor_decref(r);
    if (ampc_py_check(st) < 0) return NULL;
    Py_INCREF(x);
    return x;
}
static PyObject *m_nan_to_num(PyObject *m, PyObject *args, PyObject *kw) {
    static char *names[] = {"input", "nan", "posinf", "neginf", NULL};
    PyObject *x, *a = NULL, *b = NULL, *c = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O|OOO:nan_to_num", names, &x, &a, &b, &c)) return NULL;
    return nan_to_num_run(x, a, b, c, 0);
}
static PyObject *m_nan_to_num_(PyObject *m, PyObject *args, PyObject *kw) {
    static char *names[] = {"input", "nan", "posinf", "neginf", NULL};
    PyObject *x, *a = NULL, *b = NULL, *c = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O|OOO:nan_to_num_", names, &x, &a, &b, &c)) return NULL;
    return nan_to_num_run(x, a, b, c, 1);
}
static PyObject *nan_to_num_method(PyObject *self, PyObject *args, PyObject *kw, int inplace) {
    static char *names[] = {"nan", "posinf", "neginf", NULL};
    PyObject *a = NULL, *b = NULL, *c = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kw, inplace ? "|OOO:nan_to_num_" : "|OOO:nan_to_num", names, &a, &b, &c))
        return NULL;
    return nan_to_num_run(self, a, b, c, inplace);
}
static PyObject *t_nan_to_num(PyObject *s, PyObject *a, PyObject *k) { return nan_to_num_method(s, a, k, 0); }
static PyObject *t_nan_to_num_(PyObject *s, PyObject *a, PyObject *k) { return nan_to_num_method(s, a, k, 1); }

/* which: 0 nansum, 1 nanmean, 2 count_nonzero */
static PyObject *nan_reduce_run(int which, PyObject *x, PyObject *dim_o, PyObject *keep_o, PyObject *dtype_o) {
    static const char *const names[3] = {"nansum", "nanmean", "count_nonzero"};
    const char *op = names[which];
    ampc_tensor *a = ampc_py_unwrap(x, op, "input");
    if (!a) return NULL;
    int64_t dims[AMPC_MAX_DIMS];
    int n_dims = 0;
    if (dim_o && dim_o != Py_None && (n_dims = ampc_py_int_list(dim_o, dims, AMPC_MAX_DIMS, op, "dim")) < 0) return NULL;
    int keep = keep_o ? PyObject_IsTrue(keep_o) : 0;
    ampc_dtype dtype = AMPC_DTYPE_UNDEFINED;
    if (keep < 0 || ampc_py_dtype(dtype_o, &dtype, op) < 0) return NULL;
    if (which == 2) { /* the count of x != 0 */
        ampc_tensor *zero = number(0.0), *nz = zero ? ampc_binary(AMPC_OP_NE, a, zero, ampc_scalar_none()) : NULL;
        ampc_tensor *r = nz ? ampc_reduce(AMPC_OP_SUM, nz, n_dims, dims, false, AMPC_DTYPE_UNDEFINED) : NULL;
        ampc_tensor_decref(zero);
        ampc_tensor_decref(nz);
        return ampc_py_wrap(r);
    }
    if (which == 1 && !ampc_dtype_is_floating(dtype != AMPC_DTYPE_UNDEFINED ? dtype : a->dtype)) {
        PyErr_Format(PyExc_RuntimeError, "nanmean(): expected input to have floating point or complex dtype but got %s",
                     ampc_dtype_torch_name(a->dtype));
        return NULL;
    }
    ampc_tensor *zeroed;
    if (ampc_dtype_is_floating(a->dtype)) {
        ampc_tensor *mask = ampc_unary(AMPC_OP_ISNAN, a), *zero = mask ? number(0.0) : NULL;
        zeroed = zero ? ampc_where(mask, zero, a) : NULL;
        ampc_tensor_decref(mask);
        ampc_tensor_decref(zero);
    } else {
        ampc_tensor_incref(a);
        zeroed = a;
    }
    ampc_tensor *sum = zeroed ? ampc_reduce(AMPC_OP_SUM, zeroed, n_dims, dims, keep, dtype) : NULL;
    ampc_tensor_decref(zeroed);
    if (which == 0 || !sum) return ampc_py_wrap(sum);
    /* nanmean = nansum / the count of non-NaN elements (torch's composition) */
    ampc_tensor *isn = ampc_unary(AMPC_OP_ISNAN, a), *ok = isn ? ampc_unary(AMPC_OP_LOGICAL_NOT, isn) : NULL;
    ampc_tensor *cnt = ok ? ampc_reduce(AMPC_OP_SUM, ok, n_dims, dims, keep, AMPC_DTYPE_UNDEFINED) : NULL;
    ampc_tensor *r = cnt ? ampc_binary(AMPC_OP_DIV, sum, cnt, ampc_scalar_none()) : NULL;
    ampc_tensor_decref(isn);
    ampc_tensor_decref(ok);
    ampc_tensor_decref(cnt);
    ampc_tensor_decref(sum);
    return ampc_py_wrap(r);
}
static PyObject *nan_reduce_function(int which, PyObject *args, PyObject *kw) {
    static char *names[] = {"input", "dim", "keepdim", "dtype", NULL};
    static char *cnames[] = {"input", "dim", NULL};
    PyObject *x, *dim_o = NULL, *keep_o = NULL, *dtype_o = NULL;
    if (which == 2) {
        if (!PyArg_ParseTupleAndKeywords(args, kw, "O|O:count_nonzero", cnames, &x, &dim_o)) return NULL;
    } else if (!PyArg_ParseTupleAndKeywords(args, kw, which ? "O|OO$O:nanmean" : "O|OO$O:nansum", names, &x, &dim_o,
                                            &keep_o, &dtype_o)) {
        return NULL;
    }
    return nan_reduce_run(which, x, dim_o, keep_o, dtype_o);
}
static PyObject *nan_reduce_method(int which, PyObject *self, PyObject *args, PyObject *kw) {
    static char *names[] = {"dim", "keepdim", "dtype", NULL};
    static char *cnames[] = {"dim", NULL};
    PyObject *dim_o = NULL, *keep_o = NULL, *dtype_o = NULL;
    if (which == 2) {
        if (!PyArg_ParseTupleAndKeywords(args, kw, "|O:count_nonzero", cnames, &dim_o)) return NULL;
    } else if (!PyArg_ParseTupleAndKeywords(args, kw, which ? "|OO$O:nanmean" : "|OO$O:nansum", names, &dim_o, &keep_o,
                                            &dtype_o)) {
        return NULL;
    }
    return nan_reduce_run(which, self, dim_o, keep_o, dtype_o);
}
static PyObject *m_nansum(PyObject *m, PyObject *a, PyObject *k) { return nan_reduce_function(0, a, k); }
static PyObject *m_nanmean(PyObject *m, PyObject *a, PyObject *k) { return nan_reduce_function(1, a, k); }
static PyObject *m_count_nonzero(PyObject *m, PyObject *a, PyObject *k) { return nan_reduce_function(2, a, k); }
static PyObject *t_nansum(PyObject *s, PyObject *a, PyObject *k) { return nan_reduce_method(0, s, a, k); }
static PyObject *t_nanmean(PyObject *s, PyObject *a, PyObject *k) { return nan_reduce_method(1, s, a, k); }
static PyObject *t_count_nonzero(PyObject *s, PyObject *a, PyObject *k) { return nan_reduce_method(2, s, a, k); }

PyMethodDef ampc_py_module_methods_reduce_more[] = {
    {"cumprod", FN(m_cumprod), VK, "cumprod(input, dim, *, dtype=None): running products along dim"},
    {"logcumsumexp", FN(m_logcumsumexp), VK, "logcumsumexp(input, dim): running log(sum(exp(x)))"},
    {"cummax", FN(m_cummax), VK, "cummax(input, dim) -> (values, indices): running maximum"},
    {"cummin", FN(m_cummin), VK, "cummin(input, dim) -> (values, indices): running minimum"},
    {"nansum", FN(m_nansum), VK, "nansum(input, dim=None, keepdim=False, *, dtype=None): sum treating NaN as 0"},
    {"nanmean", FN(m_nanmean), VK, "nanmean(input, dim=None, keepdim=False, *, dtype=None): mean of the non-NaN"},
    {"count_nonzero", FN(m_count_nonzero), VK, "count_nonzero(input, dim=None): int64 count of nonzeros"},
    {"nan_to_num", FN(m_nan_to_num), VK, "nan_to_num(input, nan=0.0, posinf=None, neginf=None)"},
    {"nan_to_num_", FN(m_nan_to_num_), VK, NULL},
    {NULL, NULL, 0, NULL},
};

PyMethodDef ampc_py_tensor_methods_reduce_more[] = {
    {"cumprod", FN(t_cumprod), VK, NULL},
    {"cumprod_", FN(t_cumprod_), VK, NULL},
    {"logcumsumexp", FN(t_logcumsumexp), VK, NULL},
    {"cummax", FN(t_cummax), VK, NULL},
    {"cummin", FN(t_cummin), VK, NULL},
    {"nansum", FN(t_nansum), VK, NULL},
    {"nanmean", FN(t_nanmean), VK, NULL},
    {"count_nonzero", FN(t_count_nonzero), VK, NULL},
    {"nan_to_num", FN(t_nan_to_num), VK, NULL},
    {"nan_to_num_", FN(t_nan_to_num_), VK, NULL},
    {NULL, NULL, 0, NULL},
};
