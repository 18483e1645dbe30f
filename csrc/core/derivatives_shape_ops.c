/* derivatives_shape_ops.c: gradient rules of the shape and index ops of issue 12 (shape_ops.c,
 * shape_views.c, index_ops.c) and their one recording entry, ampc_ad_record_shape_op.
 *
 * Each rule is the op's inverse data movement applied to the gradient, written with recording
 * frontends so create_graph gives second order:
 *   tril/triu   g.tril(k) / g.triu(k)               flip     g.flip(dims)
 *   roll        g.roll(-shifts, dims)               repeat   g summed over each copy
 *   diagonal    zeros with g written on the diagonal (CopySlices records it under create_graph)
 *   unfold      the windows' slices of g added into zeros (windows may overlap)
 *   as_strided  g index_add'ed into zeros at the flat positions the view reads
 *   scatter     self: g.scatter(dim, index, 0); src: g.gather(dim, index)
 *   index_copy  self: g.index_fill(dim, index, 0); source: g.index_select(dim, index)
 *   index_fill  self: g.index_fill(dim, index, 0)
 *   scatter_reduce / index_reduce  torch's rules per reduction (sum, mean, amax/amin sharing
 *               the grad among ties, prod with its zeros) */
#include <string.h>

#include "derivatives.h"

#define G ad_ref(go[0])

static ampc_status tril_backward(ampc_node *n, ampc_tensor *const *go, ampc_tensor **gi) {
    gi[0] = ampc_tril(go[0], n->attrs.ints[0], n->rule->name[3] == 'u'); /* "TriuBackward0" */
    return ad_done(n, gi);
}

static ampc_status flip_backward(ampc_node *n, ampc_tensor *const *go, ampc_tensor **gi) {
    gi[0] = ampc_flip(go[0], n->attrs.n_ints, n->attrs.ints); /* its own inverse */
    return ad_done(n, gi);
}

static ampc_status roll_backward(ampc_node *n, ampc_tensor *const *go, ampc_tensor **gi) {
    int64_t shifts[AMPC_MAX_NODE_INTS], dims[AMPC_MAX_NODE_INTS];
    if (n->attrs.n_ints == 1) { /* the flattened roll */
        shifts[0] = -n->attrs.ints[0];
        gi[0] = ampc_roll(go[0], 1, shifts, 0, NULL);
    } else {
        int k = n->attrs.n_ints / 2;
        for (int i = 0; i < k; i++) shifts[i] = -n->attrs.ints[2 * i], dims[i] = n->attrs.ints[2 * i + 1];
        gi[0] = ampc_roll(go[0], k, shifts, k, dims);
    }
    return ad_done(n, gi);
}

static ampc_status repeat_backward(ampc_node *n, ampc_tensor *const *go, ampc_tensor **gi) {
    /* dim i of g is (r_i, s_i) flattened: split it and sum the r_i copies, one dim at a time */
    int nr = n->attrs.n_ints, lead = nr - n->in_ndim[0];
    ampc_tensor *g = G;
    for (int i = 0; i < nr && g; i++) {
        int64_t r = n->attrs.ints[i];
        if (r == 1) continue;
        int64_t shape[AMPC_MAX_DIMS + 1];
        for (int j = 0, k = 0; j < nr; j++) {
            int64_t s = j < lead ? 1 : n->in_shape[0][j - lead];
            if (j == i) shape[k++] = r, shape[k++] = s;
            else shape[k++] = g->shape[j];
        }
        if (nr + 1 > AMPC_MAX_DIMS) {
            ampc_tensor_decref(g);
            return ampc_set_error(AMPC_E_NOT_IMPLEMENTED, "RepeatBackward0: ampc differentiates repeat of at most %d "
                                  "dims", AMPC_MAX_DIMS - 1);
        }
        int64_t dim = i;
        g = ad_sum(ad_reshape(g, nr + 1, shape), 1, &dim, false);
    }
    gi[0] = ad_reshape(g, n->in_ndim[0], n->in_shape[0]);
    return ad_done(n, gi);
}

static ampc_status diagonal_backward(ampc_node *n, ampc_tensor *const *go, ampc_tensor **gi) {
    ampc_tensor *z = ad_zeros_in(n, 0);
    ampc_tensor *v = z ? ampc_diagonal(z, n->attrs.ints[0], n->attrs.ints[1], n->attrs.ints[2]) : NULL;
    if (!v || ampc_copy_(v, go[0]) != AMPC_OK) {
        ampc_tensor_decref(z);
        z = NULL;
    }
    ampc_tensor_decref(v);
    gi[0] = z;
    return ad_done(n, gi);
}

static ampc_status unfold_backward(ampc_node *n, ampc_tensor *const *go, ampc_tensor **gi) {
    int64_t d = n->attrs.ints[0], size = n->attrs.ints[1], step = n->attrs.ints[2];
    if (n->in_ndim[0] == 0) { /* a 0-dim input seen as (1,): one window of size <= 1 */
        gi[0] = ad_reshape(ad_sum(G, 0, NULL, false), 0, NULL);
        return ad_done(n, gi);
    }
    ampc_tensor *acc = size == 0 ? ad_zeros_in(n, 0) : NULL;
    for (int64_t i = 0; i < size; i++) {
        ampc_tensor *gsel = ampc_select(go[0], -1, i); /* window element i of every window */
        ampc_tensor *part = gsel ? ampc_ad_slice_backward(gsel, n->in_ndim[0], n->in_shape[0], d, i, step) : NULL;
        ampc_tensor_decref(gsel);
        acc = i == 0 ? part : ad_add(acc, part);
        if (!acc) break;
    }
    gi[0] = acc;
    return ad_done(n, gi);
}

static ampc_status as_strided_backward(ampc_node *n, ampc_tensor *const *go, ampc_tensor **gi) {
    int nd = (int)n->attrs.ints[0];
    int64_t shape[AMPC_MAX_DIMS], strides[AMPC_MAX_DIMS], numel = 1, gnumel = ampc_numel(go[0]);
    for (int i = 0; i < nd; i++) shape[i] = n->attrs.ints[1 + i], strides[i] = n->attrs.ints[1 + nd + i];
    for (int i = 0; i < n->in_ndim[0]; i++) numel *= n->in_shape[0][i];
    /* the flat input position each output element reads: the same view over arange(numel) */
    ampc_tensor *pos = ampc_arange(0, (double)numel, 1, AMPC_INT64, go[0]->device);
    ampc_tensor *view = pos ? ampc_as_strided(pos, nd, shape, strides, pos->offset + n->attrs.ints[1 + 2 * nd]) : NULL;
    ampc_tensor *idx = view ? ampc_reshape(view, 1, &gnumel) : NULL;
    ampc_tensor *gflat = ampc_reshape(go[0], 1, &gnumel);
    ampc_tensor *z = ampc_zeros(1, &numel, go[0]->dtype, go[0]->device);
    ampc_tensor *acc = z && idx && gflat ? ampc_index_add(z, 0, idx, gflat, 1.0) : NULL;
    gi[0] = ad_reshape(acc, n->in_ndim[0], n->in_shape[0]);
    ampc_tensor_decref(pos);
    ampc_tensor_decref(view);
    ampc_tensor_decref(idx);
    ampc_tensor_decref(gflat);
    ampc_tensor_decref(z);
    return ad_done(n, gi);
}

static ampc_status scatter_backward(ampc_node *n, ampc_tensor *const *go, ampc_tensor **gi) {
    ampc_tensor *idx = ad_saved(n, 0);
    int64_t dim = n->attrs.ints[0];
    if (idx && n->needs_input_grad[0]) gi[0] = ampc_scatter(go[0], dim, idx, NULL, ampc_scalar_int(0));
    if (idx && n->n_inputs > 1 && n->needs_input_grad[1]) gi[1] = ampc_gather(go[0], dim, idx);
    ampc_tensor_decref(idx);
    return ad_done(n, gi);
}

static ampc_status index_write_backward(ampc_node *n, ampc_tensor *const *go, ampc_tensor **gi) {
    ampc_tensor *idx = ad_saved(n, 0);
    int64_t dim = n->attrs.ints[0];
    if (idx && n->needs_input_grad[0]) gi[0] = ampc_index_fill(go[0], dim, idx, ampc_scalar_int(0));
    if (idx && n->n_inputs > 1 && n->needs_input_grad[1]) {
        ampc_tensor *sel = ampc_index_select(go[0], dim, idx);
        /* a 0-dim source of a 0/1-dim self: the selected (1,) back to 0-dim */
        gi[1] = sel && n->in_ndim[1] != sel->ndim ? ad_reshape(sel, n->in_ndim[1], n->in_shape[1]) : sel;
    }
    ampc_tensor_decref(idx);
    return ad_done(n, gi);
}

/* scatter_reduce / index_reduce (torch's rules). saved: index, self, src, result; ints: dim,
 * kind, include_self, index_form. take(t): t at the targets in src's layout (gather or
 * index_select); spread(z, v): z with v added at the targets (scatter_add or index_add). */
typedef struct reduce_ctx {
    int64_t d;
    bool index_form;
    ampc_tensor *idx;
} reduce_ctx;

static ampc_tensor *take(const reduce_ctx *c, ampc_tensor *t) {
    if (!t) return NULL;
    ampc_tensor *r = c->index_form ? ampc_index_select(t, c->d, c->idx) : ampc_gather(t, c->d, c->idx);
    ampc_tensor_decref(t);
    return r;
}

static ampc_tensor *spread(const reduce_ctx *c, ampc_tensor *z, ampc_tensor *v) {
    if (!z || !v) return ad_release2(NULL, z, v);
    ampc_tensor *r = c->index_form ? ampc_index_add(z, c->d, c->idx, v, 1.0) : ampc_scatter_add(z, c->d, c->idx, v);
    return ad_release2(r, z, v);
}

static ampc_tensor *full_like(const ampc_tensor *t, double v) {
    return ampc_full(t->ndim, t->shape, ampc_scalar_float(v), t->dtype, t->device);
}

static ampc_tensor *eq(ampc_tensor *a, ampc_tensor *b) { return ad_bin(AMPC_OP_EQ, a, b); }

static ampc_status scatter_reduce_backward(ampc_node *n, ampc_tensor *const *go, ampc_tensor **gi) {
    ampc_tensor *idx = ad_saved(n, 0), *self = ad_saved(n, 1), *src = ad_saved(n, 2), *res = ad_saved(n, 3);
    reduce_ctx c = {n->attrs.ints[0], n->attrs.ints[3] != 0, idx};
    ampc_reduce_kind kind = (ampc_reduce_kind)n->attrs.ints[1];
    bool incl = n->attrs.ints[2] != 0;
    ampc_tensor *g = G, *gs = NULL, *gx = NULL;
    if (!idx || !self || !src || !res || !g) goto done;
    ampc_dtype dt = g->dtype;
    /* 1 where no src value lands (self then passes through), 0 where one does */
    ampc_tensor *miss = ad_cmps(AMPC_OP_EQ, spread(&c, full_like(self, 0), full_like(src, 1)), 0);
    ampc_tensor *missf = ad_mask(miss, dt);
    if (kind == AMPC_REDUCE_SUM) {
        gs = incl ? ad_ref(g) : ad_mul(ad_ref(g), ad_ref(missf));
        gx = take(&c, ad_ref(g));
    } else if (kind == AMPC_REDUCE_MEAN) {
        ampc_tensor *count = spread(&c, full_like(self, incl ? 1 : 0), full_like(src, 1));
        ampc_tensor *one = ad_num(1.0, count);
        count = count && one ? ad_release2(ampc_binary(AMPC_OP_MAXIMUM, count, one, ampc_scalar_none()), count, one)
                             : ad_release2(NULL, count, one);
        gs = incl ? ad_div(ad_ref(g), ad_ref(count)) : ad_mul(ad_ref(g), ad_ref(missf));
        gx = take(&c, ad_div(ad_ref(g), count));
    } else if (kind == AMPC_REDUCE_AMAX || kind == AMPC_REDUCE_AMIN) {
        /* the grad is shared equally by every value equal to the result (ties) */
        /* torch counts self's tie even without include_self (its grad is then masked out) */
        ampc_tensor *self_is = ad_mask(eq(ad_ref(self), ad_ref(res)), dt);
        ampc_tensor *src_is = ad_mask(eq(ad_ref(src), take(&c, ad_ref(res))), dt);
        ampc_tensor *cnt = spread(&c, ad_ref(self_is), ad_ref(src_is));
        ampc_tensor *one = ad_num(1.0, cnt);
        ampc_tensor *cnt1 = cnt && one ? ampc_binary(AMPC_OP_MAXIMUM, cnt, one, ampc_scalar_none()) : NULL;
        ad_release2(NULL, cnt, one);
        gs = incl ? ad_div(ad_mul(ad_ref(g), self_is), ad_ref(cnt1)) : (ampc_tensor_decref(self_is), ad_mul(ad_ref(g), ad_ref(missf)));
        gx = ad_mul(take(&c, ad_div(ad_ref(g), cnt1)), src_is);
    } else { /* prod, with zeros handled as torch: a single zero gets the product of the others */
        if (incl) {
            ampc_tensor *self0 = ad_cmps(AMPC_OP_EQ, ad_ref(self), 0);
            ampc_tensor *mself = ad_where(self0, full_like(self, 1), ad_ref(self));
            ampc_tensor *msr = mself ? ampc_scatter_reduce(mself, c.d, idx, src, AMPC_REDUCE_PROD, true, c.index_form) : NULL;
            gs = ad_div(ad_mul(ad_ref(g), msr), mself);
        } else {
            gs = ad_mul(ad_ref(g), ad_ref(missf));
        }
        ampc_tensor *src0 = ad_cmps(AMPC_OP_EQ, ad_ref(src), 0);
        ampc_tensor *base = incl ? ad_mask(ad_cmps(AMPC_OP_EQ, ad_ref(self), 0), dt) : full_like(self, 0);
        ampc_tensor *nz = spread(&c, base, ad_mask(ad_ref(src0), dt));
        ampc_tensor *single = src0 ? ad_bin(AMPC_OP_LOGICAL_AND, ad_ref(src0), ad_cmps(AMPC_OP_EQ, take(&c, nz), 1)) : NULL;
        ampc_tensor *msrc = single ? ad_where(ad_ref(single), full_like(src, 1), ad_ref(src)) : NULL;
        ampc_tensor *msrc_res = msrc ? ampc_scatter_reduce(self, c.d, idx, msrc, AMPC_REDUCE_PROD, incl, c.index_form) : NULL;
        ampc_tensor_decref(msrc);
        ampc_tensor *a1 = take(&c, ad_mul(ad_ref(g), msrc_res));
        ampc_tensor *a2 = ad_div(take(&c, ad_mul(ad_ref(g), ad_ref(res))), ad_where(src0, full_like(src, 1), ad_ref(src)));
        gx = ad_where(single, a1, a2);
    }
    ampc_tensor_decref(missf);
done:
    if (n->needs_input_grad[0]) gi[0] = gs;
    else ampc_tensor_decref(gs);
    if (n->needs_input_grad[1]) gi[1] = gx;
    else ampc_tensor_decref(gx);
    ampc_tensor_decref(g);
    ampc_tensor_decref(idx);
    ampc_tensor_decref(self);
    ampc_tensor_decref(src);
    ampc_tensor_decref(res);
    return ad_done(n, gi);
}

static const ampc_grad_rule scatter_reduce_rule = {"ScatterReduceBackward0", scatter_reduce_backward},
                            index_reduce_rule = {"IndexReduceBackward0", scatter_reduce_backward};

static const ampc_grad_rule tril_rule = {"TrilBackward0", tril_backward}, triu_rule = {"TriuBackward0", tril_backward},
                            flip_rule = {"FlipBackward0", flip_backward}, roll_rule = {"RollBackward0", roll_backward},
                            repeat_rule = {"RepeatBackward0", repeat_backward},
                            diagonal_rule = {"DiagonalBackward0", diagonal_backward},
                            unfold_rule = {"UnfoldBackward0", unfold_backward},
                            as_strided_rule = {"AsStridedBackward0", as_strided_backward},
                            scatter_src_rule = {"ScatterBackward0", scatter_backward},
                            scatter_value_rule = {"ScatterBackward1", scatter_backward},
                            index_copy_rule = {"IndexCopyBackward0", index_write_backward},
                            index_fill_rule = {"IndexFillBackward0", index_write_backward};

ampc_status ampc_ad_record_shape_op(ampc_op op, int n_inputs, const ampc_tensor *const *inputs, ampc_tensor *out,
                                    int n_saved, const ampc_tensor *const *saved, const ampc_node_attrs *at) {
    if (!ampc_dtype_is_floating(out->dtype)) return AMPC_OK;
    const ampc_grad_rule *rule;
    switch (op) {
    case AMPC_OP_TRIL: rule = &tril_rule; break;
    case AMPC_OP_TRIU: rule = &triu_rule; break;
    case AMPC_OP_FLIP: rule = &flip_rule; break;
    case AMPC_OP_ROLL: rule = &roll_rule; break;
    case AMPC_OP_REPEAT: rule = &repeat_rule; break;
    case AMPC_OP_DIAGONAL: rule = &diagonal_rule; break;
    case AMPC_OP_UNFOLD: rule = &unfold_rule; break;
    case AMPC_OP_AS_STRIDED: rule = &as_strided_rule; break;
    case AMPC_OP_SCATTER: rule = n_inputs > 1 ? &scatter_src_rule : &scatter_value_rule; break;
    case AMPC_OP_INDEX_COPY: rule = &index_copy_rule; break;
    case AMPC_OP_INDEX_FILL: rule = &index_fill_rule; break;
    case AMPC_OP_SCATTER_REDUCE: rule = &scatter_reduce_rule; break;
    case AMPC_OP_INDEX_REDUCE: rule = &index_reduce_rule; break;
    default: return ampc_set_error(AMPC_E_VALUE, "autograd: %s has no shape-op rule", ampc_op_name(op));
    }
    return ampc_autograd_record(rule, n_inputs, inputs, 1, &out, n_saved, saved, at) ? AMPC_OK : ampc_last_status();
}
