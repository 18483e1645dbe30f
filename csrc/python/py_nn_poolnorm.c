/* py_nn_poolnorm.c: the module functions behind issue 13's pooling and normalisation additions
 * (core/nn_poolnorm.h): 3-d pools, adaptive max pools, rms_norm.
 *
 * Private (_nn_*) and positional like py_nn.c: python/ampc/nn/_functional_poolnorm.py gives them
 * PyTorch's signatures, so this file only converts arguments and calls the core. */
#include "core/nn_poolnorm.h"
#include "py_common.h"

#define METHOD(name) (PyCFunction)(void (*)(void))(name)

/* (y, indices) as a tuple, or y alone; steals both. */
static PyObject *with_indices(ampc_tensor *y, ampc_tensor *ind, bool return_indices) {
    if (!return_indices) {
        ampc_tensor_decref(ind);
        return ampc_py_wrap(y);
    }
    PyObject *yo = ampc_py_wrap(y), *io = yo ? ampc_py_wrap(ind) : (ampc_tensor_decref(ind), NULL);
    if (!io) {
        Py_XDECREF(yo);
        return NULL;
    }
    return Py_BuildValue("(NN)", yo, io);
}

static PyObject *py_max_pool3d(PyObject *mod, PyObject *args) {
    PyObject *x_o;
    long long k[3], s[3], p[3], d[3];
    int ceil_mode, return_indices;
    if (!PyArg_ParseTuple(args, "O(LLL)(LLL)(LLL)(LLL)pp:_nn_max_pool3d", &x_o, &k[0], &k[1], &k[2], &s[0], &s[1],
                          &s[2], &p[0], &p[1], &p[2], &d[0], &d[1], &d[2], &ceil_mode, &return_indices))
        return NULL;
    ampc_tensor *x = ampc_py_unwrap(x_o, "max_pool3d", "input");
    if (!x) return NULL;
    int64_t kk[3], ss[3], pp[3], dd[3];
    for (int i = 0; i < 3; i++) kk[i] = k[i], ss[i] = s[i], pp[i] = p[i], dd[i] = d[i];
    ampc_tensor *y, *ind;
    if (ampc_py_check(ampc_max_pool3d(x, kk, ss, pp, dd, ceil_mode, &y, &ind)) < 0) return NULL;
    return with_indices(y, ind, return_indices);
}

static PyObject *py_avg_pool3d(PyObject *mod, PyObject *args) {
    PyObject *x_o;
    long long k[3], s[3], p[3], div;
    int ceil_mode, count_include_pad;
    if (!PyArg_ParseTuple(args, "O(LLL)(LLL)(LLL)ppL:_nn_avg_pool3d", &x_o, &k[0], &k[1], &k[2], &s[0], &s[1], &s[2],
                          &p[0], &p[1], &p[2], &ceil_mode, &count_include_pad, &div))
        return NULL;
    ampc_tensor *x = ampc_py_unwrap(x_o, "avg_pool3d", "input");
    if (!x) return NULL;
    int64_t kk[3], ss[3], pp[3];
    for (int i = 0; i < 3; i++) kk[i] = k[i], ss[i] = s[i], pp[i] = p[i];
    return ampc_py_wrap(ampc_avg_pool3d(x, kk, ss, pp, ceil_mode, count_include_pad, div));
}

static PyObject *py_adaptive_avg_pool3d(PyObject *mod, PyObject *args) {
    PyObject *x_o;
    long long o[3];
    if (!PyArg_ParseTuple(args, "O(LLL):_nn_adaptive_avg_pool3d", &x_o, &o[0], &o[1], &o[2])) return NULL;
    ampc_tensor *x = ampc_py_unwrap(x_o, "adaptive_avg_pool3d", "input");
    if (!x) return NULL;
    int64_t size[3] = {o[0], o[1], o[2]};
    return ampc_py_wrap(ampc_adaptive_avg_pool3d(x, size));
}

/* (input, output_size tuple of 2 or 3, return_indices) */
static PyObject *py_adaptive_max_pool(PyObject *mod, PyObject *args) {
    PyObject *x_o, *size_o;
    int return_indices;
    if (!PyArg_ParseTuple(args, "OOp:_nn_adaptive_max_pool", &x_o, &size_o, &return_indices)) return NULL;
    ampc_tensor *x = ampc_py_unwrap(x_o, "adaptive_max_pool", "input");
    if (!x) return NULL;
    int64_t size[3];
    int n = ampc_py_int_list(size_o, size, 3, "adaptive_max_pool", "output_size");
    if (n < 0) return NULL;
    ampc_tensor *y, *ind;
    if (ampc_py_check(ampc_adaptive_max_pool_nd(n, x, size, &y, &ind)) < 0) return NULL;
    return with_indices(y, ind, return_indices);
}

/* (input, kernel of 2 or 3, output_size of as many, samples, return_indices) */
static PyObject *py_fractional_max_pool(PyObject *mod, PyObject *args) {
    PyObject *x_o, *k_o, *o_o, *s_o;
    int return_indices;
    const char *op = "fractional_max_pool";
    if (!PyArg_ParseTuple(args, "OOOOp:_nn_fractional_max_pool", &x_o, &k_o, &o_o, &s_o, &return_indices)) return NULL;
    ampc_tensor *x = ampc_py_unwrap(x_o, op, "input"), *smp = x ? ampc_py_unwrap(s_o, op, "_random_samples") : NULL;
    if (!smp) return NULL;
    int64_t k[3], o[3];
    int nk = ampc_py_int_list(k_o, k, 3, op, "kernel_size"), no = nk < 0 ? -1 : ampc_py_int_list(o_o, o, 3, op, "output_size");
    if (no < 0) return NULL;
    if (nk != no) return PyErr_Format(PyExc_ValueError, "%s: kernel_size and output_size of different lengths", op);
    ampc_tensor *y, *ind;
    if (ampc_py_check(ampc_fractional_max_pool_nd(nk, x, k, o, smp, &y, &ind)) < 0) return NULL;
    return with_indices(y, ind, return_indices);
}

/* (input, normalized_shape, weight or None, eps or None) */
static PyObject *py_rms_norm(PyObject *mod, PyObject *args) {
    PyObject *x_o, *shape_o, *w_o, *eps_o;
    if (!PyArg_ParseTuple(args, "OOOO:_nn_rms_norm", &x_o, &shape_o, &w_o, &eps_o)) return NULL;
    const char *op = "rms_norm";
    ampc_tensor *x = ampc_py_unwrap(x_o, op, "input"), *w = NULL;
    if (!x) return NULL;
    if (w_o != Py_None && !(w = ampc_py_unwrap(w_o, op, "weight"))) return NULL;
    double eps = -1.0;
    if (eps_o != Py_None) {
        eps = PyFloat_AsDouble(eps_o);
        if (eps == -1.0 && PyErr_Occurred()) return NULL;
    }
    int64_t shape[AMPC_MAX_DIMS];
    int n = ampc_py_int_list(shape_o, shape, AMPC_MAX_DIMS, op, "normalized_shape");
    if (n < 0) return NULL;
    return ampc_py_wrap(ampc_rms_norm(x, n, shape, w, eps, NULL));
}

PyMethodDef ampc_py_module_methods_nn_poolnorm[] = {
    {"_nn_max_pool3d", METHOD(py_max_pool3d), METH_VARARGS,
     "(input, kernel, stride, padding, dilation, ceil_mode, return_indices)"},
    {"_nn_avg_pool3d", METHOD(py_avg_pool3d), METH_VARARGS,
     "(input, kernel, stride, padding, ceil_mode, count_include_pad, divisor_override or 0)"},
    {"_nn_adaptive_avg_pool3d", METHOD(py_adaptive_avg_pool3d), METH_VARARGS, "(input, (d, h, w); -1 keeps)"},
    {"_nn_adaptive_max_pool", METHOD(py_adaptive_max_pool), METH_VARARGS,
     "(input, output_size of 2 or 3 (-1 keeps), return_indices)"},
    {"_nn_fractional_max_pool", METHOD(py_fractional_max_pool), METH_VARARGS,
     "(input, kernel, output_size (2 or 3 each), samples, return_indices)"},
    {"_nn_rms_norm", METHOD(py_rms_norm), METH_VARARGS, "(input, normalized_shape, weight, eps or None)"},
    {NULL, NULL, 0, NULL},
};
