/* cuda_nn_loss_class.cu: the classification losses on CUDA: cross_entropy fused with its
 * log-softmax, and nll_loss, forward and backward. The CPU twins are cpu/cpu_nn_loss_class.c; the
 * per-row and per-class terms are core/loss_math.h's (shared with the CPU); the contracts are the
 * schemas and rows of core/ops.def.
 *
 * Cross entropy reads the logits of an (n, k) row once for its log-sum-exp and loss terms; the
 * per-row losses and weights are then reduced in a fixed order (cuda_nn_rows.cuh). Backward
 * writes grad logits = (softmax - target) * weight * grad in one pass from the saved lse, so no
 * softmax tensor is ever formed. The GPT-vocabulary case (N, 50257) in fp16/bf16/fp32 runs one
 * block per row with 128-bit loads and stores.
 *
 * Arithmetic is float for fp32/fp16/bf16 storage and double for fp64 (the CPU uses double
 * throughout; the results agree within fp32 rounding). */
#include "../core/kernel_args.h"
#include "../core/loss_math.h"
#include "cuda_nn_rows.cuh"

/* ================================================================ cross entropy */

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

/* core/loss_math.h's class-loss terms for the accumulation type A (float: the _f functions,
 * double: the _d ones). */
template <typename A> struct ce_math;
#define CE_MATH(T, S)                                                                                            \
    template <> struct ce_math<T> {                                                                              \
        static __device__ T smooth_target(T t, T ls, T c) { return ampc_ce_smooth_target_##S(t, ls, c); }       \
        static __device__ T class_loss(T lp, T w, T ls, T c, T sm) { return ampc_ce_class_loss_##S(lp, w, ls, c, sm); } \
        static __device__ T prob_loss_term(T w, T tp, T lp) { return ampc_ce_prob_loss_term_##S(w, tp, lp); }   \
        static __device__ T class_grad(T p, bool is_t, T a1, T a2, T ws, T w, bool sm) {                         \
            return ampc_ce_class_grad_##S(p, is_t, a1, a2, ws, w, sm);                                           \
        }                                                                                                        \
        static __device__ T prob_grad(T p, T s, T w, T tp) { return ampc_ce_prob_grad_##S(p, s, w, tp); }        \
        static __device__ T target_grad(T g, T ls, T w, T lp) { return ampc_ce_target_grad_##S(g, ls, w, lp); }  \
        static __device__ T nll_loss(T w, T lp) { return ampc_nll_loss_##S(w, lp); }                             \
        static __device__ T nll_grad(T w, T g) { return ampc_nll_grad_##S(w, g); }                               \
        static __device__ T grad_scale(int r, T g, T total) { return ampc_loss_grad_scale_##S(r, g, total); }    \
    };
CE_MATH(float, f)
CE_MATH(double, d)
#undef CE_MATH

/* The loss grad of a reduced loss (already / total weight for mean); 0 for reduction none. */
template <typename A> __device__ __forceinline__ A ce_reduced_grad(const ce_params &p) {
    if (p.reduction == AMPC_REDUCTION_NONE) return 0;
    A total = p.reduction == AMPC_REDUCTION_MEAN ? ampc_load_dyn<A>(p.total, p.total_dt, 0) : (A)1;
    return ce_math<A>::grad_scale(p.reduction, ampc_load_dyn<A>(p.grad, p.grad_dt, 0), total);
}

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
    typedef ce_math<A> M;
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
                        A tp = M::smooth_target(ampc_load_dyn<A>(p.target, p.target_dt, base + (e0 + k) * es), ls, cf);
                        acc -= M::prob_loss_term(ce_weight<A>(p, e0 + k), tp, (v[k] - m) - logs);
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
                        /* smooth = -sum(w (x - lse)) = lse * sum(w) - sum(w x) */
                        loss = M::class_loss((xc - m) - logs, weight, ls, cf, smooth ? lse * sw - swx : (A)0);
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
    typedef ce_math<A> M;
    constexpr int N = nn_io<T>::VW;
    __shared__ A smem[32];
    const int lane = nn_lane<G>(), gsize = nn_group_size<G>();
    const int64_t rows = p.n * p.k, es = p.k, c = p.c;
    const A ls = (A)p.ls, cf = (A)p.c;
    const A gscale = ce_reduced_grad<A>(p);
    const A wsum = p.wsum ? *(const A *)p.wsum : cf;
    for (int64_t row = nn_first_row<G>(); row < rows; row += nn_row_step<G>()) {
        int64_t ni = row / es, base = ni * c * es + (row - ni * es);
        int64_t head = es == 1 ? nn_align_head<T>(p.x, base) : -1;
        bool vg = p.gx && nn_chunk_aligned<T, N>(p.gx, base, head);
        const A gs = p.reduction == AMPC_REDUCTION_NONE ? ampc_load_dyn<A>(p.grad, p.grad_dt, row) : gscale;
        const A lse = ampc_load_dyn<A>(p.lse_in, p.lse_dt, row);
        if constexpr (Probs) {
            A st = 0;
            if (p.gx) {
                nn_for_chunks<1>(c, -1, lane, gsize, [&](int64_t e, int) {
                    A tp = M::smooth_target(ampc_load_dyn<A>(p.target, p.target_dt, base + e * es), ls, cf);
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
                    if (p.gt) ampc_store_dyn<A>(p.gt, p.gt_dt, off, M::target_grad(gs, ls, w, lp));
                    A tp = M::smooth_target(ampc_load_dyn<A>(p.target, p.target_dt, off), ls, cf);
                    v[k] = gs * M::prob_grad(nn_exp(lp), st, w, tp);
                }
                if (p.gx) nn_store_chunk<T, N>(p.gx, 0, base, es, e0, cnt, vg, v);
            });
        } else {
            int64_t cls = ampc_load_dyn<int64_t>(p.target, p.target_dt, row);
            bool valid = ampc_class_target_valid(cls, p.ignore, c);
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
                    A w = smooth ? ce_weight<A>(p, e0 + k) : (A)0;
                    v[k] = gs * M::class_grad(nn_exp(v[k] - lse), e0 + k == cls, a1, a2, wsum, w, smooth);
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

/* The parameters every class-loss kernel takes: x (N, C, K) (logits or log-probabilities; for
 * nll backward its grad, whose shape is the same), target, weight?. */
static void ce_common(ce_params *p, const ampc_tensor *x, const ampc_tensor *target, const ampc_tensor *weight,
                      ampc_reduction reduction, int64_t ignore_index) {
    memset(p, 0, sizeof *p);
    p->target = ampc_data_ptr(target), p->target_dt = (int)target->dtype;
    if (weight) p->weight = ampc_data_ptr(weight), p->weight_dt = (int)weight->dtype;
    p->n = x->shape[0], p->c = x->shape[1], p->k = x->shape[2];
    p->reduction = (int)reduction, p->ignore = ignore_index;
}

/* Scratch for the row losses and weights and the reduction's partial sums; sets p's scratch
 * pointers (loss: the (N, K) output when not reduced) and returns the partials. */
template <typename A>
static A *ce_row_scratch(ampc_cuda_scratch &scratch, ce_params *p, ampc_tensor *loss) {
    int64_t rows = p->n * p->k;
    bool reduced = p->reduction != AMPC_REDUCTION_NONE;
    A *partials = scratch.as<A>(), *row_weight = partials + 2 * NN_SUM_MAX_BLOCKS;
    p->row_weight = row_weight, p->row_loss = reduced ? row_weight + rows : NULL;
    if (!reduced) p->loss = ampc_data_ptr(loss), p->loss_dt = (int)loss->dtype;
    return partials;
}

template <typename A> static size_t ce_row_scratch_bytes(const ce_params &p) {
    return sizeof(A) * (size_t)((p.reduction != AMPC_REDUCTION_NONE ? 2 : 1) * p.n * p.k + 2 * NN_SUM_MAX_BLOCKS);
}

/* Sums the row losses and weights in a fixed order into the total weight and (reduced) the loss;
 * mean divides by the total weight. */
template <typename A>
static ampc_status ce_finish(cudaStream_t stream, const ce_params &p, ampc_tensor *loss, ampc_tensor *total,
                             A *partials) {
    nn_finish_args f;
    memset(&f, 0, sizeof f);
    f.total = ampc_data_ptr(total), f.total_dt = (int)total->dtype;
    if (p.reduction != AMPC_REDUCTION_NONE)
        f.loss = ampc_data_ptr(loss), f.loss_dt = (int)loss->dtype, f.reduction = p.reduction;
    f.count = -1; /* mean: over the total weight */
    return nn_sum_and_finish<A>(stream, (A *)p.row_loss, (A *)p.row_weight, p.n * p.k, partials, f);
}

/* CROSS_ENTROPY (schema cross_entropy, core/ops.def). */
struct ce_forward_run {
    const ampc_cross_entropy_args *a;
    template <typename T> ampc_status run() const {
        typedef typename nn_acc<T>::type A;
        const ampc_tensor *x = a->logits;
        ampc_tensor *loss = a->loss, *lse = a->lse, *total = a->total_weight;
        if (lse->dtype != (sizeof(A) == 8 ? AMPC_FLOAT64 : AMPC_FLOAT32))
            return ampc_set_error(AMPC_E_RUNTIME, "cross_entropy: lse of dtype %s for logits of dtype %s",
                                  ampc_dtype_name(lse->dtype), ampc_dtype_name(x->dtype));
        int dev = (int)x->device.index;
        cudaStream_t stream = ampc_cuda_stream_of(x);
        ce_params p;
        ce_common(&p, x, a->target, a->weight, a->reduction, a->ignore_index);
        p.x = ampc_data_ptr(x), p.probs = a->probs, p.ls = a->label_smoothing;
        p.op = AMPC_OP_CROSS_ENTROPY;
        if (!p.probs) p.err = ampc_cuda_error_word(dev); /* class targets are checked */
        ampc_cuda_scratch scratch(dev, ce_row_scratch_bytes<A>(p));
        if (!scratch.ok()) return ampc_last_status();
        A *partials = ce_row_scratch<A>(scratch, &p, loss);
        p.lse = ampc_data_ptr(lse);
        AMPC_TRY((ce_launch<T, false>(p, stream)));
        return ce_finish<A>(stream, p, loss, total, partials);
    }
};

/* CROSS_ENTROPY_BACKWARD (schema cross_entropy_backward). */
struct ce_backward_run {
    const ampc_cross_entropy_backward_args *a;
    template <typename T> ampc_status run() const {
        typedef typename nn_acc<T>::type A;
        const ampc_tensor *x = a->logits;
        ampc_tensor *gx = a->grad_logits, *gt = a->grad_target;
        if (gx && gx->dtype != x->dtype)
            return ampc_set_error(AMPC_E_RUNTIME, "cross_entropy_backward: grad of dtype %s for logits of dtype %s",
                                  ampc_dtype_name(gx->dtype), ampc_dtype_name(x->dtype));
        int dev = (int)x->device.index;
        cudaStream_t stream = ampc_cuda_stream_of(x);
        ce_params p;
        ce_common(&p, x, a->target, a->weight, a->reduction, a->ignore_index);
        p.x = ampc_data_ptr(x), p.probs = a->probs, p.ls = a->label_smoothing;
        p.grad = ampc_data_ptr(a->grad_loss), p.grad_dt = (int)a->grad_loss->dtype;
        p.lse_in = ampc_data_ptr(a->lse), p.lse_dt = (int)a->lse->dtype;
        p.total = ampc_data_ptr(a->total_weight), p.total_dt = (int)a->total_weight->dtype;
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

static ampc_status cuda_cross_entropy(ampc_op op, const ampc_cross_entropy_args *a) {
    ampc_cuda_guard guard(a->logits);
    return ce_dispatch_dtype((int)a->logits->dtype, ampc_op_name(op), ce_forward_run{a});
}

static ampc_status cuda_cross_entropy_backward(ampc_op op, const ampc_cross_entropy_backward_args *a) {
    ampc_cuda_guard guard(a->logits);
    return ce_dispatch_dtype((int)a->logits->dtype, ampc_op_name(op), ce_backward_run{a});
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
                loss = ce_math<A>::nll_loss(weight, ampc_load_dyn<A>(p.x, x_dt, (ni * p.c + cls) * p.k + ki));
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
    const A gscale = ce_reduced_grad<A>(p);
    AMPC_CUDA_KERNEL_LOOP(row, rows) {
        int64_t ni = row / p.k, ki = row - ni * p.k;
        int64_t cls = ampc_load_dyn<int64_t>(p.target, p.target_dt, row);
        if (!ampc_class_target_valid(cls, p.ignore, p.c)) continue;
        A g = p.reduction != AMPC_REDUCTION_NONE ? gscale : ampc_load_dyn<A>(p.grad, p.grad_dt, row);
        ampc_store_dyn<A>(p.gx, gx_dt, (ni * p.c + cls) * p.k + ki, ce_math<A>::nll_grad(ce_weight<A>(p, cls), g));
    }
}

/* NLL_LOSS (schema nll_loss). */
template <typename A> static ampc_status nll_forward(const ampc_nll_loss_args *a) {
    const ampc_tensor *x = a->logp;
    int dev = (int)x->device.index;
    cudaStream_t stream = ampc_cuda_stream_of(x);
    ce_params p;
    ce_common(&p, x, a->target, a->weight, a->reduction, a->ignore_index);
    p.x = ampc_data_ptr(x);
    p.err = ampc_cuda_error_word(dev), p.op = AMPC_OP_NLL_LOSS;
    int64_t rows = p.n * p.k;
    ampc_cuda_scratch scratch(dev, ce_row_scratch_bytes<A>(p));
    if (!scratch.ok()) return ampc_last_status();
    A *partials = ce_row_scratch<A>(scratch, &p, a->loss);
    if (rows > 0) {
        nll_forward_kernel<A><<<ampc_cuda_blocks(rows), AMPC_CUDA_THREADS, 0, stream>>>(p, (int)x->dtype);
        AMPC_CUDA_CHECK_LAUNCH();
    }
    return ce_finish<A>(stream, p, a->loss, a->total_weight, partials);
}

static ampc_status cuda_nll_loss(ampc_op op, const ampc_nll_loss_args *a) {
    ampc_cuda_guard guard(a->logp);
    return a->logp->dtype == AMPC_FLOAT64 ? nll_forward<double>(a) : nll_forward<float>(a);
}

/* NLL_LOSS_BACKWARD (schema nll_loss_backward): grad logp (N, C, K). */
static ampc_status cuda_nll_loss_backward(ampc_op op, const ampc_nll_loss_backward_args *a) {
    ampc_tensor *gx = a->grad_logp;
    ampc_cuda_guard guard(gx);
    cudaStream_t stream = ampc_cuda_stream_of(gx);
    ce_params p;
    ce_common(&p, gx, a->target, a->weight, a->reduction, a->ignore_index);
    p.grad = ampc_data_ptr(a->grad_loss), p.grad_dt = (int)a->grad_loss->dtype;
    p.total = ampc_data_ptr(a->total_weight), p.total_dt = (int)a->total_weight->dtype;
    p.gx = ampc_data_ptr(gx);
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

extern "C" void ampc_cuda_register_nn_loss_class(void) {
    ampc_register_cross_entropy(AMPC_CUDA, cuda_cross_entropy);
    ampc_register_cross_entropy_backward(AMPC_CUDA, cuda_cross_entropy_backward);
    ampc_register_nll_loss(AMPC_CUDA, cuda_nll_loss);
    ampc_register_nll_loss_backward(AMPC_CUDA, cuda_nll_loss_backward);
}
