/* cuda_elementwise.cu: the elementwise family (UNARY, BINARY, COMPARE, TERNARY) on the GPU.
 *
 * The twin of cpu_elementwise.c, op for op. The frontend (core/elementwise.c) hands over inputs
 * already in the op's compute dtype and an output in the result dtype (the compute dtype, or
 * bool for comparisons, isnan & co. and the logical ops). in[k] == NULL means operand k is the
 * scalar scalars[1 + k]; it is converted on the host exactly as the CPU kernel converts it
 * (ampc_ew_* in core/elementwise_math.h) and passed by value.
 *
 * Each op is a small functor over its opmath type (float for float32/float16/bfloat16, double for
 * float64, the type itself for integers and bool) whose body is the CPU kernel's expression: the
 * shared formulas of core/elementwise_math.h, CUDA's full-precision libm (never the __expf
 * intrinsics), wrapping integer arithmetic. One kernel template runs every functor, with two
 * paths:
 *   - float32/float16/bfloat16 operands, contiguous, pointers 16-byte aligned: 128-bit loads and
 *     stores, a pack of 16 / sizeof(T) elements per thread, a scalar operand held in a register;
 *   - everything else (strides, broadcasting, 0-dim): ampc_cuda_indexer offsets per element.
 * fp16/bf16 are widened to float, computed, and rounded once on store, as on the CPU.
 *
 * Exactness: +, -, *, /, sqrt, fmod, floor & co. are IEEE-exact on the GPU, so the arithmetic ops
 * match the CPU bit for bit; alpha's product is formed with __fmul_rn/__dmul_rn so nvcc cannot
 * fuse it into an FMA the CPU does not do. Transcendentals (exp, log, tanh, erf, pow, ...) differ
 * from glibc within CUDA's documented ulp bounds. fp16/bf16 NaN payloads may differ (the
 * hardware rounds NaN to the canonical NaN); casts (cuda_copy.cu) keep them exact.
 *
 * Integer division or remainder by zero cannot raise without a synchronisation: the element is
 * written as 0 (as the CPU kernel writes it before raising) and the device's deferred error word
 * gets AMPC_CUDA_ERR_ZERO_DIVISION, raised as "ZeroDivisionError" at the next synchronising point
 * (PyTorch's CUDA kernels return garbage instead; the CPU raises at once). */
#include <type_traits>

#include "../core/elementwise_math.h"
#include "cuda_elementwise.cuh"

namespace {

/* ------------------------------------------------------------------ variants
 * Every op of ops.def (EW_ADD == AMPC_OP_ADD), plus the forms a kernel picks from the op's
 * parameters, as in cpu_elementwise.c. ADD and SUB always take alpha (a + 1 * b == a + b exactly),
 * and the six comparisons are one functor that switches on a warp-uniform code. */
enum ew_variant {
#define AMPC_OP(id, name, kind) EW_##id,
#include "../core/ops.def"
#undef AMPC_OP
    EW_GELU_TANH,             /* gelu(approximate='tanh') */
    EW_DIV_TRUNC,             /* div(rounding_mode='trunc') */
    EW_DIV_FLOOR,             /* div(rounding_mode='floor'), // */
    EW_DIV_FLOOR_STEPWISE_F16, /* the same for fp16/bf16 tensor divisors, rounded after every step */
    EW_DIV_FLOOR_STEPWISE_BF16,
    EW_POW_SQUARE,            /* x ** 2, x ** 3, x ** -2: torch multiplies */
    EW_POW_CUBE,
    EW_POW_INV_SQUARE,
    EW_POW_SCALAR,            /* x ** e for any other scalar e, in the opmath type */
    EW_POW_SCALAR_WIDE,       /* float32 ** e: in double, as torch's std::pow(float, double) */
    EW_ROUND_DECIMALS,        /* round(x, decimals > 0): p0 = 10^decimals */
    EW_ROUND_NEG_DECIMALS,    /* round(x, decimals < 0): p0 = 10^-decimals */
    EW_COMPARE                /* eq, ne, lt, le, gt, ge: params.cmp says which */
};

enum ew_comparison { CMP_EQ, CMP_NE, CMP_LT, CMP_LE, CMP_GT, CMP_GE };

/* Per-call constants, in the opmath type V. */
template <typename V> struct ew_params {
    V p0, p1;        /* alpha; clamp bounds; softplus beta, threshold; 10^decimals; pow's exponent */
    double exponent; /* EW_POW_SCALAR_WIDE's exponent, unrounded */
    int cmp;         /* EW_COMPARE: an ew_comparison */
    int *error_word; /* the device's deferred error word (may be NULL) */
    int error_code;  /* written there on an integer division by zero */
};

template <typename V> __device__ __forceinline__ void ew_flag_zero_division(const ew_params<V> &p) {
    if (p.error_word) atomicCAS(p.error_word, 0, p.error_code);
}

template <typename V> __device__ __forceinline__ bool ew_compare(V a, V b, int cmp) {
    switch (cmp) {
    case CMP_EQ: return a == b;
    case CMP_NE: return a != b;
    case CMP_LT: return a < b;
    case CMP_LE: return a <= b;
    case CMP_GT: return a > b;
    default: return a >= b;
    }
}

/* ------------------------------------------------------------------ the ops, per opmath type
 * ew_ops<V>::NAME is cpu_elementwise.c's expression for NAME in that dtype group (FLOAT_OPS,
 * INT_OPS, BOOL_OPS there); a group defines only the ops the CPU backend has for it. */
template <typename V> struct ew_ops;

#define EW_LIBM_f(fn) fn##f
#define EW_LIBM_d(fn) fn
#define EW_LIBM(S, fn) EW_LIBM_##S(fn)

/* T the opmath type, S the suffix of the shared helpers and libm flavour, PRODUCT the product
 * rounded on its own (never fused into an FMA: the CPU does not fuse) */
#define EW_DEFINE_FLOAT_OPS(T, S, PRODUCT)                                                                          \
    template <> struct ew_ops<T> {                                                                              \
        typedef const ew_params<T> &P;                                                                          \
        static __device__ __forceinline__ T EXP(T x, P) { return EW_LIBM(S, exp)(x); }                          \
        static __device__ __forceinline__ T LOG(T x, P) { return EW_LIBM(S, log)(x); }                          \
        static __device__ __forceinline__ T SQRT(T x, P) { return EW_LIBM(S, sqrt)(x); }                        \
        static __device__ __forceinline__ T RSQRT(T x, P) { return ampc_math_rsqrt_##S(x); }                    \
        static __device__ __forceinline__ T RECIPROCAL(T x, P) { return ampc_math_reciprocal_##S(x); }          \
        static __device__ __forceinline__ T SIGMOID(T x, P) { return ampc_math_sigmoid_##S(x); }                \
        static __device__ __forceinline__ T TANH(T x, P) { return EW_LIBM(S, tanh)(x); }                        \
        static __device__ __forceinline__ T RELU(T x, P) { return ampc_math_relu_##S(x); }                      \
        static __device__ __forceinline__ T GELU(T x, P) { return ampc_math_gelu_##S(x); }                      \
        static __device__ __forceinline__ T GELU_TANH(T x, P) { return ampc_math_gelu_tanh_##S(x); }            \
        static __device__ __forceinline__ T SILU(T x, P) { return ampc_math_silu_##S(x); }                      \
        static __device__ __forceinline__ T SOFTPLUS(T x, P p) { return ampc_math_softplus_##S(x, p.p0, p.p1); } \
        static __device__ __forceinline__ T SIN(T x, P) { return EW_LIBM(S, sin)(x); }                          \
        static __device__ __forceinline__ T COS(T x, P) { return EW_LIBM(S, cos)(x); }                          \
        static __device__ __forceinline__ T ERF(T x, P) { return EW_LIBM(S, erf)(x); }                          \
        static __device__ __forceinline__ T NEG(T x, P) { return -x; }                                          \
        static __device__ __forceinline__ T ABS(T x, P) { return EW_LIBM(S, fabs)(x); }                         \
        static __device__ __forceinline__ T SIGN(T x, P) { return ampc_math_sign_##S(x); }                      \
        static __device__ __forceinline__ T FLOOR(T x, P) { return EW_LIBM(S, floor)(x); }                      \
        static __device__ __forceinline__ T CEIL(T x, P) { return EW_LIBM(S, ceil)(x); }                        \
        static __device__ __forceinline__ T ROUND(T x, P) { return ampc_math_round_##S(x); }                    \
        static __device__ __forceinline__ T ROUND_DECIMALS(T x, P p) { return ampc_math_round_##S(x * p.p0) / p.p0; } \
        static __device__ __forceinline__ T ROUND_NEG_DECIMALS(T x, P p) { return ampc_math_round_##S(x / p.p0) * p.p0; } \
        static __device__ __forceinline__ T CLAMP(T x, P p) { return ampc_math_clamp_##S(x, p.p0, p.p1); }      \
        static __device__ __forceinline__ T POW_SQUARE(T x, P) { return x * x; }                                \
        static __device__ __forceinline__ T POW_CUBE(T x, P) { return x * x * x; }                              \
        static __device__ __forceinline__ T POW_INV_SQUARE(T x, P) { return (T)1 / (x * x); }                   \
        static __device__ __forceinline__ T POW_SCALAR(T x, P p) { return EW_LIBM(S, pow)(x, p.p0); }           \
        static __device__ __forceinline__ T POW_SCALAR_WIDE(T x, P p) { return (T)pow((double)x, p.exponent); } \
        static __device__ __forceinline__ bool LOGICAL_NOT(T x, P) { return x == (T)0; }                        \
        static __device__ __forceinline__ bool ISFINITE(T x, P) { return isfinite(x); }                         \
        static __device__ __forceinline__ bool ISNAN(T x, P) { return isnan(x); }                               \
        static __device__ __forceinline__ bool ISINF(T x, P) { return isinf(x); }                               \
        static __device__ __forceinline__ T ADD(T a, T b, P p) { return a + PRODUCT(p.p0, b); }                     \
        static __device__ __forceinline__ T SUB(T a, T b, P p) { return a - PRODUCT(p.p0, b); }                     \
        static __device__ __forceinline__ T MUL(T a, T b, P) { return a * b; }                                 \
        static __device__ __forceinline__ T DIV(T a, T b, P) { return a / b; }                                  \
        static __device__ __forceinline__ T DIV_TRUNC(T a, T b, P) { return ampc_math_trunc_divide_##S(a, b); } \
        static __device__ __forceinline__ T DIV_FLOOR(T a, T b, P) { return ampc_math_floor_divide_##S(a, b); } \
        static __device__ __forceinline__ T DIV_FLOOR_STEPWISE_F16(T a, T b, P) {                               \
            return ampc_math_floor_divide_stepwise_f16((float)a, (float)b);                                     \
        }                                                                                                       \
        static __device__ __forceinline__ T DIV_FLOOR_STEPWISE_BF16(T a, T b, P) {                              \
            return ampc_math_floor_divide_stepwise_bf16((float)a, (float)b);                                    \
        }                                                                                                       \
        static __device__ __forceinline__ T REMAINDER(T a, T b, P) { return ampc_math_remainder_##S(a, b); }    \
        static __device__ __forceinline__ T POW(T a, T b, P) { return EW_LIBM(S, pow)(a, b); }                  \
        static __device__ __forceinline__ T MAXIMUM(T a, T b, P) { return ampc_math_maximum_##S(a, b); }       \
        static __device__ __forceinline__ T MINIMUM(T a, T b, P) { return ampc_math_minimum_##S(a, b); }       \
        static __device__ __forceinline__ T ATAN2(T a, T b, P) { return EW_LIBM(S, atan2)(a, b); }              \
        static __device__ __forceinline__ bool LOGICAL_AND(T a, T b, P) { return (a != (T)0) & (b != (T)0); }   \
        static __device__ __forceinline__ bool LOGICAL_OR(T a, T b, P) { return (a != (T)0) | (b != (T)0); }    \
        static __device__ __forceinline__ bool COMPARE(T a, T b, P p) { return ew_compare(a, b, p.cmp); }       \
    };
EW_DEFINE_FLOAT_OPS(float, f, __fmul_rn)
EW_DEFINE_FLOAT_OPS(double, d, __dmul_rn)

/* T the type, S the shared helpers' suffix (wrapping arithmetic, no division traps) */
#define EW_ZERO_CHECKED(S, fn) \
    if (b == 0) {              \
        ew_flag_zero_division(p); \
        return 0;              \
    }                          \
    return ampc_math_##fn##_##S(a, b)
#define EW_DEFINE_INT_OPS(T, S)                                                                                 \
    template <> struct ew_ops<T> {                                                                              \
        typedef const ew_params<T> &P;                                                                          \
        static __device__ __forceinline__ T NEG(T x, P) { return ampc_math_wrap_neg_##S(x); }                   \
        static __device__ __forceinline__ T ABS(T x, P) { return ampc_math_abs_##S(x); }                        \
        static __device__ __forceinline__ T SIGN(T x, P) { return ampc_math_sign_##S(x); }                      \
        static __device__ __forceinline__ T RELU(T x, P) { return ampc_math_relu_##S(x); }                      \
        static __device__ __forceinline__ T CLAMP(T x, P p) { return ampc_math_clamp_##S(x, p.p0, p.p1); }      \
        static __device__ __forceinline__ T POW_SQUARE(T x, P) { return ampc_math_wrap_mul_##S(x, x); }         \
        static __device__ __forceinline__ T POW_CUBE(T x, P) {                                                  \
            return ampc_math_wrap_mul_##S(ampc_math_wrap_mul_##S(x, x), x);                                     \
        }                                                                                                       \
        static __device__ __forceinline__ T POW_SCALAR(T x, P p) { return ampc_math_powi_##S(x, p.p0); }        \
        static __device__ __forceinline__ bool LOGICAL_NOT(T x, P) { return x == 0; }                           \
        static __device__ __forceinline__ T ADD(T a, T b, P p) {                                                \
            return ampc_math_wrap_add_##S(a, ampc_math_wrap_mul_##S(p.p0, b));                                  \
        }                                                                                                       \
        static __device__ __forceinline__ T SUB(T a, T b, P p) {                                                \
            return ampc_math_wrap_sub_##S(a, ampc_math_wrap_mul_##S(p.p0, b));                                  \
        }                                                                                                       \
        static __device__ __forceinline__ T MUL(T a, T b, P) { return ampc_math_wrap_mul_##S(a, b); }          \
        static __device__ __forceinline__ T DIV_TRUNC(T a, T b, P p) { EW_ZERO_CHECKED(S, trunc_divide); }      \
        static __device__ __forceinline__ T DIV_FLOOR(T a, T b, P p) { EW_ZERO_CHECKED(S, floor_divide); }      \
        static __device__ __forceinline__ T REMAINDER(T a, T b, P p) { EW_ZERO_CHECKED(S, remainder); }         \
        static __device__ __forceinline__ T POW(T a, T b, P) { return ampc_math_powi_##S(a, b); }               \
        static __device__ __forceinline__ T MAXIMUM(T a, T b, P) { return a < b ? b : a; }                      \
        static __device__ __forceinline__ T MINIMUM(T a, T b, P) { return b < a ? b : a; }                      \
        static __device__ __forceinline__ T BITWISE_AND(T a, T b, P) { return a & b; }                          \
        static __device__ __forceinline__ T BITWISE_OR(T a, T b, P) { return a | b; }                           \
        static __device__ __forceinline__ T BITWISE_XOR(T a, T b, P) { return a ^ b; }                          \
        static __device__ __forceinline__ bool LOGICAL_AND(T a, T b, P) { return (a != 0) & (b != 0); }         \
        static __device__ __forceinline__ bool LOGICAL_OR(T a, T b, P) { return (a != 0) | (b != 0); }          \
        static __device__ __forceinline__ bool COMPARE(T a, T b, P p) { return ew_compare(a, b, p.cmp); }       \
    };
EW_DEFINE_INT_OPS(int64_t, i64)
EW_DEFINE_INT_OPS(int32_t, i32)
EW_DEFINE_INT_OPS(uint8_t, u8)

/* bool: + and max are or, * and min are and */
template <> struct ew_ops<bool> {
    typedef const ew_params<bool> &P;
    static __device__ __forceinline__ bool SIGN(bool x, P) { return x; }
    static __device__ __forceinline__ bool LOGICAL_NOT(bool x, P) { return !x; }
    static __device__ __forceinline__ bool ADD(bool a, bool b, P p) { return a | (p.p0 & b); }
    static __device__ __forceinline__ bool MUL(bool a, bool b, P) { return a & b; }
    static __device__ __forceinline__ bool MAXIMUM(bool a, bool b, P) { return a | b; }
    static __device__ __forceinline__ bool MINIMUM(bool a, bool b, P) { return a & b; }
    static __device__ __forceinline__ bool BITWISE_AND(bool a, bool b, P) { return a & b; }
    static __device__ __forceinline__ bool BITWISE_OR(bool a, bool b, P) { return a | b; }
    static __device__ __forceinline__ bool BITWISE_XOR(bool a, bool b, P) { return a != b; }
    static __device__ __forceinline__ bool LOGICAL_AND(bool a, bool b, P) { return a & b; }
    static __device__ __forceinline__ bool LOGICAL_OR(bool a, bool b, P) { return a | b; }
    static __device__ __forceinline__ bool COMPARE(bool a, bool b, P p) { return ew_compare(a, b, p.cmp); }
};

/* ------------------------------------------------------------------ functors
 * One per op, named F_<op>: the kernel's view of ew_ops<V>::<op>. KIND: U unary, UB unary with
 * bool out, B binary, BB binary with bool out. */
#define EW_ALL_OPS(X)                                                                                     \
    X(EXP, U) X(LOG, U) X(SQRT, U) X(RSQRT, U) X(RECIPROCAL, U) X(SIGMOID, U) X(TANH, U) X(RELU, U)       \
    X(GELU, U) X(GELU_TANH, U) X(SILU, U) X(SOFTPLUS, U) X(SIN, U) X(COS, U) X(ERF, U) X(NEG, U)         \
    X(ABS, U) X(SIGN, U) X(FLOOR, U) X(CEIL, U) X(ROUND, U) X(ROUND_DECIMALS, U)                        \
    X(ROUND_NEG_DECIMALS, U) X(CLAMP, U) X(POW_SQUARE, U) X(POW_CUBE, U) X(POW_INV_SQUARE, U)            \
    X(POW_SCALAR, U) X(POW_SCALAR_WIDE, U)                                                                \
    X(LOGICAL_NOT, UB) X(ISFINITE, UB) X(ISNAN, UB) X(ISINF, UB)                                          \
    X(ADD, B) X(SUB, B) X(MUL, B) X(DIV, B) X(DIV_TRUNC, B) X(DIV_FLOOR, B)                             \
    X(DIV_FLOOR_STEPWISE_F16, B) X(DIV_FLOOR_STEPWISE_BF16, B) X(REMAINDER, B) X(POW, B) X(MAXIMUM, B)  \
    X(MINIMUM, B) X(ATAN2, B) X(BITWISE_AND, B) X(BITWISE_OR, B) X(BITWISE_XOR, B)                       \
    X(LOGICAL_AND, BB) X(LOGICAL_OR, BB) X(COMPARE, BB)

#define EW_FUNCTOR_U(NAME)                                                                       \
    struct F_##NAME {                                                                            \
        static constexpr int arity = 1;                                                          \
        template <typename V> __device__ __forceinline__ V operator()(const V *x, const ew_params<V> &p) const { \
            return ew_ops<V>::NAME(x[0], p);                                                     \
        }                                                                                        \
    };
#define EW_FUNCTOR_UB(NAME)                                                                      \
    struct F_##NAME {                                                                            \
        static constexpr int arity = 1;                                                          \
        template <typename V> __device__ __forceinline__ bool operator()(const V *x, const ew_params<V> &p) const { \
            return ew_ops<V>::NAME(x[0], p);                                                     \
        }                                                                                        \
    };
#define EW_FUNCTOR_B(NAME)                                                                       \
    struct F_##NAME {                                                                            \
        static constexpr int arity = 2;                                                          \
        template <typename V> __device__ __forceinline__ V operator()(const V *x, const ew_params<V> &p) const { \
            return ew_ops<V>::NAME(x[0], x[1], p);                                               \
        }                                                                                        \
    };
#define EW_FUNCTOR_BB(NAME)                                                                      \
    struct F_##NAME {                                                                            \
        static constexpr int arity = 2;                                                          \
        template <typename V> __device__ __forceinline__ bool operator()(const V *x, const ew_params<V> &p) const { \
            return ew_ops<V>::NAME(x[0], x[1], p);                                               \
        }                                                                                        \
    };
#define EW_FUNCTOR(NAME, KIND) EW_FUNCTOR_##KIND(NAME)
EW_ALL_OPS(EW_FUNCTOR)

/* ------------------------------------------------------------------ kernels */

/* The tensors of one call: output, inputs (NULL: the operand is `scalar[k]`). */
template <typename T, typename OT, int NIN> struct ew_operands {
    OT *out;
    const T *in[NIN];
    ampc_opmath_t<T> scalar[NIN];
};

/* Contiguous, 16-byte-aligned operands: packs of VEC elements, then a tail of < VEC elements. */
template <int VEC, typename T, typename OT, int NIN, typename F>
__global__ void __launch_bounds__(AMPC_CUDA_THREADS)
    ew_contiguous_kernel(int64_t n, ew_operands<T, OT, NIN> ops, ew_params<ampc_opmath_t<T>> p, F f) {
    typedef ampc_opmath_t<T> V;
    const int64_t first = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    const int64_t stride = (int64_t)gridDim.x * blockDim.x;
    const int64_t n_packs = n / VEC;
    for (int64_t v = first; v < n_packs; v += stride) {
        V x[NIN][VEC];
#pragma unroll
        for (int k = 0; k < NIN; k++) {
            if (ops.in[k]) {
                ampc_cuda_pack<T, VEC> in = reinterpret_cast<const ampc_cuda_pack<T, VEC> *>(ops.in[k])[v];
#pragma unroll
                for (int j = 0; j < VEC; j++) x[k][j] = ampc_convert<V>(in.v[j]);
            } else {
#pragma unroll
                for (int j = 0; j < VEC; j++) x[k][j] = ops.scalar[k];
            }
        }
        ampc_cuda_pack<OT, VEC> out;
#pragma unroll
        for (int j = 0; j < VEC; j++) {
            V xj[NIN];
#pragma unroll
            for (int k = 0; k < NIN; k++) xj[k] = x[k][j];
            out.v[j] = ampc_convert<OT>(f(xj, p));
        }
        reinterpret_cast<ampc_cuda_pack<OT, VEC> *>(ops.out)[v] = out;
    }
    for (int64_t i = n_packs * VEC + first; i < n; i += stride) {
        V x[NIN];
#pragma unroll
        for (int k = 0; k < NIN; k++) x[k] = ops.in[k] ? ampc_load(ops.in[k], i) : ops.scalar[k];
        ops.out[i] = ampc_convert<OT>(f(x, p));
    }
}

/* Any strides and broadcasting: operand k + 1 of the indexer is input k. */
template <typename T, typename OT, int NIN, typename F>
__global__ void __launch_bounds__(AMPC_CUDA_THREADS)
    ew_strided_kernel(ampc_cuda_indexer ix, ew_operands<T, OT, NIN> ops, ew_params<ampc_opmath_t<T>> p, F f) {
    typedef ampc_opmath_t<T> V;
    AMPC_CUDA_KERNEL_LOOP(i, ix.numel) {
        int64_t off[NIN + 1];
        ampc_cuda_offsets<NIN + 1>(ix, i, off);
        V x[NIN];
#pragma unroll
        for (int k = 0; k < NIN; k++) x[k] = ops.in[k] ? ampc_load(ops.in[k], off[k + 1]) : ops.scalar[k];
        ops.out[off[0]] = ampc_convert<OT>(f(x, p));
    }
}

/* ------------------------------------------------------------------ host side */

template <typename T> constexpr ampc_dtype dtype_of();
template <> constexpr ampc_dtype dtype_of<float>() { return AMPC_FLOAT32; }
template <> constexpr ampc_dtype dtype_of<__half>() { return AMPC_FLOAT16; }
template <> constexpr ampc_dtype dtype_of<__nv_bfloat16>() { return AMPC_BFLOAT16; }
template <> constexpr ampc_dtype dtype_of<double>() { return AMPC_FLOAT64; }
template <> constexpr ampc_dtype dtype_of<int64_t>() { return AMPC_INT64; }
template <> constexpr ampc_dtype dtype_of<int32_t>() { return AMPC_INT32; }
template <> constexpr ampc_dtype dtype_of<uint8_t>() { return AMPC_UINT8; }
template <> constexpr ampc_dtype dtype_of<bool>() { return AMPC_BOOL; }

/* One kernel call, as the host prepared it. Scalars and parameters are opmath bytes
 * (ampc_ew_scalar_as_opmath). */
struct ew_call {
    ampc_op op;
    ampc_tensor *out;
    const ampc_tensor *in[2]; /* NULL: the operand is scalar[k] */
    unsigned char scalar[2][8];
    unsigned char param[2][8]; /* p0, p1 */
    double exponent;
    int cmp;
    bool checks_divisor; /* integer division/remainder: may write the deferred error word */
};

static ampc_status no_kernel(ampc_op op, ampc_dtype dt) {
    return ampc_set_error(AMPC_E_NOT_IMPLEMENTED, "%s: the CUDA backend has no kernel for dtype %s", ampc_op_name(op),
                          ampc_dtype_name(dt));
}

/* Runs functor F over the call: T the inputs' storage type, OT the output's. */
template <typename T, typename OT, typename F> static ampc_status ew_launch(const ew_call &c) {
    constexpr int NIN = F::arity;
    typedef ampc_opmath_t<T> V;
    ampc_tensor *out = c.out;
    if (out->dtype != dtype_of<OT>())
        return ampc_set_error(AMPC_E_RUNTIME, "%s: the CUDA kernel got an output of dtype %s", ampc_op_name(c.op),
                              ampc_dtype_name(out->dtype));
    int64_t n = ampc_numel(out);
    if (n == 0) return AMPC_OK;
    ampc_cuda_guard guard(out);

    constexpr int VEC = 16 / sizeof(T);
    ew_operands<T, OT, NIN> ops;
    memset(&ops, 0, sizeof ops);
    ops.out = (OT *)ampc_data_ptr(out);
    bool aligned = ampc_cuda_pack_aligned<OT, VEC>(ops.out);
    const ampc_tensor *iterated[NIN]; /* a scalar's slot iterates the output: same shape, never read */
    for (int k = 0; k < NIN; k++) {
        if (c.in[k]) {
            if (c.in[k]->dtype != dtype_of<T>() || c.in[k]->device.type != AMPC_CUDA ||
                c.in[k]->device.index != out->device.index)
                return ampc_set_error(AMPC_E_RUNTIME, "%s: the CUDA kernel expects input %d as %s on cuda:%d, got %s on %s",
                                      ampc_op_name(c.op), k, ampc_dtype_name(dtype_of<T>()), (int)out->device.index,
                                      ampc_dtype_name(c.in[k]->dtype), c.in[k]->device.type == AMPC_CUDA ? "cuda" : "cpu");
            ops.in[k] = (const T *)ampc_data_ptr(c.in[k]);
            aligned = aligned && ampc_cuda_pack_aligned<T, VEC>(ops.in[k]);
            iterated[k] = c.in[k];
        } else {
            memcpy(&ops.scalar[k], c.scalar[k], sizeof(V));
            iterated[k] = out;
        }
    }
    ew_params<V> p;
    memset(&p, 0, sizeof p);
    memcpy(&p.p0, c.param[0], sizeof(V));
    memcpy(&p.p1, c.param[1], sizeof(V));
    p.exponent = c.exponent;
    p.cmp = c.cmp;
    if (c.checks_divisor) { /* arms the runtime's check of the word at the next sync: only when needed */
        p.error_word = ampc_cuda_error_word(out->device.index);
        p.error_code = AMPC_CUDA_ERR_ZERO_DIVISION * 65536 + (int)c.op;
    }

    ampc_cuda_indexer ix;
    AMPC_TRY(ampc_cuda_indexer_init(&ix, 1, &out, NIN, iterated));
    cudaStream_t stream = ampc_cuda_stream_of(out);
    /* 128-bit packs for the dtypes training runs in; float64, integers and bool take the general
     * kernel, which is still coalesced on contiguous operands (and keeps this file's compile time down) */
    constexpr bool packed = std::is_same<T, float>::value || std::is_same<T, __half>::value ||
                            std::is_same<T, __nv_bfloat16>::value;
    if constexpr (packed) {
        if (ix.contiguous && aligned) {
            ew_contiguous_kernel<VEC, T, OT, NIN, F>
                <<<ampc_cuda_grid(n / VEC), AMPC_CUDA_THREADS, 0, stream>>>(n, ops, p, F());
            AMPC_CUDA_CHECK_LAUNCH();
            return AMPC_OK;
        }
    }
    ew_strided_kernel<T, OT, NIN, F><<<ampc_cuda_grid(n), AMPC_CUDA_THREADS, 0, stream>>>(ix, ops, p, F());
    AMPC_CUDA_CHECK_LAUNCH();
    return AMPC_OK;
}

/* The ops each dtype group has: cpu_elementwise.c's FLOAT_OPS, INT_OPS and BOOL_OPS. */
#define EW_FLOAT_OPS(X)                                                                                   \
    X(EXP, U) X(LOG, U) X(SQRT, U) X(RSQRT, U) X(RECIPROCAL, U) X(SIGMOID, U) X(TANH, U) X(RELU, U)       \
    X(GELU, U) X(GELU_TANH, U) X(SILU, U) X(SOFTPLUS, U) X(SIN, U) X(COS, U) X(ERF, U) X(NEG, U)         \
    X(ABS, U) X(SIGN, U) X(FLOOR, U) X(CEIL, U) X(ROUND, U) X(ROUND_DECIMALS, U)                        \
    X(ROUND_NEG_DECIMALS, U) X(CLAMP, U) X(POW_SQUARE, U) X(POW_CUBE, U) X(POW_INV_SQUARE, U)            \
    X(POW_SCALAR, U) X(LOGICAL_NOT, UB) X(ISFINITE, UB) X(ISNAN, UB) X(ISINF, UB)                         \
    X(ADD, B) X(SUB, B) X(MUL, B) X(DIV, B) X(DIV_TRUNC, B) X(DIV_FLOOR, B) X(REMAINDER, B) X(POW, B)    \
    X(MAXIMUM, B) X(MINIMUM, B) X(ATAN2, B) X(LOGICAL_AND, BB) X(LOGICAL_OR, BB) X(COMPARE, BB)
#define EW_INT_OPS(X)                                                                                     \
    X(NEG, U) X(ABS, U) X(SIGN, U) X(RELU, U) X(CLAMP, U) X(POW_SQUARE, U) X(POW_CUBE, U)                 \
    X(POW_SCALAR, U) X(LOGICAL_NOT, UB) X(ADD, B) X(SUB, B) X(MUL, B) X(DIV_TRUNC, B) X(DIV_FLOOR, B)    \
    X(REMAINDER, B) X(POW, B) X(MAXIMUM, B) X(MINIMUM, B) X(BITWISE_AND, B) X(BITWISE_OR, B)              \
    X(BITWISE_XOR, B) X(LOGICAL_AND, BB) X(LOGICAL_OR, BB) X(COMPARE, BB)
#define EW_BOOL_OPS(X)                                                                                    \
    X(SIGN, U) X(LOGICAL_NOT, UB) X(ADD, B) X(MUL, B) X(MAXIMUM, B) X(MINIMUM, B) X(BITWISE_AND, B)      \
    X(BITWISE_OR, B) X(BITWISE_XOR, B) X(LOGICAL_AND, BB) X(LOGICAL_OR, BB) X(COMPARE, BB)

#define EW_OUT_U(T) T
#define EW_OUT_B(T) T
#define EW_OUT_UB(T) bool
#define EW_OUT_BB(T) bool
#define EW_CASE(NAME, KIND) \
    case EW_##NAME: return ew_launch<T, EW_OUT_##KIND(T), F_##NAME>(c);

template <typename T> static ampc_status ew_run_float(int variant, const ew_call &c) {
    /* the forms that exist for one storage type only */
    if constexpr (std::is_same<T, float>::value)
        if (variant == EW_POW_SCALAR_WIDE) return ew_launch<T, T, F_POW_SCALAR_WIDE>(c);
    if constexpr (std::is_same<T, __half>::value)
        if (variant == EW_DIV_FLOOR_STEPWISE_F16) return ew_launch<T, T, F_DIV_FLOOR_STEPWISE_F16>(c);
    if constexpr (std::is_same<T, __nv_bfloat16>::value)
        if (variant == EW_DIV_FLOOR_STEPWISE_BF16) return ew_launch<T, T, F_DIV_FLOOR_STEPWISE_BF16>(c);
    switch (variant) {
        EW_FLOAT_OPS(EW_CASE)
    default: return no_kernel(c.op, dtype_of<T>());
    }
}

template <typename T> static ampc_status ew_run_int(int variant, const ew_call &c) {
    switch (variant) {
        EW_INT_OPS(EW_CASE)
    default: return no_kernel(c.op, dtype_of<T>());
    }
}

static ampc_status ew_run_bool(int variant, const ew_call &c) {
    typedef bool T;
    switch (variant) {
        EW_BOOL_OPS(EW_CASE)
    default: return no_kernel(c.op, AMPC_BOOL);
    }
}

static ampc_status ew_run(int variant, ampc_dtype dt, const ew_call &c) {
    switch (dt) {
    case AMPC_FLOAT32: return ew_run_float<float>(variant, c);
    case AMPC_FLOAT16: return ew_run_float<__half>(variant, c);
    case AMPC_BFLOAT16: return ew_run_float<__nv_bfloat16>(variant, c);
    case AMPC_FLOAT64: return ew_run_float<double>(variant, c);
    case AMPC_INT64: return ew_run_int<int64_t>(variant, c);
    case AMPC_INT32: return ew_run_int<int32_t>(variant, c);
    case AMPC_UINT8: return ew_run_int<uint8_t>(variant, c);
    case AMPC_BOOL: return ew_run_bool(variant, c);
    default: return no_kernel(c.op, dt);
    }
}

static ew_call new_call(ampc_op op, const ampc_kernel_args *a) {
    ew_call c;
    memset(&c, 0, sizeof c);
    c.op = op;
    c.out = a->out[0];
    return c;
}

/* ------------------------------------------------------------------ kernels (cpu_unary / cpu_binary) */

static ampc_status cuda_unary(ampc_op op, const ampc_kernel_args *a) {
    const ampc_tensor *x = a->in[0];
    ampc_dtype dt = x->dtype;
    ew_call c = new_call(op, a);
    c.in[0] = x;
    int variant = (op == AMPC_OP_GELU && a->ints[0] == 1) ? EW_GELU_TANH : (int)op;
    if (op == AMPC_OP_ROUND && a->ints[0] != 0) {
        int64_t decimals = a->ints[0];
        variant = decimals > 0 ? EW_ROUND_DECIMALS : EW_ROUND_NEG_DECIMALS;
        ampc_ew_scalar_as_opmath(dt, ampc_scalar_float(pow(10.0, (double)(decimals > 0 ? decimals : -decimals))),
                                 c.param[0]);
    } else if (op == AMPC_OP_SOFTPLUS) {
        ampc_ew_scalar_as_opmath(dt, a->scalars[0], c.param[0]);
        ampc_ew_scalar_as_opmath(dt, a->scalars[1], c.param[1]);
    } else if (op == AMPC_OP_CLAMP) {
        for (int k = 0; k < 2; k++)
            ampc_ew_scalar_as_opmath(
                dt, a->scalars[k].kind == AMPC_SCALAR_NONE ? ampc_ew_clamp_open_bound(dt, k == 1) : a->scalars[k],
                c.param[k]);
    }
    return ew_run(variant, dt, c);
}

/* x ** e for a scalar e: the forms the CPU kernel picks (ampc_ew_pow_scalar_form). */
static int pow_scalar_variant(ampc_dtype dt, double e) {
    switch (ampc_ew_pow_scalar_form(ampc_dtype_is_floating(dt), e)) {
    case AMPC_POW_SQUARE: return EW_POW_SQUARE;
    case AMPC_POW_CUBE: return EW_POW_CUBE;
    case AMPC_POW_INV_SQUARE: return EW_POW_INV_SQUARE;
    case AMPC_POW_SQRT: return EW_SQRT;
    case AMPC_POW_RSQRT: return EW_RSQRT;
    case AMPC_POW_RECIPROCAL: return EW_RECIPROCAL;
    default: return dt == AMPC_FLOAT32 ? EW_POW_SCALAR_WIDE : EW_POW_SCALAR;
    }
}

static ampc_status cuda_binary(ampc_op op, const ampc_kernel_args *a) {
    const ampc_tensor *ta = a->in[0], *tb = a->in[1];
    if (!ta && !tb) return ampc_set_error(AMPC_E_RUNTIME, "%s: both operands are scalars", ampc_op_name(op));
    ampc_dtype dt = ta ? ta->dtype : tb->dtype;
    ew_call c = new_call(op, a);
    c.in[0] = ta;
    c.in[1] = tb;
    /* The CPU kernel reads a one-element tensor divisor as a scalar, which takes fp16/bf16 floor
     * division off the stepwise form; the same choice here (the value itself is read from the
     * device either way). */
    bool b_reads_as_scalar = !tb || (ta && ampc_numel(c.out) > 1 && ampc_numel(tb) == 1);
    int variant = (int)op;
    if (op == AMPC_OP_DIV && a->ints[0] == 1) variant = EW_DIV_TRUNC;
    if (op == AMPC_OP_DIV && a->ints[0] == 2) {
        variant = EW_DIV_FLOOR;
        if (!b_reads_as_scalar && dt == AMPC_FLOAT16) variant = EW_DIV_FLOOR_STEPWISE_F16;
        if (!b_reads_as_scalar && dt == AMPC_BFLOAT16) variant = EW_DIV_FLOOR_STEPWISE_BF16;
    }
    switch (op) {
    case AMPC_OP_EQ: variant = EW_COMPARE; c.cmp = CMP_EQ; break;
    case AMPC_OP_NE: variant = EW_COMPARE; c.cmp = CMP_NE; break;
    case AMPC_OP_LT: variant = EW_COMPARE; c.cmp = CMP_LT; break;
    case AMPC_OP_LE: variant = EW_COMPARE; c.cmp = CMP_LE; break;
    case AMPC_OP_GT: variant = EW_COMPARE; c.cmp = CMP_GT; break;
    case AMPC_OP_GE: variant = EW_COMPARE; c.cmp = CMP_GE; break;
    default: break;
    }
    c.checks_divisor = !ampc_dtype_is_floating(dt) &&
                       (variant == EW_DIV_TRUNC || variant == EW_DIV_FLOOR || variant == EW_REMAINDER);
    /* p0: alpha of add/sub (1 when absent, which every other op ignores) */
    ampc_ew_scalar_as_opmath(dt, a->scalars[0].kind == AMPC_SCALAR_NONE ? ampc_scalar_int(1) : a->scalars[0],
                             c.param[0]);
    if (!ta) ampc_ew_scalar_as_opmath(dt, a->scalars[1], c.scalar[0]);
    if (!tb) {
        ampc_ew_scalar_as_opmath(dt, a->scalars[2], c.scalar[1]);
        if (op == AMPC_OP_POW) { /* a unary form over ta; the exponent in p0 (and unrounded) */
            c.exponent = ampc_scalar_to_double(a->scalars[2]);
            variant = pow_scalar_variant(dt, c.exponent);
            memcpy(c.param[0], c.scalar[1], sizeof c.param[0]);
        }
    }
    return ew_run(variant, dt, c);
}

/* ------------------------------------------------------------------ where
 * A select only moves bytes: one kernel per item size, W the unsigned integer of that size. */
template <typename W>
__global__ void __launch_bounds__(AMPC_CUDA_THREADS)
    where_kernel(ampc_cuda_indexer ix, W *out, const bool *cond, const W *x, const W *y, W x_scalar, W y_scalar) {
    AMPC_CUDA_KERNEL_LOOP(i, ix.numel) {
        int64_t off[4];
        ampc_cuda_offsets<4>(ix, i, off);
        W v;
        if (cond[off[1]])
            v = x ? x[off[2]] : x_scalar;
        else
            v = y ? y[off[3]] : y_scalar;
        out[off[0]] = v;
    }
}

template <typename W> static ampc_status where_launch(const ampc_kernel_args *a) {
    ampc_tensor *out = a->out[0];
    const ampc_tensor *cond = a->in[0], *x = a->in[1], *y = a->in[2];
    int64_t n = ampc_numel(out);
    if (n == 0) return AMPC_OK;
    ampc_cuda_guard guard(out);
    unsigned char xs[8] = {0}, ys[8] = {0};
    if (!x) ampc_ew_scalar_as_element(out->dtype, a->scalars[2], xs);
    if (!y) ampc_ew_scalar_as_element(out->dtype, a->scalars[3], ys);
    W x_scalar, y_scalar;
    memcpy(&x_scalar, xs, sizeof x_scalar);
    memcpy(&y_scalar, ys, sizeof y_scalar);
    const ampc_tensor *iterated[3] = {cond, x ? x : out, y ? y : out};
    ampc_cuda_indexer ix;
    AMPC_TRY(ampc_cuda_indexer_init(&ix, 1, &out, 3, iterated));
    where_kernel<W><<<ampc_cuda_grid(n), AMPC_CUDA_THREADS, 0, ampc_cuda_stream_of(out)>>>(
        ix, (W *)ampc_data_ptr(out), (const bool *)ampc_data_ptr(cond), x ? (const W *)ampc_data_ptr(x) : nullptr,
        y ? (const W *)ampc_data_ptr(y) : nullptr, x_scalar, y_scalar);
    AMPC_CUDA_CHECK_LAUNCH();
    return AMPC_OK;
}

static ampc_status cuda_where(ampc_op op, const ampc_kernel_args *a) {
    ampc_tensor *out = a->out[0];
    const ampc_tensor *cond = a->in[0];
    if (!cond || cond->dtype != AMPC_BOOL)
        return ampc_set_error(AMPC_E_RUNTIME, "where: the CUDA kernel needs a bool condition tensor");
    for (int k = 1; k < 3; k++)
        if (a->in[k] && a->in[k]->dtype != out->dtype)
            return ampc_set_error(AMPC_E_RUNTIME, "where: the CUDA kernel got operand %d of dtype %s for an output of %s",
                                  k, ampc_dtype_name(a->in[k]->dtype), ampc_dtype_name(out->dtype));
    switch (ampc_dtype_itemsize(out->dtype)) {
    case 1: return where_launch<uint8_t>(a);
    case 2: return where_launch<uint16_t>(a);
    case 4: return where_launch<uint32_t>(a);
    case 8: return where_launch<uint64_t>(a);
    default: return no_kernel(op, out->dtype);
    }
}

/* ------------------------------------------------------------------ registration */

static ampc_status cuda_elementwise(ampc_op op, const ampc_kernel_args *a) {
    switch (ampc_op_kind_of(op)) {
    case AMPC_KIND_UNARY: return cuda_unary(op, a);
    case AMPC_KIND_BINARY:
    case AMPC_KIND_COMPARE: return cuda_binary(op, a);
    case AMPC_KIND_TERNARY: return cuda_where(op, a);
    default: return ampc_set_error(AMPC_E_NOT_IMPLEMENTED, "%s: not an elementwise op", ampc_op_name(op));
    }
}

} // namespace

extern "C" void ampc_cuda_register_elementwise(void) {
    for (int op = 0; op < AMPC_NUM_OPS; op++) {
        ampc_op_kind kind = ampc_op_kind_of((ampc_op)op);
        if (kind == AMPC_KIND_UNARY || kind == AMPC_KIND_BINARY || kind == AMPC_KIND_COMPARE ||
            kind == AMPC_KIND_TERNARY)
            ampc_register_kernel(AMPC_CUDA, (ampc_op)op, cuda_elementwise);
    }
}
