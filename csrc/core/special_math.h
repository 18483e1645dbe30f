/* special_math.h: the special functions behind issue 12's elementwise ops (digamma, trigamma,
 * polygamma through Hurwitz's zeta, erfinv, sinc, logit), one AMPC_HD body per opmath type.
 *
 * They follow PyTorch's CPU formulas term by term (aten/src/ATen/native/Math.h: calc_digamma,
 * calc_trigamma, zeta, calc_polygamma, calc_erfinv), constants and order of operations
 * included, so float32/float64 results agree with torch within libm's error and fp16/bf16
 * results (computed in float, rounded once) agree with torch's where torch also computes in
 * float. No recursion and no static arrays: the same code compiles as CUDA device code.
 * Names: ampc_special_<fn>_<f|d>. Included by elementwise_math.h. */
#ifndef AMPC_SPECIAL_MATH_H
#define AMPC_SPECIAL_MATH_H

#include <math.h>

#include "half.h"

#define AMPC_SPECIAL_PI 3.14159265358979323846

/* T the type, S the suffix, M(fn) the libm function for T (elementwise_math.h's AMPC_MATH_F/D) */
#define AMPC_DEFINE_SPECIAL_MATH(T, S, M)                                                                     \
    /* digamma for x >= 0 (calc_digamma's main branch); x == 0 and x < 0 are the caller's */                  \
    AMPC_HD T ampc_special_digamma_pos_##S(T x) {                                                             \
        const T PSI_10 = (T)2.25175258906672110764;                                                           \
        T result = 0;                                                                                         \
        while (x < (T)10) {                                                                                   \
            result -= (T)1 / x;                                                                               \
            x += (T)1;                                                                                        \
        }                                                                                                     \
        if (x == (T)10) return result + PSI_10;                                                               \
        T y = 0;                                                                                              \
        if (x < (T)1.0e17) {                                                                                  \
            T z = (T)1 / (x * x);                                                                             \
            T poly = (T)8.33333333333333333333E-2;                                                            \
            poly = poly * z + (T)-2.10927960927960927961E-2;                                                  \
            poly = poly * z + (T)7.57575757575757575758E-3;                                                   \
            poly = poly * z + (T)-4.16666666666666666667E-3;                                                  \
            poly = poly * z + (T)3.96825396825396825397E-3;                                                   \
            poly = poly * z + (T)-8.33333333333333333333E-3;                                                  \
            poly = poly * z + (T)8.33333333333333333333E-2;                                                   \
            y = z * poly;                                                                                     \
        }                                                                                                     \
        return result + M(log)(x) - ((T)0.5 / x) - y;                                                         \
    }                                                                                                         \
    /* psi(x): -inf/+inf at +-0 (copysign(inf, -x)), NaN at negative integers, the reflection            \
     * psi(1 - x) - pi / tan(pi frac(x)) below 0 */                                                           \
    AMPC_HD T ampc_special_digamma_##S(T x) {                                                                 \
        if (x == (T)0) return M(copysign)((T)INFINITY, -x);                                                   \
        if (x < (T)0) {                                                                                       \
            if (x == M(trunc)(x)) return (T)NAN;                                                              \
            /* the reflection term in double, then rounded to T, as torch's float digamma */                 \
            double r = (double)x - trunc((double)x);                                                          \
            T pi_over_tan = (T)(AMPC_SPECIAL_PI / tan(AMPC_SPECIAL_PI * r));                                  \
            return ampc_special_digamma_pos_##S((T)1 - x) - pi_over_tan;                                      \
        }                                                                                                     \
        return ampc_special_digamma_pos_##S(x);                                                               \
    }                                                                                                         \
    /* psi'(x) (calc_trigamma) */                                                                             \
    AMPC_HD T ampc_special_trigamma_##S(T x) {                                                                \
        T sign = (T)1, result = 0;                                                                            \
        if (x < (T)0.5) {                                                                                     \
            sign = (T)-1;                                                                                     \
            T sin_pi_x = M(sin)((T)AMPC_SPECIAL_PI * x);                                                      \
            result -= ((T)AMPC_SPECIAL_PI * (T)AMPC_SPECIAL_PI) / (sin_pi_x * sin_pi_x);                      \
            x = (T)1 - x;                                                                                     \
        }                                                                                                     \
        for (int i = 0; i < 6; ++i) {                                                                         \
            result += (T)1 / (x * x);                                                                         \
            x += (T)1;                                                                                        \
        }                                                                                                     \
        const T ixx = (T)1 / (x * x);                                                                         \
        result += ((T)1 + (T)1 / ((T)2 * x) + ixx * ((T)(1. / 6) - ixx * ((T)(1. / 30) - ixx * (T)(1. / 42)))) / x; \
        return sign * result;                                                                                 \
    }                                                                                                         \
    /* Hurwitz zeta(x, q) = sum_k (k + q)^-x (Cephes, as torch's zeta) */                                      \
    AMPC_HD T ampc_special_zeta_##S(T x, T q) {                                                               \
        const T MACHEP = (T)1.11022302462515654042E-16;                                                       \
        const T A[12] = {(T)12.0, (T)-720.0, (T)30240.0, (T)-1209600.0, (T)47900160.0,                        \
                         (T)-1.8924375803183791606e9, (T)7.47242496e10, (T)-2.950130727918164224e12,            \
                         (T)1.1646782814350067249e14, (T)-4.5979787224074726105e15,                            \
                         (T)1.8152105401943546773e17, (T)-7.1661652561756670113e18};                           \
        T a, b, k, s, t, w;                                                                                   \
        if (x == (T)1) return (T)INFINITY;                                                                    \
        if (x < (T)1) return (T)NAN;                                                                          \
        if (q <= (T)0) {                                                                                      \
            if (q == M(floor)(q)) return (T)INFINITY;                                                         \
            if (x != M(floor)(x)) return (T)NAN;                                                              \
        }                                                                                                     \
        s = M(pow)(q, -x);                                                                                    \
        a = q;                                                                                                \
        int i = 0;                                                                                            \
        b = 0;                                                                                                \
        while ((i < 9) || (a <= (T)9.0)) {                                                                    \
            i += 1;                                                                                           \
            a += (T)1;                                                                                        \
            b = M(pow)(a, -x);                                                                                \
            s += b;                                                                                           \
            if ((-MACHEP * s < b) && (b < MACHEP * s)) return s;                                              \
        }                                                                                                     \
        w = a;                                                                                                \
        s += b * w / (x - (T)1);                                                                              \
        s -= (T)0.5 * b;                                                                                      \
        a = (T)1;                                                                                             \
        k = 0;                                                                                                \
        for (int j = 0; j < 12; j++) {                                                                        \
            a *= x + k;                                                                                       \
            b /= w;                                                                                           \
            t = a * b / A[j];                                                                                 \
            s = s + t;                                                                                        \
            t = M(fabs)(t / s);                                                                               \
            if (t < MACHEP) return s;                                                                         \
            k += (T)1;                                                                                        \
            a *= x + k;                                                                                       \
            b /= w;                                                                                           \
            k += (T)1;                                                                                        \
        }                                                                                                     \
        return s;                                                                                             \
    }                                                                                                         \
    /* psi^(n)(x): digamma, trigamma, else (-1)^(n+1) n! zeta(n + 1, x) (n >= 0, checked by the caller) */      \
    AMPC_HD T ampc_special_polygamma_##S(T x, int n) {                                                        \
        if (n == 0) return ampc_special_digamma_##S(x);                                                       \
        if (n == 1) return ampc_special_trigamma_##S(x);                                                      \
        return ((n % 2) ? (T)1 : (T)-1) * M(exp)(M(lgamma)((T)n + (T)1)) * ampc_special_zeta_##S((T)(n + 1), x); \
    }                                                                                                         \
    /* erfinv: a rational first guess, then two Newton steps (calc_erfinv) */                                 \
    AMPC_HD T ampc_special_erfinv_##S(T y) {                                                                  \
        T x, z, num, dem;                                                                                     \
        T y_abs = M(fabs)(y);                                                                                 \
        if (y_abs > (T)1) return (T)NAN;                                                                      \
        if (y_abs == (T)1) return M(copysign)((T)INFINITY, y);                                                \
        if (y_abs <= (T)0.7) {                                                                                \
            z = y * y;                                                                                        \
            num = ((((T)-0.140543331 * z + (T)0.914624893) * z + (T)-1.645349621) * z + (T)0.886226899);       \
            dem = (((((T)0.012229801 * z + (T)-0.329097515) * z + (T)1.442710462) * z + (T)-2.118377725) * z + (T)1); \
            x = y * num / dem;                                                                                \
        } else {                                                                                              \
            z = M(sqrt)(-M(log)(((T)1 - y_abs) / (T)2));                                                      \
            num = (((T)1.641345311 * z + (T)3.429567803) * z + (T)-1.624906493) * z + (T)-1.970840454;         \
            dem = ((T)1.637067800 * z + (T)3.543889200) * z + (T)1;                                           \
            x = M(copysign)(num, y) / dem;                                                                    \
        }                                                                                                     \
        const T two_over_sqrt_pi = (T)2 / (T)1.77245385090551602730;                                          \
        x = x - (M(erf)(x) - y) / (two_over_sqrt_pi * M(exp)(-x * x));                                        \
        x = x - (M(erf)(x) - y) / (two_over_sqrt_pi * M(exp)(-x * x));                                        \
        return x;                                                                                             \
    }                                                                                                         \
    /* sin(pi x) / (pi x), 1 at 0 */                                                                          \
    AMPC_HD T ampc_special_sinc_##S(T x) {                                                                    \
        if (x == (T)0) return (T)1;                                                                           \
        T product = (T)AMPC_SPECIAL_PI * x;                                                                   \
        return M(sin)(product) / product;                                                                     \
    }                                                                                                         \
    /* log(x / (1 - x)), x first clamped to [eps, 1 - eps] unless eps is NaN (None, as torch) */                \
    AMPC_HD T ampc_special_logit_##S(T x, T eps) {                                                            \
        if (eps == eps) {                                                                                     \
            T lo = eps, hi = (T)1 - eps;                                                                      \
            x = x < lo ? lo : (x > hi ? hi : x);                                                              \
        }                                                                                                     \
        return x == (T)1 ? (T)INFINITY : M(log)(x / ((T)1 - x));                                              \
    }

AMPC_DEFINE_SPECIAL_MATH(float, f, AMPC_MATH_F)
AMPC_DEFINE_SPECIAL_MATH(double, d, AMPC_MATH_D)
#undef AMPC_DEFINE_SPECIAL_MATH

#endif
