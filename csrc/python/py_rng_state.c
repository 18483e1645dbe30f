/* py_rng_state.c: the generator state bindings: get_rng_state / set_rng_state (a device's
 * generator as a uint8 tensor: the CPU's MT19937 serialised in ampc's layout, core/mt19937.h, a
 * CUDA device's 16 bytes of (seed, offset), the layout of torch's CUDA state), and the helpers
 * ampc.Generator keeps its own state with (python/ampc/random.py). */
#include "py_common.h"

#include "core/mt19937.h"

#define KW(...) static char *kwlist[] = {__VA_ARGS__, NULL}
#define METHOD(name) (PyCFunction)(void (*)(void))(name)
#define VA (METH_VARARGS | METH_KEYWORDS)

/* A state as a uint8 tensor: the CPU's is ampc_cpu_generator serialised (mt19937.h), a CUDA
 * device's 16 bytes (seed, offset), the layout of torch's CUDA generator state. */
static PyObject *state_tensor(const uint8_t *bytes, size_t n) {
    int64_t shape[1] = {(int64_t)n};
    ampc_tensor *t = ampc_empty(1, shape, AMPC_UINT8, ampc_cpu_device());
    if (!t) return ampc_py_raise();
    memcpy(ampc_data_ptr(t), bytes, n);
    return ampc_py_wrap(t);
}

static PyObject *py_get_rng_state(PyObject *m, PyObject *args, PyObject *kwargs) {
    KW("device");
    PyObject *devobj = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|O:get_rng_state", kwlist, &devobj)) return NULL;
    ampc_device dev;
    if (ampc_py_device(devobj, ampc_cpu_device(), &dev, "get_rng_state") < 0) return NULL;
    uint8_t buf[AMPC_CPU_RNG_STATE_BYTES];
    ampc_rng_state_get(dev, buf);
    return state_tensor(buf, ampc_rng_state_size(dev));
}

/* The bytes of a uint8 state tensor (any device, any strides), or NULL with an error set. */
static PyObject *state_bytes(PyObject *state, const char *op) {
    ampc_tensor *t = ampc_py_unwrap(state, op, "new_state");
    if (!t) return NULL;
    if (t->dtype != AMPC_UINT8) {
        PyErr_Format(PyExc_TypeError, "expected a torch.ByteTensor, but got %s", ampc_dtype_torch_name(t->dtype));
        return NULL;
    }
    ampc_tensor *host = ampc_to(t, AMPC_UINT8, ampc_cpu_device(), false);
    ampc_tensor *c = host ? ampc_contiguous(host) : NULL;
    ampc_tensor_decref(host);
    if (!c) return ampc_py_raise();
    PyObject *b = PyBytes_FromStringAndSize((const char *)ampc_data_ptr(c), (Py_ssize_t)ampc_numel(c));
    ampc_tensor_decref(c);
    return b;
}

static PyObject *py_set_rng_state(PyObject *m, PyObject *args, PyObject *kwargs) {
    KW("new_state", "device");
    PyObject *state, *devobj = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|O:set_rng_state", kwlist, &state, &devobj)) return NULL;
    ampc_device dev;
    if (ampc_py_device(devobj, ampc_cpu_device(), &dev, "set_rng_state") < 0) return NULL;
    PyObject *b = state_bytes(state, "set_rng_state");
    if (!b) return NULL;
    ampc_status st = ampc_rng_state_set(dev, (const uint8_t *)PyBytes_AS_STRING(b), (size_t)PyBytes_GET_SIZE(b));
    Py_DECREF(b);
    if (st != AMPC_OK) return ampc_py_raise();
    Py_RETURN_NONE;
}

/* _rng_state_for_seed(device, seed) -> bytes: the state manual_seed(seed) gives that device. */
static PyObject *py_rng_state_for_seed(PyObject *m, PyObject *args) {
    PyObject *devobj;
    unsigned long long seed;
    if (!PyArg_ParseTuple(args, "OK:_rng_state_for_seed", &devobj, &seed)) return NULL;
    ampc_device dev;
    if (ampc_py_device(devobj, ampc_cpu_device(), &dev, "manual_seed") < 0) return NULL;
    uint8_t buf[AMPC_CPU_RNG_STATE_BYTES];
    ampc_rng_state_for_seed(dev, (uint64_t)seed, buf);
    return PyBytes_FromStringAndSize((const char *)buf, (Py_ssize_t)ampc_rng_state_size(dev));
}

/* _rng_state_bytes(device, state tensor) -> bytes, checked to be a state of that device. */
static PyObject *py_rng_state_bytes(PyObject *m, PyObject *args) {
    PyObject *devobj, *state;
    if (!PyArg_ParseTuple(args, "OO:_rng_state_bytes", &devobj, &state)) return NULL;
    ampc_device dev;
    if (ampc_py_device(devobj, ampc_cpu_device(), &dev, "set_state") < 0) return NULL;
    PyObject *b = state_bytes(state, "set_state");
    if (!b) return NULL;
    /* validate by installing it on a scratch copy of the device's state */
    uint8_t saved[AMPC_CPU_RNG_STATE_BYTES];
    ampc_rng_state_get(dev, saved);
    ampc_status st = ampc_rng_state_set(dev, (const uint8_t *)PyBytes_AS_STRING(b), (size_t)PyBytes_GET_SIZE(b));
    ampc_rng_state_set(dev, saved, ampc_rng_state_size(dev));
    if (st != AMPC_OK) {
        Py_DECREF(b);
        return ampc_py_raise();
    }
    return b;
}

/* _rng_state_tensor(bytes) -> uint8 tensor; _rng_state_seed(bytes) -> the seed it was seeded with. */
static PyObject *py_rng_state_tensor(PyObject *m, PyObject *arg) {
    if (!PyBytes_Check(arg)) {
        PyErr_SetString(PyExc_TypeError, "_rng_state_tensor: expected bytes");
        return NULL;
    }
    return state_tensor((const uint8_t *)PyBytes_AS_STRING(arg), (size_t)PyBytes_GET_SIZE(arg));
}

static PyObject *py_rng_state_seed(PyObject *m, PyObject *arg) {
    if (!PyBytes_Check(arg) || PyBytes_GET_SIZE(arg) < 8) {
        PyErr_SetString(PyExc_TypeError, "_rng_state_seed: expected the bytes of a generator state");
        return NULL;
    }
    return PyLong_FromUnsignedLongLong(ampc_rng_state_seed((const uint8_t *)PyBytes_AS_STRING(arg)));
}

PyMethodDef ampc_py_module_methods_rng_state[] = {
    {"get_rng_state", METHOD(py_get_rng_state), VA, "The device generator's state as a uint8 tensor."},
    {"_rng_state_for_seed", py_rng_state_for_seed, METH_VARARGS, "The state bytes manual_seed(seed) gives a device."},
    {"_rng_state_bytes", py_rng_state_bytes, METH_VARARGS, "A state tensor's bytes, checked for a device."},
    {"_rng_state_tensor", py_rng_state_tensor, METH_O, "State bytes as a uint8 tensor."},
    {"_rng_state_seed", py_rng_state_seed, METH_O, "The seed of state bytes."},
    {"set_rng_state", METHOD(py_set_rng_state), VA, "Restores a state returned by get_rng_state."},
    {NULL, NULL, 0, NULL},
};
