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
 * integer type (_i64, _i32, _u8), after the prefix ampc_math_. */
#ifndef AMPC_ELEMENTWISE_MATH_H
#define AMPC_ELEMENTWISE_MATH_H

#include <math.h>
#include <stdbool.h>
#include <stdint.h>

#include "half.h"

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

#undef AMPC_DEFINE_FLOAT_MATH
#undef AMPC_DEFINE_INT_MATH

#endif
