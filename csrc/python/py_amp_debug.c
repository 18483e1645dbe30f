/* py_amp_debug.c: the dispatch observer behind ampc.amp.debug (python/ampc/amp/debug.py).
 *
 * _amp_debug_start(callback) installs an observer (core/dispatch.h) that, after every kernel call,
 * hands callback one record per call:
 *   (op name, backward node name or None, device, autocast enabled on that device,
 *    input dtypes, [(dtype, shape, numel, n_nan, n_inf, n_zero, n_subnormal, max_abs) per floating output])
 * _amp_debug_stop() removes it. Kernels on tensor lists (fused optimizers, multi-tensor norms)
 * are recorded without their outputs. The census (core/numerics.c) reads device outputs back to
 * the host, so debug mode synchronises after each kernel: it is for finding a problem, not for
 * training runs; off, it costs nothing but one atomic load per dispatch. */
#include "py_common.h"

#include "../core/autocast.h"
#include "../core/autograd.h"
#include "../core/numerics.h"

static PyObject *debug_callback; /* owned; NULL when off */

static PyObject *shape_tuple(const ampc_tensor *t) {
    PyObject *s = PyTuple_New(t->ndim);
    if (!s) return NULL;
    for (int d = 0; d < t->ndim; d++) PyTuple_SET_ITEM(s, d, PyLong_FromLongLong(t->shape[d]));
    return s;
}

static PyObject *output_record(const ampc_tensor *t) {
    ampc_numerics r;
    if (ampc_tensor_numerics(t, &r) != AMPC_OK) return ampc_py_raise();
    PyObject *shape = shape_tuple(t);
    if (!shape) return NULL;
    return Py_BuildValue("(sNLLLLLd)", ampc_dtype_name(t->dtype), shape, (long long)r.numel, (long long)r.n_nan,
                         (long long)r.n_inf, (long long)r.n_zero, (long long)r.n_subnormal, r.max_abs);
}

static PyObject *call_record(ampc_op op, const ampc_dispatch_tensors *args) {
    const ampc_node *node = ampc_running_node();
    ampc_device dev = ampc_cpu_device();
    const ampc_tensor *first = NULL;
    for (int i = 0; i < args->n_out && !first; i++) first = args->out[i];
    for (int i = 0; i < args->n_in && !first; i++) first = args->in[i];
    if (!first && args->n_list) first = args->list[0];
    if (first) dev = first->device;
    char dev_name[32];
    ampc_device_str(dev, dev_name, sizeof dev_name);
    PyObject *in_dtypes = PyList_New(0), *outs = PyList_New(0);
    if (!in_dtypes || !outs) goto fail;
    for (int i = 0; i < args->n_in; i++) {
        if (!args->in[i]) continue;
        PyObject *name = PyUnicode_FromString(ampc_dtype_name(args->in[i]->dtype));
        if (!name || PyList_Append(in_dtypes, name) < 0) {
            Py_XDECREF(name);
            goto fail;
        }
        Py_DECREF(name);
    }
    for (int i = 0; i < args->n_out; i++) {
        const ampc_tensor *t = args->out[i];
        if (!t || !ampc_dtype_is_floating(t->dtype)) continue;
        PyObject *rec = output_record(t);
        if (!rec || PyList_Append(outs, rec) < 0) {
            Py_XDECREF(rec);
            goto fail;
        }
        Py_DECREF(rec);
    }
    return Py_BuildValue("(szsONN)", ampc_op_name(op), node ? ampc_node_name(node) : NULL, dev_name,
                         ampc_autocast_is_enabled((ampc_device_type)dev.type) ? Py_True : Py_False, in_dtypes, outs);
fail:
    Py_XDECREF(in_dtypes);
    Py_XDECREF(outs);
    return NULL;
}

/* Runs inside ampc_dispatch_typed, possibly with the GIL released by the caller. A failure in the
 * record or the callback cannot fail the op, which has already run: it is reported as
 * unraisable (sys.unraisablehook) and the op's result stands. */
static void observe(ampc_op op, const ampc_dispatch_tensors *args, void *ctx) {
    (void)ctx;
    PyGILState_STATE g = PyGILState_Ensure();
    PyObject *cb = debug_callback;
    if (cb) {
        Py_INCREF(cb);
        PyObject *saved_type, *saved_value, *saved_tb; /* an error the caller is about to raise */
        PyErr_Fetch(&saved_type, &saved_value, &saved_tb);
        PyObject *rec = call_record(op, args);
        PyObject *res = rec ? PyObject_CallOneArg(cb, rec) : NULL;
        if (!res) PyErr_WriteUnraisable(cb);
        Py_XDECREF(res);
        Py_XDECREF(rec);
        Py_DECREF(cb);
        PyErr_Restore(saved_type, saved_value, saved_tb);
    }
    PyGILState_Release(g);
}

static PyObject *py_amp_debug_start(PyObject *self, PyObject *callback) {
    if (!PyCallable_Check(callback)) return PyErr_Format(PyExc_TypeError, "_amp_debug_start: expected a callable");
    if (debug_callback)
        return PyErr_Format(PyExc_RuntimeError, "ampc.amp.debug: a debug session is already active (they do not nest)");
    Py_INCREF(callback);
    debug_callback = callback;
    ampc_set_dispatch_observer(observe, NULL);
    Py_RETURN_NONE;
}

static PyObject *py_amp_debug_stop(PyObject *self, PyObject *unused) {
    ampc_set_dispatch_observer(NULL, NULL);
    Py_CLEAR(debug_callback);
    Py_RETURN_NONE;
}

PyMethodDef ampc_py_module_methods_amp_debug[] = {
    {"_amp_debug_start", py_amp_debug_start, METH_O, "Install the ampc.amp.debug dispatch observer."},
    {"_amp_debug_stop", py_amp_debug_stop, METH_NOARGS, "Remove the ampc.amp.debug dispatch observer."},
    {NULL, NULL, 0, NULL},
};
