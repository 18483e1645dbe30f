/* derivatives_index.c: gradient rules of indexing and joining (index_select, gather,
 * scatter_add, index_add, advanced indexing and index_put_, masked_fill, cat, stack, split /
 * chunk / unbind) and the calls index.c makes to record them.
 *
 * The rules pair up: the backward of a gather-like op (index_select, gather, a[idx]) is the
 * matching scatter-add into zeros (index_add, scatter_add, index_put_ with accumulate), and the
 * other way round, so second-order gradients come from recording the rules themselves.
 * Node layout: attrs.ints[0] the dim (wrapped) where there is one; saved: the index tensors
 * (never differentiable) or the mask. */
#include <stdlib.h>

#include "derivatives.h"

#define G ad_ref(go[0])

/* ------------------------------------------------------------------ gather-like / scatter-like */

static ampc_status index_select_backward(ampc_node *n, ampc_tensor *const *go, ampc_tensor **gi) {
    /* d a[..., idx, ...]/da: zeros.index_add(dim, idx, g) (repeated indices accumulate) */
    ampc_tensor *z = ad_zeros_in(n, 0), *idx = ad_saved(n, 0);
    if (z && idx) gi[0] = ampc_index_add(z, n->attrs.ints[0], idx, go[0], 1.0);
    ad_release2(NULL, z, idx);
    return ad_done(n, gi);
}

static ampc_status gather_backward(ampc_node *n, ampc_tensor *const *go, ampc_tensor **gi) {
    /* zeros.scatter_add(dim, idx, g) */
    ampc_tensor *z = ad_zeros_in(n, 0), *idx = ad_saved(n, 0);
    if (z && idx) gi[0] = ampc_scatter_add(z, n->attrs.ints[0], idx, go[0]);
    ad_release2(NULL, z, idx);
    return ad_done(n, gi);
}

static ampc_status scatter_add_backward(ampc_node *n, ampc_tensor *const *go, ampc_tensor **gi) {
    if (n->needs_input_grad[0]) gi[0] = G; /* d/da = 1 */
    if (n->needs_input_grad[1]) {          /* d/dsrc = g.gather(dim, idx) */
        ampc_tensor *idx = ad_saved(n, 0);
        if (idx) gi[1] = ampc_gather(go[0], n->attrs.ints[0], idx);
        ampc_tensor_decref(idx);
    }
    return ad_done(n, gi);
}

static ampc_status index_add_backward(ampc_node *n, ampc_tensor *const *go, ampc_tensor **gi) {
    if (n->needs_input_grad[0]) gi[0] = G; /* d/da = 1 */
    if (n->needs_input_grad[1]) {          /* d/dsrc = alpha g.index_select(dim, idx) */
        ampc_tensor *idx = ad_saved(n, 0);
        ampc_tensor *sel = idx ? ampc_index_select(go[0], n->attrs.ints[0], idx) : NULL;
        ampc_tensor_decref(idx);
        double alpha = ampc_scalar_to_double(n->attrs.scalars[0]);
        gi[1] = alpha == 1.0 ? sel : ad_scale(sel, alpha);
    }
    return ad_done(n, gi);
}

static const ampc_grad_rule index_select_rule = {"IndexSelectBackward0", index_select_backward},
                            gather_rule = {"GatherBackward0", gather_backward},
                            scatter_add_rule = {"ScatterAddBackward0", scatter_add_backward},
                            index_add_rule = {"IndexAddBackward0", index_add_backward};

static ampc_status record_dim_op(const ampc_grad_rule *rule, const ampc_tensor *a, const ampc_tensor *src,
                                 int64_t dim, const ampc_tensor *index, double alpha, ampc_tensor *out) {
    if (!ampc_dtype_is_floating(out->dtype)) return AMPC_OK;
    int d;
    AMPC_TRY(ampc_wrap_dim(rule->name, dim, a->ndim, &d));
    ampc_node_attrs at = {0};
    at.ints[0] = d;
    at.n_ints = 1;
    at.scalars[0] = ampc_scalar_float(alpha);
    const ampc_tensor *ins[2] = {a, src};
    return ampc_autograd_record(rule, src ? 2 : 1, ins, 1, &out, 1, &index, &at) ? AMPC_OK : ampc_last_status();
}

ampc_status ampc_ad_record_index_select(const ampc_tensor *a, int64_t dim, const ampc_tensor *index, ampc_tensor *out) {
    return record_dim_op(&index_select_rule, a, NULL, dim, index, 1.0, out);
}

ampc_status ampc_ad_record_gather(const ampc_tensor *a, int64_t dim, const ampc_tensor *index, ampc_tensor *out) {
    return record_dim_op(&gather_rule, a, NULL, dim, index, 1.0, out);
}

ampc_status ampc_ad_record_scatter_add(const ampc_tensor *a, int64_t dim, const ampc_tensor *index,
                                       const ampc_tensor *src, ampc_tensor *out) {
    return record_dim_op(&scatter_add_rule, a, src, dim, index, 1.0, out);
}

ampc_status ampc_ad_record_index_add(const ampc_tensor *a, int64_t dim, const ampc_tensor *index,
                                     const ampc_tensor *src, double alpha, ampc_tensor *out) {
    return record_dim_op(&index_add_rule, a, src, dim, index, alpha, out);
}

/* ------------------------------------------------------------------ advanced indexing */

/* The index list of an index / index_put node: saved slots 0..n_idx-1 (NULL for full slices). */
#define MAX_INDICES 16

static const ampc_tensor **saved_indices(ampc_node *n, int n_idx, const ampc_tensor **buf) {
    if (n_idx > MAX_INDICES || n_idx > n->n_saved) {
        ampc_set_error(AMPC_E_VALUE, "%s: too many indices (%d)", ampc_node_name(n), n_idx);
        return NULL;
    }
    for (int j = 0; j < n_idx; j++) {
        buf[j] = n->saved[j].tensor ? ampc_node_saved(n, j) : NULL;
        if (n->saved[j].tensor && !buf[j]) return NULL;
    }
    return buf;
}

static ampc_status index_backward(ampc_node *n, ampc_tensor *const *go, ampc_tensor **gi) {
    /* d a[idx]/da: zeros with g added at idx (index_put_ with accumulate: repeats add up) */
    const ampc_tensor *idx[MAX_INDICES];
    int n_idx = (int)n->attrs.ints[0];
    ampc_tensor *z = ad_zeros_in(n, 0);
    if (z && saved_indices(n, n_idx, idx) && ampc_index_put_(z, n_idx, idx, go[0], true) == AMPC_OK) {
        gi[0] = z;
        z = NULL;
    }
    ampc_tensor_decref(z);
    return ad_done(n, gi);
}

static ampc_status index_put_backward(ampc_node *n, ampc_tensor *const *go, ampc_tensor **gi) {
    const ampc_tensor *idx[MAX_INDICES];
    int n_idx = (int)n->attrs.ints[0];
    bool accumulate = n->attrs.ints[1] != 0;
    if (!saved_indices(n, n_idx, idx)) return ampc_last_status();
    if (n->needs_input_grad[0]) {
        if (accumulate) { /* a[idx] += v: d/da = 1 */
            gi[0] = G;
        } else { /* a[idx] = v: the overwritten elements get no gradient */
            ampc_tensor *c = ampc_ad_clone(go[0]);
            ampc_tensor *zero = c ? ampc_zeros(0, NULL, c->dtype, c->device) : NULL;
            if (zero && ampc_index_put_(c, n_idx, idx, zero, false) == AMPC_OK) {
                gi[0] = c;
                c = NULL;
            }
            ad_release2(NULL, c, zero);
        }
    }
    if (n->needs_input_grad[1]) gi[1] = ampc_index(go[0], n_idx, idx); /* d/dv = g[idx], summed to v's shape */
    return ad_done(n, gi);
}

static const ampc_grad_rule index_rule = {"IndexBackward0", index_backward},
                            index_put_rule = {"IndexPutBackward0", index_put_backward};

ampc_status ampc_ad_record_index(const ampc_tensor *a, int n_idx, const ampc_tensor *const *indices, ampc_tensor *out) {
    if (!ampc_dtype_is_floating(out->dtype)) return AMPC_OK;
    ampc_node_attrs at = {0};
    at.ints[0] = n_idx;
    at.n_ints = 1;
    return ampc_autograd_record(&index_rule, 1, &a, 1, &out, n_idx, indices, &at) ? AMPC_OK : ampc_last_status();
}

ampc_status ampc_ad_record_index_put_(ampc_tensor *a, int n_idx, const ampc_tensor *const *indices,
                                      const ampc_tensor *values, bool accumulate) {
    if (!ampc_dtype_is_floating(a->dtype)) return AMPC_OK;
    ampc_node_attrs at = {0};
    at.ints[0] = n_idx;
    at.ints[1] = accumulate;
    at.n_ints = 2;
    const ampc_tensor *ins[2] = {a, values};
    return ampc_autograd_record(&index_put_rule, 2, ins, 1, &a, n_idx, indices, &at) ? AMPC_OK : ampc_last_status();
}

/* ------------------------------------------------------------------ masked_fill */

static ampc_status masked_fill_backward(ampc_node *n, ampc_tensor *const *go, ampc_tensor **gi) {
    /* filled elements no longer depend on a: g with zeros where mask */
    ampc_tensor *mask = ad_saved(n, 0);
    if (mask) gi[0] = ampc_masked_fill(go[0], mask, ampc_scalar_int(0));
    ampc_tensor_decref(mask);
    return ad_done(n, gi);
}

static const ampc_grad_rule masked_fill_rule = {"MaskedFillBackward0", masked_fill_backward};

ampc_status ampc_ad_record_masked_fill(const ampc_tensor *a, const ampc_tensor *mask, ampc_tensor *out) {
    if (!ampc_dtype_is_floating(out->dtype)) return AMPC_OK;
    return ampc_autograd_record(&masked_fill_rule, 1, &a, 1, &out, 1, &mask, NULL) ? AMPC_OK : ampc_last_status();
}

/* ------------------------------------------------------------------ cat, stack, split */

static ampc_status cat_backward(ampc_node *n, ampc_tensor *const *go, ampc_tensor **gi) {
    /* each input gets its own slice of g along dim */
    int64_t dim = n->attrs.ints[0], start = 0;
    for (int j = 0; j < n->n_inputs; j++) {
        bool skipped = n->in_ndim[j] == 1 && n->in_shape[j][0] == 0 && go[0]->ndim != 1; /* legacy empty input */
        int64_t len = skipped ? 0 : n->in_shape[j][dim];
        if (n->needs_input_grad[j]) {
            gi[j] = skipped ? ad_zeros_in(n, j) : ampc_narrow(go[0], dim, start, len);
            if (!gi[j]) return ampc_last_status();
        }
        start += len;
    }
    return AMPC_OK;
}

static ampc_status stack_backward(ampc_node *n, ampc_tensor *const *go, ampc_tensor **gi) {
    for (int j = 0; j < n->n_inputs; j++) /* input j is g[..., j, ...] along dim */
        if (n->needs_input_grad[j] && !(gi[j] = ampc_select(go[0], n->attrs.ints[0], j))) return ampc_last_status();
    return AMPC_OK;
}

static ampc_status split_backward(ampc_node *n, ampc_tensor *const *go, ampc_tensor **gi) {
    /* the pieces' grads (zeros where none arrived) joined back: cat for split, stack for unbind */
    const ampc_tensor *const *pieces = (const ampc_tensor *const *)go;
    gi[0] = n->attrs.ints[1] ? ampc_stack(n->n_outputs, pieces, n->attrs.ints[0])
                             : ampc_cat(n->n_outputs, pieces, n->attrs.ints[0]);
    return ad_done(n, gi);
}

static const ampc_grad_rule cat_rule = {"CatBackward0", cat_backward}, stack_rule = {"StackBackward0", stack_backward},
                            split_rule = {"SplitBackward0", split_backward},
                            unbind_rule = {"UnbindBackward0", split_backward};

/* cat and stack: n inputs joined along `dim` (wrapped against out's rank) into one output. */
static ampc_status record_joined(const ampc_grad_rule *rule, const char *op, int n, const ampc_tensor *const *ts,
                                 int64_t dim, ampc_tensor *out) {
    if (!ampc_dtype_is_floating(out->dtype)) return AMPC_OK;
    int d;
    AMPC_TRY(ampc_wrap_dim(op, dim, out->ndim, &d));
    ampc_node_attrs at = {0};
    at.ints[0] = d;
    at.n_ints = 1;
    return ampc_autograd_record(rule, n, ts, 1, &out, 0, NULL, &at) ? AMPC_OK : ampc_last_status();
}

ampc_status ampc_ad_record_cat(int n, const ampc_tensor *const *ts, int64_t dim, ampc_tensor *out) {
    return record_joined(&cat_rule, "cat", n, ts, dim, out);
}

ampc_status ampc_ad_record_stack(int n, const ampc_tensor *const *ts, int64_t dim, ampc_tensor *out) {
    return record_joined(&stack_rule, "stack", n, ts, dim, out);
}

ampc_status ampc_ad_record_split(const ampc_tensor *a, int64_t dim, bool unbind, int64_t n, ampc_tensor *const *outs) {
    if (!ampc_dtype_is_floating(a->dtype) || n <= 0) return AMPC_OK;
    int d;
    AMPC_TRY(ampc_wrap_dim(unbind ? "unbind" : "split", dim, a->ndim, &d));
    ampc_node_attrs at = {0};
    at.ints[0] = d;
    at.ints[1] = unbind;
    at.n_ints = 2;
    return ampc_autograd_record(unbind ? &unbind_rule : &split_rule, 1, &a, (int)n, outs, 0, NULL, &at)
               ? AMPC_OK
               : ampc_last_status();
}

/* ------------------------------------------------------------------ frontends' recording path */

ampc_tensor *ampc_ad_cat(int n, const ampc_tensor *const *ts, int64_t dim) {
    ampc_tensor *out;
    AD_PAUSED(out, ampc_cat(n, ts, dim));
    return ad_recorded(out, out ? ampc_ad_record_cat(n, ts, dim, out) : AMPC_OK);
}

ampc_tensor *ampc_ad_stack(int n, const ampc_tensor *const *ts, int64_t dim) {
    ampc_tensor *out;
    AD_PAUSED(out, ampc_stack(n, ts, dim));
    return ad_recorded(out, out ? ampc_ad_record_stack(n, ts, dim, out) : AMPC_OK);
}

