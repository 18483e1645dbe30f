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
    if ((unsigned)kind >= sizeof view_rules / sizeof view_rules[0] || n_ints > AMPC_MAX_NODE_INTS)
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

/* ------------------------------------------------------------------ copies and fills in place */

static ampc_status copy_backward(ampc_node *n, ampc_tensor *const *go, ampc_tensor **gi) {
    /* dst.copy_(src): dst's old values are gone (0); src's grad is g, summed to src's shape and
     * cast to its dtype by the engine */
    if (n->needs_input_grad[0]) gi[0] = ampc_zeros(go[0]->ndim, go[0]->shape, go[0]->dtype, go[0]->device);
    if (n->needs_input_grad[1]) gi[1] = G;
    return ad_done(n, gi);
}

static ampc_status fill_backward(ampc_node *n, ampc_tensor *const *go, ampc_tensor **gi) {
    gi[0] = ampc_zeros(go[0]->ndim, go[0]->shape, go[0]->dtype, go[0]->device); /* a constant now */
    return ad_done(n, gi);
}

static const ampc_grad_rule copy_rule = {"CopyBackwards", copy_backward}, fill_rule = {"FillBackward0", fill_backward};

/* ------------------------------------------------------------------ frontends' recording path */

static ampc_tensor *recorded_view(ampc_tensor *out, ampc_ad_view_kind kind, const ampc_tensor *a, int n_ints,
                                  const int64_t *ints) {
    return ad_recorded(out, out ? ampc_ad_record_view(kind, a, out, n_ints, ints) : AMPC_OK);
}

/* The views whose node keeps only what the call passed, one row each: ampc_ad_<name>(params)
 * runs ampc_<name>(args) with grad mode paused and records it as `kind` with the `n_ints` ints
 * the backward rule reads. */
#define PLAIN_VIEWS(X)                                                                                               \
    X(view, (const ampc_tensor *t, int ndim, const int64_t *shape), (t, ndim, shape), AMPC_AD_VIEW, 0, NULL)         \
    X(permute, (const ampc_tensor *t, int ndim, const int64_t *dims), (t, ndim, dims), AMPC_AD_PERMUTE, ndim, dims)  \
    X(unsqueeze, (const ampc_tensor *t, int64_t dim), (t, dim), AMPC_AD_UNSQUEEZE, 0, NULL)                          \
    X(squeeze, (const ampc_tensor *t, int ndims, const int64_t *dims), (t, ndims, dims), AMPC_AD_SQUEEZE, 0, NULL)   \
    X(expand, (const ampc_tensor *t, int ndim, const int64_t *shape), (t, ndim, shape), AMPC_AD_EXPAND, 0, NULL)     \
    X(alias, (const ampc_tensor *t), (t), AMPC_AD_ALIAS, 0, NULL)

#define PLAIN_VIEW(name, params, args, kind, n_ints, ints) \
    ampc_tensor *ampc_ad_##name params {                   \
        ampc_tensor *out;                                  \
        AD_PAUSED(out, ampc_##name args);                  \
        return recorded_view(out, kind, t, n_ints, ints);  \
    }
PLAIN_VIEWS(PLAIN_VIEW)
#undef PLAIN_VIEW

ampc_tensor *ampc_ad_reshape(const ampc_tensor *t, int ndim, const int64_t *shape) {
    ampc_tensor *out;
    AD_PAUSED(out, ampc_reshape(t, ndim, shape));
    /* a view when the strides allowed one, else a copy (which has no view_base) */
    return recorded_view(out, out && out->view_base ? AMPC_AD_VIEW : AMPC_AD_RESHAPE_COPY, t, 0, NULL);
}

ampc_tensor *ampc_ad_transpose(const ampc_tensor *t, int64_t dim0, int64_t dim1) {
    ampc_tensor *out;
    AD_PAUSED(out, ampc_transpose(t, dim0, dim1));
    int64_t dims[2] = {dim0, dim1};
    return recorded_view(out, AMPC_AD_TRANSPOSE, t, 2, dims);
}

ampc_tensor *ampc_ad_slice(const ampc_tensor *t, int64_t dim, int64_t start, int64_t stop, int64_t step) {
    ampc_tensor *out;
    AD_PAUSED(out, ampc_slice(t, dim, start, stop, step));
    if (!out) return NULL;
    /* the rule needs the start ampc_slice clamped to */
    int d = (int)(dim < 0 ? dim + t->ndim : dim);
    int64_t n = t->shape[d];
    if (start < 0) start += n;
    start = start < 0 ? 0 : start > n ? n : start;
    int64_t ints[3] = {d, start, step};
    return recorded_view(out, AMPC_AD_SLICE, t, 3, ints);
}

ampc_tensor *ampc_ad_select(const ampc_tensor *t, int64_t dim, int64_t index) {
    ampc_tensor *out;
    AD_PAUSED(out, ampc_select(t, dim, index));
    if (!out) return NULL;
    int d = (int)(dim < 0 ? dim + t->ndim : dim);
    int64_t ints[2] = {d, index < 0 ? index + t->shape[d] : index};
    return recorded_view(out, AMPC_AD_SELECT, t, 2, ints);
}

ampc_tensor *ampc_ad_to(const ampc_tensor *t, ampc_dtype dtype, ampc_device device, bool copy) {
    ampc_tensor *out;
    AD_PAUSED(out, ampc_to(t, dtype, device, copy));
    if (!out || out == t) return out; /* nothing changed: the same tensor, its own history */
    return ad_recorded(out, ampc_ad_record_to(t, out));
}

ampc_status ampc_ad_copy_(ampc_tensor *dst, const ampc_tensor *src) {
    AMPC_TRY(ampc_autograd_check_inplace(dst));
    ampc_status st;
    AD_PAUSED(st, ampc_copy_(dst, src));
    if (st != AMPC_OK || !ampc_dtype_is_floating(dst->dtype)) return st;
    const ampc_tensor *ins[2] = {dst, ampc_dtype_is_floating(src->dtype) ? src : NULL};
    return ampc_autograd_record(&copy_rule, 2, ins, 1, &dst, 0, NULL, NULL) ? AMPC_OK : ampc_last_status();
}

ampc_status ampc_ad_fill_(ampc_tensor *t, ampc_scalar value) {
    AMPC_TRY(ampc_autograd_check_inplace(t));
    ampc_status st;
    AD_PAUSED(st, ampc_fill_(t, value));
    if (st != AMPC_OK || !ampc_dtype_is_floating(t->dtype)) return st;
    const ampc_tensor *in = t;
    return ampc_autograd_record(&fill_rule, 1, &in, 1, &t, 0, NULL, NULL) ? AMPC_OK : ampc_last_status();
}
