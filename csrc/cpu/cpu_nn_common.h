/* cpu_nn_common.h: what the CPU nn kernels (cpu_nn_*.c) share.
 *
 * The nn kernels compute in double whatever the storage dtype: a row, plane or tile is loaded
 * into a double buffer, worked on there, and stored once (fp16/bf16 rounded once, as the op
 * contract asks). The per-dtype switch sits outside the element loops, so both the conversion
 * loops and the arithmetic on the buffers vectorize. Only the GEMM inside convolutions and
 * attention runs in the storage dtype (cpu_gemm.c).
 *
 * A parallel loop that works in double buffers is nn_run_tasks: the kernel writes a task function
 * (one plane, row, channel, tile or chunk, in the thread's scratch) and a context struct, and the
 * runner owns the OpenMP region, the scratch and the out-of-memory report. Loops that need no
 * buffer (a row gather, im2col, nll's per-row picks) stay plain `omp parallel for`. */
#ifndef AMPC_CPU_NN_COMMON_H
#define AMPC_CPU_NN_COMMON_H

#include <stdbool.h>
#include <stdint.h>

#include "../core/dispatch.h"

#ifdef _OPENMP
#include <omp.h>
#endif

/* Below this much work (elements touched) a parallel region costs more than it saves. */
#define NN_PARALLEL_GRAIN 32768

/* Elements base[i0 + k * stride], k < n, of dtype dt, to and from double. */
void nn_load(ampc_dtype dt, const void *base, int64_t i0, int64_t stride, int64_t n, double *dst);
void nn_store(ampc_dtype dt, void *base, int64_t i0, int64_t stride, int64_t n, const double *src);
double nn_get(ampc_dtype dt, const void *base, int64_t i);
void nn_set(ampc_dtype dt, void *base, int64_t i, double v);
/* Integer index element i of an int64, int32 or uint8 tensor's data. */
int64_t nn_get_index(ampc_dtype dt, const void *base, int64_t i);

/* Data pointer of an optional tensor (NULL stays NULL). */
static inline void *nn_data(const ampc_tensor *t) { return t ? ampc_data_ptr(t) : NULL; }

/* The (outer, D, inner) view of a contiguous tensor reduced along `dim`. */
static inline void nn_split_dim(const ampc_tensor *t, int dim, int64_t *outer, int64_t *d, int64_t *inner) {
    int64_t o = 1, in = 1;
    for (int i = 0; i < dim; i++) o *= t->shape[i];
    for (int i = dim + 1; i < t->ndim; i++) in *= t->shape[i];
    *outer = o;
    *d = t->ndim ? t->shape[dim] : 1;
    *inner = in;
}

/* Columns a (D, w) tile holds at most: tiles of the (outer, D, inner) view take inner columns
 * in blocks of this width, so the buffer stays small and the loads stay contiguous. */
#define NN_TILE_W 32

/* Loads the (D, w) tile whose first element is element i0 (rows at stride `inner`) into
 * buf[d * w + j]; stores it back. */
static inline void nn_load_tile(ampc_dtype dt, const void *base, int64_t i0, int64_t d, int64_t inner, int64_t w,
                                double *buf) {
    if (w == inner) { /* the rows lie back to back (inner 1: a (N, C) row): one contiguous load */
        nn_load(dt, base, i0, 1, d * w, buf);
        return;
    }
    for (int64_t r = 0; r < d; r++) nn_load(dt, base, i0 + r * inner, 1, w, buf + r * w);
}
static inline void nn_store_tile(ampc_dtype dt, void *base, int64_t i0, int64_t d, int64_t inner, int64_t w,
                                 const double *buf) {
    if (w == inner) {
        nn_store(dt, base, i0, 1, d * w, buf);
        return;
    }
    for (int64_t r = 0; r < d; r++) nn_store(dt, base, i0 + r * inner, 1, w, buf + r * w);
}

/* Threads a loop of `work` elements should use (1 below the grain). */
static inline int nn_threads(int64_t work) {
#ifdef _OPENMP
    return work >= NN_PARALLEL_GRAIN ? omp_get_max_threads() : 1;
#else
    (void)work;
    return 1;
#endif
}

/* fn(ctx, t, buf): task t of a parallel loop (a plane, a row, a channel, a tile, a chunk); buf
 * is this thread's scratch. */
typedef void (*nn_task_fn)(void *ctx, int64_t t, double *buf);

/* The one parallel loop of the CPU nn kernels: fn(ctx, t, buf) for every t < tasks, on `threads`
 * threads (static schedule), buf a per-thread scratch of `scratch` doubles allocated once per
 * thread. fn is called once per task, never per element, so the element loops inside it stay
 * hot. NOMEM naming op when a buffer cannot be had (no task runs on that thread then). Failures
 * inside a task are flags in ctx (nn_set_flag), read after the loop. */
ampc_status nn_run_tasks(ampc_op op, int64_t tasks, int threads, int64_t scratch, nn_task_fn fn, void *ctx);

/* fn(ctx, o, j0, w, bufs): one tile, outer index o, columns [j0, j0 + w); bufs are this thread's
 * n_buf scratch arrays, each room for a (D, w) tile and two more rows of NN_TILE_W. */
typedef void (*tile_fn)(const void *ctx, int64_t o, int64_t j0, int64_t w, double **bufs);

/* Runs fn over the (outer, D, inner) view in (D, NN_TILE_W) tiles (nn_run_tasks), each thread
 * with n_buf (<= 4) scratch buffers. */
ampc_status nn_run_tiles(ampc_op op, int64_t outer, int64_t d, int64_t inner, int n_buf, tile_fn fn, const void *ctx);
/* Per column j of a (d, w) tile: the max and log-sum-exp. */
void nn_tile_lse(const double *t, int64_t d, int64_t w, double *mx, double *lse);

/* Elements a chunk of a flat loop holds (nn_run_chunks): small enough for its double buffers to
 * stay in cache. */
#define NN_CHUNK 1024

/* fn(ctx, k, i0, n, buf): chunk k of a flat loop, elements [i0, i0 + n) with n <= NN_CHUNK; buf
 * is this thread's scratch of n_buf * NN_CHUNK doubles. */
typedef void (*nn_chunk_fn)(void *ctx, int64_t k, int64_t i0, int64_t n, double *buf);
/* Runs fn over the chunks of numel elements (nn_run_tasks). */
ampc_status nn_run_chunks(ampc_op op, int64_t numel, int n_buf, nn_chunk_fn fn, void *ctx);

/* Registration of each kernel file; ampc_cpu_register_nn (cpu_backend.h) calls them all. */
void ampc_cpu_register_nn_conv(void);    /* cpu_nn_conv.c: IM2COL, COL2IM */
void ampc_cpu_register_nn_pool(void);    /* cpu_nn_pool.c: MAX/AVG/ADAPTIVE_AVG_POOL2D (+ backward) */
void ampc_cpu_register_nn_norm(void);    /* cpu_nn_norm.c: BATCH_NORM_*, LAYER_NORM*, GROUP_NORM* */
void ampc_cpu_register_nn_loss(void);    /* cpu_nn_loss.c: MSE, L1, SMOOTH_L1, BCE, BCE_WITH_LOGITS (+ backward) */
void ampc_cpu_register_nn_misc(void);    /* cpu_nn_misc.c: EMBEDDING*, DROPOUT, MASKED_SCALE */
void ampc_cpu_register_nn_softmax(void); /* cpu_nn_softmax.c: (LOG_)SOFTMAX* */
void ampc_cpu_register_nn_loss_class(void); /* cpu_nn_loss_class.c: CROSS_ENTROPY*, NLL_LOSS* */

/* Raises a flag shared by the threads of a parallel loop (failures are reported after it). */
static inline void nn_set_flag(bool *flag) {
#ifdef _OPENMP
#pragma omp atomic write
#endif
    *flag = true;
}

/* Out-of-memory inside a kernel: one message for all of them. */
ampc_status nn_nomem(ampc_op op);

#endif
