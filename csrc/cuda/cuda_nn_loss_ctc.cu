/* cuda_nn_loss_ctc.cu: the CTC loss on CUDA, the alpha / beta recursions of
 * cpu/cpu_nn_loss_ctc.c (torch's ctc_loss_cpu_template, term for term) spread over threads:
 * one block per sample, its threads over the extended label positions s (l' = blank, l1, blank,
 * ..., blank), one __syncthreads per time step because step t reads step t - 1 (t + 1 for beta).
 * The lattices live in global memory (log_alpha is an output; log_beta the backward's scratch,
 * both (N, T, S'), -inf where never written).
 *
 * The gradient's sum over the positions s with l'_s = c (eq. 16 of Graves et al.) is done by one
 * thread per (t, b) row walking s in order, so no two threads log-add into one element (torch's
 * CUDA kernel does the same sum with a per-class loop), and the softmax term is folded in as
 * torch does: grad = (exp(lp) - exp(log(alpha beta) + nll - lp)) * grad_nll. float32/float64 in
 * their own type. */
#include "../core/kernel_args.h"
#include "cuda_common.cuh"

#define CTC_THREADS 256

__device__ __forceinline__ float ctc_exp(float v) { return expf(v); }
__device__ __forceinline__ double ctc_exp(double v) { return exp(v); }
__device__ __forceinline__ float ctc_log(float v) { return logf(v); }
__device__ __forceinline__ double ctc_log(double v) { return log(v); }

template <typename T> __device__ __forceinline__ T ctc_lse3(T a, T b, T c) {
    T m = a > b ? a : b;
    m = m > c ? m : c;
    if (m == (T)-INFINITY) m = 0;
    return ctc_log(ctc_exp(a - m) + ctc_exp(b - m) + ctc_exp(c - m)) + m;
}

__device__ __forceinline__ int64_t ctc_prime(const int64_t *tg, int64_t s, int64_t blank) {
    return (s % 2 == 0) ? blank : tg[s / 2];
}

struct ctc_params {
    const void *lp, *gout, *nll_in;
    const int64_t *tg, *il, *tl, *off;
    void *nll, *alpha, *beta, *grad;
    int64_t tmax, n, c, sp, blank;
    bool zero_infinity;
};

template <typename T> __global__ void ctc_alpha_kernel(const ctc_params p) {
    int64_t b = blockIdx.x;
    const T *lp = (const T *)p.lp;
    const int64_t *tg = p.tg + p.off[b];
    int64_t in_len = p.il[b], l = 2 * p.tl[b] + 1;
    T *la = (T *)p.alpha + b * p.tmax * p.sp;
    if (in_len == 0) {
        if (threadIdx.x == 0) ((T *)p.nll)[b] = p.tl[b] == 0 ? (T)0 : (T)INFINITY;
        return;
    }
    if (threadIdx.x == 0) {
        la[0] = lp[b * p.c + p.blank];
        if (l > 1) la[1] = lp[b * p.c + tg[0]];
    }
    __syncthreads();
    for (int64_t t = 1; t < in_len; t++) {
        const T *prev = la + (t - 1) * p.sp, *lpt = lp + (t * p.n + b) * p.c;
        T *cur = la + t * p.sp;
        for (int64_t s = threadIdx.x; s < l; s += blockDim.x) {
            int64_t ct = ctc_prime(tg, s, p.blank);
            T la2 = s > 0 ? prev[s - 1] : (T)-INFINITY;
            T la3 = (s > 1 && ctc_prime(tg, s - 2, p.blank) != ct) ? prev[s - 2] : (T)-INFINITY;
            cur[s] = ctc_lse3(prev[s], la2, la3) + lpt[ct];
        }
        __syncthreads();
    }
    if (threadIdx.x == 0) {
        const T *last = la + (in_len - 1) * p.sp;
        ((T *)p.nll)[b] = -ctc_lse3(last[l - 1], l > 1 ? last[l - 2] : (T)-INFINITY, (T)-INFINITY);
    }
}

template <typename T> __global__ void ctc_beta_kernel(const ctc_params p) {
    int64_t b = blockIdx.x;
    const T *lp = (const T *)p.lp;
    const int64_t *tg = p.tg + p.off[b];
    int64_t in_len = p.il[b], l = 2 * p.tl[b] + 1;
    T nll = ((const T *)p.nll_in)[b];
    if (in_len == 0 || (p.zero_infinity && nll == (T)INFINITY)) return;
    T *lb = (T *)p.beta + b * p.tmax * p.sp;
    if (threadIdx.x == 0) {
        const T *lpl = lp + ((in_len - 1) * p.n + b) * p.c;
        T *lbl = lb + (in_len - 1) * p.sp;
        lbl[l - 1] = lpl[p.blank];
        if (l > 1) lbl[l - 2] = lpl[tg[p.tl[b] - 1]];
    }
    __syncthreads();
    for (int64_t t = in_len - 2; t >= 0; t--) {
        const T *next = lb + (t + 1) * p.sp, *lpt = lp + (t * p.n + b) * p.c;
        T *cur = lb + t * p.sp;
        for (int64_t s = threadIdx.x; s < l; s += blockDim.x) {
            int64_t ct = ctc_prime(tg, s, p.blank);
            T lb2 = s < l - 1 ? next[s + 1] : (T)-INFINITY;
            T lb3 = (s < l - 2 && ctc_prime(tg, s + 2, p.blank) != ct) ? next[s + 2] : (T)-INFINITY;
            cur[s] = ctc_lse3(next[s], lb2, lb3) + lpt[ct];
        }
        __syncthreads();
    }
}

/* one thread per (t, b) row of grad (T, N, C); rows past the input length stay 0 */
template <typename T> __global__ void ctc_grad_kernel(const ctc_params p) {
    int64_t row = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= p.tmax * p.n) return;
    int64_t t = row / p.n, b = row % p.n;
    int64_t in_len = p.il[b], l = 2 * p.tl[b] + 1;
    T nll = ((const T *)p.nll_in)[b];
    if (t >= in_len || (p.zero_infinity && nll == (T)INFINITY)) return;
    const int64_t *tg = p.tg + p.off[b];
    const T *lat = (const T *)p.alpha + (b * p.tmax + t) * p.sp, *lbt = (const T *)p.beta + (b * p.tmax + t) * p.sp;
    const T *lp = (const T *)p.lp + row * p.c;
    T *g = (T *)p.grad + row * p.c, gr = ((const T *)p.gout)[b];
    for (int64_t k = 0; k < p.c; k++) g[k] = (T)-INFINITY;
    for (int64_t s = 0; s < l; s++) {
        int64_t ct = ctc_prime(tg, s, p.blank);
        T ab = lat[s] + lbt[s], cur = g[ct];
        if (cur == (T)-INFINITY) {
            g[ct] = ab;
        } else {
            T m = cur > ab ? cur : ab;
            g[ct] = ctc_log(ctc_exp(cur - m) + ctc_exp(ab - m)) + m;
        }
    }
    for (int64_t k = 0; k < p.c; k++) g[k] = (ctc_exp(lp[k]) - ctc_exp(g[k] + nll - lp[k])) * gr;
}

static ctc_params ctc_common(const ampc_tensor *lp, const ampc_tensor *tg, const ampc_tensor *il,
                             const ampc_tensor *tl, const ampc_tensor *off, const ampc_tensor *alpha, int64_t blank) {
    ctc_params p;
    memset(&p, 0, sizeof p);
    p.lp = ampc_data_ptr(lp);
    p.tg = (const int64_t *)ampc_data_ptr(tg);
    p.il = (const int64_t *)ampc_data_ptr(il);
    p.tl = (const int64_t *)ampc_data_ptr(tl);
    p.off = (const int64_t *)ampc_data_ptr(off);
    p.alpha = ampc_data_ptr(alpha);
    p.tmax = lp->shape[0], p.n = lp->shape[1], p.c = lp->shape[2], p.sp = alpha->shape[2], p.blank = blank;
    return p;
}

static ampc_status cuda_ctc_loss(ampc_op op, const ampc_ctc_loss_args *a) {
    (void)op;
    ampc_cuda_guard guard(a->log_probs);
    ctc_params p = ctc_common(a->log_probs, a->targets, a->input_lengths, a->target_lengths, a->target_offsets,
                              a->log_alpha, a->blank);
    p.nll = ampc_data_ptr(a->nll);
    cudaStream_t stream = ampc_cuda_stream_of(a->log_probs);
    if (a->log_probs->dtype == AMPC_FLOAT64)
        ctc_alpha_kernel<double><<<(unsigned)p.n, CTC_THREADS, 0, stream>>>(p);
    else
        ctc_alpha_kernel<float><<<(unsigned)p.n, CTC_THREADS, 0, stream>>>(p);
    AMPC_CUDA_CHECK_LAUNCH();
    return AMPC_OK;
}

static ampc_status cuda_ctc_loss_backward(ampc_op op, const ampc_ctc_loss_backward_args *a) {
    (void)op;
    ampc_cuda_guard guard(a->log_probs);
    ctc_params p = ctc_common(a->log_probs, a->targets, a->input_lengths, a->target_lengths, a->target_offsets,
                              a->log_alpha, a->blank);
    p.nll_in = ampc_data_ptr(a->nll);
    p.gout = ampc_data_ptr(a->grad_nll);
    p.beta = ampc_data_ptr(a->log_beta);
    p.grad = ampc_data_ptr(a->grad_log_probs);
    p.zero_infinity = a->zero_infinity;
    cudaStream_t stream = ampc_cuda_stream_of(a->log_probs);
    int64_t rows = p.tmax * p.n;
    unsigned blocks = (unsigned)((rows + CTC_THREADS - 1) / CTC_THREADS);
    if (a->log_probs->dtype == AMPC_FLOAT64) {
        ctc_beta_kernel<double><<<(unsigned)p.n, CTC_THREADS, 0, stream>>>(p);
        AMPC_CUDA_CHECK_LAUNCH();
        if (rows) ctc_grad_kernel<double><<<blocks, CTC_THREADS, 0, stream>>>(p);
    } else {
        ctc_beta_kernel<float><<<(unsigned)p.n, CTC_THREADS, 0, stream>>>(p);
        AMPC_CUDA_CHECK_LAUNCH();
        if (rows) ctc_grad_kernel<float><<<blocks, CTC_THREADS, 0, stream>>>(p);
    }
    AMPC_CUDA_CHECK_LAUNCH();
    return AMPC_OK;
}

extern "C" void ampc_cuda_register_nn_loss_ctc(void) {
    ampc_register_ctc_loss(AMPC_CUDA, cuda_ctc_loss);
    ampc_register_ctc_loss_backward(AMPC_CUDA, cuda_ctc_loss_backward);
}
