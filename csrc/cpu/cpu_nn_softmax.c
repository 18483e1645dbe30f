/* cpu_nn_softmax.c: softmax and log_softmax along a dim (and their backward), the attention
 * softmax (scale, mask, causal), and the classification losses: cross_entropy as one fused pass
 * of log-softmax + nll, and nll_loss.
 *
 * A tensor reduced along `dim` is viewed as (outer, D, inner) and processed in tiles of D rows
 * by up to NN_TILE_W columns: loads stay contiguous when dim is not the last one (softmax over
 * channels of an image) and the column loops vectorize. Cross-entropy keeps from its forward only
 * the log-sum-exp of each row; backward rebuilds the probabilities from the logits, so no
 * (N, C) probability tensor outlives the forward. Per-row losses are summed in row order on one
 * thread, so reductions do not depend on the thread count. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_backend.h"
#include "cpu_nn_common.h"

/* ---------------------------------------------------------------- tiles */

/* fn(ctx, o, j0, w, bufs): one tile, outer index o, columns [j0, j0 + w); bufs are this thread's
 * n_buf scratch arrays, each room for a (D, w) tile and two more rows of NN_TILE_W. */
typedef void (*tile_fn)(const void *ctx, int64_t o, int64_t j0, int64_t w, double **bufs);

static ampc_status run_tiles(ampc_op op, int64_t outer, int64_t d, int64_t inner, int n_buf, tile_fn fn,
                             const void *ctx) {
    int64_t extra = 2 * NN_TILE_W;
    int64_t blocks = (inner + NN_TILE_W - 1) / NN_TILE_W, tasks = outer * blocks;
    int64_t tw = inner < NN_TILE_W ? inner : NN_TILE_W;
    bool failed = false;
#ifdef _OPENMP
#pragma omp parallel num_threads(nn_threads(outer * d * inner))
#endif
    {
        double *bufs[4] = {NULL, NULL, NULL, NULL};
        bool ok = true;
        for (int i = 0; i < n_buf; i++) {
            bufs[i] = (double *)malloc(sizeof(double) * (size_t)(extra + d * tw + 1));
            ok = ok && bufs[i];
        }
        if (!ok) nn_set_flag(&failed);
#ifdef _OPENMP
#pragma omp for schedule(static)
#endif
        for (int64_t t = 0; t < tasks; t++) {
            if (!ok) continue;
            int64_t o = t / blocks, j0 = (t % blocks) * NN_TILE_W;
            fn(ctx, o, j0, inner - j0 < NN_TILE_W ? inner - j0 : NN_TILE_W, bufs);
        }
        for (int i = 0; i < n_buf; i++) free(bufs[i]);
    }
    return failed ? nn_nomem(op) : AMPC_OK;
}

/* Per column j of a (d, w) tile: the max and log-sum-exp. */
static void tile_lse(const double *t, int64_t d, int64_t w, double *mx, double *lse) {
    for (int64_t j = 0; j < w; j++) mx[j] = -INFINITY, lse[j] = 0;
    for (int64_t r = 0; r < d; r++)
        for (int64_t j = 0; j < w; j++) mx[j] = t[r * w + j] > mx[j] ? t[r * w + j] : mx[j];
    for (int64_t r = 0; r < d; r++)
        for (int64_t j = 0; j < w; j++) lse[j] += exp(t[r * w + j] - mx[j]);
    for (int64_t j = 0; j < w; j++) lse[j] = mx[j] + log(lse[j]);
}

/* ---------------------------------------------------------------- softmax, log_softmax */

typedef struct softmax_ctx {
    ampc_op op;
    int64_t d, inner;
    const ampc_tensor *x, *y; /* forward: x in, y out; backward: x = grad y, y = y */
    ampc_tensor *out;
    double scale;
} softmax_ctx;

static void softmax_tile(const void *vctx, int64_t o, int64_t j0, int64_t w, double **bufs) {
    const softmax_ctx *c = (const softmax_ctx *)vctx;
    int64_t d = c->d, start = o * d * c->inner + j0;
    double *t = bufs[0], *mx = bufs[1], *lse = bufs[1] + NN_TILE_W;
    nn_load_tile(c->x->dtype, ampc_data_ptr(c->x), start, d, c->inner, w, t);
    tile_lse(t, d, w, mx, lse);
    for (int64_t r = 0; r < d; r++)
        for (int64_t j = 0; j < w; j++)
            t[r * w + j] = c->op == AMPC_OP_SOFTMAX ? exp(t[r * w + j] - lse[j]) : t[r * w + j] - lse[j];
    nn_store_tile(c->out->dtype, ampc_data_ptr(c->out), start, d, c->inner, w, t);
}

static void softmax_backward_tile(const void *vctx, int64_t o, int64_t j0, int64_t w, double **bufs) {
    const softmax_ctx *c = (const softmax_ctx *)vctx;
    int64_t d = c->d, start = o * d * c->inner + j0;
    double *g = bufs[0], *y = bufs[1], *s = bufs[2];
    nn_load_tile(c->x->dtype, ampc_data_ptr(c->x), start, d, c->inner, w, g);
    nn_load_tile(c->y->dtype, ampc_data_ptr(c->y), start, d, c->inner, w, y);
    for (int64_t j = 0; j < w; j++) s[j] = 0;
    if (c->op == AMPC_OP_SOFTMAX_BACKWARD) { /* y * (g - sum(g * y)) */
        for (int64_t r = 0; r < d; r++)
            for (int64_t j = 0; j < w; j++) s[j] += g[r * w + j] * y[r * w + j];
        for (int64_t r = 0; r < d; r++)
            for (int64_t j = 0; j < w; j++) g[r * w + j] = y[r * w + j] * (g[r * w + j] - s[j]) * c->scale;
    } else { /* g - exp(y) * sum(g) */
        for (int64_t r = 0; r < d; r++)
            for (int64_t j = 0; j < w; j++) s[j] += g[r * w + j];
        for (int64_t r = 0; r < d; r++)
            for (int64_t j = 0; j < w; j++) g[r * w + j] = g[r * w + j] - exp(y[r * w + j]) * s[j];
    }
    nn_store_tile(c->out->dtype, ampc_data_ptr(c->out), start, d, c->inner, w, g);
}

static ampc_status cpu_softmax(ampc_op op, const ampc_kernel_args *a) {
    bool backward = op == AMPC_OP_SOFTMAX_BACKWARD || op == AMPC_OP_LOG_SOFTMAX_BACKWARD;
    softmax_ctx c;
    memset(&c, 0, sizeof c);
    c.op = op;
    c.x = a->in[0];
    c.y = backward ? a->in[1] : NULL;
    c.out = a->out[0];
    c.scale = a->scalars[0].kind == AMPC_SCALAR_NONE ? 1.0 : ampc_scalar_to_double(a->scalars[0]);
    int64_t outer;
    nn_split_dim(c.out, (int)a->ints[0], &outer, &c.d, &c.inner);
    if (backward) return run_tiles(op, outer, c.d, c.inner, 3, softmax_backward_tile, &c);
    return run_tiles(op, outer, c.d, c.inner, 2, softmax_tile, &c);
}

/* ---------------------------------------------------------------- attention softmax */

/* Element offset of row r (all dims but the last, row-major) of a strided tensor. */
static int64_t row_offset(const ampc_tensor *t, int64_t r) {
    int64_t off = 0;
    for (int d = t->ndim - 2; d >= 0; d--) {
        off += (r % t->shape[d]) * t->strides[d];
        r /= t->shape[d];
    }
    return off;
}

static ampc_status cpu_attn_softmax(ampc_op op, const ampc_kernel_args *a) {
    const ampc_tensor *s = a->in[0], *mask = a->in[1];
    ampc_tensor *p = a->out[0];
    int64_t n = s->shape[s->ndim - 1], l = s->shape[s->ndim - 2], rows = n ? ampc_numel(s) / n : 0;
    double scale = ampc_scalar_to_double(a->scalars[0]);
    bool causal = a->ints[0] != 0, bool_mask = mask && mask->dtype == AMPC_BOOL;
    const void *sp = ampc_data_ptr(s);
    void *pp = ampc_data_ptr(p);
    bool failed = false;
#ifdef _OPENMP
#pragma omp parallel num_threads(nn_threads(rows * n))
#endif
    {
        double *row = (double *)malloc(sizeof(double) * (size_t)(2 * n + 1)), *m = row ? row + n : NULL;
        if (!row) nn_set_flag(&failed);
#ifdef _OPENMP
#pragma omp for schedule(static)
#endif
        for (int64_t r = 0; r < rows; r++) {
            if (!row) continue;
            int64_t i = r % l;
            nn_load(s->dtype, sp, r * n, 1, n, row);
            for (int64_t j = 0; j < n; j++) row[j] *= scale;
            if (mask) { /* broadcast dims have stride 0 */
                nn_load(mask->dtype, ampc_data_ptr(mask), row_offset(mask, r), mask->strides[mask->ndim - 1], n, m);
                for (int64_t j = 0; j < n; j++) row[j] = bool_mask ? (m[j] != 0 ? row[j] : -INFINITY) : row[j] + m[j];
            }
            if (causal)
                for (int64_t j = i + 1; j < n; j++) row[j] = -INFINITY;
            double mx = -INFINITY, sum = 0;
            for (int64_t j = 0; j < n; j++) mx = row[j] > mx ? row[j] : mx;
            if (mx == -INFINITY) { /* nothing to attend to: zeros, as PyTorch's safe softmax */
                for (int64_t j = 0; j < n; j++) row[j] = 0;
            } else {
                for (int64_t j = 0; j < n; j++) sum += (row[j] = exp(row[j] - mx));
                for (int64_t j = 0; j < n; j++) row[j] /= sum;
            }
            nn_store(p->dtype, pp, r * n, 1, n, row);
        }
        free(row);
    }
    return failed ? nn_nomem(op) : AMPC_OK;
}

/* ---------------------------------------------------------------- cross entropy */

typedef struct ce_ctx {
    const ampc_tensor *x, *target, *grad, *lse;
    ampc_tensor *gx, *gt;
    int64_t n, c, k, ignore;
    bool probs;
    int reduction;
    double ls, wsum, gscale; /* gscale: the loss grad when reduced (already / total weight for mean) */
    const double *w;         /* class weights (C), all 1 without a weight tensor */
    double *row_loss, *row_weight; /* forward, per row (N * K) */
    bool *bad;
    int64_t *bad_target;
} ce_ctx;

static void ce_forward_tile(const void *vctx, int64_t o, int64_t j0, int64_t w, double **bufs) {
    const ce_ctx *c = (const ce_ctx *)vctx;
    int64_t d = c->c, start = o * d * c->k + j0;
    double *t = bufs[0], *mx = bufs[1], *lse = bufs[1] + NN_TILE_W, *tg = bufs[2];
    nn_load_tile(c->x->dtype, ampc_data_ptr(c->x), start, d, c->k, w, t);
    tile_lse(t, d, w, mx, lse);
    if (c->probs) nn_load_tile(c->target->dtype, ampc_data_ptr(c->target), start, d, c->k, w, tg);
    for (int64_t j = 0; j < w; j++) {
        int64_t row = o * c->k + j0 + j;
        double loss = 0, weight = 0;
        if (c->probs) {
            for (int64_t r = 0; r < d; r++) {
                double tp = tg[r * w + j] * (1 - c->ls) + c->ls / (double)d;
                loss -= c->w[r] * tp * (t[r * w + j] - lse[j]);
            }
            weight = 1;
        } else {
            int64_t cls = nn_get_index(c->target->dtype, ampc_data_ptr(c->target), row);
            if (cls != c->ignore) {
                if (cls < 0 || cls >= d) {
                    nn_set_flag(c->bad);
#ifdef _OPENMP
#pragma omp atomic write
#endif
                    *c->bad_target = cls;
                    continue;
                }
                weight = c->w[cls];
                loss = -(t[cls * w + j] - lse[j]) * weight * (1 - c->ls);
                if (c->ls > 0) {
                    double smooth = 0;
                    for (int64_t r = 0; r < d; r++) smooth -= c->w[r] * (t[r * w + j] - lse[j]);
                    loss += c->ls / (double)d * smooth;
                }
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
static void store_losses(ampc_tensor *loss, ampc_tensor *total, int reduction, const double *row_loss,
                         const double *row_weight, int64_t rows) {
    double sum = 0, wsum = 0;
    for (int64_t r = 0; r < rows; r++) sum += row_loss[r], wsum += row_weight[r];
    if (total) nn_set(total->dtype, ampc_data_ptr(total), 0, wsum);
    if (reduction == 0)
        nn_store(loss->dtype, ampc_data_ptr(loss), 0, 1, rows, row_loss);
    else
        nn_set(loss->dtype, ampc_data_ptr(loss), 0, reduction == 1 ? sum / wsum : sum);
}

static ampc_status target_error(int64_t t) {
    return ampc_set_error(AMPC_E_INDEX, "Target %lld is out of bounds.", (long long)t);
}

static ampc_status cpu_cross_entropy(ampc_op op, const ampc_kernel_args *a) {
    ce_ctx c;
    memset(&c, 0, sizeof c);
    c.x = a->in[0], c.target = a->in[1], c.lse = a->out[1];
    c.n = c.x->shape[0], c.c = c.x->shape[1], c.k = c.x->shape[2];
    c.reduction = (int)a->ints[0], c.ignore = a->ints[1], c.probs = a->ints[2] != 0;
    c.ls = ampc_scalar_to_double(a->scalars[0]);
    bool bad = false;
    int64_t bad_target = 0;
    c.bad = &bad, c.bad_target = &bad_target;
    int64_t rows = c.n * c.k;
    double *w = class_weights(a->in[2], c.c, &c.wsum);
    c.w = w;
    c.row_loss = (double *)malloc(sizeof(double) * (size_t)(2 * rows + 1));
    c.row_weight = c.row_loss ? c.row_loss + rows : NULL;
    ampc_status st = (w && c.row_loss) ? run_tiles(op, c.n, c.c, c.k, 3, ce_forward_tile, &c) : nn_nomem(op);
    if (st == AMPC_OK && bad) st = target_error(bad_target);
    if (st == AMPC_OK) store_losses(a->out[0], a->out[2], c.reduction, c.row_loss, c.row_weight, rows);
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
    if (c->reduction == 0)
        nn_load(c->grad->dtype, ampc_data_ptr(c->grad), o * c->k + j0, 1, w, gs);
    else
        for (int64_t j = 0; j < w; j++) gs[j] = c->gscale;
    if (c->probs) {
        nn_load_tile(c->target->dtype, ampc_data_ptr(c->target), start, d, c->k, w, tg);
        if (c->gt) { /* d loss / d target_c = -(1 - ls) * w_c * logp_c */
            double *gt = bufs[3];
            for (int64_t r = 0; r < d; r++)
                for (int64_t j = 0; j < w; j++) gt[r * w + j] = -gs[j] * (1 - c->ls) * c->w[r] * (t[r * w + j] - lse[j]);
            nn_store_tile(c->gt->dtype, ampc_data_ptr(c->gt), start, d, c->k, w, gt);
        }
    }
    if (!c->gx) return;
    for (int64_t j = 0; j < w; j++) {
        if (c->probs) { /* p_c * S - w_c * t'_c, S = sum_c w_c t'_c */
            double s = 0;
            for (int64_t r = 0; r < d; r++) {
                tg[r * w + j] = tg[r * w + j] * (1 - c->ls) + c->ls / (double)d;
                s += c->w[r] * tg[r * w + j];
            }
            for (int64_t r = 0; r < d; r++)
                t[r * w + j] = gs[j] * (exp(t[r * w + j] - lse[j]) * s - c->w[r] * tg[r * w + j]);
            continue;
        }
        int64_t cls = nn_get_index(c->target->dtype, ampc_data_ptr(c->target), o * c->k + j0 + j);
        if (cls == c->ignore || cls < 0 || cls >= d) {
            for (int64_t r = 0; r < d; r++) t[r * w + j] = 0;
            continue;
        }
        /* (1 - ls) * w_t * (p_c - [c == t]) + ls / C * (p_c * sum(w) - w_c) */
        double wt = c->w[cls], a1 = (1 - c->ls) * wt, a2 = c->ls / (double)d;
        for (int64_t r = 0; r < d; r++) {
            double p = exp(t[r * w + j] - lse[j]);
            t[r * w + j] = gs[j] * (a1 * (p - (r == cls)) + a2 * (p * c->wsum - c->w[r]));
        }
    }
    nn_store_tile(c->gx->dtype, ampc_data_ptr(c->gx), start, d, c->k, w, t);
}

static ampc_status cpu_cross_entropy_backward(ampc_op op, const ampc_kernel_args *a) {
    ce_ctx c;
    memset(&c, 0, sizeof c);
    c.grad = a->in[0], c.x = a->in[1], c.target = a->in[2], c.lse = a->in[4];
    c.gx = a->out[0], c.gt = a->out[1];
    c.n = c.x->shape[0], c.c = c.x->shape[1], c.k = c.x->shape[2];
    c.reduction = (int)a->ints[0], c.ignore = a->ints[1], c.probs = a->ints[2] != 0;
    c.ls = ampc_scalar_to_double(a->scalars[0]);
    if (c.reduction != 0) {
        c.gscale = nn_get(c.grad->dtype, ampc_data_ptr(c.grad), 0);
        if (c.reduction == 1) c.gscale /= nn_get(a->in[5]->dtype, ampc_data_ptr(a->in[5]), 0);
    }
    double *w = class_weights(a->in[3], c.c, &c.wsum);
    c.w = w;
    ampc_status st = w ? run_tiles(op, c.n, c.c, c.k, c.gt ? 4 : 3, ce_backward_tile, &c) : nn_nomem(op);
    free(w);
    return st;
}

/* ---------------------------------------------------------------- nll_loss */

static ampc_status cpu_nll_loss(ampc_op op, const ampc_kernel_args *a) {
    const ampc_tensor *x = a->in[0], *target = a->in[1];
    int64_t n = x->shape[0], c = x->shape[1], k = x->shape[2], rows = n * k, ignore = a->ints[1];
    double wsum;
    double *w = class_weights(a->in[2], c, &wsum);
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
            nn_set_flag(&bad);
#ifdef _OPENMP
#pragma omp atomic write
#endif
            bad_target = cls;
            continue;
        }
        row_weight[r] = w[cls];
        row_loss[r] = -w[cls] * nn_get(x->dtype, xp, ((r / k) * c + cls) * k + r % k);
    }
    ampc_status st = bad ? target_error(bad_target) : AMPC_OK;
    if (st == AMPC_OK) store_losses(a->out[0], a->out[1], (int)a->ints[0], row_loss, row_weight, rows);
    free(w);
    free(row_loss);
    return st;
}

static ampc_status cpu_nll_loss_backward(ampc_op op, const ampc_kernel_args *a) {
    const ampc_tensor *g = a->in[0], *target = a->in[1];
    ampc_tensor *gx = a->out[0];
    int64_t n = gx->shape[0], c = gx->shape[1], k = gx->shape[2], rows = n * k, ignore = a->ints[1];
    int reduction = (int)a->ints[0];
    double wsum;
    double *w = class_weights(a->in[2], c, &wsum);
    if (!w) return nn_nomem(op);
    double gscale = reduction ? nn_get(g->dtype, ampc_data_ptr(g), 0) : 0;
    if (reduction == 1) gscale /= nn_get(a->in[3]->dtype, ampc_data_ptr(a->in[3]), 0);
    memset(ampc_data_ptr(gx), 0, ampc_nbytes(gx)); /* zero bits are 0 in every floating dtype */
    const void *tp = ampc_data_ptr(target), *gp = ampc_data_ptr(g);
    void *xp = ampc_data_ptr(gx);
#ifdef _OPENMP
#pragma omp parallel for schedule(static) num_threads(nn_threads(rows))
#endif
    for (int64_t r = 0; r < rows; r++) {
        int64_t cls = nn_get_index(target->dtype, tp, r);
        if (cls == ignore || cls < 0 || cls >= c) continue;
        double gr = reduction ? gscale : nn_get(g->dtype, gp, r);
        nn_set(gx->dtype, xp, ((r / k) * c + cls) * k + r % k, -w[cls] * gr);
    }
    free(w);
    return AMPC_OK;
}

void ampc_cpu_register_nn_softmax(void) {
    ampc_register_kernel(AMPC_CPU, AMPC_OP_SOFTMAX, cpu_softmax);
    ampc_register_kernel(AMPC_CPU, AMPC_OP_LOG_SOFTMAX, cpu_softmax);
    ampc_register_kernel(AMPC_CPU, AMPC_OP_SOFTMAX_BACKWARD, cpu_softmax);
    ampc_register_kernel(AMPC_CPU, AMPC_OP_LOG_SOFTMAX_BACKWARD, cpu_softmax);
    ampc_register_kernel(AMPC_CPU, AMPC_OP_ATTN_SOFTMAX, cpu_attn_softmax);
    ampc_register_kernel(AMPC_CPU, AMPC_OP_CROSS_ENTROPY, cpu_cross_entropy);
    ampc_register_kernel(AMPC_CPU, AMPC_OP_CROSS_ENTROPY_BACKWARD, cpu_cross_entropy_backward);
    ampc_register_kernel(AMPC_CPU, AMPC_OP_NLL_LOSS, cpu_nll_loss);
    ampc_register_kernel(AMPC_CPU, AMPC_OP_NLL_LOSS_BACKWARD, cpu_nll_loss_backward);
}
