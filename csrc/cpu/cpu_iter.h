/* cpu_iter.h: the strided, broadcasting N-d loop behind every CPU elementwise kernel.
 *
 * ampc_cpu_iter_init takes the output and the inputs (inputs broadcast to the output's shape),
 * turns every stride into bytes, drops size-1 dims and merges dims that are contiguous with each
 * other in all operands, so most calls become a single 1-d loop. ampc_cpu_iter_run then calls
 * an inner-loop function once per innermost row; that function gets one data pointer and one
 * byte stride per operand (output first) and can take a fast path when the strides equal the
 * item sizes (contiguous) or are 0 (a broadcast scalar). Large iterations are split across
 * OpenMP threads by rows. */
#ifndef AMPC_CPU_ITER_H
#define AMPC_CPU_ITER_H

#include "../core/dispatch.h"

#ifdef __cplusplus
extern "C" {
#endif

#define AMPC_ITER_MAX_OPERANDS AMPC_MAX_KERNEL_TENSORS

typedef struct ampc_cpu_iter {
    int n_operands; /* output(s) first, then inputs */
    char *data[AMPC_ITER_MAX_OPERANDS];
    int ndim; /* after coalescing; >= 1 */
    int64_t shape[AMPC_MAX_DIMS];
    int64_t strides[AMPC_ITER_MAX_OPERANDS][AMPC_MAX_DIMS]; /* bytes */
    int64_t numel;
} ampc_cpu_iter;

/* data: one pointer per operand; strides: inner byte stride per operand; n: elements. */
typedef void (*ampc_cpu_loop_fn)(char **data, const int64_t *strides, int64_t n, const void *ctx);

/* Operands: n_out outputs (all of the iteration shape) then n_in inputs (broadcastable to it). */
ampc_status ampc_cpu_iter_init(ampc_cpu_iter *it, int n_out, ampc_tensor *const *outs, int n_in,
                               const ampc_tensor *const *ins);
void ampc_cpu_iter_run(const ampc_cpu_iter *it, ampc_cpu_loop_fn fn, const void *ctx);
/* The same loop on the calling thread, in row-major order: for kernels whose elements may write
 * the same memory (scatter-add with repeated indices), where threads would race. */
void ampc_cpu_iter_run_serial(const ampc_cpu_iter *it, ampc_cpu_loop_fn fn, const void *ctx);

/* True when the inner strides of all operands equal their item sizes. */
static inline int ampc_cpu_all_contiguous(const int64_t *strides, const int64_t *itemsizes, int n) {
    for (int i = 0; i < n; i++)
        if (strides[i] != itemsizes[i]) return 0;
    return 1;
}

#ifdef __cplusplus
}
#endif
#endif
