/* reduce_plan.h: the host-side planning the REDUCE and SCAN kernels of every backend share
 * (cpu/cpu_reduce*.c, cpu/cpu_scan.c, cuda/cuda_reduce.cu, cuda/cuda_scan.cu). Plain C, header
 * only, so .c and .cu files include it alike.
 *
 *   - the folds: the typed accumulations a reduction runs (sum, extreme, a norm's |x|^p, ...),
 *     and the fold a norm of order p runs;
 *   - the reduction plan: the input seen as kept dims x reduced dims, from the keepdim-shaped
 *     output (a dim is reduced exactly where the output has size 1 and the input does not).
 *     Size-1 dims are dropped, dims sorted outermost (largest input stride) first and neighbours
 *     contiguous with each other merged. Strides are in elements; a backend scales them;
 *   - the scan plan: a contiguous tensor as (outer, n, cols), the scanned dim n in the middle. */
#ifndef AMPC_REDUCE_PLAN_H
#define AMPC_REDUCE_PLAN_H

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The folds (the CPU's typed loops of cpu_reduce_folds.h, the CUDA device ops of
 * cuda_reduce_ops.cuh). */
enum fold {
    FOLD_sum,     /* sum, mean, and the first pass of var */
    FOLD_prod,
    FOLD_max,     /* NaN wins, as in PyTorch */
    FOLD_min,
    FOLD_any,     /* integer accumulator for every input dtype */
    FOLD_all,
    FOLD_abs_sum, /* norm p = 1 */
    FOLD_sq_sum,  /* norm p = 2 */
    FOLD_pow_sum, /* norm of other p: sum |x|^p */
    FOLD_abs_max, /* norm p = inf */
    FOLD_abs_min, /* norm p = -inf */
    FOLD_nonzero, /* norm p = 0 */
    FOLD_sqdev,   /* var: sum (x - param)^2 around the mean in param */
    FOLD_expsum,  /* logsumexp: sum exp(x - param) below the max in param */
    FOLD_COUNT
};

/* The fold a norm of order p runs: the common orders avoid pow(). */
static inline int ampc_norm_fold(double p) {
    if (p == 2) return FOLD_sq_sum;
    if (p == 1) return FOLD_abs_sum;
    if (p == 0) return FOLD_nonzero;
    if (p == INFINITY) return FOLD_abs_max;
    if (p == -INFINITY) return FOLD_abs_min;
    return FOLD_pow_sum;
}

/* ---- the reduction plan */

typedef struct ampc_reduce_plan {
    int nk, nr;           /* >= 1 each (a size-1 dim stands in for none) */
    int64_t n_out, n_red; /* outputs, and reduced elements per output */
    /* kept dims: shape, strides (elements) in the input and the two outputs; reduced dims: shape
     * and input strides. Innermost last. */
    int64_t kshape[AMPC_MAX_DIMS], kin[AMPC_MAX_DIMS], ko0[AMPC_MAX_DIMS], ko1[AMPC_MAX_DIMS];
    int64_t rshape[AMPC_MAX_DIMS], rin[AMPC_MAX_DIMS];
} ampc_reduce_plan;

/* The sort key of a stride: its size, an expanded (stride-0) dim counting as the farthest. */
static inline int64_t ampc_reduce_stride_key(int64_t s) { return s == 0 ? INT64_MAX : llabs(s); }

/* Sorts dims outermost (largest stride in cols[0]) first; stride-0 (expanded) dims go outermost.
 * `cols` arrays of strides move along with the keys (insertion sort: at most 8 dims). */
static inline void ampc_reduce_sort_dims(int n, int64_t *shape, int ncols, int64_t **cols) {
    for (int i = 1; i < n; i++)
        for (int j = i; j > 0 && ampc_reduce_stride_key(cols[0][j - 1]) < ampc_reduce_stride_key(cols[0][j]); j--) {
            int64_t t = shape[j];
            shape[j] = shape[j - 1], shape[j - 1] = t;
            for (int c = 0; c < ncols; c++) t = cols[c][j], cols[c][j] = cols[c][j - 1], cols[c][j - 1] = t;
        }
}

/* Merges each dim into the next where every stride column allows it (row-major order kept). */
static inline int ampc_reduce_coalesce(int n, int64_t *shape, int ncols, int64_t **cols) {
    if (n == 0) return 0;
    int m = 0;
    for (int i = 1; i < n; i++) {
        bool can = true;
        for (int c = 0; c < ncols; c++)
            if (cols[c][m] != shape[i] * cols[c][i]) can = false;
        if (!can) m++;
        shape[m] = can ? shape[m] * shape[i] : shape[i];
        for (int c = 0; c < ncols; c++) cols[c][m] = cols[c][i];
    }
    return m + 1;
}

/* The plan of reducing `in` into the keepdim-shaped o0 (and o1, the indices, or NULL).
 * `ordered` (the arg ops) keeps the reduced dims in their logical order, so the flat index of a
 * reduced element is PyTorch's. */
static inline void ampc_reduce_plan_make(ampc_reduce_plan *pl, const ampc_tensor *in, const ampc_tensor *o0,
                                         const ampc_tensor *o1, bool ordered) {
    memset(pl, 0, sizeof *pl);
    for (int d = 0; d < in->ndim; d++) {
        if (in->shape[d] == 1) continue;
        if (o0->shape[d] == 1) {
            pl->rshape[pl->nr] = in->shape[d];
            pl->rin[pl->nr++] = in->strides[d];
        } else {
            pl->kshape[pl->nk] = in->shape[d];
            pl->kin[pl->nk] = in->strides[d];
            pl->ko0[pl->nk] = o0->strides[d];
            pl->ko1[pl->nk++] = o1 ? o1->strides[d] : 0;
        }
    }
    int64_t *kcols[3] = {pl->kin, pl->ko0, pl->ko1}, *rcols[1] = {pl->rin};
    ampc_reduce_sort_dims(pl->nk, pl->kshape, 3, kcols); /* outputs are independent: visit them in memory order */
    if (!ordered) ampc_reduce_sort_dims(pl->nr, pl->rshape, 1, rcols);
    pl->nk = ampc_reduce_coalesce(pl->nk, pl->kshape, 3, kcols);
    pl->nr = ampc_reduce_coalesce(pl->nr, pl->rshape, 1, rcols);
    if (pl->nk == 0) pl->kshape[pl->nk++] = 1;
    if (pl->nr == 0) pl->rshape[pl->nr++] = 1;
    pl->n_out = pl->n_red = 1;
    for (int i = 0; i < pl->nk; i++) pl->n_out *= pl->kshape[i];
    for (int i = 0; i < pl->nr; i++) pl->n_red *= pl->rshape[i];
}

/* ---- the scan plan */

/* A scan of a contiguous tensor along dim d: (outer, n, cols), the scanned dim in the middle. */
typedef struct ampc_scan_plan {
    int64_t outer, n, cols;
} ampc_scan_plan;

static inline ampc_scan_plan ampc_scan_plan_make(const ampc_tensor *in, int d) {
    ampc_scan_plan s = {1, 1, 1};
    for (int i = 0; i < in->ndim; i++) {
        if (i < d)
            s.outer *= in->shape[i];
        else if (i == d)
            s.n = in->shape[i];
        else
            s.cols *= in->shape[i];
    }
    return s;
}

#ifdef __cplusplus
}
#endif
#endif
