/* nn_pool.c: max_pool2d (indices kept for backward), avg_pool2d and adaptive_avg_pool2d, with
 * PyTorch's output-size rule (ceil_mode) and argument checks, and their gradient rules.
 *
 * Inputs are (N, C, H, W) or unbatched (C, H, W); kernels see 4-d contiguous tensors. Backward
 * needs only the input's shape (and max pooling its argmax indices), so the nodes keep no input
 * alive. */
#include <stdio.h>

#include "autograd.h"
#include "nn_common.h"

/* ---------------------------------------------------------------- shapes and checks */

static int64_t floor_div(int64_t a, int64_t b) { return a / b - ((a % b != 0) && ((a < 0) != (b < 0))); }

/* PyTorch's pooling_output_shape. */
static int64_t pool_out_size(int64_t in, int64_t k, int64_t pad, int64_t stride, int64_t dil, bool ceil_mode) {
    int64_t out = floor_div(in + 2 * pad - dil * (k - 1) - 1 + (ceil_mode ? stride - 1 : 0), stride) + 1;
    if (ceil_mode && (out - 1) * stride >= in + pad) out--;
    return out;
}

/* 3-d or 4-d floating input with non-empty channel and spatial dims; its 4-d contiguous view. */
static ampc_tensor *pool_input(const char *name, const ampc_tensor *x, bool adaptive) {
    char s[96];
    if (x->ndim != 3 && x->ndim != 4) {
        if (adaptive)
            ampc_set_error(AMPC_E_RUNTIME, "%s(): Expected 3D or 4D tensor, but got %s", name, nn_shape(x, s, sizeof s));
        else
            ampc_set_error(AMPC_E_RUNTIME, "non-empty 3D or 4D (batch mode) tensor expected for input");
        return NULL;
    }
    for (int i = x->ndim - 3; i < x->ndim; i++)
        if (x->shape[i] == 0 && (adaptive ? i != x->ndim - 3 : true)) {
            if (adaptive)
                ampc_set_error(AMPC_E_RUNTIME,
                               "%s(): Expected input to have non-zero size for non-batch dimensions, but input has "
                               "sizes %s with dimension %d being empty",
                               name, nn_shape(x, s, sizeof s), i);
            else
                ampc_set_error(AMPC_E_RUNTIME,
                               "Expected 3D or 4D (batch mode) tensor with optional 0 dim batch size for input, but "
                               "got:%s",
                               nn_shape(x, s, sizeof s));
            return NULL;
        }
    if (nn_check_floating(name, x, "input") != AMPC_OK) return NULL;
    ampc_tensor *c = ampc_contiguous(x);
    if (!c) return NULL;
    int64_t shape[4] = {x->ndim == 4 ? x->shape[0] : 1, x->shape[x->ndim - 3], x->shape[x->ndim - 2],
                        x->shape[x->ndim - 1]};
    ampc_tensor *v = nn_reshape_view(c, 4, shape);
    ampc_tensor_decref(c);
    return v;
}

/* Checks window parameters and computes the output's spatial size (PyTorch's messages). */
static ampc_status pool_params(const ampc_tensor *x4, const int64_t k[2], const int64_t s[2], const int64_t p[2],
                               const int64_t d[2], bool ceil_mode, int64_t *oh, int64_t *ow) {
    if (k[0] <= 0 || k[1] <= 0)
        return ampc_set_error(AMPC_E_RUNTIME, "kernel size should be greater than zero, but got kH: %lld kW: %lld",
                              (long long)k[0], (long long)k[1]);
    if (s[0] <= 0 || s[1] <= 0)
        return ampc_set_error(AMPC_E_RUNTIME, "stride should be greater than zero, but got dH: %lld dW: %lld",
                              (long long)s[0], (long long)s[1]);
    if (d[0] <= 0 || d[1] <= 0)
        return ampc_set_error(AMPC_E_RUNTIME, "dilation should be greater than zero, but got dilationH: %lld dilationW: %lld",
                              (long long)d[0], (long long)d[1]);
    for (int i = 0; i < 2; i++)
        if (p[i] < 0 || p[i] > ((k[i] - 1) * d[i] + 1) / 2)
            return ampc_set_error(AMPC_E_RUNTIME,
                                  "pad should be at most half of effective kernel size, but got pad=%lld, "
                                  "kernel_size=%lld and dilation=%lld",
                                  (long long)p[i], (long long)k[i], (long long)d[i]);
    if (k[1] / 2 < p[1] || k[0] / 2 < p[0])
        return ampc_set_error(AMPC_E_RUNTIME,
                              "pad should be smaller than or equal to half of kernel size, but got padW = %lld, padH = "
                              "%lld, kW = %lld, kH = %lld",
                              (long long)p[1], (long long)p[0], (long long)k[1], (long long)k[0]);
    int64_t h = x4->shape[2], w = x4->shape[3];
    *oh = pool_out_size(h, k[0], p[0], s[0], d[0], ceil_mode);
    *ow = pool_out_size(w, k[1], p[1], s[1], d[1], ceil_mode);
    if (*oh < 1 || *ow < 1)
        return ampc_set_error(AMPC_E_RUNTIME,
                              "Given input size: (%lldx%lldx%lld). Calculated output size: (%lldx%lldx%lld). Output "
                              "size is too small",
                              (long long)x4->shape[1], (long long)h, (long long)w, (long long)x4->shape[1],
                              (long long)(*oh > 0 ? *oh : 0), (long long)(*ow > 0 ? *ow : 0));
    return AMPC_OK;
}

/* (N, C, OH, OW) output, or (C, OH, OW) for unbatched input, as a fresh 4-d tensor. */
static ampc_tensor *pool_output(const ampc_tensor *x4, int64_t oh, int64_t ow, ampc_dtype dt) {
    int64_t shape[4] = {x4->shape[0], x4->shape[1], oh, ow};
    return ampc_empty(4, shape, dt, x4->device);
}

/* A 4-d result in the caller's rank (drops N for unbatched). Steals r. */
static ampc_tensor *pool_result(ampc_tensor *r, int ndim) {
    if (!r || ndim == 4) return r;
    ampc_tensor *v = nn_reshape_view(r, 3, r->shape + 1);
    ampc_tensor_decref(r);
    return v;
}

static const int64_t *or_default(const int64_t *s, const int64_t *dflt) {
    return (!s || (s[0] == 0 && s[1] == 0)) ? dflt : s;
}

static ampc_node_attrs ints_attrs(int n, const int64_t *v) {
    ampc_node_attrs attrs;
    memset(&attrs, 0, sizeof attrs);
    memcpy(attrs.ints, v, sizeof(int64_t) * (size_t)n);
    attrs.n_ints = n;
    return attrs;
}

/* The 4-d grad of an input of shape (ndim, shape) from a grad_out of the matching rank. */
static ampc_status grad_views(const char *name, const ampc_tensor *grad_out, int ndim, const int64_t *shape,
                              ampc_tensor **g4, ampc_tensor **gx4) {
    *g4 = *gx4 = NULL;
    if ((ndim != 3 && ndim != 4) || grad_out->ndim != ndim)
        return ampc_set_error(AMPC_E_RUNTIME, "%s: grad_output of rank %d for an input of rank %d", name,
                              grad_out->ndim, ndim);
    AMPC_TRY(nn_check_floating(name, grad_out, "grad_output"));
    int64_t xs[4] = {ndim == 4 ? shape[0] : 1, shape[ndim - 3], shape[ndim - 2], shape[ndim - 1]};
    int64_t gs[4] = {xs[0], xs[1], grad_out->shape[ndim - 2], grad_out->shape[ndim - 1]};
    ampc_tensor *c = ampc_contiguous(grad_out);
    if (!c) return ampc_last_status();
    *g4 = nn_reshape_view(c, 4, gs);
    ampc_tensor_decref(c);
    *gx4 = *g4 ? ampc_empty(4, xs, grad_out->dtype, grad_out->device) : NULL;
    if (!*gx4) {
        ampc_tensor_decref(*g4);
        *g4 = NULL;
        return ampc_last_status();
    }
    return AMPC_OK;
}

/* The avg_pool2d geometry (tensors left for run_pool). */
static ampc_avg_pool2d_args avg_geom(const int64_t kernel[2], const int64_t s[2], const int64_t padding[2],
                                     bool count_include_pad, int64_t divisor_override) {
    ampc_avg_pool2d_args a = {.kernel = {kernel[0], kernel[1]}, .stride = {s[0], s[1]},
                              .padding = {padding[0], padding[1]}, .count_include_pad = count_include_pad,
                              .divisor_override = divisor_override};
    return a;
}

/* Runs an avg pooling kernel (geom) or, geom NULL, an adaptive one, src -> dst; steals dst on failure. */
static ampc_tensor *run_pool(ampc_op op, const ampc_tensor *src, ampc_tensor *dst, const ampc_avg_pool2d_args *geom) {
    ampc_status st = AMPC_OK;
    if (dst && ampc_numel(dst) > 0) {
        if (geom) {
            ampc_avg_pool2d_args a = *geom;
            a.out = dst, a.in = src;
            st = ampc_dispatch_avg_pool2d(op, &a);
        } else {
            st = ampc_dispatch_adaptive_pool2d(op, &(ampc_adaptive_pool2d_args){.out = dst, .in = src});
        }
    }
    return nn_finish(st, dst, 0, NULL);
}

/* ---------------------------------------------------------------- max_pool2d */

static ampc_status max_pool_backward_rule(ampc_node *node, ampc_tensor *const *grads, ampc_tensor **grad_inputs) {
    const ampc_tensor *indices;
    AMPC_TRY(nn_rule_saved(node, 1, &indices));
    if (!grads[0]) return AMPC_OK;
    grad_inputs[0] = ampc_max_pool2d_backward(grads[0], node->in_ndim[0], node->in_shape[0], indices);
    return grad_inputs[0] ? AMPC_OK : ampc_last_status();
}
static const ampc_grad_rule max_pool_rule = {"MaxPool2DWithIndicesBackward0", max_pool_backward_rule};

ampc_status ampc_max_pool2d(const ampc_tensor *input, const int64_t kernel[2], const int64_t stride[2],
                            const int64_t padding[2], const int64_t dilation[2], bool ceil_mode, ampc_tensor **out,
                            ampc_tensor **indices) {
    *out = NULL;
    if (indices) *indices = NULL;
    const int64_t *s = or_default(stride, kernel);
    ampc_tensor *x4 = pool_input("max_pool2d", input, false);
    if (!x4) return ampc_last_status();
    int64_t oh, ow;
    ampc_status st = pool_params(x4, kernel, s, padding, dilation, ceil_mode, &oh, &ow);
    ampc_tensor *y = st == AMPC_OK ? pool_output(x4, oh, ow, input->dtype) : NULL;
    ampc_tensor *ind = y ? pool_output(x4, oh, ow, AMPC_INT64) : NULL;
    if (st == AMPC_OK && ind) {
        ampc_max_pool2d_args a = {.y = y, .indices = ind, .x = x4, .kernel = {kernel[0], kernel[1]},
                                  .stride = {s[0], s[1]}, .padding = {padding[0], padding[1]},
                                  .dilation = {dilation[0], dilation[1]}};
        if (ampc_numel(y) > 0 || ampc_numel(ind) > 0) st = ampc_dispatch_max_pool2d(AMPC_OP_MAX_POOL2D, &a);
    } else if (st == AMPC_OK) {
        st = ampc_last_status();
    }
    ampc_tensor_decref(x4);
    y = st == AMPC_OK ? pool_result(y, input->ndim) : (ampc_tensor_decref(y), NULL);
    ind = st == AMPC_OK ? pool_result(ind, input->ndim) : (ampc_tensor_decref(ind), NULL);
    if (st == AMPC_OK && (!y || !ind)) st = ampc_last_status();
    if (st == AMPC_OK && ampc_any_requires_grad(1, &input) &&
        !ampc_autograd_record(&max_pool_rule, 1, &input, 1, &y, 1, (const ampc_tensor *[]){ind}, NULL))
        st = ampc_last_status();
    if (st != AMPC_OK) {
        ampc_tensor_decref(y);
        ampc_tensor_decref(ind);
        return st;
    }
    *out = y;
    if (indices)
        *indices = ind;
    else
        ampc_tensor_decref(ind);
    return AMPC_OK;
}

ampc_tensor *ampc_max_pool2d_backward(const ampc_tensor *grad_out, int ndim, const int64_t *input_shape,
                                      const ampc_tensor *indices) {
    ampc_tensor *g4, *gx4;
    if (grad_views("max_pool2d_backward", grad_out, ndim, input_shape, &g4, &gx4) != AMPC_OK) return NULL;
    ampc_tensor *ic = NULL;
    ampc_status st = AMPC_OK;
    if (indices->dtype != AMPC_INT64 || ampc_numel(indices) != ampc_numel(g4))
        st = ampc_set_error(AMPC_E_RUNTIME, "max_pool2d_backward: expected int64 indices with %lld elements",
                            (long long)ampc_numel(g4));
    else
        st = nn_contig(indices, &ic);
    if (st == AMPC_OK) {
        ampc_max_pool2d_backward_args a = {.grad_x = gx4, .grad_y = g4, .indices = ic};
        if (ampc_numel(gx4) > 0) st = ampc_dispatch_max_pool2d_backward(AMPC_OP_MAX_POOL2D_BACKWARD, &a);
    }
    return pool_result(nn_finish(st, gx4, 2, (ampc_tensor *[]){ic, g4}), ndim);
}

/* ---------------------------------------------------------------- avg_pool2d */

static ampc_status avg_pool_backward_rule(ampc_node *node, ampc_tensor *const *grads, ampc_tensor **grad_inputs) {
    AMPC_TRY(nn_first_order_only(node));
    if (!grads[0]) return AMPC_OK;
    const int64_t *v = node->attrs.ints;
    grad_inputs[0] = ampc_avg_pool2d_backward(grads[0], node->in_ndim[0], node->in_shape[0], v, v + 2, v + 4,
                                              v[6] != 0, v[7] != 0, v[8]);
    return grad_inputs[0] ? AMPC_OK : ampc_last_status();
}
static const ampc_grad_rule avg_pool_rule = {"AvgPool2DBackward0", avg_pool_backward_rule};

/* divisor_override: 0 is PyTorch's None (the binding rejects an explicit 0 as PyTorch does). */
static ampc_status avg_params(const ampc_tensor *x4, const int64_t kernel[2], const int64_t s[2],
                              const int64_t padding[2], bool ceil_mode, int64_t divisor_override, int64_t *oh,
                              int64_t *ow) {
    static const int64_t one[2] = {1, 1};
    if (divisor_override < 0)
        return ampc_set_error(AMPC_E_RUNTIME, "avg_pool2d: divisor_override must be positive, got %lld",
                              (long long)divisor_override);
    return pool_params(x4, kernel, s, padding, one, ceil_mode, oh, ow);
}

ampc_tensor *ampc_avg_pool2d(const ampc_tensor *input, const int64_t kernel[2], const int64_t stride[2],
                             const int64_t padding[2], bool ceil_mode, bool count_include_pad,
                             int64_t divisor_override) {
    const int64_t *s = or_default(stride, kernel);
    ampc_tensor *x4 = pool_input("avg_pool2d", input, false);
    if (!x4) return NULL;
    int64_t oh, ow;
    ampc_tensor *y = NULL;
    if (avg_params(x4, kernel, s, padding, ceil_mode, divisor_override, &oh, &ow) == AMPC_OK) {
        ampc_avg_pool2d_args geom = avg_geom(kernel, s, padding, count_include_pad, divisor_override);
        y = run_pool(AMPC_OP_AVG_POOL2D, x4, pool_output(x4, oh, ow, input->dtype), &geom);
        y = pool_result(y, input->ndim);
        if (y && ampc_any_requires_grad(1, &input)) {
            int64_t r[9] = {kernel[0], kernel[1], s[0], s[1], padding[0], padding[1], ceil_mode, count_include_pad,
                            divisor_override};
            ampc_node_attrs attrs = ints_attrs(9, r);
            if (!ampc_autograd_record(&avg_pool_rule, 1, &input, 1, &y, 0, NULL, &attrs)) {
                ampc_tensor_decref(y);
                y = NULL;
            }
        }
    }
    ampc_tensor_decref(x4);
    return y;
}

ampc_tensor *ampc_avg_pool2d_backward(const ampc_tensor *grad_out, int ndim, const int64_t *input_shape,
                                      const int64_t kernel[2], const int64_t stride[2], const int64_t padding[2],
                                      bool ceil_mode, bool count_include_pad, int64_t divisor_override) {
    const int64_t *s = or_default(stride, kernel);
    ampc_tensor *g4, *gx4;
    if (grad_views("avg_pool2d_backward", grad_out, ndim, input_shape, &g4, &gx4) != AMPC_OK) return NULL;
    int64_t oh, ow;
    ampc_tensor *r = NULL;
    if (avg_params(gx4, kernel, s, padding, ceil_mode, divisor_override, &oh, &ow) != AMPC_OK) {
        ampc_tensor_decref(gx4);
    } else if (oh != g4->shape[2] || ow != g4->shape[3]) {
        ampc_set_error(AMPC_E_RUNTIME, "avg_pool2d_backward: grad_output has spatial size (%lld x %lld), expected (%lld x %lld)",
                       (long long)g4->shape[2], (long long)g4->shape[3], (long long)oh, (long long)ow);
        ampc_tensor_decref(gx4);
    } else {
        ampc_avg_pool2d_args geom = avg_geom(kernel, s, padding, count_include_pad, divisor_override);
        r = pool_result(run_pool(AMPC_OP_AVG_POOL2D_BACKWARD, g4, gx4, &geom), ndim);
    }
    ampc_tensor_decref(g4);
    return r;
}

/* ---------------------------------------------------------------- adaptive_avg_pool2d */

static ampc_status adaptive_backward_rule(ampc_node *node, ampc_tensor *const *grads, ampc_tensor **grad_inputs) {
    AMPC_TRY(nn_first_order_only(node));
    if (!grads[0]) return AMPC_OK;
    grad_inputs[0] = ampc_adaptive_avg_pool2d_backward(grads[0], node->in_ndim[0], node->in_shape[0]);
    return grad_inputs[0] ? AMPC_OK : ampc_last_status();
}
static const ampc_grad_rule adaptive_rule = {"AdaptiveAvgPool2DBackward0", adaptive_backward_rule};

ampc_tensor *ampc_adaptive_avg_pool2d(const ampc_tensor *input, const int64_t output_size[2]) {
    ampc_tensor *x4 = pool_input("adaptive_avg_pool2d", input, true);
    if (!x4) return NULL;
    int64_t oh = output_size[0] < 0 ? x4->shape[2] : output_size[0];
    int64_t ow = output_size[1] < 0 ? x4->shape[3] : output_size[1];
    ampc_tensor *y = run_pool(AMPC_OP_ADAPTIVE_AVG_POOL2D, x4, pool_output(x4, oh, ow, input->dtype), NULL);
    ampc_tensor_decref(x4);
    y = pool_result(y, input->ndim);
    if (y && ampc_any_requires_grad(1, &input) &&
        !ampc_autograd_record(&adaptive_rule, 1, &input, 1, &y, 0, NULL, NULL)) {
        ampc_tensor_decref(y);
        y = NULL;
    }
    return y;
}

ampc_tensor *ampc_adaptive_avg_pool2d_backward(const ampc_tensor *grad_out, int ndim, const int64_t *input_shape) {
    ampc_tensor *g4, *gx4;
    if (grad_views("adaptive_avg_pool2d_backward", grad_out, ndim, input_shape, &g4, &gx4) != AMPC_OK) return NULL;
    ampc_tensor *r = pool_result(run_pool(AMPC_OP_ADAPTIVE_AVG_POOL2D_BACKWARD, g4, gx4, NULL), ndim);
    ampc_tensor_decref(g4);
    return r;
}
