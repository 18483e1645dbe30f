/* nn_conv.c: convolutions of 1, 2 and 3 spatial dims, direct and transposed (stride, padding,
 * dilation, groups, output_padding), as im2col + GEMM, and their gradient rule.
 *
 * Shapes: x (N, C, D, H, W), weight (O, C/G, kd, kh, kw), out (N, O, OD, OH, OW); L = OD*OH*OW,
 * and K = C/G * kd*kh*kw is the height of one group's column matrix. 1-d and 2-d problems are the
 * 3-d one with D = kd = 1 (and H = kh = 1); their column matrices come from IM2COL/COL2IM, 3-d
 * ones from VOL2COL/COL2VOL. Per chunk of n samples (chunks bound the column matrix's memory):
 *
 *   forward      cols (n, G, K, L)  = im2col(x)
 *                out  (n, G, O/G, L) = W (G, O/G, K) @ cols + bias       one batched GEMM
 *   grad input   dcols (n, G, K, L) = W^T @ dout,  dx = col2im(dcols)
 *   grad weight  dW (G, O/G, K)    += dout[n] (G, O/G, L) @ cols[n]^T (G, L, K), per sample
 *   grad bias    sum of dout over (N, OD, OH, OW)
 *
 * A transposed convolution is the adjoint of a direct one, whose weight has the same layout
 * (C_in, C_out/G, k...): its output is the direct convolution's grad input (y = col2im(W^T @ x)
 * + bias), its grad input the direct forward of grad y, its grad weight the direct grad weight
 * with x and grad y in each other's places. So one geometry (conv_dims, from the direct side)
 * serves both.
 *
 * The GEMM runs in the input's dtype with fp32 accumulation for fp16/bf16 (cpu_gemm.c). A 1x1
 * convolution with stride 1 and no padding needs no im2col: x already is its column matrix. The
 * column matrix is recomputed in backward rather than kept: it is kd*kh*kw times the input. */
#include <stdio.h>

#include "autocast.h"
#include "autograd.h"
#include "nn_common.h"
#include "nn_conv_more.h"

/* Bytes of column matrix per chunk of samples. One buffer serves every chunk, small enough to
 * stay in cache between im2col and the GEMM that reads it; measured on the CPU: 4 MiB is as fast
 * as 16 MiB and a single 58 MiB matrix (batch 64, 32 -> 64 channels, 28x28, 3x3) is 2x slower. */
#define COLS_BUDGET (4 << 20)

/* The direct convolution's view of the problem (for a transposed one: its adjoint). */
typedef struct conv_dims {
    int64_t n, c, d, h, w;   /* input, as 5-d */
    int64_t o, kd, kh, kw;   /* weight */
    int64_t od, oh, ow, g;   /* output, groups */
} conv_dims;

static int64_t kernel_volume(const conv_dims *d) { return d->kd * d->kh * d->kw; }
static int64_t out_volume(const conv_dims *d) { return d->od * d->oh * d->ow; }

/* ---------------------------------------------------------------- checks */

static const char *const conv_names[2][3] = {{"conv1d", "conv2d", "conv3d"},
                                             {"conv_transpose1d", "conv_transpose2d", "conv_transpose3d"}};

/* "(a x b x c)" of the last `spatial` entries of v, into buf. */
static const char *dims_str(int spatial, const int64_t *v, char *buf, size_t cap) {
    if (spatial == 3) snprintf(buf, cap, "(%lld x %lld x %lld)", (long long)v[0], (long long)v[1], (long long)v[2]);
    else if (spatial == 2) snprintf(buf, cap, "(%lld x %lld)", (long long)v[1], (long long)v[2]);
    else snprintf(buf, cap, "(%lld)", (long long)v[2]);
    return buf;
}

/* Checks the arguments and fills d. p is in (d, h, w) order with the unused leading dims
 * neutral (as_3d). For a transposed convolution x is the direct convolution's output side. */
static ampc_status conv_check(const char *name, const ampc_tensor *x, const ampc_tensor *w, const ampc_tensor *bias,
                              const ampc_convnd_params *p, conv_dims *d) {
    char s1[96], s2[96], s3[64];
    int spatial = p->spatial;
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
    for (int i = 3 - spatial; i < 3; i++) {
        if (p->stride[i] <= 0) return ampc_set_error(AMPC_E_RUNTIME, "non-positive stride is not supported");
        if (p->pad_lo[i] < 0 || p->pad_hi[i] < 0) return ampc_set_error(AMPC_E_RUNTIME, "negative padding is not supported");
        if (p->dilation[i] <= 0) return ampc_set_error(AMPC_E_RUNTIME, "non-positive dilation is not supported");
        if (p->transposed && p->output_padding[i] < 0)
            return ampc_set_error(AMPC_E_RUNTIME, "negative output_padding is not supported");
    }
    if (p->groups <= 0) return ampc_set_error(AMPC_E_RUNTIME, "non-positive groups is not supported");
    bool batched = x->ndim == spatial + 2;
    int cdim = batched ? 1 : 0;
    int64_t xs[3] = {1, 1, 1}, ks[3] = {1, 1, 1};
    for (int i = 0; i < spatial; i++) {
        xs[3 - spatial + i] = x->shape[cdim + 1 + i];
        ks[3 - spatial + i] = w->shape[2 + i];
    }
    d->n = batched ? x->shape[0] : 1;
    d->kd = ks[0], d->kh = ks[1], d->kw = ks[2];
    d->g = p->groups;
    int64_t xc = x->shape[cdim];
    if (!p->transposed) {
        d->c = xc, d->o = w->shape[0];
        if (d->o % d->g != 0)
            return ampc_set_error(AMPC_E_RUNTIME,
                                  "Given groups=%lld, expected weight to be divisible by %lld at dimension 0, but got "
                                  "weight of size [%s] instead",
                                  (long long)d->g, (long long)d->g, nn_shape(w, s1, sizeof s1));
        if (w->shape[1] * d->g != d->c)
            return ampc_set_error(AMPC_E_RUNTIME,
                                  "Given groups=%lld, weight of size %s, expected input%s to have %lld channels, but got "
                                  "%lld channels instead",
                                  (long long)d->g, nn_shape(w, s1, sizeof s1), nn_shape(x, s2, sizeof s2),
                                  (long long)(w->shape[1] * d->g), (long long)d->c);
    } else {
        /* x (N, C_in, in...) is the direct output side: O = C_in, C = C_out = (C_out / G) * G */
        d->o = w->shape[0], d->c = w->shape[1] * d->g;
        if (xc != d->o)
            return ampc_set_error(AMPC_E_RUNTIME,
                                  "Given transposed=1, weight of size %s, expected input%s to have %lld channels, but "
                                  "got %lld channels instead",
                                  nn_shape(w, s1, sizeof s1), nn_shape(x, s2, sizeof s2), (long long)d->o, (long long)xc);
        if (d->o % d->g != 0)
            return ampc_set_error(AMPC_E_RUNTIME,
                                  "Given groups=%lld, expected weight to be divisible by %lld at dimension 0, but got "
                                  "weight of size [%s] instead",
                                  (long long)d->g, (long long)d->g, nn_shape(w, s1, sizeof s1));
        for (int i = 3 - spatial; i < 3; i++)
            if (p->output_padding[i] >= p->stride[i] && p->output_padding[i] >= p->dilation[i])
                return ampc_set_error(AMPC_E_RUNTIME,
                                      "output padding must be smaller than either stride or dilation, but got "
                                      "output_padding %lld, stride %lld, dilation %lld at spatial dim %d",
                                      (long long)p->output_padding[i], (long long)p->stride[i],
                                      (long long)p->dilation[i], i - (3 - spatial));
    }
    int64_t out_ch = p->transposed ? d->c : d->o;
    if (bias && (bias->ndim != 1 || bias->shape[0] != out_ch))
        return ampc_set_error(AMPC_E_RUNTIME,
                              "Given weight of size %s, expected bias to be 1-dimensional with %lld elements, but got "
                              "bias of size %s instead",
                              nn_shape(w, s1, sizeof s1), (long long)out_ch, nn_shape(bias, s2, sizeof s2));
    int64_t eff[3], in[3], out[3];
    for (int i = 0; i < 3; i++) eff[i] = p->dilation[i] * (ks[i] - 1) + 1;
    if (!p->transposed) {
        int64_t padded[3];
        for (int i = 0; i < 3; i++) padded[i] = xs[i] + p->pad_lo[i] + p->pad_hi[i];
        for (int i = 3 - spatial; i < 3; i++)
            if (padded[i] < eff[i])
                return ampc_set_error(AMPC_E_RUNTIME,
                                      "Calculated padded input size per channel: %s. Kernel size: %s. Kernel size can't "
                                      "be greater than actual input size",
                                      dims_str(spatial, padded, s1, sizeof s1), dims_str(spatial, eff, s2, sizeof s2));
        for (int i = 0; i < 3; i++) in[i] = xs[i], out[i] = (padded[i] - eff[i]) / p->stride[i] + 1;
    } else {
        for (int i = 0; i < 3; i++) {
            out[i] = xs[i];
            in[i] = (xs[i] - 1) * p->stride[i] - p->pad_lo[i] - p->pad_hi[i] + eff[i] + p->output_padding[i];
        }
        for (int i = 3 - spatial; i < 3; i++)
            if (in[i] <= 0)
                return ampc_set_error(AMPC_E_RUNTIME,
                                      "Given input size per channel: %s. Calculated output size per channel: %s. Output "
                                      "size is too small",
                                      dims_str(spatial, xs, s1, sizeof s1), dims_str(spatial, in, s3, sizeof s3));
    }
    d->d = in[0], d->h = in[1], d->w = in[2];
    d->od = out[0], d->oh = out[1], d->ow = out[2];
    return AMPC_OK;
}

/* ---------------------------------------------------------------- the 5-d core */

/* Parameters with the dims a problem of `spatial` dims does not have made neutral. */
static ampc_convnd_params as_3d(const ampc_convnd_params *p) {
    ampc_convnd_params q = *p;
    for (int i = 0; i < 3 - p->spatial; i++) {
        q.stride[i] = q.dilation[i] = 1;
        q.pad_lo[i] = q.pad_hi[i] = q.output_padding[i] = 0;
    }
    return q;
}

/* The 2-d column ops serve every problem without depth. */
static bool is_planar(const conv_dims *d) { return d->d == 1 && d->kd == 1 && d->od == 1; }

/* The column ops (IM2COL/COL2IM, VOL2COL/COL2VOL: inverse layouts of each other) take the
 * geometry: kernel, stride, front/top/left padding, dilation and output size. vol: 5-d views. */
static ampc_status dispatch_cols_op(bool to_cols, ampc_tensor *out, const ampc_tensor *in, const ampc_convnd_params *p,
                                    const conv_dims *d) {
    if (ampc_numel(out) == 0) return AMPC_OK;
    const ampc_tensor *vol = to_cols ? in : out;
    if (is_planar(d)) {
        int64_t shape[4] = {vol->shape[0], vol->shape[1], d->h, d->w};
        ampc_tensor *v = nn_reshape_view(vol, 4, shape);
        if (!v) return ampc_last_status();
        ampc_im2col_args a = {.out = to_cols ? out : v, .in = to_cols ? v : in, .kernel = {d->kh, d->kw},
                              .stride = {p->stride[1], p->stride[2]}, .padding = {p->pad_lo[1], p->pad_lo[2]},
                              .dilation = {p->dilation[1], p->dilation[2]}, .out_size = {d->oh, d->ow}};
        ampc_status st = ampc_dispatch_im2col(to_cols ? AMPC_OP_IM2COL : AMPC_OP_COL2IM, &a);
        ampc_tensor_decref(v);
        return st;
    }
    ampc_vol2col_args a = {.out = out, .in = in, .kernel = {d->kd, d->kh, d->kw},
                           .stride = {p->stride[0], p->stride[1], p->stride[2]},
                           .padding = {p->pad_lo[0], p->pad_lo[1], p->pad_lo[2]},
                           .dilation = {p->dilation[0], p->dilation[1], p->dilation[2]},
                           .out_size = {d->od, d->oh, d->ow}};
    return ampc_dispatch_vol2col(to_cols ? AMPC_OP_VOL2COL : AMPC_OP_COL2VOL, &a);
}

/* 1x1x1, stride 1, no padding: the input is its own column matrix. */
static bool is_pointwise(const ampc_convnd_params *p, const conv_dims *d) {
    if (kernel_volume(d) != 1) return false;
    for (int i = 0; i < 3; i++)
        if (p->stride[i] != 1 || p->pad_lo[i] != 0 || p->pad_hi[i] != 0) return false;
    return true;
}

/* Samples per chunk so one chunk's column matrix fits COLS_BUDGET (at least 1). */
static int64_t chunk_samples(const conv_dims *d, ampc_dtype dt) {
    int64_t per = d->c * kernel_volume(d) * out_volume(d) * (int64_t)ampc_dtype_itemsize(dt);
    int64_t n = per > 0 ? COLS_BUDGET / per : d->n;
    return n < 1 ? 1 : n > d->n ? d->n : n;
}

/* A contiguous view of the first numel(shape) elements of buf (a chunk buffer reused by every
 * chunk: the last chunk may be smaller). */
static ampc_tensor *buffer_view(const ampc_tensor *buf, int nd, const int64_t *shape) {
    return ampc_tensor_from_storage(buf->storage, buf->offset, nd, shape, NULL, buf->dtype);
}

/* Samples [n0, n0 + nb) of contiguous 5-d t as a tensor of their own. */
static ampc_tensor *samples(const ampc_tensor *t, int64_t n0, int64_t nb) {
    int64_t shape[5] = {nb, t->shape[1], t->shape[2], t->shape[3], t->shape[4]};
    return ampc_tensor_from_storage(t->storage, t->offset + n0 * t->strides[0], 5, shape, NULL, t->dtype);
}

/* Column matrix (nb, C*kd*kh*kw, L) of samples [n0, n0 + nb) of contiguous x, in the chunk buffer. */
static ampc_tensor *im2col(const ampc_tensor *x, int64_t n0, int64_t nb, const ampc_tensor *buf,
                           const ampc_convnd_params *p, const conv_dims *d) {
    int64_t shape[3] = {nb, d->c * kernel_volume(d), out_volume(d)};
    ampc_tensor *xs = samples(x, n0, nb), *cols = xs ? buffer_view(buf, 3, shape) : NULL;
    if (cols && dispatch_cols_op(true, cols, xs, p, d) != AMPC_OK) {
        ampc_tensor_decref(cols);
        cols = NULL;
    }
    ampc_tensor_decref(xs);
    return cols;
}

/* (nb, G, K, L) view of samples [n0, n0 + nb) of x when it is its own column matrix. */
static ampc_tensor *pointwise_cols(const ampc_tensor *x, int64_t n0, int64_t nb, const conv_dims *d) {
    int64_t l = d->d * d->h * d->w, k = d->c / d->g;
    int64_t shape[4] = {nb, d->g, k, l}, strides[4] = {d->c * l, k * l, l, 1};
    return ampc_as_strided(x, 4, shape, strides, x->offset + n0 * d->c * l);
}

/* How a convolution walks the samples of t (x, or dout for grad input): in chunks of *chunk
 * samples whose column matrices go to the buffer *buf (of dtype buf_dtype), or, *pointwise (t is
 * its own column matrix), in one chunk of all samples with no buffer. */
static ampc_status cols_plan(const ampc_tensor *t, const ampc_convnd_params *p, const conv_dims *d,
                             ampc_dtype buf_dtype, bool *pointwise, int64_t *chunk, ampc_tensor **buf) {
    *pointwise = is_pointwise(p, d);
    *chunk = *pointwise ? d->n : chunk_samples(d, buf_dtype);
    *buf = NULL;
    if (*pointwise) return AMPC_OK;
    int64_t shape[1] = {*chunk * d->c * kernel_volume(d) * out_volume(d)};
    *buf = ampc_empty(1, shape, buf_dtype, t->device);
    return *buf ? AMPC_OK : ampc_last_status();
}

/* out (N, O, OD, OH, OW) = conv(x, w) + bias for contiguous 5-d x and w. */
static ampc_tensor *conv_forward_5d(const ampc_tensor *x, const ampc_tensor *w, const ampc_tensor *bias,
                                    const ampc_convnd_params *p, const conv_dims *d) {
    int64_t out_shape[5] = {d->n, d->o, d->od, d->oh, d->ow};
    ampc_tensor *out = ampc_empty(5, out_shape, x->dtype, x->device);
    if (!out || ampc_numel(out) == 0) return out;
    int64_t g = d->g, og = d->o / g, k = d->c / g * kernel_volume(d), l = out_volume(d);
    bool pointwise;
    int64_t chunk;
    ampc_tensor *buf;
    ampc_status st = cols_plan(x, p, d, x->dtype, &pointwise, &chunk, &buf);
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

/* dx (N, C, D, H, W) from contiguous dout (N, O, OD, OH, OW), in dout's dtype throughout. */
static ampc_tensor *conv_grad_input_same_dtype(const ampc_tensor *dout, const ampc_tensor *w,
                                               const ampc_convnd_params *p, const conv_dims *d) {
    int64_t x_shape[5] = {d->n, d->c, d->d, d->h, d->w};
    ampc_tensor *dx = ampc_empty(5, x_shape, dout->dtype, dout->device);
    if (!dx || ampc_numel(dx) == 0) return dx;
    int64_t g = d->g, og = d->o / g, k = d->c / g * kernel_volume(d), l = out_volume(d);
    if (l == 0 || d->o == 0) { /* nothing reads dx: its gradient is 0 */
        ampc_tensor_decref(dx);
        return ampc_zeros(5, x_shape, dout->dtype, dout->device);
    }
    bool pointwise;
    int64_t chunk;
    ampc_tensor *buf;
    ampc_status st = cols_plan(dout, p, d, dout->dtype, &pointwise, &chunk, &buf);
    for (int64_t n0 = 0; n0 < d->n && st == AMPC_OK; n0 += chunk) {
        int64_t nb = d->n - n0 < chunk ? d->n - n0 : chunk;
        int64_t a_shape[4] = {nb, g, k, og}, a_strides[4] = {0, og * k, 1, k}; /* W^T per group */
        int64_t b_shape[4] = {nb, g, og, l}, b_strides[4] = {d->o * l, og * l, l, 1};
        int64_t dc_shape[4] = {nb, g, k, l};
        ampc_tensor *a = ampc_as_strided(w, 4, a_shape, a_strides, w->offset);
        ampc_tensor *b = ampc_as_strided(dout, 4, b_shape, b_strides, dout->offset + n0 * d->o * l);
        /* dcols (nb, G, K, L) = (nb, C*kd*kh*kw, L); for 1x1 convolutions that is dx itself */
        ampc_tensor *dcols = pointwise ? pointwise_cols(dx, n0, nb, d) : buffer_view(buf, 4, dc_shape);
        ampc_tensor *dxs = NULL;
        st = a && b && dcols ? nn_gemm_into(dcols, a, b, NULL, 0.0, 1.0) : ampc_last_status();
        if (st == AMPC_OK && !pointwise) {
            dxs = samples(dx, n0, nb);
            st = dxs ? dispatch_cols_op(false, dxs, dcols, p, d) : ampc_last_status();
        }
        ampc_tensor *tmp[4] = {a, b, dcols, dxs};
        nn_release(4, tmp);
    }
    return nn_finish(st, dx, 1, &buf);
}

/* dx (N, C, D, H, W) from contiguous dout (N, O, OD, OH, OW). fp16/bf16 run in fp32 and dx is
 * rounded once at the end: the overlapping kernel taps that col2im sums would otherwise each be
 * rounded to 16 bits first (torch's kernels accumulate in fp32 too). */
static ampc_tensor *conv_grad_input_5d(const ampc_tensor *dout, const ampc_tensor *w, const ampc_convnd_params *p,
                                       const conv_dims *d) {
    if ((dout->dtype != AMPC_FLOAT16 && dout->dtype != AMPC_BFLOAT16) || is_pointwise(p, d))
        return conv_grad_input_same_dtype(dout, w, p, d);
    bool grad_mode = ampc_grad_mode_pause(); /* raw data movement, as the same-dtype path: no nodes */
    ampc_tensor *dout32 = ampc_to(dout, AMPC_FLOAT32, dout->device, false);
    ampc_tensor *w32 = dout32 ? ampc_to(w, AMPC_FLOAT32, w->device, false) : NULL;
    ampc_tensor *dx32 = w32 ? conv_grad_input_same_dtype(dout32, w32, p, d) : NULL;
    ampc_tensor *dx = dx32 ? ampc_to(dx32, dout->dtype, dx32->device, false) : NULL;
    ampc_set_grad_enabled(grad_mode);
    ampc_tensor *tmp[3] = {dout32, w32, dx32};
    nn_release(3, tmp);
    return dx;
}

/* dW (O, C/G, kd, kh, kw) from contiguous dout and x: per sample n one batched GEMM over the
 * groups, dW (G, O/G, K) += dout[n] (G, O/G, L) @ cols[n]^T (G, L, K), the sum carried in the
 * GEMM's C input through two buffers used in turn (no per-sample allocation, no reduction pass). */
static ampc_tensor *conv_grad_weight_5d(const ampc_tensor *dout, const ampc_tensor *x, const ampc_convnd_params *p,
                                        const conv_dims *d) {
    int64_t g = d->g, og = d->o / g, k = d->c / g * kernel_volume(d), l = out_volume(d);
    int64_t w_shape[5] = {d->o, d->c / g, d->kd, d->kh, d->kw}, acc_shape[3] = {g, og, k};
    if (d->n == 0 || l == 0) return ampc_zeros(5, w_shape, dout->dtype, dout->device);
    bool pointwise;
    int64_t chunk;
    ampc_tensor *buf, *acc[2] = {NULL, NULL}, *prev = NULL;
    ampc_status st = cols_plan(x, p, d, x->dtype, &pointwise, &chunk, &buf);
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
            ampc_tensor *b = ampc_as_strided(cols, 3, b_shape, b_strides, cols->offset + i * d->c * kernel_volume(d) * l);
            st = a && b ? nn_gemm_into(acc[turn], a, b, prev, 1.0, 1.0) : ampc_last_status();
            prev = acc[turn];
            turn ^= 1;
            ampc_tensor_decref(a), ampc_tensor_decref(b);
        }
        ampc_tensor_decref(cols);
    }
    ampc_tensor *dw = st == AMPC_OK ? nn_reshape_view(prev, 5, w_shape) : NULL;
    ampc_tensor_decref(buf), ampc_tensor_decref(acc[0]), ampc_tensor_decref(acc[1]);
    return dw;
}

/* ---------------------------------------------------------------- frontends */

/* t seen as 5-d contiguous (N, C, D, H, W): unbatched inputs get N = 1, fewer spatial dims 1s. */
static ampc_tensor *as_5d(const ampc_tensor *t, int spatial, int64_t n) {
    ampc_tensor *c = ampc_contiguous(t);
    if (!c) return NULL;
    bool batched = t->ndim == spatial + 2;
    int64_t shape[5] = {batched ? t->shape[0] : n, t->shape[batched ? 1 : 0], 1, 1, 1};
    for (int i = 0; i < spatial; i++) shape[5 - spatial + i] = t->shape[t->ndim - spatial + i];
    ampc_tensor *v = nn_reshape_view(c, 5, shape);
    ampc_tensor_decref(c);
    return v;
}

/* A 5-d result back in the caller's rank: unbatched drops N, fewer spatial dims drop D (and H). */
static ampc_tensor *from_5d(ampc_tensor *r, int spatial, bool batched) {
    if (!r) return NULL;
    int64_t shape[5];
    int nd = 0;
    if (batched) shape[nd++] = r->shape[0];
    shape[nd++] = r->shape[1];
    for (int i = 5 - spatial; i < 5; i++) shape[nd++] = r->shape[i];
    ampc_tensor *v = nn_reshape_view(r, nd, shape);
    ampc_tensor_decref(r);
    return v;
}

/* Adds bias (C) over the channels of fresh 5-d y, in place, recording nothing. */
static ampc_status add_channel_bias(ampc_tensor *y, const ampc_tensor *bias) {
    int64_t strides[5] = {0, bias->strides[0], 0, 0, 0};
    ampc_tensor *bv = ampc_as_strided(bias, 5, y->shape, strides, bias->offset);
    if (!bv) return ampc_last_status();
    bool prev = ampc_grad_mode_pause();
    ampc_status st = ampc_binary_(AMPC_OP_ADD, y, bv, ampc_scalar_int(1));
    ampc_grad_mode_restore(prev);
    ampc_tensor_decref(bv);
    return st;
}

static ampc_status conv_backward_rule(ampc_node *node, ampc_tensor *const *grads, ampc_tensor **grad_inputs);
static const ampc_grad_rule conv_rule = {"ConvolutionBackward0", conv_backward_rule};

static const ampc_op conv_ops[2][3] = {{AMPC_OP_CONV1D, AMPC_OP_CONV2D, AMPC_OP_CONV3D},
                                       {AMPC_OP_CONV_TRANSPOSE1D, AMPC_OP_CONV_TRANSPOSE2D, AMPC_OP_CONV_TRANSPOSE3D}};

/* The node's attributes: 5 arrays of 3, groups, spatial, transposed. */
static void params_to_ints(const ampc_convnd_params *p, int64_t *v) {
    for (int i = 0; i < 3; i++) {
        v[i] = p->stride[i], v[3 + i] = p->pad_lo[i], v[6 + i] = p->pad_hi[i], v[9 + i] = p->dilation[i];
        v[12 + i] = p->output_padding[i];
    }
    v[15] = p->groups * 8 + p->spatial * 2 + (p->transposed ? 1 : 0);
}

static ampc_convnd_params params_of_ints(const int64_t *v) {
    ampc_convnd_params p;
    for (int i = 0; i < 3; i++) {
        p.stride[i] = v[i], p.pad_lo[i] = v[3 + i], p.pad_hi[i] = v[6 + i], p.dilation[i] = v[9 + i];
        p.output_padding[i] = v[12 + i];
    }
    p.groups = v[15] / 8, p.spatial = (int)(v[15] % 8) / 2, p.transposed = v[15] % 2 != 0;
    return p;
}

ampc_tensor *ampc_convolution_nd(const ampc_tensor *input, const ampc_tensor *weight, const ampc_tensor *bias,
                                 const ampc_convnd_params *params) {
    if (params->spatial < 1 || params->spatial > 3) {
        ampc_set_error(AMPC_E_RUNTIME, "convolution: %d spatial dims (1, 2 or 3 expected)", params->spatial);
        return NULL;
    }
    int spatial = params->spatial;
    const char *name = conv_names[params->transposed][spatial - 1];
    ampc_autocast_scope ac;
    int acr = ampc_autocast_enter(conv_ops[params->transposed][spatial - 1], 3,
                                  (const ampc_tensor *[]){input, weight, bias}, false, &ac);
    if (acr)
        return acr < 0 ? NULL : ampc_autocast_exit(&ac, ampc_convolution_nd(ac.t[0], ac.t[1], ac.t[2], params));
    conv_dims d;
    ampc_convnd_params p = as_3d(params);
    if (conv_check(name, input, weight, bias, &p, &d) != AMPC_OK) return NULL;
    bool batched = input->ndim == spatial + 2;
    ampc_tensor *x = as_5d(input, spatial, 1);
    ampc_tensor *w = x ? as_5d(weight, spatial, weight->shape[0]) : NULL;
    ampc_tensor *b = NULL;
    if (w && nn_contig(bias, &b) != AMPC_OK) w = (ampc_tensor_decref(w), NULL);
    ampc_tensor *out5 = NULL;
    if (w && !p.transposed) {
        out5 = conv_forward_5d(x, w, b, &p, &d);
    } else if (w) {
        out5 = conv_grad_input_5d(x, w, &p, &d);
        if (out5 && b && ampc_numel(out5) > 0 && add_channel_bias(out5, b) != AMPC_OK)
            out5 = (ampc_tensor_decref(out5), NULL);
    }
    ampc_tensor *out = from_5d(out5, spatial, batched);
    ampc_tensor *tmp[3] = {x, w, b};
    nn_release(3, tmp);
    if (out && ampc_any_requires_grad(3, (const ampc_tensor *[]){input, weight, bias})) {
        ampc_node_attrs attrs;
        memset(&attrs, 0, sizeof attrs);
        params_to_ints(&p, attrs.ints);
        attrs.n_ints = 16;
        if (!ampc_autograd_record(&conv_rule, 3, (const ampc_tensor *[]){input, weight, bias}, 1, &out, 2,
                                  (const ampc_tensor *[]){input, weight}, &attrs)) {
            ampc_tensor_decref(out);
            return NULL;
        }
    }
    return out;
}

ampc_status ampc_convolution_nd_backward(const ampc_tensor *grad_out, const ampc_tensor *input,
                                         const ampc_tensor *weight, const ampc_convnd_params *params, const bool need[3],
                                         ampc_tensor **grad_input, ampc_tensor **grad_weight, ampc_tensor **grad_bias) {
    *grad_input = *grad_weight = *grad_bias = NULL;
    int spatial = params->spatial;
    if (spatial < 1 || spatial > 3) return ampc_set_error(AMPC_E_RUNTIME, "convolution_backward: bad spatial dims");
    char name[48];
    snprintf(name, sizeof name, "%s_backward", conv_names[params->transposed][spatial - 1]);
    conv_dims d;
    ampc_convnd_params p = as_3d(params);
    AMPC_TRY(conv_check(name, input, weight, NULL, &p, &d));
    bool batched = input->ndim == spatial + 2;
    /* grad y has the shape of the op's output: the direct output (N, O, out...) or, transposed,
     * the direct input (N, C, in...) */
    int64_t go_shape[5] = {d.n, d.o, d.od, d.oh, d.ow};
    if (p.transposed) go_shape[1] = d.c, go_shape[2] = d.d, go_shape[3] = d.h, go_shape[4] = d.w;
    int64_t expect = go_shape[0] * go_shape[1] * go_shape[2] * go_shape[3] * go_shape[4];
    if (ampc_numel(grad_out) != expect || grad_out->dtype != input->dtype) {
        char s1[96];
        return ampc_set_error(AMPC_E_RUNTIME, "%s: expected grad_output with %lld elements of dtype %s, got %s of %s",
                              name, (long long)expect, ampc_dtype_name(input->dtype), nn_shape(grad_out, s1, sizeof s1),
                              ampc_dtype_name(grad_out->dtype));
    }
    ampc_tensor *gc = ampc_contiguous(grad_out);
    ampc_tensor *g = gc ? nn_reshape_view(gc, 5, go_shape) : NULL;
    ampc_tensor_decref(gc);
    if (!g) return ampc_last_status();
    ampc_status st = AMPC_OK;
    if (need[0]) {
        ampc_tensor *w = as_5d(weight, spatial, weight->shape[0]);
        ampc_tensor *gi = !w ? NULL : p.transposed ? conv_forward_5d(g, w, NULL, &p, &d) : conv_grad_input_5d(g, w, &p, &d);
        *grad_input = from_5d(gi, spatial, batched);
        ampc_tensor_decref(w);
        if (!*grad_input) st = ampc_last_status();
    }
    if (st == AMPC_OK && need[1]) {
        ampc_tensor *x = as_5d(input, spatial, 1);
        ampc_tensor *dw = !x ? NULL : p.transposed ? conv_grad_weight_5d(x, g, &p, &d) : conv_grad_weight_5d(g, x, &p, &d);
        ampc_tensor_decref(x);
        *grad_weight = dw ? nn_reshape_view(dw, weight->ndim, weight->shape) : NULL;
        ampc_tensor_decref(dw);
        if (!*grad_weight) st = ampc_last_status();
    }
    if (st == AMPC_OK && need[2]) {
        *grad_bias = ampc_reduce(AMPC_OP_SUM, g, 4, (const int64_t[]){0, 2, 3, 4}, false, AMPC_DTYPE_UNDEFINED);
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
    ampc_convnd_params p = params_of_ints(node->attrs.ints);
    if (!grads[0]) return AMPC_OK;
    return ampc_convolution_nd_backward(grads[0], saved[0], saved[1], &p, node->needs_input_grad, &grad_inputs[0],
                                        &grad_inputs[1], &grad_inputs[2]);
}

/* ---------------------------------------------------------------- the 1-d / 2-d API of nn_ops.h */

/* ampc_conv_params ((h, w) pairs; 1-d uses w) as the n-d parameters of `spatial` dims. */
static ampc_convnd_params nd_of(const ampc_conv_params *p, int spatial) {
    ampc_convnd_params q;
    memset(&q, 0, sizeof q);
    q.spatial = spatial;
    q.groups = p->groups;
    q.stride[0] = q.dilation[0] = 1;
    for (int i = 0; i < 2; i++) {
        q.stride[1 + i] = p->stride[i], q.pad_lo[1 + i] = p->pad_lo[i], q.pad_hi[1 + i] = p->pad_hi[i];
        q.dilation[1 + i] = p->dilation[i];
    }
    return q;
}

/* 1-d or 2-d, by the weight's rank (others fail in conv_check). */
static int spatial_of(const ampc_tensor *w) { return w->ndim == 3 ? 1 : 2; }

ampc_tensor *ampc_convolution(const ampc_tensor *input, const ampc_tensor *weight, const ampc_tensor *bias,
                              const ampc_conv_params *params) {
    ampc_convnd_params q = nd_of(params, spatial_of(weight));
    return ampc_convolution_nd(input, weight, bias, &q);
}

ampc_status ampc_convolution_backward(const ampc_tensor *grad_out, const ampc_tensor *input, const ampc_tensor *weight,
                                      const ampc_conv_params *params, const bool need[3], ampc_tensor **grad_input,
                                      ampc_tensor **grad_weight, ampc_tensor **grad_bias) {
    ampc_convnd_params q = nd_of(params, spatial_of(weight));
    return ampc_convolution_nd_backward(grad_out, input, weight, &q, need, grad_input, grad_weight, grad_bias);
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
