/* py_autocast.c: bindings of autocast's thread-local state and policy table (core/autocast.h),
 * with PyTorch's function names (torch.is_autocast_enabled & co.). The context manager itself
 * is Python (python/ampc/amp/autocast_mode.py). */
#include "py_common.h"

/* torch's device-type names (c10/core/DeviceType.cpp's parse order): a known name ampc has no
 * autocast for is "unsupported", anything else is not a device type at all. */
static const char *const torch_device_types =
    "cpu, cuda, ipu, xpu, mkldnn, opengl, opencl, ideep, hip, ve, fpga, maia, xla, lazy, vulkan, mps, meta, hpu, "
    "mtia, privateuseone";

static int known_torch_device_type(const char *s) {
    static const char *const names[] = {"cpu", "cuda", "ipu", "xpu", "mkldnn", "opengl", "opencl", "ideep", "hip",
                                        "ve", "fpga", "maia", "xla", "lazy", "vulkan", "mps", "meta", "hpu", "mtia",
                                        "privateuseone"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (strcmp(s, names[i]) == 0) return 1;
    return 0;
}

static int parse_device_type(PyObject *obj, ampc_device_type *out, const char *op) {
    if (!PyUnicode_Check(obj)) {
        PyErr_Format(PyExc_TypeError, "%s(): argument 'device_type' (position 1) must be str, not %s", op,
                     Py_TYPE(obj)->tp_name);
        return -1;
    }
    const char *s = PyUnicode_AsUTF8(obj);
    if (!s) return -1;
    if (strcmp(s, "cpu") == 0) *out = AMPC_CPU;
    else if (strcmp(s, "cuda") == 0) *out = AMPC_CUDA;
    else if (known_torch_device_type(s)) {
        PyErr_Format(PyExc_RuntimeError, "User specified an unsupported autocast device_type '%s'", s);
        return -1;
    } else {
        PyErr_Format(PyExc_RuntimeError, "Expected one of %s device type at start of device string: %s",
                     torch_device_types, s);
        return -1;
    }
    return 0;
}

static PyObject *py_is_enabled(PyObject *self, PyObject *args, PyObject *kwargs) {
    static char *kw[] = {"device_type", NULL};
    PyObject *dev_obj = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|O:is_autocast_enabled", kw, &dev_obj)) return NULL;
    ampc_device_type dev = AMPC_CUDA; /* torch.is_autocast_enabled() with no argument asks about CUDA */
    if (dev_obj && parse_device_type(dev_obj, &dev, "is_autocast_enabled") < 0) return NULL;
    return PyBool_FromLong(ampc_autocast_is_enabled(dev));
}

static PyObject *py_set_enabled(PyObject *self, PyObject *args, PyObject *kwargs) {
    static char *kw[] = {"device_type", "enabled", NULL};
    PyObject *dev_obj;
    int on;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "Op:set_autocast_enabled", kw, &dev_obj, &on)) return NULL;
    ampc_device_type dev;
    if (parse_device_type(dev_obj, &dev, "set_autocast_enabled") < 0) return NULL;
    ampc_autocast_set_enabled(dev, on);
    Py_RETURN_NONE;
}

static PyObject *py_get_dtype(PyObject *self, PyObject *args, PyObject *kwargs) {
    static char *kw[] = {"device_type", NULL};
    PyObject *dev_obj;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O:get_autocast_dtype", kw, &dev_obj)) return NULL;
    ampc_device_type dev;
    if (parse_device_type(dev_obj, &dev, "get_autocast_dtype") < 0) return NULL;
    return ampc_py_dtype_object(ampc_autocast_get_dtype(dev));
}

static PyObject *py_set_dtype(PyObject *self, PyObject *args, PyObject *kwargs) {
    static char *kw[] = {"device_type", "dtype", NULL};
    PyObject *dev_obj, *dt_obj;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OO:set_autocast_dtype", kw, &dev_obj, &dt_obj)) return NULL;
    ampc_device_type dev;
    ampc_dtype dt;
    if (parse_device_type(dev_obj, &dev, "set_autocast_dtype") < 0 || ampc_py_dtype(dt_obj, &dt, "set_autocast_dtype") < 0)
        return NULL;
    /* Any floating dtype, as torch.set_autocast_dtype: a region disabled for an unsupported
     * dtype (CPU float64) still records it; enabled regions only get fp16/bf16/fp32 (autocast()). */
    if (!ampc_dtype_is_floating(dt)) {
        PyErr_Format(PyExc_RuntimeError, "set_autocast_dtype: expected a floating dtype, got %s", ampc_dtype_name(dt));
        return NULL;
    }
    ampc_autocast_set_dtype(dev, dt);
    Py_RETURN_NONE;
}

/* The legacy fast getters (torch.get_autocast_gpu_dtype / get_autocast_cpu_dtype). */
static PyObject *py_get_gpu_dtype(PyObject *self, PyObject *unused) {
    return ampc_py_dtype_object(ampc_autocast_get_dtype(AMPC_CUDA));
}

static PyObject *py_get_cpu_dtype(PyObject *self, PyObject *unused) {
    return ampc_py_dtype_object(ampc_autocast_get_dtype(AMPC_CPU));
}

static PyObject *py_is_cache_enabled(PyObject *self, PyObject *unused) {
    return PyBool_FromLong(ampc_autocast_is_cache_enabled());
}

static PyObject *py_set_cache_enabled(PyObject *self, PyObject *arg) {
    int on = PyObject_IsTrue(arg);
    if (on < 0) return NULL;
    ampc_autocast_set_cache_enabled(on);
    Py_RETURN_NONE;
}

static PyObject *py_increment_nesting(PyObject *self, PyObject *unused) {
    return PyLong_FromLong(ampc_autocast_increment_nesting());
}

static PyObject *py_decrement_nesting(PyObject *self, PyObject *unused) {
    return PyLong_FromLong(ampc_autocast_decrement_nesting());
}

static PyObject *py_clear_cache(PyObject *self, PyObject *unused) {
    ampc_autocast_clear_cache();
    Py_RETURN_NONE;
}

static PyObject *py_cache_size(PyObject *self, PyObject *unused) { return PyLong_FromLongLong(ampc_autocast_cache_size()); }

/* {name: policy} of the whole table on a device type ("cuda" by default: the AUTOCAST column; "cpu":
 * torch's CPU lists), for tests and documentation. */
static PyObject *py_policy_table(PyObject *self, PyObject *args) {
    static const char *const names[] = {NULL, "lower_precision_fp", "fp32", "fp32_set_opt_dtype", "promote", "banned"};
    const char *device_type = "cuda";
    if (!PyArg_ParseTuple(args, "|s", &device_type)) return NULL;
    if (strcmp(device_type, "cuda") != 0 && strcmp(device_type, "cpu") != 0)
        return PyErr_Format(PyExc_ValueError, "_autocast_policy_table: device type 'cuda' or 'cpu', got '%s'", device_type);
    ampc_device_type dev = strcmp(device_type, "cpu") == 0 ? AMPC_CPU : AMPC_CUDA;
    PyObject *d = PyDict_New();
    if (!d) return NULL;
    for (int i = 0; i < AMPC_NUM_OPS; i++) {
        ampc_autocast_policy policy = ampc_op_autocast_policy_on((ampc_op)i, dev);
        if (policy == AMPC_AC_POLICY_NONE) continue;
        PyObject *v = PyUnicode_FromString(names[policy]);
        if (!v || PyDict_SetItemString(d, ampc_op_name((ampc_op)i), v) < 0) {
            Py_XDECREF(v);
            Py_DECREF(d);
            return NULL;
        }
        Py_DECREF(v);
    }
    return d;
}

PyMethodDef ampc_py_module_methods_autocast[] = {
    {"is_autocast_enabled", (PyCFunction)(void (*)(void))py_is_enabled, METH_VARARGS | METH_KEYWORDS, "Whether autocast is on for a device type (this thread)."},
    {"set_autocast_enabled", (PyCFunction)(void (*)(void))py_set_enabled, METH_VARARGS | METH_KEYWORDS, "Turns autocast on or off for a device type."},
    {"get_autocast_dtype", (PyCFunction)(void (*)(void))py_get_dtype, METH_VARARGS | METH_KEYWORDS, "The lower-precision dtype autocast uses on a device type."},
    {"set_autocast_dtype", (PyCFunction)(void (*)(void))py_set_dtype, METH_VARARGS | METH_KEYWORDS, "Sets the lower-precision dtype of a device type."},
    {"get_autocast_gpu_dtype", py_get_gpu_dtype, METH_NOARGS, "The autocast dtype of CUDA (legacy getter)."},
    {"get_autocast_cpu_dtype", py_get_cpu_dtype, METH_NOARGS, "The autocast dtype of the CPU (legacy getter)."},
    {"is_autocast_cache_enabled", py_is_cache_enabled, METH_NOARGS, "Whether the weight-cast cache is on."},
    {"set_autocast_cache_enabled", py_set_cache_enabled, METH_O, "Turns the weight-cast cache on or off."},
    {"autocast_increment_nesting", py_increment_nesting, METH_NOARGS, "Enters an autocast region; returns depth."},
    {"autocast_decrement_nesting", py_decrement_nesting, METH_NOARGS, "Leaves an autocast region; returns depth."},
    {"clear_autocast_cache", py_clear_cache, METH_NOARGS, "Drops every cached weight cast."},
    {"_autocast_cache_size", py_cache_size, METH_NOARGS, "Number of cached weight casts (for tests)."},
    {"_autocast_policy_table", py_policy_table, METH_VARARGS, "The cast policy of every autocast op on a device type (\"cuda\": the op table's column, \"cpu\": torch's CPU lists)."},
    {NULL, NULL, 0, NULL},
};
