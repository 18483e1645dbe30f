/* derivatives_sort.c: gradient rules of sort, topk, kthvalue, median, nanmedian and mode
 * (derivatives.yaml's value_selecting_reduction_backward and evenly_distribute_backward), and the
 * calls the frontends of core/sort.c make to record them.
 *
 * Node layout: input 0 the sorted / selected tensor; attrs.ints[0] the (wrapped) dim,
 * attrs.scalars[0] keepdim; saved slot 0 the int64 indices (or, for median() without a dim, the
 * input), slot 1 the result (median() only). The indices output gets no gradient. */
#include "derivatives.h"
#include "sort_internal.h"

#define G ad_ref(go[0])

static ampc_status select_backward(ampc_node *n, ampc_tensor *const *go, ampc_tensor **gi) {
    /* the grad goes back to where each value came from: zeros.scatter_add(dim, indices, g) */
    if (n->in_ndim[0] == 0) { /* a 0-dim input has one element: the grad itself */
        gi[0] = ad_reshape(G, 0, NULL);
        return ad_done(n, gi);
    }
    int64_t dim = n->attrs.ints[0];
    bool keep = ampc_scalar_to_int(n->attrs.scalars[0]) != 0;
    ampc_tensor *idx = ad_saved(n, 0), *g = G;
    if (!keep && idx && g) {
        ampc_tensor *i2 = ampc_unsqueeze(idx, dim), *g2 = ampc_unsqueeze(g, dim);
        ampc_tensor_decref(idx);
        ampc_tensor_decref(g);
        idx = i2;
        g = g2;
    }
    ampc_tensor *z = ad_zeros_in(n, 0);
    if (idx && g && z) gi[0] = ampc_scatter_add(z, dim, idx, g);
    ampc_tensor_decref(idx);
    ampc_tensor_decref(g);
    ampc_tensor_decref(z);
    return ad_done(n, gi);
}

static ampc_status median_all_backward(ampc_node *n, ampc_tensor *const *go, ampc_tensor **gi) {
    /* mask = (a == y) | (isnan(a) & isnan(y)); g mask / sum(mask), without a host read */
    ampc_dtype dt = go[0]->dtype;
    ampc_tensor *a = ad_saved(n, 0), *y = ad_saved(n, 1);
    ampc_tensor *both_nan = ad_bin(AMPC_OP_LOGICAL_AND, ad_un(AMPC_OP_ISNAN, ad_ref(a)), ad_un(AMPC_OP_ISNAN, ad_ref(y)));
    ampc_tensor *mask = ad_mask(ad_bin(AMPC_OP_LOGICAL_OR, ad_bin(AMPC_OP_EQ, a, y), both_nan), dt);
    ampc_tensor *count = ad_sum(ad_ref(mask), 0, NULL, false);
    gi[0] = ad_mul(mask, ad_div(G, count));
    return ad_done(n, gi);
}

static const ampc_grad_rule sort_rule = {"SortBackward0", select_backward},
                            topk_rule = {"TopkBackward0", select_backward},
                            kthvalue_rule = {"KthvalueBackward0", select_backward},
                            median_rule = {"MedianBackward1", select_backward},
                            nanmedian_rule = {"NanmedianBackward1", select_backward},
                            mode_rule = {"ModeBackward0", select_backward},
                            median_all_rule = {"MedianBackward0", median_all_backward},
                            nanmedian_all_rule = {"NanmedianBackward0", median_all_backward};

ampc_status ampc_ad_record_sort_select(ampc_op op, const ampc_tensor *a, int64_t dim, bool keepdim,
                                       ampc_tensor *values, ampc_tensor *indices) {
    if (!ampc_dtype_is_floating(values->dtype)) return AMPC_OK;
    const ampc_grad_rule *rule;
    switch (op) {
    case AMPC_OP_SORT: rule = &sort_rule; break;
    case AMPC_OP_TOPK: rule = &topk_rule; break;
    case AMPC_OP_KTHVALUE: rule = &kthvalue_rule; break;
    case AMPC_OP_MEDIAN: rule = &median_rule; break;
    case AMPC_OP_NANMEDIAN: rule = &nanmedian_rule; break;
    case AMPC_OP_MODE: rule = &mode_rule; break;
    default: return ampc_set_error(AMPC_E_VALUE, "ampc_ad_record_sort_select: %s has no rule", ampc_op_name(op));
    }
    ampc_node_attrs at = {0};
    at.ints[0] = dim;
    at.n_ints = 1;
    at.scalars[0] = ampc_scalar_bool(keepdim);
    ampc_tensor *outs[2] = {values, indices};
    const ampc_tensor *saved[1] = {indices};
    return ampc_autograd_record(rule, 1, &a, 2, outs, 1, saved, &at) ? AMPC_OK : ampc_last_status();
}

ampc_status ampc_ad_record_median_all(ampc_op op, const ampc_tensor *a, ampc_tensor *value) {
    if (!ampc_dtype_is_floating(value->dtype)) return AMPC_OK;
    ampc_node_attrs at = {0};
    const ampc_tensor *saved[2] = {a, value};
    return ampc_autograd_record(op == AMPC_OP_NANMEDIAN ? &nanmedian_all_rule : &median_all_rule, 1, &a, 1, &value, 2,
                                saved, &at)
               ? AMPC_OK
               : ampc_last_status();
}
