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

/* _nn_convolution_nd(input, weight, bias, stride, pad_lo, pad_hi, dilation, output_padding, groups,
 * transposed, spatial): triples in (d, h, w) order. */
static PyObject *py_convolution_nd(PyObject *mod, PyObject *args) {
    PyObject *x_o, *w_o, *b_o;
    ampc_convnd_params p;
    long long v[15], g;
    int transposed, spatial;
    if (!PyArg_ParseTuple(args, "OOO(LLL)(LLL)(LLL)(LLL)(LLL)Lpi:_nn_convolution_nd", &x_o, &w_o, &b_o, &v[0], &v[1],
                          &v[2], &v[3], &v[4], &v[5], &v[6], &v[7], &v[8], &v[9], &v[10], &v[11], &v[12], &v[13],
                          &v[14], &g, &transposed, &spatial))
        return NULL;
    for (int i = 0; i < 3; i++) {
        p.stride[i] = v[i], p.pad_lo[i] = v[3 + i], p.pad_hi[i] = v[6 + i], p.dilation[i] = v[9 + i];
        p.output_padding[i] = v[12 + i];
    }
    p.groups = g, p.transposed = transposed != 0, p.spatial = spatial;
    const char *op = "convolution";
    ampc_tensor *x = ampc_py_unwrap(x_o, op, "input"), *w = x ? ampc_py_unwrap(w_o, op, "weight") : NULL, *b = NULL;
    if (!w) return NULL;
    if (b_o != Py_None && !(b = ampc_py_unwrap(b_o, op, "bias"))) return NULL;
    return ampc_py_wrap(ampc_convolution_nd(x, w, b, &p));
}

/* _nn_unfold(input, kernel, dilation, padding, stride) and
 * _nn_fold(input, output_size, kernel, dilation, padding, stride): pairs. */
static PyObject *py_unfold(PyObject *mod, PyObject *args) {
    PyObject *x_o;
    long long v[8];
    if (!PyArg_ParseTuple(args, "O(LL)(LL)(LL)(LL):_nn_unfold", &x_o, &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &v[6],
                          &v[7]))
        return NULL;
    ampc_tensor *x = ampc_py_unwrap(x_o, "unfold", "input");
    if (!x) return NULL;
    int64_t k[2] = {v[0], v[1]}, d[2] = {v[2], v[3]}, p[2] = {v[4], v[5]}, s[2] = {v[6], v[7]};
    return ampc_py_wrap(ampc_unfold_im2col(x, k, d, p, s));
}

static PyObject *py_fold(PyObject *mod, PyObject *args) {
    PyObject *x_o;
    long long v[10];
    if (!PyArg_ParseTuple(args, "O(LL)(LL)(LL)(LL)(LL):_nn_fold", &x_o, &v[0], &v[1], &v[2], &v[3], &v[4], &v[5],
                          &v[6], &v[7], &v[8], &v[9]))
        return NULL;
    ampc_tensor *x = ampc_py_unwrap(x_o, "fold", "input");
    if (!x) return NULL;
    int64_t o[2] = {v[0], v[1]}, k[2] = {v[2], v[3]}, d[2] = {v[4], v[5]}, p[2] = {v[6], v[7]}, s[2] = {v[8], v[9]};
    return ampc_py_wrap(ampc_fold_col2im(x, o, k, d, p, s));
}

/* _nn_interpolate(input, mode, out_size, scales, align_corners): mode as ampc_interp_mode, out_size
 * and scales sequences of the spatial dims (scale <= 0: none). */
static PyObject *py_interpolate(PyObject *mod, PyObject *args) {
    PyObject *x_o, *size_o, *scales_o;
    int mode, align;
    if (!PyArg_ParseTuple(args, "OiOOp:_nn_interpolate", &x_o, &mode, &size_o, &scales_o, &align)) return NULL;
    ampc_tensor *x = ampc_py_unwrap(x_o, "interpolate", "input");
    if (!x) return NULL;
    int64_t size[3];
    int n = int64_list(size_o, size, 3, "output_size");
    if (n < 0) return NULL;
    double scales[3] = {0, 0, 0};
    PyObject *fast = PySequence_Fast(scales_o, "scales");
    if (!fast) return NULL;
    Py_ssize_t ns = PySequence_Fast_GET_SIZE(fast);
    for (Py_ssize_t i = 0; i < ns && i < 3; i++) {
        scales[i] = PyFloat_AsDouble(PySequence_Fast_GET_ITEM(fast, i));
        if (scales[i] == -1.0 && PyErr_Occurred()) {
            Py_DECREF(fast);
            return NULL;
        }
    }
    Py_DECREF(fast);
    if (ns != n || n < 1) {
        PyErr_Format(PyExc_RuntimeError, "interpolate: %d output sizes and %zd scales", n, ns);
        return NULL;
    }
    return ampc_py_wrap(ampc_interpolate(x, (ampc_interp_mode)mode, n, size, scales, align != 0));
}

PyMethodDef ampc_py_module_methods_nn_conv[] = {
    {"_nn_interpolate", METHOD(py_interpolate), METH_VARARGS, "interpolate(input, mode, out_size, scales, align_corners)"},
    {"_nn_unfold", METHOD(py_unfold), METH_VARARGS, "unfold(input, kernel, dilation, padding, stride)"},
    {"_nn_fold", METHOD(py_fold), METH_VARARGS, "fold(input, output_size, kernel, dilation, padding, stride)"},
    {"_nn_convolution_nd", METHOD(py_convolution_nd), METH_VARARGS,
     "convolution_nd(input, weight, bias, stride, pad_lo, pad_hi, dilation, output_padding, groups, transposed, spatial)"},
    {"_nn_pad", METHOD(py_pad), METH_VARARGS, "pad(input, pad, mode, value): mode 0 constant, 1 reflect, 2 replicate, 3 circular"},
    {NULL, NULL, 0, NULL},
};
