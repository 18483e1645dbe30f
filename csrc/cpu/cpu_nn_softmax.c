/* cpu_nn_softmax.c: softmax and log_softmax along a dim (and their backward); attention is
 * cpu_nn_attn.c's fused kernel. cross_entropy and nll_loss are cpu_nn_loss_class.c's.
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

void ampc_cpu_register_nn_softmax(void) {
    ampc_register_softmax(AMPC_CPU, cpu_softmax);
    ampc_register_softmax_backward(AMPC_CPU, cpu_softmax_backward);
}
