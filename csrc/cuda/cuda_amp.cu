/* cuda_amp.cu: AMP and MULTI_TENSOR on CUDA: GradScaler's unscale + inf/NaN check and scale
 * update, and the multi-tensor norm and scale behind clip_grad_norm_. The CPU kernels
 * (cpu/cpu_amp.c, cpu/cpu_multi_tensor.c) are the reference, element for element.
 *
 * Nothing here reads a device value on the host: inv_scale, found_inf, the clip coefficient and
 * the scaler's state are read and written by the kernels, so a training step stays sync-free.
 * The list kernels use the multi-tensor machinery of cuda_multi_tensor.cuh (one launch per
 * dtype present, more only when a list overflows the tensor table); a tensor that is not one
 * dense block (a slice of a larger grad) gets a strided launch of its own, as the CPU sends it
 * through its strided iterator. */
#include <math.h>

#include <type_traits>

#include "../core/amp_math.h"
#include "../core/kernel_args.h"
#include "cuda_multi_tensor.cuh"

namespace {

typedef ampc_mt_meta<1, ampc_mt_capacity<1>::value> meta1;

/* The floating dtypes a list may mix; each gets its own launches. */
const ampc_dtype kFloatingDtypes[] = {AMPC_FLOAT32, AMPC_FLOAT16, AMPC_BFLOAT16, AMPC_FLOAT64};

/* 128-bit accesses: 4 fp32, 8 fp16/bf16, 2 fp64. */
template <typename T> constexpr int vec_width() { return (int)(16 / sizeof(T)); }

/* Packs the dense tensors of dtype dt in the list (one pointer each) and runs launch per batch. */
template <typename Launch>
ampc_status for_dense_of_dtype(int n_list, ampc_tensor *const *list, ampc_dtype dt, Launch launch) {
    return ampc_mt_apply<1, ampc_mt_capacity<1>::value>(
        n_list,
        [&](int i, void **p, int64_t *n) {
            const ampc_tensor *t = list[i];
            if (t->dtype != dt || !ampc_mt_is_dense(t)) return false;
            p[0] = ampc_data_ptr(t);
            *n = ampc_numel(t);
            return true;
        },
        launch);
}

/* An in-place pass over every tensor of a list of mixed floating dtypes: dense(T *tag, meta, blocks)
 * launches the list kernel on each batch of dense tensors of dtype T (tag is a null T *), then
 * strided(T *base, layout, n) launches on each non-empty tensor that is not one dense block. */
template <typename Dense, typename Strided>
ampc_status for_each_in_place(const char *name, int n_list, ampc_tensor *const *list, Dense dense, Strided strided) {
    for (ampc_dtype dt : kFloatingDtypes) {
        AMPC_CUDA_SWITCH_FLOATING(dt, name, {
            AMPC_TRY(for_dense_of_dtype(n_list, list, dt, [&](const meta1 &m, int blocks, int64_t) -> ampc_status {
                return dense((scalar_t *)nullptr, m, blocks);
            }));
        })
    }
    for (int i = 0; i < n_list; i++) {
        ampc_tensor *t = list[i];
        int64_t n = ampc_numel(t);
        if (n == 0 || ampc_mt_is_dense(t)) continue;
        const ampc_cuda_layout layout = ampc_cuda_layout_of(t);
        AMPC_CUDA_SWITCH_FLOATING(t->dtype, name, { AMPC_TRY(strided((scalar_t *)ampc_data_ptr(t), layout, n)); })
    }
    return AMPC_OK;
}

/* The element type of a T * argument of dense/strided (a generic lambda's `auto *`). */
#define ELEM_T(ptr) typename std::remove_pointer<decltype(ptr)>::type

/* for_each_in_place with the launches every in-place list op makes: KERNEL<T>(meta, args...) on
 * each batch of dense tensors, STRIDED<T>(layout, n, base, args...) on each other tensor. */
#define LAUNCH_IN_PLACE(name, n_list, list, stream, KERNEL, STRIDED, ...)                                    \
    for_each_in_place(                                                                                        \
        name, n_list, list,                                                                                   \
        [&](auto *tag, const meta1 &m, int blocks) -> ampc_status {                                           \
            KERNEL<ELEM_T(tag)><<<blocks, AMPC_MT_THREADS, 0, stream>>>(m, __VA_ARGS__);                      \
            AMPC_CUDA_CHECK_LAUNCH();                                                                         \
            return AMPC_OK;                                                                                   \
        },                                                                                                    \
        [&](auto *base, const ampc_cuda_layout &layout, int64_t n) -> ampc_status {                           \
            STRIDED<ELEM_T(base)><<<ampc_cuda_blocks(n), AMPC_CUDA_THREADS, 0, stream>>>(layout, n, base,     \
                                                                                     __VA_ARGS__);            \
            AMPC_CUDA_CHECK_LAUNCH();                                                                         \
            return AMPC_OK;                                                                                   \
        })

/* ---------------------------------------------------------------- AMP_UNSCALE_CHECK */

/* x *= inv_scale in the grad's opmath (fp32; fp64 for fp64 grads), rounded once, and found_inf = 1
 * when any value was inf/NaN before scaling (the check looks at the stored value, as PyTorch's
 * kernel and the CPU one do). inv_scale == 1 (the check-only pass GradScaler runs for fp16 grads
 * under master weights) only reads: the values would not change. found_inf is a plain store of
 * 1.0f from any thread that saw a bad value: every writer writes the same value (as PyTorch). */
template <typename T>
__global__ void __launch_bounds__(AMPC_MT_THREADS)
    unscale_kernel(const __grid_constant__ meta1 m, const float *inv_scale, float *found_inf) {
    typedef ampc_opmath_t<T> V;
    constexpr int W = vec_width<T>();
    const ampc_mt_chunk c = ampc_mt_chunk_of(m, (int32_t)blockIdx.x);
    T *x = (T *)m.ptr[0][c.t] + c.start;
    const float inv_f = *inv_scale;
    const V inv = (V)inv_f;
    const bool write = inv_f != 1.0f;
    const bool vec = ampc_mt_aligned<W>(x);
    bool bad = false;
    for (int64_t i = (int64_t)threadIdx.x * W; i < c.n; i += (int64_t)blockDim.x * W) {
        V r[W];
        ampc_mt_load<W>(r, x, i, c.n, vec); /* lanes past the end read 0: finite */
#pragma unroll
        for (int w = 0; w < W; w++) {
            bad |= !isfinite(r[w]);
            r[w] = r[w] * inv;
        }
        if (write) ampc_mt_store<W>(x, r, i, c.n, vec);
    }
    if (bad) *found_inf = 1.0f;
}

/* The same for one strided grad (not a dense block: a slice of a larger tensor). */
template <typename T>
__global__ void unscale_strided_kernel(ampc_cuda_layout layout, int64_t n, T *base, const float *inv_scale,
                                       float *found_inf) {
    typedef ampc_opmath_t<T> V;
    const float inv_f = *inv_scale;
    const V inv = (V)inv_f;
    bool bad = false;
    AMPC_CUDA_KERNEL_LOOP(i, n) {
        const int64_t off = ampc_cuda_offset(layout, i);
        V v = ampc_load(base, off);
        bad |= !isfinite(v);
        if (inv_f != 1.0f) base[off] = ampc_convert<T>(v * inv);
    }
    if (bad) *found_inf = 1.0f;
}

ampc_status cuda_unscale_check(ampc_op op, const ampc_amp_unscale_args *a) {
    ampc_tensor *found = a->found_inf;
    ampc_cuda_guard guard(found);
    cudaStream_t stream = ampc_cuda_stream_of(found);
    float *found_inf = (float *)ampc_data_ptr(found);
    const float *inv_scale = (const float *)ampc_data_ptr(a->inv_scale);
    return LAUNCH_IN_PLACE(ampc_op_name(op), a->grads_n, a->grads, stream, unscale_kernel, unscale_strided_kernel,
                           inv_scale, found_inf);
}

/* ---------------------------------------------------------------- AMP_UPDATE_SCALE */

/* One thread: the rule of amp_math.h (shared with the CPU kernel) and the telemetry. */
__global__ void update_scale_kernel(float *scale, int32_t *tracker, const float *found_inf, double growth_factor,
                                    double backoff_factor, int64_t growth_interval, double min_scale,
                                    double max_scale, int64_t *stats, float *history, int64_t cap) {
    const float f = *found_inf;
    ampc_amp_update_scale_math(scale, tracker, f, growth_factor, backoff_factor, growth_interval, min_scale,
                               max_scale);
    if (stats) ampc_amp_record_stats(stats, history, cap, f, *scale);
}

ampc_status cuda_update_scale(ampc_op op, const ampc_amp_update_scale_args *a) {
    ampc_tensor *scale = a->scale;
    ampc_cuda_guard guard(scale);
    cudaStream_t stream = ampc_cuda_stream_of(scale);
    int64_t *stats = a->stats ? (int64_t *)ampc_data_ptr(a->stats) : NULL;
    float *history = a->stats && a->history ? (float *)ampc_data_ptr(a->history) : NULL;
    int64_t cap = history ? ampc_numel(a->history) : 0;
    update_scale_kernel<<<1, 1, 0, stream>>>((float *)ampc_data_ptr(scale), (int32_t *)ampc_data_ptr(a->growth_tracker),
                                             (const float *)ampc_data_ptr(a->found_inf), a->growth_factor,
                                             a->backoff_factor, a->growth_interval, a->min_scale, a->max_scale,
                                             stats, history, cap);
    AMPC_CUDA_CHECK_LAUNCH();
    return AMPC_OK;
}

/* ---------------------------------------------------------------- GRAD_NORM */

/* What is accumulated for each p (cpu_multi_tensor.c's kinds). */
enum norm_kind { NORM_ZERO, NORM_ONE, NORM_TWO, NORM_INF, NORM_NEG_INF, NORM_P };

norm_kind kind_of(double p) {
    if (p == 0.0) return NORM_ZERO;
    if (p == 1.0) return NORM_ONE;
    if (p == 2.0) return NORM_TWO;
    if (isinf(p)) return p > 0 ? NORM_INF : NORM_NEG_INF;
    return NORM_P;
}

template <int K> __device__ __forceinline__ double norm_identity() { return K == NORM_NEG_INF ? (double)INFINITY : 0.0; }

/* Two partial results combined; max and min let NaN win, as torch.linalg.vector_norm. */
template <int K> __device__ __forceinline__ double norm_combine(double m, double a) {
    if (K == NORM_INF) return (a > m || a != a) ? a : m;
    if (K == NORM_NEG_INF) return (a < m || a != a) ? a : m;
    return m + a;
}

/* One element's contribution (the CPU's per-element terms, in double). */
template <int K> __device__ __forceinline__ double norm_term(double v, double p) {
    if (K == NORM_TWO) return v * v;
    if (K == NORM_ZERO) return v != 0.0 ? 1.0 : 0.0; /* NaN counts, as torch's (x != 0).sum() */
    if (K == NORM_P) return pow(fabs(v), p);
    return fabs(v);
}

/* Block-wide combination (blockDim.x a multiple of 32); the result is valid in thread 0. A fixed
 * tree for a fixed block size, so results do not change from run to run. */
template <int K> __device__ __forceinline__ double norm_block_combine(double v, double *shared) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, n_warps = blockDim.x >> 5;
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v = norm_combine<K>(v, __shfl_xor_sync(0xffffffffu, v, o));
    if (lane == 0) shared[warp] = v;
    __syncthreads();
    if (warp == 0) {
        v = lane < n_warps ? shared[lane] : norm_identity<K>();
#pragma unroll
        for (int o = 16; o > 0; o >>= 1) v = norm_combine<K>(v, __shfl_xor_sync(0xffffffffu, v, o));
    }
    return v;
}

/* Stage 1: each block reduces its chunk in double into partial[blockIdx.x]. Double all the way
 * (the row's contract, and what the CPU does): fp16/bf16 norms beyond their range stay finite, and
 * the H200's fp64 rate keeps p = 1, 2, inf memory-bound. */
template <typename T, int K>
__global__ void __launch_bounds__(AMPC_MT_THREADS)
    norm_partial_kernel(const __grid_constant__ meta1 m, double p, double *partial) {
    __shared__ double shared[32];
    constexpr int W = vec_width<T>();
    const ampc_mt_chunk c = ampc_mt_chunk_of(m, (int32_t)blockIdx.x);
    const T *x = (const T *)m.ptr[0][c.t] + c.start;
    const bool vec = ampc_mt_aligned<W>(x);
    double acc = norm_identity<K>();
    for (int64_t i = (int64_t)threadIdx.x * W; i < c.n; i += (int64_t)blockDim.x * W) {
        double r[W];
        ampc_mt_load<W>(r, x, i, c.n, vec);
#pragma unroll
        for (int w = 0; w < W; w++)
            if (i + w < c.n) acc = norm_combine<K>(acc, norm_term<K>(r[w], p));
    }
    acc = norm_block_combine<K>(acc, shared);
    if (threadIdx.x == 0) partial[blockIdx.x] = acc;
}

/* Stage 2: one block combines the partials in a fixed order and finishes (sqrt, 1/p power). No
 * partials (every tensor empty) gives 0, whatever p, as on the CPU. */
template <int K>
__global__ void __launch_bounds__(AMPC_MT_THREADS)
    norm_final_kernel(const double *partial, int64_t n, double p, void *out, bool out_f64) {
    __shared__ double shared[32];
    double acc = norm_identity<K>();
    for (int64_t i = threadIdx.x; i < n; i += blockDim.x) acc = norm_combine<K>(acc, partial[i]);
    acc = norm_block_combine<K>(acc, shared);
    if (threadIdx.x == 0) {
        double r = n == 0 ? 0.0 : acc;
        if (K == NORM_TWO) r = sqrt(r);
        else if (K == NORM_P && n > 0) r = pow(r, 1.0 / p);
        if (out_f64) *(double *)out = r;
        else *(float *)out = (float)r;
    }
}

template <int K> ampc_status run_norm(ampc_op op, const ampc_grad_norm_args *a, double p) {
    const char *name = ampc_op_name(op);
    ampc_tensor *out = a->out;
    ampc_cuda_guard guard(out);
    cudaStream_t stream = ampc_cuda_stream_of(out);
    /* The frontend hands contiguous tensors only, so every one is a dense block. */
    int64_t total = ampc_mt_total_blocks(a->tensors_n, [&](int i) { return ampc_numel(a->tensors[i]); });
    ampc_cuda_scratch partial((int)out->device.index, (size_t)total * sizeof(double));
    if (!partial.ok()) return ampc_last_status();
    double *base = partial.as<double>();
    int64_t done = 0;
    for (ampc_dtype dt : kFloatingDtypes) {
        AMPC_CUDA_SWITCH_FLOATING(dt, name, {
            AMPC_TRY(for_dense_of_dtype(a->tensors_n, a->tensors, dt, [&](const meta1 &m, int blocks, int64_t) -> ampc_status {
                norm_partial_kernel<scalar_t, K><<<blocks, AMPC_MT_THREADS, 0, stream>>>(m, p, base + done);
                AMPC_CUDA_CHECK_LAUNCH();
                done += blocks;
                return AMPC_OK;
            }));
        })
    }
    if (done != total)
        return ampc_set_error(AMPC_E_RUNTIME, "%s: CUDA kernel expects contiguous tensors", name);
    norm_final_kernel<K><<<1, AMPC_MT_THREADS, 0, stream>>>(base, total, p, ampc_data_ptr(out),
                                                            out->dtype == AMPC_FLOAT64);
    AMPC_CUDA_CHECK_LAUNCH();
    return AMPC_OK;
}

ampc_status cuda_grad_norm(ampc_op op, const ampc_grad_norm_args *a) {
    double p = a->p;
    switch (kind_of(p)) {
    case NORM_ZERO: return run_norm<NORM_ZERO>(op, a, p);
    case NORM_ONE: return run_norm<NORM_ONE>(op, a, p);
    case NORM_TWO: return run_norm<NORM_TWO>(op, a, p);
    case NORM_INF: return run_norm<NORM_INF>(op, a, p);
    case NORM_NEG_INF: return run_norm<NORM_NEG_INF>(op, a, p);
    default: return run_norm<NORM_P>(op, a, p);
    }
}

/* ---------------------------------------------------------------- GRAD_SCALE */

/* x *= scale, the product in fp32 (fp64 for fp64 tensors), rounded once. The scale (one element
 * of any floating dtype: clip_grad_norm_'s coefficient) is read by the kernel. */
template <typename T>
__global__ void __launch_bounds__(AMPC_MT_THREADS)
    scale_kernel(const __grid_constant__ meta1 m, const void *scale, int scale_dtype) {
    typedef ampc_opmath_t<T> V;
    constexpr int W = vec_width<T>();
    const ampc_mt_chunk c = ampc_mt_chunk_of(m, (int32_t)blockIdx.x);
    T *x = (T *)m.ptr[0][c.t] + c.start;
    const V f = (V)ampc_load_dyn<double>(scale, scale_dtype, 0);
    const bool vec = ampc_mt_aligned<W>(x);
    for (int64_t i = (int64_t)threadIdx.x * W; i < c.n; i += (int64_t)blockDim.x * W) {
        V r[W];
        ampc_mt_load<W>(r, x, i, c.n, vec);
#pragma unroll
        for (int w = 0; w < W; w++) r[w] = r[w] * f;
        ampc_mt_store<W>(x, r, i, c.n, vec);
    }
}

template <typename T>
__global__ void scale_strided_kernel(ampc_cuda_layout layout, int64_t n, T *base, const void *scale,
                                     int scale_dtype) {
    typedef ampc_opmath_t<T> V;
    const V f = (V)ampc_load_dyn<double>(scale, scale_dtype, 0);
    AMPC_CUDA_KERNEL_LOOP(i, n) {
        const int64_t off = ampc_cuda_offset(layout, i);
        base[off] = ampc_convert<T>(ampc_load(base, off) * f);
    }
}

ampc_status cuda_grad_scale(ampc_op op, const ampc_grad_scale_args *a) {
    if (a->tensors_n == 0) return AMPC_OK;
    ampc_cuda_guard guard(a->tensors[0]);
    cudaStream_t stream = ampc_cuda_stream_of(a->tensors[0]);
    const void *scale = ampc_data_ptr(a->scale);
    const int scale_dtype = (int)a->scale->dtype;
    return LAUNCH_IN_PLACE(ampc_op_name(op), a->tensors_n, a->tensors, stream, scale_kernel, scale_strided_kernel, scale,
                           scale_dtype);
}

#undef LAUNCH_IN_PLACE
#undef ELEM_T

} // namespace

extern "C" void ampc_cuda_register_amp(void) {
    ampc_register_amp_unscale(AMPC_CUDA, cuda_unscale_check);
    ampc_register_amp_update_scale(AMPC_CUDA, cuda_update_scale);
    ampc_register_grad_norm(AMPC_CUDA, cuda_grad_norm);
    ampc_register_grad_scale(AMPC_CUDA, cuda_grad_scale);
}
