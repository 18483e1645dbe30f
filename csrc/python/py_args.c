/* py_args.c: the argument parsing the bindings share: the factory keywords (dtype=, device=,
 * requires_grad=, size=, generator=) of every tensor factory (creation, random, Tensor.new_*),
 * the size argument in its three spellings, wrapping the new tensor with requires_grad applied,
 * and float parameters (beta=, alpha=, mean=, std=, p=).
 *
 * One parser so that every factory accepts the same spellings and fails with the same message:
 * ampc.zeros(2, -3) and ampc.randn(2, -3) both say
 *   "<op>(): Trying to create tensor with negative dimension -3: [2, -3]"
 * (PyTorch's wording, prefixed by the op's name). */
#include "py_internal.h"

#include <string.h>

/* ------------------------------------------------------------------ keyword arguments */

int ampc_py_parse_factory_kw(PyObject *kwargs, const char *op, unsigned takes, const char *const *skip,
                             ampc_py_factory_kw *kw) {
    memset(kw, 0, sizeof *kw);
    if (!kwargs) return 0;
    PyObject *k, *v;
    Py_ssize_t pos = 0;
    while (PyDict_Next(kwargs, &pos, &k, &v)) {
        const char *name = PyUnicode_AsUTF8(k);
        if (!name) return -1;
        int skipped = 0;
        for (int i = 0; skip && skip[i]; i++) skipped |= !strcmp(name, skip[i]);
        if (skipped) continue;
        if (!strcmp(name, "dtype")) kw->dtype = v;
        else if (!strcmp(name, "device")) kw->device = v;
        else if (!strcmp(name, "generator") && (takes & AMPC_PY_KW_GENERATOR)) kw->generator = v;
        else if (!strcmp(name, "size") && (takes & AMPC_PY_KW_SIZE)) kw->size = v;
        else if (!strcmp(name, "requires_grad")) {
            if ((kw->requires_grad = PyObject_IsTrue(v)) < 0) return -1;
        } else if (!strcmp(name, "out") && (takes & AMPC_PY_KW_OUT)) {
            if (v != Py_None) {
                PyErr_Format(PyExc_NotImplementedError, "%s(): out= is not supported by ampc", op);
                return -1;
            }
        } else if (strcmp(name, "layout") && strcmp(name, "pin_memory") &&
                   (strcmp(name, "memory_format") || !(takes & AMPC_PY_KW_OUT))) {
            PyErr_Format(PyExc_TypeError, "%s() got an unexpected keyword argument '%s'", op, name);
            return -1;
        }
    }
    return 0;
}

int ampc_py_factory_dtype_device(const ampc_py_factory_kw *kw, const char *op, ampc_dtype dflt_dtype,
                                 ampc_device dflt_dev, ampc_dtype *dtype, ampc_device *device) {
    if (ampc_py_dtype(kw->dtype, dtype, op) < 0) return -1;
    if (*dtype == AMPC_DTYPE_UNDEFINED) *dtype = dflt_dtype;
    return ampc_py_device(kw->device, dflt_dev, device, op);
}

PyObject *ampc_py_factory_finish(ampc_tensor *t, int requires_grad) {
    if (!t) return ampc_py_raise();
    if (requires_grad && ampc_py_set_requires_grad(t, 1) < 0) {
        ampc_tensor_decref(t);
        return NULL;
    }
    return ampc_py_wrap(t);
}

/* ------------------------------------------------------------------ numbers */

int ampc_py_double(PyObject *obj, double *out, const char *op, const char *arg) {
    if (!obj) return 0;
    ampc_scalar s;
    if (ampc_py_scalar(obj, &s, op, arg) < 0) return -1;
    *out = ampc_scalar_to_double(s);
    return 0;
}

/* ------------------------------------------------------------------ sizes */

int ampc_py_check_sizes(int nd, const int64_t *shape, const char *op) {
    for (int i = 0; i < nd; i++)
        if (shape[i] < 0) {
            char buf[200];
            PyErr_Format(PyExc_RuntimeError, "%s(): Trying to create tensor with negative dimension %lld: %s", op,
                         (long long)shape[i], ampc_shape_str(nd, shape, buf, sizeof buf));
            return -1;
        }
    return 0;
}

int ampc_py_size_arg(PyObject *obj, int64_t *shape, const char *op) {
    int nd = ampc_py_int_list(obj, shape, AMPC_MAX_DIMS, op, "size");
    return nd < 0 || ampc_py_check_sizes(nd, shape, op) < 0 ? -1 : nd;
}

int ampc_py_size_args(PyObject *args, PyObject *size_kw, int64_t *shape, const char *op) {
    PyObject *src = args;
    if (size_kw) {
        if (PyTuple_GET_SIZE(args)) {
            PyErr_Format(PyExc_TypeError, "%s() got multiple values for argument 'size'", op);
            return -1;
        }
        src = size_kw;
    } else if (PyTuple_GET_SIZE(args) == 0) {
        PyErr_Format(PyExc_TypeError, "%s() missing 1 required positional argument: 'size'", op);
        return -1;
    }
    return ampc_py_size_arg(src, shape, op);
}
