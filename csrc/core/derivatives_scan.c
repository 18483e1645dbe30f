/* derivatives_scan.c: gradient rules of issue 12's scans (cumprod, logcumsumexp, cummax,
 * cummin) and the calls reduce_scan.c makes to record them. Each rule is written with the
 * recording frontends (cumsum, cumprod, logcumsumexp, index_select, where, scatter_add), so a
 * backward under create_graph records it and second order works.
 * Slots: cumprod and logcumsumexp save the input (0) and the output (1); cummax/cummin save the
 * indices (0). attrs.ints[0] is the scanned dim (wrapped). */
#include <float.h>

#include "derivatives.h"

#define G ad_ref(go[0])

/* t reversed along dim (an index_select with n-1 .. 0; strides are never negative). */
static ampc_tensor *flip_dim(ampc_tensor *t, int64_t dim) {
    if (!t) return NULL;
    int64_t n = t->ndim ? t->shape[dim] : 1;
    ampc_tensor *idx = ampc_arange((double)(n - 1), -1.0, -1.0, AMPC_INT64, t->device);
    ampc_tensor *r = idx && t->ndim ? ampc_index_select(t, dim, idx) : (idx ? ad_ref(t) : NULL);
    ampc_tensor_decref(idx);
    ampc_tensor_decref(t);
    return r;
}

/* sum_{j >= i} t_j along dim, without the cancellation of sum - cumsum */
static ampc_tensor *reversed_cumsum(ampc_tensor *t, int64_t dim) {
    ampc_tensor *f = flip_dim(t, dim);
    ampc_tensor *c = f ? ampc_cumsum(f, dim, AMPC_DTYPE_UNDEFINED) : NULL;
    ampc_tensor_decref(f);
    return flip_dim(c, dim);
}

static ampc_tensor *reversed_logcumsumexp(ampc_tensor *t, int64_t dim) {
    ampc_tensor *f = flip_dim(t, dim);
    ampc_tensor *c = f ? ampc_logcumsumexp(f, dim) : NULL;
    ampc_tensor_decref(f);
    return flip_dim(c, dim);
}

/* grad of cumprod, zeros included. Along each line let z be the first zero of x:
 *   i < z:  sum_{i <= k < z} g_k y_k / x_i                  (reversed_cumsum(g y before z) / x)
 *   i == z: sum_{k >= z} g_k prod_{j <= k, j != z} x_j      (reversed_cumsum(g cumprod(x with x_z = 1)))
 *   i > z:  0 */
static ampc_status cumprod_backward(ampc_node *n, ampc_tensor *const *go, ampc_tensor **gi) {
    int64_t dim = n->attrs.ints[0];
    if (n->in_ndim[0] == 0 || n->in_shape[0][dim] <= 1) {
        gi[0] = G;
        return ad_done(n, gi);
    }
    ampc_tensor *x = ad_saved(n, 0), *y = ad_saved(n, 1);
    ampc_tensor *is_zero = ad_cmps(AMPC_OP_EQ, ad_ref(x), 0.0);
    ampc_tensor *zeros_so_far = is_zero ? ampc_cumsum(is_zero, dim, AMPC_INT64) : NULL;
    ampc_tensor *before = ad_cmps(AMPC_OP_EQ, ad_ref(zeros_so_far), 0.0);
    ampc_tensor *first = ad_bin(AMPC_OP_LOGICAL_AND, ad_cmps(AMPC_OP_EQ, zeros_so_far, 1.0), is_zero);
    ampc_tensor *x_safe = ad_where(ad_ref(before), ad_ref(x), ad_num(1.0, x));
    /* only the terms before the first zero (later ones are 0 exactly; a NaN or inf after it must not leak) */
    ampc_tensor *gy = ad_mul(G, y);
    ampc_tensor *gy_before = ad_where(ad_ref(before), ad_ref(gy), ad_num(0.0, gy));
    ampc_tensor_decref(gy);
    ampc_tensor *g_before = ad_div(reversed_cumsum(gy_before, dim), x_safe);
    ampc_tensor *x_skip = ad_where(ad_ref(first), ad_num(1.0, x), ad_ref(x));
    ampc_tensor *y_skip = x_skip ? ampc_cumprod(x_skip, dim, AMPC_DTYPE_UNDEFINED) : NULL;
    ampc_tensor_decref(x_skip);
    ampc_tensor *g_first = reversed_cumsum(ad_mul(G, y_skip), dim);
    ampc_tensor *rest = ad_where(first, g_first, ad_num(0.0, x));
    gi[0] = ad_where(before, g_before, rest);
    ampc_tensor_decref(x);
    return ad_done(n, gi);
}

/* the lowest finite value of a floating dtype (torch's scalar_min of logcumsumexp_backward) */
static double lowest_of(ampc_dtype dt) {
    switch (dt) {
    case AMPC_FLOAT64: return -DBL_MAX;
    case AMPC_FLOAT16: return -65504.0;
    case AMPC_BFLOAT16: return -3.38953138925153547590e38;
    default: return -FLT_MAX;
    }
}

/* torch's logcumsumexp_backward: the positive and negative parts of g through reversed
 * logcumsumexps, exp(rlcse(log g+ - y) + x) - exp(rlcse(log g- - y) + x) */
static ampc_status logcumsumexp_backward(ampc_node *n, ampc_tensor *const *go, ampc_tensor **gi) {
    int64_t dim = n->attrs.ints[0];
    if (go[0]->ndim == 0 || ampc_numel(go[0]) == 0) {
        gi[0] = G;
        return ad_done(n, gi);
    }
    double lowest = lowest_of(go[0]->dtype);
    ampc_tensor *x = ad_saved(n, 0), *y = ad_saved(n, 1);
    ampc_tensor *log_abs = ad_un(AMPC_OP_LOG, ad_un(AMPC_OP_ABS, G));
    ampc_tensor *pos = ad_where(ad_cmps(AMPC_OP_GT, G, 0.0), ad_ref(log_abs), ad_num(lowest, log_abs));
    ampc_tensor *neg = ad_where(ad_cmps(AMPC_OP_LT, G, 0.0), ad_ref(log_abs), ad_num(lowest, log_abs));
    ampc_tensor_decref(log_abs);
    ampc_tensor *out_pos = ad_un(AMPC_OP_EXP, ad_add(reversed_logcumsumexp(ad_sub(pos, ad_ref(y)), dim), ad_ref(x)));
    ampc_tensor *out_neg = ad_un(AMPC_OP_EXP, ad_add(reversed_logcumsumexp(ad_sub(neg, y), dim), x));
    gi[0] = ad_sub(out_pos, out_neg);
    return ad_done(n, gi);
}

/* cummax/cummin: each output's grad goes to the element its index names (scatter_add) */
static ampc_status cummax_backward(ampc_node *n, ampc_tensor *const *go, ampc_tensor **gi) {
    int64_t dim = n->attrs.ints[0];
    if (n->in_ndim[0] == 0) {
        gi[0] = G;
        return ad_done(n, gi);
    }
    ampc_tensor *idx = ad_saved(n, 0);
    ampc_tensor *zeros = idx ? ampc_zeros(go[0]->ndim, go[0]->shape, go[0]->dtype, go[0]->device) : NULL;
    gi[0] = zeros ? ampc_scatter_add(zeros, dim, idx, go[0]) : NULL;
    ampc_tensor_decref(zeros);
    ampc_tensor_decref(idx);
    return ad_done(n, gi);
}

static const ampc_grad_rule cumprod_rule = {"CumprodBackward0", cumprod_backward},
                            logcumsumexp_rule = {"LogcumsumexpBackward0", logcumsumexp_backward},
                            cummax_rule = {"CummaxBackward0", cummax_backward},
                            cummin_rule = {"CumminBackward0", cummax_backward};

static ampc_status record(const ampc_grad_rule *rule, const ampc_tensor *a, int64_t dim, ampc_tensor *out,
                          int n_saved, const ampc_tensor *const *saved) {
    if (!ampc_dtype_is_floating(out->dtype)) return AMPC_OK;
    ampc_node_attrs at = {0};
    at.ints[0] = dim;
    at.n_ints = 1;
    return ampc_autograd_record(rule, 1, &a, 1, &out, n_saved, saved, &at) ? AMPC_OK : ampc_last_status();
}

ampc_status ampc_ad_record_cumprod(const ampc_tensor *a, int64_t dim, ampc_tensor *out) {
    const ampc_tensor *saved[2] = {a, out};
    return record(&cumprod_rule, a, dim, out, 2, saved);
}

ampc_status ampc_ad_record_logcumsumexp(const ampc_tensor *a, int64_t dim, ampc_tensor *out) {
    const ampc_tensor *saved[2] = {a, out};
    return record(&logcumsumexp_rule, a, dim, out, 2, saved);
}

ampc_status ampc_ad_record_cummax_cummin(ampc_op op, const ampc_tensor *a, int64_t dim, ampc_tensor *values,
                                         ampc_tensor *indices) {
    const ampc_tensor *saved[1] = {indices};
    return record(op == AMPC_OP_CUMMAX ? &cummax_rule : &cummin_rule, a, dim, values, 1, saved);
}
