/* cuda_nn_softmax.cu: the softmax family on CUDA: softmax and log_softmax along any dim and their
 * backward (attention is cuda_nn_attn.cu's fused kernel). The CPU twins are
 * cpu/cpu_nn_softmax.c; the contracts are the schemas and rows of core/ops.def. cross_entropy and
 * nll_loss are cuda_nn_loss_class.cu's.
 *
 * A tensor reduced along a dim is seen as (outer, D, inner), contiguous. Rows along the last dim
 * (inner == 1) are the hot case:
 *   D <= 1024  one warp per row, the row in registers (K = 1..32 values a lane), two warp
 *              reductions, then the write; 128-bit accesses when the rows are aligned;
 *   D > 1024   one block per row: the running max and sum of exp in one read (online softmax),
 *              then the write pass; 128-bit accesses for each row's aligned middle.
 * Other dims: one thread per (outer, inner) column walking D at stride inner (loads coalesced
 * across threads), or a warp per column when there are few columns.
 *
 * Arithmetic is float for fp32/fp16/bf16 storage and double for fp64 (the CPU uses double
 * throughout; the results agree within fp32 rounding). Dtype pairs without a compiled path
 * (say fp32 in, fp16 out) take the same kernels with run-time dtypes, in double. */
#include "../core/kernel_args.h"
#include "cuda_nn_rows.cuh"

/* ================================================================ softmax */

#define SM_WARP_THREADS 128 /* 4 rows a block in the warp-per-row kernels */
#define SM_MAX_WARP_ROW 1024
#define SM_COLUMN_THREADS 256
#define SM_MIN_COLUMNS 4096 /* fewer (outer, inner) columns than this: a warp per column */

enum { SM_SOFTMAX, SM_LOG_SOFTMAX, SM_SOFTMAX_BW, SM_LOG_SOFTMAX_BW };

struct sm_params {
    const void *x; /* forward: the input; backward: grad y */
    const void *y; /* backward: y */
    void *out;
    int x_dt, y_dt, out_dt, mode;
    int64_t outer, d, inner;
    double scale; /* backward: grad x *= scale */
};

/* The value written for input value v of a row with max m, sum of exp s and logs = log(s).
 * (v - m) - logs, as PyTorch's CUDA epilogue, not v - (m + logs): m + logs rounds to the ulp of
 * the max (1e-6 at |m| ~ 16 in fp32), which the log-probabilities near 0 cannot absorb. */
template <typename A> __device__ __forceinline__ A sm_forward_value(int mode, A v, A m, A s, A logs) {
    if (mode == SM_LOG_SOFTMAX) return (v - m) - logs;
    if (mode == SM_SOFTMAX) return nn_exp((v - m) - logs);
    return m == nn_neg_inf<A>() ? (A)0 : nn_exp(v - m) / s; /* attention: nothing kept -> 0 */
}

/* Chunk width of the warp kernels: K values a lane in K / N chunks of N consecutive elements. */
template <typename T, int K> struct sm_chunk {
    static constexpr int N = K < nn_io<T>::VW ? K : nn_io<T>::VW;
};

/* Lane `lane`'s share of a warp row of d elements at base: chunk c holds cnt[c] elements (0
 * past the end) at v + c * N. */
template <typename TI, typename A, int N, int NC>
__device__ __forceinline__ void sm_warp_load(const void *src, int dt, int64_t base, int64_t d, int lane, bool vec,
                                             int *cnt, A *v) {
#pragma unroll
    for (int c = 0; c < NC; c++) {
        int64_t e0 = ((int64_t)c * 32 + lane) * N, left = d - e0;
        cnt[c] = left <= 0 ? 0 : left >= N ? N : (int)left;
        nn_load_chunk<TI, N>(src, dt, base, 1, e0, cnt[c], vec, v + c * N);
    }
}

/* v[e] = f(e) for each of the lane's elements e, then the row written to p.out. */
template <typename TO, typename A, int N, int NC, typename F>
__device__ __forceinline__ void sm_warp_store(const sm_params &p, int64_t base, int lane, const int *cnt, bool vec,
                                              A *v, const F &f) {
#pragma unroll
    for (int c = 0; c < NC; c++) {
#pragma unroll
        for (int k = 0; k < N; k++)
            if (k < cnt[c]) v[c * N + k] = f(c * N + k);
        nn_store_chunk<TO, N>(p.out, p.out_dt, base, 1, ((int64_t)c * 32 + lane) * N, cnt[c], vec, v + c * N);
    }
}

/* D <= 32 K, inner == 1: a warp per row, the row in registers. Lane l holds the chunks
 * c * 32 + l (c < K / N) of N elements; the layout is the same with and without vector
 * accesses, so the sums do not depend on alignment. */
template <typename TI, typename TO, int K>
__global__ void __launch_bounds__(SM_WARP_THREADS) softmax_warp_kernel(sm_params p, bool vec) {
    typedef nn_acc2_t<TI, TO> A;
    constexpr int N = sm_chunk<TI, K>::N, NC = K / N;
    const int lane = threadIdx.x & 31;
    const int64_t d = p.d;
    for (int64_t row = nn_first_row<32>(); row < p.outer; row += nn_row_step<32>()) {
        int64_t base = row * d;
        A v[K];
        int cnt[NC];
        sm_warp_load<TI, A, N, NC>(p.x, p.x_dt, base, d, lane, vec, cnt, v);
        A m = nn_neg_inf<A>(), s = 0;
#pragma unroll
        for (int c = 0; c < NC; c++)
#pragma unroll
            for (int k = 0; k < N; k++)
                if (k < cnt[c] && v[c * N + k] > m) m = v[c * N + k];
        m = ampc_warp_max(m);
#pragma unroll
        for (int c = 0; c < NC; c++)
#pragma unroll
            for (int k = 0; k < N; k++)
                if (k < cnt[c]) s += nn_exp(v[c * N + k] - m);
        s = ampc_warp_sum(s);
        A logs = nn_log(s);
        sm_warp_store<TO, A, N, NC>(p, base, lane, cnt, vec, v,
                                    [&](int e) { return sm_forward_value(p.mode, v[e], m, s, logs); });
    }
}

/* Any row: G threads a row (1, 32, or 0: the block), online max / sum in one read, then the write. */
template <typename TI, typename TO, int G>
__global__ void __launch_bounds__(NN_MAX_THREADS) softmax_rows_kernel(sm_params p) {
    typedef nn_acc2_t<TI, TO> A;
    constexpr int N = nn_io<TI>::VW;
    __shared__ A smem[64];
    const int lane = nn_lane<G>(), gsize = nn_group_size<G>();
    const int64_t d = p.d, es = p.inner, rows = p.outer * p.inner;
    for (int64_t row = nn_first_row<G>(); row < rows; row += nn_row_step<G>()) {
        int64_t o = row / es, j = row - o * es, base = o * d * es + j;
        int64_t head = es == 1 ? nn_align_head<TI>(p.x, base) : -1;
        bool vo = nn_chunk_aligned<TO, N>(p.out, base, head);
        A m = nn_neg_inf<A>(), s = 0;
        nn_for_chunks<N>(d, head, lane, gsize, [&](int64_t e0, int cnt) {
            A v[N];
            nn_load_chunk<TI, N>(p.x, p.x_dt, base, es, e0, cnt, head >= 0, v);
            nn_maxsum_add<A, N>(m, s, v, cnt);
        });
        nn_group_maxsum<G>(m, s, smem);
        A logs = nn_log(s);
        nn_for_chunks<N>(d, head, lane, gsize, [&](int64_t e0, int cnt) {
            A v[N];
            nn_load_chunk<TI, N>(p.x, p.x_dt, base, es, e0, cnt, head >= 0, v);
#pragma unroll
            for (int k = 0; k < N; k++)
                if (k < cnt) v[k] = sm_forward_value(p.mode, v[k], m, s, logs);
            nn_store_chunk<TO, N>(p.out, p.out_dt, base, es, e0, cnt, vo, v);
        });
    }
}

/* grad x of one element: softmax y * (g - sum(g * y)) * scale; log_softmax g - exp(y) * sum(g). */
template <typename A> __device__ __forceinline__ A sm_backward_value(int mode, A g, A y, A sum, A scale) {
    return mode == SM_SOFTMAX_BW ? y * (g - sum) * scale : g - nn_exp(y) * sum;
}

/* Backward, D <= 32 K, inner == 1: a warp per row, g and y in registers. TI: g's and y's type. */
template <typename TI, typename TO, int K>
__global__ void __launch_bounds__(SM_WARP_THREADS) softmax_backward_warp_kernel(sm_params p, bool vec) {
    typedef nn_acc2_t<TI, TO> A;
    constexpr int N = sm_chunk<TI, K>::N, NC = K / N;
    const int lane = threadIdx.x & 31;
    const int64_t d = p.d;
    const A scale = (A)p.scale;
    const bool soft = p.mode == SM_SOFTMAX_BW;
    for (int64_t row = nn_first_row<32>(); row < p.outer; row += nn_row_step<32>()) {
        int64_t base = row * d;
        A g[K], y[K];
        int cnt[NC];
        A s = 0;
        sm_warp_load<TI, A, N, NC>(p.x, p.x_dt, base, d, lane, vec, cnt, g);
        sm_warp_load<TI, A, N, NC>(p.y, p.y_dt, base, d, lane, vec, cnt, y);
#pragma unroll
        for (int c = 0; c < NC; c++)
#pragma unroll
            for (int k = 0; k < N; k++)
                if (k < cnt[c]) s += soft ? g[c * N + k] * y[c * N + k] : g[c * N + k];
        s = ampc_warp_sum(s);
        sm_warp_store<TO, A, N, NC>(p, base, lane, cnt, vec, g,
                                    [&](int e) { return sm_backward_value(p.mode, g[e], y[e], s, scale); });
    }
}

/* Backward, any row: the sum in one read of g and y, then the write. */
template <typename TI, typename TO, int G>
__global__ void __launch_bounds__(NN_MAX_THREADS) softmax_backward_rows_kernel(sm_params p) {
    typedef nn_acc2_t<TI, TO> A;
    constexpr int N = nn_io<TI>::VW;
    __shared__ A smem[32];
    const int lane = nn_lane<G>(), gsize = nn_group_size<G>();
    const int64_t d = p.d, es = p.inner, rows = p.outer * p.inner;
    const A scale = (A)p.scale;
    const bool soft = p.mode == SM_SOFTMAX_BW;
    for (int64_t row = nn_first_row<G>(); row < rows; row += nn_row_step<G>()) {
        int64_t o = row / es, j = row - o * es, base = o * d * es + j;
        int64_t head = es == 1 ? nn_align_head<TI>(p.x, base) : -1;
        bool vy = nn_chunk_aligned<TI, N>(p.y, base, head), vo = nn_chunk_aligned<TO, N>(p.out, base, head);
        A s = 0;
        nn_for_chunks<N>(d, head, lane, gsize, [&](int64_t e0, int cnt) {
            A g[N], y[N];
            nn_load_chunk<TI, N>(p.x, p.x_dt, base, es, e0, cnt, head >= 0, g);
            if (soft) nn_load_chunk<TI, N>(p.y, p.y_dt, base, es, e0, cnt, vy, y);
#pragma unroll
            for (int k = 0; k < N; k++)
                if (k < cnt) s += soft ? g[k] * y[k] : g[k];
        });
        s = nn_group_sum<G>(s, smem);
        nn_for_chunks<N>(d, head, lane, gsize, [&](int64_t e0, int cnt) {
            A g[N], y[N];
            nn_load_chunk<TI, N>(p.x, p.x_dt, base, es, e0, cnt, head >= 0, g);
            nn_load_chunk<TI, N>(p.y, p.y_dt, base, es, e0, cnt, vy, y);
#pragma unroll
            for (int k = 0; k < N; k++)
                if (k < cnt) g[k] = sm_backward_value(p.mode, g[k], y[k], s, scale);
            nn_store_chunk<TO, N>(p.out, p.out_dt, base, es, e0, cnt, vo, g);
        });
    }
}

/* ---------------------------------------------------------------- softmax launches */

template <typename TI, typename TO, int K>
static ampc_status sm_launch_warp(const sm_params &p, bool backward, cudaStream_t stream) {
    constexpr int N = sm_chunk<TI, K>::N;
    bool vec = !nn_is_dyn<TI>::value && N > 1 && p.d % N == 0 && (uintptr_t)p.x % alignof(nn_vec<TI, N>) == 0 &&
               (uintptr_t)p.out % alignof(nn_vec<TO, N>) == 0 &&
               (!backward || (uintptr_t)p.y % alignof(nn_vec<TI, N>) == 0);
    unsigned blocks = nn_row_blocks(p.outer, SM_WARP_THREADS / 32);
    if (backward)
        softmax_backward_warp_kernel<TI, TO, K><<<blocks, SM_WARP_THREADS, 0, stream>>>(p, vec);
    else
        softmax_warp_kernel<TI, TO, K><<<blocks, SM_WARP_THREADS, 0, stream>>>(p, vec);
    AMPC_CUDA_CHECK_LAUNCH();
    return AMPC_OK;
}

template <typename TI, typename TO, int G>
static ampc_status sm_launch_rows(const sm_params &p, bool backward, int threads, cudaStream_t stream) {
    unsigned blocks = nn_row_blocks(p.outer * p.inner, G == 0 ? 1 : threads / G);
    if (backward)
        softmax_backward_rows_kernel<TI, TO, G><<<blocks, threads, 0, stream>>>(p);
    else
        softmax_rows_kernel<TI, TO, G><<<blocks, threads, 0, stream>>>(p);
    AMPC_CUDA_CHECK_LAUNCH();
    return AMPC_OK;
}

/* Picks the kernel for the (outer, D, inner) shape. */
struct sm_run {
    const sm_params &p;
    bool backward;
    cudaStream_t stream;
    template <typename TI, typename TO> ampc_status run() const {
        int64_t d = p.d;
        if (p.inner == 1 && d <= SM_MAX_WARP_ROW) {
            if (d <= 32) return sm_launch_warp<TI, TO, 1>(p, backward, stream);
            if (d <= 64) return sm_launch_warp<TI, TO, 2>(p, backward, stream);
            if (d <= 128) return sm_launch_warp<TI, TO, 4>(p, backward, stream);
            if (d <= 256) return sm_launch_warp<TI, TO, 8>(p, backward, stream);
            if (d <= 512) return sm_launch_warp<TI, TO, 16>(p, backward, stream);
            return sm_launch_warp<TI, TO, 32>(p, backward, stream);
        }
        if (p.inner == 1) return sm_launch_rows<TI, TO, 0>(p, backward, nn_block_threads(d, 4 * nn_io<TI>::VW), stream);
        if (p.outer * p.inner >= SM_MIN_COLUMNS) return sm_launch_rows<TI, TO, 1>(p, backward, SM_COLUMN_THREADS, stream);
        return sm_launch_rows<TI, TO, 32>(p, backward, SM_COLUMN_THREADS, stream);
    }
};

/* Compiled dtype paths: equal input and output dtypes, and fp16/bf16 in with fp32 out (the
 * dtype=float32 form); other pairs run with run-time dtypes. */
template <typename F> static ampc_status sm_dispatch_dtypes(int in_dt, int out_dt, const F &f) {
    if (in_dt == out_dt) {
        switch (in_dt) {
        case AMPC_FLOAT32: return f.template run<float, float>();
        case AMPC_FLOAT16: return f.template run<__half, __half>();
        case AMPC_BFLOAT16: return f.template run<__nv_bfloat16, __nv_bfloat16>();
        case AMPC_FLOAT64: return f.template run<double, double>();
        default: break;
        }
    }
    if (out_dt == AMPC_FLOAT32 && in_dt == AMPC_FLOAT16) return f.template run<__half, float>();
    if (out_dt == AMPC_FLOAT32 && in_dt == AMPC_BFLOAT16) return f.template run<__nv_bfloat16, float>();
    return f.template run<nn_dyn, nn_dyn>();
}

/* Softmax-family op `mode` along dim of out: forward x -> out (y NULL), backward
 * (x = grad y, y) -> out, times scale. */
static ampc_status sm_along_dim(int mode, ampc_tensor *out, const ampc_tensor *x, const ampc_tensor *y, int dim,
                                double scale) {
    if (ampc_numel(out) == 0) return AMPC_OK;
    ampc_cuda_guard guard(out);
    sm_params p;
    memset(&p, 0, sizeof p);
    p.x = ampc_data_ptr(x), p.x_dt = (int)x->dtype;
    p.out = ampc_data_ptr(out), p.out_dt = (int)out->dtype;
    if (y) p.y = ampc_data_ptr(y), p.y_dt = (int)y->dtype;
    p.mode = mode;
    p.scale = scale;
    p.outer = 1, p.inner = 1, p.d = out->ndim ? out->shape[dim] : 1;
    for (int i = 0; i < dim; i++) p.outer *= out->shape[i];
    for (int i = dim + 1; i < out->ndim; i++) p.inner *= out->shape[i];
    /* backward's typed paths need g and y in one dtype */
    int in_dt = y && p.x_dt != p.y_dt ? -1 : p.x_dt;
    return sm_dispatch_dtypes(in_dt, p.out_dt, sm_run{p, y != NULL, ampc_cuda_stream_of(out)});
}

/* SOFTMAX, LOG_SOFTMAX (schema softmax, core/ops.def). */
static ampc_status cuda_softmax(ampc_op op, const ampc_softmax_args *a) {
    return sm_along_dim(op == AMPC_OP_SOFTMAX ? SM_SOFTMAX : SM_LOG_SOFTMAX, a->y, a->x, NULL, a->dim, 1.0);
}

/* SOFTMAX_BACKWARD, LOG_SOFTMAX_BACKWARD (schema softmax_backward). */
static ampc_status cuda_softmax_backward(ampc_op op, const ampc_softmax_backward_args *a) {
    return sm_along_dim(op == AMPC_OP_SOFTMAX_BACKWARD ? SM_SOFTMAX_BW : SM_LOG_SOFTMAX_BW, a->grad_x, a->grad_y, a->y,
                        a->dim, a->scale);
}

extern "C" void ampc_cuda_register_nn_softmax(void) {
    ampc_register_softmax(AMPC_CUDA, cuda_softmax);
    ampc_register_softmax_backward(AMPC_CUDA, cuda_softmax_backward);
}
