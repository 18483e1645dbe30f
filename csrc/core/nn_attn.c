/* nn_attn.c: scaled_dot_product_attention, the frontend and gradient rule of the fused attention
 * kernels (ops.def rows SDPA_FLASH / SDPA_FLASH_BACKWARD, issue 13's attn block; kernels in
 * cpu/cpu_nn_attn.c and cuda/cuda_nn_attn.cu).
 *
 * query (*, L, E), key (*, S, E), value (*, S, Ev) -> (*, L, Ev). The batch dims broadcast; the
 * last of them is the head dim, and with enable_gqa key and value may have fewer heads than the
 * query (a divisor: grouped-query attention, query head h reads head h / (Hq / Hk)). The kernels
 * see (N, H, L, E) contiguous tensors: N the product of the other batch dims. The mask is only
 * expanded (a view with stride 0 where it broadcasts), never materialised, except when more than
 * one leading batch dim must be folded into N and its strides do not allow a view.
 *
 * Forward keeps q, k, v, the output and the per-row log-sum-exp; the backward recomputes the
 * probabilities tile by tile from them (FlashAttention-2), with the dropout mask redrawn from
 * the same Philox words (seed and offset kept on the node). */
#include <math.h>
#include <stdio.h>

#include "autocast.h"
#include "autograd.h"
#include "mt19937.h"
#include "nn_common.h"

static ampc_status sdpa_rule_fn(ampc_node *node, ampc_tensor *const *grads, ampc_tensor **grad_inputs);
static const ampc_grad_rule sdpa_rule = {"ScaledDotProductAttentionBackward0", sdpa_rule_fn};

static const char *const SDPA = "scaled_dot_product_attention";

/* The inputs as the kernels take them, and the shapes to map results back. */
typedef struct sdpa_plan {
    ampc_tensor *q, *k, *v;  /* contiguous (N, Hq, L, E), (N, Hk, S, E), (N, Hk, S, Ev) */
    ampc_tensor *mask;       /* (N, Hq, L, S) view, or NULL */
    int nd;                  /* dims of the expanded inputs: batch dims + 2 */
    int64_t qshape[AMPC_MAX_DIMS], kshape[AMPC_MAX_DIMS], vshape[AMPC_MAX_DIMS];
    int64_t n, hq, hk;
} sdpa_plan;

static void sdpa_plan_free(sdpa_plan *p) {
    ampc_tensor *tmp[4] = {p->q, p->k, p->v, p->mask};
    nn_release(4, tmp);
}

/* Batch dims of t, left-padded with 1 to nb dims. */
static void batch_dims(const ampc_tensor *t, int nb, int64_t *out) {
    int own = t->ndim - 2;
    for (int i = 0; i < nb; i++) out[i] = i < nb - own ? 1 : t->shape[t->ndim - 2 - (nb - i)];
}

/* contiguous(expand(t, shape)) viewed as 4-D (n, h, rows, cols). */
static ampc_tensor *as_4d(const ampc_tensor *t, int nd, const int64_t *shape, int64_t n, int64_t h) {
    ampc_tensor *e = ampc_expand(t, nd, shape), *c = e ? ampc_contiguous(e) : NULL;
    int64_t s4[4] = {n, h, shape[nd - 2], shape[nd - 1]};
    ampc_tensor *out = c ? nn_reshape_view(c, 4, s4) : NULL;
    ampc_tensor_decref(e), ampc_tensor_decref(c);
    return out;
}

static ampc_status sdpa_prepare(const ampc_tensor *q, const ampc_tensor *k, const ampc_tensor *v,
                                const ampc_tensor *mask, bool gqa, sdpa_plan *p) {
    char s1[96], s2[96], s3[96];
    memset(p, 0, sizeof *p);
    const ampc_tensor *all[4] = {q, k, v, mask};
    AMPC_TRY(nn_check_device(SDPA, 4, all));
    if (q->ndim < 2 || k->ndim < 2 || v->ndim < 2)
        return ampc_set_error(AMPC_E_RUNTIME, "scaled_dot_product_attention: expected query, key and value of at least "
                                              "2 dims, got %d, %d and %d", q->ndim, k->ndim, v->ndim);
    if (q->dtype != k->dtype || q->dtype != v->dtype)
        return ampc_set_error(AMPC_E_RUNTIME,
                              "Expected query, key, and value to have the same dtype, but got query.dtype: %s key.dtype: "
                              "%s and value.dtype: %s instead.",
                              ampc_dtype_name(q->dtype), ampc_dtype_name(k->dtype), ampc_dtype_name(v->dtype));
    AMPC_TRY(nn_check_floating(SDPA, q, "query"));
    const int64_t l = q->shape[q->ndim - 2], e = q->shape[q->ndim - 1], s = k->shape[k->ndim - 2];
    const int64_t ev = v->shape[v->ndim - 1];
    if (k->shape[k->ndim - 1] != e || v->shape[v->ndim - 2] != s)
        return ampc_set_error(AMPC_E_RUNTIME,
                              "scaled_dot_product_attention: query %s, key %s and value %s do not fit (*, L, E), "
                              "(*, S, E), (*, S, Ev)",
                              nn_shape(q, s1, sizeof s1), nn_shape(k, s2, sizeof s2), nn_shape(v, s3, sizeof s3));
    if (mask && mask->dtype != AMPC_BOOL && !ampc_dtype_is_floating(mask->dtype))
        return ampc_set_error(AMPC_E_RUNTIME, "scaled_dot_product_attention: attn_mask must be bool or floating, got %s",
                              ampc_dtype_name(mask->dtype));
    int nb = q->ndim > k->ndim ? q->ndim : k->ndim;
    nb = (nb > v->ndim ? nb : v->ndim) - 2;
    int64_t bq[AMPC_MAX_DIMS], bk[AMPC_MAX_DIMS], bv[AMPC_MAX_DIMS];
    batch_dims(q, nb, bq), batch_dims(k, nb, bk), batch_dims(v, nb, bv);
    /* the head dim (the last batch dim) is matched apart under GQA */
    int lead = gqa && nb > 0 ? nb - 1 : nb;
    int64_t hq = 1, hk = 1;
    if (lead < nb) {
        hq = bq[nb - 1], hk = bk[nb - 1];
        if (bv[nb - 1] != hk)
            return ampc_set_error(AMPC_E_RUNTIME, "scaled_dot_product_attention: number of heads in key (%lld) and value "
                                                  "(%lld) must be equal", (long long)hk, (long long)bv[nb - 1]);
        if (hk == 0 || hq % hk != 0)
            return ampc_set_error(AMPC_E_RUNTIME, "scaled_dot_product_attention: number of heads in key and value "
                                                  "(%lld) must divide the number of heads in query (%lld)",
                                  (long long)hk, (long long)hq);
    }
    int64_t common[AMPC_MAX_DIMS];
    for (int i = 0; i < lead; i++) {
        int64_t d = 1;
        const int64_t dims[3] = {bq[i], bk[i], bv[i]};
        for (int j = 0; j < 3; j++) {
            if (dims[j] == 1 || dims[j] == d) continue;
            if (d != 1)
                return ampc_set_error(AMPC_E_RUNTIME,
                                      "scaled_dot_product_attention: the batch dims of query %s, key %s and value %s "
                                      "do not broadcast",
                                      nn_shape(q, s1, sizeof s1), nn_shape(k, s2, sizeof s2), nn_shape(v, s3, sizeof s3));
            d = dims[j];
        }
        common[i] = d;
    }
    if (lead == nb && nb > 0) hq = hk = common[nb - 1];
    int64_t n = 1;
    for (int i = 0; i < (nb > 0 ? nb - 1 : 0); i++) n *= common[i];
    p->nd = nb + 2, p->n = n, p->hq = hq, p->hk = hk;
    for (int i = 0; i < nb - 1; i++) p->qshape[i] = p->kshape[i] = p->vshape[i] = common[i];
    if (nb > 0) p->qshape[nb - 1] = hq, p->kshape[nb - 1] = p->vshape[nb - 1] = hk;
    p->qshape[nb] = l, p->qshape[nb + 1] = e;
    p->kshape[nb] = s, p->kshape[nb + 1] = e;
    p->vshape[nb] = s, p->vshape[nb + 1] = ev;
    p->q = as_4d(q, p->nd, p->qshape, n, hq);
    p->k = p->q ? as_4d(k, p->nd, p->kshape, n, hk) : NULL;
    p->v = p->k ? as_4d(v, p->nd, p->vshape, n, hk) : NULL;
    if (p->v && mask) {
        if (nb <= 2) { /* at most one leading dim: expand straight to (N, Hq, L, S) */
            int64_t m4[4] = {n, hq, l, s};
            if (mask->ndim > 4 || mask->ndim > p->nd) {
                sdpa_plan_free(p);
                return ampc_set_error(AMPC_E_RUNTIME, "scaled_dot_product_attention: attn_mask %s does not broadcast to "
                                                      "the attention shape", nn_shape(mask, s1, sizeof s1));
            }
            p->mask = ampc_expand(mask, 4, m4);
        } else {
            int64_t ms[AMPC_MAX_DIMS], m4[4] = {n, hq, l, s};
            memcpy(ms, p->qshape, sizeof(int64_t) * (size_t)nb);
            ms[nb] = l, ms[nb + 1] = s;
            ampc_tensor *me = ampc_expand(mask, p->nd, ms);
            p->mask = me ? ampc_reshape(me, 4, m4) : NULL;
            ampc_tensor_decref(me);
        }
        if (!p->mask) {
            sdpa_plan_free(p);
            return ampc_last_status();
        }
    }
    if (!p->v) {
        sdpa_plan_free(p);
        return ampc_last_status();
    }
    return AMPC_OK;
}

/* The Philox words of a dropout: CPU tensors draw the seed from the CPU generator (so
 * get/set_rng_state and manual_seed govern it), CUDA tensors reserve words of their device's. */
static void dropout_words(ampc_device dev, uint64_t n, uint64_t *seed, uint64_t *offset) {
    if (dev.type == AMPC_CPU) {
        *seed = ampc_mt_random64(ampc_cpu_generator_default());
        *offset = 0;
    } else {
        ampc_philox_reserve(dev, n, seed, offset);
    }
}

ampc_tensor *ampc_scaled_dot_product_attention(const ampc_tensor *query, const ampc_tensor *key,
                                               const ampc_tensor *value, const ampc_tensor *attn_mask,
                                               double dropout_p, bool is_causal, double scale, bool enable_gqa) {
    ampc_autocast_scope ac;
    int acr = ampc_autocast_enter(AMPC_OP_SCALED_DOT_PRODUCT_ATTENTION, 4,
                                  (const ampc_tensor *[]){query, key, value, attn_mask}, false, &ac);
    if (acr)
        return acr < 0 ? NULL
                       : ampc_autocast_exit(&ac, ampc_scaled_dot_product_attention(ac.t[0], ac.t[1], ac.t[2], ac.t[3],
                                                                                  dropout_p, is_causal, scale,
                                                                                  enable_gqa));
    if (attn_mask && is_causal) {
        ampc_set_error(AMPC_E_RUNTIME, "_scaled_dot_product_attention: Explicit attn_mask should not be set when is_causal=True");
        return NULL;
    }
    if (!(dropout_p >= 0 && dropout_p <= 1)) {
        ampc_set_error(AMPC_E_RUNTIME, "dropout probability has to be between 0 and 1, but got %g", dropout_p);
        return NULL;
    }
    bool grad_mode = ampc_grad_mode_pause(); /* the expands and copies below record nothing */
    sdpa_plan p;
    ampc_status st = sdpa_prepare(query, key, value, attn_mask, enable_gqa, &p);
    if (st != AMPC_OK) {
        ampc_grad_mode_restore(grad_mode);
        return NULL;
    }
    if (isnan(scale)) scale = 1.0 / sqrt((double)query->shape[query->ndim - 1]);
    const int64_t l = p.q->shape[2], s = p.k->shape[2], ev = p.v->shape[3];
    int64_t o4[4] = {p.n, p.hq, l, ev}, l3[3] = {p.n, p.hq, l};
    ampc_tensor *out4 = ampc_empty(4, o4, query->dtype, query->device);
    ampc_tensor *lse = out4 ? ampc_empty(3, l3, nn_stats_dtype(query->dtype), query->device) : NULL, *out = NULL;
    ampc_sdpa_flash_args a = {.out = out4, .lse = lse, .q = p.q, .k = p.k, .v = p.v, .mask = p.mask,
                              .scale = scale, .is_causal = is_causal, .dropout_p = dropout_p};
    st = lse ? AMPC_OK : ampc_last_status();
    if (st == AMPC_OK && dropout_p > 0) dropout_words(query->device, (uint64_t)(p.n * p.hq * l * s), &a.seed, &a.offset);
    if (st == AMPC_OK && ampc_numel(out4) > 0) st = ampc_dispatch_sdpa_flash(AMPC_OP_SDPA_FLASH, &a);
    if (st == AMPC_OK) {
        int64_t oshape[AMPC_MAX_DIMS];
        memcpy(oshape, p.qshape, sizeof(int64_t) * (size_t)p.nd);
        oshape[p.nd - 1] = ev;
        out = nn_reshape_view(out4, p.nd, oshape);
    }
    ampc_grad_mode_restore(grad_mode);
    const ampc_tensor *inputs[3] = {query, key, value};
    if (out && ampc_any_requires_grad(3, inputs)) {
        ampc_node_attrs attrs;
        memset(&attrs, 0, sizeof attrs);
        attrs.scalars[0] = ampc_scalar_float(scale);
        attrs.scalars[1] = ampc_scalar_float(dropout_p);
        attrs.ints[0] = is_causal, attrs.ints[1] = enable_gqa;
        attrs.ints[2] = (int64_t)a.seed, attrs.ints[3] = (int64_t)a.offset, attrs.n_ints = 4;
        /* the mask gets no grad: PyTorch users give attn_mask as data */
        const ampc_tensor *saved[6] = {query, key, value, out4, lse, attn_mask};
        if (!ampc_autograd_record(&sdpa_rule, 3, inputs, 1, &out, attn_mask ? 6 : 5, saved, &attrs))
            out = (ampc_tensor_decref(out), NULL);
    }
    sdpa_plan_free(&p);
    ampc_tensor_decref(out4), ampc_tensor_decref(lse);
    return out;
}

static ampc_status sdpa_rule_fn(ampc_node *node, ampc_tensor *const *grads, ampc_tensor **grad_inputs) {
    const ampc_tensor *saved[6];
    AMPC_TRY(nn_rule_saved(node, 6, saved));
    if (!grads[0]) return AMPC_OK;
    const ampc_tensor *q = saved[0], *k = saved[1], *v = saved[2], *out4 = saved[3], *lse = saved[4], *mask = saved[5];
    sdpa_plan p;
    AMPC_TRY(sdpa_prepare(q, k, v, mask, node->attrs.ints[1] != 0, &p));
    ampc_tensor *gc = ampc_contiguous(grads[0]);
    ampc_tensor *go = gc ? nn_reshape_view(gc, 4, out4->shape) : NULL;
    ampc_tensor *dq = go ? ampc_empty(4, p.q->shape, q->dtype, q->device) : NULL;
    ampc_tensor *dk = dq ? ampc_empty(4, p.k->shape, q->dtype, q->device) : NULL;
    ampc_tensor *dv = dk ? ampc_empty(4, p.v->shape, q->dtype, q->device) : NULL;
    ampc_status st = dv ? AMPC_OK : ampc_last_status();
    if (st == AMPC_OK && ampc_numel(dq) + ampc_numel(dk) + ampc_numel(dv) > 0) {
        ampc_sdpa_flash_backward_args a = {
            .grad_q = dq, .grad_k = dk, .grad_v = dv, .grad_out = go, .q = p.q, .k = p.k, .v = p.v, .out = out4,
            .lse = lse, .mask = p.mask, .scale = ampc_scalar_to_double(node->attrs.scalars[0]),
            .is_causal = node->attrs.ints[0] != 0, .dropout_p = ampc_scalar_to_double(node->attrs.scalars[1]),
            .seed = (uint64_t)node->attrs.ints[2], .offset = (uint64_t)node->attrs.ints[3]};
        st = ampc_dispatch_sdpa_flash_backward(AMPC_OP_SDPA_FLASH_BACKWARD, &a);
    }
    const ampc_tensor *orig[3] = {q, k, v};
    ampc_tensor *g4[3] = {dq, dk, dv};
    const int64_t *shapes[3] = {p.qshape, p.kshape, p.vshape};
    for (int i = 0; i < 3 && st == AMPC_OK; i++) {
        if (!node->needs_input_grad[i]) continue;
        ampc_tensor *g = nn_reshape_view(g4[i], p.nd, shapes[i]);
        grad_inputs[i] = g ? nn_sum_to(g, orig[i]->ndim, orig[i]->shape) : NULL;
        if (!grad_inputs[i]) st = ampc_last_status();
        ampc_tensor_decref(g);
    }
    ampc_tensor *tmp[5] = {gc, go, dq, dk, dv};
    nn_release(5, tmp);
    sdpa_plan_free(&p);
    return st;
}
