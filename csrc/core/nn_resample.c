/* nn_resample.c: torch.nn.functional.interpolate (nearest, nearest-exact, linear / bilinear /
 * trilinear, bicubic, area) of 1-3 spatial dims, forward and backward, and the gradient rules.
 *
 * Every mode is separable: along each spatial dim, output index o reads a few input indices
 * ("taps") with weights, and the output is the product of the three dims' weights:
 *
 *   y[p, i, j, k] = sum_{a in taps_d(i), b in taps_h(j), c in taps_w(k)} w_a w_b w_c x[p, a, b, c]
 *
 * nearest: one tap of weight 1; linear: two (PyTorch's compute_source_index_and_lambda); bicubic:
 * four, clamped at the borders, Keys' kernel with A = -0.75; area: the adaptive-average-pool window
 * with weight 1 / its length. The frontend builds the taps on the host as CSR per dim (PyTorch's
 * index and scale formulas, in double), so one RESAMPLE kernel per backend serves every mode; the
 * backward is the same kernel over the transposed taps (a gather: no atomics on CUDA). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "autograd.h"
#include "nn_common.h"
#include "nn_conv_more.h"

static const ampc_op mode_ops[7] = {AMPC_OP_UPSAMPLE_NEAREST, AMPC_OP_UPSAMPLE_NEAREST, AMPC_OP_UPSAMPLE_LINEAR,
                                    AMPC_OP_UPSAMPLE_BICUBIC, AMPC_OP_UPSAMPLE_AREA,   AMPC_OP_UPSAMPLE_LINEAR,
                                    AMPC_OP_UPSAMPLE_BICUBIC};

/* ---------------------------------------------------------------- taps of one dim */

typedef struct dim_taps {
    int64_t n;      /* outputs (rows of the CSR) */
    int64_t *ptr;   /* [n + 1] */
    int64_t *idx;   /* [nnz] */
    double *w;      /* [nnz] */
} dim_taps;

static void taps_free(dim_taps *t) {
    free(t->ptr), free(t->idx), free(t->w);
    t->ptr = t->idx = NULL, t->w = NULL;
}

/* PyTorch's area_pixel_compute_scale: the source step per output index. scale <= 0: none given. */
static double pixel_scale(int64_t in, int64_t out, bool align_corners, double scale) {
    if (align_corners) return out > 1 ? (double)(in - 1) / (double)(out - 1) : 0.0;
    return scale > 0 ? 1.0 / scale : (double)in / (double)out;
}

/* PyTorch's area_pixel_compute_source_index. */
static double source_index(double scale, int64_t o, bool align_corners, bool cubic) {
    if (align_corners) return scale * (double)o;
    double src = scale * ((double)o + 0.5) - 0.5;
    return !cubic && src < 0 ? 0.0 : src;
}

static double cubic1(double x, double a) { return ((a + 2) * x - (a + 3)) * x * x + 1; }
static double cubic2(double x, double a) { return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a; }

/* The taps of output o along a dim of `in` inputs and `out` outputs; returns their count. */
static int one_output(ampc_interp_mode mode, int64_t in, int64_t out, double scale, bool align_corners, int64_t o,
                      int64_t *idx, double *w) {
    switch (mode) {
    case AMPC_INTERP_NEAREST: {
        /* nearest_idx: float arithmetic, as PyTorch's */
        if (out == in) idx[0] = o;
        else if (out == 2 * in) idx[0] = o >> 1;
        else {
            float s = scale > 0 ? (float)(1.0 / scale) : (float)in / (float)out;
            int64_t i = (int64_t)floorf((float)o * s);
            idx[0] = i < in - 1 ? i : in - 1;
        }
        w[0] = 1.0;
        return 1;
    }
    case AMPC_INTERP_NEAREST_EXACT: {
        float s = scale > 0 ? (float)(1.0 / scale) : (float)in / (float)out;
        int64_t i = (int64_t)floorf(((float)o + 0.5f) * s);
        idx[0] = i < in - 1 ? i : in - 1;
        w[0] = 1.0;
        return 1;
    }
    case AMPC_INTERP_LINEAR: {
        if (out == in) {
            idx[0] = o, w[0] = 1.0;
            return 1;
        }
        double real = source_index(pixel_scale(in, out, align_corners, scale), o, align_corners, false);
        int64_t i0 = (int64_t)real, i1 = i0 + (i0 < in - 1 ? 1 : 0);
        double l1 = real - (double)i0;
        l1 = l1 < 0 ? 0 : l1 > 1 ? 1 : l1;
        idx[0] = i0, w[0] = 1.0 - l1, idx[1] = i1, w[1] = l1;
        return 2;
    }
    case AMPC_INTERP_BICUBIC: {
        double real = source_index(pixel_scale(in, out, align_corners, scale), o, align_corners, true);
        double fl = floor(real), t = real - fl;
        int64_t i0 = (int64_t)fl;
        const double a = -0.75;
        double c[4] = {cubic2(t + 1.0, a), cubic1(t, a), cubic1(1.0 - t, a), cubic2(2.0 - t, a)};
        for (int k = 0; k < 4; k++) {
            int64_t i = i0 - 1 + k;
            idx[k] = i < 0 ? 0 : i > in - 1 ? in - 1 : i;
            w[k] = c[k];
        }
        return 4;
    }
    case AMPC_INTERP_BILINEAR_AA:
    case AMPC_INTERP_BICUBIC_AA: {
        /* PyTorch's _compute_weights_aa: the filter's support widens by the downscale factor and the
         * weights are normalised to sum 1 */
        double interp = mode == AMPC_INTERP_BICUBIC_AA ? 4.0 : 2.0;
        double sc = pixel_scale(in, out, align_corners, scale);
        double support = sc >= 1.0 ? interp * 0.5 * sc : interp * 0.5, invscale = sc >= 1.0 ? 1.0 / sc : 1.0;
        double center = sc * ((double)o + 0.5), total = 0;
        int64_t lo = (int64_t)(center - support + 0.5), hi = (int64_t)(center + support + 0.5);
        lo = lo < 0 ? 0 : lo, hi = hi > in ? in : hi;
        int n = 0;
        for (int64_t j = lo; j < hi; j++, n++) {
            double x = fabs(((double)j - center + 0.5) * invscale), f;
            if (mode == AMPC_INTERP_BILINEAR_AA) f = x < 1 ? 1 - x : 0;
            else f = x < 1 ? ((-0.5 + 2) * x - (-0.5 + 3)) * x * x + 1 : x < 2 ? (((x - 5) * x + 8) * x - 4) * -0.5 : 0;
            idx[n] = j, w[n] = f, total += f;
        }
        if (total != 0)
            for (int k = 0; k < n; k++) w[k] /= total;
        return n;
    }
    default: { /* area: adaptive average pooling's window */
        int64_t start = (o * in) / out, end = ((o + 1) * in + out - 1) / out;
        for (int64_t i = start; i < end; i++) idx[i - start] = i, w[i - start] = 1.0 / (double)(end - start);
        return (int)(end - start);
    }
    }
}

/* Taps of every output along one dim. */
static ampc_status build_taps(ampc_interp_mode mode, int64_t in, int64_t out, double scale, bool align_corners,
                              dim_taps *t) {
    int64_t most = mode == AMPC_INTERP_BICUBIC ? 4 : mode == AMPC_INTERP_LINEAR ? 2
                 : mode == AMPC_INTERP_AREA ? (in + out - 1) / out + 1 : 1;
    if (mode == AMPC_INTERP_BILINEAR_AA || mode == AMPC_INTERP_BICUBIC_AA) most = in + 1; /* at most every input */
    t->n = out;
    t->ptr = (int64_t *)malloc(sizeof(int64_t) * (size_t)(out + 1));
    t->idx = (int64_t *)malloc(sizeof(int64_t) * (size_t)(out * most + 1));
    t->w = (double *)malloc(sizeof(double) * (size_t)(out * most + 1));
    if (!t->ptr || !t->idx || !t->w) {
        taps_free(t);
        return ampc_set_error(AMPC_E_NOMEM, "interpolate: out of memory for the taps");
    }
    t->ptr[0] = 0;
    for (int64_t o = 0; o < out; o++)
        t->ptr[o + 1] = t->ptr[o] + one_output(mode, in, out, scale, align_corners, o, t->idx + t->ptr[o], t->w + t->ptr[o]);
    return AMPC_OK;
}

/* The transpose of f (outputs -> inputs) as the taps of the backward: rows are the `in` inputs. */
static ampc_status transpose_taps(const dim_taps *f, int64_t in, dim_taps *t) {
    int64_t nnz = f->ptr[f->n];
    t->n = in;
    t->ptr = (int64_t *)calloc((size_t)(in + 1), sizeof(int64_t));
    t->idx = (int64_t *)malloc(sizeof(int64_t) * (size_t)(nnz + 1));
    t->w = (double *)malloc(sizeof(double) * (size_t)(nnz + 1));
    if (!t->ptr || !t->idx || !t->w) {
        taps_free(t);
        return ampc_set_error(AMPC_E_NOMEM, "interpolate: out of memory for the taps");
    }
    for (int64_t e = 0; e < nnz; e++) t->ptr[f->idx[e] + 1]++;
    for (int64_t i = 0; i < in; i++) t->ptr[i + 1] += t->ptr[i];
    for (int64_t o = 0; o < f->n; o++)
        for (int64_t e = f->ptr[o]; e < f->ptr[o + 1]; e++) {
            int64_t at = t->ptr[f->idx[e]]++;
            t->idx[at] = o, t->w[at] = f->w[e];
        }
    for (int64_t i = in; i > 0; i--) t->ptr[i] = t->ptr[i - 1];
    t->ptr[0] = 0;
    return AMPC_OK;
}

/* ---------------------------------------------------------------- the kernel call */

/* (P, D, H, W) of a shape whose last k dims are spatial (right-aligned, 1 for the missing). */
static void as_4d_shape(int ndim, const int64_t *shape, int k, int64_t out[4]) {
    out[0] = 1, out[1] = out[2] = out[3] = 1;
    for (int i = 0; i < ndim - k; i++) out[0] *= shape[i];
    for (int i = 0; i < k; i++) out[3 - i] = shape[ndim - 1 - i];
}

/* out4 = resample(in4) over the taps of the three dims (rows: out4's dims). */
static ampc_status run_resample(ampc_op op, ampc_tensor *out4, const ampc_tensor *in4, const dim_taps taps[3]) {
    int64_t n_index = 0, n_weight = 0;
    for (int d = 0; d < 3; d++) n_index += taps[d].n + 1 + taps[d].ptr[taps[d].n], n_weight += taps[d].ptr[taps[d].n];
    ampc_tensor *index = ampc_empty(1, &n_index, AMPC_INT64, ampc_cpu_device());
    ampc_tensor *weight = index ? ampc_empty(1, &n_weight, AMPC_FLOAT64, ampc_cpu_device()) : NULL;
    if (!weight) {
        ampc_tensor_decref(index);
        return ampc_last_status();
    }
    int64_t *iv = (int64_t *)ampc_data_ptr(index);
    double *wv = (double *)ampc_data_ptr(weight);
    ampc_resample_args a = {.out = out4, .in = in4};
    for (int d = 0; d < 3; d++) {
        memcpy(iv, taps[d].ptr, sizeof(int64_t) * (size_t)(taps[d].n + 1));
        iv += taps[d].n + 1;
    }
    for (int d = 0; d < 3; d++) {
        int64_t nnz = taps[d].ptr[taps[d].n];
        memcpy(iv, taps[d].idx, sizeof(int64_t) * (size_t)nnz);
        memcpy(wv, taps[d].w, sizeof(double) * (size_t)nnz);
        iv += nnz, wv += nnz;
        a.nnz[d] = nnz;
    }
    ampc_status st = AMPC_OK;
    if (out4->device.type != AMPC_CPU) {
        ampc_tensor *di = ampc_to(index, AMPC_INT64, out4->device, false);
        ampc_tensor *dw = di ? ampc_to(weight, AMPC_FLOAT64, out4->device, false) : NULL;
        ampc_tensor_decref(index), ampc_tensor_decref(weight);
        index = di, weight = dw;
        if (!dw) st = ampc_last_status();
    }
    if (st == AMPC_OK) {
        a.index = index, a.weight = weight;
        st = ampc_dispatch_resample(op, &a);
    }
    ampc_tensor_decref(index), ampc_tensor_decref(weight);
    return st;
}

/* The forward taps of the three dims of x4 -> y4 (spatial dims only; the others identity). */
static ampc_status forward_taps(ampc_interp_mode mode, const int64_t x4[4], const int64_t y4[4], int spatial,
                                const double scales[3], bool align_corners, dim_taps taps[3]) {
    memset(taps, 0, 3 * sizeof(dim_taps));
    for (int d = 0; d < 3; d++) {
        bool is_spatial = d >= 3 - spatial;
        ampc_status st = build_taps(is_spatial ? mode : AMPC_INTERP_NEAREST, x4[d + 1], y4[d + 1],
                                    is_spatial ? scales[d - (3 - spatial)] : 0.0, align_corners, &taps[d]);
        if (st != AMPC_OK) {
            for (int e = 0; e < d; e++) taps_free(&taps[e]);
            return st;
        }
    }
    return AMPC_OK;
}

/* ---------------------------------------------------------------- frontends and rules */

static ampc_status resample_rule_fn(ampc_node *node, ampc_tensor *const *grads, ampc_tensor **grad_inputs);

static const ampc_grad_rule rules[7][3] = {
    {{"UpsampleNearest1DBackward0", resample_rule_fn}, {"UpsampleNearest2DBackward0", resample_rule_fn},
     {"UpsampleNearest3DBackward0", resample_rule_fn}},
    {{"UpsampleNearestExact1DBackward0", resample_rule_fn}, {"UpsampleNearestExact2DBackward0", resample_rule_fn},
     {"UpsampleNearestExact3DBackward0", resample_rule_fn}},
    {{"UpsampleLinear1DBackward0", resample_rule_fn}, {"UpsampleBilinear2DBackward0", resample_rule_fn},
     {"UpsampleTrilinear3DBackward0", resample_rule_fn}},
    {{"UpsampleBicubic1DBackward0", resample_rule_fn}, {"UpsampleBicubic2DBackward0", resample_rule_fn},
     {"UpsampleBicubic3DBackward0", resample_rule_fn}},
    {{"AdaptiveAvgPool1DBackward0", resample_rule_fn}, {"AdaptiveAvgPool2DBackward0", resample_rule_fn},
     {"AdaptiveAvgPool3DBackward0", resample_rule_fn}},
    {{"UpsampleBilinear1DAaBackward0", resample_rule_fn}, {"UpsampleBilinear2DAaBackward0", resample_rule_fn},
     {"UpsampleBilinear3DAaBackward0", resample_rule_fn}},
    {{"UpsampleBicubic1DAaBackward0", resample_rule_fn}, {"UpsampleBicubic2DAaBackward0", resample_rule_fn},
     {"UpsampleBicubic3DAaBackward0", resample_rule_fn}},
};

static const char *const dim_letters[3] = {"D", "H", "W"};

ampc_tensor *ampc_interpolate(const ampc_tensor *input, ampc_interp_mode mode, int spatial, const int64_t *out_size,
                              const double *scales, bool align_corners) {
    char s1[160], s2[160];
    if ((unsigned)mode > AMPC_INTERP_BICUBIC_AA || spatial < 1 || spatial > 3 || input->ndim != spatial + 2) {
        ampc_set_error(AMPC_E_RUNTIME, "interpolate: expected a %dD input for %d spatial dims, got %s", spatial + 2,
                       spatial, nn_shape(input, s1, sizeof s1));
        return NULL;
    }
    if (nn_check_floating("interpolate", input, "input") != AMPC_OK) return NULL;
    bool ok = true;
    size_t at1 = 0, at2 = 0;
    for (int i = 0; i < spatial; i++) {
        int64_t in = input->shape[2 + i];
        ok = ok && in > 0 && out_size[i] > 0;
        const char *l = dim_letters[3 - spatial + i];
        at1 += (size_t)snprintf(s1 + at1, sizeof s1 - at1, "%s%s: %lld", i ? ", " : "", l, (long long)in);
        at2 += (size_t)snprintf(s2 + at2, sizeof s2 - at2, "%s%s: %lld", i ? ", " : "", l, (long long)out_size[i]);
    }
    if (!ok) {
        ampc_set_error(AMPC_E_RUNTIME, "Input and output sizes should be greater than 0, but got input (%s) output (%s)",
                       s1, s2);
        return NULL;
    }
    int64_t y_shape[5] = {input->shape[0], input->shape[1], 1, 1, 1}, x4[4], y4[4];
    for (int i = 0; i < spatial; i++) y_shape[2 + i] = out_size[i];
    as_4d_shape(input->ndim, input->shape, spatial, x4);
    as_4d_shape(input->ndim, y_shape, spatial, y4);
    ampc_tensor *y = ampc_empty(input->ndim, y_shape, input->dtype, input->device);
    if (!y) return NULL;
    ampc_status st = AMPC_OK;
    if (ampc_numel(y) > 0) {
        dim_taps taps[3];
        ampc_tensor *xc = ampc_contiguous(input), *xv = xc ? nn_reshape_view(xc, 4, x4) : NULL;
        ampc_tensor *yv = xv ? nn_reshape_view(y, 4, y4) : NULL;
        st = yv ? forward_taps(mode, x4, y4, spatial, scales, align_corners, taps) : ampc_last_status();
        if (st == AMPC_OK) {
            st = run_resample(mode_ops[mode], yv, xv, taps);
            for (int d = 0; d < 3; d++) taps_free(&taps[d]);
        }
        nn_release(3, (ampc_tensor *[]){xc, xv, yv});
    }
    if (st == AMPC_OK && ampc_any_requires_grad(1, &input)) {
        ampc_node_attrs attrs;
        memset(&attrs, 0, sizeof attrs);
        attrs.ints[0] = spatial, attrs.ints[1] = align_corners;
        for (int i = 0; i < spatial; i++) attrs.ints[2 + i] = out_size[i];
        attrs.n_ints = 5;
        for (int i = 0; i < spatial; i++) attrs.scalars[i] = ampc_scalar_float(scales[i]);
        if (!ampc_autograd_record(&rules[mode][spatial - 1], 1, &input, 1, &y, 0, NULL, &attrs))
            st = ampc_last_status();
    }
    return nn_finish(st, y, 0, NULL);
}

ampc_tensor *ampc_interpolate_backward(const ampc_tensor *grad_out, const int64_t *input_shape, ampc_interp_mode mode,
                                       int spatial, const double *scales, bool align_corners) {
    char s1[96];
    if ((unsigned)mode > AMPC_INTERP_BICUBIC_AA || spatial < 1 || spatial > 3 || grad_out->ndim != spatial + 2 ||
        grad_out->shape[0] != input_shape[0] || grad_out->shape[1] != input_shape[1]) {
        ampc_set_error(AMPC_E_RUNTIME, "interpolate_backward: grad_output %s does not fit the input",
                       nn_shape(grad_out, s1, sizeof s1));
        return NULL;
    }
    if (nn_check_floating("interpolate_backward", grad_out, "grad_output") != AMPC_OK) return NULL;
    int64_t x4[4], y4[4];
    as_4d_shape(spatial + 2, input_shape, spatial, x4);
    as_4d_shape(grad_out->ndim, grad_out->shape, spatial, y4);
    ampc_tensor *gx = ampc_zeros(spatial + 2, input_shape, grad_out->dtype, grad_out->device);
    if (!gx || ampc_numel(gx) == 0 || ampc_numel(grad_out) == 0) return gx;
    dim_taps f[3], t[3];
    memset(t, 0, sizeof t);
    ampc_status st = forward_taps(mode, x4, y4, spatial, scales, align_corners, f);
    for (int d = 0; d < 3 && st == AMPC_OK; d++) st = transpose_taps(&f[d], x4[d + 1], &t[d]);
    ampc_tensor *gc = st == AMPC_OK ? ampc_contiguous(grad_out) : NULL, *gv = gc ? nn_reshape_view(gc, 4, y4) : NULL;
    ampc_tensor *xv = gv ? nn_reshape_view(gx, 4, x4) : NULL;
    if (st == AMPC_OK) st = xv ? run_resample(AMPC_OP_RESAMPLE_BACKWARD, xv, gv, t) : ampc_last_status();
    for (int d = 0; d < 3; d++) taps_free(&f[d]), taps_free(&t[d]);
    return nn_finish(st, gx, 3, (ampc_tensor *[]){gc, gv, xv});
}

static ampc_status resample_rule_fn(ampc_node *node, ampc_tensor *const *grads, ampc_tensor **grad_inputs) {
    AMPC_TRY(nn_first_order_only(node));
    if (!grads[0]) return AMPC_OK;
    ampc_interp_mode mode = (ampc_interp_mode)((node->rule - &rules[0][0]) / 3);
    int spatial = (int)node->attrs.ints[0];
    double scales[3];
    for (int i = 0; i < 3; i++) scales[i] = i < spatial ? ampc_scalar_to_double(node->attrs.scalars[i]) : 0.0;
    grad_inputs[0] = ampc_interpolate_backward(grads[0], node->in_shape[0], mode, spatial, scales,
                                               node->attrs.ints[1] != 0);
    return grad_inputs[0] ? AMPC_OK : ampc_last_status();
}
