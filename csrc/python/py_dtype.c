/* py_dtype.c: the small value types around ampc.Tensor: ampc.dtype, ampc.device (with their
 * converters) and ampc.Size.
 *
 * dtype objects are singletons (one per ampc_dtype), so `t.dtype is ampc.float32` holds as in
 * PyTorch. Device objects are small values compared by (type, index); a device written without
 * an index ("cuda") keeps index None like torch.device, and tensors placed on it go to the
 * current CUDA device. */
#include "py_internal.h"

#include <string.h>

/* ------------------------------------------------------------------ dtype */

typedef struct {
    PyObject_HEAD
    ampc_dtype dt;
} AmpcDtypeObject;

static PyObject *dtype_repr(PyObject *self) {
    return PyUnicode_FromFormat("ampc.%s", ampc_dtype_name(((AmpcDtypeObject *)self)->dt));
}

static PyObject *dtype_is_floating_point(PyObject *self, void *c) {
    return PyBool_FromLong(ampc_dtype_is_floating(((AmpcDtypeObject *)self)->dt));
}
static PyObject *dtype_is_signed(PyObject *self, void *c) {
    ampc_dtype dt = ((AmpcDtypeObject *)self)->dt;
    return PyBool_FromLong(dt != AMPC_UINT8 && dt != AMPC_BOOL);
}
static PyObject *dtype_is_complex(PyObject *self, void *c) { Py_RETURN_FALSE; }
static PyObject *dtype_itemsize(PyObject *self, void *c) {
    return PyLong_FromSize_t(ampc_dtype_itemsize(((AmpcDtypeObject *)self)->dt));
}

/* Pickles as a global name ("float32"), which unpickles to the same singleton. */
static PyObject *dtype_reduce(PyObject *self, PyObject *unused) {
    return PyUnicode_FromString(ampc_dtype_name(((AmpcDtypeObject *)self)->dt));
}

static PyGetSetDef dtype_getset[] = {
    {"is_floating_point", dtype_is_floating_point, NULL, NULL, NULL},
    {"is_signed", dtype_is_signed, NULL, NULL, NULL},
    {"is_complex", dtype_is_complex, NULL, NULL, NULL},
    {"itemsize", dtype_itemsize, NULL, NULL, NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyMethodDef dtype_methods[] = {
    {"__reduce__", dtype_reduce, METH_NOARGS, NULL},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject AmpcDtype_Type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "ampc.dtype",
    .tp_basicsize = sizeof(AmpcDtypeObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_repr = dtype_repr,
    .tp_getset = dtype_getset,
    .tp_methods = dtype_methods,
};

static AmpcDtypeObject dtype_objects[AMPC_NUM_DTYPES];

PyObject *ampc_py_dtype_object(ampc_dtype dt) {
    if (!ampc_dtype_is_valid(dt)) {
        PyErr_Format(PyExc_ValueError, "ampc: invalid dtype code %d", (int)dt);
        return NULL;
    }
    PyObject *o = (PyObject *)&dtype_objects[dt];
    Py_INCREF(o);
    return o;
}

int ampc_py_dtype(PyObject *obj, ampc_dtype *out, const char *op) {
    if (obj == NULL || obj == Py_None) {
        *out = AMPC_DTYPE_UNDEFINED;
        return 0;
    }
    if (Py_IS_TYPE(obj, &AmpcDtype_Type)) {
        *out = ((AmpcDtypeObject *)obj)->dt;
        return 0;
    }
    /* PyTorch accepts the Python types as dtypes: float -> float64, int -> int64, bool. */
    if (obj == (PyObject *)&PyFloat_Type) { *out = AMPC_FLOAT64; return 0; }
    if (obj == (PyObject *)&PyLong_Type) { *out = AMPC_INT64; return 0; }
    if (obj == (PyObject *)&PyBool_Type) { *out = AMPC_BOOL; return 0; }
    PyErr_Format(PyExc_TypeError, "%s(): argument 'dtype' must be ampc.dtype, not %s", op, Py_TYPE(obj)->tp_name);
    return -1;
}

int ampc_py_is_dtype(PyObject *obj) { return Py_IS_TYPE(obj, &AmpcDtype_Type); }

/* ------------------------------------------------------------------ device */

typedef struct {
    PyObject_HEAD
    int type;  /* ampc_device_type */
    int index; /* -1: none given */
} AmpcDeviceObject;

static PyTypeObject AmpcDevice_Type;

static const char *const device_type_names[AMPC_NUM_DEVICE_TYPES] = {"cpu", "cuda"};

static PyObject *device_new_raw(PyTypeObject *type, int dev_type, int index) {
    AmpcDeviceObject *o = (AmpcDeviceObject *)type->tp_alloc(type, 0);
    if (!o) return NULL;
    o->type = dev_type;
    o->index = index;
    return (PyObject *)o;
}

static int parse_device_type(const char *s, Py_ssize_t len, const char *full) {
    for (int t = 0; t < AMPC_NUM_DEVICE_TYPES; t++)
        if ((Py_ssize_t)strlen(device_type_names[t]) == len && strncmp(s, device_type_names[t], (size_t)len) == 0)
            return t;
    PyErr_Format(PyExc_RuntimeError, "Expected one of cpu, cuda device type at start of device string: %s", full);
    return -1;
}

static int check_index(long long index) {
    if (index < 0) {
        PyErr_Format(PyExc_RuntimeError, "Device index must not be negative");
        return -1;
    }
    if (index > 127) {
        PyErr_Format(PyExc_RuntimeError, "Device index %lld is out of range", index);
        return -1;
    }
    return 0;
}

/* "cpu", "cuda", "cuda:1" -> (type, index or -1). */
static int parse_device_string(PyObject *str, int *type, int *index) {
    Py_ssize_t len;
    const char *s = PyUnicode_AsUTF8AndSize(str, &len);
    if (!s) return -1;
    const char *colon = memchr(s, ':', (size_t)len);
    Py_ssize_t tlen = colon ? colon - s : len;
    if ((*type = parse_device_type(s, tlen, s)) < 0) return -1;
    *index = -1;
    if (colon) {
        const char *p = colon + 1;
        long long v = 0;
        if (*p == '\0') goto bad;
        for (; *p; p++) {
            if (*p < '0' || *p > '9' || v > 1000000) goto bad;
            v = v * 10 + (*p - '0');
        }
        if (check_index(v) < 0) return -1;
        *index = (int)v;
    }
    return 0;
bad:
    PyErr_Format(PyExc_RuntimeError, "Invalid device string: '%s'", s);
    return -1;
}

static PyObject *device_tp_new(PyTypeObject *type, PyObject *args, PyObject *kwargs) {
    static char *kwlist[] = {"type", "index", NULL};
    PyObject *spec, *index_obj = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|O:device", kwlist, &spec, &index_obj)) return NULL;
    if (Py_IS_TYPE(spec, &AmpcDevice_Type) && index_obj == Py_None) {
        Py_INCREF(spec);
        return spec;
    }
    int dev_type, index = -1;
    if (PyLong_Check(spec) && !PyBool_Check(spec) && index_obj == Py_None) {
        long long v = PyLong_AsLongLong(spec);
        if (v == -1 && PyErr_Occurred()) return NULL;
        if (check_index(v) < 0) return NULL;
        return device_new_raw(type, AMPC_CUDA, (int)v);
    }
    if (!PyUnicode_Check(spec)) {
        PyErr_Format(PyExc_TypeError, "device(): argument 'type' must be str, not %s", Py_TYPE(spec)->tp_name);
        return NULL;
    }
    if (parse_device_string(spec, &dev_type, &index) < 0) return NULL;
    if (index_obj != Py_None) {
        if (index >= 0) {
            PyErr_Format(PyExc_RuntimeError,
                         "type (string) must not include an index because index was passed explicitly: %U", spec);
            return NULL;
        }
        if (!PyLong_Check(index_obj) || PyBool_Check(index_obj)) {
            PyErr_Format(PyExc_TypeError, "device(): argument 'index' must be int, not %s",
                         Py_TYPE(index_obj)->tp_name);
            return NULL;
        }
        long long v = PyLong_AsLongLong(index_obj);
        if (v == -1 && PyErr_Occurred()) return NULL;
        if (check_index(v) < 0) return NULL;
        index = (int)v;
    }
    return device_new_raw(type, dev_type, index);
}

static PyObject *device_repr(PyObject *self) {
    AmpcDeviceObject *d = (AmpcDeviceObject *)self;
    if (d->index < 0) return PyUnicode_FromFormat("device(type='%s')", device_type_names[d->type]);
    return PyUnicode_FromFormat("device(type='%s', index=%d)", device_type_names[d->type], d->index);
}

static PyObject *device_str(PyObject *self) {
    AmpcDeviceObject *d = (AmpcDeviceObject *)self;
    if (d->index < 0) return PyUnicode_FromString(device_type_names[d->type]);
    return PyUnicode_FromFormat("%s:%d", device_type_names[d->type], d->index);
}

static PyObject *device_richcompare(PyObject *a, PyObject *b, int op) {
    if (!Py_IS_TYPE(b, &AmpcDevice_Type) || !Py_IS_TYPE(a, &AmpcDevice_Type) || (op != Py_EQ && op != Py_NE))
        Py_RETURN_NOTIMPLEMENTED;
    AmpcDeviceObject *x = (AmpcDeviceObject *)a, *y = (AmpcDeviceObject *)b;
    int eq = x->type == y->type && x->index == y->index;
    return PyBool_FromLong(op == Py_EQ ? eq : !eq);
}

static Py_hash_t device_hash(PyObject *self) {
    AmpcDeviceObject *d = (AmpcDeviceObject *)self;
    Py_hash_t h = (Py_hash_t)(d->type * 1000 + d->index + 7);
    return h == -1 ? -2 : h;
}

static PyObject *device_get_type(PyObject *self, void *c) {
    return PyUnicode_FromString(device_type_names[((AmpcDeviceObject *)self)->type]);
}
static PyObject *device_get_index(PyObject *self, void *c) {
    int index = ((AmpcDeviceObject *)self)->index;
    if (index < 0) Py_RETURN_NONE;
    return PyLong_FromLong(index);
}

static PyObject *device_reduce(PyObject *self, PyObject *unused) {
    AmpcDeviceObject *d = (AmpcDeviceObject *)self;
    if (d->index < 0) return Py_BuildValue("(O(s))", (PyObject *)Py_TYPE(self), device_type_names[d->type]);
    return Py_BuildValue("(O(si))", (PyObject *)Py_TYPE(self), device_type_names[d->type], d->index);
}

static PyGetSetDef device_getset[] = {
    {"type", device_get_type, NULL, NULL, NULL},
    {"index", device_get_index, NULL, NULL, NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyMethodDef device_methods[] = {
    {"__reduce__", device_reduce, METH_NOARGS, NULL},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject AmpcDevice_Type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "ampc.device",
    .tp_basicsize = sizeof(AmpcDeviceObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "device(type, index=None): where a tensor lives: 'cpu', 'cuda', 'cuda:N'",
    .tp_new = device_tp_new,
    .tp_repr = device_repr,
    .tp_str = device_str,
    .tp_richcompare = device_richcompare,
    .tp_hash = device_hash,
    .tp_getset = device_getset,
    .tp_methods = device_methods,
};

PyObject *ampc_py_device_object(ampc_device d) {
    return device_new_raw(&AmpcDevice_Type, d.type, d.type == AMPC_CPU ? -1 : d.index);
}

int ampc_py_device(PyObject *obj, ampc_device dflt, ampc_device *out, const char *op) {
    int type, index;
    if (obj == NULL || obj == Py_None) {
        *out = dflt;
        return 0;
    }
    if (Py_IS_TYPE(obj, &AmpcDevice_Type)) {
        type = ((AmpcDeviceObject *)obj)->type;
        index = ((AmpcDeviceObject *)obj)->index;
    } else if (PyUnicode_Check(obj)) {
        if (parse_device_string(obj, &type, &index) < 0) return -1;
    } else if (PyLong_Check(obj) && !PyBool_Check(obj)) {
        long long v = PyLong_AsLongLong(obj);
        if (v == -1 && PyErr_Occurred()) return -1;
        if (check_index(v) < 0) return -1;
        type = AMPC_CUDA;
        index = (int)v;
    } else {
        PyErr_Format(PyExc_TypeError, "%s(): argument 'device' must be ampc.device, str or int, not %s", op,
                     Py_TYPE(obj)->tp_name);
        return -1;
    }
    /* "cuda" without an index means the current CUDA device (ampc.cuda.set_device) */
    out->type = (int8_t)type;
    out->index = (int8_t)(type == AMPC_CPU ? 0 : index < 0 ? ampc_py_cuda_current_index() : index);
    return 0;
}

/* ------------------------------------------------------------------ ampc.Size */

/* A tuple subclass, as torch.Size: compares equal to tuples, prints as ampc.Size([2, 3]). */

static PyObject *size_repr(PyObject *self) {
    PyObject *list = PySequence_List(self);
    if (!list) return NULL;
    PyObject *r = PyUnicode_FromFormat("ampc.Size(%R)", list);
    Py_DECREF(list);
    return r;
}

/* Slicing a Size gives a Size, as with torch.Size. */
static PyObject *size_subscript(PyObject *self, PyObject *key) {
    PyObject *r = PyTuple_Type.tp_as_mapping->mp_subscript(self, key);
    if (r && PySlice_Check(key) && PyTuple_CheckExact(r)) {
        PyObject *s = PyObject_CallOneArg((PyObject *)Py_TYPE(self), r);
        Py_DECREF(r);
        return s;
    }
    return r;
}

static PyObject *size_numel(PyObject *self, PyObject *unused) {
    long long n = 1;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(self); i++) {
        long long v = PyLong_AsLongLong(PyTuple_GET_ITEM(self, i));
        if (v == -1 && PyErr_Occurred()) return NULL;
        n *= v;
    }
    return PyLong_FromLongLong(n);
}

static PyMappingMethods size_as_mapping = {0, size_subscript, 0};
static PyMethodDef size_methods[] = {
    {"numel", size_numel, METH_NOARGS, "product of the sizes"},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject AmpcSize_Type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "ampc.Size",
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_TUPLE_SUBCLASS,
    .tp_doc = "the shape of a tensor: a tuple of ints",
    .tp_repr = size_repr,
    .tp_as_mapping = &size_as_mapping,
    .tp_methods = size_methods,
};

PyObject *ampc_py_size_object(int ndim, const int64_t *shape) {
    /* allocated directly (what tuple's tp_new does for subtypes): shape is read often */
    PyObject *size = AmpcSize_Type.tp_alloc(&AmpcSize_Type, ndim);
    if (!size) return NULL;
    for (int i = 0; i < ndim; i++) {
        PyObject *v = PyLong_FromLongLong(shape[i]);
        if (!v) {
            Py_DECREF(size);
            return NULL;
        }
        PyTuple_SET_ITEM(size, i, v);
    }
    return size;
}

/* Adds ampc.dtype, the dtype singletons with their aliases, ampc.device and ampc.Size to the
 * module. */
int ampc_py_init_dtypes(PyObject *module) {
    static const struct {
        const char *name;
        ampc_dtype dt;
    } names[] = {
        {"float32", AMPC_FLOAT32}, {"float", AMPC_FLOAT32},  {"float16", AMPC_FLOAT16}, {"half", AMPC_FLOAT16},
        {"bfloat16", AMPC_BFLOAT16}, {"float64", AMPC_FLOAT64}, {"double", AMPC_FLOAT64}, {"int64", AMPC_INT64},
        {"long", AMPC_INT64},     {"int32", AMPC_INT32},    {"int", AMPC_INT32},       {"uint8", AMPC_UINT8},
        {"bool", AMPC_BOOL},
    };
    AmpcSize_Type.tp_base = &PyTuple_Type;
    if (PyType_Ready(&AmpcDtype_Type) < 0 || PyType_Ready(&AmpcDevice_Type) < 0 || PyType_Ready(&AmpcSize_Type) < 0)
        return -1;
    /* dtype objects are static: never deallocated, so an extra reference each is enough. */
    for (int i = 0; i < AMPC_NUM_DTYPES; i++) {
        Py_SET_TYPE(&dtype_objects[i], &AmpcDtype_Type);
        Py_SET_REFCNT(&dtype_objects[i], 1);
        dtype_objects[i].dt = (ampc_dtype)i;
    }
    PyObject *mod_name = PyUnicode_FromString("ampc");
    if (!mod_name) return -1;
    int rc = PyDict_SetItemString(AmpcDtype_Type.tp_dict, "__module__", mod_name);
    Py_DECREF(mod_name);
    if (rc < 0) return -1;
    PyType_Modified(&AmpcDtype_Type);
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (PyModule_AddObjectRef(module, names[i].name, (PyObject *)&dtype_objects[names[i].dt]) < 0) return -1;
    if (PyModule_AddObjectRef(module, "dtype", (PyObject *)&AmpcDtype_Type) < 0) return -1;
    if (PyModule_AddObjectRef(module, "device", (PyObject *)&AmpcDevice_Type) < 0) return -1;
    if (PyModule_AddObjectRef(module, "Size", (PyObject *)&AmpcSize_Type) < 0) return -1;
    return 0;
}

int ampc_py_is_device(PyObject *obj) { return Py_IS_TYPE(obj, &AmpcDevice_Type); }
