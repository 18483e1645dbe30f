/* cpu_nn_misc.c: embedding (a bounds-checked row gather) and its backward, dropout with the
 * Philox stream, and the masked scale that is dropout's backward.
 *
 * Dropout: element i (row-major index) keeps when philox_u32(word offset + i) < 1 - p, which is
 * the BERNOULLI transform of random_transforms.h over the same words: dropout's mask equals
 * bernoulli_(1 - p) drawn from the same generator state, on the CPU and on a CUDA kernel that
 * follows philox.h. Embedding backward groups the occurrences of each index (a counting sort)
 * and sums each weight row's grads on one thread in index order: deterministic, and fp16 grads
 * round once per row. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../core/philox.h"
#include "../core/kernel_args.h"
#include "cpu_backend.h"
#include "cpu_nn_common.h"

/* dropout's chunks (nn_run_chunks) must start on a Philox block of 4 elements */
_Static_assert(NN_CHUNK % 4 == 0, "NN_CHUNK must be a multiple of 4");

/* ---------------------------------------------------------------- embedding */

static ampc_status cpu_embedding(ampc_op op, const ampc_embedding_args *a) {
    const ampc_tensor *w = a->weight, *idx = a->indices;
    ampc_tensor *out = a->out;
    int64_t v = w->shape[0], d = w->shape[1], n = ampc_numel(idx);
    size_t row = (size_t)d * ampc_dtype_itemsize(w->dtype);
    const char *wp = (const char *)ampc_data_ptr(w);
    char *op_ = (char *)ampc_data_ptr(out);
    const void *ip = ampc_data_ptr(idx);
    bool bad = false;
#ifdef _OPENMP
#pragma omp parallel for schedule(static) num_threads(nn_threads(n * d))
#endif
    for (int64_t i = 0; i < n; i++) {
        int64_t k = nn_get_index(idx->dtype, ip, i);
        if (k < 0 || k >= v) {
            nn_set_flag(&bad);
            continue;
        }
        memcpy(op_ + (size_t)i * row, wp + (size_t)k * row, row);
    }
    return bad ? ampc_set_error(AMPC_E_INDEX, "index out of range in self") : AMPC_OK;
}

typedef struct embedding_grad_ctx {
    const ampc_tensor *g;
    ampc_tensor *gw;
    const int64_t *start, *order; /* the positions of index k: order[start[k] .. start[k + 1]) */
    int64_t padding_idx;
    bool by_freq;
} embedding_grad_ctx;

/* Weight row k's grad: the grad rows of its positions summed in order. buf: 2 * d doubles. */
static void embedding_grad_row(void *vctx, int64_t k, double *buf) {
    const embedding_grad_ctx *c = (const embedding_grad_ctx *)vctx;
    int64_t d = c->gw->shape[1], b = c->start[k], e = c->start[k + 1];
    double *acc = buf, *row = buf + d;
    memset(acc, 0, sizeof(double) * (size_t)d);
    if (k != c->padding_idx)
        for (int64_t j = b; j < e; j++) {
            nn_load(c->g->dtype, ampc_data_ptr(c->g), c->order[j] * d, 1, d, row);
            for (int64_t i = 0; i < d; i++) acc[i] += row[i];
        }
    if (c->by_freq && e > b)
        for (int64_t i = 0; i < d; i++) acc[i] /= (double)(e - b);
    nn_store(c->gw->dtype, ampc_data_ptr(c->gw), k * d, 1, d, acc);
}

static ampc_status cpu_embedding_backward(ampc_op op, const ampc_embedding_backward_args *a) {
    const ampc_tensor *g = a->grad, *idx = a->indices;
    ampc_tensor *gw = a->grad_weight;
    int64_t n = ampc_numel(idx), v = gw->shape[0], d = gw->shape[1];
    const void *ip = ampc_data_ptr(idx);
    /* counting sort of the positions by index value: start[k] .. start[k + 1] in order[] */
    int64_t *start = (int64_t *)calloc((size_t)(v + 2), sizeof(int64_t));
    int64_t *order = (int64_t *)malloc(sizeof(int64_t) * (size_t)(n + 1));
    if (!start || !order) {
        free(start), free(order);
        return nn_nomem(op);
    }
    for (int64_t i = 0; i < n; i++) {
        int64_t k = nn_get_index(idx->dtype, ip, i);
        if (k < 0 || k >= v) {
            free(start), free(order);
            return ampc_set_error(AMPC_E_INDEX, "index out of range in self");
        }
        start[k + 2]++;
    }
    for (int64_t k = 2; k < v + 2; k++) start[k] += start[k - 1];
    for (int64_t i = 0; i < n; i++) order[start[nn_get_index(idx->dtype, ip, i) + 1]++] = i;
    embedding_grad_ctx c = {.g = g, .gw = gw, .start = start, .order = order, .padding_idx = a->padding_idx,
                            .by_freq = a->scale_grad_by_freq};
    ampc_status st = nn_run_tasks(op, v, nn_threads(n * d + v * d), 2 * d, embedding_grad_row, &c);
    free(start), free(order);
    return st;
}

/* ---------------------------------------------------------------- dropout */

typedef struct dropout_ctx {
    const ampc_tensor *x, *mask; /* masked_scale: the bool mask it reads */
    ampc_tensor *y;
    bool *mask_out; /* dropout: the keep mask it writes */
    double keep_p, scale;
    uint64_t seed, block0;
} dropout_ctx;

static void dropout_chunk(void *vctx, int64_t k, int64_t i0, int64_t m, double *buf) {
    const dropout_ctx *c = (const dropout_ctx *)vctx;
    nn_load(c->x->dtype, ampc_data_ptr(c->x), i0, 1, m, buf);
    for (int64_t i = 0; i < m; i += 4) {
        ampc_philox_block blk = ampc_philox_at(c->seed, c->block0 + (uint64_t)(i0 + i) / 4);
        for (int64_t j = 0; j < 4 && i + j < m; j++) {
            bool keep = ampc_philox_u32(blk.w[j]) < c->keep_p;
            c->mask_out[i0 + i + j] = keep;
            buf[i + j] = keep ? buf[i + j] * c->scale : 0;
        }
    }
    nn_store(c->y->dtype, ampc_data_ptr(c->y), i0, 1, m, buf);
}

static ampc_status cpu_dropout(ampc_op op, const ampc_dropout_args *a) {
    double p = a->p;
    dropout_ctx c = {.x = a->x, .y = a->y, .mask_out = (bool *)ampc_data_ptr(a->mask), .keep_p = 1 - p,
                     .scale = p < 1 ? 1 / (1 - p) : 0, .seed = a->seed, .block0 = a->offset / 4};
    return nn_run_chunks(op, ampc_numel(c.x), 1, dropout_chunk, &c);
}

static void masked_scale_chunk(void *vctx, int64_t k, int64_t i0, int64_t m, double *buf) {
    const dropout_ctx *c = (const dropout_ctx *)vctx;
    double *v = buf, *keep = buf + NN_CHUNK;
    nn_load(c->x->dtype, ampc_data_ptr(c->x), i0, 1, m, v);
    nn_load(c->mask->dtype, ampc_data_ptr(c->mask), i0, 1, m, keep);
    for (int64_t i = 0; i < m; i++) v[i] = keep[i] != 0 ? v[i] * c->scale : 0;
    nn_store(c->y->dtype, ampc_data_ptr(c->y), i0, 1, m, v);
}

static ampc_status cpu_masked_scale(ampc_op op, const ampc_masked_scale_args *a) {
    dropout_ctx c = {.x = a->x, .mask = a->mask, .y = a->out, .scale = a->scale};
    return nn_run_chunks(op, ampc_numel(c.x), 2, masked_scale_chunk, &c);
}

void ampc_cpu_register_nn_misc(void) {
    ampc_register_embedding(AMPC_CPU, cpu_embedding);
    ampc_register_embedding_backward(AMPC_CPU, cpu_embedding_backward);
    ampc_register_dropout(AMPC_CPU, cpu_dropout);
    ampc_register_masked_scale(AMPC_CPU, cpu_masked_scale);
}
