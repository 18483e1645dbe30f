/* sort_compose.c: the frontends built on sorted data: searchsorted, bucketize, isin, unique,
 * unique_consecutive, histc, bincount and quantile / nanquantile, with PyTorch's checks and
 * messages.
 *
 * searchsorted and isin dispatch the SEARCHSORTED / ISIN kernels (isin on the sorted test
 * elements); unique sorts (SORT) and collapses runs (UNIQUE_CONSECUTIVE); the sizes of unique's
 * and bincount's results depend on the data, so they read one number back from the device, as
 * PyTorch does. quantile is a composition of recording ops (sort, gather, arithmetic), as in
 * PyTorch, so its gradient flows through SortBackward0 and GatherBackward0. */
#include <math.h>
#include <string.h>

#include "derivatives.h"
#include "kernel_args.h"
#include "ops.h"
#include "sort.h"
#include "sort_internal.h"

static ampc_tensor *fail_null(ampc_tensor *a, ampc_tensor *b, ampc_tensor *c) {
    ampc_tensor_decref(a);
    ampc_tensor_decref(b);
    ampc_tensor_decref(c);
    return NULL;
}

/* one element of a 0-dim or 1-element tensor, read back to the host */
static ampc_status read_scalar(const ampc_tensor *t, ampc_scalar *out) { return ampc_get_scalar(t, 0, out); }

/* amin / amax of every element of t (non-empty), read back */
static ampc_status min_max(const ampc_tensor *t, ampc_scalar *lo, ampc_scalar *hi) {
    ampc_tensor *mn = ampc_reduce(AMPC_OP_AMIN, t, 0, NULL, false, AMPC_DTYPE_UNDEFINED);
    ampc_tensor *mx = mn ? ampc_reduce(AMPC_OP_AMAX, t, 0, NULL, false, AMPC_DTYPE_UNDEFINED) : NULL;
    ampc_status st = mx ? read_scalar(mn, lo) : ampc_last_status();
    if (st == AMPC_OK) st = read_scalar(mx, hi);
    ampc_tensor_decref(mn);
    ampc_tensor_decref(mx);
    return st;
}

/* ------------------------------------------------------------------ searchsorted, bucketize, isin */

static ampc_tensor *run_search(ampc_op op, const ampc_tensor *s, const ampc_tensor *v, const ampc_tensor *sorter,
                               ampc_dtype out_dt, bool right, bool invert) {
    ampc_dtype dt = ampc_promote_types(s->dtype, v->dtype);
    ampc_tensor *sc = ampc_to(s, dt, s->device, false), *vc = ampc_to(v, dt, v->device, false);
    ampc_tensor *out = sc && vc ? ampc_empty(v->ndim, v->shape, out_dt, v->device) : NULL;
    ampc_tensor *vk = out ? ampc_sort_dim_last(vc, v->ndim ? v->ndim - 1 : 0) : NULL;
    ampc_tensor *ok = vk ? ampc_sort_dim_last(out, v->ndim ? v->ndim - 1 : 0) : NULL;
    if (!ok) {
        fail_null(sc, vc, out);
        return fail_null(vk, NULL, NULL);
    }
    ampc_status st = AMPC_OK;
    if (ampc_numel(out) > 0) {
        ampc_searchsorted_args args = {.out = ok, .sorted = sc, .values = vk, .sorter = sorter, .right = right,
                                       .invert = invert};
        st = ampc_dispatch_searchsorted(op, &args);
    }
    fail_null(sc, vc, vk);
    ampc_tensor_decref(ok);
    if (st != AMPC_OK) return fail_null(out, NULL, NULL);
    return out;
}

ampc_tensor *ampc_searchsorted(const ampc_tensor *s, const ampc_tensor *v, bool out_int32, bool right,
                               const ampc_tensor *sorter) {
    char b1[128], b2[128];
    if (s->ndim == 0) {
        ampc_set_error(AMPC_E_RUNTIME,
                       "torch.searchsorted(): boundaries tensor should have positive dimension, but got 0 dimension");
        return NULL;
    }
    if (v->ndim == 0 && s->ndim != 1) {
        ampc_set_error(AMPC_E_RUNTIME,
                       "torch.searchsorted(): input value can be a scalar only when boundaries tensor dimension is 1, "
                       "but we got boundaries tensor dim(%d) and input value's dim(0) numel(1)",
                       s->ndim);
        return NULL;
    }
    bool leading_match = s->ndim == v->ndim;
    for (int i = 0; leading_match && i < s->ndim - 1; i++) leading_match = s->shape[i] == v->shape[i];
    if (s->ndim != 1 && !leading_match) {
        ampc_set_error(AMPC_E_RUNTIME,
                       "torch.searchsorted(): boundaries tensor should be 1 dimension or the first N-1 dimensions of "
                       "boundaries tensor and input value tensor must match, but we got boundaries tensor %s and input "
                       "value tensor %s",
                       ampc_shape_str(s->ndim, s->shape, b1, sizeof b1), ampc_shape_str(v->ndim, v->shape, b2, sizeof b2));
        return NULL;
    }
    if (s->device.type != v->device.type || s->device.index != v->device.index) {
        ampc_set_error(AMPC_E_RUNTIME, "torch.searchsorted(): boundaries and input value tensors should be on the same device");
        return NULL;
    }
    if (sorter) {
        if (sorter->dtype != AMPC_INT64) {
            ampc_set_error(AMPC_E_RUNTIME, "torch.searchsorted(): sorter must be a tensor of long dtype but got dtype %s",
                           ampc_dtype_torch_name(sorter->dtype));
            return NULL;
        }
        bool same = sorter->ndim == s->ndim;
        for (int i = 0; same && i < s->ndim; i++) same = sorter->shape[i] == s->shape[i];
        if (!same) {
            ampc_set_error(AMPC_E_RUNTIME,
                           "torch.searchsorted(): boundary and sorter must have the same size, but got boundary tensor "
                           "%s and got sorter tensor %s",
                           ampc_shape_str(s->ndim, s->shape, b1, sizeof b1),
                           ampc_shape_str(sorter->ndim, sorter->shape, b2, sizeof b2));
            return NULL;
        }
        if (ampc_numel(sorter) > 0) { /* every index is read by the kernel: check them first */
            ampc_scalar lo, hi;
            if (min_max(sorter, &lo, &hi) != AMPC_OK) return NULL;
            if (ampc_scalar_to_int(lo) < 0 || ampc_scalar_to_int(hi) >= s->shape[s->ndim - 1]) {
                ampc_set_error(AMPC_E_RUNTIME, "torch.searchsorted(): sorter index out of range");
                return NULL;
            }
        }
    }
    return run_search(AMPC_OP_SEARCHSORTED, s, v, sorter, out_int32 ? AMPC_INT32 : AMPC_INT64, right, false);
}

ampc_tensor *ampc_bucketize(const ampc_tensor *input, const ampc_tensor *boundaries, bool out_int32, bool right) {
    if (boundaries->ndim != 1) {
        ampc_set_error(AMPC_E_RUNTIME, "boundaries tensor must be 1 dimension, but got dim(%d)", boundaries->ndim);
        return NULL;
    }
    return ampc_searchsorted(boundaries, input, out_int32, right, NULL);
}

/* the elements of t flattened and sorted ascending (values only, no autograd) */
static ampc_tensor *sorted_flat(const ampc_tensor *t, ampc_dtype dt, ampc_tensor **perm) {
    int64_t n = ampc_numel(t);
    ampc_tensor *c = ampc_to(t, dt, t->device, false);
    ampc_tensor *flat = c ? ampc_reshape(c, 1, &n) : NULL;
    ampc_tensor_decref(c);
    if (!flat) return NULL;
    ampc_tensor *values = NULL, *indices = NULL;
    ampc_status st;
    AD_PAUSED(st, ampc_sort(flat, 0, false, true, &values, &indices));
    ampc_tensor_decref(flat);
    if (st != AMPC_OK) return NULL;
    if (perm) *perm = indices;
    else ampc_tensor_decref(indices);
    return values;
}

ampc_tensor *ampc_isin(const ampc_tensor *elements, const ampc_tensor *test, bool invert) {
    if (elements->device.type != test->device.type || elements->device.index != test->device.index) {
        ampc_set_error(AMPC_E_RUNTIME, "isin(): Expected elements and test_elements to be on the same device");
        return NULL;
    }
    ampc_dtype dt = ampc_promote_types(elements->dtype, test->dtype);
    if (dt == AMPC_BOOL) { /* PyTorch's sort-based isin refuses bool */
        ampc_set_error(AMPC_E_RUNTIME, "Unsupported input type encountered for isin(): Bool");
        return NULL;
    }
    ampc_tensor *sorted = sorted_flat(test, dt, NULL);
    if (!sorted) return NULL;
    ampc_tensor *out = run_search(AMPC_OP_ISIN, sorted, elements, NULL, AMPC_BOOL, false, invert);
    ampc_tensor_decref(sorted);
    return out;
}

/* ------------------------------------------------------------------ unique, unique_consecutive */

ampc_status ampc_unique(const ampc_tensor *a, bool consecutive, ampc_tensor **values, ampc_tensor **inverse,
                        ampc_tensor **counts) {
    bool want_inv = inverse != NULL, want_cnt = counts != NULL;
    *values = NULL;
    if (want_inv) *inverse = NULL;
    if (want_cnt) *counts = NULL;
    int64_t n = ampc_numel(a);
    ampc_tensor *input = NULL, *perm = NULL;
    if (consecutive) {
        ampc_tensor *flat = ampc_reshape(a, 1, &n);
        input = flat ? ampc_contiguous(flat) : NULL;
        ampc_tensor_decref(flat);
    } else {
        input = sorted_flat(a, a->dtype, want_inv ? &perm : NULL);
    }
    if (!input) return ampc_last_status();
    ampc_tensor *vals = ampc_empty(1, &n, a->dtype, a->device);
    ampc_tensor *cnt = want_cnt ? ampc_empty(1, &n, AMPC_INT64, a->device) : NULL;
    ampc_tensor *inv = want_inv ? ampc_empty(1, &n, AMPC_INT64, a->device) : NULL;
    ampc_tensor *nu = ampc_zeros(0, NULL, AMPC_INT64, a->device);
    ampc_status st = vals && nu && (cnt || !want_cnt) && (inv || !want_inv) ? AMPC_OK : ampc_last_status();
    int64_t n_unique = 0;
    if (st == AMPC_OK && n > 0) {
        ampc_unique_consecutive_args args = {.values = vals, .counts = cnt, .inverse = inv, .n_unique = nu,
                                             .input = input, .perm = perm};
        st = ampc_dispatch_unique_consecutive(AMPC_OP_UNIQUE_CONSECUTIVE, &args);
        ampc_scalar s;
        if (st == AMPC_OK) st = read_scalar(nu, &s);
        n_unique = ampc_scalar_to_int(s);
    }
    fail_null(input, perm, nu);
    if (st == AMPC_OK) { /* the first n_unique entries: views of the n-long buffers */
        *values = ampc_narrow(vals, 0, 0, n_unique);
        if (want_cnt) *counts = ampc_narrow(cnt, 0, 0, n_unique);
        if (want_inv) *inverse = ampc_view(inv, a->ndim, a->shape);
        if (!*values || (want_cnt && !*counts) || (want_inv && !*inverse)) st = ampc_last_status();
    }
    fail_null(vals, cnt, inv);
    if (st != AMPC_OK) {
        ampc_tensor_decref(*values);
        *values = NULL;
        if (want_cnt) {
            ampc_tensor_decref(*counts);
            *counts = NULL;
        }
        if (want_inv) {
            ampc_tensor_decref(*inverse);
            *inverse = NULL;
        }
    }
    return st;
}

/* ------------------------------------------------------------------ histc, bincount */

ampc_tensor *ampc_histc(const ampc_tensor *a, int64_t bins, double min, double max) {
    if (!ampc_dtype_is_floating(a->dtype)) {
        ampc_set_error(AMPC_E_NOT_IMPLEMENTED, "\"histogram_cpu\" not implemented for '%s'",
                       ampc_dtype_torch_name(a->dtype));
        return NULL;
    }
    if (bins <= 0) {
        ampc_set_error(AMPC_E_RUNTIME, "torch.histogram(): bins must be > 0, but got %lld for dimension 0",
                       (long long)bins);
        return NULL;
    }
    if (min > max) {
        ampc_set_error(AMPC_E_RUNTIME, "torch.histc: max must be larger than min");
        return NULL;
    }
    int64_t n = ampc_numel(a);
    if (min == max && n > 0) { /* the data's range */
        ampc_scalar lo, hi;
        if (min_max(a, &lo, &hi) != AMPC_OK) return NULL;
        min = ampc_scalar_to_double(lo);
        max = ampc_scalar_to_double(hi);
    }
    if (min == max) {
        min -= 1;
        max += 1;
    }
    if (!isfinite(min) || !isfinite(max)) {
        ampc_set_error(AMPC_E_RUNTIME, "torch.histc: range of [%g, %g] is not finite", min, max);
        return NULL;
    }
    ampc_tensor *flat = ampc_reshape(a, 1, &n);
    ampc_tensor *in = flat ? ampc_contiguous(flat) : NULL;
    ampc_tensor *out = in ? ampc_zeros(1, &bins, a->dtype, a->device) : NULL;
    ampc_tensor_decref(flat);
    if (out && n > 0) {
        ampc_histogram_args args = {.out = out, .input = in, .weights = NULL, .min = min, .max = max};
        if (ampc_dispatch_histogram(AMPC_OP_HISTC, &args) != AMPC_OK) {
            ampc_tensor_decref(out);
            out = NULL;
        }
    }
    ampc_tensor_decref(in);
    return out;
}

ampc_tensor *ampc_bincount(const ampc_tensor *a, const ampc_tensor *weights, int64_t minlength) {
    if (!ampc_dtype_is_integral(a->dtype, false)) {
        ampc_set_error(AMPC_E_NOT_IMPLEMENTED, "\"bincount_cpu\" not implemented for '%s'",
                       ampc_dtype_torch_name(a->dtype));
        return NULL;
    }
    if (a->ndim != 1) {
        ampc_set_error(AMPC_E_RUNTIME, "bincount only supports 1-d non-negative integral inputs.");
        return NULL;
    }
    if (minlength < 0) {
        ampc_set_error(AMPC_E_RUNTIME, "minlength should be >= 0");
        return NULL;
    }
    int64_t n = a->shape[0];
    if (weights && (weights->ndim != 1 || weights->shape[0] != n)) {
        ampc_set_error(AMPC_E_RUNTIME, "weights should be 1-d and have the same length as input");
        return NULL;
    }
    int64_t len = minlength;
    if (n > 0) {
        ampc_scalar lo, hi;
        if (min_max(a, &lo, &hi) != AMPC_OK) return NULL;
        if (ampc_scalar_to_int(lo) < 0) {
            ampc_set_error(AMPC_E_RUNTIME, "bincount only supports 1-d non-negative integral inputs.");
            return NULL;
        }
        if (ampc_scalar_to_int(hi) + 1 > len) len = ampc_scalar_to_int(hi) + 1;
    }
    /* PyTorch: float32 weights sum in float32, every other dtype in float64; an empty input
     * gives int64 zeros, weights or not */
    ampc_dtype out_dt = !weights || n == 0 ? AMPC_INT64 : weights->dtype == AMPC_FLOAT32 ? AMPC_FLOAT32 : AMPC_FLOAT64;
    ampc_tensor *in = ampc_contiguous(a);
    ampc_tensor *wc = in && weights && n > 0 ? ampc_to(weights, out_dt, weights->device, false) : NULL;
    ampc_tensor *w = wc ? ampc_contiguous(wc) : NULL;
    ampc_tensor *out = in && (w || !weights || n == 0) ? ampc_zeros(1, &len, out_dt, a->device) : NULL;
    if (out && n > 0) {
        ampc_histogram_args args = {.out = out, .input = in, .weights = w, .min = 0, .max = 0};
        if (ampc_dispatch_histogram(AMPC_OP_BINCOUNT, &args) != AMPC_OK) {
            ampc_tensor_decref(out);
            out = NULL;
        }
    }
    fail_null(in, wc, w);
    return out;
}

/* ------------------------------------------------------------------ unique along a dim
 * Slices a.select(dim, i) compared whole: the dim moved first and the rest flattened gives rows
 * X (n, m); a lexicographic order of the rows comes from m stable sorts, last column first (LSD);
 * a row starts a new run when any column differs from the row before, which makes run ids that
 * the UNIQUE_CONSECUTIVE kernel counts and maps back through the order (inverse). */

static ampc_tensor *take_rows(const ampc_tensor *x, const ampc_tensor *idx) { return ampc_index_select(x, 0, idx); }

/* the row order of X sorting its rows lexicographically (stable) */
static ampc_tensor *lex_order(const ampc_tensor *X) {
    int64_t n = X->shape[0], m = X->shape[1];
    ampc_tensor *perm = ampc_arange(0, (double)n, 1, AMPC_INT64, X->device);
    for (int64_t j = m - 1; j >= 0 && perm; j--) {
        ampc_tensor *col = ampc_select(X, 1, j);
        ampc_tensor *colp = col ? take_rows(col, perm) : NULL;
        ampc_tensor *v = NULL, *p = NULL;
        ampc_status st = colp ? ampc_sort(colp, 0, false, true, &v, &p) : ampc_last_status();
        ampc_tensor *next = st == AMPC_OK ? take_rows(perm, p) : NULL;
        fail_null(col, colp, v);
        fail_null(p, perm, NULL);
        perm = next;
    }
    return perm;
}

/* run ids (n) of consecutive equal rows of Xs (n, m): 0, then +1 where a row differs */
static ampc_tensor *run_ids(const ampc_tensor *Xs) {
    int64_t n = Xs->shape[0];
    if (n <= 1) return ampc_zeros(1, &n, AMPC_INT64, Xs->device);
    ampc_tensor *lo = ampc_narrow(Xs, 0, 0, n - 1), *hi = ampc_narrow(Xs, 0, 1, n - 1);
    ampc_tensor *ne = lo && hi ? ampc_binary(AMPC_OP_NE, hi, lo, ampc_scalar_none()) : NULL;
    int64_t one = 1, dim1 = 1;
    ampc_tensor *diff = ne ? ampc_reduce(AMPC_OP_ANY, ne, 1, &dim1, false, AMPC_DTYPE_UNDEFINED) : NULL;
    ampc_tensor *cs = diff ? ampc_cumsum(diff, 0, AMPC_INT64) : NULL;
    ampc_tensor *zero = cs ? ampc_zeros(1, &one, AMPC_INT64, Xs->device) : NULL;
    ampc_tensor *ids = zero ? ampc_cat(2, (const ampc_tensor *const[]){zero, cs}, 0) : NULL;
    fail_null(lo, hi, ne);
    fail_null(diff, cs, zero);
    return ids;
}

static ampc_status unique_dim_body(const ampc_tensor *a, int d, bool consecutive, ampc_tensor **values,
                                   ampc_tensor **inverse, ampc_tensor **counts) {
    int nd = a->ndim;
    int64_t n = a->shape[d], perm_dims[AMPC_MAX_DIMS], moved_shape[AMPC_MAX_DIMS];
    perm_dims[0] = d;
    for (int i = 0, j = 1; i < nd; i++)
        if (i != d) perm_dims[j++] = i;
    for (int i = 0; i < nd; i++) moved_shape[i] = a->shape[perm_dims[i]];
    int64_t m = 1;
    for (int i = 1; i < nd; i++) m *= moved_shape[i];
    ampc_tensor *moved = ampc_permute(a, nd, perm_dims);
    ampc_tensor *X = moved ? ampc_reshape(moved, 2, (int64_t[]){n, m}) : NULL;
    ampc_tensor *order = X && !consecutive ? lex_order(X) : NULL;
    ampc_tensor *Xs = X && (consecutive || order) ? (consecutive ? ampc_contiguous(X) : take_rows(X, order)) : NULL;
    ampc_tensor *ids = Xs ? run_ids(Xs) : NULL;
    ampc_tensor *run_vals = ids ? ampc_empty(1, &n, AMPC_INT64, a->device) : NULL;
    ampc_tensor *cnt = run_vals ? ampc_empty(1, &n, AMPC_INT64, a->device) : NULL;
    ampc_tensor *inv = cnt ? ampc_empty(1, &n, AMPC_INT64, a->device) : NULL;
    ampc_tensor *nu = inv ? ampc_zeros(0, NULL, AMPC_INT64, a->device) : NULL;
    ampc_status st = nu ? AMPC_OK : ampc_last_status();
    ampc_scalar s = ampc_scalar_int(0);
    if (st == AMPC_OK) {
        ampc_unique_consecutive_args args = {.values = run_vals, .counts = cnt, .inverse = inv, .n_unique = nu,
                                             .input = ids, .perm = order};
        st = ampc_dispatch_unique_consecutive(AMPC_OP_UNIQUE_CONSECUTIVE, &args);
        if (st == AMPC_OK) st = read_scalar(nu, &s);
    }
    int64_t k = ampc_scalar_to_int(s);
    ampc_tensor *counts_k = st == AMPC_OK ? ampc_narrow(cnt, 0, 0, k) : NULL;
    /* the first row of run g sits at cumsum(counts)[g] - counts[g] */
    ampc_tensor *ends = counts_k ? ampc_cumsum(counts_k, 0, AMPC_INT64) : NULL;
    ampc_tensor *first = ends ? ampc_binary(AMPC_OP_SUB, ends, counts_k, ampc_scalar_none()) : NULL;
    ampc_tensor *rows = first ? take_rows(Xs, first) : NULL;
    moved_shape[0] = k;
    ampc_tensor *shaped = rows ? ampc_reshape(rows, nd, moved_shape) : NULL;
    int64_t back[AMPC_MAX_DIMS]; /* the inverse permutation: dim 0 back to d */
    for (int i = 0; i < nd; i++) back[perm_dims[i]] = i;
    ampc_tensor *vals = shaped ? ampc_permute(shaped, nd, back) : NULL;
    *values = vals ? ampc_contiguous(vals) : NULL;
    if (st == AMPC_OK && !*values) st = ampc_last_status();
    if (st == AMPC_OK) {
        *counts = counts_k ? ampc_contiguous(counts_k) : NULL;
        ampc_tensor_incref(inv);
        *inverse = inv;
    }
    fail_null(moved, X, order);
    fail_null(Xs, ids, run_vals);
    fail_null(cnt, inv, nu);
    fail_null(counts_k, ends, first);
    fail_null(rows, shaped, vals);
    return st;
}

ampc_status ampc_unique_dim(const ampc_tensor *a, int64_t dim, bool consecutive, ampc_tensor **values,
                            ampc_tensor **inverse, ampc_tensor **counts) {
    *values = *inverse = *counts = NULL;
    if (a->ndim == 0)
        return ampc_set_error(AMPC_E_INDEX, "Dimension specified as %lld but tensor has no dimensions", (long long)dim);
    int d;
    AMPC_TRY(ampc_wrap_dim("unique", dim, a->ndim, &d));
    for (int i = 0; i < a->ndim; i++)
        if (i != d && a->shape[i] == 0)
            return ampc_set_error(AMPC_E_RUNTIME,
                                  "There are 0 sized dimensions, and they aren't selected, so unique cannot be applied");
    if (a->shape[d] == 0) {
        int64_t zero = 0;
        *values = ampc_clone(a);
        *inverse = ampc_empty(1, &zero, AMPC_INT64, a->device);
        *counts = ampc_empty(1, &zero, AMPC_INT64, a->device);
        if (*values && *inverse && *counts) return AMPC_OK;
        fail_null(*values, *inverse, *counts);
        *values = *inverse = *counts = NULL;
        return ampc_last_status();
    }
    ampc_status st;
    AD_PAUSED(st, unique_dim_body(a, d, consecutive, values, inverse, counts));
    return st;
}
