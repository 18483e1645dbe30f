/* py_sort.c: Python bindings of sorting and selection (core/sort.h), as module functions and
 * Tensor methods with PyTorch's signatures:
 *   sort(dim=-1, descending=False, *, stable=False, out=None) -> (values, indices)
 *   argsort(dim=-1, descending=False, *, stable=False)   msort(*, out=None)
 *   topk(k, dim=-1, largest=True, sorted=True, *, out=None) -> (values, indices)
 *   kthvalue(k, dim=-1, keepdim=False, *, out=None)   mode(dim=-1, keepdim=False, *, out=None)
 *   median() | median(dim, keepdim=False, *, out=None) (and nanmedian)
 *   quantile(q, dim=None, keepdim=False, *, interpolation='linear', out=None) (and nanquantile)
 *   unique(sorted=True, return_inverse=False, return_counts=False, dim=None)
 *   unique_consecutive(return_inverse=False, return_counts=False, dim=None)
 *   histc(bins=100, min=0, max=0, *, out=None)   bincount(weights=None, minlength=0)
 * and the functions searchsorted(sorted_sequence, input, *, out_int32, right, side, out, sorter),
 * bucketize(input, boundaries, *, out_int32, right, out), isin(elements, test_elements, *,
 * assume_unique, invert). Results with two tensors are ampc.return_types.<op> (named fields
 * values / indices, unpackable like torch's). out= copies the result into the given tensor(s),
 * which must have the result's shape and dtype. A Tensor method calls the module function with
 * self as its first argument. */
#include "py_common.h"

#include "core/sort.h"

/* ---- helpers ---- */

static int opt_bool(PyObject *o, bool *out) {
    if (!o || o == Py_None) return 0;
    int v = PyObject_IsTrue(o);
    if (v < 0) return -1;
    *out = v != 0;
    return 0;
}

static int opt_int(PyObject *o, int64_t *out, const char *op, const char *arg) {
    if (!o || o == Py_None) return 0;
    if (!PyIndex_Check(o) || PyBool_Check(o)) {
        PyErr_Format(PyExc_TypeError, "%s(): argument '%s' must be int, not %s", op, arg, Py_TYPE(o)->tp_name);
        return -1;
    }
    *out = PyLong_AsLongLong(o);
    return (*out == -1 && PyErr_Occurred()) ? -1 : 0;
}

/* A Tensor, or a Python number as a 0-dim tensor (of the number's default dtype) on dev. */
static ampc_tensor *tensor_or_number(PyObject *o, ampc_device dev, const char *op, const char *arg) {
    if (AmpcTensor_Check(o)) {
        ampc_tensor *t = ampc_py_unwrap(o, op, arg);
        if (t) ampc_tensor_incref(t);
        return t;
    }
    ampc_scalar s;
    if (ampc_py_scalar(o, &s, op, arg) < 0) return NULL;
    ampc_dtype dt = s.kind == AMPC_SCALAR_BOOL ? AMPC_BOOL : s.kind == AMPC_SCALAR_INT ? AMPC_INT64
                                                                                        : ampc_get_default_dtype();
    ampc_tensor *t = ampc_full(0, NULL, s, dt, dev);
    if (!t) ampc_py_raise();
    return t;
}

/* Copies result into the out= tensor (same shape and dtype), returning out (new ref); without
 * out= returns the wrapped result. Steals result. */
static PyObject *to_out(const char *op, PyObject *out, ampc_tensor *result) {
    if (!result) return ampc_py_raise();
    if (!out || out == Py_None) return ampc_py_wrap(result);
    ampc_tensor *o = ampc_py_unwrap(out, op, "out");
    ampc_status st = AMPC_OK;
    if (!o) {
        ampc_tensor_decref(result);
        return NULL;
    }
    bool same = o->ndim == result->ndim;
    for (int i = 0; same && i < o->ndim; i++) same = o->shape[i] == result->shape[i];
    if (o->dtype != result->dtype)
        st = ampc_set_error(AMPC_E_RUNTIME, "%s(): Expected out tensor to have dtype %s, but got %s instead", op,
                            ampc_dtype_torch_name(result->dtype), ampc_dtype_torch_name(o->dtype));
    else if (!same)
        st = ampc_set_error(AMPC_E_RUNTIME, "%s(): out= needs a tensor of the result's shape (ampc does not resize)", op);
    else
        st = ampc_copy_(o, result);
    ampc_tensor_decref(result);
    if (st != AMPC_OK) return ampc_py_raise();
    Py_INCREF(out);
    return out;
}

/* ampc.return_types.<name>: (values, indices) with named fields */
static PyStructSequence_Field vi_fields[] = {{"values", NULL}, {"indices", NULL}, {NULL, NULL}};
enum { RT_SORT, RT_TOPK, RT_KTHVALUE, RT_MEDIAN, RT_NANMEDIAN, RT_MODE, RT_COUNT };
static PyStructSequence_Desc rt_desc[RT_COUNT] = {
    {"ampc.return_types.sort", NULL, vi_fields, 2},     {"ampc.return_types.topk", NULL, vi_fields, 2},
    {"ampc.return_types.kthvalue", NULL, vi_fields, 2}, {"ampc.return_types.median", NULL, vi_fields, 2},
    {"ampc.return_types.nanmedian", NULL, vi_fields, 2}, {"ampc.return_types.mode", NULL, vi_fields, 2}};
static PyTypeObject *rt_type[RT_COUNT];

/* the pair (steals both), or copied into out=(values, indices) */
static PyObject *pair(int rt, const char *op, ampc_status st, ampc_tensor *v, ampc_tensor *i, PyObject *out) {
    if (st != AMPC_OK) return ampc_py_raise();
    PyObject *pv, *pi;
    if (out && out != Py_None) {
        if (!PyTuple_Check(out) || PyTuple_GET_SIZE(out) != 2) {
            ampc_tensor_decref(v);
            ampc_tensor_decref(i);
            PyErr_Format(PyExc_TypeError, "%s(): out must be a tuple of two tensors (values, indices)", op);
            return NULL;
        }
        pv = to_out(op, PyTuple_GET_ITEM(out, 0), v);
        pi = pv ? to_out(op, PyTuple_GET_ITEM(out, 1), i) : (ampc_tensor_decref(i), NULL);
    } else {
        pv = ampc_py_wrap(v);
        pi = ampc_py_wrap(i);
    }
    if (!rt_type[rt]) rt_type[rt] = PyStructSequence_NewType(&rt_desc[rt]);
    PyObject *r = pv && pi && rt_type[rt] ? PyStructSequence_New(rt_type[rt]) : NULL;
    if (!r) {
        Py_XDECREF(pv);
        Py_XDECREF(pi);
        return NULL;
    }
    PyStructSequence_SET_ITEM(r, 0, pv);
    PyStructSequence_SET_ITEM(r, 1, pi);
    return r;
}

#define PARSE(fmt, ...) \
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, fmt, kwlist, __VA_ARGS__)) return NULL

/* ---- sort, argsort, msort ---- */

static PyObject *m_sort(PyObject *m, PyObject *args, PyObject *kwargs) {
    (void)m;
    static char *kwlist[] = {"input", "dim", "descending", "stable", "out", NULL};
    PyObject *in_o, *dim_o = NULL, *desc_o = NULL, *stable_o = NULL, *out = NULL;
    PARSE("O|OO$OO:sort", &in_o, &dim_o, &desc_o, &stable_o, &out);
    ampc_tensor *a = ampc_py_unwrap(in_o, "sort", "input");
    int64_t dim = -1;
    bool desc = false, stable = false;
    if (!a || opt_int(dim_o, &dim, "sort", "dim") < 0 || opt_bool(desc_o, &desc) < 0 || opt_bool(stable_o, &stable) < 0)
        return NULL;
    ampc_tensor *v, *i;
    ampc_status st = ampc_sort(a, dim, desc, stable, &v, &i);
    return pair(RT_SORT, "sort", st, v, i, out);
}

static PyObject *m_argsort(PyObject *m, PyObject *args, PyObject *kwargs) {
    (void)m;
    static char *kwlist[] = {"input", "dim", "descending", "stable", NULL};
    PyObject *in_o, *dim_o = NULL, *desc_o = NULL, *stable_o = NULL;
    PARSE("O|OO$O:argsort", &in_o, &dim_o, &desc_o, &stable_o);
    ampc_tensor *a = ampc_py_unwrap(in_o, "argsort", "input");
    int64_t dim = -1;
    bool desc = false, stable = false;
    if (!a || opt_int(dim_o, &dim, "argsort", "dim") < 0 || opt_bool(desc_o, &desc) < 0 ||
        opt_bool(stable_o, &stable) < 0)
        return NULL;
    ampc_tensor *v, *i;
    if (ampc_sort(a, dim, desc, stable, &v, &i) != AMPC_OK) return ampc_py_raise();
    ampc_tensor_decref(v);
    return ampc_py_wrap(i);
}

static PyObject *m_msort(PyObject *m, PyObject *args, PyObject *kwargs) {
    (void)m;
    static char *kwlist[] = {"input", "out", NULL};
    PyObject *in_o, *out = NULL;
    PARSE("O|$O:msort", &in_o, &out);
    ampc_tensor *a = ampc_py_unwrap(in_o, "msort", "input");
    if (!a) return NULL;
    ampc_tensor *v, *i;
    if (ampc_sort(a, 0, false, false, &v, &i) != AMPC_OK) return ampc_py_raise();
    ampc_tensor_decref(i);
    return to_out("msort", out, v);
}

/* ---- topk, kthvalue, mode, median, nanmedian ---- */

static PyObject *m_topk(PyObject *m, PyObject *args, PyObject *kwargs) {
    (void)m;
    static char *kwlist[] = {"input", "k", "dim", "largest", "sorted", "out", NULL};
    PyObject *in_o, *k_o, *dim_o = NULL, *lg_o = NULL, *so_o = NULL, *out = NULL;
    PARSE("OO|OOO$O:topk", &in_o, &k_o, &dim_o, &lg_o, &so_o, &out);
    ampc_tensor *a = ampc_py_unwrap(in_o, "topk", "input");
    int64_t k = 0, dim = -1;
    bool largest = true, sorted = true;
    if (!a || opt_int(k_o, &k, "topk", "k") < 0 || opt_int(dim_o, &dim, "topk", "dim") < 0 ||
        opt_bool(lg_o, &largest) < 0 || opt_bool(so_o, &sorted) < 0)
        return NULL;
    ampc_tensor *v, *i;
    ampc_status st = ampc_topk(a, k, dim, largest, sorted, &v, &i);
    return pair(RT_TOPK, "topk", st, v, i, out);
}

static PyObject *m_kthvalue(PyObject *m, PyObject *args, PyObject *kwargs) {
    (void)m;
    static char *kwlist[] = {"input", "k", "dim", "keepdim", "out", NULL};
    PyObject *in_o, *k_o, *dim_o = NULL, *keep_o = NULL, *out = NULL;
    PARSE("OO|OO$O:kthvalue", &in_o, &k_o, &dim_o, &keep_o, &out);
    ampc_tensor *a = ampc_py_unwrap(in_o, "kthvalue", "input");
    int64_t k = 0, dim = -1;
    bool keep = false;
    if (!a || opt_int(k_o, &k, "kthvalue", "k") < 0 || opt_int(dim_o, &dim, "kthvalue", "dim") < 0 ||
        opt_bool(keep_o, &keep) < 0)
        return NULL;
    ampc_tensor *v, *i;
    ampc_status st = ampc_select_dim(AMPC_OP_KTHVALUE, a, k, dim, keep, &v, &i);
    return pair(RT_KTHVALUE, "kthvalue", st, v, i, out);
}

static PyObject *m_mode(PyObject *m, PyObject *args, PyObject *kwargs) {
    (void)m;
    static char *kwlist[] = {"input", "dim", "keepdim", "out", NULL};
    PyObject *in_o, *dim_o = NULL, *keep_o = NULL, *out = NULL;
    PARSE("O|OO$O:mode", &in_o, &dim_o, &keep_o, &out);
    ampc_tensor *a = ampc_py_unwrap(in_o, "mode", "input");
    int64_t dim = -1;
    bool keep = false;
    if (!a || opt_int(dim_o, &dim, "mode", "dim") < 0 || opt_bool(keep_o, &keep) < 0) return NULL;
    ampc_tensor *v, *i;
    ampc_status st = ampc_select_dim(AMPC_OP_MODE, a, 0, dim, keep, &v, &i);
    return pair(RT_MODE, "mode", st, v, i, out);
}

static PyObject *median_common(ampc_op op, PyObject *args, PyObject *kwargs) {
    static char *kwlist[] = {"input", "dim", "keepdim", "out", NULL};
    const char *name = ampc_op_name(op);
    PyObject *in_o, *dim_o = NULL, *keep_o = NULL, *out = NULL;
    char fmt[32];
    snprintf(fmt, sizeof fmt, "O|OO$O:%s", name);
    PARSE(fmt, &in_o, &dim_o, &keep_o, &out);
    ampc_tensor *a = ampc_py_unwrap(in_o, name, "input");
    if (!a) return NULL;
    if (!dim_o || dim_o == Py_None) {
        if (keep_o) {
            PyErr_Format(PyExc_TypeError, "%s(): keepdim needs a dim", name);
            return NULL;
        }
        return to_out(name, out, ampc_median_all(op, a));
    }
    int64_t dim = 0;
    bool keep = false;
    if (opt_int(dim_o, &dim, name, "dim") < 0 || opt_bool(keep_o, &keep) < 0) return NULL;
    ampc_tensor *v, *i;
    ampc_status st = ampc_select_dim(op, a, 0, dim, keep, &v, &i);
    return pair(op == AMPC_OP_MEDIAN ? RT_MEDIAN : RT_NANMEDIAN, name, st, v, i, out);
}

static PyObject *m_median(PyObject *m, PyObject *a, PyObject *k) { (void)m; return median_common(AMPC_OP_MEDIAN, a, k); }
static PyObject *m_nanmedian(PyObject *m, PyObject *a, PyObject *k) { (void)m; return median_common(AMPC_OP_NANMEDIAN, a, k); }

/* ---- quantile, nanquantile ---- */

static PyObject *quantile_common(bool ignore_nan, PyObject *args, PyObject *kwargs) {
    static char *kwlist[] = {"input", "q", "dim", "keepdim", "interpolation", "out", NULL};
    const char *name = ignore_nan ? "nanquantile" : "quantile";
    PyObject *in_o, *q_o, *dim_o = NULL, *keep_o = NULL, *out = NULL;
    const char *interp = "linear";
    char fmt[40];
    snprintf(fmt, sizeof fmt, "OO|OO$sO:%s", name);
    PARSE(fmt, &in_o, &q_o, &dim_o, &keep_o, &interp, &out);
    ampc_tensor *a = ampc_py_unwrap(in_o, name, "input");
    int64_t dim = 0;
    bool keep = false, has_dim = dim_o && dim_o != Py_None;
    if (!a || opt_int(dim_o, &dim, name, "dim") < 0 || opt_bool(keep_o, &keep) < 0) return NULL;
    ampc_tensor *q;
    if (AmpcTensor_Check(q_o)) {
        q = ampc_py_unwrap(q_o, name, "q");
        if (!q) return NULL;
        ampc_tensor_incref(q);
    } else {
        double qv;
        if (ampc_py_double(q_o, &qv, name, "q") < 0) return NULL;
        if (!(qv >= 0 && qv <= 1)) {
            char msg[96];
            snprintf(msg, sizeof msg, "quantile() q must be in the range [0, 1] but got %g", qv);
            PyErr_SetString(PyExc_RuntimeError, msg);
            return NULL;
        }
        q = ampc_full(0, NULL, ampc_scalar_float(qv), a->dtype == AMPC_FLOAT64 ? AMPC_FLOAT64 : AMPC_FLOAT32, a->device);
        if (!q) return ampc_py_raise();
    }
    ampc_tensor *r = ampc_quantile(a, q, has_dim, dim, keep, interp, ignore_nan);
    ampc_tensor_decref(q);
    return to_out(name, out, r);
}

static PyObject *m_quantile(PyObject *m, PyObject *a, PyObject *k) { (void)m; return quantile_common(false, a, k); }
static PyObject *m_nanquantile(PyObject *m, PyObject *a, PyObject *k) { (void)m; return quantile_common(true, a, k); }

/* ---- unique, unique_consecutive ---- */

static PyObject *unique_result(ampc_status st, ampc_tensor *v, ampc_tensor *inv, ampc_tensor *cnt, bool want_inv,
                               bool want_cnt) {
    if (st != AMPC_OK) return ampc_py_raise();
    if (!want_inv && !want_cnt) return ampc_py_wrap(v);
    PyObject *r = PyTuple_New(1 + want_inv + want_cnt);
    if (!r) {
        ampc_tensor_decref(v);
        ampc_tensor_decref(inv);
        ampc_tensor_decref(cnt);
        return NULL;
    }
    int k = 0;
    PyTuple_SET_ITEM(r, k++, ampc_py_wrap(v));
    if (want_inv) PyTuple_SET_ITEM(r, k++, ampc_py_wrap(inv));
    if (want_cnt) PyTuple_SET_ITEM(r, k++, ampc_py_wrap(cnt));
    for (int i = 0; i < k; i++)
        if (!PyTuple_GET_ITEM(r, i)) {
            Py_DECREF(r);
            return NULL;
        }
    return r;
}

static PyObject *unique_common(bool consecutive, PyObject *args, PyObject *kwargs) {
    static char *kw_u[] = {"input", "sorted", "return_inverse", "return_counts", "dim", NULL};
    static char *kw_c[] = {"input", "return_inverse", "return_counts", "dim", NULL};
    const char *name = consecutive ? "unique_consecutive" : "unique";
    PyObject *in_o, *sorted_o = NULL, *inv_o = NULL, *cnt_o = NULL, *dim_o = NULL;
    int ok = consecutive
                 ? PyArg_ParseTupleAndKeywords(args, kwargs, "O|OOO:unique_consecutive", kw_c, &in_o, &inv_o, &cnt_o, &dim_o)
                 : PyArg_ParseTupleAndKeywords(args, kwargs, "O|OOOO:unique", kw_u, &in_o, &sorted_o, &inv_o, &cnt_o, &dim_o);
    if (!ok) return NULL;
    ampc_tensor *a = ampc_py_unwrap(in_o, name, "input");
    bool want_inv = false, want_cnt = false, sorted = true;
    if (!a || opt_bool(sorted_o, &sorted) < 0 || opt_bool(inv_o, &want_inv) < 0 || opt_bool(cnt_o, &want_cnt) < 0)
        return NULL;
    ampc_tensor *v = NULL, *inv = NULL, *cnt = NULL;
    ampc_status st;
    if (dim_o && dim_o != Py_None) {
        int64_t dim;
        if (opt_int(dim_o, &dim, name, "dim") < 0) return NULL;
        st = ampc_unique_dim(a, dim, consecutive, &v, &inv, &cnt);
        if (st == AMPC_OK && !want_inv) ampc_tensor_decref(inv), inv = NULL;
        if (st == AMPC_OK && !want_cnt) ampc_tensor_decref(cnt), cnt = NULL;
    } else {
        st = ampc_unique(a, consecutive, &v, want_inv ? &inv : NULL, want_cnt ? &cnt : NULL);
    }
    return unique_result(st, v, inv, cnt, want_inv, want_cnt);
}

static PyObject *m_unique(PyObject *m, PyObject *a, PyObject *k) { (void)m; return unique_common(false, a, k); }
static PyObject *m_unique_consecutive(PyObject *m, PyObject *a, PyObject *k) { (void)m; return unique_common(true, a, k); }

/* ---- searchsorted, bucketize, isin ---- */

/* right= and side= as PyTorch combines them */
static int parse_side(PyObject *right_o, const char *side, bool *right) {
    *right = false;
    if (opt_bool(right_o, right) < 0) return -1;
    if (!side) return 0;
    if (strcmp(side, "left") && strcmp(side, "right")) {
        PyErr_Format(PyExc_RuntimeError, "torch.searchsorted(): side can only be 'left' or 'right' but got %s", side);
        return -1;
    }
    bool side_right = !strcmp(side, "right");
    if (right_o && *right && !side_right) {
        PyErr_SetString(PyExc_RuntimeError,
                        "torch.searchsorted(): side and right can't be set to opposites, got side of left while right was True");
        return -1;
    }
    *right = side_right;
    return 0;
}

static PyObject *m_searchsorted(PyObject *m, PyObject *args, PyObject *kwargs) {
    (void)m;
    static char *kwlist[] = {"sorted_sequence", "input", "out_int32", "right", "side", "out", "sorter", NULL};
    PyObject *s_o, *v_o, *i32_o = NULL, *right_o = NULL, *out = NULL, *sorter_o = NULL;
    const char *side = NULL;
    PARSE("OO|$OOzOO:searchsorted", &s_o, &v_o, &i32_o, &right_o, &side, &out, &sorter_o);
    ampc_tensor *s = ampc_py_unwrap(s_o, "searchsorted", "sorted_sequence");
    bool i32 = false, right;
    if (!s || opt_bool(i32_o, &i32) < 0 || parse_side(right_o, side, &right) < 0) return NULL;
    ampc_tensor *sorter = NULL;
    if (sorter_o && sorter_o != Py_None && !(sorter = ampc_py_unwrap(sorter_o, "searchsorted", "sorter"))) return NULL;
    ampc_tensor *v = tensor_or_number(v_o, s->device, "searchsorted", "input");
    if (!v) return NULL;
    ampc_tensor *r = ampc_searchsorted(s, v, i32, right, sorter);
    ampc_tensor_decref(v);
    return to_out("searchsorted", out, r);
}

static PyObject *m_bucketize(PyObject *m, PyObject *args, PyObject *kwargs) {
    (void)m;
    static char *kwlist[] = {"input", "boundaries", "out_int32", "right", "out", NULL};
    PyObject *in_o, *b_o, *i32_o = NULL, *right_o = NULL, *out = NULL;
    PARSE("OO|$OOO:bucketize", &in_o, &b_o, &i32_o, &right_o, &out);
    ampc_tensor *b = ampc_py_unwrap(b_o, "bucketize", "boundaries");
    bool i32 = false, right = false;
    if (!b || opt_bool(i32_o, &i32) < 0 || opt_bool(right_o, &right) < 0) return NULL;
    ampc_tensor *in = tensor_or_number(in_o, b->device, "bucketize", "input");
    if (!in) return NULL;
    ampc_tensor *r = ampc_bucketize(in, b, i32, right);
    ampc_tensor_decref(in);
    return to_out("bucketize", out, r);
}

static PyObject *m_isin(PyObject *m, PyObject *args, PyObject *kwargs) {
    (void)m;
    static char *kwlist[] = {"elements", "test_elements", "assume_unique", "invert", NULL};
    PyObject *e_o, *t_o, *uniq_o = NULL, *inv_o = NULL;
    PARSE("OO|$OO:isin", &e_o, &t_o, &uniq_o, &inv_o);
    bool invert = false, uniq = false;
    if (opt_bool(uniq_o, &uniq) < 0 || opt_bool(inv_o, &invert) < 0) return NULL;
    if (!AmpcTensor_Check(e_o) && !AmpcTensor_Check(t_o)) {
        PyErr_SetString(PyExc_TypeError, "isin(): at least one of elements and test_elements must be a Tensor");
        return NULL;
    }
    ampc_device dev = AmpcTensor_Check(e_o) ? ((AmpcTensorObject *)e_o)->t->device : ((AmpcTensorObject *)t_o)->t->device;
    ampc_tensor *e = tensor_or_number(e_o, dev, "isin", "elements");
    ampc_tensor *t = e ? tensor_or_number(t_o, dev, "isin", "test_elements") : NULL;
    ampc_tensor *r = t ? ampc_isin(e, t, invert) : NULL;
    ampc_tensor_decref(e);
    ampc_tensor_decref(t);
    if (!r && !PyErr_Occurred()) return ampc_py_raise();
    return r ? ampc_py_wrap(r) : NULL;
}

/* ---- histc, bincount ---- */

static PyObject *m_histc(PyObject *m, PyObject *args, PyObject *kwargs) {
    (void)m;
    static char *kwlist[] = {"input", "bins", "min", "max", "out", NULL};
    PyObject *in_o, *bins_o = NULL, *min_o = NULL, *max_o = NULL, *out = NULL;
    PARSE("O|OOO$O:histc", &in_o, &bins_o, &min_o, &max_o, &out);
    ampc_tensor *a = ampc_py_unwrap(in_o, "histc", "input");
    int64_t bins = 100;
    double lo = 0, hi = 0;
    if (!a || opt_int(bins_o, &bins, "histc", "bins") < 0 || ampc_py_double(min_o, &lo, "histc", "min") < 0 ||
        ampc_py_double(max_o, &hi, "histc", "max") < 0)
        return NULL;
    return to_out("histc", out, ampc_histc(a, bins, lo, hi));
}

static PyObject *m_bincount(PyObject *m, PyObject *args, PyObject *kwargs) {
    (void)m;
    static char *kwlist[] = {"input", "weights", "minlength", NULL};
    PyObject *in_o, *w_o = NULL, *ml_o = NULL;
    PARSE("O|OO:bincount", &in_o, &w_o, &ml_o);
    ampc_tensor *a = ampc_py_unwrap(in_o, "bincount", "input"), *w = NULL;
    int64_t minlength = 0;
    if (!a || opt_int(ml_o, &minlength, "bincount", "minlength") < 0) return NULL;
    if (w_o && w_o != Py_None && !(w = ampc_py_unwrap(w_o, "bincount", "weights"))) return NULL;
    return ampc_py_wrap(ampc_bincount(a, w, minlength));
}

/* ---- tables ---- */

/* The Tensor method: the module function with self first. */
#define METHOD(NAME)                                                                               \
    static PyObject *t_##NAME(PyObject *self, PyObject *args, PyObject *kwargs) {                 \
        Py_ssize_t n = PyTuple_GET_SIZE(args);                                                     \
        PyObject *all = PyTuple_New(n + 1);                                                        \
        if (!all) return NULL;                                                                     \
        Py_INCREF(self);                                                                           \
        PyTuple_SET_ITEM(all, 0, self);                                                            \
        for (Py_ssize_t i = 0; i < n; i++) {                                                       \
            Py_INCREF(PyTuple_GET_ITEM(args, i));                                                  \
            PyTuple_SET_ITEM(all, i + 1, PyTuple_GET_ITEM(args, i));                               \
        }                                                                                          \
        PyObject *r = m_##NAME(NULL, all, kwargs);                                                 \
        Py_DECREF(all);                                                                            \
        return r;                                                                                  \
    }

#define SORT_METHODS(X)                                                                            \
    X(sort, "sort(dim=-1, descending=False, *, stable=False) -> (values, indices); stable always") \
    X(argsort, "argsort(dim=-1, descending=False, *, stable=False): the indices of sort")          \
    X(msort, "msort(): sorted along dim 0")                                                        \
    X(topk, "topk(k, dim=-1, largest=True, sorted=True) -> (values, indices)")                     \
    X(kthvalue, "kthvalue(k, dim=-1, keepdim=False) -> (values, indices): k-th smallest")         \
    X(mode, "mode(dim=-1, keepdim=False) -> (values, indices): the most frequent value")          \
    X(median, "median() | median(dim, keepdim=False) -> (values, indices): the lower median")     \
    X(nanmedian, "nanmedian() | nanmedian(dim, keepdim=False): median ignoring NaN")              \
    X(quantile, "quantile(q, dim=None, keepdim=False, *, interpolation='linear')")                \
    X(nanquantile, "nanquantile(q, dim=None, keepdim=False, *, interpolation='linear')")          \
    X(unique, "unique(sorted=True, return_inverse=False, return_counts=False, dim=None)")         \
    X(unique_consecutive, "unique_consecutive(return_inverse=False, return_counts=False, dim=None)") \
    X(histc, "histc(bins=100, min=0, max=0): histogram of equal bins")                            \
    X(bincount, "bincount(weights=None, minlength=0): counts of each non-negative integer")

#define DEF_METHOD(NAME, DOC) METHOD(NAME)
SORT_METHODS(DEF_METHOD)

#define ENTRY(PREFIX, NAME, DOC) {#NAME, (PyCFunction)(void (*)(void))PREFIX##_##NAME, METH_VARARGS | METH_KEYWORDS, DOC},
#define M_ENTRY(NAME, DOC) ENTRY(m, NAME, DOC)
#define T_ENTRY(NAME, DOC) ENTRY(t, NAME, DOC)

PyMethodDef ampc_py_module_methods_sort[] = {
    SORT_METHODS(M_ENTRY)
    ENTRY(m, searchsorted, "searchsorted(sorted_sequence, input, *, out_int32=False, right=False, side=None, sorter=None)")
    ENTRY(m, bucketize, "bucketize(input, boundaries, *, out_int32=False, right=False)")
    ENTRY(m, isin, "isin(elements, test_elements, *, assume_unique=False, invert=False)")
    {NULL, NULL, 0, NULL}};

PyMethodDef ampc_py_tensor_methods_sort[] = {SORT_METHODS(T_ENTRY){NULL, NULL, 0, NULL}};
