/* py_storage.c: storages as serialization and multiprocessing see them.
 *
 * ampc has no Python storage object; torch's checkpoint format and torch.multiprocessing only
 * need a storage's identity, its whole bytes and tensors rebuilt over it, which these private
 * functions give (ampc/serialization, ampc/multiprocessing), plus Tensor.share_memory_() and
 * Tensor.is_shared() over the shared-memory storage of csrc/core/storage_shared.c. */
#include "py_internal.h"

#include <unistd.h>

#define SELF_T(o) (((AmpcTensorObject *)(o))->t)

static ampc_tensor *arg_tensor(PyObject *o, const char *op) { return ampc_py_unwrap(o, op, "tensor"); }

/* _storage_key(t): an int naming t's storage (equal for every view of the same memory). */
static PyObject *f_storage_key(PyObject *unused, PyObject *o) {
    ampc_tensor *t = arg_tensor(o, "_storage_key");
    return t ? PyLong_FromVoidPtr(t->storage) : NULL;
}

/* _storage_nbytes(t) */
static PyObject *f_storage_nbytes(PyObject *unused, PyObject *o) {
    ampc_tensor *t = arg_tensor(o, "_storage_nbytes");
    return t ? PyLong_FromSize_t(t->storage->nbytes) : NULL;
}

/* _storage_tensor(t): a 1-D tensor of t's dtype over t's whole storage (what torch writes as the
 * storage's record), no autograd. */
static PyObject *f_storage_tensor(PyObject *unused, PyObject *o) {
    ampc_tensor *t = arg_tensor(o, "_storage_tensor");
    if (!t) return NULL;
    int64_t n = (int64_t)(t->storage->nbytes / ampc_dtype_itemsize(t->dtype));
    return ampc_py_wrap(ampc_tensor_from_storage(t->storage, 0, 1, &n, NULL, t->dtype));
}

/* Reads shape and stride sequences of equal length; returns ndim or -1. */
static int shape_and_strides(PyObject *shape_o, PyObject *stride_o, int64_t *shape, int64_t *strides,
                             const char *op) {
    int nd = ampc_py_int_list(shape_o, shape, AMPC_MAX_DIMS, op, "size");
    if (nd < 0) return -1;
    int ns = ampc_py_int_list(stride_o, strides, AMPC_MAX_DIMS, op, "stride");
    if (ns < 0) return -1;
    if (ns != nd) {
        PyErr_Format(PyExc_RuntimeError, "%s: size has %d dims but stride has %d", op, nd, ns);
        return -1;
    }
    return nd;
}

/* Whether elements [offset, offset + extent] of a view lie inside `numel` storage elements. */
static int check_extent(const char *op, int64_t offset, int nd, const int64_t *shape, const int64_t *strides,
                        int64_t numel) {
    int64_t last = offset;
    bool empty = false;
    for (int i = 0; i < nd; i++) {
        if (shape[i] < 0 || strides[i] < 0) {
            PyErr_Format(PyExc_RuntimeError, "%s: negative size or stride in dim %d", op, i);
            return -1;
        }
        if (shape[i] == 0) empty = true;
        else if (strides[i] && shape[i] - 1 > (INT64_MAX - last) / strides[i]) empty = false, last = INT64_MAX;
        else last += (shape[i] - 1) * strides[i];
    }
    if (offset < 0 || (!empty && last >= numel)) {
        PyErr_Format(PyExc_RuntimeError,
                     "%s: a tensor at storage offset %lld reaching element %lld lies outside its storage of %lld "
                     "elements (the checkpoint is corrupted)", op, (long long)offset, (long long)last,
                     (long long)numel);
        return -1;
    }
    return 0;
}

/* _tensor_over(base, offset, size, stride): a tensor over base's storage (torch's
 * _rebuild_tensor_v2 of a storage), checked to stay inside it. */
static PyObject *f_tensor_over(PyObject *unused, PyObject *args) {
    PyObject *base_o, *shape_o, *stride_o;
    long long offset;
    if (!PyArg_ParseTuple(args, "OLOO:_tensor_over", &base_o, &offset, &shape_o, &stride_o)) return NULL;
    ampc_tensor *base = arg_tensor(base_o, "_tensor_over");
    if (!base) return NULL;
    int64_t shape[AMPC_MAX_DIMS], strides[AMPC_MAX_DIMS];
    int nd = shape_and_strides(shape_o, stride_o, shape, strides, "_rebuild_tensor");
    if (nd < 0) return NULL;
    int64_t numel = (int64_t)(base->storage->nbytes / ampc_dtype_itemsize(base->dtype));
    if (check_extent("_rebuild_tensor", offset, nd, shape, strides, numel) < 0) return NULL;
    return ampc_py_wrap(ampc_tensor_from_storage(base->storage, offset, nd, shape, strides, base->dtype));
}

/* _shared_fd(t): the fd of t's shared region (still owned by the storage), -1 when not shared. */
static PyObject *f_shared_fd(PyObject *unused, PyObject *o) {
    ampc_tensor *t = arg_tensor(o, "_shared_fd");
    return t ? PyLong_FromLong(ampc_storage_shared_fd(t->storage)) : NULL;
}

/* _tensor_from_shared_fd(fd, nbytes, dtype, offset, size, stride): a tensor over another
 * process's shared region; the fd is taken over (closed with the storage or on failure). */
static PyObject *f_tensor_from_shared_fd(PyObject *unused, PyObject *args) {
    int fd;
    long long nbytes, offset;
    PyObject *dtype_o, *shape_o, *stride_o;
    if (!PyArg_ParseTuple(args, "iLOLOO:_tensor_from_shared_fd", &fd, &nbytes, &dtype_o, &offset, &shape_o,
                          &stride_o))
        return NULL;
    ampc_dtype dt;
    int64_t shape[AMPC_MAX_DIMS], strides[AMPC_MAX_DIMS];
    int nd;
    if (nbytes < 0 || ampc_py_dtype(dtype_o, &dt, "_tensor_from_shared_fd") < 0 || dt == AMPC_DTYPE_UNDEFINED ||
        (nd = shape_and_strides(shape_o, stride_o, shape, strides, "_tensor_from_shared_fd")) < 0 ||
        check_extent("_tensor_from_shared_fd", offset, nd, shape, strides,
                     nbytes / (long long)ampc_dtype_itemsize(dt)) < 0) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "_tensor_from_shared_fd: bad nbytes or dtype");
        close(fd);
        return NULL;
    }
    ampc_storage *s = ampc_storage_from_shared_fd(fd, (size_t)nbytes);
    if (!s) return ampc_py_raise();
    ampc_tensor *t = ampc_tensor_from_storage(s, offset, nd, shape, strides, dt);
    ampc_storage_decref(s);
    return ampc_py_wrap(t);
}

/* Tensor.share_memory_(): CPU storage moves to shared memory in place; CUDA: a no-op (torch). */
static PyObject *t_share_memory_(PyObject *self, PyObject *unused) {
    ampc_tensor *t = SELF_T(self);
    if (t->device.type == AMPC_CPU && ampc_py_check(ampc_storage_share_(t->storage)) < 0) return NULL;
    Py_INCREF(self);
    return self;
}

/* Tensor.is_shared(): CPU storage in shared memory; CUDA tensors are, as torch says. */
static PyObject *t_is_shared(PyObject *self, PyObject *unused) {
    ampc_tensor *t = SELF_T(self);
    return PyBool_FromLong(t->device.type != AMPC_CPU || ampc_storage_is_shared(t->storage));
}

PyMethodDef ampc_py_module_methods_storage[] = {
    {"_storage_key", f_storage_key, METH_O, NULL},
    {"_storage_nbytes", f_storage_nbytes, METH_O, NULL},
    {"_storage_tensor", f_storage_tensor, METH_O, NULL},
    {"_tensor_over", f_tensor_over, METH_VARARGS, NULL},
    {"_shared_fd", f_shared_fd, METH_O, NULL},
    {"_tensor_from_shared_fd", f_tensor_from_shared_fd, METH_VARARGS, NULL},
    {NULL, NULL, 0, NULL},
};

PyMethodDef ampc_py_tensor_methods_storage[] = {
    {"share_memory_", t_share_memory_, METH_NOARGS, NULL},
    {"is_shared", t_is_shared, METH_NOARGS, NULL},
    {NULL, NULL, 0, NULL},
};
