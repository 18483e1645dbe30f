/* cpu_nn_poolnorm.c: the pool3d rows (max, average, adaptive average and adaptive max pooling over
 * (N, C, D, H, W) planes, which serve 3-d pools and, with D = 1, the 2-d adaptive max) and
 * rms_norm forward and backward on the CPU.
 *
 * As in cpu_nn_pool.c, every pooling task is one (n, c) plane: the input volume and the output
 * volume are loaded into double buffers, windows are folded there, and results are stored once
 * (backward accumulates in double, so overlapping windows in fp16 round once). Window rules are
 * PyTorch's (aten/src/ATen/native/{DilatedMaxPool3d,AveragePool3d,AdaptiveMaxPooling3d}.cpp). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../core/fractional_pool.h"
#include "../core/kernel_args.h"
#include "cpu_backend.h"
#include "cpu_nn_common.h"

/* One axis of a window: positions [lo, hi) step `step` of the input, and its pool size. */
typedef struct axis_win {
    int64_t lo, hi, step, size;
} axis_win;

typedef struct p3_ctx {
    ampc_op op;
    int64_t planes, in[3], out[3], k[3], s[3], p[3], d[3];
    bool adaptive, count_include_pad;
    int64_t divisor_override;
    const ampc_tensor *src;
    ampc_tensor *dst;
    int64_t *indices;
} p3_ctx;

/* Axis i of output position o. Adaptive: [floor(o * in / out), ceil((o + 1) * in / out)).
 * Max: the dilated positions inside the input. Avg: clipped to the input, `size` the window
 * clipped to the padded input only (what count_include_pad divides by). */
static axis_win axis_of(const p3_ctx *c, int i, int64_t o) {
    axis_win a;
    int64_t in = c->in[i];
    if (c->adaptive) {
        a.lo = o * in / c->out[i];
        a.hi = ((o + 1) * in + c->out[i] - 1) / c->out[i];
        a.step = 1, a.size = a.hi - a.lo;
        return a;
    }
    int64_t start = o * c->s[i] - c->p[i];
    if (c->op == AMPC_OP_MAX_POOL3D) {
        a.step = c->d[i];
        a.lo = start;
        while (a.lo < 0) a.lo += a.step;
        int64_t end = start + (c->k[i] - 1) * a.step + 1;
        a.hi = end < in ? end : in;
        a.size = 0;
        return a;
    }
    int64_t end = start + c->k[i] < in + c->p[i] ? start + c->k[i] : in + c->p[i];
    a.size = end - start;
    a.lo = start > 0 ? start : 0;
    a.hi = end < in ? end : in;
    a.step = 1;
    return a;
}

static bool is_max(ampc_op op) {
    return op == AMPC_OP_MAX_POOL3D || op == AMPC_OP_ADAPTIVE_MAX_POOL2D || op == AMPC_OP_ADAPTIVE_MAX_POOL3D;
}
static bool is_backward(ampc_op op) {
    return op == AMPC_OP_AVG_POOL3D_BACKWARD || op == AMPC_OP_ADAPTIVE_AVG_POOL3D_BACKWARD;
}

/* The divisor of an average window (PyTorch's rule). */
static double avg_divisor(const p3_ctx *c, const axis_win w[3]) {
    if (c->divisor_override) return (double)c->divisor_override;
    if (c->adaptive || !c->count_include_pad)
        return (double)((w[0].hi - w[0].lo) * (w[1].hi - w[1].lo) * (w[2].hi - w[2].lo));
    return (double)(w[0].size * w[1].size * w[2].size);
}

/* Forward of one plane: in (D, H, W) -> out (OD, OH, OW) (+ flat argmax indices). */
static void pool_plane(const p3_ctx *c, const double *in, double *out, int64_t *idx) {
    int64_t H = c->in[1], W = c->in[2];
    bool mx = is_max(c->op);
    int64_t k = 0;
    for (int64_t od = 0; od < c->out[0]; od++) {
        axis_win wd = axis_of(c, 0, od);
        for (int64_t oh = 0; oh < c->out[1]; oh++) {
            axis_win wh = axis_of(c, 1, oh);
            for (int64_t ow = 0; ow < c->out[2]; ow++, k++) {
                axis_win w[3] = {wd, wh, axis_of(c, 2, ow)};
                if (mx) {
                    double best = -INFINITY;
                    int64_t best_i = (w[0].lo * H + w[1].lo) * W + w[2].lo;
                    for (int64_t d = w[0].lo; d < w[0].hi; d += w[0].step)
                        for (int64_t h = w[1].lo; h < w[1].hi; h += w[1].step)
                            for (int64_t x = w[2].lo; x < w[2].hi; x += w[2].step) {
                                int64_t i = (d * H + h) * W + x;
                                double v = in[i];
                                if (v > best || isnan(v)) { /* NaN wins (the last one, as PyTorch) */
                                    best = v;
                                    best_i = i;
                                }
                            }
                    out[k] = best;
                    idx[k] = best_i;
                    continue;
                }
                if (w[0].lo >= w[0].hi || w[1].lo >= w[1].hi || w[2].lo >= w[2].hi) { /* all padding */
                    out[k] = 0;
                    continue;
                }
                double s = 0;
                for (int64_t d = w[0].lo; d < w[0].hi; d++)
                    for (int64_t h = w[1].lo; h < w[1].hi; h++)
                        for (int64_t x = w[2].lo; x < w[2].hi; x++) s += in[(d * H + h) * W + x];
                out[k] = s / avg_divisor(c, w);
            }
        }
    }
}

/* Backward of one average plane: grad out spread over its windows into grad in (zeroed here). */
static void avg_plane_backward(const p3_ctx *c, const double *gout, double *gin) {
    int64_t H = c->in[1], W = c->in[2];
    memset(gin, 0, sizeof(double) * (size_t)(c->in[0] * H * W));
    int64_t k = 0;
    for (int64_t od = 0; od < c->out[0]; od++) {
        axis_win wd = axis_of(c, 0, od);
        for (int64_t oh = 0; oh < c->out[1]; oh++) {
            axis_win wh = axis_of(c, 1, oh);
            for (int64_t ow = 0; ow < c->out[2]; ow++, k++) {
                axis_win w[3] = {wd, wh, axis_of(c, 2, ow)};
                if (w[0].lo >= w[0].hi || w[1].lo >= w[1].hi || w[2].lo >= w[2].hi) continue;
                double v = gout[k] / avg_divisor(c, w);
                for (int64_t d = w[0].lo; d < w[0].hi; d++)
                    for (int64_t h = w[1].lo; h < w[1].hi; h++)
                        for (int64_t x = w[2].lo; x < w[2].hi; x++) gin[(d * H + h) * W + x] += v;
            }
        }
    }
}

static void pool_task(void *vctx, int64_t p, double *buf) {
    const p3_ctx *c = (const p3_ctx *)vctx;
    int64_t iv = c->in[0] * c->in[1] * c->in[2], ov = c->out[0] * c->out[1] * c->out[2];
    double *in = buf, *out = buf + iv;
    if (is_backward(c->op)) {
        nn_load(c->src->dtype, ampc_data_ptr(c->src), p * ov, 1, ov, out);
        avg_plane_backward(c, out, in);
        nn_store(c->dst->dtype, ampc_data_ptr(c->dst), p * iv, 1, iv, in);
    } else {
        nn_load(c->src->dtype, ampc_data_ptr(c->src), p * iv, 1, iv, in);
        pool_plane(c, in, out, c->indices ? c->indices + p * ov : NULL);
        nn_store(c->dst->dtype, ampc_data_ptr(c->dst), p * ov, 1, ov, out);
    }
}

static ampc_status cpu_pool3d(ampc_op op, const ampc_pool3d_args *a) {
    const ampc_tensor *x = is_backward(op) ? a->out : a->in, *y = is_backward(op) ? a->in : a->out;
    p3_ctx c = {.op = op, .planes = x->shape[0] * x->shape[1], .src = a->in, .dst = a->out,
                .count_include_pad = a->count_include_pad, .divisor_override = a->divisor_override,
                .indices = a->indices ? (int64_t *)ampc_data_ptr(a->indices) : NULL};
    c.adaptive = a->kernel[0] == 0;
    for (int i = 0; i < 3; i++) {
        c.in[i] = x->shape[2 + i], c.out[i] = y->shape[2 + i];
        c.k[i] = a->kernel[i], c.s[i] = a->stride[i], c.p[i] = a->padding[i], c.d[i] = a->dilation[i];
    }
    if (is_max(op) && !c.indices) return ampc_set_error(AMPC_E_RUNTIME, "%s: indices are required", ampc_op_name(op));
    int64_t iv = c.in[0] * c.in[1] * c.in[2], ov = c.out[0] * c.out[1] * c.out[2];
    int64_t win = c.adaptive ? 1 : c.k[0] * c.k[1] * c.k[2];
    return nn_run_tasks(op, c.planes, nn_threads(c.planes * (iv + ov * win)), iv + ov, pool_task, &c);
}

/* ---------------------------------------------------------------- fractional max pooling */

typedef struct frac_ctx {
    int64_t planes, c, in[3], out[3], k[3];
    int nsp;
    const ampc_tensor *x, *samples;
    ampc_tensor *y;
    int64_t *indices;
} frac_ctx;

/* The sample of plane p for axis a of (D, H, W): 3-d pools use (t, h, w) = samples[0, 1, 2], 2-d
 * pools (w, h) = samples[0, 1] (PyTorch's order). */
static int sample_slot(int nsp, int a) { return nsp == 3 ? a : 2 - a; }

/* buf: the input plane, then 3 * max(out) window starts. */
static void frac_task(void *vctx, int64_t p, double *buf) {
    const frac_ctx *c = (const frac_ctx *)vctx;
    int64_t iv = c->in[0] * c->in[1] * c->in[2], ov = c->out[0] * c->out[1] * c->out[2];
    int64_t H = c->in[1], W = c->in[2];
    double *in = buf;
    int64_t *start[3], omax = c->out[0] > c->out[1] ? c->out[0] : c->out[1];
    omax = omax > c->out[2] ? omax : c->out[2];
    for (int a = 0; a < 3; a++) start[a] = (int64_t *)(buf + iv) + a * omax;
    for (int a = 0; a < 3; a++) {
        bool used = a >= 3 - c->nsp;
        double u = used ? nn_get(c->samples->dtype, ampc_data_ptr(c->samples), p * c->nsp + sample_slot(c->nsp, a)) : 0;
        for (int64_t o = 0; o < c->out[a]; o++)
            start[a][o] = c->samples->dtype == AMPC_FLOAT64 ? ampc_frac_start_d(u, o, c->in[a], c->out[a], c->k[a])
                                                            : ampc_frac_start_f((float)u, o, c->in[a], c->out[a], c->k[a]);
    }
    nn_load(c->x->dtype, ampc_data_ptr(c->x), p * iv, 1, iv, in);
    double *out = in + iv + 3 * omax; /* after the starts (int64 and double have one size) */
    int64_t *idx = c->indices + p * ov, k = 0;
    for (int64_t od = 0; od < c->out[0]; od++)
        for (int64_t oh = 0; oh < c->out[1]; oh++)
            for (int64_t ow = 0; ow < c->out[2]; ow++, k++) {
                int64_t d0 = start[0][od], h0 = start[1][oh], w0 = start[2][ow];
                double best = -INFINITY;
                int64_t best_i = (d0 * H + h0) * W + w0;
                for (int64_t d = d0; d < d0 + c->k[0]; d++)
                    for (int64_t h = h0; h < h0 + c->k[1]; h++)
                        for (int64_t w = w0; w < w0 + c->k[2]; w++) {
                            int64_t i = (d * H + h) * W + w;
                            if (in[i] > best || isnan(in[i])) { /* NaN wins (the last one), as PyTorch */
                                best = in[i];
                                best_i = i;
                            }
                        }
                out[k] = best;
                idx[k] = best_i;
            }
    nn_store(c->y->dtype, ampc_data_ptr(c->y), p * ov, 1, ov, out);
}

static ampc_status cpu_fractional_max_pool(ampc_op op, const ampc_fractional_max_pool_args *a) {
    frac_ctx c = {.planes = a->in->shape[0] * a->in->shape[1], .c = a->in->shape[1], .nsp = (int)a->samples->shape[2],
                  .x = a->in, .samples = a->samples, .y = a->out, .indices = (int64_t *)ampc_data_ptr(a->indices)};
    int64_t omax = 1;
    for (int i = 0; i < 3; i++) {
        c.in[i] = a->in->shape[2 + i], c.out[i] = a->out->shape[2 + i], c.k[i] = a->kernel[i];
        omax = c.out[i] > omax ? c.out[i] : omax;
    }
    int64_t iv = c.in[0] * c.in[1] * c.in[2], ov = c.out[0] * c.out[1] * c.out[2];
    int64_t work = c.planes * ov * c.k[0] * c.k[1] * c.k[2];
    /* plane p of (n, c) reads samples row n * C + c: the first N rows of (N', C, nsp) */
    return nn_run_tasks(op, c.planes, nn_threads(work), iv + 3 * omax + ov, frac_task, &c);
}

/* ---------------------------------------------------------------- rms_norm */

typedef struct rms_ctx {
    int64_t m, d;
    const ampc_tensor *x, *g, *rstd;
    ampc_tensor *y, *rstd_out, *gx;
    const double *wd;
    double eps;
    double *partial; /* backward: per block of RMS_BLOCK rows, d partial sums of g * x * rstd */
} rms_ctx;

#define RMS_BLOCK 64

/* The optional weight as d doubles (1 without); caller frees. */
static double *weight_doubles(const ampc_tensor *w, int64_t d) {
    double *wd = (double *)malloc(sizeof(double) * (size_t)(d + 1));
    if (!wd) return NULL;
    for (int64_t k = 0; k < d; k++) wd[k] = 1;
    if (w) nn_load(w->dtype, ampc_data_ptr(w), 0, 1, d, wd);
    return wd;
}

/* One row: y = x * rsqrt(mean(x^2) + eps) * w. */
static void rms_task(void *vctx, int64_t r, double *row) {
    const rms_ctx *c = (const rms_ctx *)vctx;
    int64_t d = c->d;
    nn_load(c->x->dtype, ampc_data_ptr(c->x), r * d, 1, d, row);
    double ss = 0;
    for (int64_t k = 0; k < d; k++) ss += row[k] * row[k];
    double rs = 1.0 / sqrt(ss / (double)d + c->eps);
    for (int64_t k = 0; k < d; k++) row[k] = row[k] * rs * c->wd[k];
    nn_store(c->y->dtype, ampc_data_ptr(c->y), r * d, 1, d, row);
    nn_set(c->rstd_out->dtype, ampc_data_ptr(c->rstd_out), r, rs);
}

static ampc_status cpu_rms_norm(ampc_op op, const ampc_rms_norm_args *a) {
    rms_ctx c = {.m = a->x->shape[0], .d = a->x->shape[1], .x = a->x, .y = a->y, .rstd_out = a->rstd, .eps = a->eps};
    double *wd = weight_doubles(a->weight, c.d);
    if (!wd) return nn_nomem(op);
    c.wd = wd;
    ampc_status st = nn_run_tasks(op, c.m, nn_threads(c.m * c.d), c.d, rms_task, &c);
    free(wd);
    return st;
}

/* Rows of one block: grad x = rstd * (g w - xhat * mean(g w xhat)), xhat = x * rstd; the block's
 * partial sums of g * xhat for grad weight. buf: 2 * d doubles. */
static void rms_backward_task(void *vctx, int64_t blk, double *buf) {
    const rms_ctx *c = (const rms_ctx *)vctx;
    int64_t d = c->d;
    double *gr = buf, *xr = buf + d;
    double *pw = c->partial ? c->partial + blk * d : NULL;
    int64_t r1 = (blk + 1) * RMS_BLOCK < c->m ? (blk + 1) * RMS_BLOCK : c->m;
    for (int64_t r = blk * RMS_BLOCK; r < r1; r++) {
        double rs = nn_get(c->rstd->dtype, ampc_data_ptr(c->rstd), r);
        nn_load(c->g->dtype, ampc_data_ptr(c->g), r * d, 1, d, gr);
        nn_load(c->x->dtype, ampc_data_ptr(c->x), r * d, 1, d, xr);
        double s = 0;
        for (int64_t k = 0; k < d; k++) {
            double xh = xr[k] * rs;
            if (pw) pw[k] += gr[k] * xh;
            xr[k] = xh;
            s += gr[k] * c->wd[k] * xh;
        }
        if (!c->gx) continue;
        double mean = s / (double)d;
        for (int64_t k = 0; k < d; k++) gr[k] = rs * (gr[k] * c->wd[k] - xr[k] * mean);
        nn_store(c->gx->dtype, ampc_data_ptr(c->gx), r * d, 1, d, gr);
    }
}

static ampc_status cpu_rms_norm_backward(ampc_op op, const ampc_rms_norm_backward_args *a) {
    rms_ctx c = {.m = a->x->shape[0], .d = a->x->shape[1], .x = a->x, .g = a->grad_y, .rstd = a->rstd,
                 .gx = a->grad_x};
    int64_t blocks = (c.m + RMS_BLOCK - 1) / RMS_BLOCK;
    double *wd = weight_doubles(a->weight, c.d);
    /* per-block partial sums, then summed in block order: the result does not depend on threads */
    c.partial = a->grad_weight ? (double *)calloc((size_t)(blocks * c.d + 1), sizeof(double)) : NULL;
    ampc_status st = wd && (c.partial || !a->grad_weight) ? AMPC_OK : nn_nomem(op);
    c.wd = wd;
    if (st == AMPC_OK) st = nn_run_tasks(op, blocks, nn_threads(2 * c.m * c.d), 2 * c.d, rms_backward_task, &c);
    if (c.partial && st == AMPC_OK) {
        for (int64_t blk = 1; blk < blocks; blk++)
            for (int64_t k = 0; k < c.d; k++) c.partial[k] += c.partial[blk * c.d + k];
        nn_store(a->grad_weight->dtype, ampc_data_ptr(a->grad_weight), 0, 1, c.d, c.partial);
    }
    free(c.partial);
    free(wd);
    return st;
}

void ampc_cpu_register_nn_poolnorm(void) {
    ampc_register_pool3d(AMPC_CPU, cpu_pool3d);
    ampc_register_fractional_max_pool(AMPC_CPU, cpu_fractional_max_pool);
    ampc_register_rms_norm(AMPC_CPU, cpu_rms_norm);
    ampc_register_rms_norm_backward(AMPC_CPU, cpu_rms_norm_backward);
}
