/* cpu_elementwise.c: CPU kernels of the elementwise family (UNARY, BINARY, COMPARE, TERNARY).
 *
 * The frontend (core/elementwise.c) hands every kernel inputs already in the op's compute dtype
 * and an output in the result dtype (bool for comparisons, isnan, logical ops). A NULL input
 * slot in[k] of a BINARY/COMPARE/TERNARY op means "operand k is the scalar args->scalars[1 + k]"
 * (a Python number or a 0-dim CPU tensor); a kernel also treats any one-element input tensor
 * that way. Scalars reach the inner loop as values in registers, so `x * 0.5` runs as fast as a
 * unary op.
 *
 * Inner loops are generated per (variant, dtype) from one expression each, with macros: a
 * contiguous branch with typed pointers (which -O3 vectorizes for float32/float64/int types), a
 * branch for an operand broadcast along the row (stride 0) and a generic strided branch.
 * fp16/bf16 load into float, compute, and round once on store (PyTorch's CPU opmath). The
 * formulas themselves live in core/elementwise_math.h, shared with the CUDA backend. */
#include <math.h>
#include <string.h>

#include "../core/elementwise_math.h"
#include "cpu_backend.h"
#include "cpu_dtype_loops.h"
#include "cpu_half_convert.h"
#include "cpu_iter.h"

/* ------------------------------------------------------------------ variants
 * Loop tables are indexed by variant: every op of ops.def, plus the specialisations a kernel
 * picks from the op's parameters. */
enum ew_variant {
#define AMPC_OP(id, name, kind) EW_##id,
#include "../core/ops.def"
#undef AMPC_OP
    EW_ADD_ALPHA,          /* a + alpha * b (alpha != 1) */
    EW_SUB_ALPHA,          /* a - alpha * b */
    EW_DIV_TRUNC,          /* div(rounding_mode='trunc') */
    EW_DIV_FLOOR,          /* div(rounding_mode='floor'), floor_divide, // */
    EW_DIV_FLOOR_STEPWISE, /* the same for fp16/bf16 tensors, rounded after every step like torch */
    EW_GELU_TANH,          /* gelu(approximate='tanh') */
    EW_POW_SQUARE,         /* x ** 2, x ** 3, x ** -2: torch multiplies instead of calling pow */
    EW_POW_CUBE,
    EW_POW_INV_SQUARE,
    EW_POW_SCALAR,         /* x ** e for any other scalar e */
    EW_ROUND_DECIMALS,     /* round(x, decimals > 0): P0 = 10^decimals */
    EW_ROUND_NEG_DECIMALS, /* round(x, decimals < 0): P0 = 10^-decimals */
    EW_NUM_VARIANTS
};

/* Per-call constants of a loop, stored in the loop's opmath type (VT): P0, P1 are the op's
 * parameters (alpha; clamp bounds; softplus beta and threshold), P2 the scalar operand. */
typedef struct ew_ctx {
    _Alignas(8) unsigned char param[3][8];
    double pow_exponent; /* float32 ** scalar runs in double, as torch's std::pow(float, double) */
    int *zero_division;  /* set when an integer division meets a zero divisor */
} ew_ctx;

static void ew_flag_zero_division(const ew_ctx *ctx) { __atomic_store_n(ctx->zero_division, 1, __ATOMIC_RELAXED); }

#define EW_PARAMS(VT)                         \
    const ew_ctx *ctx = (const ew_ctx *)ctxp; \
    VT P0, P1, P2;                            \
    memcpy(&P0, ctx->param[0], sizeof P0);    \
    memcpy(&P1, ctx->param[1], sizeof P1);    \
    memcpy(&P2, ctx->param[2], sizeof P2);    \
    (void)P0;                                 \
    (void)P1;                                 \
    (void)P2

#define SZ(T) ((int64_t)sizeof(T))

/* ------------------------------------------------------------------ fp16/bf16 blocks
 * Contiguous fp16/bf16 rows run in blocks of EW_BLOCK: inputs widened to float with the vector
 * converters (cpu_half_convert.h), the expression on float arrays (vectorized as for float32),
 * results rounded back in one pass. Per element this is the same float computation and the same
 * single rounding as the scalar loop, so results are bit-identical; it is 5-10x faster.
 * EW_BLOCKED_<suffix> selects the path at compile time; the other dtypes keep their plain loops
 * (EW_WIDEN/EW_NARROW exist for them only so the dead branch compiles). */
#define EW_BLOCK 256
#define EW_BLOCKED_f16 1
#define EW_BLOCKED_bf16 1
#define EW_BLOCKED_f32 0
#define EW_BLOCKED_f64 0
#define EW_BLOCKED_i64 0
#define EW_BLOCKED_i32 0
#define EW_BLOCKED_u8 0
#define EW_BLOCKED_b8 0
#define EW_WIDEN_f16(src, dst, m) ampc_cpu_f16_to_f32(src, dst, m)
#define EW_WIDEN_bf16(src, dst, m) ampc_cpu_bf16_to_f32(src, dst, m)
#define EW_NARROW_f16(src, dst, m) ampc_cpu_f32_to_f16(src, dst, m)
#define EW_NARROW_bf16(src, dst, m) ampc_cpu_f32_to_bf16(src, dst, m)
#define EW_PLAIN_COPY(SUF, src, dst, m) \
    for (int64_t k_ = 0; k_ < (m); k_++) (dst)[k_] = AMPC_LOAD_##SUF((src) + k_)
#define EW_PLAIN_STORE(SUF, src, dst, m) \
    for (int64_t k_ = 0; k_ < (m); k_++) AMPC_STORE_##SUF((dst) + k_, (src)[k_])
#define EW_WIDEN_f32(src, dst, m) EW_PLAIN_COPY(f32, src, dst, m)
#define EW_WIDEN_f64(src, dst, m) EW_PLAIN_COPY(f64, src, dst, m)
#define EW_WIDEN_i64(src, dst, m) EW_PLAIN_COPY(i64, src, dst, m)
#define EW_WIDEN_i32(src, dst, m) EW_PLAIN_COPY(i32, src, dst, m)
#define EW_WIDEN_u8(src, dst, m) EW_PLAIN_COPY(u8, src, dst, m)
#define EW_WIDEN_b8(src, dst, m) EW_PLAIN_COPY(b8, src, dst, m)
#define EW_NARROW_f32(src, dst, m) EW_PLAIN_STORE(f32, src, dst, m)
#define EW_NARROW_f64(src, dst, m) EW_PLAIN_STORE(f64, src, dst, m)
#define EW_NARROW_i64(src, dst, m) EW_PLAIN_STORE(i64, src, dst, m)
#define EW_NARROW_i32(src, dst, m) EW_PLAIN_STORE(i32, src, dst, m)
#define EW_NARROW_u8(src, dst, m) EW_PLAIN_STORE(u8, src, dst, m)
#define EW_NARROW_b8(src, dst, m) EW_PLAIN_STORE(b8, src, dst, m)

/* ------------------------------------------------------------------ loop generators */

/* out = EXPR(x) */
#define DEF_UNARY(ID, SUF, CT, VT, OSUF, OCT, EXPR)                                        \
    static void ew_##ID##_##SUF(char **d, const int64_t *s, int64_t n, const void *ctxp) { \
        EW_PARAMS(VT);                                                                     \
        if (s[0] == SZ(OCT) && s[1] == SZ(CT) && EW_BLOCKED_##SUF) {                       \
            for (int64_t k0 = 0; k0 < n; k0 += EW_BLOCK) {                                 \
                int64_t m = n - k0 < EW_BLOCK ? n - k0 : EW_BLOCK;                         \
                VT xs[EW_BLOCK], r[EW_BLOCK];                                              \
                EW_WIDEN_##SUF((const CT *)d[1] + k0, xs, m);                              \
                for (int64_t k = 0; k < m; k++) {                                          \
                    VT x = xs[k];                                                          \
                    r[k] = (VT)(EXPR);                                                     \
                }                                                                          \
                EW_NARROW_##OSUF(r, (OCT *)d[0] + k0, m);                                  \
            }                                                                              \
        } else if (s[0] == SZ(OCT) && s[1] == SZ(CT)) {                                    \
            OCT *o = (OCT *)d[0];                                                          \
            const CT *in = (const CT *)d[1];                                               \
            for (int64_t k = 0; k < n; k++) {                                              \
                VT x = AMPC_LOAD_##SUF(in + k);                                            \
                AMPC_STORE_##OSUF(o + k, (EXPR));                                          \
            }                                                                              \
        } else {                                                                           \
            for (int64_t k = 0; k < n; k++) {                                              \
                VT x = AMPC_LOAD_##SUF(d[1] + k * s[1]);                                   \
                AMPC_STORE_##OSUF(d[0] + k * s[0], (EXPR));                                \
            }                                                                              \
        }                                                                                  \
    }

/* One row of out = EXPR(a, b) where the operand named FIXED is the constant FIXED_VALUE and the
 * other (VAR, at d[VAR_SLOT]) runs along the row. */
#define EW_ROW_WITH_CONSTANT(SUF, CT, VT, OSUF, OCT, EXPR, FIXED, FIXED_VALUE, VAR, VAR_SLOT) \
    {                                                                                         \
        const VT FIXED = (FIXED_VALUE);                                                       \
        if (s[0] == SZ(OCT) && s[VAR_SLOT] == SZ(CT) && EW_BLOCKED_##SUF) {                   \
            for (int64_t k0 = 0; k0 < n; k0 += EW_BLOCK) {                                    \
                int64_t m = n - k0 < EW_BLOCK ? n - k0 : EW_BLOCK;                            \
                VT vs[EW_BLOCK], r[EW_BLOCK];                                                 \
                EW_WIDEN_##SUF((const CT *)d[VAR_SLOT] + k0, vs, m);                          \
                for (int64_t k = 0; k < m; k++) {                                             \
                    VT VAR = vs[k];                                                           \
                    r[k] = (VT)(EXPR);                                                        \
                }                                                                             \
                EW_NARROW_##OSUF(r, (OCT *)d[0] + k0, m);                                     \
            }                                                                                 \
        } else if (s[0] == SZ(OCT) && s[VAR_SLOT] == SZ(CT)) {                                \
            OCT *o = (OCT *)d[0];                                                             \
            const CT *pv = (const CT *)d[VAR_SLOT];                                           \
            for (int64_t k = 0; k < n; k++) {                                                 \
                VT VAR = AMPC_LOAD_##SUF(pv + k);                                             \
                AMPC_STORE_##OSUF(o + k, (EXPR));                                             \
            }                                                                                 \
        } else {                                                                              \
            for (int64_t k = 0; k < n; k++) {                                                 \
                VT VAR = AMPC_LOAD_##SUF(d[VAR_SLOT] + k * s[VAR_SLOT]);                      \
                AMPC_STORE_##OSUF(d[0] + k * s[0], (EXPR));                                   \
            }                                                                                 \
        }                                                                                     \
    }

/* out = EXPR(a, b): ew_ID_SUF over (out, a, b), ew_ID_sb_SUF over (out, a) with b = P2. */
#define DEF_BINARY(ID, SUF, CT, VT, OSUF, OCT, EXPR)                                           \
    static void ew_##ID##_##SUF(char **d, const int64_t *s, int64_t n, const void *ctxp) {     \
        EW_PARAMS(VT);                                                                         \
        if (s[0] == SZ(OCT) && s[1] == SZ(CT) && s[2] == SZ(CT) && EW_BLOCKED_##SUF) {         \
            for (int64_t k0 = 0; k0 < n; k0 += EW_BLOCK) {                                     \
                int64_t m = n - k0 < EW_BLOCK ? n - k0 : EW_BLOCK;                             \
                VT as[EW_BLOCK], bs[EW_BLOCK], r[EW_BLOCK];                                    \
                EW_WIDEN_##SUF((const CT *)d[1] + k0, as, m);                                  \
                EW_WIDEN_##SUF((const CT *)d[2] + k0, bs, m);                                  \
                for (int64_t k = 0; k < m; k++) {                                              \
                    VT a = as[k], b = bs[k];                                                   \
                    r[k] = (VT)(EXPR);                                                         \
                }                                                                              \
                EW_NARROW_##OSUF(r, (OCT *)d[0] + k0, m);                                      \
            }                                                                                  \
        } else if (s[0] == SZ(OCT) && s[1] == SZ(CT) && s[2] == SZ(CT)) {                      \
            OCT *o = (OCT *)d[0];                                                              \
            const CT *pa = (const CT *)d[1], *pb = (const CT *)d[2];                           \
            for (int64_t k = 0; k < n; k++) {                                                  \
                VT a = AMPC_LOAD_##SUF(pa + k), b = AMPC_LOAD_##SUF(pb + k);                   \
                AMPC_STORE_##OSUF(o + k, (EXPR));                                              \
            }                                                                                  \
        } else if (s[2] == 0) {                                                                \
            EW_ROW_WITH_CONSTANT(SUF, CT, VT, OSUF, OCT, EXPR, b, AMPC_LOAD_##SUF(d[2]), a, 1) \
        } else if (s[1] == 0) {                                                                \
            EW_ROW_WITH_CONSTANT(SUF, CT, VT, OSUF, OCT, EXPR, a, AMPC_LOAD_##SUF(d[1]), b, 2) \
        } else {                                                                               \
            for (int64_t k = 0; k < n; k++) {                                                  \
                VT a = AMPC_LOAD_##SUF(d[1] + k * s[1]), b = AMPC_LOAD_##SUF(d[2] + k * s[2]); \
                AMPC_STORE_##OSUF(d[0] + k * s[0], (EXPR));                                    \
            }                                                                                  \
        }                                                                                      \
    }                                                                                          \
    static void ew_##ID##_sb_##SUF(char **d, const int64_t *s, int64_t n, const void *ctxp) {  \
        EW_PARAMS(VT);                                                                         \
        EW_ROW_WITH_CONSTANT(SUF, CT, VT, OSUF, OCT, EXPR, b, P2, a, 1)                        \
    }

/* A non-commutative op also gets ew_ID_sa_SUF over (out, b) with a = P2 (`2 - x`, `2 ** x`). */
#define DEF_BINARY_NC(ID, SUF, CT, VT, OSUF, OCT, EXPR)                                       \
    DEF_BINARY(ID, SUF, CT, VT, OSUF, OCT, EXPR)                                              \
    static void ew_##ID##_sa_##SUF(char **d, const int64_t *s, int64_t n, const void *ctxp) { \
        EW_PARAMS(VT);                                                                        \
        EW_ROW_WITH_CONSTANT(SUF, CT, VT, OSUF, OCT, EXPR, a, P2, b, 1)                       \
    }

/* ------------------------------------------------------------------ the ops, per dtype group
 * Each list takes X(KIND, ID, EXPR) with KIND one of U (unary, same dtype out), UB (unary, bool
 * out), B / BNC (binary, commutative or not), BB (binary, bool out). */
#define LIBM_f(fn) fn##f
#define LIBM_d(fn) fn
#define LIBM(MS, fn) LIBM_##MS(fn)

/* floating dtypes; MS picks the float (f) or double (d) flavour of the math functions */
#define FLOAT_OPS(X, MS)                                        \
    X(U, EXP, LIBM(MS, exp)(x))                                 \
    X(U, LOG, LIBM(MS, log)(x))                                 \
    X(U, SQRT, LIBM(MS, sqrt)(x))                               \
    X(U, RSQRT, ampc_math_rsqrt_##MS(x))                        \
    X(U, RECIPROCAL, ampc_math_reciprocal_##MS(x))              \
    X(U, SIGMOID, ampc_math_sigmoid_##MS(x))                    \
    X(U, TANH, LIBM(MS, tanh)(x))                               \
    X(U, RELU, ampc_math_relu_##MS(x))                          \
    X(U, GELU, ampc_math_gelu_##MS(x))                          \
    X(U, GELU_TANH, ampc_math_gelu_tanh_##MS(x))                \
    X(U, SILU, ampc_math_silu_##MS(x))                          \
    X(U, SOFTPLUS, ampc_math_softplus_##MS(x, P0, P1))          \
    X(U, SIN, LIBM(MS, sin)(x))                                 \
    X(U, COS, LIBM(MS, cos)(x))                                 \
    X(U, ERF, LIBM(MS, erf)(x))                                 \
    X(U, NEG, -x)                                               \
    X(U, ABS, LIBM(MS, fabs)(x))                                \
    X(U, SIGN, ampc_math_sign_##MS(x))                          \
    X(U, FLOOR, LIBM(MS, floor)(x))                             \
    X(U, CEIL, LIBM(MS, ceil)(x))                               \
    X(U, ROUND, ampc_math_round_##MS(x))                        \
    X(U, ROUND_DECIMALS, ampc_math_round_##MS(x * P0) / P0)     \
    X(U, ROUND_NEG_DECIMALS, ampc_math_round_##MS(x / P0) * P0) \
    X(U, CLAMP, ampc_math_clamp_##MS(x, P0, P1))                \
    X(U, POW_SQUARE, x * x)                                     \
    X(U, POW_CUBE, x * x * x)                                   \
    X(U, POW_INV_SQUARE, 1 / (x * x))                           \
    X(UB, LOGICAL_NOT, x == 0)                                  \
    X(UB, ISFINITE, isfinite(x))                                \
    X(UB, ISNAN, isnan(x))                                      \
    X(UB, ISINF, isinf(x))                                      \
    X(B, ADD, a + b)                                            \
    X(BNC, ADD_ALPHA, a + P0 * b)                               \
    X(BNC, SUB, a - b)                                          \
    X(BNC, SUB_ALPHA, a - P0 * b)                               \
    X(B, MUL, a * b)                                            \
    X(BNC, DIV, a / b)                                          \
    X(BNC, DIV_TRUNC, ampc_math_trunc_divide_##MS(a, b))        \
    X(BNC, DIV_FLOOR, ampc_math_floor_divide_##MS(a, b))        \
    X(BNC, REMAINDER, ampc_math_remainder_##MS(a, b))           \
    X(BNC, POW, LIBM(MS, pow)(a, b))                            \
    X(B, MAXIMUM, ampc_math_maximum_##MS(a, b))                 \
    X(B, MINIMUM, ampc_math_minimum_##MS(a, b))                 \
    X(BNC, ATAN2, LIBM(MS, atan2)(a, b))                        \
    COMMON_BOOL_OUT_OPS(X)

/* comparisons and logical ops: every dtype, bool out. LT/LE/GT/GE with a scalar on the left
 * swap to GT/GE/LT/LE, so only the commutative form is generated. */
#define COMMON_BOOL_OUT_OPS(X)              \
    X(BB, LOGICAL_AND, (a != 0) & (b != 0)) \
    X(BB, LOGICAL_OR, (a != 0) | (b != 0))  \
    X(BB, EQ, a == b)                       \
    X(BB, NE, a != b)                       \
    X(BB, LT, a < b)                        \
    X(BB, LE, a <= b)                       \
    X(BB, GT, a > b)                        \
    X(BB, GE, a >= b)

/* integer dtypes: S the type suffix of the helpers (wrapping arithmetic, no division traps) */
#define ZERO_CHECKED(S, fn) (b == 0 ? (ew_flag_zero_division(ctx), (VT_##S)0) : ampc_math_##fn##_##S(a, b))
#define INT_OPS(X, S)                                                           \
    X(U, NEG, ampc_math_wrap_neg_##S(x))                                        \
    X(U, ABS, ampc_math_abs_##S(x))                                             \
    X(U, SIGN, ampc_math_sign_##S(x))                                           \
    X(U, RELU, ampc_math_relu_##S(x))                                           \
    X(U, CLAMP, ampc_math_clamp_##S(x, P0, P1))                                 \
    X(U, POW_SQUARE, ampc_math_wrap_mul_##S(x, x))                              \
    X(U, POW_CUBE, ampc_math_wrap_mul_##S(ampc_math_wrap_mul_##S(x, x), x))     \
    X(U, POW_SCALAR, ampc_math_powi_##S(x, P2))                                 \
    X(UB, LOGICAL_NOT, x == 0)                                                  \
    X(B, ADD, ampc_math_wrap_add_##S(a, b))                                     \
    X(BNC, ADD_ALPHA, ampc_math_wrap_add_##S(a, ampc_math_wrap_mul_##S(P0, b))) \
    X(BNC, SUB, ampc_math_wrap_sub_##S(a, b))                                   \
    X(BNC, SUB_ALPHA, ampc_math_wrap_sub_##S(a, ampc_math_wrap_mul_##S(P0, b))) \
    X(B, MUL, ampc_math_wrap_mul_##S(a, b))                                     \
    X(BNC, DIV_TRUNC, ZERO_CHECKED(S, trunc_divide))                            \
    X(BNC, DIV_FLOOR, ZERO_CHECKED(S, floor_divide))                            \
    X(BNC, REMAINDER, ZERO_CHECKED(S, remainder))                               \
    X(BNC, POW, ampc_math_powi_##S(a, b))                                       \
    X(B, MAXIMUM, a < b ? b : a)                                                \
    X(B, MINIMUM, b < a ? b : a)                                                \
    X(B, BITWISE_AND, a & b)                                                    \
    X(B, BITWISE_OR, a | b)                                                     \
    X(B, BITWISE_XOR, a ^ b)                                                    \
    COMMON_BOOL_OUT_OPS(X)
#define VT_i64 int64_t
#define VT_i32 int32_t
#define VT_u8 uint8_t

/* bool: + and max are or, * and min are and */
#define BOOL_OPS(X)                 \
    X(U, SIGN, x)                   \
    X(UB, LOGICAL_NOT, !x)          \
    X(B, ADD, a | b)                \
    X(BNC, ADD_ALPHA, a | (P0 & b)) \
    X(B, MUL, a & b)                \
    X(B, MAXIMUM, a | b)            \
    X(B, MINIMUM, a & b)            \
    X(B, BITWISE_AND, a & b)        \
    X(B, BITWISE_OR, a | b)         \
    X(B, BITWISE_XOR, a != b)       \
    COMMON_BOOL_OUT_OPS(X)

/* Instantiation: KIND selects the generator. SUF/CT/VT come from the enclosing dtype. */
#define GEN_U(ID, SUF, CT, VT, EXPR) DEF_UNARY(ID, SUF, CT, VT, SUF, CT, EXPR)
#define GEN_UB(ID, SUF, CT, VT, EXPR) DEF_UNARY(ID, SUF, CT, VT, b8, bool, EXPR)
#define GEN_B(ID, SUF, CT, VT, EXPR) DEF_BINARY(ID, SUF, CT, VT, SUF, CT, EXPR)
#define GEN_BNC(ID, SUF, CT, VT, EXPR) DEF_BINARY_NC(ID, SUF, CT, VT, SUF, CT, EXPR)
#define GEN_BB(ID, SUF, CT, VT, EXPR) DEF_BINARY(ID, SUF, CT, VT, b8, bool, EXPR)

#define GEN_f32(KIND, ID, EXPR) GEN_##KIND(ID, f32, float, float, EXPR)
#define GEN_f16(KIND, ID, EXPR) GEN_##KIND(ID, f16, ampc_half, float, EXPR)
#define GEN_bf16(KIND, ID, EXPR) GEN_##KIND(ID, bf16, ampc_bfloat16, float, EXPR)
#define GEN_f64(KIND, ID, EXPR) GEN_##KIND(ID, f64, double, double, EXPR)
#define GEN_i64(KIND, ID, EXPR) GEN_##KIND(ID, i64, int64_t, int64_t, EXPR)
#define GEN_i32(KIND, ID, EXPR) GEN_##KIND(ID, i32, int32_t, int32_t, EXPR)
#define GEN_u8(KIND, ID, EXPR) GEN_##KIND(ID, u8, uint8_t, uint8_t, EXPR)
#define GEN_b8(KIND, ID, EXPR) GEN_##KIND(ID, b8, bool, bool, EXPR)

FLOAT_OPS(GEN_f32, f)
FLOAT_OPS(GEN_f16, f)
FLOAT_OPS(GEN_bf16, f)
FLOAT_OPS(GEN_f64, d)
INT_OPS(GEN_i64, i64)
INT_OPS(GEN_i32, i32)
INT_OPS(GEN_u8, u8)
BOOL_OPS(GEN_b8)

/* fp16/bf16 floor division by a tensor: torch's stepwise rounding (elementwise_math.h). */
DEF_BINARY_NC(DIV_FLOOR_STEPWISE, f16, ampc_half, float, f16, ampc_half, ampc_math_floor_divide_stepwise_f16(a, b))
DEF_BINARY_NC(DIV_FLOOR_STEPWISE, bf16, ampc_bfloat16, float, bf16, ampc_bfloat16, ampc_math_floor_divide_stepwise_bf16(a, b))

/* x ** e for a scalar e: float32 goes through double like torch's std::pow(float, double); the
 * other floating dtypes use their own opmath type with e already rounded by the frontend. */
DEF_UNARY(POW_SCALAR, f32, float, float, f32, float, (float)pow((double)x, ctx->pow_exponent))
DEF_UNARY(POW_SCALAR, f16, ampc_half, float, f16, ampc_half, powf(x, P2))
DEF_UNARY(POW_SCALAR, bf16, ampc_bfloat16, float, bf16, ampc_bfloat16, powf(x, P2))
DEF_UNARY(POW_SCALAR, f64, double, double, f64, double, pow(x, P2))

/* ------------------------------------------------------------------ loop tables
 * [variant][dtype]: the tensor-tensor form (unary ops: the only form), the scalar-b form and
 * the scalar-a form (NULL for commutative ops: the kernel swaps the operands instead). */
enum { FORM_TENSOR, FORM_SCALAR_B, FORM_SCALAR_A, NUM_FORMS };
static ampc_cpu_loop_fn loops[EW_NUM_VARIANTS][AMPC_NUM_DTYPES][NUM_FORMS];

#define REG_U(ID, SUF, DT) loops[EW_##ID][DT][FORM_TENSOR] = ew_##ID##_##SUF;
#define REG_UB REG_U
#define REG_B(ID, SUF, DT) REG_U(ID, SUF, DT) loops[EW_##ID][DT][FORM_SCALAR_B] = ew_##ID##_sb_##SUF;
#define REG_BB REG_B
#define REG_BNC(ID, SUF, DT) REG_B(ID, SUF, DT) loops[EW_##ID][DT][FORM_SCALAR_A] = ew_##ID##_sa_##SUF;

#define REG_f32(KIND, ID, EXPR) REG_##KIND(ID, f32, AMPC_FLOAT32)
#define REG_f16(KIND, ID, EXPR) REG_##KIND(ID, f16, AMPC_FLOAT16)
#define REG_bf16(KIND, ID, EXPR) REG_##KIND(ID, bf16, AMPC_BFLOAT16)
#define REG_f64(KIND, ID, EXPR) REG_##KIND(ID, f64, AMPC_FLOAT64)
#define REG_i64(KIND, ID, EXPR) REG_##KIND(ID, i64, AMPC_INT64)
#define REG_i32(KIND, ID, EXPR) REG_##KIND(ID, i32, AMPC_INT32)
#define REG_u8(KIND, ID, EXPR) REG_##KIND(ID, u8, AMPC_UINT8)
#define REG_b8(KIND, ID, EXPR) REG_##KIND(ID, b8, AMPC_BOOL)

static void fill_loop_tables(void) {
    FLOAT_OPS(REG_f32, f)
    FLOAT_OPS(REG_f16, f)
    FLOAT_OPS(REG_bf16, f)
    FLOAT_OPS(REG_f64, d)
    INT_OPS(REG_i64, i64)
    INT_OPS(REG_i32, i32)
    INT_OPS(REG_u8, u8)
    BOOL_OPS(REG_b8)
    REG_U(POW_SCALAR, f32, AMPC_FLOAT32)
    REG_U(POW_SCALAR, f16, AMPC_FLOAT16)
    REG_U(POW_SCALAR, bf16, AMPC_BFLOAT16)
    REG_U(POW_SCALAR, f64, AMPC_FLOAT64)
    REG_BNC(DIV_FLOOR_STEPWISE, f16, AMPC_FLOAT16)
    REG_BNC(DIV_FLOOR_STEPWISE, bf16, AMPC_BFLOAT16)
}

/* ------------------------------------------------------------------ parameters */

/* Stores `v` into a parameter slot as the opmath type of `dt` (elementwise_math.h). */
static void set_param(ew_ctx *ctx, int slot, ampc_dtype dt, ampc_scalar v) {
    ampc_ew_scalar_as_opmath(dt, v, ctx->param[slot]);
}

/* The element of a one-element CPU tensor as a scalar (for the scalar-operand forms). */
static ampc_scalar element_of(const ampc_tensor *t) {
    const char *p = (const char *)ampc_data_ptr(t);
    switch (t->dtype) {
    case AMPC_FLOAT32: return ampc_scalar_float(AMPC_LOAD_f32(p));
    case AMPC_FLOAT16: return ampc_scalar_float(AMPC_LOAD_f16(p));
    case AMPC_BFLOAT16: return ampc_scalar_float(AMPC_LOAD_bf16(p));
    case AMPC_FLOAT64: return ampc_scalar_float(AMPC_LOAD_f64(p));
    case AMPC_INT64: return ampc_scalar_int(AMPC_LOAD_i64(p));
    case AMPC_INT32: return ampc_scalar_int(AMPC_LOAD_i32(p));
    case AMPC_UINT8: return ampc_scalar_int(AMPC_LOAD_u8(p));
    default: return ampc_scalar_bool(AMPC_LOAD_b8(p));
    }
}

/* The frontend rejects unsupported dtypes with PyTorch's messages first; this is the backstop. */
static ampc_status no_loop(ampc_op op, ampc_dtype dt) {
    return ampc_set_error(AMPC_E_NOT_IMPLEMENTED, "%s: the CPU backend has no kernel for dtype %s", ampc_op_name(op),
                          ampc_dtype_name(dt));
}

static ampc_status check_cpu(ampc_op op, const ampc_kernel_args *a) {
    for (int k = 0; k < a->n_in; k++)
        if (a->in[k] && a->in[k]->device.type != AMPC_CPU)
            return ampc_set_error(AMPC_E_RUNTIME, "%s: the CPU kernel got an input on another device", ampc_op_name(op));
    return AMPC_OK;
}

/* ------------------------------------------------------------------ kernels */

static ampc_status run_loop(ampc_tensor *out, int n_in, const ampc_tensor *const *ins, ampc_cpu_loop_fn fn,
                            const void *ctx) {
    ampc_cpu_iter it;
    AMPC_TRY(ampc_cpu_iter_init(&it, 1, &out, n_in, ins));
    ampc_cpu_iter_run(&it, fn, ctx);
    return AMPC_OK;
}

static ampc_status cpu_unary(ampc_op op, const ampc_kernel_args *a) {
    AMPC_TRY(check_cpu(op, a));
    const ampc_tensor *x = a->in[0];
    ampc_dtype dt = x->dtype;
    int variant = (op == AMPC_OP_GELU && a->ints[0] == 1) ? EW_GELU_TANH : (int)op;
    ew_ctx ctx;
    memset(&ctx, 0, sizeof ctx);
    if (op == AMPC_OP_ROUND && a->ints[0] != 0) {
        int64_t decimals = a->ints[0];
        variant = decimals > 0 ? EW_ROUND_DECIMALS : EW_ROUND_NEG_DECIMALS;
        set_param(&ctx, 0, dt, ampc_scalar_float(pow(10.0, (double)(decimals > 0 ? decimals : -decimals))));
    } else if (op == AMPC_OP_SOFTPLUS) {
        set_param(&ctx, 0, dt, a->scalars[0]);
        set_param(&ctx, 1, dt, a->scalars[1]);
    } else if (op == AMPC_OP_CLAMP) {
        for (int k = 0; k < 2; k++)
            set_param(&ctx, k, dt, a->scalars[k].kind == AMPC_SCALAR_NONE ? ampc_ew_clamp_open_bound(dt, k == 1) : a->scalars[k]);
    }
    ampc_cpu_loop_fn fn = ampc_dtype_is_valid(dt) ? loops[variant][dt][FORM_TENSOR] : NULL;
    if (!fn) return no_loop(op, dt);
    return run_loop(a->out[0], 1, &x, fn, &ctx);
}

/* x ** e with a scalar exponent: torch's special cases become cheaper unary loops. */
static int pow_scalar_variant(ampc_dtype dt, double e) {
    switch (ampc_ew_pow_scalar_form(ampc_dtype_is_floating(dt), e)) {
    case AMPC_POW_SQUARE: return EW_POW_SQUARE;
    case AMPC_POW_CUBE: return EW_POW_CUBE;
    case AMPC_POW_INV_SQUARE: return EW_POW_INV_SQUARE;
    case AMPC_POW_SQRT: return EW_SQRT;
    case AMPC_POW_RSQRT: return EW_RSQRT;
    case AMPC_POW_RECIPROCAL: return EW_RECIPROCAL;
    default: return EW_POW_SCALAR;
    }
}

/* The op computing b OP a, for a scalar on the left of a commutative or mirrored op; -1 if none. */
static int mirrored_variant(int variant) {
    switch (variant) {
    case EW_LT: return EW_GT;
    case EW_LE: return EW_GE;
    case EW_GT: return EW_LT;
    case EW_GE: return EW_LE;
    case EW_ADD: case EW_MUL: case EW_MAXIMUM: case EW_MINIMUM: case EW_LOGICAL_AND: case EW_LOGICAL_OR:
    case EW_BITWISE_AND: case EW_BITWISE_OR: case EW_BITWISE_XOR: case EW_EQ: case EW_NE:
        return variant;
    default: return -1;
    }
}

static ampc_status cpu_binary(ampc_op op, const ampc_kernel_args *a) {
    AMPC_TRY(check_cpu(op, a));
    const ampc_tensor *ta = a->in[0], *tb = a->in[1];
    if (!ta && !tb) return ampc_set_error(AMPC_E_RUNTIME, "%s: both operands are scalars", ampc_op_name(op));
    ampc_dtype dt = ta ? ta->dtype : tb->dtype;
    if (!ampc_dtype_is_valid(dt)) return no_loop(op, dt);
    ampc_scalar sa = a->scalars[1], sb = a->scalars[2];
    int64_t n_out = ampc_numel(a->out[0]);
    /* a one-element tensor operand becomes a scalar too (when the other one runs along the row) */
    if (ta && tb && n_out > 1) {
        if (ampc_numel(tb) == 1) {
            sb = element_of(tb);
            tb = NULL;
        } else if (ampc_numel(ta) == 1) {
            sa = element_of(ta);
            ta = NULL;
        }
    }
    int variant = (int)op;
    double alpha = ampc_scalar_to_double(a->scalars[0]);
    if (op == AMPC_OP_ADD && a->scalars[0].kind != AMPC_SCALAR_NONE && alpha != 1) variant = EW_ADD_ALPHA;
    if (op == AMPC_OP_SUB && a->scalars[0].kind != AMPC_SCALAR_NONE && alpha != 1) variant = EW_SUB_ALPHA;
    if (op == AMPC_OP_DIV && a->ints[0] == 1) variant = EW_DIV_TRUNC;
    if (op == AMPC_OP_DIV && a->ints[0] == 2)
        variant = (dt == AMPC_FLOAT16 || dt == AMPC_BFLOAT16) && tb ? EW_DIV_FLOOR_STEPWISE : EW_DIV_FLOOR;

    ew_ctx ctx;
    memset(&ctx, 0, sizeof ctx);
    int zero_division = 0;
    ctx.zero_division = &zero_division;
    set_param(&ctx, 0, dt, a->scalars[0].kind == AMPC_SCALAR_NONE ? ampc_scalar_int(1) : a->scalars[0]);

    ampc_cpu_loop_fn fn = NULL;
    const ampc_tensor *operand = NULL;
    if (ta && tb) {
        fn = loops[variant][dt][FORM_TENSOR];
        const ampc_tensor *ins[2] = {ta, tb};
        if (!fn) return no_loop(op, dt);
        AMPC_TRY(run_loop(a->out[0], 2, ins, fn, &ctx));
    } else {
        if (tb == NULL) { /* x OP s */
            operand = ta;
            set_param(&ctx, 2, dt, sb);
            if (op == AMPC_OP_POW) {
                variant = pow_scalar_variant(dt, ampc_scalar_to_double(sb));
                ctx.pow_exponent = ampc_scalar_to_double(sb);
                fn = loops[variant][dt][FORM_TENSOR];
            } else {
                fn = loops[variant][dt][FORM_SCALAR_B];
            }
        } else { /* s OP x */
            operand = tb;
            set_param(&ctx, 2, dt, sa);
            fn = loops[variant][dt][FORM_SCALAR_A];
            int mirror = mirrored_variant(variant);
            if (!fn && mirror >= 0) fn = loops[mirror][dt][FORM_SCALAR_B];
        }
        if (!fn) return no_loop(op, dt);
        AMPC_TRY(run_loop(a->out[0], 1, &operand, fn, &ctx));
    }
    if (zero_division) return ampc_set_error(AMPC_E_RUNTIME, "ZeroDivisionError");
    return AMPC_OK;
}

/* ------------------------------------------------------------------ where
 * A select only moves bytes, so its loops exist per item size, not per dtype. */
typedef struct where_ctx {
    _Alignas(8) unsigned char a[8], b[8]; /* scalar operands, already in the output dtype */
} where_ctx;

#define DEF_WHERE(BITS)                                                                                 \
    typedef uint##BITS##_t w##BITS##_t;                                                                 \
    static void where_##BITS(char **d, const int64_t *s, int64_t n, const void *c) {                    \
        (void)c;                                                                                        \
        const int64_t sz = BITS / 8;                                                                    \
        if (s[0] == sz && s[1] == 1 && s[2] == sz && s[3] == sz) {                                      \
            w##BITS##_t *o = (w##BITS##_t *)d[0];                                                       \
            const bool *m = (const bool *)d[1];                                                         \
            const w##BITS##_t *x = (const w##BITS##_t *)d[2], *y = (const w##BITS##_t *)d[3];           \
            for (int64_t k = 0; k < n; k++) o[k] = m[k] ? x[k] : y[k];                                  \
        } else {                                                                                        \
            for (int64_t k = 0; k < n; k++) {                                                           \
                const char *src = *(const bool *)(d[1] + k * s[1]) ? d[2] + k * s[2] : d[3] + k * s[3]; \
                memcpy(d[0] + k * s[0], src, sz);                                                       \
            }                                                                                           \
        }                                                                                               \
    }                                                                                                   \
    /* one operand a scalar: FIXED_FIRST says whether it is the "true" branch */                        \
    static void where_scalar_##BITS(char **d, const int64_t *s, int64_t n, const void *c,               \
                                    bool scalar_is_true_branch, const unsigned char *value) {           \
        (void)c;                                                                                        \
        w##BITS##_t v;                                                                                  \
        memcpy(&v, value, sizeof v);                                                                    \
        for (int64_t k = 0; k < n; k++) {                                                               \
            bool m = *(const bool *)(d[1] + k * s[1]);                                                  \
            w##BITS##_t t;                                                                              \
            memcpy(&t, d[2] + k * s[2], sizeof t);                                                      \
            w##BITS##_t r = (m == scalar_is_true_branch) ? v : t;                                       \
            memcpy(d[0] + k * s[0], &r, sizeof r);                                                      \
        }                                                                                               \
    }                                                                                                   \
    static void where_sa_##BITS(char **d, const int64_t *s, int64_t n, const void *c) {                 \
        where_scalar_##BITS(d, s, n, c, true, ((const where_ctx *)c)->a);                               \
    }                                                                                                   \
    static void where_sb_##BITS(char **d, const int64_t *s, int64_t n, const void *c) {                 \
        where_scalar_##BITS(d, s, n, c, false, ((const where_ctx *)c)->b);                              \
    }                                                                                                   \
    static void where_ss_##BITS(char **d, const int64_t *s, int64_t n, const void *c) {                 \
        const where_ctx *w = (const where_ctx *)c;                                                      \
        w##BITS##_t va, vb;                                                                             \
        memcpy(&va, w->a, sizeof va);                                                                   \
        memcpy(&vb, w->b, sizeof vb);                                                                   \
        for (int64_t k = 0; k < n; k++) {                                                               \
            w##BITS##_t r = *(const bool *)(d[1] + k * s[1]) ? va : vb;                                 \
            memcpy(d[0] + k * s[0], &r, sizeof r);                                                      \
        }                                                                                               \
    }
DEF_WHERE(8)
DEF_WHERE(16)
DEF_WHERE(32)
DEF_WHERE(64)

static ampc_status cpu_where(ampc_op op, const ampc_kernel_args *a) {
    AMPC_TRY(check_cpu(op, a));
    ampc_tensor *out = a->out[0];
    const ampc_tensor *cond = a->in[0], *x = a->in[1], *y = a->in[2];
    if (!cond || cond->dtype != AMPC_BOOL)
        return ampc_set_error(AMPC_E_RUNTIME, "where: the CPU kernel needs a bool condition tensor");
    where_ctx ctx;
    memset(&ctx, 0, sizeof ctx);
    if (!x) ampc_ew_scalar_as_element(out->dtype, a->scalars[2], ctx.a);
    if (!y) ampc_ew_scalar_as_element(out->dtype, a->scalars[3], ctx.b);
    int size_index;
    switch (ampc_dtype_itemsize(out->dtype)) {
    case 1: size_index = 0; break;
    case 2: size_index = 1; break;
    case 4: size_index = 2; break;
    default: size_index = 3; break;
    }
    static const ampc_cpu_loop_fn both[4] = {where_8, where_16, where_32, where_64};
    static const ampc_cpu_loop_fn only_b_tensor[4] = {where_sa_8, where_sa_16, where_sa_32, where_sa_64};
    static const ampc_cpu_loop_fn only_a_tensor[4] = {where_sb_8, where_sb_16, where_sb_32, where_sb_64};
    static const ampc_cpu_loop_fn none[4] = {where_ss_8, where_ss_16, where_ss_32, where_ss_64};
    const ampc_tensor *ins[3] = {cond, NULL, NULL};
    if (x && y) {
        ins[1] = x;
        ins[2] = y;
        return run_loop(out, 3, ins, both[size_index], &ctx);
    }
    if (x || y) {
        ins[1] = x ? x : y;
        return run_loop(out, 2, ins, x ? only_a_tensor[size_index] : only_b_tensor[size_index], &ctx);
    }
    return run_loop(out, 1, ins, none[size_index], &ctx);
}

/* ------------------------------------------------------------------ registration */

static ampc_status cpu_elementwise(ampc_op op, const ampc_kernel_args *a) {
    switch (ampc_op_kind_of(op)) {
    case AMPC_KIND_UNARY: return cpu_unary(op, a);
    case AMPC_KIND_BINARY:
    case AMPC_KIND_COMPARE: return cpu_binary(op, a);
    case AMPC_KIND_TERNARY: return cpu_where(op, a);
    default: return ampc_set_error(AMPC_E_NOT_IMPLEMENTED, "%s: not an elementwise op", ampc_op_name(op));
    }
}

void ampc_cpu_register_elementwise(void) {
    fill_loop_tables();
    for (int op = 0; op < AMPC_NUM_OPS; op++) {
        ampc_op_kind kind = ampc_op_kind_of((ampc_op)op);
        if (kind == AMPC_KIND_UNARY || kind == AMPC_KIND_BINARY || kind == AMPC_KIND_COMPARE ||
            kind == AMPC_KIND_TERNARY)
            ampc_register_kernel(AMPC_CPU, (ampc_op)op, cpu_elementwise);
    }
}
