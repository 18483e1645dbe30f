/* cpu_nn_pad.c: the pad rows on the CPU (CONSTANT_PAD_ND, REFLECTION_PAD, REPLICATION_PAD,
 * CIRCULAR_PAD and PAD_BACKWARD; core/nn_pad.c builds the per-dim index tables they read).
 *
 * Forward copies elements as bits (any dtype), fill positions get the fill value's bits. Backward
 * is a gather over the table's inverse: each grad x row (p, d, h) sums, in double, the grad y rows
 * (p, od, oh) that read it, and within them the columns ow that read each w, then rounds once.
 * Rows are independent, so both run in parallel over rows with no write shared between threads. */
#include <string.h>

#include "../core/kernel_args.h"
#include "cpu_backend.h"
#include "cpu_nn_common.h"

typedef struct pad_geom {
    int64_t p, d, h, w;     /* x, the unpadded side */
    int64_t od, oh, ow;     /* y, the padded side */
    const int64_t *src_d, *src_h, *src_w, *ptr_d, *ptr_h, *ptr_w, *idx_d, *idx_h, *idx_w;
} pad_geom;

/* The table's parts (layout: ops.def, the pad rows). x4 the unpadded tensor, y4 the padded one. */
static pad_geom geom_of(const ampc_tensor *x4, const ampc_tensor *y4, const ampc_tensor *table) {
    pad_geom g;
    g.p = x4->shape[0], g.d = x4->shape[1], g.h = x4->shape[2], g.w = x4->shape[3];
    g.od = y4->shape[1], g.oh = y4->shape[2], g.ow = y4->shape[3];
    const int64_t *v = (const int64_t *)ampc_data_ptr(table);
    g.src_d = v, g.src_h = g.src_d + g.od, g.src_w = g.src_h + g.oh;
    g.ptr_d = g.src_w + g.ow, g.ptr_h = g.ptr_d + g.d + 1, g.ptr_w = g.ptr_h + g.h + 1;
    g.idx_d = g.ptr_w + g.w + 1, g.idx_h = g.idx_d + g.od, g.idx_w = g.idx_h + g.oh;
    return g;
}

/* One output row (p, od, oh) per iteration of the row loop, T an unsigned type of the item size. */
#define PAD_FORWARD_ROWS(T)                                                                                    \
    do {                                                                                                       \
        const T *x = (const T *)ampc_data_ptr(a->in);                                                          \
        T *y = (T *)ampc_data_ptr(a->out);                                                                     \
        T fill;                                                                                                \
        memcpy(&fill, &a->fill_bits, sizeof fill);                                                             \
        _Pragma("omp parallel for schedule(static) num_threads(threads)")                                      \
        for (int64_t r = 0; r < rows; r++) {                                                                   \
            int64_t oh = r % g.oh, od = (r / g.oh) % g.od, p = r / (g.oh * g.od);                              \
            int64_t sd = g.src_d[od], sh = g.src_h[oh];                                                        \
            T *out = y + r * g.ow;                                                                             \
            if (sd < 0 || sh < 0) {                                                                            \
                for (int64_t ow = 0; ow < g.ow; ow++) out[ow] = fill;                                          \
                continue;                                                                                      \
            }                                                                                                  \
            const T *in = x + ((p * g.d + sd) * g.h + sh) * g.w;                                               \
            for (int64_t ow = 0; ow < g.ow; ow++) {                                                            \
                int64_t sw = g.src_w[ow];                                                                      \
                out[ow] = sw < 0 ? fill : in[sw];                                                              \
            }                                                                                                  \
        }                                                                                                      \
    } while (0)

static ampc_status cpu_pad_forward(const ampc_pad_args *a) {
    pad_geom g = geom_of(a->in, a->out, a->table);
    int64_t rows = g.p * g.od * g.oh;
    int threads = nn_threads(rows * g.ow);
    (void)threads;
    switch (ampc_dtype_itemsize(a->in->dtype)) {
    case 1: PAD_FORWARD_ROWS(uint8_t); break;
    case 2: PAD_FORWARD_ROWS(uint16_t); break;
    case 4: PAD_FORWARD_ROWS(uint32_t); break;
    case 8: PAD_FORWARD_ROWS(uint64_t); break;
    default: return ampc_set_error(AMPC_E_TYPE, "pad: unsupported item size");
    }
    return AMPC_OK;
}

typedef struct pad_backward_ctx {
    pad_geom g;
    const ampc_tensor *gy;
    ampc_tensor *gx;
} pad_backward_ctx;

/* grad x row r = (p, d, h): buf holds the row's sums (w) and one grad y row (ow). */
static void pad_backward_row(void *vctx, int64_t r, double *buf) {
    const pad_backward_ctx *c = (const pad_backward_ctx *)vctx;
    const pad_geom *g = &c->g;
    int64_t h = r % g->h, d = (r / g->h) % g->d, p = r / (g->h * g->d);
    double *acc = buf, *row = buf + g->w;
    memset(acc, 0, sizeof(double) * (size_t)g->w);
    for (int64_t i = g->ptr_d[d]; i < g->ptr_d[d + 1]; i++)
        for (int64_t j = g->ptr_h[h]; j < g->ptr_h[h + 1]; j++) {
            int64_t od = g->idx_d[i], oh = g->idx_h[j];
            nn_load(c->gy->dtype, ampc_data_ptr(c->gy), ((p * g->od + od) * g->oh + oh) * g->ow, 1, g->ow, row);
            for (int64_t w = 0; w < g->w; w++)
                for (int64_t k = g->ptr_w[w]; k < g->ptr_w[w + 1]; k++) acc[w] += row[g->idx_w[k]];
        }
    nn_store(c->gx->dtype, ampc_data_ptr(c->gx), r * g->w, 1, g->w, acc);
}

static ampc_status cpu_pad_backward(ampc_op op, const ampc_pad_args *a) {
    pad_backward_ctx c = {.g = geom_of(a->out, a->in, a->table), .gy = a->in, .gx = a->out};
    int64_t rows = c.g.p * c.g.d * c.g.h;
    return nn_run_tasks(op, rows, nn_threads(ampc_numel(a->in)), c.g.w + c.g.ow, pad_backward_row, &c);
}

static ampc_status cpu_pad(ampc_op op, const ampc_pad_args *a) {
    return op == AMPC_OP_PAD_BACKWARD ? cpu_pad_backward(op, a) : cpu_pad_forward(a);
}

void ampc_cpu_register_nn_pad(void) {
    ampc_register_pad(AMPC_CPU, cpu_pad);
}
