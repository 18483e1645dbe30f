/* elementwise_math.h: the scalar formulas of ampc's elementwise ops, one place for every backend.
 *
 * Each function computes one element in the op's "opmath" type: float (for float32, float16 and
 * bfloat16 tensors, which PyTorch computes in float and rounds once on store) or double. The
 * formulas follow PyTorch's CPU kernels term by term (same constants, same association), so the
 * results agree with torch to the last bit for the arithmetic ops and within libm's error for
 * the transcendental ones. Integer helpers wrap on overflow as PyTorch's do (through unsigned
 * arithmetic, which C defines) and never divide by zero or trap on INT_MIN / -1: the caller has
 * checked the divisor.
 *
 * Everything is AMPC_HD (half.h): `static inline` in C11, `__host__ __device__` under nvcc, so the
 * CUDA kernels include this header unchanged. Names end in _f (float), _d (double) or the
 * integer type (_i64, _i32, _u8), after the prefix ampc_math_. The last section (ampc_ew_*) is
 * host code: how scalar operands and parameters are converted before a kernel runs. */
#ifndef AMPC_ELEMENTWISE_MATH_H
#define AMPC_ELEMENTWISE_MATH_H

#include <math.h>
#include <stdbool.h>
#include <stdint.h>

#include "half.h"
#include "scalar.h"

/* ---- floating point: one body, stamped out for float (libm's *f functions) and double ----
 * T: the type, S: the name suffix, M(fn): the libm function for T. */
#define AMPC_MATH_F(fn) fn##f
#define AMPC_MATH_D(fn) fn

#define AMPC_DEFINE_FLOAT_MATH(T, S, M)                                                                \
    AMPC_HD T ampc_math_rsqrt_##S(T x) { return (T)1 / M(sqrt)(x); }                                   \
    AMPC_HD T ampc_math_reciprocal_##S(T x) { return (T)1 / x; }                                       \
    AMPC_HD T ampc_math_sigmoid_##S(T x) { return (T)1 / ((T)1 + M(exp)(-x)); }                        \
    /* relu is clamp_min(x, 0): NaN stays NaN and -0.0 stays -0.0, as in torch. */                     \
    AMPC_HD T ampc_math_relu_##S(T x) { return x < (T)0 ? (T)0 : x; }                                  \
    /* gelu, exact: x/2 * (1 + erf(x / sqrt(2))) */                                                    \
    AMPC_HD T ampc_math_gelu_##S(T x) {                                                                \
        return x * (T)0.5 * ((T)1 + M(erf)(x * (T)0.70710678118654752440));                            \
    }                                                                                                  \
    /* gelu, tanh approximation: x/2 * (1 + tanh(sqrt(2/pi) * (x + 0.044715 x^3))) */                  \
    AMPC_HD T ampc_math_gelu_tanh_##S(T x) {                                                           \
        const T beta = (T)(1.41421356237309504880 * 1.12837916709551257390 * 0.5);                     \
        const T kappa = (T)0.044715;                                                                   \
        T inner = beta * (x + kappa * (x * x * x));                                                    \
        return (T)0.5 * x * ((T)1 + M(tanh)(inner));                                                   \
    }                                                                                                  \
    AMPC_HD T ampc_math_silu_##S(T x) { return x / ((T)1 + M(exp)(-x)); }                              \
    /* softplus: log(1 + exp(beta x)) / beta, linear above the threshold */                            \
    AMPC_HD T ampc_math_softplus_##S(T x, T beta, T threshold) {                                       \
        return x * beta > threshold ? x : M(log1p)(M(exp)(x * beta)) / beta;                           \
    }                                                                                                  \
    /* sign: 0 for NaN and for both zeros, as torch.sign */                                            \
    AMPC_HD T ampc_math_sign_##S(T x) { return (T)((x > (T)0) - (x < (T)0)); }                         \
    /* round half to even (std::nearbyint in the default rounding mode) */                             \
    AMPC_HD T ampc_math_round_##S(T x) { return M(nearbyint)(x); }                                     \
    /* maximum/minimum propagate NaN (a + b is NaN when either is) */                                  \
    AMPC_HD T ampc_math_maximum_##S(T a, T b) { return (a != a || b != b) ? a + b : (a < b ? b : a); } \
    AMPC_HD T ampc_math_minimum_##S(T a, T b) { return (a != a || b != b) ? a + b : (b < a ? b : a); } \
    /* clamp to [lo, hi] (hi wins when lo > hi); NaN x stays NaN. NaN bounds are the caller's. */      \
    AMPC_HD T ampc_math_clamp_##S(T x, T lo, T hi) {                                                   \
        T t = x < lo ? lo : x;                                                                         \
        return t > hi ? hi : t;                                                                        \
    }                                                                                                  \
    /* Python's %: the result takes the divisor's sign */                                              \
    AMPC_HD T ampc_math_remainder_##S(T a, T b) {                                                      \
        T mod = M(fmod)(a, b);                                                                         \
        if (mod != (T)0 && ((b < (T)0) != (mod < (T)0))) mod += b;                                     \
        return mod;                                                                                    \
    }                                                                                                  \
    /* Python's //, computed through fmod so that a == b * (a // b) + a % b holds exactly */           \
    AMPC_HD T ampc_math_floor_divide_##S(T a, T b) {                                                   \
        if (b == (T)0) return a / b;                                                                   \
        T mod = M(fmod)(a, b);                                                                         \
        T div = (a - mod) / b;                                                                         \
        if (mod != (T)0 && ((b < (T)0) != (mod < (T)0))) div -= (T)1;                                  \
        T floordiv;                                                                                    \
        if (div != (T)0) {                                                                             \
            floordiv = M(floor)(div);                                                                  \
            if (div - floordiv > (T)0.5) floordiv += (T)1;                                             \
        } else {                                                                                       \
            floordiv = M(copysign)((T)0, a / b);                                                       \
        }                                                                                              \
        return floordiv;                                                                               \
    }                                                                                                  \
    AMPC_HD T ampc_math_trunc_divide_##S(T a, T b) { return M(trunc)(a / b); }

AMPC_DEFINE_FLOAT_MATH(float, f, AMPC_MATH_F)
AMPC_DEFINE_FLOAT_MATH(double, d, AMPC_MATH_D)

/* ---- integers: T the type, U its unsigned twin (wrapping arithmetic), S the suffix ---- */
#define AMPC_DEFINE_INT_MATH(T, U, S)                                                                              \
    AMPC_HD T ampc_math_wrap_add_##S(T a, T b) { return (T)((U)a + (U)b); }                                        \
    AMPC_HD T ampc_math_wrap_sub_##S(T a, T b) { return (T)((U)a - (U)b); }                                        \
    AMPC_HD T ampc_math_wrap_mul_##S(T a, T b) { return (T)((U)a * (U)b); }                                        \
    AMPC_HD T ampc_math_wrap_neg_##S(T a) { return (T)((U)0 - (U)a); }                                             \
    AMPC_HD T ampc_math_abs_##S(T a) { return a < (T)0 ? (T)((U)0 - (U)a) : a; }                                   \
    AMPC_HD T ampc_math_sign_##S(T a) { return (T)((a > (T)0) - (a < (T)0)); }                                     \
    AMPC_HD T ampc_math_relu_##S(T a) { return a < (T)0 ? (T)0 : a; }                                              \
    AMPC_HD T ampc_math_clamp_##S(T x, T lo, T hi) {                                                               \
        T t = x < lo ? lo : x;                                                                                     \
        return t > hi ? hi : t;                                                                                    \
    }                                                                                                              \
    /* b != 0 (checked by the caller); b == -1 is done by negation: INT_MIN / -1 traps in C. */                    \
    AMPC_HD T ampc_math_trunc_divide_##S(T a, T b) { return b == (T)-1 ? ampc_math_wrap_neg_##S(a) : (T)(a / b); } \
    AMPC_HD T ampc_math_floor_divide_##S(T a, T b) {                                                               \
        if (b == (T)-1) return ampc_math_wrap_neg_##S(a);                                                          \
        T q = (T)(a / b), r = (T)(a % b);                                                                          \
        return (r != (T)0 && ((r < (T)0) != (b < (T)0))) ? (T)(q - (T)1) : q;                                      \
    }                                                                                                              \
    AMPC_HD T ampc_math_remainder_##S(T a, T b) {                                                                  \
        if (b == (T)-1) return (T)0;                                                                               \
        T r = (T)(a % b);                                                                                          \
        return (r != (T)0 && ((r < (T)0) != (b < (T)0))) ? (T)(r + b) : r;                                         \
    }                                                                                                              \
    /* integer power by squaring; negative exponents give 1, -1 or 0 like torch's powi */                          \
    AMPC_HD T ampc_math_powi_##S(T a, T b) {                                                                       \
        if (b < (T)0) {                                                                                            \
            if (a == (T)1) return (T)1;                                                                            \
            if (a == (T)-1) return (b % (T)2) ? (T)-1 : (T)1;                                                      \
            return (T)0;                                                                                           \
        }                                                                                                          \
        U result = 1, base = (U)a;                                                                                 \
        while (b) {                                                                                                \
            if (b & (T)1) result *= base;                                                                          \
            b = (T)(b / (T)2);                                                                                     \
            base *= base;                                                                                          \
        }                                                                                                          \
        return (T)result;                                                                                          \
    }

AMPC_DEFINE_INT_MATH(int64_t, uint64_t, i64)
AMPC_DEFINE_INT_MATH(int32_t, uint32_t, i32)

/* uint8: no negative values, so no sign fix-ups; arithmetic wraps modulo 256 on the cast. */
AMPC_HD uint8_t ampc_math_wrap_add_u8(uint8_t a, uint8_t b) { return (uint8_t)(a + b); }
AMPC_HD uint8_t ampc_math_wrap_sub_u8(uint8_t a, uint8_t b) { return (uint8_t)(a - b); }
AMPC_HD uint8_t ampc_math_wrap_mul_u8(uint8_t a, uint8_t b) { return (uint8_t)((unsigned)a * (unsigned)b); }
AMPC_HD uint8_t ampc_math_wrap_neg_u8(uint8_t a) { return (uint8_t)(0u - a); }
AMPC_HD uint8_t ampc_math_abs_u8(uint8_t a) { return a; }
AMPC_HD uint8_t ampc_math_sign_u8(uint8_t a) { return (uint8_t)(a > 0); }
AMPC_HD uint8_t ampc_math_relu_u8(uint8_t a) { return a; }
AMPC_HD uint8_t ampc_math_clamp_u8(uint8_t x, uint8_t lo, uint8_t hi) {
    uint8_t t = x < lo ? lo : x;
    return t > hi ? hi : t;
}
AMPC_HD uint8_t ampc_math_trunc_divide_u8(uint8_t a, uint8_t b) { return (uint8_t)(a / b); }
AMPC_HD uint8_t ampc_math_floor_divide_u8(uint8_t a, uint8_t b) { return (uint8_t)(a / b); }
AMPC_HD uint8_t ampc_math_remainder_u8(uint8_t a, uint8_t b) { return (uint8_t)(a % b); }
AMPC_HD uint8_t ampc_math_powi_u8(uint8_t a, uint8_t b) {
    unsigned result = 1, base = a;
    while (b) {
        if (b & 1u) result = (result * base) & 0xffu;
        b = (uint8_t)(b / 2);
        base = (base * base) & 0xffu;
    }
    return (uint8_t)result;
}

/* ---- fp16/bf16 floor division, rounded after every step ----
 * torch's CPU floor division of fp16/bf16 tensors runs on Vectorized<Half/BFloat16>, which rounds
 * to the 16-bit type after every step of the formula (only a scalar divisor takes the float
 * path). This is that stepwise form, so CPU and GPU agree with torch bit for bit. */
AMPC_HD float ampc_math_round_through_f16(float x) { return ampc_half_to_f32(ampc_f32_to_half(x)); }
AMPC_HD float ampc_math_round_through_bf16(float x) { return ampc_bf16_to_f32(ampc_f32_to_bf16(x)); }
#define AMPC_DEFINE_FLOOR_DIVIDE_STEPWISE(S)                                                      \
    AMPC_HD float ampc_math_floor_divide_stepwise_##S(float a, float b) {                         \
        if (b == 0) return a / b;                                                                 \
        float mod = ampc_math_round_through_##S(fmodf(a, b));                                     \
        float div = ampc_math_round_through_##S(ampc_math_round_through_##S(a - mod) / b);        \
        if (mod != 0 && ((b < 0) != (mod < 0))) div = ampc_math_round_through_##S(div - 1);       \
        if (div == 0) return copysignf(0, ampc_math_round_through_##S(a / b));                    \
        float floordiv = floorf(div);                                                             \
        if (ampc_math_round_through_##S(div - floordiv) > 0.5f)                                   \
            floordiv = ampc_math_round_through_##S(floordiv + 1);                                 \
        return floordiv;                                                                          \
    }
AMPC_DEFINE_FLOOR_DIVIDE_STEPWISE(f16)
AMPC_DEFINE_FLOOR_DIVIDE_STEPWISE(bf16)

/* ---- the formulas of the op table's elementwise forms ----
 * One function per (STEM, opmath suffix) of ops.def's AMPC_EW_OP / AMPC_EW_FORM rows:
 * ampc_ew_<stem>_<s>(x, p) for unary forms, ampc_ew_<stem>_<s>(a, b, p) for binary ones, s being
 * f (float32, float16 and bfloat16 compute in float), d (float64), i64, i32, u8 or b8. Both
 * backends' loop tables are generated from the rows and call these, so a form's math exists
 * once. p carries the form's parameters (ampc_ew_params_<s>: p0, p1 in the opmath type, the
 * unrounded exponent, and where an integer division by zero is reported).
 * A product that the CPU rounds on its own is written ampc_ew_mul_rn_<s>: nvcc would otherwise
 * fuse it into an FMA that the CPU (C11, -ffp-contract=off) never does. */
#define AMPC_DEFINE_EW_PARAMS(T, S) \
    typedef struct ampc_ew_params_##S { \
        T p0, p1;                       \
        double exponent;                \
        int *error_word;                \
        int error_code;                 \
    } ampc_ew_params_##S;
AMPC_DEFINE_EW_PARAMS(float, f)
AMPC_DEFINE_EW_PARAMS(double, d)
AMPC_DEFINE_EW_PARAMS(int64_t, i64)
AMPC_DEFINE_EW_PARAMS(int32_t, i32)
AMPC_DEFINE_EW_PARAMS(uint8_t, u8)
AMPC_DEFINE_EW_PARAMS(bool, b8)
#undef AMPC_DEFINE_EW_PARAMS

#if defined(__CUDA_ARCH__)
AMPC_HD float ampc_ew_mul_rn_f(float a, float b) { return __fmul_rn(a, b); }
AMPC_HD double ampc_ew_mul_rn_d(double a, double b) { return __dmul_rn(a, b); }
/* An integer division by zero: the element becomes 0 and the device's deferred error word
 * records it (raised at the next synchronising call); the CPU raises right after the loop. */
#define AMPC_EW_FLAG_ZERO_DIVISION(p) \
    ((p).error_word ? (void)atomicCAS((p).error_word, 0, (p).error_code) : (void)0)
#else
AMPC_HD float ampc_ew_mul_rn_f(float a, float b) { return a * b; }
AMPC_HD double ampc_ew_mul_rn_d(double a, double b) { return a * b; }
/* The CPU's flag (error_code 0: any non-zero value) or, where device code is compiled without
 * __CUDA_ARCH__ (the CUDA emulator), the device's error word with its code. */
#define AMPC_EW_FLAG_ZERO_DIVISION(p) \
    __atomic_store_n((p).error_word, (p).error_code ? (p).error_code : 1, __ATOMIC_RELAXED)
#endif

/* floating forms: T the type, S the suffix, M(fn) the libm function for T */
#define AMPC_DEFINE_EW_FLOAT(T, S, M)                                                                          \
    typedef ampc_ew_params_##S ampc_ew_p_##S;                                                                   \
    AMPC_HD T ampc_ew_neg_##S(T x, ampc_ew_p_##S p) { return -x; }                                              \
    AMPC_HD T ampc_ew_abs_##S(T x, ampc_ew_p_##S p) { return M(fabs)(x); }                                      \
    AMPC_HD T ampc_ew_exp_##S(T x, ampc_ew_p_##S p) { return M(exp)(x); }                                       \
    AMPC_HD T ampc_ew_log_##S(T x, ampc_ew_p_##S p) { return M(log)(x); }                                       \
    AMPC_HD T ampc_ew_sqrt_##S(T x, ampc_ew_p_##S p) { return M(sqrt)(x); }                                     \
    AMPC_HD T ampc_ew_rsqrt_##S(T x, ampc_ew_p_##S p) { return ampc_math_rsqrt_##S(x); }                        \
    AMPC_HD T ampc_ew_reciprocal_##S(T x, ampc_ew_p_##S p) { return ampc_math_reciprocal_##S(x); }              \
    AMPC_HD T ampc_ew_sigmoid_##S(T x, ampc_ew_p_##S p) { return ampc_math_sigmoid_##S(x); }                    \
    AMPC_HD T ampc_ew_tanh_##S(T x, ampc_ew_p_##S p) { return M(tanh)(x); }                                     \
    AMPC_HD T ampc_ew_relu_##S(T x, ampc_ew_p_##S p) { return ampc_math_relu_##S(x); }                          \
    AMPC_HD T ampc_ew_gelu_##S(T x, ampc_ew_p_##S p) { return ampc_math_gelu_##S(x); }                          \
    AMPC_HD T ampc_ew_gelu_tanh_##S(T x, ampc_ew_p_##S p) { return ampc_math_gelu_tanh_##S(x); }                \
    AMPC_HD T ampc_ew_silu_##S(T x, ampc_ew_p_##S p) { return ampc_math_silu_##S(x); }                          \
    AMPC_HD T ampc_ew_softplus_##S(T x, ampc_ew_p_##S p) { return ampc_math_softplus_##S(x, p.p0, p.p1); }      \
    AMPC_HD T ampc_ew_sin_##S(T x, ampc_ew_p_##S p) { return M(sin)(x); }                                       \
    AMPC_HD T ampc_ew_cos_##S(T x, ampc_ew_p_##S p) { return M(cos)(x); }                                       \
    AMPC_HD T ampc_ew_erf_##S(T x, ampc_ew_p_##S p) { return M(erf)(x); }                                       \
    AMPC_HD T ampc_ew_sign_##S(T x, ampc_ew_p_##S p) { return ampc_math_sign_##S(x); }                          \
    AMPC_HD T ampc_ew_floor_##S(T x, ampc_ew_p_##S p) { return M(floor)(x); }                                   \
    AMPC_HD T ampc_ew_ceil_##S(T x, ampc_ew_p_##S p) { return M(ceil)(x); }                                     \
    AMPC_HD T ampc_ew_round_##S(T x, ampc_ew_p_##S p) { return ampc_math_round_##S(x); }                        \
    AMPC_HD T ampc_ew_round_decimals_##S(T x, ampc_ew_p_##S p) { return ampc_math_round_##S(x * p.p0) / p.p0; } \
    AMPC_HD T ampc_ew_round_neg_decimals_##S(T x, ampc_ew_p_##S p) { return ampc_math_round_##S(x / p.p0) * p.p0; } \
    AMPC_HD bool ampc_ew_logical_not_##S(T x, ampc_ew_p_##S p) { return x == (T)0; }                            \
    AMPC_HD bool ampc_ew_isfinite_##S(T x, ampc_ew_p_##S p) { return isfinite(x); }                             \
    AMPC_HD bool ampc_ew_isnan_##S(T x, ampc_ew_p_##S p) { return isnan(x); }                                   \
    AMPC_HD bool ampc_ew_isinf_##S(T x, ampc_ew_p_##S p) { return isinf(x); }                                   \
    AMPC_HD T ampc_ew_clamp_##S(T x, ampc_ew_p_##S p) { return ampc_math_clamp_##S(x, p.p0, p.p1); }            \
    /* hardtanh: clamp to [min_val, max_val]; its grad passes where min_val < x < max_val (and NaN) */         \
    AMPC_HD T ampc_ew_hardtanh_##S(T x, ampc_ew_p_##S p) { return ampc_math_clamp_##S(x, p.p0, p.p1); }         \
    AMPC_HD T ampc_ew_hardtanh_backward_##S(T g, T x, ampc_ew_p_##S p) { return (x <= p.p0 || x >= p.p1) ? (T)0 : g; } \
    AMPC_HD T ampc_ew_pow_square_##S(T x, ampc_ew_p_##S p) { return x * x; }                                    \
    AMPC_HD T ampc_ew_pow_cube_##S(T x, ampc_ew_p_##S p) { return x * x * x; }                                  \
    AMPC_HD T ampc_ew_pow_inv_square_##S(T x, ampc_ew_p_##S p) { return (T)1 / (x * x); }                       \
    AMPC_HD T ampc_ew_pow_scalar_##S(T x, ampc_ew_p_##S p) { return M(pow)(x, p.p0); }                          \
    AMPC_HD T ampc_ew_add_##S(T a, T b, ampc_ew_p_##S p) { return a + b; }                                      \
    AMPC_HD T ampc_ew_add_alpha_##S(T a, T b, ampc_ew_p_##S p) { return a + ampc_ew_mul_rn_##S(p.p0, b); }      \
    AMPC_HD T ampc_ew_sub_##S(T a, T b, ampc_ew_p_##S p) { return a - b; }                                      \
    AMPC_HD T ampc_ew_sub_alpha_##S(T a, T b, ampc_ew_p_##S p) { return a - ampc_ew_mul_rn_##S(p.p0, b); }      \
    AMPC_HD T ampc_ew_mul_##S(T a, T b, ampc_ew_p_##S p) { return a * b; }                                      \
    AMPC_HD T ampc_ew_div_##S(T a, T b, ampc_ew_p_##S p) { return a / b; }                                      \
    AMPC_HD T ampc_ew_div_trunc_##S(T a, T b, ampc_ew_p_##S p) { return ampc_math_trunc_divide_##S(a, b); }     \
    AMPC_HD T ampc_ew_div_floor_##S(T a, T b, ampc_ew_p_##S p) { return ampc_math_floor_divide_##S(a, b); }     \
    AMPC_HD T ampc_ew_remainder_##S(T a, T b, ampc_ew_p_##S p) { return ampc_math_remainder_##S(a, b); }        \
    AMPC_HD T ampc_ew_pow_##S(T a, T b, ampc_ew_p_##S p) { return M(pow)(a, b); }                               \
    AMPC_HD T ampc_ew_maximum_##S(T a, T b, ampc_ew_p_##S p) { return ampc_math_maximum_##S(a, b); }            \
    AMPC_HD T ampc_ew_minimum_##S(T a, T b, ampc_ew_p_##S p) { return ampc_math_minimum_##S(a, b); }            \
    AMPC_HD T ampc_ew_atan2_##S(T a, T b, ampc_ew_p_##S p) { return M(atan2)(a, b); }                           \
    AMPC_EW_COMPARISONS(T, S)

/* comparisons and logical ops: every dtype, bool out */
#define AMPC_EW_COMPARISONS(T, S)                                                                         \
    AMPC_HD bool ampc_ew_logical_and_##S(T a, T b, ampc_ew_params_##S p) { return (a != (T)0) & (b != (T)0); } \
    AMPC_HD bool ampc_ew_logical_or_##S(T a, T b, ampc_ew_params_##S p) { return (a != (T)0) | (b != (T)0); }  \
    AMPC_HD bool ampc_ew_eq_##S(T a, T b, ampc_ew_params_##S p) { return a == b; }                             \
    AMPC_HD bool ampc_ew_ne_##S(T a, T b, ampc_ew_params_##S p) { return a != b; }                             \
    AMPC_HD bool ampc_ew_lt_##S(T a, T b, ampc_ew_params_##S p) { return a < b; }                              \
    AMPC_HD bool ampc_ew_le_##S(T a, T b, ampc_ew_params_##S p) { return a <= b; }                             \
    AMPC_HD bool ampc_ew_gt_##S(T a, T b, ampc_ew_params_##S p) { return a > b; }                              \
    AMPC_HD bool ampc_ew_ge_##S(T a, T b, ampc_ew_params_##S p) { return a >= b; }

AMPC_DEFINE_EW_FLOAT(float, f, AMPC_MATH_F)
AMPC_DEFINE_EW_FLOAT(double, d, AMPC_MATH_D)

/* float32 ** scalar runs in double, as torch's std::pow(float, double) */
AMPC_HD float ampc_ew_pow_scalar_wide_f(float x, ampc_ew_params_f p) { return (float)pow((double)x, p.exponent); }
/* fp16/bf16 floor division by a tensor, rounded after every step like torch (see above) */
AMPC_HD float ampc_ew_div_floor_stepwise_f16_f(float a, float b, ampc_ew_params_f p) {
    return ampc_math_floor_divide_stepwise_f16(a, b);
}
AMPC_HD float ampc_ew_div_floor_stepwise_bf16_f(float a, float b, ampc_ew_params_f p) {
    return ampc_math_floor_divide_stepwise_bf16(a, b);
}

/* integer forms: T the type, S the suffix of the wrapping helpers. A division by zero flags and
 * gives 0. */
#define AMPC_EW_ZERO_CHECKED(S, fn) \
    if (b == 0) {                   \
        AMPC_EW_FLAG_ZERO_DIVISION(p); \
        return 0;                   \
    }                               \
    return ampc_math_##fn##_##S(a, b)
#define AMPC_DEFINE_EW_INT(T, S)                                                                                 \
    AMPC_HD T ampc_ew_neg_##S(T x, ampc_ew_params_##S p) { return ampc_math_wrap_neg_##S(x); }                    \
    AMPC_HD T ampc_ew_abs_##S(T x, ampc_ew_params_##S p) { return ampc_math_abs_##S(x); }                         \
    AMPC_HD T ampc_ew_sign_##S(T x, ampc_ew_params_##S p) { return ampc_math_sign_##S(x); }                       \
    AMPC_HD T ampc_ew_relu_##S(T x, ampc_ew_params_##S p) { return ampc_math_relu_##S(x); }                       \
    AMPC_HD T ampc_ew_clamp_##S(T x, ampc_ew_params_##S p) { return ampc_math_clamp_##S(x, p.p0, p.p1); }         \
    AMPC_HD T ampc_ew_hardtanh_##S(T x, ampc_ew_params_##S p) { return ampc_math_clamp_##S(x, p.p0, p.p1); }      \
    AMPC_HD T ampc_ew_pow_square_##S(T x, ampc_ew_params_##S p) { return ampc_math_wrap_mul_##S(x, x); }          \
    AMPC_HD T ampc_ew_pow_cube_##S(T x, ampc_ew_params_##S p) {                                                    \
        return ampc_math_wrap_mul_##S(ampc_math_wrap_mul_##S(x, x), x);                                           \
    }                                                                                                             \
    AMPC_HD T ampc_ew_pow_scalar_##S(T x, ampc_ew_params_##S p) { return ampc_math_powi_##S(x, p.p0); }           \
    AMPC_HD bool ampc_ew_logical_not_##S(T x, ampc_ew_params_##S p) { return x == 0; }                            \
    AMPC_HD T ampc_ew_add_##S(T a, T b, ampc_ew_params_##S p) { return ampc_math_wrap_add_##S(a, b); }            \
    AMPC_HD T ampc_ew_add_alpha_##S(T a, T b, ampc_ew_params_##S p) {                                              \
        return ampc_math_wrap_add_##S(a, ampc_math_wrap_mul_##S(p.p0, b));                                        \
    }                                                                                                             \
    AMPC_HD T ampc_ew_sub_##S(T a, T b, ampc_ew_params_##S p) { return ampc_math_wrap_sub_##S(a, b); }            \
    AMPC_HD T ampc_ew_sub_alpha_##S(T a, T b, ampc_ew_params_##S p) {                                              \
        return ampc_math_wrap_sub_##S(a, ampc_math_wrap_mul_##S(p.p0, b));                                        \
    }                                                                                                             \
    AMPC_HD T ampc_ew_mul_##S(T a, T b, ampc_ew_params_##S p) { return ampc_math_wrap_mul_##S(a, b); }            \
    AMPC_HD T ampc_ew_div_trunc_##S(T a, T b, ampc_ew_params_##S p) { AMPC_EW_ZERO_CHECKED(S, trunc_divide); }    \
    AMPC_HD T ampc_ew_div_floor_##S(T a, T b, ampc_ew_params_##S p) { AMPC_EW_ZERO_CHECKED(S, floor_divide); }    \
    AMPC_HD T ampc_ew_remainder_##S(T a, T b, ampc_ew_params_##S p) { AMPC_EW_ZERO_CHECKED(S, remainder); }       \
    AMPC_HD T ampc_ew_pow_##S(T a, T b, ampc_ew_params_##S p) { return ampc_math_powi_##S(a, b); }                \
    AMPC_HD T ampc_ew_maximum_##S(T a, T b, ampc_ew_params_##S p) { return a < b ? b : a; }                       \
    AMPC_HD T ampc_ew_minimum_##S(T a, T b, ampc_ew_params_##S p) { return b < a ? b : a; }                       \
    AMPC_HD T ampc_ew_bitwise_and_##S(T a, T b, ampc_ew_params_##S p) { return (T)(a & b); }                      \
    AMPC_HD T ampc_ew_bitwise_or_##S(T a, T b, ampc_ew_params_##S p) { return (T)(a | b); }                       \
    AMPC_HD T ampc_ew_bitwise_xor_##S(T a, T b, ampc_ew_params_##S p) { return (T)(a ^ b); }                      \
    AMPC_EW_COMPARISONS(T, S)
AMPC_DEFINE_EW_INT(int64_t, i64)
AMPC_DEFINE_EW_INT(int32_t, i32)
AMPC_DEFINE_EW_INT(uint8_t, u8)

/* bool: + and max are or, * and min are and */
AMPC_HD bool ampc_ew_sign_b8(bool x, ampc_ew_params_b8 p) { return x; }
AMPC_HD bool ampc_ew_logical_not_b8(bool x, ampc_ew_params_b8 p) { return !x; }
AMPC_HD bool ampc_ew_add_b8(bool a, bool b, ampc_ew_params_b8 p) { return a | b; }
AMPC_HD bool ampc_ew_add_alpha_b8(bool a, bool b, ampc_ew_params_b8 p) { return a | (p.p0 & b); }
AMPC_HD bool ampc_ew_mul_b8(bool a, bool b, ampc_ew_params_b8 p) { return a & b; }
AMPC_HD bool ampc_ew_maximum_b8(bool a, bool b, ampc_ew_params_b8 p) { return a | b; }
AMPC_HD bool ampc_ew_minimum_b8(bool a, bool b, ampc_ew_params_b8 p) { return a & b; }
AMPC_HD bool ampc_ew_bitwise_and_b8(bool a, bool b, ampc_ew_params_b8 p) { return a & b; }
AMPC_HD bool ampc_ew_bitwise_or_b8(bool a, bool b, ampc_ew_params_b8 p) { return a | b; }
AMPC_HD bool ampc_ew_bitwise_xor_b8(bool a, bool b, ampc_ew_params_b8 p) { return a != b; }
AMPC_EW_COMPARISONS(bool, b8)

/* the formulas of issue 12's rows (same stamping, kept in their own file) */
#include "elementwise_math_more.h"
/* the fused activation backward formulas (issue 14) */
#include "elementwise_math_act_backward.h"
/* torch.nn's pointwise activations and their fused backward rows (issue 13, act) */
#include "elementwise_math_act.h"

#undef AMPC_DEFINE_EW_FLOAT
#undef AMPC_DEFINE_EW_INT
#undef AMPC_EW_ZERO_CHECKED

#undef AMPC_DEFINE_FLOAT_MATH
#undef AMPC_DEFINE_INT_MATH
#undef AMPC_DEFINE_FLOOR_DIVIDE_STEPWISE

/* ---- host side: how scalar operands and op parameters reach a kernel ----
 * A scalar operand (a Python number, a 0-dim CPU tensor), alpha, clamp bounds and softplus's
 * beta/threshold are converted once on the host, here, and passed to the kernel by value; both
 * backends use these functions so a scalar reads the same on every device. Host-only (plain
 * static inline, not AMPC_HD): they take ampc_scalar. Names start with ampc_ew_. */

/* `v` as torch's Scalar.to<int64_t>() reads it, `f` being its value as a double: a float
 * scalar outside int64's range becomes 0. */
static inline int64_t ampc_ew_scalar_int64(ampc_scalar v, double f) {
    return v.kind == AMPC_SCALAR_FLOAT ? (f >= -9.2e18 && f <= 9.2e18 ? (int64_t)f : 0) : ampc_scalar_to_int(v);
}

/* The two below for the integer and bool dtypes, where the opmath type is the element type:
 * `v` (`f` and `i` as above) modulo the width of `dt`, written to dst; nothing for a floating `dt`. */
static inline void ampc_ew_scalar_as_integer(ampc_dtype dt, ampc_scalar v, double f, int64_t i, unsigned char *dst) {
    switch (dt) {
    case AMPC_INT64: memcpy(dst, &i, sizeof i); break;
    case AMPC_INT32: {
        int32_t x = (int32_t)(uint32_t)(uint64_t)i;
        memcpy(dst, &x, sizeof x);
        break;
    }
    case AMPC_UINT8: {
        uint8_t x = (uint8_t)(uint64_t)i;
        memcpy(dst, &x, sizeof x);
        break;
    }
    case AMPC_BOOL: {
        bool x = v.kind == AMPC_SCALAR_FLOAT ? f != 0 : i != 0;
        memcpy(dst, &x, sizeof x);
        break;
    }
    default: break;
    }
}

/* `v` in the opmath type of `dt` (float for float32/float16/bfloat16, double for float64, the
 * type itself otherwise), written to dst[0..8). Integer dtypes take integers modulo their width,
 * as torch's Scalar.to<T>() does; a float scalar outside int64's range becomes 0. */
static inline void ampc_ew_scalar_as_opmath(ampc_dtype dt, ampc_scalar v, unsigned char *dst) {
    bool is_float = v.kind == AMPC_SCALAR_FLOAT;
    double f = ampc_scalar_to_double(v);
    int64_t i = ampc_ew_scalar_int64(v, f);
    switch (dt) {
    case AMPC_FLOAT32:
    case AMPC_FLOAT16:
    case AMPC_BFLOAT16: {
        float x = is_float ? (float)f : (float)i; /* int64 -> float directly: one rounding */
        memcpy(dst, &x, sizeof x);
        break;
    }
    case AMPC_FLOAT64: {
        double x = is_float ? f : (double)i;
        memcpy(dst, &x, sizeof x);
        break;
    }
    default: ampc_ew_scalar_as_integer(dt, v, f, i, dst); break;
    }
}

/* `v` as one stored element of `dt` (fp16/bf16 rounded once from float), written to
 * dst[0..itemsize): the scalar branches of where. */
static inline void ampc_ew_scalar_as_element(ampc_dtype dt, ampc_scalar v, unsigned char *dst) {
    double f = ampc_scalar_to_double(v);
    int64_t i = ampc_ew_scalar_int64(v, f);
    double x = v.kind == AMPC_SCALAR_FLOAT ? f : (double)i;
    switch (dt) {
    case AMPC_FLOAT32: {
        float e = (float)x;
        memcpy(dst, &e, sizeof e);
        break;
    }
    case AMPC_FLOAT16: {
        ampc_half e = ampc_f32_to_half((float)x);
        memcpy(dst, &e, sizeof e);
        break;
    }
    case AMPC_BFLOAT16: {
        ampc_bfloat16 e = ampc_f32_to_bf16((float)x);
        memcpy(dst, &e, sizeof e);
        break;
    }
    case AMPC_FLOAT64: memcpy(dst, &x, sizeof x); break;
    default: ampc_ew_scalar_as_integer(dt, v, f, i, dst); break;
    }
}

/* The value an absent (None) clamp bound stands for in `dt`. */
static inline ampc_scalar ampc_ew_clamp_open_bound(ampc_dtype dt, bool upper) {
    switch (dt) {
    case AMPC_INT64: return ampc_scalar_int(upper ? INT64_MAX : INT64_MIN);
    case AMPC_INT32: return ampc_scalar_int(upper ? INT32_MAX : INT32_MIN);
    case AMPC_UINT8: return ampc_scalar_int(upper ? 255 : 0);
    case AMPC_BOOL: return ampc_scalar_bool(upper);
    default: return ampc_scalar_float(upper ? INFINITY : -INFINITY);
    }
}

/* x ** e with a scalar e: torch multiplies for 2 and 3 (and -2 for floats) and calls sqrt,
 * rsqrt or reciprocal for 0.5, -0.5 and -1 (floats) instead of pow. */
typedef enum ampc_pow_form {
    AMPC_POW_GENERAL,
    AMPC_POW_SQUARE,
    AMPC_POW_CUBE,
    AMPC_POW_INV_SQUARE,
    AMPC_POW_SQRT,
    AMPC_POW_RSQRT,
    AMPC_POW_RECIPROCAL
} ampc_pow_form;

static inline ampc_pow_form ampc_ew_pow_scalar_form(bool floating, double e) {
    if (e == 2) return AMPC_POW_SQUARE;
    if (e == 3) return AMPC_POW_CUBE;
    if (!floating) return AMPC_POW_GENERAL;
    if (e == -2) return AMPC_POW_INV_SQUARE;
    if (e == 0.5) return AMPC_POW_SQRT;
    if (e == -0.5) return AMPC_POW_RSQRT;
    if (e == -1) return AMPC_POW_RECIPROCAL;
    return AMPC_POW_GENERAL;
}

#endif
