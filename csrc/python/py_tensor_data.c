/* py_tensor_data.c: Python data -> tensor, behind ampc.tensor(data), Tensor.new_tensor and
 * Tensor(data).
 *
 * Nested Python sequences are walked twice: once to find the shape and infer the dtype as
 * PyTorch does (bool < int64 < default float; NumPy scalars and tensors keep their dtype;
 * combined with promote_types), once to write the values into a host tensor of the widest type
 * of the target's kind, which then moves to the requested dtype and device in one copy. NumPy
 * arrays skip the walk: they are shared, then copied once. */
#include "py_internal.h"
#include "core/autograd.h"
#include "py_numpy.h"

#include <string.h>

typedef struct data_info {
    int ndim;
    int64_t shape[AMPC_MAX_DIMS];
    ampc_dtype inferred;
} data_info;

static int is_number(PyObject *o) {
    return PyBool_Check(o) || PyLong_Check(o) || PyFloat_Check(o) || PyArray_IsScalar(o, Generic);
}

/* A leaf of the data: a number or a tensor (a one-element tensor counts as its value). */
static int is_leaf(PyObject *o) { return is_number(o) || AmpcTensor_Check(o); }

static int is_sequence(PyObject *o) { return PyList_Check(o) || PyTuple_Check(o) || PyArray_Check(o); }

static ampc_dtype leaf_dtype(PyObject *o) {
    if (AmpcTensor_Check(o)) return ((AmpcTensorObject *)o)->t->dtype;
    if (!PyArray_IsScalar(o, Generic)) { /* checked first: np.float64 is also a Python float */
        if (PyBool_Check(o)) return AMPC_BOOL;
        if (PyLong_Check(o)) return AMPC_INT64;
        return ampc_get_default_dtype();
    }
    /* NumPy scalar: its own dtype when ampc has it, else the widest of its kind. */
    PyArray_Descr *d = PyArray_DescrFromScalar(o);
    int dt = d ? ampc_py_numpy_dtype_to_ampc((PyObject *)d) : -1;
    Py_XDECREF(d);
    if (dt >= 0) return (ampc_dtype)dt;
    if (PyArray_IsScalar(o, Bool)) return AMPC_BOOL;
    if (PyArray_IsScalar(o, Integer)) return AMPC_INT64;
    return AMPC_FLOAT64;
}

static int invalid_type(PyObject *o) {
    PyErr_Format(PyExc_TypeError, "tensor(): invalid data type '%s'", Py_TYPE(o)->tp_name);
    return -1;
}

/* Finds the shape by following first elements, then checks every element against it. */
static int infer_shape(PyObject *data, data_info *info) {
    PyObject *o = data;
    info->ndim = 0;
    Py_INCREF(o);
    while (!is_leaf(o)) {
        if (!is_sequence(o)) {
            Py_DECREF(o);
            return invalid_type(o);
        }
        Py_ssize_t n = PySequence_Length(o);
        if (n < 0 || info->ndim == AMPC_MAX_DIMS) {
            Py_DECREF(o);
            if (n >= 0) PyErr_Format(PyExc_ValueError, "tensor(): data has more than %d dims", AMPC_MAX_DIMS);
            return -1;
        }
        info->shape[info->ndim++] = n;
        if (n == 0) break;
        PyObject *first = PySequence_GetItem(o, 0);
        Py_DECREF(o);
        if (!first) return -1;
        o = first;
    }
    Py_DECREF(o);
    return 0;
}

static int check_and_infer(PyObject *o, int dim, data_info *info) {
    if (dim == info->ndim) {
        if (!is_leaf(o)) {
            if (is_sequence(o))
                PyErr_Format(PyExc_ValueError, "tensor(): expected a number at dim %d, got a sequence", dim);
            else
                invalid_type(o);
            return -1;
        }
        if (AmpcTensor_Check(o) && ampc_numel(((AmpcTensorObject *)o)->t) != 1) {
            PyErr_SetString(PyExc_ValueError, "only one element tensors can be converted to Python scalars");
            return -1;
        }
        info->inferred = ampc_promote_types(info->inferred, leaf_dtype(o));
        return 0;
    }
    if (!is_sequence(o)) {
        if (is_leaf(o))
            PyErr_Format(PyExc_ValueError, "expected sequence of length %lld at dim %d (got a number)",
                         (long long)info->shape[dim], dim);
        else
            invalid_type(o);
        return -1;
    }
    PyObject *fast = PySequence_Fast(o, "tensor(): expected a sequence");
    if (!fast) return -1;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(fast);
    int rc = 0;
    if (n != info->shape[dim]) {
        PyErr_Format(PyExc_ValueError, "expected sequence of length %lld at dim %d (got %zd)",
                     (long long)info->shape[dim], dim, n);
        rc = -1;
    }
    for (Py_ssize_t i = 0; rc == 0 && i < n; i++) rc = check_and_infer(PySequence_Fast_GET_ITEM(fast, i), dim + 1, info);
    Py_DECREF(fast);
    return rc;
}

/* Writes the leaves of `o`, in row-major order, into `host` (FLOAT64, INT64 or BOOL). */
static int write_leaves(PyObject *o, int dim, const data_info *info, ampc_tensor *host, int64_t *pos) {
    if (dim == info->ndim) {
        char *p = (char *)ampc_data_ptr(host) + *pos * (int64_t)ampc_dtype_itemsize(host->dtype);
        ampc_scalar s;
        if (AmpcTensor_Check(o)) {
            if (ampc_py_check(ampc_get_scalar(((AmpcTensorObject *)o)->t, 0, &s)) < 0) return -1;
        } else if (ampc_py_scalar(o, &s, "tensor", "data") < 0) {
            return -1;
        }
        switch (host->dtype) {
        case AMPC_FLOAT64: *(double *)p = ampc_scalar_to_double(s); break;
        case AMPC_INT64: *(int64_t *)p = ampc_scalar_to_int(s); break;
        default: *(bool *)p = s.kind == AMPC_SCALAR_FLOAT ? s.v.f != 0 : ampc_scalar_to_int(s) != 0; break;
        }
        (*pos)++;
        return 0;
    }
    PyObject *fast = PySequence_Fast(o, "tensor(): expected a sequence");
    if (!fast) return -1;
    int rc = 0;
    for (Py_ssize_t i = 0; rc == 0 && i < PySequence_Fast_GET_SIZE(fast); i++)
        rc = write_leaves(PySequence_Fast_GET_ITEM(fast, i), dim + 1, info, host, pos);
    Py_DECREF(fast);
    return rc;
}

static ampc_tensor *tensor_from_sequence(PyObject *data, ampc_dtype dtype, ampc_device device) {
    data_info info;
    info.inferred = AMPC_DTYPE_UNDEFINED;
    if (infer_shape(data, &info) < 0 || check_and_infer(data, 0, &info) < 0) return NULL;
    if (info.inferred == AMPC_DTYPE_UNDEFINED) info.inferred = ampc_get_default_dtype(); /* no elements */
    if (dtype == AMPC_DTYPE_UNDEFINED) dtype = info.inferred;
    /* Values pass through the widest host type of the target's kind, then one cast. */
    ampc_dtype host_dt = ampc_dtype_is_floating(dtype) ? AMPC_FLOAT64 : dtype == AMPC_BOOL ? AMPC_BOOL : AMPC_INT64;
    ampc_tensor *host = ampc_empty(info.ndim, info.shape, host_dt, ampc_cpu_device());
    if (!host) {
        ampc_py_raise();
        return NULL;
    }
    int64_t pos = 0;
    if (write_leaves(data, 0, &info, host, &pos) < 0) {
        ampc_tensor_decref(host);
        return NULL;
    }
    ampc_tensor *t = ampc_to(host, dtype, device, false);
    ampc_tensor_decref(host);
    if (!t) ampc_py_raise();
    return t;
}

/* A NumPy array: share it, then one copy into the target dtype and device. Arrays NumPy would
 * need to reorder (negative strides, byte-swapped, misaligned) are made contiguous first. */
ampc_tensor *ampc_py_tensor_from_ndarray(PyObject *data, ampc_dtype dtype, ampc_device device, bool copy) {
    PyArrayObject *arr = (PyArrayObject *)data;
    int src_dt = ampc_py_numpy_dtype_to_ampc((PyObject *)PyArray_DESCR(arr));
    PyObject *owned = NULL;
    if (src_dt < 0 && dtype != AMPC_DTYPE_UNDEFINED && PyArray_ISNUMBER(arr)) {
        /* e.g. int16 data with dtype=ampc.int64: NumPy casts to the target's type first */
        static const int npy_of[AMPC_NUM_DTYPES] = {NPY_FLOAT32, NPY_FLOAT32, NPY_FLOAT32, NPY_FLOAT64,
                                                    NPY_INT64,   NPY_INT32,   NPY_UINT8,   NPY_BOOL};
        owned = PyArray_FromAny(data, PyArray_DescrFromType(npy_of[dtype]), 0, 0,
                                NPY_ARRAY_C_CONTIGUOUS | NPY_ARRAY_ALIGNED | NPY_ARRAY_FORCECAST, NULL);
    } else {
        bool reverse = false;
        for (int i = 0; i < PyArray_NDIM(arr); i++) reverse |= PyArray_STRIDE(arr, i) < 0;
        if (reverse || !PyArray_ISNOTSWAPPED(arr) || !PyArray_ISALIGNED(arr)) {
            PyArray_Descr *native = PyArray_DescrNewByteorder(PyArray_DESCR(arr), NPY_NATIVE);
            owned = native ? PyArray_FromAny(data, native, 0, 0, NPY_ARRAY_C_CONTIGUOUS | NPY_ARRAY_ALIGNED |
                                             NPY_ARRAY_ENSURECOPY, NULL) : NULL; /* steals native */
        } else {
            owned = data;
            Py_INCREF(owned);
        }
    }
    if (!owned) return NULL;
    ampc_tensor *shared = ampc_py_from_numpy(owned, "tensor");
    Py_DECREF(owned);
    if (!shared) return NULL;
    ampc_tensor *t = ampc_to(shared, dtype, device, copy);
    ampc_tensor_decref(shared);
    if (!t) ampc_py_raise();
    return t;
}

PyObject *ampc_py_tensor_from_data(PyObject *data, ampc_dtype dtype, ampc_device device, int requires_grad) {
    ampc_tensor *t;
    if (AmpcTensor_Check(data)) {
        ampc_tensor *src = ampc_detach(((AmpcTensorObject *)data)->t); /* so the copy records nothing */
        t = src ? ampc_to(src, dtype, device, true) : NULL; /* a detached copy, as torch.tensor(t) */
        ampc_tensor_decref(src);
        if (!t) return ampc_py_raise();
    } else if (PyArray_Check(data)) {
        t = ampc_py_tensor_from_ndarray(data, dtype, device, true);
    } else if (PyUnicode_Check(data) || PyBytes_Check(data) || (!is_number(data) && !is_sequence(data))) {
        return invalid_type(data), NULL;
    } else {
        t = tensor_from_sequence(data, dtype, device);
    }
    if (!t) return NULL;
    return ampc_py_factory_finish(t, requires_grad);
}
