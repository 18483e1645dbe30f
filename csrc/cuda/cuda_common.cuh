/* cuda_common.cuh: what every CUDA kernel file shares: error handling that turns a failed CUDA
 * call into an ampc error, the device guard and current stream, storage types and "opmath"
 * types per dtype, loads and stores that round once, the dtype switch, launch sizes, and the
 * strided offset calculator for N operands.
 *
 * Storage types on the device are CUDA's own: __half and __nv_bfloat16 (distinct C++ types, so
 * templates can tell them apart; ampc_half and ampc_bfloat16 are both uint16_t). Their
 * conversions are the hardware's round-to-nearest-even, bit-identical to core/half.h's
 * (overflow to inf, subnormals kept), so CPU and GPU store the same bits. */
#ifndef AMPC_CUDA_COMMON_CUH
#define AMPC_CUDA_COMMON_CUH

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <stdint.h>
#include <string.h>

#include "../core/ampc.h"
#include "../cpu/cpu_iter.h"
#include "cuda_backend.h"
#include "cuda_host.h" /* AMPC_CUDA_TRY, the device switch */
#include "cuda_layout.cuh"

/* ---------------------------------------------------------------- errors */

/* After a <<<...>>> launch: a bad configuration shows up here, without synchronising. */
#define AMPC_CUDA_CHECK_LAUNCH() AMPC_CUDA_TRY(cudaGetLastError())

/* ---------------------------------------------------------------- device and stream */

/* Makes the tensor's GPU current for the scope and restores the previous one on exit. */
struct ampc_cuda_guard {
    int prev, index;
    explicit ampc_cuda_guard(int idx) : prev(ampc_cuda_enter_device(idx)), index(idx) {}
    explicit ampc_cuda_guard(const ampc_tensor *t) : ampc_cuda_guard((int)t->device.index) {}
    ~ampc_cuda_guard() { ampc_cuda_leave_device(prev, index); }
    ampc_cuda_guard(const ampc_cuda_guard &) = delete;
    ampc_cuda_guard &operator=(const ampc_cuda_guard &) = delete;
};

/* The current stream of a tensor's GPU: every kernel of an op runs there. */
static inline cudaStream_t ampc_cuda_stream_of(const ampc_tensor *t) {
    return (cudaStream_t)ampc_cuda_current_stream((int)t->device.index);
}

/* Stream-ordered scratch memory from the caching allocator (freed blocks are reused only by
 * later work on the same stream, so freeing right after the launches that use it is safe). */
struct ampc_cuda_scratch {
    void *ptr;
    size_t nbytes;
    int device;
    ampc_cuda_scratch(int dev, size_t n) : ptr(nullptr), nbytes(n), device(dev) {
        ptr = ampc_cuda_scratch_alloc(dev, n);
    }
    ~ampc_cuda_scratch() {
        if (ptr) ampc_cuda_scratch_free(device, ptr, nbytes);
    }
    bool ok() const { return ptr != nullptr || nbytes == 0; }
    template <typename T> T *as() const { return (T *)ptr; }
    ampc_cuda_scratch(const ampc_cuda_scratch &) = delete;
    ampc_cuda_scratch &operator=(const ampc_cuda_scratch &) = delete;
};

/* ---------------------------------------------------------------- types */

/* The type arithmetic runs in: float for float32/float16/bfloat16 (PyTorch's "opmath", rounded
 * once on store), double for float64, the type itself for integers and bool. */
template <typename T> struct ampc_opmath { typedef T type; };
template <> struct ampc_opmath<__half> { typedef float type; };
template <> struct ampc_opmath<__nv_bfloat16> { typedef float type; };
template <typename T> using ampc_opmath_t = typename ampc_opmath<T>::type;

/* Converts any storage or arithmetic value to To, rounding once (through float for half types,
 * as the CPU's STORE macros do; float -> int truncates as C does). */
template <typename To> struct ampc_cvt {
    template <typename From> __device__ __forceinline__ static To from(From v) { return (To)v; }
    __device__ __forceinline__ static To from(__half v) { return (To)__half2float(v); }
    __device__ __forceinline__ static To from(__nv_bfloat16 v) { return (To)__bfloat162float(v); }
};
template <> struct ampc_cvt<bool> {
    template <typename From> __device__ __forceinline__ static bool from(From v) { return v != (From)0; }
    __device__ __forceinline__ static bool from(__half v) { return __half2float(v) != 0.0f; }
    __device__ __forceinline__ static bool from(__nv_bfloat16 v) { return __bfloat162float(v) != 0.0f; }
};
template <> struct ampc_cvt<__half> {
    template <typename From> __device__ __forceinline__ static __half from(From v) { return __float2half_rn((float)v); }
    /* double -> half through float double-rounds, exactly as the CPU does (half.h goes through fp32). */
    __device__ __forceinline__ static __half from(__half v) { return v; }
    __device__ __forceinline__ static __half from(__nv_bfloat16 v) { return __float2half_rn(__bfloat162float(v)); }
};
template <> struct ampc_cvt<__nv_bfloat16> {
    template <typename From> __device__ __forceinline__ static __nv_bfloat16 from(From v) {
        return __float2bfloat16_rn((float)v);
    }
    __device__ __forceinline__ static __nv_bfloat16 from(__nv_bfloat16 v) { return v; }
    __device__ __forceinline__ static __nv_bfloat16 from(__half v) { return __float2bfloat16_rn(__half2float(v)); }
};
/* Integer targets from floating values go through int64 first, as the CPU's STORE macros do
 * ((int32_t)(int64_t)v), so out-of-range values wrap the same way on both devices. */
template <> struct ampc_cvt<int32_t> {
    template <typename From> __device__ __forceinline__ static int32_t from(From v) { return (int32_t)(int64_t)v; }
    __device__ __forceinline__ static int32_t from(__half v) { return (int32_t)(int64_t)__half2float(v); }
    __device__ __forceinline__ static int32_t from(__nv_bfloat16 v) { return (int32_t)(int64_t)__bfloat162float(v); }
};
template <> struct ampc_cvt<uint8_t> {
    template <typename From> __device__ __forceinline__ static uint8_t from(From v) { return (uint8_t)(int64_t)v; }
    __device__ __forceinline__ static uint8_t from(__half v) { return (uint8_t)(int64_t)__half2float(v); }
    __device__ __forceinline__ static uint8_t from(__nv_bfloat16 v) { return (uint8_t)(int64_t)__bfloat162float(v); }
};

template <typename To, typename From> __device__ __forceinline__ To ampc_convert(From v) {
    return ampc_cvt<To>::from(v);
}

/* Reads element `off` of storage type T as its opmath type. */
template <typename T> __device__ __forceinline__ ampc_opmath_t<T> ampc_load(const T *p, int64_t off) {
    return ampc_convert<ampc_opmath_t<T>>(p[off]);
}

/* Reads an element of a tensor whose dtype is known only at run time, as V (for kernels that
 * take mixed dtypes: fp16 input with fp32 weight, int32 or int64 indices). */
template <typename V> __device__ __forceinline__ V ampc_load_dyn(const void *base, int dtype, int64_t off) {
    switch (dtype) {
    case AMPC_FLOAT32: return ampc_convert<V>(((const float *)base)[off]);
    case AMPC_FLOAT16: return ampc_convert<V>(((const __half *)base)[off]);
    case AMPC_BFLOAT16: return ampc_convert<V>(((const __nv_bfloat16 *)base)[off]);
    case AMPC_FLOAT64: return ampc_convert<V>(((const double *)base)[off]);
    case AMPC_INT64: return ampc_convert<V>(((const int64_t *)base)[off]);
    case AMPC_INT32: return ampc_convert<V>(((const int32_t *)base)[off]);
    case AMPC_UINT8: return ampc_convert<V>(((const uint8_t *)base)[off]);
    default: return ampc_convert<V>(((const bool *)base)[off]);
    }
}
template <typename V> __device__ __forceinline__ void ampc_store_dyn(void *base, int dtype, int64_t off, V v) {
    switch (dtype) {
    case AMPC_FLOAT32: ((float *)base)[off] = ampc_convert<float>(v); break;
    case AMPC_FLOAT16: ((__half *)base)[off] = ampc_convert<__half>(v); break;
    case AMPC_BFLOAT16: ((__nv_bfloat16 *)base)[off] = ampc_convert<__nv_bfloat16>(v); break;
    case AMPC_FLOAT64: ((double *)base)[off] = ampc_convert<double>(v); break;
    case AMPC_INT64: ((int64_t *)base)[off] = ampc_convert<int64_t>(v); break;
    case AMPC_INT32: ((int32_t *)base)[off] = ampc_convert<int32_t>(v); break;
    case AMPC_UINT8: ((uint8_t *)base)[off] = ampc_convert<uint8_t>(v); break;
    default: ((bool *)base)[off] = ampc_convert<bool>(v); break;
    }
}

/* The dtype switches, one for every per-dtype launch: each runs the statements with a type bound
 * to `dtype` (the statements may `return`: `return run<scalar_t>(args);` is a launcher per dtype).
 *   AMPC_CUDA_SWITCH_FLOATING(dt, what, { ... })  scalar_t: float32, float16, bfloat16, float64
 *   AMPC_CUDA_SWITCH_ALL(dt, what, { ... })       scalar_t: every dtype
 *   AMPC_CUDA_SWITCH_BITS(dt, what, { ... })      bits_t: the unsigned integer of dt's item size,
 *       for kernels that only move bits (copies, fills, gathers), so one instantiation serves
 *       every dtype of a size
 * Any other dtype makes the enclosing function return an error naming `what`. */
#define AMPC_CUDA_CASE_(LABEL, NAME, T, ...) \
    case LABEL: {                            \
        typedef T NAME;                      \
        __VA_ARGS__                          \
    } break;
#define AMPC_CUDA_UNSUPPORTED_(dtype, what)                                                  \
    return ampc_set_error(AMPC_E_TYPE, "%s: CUDA kernel does not support dtype %s", what,  \
                          ampc_dtype_name((ampc_dtype)(dtype)))
#define AMPC_CUDA_FLOATING_CASES_(...)                                  \
    AMPC_CUDA_CASE_(AMPC_FLOAT32, scalar_t, float, __VA_ARGS__)         \
    AMPC_CUDA_CASE_(AMPC_FLOAT16, scalar_t, __half, __VA_ARGS__)        \
    AMPC_CUDA_CASE_(AMPC_BFLOAT16, scalar_t, __nv_bfloat16, __VA_ARGS__) \
    AMPC_CUDA_CASE_(AMPC_FLOAT64, scalar_t, double, __VA_ARGS__)
#define AMPC_CUDA_SWITCH_FLOATING(dtype, what, ...)  \
    switch ((int)(dtype)) {                          \
        AMPC_CUDA_FLOATING_CASES_(__VA_ARGS__)       \
    default: AMPC_CUDA_UNSUPPORTED_(dtype, what);    \
    }
static_assert(AMPC_NUM_DTYPES == 8, "AMPC_CUDA_SWITCH_ALL names every dtype: add the new one");
#define AMPC_CUDA_SWITCH_ALL(dtype, what, ...)                         \
    switch ((int)(dtype)) {                                            \
        AMPC_CUDA_FLOATING_CASES_(__VA_ARGS__)                         \
        AMPC_CUDA_CASE_(AMPC_INT64, scalar_t, int64_t, __VA_ARGS__)    \
        AMPC_CUDA_CASE_(AMPC_INT32, scalar_t, int32_t, __VA_ARGS__)    \
        AMPC_CUDA_CASE_(AMPC_UINT8, scalar_t, uint8_t, __VA_ARGS__)    \
        AMPC_CUDA_CASE_(AMPC_BOOL, scalar_t, bool, __VA_ARGS__)        \
    default: AMPC_CUDA_UNSUPPORTED_(dtype, what);                      \
    }
#define AMPC_CUDA_SWITCH_BITS(dtype, what, ...)                \
    switch ((int)ampc_dtype_itemsize((ampc_dtype)(dtype))) {   \
        AMPC_CUDA_CASE_(1, bits_t, uint8_t, __VA_ARGS__)       \
        AMPC_CUDA_CASE_(2, bits_t, uint16_t, __VA_ARGS__)      \
        AMPC_CUDA_CASE_(4, bits_t, uint32_t, __VA_ARGS__)      \
        AMPC_CUDA_CASE_(8, bits_t, uint64_t, __VA_ARGS__)      \
    default: AMPC_CUDA_UNSUPPORTED_(dtype, what);              \
    }

/* ---------------------------------------------------------------- strided operands */

/* Up to AMPC_CUDA_MAX_OPERANDS tensors iterated together over one shape (outputs first, inputs
 * broadcast to it), with size-1 dims dropped and dims contiguous in every operand merged, so
 * most calls are 1-d. Built on the host by ampc_cuda_indexer_init from the CPU iterator's
 * geometry (one set of broadcasting rules), passed by value to kernels. Strides are in
 * elements of each operand's own dtype; element i is the i-th in row-major order. */
#define AMPC_CUDA_MAX_OPERANDS 4
struct ampc_cuda_indexer {
    int32_t ndim;       /* after coalescing, >= 1 */
    int32_t n_operands;
    int32_t contiguous; /* every operand dense over the iteration: offset == i for all */
    int64_t numel;
    int64_t shape[AMPC_MAX_DIMS];                           /* innermost last */
    int64_t strides[AMPC_CUDA_MAX_OPERANDS][AMPC_MAX_DIMS]; /* elements; 0 where broadcast */

    /* Element offsets of linear (row-major) index i in every operand. */
    __device__ __forceinline__ void offsets(int64_t i, int64_t *off) const {
        if (contiguous) {
            for (int k = 0; k < AMPC_CUDA_MAX_OPERANDS; k++) off[k] = i;
            return;
        }
        for (int k = 0; k < AMPC_CUDA_MAX_OPERANDS; k++) off[k] = 0;
        for (int d = ndim - 1; d >= 0; d--) {
            int64_t q = i / shape[d], r = i - q * shape[d];
            i = q;
            for (int k = 0; k < AMPC_CUDA_MAX_OPERANDS; k++) off[k] += r * strides[k][d];
        }
    }
};

/* Fills ix for n_out outputs and n_in inputs (n_out + n_in <= AMPC_CUDA_MAX_OPERANDS). */
static inline ampc_status ampc_cuda_indexer_init(ampc_cuda_indexer *ix, int n_out, ampc_tensor *const *outs,
                                                 int n_in, const ampc_tensor *const *ins) {
    if (n_out + n_in > AMPC_CUDA_MAX_OPERANDS)
        return ampc_set_error(AMPC_E_RUNTIME, "CUDA indexer: %d operands (at most %d)", n_out + n_in,
                              AMPC_CUDA_MAX_OPERANDS);
    ampc_cpu_iter it;
    AMPC_TRY(ampc_cpu_iter_init(&it, n_out, outs, n_in, ins));
    memset(ix, 0, sizeof *ix);
    ix->ndim = it.ndim;
    ix->n_operands = it.n_operands;
    ix->numel = it.numel;
    ix->contiguous = it.ndim == 1;
    for (int k = 0; k < it.n_operands; k++) {
        const ampc_tensor *t = k < n_out ? outs[k] : ins[k - n_out];
        int64_t item = (int64_t)ampc_dtype_itemsize(t->dtype);
        for (int d = 0; d < it.ndim; d++) ix->strides[k][d] = it.strides[k][d] / item;
        if (it.ndim != 1 || ix->strides[k][0] != 1) ix->contiguous = 0;
    }
    for (int d = 0; d < it.ndim; d++) ix->shape[d] = it.shape[d];
    if (it.numel <= 1) ix->contiguous = 1; /* one element: offset 0 everywhere */
    return AMPC_OK;
}

/* ---------------------------------------------------------------- launches */

/* Grid-stride loop over [0, n). */
#define AMPC_CUDA_KERNEL_LOOP(i, n) \
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < (n); i += (int64_t)gridDim.x * blockDim.x)

/* Full-warp sum and max (every lane gets the same result; max propagates NaN). */
template <typename T> __device__ __forceinline__ T ampc_warp_sum(T v) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}
template <typename T> __device__ __forceinline__ T ampc_warp_max(T v) {
    for (int o = 16; o > 0; o >>= 1) {
        T w = __shfl_xor_sync(0xffffffffu, v, o);
        v = (w > v || w != w) ? w : v; /* NaN wins, so every lane ends with the same value */
    }
    return v;
}
/* Block-wide sum of one value per thread (blockDim.x a multiple of 32, <= 1024); every thread
 * gets the result. `shared` holds at least 32 T. */
template <typename T> __device__ __forceinline__ T ampc_block_sum(T v, T *shared) {
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, n_warps = (blockDim.x + 31) >> 5;
    v = ampc_warp_sum(v);
    __syncthreads(); /* shared may still be read by a previous call */
    if (lane == 0) shared[warp] = v;
    __syncthreads();
    v = lane < n_warps ? shared[lane] : (T)0;
    return ampc_warp_sum(v);
}

#endif
