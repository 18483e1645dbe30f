/* loss_math.h: the per-element formulas of the elementwise losses (mse, l1, smooth_l1,
 * binary_cross_entropy, binary_cross_entropy_with_logits) and their derivatives, and the
 * per-row / per-class terms of cross_entropy and nll_loss, one place for every backend: the CPU
 * kernels (cpu/cpu_nn_loss.c, cpu/cpu_nn_loss_class.c) call the double versions, the CUDA
 * kernels (cuda/cuda_nn_loss.cu, cuda/cuda_nn_loss_class.cu) the float or double ones. The
 * formulas, clamps included, are PyTorch's (aten/src/ATen/native/Loss.cpp, LossNLL.cpp,
 * SoftMax.cpp), term by term.
 *
 * AMPC_HD (half.h): static inline in C11, __host__ __device__ under nvcc. Names end in _f (float)
 * or _d (double). An absent weight is passed as 1 and an absent pos_weight as has_pw false. */
#ifndef AMPC_LOSS_MATH_H
#define AMPC_LOSS_MATH_H

#include <math.h>
#include <stdbool.h>
#include <stdint.h>

#include "half.h"

/* The losses in ops.def order: kind = op - AMPC_OP_MSE_LOSS, or op - AMPC_OP_MSE_LOSS_BACKWARD. */
enum { AMPC_LOSS_MSE, AMPC_LOSS_L1, AMPC_LOSS_SMOOTH_L1, AMPC_LOSS_BCE, AMPC_LOSS_BCE_WITH_LOGITS };

#define AMPC_LOSS_MATH_F(fn) fn##f
#define AMPC_LOSS_MATH_D(fn) fn

/* T: the type, S: the name suffix, M(fn): the libm function for T. */
#define AMPC_DEFINE_LOSS_MATH(T, S, M)                                                                         \
    /* log clamped at -100, as PyTorch's binary_cross_entropy (a NaN log clamps too) */                       \
    AMPC_HD T ampc_loss_clamped_log_##S(T v) {                                                                \
        T l = M(log)(v);                                                                                      \
        return l > (T)-100 ? l : (T)-100;                                                                     \
    }                                                                                                         \
    /* log(1 + exp(-x)), stable for large |x| */                                                              \
    AMPC_HD T ampc_loss_softplus_neg_##S(T x) { return M(log1p)(M(exp)(-M(fabs)(x))) + (x < (T)0 ? -x : (T)0); } \
    AMPC_HD T ampc_loss_mse_##S(T x, T t) { return (x - t) * (x - t); }                                       \
    AMPC_HD T ampc_loss_l1_##S(T x, T t) { return M(fabs)(x - t); }                                           \
    /* 0.5 d^2 / beta below beta, |d| - 0.5 beta above (beta == 0: l1) */                                     \
    AMPC_HD T ampc_loss_smooth_l1_##S(T x, T t, T beta) {                                                     \
        T d = M(fabs)(x - t);                                                                                 \
        return (beta == (T)0 || d >= beta) ? d - (T)0.5 * beta : (T)0.5 * d * d / beta;                       \
    }                                                                                                         \
    AMPC_HD T ampc_loss_bce_##S(T x, T t, T w) {                                                              \
        return -w * (t * ampc_loss_clamped_log_##S(x) + ((T)1 - t) * ampc_loss_clamped_log_##S((T)1 - x));   \
    }                                                                                                         \
    /* (1 - t) x + lw log(1 + exp(-x)), lw = (pw - 1) t + 1: the stable form of                               \
     * -w (pw t log(sigmoid(x)) + (1 - t) log(1 - sigmoid(x))) */                                             \
    AMPC_HD T ampc_loss_bce_with_logits_##S(T x, T t, T w, T pw, bool has_pw) {                               \
        T lw = has_pw ? (pw - (T)1) * t + (T)1 : (T)1;                                                        \
        return (((T)1 - t) * x + lw * ampc_loss_softplus_neg_##S(x)) * w;                                     \
    }                                                                                                         \
    AMPC_HD T ampc_loss_value_##S(int kind, T x, T t, T w, T pw, bool has_pw, T beta) {                       \
        switch (kind) {                                                                                       \
        case AMPC_LOSS_MSE: return ampc_loss_mse_##S(x, t);                                                   \
        case AMPC_LOSS_L1: return ampc_loss_l1_##S(x, t);                                                     \
        case AMPC_LOSS_SMOOTH_L1: return ampc_loss_smooth_l1_##S(x, t, beta);                                 \
        case AMPC_LOSS_BCE: return ampc_loss_bce_##S(x, t, w);                                                \
        default: return ampc_loss_bce_with_logits_##S(x, t, w, pw, has_pw);                                   \
        }                                                                                                     \
    }                                                                                                         \
    /* d loss / d x and d loss / d t of one element (times the loss grad by the caller) */                    \
    AMPC_HD void ampc_loss_grad_##S(int kind, T x, T t, T w, T pw, bool has_pw, T beta, T *dx, T *dt) {       \
        T d = x - t;                                                                                          \
        switch (kind) {                                                                                       \
        case AMPC_LOSS_MSE: *dx = (T)2 * d, *dt = -*dx; break;                                                \
        case AMPC_LOSS_L1: *dx = (T)((d > (T)0) - (d < (T)0)), *dt = -*dx; break;                             \
        case AMPC_LOSS_SMOOTH_L1:                                                                             \
            *dx = (beta == (T)0 || M(fabs)(d) >= beta) ? (T)((d > (T)0) - (d < (T)0)) : d / beta;             \
            *dt = -*dx;                                                                                       \
            break;                                                                                            \
        case AMPC_LOSS_BCE: { /* the denominator clamped at 1e-12, as PyTorch */                              \
            T den = ((T)1 - x) * x;                                                                           \
            *dx = w * d / (den > (T)1e-12 ? den : (T)1e-12);                                                  \
            *dt = w * (ampc_loss_clamped_log_##S((T)1 - x) - ampc_loss_clamped_log_##S(x));                   \
            break;                                                                                            \
        }                                                                                                     \
        default: { /* BCE_WITH_LOGITS */                                                                      \
            T s = (T)1 / ((T)1 + M(exp)(-x));                                                                 \
            if (has_pw) {                                                                                     \
                T pt = pw * t;                                                                                \
                *dx = ((pt + (T)1 - t) * s - pt) * w;                                                         \
                /* log(1 - s) - pw log(s) */                                                                  \
                *dt = (pw * ampc_loss_softplus_neg_##S(x) - (x + ampc_loss_softplus_neg_##S(x))) * w;         \
            } else {                                                                                          \
                *dx = (s - t) * w;                                                                            \
                *dt = -x * w;                                                                                 \
            }                                                                                                 \
        }                                                                                                     \
        }                                                                                                     \
    }                                                                                                         \
    /* ---- classification losses: logp = x - lse is a log-probability, C the class count */      \
    /* the loss grad of a reduced loss: mean divides by the total weight (or count) */                      \
    AMPC_HD T ampc_loss_grad_scale_##S(int reduction, T g, T total) { return reduction == 1 /* mean */ ? g / total : g; } \
    /* nll_loss of one row with target t: -w_t logp_t; its grad w.r.t. logp_t, -w_t g */                    \
    AMPC_HD T ampc_nll_loss_##S(T w_t, T logp_t) { return -w_t * logp_t; }                                  \
    AMPC_HD T ampc_nll_grad_##S(T w_t, T g) { return -w_t * g; }                                            \
    /* a label-smoothed probability target t' = t (1 - ls) + ls / C */                                     \
    AMPC_HD T ampc_ce_smooth_target_##S(T t, T ls, T c) { return t * ((T)1 - ls) + ls / c; }               \
    /* cross_entropy of a class-target row: -(1 - ls) w_t logp_t, plus ls / C * smooth when                 \
     * smoothing, smooth = -sum_c w_c logp_c */                                                             \
    AMPC_HD T ampc_ce_class_loss_##S(T logp_t, T w_t, T ls, T c, T smooth) {                                \
        T loss = -logp_t * w_t * ((T)1 - ls);                                                               \
        if (ls > (T)0) loss += ls / c * smooth;                                                             \
        return loss;                                                                                        \
    }                                                                                                       \
    /* one class's term of a probability-target row's loss, -sum_c w_c t'_c logp_c */                      \
    AMPC_HD T ampc_ce_prob_loss_term_##S(T w_c, T tp_c, T logp_c) { return w_c * tp_c * logp_c; }          \
    /* d loss / d x_c of a class-target row (times the loss grad by the caller), p_c = exp(logp_c),         \
     * a1 = (1 - ls) w_t, a2 = ls / C: a1 (p_c - [c == t]) + a2 (p_c sum(w) - w_c) */                       \
    AMPC_HD T ampc_ce_class_grad_##S(T p_c, bool is_target, T a1, T a2, T wsum, T w_c, bool smooth) {      \
        T term = a1 * (p_c - (is_target ? (T)1 : (T)0));                                                    \
        if (smooth) term += a2 * (p_c * wsum - w_c);                                                        \
        return term;                                                                                        \
    }                                                                                                       \
    /* a probability-target row: d loss / d x_c = p_c S - w_c t'_c, S = sum_c w_c t'_c (times the          \
     * loss grad g by the caller); d loss / d t_c = -g (1 - ls) w_c logp_c */                               \
    AMPC_HD T ampc_ce_prob_grad_##S(T p_c, T s, T w_c, T tp_c) { return p_c * s - w_c * tp_c; }            \
    AMPC_HD T ampc_ce_target_grad_##S(T g, T ls, T w_c, T logp_c) { return -g * ((T)1 - ls) * w_c * logp_c; }

AMPC_DEFINE_LOSS_MATH(float, f, AMPC_LOSS_MATH_F)
AMPC_DEFINE_LOSS_MATH(double, d, AMPC_LOSS_MATH_D)

/* whether class target t of a row counts: not ignore_index and in [0, C) */
AMPC_HD bool ampc_class_target_valid(int64_t t, int64_t ignore_index, int64_t c) {
    return t != ignore_index && t >= 0 && t < c;
}

#undef AMPC_DEFINE_LOSS_MATH
#undef AMPC_LOSS_MATH_F
#undef AMPC_LOSS_MATH_D

#endif
