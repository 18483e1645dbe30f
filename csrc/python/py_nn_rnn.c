/* py_nn_rnn.c: torch's _thnn_fused_lstm_cell / _thnn_fused_gru_cell and their backward
 * (core/nn_rnn.h), exported at ampc's top level as torch exports them; nn.LSTM, nn.GRU and their
 * cells (python/ampc/nn/modules/rnn.py) run one of them per step. Optional tensors are None. */
#include "core/nn_rnn.h"
#include "py_common.h"

#define METHOD(name) (PyCFunction)(void (*)(void))(name)

/* Borrowed core tensors of objs[0..n); None -> NULL where optional[k]; -1 with the error set. */
static int unwrap_all(const char *op, int n, PyObject *const *objs, const char *const *names, const bool *optional,
                      ampc_tensor **out) {
    for (int k = 0; k < n; k++) {
        out[k] = NULL;
        if (optional[k] && objs[k] == Py_None) continue;
        if (!(out[k] = ampc_py_unwrap(objs[k], op, names[k]))) return -1;
    }
    return 0;
}

/* A tuple of n new references (NULL entries become None); consumes them all. */
static PyObject *tuple_of(int n, ampc_tensor **ts) {
    PyObject *tup = PyTuple_New(n);
    for (int k = 0; k < n; k++) {
        PyObject *o = !tup ? NULL : ts[k] ? ampc_py_wrap(ts[k]) : (Py_INCREF(Py_None), Py_None);
        if (!tup) {
            ampc_tensor_decref(ts[k]);
            continue;
        }
        if (!o) {
            for (int j = k + 1; j < n; j++) ampc_tensor_decref(ts[j]);
            Py_DECREF(tup);
            return NULL;
        }
        PyTuple_SET_ITEM(tup, k, o);
    }
    return tup;
}

static PyObject *py_fused_lstm_cell(PyObject *mod, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"input_gates", "hidden_gates", "cx", "input_bias", "hidden_bias", NULL};
    PyObject *o[5] = {NULL, NULL, NULL, Py_None, Py_None};
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OOO|OO:_thnn_fused_lstm_cell", kwlist, &o[0], &o[1], &o[2], &o[3],
                                     &o[4]))
        return NULL;
    static const char *const names[5] = {"input_gates", "hidden_gates", "cx", "input_bias", "hidden_bias"};
    static const bool opt[5] = {false, false, false, true, true};
    ampc_tensor *t[5], *r[3];
    if (unwrap_all("_thnn_fused_lstm_cell", 5, o, names, opt, t) < 0) return NULL;
    if (ampc_py_check(ampc_thnn_fused_lstm_cell(t[0], t[1], t[2], t[3], t[4], &r[0], &r[1], &r[2])) < 0) return NULL;
    return tuple_of(3, r);
}

static PyObject *py_fused_lstm_cell_backward(PyObject *mod, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"grad_hy", "grad_cy", "cx", "cy", "workspace", "has_bias", NULL};
    PyObject *o[5];
    int has_bias;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OOOOOp:_thnn_fused_lstm_cell_backward_impl", kwlist, &o[0], &o[1],
                                     &o[2], &o[3], &o[4], &has_bias))
        return NULL;
    static const char *const names[5] = {"grad_hy", "grad_cy", "cx", "cy", "workspace"};
    static const bool opt[5] = {true, true, false, false, false};
    ampc_tensor *t[5], *r[3];
    if (unwrap_all("_thnn_fused_lstm_cell_backward_impl", 5, o, names, opt, t) < 0) return NULL;
    if (ampc_py_check(ampc_thnn_fused_lstm_cell_backward(t[0], t[1], t[2], t[3], t[4], has_bias, &r[0], &r[1],
                                                         &r[2])) < 0)
        return NULL;
    return tuple_of(3, r);
}

static PyObject *py_fused_gru_cell(PyObject *mod, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"input_gates", "hidden_gates", "hx", "input_bias", "hidden_bias", NULL};
    PyObject *o[5] = {NULL, NULL, NULL, Py_None, Py_None};
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OOO|OO:_thnn_fused_gru_cell", kwlist, &o[0], &o[1], &o[2], &o[3],
                                     &o[4]))
        return NULL;
    static const char *const names[5] = {"input_gates", "hidden_gates", "hx", "input_bias", "hidden_bias"};
    static const bool opt[5] = {false, false, false, true, true};
    ampc_tensor *t[5], *r[2];
    if (unwrap_all("_thnn_fused_gru_cell", 5, o, names, opt, t) < 0) return NULL;
    if (ampc_py_check(ampc_thnn_fused_gru_cell(t[0], t[1], t[2], t[3], t[4], &r[0], &r[1])) < 0) return NULL;
    return tuple_of(2, r);
}

static PyObject *py_fused_gru_cell_backward(PyObject *mod, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"grad_hy", "workspace", "has_bias", NULL};
    PyObject *o[2];
    int has_bias;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OOp:_thnn_fused_gru_cell_backward", kwlist, &o[0], &o[1], &has_bias))
        return NULL;
    static const char *const names[2] = {"grad_hy", "workspace"};
    static const bool opt[2] = {false, false};
    ampc_tensor *t[2], *r[5];
    if (unwrap_all("_thnn_fused_gru_cell_backward", 2, o, names, opt, t) < 0) return NULL;
    if (ampc_py_check(ampc_thnn_fused_gru_cell_backward(t[0], t[1], has_bias, &r[0], &r[1], &r[2], &r[3], &r[4])) < 0)
        return NULL;
    return tuple_of(5, r);
}

PyMethodDef ampc_py_module_methods_nn_rnn[] = {
    {"_thnn_fused_lstm_cell", METHOD(py_fused_lstm_cell), METH_VARARGS | METH_KEYWORDS,
     "_thnn_fused_lstm_cell(input_gates, hidden_gates, cx, input_bias=None, hidden_bias=None) -> (hy, cy, workspace)"},
    {"_thnn_fused_lstm_cell_backward_impl", METHOD(py_fused_lstm_cell_backward), METH_VARARGS | METH_KEYWORDS,
     "_thnn_fused_lstm_cell_backward_impl(grad_hy, grad_cy, cx, cy, workspace, has_bias) -> (grad_gates, grad_cx, "
     "grad_bias)"},
    {"_thnn_fused_gru_cell", METHOD(py_fused_gru_cell), METH_VARARGS | METH_KEYWORDS,
     "_thnn_fused_gru_cell(input_gates, hidden_gates, hx, input_bias=None, hidden_bias=None) -> (hy, workspace)"},
    {"_thnn_fused_gru_cell_backward", METHOD(py_fused_gru_cell_backward), METH_VARARGS | METH_KEYWORDS,
     "_thnn_fused_gru_cell_backward(grad_hy, workspace, has_bias) -> (grad_input_gates, grad_hidden_gates, grad_hx, "
     "grad_input_bias, grad_hidden_bias)"},
    {NULL, NULL, 0, NULL},
};
