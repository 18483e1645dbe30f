/* cpu_nn_loss.c: the elementwise losses on the CPU (mse, l1, smooth_l1, binary_cross_entropy,
 * binary_cross_entropy_with_logits), forward and backward.
 *
 * Operands arrive contiguous and of one shape (the frontend broadcasts). Work goes in chunks of
 * NN_CHUNK elements (nn_run_chunks): each operand's chunk is loaded into a double buffer, the loss or grad computed
 * there, and either stored (reduction none) or summed into the chunk's partial sum; partial sums
 * are added in chunk order, so a reduced loss does not depend on the thread count. The formulas
 * (PyTorch's, clamps included) are core/loss_math.h's, shared with the CUDA kernels. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../core/kernel_args.h"
#include "../core/loss_math.h"
#include "cpu_backend.h"
#include "cpu_nn_common.h"

#define CHUNK NN_CHUNK

typedef struct loss_ctx {
    ampc_op op;
    const ampc_tensor *x, *t, *w, *pw, *g;
    ampc_tensor *out, *gt; /* forward: out = loss; backward: out = grad input, gt = grad target */
    ampc_reduction reduction;
    double beta, gscale; /* gscale: the loss grad when reduced (already / numel for mean) */
    bool bad_input;      /* BCE input outside [0, 1] */
    bool backward;
    double *partial;     /* forward, reduced: the sum of each chunk */
} loss_ctx;

static void loss_chunk(loss_ctx *c, const double *x, const double *t, const double *w, const double *pw, double *out,
                       int64_t n) {
    switch (c->op) {
    case AMPC_OP_MSE_LOSS:
        for (int64_t i = 0; i < n; i++) out[i] = ampc_loss_mse_d(x[i], t[i]);
        break;
    case AMPC_OP_L1_LOSS:
        for (int64_t i = 0; i < n; i++) out[i] = ampc_loss_l1_d(x[i], t[i]);
        break;
    case AMPC_OP_SMOOTH_L1_LOSS:
        for (int64_t i = 0; i < n; i++) out[i] = ampc_loss_smooth_l1_d(x[i], t[i], c->beta);
        break;
    case AMPC_OP_BCE_LOSS:
        for (int64_t i = 0; i < n; i++) {
            if (!(x[i] >= 0 && x[i] <= 1)) nn_set_flag(&c->bad_input);
            out[i] = ampc_loss_bce_d(x[i], t[i], w ? w[i] : 1);
        }
        break;
    default: /* BCE_WITH_LOGITS */
        for (int64_t i = 0; i < n; i++)
            out[i] = ampc_loss_bce_with_logits_d(x[i], t[i], w ? w[i] : 1, pw ? pw[i] : 1, pw != NULL);
    }
}

/* Grads of the loss w.r.t. x (gx) and t (gt, may be NULL) given the loss grads g. */
static void loss_backward_chunk(const loss_ctx *c, const double *x, const double *t, const double *w, const double *pw,
                                const double *g, double *gx, double *gt, int64_t n) {
    int kind = (int)(c->op - AMPC_OP_MSE_LOSS_BACKWARD);
    for (int64_t i = 0; i < n; i++) {
        double dx, dt;
        ampc_loss_grad_d(kind, x[i], t[i], w ? w[i] : 1, pw ? pw[i] : 1, pw != NULL, c->beta, &dx, &dt);
        gx[i] = dx * g[i];
        if (gt) gt[i] = dt * g[i];
    }
}

static void load_opt(const ampc_tensor *t, int64_t i0, int64_t n, double *buf) {
    if (t) nn_load(t->dtype, ampc_data_ptr(t), i0, 1, n, buf);
}

/* One chunk: the losses stored (reduction none) or summed into partial[k]; or the grads. */
static void loss_chunk_task(void *vctx, int64_t k, int64_t i0, int64_t n, double *buf) {
    loss_ctx *c = (loss_ctx *)vctx;
    double *x = buf, *t = buf + CHUNK, *w = c->w ? buf + 2 * CHUNK : NULL, *pw = c->pw ? buf + 3 * CHUNK : NULL;
    double *o = buf + 4 * CHUNK, *g = buf + 5 * CHUNK, *o2 = c->gt ? buf + 6 * CHUNK : NULL;
    load_opt(c->x, i0, n, x), load_opt(c->t, i0, n, t), load_opt(c->w, i0, n, w), load_opt(c->pw, i0, n, pw);
    if (!c->backward) {
        loss_chunk(c, x, t, w, pw, o, n);
        if (c->reduction) {
            double s = 0;
            for (int64_t i = 0; i < n; i++) s += o[i];
            c->partial[k] = s;
        } else {
            nn_store(c->out->dtype, ampc_data_ptr(c->out), i0, 1, n, o);
        }
        return;
    }
    if (c->reduction)
        for (int64_t i = 0; i < n; i++) g[i] = c->gscale;
    else
        load_opt(c->g, i0, n, g);
    loss_backward_chunk(c, x, t, w, pw, g, o, o2, n);
    if (c->out) nn_store(c->out->dtype, ampc_data_ptr(c->out), i0, 1, n, o);
    if (c->gt) nn_store(c->gt->dtype, ampc_data_ptr(c->gt), i0, 1, n, o2);
}

static ampc_status run_loss(ampc_op op, loss_ctx *c, int64_t numel, bool backward) {
    int64_t chunks = (numel + CHUNK - 1) / CHUNK;
    c->backward = backward;
    c->partial = (!backward && c->reduction) ? (double *)calloc((size_t)(chunks + 1), sizeof(double)) : NULL;
    if (!backward && c->reduction && !c->partial) return nn_nomem(op);
    ampc_status st = nn_run_chunks(op, numel, 7, loss_chunk_task, c);
    if (c->partial && st == AMPC_OK) {
        double s = 0;
        for (int64_t k = 0; k < chunks; k++) s += c->partial[k];
        nn_set(c->out->dtype, ampc_data_ptr(c->out), 0, c->reduction == AMPC_REDUCTION_MEAN ? s / (double)numel : s);
    }
    free(c->partial);
    if (st != AMPC_OK) return st;
    if (c->bad_input) return ampc_set_error(AMPC_E_RUNTIME, "all elements of input should be between 0 and 1");
    return AMPC_OK;
}

static ampc_status cpu_loss(ampc_op op, const ampc_pointwise_loss_args *a) {
    loss_ctx c = {.op = op, .x = a->input, .t = a->target, .w = a->weight, .pw = a->pos_weight, .out = a->loss,
                  .reduction = a->reduction, .beta = a->beta};
    return run_loss(op, &c, ampc_numel(c.x), false);
}

static ampc_status cpu_loss_backward(ampc_op op, const ampc_pointwise_loss_backward_args *a) {
    loss_ctx c = {.op = op, .g = a->grad_loss, .x = a->input, .t = a->target, .w = a->weight, .pw = a->pos_weight,
                  .out = a->grad_input, .gt = a->grad_target, .reduction = a->reduction, .beta = a->beta};
    int64_t numel = ampc_numel(c.x);
    if (c.reduction != AMPC_REDUCTION_NONE)
        c.gscale = ampc_loss_grad_scale_d(c.reduction, nn_get(c.g->dtype, ampc_data_ptr(c.g), 0), (double)numel);
    return run_loss(op, &c, numel, true);
}

void ampc_cpu_register_nn_loss(void) {
    ampc_register_pointwise_loss(AMPC_CPU, cpu_loss);
    ampc_register_pointwise_loss_backward(AMPC_CPU, cpu_loss_backward);
}
