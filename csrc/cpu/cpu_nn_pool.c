/* cpu_nn_pool.c: max, average and adaptive average 2-d pooling on the CPU, forward and backward.
 *
 * Every kernel works on (n, c) planes, in parallel: the input plane (H, W) and the output plane
 * (OH, OW) are loaded into double buffers, the windows are folded there, and results are stored
 * once. Backward accumulates into a double plane, so overlapping windows in fp16 round once.
 * Window rules are PyTorch's (aten/src/ATen/native/cpu/{MaxPool,AvgPool,AdaptiveAvgPool}Kernel). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../core/kernel_args.h"
#include "cpu_backend.h"
#include "cpu_nn_common.h"

typedef struct pool_geom {
    int64_t planes, h, w, oh, ow;
    int64_t kh, kw, sh, sw, ph, pw, dh, dw;
    bool count_include_pad;
    int64_t divisor_override;
} pool_geom;

/* The planes and sizes of x (N, C, H, W) and y (N, C, OH, OW); the window all zero (adaptive). */
static pool_geom geom_of(const ampc_tensor *x, const ampc_tensor *y) {
    pool_geom g;
    memset(&g, 0, sizeof g);
    g.planes = x->shape[0] * x->shape[1];
    g.h = x->shape[2], g.w = x->shape[3], g.oh = y->shape[2], g.ow = y->shape[3];
    return g;
}

/* The window: kernel, stride, padding, dilation (h, w each). */
static void set_window(pool_geom *g, const int64_t *k, const int64_t *s, const int64_t *p, const int64_t *d) {
    g->kh = k[0], g->kw = k[1], g->sh = s[0], g->sw = s[1], g->ph = p[0], g->pw = p[1], g->dh = d[0], g->dw = d[1];
}

/* What a pooling kernel's tasks (one (n, c) plane each) read. src and dst: x and y forward, grad
 * y and grad x backward. A task's scratch holds an input plane (H, W) and an output plane
 * (OH, OW): in = buf, out = buf + H * W. */
typedef struct pool_ctx {
    ampc_op op;
    pool_geom g;
    const ampc_tensor *src;
    ampc_tensor *dst;
    int64_t *indices;  /* max_pool2d: written; max_pool2d_backward: read */
    bool bad_index;    /* max_pool2d_backward: an index outside the plane */
} pool_ctx;

/* Runs task over the planes of c, each thread with room for one input and one output plane. */
static ampc_status run_planes(ampc_op op, pool_ctx *c, int64_t work, nn_task_fn task) {
    int64_t hw = c->g.h * c->g.w, ohw = c->g.oh * c->g.ow;
    return nn_run_tasks(op, c->g.planes, nn_threads(work), hw + ohw, task, c);
}

/* ---------------------------------------------------------------- max */

/* The common MaxPool2d(2): 2x2 windows, stride 2, no padding or dilation, every window inside
 * the plane. Same scan order and NaN rule as the general loop below, without its per-window
 * clipping (3-4x faster). */
static bool is_plain_2x2(const pool_geom *g) {
    return g->kh == 2 && g->kw == 2 && g->sh == 2 && g->sw == 2 && g->ph == 0 && g->pw == 0 && g->dh == 1 &&
           g->dw == 1 && 2 * g->oh <= g->h && 2 * g->ow <= g->w;
}

static void max_plane_2x2(const pool_geom *g, const double *in, double *out, int64_t *idx) {
    for (int64_t oh = 0; oh < g->oh; oh++) {
        int64_t r0 = 2 * oh * g->w, r1 = r0 + g->w;
        for (int64_t ow = 0; ow < g->ow; ow++) {
            int64_t cand[4] = {r0 + 2 * ow, r0 + 2 * ow + 1, r1 + 2 * ow, r1 + 2 * ow + 1};
            double best = in[cand[0]];
            int64_t best_i = cand[0];
            for (int k = 1; k < 4; k++) {
                double v = in[cand[k]];
                if (v > best || isnan(v)) { /* NaN wins (the last one, as PyTorch) */
                    best = v;
                    best_i = cand[k];
                }
            }
            out[oh * g->ow + ow] = best;
            idx[oh * g->ow + ow] = best_i;
        }
    }
}

static void max_plane(const pool_geom *g, const double *in, double *out, int64_t *idx) {
    if (is_plain_2x2(g)) {
        max_plane_2x2(g, in, out, idx);
        return;
    }
    for (int64_t oh = 0; oh < g->oh; oh++) {
        int64_t h0 = oh * g->sh - g->ph;
        int64_t ih0 = h0;
        while (ih0 < 0) ih0 += g->dh;
        int64_t h1 = h0 + (g->kh - 1) * g->dh + 1 < g->h ? h0 + (g->kh - 1) * g->dh + 1 : g->h;
        for (int64_t ow = 0; ow < g->ow; ow++) {
            int64_t w0 = ow * g->sw - g->pw;
            int64_t iw0 = w0;
            while (iw0 < 0) iw0 += g->dw;
            int64_t w1 = w0 + (g->kw - 1) * g->dw + 1 < g->w ? w0 + (g->kw - 1) * g->dw + 1 : g->w;
            double best = -INFINITY;
            int64_t best_i = ih0 * g->w + iw0;
            for (int64_t ih = ih0; ih < h1; ih += g->dh)
                for (int64_t iw = iw0; iw < w1; iw += g->dw) {
                    double v = in[ih * g->w + iw];
                    if (v > best || isnan(v)) { /* NaN wins (the last one, as PyTorch) */
                        best = v;
                        best_i = ih * g->w + iw;
                    }
                }
            out[oh * g->ow + ow] = best;
            idx[oh * g->ow + ow] = best_i;
        }
    }
}

static void max_pool_task(void *vctx, int64_t p, double *buf) {
    pool_ctx *c = (pool_ctx *)vctx;
    int64_t hw = c->g.h * c->g.w, ohw = c->g.oh * c->g.ow;
    nn_load(c->src->dtype, ampc_data_ptr(c->src), p * hw, 1, hw, buf);
    max_plane(&c->g, buf, buf + hw, c->indices + p * ohw);
    nn_store(c->dst->dtype, ampc_data_ptr(c->dst), p * ohw, 1, ohw, buf + hw);
}

static ampc_status cpu_max_pool2d(ampc_op op, const ampc_max_pool2d_args *a) {
    pool_ctx c = {.op = op, .g = geom_of(a->x, a->y), .src = a->x, .dst = a->y,
                  .indices = (int64_t *)ampc_data_ptr(a->indices)};
    set_window(&c.g, a->kernel, a->stride, a->padding, a->dilation);
    return run_planes(op, &c, c.g.planes * c.g.oh * c.g.ow * c.g.kh * c.g.kw, max_pool_task);
}

/* Grad x of one plane: each grad y element added at its window's max. */
static void max_pool_backward_task(void *vctx, int64_t p, double *buf) {
    pool_ctx *c = (pool_ctx *)vctx;
    int64_t hw = c->g.h * c->g.w, ohw = c->g.oh * c->g.ow;
    const int64_t *ip = c->indices + p * ohw;
    double *acc = buf, *g = buf + hw;
    memset(acc, 0, sizeof(double) * (size_t)hw);
    nn_load(c->src->dtype, ampc_data_ptr(c->src), p * ohw, 1, ohw, g);
    for (int64_t k = 0; k < ohw; k++) {
        if (ip[k] < 0 || ip[k] >= hw) {
            nn_set_flag(&c->bad_index); /* indices from elsewhere than max_pool2d */
            continue;
        }
        acc[ip[k]] += g[k];
    }
    nn_store(c->dst->dtype, ampc_data_ptr(c->dst), p * hw, 1, hw, acc);
}

static ampc_status cpu_max_pool2d_backward(ampc_op op, const ampc_max_pool2d_backward_args *a) {
    pool_ctx c = {.op = op, .g = geom_of(a->grad_x, a->grad_y), .src = a->grad_y, .dst = a->grad_x,
                  .indices = (int64_t *)ampc_data_ptr(a->indices)};
    ampc_status st = run_planes(op, &c, c.g.planes * (c.g.h * c.g.w + c.g.oh * c.g.ow), max_pool_backward_task);
    if (st == AMPC_OK && c.bad_index)
        return ampc_set_error(AMPC_E_INDEX, "max_pool2d_backward: an index is outside the input plane");
    return st;
}

/* ---------------------------------------------------------------- average */

/* The window of output (oh, ow) clipped to the input, and its divisor (PyTorch's rule: the
 * size before clipping to the input but after clipping to the padded input counts padding). */
typedef struct avg_window {
    int64_t h0, h1, w0, w1;
    double divisor;
} avg_window;

static avg_window avg_window_of(const pool_geom *g, int64_t oh, int64_t ow) {
    avg_window r;
    int64_t h0 = oh * g->sh - g->ph, w0 = ow * g->sw - g->pw;
    int64_t h1 = h0 + g->kh < g->h + g->ph ? h0 + g->kh : g->h + g->ph;
    int64_t w1 = w0 + g->kw < g->w + g->pw ? w0 + g->kw : g->w + g->pw;
    int64_t pool_size = (h1 - h0) * (w1 - w0);
    r.h0 = h0 > 0 ? h0 : 0, r.w0 = w0 > 0 ? w0 : 0;
    r.h1 = h1 < g->h ? h1 : g->h, r.w1 = w1 < g->w ? w1 : g->w;
    if (g->divisor_override)
        r.divisor = (double)g->divisor_override;
    else if (g->count_include_pad)
        r.divisor = (double)pool_size;
    else
        r.divisor = (double)((r.h1 - r.h0) * (r.w1 - r.w0));
    return r;
}

/* Adaptive windows: [floor(o * in / out), ceil((o + 1) * in / out)). */
static avg_window adaptive_window_of(const pool_geom *g, int64_t oh, int64_t ow) {
    avg_window r;
    r.h0 = oh * g->h / g->oh;
    r.h1 = ((oh + 1) * g->h + g->oh - 1) / g->oh;
    r.w0 = ow * g->w / g->ow;
    r.w1 = ((ow + 1) * g->w + g->ow - 1) / g->ow;
    r.divisor = (double)((r.h1 - r.h0) * (r.w1 - r.w0));
    return r;
}

static avg_window window_of(ampc_op op, const pool_geom *g, int64_t oh, int64_t ow) {
    bool adaptive = op == AMPC_OP_ADAPTIVE_AVG_POOL2D || op == AMPC_OP_ADAPTIVE_AVG_POOL2D_BACKWARD;
    return adaptive ? adaptive_window_of(g, oh, ow) : avg_window_of(g, oh, ow);
}

static void avg_plane(ampc_op op, const pool_geom *g, const double *in, double *out) {
    for (int64_t oh = 0; oh < g->oh; oh++)
        for (int64_t ow = 0; ow < g->ow; ow++) {
            avg_window r = window_of(op, g, oh, ow);
            double s = 0;
            if (r.h0 >= r.h1 || r.w0 >= r.w1) { /* a ceil_mode window entirely in the padding */
                out[oh * g->ow + ow] = 0;
                continue;
            }
            for (int64_t ih = r.h0; ih < r.h1; ih++)
                for (int64_t iw = r.w0; iw < r.w1; iw++) s += in[ih * g->w + iw];
            out[oh * g->ow + ow] = s / r.divisor;
        }
}

static void avg_plane_backward(ampc_op op, const pool_geom *g, const double *gout, double *gin) {
    memset(gin, 0, sizeof(double) * (size_t)(g->h * g->w));
    for (int64_t oh = 0; oh < g->oh; oh++)
        for (int64_t ow = 0; ow < g->ow; ow++) {
            avg_window r = window_of(op, g, oh, ow);
            if (r.h0 >= r.h1 || r.w0 >= r.w1) continue;
            double v = gout[oh * g->ow + ow] / r.divisor;
            for (int64_t ih = r.h0; ih < r.h1; ih++)
                for (int64_t iw = r.w0; iw < r.w1; iw++) gin[ih * g->w + iw] += v;
        }
}

static bool is_avg_backward(ampc_op op) {
    return op == AMPC_OP_AVG_POOL2D_BACKWARD || op == AMPC_OP_ADAPTIVE_AVG_POOL2D_BACKWARD;
}

static void avg_pool_task(void *vctx, int64_t p, double *buf) {
    const pool_ctx *c = (const pool_ctx *)vctx;
    int64_t hw = c->g.h * c->g.w, ohw = c->g.oh * c->g.ow;
    double *in = buf, *out = buf + hw;
    if (is_avg_backward(c->op)) {
        nn_load(c->src->dtype, ampc_data_ptr(c->src), p * ohw, 1, ohw, out);
        avg_plane_backward(c->op, &c->g, out, in);
        nn_store(c->dst->dtype, ampc_data_ptr(c->dst), p * hw, 1, hw, in);
    } else {
        nn_load(c->src->dtype, ampc_data_ptr(c->src), p * hw, 1, hw, in);
        avg_plane(c->op, &c->g, in, out);
        nn_store(c->dst->dtype, ampc_data_ptr(c->dst), p * ohw, 1, ohw, out);
    }
}

/* Forward and backward of AVG_POOL2D and ADAPTIVE_AVG_POOL2D: x/gx is the (N, C, H, W) side. */
static ampc_status avg_pool_run(ampc_op op, const ampc_tensor *src, ampc_tensor *dst, const ampc_avg_pool2d_args *w) {
    bool backward = is_avg_backward(op);
    pool_ctx c = {.op = op, .g = backward ? geom_of(dst, src) : geom_of(src, dst), .src = src, .dst = dst};
    if (w) { /* AVG_POOL2D(_BACKWARD); adaptive windows come from the sizes */
        static const int64_t one[2] = {1, 1};
        set_window(&c.g, w->kernel, w->stride, w->padding, one);
        c.g.count_include_pad = w->count_include_pad;
        c.g.divisor_override = w->divisor_override;
    }
    return run_planes(op, &c, c.g.planes * (c.g.h * c.g.w + c.g.oh * c.g.ow), avg_pool_task);
}

static ampc_status cpu_avg_pool2d(ampc_op op, const ampc_avg_pool2d_args *a) {
    return avg_pool_run(op, a->in, a->out, a);
}

static ampc_status cpu_adaptive_avg_pool2d(ampc_op op, const ampc_adaptive_pool2d_args *a) {
    return avg_pool_run(op, a->in, a->out, NULL);
}

void ampc_cpu_register_nn_pool(void) {
    ampc_register_max_pool2d(AMPC_CPU, cpu_max_pool2d);
    ampc_register_max_pool2d_backward(AMPC_CPU, cpu_max_pool2d_backward);
    ampc_register_avg_pool2d(AMPC_CPU, cpu_avg_pool2d);
    ampc_register_adaptive_pool2d(AMPC_CPU, cpu_adaptive_avg_pool2d);
}
