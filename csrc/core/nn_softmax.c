/* nn_softmax.c: softmax and log_softmax (with torch's dtype argument) and their backward, with
 * their gradient rule. The classification losses built on log-softmax (cross_entropy,
 * nll_loss) are nn_loss_class.c's; the attention softmax is called from nn_misc.c. */
#include <stdio.h>

#include "autocast.h"
#include "autograd.h"
#include "nn_common.h"

/* ---------------------------------------------------------------- softmax, log_softmax */

static ampc_status softmax_rule_fn(ampc_node *node, ampc_tensor *const *grads, ampc_tensor **grad_inputs);
static const ampc_grad_rule softmax_rule = {"SoftmaxBackward0", softmax_rule_fn};
static const ampc_grad_rule log_softmax_rule = {"LogSoftmaxBackward0", softmax_rule_fn};

/* dim of t wrapped (a 0-dim tensor takes dim 0 or -1, as in PyTorch). */
static ampc_status softmax_dim(const char *name, const ampc_tensor *t, int64_t dim, int *out) {
    AMPC_TRY(ampc_wrap_dim(name, dim, t->ndim > 0 ? t->ndim : 1, out));
    if (t->ndim == 0) *out = 0;
    return AMPC_OK;
}

static ampc_tensor *softmax_common(ampc_op op, const ampc_tensor *input, int64_t dim, ampc_dtype dtype) {
    const char *name = ampc_op_name(op);
    ampc_autocast_scope ac;
    int acr = ampc_autocast_enter(op == AMPC_OP_SOFTMAX ? AMPC_OP_SOFTMAX : AMPC_OP_LOG_SOFTMAX, 1, &input,
                                  dtype != AMPC_DTYPE_UNDEFINED, &ac);
    if (acr) return acr < 0 ? NULL : ampc_autocast_exit(&ac, softmax_common(op, ac.t[0], dim, ac.dtype));
    int d;
    if (softmax_dim(name, input, dim, &d) != AMPC_OK) return NULL;
    ampc_dtype out_dt = dtype == AMPC_DTYPE_UNDEFINED ? input->dtype : dtype;
    if (!ampc_dtype_is_floating(out_dt)) {
        ampc_set_error(AMPC_E_NOT_IMPLEMENTED, "\"%s_lastdim_kernel_impl\" not implemented for '%s'", name,
                       ampc_dtype_name(out_dt));
        return NULL;
    }
    ampc_tensor *x = ampc_contiguous(input);
    ampc_tensor *y = x ? ampc_empty(input->ndim, input->shape, out_dt, input->device) : NULL;
    if (y) {
        ampc_softmax_args a = {.y = y, .x = x, .dim = input->ndim ? d : 0};
        ampc_tensor *x1 = NULL, *y1 = NULL;
        if (input->ndim == 0) { /* as a 1-element vector */
            int64_t one[1] = {1};
            x1 = nn_reshape_view(x, 1, one), y1 = nn_reshape_view(y, 1, one);
            a.y = y1, a.x = x1;
        }
        if ((input->ndim == 0 && (!x1 || !y1)) ||
            (ampc_numel(y) > 0 && ampc_dispatch_softmax(op, &a) != AMPC_OK)) {
            ampc_tensor_decref(y);
            y = NULL;
        }
        ampc_tensor_decref(x1), ampc_tensor_decref(y1);
    }
    ampc_tensor_decref(x);
    if (y && ampc_any_requires_grad(1, &input)) {
        ampc_node_attrs attrs;
        memset(&attrs, 0, sizeof attrs);
        attrs.ints[0] = d, attrs.ints[1] = op == AMPC_OP_LOG_SOFTMAX, attrs.n_ints = 2;
        if (!ampc_autograd_record(op == AMPC_OP_SOFTMAX ? &softmax_rule : &log_softmax_rule, 1, &input, 1, &y, 1,
                                  (const ampc_tensor *const *)&y, &attrs)) {
            ampc_tensor_decref(y);
            y = NULL;
        }
    }
    return y;
}

ampc_tensor *ampc_softmax(const ampc_tensor *input, int64_t dim, ampc_dtype dtype) {
    return softmax_common(AMPC_OP_SOFTMAX, input, dim, dtype);
}

ampc_tensor *ampc_log_softmax(const ampc_tensor *input, int64_t dim, ampc_dtype dtype) {
    return softmax_common(AMPC_OP_LOG_SOFTMAX, input, dim, dtype);
}

ampc_tensor *nn_softmax_backward(ampc_op op, const ampc_tensor *grad_out, const ampc_tensor *output,
                                            int64_t dim, ampc_dtype input_dtype, double scale) {
    const char *name = ampc_op_name(op);
    int d;
    char s1[96], s2[96];
    if (softmax_dim(name, output, dim, &d) != AMPC_OK) return NULL;
    if (grad_out->ndim != output->ndim || ampc_numel(grad_out) != ampc_numel(output)) {
        ampc_set_error(AMPC_E_RUNTIME, "%s: grad_output of shape %s for an output of shape %s", name,
                       nn_shape(grad_out, s1, sizeof s1), nn_shape(output, s2, sizeof s2));
        return NULL;
    }
    if (input_dtype == AMPC_DTYPE_UNDEFINED) input_dtype = output->dtype;
    ampc_tensor *g = ampc_contiguous(grad_out), *y = g ? ampc_contiguous(output) : NULL;
    int nd = output->ndim ? output->ndim : 1;
    int64_t one[1] = {1};
    const int64_t *shape = output->ndim ? output->shape : one;
    ampc_tensor *gx = y ? ampc_empty(output->ndim, output->shape, input_dtype, output->device) : NULL;
    ampc_tensor *g1 = gx ? nn_reshape_view(g, nd, shape) : NULL, *y1 = g1 ? nn_reshape_view(y, nd, shape) : NULL;
    ampc_tensor *gx1 = y1 ? nn_reshape_view(gx, nd, shape) : NULL;
    ampc_status st = gx1 ? AMPC_OK : ampc_last_status();
    if (st == AMPC_OK) {
        ampc_softmax_backward_args a = {.grad_x = gx1, .grad_y = g1, .y = y1, .dim = d, .scale = scale};
        st = ampc_numel(gx1) > 0 ? ampc_dispatch_softmax_backward(op, &a) : AMPC_OK;
    }
    return nn_finish(st, gx, 5, (ampc_tensor *[]){g, y, g1, y1, gx1});
}

ampc_tensor *ampc_softmax_backward(const ampc_tensor *grad_out, const ampc_tensor *output, int64_t dim,
                                   ampc_dtype input_dtype) {
    return nn_softmax_backward(AMPC_OP_SOFTMAX_BACKWARD, grad_out, output, dim, input_dtype, 1.0);
}

ampc_tensor *ampc_log_softmax_backward(const ampc_tensor *grad_out, const ampc_tensor *output, int64_t dim,
                                       ampc_dtype input_dtype) {
    return nn_softmax_backward(AMPC_OP_LOG_SOFTMAX_BACKWARD, grad_out, output, dim, input_dtype, 1.0);
}

static ampc_status softmax_rule_fn(ampc_node *node, ampc_tensor *const *grads, ampc_tensor **grad_inputs) {
    AMPC_TRY(nn_first_order_only(node));
    const ampc_tensor *y = ampc_node_saved(node, 0);
    if (!y) return ampc_last_status();
    if (!grads[0]) return AMPC_OK;
    ampc_op op = node->attrs.ints[1] ? AMPC_OP_LOG_SOFTMAX_BACKWARD : AMPC_OP_SOFTMAX_BACKWARD;
    grad_inputs[0] = nn_softmax_backward(op, grads[0], y, node->attrs.ints[0], node->in_dtype[0], 1.0);
    return grad_inputs[0] ? AMPC_OK : ampc_last_status();
}
