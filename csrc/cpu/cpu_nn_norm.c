/* cpu_nn_norm.c: batch, layer and group normalization on the CPU, forward and backward.
 *
 * Statistics come from one pass over the data with sums shifted by the first element (sum of
 * x - K and of (x - K)^2 in double): as accurate as two passes for any realistic data, and the
 * same single read of memory a CUDA kernel makes. Each tensor is read and written in its own
 * dtype (fp16 input with fp32 weight and running stats is the autocast case).
 *
 * Parallel splits never change results: batch norm and group norm reduce per channel on one
 * thread each; layer norm's weight/bias grads sum per-block partials (blocks of LN_BLOCK rows,
 * fixed) in block order. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../core/kernel_args.h"
#include "cpu_backend.h"
#include "cpu_nn_common.h"

#define LN_BLOCK 64 /* rows per partial sum of the layer-norm weight/bias grads */

/* Shifted one-pass moments of n values. */
typedef struct moments {
    double shift, sum, sumsq; /* of v - shift */
    int64_t n;
} moments;

static void moments_add(moments *m, const double *v, int64_t n) {
    if (n <= 0) return;
    if (m->n == 0) m->shift = v[0];
    double k = m->shift, s = 0, q = 0;
    for (int64_t i = 0; i < n; i++) {
        double d = v[i] - k;
        s += d;
        q += d * d;
    }
    m->sum += s;
    m->sumsq += q;
    m->n += n;
}

static double moments_mean(const moments *m) { return m->n ? m->shift + m->sum / (double)m->n : NAN; }

/* Biased variance (divides by n), never negative; NaN stays NaN (a row holding inf normalises to
 * NaN, as in torch). */
static double moments_var(const moments *m) {
    if (!m->n) return NAN;
    double v = (m->sumsq - m->sum * m->sum / (double)m->n) / (double)m->n;
    return v < 0 ? 0 : v;
}

/* Optional per-channel parameter c of t, or dflt. */
static double param(const ampc_tensor *t, int64_t c, double dflt) { return t ? nn_get(t->dtype, ampc_data_ptr(t), c) : dflt; }

/* What the tasks of a norm kernel read, unpacked once from its typed arguments. x is (N, C, L)
 * for batch and group norm, (M, D) for layer norm (n = M, l = D). */
typedef struct norm_ctx {
    const ampc_tensor *x, *g, *w, *b;        /* g: grad y (backward) */
    ampc_tensor *y, *gx, *gw, *gb;
    const ampc_tensor *mean, *rstd;          /* read (batch norm apply, backward); batch norm: invstd */
    ampc_tensor *mean_out, *rstd_out;        /* written (forward statistics) */
    ampc_tensor *rmean, *rvar;               /* batch norm stats: the running stats, updated */
    int64_t n, c, l, groups;
    double eps, momentum;
    bool is_var, training;
    const double *wd, *bd;                   /* layer norm: weight and bias as doubles */
    double *partial;                         /* layer norm backward: per-block weight/bias grads */
} norm_ctx;

/* n, c, l of x (N, C, L); returns the element count. */
static int64_t ncl_dims(norm_ctx *c) {
    c->n = c->x->shape[0], c->c = c->x->shape[1], c->l = c->x->shape[2];
    return c->n * c->c * c->l;
}

/* The mean and 1/std of statistics row r, written by a forward. */
static void store_stats(const norm_ctx *c, int64_t r, double mu, double rs) {
    nn_set(c->mean_out->dtype, ampc_data_ptr(c->mean_out), r, mu);
    nn_set(c->rstd_out->dtype, ampc_data_ptr(c->rstd_out), r, rs);
}

/* ---------------------------------------------------------------- batch norm */

/* One channel: its statistics and the running stats' update. buf: l doubles. */
static void bn_stats_task(void *vctx, int64_t ch, double *row) {
    const norm_ctx *c = (const norm_ctx *)vctx;
    moments m = {0, 0, 0, 0};
    for (int64_t i = 0; i < c->n; i++) {
        nn_load(c->x->dtype, ampc_data_ptr(c->x), (i * c->c + ch) * c->l, 1, c->l, row);
        moments_add(&m, row, c->l);
    }
    double mu = moments_mean(&m), var = moments_var(&m), momentum = c->momentum;
    store_stats(c, ch, mu, 1.0 / sqrt(var + c->eps));
    if (c->rmean)
        nn_set(c->rmean->dtype, ampc_data_ptr(c->rmean), ch, (1 - momentum) * param(c->rmean, ch, 0) + momentum * mu);
    if (c->rvar) {
        double unbiased = m.n > 1 ? var * (double)m.n / (double)(m.n - 1) : INFINITY;
        nn_set(c->rvar->dtype, ampc_data_ptr(c->rvar), ch, (1 - momentum) * param(c->rvar, ch, 0) + momentum * unbiased);
    }
}

static ampc_status cpu_batch_norm_stats(ampc_op op, const ampc_batch_norm_stats_args *a) {
    norm_ctx c = {.x = a->x, .mean_out = a->mean, .rstd_out = a->invstd, .rmean = a->running_mean,
                  .rvar = a->running_var, .eps = a->eps, .momentum = a->momentum};
    int64_t work = ncl_dims(&c);
    return nn_run_tasks(op, c.c, nn_threads(work), c.l, bn_stats_task, &c);
}

/* invstd of channel c: stored, or from a variance (eval mode). */
static double channel_invstd(const ampc_tensor *t, int64_t c, bool is_var, double eps) {
    double v = param(t, c, 1);
    return is_var ? 1.0 / sqrt(v + eps) : v;
}

/* One (n, c) row: y = x * scale + shift. buf: l doubles. */
static void bn_apply_task(void *vctx, int64_t r, double *row) {
    const norm_ctx *c = (const norm_ctx *)vctx;
    int64_t ch = r % c->c, l = c->l;
    double scale = channel_invstd(c->rstd, ch, c->is_var, c->eps) * param(c->w, ch, 1);
    double shift = param(c->b, ch, 0) - param(c->mean, ch, 0) * scale;
    nn_load(c->x->dtype, ampc_data_ptr(c->x), r * l, 1, l, row);
    for (int64_t i = 0; i < l; i++) row[i] = row[i] * scale + shift;
    nn_store(c->y->dtype, ampc_data_ptr(c->y), r * l, 1, l, row);
}

static ampc_status cpu_batch_norm_apply(ampc_op op, const ampc_batch_norm_apply_args *a) {
    norm_ctx c = {.x = a->x, .mean = a->mean, .rstd = a->invstd, .w = a->weight, .b = a->bias, .y = a->y,
                  .is_var = a->is_var, .eps = a->eps};
    int64_t work = ncl_dims(&c);
    return nn_run_tasks(op, c.n * c.c, nn_threads(work), c.l, bn_apply_task, &c);
}

/* One channel: its weight and bias grads, then its grad x rows. buf: 2 * l doubles. */
static void bn_backward_task(void *vctx, int64_t ch, double *buf) {
    const norm_ctx *c = (const norm_ctx *)vctx;
    int64_t n = c->n, l = c->l;
    const void *gp = ampc_data_ptr(c->g), *xp = ampc_data_ptr(c->x);
    double *gr = buf, *xr = buf + l, count = (double)(n * l);
    double mu = param(c->mean, ch, 0), istd = channel_invstd(c->rstd, ch, c->is_var, c->eps), wc = param(c->w, ch, 1);
    double sum_g = 0, sum_gx = 0; /* sum of g and of g * (x - mean) */
    for (int64_t i = 0; i < n; i++) {
        nn_load(c->g->dtype, gp, (i * c->c + ch) * l, 1, l, gr);
        nn_load(c->x->dtype, xp, (i * c->c + ch) * l, 1, l, xr);
        for (int64_t k = 0; k < l; k++) {
            sum_g += gr[k];
            sum_gx += gr[k] * (xr[k] - mu);
        }
    }
    if (c->gw) nn_set(c->gw->dtype, ampc_data_ptr(c->gw), ch, sum_gx * istd);
    if (c->gb) nn_set(c->gb->dtype, ampc_data_ptr(c->gb), ch, sum_g);
    if (!c->gx) return;
    /* training: the batch mean and variance depend on x too */
    bool training = c->training;
    double mean_g = training ? sum_g / count : 0, proj = training ? sum_gx / count * istd * istd : 0;
    for (int64_t i = 0; i < n; i++) {
        nn_load(c->g->dtype, gp, (i * c->c + ch) * l, 1, l, gr);
        if (training) nn_load(c->x->dtype, xp, (i * c->c + ch) * l, 1, l, xr);
        for (int64_t k = 0; k < l; k++)
            gr[k] = training ? (gr[k] - mean_g - (xr[k] - mu) * proj) * istd * wc : gr[k] * istd * wc;
        nn_store(c->gx->dtype, ampc_data_ptr(c->gx), (i * c->c + ch) * l, 1, l, gr);
    }
}

static ampc_status cpu_batch_norm_backward(ampc_op op, const ampc_batch_norm_backward_args *a) {
    norm_ctx c = {.g = a->grad_y, .x = a->x, .mean = a->mean, .rstd = a->invstd, .w = a->weight, .gx = a->grad_x,
                  .gw = a->grad_weight, .gb = a->grad_bias, .is_var = a->is_var, .training = a->training,
                  .eps = a->eps};
    int64_t work = ncl_dims(&c);
    return nn_run_tasks(op, c.c, nn_threads(2 * work), 2 * c.l, bn_backward_task, &c);
}

/* ---------------------------------------------------------------- layer norm */

/* The optional weight and bias of a layer norm as 2 * d doubles (1 and 0 without); caller frees. */
static double *affine_doubles(const ampc_tensor *w, const ampc_tensor *b, int64_t d) {
    double *wb = (double *)malloc(sizeof(double) * (size_t)(2 * d + 1));
    if (!wb) return NULL;
    for (int64_t k = 0; k < d; k++) wb[k] = 1, wb[d + k] = 0;
    if (w) nn_load(w->dtype, ampc_data_ptr(w), 0, 1, d, wb);
    if (b) nn_load(b->dtype, ampc_data_ptr(b), 0, 1, d, wb + d);
    return wb;
}

/* One row: normalized, scaled and shifted, and its statistics. buf: d doubles. */
static void ln_task(void *vctx, int64_t r, double *row) {
    const norm_ctx *c = (const norm_ctx *)vctx;
    int64_t d = c->l;
    const double *wd = c->wd, *bd = c->bd;
    nn_load(c->x->dtype, ampc_data_ptr(c->x), r * d, 1, d, row);
    moments mo = {0, 0, 0, 0};
    moments_add(&mo, row, d);
    double mu = moments_mean(&mo), rs = 1.0 / sqrt(moments_var(&mo) + c->eps);
    for (int64_t k = 0; k < d; k++) row[k] = (row[k] - mu) * rs * wd[k] + bd[k];
    nn_store(c->y->dtype, ampc_data_ptr(c->y), r * d, 1, d, row);
    store_stats(c, r, mu, rs);
}

static ampc_status cpu_layer_norm(ampc_op op, const ampc_layer_norm_args *a) {
    norm_ctx c = {.x = a->x, .y = a->y, .mean_out = a->mean, .rstd_out = a->rstd, .eps = a->eps};
    c.n = c.x->shape[0], c.l = c.x->shape[1];
    double *wb = affine_doubles(a->weight, a->bias, c.l);
    if (!wb) return nn_nomem(op);
    c.wd = wb, c.bd = wb + c.l;
    ampc_status st = nn_run_tasks(op, c.n, nn_threads(c.n * c.l), c.l, ln_task, &c);
    free(wb);
    return st;
}

/* One block of LN_BLOCK rows: their grad x, and the block's partial weight/bias grads.
 * buf: 2 * d doubles. */
static void ln_backward_task(void *vctx, int64_t blk, double *buf) {
    const norm_ctx *c = (const norm_ctx *)vctx;
    int64_t m = c->n, d = c->l;
    double *gr = buf, *xr = buf + d;
    const double *wd = c->wd;
    double *pw = c->partial ? c->partial + blk * 2 * d : NULL, *pb = pw ? pw + d : NULL;
    int64_t r1 = (blk + 1) * LN_BLOCK < m ? (blk + 1) * LN_BLOCK : m;
    for (int64_t r = blk * LN_BLOCK; r < r1; r++) {
        double mu = nn_get(c->mean->dtype, ampc_data_ptr(c->mean), r), rs = nn_get(c->rstd->dtype, ampc_data_ptr(c->rstd), r);
        nn_load(c->g->dtype, ampc_data_ptr(c->g), r * d, 1, d, gr);
        nn_load(c->x->dtype, ampc_data_ptr(c->x), r * d, 1, d, xr);
        double s1 = 0, s2 = 0; /* sums of g*w and g*w*xhat */
        for (int64_t k = 0; k < d; k++) {
            double xh = (xr[k] - mu) * rs, gw_k = gr[k] * wd[k];
            if (pw) pw[k] += gr[k] * xh, pb[k] += gr[k];
            xr[k] = xh;
            s1 += gw_k;
            s2 += gw_k * xh;
        }
        if (!c->gx) continue;
        double m1 = s1 / (double)d, m2 = s2 / (double)d;
        for (int64_t k = 0; k < d; k++) gr[k] = rs * (gr[k] * wd[k] - m1 - xr[k] * m2);
        nn_store(c->gx->dtype, ampc_data_ptr(c->gx), r * d, 1, d, gr);
    }
}

static ampc_status cpu_layer_norm_backward(ampc_op op, const ampc_layer_norm_backward_args *a) {
    norm_ctx c = {.g = a->grad_y, .x = a->x, .mean = a->mean, .rstd = a->rstd, .gx = a->grad_x,
                  .gw = a->grad_weight, .gb = a->grad_bias};
    int64_t m = c.n = c.x->shape[0], d = c.l = c.x->shape[1];
    int64_t blocks = (m + LN_BLOCK - 1) / LN_BLOCK;
    bool want_params = c.gw || c.gb;
    double *wb = affine_doubles(a->weight, NULL, d);
    /* per-block partial sums of g * xhat and g, then summed in block order */
    c.partial = want_params ? (double *)calloc((size_t)(blocks * 2 * d + 1), sizeof(double)) : NULL;
    ampc_status st = wb && (c.partial || !want_params) ? AMPC_OK : nn_nomem(op);
    c.wd = wb;
    if (st == AMPC_OK) st = nn_run_tasks(op, blocks, nn_threads(2 * m * d), 2 * d, ln_backward_task, &c);
    if (c.partial && st == AMPC_OK) {
        double *partial = c.partial;
        for (int64_t blk = 1; blk < blocks; blk++)
            for (int64_t k = 0; k < 2 * d; k++) partial[k] += partial[blk * 2 * d + k];
        if (c.gw) nn_store(c.gw->dtype, ampc_data_ptr(c.gw), 0, 1, d, partial);
        if (c.gb) nn_store(c.gb->dtype, ampc_data_ptr(c.gb), 0, 1, d, partial + d);
    }
    free(c.partial);
    free(wb);
    return st;
}

/* ---------------------------------------------------------------- group norm */

/* One (n, g) block (contiguous, cg * l long): normalized, scaled and shifted per channel, and its
 * statistics. buf: cg * l doubles. */
static void gn_task(void *vctx, int64_t ng, double *buf) {
    const norm_ctx *c = (const norm_ctx *)vctx;
    int64_t cg = c->c / c->groups, l = c->l, len = cg * l;
    nn_load(c->x->dtype, ampc_data_ptr(c->x), ng * len, 1, len, buf);
    moments mo = {0, 0, 0, 0};
    moments_add(&mo, buf, len);
    double mu = moments_mean(&mo), rs = 1.0 / sqrt(moments_var(&mo) + c->eps);
    for (int64_t k = 0; k < cg; k++) {
        int64_t ch = (ng % c->groups) * cg + k;
        double scale = rs * param(c->w, ch, 1), shift = param(c->b, ch, 0) - mu * scale;
        double *row = buf + k * l;
        for (int64_t i = 0; i < l; i++) row[i] = row[i] * scale + shift;
    }
    nn_store(c->y->dtype, ampc_data_ptr(c->y), ng * len, 1, len, buf);
    store_stats(c, ng, mu, rs);
}

static ampc_status cpu_group_norm(ampc_op op, const ampc_group_norm_args *a) {
    norm_ctx c = {.x = a->x, .w = a->weight, .b = a->bias, .y = a->y, .mean_out = a->mean, .rstd_out = a->rstd,
                  .groups = a->groups, .eps = a->eps};
    int64_t work = ncl_dims(&c);
    return nn_run_tasks(op, c.n * c.groups, nn_threads(work), c.c / c.groups * c.l, gn_task, &c);
}

/* Grad x of one (n, g) block. buf: 2 * cg * l doubles. */
static void gn_backward_x_task(void *vctx, int64_t ng, double *buf) {
    const norm_ctx *c = (const norm_ctx *)vctx;
    int64_t cg = c->c / c->groups, l = c->l, len = cg * l;
    double *gr = buf, *xr = buf + len;
    double mu = nn_get(c->mean->dtype, ampc_data_ptr(c->mean), ng), rs = nn_get(c->rstd->dtype, ampc_data_ptr(c->rstd), ng);
    nn_load(c->g->dtype, ampc_data_ptr(c->g), ng * len, 1, len, gr);
    nn_load(c->x->dtype, ampc_data_ptr(c->x), ng * len, 1, len, xr);
    double s1 = 0, s2 = 0;
    for (int64_t k = 0; k < cg; k++) {
        double wc = param(c->w, (ng % c->groups) * cg + k, 1);
        for (int64_t i = k * l; i < (k + 1) * l; i++) {
            double xh = (xr[i] - mu) * rs;
            gr[i] *= wc;
            xr[i] = xh;
            s1 += gr[i];
            s2 += gr[i] * xh;
        }
    }
    double m1 = s1 / (double)len, m2 = s2 / (double)len;
    for (int64_t i = 0; i < len; i++) gr[i] = rs * (gr[i] - m1 - xr[i] * m2);
    nn_store(c->gx->dtype, ampc_data_ptr(c->gx), ng * len, 1, len, gr);
}

/* Weight and bias grads of one channel, summed over n in order. buf: 2 * l doubles. */
static void gn_backward_param_task(void *vctx, int64_t ch, double *buf) {
    const norm_ctx *c = (const norm_ctx *)vctx;
    int64_t l = c->l, cg = c->c / c->groups;
    double *gr = buf, *xr = buf + l, sw = 0, sb = 0;
    for (int64_t i = 0; i < c->n; i++) {
        int64_t ng = i * c->groups + ch / cg;
        double mu = nn_get(c->mean->dtype, ampc_data_ptr(c->mean), ng), rs = nn_get(c->rstd->dtype, ampc_data_ptr(c->rstd), ng);
        nn_load(c->g->dtype, ampc_data_ptr(c->g), (i * c->c + ch) * l, 1, l, gr);
        nn_load(c->x->dtype, ampc_data_ptr(c->x), (i * c->c + ch) * l, 1, l, xr);
        for (int64_t k = 0; k < l; k++) {
            sw += gr[k] * (xr[k] - mu) * rs;
            sb += gr[k];
        }
    }
    if (c->gw) nn_set(c->gw->dtype, ampc_data_ptr(c->gw), ch, sw);
    if (c->gb) nn_set(c->gb->dtype, ampc_data_ptr(c->gb), ch, sb);
}

static ampc_status cpu_group_norm_backward(ampc_op op, const ampc_group_norm_backward_args *a) {
    norm_ctx c = {.g = a->grad_y, .x = a->x, .mean = a->mean, .rstd = a->rstd, .w = a->weight, .gx = a->grad_x,
                  .gw = a->grad_weight, .gb = a->grad_bias, .groups = a->groups};
    int64_t work = ncl_dims(&c);
    ampc_status st = AMPC_OK;
    if (c.gx) /* one (n, g) block per task */
        st = nn_run_tasks(op, c.n * c.groups, nn_threads(3 * work), 2 * (c.c / c.groups) * c.l, gn_backward_x_task, &c);
    if (st == AMPC_OK && (c.gw || c.gb)) /* one channel per task */
        st = nn_run_tasks(op, c.c, nn_threads(3 * work), 2 * c.l, gn_backward_param_task, &c);
    return st;
}

void ampc_cpu_register_nn_norm(void) {
    ampc_register_batch_norm_stats(AMPC_CPU, cpu_batch_norm_stats);
    ampc_register_batch_norm_apply(AMPC_CPU, cpu_batch_norm_apply);
    ampc_register_batch_norm_backward(AMPC_CPU, cpu_batch_norm_backward);
    ampc_register_layer_norm(AMPC_CPU, cpu_layer_norm);
    ampc_register_layer_norm_backward(AMPC_CPU, cpu_layer_norm_backward);
    ampc_register_group_norm(AMPC_CPU, cpu_group_norm);
    ampc_register_group_norm_backward(AMPC_CPU, cpu_group_norm_backward);
}
