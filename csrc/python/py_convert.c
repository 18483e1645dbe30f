/* py_convert.c: Tensor <-> other representations: zero-copy exchange with NumPy and DLPack,
 * and copy/pickle support (__deepcopy__, __reduce_ex__).
 *
 * Both directions share memory, as PyTorch does: Tensor.numpy() and from_numpy() view the same
 * bytes, and the borrowed side keeps the owner alive (the NumPy array's base is the Tensor; an
 * ampc storage made over a NumPy array or DLPack capsule holds a reference released by its
 * `release` callback). bfloat16 travels to NumPy as ml_dtypes.bfloat16 when ml_dtypes is
 * installed. */
#include "py_internal.h"
#include "py_numpy.h"

#include <stdlib.h>
#include <string.h>

#include "core/autograd.h"

#define SELF_T(self) (((AmpcTensorObject *)(self))->t)

/* ------------------------------------------------------------------ dtype mapping */

/* NumPy's type number of ml_dtypes.bfloat16, or -1 when ml_dtypes is not installed. */
static int bf16_type_num(void) {
    static int num = -2;
    if (num == -2) {
        num = -1;
        PyObject *mod = PyImport_ImportModule("ml_dtypes");
        PyObject *type = mod ? PyObject_GetAttrString(mod, "bfloat16") : NULL;
        PyArray_Descr *d = NULL;
        if (type && PyArray_DescrConverter(type, &d) && d) num = d->type_num;
        Py_XDECREF(d);
        Py_XDECREF(type);
        Py_XDECREF(mod);
        PyErr_Clear();
    }
    return num;
}

int ampc_py_numpy_dtype_to_ampc(PyObject *descr_obj) {
    if (!descr_obj || !PyArray_DescrCheck(descr_obj)) return -1;
    PyArray_Descr *d = (PyArray_Descr *)descr_obj;
    int size = (int)PyDataType_ELSIZE(d);
    switch (d->kind) {
    case 'f': return size == 4 ? AMPC_FLOAT32 : size == 2 ? AMPC_FLOAT16 : size == 8 ? AMPC_FLOAT64 : -1;
    case 'i': return size == 8 ? AMPC_INT64 : size == 4 ? AMPC_INT32 : -1;
    case 'u': return size == 1 ? AMPC_UINT8 : -1;
    case 'b': return AMPC_BOOL;
    default: break;
    }
    int bf = bf16_type_num();
    return bf >= 0 && d->type_num == bf ? AMPC_BFLOAT16 : -1;
}

/* The NumPy dtype of an ampc dtype (new reference), or NULL with TypeError. */
static PyArray_Descr *numpy_descr(ampc_dtype dt) {
    static const int npy[AMPC_NUM_DTYPES] = {NPY_FLOAT32, NPY_FLOAT16, -1,       NPY_FLOAT64,
                                             NPY_INT64,   NPY_INT32,   NPY_UINT8, NPY_BOOL};
    if (dt == AMPC_BFLOAT16) {
        int bf = bf16_type_num();
        if (bf < 0) {
            PyErr_SetString(PyExc_TypeError,
                            "NumPy has no bfloat16: install ml_dtypes, or call .float() on the tensor first");
            return NULL;
        }
        return PyArray_DescrFromType(bf);
    }
    return PyArray_DescrFromType(npy[dt]);
}

int ampc_py_is_ndarray(PyObject *obj) { return PyArray_Check(obj); }

/* ------------------------------------------------------------------ NumPy -> ampc */

static void release_pyobject(void *ctx) {
    PyGILState_STATE g = PyGILState_Ensure();
    Py_DECREF((PyObject *)ctx);
    PyGILState_Release(g);
}

/* Bytes spanned by a strided view: the storage a tensor over it needs. */
static size_t extent_bytes(int nd, const int64_t *shape, const int64_t *strides, size_t item) {
    int64_t last = 0;
    for (int i = 0; i < nd; i++) {
        if (shape[i] == 0) return 0;
        last += (shape[i] - 1) * strides[i];
    }
    return (size_t)(last + 1) * item;
}

ampc_tensor *ampc_py_from_numpy(PyObject *obj, const char *op) {
    if (!PyArray_Check(obj)) {
        PyErr_Format(PyExc_TypeError, "expected np.ndarray (got %s)", Py_TYPE(obj)->tp_name);
        return NULL;
    }
    PyArrayObject *arr = (PyArrayObject *)obj;
    int dt = ampc_py_numpy_dtype_to_ampc((PyObject *)PyArray_DESCR(arr));
    if (dt < 0) {
        PyObject *name = PyObject_Str((PyObject *)PyArray_DESCR(arr));
        PyErr_Format(PyExc_TypeError,
                     "can't convert np.ndarray of type numpy.%U. The only supported types are: float64, float32, "
                     "float16, bfloat16 (ml_dtypes), int64, int32, uint8, and bool.",
                     name ? name : Py_None);
        Py_XDECREF(name);
        return NULL;
    }
    if (!PyArray_ISNOTSWAPPED(arr)) {
        PyErr_SetString(PyExc_ValueError, "given numpy array has byte order different from the native byte order. "
                                          "Conversion between byte orders is currently not supported.");
        return NULL;
    }
    int nd = PyArray_NDIM(arr);
    if (nd > AMPC_MAX_DIMS) {
        PyErr_Format(PyExc_ValueError, "%s(): ampc tensors have at most %d dims, the array has %d", op, AMPC_MAX_DIMS, nd);
        return NULL;
    }
    int64_t shape[AMPC_MAX_DIMS], strides[AMPC_MAX_DIMS];
    int64_t item = (int64_t)PyArray_ITEMSIZE(arr);
    for (int i = 0; i < nd; i++) {
        shape[i] = PyArray_DIM(arr, i);
        npy_intp s = PyArray_STRIDE(arr, i);
        if (s < 0) {
            PyErr_SetString(PyExc_ValueError,
                            "At least one stride in the given numpy array is negative, and tensors with negative "
                            "strides are not currently supported. (You can probably work around this by making a "
                            "copy of your array  with array.copy().) ");
            return NULL;
        }
        if (s % item) {
            PyErr_SetString(PyExc_ValueError, "given numpy array strides not a multiple of the element byte size. "
                                              "Copy the numpy array to reallocate the memory.");
            return NULL;
        }
        strides[i] = s / item;
    }
    Py_INCREF(obj); /* released by the storage */
    ampc_storage *s = ampc_storage_wrap(ampc_cpu_device(), PyArray_DATA(arr),
                                        extent_bytes(nd, shape, strides, (size_t)item), release_pyobject, obj);
    if (!s) {
        Py_DECREF(obj);
        ampc_py_raise();
        return NULL;
    }
    ampc_tensor *t = ampc_tensor_from_storage(s, 0, nd, shape, strides, (ampc_dtype)dt);
    ampc_storage_decref(s);
    if (!t) ampc_py_raise();
    return t;
}

static PyObject *py_from_numpy(PyObject *unused, PyObject *arr) {
    ampc_tensor *t = ampc_py_from_numpy(arr, "from_numpy");
    return t ? ampc_py_wrap(t) : NULL;
}

/* ------------------------------------------------------------------ ampc -> NumPy */

PyObject *ampc_py_to_numpy(PyObject *owner, ampc_tensor *t) {
    if (t->device.type != AMPC_CPU) {
        char dev[32];
        return PyErr_Format(PyExc_TypeError,
                            "can't convert %s device type tensor to numpy. Use Tensor.cpu() to copy the tensor to host "
                            "memory first.",
                            ampc_device_str(t->device, dev, sizeof dev));
    }
    PyArray_Descr *descr = numpy_descr(t->dtype);
    if (!descr) return NULL;
    npy_intp dims[AMPC_MAX_DIMS], strides[AMPC_MAX_DIMS];
    int64_t item = (int64_t)ampc_dtype_itemsize(t->dtype);
    for (int i = 0; i < t->ndim; i++) {
        dims[i] = (npy_intp)t->shape[i];
        strides[i] = (npy_intp)(t->strides[i] * item);
    }
    PyObject *arr = PyArray_NewFromDescr(&PyArray_Type, descr, t->ndim, dims, strides, ampc_data_ptr(t),
                                         NPY_ARRAY_WRITEABLE, NULL); /* steals descr */
    if (!arr) return NULL;
    Py_INCREF(owner);
    if (PyArray_SetBaseObject((PyArrayObject *)arr, owner) < 0) { /* steals owner */
        Py_DECREF(arr);
        return NULL;
    }
    return arr;
}

static PyObject *t_numpy(PyObject *self, PyObject *args, PyObject *kwargs) {
    static char *kwlist[] = {"force", NULL};
    int force = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|$p:numpy", kwlist, &force)) return NULL;
    ampc_tensor *t = ((AmpcTensorObject *)self)->t;
    if (!force) {
        if (t->requires_grad)
            return PyErr_Format(PyExc_RuntimeError, "Can't call numpy() on Tensor that requires grad. Use "
                                                    "tensor.detach().numpy() instead.");
        return ampc_py_to_numpy(self, t);
    }
    /* force: a detached host copy when needed (the array keeps that copy alive) */
    ampc_tensor *h = ampc_to(t, AMPC_DTYPE_UNDEFINED, ampc_cpu_device(), false);
    if (!h) return ampc_py_raise();
    if (h == t) {
        ampc_tensor_decref(h);
        return ampc_py_to_numpy(self, t);
    }
    PyObject *owner = ampc_py_wrap(h);
    if (!owner) return NULL;
    PyObject *r = ampc_py_to_numpy(owner, h);
    Py_DECREF(owner);
    return r;
}

/* __array__(dtype=None, copy=None), which np.asarray and friends call. */
static PyObject *t_array(PyObject *self, PyObject *args, PyObject *kwargs) {
    static char *kwlist[] = {"dtype", "copy", NULL};
    PyObject *dtype = Py_None, *copy = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|OO:__array__", kwlist, &dtype, &copy)) return NULL;
    ampc_tensor *t = ((AmpcTensorObject *)self)->t;
    if (t->requires_grad)
        return PyErr_Format(PyExc_RuntimeError,
                            "Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() instead.");
    PyObject *arr = ampc_py_to_numpy(self, t);
    if (!arr) return NULL;
    if (dtype == Py_None && copy != Py_True) return arr;
    PyArray_Descr *d = NULL;
    if (dtype != Py_None && !PyArray_DescrConverter(dtype, &d)) {
        Py_DECREF(arr);
        return NULL;
    }
    if (!d) {
        d = PyArray_DESCR((PyArrayObject *)arr);
        Py_INCREF(d);
    }
    PyObject *r = PyArray_CastToType((PyArrayObject *)arr, d, 0); /* steals d; always a new array */
    Py_DECREF(arr);
    return r;
}

/* ------------------------------------------------------------------ DLPack */

/* The DLPack ABI (dlpack.h, v0.8): only what ampc exchanges. */
typedef enum { kDLCPU = 1, kDLCUDA = 2, kDLCUDAHost = 3, kDLCUDAManaged = 13 } DLDeviceType;
typedef enum { kDLInt = 0, kDLUInt = 1, kDLFloat = 2, kDLBfloat = 4, kDLBool = 6 } DLDataTypeCode;
typedef struct { int32_t device_type; int32_t device_id; } DLDevice;
typedef struct { uint8_t code, bits; uint16_t lanes; } DLDataType;
typedef struct {
    void *data;
    DLDevice device;
    int32_t ndim;
    DLDataType dtype;
    int64_t *shape;
    int64_t *strides; /* elements; NULL means compact row-major */
    uint64_t byte_offset;
} DLTensor;
typedef struct DLManagedTensor {
    DLTensor dl_tensor;
    void *manager_ctx;
    void (*deleter)(struct DLManagedTensor *self);
} DLManagedTensor;

static const struct { ampc_dtype dt; uint8_t code, bits; } dl_dtypes[] = {
    {AMPC_FLOAT32, kDLFloat, 32}, {AMPC_FLOAT16, kDLFloat, 16}, {AMPC_BFLOAT16, kDLBfloat, 16},
    {AMPC_FLOAT64, kDLFloat, 64}, {AMPC_INT64, kDLInt, 64},     {AMPC_INT32, kDLInt, 32},
    {AMPC_UINT8, kDLUInt, 8},     {AMPC_BOOL, kDLBool, 8},
};

/* What an exported capsule owns: the managed tensor, its shape/strides and a tensor reference. */
typedef struct dl_export {
    DLManagedTensor managed;
    int64_t shape[AMPC_MAX_DIMS], strides[AMPC_MAX_DIMS];
    ampc_tensor *tensor;
} dl_export;

static void dl_export_deleter(DLManagedTensor *m) {
    dl_export *e = (dl_export *)m->manager_ctx;
    PyGILState_STATE g = PyGILState_Ensure(); /* the consumer may free from any thread */
    ampc_tensor_decref(e->tensor);
    PyGILState_Release(g);
    free(e);
}

/* Called when the capsule dies: only an unconsumed capsule still owns its tensor. */
static void dl_capsule_destructor(PyObject *capsule) {
    if (!PyCapsule_IsValid(capsule, "dltensor")) return; /* renamed "used_dltensor": consumer owns it */
    DLManagedTensor *m = (DLManagedTensor *)PyCapsule_GetPointer(capsule, "dltensor");
    if (m && m->deleter) m->deleter(m);
    PyErr_Clear();
}

static PyObject *t_dlpack(PyObject *self, PyObject *args, PyObject *kwargs) {
    static char *kwlist[] = {"stream", "max_version", "dl_device", "copy", NULL};
    PyObject *stream = Py_None, *max_version = Py_None, *dl_device = Py_None, *copy = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|$OOOO:__dlpack__", kwlist, &stream, &max_version, &dl_device, &copy))
        return NULL;
    ampc_tensor *t = ((AmpcTensorObject *)self)->t;
    if (t->requires_grad)
        return PyErr_Format(PyExc_RuntimeError, "Can't export tensors that require gradient, use tensor.detach()");
    if (copy == Py_True)
        return PyErr_Format(PyExc_BufferError, "__dlpack__(copy=True) is not supported; call .clone() first");
    /* The consumer reads on its own stream: finish ampc's work on the device first, unless it
     * passed stream=-1 ("no synchronization"). A whole-device wait is coarse but always right. */
    if (t->device.type == AMPC_CUDA && !(PyLong_Check(stream) && PyLong_AsLong(stream) == -1)) {
        PyObject *mod = PyImport_ImportModule("ampc._C");
        PyObject *r = mod ? PyObject_CallMethod(mod, "_cuda_synchronize", "i", (int)t->device.index) : NULL;
        Py_XDECREF(mod);
        if (!r) return NULL;
        Py_DECREF(r);
    }
    dl_export *e = (dl_export *)calloc(1, sizeof *e);
    if (!e) return PyErr_NoMemory();
    ampc_tensor_incref(t);
    e->tensor = t;
    memcpy(e->shape, t->shape, sizeof e->shape);
    memcpy(e->strides, t->strides, sizeof e->strides);
    DLTensor *dl = &e->managed.dl_tensor;
    dl->data = ampc_data_ptr(t);
    dl->device.device_type = t->device.type == AMPC_CUDA ? kDLCUDA : kDLCPU;
    dl->device.device_id = t->device.type == AMPC_CUDA ? t->device.index : 0;
    dl->ndim = t->ndim;
    for (size_t i = 0; i < sizeof dl_dtypes / sizeof dl_dtypes[0]; i++)
        if (dl_dtypes[i].dt == t->dtype) {
            dl->dtype.code = dl_dtypes[i].code;
            dl->dtype.bits = dl_dtypes[i].bits;
        }
    dl->dtype.lanes = 1;
    dl->shape = e->shape;
    dl->strides = e->strides;
    dl->byte_offset = 0;
    e->managed.manager_ctx = e;
    e->managed.deleter = dl_export_deleter;
    PyObject *capsule = PyCapsule_New(&e->managed, "dltensor", dl_capsule_destructor);
    if (!capsule) dl_export_deleter(&e->managed);
    return capsule;
}

static PyObject *t_dlpack_device(PyObject *self, PyObject *unused) {
    ampc_device d = ((AmpcTensorObject *)self)->t->device;
    return Py_BuildValue("(ii)", d.type == AMPC_CUDA ? kDLCUDA : kDLCPU, d.type == AMPC_CUDA ? d.index : 0);
}

static void release_dlpack(void *ctx) {
    DLManagedTensor *m = (DLManagedTensor *)ctx;
    PyGILState_STATE g = PyGILState_Ensure();
    if (m->deleter) m->deleter(m);
    PyGILState_Release(g);
}

/* A tensor over a "dltensor" capsule's memory; renames the capsule "used_dltensor". */
static PyObject *tensor_from_capsule(PyObject *capsule) {
    DLManagedTensor *m = (DLManagedTensor *)PyCapsule_GetPointer(capsule, "dltensor");
    if (!m) {
        PyErr_Clear();
        PyErr_SetString(PyExc_ValueError, "from_dlpack(): expected a DLPack capsule named 'dltensor' (unused); "
                                          "it was already consumed or is a versioned capsule");
        return NULL;
    }
    DLTensor *dl = &m->dl_tensor;
    int dt = -1;
    for (size_t i = 0; i < sizeof dl_dtypes / sizeof dl_dtypes[0]; i++)
        if (dl_dtypes[i].code == dl->dtype.code && dl_dtypes[i].bits == dl->dtype.bits) dt = dl_dtypes[i].dt;
    if (dt < 0 || dl->dtype.lanes != 1)
        return PyErr_Format(PyExc_TypeError, "from_dlpack(): unsupported DLPack dtype (code %d, bits %d, lanes %d)",
                            dl->dtype.code, dl->dtype.bits, dl->dtype.lanes);
    ampc_device dev = ampc_cpu_device();
    if (dl->device.device_type == kDLCUDA || dl->device.device_type == kDLCUDAManaged) {
        dev.type = AMPC_CUDA;
        dev.index = (int8_t)dl->device.device_id;
        if (ampc_py_check(ampc_check_device("from_dlpack", dev)) < 0) return NULL;
    } else if (dl->device.device_type != kDLCPU && dl->device.device_type != kDLCUDAHost) {
        return PyErr_Format(PyExc_RuntimeError, "from_dlpack(): unsupported DLPack device type %d",
                            (int)dl->device.device_type);
    }
    if (dl->ndim < 0 || dl->ndim > AMPC_MAX_DIMS)
        return PyErr_Format(PyExc_RuntimeError, "from_dlpack(): ampc tensors have at most %d dims, got %d",
                            AMPC_MAX_DIMS, dl->ndim);
    int64_t strides[AMPC_MAX_DIMS];
    if (dl->strides)
        memcpy(strides, dl->strides, sizeof(int64_t) * (size_t)dl->ndim);
    else
        ampc_contiguous_strides(dl->ndim, dl->shape, strides);
    for (int i = 0; i < dl->ndim; i++)
        if (strides[i] < 0)
            return PyErr_Format(PyExc_RuntimeError, "from_dlpack(): negative strides are not supported");
    size_t item = ampc_dtype_itemsize((ampc_dtype)dt);
    ampc_storage *s = ampc_storage_wrap(dev, (char *)dl->data + dl->byte_offset,
                                        extent_bytes(dl->ndim, dl->shape, strides, item), release_dlpack, m);
    if (!s) return ampc_py_raise();
    if (PyCapsule_SetName(capsule, "used_dltensor") < 0) {
        s->release = NULL; /* not ours yet: do not call the deleter */
        s->data = NULL;
        ampc_storage_decref(s);
        return NULL;
    }
    ampc_tensor *t = ampc_tensor_from_storage(s, 0, dl->ndim, dl->shape, strides, (ampc_dtype)dt);
    ampc_storage_decref(s);
    return ampc_py_wrap(t);
}

static PyObject *py_from_dlpack(PyObject *unused, PyObject *ext) {
    if (PyCapsule_CheckExact(ext)) return tensor_from_capsule(ext);
    if (AmpcTensor_Check(ext)) {
        Py_INCREF(ext);
        return ext;
    }
    PyObject *capsule = PyObject_CallMethod(ext, "__dlpack__", NULL);
    if (!capsule) {
        if (PyErr_ExceptionMatches(PyExc_AttributeError)) {
            PyErr_Clear();
            PyErr_Format(PyExc_TypeError, "from_dlpack(): expected an object with __dlpack__ or a DLPack capsule, got %s",
                         Py_TYPE(ext)->tp_name);
        }
        return NULL;
    }
    PyObject *r = tensor_from_capsule(capsule);
    Py_DECREF(capsule);
    return r;
}

/* ------------------------------------------------------------------ copy and pickle */

/* deepcopy: a detached copy of the data, the same subclass, requires_grad and attributes. */
static PyObject *t_deepcopy(PyObject *self, PyObject *memo) {
    ampc_tensor *t = SELF_T(self);
    if (t->grad_fn)
        return PyErr_Format(PyExc_RuntimeError, "Only Tensors created explicitly by the user (graph leaves) support "
                                                "the deepcopy protocol at the moment.  If you were attempting to "
                                                "deepcopy a module, this may be because of a torch.nn.utils."
                                                "weight_norm usage, see https://github.com/pytorch/pytorch/pull/103001");
    ampc_tensor *d = ampc_detach(t); /* copy the data without recording the copy */
    ampc_tensor *c = d ? ampc_clone(d) : NULL;
    ampc_tensor_decref(d);
    if (!c) return ampc_py_raise();
    if (t->requires_grad && ampc_py_set_requires_grad(c, 1) < 0) {
        ampc_tensor_decref(c);
        return NULL;
    }
    PyObject *r = ampc_py_wrap_as(Py_TYPE(self), c);
    if (!r) return NULL;
    PyObject *key = PyLong_FromVoidPtr(self);
    if (!key || (PyDict_Check(memo) && PyDict_SetItem(memo, key, r) < 0)) goto fail;
    Py_CLEAR(key);
    PyObject *dict = ((AmpcTensorObject *)self)->dict;
    if (dict && PyDict_GET_SIZE(dict)) {
        PyObject *copy_mod = PyImport_ImportModule("copy");
        PyObject *d = copy_mod ? PyObject_CallMethod(copy_mod, "deepcopy", "OO", dict, memo) : NULL;
        Py_XDECREF(copy_mod);
        if (!d) goto fail;
        Py_XSETREF(((AmpcTensorObject *)r)->dict, d);
    }
    return r;
fail:
    Py_XDECREF(key);
    Py_DECREF(r);
    return NULL;
}

/* Pickling (DataLoader workers, copy.copy): the class, the bytes of a contiguous CPU copy, the
 * dtype name, the shape, the device string and requires_grad; attributes go in the state. */
static PyObject *t_reduce_ex(PyObject *self, PyObject *protocol) {
    ampc_tensor *t = SELF_T(self);
    ampc_tensor *h = ampc_py_host_contiguous(t);
    if (!h) return ampc_py_raise();
    PyObject *bytes = PyBytes_FromStringAndSize((const char *)ampc_data_ptr(h), (Py_ssize_t)ampc_nbytes(h));
    ampc_tensor_decref(h);
    if (!bytes) return NULL;
    char dev[32];
    PyObject *shape = ampc_py_size_object(t->ndim, t->shape);
    PyObject *mod = PyImport_ImportModule("ampc._C");
    PyObject *fn = mod ? PyObject_GetAttrString(mod, "_rebuild_tensor") : NULL;
    Py_XDECREF(mod);
    PyObject *dict = ((AmpcTensorObject *)self)->dict;
    PyObject *r = NULL;
    if (shape && fn)
        r = Py_BuildValue("(O(OOsOsO)O)", fn, (PyObject *)Py_TYPE(self), bytes, ampc_dtype_name(t->dtype), shape,
                          ampc_device_str(t->device, dev, sizeof dev), t->requires_grad ? Py_True : Py_False,
                          dict && PyDict_GET_SIZE(dict) ? dict : Py_None);
    Py_XDECREF(fn);
    Py_XDECREF(shape);
    Py_DECREF(bytes);
    return r;
}

static PyObject *rebuild_tensor(PyObject *unused, PyObject *args) {
    PyObject *cls, *bytes, *shape_o, *rg;
    const char *dtype_name, *dev_name;
    if (!PyArg_ParseTuple(args, "OSsOsO:_rebuild_tensor", &cls, &bytes, &dtype_name, &shape_o, &dev_name, &rg)) return NULL;
    if (!PyType_Check(cls) || !PyType_IsSubtype((PyTypeObject *)cls, &AmpcTensor_Type))
        return PyErr_Format(PyExc_TypeError, "_rebuild_tensor(): cls must be a subclass of ampc.Tensor");
    int dt = 0;
    while (dt < AMPC_NUM_DTYPES && strcmp(ampc_dtype_name((ampc_dtype)dt), dtype_name)) dt++;
    if (dt == AMPC_NUM_DTYPES) return PyErr_Format(PyExc_ValueError, "_rebuild_tensor(): unknown dtype '%s'", dtype_name);
    int64_t shape[AMPC_MAX_DIMS];
    int nd = ampc_py_int_list(shape_o, shape, AMPC_MAX_DIMS, "_rebuild_tensor", "shape");
    if (nd < 0) return NULL;
    PyObject *dev_str = PyUnicode_FromString(dev_name);
    ampc_device dev;
    int bad = !dev_str || ampc_py_device(dev_str, ampc_cpu_device(), &dev, "_rebuild_tensor") < 0;
    Py_XDECREF(dev_str);
    if (bad) return NULL;
    ampc_tensor *h = ampc_empty(nd, shape, (ampc_dtype)dt, ampc_cpu_device());
    if (!h) return ampc_py_raise();
    if ((size_t)PyBytes_GET_SIZE(bytes) != ampc_nbytes(h)) {
        ampc_tensor_decref(h);
        return PyErr_Format(PyExc_ValueError, "_rebuild_tensor(): data has the wrong size");
    }
    memcpy(ampc_data_ptr(h), PyBytes_AS_STRING(bytes), ampc_nbytes(h));
    ampc_tensor *t = h;
    if (dev.type != AMPC_CPU) {
        t = ampc_to(h, AMPC_DTYPE_UNDEFINED, dev, false);
        ampc_tensor_decref(h);
        if (!t) return ampc_py_raise();
    }
    if (PyObject_IsTrue(rg) && ampc_py_set_requires_grad(t, 1) < 0) {
        ampc_tensor_decref(t);
        return NULL;
    }
    return ampc_py_wrap_as((PyTypeObject *)cls, t);
}

#define METHOD(name) (PyCFunction)(void (*)(void))(name)

PyMethodDef ampc_py_tensor_methods_convert[] = {
    {"numpy", METHOD(t_numpy), METH_VARARGS | METH_KEYWORDS, "numpy(*, force=False): a NumPy array sharing memory"},
    {"__array__", METHOD(t_array), METH_VARARGS | METH_KEYWORDS, NULL},
    {"__dlpack__", METHOD(t_dlpack), METH_VARARGS | METH_KEYWORDS, NULL},
    {"__dlpack_device__", t_dlpack_device, METH_NOARGS, NULL},
    {"__deepcopy__", t_deepcopy, METH_O, NULL},
    {"__reduce_ex__", t_reduce_ex, METH_O, NULL},
    {NULL, NULL, 0, NULL},
};

PyMethodDef ampc_py_module_methods_convert[] = {
    {"from_numpy", py_from_numpy, METH_O, "from_numpy(ndarray): a CPU tensor sharing the array's memory"},
    {"from_dlpack", py_from_dlpack, METH_O, "from_dlpack(obj): a tensor sharing the memory of a DLPack producer"},
    {"_rebuild_tensor", rebuild_tensor, METH_VARARGS, "unpickles a Tensor (see Tensor.__reduce_ex__)"},
    {NULL, NULL, 0, NULL},
};
