/* sort_quantile.c: quantile and nanquantile, composed of recording ops exactly as PyTorch's
 * quantile_compute (aten/native/Sorting.cpp): sort the rows, compute each quantile's rank
 * q * (n - 1) (nanquantile: over the non-NaN count; a row with a NaN gives quantile's rank n - 1,
 * which is NaN), adjust it per interpolation mode, gather the values below and above and lerp
 * them with PyTorch's two-sided formula. The gradient flows through the sort and the gathers. */
#include <math.h>
#include <string.h>

#include "autocast.h"
#include "derivatives.h"
#include "ops.h"
#include "sort.h"

static ampc_tensor *fail3(ampc_tensor *a, ampc_tensor *b, ampc_tensor *c) {
    ampc_tensor_decref(a);
    ampc_tensor_decref(b);
    ampc_tensor_decref(c);
    return NULL;
}

typedef enum { Q_LINEAR, Q_LOWER, Q_HIGHER, Q_MIDPOINT, Q_NEAREST } q_mode;

static ampc_tensor *gather_last(ampc_tensor *sorted, ampc_tensor *ranks) { /* consumes ranks */
    ampc_tensor *idx = ad_to(ranks, AMPC_INT64);
    if (!idx) return NULL;
    ampc_tensor *r = ampc_gather(sorted, sorted->ndim - 1, idx);
    ampc_tensor_decref(idx);
    return r;
}

/* PyTorch's lerp: start + w (end - start) for w < 0.5, else end - (end - start) (1 - w) */
static ampc_tensor *lerp(ampc_tensor *start, ampc_tensor *end, ampc_tensor *w) {
    if (!start || !end || !w) return fail3(start, end, w);
    ampc_tensor *diff = ad_sub(ad_ref(end), ad_ref(start));
    ampc_tensor *low = ad_add(start, ad_mul(ad_ref(w), ad_ref(diff)));
    ampc_tensor *high = ad_sub(end, ad_mul(diff, ad_rsubs(1.0, ad_ref(w))));
    return ad_where(ad_cmps(AMPC_OP_LT, w, 0.5), low, high);
}

ampc_tensor *ampc_quantile(const ampc_tensor *a, const ampc_tensor *q, bool has_dim, int64_t dim, bool keepdim,
                           const char *interpolation, bool ignore_nan) {
    /* torch's CPU autocast list: quantile and nanquantile in fp32 (core/autocast_cpu.c) */
    ampc_autocast_scope ac;
    int acr = ampc_autocast_enter_op(AMPC_OP_QUANTILE, 2, (const ampc_tensor *[]){a, q}, false, &ac);
    if (acr)
        return acr < 0 ? NULL
                       : ampc_autocast_exit(&ac, ampc_quantile(ac.t[0], ac.t[1], has_dim, dim, keepdim, interpolation,
                                                               ignore_nan));
    static const char *const modes[] = {"linear", "lower", "higher", "midpoint", "nearest"};
    int mode = -1;
    for (int i = 0; i < 5; i++)
        if (!strcmp(interpolation, modes[i])) mode = i;
    if (a->dtype != AMPC_FLOAT32 && a->dtype != AMPC_FLOAT64) {
        ampc_set_error(AMPC_E_RUNTIME, "quantile() input tensor must be either float or double dtype");
        return NULL;
    }
    if (q->dtype != a->dtype) {
        ampc_set_error(AMPC_E_RUNTIME, "quantile() q tensor must be same dtype as the input tensor");
        return NULL;
    }
    if (q->ndim > 1) {
        ampc_set_error(AMPC_E_RUNTIME, "quantile() q must be a scalar or 1D tensor");
        return NULL;
    }
    if (ampc_numel(a) == 0) {
        ampc_set_error(AMPC_E_RUNTIME, "quantile() input tensor must be non-empty");
        return NULL;
    }
    if (q->device.type != a->device.type || q->device.index != a->device.index) {
        ampc_set_error(AMPC_E_RUNTIME, "quantile() q tensor must be on the same device as the input tensor");
        return NULL;
    }
    if (mode < 0) {
        ampc_set_error(AMPC_E_RUNTIME,
                       "quantile() interpolation must be one of linear, lower, higher, midpoint or nearest, but got %s",
                       interpolation);
        return NULL;
    }
    int d = 0;
    if (has_dim && ampc_wrap_dim("quantile", dim, a->ndim, &d) != AMPC_OK) return NULL;
    if (ampc_numel(q) > 0) { /* q in [0, 1] (one host read, as PyTorch) */
        ampc_tensor *ok = ad_bin(AMPC_OP_LOGICAL_AND, ad_cmps(AMPC_OP_GE, ad_ref(q), 0.0), ad_cmps(AMPC_OP_LE, ad_ref(q), 1.0));
        ampc_tensor *all = ok ? ampc_reduce(AMPC_OP_ALL, ok, 0, NULL, false, AMPC_DTYPE_UNDEFINED) : NULL;
        ampc_scalar s;
        ampc_status st = all ? ampc_get_scalar(all, 0, &s) : ampc_last_status();
        ampc_tensor_decref(ok);
        ampc_tensor_decref(all);
        if (st != AMPC_OK) return NULL;
        if (!ampc_scalar_to_int(s)) {
            ampc_set_error(AMPC_E_RUNTIME, "quantile() q values must be in the range [0, 1]");
            return NULL;
        }
    }
    /* sorted rows (R..., n), R the kept dims in order */
    ampc_tensor *src = has_dim ? ad_ref(a) : NULL;
    if (!has_dim) {
        int64_t n = ampc_numel(a);
        src = ampc_reshape(a, 1, &n);
    }
    if (!src) return NULL;
    int sd = has_dim && a->ndim ? d : 0;
    ampc_tensor *sorted = NULL, *idx = NULL;
    ampc_status st = ampc_sort(src, sd, false, true, &sorted, &idx);
    ampc_tensor_decref(src);
    ampc_tensor_decref(idx);
    if (st != AMPC_OK) return NULL;
    int nd = sorted->ndim;
    if (nd == 0) {
        int64_t one = 1;
        sorted = ad_reshape(sorted, 1, &one);
    } else if (sd != nd - 1) {
        int64_t perm[AMPC_MAX_DIMS];
        for (int i = 0, j = 0; i < nd; i++)
            if (i != sd) perm[j++] = i;
        perm[nd - 1] = sd;
        ampc_tensor *p = ampc_permute(sorted, nd, perm);
        ampc_tensor_decref(sorted);
        sorted = p;
    }
    if (!sorted) return NULL;
    nd = sorted->ndim;
    int64_t n = sorted->shape[nd - 1], last = nd - 1, one = 1;
    ampc_tensor *q1 = q->ndim == 0 ? ampc_reshape(q, 1, &one) : ad_ref(q); /* (Q) */
    ampc_tensor *ranks = NULL;                                             /* (R..., Q) */
    if (!q1) return fail3(sorted, NULL, NULL);
    if (ignore_nan) { /* q (count - 1), 0 for rows of NaNs only (whose first value is NaN) */
        ampc_tensor *valid = ad_un(AMPC_OP_LOGICAL_NOT, ad_un(AMPC_OP_ISNAN, ad_ref(sorted)));
        ampc_tensor *count = valid ? ampc_reduce(AMPC_OP_SUM, valid, 1, &last, true, AMPC_DTYPE_UNDEFINED) : NULL;
        ampc_tensor_decref(valid);
        ranks = ad_mul(q1, ad_adds(ad_to(count, a->dtype), -1.0));
        ampc_tensor *zero = ad_num(0.0, ranks), *neg = ad_cmps(AMPC_OP_LT, ad_ref(ranks), 0.0);
        ranks = ad_where(neg, zero, ranks);
    } else { /* q (n - 1), n - 1 (a NaN) for rows holding one */
        ampc_tensor *nan = ad_un(AMPC_OP_ISNAN, ad_ref(sorted));
        ampc_tensor *any = nan ? ampc_reduce(AMPC_OP_ANY, nan, 1, &last, true, AMPC_DTYPE_UNDEFINED) : NULL;
        ampc_tensor_decref(nan);
        ampc_tensor *top = ad_num((double)(n - 1), q1);
        ranks = ad_where(any, top, ad_scale(q1, (double)(n - 1)));
    }
    if (mode == Q_LOWER) ranks = ad_un(AMPC_OP_FLOOR, ranks);
    else if (mode == Q_HIGHER) ranks = ad_un(AMPC_OP_CEIL, ranks);
    else if (mode == Q_NEAREST && ranks) { /* half to even, as torch's round_ */
        ampc_tensor *r = ampc_round(ranks, 0);
        ampc_tensor_decref(ranks);
        ranks = r;
    }
    if (!ranks) return fail3(sorted, NULL, NULL);
    ampc_tensor *result = gather_last(sorted, ad_ref(ranks));
    if (mode == Q_LINEAR || mode == Q_MIDPOINT) {
        ampc_tensor *w = mode == Q_MIDPOINT ? ampc_full(ranks->ndim, ranks->shape, ampc_scalar_float(0.5), ranks->dtype,
                                                        ranks->device)
                                            : ad_sub(ad_ref(ranks), ad_un(AMPC_OP_FLOOR, ad_ref(ranks)));
        ampc_tensor *above = gather_last(sorted, ad_un(AMPC_OP_CEIL, ad_ref(ranks)));
        result = lerp(result, above, w);
    }
    ampc_tensor_decref(ranks);
    ampc_tensor_decref(sorted);
    if (!result) return NULL;
    /* (R..., Q) -> (Q, R...) for a 1-D q, then the keepdim shape */
    if (q->ndim == 1 && result->ndim > 1) {
        int64_t perm[AMPC_MAX_DIMS];
        perm[0] = result->ndim - 1;
        for (int i = 1; i < result->ndim; i++) perm[i] = i - 1;
        ampc_tensor *p = ampc_permute(result, result->ndim, perm);
        ampc_tensor_decref(result);
        result = p;
        if (!result) return NULL;
    }
    int64_t shape[AMPC_MAX_DIMS + 1];
    int k = 0;
    if (q->ndim == 1) shape[k++] = q->shape[0];
    for (int i = 0; i < a->ndim; i++) {
        bool reduced = !has_dim || i == d;
        if (!reduced) shape[k++] = a->shape[i];
        else if (keepdim) shape[k++] = 1;
    }
    return ad_reshape(result, k, shape);
}
