/* cuda_backend.h: what the CUDA backend exports: its start-up hook (called by core/backends.c),
 * device queries for the binding (python/py_cuda.c), and the kernel launchers the .cu files
 * provide to the host code in cuda_runtime.c.
 *
 * Only compiled into builds made with nvcc (AMPC_WITH_CUDA). Everything here works, and reports
 * zero devices, on a machine without a driver or GPU. */
#ifndef AMPC_CUDA_BACKEND_H
#define AMPC_CUDA_BACKEND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../core/dispatch.h"

#ifdef __cplusplus
extern "C" {
#endif

#define AMPC_CUDA_MAX_DEVICES 64

/* ---- cuda_runtime.c ---- */
void ampc_cuda_register(void);
int ampc_cuda_device_count(void); /* 0 without a driver or GPU */
/* Name of device `index` ("NVIDIA H100 80GB HBM3"), or an error naming the problem. */
ampc_status ampc_cuda_device_name(int index, char *buf, size_t cap);
/* Waits for all work on GPU `index` (< 0: the current one), then raises a kernel's deferred
 * error (ampc_cuda_check_deferred_error). */
ampc_status ampc_cuda_synchronize(int index);
ampc_status ampc_cuda_set_device(int index);
int ampc_cuda_current_device(void);
/* Checks that CUDA is usable for `op` (a GPU exists) and the index is valid. */
ampc_status ampc_cuda_check(const char *op, int index);

/* Records a failed CUDA call (err: a cudaError_t) as an ampc error naming the call, file and
 * line, clears CUDA's sticky last error, and returns the status. */
ampc_status ampc_cuda_error(int err, const char *call, const char *file, int line);

/* ---- streams (cuda_stream.c) ----
 * Every op runs on the current stream of its device (a cudaStream_t; NULL is the legacy default
 * stream, the start-up value). ampc.cuda.Stream and the `with ampc.cuda.stream(s)` context
 * change it. */
void *ampc_cuda_current_stream(int device);
void ampc_cuda_set_current_stream(int device, void *stream);
/* For ampc.cuda.Stream and Event (python/py_cuda.c). Streams come from a per-device pool
 * (never destroyed); the priority is clamped to the device's range. */
ampc_status ampc_cuda_priority_range(int device, int *least, int *greatest);
ampc_status ampc_cuda_stream_create(int device, int priority, void **stream);
ampc_status ampc_cuda_stream_synchronize(int device, void *stream);
ampc_status ampc_cuda_stream_query(int device, void *stream, bool *done);
ampc_status ampc_cuda_stream_priority(int device, void *stream, int *priority);
ampc_status ampc_cuda_stream_wait_event(int device, void *stream, void *event);
ampc_status ampc_cuda_event_create(int device, bool enable_timing, bool blocking, void **event);
void ampc_cuda_event_destroy(int device, void *event);
ampc_status ampc_cuda_event_record(void *event, int device, void *stream);
ampc_status ampc_cuda_event_synchronize(void *event);
ampc_status ampc_cuda_event_query(void *event, bool *done);
ampc_status ampc_cuda_event_elapsed_time(void *start, void *end, float *ms); /* waits for both */

/* ---- scratch memory (cuda_allocator.c) ----
 * Temporary device buffers for kernels (multi-block reductions, workspaces), from the caching
 * allocator on the current stream: free them right after the launches that use them (the
 * allocator only hands a freed block to later work on the same stream). alloc returns NULL
 * with the error set (OutOfMemoryError) on failure. */
void *ampc_cuda_scratch_alloc(int device, size_t nbytes);
void ampc_cuda_scratch_free(int device, void *ptr, size_t nbytes);
ampc_status ampc_cuda_mem_get_info(int device, size_t *free_bytes, size_t *total_bytes);

/* ---- host<->device transfers (cuda_runtime.c, cuda_allocator.c) ----
 * The rules every COPY kernel keeps for copies between host and device (PyTorch's): the
 * transfer runs on the current stream of the GPU side (cudaMemcpyAsync). COPY's non_blocking field
 * (ops.def) says whether the caller asked for it. Then:
 * - to the host: ampc_cuda_finish_to_host(device) (waits for the stream, then raises a deferred
 *   kernel error), unless non_blocking and the destination's storage is pinned;
 * - from the host: non_blocking from pinned storage returns at once; anything else waits for the
 *   stream (pageable memory may change or be freed as soon as the call returns);
 * - whenever a transfer from/to pinned storage is left running, ampc_cuda_pinned_record_use
 *   tells the pinned allocator, which then does not reuse the block before it completes. */
ampc_status ampc_cuda_finish_to_host(int device);
void ampc_cuda_pinned_record_use(const ampc_storage *s, int device, void *stream);

/* ---- deferred device-side errors (cuda_runtime.c) ----
 * A kernel cannot raise without a host synchronisation, so kernels that validate data (an
 * index out of range) write a code into the device's error word instead of trapping:
 * atomicCAS(word, 0, code) with code = AMPC_CUDA_ERR_INDEX * 65536 + op. The runtime reads
 * the word at each synchronising point (copy to the host, synchronize, item) and raises then,
 * naming the op, as PyTorch's device-side asserts surface at the next synchronisation.
 * ampc_cuda_error_word allocates the word on its first call (host side, before a launch);
 * checks cost nothing until then. */
enum {
    AMPC_CUDA_ERR_INDEX = 1,
    AMPC_CUDA_ERR_ZERO_DIVISION = 2, /* integer division/remainder by zero (cuda_elementwise.cu):
                                       raise "ZeroDivisionError" as the CPU kernel does */
    AMPC_CUDA_ERR_VALUE = 3 /* a value outside the op's domain (cuda_nn_loss.cu: binary_cross_entropy's
                               input not in [0, 1]): raise RuntimeError "all elements of input should
                               be between 0 and 1" as the CPU kernel does */
};
int *ampc_cuda_error_word(int device);          /* device pointer */
ampc_status ampc_cuda_check_deferred_error(int device); /* reads and clears the word */

/* ---- kernel families: each .cu file registers its ops (called by ampc_cuda_register) ---- */
void ampc_cuda_register_copy(void);         /* cuda_copy.cu: COPY, FILL */
void ampc_cuda_register_elementwise(void);  /* cuda_elementwise.cu: UNARY, BINARY, COMPARE, TERNARY */
void ampc_cuda_register_reduce(void);       /* cuda_reduce.cu: REDUCE, SCAN */
void ampc_cuda_register_gemm(void);         /* cuda_gemm.cu: GEMM (cuBLASLt) */
void ampc_cuda_register_index(void);        /* cuda_index.cu: INDEX, EMBEDDING, EMBEDDING_BACKWARD */
void ampc_cuda_register_shape(void);        /* cuda_shape.cu: tril/triu */
void ampc_cuda_register_random(void);       /* cuda_random.cu: RANDOM, DROPOUT, MASKED_SCALE */
void ampc_cuda_register_sampling(void);     /* cuda_sampling.cu: the sampling ops of issue 12 */
void ampc_cuda_register_nn_conv_pool(void); /* cuda_nn_conv_pool.cu: IM2COL, COL2IM, pools */
void ampc_cuda_register_nn_norm(void);      /* cuda_nn_norm.cu: batch, layer, group norm */
void ampc_cuda_register_nn_softmax(void);   /* cuda_nn_softmax.cu: the softmax family */
void ampc_cuda_register_nn_loss_class(void); /* cuda_nn_loss_class.cu: cross entropy, nll */
void ampc_cuda_register_nn_loss(void);      /* cuda_nn_loss.cu: the elementwise losses and their backward */
void ampc_cuda_register_nn_pad(void);       /* cuda_nn_pad.cu: the pad rows (issue 13, conv) */
void ampc_cuda_register_nn_poolnorm(void);  /* cuda_nn_poolnorm.cu: pool3d rows (3-d, adaptive max pools), rms_norm */
void ampc_cuda_register_nn_vol2col(void);   /* cuda_nn_vol2col.cu: VOL2COL, COL2VOL (issue 13, conv) */
void ampc_cuda_register_nn_resample(void);  /* cuda_nn_resample.cu: the interpolate rows (issue 13, conv) */
void ampc_cuda_register_amp(void);          /* cuda_amp.cu: AMP, MULTI_TENSOR */
void ampc_cuda_register_optim(void);        /* cuda_optim.cu: OPTIM */
void ampc_cuda_register_nn_rnn(void);       /* cuda_nn_rnn.cu: the fused LSTM/GRU cells (issue 13) */
void ampc_cuda_register_sort(void);         /* cuda_sort.cu: SORT (sorting and selection) */
void ampc_cuda_register_nn_loss_ctc(void);  /* cuda_nn_loss_ctc.cu: ctc_loss (issue 13, loss) */
void ampc_cuda_register_nn_pdist(void);     /* cuda_nn_pdist.cu: pdist (issue 13, loss) */
void ampc_cuda_register_nn_attn(void);      /* cuda_nn_attn.cu: SDPA_FLASH (+ backward), issue 13 attn */

/* ---- cuda_gemm.cu: counters of the paths the GEMM kernel took, for tests and benchmarks
 * (ampc._C._cuda_gemm_stats, whose names follow this order) ---- */
enum {
    AMPC_CUDA_GEMM_CALLS, AMPC_CUDA_GEMM_LT_CALLS, AMPC_CUDA_GEMM_BIAS_EPILOGUE, AMPC_CUDA_GEMM_C_INPUT,
    AMPC_CUDA_GEMM_C_COPIED, AMPC_CUDA_GEMM_PACKED, AMPC_CUDA_GEMM_HEURISTIC, AMPC_CUDA_GEMM_CACHE_HITS,
    AMPC_CUDA_GEMM_GENERIC_KERNEL, AMPC_CUDA_GEMM_TF32, AMPC_CUDA_GEMM_NUM_STATS
};
/* Copies the counters into out[AMPC_CUDA_GEMM_NUM_STATS]; `reset` zeroes them afterwards. */
void ampc_cuda_gemm_stats(int64_t *out, int reset);
/* cuda_blaslt.cu: frees the cuBLASLt workspaces kept per (device, stream); the next GEMM on a
 * stream allocates its workspace again. */
void ampc_cuda_gemm_clear_workspaces(void);

/* ---- host <-> device bytes (cuda_copy.cu) ----
 * Contiguous bytes between host memory and GPU `device`, on its current stream, with the waiting
 * rules above: `host` is the storage the host bytes live in (NULL: plain pageable memory);
 * with non_blocking and pinned `host` storage the call returns at once (the pinned allocator is
 * told of the use); otherwise upload waits for the stream and download finishes with
 * ampc_cuda_finish_to_host (wait, then raise a deferred kernel error). */
ampc_status ampc_cuda_upload(void *dst, const void *src, size_t nbytes, int device, const ampc_storage *host,
                             bool non_blocking);
ampc_status ampc_cuda_download(void *dst, const void *src, size_t nbytes, int device, const ampc_storage *host,
                               bool non_blocking);

/* ---- strided layouts for simple kernels (cuda_layout.cuh) ---- */

/* An output's layout for kernels that write through strides (elements, row-major order). */
typedef struct ampc_cuda_layout {
    int32_t ndim;
    int32_t contiguous;
    int64_t shape[AMPC_MAX_DIMS];
    int64_t strides[AMPC_MAX_DIMS];
} ampc_cuda_layout;

ampc_cuda_layout ampc_cuda_layout_of(const ampc_tensor *t);

#ifdef __cplusplus
}
#endif
#endif
