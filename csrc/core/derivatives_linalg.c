/* derivatives_linalg.c: gradient rules of the matrix ops (mm, bmm, matmul with its 1-D and
 * broadcast-batch cases, addmm, baddbmm) and the calls linalg.c makes to record them.
 *
 * For C = A @ B: dA = dC @ B^T and dB = A^T @ dC. Transposes are views (the GEMM kernel reads
 * any strides), so a backward costs exactly two GEMMs. Saved: slot 0 A (only when B needs a
 * grad), slot 1 B (only when A needs one), so a frozen weight does not keep activations alive. */
#include <string.h>

#include "derivatives.h"

#define G ad_ref(go[0])

static ampc_tensor *ad_mm(ampc_tensor *a, ampc_tensor *b) {
    if (!a || !b) return ad_release2(NULL, a, b);
    return ad_release2(ampc_mm(a, b), a, b);
}

static ampc_tensor *ad_bmm(ampc_tensor *a, ampc_tensor *b) {
    if (!a || !b) return ad_release2(NULL, a, b);
    return ad_release2(ampc_bmm(a, b), a, b);
}

static ampc_tensor *scaled(ampc_tensor *t, double s) { return s == 1.0 ? t : ad_scale(t, s); }

/* mm, addmm (inputs: [c,] a, b at offset `o`; attrs.scalars[0] alpha, [1] beta) */
static ampc_status mm_family_backward(ampc_node *n, ampc_tensor *const *go, ampc_tensor **gi, int o, bool batched) {
    double alpha = n->attrs.scalars[0].kind == AMPC_SCALAR_NONE ? 1.0 : ampc_scalar_to_double(n->attrs.scalars[0]);
    double beta = n->attrs.scalars[1].kind == AMPC_SCALAR_NONE ? 1.0 : ampc_scalar_to_double(n->attrs.scalars[1]);
    int r = batched ? 1 : 0; /* the first matrix dim */
    if (o && n->needs_input_grad[0]) gi[0] = scaled(G, beta); /* d(beta c)/dc = beta (summed to c's shape) */
    if (n->needs_input_grad[o]) { /* dA = alpha dC B^T */
        ampc_tensor *bt = ad_transpose(ad_saved(n, 1), r, r + 1);
        gi[o] = scaled(batched ? ad_bmm(G, bt) : ad_mm(G, bt), alpha);
    }
    if (n->needs_input_grad[o + 1]) { /* dB = alpha A^T dC */
        if (!batched && n->attrs.n_ints > 0 && n->attrs.ints[0]) {
            /* B was a transposed view (linear's weight.t()): form dB as (dC^T A)^T, a transposed view
             * of a contiguous result, so TransposeBackward hands the weight a contiguous grad and
             * AccumulateGrad never adds through a column-major layout (PyTorch's mm_mat2_backward). */
            ampc_tensor *gt = ad_transpose(G, 0, 1);
            ampc_tensor *p = ad_mm(gt, ad_saved(n, 0));
            gi[o + 1] = scaled(ad_transpose(p, 0, 1), alpha);
        } else {
            ampc_tensor *at = ad_transpose(ad_saved(n, 0), r, r + 1);
            gi[o + 1] = scaled(batched ? ad_bmm(at, G) : ad_mm(at, G), alpha);
        }
    }
    return ad_done(n, gi);
}

static ampc_status mm_backward(ampc_node *n, ampc_tensor *const *go, ampc_tensor **gi) {
    return mm_family_backward(n, go, gi, 0, false);
}
static ampc_status bmm_backward(ampc_node *n, ampc_tensor *const *go, ampc_tensor **gi) {
    return mm_family_backward(n, go, gi, 0, true);
}
static ampc_status addmm_backward(ampc_node *n, ampc_tensor *const *go, ampc_tensor **gi) {
    return mm_family_backward(n, go, gi, 1, false);
}
static ampc_status baddbmm_backward(ampc_node *n, ampc_tensor *const *go, ampc_tensor **gi) {
    return mm_family_backward(n, go, gi, 1, true);
}

/* matmul with NumPy's rules: 1-D operands act as (1, k) / (k, 1) and batch dims broadcast.
 * dA = sum over A's broadcast batch dims of dC @ B^T, dB likewise with A^T @ dC. */
static ampc_status matmul_backward(ampc_node *n, ampc_tensor *const *go, ampc_tensor **gi) {
    int da = n->in_ndim[0], db = n->in_ndim[1];
    const int64_t *as = n->in_shape[0], *bs = n->in_shape[1];
    int64_t nrows = da > 1 ? as[da - 2] : 1, ncols = db > 1 ? bs[db - 1] : 1;
    /* dC with the dims the 1-D operands dropped put back: (*batch, n, m) */
    const ampc_tensor *g = go[0];
    int nbatch = g->ndim - (da > 1) - (db > 1);
    int64_t gshape[AMPC_MAX_DIMS];
    for (int i = 0; i < nbatch; i++) gshape[i] = g->shape[i];
    gshape[nbatch] = nrows;
    gshape[nbatch + 1] = ncols;
    ampc_tensor *g2 = ad_reshape(G, nbatch + 2, gshape);
    /* the operands as matrices */
    int64_t a2shape[AMPC_MAX_DIMS], b2shape[AMPC_MAX_DIMS];
    int a2nd = da > 1 ? da : 2, b2nd = db > 1 ? db : 2;
    if (da > 1) memcpy(a2shape, as, sizeof(int64_t) * (size_t)da);
    else a2shape[0] = 1, a2shape[1] = as[0];
    if (db > 1) memcpy(b2shape, bs, sizeof(int64_t) * (size_t)db);
    else b2shape[0] = bs[0], b2shape[1] = 1;
    if (n->needs_input_grad[0]) {
        ampc_tensor *b2 = ad_reshape(ad_saved(n, 1), b2nd, b2shape);
        ampc_tensor *full = ad_matmul(ad_ref(g2), ad_transpose(b2, -1, -2)); /* (*batch, n, k) */
        ampc_tensor *summed = full ? ampc_sum_to_shape(full, a2nd, a2shape) : NULL;
        ampc_tensor_decref(full);
        gi[0] = ad_reshape(summed, da, as);
    }
    if (n->needs_input_grad[1]) {
        ampc_tensor *a2 = ad_reshape(ad_saved(n, 0), a2nd, a2shape);
        ampc_tensor *full = ad_matmul(ad_transpose(a2, -1, -2), ad_ref(g2)); /* (*batch, k, m) */
        ampc_tensor *summed = full ? ampc_sum_to_shape(full, b2nd, b2shape) : NULL;
        ampc_tensor_decref(full);
        gi[1] = ad_reshape(summed, db, bs);
    }
    ampc_tensor_decref(g2);
    return ad_done(n, gi);
}

static const ampc_grad_rule mm_rule = {"MmBackward0", mm_backward}, bmm_rule = {"BmmBackward0", bmm_backward},
                            addmm_rule = {"AddmmBackward0", addmm_backward},
                            baddbmm_rule = {"BaddbmmBackward0", baddbmm_backward},
                            dot_rule = {"DotBackward0", matmul_backward}, mv_rule = {"MvBackward0", matmul_backward},
                            matmul_rule = {"MmBackward0", matmul_backward},
                            batched_matmul_rule = {"UnsafeViewBackward0", matmul_backward};

/* Records `rule` over [c,] a, b saving a only when b needs a grad and b only when a does. */
static ampc_status record_mm_like(const ampc_grad_rule *rule, const ampc_tensor *c, const ampc_tensor *a,
                                  const ampc_tensor *b, double beta, double alpha, ampc_tensor *out) {
    if (!ampc_dtype_is_floating(out->dtype)) return AMPC_OK;
    ampc_node_attrs at = {0};
    at.scalars[0] = ampc_scalar_float(alpha);
    at.scalars[1] = ampc_scalar_float(beta);
    /* whether b is a column-major (transposed) 2-D view: its grad is then formed in that layout */
    at.ints[0] = b->ndim == 2 && b->shape[0] > 1 && b->shape[1] > 1 && b->strides[0] == 1 && b->strides[1] != 1;
    at.n_ints = 1;
    const ampc_tensor *ins[3] = {c, a, b};
    const ampc_tensor *saved[2] = {b->requires_grad ? a : NULL, a->requires_grad ? b : NULL};
    int o = c ? 0 : 1;
    return ampc_autograd_record(rule, 3 - o, ins + o, 1, &out, 2, saved, &at) ? AMPC_OK : ampc_last_status();
}

ampc_status ampc_ad_record_mm(const ampc_tensor *a, const ampc_tensor *b, ampc_tensor *out) {
    return record_mm_like(&mm_rule, NULL, a, b, 0.0, 1.0, out);
}

ampc_status ampc_ad_record_bmm(const ampc_tensor *a, const ampc_tensor *b, ampc_tensor *out) {
    return record_mm_like(&bmm_rule, NULL, a, b, 0.0, 1.0, out);
}

ampc_status ampc_ad_record_matmul(const ampc_tensor *a, const ampc_tensor *b, ampc_tensor *out) {
    const ampc_grad_rule *rule = a->ndim == 1 && b->ndim == 1   ? &dot_rule
                                 : a->ndim == 2 && b->ndim == 1 ? &mv_rule
                                 : a->ndim <= 2 && b->ndim <= 2 ? &matmul_rule
                                                                : &batched_matmul_rule;
    return record_mm_like(rule, NULL, a, b, 0.0, 1.0, out);
}

ampc_status ampc_ad_record_addmm(const ampc_tensor *c, const ampc_tensor *a, const ampc_tensor *b, double beta,
                                 double alpha, ampc_tensor *out) {
    return record_mm_like(&addmm_rule, c, a, b, beta, alpha, out);
}

ampc_status ampc_ad_record_baddbmm(const ampc_tensor *c, const ampc_tensor *a, const ampc_tensor *b, double beta,
                                   double alpha, ampc_tensor *out) {
    return record_mm_like(&baddbmm_rule, c, a, b, beta, alpha, out);
}
