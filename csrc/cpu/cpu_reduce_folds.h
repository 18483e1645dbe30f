/* cpu_reduce_folds.h: the typed inner loops of the CPU reductions ("folds"), generated per
 * dtype in cpu_reduce_folds.c, and how their partial results merge.
 *
 * A fold reduces n elements (byte stride s) to one accumulator: a double for floating inputs,
 * an int64 for integer ones and for any/all. Contiguous rows use 32 independent accumulators,
 * which the compiler vectorizes without -ffast-math, and rows longer than 2048 elements are
 * split in halves (pairwise summation), so float32 sums accumulated in double track NumPy's
 * float64 closely. A column loop folds input rows into a row of accumulators (the across-rows
 * path of cpu_reduce_loops.c). cpu_reduce.c picks the loops from the tables by [fold][input
 * dtype]; NULL marks a combination no frontend sends. */
#ifndef AMPC_CPU_REDUCE_FOLDS_H
#define AMPC_CPU_REDUCE_FOLDS_H

#include <math.h>
#include <stdint.h>

#include "../core/dtype.h"
#include "../core/reduce_plan.h" /* enum fold */


typedef double (*fold_d_fn)(const char *p, int64_t n, int64_t s, double param);
typedef int64_t (*fold_i_fn)(const char *p, int64_t n, int64_t s, double param);
/* Across rows: fold `rows` contiguous input rows of n elements, `row_stride` bytes apart, into a
 * row of n accumulators. */
typedef void (*col_d_fn)(double *acc, const char *p, int64_t n, int64_t rows, int64_t row_stride, double param);
typedef void (*col_i_fn)(int64_t *acc, const char *p, int64_t n, int64_t rows, int64_t row_stride, double param);
/* First index i < n with x[i] == target (a NaN target finds the first NaN). */
typedef int64_t (*find_d_fn)(const char *p, int64_t n, int64_t s, double target);
typedef int64_t (*find_i_fn)(const char *p, int64_t n, int64_t s, int64_t target);
/* Across rows, for max/min with indices: where a row beats best[j] (or is its first NaN), take it
 * and its index (r0 for the first of the rows, then r0 + 1, ...). */
typedef void (*col_arg_d_fn)(double *best, int64_t *idx, const char *p, int64_t n, int64_t rows, int64_t row_stride,
                             int64_t r0);
typedef void (*col_arg_i_fn)(int64_t *best, int64_t *idx, const char *p, int64_t n, int64_t rows,
                             int64_t row_stride, int64_t r0);
/* Across rows, for var: Welford's update of running means and squared deviations of x - shift,
 * `before` rows having been folded already; the very first row sets the shift, so the sums stay
 * of the data's spread, not of its offset. */
typedef void (*col_welford_fn)(double *mean, double *m2, double *shift, const char *p, int64_t n, int64_t rows,
                               int64_t row_stride, int64_t before);

extern const fold_d_fn ampc_fold_d_loops[FOLD_COUNT][AMPC_NUM_DTYPES];
extern const fold_i_fn ampc_fold_i_loops[FOLD_COUNT][AMPC_NUM_DTYPES];
extern const col_d_fn ampc_col_d_loops[FOLD_COUNT][AMPC_NUM_DTYPES];
extern const col_i_fn ampc_col_i_loops[FOLD_COUNT][AMPC_NUM_DTYPES];
extern const col_arg_d_fn ampc_col_arg_d_loops[2][AMPC_NUM_DTYPES]; /* [0] max, [1] min */
extern const col_arg_i_fn ampc_col_arg_i_loops[2][AMPC_NUM_DTYPES];
extern const col_welford_fn ampc_col_welford_loops[AMPC_NUM_DTYPES];
extern const find_d_fn ampc_find_d_loops[AMPC_NUM_DTYPES];
extern const find_i_fn ampc_find_i_loops[AMPC_NUM_DTYPES];

/* NaN-propagating extremes: a NaN argument wins. */
#define FOLD_MAX_NAN(a, b) (((b) > (a) || (b) != (b)) ? (b) : (a))
#define FOLD_MIN_NAN(a, b) (((b) < (a) || (b) != (b)) ? (b) : (a))
/* Integer sums and products wrap around like PyTorch's; unsigned arithmetic keeps that defined. */
#define FOLD_WRAP_ADD(a, b) ((int64_t)((uint64_t)(a) + (uint64_t)(b)))
#define FOLD_WRAP_MUL(a, b) ((int64_t)((uint64_t)(a) * (uint64_t)(b)))

static inline double fold_identity_d(int fold) {
    switch (fold) {
    case FOLD_prod: return 1.0;
    case FOLD_max: return -INFINITY;
    case FOLD_min:
    case FOLD_abs_min: return INFINITY;
    default: return 0.0;
    }
}

static inline int64_t fold_identity_i(int fold) {
    switch (fold) {
    case FOLD_prod:
    case FOLD_all: return 1;
    case FOLD_max: return INT64_MIN;
    case FOLD_min: return INT64_MAX;
    default: return 0;
    }
}

/* The result of folding a's elements then b's. */
static inline double fold_merge_d(int fold, double a, double b) {
    switch (fold) {
    case FOLD_prod: return a * b;
    case FOLD_max:
    case FOLD_abs_max: return FOLD_MAX_NAN(a, b);
    case FOLD_min:
    case FOLD_abs_min: return FOLD_MIN_NAN(a, b);
    default: return a + b;
    }
}

static inline int64_t fold_merge_i(int fold, int64_t a, int64_t b) {
    switch (fold) {
    case FOLD_prod: return FOLD_WRAP_MUL(a, b);
    case FOLD_max: return b > a ? b : a;
    case FOLD_min: return b < a ? b : a;
    case FOLD_any: return a | b;
    case FOLD_all: return a & b;
    default: return FOLD_WRAP_ADD(a, b);
    }
}

#endif
