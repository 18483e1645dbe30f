/* py_creation.c: the module functions that make tensors (tensor, as_tensor, empty/zeros/ones/
 * full and their _like forms, arange, linspace, eye) and the dtype queries that go with them
 * (default dtype, result_type, promote_types, can_cast). Reading Python data into a tensor
 * (ampc.tensor's data argument) is py_tensor_data.c's job. */
#include "py_internal.h"
#include "py_numpy.h"

#define KW(...) static char *kwlist[] = {__VA_ARGS__, NULL}
#define METHOD(name) (PyCFunction)(void (*)(void))(name)
#define VA (METH_VARARGS | METH_KEYWORDS)

/* The creation factories' keywords (no generator); keys in `own` (NULL-terminated, or NULL) are
 * the factory's other arguments, which it reads itself. */
static int parse_factory_kwargs(PyObject *kwargs, const char *op, int takes_size, const char *const *own,
                                ampc_py_factory_kw *kw) {
    return ampc_py_parse_factory_kw(kwargs, op, AMPC_PY_KW_OUT | (takes_size ? AMPC_PY_KW_SIZE : 0), own, kw);
}
static PyObject *py_tensor(PyObject *unused, PyObject *args, PyObject *kwargs) {
    ampc_py_factory_kw kw;
    PyObject *data;
    ampc_dtype dtype;
    ampc_device device;
    if (PyTuple_GET_SIZE(args) != 1) {
        PyErr_Format(PyExc_TypeError, "tensor() takes 1 positional argument (data) but %zd were given",
                     PyTuple_GET_SIZE(args));
        return NULL;
    }
    data = PyTuple_GET_ITEM(args, 0);
    if (parse_factory_kwargs(kwargs, "tensor", 0, NULL, &kw) < 0) return NULL;
    if (ampc_py_factory_dtype_device(&kw, "tensor", AMPC_DTYPE_UNDEFINED, ampc_py_factory_device(), &dtype, &device) < 0) return NULL;
    if (AmpcTensor_Check(data) && !kw.device) device = ((AmpcTensorObject *)data)->t->device;
    return ampc_py_tensor_from_data(data, dtype, device, kw.requires_grad);
}

/* as_tensor: no copy when data already is a tensor or a CPU NumPy array of the right dtype. */
static PyObject *py_as_tensor(PyObject *unused, PyObject *args, PyObject *kwargs) {
    KW("data", "dtype", "device");
    PyObject *data, *dtype_o = Py_None, *device_o = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|OO:as_tensor", kwlist, &data, &dtype_o, &device_o)) return NULL;
    ampc_dtype dtype;
    ampc_device device = ampc_py_factory_device();
    if (AmpcTensor_Check(data)) device = ((AmpcTensorObject *)data)->t->device;
    if (ampc_py_dtype(dtype_o, &dtype, "as_tensor") < 0 || ampc_py_device(device_o, device, &device, "as_tensor") < 0)
        return NULL;
    if (AmpcTensor_Check(data)) {
        ampc_tensor *src = ((AmpcTensorObject *)data)->t;
        ampc_tensor *t = ampc_to(src, dtype, device, false);
        return ampc_py_wrap(t);
    }
    if (PyArray_Check(data)) {
        ampc_tensor *t = ampc_py_tensor_from_ndarray(data, dtype, device, false);
        return t ? ampc_py_wrap(t) : NULL;
    }
    return ampc_py_tensor_from_data(data, dtype, device, 0);
}

/* ------------------------------------------------------------------ sized factories */

typedef enum { FILL_NONE, FILL_ZERO, FILL_ONE, FILL_VALUE } fill_kind;

/* The dtype PyTorch gives full(size, value) without dtype=: bool, int64 or the default float. */
static ampc_dtype scalar_default_dtype(ampc_scalar s) {
    return s.kind == AMPC_SCALAR_BOOL ? AMPC_BOOL : s.kind == AMPC_SCALAR_INT ? AMPC_INT64 : ampc_get_default_dtype();
}

static ampc_tensor *make_filled(int nd, const int64_t *shape, fill_kind fill, ampc_scalar value, ampc_dtype dt,
                                ampc_device dev) {
    switch (fill) {
    case FILL_NONE: return ampc_empty(nd, shape, dt, dev);
    case FILL_ZERO: return ampc_zeros(nd, shape, dt, dev);
    case FILL_ONE: return ampc_full(nd, shape, ampc_scalar_int(1), dt, dev);
    default: return ampc_full(nd, shape, value, dt, dev);
    }
}

static PyObject *sized_factory(PyObject *args, PyObject *kwargs, const char *op, fill_kind fill) {
    ampc_py_factory_kw kw;
    int64_t shape[AMPC_MAX_DIMS];
    ampc_scalar value = ampc_scalar_int(0);
    ampc_dtype dtype;
    ampc_device device;
    PyObject *size_args = args;
    static const char *const full_kw[] = {"fill_value", NULL};
    if (parse_factory_kwargs(kwargs, op, 1, fill == FILL_VALUE ? full_kw : NULL, &kw) < 0) return NULL;
    ampc_dtype dflt = ampc_get_default_dtype();
    if (fill == FILL_VALUE) { /* full(size, fill_value) */
        PyObject *fill_o = kwargs ? PyDict_GetItemString(kwargs, "fill_value") : NULL;
        Py_ssize_t n = PyTuple_GET_SIZE(args);
        if (!fill_o && n < 2 - (kw.size != NULL)) {
            PyErr_Format(PyExc_TypeError, "%s() missing required argument 'fill_value'", op);
            return NULL;
        }
        if (!fill_o) fill_o = PyTuple_GET_ITEM(args, n - 1);
        if (AmpcTensor_Check(fill_o) && ((AmpcTensorObject *)fill_o)->t->ndim == 0) {
            if (ampc_py_check(ampc_get_scalar(((AmpcTensorObject *)fill_o)->t, 0, &value)) < 0) return NULL;
        } else if (ampc_py_scalar(fill_o, &value, op, "fill_value") < 0) {
            return NULL;
        }
        dflt = scalar_default_dtype(value);
        size_args = PyTuple_GetSlice(args, 0, kwargs && PyDict_GetItemString(kwargs, "fill_value") ? n : n - 1);
        if (!size_args) return NULL;
        if (PyTuple_GET_SIZE(size_args) != 1 && !kw.size) {
            Py_DECREF(size_args);
            PyErr_Format(PyExc_TypeError, "%s(): argument 'size' must be one tuple of ints", op);
            return NULL;
        }
    } else {
        Py_INCREF(size_args);
    }
    int nd = ampc_py_size_args(size_args, kw.size, shape, op);
    Py_DECREF(size_args);
    if (nd < 0 || ampc_py_factory_dtype_device(&kw, op, dflt, ampc_py_factory_device(), &dtype, &device) < 0) return NULL;
    return ampc_py_factory_finish(make_filled(nd, shape, fill, value, dtype, device), kw.requires_grad);
}

static PyObject *py_empty(PyObject *u, PyObject *a, PyObject *k) { return sized_factory(a, k, "empty", FILL_NONE); }
static PyObject *py_zeros(PyObject *u, PyObject *a, PyObject *k) { return sized_factory(a, k, "zeros", FILL_ZERO); }
static PyObject *py_ones(PyObject *u, PyObject *a, PyObject *k) { return sized_factory(a, k, "ones", FILL_ONE); }
static PyObject *py_full(PyObject *u, PyObject *a, PyObject *k) { return sized_factory(a, k, "full", FILL_VALUE); }

/* *_like(input, [fill_value], dtype=None, device=None, requires_grad=False) */
static PyObject *like_factory(PyObject *args, PyObject *kwargs, const char *op, fill_kind fill) {
    ampc_py_factory_kw kw;
    Py_ssize_t n = PyTuple_GET_SIZE(args);
    Py_ssize_t want = fill == FILL_VALUE ? 2 : 1;
    PyObject *input = n >= 1 ? PyTuple_GET_ITEM(args, 0) : (kwargs ? PyDict_GetItemString(kwargs, "input") : NULL);
    PyObject *fill_o = n >= 2 ? PyTuple_GET_ITEM(args, 1) : (kwargs ? PyDict_GetItemString(kwargs, "fill_value") : NULL);
    if (n > want || !input || (fill == FILL_VALUE && !fill_o)) {
        PyErr_Format(PyExc_TypeError, "%s() takes %s", op, fill == FILL_VALUE ? "(input, fill_value)" : "(input)");
        return NULL;
    }
    static const char *const like_kw[] = {"input", "fill_value", NULL}; /* taken above */
    if (parse_factory_kwargs(kwargs, op, 0, like_kw, &kw) < 0) return NULL;
    ampc_tensor *t = ampc_py_unwrap(input, op, "input");
    if (!t) return NULL;
    ampc_scalar value = ampc_scalar_int(0);
    if (fill == FILL_VALUE && ampc_py_scalar(fill_o, &value, op, "fill_value") < 0) return NULL;
    ampc_dtype dtype;
    ampc_device device;
    if (ampc_py_factory_dtype_device(&kw, op, t->dtype, t->device, &dtype, &device) < 0) return NULL;
    return ampc_py_factory_finish(make_filled(t->ndim, t->shape, fill, value, dtype, device), kw.requires_grad);
}

static PyObject *py_empty_like(PyObject *u, PyObject *a, PyObject *k) { return like_factory(a, k, "empty_like", FILL_NONE); }
static PyObject *py_zeros_like(PyObject *u, PyObject *a, PyObject *k) { return like_factory(a, k, "zeros_like", FILL_ZERO); }
static PyObject *py_ones_like(PyObject *u, PyObject *a, PyObject *k) { return like_factory(a, k, "ones_like", FILL_ONE); }
static PyObject *py_full_like(PyObject *u, PyObject *a, PyObject *k) { return like_factory(a, k, "full_like", FILL_VALUE); }

/* ------------------------------------------------------------------ ranges */

/* A number argument of arange/linspace: Python or NumPy number, or a one-element tensor. */
static int range_number(PyObject *o, ampc_scalar *s, const char *op, const char *arg) {
    if (AmpcTensor_Check(o)) {
        ampc_tensor *t = ((AmpcTensorObject *)o)->t;
        if (ampc_numel(t) != 1) {
            PyErr_Format(PyExc_RuntimeError, "%s(): argument '%s' must be a one-element tensor", op, arg);
            return -1;
        }
        return ampc_py_check(ampc_get_scalar(t, 0, s));
    }
    return ampc_py_scalar(o, s, op, arg);
}

static PyObject *py_arange(PyObject *unused, PyObject *args, PyObject *kwargs) {
    ampc_py_factory_kw kw;
    PyObject *pos[3] = {NULL, NULL, NULL};
    Py_ssize_t n = PyTuple_GET_SIZE(args);
    if (n > 3) {
        PyErr_SetString(PyExc_TypeError, "arange() takes at most 3 positional arguments (start, end, step)");
        return NULL;
    }
    for (Py_ssize_t i = 0; i < n; i++) pos[i] = PyTuple_GET_ITEM(args, i);
    PyObject *start_o = NULL, *end_o = NULL, *step_o = NULL;
    if (kwargs) {
        start_o = PyDict_GetItemString(kwargs, "start");
        end_o = PyDict_GetItemString(kwargs, "end");
        step_o = PyDict_GetItemString(kwargs, "step");
    }
    /* arange(end), arange(start, end), arange(start, end, step) */
    if (n == 1 && end_o) start_o = pos[0]; /* arange(1, end=4) */
    else if (n == 1) end_o = pos[0];
    if (n >= 2) {
        start_o = pos[0];
        end_o = pos[1];
    }
    if (n == 3) step_o = pos[2];
    static const char *const range_kw[] = {"start", "end", "step", NULL};
    if (parse_factory_kwargs(kwargs, "arange", 0, range_kw, &kw) < 0) return NULL;
    if (!end_o) {
        PyErr_SetString(PyExc_TypeError, "arange() missing required argument 'end'");
        return NULL;
    }
    ampc_scalar start = ampc_scalar_int(0), end, step = ampc_scalar_int(1);
    if ((start_o && range_number(start_o, &start, "arange", "start") < 0) ||
        range_number(end_o, &end, "arange", "end") < 0 || (step_o && range_number(step_o, &step, "arange", "step") < 0))
        return NULL;
    bool any_float = start.kind == AMPC_SCALAR_FLOAT || end.kind == AMPC_SCALAR_FLOAT || step.kind == AMPC_SCALAR_FLOAT;
    ampc_dtype dtype;
    ampc_device device;
    if (ampc_py_factory_dtype_device(&kw, "arange", any_float ? ampc_get_default_dtype() : AMPC_INT64, ampc_py_factory_device(), &dtype,
                   &device) < 0)
        return NULL;
    return ampc_py_factory_finish(ampc_arange(ampc_scalar_to_double(start), ampc_scalar_to_double(end), ampc_scalar_to_double(step),
                              dtype, device),
                  kw.requires_grad);
}

static PyObject *py_linspace(PyObject *unused, PyObject *args, PyObject *kwargs) {
    PyObject *start_o, *end_o, *steps_o;
    PyObject *k_dtype = NULL, *k_device = NULL, *k_rg = NULL, *k_out = NULL, *k_layout = NULL, *k_pin = NULL;
    static char *kwlist[] = {"start", "end", "steps", "out", "dtype", "layout", "device", "requires_grad", "pin_memory", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OOO|$OOOOOO:linspace", kwlist, &start_o, &end_o, &steps_o, &k_out,
                                     &k_dtype, &k_layout, &k_device, &k_rg, &k_pin))
        return NULL;
    ampc_scalar start, end;
    long long steps;
    if (range_number(start_o, &start, "linspace", "start") < 0 || range_number(end_o, &end, "linspace", "end") < 0)
        return NULL;
    if (!PyIndex_Check(steps_o) || PyBool_Check(steps_o) || PyFloat_Check(steps_o)) {
        PyErr_Format(PyExc_TypeError, "linspace(): argument 'steps' must be int, not %s", Py_TYPE(steps_o)->tp_name);
        return NULL;
    }
    steps = PyLong_AsLongLong(steps_o);
    if (steps == -1 && PyErr_Occurred()) return NULL;
    ampc_py_factory_kw kw = {.dtype = k_dtype, .device = k_device, .requires_grad = k_rg ? PyObject_IsTrue(k_rg) : 0};
    ampc_dtype dtype;
    ampc_device device;
    if (kw.requires_grad < 0 || ampc_py_factory_dtype_device(&kw, "linspace", ampc_get_default_dtype(), ampc_py_factory_device(), &dtype, &device) < 0)
        return NULL;
    return ampc_py_factory_finish(ampc_linspace(ampc_scalar_to_double(start), ampc_scalar_to_double(end), steps, dtype, device),
                  kw.requires_grad);
}

static PyObject *py_eye(PyObject *unused, PyObject *args, PyObject *kwargs) {
    PyObject *n_o, *m_o = Py_None;
    PyObject *k_dtype = NULL, *k_device = NULL, *k_rg = NULL, *k_out = NULL, *k_layout = NULL, *k_pin = NULL;
    static char *kwlist[] = {"n", "m", "out", "dtype", "layout", "device", "requires_grad", "pin_memory", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|O$OOOOOO:eye", kwlist, &n_o, &m_o, &k_out, &k_dtype, &k_layout,
                                     &k_device, &k_rg, &k_pin))
        return NULL;
    int64_t nm[2];
    PyObject *objs[2] = {n_o, m_o == Py_None ? n_o : m_o};
    for (int i = 0; i < 2; i++) {
        if (!PyIndex_Check(objs[i]) || PyBool_Check(objs[i])) {
            PyErr_Format(PyExc_TypeError, "eye(): argument '%s' must be int, not %s", i ? "m" : "n",
                         Py_TYPE(objs[i])->tp_name);
            return NULL;
        }
        nm[i] = PyLong_AsLongLong(objs[i]);
        if (nm[i] == -1 && PyErr_Occurred()) return NULL;
    }
    ampc_py_factory_kw kw = {.dtype = k_dtype, .device = k_device, .requires_grad = k_rg ? PyObject_IsTrue(k_rg) : 0};
    ampc_dtype dtype;
    ampc_device device;
    if (kw.requires_grad < 0 || ampc_py_factory_dtype_device(&kw, "eye", ampc_get_default_dtype(), ampc_py_factory_device(), &dtype, &device) < 0)
        return NULL;
    return ampc_py_factory_finish(ampc_eye(nm[0], nm[1], dtype, device), kw.requires_grad);
}

/* ------------------------------------------------------------------ dtype queries */

static PyObject *py_get_default_dtype(PyObject *u, PyObject *unused) {
    return ampc_py_dtype_object(ampc_get_default_dtype());
}

static PyObject *py_set_default_dtype(PyObject *u, PyObject *d) {
    ampc_dtype dt;
    if (ampc_py_dtype(d, &dt, "set_default_dtype") < 0) return NULL;
    if (!ampc_dtype_is_floating(dt)) {
        PyErr_SetString(PyExc_TypeError, "only floating-point types are supported as the default type");
        return NULL;
    }
    ampc_set_default_dtype(dt);
    Py_RETURN_NONE;
}

static int result_type_operand(ampc_result_type_state *st, PyObject *o, const char *arg) {
    if (AmpcTensor_Check(o)) {
        ampc_tensor *t = ((AmpcTensorObject *)o)->t;
        ampc_result_type_update(st, t->dtype, t->ndim, t->is_wrapped_number);
        return 0;
    }
    ampc_scalar s;
    if (ampc_py_scalar(o, &s, "result_type", arg) < 0) return -1;
    ampc_result_type_update(st, ampc_scalar_dtype(s), 0, true);
    return 0;
}

static PyObject *py_result_type(PyObject *u, PyObject *args, PyObject *kwargs) {
    KW("tensor1", "tensor2");
    PyObject *a, *b;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OO:result_type", kwlist, &a, &b)) return NULL;
    ampc_result_type_state st;
    ampc_result_type_init(&st);
    if (result_type_operand(&st, a, "tensor1") < 0 || result_type_operand(&st, b, "tensor2") < 0) return NULL;
    return ampc_py_dtype_object(ampc_result_type_finish(&st));
}

static int two_dtypes(PyObject *args, PyObject *kwargs, char **kwlist, const char *op, ampc_dtype *a, ampc_dtype *b) {
    PyObject *x, *y;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OO", kwlist, &x, &y)) return -1;
    if (!ampc_py_is_dtype(x) || !ampc_py_is_dtype(y)) {
        PyObject *bad = ampc_py_is_dtype(x) ? y : x;
        PyErr_Format(PyExc_TypeError, "%s(): arguments must be ampc.dtype, not %s", op, Py_TYPE(bad)->tp_name);
        return -1;
    }
    return ampc_py_dtype(x, a, op) < 0 || ampc_py_dtype(y, b, op) < 0 ? -1 : 0;
}

static PyObject *py_promote_types(PyObject *u, PyObject *args, PyObject *kwargs) {
    KW("type1", "type2");
    ampc_dtype a, b;
    if (two_dtypes(args, kwargs, kwlist, "promote_types", &a, &b) < 0) return NULL;
    return ampc_py_dtype_object(ampc_promote_types(a, b));
}

/* PyTorch's canCast: no floating -> integral and no non-bool -> bool. */
static PyObject *py_can_cast(PyObject *u, PyObject *args, PyObject *kwargs) {
    KW("from_", "to");
    ampc_dtype from, to;
    if (two_dtypes(args, kwargs, kwlist, "can_cast", &from, &to) < 0) return NULL;
    bool ok = !(ampc_dtype_is_floating(from) && ampc_dtype_is_integral(to, true)) &&
              !(from != AMPC_BOOL && to == AMPC_BOOL);
    return PyBool_FromLong(ok);
}

PyMethodDef ampc_py_module_methods_creation[] = {
    {"tensor", METHOD(py_tensor), VA, "tensor(data, dtype=None, device=None, requires_grad=False): a copy of data"},
    {"as_tensor", METHOD(py_as_tensor), VA, "as_tensor(data, dtype=None, device=None): shares memory when it can"},
    {"empty", METHOD(py_empty), VA, "empty(*size, dtype=None, device=None, requires_grad=False)"},
    {"zeros", METHOD(py_zeros), VA, "zeros(*size, dtype=None, device=None, requires_grad=False)"},
    {"ones", METHOD(py_ones), VA, "ones(*size, dtype=None, device=None, requires_grad=False)"},
    {"full", METHOD(py_full), VA, "full(size, fill_value, dtype=None, device=None, requires_grad=False)"},
    {"empty_like", METHOD(py_empty_like), VA, NULL},
    {"zeros_like", METHOD(py_zeros_like), VA, NULL},
    {"ones_like", METHOD(py_ones_like), VA, NULL},
    {"full_like", METHOD(py_full_like), VA, NULL},
    {"arange", METHOD(py_arange), VA, "arange(start=0, end, step=1, dtype=None, device=None, requires_grad=False)"},
    {"linspace", METHOD(py_linspace), VA, "linspace(start, end, steps, dtype=None, device=None, requires_grad=False)"},
    {"eye", METHOD(py_eye), VA, "eye(n, m=None, dtype=None, device=None, requires_grad=False)"},
    {"get_default_dtype", py_get_default_dtype, METH_NOARGS, NULL},
    {"set_default_dtype", py_set_default_dtype, METH_O, NULL},
    {"result_type", METHOD(py_result_type), VA, NULL},
    {"promote_types", METHOD(py_promote_types), VA, NULL},
    {"can_cast", METHOD(py_can_cast), VA, NULL},
    {NULL, NULL, 0, NULL},
};
