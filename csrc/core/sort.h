/* sort.h: the frontends of sorting and selection (core/sort.c, core/sort_compose.c): PyTorch's
 * sort, argsort, msort, topk, kthvalue, median, nanmedian, mode, quantile, nanquantile, unique,
 * unique_consecutive, searchsorted, bucketize, histc, bincount and isin.
 *
 * Dims wrap as in PyTorch (negative counts from the end; a 0-dim tensor takes dim 0 or -1).
 * Functions with two results return a status and set both (new references) or neither.
 * Values are differentiable where PyTorch's are (their nodes: derivatives_sort.c); indices,
 * counts and positions are int64 (searchsorted: int32 with out_int32). */
#ifndef AMPC_SORT_H
#define AMPC_SORT_H

#include "dispatch.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Sorted values along dim and the int64 indices they came from. Always stable (equal values in
 * index order), so `stable` only documents the caller's wish. */
ampc_status ampc_sort(const ampc_tensor *a, int64_t dim, bool descending, bool stable, ampc_tensor **values,
                      ampc_tensor **indices);
/* The k largest (or smallest) along dim; sorted: in order, else in an unspecified order. */
ampc_status ampc_topk(const ampc_tensor *a, int64_t k, int64_t dim, bool largest, bool sorted, ampc_tensor **values,
                      ampc_tensor **indices);
/* op KTHVALUE (k-th smallest, 1-based), MEDIAN, NANMEDIAN (lower medians) or MODE along dim. */
ampc_status ampc_select_dim(ampc_op op, const ampc_tensor *a, int64_t k, int64_t dim, bool keepdim,
                            ampc_tensor **values, ampc_tensor **indices);
/* median() / nanmedian() of all elements: a 0-dim tensor */
ampc_tensor *ampc_median_all(ampc_op op, const ampc_tensor *a);

/* Quantiles q (a 0-dim or 1-D tensor of a's dtype, values in [0, 1]) of a along dim (all
 * elements when !has_dim). interpolation: "linear", "lower", "higher", "midpoint", "nearest";
 * ignore_nan: nanquantile. Result shape: q's dims first, then the reduced shape. */
ampc_tensor *ampc_quantile(const ampc_tensor *a, const ampc_tensor *q, bool has_dim, int64_t dim, bool keepdim,
                           const char *interpolation, bool ignore_nan);

/* Insertion points of values in sorted_seq (1-D, or the values' leading dims and a last dim);
 * sorter: NULL or the int64 argsort of sorted_seq. */
ampc_tensor *ampc_searchsorted(const ampc_tensor *sorted_seq, const ampc_tensor *values, bool out_int32, bool right,
                               const ampc_tensor *sorter);
ampc_tensor *ampc_bucketize(const ampc_tensor *input, const ampc_tensor *boundaries, bool out_int32, bool right);
/* bool, shaped like elements: whether each element occurs in test_elements (xor invert) */
ampc_tensor *ampc_isin(const ampc_tensor *elements, const ampc_tensor *test_elements, bool invert);

/* unique(sorted, return_inverse, return_counts) of the flattened input: *inverse (a's shape)
 * and *counts are set only when inverse / counts are non-NULL. consecutive: only runs of equal
 * neighbours collapse (unique_consecutive), without sorting. */
ampc_status ampc_unique(const ampc_tensor *a, bool consecutive, ampc_tensor **values, ampc_tensor **inverse,
                        ampc_tensor **counts);
/* The same along dim: slices a.select(dim, i) compared whole; inverse and counts always set. */
ampc_status ampc_unique_dim(const ampc_tensor *a, int64_t dim, bool consecutive, ampc_tensor **values,
                            ampc_tensor **inverse, ampc_tensor **counts);

ampc_tensor *ampc_histc(const ampc_tensor *a, int64_t bins, double min, double max);
ampc_tensor *ampc_bincount(const ampc_tensor *a, const ampc_tensor *weights, int64_t minlength);

#ifdef __cplusplus
}
#endif
#endif
