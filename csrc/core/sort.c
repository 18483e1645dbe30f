/* sort.c: frontends of sort, topk, kthvalue, median, nanmedian and mode (the kernels that
 * order values along a dim), with PyTorch's checks, messages, shapes and dtypes.
 *
 * Every kernel works along the last dim (ops.def, "sorting and selection"), so a frontend
 * hands it views with the user's dim moved last (as_strided views: no copies, any strides, and
 * no autograd nodes of their own). Outputs are allocated in the user's layout (contiguous) and
 * the kernel writes them through such a view. A 0-dim input is a row of one element.
 * Searching, unique, histograms and quantiles, which compose these, are in sort_compose.c.
 * Differentiable values record their node (derivatives_sort.c) at the end. */
#include <math.h>
#include <string.h>

#include "derivatives.h"
#include "kernel_args.h"
#include "ops.h"
#include "sort.h"
#include "sort_internal.h"

ampc_tensor *ampc_sort_dim_last(const ampc_tensor *t, int d) {
    int64_t shape[AMPC_MAX_DIMS], strides[AMPC_MAX_DIMS];
    if (t->ndim == 0) {
        shape[0] = 1;
        strides[0] = 1;
        return ampc_as_strided(t, 1, shape, strides, t->offset);
    }
    int j = 0;
    for (int i = 0; i < t->ndim; i++)
        if (i != d) {
            shape[j] = t->shape[i];
            strides[j++] = t->strides[i];
        }
    shape[j] = t->shape[d];
    strides[j] = t->strides[d];
    return ampc_as_strided(t, t->ndim, shape, strides, t->offset);
}

/* Allocates a's shape with dim d of size len (dropped when !keep; len must then be 1) and the
 * kernel's view of it (dim d last). */
static ampc_status alloc_along(const ampc_tensor *a, int d, int64_t len, bool keep, ampc_dtype dtype,
                               ampc_tensor **out, ampc_tensor **kview) {
    int64_t shape[AMPC_MAX_DIMS], kshape[AMPC_MAX_DIMS], kstrides[AMPC_MAX_DIMS];
    int nd = 0;
    for (int i = 0; i < a->ndim; i++)
        if (i != d || keep) shape[nd++] = i == d ? len : a->shape[i];
    *kview = NULL;
    *out = ampc_empty(nd, shape, dtype, a->device);
    if (!*out) return ampc_last_status();
    if (a->ndim == 0) {
        *kview = ampc_sort_dim_last(*out, 0);
    } else {
        for (int i = 0, j = 0; i < a->ndim; i++) {
            kshape[i] = i == d ? len : a->shape[i];
            kstrides[i] = (i != d || keep) ? (*out)->strides[j++] : 0;
        }
        ampc_tensor *full = ampc_as_strided(*out, a->ndim, kshape, kstrides, (*out)->offset);
        if (full) *kview = ampc_sort_dim_last(full, d);
        ampc_tensor_decref(full);
    }
    if (!*kview) {
        ampc_tensor_decref(*out);
        *out = NULL;
        return ampc_last_status();
    }
    return AMPC_OK;
}

static void release2(ampc_tensor **x, ampc_tensor **y) {
    ampc_tensor_decref(*x);
    ampc_tensor_decref(*y);
    *x = *y = NULL;
}

/* Runs a sort (op SORT) or a selection along d, with outputs of length len (kept dim when keep). */
static ampc_status run_along(ampc_op op, const ampc_tensor *a, int d, int64_t len, bool keep, int64_t k,
                             bool flag_a, bool flag_b, ampc_tensor **values, ampc_tensor **indices) {
    ampc_tensor *kv = NULL, *ki = NULL, *in = NULL;
    *values = *indices = NULL;
    if (a->ndim && a->shape[d] > (int64_t)UINT32_MAX) /* the kernels keep 32-bit positions in a row */
        return ampc_set_error(AMPC_E_RUNTIME, "%s: a dim of %lld elements is more than ampc sorts (2^32 - 1)",
                              ampc_op_name(op), (long long)a->shape[d]);
    ampc_status st = alloc_along(a, d, len, keep, a->dtype, values, &kv);
    if (st == AMPC_OK) st = alloc_along(a, d, len, keep, AMPC_INT64, indices, &ki);
    if (st == AMPC_OK) {
        in = ampc_sort_dim_last(a, d);
        if (!in) st = ampc_last_status();
    }
    if (st == AMPC_OK && ampc_numel(*values) > 0) {
        if (op == AMPC_OP_SORT) {
            ampc_sort_args args = {.values = kv, .indices = ki, .input = in, .descending = flag_a};
            st = ampc_dispatch_sort(op, &args);
        } else {
            ampc_select_args args = {.values = kv, .indices = ki, .input = in, .k = k, .largest = flag_a,
                                     .sorted = flag_b};
            st = ampc_dispatch_select(op, &args);
        }
    }
    ampc_tensor_decref(kv);
    ampc_tensor_decref(ki);
    ampc_tensor_decref(in);
    if (st != AMPC_OK) release2(values, indices);
    return st;
}

static int64_t dim_size(const ampc_tensor *a, int d) { return a->ndim ? a->shape[d] : 1; }

/* records the node of a sort or selection when a requires grad, else keeps the results */
static ampc_status finish(ampc_op op, const ampc_tensor *a, int64_t dim, bool keepdim, ampc_tensor **values,
                          ampc_tensor **indices) {
    if (!ampc_any_requires_grad(1, &a)) return AMPC_OK;
    ampc_status st = ampc_ad_record_sort_select(op, a, dim, keepdim, *values, *indices);
    if (st != AMPC_OK) release2(values, indices);
    return st;
}

ampc_status ampc_sort(const ampc_tensor *a, int64_t dim, bool descending, bool stable, ampc_tensor **values,
                      ampc_tensor **indices) {
    (void)stable; /* every sort is stable */
    *values = *indices = NULL;
    int d;
    AMPC_TRY(ampc_wrap_dim("sort", dim, a->ndim, &d));
    AMPC_TRY(run_along(AMPC_OP_SORT, a, d, dim_size(a, d), true, 0, descending, false, values, indices));
    return finish(AMPC_OP_SORT, a, d, true, values, indices);
}

ampc_status ampc_topk(const ampc_tensor *a, int64_t k, int64_t dim, bool largest, bool sorted, ampc_tensor **values,
                      ampc_tensor **indices) {
    *values = *indices = NULL;
    int d;
    AMPC_TRY(ampc_wrap_dim("topk", dim, a->ndim, &d));
    if (a->dtype == AMPC_BOOL) return ampc_set_error(AMPC_E_RUNTIME, "topk does not support bool dtypes on CPU");
    if (k < 0 || k > dim_size(a, d)) return ampc_set_error(AMPC_E_RUNTIME, "selected index k out of range");
    /* a 0-dim input is its own top-0 and top-1 (PyTorch: a 0-dim result holds the element) */
    int64_t kk = a->ndim == 0 ? 1 : k;
    AMPC_TRY(run_along(AMPC_OP_TOPK, a, d, kk, true, kk, largest, sorted, values, indices));
    return finish(AMPC_OP_TOPK, a, d, true, values, indices);
}

/* PyTorch's "<op>_cpu" not implemented for 'Bool' (and which dtypes each selection takes) */
static ampc_status check_select_dtype(ampc_op op, ampc_dtype dt, bool has_dim) {
    if (dt != AMPC_BOOL || op == AMPC_OP_MODE) return AMPC_OK;
    /* median and nanmedian share PyTorch's kernels (and names) */
    const char *kernel = op == AMPC_OP_KTHVALUE ? "kthvalue_cpu" : has_dim ? "median_out" : "median_cpu";
    return ampc_set_error(AMPC_E_NOT_IMPLEMENTED, "\"%s\" not implemented for 'Bool'", kernel);
}

ampc_status ampc_select_dim(ampc_op op, const ampc_tensor *a, int64_t k, int64_t dim, bool keepdim,
                            ampc_tensor **values, ampc_tensor **indices) {
    *values = *indices = NULL;
    if (op != AMPC_OP_KTHVALUE && op != AMPC_OP_MEDIAN && op != AMPC_OP_NANMEDIAN && op != AMPC_OP_MODE)
        return ampc_set_error(AMPC_E_VALUE, "ampc_select_dim: %s is not a selection", ampc_op_name(op));
    const char *name = ampc_op_name(op);
    int d;
    AMPC_TRY(ampc_wrap_dim(name, dim, a->ndim, &d));
    AMPC_TRY(check_select_dtype(op, a->dtype, true));
    int64_t n = dim_size(a, d);
    if (n == 0)
        return ampc_set_error(AMPC_E_INDEX, "%s(): Expected reduction dim %d to have non-zero size.", name, d);
    if (op == AMPC_OP_KTHVALUE && (k < 1 || k > n))
        return ampc_set_error(AMPC_E_RUNTIME, "kthvalue(): selected number k out of range for dimension %d", d);
    AMPC_TRY(run_along(op, a, d, 1, keepdim || a->ndim == 0, k, false, false, values, indices));
    return finish(op, a, d, keepdim, values, indices);
}

ampc_tensor *ampc_median_all(ampc_op op, const ampc_tensor *a) {
    if (check_select_dtype(op, a->dtype, false) != AMPC_OK) return NULL;
    int64_t n = ampc_numel(a);
    if (n == 0) { /* PyTorch answers NaN, cast to integers as x86 does (INT_MIN; 0 for uint8) */
        ampc_scalar v = a->dtype == AMPC_INT64   ? ampc_scalar_int(INT64_MIN)
                        : a->dtype == AMPC_INT32 ? ampc_scalar_int(INT32_MIN)
                        : ampc_dtype_is_floating(a->dtype) ? ampc_scalar_float(NAN)
                                                           : ampc_scalar_int(0);
        return ampc_full(0, NULL, v, a->dtype, a->device);
    }
    /* the flat row as a view when a is contiguous, else a copy */
    ampc_tensor *flat = ampc_reshape(a, 1, &n);
    if (!flat) return NULL;
    ampc_tensor *values, *indices;
    ampc_status st;
    AD_PAUSED(st, run_along(op, flat, 0, 1, false, 0, false, false, &values, &indices));
    ampc_tensor_decref(flat);
    if (st != AMPC_OK) return NULL;
    ampc_tensor_decref(indices);
    if (ampc_any_requires_grad(1, &a)) values = ad_recorded(values, ampc_ad_record_median_all(op, a, values));
    return values;
}
