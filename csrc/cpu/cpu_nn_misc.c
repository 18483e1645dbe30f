/* cpu_nn_misc.c: embedding (a bounds-checked row gather) and its backward, dropout drawn from
 * the CPU generator as torch's CPU dropout draws it, and the masked scale that is its backward.
 *
 * Dropout: element i (row-major index) keeps when its 53-bit uniform (random64) < 1 - p, the
 * draws torch's noise.bernoulli_(1 - p) makes, so F.dropout's output equals torch's bit for bit
 * after the same manual_seed (its mask equals bernoulli_(1 - p) from the same state). Embedding backward groups the occurrences of each index (a counting sort)
 * and sums each weight row's grads on one thread in index order: deterministic, and fp16 grads
 * round once per row. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../core/mt19937.h"
#include "../core/ops.h"
#include "../core/kernel_args.h"
#include "cpu_backend.h"
#include "cpu_nn_common.h"


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

/* A value rounded to a floating dtype (float64: itself). */
static double round_to(ampc_dtype dt, double v) {
    switch (dt) {
    case AMPC_FLOAT32: return (float)v;
    case AMPC_FLOAT16: return ampc_half_to_f32(ampc_f32_to_half((float)v));
    case AMPC_BFLOAT16: return ampc_bf16_to_f32(ampc_f32_to_bf16((float)v));
    default: return v;
    }
}

/* x * s in the dtype's arithmetic (float for float32/16/bf16), rounded to it. */
static double mul_in(ampc_dtype dt, double x, double s) {
    return dt == AMPC_FLOAT64 ? x * s : round_to(dt, (float)x * (float)s);
}

/* The kept elements' factor 1 / (1 - p) as torch's noise.div_(1 - p) makes it: the divisor
 * rounded to float first (a float division) for every dtype but float64, the quotient rounded
 * to the dtype. */
static double keep_scale(ampc_dtype dt, double p) {
    if (dt == AMPC_FLOAT64) return 1.0 / (1.0 - p);
    return round_to(dt, 1.0f / (float)(1.0 - p));
}

typedef struct masked_ctx {
    const ampc_tensor *x, *mask;
    ampc_tensor *y;
    double scale;
} masked_ctx;

/* Dropout, torch's CPU composition: noise = bernoulli_(1 - p) (one random64 draw per element,
 * in order, from the CPU generator), noise /= (1 - p), y = x * noise. p == 1 draws nothing
 * (torch returns x * 0). Serial: the stream is sequential. */
static ampc_status cpu_dropout(ampc_op op, const ampc_dropout_args *a) {
    const ampc_tensor *x = a->x;
    int64_t n = ampc_numel(x);
    ampc_dtype dt = x->dtype;
    bool *mask = (bool *)ampc_data_ptr(a->mask);
    double keep_p = 1.0 - a->p, scale = a->p < 1 ? keep_scale(dt, a->p) : 0.0;
    ampc_cpu_generator *g = ampc_cpu_generator_default();
    double buf[NN_CHUNK];
    for (int64_t i0 = 0; i0 < n; i0 += NN_CHUNK) {
        int64_t m = n - i0 < NN_CHUNK ? n - i0 : NN_CHUNK;
        nn_load(dt, ampc_data_ptr(x), i0, 1, m, buf);
        for (int64_t i = 0; i < m; i++) {
            bool keep = a->p < 1 && ampc_mt_unit_double(g) < keep_p;
            mask[i0 + i] = keep;
            buf[i] = mul_in(dt, buf[i], keep ? scale : 0.0);
        }
        nn_store(a->y->dtype, ampc_data_ptr(a->y), i0, 1, m, buf);
    }
    return AMPC_OK;
}

/* dropout's backward, grad * noise as torch's MulBackward computes it in the dtype. */
static void masked_scale_chunk(void *vctx, int64_t k, int64_t i0, int64_t m, double *buf) {
    const masked_ctx *c = (const masked_ctx *)vctx;
    double *v = buf, *keep = buf + NN_CHUNK;
    ampc_dtype dt = c->x->dtype;
    double s = round_to(dt, c->scale);
    nn_load(dt, ampc_data_ptr(c->x), i0, 1, m, v);
    nn_load(c->mask->dtype, ampc_data_ptr(c->mask), i0, 1, m, keep);
    for (int64_t i = 0; i < m; i++) v[i] = mul_in(dt, v[i], keep[i] != 0 ? s : 0.0);
    nn_store(c->y->dtype, ampc_data_ptr(c->y), i0, 1, m, v);
}

static ampc_status cpu_masked_scale(ampc_op op, const ampc_masked_scale_args *a) {
    masked_ctx c = {.x = a->x, .mask = a->mask, .y = a->out, .scale = a->scale};
    return nn_run_chunks(op, ampc_numel(c.x), 2, masked_scale_chunk, &c);
}

void ampc_cpu_register_nn_misc(void) {
    ampc_register_embedding(AMPC_CPU, cpu_embedding);
    ampc_register_embedding_backward(AMPC_CPU, cpu_embedding_backward);
    ampc_register_dropout(AMPC_CPU, cpu_dropout);
    ampc_register_masked_scale(AMPC_CPU, cpu_masked_scale);
}
