/* py_index.c: Python's indexing protocol on ampc.Tensor (t[key], t[key] = v, len(t)) and the
 * bindings of the index and joining ops: index_select, gather, scatter_add, index_add,
 * index_put_, masked_fill, nonzero, cat/concat/concatenate, stack, split, chunk, unbind.
 *
 * t[key] follows PyTorch. Ints, slices (step > 0), None, Ellipsis and Python bools are basic
 * indexing: a view made with select/slice/unsqueeze, sharing memory. Tensors, NumPy arrays and
 * lists are advanced indexing and copy (ampc_index), with NumPy's rules for the result's shape:
 * index arrays broadcast together and their dims go first when a slice separates them. Ints are
 * applied as views before that, as PyTorch does, so t[0, :, [1, 2]] has shape (d1, 2) where
 * NumPy gives (2, d1). A list is always an index array (NumPy, and PyTorch from 2.9 on).
 * t[key] = v writes through the view (fill_/copy_) or with index_put_. */
#include "py_internal.h"
#include "py_numpy.h"

#include <stdlib.h>
#include <string.h>

#define SELF_T(o) (((AmpcTensorObject *)(o))->t)
#define KW(...) static char *kwlist[] = {__VA_ARGS__, NULL}

static int parse_int(PyObject *o, int64_t *out, const char *op, const char *arg) {
    PyObject *i = PyIndex_Check(o) ? PyNumber_Index(o) : NULL;
    if (!i) {
        if (!PyErr_Occurred() || PyErr_ExceptionMatches(PyExc_TypeError)) {
            PyErr_Clear();
            PyErr_Format(PyExc_TypeError, "%s(): argument '%s' must be int, not %s", op, arg, Py_TYPE(o)->tp_name);
        }
        return -1;
    }
    long long v = PyLong_AsLongLong(i);
    Py_DECREF(i);
    if (v == -1 && PyErr_Occurred()) return -1;
    *out = v;
    return 0;
}

/* A list of Python ints of any length (split sizes); the caller frees *out with PyMem_Free. */
static Py_ssize_t parse_int_sequence(PyObject *o, int64_t **out, const char *op, const char *arg) {
    PyObject *seq = PySequence_Fast(o, "");
    if (!seq) {
        PyErr_Format(PyExc_TypeError, "%s(): argument '%s' must be int or a sequence of ints, not %s", op, arg,
                     Py_TYPE(o)->tp_name);
        return -1;
    }
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    *out = (int64_t *)PyMem_Malloc(sizeof(int64_t) * (size_t)(n ? n : 1));
    if (!*out) {
        Py_DECREF(seq);
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t i = 0; i < n; i++)
        if (parse_int(PySequence_Fast_GET_ITEM(seq, i), &(*out)[i], op, arg) < 0) {
            PyMem_Free(*out);
            *out = NULL;
            Py_DECREF(seq);
            return -1;
        }
    Py_DECREF(seq);
    return n;
}

/* Borrowed core tensors of a list/tuple of Tensors; the caller frees *out with PyMem_Free. */
static Py_ssize_t parse_tensor_sequence(PyObject *o, const ampc_tensor ***out, const char *op) {
    if (AmpcTensor_Check(o) || !PySequence_Check(o)) {
        PyErr_Format(PyExc_TypeError, "%s(): argument 'tensors' (position 1) must be tuple of Tensors, not %s", op,
                     Py_TYPE(o)->tp_name);
        return -1;
    }
    PyObject *seq = PySequence_Fast(o, "");
    if (!seq) return -1;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    *out = (const ampc_tensor **)PyMem_Malloc(sizeof(ampc_tensor *) * (size_t)(n ? n : 1));
    if (!*out) {
        Py_DECREF(seq);
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *item = PySequence_Fast_GET_ITEM(seq, i);
        if (!AmpcTensor_Check(item)) {
            PyErr_Format(PyExc_TypeError, "expected Tensor as element %zd in argument 0, but got %s", i,
                         Py_TYPE(item)->tp_name);
            PyMem_Free(*out);
            *out = NULL;
            Py_DECREF(seq);
            return -1;
        }
        (*out)[i] = SELF_T(item); /* `o` keeps the items alive for the call */
    }
    Py_DECREF(seq);
    return n;
}

/* A tuple of Tensors from a core list (stealing its references, freeing the array). */
static PyObject *tuple_from_list(ampc_tensor **list, int64_t n) {
    if (!list) return ampc_py_raise();
    PyObject *tup = PyTuple_New((Py_ssize_t)n);
    if (!tup) {
        ampc_tensor_list_free(list, n);
        return NULL;
    }
    for (int64_t i = 0; i < n; i++) {
        PyObject *w = ampc_py_wrap(list[i]); /* steals, also on failure */
        if (!w) {
            for (int64_t j = i + 1; j < n; j++) ampc_tensor_decref(list[j]);
            free(list);
            Py_DECREF(tup);
            return NULL;
        }
        PyTuple_SET_ITEM(tup, (Py_ssize_t)i, w);
    }
    free(list);
    return tup;
}

static int is_number(PyObject *o) {
    return PyBool_Check(o) || PyLong_Check(o) || PyFloat_Check(o) || PyArray_IsScalar(o, Generic);
}

/* ------------------------------------------------------------------ parsing an index key */

/* KEY_BOOL_INDEX: a Python bool in a key that has index tensors. PyTorch turns every bool into a
 * new dim indexed by [0] (True) or by an empty index (False); beside other index tensors that
 * index broadcasts with them (x[[1], True] has shape (1, d1), x[[0, 1], False] cannot broadcast),
 * so there it is an index tensor too; alone, True and False stay views (unsqueeze, an empty narrow). */
typedef enum { KEY_INT, KEY_SLICE, KEY_NONE, KEY_ELLIPSIS, KEY_TRUE, KEY_FALSE, KEY_TENSOR, KEY_BOOL_INDEX } key_kind;

typedef struct key_item {
    key_kind kind;
    int64_t i;                     /* KEY_INT */
    Py_ssize_t start, stop, step;  /* KEY_SLICE */
    ampc_tensor *t;                /* KEY_TENSOR, KEY_BOOL_INDEX: owned, on the indexed tensor's device */
} key_item;

#define MAX_KEY_ITEMS 64

typedef struct parsed_key {
    int n;
    key_item items[MAX_KEY_ITEMS];
} parsed_key;

static void key_release(parsed_key *k) {
    for (int i = 0; i < k->n; i++) ampc_tensor_decref(k->items[i].t);
    k->n = 0;
}

static int is_mask(const ampc_tensor *t) { return t->dtype == AMPC_BOOL || t->dtype == AMPC_UINT8; }

/* Dims of the indexed tensor an item consumes. */
static int consumed_dims(const key_item *it) {
    if (it->kind == KEY_INT || it->kind == KEY_SLICE) return 1;
    if (it->kind == KEY_TENSOR) return is_mask(it->t) ? it->t->ndim : 1;
    return 0;
}

static int raise_invalid_index(PyObject *o) {
    PyErr_Format(PyExc_IndexError,
                 "only integers, slices (`:`), ellipsis (`...`), None and long or byte Variables are valid indices "
                 "(got %s)",
                 Py_TYPE(o)->tp_name);
    return -1;
}

static int raise_index_dtype(void) {
    PyErr_SetString(PyExc_IndexError, "tensors used as indices must be long, int, byte or bool tensors");
    return -1;
}

/* A list, tuple or NumPy array used as an index: an int64 or bool tensor on `device`. */
static int sequence_index(PyObject *o, ampc_device device, key_item *it) {
    ampc_dtype want = AMPC_DTYPE_UNDEFINED;
    if (PyArray_Check(o)) {
        /* NumPy semantics: any integer array (uint8 too) indexes, a bool array masks */
        PyArrayObject *arr = (PyArrayObject *)o;
        if (PyArray_ISBOOL(arr)) want = AMPC_BOOL;
        else if (PyArray_ISINTEGER(arr)) want = AMPC_INT64;
        else if (PyArray_SIZE(arr) != 0) return raise_index_dtype();
        else want = AMPC_INT64;
    }
    PyObject *w = ampc_py_tensor_from_data(o, want, ampc_cpu_device(), 0);
    if (!w) return -1;
    ampc_tensor *t = SELF_T(w);
    ampc_dtype dt = t->dtype;
    if (ampc_dtype_is_floating(dt)) {
        if (ampc_numel(t) != 0) {
            Py_DECREF(w);
            return raise_index_dtype();
        }
        dt = AMPC_INT64; /* t[[]]: an empty index list selects nothing */
    }
    if (t->ndim == 0 && dt == AMPC_INT64) { /* np.array(2) indexes like 2 (NumPy) */
        ampc_scalar s;
        ampc_status st = ampc_get_scalar(t, 0, &s);
        Py_DECREF(w);
        it->kind = KEY_INT;
        it->i = s.v.i;
        return ampc_py_check(st);
    }
    it->kind = KEY_TENSOR;
    it->t = ampc_to(t, dt, device, false);
    Py_DECREF(w);
    return it->t ? 0 : ampc_py_raise_int();
}

static int parse_key_item(PyObject *o, ampc_device device, key_item *it) {
    memset(it, 0, sizeof *it);
    if (o == Py_None) {
        it->kind = KEY_NONE;
    } else if (o == Py_Ellipsis) {
        it->kind = KEY_ELLIPSIS;
    } else if (PyBool_Check(o) || PyArray_IsScalar(o, Bool)) {
        it->kind = PyObject_IsTrue(o) ? KEY_TRUE : KEY_FALSE;
    } else if (PySlice_Check(o)) {
        it->kind = KEY_SLICE;
        if (PySlice_Unpack(o, &it->start, &it->stop, &it->step) < 0) return -1;
        if (it->step <= 0) {
            PyErr_SetString(PyExc_ValueError, "step must be greater than zero");
            return -1;
        }
    } else if (AmpcTensor_Check(o)) {
        ampc_tensor *t = SELF_T(o);
        if (t->ndim == 0 && ampc_dtype_is_integral(t->dtype, false)) {
            /* PyTorch: a 0-dim integer tensor indexes like an int (a view) */
            ampc_scalar s;
            if (ampc_py_check(ampc_get_scalar(t, 0, &s)) < 0) return -1;
            it->kind = KEY_INT;
            it->i = s.v.i;
        } else {
            if (!is_mask(t) && t->dtype != AMPC_INT64 && t->dtype != AMPC_INT32) return raise_index_dtype();
            it->kind = KEY_TENSOR;
            it->t = ampc_to(t, t->dtype, device, false); /* CPU indices may index a CUDA tensor */
            if (!it->t) return ampc_py_raise_int();
        }
    } else if (PyArray_Check(o) || PyList_Check(o) || PyTuple_Check(o)) {
        return sequence_index(o, device, it);
    } else if (PyRange_Check(o)) { /* torch: a range indexes like the list of its ints */
        PyObject *list = PySequence_List(o);
        if (!list) return -1;
        int rc = sequence_index(list, device, it);
        Py_DECREF(list);
        return rc;
    } else if (PyIndex_Check(o) && !PyFloat_Check(o)) {
        it->kind = KEY_INT;
        return parse_int(o, &it->i, "__getitem__", "index");
    } else {
        return raise_invalid_index(o);
    }
    return 0;
}

static int parse_key(PyObject *key, ampc_device device, parsed_key *k) {
    k->n = 0;
    bool is_tuple = PyTuple_Check(key);
    Py_ssize_t n = is_tuple ? PyTuple_GET_SIZE(key) : 1;
    if (n > MAX_KEY_ITEMS) {
        PyErr_Format(PyExc_IndexError, "too many indices (%zd); ampc takes at most %d", n, MAX_KEY_ITEMS);
        return -1;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        if (parse_key_item(is_tuple ? PyTuple_GET_ITEM(key, i) : key, device, &k->items[k->n]) < 0) {
            key_release(k);
            return -1;
        }
        k->n++;
    }
    bool advanced = false;
    for (int i = 0; i < k->n; i++) advanced |= k->items[i].kind == KEY_TENSOR;
    for (int i = 0; advanced && i < k->n; i++) {
        key_item *it = &k->items[i];
        if (it->kind != KEY_TRUE && it->kind != KEY_FALSE) continue;
        int64_t len = it->kind == KEY_TRUE;
        if (!(it->t = ampc_zeros(1, &len, AMPC_INT64, device))) {
            key_release(k);
            return ampc_py_raise_int();
        }
        it->kind = KEY_BOOL_INDEX;
    }
    return 0;
}

/* The basic part of t[key]: a view of `self` after every int, slice, None, Ellipsis and bool.
 * Index tensors are left for ampc_index: `entries` receives, for each dim of the view, NULL or
 * the index tensor that starts there (borrowed from k); *n_entries is 0 when there are none.
 * Returns a new reference or NULL with a Python exception. */
static ampc_tensor *apply_basic(const ampc_tensor *self, const parsed_key *k, const ampc_tensor **entries,
                                int *n_entries) {
    int consumed = 0, ellipses = 0;
    for (int i = 0; i < k->n; i++) {
        consumed += consumed_dims(&k->items[i]);
        ellipses += k->items[i].kind == KEY_ELLIPSIS;
    }
    if (ellipses > 1) {
        PyErr_SetString(PyExc_IndexError, "an index can only have a single ellipsis ('...')");
        return NULL;
    }
    if (self->ndim == 0 && consumed > 0 && k->items[0].kind == KEY_INT) {
        PyErr_SetString(PyExc_IndexError,
                        "invalid index of a 0-dim tensor. Use `tensor.item()` in Python or `tensor.item<T>()` in C++ "
                        "to convert a 0-dim tensor to a number");
        return NULL;
    }
    if (consumed > self->ndim) {
        PyErr_Format(PyExc_IndexError, "too many indices for tensor of dimension %d", self->ndim);
        return NULL;
    }
    /* starts as self itself, so a purely advanced key indexes self (and its autograd history) */
    ampc_tensor_incref((ampc_tensor *)self);
    ampc_tensor *v = (ampc_tensor *)self;
    int d = 0;        /* the dim of v the next item applies to */
    int shown = 0;    /* the dim PyTorch names in errors: counts every item before, like its real_dim */
    int adv_pos[MAX_KEY_ITEMS];
    const ampc_tensor *adv[MAX_KEY_ITEMS];
    int n_adv = 0;
    for (int i = 0; i < k->n && v; i++) {
        const key_item *it = &k->items[i];
        ampc_tensor *next = NULL;
        switch (it->kind) {
        case KEY_INT: {
            int64_t size = v->shape[d];
            if (it->i < -size || it->i >= size) {
                PyErr_Format(PyExc_IndexError, "index %lld is out of bounds for dimension %d with size %lld",
                             (long long)it->i, shown, (long long)size);
                ampc_tensor_decref(v);
                return NULL;
            }
            next = ampc_select(v, d, it->i);
            break;
        }
        case KEY_SLICE: next = ampc_slice(v, d, it->start, it->stop, it->step); d++; break;
        case KEY_NONE:
        case KEY_TRUE: next = ampc_unsqueeze(v, d); d++; break;
        case KEY_FALSE: {
            ampc_tensor *u = ampc_unsqueeze(v, d);
            next = u ? ampc_narrow(u, d, 0, 0) : NULL;
            ampc_tensor_decref(u);
            d++;
            break;
        }
        case KEY_ELLIPSIS:
            d += self->ndim - consumed;
            shown += self->ndim - consumed - 1;
            break;
        case KEY_TENSOR:
            adv_pos[n_adv] = d;
            adv[n_adv++] = it->t;
            d += consumed_dims(it);
            shown += consumed_dims(it) - 1;
            break;
        case KEY_BOOL_INDEX: /* a new dim, indexed by it->t */
            next = ampc_unsqueeze(v, d);
            adv_pos[n_adv] = d++;
            adv[n_adv++] = it->t;
            break;
        }
        shown++;
        if (it->kind != KEY_ELLIPSIS && it->kind != KEY_TENSOR) {
            ampc_tensor_decref(v);
            v = next;
        }
    }
    if (!v) return ampc_py_raise(), NULL;
    if (v == self && !n_adv) { /* t[...] and t[()] are new tensors viewing all of t */
        ampc_tensor *alias = ampc_alias(v);
        ampc_tensor_decref(v);
        if (!(v = alias)) return ampc_py_raise(), NULL;
    }
    /* one entry per dim of v up to the last index tensor; masks cover several, 0-dim masks none */
    int n = 0, cursor = 0;
    for (int j = 0; j < n_adv; j++) {
        while (cursor < adv_pos[j] && n < MAX_KEY_ITEMS) {
            entries[n++] = NULL;
            cursor++;
        }
        if (n == MAX_KEY_ITEMS) break;
        entries[n++] = adv[j];
        cursor += is_mask(adv[j]) ? adv[j]->ndim : 1;
    }
    *n_entries = n_adv ? n : 0;
    return v;
}

/* ------------------------------------------------------------------ the mapping protocol */

static PyObject *tensor_getitem(PyObject *self, PyObject *key) {
    ampc_tensor *t = SELF_T(self);
    parsed_key k;
    if (parse_key(key, t->device, &k) < 0) return NULL;
    const ampc_tensor *entries[MAX_KEY_ITEMS];
    int n;
    ampc_tensor *r = apply_basic(t, &k, entries, &n);
    if (r && n) {
        ampc_tensor *copy = ampc_index(r, n, entries);
        ampc_tensor_decref(r);
        r = copy;
    }
    key_release(&k);
    return ampc_py_wrap(r);
}

/* `t` without leading size-1 dims (PyTorch drops them from assigned values, so a (1, n) value
 * fits an (n,) target); a copy when it shares memory with `dst`, so overlapping t[1:] = t[:-1]
 * reads the old values as NumPy does. */
static ampc_tensor *assignable(const ampc_tensor *t, const ampc_tensor *dst) {
    int64_t lead[AMPC_MAX_DIMS];
    int n = 0;
    while (n < t->ndim && t->shape[n] == 1) {
        lead[n] = n;
        n++;
    }
    ampc_tensor *s = n ? ampc_squeeze(t, n, lead) : ampc_alias(t);
    if (s && s->storage == dst->storage) {
        ampc_tensor *c = ampc_clone(s);
        ampc_tensor_decref(s);
        s = c;
    }
    return s;
}

static int tensor_setitem(PyObject *self, PyObject *key, PyObject *value) {
    ampc_tensor *t = SELF_T(self);
    if (!value) {
        PyErr_SetString(PyExc_TypeError, "Tensor object does not support item deletion");
        return -1;
    }
    ampc_scalar s;
    const ampc_tensor *vt = NULL;
    if (AmpcTensor_Check(value)) {
        vt = SELF_T(value);
    } else if (is_number(value)) {
        if (ampc_py_scalar(value, &s, "__setitem__", "value") < 0) return -1;
    } else {
        PyErr_Format(PyExc_TypeError, "can't assign a %s to a ampc.Tensor", Py_TYPE(value)->tp_name);
        return -1;
    }
    parsed_key k;
    if (parse_key(key, t->device, &k) < 0) return -1;
    const ampc_tensor *entries[MAX_KEY_ITEMS];
    int n;
    ampc_tensor *v = apply_basic(t, &k, entries, &n);
    int rc = -1;
    if (v) {
        ampc_status st;
        if (!n && !vt) {
            st = ampc_fill_(v, s);
        } else {
            ampc_tensor *src = vt ? assignable(vt, v) : ampc_full(0, NULL, s, v->dtype, v->device);
            ampc_tensor *cast = NULL;
            if (!src) st = ampc_last_status();
            else if (!n) st = ampc_copy_(v, src);
            else if (!(cast = ampc_to(src, v->dtype, v->device, false))) st = ampc_last_status();
            else st = ampc_index_put_(v, n, entries, cast, false);
            ampc_tensor_decref(cast);
            ampc_tensor_decref(src);
        }
        rc = ampc_py_check(st);
        ampc_tensor_decref(v);
    }
    key_release(&k);
    return rc;
}

PyMappingMethods ampc_py_tensor_as_mapping = {ampc_py_tensor_len, tensor_getitem, tensor_setitem};

/* ------------------------------------------------------------------ Tensor methods */

static PyObject *t_index_select(PyObject *self, PyObject *args, PyObject *kwargs) {
    KW("dim", "index");
    PyObject *dim_o, *index_o;
    int64_t dim;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OO:index_select", kwlist, &dim_o, &index_o) ||
        parse_int(dim_o, &dim, "index_select", "dim") < 0)
        return NULL;
    ampc_tensor *index = ampc_py_unwrap(index_o, "index_select", "index");
    return index ? ampc_py_wrap(ampc_index_select(SELF_T(self), dim, index)) : NULL;
}

static PyObject *t_gather(PyObject *self, PyObject *args, PyObject *kwargs) {
    KW("dim", "index", "sparse_grad");
    PyObject *dim_o, *index_o;
    int sparse_grad = 0; /* accepted for PyTorch compatibility; gradients are dense */
    int64_t dim;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OO|$p:gather", kwlist, &dim_o, &index_o, &sparse_grad) ||
        parse_int(dim_o, &dim, "gather", "dim") < 0)
        return NULL;
    ampc_tensor *index = ampc_py_unwrap(index_o, "gather", "index");
    return index ? ampc_py_wrap(ampc_gather(SELF_T(self), dim, index)) : NULL;
}

/* scatter_add(dim, index, src) and index_add(dim, index, source, *, alpha=1), both forms */
static PyObject *scatter_or_index_add(PyObject *self, PyObject *args, PyObject *kwargs, bool index_add,
                                      bool in_place) {
    static char *kw_scatter[] = {"dim", "index", "src", NULL};
    static char *kw_index[] = {"dim", "index", "source", "alpha", NULL};
    const char *op = index_add ? (in_place ? "index_add_" : "index_add") : (in_place ? "scatter_add_" : "scatter_add");
    PyObject *dim_o, *index_o, *src_o, *alpha_o = NULL;
    int64_t dim;
    double alpha = 1.0;
    int ok = index_add ? PyArg_ParseTupleAndKeywords(args, kwargs, "OOO|$O", kw_index, &dim_o, &index_o, &src_o, &alpha_o)
                       : PyArg_ParseTupleAndKeywords(args, kwargs, "OOO", kw_scatter, &dim_o, &index_o, &src_o);
    if (!ok || parse_int(dim_o, &dim, op, "dim") < 0) return NULL;
    if (alpha_o) {
        ampc_scalar a;
        if (ampc_py_scalar(alpha_o, &a, op, "alpha") < 0) return NULL;
        alpha = ampc_scalar_to_double(a);
    }
    ampc_tensor *index = ampc_py_unwrap(index_o, op, "index");
    ampc_tensor *src = index ? ampc_py_unwrap(src_o, op, index_add ? "source" : "src") : NULL;
    if (!src) return NULL;
    ampc_tensor *a = SELF_T(self);
    if (in_place) {
        ampc_status st = index_add ? ampc_index_add_(a, dim, index, src, alpha) : ampc_scatter_add_(a, dim, index, src);
        if (ampc_py_check(st) < 0) return NULL;
        Py_INCREF(self);
        return self;
    }
    return ampc_py_wrap(index_add ? ampc_index_add(a, dim, index, src, alpha) : ampc_scatter_add(a, dim, index, src));
}

static PyObject *t_scatter_add(PyObject *self, PyObject *args, PyObject *kwargs) {
    return scatter_or_index_add(self, args, kwargs, false, false);
}
static PyObject *t_scatter_add_(PyObject *self, PyObject *args, PyObject *kwargs) {
    return scatter_or_index_add(self, args, kwargs, false, true);
}
static PyObject *t_index_add(PyObject *self, PyObject *args, PyObject *kwargs) {
    return scatter_or_index_add(self, args, kwargs, true, false);
}
static PyObject *t_index_add_(PyObject *self, PyObject *args, PyObject *kwargs) {
    return scatter_or_index_add(self, args, kwargs, true, true);
}

/* index_put_(indices, values, accumulate=False): indices a tuple of index tensors (None for a
 * full slice); a number as values is taken in self's dtype. */
static PyObject *index_put(PyObject *self, PyObject *args, PyObject *kwargs, bool in_place) {
    KW("indices", "values", "accumulate");
    const char *op = in_place ? "index_put_" : "index_put";
    PyObject *indices_o, *values_o;
    int accumulate = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OO|p", kwlist, &indices_o, &values_o, &accumulate)) return NULL;
    if (!PyTuple_Check(indices_o) && !PyList_Check(indices_o)) {
        PyErr_Format(PyExc_TypeError, "%s(): argument 'indices' (position 1) must be tuple of Tensors, not %s", op,
                     Py_TYPE(indices_o)->tp_name);
        return NULL;
    }
    PyObject *seq = PySequence_Fast(indices_o, "");
    if (!seq) return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    if (n > MAX_KEY_ITEMS) {
        Py_DECREF(seq);
        PyErr_Format(PyExc_IndexError, "%s(): too many indices (%zd)", op, n);
        return NULL;
    }
    const ampc_tensor *entries[MAX_KEY_ITEMS];
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *item = PySequence_Fast_GET_ITEM(seq, i);
        entries[i] = item == Py_None ? NULL : ampc_py_unwrap(item, op, "indices");
        if (item != Py_None && !entries[i]) {
            Py_DECREF(seq);
            return NULL;
        }
    }
    ampc_tensor *a = SELF_T(self);
    ampc_tensor *values = NULL;
    if (AmpcTensor_Check(values_o)) {
        values = SELF_T(values_o);
        ampc_tensor_incref(values);
    } else if (is_number(values_o)) {
        ampc_scalar s;
        if (ampc_py_scalar(values_o, &s, op, "values") == 0) values = ampc_full(0, NULL, s, a->dtype, a->device);
        if (!values && !PyErr_Occurred()) ampc_py_raise();
    } else {
        PyErr_Format(PyExc_TypeError, "%s(): argument 'values' (position 2) must be Tensor, not %s", op,
                     Py_TYPE(values_o)->tp_name);
    }
    PyObject *result = NULL;
    if (values && in_place) {
        if (ampc_py_check(ampc_index_put_(a, (int)n, entries, values, accumulate)) == 0) {
            Py_INCREF(self);
            result = self;
        }
    } else if (values) {
        result = ampc_py_wrap(ampc_index_put(a, (int)n, entries, values, accumulate));
    }
    ampc_tensor_decref(values);
    Py_DECREF(seq);
    return result;
}

static PyObject *t_index_put_(PyObject *self, PyObject *args, PyObject *kwargs) { return index_put(self, args, kwargs, true); }
static PyObject *t_index_put(PyObject *self, PyObject *args, PyObject *kwargs) { return index_put(self, args, kwargs, false); }

static PyObject *masked_fill(PyObject *self, PyObject *args, PyObject *kwargs, bool in_place) {
    KW("mask", "value");
    const char *op = in_place ? "masked_fill_" : "masked_fill";
    PyObject *mask_o, *value_o;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OO", kwlist, &mask_o, &value_o)) return NULL;
    ampc_tensor *mask = ampc_py_unwrap(mask_o, op, "mask");
    if (!mask) return NULL;
    ampc_scalar value;
    if (AmpcTensor_Check(value_o)) {
        ampc_tensor *v = SELF_T(value_o);
        if (v->ndim != 0) {
            PyErr_Format(PyExc_RuntimeError,
                         "masked_fill_ only supports a 0-dimensional value tensor, but got tensor with %d dimension(s).",
                         v->ndim);
            return NULL;
        }
        if (ampc_py_check(ampc_get_scalar(v, 0, &value)) < 0) return NULL;
    } else if (ampc_py_scalar(value_o, &value, op, "value") < 0) {
        return NULL;
    }
    if (in_place) {
        if (ampc_py_check(ampc_masked_fill_(SELF_T(self), mask, value)) < 0) return NULL;
        Py_INCREF(self);
        return self;
    }
    return ampc_py_wrap(ampc_masked_fill(SELF_T(self), mask, value));
}

static PyObject *t_masked_fill(PyObject *self, PyObject *args, PyObject *kwargs) { return masked_fill(self, args, kwargs, false); }
static PyObject *t_masked_fill_(PyObject *self, PyObject *args, PyObject *kwargs) { return masked_fill(self, args, kwargs, true); }

static PyObject *t_nonzero(PyObject *self, PyObject *args, PyObject *kwargs) {
    KW("as_tuple");
    int as_tuple = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|$p:nonzero", kwlist, &as_tuple)) return NULL;
    ampc_tensor *a = SELF_T(self);
    if (!as_tuple) return ampc_py_wrap(ampc_nonzero(a));
    /* one 1-D index tensor per dim; a 0-dim input counts as 1-D (PyTorch) */
    int64_t one = 1;
    ampc_tensor *flat = a->ndim ? ampc_alias(a) : ampc_reshape(a, 1, &one);
    ampc_tensor *nz = flat ? ampc_nonzero(flat) : NULL;
    ampc_tensor_decref(flat);
    if (!nz) return ampc_py_raise();
    int64_t n;
    ampc_tensor **cols = ampc_unbind(nz, 1, &n);
    ampc_tensor_decref(nz);
    return tuple_from_list(cols, n);
}

static PyObject *t_split(PyObject *self, PyObject *args, PyObject *kwargs) {
    KW("split_size", "dim");
    PyObject *size_o, *dim_o = NULL;
    int64_t dim = 0, n = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|O:split", kwlist, &size_o, &dim_o) ||
        (dim_o && parse_int(dim_o, &dim, "split", "dim") < 0))
        return NULL;
    ampc_tensor *a = SELF_T(self);
    if (PyIndex_Check(size_o)) {
        int64_t size;
        if (parse_int(size_o, &size, "split", "split_size") < 0) return NULL;
        ampc_tensor **list = ampc_split(a, size, dim, &n);
        return tuple_from_list(list, n);
    }
    int64_t *sizes;
    Py_ssize_t count = parse_int_sequence(size_o, &sizes, "split", "split_size");
    if (count < 0) return NULL;
    ampc_tensor **list = count > INT32_MAX ? NULL : ampc_split_with_sizes(a, (int)count, sizes, dim, &n);
    PyMem_Free(sizes);
    return tuple_from_list(list, n);
}

static PyObject *t_chunk(PyObject *self, PyObject *args, PyObject *kwargs) {
    KW("chunks", "dim");
    PyObject *chunks_o, *dim_o = NULL;
    int64_t chunks, dim = 0, n = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|O:chunk", kwlist, &chunks_o, &dim_o) ||
        parse_int(chunks_o, &chunks, "chunk", "chunks") < 0 || (dim_o && parse_int(dim_o, &dim, "chunk", "dim") < 0))
        return NULL;
    ampc_tensor **list = ampc_chunk(SELF_T(self), chunks, dim, &n);
    return tuple_from_list(list, n);
}

static PyObject *t_unbind(PyObject *self, PyObject *args, PyObject *kwargs) {
    KW("dim");
    PyObject *dim_o = NULL;
    int64_t dim = 0, n = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|O:unbind", kwlist, &dim_o) ||
        (dim_o && parse_int(dim_o, &dim, "unbind", "dim") < 0))
        return NULL;
    ampc_tensor **list = ampc_unbind(SELF_T(self), dim, &n);
    return tuple_from_list(list, n);
}

#define VA METH_VARARGS | METH_KEYWORDS
#define METHOD(f) (PyCFunction)(void (*)(void))(f)

/* The ops bound both as x.name(...) and as ampc.name(input, ...): one row each, with the name
 * PyTorch gives the function's first argument and the docs of the method and of the function. */
#define INDEX_OPS(X)                                                                                                  \
    X(index_select, "input", "index_select(dim, index): the slices of `dim` at the indices",                          \
      "index_select(input, dim, index)")                                                                              \
    X(gather, "input", "gather(dim, index): out[i][j] = self[index[i][j]][j] (for dim 0)", "gather(input, dim, index)") \
    X(scatter_add, "input", "scatter_add(dim, index, src): out-of-place scatter_add_",                                \
      "scatter_add(input, dim, index, src)")                                                                          \
    X(index_add, "input", "index_add(dim, index, source, *, alpha=1)", "index_add(input, dim, index, source, *, alpha=1)") \
    X(index_put, "input", "index_put(indices, values, accumulate=False)",                                             \
      "index_put(input, indices, values, accumulate=False)")                                                           \
    X(masked_fill, "input", "masked_fill(mask, value)", "masked_fill(input, mask, value)")                            \
    X(nonzero, "input", "nonzero(*, as_tuple=False)", "nonzero(input, *, as_tuple=False)")                            \
    X(split, "tensor", "split(split_size_or_sections, dim=0): a tuple of views",                                      \
      "split(tensor, split_size_or_sections, dim=0)")                                                                 \
    X(chunk, "input", "chunk(chunks, dim=0): a tuple of views", "chunk(input, chunks, dim=0)")                        \
    X(unbind, "input", "unbind(dim=0): a tuple of views", "unbind(input, dim=0)")

#define METHOD_ENTRY(name, input_name, method_doc, function_doc) {#name, METHOD(t_##name), VA, method_doc},

PyMethodDef ampc_py_tensor_methods_index[] = {
    INDEX_OPS(METHOD_ENTRY)
    /* in-place forms, methods only */
    {"scatter_add_", METHOD(t_scatter_add_), VA, "scatter_add_(dim, index, src): self[index[i][j]][j] += src[i][j]"},
    {"index_add_", METHOD(t_index_add_), VA, "index_add_(dim, index, source, *, alpha=1)"},
    {"index_put_", METHOD(t_index_put_), VA, "index_put_(indices, values, accumulate=False)"},
    {"masked_fill_", METHOD(t_masked_fill_), VA, "masked_fill_(mask, value)"},
    {NULL, NULL, 0, NULL},
};

/* ------------------------------------------------------------------ module functions */

/* ampc.f(input, *args, **kwargs) -> input.f(*args, **kwargs); `input_name` is the name
 * PyTorch gives the first argument ("input", "tensor"). */
static PyObject *call_method(PyObject *args, PyObject *kwargs, const char *op, const char *input_name,
                             PyObject *(*method)(PyObject *, PyObject *, PyObject *)) {
    PyObject *input = NULL, *rest = NULL, *kw = NULL, *result = NULL;
    if (PyTuple_GET_SIZE(args) > 0) {
        input = PyTuple_GET_ITEM(args, 0);
        rest = PyTuple_GetSlice(args, 1, PyTuple_GET_SIZE(args));
        kw = kwargs ? PyDict_Copy(kwargs) : NULL;
    } else {
        input = kwargs ? PyDict_GetItemString(kwargs, input_name) : NULL;
        if (!input) {
            PyErr_Format(PyExc_TypeError, "%s() missing required argument '%s' (pos 1)", op, input_name);
            return NULL;
        }
        rest = PyTuple_New(0);
        kw = PyDict_Copy(kwargs);
        if (kw && PyDict_DelItemString(kw, input_name) < 0) Py_CLEAR(kw);
    }
    if (rest && (kw || !kwargs)) {
        if (ampc_py_unwrap(input, op, input_name)) result = method(input, rest, kw);
    }
    Py_XDECREF(rest);
    Py_XDECREF(kw);
    return result;
}

/* ampc.name(input, ...) of each INDEX_OPS row */
#define FORWARD(name, input_name, method_doc, function_doc)                                \
    static PyObject *f_##name(PyObject *unused, PyObject *args, PyObject *kwargs) {        \
        (void)unused;                                                                      \
        return call_method(args, kwargs, #name, input_name, t_##name);                     \
    }
INDEX_OPS(FORWARD)

/* cat(tensors, dim=0) and stack(tensors, dim=0); `axis` is accepted for `dim` (NumPy names) */
static PyObject *join(PyObject *args, PyObject *kwargs, const char *op, bool stack) {
    static char *kwlist[] = {"tensors", "dim", "axis", NULL};
    PyObject *seq, *dim_o = NULL, *axis_o = NULL;
    int64_t dim = 0;
    char fmt[32];
    snprintf(fmt, sizeof fmt, "O|OO:%s", op);
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, fmt, kwlist, &seq, &dim_o, &axis_o)) return NULL;
    if (dim_o && axis_o) {
        PyErr_Format(PyExc_TypeError, "%s(): got both 'dim' and 'axis'", op);
        return NULL;
    }
    if (!dim_o) dim_o = axis_o;
    if (dim_o && parse_int(dim_o, &dim, op, "dim") < 0) return NULL;
    const ampc_tensor **ts;
    Py_ssize_t n = parse_tensor_sequence(seq, &ts, op);
    if (n < 0) return NULL;
    PyObject *r = NULL;
    if (n == 0 && !stack)
        PyErr_Format(PyExc_ValueError, "%s(): expected a non-empty list of Tensors", op);
    else if (n > INT32_MAX)
        PyErr_Format(PyExc_ValueError, "%s(): too many tensors", op);
    else
        r = ampc_py_wrap(stack ? ampc_stack((int)n, ts, dim) : ampc_cat((int)n, ts, dim));
    PyMem_Free(ts);
    return r;
}

static PyObject *f_cat(PyObject *unused, PyObject *args, PyObject *kwargs) { return join(args, kwargs, "cat", false); }
static PyObject *f_concat(PyObject *unused, PyObject *args, PyObject *kwargs) { return join(args, kwargs, "concat", false); }
static PyObject *f_concatenate(PyObject *unused, PyObject *args, PyObject *kwargs) {
    return join(args, kwargs, "concatenate", false);
}
static PyObject *f_stack(PyObject *unused, PyObject *args, PyObject *kwargs) { return join(args, kwargs, "stack", true); }

#define FUNCTION_ENTRY(name, input_name, method_doc, function_doc) {#name, METHOD(f_##name), VA, function_doc},

PyMethodDef ampc_py_module_methods_index[] = {
    {"cat", METHOD(f_cat), VA, "cat(tensors, dim=0): join along an existing dim, promoting dtypes"},
    {"concat", METHOD(f_concat), VA, "alias of cat"},
    {"concatenate", METHOD(f_concatenate), VA, "alias of cat (axis= accepted)"},
    {"stack", METHOD(f_stack), VA, "stack(tensors, dim=0): join along a new dim"},
    INDEX_OPS(FUNCTION_ENTRY)
    {NULL, NULL, 0, NULL},
};
