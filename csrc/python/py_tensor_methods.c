/* py_tensor_methods.c: the methods of ampc.Tensor that belong to the tensor core: shape queries,
 * views, dtype/device conversions, copies and fills, new_* constructors, tolist/item. Each parses its arguments and calls one function of tensor.h. Math, reductions,
 * indexing and autograd methods live in their areas' tables; NumPy, DLPack and pickling in
 * py_convert.c. */
#include "py_internal.h"

#include "core/autograd.h"

#include <string.h>

#define SELF_T(self) (((AmpcTensorObject *)(self))->t)
#define KW(...) static char *kwlist[] = {__VA_ARGS__, NULL}
#define METHOD(name) (PyCFunction)(void (*)(void))(name)

static PyObject *return_self(PyObject *self) {
    Py_INCREF(self);
    return self;
}

/* A core call's result (stolen) that may be self's own tensor: self then, else a new Tensor. */
static PyObject *self_or_new(PyObject *self, ampc_tensor *r) {
    if (r == SELF_T(self)) {
        ampc_tensor_decref(r);
        return return_self(self);
    }
    return ampc_py_wrap(r);
}

/* Checks a status from an in-place core call and returns self. */
static PyObject *inplace_result(PyObject *self, ampc_status st) {
    if (ampc_py_check(st) < 0) return NULL;
    return return_self(self);
}

static int parse_int64(PyObject *o, int64_t *out, const char *op, const char *arg) {
    if (!PyIndex_Check(o) || PyBool_Check(o)) {
        PyErr_Format(PyExc_TypeError, "%s(): argument '%s' must be int, not %s", op, arg, Py_TYPE(o)->tp_name);
        return -1;
    }
    PyObject *i = PyNumber_Index(o);
    if (!i) return -1;
    *out = PyLong_AsLongLong(i);
    Py_DECREF(i);
    return (*out == -1 && PyErr_Occurred()) ? -1 : 0;
}

/* ------------------------------------------------------------------ shape queries */

/* values[dim] (a size or a stride) for x.size(dim) and x.stride(dim) */
static PyObject *dim_entry(const ampc_tensor *t, PyObject *dim_o, const int64_t *values, const char *op) {
    int64_t dim;
    int d;
    if (parse_int64(dim_o, &dim, op, "dim") < 0) return NULL;
    if (ampc_py_check(ampc_wrap_dim(op, dim, t->ndim, &d)) < 0) return NULL;
    if (t->ndim == 0) return PyErr_Format(PyExc_IndexError, "%s(): a 0-dim tensor has no dims", op);
    return PyLong_FromLongLong(values[d]);
}

static PyObject *t_size(PyObject *self, PyObject *args, PyObject *kwargs) {
    KW("dim");
    PyObject *dim_o = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|O:size", kwlist, &dim_o)) return NULL;
    ampc_tensor *t = SELF_T(self);
    if (dim_o == Py_None) return ampc_py_size_object(t->ndim, t->shape);
    return dim_entry(t, dim_o, t->shape, "size");
}

static PyObject *t_stride(PyObject *self, PyObject *args, PyObject *kwargs) {
    KW("dim");
    PyObject *dim_o = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|O:stride", kwlist, &dim_o)) return NULL;
    ampc_tensor *t = SELF_T(self);
    if (dim_o == Py_None) {
        PyObject *tuple = PyTuple_New(t->ndim);
        for (int i = 0; tuple && i < t->ndim; i++) {
            PyObject *v = PyLong_FromLongLong(t->strides[i]);
            if (!v) {
                Py_CLEAR(tuple);
                break;
            }
            PyTuple_SET_ITEM(tuple, i, v);
        }
        return tuple;
    }
    return dim_entry(t, dim_o, t->strides, "stride");
}

static PyObject *t_dim(PyObject *self, PyObject *unused) { return PyLong_FromLong(SELF_T(self)->ndim); }
static PyObject *t_numel(PyObject *self, PyObject *unused) { return PyLong_FromLongLong(ampc_numel(SELF_T(self))); }
static PyObject *t_element_size(PyObject *self, PyObject *unused) {
    return PyLong_FromSize_t(ampc_dtype_itemsize(SELF_T(self)->dtype));
}
static PyObject *t_storage_offset(PyObject *self, PyObject *unused) { return PyLong_FromLongLong(SELF_T(self)->offset); }
static PyObject *t_is_contiguous(PyObject *self, PyObject *args, PyObject *kwargs) {
    return PyBool_FromLong(ampc_is_contiguous(SELF_T(self)));
}
static PyObject *t_is_floating_point(PyObject *self, PyObject *unused) {
    return PyBool_FromLong(ampc_dtype_is_floating(SELF_T(self)->dtype));
}
static PyObject *t_is_complex(PyObject *self, PyObject *unused) { Py_RETURN_FALSE; }
static PyObject *t_is_signed(PyObject *self, PyObject *unused) {
    ampc_dtype dt = SELF_T(self)->dtype;
    return PyBool_FromLong(dt != AMPC_UINT8 && dt != AMPC_BOOL);
}
static PyObject *t_data_ptr(PyObject *self, PyObject *unused) {
    return PyLong_FromVoidPtr(ampc_data_ptr(SELF_T(self)));
}
static PyObject *t_get_device(PyObject *self, PyObject *unused) {
    ampc_device d = SELF_T(self)->device;
    return PyLong_FromLong(d.type == AMPC_CPU ? -1 : d.index);
}

/* ------------------------------------------------------------------ views */

/* view, reshape, expand and permute take a shape (or dims) as f(2, 3) or f((2, 3)); the *_as
 * forms take other's shape. */
typedef ampc_tensor *(*shape_op)(const ampc_tensor *t, int ndim, const int64_t *shape);

static PyObject *with_shape(PyObject *self, PyObject *args, shape_op fn, const char *op, const char *arg) {
    int64_t shape[AMPC_MAX_DIMS];
    int nd = ampc_py_int_list(args, shape, AMPC_MAX_DIMS, op, arg);
    if (nd < 0) return NULL;
    return ampc_py_wrap(fn(SELF_T(self), nd, shape));
}

static PyObject *with_shape_of(PyObject *self, PyObject *other, shape_op fn, const char *op) {
    ampc_tensor *o = ampc_py_unwrap(other, op, "other");
    return o ? ampc_py_wrap(fn(SELF_T(self), o->ndim, o->shape)) : NULL;
}

static PyObject *t_view(PyObject *self, PyObject *args) { return with_shape(self, args, ampc_view, "view", "size"); }
static PyObject *t_reshape(PyObject *self, PyObject *args) {
    return with_shape(self, args, ampc_reshape, "reshape", "shape");
}
static PyObject *t_expand(PyObject *self, PyObject *args) { return with_shape(self, args, ampc_expand, "expand", "size"); }
static PyObject *t_permute(PyObject *self, PyObject *args) {
    return with_shape(self, args, ampc_permute, "permute", "dims");
}
static PyObject *t_view_as(PyObject *self, PyObject *other) { return with_shape_of(self, other, ampc_view, "view_as"); }
static PyObject *t_reshape_as(PyObject *self, PyObject *other) {
    return with_shape_of(self, other, ampc_reshape, "reshape_as");
}
static PyObject *t_expand_as(PyObject *self, PyObject *other) {
    return with_shape_of(self, other, ampc_expand, "expand_as");
}

static PyObject *t_flatten(PyObject *self, PyObject *args, PyObject *kwargs) {
    KW("start_dim", "end_dim");
    PyObject *s_o = NULL, *e_o = NULL;
    int64_t s = 0, e = -1;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|OO:flatten", kwlist, &s_o, &e_o)) return NULL;
    if ((s_o && parse_int64(s_o, &s, "flatten", "start_dim") < 0) || (e_o && parse_int64(e_o, &e, "flatten", "end_dim") < 0))
        return NULL;
    return ampc_py_wrap(ampc_flatten(SELF_T(self), s, e));
}

static PyObject *t_transpose(PyObject *self, PyObject *args, PyObject *kwargs) {
    KW("dim0", "dim1");
    PyObject *o0, *o1;
    int64_t d0, d1;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OO:transpose", kwlist, &o0, &o1)) return NULL;
    if (parse_int64(o0, &d0, "transpose", "dim0") < 0 || parse_int64(o1, &d1, "transpose", "dim1") < 0) return NULL;
    return ampc_py_wrap(ampc_transpose(SELF_T(self), d0, d1));
}

static PyObject *t_t(PyObject *self, PyObject *unused) {
    ampc_tensor *t = SELF_T(self);
    if (t->ndim > 2)
        return PyErr_Format(PyExc_RuntimeError, "t() expects a tensor with <= 2 dimensions, but self is %dD", t->ndim);
    if (t->ndim < 2) return ampc_py_wrap(ampc_alias(t));
    return ampc_py_wrap(ampc_transpose(t, 0, 1));
}

static PyObject *t_unsqueeze(PyObject *self, PyObject *args, PyObject *kwargs) {
    KW("dim");
    PyObject *o;
    int64_t d;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O:unsqueeze", kwlist, &o)) return NULL;
    if (parse_int64(o, &d, "unsqueeze", "dim") < 0) return NULL;
    return ampc_py_wrap(ampc_unsqueeze(SELF_T(self), d));
}

static PyObject *t_squeeze(PyObject *self, PyObject *args, PyObject *kwargs) {
    KW("dim");
    PyObject *dim_o = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|O:squeeze", kwlist, &dim_o)) return NULL;
    int64_t dims[AMPC_MAX_DIMS];
    int nd = 0;
    if (dim_o != Py_None) {
        nd = ampc_py_int_list(dim_o, dims, AMPC_MAX_DIMS, "squeeze", "dim");
        if (nd < 0) return NULL;
        if (nd == 0) return ampc_py_wrap(ampc_alias(SELF_T(self))); /* squeeze(()) drops nothing */
    }
    return ampc_py_wrap(ampc_squeeze(SELF_T(self), nd, dims));
}

static PyObject *t_narrow(PyObject *self, PyObject *args, PyObject *kwargs) {
    KW("dim", "start", "length");
    PyObject *dim_o, *start_o, *len_o;
    int64_t dim, start, length;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OOO:narrow", kwlist, &dim_o, &start_o, &len_o)) return NULL;
    if (parse_int64(dim_o, &dim, "narrow", "dim") < 0 || parse_int64(start_o, &start, "narrow", "start") < 0 ||
        parse_int64(len_o, &length, "narrow", "length") < 0)
        return NULL;
    return ampc_py_wrap(ampc_narrow(SELF_T(self), dim, start, length));
}

static PyObject *t_contiguous(PyObject *self, PyObject *args, PyObject *kwargs) {
    ampc_tensor *c = ampc_contiguous(SELF_T(self));
    return ampc_py_wrap(c);
}

static PyObject *t_clone(PyObject *self, PyObject *args, PyObject *kwargs) {
    return ampc_py_wrap(ampc_clone(SELF_T(self)));
}

/* (py_autograd.c's detach/detach_ take precedence when linked; these are the same calls) */
static PyObject *t_detach(PyObject *self, PyObject *unused) { return ampc_py_wrap(ampc_detach(SELF_T(self))); }

static PyObject *t_detach_(PyObject *self, PyObject *unused) { return inplace_result(self, ampc_detach_(SELF_T(self))); }

/* ------------------------------------------------------------------ dtype and device */

/* Converts to (dtype, device); returns self itself when nothing changes and copy is false.
 * non_blocking: a transfer between pinned host memory and a GPU may return before it ends. */
static PyObject *convert_nb(PyObject *self, ampc_dtype dtype, ampc_device device, int copy, int non_blocking,
                            const char *op) {
    ampc_tensor *t = SELF_T(self);
    if (!ampc_device_eq(device, t->device) && ampc_py_check(ampc_check_device(op, device)) < 0) return NULL;
    bool prev = ampc_set_non_blocking(non_blocking != 0);
    ampc_tensor *r = ampc_to(t, dtype, device, copy != 0);
    ampc_set_non_blocking(prev);
    return self_or_new(self, r);
}

static PyObject *convert(PyObject *self, ampc_dtype dtype, ampc_device device, int copy, const char *op) {
    return convert_nb(self, dtype, device, copy, 0, op);
}

/* to(device=None, dtype=None, non_blocking=False, copy=False), to(dtype, ...), to(tensor, ...) */
static PyObject *t_to(PyObject *self, PyObject *args, PyObject *kwargs) {
    ampc_tensor *t = SELF_T(self);
    PyObject *device_o = NULL, *dtype_o = NULL;
    int copy = 0, non_blocking = 0, n_bools = 0;
    ampc_dtype dtype = t->dtype;
    ampc_device device = t->device;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(args); i++) {
        PyObject *a = PyTuple_GET_ITEM(args, i);
        if (i == 0 && AmpcTensor_Check(a)) {
            dtype = SELF_T(a)->dtype;
            device = SELF_T(a)->device;
        } else if (ampc_py_is_dtype(a) && !dtype_o) {
            dtype_o = a;
        } else if (i == 0 && (PyUnicode_Check(a) || ampc_py_is_device(a) || (PyLong_Check(a) && !PyBool_Check(a)))) {
            device_o = a;
        } else if (PyBool_Check(a) && n_bools < 2) {
            if (n_bools++ == 1) copy = a == Py_True; /* to(dtype, non_blocking, copy) */
            else non_blocking = a == Py_True;
        } else {
            return PyErr_Format(PyExc_TypeError, "to() received an invalid combination of arguments: argument %zd of type %s",
                                i, Py_TYPE(a)->tp_name);
        }
    }
    if (kwargs) {
        PyObject *k, *v;
        Py_ssize_t pos = 0;
        while (PyDict_Next(kwargs, &pos, &k, &v)) {
            const char *name = PyUnicode_AsUTF8(k);
            if (!name) return NULL;
            if (!strcmp(name, "device")) device_o = v;
            else if (!strcmp(name, "dtype")) dtype_o = v;
            else if (!strcmp(name, "copy")) copy = PyObject_IsTrue(v);
            else if (!strcmp(name, "non_blocking")) non_blocking = PyObject_IsTrue(v);
            else if (strcmp(name, "memory_format"))
                return PyErr_Format(PyExc_TypeError, "to() got an unexpected keyword argument '%s'", name);
        }
    }
    if (dtype_o && dtype_o != Py_None) {
        if (ampc_py_dtype(dtype_o, &dtype, "to") < 0) return NULL;
    }
    if (copy < 0 || non_blocking < 0) return NULL;
    if (ampc_py_device(device_o, device, &device, "to") < 0) return NULL;
    return convert_nb(self, dtype, device, copy, non_blocking, "to");
}

static PyObject *t_cpu(PyObject *self, PyObject *args, PyObject *kwargs) {
    return convert(self, AMPC_DTYPE_UNDEFINED, ampc_cpu_device(), 0, "cpu");
}

static PyObject *t_cuda(PyObject *self, PyObject *args, PyObject *kwargs) {
    KW("device", "non_blocking", "memory_format");
    PyObject *dev_o = Py_None, *nb = NULL, *mf = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|OOO:cuda", kwlist, &dev_o, &nb, &mf)) return NULL;
    ampc_device dflt = {AMPC_CUDA, 0}, dev;
    if (ampc_py_device(dev_o, dflt, &dev, "cuda") < 0) return NULL;
    if (dev.type != AMPC_CUDA) return PyErr_Format(PyExc_RuntimeError, "Invalid device, must be cuda device");
    int non_blocking = nb ? PyObject_IsTrue(nb) : 0;
    if (non_blocking < 0) return NULL;
    return convert_nb(self, AMPC_DTYPE_UNDEFINED, dev, 0, non_blocking, "cuda");
}

/* pin_memory(): a copy in page-locked host memory (self when it already is); needs a GPU. */
static PyObject *t_pin_memory(PyObject *self, PyObject *args, PyObject *kwargs) {
    KW("device");
    PyObject *dev_o = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|O:pin_memory", kwlist, &dev_o)) return NULL;
    return self_or_new(self, ampc_pin_memory(SELF_T(self)));
}

static PyObject *t_is_pinned(PyObject *self, PyObject *args, PyObject *kwargs) {
    KW("device");
    PyObject *dev_o = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|O:is_pinned", kwlist, &dev_o)) return NULL;
    return PyBool_FromLong(ampc_is_pinned(SELF_T(self)));
}

#define DEFINE_CAST_METHOD(name, DT) \
    static PyObject *t_##name(PyObject *self, PyObject *args, PyObject *kwargs) { \
        return convert(self, DT, SELF_T(self)->device, 0, #name); \
    }
DEFINE_CAST_METHOD(float, AMPC_FLOAT32)
DEFINE_CAST_METHOD(half, AMPC_FLOAT16)
DEFINE_CAST_METHOD(bfloat16, AMPC_BFLOAT16)
DEFINE_CAST_METHOD(double, AMPC_FLOAT64)
DEFINE_CAST_METHOD(long, AMPC_INT64)
DEFINE_CAST_METHOD(int, AMPC_INT32)
DEFINE_CAST_METHOD(byte, AMPC_UINT8)
DEFINE_CAST_METHOD(bool, AMPC_BOOL)

static PyObject *t_type_as(PyObject *self, PyObject *other) {
    ampc_tensor *o = ampc_py_unwrap(other, "type_as", "other");
    return o ? convert(self, o->dtype, o->device, 0, "type_as") : NULL;
}

/* ------------------------------------------------------------------ copies and fills */

static PyObject *t_fill_(PyObject *self, PyObject *value);

static PyObject *t_copy_(PyObject *self, PyObject *args, PyObject *kwargs) {
    KW("src", "non_blocking");
    PyObject *src_o, *nb = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|O:copy_", kwlist, &src_o, &nb)) return NULL;
    /* torch's argument parser takes a Python number as a 0-dim tensor, so copy_(1.5) broadcasts it */
    if (!AmpcTensor_Check(src_o) && (PyFloat_Check(src_o) || PyLong_Check(src_o) || PyBool_Check(src_o)))
        return t_fill_(self, src_o);
    ampc_tensor *src = ampc_py_unwrap(src_o, "copy_", "src");
    if (!src) return NULL;
    int non_blocking = nb ? PyObject_IsTrue(nb) : 0;
    if (non_blocking < 0) return NULL;
    bool prev = ampc_set_non_blocking(non_blocking != 0);
    ampc_status st = ampc_copy_(SELF_T(self), src);
    ampc_set_non_blocking(prev);
    return inplace_result(self, st);
}

static PyObject *t_fill_(PyObject *self, PyObject *value) {
    ampc_scalar s;
    if (AmpcTensor_Check(value)) {
        ampc_tensor *v = SELF_T(value);
        if (v->ndim != 0)
            return PyErr_Format(PyExc_RuntimeError,
                                "fill_ only supports 0-dimension value tensor but got tensor with %d dimensions.", v->ndim);
        if (ampc_py_check(ampc_get_scalar(v, 0, &s)) < 0) return NULL;
    } else if (ampc_py_scalar(value, &s, "fill_", "value") < 0) {
        return NULL;
    }
    return inplace_result(self, ampc_fill_(SELF_T(self), s));
}

static PyObject *t_zero_(PyObject *self, PyObject *unused) { return inplace_result(self, ampc_zero_(SELF_T(self))); }

/* ------------------------------------------------------------------ new_* */

/* Parses (size..., dtype=None, device=None, requires_grad=False) with self's dtype and device as
 * defaults; `fill` receives the fill value for new_full. */
static int parse_new_args(PyObject *self, PyObject *args, PyObject *kwargs, const char *op, int with_fill,
                          int64_t *shape, int *nd, PyObject **fill, ampc_dtype *dtype, ampc_device *device,
                          int *requires_grad) {
    static const char *const fill_kw[] = {"fill_value", NULL};
    ampc_py_factory_kw kw;
    if (ampc_py_parse_factory_kw(kwargs, op, AMPC_PY_KW_SIZE, with_fill ? fill_kw : NULL, &kw) < 0) return -1;
    PyObject *size_args = args;
    Py_ssize_t n = PyTuple_GET_SIZE(args);
    if (with_fill && kwargs) *fill = PyDict_GetItemString(kwargs, "fill_value");
    if (with_fill && !*fill) {
        if (n < 2) {
            PyErr_Format(PyExc_TypeError, "%s() missing required argument 'fill_value'", op);
            return -1;
        }
        *fill = PyTuple_GET_ITEM(args, n - 1);
        size_args = PyTuple_GetSlice(args, 0, n - 1);
        if (!size_args) return -1;
    } else {
        Py_INCREF(size_args);
    }
    *nd = ampc_py_size_args(size_args, kw.size, shape, op);
    Py_DECREF(size_args);
    if (*nd < 0) return -1;
    ampc_tensor *t = SELF_T(self);
    *requires_grad = kw.requires_grad;
    return ampc_py_factory_dtype_device(&kw, op, t->dtype, t->device, dtype, device);
}

/* new_empty (fill none), new_zeros and new_ones (fill given) and new_full (its fill_value read
 * from the arguments, fill_from_args) */
static PyObject *new_sized(PyObject *self, PyObject *args, PyObject *kwargs, const char *op, int fill_from_args,
                           ampc_scalar fill) {
    int64_t shape[AMPC_MAX_DIMS];
    int nd, rg;
    ampc_dtype dt;
    ampc_device dev;
    PyObject *fill_o = NULL;
    if (parse_new_args(self, args, kwargs, op, fill_from_args, shape, &nd, &fill_o, &dt, &dev, &rg) < 0) return NULL;
    if (fill_from_args && ampc_py_scalar(fill_o, &fill, op, "fill_value") < 0) return NULL;
    if (fill.kind == AMPC_SCALAR_NONE) return ampc_py_factory_finish(ampc_empty(nd, shape, dt, dev), rg);
    return ampc_py_factory_finish(ampc_full(nd, shape, fill, dt, dev), rg);
}

static PyObject *t_new_empty(PyObject *self, PyObject *args, PyObject *kwargs) {
    return new_sized(self, args, kwargs, "new_empty", 0, ampc_scalar_none());
}
static PyObject *t_new_zeros(PyObject *self, PyObject *args, PyObject *kwargs) {
    return new_sized(self, args, kwargs, "new_zeros", 0, ampc_scalar_int(0));
}
static PyObject *t_new_ones(PyObject *self, PyObject *args, PyObject *kwargs) {
    return new_sized(self, args, kwargs, "new_ones", 0, ampc_scalar_int(1));
}
static PyObject *t_new_full(PyObject *self, PyObject *args, PyObject *kwargs) {
    return new_sized(self, args, kwargs, "new_full", 1, ampc_scalar_none());
}

static PyObject *t_new_tensor(PyObject *self, PyObject *args, PyObject *kwargs) {
    KW("data", "dtype", "device", "requires_grad");
    PyObject *data, *dtype_o = Py_None, *device_o = Py_None;
    int rg = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|OOp:new_tensor", kwlist, &data, &dtype_o, &device_o, &rg))
        return NULL;
    ampc_tensor *t = SELF_T(self);
    ampc_py_factory_kw kw = {.dtype = dtype_o, .device = device_o};
    ampc_dtype dt;
    ampc_device dev;
    if (ampc_py_factory_dtype_device(&kw, "new_tensor", t->dtype, t->device, &dt, &dev) < 0) return NULL;
    return ampc_py_tensor_from_data(data, dt, dev, rg);
}

/* ------------------------------------------------------------------ Python values */

static PyObject *list_from(const ampc_tensor *host, int dim, int64_t *pos) {
    if (dim == host->ndim) return ampc_py_element(host, (*pos)++);
    PyObject *list = PyList_New(host->shape[dim]);
    for (int64_t i = 0; list && i < host->shape[dim]; i++) {
        PyObject *v = list_from(host, dim + 1, pos);
        if (!v) {
            Py_CLEAR(list);
            break;
        }
        PyList_SET_ITEM(list, i, v);
    }
    return list;
}

static PyObject *t_tolist(PyObject *self, PyObject *unused) {
    ampc_tensor *h = ampc_py_host_contiguous(SELF_T(self));
    if (!h) return ampc_py_raise();
    int64_t pos = 0;
    PyObject *r = list_from(h, 0, &pos);
    ampc_tensor_decref(h);
    return r;
}

static PyObject *t_format(PyObject *self, PyObject *spec) {
    if (SELF_T(self)->ndim == 0) {
        PyObject *v = ampc_py_tensor_item(self, NULL);
        if (!v) return NULL;
        PyObject *r = PyObject_Format(v, spec);
        Py_DECREF(v);
        return r;
    }
    if (PyUnicode_Check(spec) && PyUnicode_GET_LENGTH(spec) == 0) return PyObject_Str(self);
    return PyErr_Format(PyExc_TypeError, "unsupported format string passed to Tensor.__format__");
}

/* ------------------------------------------------------------------ module-level queries */

static PyObject *py_is_tensor(PyObject *u, PyObject *o) { return PyBool_FromLong(AmpcTensor_Check(o)); }

static PyObject *py_is_floating_point(PyObject *u, PyObject *o) {
    ampc_tensor *t = ampc_py_unwrap(o, "is_floating_point", "input");
    return t ? PyBool_FromLong(ampc_dtype_is_floating(t->dtype)) : NULL;
}

static PyObject *py_numel(PyObject *u, PyObject *o) {
    ampc_tensor *t = ampc_py_unwrap(o, "numel", "input");
    return t ? PyLong_FromLongLong(ampc_numel(t)) : NULL;
}

PyMethodDef ampc_py_module_methods_tensor[] = {
    {"is_tensor", py_is_tensor, METH_O, "is_tensor(obj): whether obj is an ampc.Tensor"},
    {"is_floating_point", py_is_floating_point, METH_O, NULL},
    {"numel", py_numel, METH_O, NULL},
    {NULL, NULL, 0, NULL},
};

#define VA (METH_VARARGS | METH_KEYWORDS)

PyMethodDef ampc_py_tensor_methods_core[] = {
    /* shape queries */
    {"size", METHOD(t_size), VA, "size(dim=None): the shape, or the size of one dim"},
    {"stride", METHOD(t_stride), VA, "stride(dim=None): strides in elements"},
    {"dim", t_dim, METH_NOARGS, NULL},
    {"ndimension", t_dim, METH_NOARGS, NULL},
    {"numel", t_numel, METH_NOARGS, NULL},
    {"nelement", t_numel, METH_NOARGS, NULL},
    {"element_size", t_element_size, METH_NOARGS, NULL},
    {"storage_offset", t_storage_offset, METH_NOARGS, NULL},
    {"is_contiguous", METHOD(t_is_contiguous), VA, NULL},
    {"is_floating_point", t_is_floating_point, METH_NOARGS, NULL},
    {"is_complex", t_is_complex, METH_NOARGS, NULL},
    {"is_signed", t_is_signed, METH_NOARGS, NULL},
    {"data_ptr", t_data_ptr, METH_NOARGS, NULL},
    {"get_device", t_get_device, METH_NOARGS, NULL},
    /* views */
    {"view", t_view, METH_VARARGS, "view(*shape): same memory, new shape (-1 inferred once)"},
    {"view_as", t_view_as, METH_O, NULL},
    {"reshape", t_reshape, METH_VARARGS, "reshape(*shape): a view when possible, else a copy"},
    {"reshape_as", t_reshape_as, METH_O, NULL},
    {"expand", t_expand, METH_VARARGS, NULL},
    {"expand_as", t_expand_as, METH_O, NULL},
    {"permute", t_permute, METH_VARARGS, NULL},
    {"flatten", METHOD(t_flatten), VA, NULL},
    {"transpose", METHOD(t_transpose), VA, NULL},
    {"swapaxes", METHOD(t_transpose), VA, NULL},
    {"swapdims", METHOD(t_transpose), VA, NULL},
    {"t", t_t, METH_NOARGS, NULL},
    {"unsqueeze", METHOD(t_unsqueeze), VA, NULL},
    {"squeeze", METHOD(t_squeeze), VA, NULL},
    {"narrow", METHOD(t_narrow), VA, NULL},
    {"contiguous", METHOD(t_contiguous), VA, NULL},
    {"clone", METHOD(t_clone), VA, NULL},
    {"detach", t_detach, METH_NOARGS, "the same memory without autograd history"},
    {"detach_", t_detach_, METH_NOARGS, NULL},
    /* dtype and device */
    {"to", METHOD(t_to), VA, "to(device=None, dtype=None, non_blocking=False, copy=False)"},
    {"cpu", METHOD(t_cpu), VA, NULL},
    {"cuda", METHOD(t_cuda), VA, NULL},
    {"pin_memory", METHOD(t_pin_memory), VA, "a copy in pinned (page-locked) host memory, for asynchronous copies to a GPU"},
    {"is_pinned", METHOD(t_is_pinned), VA, "True when the tensor is in pinned host memory"},
    {"float", METHOD(t_float), VA, NULL},
    {"half", METHOD(t_half), VA, NULL},
    {"bfloat16", METHOD(t_bfloat16), VA, NULL},
    {"double", METHOD(t_double), VA, NULL},
    {"long", METHOD(t_long), VA, NULL},
    {"int", METHOD(t_int), VA, NULL},
    {"byte", METHOD(t_byte), VA, NULL},
    {"bool", METHOD(t_bool), VA, NULL},
    {"type_as", t_type_as, METH_O, NULL},
    /* copies and fills */
    {"copy_", METHOD(t_copy_), VA, NULL},
    {"fill_", t_fill_, METH_O, NULL},
    {"zero_", t_zero_, METH_NOARGS, NULL},
    {"new_empty", METHOD(t_new_empty), VA, NULL},
    {"new_zeros", METHOD(t_new_zeros), VA, NULL},
    {"new_ones", METHOD(t_new_ones), VA, NULL},
    {"new_full", METHOD(t_new_full), VA, NULL},
    {"new_tensor", METHOD(t_new_tensor), VA, NULL},
    /* Python values */
    {"item", ampc_py_tensor_item, METH_NOARGS, "the value of a one-element tensor as a Python number"},
    {"tolist", t_tolist, METH_NOARGS, NULL},
    {"__format__", t_format, METH_O, NULL},
    {NULL, NULL, 0, NULL},
};
