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

/* Biased variance (divides by n), never negative. */
static double moments_var(const moments *m) {
    if (!m->n) return NAN;
    double v = (m->sumsq - m->sum * m->sum / (double)m->n) / (double)m->n;
    return v > 0 ? v : 0;
}

/* Optional per-channel parameter c of t, or dflt. */
static double param(const ampc_tensor *t, int64_t c, double dflt) { return t ? nn_get(t->dtype, ampc_data_ptr(t), c) : dflt; }

/* ---------------------------------------------------------------- batch norm */

static ampc_status cpu_batch_norm_stats(ampc_op op, const ampc_batch_norm_stats_args *a) {
    const ampc_tensor *x = a->x;
    ampc_tensor *mean = a->mean, *invstd = a->invstd, *rmean = a->running_mean, *rvar = a->running_var;
    int64_t n = x->shape[0], c = x->shape[1], l = x->shape[2];
    double eps = a->eps, momentum = a->momentum;
    const void *xp = ampc_data_ptr(x);
    bool failed = false;
#ifdef _OPENMP
#pragma omp parallel num_threads(nn_threads(n * c * l))
#endif
    {
        double *row = (double *)malloc(sizeof(double) * (size_t)(l > 0 ? l : 1));
        if (!row) nn_set_flag(&failed);
#ifdef _OPENMP
#pragma omp for schedule(static)
#endif
        for (int64_t ch = 0; ch < c; ch++) {
            if (!row) continue;
            moments m = {0, 0, 0, 0};
            for (int64_t i = 0; i < n; i++) {
                nn_load(x->dtype, xp, (i * c + ch) * l, 1, l, row);
                moments_add(&m, row, l);
            }
            double mu = moments_mean(&m), var = moments_var(&m);
            nn_set(mean->dtype, ampc_data_ptr(mean), ch, mu);
            nn_set(invstd->dtype, ampc_data_ptr(invstd), ch, 1.0 / sqrt(var + eps));
            if (rmean)
                nn_set(rmean->dtype, ampc_data_ptr(rmean), ch, (1 - momentum) * param(rmean, ch, 0) + momentum * mu);
            if (rvar) {
                double unbiased = m.n > 1 ? var * (double)m.n / (double)(m.n - 1) : INFINITY;
                nn_set(rvar->dtype, ampc_data_ptr(rvar), ch, (1 - momentum) * param(rvar, ch, 0) + momentum * unbiased);
            }
        }
        free(row);
    }
    return failed ? nn_nomem(op) : AMPC_OK;
}

/* invstd of channel c: stored, or from a variance (eval mode). */
static double channel_invstd(const ampc_tensor *t, int64_t c, bool is_var, double eps) {
    double v = param(t, c, 1);
    return is_var ? 1.0 / sqrt(v + eps) : v;
}

static ampc_status cpu_batch_norm_apply(ampc_op op, const ampc_batch_norm_apply_args *a) {
    const ampc_tensor *x = a->x, *mean = a->mean, *inv = a->invstd, *w = a->weight, *b = a->bias;
    ampc_tensor *y = a->y;
    int64_t n = x->shape[0], c = x->shape[1], l = x->shape[2];
    bool is_var = a->is_var;
    double eps = a->eps;
    const void *xp = ampc_data_ptr(x);
    void *yp = ampc_data_ptr(y);
    bool failed = false;
#ifdef _OPENMP
#pragma omp parallel num_threads(nn_threads(n * c * l))
#endif
    {
        double *row = (double *)malloc(sizeof(double) * (size_t)(l > 0 ? l : 1));
        if (!row) nn_set_flag(&failed);
#ifdef _OPENMP
#pragma omp for schedule(static)
#endif
        for (int64_t r = 0; r < n * c; r++) {
            if (!row) continue;
            int64_t ch = r % c;
            double scale = channel_invstd(inv, ch, is_var, eps) * param(w, ch, 1);
            double shift = param(b, ch, 0) - param(mean, ch, 0) * scale;
            nn_load(x->dtype, xp, r * l, 1, l, row);
            for (int64_t i = 0; i < l; i++) row[i] = row[i] * scale + shift;
            nn_store(y->dtype, yp, r * l, 1, l, row);
        }
        free(row);
    }
    return failed ? nn_nomem(op) : AMPC_OK;
}

static ampc_status cpu_batch_norm_backward(ampc_op op, const ampc_batch_norm_backward_args *a) {
    const ampc_tensor *g = a->grad_y, *x = a->x, *mean = a->mean, *inv = a->invstd, *w = a->weight;
    ampc_tensor *gx = a->grad_x, *gw = a->grad_weight, *gb = a->grad_bias;
    int64_t n = x->shape[0], c = x->shape[1], l = x->shape[2];
    bool is_var = a->is_var, training = a->training;
    double eps = a->eps, count = (double)(n * l);
    const void *gp = ampc_data_ptr(g), *xp = ampc_data_ptr(x);
    bool failed = false;
#ifdef _OPENMP
#pragma omp parallel num_threads(nn_threads(2 * n * c * l))
#endif
    {
        double *buf = (double *)malloc(sizeof(double) * (size_t)(2 * l > 0 ? 2 * l : 1));
        if (!buf) nn_set_flag(&failed);
#ifdef _OPENMP
#pragma omp for schedule(static)
#endif
        for (int64_t ch = 0; ch < c; ch++) {
            if (!buf) continue;
            double *gr = buf, *xr = buf + l;
            double mu = param(mean, ch, 0), istd = channel_invstd(inv, ch, is_var, eps), wc = param(w, ch, 1);
            double sum_g = 0, sum_gx = 0; /* sum of g and of g * (x - mean) */
            for (int64_t i = 0; i < n; i++) {
                nn_load(g->dtype, gp, (i * c + ch) * l, 1, l, gr);
                nn_load(x->dtype, xp, (i * c + ch) * l, 1, l, xr);
                for (int64_t k = 0; k < l; k++) {
                    sum_g += gr[k];
                    sum_gx += gr[k] * (xr[k] - mu);
                }
            }
            if (gw) nn_set(gw->dtype, ampc_data_ptr(gw), ch, sum_gx * istd);
            if (gb) nn_set(gb->dtype, ampc_data_ptr(gb), ch, sum_g);
            if (!gx) continue;
            /* training: the batch mean and variance depend on x too */
            double mean_g = training ? sum_g / count : 0, proj = training ? sum_gx / count * istd * istd : 0;
            for (int64_t i = 0; i < n; i++) {
                nn_load(g->dtype, gp, (i * c + ch) * l, 1, l, gr);
                if (training) nn_load(x->dtype, xp, (i * c + ch) * l, 1, l, xr);
                for (int64_t k = 0; k < l; k++)
                    gr[k] = training ? (gr[k] - mean_g - (xr[k] - mu) * proj) * istd * wc : gr[k] * istd * wc;
                nn_store(gx->dtype, ampc_data_ptr(gx), (i * c + ch) * l, 1, l, gr);
            }
        }
        free(buf);
    }
    return failed ? nn_nomem(op) : AMPC_OK;
}

/* ---------------------------------------------------------------- layer norm */

static ampc_status cpu_layer_norm(ampc_op op, const ampc_layer_norm_args *a) {
    const ampc_tensor *x = a->x, *w = a->weight, *b = a->bias;
    ampc_tensor *y = a->y, *mean = a->mean, *rstd = a->rstd;
    int64_t m = x->shape[0], d = x->shape[1];
    double eps = a->eps;
    const void *xp = ampc_data_ptr(x);
    void *yp = ampc_data_ptr(y);
    bool failed = false;
#ifdef _OPENMP
#pragma omp parallel num_threads(nn_threads(m * d))
#endif
    {
        /* row, then weight and bias as doubles (loaded once per thread) */
        double *buf = (double *)malloc(sizeof(double) * (size_t)(3 * d > 0 ? 3 * d : 1));
        if (!buf) nn_set_flag(&failed);
        double *row = buf, *wd = buf + d, *bd = buf + 2 * d;
        if (buf) {
            for (int64_t k = 0; k < d; k++) wd[k] = 1, bd[k] = 0;
            if (w) nn_load(w->dtype, ampc_data_ptr(w), 0, 1, d, wd);
            if (b) nn_load(b->dtype, ampc_data_ptr(b), 0, 1, d, bd);
        }
#ifdef _OPENMP
#pragma omp for schedule(static)
#endif
        for (int64_t r = 0; r < m; r++) {
            if (!buf) continue;
            nn_load(x->dtype, xp, r * d, 1, d, row);
            moments mo = {0, 0, 0, 0};
            moments_add(&mo, row, d);
            double mu = moments_mean(&mo), rs = 1.0 / sqrt(moments_var(&mo) + eps);
            for (int64_t k = 0; k < d; k++) row[k] = (row[k] - mu) * rs * wd[k] + bd[k];
            nn_store(y->dtype, yp, r * d, 1, d, row);
            nn_set(mean->dtype, ampc_data_ptr(mean), r, mu);
            nn_set(rstd->dtype, ampc_data_ptr(rstd), r, rs);
        }
        free(buf);
    }
    return failed ? nn_nomem(op) : AMPC_OK;
}

static ampc_status cpu_layer_norm_backward(ampc_op op, const ampc_layer_norm_backward_args *a) {
    const ampc_tensor *g = a->grad_y, *x = a->x, *mean = a->mean, *rstd = a->rstd, *w = a->weight;
    ampc_tensor *gx = a->grad_x, *gw = a->grad_weight, *gb = a->grad_bias;
    int64_t m = x->shape[0], d = x->shape[1];
    int64_t blocks = (m + LN_BLOCK - 1) / LN_BLOCK;
    bool want_params = gw || gb;
    /* per-block partial sums of g * xhat and g, then summed in block order */
    double *partial = want_params ? (double *)calloc((size_t)(blocks * 2 * d + 1), sizeof(double)) : NULL;
    if (want_params && !partial) return nn_nomem(op);
    const void *gp = ampc_data_ptr(g), *xp = ampc_data_ptr(x);
    bool failed = false;
#ifdef _OPENMP
#pragma omp parallel num_threads(nn_threads(2 * m * d))
#endif
    {
        double *buf = (double *)malloc(sizeof(double) * (size_t)(3 * d > 0 ? 3 * d : 1));
        if (!buf) nn_set_flag(&failed);
        double *gr = buf, *xr = buf + d, *wd = buf + 2 * d;
        if (buf) {
            for (int64_t k = 0; k < d; k++) wd[k] = 1;
            if (w) nn_load(w->dtype, ampc_data_ptr(w), 0, 1, d, wd);
        }
#ifdef _OPENMP
#pragma omp for schedule(static)
#endif
        for (int64_t blk = 0; blk < blocks; blk++) {
            if (!buf) continue;
            double *pw = partial ? partial + blk * 2 * d : NULL, *pb = pw ? pw + d : NULL;
            int64_t r1 = (blk + 1) * LN_BLOCK < m ? (blk + 1) * LN_BLOCK : m;
            for (int64_t r = blk * LN_BLOCK; r < r1; r++) {
                double mu = nn_get(mean->dtype, ampc_data_ptr(mean), r), rs = nn_get(rstd->dtype, ampc_data_ptr(rstd), r);
                nn_load(g->dtype, gp, r * d, 1, d, gr);
                nn_load(x->dtype, xp, r * d, 1, d, xr);
                double s1 = 0, s2 = 0; /* sums of g*w and g*w*xhat */
                for (int64_t k = 0; k < d; k++) {
                    double xh = (xr[k] - mu) * rs, gw_k = gr[k] * wd[k];
                    if (pw) pw[k] += gr[k] * xh, pb[k] += gr[k];
                    xr[k] = xh;
                    s1 += gw_k;
                    s2 += gw_k * xh;
                }
                if (!gx) continue;
                double m1 = s1 / (double)d, m2 = s2 / (double)d;
                for (int64_t k = 0; k < d; k++) gr[k] = rs * (gr[k] * wd[k] - m1 - xr[k] * m2);
                nn_store(gx->dtype, ampc_data_ptr(gx), r * d, 1, d, gr);
            }
        }
        free(buf);
    }
    if (partial && !failed) {
        for (int64_t blk = 1; blk < blocks; blk++)
            for (int64_t k = 0; k < 2 * d; k++) partial[k] += partial[blk * 2 * d + k];
        if (gw) nn_store(gw->dtype, ampc_data_ptr(gw), 0, 1, d, partial);
        if (gb) nn_store(gb->dtype, ampc_data_ptr(gb), 0, 1, d, partial + d);
    }
    free(partial);
    return failed ? nn_nomem(op) : AMPC_OK;
}

/* ---------------------------------------------------------------- group norm */

static ampc_status cpu_group_norm(ampc_op op, const ampc_group_norm_args *a) {
    const ampc_tensor *x = a->x, *w = a->weight, *b = a->bias;
    ampc_tensor *y = a->y, *mean = a->mean, *rstd = a->rstd;
    int64_t n = x->shape[0], c = x->shape[1], l = x->shape[2], groups = a->groups, cg = c / groups;
    double eps = a->eps;
    const void *xp = ampc_data_ptr(x);
    void *yp = ampc_data_ptr(y);
    int64_t len = cg * l; /* one (n, g) block is contiguous */
    bool failed = false;
#ifdef _OPENMP
#pragma omp parallel num_threads(nn_threads(n * c * l))
#endif
    {
        double *buf = (double *)malloc(sizeof(double) * (size_t)(len > 0 ? len : 1));
        if (!buf) nn_set_flag(&failed);
#ifdef _OPENMP
#pragma omp for schedule(static)
#endif
        for (int64_t ng = 0; ng < n * groups; ng++) {
            if (!buf) continue;
            nn_load(x->dtype, xp, ng * len, 1, len, buf);
            moments mo = {0, 0, 0, 0};
            moments_add(&mo, buf, len);
            double mu = moments_mean(&mo), rs = 1.0 / sqrt(moments_var(&mo) + eps);
            for (int64_t k = 0; k < cg; k++) {
                int64_t ch = (ng % groups) * cg + k;
                double scale = rs * param(w, ch, 1), shift = param(b, ch, 0) - mu * scale;
                double *row = buf + k * l;
                for (int64_t i = 0; i < l; i++) row[i] = row[i] * scale + shift;
            }
            nn_store(y->dtype, yp, ng * len, 1, len, buf);
            nn_set(mean->dtype, ampc_data_ptr(mean), ng, mu);
            nn_set(rstd->dtype, ampc_data_ptr(rstd), ng, rs);
        }
        free(buf);
    }
    return failed ? nn_nomem(op) : AMPC_OK;
}

static ampc_status cpu_group_norm_backward(ampc_op op, const ampc_group_norm_backward_args *a) {
    const ampc_tensor *g = a->grad_y, *x = a->x, *mean = a->mean, *rstd = a->rstd, *w = a->weight;
    ampc_tensor *gx = a->grad_x, *gw = a->grad_weight, *gb = a->grad_bias;
    int64_t n = x->shape[0], c = x->shape[1], l = x->shape[2], groups = a->groups, cg = c / groups;
    int64_t len = cg * l;
    const void *gp = ampc_data_ptr(g), *xp = ampc_data_ptr(x);
    const void *mp = ampc_data_ptr(mean), *rp = ampc_data_ptr(rstd);
    bool failed = false;
#ifdef _OPENMP
#pragma omp parallel num_threads(nn_threads(3 * n * c * l))
#endif
    {
        double *buf = (double *)malloc(sizeof(double) * (size_t)(2 * len > 0 ? 2 * len : 1));
        if (!buf) nn_set_flag(&failed);
        double *gr = buf, *xr = buf + len;
        /* grad x: one (n, g) block per task */
        if (gx) {
#ifdef _OPENMP
#pragma omp for schedule(static)
#endif
            for (int64_t ng = 0; ng < n * groups; ng++) {
                if (!buf) continue;
                double mu = nn_get(mean->dtype, mp, ng), rs = nn_get(rstd->dtype, rp, ng);
                nn_load(g->dtype, gp, ng * len, 1, len, gr);
                nn_load(x->dtype, xp, ng * len, 1, len, xr);
                double s1 = 0, s2 = 0;
                for (int64_t k = 0; k < cg; k++) {
                    double wc = param(w, (ng % groups) * cg + k, 1);
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
                nn_store(gx->dtype, ampc_data_ptr(gx), ng * len, 1, len, gr);
            }
        }
        /* grad weight and bias: one channel per task, summed over n in order */
        if (gw || gb) {
#ifdef _OPENMP
#pragma omp for schedule(static)
#endif
            for (int64_t ch = 0; ch < c; ch++) {
                if (!buf) continue;
                double sw = 0, sb = 0;
                for (int64_t i = 0; i < n; i++) {
                    int64_t ng = i * groups + ch / cg;
                    double mu = nn_get(mean->dtype, mp, ng), rs = nn_get(rstd->dtype, rp, ng);
                    nn_load(g->dtype, gp, (i * c + ch) * l, 1, l, gr);
                    nn_load(x->dtype, xp, (i * c + ch) * l, 1, l, xr);
                    for (int64_t k = 0; k < l; k++) {
                        sw += gr[k] * (xr[k] - mu) * rs;
                        sb += gr[k];
                    }
                }
                if (gw) nn_set(gw->dtype, ampc_data_ptr(gw), ch, sw);
                if (gb) nn_set(gb->dtype, ampc_data_ptr(gb), ch, sb);
            }
        }
        free(buf);
    }
    return failed ? nn_nomem(op) : AMPC_OK;
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
