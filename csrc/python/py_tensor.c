/* py_tensor.c: the ampc.Tensor type itself and the conversion helpers every binding file uses.
 *
 * One Python object per core tensor: the wrapper holds a reference to the core tensor and the
 * core tensor points back (borrowed) at its wrapper through t->pyobj, so wrapping the same core
 * tensor twice (x.grad, a view cache) yields the same Python object while it lives. The methods
 * of the type are in py_tensor_methods.c (shape, views, conversions) and in each area's table;
 * the small value types around it (dtype, device, Size) are in py_dtype.c. */
#include "py_internal.h"
#include "py_numpy.h"

#include "core/autograd.h"

#include <string.h>

/* ------------------------------------------------------------------ wrapping */

PyObject *ampc_py_wrap_as(PyTypeObject *type, ampc_tensor *t) {
    if (!t) return ampc_py_raise();
    AmpcTensorObject *o = (AmpcTensorObject *)type->tp_alloc(type, 0);
    if (!o) {
        ampc_tensor_decref(t);
        return NULL;
    }
    o->t = t;
    if (!t->pyobj) t->pyobj = o;
    return (PyObject *)o;
}

PyObject *ampc_py_wrap(ampc_tensor *t) {
    if (!t) return ampc_py_raise();
    if (t->pyobj) {
        PyObject *o = (PyObject *)t->pyobj;
        Py_INCREF(o);
        ampc_tensor_decref(t); /* the wrapper already holds its own reference */
        return o;
    }
    return ampc_py_wrap_as(&AmpcTensor_Type, t);
}

ampc_tensor *ampc_py_unwrap(PyObject *obj, const char *op, const char *arg) {
    if (obj && AmpcTensor_Check(obj)) return ((AmpcTensorObject *)obj)->t;
    PyErr_Format(PyExc_TypeError, "%s(): argument '%s' must be Tensor, not %s", op, arg,
                 obj ? Py_TYPE(obj)->tp_name : "NULL");
    return NULL;
}

/* ------------------------------------------------------------------ numbers and lists */

int ampc_py_scalar(PyObject *obj, ampc_scalar *out, const char *op, const char *arg) {
    if (PyBool_Check(obj)) {
        *out = ampc_scalar_bool(obj == Py_True);
        return 0;
    }
    if (PyLong_Check(obj)) {
        long long v = PyLong_AsLongLong(obj);
        if (v == -1 && PyErr_Occurred()) return -1;
        *out = ampc_scalar_int(v);
        return 0;
    }
    if (PyFloat_Check(obj)) {
        *out = ampc_scalar_float(PyFloat_AS_DOUBLE(obj));
        return 0;
    }
    /* NumPy scalars (np.float32(2), np.int64(3), np.bool_(True), ml_dtypes.bfloat16(1)). */
    if (PyArray_IsScalar(obj, Generic)) {
        if (PyArray_IsScalar(obj, Bool)) {
            *out = ampc_scalar_bool(PyObject_IsTrue(obj));
            return 0;
        }
        if (PyArray_IsScalar(obj, Integer)) {
            PyObject *i = PyNumber_Long(obj);
            if (!i) return -1;
            long long v = PyLong_AsLongLong(i);
            Py_DECREF(i);
            if (v == -1 && PyErr_Occurred()) return -1;
            *out = ampc_scalar_int(v);
            return 0;
        }
        if (!PyArray_IsScalar(obj, ComplexFloating)) {
            double v = PyFloat_AsDouble(obj);
            if (v == -1.0 && PyErr_Occurred()) return -1;
            *out = ampc_scalar_float(v);
            return 0;
        }
    }
    PyErr_Format(PyExc_TypeError, "%s(): argument '%s' must be Number, not %s", op, arg, Py_TYPE(obj)->tp_name);
    return -1;
}

ampc_tensor *ampc_py_tensor_or_scalar(PyObject *obj, ampc_device device, const char *op, const char *arg) {
    if (AmpcTensor_Check(obj)) {
        ampc_tensor *t = ((AmpcTensorObject *)obj)->t;
        ampc_tensor_incref(t);
        return t;
    }
    ampc_scalar s;
    if (PyBool_Check(obj) || PyLong_Check(obj) || PyFloat_Check(obj) || PyArray_IsScalar(obj, Generic)) {
        if (ampc_py_scalar(obj, &s, op, arg) < 0) return NULL;
        ampc_tensor *t = ampc_wrap_scalar(s, device);
        if (!t) ampc_py_raise();
        return t;
    }
    PyErr_Format(PyExc_TypeError, "%s(): argument '%s' must be Tensor or Number, not %s", op, arg,
                 Py_TYPE(obj)->tp_name);
    return NULL;
}

static int is_int_like(PyObject *o) {
    return PyLong_Check(o) || PyArray_IsScalar(o, Integer) ||
           (AmpcTensor_Check(o) && ((AmpcTensorObject *)o)->t->ndim == 0 &&
            ampc_dtype_is_integral(((AmpcTensorObject *)o)->t->dtype, false));
}

int ampc_py_int_list(PyObject *obj, int64_t *out, int cap, const char *op, const char *arg) {
    /* f((2, 3)) arrives as a 1-tuple holding the sequence; f(2, 3) as the tuple itself. */
    if (PyTuple_Check(obj) && PyTuple_GET_SIZE(obj) == 1 &&
        (PyTuple_Check(PyTuple_GET_ITEM(obj, 0)) || PyList_Check(PyTuple_GET_ITEM(obj, 0))))
        obj = PyTuple_GET_ITEM(obj, 0);
    if (is_int_like(obj)) {
        if (cap < 1) goto too_many;
        PyObject *i = PyNumber_Index(obj);
        if (!i) return -1;
        out[0] = PyLong_AsLongLong(i);
        Py_DECREF(i);
        return (out[0] == -1 && PyErr_Occurred()) ? -1 : 1;
    }
    if (!PyTuple_Check(obj) && !PyList_Check(obj)) {
        PyErr_Format(PyExc_TypeError, "%s(): argument '%s' must be tuple of ints, not %s", op, arg,
                     Py_TYPE(obj)->tp_name);
        return -1;
    }
    Py_ssize_t n = PySequence_Fast_GET_SIZE(obj);
    if (n > cap) goto too_many;
    for (Py_ssize_t k = 0; k < n; k++) {
        PyObject *item = PySequence_Fast_GET_ITEM(obj, k);
        if (!is_int_like(item)) {
            PyErr_Format(PyExc_TypeError, "%s(): argument '%s' must be tuple of ints, but found element of type %s at pos %zd",
                         op, arg, Py_TYPE(item)->tp_name, k);
            return -1;
        }
        PyObject *i = PyNumber_Index(item);
        if (!i) return -1;
        out[k] = PyLong_AsLongLong(i);
        Py_DECREF(i);
        if (out[k] == -1 && PyErr_Occurred()) return -1;
    }
    return (int)n;
too_many:
    PyErr_Format(PyExc_RuntimeError, "%s(): argument '%s' has more than %d dims (ampc supports at most %d)", op, arg,
                 cap, AMPC_MAX_DIMS);
    return -1;
}

/* ------------------------------------------------------------------ host access */

ampc_tensor *ampc_py_host_contiguous(const ampc_tensor *t) {
    ampc_note_host_read();
    ampc_tensor *c = ampc_contiguous(t);
    if (!c) return NULL;
    ampc_tensor *h = ampc_to(c, AMPC_DTYPE_UNDEFINED, ampc_cpu_device(), false);
    ampc_tensor_decref(c);
    return h;
}

static PyObject *scalar_to_py(ampc_scalar s) {
    switch (s.kind) {
    case AMPC_SCALAR_BOOL: return PyBool_FromLong(s.v.b);
    case AMPC_SCALAR_INT: return PyLong_FromLongLong(s.v.i);
    case AMPC_SCALAR_FLOAT: return PyFloat_FromDouble(s.v.f);
    default: Py_RETURN_NONE;
    }
}

PyObject *ampc_py_element(const ampc_tensor *host, int64_t i) {
    const char *p = (const char *)ampc_data_ptr(host) + i * (int64_t)ampc_dtype_itemsize(host->dtype);
    ampc_scalar s = ampc_scalar_load(p, host->dtype);
    if (s.kind == AMPC_SCALAR_NONE) {
        PyErr_SetString(PyExc_TypeError, "ampc: tensor has an invalid dtype");
        return NULL;
    }
    return scalar_to_py(s);
}

/* The one element of a one-element tensor as a Python number. */
static PyObject *single_element(ampc_tensor *t, PyObject *exc, const char *msg) {
    if (ampc_numel(t) != 1) {
        PyErr_SetString(exc, msg);
        return NULL;
    }
    ampc_scalar s;
    if (ampc_py_check(ampc_get_scalar(t, 0, &s)) < 0) return NULL;
    return scalar_to_py(s);
}

/* float(x), int(x), operator.index(x): the one element, made a Python number by `to_number` */
static PyObject *single_number(ampc_tensor *t, PyObject *exc, const char *msg, PyObject *(*to_number)(PyObject *)) {
    PyObject *v = single_element(t, exc, msg);
    if (!v) return NULL;
    PyObject *r = to_number(v);
    Py_DECREF(v);
    return r;
}

PyObject *ampc_py_tensor_item(PyObject *self, PyObject *unused) {
    ampc_tensor *t = ((AmpcTensorObject *)self)->t;
    int64_t n = ampc_numel(t);
    if (n != 1)
        return PyErr_Format(PyExc_RuntimeError, "a Tensor with %lld elements cannot be converted to Scalar",
                            (long long)n);
    return single_element(t, PyExc_RuntimeError, "");
}

/* ------------------------------------------------------------------ number protocol conversions */

int ampc_py_tensor_bool(PyObject *self) {
    ampc_tensor *t = ((AmpcTensorObject *)self)->t;
    int64_t n = ampc_numel(t);
    if (n != 1) {
        PyErr_SetString(PyExc_RuntimeError, n == 0 ? "Boolean value of Tensor with no values is ambiguous"
                                                   : "Boolean value of Tensor with more than one value is ambiguous");
        return -1;
    }
    PyObject *v = single_element(t, PyExc_RuntimeError, "");
    if (!v) return -1;
    int r = PyObject_IsTrue(v);
    Py_DECREF(v);
    return r;
}

static const char not_one_element[] = "only one element tensors can be converted to Python scalars";

PyObject *ampc_py_tensor_float(PyObject *self) {
    return single_number(((AmpcTensorObject *)self)->t, PyExc_ValueError, not_one_element, PyNumber_Float);
}

PyObject *ampc_py_tensor_int(PyObject *self) {
    return single_number(((AmpcTensorObject *)self)->t, PyExc_ValueError, not_one_element, PyNumber_Long);
}

PyObject *ampc_py_tensor_index(PyObject *self) {
    ampc_tensor *t = ((AmpcTensorObject *)self)->t;
    if (!ampc_dtype_is_integral(t->dtype, true) || ampc_numel(t) != 1) {
        PyErr_SetString(PyExc_TypeError, "only integer tensors of a single element can be converted to an index");
        return NULL;
    }
    return single_number(t, PyExc_TypeError, "", PyNumber_Long); /* bool -> int */
}

/* ------------------------------------------------------------------ the type */

static int tensor_traverse(PyObject *self, visitproc visit, void *arg) {
    Py_VISIT(((AmpcTensorObject *)self)->dict);
    ampc_tensor *t = ((AmpcTensorObject *)self)->t;
    return t ? ampc_py_traverse_graph(t, visit, arg) : 0;
}

static int tensor_clear(PyObject *self) {
    Py_CLEAR(((AmpcTensorObject *)self)->dict);
    return 0;
}

static void tensor_dealloc(PyObject *self) {
    AmpcTensorObject *o = (AmpcTensorObject *)self;
    PyObject_GC_UnTrack(self);
    if (o->weakreflist) PyObject_ClearWeakRefs(self);
    Py_CLEAR(o->dict);
    if (o->t) {
        if (o->t->pyobj == (void *)o) o->t->pyobj = NULL;
        ampc_tensor_decref(o->t);
        o->t = NULL;
    }
    /* For heap subclasses (nn.Parameter) CPython's subtype_dealloc drops the type reference. */
    Py_TYPE(self)->tp_free(self);
}

/* Tensor(*sizes) -> uninitialised default-dtype tensor; Tensor(data) -> like ampc.tensor(data)
 * in the default dtype; Tensor() -> empty 1-D. Subclasses construct through here too. */
static PyObject *tensor_tp_new(PyTypeObject *type, PyObject *args, PyObject *kwargs) {
    ampc_device dev = ampc_cpu_device();
    PyObject *dev_obj = kwargs ? PyDict_GetItemString(kwargs, "device") : NULL;
    if (kwargs && PyDict_GET_SIZE(kwargs) > (dev_obj ? 1 : 0)) {
        PyErr_SetString(PyExc_TypeError, "Tensor(): only the keyword argument 'device' is accepted");
        return NULL;
    }
    if (ampc_py_device(dev_obj, dev, &dev, "Tensor") < 0) return NULL;
    Py_ssize_t n = PyTuple_GET_SIZE(args);
    ampc_tensor *t;
    if (n == 1 && !is_int_like(PyTuple_GET_ITEM(args, 0))) {
        PyObject *data = PyTuple_GET_ITEM(args, 0);
        PyObject *r = ampc_py_tensor_from_data(data, ampc_get_default_dtype(), dev, 0);
        if (!r || Py_TYPE(r) == type) return r;
        t = ((AmpcTensorObject *)r)->t;
        ampc_tensor_incref(t);
        Py_DECREF(r);
        if (t->pyobj) { /* give the subclass object its own core tensor */
            ampc_tensor *a = ampc_alias(t);
            ampc_tensor_decref(t);
            t = a;
        }
    } else {
        int64_t shape[AMPC_MAX_DIMS] = {0};
        int nd = n == 0 ? 1 : ampc_py_int_list(args, shape, AMPC_MAX_DIMS, "Tensor", "size");
        if (nd < 0) return NULL;
        t = ampc_empty(nd, shape, ampc_get_default_dtype(), dev);
    }
    return ampc_py_wrap_as(type, t);
}

/* Tensor._make_subclass(cls, data, require_grad=False): what nn.Parameter.__new__ uses, as in
 * PyTorch: a new object of `cls` sharing data's memory, detached from data's graph. */
static PyObject *tensor_make_subclass(PyObject *unused, PyObject *args, PyObject *kwargs) {
    static char *kwlist[] = {"cls", "data", "require_grad", NULL};
    PyObject *cls, *data;
    int require_grad = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OO|p:_make_subclass", kwlist, &cls, &data, &require_grad))
        return NULL;
    if (!PyType_Check(cls) || !PyType_IsSubtype((PyTypeObject *)cls, &AmpcTensor_Type)) {
        PyErr_SetString(PyExc_TypeError, "_make_subclass(): cls must be a subclass of ampc.Tensor");
        return NULL;
    }
    ampc_tensor *src = ampc_py_unwrap(data, "_make_subclass", "data");
    if (!src) return NULL;
    ampc_tensor *t = ampc_detach(src);
    if (!t) return ampc_py_raise();
    if (ampc_py_set_requires_grad(t, require_grad) < 0) {
        ampc_tensor_decref(t);
        return NULL;
    }
    return ampc_py_wrap_as((PyTypeObject *)cls, t);
}

int ampc_py_set_requires_grad(ampc_tensor *t, int flag) {
    return ampc_py_check(ampc_set_requires_grad(t, flag != 0)); /* PyTorch's checks live in the core */
}

/* ------------------------------------------------------------------ properties */

#define SELF_T(self) (((AmpcTensorObject *)(self))->t)

static PyObject *get_shape(PyObject *self, void *c) { return ampc_py_size_object(SELF_T(self)->ndim, SELF_T(self)->shape); }
static PyObject *get_dtype(PyObject *self, void *c) { return ampc_py_dtype_object(SELF_T(self)->dtype); }
static PyObject *get_device(PyObject *self, void *c) { return ampc_py_device_object(SELF_T(self)->device); }
static PyObject *get_ndim(PyObject *self, void *c) { return PyLong_FromLong(SELF_T(self)->ndim); }
static PyObject *get_is_cuda(PyObject *self, void *c) { return PyBool_FromLong(SELF_T(self)->device.type == AMPC_CUDA); }
static PyObject *get_is_cpu(PyObject *self, void *c) { return PyBool_FromLong(SELF_T(self)->device.type == AMPC_CPU); }
static PyObject *get_itemsize(PyObject *self, void *c) { return PyLong_FromSize_t(ampc_dtype_itemsize(SELF_T(self)->dtype)); }
static PyObject *get_nbytes(PyObject *self, void *c) { return PyLong_FromSize_t(ampc_nbytes(SELF_T(self))); }
static PyObject *get_requires_grad(PyObject *self, void *c) { return PyBool_FromLong(SELF_T(self)->requires_grad); }

static int set_requires_grad(PyObject *self, PyObject *value, void *c) {
    if (!value || !PyBool_Check(value)) {
        PyErr_SetString(PyExc_TypeError, "requires_grad must be a bool");
        return -1;
    }
    return ampc_py_set_requires_grad(SELF_T(self), value == Py_True);
}

/* .T reverses all dims (PyTorch keeps this for any ndim, deprecated beyond 2). */
static PyObject *get_T(PyObject *self, void *c) {
    ampc_tensor *t = SELF_T(self);
    int64_t dims[AMPC_MAX_DIMS];
    for (int i = 0; i < t->ndim; i++) dims[i] = t->ndim - 1 - i;
    return ampc_py_wrap(ampc_permute(t, t->ndim, dims));
}

static PyObject *get_mT(PyObject *self, void *c) {
    ampc_tensor *t = SELF_T(self);
    if (t->ndim < 2)
        return PyErr_Format(PyExc_RuntimeError,
                            "tensor.mT is only supported on matrices or batches of matrices. Got %d-D tensor.", t->ndim);
    return ampc_py_wrap(ampc_transpose(t, -2, -1));
}

/* .data: the same memory without autograd history; assigning swaps what this tensor views,
 * which is how optimizers and init code replace a parameter's values in PyTorch. */
static PyObject *get_data(PyObject *self, void *c) { return ampc_py_wrap(ampc_detach(SELF_T(self))); }

static int set_data(PyObject *self, PyObject *value, void *c) {
    ampc_tensor *src = value ? ampc_py_unwrap(value, "data", "value") : NULL;
    if (!src) {
        if (!value) PyErr_SetString(PyExc_TypeError, "cannot delete .data");
        return -1;
    }
    ampc_tensor *t = SELF_T(self);
    if (src == t) return 0;
    ampc_storage_incref(src->storage);
    ampc_storage_decref(t->storage);
    t->storage = src->storage;
    t->offset = src->offset;
    t->ndim = src->ndim;
    memcpy(t->shape, src->shape, sizeof t->shape);
    memcpy(t->strides, src->strides, sizeof t->strides);
    t->dtype = src->dtype;
    t->device = src->device;
    return 0;
}

PyGetSetDef ampc_py_tensor_getset[] = {
    {"shape", get_shape, NULL, "the size of each dim, as ampc.Size", NULL},
    {"dtype", get_dtype, NULL, NULL, NULL},
    {"device", get_device, NULL, NULL, NULL},
    {"ndim", get_ndim, NULL, NULL, NULL},
    {"is_cuda", get_is_cuda, NULL, NULL, NULL},
    {"is_cpu", get_is_cpu, NULL, NULL, NULL},
    {"itemsize", get_itemsize, NULL, NULL, NULL},
    {"nbytes", get_nbytes, NULL, NULL, NULL},
    {"requires_grad", get_requires_grad, set_requires_grad, NULL, NULL},
    {"T", get_T, NULL, NULL, NULL},
    {"mT", get_mT, NULL, NULL, NULL},
    {"data", get_data, set_data, NULL, NULL},
    {"__dict__", PyObject_GenericGetDict, PyObject_GenericSetDict, NULL, NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

/* ------------------------------------------------------------------ iteration, len, hash */

typedef struct {
    PyObject_HEAD
    PyObject *tensor;
    int64_t next, len;
} TensorIterObject;

static void tensor_iter_dealloc(PyObject *self) {
    Py_XDECREF(((TensorIterObject *)self)->tensor);
    PyObject_Free(self);
}

static PyObject *tensor_iter_next(PyObject *self) {
    TensorIterObject *it = (TensorIterObject *)self;
    if (it->next >= it->len) return NULL;
    return ampc_py_wrap(ampc_select(SELF_T(it->tensor), 0, it->next++));
}

static PyTypeObject TensorIter_Type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "ampc._TensorIterator",
    .tp_basicsize = sizeof(TensorIterObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_dealloc = tensor_iter_dealloc,
    .tp_iter = PyObject_SelfIter,
    .tp_iternext = tensor_iter_next,
};

static PyObject *tensor_iter(PyObject *self) {
    ampc_tensor *t = SELF_T(self);
    if (t->ndim == 0) {
        PyErr_SetString(PyExc_TypeError, "iteration over a 0-d tensor");
        return NULL;
    }
    TensorIterObject *it = PyObject_New(TensorIterObject, &TensorIter_Type);
    if (!it) return NULL;
    Py_INCREF(self);
    it->tensor = self;
    it->next = 0;
    it->len = t->shape[0];
    return (PyObject *)it;
}

Py_ssize_t ampc_py_tensor_len(PyObject *self) {
    ampc_tensor *t = SELF_T(self);
    if (t->ndim == 0) {
        PyErr_SetString(PyExc_TypeError, "len() of a 0-d tensor");
        return -1;
    }
    return (Py_ssize_t)t->shape[0];
}

static PySequenceMethods tensor_as_sequence = {.sq_length = ampc_py_tensor_len};

/* Tensors hash by identity (they define == elementwise), as in PyTorch. */
static Py_hash_t tensor_hash(PyObject *self) {
    Py_hash_t h = (Py_hash_t)((uintptr_t)self >> 4);
    return h == -1 ? -2 : h;
}

static PyObject *tensor_repr(PyObject *self) {
    static PyObject *fn = NULL;
    if (!fn) {
        PyObject *mod = PyImport_ImportModule("ampc._tensor_str");
        if (!mod) return NULL;
        fn = PyObject_GetAttrString(mod, "tensor_repr");
        Py_DECREF(mod);
        if (!fn) return NULL;
    }
    return PyObject_CallOneArg(fn, self);
}

static PyMethodDef tensor_type_methods[] = {
    {"_make_subclass", (PyCFunction)(void (*)(void))tensor_make_subclass, METH_VARARGS | METH_KEYWORDS,
     "_make_subclass(cls, data, require_grad=False)"},
    {NULL, NULL, 0, NULL},
};

PyTypeObject AmpcTensor_Type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "ampc.Tensor",
    .tp_basicsize = sizeof(AmpcTensorObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "A strided view of device memory with a dtype: ampc's torch.Tensor.",
    .tp_new = tensor_tp_new,
    .tp_dealloc = tensor_dealloc,
    .tp_traverse = tensor_traverse,
    .tp_clear = tensor_clear,
    .tp_repr = tensor_repr,
    .tp_hash = tensor_hash,
    .tp_iter = tensor_iter,
    .tp_as_sequence = &tensor_as_sequence,
    .tp_getset = ampc_py_tensor_getset,
    .tp_dictoffset = offsetof(AmpcTensorObject, dict),
    .tp_weaklistoffset = offsetof(AmpcTensorObject, weakreflist),
    /* tp_methods, tp_as_number, tp_as_mapping, tp_richcompare: filled by module.c */
};

/* Called by module.c once the type is ready: adds the type-level methods and the module names
 * of the tensor core. */
int ampc_py_init_tensor(PyObject *module) {
    for (PyMethodDef *m = tensor_type_methods; m->ml_name; m++) {
        PyObject *sm = PyCFunction_NewEx(m, NULL, NULL);
        if (!sm) return -1;
        PyObject *st = PyStaticMethod_New(sm);
        Py_DECREF(sm);
        if (!st || PyDict_SetItemString(AmpcTensor_Type.tp_dict, m->ml_name, st) < 0) {
            Py_XDECREF(st);
            return -1;
        }
        Py_DECREF(st);
    }
    /* NumPy defers binary operators to a Tensor on the right (np_array + tensor -> Tensor). */
    PyObject *prio = PyFloat_FromDouble(1000.0);
    if (!prio || PyDict_SetItemString(AmpcTensor_Type.tp_dict, "__array_priority__", prio) < 0) {
        Py_XDECREF(prio);
        return -1;
    }
    Py_DECREF(prio);
    PyType_Modified(&AmpcTensor_Type);

    if (PyType_Ready(&TensorIter_Type) < 0) return -1;
    if (PyModule_AddObjectRef(module, "Tensor", (PyObject *)&AmpcTensor_Type) < 0) return -1;
    return ampc_py_init_dtypes(module);
}
