/* cpu_nn_loss_ctc.c: the CTC loss on the CPU, torch's ctc_loss_cpu_template and
 * ctc_loss_backward_cpu_template: the alpha (forward) and beta (backward) recursions of Graves et
 * al. (2006) over the extended label sequence l' = (blank, l1, blank, l2, ..., blank), in log
 * space, one sample per task (parallel over the batch, so no two threads write one element).
 * Computed in the storage type (float32 or float64), as torch does.
 *
 * Shapes: log_probs (T, N, C); targets int64 with sample b's labels at target_offsets[b];
 * log_alpha / log_beta (N, T, S' = 2 max_target + 1), already -inf outside the lattice. */
#include <math.h>
#include <omp.h>

#include "../core/kernel_args.h"
#include "cpu_backend.h"

/* label s of sample b's extended sequence: even s is the blank, odd s the ((s - 1) / 2)-th label */
static inline int64_t target_prime(const int64_t *tg, int64_t s, int64_t blank) {
    return (s % 2 == 0) ? blank : tg[s / 2];
}

#define CTC_KERNELS(T, S, EXP, LOG)                                                                                  \
    /* log(exp(a) + exp(b) + exp(c)) with the max taken out; all -inf gives -inf */                                 \
    static inline T lse3_##S(T a, T b, T c) {                                                                        \
        T m = a > b ? a : b;                                                                                         \
        m = m > c ? m : c;                                                                                           \
        if (m == (T)-INFINITY) m = 0;                                                                                \
        return LOG(EXP(a - m) + EXP(b - m) + EXP(c - m)) + m;                                                        \
    }                                                                                                                \
    static void ctc_forward_##S(const ampc_ctc_loss_args *a) {                                                       \
        const T *lp = (const T *)ampc_data_ptr(a->log_probs);                                                        \
        const int64_t *tg_all = (const int64_t *)ampc_data_ptr(a->targets);                                          \
        const int64_t *il = (const int64_t *)ampc_data_ptr(a->input_lengths);                                        \
        const int64_t *tl = (const int64_t *)ampc_data_ptr(a->target_lengths);                                       \
        const int64_t *off = (const int64_t *)ampc_data_ptr(a->target_offsets);                                      \
        T *nll = (T *)ampc_data_ptr(a->nll), *alpha_all = (T *)ampc_data_ptr(a->log_alpha);                          \
        int64_t tmax = a->log_probs->shape[0], n = a->log_probs->shape[1], c = a->log_probs->shape[2];               \
        int64_t sp = a->log_alpha->shape[2], blank = a->blank;                                                       \
        _Pragma("omp parallel for schedule(dynamic) if (n > 1 && tmax * sp * n > 32768)")                           \
        for (int64_t b = 0; b < n; b++) {                                                                            \
            const int64_t *tg = tg_all + off[b];                                                                     \
            int64_t in_len = il[b], l = 2 * tl[b] + 1;                                                               \
            T *la = alpha_all + b * tmax * sp;                                                                       \
            if (in_len == 0) { /* torch: likelihood 1 for an empty target, else 0 */                                 \
                nll[b] = tl[b] == 0 ? (T)0 : (T)INFINITY;                                                            \
                continue;                                                                                            \
            }                                                                                                        \
            const T *lp0 = lp + b * c;                                                                               \
            la[0] = lp0[blank];                                                                                      \
            if (l > 1) la[1] = lp0[tg[0]];                                                                           \
            for (int64_t t = 1; t < in_len; t++) {                                                                   \
                const T *prev = la + (t - 1) * sp, *lpt = lp + (t * n + b) * c;                                      \
                T *cur = la + t * sp;                                                                                \
                for (int64_t s = 0; s < l; s++) {                                                                    \
                    int64_t ct = target_prime(tg, s, blank);                                                         \
                    T la2 = s > 0 ? prev[s - 1] : (T)-INFINITY;                                                      \
                    T la3 = (s > 1 && target_prime(tg, s - 2, blank) != ct) ? prev[s - 2] : (T)-INFINITY;            \
                    cur[s] = lse3_##S(prev[s], la2, la3) + lpt[ct];                                                  \
                }                                                                                                    \
            }                                                                                                        \
            const T *last = la + (in_len - 1) * sp;                                                                  \
            nll[b] = -lse3_##S(last[l - 1], l > 1 ? last[l - 2] : (T)-INFINITY, (T)-INFINITY);                       \
        }                                                                                                            \
    }                                                                                                                \
    static void ctc_backward_##S(const ampc_ctc_loss_backward_args *a) {                                             \
        const T *lp = (const T *)ampc_data_ptr(a->log_probs);                                                        \
        const int64_t *tg_all = (const int64_t *)ampc_data_ptr(a->targets);                                          \
        const int64_t *il = (const int64_t *)ampc_data_ptr(a->input_lengths);                                        \
        const int64_t *tl = (const int64_t *)ampc_data_ptr(a->target_lengths);                                       \
        const int64_t *off = (const int64_t *)ampc_data_ptr(a->target_offsets);                                      \
        const T *nll_all = (const T *)ampc_data_ptr(a->nll), *alpha_all = (const T *)ampc_data_ptr(a->log_alpha);    \
        const T *gout = (const T *)ampc_data_ptr(a->grad_nll);                                                       \
        T *grad = (T *)ampc_data_ptr(a->grad_log_probs), *beta_all = (T *)ampc_data_ptr(a->log_beta);                \
        int64_t tmax = a->log_probs->shape[0], n = a->log_probs->shape[1], c = a->log_probs->shape[2];               \
        int64_t sp = a->log_alpha->shape[2], blank = a->blank;                                                       \
        _Pragma("omp parallel for schedule(dynamic) if (n > 1 && tmax * sp * n > 32768)")                           \
        for (int64_t b = 0; b < n; b++) {                                                                            \
            const int64_t *tg = tg_all + off[b];                                                                     \
            int64_t in_len = il[b], l = 2 * tl[b] + 1;                                                               \
            T nll = nll_all[b], gr = gout[b];                                                                        \
            if (in_len == 0 || (a->zero_infinity && nll == (T)INFINITY)) continue; /* grad stays 0 */                \
            const T *la = alpha_all + b * tmax * sp;                                                                 \
            T *lb = beta_all + b * tmax * sp;                                                                        \
            /* grad[t, b, :] first collects log sum_{s: l'_s = c} alpha_t(s) beta_t(s) (eq. 16) */                   \
            for (int64_t t = 0; t < in_len; t++)                                                                     \
                for (int64_t k = 0; k < c; k++) grad[(t * n + b) * c + k] = (T)-INFINITY;                            \
            const T *lpl = lp + ((in_len - 1) * n + b) * c;                                                          \
            T *gl = grad + ((in_len - 1) * n + b) * c;                                                               \
            T *lbl = lb + (in_len - 1) * sp;                                                                         \
            const T *lal = la + (in_len - 1) * sp;                                                                   \
            lbl[l - 1] = lpl[blank];                                                                                 \
            gl[blank] = lal[l - 1] + lbl[l - 1];                                                                     \
            if (l > 1) { /* a blank and a label: different classes, no log-add needed */                             \
                int64_t ct = tg[tl[b] - 1];                                                                          \
                lbl[l - 2] = lpl[ct];                                                                                \
                gl[ct] = lal[l - 2] + lbl[l - 2];                                                                    \
            }                                                                                                        \
            for (int64_t t = in_len - 2; t >= 0; t--) {                                                              \
                const T *next = lb + (t + 1) * sp, *lat = la + t * sp, *lpt = lp + (t * n + b) * c;                  \
                T *cur = lb + t * sp, *gt = grad + (t * n + b) * c;                                                  \
                for (int64_t s = l - 1; s >= 0; s--) {                                                               \
                    int64_t ct = target_prime(tg, s, blank);                                                         \
                    T lb2 = s < l - 1 ? next[s + 1] : (T)-INFINITY;                                                  \
                    T lb3 = (s < l - 2 && target_prime(tg, s + 2, blank) != ct) ? next[s + 2] : (T)-INFINITY;        \
                    cur[s] = lse3_##S(next[s], lb2, lb3) + lpt[ct];                                                  \
                    T ab = lat[s] + cur[s], g = gt[ct];                                                              \
                    if (g == (T)-INFINITY) {                                                                         \
                        gt[ct] = ab;                                                                                 \
                    } else {                                                                                         \
                        T m = g > ab ? g : ab;                                                                       \
                        gt[ct] = LOG(EXP(g - m) + EXP(ab - m)) + m;                                                  \
                    }                                                                                                \
                }                                                                                                    \
            }                                                                                                        \
            /* d nll / d logit: softmax minus the posterior occupancy, times the incoming grad */                    \
            for (int64_t t = 0; t < in_len; t++)                                                                     \
                for (int64_t k = 0; k < c; k++) {                                                                    \
                    T *res = grad + (t * n + b) * c + k, v = lp[(t * n + b) * c + k];                                \
                    *res = (EXP(v) - EXP(*res + nll - v)) * gr;                                                      \
                }                                                                                                    \
        }                                                                                                            \
    }

CTC_KERNELS(float, f, expf, logf)
CTC_KERNELS(double, d, exp, log)

static ampc_status cpu_ctc_loss(ampc_op op, const ampc_ctc_loss_args *a) {
    (void)op;
    if (a->log_probs->dtype == AMPC_FLOAT64)
        ctc_forward_d(a);
    else
        ctc_forward_f(a);
    return AMPC_OK;
}

static ampc_status cpu_ctc_loss_backward(ampc_op op, const ampc_ctc_loss_backward_args *a) {
    (void)op;
    if (a->log_probs->dtype == AMPC_FLOAT64)
        ctc_backward_d(a);
    else
        ctc_backward_f(a);
    return AMPC_OK;
}

void ampc_cpu_register_nn_loss_ctc(void) {
    ampc_register_ctc_loss(AMPC_CPU, cpu_ctc_loss);
    ampc_register_ctc_loss_backward(AMPC_CPU, cpu_ctc_loss_backward);
}
