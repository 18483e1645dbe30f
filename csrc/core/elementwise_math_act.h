/* elementwise_math_act.h: the formulas of torch.nn's pointwise activations (issue 13, family act):
 * elu (and selu), celu, leaky_relu, hardswish, hardsigmoid, log_sigmoid, mish, softshrink,
 * hardshrink, prelu, and their fused backward rows (g, x; params) -> grad input.
 *
 * Same stamping as elementwise_math.h: ampc_ew_<stem>_<s> in the opmath type (float for
 * fp32/fp16/bf16, double for fp64), rounded once by the loop. The terms follow PyTorch's CPU kernels
 * (aten/src/ATen/native/cpu/Activation.cpp, SoftShrink/HardShrink in the same file, PReLU in
 * UnaryOpsKernel.cpp): same branches, so NaN and the boundary points go where torch sends them.
 * Parameters: elu p0 alpha, p1 scale (selu is elu with its two constants, as torch); celu p0 alpha,
 * p1 1/alpha (computed in double by the frontend, as torch's input_scale); leaky_relu p0 the
 * negative slope; the shrinks p0 lambd. The second derivatives (double backward) are in
 * core/derivatives_act.c. */
#ifndef AMPC_ELEMENTWISE_MATH_ACT_H
#define AMPC_ELEMENTWISE_MATH_ACT_H

#define AMPC_DEFINE_EW_ACT(T, S, M)                                                                              \
    AMPC_HD T ampc_ew_elu_##S(T x, ampc_ew_params_##S p) {                                                      \
        return x <= (T)0 ? M(expm1)(x) * (p.p0 * p.p1) : x * p.p1;                                               \
    }                                                                                                            \
    AMPC_HD T ampc_ew_elu_backward_##S(T g, T x, ampc_ew_params_##S p) {                                        \
        return x <= (T)0 ? g * (p.p0 * p.p1) * M(exp)(x) : g * p.p1;                                             \
    }                                                                                                            \
    AMPC_HD T ampc_ew_celu_##S(T x, ampc_ew_params_##S p) { return x <= (T)0 ? M(expm1)(x * p.p1) * p.p0 : x; } \
    /* torch's CeluBackward0 passes input_scale 1.0 / alpha.toFloat(): 1/alpha of alpha rounded to float */    \
    AMPC_HD T ampc_ew_celu_backward_##S(T g, T x, ampc_ew_params_##S p) {                                       \
        T inv = (T)(1.0 / (double)(float)p.p0);                                                                  \
        return x <= (T)0 ? g * inv * p.p0 * M(exp)(x * inv) : g;                                                 \
    }                                                                                                            \
    AMPC_HD T ampc_ew_leaky_relu_##S(T x, ampc_ew_params_##S p) { return x > (T)0 ? x : x * p.p0; }             \
    AMPC_HD T ampc_ew_leaky_relu_backward_##S(T g, T x, ampc_ew_params_##S p) { return x > (T)0 ? g : g * p.p0; } \
    /* hardswish x relu6(x + 3) / 6; NaN stays NaN (the clamp keeps it) */                                      \
    AMPC_HD T ampc_ew_hardswish_##S(T x, ampc_ew_params_##S p) {                                                \
        return x * ampc_math_clamp_##S(x + (T)3, (T)0, (T)6) / (T)6;                                             \
    }                                                                                                            \
    AMPC_HD T ampc_ew_hardswish_backward_##S(T g, T x, ampc_ew_params_##S p) {                                  \
        /* NaN: g * NaN, as torch's vectorized loop (its scalar tail returns g) */                              \
        return x <= (T)-3 ? (T)0 : x >= (T)3 ? g : g * (x / (T)3 + (T)0.5);                                      \
    }                                                                                                            \
    AMPC_HD T ampc_ew_hardsigmoid_##S(T x, ampc_ew_params_##S p) {                                              \
        return ampc_math_clamp_##S(x + (T)3, (T)0, (T)6) / (T)6;                                                 \
    }                                                                                                            \
    AMPC_HD T ampc_ew_hardsigmoid_backward_##S(T g, T x, ampc_ew_params_##S p) {                                \
        return (x > (T)-3 && x < (T)3) ? g * (T)(1.0f / 6.0f) : (T)0; /* torch's one_sixth is a float */        \
    }                                                                                                            \
    /* log sigmoid(x) = min(x, 0) - log1p(exp(-|x|)): no overflow on either side */                             \
    AMPC_HD T ampc_ew_log_sigmoid_##S(T x, ampc_ew_params_##S p) {                                              \
        return (x < (T)0 ? x : (T)0) - M(log1p)(M(exp)(-M(fabs)(x)));                                            \
    }                                                                                                            \
    /* sigmoid(-x), from exp(-|x|) as torch's kernel */                                                         \
    AMPC_HD T ampc_ew_log_sigmoid_backward_##S(T g, T x, ampc_ew_params_##S p) {                                \
        T z = M(exp)(-M(fabs)(x));                                                                               \
        return x < (T)0 ? ((T)1 - z / ((T)1 + z)) * g : (z / ((T)1 + z)) * g;                                   \
    }                                                                                                            \
    AMPC_HD T ampc_ew_mish_##S(T x, ampc_ew_params_##S p) { return x * M(tanh)(M(log1p)(M(exp)(x))); }          \
    AMPC_HD T ampc_ew_mish_backward_##S(T g, T x, ampc_ew_params_##S p) {                                       \
        T s = (T)1 / ((T)1 + M(exp)(-x)), t = M(tanh)(M(log1p)(M(exp)(x)));                                     \
        return g * (t + x * s * ((T)1 - t * t));                                                                 \
    }                                                                                                            \
    /* the shrinks: 0 on [-lambd, lambd] (x * 0 keeps NaN, as torch's softshrink) */                            \
    AMPC_HD T ampc_ew_softshrink_##S(T x, ampc_ew_params_##S p) {                                               \
        return x > p.p0 ? x - p.p0 : (x < -p.p0 ? x + p.p0 : x * (T)0);                                          \
    }                                                                                                            \
    AMPC_HD T ampc_ew_hardshrink_##S(T x, ampc_ew_params_##S p) { return (x >= -p.p0 && x <= p.p0) ? (T)0 : x; } \
    /* NaN: 0, as torch's vectorized loop (its scalar tail returns g) */                                        \
    AMPC_HD T ampc_ew_shrink_backward_##S(T g, T x, ampc_ew_params_##S p) {                                     \
        return (x < -p.p0 || x > p.p0) ? g : (T)0;                                                               \
    }                                                                                                            \
    /* prelu(x, weight): the weight broadcast along the channels */                                             \
    AMPC_HD T ampc_ew_prelu_##S(T x, T w, ampc_ew_params_##S p) { return x > (T)0 ? x : w * x; }

AMPC_DEFINE_EW_ACT(float, f, AMPC_MATH_F)
AMPC_DEFINE_EW_ACT(double, d, AMPC_MATH_D)
#undef AMPC_DEFINE_EW_ACT

#endif
