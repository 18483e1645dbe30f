/* elementwise_math_act_backward.h: the fused activation-backward formulas (issue 14), one kernel
 * per backward instead of a chain of elementwise ops in the activation's dtype.
 *
 * Each is ampc_ew_<stem>_<s>(g, x, p): the incoming grad g and the saved input x (or, for sigmoid
 * and tanh, the saved output y), in the opmath type (float for fp32/fp16/bf16, double for fp64),
 * rounded once by the loop. So an fp16/bf16 gradient is the fp32 value rounded once: within an
 * ulp of the truth for the rounded inputs, where the old composed rule rounded every step to
 * fp16 (GELU's x.grad was off by up to ~1000 ulps). The terms follow PyTorch's CPU kernels
 * (aten/src/ATen/native/cpu/Activation.cpp, BinaryOpsKernel.cpp): gelu_backward (p0: 0 erf,
 * 1 tanh), silu_backward, sigmoid_backward(g, y), tanh_backward(g, y), softplus_backward
 * (p0 beta, p1 threshold). Their own derivatives (double backward) are in
 * core/derivatives_act_backward.c. */
#ifndef AMPC_ELEMENTWISE_MATH_ACT_BACKWARD_H
#define AMPC_ELEMENTWISE_MATH_ACT_BACKWARD_H

#define AMPC_DEFINE_EW_ACT_BACKWARD(T, S, M)                                                                    \
    AMPC_HD T ampc_ew_gelu_backward_##S(T g, T x, ampc_ew_params_##S p) {                                       \
        if (p.p0 == (T)0) { /* cdf + x pdf; cdf = erfc(-x/sqrt2)/2 keeps the negative tail exact where       \
                             * torch's (1 + erf(x/sqrt2))/2 cancels (x < -4: no correct digit in fp32) */   \
            const T alpha = (T)0.70710678118654752440, beta = (T)(1.12837916709551257390 * 0.70710678118654752440 * 0.5); \
            T cdf = (T)0.5 * M(erfc)(-x * alpha);                                                                \
            T pdf = beta * M(exp)(x * x * (T)-0.5);                                                              \
            return g * (cdf + x * pdf);                                                                          \
        }                                                                                                        \
        /* 1 + t = 2 sigmoid(2u) and 1 - t = 2 sigmoid(-2u), t = tanh(u): the same terms as torch's            \
         * 0.5 (1 + t) + 0.5 x (1 - t^2) u' without the cancellation of 1 + t as t -> -1 */                      \
        const T beta = (T)(1.41421356237309504880 * 1.12837916709551257390 * 0.5), kappa = (T)0.044715;           \
        T x_sq = x * x, inner = beta * (x + kappa * x_sq * x);                                                   \
        /* one exp of -2|u| (never overflows): sigmoid(2u) and sigmoid(-2u) from it; in the far tail the tiny  \
         * one stays a (subnormal) number instead of 1/(1 + inf) = 0 */                                           \
        T e = M(exp)((T)-2 * M(fabs)(inner)), big = (T)1 / ((T)1 + e), small = e / ((T)1 + e);                   \
        T up = inner < (T)0 ? small : big, down = inner < (T)0 ? big : small;                                    \
        T inner_derivative = beta * ((T)1 + (T)3 * kappa * x_sq);                                                \
        return g * (up + (T)2 * x * up * down * inner_derivative);                                               \
    }                                                                                                            \
    AMPC_HD T ampc_ew_silu_backward_##S(T g, T x, ampc_ew_params_##S p) {                                       \
        T s = (T)1 / ((T)1 + M(exp)(-x));                                                                        \
        return g * s * ((T)1 + x * ((T)1 - s));                                                                  \
    }                                                                                                            \
    AMPC_HD T ampc_ew_sigmoid_backward_##S(T g, T y, ampc_ew_params_##S p) { return g * ((T)1 - y) * y; }      \
    AMPC_HD T ampc_ew_tanh_backward_##S(T g, T y, ampc_ew_params_##S p) { return g * ((T)1 - y * y); }         \
    AMPC_HD T ampc_ew_softplus_backward_##S(T g, T x, ampc_ew_params_##S p) {                                   \
        T bx = x * p.p0;                                                                                         \
        if (bx > p.p1) return g;                                                                                 \
        T z = M(exp)(bx);                                                                                        \
        return g * z / (z + (T)1);                                                                               \
    }

AMPC_DEFINE_EW_ACT_BACKWARD(float, f, AMPC_MATH_F)
AMPC_DEFINE_EW_ACT_BACKWARD(double, d, AMPC_MATH_D)
#undef AMPC_DEFINE_EW_ACT_BACKWARD

#endif
