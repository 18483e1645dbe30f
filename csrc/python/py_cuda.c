/* py_cuda.c: the private functions behind ampc.cuda (python/ampc/cuda/): device queries, memory
 * statistics of both devices, streams and events, plus ampc.OutOfMemoryError.
 *
 * Streams cross into Python as integers (the cudaStream_t; 0 is the legacy default stream) and
 * events as capsules that destroy the cudaEvent_t when collected; the classes around them are
 * Python (python/ampc/cuda/streams.py).
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

/* The same for a function that needs the GPU it names. */
static int gpu_index_arg(PyObject *args, PyObject *kwargs, const char *fmt, const char *op, int *index) {
    return index_arg(args, kwargs, fmt, index) < 0 ? -1 : require_gpu(op, *index);
}

/* The CUDA allocator and device `index` names, or NULL when there is no such GPU. */
static const ampc_allocator *cuda_allocator_at(int index, ampc_device *d) {
    const ampc_allocator *a = ampc_get_allocator(AMPC_CUDA);
    if (!a || index < 0 || index >= cuda_count()) return NULL;
    *d = (ampc_device){AMPC_CUDA, (int8_t)index};
    return a;
}

static PyObject *stats_dict(const ampc_memory_stats *s) {
    return Py_BuildValue("{s:L,s:L,s:L,s:L,s:L,s:L,s:L,s:L,s:L,s:L,s:L,s:L,s:L}", "allocated",
                         (long long)s->allocated, "peak_allocated", (long long)s->peak_allocated, "peak",
                         (long long)s->peak_allocated, "reserved", (long long)s->reserved, "peak_reserved",
                         (long long)s->peak_reserved, "num_allocs", (long long)s->num_allocs, "num_frees",
                         (long long)s->num_frees, "active_blocks", (long long)s->active_blocks, "segments",
                         (long long)s->segments, "num_device_allocs", (long long)s->num_device_allocs,
                         "num_device_frees", (long long)s->num_device_frees, "num_alloc_retries",
                         (long long)s->num_alloc_retries, "num_ooms", (long long)s->num_ooms);
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
    if (gpu_index_arg(args, kwargs, "|O:_cuda_get_device_name", "get_device_name", &index) < 0) return NULL;
#ifdef AMPC_WITH_CUDA
    char name[256];
    if (ampc_py_check(ampc_cuda_device_name(index, name, sizeof name)) < 0) return NULL;
    return PyUnicode_FromString(name);
#else
    Py_RETURN_NONE; /* unreachable: no devices without CUDA */
#endif
}

/* Waits for all work on a GPU, then raises an error a kernel reported (an index out of range). */
static PyObject *py_synchronize(PyObject *m, PyObject *args, PyObject *kwargs) {
    int index;
    if (gpu_index_arg(args, kwargs, "|O:_cuda_synchronize", "synchronize", &index) < 0) return NULL;
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
    ampc_memory_stats s;
    memset(&s, 0, sizeof s);
    ampc_device d;
    const ampc_allocator *a = cuda_allocator_at(index, &d);
    if (a) a->stats(d, &s);
    return stats_dict(&s);
}

static PyObject *py_reset_peak(PyObject *m, PyObject *args, PyObject *kwargs) {
    int index;
    if (index_arg(args, kwargs, "|O:_cuda_reset_peak", &index) < 0) return NULL;
    ampc_device d;
    const ampc_allocator *a = cuda_allocator_at(index, &d);
    if (a) a->reset_peak(d);
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

/* (free, total) bytes of a GPU, as the driver reports them. */
static PyObject *py_mem_get_info(PyObject *m, PyObject *args, PyObject *kwargs) {
    int index;
    if (gpu_index_arg(args, kwargs, "|O:_cuda_mem_get_info", "mem_get_info", &index) < 0) return NULL;
#ifdef AMPC_WITH_CUDA
    size_t free_b = 0, total_b = 0;
    if (ampc_py_check(ampc_cuda_mem_get_info(index, &free_b, &total_b)) < 0) return NULL;
    return Py_BuildValue("(KK)", (unsigned long long)free_b, (unsigned long long)total_b);
#else
    Py_RETURN_NONE;
#endif
}

/* Pinned host memory (all zero without a GPU). */
static PyObject *py_host_memory_stats(PyObject *m, PyObject *unused) {
    ampc_memory_stats s;
    memset(&s, 0, sizeof s);
    const ampc_allocator *a = ampc_get_pinned_allocator();
    if (a) a->stats(ampc_cpu_device(), &s);
    return stats_dict(&s);
}

static PyObject *py_host_empty_cache(PyObject *m, PyObject *unused) {
    const ampc_allocator *a = ampc_get_pinned_allocator();
    if (a) a->empty_cache(ampc_cpu_device());
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

/* ------------------------------------------------------------------ streams */

/* A stream handle (int; 0 = legacy default) as the stream. */
static int stream_handle(PyObject *handle, void **stream) {
    *stream = PyLong_AsVoidPtr(handle);
    return !*stream && PyErr_Occurred() ? -1 : 0;
}

/* (device, stream) arguments: a device index and a stream handle. */
static int stream_args(PyObject *args, const char *fmt, const char *op, int *device, void **stream) {
    PyObject *handle;
    if (!PyArg_ParseTuple(args, fmt, device, &handle)) return -1;
    if (require_gpu(op, *device) < 0) return -1;
    return stream_handle(handle, stream);
}

static PyObject *py_stream_create(PyObject *m, PyObject *args) {
    int device, priority;
    if (!PyArg_ParseTuple(args, "ii:_cuda_stream_create", &device, &priority)) return NULL;
    if (require_gpu("Stream", device) < 0) return NULL;
#ifdef AMPC_WITH_CUDA
    void *s = NULL;
    if (ampc_py_check(ampc_cuda_stream_create(device, priority, &s)) < 0) return NULL;
    return PyLong_FromVoidPtr(s);
#else
    Py_RETURN_NONE;
#endif
}

static PyObject *py_current_stream(PyObject *m, PyObject *args) {
    int device;
    if (!PyArg_ParseTuple(args, "i:_cuda_current_stream", &device)) return NULL;
    if (require_gpu("current_stream", device) < 0) return NULL;
#ifdef AMPC_WITH_CUDA
    return PyLong_FromVoidPtr(ampc_cuda_current_stream(device));
#else
    Py_RETURN_NONE;
#endif
}

static PyObject *py_set_current_stream(PyObject *m, PyObject *args) {
    int device;
    void *s;
    if (stream_args(args, "iO:_cuda_set_current_stream", "set_stream", &device, &s) < 0) return NULL;
#ifdef AMPC_WITH_CUDA
    ampc_cuda_set_current_stream(device, s);
#endif
    Py_RETURN_NONE;
}

static PyObject *py_stream_synchronize(PyObject *m, PyObject *args) {
    int device;
    void *s;
    if (stream_args(args, "iO:_cuda_stream_synchronize", "Stream.synchronize", &device, &s) < 0) return NULL;
#ifdef AMPC_WITH_CUDA
    ampc_status st;
    Py_BEGIN_ALLOW_THREADS
    st = ampc_cuda_stream_synchronize(device, s);
    Py_END_ALLOW_THREADS
    if (ampc_py_check(st) < 0) return NULL;
#endif
    Py_RETURN_NONE;
}

static PyObject *py_stream_query(PyObject *m, PyObject *args) {
    int device;
    void *s;
    if (stream_args(args, "iO:_cuda_stream_query", "Stream.query", &device, &s) < 0) return NULL;
    bool done = true;
#ifdef AMPC_WITH_CUDA
    if (ampc_py_check(ampc_cuda_stream_query(device, s, &done)) < 0) return NULL;
#endif
    return PyBool_FromLong(done);
}

static PyObject *py_stream_priority(PyObject *m, PyObject *args) {
    int device;
    void *s;
    if (stream_args(args, "iO:_cuda_stream_priority", "Stream.priority", &device, &s) < 0) return NULL;
    int p = 0;
#ifdef AMPC_WITH_CUDA
    if (ampc_py_check(ampc_cuda_stream_priority(device, s, &p)) < 0) return NULL;
#endif
    return PyLong_FromLong(p);
}

static PyObject *py_stream_priority_range(PyObject *m, PyObject *args) {
    int device;
    if (!PyArg_ParseTuple(args, "i:_cuda_stream_priority_range", &device)) return NULL;
    if (require_gpu("Stream.priority_range", device) < 0) return NULL;
    int least = 0, greatest = 0;
#ifdef AMPC_WITH_CUDA
    if (ampc_py_check(ampc_cuda_priority_range(device, &least, &greatest)) < 0) return NULL;
#endif
    return Py_BuildValue("(ii)", least, greatest);
}

/* ------------------------------------------------------------------ events */

#define EVENT_CAPSULE "ampc.cuda.event"

typedef struct py_event {
    void *event;
    int device;
} py_event;

#ifdef AMPC_WITH_CUDA
static void event_capsule_destructor(PyObject *capsule) {
    py_event *e = (py_event *)PyCapsule_GetPointer(capsule, EVENT_CAPSULE);
    if (!e) {
        PyErr_Clear();
        return;
    }
    ampc_cuda_event_destroy(e->device, e->event);
    PyMem_Free(e);
}
#endif

static py_event *event_arg(PyObject *o) {
    py_event *e = (py_event *)PyCapsule_GetPointer(o, EVENT_CAPSULE);
    if (!e) {
        PyErr_Clear();
        PyErr_SetString(PyExc_TypeError, "expected an ampc CUDA event handle (made by _cuda_event_create)");
    }
    return e;
}

static PyObject *py_event_create(PyObject *m, PyObject *args) {
    int device, timing, blocking;
    if (!PyArg_ParseTuple(args, "ipp:_cuda_event_create", &device, &timing, &blocking)) return NULL;
    if (require_gpu("Event", device) < 0) return NULL;
#ifdef AMPC_WITH_CUDA
    void *ev = NULL;
    if (ampc_py_check(ampc_cuda_event_create(device, timing != 0, blocking != 0, &ev)) < 0) return NULL;
    py_event *e = (py_event *)PyMem_Malloc(sizeof *e);
    if (!e) {
        ampc_cuda_event_destroy(device, ev);
        return PyErr_NoMemory();
    }
    e->event = ev;
    e->device = device;
    PyObject *capsule = PyCapsule_New(e, EVENT_CAPSULE, event_capsule_destructor);
    if (!capsule) {
        ampc_cuda_event_destroy(device, ev);
        PyMem_Free(e);
    }
    return capsule;
#else
    Py_RETURN_NONE;
#endif
}

static PyObject *py_event_record(PyObject *m, PyObject *args) {
    PyObject *ev_o, *handle;
    int device;
    if (!PyArg_ParseTuple(args, "OiO:_cuda_event_record", &ev_o, &device, &handle)) return NULL;
    py_event *e = event_arg(ev_o);
    if (!e) return NULL;
    if (device != e->device)
        return PyErr_Format(PyExc_RuntimeError,
                            "Event device index %d does not match recording stream's device index %d", e->device,
                            device);
    void *s;
    if (stream_handle(handle, &s) < 0) return NULL;
#ifdef AMPC_WITH_CUDA
    if (ampc_py_check(ampc_cuda_event_record(e->event, device, s)) < 0) return NULL;
#endif
    Py_RETURN_NONE;
}

static PyObject *py_event_synchronize(PyObject *m, PyObject *ev_o) {
    py_event *e = event_arg(ev_o);
    if (!e) return NULL;
#ifdef AMPC_WITH_CUDA
    ampc_status st;
    Py_BEGIN_ALLOW_THREADS
    st = ampc_cuda_event_synchronize(e->event);
    Py_END_ALLOW_THREADS
    if (ampc_py_check(st) < 0) return NULL;
#endif
    Py_RETURN_NONE;
}

static PyObject *py_event_query(PyObject *m, PyObject *ev_o) {
    py_event *e = event_arg(ev_o);
    if (!e) return NULL;
    bool done = true;
#ifdef AMPC_WITH_CUDA
    if (ampc_py_check(ampc_cuda_event_query(e->event, &done)) < 0) return NULL;
#endif
    return PyBool_FromLong(done);
}

static PyObject *py_event_elapsed_time(PyObject *m, PyObject *args) {
    PyObject *a_o, *b_o;
    if (!PyArg_ParseTuple(args, "OO:_cuda_event_elapsed_time", &a_o, &b_o)) return NULL;
    py_event *a = event_arg(a_o), *b = a ? event_arg(b_o) : NULL;
    if (!a || !b) return NULL;
    if (a->device != b->device)
        return PyErr_Format(PyExc_RuntimeError, "elapsed_time: the events are on different devices (%d and %d)",
                            a->device, b->device);
    float ms = 0.0f;
#ifdef AMPC_WITH_CUDA
    ampc_status st;
    Py_BEGIN_ALLOW_THREADS
    st = ampc_cuda_event_elapsed_time(a->event, b->event, &ms);
    Py_END_ALLOW_THREADS
    if (ampc_py_check(st) < 0) return NULL;
#endif
    return PyFloat_FromDouble((double)ms);
}

static PyObject *py_stream_wait_event(PyObject *m, PyObject *args) {
    int device;
    PyObject *handle, *ev_o;
    if (!PyArg_ParseTuple(args, "iOO:_cuda_stream_wait_event", &device, &handle, &ev_o)) return NULL;
    if (require_gpu("Stream.wait_event", device) < 0) return NULL;
    py_event *e = event_arg(ev_o);
    if (!e) return NULL;
    void *s;
    if (stream_handle(handle, &s) < 0) return NULL;
#ifdef AMPC_WITH_CUDA
    if (ampc_py_check(ampc_cuda_stream_wait_event(device, s, e->event)) < 0) return NULL;
#endif
    Py_RETURN_NONE;
}

static PyObject *py_event_handle(PyObject *m, PyObject *ev_o) {
    py_event *e = event_arg(ev_o);
    return e ? PyLong_FromVoidPtr(e->event) : NULL;
}

PyMethodDef ampc_py_module_methods_cuda[] = {
    {"_cuda_is_available", py_is_available, METH_NOARGS, "True when a CUDA build found at least one GPU."},
    {"_cuda_device_count", py_device_count, METH_NOARGS, "Number of GPUs (0 without a driver or CUDA build)."},
    {"_cuda_current_device", py_current_device, METH_NOARGS, "Index of the current GPU."},
    {"_cuda_set_device", py_set_device, METH_O, "Makes GPU `index` current."},
    {"_cuda_get_device_name", METHOD(py_get_device_name), VA, "Name of a GPU."},
    {"_cuda_synchronize", METHOD(py_synchronize), VA,
     "Waits for all work on a GPU, then raises an error reported by a kernel."},
    {"_cuda_memory_stats", METHOD(py_memory_stats), VA,
     "dict(allocated, peak_allocated, peak, reserved, peak_reserved, num_allocs, num_frees, active_blocks, segments, "
     "num_device_allocs, num_device_frees, num_alloc_retries, num_ooms) in bytes or counts for a GPU."},
    {"_cuda_reset_peak", METHOD(py_reset_peak), VA, "Resets a GPU's peak statistics to the current values."},
    {"_cuda_empty_cache", py_empty_cache, METH_NOARGS, "Returns cached device memory to the driver."},
    {"_cuda_mem_get_info", METHOD(py_mem_get_info), VA, "(free, total) device memory in bytes."},
    {"_cuda_host_memory_stats", py_host_memory_stats, METH_NOARGS, "Statistics of the pinned host memory cache."},
    {"_cuda_host_empty_cache", py_host_empty_cache, METH_NOARGS, "Returns cached pinned host memory to the driver."},
    {"_cuda_stream_create", py_stream_create, METH_VARARGS, "(device, priority) -> stream handle from the pool."},
    {"_cuda_current_stream", py_current_stream, METH_VARARGS, "(device) -> the current stream's handle (0: default)."},
    {"_cuda_set_current_stream", py_set_current_stream, METH_VARARGS, "(device, stream) makes a stream current."},
    {"_cuda_stream_synchronize", py_stream_synchronize, METH_VARARGS, "(device, stream) waits for a stream."},
    {"_cuda_stream_query", py_stream_query, METH_VARARGS, "(device, stream) -> True when its work is done."},
    {"_cuda_stream_priority", py_stream_priority, METH_VARARGS, "(device, stream) -> its priority."},
    {"_cuda_stream_priority_range", py_stream_priority_range, METH_VARARGS, "(device) -> (least, greatest)."},
    {"_cuda_stream_wait_event", py_stream_wait_event, METH_VARARGS, "(device, stream, event): later work waits."},
    {"_cuda_event_create", py_event_create, METH_VARARGS, "(device, enable_timing, blocking) -> event handle."},
    {"_cuda_event_record", py_event_record, METH_VARARGS, "(event, device, stream) records the event."},
    {"_cuda_event_synchronize", py_event_synchronize, METH_O, "Waits for an event."},
    {"_cuda_event_query", py_event_query, METH_O, "True when an event completed."},
    {"_cuda_event_elapsed_time", py_event_elapsed_time, METH_VARARGS, "(start, end) -> milliseconds between."},
    {"_cuda_event_handle", py_event_handle, METH_O, "The cudaEvent_t as an int."},
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
