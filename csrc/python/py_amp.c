/* py_amp.c: bindings of the GradScaler's device-side ops (core/amp.h), with PyTorch's names:
 *   _amp_foreach_non_finite_check_and_unscale_(grads, found_inf, inv_scale)
 *   _amp_update_scale_(scale, growth_tracker, found_inf, growth_factor, backoff_factor,
 *                      growth_interval, min_scale=0.0, max_scale=inf)  -> scale */
#include <math.h>

#include "py_common.h"

static PyObject *py_unscale(PyObject *self, PyObject *args) {
    PyObject *seq, *found_obj, *inv_obj;
    if (!PyArg_ParseTuple(args, "OOO:_amp_foreach_non_finite_check_and_unscale_", &seq, &found_obj, &inv_obj))
        return NULL;
    ampc_tensor *found = ampc_py_unwrap(found_obj, "_amp_foreach_non_finite_check_and_unscale_", "found_inf");
    ampc_tensor *inv = ampc_py_unwrap(inv_obj, "_amp_foreach_non_finite_check_and_unscale_", "inv_scale");
    if (!found || !inv) return NULL;
    PyObject *fast = PySequence_Fast(seq, "_amp_foreach_non_finite_check_and_unscale_: grads must be a sequence");
    if (!fast) return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(fast);
    ampc_tensor **grads = (ampc_tensor **)PyMem_Malloc(sizeof(ampc_tensor *) * (size_t)(n ? n : 1));
    PyObject *result = NULL;
    if (!grads) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        grads[i] = ampc_py_unwrap(PySequence_Fast_GET_ITEM(fast, i), "_amp_foreach_non_finite_check_and_unscale_",
                                  "grads");
        if (!grads[i]) goto done;
    }
    if (ampc_py_check(ampc_amp_unscale_and_check_((int)n, grads, found, inv)) < 0) goto done;
    result = Py_NewRef(Py_None);
done:
    PyMem_Free(grads);
    Py_DECREF(fast);
    return result;
}

static PyObject *py_update_scale(PyObject *self, PyObject *args, PyObject *kwargs) {
    static char *kwlist[] = {"scale", "growth_tracker", "found_inf", "growth_factor", "backoff_factor",
                             "growth_interval", "min_scale", "max_scale", "stats", "history", NULL};
    PyObject *scale_obj, *tracker_obj, *found_obj, *stats_obj = Py_None, *history_obj = Py_None;
    double growth, backoff, min_scale = 0.0, max_scale = INFINITY;
    long long interval;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OOOddL|ddOO:_amp_update_scale_", kwlist, &scale_obj, &tracker_obj,
                                     &found_obj, &growth, &backoff, &interval, &min_scale, &max_scale, &stats_obj,
                                     &history_obj))
        return NULL;
    ampc_tensor *stats = NULL, *history = NULL;
    if (stats_obj != Py_None && !(stats = ampc_py_unwrap(stats_obj, "_amp_update_scale_", "stats"))) return NULL;
    if (history_obj != Py_None && !(history = ampc_py_unwrap(history_obj, "_amp_update_scale_", "history")))
        return NULL;
    ampc_tensor *scale = ampc_py_unwrap(scale_obj, "_amp_update_scale_", "scale");
    ampc_tensor *tracker = ampc_py_unwrap(tracker_obj, "_amp_update_scale_", "growth_tracker");
    ampc_tensor *found = ampc_py_unwrap(found_obj, "_amp_update_scale_", "found_inf");
    if (!scale || !tracker || !found) return NULL;
    if (ampc_py_check(ampc_amp_update_scale_stats_(scale, tracker, found, growth, backoff, interval, min_scale,
                                                   max_scale, stats, history)) < 0)
        return NULL;
    return Py_NewRef(scale_obj);
}

PyMethodDef ampc_py_module_methods_amp[] = {
    {"_amp_foreach_non_finite_check_and_unscale_", py_unscale, METH_VARARGS,
     "Multiplies every grad by inv_scale in place and sets found_inf to 1 if any held inf/NaN."},
    {"_amp_update_scale_", (PyCFunction)(void (*)(void))py_update_scale, METH_VARARGS | METH_KEYWORDS,
     "Updates the loss scale and growth tracker in place from found_inf (no host synchronisation)."},
    {NULL, NULL, 0, NULL},
};
