/* nn_loss.c: the elementwise losses mse_loss, l1_loss, smooth_l1_loss(beta),
 * binary_cross_entropy(weight) and binary_cross_entropy_with_logits(weight, pos_weight), with
 * reduction none/mean/sum, and their gradient rules (w.r.t. input and target).
 *
 * Input and target broadcast together as in PyTorch (mse/l1/smooth_l1 allow it; the two BCEs
 * require equal shapes), weights broadcast to them; the kernel sees contiguous operands of the
 * broadcast shape and reduces itself. Grads of broadcast operands are summed back. */
#include <stdio.h>

#include "autocast.h"
#include "autograd.h"
#include "nn_common.h"

static const char *loss_name(ampc_op op) { return ampc_op_name(op); }

static ampc_op backward_op(ampc_op op) {
    switch (op) {
    case AMPC_OP_MSE_LOSS: return AMPC_OP_MSE_LOSS_BACKWARD;
    case AMPC_OP_L1_LOSS: return AMPC_OP_L1_LOSS_BACKWARD;
    case AMPC_OP_SMOOTH_L1_LOSS: return AMPC_OP_SMOOTH_L1_LOSS_BACKWARD;
    case AMPC_OP_BCE_LOSS: return AMPC_OP_BCE_LOSS_BACKWARD;
    default: return AMPC_OP_BCE_WITH_LOGITS_LOSS_BACKWARD;
    }
}

/* Checks and the common shape; ops[] gets the four operands expanded to it and contiguous. */
static ampc_status loss_operands(ampc_op op, const ampc_tensor *input, const ampc_tensor *target,
                                 const ampc_tensor *weight, const ampc_tensor *pos_weight, ampc_reduction reduction,
                                 int *nd, int64_t *shape, ampc_tensor *ops[4]) {
    const char *name = loss_name(op);
    char s1[96], s2[96];
    ops[0] = ops[1] = ops[2] = ops[3] = NULL;
    if (reduction < AMPC_REDUCTION_NONE || reduction > AMPC_REDUCTION_SUM)
        return ampc_set_error(AMPC_E_VALUE, "%d is not a valid value for reduction", (int)reduction);
    const ampc_tensor *all[4] = {input, target, weight, pos_weight};
    AMPC_TRY(nn_check_device(name, 4, all));
    for (int i = 0; i < 4; i++)
        if (all[i] && !ampc_dtype_is_floating(all[i]->dtype) && (i != 1 || op == AMPC_OP_BCE_LOSS))
            return ampc_set_error(AMPC_E_RUNTIME, "%s: expected floating point %s, got %s", name,
                                  i == 0 ? "input" : i == 1 ? "target" : i == 2 ? "weight" : "pos_weight",
                                  ampc_dtype_name(all[i]->dtype));
    bool same = input->ndim == target->ndim;
    for (int i = 0; same && i < input->ndim; i++) same = input->shape[i] == target->shape[i];
    if (!same && op == AMPC_OP_BCE_LOSS)
        return ampc_set_error(AMPC_E_VALUE,
                              "Using a target size (%s) that is different to the input size (%s) is deprecated. Please "
                              "ensure they have the same size.",
                              nn_shape(target, s1, sizeof s1), nn_shape(input, s2, sizeof s2));
    if (!same && op == AMPC_OP_BCE_WITH_LOGITS_LOSS)
        return ampc_set_error(AMPC_E_VALUE, "Target size (%s) must be the same as input size (%s)",
                              nn_shape(target, s1, sizeof s1), nn_shape(input, s2, sizeof s2));
    AMPC_TRY(ampc_broadcast_shapes(name, input->ndim, input->shape, target->ndim, target->shape, nd, shape));
    for (int i = 2; i < 4; i++) {
        if (!all[i]) continue;
        int64_t tmp[AMPC_MAX_DIMS];
        int tnd;
        AMPC_TRY(ampc_broadcast_shapes(name, *nd, shape, all[i]->ndim, all[i]->shape, &tnd, tmp));
        if (tnd != *nd || memcmp(tmp, shape, sizeof(int64_t) * (size_t)tnd) != 0)
            return ampc_set_error(AMPC_E_RUNTIME, "%s: %s of shape %s does not broadcast to the input's shape %s", name,
                                  i == 2 ? "weight" : "pos_weight", nn_shape(all[i], s1, sizeof s1),
                                  ampc_shape_str(*nd, shape, s2, sizeof s2));
    }
    for (int i = 0; i < 4; i++) {
        if (!all[i]) continue;
        ampc_tensor *e = ampc_expand(all[i], *nd, shape);
        ops[i] = e ? ampc_contiguous(e) : NULL;
        ampc_tensor_decref(e);
        if (!ops[i]) {
            nn_release(4, ops);
            return ampc_last_status();
        }
    }
    return AMPC_OK;
}

static ampc_status loss_rule_fn(ampc_node *node, ampc_tensor *const *grads, ampc_tensor **grad_inputs);
static const ampc_grad_rule loss_rules[5] = {
    {"MseLossBackward0", loss_rule_fn},
    {"L1LossBackward0", loss_rule_fn},
    {"SmoothL1LossBackward0", loss_rule_fn},
    {"BinaryCrossEntropyBackward0", loss_rule_fn},
    {"BinaryCrossEntropyWithLogitsBackward0", loss_rule_fn},
};

static ampc_tensor *pointwise_loss(ampc_op op, const ampc_tensor *input, const ampc_tensor *target,
                                   const ampc_tensor *weight, const ampc_tensor *pos_weight, ampc_reduction reduction,
                                   double beta) {
    static const ampc_op ac_ops[5] = {AMPC_OP_MSE_LOSS, AMPC_OP_L1_LOSS, AMPC_OP_SMOOTH_L1_LOSS,
                                               AMPC_OP_BCE_LOSS,
                                               AMPC_OP_BCE_WITH_LOGITS_LOSS};
    ampc_autocast_scope ac;
    int acr = ampc_autocast_enter(ac_ops[op - AMPC_OP_MSE_LOSS], 4,
                                  (const ampc_tensor *[]){input, target, weight, pos_weight}, false, &ac);
    if (acr)
        return acr < 0 ? NULL
                       : ampc_autocast_exit(&ac, pointwise_loss(op, ac.t[0], ac.t[1], ac.t[2], ac.t[3], reduction, beta));
    int nd;
    int64_t shape[AMPC_MAX_DIMS];
    ampc_tensor *ops[4];
    if (op == AMPC_OP_SMOOTH_L1_LOSS && !(beta >= 0)) {
        ampc_set_error(AMPC_E_RUNTIME, "smooth_l1_loss does not support negative values for beta.");
        return NULL;
    }
    if (loss_operands(op, input, target, weight, pos_weight, reduction, &nd, shape, ops) != AMPC_OK) return NULL;
    ampc_dtype dt = ampc_dtype_is_floating(target->dtype) ? ampc_promote_types(input->dtype, target->dtype) : input->dtype;
    ampc_tensor *loss = reduction == AMPC_REDUCTION_NONE ? ampc_empty(nd, shape, dt, input->device)
                                                         : ampc_empty(0, NULL, dt, input->device);
    ampc_status st = loss ? AMPC_OK : ampc_last_status();
    if (st == AMPC_OK) {
        ampc_pointwise_loss_args a = {.loss = loss, .input = ops[0], .target = ops[1], .weight = ops[2],
                                      .pos_weight = ops[3], .reduction = reduction, .beta = beta};
        /* reduced losses of empty inputs still need their 0 (sum) or NaN (mean) */
        st = ampc_numel(loss) > 0 ? ampc_dispatch_pointwise_loss(op, &a) : AMPC_OK;
    }
    nn_release(4, ops);
    const ampc_tensor *inputs[4] = {input, target, weight, pos_weight};
    if (st == AMPC_OK && ampc_any_requires_grad(2, inputs)) {
        ampc_node_attrs attrs;
        memset(&attrs, 0, sizeof attrs);
        attrs.ints[0] = reduction, attrs.ints[1] = op, attrs.ints[2] = weight != NULL, attrs.ints[3] = pos_weight != NULL;
        attrs.n_ints = 4;
        attrs.scalars[0] = ampc_scalar_float(beta);
        const ampc_tensor *saved[4];
        int n_saved = 0;
        for (int i = 0; i < 4; i++)
            if (inputs[i]) saved[n_saved++] = inputs[i];
        /* no grads for weight and pos_weight (PyTorch has none either) */
        if (!ampc_autograd_record(&loss_rules[op - AMPC_OP_MSE_LOSS], 2, inputs, 1, &loss, n_saved, saved, &attrs))
            st = ampc_last_status();
    }
    if (st != AMPC_OK) {
        ampc_tensor_decref(loss);
        return NULL;
    }
    return loss;
}

ampc_status ampc_pointwise_loss_backward(ampc_op op, const ampc_tensor *grad_loss, const ampc_tensor *input,
                                         const ampc_tensor *target, const ampc_tensor *weight,
                                         const ampc_tensor *pos_weight, ampc_reduction reduction, double beta,
                                         const bool need[2], ampc_tensor **grad_input, ampc_tensor **grad_target) {
    *grad_input = *grad_target = NULL;
    int nd;
    int64_t shape[AMPC_MAX_DIMS];
    ampc_tensor *ops[4], *g = NULL, *gx = NULL, *gt = NULL;
    AMPC_TRY(loss_operands(op, input, target, weight, pos_weight, reduction, &nd, shape, ops));
    ampc_status st = AMPC_OK;
    if (reduction == AMPC_REDUCTION_NONE) {
        ampc_tensor *e = ampc_expand(grad_loss, nd, shape);
        g = e ? ampc_contiguous(e) : NULL;
        ampc_tensor_decref(e);
    } else if (grad_loss->ndim != 0) {
        st = ampc_set_error(AMPC_E_RUNTIME, "%s_backward: expected a 0-dim grad for a reduced loss", loss_name(op));
    } else {
        g = ampc_contiguous(grad_loss);
    }
    if (st == AMPC_OK && !g) st = ampc_last_status();
    bool want_t = need[1] && ampc_dtype_is_floating(target->dtype);
    if (st == AMPC_OK && need[0] && !(gx = ampc_empty(nd, shape, input->dtype, input->device))) st = ampc_last_status();
    if (st == AMPC_OK && want_t && !(gt = ampc_empty(nd, shape, target->dtype, target->device))) st = ampc_last_status();
    if (st == AMPC_OK && (gx || gt)) {
        ampc_pointwise_loss_backward_args a = {.grad_input = gx, .grad_target = gt, .grad_loss = g, .input = ops[0],
                                               .target = ops[1], .weight = ops[2], .pos_weight = ops[3],
                                               .reduction = reduction, .beta = beta};
        st = ampc_numel(ops[0]) > 0 ? ampc_dispatch_pointwise_loss_backward(backward_op(op), &a) : AMPC_OK;
    }
    nn_release(4, ops);
    ampc_tensor_decref(g);
    if (st == AMPC_OK && gx) {
        *grad_input = nn_sum_to(gx, input->ndim, input->shape);
        if (!*grad_input) st = ampc_last_status();
    }
    if (st == AMPC_OK && gt) {
        *grad_target = nn_sum_to(gt, target->ndim, target->shape);
        if (!*grad_target) st = ampc_last_status();
    }
    ampc_tensor_decref(gx), ampc_tensor_decref(gt);
    if (st != AMPC_OK) {
        ampc_tensor_decref(*grad_input), ampc_tensor_decref(*grad_target);
        *grad_input = *grad_target = NULL;
    }
    return st;
}

/* MSE's gradient written with recording frontends, for backward with create_graph=True (a
 * gradient penalty on an MSE loss): d loss / d input = k * (input - target) * g, k = 2 (sum,
 * none) or 2 / numel (mean); d loss / d target is its negative. */
static ampc_status mse_backward_differentiable(const ampc_tensor *g, const ampc_tensor *input,
                                               const ampc_tensor *target, ampc_reduction reduction,
                                               const bool need[2], ampc_tensor **grad_input,
                                               ampc_tensor **grad_target) {
    ampc_status st = AMPC_OK;
    ampc_tensor *d = ampc_binary(AMPC_OP_SUB, input, target, ampc_scalar_none());
    double k = 2.0;
    if (d && reduction == AMPC_REDUCTION_MEAN) k /= (double)(ampc_numel(d) ? ampc_numel(d) : 1);
    ampc_tensor *kt = d ? ampc_wrap_scalar(ampc_scalar_float(k), d->device) : NULL;
    ampc_tensor *kd = kt ? ampc_binary(AMPC_OP_MUL, d, kt, ampc_scalar_none()) : NULL;
    ampc_tensor *full = kd ? ampc_binary(AMPC_OP_MUL, kd, g, ampc_scalar_none()) : NULL;
    if (!full) st = ampc_last_status();
    if (st == AMPC_OK && need[0] && !(*grad_input = nn_sum_to(full, input->ndim, input->shape))) st = ampc_last_status();
    if (st == AMPC_OK && need[1] && ampc_dtype_is_floating(target->dtype)) {
        ampc_tensor *neg = ampc_unary(AMPC_OP_NEG, full);
        *grad_target = neg ? nn_sum_to(neg, target->ndim, target->shape) : NULL;
        ampc_tensor_decref(neg);
        if (!*grad_target) st = ampc_last_status();
    }
    ampc_tensor_decref(d), ampc_tensor_decref(kt), ampc_tensor_decref(kd), ampc_tensor_decref(full);
    return st;
}

static ampc_status loss_rule_fn(ampc_node *node, ampc_tensor *const *grads, ampc_tensor **grad_inputs) {
    if (ampc_grad_enabled() && (ampc_op)node->attrs.ints[1] == AMPC_OP_MSE_LOSS) {
        const ampc_tensor *x = ampc_node_saved(node, 0), *t = x ? ampc_node_saved(node, 1) : NULL;
        if (!t) return ampc_last_status();
        if (!grads[0]) return AMPC_OK;
        return mse_backward_differentiable(grads[0], x, t, (ampc_reduction)node->attrs.ints[0],
                                           node->needs_input_grad, &grad_inputs[0], &grad_inputs[1]);
    }
    AMPC_TRY(nn_first_order_only(node));
    const ampc_tensor *saved[4] = {NULL, NULL, NULL, NULL};
    for (int i = 0; i < node->n_saved; i++)
        if (!(saved[i] = ampc_node_saved(node, i))) return ampc_last_status();
    if (!grads[0]) return AMPC_OK;
    const int64_t *v = node->attrs.ints;
    const ampc_tensor *weight = v[2] ? saved[2] : NULL, *pos_weight = v[3] ? saved[2 + (v[2] != 0)] : NULL;
    return ampc_pointwise_loss_backward((ampc_op)v[1], grads[0], saved[0], saved[1], weight, pos_weight,
                                        (ampc_reduction)v[0], ampc_scalar_to_double(node->attrs.scalars[0]),
                                        node->needs_input_grad, &grad_inputs[0], &grad_inputs[1]);
}

/* ---------------------------------------------------------------- frontends */

ampc_tensor *ampc_mse_loss(const ampc_tensor *input, const ampc_tensor *target, ampc_reduction reduction) {
    return pointwise_loss(AMPC_OP_MSE_LOSS, input, target, NULL, NULL, reduction, 0);
}

ampc_tensor *ampc_l1_loss(const ampc_tensor *input, const ampc_tensor *target, ampc_reduction reduction) {
    return pointwise_loss(AMPC_OP_L1_LOSS, input, target, NULL, NULL, reduction, 0);
}

ampc_tensor *ampc_smooth_l1_loss(const ampc_tensor *input, const ampc_tensor *target, ampc_reduction reduction,
                                 double beta) {
    return pointwise_loss(AMPC_OP_SMOOTH_L1_LOSS, input, target, NULL, NULL, reduction, beta);
}

ampc_tensor *ampc_binary_cross_entropy(const ampc_tensor *input, const ampc_tensor *target, const ampc_tensor *weight,
                                       ampc_reduction reduction) {
    return pointwise_loss(AMPC_OP_BCE_LOSS, input, target, weight, NULL, reduction, 0);
}

ampc_tensor *ampc_binary_cross_entropy_with_logits(const ampc_tensor *input, const ampc_tensor *target,
                                                   const ampc_tensor *weight, const ampc_tensor *pos_weight,
                                                   ampc_reduction reduction) {
    return pointwise_loss(AMPC_OP_BCE_WITH_LOGITS_LOSS, input, target, weight, pos_weight, reduction, 0);
}
