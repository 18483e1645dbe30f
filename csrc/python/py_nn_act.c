/* py_nn_act.c: the bindings of issue 13's activation rows (family act), which
 * python/ampc/nn/_functional_act.py wraps with torch's signatures:
 *   _act(name, input, p0, p1, inplace)  the unary row `name` of ops.def with its two parameters
 *                                       (floats or None), out of place or in place
 *   _prelu(input, weight)               the prelu row, weight already viewed to broadcast
 * Binding only: dtype rules, autocast, gradients and errors are the core's (core/elementwise.c). */
#include "py_common.h"

static ampc_scalar param(PyObject *o, int *err) {
    if (!o || o == Py_None) return ampc_scalar_none();
    double v = PyFloat_AsDouble(o);
    if (v == -1.0 && PyErr_Occurred()) *err = 1;
    return ampc_scalar_float(v);
}

static PyObject *m_act(PyObject *m, PyObject *args) {
    const char *name;
    PyObject *x, *p0o, *p1o;
    int inplace;
    if (!PyArg_ParseTuple(args, "sOOOp:_act", &name, &x, &p0o, &p1o, &inplace)) return NULL;
    int op = ampc_op_find(name);
    if (op < 0 || !ampc_op_is_elementwise((ampc_op)op) || ampc_op_kind_of((ampc_op)op) != AMPC_KIND_UNARY)
        return PyErr_Format(PyExc_ValueError, "_act: %s is not a unary elementwise op", name);
    ampc_tensor *t = ampc_py_unwrap(x, name, "input");
    if (!t) return NULL;
    int err = 0;
    ampc_scalar p0 = param(p0o, &err), p1 = param(p1o, &err);
    if (err) return NULL;
    if (inplace) {
        if (ampc_py_check(ampc_elementwise_params_((ampc_op)op, t, p0, p1)) < 0) return NULL;
        Py_INCREF(x);
        return x;
    }
    return ampc_py_wrap(ampc_elementwise_params((ampc_op)op, t, NULL, p0, p1));
}

static PyObject *m_prelu(PyObject *m, PyObject *args) {
    PyObject *x, *w;
    if (!PyArg_ParseTuple(args, "OO:_prelu", &x, &w)) return NULL;
    ampc_tensor *t = ampc_py_unwrap(x, "prelu", "input"), *wt = t ? ampc_py_unwrap(w, "prelu", "weight") : NULL;
    if (!wt) return NULL;
    return ampc_py_wrap(ampc_binary(AMPC_OP_PRELU, t, wt, ampc_scalar_int(1)));
}

PyMethodDef ampc_py_module_methods_nn_act[] = {
    {"_act", (PyCFunction)m_act, METH_VARARGS, "_act(name, input, p0, p1, inplace): an activation row of ops.def"},
    {"_prelu", (PyCFunction)m_prelu, METH_VARARGS, "_prelu(input, weight): the prelu row"},
    {NULL, NULL, 0, NULL},
};
