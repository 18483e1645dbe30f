/* py_cuda.c: the private functions behind ampc.cuda (python/ampc/cuda/__init__.py) and the
 * allocator statistics of both devices, plus ampc.OutOfMemoryError.
 *
 * Builds without CUDA (AMPC_WITH_CUDA undefined) keep the same functions: zero devices, zero
 * memory, and a RuntimeError from everything that needs a GPU, so Python code never has to ask
 * which build it runs on. */
#include "py_common.h"

#ifdef AMPC_WITH_CUDA
#include "cuda/cuda_backend.h"
#endif

#define KW(...) static char *kwlist[] = {__VA_ARGS__, NULL}
#define METHOD(name) (PyCFunction)(void (*)(void))(name)
#define VA (METH_VARARGS | METH_KEYWORDS)

PyObject *ampc_py_out_of_memory_error = NULL;

static int cuda_count(void) { return ampc_device_count(AMPC_CUDA); }

int ampc_py_cuda_current_index(void) {
#ifdef AMPC_WITH_CUDA
    return ampc_cuda_current_device();
#else
    return 0;
#endif
}

/* Raises unless a GPU exists and `index` names one. */
static int require_gpu(const char *op, int index) {
    int n = cuda_count();
    if (n == 0) {
#ifdef AMPC_WITH_CUDA
        PyErr_Format(PyExc_RuntimeError, "%s: CUDA is not available: no NVIDIA driver or GPU was found on this machine",
                     op);
#else
        PyErr_Format(PyExc_RuntimeError, "%s: CUDA is not available: ampc was built without CUDA support", op);
#endif
        return -1;
    }
    if (index < 0 || index >= n) {
        PyErr_Format(PyExc_RuntimeError, "%s: invalid device ordinal %d (%d CUDA device(s) present)", op, index, n);
        return -1;
    }
    return 0;
}

/* Optional device index argument: None means the current device. */
static int index_arg(PyObject *args, PyObject *kwargs, const char *fmt, int *index) {
    KW("device");
    PyObject *o = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, fmt, kwlist, &o)) return -1;
    if (o == Py_None) {
        *index = ampc_py_cuda_current_index();
        return 0;
    }
    long v = PyLong_AsLong(o);
    if (v == -1 && PyErr_Occurred()) return -1;
    *index = (int)v;
    return 0;
}

static PyObject *stats_dict(const ampc_memory_stats *s) {
    return Py_BuildValue("{s:L,s:L,s:L,s:L,s:L,s:L}", "allocated", (long long)s->allocated, "peak_allocated",
                         (long long)s->peak_allocated, "peak", (long long)s->peak_allocated, "reserved",
                         (long long)s->reserved, "peak_reserved", (long long)s->peak_reserved, "num_allocs",
                         (long long)s->num_allocs);
}

/* ------------------------------------------------------------------ devices */

static PyObject *py_is_available(PyObject *m, PyObject *unused) { return PyBool_FromLong(cuda_count() > 0); }

static PyObject *py_device_count(PyObject *m, PyObject *unused) { return PyLong_FromLong(cuda_count()); }

static PyObject *py_current_device(PyObject *m, PyObject *unused) {
    if (require_gpu("current_device", 0) < 0) return NULL;
    return PyLong_FromLong(ampc_py_cuda_current_index());
}

static PyObject *py_set_device(PyObject *m, PyObject *arg) {
    long v = PyLong_AsLong(arg);
    if (v == -1 && PyErr_Occurred()) return NULL;
    if (require_gpu("set_device", (int)v) < 0) return NULL;
#ifdef AMPC_WITH_CUDA
    if (ampc_py_check(ampc_cuda_set_device((int)v)) < 0) return NULL;
#endif
    Py_RETURN_NONE;
}

static PyObject *py_get_device_name(PyObject *m, PyObject *args, PyObject *kwargs) {
    int index;
    if (index_arg(args, kwargs, "|O:_cuda_get_device_name", &index) < 0) return NULL;
    if (require_gpu("get_device_name", index) < 0) return NULL;
#ifdef AMPC_WITH_CUDA
    char name[256];
    if (ampc_py_check(ampc_cuda_device_name(index, name, sizeof name)) < 0) return NULL;
    return PyUnicode_FromString(name);
#else
    Py_RETURN_NONE; /* unreachable: no devices without CUDA */
#endif
}

static PyObject *py_synchronize(PyObject *m, PyObject *args, PyObject *kwargs) {
    int index;
    if (index_arg(args, kwargs, "|O:_cuda_synchronize", &index) < 0) return NULL;
    if (require_gpu("synchronize", index) < 0) return NULL;
#ifdef AMPC_WITH_CUDA
    ampc_status st;
    Py_BEGIN_ALLOW_THREADS
    st = ampc_cuda_synchronize(index);
    Py_END_ALLOW_THREADS
    if (ampc_py_check(st) < 0) return NULL;
#endif
    Py_RETURN_NONE;
}

/* ------------------------------------------------------------------ memory statistics */

/* Without a GPU (or for an index past the last one) the statistics are all zero, as PyTorch
 * reports for an uninitialised CUDA. */
static PyObject *py_memory_stats(PyObject *m, PyObject *args, PyObject *kwargs) {
    int index;
    if (index_arg(args, kwargs, "|O:_cuda_memory_stats", &index) < 0) return NULL;
    ampc_memory_stats s = {0, 0, 0, 0, 0};
    const ampc_allocator *a = ampc_get_allocator(AMPC_CUDA);
    if (a && index >= 0 && index < cuda_count()) {
        ampc_device d = {AMPC_CUDA, (int8_t)index};
        a->stats(d, &s);
    }
    return stats_dict(&s);
}

static PyObject *py_reset_peak(PyObject *m, PyObject *args, PyObject *kwargs) {
    int index;
    if (index_arg(args, kwargs, "|O:_cuda_reset_peak", &index) < 0) return NULL;
    const ampc_allocator *a = ampc_get_allocator(AMPC_CUDA);
    if (a && index >= 0 && index < cuda_count()) {
        ampc_device d = {AMPC_CUDA, (int8_t)index};
        a->reset_peak(d);
    }
    Py_RETURN_NONE;
}

static PyObject *py_empty_cache(PyObject *m, PyObject *unused) {
    const ampc_allocator *a = ampc_get_allocator(AMPC_CUDA);
    for (int i = 0; a && i < cuda_count(); i++) {
        ampc_device d = {AMPC_CUDA, (int8_t)i};
        a->empty_cache(d);
    }
    Py_RETURN_NONE;
}

static PyObject *py_cpu_memory_stats(PyObject *m, PyObject *unused) {
    ampc_memory_stats s;
    ampc_get_allocator(AMPC_CPU)->stats(ampc_cpu_device(), &s);
    return stats_dict(&s);
}

static PyObject *py_cpu_reset_peak(PyObject *m, PyObject *unused) {
    ampc_get_allocator(AMPC_CPU)->reset_peak(ampc_cpu_device());
    Py_RETURN_NONE;
}

PyMethodDef ampc_py_module_methods_cuda[] = {
    {"_cuda_is_available", py_is_available, METH_NOARGS, "True when a CUDA build found at least one GPU."},
    {"_cuda_device_count", py_device_count, METH_NOARGS, "Number of GPUs (0 without a driver or CUDA build)."},
    {"_cuda_current_device", py_current_device, METH_NOARGS, "Index of the current GPU."},
    {"_cuda_set_device", py_set_device, METH_O, "Makes GPU `index` current."},
    {"_cuda_get_device_name", METHOD(py_get_device_name), VA, "Name of a GPU."},
    {"_cuda_synchronize", METHOD(py_synchronize), VA, "Waits for all work on a GPU."},
    {"_cuda_memory_stats", METHOD(py_memory_stats), VA,
     "dict(allocated, peak_allocated, peak, reserved, peak_reserved, num_allocs) in bytes for a GPU."},
    {"_cuda_reset_peak", METHOD(py_reset_peak), VA, "Resets a GPU's peak statistics to the current values."},
    {"_cuda_empty_cache", py_empty_cache, METH_NOARGS, "Returns cached device memory to the driver."},
    {"_cpu_memory_stats", py_cpu_memory_stats, METH_NOARGS,
     "dict(allocated, peak_allocated, peak, reserved, peak_reserved, num_allocs) of ampc's CPU tensor memory."},
    {"_cpu_reset_peak", py_cpu_reset_peak, METH_NOARGS, "Resets the CPU peak statistics to the current values."},
    {NULL, NULL, 0, NULL},
};

/* ampc.OutOfMemoryError (also ampc.cuda.OutOfMemoryError), a RuntimeError like PyTorch's. */
int ampc_py_init_cuda(PyObject *module) {
    ampc_py_out_of_memory_error = PyErr_NewExceptionWithDoc(
        "ampc.OutOfMemoryError", "Raised when a device allocation fails (CUDA out of memory).", PyExc_RuntimeError,
        NULL);
    if (!ampc_py_out_of_memory_error) return -1;
    Py_INCREF(ampc_py_out_of_memory_error); /* one reference for the module, one for the global */
    if (PyModule_AddObject(module, "OutOfMemoryError", ampc_py_out_of_memory_error) < 0) {
        Py_DECREF(ampc_py_out_of_memory_error);
        return -1;
    }
    return 0;
}
