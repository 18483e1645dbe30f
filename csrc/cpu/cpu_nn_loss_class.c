/* cpu_nn_loss_class.c: the classification losses on the CPU: cross_entropy as one fused pass of
 * log-softmax + nll over (D = C, w) tiles of the (N, C, K) logits (nn_run_tiles), and nll_loss.
 * The elementwise losses are cpu_nn_loss.c's; the per-row formulas, shared with the CUDA
 * kernels, core/loss_math.h's.
 *
 * Cross-entropy keeps from its forward only the log-sum-exp of each row; backward rebuilds the
 * probabilities from the logits, so no (N, C) probability tensor outlives the forward. Per-row
 * losses are summed in row order on one thread, so reductions do not depend on the thread
 * count. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../core/kernel_args.h"
#include "../core/loss_math.h"
#include "cpu_backend.h"
#include "cpu_nn_common.h"
#include "cpu_nn_loss_ce_rows.h"

/* ---------------------------------------------------------------- cross entropy */

typedef struct ce_ctx {
    const ampc_tensor *x, *target, *grad, *lse;
    ampc_tensor *gx, *gt;
    int64_t n, c, k, ignore;
    bool probs;
    ampc_reduction reduction;
    double ls, wsum, gscale; /* gscale: the loss grad when reduced (already / total weight for mean) */
    const double *w;         /* class weights (C), all 1 without a weight tensor */
    double *row_loss, *row_weight; /* forward, per row (N * K) */
    bool *bad;
    int64_t *bad_target;
} ce_ctx;

/* Records an out-of-range class target from inside a parallel loop (raised after it). */
static void flag_bad_target(bool *bad, int64_t *bad_target, int64_t cls) {
    nn_set_flag(bad);
    __atomic_store_n(bad_target, cls, __ATOMIC_RELAXED); /* any one of the bad targets is reported */
}

static void ce_forward_tile(const void *vctx, int64_t o, int64_t j0, int64_t w, double **bufs) {
    const ce_ctx *c = (const ce_ctx *)vctx;
    int64_t d = c->c, start = o * d * c->k + j0;
    double *t = bufs[0], *mx = bufs[1], *lse = bufs[1] + NN_TILE_W, *tg = bufs[2];
    nn_load_tile(c->x->dtype, ampc_data_ptr(c->x), start, d, c->k, w, t);
    nn_tile_lse(t, d, w, mx, lse);
    if (c->probs) nn_load_tile(c->target->dtype, ampc_data_ptr(c->target), start, d, c->k, w, tg);
    for (int64_t j = 0; j < w; j++) {
        int64_t row = o * c->k + j0 + j;
        double loss = 0, weight = 0;
        if (c->probs) {
            for (int64_t r = 0; r < d; r++) {
                double tp = ampc_ce_smooth_target_d(tg[r * w + j], c->ls, (double)d);
                loss -= ampc_ce_prob_loss_term_d(c->w[r], tp, t[r * w + j] - lse[j]);
            }
            weight = 1;
        } else {
            int64_t cls = nn_get_index(c->target->dtype, ampc_data_ptr(c->target), row);
            if (cls != c->ignore) {
                if (cls < 0 || cls >= d) {
                    flag_bad_target(c->bad, c->bad_target, cls);
                    continue;
                }
                weight = c->w[cls];
                double smooth = 0;
                if (c->ls > 0)
                    for (int64_t r = 0; r < d; r++) smooth -= c->w[r] * (t[r * w + j] - lse[j]);
                loss = ampc_ce_class_loss_d(t[cls * w + j] - lse[j], weight, c->ls, (double)d, smooth);
            }
        }
        c->row_loss[row] = loss;
        c->row_weight[row] = weight;
    }
    nn_store(((const ampc_tensor *)c->lse)->dtype, ampc_data_ptr(c->lse), o * c->k + j0, 1, w, lse);
}

/* Loads the optional class weights as doubles (1 without). Caller frees. */
static double *class_weights(const ampc_tensor *weight, int64_t c, double *wsum) {
    double *w = (double *)malloc(sizeof(double) * (size_t)(c + 1));
    if (!w) return NULL;
    for (int64_t i = 0; i < c; i++) w[i] = 1;
    if (weight) nn_load(weight->dtype, ampc_data_ptr(weight), 0, 1, c, w);
    *wsum = 0;
    for (int64_t i = 0; i < c; i++) *wsum += w[i];
    return w;
}

/* Writes the per-row losses, reduced or not, and the total weight; rows summed in order. */
static void store_losses(ampc_tensor *loss, ampc_tensor *total, ampc_reduction reduction, const double *row_loss,
                         const double *row_weight, int64_t rows) {
    double sum = 0, wsum = 0;
    for (int64_t r = 0; r < rows; r++) sum += row_loss[r], wsum += row_weight[r];
    if (total) nn_set(total->dtype, ampc_data_ptr(total), 0, wsum);
    if (reduction == AMPC_REDUCTION_NONE)
        nn_store(loss->dtype, ampc_data_ptr(loss), 0, 1, rows, row_loss);
    else
        nn_set(loss->dtype, ampc_data_ptr(loss), 0, reduction == AMPC_REDUCTION_MEAN ? sum / wsum : sum);
}

static ampc_status target_error(int64_t t) {
    return ampc_set_error(AMPC_E_INDEX, "Target %lld is out of bounds.", (long long)t);
}

/* The context fields both directions share, from the typed arguments. */
static void ce_common(ce_ctx *c, const ampc_tensor *x, const ampc_tensor *target, ampc_reduction reduction,
                      int64_t ignore_index, bool probs, double label_smoothing) {
    memset(c, 0, sizeof *c);
    c->x = x, c->target = target;
    c->n = x->shape[0], c->c = x->shape[1], c->k = x->shape[2];
    c->reduction = reduction, c->ignore = ignore_index, c->probs = probs, c->ls = label_smoothing;
}

/* (N, C) float32 logits with class targets: the row kernels of cpu_nn_loss_ce_rows.c */
static bool ce_fast_rows(const ce_ctx *c) {
    return c->x->dtype == AMPC_FLOAT32 && c->k == 1 && !c->probs && ampc_is_contiguous(c->x);
}

static ampc_status cpu_cross_entropy(ampc_op op, const ampc_cross_entropy_args *a) {
    ce_ctx c;
    ce_common(&c, a->logits, a->target, a->reduction, a->ignore_index, a->probs, a->label_smoothing);
    c.lse = a->lse;
    bool bad = false;
    int64_t bad_target = 0;
    c.bad = &bad, c.bad_target = &bad_target;
    int64_t rows = c.n * c.k;
    double *w = class_weights(a->weight, c.c, &c.wsum);
    c.w = w;
    c.row_loss = (double *)malloc(sizeof(double) * (size_t)(2 * rows + 1));
    c.row_weight = c.row_loss ? c.row_loss + rows : NULL;
    ampc_status st = (w && c.row_loss) ? AMPC_OK : nn_nomem(op);
    if (st == AMPC_OK && ce_fast_rows(&c) && a->lse->dtype == AMPC_FLOAT32) {
        ce_rows_job j = {.x = (const float *)ampc_data_ptr(c.x), .target = ampc_data_ptr(c.target),
                         .target_dtype = c.target->dtype, .n = c.n, .c = c.c, .ignore = c.ignore, .ls = c.ls,
                         .w = w, .wsum = c.wsum, .lse = (float *)ampc_data_ptr(a->lse), .row_loss = c.row_loss,
                         .row_weight = c.row_weight, .bad = &bad, .bad_target = &bad_target};
        cpu_ce_rows_forward(&j);
    } else if (st == AMPC_OK) {
        st = nn_run_tiles(op, c.n, c.c, c.k, 3, ce_forward_tile, &c);
    }
    if (st == AMPC_OK && bad) st = target_error(bad_target);
    if (st == AMPC_OK) store_losses(a->loss, a->total_weight, c.reduction, c.row_loss, c.row_weight, rows);
    free(w);
    free(c.row_loss);
    return st;
}

static void ce_backward_tile(const void *vctx, int64_t o, int64_t j0, int64_t w, double **bufs) {
    const ce_ctx *c = (const ce_ctx *)vctx;
    int64_t d = c->c, start = o * d * c->k + j0;
    double *t = bufs[0], *lse = bufs[1], *gs = bufs[1] + NN_TILE_W, *tg = bufs[2];
    nn_load_tile(c->x->dtype, ampc_data_ptr(c->x), start, d, c->k, w, t);
    nn_load(c->lse->dtype, ampc_data_ptr(c->lse), o * c->k + j0, 1, w, lse);
    if (c->reduction == AMPC_REDUCTION_NONE)
        nn_load(c->grad->dtype, ampc_data_ptr(c->grad), o * c->k + j0, 1, w, gs);
    else
        for (int64_t j = 0; j < w; j++) gs[j] = c->gscale;
    if (c->probs) {
        nn_load_tile(c->target->dtype, ampc_data_ptr(c->target), start, d, c->k, w, tg);
        if (c->gt) { /* d loss / d target_c = -(1 - ls) * w_c * logp_c */
            double *gt = bufs[3];
            for (int64_t r = 0; r < d; r++)
                for (int64_t j = 0; j < w; j++)
                    gt[r * w + j] = ampc_ce_target_grad_d(gs[j], c->ls, c->w[r], t[r * w + j] - lse[j]);
            nn_store_tile(c->gt->dtype, ampc_data_ptr(c->gt), start, d, c->k, w, gt);
        }
    }
    if (!c->gx) return;
    for (int64_t j = 0; j < w; j++) {
        if (c->probs) { /* p_c * S - w_c * t'_c, S = sum_c w_c t'_c */
            double s = 0;
            for (int64_t r = 0; r < d; r++) {
                tg[r * w + j] = ampc_ce_smooth_target_d(tg[r * w + j], c->ls, (double)d);
                s += c->w[r] * tg[r * w + j];
            }
            for (int64_t r = 0; r < d; r++)
                t[r * w + j] = gs[j] * ampc_ce_prob_grad_d(exp(t[r * w + j] - lse[j]), s, c->w[r], tg[r * w + j]);
            continue;
        }
        int64_t cls = nn_get_index(c->target->dtype, ampc_data_ptr(c->target), o * c->k + j0 + j);
        if (!ampc_class_target_valid(cls, c->ignore, d)) {
            for (int64_t r = 0; r < d; r++) t[r * w + j] = 0;
            continue;
        }
        double wt = c->w[cls], a1 = (1 - c->ls) * wt, a2 = c->ls / (double)d;
        for (int64_t r = 0; r < d; r++) {
            double p = exp(t[r * w + j] - lse[j]);
            t[r * w + j] = gs[j] * ampc_ce_class_grad_d(p, r == cls, a1, a2, c->wsum, c->w[r], c->ls > 0);
        }
    }
    nn_store_tile(c->gx->dtype, ampc_data_ptr(c->gx), start, d, c->k, w, t);
}

/* The loss grad of a reduced loss (already / total weight for mean). */
static double reduced_grad(ampc_reduction reduction, const ampc_tensor *grad, const ampc_tensor *total) {
    if (reduction == AMPC_REDUCTION_NONE) return 0;
    double total_v = reduction == AMPC_REDUCTION_MEAN ? nn_get(total->dtype, ampc_data_ptr(total), 0) : 1;
    return ampc_loss_grad_scale_d(reduction, nn_get(grad->dtype, ampc_data_ptr(grad), 0), total_v);
}

static ampc_status cpu_cross_entropy_backward(ampc_op op, const ampc_cross_entropy_backward_args *a) {
    ce_ctx c;
    ce_common(&c, a->logits, a->target, a->reduction, a->ignore_index, a->probs, a->label_smoothing);
    c.grad = a->grad_loss, c.lse = a->lse;
    c.gx = a->grad_logits, c.gt = a->grad_target;
    c.gscale = reduced_grad(c.reduction, c.grad, a->total_weight);
    double *w = class_weights(a->weight, c.c, &c.wsum);
    c.w = w;
    ampc_status st = w ? AMPC_OK : nn_nomem(op);
    bool per_row = c.reduction == AMPC_REDUCTION_NONE;
    if (st == AMPC_OK && ce_fast_rows(&c) && c.gx && c.gx->dtype == AMPC_FLOAT32 && a->lse->dtype == AMPC_FLOAT32 &&
        ampc_is_contiguous(c.gx) && (!per_row || c.grad->dtype == AMPC_FLOAT32)) {
        float *wf = c.ls > 0 ? (float *)malloc(sizeof(float) * (size_t)c.c) : NULL;
        if (c.ls > 0 && !wf) {
            free(w);
            return nn_nomem(op);
        }
        for (int64_t i = 0; wf && i < c.c; i++) wf[i] = (float)w[i];
        ce_rows_job j = {.x = (const float *)ampc_data_ptr(c.x), .target = ampc_data_ptr(c.target),
                         .target_dtype = c.target->dtype, .n = c.n, .c = c.c, .ignore = c.ignore, .ls = c.ls,
                         .w = w, .wf = wf, .wsum = c.wsum, .lse = (float *)ampc_data_ptr(c.lse),
                         .gx = (float *)ampc_data_ptr(c.gx),
                         .grad = per_row ? (const float *)ampc_data_ptr(c.grad) : NULL, .gscale = c.gscale};
        cpu_ce_rows_backward(&j);
        free(wf);
    } else if (st == AMPC_OK) {
        st = nn_run_tiles(op, c.n, c.c, c.k, c.gt ? 4 : 3, ce_backward_tile, &c);
    }
    free(w);
    return st;
}

/* ---------------------------------------------------------------- nll_loss */

static ampc_status cpu_nll_loss(ampc_op op, const ampc_nll_loss_args *a) {
    const ampc_tensor *x = a->logp, *target = a->target;
    int64_t n = x->shape[0], c = x->shape[1], k = x->shape[2], rows = n * k, ignore = a->ignore_index;
    double wsum;
    double *w = class_weights(a->weight, c, &wsum);
    double *row_loss = (double *)malloc(sizeof(double) * (size_t)(2 * rows + 1));
    if (!w || !row_loss) {
        free(w), free(row_loss);
        return nn_nomem(op);
    }
    double *row_weight = row_loss + rows;
    bool bad = false;
    int64_t bad_target = 0;
    const void *xp = ampc_data_ptr(x), *tp = ampc_data_ptr(target);
#ifdef _OPENMP
#pragma omp parallel for schedule(static) num_threads(nn_threads(rows))
#endif
    for (int64_t r = 0; r < rows; r++) {
        int64_t cls = nn_get_index(target->dtype, tp, r);
        row_loss[r] = row_weight[r] = 0;
        if (cls == ignore) continue;
        if (cls < 0 || cls >= c) {
            flag_bad_target(&bad, &bad_target, cls);
            continue;
        }
        row_weight[r] = w[cls];
        row_loss[r] = ampc_nll_loss_d(w[cls], nn_get(x->dtype, xp, ((r / k) * c + cls) * k + r % k));
    }
    ampc_status st = bad ? target_error(bad_target) : AMPC_OK;
    if (st == AMPC_OK) store_losses(a->loss, a->total_weight, a->reduction, row_loss, row_weight, rows);
    free(w);
    free(row_loss);
    return st;
}

static ampc_status cpu_nll_loss_backward(ampc_op op, const ampc_nll_loss_backward_args *a) {
    const ampc_tensor *g = a->grad_loss, *target = a->target;
    ampc_tensor *gx = a->grad_logp;
    int64_t n = gx->shape[0], c = gx->shape[1], k = gx->shape[2], rows = n * k, ignore = a->ignore_index;
    bool reduced = a->reduction != AMPC_REDUCTION_NONE;
    double wsum;
    double *w = class_weights(a->weight, c, &wsum);
    if (!w) return nn_nomem(op);
    double gscale = reduced_grad(a->reduction, g, a->total_weight);
    memset(ampc_data_ptr(gx), 0, ampc_nbytes(gx)); /* zero bits are 0 in every floating dtype */
    const void *tp = ampc_data_ptr(target), *gp = ampc_data_ptr(g);
    void *xp = ampc_data_ptr(gx);
#ifdef _OPENMP
#pragma omp parallel for schedule(static) num_threads(nn_threads(rows))
#endif
    for (int64_t r = 0; r < rows; r++) {
        int64_t cls = nn_get_index(target->dtype, tp, r);
        if (!ampc_class_target_valid(cls, ignore, c)) continue;
        double gr = reduced ? gscale : nn_get(g->dtype, gp, r);
        nn_set(gx->dtype, xp, ((r / k) * c + cls) * k + r % k, ampc_nll_grad_d(w[cls], gr));
    }
    free(w);
    return AMPC_OK;
}

void ampc_cpu_register_nn_loss_class(void) {
    ampc_register_cross_entropy(AMPC_CPU, cpu_cross_entropy);
    ampc_register_cross_entropy_backward(AMPC_CPU, cpu_cross_entropy_backward);
    ampc_register_nll_loss(AMPC_CPU, cpu_nll_loss);
    ampc_register_nll_loss_backward(AMPC_CPU, cpu_nll_loss_backward);
}
