/* py_reduce.c: Python bindings of the reductions and cumsum, as Tensor methods and as module
 * functions with PyTorch's signatures:
 *   sum/mean/prod(dim=None, keepdim=False, *, dtype=None)   amax/amin(dim=(), keepdim=False)
 *   max/min() | (dim, keepdim=False) -> (values, indices) | (other: Tensor) -> maximum/minimum
 *   argmax/argmin(dim=None, keepdim=False)                  any/all(dim=None, keepdim=False)
 *   var/std(dim=None, unbiased=True, keepdim=False, *, correction=None)
 *   norm(p='fro', dim=None, keepdim=False, dtype=None)      logsumexp(dim, keepdim=False)
 *   cumsum(dim, *, dtype=None)   and the module function vector_norm(x, ord=2, dim=None, ...)
 * A dim is an int, a tuple or list of ints, or None. Each op has one implementation taking the
 * input tensor and the remaining arguments; the Tensor method and the module function (which
 * takes the input as its first argument or input=) both call it. */
#include "py_common.h"

/* ---- argument helpers ---- */

/* dim argument -> count of dims (0 = all); -1 with an exception. */
static int parse_dims(PyObject *obj, int64_t *dims, const char *op) {
    if (!obj || obj == Py_None) return 0;
    return ampc_py_int_list(obj, dims, AMPC_MAX_DIMS, op, "dim");
}

static int parse_bool(PyObject *obj, bool *out) {
    if (!obj || obj == Py_None) return 0;
    int v = PyObject_IsTrue(obj);
    if (v < 0) return -1;
    *out = v != 0;
    return 0;
}

/* A single dim (max, argmax, cumsum): an int, as PyTorch requires there. */
static int parse_one_dim(PyObject *obj, int64_t *dim, const char *op) {
    if (!PyIndex_Check(obj)) {
        PyErr_Format(PyExc_TypeError, "%s(): argument 'dim' must be int, not %s", op, Py_TYPE(obj)->tp_name);
        return -1;
    }
    *dim = PyLong_AsLongLong(obj);
    return (*dim == -1 && PyErr_Occurred()) ? -1 : 0;
}

static ampc_tensor *input_tensor(PyObject *obj, const char *op) { return ampc_py_unwrap(obj, op, "input"); }

/* The module function's arguments without the input: splits it off args or kwargs["input"].
 * Sets *rest_args and *rest_kwargs to new references (kwargs may be NULL). */
static PyObject *split_input(const char *op, PyObject *args, PyObject *kwargs, PyObject **rest_args,
                             PyObject **rest_kwargs) {
    PyObject *input = NULL;
    *rest_args = *rest_kwargs = NULL;
    if (PyTuple_GET_SIZE(args) > 0) {
        input = PyTuple_GET_ITEM(args, 0);
        *rest_args = PyTuple_GetSlice(args, 1, PyTuple_GET_SIZE(args));
        if (!*rest_args) return NULL;
        Py_XINCREF(kwargs);
        *rest_kwargs = kwargs;
        return input;
    }
    input = kwargs ? PyDict_GetItemString(kwargs, "input") : NULL;
    if (!input) {
        PyErr_Format(PyExc_TypeError, "%s() missing 1 required positional argument: \"input\"", op);
        return NULL;
    }
    *rest_args = PyTuple_New(0);
    *rest_kwargs = PyDict_Copy(kwargs);
    if (!*rest_args || !*rest_kwargs || PyDict_DelItemString(*rest_kwargs, "input") < 0) {
        Py_CLEAR(*rest_args);
        Py_CLEAR(*rest_kwargs);
        return NULL;
    }
    return input;
}

/* The Tensor method t_NAME and the module function m_NAME around impl_NAME. */
#define BIND(NAME) BIND_METHOD(NAME) BIND_FUNCTION(NAME)
#define BIND_METHOD(NAME)                                                                          \
    static PyObject *t_##NAME(PyObject *self, PyObject *args, PyObject *kwargs) {                 \
        return impl_##NAME(self, args, kwargs);                                                    \
    }
#define BIND_FUNCTION(NAME)                                                                        \
    static PyObject *m_##NAME(PyObject *module, PyObject *args, PyObject *kwargs) {               \
        PyObject *rest_args, *rest_kwargs;                                                         \
        PyObject *input = split_input(#NAME, args, kwargs, &rest_args, &rest_kwargs);             \
        if (!input) return NULL;                                                                   \
        PyObject *r = impl_##NAME(input, rest_args, rest_kwargs);                                  \
        Py_DECREF(rest_args);                                                                      \
        Py_XDECREF(rest_kwargs);                                                                   \
        return r;                                                                                  \
    }

/* ---- sum, mean, prod, amax, amin, any, all, logsumexp ---- */

static PyObject *plain_reduce(ampc_op op, const char *name, bool has_dtype, bool dim_required, PyObject *input,
                              PyObject *args, PyObject *kwargs) {
    static char *kw_dtype[] = {"dim", "keepdim", "dtype", NULL};
    static char *kw_plain[] = {"dim", "keepdim", NULL};
    PyObject *dim_o = NULL, *keep_o = NULL, *dtype_o = NULL;
    char fmt[32];
    snprintf(fmt, sizeof fmt, "%s%s:%s", dim_required ? "O|O" : "|OO", has_dtype ? "$O" : "", name);
    if (has_dtype ? !PyArg_ParseTupleAndKeywords(args, kwargs, fmt, kw_dtype, &dim_o, &keep_o, &dtype_o)
                  : !PyArg_ParseTupleAndKeywords(args, kwargs, fmt, kw_plain, &dim_o, &keep_o))
        return NULL;
    ampc_tensor *a = input_tensor(input, name);
    if (!a) return NULL;
    int64_t dims[AMPC_MAX_DIMS];
    bool keepdim = false;
    ampc_dtype dtype = AMPC_DTYPE_UNDEFINED;
    int nd = parse_dims(dim_o, dims, name);
    if (nd < 0 || parse_bool(keep_o, &keepdim) < 0 || ampc_py_dtype(dtype_o, &dtype, name) < 0) return NULL;
    return ampc_py_wrap(ampc_reduce(op, a, nd, dims, keepdim, dtype));
}

static PyObject *impl_sum(PyObject *in, PyObject *a, PyObject *k) { return plain_reduce(AMPC_OP_SUM, "sum", true, false, in, a, k); }
static PyObject *impl_mean(PyObject *in, PyObject *a, PyObject *k) { return plain_reduce(AMPC_OP_MEAN, "mean", true, false, in, a, k); }
static PyObject *impl_prod(PyObject *in, PyObject *a, PyObject *k) { return plain_reduce(AMPC_OP_PROD, "prod", true, false, in, a, k); }
static PyObject *impl_amax(PyObject *in, PyObject *a, PyObject *k) { return plain_reduce(AMPC_OP_AMAX, "amax", false, false, in, a, k); }
static PyObject *impl_amin(PyObject *in, PyObject *a, PyObject *k) { return plain_reduce(AMPC_OP_AMIN, "amin", false, false, in, a, k); }
static PyObject *impl_any(PyObject *in, PyObject *a, PyObject *k) { return plain_reduce(AMPC_OP_ANY, "any", false, false, in, a, k); }
static PyObject *impl_all(PyObject *in, PyObject *a, PyObject *k) { return plain_reduce(AMPC_OP_ALL, "all", false, false, in, a, k); }
static PyObject *impl_logsumexp(PyObject *in, PyObject *a, PyObject *k) {
    return plain_reduce(AMPC_OP_LOGSUMEXP, "logsumexp", false, true, in, a, k);
}

/* ---- max, min: three overloads ---- */

/* ampc.return_types.max / .min: (values, indices) tuples with named fields, like torch's. */
static PyStructSequence_Field minmax_fields[] = {{"values", NULL}, {"indices", NULL}, {NULL, NULL}};
static PyStructSequence_Desc max_desc = {"ampc.return_types.max", NULL, minmax_fields, 2};
static PyStructSequence_Desc min_desc = {"ampc.return_types.min", NULL, minmax_fields, 2};
static PyTypeObject *max_type, *min_type;

static PyObject *values_indices(bool is_max, ampc_tensor *values, ampc_tensor *indices) {
    PyTypeObject **type = is_max ? &max_type : &min_type;
    if (!*type) *type = PyStructSequence_NewType(is_max ? &max_desc : &min_desc);
    PyObject *v = ampc_py_wrap(values), *i = ampc_py_wrap(indices);
    PyObject *r = (*type && v && i) ? PyStructSequence_New(*type) : NULL;
    if (!r) {
        Py_XDECREF(v);
        Py_XDECREF(i);
        return NULL;
    }
    PyStructSequence_SET_ITEM(r, 0, v);
    PyStructSequence_SET_ITEM(r, 1, i);
    return r;
}

static PyObject *max_min(bool is_max, PyObject *input, PyObject *args, PyObject *kwargs) {
    static char *kwlist[] = {"dim", "keepdim", NULL};
    const char *name = is_max ? "max" : "min";
    PyObject *dim_o = NULL, *keep_o = NULL, *other = kwargs ? PyDict_GetItemString(kwargs, "other") : NULL;
    if (!other && PyTuple_GET_SIZE(args) == 1 && AmpcTensor_Check(PyTuple_GET_ITEM(args, 0)))
        other = PyTuple_GET_ITEM(args, 0);
    ampc_tensor *a = input_tensor(input, name);
    if (!a) return NULL;
    if (other) { /* max(input, other): the elementwise maximum */
        ampc_tensor *b = ampc_py_unwrap(other, name, "other");
        if (!b) return NULL;
        return ampc_py_wrap(ampc_binary(is_max ? AMPC_OP_MAXIMUM : AMPC_OP_MINIMUM, a, b, ampc_scalar_none()));
    }
    char fmt[16];
    snprintf(fmt, sizeof fmt, "|OO:%s", name);
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, fmt, kwlist, &dim_o, &keep_o)) return NULL;
    ampc_op op = is_max ? AMPC_OP_MAX_DIM : AMPC_OP_MIN_DIM;
    if (!dim_o || dim_o == Py_None) {
        if (keep_o) {
            PyErr_Format(PyExc_TypeError, "%s(): keepdim needs a dim", name);
            return NULL;
        }
        return ampc_py_wrap(ampc_reduce(op, a, 0, NULL, false, AMPC_DTYPE_UNDEFINED));
    }
    int64_t dim;
    bool keepdim = false;
    if (parse_one_dim(dim_o, &dim, name) < 0 || parse_bool(keep_o, &keepdim) < 0) return NULL;
    ampc_tensor *values, *indices;
    if (ampc_max_min_dim(op, a, dim, keepdim, &values, &indices) != AMPC_OK) return ampc_py_raise();
    return values_indices(is_max, values, indices);
}

static PyObject *impl_max(PyObject *in, PyObject *a, PyObject *k) { return max_min(true, in, a, k); }
static PyObject *impl_min(PyObject *in, PyObject *a, PyObject *k) { return max_min(false, in, a, k); }

/* ---- argmax, argmin ---- */

static PyObject *arg_reduce(ampc_op op, const char *name, PyObject *input, PyObject *args, PyObject *kwargs) {
    static char *kwlist[] = {"dim", "keepdim", NULL};
    PyObject *dim_o = NULL, *keep_o = NULL;
    char fmt[16];
    snprintf(fmt, sizeof fmt, "|OO:%s", name);
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, fmt, kwlist, &dim_o, &keep_o)) return NULL;
    ampc_tensor *a = input_tensor(input, name);
    if (!a) return NULL;
    int64_t dim = 0;
    bool keepdim = false, has_dim = dim_o && dim_o != Py_None;
    if ((has_dim && parse_one_dim(dim_o, &dim, name) < 0) || parse_bool(keep_o, &keepdim) < 0)
        return NULL;
    return ampc_py_wrap(ampc_arg_reduce(op, a, has_dim, dim, keepdim));
}

static PyObject *impl_argmax(PyObject *in, PyObject *a, PyObject *k) { return arg_reduce(AMPC_OP_ARGMAX, "argmax", in, a, k); }
static PyObject *impl_argmin(PyObject *in, PyObject *a, PyObject *k) { return arg_reduce(AMPC_OP_ARGMIN, "argmin", in, a, k); }

/* ---- var, std ---- */

static PyObject *var_std(bool take_sqrt, PyObject *input, PyObject *args, PyObject *kwargs) {
    static char *kwlist[] = {"dim", "unbiased", "keepdim", "correction", NULL};
    const char *name = take_sqrt ? "std" : "var";
    PyObject *dim_o = NULL, *unb_o = NULL, *keep_o = NULL, *corr_o = NULL;
    /* var(False): a lone bool positional is `unbiased` (PyTorch's old overload) */
    PyObject *lone = PyTuple_GET_SIZE(args) == 1 && PyBool_Check(PyTuple_GET_ITEM(args, 0)) ? PyTuple_GET_ITEM(args, 0) : NULL;
    PyObject *empty = lone ? PyTuple_New(0) : NULL;
    char fmt[24];
    snprintf(fmt, sizeof fmt, "|OOO$O:%s", name);
    if (lone && !empty) return NULL;
    int ok = PyArg_ParseTupleAndKeywords(lone ? empty : args, kwargs, fmt, kwlist, &dim_o, &unb_o, &keep_o, &corr_o);
    Py_XDECREF(empty);
    if (!ok) return NULL;
    if (lone) {
        if (unb_o) {
            PyErr_Format(PyExc_TypeError, "%s(): got multiple values for argument 'unbiased'", name);
            return NULL;
        }
        unb_o = lone;
    }
    ampc_tensor *a = input_tensor(input, name);
    if (!a) return NULL;
    if (unb_o && unb_o != Py_None && corr_o && corr_o != Py_None) {
        PyErr_Format(PyExc_TypeError, "%s(): cannot take both unbiased and correction", name);
        return NULL;
    }
    double correction = 1.0;
    bool unbiased = true, keepdim = false;
    if (unb_o && unb_o != Py_None) {
        if (parse_bool(unb_o, &unbiased) < 0) return NULL;
        correction = unbiased ? 1.0 : 0.0;
    }
    if (corr_o && corr_o != Py_None) {
        correction = PyFloat_AsDouble(corr_o);
        if (correction == -1.0 && PyErr_Occurred()) return NULL;
    }
    int64_t dims[AMPC_MAX_DIMS];
    int nd = parse_dims(dim_o, dims, name);
    if (nd < 0 || parse_bool(keep_o, &keepdim) < 0) return NULL;
    return ampc_py_wrap(ampc_var(a, nd, dims, correction, keepdim, take_sqrt));
}

static PyObject *impl_var(PyObject *in, PyObject *a, PyObject *k) { return var_std(false, in, a, k); }
static PyObject *impl_std(PyObject *in, PyObject *a, PyObject *k) { return var_std(true, in, a, k); }

/* ---- norm, vector_norm ---- */

/* p as PyTorch takes it: a number, None or 'fro' (2 over the reduced dims). */
static int parse_order(PyObject *obj, double *p, const char *op) {
    if (!obj || obj == Py_None) {
        *p = 2.0;
        return 0;
    }
    if (PyUnicode_Check(obj)) {
        if (PyUnicode_CompareWithASCIIString(obj, "fro") == 0) {
            *p = 2.0;
            return 0;
        }
        PyErr_Format(PyExc_RuntimeError, "%s(): the norm order %R is not supported (ampc has vector norms only)",
                     op, obj);
        return -1;
    }
    *p = PyFloat_AsDouble(obj);
    return (*p == -1.0 && PyErr_Occurred()) ? -1 : 0;
}

static PyObject *norm_common(const char *name, PyObject *input, PyObject *p_o, PyObject *dim_o, PyObject *keep_o,
                             PyObject *dtype_o) {
    ampc_tensor *a = input_tensor(input, name);
    if (!a) return NULL;
    double p;
    int64_t dims[AMPC_MAX_DIMS];
    bool keepdim = false;
    ampc_dtype dtype = AMPC_DTYPE_UNDEFINED;
    int nd = parse_dims(dim_o, dims, name);
    if (nd < 0 || parse_order(p_o, &p, name) < 0 || parse_bool(keep_o, &keepdim) < 0 ||
        ampc_py_dtype(dtype_o, &dtype, name) < 0)
        return NULL;
    return ampc_py_wrap(ampc_vector_norm(a, p, nd, dims, keepdim, dtype));
}

static PyObject *impl_norm(PyObject *input, PyObject *args, PyObject *kwargs) {
    static char *kwlist[] = {"p", "dim", "keepdim", "dtype", NULL};
    PyObject *p_o = NULL, *dim_o = NULL, *keep_o = NULL, *dtype_o = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|OOOO:norm", kwlist, &p_o, &dim_o, &keep_o, &dtype_o))
        return NULL;
    return norm_common("norm", input, p_o, dim_o, keep_o, dtype_o);
}

static PyObject *impl_vector_norm(PyObject *input, PyObject *args, PyObject *kwargs) {
    static char *kwlist[] = {"ord", "dim", "keepdim", "dtype", NULL};
    PyObject *p_o = NULL, *dim_o = NULL, *keep_o = NULL, *dtype_o = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|OOO$O:vector_norm", kwlist, &p_o, &dim_o, &keep_o, &dtype_o))
        return NULL;
    if (p_o && PyUnicode_Check(p_o)) {
        PyErr_SetString(PyExc_TypeError, "linalg.vector_norm(): argument 'ord' must be Number");
        return NULL;
    }
    return norm_common("linalg.vector_norm", input, p_o, dim_o, keep_o, dtype_o);
}

/* ---- cumsum ---- */

static PyObject *impl_cumsum(PyObject *input, PyObject *args, PyObject *kwargs) {
    static char *kwlist[] = {"dim", "dtype", NULL};
    PyObject *dim_o = NULL, *dtype_o = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|$O:cumsum", kwlist, &dim_o, &dtype_o)) return NULL;
    ampc_tensor *a = input_tensor(input, "cumsum");
    if (!a) return NULL;
    int64_t dim;
    ampc_dtype dtype;
    if (parse_one_dim(dim_o, &dim, "cumsum") < 0 || ampc_py_dtype(dtype_o, &dtype, "cumsum") < 0)
        return NULL;
    return ampc_py_wrap(ampc_cumsum(a, dim, dtype));
}

BIND(sum)
BIND(mean)
BIND(prod)
BIND(amax)
BIND(amin)
BIND(any)
BIND(all)
BIND(logsumexp)
BIND(max)
BIND(min)
BIND(argmax)
BIND(argmin)
BIND(var)
BIND(std)
BIND(norm)
BIND_FUNCTION(vector_norm)
BIND(cumsum)

#define ENTRY(PREFIX, NAME, DOC) {#NAME, (PyCFunction)(void (*)(void))PREFIX##_##NAME, METH_VARARGS | METH_KEYWORDS, DOC},
#define REDUCE_OPS(X, P)                                                                              \
    X(P, sum, "sum(dim=None, keepdim=False, *, dtype=None): sum over dims (all when None)")          \
    X(P, mean, "mean(dim=None, keepdim=False, *, dtype=None): mean of a floating tensor")             \
    X(P, prod, "prod(dim=None, keepdim=False, *, dtype=None): product over dims")                     \
    X(P, amax, "amax(dim=(), keepdim=False): maximum over dims (NaN propagates)")                     \
    X(P, amin, "amin(dim=(), keepdim=False): minimum over dims (NaN propagates)")                     \
    X(P, any, "any(dim=None, keepdim=False): whether any element is nonzero")                         \
    X(P, all, "all(dim=None, keepdim=False): whether every element is nonzero")                       \
    X(P, logsumexp, "logsumexp(dim, keepdim=False): log(sum(exp(x))) computed stably")                \
    X(P, max, "max() | max(dim, keepdim=False) -> (values, indices) | max(other): elementwise")       \
    X(P, min, "min() | min(dim, keepdim=False) -> (values, indices) | min(other): elementwise")       \
    X(P, argmax, "argmax(dim=None, keepdim=False): index of the first maximum (flat when dim=None)")  \
    X(P, argmin, "argmin(dim=None, keepdim=False): index of the first minimum (flat when dim=None)")  \
    X(P, var, "var(dim=None, unbiased=True, keepdim=False, *, correction=None): variance")            \
    X(P, std, "std(dim=None, unbiased=True, keepdim=False, *, correction=None): standard deviation")  \
    X(P, norm, "norm(p='fro', dim=None, keepdim=False, dtype=None): vector p-norm over dims")         \
    X(P, cumsum, "cumsum(dim, *, dtype=None): running sums along dim")

PyMethodDef ampc_py_module_methods_reduce[] = {
    REDUCE_OPS(ENTRY, m)
    {"vector_norm", (PyCFunction)(void (*)(void))m_vector_norm, METH_VARARGS | METH_KEYWORDS,
     "vector_norm(x, ord=2, dim=None, keepdim=False, *, dtype=None): as ampc.linalg.vector_norm"},
    {NULL, NULL, 0, NULL}};

PyMethodDef ampc_py_tensor_methods_reduce[] = {REDUCE_OPS(ENTRY, t){NULL, NULL, 0, NULL}};
