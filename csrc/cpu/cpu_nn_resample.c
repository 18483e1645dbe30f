/* cpu_nn_resample.c: the RESAMPLE rows on the CPU (UPSAMPLE_NEAREST/LINEAR/BICUBIC/AREA and
 * RESAMPLE_BACKWARD; core/nn_resample.c builds the per-dim taps they read, layout in ops.def).
 *
 * One output row (p, i, j) per task: for each tap pair (a, b) of rows i and j, the input row
 * (p, a, b) is loaded into double and its columns combined with the taps of every output column;
 * the row is stored once (fp16/bf16 rounded once). Backward is the same loop over the transposed
 * taps, so every output element is written by one task: no shared writes, deterministic. */
#include <string.h>

#include "../core/kernel_args.h"
#include "cpu_backend.h"
#include "cpu_nn_common.h"

typedef struct resample_ctx {
    const ampc_tensor *in;
    ampc_tensor *out;
    int64_t p, d, h, w;      /* in */
    int64_t od, oh, ow;      /* out: the rows of the taps */
    const int64_t *ptr[3], *idx[3];
    const double *wt[3];
} resample_ctx;

static void resample_row(void *vctx, int64_t r, double *buf) {
    const resample_ctx *c = (const resample_ctx *)vctx;
    int64_t j = r % c->oh, i = (r / c->oh) % c->od, p = r / (c->oh * c->od);
    double *acc = buf, *row = buf + c->ow;
    memset(acc, 0, sizeof(double) * (size_t)c->ow);
    for (int64_t ea = c->ptr[0][i]; ea < c->ptr[0][i + 1]; ea++)
        for (int64_t eb = c->ptr[1][j]; eb < c->ptr[1][j + 1]; eb++) {
            double wab = c->wt[0][ea] * c->wt[1][eb];
            int64_t src = ((p * c->d + c->idx[0][ea]) * c->h + c->idx[1][eb]) * c->w;
            nn_load(c->in->dtype, ampc_data_ptr(c->in), src, 1, c->w, row);
            for (int64_t k = 0; k < c->ow; k++) {
                double s = 0;
                for (int64_t ec = c->ptr[2][k]; ec < c->ptr[2][k + 1]; ec++) s += c->wt[2][ec] * row[c->idx[2][ec]];
                acc[k] += wab * s;
            }
        }
    nn_store(c->out->dtype, ampc_data_ptr(c->out), r * c->ow, 1, c->ow, acc);
}

static ampc_status cpu_resample(ampc_op op, const ampc_resample_args *a) {
    resample_ctx c = {.in = a->in, .out = a->out};
    c.p = a->in->shape[0], c.d = a->in->shape[1], c.h = a->in->shape[2], c.w = a->in->shape[3];
    c.od = a->out->shape[1], c.oh = a->out->shape[2], c.ow = a->out->shape[3];
    const int64_t *iv = (const int64_t *)ampc_data_ptr(a->index);
    const double *wv = (const double *)ampc_data_ptr(a->weight);
    int64_t rows[3] = {c.od, c.oh, c.ow};
    for (int d = 0; d < 3; d++) c.ptr[d] = iv, iv += rows[d] + 1;
    for (int d = 0; d < 3; d++) c.idx[d] = iv, c.wt[d] = wv, iv += a->nnz[d], wv += a->nnz[d];
    int64_t n_rows = c.p * c.od * c.oh;
    return nn_run_tasks(op, n_rows, nn_threads(ampc_numel(a->out) + ampc_numel(a->in)), c.ow + c.w, resample_row, &c);
}

void ampc_cpu_register_nn_resample(void) {
    ampc_register_resample(AMPC_CPU, cpu_resample);
}
