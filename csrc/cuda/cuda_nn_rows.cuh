/* cuda_nn_rows.cuh: what the CUDA softmax and loss kernels share (cuda_nn_softmax.cu,
 * cuda_nn_loss.cu):
 *   - operands whose dtype is a template parameter, or known only at run time (nn_dyn);
 *   - rows reduced by a group of threads: one thread, one warp or one whole block per row;
 *   - the running (max, sum of exp) pair of an online softmax and its merge;
 *   - chunked walks over a row that use 128-bit accesses for the row's aligned middle;
 *   - the deterministic two-stage sum behind every reduced loss (per-block partials, then one
 *     block), never float atomics.
 * Every reduction here runs in an order fixed by the launch configuration and the data's
 * alignment, so a result does not change from run to run. */
#ifndef AMPC_CUDA_NN_ROWS_CUH
#define AMPC_CUDA_NN_ROWS_CUH

#include <math.h>

#include "cuda_common.cuh"

/* ---------------------------------------------------------------- operands */

/* Tag type: an operand whose dtype is known only at run time (ampc_load_dyn / ampc_store_dyn). */
struct nn_dyn {};

/* The arithmetic type of a kernel: float for fp32/fp16/bf16 storage, double for fp64 and for
 * run-time dtypes (which may be fp64; the rare mixed-dtype calls take the slower exact path). */
template <typename T> struct nn_acc { typedef float type; };
template <> struct nn_acc<double> { typedef double type; };
template <> struct nn_acc<nn_dyn> { typedef double type; };
template <typename A, typename B> struct nn_wider { typedef double type; };
template <> struct nn_wider<float, float> { typedef float type; };
template <typename TI, typename TO>
using nn_acc2_t = typename nn_wider<typename nn_acc<TI>::type, typename nn_acc<TO>::type>::type;

template <typename T> struct nn_is_dyn { static constexpr bool value = false; };
template <> struct nn_is_dyn<nn_dyn> { static constexpr bool value = true; };

/* Element i of an operand of storage type T (dt ignored) or of run-time dtype dt (T = nn_dyn). */
template <typename T> struct nn_io {
    static constexpr int VW = 16 / (int)sizeof(T); /* elements in one 128-bit access */
    template <typename A> __device__ __forceinline__ static A load(const void *p, int dt, int64_t i) {
        (void)dt;
        return ampc_convert<A>(((const T *)p)[i]);
    }
    template <typename A> __device__ __forceinline__ static void store(void *p, int dt, int64_t i, A v) {
        (void)dt;
        ((T *)p)[i] = ampc_convert<T>(v);
    }
};
template <> struct nn_io<nn_dyn> {
    static constexpr int VW = 1;
    template <typename A> __device__ __forceinline__ static A load(const void *p, int dt, int64_t i) {
        return ampc_load_dyn<A>(p, dt, i);
    }
    template <typename A> __device__ __forceinline__ static void store(void *p, int dt, int64_t i, A v) {
        ampc_store_dyn<A>(p, dt, i, v);
    }
};

/* N consecutive elements, aligned for one access of up to 128 bits (larger ones split in two). */
template <typename T, int N> struct alignas(sizeof(T) * N >= 16 ? 16 : sizeof(T) * N) nn_vec { T v[N]; };

/* Elements e0 .. e0 + cnt - 1 (cnt <= N) of a row starting at element `base` with element stride
 * es, into v[0 .. cnt) as A: one vector load when vec and cnt == N (then es == 1 and the address
 * is aligned; the caller checked). */
template <typename T, int N, typename A>
__device__ __forceinline__ void nn_load_chunk(const void *p, int dt, int64_t base, int64_t es, int64_t e0, int cnt,
                                              bool vec, A *v) {
    if constexpr (!nn_is_dyn<T>::value && N > 1) {
        if (vec && cnt == N) {
            nn_vec<T, N> c = *(const nn_vec<T, N> *)((const T *)p + base + e0);
#pragma unroll
            for (int k = 0; k < N; k++) v[k] = ampc_convert<A>(c.v[k]);
            return;
        }
    }
#pragma unroll
    for (int k = 0; k < N; k++)
        if (k < cnt) v[k] = nn_io<T>::template load<A>(p, dt, base + (e0 + k) * es);
}

template <typename T, int N, typename A>
__device__ __forceinline__ void nn_store_chunk(void *p, int dt, int64_t base, int64_t es, int64_t e0, int cnt, bool vec,
                                               const A *v) {
    if constexpr (!nn_is_dyn<T>::value && N > 1) {
        if (vec && cnt == N) {
            nn_vec<T, N> c;
#pragma unroll
            for (int k = 0; k < N; k++) c.v[k] = ampc_convert<T>(v[k]);
            *(nn_vec<T, N> *)((T *)p + base + e0) = c;
            return;
        }
    }
#pragma unroll
    for (int k = 0; k < N; k++)
        if (k < cnt) nn_io<T>::template store<A>(p, dt, base + (e0 + k) * es, v[k]);
}

/* Elements of a contiguous row starting at element `base` of p before the first 16-byte aligned
 * one, or -1 when the row cannot use vector accesses (run-time dtype, odd address). */
template <typename T> __device__ __forceinline__ int64_t nn_align_head(const void *p, int64_t base) {
    if constexpr (nn_is_dyn<T>::value) {
        return -1;
    } else {
        uintptr_t a = (uintptr_t)((const T *)p + base);
        if (a % sizeof(T) != 0) return -1;
        return (int64_t)(((16 - a % 16) % 16) / sizeof(T));
    }
}

/* Whether N-element chunks of another operand (type T, row start `base`) starting at element
 * `head` of the row are aligned for vector access too. */
template <typename T, int N> __device__ __forceinline__ bool nn_chunk_aligned(const void *p, int64_t base, int64_t head) {
    if constexpr (nn_is_dyn<T>::value || N == 1) {
        return false;
    } else {
        return head >= 0 && (uintptr_t)((const T *)p + base + head) % alignof(nn_vec<T, N>) == 0;
    }
}

/* Calls f(e0, cnt) for the parts of a row of n elements that lane `lane` of a group of gsize
 * threads owns. head >= 0 (a contiguous row whose element head starts an aligned chunk): the
 * elements before head one by one, then whole chunks of N, then the tail one by one; head < 0:
 * every element one by one (e = lane, lane + gsize, ...). The split depends only on n, head and
 * the group, so sums over it have a fixed order. */
template <int N, typename F>
__device__ __forceinline__ void nn_for_chunks(int64_t n, int64_t head, int lane, int gsize, F &&f) {
    if (head < 0 || N == 1) {
        for (int64_t e = lane; e < n; e += gsize) f(e, 1);
        return;
    }
    if (head > n) head = n;
    for (int64_t e = lane; e < head; e += gsize) f(e, 1);
    int64_t chunks = (n - head) / N;
    for (int64_t c = lane; c < chunks; c += gsize) f(head + c * N, N);
    for (int64_t e = head + chunks * N + lane; e < n; e += gsize) f(e, 1);
}

/* ---------------------------------------------------------------- math */

__device__ __forceinline__ float nn_exp(float x) { return expf(x); }
__device__ __forceinline__ double nn_exp(double x) { return exp(x); }
__device__ __forceinline__ float nn_log(float x) { return logf(x); }
__device__ __forceinline__ double nn_log(double x) { return log(x); }
template <typename A> __device__ __forceinline__ A nn_neg_inf() { return -(A)INFINITY; }

/* Reports a data error (target out of range, BCE input outside [0, 1]) through the device's
 * error word, raised at the next synchronisation (cuda_backend.h). The first one wins. */
__device__ __forceinline__ void nn_report(int *err, int kind, int op) {
    if (err) atomicCAS(err, 0, kind * 65536 + op);
}

/* ---------------------------------------------------------------- groups of threads per row */

/* G: threads per row, 1 (a thread per row), 32 (a warp per row) or 0 (the whole block per row).
 * The row loop of a kernel is uniform over the group, so every thread of a group reaches each
 * group reduction (block reductions synchronise the block). */
template <int G> __device__ __forceinline__ int nn_lane() {
    return G == 1 ? 0 : G == 32 ? (int)(threadIdx.x & 31) : (int)threadIdx.x;
}
template <int G> __device__ __forceinline__ int nn_group_size() { return G ? G : (int)blockDim.x; }
template <int G> __device__ __forceinline__ int64_t nn_first_row() {
    return G == 0 ? (int64_t)blockIdx.x : ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) / (G ? G : 1);
}
template <int G> __device__ __forceinline__ int64_t nn_row_step() {
    return G == 0 ? (int64_t)gridDim.x : (int64_t)gridDim.x * blockDim.x / (G ? G : 1);
}

/* Sum over the group; every thread of it gets the result. smem: >= 32 A (block groups). */
template <int G, typename A> __device__ __forceinline__ A nn_group_sum(A v, A *smem) {
    if constexpr (G == 1) return v;
    else if constexpr (G == 32) return ampc_warp_sum(v);
    else return ampc_block_sum(v, smem);
}

/* Max over the group (NaN never wins: the max of the non-NaN values, -inf when none). */
template <int G, typename A> __device__ __forceinline__ A nn_group_max(A v, A *smem) {
    if constexpr (G == 1) {
        return v;
    } else {
        v = ampc_warp_max(v);
        if constexpr (G == 0) {
            int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, n_warps = (blockDim.x + 31) >> 5;
            __syncthreads(); /* smem may still be read by the previous reduction */
            if (lane == 0) smem[warp] = v;
            __syncthreads();
            v = lane < n_warps ? smem[lane] : nn_neg_inf<A>();
            v = ampc_warp_max(v);
        }
        return v;
    }
}

/* ---------------------------------------------------------------- online softmax */

/* The running max m of a row's values and the sum s of exp(v - m), as the CPU's two passes give:
 * -inf values add nothing (also while m is still -inf), a NaN makes s NaN without entering m (the
 * CPU's max is `v > m ? v : m`), +inf makes s NaN (exp(inf - inf)). Start: m = -inf, s = 0. */
template <typename A, int N> __device__ __forceinline__ void nn_maxsum_add(A &m, A &s, const A *v, int cnt) {
    A mn = m;
#pragma unroll
    for (int k = 0; k < N; k++)
        if (k < cnt && v[k] > mn) mn = v[k];
    if (mn != m) { /* rescale the sum to the new max (exp(-inf) = 0 when m was -inf) */
        s *= nn_exp(m - mn);
        m = mn;
    }
#pragma unroll
    for (int k = 0; k < N; k++)
        if (k < cnt && v[k] != nn_neg_inf<A>()) s += nn_exp(v[k] - m);
}

/* Merges (m2, s2) into (m, s). Symmetric bit for bit, so a butterfly leaves every lane equal. */
template <typename A> __device__ __forceinline__ void nn_maxsum_merge(A &m, A &s, A m2, A s2) {
    A mn = m2 > m ? m2 : m;
    s = (m == mn ? s : s * nn_exp(m - mn)) + (m2 == mn ? s2 : s2 * nn_exp(m2 - mn));
    m = mn;
}

/* Butterfly merge of the pairs of a warp. */
template <typename A> __device__ __forceinline__ void nn_warp_maxsum(A &m, A &s) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
        A m2 = __shfl_xor_sync(0xffffffffu, m, o), s2 = __shfl_xor_sync(0xffffffffu, s, o);
        nn_maxsum_merge(m, s, m2, s2);
    }
}

/* Merges the pairs of a group; every thread gets the row's pair. smem: >= 64 A (block groups). */
template <int G, typename A> __device__ __forceinline__ void nn_group_maxsum(A &m, A &s, A *smem) {
    if constexpr (G != 1) {
        nn_warp_maxsum(m, s);
        if constexpr (G == 0) {
            int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, n_warps = (blockDim.x + 31) >> 5;
            __syncthreads(); /* smem may still be read by the previous reduction */
            if (lane == 0) smem[warp] = m, smem[32 + warp] = s;
            __syncthreads();
            m = lane < n_warps ? smem[lane] : nn_neg_inf<A>();
            s = lane < n_warps ? smem[32 + lane] : (A)0;
            nn_warp_maxsum(m, s);
        }
    }
}

/* The most threads a row kernel is launched with; the kernels declare it (__launch_bounds__), so
 * the compiler keeps their registers within what a block of this size may use. */
#define NN_MAX_THREADS 512

/* Threads of a one-block-per-row launch: enough that each has about `per_thread` elements. */
static inline int nn_block_threads(int64_t n, int per_thread) {
    int t = 128;
    while (t < NN_MAX_THREADS && (int64_t)t * per_thread < n) t *= 2;
    return t;
}

/* Blocks for `rows` rows at `rows_per_block`, capped (kernels loop over the rest). */
static inline unsigned nn_row_blocks(int64_t rows, int rows_per_block) {
    int64_t b = (rows + rows_per_block - 1) / rows_per_block;
    return (unsigned)(b < 1 ? 1 : b > (1 << 20) ? (1 << 20) : b);
}

/* ---------------------------------------------------------------- deterministic sums */

#define NN_SUM_THREADS 256
#define NN_SUM_MAX_BLOCKS 1024

/* Stage-1 blocks for n terms: a function of n only, so the summation order is too. */
static inline unsigned nn_sum_blocks(int64_t n) {
    int64_t b = (n + NN_SUM_THREADS * 8 - 1) / (NN_SUM_THREADS * 8);
    return (unsigned)(b < 1 ? 1 : b > NN_SUM_MAX_BLOCKS ? NN_SUM_MAX_BLOCKS : b);
}

/* Stage 1: block b writes the sums of its grid-stride share of a[] and b[] (either may be NULL)
 * to pa[b], pb[b]. NN_SUM_THREADS threads, nn_sum_blocks(n) blocks. */
template <typename A>
__global__ void __launch_bounds__(NN_SUM_THREADS) nn_partial_sums_kernel(const A *a, const A *b, int64_t n, A *pa, A *pb) {
    __shared__ A smem[32];
    A sa = 0, sb = 0;
    AMPC_CUDA_KERNEL_LOOP(i, n) {
        if (a) sa += a[i];
        if (b) sb += b[i];
    }
    sa = ampc_block_sum(sa, smem);
    sb = ampc_block_sum(sb, smem);
    if (threadIdx.x == 0) {
        if (pa) pa[blockIdx.x] = sa;
        if (pb) pb[blockIdx.x] = sb;
    }
}

/* What the second stage writes (one block adds the np partials in a fixed order):
 * total (when not NULL) = sum(b); loss (when not NULL) = sum(a) for reduction sum, and for mean
 * sum(a) / count, or sum(a) / sum(b) when count < 0 (class losses: over the total weight). An
 * empty mean is 0 / 0 = NaN, as PyTorch's. */
struct nn_finish_args {
    void *loss;
    int loss_dt;
    void *total;
    int total_dt;
    int reduction; /* 1 mean, 2 sum */
    double count;
};

template <typename A>
__global__ void __launch_bounds__(NN_SUM_THREADS) nn_finish_kernel(const A *pa, const A *pb, int np, nn_finish_args f) {
    __shared__ A smem[32];
    A sa = 0, sb = 0;
    for (int i = threadIdx.x; i < np; i += blockDim.x) {
        if (pa) sa += pa[i];
        if (pb) sb += pb[i];
    }
    sa = ampc_block_sum(sa, smem);
    sb = ampc_block_sum(sb, smem);
    if (threadIdx.x != 0) return;
    if (f.total) ampc_store_dyn<A>(f.total, f.total_dt, 0, sb);
    if (f.loss) {
        A v = f.reduction != 1 ? sa : f.count < 0 ? sa / sb : sa / (A)f.count;
        ampc_store_dyn<A>(f.loss, f.loss_dt, 0, v);
    }
}

/* Both stages for n terms a[] (may be NULL) and b[] (may be NULL), with `partials` scratch of
 * 2 * NN_SUM_MAX_BLOCKS A. */
template <typename A>
static ampc_status nn_sum_and_finish(cudaStream_t stream, const A *a, const A *b, int64_t n, A *partials,
                                     const nn_finish_args &f) {
    unsigned blocks = nn_sum_blocks(n);
    A *pa = a ? partials : NULL, *pb = b ? partials + NN_SUM_MAX_BLOCKS : NULL;
    nn_partial_sums_kernel<A><<<blocks, NN_SUM_THREADS, 0, stream>>>(a, b, n, pa, pb);
    AMPC_CUDA_CHECK_LAUNCH();
    nn_finish_kernel<A><<<1, NN_SUM_THREADS, 0, stream>>>(pa, pb, (int)blocks, f);
    AMPC_CUDA_CHECK_LAUNCH();
    return AMPC_OK;
}

#endif
