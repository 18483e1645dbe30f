/* derivatives.h: the gradient rules of the foundation ops (derivatives_*.c) and what the
 * frontends call to record them.
 *
 * Two parts:
 *  - ampc_ad_record_*: one call per differentiable frontend, made right after it computed its
 *    outputs and only when ampc_any_requires_grad() said so. Each picks the rule, the tensors to
 *    save and the attributes, and calls ampc_autograd_record. Keeping this here (next to the
 *    rules) means a frontend carries one small block and a rule's needs stay in one file.
 *  - ad_*: helpers for writing rules as expressions. Each takes ownership of its tensor
 *    arguments (pass ad_ref(x) to keep your own reference), returns a new reference, and
 *    propagates NULL: if an argument is NULL (an earlier op failed) it releases the others and
 *    returns NULL, so a rule is one expression per input and one check at the end:
 *        if (n->needs_input_grad[0]) gi[0] = ad_mul(ad_ref(go[0]), ad_saved(n, 1)); // d(a*b)/da = b
 *        return ad_done(n, gi);
 *    Every helper goes through a recording frontend, so rules are differentiable themselves
 *    (create_graph gives second order).
 *    C leaves the order of argument evaluation open: never consume a tensor in one argument and
 *    read or ad_ref it in another argument of the same call; take the extra reference in a
 *    statement of its own first. */
#ifndef AMPC_DERIVATIVES_H
#define AMPC_DERIVATIVES_H

#include "autograd.h"
#include "ops.h"

/* ------------------------------------------------------------------ recording entry points */

/* elementwise (derivatives_elementwise.c). params: clamp's bounds, the two parameters of a
 * BIND_PARAMS2 row, the approximation mode of AMPC_OP_GELU (INT 0 exact / 1 tanh); NULL otherwise. Also valid for the in-place unary
 * ops (out == a, recorded after the op: the rules that need the input save the output). */
ampc_status ampc_ad_record_unary(ampc_op op, const ampc_tensor *a, ampc_tensor *out, const ampc_scalar *params);
ampc_status ampc_ad_record_binary(ampc_op op, const ampc_tensor *a, const ampc_tensor *b, ampc_scalar alpha,
                                  ampc_tensor *out);
/* In-place a op= b, recorded after the op. `a_before` is a copy of a's old value when the rule
 * reads it (mul_, div_, ... with b requiring grad; ampc_ad_binary_ makes it), else NULL. `a` is
 * input 0 and the output. */
/* div with a rounding mode (out may be a, in place): a node of zero grads, as torch. */
ampc_status ampc_ad_record_div_mode(const ampc_tensor *a, const ampc_tensor *b, ampc_tensor *out);
ampc_status ampc_ad_record_binary_(ampc_op op, const ampc_tensor *a_before, ampc_tensor *a, const ampc_tensor *b,
                                   ampc_scalar alpha);
/* In-place unary ops: a_before is a copy of a's old value when the rule reads the input, which
 * the op overwrites (abs_, sin_, clamp_, ...; ampc_ad_unary_ makes it), else NULL. */
ampc_status ampc_ad_record_unary_(ampc_op op, const ampc_tensor *a_before, ampc_tensor *a, const ampc_scalar *params);
ampc_status ampc_ad_record_where(const ampc_tensor *cond, const ampc_tensor *a, const ampc_tensor *b,
                                 ampc_tensor *out);
/* dtype/device conversion (ToCopyBackward0) */
ampc_status ampc_ad_record_to(const ampc_tensor *a, ampc_tensor *out);

/* reductions (derivatives_reduce.c). dims as given to the frontend (n_dims 0: all). */
ampc_status ampc_ad_record_reduce(ampc_op op, const ampc_tensor *a, int n_dims, const int64_t *dims, bool keepdim,
                                  ampc_tensor *out);
ampc_status ampc_ad_record_var(const ampc_tensor *a, int n_dims, const int64_t *dims, double correction,
                               bool keepdim, bool take_sqrt, ampc_tensor *out);
ampc_status ampc_ad_record_norm(const ampc_tensor *a, double p, int n_dims, const int64_t *dims, bool keepdim,
                                ampc_tensor *out);
ampc_status ampc_ad_record_max_min_dim(ampc_op op, const ampc_tensor *a, int64_t dim, bool keepdim,
                                       ampc_tensor *values, ampc_tensor *indices);
ampc_status ampc_ad_record_cumsum(const ampc_tensor *a, int64_t dim, ampc_tensor *out);
/* issue 12's scans (derivatives_scan.c); dim wrapped */
ampc_status ampc_ad_record_cumprod(const ampc_tensor *a, int64_t dim, ampc_tensor *out);
ampc_status ampc_ad_record_logcumsumexp(const ampc_tensor *a, int64_t dim, ampc_tensor *out);
ampc_status ampc_ad_record_cummax_cummin(ampc_op op, const ampc_tensor *a, int64_t dim, ampc_tensor *values,
                                         ampc_tensor *indices);

/* matrix work (derivatives_linalg.c); matmul covers dot, mv and the broadcast batched cases. */
ampc_status ampc_ad_record_mm(const ampc_tensor *a, const ampc_tensor *b, ampc_tensor *out);
ampc_status ampc_ad_record_bmm(const ampc_tensor *a, const ampc_tensor *b, ampc_tensor *out);
ampc_status ampc_ad_record_matmul(const ampc_tensor *a, const ampc_tensor *b, ampc_tensor *out);
ampc_status ampc_ad_record_addmm(const ampc_tensor *c, const ampc_tensor *a, const ampc_tensor *b, double beta,
                                 double alpha, ampc_tensor *out);
ampc_status ampc_ad_record_baddbmm(const ampc_tensor *c, const ampc_tensor *a, const ampc_tensor *b, double beta,
                                   double alpha, ampc_tensor *out);

/* indexing and joining (derivatives_index.c) */
ampc_status ampc_ad_record_index_select(const ampc_tensor *a, int64_t dim, const ampc_tensor *index, ampc_tensor *out);
ampc_status ampc_ad_record_gather(const ampc_tensor *a, int64_t dim, const ampc_tensor *index, ampc_tensor *out);
/* out = a with src added at index (out == a for the in-place forms) */
ampc_status ampc_ad_record_scatter_add(const ampc_tensor *a, int64_t dim, const ampc_tensor *index,
                                       const ampc_tensor *src, ampc_tensor *out);
ampc_status ampc_ad_record_index_add(const ampc_tensor *a, int64_t dim, const ampc_tensor *index,
                                     const ampc_tensor *src, double alpha, ampc_tensor *out);
ampc_status ampc_ad_record_index(const ampc_tensor *a, int n_idx, const ampc_tensor *const *indices, ampc_tensor *out);
/* in place: a[indices] = values (or += with accumulate) */
ampc_status ampc_ad_record_index_put_(ampc_tensor *a, int n_idx, const ampc_tensor *const *indices,
                                      const ampc_tensor *values, bool accumulate);
/* out = a with value where mask (out == a for masked_fill_) */
ampc_status ampc_ad_record_masked_fill(const ampc_tensor *a, const ampc_tensor *mask, ampc_tensor *out);
ampc_status ampc_ad_record_cat(int n, const ampc_tensor *const *ts, int64_t dim, ampc_tensor *out);
ampc_status ampc_ad_record_stack(int n, const ampc_tensor *const *ts, int64_t dim, ampc_tensor *out);
/* split / split_with_sizes / chunk (pieces along dim) and unbind (selects along dim) */
ampc_status ampc_ad_record_split(const ampc_tensor *a, int64_t dim, bool unbind, int64_t n, ampc_tensor *const *outs);

/* shape and index ops of issue 12 (derivatives_shape_ops.c): the node of op (TRIL ... INDEX_FILL)
 * with op's attributes (see each frontend); saved: the index of scatter/index_copy/index_fill */
ampc_status ampc_ad_record_shape_op(ampc_op op, int n_inputs, const ampc_tensor *const *inputs, ampc_tensor *out,
                                    int n_saved, const ampc_tensor *const *saved, const ampc_node_attrs *at);
/* views and copies (derivatives_shape.c) */
typedef enum ampc_ad_view_kind {
    AMPC_AD_VIEW,         /* view / reshape as a view / flatten: ViewBackward0 */
    AMPC_AD_RESHAPE_COPY, /* reshape that had to copy: UnsafeViewBackward0 */
    AMPC_AD_SQUEEZE,      /* SqueezeBackward0 */
    AMPC_AD_UNSQUEEZE,    /* UnsqueezeBackward0 */
    AMPC_AD_EXPAND,       /* ExpandBackward0 */
    AMPC_AD_PERMUTE,      /* ints: the permutation */
    AMPC_AD_TRANSPOSE,    /* ints: dim0, dim1 */
    AMPC_AD_T,            /* t(): TBackward0 */
    AMPC_AD_SLICE,        /* ints: dim, start, step (start already clamped) */
    AMPC_AD_SELECT,       /* ints: dim, index (index already wrapped) */
    AMPC_AD_CLONE,        /* clone / contiguous: CloneBackward0 */
    AMPC_AD_ALIAS,        /* view_as / alias: AliasBackward0 */
} ampc_ad_view_kind;
ampc_status ampc_ad_record_view(ampc_ad_view_kind kind, const ampc_tensor *a, ampc_tensor *out, int n_ints,
                                const int64_t *ints);

/* Differentiable helpers the rules share (derivatives_shape.c): zeros of `shape` with g written
 * into the slice / select of dim (the backward of slice and select; recorded, so slicing again
 * is their own backward). */
ampc_tensor *ampc_ad_slice_backward(const ampc_tensor *g, int ndim, const int64_t *shape, int64_t dim, int64_t start,
                                    int64_t step);
ampc_tensor *ampc_ad_select_backward(const ampc_tensor *g, int ndim, const int64_t *shape, int64_t dim,
                                     int64_t index);
/* A differentiable clone (AccumulateGrad's first gradient under create_graph). */
ampc_tensor *ampc_ad_clone(const ampc_tensor *t);

/* ------------------------------------------------------------------ frontends' recording path
 *
 * Where a frontend is built from other frontends (views, casts, copies), it hands the call over
 * when an input requires grad:
 *     if (ampc_any_requires_grad(2, (const ampc_tensor *[]){a, b})) return ampc_ad_binary(op, a, b, alpha);
 * and ampc_ad_<frontend> (same arguments) calls it again with recording paused, so what it does
 * inside records nothing, then records the op's one node. In-place forms first check the leaf
 * rules and keep a copy of the old value when the rule needs it. (reduce.c, linalg.c and most of
 * index.c call the ampc_ad_record_* functions above directly instead.) */

/* elementwise.c */
ampc_tensor *ampc_ad_unary(ampc_op op, const ampc_tensor *a);
ampc_tensor *ampc_ad_gelu(const ampc_tensor *a, bool tanh_approximation);
ampc_tensor *ampc_ad_elementwise_params(ampc_op op, const ampc_tensor *a, const ampc_tensor *b, ampc_scalar p0,
                                        ampc_scalar p1);
ampc_status ampc_ad_elementwise_params_(ampc_op op, ampc_tensor *a, ampc_scalar p0, ampc_scalar p1);
ampc_tensor *ampc_ad_clamp(const ampc_tensor *a, ampc_scalar min, ampc_scalar max);
ampc_tensor *ampc_ad_binary(ampc_op op, const ampc_tensor *a, const ampc_tensor *b, ampc_scalar alpha);
ampc_tensor *ampc_ad_where(const ampc_tensor *cond, const ampc_tensor *a, const ampc_tensor *b);
ampc_status ampc_ad_binary_(ampc_op op, ampc_tensor *a, const ampc_tensor *b, ampc_scalar alpha);
ampc_status ampc_ad_unary_(ampc_op op, ampc_tensor *a);
ampc_status ampc_ad_clamp_(ampc_tensor *a, ampc_scalar min, ampc_scalar max);
/* index.c */
ampc_tensor *ampc_ad_cat(int n, const ampc_tensor *const *ts, int64_t dim);
ampc_tensor *ampc_ad_stack(int n, const ampc_tensor *const *ts, int64_t dim);
/* The attrs of an elementwise node that reruns its op: attrs.ints[1] the op, scalars its p0, p1. */
static inline ampc_node_attrs ad_op_attrs(ampc_op op, const ampc_scalar *p) {
    ampc_node_attrs at = {0};
    at.ints[1] = op;
    at.n_ints = 2;
    at.scalars[0] = p[0];
    at.scalars[1] = p[1];
    return at;
}

/* derivatives_act_backward.c: the grads of the fused activation-backward rows (gelu_backward, ...) */
const ampc_grad_rule *ampc_ad_act_backward_rule(ampc_op op);
/* The double backward both activation families share (slot 0 the grad g, slot 1 x): the grad of
 * the grad input is op(ggx, x), that of g is ggx * g * d2_of(op, x), in fp32 for fp16/bf16. */
typedef ampc_tensor *(*ampc_act_second_derivative)(ampc_op op, ampc_tensor *x, ampc_scalar p0, ampc_scalar p1);
ampc_status ampc_ad_act_double_backward(ampc_node *n, ampc_tensor *const *go, ampc_tensor **gi,
                                        ampc_act_second_derivative d2_of);
ampc_status ampc_ad_record_act_backward(ampc_op op, const ampc_tensor *g, const ampc_tensor *x, const ampc_scalar *p,
                                        ampc_tensor *out);
/* derivatives_act.c (issue 13): the grads of the non-linear activation backward rows (elu_backward, ...),
 * and prelu's rule */
const ampc_grad_rule *ampc_ad_act_rule(ampc_op op);
const ampc_grad_rule *ampc_ad_prelu_rule(void);

/* tensor.c: views, copies, casts */
ampc_tensor *ampc_ad_view(const ampc_tensor *t, int ndim, const int64_t *shape);
ampc_tensor *ampc_ad_reshape(const ampc_tensor *t, int ndim, const int64_t *shape);
ampc_tensor *ampc_ad_permute(const ampc_tensor *t, int ndim, const int64_t *dims);
ampc_tensor *ampc_ad_transpose(const ampc_tensor *t, int64_t dim0, int64_t dim1);
ampc_tensor *ampc_ad_unsqueeze(const ampc_tensor *t, int64_t dim);
ampc_tensor *ampc_ad_squeeze(const ampc_tensor *t, int ndims, const int64_t *dims);
ampc_tensor *ampc_ad_expand(const ampc_tensor *t, int ndim, const int64_t *shape);
ampc_tensor *ampc_ad_slice(const ampc_tensor *t, int64_t dim, int64_t start, int64_t stop, int64_t step);
ampc_tensor *ampc_ad_select(const ampc_tensor *t, int64_t dim, int64_t index);
ampc_tensor *ampc_ad_alias(const ampc_tensor *t);
ampc_tensor *ampc_ad_to(const ampc_tensor *t, ampc_dtype dtype, ampc_device device, bool copy);
ampc_status ampc_ad_copy_(ampc_tensor *dst, const ampc_tensor *src);
ampc_status ampc_ad_fill_(ampc_tensor *t, ampc_scalar value);

/* ------------------------------------------------------------------ rule-writing helpers */

/* The end of a recording path: out, or NULL (out released) when recording failed. */
static inline ampc_tensor *ad_recorded(ampc_tensor *out, ampc_status st) {
    if (out && st != AMPC_OK) {
        ampc_tensor_decref(out);
        return NULL;
    }
    return out;
}

/* Evaluates `expr` (a frontend call) with recording off. */
#define AD_PAUSED(var, expr)                          \
    do {                                              \
        bool ad_prev_ = ampc_grad_mode_pause();       \
        var = (expr);                                 \
        ampc_grad_mode_restore(ad_prev_);             \
    } while (0)


static inline ampc_tensor *ad_ref(const ampc_tensor *t) {
    if (t) ampc_tensor_incref((ampc_tensor *)t);
    return (ampc_tensor *)t;
}

/* Saved tensor i of n (new reference; NULL with the error set when it was freed or modified). */
static inline ampc_tensor *ad_saved(ampc_node *n, int i) { return ad_ref(ampc_node_saved(n, i)); }

/* Releases both (either may be NULL) and returns r: for helpers that consumed a and b. */
static inline ampc_tensor *ad_release2(ampc_tensor *r, ampc_tensor *a, ampc_tensor *b) {
    ampc_tensor_decref(a);
    ampc_tensor_decref(b);
    return r;
}

static inline ampc_tensor *ad_bin(ampc_op op, ampc_tensor *a, ampc_tensor *b) {
    if (!a || !b) return ad_release2(NULL, a, b);
    return ad_release2(ampc_binary(op, a, b, ampc_scalar_none()), a, b);
}
static inline ampc_tensor *ad_add(ampc_tensor *a, ampc_tensor *b) { return ad_bin(AMPC_OP_ADD, a, b); }
static inline ampc_tensor *ad_sub(ampc_tensor *a, ampc_tensor *b) { return ad_bin(AMPC_OP_SUB, a, b); }
static inline ampc_tensor *ad_mul(ampc_tensor *a, ampc_tensor *b) { return ad_bin(AMPC_OP_MUL, a, b); }
static inline ampc_tensor *ad_div(ampc_tensor *a, ampc_tensor *b) { return ad_bin(AMPC_OP_DIV, a, b); }

static inline ampc_tensor *ad_un(ampc_op op, ampc_tensor *a) {
    if (!a) return NULL;
    return ad_release2(ampc_unary(op, a), a, NULL);
}

/* A Python-number-like scalar on a's device: in arithmetic it keeps a's dtype. */
static inline ampc_tensor *ad_num(double v, const ampc_tensor *like) {
    return like ? ampc_wrap_scalar(ampc_scalar_float(v), like->device) : NULL;
}
/* a * s, a + s, s - a */
static inline ampc_tensor *ad_scale(ampc_tensor *a, double s) { return a ? ad_mul(a, ad_num(s, a)) : NULL; }
static inline ampc_tensor *ad_adds(ampc_tensor *a, double s) { return a ? ad_add(a, ad_num(s, a)) : NULL; }
static inline ampc_tensor *ad_rsubs(double s, ampc_tensor *a) { return a ? ad_sub(ad_num(s, a), a) : NULL; }
/* a (op) s for comparisons: a bool tensor */
static inline ampc_tensor *ad_cmps(ampc_op op, ampc_tensor *a, double s) { return a ? ad_bin(op, a, ad_num(s, a)) : NULL; }

/* a converted to dtype dt (a recorded copy, so double backward flows through it). */
static inline ampc_tensor *ad_to(ampc_tensor *a, ampc_dtype dt) {
    if (!a) return NULL;
    return ad_release2(ampc_to(a, dt, a->device, false), a, NULL);
}

/* A bool mask as 0/1 in dtype dt (multiplying by it keeps the grad's dtype). */
static inline ampc_tensor *ad_mask(ampc_tensor *mask, ampc_dtype dt) {
    return ad_to(mask, dt);
}

static inline ampc_tensor *ad_where(ampc_tensor *cond, ampc_tensor *a, ampc_tensor *b) {
    if (!cond || !a || !b) {
        ampc_tensor_decref(cond);
        return ad_release2(NULL, a, b);
    }
    ampc_tensor *r = ampc_where(cond, a, b);
    ampc_tensor_decref(cond);
    return ad_release2(r, a, b);
}

static inline ampc_tensor *ad_reshape(ampc_tensor *a, int ndim, const int64_t *shape) {
    if (!a) return NULL;
    return ad_release2(ampc_reshape(a, ndim, shape), a, NULL);
}
static inline ampc_tensor *ad_expand(ampc_tensor *a, int ndim, const int64_t *shape) {
    if (!a) return NULL;
    return ad_release2(ampc_expand(a, ndim, shape), a, NULL);
}
static inline ampc_tensor *ad_transpose(ampc_tensor *a, int64_t d0, int64_t d1) {
    if (!a) return NULL;
    return ad_release2(ampc_transpose(a, d0, d1), a, NULL);
}
static inline ampc_tensor *ad_sum(ampc_tensor *a, int n_dims, const int64_t *dims, bool keepdim) {
    if (!a) return NULL;
    return ad_release2(ampc_reduce(AMPC_OP_SUM, a, n_dims, dims, keepdim, AMPC_DTYPE_UNDEFINED), a, NULL);
}
static inline ampc_tensor *ad_matmul(ampc_tensor *a, ampc_tensor *b) {
    if (!a || !b) return ad_release2(NULL, a, b);
    return ad_release2(ampc_matmul(a, b), a, b);
}

/* Zeros shaped like input j of n (or output k with ad_zeros_out). */
static inline ampc_tensor *ad_zeros_in(const ampc_node *n, int j) {
    return ampc_zeros(n->in_ndim[j], n->in_shape[j], n->in_dtype[j], n->in_device[j]);
}

/* The end of a rule: AMPC_OK when every input that needs a grad got one, else the error the
 * failing op recorded. */
static inline ampc_status ad_done(const ampc_node *n, ampc_tensor **gi) {
    for (int j = 0; j < n->n_inputs; j++)
        if (n->needs_input_grad[j] && !gi[j]) {
            ampc_status st = ampc_last_status();
            return st != AMPC_OK ? st : ampc_set_error(AMPC_E_RUNTIME, "%s: gradient computation failed", ampc_node_name(n));
        }
    return AMPC_OK;
}

/* Reduction dims as a mask over an ndim-dim input (attrs.ints[0..n_ints), none = all). */
static inline void ad_reduced_mask(const ampc_node *n, int ndim, bool *mask) {
    for (int d = 0; d < ndim; d++) mask[d] = n->attrs.n_ints == 0;
    for (int i = 0; i < n->attrs.n_ints; i++) {
        int64_t d = n->attrs.ints[i];
        if (d < 0) d += ndim;
        if (d >= 0 && d < ndim) mask[d] = true;
    }
}

#endif
