/* cpu_nn_softmax.c: softmax and log_softmax along a dim (and their backward), and the attention
 * softmax (scale, mask, causal). cross_entropy and nll_loss are cpu_nn_loss_class.c's.
 *
 * A tensor reduced along `dim` is viewed as (outer, D, inner) and processed in tiles of D rows
 * by up to NN_TILE_W columns (nn_run_tiles, cpu_nn_common.c): loads stay contiguous when dim is
 * not the last one (softmax over channels of an image) and the column loops vectorize. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../core/kernel_args.h"
#include "cpu_backend.h"
#include "cpu_nn_common.h"

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
    nn_tile_lse(t, d, w, mx, lse);
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

static ampc_status cpu_softmax(ampc_op op, const ampc_softmax_args *a) {
    softmax_ctx c = {.op = op, .x = a->x, .out = a->y};
    int64_t outer;
    nn_split_dim(c.out, a->dim, &outer, &c.d, &c.inner);
    return nn_run_tiles(op, outer, c.d, c.inner, 2, softmax_tile, &c);
}

static ampc_status cpu_softmax_backward(ampc_op op, const ampc_softmax_backward_args *a) {
    softmax_ctx c = {.op = op, .x = a->grad_y, .y = a->y, .out = a->grad_x, .scale = a->scale};
    int64_t outer;
    nn_split_dim(c.out, a->dim, &outer, &c.d, &c.inner);
    return nn_run_tiles(op, outer, c.d, c.inner, 3, softmax_backward_tile, &c);
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

typedef struct attn_ctx {
    const ampc_tensor *s, *mask;
    ampc_tensor *p;
    int64_t n, l; /* scores (..., L, N) */
    double scale;
    bool causal;
} attn_ctx;

/* Row r of the scores: scaled, masked, softmaxed. buf: the row and its mask row (2 * n). */
static void attn_softmax_row(void *vctx, int64_t r, double *row) {
    const attn_ctx *c = (const attn_ctx *)vctx;
    const ampc_tensor *mask = c->mask;
    int64_t n = c->n, i = r % c->l;
    double *m = row + n;
    bool bool_mask = mask && mask->dtype == AMPC_BOOL;
    nn_load(c->s->dtype, ampc_data_ptr(c->s), r * n, 1, n, row);
    for (int64_t j = 0; j < n; j++) row[j] *= c->scale;
    if (mask) { /* broadcast dims have stride 0 */
        nn_load(mask->dtype, ampc_data_ptr(mask), row_offset(mask, r), mask->strides[mask->ndim - 1], n, m);
        for (int64_t j = 0; j < n; j++) row[j] = bool_mask ? (m[j] != 0 ? row[j] : -INFINITY) : row[j] + m[j];
    }
    if (c->causal)
        for (int64_t j = i + 1; j < n; j++) row[j] = -INFINITY;
    double mx = -INFINITY, sum = 0;
    for (int64_t j = 0; j < n; j++) mx = row[j] > mx ? row[j] : mx;
    if (mx == -INFINITY) { /* nothing to attend to: zeros, as PyTorch's safe softmax */
        for (int64_t j = 0; j < n; j++) row[j] = 0;
    } else {
        for (int64_t j = 0; j < n; j++) sum += (row[j] = exp(row[j] - mx));
        for (int64_t j = 0; j < n; j++) row[j] /= sum;
    }
    nn_store(c->p->dtype, ampc_data_ptr(c->p), r * n, 1, n, row);
}

static ampc_status cpu_attn_softmax(ampc_op op, const ampc_attn_softmax_args *a) {
    const ampc_tensor *s = a->scores;
    attn_ctx c = {.s = s, .mask = a->mask, .p = a->probs, .n = s->shape[s->ndim - 1], .l = s->shape[s->ndim - 2],
                  .scale = a->scale, .causal = a->is_causal};
    int64_t rows = c.n ? ampc_numel(s) / c.n : 0;
    return nn_run_tasks(op, rows, nn_threads(rows * c.n), 2 * c.n, attn_softmax_row, &c);
}

void ampc_cpu_register_nn_softmax(void) {
    ampc_register_softmax(AMPC_CPU, cpu_softmax);
    ampc_register_softmax_backward(AMPC_CPU, cpu_softmax_backward);
    ampc_register_attn_softmax(AMPC_CPU, cpu_attn_softmax);
}
