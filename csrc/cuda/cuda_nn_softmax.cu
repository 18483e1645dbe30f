/* cuda_nn_softmax.cu: the softmax family on CUDA: softmax and log_softmax along any dim and their
 * backward, the attention softmax (scale, mask, causal), cross_entropy fused with its
 * log-softmax, and nll_loss. The CPU twins are cpu/cpu_nn_softmax.c; the contracts are the rows
 * of core/ops.def.
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
 * Cross entropy reads the logits of an (n, k) row once for its log-sum-exp and loss terms; the
 * per-row losses and weights are then reduced in a fixed order (cuda_nn_rows.cuh). Backward
 * writes grad logits = (softmax - target) * weight * grad in one pass from the saved lse, so no
 * softmax tensor is ever formed. The GPT-vocabulary case (N, 50257) in fp16/bf16/fp32 runs one
 * block per row with 128-bit loads and stores.
 *
 * Arithmetic is float for fp32/fp16/bf16 storage and double for fp64 (the CPU uses double
 * throughout; the results agree within fp32 rounding). Dtype pairs without a compiled path
 * (say fp32 in, fp16 out) take the same kernels with run-time dtypes, in double. */
#include "cuda_nn_rows.cuh"

/* ================================================================ softmax */

#define SM_WARP_THREADS 128 /* 4 rows a block in the warp-per-row kernels */
#define SM_MAX_WARP_ROW 1024
#define SM_COLUMN_THREADS 256
#define SM_MIN_COLUMNS 4096 /* fewer (outer, inner) columns than this: a warp per column */

enum { SM_SOFTMAX, SM_LOG_SOFTMAX, SM_ATTN, SM_SOFTMAX_BW, SM_LOG_SOFTMAX_BW };

/* ATTN_SOFTMAX's row transform: v = x * scale, then the mask (bool: False -> -inf; floating:
 * added), then the causal cut (j > i -> -inf), i = row % L. The mask has the scores' shape with
 * any strides (0 where broadcast); its row offset comes from the row index over all dims but
 * the last, as the CPU's row_offset. */
struct sm_attn {
    double scale;
    const void *mask;
    int mask_dt, mask_bool, causal, row_dims;
    int64_t row_shape[AMPC_MAX_DIMS], row_strides[AMPC_MAX_DIMS];
    int64_t last_stride, l;
};

struct sm_params {
    const void *x; /* forward: the input; backward: grad y */
    const void *y; /* backward: y */
    void *out;
    int x_dt, y_dt, out_dt, mode;
    int64_t outer, d, inner;
    double scale; /* backward: grad x *= scale */
    sm_attn attn;
};

__device__ __forceinline__ int64_t sm_mask_offset(const sm_attn &at, int64_t r) {
    int64_t off = 0;
    for (int d = at.row_dims - 1; d >= 0; d--) {
        off += (r % at.row_shape[d]) * at.row_strides[d];
        r /= at.row_shape[d];
    }
    return off;
}

template <typename A>
__device__ __forceinline__ A sm_attn_value(const sm_attn &at, A v, int64_t j, int64_t i, int64_t mask_off) {
    v *= (A)at.scale;
    if (at.mask) {
        A m = ampc_load_dyn<A>(at.mask, at.mask_dt, mask_off + j * at.last_stride);
        v = at.mask_bool ? (m != (A)0 ? v : nn_neg_inf<A>()) : v + m;
    }
    if (at.causal && j > i) v = nn_neg_inf<A>();
    return v;
}

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
#pragma unroll
        for (int c = 0; c < NC; c++) {
            int64_t e0 = ((int64_t)c * 32 + lane) * N, left = d - e0;
            cnt[c] = left <= 0 ? 0 : left >= N ? N : (int)left;
            nn_load_chunk<TI, N>(p.x, p.x_dt, base, 1, e0, cnt[c], vec, v + c * N);
        }
        if (p.mode == SM_ATTN) {
            int64_t i = row % p.attn.l, moff = p.attn.mask ? sm_mask_offset(p.attn, row) : 0;
#pragma unroll
            for (int c = 0; c < NC; c++)
#pragma unroll
                for (int k = 0; k < N; k++)
                    if (k < cnt[c]) v[c * N + k] = sm_attn_value(p.attn, v[c * N + k], ((int64_t)c * 32 + lane) * N + k, i, moff);
        }
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
#pragma unroll
        for (int c = 0; c < NC; c++) {
#pragma unroll
            for (int k = 0; k < N; k++)
                if (k < cnt[c]) v[c * N + k] = sm_forward_value(p.mode, v[c * N + k], m, s, logs);
            nn_store_chunk<TO, N>(p.out, p.out_dt, base, 1, ((int64_t)c * 32 + lane) * N, cnt[c], vec, v + c * N);
        }
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
        bool attn = p.mode == SM_ATTN;
        int64_t i = attn ? row % p.attn.l : 0, moff = attn && p.attn.mask ? sm_mask_offset(p.attn, row) : 0;
        A m = nn_neg_inf<A>(), s = 0;
        nn_for_chunks<N>(d, head, lane, gsize, [&](int64_t e0, int cnt) {
            A v[N];
            nn_load_chunk<TI, N>(p.x, p.x_dt, base, es, e0, cnt, head >= 0, v);
            if (attn) {
#pragma unroll
                for (int k = 0; k < N; k++)
                    if (k < cnt) v[k] = sm_attn_value(p.attn, v[k], e0 + k, i, moff);
            }
            nn_maxsum_add<A, N>(m, s, v, cnt);
        });
        nn_group_maxsum<G>(m, s, smem);
        A logs = nn_log(s);
        nn_for_chunks<N>(d, head, lane, gsize, [&](int64_t e0, int cnt) {
            A v[N];
            nn_load_chunk<TI, N>(p.x, p.x_dt, base, es, e0, cnt, head >= 0, v);
#pragma unroll
            for (int k = 0; k < N; k++)
                if (k < cnt) v[k] = sm_forward_value(p.mode, attn ? sm_attn_value(p.attn, v[k], e0 + k, i, moff) : v[k], m, s, logs);
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
#pragma unroll
        for (int c = 0; c < NC; c++) {
            int64_t e0 = ((int64_t)c * 32 + lane) * N, left = d - e0;
            cnt[c] = left <= 0 ? 0 : left >= N ? N : (int)left;
            nn_load_chunk<TI, N>(p.x, p.x_dt, base, 1, e0, cnt[c], vec, g + c * N);
            nn_load_chunk<TI, N>(p.y, p.y_dt, base, 1, e0, cnt[c], vec, y + c * N);
#pragma unroll
            for (int k = 0; k < N; k++)
                if (k < cnt[c]) s += soft ? g[c * N + k] * y[c * N + k] : g[c * N + k];
        }
        s = ampc_warp_sum(s);
#pragma unroll
        for (int c = 0; c < NC; c++) {
#pragma unroll
            for (int k = 0; k < N; k++)
                if (k < cnt[c]) g[c * N + k] = sm_backward_value(p.mode, g[c * N + k], y[c * N + k], s, scale);
            nn_store_chunk<TO, N>(p.out, p.out_dt, base, 1, ((int64_t)c * 32 + lane) * N, cnt[c], vec, g + c * N);
        }
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

/* SOFTMAX, LOG_SOFTMAX: in[0] x -> out[0] y; SOFTMAX_BACKWARD, LOG_SOFTMAX_BACKWARD: in[0] grad y,
 * in[1] y -> out[0] grad x, times scalars[0] (NONE: 1); ints[0] dim. */
static ampc_status cuda_softmax(ampc_op op, const ampc_kernel_args *a) {
    bool backward = op == AMPC_OP_SOFTMAX_BACKWARD || op == AMPC_OP_LOG_SOFTMAX_BACKWARD;
    ampc_tensor *out = a->out[0];
    if (ampc_numel(out) == 0) return AMPC_OK;
    ampc_cuda_guard guard(out);
    sm_params p;
    memset(&p, 0, sizeof p);
    p.x = ampc_data_ptr(a->in[0]), p.x_dt = (int)a->in[0]->dtype;
    p.out = ampc_data_ptr(out), p.out_dt = (int)out->dtype;
    if (backward) p.y = ampc_data_ptr(a->in[1]), p.y_dt = (int)a->in[1]->dtype;
    p.mode = op == AMPC_OP_SOFTMAX ? SM_SOFTMAX
             : op == AMPC_OP_LOG_SOFTMAX ? SM_LOG_SOFTMAX
             : op == AMPC_OP_SOFTMAX_BACKWARD ? SM_SOFTMAX_BW : SM_LOG_SOFTMAX_BW;
    p.scale = a->scalars[0].kind == AMPC_SCALAR_NONE ? 1.0 : ampc_scalar_to_double(a->scalars[0]);
    int dim = (int)a->ints[0];
    p.outer = 1, p.inner = 1, p.d = out->ndim ? out->shape[dim] : 1;
    for (int i = 0; i < dim; i++) p.outer *= out->shape[i];
    for (int i = dim + 1; i < out->ndim; i++) p.inner *= out->shape[i];
    /* backward's typed paths need g and y in one dtype */
    int in_dt = backward && p.x_dt != p.y_dt ? -1 : p.x_dt;
    return sm_dispatch_dtypes(in_dt, p.out_dt, sm_run{p, backward, ampc_cuda_stream_of(out)});
}

/* ATTN_SOFTMAX: in[0] scores (*, L, S) contiguous, in[1] mask? (same shape, any strides) ->
 * out[0] probabilities (the scores' dtype); scalars[0] scale; ints[0] is_causal. */
static ampc_status cuda_attn_softmax(ampc_op op, const ampc_kernel_args *a) {
    (void)op;
    const ampc_tensor *s = a->in[0], *mask = a->in[1];
    ampc_tensor *out = a->out[0];
    if (ampc_numel(out) == 0) return AMPC_OK;
    if (s->ndim < 2 || out->dtype != s->dtype)
        return ampc_set_error(AMPC_E_RUNTIME, "attn_softmax: expected scores of at least 2 dims and probabilities of their dtype");
    ampc_cuda_guard guard(out);
    sm_params p;
    memset(&p, 0, sizeof p);
    p.x = ampc_data_ptr(s), p.x_dt = (int)s->dtype;
    p.out = ampc_data_ptr(out), p.out_dt = (int)out->dtype;
    p.mode = SM_ATTN;
    p.d = s->shape[s->ndim - 1];
    p.outer = ampc_numel(s) / p.d, p.inner = 1;
    p.attn.scale = ampc_scalar_to_double(a->scalars[0]);
    p.attn.causal = a->ints[0] != 0;
    p.attn.l = s->shape[s->ndim - 2];
    if (mask) {
        if (mask->ndim != s->ndim)
            return ampc_set_error(AMPC_E_RUNTIME, "attn_softmax: the mask must have the scores' shape");
        p.attn.mask = ampc_data_ptr(mask);
        p.attn.mask_dt = (int)mask->dtype;
        p.attn.mask_bool = mask->dtype == AMPC_BOOL;
        p.attn.row_dims = mask->ndim - 1;
        for (int d = 0; d < mask->ndim - 1; d++) p.attn.row_shape[d] = mask->shape[d], p.attn.row_strides[d] = mask->strides[d];
        p.attn.last_stride = mask->strides[mask->ndim - 1];
    }
    return sm_dispatch_dtypes(p.x_dt, p.out_dt, sm_run{p, false, ampc_cuda_stream_of(out)});
}

/* ================================================================ cross entropy and nll */

#define CE_ROW_THREADS 256 /* warp-per-row and thread-per-row launches */
#define CE_MAX_WARP_ROW 1024
#define CE_MIN_ROWS 4096 /* (N, C, K > 1): fewer rows than this: a warp per row */

struct ce_params {
    const void *x;      /* logits (N, C, K) */
    const void *target; /* int classes (N, K) or probabilities (N, C, K) */
    const void *weight; /* (C) or NULL */
    int target_dt, weight_dt, probs, reduction;
    int64_t n, c, k, ignore;
    double ls; /* label smoothing */
    int *err;
    int op;
    /* forward */
    void *loss;       /* reduction none: the (N, K) losses in loss_dt; else NULL */
    int loss_dt;
    void *row_loss;   /* reduced: A scratch (N * K) */
    void *row_weight; /* A scratch (N * K) */
    void *lse;        /* A (N, K): the stats dtype is A */
    /* backward */
    const void *grad, *total, *lse_in, *wsum; /* wsum: A device sum of the weights, NULL: C */
    int grad_dt, total_dt, lse_dt, gt_dt;
    void *gx; /* the logits' dtype, or NULL */
    void *gt; /* probability targets' grad, or NULL */
};

template <typename A> __device__ __forceinline__ A ce_weight(const ce_params &p, int64_t c) {
    return p.weight ? ampc_load_dyn<A>(p.weight, p.weight_dt, c) : (A)1;
}

/* Forward, G threads per (n, k) row: the online max / sum of exp in one read of the logits (with
 * class targets and label smoothing also sum(w x) and sum(w), so the smoothing term is
 * lse * sum(w) - sum(w x) without a second read); probability targets take a second pass for
 * sum(w t' (x - lse)), t' = t (1 - ls) + ls / C, the CPU's form. Lane 0 writes the row's lse,
 * loss and weight. */
template <typename T, int G, bool Probs>
__global__ void __launch_bounds__(NN_MAX_THREADS) ce_forward_kernel(ce_params p) {
    typedef typename nn_acc<T>::type A;
    constexpr int N = nn_io<T>::VW;
    __shared__ A smem[64];
    const int lane = nn_lane<G>(), gsize = nn_group_size<G>();
    const int64_t rows = p.n * p.k, es = p.k, c = p.c;
    const A ls = (A)p.ls, cf = (A)p.c;
    const bool smooth = !Probs && p.ls > 0;
    for (int64_t row = nn_first_row<G>(); row < rows; row += nn_row_step<G>()) {
        int64_t ni = row / es, base = ni * c * es + (row - ni * es);
        int64_t head = es == 1 ? nn_align_head<T>(p.x, base) : -1;
        A m = nn_neg_inf<A>(), s = 0, swx = 0, sw = 0;
        nn_for_chunks<N>(c, head, lane, gsize, [&](int64_t e0, int cnt) {
            A v[N];
            nn_load_chunk<T, N>(p.x, 0, base, es, e0, cnt, head >= 0, v);
            nn_maxsum_add<A, N>(m, s, v, cnt);
            if (smooth) {
#pragma unroll
                for (int k = 0; k < N; k++)
                    if (k < cnt) {
                        A w = ce_weight<A>(p, e0 + k);
                        swx += w * v[k], sw += w;
                    }
            }
        });
        nn_group_maxsum<G>(m, s, smem);
        A logs = nn_log(s), lse = m + logs; /* log-probabilities as (x - m) - logs (sm_forward_value) */
        A loss = 0, weight = 0;
        if constexpr (Probs) {
            A acc = 0;
            nn_for_chunks<N>(c, head, lane, gsize, [&](int64_t e0, int cnt) {
                A v[N];
                nn_load_chunk<T, N>(p.x, 0, base, es, e0, cnt, head >= 0, v);
#pragma unroll
                for (int k = 0; k < N; k++)
                    if (k < cnt) {
                        A tp = ampc_load_dyn<A>(p.target, p.target_dt, base + (e0 + k) * es) * ((A)1 - ls) + ls / cf;
                        acc -= ce_weight<A>(p, e0 + k) * tp * ((v[k] - m) - logs);
                    }
            });
            loss = nn_group_sum<G>(acc, smem);
            weight = 1;
        } else if (smooth) {
            swx = nn_group_sum<G>(swx, smem);
            sw = p.weight ? nn_group_sum<G>(sw, smem) : cf;
        }
        if (lane == 0) {
            if constexpr (!Probs) {
                int64_t cls = ampc_load_dyn<int64_t>(p.target, p.target_dt, row);
                if (cls != p.ignore) {
                    if (cls < 0 || cls >= c) {
                        nn_report(p.err, AMPC_CUDA_ERR_INDEX, p.op); /* skipped: counts as ignored */
                    } else {
                        weight = ce_weight<A>(p, cls);
                        A xc = nn_io<T>::template load<A>(p.x, 0, base + cls * es);
                        loss = -((xc - m) - logs) * weight * ((A)1 - ls);
                        if (smooth) loss += ls / cf * (lse * sw - swx); /* -sum(w (x - lse)) */
                    }
                }
            }
            ((A *)p.lse)[row] = lse;
            ((A *)p.row_weight)[row] = weight;
            if (p.loss)
                ampc_store_dyn<A>(p.loss, p.loss_dt, row, loss);
            else
                ((A *)p.row_loss)[row] = loss;
        }
    }
}

/* Backward, G threads per row, from the saved lse: class targets in one pass,
 * gs * ((1 - ls) w_t (p_c - [c == t]) + ls / C (p_c sum(w) - w_c)); probability targets:
 * gs * (p_c S - w_c t'_c), S = sum_c w_c t'_c (one pass for S first), and the target's grad
 * -gs (1 - ls) w_c (x_c - lse). */
template <typename T, int G, bool Probs>
__global__ void __launch_bounds__(NN_MAX_THREADS) ce_backward_kernel(ce_params p) {
    typedef typename nn_acc<T>::type A;
    constexpr int N = nn_io<T>::VW;
    __shared__ A smem[32];
    const int lane = nn_lane<G>(), gsize = nn_group_size<G>();
    const int64_t rows = p.n * p.k, es = p.k, c = p.c;
    const A ls = (A)p.ls, cf = (A)p.c;
    A gscale = 0;
    if (p.reduction != 0) {
        gscale = ampc_load_dyn<A>(p.grad, p.grad_dt, 0);
        if (p.reduction == 1) gscale /= ampc_load_dyn<A>(p.total, p.total_dt, 0);
    }
    const A wsum = p.wsum ? *(const A *)p.wsum : cf;
    for (int64_t row = nn_first_row<G>(); row < rows; row += nn_row_step<G>()) {
        int64_t ni = row / es, base = ni * c * es + (row - ni * es);
        int64_t head = es == 1 ? nn_align_head<T>(p.x, base) : -1;
        bool vg = p.gx && nn_chunk_aligned<T, N>(p.gx, base, head);
        const A gs = p.reduction == 0 ? ampc_load_dyn<A>(p.grad, p.grad_dt, row) : gscale;
        const A lse = ampc_load_dyn<A>(p.lse_in, p.lse_dt, row);
        if constexpr (Probs) {
            A st = 0;
            if (p.gx) {
                nn_for_chunks<1>(c, -1, lane, gsize, [&](int64_t e, int) {
                    A tp = ampc_load_dyn<A>(p.target, p.target_dt, base + e * es) * ((A)1 - ls) + ls / cf;
                    st += ce_weight<A>(p, e) * tp;
                });
                st = nn_group_sum<G>(st, smem);
            }
            nn_for_chunks<N>(c, head, lane, gsize, [&](int64_t e0, int cnt) {
                A v[N];
                nn_load_chunk<T, N>(p.x, 0, base, es, e0, cnt, head >= 0, v);
#pragma unroll
                for (int k = 0; k < N; k++) {
                    if (k >= cnt) continue;
                    int64_t e = e0 + k, off = base + e * es;
                    A w = ce_weight<A>(p, e), lp = v[k] - lse;
                    if (p.gt) ampc_store_dyn<A>(p.gt, p.gt_dt, off, -gs * ((A)1 - ls) * w * lp);
                    A tp = ampc_load_dyn<A>(p.target, p.target_dt, off) * ((A)1 - ls) + ls / cf;
                    v[k] = gs * (nn_exp(lp) * st - w * tp);
                }
                if (p.gx) nn_store_chunk<T, N>(p.gx, 0, base, es, e0, cnt, vg, v);
            });
        } else {
            int64_t cls = ampc_load_dyn<int64_t>(p.target, p.target_dt, row);
            bool valid = cls != p.ignore && cls >= 0 && cls < c;
            const A a1 = valid ? ((A)1 - ls) * ce_weight<A>(p, cls) : (A)0, a2 = ls / cf;
            const bool smooth = p.ls > 0;
            nn_for_chunks<N>(c, head, lane, gsize, [&](int64_t e0, int cnt) {
                A v[N];
                if (valid) nn_load_chunk<T, N>(p.x, 0, base, es, e0, cnt, head >= 0, v);
#pragma unroll
                for (int k = 0; k < N; k++) {
                    if (k >= cnt) continue;
                    if (!valid) {
                        v[k] = 0;
                        continue;
                    }
                    A pr = nn_exp(v[k] - lse), term = a1 * (pr - (e0 + k == cls ? (A)1 : (A)0));
                    if (smooth) term += a2 * (pr * wsum - ce_weight<A>(p, e0 + k));
                    v[k] = gs * term;
                }
                nn_store_chunk<T, N>(p.gx, 0, base, es, e0, cnt, vg, v);
            });
        }
    }
}

/* The sum of the class weights (one block, fixed order), for backward's smoothing term. */
template <typename A> __global__ void __launch_bounds__(NN_SUM_THREADS) ce_weight_sum_kernel(ce_params p, A *out) {
    __shared__ A smem[32];
    A s = 0;
    for (int64_t i = threadIdx.x; i < p.c; i += blockDim.x) s += ce_weight<A>(p, i);
    s = ampc_block_sum(s, smem);
    if (threadIdx.x == 0) *out = s;
}

template <typename T, bool Backward, int G, bool Probs>
static void ce_kernel(const ce_params &p, unsigned blocks, int threads, cudaStream_t stream) {
    if constexpr (Backward)
        ce_backward_kernel<T, G, Probs><<<blocks, threads, 0, stream>>>(p);
    else
        ce_forward_kernel<T, G, Probs><<<blocks, threads, 0, stream>>>(p);
}

template <typename T, bool Backward, int G>
static void ce_kernel(const ce_params &p, unsigned blocks, int threads, cudaStream_t stream) {
    if (p.probs)
        ce_kernel<T, Backward, G, true>(p, blocks, threads, stream);
    else
        ce_kernel<T, Backward, G, false>(p, blocks, threads, stream);
}

/* Launches a row kernel with the group size the shape wants: (N, C) rows a warp each up to
 * C = 1024, a block each beyond; (N, C, K > 1) a thread per row, or a warp when rows are few. */
template <typename T, bool Backward>
static ampc_status ce_launch(const ce_params &p, cudaStream_t stream) {
    int64_t rows = p.n * p.k;
    if (rows == 0) return AMPC_OK;
    if (p.k == 1 && p.c > CE_MAX_WARP_ROW)
        ce_kernel<T, Backward, 0>(p, nn_row_blocks(rows, 1), nn_block_threads(p.c, 4 * nn_io<T>::VW), stream);
    else if (p.k == 1 || rows < CE_MIN_ROWS)
        ce_kernel<T, Backward, 32>(p, nn_row_blocks(rows, CE_ROW_THREADS / 32), CE_ROW_THREADS, stream);
    else
        ce_kernel<T, Backward, 1>(p, nn_row_blocks(rows, CE_ROW_THREADS), CE_ROW_THREADS, stream);
    AMPC_CUDA_CHECK_LAUNCH();
    return AMPC_OK;
}

static void ce_common(ce_params *p, const ampc_kernel_args *a, const ampc_tensor *x, const ampc_tensor *target,
                      const ampc_tensor *weight) {
    memset(p, 0, sizeof *p);
    p->x = ampc_data_ptr(x);
    p->target = ampc_data_ptr(target), p->target_dt = (int)target->dtype;
    if (weight) p->weight = ampc_data_ptr(weight), p->weight_dt = (int)weight->dtype;
    p->n = x->shape[0], p->c = x->shape[1], p->k = x->shape[2];
    p->reduction = (int)a->ints[0], p->ignore = a->ints[1], p->probs = a->ints[2] != 0;
    p->ls = ampc_scalar_to_double(a->scalars[0]);
}

/* CROSS_ENTROPY: in[0] logits (N, C, K), in[1] target, in[2] weight? -> out[0] loss ((N, K) or
 * 0-dim), out[1] lse (N, K), out[2] total weight (0-dim); ints reduction, ignore_index, probs;
 * scalars[0] label_smoothing. */
struct ce_forward_run {
    const ampc_kernel_args *a;
    template <typename T> ampc_status run() const {
        typedef typename nn_acc<T>::type A;
        const ampc_tensor *x = a->in[0];
        ampc_tensor *loss = a->out[0], *lse = a->out[1], *total = a->out[2];
        if (lse->dtype != (sizeof(A) == 8 ? AMPC_FLOAT64 : AMPC_FLOAT32))
            return ampc_set_error(AMPC_E_RUNTIME, "cross_entropy: lse of dtype %s for logits of dtype %s",
                                  ampc_dtype_name(lse->dtype), ampc_dtype_name(x->dtype));
        int dev = (int)x->device.index;
        cudaStream_t stream = ampc_cuda_stream_of(x);
        ce_params p;
        ce_common(&p, a, x, a->in[1], a->in[2]);
        p.op = AMPC_OP_CROSS_ENTROPY;
        if (!p.probs) p.err = ampc_cuda_error_word(dev); /* class targets are checked */
        int64_t rows = p.n * p.k;
        bool reduced = p.reduction != 0;
        ampc_cuda_scratch scratch(dev, sizeof(A) * (size_t)((reduced ? 2 : 1) * rows + 2 * NN_SUM_MAX_BLOCKS));
        if (!scratch.ok()) return ampc_last_status();
        A *partials = scratch.as<A>(), *row_weight = partials + 2 * NN_SUM_MAX_BLOCKS;
        A *row_loss = reduced ? row_weight + rows : NULL;
        p.row_weight = row_weight, p.row_loss = row_loss, p.lse = ampc_data_ptr(lse);
        if (!reduced) p.loss = ampc_data_ptr(loss), p.loss_dt = (int)loss->dtype;
        AMPC_TRY((ce_launch<T, false>(p, stream)));
        nn_finish_args f;
        memset(&f, 0, sizeof f);
        f.total = ampc_data_ptr(total), f.total_dt = (int)total->dtype;
        if (reduced) f.loss = ampc_data_ptr(loss), f.loss_dt = (int)loss->dtype, f.reduction = p.reduction;
        f.count = -1; /* mean: over the total weight */
        return nn_sum_and_finish<A>(stream, row_loss, row_weight, rows, partials, f);
    }
};

/* CROSS_ENTROPY_BACKWARD: in grad loss, logits, target, weight?, lse, total weight -> out[0]
 * grad logits?, out[1] grad target? (probability targets); ints, scalars as forward. */
struct ce_backward_run {
    const ampc_kernel_args *a;
    template <typename T> ampc_status run() const {
        typedef typename nn_acc<T>::type A;
        const ampc_tensor *x = a->in[1];
        ampc_tensor *gx = a->out[0], *gt = a->out[1];
        if (gx && gx->dtype != x->dtype)
            return ampc_set_error(AMPC_E_RUNTIME, "cross_entropy_backward: grad of dtype %s for logits of dtype %s",
                                  ampc_dtype_name(gx->dtype), ampc_dtype_name(x->dtype));
        int dev = (int)x->device.index;
        cudaStream_t stream = ampc_cuda_stream_of(x);
        ce_params p;
        ce_common(&p, a, x, a->in[2], a->in[3]);
        p.grad = ampc_data_ptr(a->in[0]), p.grad_dt = (int)a->in[0]->dtype;
        p.lse_in = ampc_data_ptr(a->in[4]), p.lse_dt = (int)a->in[4]->dtype;
        p.total = ampc_data_ptr(a->in[5]), p.total_dt = (int)a->in[5]->dtype;
        p.gx = gx ? ampc_data_ptr(gx) : NULL;
        p.gt = p.probs && gt ? ampc_data_ptr(gt) : NULL;
        if (p.gt) p.gt_dt = (int)gt->dtype;
        if (!p.gx && !p.gt) return AMPC_OK;
        bool need_wsum = p.weight && !p.probs && p.ls > 0;
        ampc_cuda_scratch scratch(dev, need_wsum ? sizeof(A) : 0);
        if (!scratch.ok()) return ampc_last_status();
        if (need_wsum) {
            ce_weight_sum_kernel<A><<<1, NN_SUM_THREADS, 0, stream>>>(p, scratch.as<A>());
            AMPC_CUDA_CHECK_LAUNCH();
            p.wsum = scratch.ptr;
        }
        return ce_launch<T, true>(p, stream);
    }
};

template <typename F> static ampc_status ce_dispatch_dtype(int dt, const char *what, const F &f) {
    switch (dt) {
    case AMPC_FLOAT32: return f.template run<float>();
    case AMPC_FLOAT16: return f.template run<__half>();
    case AMPC_BFLOAT16: return f.template run<__nv_bfloat16>();
    case AMPC_FLOAT64: return f.template run<double>();
    default:
        return ampc_set_error(AMPC_E_TYPE, "%s: CUDA kernel does not support dtype %s", what,
                              ampc_dtype_name((ampc_dtype)dt));
    }
}

static ampc_status cuda_cross_entropy(ampc_op op, const ampc_kernel_args *a) {
    ampc_cuda_guard guard(a->in[0]);
    return ce_dispatch_dtype((int)a->in[0]->dtype, ampc_op_name(op), ce_forward_run{a});
}

static ampc_status cuda_cross_entropy_backward(ampc_op op, const ampc_kernel_args *a) {
    ampc_cuda_guard guard(a->in[1]);
    return ce_dispatch_dtype((int)a->in[1]->dtype, ampc_op_name(op), ce_backward_run{a});
}

/* ---------------------------------------------------------------- nll_loss */

/* Forward, a thread per (n, k) row: -w[t] * x[n, t, k] and the weight w[t] (0 when ignored). */
template <typename A> __global__ void __launch_bounds__(AMPC_CUDA_THREADS) nll_forward_kernel(ce_params p, int x_dt) {
    const int64_t rows = p.n * p.k;
    AMPC_CUDA_KERNEL_LOOP(row, rows) {
        int64_t ni = row / p.k, ki = row - ni * p.k;
        int64_t cls = ampc_load_dyn<int64_t>(p.target, p.target_dt, row);
        A loss = 0, weight = 0;
        if (cls != p.ignore) {
            if (cls < 0 || cls >= p.c) {
                nn_report(p.err, AMPC_CUDA_ERR_INDEX, p.op);
            } else {
                weight = ce_weight<A>(p, cls);
                loss = -weight * ampc_load_dyn<A>(p.x, x_dt, (ni * p.c + cls) * p.k + ki);
            }
        }
        ((A *)p.row_weight)[row] = weight;
        if (p.loss)
            ampc_store_dyn<A>(p.loss, p.loss_dt, row, loss);
        else
            ((A *)p.row_loss)[row] = loss;
    }
}

/* Backward into a zeroed grad: grad[n, t, k] = -w[t] * g for each row not ignored. */
template <typename A> __global__ void __launch_bounds__(AMPC_CUDA_THREADS) nll_backward_kernel(ce_params p, int gx_dt) {
    const int64_t rows = p.n * p.k;
    A gscale = 0;
    if (p.reduction != 0) {
        gscale = ampc_load_dyn<A>(p.grad, p.grad_dt, 0);
        if (p.reduction == 1) gscale /= ampc_load_dyn<A>(p.total, p.total_dt, 0);
    }
    AMPC_CUDA_KERNEL_LOOP(row, rows) {
        int64_t ni = row / p.k, ki = row - ni * p.k;
        int64_t cls = ampc_load_dyn<int64_t>(p.target, p.target_dt, row);
        if (cls == p.ignore || cls < 0 || cls >= p.c) continue;
        A g = p.reduction != 0 ? gscale : ampc_load_dyn<A>(p.grad, p.grad_dt, row);
        ampc_store_dyn<A>(p.gx, gx_dt, (ni * p.c + cls) * p.k + ki, -ce_weight<A>(p, cls) * g);
    }
}

/* NLL_LOSS: in[0] log-probabilities (N, C, K), in[1] target (N, K), in[2] weight? -> out[0] loss,
 * out[1] total weight; ints reduction, ignore_index. */
template <typename A> static ampc_status nll_forward(const ampc_kernel_args *a) {
    const ampc_tensor *x = a->in[0];
    ampc_tensor *loss = a->out[0], *total = a->out[1];
    int dev = (int)x->device.index;
    cudaStream_t stream = ampc_cuda_stream_of(x);
    ce_params p;
    memset(&p, 0, sizeof p);
    p.x = ampc_data_ptr(x);
    p.target = ampc_data_ptr(a->in[1]), p.target_dt = (int)a->in[1]->dtype;
    if (a->in[2]) p.weight = ampc_data_ptr(a->in[2]), p.weight_dt = (int)a->in[2]->dtype;
    p.n = x->shape[0], p.c = x->shape[1], p.k = x->shape[2];
    p.reduction = (int)a->ints[0], p.ignore = a->ints[1];
    p.err = ampc_cuda_error_word(dev), p.op = AMPC_OP_NLL_LOSS;
    int64_t rows = p.n * p.k;
    bool reduced = p.reduction != 0;
    ampc_cuda_scratch scratch(dev, sizeof(A) * (size_t)((reduced ? 2 : 1) * rows + 2 * NN_SUM_MAX_BLOCKS));
    if (!scratch.ok()) return ampc_last_status();
    A *partials = scratch.as<A>(), *row_weight = partials + 2 * NN_SUM_MAX_BLOCKS;
    A *row_loss = reduced ? row_weight + rows : NULL;
    p.row_weight = row_weight, p.row_loss = row_loss;
    if (!reduced) p.loss = ampc_data_ptr(loss), p.loss_dt = (int)loss->dtype;
    if (rows > 0) {
        nll_forward_kernel<A><<<ampc_cuda_blocks(rows), AMPC_CUDA_THREADS, 0, stream>>>(p, (int)x->dtype);
        AMPC_CUDA_CHECK_LAUNCH();
    }
    nn_finish_args f;
    memset(&f, 0, sizeof f);
    f.total = ampc_data_ptr(total), f.total_dt = (int)total->dtype;
    if (reduced) f.loss = ampc_data_ptr(loss), f.loss_dt = (int)loss->dtype, f.reduction = p.reduction;
    f.count = -1;
    return nn_sum_and_finish<A>(stream, row_loss, row_weight, rows, partials, f);
}

static ampc_status cuda_nll_loss(ampc_op op, const ampc_kernel_args *a) {
    (void)op;
    ampc_cuda_guard guard(a->in[0]);
    return a->in[0]->dtype == AMPC_FLOAT64 ? nll_forward<double>(a) : nll_forward<float>(a);
}

/* NLL_LOSS_BACKWARD: in grad loss, target, weight?, total weight -> out[0] grad input (N, C, K). */
static ampc_status cuda_nll_loss_backward(ampc_op op, const ampc_kernel_args *a) {
    (void)op;
    ampc_tensor *gx = a->out[0];
    ampc_cuda_guard guard(gx);
    cudaStream_t stream = ampc_cuda_stream_of(gx);
    ce_params p;
    memset(&p, 0, sizeof p);
    p.grad = ampc_data_ptr(a->in[0]), p.grad_dt = (int)a->in[0]->dtype;
    p.target = ampc_data_ptr(a->in[1]), p.target_dt = (int)a->in[1]->dtype;
    if (a->in[2]) p.weight = ampc_data_ptr(a->in[2]), p.weight_dt = (int)a->in[2]->dtype;
    p.total = ampc_data_ptr(a->in[3]), p.total_dt = (int)a->in[3]->dtype;
    p.gx = ampc_data_ptr(gx);
    p.n = gx->shape[0], p.c = gx->shape[1], p.k = gx->shape[2];
    p.reduction = (int)a->ints[0], p.ignore = a->ints[1];
    AMPC_CUDA_TRY(cudaMemsetAsync(p.gx, 0, ampc_nbytes(gx), stream)); /* zero bits are 0 in every floating dtype */
    int64_t rows = p.n * p.k;
    if (rows == 0) return AMPC_OK;
    if (gx->dtype == AMPC_FLOAT64)
        nll_backward_kernel<double><<<ampc_cuda_blocks(rows), AMPC_CUDA_THREADS, 0, stream>>>(p, (int)gx->dtype);
    else
        nll_backward_kernel<float><<<ampc_cuda_blocks(rows), AMPC_CUDA_THREADS, 0, stream>>>(p, (int)gx->dtype);
    AMPC_CUDA_CHECK_LAUNCH();
    return AMPC_OK;
}

extern "C" void ampc_cuda_register_nn_softmax(void) {
    ampc_register_kernel(AMPC_CUDA, AMPC_OP_SOFTMAX, cuda_softmax);
    ampc_register_kernel(AMPC_CUDA, AMPC_OP_LOG_SOFTMAX, cuda_softmax);
    ampc_register_kernel(AMPC_CUDA, AMPC_OP_SOFTMAX_BACKWARD, cuda_softmax);
    ampc_register_kernel(AMPC_CUDA, AMPC_OP_LOG_SOFTMAX_BACKWARD, cuda_softmax);
    ampc_register_kernel(AMPC_CUDA, AMPC_OP_ATTN_SOFTMAX, cuda_attn_softmax);
    ampc_register_kernel(AMPC_CUDA, AMPC_OP_CROSS_ENTROPY, cuda_cross_entropy);
    ampc_register_kernel(AMPC_CUDA, AMPC_OP_CROSS_ENTROPY_BACKWARD, cuda_cross_entropy_backward);
    ampc_register_kernel(AMPC_CUDA, AMPC_OP_NLL_LOSS, cuda_nll_loss);
    ampc_register_kernel(AMPC_CUDA, AMPC_OP_NLL_LOSS_BACKWARD, cuda_nll_loss_backward);
}
