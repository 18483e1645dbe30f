/* py_elementwise.c: Python bindings of the elementwise ops: the operators of ampc.Tensor (number
 * protocol, rich comparison), its math methods (x.add(y, alpha=2), x.exp_(), ...) and the module
 * functions (ampc.add, ampc.where, ampc.gelu, ...).
 *
 * Binding only: arguments are parsed (METH_FASTCALL, with a fast path for the plain positional
 * call), Python numbers become wrapped 0-dim CPU tensors that the core passes to kernels as
 * scalar values, and the core (core/elementwise.c) does every rule and error. Reflected
 * operators follow torch/_tensor.py: `s + x` is x.add(s), `s - x` is rsub, `s / x` is
 * x.reciprocal() * s, `s ** x` is pow(s, x). */
#include "py_common.h"

#include <string.h>

#define T(o) (((AmpcTensorObject *)(o))->t)

/* ------------------------------------------------------------------ arguments */

/* A signature: parameter names in order; the first n_positional may come by position, the rest
 * only by keyword; the first n_required must be present. */
typedef struct py_sig {
    const char *fname;
    const char *const *names;
    int n_names, n_positional, n_required;
} py_sig;

/* Fills out[i] (borrowed, NULL when absent) from fastcall arguments. 0, or -1 with TypeError. */
static int parse_args(const py_sig *sig, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames, PyObject **out) {
    for (int i = 0; i < sig->n_names; i++) out[i] = NULL;
    if (nargs > sig->n_positional) {
        PyErr_Format(PyExc_TypeError, "%s() takes %d positional argument%s but %zd were given", sig->fname,
                     sig->n_positional, sig->n_positional == 1 ? "" : "s", nargs);
        return -1;
    }
    for (Py_ssize_t i = 0; i < nargs; i++) out[i] = args[i];
    Py_ssize_t nk = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
    for (Py_ssize_t k = 0; k < nk; k++) {
        PyObject *key = PyTuple_GET_ITEM(kwnames, k);
        int j = 0;
        while (j < sig->n_names && PyUnicode_CompareWithASCIIString(key, sig->names[j]) != 0) j++;
        if (j == sig->n_names) {
            PyErr_Format(PyExc_TypeError, "%s() got an unexpected keyword argument '%U'", sig->fname, key);
            return -1;
        }
        if (out[j]) {
            PyErr_Format(PyExc_TypeError, "%s() got multiple values for argument '%s'", sig->fname, sig->names[j]);
            return -1;
        }
        out[j] = args[nargs + k];
    }
    for (int i = 0; i < sig->n_required; i++)
        if (!out[i]) {
            PyErr_Format(PyExc_TypeError, "%s() missing required argument '%s' (pos %d)", sig->fname, sig->names[i], i + 1);
            return -1;
        }
    return 0;
}

static int given(PyObject *o) { return o && o != Py_None; }

/* A Tensor (new reference) or a Python number as a wrapped 0-dim CPU tensor. */
static ampc_tensor *operand(PyObject *o, const char *fname, const char *arg) {
    return ampc_py_tensor_or_scalar(o, ampc_cpu_device(), fname, arg);
}

/* A Tensor argument, new reference. */
static ampc_tensor *tensor_arg(PyObject *o, const char *fname, const char *arg) {
    ampc_tensor *t = ampc_py_unwrap(o, fname, arg);
    if (t) ampc_tensor_incref(t);
    return t;
}

/* A number argument (alpha, beta, clamp bound); a one-element tensor counts as its value. */
static int number_arg(PyObject *o, ampc_scalar *out, const char *fname, const char *arg) {
    if (AmpcTensor_Check(o)) {
        if (ampc_numel(T(o)) != 1) {
            PyErr_Format(PyExc_RuntimeError, "%s(): argument '%s' must be a number or a one-element tensor", fname, arg);
            return -1;
        }
        return ampc_py_check(ampc_get_scalar(T(o), 0, out));
    }
    return ampc_py_scalar(o, out, fname, arg);
}

static PyObject *return_self(PyObject *self) {
    Py_INCREF(self);
    return self;
}

/* ------------------------------------------------------------------ unary ops */

static PyObject *unary_function(ampc_op op, const char *fname, PyObject *const *args, Py_ssize_t nargs,
                                PyObject *kwnames) {
    static const char *const names[] = {"input", "out"};
    const py_sig sig = {fname, names, 2, 1, 1};
    PyObject *a[2] = {nargs == 1 ? args[0] : NULL, NULL};
    if ((nargs != 1 || kwnames) && parse_args(&sig, args, nargs, kwnames, a) < 0) return NULL;
    ampc_tensor *x = ampc_py_unwrap(a[0], fname, "input");
    if (!x) return NULL;
    if (given(a[1])) {
        ampc_tensor *out = ampc_py_unwrap(a[1], fname, "out");
        const ampc_tensor *ins[1] = {x};
        if (!out || ampc_py_check(ampc_elementwise_into(op, out, 1, ins, NULL, 0)) < 0) return NULL;
        return return_self(a[1]);
    }
    return ampc_py_wrap(ampc_unary(op, x));
}

static PyObject *unary_inplace(ampc_op op, PyObject *self) {
    if (ampc_py_check(ampc_unary_(op, T(self))) < 0) return NULL;
    return return_self(self);
}

/* ---- generated from the BIND column of ops.def's elementwise rows (and its AMPC_ALIAS rows):
 *   BIND_METHOD       x.name(), x.name_(), ampc.name(input, *, out=None), ampc.name_(input)
 *   BIND_PURE_METHOD  x.name(), ampc.name(input, *, out=None)
 *   BIND_FUNCTION     ampc.name(input, inplace=False), ampc.name_(input)
 *   BIND_PARAMS2      ampc.name(input, n0=d0, n1=d1, inplace=False), ampc.name_(input, n0=d0, n1=d1)
 * torch.nn.functional takes the BIND_FUNCTION and BIND_PARAMS2 ones from ampc._C by name. */
#define APPLY(M, ...) M(__VA_ARGS__)
#define BIND_METHOD METHOD, 0
#define BIND_PURE_METHOD PURE_METHOD, 0
#define BIND_FUNCTION FUNCTION, 0
#define BIND_PARAMS2(n0, d0, n1, d1) PARAMS2, n0, d0, n1, d1
#define BIND_CUSTOM CUSTOM, 0
#define BIND_NONE NONE, 0
#define BIND_BINARY(flags, inpl, other) BINARY, flags, inpl, other

static PyObject *t_unary_impl(ampc_op op, PyObject *self) { return ampc_py_wrap(ampc_unary(op, T(self))); }
static PyObject *m_unary_inplace_impl(ampc_op op, const char *fname, PyObject *x) {
    if (!ampc_py_unwrap(x, fname, "input")) return NULL;
    return unary_inplace(op, x);
}

/* fn(input, n0=d0, n1=d1, inplace=False) for rows with two float parameters (n_params 2) or none */
static PyObject *params_function(ampc_op op, const char *fname, const char *n0, double d0, const char *n1, double d1,
                                 int n_params, int force_inplace, PyObject *const *args, Py_ssize_t nargs,
                                 PyObject *kwnames) {
    const char *names[4] = {"input", n0, n1, "inplace"};
    if (n_params == 0) names[1] = "inplace";
    const py_sig sig = {fname, names, 2 + n_params, 1 + n_params, 1};
    PyObject *p[4] = {NULL, NULL, NULL, NULL};
    if (parse_args(&sig, args, nargs, kwnames, p) < 0) return NULL;
    ampc_tensor *x = ampc_py_unwrap(p[0], fname, "input");
    if (!x) return NULL;
    ampc_scalar v[2] = {ampc_scalar_float(d0), ampc_scalar_float(d1)};
    for (int k = 0; k < n_params; k++)
        if (given(p[1 + k]) && number_arg(p[1 + k], &v[k], fname, names[1 + k]) < 0) return NULL;
    PyObject *inplace_arg = p[1 + n_params];
    int inplace = force_inplace || (given(inplace_arg) && PyObject_IsTrue(inplace_arg) == 1);
    if (inplace) {
        if (ampc_py_check(ampc_elementwise_params_(op, x, v[0], v[1])) < 0) return NULL;
        return return_self(p[0]);
    }
    return ampc_py_wrap(ampc_elementwise_params(op, x, NULL, v[0], v[1]));
}

#define GEN_METHOD(id, name, ...)                                                                  \
    GEN_PURE_METHOD(id, name)                                                                      \
    static PyObject *t_##id##_(PyObject *self, PyObject *unused) { return unary_inplace(AMPC_OP_##id, self); } \
    static PyObject *m_##id##_(PyObject *m, PyObject *x) { return m_unary_inplace_impl(AMPC_OP_##id, name "_", x); }
#define GEN_PURE_METHOD(id, name, ...)                                                             \
    static PyObject *t_##id(PyObject *self, PyObject *unused) { return t_unary_impl(AMPC_OP_##id, self); } \
    static PyObject *m_##id(PyObject *m, PyObject *const *args, Py_ssize_t nargs, PyObject *kw) {  \
        return unary_function(AMPC_OP_##id, name, args, nargs, kw);                                \
    }
#define GEN_FUNCTION(id, name, ...)                                                                \
    static PyObject *m_##id(PyObject *m, PyObject *const *args, Py_ssize_t nargs, PyObject *kw) {  \
        return params_function(AMPC_OP_##id, name, NULL, 0, NULL, 0, 0, 0, args, nargs, kw);       \
    }                                                                                              \
    static PyObject *m_##id##_(PyObject *m, PyObject *const *args, Py_ssize_t nargs, PyObject *kw) { \
        return params_function(AMPC_OP_##id, name "_", NULL, 0, NULL, 0, 0, 1, args, nargs, kw);   \
    }
#define GEN_PARAMS2(id, name, n0, d0, n1, d1)                                                      \
    static PyObject *m_##id(PyObject *m, PyObject *const *args, Py_ssize_t nargs, PyObject *kw) {  \
        return params_function(AMPC_OP_##id, name, #n0, d0, #n1, d1, 2, 0, args, nargs, kw);       \
    }                                                                                              \
    static PyObject *m_##id##_(PyObject *m, PyObject *const *args, Py_ssize_t nargs, PyObject *kw) { \
        return params_function(AMPC_OP_##id, name "_", #n0, d0, #n1, d1, 2, 1, args, nargs, kw);   \
    }
#define GEN_CUSTOM(id, name, ...)
#define GEN_NONE(id, name, ...)
#define GEN_BINARY(id, name, ...) /* generated after binary_spec, below */
#define GEN_BIND(id, name, kind, ...) GEN_##kind(id, name, __VA_ARGS__)
#define AMPC_EW_OP(id, name, kind, ac, grad, save, rule, tkernel, form, dtypes, stem, bind) APPLY(GEN_BIND, id, name, bind)
#include "../core/ops.def"
#undef AMPC_EW_OP

/* round(input, *, decimals=0) */
static PyObject *round_impl(PyObject *x, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames, int method,
                            int inplace) {
    static const char *const fnames[] = {"input", "decimals"}, *const mnames[] = {"decimals"};
    const char *fname = inplace ? "round_" : "round";
    const py_sig sig = {fname, method ? mnames : fnames, method ? 1 : 2, method ? 0 : 1, method ? 0 : 1};
    PyObject *a[2];
    if (parse_args(&sig, args, nargs, kwnames, a) < 0) return NULL;
    if (!method) x = a[0];
    PyObject *dec = method ? a[0] : a[1];
    ampc_tensor *t = ampc_py_unwrap(x, fname, "input");
    if (!t) return NULL;
    long long decimals = 0;
    if (given(dec)) {
        decimals = PyLong_AsLongLong(dec);
        if (decimals == -1 && PyErr_Occurred()) return NULL;
    }
    if (inplace) return ampc_py_check(ampc_round_(t, decimals)) < 0 ? NULL : return_self(x);
    return ampc_py_wrap(ampc_round(t, decimals));
}
static PyObject *t_round(PyObject *self, PyObject *const *args, Py_ssize_t n, PyObject *kw) {
    return round_impl(self, args, n, kw, 1, 0);
}
static PyObject *t_round_(PyObject *self, PyObject *const *args, Py_ssize_t n, PyObject *kw) {
    return round_impl(self, args, n, kw, 1, 1);
}
static PyObject *m_round(PyObject *m, PyObject *const *args, Py_ssize_t n, PyObject *kw) {
    (void)m;
    return round_impl(NULL, args, n, kw, 0, 0);
}

/* ------------------------------------------------------------------ binary ops */

enum {
    B_ALPHA = 1,          /* takes alpha= (add, sub) */
    B_ROUNDING = 2,       /* takes rounding_mode= (div) */
    B_INPUT_NUMBER = 4,   /* the module function's input may be a Python number (torch.add(2, x)) */
    B_OTHER_TENSOR = 8,   /* other must be a Tensor (maximum, atan2, logical ops) */
};

typedef struct binary_spec {
    ampc_op op;
    unsigned flags;
    int mode; /* DIV's rounding mode when the name fixes it: true_divide 0, floor_divide 2 */
    const char *name, *other;
} binary_spec;

/* Parses alpha / rounding_mode. */
static int binary_options(const binary_spec *s, PyObject *extra, ampc_scalar *alpha, int *mode) {
    *alpha = ampc_scalar_none();
    *mode = s->mode;
    if (!given(extra)) return 0;
    if (s->flags & B_ALPHA) return number_arg(extra, alpha, s->name, "alpha");
    if (s->flags & B_ROUNDING) {
        if (PyUnicode_Check(extra) && PyUnicode_CompareWithASCIIString(extra, "trunc") == 0) *mode = 1;
        else if (PyUnicode_Check(extra) && PyUnicode_CompareWithASCIIString(extra, "floor") == 0) *mode = 2;
        else {
            PyObject *r = PyObject_Repr(extra);
            if (r) PyErr_Format(PyExc_RuntimeError, "div expected rounding_mode to be one of None, 'trunc', or 'floor' "
                                                    "but found %U", r);
            Py_XDECREF(r);
            return -1;
        }
    }
    return 0;
}

/* The op on converted operands: into `out` / in place into `self` / a new tensor. */
static PyObject *binary_run(const binary_spec *s, ampc_tensor *a, ampc_tensor *b, ampc_scalar alpha, int mode,
                            PyObject *out, PyObject *inplace_self) {
    PyObject *result = NULL;
    ampc_scalar opt = s->op == AMPC_OP_DIV ? ampc_scalar_int(mode) : alpha;
    if (inplace_self) {
        ampc_status st = (s->op == AMPC_OP_DIV && mode) ? ampc_div_mode_(a, b, mode) : ampc_binary_(s->op, a, b, alpha);
        if (ampc_py_check(st) == 0) result = return_self(inplace_self);
    } else if (given(out)) {
        ampc_tensor *o = ampc_py_unwrap(out, s->name, "out");
        const ampc_tensor *ins[2] = {a, b};
        if (o && ampc_py_check(ampc_elementwise_into(s->op, o, 2, ins, &opt, 1)) == 0) result = return_self(out);
    } else {
        result = ampc_py_wrap(s->op == AMPC_OP_DIV && mode ? ampc_div_mode(a, b, mode) : ampc_binary(s->op, a, b, alpha));
    }
    return result;
}

/* ampc.name(input, other, *, alpha/rounding_mode, out=None) */
static PyObject *binary_function(const binary_spec *s, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames) {
    const char *extra_name = (s->flags & B_ALPHA) ? "alpha" : (s->flags & B_ROUNDING) ? "rounding_mode" : NULL;
    const char *names[4] = {"input", s->other, extra_name ? extra_name : "out", "out"};
    const py_sig sig = {s->name, names, extra_name ? 4 : 3, 2, 2};
    PyObject *p[4] = {NULL, NULL, NULL, NULL};
    if (nargs == 2 && !kwnames) {
        p[0] = args[0];
        p[1] = args[1];
    } else if (parse_args(&sig, args, nargs, kwnames, p) < 0) {
        return NULL;
    }
    PyObject *extra = extra_name ? p[2] : NULL, *out = extra_name ? p[3] : p[2];
    ampc_scalar alpha;
    int mode;
    if (binary_options(s, extra, &alpha, &mode) < 0) return NULL;
    ampc_tensor *a = (s->flags & B_INPUT_NUMBER) ? operand(p[0], s->name, "input") : tensor_arg(p[0], s->name, "input");
    if (!a) return NULL;
    ampc_tensor *b = (s->flags & B_OTHER_TENSOR) ? tensor_arg(p[1], s->name, s->other) : operand(p[1], s->name, s->other);
    PyObject *r = b ? binary_run(s, a, b, alpha, mode, out, NULL) : NULL;
    ampc_tensor_decref(a);
    ampc_tensor_decref(b);
    return r;
}

/* x.name(other, *, alpha/rounding_mode) and x.name_(...) */
static PyObject *binary_method(const binary_spec *s, PyObject *self, PyObject *const *args, Py_ssize_t nargs,
                               PyObject *kwnames, int inplace) {
    const char *extra_name = (s->flags & B_ALPHA) ? "alpha" : (s->flags & B_ROUNDING) ? "rounding_mode" : NULL;
    const char *names[2] = {s->other, extra_name};
    const py_sig sig = {s->name, names, extra_name ? 2 : 1, 1, 1};
    PyObject *p[2] = {NULL, NULL};
    if (nargs == 1 && !kwnames)
        p[0] = args[0];
    else if (parse_args(&sig, args, nargs, kwnames, p) < 0)
        return NULL;
    ampc_scalar alpha;
    int mode;
    if (binary_options(s, p[1], &alpha, &mode) < 0) return NULL;
    ampc_tensor *b = (s->flags & B_OTHER_TENSOR) ? tensor_arg(p[0], s->name, s->other) : operand(p[0], s->name, s->other);
    if (!b) return NULL;
    PyObject *r = binary_run(s, T(self), b, alpha, mode, NULL, inplace ? self : NULL);
    ampc_tensor_decref(b);
    return r;
}

/* name, op, flags, fixed rounding mode, name of the second argument, has x.name_() (Y/N) */
#define ARITH (B_INPUT_NUMBER)
#define BINARY_OPS(X)                                          \
    X(add, ADD, ARITH | B_ALPHA, 0, "other", Y)                \
    X(sub, SUB, ARITH | B_ALPHA, 0, "other", Y)                \
    X(subtract, SUB, ARITH | B_ALPHA, 0, "other", Y)           \
    X(mul, MUL, ARITH, 0, "other", Y)                          \
    X(multiply, MUL, ARITH, 0, "other", Y)                     \
    X(div, DIV, ARITH | B_ROUNDING, 0, "other", Y)             \
    X(divide, DIV, ARITH | B_ROUNDING, 0, "other", Y)          \
    X(true_divide, DIV, ARITH, 0, "other", Y)                  \
    X(floor_divide, DIV, ARITH, 2, "other", Y)                 \
    X(remainder, REMAINDER, ARITH, 0, "other", Y)              \
    X(pow, POW, ARITH, 0, "exponent", Y)                       \
    X(maximum, MAXIMUM, B_OTHER_TENSOR, 0, "other", N)         \
    X(minimum, MINIMUM, B_OTHER_TENSOR, 0, "other", N)         \
    X(atan2, ATAN2, B_OTHER_TENSOR, 0, "other", Y)             \
    X(arctan2, ATAN2, B_OTHER_TENSOR, 0, "other", Y)           \
    X(logical_and, LOGICAL_AND, B_OTHER_TENSOR, 0, "other", Y) \
    X(logical_or, LOGICAL_OR, B_OTHER_TENSOR, 0, "other", Y)   \
    X(bitwise_and, BITWISE_AND, 0, 0, "other", Y)              \
    X(bitwise_or, BITWISE_OR, 0, 0, "other", Y)                \
    X(bitwise_xor, BITWISE_XOR, 0, 0, "other", Y)              \
    X(eq, EQ, 0, 0, "other", Y)                                \
    X(ne, NE, 0, 0, "other", Y)                                \
    X(not_equal, NE, 0, 0, "other", Y)                         \
    X(lt, LT, 0, 0, "other", Y)                                \
    X(less, LT, 0, 0, "other", Y)                              \
    X(le, LE, 0, 0, "other", Y)                                \
    X(less_equal, LE, 0, 0, "other", Y)                        \
    X(gt, GT, 0, 0, "other", Y)                                \
    X(greater, GT, 0, 0, "other", Y)                           \
    X(ge, GE, 0, 0, "other", Y)                                \
    X(greater_equal, GE, 0, 0, "other", Y)

#define DEF_BINARY_INPLACE_Y(name)                                                                        \
    static PyObject *t_##name##_(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kw) { \
        return binary_method(&spec_##name, self, args, nargs, kw, 1);                                     \
    }
#define DEF_BINARY_INPLACE_N(name)
#define DEF_BINARY(name, OP, FLAGS, MODE, OTHER, INPL)                                                 \
    static const binary_spec spec_##name = {AMPC_OP_##OP, FLAGS, MODE, #name, OTHER};                  \
    static PyObject *m_##name(PyObject *m, PyObject *const *args, Py_ssize_t nargs, PyObject *kw) {    \
        (void)m;                                                                                       \
        return binary_function(&spec_##name, args, nargs, kw);                                         \
    }                                                                                                  \
    static PyObject *t_##name(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kw) { \
        return binary_method(&spec_##name, self, args, nargs, kw, 0);                                  \
    }                                                                                                  \
    DEF_BINARY_INPLACE_##INPL(name)
BINARY_OPS(DEF_BINARY)

/* the BIND_BINARY rows of ops.def (issue 12): the same three entry points per row */
#define GEN2_BINARY(id, name, FLAGS, INPL, OTHER)                                                  \
    static const binary_spec spec_##id = {AMPC_OP_##id, FLAGS, 0, name, OTHER};                    \
    static PyObject *m_##id(PyObject *m, PyObject *const *args, Py_ssize_t nargs, PyObject *kw) {  \
        (void)m;                                                                                   \
        return binary_function(&spec_##id, args, nargs, kw);                                       \
    }                                                                                              \
    static PyObject *t_##id(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kw) { \
        return binary_method(&spec_##id, self, args, nargs, kw, 0);                                \
    }                                                                                              \
    DEF_BINARY_INPLACE_##INPL(id)
#define GEN2_METHOD(...)
#define GEN2_PURE_METHOD(...)
#define GEN2_FUNCTION(...)
#define GEN2_PARAMS2(...)
#define GEN2_CUSTOM(...)
#define GEN2_NONE(...)
#define GEN2_BIND(id, name, kind, ...) GEN2_##kind(id, name, __VA_ARGS__)
#define AMPC_EW_OP(id, name, kind, ac, grad, save, rule, tkernel, form, dtypes, stem, bind) APPLY(GEN2_BIND, id, name, bind)
#include "../core/ops.def"
#undef AMPC_EW_OP

/* ------------------------------------------------------------------ clamp, where, activations */

/* clamp(input, min=None, max=None): numbers go to the scalar kernel, tensors through
 * maximum/minimum. */
static PyObject *clamp_impl(const char *fname, PyObject *x, PyObject *min, PyObject *max, int inplace) {
    ampc_tensor *t = ampc_py_unwrap(x, fname, "input");
    if (!t) return NULL;
    min = given(min) ? min : NULL;
    max = given(max) ? max : NULL;
    if ((min && AmpcTensor_Check(min)) || (max && AmpcTensor_Check(max))) {
        ampc_tensor *lo = min ? operand(min, fname, "min") : NULL;
        ampc_tensor *hi = (max && !(min && !lo)) ? operand(max, fname, "max") : NULL;
        PyObject *r = NULL;
        if ((!min || lo) && (!max || hi)) {
            if (inplace)
                r = ampc_py_check(ampc_clamp_tensors_(t, lo, hi)) == 0 ? return_self(x) : NULL;
            else
                r = ampc_py_wrap(ampc_clamp_tensors(t, lo, hi));
        }
        ampc_tensor_decref(lo);
        ampc_tensor_decref(hi);
        return r;
    }
    ampc_scalar lo = ampc_scalar_none(), hi = ampc_scalar_none();
    if ((min && ampc_py_scalar(min, &lo, fname, "min") < 0) || (max && ampc_py_scalar(max, &hi, fname, "max") < 0))
        return NULL;
    if (inplace) return ampc_py_check(ampc_clamp_(t, lo, hi)) == 0 ? return_self(x) : NULL;
    return ampc_py_wrap(ampc_clamp(t, lo, hi));
}

/* which: 0 clamp/clip (min, max), 1 clamp_min (min), 2 clamp_max (max) */
static PyObject *clamp_entry(const char *fname, int which, int method, int inplace, PyObject *self,
                             PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames) {
    static const char *const f_both[] = {"input", "min", "max"}, *const f_min[] = {"input", "min"},
                             *const f_max[] = {"input", "max"};
    const char *const *names = which == 0 ? f_both : which == 1 ? f_min : f_max;
    int n = which == 0 ? 3 : 2, skip = method ? 1 : 0;
    const py_sig sig = {fname, names + skip, n - skip, n - skip, which == 0 ? 1 - skip : 2 - skip};
    PyObject *p[3] = {NULL, NULL, NULL};
    if (parse_args(&sig, args, nargs, kwnames, p + skip) < 0) return NULL;
    if (method) p[0] = self;
    PyObject *min = which == 2 ? NULL : p[1], *max = which == 0 ? p[2] : which == 2 ? p[1] : NULL;
    if (which != 0 && !given(which == 1 ? min : max)) {
        PyErr_Format(PyExc_TypeError, "%s(): argument '%s' must be Number or Tensor, not None", fname,
                     which == 1 ? "min" : "max");
        return NULL;
    }
    return clamp_impl(fname, p[0], min, max, inplace);
}

#define CLAMP_NAMES(X) X(clamp, 0) X(clip, 0) X(clamp_min, 1) X(clamp_max, 2)
#define DEF_CLAMP(name, which)                                                                            \
    static PyObject *m_##name(PyObject *m, PyObject *const *args, Py_ssize_t nargs, PyObject *kw) {       \
        (void)m;                                                                                          \
        return clamp_entry(#name, which, 0, 0, NULL, args, nargs, kw);                                    \
    }                                                                                                     \
    static PyObject *m_##name##_(PyObject *m, PyObject *const *args, Py_ssize_t nargs, PyObject *kw) {    \
        (void)m;                                                                                          \
        return clamp_entry(#name "_", which, 0, 1, NULL, args, nargs, kw);                                \
    }                                                                                                     \
    static PyObject *t_##name(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kw) {    \
        return clamp_entry(#name, which, 1, 0, self, args, nargs, kw);                                    \
    }                                                                                                     \
    static PyObject *t_##name##_(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kw) { \
        return clamp_entry(#name "_", which, 1, 1, self, args, nargs, kw);                                \
    }
CLAMP_NAMES(DEF_CLAMP)

static PyObject *where_run(PyObject *cond, PyObject *x, PyObject *y) {
    ampc_tensor *c = tensor_arg(cond, "where", "condition");
    ampc_tensor *a = c ? operand(x, "where", "input") : NULL;
    ampc_tensor *b = a ? operand(y, "where", "other") : NULL;
    PyObject *r = b ? ampc_py_wrap(ampc_where(c, a, b)) : NULL;
    ampc_tensor_decref(c);
    ampc_tensor_decref(a);
    ampc_tensor_decref(b);
    return r;
}

/* where(condition, input, other); the one-argument form is nonzero(as_tuple=True) */
static PyObject *m_where(PyObject *m, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames) {
    (void)m;
    static const char *const names[] = {"condition", "input", "other"};
    const py_sig sig = {"where", names, 3, 3, 1};
    PyObject *p[3];
    if (parse_args(&sig, args, nargs, kwnames, p) < 0) return NULL;
    if (!p[1] && !p[2]) {
        if (!ampc_py_unwrap(p[0], "where", "condition")) return NULL;
        PyObject *nonzero = PyObject_GetAttrString(p[0], "nonzero");
        PyObject *empty = nonzero ? PyTuple_New(0) : NULL;
        PyObject *kw = empty ? Py_BuildValue("{s:O}", "as_tuple", Py_True) : NULL;
        PyObject *r = kw ? PyObject_Call(nonzero, empty, kw) : NULL;
        Py_XDECREF(nonzero);
        Py_XDECREF(empty);
        Py_XDECREF(kw);
        return r;
    }
    if (!p[1] || !p[2]) {
        PyErr_SetString(PyExc_TypeError, "where() missing required argument 'input' or 'other'");
        return NULL;
    }
    return where_run(p[0], p[1], p[2]);
}

/* x.where(condition, other) */
static PyObject *t_where(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames) {
    static const char *const names[] = {"condition", "other"};
    const py_sig sig = {"where", names, 2, 2, 2};
    PyObject *p[2];
    if (parse_args(&sig, args, nargs, kwnames, p) < 0) return NULL;
    return where_run(p[0], self, p[1]);
}

/* gelu(input, approximate='none') */
static PyObject *m_gelu(PyObject *m, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames) {
    (void)m;
    static const char *const names[] = {"input", "approximate"};
    const py_sig sig = {"gelu", names, 2, 1, 1};
    PyObject *p[2];
    if (parse_args(&sig, args, nargs, kwnames, p) < 0) return NULL;
    ampc_tensor *x = ampc_py_unwrap(p[0], "gelu", "input");
    if (!x) return NULL;
    int tanh_approx = 0;
    if (p[1]) {
        if (!PyUnicode_Check(p[1])) {
            PyErr_Format(PyExc_TypeError, "gelu(): argument 'approximate' must be str, not %s", Py_TYPE(p[1])->tp_name);
            return NULL;
        }
        if (PyUnicode_CompareWithASCIIString(p[1], "tanh") == 0)
            tanh_approx = 1;
        else if (PyUnicode_CompareWithASCIIString(p[1], "none") != 0) {
            PyErr_SetString(PyExc_RuntimeError, "approximate argument must be either none or tanh.");
            return NULL;
        }
    }
    return ampc_py_wrap(ampc_gelu(x, tanh_approx));
}

/* x.name() and ampc.name(input) of a hand-bound op whose one argument is its input: name_of(x) */
#define DEF_SELF_OR_INPUT(name)                                                                      \
    static PyObject *t_##name(PyObject *self, PyObject *unused) { return name##_of(self); }          \
    static PyObject *m_##name(PyObject *m, PyObject *x) { return name##_of(x); }

/* square(input) = pow(input, 2) */
static PyObject *square_of(PyObject *x) {
    ampc_tensor *t = ampc_py_unwrap(x, "square", "input");
    ampc_tensor *two = t ? ampc_wrap_scalar(ampc_scalar_int(2), ampc_cpu_device()) : NULL;
    if (!two) return t ? ampc_py_raise() : NULL;
    PyObject *r = ampc_py_wrap(ampc_binary(AMPC_OP_POW, t, two, ampc_scalar_none()));
    ampc_tensor_decref(two);
    return r;
}
DEF_SELF_OR_INPUT(square)

static PyObject *bitwise_not_of(PyObject *x) {
    ampc_tensor *t = ampc_py_unwrap(x, "bitwise_not", "input");
    return t ? ampc_py_wrap(ampc_bitwise_not(t)) : NULL;
}
DEF_SELF_OR_INPUT(bitwise_not)

static PyObject *positive_of(PyObject *x) {
    ampc_tensor *t = ampc_py_unwrap(x, "positive", "input");
    if (!t) return NULL;
    if (t->dtype == AMPC_BOOL) {
        PyErr_SetString(PyExc_RuntimeError, "The `+` operator, on a bool tensor is not supported.");
        return NULL;
    }
    return return_self(x);
}
static PyObject *m_positive(PyObject *m, PyObject *x) { return positive_of(x); }

/* ------------------------------------------------------------------ operators */

/* `left op right` where either side may be the tensor; NotImplemented for other types, so
 * Python can try the other operand. mode: DIV's rounding mode. */
static PyObject *operator(ampc_op op, int mode, PyObject *left, PyObject *right) {
    ampc_tensor *a = operand(left, ampc_op_name(op), "input");
    ampc_tensor *b = a ? operand(right, ampc_op_name(op), "other") : NULL;
    if (!b) {
        ampc_tensor_decref(a);
        if (PyErr_ExceptionMatches(PyExc_TypeError)) {
            PyErr_Clear();
            Py_RETURN_NOTIMPLEMENTED;
        }
        return NULL;
    }
    ampc_tensor *r = mode ? ampc_div_mode(a, b, mode) : ampc_binary(op, a, b, ampc_scalar_none());
    ampc_tensor_decref(a);
    ampc_tensor_decref(b);
    return ampc_py_wrap(r);
}

/* commutative: `s op x` is computed as `x op s`, as torch's __radd__ = __add__ */
static PyObject *commuting(ampc_op op, PyObject *a, PyObject *b) {
    return AmpcTensor_Check(a) ? operator(op, 0, a, b) : operator(op, 0, b, a);
}

static PyObject *nb_add(PyObject *a, PyObject *b) { return commuting(AMPC_OP_ADD, a, b); }
static PyObject *nb_multiply(PyObject *a, PyObject *b) { return commuting(AMPC_OP_MUL, a, b); }
static PyObject *nb_and(PyObject *a, PyObject *b) { return commuting(AMPC_OP_BITWISE_AND, a, b); }
static PyObject *nb_or(PyObject *a, PyObject *b) { return commuting(AMPC_OP_BITWISE_OR, a, b); }
static PyObject *nb_xor(PyObject *a, PyObject *b) { return commuting(AMPC_OP_BITWISE_XOR, a, b); }
static PyObject *nb_subtract(PyObject *a, PyObject *b) { return operator(AMPC_OP_SUB, 0, a, b); }
static PyObject *nb_remainder(PyObject *a, PyObject *b) { return operator(AMPC_OP_REMAINDER, 0, a, b); }
static PyObject *nb_floor_divide(PyObject *a, PyObject *b) { return operator(AMPC_OP_DIV, 2, a, b); }
static PyObject *nb_lshift(PyObject *a, PyObject *b) { return operator(AMPC_OP_BITWISE_LEFT_SHIFT, 0, a, b); }
static PyObject *nb_rshift(PyObject *a, PyObject *b) { return operator(AMPC_OP_BITWISE_RIGHT_SHIFT, 0, a, b); }

/* s / x is x.reciprocal() * s in torch (torch/_tensor.py __rtruediv__) */
static PyObject *nb_true_divide(PyObject *a, PyObject *b) {
    if (AmpcTensor_Check(a)) return operator(AMPC_OP_DIV, 0, a, b);
    ampc_scalar s;
    if (ampc_py_scalar(a, &s, "__rtruediv__", "other") < 0) {
        if (!PyErr_ExceptionMatches(PyExc_TypeError)) return NULL;
        PyErr_Clear();
        Py_RETURN_NOTIMPLEMENTED;
    }
    PyObject *recip = ampc_py_wrap(ampc_unary(AMPC_OP_RECIPROCAL, T(b)));
    if (!recip) return NULL;
    PyObject *r = operator(AMPC_OP_MUL, 0, recip, a);
    Py_DECREF(recip);
    return r;
}

static PyObject *nb_power(PyObject *a, PyObject *b, PyObject *mod) {
    if (mod != Py_None) Py_RETURN_NOTIMPLEMENTED;
    return operator(AMPC_OP_POW, 0, a, b);
}

/* a op= b: the core's in-place op; a is always the tensor here */
static PyObject *inplace(ampc_op op, int mode, PyObject *a, PyObject *b) {
    if (!AmpcTensor_Check(a)) Py_RETURN_NOTIMPLEMENTED;
    ampc_tensor *t = operand(b, ampc_op_name(op), "other");
    if (!t) {
        if (!PyErr_ExceptionMatches(PyExc_TypeError)) return NULL;
        PyErr_Clear();
        Py_RETURN_NOTIMPLEMENTED;
    }
    ampc_status st = mode ? ampc_div_mode_(T(a), t, mode) : ampc_binary_(op, T(a), t, ampc_scalar_none());
    ampc_tensor_decref(t);
    if (ampc_py_check(st) < 0) return NULL;
    return return_self(a);
}

static PyObject *nb_inplace_add(PyObject *a, PyObject *b) { return inplace(AMPC_OP_ADD, 0, a, b); }
static PyObject *nb_inplace_subtract(PyObject *a, PyObject *b) { return inplace(AMPC_OP_SUB, 0, a, b); }
static PyObject *nb_inplace_multiply(PyObject *a, PyObject *b) { return inplace(AMPC_OP_MUL, 0, a, b); }
static PyObject *nb_inplace_true_divide(PyObject *a, PyObject *b) { return inplace(AMPC_OP_DIV, 0, a, b); }
static PyObject *nb_inplace_floor_divide(PyObject *a, PyObject *b) { return inplace(AMPC_OP_DIV, 2, a, b); }
static PyObject *nb_inplace_remainder(PyObject *a, PyObject *b) { return inplace(AMPC_OP_REMAINDER, 0, a, b); }
static PyObject *nb_inplace_and(PyObject *a, PyObject *b) { return inplace(AMPC_OP_BITWISE_AND, 0, a, b); }
static PyObject *nb_inplace_or(PyObject *a, PyObject *b) { return inplace(AMPC_OP_BITWISE_OR, 0, a, b); }
static PyObject *nb_inplace_xor(PyObject *a, PyObject *b) { return inplace(AMPC_OP_BITWISE_XOR, 0, a, b); }
static PyObject *nb_inplace_lshift(PyObject *a, PyObject *b) { return inplace(AMPC_OP_BITWISE_LEFT_SHIFT, 0, a, b); }
static PyObject *nb_inplace_rshift(PyObject *a, PyObject *b) { return inplace(AMPC_OP_BITWISE_RIGHT_SHIFT, 0, a, b); }
static PyObject *nb_inplace_power(PyObject *a, PyObject *b, PyObject *mod) {
    if (mod != Py_None) Py_RETURN_NOTIMPLEMENTED;
    return inplace(AMPC_OP_POW, 0, a, b);
}

static PyObject *nb_negative(PyObject *a) { return ampc_py_wrap(ampc_unary(AMPC_OP_NEG, T(a))); }
static PyObject *nb_absolute(PyObject *a) { return ampc_py_wrap(ampc_unary(AMPC_OP_ABS, T(a))); }
static PyObject *nb_positive(PyObject *a) { return positive_of(a); }
static PyObject *nb_invert(PyObject *a) {
    if (ampc_dtype_is_floating(T(a)->dtype)) {
        PyErr_SetString(PyExc_TypeError, "~ (operator.invert) is only implemented on integer and Boolean-type tensors");
        return NULL;
    }
    return bitwise_not_of(a);
}

/* nb_bool, nb_int, nb_float, nb_index are the tensor core's (module.c installs them);
 * nb_matrix_multiply belongs to the linalg area. */
PyNumberMethods ampc_py_tensor_as_number = {
    .nb_add = nb_add,
    .nb_subtract = nb_subtract,
    .nb_multiply = nb_multiply,
    .nb_remainder = nb_remainder,
    .nb_power = nb_power,
    .nb_negative = nb_negative,
    .nb_positive = nb_positive,
    .nb_absolute = nb_absolute,
    .nb_invert = nb_invert,
    .nb_lshift = nb_lshift,
    .nb_rshift = nb_rshift,
    .nb_and = nb_and,
    .nb_xor = nb_xor,
    .nb_or = nb_or,
    .nb_inplace_add = nb_inplace_add,
    .nb_inplace_subtract = nb_inplace_subtract,
    .nb_inplace_multiply = nb_inplace_multiply,
    .nb_inplace_remainder = nb_inplace_remainder,
    .nb_inplace_power = nb_inplace_power,
    .nb_inplace_lshift = nb_inplace_lshift,
    .nb_inplace_rshift = nb_inplace_rshift,
    .nb_inplace_and = nb_inplace_and,
    .nb_inplace_xor = nb_inplace_xor,
    .nb_inplace_or = nb_inplace_or,
    .nb_floor_divide = nb_floor_divide,
    .nb_true_divide = nb_true_divide,
    .nb_inplace_floor_divide = nb_inplace_floor_divide,
    .nb_inplace_true_divide = nb_inplace_true_divide,
    .nb_matrix_multiply = ampc_py_matmul_op,
};

/* == != < <= > >= give bool tensors; a non-tensor, non-number other gives NotImplemented (so
 * `x == None` is False, as in torch). */
PyObject *ampc_py_tensor_richcompare(PyObject *a, PyObject *b, int op) {
    static const ampc_op ops[6] = {[Py_LT] = AMPC_OP_LT, [Py_LE] = AMPC_OP_LE, [Py_EQ] = AMPC_OP_EQ,
                                   [Py_NE] = AMPC_OP_NE, [Py_GT] = AMPC_OP_GT, [Py_GE] = AMPC_OP_GE};
    static const int mirrored[6] = {[Py_LT] = Py_GT, [Py_LE] = Py_GE, [Py_EQ] = Py_EQ,
                                    [Py_NE] = Py_NE, [Py_GT] = Py_LT, [Py_GE] = Py_LE};
    if (!AmpcTensor_Check(a)) { /* only reached through a subclass's reflected call */
        PyObject *tmp = a;
        a = b;
        b = tmp;
        op = mirrored[op];
    }
    return operator(ops[op], 0, a, b);
}

/* ------------------------------------------------------------------ method tables */

#define FAST (METH_FASTCALL | METH_KEYWORDS)
#define FN(f) ((PyCFunction)(void (*)(void))(f))

/* method-table entries of the generated bindings: T_* for Tensor, M_* for the module */
#define T_ENTRY_METHOD(id, name, ...) {name, t_##id, METH_NOARGS, NULL}, {name "_", t_##id##_, METH_NOARGS, NULL},
#define T_ENTRY_PURE_METHOD(id, name, ...) {name, t_##id, METH_NOARGS, NULL},
#define T_ENTRY_FUNCTION(id, name, ...)
#define T_ENTRY_PARAMS2(id, name, ...)
#define T_ENTRY_CUSTOM(id, name, ...)
#define T_ENTRY_NONE(id, name, ...)
#define T_BIN_INPLACE_Y(id, name) {name "_", FN(t_##id##_), FAST, NULL},
#define T_BIN_INPLACE_N(id, name)
#define T_ENTRY_BINARY(id, name, flags, inpl, other) {name, FN(t_##id), FAST, NULL}, T_BIN_INPLACE_##inpl(id, name)
#define M_ENTRY_METHOD(id, name, ...) {name, FN(m_##id), FAST, NULL}, {name "_", m_##id##_, METH_O, NULL},
#define M_ENTRY_PURE_METHOD(id, name, ...) {name, FN(m_##id), FAST, NULL},
#define M_ENTRY_FUNCTION(id, name, ...) {name, FN(m_##id), FAST, NULL}, {name "_", FN(m_##id##_), FAST, NULL},
#define M_ENTRY_PARAMS2(id, name, n0, d0, n1, d1) \
    {name, FN(m_##id), FAST, name "(input, " #n0 "=" #d0 ", " #n1 "=" #d1 ")"}, {name "_", FN(m_##id##_), FAST, NULL},
#define M_ENTRY_CUSTOM(id, name, ...)
#define M_ENTRY_NONE(id, name, ...)
#define M_ENTRY_BINARY(id, name, ...) {name, FN(m_##id), FAST, NULL},
#define T_ENTRY(id, name, kind, ...) T_ENTRY_##kind(id, name, __VA_ARGS__)
#define M_ENTRY(id, name, kind, ...) M_ENTRY_##kind(id, name, __VA_ARGS__)
#define T_INPLACE_Y(name) {#name "_", FN(t_##name##_), FAST, NULL},
#define T_INPLACE_N(name)
#define T_BINARY_ENTRY(name, OP, FLAGS, MODE, OTHER, INPL) {#name, FN(t_##name), FAST, NULL}, T_INPLACE_##INPL(name)
#define T_CLAMP_ENTRY(name, which) {#name, FN(t_##name), FAST, NULL}, {#name "_", FN(t_##name##_), FAST, NULL},

#define M_BINARY_ENTRY(name, OP, FLAGS, MODE, OTHER, INPL) {#name, FN(m_##name), FAST, NULL},
#define M_CLAMP_ENTRY(name, which) {#name, FN(m_##name), FAST, NULL}, {#name "_", FN(m_##name##_), FAST, NULL},

PyMethodDef ampc_py_tensor_methods_elementwise[] = {
#define AMPC_EW_OP(id, name, kind, ac, grad, save, rule, tkernel, form, dtypes, stem, bind) APPLY(T_ENTRY, id, name, bind)
#define AMPC_ALIAS(id, alias) T_ENTRY_METHOD(id, alias)
#include "../core/ops.def"
#undef AMPC_EW_OP
#undef AMPC_ALIAS
    BINARY_OPS(T_BINARY_ENTRY) CLAMP_NAMES(T_CLAMP_ENTRY)
    {"round", FN(t_round), FAST, "round(decimals=0): half to even"},
    {"round_", FN(t_round_), FAST, NULL},
    {"where", FN(t_where), FAST, "where(condition, other): self where condition else other"},
    {"square", t_square, METH_NOARGS, NULL},
    {"bitwise_not", t_bitwise_not, METH_NOARGS, NULL},
    {NULL, NULL, 0, NULL},
};

PyMethodDef ampc_py_module_methods_elementwise[] = {
#define AMPC_EW_OP(id, name, kind, ac, grad, save, rule, tkernel, form, dtypes, stem, bind) APPLY(M_ENTRY, id, name, bind)
#define AMPC_ALIAS(id, alias) M_ENTRY_METHOD(id, alias)
#include "../core/ops.def"
#undef AMPC_EW_OP
#undef AMPC_ALIAS
    BINARY_OPS(M_BINARY_ENTRY) CLAMP_NAMES(M_CLAMP_ENTRY)
    {"round", FN(m_round), FAST, "round(input, *, decimals=0): half to even"},
    {"where", FN(m_where), FAST, "where(condition, input, other)"},
    {"gelu", FN(m_gelu), FAST, "gelu(input, approximate='none'): 'none' (erf) or 'tanh'"},
    {"square", m_square, METH_O, NULL},
    {"bitwise_not", m_bitwise_not, METH_O, NULL},
    {"positive", m_positive, METH_O, NULL},
    {NULL, NULL, 0, NULL},
};
