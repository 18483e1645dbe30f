/* nn_norm.c: batch_norm (training and eval, running statistics), layer_norm and group_norm, and
 * their gradient rules.
 *
 * Kernels see 3-d (batch and group norm: (N, C, L)) or 2-d (layer norm: (M, D)) contiguous
 * views. Statistics are float32 (float64 for float64 input) whatever the input dtype, and each
 * tensor keeps its own dtype: fp16 activations with fp32 weight, bias and running stats is what
 * autocast produces. The forward saves the statistics backward needs (mean and 1/std), so
 * backward never recomputes them. */
#include <stdio.h>

#include "autocast.h"
#include "autograd.h"
#include "nn_common.h"

/* t (made contiguous) viewed with another shape of the same numel. */
static ampc_tensor *flat_view(const ampc_tensor *t, int nd, const int64_t *shape) {
    ampc_tensor *c = ampc_contiguous(t);
    if (!c) return NULL;
    ampc_tensor *v = nn_reshape_view(c, nd, shape);
    ampc_tensor_decref(c);
    return v;
}

static ampc_status check_vector(const char *what, const ampc_tensor *t, int64_t c) {
    if (!t) return AMPC_OK;
    if (ampc_numel(t) != c)
        return ampc_set_error(AMPC_E_RUNTIME, "%s should contain %lld elements not %lld", what, (long long)c,
                              (long long)ampc_numel(t));
    return nn_check_floating("batch_norm", t, what);
}

static void release_outs(ampc_tensor **a, ampc_tensor **b, ampc_tensor **c) {
    ampc_tensor_decref(*a), ampc_tensor_decref(*b), ampc_tensor_decref(*c);
    *a = *b = *c = NULL;
}

/* Grad outputs (N, C, L)-shaped of the dtypes of input, weight, bias, as asked by need[]. */
static ampc_status alloc_grads(const ampc_tensor *x, int nd, const int64_t *shape, const ampc_tensor *weight,
                               int64_t c, const bool need[3], ampc_dtype param_dtype, ampc_tensor **gx,
                               ampc_tensor **gw, ampc_tensor **gb) {
    int64_t cs[1] = {c};
    *gx = need[0] ? ampc_empty(nd, shape, x->dtype, x->device) : NULL;
    *gw = need[1] ? ampc_empty(weight ? weight->ndim : 1, weight ? weight->shape : cs,
                               weight ? weight->dtype : param_dtype, x->device)
                  : NULL;
    *gb = need[2] ? ampc_empty(weight ? weight->ndim : 1, weight ? weight->shape : cs,
                               weight ? weight->dtype : param_dtype, x->device)
                  : NULL;
    if ((need[0] && !*gx) || (need[1] && !*gw) || (need[2] && !*gb)) {
        release_outs(gx, gw, gb);
        return ampc_last_status();
    }
    return AMPC_OK;
}

/* Views of grads computed for flattened shapes, back in the caller's shapes. */
static ampc_tensor *reshaped(ampc_tensor *t, int nd, const int64_t *shape) {
    if (!t) return NULL;
    ampc_tensor *v = nn_reshape_view(t, nd, shape);
    ampc_tensor_decref(t);
    return v;
}

/* What every norm backward works on: grad_out and input viewed with the kernel's flat shape,
 * the weight contiguous, and the grads need[] asks for (NULL where not). */
typedef struct norm_grads {
    ampc_tensor *g, *x, *w;
    ampc_tensor *gx, *gw, *gb;
} norm_grads;

static ampc_status norm_grads_begin(norm_grads *o, const ampc_tensor *grad_out, const ampc_tensor *input,
                                    const ampc_tensor *weight, int nd, const int64_t *shape, int64_t c,
                                    const bool need[3]) {
    memset(o, 0, sizeof *o);
    o->g = flat_view(grad_out, nd, shape);
    o->x = o->g ? flat_view(input, nd, shape) : NULL;
    ampc_status st = o->x ? nn_contig(weight, &o->w) : ampc_last_status();
    if (st == AMPC_OK) st = alloc_grads(input, nd, shape, weight, c, need, input->dtype, &o->gx, &o->gw, &o->gb);
    return st;
}

/* How every norm backward ends: the views released; on failure the grads are dropped, otherwise
 * handed out, grad_input back in the input's shape (the kernels computed it for a flat one). */
static ampc_status hand_out_grads(ampc_status st, const ampc_tensor *input, norm_grads *o, ampc_tensor **grad_input,
                                  ampc_tensor **grad_weight, ampc_tensor **grad_bias) {
    ampc_tensor *tmp[3] = {o->g, o->x, o->w};
    nn_release(3, tmp);
    if (st != AMPC_OK) {
        release_outs(&o->gx, &o->gw, &o->gb);
        return st;
    }
    *grad_input = reshaped(o->gx, input->ndim, input->shape);
    *grad_weight = o->gw, *grad_bias = o->gb;
    return AMPC_OK;
}

/* The gradient rule of all three norms (end of file): the saved tensors into the op's backward. */
static ampc_status norm_rule_fn(ampc_node *node, ampc_tensor *const *grads, ampc_tensor **grad_inputs);

/* Layer norm and group norm run the same forward once their checks have passed: the input viewed
 * with a flat shape, y and the float statistics allocated, one kernel, and a node that saves
 * (input, mean, rstd[, weight]). They differ only in the shapes, the op, num_groups (group norm
 * only) and the int the node keeps for backward. */
static ampc_tensor *stats_norm_forward(ampc_op op, const ampc_grad_rule *rule, const ampc_tensor *input,
                                       const ampc_tensor *weight, const ampc_tensor *bias, double eps, int flat_nd,
                                       const int64_t *flat_shape, int stats_nd, const int64_t *stats_shape,
                                       int64_t groups, int64_t node_int, ampc_tensor **mean,
                                       ampc_tensor **rstd) {
    ampc_tensor *x = flat_view(input, flat_nd, flat_shape), *w = NULL, *b = NULL, *y = NULL, *yf = NULL;
    ampc_status st = x ? AMPC_OK : ampc_last_status();
    if (st == AMPC_OK) st = nn_contig(weight, &w);
    if (st == AMPC_OK) st = nn_contig(bias, &b);
    if (st == AMPC_OK) {
        y = ampc_empty(input->ndim, input->shape, input->dtype, input->device);
        yf = y ? nn_reshape_view(y, flat_nd, flat_shape) : NULL;
        *mean = yf ? ampc_empty(stats_nd, stats_shape, nn_stats_dtype(input->dtype), input->device) : NULL;
        *rstd = *mean ? ampc_empty(stats_nd, stats_shape, nn_stats_dtype(input->dtype), input->device) : NULL;
        if (!*rstd) st = ampc_last_status();
    }
    if (st == AMPC_OK) {
        bool any = ampc_numel(yf) > 0 || ampc_numel(*mean) > 0 || ampc_numel(*rstd) > 0;
        if (any && op == AMPC_OP_GROUP_NORM)
            st = ampc_dispatch_group_norm(op, &(ampc_group_norm_args){.y = yf, .mean = *mean, .rstd = *rstd, .x = x,
                                                                      .weight = w, .bias = b, .groups = groups,
                                                                      .eps = eps});
        else if (any)
            st = ampc_dispatch_layer_norm(op, &(ampc_layer_norm_args){.y = yf, .mean = *mean, .rstd = *rstd, .x = x,
                                                                      .weight = w, .bias = b, .eps = eps});
    }
    ampc_tensor *tmp[4] = {x, w, b, yf};
    nn_release(4, tmp);
    if (st == AMPC_OK && ampc_any_requires_grad(3, (const ampc_tensor *[]){input, weight, bias})) {
        ampc_node_attrs attrs;
        memset(&attrs, 0, sizeof attrs);
        attrs.ints[0] = node_int, attrs.n_ints = 1;
        if (!ampc_autograd_record(rule, 3, (const ampc_tensor *[]){input, weight, bias}, 1, &y, weight ? 4 : 3,
                                  (const ampc_tensor *[]){input, *mean, *rstd, weight}, &attrs))
            st = ampc_last_status();
    }
    if (st != AMPC_OK) {
        release_outs(&y, mean, rstd);
        return NULL;
    }
    return y;
}

/* ---------------------------------------------------------------- batch norm */

static const ampc_grad_rule batch_norm_rule = {"NativeBatchNormBackward0", norm_rule_fn};

ampc_tensor *ampc_native_batch_norm(const ampc_tensor *input, ampc_tensor *running_mean, ampc_tensor *running_var,
                                    const ampc_tensor *weight, const ampc_tensor *bias, bool training, double momentum,
                                    double eps, ampc_tensor **save_mean, ampc_tensor **save_invstd) {
    char s[96];
    *save_mean = *save_invstd = NULL;
    const ampc_tensor *all[5] = {input, running_mean, running_var, weight, bias};
    if (nn_check_device("batch_norm", 5, all) != AMPC_OK) return NULL;
    if (input->ndim < 2) {
        ampc_set_error(AMPC_E_RUNTIME, "batch_norm: expected an input of at least 2 dims (N, C, *), got %s",
                       nn_shape(input, s, sizeof s));
        return NULL;
    }
    if (nn_check_floating("batch_norm", input, "input") != AMPC_OK) return NULL;
    int64_t n = input->shape[0], c = input->shape[1], l = 1;
    for (int i = 2; i < input->ndim; i++) l *= input->shape[i];
    if (check_vector("running_mean", running_mean, c) != AMPC_OK || check_vector("running_var", running_var, c) != AMPC_OK ||
        check_vector("weight", weight, c) != AMPC_OK || check_vector("bias", bias, c) != AMPC_OK)
        return NULL;
    if (!training && (!running_mean || !running_var)) {
        ampc_set_error(AMPC_E_RUNTIME, "running_%s must be defined in evaluation mode", running_mean ? "var" : "mean");
        return NULL;
    }
    if (training && n * l <= 1) {
        ampc_set_error(AMPC_E_VALUE, "Expected more than 1 value per channel when training, got input size %s",
                       nn_shape(input, s, sizeof s));
        return NULL;
    }
    if ((running_mean && !ampc_is_contiguous(running_mean)) || (running_var && !ampc_is_contiguous(running_var))) {
        ampc_set_error(AMPC_E_RUNTIME, "batch_norm: running_mean and running_var must be contiguous");
        return NULL;
    }
    int64_t shape3[3] = {n, c, l};
    ampc_tensor *x = flat_view(input, 3, shape3), *w = NULL, *b = NULL, *y = NULL, *mean = NULL, *inv = NULL;
    ampc_status st = x ? AMPC_OK : ampc_last_status();
    if (st == AMPC_OK) st = nn_contig(weight, &w);
    if (st == AMPC_OK) st = nn_contig(bias, &b);
    if (st == AMPC_OK) {
        y = ampc_empty(input->ndim, input->shape, input->dtype, input->device);
        if (!y) st = ampc_last_status();
    }
    if (st == AMPC_OK && training) {
        int64_t cs[1] = {c};
        mean = ampc_empty(1, cs, nn_stats_dtype(input->dtype), input->device);
        inv = mean ? ampc_empty(1, cs, nn_stats_dtype(input->dtype), input->device) : NULL;
        if (!inv) st = ampc_last_status();
        if (st == AMPC_OK && c > 0) {
            ampc_batch_norm_stats_args a = {.mean = mean, .invstd = inv, .running_mean = running_mean,
                                            .running_var = running_var, .x = x, .eps = eps, .momentum = momentum};
            st = ampc_dispatch_batch_norm_stats(AMPC_OP_BATCH_NORM_STATS, &a);
        }
    } else if (st == AMPC_OK) {
        mean = running_mean, inv = running_var;
        ampc_tensor_incref(mean), ampc_tensor_incref(inv);
    }
    if (st == AMPC_OK) {
        ampc_tensor *y3 = nn_reshape_view(y, 3, shape3);
        ampc_batch_norm_apply_args a = {.y = y3, .x = x, .mean = mean, .invstd = inv, .weight = w, .bias = b,
                                        .is_var = !training, .eps = eps};
        st = !y3                    ? ampc_last_status()
             : ampc_numel(y3) > 0 ? ampc_dispatch_batch_norm_apply(AMPC_OP_BATCH_NORM_APPLY, &a)
                                  : AMPC_OK;
        ampc_tensor_decref(y3);
    }
    ampc_tensor *tmp[3] = {x, w, b};
    nn_release(3, tmp);
    if (st == AMPC_OK && ampc_any_requires_grad(3, (const ampc_tensor *[]){input, weight, bias})) {
        ampc_node_attrs attrs;
        memset(&attrs, 0, sizeof attrs);
        attrs.ints[0] = training, attrs.n_ints = 1;
        attrs.scalars[0] = ampc_scalar_float(eps);
        if (!ampc_autograd_record(&batch_norm_rule, 3, (const ampc_tensor *[]){input, weight, bias}, 1, &y,
                                  weight ? 4 : 3, (const ampc_tensor *[]){input, mean, inv, weight}, &attrs))
            st = ampc_last_status();
    }
    if (st != AMPC_OK) {
        ampc_tensor *t2[3] = {y, mean, inv};
        nn_release(3, t2);
        return NULL;
    }
    *save_mean = mean, *save_invstd = inv;
    return y;
}

ampc_tensor *ampc_batch_norm(const ampc_tensor *input, ampc_tensor *running_mean, ampc_tensor *running_var,
                             const ampc_tensor *weight, const ampc_tensor *bias, bool training, double momentum,
                             double eps) {
    ampc_tensor *mean, *inv;
    ampc_tensor *y = ampc_native_batch_norm(input, running_mean, running_var, weight, bias, training, momentum, eps,
                                            &mean, &inv);
    ampc_tensor_decref(mean);
    ampc_tensor_decref(inv);
    return y;
}

ampc_status ampc_native_batch_norm_backward(const ampc_tensor *grad_out, const ampc_tensor *input,
                                            const ampc_tensor *weight, const ampc_tensor *save_mean,
                                            const ampc_tensor *save_invstd, bool training, double eps,
                                            const bool need[3], ampc_tensor **grad_input, ampc_tensor **grad_weight,
                                            ampc_tensor **grad_bias) {
    *grad_input = *grad_weight = *grad_bias = NULL;
    if (input->ndim < 2 || grad_out->ndim != input->ndim || ampc_numel(grad_out) != ampc_numel(input))
        return ampc_set_error(AMPC_E_RUNTIME, "batch_norm_backward: grad_output and input shapes differ");
    int64_t n = input->shape[0], c = input->shape[1], l = ampc_numel(input) / (n * c > 0 ? n * c : 1);
    if (n * c == 0) l = 0;
    int64_t shape3[3] = {n, c, l};
    norm_grads o;
    ampc_status st = norm_grads_begin(&o, grad_out, input, weight, 3, shape3, c, need);
    if (st == AMPC_OK) {
        ampc_batch_norm_backward_args a = {.grad_x = o.gx, .grad_weight = o.gw, .grad_bias = o.gb, .grad_y = o.g,
                                           .x = o.x, .mean = save_mean, .invstd = save_invstd, .weight = o.w,
                                           .is_var = !training, .eps = eps, .training = training};
        st = ampc_numel(o.x) > 0 || c > 0 ? ampc_dispatch_batch_norm_backward(AMPC_OP_BATCH_NORM_BACKWARD, &a)
                                          : AMPC_OK;
    }
    return hand_out_grads(st, input, &o, grad_input, grad_weight, grad_bias);
}

/* ---------------------------------------------------------------- layer norm */

static const ampc_grad_rule layer_norm_rule = {"NativeLayerNormBackward0", norm_rule_fn};

static ampc_status layer_norm_check(const ampc_tensor *x, int n_norm, const int64_t *ns, const ampc_tensor *w,
                                    const ampc_tensor *b, int64_t *m, int64_t *d) {
    char s1[96], s2[96], s3[96];
    const ampc_tensor *all[3] = {x, w, b};
    AMPC_TRY(nn_check_device("layer_norm", 3, all));
    AMPC_TRY(nn_check_floating("layer_norm", x, "input"));
    bool ok = n_norm >= 1 && n_norm <= x->ndim;
    for (int i = 0; ok && i < n_norm; i++) ok = x->shape[x->ndim - n_norm + i] == ns[i];
    if (!ok)
        return ampc_set_error(AMPC_E_RUNTIME,
                              "Given normalized_shape=%s, expected input with shape [*, %s, but got input of size%s",
                              ampc_shape_str(n_norm, ns, s1, sizeof s1), ampc_shape_str(n_norm, ns, s2, sizeof s2) + 1,
                              nn_shape(x, s3, sizeof s3));
    for (int k = 0; k < 2; k++) {
        const ampc_tensor *t = k ? b : w;
        if (!t) continue;
        bool same = t->ndim == n_norm;
        for (int i = 0; same && i < n_norm; i++) same = t->shape[i] == ns[i];
        if (!same)
            return ampc_set_error(AMPC_E_RUNTIME,
                                  "Expected %s to be of same shape as normalized_shape, but got %s of shape %s and "
                                  "normalized_shape = %s",
                                  k ? "bias" : "weight", k ? "bias" : "weight", nn_shape(t, s1, sizeof s1),
                                  ampc_shape_str(n_norm, ns, s2, sizeof s2));
        AMPC_TRY(nn_check_floating("layer_norm", t, k ? "bias" : "weight"));
    }
    *d = 1;
    for (int i = 0; i < n_norm; i++) *d *= ns[i];
    *m = 1;
    for (int i = 0; i < x->ndim - n_norm; i++) *m *= x->shape[i];
    return AMPC_OK;
}

ampc_tensor *ampc_native_layer_norm(const ampc_tensor *input, int n_norm, const int64_t *normalized_shape,
                                    const ampc_tensor *weight, const ampc_tensor *bias, double eps,
                                    ampc_tensor **mean, ampc_tensor **rstd) {
    *mean = *rstd = NULL;
    ampc_autocast_scope ac;
    int acr = ampc_autocast_enter(AMPC_OP_LAYER_NORM, 3, (const ampc_tensor *[]){input, weight, bias}, false, &ac);
    if (acr)
        return acr < 0 ? NULL
                       : ampc_autocast_exit(&ac, ampc_native_layer_norm(ac.t[0], n_norm, normalized_shape, ac.t[1],
                                                                        ac.t[2], eps, mean, rstd));
    int64_t m, d;
    if (layer_norm_check(input, n_norm, normalized_shape, weight, bias, &m, &d) != AMPC_OK) return NULL;
    int64_t shape2[2] = {m, d}, ms[1] = {m};
    return stats_norm_forward(AMPC_OP_LAYER_NORM, &layer_norm_rule, input, weight, bias, eps, 2, shape2, 1, ms, 0, n_norm,
                              mean, rstd);
}

ampc_tensor *ampc_layer_norm(const ampc_tensor *input, int n_norm, const int64_t *normalized_shape,
                             const ampc_tensor *weight, const ampc_tensor *bias, double eps) {
    ampc_tensor *mean, *rstd;
    ampc_tensor *y = ampc_native_layer_norm(input, n_norm, normalized_shape, weight, bias, eps, &mean, &rstd);
    ampc_tensor_decref(mean);
    ampc_tensor_decref(rstd);
    return y;
}

ampc_status ampc_native_layer_norm_backward(const ampc_tensor *grad_out, const ampc_tensor *input, int n_norm,
                                            const ampc_tensor *mean, const ampc_tensor *rstd,
                                            const ampc_tensor *weight, const bool need[3], ampc_tensor **grad_input,
                                            ampc_tensor **grad_weight, ampc_tensor **grad_bias) {
    *grad_input = *grad_weight = *grad_bias = NULL;
    int64_t m, d;
    const int64_t *ns = input->shape + input->ndim - n_norm;
    AMPC_TRY(layer_norm_check(input, n_norm, ns, weight, NULL, &m, &d));
    if (ampc_numel(grad_out) != ampc_numel(input) || ampc_numel(mean) != m || ampc_numel(rstd) != m)
        return ampc_set_error(AMPC_E_RUNTIME, "layer_norm_backward: grad_output, mean or rstd do not match the input");
    int64_t shape2[2] = {m, d};
    norm_grads o;
    ampc_status st = norm_grads_begin(&o, grad_out, input, weight, 2, shape2, d, need);
    if (st == AMPC_OK) {
        ampc_layer_norm_backward_args a = {.grad_x = o.gx, .grad_weight = o.gw, .grad_bias = o.gb, .grad_y = o.g,
                                           .x = o.x, .mean = mean, .rstd = rstd, .weight = o.w};
        bool params_nonempty = d > 0 && (o.gw || o.gb);
        if (m * d > 0 || params_nonempty) {
            if (m == 0) { /* no rows: parameter grads are zero */
                if (o.gw) st = ampc_zero_(o.gw);
                if (o.gb && st == AMPC_OK) st = ampc_zero_(o.gb);
            } else {
                st = ampc_dispatch_layer_norm_backward(AMPC_OP_LAYER_NORM_BACKWARD, &a);
            }
        }
    }
    return hand_out_grads(st, input, &o, grad_input, grad_weight, grad_bias);
}

/* ---------------------------------------------------------------- group norm */

static const ampc_grad_rule group_norm_rule = {"NativeGroupNormBackward0", norm_rule_fn};

static ampc_status group_norm_check(const ampc_tensor *x, int64_t groups, const ampc_tensor *w, const ampc_tensor *b,
                                    int64_t shape3[3]) {
    char s1[96], s2[96];
    const ampc_tensor *all[3] = {x, w, b};
    AMPC_TRY(nn_check_device("group_norm", 3, all));
    if (x->ndim < 2)
        return ampc_set_error(AMPC_E_RUNTIME, "Expected at least 2 dimensions for input tensor but received %d", x->ndim);
    AMPC_TRY(nn_check_floating("group_norm", x, "input"));
    int64_t c = x->shape[1];
    if (groups <= 0 || c % groups != 0)
        return ampc_set_error(AMPC_E_RUNTIME,
                              "Expected number of channels in input to be divisible by num_groups, but got input of "
                              "shape %s and num_groups=%lld",
                              nn_shape(x, s1, sizeof s1), (long long)groups);
    for (int k = 0; k < 2; k++) {
        const ampc_tensor *t = k ? b : w;
        if (t && (t->ndim != 1 || t->shape[0] != c))
            return ampc_set_error(AMPC_E_RUNTIME,
                                  "Expected %s to be a vector of size equal to the number of channels in input, but got "
                                  "%s of shape %s and input of shape %s",
                                  k ? "bias" : "weight", k ? "bias" : "weight", nn_shape(t, s1, sizeof s1),
                                  nn_shape(x, s2, sizeof s2));
        if (t) AMPC_TRY(nn_check_floating("group_norm", t, k ? "bias" : "weight"));
    }
    int64_t l = 1;
    for (int i = 2; i < x->ndim; i++) l *= x->shape[i];
    shape3[0] = x->shape[0], shape3[1] = c, shape3[2] = l;
    return AMPC_OK;
}

ampc_tensor *ampc_native_group_norm(const ampc_tensor *input, int64_t num_groups, const ampc_tensor *weight,
                                    const ampc_tensor *bias, double eps, ampc_tensor **mean, ampc_tensor **rstd) {
    *mean = *rstd = NULL;
    ampc_autocast_scope ac;
    int acr = ampc_autocast_enter(AMPC_OP_GROUP_NORM, 3, (const ampc_tensor *[]){input, weight, bias}, false, &ac);
    if (acr)
        return acr < 0 ? NULL
                       : ampc_autocast_exit(&ac, ampc_native_group_norm(ac.t[0], num_groups, ac.t[1], ac.t[2], eps,
                                                                        mean, rstd));
    int64_t shape3[3];
    if (group_norm_check(input, num_groups, weight, bias, shape3) != AMPC_OK) return NULL;
    int64_t ss[2] = {shape3[0], num_groups};
    return stats_norm_forward(AMPC_OP_GROUP_NORM, &group_norm_rule, input, weight, bias, eps, 3, shape3, 2, ss,
                              num_groups, num_groups, mean, rstd);
}

ampc_tensor *ampc_group_norm(const ampc_tensor *input, int64_t num_groups, const ampc_tensor *weight,
                             const ampc_tensor *bias, double eps) {
    ampc_tensor *mean, *rstd;
    ampc_tensor *y = ampc_native_group_norm(input, num_groups, weight, bias, eps, &mean, &rstd);
    ampc_tensor_decref(mean);
    ampc_tensor_decref(rstd);
    return y;
}

ampc_status ampc_native_group_norm_backward(const ampc_tensor *grad_out, const ampc_tensor *input,
                                            int64_t num_groups, const ampc_tensor *mean, const ampc_tensor *rstd,
                                            const ampc_tensor *weight, const bool need[3], ampc_tensor **grad_input,
                                            ampc_tensor **grad_weight, ampc_tensor **grad_bias) {
    *grad_input = *grad_weight = *grad_bias = NULL;
    int64_t shape3[3];
    AMPC_TRY(group_norm_check(input, num_groups, weight, NULL, shape3));
    if (ampc_numel(grad_out) != ampc_numel(input) || ampc_numel(mean) != shape3[0] * num_groups ||
        ampc_numel(rstd) != shape3[0] * num_groups)
        return ampc_set_error(AMPC_E_RUNTIME, "group_norm_backward: grad_output, mean or rstd do not match the input");
    norm_grads o;
    ampc_tensor *mc = NULL, *rc = NULL;
    ampc_status st = norm_grads_begin(&o, grad_out, input, weight, 3, shape3, shape3[1], need);
    if (st == AMPC_OK) st = nn_contig(mean, &mc);
    if (st == AMPC_OK) st = nn_contig(rstd, &rc);
    if (st == AMPC_OK && shape3[1] > 0) {
        ampc_group_norm_backward_args a = {.grad_x = o.gx, .grad_weight = o.gw, .grad_bias = o.gb, .grad_y = o.g,
                                           .x = o.x, .mean = mc, .rstd = rc, .weight = o.w, .groups = num_groups};
        st = ampc_dispatch_group_norm_backward(AMPC_OP_GROUP_NORM_BACKWARD, &a);
    }
    ampc_tensor *tmp[2] = {mc, rc};
    nn_release(2, tmp);
    return hand_out_grads(st, input, &o, grad_input, grad_weight, grad_bias);
}

/* ---------------------------------------------------------------- the gradient rule */

/* The node keeps one int (batch norm: training; layer norm: the normalized dims; group norm:
 * num_groups) and, for batch norm, eps. */
static ampc_status norm_rule_fn(ampc_node *node, ampc_tensor *const *grads, ampc_tensor **grad_inputs) {
    const ampc_tensor *saved[4]; /* input, mean, 1/std (or variance), and the weight when given */
    AMPC_TRY(nn_rule_saved(node, 4, saved));
    const ampc_tensor *x = saved[0], *mean = saved[1], *inv = saved[2], *w = saved[3];
    if (!grads[0]) return AMPC_OK;
    const bool *need = node->needs_input_grad;
    int64_t k = node->attrs.ints[0];
    ampc_tensor **gi = grad_inputs;
    if (node->rule == &batch_norm_rule)
        return ampc_native_batch_norm_backward(grads[0], x, w, mean, inv, k != 0,
                                               ampc_scalar_to_double(node->attrs.scalars[0]), need, &gi[0], &gi[1],
                                               &gi[2]);
    if (node->rule == &layer_norm_rule)
        return ampc_native_layer_norm_backward(grads[0], x, (int)k, mean, inv, w, need, &gi[0], &gi[1], &gi[2]);
    return ampc_native_group_norm_backward(grads[0], x, k, mean, inv, w, need, &gi[0], &gi[1], &gi[2]);
}
