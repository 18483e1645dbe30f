/* linalg.c: frontends of the matrix ops: mm, bmm, matmul (NumPy rules), addmm, baddbmm, dot, mv.
 *
 * Each checks ranks, shapes and dtypes with PyTorch's messages, brings its operands to the one
 * form the GEMM kernel takes (ops.def): A (*batch, n, k) @ B (*batch, k, m) with equal batch
 * dims, by views only (unsqueeze for 1-D operands, expand for broadcast batch dims, so a
 * broadcast operand has batch stride 0 and transposed operands keep their strides), allocates
 * a contiguous C and dispatches once. Results are fresh tensors, never views. Under autocast
 * (autocast.h) the ops in its lower-precision list rerun themselves on the cast inputs first;
 * with an input that requires grad each records one node (derivatives_linalg.c). */
#include <string.h>

#include "autocast.h"
#include "derivatives.h"
#include "kernel_args.h"
#include "ops.h"

/* ---------------------------------------------------------------- checks */

static ampc_status check_device(const char *op, const ampc_tensor *a, const ampc_tensor *b) {
    if (ampc_device_eq(a->device, b->device)) return AMPC_OK;
    char da[32], db[32];
    return ampc_set_error(AMPC_E_RUNTIME,
                          "%s: Expected all tensors to be on the same device, but found at least two devices, "
                          "%s and %s!",
                          op, ampc_device_str(a->device, da, sizeof da), ampc_device_str(b->device, db, sizeof db));
}

static ampc_status check_operands(const char *op, const ampc_tensor *a, const ampc_tensor *b) {
    AMPC_TRY(check_device(op, a, b));
    if (a->dtype != b->dtype)
        return ampc_set_error(AMPC_E_RUNTIME, "%s: expected m1 and m2 to have the same dtype, but got: %s != %s", op,
                              ampc_dtype_name(a->dtype), ampc_dtype_name(b->dtype));
    return AMPC_OK;
}

static ampc_status check_rank(const char *op, const ampc_tensor *t, int ndim, const char *what) {
    if (t->ndim == ndim) return AMPC_OK;
    if (ndim == 2)
        return ampc_set_error(AMPC_E_RUNTIME, "%s: %s must be a matrix, got %d-D tensor", op, what, t->ndim);
    return ampc_set_error(AMPC_E_RUNTIME, "%s: %s must be a %dD tensor, got %d-D tensor", op, what, ndim, t->ndim);
}

static ampc_status mm_shape_error(const char *op, int64_t n, int64_t k, int64_t k2, int64_t m) {
    return ampc_set_error(AMPC_E_RUNTIME, "%s: mat1 and mat2 shapes cannot be multiplied (%lldx%lld and %lldx%lld)", op,
                          (long long)n, (long long)k, (long long)k2, (long long)m);
}

static ampc_status bmm_shape_error(const char *op, int64_t batch, int64_t k, int64_t batch2, int64_t k2) {
    return ampc_set_error(AMPC_E_RUNTIME,
                          "%s: Expected size for first two dimensions of batch2 tensor to be: [%lld, %lld] but got: "
                          "[%lld, %lld].",
                          op, (long long)batch, (long long)k, (long long)batch2, (long long)k2);
}

static ampc_status mv_shape_error(const char *op, int64_t n, int64_t k, int64_t k2) {
    return ampc_set_error(AMPC_E_RUNTIME, "%s: size mismatch, got input (%lld), mat (%lldx%lld), vec (%lld)", op,
                          (long long)n, (long long)n, (long long)k, (long long)k2);
}

/* ---------------------------------------------------------------- the one dispatch */

/* C (*batch, n, m) = beta * bias + alpha * (a @ b) for a (*batch, n, k), b (*batch, k, m) with
 * equal batch dims; bias NULL or broadcastable to C's shape. */
static ampc_tensor *run_gemm(const char *op, const ampc_tensor *a, const ampc_tensor *b, const ampc_tensor *bias,
                             double beta, double alpha) {
    int nd = a->ndim;
    int64_t shape[AMPC_MAX_DIMS];
    memcpy(shape, a->shape, sizeof(int64_t) * (size_t)(nd - 1));
    shape[nd - 1] = b->shape[nd - 1];
    ampc_tensor *expanded = NULL;
    if (bias) {
        if (check_device(op, bias, a) != AMPC_OK) return NULL;
        expanded = ampc_expand(bias, nd, shape);
        if (!expanded) return NULL;
    }
    ampc_tensor *c = ampc_empty(nd, shape, a->dtype, a->device);
    if (c && ampc_numel(c) > 0) {
        ampc_gemm_args args = {.out = c, .a = a, .b = b, .c = expanded, .alpha = alpha, .beta = beta};
        if (ampc_dispatch_gemm(AMPC_OP_GEMM, &args) != AMPC_OK) {
            ampc_tensor_decref(c);
            c = NULL;
        }
    }
    ampc_tensor_decref(expanded);
    return c;
}

/* The fresh result `c` (contiguous) under another shape of the same numel, as a tensor of its
 * own rather than a view (matmul's folding and 1-D squeezing are not views in PyTorch either).
 * Steals `c`. */
static ampc_tensor *reshape_result(ampc_tensor *c, int ndim, const int64_t *shape) {
    if (!c) return NULL;
    ampc_tensor *r = ampc_tensor_from_storage(c->storage, c->offset, ndim, shape, NULL, c->dtype);
    ampc_tensor_decref(c);
    return r;
}

/* a @ b by one GEMM with its 1-D operands as matrices, a as the row (1, k) and b as the column
 * (k, 1), the result a fresh tensor of shape (ndim, shape): dot, mv and matmul's (k) @ (k, m). */
static ampc_tensor *gemm_vectors(const char *op, const ampc_tensor *a, const ampc_tensor *b, int ndim,
                                 const int64_t *shape) {
    ampc_tensor *a2 = a->ndim == 1 ? ampc_unsqueeze(a, 0) : ampc_alias(a);
    ampc_tensor *b2 = b->ndim == 1 ? ampc_unsqueeze(b, 1) : ampc_alias(b);
    ampc_tensor *c = a2 && b2 ? run_gemm(op, a2, b2, NULL, 0.0, 1.0) : NULL;
    ampc_tensor_decref(a2);
    ampc_tensor_decref(b2);
    return reshape_result(c, ndim, shape);
}

/* Autograd: a frontend computes with grad mode paused, so the views and inner ops it uses
 * record nothing, then records its one node when an input requires grad. */
typedef struct grad_scope {
    bool record, previous;
} grad_scope;

static grad_scope grad_begin(int n, const ampc_tensor *const *inputs) {
    grad_scope g = {ampc_any_requires_grad(n, inputs), ampc_grad_mode_pause()};
    return g;
}

/* Restores grad mode; when recording, keeps `out` only if `record` (its node) succeeded. */
#define GRAD_END(g, out, record_call)                                         \
    do {                                                                      \
        ampc_grad_mode_restore((g).previous);                                 \
        if ((out) && (g).record && (record_call) != AMPC_OK) {                \
            ampc_tensor_decref(out);                                          \
            (out) = NULL;                                                     \
        }                                                                     \
    } while (0)

/* ---------------------------------------------------------------- frontends */

ampc_tensor *ampc_mm(const ampc_tensor *a, const ampc_tensor *b) {
    ampc_autocast_scope ac;
    int acr = ampc_autocast_enter(AMPC_OP_MM, 2, (const ampc_tensor *[]){a, b}, false, &ac);
    if (acr) return acr < 0 ? NULL : ampc_autocast_exit(&ac, ampc_mm(ac.t[0], ac.t[1]));
    if (a->ndim != 2) {
        ampc_set_error(AMPC_E_RUNTIME, "mm: self must be a matrix");
        return NULL;
    }
    if (b->ndim != 2) {
        ampc_set_error(AMPC_E_RUNTIME, "mm: mat2 must be a matrix");
        return NULL;
    }
    if (check_operands("mm", a, b) != AMPC_OK) return NULL;
    if (a->shape[1] != b->shape[0]) {
        mm_shape_error("mm", a->shape[0], a->shape[1], b->shape[0], b->shape[1]);
        return NULL;
    }
    grad_scope g = grad_begin(2, (const ampc_tensor *[]){a, b});
    ampc_tensor *out = run_gemm("mm", a, b, NULL, 0.0, 1.0);
    GRAD_END(g, out, ampc_ad_record_mm(a, b, out));
    return out;
}

ampc_tensor *ampc_bmm(const ampc_tensor *a, const ampc_tensor *b) {
    ampc_autocast_scope ac;
    int acr = ampc_autocast_enter(AMPC_OP_BMM, 2, (const ampc_tensor *[]){a, b}, false, &ac);
    if (acr) return acr < 0 ? NULL : ampc_autocast_exit(&ac, ampc_bmm(ac.t[0], ac.t[1]));
    if (check_rank("bmm", a, 3, "batch1") != AMPC_OK || check_rank("bmm", b, 3, "batch2") != AMPC_OK ||
        check_operands("bmm", a, b) != AMPC_OK)
        return NULL;
    if (b->shape[0] != a->shape[0] || b->shape[1] != a->shape[2]) {
        bmm_shape_error("bmm", a->shape[0], a->shape[2], b->shape[0], b->shape[1]);
        return NULL;
    }
    grad_scope g = grad_begin(2, (const ampc_tensor *[]){a, b});
    ampc_tensor *out = run_gemm("bmm", a, b, NULL, 0.0, 1.0);
    GRAD_END(g, out, ampc_ad_record_bmm(a, b, out));
    return out;
}

ampc_tensor *ampc_addmm(const ampc_tensor *c, const ampc_tensor *a, const ampc_tensor *b, double beta, double alpha) {
    ampc_autocast_scope ac;
    int acr = ampc_autocast_enter(AMPC_OP_ADDMM, 3, (const ampc_tensor *[]){c, a, b}, false, &ac);
    if (acr) return acr < 0 ? NULL : ampc_autocast_exit(&ac, ampc_addmm(ac.t[0], ac.t[1], ac.t[2], beta, alpha));
    if (check_rank("addmm", a, 2, "mat1") != AMPC_OK || check_rank("addmm", b, 2, "mat2") != AMPC_OK ||
        check_operands("addmm", a, b) != AMPC_OK || check_device("addmm", c, a) != AMPC_OK)
        return NULL;
    if (c->dtype != a->dtype) {
        ampc_set_error(AMPC_E_RUNTIME, "addmm: self and mat2 must have the same dtype, but got %s and %s",
                       ampc_dtype_name(c->dtype), ampc_dtype_name(a->dtype));
        return NULL;
    }
    if (a->shape[1] != b->shape[0]) {
        mm_shape_error("addmm", a->shape[0], a->shape[1], b->shape[0], b->shape[1]);
        return NULL;
    }
    grad_scope g = grad_begin(3, (const ampc_tensor *[]){c, a, b});
    ampc_tensor *out = run_gemm("addmm", a, b, c, beta, alpha);
    GRAD_END(g, out, ampc_ad_record_addmm(c, a, b, beta, alpha, out));
    return out;
}

ampc_tensor *ampc_baddbmm(const ampc_tensor *c, const ampc_tensor *a, const ampc_tensor *b, double beta,
                          double alpha) {
    ampc_autocast_scope ac;
    int acr = ampc_autocast_enter(AMPC_OP_BADDBMM, 3, (const ampc_tensor *[]){c, a, b}, false, &ac);
    if (acr) return acr < 0 ? NULL : ampc_autocast_exit(&ac, ampc_baddbmm(ac.t[0], ac.t[1], ac.t[2], beta, alpha));
    if (check_rank("baddbmm", a, 3, "batch1") != AMPC_OK || check_rank("baddbmm", b, 3, "batch2") != AMPC_OK ||
        check_device("baddbmm", a, b) != AMPC_OK || check_device("baddbmm", c, a) != AMPC_OK)
        return NULL;
    if (c->dtype != a->dtype || a->dtype != b->dtype) {
        ampc_set_error(AMPC_E_RUNTIME, "baddbmm: Input dtypes must be the same, got: input %s, batch1: %s, batch2: %s",
                       ampc_dtype_name(c->dtype), ampc_dtype_name(a->dtype), ampc_dtype_name(b->dtype));
        return NULL;
    }
    if (b->shape[0] != a->shape[0] || b->shape[1] != a->shape[2]) {
        bmm_shape_error("baddbmm", a->shape[0], a->shape[2], b->shape[0], b->shape[1]);
        return NULL;
    }
    grad_scope g = grad_begin(3, (const ampc_tensor *[]){c, a, b});
    ampc_tensor *out = run_gemm("baddbmm", a, b, c, beta, alpha);
    GRAD_END(g, out, ampc_ad_record_baddbmm(c, a, b, beta, alpha, out));
    return out;
}

ampc_tensor *ampc_dot(const ampc_tensor *a, const ampc_tensor *b) {
    ampc_autocast_scope ac;
    int acr = ampc_autocast_enter(AMPC_OP_DOT, 2, (const ampc_tensor *[]){a, b}, false, &ac);
    if (acr) return acr < 0 ? NULL : ampc_autocast_exit(&ac, ampc_dot(ac.t[0], ac.t[1]));
    if (a->ndim != 1 || b->ndim != 1) {
        ampc_set_error(AMPC_E_RUNTIME, "dot: 1D tensors expected, but got %dD and %dD tensors", a->ndim, b->ndim);
        return NULL;
    }
    if (check_device("dot", a, b) != AMPC_OK) return NULL;
    if (a->dtype != b->dtype) {
        ampc_set_error(AMPC_E_RUNTIME, "dot: expected both vectors to have same dtype, but found %s and %s",
                       ampc_dtype_name(a->dtype), ampc_dtype_name(b->dtype));
        return NULL;
    }
    if (a->shape[0] != b->shape[0]) {
        ampc_set_error(AMPC_E_RUNTIME,
                       "dot: inconsistent tensor size, expected tensor [%lld] and src [%lld] to have the same number "
                       "of elements, but got %lld and %lld elements respectively",
                       (long long)a->shape[0], (long long)b->shape[0], (long long)a->shape[0], (long long)b->shape[0]);
        return NULL;
    }
    grad_scope g = grad_begin(2, (const ampc_tensor *[]){a, b});
    ampc_tensor *out = gemm_vectors("dot", a, b, 0, NULL); /* (1, k) @ (k, 1) */
    GRAD_END(g, out, ampc_ad_record_matmul(a, b, out)); /* picks DotBackward0 */
    return out;
}

ampc_tensor *ampc_mv(const ampc_tensor *a, const ampc_tensor *v) {
    ampc_autocast_scope ac;
    int acr = ampc_autocast_enter(AMPC_OP_MV, 2, (const ampc_tensor *[]){a, v}, false, &ac);
    if (acr) return acr < 0 ? NULL : ampc_autocast_exit(&ac, ampc_mv(ac.t[0], ac.t[1]));
    if (a->ndim != 2 || v->ndim != 1) {
        ampc_set_error(AMPC_E_RUNTIME, "mv: vector + matrix @ vector expected, got 1, %d, %d", a->ndim, v->ndim);
        return NULL;
    }
    if (check_operands("mv", a, v) != AMPC_OK) return NULL;
    if (a->shape[1] != v->shape[0]) {
        mv_shape_error("mv", a->shape[0], a->shape[1], v->shape[0]);
        return NULL;
    }
    grad_scope g = grad_begin(2, (const ampc_tensor *[]){a, v});
    ampc_tensor *out = gemm_vectors("mv", a, v, 1, a->shape); /* (n, k) @ (k, 1) */
    GRAD_END(g, out, ampc_ad_record_matmul(a, v, out)); /* picks MvBackward0 */
    return out;
}

/* (*, n, k) @ (k) or (k, m) with the batch folded into the rows: one (N*n, k) mm / mv instead
 * of a batch of small ones, then the batch dims back. `rows` is a's (N*n, k) view. */
static ampc_tensor *matmul_folded(const ampc_tensor *a, const ampc_tensor *rows, const ampc_tensor *b) {
    ampc_tensor *c = b->ndim == 1 ? ampc_mv(rows, b) : ampc_mm(rows, b);
    if (!c) return NULL;
    int64_t shape[AMPC_MAX_DIMS];
    memcpy(shape, a->shape, sizeof(int64_t) * (size_t)(a->ndim - 1));
    if (b->ndim == 2) shape[a->ndim - 1] = b->shape[1];
    return reshape_result(c, b->ndim == 2 ? a->ndim : a->ndim - 1, shape);
}

static ampc_tensor *matmul_impl(const ampc_tensor *a, const ampc_tensor *b) {
    int da = a->ndim, db = b->ndim;
    if (da == 0 || db == 0) {
        ampc_set_error(AMPC_E_RUNTIME, "matmul: both arguments to matmul need to be at least 1D, but they are %dD and %dD",
                       da, db);
        return NULL;
    }
    if (da == 1 && db == 1) return ampc_dot(a, b);
    if (da == 2 && db == 1) return ampc_mv(a, b);
    if (da == 2 && db == 2) return ampc_mm(a, b);
    if (check_operands("matmul", a, b) != AMPC_OK) return NULL;
    int64_t k = a->shape[da - 1], k2 = b->shape[db == 1 ? 0 : db - 2];
    if (da == 1 && db == 2) { /* (k) @ (k, m) = ((1, k) @ (k, m)) squeezed */
        if (k != k2) {
            mm_shape_error("matmul", 1, k, k2, b->shape[1]);
            return NULL;
        }
        return gemm_vectors("matmul", a, b, 1, &b->shape[1]);
    }
    if (da >= 3 && db <= 2) { /* PyTorch folds these into one mm / mv, and so do its errors */
        int64_t rows = 1;
        for (int i = 0; i < da - 1; i++) rows *= a->shape[i];
        if (k != k2) {
            if (db == 2) mm_shape_error("matmul", rows, k, k2, b->shape[1]);
            else mv_shape_error("matmul", rows, k, k2);
            return NULL;
        }
        int64_t rows_shape[2] = {rows, k};
        ampc_tensor *view = ampc_view(a, 2, rows_shape);
        if (view) {
            ampc_tensor *c = matmul_folded(a, view, b);
            ampc_tensor_decref(view);
            return c;
        }
        ampc_clear_error(); /* not foldable without a copy: the batched GEMM reads it in place */
    }
    /* General case: 1-D operands become (1, k) / (k, 1), batch dims broadcast, one batched GEMM. */
    ampc_tensor *a2 = da == 1 ? ampc_unsqueeze(a, 0) : ampc_alias(a);
    ampc_tensor *b2 = db == 1 ? ampc_unsqueeze(b, 1) : ampc_alias(b);
    ampc_tensor *ae = NULL, *be = NULL, *c = NULL;
    if (!a2 || !b2) goto done;
    int nda = a2->ndim, ndb = b2->ndim, nbatch;
    int64_t n = a2->shape[nda - 2], m = b2->shape[ndb - 1];
    int64_t shape[AMPC_MAX_DIMS], ashape[AMPC_MAX_DIMS], bshape[AMPC_MAX_DIMS];
    if (ampc_broadcast_shapes("matmul", nda - 2, a2->shape, ndb - 2, b2->shape, &nbatch, shape) != AMPC_OK) goto done;
    int64_t batch = 1;
    for (int i = 0; i < nbatch; i++) batch *= shape[i];
    if (k != k2) {
        bmm_shape_error("matmul", batch, k, batch, k2);
        goto done;
    }
    memcpy(ashape, shape, sizeof(int64_t) * (size_t)nbatch);
    memcpy(bshape, shape, sizeof(int64_t) * (size_t)nbatch);
    ashape[nbatch] = n, ashape[nbatch + 1] = k;
    bshape[nbatch] = k, bshape[nbatch + 1] = m;
    ae = ampc_expand(a2, nbatch + 2, ashape);
    be = ae ? ampc_expand(b2, nbatch + 2, bshape) : NULL;
    if (!be) goto done;
    c = run_gemm("matmul", ae, be, NULL, 0.0, 1.0);
    /* drop the dims that the 1-D operands gained */
    int nd = nbatch;
    if (da > 1) shape[nd++] = n;
    if (db > 1) shape[nd++] = m;
    c = reshape_result(c, nd, shape);
done:
    ampc_tensor_decref(a2);
    ampc_tensor_decref(b2);
    ampc_tensor_decref(ae);
    ampc_tensor_decref(be);
    return c;
}

ampc_tensor *ampc_matmul(const ampc_tensor *a, const ampc_tensor *b) {
    ampc_autocast_scope ac;
    int acr = ampc_autocast_enter(AMPC_OP_MATMUL, 2, (const ampc_tensor *[]){a, b}, false, &ac);
    if (acr) return acr < 0 ? NULL : ampc_autocast_exit(&ac, ampc_matmul(ac.t[0], ac.t[1]));
    grad_scope g = grad_begin(2, (const ampc_tensor *[]){a, b});
    ampc_tensor *out = matmul_impl(a, b); /* its inner mm / mv / dot record nothing */
    GRAD_END(g, out, ampc_ad_record_matmul(a, b, out));
    return out;
}

/* The GEMM row's contract (ops.def), checked by every device's GEMM kernel: the frontends
 * (linalg.c, nn_common.c) guarantee it, so a violation is a caller's bug and gets an error, not
 * a wild write. */
ampc_status ampc_gemm_check_args(const ampc_gemm_args *p) {
    const ampc_tensor *c = p->out;
    if (!c || !p->a || !p->b || c->ndim < 2)
        return ampc_set_error(AMPC_E_RUNTIME, "gemm: expected 1 output of >= 2 dims and 2 or 3 inputs");
    int nd = c->ndim;
    int64_t n = c->shape[nd - 2], m = c->shape[nd - 1], k = p->a->shape[nd - 1];
    const int64_t want[3][2] = {{n, k}, {k, m}, {n, m}};
    const ampc_tensor *ins[3] = {p->a, p->b, p->c};
    for (int i = 0; i < (p->c ? 3 : 2); i++) {
        const ampc_tensor *t = ins[i];
        if (t->ndim != nd || t->dtype != c->dtype || t->shape[nd - 2] != want[i][0] || t->shape[nd - 1] != want[i][1] ||
            memcmp(t->shape, c->shape, sizeof(int64_t) * (size_t)(nd - 2)) != 0)
            return ampc_set_error(AMPC_E_RUNTIME, "gemm: input %d does not match the output's shape or dtype", i);
        if (!ampc_device_eq(t->device, c->device))
            return ampc_set_error(AMPC_E_RUNTIME, "gemm: input %d is not on the output's device", i);
    }
    if ((m > 1 && c->strides[nd - 1] != 1) || (n > 1 && c->strides[nd - 2] < m))
        return ampc_set_error(AMPC_E_RUNTIME, "gemm: the output's matrices must be row-major");
    return AMPC_OK;
}
