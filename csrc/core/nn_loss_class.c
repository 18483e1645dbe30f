/* nn_loss_class.c: the classification losses cross_entropy (class indices or probabilities,
 * class weights, ignore_index, label_smoothing, reduction) and nll_loss, with their gradient
 * rules. The elementwise losses are nn_loss.c's.
 *
 * cross_entropy is one fused kernel: log-softmax and the negative log-likelihood in one pass
 * over the logits, keeping per row only the log-sum-exp; backward rebuilds softmax from the
 * logits and that lse. Shapes follow PyTorch: input (N, C, d1, ...) or unbatched (C), class
 * target (N, d1, ...) or (), probability target shaped like input. Kernels see
 * (N, C, K = d1 * ...) contiguous views. */
#include <stdio.h>

#include "autocast.h"
#include "autograd.h"
#include "nn_common.h"

/* ---------------------------------------------------------------- shapes of classification losses */

typedef struct class_shape {
    int64_t n, c, k;
    bool probs;       /* probability targets */
    int loss_ndim;    /* shape of the unreduced loss */
    int64_t loss_shape[AMPC_MAX_DIMS];
} class_shape;

static ampc_status check_reduction(ampc_reduction r) {
    if (r < AMPC_REDUCTION_NONE || r > AMPC_REDUCTION_SUM)
        return ampc_set_error(AMPC_E_VALUE, "%d is not a valid value for reduction", (int)r);
    return AMPC_OK;
}

static bool is_class_index_dtype(ampc_dtype dt) { return dt == AMPC_INT64 || dt == AMPC_INT32 || dt == AMPC_UINT8; }

static ampc_status class_loss_shape(const char *name, const ampc_tensor *x, const ampc_tensor *t,
                                    const ampc_tensor *weight, bool allow_probs, class_shape *s) {
    char s1[96], s2[96];
    const ampc_tensor *all[3] = {x, t, weight};
    AMPC_TRY(nn_check_device(name, 3, all));
    if (x->ndim < 1)
        return ampc_set_error(AMPC_E_RUNTIME, "%s: expected input of at least 1 dim (C) or (N, C, ...), got a 0-dim tensor",
                              name);
    AMPC_TRY(nn_check_floating(name, x, "input"));
    bool batched = x->ndim >= 2;
    s->n = batched ? x->shape[0] : 1;
    s->c = x->shape[batched ? 1 : 0];
    s->k = 1;
    for (int i = 2; i < x->ndim; i++) s->k *= x->shape[i];
    s->probs = false;
    if (allow_probs && ampc_dtype_is_floating(t->dtype) && t->ndim == x->ndim) {
        for (int i = 0; i < x->ndim; i++)
            if (t->shape[i] != x->shape[i])
                return ampc_set_error(AMPC_E_RUNTIME, "%s: expected a probability target of shape %s, got %s", name,
                                      nn_shape(x, s1, sizeof s1), nn_shape(t, s2, sizeof s2));
        s->probs = true;
    } else if (!is_class_index_dtype(t->dtype)) {
        return ampc_set_error(AMPC_E_RUNTIME, "expected target dtype to be Long or Byte, but got %s",
                              ampc_dtype_torch_name(t->dtype));
    } else if (!batched) {
        if (t->ndim != 0)
            return ampc_set_error(AMPC_E_RUNTIME, "%s: expected a 0-dim target for an input of shape %s, got %s", name,
                                  nn_shape(x, s1, sizeof s1), nn_shape(t, s2, sizeof s2));
    } else if (x->ndim == 2) {
        if (t->ndim != 1)
            return ampc_set_error(AMPC_E_RUNTIME, "0D or 1D target tensor expected, multi-target not supported");
        if (t->shape[0] != s->n)
            return ampc_set_error(AMPC_E_VALUE, "Expected input batch_size (%lld) to match target batch_size (%lld).",
                                  (long long)s->n, (long long)t->shape[0]);
    } else {
        int64_t expect[AMPC_MAX_DIMS];
        expect[0] = x->shape[0];
        for (int i = 2; i < x->ndim; i++) expect[i - 1] = x->shape[i];
        bool same = t->ndim == x->ndim - 1;
        for (int i = 0; same && i < t->ndim; i++) same = t->shape[i] == expect[i];
        if (!same)
            return ampc_set_error(AMPC_E_RUNTIME, "Expected target size %s, got %s",
                                  ampc_shape_str(x->ndim - 1, expect, s1, sizeof s1), nn_shape(t, s2, sizeof s2));
    }
    if (weight && (weight->ndim != 1 || weight->shape[0] != s->c))
        return ampc_set_error(AMPC_E_RUNTIME,
                              "weight tensor should be defined either for all %lld classes or no classes but got weight "
                              "tensor of shape: %s",
                              (long long)s->c, nn_shape(weight, s1, sizeof s1));
    if (weight) AMPC_TRY(nn_check_floating(name, weight, "weight"));
    /* the unreduced loss: input's shape without the class dim */
    s->loss_ndim = 0;
    for (int i = 0; i < x->ndim; i++)
        if (i != (batched ? 1 : 0)) s->loss_shape[s->loss_ndim++] = x->shape[i];
    return AMPC_OK;
}

/* Contiguous (N, C, K) / (N, K) / (N, C, K) views of input, target and (probabilities) target. */
static ampc_status class_views(const class_shape *s, const ampc_tensor *x, const ampc_tensor *t, ampc_tensor **xv,
                               ampc_tensor **tv) {
    int64_t x3[3] = {s->n, s->c, s->k}, t2[2] = {s->n, s->k};
    ampc_tensor *xc = ampc_contiguous(x), *tc = xc ? ampc_contiguous(t) : NULL;
    *xv = tc ? nn_reshape_view(xc, 3, x3) : NULL;
    *tv = *xv ? (s->probs ? nn_reshape_view(tc, 3, x3) : nn_reshape_view(tc, 2, t2)) : NULL;
    ampc_tensor_decref(xc), ampc_tensor_decref(tc);
    if (!*tv) {
        ampc_tensor_decref(*xv);
        *xv = NULL;
        return ampc_last_status();
    }
    return AMPC_OK;
}

/* The loss tensor: (N, *) for reduction none (as the kernel's (N, K) view in *kv), else 0-dim. */
static ampc_tensor *loss_output(const class_shape *s, ampc_reduction reduction, ampc_dtype dt, ampc_device dev,
                                ampc_tensor **kv) {
    int64_t nk[2] = {s->n, s->k};
    ampc_tensor *loss = reduction == AMPC_REDUCTION_NONE ? ampc_empty(s->loss_ndim, s->loss_shape, dt, dev)
                                                         : ampc_empty(0, NULL, dt, dev);
    *kv = loss ? (reduction == AMPC_REDUCTION_NONE ? nn_reshape_view(loss, 2, nk) : (ampc_tensor_incref(loss), loss))
               : NULL;
    if (loss && !*kv) {
        ampc_tensor_decref(loss);
        return NULL;
    }
    return loss;
}

/* ---------------------------------------------------------------- cross entropy */

static ampc_status cross_entropy_rule_fn(ampc_node *node, ampc_tensor *const *grads, ampc_tensor **grad_inputs);
static const ampc_grad_rule cross_entropy_rule = {"CrossEntropyLossBackward0", cross_entropy_rule_fn};

ampc_tensor *ampc_native_cross_entropy(const ampc_tensor *input, const ampc_tensor *target, const ampc_tensor *weight,
                                       ampc_reduction reduction, int64_t ignore_index, double label_smoothing,
                                       ampc_tensor **lse, ampc_tensor **total_weight) {
    *lse = *total_weight = NULL;
    ampc_autocast_scope ac;
    int acr = ampc_autocast_enter(AMPC_OP_CROSS_ENTROPY, 3, (const ampc_tensor *[]){input, target, weight}, false, &ac);
    if (acr)
        return acr < 0 ? NULL
                       : ampc_autocast_exit(&ac, ampc_native_cross_entropy(ac.t[0], ac.t[1], ac.t[2], reduction,
                                                                           ignore_index, label_smoothing, lse,
                                                                           total_weight));
    class_shape s;
    if (check_reduction(reduction) != AMPC_OK ||
        class_loss_shape("cross_entropy", input, target, weight, true, &s) != AMPC_OK)
        return NULL;
    if (!(label_smoothing >= 0.0 && label_smoothing <= 1.0)) {
        ampc_set_error(AMPC_E_RUNTIME, "label_smoothing must be between 0.0 and 1.0. Got: %g", label_smoothing);
        return NULL;
    }
    if (s.probs && ignore_index != -100) {
        ampc_set_error(AMPC_E_RUNTIME, "ignore_index is not supported for floating point target");
        return NULL;
    }
    ampc_dtype out_dt = s.probs ? ampc_promote_types(input->dtype, target->dtype) : input->dtype;
    int64_t nk[2] = {s.n, s.k};
    ampc_tensor *x = NULL, *t = NULL, *w = NULL, *kv = NULL, *loss = NULL;
    ampc_status st = class_views(&s, input, target, &x, &t);
    if (st == AMPC_OK) st = nn_contig(weight, &w);
    if (st == AMPC_OK) {
        loss = loss_output(&s, reduction, out_dt, input->device, &kv);
        *lse = loss ? ampc_empty(2, nk, nn_stats_dtype(input->dtype), input->device) : NULL;
        *total_weight = *lse ? ampc_empty(0, NULL, nn_stats_dtype(input->dtype), input->device) : NULL;
        if (!*total_weight) st = ampc_last_status();
    }
    if (st == AMPC_OK) {
        ampc_cross_entropy_args a = {.loss = kv, .lse = *lse, .total_weight = *total_weight, .logits = x, .target = t,
                                     .weight = w, .reduction = reduction, .ignore_index = ignore_index,
                                     .probs = s.probs, .label_smoothing = label_smoothing};
        st = ampc_dispatch_cross_entropy(AMPC_OP_CROSS_ENTROPY, &a); /* also for empty batches: the reduced loss is written */
    }
    ampc_tensor *tmp[4] = {x, t, w, kv};
    nn_release(4, tmp);
    if (st == AMPC_OK && ampc_any_requires_grad(2, (const ampc_tensor *[]){input, target})) {
        ampc_node_attrs attrs;
        memset(&attrs, 0, sizeof attrs);
        attrs.ints[0] = reduction, attrs.ints[1] = ignore_index, attrs.n_ints = 2;
        attrs.scalars[0] = ampc_scalar_float(label_smoothing);
        /* no grad for the class weights (PyTorch has none either) */
        if (!ampc_autograd_record(&cross_entropy_rule, 2, (const ampc_tensor *[]){input, target}, 1, &loss,
                                  weight ? 5 : 4, (const ampc_tensor *[]){input, target, *lse, *total_weight, weight},
                                  &attrs))
            st = ampc_last_status();
    }
    if (st != AMPC_OK) {
        ampc_tensor_decref(loss), ampc_tensor_decref(*lse), ampc_tensor_decref(*total_weight);
        *lse = *total_weight = NULL;
        return NULL;
    }
    return loss;
}

ampc_tensor *ampc_cross_entropy(const ampc_tensor *input, const ampc_tensor *target, const ampc_tensor *weight,
                                ampc_reduction reduction, int64_t ignore_index, double label_smoothing) {
    ampc_tensor *lse, *total;
    ampc_tensor *loss = ampc_native_cross_entropy(input, target, weight, reduction, ignore_index, label_smoothing, &lse,
                                                  &total);
    ampc_tensor_decref(lse);
    ampc_tensor_decref(total);
    return loss;
}

/* The loss grad as the kernels take it: (N, K) for reduction none, else 0-dim. */
static ampc_tensor *grad_loss_view(const ampc_tensor *g, const class_shape *s, ampc_reduction reduction) {
    char s1[96];
    int64_t want = reduction == AMPC_REDUCTION_NONE ? s->n * s->k : 1;
    if (ampc_numel(g) != want || (reduction != AMPC_REDUCTION_NONE && g->ndim != 0)) {
        ampc_set_error(AMPC_E_RUNTIME, "loss backward: grad of shape %s does not match the loss", nn_shape(g, s1, sizeof s1));
        return NULL;
    }
    ampc_tensor *c = ampc_contiguous(g);
    if (!c || reduction != AMPC_REDUCTION_NONE) return c;
    int64_t nk[2] = {s->n, s->k};
    ampc_tensor *v = nn_reshape_view(c, 2, nk);
    ampc_tensor_decref(c);
    return v;
}

ampc_status ampc_cross_entropy_backward(const ampc_tensor *grad_loss, const ampc_tensor *input,
                                        const ampc_tensor *target, const ampc_tensor *weight, const ampc_tensor *lse,
                                        const ampc_tensor *total_weight, ampc_reduction reduction,
                                        int64_t ignore_index, double label_smoothing, bool need_input,
                                        bool need_target, ampc_tensor **grad_input, ampc_tensor **grad_target) {
    *grad_input = *grad_target = NULL;
    class_shape s;
    AMPC_TRY(check_reduction(reduction));
    AMPC_TRY(class_loss_shape("cross_entropy_backward", input, target, weight, true, &s));
    if (ampc_numel(lse) != s.n * s.k || ampc_numel(total_weight) != 1)
        return ampc_set_error(AMPC_E_RUNTIME, "cross_entropy_backward: lse or total_weight do not match the input");
    need_target = need_target && s.probs;
    ampc_tensor *x = NULL, *t = NULL, *w = NULL, *g = NULL, *lc = NULL, *gx = NULL, *gt = NULL;
    ampc_status st = class_views(&s, input, target, &x, &t);
    if (st == AMPC_OK) st = nn_contig(weight, &w);
    if (st == AMPC_OK) st = nn_contig(lse, &lc);
    if (st == AMPC_OK && !(g = grad_loss_view(grad_loss, &s, reduction))) st = ampc_last_status();
    if (st == AMPC_OK && need_input && !(gx = ampc_empty(input->ndim, input->shape, input->dtype, input->device)))
        st = ampc_last_status();
    if (st == AMPC_OK && need_target && !(gt = ampc_empty(target->ndim, target->shape, target->dtype, target->device)))
        st = ampc_last_status();
    if (st == AMPC_OK && (gx || gt)) {
        int64_t x3[3] = {s.n, s.c, s.k};
        ampc_tensor *gxv = gx ? nn_reshape_view(gx, 3, x3) : NULL, *gtv = gt ? nn_reshape_view(gt, 3, x3) : NULL;
        ampc_cross_entropy_backward_args a = {.grad_logits = gxv, .grad_target = gtv, .grad_loss = g, .logits = x,
                                              .target = t, .weight = w, .lse = lc, .total_weight = total_weight,
                                              .reduction = reduction, .ignore_index = ignore_index,
                                              .probs = s.probs, .label_smoothing = label_smoothing};
        if ((gx && !gxv) || (gt && !gtv))
            st = ampc_last_status();
        else if (s.n * s.c * s.k > 0)
            st = ampc_dispatch_cross_entropy_backward(AMPC_OP_CROSS_ENTROPY_BACKWARD, &a);
        ampc_tensor_decref(gxv), ampc_tensor_decref(gtv);
    }
    ampc_tensor *tmp[5] = {x, t, w, g, lc};
    nn_release(5, tmp);
    if (st != AMPC_OK) {
        ampc_tensor_decref(gx), ampc_tensor_decref(gt);
        return st;
    }
    *grad_input = gx, *grad_target = gt;
    return AMPC_OK;
}

static ampc_status cross_entropy_rule_fn(ampc_node *node, ampc_tensor *const *grads, ampc_tensor **grad_inputs) {
    const ampc_tensor *saved[5];
    AMPC_TRY(nn_rule_saved(node, 5, saved));
    if (!grads[0]) return AMPC_OK;
    return ampc_cross_entropy_backward(grads[0], saved[0], saved[1], saved[4], saved[2], saved[3],
                                       (ampc_reduction)node->attrs.ints[0], node->attrs.ints[1],
                                       ampc_scalar_to_double(node->attrs.scalars[0]), node->needs_input_grad[0],
                                       node->needs_input_grad[1], &grad_inputs[0], &grad_inputs[1]);
}

/* ---------------------------------------------------------------- nll_loss */

static ampc_status nll_rule_fn(ampc_node *node, ampc_tensor *const *grads, ampc_tensor **grad_inputs);
static const ampc_grad_rule nll_rule = {"NllLossBackward0", nll_rule_fn};

ampc_tensor *ampc_native_nll_loss(const ampc_tensor *input, const ampc_tensor *target, const ampc_tensor *weight,
                                  ampc_reduction reduction, int64_t ignore_index, ampc_tensor **total_weight) {
    *total_weight = NULL;
    ampc_autocast_scope ac;
    int acr = ampc_autocast_enter(AMPC_OP_NLL_LOSS, 3, (const ampc_tensor *[]){input, target, weight}, false, &ac);
    if (acr)
        return acr < 0 ? NULL
                       : ampc_autocast_exit(&ac, ampc_native_nll_loss(ac.t[0], ac.t[1], ac.t[2], reduction, ignore_index,
                                                                      total_weight));
    class_shape s;
    if (check_reduction(reduction) != AMPC_OK ||
        class_loss_shape("nll_loss", input, target, weight, false, &s) != AMPC_OK)
        return NULL;
    ampc_tensor *x = NULL, *t = NULL, *w = NULL, *kv = NULL, *loss = NULL;
    ampc_status st = class_views(&s, input, target, &x, &t);
    if (st == AMPC_OK) st = nn_contig(weight, &w);
    if (st == AMPC_OK) {
        loss = loss_output(&s, reduction, input->dtype, input->device, &kv);
        *total_weight = loss ? ampc_empty(0, NULL, nn_stats_dtype(input->dtype), input->device) : NULL;
        if (!*total_weight) st = ampc_last_status();
    }
    if (st == AMPC_OK) {
        ampc_nll_loss_args a = {.loss = kv, .total_weight = *total_weight, .logp = x, .target = t, .weight = w,
                                .reduction = reduction, .ignore_index = ignore_index};
        st = ampc_dispatch_nll_loss(AMPC_OP_NLL_LOSS, &a);
    }
    ampc_tensor *tmp[4] = {x, t, w, kv};
    nn_release(4, tmp);
    if (st == AMPC_OK && ampc_any_requires_grad(1, &input)) {
        ampc_node_attrs attrs;
        memset(&attrs, 0, sizeof attrs);
        attrs.ints[0] = reduction, attrs.ints[1] = ignore_index, attrs.n_ints = 2;
        if (!ampc_autograd_record(&nll_rule, 1, &input, 1, &loss, weight ? 4 : 3,
                                  (const ampc_tensor *[]){input, target, *total_weight, weight}, &attrs))
            st = ampc_last_status();
    }
    if (st != AMPC_OK) {
        ampc_tensor_decref(loss), ampc_tensor_decref(*total_weight);
        *total_weight = NULL;
        return NULL;
    }
    return loss;
}

ampc_tensor *ampc_nll_loss(const ampc_tensor *input, const ampc_tensor *target, const ampc_tensor *weight,
                           ampc_reduction reduction, int64_t ignore_index) {
    ampc_tensor *total;
    ampc_tensor *loss = ampc_native_nll_loss(input, target, weight, reduction, ignore_index, &total);
    ampc_tensor_decref(total);
    return loss;
}

ampc_tensor *ampc_nll_loss_backward(const ampc_tensor *grad_loss, const ampc_tensor *input, const ampc_tensor *target,
                                    const ampc_tensor *weight, const ampc_tensor *total_weight,
                                    ampc_reduction reduction, int64_t ignore_index) {
    class_shape s;
    if (check_reduction(reduction) != AMPC_OK ||
        class_loss_shape("nll_loss_backward", input, target, weight, false, &s) != AMPC_OK)
        return NULL;
    ampc_tensor *x = NULL, *t = NULL, *w = NULL, *g = NULL, *gx = NULL, *gxv = NULL;
    ampc_status st = class_views(&s, input, target, &x, &t);
    if (st == AMPC_OK) st = nn_contig(weight, &w);
    if (st == AMPC_OK && !(g = grad_loss_view(grad_loss, &s, reduction))) st = ampc_last_status();
    if (st == AMPC_OK) {
        int64_t x3[3] = {s.n, s.c, s.k};
        gx = ampc_empty(input->ndim, input->shape, input->dtype, input->device);
        gxv = gx ? nn_reshape_view(gx, 3, x3) : NULL;
        if (!gxv) st = ampc_last_status();
    }
    if (st == AMPC_OK) {
        ampc_nll_loss_backward_args a = {.grad_logp = gxv, .grad_loss = g, .target = t, .weight = w,
                                         .total_weight = total_weight, .reduction = reduction,
                                         .ignore_index = ignore_index};
        st = ampc_numel(gxv) > 0 ? ampc_dispatch_nll_loss_backward(AMPC_OP_NLL_LOSS_BACKWARD, &a) : AMPC_OK;
    }
    return nn_finish(st, gx, 5, (ampc_tensor *[]){x, t, w, g, gxv});
}

static ampc_status nll_rule_fn(ampc_node *node, ampc_tensor *const *grads, ampc_tensor **grad_inputs) {
    const ampc_tensor *saved[4];
    AMPC_TRY(nn_rule_saved(node, 4, saved));
    if (!grads[0]) return AMPC_OK;
    grad_inputs[0] = ampc_nll_loss_backward(grads[0], saved[0], saved[1], saved[3], saved[2],
                                            (ampc_reduction)node->attrs.ints[0], node->attrs.ints[1]);
    return grad_inputs[0] ? AMPC_OK : ampc_last_status();
}
