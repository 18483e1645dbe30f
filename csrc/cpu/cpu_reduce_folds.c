/* cpu_reduce_folds.c: the typed loops of cpu_reduce_folds.h, generated per (fold, dtype) from
 * one row of update/merge/identity expressions each (see the fold lists below). */
#include "cpu_reduce_folds.h"

#include <stdbool.h>
#include <string.h>

#include "cpu_dtype_loops.h"

/* 32 accumulators per contiguous row: with fewer, GCC keeps the select-based folds (max, min)
 * scalar; rows shorter than 2 * LANES use 4, setting up and merging 32 would cost more. */
#define LANES 32
#define PAIRWISE_BLOCK 2048

/* fp16 -> fp32 without branches, so fp16 rows vectorize (the general ampc_half_to_f32 branches
 * on the exponent): move exponent and mantissa into place, rescale by 2^112 (which also
 * normalizes subnormals exactly), then restore inf/NaN and the sign. */
static inline float load_f16_branchless(const void *p) {
    uint16_t h;
    memcpy(&h, p, sizeof h);
    uint32_t em = (uint32_t)(h & 0x7fffu) << 13;
    uint32_t u = ampc_f32_bits(ampc_bits_f32(em) * 0x1p112f);
    uint32_t special = 0u - (uint32_t)(em >= 0x0f800000u); /* all ones for inf/NaN */
    u = (u & ~special) | ((em | 0x7f800000u) & special);
    return ampc_bits_f32(u | ((uint32_t)(h & 0x8000u) << 16));
}

/* fp16 and bf16 rows are widened to fp32 (exactly) in blocks and folded by the fp32 loop, whose
 * vectorization then carries over; F16C converts 8 halves per instruction where the CPU has it
 * (chosen at run time, no -march flags). */
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
__attribute__((target("avx,f16c"))) static void widen_f16_f16c(float *dst, const char *src, int64_t n) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(src + 2 * i))));
    for (; i < n; i++) dst[i] = load_f16_branchless(src + 2 * i);
}
#define HAVE_F16C() __builtin_cpu_supports("f16c")
#else
#define widen_f16_f16c(dst, src, n) ((void)0)
#define HAVE_F16C() 0
#endif

static void widen_f16(float *restrict dst, const char *restrict src, int64_t n) {
    if (HAVE_F16C()) {
        widen_f16_f16c(dst, src, n);
        return;
    }
    for (int64_t i = 0; i < n; i++) dst[i] = load_f16_branchless(src + 2 * i);
}

static void widen_bf16(float *restrict dst, const char *restrict src, int64_t n) {
    for (int64_t i = 0; i < n; i++) dst[i] = AMPC_LOAD_bf16(src + 2 * i);
}

/* The fold `f32_fold` of a contiguous fp16/bf16 row of at most PAIRWISE_BLOCK elements, widened
 * first; out of line so the recursive folds do not carry the buffer in every frame. */
typedef void (*widen_fn)(float *dst, const char *src, int64_t n);
__attribute__((noinline)) static double fold_widened_double(fold_d_fn f32_fold, widen_fn widen, const char *p,
                                                            int64_t n, double param) {
    float wide[PAIRWISE_BLOCK];
    widen(wide, p, n);
    return f32_fold((const char *)wide, n, (int64_t)sizeof(float), param);
}
__attribute__((noinline)) static int64_t fold_widened_int64_t(fold_i_fn f32_fold, widen_fn widen, const char *p,
                                                              int64_t n, double param) {
    float wide[PAIRWISE_BLOCK];
    widen(wide, p, n);
    return f32_fold((const char *)wide, n, (int64_t)sizeof(float), param);
}
/* Inside fold NAME of an fp16/bf16 row: contiguous rows go widened to the fp32 fold of the same
 * name. Empty for the other dtypes. */
#define FOLD_WIDENED_ROW(WIDEN, NAME, RT) \
    if (s == 2 && n >= 2 * LANES) return fold_widened_##RT(fold_##NAME##_f32, WIDEN, p, n, param);
#define FOLD_WIDEN_f16(NAME, RT) FOLD_WIDENED_ROW(widen_f16, NAME, RT)
#define FOLD_WIDEN_bf16(NAME, RT) FOLD_WIDENED_ROW(widen_bf16, NAME, RT)
#define FOLD_WIDEN_f32(NAME, RT)
#define FOLD_WIDEN_f64(NAME, RT)
#define FOLD_WIDEN_i64(NAME, RT)
#define FOLD_WIDEN_i32(NAME, RT)
#define FOLD_WIDEN_u8(NAME, RT)
#define FOLD_WIDEN_b8(NAME, RT)

#define FOLD_LOAD_f32 AMPC_LOAD_f32
#define FOLD_LOAD_f16 load_f16_branchless
#define FOLD_LOAD_bf16 AMPC_LOAD_bf16
#define FOLD_LOAD_f64 AMPC_LOAD_f64
#define FOLD_LOAD_i64 AMPC_LOAD_i64
#define FOLD_LOAD_i32 AMPC_LOAD_i32
#define FOLD_LOAD_u8 AMPC_LOAD_u8
#define FOLD_LOAD_b8 AMPC_LOAD_b8

/* One fold along a row: `a` is the accumulator (of type AT; the result is returned as RT), `v`
 * the loaded element (VT), `b` a second accumulator being merged in, `param` the fold's
 * parameter. The column loop accumulates in RT, the type of the tables' buffers. */
#define DEFINE_FOLD(ENUM, SUF, CT, RT, AT, VT, NAME, UPDATE, MERGE, IDENTITY)                             \
    static RT fold_##NAME##_##SUF(const char *p, int64_t n, int64_t s, double param) {                    \
        if (n > PAIRWISE_BLOCK) {                                                                         \
            int64_t h = n / 2 / LANES * LANES;                                                            \
            AT a = (AT)fold_##NAME##_##SUF(p, h, s, param);                                               \
            AT b = (AT)fold_##NAME##_##SUF(p + h * s, n - h, s, param);                                   \
            return MERGE;                                                                                 \
        }                                                                                                 \
        FOLD_WIDEN_##SUF(NAME, RT)                                                                        \
        AT acc = IDENTITY;                                                                                \
        int64_t i = 0;                                                                                    \
        if (s == (int64_t)sizeof(CT) && n >= 2 * LANES) {                                                 \
            const CT *restrict x = (const CT *)p;                                                         \
            AT lane[LANES];                                                                               \
            for (int j = 0; j < LANES; j++) lane[j] = IDENTITY;                                           \
            for (; i + LANES <= n; i += LANES)                                                            \
                for (int j = 0; j < LANES; j++) {                                                         \
                    AT a = lane[j];                                                                       \
                    VT v = (VT)FOLD_LOAD_##SUF(x + i + j);                                                \
                    lane[j] = UPDATE;                                                                     \
                }                                                                                         \
            for (int j = 0; j < LANES; j++) {                                                             \
                AT a = acc, b = lane[j];                                                                  \
                acc = MERGE;                                                                              \
            }                                                                                             \
        } else if (s == (int64_t)sizeof(CT) && n >= 8) { /* short rows: 4 chains hide add latency */     \
            const CT *restrict x = (const CT *)p;                                                         \
            AT lane[4] = {IDENTITY, IDENTITY, IDENTITY, IDENTITY};                                        \
            for (; i + 4 <= n; i += 4)                                                                    \
                for (int j = 0; j < 4; j++) {                                                             \
                    AT a = lane[j];                                                                       \
                    VT v = (VT)FOLD_LOAD_##SUF(x + i + j);                                                \
                    lane[j] = UPDATE;                                                                     \
                }                                                                                         \
            for (int j = 0; j < 4; j++) {                                                                 \
                AT a = acc, b = lane[j];                                                                  \
                acc = MERGE;                                                                              \
            }                                                                                             \
        }                                                                                                 \
        for (; i < n; i++) {                                                                              \
            AT a = acc;                                                                                   \
            VT v = (VT)FOLD_LOAD_##SUF(p + i * s);                                                        \
            acc = UPDATE;                                                                                 \
        }                                                                                                 \
        return acc;                                                                                       \
    }                                                                                                     \
    static void col_##NAME##_##SUF(RT *restrict acc, const char *restrict p, int64_t n, int64_t rows,     \
                                   int64_t row_stride, double param) {                                    \
        for (int64_t r = 0; r < rows; r++, p += row_stride) {                                             \
            const CT *x = (const CT *)p;                                                                  \
            for (int64_t j = 0; j < n; j++) {                                                             \
                RT a = acc[j];                                                                            \
                VT v = (VT)FOLD_LOAD_##SUF(x + j);                                                        \
                acc[j] = UPDATE;                                                                          \
            }                                                                                             \
        }                                                                                                 \
    }

/* X(ENUM, SUF, CT, result type, accumulator type, loaded type, fold, update, merge, identity).
 * Extremes are exact in the input's own precision (NT: float for fp32/fp16/bf16), which packs
 * twice the lanes of double into a vector; everything that adds or multiplies runs in double. */
#define FLOAT_FOLDS(X, ENUM, SUF, CT, NT)                                                           \
    X(ENUM, SUF, CT, double, double, double, sum, a + v, a + b, 0.0)                                \
    X(ENUM, SUF, CT, double, double, double, prod, a * v, a * b, 1.0)                               \
    X(ENUM, SUF, CT, double, NT, NT, max, FOLD_MAX_NAN(a, v), FOLD_MAX_NAN(a, b), -INFINITY)        \
    X(ENUM, SUF, CT, double, NT, NT, min, FOLD_MIN_NAN(a, v), FOLD_MIN_NAN(a, b), INFINITY)         \
    X(ENUM, SUF, CT, double, double, double, abs_sum, a + fabs(v), a + b, 0.0)                      \
    X(ENUM, SUF, CT, double, double, double, sq_sum, a + v * v, a + b, 0.0)                         \
    X(ENUM, SUF, CT, double, double, double, pow_sum, a + pow(fabs(v), param), a + b, 0.0)          \
    X(ENUM, SUF, CT, double, double, double, abs_max, FOLD_MAX_NAN(a, fabs(v)), FOLD_MAX_NAN(a, b), 0.0) \
    X(ENUM, SUF, CT, double, double, double, abs_min, FOLD_MIN_NAN(a, fabs(v)), FOLD_MIN_NAN(a, b), INFINITY) \
    X(ENUM, SUF, CT, double, double, double, nonzero, a + (double)(v != 0), a + b, 0.0)            \
    X(ENUM, SUF, CT, double, double, double, sqdev, a + (v - param) * (v - param), a + b, 0.0)      \
    X(ENUM, SUF, CT, double, double, double, expsum, a + exp(v - param), a + b, 0.0)                \
    X(ENUM, SUF, CT, int64_t, int64_t, double, any, a | (int64_t)(v != 0), a | b, 0)                \
    X(ENUM, SUF, CT, int64_t, int64_t, double, all, a & (int64_t)(v != 0), a & b, 1)

#define INT_FOLDS(X, ENUM, SUF, CT)                                                                 \
    X(ENUM, SUF, CT, int64_t, int64_t, int64_t, sum, FOLD_WRAP_ADD(a, v), FOLD_WRAP_ADD(a, b), 0)   \
    X(ENUM, SUF, CT, int64_t, int64_t, int64_t, prod, FOLD_WRAP_MUL(a, v), FOLD_WRAP_MUL(a, b), 1)  \
    X(ENUM, SUF, CT, int64_t, int64_t, int64_t, max, v > a ? v : a, b > a ? b : a, INT64_MIN)       \
    X(ENUM, SUF, CT, int64_t, int64_t, int64_t, min, v < a ? v : a, b < a ? b : a, INT64_MAX)       \
    X(ENUM, SUF, CT, int64_t, int64_t, int64_t, any, a | (int64_t)(v != 0), a | b, 0)               \
    X(ENUM, SUF, CT, int64_t, int64_t, int64_t, all, a & (int64_t)(v != 0), a & b, 1)

/* X(A, ENUM, SUF, storage type, native arithmetic type): the dtypes, with a passed-through A */
#define FLOAT_DTYPES_ARG(X, A)                                                                 \
    X(A, AMPC_FLOAT32, f32, float, float) X(A, AMPC_FLOAT16, f16, ampc_half, float)            \
    X(A, AMPC_BFLOAT16, bf16, ampc_bfloat16, float) X(A, AMPC_FLOAT64, f64, double, double)
#define INT_DTYPES_ARG(X, A)                                                                   \
    X(A, AMPC_INT64, i64, int64_t, int64_t) X(A, AMPC_INT32, i32, int32_t, int64_t)            \
    X(A, AMPC_UINT8, u8, uint8_t, int64_t) X(A, AMPC_BOOL, b8, bool, int64_t)
#define CALL_WITHOUT_ARG(X, ENUM, SUF, CT, NT) X(ENUM, SUF, CT, NT)
#define FLOAT_DTYPES(X) FLOAT_DTYPES_ARG(CALL_WITHOUT_ARG, X)
#define INT_DTYPES(X) INT_DTYPES_ARG(CALL_WITHOUT_ARG, X)

#define DEFINE_FLOAT_FOLDS(ENUM, SUF, CT, NT) FLOAT_FOLDS(DEFINE_FOLD, ENUM, SUF, CT, NT)
#define DEFINE_INT_FOLDS(ENUM, SUF, CT, NT) INT_FOLDS(DEFINE_FOLD, ENUM, SUF, CT)
FLOAT_DTYPES(DEFINE_FLOAT_FOLDS)
INT_DTYPES(DEFINE_INT_FOLDS)

/* Table entries: double accumulators into the _d tables, int64 ones into the _i tables. */
#define ENTRY_double(table, ENUM, SUF, NAME) ENTRY_##table##_double(ENUM, SUF, NAME)
#define ENTRY_int64_t(table, ENUM, SUF, NAME) ENTRY_##table##_int64_t(ENUM, SUF, NAME)
#define ENTRY_fold_d_double(ENUM, SUF, NAME) [FOLD_##NAME][ENUM] = fold_##NAME##_##SUF,
#define ENTRY_fold_d_int64_t(ENUM, SUF, NAME)
#define ENTRY_fold_i_double(ENUM, SUF, NAME)
#define ENTRY_fold_i_int64_t(ENUM, SUF, NAME) [FOLD_##NAME][ENUM] = fold_##NAME##_##SUF,
#define ENTRY_col_d_double(ENUM, SUF, NAME) [FOLD_##NAME][ENUM] = col_##NAME##_##SUF,
#define ENTRY_col_d_int64_t(ENUM, SUF, NAME)
#define ENTRY_col_i_double(ENUM, SUF, NAME)
#define ENTRY_col_i_int64_t(ENUM, SUF, NAME) [FOLD_##NAME][ENUM] = col_##NAME##_##SUF,

#define FOLD_D_ENTRY(ENUM, SUF, CT, RT, AT, VT, NAME, U, M, I) ENTRY_##RT(fold_d, ENUM, SUF, NAME)
#define FOLD_I_ENTRY(ENUM, SUF, CT, RT, AT, VT, NAME, U, M, I) ENTRY_##RT(fold_i, ENUM, SUF, NAME)
#define COL_D_ENTRY(ENUM, SUF, CT, RT, AT, VT, NAME, U, M, I) ENTRY_##RT(col_d, ENUM, SUF, NAME)
#define COL_I_ENTRY(ENUM, SUF, CT, RT, AT, VT, NAME, U, M, I) ENTRY_##RT(col_i, ENUM, SUF, NAME)

#define FLOAT_ROW_OF(ENTRY, ENUM, SUF, CT, NT) FLOAT_FOLDS(ENTRY, ENUM, SUF, CT, NT)
#define INT_ROW_OF(ENTRY, ENUM, SUF, CT, NT) INT_FOLDS(ENTRY, ENUM, SUF, CT)
#define FLOAT_ROW(ENTRY) FLOAT_DTYPES_ARG(FLOAT_ROW_OF, ENTRY)
#define INT_ROW(ENTRY) INT_DTYPES_ARG(INT_ROW_OF, ENTRY)

const fold_d_fn ampc_fold_d_loops[FOLD_COUNT][AMPC_NUM_DTYPES] = {FLOAT_ROW(FOLD_D_ENTRY) INT_ROW(FOLD_D_ENTRY)};
const fold_i_fn ampc_fold_i_loops[FOLD_COUNT][AMPC_NUM_DTYPES] = {FLOAT_ROW(FOLD_I_ENTRY) INT_ROW(FOLD_I_ENTRY)};
const col_d_fn ampc_col_d_loops[FOLD_COUNT][AMPC_NUM_DTYPES] = {FLOAT_ROW(COL_D_ENTRY) INT_ROW(COL_D_ENTRY)};
const col_i_fn ampc_col_i_loops[FOLD_COUNT][AMPC_NUM_DTYPES] = {FLOAT_ROW(COL_I_ENTRY) INT_ROW(COL_I_ENTRY)};

/* ---- first occurrence of a value (argmax/argmin after the extreme is known) ---- */

#define DEFINE_FIND(ENUM, SUF, CT, TT)                                                    \
    static int64_t find_##SUF(const char *p, int64_t n, int64_t s, TT target) {           \
        bool nan = target != target;                                                      \
        for (int64_t i = 0; i < n; i++) {                                                 \
            TT v = (TT)FOLD_LOAD_##SUF(p + i * s);                                        \
            if (v == target || (nan && v != v)) return i;                                 \
        }                                                                                 \
        return 0;                                                                         \
    }
#define DEFINE_FIND_D(ENUM, SUF, CT, NT) DEFINE_FIND(ENUM, SUF, CT, double)
#define DEFINE_FIND_I(ENUM, SUF, CT, NT) DEFINE_FIND(ENUM, SUF, CT, int64_t)
FLOAT_DTYPES(DEFINE_FIND_D)
INT_DTYPES(DEFINE_FIND_I)

#define FIND_ENTRY(ENUM, SUF, CT, NT) [ENUM] = find_##SUF,
const find_d_fn ampc_find_d_loops[AMPC_NUM_DTYPES] = {FLOAT_DTYPES(FIND_ENTRY)};
const find_i_fn ampc_find_i_loops[AMPC_NUM_DTYPES] = {INT_DTYPES(FIND_ENTRY)};

/* ---- across rows: extremes with their row, and Welford's running moments ---- */

#define DEFINE_COL_ARG(ENUM, SUF, CT, AT, NAME, BETTER)                                              \
    static void col_##NAME##_##SUF(AT *restrict best, int64_t *restrict idx, const char *restrict p, \
                                   int64_t n, int64_t rows, int64_t row_stride, int64_t r0) {        \
        for (int64_t r = r0; r < r0 + rows; r++, p += row_stride) {                                  \
            const CT *x = (const CT *)p;                                                             \
            for (int64_t j = 0; j < n; j++) {                                                        \
                AT v = (AT)FOLD_LOAD_##SUF(x + j), b = best[j];                                      \
                bool take = BETTER;                                                                  \
                best[j] = take ? v : b;                                                              \
                idx[j] = take ? r : idx[j];                                                          \
            }                                                                                        \
        }                                                                                            \
    }
/* A NaN best stays; a NaN v takes over a number. */
#define DEFINE_COL_ARG_D(ENUM, SUF, CT, NT)                                                    \
    DEFINE_COL_ARG(ENUM, SUF, CT, double, argmax, (b == b) & ((v > b) | (v != v)))         \
    DEFINE_COL_ARG(ENUM, SUF, CT, double, argmin, (b == b) & ((v < b) | (v != v)))
#define DEFINE_COL_ARG_I(ENUM, SUF, CT, NT)                      \
    DEFINE_COL_ARG(ENUM, SUF, CT, int64_t, argmax, v > b)    \
    DEFINE_COL_ARG(ENUM, SUF, CT, int64_t, argmin, v < b)
FLOAT_DTYPES(DEFINE_COL_ARG_D)
INT_DTYPES(DEFINE_COL_ARG_I)

#define COL_ARGMAX_ENTRY(ENUM, SUF, CT, NT) [0][ENUM] = col_argmax_##SUF, [1][ENUM] = col_argmin_##SUF,
const col_arg_d_fn ampc_col_arg_d_loops[2][AMPC_NUM_DTYPES] = {FLOAT_DTYPES(COL_ARGMAX_ENTRY)};
const col_arg_i_fn ampc_col_arg_i_loops[2][AMPC_NUM_DTYPES] = {INT_DTYPES(COL_ARGMAX_ENTRY)};

#define DEFINE_WELFORD(ENUM, SUF, CT, NT)                                                                 \
    static void welford_##SUF(double *restrict mean, double *restrict m2, double *restrict shift,     \
                              const char *restrict p, int64_t n, int64_t rows, int64_t row_stride,    \
                              int64_t before) {                                                       \
        for (int64_t r = 0; r < rows; r++, p += row_stride) {                                         \
            const CT *x = (const CT *)p;                                                              \
            if (before + r == 0) {                                                                    \
                for (int64_t j = 0; j < n; j++) shift[j] = (double)FOLD_LOAD_##SUF(x + j);            \
                continue;                                                                             \
            }                                                                                         \
            double inv_count = 1.0 / (double)(before + r + 1);                                        \
            for (int64_t j = 0; j < n; j++) {                                                         \
                double v = (double)FOLD_LOAD_##SUF(x + j) - shift[j], d = v - mean[j];                \
                mean[j] += d * inv_count;                                                             \
                m2[j] += d * (v - mean[j]);                                                           \
            }                                                                                         \
        }                                                                                             \
    }
FLOAT_DTYPES(DEFINE_WELFORD)
#define WELFORD_ENTRY(ENUM, SUF, CT, NT) [ENUM] = welford_##SUF,
const col_welford_fn ampc_col_welford_loops[AMPC_NUM_DTYPES] = {FLOAT_DTYPES(WELFORD_ENTRY)};
