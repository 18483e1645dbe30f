/* py_nn.c: the module functions behind ampc.nn.functional (core/nn_ops.h).
 *
 * They are private (_nn_*) and positional: python/ampc/nn/functional.py gives them PyTorch's
 * signatures (defaults, int-or-tuple arguments, padding="same", reduction strings), so this file
 * only converts arguments and calls the core. Optional tensors are None. */
#include <math.h>

#include "core/nn_ops.h"
#include "py_common.h"

#define METHOD(name) (PyCFunction)(void (*)(void))(name)

/* None -> NULL (returns 0); a Tensor -> borrowed core tensor; anything else -> -1 with TypeError. */
static int opt_tensor(PyObject *o, ampc_tensor **out, const char *op, const char *arg) {
    *out = NULL;
    if (o == Py_None) return 0;
    *out = ampc_py_unwrap(o, op, arg);
    return *out ? 0 : -1;
}

static ampc_tensor *req_tensor(PyObject *o, const char *op, const char *arg) { return ampc_py_unwrap(o, op, arg); }

/* ------------------------------------------------------------------ linear, convolution */

static PyObject *py_linear(PyObject *mod, PyObject *args) {
    PyObject *x_o, *w_o, *b_o;
    if (!PyArg_ParseTuple(args, "OOO:_nn_linear", &x_o, &w_o, &b_o)) return NULL;
    ampc_tensor *x = req_tensor(x_o, "linear", "input"), *w = x ? req_tensor(w_o, "linear", "weight") : NULL, *b;
    if (!w || opt_tensor(b_o, &b, "linear", "bias") < 0) return NULL;
    return ampc_py_wrap(ampc_linear(x, w, b));
}

static PyObject *py_convolution(PyObject *mod, PyObject *args) {
    PyObject *x_o, *w_o, *b_o;
    ampc_conv_params p;
    long long s0, s1, l0, l1, h0, h1, d0, d1, g;
    if (!PyArg_ParseTuple(args, "OOO(LL)(LL)(LL)(LL)L:_nn_convolution", &x_o, &w_o, &b_o, &s0, &s1, &l0, &l1, &h0, &h1,
                          &d0, &d1, &g))
        return NULL;
    p.stride[0] = s0, p.stride[1] = s1, p.pad_lo[0] = l0, p.pad_lo[1] = l1, p.pad_hi[0] = h0, p.pad_hi[1] = h1;
    p.dilation[0] = d0, p.dilation[1] = d1, p.groups = g;
    const char *op = "convolution";
    ampc_tensor *x = req_tensor(x_o, op, "input"), *w = x ? req_tensor(w_o, op, "weight") : NULL, *b;
    if (!w || opt_tensor(b_o, &b, op, "bias") < 0) return NULL;
    return ampc_py_wrap(ampc_convolution(x, w, b, &p));
}

/* ------------------------------------------------------------------ pooling */

static PyObject *py_max_pool2d(PyObject *mod, PyObject *args) {
    PyObject *x_o;
    long long k[2], s[2], p[2], d[2];
    int ceil_mode, return_indices;
    if (!PyArg_ParseTuple(args, "O(LL)(LL)(LL)(LL)pp:_nn_max_pool2d", &x_o, &k[0], &k[1], &s[0], &s[1], &p[0], &p[1],
                          &d[0], &d[1], &ceil_mode, &return_indices))
        return NULL;
    ampc_tensor *x = req_tensor(x_o, "max_pool2d", "input");
    if (!x) return NULL;
    int64_t kk[2] = {k[0], k[1]}, ss[2] = {s[0], s[1]}, pp[2] = {p[0], p[1]}, dd[2] = {d[0], d[1]};
    ampc_tensor *y, *ind;
    if (ampc_py_check(ampc_max_pool2d(x, kk, ss, pp, dd, ceil_mode, &y, return_indices ? &ind : NULL)) < 0)
        return NULL;
    if (!return_indices) return ampc_py_wrap(y);
    PyObject *yo = ampc_py_wrap(y), *io = yo ? ampc_py_wrap(ind) : (ampc_tensor_decref(ind), NULL);
    if (!io) {
        Py_XDECREF(yo);
        return NULL;
    }
    return Py_BuildValue("(NN)", yo, io);
}

static PyObject *py_avg_pool2d(PyObject *mod, PyObject *args) {
    PyObject *x_o;
    long long k[2], s[2], p[2], div;
    int ceil_mode, count_include_pad;
    if (!PyArg_ParseTuple(args, "O(LL)(LL)(LL)ppL:_nn_avg_pool2d", &x_o, &k[0], &k[1], &s[0], &s[1], &p[0], &p[1],
                          &ceil_mode, &count_include_pad, &div))
        return NULL;
    ampc_tensor *x = req_tensor(x_o, "avg_pool2d", "input");
    if (!x) return NULL;
    int64_t kk[2] = {k[0], k[1]}, ss[2] = {s[0], s[1]}, pp[2] = {p[0], p[1]};
    return ampc_py_wrap(ampc_avg_pool2d(x, kk, ss, pp, ceil_mode, count_include_pad, div));
}

static PyObject *py_adaptive_avg_pool2d(PyObject *mod, PyObject *args) {
    PyObject *x_o;
    long long oh, ow;
    if (!PyArg_ParseTuple(args, "O(LL):_nn_adaptive_avg_pool2d", &x_o, &oh, &ow)) return NULL;
    ampc_tensor *x = req_tensor(x_o, "adaptive_avg_pool2d", "input");
    if (!x) return NULL;
    int64_t size[2] = {oh, ow};
    return ampc_py_wrap(ampc_adaptive_avg_pool2d(x, size));
}

/* ------------------------------------------------------------------ normalization */

static PyObject *py_batch_norm(PyObject *mod, PyObject *args) {
    PyObject *x_o, *rm_o, *rv_o, *w_o, *b_o;
    int training;
    double momentum, eps;
    if (!PyArg_ParseTuple(args, "OOOOOpdd:_nn_batch_norm", &x_o, &rm_o, &rv_o, &w_o, &b_o, &training, &momentum, &eps))
        return NULL;
    const char *op = "batch_norm";
    ampc_tensor *x = req_tensor(x_o, op, "input"), *rm, *rv, *w, *b;
    if (!x || opt_tensor(rm_o, &rm, op, "running_mean") < 0 || opt_tensor(rv_o, &rv, op, "running_var") < 0 ||
        opt_tensor(w_o, &w, op, "weight") < 0 || opt_tensor(b_o, &b, op, "bias") < 0)
        return NULL;
    return ampc_py_wrap(ampc_batch_norm(x, rm, rv, w, b, training, momentum, eps));
}

static PyObject *py_layer_norm(PyObject *mod, PyObject *args) {
    PyObject *x_o, *shape_o, *w_o, *b_o;
    double eps;
    if (!PyArg_ParseTuple(args, "OOOOd:_nn_layer_norm", &x_o, &shape_o, &w_o, &b_o, &eps)) return NULL;
    const char *op = "layer_norm";
    int64_t shape[AMPC_MAX_DIMS];
    ampc_tensor *x = req_tensor(x_o, op, "input"), *w, *b;
    if (!x || opt_tensor(w_o, &w, op, "weight") < 0 || opt_tensor(b_o, &b, op, "bias") < 0) return NULL;
    int n = ampc_py_int_list(shape_o, shape, AMPC_MAX_DIMS, op, "normalized_shape");
    if (n < 0) return NULL;
    return ampc_py_wrap(ampc_layer_norm(x, n, shape, w, b, eps));
}

static PyObject *py_group_norm(PyObject *mod, PyObject *args) {
    PyObject *x_o, *w_o, *b_o;
    long long groups;
    double eps;
    if (!PyArg_ParseTuple(args, "OLOOd:_nn_group_norm", &x_o, &groups, &w_o, &b_o, &eps)) return NULL;
    const char *op = "group_norm";
    ampc_tensor *x = req_tensor(x_o, op, "input"), *w, *b;
    if (!x || opt_tensor(w_o, &w, op, "weight") < 0 || opt_tensor(b_o, &b, op, "bias") < 0) return NULL;
    return ampc_py_wrap(ampc_group_norm(x, groups, w, b, eps));
}

/* ------------------------------------------------------------------ embedding, dropout */

static PyObject *py_embedding(PyObject *mod, PyObject *args) {
    PyObject *w_o, *i_o, *pad_o;
    int by_freq;
    if (!PyArg_ParseTuple(args, "OOOp:_nn_embedding", &w_o, &i_o, &pad_o, &by_freq)) return NULL;
    ampc_tensor *w = req_tensor(w_o, "embedding", "weight"), *idx = w ? req_tensor(i_o, "embedding", "input") : NULL;
    if (!idx) return NULL;
    long long pad = INT64_MIN;
    if (pad_o != Py_None) {
        pad = PyLong_AsLongLong(pad_o);
        if (pad == -1 && PyErr_Occurred()) return NULL;
    }
    return ampc_py_wrap(ampc_embedding(w, idx, pad, by_freq));
}

static PyObject *py_dropout(PyObject *mod, PyObject *args) {
    PyObject *x_o;
    double p;
    int training;
    if (!PyArg_ParseTuple(args, "Odp:_nn_dropout", &x_o, &p, &training)) return NULL;
    ampc_tensor *x = req_tensor(x_o, "dropout", "input");
    if (!x) return NULL;
    return ampc_py_wrap(ampc_dropout(x, p, training));
}

/* ------------------------------------------------------------------ softmax and losses */

typedef ampc_tensor *(*softmax_fn)(const ampc_tensor *, int64_t, ampc_dtype);

static PyObject *call_softmax(softmax_fn fn, PyObject *args, const char *op) {
    PyObject *x_o, *dt_o;
    long long dim;
    if (!PyArg_ParseTuple(args, "OLO", &x_o, &dim, &dt_o)) return NULL;
    ampc_tensor *x = req_tensor(x_o, op, "input");
    ampc_dtype dt;
    if (!x || ampc_py_dtype(dt_o, &dt, op) < 0) return NULL;
    return ampc_py_wrap(fn(x, dim, dt));
}

static PyObject *py_softmax(PyObject *mod, PyObject *args) { return call_softmax(ampc_softmax, args, "softmax"); }
static PyObject *py_log_softmax(PyObject *mod, PyObject *args) {
    return call_softmax(ampc_log_softmax, args, "log_softmax");
}

static PyObject *py_cross_entropy(PyObject *mod, PyObject *args) {
    PyObject *x_o, *t_o, *w_o;
    int reduction;
    long long ignore;
    double ls;
    if (!PyArg_ParseTuple(args, "OOOiLd:_nn_cross_entropy", &x_o, &t_o, &w_o, &reduction, &ignore, &ls)) return NULL;
    const char *op = "cross_entropy";
    ampc_tensor *x = req_tensor(x_o, op, "input"), *t = x ? req_tensor(t_o, op, "target") : NULL, *w;
    if (!t || opt_tensor(w_o, &w, op, "weight") < 0) return NULL;
    return ampc_py_wrap(ampc_cross_entropy(x, t, w, (ampc_reduction)reduction, ignore, ls));
}

static PyObject *py_nll_loss(PyObject *mod, PyObject *args) {
    PyObject *x_o, *t_o, *w_o;
    int reduction;
    long long ignore;
    if (!PyArg_ParseTuple(args, "OOOiL:_nn_nll_loss", &x_o, &t_o, &w_o, &reduction, &ignore)) return NULL;
    const char *op = "nll_loss";
    ampc_tensor *x = req_tensor(x_o, op, "input"), *t = x ? req_tensor(t_o, op, "target") : NULL, *w;
    if (!t || opt_tensor(w_o, &w, op, "weight") < 0) return NULL;
    return ampc_py_wrap(ampc_nll_loss(x, t, w, (ampc_reduction)reduction, ignore));
}

/* mse_loss, l1_loss, smooth_l1_loss, binary_cross_entropy(_with_logits):
 * (input, target, weight, pos_weight, reduction, beta) with None for absent weights. */
static PyObject *py_pointwise_loss(PyObject *mod, PyObject *args) {
    PyObject *x_o, *t_o, *w_o, *pw_o;
    const char *name;
    int reduction;
    double beta;
    if (!PyArg_ParseTuple(args, "sOOOOid:_nn_pointwise_loss", &name, &x_o, &t_o, &w_o, &pw_o, &reduction, &beta))
        return NULL;
    ampc_tensor *x = req_tensor(x_o, name, "input"), *t = x ? req_tensor(t_o, name, "target") : NULL, *w, *pw;
    if (!t || opt_tensor(w_o, &w, name, "weight") < 0 || opt_tensor(pw_o, &pw, name, "pos_weight") < 0) return NULL;
    ampc_reduction r = (ampc_reduction)reduction;
    if (!strcmp(name, "mse_loss")) return ampc_py_wrap(ampc_mse_loss(x, t, r));
    if (!strcmp(name, "l1_loss")) return ampc_py_wrap(ampc_l1_loss(x, t, r));
    if (!strcmp(name, "smooth_l1_loss")) return ampc_py_wrap(ampc_smooth_l1_loss(x, t, r, beta));
    if (!strcmp(name, "binary_cross_entropy")) return ampc_py_wrap(ampc_binary_cross_entropy(x, t, w, r));
    if (!strcmp(name, "binary_cross_entropy_with_logits"))
        return ampc_py_wrap(ampc_binary_cross_entropy_with_logits(x, t, w, pw, r));
    PyErr_Format(PyExc_ValueError, "_nn_pointwise_loss: unknown loss '%s'", name);
    return NULL;
}

/* ------------------------------------------------------------------ attention */

static PyObject *py_sdpa(PyObject *mod, PyObject *args) {
    PyObject *q_o, *k_o, *v_o, *m_o, *scale_o;
    double p;
    int causal, gqa = 0;
    if (!PyArg_ParseTuple(args, "OOOOdpO|p:_nn_scaled_dot_product_attention", &q_o, &k_o, &v_o, &m_o, &p, &causal,
                          &scale_o, &gqa))
        return NULL;
    const char *op = "scaled_dot_product_attention";
    ampc_tensor *q = req_tensor(q_o, op, "query"), *k = q ? req_tensor(k_o, op, "key") : NULL;
    ampc_tensor *v = k ? req_tensor(v_o, op, "value") : NULL, *m;
    if (!v || opt_tensor(m_o, &m, op, "attn_mask") < 0) return NULL;
    double scale = NAN;
    if (scale_o != Py_None) {
        scale = PyFloat_AsDouble(scale_o);
        if (scale == -1.0 && PyErr_Occurred()) return NULL;
    }
    return ampc_py_wrap(ampc_scaled_dot_product_attention(q, k, v, m, p, causal, scale, gqa));
}

PyMethodDef ampc_py_module_methods_nn[] = {
    {"_nn_linear", METHOD(py_linear), METH_VARARGS, "linear(input, weight, bias)"},
    {"_nn_convolution", METHOD(py_convolution), METH_VARARGS,
     "convolution(input, weight, bias, stride, pad_lo, pad_hi, dilation, groups): 1-d or 2-d by the weight's rank"},
    {"_nn_max_pool2d", METHOD(py_max_pool2d), METH_VARARGS, NULL},
    {"_nn_avg_pool2d", METHOD(py_avg_pool2d), METH_VARARGS, NULL},
    {"_nn_adaptive_avg_pool2d", METHOD(py_adaptive_avg_pool2d), METH_VARARGS, NULL},
    {"_nn_batch_norm", METHOD(py_batch_norm), METH_VARARGS, NULL},
    {"_nn_layer_norm", METHOD(py_layer_norm), METH_VARARGS, NULL},
    {"_nn_group_norm", METHOD(py_group_norm), METH_VARARGS, NULL},
    {"_nn_embedding", METHOD(py_embedding), METH_VARARGS, NULL},
    {"_nn_dropout", METHOD(py_dropout), METH_VARARGS, NULL},
    {"_nn_softmax", METHOD(py_softmax), METH_VARARGS, NULL},
    {"_nn_log_softmax", METHOD(py_log_softmax), METH_VARARGS, NULL},
    {"_nn_cross_entropy", METHOD(py_cross_entropy), METH_VARARGS, NULL},
    {"_nn_nll_loss", METHOD(py_nll_loss), METH_VARARGS, NULL},
    {"_nn_pointwise_loss", METHOD(py_pointwise_loss), METH_VARARGS, NULL},
    {"_nn_scaled_dot_product_attention", METHOD(py_sdpa), METH_VARARGS, NULL},
    {NULL, NULL, 0, NULL},
};
