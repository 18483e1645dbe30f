/* py_nn_conv.c: the module functions behind issue 13's convolution family in
 * ampc.nn.functional (core/nn_conv_more.h): private, positional; python/ampc/nn/_functional_conv.py
 * gives them PyTorch's signatures. */
#include "core/nn_conv_more.h"
#include "py_common.h"

#define METHOD(name) (PyCFunction)(void (*)(void))(name)

/* A sequence of at most cap Python ints -> out; returns the count, -1 with an exception set. */
static int int64_list(PyObject *seq, int64_t *out, int cap, const char *what) {
    PyObject *fast = PySequence_Fast(seq, what);
    if (!fast) return -1;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(fast);
    if (n > cap) {
        Py_DECREF(fast);
        PyErr_Format(PyExc_RuntimeError, "%s: at most %d values, got %zd", what, cap, n);
        return -1;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        long long v = PyLong_AsLongLong(PySequence_Fast_GET_ITEM(fast, i));
        if (v == -1 && PyErr_Occurred()) {
            Py_DECREF(fast);
            return -1;
        }
        out[i] = v;
    }
    Py_DECREF(fast);
    return (int)n;
}

/* _nn_pad(input, pad, mode, value): mode 0 constant, 1 reflect, 2 replicate, 3 circular. */
static PyObject *py_pad(PyObject *mod, PyObject *args) {
    PyObject *x_o, *pad_o;
    int mode;
    double value;
    if (!PyArg_ParseTuple(args, "OOid:_nn_pad", &x_o, &pad_o, &mode, &value)) return NULL;
    ampc_tensor *x = ampc_py_unwrap(x_o, "pad", "input");
    if (!x) return NULL;
    int64_t pad[2 * AMPC_MAX_DIMS + 2];
    int n = int64_list(pad_o, pad, 2 * AMPC_MAX_DIMS + 2, "pad");
    if (n < 0) return NULL;
    return ampc_py_wrap(ampc_pad(x, n, pad, (ampc_pad_mode)mode, value));
}

PyMethodDef ampc_py_module_methods_nn_conv[] = {
    {"_nn_pad", METHOD(py_pad), METH_VARARGS, "pad(input, pad, mode, value): mode 0 constant, 1 reflect, 2 replicate, 3 circular"},
    {NULL, NULL, 0, NULL},
};
