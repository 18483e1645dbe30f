/* nn_misc.c: linear, embedding (padding_idx, scale_grad_by_freq) and dropout (torch's CPU stream
 * on the CPU, Philox on CUDA), with their gradient rules. (scaled_dot_product_attention: nn_attn.c.)
 *
 * linear is composed of the recording GEMM frontends (its gradient is theirs). */
#include <math.h>
#include <stdio.h>

#include "autocast.h"
#include "autograd.h"
#include "derivatives.h"
#include "nn_common.h"


/* ---------------------------------------------------------------- linear */

/* Composed of the recording frontends, as PyTorch does (2-D input: addmm, AddmmBackward0; other
 * ranks: a view to 2-D and back, ViewBackward0), so its gradient is the GEMM rules' and second
 * order works. */
ampc_tensor *ampc_linear(const ampc_tensor *input, const ampc_tensor *weight, const ampc_tensor *bias) {
    const ampc_tensor *all[3] = {input, weight, bias};
    ampc_autocast_scope ac;
    int acr = ampc_autocast_enter(AMPC_OP_LINEAR, 3, all, false, &ac);
    if (acr) return acr < 0 ? NULL : ampc_autocast_exit(&ac, ampc_linear(ac.t[0], ac.t[1], ac.t[2]));
    if (nn_check_device("linear", 3, all) != AMPC_OK) return NULL;
    if (input->ndim < 1 || weight->ndim != 2) {
        char s1[96];
        ampc_set_error(AMPC_E_RUNTIME, "linear: expected input of at least 1 dim and a 2-D weight, got weight of shape %s",
                       nn_shape(weight, s1, sizeof s1));
        return NULL;
    }
    if (input->dtype != weight->dtype || (bias && bias->dtype != input->dtype)) {
        const ampc_tensor *other = input->dtype != weight->dtype ? weight : bias;
        ampc_set_error(AMPC_E_RUNTIME, "mat1 and mat2 must have the same dtype, but got %s and %s",
                       ampc_dtype_torch_name(input->dtype), ampc_dtype_torch_name(other->dtype));
        return NULL;
    }
    int64_t in = input->shape[input->ndim - 1], out_f = weight->shape[0];
    if (weight->shape[1] != in) {
        ampc_set_error(AMPC_E_RUNTIME, "mat1 and mat2 shapes cannot be multiplied (%lldx%lld and %lldx%lld)",
                       (long long)(in ? ampc_numel(input) / in : 0), (long long)in, (long long)weight->shape[1],
                       (long long)out_f);
        return NULL;
    }
    ampc_tensor *wt = ampc_transpose(weight, 0, 1), *x2 = NULL, *y2 = NULL, *y = NULL;
    if (!wt) return NULL;
    int64_t shape2[2] = {in ? ampc_numel(input) / in : 0, in};
    x2 = input->ndim == 2 ? (ampc_tensor_incref((ampc_tensor *)input), (ampc_tensor *)input)
                          : ampc_reshape(input, 2, shape2);
    y2 = !x2 ? NULL : bias ? ampc_addmm(bias, x2, wt, 1.0, 1.0) : ampc_mm(x2, wt);
    if (y2 && input->ndim == 2) {
        y = y2, y2 = NULL;
    } else if (y2) {
        int64_t shape[AMPC_MAX_DIMS];
        memcpy(shape, input->shape, sizeof(int64_t) * (size_t)input->ndim);
        shape[input->ndim - 1] = out_f;
        y = ampc_view(y2, input->ndim, shape);
    }
    ampc_tensor_decref(wt), ampc_tensor_decref(x2), ampc_tensor_decref(y2);
    return y;
}

/* ---------------------------------------------------------------- embedding */

static ampc_status embedding_rule_fn(ampc_node *node, ampc_tensor *const *grads, ampc_tensor **grad_inputs);
static const ampc_grad_rule embedding_rule = {"EmbeddingBackward0", embedding_rule_fn};

static ampc_status check_indices(const char *name, const ampc_tensor *idx) {
    if (idx->dtype == AMPC_INT64 || idx->dtype == AMPC_INT32) return AMPC_OK;
    char s[64];
    return ampc_set_error(AMPC_E_RUNTIME,
                          "Expected tensor for argument #1 'indices' to have one of the following scalar types: Long, "
                          "Int; but got %s instead (while checking arguments for %s)",
                          nn_type_name(idx, s, sizeof s), name);
}

/* padding_idx wrapped into [0, V), or -1 for none (INT64_MIN). */
static ampc_status wrap_padding_idx(int64_t padding_idx, int64_t v, int64_t *out) {
    if (padding_idx == INT64_MIN) {
        *out = -1;
        return AMPC_OK;
    }
    if (padding_idx < -v || padding_idx >= v)
        return ampc_set_error(AMPC_E_VALUE, "Padding_idx must be within num_embeddings");
    *out = padding_idx < 0 ? padding_idx + v : padding_idx;
    return AMPC_OK;
}

ampc_tensor *ampc_embedding(const ampc_tensor *weight, const ampc_tensor *indices, int64_t padding_idx,
                            bool scale_grad_by_freq) {
    const ampc_tensor *all[2] = {weight, indices};
    int64_t pad;
    if (nn_check_device("embedding", 2, all) != AMPC_OK || check_indices("embedding", indices) != AMPC_OK) return NULL;
    if (weight->ndim != 2) {
        ampc_set_error(AMPC_E_RUNTIME, "'weight' must be 2-D");
        return NULL;
    }
    if (wrap_padding_idx(padding_idx, weight->shape[0], &pad) != AMPC_OK) return NULL;
    if (indices->ndim + 1 > AMPC_MAX_DIMS) {
        ampc_set_error(AMPC_E_VALUE, "embedding: indices of %d dims give more than %d dims", indices->ndim, AMPC_MAX_DIMS);
        return NULL;
    }
    int64_t shape[AMPC_MAX_DIMS], flat[2] = {ampc_numel(indices), weight->shape[1]};
    memcpy(shape, indices->shape, sizeof(int64_t) * (size_t)indices->ndim);
    shape[indices->ndim] = weight->shape[1];
    ampc_tensor *w = ampc_contiguous(weight), *idx = w ? ampc_contiguous(indices) : NULL;
    ampc_tensor *y = idx ? ampc_empty(indices->ndim + 1, shape, weight->dtype, weight->device) : NULL;
    ampc_tensor *y2 = y ? nn_reshape_view(y, 2, flat) : NULL;
    ampc_status st = y2 ? AMPC_OK : ampc_last_status();
    if (st == AMPC_OK) {
        ampc_embedding_args a = {.out = y2, .weight = w, .indices = idx};
        st = ampc_numel(idx) > 0 ? ampc_dispatch_embedding(AMPC_OP_EMBEDDING, &a) : AMPC_OK;
    }
    ampc_tensor *tmp[3] = {w, idx, y2};
    nn_release(3, tmp);
    if (st == AMPC_OK && ampc_any_requires_grad(1, &weight)) {
        ampc_node_attrs attrs;
        memset(&attrs, 0, sizeof attrs);
        attrs.ints[0] = weight->shape[0], attrs.ints[1] = pad, attrs.ints[2] = scale_grad_by_freq, attrs.n_ints = 3;
        if (!ampc_autograd_record(&embedding_rule, 1, &weight, 1, &y, 1, &indices, &attrs)) st = ampc_last_status();
    }
    return nn_finish(st, y, 0, NULL);
}

ampc_tensor *ampc_embedding_backward(const ampc_tensor *grad_out, const ampc_tensor *indices, int64_t num_weights,
                                     int64_t padding_idx, bool scale_grad_by_freq) {
    int64_t pad, n = ampc_numel(indices);
    if (check_indices("embedding_backward", indices) != AMPC_OK ||
        wrap_padding_idx(padding_idx < 0 ? INT64_MIN : padding_idx, num_weights, &pad) != AMPC_OK)
        return NULL;
    if (grad_out->ndim < 1 || ampc_numel(grad_out) != n * grad_out->shape[grad_out->ndim - 1]) {
        ampc_set_error(AMPC_E_RUNTIME, "embedding_backward: grad_output does not match the indices");
        return NULL;
    }
    int64_t d = grad_out->shape[grad_out->ndim - 1], gs[2] = {n, d}, ws[2] = {num_weights, d};
    ampc_tensor *gc = ampc_contiguous(grad_out), *g = gc ? nn_reshape_view(gc, 2, gs) : NULL;
    ampc_tensor *idx = g ? ampc_contiguous(indices) : NULL;
    ampc_tensor *gw = idx ? ampc_empty(2, ws, grad_out->dtype, grad_out->device) : NULL;
    ampc_status st = gw ? AMPC_OK : ampc_last_status();
    if (st == AMPC_OK) {
        ampc_embedding_backward_args a = {.grad_weight = gw, .grad = g, .indices = idx, .padding_idx = pad,
                                          .scale_grad_by_freq = scale_grad_by_freq};
        st = ampc_numel(gw) > 0 ? ampc_dispatch_embedding_backward(AMPC_OP_EMBEDDING_BACKWARD, &a) : AMPC_OK;
    }
    return nn_finish(st, gw, 3, (ampc_tensor *[]){gc, g, idx});
}

static ampc_status embedding_rule_fn(ampc_node *node, ampc_tensor *const *grads, ampc_tensor **grad_inputs) {
    const ampc_tensor *idx;
    AMPC_TRY(nn_rule_saved(node, 1, &idx));
    if (!grads[0]) return AMPC_OK;
    const int64_t *v = node->attrs.ints;
    grad_inputs[0] = ampc_embedding_backward(grads[0], idx, v[0], v[1], v[2] != 0);
    return grad_inputs[0] ? AMPC_OK : ampc_last_status();
}

/* ---------------------------------------------------------------- dropout */

static ampc_status dropout_rule_fn(ampc_node *node, ampc_tensor *const *grads, ampc_tensor **grad_inputs);
static const ampc_grad_rule dropout_rule = {"NativeDropoutBackward0", dropout_rule_fn};

static ampc_status check_p(double p) {
    if (!(p >= 0 && p <= 1))
        return ampc_set_error(AMPC_E_VALUE, "dropout probability has to be between 0 and 1, but got %g", p);
    return AMPC_OK;
}

/* y = x * keep / (1 - p) without recording; *mask the bool keep mask. */
static ampc_tensor *dropout_forward(const ampc_tensor *input, double p, ampc_tensor **mask) {
    *mask = NULL;
    if (nn_check_floating("dropout", input, "input") != AMPC_OK) return NULL;
    ampc_tensor *x = ampc_contiguous(input);
    ampc_tensor *y = x ? ampc_empty(input->ndim, input->shape, input->dtype, input->device) : NULL;
    *mask = y ? ampc_empty(input->ndim, input->shape, AMPC_BOOL, input->device) : NULL;
    ampc_status st = *mask ? AMPC_OK : ampc_last_status();
    if (st == AMPC_OK && ampc_numel(x) > 0) {
        ampc_dropout_args a = {.y = y, .mask = *mask, .x = x, .p = p};
        if (input->device.type != AMPC_CPU) /* the CPU kernel draws from the CPU generator itself */
            ampc_philox_reserve(input->device, (uint64_t)ampc_numel(x), &a.seed, &a.offset);
        st = ampc_dispatch_dropout(AMPC_OP_DROPOUT, &a);
    }
    ampc_tensor_decref(x);
    if (st != AMPC_OK) {
        ampc_tensor_decref(y), ampc_tensor_decref(*mask);
        *mask = NULL;
        return NULL;
    }
    return y;
}

ampc_tensor *ampc_native_dropout(const ampc_tensor *input, double p, ampc_tensor **mask) {
    if (check_p(p) != AMPC_OK) return NULL;
    ampc_tensor *y = dropout_forward(input, p, mask);
    if (y && ampc_any_requires_grad(1, &input)) {
        ampc_node_attrs attrs;
        memset(&attrs, 0, sizeof attrs);
        attrs.scalars[0] = ampc_scalar_float(p < 1 ? 1 / (1 - p) : 0);
        if (!ampc_autograd_record(&dropout_rule, 1, &input, 1, &y, 1, (const ampc_tensor *const *)mask, &attrs)) {
            ampc_tensor_decref(y), ampc_tensor_decref(*mask);
            *mask = NULL;
            return NULL;
        }
    }
    return y;
}

ampc_tensor *ampc_dropout(const ampc_tensor *input, double p, bool training) {
    if (check_p(p) != AMPC_OK) return NULL;
    if (!training || p == 0) { /* the identity, as PyTorch: the input itself */
        ampc_tensor_incref((ampc_tensor *)input);
        return (ampc_tensor *)input;
    }
    ampc_tensor *mask;
    ampc_tensor *y = ampc_native_dropout(input, p, &mask);
    ampc_tensor_decref(mask);
    return y;
}

ampc_tensor *ampc_masked_scale(const ampc_tensor *grad, const ampc_tensor *mask, double scale) {
    if (ampc_numel(grad) != ampc_numel(mask) || grad->ndim != mask->ndim) {
        char s1[96], s2[96];
        ampc_set_error(AMPC_E_RUNTIME, "masked_scale: grad of shape %s and mask of shape %s differ",
                       nn_shape(grad, s1, sizeof s1), nn_shape(mask, s2, sizeof s2));
        return NULL;
    }
    ampc_tensor *g = ampc_contiguous(grad), *m = g ? ampc_contiguous(mask) : NULL;
    ampc_tensor *y = m ? ampc_empty(grad->ndim, grad->shape, grad->dtype, grad->device) : NULL;
    if (y) {
        ampc_masked_scale_args a = {.out = y, .x = g, .mask = m, .scale = scale};
        if (ampc_numel(y) > 0 && ampc_dispatch_masked_scale(AMPC_OP_MASKED_SCALE, &a) != AMPC_OK)
            y = (ampc_tensor_decref(y), NULL);
    }
    ampc_tensor_decref(g), ampc_tensor_decref(m);
    return y;
}

static ampc_status dropout_rule_fn(ampc_node *node, ampc_tensor *const *grads, ampc_tensor **grad_inputs) {
    const ampc_tensor *mask;
    AMPC_TRY(nn_rule_saved(node, 1, &mask));
    if (!grads[0]) return AMPC_OK;
    grad_inputs[0] = ampc_masked_scale(grads[0], mask, ampc_scalar_to_double(node->attrs.scalars[0]));
    return grad_inputs[0] ? AMPC_OK : ampc_last_status();
}
