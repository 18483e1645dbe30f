/* shape_views.c: the views of issue 12 (diagonal, unfold, as_strided) and the ops built from
 * writing into such a view: diag, diag_embed, diagflat, diagonal_scatter, select_scatter,
 * slice_scatter, fill_diagonal_.
 *
 * A view is new geometry over the same storage (ampc_as_strided: shared version counter, base
 * remembered), so in-place ops through it reach the base and autograd's CopySlices applies. The
 * three views record a node of torch's name (rules in derivatives_shape_ops.c). The writers are
 * zeros or a clone, then COPY/FILL into a view of it; they record through those ops (CopySlices
 * over CloneBackward0), so their gradients need no rules of their own. */
#include <string.h>

#include "autograd.h"
#include "derivatives.h"
#include "ops.h"

static ampc_tensor *fail_drop(ampc_tensor *t) {
    ampc_tensor_decref(t);
    return NULL;
}

static ampc_tensor *record(ampc_op op, const ampc_tensor *a, ampc_tensor *out, const ampc_node_attrs *at) {
    if (!out || !ampc_any_requires_grad(1, &a)) return out;
    return ad_recorded(out, ampc_ad_record_shape_op(op, 1, &a, out, 0, NULL, at));
}

/* ---------------------------------------------------------------- diagonal */

ampc_tensor *ampc_diagonal(const ampc_tensor *a, int64_t offset, int64_t dim1, int64_t dim2) {
    int d1, d2;
    if (ampc_wrap_dim("diagonal", dim1, a->ndim, &d1) != AMPC_OK || ampc_wrap_dim("diagonal", dim2, a->ndim, &d2) != AMPC_OK)
        return NULL;
    if (d1 == d2) {
        ampc_set_error(AMPC_E_RUNTIME, "diagonal dimensions cannot be identical %lld, %lld", (long long)dim1,
                       (long long)dim2);
        return NULL;
    }
    int64_t s1 = a->shape[d1], s2 = a->shape[d2], len, start = a->offset;
    if (offset >= 0) {
        len = s2 - offset < s1 ? s2 - offset : s1;
        if (len > 0) start += offset * a->strides[d2];
    } else {
        len = s1 + offset < s2 ? s1 + offset : s2;
        if (len > 0) start -= offset * a->strides[d1];
    }
    if (len < 0) len = 0;
    int64_t shape[AMPC_MAX_DIMS], strides[AMPC_MAX_DIMS];
    int nd = 0;
    for (int i = 0; i < a->ndim; i++)
        if (i != d1 && i != d2) shape[nd] = a->shape[i], strides[nd++] = a->strides[i];
    shape[nd] = len, strides[nd++] = a->strides[d1] + a->strides[d2]; /* the diagonal: last */
    ampc_tensor *out = ampc_as_strided(a, nd, shape, strides, start);
    ampc_node_attrs at = {0};
    at.ints[0] = offset, at.ints[1] = d1, at.ints[2] = d2, at.n_ints = 3;
    return record(AMPC_OP_DIAGONAL, a, out, &at);
}

/* ---------------------------------------------------------------- unfold */

ampc_tensor *ampc_unfold(const ampc_tensor *a, int64_t dim, int64_t size, int64_t step) {
    int d;
    if (ampc_wrap_dim("unfold", dim, a->ndim > 0 ? a->ndim : 1, &d) != AMPC_OK) return NULL;
    int64_t n = a->ndim ? a->shape[d] : 1, st = a->ndim ? a->strides[d] : 1;
    if (size > n) {
        ampc_set_error(AMPC_E_RUNTIME, "maximum size for tensor at dimension %d is %lld but size is %lld", d,
                       (long long)n, (long long)size);
        return NULL;
    }
    if (size < 0) {
        ampc_set_error(AMPC_E_RUNTIME, "size is %lld but must be >= 0", (long long)size);
        return NULL;
    }
    if (step <= 0) {
        ampc_set_error(AMPC_E_RUNTIME, "step is %lld but must be > 0", (long long)step);
        return NULL;
    }
    int64_t shape[AMPC_MAX_DIMS], strides[AMPC_MAX_DIMS];
    int nd = a->ndim;
    if (nd + 1 > AMPC_MAX_DIMS) {
        ampc_set_error(AMPC_E_VALUE, "unfold: ampc tensors have at most %d dims", AMPC_MAX_DIMS);
        return NULL;
    }
    memcpy(shape, a->shape, sizeof(int64_t) * (size_t)nd);
    memcpy(strides, a->strides, sizeof(int64_t) * (size_t)nd);
    if (nd) shape[d] = (n - size) / step + 1, strides[d] = st * step;
    shape[nd] = size, strides[nd] = st; /* the window: a new last dim */
    ampc_tensor *out = ampc_as_strided(a, nd + 1, shape, strides, a->offset);
    ampc_node_attrs at = {0};
    at.ints[0] = d, at.ints[1] = size, at.ints[2] = step, at.n_ints = 3;
    return record(AMPC_OP_UNFOLD, a, out, &at);
}

/* ---------------------------------------------------------------- as_strided */

static ampc_status as_strided_check(const ampc_tensor *a, int nd, const int64_t *shape, const int64_t *strides,
                                    int64_t offset) {
    char s1[200], s2[200];
    if (nd > AMPC_MAX_DIMS || nd > (AMPC_MAX_NODE_INTS - 1) / 2)
        return ampc_set_error(AMPC_E_VALUE, "as_strided: at most %d dims", (AMPC_MAX_NODE_INTS - 1) / 2);
    if (offset < 0) return ampc_set_error(AMPC_E_RUNTIME, "Tensor: invalid storage offset %lld", (long long)offset);
    int64_t last = offset, numel = 1;
    for (int i = 0; i < nd; i++) {
        if (shape[i] < 0)
            return ampc_set_error(AMPC_E_RUNTIME, "Trying to create tensor with negative dimension %lld: %s",
                                  (long long)shape[i], ampc_shape_str(nd, shape, s1, sizeof s1));
        if (strides[i] < 0)
            return ampc_set_error(AMPC_E_RUNTIME, "as_strided: Negative strides are not supported at the moment, got "
                                  "strides: %s", ampc_shape_str(nd, strides, s1, sizeof s1));
        numel *= shape[i];
        if (shape[i]) last += (shape[i] - 1) * strides[i];
    }
    int64_t item = (int64_t)ampc_dtype_itemsize(a->dtype), have = (int64_t)a->storage->nbytes / item;
    if (numel && last >= have)
        return ampc_set_error(AMPC_E_RUNTIME,
                              "setStorage: sizes %s, strides %s, storage offset %lld, and itemsize %lld requiring a "
                              "storage size of %lld are out of bounds for storage of size %lld",
                              ampc_shape_str(nd, shape, s1, sizeof s1), ampc_shape_str(nd, strides, s2, sizeof s2),
                              (long long)offset, (long long)item, (long long)((last + 1) * item),
                              (long long)(have * item));
    return AMPC_OK;
}

/* offset < 0: the input's own storage offset (torch's storage_offset=None) */
ampc_tensor *ampc_as_strided_view(const ampc_tensor *a, int nd, const int64_t *shape, const int64_t *strides,
                                  int64_t offset) {
    if (offset < 0) offset = a->offset;
    if (as_strided_check(a, nd, shape, strides, offset) != AMPC_OK) return NULL;
    ampc_tensor *out = ampc_as_strided(a, nd, shape, strides, offset);
    if (!out || !ampc_any_requires_grad(1, &a)) return out;
    if (!ampc_is_contiguous(a))
        return fail_drop((ampc_set_error(AMPC_E_NOT_IMPLEMENTED, "as_strided: ampc differentiates as_strided of a "
                                                                 "contiguous input only; call .contiguous() first"),
                          out));
    /* the rule needs the geometry relative to the input's first element */
    ampc_node_attrs at = {0};
    at.ints[0] = nd;
    for (int i = 0; i < nd; i++) at.ints[1 + i] = shape[i], at.ints[1 + nd + i] = strides[i];
    at.ints[1 + 2 * nd] = offset - a->offset;
    at.n_ints = 2 + 2 * nd;
    int64_t last = offset - a->offset;
    for (int i = 0; i < nd; i++)
        if (shape[i]) last += (shape[i] - 1) * strides[i];
    if (ampc_numel(out) && (offset < a->offset || last >= ampc_numel(a)))
        return fail_drop((ampc_set_error(AMPC_E_NOT_IMPLEMENTED, "as_strided: ampc differentiates views inside the "
                                                                 "input's own elements only"),
                          out));
    return record(AMPC_OP_AS_STRIDED, a, out, &at);
}

ampc_status ampc_as_strided_(ampc_tensor *a, int nd, const int64_t *shape, const int64_t *strides, int64_t offset) {
    if (offset < 0) offset = a->offset;
    AMPC_TRY(as_strided_check(a, nd, shape, strides, offset));
    if (ampc_any_requires_grad(1, (const ampc_tensor *[]){a}))
        return ampc_set_error(AMPC_E_NOT_IMPLEMENTED, "as_strided_: ampc does not differentiate it; use as_strided");
    a->ndim = nd;
    memcpy(a->shape, shape, sizeof(int64_t) * (size_t)nd);
    memcpy(a->strides, strides, sizeof(int64_t) * (size_t)nd);
    a->offset = offset;
    return AMPC_OK;
}

/* ---------------------------------------------------------------- writing into a view */

/* dst_view.copy_(src) after checking src has the view's shape (torch's *_scatter message). */
static ampc_status copy_into(const char *op, ampc_tensor *view, const ampc_tensor *src) {
    if (!view) return ampc_last_status();
    if (view->ndim != src->ndim || memcmp(view->shape, src->shape, sizeof(int64_t) * (size_t)src->ndim)) {
        char s1[200], s2[200];
        return ampc_set_error(AMPC_E_RUNTIME, "%s: expected src to have a size equal to the slice of self. src size = "
                              "%s, slice size = %s", op, ampc_shape_str(src->ndim, src->shape, s1, sizeof s1),
                              ampc_shape_str(view->ndim, view->shape, s2, sizeof s2));
    }
    return ampc_copy_(view, src);
}

/* out = clone(a); view(out).copy_(src): the *_scatter ops. which: 0 diagonal, 1 select, 2 slice */
static ampc_tensor *scatter_into_clone(const char *op, const ampc_tensor *a, const ampc_tensor *src, int which,
                                       const int64_t *p) {
    if (src->dtype != a->dtype) {
        ampc_set_error(AMPC_E_RUNTIME, "%s: expected src and self to have the same dtype, got %s and %s", op,
                       ampc_dtype_torch_name(src->dtype), ampc_dtype_torch_name(a->dtype));
        return NULL;
    }
    ampc_tensor *out = ampc_any_requires_grad(1, &a) ? ampc_ad_clone(a) : ampc_clone(a);
    if (!out) return NULL;
    ampc_tensor *view = which == 0   ? ampc_diagonal(out, p[0], p[1], p[2])
                        : which == 1 ? ampc_select(out, p[0], p[1])
                                     : ampc_slice(out, p[0], p[1], p[2], p[3]);
    ampc_status st = copy_into(op, view, src);
    ampc_tensor_decref(view);
    return st == AMPC_OK ? out : fail_drop(out);
}

ampc_tensor *ampc_diagonal_scatter(const ampc_tensor *a, const ampc_tensor *src, int64_t offset, int64_t dim1,
                                   int64_t dim2) {
    return scatter_into_clone("diagonal_scatter", a, src, 0, (int64_t[]){offset, dim1, dim2});
}

ampc_tensor *ampc_select_scatter(const ampc_tensor *a, const ampc_tensor *src, int64_t dim, int64_t index) {
    return scatter_into_clone("select_scatter", a, src, 1, (int64_t[]){dim, index});
}

ampc_tensor *ampc_slice_scatter(const ampc_tensor *a, const ampc_tensor *src, int64_t dim, int64_t start, int64_t end,
                                int64_t step) {
    if (step <= 0) {
        ampc_set_error(AMPC_E_RUNTIME, "slice step must be positive");
        return NULL;
    }
    return scatter_into_clone("slice_scatter", a, src, 2, (int64_t[]){dim, start, end, step});
}

/* zeros of a's dtype with `a` (..., n) written into the diagonal of dims (dim1, dim2) */
ampc_tensor *ampc_diag_embed(const ampc_tensor *a, int64_t offset, int64_t dim1, int64_t dim2) {
    int nd = a->ndim + 1, d1, d2;
    if (a->ndim < 1) {
        ampc_set_error(AMPC_E_RUNTIME, "diag_embed: input must have at least 1 dimension");
        return NULL;
    }
    if (nd > AMPC_MAX_DIMS) {
        ampc_set_error(AMPC_E_VALUE, "diag_embed: ampc tensors have at most %d dims", AMPC_MAX_DIMS);
        return NULL;
    }
    if (ampc_wrap_dim("diag_embed", dim1, nd, &d1) != AMPC_OK || ampc_wrap_dim("diag_embed", dim2, nd, &d2) != AMPC_OK)
        return NULL;
    if (d1 == d2) {
        ampc_set_error(AMPC_E_RUNTIME, "diagonal dimensions cannot be identical %lld, %lld", (long long)dim1,
                       (long long)dim2);
        return NULL;
    }
    int64_t n = a->shape[a->ndim - 1] + (offset < 0 ? -offset : offset), shape[AMPC_MAX_DIMS];
    for (int i = 0, j = 0; i < nd; i++) shape[i] = (i == d1 || i == d2) ? n : a->shape[j++];
    ampc_tensor *z = ampc_zeros(nd, shape, a->dtype, a->device);
    ampc_tensor *view = z ? ampc_diagonal(z, offset, d1, d2) : NULL;
    ampc_status st = z ? copy_into("diag_embed", view, a) : ampc_last_status();
    ampc_tensor_decref(view);
    return st == AMPC_OK ? z : fail_drop(z);
}

ampc_tensor *ampc_diag(const ampc_tensor *a, int64_t diagonal) {
    if (a->ndim == 1) return ampc_diag_embed(a, diagonal, 0, 1);
    if (a->ndim != 2) {
        ampc_set_error(AMPC_E_RUNTIME, "diag(): Supports 1D or 2D tensors. Got %dD", a->ndim);
        return NULL;
    }
    ampc_tensor *v = ampc_diagonal(a, diagonal, 0, 1);
    ampc_tensor *out = v ? ampc_clone(v) : NULL; /* a copy, not a view (torch) */
    ampc_tensor_decref(v);
    return out;
}

ampc_tensor *ampc_diagflat(const ampc_tensor *a, int64_t offset) {
    int64_t numel = ampc_numel(a);
    ampc_tensor *flat = ampc_reshape(a, 1, &numel);
    ampc_tensor *out = flat ? ampc_diag_embed(flat, offset, 0, 1) : NULL;
    ampc_tensor_decref(flat);
    return out;
}

/* Fills the main diagonal; with wrap, a tall matrix restarts it every ncols + 1 rows (torch). */
ampc_status ampc_fill_diagonal_(ampc_tensor *a, ampc_scalar value, bool wrap) {
    if (a->ndim < 2) return ampc_set_error(AMPC_E_RUNTIME, "dimensions must larger than 1");
    for (int i = 1; i < a->ndim; i++)
        if (a->ndim > 2 && a->shape[i] != a->shape[0])
            return ampc_set_error(AMPC_E_RUNTIME, "all dimensions of input must be of equal length");
    if (a->ndim > 2) {
        int64_t stride = 0, len = a->shape[0];
        for (int i = 0; i < a->ndim; i++) stride += a->strides[i];
        ampc_tensor *v = ampc_as_strided(a, 1, &len, &stride, a->offset);
        ampc_status st = v ? ampc_fill_(v, value) : ampc_last_status();
        ampc_tensor_decref(v);
        return st;
    }
    int64_t rows = a->shape[0], cols = a->shape[1], block = wrap ? cols + 1 : rows;
    ampc_status st = AMPC_OK;
    for (int64_t r0 = 0; r0 < rows && st == AMPC_OK; r0 += block > 0 ? block : rows) {
        int64_t len = rows - r0 < cols ? rows - r0 : cols;
        ampc_tensor *part = ampc_narrow(a, 0, r0, rows - r0 < block ? rows - r0 : block);
        ampc_tensor *v = part ? ampc_diagonal(part, 0, 0, 1) : NULL;
        st = v ? (len > 0 ? ampc_fill_(v, value) : AMPC_OK) : ampc_last_status();
        ampc_tensor_decref(v);
        ampc_tensor_decref(part);
        if (!wrap) break;
    }
    return st;
}
