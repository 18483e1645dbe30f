/* index_ops.c: frontends of the index ops of issue 12: scatter (src or value), index_copy,
 * index_fill, masked_select, masked_scatter, take, take_along_dim and put.
 *
 * scatter, index_copy and index_fill are the scatter form of index.c (one index, values seen as
 * R) with accumulate false: scatter's R is index.shape, index_copy's is source.shape, and
 * index_fill's values are one 0-dim tensor seen as R with all strides 0. The others are views
 * and the existing index frontends: masked_select = a[mask] after broadcasting, masked_scatter
 * = a[mask] = source[:count], take = a.reshape(-1)[index], take_along_dim = gather over
 * broadcast shapes, put = index_put_ on a flat view; they record through those frontends.
 * Errors follow torch's types and messages (index_copy_: IndexError, scatter: RuntimeError). */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "autocast.h"
#include "autograd.h"
#include "derivatives.h"
#include "index_internal.h"
#include "ops.h"
#include "scatter_reduce.h"

static ampc_tensor *fail_drop(ampc_tensor *t) {
    ampc_tensor_decref(t);
    return NULL;
}

/* torch treats a 0-dim tensor as 1-dim of size 1 here (ensure_nonempty_dim) */
static int nonempty_dims(const ampc_tensor *t, int64_t *shape, int64_t *strides) {
    if (t->ndim == 0) {
        shape[0] = 1, strides[0] = 0;
        return 1;
    }
    memcpy(shape, t->shape, sizeof(int64_t) * (size_t)t->ndim);
    memcpy(strides, t->strides, sizeof(int64_t) * (size_t)t->ndim);
    return t->ndim;
}

/* t, or a copy when it shares memory with dst (the kernel must not read its own writes) */
static ampc_tensor *unaliased(const ampc_tensor *t, const ampc_tensor *dst) {
    if (t->storage == dst->storage) return ampc_clone(t);
    ampc_tensor_incref((ampc_tensor *)t);
    return (ampc_tensor *)t;
}

static ampc_tensor *index_int64(const ampc_tensor *index, const ampc_tensor *dst) {
    ampc_tensor *i64 = ampc_to(index, AMPC_INT64, index->device, false);
    ampc_tensor *u = i64 ? unaliased(i64, dst) : NULL;
    ampc_tensor_decref(i64);
    return u;
}

/* Runs op's scatter form into `a` along d with the index seen as R (nd, shape) through
 * index_strides and the values `vals` (any strides, seen as R through vstrides). */
static ampc_status scatter_run_as(ampc_op op, bool accumulate, int reduce, ampc_tensor *a, int d, const ampc_tensor *idx,
                                  const int64_t *index_strides, const ampc_tensor *vals, const int64_t *vstrides, int nd,
                                  const int64_t *shape) {
    int64_t a_shape[AMPC_MAX_DIMS], a_strides[AMPC_MAX_DIMS];
    nonempty_dims(a, a_shape, a_strides);
    int64_t size = a_shape[d], stride = a_strides[d];
    a_strides[d] = 0;
    ampc_tensor *v = ampc_as_strided(vals, nd, shape, vstrides, vals->offset);
    ampc_status st = v ? ampc_index_run_one(op, true, accumulate, reduce, a, v, nd, shape, a_strides, idx, index_strides,
                                            d, size, stride, ampc_scalar_none())
                       : ampc_last_status();
    ampc_tensor_decref(v);
    if (st == AMPC_OK) a->storage->version++;
    return st;
}

static ampc_status scatter_run(ampc_op op, ampc_tensor *a, int d, const ampc_tensor *idx, const int64_t *index_strides,
                               const ampc_tensor *vals, const int64_t *vstrides, int nd, const int64_t *shape) {
    return scatter_run_as(op, false, 0, a, d, idx, index_strides, vals, vstrides, nd, shape);
}

/* ---------------------------------------------------------------- scatter */

/* a.scatter_(dim, index, src or value) without autograd; src NULL: the value */
static ampc_status scatter_into(ampc_tensor *a, int64_t dim, const ampc_tensor *index, const ampc_tensor *src,
                                ampc_scalar value) {
    int d;
    AMPC_TRY(ampc_wrap_dim("scatter", dim, a->ndim > 0 ? a->ndim : 1, &d));
    if (index->dtype != AMPC_INT64)
        return ampc_set_error(AMPC_E_RUNTIME, "scatter(): Expected dtype int64 for index");
    if (src && src->dtype != a->dtype)
        return ampc_set_error(AMPC_E_RUNTIME, "scatter(): Expected self.dtype to be equal to src.dtype");
    int64_t a_shape[AMPC_MAX_DIMS], a_strides[AMPC_MAX_DIMS], shape[AMPC_MAX_DIMS], istrides[AMPC_MAX_DIMS];
    int64_t s_shape[AMPC_MAX_DIMS], s_strides[AMPC_MAX_DIMS];
    int nd = nonempty_dims(a, a_shape, a_strides);
    if (nonempty_dims(index, shape, istrides) != nd)
        return ampc_set_error(AMPC_E_RUNTIME, "Index tensor must have the same number of dimensions as self tensor");
    if (src && nonempty_dims(src, s_shape, s_strides) != nd)
        return ampc_set_error(AMPC_E_RUNTIME, "Index tensor must have the same number of dimensions as src tensor");
    if (ampc_numel(index) == 0) return AMPC_OK;
    for (int i = 0; i < nd; i++)
        if ((src && shape[i] > s_shape[i]) || (i != d && shape[i] > a_shape[i])) {
            char si[160], sa[160], ss[160];
            return ampc_set_error(AMPC_E_RUNTIME, "Expected index %s to be no larger than self %s apart from dimension "
                                  "%d%s%s", ampc_shape_str(nd, shape, si, sizeof si),
                                  ampc_shape_str(nd, a_shape, sa, sizeof sa), d,
                                  src ? " and to be no larger size than src " : "",
                                  src ? ampc_shape_str(nd, s_shape, ss, sizeof ss) : "");
        }
    AMPC_TRY(ampc_check_writable_once(a));
    ampc_tensor *idx = index_int64(index, a);
    ampc_tensor *vals = src ? unaliased(src, a) : ampc_full(0, NULL, value, a->dtype, a->device);
    ampc_status st = ampc_last_status();
    if (idx && vals) {
        int64_t zeros[AMPC_MAX_DIMS] = {0};
        nonempty_dims(idx, shape, istrides);
        if (src) nonempty_dims(vals, s_shape, s_strides);
        st = scatter_run(AMPC_OP_SCATTER, a, d, idx, istrides, vals, src ? s_strides : zeros, nd, shape);
    }
    ampc_tensor_decref(idx);
    ampc_tensor_decref(vals);
    return st;
}

ampc_status ampc_scatter_(ampc_tensor *a, int64_t dim, const ampc_tensor *index, const ampc_tensor *src,
                          ampc_scalar value) {
    AMPC_TRY(ampc_autograd_check_inplace(a));
    AMPC_TRY(scatter_into(a, dim, index, src, value));
    const ampc_tensor *ins[3] = {a, src, index};
    if (!ampc_any_requires_grad(src ? 2 : 1, ins)) return AMPC_OK;
    ampc_node_attrs at = {0};
    at.ints[0] = dim, at.n_ints = 1;
    return ampc_ad_record_shape_op(AMPC_OP_SCATTER, src ? 2 : 1, ins, a, 1, &ins[2], &at);
}

ampc_tensor *ampc_scatter(const ampc_tensor *a, int64_t dim, const ampc_tensor *index, const ampc_tensor *src,
                          ampc_scalar value) {
    ampc_tensor *out = ampc_clone(a);
    if (out && scatter_into(out, dim, index, src, value) != AMPC_OK) return fail_drop(out);
    const ampc_tensor *ins[3] = {a, src, index};
    if (!out || !ampc_any_requires_grad(src ? 2 : 1, ins)) return out;
    ampc_node_attrs at = {0};
    at.ints[0] = dim, at.n_ints = 1;
    return ad_recorded(out, ampc_ad_record_shape_op(AMPC_OP_SCATTER, src ? 2 : 1, ins, out, 1, &ins[2], &at));
}

/* ---------------------------------------------------------------- index_copy / index_fill */

/* Checks the index of index_copy_/index_fill_ and wraps dim. */
static ampc_status vector_index(const char *op, const ampc_tensor *a, int64_t dim, const ampc_tensor *index, int *d,
                                bool fill) {
    AMPC_TRY(ampc_wrap_dim(op, dim, a->ndim > 0 ? a->ndim : 1, d));
    if (index->ndim > 1)
        return fill ? ampc_set_error(AMPC_E_RUNTIME, "Index has to be a vector/scalar")
                    : ampc_set_error(AMPC_E_INDEX, "%s: Index should have dimension 1 or 0 (got %d)", op, index->ndim);
    if (index->dtype != AMPC_INT64)
        return fill ? ampc_set_error(AMPC_E_INDEX, "%s(): Expected dtype int64 for index.", op)
                    : ampc_set_error(AMPC_E_RUNTIME, "%s: Expected a long tensor for index, but got %s", op,
                                     ampc_dtype_torch_name(index->dtype));
    return AMPC_OK;
}

/* a.index_copy_(dim, index, source) (source NULL: index_fill_ with value) without autograd */
static ampc_status index_write(ampc_tensor *a, int64_t dim, const ampc_tensor *index, const ampc_tensor *source,
                               ampc_scalar value) {
    const char *op = source ? "index_copy_()" : "index_fill_";
    int d;
    AMPC_TRY(vector_index(source ? "index_copy_()" : "index_fill_", a, dim, index, &d, !source));
    int64_t n = ampc_numel(index), a_shape[AMPC_MAX_DIMS], a_strides[AMPC_MAX_DIMS], shape[AMPC_MAX_DIMS];
    int64_t vstrides[AMPC_MAX_DIMS] = {0}, istrides[AMPC_MAX_DIMS] = {0};
    int nd = nonempty_dims(a, a_shape, a_strides);
    if (source) {
        if (source->dtype != a->dtype)
            return ampc_set_error(AMPC_E_RUNTIME, "%s: self and source expected to have the same dtype, but got (self) "
                                  "%s and (source) %s", op, ampc_dtype_torch_name(a->dtype),
                                  ampc_dtype_torch_name(source->dtype));
        int64_t s_shape[AMPC_MAX_DIMS];
        bool same = nonempty_dims(source, s_shape, vstrides) == nd || (source->ndim == 0 && a->ndim <= 1);
        for (int i = 0; same && i < nd; i++)
            if (i != d && s_shape[i] != a_shape[i]) same = false;
        if (!same) {
            char s1[160], s2[160];
            return ampc_set_error(AMPC_E_INDEX, "%s: Source/destination tensor must have same slice shapes. "
                                  "Destination slice shape: %s and source slice shape: %s", op,
                                  ampc_shape_str(a->ndim, a->shape, s1, sizeof s1),
                                  ampc_shape_str(source->ndim, source->shape, s2, sizeof s2));
        }
        if (n != s_shape[d])
            return ampc_set_error(AMPC_E_INDEX, "%s: Number of indices (%lld) should be equal to source.size(dim) (%lld)",
                                  op, (long long)n, (long long)s_shape[d]);
        memcpy(shape, s_shape, sizeof shape);
    } else {
        memcpy(shape, a_shape, sizeof shape);
        shape[d] = n; /* the filled slices; the value has stride 0 everywhere */
    }
    if (n == 0 || ampc_numel(a) == 0) return AMPC_OK;
    AMPC_TRY(ampc_check_writable_once(a));
    ampc_tensor *idx = index_int64(index, a);
    ampc_tensor *vals = source ? unaliased(source, a) : ampc_full(0, NULL, value, a->dtype, a->device);
    ampc_status st = ampc_last_status();
    if (idx && vals) {
        if (source) nonempty_dims(vals, shape, vstrides);
        istrides[d] = idx->ndim ? idx->strides[0] : 0;
        st = scatter_run(source ? AMPC_OP_INDEX_COPY : AMPC_OP_INDEX_FILL, a, d, idx, istrides, vals, vstrides, nd, shape);
    }
    ampc_tensor_decref(idx);
    ampc_tensor_decref(vals);
    return st;
}

static ampc_status index_write_record(ampc_op op, const ampc_tensor *a, int64_t dim, const ampc_tensor *index,
                                      const ampc_tensor *source, ampc_tensor *out) {
    const ampc_tensor *ins[3] = {a, source, index};
    if (!ampc_any_requires_grad(source ? 2 : 1, ins)) return AMPC_OK;
    ampc_node_attrs at = {0};
    at.ints[0] = dim, at.n_ints = 1;
    return ampc_ad_record_shape_op(op, source ? 2 : 1, ins, out, 1, &ins[2], &at);
}

ampc_status ampc_index_copy_(ampc_tensor *a, int64_t dim, const ampc_tensor *index, const ampc_tensor *source) {
    AMPC_TRY(ampc_autograd_check_inplace(a));
    AMPC_TRY(index_write(a, dim, index, source, ampc_scalar_none()));
    return index_write_record(AMPC_OP_INDEX_COPY, a, dim, index, source, a);
}

ampc_tensor *ampc_index_copy(const ampc_tensor *a, int64_t dim, const ampc_tensor *index, const ampc_tensor *source) {
    /* torch's CPU autocast list promotes index_copy's self and source (core/autocast_cpu.c) */
    ampc_autocast_scope ac;
    int acr = ampc_autocast_enter_op(AMPC_OP_INDEX_COPY, 3, (const ampc_tensor *[]){a, index, source}, false, &ac);
    if (acr) return acr < 0 ? NULL : ampc_autocast_exit(&ac, ampc_index_copy(ac.t[0], dim, ac.t[1], ac.t[2]));
    ampc_tensor *out = ampc_clone(a);
    if (out && index_write(out, dim, index, source, ampc_scalar_none()) != AMPC_OK) return fail_drop(out);
    return out ? ad_recorded(out, index_write_record(AMPC_OP_INDEX_COPY, a, dim, index, source, out)) : NULL;
}

ampc_status ampc_index_fill_(ampc_tensor *a, int64_t dim, const ampc_tensor *index, ampc_scalar value) {
    AMPC_TRY(ampc_autograd_check_inplace(a));
    AMPC_TRY(index_write(a, dim, index, NULL, value));
    return index_write_record(AMPC_OP_INDEX_FILL, a, dim, index, NULL, a);
}

ampc_tensor *ampc_index_fill(const ampc_tensor *a, int64_t dim, const ampc_tensor *index, ampc_scalar value) {
    ampc_tensor *out = ampc_clone(a);
    if (out && index_write(out, dim, index, NULL, value) != AMPC_OK) return fail_drop(out);
    return out ? ad_recorded(out, index_write_record(AMPC_OP_INDEX_FILL, a, dim, index, NULL, out)) : NULL;
}

/* ---------------------------------------------------------------- masked_select / masked_scatter */

ampc_tensor *ampc_masked_select(const ampc_tensor *a, const ampc_tensor *mask) {
    if (mask->dtype != AMPC_BOOL) {
        ampc_set_error(AMPC_E_RUNTIME, "masked_select: expected BoolTensor for mask");
        return NULL;
    }
    int nd;
    int64_t shape[AMPC_MAX_DIMS];
    if (ampc_broadcast_shapes("masked_select", a->ndim, a->shape, mask->ndim, mask->shape, &nd, shape) != AMPC_OK)
        return NULL;
    ampc_tensor *ae = ampc_expand(a, nd, shape), *me = ampc_expand(mask, nd, shape);
    const ampc_tensor *idx[1] = {me};
    ampc_tensor *out = NULL;
    if (ae && me) {
        if (nd == 0) { /* a[mask] of 0-dim tensors: a (1,) or (0,) result */
            int64_t one = 1;
            ampc_tensor *a1 = ampc_reshape(ae, 1, &one), *m1 = ampc_reshape(me, 1, &one);
            const ampc_tensor *i1[1] = {m1};
            out = a1 && m1 ? ampc_index(a1, 1, i1) : NULL;
            ampc_tensor_decref(a1);
            ampc_tensor_decref(m1);
        } else {
            out = ampc_index(ae, 1, idx);
        }
    }
    ampc_tensor_decref(ae);
    ampc_tensor_decref(me);
    return out;
}

ampc_status ampc_masked_scatter_(ampc_tensor *a, const ampc_tensor *mask, const ampc_tensor *source) {
    if (mask->dtype != AMPC_BOOL)
        return ampc_set_error(AMPC_E_RUNTIME, "masked_scatter_ only supports boolean masks, but got mask with dtype %s",
                              ampc_dtype_torch_name(mask->dtype));
    if (source->dtype != a->dtype)
        return ampc_set_error(AMPC_E_RUNTIME, "masked_scatter_: expected self and source to have same dtypes but got%s "
                              "and %s", ampc_dtype_torch_name(a->dtype), ampc_dtype_torch_name(source->dtype));
    ampc_tensor *me = ampc_expand(mask, a->ndim, a->shape);
    if (!me) return ampc_last_status();
    ampc_tensor *nz = ampc_nonzero(me);
    ampc_status st = nz ? AMPC_OK : ampc_last_status();
    int64_t count = nz ? nz->shape[0] : 0, have = ampc_numel(source);
    ampc_tensor_decref(nz);
    if (st == AMPC_OK && count > have)
        st = ampc_set_error(AMPC_E_RUNTIME, "masked_scatter: expected source to have at least %lld elements, got %lld",
                            (long long)count, (long long)have);
    ampc_tensor *flat = st == AMPC_OK ? ampc_reshape(source, 1, &have) : NULL;
    ampc_tensor *vals = flat ? ampc_narrow(flat, 0, 0, count) : NULL;
    if (st == AMPC_OK) {
        if (!vals) {
            st = ampc_last_status();
        } else if (a->ndim == 0) {
            int64_t one = 1;
            ampc_tensor *a1 = ampc_view(a, 1, &one), *m1 = ampc_reshape(me, 1, &one);
            const ampc_tensor *i1[1] = {m1};
            st = a1 && m1 ? ampc_index_put_(a1, 1, i1, vals, false) : ampc_last_status();
            ampc_tensor_decref(a1);
            ampc_tensor_decref(m1);
        } else {
            const ampc_tensor *idx[1] = {me};
            st = ampc_index_put_(a, 1, idx, vals, false);
        }
    }
    ampc_tensor_decref(vals);
    ampc_tensor_decref(flat);
    ampc_tensor_decref(me);
    return st;
}

ampc_tensor *ampc_masked_scatter(const ampc_tensor *a, const ampc_tensor *mask, const ampc_tensor *source) {
    int nd;
    int64_t shape[AMPC_MAX_DIMS];
    if (ampc_broadcast_shapes("masked_scatter", a->ndim, a->shape, mask->ndim, mask->shape, &nd, shape) != AMPC_OK)
        return NULL;
    ampc_tensor *ae = ampc_expand(a, nd, shape);
    ampc_tensor *out = ae ? (ampc_any_requires_grad(1, &a) ? ampc_ad_clone(ae) : ampc_clone(ae)) : NULL;
    ampc_tensor_decref(ae);
    if (out && ampc_masked_scatter_(out, mask, source) != AMPC_OK) return fail_drop(out);
    return out;
}

/* ---------------------------------------------------------------- take / take_along_dim / put */

static ampc_status check_long_index(const char *op, const ampc_tensor *index) {
    if (index->dtype != AMPC_INT64)
        return ampc_set_error(AMPC_E_RUNTIME, "%s(): Expected a long tensor for index, but got %s", op,
                              ampc_dtype_torch_name(index->dtype));
    return AMPC_OK;
}

ampc_tensor *ampc_take(const ampc_tensor *a, const ampc_tensor *index) {
    if (check_long_index("take", index) != AMPC_OK) return NULL;
    int64_t numel = ampc_numel(a);
    ampc_tensor *flat = ampc_reshape(a, 1, &numel);
    const ampc_tensor *idx[1] = {index};
    ampc_tensor *out = flat ? ampc_index(flat, 1, idx) : NULL;
    ampc_tensor_decref(flat);
    return out;
}

ampc_tensor *ampc_take_along_dim(const ampc_tensor *a, const ampc_tensor *indices, bool has_dim, int64_t dim) {
    if (indices->dtype != AMPC_INT64) {
        ampc_set_error(AMPC_E_RUNTIME, "torch.take_along_dim(): dtype of indices should be Long but got %s",
                       ampc_dtype_torch_name(indices->dtype));
        return NULL;
    }
    if (!has_dim) {
        int64_t n = ampc_numel(a), k = ampc_numel(indices);
        ampc_tensor *fa = ampc_reshape(a, 1, &n), *fi = ampc_reshape(indices, 1, &k);
        ampc_tensor *out = fa && fi ? ampc_gather(fa, 0, fi) : NULL;
        ampc_tensor_decref(fa);
        ampc_tensor_decref(fi);
        return out;
    }
    if (a->ndim != indices->ndim) {
        ampc_set_error(AMPC_E_RUNTIME, "torch.take_along_dim(): input and indices should have the same number of "
                       "dimensions, but got %d dimensions for input, and %d dimensions for indices", a->ndim,
                       indices->ndim);
        return NULL;
    }
    int d;
    if (ampc_wrap_dim("take_along_dim", dim, a->ndim > 0 ? a->ndim : 1, &d) != AMPC_OK) return NULL;
    if (a->ndim == 0) return ampc_gather(a, 0, indices);
    /* broadcast every dim but d; each keeps its own size at d */
    int64_t sa[AMPC_MAX_DIMS], si[AMPC_MAX_DIMS], b[AMPC_MAX_DIMS];
    int nb;
    memcpy(sa, a->shape, sizeof(int64_t) * (size_t)a->ndim);
    memcpy(si, indices->shape, sizeof(int64_t) * (size_t)a->ndim);
    sa[d] = si[d] = 1;
    if (ampc_broadcast_shapes("take_along_dim", a->ndim, sa, a->ndim, si, &nb, b) != AMPC_OK) return NULL;
    memcpy(sa, b, sizeof sa);
    memcpy(si, b, sizeof si);
    sa[d] = a->shape[d], si[d] = indices->shape[d];
    ampc_tensor *ae = ampc_expand(a, a->ndim, sa), *ie = ampc_expand(indices, a->ndim, si);
    ampc_tensor *out = ae && ie ? ampc_gather(ae, d, ie) : NULL;
    ampc_tensor_decref(ae);
    ampc_tensor_decref(ie);
    return out;
}

ampc_status ampc_put_(ampc_tensor *a, const ampc_tensor *index, const ampc_tensor *source, bool accumulate) {
    AMPC_TRY(check_long_index("put_", index));
    if (source->dtype != a->dtype)
        return ampc_set_error(AMPC_E_RUNTIME, "put_(): self and source expected to have the same dtype, but got "
                              "self.dtype = %s and source.dtype = %s", ampc_dtype_torch_name(a->dtype),
                              ampc_dtype_torch_name(source->dtype));
    int64_t n = ampc_numel(a), k = ampc_numel(index), ks = ampc_numel(source);
    if (k != ks)
        return ampc_set_error(AMPC_E_RUNTIME, "put_(): Expected source and index to have the same number of elements, "
                              "but got source.numel() = %lld, index.numel() = %lld", (long long)ks, (long long)k);
    if (k == 0) return AMPC_OK;
    if (n == 0) return ampc_set_error(AMPC_E_INDEX, "put_(): Tried to indexing on an empty tensor");
    ampc_tensor *fi = ampc_reshape(index, 1, &k), *fs = ampc_reshape(source, 1, &k);
    const ampc_tensor *idx[1] = {fi};
    ampc_status st;
    if (!fi || !fs) {
        st = ampc_last_status();
    } else if (ampc_is_contiguous(a)) {
        ampc_tensor *flat = ampc_view(a, 1, &n); /* shares a's storage: the write lands in a */
        st = flat ? ampc_index_put_(flat, 1, idx, fs, accumulate) : ampc_last_status();
        ampc_tensor_decref(flat);
    } else { /* a flat copy, written, then copied back */
        ampc_tensor *c = ampc_contiguous(a);
        ampc_tensor *flat = c ? ampc_view(c, 1, &n) : NULL;
        st = flat ? ampc_index_put_(flat, 1, idx, fs, accumulate) : ampc_last_status();
        if (st == AMPC_OK) st = ampc_copy_(a, c);
        ampc_tensor_decref(flat);
        ampc_tensor_decref(c);
    }
    ampc_tensor_decref(fi);
    ampc_tensor_decref(fs);
    return st;
}

ampc_tensor *ampc_put(const ampc_tensor *a, const ampc_tensor *index, const ampc_tensor *source, bool accumulate) {
    ampc_tensor *out = ampc_any_requires_grad(1, &a) ? ampc_ad_clone(a) : ampc_clone(a);
    if (out && ampc_put_(out, index, source, accumulate) != AMPC_OK) return fail_drop(out);
    return out;
}

/* ---------------------------------------------------------------- scatter_reduce / index_reduce
 *
 * One scatter form run per call: sum (and mean's sum) accumulates, prod/amax/amin combine
 * (scatter_reduce.h). include_self=False first stores the reduction's identity at every target
 * (scatter / index_fill of a value); mean then divides by the number of values each target got
 * (plus one for self), floor division for integers (torch). index_form: index_reduce's layout
 * (a vector index along dim, R = source.shape) instead of scatter's (R = index.shape). */

static ampc_scalar reduce_identity(ampc_reduce_kind k, ampc_dtype dt) {
    static const int64_t int_min[AMPC_NUM_DTYPES] = {[AMPC_INT64] = INT64_MIN, [AMPC_INT32] = INT32_MIN};
    static const int64_t int_max[AMPC_NUM_DTYPES] = {[AMPC_INT64] = INT64_MAX, [AMPC_INT32] = INT32_MAX,
                                                     [AMPC_UINT8] = 255, [AMPC_BOOL] = 1};
    bool fl = ampc_dtype_is_floating(dt);
    switch (k) {
    case AMPC_REDUCE_PROD: return ampc_scalar_int(1);
    case AMPC_REDUCE_AMAX: return fl ? ampc_scalar_float(-INFINITY) : ampc_scalar_int(int_min[dt]);
    case AMPC_REDUCE_AMIN: return fl ? ampc_scalar_float(INFINITY) : ampc_scalar_int(int_max[dt]);
    default: return ampc_scalar_int(0);
    }
}

/* The checks and the geometry R of one call: idx (int64, owned), R's shape, the index's and the
 * values' strides seen as R. */
typedef struct reduce_plan {
    int d, nd;
    int64_t shape[AMPC_MAX_DIMS], istrides[AMPC_MAX_DIMS], vstrides[AMPC_MAX_DIMS];
} reduce_plan;

static ampc_status reduce_plan_build(const char *op, const ampc_tensor *a, int64_t dim, const ampc_tensor *index,
                                     const ampc_tensor *src, bool index_form, reduce_plan *p) {
    memset(p, 0, sizeof *p);
    if (index_form) {
        AMPC_TRY(vector_index(op, a, dim, index, &p->d, false));
    } else {
        AMPC_TRY(ampc_wrap_dim(op, dim, a->ndim > 0 ? a->ndim : 1, &p->d));
        if (index->dtype != AMPC_INT64) return ampc_set_error(AMPC_E_RUNTIME, "%s: Expected dtype int64 for index", op);
    }
    if (src->dtype != a->dtype)
        return ampc_set_error(AMPC_E_RUNTIME, "%s: Expected self.dtype to be equal to src.dtype", op);
    int64_t a_shape[AMPC_MAX_DIMS], a_strides[AMPC_MAX_DIMS], s_shape[AMPC_MAX_DIMS];
    int nd = p->nd = nonempty_dims(a, a_shape, a_strides), d = p->d;
    if (nonempty_dims(src, s_shape, p->vstrides) != nd)
        return ampc_set_error(AMPC_E_RUNTIME, "%s: Index tensor must have the same number of dimensions as src tensor", op);
    if (index_form) {
        for (int i = 0; i < nd; i++)
            if (i != d && s_shape[i] != a_shape[i]) {
                char s1[160], s2[160];
                return ampc_set_error(AMPC_E_RUNTIME, "%s: source tensor shape must match self tensor shape, excluding the "
                                      "specified dimension. Got self.shape = %s source.shape = %s", op,
                                      ampc_shape_str(nd, a_shape, s1, sizeof s1), ampc_shape_str(nd, s_shape, s2, sizeof s2));
            }
        if (ampc_numel(index) != s_shape[d])
            return ampc_set_error(AMPC_E_RUNTIME, "%s: Number of indices (%lld) should be equal to source.size(dim) (%lld)",
                                  op, (long long)ampc_numel(index), (long long)s_shape[d]);
        memcpy(p->shape, s_shape, sizeof p->shape);
        p->istrides[d] = index->ndim ? index->strides[0] : 0;
        return AMPC_OK;
    }
    if (nonempty_dims(index, p->shape, p->istrides) != nd)
        return ampc_set_error(AMPC_E_RUNTIME, "%s: Index tensor must have the same number of dimensions as self tensor", op);
    for (int i = 0; i < nd; i++)
        if (p->shape[i] > s_shape[i] || (i != d && p->shape[i] > a_shape[i])) {
            char si[160], sa[160], ss[160];
            return ampc_set_error(AMPC_E_RUNTIME, "%s: Expected index %s to be no larger than self %s apart from dimension "
                                  "%d and to be no larger size than src %s", op, ampc_shape_str(nd, p->shape, si, sizeof si),
                                  ampc_shape_str(nd, a_shape, sa, sizeof sa), d, ampc_shape_str(nd, s_shape, ss, sizeof ss));
        }
    return AMPC_OK;
}

/* a.scatter_reduce_(...) / a.index_reduce_(...) without autograd */
static ampc_status reduce_into(ampc_tensor *a, int64_t dim, const ampc_tensor *index, const ampc_tensor *src,
                               ampc_reduce_kind kind, bool include_self, bool index_form) {
    const char *name = index_form ? "index_reduce_()" : "scatter_reduce()";
    ampc_op op = index_form ? AMPC_OP_INDEX_REDUCE : AMPC_OP_SCATTER_REDUCE;
    reduce_plan p;
    AMPC_TRY(reduce_plan_build(name, a, dim, index, src, index_form, &p));
    if (kind == AMPC_REDUCE_MEAN && a->dtype == AMPC_BOOL)
        return ampc_set_error(AMPC_E_NOT_IMPLEMENTED, "\"scatter_gather_tensor_cpu_reduce_mean\" not implemented for 'Bool'");
    if (index_form && !include_self && a->dtype == AMPC_BOOL)
        return ampc_set_error(AMPC_E_NOT_IMPLEMENTED, "\"index_reduce_func_exclude_input_init\" not implemented for 'Bool'");
    if (ampc_numel(index) == 0 || ampc_numel(a) == 0) return AMPC_OK;
    AMPC_TRY(ampc_check_writable_once(a));
    ampc_tensor *idx = index_int64(index, a), *vals = unaliased(src, a);
    ampc_status st = idx && vals ? AMPC_OK : ampc_last_status();
    if (st == AMPC_OK && !include_self) {
        ampc_scalar id = reduce_identity(kind, a->dtype);
        st = index_form ? index_write(a, dim, idx, NULL, id) : scatter_into(a, dim, idx, NULL, id);
    }
    if (st == AMPC_OK) {
        if (!index_form) nonempty_dims(idx, p.shape, p.istrides); /* idx may be a copy */
        else p.istrides[p.d] = idx->ndim ? idx->strides[0] : 0;
        nonempty_dims(vals, (int64_t[AMPC_MAX_DIMS]){0}, p.vstrides);
        bool sum = kind == AMPC_REDUCE_SUM || kind == AMPC_REDUCE_MEAN;
        int mode = kind == AMPC_REDUCE_PROD ? AMPC_SCATTER_REDUCE_PROD : kind == AMPC_REDUCE_AMAX ? AMPC_SCATTER_REDUCE_AMAX
                 : kind == AMPC_REDUCE_AMIN ? AMPC_SCATTER_REDUCE_AMIN : AMPC_SCATTER_REDUCE_NONE;
        st = scatter_run_as(op, sum, sum ? 0 : mode, a, p.d, idx, p.istrides, vals, p.vstrides, p.nd, p.shape);
    }
    if (st == AMPC_OK && kind == AMPC_REDUCE_MEAN) { /* a /= max(count, 1) */
        ampc_tensor *count = ampc_full(a->ndim, a->shape, ampc_scalar_int(include_self ? 1 : 0), a->dtype, a->device);
        ampc_tensor *one = ampc_full(0, NULL, ampc_scalar_int(1), a->dtype, a->device);
        int64_t zeros[AMPC_MAX_DIMS] = {0};
        st = count && one ? scatter_run_as(op, true, 0, count, p.d, idx, p.istrides, one, zeros, p.nd, p.shape)
                          : ampc_last_status();
        ampc_tensor *lo = st == AMPC_OK ? ampc_wrap_scalar(ampc_scalar_int(1), a->device) : NULL;
        ampc_tensor *c1 = lo ? ampc_binary(AMPC_OP_MAXIMUM, count, lo, ampc_scalar_none()) : NULL;
        ampc_tensor *q = !c1 ? NULL : ampc_dtype_is_floating(a->dtype) ? ampc_binary(AMPC_OP_DIV, a, c1, ampc_scalar_none())
                                                                     : ampc_div_mode(a, c1, 2);
        if (st == AMPC_OK) st = q ? ampc_copy_(a, q) : ampc_last_status();
        ampc_tensor_decref(count);
        ampc_tensor_decref(one);
        ampc_tensor_decref(lo);
        ampc_tensor_decref(c1);
        ampc_tensor_decref(q);
    }
    ampc_tensor_decref(idx);
    ampc_tensor_decref(vals);
    return st;
}

ampc_tensor *ampc_scatter_reduce(const ampc_tensor *a, int64_t dim, const ampc_tensor *index, const ampc_tensor *src,
                                 ampc_reduce_kind kind, bool include_self, bool index_form) {
    const ampc_tensor *ins[2] = {a, src};
    bool grad = ampc_any_requires_grad(2, ins);
    ampc_tensor *out;
    ampc_status st;
    bool prev = ampc_grad_mode_pause();
    out = ampc_clone(a);
    st = out ? reduce_into(out, dim, index, src, kind, include_self, index_form) : ampc_last_status();
    ampc_grad_mode_restore(prev);
    if (st != AMPC_OK) return fail_drop(out);
    if (!grad) return out;
    int d;
    ampc_wrap_dim("scatter_reduce", dim, a->ndim > 0 ? a->ndim : 1, &d);
    ampc_node_attrs at = {0};
    at.ints[0] = d, at.ints[1] = kind, at.ints[2] = include_self, at.ints[3] = index_form, at.n_ints = 4;
    const ampc_tensor *saved[4] = {index, a, src, out};
    ampc_op op = index_form ? AMPC_OP_INDEX_REDUCE : AMPC_OP_SCATTER_REDUCE;
    return ad_recorded(out, ampc_ad_record_shape_op(op, 2, ins, out, 4, saved, &at));
}

ampc_status ampc_scatter_reduce_(ampc_tensor *a, int64_t dim, const ampc_tensor *index, const ampc_tensor *src,
                                 ampc_reduce_kind kind, bool include_self, bool index_form) {
    const ampc_tensor *ins[2] = {a, src};
    if (!ampc_any_requires_grad(2, ins)) {
        AMPC_TRY(ampc_autograd_check_inplace(a));
        return reduce_into(a, dim, index, src, kind, include_self, index_form);
    }
    /* with autograd: the out-of-place result of a clone (its node saves the clone, which the copy
     * below does not modify) copied into a */
    AMPC_TRY(ampc_autograd_check_inplace(a));
    ampc_tensor *c = ampc_ad_clone(a);
    ampc_tensor *r = c ? ampc_scatter_reduce(c, dim, index, src, kind, include_self, index_form) : NULL;
    ampc_tensor_decref(c);
    ampc_status st = r ? ampc_copy_(a, r) : ampc_last_status();
    ampc_tensor_decref(r);
    return st;
}
