/* py_multi_tensor.c: bindings of the list ops (core/multi_tensor.h) that nn.utils.clip_grad_norm_
 * is built on:
 *   _multi_tensor_norm(tensors, p=2.0) -> 0-dim tensor, the norm of all elements together
 *   _multi_tensor_scale_(tensors, scale) -> None, every tensor multiplied in place by `scale` */

#include "py_common.h"

/* A sequence of Tensors -> a PyMem array of borrowed core tensors (free with PyMem_Free), or
 * NULL with an exception. *n receives the length. */
static ampc_tensor **tensor_array(PyObject *seq, const char *op, Py_ssize_t *n, PyObject **fast_out) {
    PyObject *fast = PySequence_Fast(seq, "expected a sequence of Tensors");
    if (!fast) return NULL;
    *n = PySequence_Fast_GET_SIZE(fast);
    if (*n > INT32_MAX) {
        PyErr_Format(PyExc_ValueError, "%s(): too many tensors (%zd)", op, *n);
        Py_DECREF(fast);
        return NULL;
    }
    ampc_tensor **ts = (ampc_tensor **)PyMem_Malloc(sizeof(ampc_tensor *) * (size_t)(*n ? *n : 1));
    if (!ts) {
        Py_DECREF(fast);
        PyErr_NoMemory();
        return NULL;
    }
    for (Py_ssize_t i = 0; i < *n; i++)
        if (!(ts[i] = ampc_py_unwrap(PySequence_Fast_GET_ITEM(fast, i), op, "tensors"))) {
            PyMem_Free(ts);
            Py_DECREF(fast);
            return NULL;
        }
    *fast_out = fast; /* keeps the items (and so the borrowed tensors) alive */
    return ts;
}

static PyObject *py_multi_tensor_norm(PyObject *self, PyObject *args, PyObject *kwargs) {
    static char *kwlist[] = {"tensors", "p", NULL};
    PyObject *seq, *fast = NULL;
    double p = 2.0;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|d:_multi_tensor_norm", kwlist, &seq, &p)) return NULL;
    Py_ssize_t n;
    ampc_tensor **ts = tensor_array(seq, "_multi_tensor_norm", &n, &fast);
    if (!ts) return NULL;
    PyObject *result = ampc_py_wrap(ampc_multi_tensor_norm((int)n, ts, p));
    PyMem_Free(ts);
    Py_DECREF(fast);
    return result;
}

static PyObject *py_multi_tensor_scale(PyObject *self, PyObject *args) {
    PyObject *seq, *scale_obj, *fast = NULL;
    if (!PyArg_ParseTuple(args, "OO:_multi_tensor_scale_", &seq, &scale_obj)) return NULL;
    ampc_tensor *scale = ampc_py_unwrap(scale_obj, "_multi_tensor_scale_", "scale");
    if (!scale) return NULL;
    Py_ssize_t n;
    ampc_tensor **ts = tensor_array(seq, "_multi_tensor_scale_", &n, &fast);
    if (!ts) return NULL;
    int rc = ampc_py_check(ampc_multi_tensor_scale_((int)n, ts, scale));
    PyMem_Free(ts);
    Py_DECREF(fast);
    if (rc < 0) return NULL;
    Py_RETURN_NONE;
}

PyMethodDef ampc_py_module_methods_multi_tensor[] = {
    {"_multi_tensor_norm", (PyCFunction)(void (*)(void))py_multi_tensor_norm, METH_VARARGS | METH_KEYWORDS,
     "The p-norm of all elements of all tensors together (one kernel call), as a 0-dim tensor."},
    {"_multi_tensor_scale_", py_multi_tensor_scale, METH_VARARGS,
     "Multiplies every tensor in place by a one-element tensor (one kernel call, no host read)."},
    {NULL, NULL, 0, NULL},
};
