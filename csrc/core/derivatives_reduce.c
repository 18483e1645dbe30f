/* derivatives_reduce.c: gradient rules of the reductions (sum, mean, prod, amax/amin, max/min
 * along a dim, var/std, norm, logsumexp) and of cumsum, and the calls reduce.c makes to record
 * them.
 *
 * Node layout: input 0 is the reduced tensor; attrs.ints holds the dims as the user gave them
 * (none: all dims), attrs.scalars[0] keepdim, attrs.scalars[1] the op's parameter (correction,
 * p). Saved: slot 0 the input, slot 1 the output (values), when the rule reads them.
 * Every rule first brings the output's grad (and the output) back to the input's rank with
 * size-1 reduced dims ("keep" shape), after which broadcasting does the rest. */
#include <math.h>
#include <string.h>

#include "derivatives.h"

#define G ad_ref(go[0])

/* t (reduced, consumed) reshaped so that its reduced dims are size 1 again. */
static ampc_tensor *keep_shape(const ampc_node *n, ampc_tensor *t) {
    if (!t || ampc_scalar_to_int(n->attrs.scalars[0])) return t; /* keepdim: already so */
    int nd = n->in_ndim[0];
    bool mask[AMPC_MAX_DIMS];
    ad_reduced_mask(n, nd, mask);
    int64_t shape[AMPC_MAX_DIMS];
    for (int d = 0; d < nd; d++) shape[d] = mask[d] ? 1 : n->in_shape[0][d];
    return ad_reshape(t, nd, shape);
}

/* t in keep shape, expanded to the input's shape (a view: no copy). */
static ampc_tensor *expand_in(const ampc_node *n, ampc_tensor *t) {
    return ad_expand(t, n->in_ndim[0], n->in_shape[0]);
}

/* number of elements reduced into one output element */
static double reduced_count(const ampc_node *n) {
    bool mask[AMPC_MAX_DIMS];
    ad_reduced_mask(n, n->in_ndim[0], mask);
    double count = 1;
    for (int d = 0; d < n->in_ndim[0]; d++)
        if (mask[d]) count *= (double)n->in_shape[0][d];
    return count;
}

/* The reduced dims as a list (for reducing again in a rule). */
static int reduced_dims(const ampc_node *n, int64_t *dims) {
    bool mask[AMPC_MAX_DIMS];
    ad_reduced_mask(n, n->in_ndim[0], mask);
    int k = 0;
    for (int d = 0; d < n->in_ndim[0]; d++)
        if (mask[d]) dims[k++] = d;
    return k;
}

/* sum over `dims` keeping them, of t (consumed); an empty dim list reduces nothing. */
static ampc_tensor *sum_keep(const ampc_node *n, ampc_tensor *t) {
    int64_t dims[AMPC_MAX_DIMS];
    int k = reduced_dims(n, dims);
    if (!t || k == 0) return t;
    return ad_sum(t, k, dims, true);
}

static ampc_status sum_backward(ampc_node *n, ampc_tensor *const *go, ampc_tensor **gi) {
    gi[0] = expand_in(n, keep_shape(n, G)); /* d sum(a)/da = 1 */
    return ad_done(n, gi);
}

static ampc_status mean_backward(ampc_node *n, ampc_tensor *const *go, ampc_tensor **gi) {
    double count = reduced_count(n); /* d mean(a)/da = 1/N */
    gi[0] = expand_in(n, ad_scale(keep_shape(n, G), count > 0 ? 1.0 / count : 0.0));
    return ad_done(n, gi);
}

static ampc_status prod_backward(ampc_node *n, ampc_tensor *const *go, ampc_tensor **gi) {
    /* d prod(a)/da_i = prod of the others: p/a_i without zeros; with one zero only that element
     * gets the product of the nonzero ones; with two or more every element gets 0 */
    ampc_dtype dt = go[0]->dtype;
    ampc_tensor *a = ad_saved(n, 0);
    ampc_tensor *is_zero = ad_cmps(AMPC_OP_EQ, ad_ref(a), 0.0);
    ampc_tensor *zeros = sum_keep(n, ad_mask(ad_ref(is_zero), dt));
    ampc_tensor *nonzero_a = ad_where(ad_ref(is_zero), ad_num(1.0, a), ad_ref(a));
    int64_t dims[AMPC_MAX_DIMS];
    int k = reduced_dims(n, dims);
    ampc_tensor *p = NULL;
    if (nonzero_a) {
        p = k ? ampc_reduce(AMPC_OP_PROD, nonzero_a, k, dims, true, AMPC_DTYPE_UNDEFINED) : ad_ref(nonzero_a);
    }
    ampc_tensor *no_zero = ad_mask(ad_cmps(AMPC_OP_EQ, ad_ref(zeros), 0.0), dt);
    ampc_tensor *one_zero = ad_mask(ad_cmps(AMPC_OP_EQ, zeros, 1.0), dt);
    ampc_tensor *t1 = ad_mul(ad_div(ad_ref(p), nonzero_a), no_zero);
    ampc_tensor *t2 = ad_mul(ad_mul(p, ad_mask(is_zero, dt)), one_zero);
    gi[0] = ad_mul(keep_shape(n, G), ad_add(t1, t2));
    ampc_tensor_decref(a);
    return ad_done(n, gi);
}

static ampc_status amax_backward(ampc_node *n, ampc_tensor *const *go, ampc_tensor **gi) {
    /* ties share the gradient evenly: g [a == y] / count */
    ampc_dtype dt = go[0]->dtype;
    ampc_tensor *hit = ad_mask(ad_bin(AMPC_OP_EQ, ad_saved(n, 0), keep_shape(n, ad_saved(n, 1))), dt);
    ampc_tensor *count = sum_keep(n, ad_ref(hit));
    gi[0] = ad_div(ad_mul(keep_shape(n, G), hit), count);
    return ad_done(n, gi);
}

static ampc_status max_dim_backward(ampc_node *n, ampc_tensor *const *go, ampc_tensor **gi) {
    /* the grad goes to the element the index points at: zeros.scatter_add(dim, index, g) */
    ampc_tensor *idx = keep_shape(n, ad_saved(n, 1));
    ampc_tensor *g = keep_shape(n, G);
    ampc_tensor *z = ad_zeros_in(n, 0);
    if (idx && g && z) gi[0] = ampc_scatter_add(z, n->attrs.ints[0], idx, g);
    ampc_tensor_decref(idx);
    ampc_tensor_decref(g);
    ampc_tensor_decref(z);
    return ad_done(n, gi);
}

static ampc_status var_backward(ampc_node *n, ampc_tensor *const *go, ampc_tensor **gi) {
    /* var: g 2 (a - mean) / (N - correction); std = sqrt(var): g (a - mean) / ((N - correction) y) */
    bool is_std = !strcmp(n->rule->name, "StdBackward0");
    double dof = reduced_count(n) - ampc_scalar_to_double(n->attrs.scalars[1]);
    int64_t dims[AMPC_MAX_DIMS];
    int k = reduced_dims(n, dims);
    ampc_tensor *a = ad_saved(n, 0);
    ampc_tensor *mean = a ? (k ? ampc_reduce(AMPC_OP_MEAN, a, k, dims, true, AMPC_DTYPE_UNDEFINED) : ad_ref(a)) : NULL;
    ampc_tensor *same = !is_std && dof <= 0 && a && a->ndim == 0 ? ad_bin(AMPC_OP_EQ, ad_ref(a), ad_ref(mean)) : NULL;
    ampc_tensor *centered = ad_sub(a, mean);
    ampc_tensor *g = keep_shape(n, G);
    if (is_std) { /* 0 where the std is 0 (a constant slice), as torch: not 0 / 0 */
        ampc_tensor *y = keep_shape(n, ad_saved(n, 1));
        ampc_tensor *zero = ad_num(0.0, g);
        ampc_tensor *constant = ad_cmps(AMPC_OP_EQ, ad_ref(y), 0.0); /* before ad_scale takes y */
        gi[0] = ad_mul(centered, ad_where(constant, zero, ad_div(g, ad_scale(y, dof))));
    } else if (same) { /* torch's rule for a 0-dim input without degrees of freedom: 2 / 0 is inf, NaN where a == mean */
        ampc_tensor_decref(centered);
        ampc_tensor *g_nan = ad_mul(ad_ref(g), ad_num(NAN, g)); /* g times wrapped scalars keeps g's dtype */
        gi[0] = ad_where(same, g_nan, ad_mul(g, ad_num(INFINITY, g)));
    } else
        gi[0] = ad_mul(g, ad_scale(centered, 2.0 / dof));
    return ad_done(n, gi);
}

static ampc_status norm_backward(ampc_node *n, ampc_tensor *const *go, ampc_tensor **gi) {
    double p = ampc_scalar_to_double(n->attrs.scalars[1]);
    ampc_dtype dt = go[0]->dtype;
    ampc_tensor *a = ad_saved(n, 0);
    ampc_tensor *g = keep_shape(n, G);
    if (p == 0.0) { /* piecewise constant */
        ampc_tensor_decref(g);
        gi[0] = a ? ampc_zeros(a->ndim, a->shape, dt, a->device) : NULL;
        ampc_tensor_decref(a);
    } else if (p == 1.0) { /* g sign(a) */
        gi[0] = ad_mul(g, ad_un(AMPC_OP_SIGN, a));
    } else if (isinf(p)) { /* like amax of |a|: g sign(a) [|a| == y] / count */
        ampc_tensor *y = keep_shape(n, ad_saved(n, 1));
        ampc_tensor *hit = ad_mask(ad_bin(AMPC_OP_EQ, ad_un(AMPC_OP_ABS, ad_ref(a)), y), dt);
        ampc_tensor *count = sum_keep(n, ad_ref(hit));
        gi[0] = ad_div(ad_mul(ad_mul(g, ad_un(AMPC_OP_SIGN, a)), hit), count);
    } else { /* g sign(a) (|a| / y)^(p-1), 0 where y == 0. The ratio comes first: |a| <= y, so it
              * cannot overflow, where g / y^(p-1) does for a subnormal y (1 / 1e-40 is inf in fp32). */
        ampc_tensor *y = keep_shape(n, ad_saved(n, 1));
        ampc_tensor *zero = ad_num(0.0, g);
        ampc_tensor *is_zero = ad_cmps(AMPC_OP_EQ, ad_ref(y), 0.0);
        ampc_tensor *ratio = p == 2.0 ? ad_div(a, y)
                                      : ad_mul(ad_un(AMPC_OP_SIGN, ad_ref(a)),
                                               ad_bin(AMPC_OP_POW, ad_div(ad_un(AMPC_OP_ABS, ad_ref(a)), y),
                                                      ad_num(p - 1.0, a)));
        if (p != 2.0) ampc_tensor_decref(a);
        gi[0] = ad_where(is_zero, zero, ad_mul(ratio, g));
    }
    return ad_done(n, gi);
}

static ampc_status logsumexp_backward(ampc_node *n, ampc_tensor *const *go, ampc_tensor **gi) {
    /* g exp(a - y) */
    gi[0] = ad_mul(keep_shape(n, G), ad_un(AMPC_OP_EXP, ad_sub(ad_saved(n, 0), keep_shape(n, ad_saved(n, 1)))));
    return ad_done(n, gi);
}

static ampc_status cumsum_backward(ampc_node *n, ampc_tensor *const *go, ampc_tensor **gi) {
    /* grad_i = sum_{j >= i} g_j = sum(g) - cumsum(g)_i + g_i */
    int64_t dim = n->attrs.ints[0];
    ampc_tensor *g = G;
    ampc_tensor *total = n->in_ndim[0] ? ad_sum(ad_ref(g), 1, &dim, true) : ad_ref(g);
    ampc_tensor *cs = g ? ampc_cumsum(g, dim, AMPC_DTYPE_UNDEFINED) : NULL;
    gi[0] = ad_add(ad_sub(total, cs), g);
    return ad_done(n, gi);
}

static const ampc_grad_rule sum_rule = {"SumBackward0", sum_backward}, sum_dim_rule = {"SumBackward1", sum_backward},
                            mean_rule = {"MeanBackward0", mean_backward},
                            mean_dim_rule = {"MeanBackward1", mean_backward},
                            prod_rule = {"ProdBackward0", prod_backward}, prod_dim_rule = {"ProdBackward1", prod_backward},
                            amax_rule = {"AmaxBackward0", amax_backward}, amin_rule = {"AminBackward0", amax_backward},
                            max_rule = {"MaxBackward1", amax_backward}, min_rule = {"MinBackward1", amax_backward},
                            max_dim_rule = {"MaxBackward0", max_dim_backward},
                            min_dim_rule = {"MinBackward0", max_dim_backward},
                            var_rule = {"VarBackward0", var_backward}, std_rule = {"StdBackward0", var_backward},
                            norm_rule = {"LinalgVectorNormBackward0", norm_backward},
                            logsumexp_rule = {"LogsumexpBackward0", logsumexp_backward},
                            cumsum_rule = {"CumsumBackward0", cumsum_backward};

static ampc_status record_reduction(const ampc_grad_rule *rule, const ampc_tensor *a, int n_dims, const int64_t *dims,
                                    bool keepdim, ampc_scalar param, bool save_in, bool save_out, ampc_tensor *out,
                                    ampc_tensor *indices) {
    if (!ampc_dtype_is_floating(out->dtype)) return AMPC_OK;
    ampc_node_attrs at = {0};
    if (n_dims > AMPC_MAX_NODE_INTS) return ampc_set_error(AMPC_E_VALUE, "%s: too many dims", rule->name);
    for (int i = 0; i < n_dims; i++) at.ints[i] = dims[i];
    at.n_ints = n_dims;
    at.scalars[0] = ampc_scalar_bool(keepdim);
    at.scalars[1] = param;
    ampc_tensor *outs[2] = {out, indices};
    const ampc_tensor *saved[2] = {save_in ? a : NULL, save_out ? (indices ? indices : out) : NULL};
    return ampc_autograd_record(rule, 1, &a, indices ? 2 : 1, outs, 2, saved, &at) ? AMPC_OK : ampc_last_status();
}

ampc_status ampc_ad_record_reduce(ampc_op op, const ampc_tensor *a, int n_dims, const int64_t *dims, bool keepdim,
                                  ampc_tensor *out) {
    const ampc_grad_rule *rule;
    bool save_in = false, save_out = false;
    switch (op) {
    case AMPC_OP_SUM: rule = n_dims ? &sum_dim_rule : &sum_rule; break;
    case AMPC_OP_MEAN: rule = n_dims ? &mean_dim_rule : &mean_rule; break;
    case AMPC_OP_PROD: rule = n_dims ? &prod_dim_rule : &prod_rule; save_in = true; break;
    case AMPC_OP_AMAX: rule = &amax_rule; save_in = save_out = true; break;
    case AMPC_OP_AMIN: rule = &amin_rule; save_in = save_out = true; break;
    case AMPC_OP_MAX_DIM: rule = &max_rule; save_in = save_out = true; break; /* max() over dims: values only */
    case AMPC_OP_MIN_DIM: rule = &min_rule; save_in = save_out = true; break;
    case AMPC_OP_LOGSUMEXP: rule = &logsumexp_rule; save_in = save_out = true; break;
    default: return AMPC_OK; /* argmax, any, all: no gradient */
    }
    return record_reduction(rule, a, n_dims, dims, keepdim, ampc_scalar_none(), save_in, save_out, out, NULL);
}

ampc_status ampc_ad_record_var(const ampc_tensor *a, int n_dims, const int64_t *dims, double correction,
                               bool keepdim, bool take_sqrt, ampc_tensor *out) {
    return record_reduction(take_sqrt ? &std_rule : &var_rule, a, n_dims, dims, keepdim,
                            ampc_scalar_float(correction), true, take_sqrt, out, NULL);
}

ampc_status ampc_ad_record_norm(const ampc_tensor *a, double p, int n_dims, const int64_t *dims, bool keepdim,
                                ampc_tensor *out) {
    return record_reduction(&norm_rule, a, n_dims, dims, keepdim, ampc_scalar_float(p), true, p != 0.0 && p != 1.0,
                            out, NULL);
}

ampc_status ampc_ad_record_max_min_dim(ampc_op op, const ampc_tensor *a, int64_t dim, bool keepdim,
                                       ampc_tensor *values, ampc_tensor *indices) {
    return record_reduction(op == AMPC_OP_MAX_DIM ? &max_dim_rule : &min_dim_rule, a, 1, &dim, keepdim,
                            ampc_scalar_none(), false, true, values, indices);
}

ampc_status ampc_ad_record_cumsum(const ampc_tensor *a, int64_t dim, ampc_tensor *out) {
    if (!ampc_dtype_is_floating(out->dtype)) return AMPC_OK;
    ampc_node_attrs at = {0};
    at.ints[0] = dim;
    at.n_ints = 1;
    return ampc_autograd_record(&cumsum_rule, 1, &a, 1, &out, 0, NULL, &at) ? AMPC_OK : ampc_last_status();
}
