/* elementwise_math_more.h: the formulas of the elementwise rows that issue 12 added to ops.def
 * (inverse and hyperbolic trigonometry, log/exp variants, special functions, rounding parts,
 * sign tests, copysign/fmod/hypot/nextafter/logaddexp/xlogy, gcd/lcm, shifts, fmax/fmin).
 *
 * Same contract as elementwise_math.h, which includes this file where its stamping macros and
 * parameter types exist: ampc_ew_<stem>_<s>(x, p) / (a, b, p) per opmath suffix s, AMPC_HD, the
 * terms of PyTorch's CPU kernels (aten/src/ATen/native/cpu: UnaryOpsKernel.cpp, BinaryOpsKernel.cpp),
 * fp16/bf16 computed in float and rounded once by the loop. Kept apart only so each file stays
 * one readable size. */
#ifndef AMPC_ELEMENTWISE_MATH_MORE_H
#define AMPC_ELEMENTWISE_MATH_MORE_H

#include "special_math.h"

/* floating forms: T the type, S the suffix, M(fn) the libm function for T */
#define AMPC_DEFINE_EW_FLOAT_MORE(T, S, M)                                                                      \
    AMPC_HD T ampc_ew_acos_##S(T x, ampc_ew_params_##S p) { return M(acos)(x); }                                 \
    AMPC_HD T ampc_ew_asin_##S(T x, ampc_ew_params_##S p) { return M(asin)(x); }                                 \
    AMPC_HD T ampc_ew_atan_##S(T x, ampc_ew_params_##S p) { return M(atan)(x); }                                 \
    AMPC_HD T ampc_ew_cosh_##S(T x, ampc_ew_params_##S p) { return M(cosh)(x); }                                 \
    AMPC_HD T ampc_ew_sinh_##S(T x, ampc_ew_params_##S p) { return M(sinh)(x); }                                 \
    AMPC_HD T ampc_ew_tan_##S(T x, ampc_ew_params_##S p) { return M(tan)(x); }                                   \
    AMPC_HD T ampc_ew_acosh_##S(T x, ampc_ew_params_##S p) { return M(acosh)(x); }                               \
    AMPC_HD T ampc_ew_asinh_##S(T x, ampc_ew_params_##S p) { return M(asinh)(x); }                               \
    AMPC_HD T ampc_ew_atanh_##S(T x, ampc_ew_params_##S p) { return M(atanh)(x); }                               \
    AMPC_HD T ampc_ew_log1p_##S(T x, ampc_ew_params_##S p) { return M(log1p)(x); }                               \
    AMPC_HD T ampc_ew_expm1_##S(T x, ampc_ew_params_##S p) { return M(expm1)(x); }                               \
    AMPC_HD T ampc_ew_exp2_##S(T x, ampc_ew_params_##S p) { return M(exp2)(x); }                                 \
    AMPC_HD T ampc_ew_log2_##S(T x, ampc_ew_params_##S p) { return M(log2)(x); }                                 \
    AMPC_HD T ampc_ew_log10_##S(T x, ampc_ew_params_##S p) { return M(log10)(x); }                               \
    AMPC_HD T ampc_ew_erfc_##S(T x, ampc_ew_params_##S p) { return M(erfc)(x); }                                 \
    AMPC_HD T ampc_ew_erfinv_##S(T x, ampc_ew_params_##S p) { return ampc_special_erfinv_##S(x); }               \
    AMPC_HD T ampc_ew_lgamma_##S(T x, ampc_ew_params_##S p) { return M(lgamma)(x); }                             \
    AMPC_HD T ampc_ew_digamma_##S(T x, ampc_ew_params_##S p) { return ampc_special_digamma_##S(x); }             \
    /* p0: the order n (an integer >= 0, checked by the frontend) */                                           \
    AMPC_HD T ampc_ew_polygamma_##S(T x, ampc_ew_params_##S p) { return ampc_special_polygamma_##S(x, (int)p.p0); } \
    AMPC_HD T ampc_ew_sinc_##S(T x, ampc_ew_params_##S p) { return ampc_special_sinc_##S(x); }                   \
    /* p0: eps (NaN: None) */                                                                                   \
    AMPC_HD T ampc_ew_logit_##S(T x, ampc_ew_params_##S p) { return ampc_special_logit_##S(x, p.p0); }           \
    AMPC_HD T ampc_ew_trunc_##S(T x, ampc_ew_params_##S p) { return M(trunc)(x); }                               \
    AMPC_HD T ampc_ew_frac_##S(T x, ampc_ew_params_##S p) { return x - M(trunc)(x); }                            \
    /* torch multiplies by the double constant read as the opmath type (mul's scalar operand) */                \
    AMPC_HD T ampc_ew_deg2rad_##S(T x, ampc_ew_params_##S p) { return x * (T)0.017453292519943295769; }          \
    AMPC_HD T ampc_ew_rad2deg_##S(T x, ampc_ew_params_##S p) { return x * (T)57.295779513082320876798; }         \
    AMPC_HD bool ampc_ew_signbit_##S(T x, ampc_ew_params_##S p) { return signbit(x) != 0; }                     \
    AMPC_HD bool ampc_ew_isneginf_##S(T x, ampc_ew_params_##S p) { return x == (T)-INFINITY; }                   \
    AMPC_HD bool ampc_ew_isposinf_##S(T x, ampc_ew_params_##S p) { return x == (T)INFINITY; }                    \
    AMPC_HD bool ampc_ew_isreal_##S(T x, ampc_ew_params_##S p) { return true; }                                  \
    /* threshold: value where x <= threshold (NaN passes); its grad passes where x > threshold */             \
    AMPC_HD T ampc_ew_threshold_##S(T x, ampc_ew_params_##S p) { return x <= p.p0 ? p.p1 : x; }                  \
    AMPC_HD T ampc_ew_threshold_backward_##S(T g, T x, ampc_ew_params_##S p) { return x <= p.p0 ? (T)0 : g; }    \
    AMPC_HD T ampc_ew_copysign_##S(T a, T b, ampc_ew_params_##S p) { return M(copysign)(a, b); }                 \
    AMPC_HD T ampc_ew_fmod_##S(T a, T b, ampc_ew_params_##S p) { return M(fmod)(a, b); }                         \
    AMPC_HD T ampc_ew_hypot_##S(T a, T b, ampc_ew_params_##S p) { return M(hypot)(a, b); }                       \
    AMPC_HD T ampc_ew_heaviside_##S(T a, T b, ampc_ew_params_##S p) { return a == (T)0 ? b : (T)(a > (T)0); }    \
    AMPC_HD T ampc_ew_nextafter_##S(T a, T b, ampc_ew_params_##S p) { return M(nextafter)(a, b); }               \
    /* log(e^a + e^b) = max + log1p(e^-|a - b|); equal infinities give themselves */                          \
    AMPC_HD T ampc_ew_logaddexp_##S(T a, T b, ampc_ew_params_##S p) {                                           \
        if (isinf(a) && a == b) return a;                                                                        \
        T m = a < b ? b : a;                                                                                     \
        return m + M(log1p)(M(exp)(-M(fabs)(a - b)));                                                            \
    }                                                                                                            \
    AMPC_HD T ampc_ew_logaddexp2_##S(T a, T b, ampc_ew_params_##S p) {                                          \
        const T inv_log_2 = (T)(1.0 / 0.693147180559945309417232121458176568);                                   \
        if (isinf(a) && a == b) return a;                                                                        \
        T m = a < b ? b : a;                                                                                     \
        return m + M(log1p)(M(exp2)(-M(fabs)(a - b))) * inv_log_2;                                               \
    }                                                                                                            \
    /* x log y, 0 where x == 0 unless y is NaN */                                                               \
    AMPC_HD T ampc_ew_xlogy_##S(T a, T b, ampc_ew_params_##S p) {                                               \
        if (b != b) return (T)NAN;                                                                               \
        if (a == (T)0) return (T)0;                                                                              \
        return a * M(log)(b);                                                                                    \
    }                                                                                                            \
    /* fmax/fmin: NaN loses to a number; of equal values (+0, -0) a wins, as torch's float kernels; its    \
     * bfloat16 kernel lets b win (the _b forms) */                                                            \
    AMPC_HD T ampc_ew_fmax_##S(T a, T b, ampc_ew_params_##S p) { return (b != b || a >= b) ? a : b; }            \
    AMPC_HD T ampc_ew_fmin_##S(T a, T b, ampc_ew_params_##S p) { return (b != b || a <= b) ? a : b; }            \
    AMPC_HD T ampc_ew_fmax_b_##S(T a, T b, ampc_ew_params_##S p) { return (a != a || b >= a) ? b : a; }          \
    AMPC_HD T ampc_ew_fmin_b_##S(T a, T b, ampc_ew_params_##S p) { return (a != a || b <= a) ? b : a; }          \
    AMPC_HD bool ampc_ew_logical_xor_##S(T a, T b, ampc_ew_params_##S p) { return (a != (T)0) != (b != (T)0); }

AMPC_DEFINE_EW_FLOAT_MORE(float, f, AMPC_MATH_F)
AMPC_DEFINE_EW_FLOAT_MORE(double, d, AMPC_MATH_D)
#undef AMPC_DEFINE_EW_FLOAT_MORE

/* nextafter of fp16/bf16 steps in the 16-bit format (torch's c10::nextafter for Half and
 * BFloat16), not in float: the float operands hold the 16-bit values exactly. */
#define AMPC_DEFINE_NEXTAFTER_16(SUF, H, TO16, FROM16)                                                 \
    AMPC_HD float ampc_ew_nextafter_##SUF##_f(float a, float b, ampc_ew_params_f p) {                  \
        if (a != a || b != b) return a + b;                                                            \
        if (a == b) return b;                                                                          \
        H ha = TO16(a);                                                                                \
        uint16_t bits;                                                                                 \
        memcpy(&bits, &ha, sizeof bits);                                                               \
        if (a == 0) bits = (uint16_t)((b < 0 ? 0x8000u : 0u) | 1u); /* the smallest subnormal toward b */ \
        else if ((a < b) == (a > 0)) bits = (uint16_t)(bits + 1u);                                     \
        else bits = (uint16_t)(bits - 1u);                                                             \
        memcpy(&ha, &bits, sizeof bits);                                                               \
        return FROM16(ha);                                                                             \
    }
AMPC_DEFINE_NEXTAFTER_16(f16, ampc_half, ampc_f32_to_half, ampc_half_to_f32)
AMPC_DEFINE_NEXTAFTER_16(bf16, ampc_bfloat16, ampc_f32_to_bf16, ampc_bf16_to_f32)
#undef AMPC_DEFINE_NEXTAFTER_16

/* logit and xlogy of fp16/bf16: torch's CPU kernels run them on the 16-bit type, whose every
 * operation (1 - x, the quotient, log, the product) rounds to it; these round the same way. */
#define AMPC_DEFINE_STEPWISE_16(SUF)                                                                  \
    AMPC_HD float ampc_ew_logit_##SUF##_f(float x, ampc_ew_params_f p) {                              \
        float eps = ampc_math_round_through_##SUF(p.p0);                                              \
        if (eps == eps) {                                                                             \
            float hi = ampc_math_round_through_##SUF(1.0f - eps);                                     \
            x = x < eps ? eps : (x > hi ? hi : x);                                                    \
        }                                                                                             \
        if (x == 1.0f) return INFINITY;                                                               \
        float q = ampc_math_round_through_##SUF(x / ampc_math_round_through_##SUF(1.0f - x));         \
        return logf(q);                                                                               \
    }                                                                                                 \
    AMPC_HD float ampc_ew_xlogy_##SUF##_f(float a, float b, ampc_ew_params_f p) {                     \
        if (b != b) return NAN;                                                                       \
        if (a == 0.0f) return 0.0f;                                                                   \
        return a * ampc_math_round_through_##SUF(logf(b));                                            \
    }
AMPC_DEFINE_STEPWISE_16(f16)
AMPC_DEFINE_STEPWISE_16(bf16)
#undef AMPC_DEFINE_STEPWISE_16

/* integer forms: T the type, U/ST its unsigned/signed twins, BITS its width, SIGNED 1 for signed
 * types, NEG(v) whether v < 0 (0 for unsigned types, so no always-false comparisons) */
#define AMPC_EW_NEG_S(v) ((v) < 0)
#define AMPC_EW_NEG_U(v) 0
#define AMPC_DEFINE_EW_INT_MORE(T, U, ST, S, BITS, SIGNED, NEG)                                                           \
    AMPC_HD bool ampc_ew_signbit_##S(T x, ampc_ew_params_##S p) { return NEG(x); }                  \
    AMPC_HD bool ampc_ew_isreal_##S(T x, ampc_ew_params_##S p) { return true; }                                 \
    AMPC_HD T ampc_ew_threshold_##S(T x, ampc_ew_params_##S p) { return x <= p.p0 ? p.p1 : x; }                 \
    AMPC_HD T ampc_ew_fmod_##S(T a, T b, ampc_ew_params_##S p) {                                                \
        if (b == 0) {                                                                                           \
            AMPC_EW_FLAG_ZERO_DIVISION(p);                                                                      \
            return 0;                                                                                           \
        }                                                                                                       \
        return (SIGNED && b == (T)-1) ? (T)0 : (T)(a % b);                                                      \
    }                                                                                                           \
    AMPC_HD T ampc_ew_heaviside_##S(T a, T b, ampc_ew_params_##S p) { return a == 0 ? b : (T)(a > 0); }         \
    /* gcd of |a| and |b| (|INT_MIN| wraps to itself, as torch's abs) */                                        \
    AMPC_HD T ampc_math_gcd_##S(T a, T b) {                                                                     \
        a = NEG(a) ? (T)((U)0 - (U)a) : a;                                                           \
        b = NEG(b) ? (T)((U)0 - (U)b) : b;                                                           \
        while (a != 0) {                                                                                        \
            T c = a;                                                                                            \
            a = (SIGNED && a == (T)-1) ? (T)0 : (T)(b % a);                                                     \
            b = c;                                                                                              \
        }                                                                                                       \
        return b;                                                                                               \
    }                                                                                                           \
    AMPC_HD T ampc_ew_gcd_##S(T a, T b, ampc_ew_params_##S p) { return ampc_math_gcd_##S(a, b); }               \
    AMPC_HD T ampc_ew_lcm_##S(T a, T b, ampc_ew_params_##S p) {                                                 \
        T g = ampc_math_gcd_##S(a, b);                                                                          \
        if (g == 0) return 0;                                                                                   \
        T q = (SIGNED && g == (T)-1) ? (T)((U)0 - (U)a) : (T)(a / g);                                           \
        T r = (T)((U)q * (U)b);                                                                                 \
        return NEG(r) ? (T)((U)0 - (U)r) : r;                                                        \
    }                                                                                                           \
    /* shifts by a negative count or by the width or more: 0 (left), the sign fill (right) */                   \
    AMPC_HD T ampc_ew_lshift_##S(T a, T b, ampc_ew_params_##S p) {                                              \
        if ((ST)b < 0 || b >= (T)BITS) return 0;                        \
        return (T)((U)a << b);                                                                                  \
    }                                                                                                           \
    AMPC_HD T ampc_ew_rshift_##S(T a, T b, ampc_ew_params_##S p) {                                              \
        const T max_shift = (T)(BITS - SIGNED);                                                                 \
        if ((ST)b < 0 || b >= max_shift) return (T)(NEG(a) ? -1 : 0);                                          \
        return (T)(a >> b);                                                                                     \
    }                                                                                                           \
    AMPC_HD T ampc_ew_fmax_##S(T a, T b, ampc_ew_params_##S p) { return a < b ? b : a; }                        \
    AMPC_HD T ampc_ew_fmin_##S(T a, T b, ampc_ew_params_##S p) { return b < a ? b : a; }                        \
    AMPC_HD bool ampc_ew_logical_xor_##S(T a, T b, ampc_ew_params_##S p) { return (a != 0) != (b != 0); }
AMPC_DEFINE_EW_INT_MORE(int64_t, uint64_t, int64_t, i64, 64, 1, AMPC_EW_NEG_S)
AMPC_DEFINE_EW_INT_MORE(int32_t, uint32_t, int32_t, i32, 32, 1, AMPC_EW_NEG_S)
AMPC_DEFINE_EW_INT_MORE(uint8_t, uint8_t, int8_t, u8, 8, 0, AMPC_EW_NEG_U)
#undef AMPC_DEFINE_EW_INT_MORE
#undef AMPC_EW_NEG_S
#undef AMPC_EW_NEG_U

AMPC_HD bool ampc_ew_signbit_b8(bool x, ampc_ew_params_b8 p) { return false; }
AMPC_HD bool ampc_ew_isreal_b8(bool x, ampc_ew_params_b8 p) { return true; }
AMPC_HD bool ampc_ew_heaviside_b8(bool a, bool b, ampc_ew_params_b8 p) { return a ? true : b; }
AMPC_HD bool ampc_ew_fmax_b8(bool a, bool b, ampc_ew_params_b8 p) { return a | b; }
AMPC_HD bool ampc_ew_fmin_b8(bool a, bool b, ampc_ew_params_b8 p) { return a & b; }
AMPC_HD bool ampc_ew_logical_xor_b8(bool a, bool b, ampc_ew_params_b8 p) { return a != b; }

#endif
