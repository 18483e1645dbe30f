/* cpu_nn_common.c: conversions between storage dtypes and the double buffers the CPU nn
 * kernels compute in (cpu_nn_common.h). */
#include <math.h>
#include <stdlib.h>

#include "cpu_nn_common.h"

#include "cpu_backend.h"
#include "cpu_dtype_loops.h"
#include "cpu_half_convert.h"

#define LOAD_CASE(ENUM, SUF, CT, VT)                                                        \
    case ENUM: {                                                                            \
        const CT *p = (const CT *)base + i0;                                                \
        if (stride == 1)                                                                    \
            for (int64_t k = 0; k < n; k++) dst[k] = (double)AMPC_LOAD_##SUF(p + k);        \
        else                                                                                \
            for (int64_t k = 0; k < n; k++) dst[k] = (double)AMPC_LOAD_##SUF(p + k * stride); \
        break;                                                                              \
    }

/* Contiguous fp16/bf16 runs go through float blocks and the vector converters of
 * cpu_half_convert.h (same values as the per-element conversions, several times faster). */
#define NN_HALF_BLOCK 256

static void load_half_run(ampc_dtype dt, const uint16_t *p, int64_t n, double *dst) {
    float f[NN_HALF_BLOCK];
    for (int64_t k0 = 0; k0 < n; k0 += NN_HALF_BLOCK) {
        int64_t m = n - k0 < NN_HALF_BLOCK ? n - k0 : NN_HALF_BLOCK;
        if (dt == AMPC_FLOAT16)
            ampc_cpu_f16_to_f32(p + k0, f, m);
        else
            ampc_cpu_bf16_to_f32(p + k0, f, m);
        for (int64_t k = 0; k < m; k++) dst[k0 + k] = f[k];
    }
}

static void store_half_run(ampc_dtype dt, uint16_t *p, int64_t n, const double *src) {
    float f[NN_HALF_BLOCK];
    for (int64_t k0 = 0; k0 < n; k0 += NN_HALF_BLOCK) {
        int64_t m = n - k0 < NN_HALF_BLOCK ? n - k0 : NN_HALF_BLOCK;
        for (int64_t k = 0; k < m; k++) f[k] = (float)src[k0 + k]; /* as AMPC_STORE_f16: via float */
        if (dt == AMPC_FLOAT16)
            ampc_cpu_f32_to_f16(f, p + k0, m);
        else
            ampc_cpu_f32_to_bf16(f, p + k0, m);
    }
}

static bool is_half(ampc_dtype dt) { return dt == AMPC_FLOAT16 || dt == AMPC_BFLOAT16; }

void nn_load(ampc_dtype dt, const void *base, int64_t i0, int64_t stride, int64_t n, double *dst) {
    if (stride == 1 && n > 1 && is_half(dt)) {
        load_half_run(dt, (const uint16_t *)base + i0, n, dst);
        return;
    }
    switch (dt) {
        AMPC_FOR_EACH_DTYPE(LOAD_CASE)
    default: break;
    }
}

#define STORE_CASE(ENUM, SUF, CT, VT)                                                  \
    case ENUM: {                                                                       \
        CT *p = (CT *)base + i0;                                                       \
        if (stride == 1)                                                               \
            for (int64_t k = 0; k < n; k++) AMPC_STORE_##SUF(p + k, src[k]);           \
        else                                                                           \
            for (int64_t k = 0; k < n; k++) AMPC_STORE_##SUF(p + k * stride, src[k]);  \
        break;                                                                         \
    }

void nn_store(ampc_dtype dt, void *base, int64_t i0, int64_t stride, int64_t n, const double *src) {
    if (stride == 1 && n > 1 && is_half(dt)) {
        store_half_run(dt, (uint16_t *)base + i0, n, src);
        return;
    }
    switch (dt) {
        AMPC_FOR_EACH_DTYPE(STORE_CASE)
    default: break;
    }
}

double nn_get(ampc_dtype dt, const void *base, int64_t i) {
    double v = 0;
    nn_load(dt, base, i, 1, 1, &v);
    return v;
}

void nn_set(ampc_dtype dt, void *base, int64_t i, double v) { nn_store(dt, base, i, 1, 1, &v); }

int64_t nn_get_index(ampc_dtype dt, const void *base, int64_t i) {
    switch (dt) {
    case AMPC_INT32: return ((const int32_t *)base)[i];
    case AMPC_UINT8: return ((const uint8_t *)base)[i];
    default: return ((const int64_t *)base)[i];
    }
}

/* ---------------------------------------------------------------- the parallel loop */

ampc_status nn_run_tasks(ampc_op op, int64_t tasks, int threads, int64_t scratch, nn_task_fn fn, void *ctx) {
    bool failed = false;
#ifdef _OPENMP
#pragma omp parallel num_threads(threads)
#else
    (void)threads;
#endif
    {
        double *buf = (double *)malloc(sizeof(double) * (size_t)(scratch > 0 ? scratch : 1));
        if (!buf) nn_set_flag(&failed);
#ifdef _OPENMP
#pragma omp for schedule(static)
#endif
        for (int64_t t = 0; t < tasks; t++)
            if (buf) fn(ctx, t, buf);
        free(buf);
    }
    return failed ? nn_nomem(op) : AMPC_OK;
}

/* ---------------------------------------------------------------- tiles (cpu_nn_common.h) */

typedef struct tile_run {
    tile_fn fn;
    const void *ctx;
    int64_t inner, blocks, per_buf; /* per_buf: doubles of one of the n_buf buffers */
    int n_buf;
} tile_run;

static void tile_task(void *vrun, int64_t t, double *buf) {
    const tile_run *r = (const tile_run *)vrun;
    double *bufs[4] = {NULL, NULL, NULL, NULL};
    for (int i = 0; i < r->n_buf; i++) bufs[i] = buf + i * r->per_buf;
    int64_t o = t / r->blocks, j0 = (t % r->blocks) * NN_TILE_W;
    r->fn(r->ctx, o, j0, r->inner - j0 < NN_TILE_W ? r->inner - j0 : NN_TILE_W, bufs);
}

ampc_status nn_run_tiles(ampc_op op, int64_t outer, int64_t d, int64_t inner, int n_buf, tile_fn fn,
                             const void *ctx) {
    int64_t tw = inner < NN_TILE_W ? inner : NN_TILE_W;
    tile_run r = {fn, ctx, inner, (inner + NN_TILE_W - 1) / NN_TILE_W, 2 * NN_TILE_W + d * tw + 1, n_buf};
    return nn_run_tasks(op, outer * r.blocks, nn_threads(outer * d * inner), n_buf * r.per_buf, tile_task, &r);
}

/* Per column j of a (d, w) tile: the max and log-sum-exp. */
void nn_tile_lse(const double *t, int64_t d, int64_t w, double *mx, double *lse) {
    for (int64_t j = 0; j < w; j++) mx[j] = -INFINITY, lse[j] = 0;
    for (int64_t r = 0; r < d; r++)
        for (int64_t j = 0; j < w; j++) mx[j] = t[r * w + j] > mx[j] ? t[r * w + j] : mx[j];
    for (int64_t r = 0; r < d; r++)
        for (int64_t j = 0; j < w; j++) lse[j] += exp(t[r * w + j] - mx[j]);
    for (int64_t j = 0; j < w; j++) lse[j] = mx[j] + log(lse[j]);
}

/* ---------------------------------------------------------------- chunks (cpu_nn_common.h) */

typedef struct chunk_run {
    nn_chunk_fn fn;
    void *ctx;
    int64_t numel;
} chunk_run;

static void chunk_task(void *vrun, int64_t k, double *buf) {
    const chunk_run *r = (const chunk_run *)vrun;
    int64_t i0 = k * NN_CHUNK;
    r->fn(r->ctx, k, i0, r->numel - i0 < NN_CHUNK ? r->numel - i0 : NN_CHUNK, buf);
}

ampc_status nn_run_chunks(ampc_op op, int64_t numel, int n_buf, nn_chunk_fn fn, void *ctx) {
    chunk_run r = {fn, ctx, numel};
    return nn_run_tasks(op, (numel + NN_CHUNK - 1) / NN_CHUNK, nn_threads(numel), (int64_t)n_buf * NN_CHUNK,
                        chunk_task, &r);
}

ampc_status nn_nomem(ampc_op op) {
    return ampc_set_error(AMPC_E_NOMEM, "%s: out of memory for the kernel's work buffers", ampc_op_name(op));
}

void ampc_cpu_register_nn(void) {
    ampc_cpu_register_nn_conv();
    ampc_cpu_register_nn_pool();
    ampc_cpu_register_nn_norm();
    ampc_cpu_register_nn_softmax();
    ampc_cpu_register_nn_loss();
    ampc_cpu_register_nn_loss_class();
    ampc_cpu_register_nn_misc();
}
