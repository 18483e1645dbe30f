/* py_shape.c: bindings of the shape and index ops of issue 12 (core/shape_ops.c,
 * core/shape_views.c, core/index_ops.c): Tensor methods with torch's names, argument names and
 * defaults, their in-place `_` forms, and the ampc.* functions (ampc.f(input, ...) calls
 * input.f(...); `out=` where torch has it). No math here. */
#include "py_internal.h"

#include <string.h>

#define SELF_T(o) (((AmpcTensorObject *)(o))->t)
#define KW(...) static char *kwlist[] = {__VA_ARGS__, NULL}
#define VA METH_VARARGS | METH_KEYWORDS
#define METHOD(f) (PyCFunction)(void (*)(void))(f)

static int given(PyObject *o) { return o && o != Py_None; }

/* An int argument; NULL/None keeps *out (its default). */
static int pint(PyObject *o, int64_t *out, const char *op, const char *arg) {
    if (!given(o)) return 0;
    if (!PyIndex_Check(o)) {
        PyErr_Format(PyExc_TypeError, "%s(): argument '%s' must be int, not %s", op, arg, Py_TYPE(o)->tp_name);
        return -1;
    }
    PyObject *i = PyNumber_Index(o);
    if (!i) return -1;
    long long v = PyLong_AsLongLong(i);
    Py_DECREF(i);
    if (v == -1 && PyErr_Occurred()) return -1;
    *out = v;
    return 0;
}

static PyObject *self_back(PyObject *self, ampc_status st) {
    if (ampc_py_check(st) < 0) return NULL;
    Py_INCREF(self);
    return self;
}

/* The result, or (out= given) the result copied into out and out returned. */
static PyObject *finish(ampc_tensor *r, PyObject *out_o, const char *op) {
    if (!r) return ampc_py_raise();
    if (!given(out_o)) return ampc_py_wrap(r);
    ampc_tensor *out = ampc_py_unwrap(out_o, op, "out");
    ampc_status st = AMPC_OK;
    if (out && (out->ndim != r->ndim || memcmp(out->shape, r->shape, sizeof(int64_t) * (size_t)r->ndim))) {
        char s1[160], s2[160];
        st = ampc_set_error(AMPC_E_RUNTIME, "%s: out has shape %s, the result %s (ampc does not resize out=)", op,
                            ampc_shape_str(out->ndim, out->shape, s1, sizeof s1), ampc_shape_str(r->ndim, r->shape, s2, sizeof s2));
    } else if (out) {
        st = out->dtype == r->dtype ? ampc_copy_(out, r)
                                    : ampc_set_error(AMPC_E_RUNTIME, "%s: expected out to have dtype %s, got %s", op,
                                                     ampc_dtype_torch_name(r->dtype), ampc_dtype_torch_name(out->dtype));
    }
    ampc_tensor_decref(r);
    if (!out) return NULL;
    return self_back(out_o, st);
}

/* ------------------------------------------------------------------ tril / triu */

static PyObject *tril_impl(PyObject *self, PyObject *args, PyObject *kwargs, bool upper, bool in_place) {
    KW("diagonal", "out");
    PyObject *k_o = NULL, *out_o = NULL;
    int64_t k = 0;
    const char *op = upper ? "triu" : "tril";
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|O$O", kwlist, &k_o, &out_o) || pint(k_o, &k, op, "diagonal") < 0)
        return NULL;
    if (in_place) return self_back(self, ampc_tril_(SELF_T(self), k, upper));
    return finish(ampc_tril(SELF_T(self), k, upper), out_o, op);
}
static PyObject *t_tril(PyObject *s, PyObject *a, PyObject *k) { return tril_impl(s, a, k, false, false); }
static PyObject *t_triu(PyObject *s, PyObject *a, PyObject *k) { return tril_impl(s, a, k, true, false); }
static PyObject *t_tril_(PyObject *s, PyObject *a, PyObject *k) { return tril_impl(s, a, k, false, true); }
static PyObject *t_triu_(PyObject *s, PyObject *a, PyObject *k) { return tril_impl(s, a, k, true, true); }

/* ------------------------------------------------------------------ flip / roll / rot90 */

/* dims given as varargs (x.flip(0, 1)), one sequence, or dims= */
static int dims_arg(PyObject *args, PyObject *kwargs, const char *kwname, int64_t *dims, const char *op) {
    PyObject *o = kwargs ? PyDict_GetItemString(kwargs, kwname) : NULL;
    if (o && PyTuple_GET_SIZE(args)) {
        PyErr_Format(PyExc_TypeError, "%s(): got multiple values for argument '%s'", op, kwname);
        return -1;
    }
    if (kwargs && PyDict_Size(kwargs) > (o ? 1 : 0)) {
        PyErr_Format(PyExc_TypeError, "%s(): unexpected keyword argument", op);
        return -1;
    }
    if (!o) {
        if (!PyTuple_GET_SIZE(args)) {
            PyErr_Format(PyExc_TypeError, "%s() missing required argument '%s'", op, kwname);
            return -1;
        }
        o = PyTuple_GET_SIZE(args) == 1 ? PyTuple_GET_ITEM(args, 0) : args;
    }
    return ampc_py_int_list(o, dims, AMPC_MAX_DIMS, op, kwname);
}

static PyObject *t_flip(PyObject *self, PyObject *args, PyObject *kwargs) {
    int64_t dims[AMPC_MAX_DIMS];
    int n = dims_arg(args, kwargs, "dims", dims, "flip");
    return n < 0 ? NULL : ampc_py_wrap(ampc_flip(SELF_T(self), n, dims));
}

static PyObject *flip_lr_ud(PyObject *self, bool lr) {
    ampc_tensor *a = SELF_T(self);
    int need = lr ? 2 : 1;
    if (a->ndim < need) {
        ampc_set_error(AMPC_E_RUNTIME, "Input must be >= %d-d.", need);
        return ampc_py_raise();
    }
    int64_t d = lr ? 1 : 0;
    return ampc_py_wrap(ampc_flip(a, 1, &d));
}
static PyObject *t_fliplr(PyObject *self, PyObject *args, PyObject *kwargs) { return flip_lr_ud(self, true); }
static PyObject *t_flipud(PyObject *self, PyObject *args, PyObject *kwargs) { return flip_lr_ud(self, false); }

static PyObject *t_roll(PyObject *self, PyObject *args, PyObject *kwargs) {
    KW("shifts", "dims");
    PyObject *s_o, *d_o = NULL;
    int64_t shifts[AMPC_MAX_DIMS], dims[AMPC_MAX_DIMS];
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|O:roll", kwlist, &s_o, &d_o)) return NULL;
    int ns = ampc_py_int_list(s_o, shifts, AMPC_MAX_DIMS, "roll", "shifts");
    int nd = ns < 0 ? -1 : given(d_o) ? ampc_py_int_list(d_o, dims, AMPC_MAX_DIMS, "roll", "dims") : 0;
    return nd < 0 ? NULL : ampc_py_wrap(ampc_roll(SELF_T(self), ns, shifts, nd, dims));
}

static PyObject *t_rot90(PyObject *self, PyObject *args, PyObject *kwargs) {
    KW("k", "dims");
    PyObject *k_o = NULL, *d_o = NULL;
    int64_t k = 1, dims[AMPC_MAX_DIMS] = {0, 1};
    int nd = 2;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|OO:rot90", kwlist, &k_o, &d_o) || pint(k_o, &k, "rot90", "k") < 0)
        return NULL;
    if (given(d_o) && (nd = ampc_py_int_list(d_o, dims, AMPC_MAX_DIMS, "rot90", "dims")) < 0) return NULL;
    return ampc_py_wrap(ampc_rot90(SELF_T(self), k, nd, dims));
}

/* ------------------------------------------------------------------ repeat / tile / repeat_interleave */

static PyObject *t_repeat(PyObject *self, PyObject *args, PyObject *kwargs) {
    int64_t reps[AMPC_MAX_DIMS + 1];
    int n = dims_arg(args, kwargs, "repeats", reps, "repeat");
    return n < 0 ? NULL : ampc_py_wrap(ampc_repeat(SELF_T(self), n, reps));
}

static PyObject *t_tile(PyObject *self, PyObject *args, PyObject *kwargs) {
    int64_t reps[AMPC_MAX_DIMS + 1];
    int n = dims_arg(args, kwargs, "dims", reps, "tile");
    return n < 0 ? NULL : ampc_py_wrap(ampc_tile(SELF_T(self), n, reps));
}

static PyObject *t_repeat_interleave(PyObject *self, PyObject *args, PyObject *kwargs) {
    KW("repeats", "dim", "output_size");
    PyObject *r_o, *d_o = NULL, *os_o = NULL;
    int64_t dim = 0, output_size = -1, rep = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|O$O:repeat_interleave", kwlist, &r_o, &d_o, &os_o) ||
        pint(d_o, &dim, "repeat_interleave", "dim") < 0 || pint(os_o, &output_size, "repeat_interleave", "output_size") < 0)
        return NULL;
    ampc_tensor *reps = NULL;
    if (AmpcTensor_Check(r_o)) reps = SELF_T(r_o);
    else if (pint(r_o, &rep, "repeat_interleave", "repeats") < 0) return NULL;
    return ampc_py_wrap(ampc_repeat_interleave(SELF_T(self), reps, rep, given(d_o), dim, output_size));
}

/* ------------------------------------------------------------------ scatter / index_copy / index_fill */

static PyObject *scatter_impl(PyObject *self, PyObject *args, PyObject *kwargs, bool in_place) {
    KW("dim", "index", "src", "value", "reduce");
    PyObject *d_o, *i_o, *src_o = NULL, *v_o = NULL, *red_o = NULL;
    int64_t dim;
    const char *op = in_place ? "scatter_" : "scatter";
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OO|OO$O", kwlist, &d_o, &i_o, &src_o, &v_o, &red_o) ||
        pint(d_o, &dim, op, "dim") < 0)
        return NULL;
    if (given(src_o) && given(v_o)) {
        PyErr_Format(PyExc_TypeError, "%s(): got both 'src' and 'value'", op);
        return NULL;
    }
    PyObject *val_o = given(src_o) ? src_o : v_o;
    if (!given(val_o)) {
        PyErr_Format(PyExc_TypeError, "%s() missing required argument 'src' or 'value'", op);
        return NULL;
    }
    ampc_tensor *a = SELF_T(self), *index = ampc_py_unwrap(i_o, op, "index"), *src = NULL;
    if (!index) return NULL;
    ampc_scalar value = ampc_scalar_none();
    if (AmpcTensor_Check(val_o)) src = SELF_T(val_o);
    else if (ampc_py_scalar(val_o, &value, op, "value") < 0) return NULL;
    if (given(red_o)) {
        const char *red = PyUnicode_Check(red_o) ? PyUnicode_AsUTF8(red_o) : NULL;
        if (!red || (strcmp(red, "add") && strcmp(red, "multiply"))) {
            PyErr_SetString(PyExc_RuntimeError, "reduce argument must be either add or multiply.");
            return NULL;
        }
        if (!strcmp(red, "multiply")) { /* scatter_reduce(prod, include_self=True) of src or the value */
            ampc_tensor *vals = src ? (ampc_tensor_incref(src), src)
                                    : ampc_full(index->ndim, index->shape, value, a->dtype, a->device);
            if (!vals) return ampc_py_raise();
            PyObject *r = in_place ? self_back(self, ampc_scatter_reduce_(a, dim, index, vals, AMPC_REDUCE_PROD, true, false))
                                   : ampc_py_wrap(ampc_scatter_reduce(a, dim, index, vals, AMPC_REDUCE_PROD, true, false));
            ampc_tensor_decref(vals);
            return r;
        }
        /* add: scatter_add of src, or of the value broadcast to the index's shape */
        ampc_tensor *vals = src ? (ampc_tensor_incref(src), src) : ampc_full(index->ndim, index->shape, value, a->dtype, a->device);
        if (!vals) return ampc_py_raise();
        PyObject *r = in_place ? self_back(self, ampc_scatter_add_(a, dim, index, vals))
                               : ampc_py_wrap(ampc_scatter_add(a, dim, index, vals));
        ampc_tensor_decref(vals);
        return r;
    }
    if (in_place) return self_back(self, ampc_scatter_(a, dim, index, src, value));
    return ampc_py_wrap(ampc_scatter(a, dim, index, src, value));
}
static PyObject *t_scatter(PyObject *s, PyObject *a, PyObject *k) { return scatter_impl(s, a, k, false); }
static PyObject *t_scatter_(PyObject *s, PyObject *a, PyObject *k) { return scatter_impl(s, a, k, true); }

static PyObject *index_copy_impl(PyObject *self, PyObject *args, PyObject *kwargs, bool in_place) {
    KW("dim", "index", "source");
    PyObject *d_o, *i_o, *s_o;
    int64_t dim;
    const char *op = in_place ? "index_copy_" : "index_copy";
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OOO", kwlist, &d_o, &i_o, &s_o) || pint(d_o, &dim, op, "dim") < 0)
        return NULL;
    ampc_tensor *index = ampc_py_unwrap(i_o, op, "index"), *src = index ? ampc_py_unwrap(s_o, op, "source") : NULL;
    if (!src) return NULL;
    if (in_place) return self_back(self, ampc_index_copy_(SELF_T(self), dim, index, src));
    return ampc_py_wrap(ampc_index_copy(SELF_T(self), dim, index, src));
}
static PyObject *t_index_copy(PyObject *s, PyObject *a, PyObject *k) { return index_copy_impl(s, a, k, false); }
static PyObject *t_index_copy_(PyObject *s, PyObject *a, PyObject *k) { return index_copy_impl(s, a, k, true); }

static PyObject *index_fill_impl(PyObject *self, PyObject *args, PyObject *kwargs, bool in_place) {
    KW("dim", "index", "value");
    PyObject *d_o, *i_o, *v_o;
    int64_t dim;
    const char *op = in_place ? "index_fill_" : "index_fill";
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OOO", kwlist, &d_o, &i_o, &v_o) || pint(d_o, &dim, op, "dim") < 0)
        return NULL;
    ampc_tensor *index = ampc_py_unwrap(i_o, op, "index");
    if (!index) return NULL;
    ampc_scalar value;
    if (AmpcTensor_Check(v_o)) {
        ampc_tensor *v = SELF_T(v_o);
        if (v->ndim != 0) {
            ampc_set_error(AMPC_E_RUNTIME, "index_fill_ only supports a 0-dimensional value tensor, but got tensor with "
                           "%d dimension(s).", v->ndim);
            return ampc_py_raise();
        }
        if (ampc_py_check(ampc_get_scalar(v, 0, &value)) < 0) return NULL;
    } else if (ampc_py_scalar(v_o, &value, op, "value") < 0) {
        return NULL;
    }
    if (in_place) return self_back(self, ampc_index_fill_(SELF_T(self), dim, index, value));
    return ampc_py_wrap(ampc_index_fill(SELF_T(self), dim, index, value));
}
static PyObject *t_index_fill(PyObject *s, PyObject *a, PyObject *k) { return index_fill_impl(s, a, k, false); }
static PyObject *t_index_fill_(PyObject *s, PyObject *a, PyObject *k) { return index_fill_impl(s, a, k, true); }

/* scatter_reduce(dim, index, src, reduce, *, include_self=True), index_reduce(dim, index, source,
 * reduce, *, include_self=True) and their in-place forms */
static PyObject *reduce_impl(PyObject *self, PyObject *args, PyObject *kwargs, bool index_form, bool in_place) {
    static char *kw_s[] = {"dim", "index", "src", "reduce", "include_self", NULL};
    static char *kw_i[] = {"dim", "index", "source", "reduce", "include_self", NULL};
    const char *op = index_form ? (in_place ? "index_reduce_" : "index_reduce") : (in_place ? "scatter_reduce_" : "scatter_reduce");
    PyObject *d_o, *i_o, *s_o;
    const char *red;
    int incl = 1;
    int64_t dim;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OOOs|$p", index_form ? kw_i : kw_s, &d_o, &i_o, &s_o, &red, &incl) ||
        pint(d_o, &dim, op, "dim") < 0)
        return NULL;
    static const char *const names[] = {"sum", "prod", "mean", "amax", "amin"};
    int kind = -1;
    for (int k = index_form ? 1 : 0; k < 5; k++)
        if (!strcmp(red, names[k])) kind = k;
    if (kind < 0) {
        if (index_form)
            PyErr_Format(PyExc_RuntimeError, "index_reduce(): Expected reduce to be one of prod, mean, amax or amin but "
                         "got %s.", red);
        else
            PyErr_Format(PyExc_RuntimeError, "reduce argument must be either sum, prod, mean, amax or amin, got %s", red);
        return NULL;
    }
    ampc_tensor *index = ampc_py_unwrap(i_o, op, "index"), *src = index ? ampc_py_unwrap(s_o, op, index_form ? "source" : "src") : NULL;
    if (!src) return NULL;
    if (in_place) return self_back(self, ampc_scatter_reduce_(SELF_T(self), dim, index, src, (ampc_reduce_kind)kind, incl, index_form));
    return ampc_py_wrap(ampc_scatter_reduce(SELF_T(self), dim, index, src, (ampc_reduce_kind)kind, incl, index_form));
}
static PyObject *t_scatter_reduce(PyObject *s, PyObject *a, PyObject *k) { return reduce_impl(s, a, k, false, false); }
static PyObject *t_scatter_reduce_(PyObject *s, PyObject *a, PyObject *k) { return reduce_impl(s, a, k, false, true); }
static PyObject *t_index_reduce(PyObject *s, PyObject *a, PyObject *k) { return reduce_impl(s, a, k, true, false); }
static PyObject *t_index_reduce_(PyObject *s, PyObject *a, PyObject *k) { return reduce_impl(s, a, k, true, true); }

/* ------------------------------------------------------------------ masks, take, put */

static PyObject *t_masked_select(PyObject *self, PyObject *args, PyObject *kwargs) {
    KW("mask", "out");
    PyObject *m_o, *out_o = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|$O:masked_select", kwlist, &m_o, &out_o)) return NULL;
    ampc_tensor *m = ampc_py_unwrap(m_o, "masked_select", "mask");
    return m ? finish(ampc_masked_select(SELF_T(self), m), out_o, "masked_select") : NULL;
}

static PyObject *masked_scatter_impl(PyObject *self, PyObject *args, PyObject *kwargs, bool in_place) {
    KW("mask", "source");
    PyObject *m_o, *s_o;
    const char *op = in_place ? "masked_scatter_" : "masked_scatter";
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OO", kwlist, &m_o, &s_o)) return NULL;
    ampc_tensor *m = ampc_py_unwrap(m_o, op, "mask"), *s = m ? ampc_py_unwrap(s_o, op, "source") : NULL;
    if (!s) return NULL;
    if (in_place) return self_back(self, ampc_masked_scatter_(SELF_T(self), m, s));
    return ampc_py_wrap(ampc_masked_scatter(SELF_T(self), m, s));
}
static PyObject *t_masked_scatter(PyObject *s, PyObject *a, PyObject *k) { return masked_scatter_impl(s, a, k, false); }
static PyObject *t_masked_scatter_(PyObject *s, PyObject *a, PyObject *k) { return masked_scatter_impl(s, a, k, true); }

static PyObject *t_take(PyObject *self, PyObject *args, PyObject *kwargs) {
    KW("index", "out");
    PyObject *i_o, *out_o = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|$O:take", kwlist, &i_o, &out_o)) return NULL;
    ampc_tensor *i = ampc_py_unwrap(i_o, "take", "index");
    return i ? finish(ampc_take(SELF_T(self), i), out_o, "take") : NULL;
}

static PyObject *t_take_along_dim(PyObject *self, PyObject *args, PyObject *kwargs) {
    KW("indices", "dim", "out");
    PyObject *i_o, *d_o = NULL, *out_o = NULL;
    int64_t dim = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|O$O:take_along_dim", kwlist, &i_o, &d_o, &out_o) ||
        pint(d_o, &dim, "take_along_dim", "dim") < 0)
        return NULL;
    ampc_tensor *i = ampc_py_unwrap(i_o, "take_along_dim", "indices");
    return i ? finish(ampc_take_along_dim(SELF_T(self), i, given(d_o), dim), out_o, "take_along_dim") : NULL;
}

static PyObject *put_impl(PyObject *self, PyObject *args, PyObject *kwargs, bool in_place) {
    KW("index", "source", "accumulate");
    PyObject *i_o, *s_o;
    int acc = 0;
    const char *op = in_place ? "put_" : "put";
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OO|p", kwlist, &i_o, &s_o, &acc)) return NULL;
    ampc_tensor *i = ampc_py_unwrap(i_o, op, "index"), *s = i ? ampc_py_unwrap(s_o, op, "source") : NULL;
    if (!s) return NULL;
    if (in_place) return self_back(self, ampc_put_(SELF_T(self), i, s, acc));
    return ampc_py_wrap(ampc_put(SELF_T(self), i, s, acc));
}
static PyObject *t_put(PyObject *s, PyObject *a, PyObject *k) { return put_impl(s, a, k, false); }
static PyObject *t_put_(PyObject *s, PyObject *a, PyObject *k) { return put_impl(s, a, k, true); }

/* ------------------------------------------------------------------ views and diagonals */

static PyObject *t_unfold(PyObject *self, PyObject *args, PyObject *kwargs) {
    KW("dimension", "size", "step");
    PyObject *d_o, *s_o, *st_o;
    int64_t d, size, step;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OOO:unfold", kwlist, &d_o, &s_o, &st_o) ||
        pint(d_o, &d, "unfold", "dimension") < 0 || pint(s_o, &size, "unfold", "size") < 0 ||
        pint(st_o, &step, "unfold", "step") < 0)
        return NULL;
    return ampc_py_wrap(ampc_unfold(SELF_T(self), d, size, step));
}

/* offset, dim1, dim2 with the defaults (0, d1, d2) of diagonal / diag_embed */
static int diag_args(PyObject *args, PyObject *kwargs, const char *op, int64_t *p) {
    KW("offset", "dim1", "dim2");
    PyObject *o[3] = {NULL, NULL, NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|OOO", kwlist, &o[0], &o[1], &o[2])) return -1;
    for (int i = 0; i < 3; i++)
        if (pint(o[i], &p[i], op, kwlist[i]) < 0) return -1;
    return 0;
}

static PyObject *t_diagonal(PyObject *self, PyObject *args, PyObject *kwargs) {
    int64_t p[3] = {0, 0, 1};
    return diag_args(args, kwargs, "diagonal", p) < 0 ? NULL : ampc_py_wrap(ampc_diagonal(SELF_T(self), p[0], p[1], p[2]));
}

static PyObject *t_diag_embed(PyObject *self, PyObject *args, PyObject *kwargs) {
    int64_t p[3] = {0, -2, -1};
    return diag_args(args, kwargs, "diag_embed", p) < 0 ? NULL
                                                        : ampc_py_wrap(ampc_diag_embed(SELF_T(self), p[0], p[1], p[2]));
}

static PyObject *t_diag(PyObject *self, PyObject *args, PyObject *kwargs) {
    KW("diagonal", "out");
    PyObject *k_o = NULL, *out_o = NULL;
    int64_t k = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|O$O:diag", kwlist, &k_o, &out_o) || pint(k_o, &k, "diag", "diagonal") < 0)
        return NULL;
    return finish(ampc_diag(SELF_T(self), k), out_o, "diag");
}

static PyObject *t_diagflat(PyObject *self, PyObject *args, PyObject *kwargs) {
    KW("offset");
    PyObject *k_o = NULL;
    int64_t k = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|O:diagflat", kwlist, &k_o) || pint(k_o, &k, "diagflat", "offset") < 0)
        return NULL;
    return ampc_py_wrap(ampc_diagflat(SELF_T(self), k));
}

static PyObject *t_diagonal_scatter(PyObject *self, PyObject *args, PyObject *kwargs) {
    KW("src", "offset", "dim1", "dim2");
    PyObject *s_o, *o[3] = {NULL, NULL, NULL};
    int64_t p[3] = {0, 0, 1};
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|OOO:diagonal_scatter", kwlist, &s_o, &o[0], &o[1], &o[2]))
        return NULL;
    for (int i = 0; i < 3; i++)
        if (pint(o[i], &p[i], "diagonal_scatter", kwlist[i + 1]) < 0) return NULL;
    ampc_tensor *s = ampc_py_unwrap(s_o, "diagonal_scatter", "src");
    return s ? ampc_py_wrap(ampc_diagonal_scatter(SELF_T(self), s, p[0], p[1], p[2])) : NULL;
}

static PyObject *t_select_scatter(PyObject *self, PyObject *args, PyObject *kwargs) {
    KW("src", "dim", "index");
    PyObject *s_o, *d_o, *i_o;
    int64_t d, i;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OOO:select_scatter", kwlist, &s_o, &d_o, &i_o) ||
        pint(d_o, &d, "select_scatter", "dim") < 0 || pint(i_o, &i, "select_scatter", "index") < 0)
        return NULL;
    ampc_tensor *s = ampc_py_unwrap(s_o, "select_scatter", "src");
    return s ? ampc_py_wrap(ampc_select_scatter(SELF_T(self), s, d, i)) : NULL;
}

static PyObject *t_slice_scatter(PyObject *self, PyObject *args, PyObject *kwargs) {
    KW("src", "dim", "start", "end", "step");
    PyObject *s_o, *o[4] = {NULL, NULL, NULL, NULL};
    int64_t p[4] = {0, 0, INT64_MAX, 1};
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|OOOO:slice_scatter", kwlist, &s_o, &o[0], &o[1], &o[2], &o[3]))
        return NULL;
    for (int i = 0; i < 4; i++)
        if (pint(o[i], &p[i], "slice_scatter", kwlist[i + 1]) < 0) return NULL;
    ampc_tensor *s = ampc_py_unwrap(s_o, "slice_scatter", "src");
    return s ? ampc_py_wrap(ampc_slice_scatter(SELF_T(self), s, p[0], p[1], p[2], p[3])) : NULL;
}

static int strided_args(PyObject *args, PyObject *kwargs, const char *op, int *nd, int64_t *shape, int64_t *strides,
                        int64_t *offset) {
    KW("size", "stride", "storage_offset");
    PyObject *sz_o, *st_o, *off_o = NULL;
    *offset = -1;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OO|O", kwlist, &sz_o, &st_o, &off_o)) return -1;
    int n = ampc_py_int_list(sz_o, shape, AMPC_MAX_DIMS, op, "size");
    int m = n < 0 ? -1 : ampc_py_int_list(st_o, strides, AMPC_MAX_DIMS, op, "stride");
    if (m < 0 || pint(off_o, offset, op, "storage_offset") < 0) return -1;
    if (given(off_o) && *offset < 0) {
        PyErr_Format(PyExc_RuntimeError, "Tensor: invalid storage offset %lld", (long long)*offset);
        return -1;
    }
    if (n != m) {
        PyErr_Format(PyExc_RuntimeError, "mismatch in length of strides and shape");
        return -1;
    }
    *nd = n;
    return 0;
}

static PyObject *t_as_strided(PyObject *self, PyObject *args, PyObject *kwargs) {
    int nd;
    int64_t shape[AMPC_MAX_DIMS], strides[AMPC_MAX_DIMS], off;
    if (strided_args(args, kwargs, "as_strided", &nd, shape, strides, &off) < 0) return NULL;
    return ampc_py_wrap(ampc_as_strided_view(SELF_T(self), nd, shape, strides, off));
}

static PyObject *t_as_strided_(PyObject *self, PyObject *args, PyObject *kwargs) {
    int nd;
    int64_t shape[AMPC_MAX_DIMS], strides[AMPC_MAX_DIMS], off;
    if (strided_args(args, kwargs, "as_strided_", &nd, shape, strides, &off) < 0) return NULL;
    return self_back(self, ampc_as_strided_(SELF_T(self), nd, shape, strides, off));
}

static PyObject *t_fill_diagonal_(PyObject *self, PyObject *args, PyObject *kwargs) {
    KW("fill_value", "wrap");
    PyObject *v_o;
    int wrap = 0;
    ampc_scalar v;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|p:fill_diagonal_", kwlist, &v_o, &wrap) ||
        ampc_py_scalar(v_o, &v, "fill_diagonal_", "fill_value") < 0)
        return NULL;
    return self_back(self, ampc_fill_diagonal_(SELF_T(self), v, wrap));
}

/* ------------------------------------------------------------------ tril_indices / triu_indices */

static PyObject *indices_impl(PyObject *args, PyObject *kwargs, bool upper) {
    KW("row", "col", "offset", "dtype", "device", "layout", "requires_grad", "pin_memory");
    const char *op = upper ? "triu_indices" : "tril_indices";
    PyObject *r_o, *c_o, *o_o = NULL, *dt_o = NULL, *dev_o = NULL, *lay_o = NULL, *rg_o = NULL, *pm_o = NULL;
    int64_t row, col, offset = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OO|O$OOOOO", kwlist, &r_o, &c_o, &o_o, &dt_o, &dev_o, &lay_o, &rg_o,
                                     &pm_o) ||
        pint(r_o, &row, op, "row") < 0 || pint(c_o, &col, op, "col") < 0 || pint(o_o, &offset, op, "offset") < 0)
        return NULL;
    ampc_dtype dt = AMPC_INT64;
    ampc_device dev;
    if (given(dt_o) && ampc_py_dtype(dt_o, &dt, op) < 0) return NULL;
    if (ampc_py_device(dev_o, ampc_cpu_device(), &dev, op) < 0) return NULL;
    return ampc_py_wrap(ampc_tril_indices(row, col, offset, upper, dt, dev));
}
static PyObject *f_tril_indices(PyObject *u, PyObject *a, PyObject *k) { return indices_impl(a, k, false); }
static PyObject *f_triu_indices(PyObject *u, PyObject *a, PyObject *k) { return indices_impl(a, k, true); }

/* ------------------------------------------------------------------ tables */

/* Tensor methods that torch also has as ampc.name(input, ...) functions */
#define SHAPE_OPS(X)                                                                                            \
    X(tril, "tril(diagonal=0, *, out=None)") X(triu, "triu(diagonal=0, *, out=None)")                       \
    X(flip, "flip(dims)") X(fliplr, "fliplr()") X(flipud, "flipud()")                                         \
    X(roll, "roll(shifts, dims=None)") X(rot90, "rot90(k=1, dims=(0, 1))") X(tile, "tile(dims)")             \
    X(scatter, "scatter(dim, index, src|value, *, reduce=None)")                                             \
    X(index_copy, "index_copy(dim, index, source)") X(index_fill, "index_fill(dim, index, value)")            \
    X(scatter_reduce, "scatter_reduce(dim, index, src, reduce, *, include_self=True)")                       \
    X(index_reduce, "index_reduce(dim, index, source, reduce, *, include_self=True)")                        \
    X(masked_select, "masked_select(mask, *, out=None)") X(masked_scatter, "masked_scatter(mask, source)")    \
    X(take, "take(index, *, out=None)") X(take_along_dim, "take_along_dim(indices, dim=None, *, out=None)")   \
    X(diagonal, "diagonal(offset=0, dim1=0, dim2=1): a view") X(diag, "diag(diagonal=0, *, out=None)")       \
    X(diag_embed, "diag_embed(offset=0, dim1=-2, dim2=-1)") X(diagflat, "diagflat(offset=0)")                 \
    X(diagonal_scatter, "diagonal_scatter(src, offset=0, dim1=0, dim2=1)")                                   \
    X(select_scatter, "select_scatter(src, dim, index)")                                                     \
    X(slice_scatter, "slice_scatter(src, dim=0, start=None, end=None, step=1)")                              \
    X(as_strided, "as_strided(size, stride, storage_offset=None): a view")

#define METHOD_ENTRY(name, doc) {#name, METHOD(t_##name), VA, doc},

PyMethodDef ampc_py_tensor_methods_shape[] = {
    SHAPE_OPS(METHOD_ENTRY)
    {"repeat_interleave", METHOD(t_repeat_interleave), VA, "repeat_interleave(repeats, dim=None, *, output_size=None)"},
    /* methods only */
    {"repeat", METHOD(t_repeat), VA, "repeat(*repeats)"},
    {"unfold", METHOD(t_unfold), VA, "unfold(dimension, size, step): a view of the windows"},
    {"put", METHOD(t_put), VA, "put(index, source, accumulate=False)"},
    {"tril_", METHOD(t_tril_), VA, "tril_(diagonal=0)"},
    {"triu_", METHOD(t_triu_), VA, "triu_(diagonal=0)"},
    {"scatter_", METHOD(t_scatter_), VA, "scatter_(dim, index, src|value, *, reduce=None)"},
    {"index_copy_", METHOD(t_index_copy_), VA, "index_copy_(dim, index, source)"},
    {"index_fill_", METHOD(t_index_fill_), VA, "index_fill_(dim, index, value)"},
    {"scatter_reduce_", METHOD(t_scatter_reduce_), VA, "scatter_reduce_(dim, index, src, reduce, *, include_self=True)"},
    {"index_reduce_", METHOD(t_index_reduce_), VA, "index_reduce_(dim, index, source, reduce, *, include_self=True)"},
    {"masked_scatter_", METHOD(t_masked_scatter_), VA, "masked_scatter_(mask, source)"},
    {"put_", METHOD(t_put_), VA, "put_(index, source, accumulate=False)"},
    {"as_strided_", METHOD(t_as_strided_), VA, "as_strided_(size, stride, storage_offset=None)"},
    {"fill_diagonal_", METHOD(t_fill_diagonal_), VA, "fill_diagonal_(fill_value, wrap=False)"},
    {NULL, NULL, 0, NULL},
};

/* ampc.f(input, *args, **kwargs) -> input.f(*args, **kwargs) */
static PyObject *call_method(PyObject *args, PyObject *kwargs, const char *op,
                             PyObject *(*method)(PyObject *, PyObject *, PyObject *)) {
    PyObject *input = NULL, *rest = NULL, *kw = NULL, *result = NULL;
    if (PyTuple_GET_SIZE(args) > 0) {
        input = PyTuple_GET_ITEM(args, 0);
        rest = PyTuple_GetSlice(args, 1, PyTuple_GET_SIZE(args));
        kw = kwargs ? PyDict_Copy(kwargs) : NULL;
    } else {
        input = kwargs ? PyDict_GetItemString(kwargs, "input") : NULL;
        if (!input) {
            PyErr_Format(PyExc_TypeError, "%s() missing required argument 'input' (pos 1)", op);
            return NULL;
        }
        rest = PyTuple_New(0);
        kw = PyDict_Copy(kwargs);
        if (kw && PyDict_DelItemString(kw, "input") < 0) Py_CLEAR(kw);
    }
    if (rest && (kw || !kwargs) && ampc_py_unwrap(input, op, "input")) result = method(input, rest, kw);
    Py_XDECREF(rest);
    Py_XDECREF(kw);
    return result;
}

#define FORWARD(name, doc)                                                          \
    static PyObject *f_##name(PyObject *unused, PyObject *args, PyObject *kwargs) { \
        return call_method(args, kwargs, #name, t_##name);                          \
    }
SHAPE_OPS(FORWARD)

/* ampc.repeat_interleave(input, repeats, dim=None, *, output_size=None), or (repeats) alone */
static PyObject *f_repeat_interleave_any(PyObject *unused, PyObject *args, PyObject *kwargs) {
    if (PyTuple_GET_SIZE(args) != 1 || (kwargs && PyDict_GetItemString(kwargs, "repeats")))
        return call_method(args, kwargs, "repeat_interleave", t_repeat_interleave);
    KW("input", "output_size");
    PyObject *r_o, *os_o = NULL;
    int64_t output_size = -1;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|$O:repeat_interleave", kwlist, &r_o, &os_o) ||
        pint(os_o, &output_size, "repeat_interleave", "output_size") < 0)
        return NULL;
    ampc_tensor *r = ampc_py_unwrap(r_o, "repeat_interleave", "repeats");
    return r ? ampc_py_wrap(ampc_repeat_interleave(NULL, r, 0, false, 0, output_size)) : NULL;
}

#define FUNCTION_ENTRY(name, doc) {#name, METHOD(f_##name), VA, doc},

PyMethodDef ampc_py_module_methods_shape[] = {
    SHAPE_OPS(FUNCTION_ENTRY)
    {"repeat_interleave", METHOD(f_repeat_interleave_any), VA, "repeat_interleave(input, repeats, dim=None, *, "
                                                               "output_size=None) or repeat_interleave(repeats)"},
    {"tril_indices", METHOD(f_tril_indices), VA, "tril_indices(row, col, offset=0, *, dtype=long, device=None)"},
    {"triu_indices", METHOD(f_triu_indices), VA, "triu_indices(row, col, offset=0, *, dtype=long, device=None)"},
    {NULL, NULL, 0, NULL},
};
