/* cpu_nn_conv.c: IM2COL and COL2IM on the CPU, the data movement around the GEMM that does the
 * arithmetic of a convolution (core/nn_conv.c).
 *
 * IM2COL copies elements as they are (no dtype conversion: a column matrix holds the input's
 * values, padding reads as zero bits, which is 0 in every floating dtype). COL2IM sums
 * overlapping windows, so it adds in double per (n, c) plane and rounds once. Both run over
 * (n, c) planes, a plane read or written by exactly one thread, but in parallel only for very
 * large work: the convolution frontend calls them on small chunks (a few MiB) between two BLAS
 * calls, and an OpenMP team still spinning after its region takes the cores from OpenBLAS's own
 * threads (measured: 5-10x slower convolutions on 2 cores). */
#include <stdlib.h>
#include <string.h>

#include "../core/kernel_args.h"
#include "cpu_backend.h"
#include "cpu_nn_common.h"

/* Elements of work below which IM2COL/COL2IM stay on the calling thread (see above). */
#define CONV_PARALLEL_GRAIN (1 << 23)

static int conv_threads(int64_t work) { return work >= CONV_PARALLEL_GRAIN ? nn_threads(work) : 1; }

typedef struct conv_geom {
    int64_t n, c, h, w;         /* input */
    int64_t kh, kw, sh, sw, ph, pw, dh, dw;
    int64_t oh, ow;             /* output */
} conv_geom;

static conv_geom geom_of(const ampc_tensor *x, const ampc_im2col_args *a) {
    conv_geom g;
    g.n = x->shape[0], g.c = x->shape[1], g.h = x->shape[2], g.w = x->shape[3];
    g.kh = a->kernel[0], g.kw = a->kernel[1], g.sh = a->stride[0], g.sw = a->stride[1];
    g.ph = a->padding[0], g.pw = a->padding[1], g.dh = a->dilation[0], g.dw = a->dilation[1];
    g.oh = a->out_size[0], g.ow = a->out_size[1];
    return g;
}

/* dst[k] = src[k * stride] for k < n, elements of `item` bytes. */
static void copy_strided(char *dst, const char *src, int64_t n, int64_t stride, size_t item) {
    if (stride == 1) {
        memcpy(dst, src, (size_t)n * item);
        return;
    }
    switch (item) {
    case 2: for (int64_t k = 0; k < n; k++) ((uint16_t *)dst)[k] = ((const uint16_t *)src)[k * stride]; break;
    case 4: for (int64_t k = 0; k < n; k++) ((uint32_t *)dst)[k] = ((const uint32_t *)src)[k * stride]; break;
    case 8: for (int64_t k = 0; k < n; k++) ((uint64_t *)dst)[k] = ((const uint64_t *)src)[k * stride]; break;
    default: for (int64_t k = 0; k < n; k++) memcpy(dst + k * item, src + k * stride * (int64_t)item, item);
    }
}

/* The output columns [lo, hi) whose input column ow * sw - pw + off lies inside [0, w). */
static void valid_range(int64_t out, int64_t s, int64_t p, int64_t off, int64_t w, int64_t *lo, int64_t *hi) {
    /* first ow with ow * s >= p - off, last with ow * s <= w - 1 + p - off */
    int64_t a = p - off, b = w - 1 + p - off;
    int64_t l = a <= 0 ? 0 : (a + s - 1) / s;
    int64_t h = b < 0 ? 0 : b / s + 1;
    *lo = l < out ? l : out;
    *hi = h < out ? h : out;
    if (*hi < *lo) *hi = *lo;
}

/* The kh * kw rows of one (n, c) plane, each oh * ow long; row (ki, kj) starts at
 * dst + (ki * kw + kj) * row_step elements. */
static void im2col_plane(const conv_geom *g, const char *plane, char *dst, int64_t row_step, size_t item) {
    for (int64_t ki = 0; ki < g->kh; ki++)
        for (int64_t kj = 0; kj < g->kw; kj++) {
            char *row = dst + (ki * g->kw + kj) * row_step * (int64_t)item;
            int64_t lo, hi;
            valid_range(g->ow, g->sw, g->pw, kj * g->dw, g->w, &lo, &hi);
            for (int64_t oh = 0; oh < g->oh; oh++) {
                char *o = row + oh * g->ow * (int64_t)item;
                int64_t ih = oh * g->sh - g->ph + ki * g->dh;
                if (ih < 0 || ih >= g->h) {
                    memset(o, 0, (size_t)g->ow * item);
                    continue;
                }
                memset(o, 0, (size_t)lo * item);
                int64_t iw0 = lo * g->sw - g->pw + kj * g->dw;
                copy_strided(o + lo * (int64_t)item, plane + (ih * g->w + iw0) * (int64_t)item, hi - lo, g->sw, item);
                memset(o + hi * (int64_t)item, 0, (size_t)(g->ow - hi) * item);
            }
        }
}

static ampc_status cpu_im2col(ampc_op op, const ampc_im2col_args *a) {
    const ampc_tensor *x = a->in;
    conv_geom g = geom_of(x, a);
    size_t item = ampc_dtype_itemsize(x->dtype);
    const char *src = (const char *)ampc_data_ptr(x);
    char *dst = (char *)ampc_data_ptr(a->out);
    int64_t kk = g.kh * g.kw, l = g.oh * g.ow, planes = g.n * g.c;
#ifdef _OPENMP
#pragma omp parallel for schedule(static) num_threads(conv_threads(planes * kk * l))
#endif
    for (int64_t p = 0; p < planes; p++) /* plane (n, c) fills rows (n, c * kk .. c * kk + kk) */
        im2col_plane(&g, src + p * g.h * g.w * (int64_t)item, dst + p * kk * l * (int64_t)item, l, item);
    return AMPC_OK;
}

typedef struct col2im_ctx {
    conv_geom g;
    const ampc_tensor *cols;
    ampc_tensor *x;
} col2im_ctx;

/* Plane (n, c) of x: the sum of its kh * kw column rows, each oh * ow long, in double.
 * buf: the plane (h * w) and one row (oh * ow). */
static void col2im_task(void *vctx, int64_t p, double *buf) {
    const col2im_ctx *c = (const col2im_ctx *)vctx;
    const conv_geom *g = &c->g;
    int64_t kk = g->kh * g->kw, l = g->oh * g->ow, hw = g->h * g->w;
    double *acc = buf, *row = buf + hw;
    memset(acc, 0, sizeof(double) * (size_t)hw);
    for (int64_t ki = 0; ki < g->kh; ki++)
        for (int64_t kj = 0; kj < g->kw; kj++) {
            nn_load(c->cols->dtype, ampc_data_ptr(c->cols), (p * kk + ki * g->kw + kj) * l, 1, l, row);
            int64_t lo, hi;
            valid_range(g->ow, g->sw, g->pw, kj * g->dw, g->w, &lo, &hi);
            for (int64_t oh = 0; oh < g->oh; oh++) {
                int64_t ih = oh * g->sh - g->ph + ki * g->dh;
                if (ih < 0 || ih >= g->h) continue;
                int64_t base = ih * g->w - g->pw + kj * g->dw; /* + ow * sw: inside the row */
                const double *r = row + oh * g->ow;
                for (int64_t ow = lo; ow < hi; ow++) acc[base + ow * g->sw] += r[ow];
            }
        }
    nn_store(c->x->dtype, ampc_data_ptr(c->x), p * hw, 1, hw, acc);
}

static ampc_status cpu_col2im(ampc_op op, const ampc_im2col_args *a) {
    col2im_ctx c = {.g = geom_of(a->out, a), .cols = a->in, .x = a->out};
    int64_t kk = c.g.kh * c.g.kw, l = c.g.oh * c.g.ow, planes = c.g.n * c.g.c;
    return nn_run_tasks(op, planes, conv_threads(planes * kk * l), c.g.h * c.g.w + l, col2im_task, &c);
}

/* IM2COL and COL2IM share their schema (the frontend fills one geometry for both). */
static ampc_status cpu_cols(ampc_op op, const ampc_im2col_args *a) {
    return op == AMPC_OP_IM2COL ? cpu_im2col(op, a) : cpu_col2im(op, a);
}

void ampc_cpu_register_nn_conv(void) {
    ampc_register_im2col(AMPC_CPU, cpu_cols);
}
