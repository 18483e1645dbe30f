/* py_nn_loss.c: the bindings of issue 13's loss family (core/nn_loss_ops.h): _nn_ctc_loss and
 * _nn_pdist, behind ampc.nn.functional.ctc_loss / pdist (python/ampc/nn/_functional_loss.py). */
#include "core/nn_loss_ops.h"
#include "py_common.h"

#define METHOD(name) (PyCFunction)(void (*)(void))(name)

/* A CPU int64 contiguous tensor's data as a host array (the caller converts lists and device tensors). */
static const int64_t *host_lengths(PyObject *o, const char *what, int64_t *n) {
    ampc_tensor *t = ampc_py_unwrap(o, "ctc_loss", what);
    if (!t) return NULL;
    if (t->dtype != AMPC_INT64 || t->device.type != AMPC_CPU || !ampc_is_contiguous(t)) {
        PyErr_Format(PyExc_TypeError, "_nn_ctc_loss: %s must be a contiguous int64 CPU tensor", what);
        return NULL;
    }
    *n = ampc_numel(t);
    return (const int64_t *)ampc_data_ptr(t);
}

/* (log_probs (T, N, C), targets, input_lengths, target_lengths, blank, zero_infinity) -> nll (N) */
static PyObject *py_ctc_loss(PyObject *mod, PyObject *args) {
    PyObject *lp_o, *tg_o, *il_o, *tl_o;
    long long blank;
    int zero_infinity;
    if (!PyArg_ParseTuple(args, "OOOOLp:_nn_ctc_loss", &lp_o, &tg_o, &il_o, &tl_o, &blank, &zero_infinity))
        return NULL;
    ampc_tensor *lp = ampc_py_unwrap(lp_o, "ctc_loss", "log_probs");
    ampc_tensor *tg = lp ? ampc_py_unwrap(tg_o, "ctc_loss", "targets") : NULL;
    int64_t n_il = 0, n_tl = 0;
    const int64_t *il = tg ? host_lengths(il_o, "input_lengths", &n_il) : NULL;
    const int64_t *tl = il ? host_lengths(tl_o, "target_lengths", &n_tl) : NULL;
    if (!tl) return NULL;
    return ampc_py_wrap(ampc_ctc_loss(lp, tg, il, n_il, tl, n_tl, blank, zero_infinity, NULL));
}

/* (input (N, M), p) -> the N (N - 1) / 2 row-pair distances */
static PyObject *py_pdist(PyObject *mod, PyObject *args) {
    PyObject *x_o;
    double p;
    if (!PyArg_ParseTuple(args, "Od:_nn_pdist", &x_o, &p)) return NULL;
    ampc_tensor *x = ampc_py_unwrap(x_o, "pdist", "input");
    return x ? ampc_py_wrap(ampc_pdist(x, p)) : NULL;
}

PyMethodDef ampc_py_module_methods_nn_loss[] = {
    {"_nn_pdist", METHOD(py_pdist), METH_VARARGS, "_nn_pdist(input, p): pdist's row-pair distances"},
    {"_nn_ctc_loss", METHOD(py_ctc_loss), METH_VARARGS,
     "_nn_ctc_loss(log_probs, targets, input_lengths, target_lengths, blank, zero_infinity): per-sample nll"},
    {NULL, NULL, 0, NULL},
};
