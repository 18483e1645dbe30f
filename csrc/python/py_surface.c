/* py_surface.c: the process-wide settings of torch's top level that live in the binding, and the
 * hook that lets python/ampc/_functions.py add its composed methods to ampc.Tensor.
 *
 * - The default device of the factories (torch.set_default_device): every factory without
 *   device= (zeros, ones, empty, full, tensor, as_tensor, arange, linspace, eye, rand, randn,
 *   randint, randperm, ...) asks ampc_py_factory_device(); *_like and Tensor.new_* keep their
 *   input's device, as in torch.
 * - The OpenMP thread count (torch.set_num_threads): ampc's CPU kernels split their loops with
 *   OpenMP, so the count torch scripts set is omp_set_num_threads'.
 * - Tensor.resize_ / resize_as_ (the core's ampc_resize_, csrc/core/resize.c).
 * - _install_tensor_methods: ampc.Tensor is a static type, so Python cannot assign attributes to
 *   it; this puts composed methods and properties into its dict. A name the C tables already
 *   define is kept: when an area adds a kernel-backed method, it takes over from the composed
 *   one without an edit in Python. */
#include "py_internal.h"

#include <omp.h>

static ampc_device default_device; /* zero-initialised: the CPU */
static int default_device_set;
static int num_interop_threads = 1;

ampc_device ampc_py_factory_device(void) { return default_device_set ? default_device : ampc_cpu_device(); }

static PyObject *py_set_default_device(PyObject *u, PyObject *o) {
    if (o == Py_None) {
        default_device_set = 0;
        Py_RETURN_NONE;
    }
    ampc_device d;
    if (ampc_py_device(o, ampc_cpu_device(), &d, "set_default_device") < 0) return NULL;
    default_device = d;
    default_device_set = 1;
    Py_RETURN_NONE;
}

static PyObject *py_get_default_device(PyObject *u, PyObject *unused) {
    return ampc_py_device_object(ampc_py_factory_device());
}

static PyObject *py_set_num_threads(PyObject *u, PyObject *o) {
    long n = PyLong_AsLong(o);
    if (n == -1 && PyErr_Occurred()) return NULL;
    if (n <= 0) return PyErr_Format(PyExc_RuntimeError, "set_num_threads expects a positive integer, got %ld", n);
    omp_set_num_threads((int)n);
    Py_RETURN_NONE;
}

static PyObject *py_get_num_threads(PyObject *u, PyObject *unused) { return PyLong_FromLong(omp_get_max_threads()); }

/* ampc has no inter-op thread pool (ops run one after the other on the calling thread); the
 * value is kept so that scripts which set and read it see what they set. */
static PyObject *py_set_num_interop_threads(PyObject *u, PyObject *o) {
    long n = PyLong_AsLong(o);
    if (n == -1 && PyErr_Occurred()) return NULL;
    if (n <= 0)
        return PyErr_Format(PyExc_RuntimeError, "set_num_interop_threads expects a positive integer, got %ld", n);
    num_interop_threads = (int)n;
    Py_RETURN_NONE;
}

static PyObject *py_get_num_interop_threads(PyObject *u, PyObject *unused) { return PyLong_FromLong(num_interop_threads); }

static PyObject *py_install_tensor_methods(PyObject *u, PyObject *mapping) {
    if (!PyDict_Check(mapping)) return PyErr_Format(PyExc_TypeError, "_install_tensor_methods expects a dict");
    PyObject *k, *v, *installed = PyList_New(0);
    Py_ssize_t pos = 0;
    if (!installed) return NULL;
    while (PyDict_Next(mapping, &pos, &k, &v)) {
        int has = PyDict_Contains(AmpcTensor_Type.tp_dict, k);
        if (has < 0 || (!has && (PyDict_SetItem(AmpcTensor_Type.tp_dict, k, v) < 0 || PyList_Append(installed, k) < 0))) {
            Py_DECREF(installed);
            return NULL;
        }
    }
    PyType_Modified(&AmpcTensor_Type);
    return installed;
}

/* resize_(*sizes, memory_format=None): torch's; memory formats other than the default are not
 * ampc's (it has one layout), so only None / contiguous_format-like values pass. */
static PyObject *t_resize_(PyObject *self, PyObject *args, PyObject *kwargs) {
    if (kwargs) {
        PyObject *k, *v;
        Py_ssize_t pos = 0;
        while (PyDict_Next(kwargs, &pos, &k, &v)) {
            if (PyUnicode_CompareWithASCIIString(k, "memory_format") || v != Py_None)
                return PyErr_Format(PyExc_TypeError, "resize_() got an unexpected keyword argument '%U'", k);
        }
    }
    int64_t shape[AMPC_MAX_DIMS];
    int nd = ampc_py_size_args(args, NULL, shape, "resize_");
    if (nd < 0 || ampc_py_check(ampc_resize_(((AmpcTensorObject *)self)->t, nd, shape)) < 0) return NULL;
    return Py_NewRef(self);
}

static PyObject *t_resize_as_(PyObject *self, PyObject *other) {
    ampc_tensor *o = ampc_py_unwrap(other, "resize_as_", "the_template");
    if (!o || ampc_py_check(ampc_resize_(((AmpcTensorObject *)self)->t, o->ndim, o->shape)) < 0) return NULL;
    return Py_NewRef(self);
}

PyMethodDef ampc_py_tensor_methods_surface[] = {
    {"resize_", (PyCFunction)(void (*)(void))t_resize_, METH_VARARGS | METH_KEYWORDS,
     "resize_(*sizes): this tensor with a new shape, contiguous from its offset; grows the storage in place"},
    {"resize_as_", t_resize_as_, METH_O, "resize_as_(other): resize_(other.shape)"},
    {NULL, NULL, 0, NULL},
};

PyMethodDef ampc_py_module_methods_surface[] = {
    {"set_default_device", py_set_default_device, METH_O,
     "set_default_device(device): the device of factories called without device= (None: the CPU)"},
    {"get_default_device", py_get_default_device, METH_NOARGS, "the device factories use without device="},
    {"set_num_threads", py_set_num_threads, METH_O, "set_num_threads(n): OpenMP threads of ampc's CPU kernels"},
    {"get_num_threads", py_get_num_threads, METH_NOARGS, "the OpenMP threads of ampc's CPU kernels"},
    {"set_num_interop_threads", py_set_num_interop_threads, METH_O,
     "set_num_interop_threads(n): kept for scripts; ampc runs ops on the calling thread"},
    {"get_num_interop_threads", py_get_num_interop_threads, METH_NOARGS, NULL},
    {"_install_tensor_methods", py_install_tensor_methods, METH_O,
     "_install_tensor_methods(dict): adds the names Tensor lacks; returns those added"},
    {NULL, NULL, 0, NULL},
};
