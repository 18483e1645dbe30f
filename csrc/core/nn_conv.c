/* nn_conv.c: conv1d and conv2d (stride, padding, dilation, groups) as im2col + GEMM, and their
 * gradient rule.
 *
 * Shapes: x (N, C, H, W), weight (O, C/G, kh, kw), out (N, O, OH, OW); L = OH * OW, and
 * K = C/G * kh * kw is the height of one group's column matrix. A 1-d convolution is the 2-d one
 * with H = kh = 1. Per chunk of n samples (chunks bound the column matrix's memory):
 *
 *   forward      cols (n, G, K, L)  = im2col(x)
 *                out  (n, G, O/G, L) = W (G, O/G, K) @ cols + bias       one batched GEMM
 *   grad input   dcols (n, G, K, L) = W^T @ dout,  dx = col2im(dcols)
 *   grad weight  dW (G, O/G, K)    += dout[n] (G, O/G, L) @ cols[n]^T (G, L, K), per sample
 *   grad bias    sum of dout over (N, OH, OW)
 *
 * The GEMM runs in the input's dtype with fp32 accumulation for fp16/bf16 (cpu_gemm.c). A 1x1
 * convolution with stride 1 and no padding needs no im2col: x already is its column matrix. The
 * column matrix is recomputed in backward rather than kept: it is kh*kw times the input. */
#include <stdio.h>

#include "autocast.h"
#include "autograd.h"
#include "nn_common.h"

/* Bytes of column matrix per chunk of samples. One buffer serves every chunk, small enough to
 * stay in cache between im2col and the GEMM that reads it; measured on the CPU: 4 MiB is as fast
 * as 16 MiB and a single 58 MiB matrix (batch 64, 32 -> 64 channels, 28x28, 3x3) is 2x slower. */
#define COLS_BUDGET (4 << 20)

typedef struct conv_dims {
    int64_t n, c, h, w;   /* input, as 4-d */
    int64_t o, kh, kw;    /* weight */
    int64_t oh, ow, g;    /* output, groups */
} conv_dims;

/* ---------------------------------------------------------------- checks */

/* spatial: 1 or 2. Fills d with the 4-d view of the problem. */
static ampc_status conv_check(const char *name, int spatial, const ampc_tensor *x, const ampc_tensor *w,
                              const ampc_tensor *bias, const ampc_conv_params *p, conv_dims *d) {
    char s1[96], s2[96];
    const ampc_tensor *all[3] = {x, w, bias};
    AMPC_TRY(nn_check_device(name, 3, all));
    if (x->ndim != spatial + 1 && x->ndim != spatial + 2)
        return ampc_set_error(AMPC_E_RUNTIME, "Expected %dD (unbatched) or %dD (batched) input to %s, but got input of size: %s",
                              spatial + 1, spatial + 2, name, nn_shape(x, s1, sizeof s1));
    if (w->ndim != spatial + 2)
        return ampc_set_error(AMPC_E_RUNTIME,
                              "Expected %d-dimensional weight for %d-dimensional input %s, but got %d-dimensional weight "
                              "of size %s instead",
                              spatial + 2, spatial + 2, nn_shape(x, s1, sizeof s1), w->ndim, nn_shape(w, s2, sizeof s2));
    if (x->dtype != w->dtype || (bias && bias->dtype != x->dtype)) {
        const ampc_tensor *other = x->dtype != w->dtype ? w : bias;
        return ampc_set_error(AMPC_E_RUNTIME, "Input type (%s) and %s type (%s) should be the same",
                              nn_type_name(x, s1, sizeof s1), other == w ? "weight" : "bias",
                              nn_type_name(other, s2, sizeof s2));
    }
    AMPC_TRY(nn_check_floating(name, x, "input"));
    for (int i = 2 - spatial; i < 2; i++) {
        if (p->stride[i] <= 0) return ampc_set_error(AMPC_E_RUNTIME, "non-positive stride is not supported");
        if (p->pad_lo[i] < 0 || p->pad_hi[i] < 0) return ampc_set_error(AMPC_E_RUNTIME, "negative padding is not supported");
        if (p->dilation[i] <= 0) return ampc_set_error(AMPC_E_RUNTIME, "non-positive dilation is not supported");
    }
    if (p->groups <= 0) return ampc_set_error(AMPC_E_RUNTIME, "non-positive groups is not supported");
    bool batched = x->ndim == spatial + 2;
    int cdim = batched ? 1 : 0;
    d->n = batched ? x->shape[0] : 1;
    d->c = x->shape[cdim];
    d->h = spatial == 2 ? x->shape[cdim + 1] : 1;
    d->w = x->shape[x->ndim - 1];
    d->o = w->shape[0];
    d->kh = spatial == 2 ? w->shape[2] : 1;
    d->kw = w->shape[w->ndim - 1];
    d->g = p->groups;
    if (d->o % d->g != 0)
        return ampc_set_error(AMPC_E_RUNTIME,
                              "Given groups=%lld, expected weight to be divisible by %lld at dimension 0, but got weight "
                              "of size [%s] instead",
                              (long long)d->g, (long long)d->g, nn_shape(w, s1, sizeof s1));
    if (w->shape[1] * d->g != d->c)
        return ampc_set_error(AMPC_E_RUNTIME,
                              "Given groups=%lld, weight of size %s, expected input%s to have %lld channels, but got "
                              "%lld channels instead",
                              (long long)d->g, nn_shape(w, s1, sizeof s1), nn_shape(x, s2, sizeof s2),
                              (long long)(w->shape[1] * d->g), (long long)d->c);
    if (bias && (bias->ndim != 1 || bias->shape[0] != d->o))
        return ampc_set_error(AMPC_E_RUNTIME,
                              "Given weight of size %s, expected bias to be 1-dimensional with %lld elements, but got "
                              "bias of size %s instead",
                              nn_shape(w, s1, sizeof s1), (long long)d->o, nn_shape(bias, s2, sizeof s2));
    int64_t ph = d->h + p->pad_lo[0] + p->pad_hi[0], pw = d->w + p->pad_lo[1] + p->pad_hi[1];
    int64_t eh = p->dilation[0] * (d->kh - 1) + 1, ew = p->dilation[1] * (d->kw - 1) + 1;
    if (spatial == 1) ph = eh = 1;
    if (ph < eh || pw < ew) {
        if (spatial == 2)
            return ampc_set_error(AMPC_E_RUNTIME,
                                  "Calculated padded input size per channel: (%lld x %lld). Kernel size: (%lld x %lld). "
                                  "Kernel size can't be greater than actual input size",
                                  (long long)ph, (long long)pw, (long long)eh, (long long)ew);
        return ampc_set_error(AMPC_E_RUNTIME,
                              "Calculated padded input size per channel: (%lld). Kernel size: (%lld). Kernel size can't "
                              "be greater than actual input size",
                              (long long)pw, (long long)ew);
    }
    d->oh = spatial == 2 ? (ph - eh) / p->stride[0] + 1 : 1;
    d->ow = (pw - ew) / p->stride[1] + 1;
    return AMPC_OK;
}

/* ---------------------------------------------------------------- the 4-d core */

/* Parameters of a 1-d convolution as the 2-d one (H = 1). */
static ampc_conv_params as_2d(const ampc_conv_params *p, int spatial) {
    ampc_conv_params q = *p;
    if (spatial == 1) {
        q.stride[0] = q.dilation[0] = 1;
        q.pad_lo[0] = q.pad_hi[0] = 0;
    }
    return q;
}

/* IM2COL and COL2IM (inverse layouts of each other) both take the convolution's geometry: kernel,
 * stride, top/left padding, dilation and output size. */
static ampc_status dispatch_cols_op(ampc_op op, ampc_tensor *out, const ampc_tensor *in, const ampc_conv_params *p,
                                    const conv_dims *d) {
    ampc_im2col_args a = {.out = out, .in = in, .kernel = {d->kh, d->kw}, .stride = {p->stride[0], p->stride[1]},
                          .padding = {p->pad_lo[0], p->pad_lo[1]}, .dilation = {p->dilation[0], p->dilation[1]},
                          .out_size = {d->oh, d->ow}};
    return ampc_numel(out) > 0 ? ampc_dispatch_im2col(op, &a) : AMPC_OK;
}

/* 1x1, stride 1, no padding: the input is its own column matrix. */
static bool is_pointwise(const ampc_conv_params *p, const conv_dims *d) {
    return d->kh == 1 && d->kw == 1 && p->stride[0] == 1 && p->stride[1] == 1 && p->pad_lo[0] == 0 &&
           p->pad_lo[1] == 0 && p->pad_hi[0] == 0 && p->pad_hi[1] == 0;
}

/* Samples per chunk so one chunk's column matrix fits COLS_BUDGET (at least 1). */
static int64_t chunk_samples(const conv_dims *d, ampc_dtype dt) {
    int64_t per = d->c * d->kh * d->kw * d->oh * d->ow * (int64_t)ampc_dtype_itemsize(dt);
    int64_t n = per > 0 ? COLS_BUDGET / per : d->n;
    return n < 1 ? 1 : n > d->n ? d->n : n;
}

/* A contiguous view of the first numel(shape) elements of buf (a chunk buffer reused by every
 * chunk: the last chunk may be smaller). */
static ampc_tensor *buffer_view(const ampc_tensor *buf, int nd, const int64_t *shape) {
    return ampc_tensor_from_storage(buf->storage, buf->offset, nd, shape, NULL, buf->dtype);
}

/* Samples [n0, n0 + nb) of contiguous 4-d t as a tensor of their own. */
static ampc_tensor *samples(const ampc_tensor *t, int64_t n0, int64_t nb) {
    int64_t shape[4] = {nb, t->shape[1], t->shape[2], t->shape[3]};
    return ampc_tensor_from_storage(t->storage, t->offset + n0 * t->strides[0], 4, shape, NULL, t->dtype);
}

/* Column matrix (nb, C*kh*kw, L) of samples [n0, n0 + nb) of contiguous x, in the chunk buffer. */
static ampc_tensor *im2col(const ampc_tensor *x, int64_t n0, int64_t nb, const ampc_tensor *buf,
                           const ampc_conv_params *p, const conv_dims *d) {
    int64_t shape[3] = {nb, d->c * d->kh * d->kw, d->oh * d->ow};
    ampc_tensor *xs = samples(x, n0, nb), *cols = xs ? buffer_view(buf, 3, shape) : NULL;
    if (cols && dispatch_cols_op(AMPC_OP_IM2COL, cols, xs, p, d) != AMPC_OK) {
        ampc_tensor_decref(cols);
        cols = NULL;
    }
    ampc_tensor_decref(xs);
    return cols;
}

/* (nb, G, K, L) view of samples [n0, n0 + nb) of x when it is its own column matrix. */
static ampc_tensor *pointwise_cols(const ampc_tensor *x, int64_t n0, int64_t nb, const conv_dims *d) {
    int64_t l = d->h * d->w, k = d->c / d->g;
    int64_t shape[4] = {nb, d->g, k, l}, strides[4] = {d->c * l, k * l, l, 1};
    return ampc_as_strided(x, 4, shape, strides, x->offset + n0 * d->c * l);
}

/* How a convolution walks the samples of t (x, or dout for grad input): in chunks of *chunk
 * samples whose column matrices go to the buffer *buf, or, *pointwise (t is its own column
 * matrix), in one chunk of all samples with no buffer. */
static ampc_status cols_plan(const ampc_tensor *t, const ampc_conv_params *p, const conv_dims *d, bool *pointwise,
                             int64_t *chunk, ampc_tensor **buf) {
    *pointwise = is_pointwise(p, d);
    *chunk = *pointwise ? d->n : chunk_samples(d, t->dtype);
    *buf = NULL;
    if (*pointwise) return AMPC_OK;
    int64_t shape[1] = {*chunk * d->c * d->kh * d->kw * d->oh * d->ow};
    *buf = ampc_empty(1, shape, t->dtype, t->device);
    return *buf ? AMPC_OK : ampc_last_status();
}

/* out (N, O, OH, OW) = conv(x, w) + bias for contiguous 4-d x and w. */
static ampc_tensor *conv_forward_4d(const ampc_tensor *x, const ampc_tensor *w, const ampc_tensor *bias,
                                    const ampc_conv_params *p, const conv_dims *d) {
    int64_t out_shape[4] = {d->n, d->o, d->oh, d->ow};
    ampc_tensor *out = ampc_empty(4, out_shape, x->dtype, x->device);
    if (!out || ampc_numel(out) == 0) return out;
    int64_t g = d->g, og = d->o / g, k = d->c / g * d->kh * d->kw, l = d->oh * d->ow;
    bool pointwise;
    int64_t chunk;
    ampc_tensor *buf;
    ampc_status st = cols_plan(x, p, d, &pointwise, &chunk, &buf);
    for (int64_t n0 = 0; n0 < d->n && st == AMPC_OK; n0 += chunk) {
        int64_t nb = d->n - n0 < chunk ? d->n - n0 : chunk;
        int64_t a_shape[4] = {nb, g, og, k}, a_strides[4] = {0, og * k, k, 1};
        int64_t b_shape[4] = {nb, g, k, l};
        int64_t c_shape[4] = {nb, g, og, l}, c_strides[4] = {g * og * l, og * l, l, 1};
        int64_t bias_strides[4] = {0, og, 1, 0};
        ampc_tensor *cols = pointwise ? pointwise_cols(x, n0, nb, d) : im2col(x, n0, nb, buf, p, d);
        ampc_tensor *b = cols ? ampc_as_strided(cols, 4, b_shape, NULL, cols->offset) : NULL;
        ampc_tensor *a = ampc_as_strided(w, 4, a_shape, a_strides, w->offset);
        ampc_tensor *c = ampc_as_strided(out, 4, c_shape, c_strides, out->offset + n0 * d->o * l);
        ampc_tensor *bv = bias ? ampc_as_strided(bias, 4, c_shape, bias_strides, bias->offset) : NULL;
        if (!a || !b || !c || (bias && !bv))
            st = ampc_last_status();
        else
            st = nn_gemm_into(c, a, b, bv, 1.0, 1.0);
        ampc_tensor *tmp[5] = {cols, a, b, c, bv};
        nn_release(5, tmp);
    }
    return nn_finish(st, out, 1, &buf);
}

/* dx (N, C, H, W) from contiguous dout (N, O, OH, OW). */
static ampc_tensor *conv_grad_input_4d(const ampc_tensor *dout, const ampc_tensor *w, const ampc_conv_params *p,
                                       const conv_dims *d) {
    int64_t x_shape[4] = {d->n, d->c, d->h, d->w};
    ampc_tensor *dx = ampc_empty(4, x_shape, dout->dtype, dout->device);
    if (!dx || ampc_numel(dx) == 0) return dx;
    int64_t g = d->g, og = d->o / g, k = d->c / g * d->kh * d->kw, l = d->oh * d->ow;
    bool pointwise;
    int64_t chunk;
    ampc_tensor *buf;
    ampc_status st = cols_plan(dout, p, d, &pointwise, &chunk, &buf);
    for (int64_t n0 = 0; n0 < d->n && st == AMPC_OK; n0 += chunk) {
        int64_t nb = d->n - n0 < chunk ? d->n - n0 : chunk;
        int64_t a_shape[4] = {nb, g, k, og}, a_strides[4] = {0, og * k, 1, k}; /* W^T per group */
        int64_t b_shape[4] = {nb, g, og, l}, b_strides[4] = {d->o * l, og * l, l, 1};
        int64_t dc_shape[4] = {nb, g, k, l};
        ampc_tensor *a = ampc_as_strided(w, 4, a_shape, a_strides, w->offset);
        ampc_tensor *b = ampc_as_strided(dout, 4, b_shape, b_strides, dout->offset + n0 * d->o * l);
        /* dcols (nb, G, K, L) = (nb, C*kh*kw, L); for 1x1 convolutions that is dx itself */
        ampc_tensor *dcols = pointwise ? pointwise_cols(dx, n0, nb, d) : buffer_view(buf, 4, dc_shape);
        ampc_tensor *dxs = NULL;
        st = a && b && dcols ? nn_gemm_into(dcols, a, b, NULL, 0.0, 1.0) : ampc_last_status();
        if (st == AMPC_OK && !pointwise) {
            dxs = samples(dx, n0, nb);
            st = dxs ? dispatch_cols_op(AMPC_OP_COL2IM, dxs, dcols, p, d) : ampc_last_status();
        }
        ampc_tensor *tmp[4] = {a, b, dcols, dxs};
        nn_release(4, tmp);
    }
    return nn_finish(st, dx, 1, &buf);
}

/* dW (O, C/G, kh, kw) from contiguous dout and x: per sample n one batched GEMM over the groups,
 * dW (G, O/G, K) += dout[n] (G, O/G, L) @ cols[n]^T (G, L, K), the sum carried in the GEMM's C
 * input through two buffers used in turn (no per-sample allocation, no reduction pass). */
static ampc_tensor *conv_grad_weight_4d(const ampc_tensor *dout, const ampc_tensor *x, const ampc_conv_params *p,
                                        const conv_dims *d) {
    int64_t g = d->g, og = d->o / g, k = d->c / g * d->kh * d->kw, l = d->oh * d->ow;
    int64_t w_shape[4] = {d->o, d->c / g, d->kh, d->kw}, acc_shape[3] = {g, og, k};
    if (d->n == 0 || l == 0) return ampc_zeros(4, w_shape, dout->dtype, dout->device);
    bool pointwise;
    int64_t chunk;
    ampc_tensor *buf, *acc[2] = {NULL, NULL}, *prev = NULL;
    ampc_status st = cols_plan(x, p, d, &pointwise, &chunk, &buf);
    for (int i = 0; i < 2 && st == AMPC_OK; i++)
        if (!(acc[i] = ampc_empty(3, acc_shape, dout->dtype, dout->device))) st = ampc_last_status();
    int turn = 0;
    for (int64_t n0 = 0; n0 < d->n && st == AMPC_OK; n0 += chunk) {
        int64_t nb = d->n - n0 < chunk ? d->n - n0 : chunk;
        ampc_tensor *cols = pointwise ? pointwise_cols(x, n0, nb, d) : im2col(x, n0, nb, buf, p, d);
        if (!cols) st = ampc_last_status();
        for (int64_t i = 0; i < nb && st == AMPC_OK; i++) {
            int64_t a_shape[3] = {g, og, l}, a_strides[3] = {og * l, l, 1};
            int64_t b_shape[3] = {g, l, k}, b_strides[3] = {k * l, 1, l};
            ampc_tensor *a = ampc_as_strided(dout, 3, a_shape, a_strides, dout->offset + (n0 + i) * d->o * l);
            ampc_tensor *b = ampc_as_strided(cols, 3, b_shape, b_strides, cols->offset + i * d->c * d->kh * d->kw * l);
            st = a && b ? nn_gemm_into(acc[turn], a, b, prev, 1.0, 1.0) : ampc_last_status();
            prev = acc[turn];
            turn ^= 1;
            ampc_tensor_decref(a), ampc_tensor_decref(b);
        }
        ampc_tensor_decref(cols);
    }
    ampc_tensor *dw = st == AMPC_OK ? nn_reshape_view(prev, 4, w_shape) : NULL;
    ampc_tensor_decref(buf), ampc_tensor_decref(acc[0]), ampc_tensor_decref(acc[1]);
    return dw;
}

/* ---------------------------------------------------------------- frontends */

/* 1-d or 2-d, by the weight's rank; other ranks fail in conv_check. */
static int spatial_of(const ampc_tensor *w) { return w->ndim == 3 ? 1 : 2; }

/* x or w seen as 4-d contiguous: unbatched inputs get N = 1, 1-d ones H = 1. */
static ampc_tensor *as_4d(const ampc_tensor *t, const conv_dims *d, bool is_weight) {
    ampc_tensor *c = ampc_contiguous(t);
    if (!c) return NULL;
    int64_t shape[4];
    if (is_weight) {
        shape[0] = d->o, shape[1] = d->c / d->g, shape[2] = d->kh, shape[3] = d->kw;
    } else {
        shape[0] = d->n, shape[1] = d->c, shape[2] = d->h, shape[3] = d->w;
    }
    ampc_tensor *v = nn_reshape_view(c, 4, shape);
    ampc_tensor_decref(c);
    return v;
}

/* A 4-d result (N, C', H', W') back in the caller's rank: unbatched drops N, 1-d drops H. */
static ampc_tensor *from_4d(ampc_tensor *r, int spatial, bool batched) {
    if (!r) return NULL;
    int64_t shape[4];
    int nd = 0;
    if (batched) shape[nd++] = r->shape[0];
    shape[nd++] = r->shape[1];
    if (spatial == 2) shape[nd++] = r->shape[2];
    shape[nd++] = r->shape[3];
    ampc_tensor *v = nn_reshape_view(r, nd, shape);
    ampc_tensor_decref(r);
    return v;
}

static ampc_status conv_backward_rule(ampc_node *node, ampc_tensor *const *grads, ampc_tensor **grad_inputs);
static const ampc_grad_rule conv_rule = {"ConvolutionBackward0", conv_backward_rule};

ampc_tensor *ampc_convolution(const ampc_tensor *input, const ampc_tensor *weight, const ampc_tensor *bias,
                              const ampc_conv_params *params) {
    int spatial = spatial_of(weight);
    const char *name = spatial == 2 ? "conv2d" : "conv1d";
    ampc_autocast_scope ac;
    int acr = ampc_autocast_enter(spatial == 2 ? AMPC_OP_CONV2D : AMPC_OP_CONV1D, 3,
                                  (const ampc_tensor *[]){input, weight, bias}, false, &ac);
    if (acr) return acr < 0 ? NULL : ampc_autocast_exit(&ac, ampc_convolution(ac.t[0], ac.t[1], ac.t[2], params));
    conv_dims d;
    ampc_conv_params p = as_2d(params, spatial);
    if (conv_check(name, spatial, input, weight, bias, &p, &d) != AMPC_OK) return NULL;
    bool batched = input->ndim == spatial + 2;
    ampc_tensor *x = as_4d(input, &d, false);
    ampc_tensor *w = x ? as_4d(weight, &d, true) : NULL;
    ampc_tensor *b = NULL;
    if (w && nn_contig(bias, &b) != AMPC_OK) w = (ampc_tensor_decref(w), NULL);
    ampc_tensor *out = w ? from_4d(conv_forward_4d(x, w, b, &p, &d), spatial, batched) : NULL;
    ampc_tensor *tmp[3] = {x, w, b};
    nn_release(3, tmp);
    if (out && ampc_any_requires_grad(3, (const ampc_tensor *[]){input, weight, bias})) {
        ampc_node_attrs attrs;
        memset(&attrs, 0, sizeof attrs);
        int64_t v[10] = {p.stride[0], p.stride[1], p.pad_lo[0], p.pad_lo[1], p.pad_hi[0], p.pad_hi[1],
                         p.dilation[0], p.dilation[1], p.groups, spatial};
        memcpy(attrs.ints, v, sizeof v);
        attrs.n_ints = 10;
        if (!ampc_autograd_record(&conv_rule, 3, (const ampc_tensor *[]){input, weight, bias}, 1, &out, 2,
                                  (const ampc_tensor *[]){input, weight}, &attrs)) {
            ampc_tensor_decref(out);
            return NULL;
        }
    }
    return out;
}

ampc_status ampc_convolution_backward(const ampc_tensor *grad_out, const ampc_tensor *input, const ampc_tensor *weight,
                                      const ampc_conv_params *params, const bool need[3], ampc_tensor **grad_input,
                                      ampc_tensor **grad_weight, ampc_tensor **grad_bias) {
    *grad_input = *grad_weight = *grad_bias = NULL;
    int spatial = spatial_of(weight);
    const char *name = spatial == 2 ? "conv2d_backward" : "conv1d_backward";
    conv_dims d;
    ampc_conv_params p = as_2d(params, spatial);
    AMPC_TRY(conv_check(name, spatial, input, weight, NULL, &p, &d));
    bool batched = input->ndim == spatial + 2;
    int64_t go_shape[4] = {d.n, d.o, d.oh, d.ow};
    int64_t expect = d.n * d.o * d.oh * d.ow;
    if (ampc_numel(grad_out) != expect || grad_out->dtype != input->dtype) {
        char s1[96];
        return ampc_set_error(AMPC_E_RUNTIME, "%s: expected grad_output with %lld elements of dtype %s, got %s of %s",
                              name, (long long)expect, ampc_dtype_name(input->dtype), nn_shape(grad_out, s1, sizeof s1),
                              ampc_dtype_name(grad_out->dtype));
    }
    ampc_tensor *gc = ampc_contiguous(grad_out);
    ampc_tensor *g = gc ? nn_reshape_view(gc, 4, go_shape) : NULL;
    ampc_tensor_decref(gc);
    if (!g) return ampc_last_status();
    ampc_status st = AMPC_OK;
    if (need[0]) {
        ampc_tensor *w = as_4d(weight, &d, true);
        *grad_input = w ? from_4d(conv_grad_input_4d(g, w, &p, &d), spatial, batched) : NULL;
        ampc_tensor_decref(w);
        if (!*grad_input) st = ampc_last_status();
    }
    if (st == AMPC_OK && need[1]) {
        ampc_tensor *x = as_4d(input, &d, false);
        ampc_tensor *dw = x ? conv_grad_weight_4d(g, x, &p, &d) : NULL;
        ampc_tensor_decref(x);
        *grad_weight = dw ? nn_reshape_view(dw, weight->ndim, weight->shape) : NULL;
        ampc_tensor_decref(dw);
        if (!*grad_weight) st = ampc_last_status();
    }
    if (st == AMPC_OK && need[2]) {
        *grad_bias = ampc_reduce(AMPC_OP_SUM, g, 3, (const int64_t[]){0, 2, 3}, false, AMPC_DTYPE_UNDEFINED);
        if (!*grad_bias) st = ampc_last_status();
    }
    ampc_tensor_decref(g);
    if (st != AMPC_OK) {
        ampc_tensor *tmp[3] = {*grad_input, *grad_weight, *grad_bias};
        nn_release(3, tmp);
        *grad_input = *grad_weight = *grad_bias = NULL;
    }
    return st;
}

static ampc_status conv_backward_rule(ampc_node *node, ampc_tensor *const *grads, ampc_tensor **grad_inputs) {
    const ampc_tensor *saved[2];
    AMPC_TRY(nn_rule_saved(node, 2, saved));
    const ampc_tensor *input = saved[0], *weight = saved[1];
    const int64_t *v = node->attrs.ints;
    ampc_conv_params p = {{v[0], v[1]}, {v[2], v[3]}, {v[4], v[5]}, {v[6], v[7]}, v[8]};
    if (!grads[0]) return AMPC_OK;
    return ampc_convolution_backward(grads[0], input, weight, &p, node->needs_input_grad, &grad_inputs[0],
                                     &grad_inputs[1], &grad_inputs[2]);
}

ampc_tensor *ampc_conv2d(const ampc_tensor *input, const ampc_tensor *weight, const ampc_tensor *bias,
                         const int64_t stride[2], const int64_t padding[2], const int64_t dilation[2], int64_t groups) {
    ampc_conv_params p = {{stride[0], stride[1]}, {padding[0], padding[1]}, {padding[0], padding[1]},
                          {dilation[0], dilation[1]}, groups};
    if (weight->ndim != 4) {
        char s1[96];
        ampc_set_error(AMPC_E_RUNTIME, "conv2d: expected a 4-dimensional weight, but got weight of size %s",
                       nn_shape(weight, s1, sizeof s1));
        return NULL;
    }
    return ampc_convolution(input, weight, bias, &p);
}

ampc_tensor *ampc_conv1d(const ampc_tensor *input, const ampc_tensor *weight, const ampc_tensor *bias, int64_t stride,
                         int64_t padding, int64_t dilation, int64_t groups) {
    ampc_conv_params p = {{1, stride}, {0, padding}, {0, padding}, {1, dilation}, groups};
    if (weight->ndim != 3) {
        char s1[96];
        ampc_set_error(AMPC_E_RUNTIME, "conv1d: expected a 3-dimensional weight, but got weight of size %s",
                       nn_shape(weight, s1, sizeof s1));
        return NULL;
    }
    return ampc_convolution(input, weight, bias, &p);
}
