/* derivatives_shape.c: gradient rules of the views and copies (view, reshape, squeeze,
 * unsqueeze, expand, permute, transpose, t, slice, select, clone, alias) and the calls tensor.c
 * makes to record them, plus the differentiable helpers other rules share (slice/select
 * backward, clone).
 *
 * A view's gradient is the inverse reshaping of the output's gradient: reshape back, permute
 * back, sum over expanded dims, or write it into zeros at the sliced / selected place. The last
 * two are ops of their own (SliceBackwardBackward0, ...) whose backward slices again, so second
 * order works through them too. */
#include <string.h>

#include "derivatives.h"

#define G ad_ref(go[0])

/* ------------------------------------------------------------------ slice / select backward */

/* Runs `fill` (which writes g into a view of zeros) with recording off, then records `rule` on
 * the result when g is part of a graph. */
static ampc_tensor *scatter_into_zeros(const ampc_grad_rule *rule, const ampc_tensor *g, int ndim,
                                       const int64_t *shape, const ampc_node_attrs *at, bool select) {
    bool record = ampc_any_requires_grad(1, &g);
    bool prev = ampc_grad_mode_pause();
    ampc_tensor *z = ampc_zeros(ndim, shape, g->dtype, g->device);
    ampc_tensor *part = NULL;
    if (z) {
        int64_t dim = at->ints[0], start = at->ints[1], step = at->ints[2];
        part = select ? ampc_select(z, dim, start)
                      : ampc_slice(z, dim, start, start + (g->shape[dim] ? (g->shape[dim] - 1) * step + 1 : 0), step);
    }
    if (!part || ampc_copy_(part, g) != AMPC_OK) {
        ampc_tensor_decref(z);
        z = NULL;
    }
    ampc_tensor_decref(part);
    ampc_grad_mode_restore(prev);
    if (z && record && !ampc_autograd_record(rule, 1, &g, 1, &z, 0, NULL, at)) {
        ampc_tensor_decref(z);
        z = NULL;
    }
    return z;
}

static ampc_status slice_backward_backward(ampc_node *n, ampc_tensor *const *go, ampc_tensor **gi) {
    /* slice_backward(g) puts g at [start::step] of dim: its own backward takes that slice */
    int64_t dim = n->attrs.ints[0], start = n->attrs.ints[1], step = n->attrs.ints[2];
    int64_t len = n->in_shape[0][dim];
    gi[0] = ampc_slice(go[0], dim, start, start + (len ? (len - 1) * step + 1 : 0), step);
    return ad_done(n, gi);
}

static ampc_status select_backward_backward(ampc_node *n, ampc_tensor *const *go, ampc_tensor **gi) {
    gi[0] = ampc_select(go[0], n->attrs.ints[0], n->attrs.ints[1]); /* select again */
    return ad_done(n, gi);
}

static const ampc_grad_rule slice_backward_rule = {"SliceBackwardBackward0", slice_backward_backward},
                            select_backward_rule = {"SelectBackwardBackward0", select_backward_backward};

ampc_tensor *ampc_ad_slice_backward(const ampc_tensor *g, int ndim, const int64_t *shape, int64_t dim, int64_t start,
                                    int64_t step) {
    ampc_node_attrs at = {0};
    at.ints[0] = dim, at.ints[1] = start, at.ints[2] = step;
    at.n_ints = 3;
    return scatter_into_zeros(&slice_backward_rule, g, ndim, shape, &at, false);
}

ampc_tensor *ampc_ad_select_backward(const ampc_tensor *g, int ndim, const int64_t *shape, int64_t dim,
                                     int64_t index) {
    ampc_node_attrs at = {0};
    at.ints[0] = dim, at.ints[1] = index;
    at.n_ints = 2;
    return scatter_into_zeros(&select_backward_rule, g, ndim, shape, &at, true);
}

/* ------------------------------------------------------------------ view rules */

static ampc_status reshape_back(ampc_node *n, ampc_tensor *const *go, ampc_tensor **gi) {
    gi[0] = ad_reshape(G, n->in_ndim[0], n->in_shape[0]); /* the same elements in the input's shape */
    return ad_done(n, gi);
}

static ampc_status expand_backward(ampc_node *n, ampc_tensor *const *go, ampc_tensor **gi) {
    gi[0] = ampc_sum_to_shape(go[0], n->in_ndim[0], n->in_shape[0]); /* broadcast copies add up */
    return ad_done(n, gi);
}

static ampc_status permute_backward(ampc_node *n, ampc_tensor *const *go, ampc_tensor **gi) {
    int nd = n->in_ndim[0];
    int64_t inverse[AMPC_MAX_DIMS];
    for (int i = 0; i < nd; i++) { /* out dim i is input dim perm[i]: put it back */
        int64_t p = n->attrs.ints[i];
        inverse[p < 0 ? p + nd : p] = i;
    }
    gi[0] = ampc_permute(go[0], nd, inverse);
    return ad_done(n, gi);
}

static ampc_status transpose_backward(ampc_node *n, ampc_tensor *const *go, ampc_tensor **gi) {
    gi[0] = n->in_ndim[0] < 2 ? G : ampc_transpose(go[0], n->attrs.ints[0], n->attrs.ints[1]); /* its own inverse */
    return ad_done(n, gi);
}

static ampc_status slice_backward(ampc_node *n, ampc_tensor *const *go, ampc_tensor **gi) {
    gi[0] = ampc_ad_slice_backward(go[0], n->in_ndim[0], n->in_shape[0], n->attrs.ints[0], n->attrs.ints[1],
                                   n->attrs.ints[2]);
    return ad_done(n, gi);
}

static ampc_status select_backward(ampc_node *n, ampc_tensor *const *go, ampc_tensor **gi) {
    gi[0] = ampc_ad_select_backward(go[0], n->in_ndim[0], n->in_shape[0], n->attrs.ints[0], n->attrs.ints[1]);
    return ad_done(n, gi);
}

static ampc_status identity_backward(ampc_node *n, ampc_tensor *const *go, ampc_tensor **gi) {
    gi[0] = G; /* clone, alias: d/da = 1 */
    return ad_done(n, gi);
}

static const ampc_grad_rule view_rules[] = {
    [AMPC_AD_VIEW] = {"ViewBackward0", reshape_back},
    [AMPC_AD_RESHAPE_COPY] = {"UnsafeViewBackward0", reshape_back},
    [AMPC_AD_SQUEEZE] = {"SqueezeBackward1", reshape_back},
    [AMPC_AD_UNSQUEEZE] = {"UnsqueezeBackward0", reshape_back},
    [AMPC_AD_EXPAND] = {"ExpandBackward0", expand_backward},
    [AMPC_AD_PERMUTE] = {"PermuteBackward0", permute_backward},
    [AMPC_AD_TRANSPOSE] = {"TransposeBackward0", transpose_backward},
    [AMPC_AD_T] = {"TBackward0", transpose_backward},
    [AMPC_AD_SLICE] = {"SliceBackward0", slice_backward},
    [AMPC_AD_SELECT] = {"SelectBackward0", select_backward},
    [AMPC_AD_CLONE] = {"CloneBackward0", identity_backward},
    [AMPC_AD_ALIAS] = {"AliasBackward0", identity_backward},
};

ampc_status ampc_ad_record_view(ampc_ad_view_kind kind, const ampc_tensor *a, ampc_tensor *out, int n_ints,
                                const int64_t *ints) {
    if (!ampc_dtype_is_floating(out->dtype)) return AMPC_OK;
    if ((unsigned)kind >= sizeof view_rules / sizeof view_rules[0] || n_ints > AMPC_MAX_KERNEL_INTS)
        return ampc_set_error(AMPC_E_VALUE, "autograd: bad view record (%d)", (int)kind);
    ampc_node_attrs at = {0};
    if (n_ints) memcpy(at.ints, ints, sizeof(int64_t) * (size_t)n_ints);
    at.n_ints = n_ints;
    if (kind == AMPC_AD_T) at.ints[0] = 0, at.ints[1] = 1, at.n_ints = 2;
    return ampc_autograd_record(&view_rules[kind], 1, &a, 1, &out, 0, NULL, &at) ? AMPC_OK : ampc_last_status();
}

ampc_tensor *ampc_ad_clone(const ampc_tensor *t) {
    bool record = ampc_any_requires_grad(1, &t);
    bool prev = ampc_grad_mode_pause();
    ampc_tensor *c = ampc_clone(t);
    ampc_grad_mode_restore(prev);
    if (c && record && ampc_ad_record_view(AMPC_AD_CLONE, t, c, 0, NULL) != AMPC_OK) {
        ampc_tensor_decref(c);
        c = NULL;
    }
    return c;
}
