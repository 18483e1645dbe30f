/* index.c: frontends of indexing and joining: index_select, gather, scatter_add, index_add,
 * advanced indexing (a[i, j] and a[i, j] = v), masked_fill, nonzero, cat, stack and the split
 * family (split, chunk, unbind).
 *
 * Every op that moves elements by index reduces to one of two kernel forms, so a backend writes
 * two loops instead of six. The result (or, for writes, the region written) has a shape R. The
 * frontend views the indexed tensor with shape R, giving stride 0 to every dim an index tensor
 * addresses, and views each index tensor with shape R as well (stride 0 where it broadcasts).
 * The kernel then walks R like an elementwise op: the element for position p sits at
 * indexed(p) + sum_j index_j(p) * stride_j. This is PyTorch's TensorIterator trick for
 * index/index_put; gather is k = 1 with R = index.shape, index_select is k = 1 with R = a.shape
 * except n at `dim`, index_add is k = 1 with R = source.shape.
 *
 *   gather form (INDEX_SELECT, GATHER, INDEX; ampc_gather_args): out the result (R); src the
 *     source viewed as R; index0..index<k-1> int64 indices viewed as R; dims[j]: size, stride
 *     (elements) and dim of the source dim index j addresses (the dim only names it in errors).
 *   scatter form (SCATTER_ADD, INDEX_ADD, INDEX_PUT; ampc_scatter_args): dst the destination
 *     viewed as R; values (R, destination's dtype); indices and dims as above; accumulate;
 *     alpha (NONE: 1).
 *
 * Kernels check every index against its size before touching memory and fail with IndexError,
 * so a failed write leaves the destination unchanged.
 *
 * Autograd: each public frontend records its node once (rules in derivatives_index.c); the
 * in-place forms check the destination first. Internal steps (clone, copies, nonzero of masks)
 * are not recorded. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "autocast.h"
#include "autograd.h"
#include "derivatives.h"
#include "index_internal.h"
#include "kernel_args.h"
#include "ops.h"

/* Index tensors per kernel call (kernel_args.h). */
#define MAX_INDEX_TENSORS AMPC_MAX_INDEX_TENSORS


/* The C++ type names its masked_fill error uses ("float", "long int"). */
static const char *cpp_type_name(ampc_dtype dt) {
    static const char *const names[AMPC_NUM_DTYPES] = {"float", "c10::Half", "c10::BFloat16", "double",
                                                      "long int", "int", "unsigned char", "bool"};
    return ampc_dtype_is_valid(dt) ? names[dt] : "undefined";
}

/* Keeps `out` when its autograd node was recorded; else drops it (the error is set). */
static ampc_tensor *keep_if_recorded(ampc_tensor *out, ampc_status st) {
    if (st == AMPC_OK) return out;
    ampc_tensor_decref(out);
    return NULL;
}

static bool is_index_dtype(ampc_dtype dt) { return dt == AMPC_INT64 || dt == AMPC_INT32; }

/* Kernels take int64 indices only; int32 ones are widened here (index tensors are small next to
 * the data they address). */
static ampc_tensor *index_as_int64(const ampc_tensor *index) {
    return ampc_to(index, AMPC_INT64, index->device, false);
}

/* `t` seen with another shape and strides over the same memory. */
static ampc_tensor *restride(const ampc_tensor *t, int nd, const int64_t *shape, const int64_t *strides) {
    return ampc_as_strided(t, nd, shape, strides, t->offset);
}

/* A reference to `t`, or to a copy of it when it shares memory with `dst`: a kernel that writes
 * dst while reading t must not see its own writes (for index tensors that would even defeat the
 * bounds check made before the loop). */
static ampc_tensor *unaliased(const ampc_tensor *t, const ampc_tensor *dst) {
    if (t->storage == dst->storage) return ampc_clone(t);
    ampc_tensor_incref((ampc_tensor *)t);
    return (ampc_tensor *)t;
}

static ampc_status dispatch_index(ampc_op op, ampc_tensor *out0, const ampc_tensor *in0, int k,
                                  ampc_tensor *const *index_r, const int64_t *size, const int64_t *stride,
                                  const int *dim, bool accumulate, ampc_scalar alpha, int reduce) {
    /* The kernels' contract, checked once for every backend: one dtype for the data, at most
     * MAX_INDEX_TENSORS indices, all int64 (index_as_int64). */
    bool gather = op == AMPC_OP_INDEX_SELECT || op == AMPC_OP_GATHER || op == AMPC_OP_INDEX;
    if (out0->dtype != in0->dtype)
        return ampc_set_error(AMPC_E_RUNTIME, gather ? "%s: source and result dtypes differ"
                                                     : "%s: values and destination dtypes differ",
                              ampc_op_name(op));
    if (k < 0 || k > MAX_INDEX_TENSORS)
        return ampc_set_error(AMPC_E_RUNTIME, "%s: %d index tensors given, the kernels take at most %d",
                              ampc_op_name(op), k, MAX_INDEX_TENSORS);
    ampc_index_dim dims[AMPC_MAX_INDEX_TENSORS];
    const ampc_tensor *idx[AMPC_MAX_INDEX_TENSORS] = {NULL};
    memset(dims, 0, sizeof dims);
    for (int j = 0; j < k; j++) {
        if (index_r[j]->dtype != AMPC_INT64)
            return ampc_set_error(AMPC_E_RUNTIME, "%s: the kernels take int64 indices, got %s", ampc_op_name(op),
                                  ampc_dtype_name(index_r[j]->dtype));
        idx[j] = index_r[j];
        dims[j] = (ampc_index_dim){.size = size[j], .stride = stride[j], .dim = dim[j]};
    }
    if (gather) {
        ampc_gather_args g = {.out = out0, .src = in0, .index0 = idx[0], .index1 = idx[1], .index2 = idx[2],
                              .index3 = idx[3], .index4 = idx[4], .n_indices = k};
        memcpy(g.dims, dims, sizeof dims);
        return ampc_dispatch_gather(op, &g);
    }
    ampc_scatter_args sc = {.dst = out0, .values = in0, .index0 = idx[0], .index1 = idx[1], .index2 = idx[2],
                            .index3 = idx[3], .index4 = idx[4], .n_indices = k, .accumulate = accumulate,
                            .alpha = alpha, .reduce = reduce};
    memcpy(sc.dims, dims, sizeof dims);
    return ampc_dispatch_scatter(op, &sc);
}

/* Runs a one-index kernel: `target` is the tensor the index addresses (the source of a gather
 * form, the destination of a scatter form), seen as R = (nd, shape) with `target_strides`;
 * `index` is seen as R with `index_strides`. For the gather form `other` is the output (of R's
 * numel, contiguous), for the scatter form the values (already of shape R). */
static ampc_status run_one_index(ampc_op op, bool scatter, const ampc_tensor *target, const ampc_tensor *other,
                                 int nd, const int64_t *shape, const int64_t *target_strides,
                                 const ampc_tensor *index, const int64_t *index_strides, int dim,
                                 int64_t size, int64_t stride, ampc_scalar alpha) {
    return ampc_index_run_one(op, scatter, true, 0, target, other, nd, shape, target_strides, index, index_strides,
                              dim, size, stride, alpha);
}

ampc_status ampc_index_run_one(ampc_op op, bool scatter, bool accumulate, int reduce, const ampc_tensor *target,
                               const ampc_tensor *other, int nd, const int64_t *shape, const int64_t *target_strides,
                               const ampc_tensor *index, const int64_t *index_strides, int dim, int64_t size,
                               int64_t stride, ampc_scalar alpha) {
    int64_t out_strides[AMPC_MAX_DIMS];
    ampc_contiguous_strides(nd, shape, out_strides);
    ampc_tensor *target_r = restride(target, nd, shape, target_strides);
    ampc_tensor *index_r = restride(index, nd, shape, index_strides);
    ampc_tensor *other_r = scatter ? restride(other, nd, shape, other->strides) : restride(other, nd, shape, out_strides);
    ampc_status st = ampc_last_status();
    if (target_r && index_r && other_r)
        st = scatter ? dispatch_index(op, target_r, other_r, 1, &index_r, &size, &stride, &dim, accumulate, alpha, reduce)
                     : dispatch_index(op, other_r, target_r, 1, &index_r, &size, &stride, &dim, false, alpha, 0);
    ampc_tensor_decref(target_r);
    ampc_tensor_decref(index_r);
    ampc_tensor_decref(other_r);
    return st;
}

/* PyTorch treats a 0-dim tensor as 1-dim of size 1 in gather/scatter/index_select
 * (ensure_nonempty_dim); these fill shape/strides that way. */
static int nonempty_dims(const ampc_tensor *t, int64_t *shape, int64_t *strides) {
    if (t->ndim == 0) {
        shape[0] = 1;
        strides[0] = 0;
        return 1;
    }
    memcpy(shape, t->shape, sizeof(int64_t) * (size_t)t->ndim);
    memcpy(strides, t->strides, sizeof(int64_t) * (size_t)t->ndim);
    return t->ndim;
}

/* ---------------------------------------------------------------- index_select */

ampc_tensor *ampc_index_select(const ampc_tensor *a, int64_t dim, const ampc_tensor *index) {
    int d;
    if (ampc_wrap_dim("index_select", dim, a->ndim, &d) != AMPC_OK) return NULL;
    if (index->ndim > 1) {
        ampc_set_error(AMPC_E_INDEX, "index_select(): Index is supposed to be a vector");
        return NULL;
    }
    if (!is_index_dtype(index->dtype)) {
        ampc_set_error(AMPC_E_RUNTIME, "index_select(): Expected dtype int32 or int64 for index");
        return NULL;
    }
    int64_t n = ampc_numel(index);
    if (a->ndim == 0 && n != 1) {
        ampc_set_error(AMPC_E_RUNTIME, "index_select(): Index to scalar can have only 1 value, got %lld value(s)",
                       (long long)n);
        return NULL;
    }
    int64_t shape[AMPC_MAX_DIMS], src_strides[AMPC_MAX_DIMS], index_strides[AMPC_MAX_DIMS] = {0};
    int nd = nonempty_dims(a, shape, src_strides);
    int64_t size = shape[d], stride = src_strides[d];
    shape[d] = n;            /* (..., n, ...) */
    src_strides[d] = 0;      /* the index moves along `dim` */
    index_strides[d] = index->ndim ? index->strides[0] : 0;
    ampc_tensor *idx = index_as_int64(index);
    ampc_tensor *out = idx ? ampc_empty(a->ndim, shape, a->dtype, a->device) : NULL;
    if (out && run_one_index(AMPC_OP_INDEX_SELECT, false, a, out, nd, shape, src_strides, idx, index_strides, d,
                             size, stride, ampc_scalar_none()) != AMPC_OK) {
        ampc_tensor_decref(out);
        out = NULL;
    }
    ampc_tensor_decref(idx);
    if (out && ampc_any_requires_grad(1, &a)) out = keep_if_recorded(out, ampc_ad_record_index_select(a, dim, index, out));
    return out;
}

/* ---------------------------------------------------------------- gather / scatter_add */

ampc_tensor *ampc_gather(const ampc_tensor *a, int64_t dim, const ampc_tensor *index) {
    int d;
    if (ampc_wrap_dim("gather", dim, a->ndim, &d) != AMPC_OK) return NULL;
    if (!is_index_dtype(index->dtype)) {
        ampc_set_error(AMPC_E_RUNTIME, "gather(): Expected dtype int32/int64 for index");
        return NULL;
    }
    int64_t a_shape[AMPC_MAX_DIMS], a_strides[AMPC_MAX_DIMS], shape[AMPC_MAX_DIMS], index_strides[AMPC_MAX_DIMS];
    int nd = nonempty_dims(a, a_shape, a_strides);
    if (nonempty_dims(index, shape, index_strides) != nd) {
        ampc_set_error(AMPC_E_RUNTIME, "gather(): Index tensor must have the same number of dimensions as input tensor");
        return NULL;
    }
    if (ampc_numel(index) > 0)
        for (int i = 0; i < nd; i++)
            if (i != d && shape[i] > a_shape[i]) {
                char si[160], sa[160];
                ampc_set_error(AMPC_E_RUNTIME,
                               "gather(): Size does not match at dimension %d expected index %s to be no larger "
                               "than self %s apart from dimension %d",
                               i, ampc_shape_str(nd, shape, si, sizeof si), ampc_shape_str(nd, a_shape, sa, sizeof sa), d);
                return NULL;
            }
    int64_t size = a_shape[d], stride = a_strides[d];
    a_strides[d] = 0;
    ampc_tensor *idx = index_as_int64(index);
    ampc_tensor *out = idx ? ampc_empty(index->ndim, index->shape, a->dtype, a->device) : NULL;
    if (out) {
        /* idx is a fresh copy when index was int32: take its strides */
        nonempty_dims(idx, shape, index_strides);
        if (run_one_index(AMPC_OP_GATHER, false, a, out, nd, shape, a_strides, idx, index_strides, d, size, stride,
                          ampc_scalar_none()) != AMPC_OK) {
            ampc_tensor_decref(out);
            out = NULL;
        }
    }
    ampc_tensor_decref(idx);
    if (out && ampc_any_requires_grad(1, &a)) out = keep_if_recorded(out, ampc_ad_record_gather(a, dim, index, out));
    return out;
}

/* a.scatter_add_(dim, index, src) without autograd */
static ampc_status scatter_add_into(ampc_tensor *a, int64_t dim, const ampc_tensor *index, const ampc_tensor *src) {
    int d;
    AMPC_TRY(ampc_wrap_dim("scatter_add", dim, a->ndim, &d));
    if (!is_index_dtype(index->dtype))
        return ampc_set_error(AMPC_E_RUNTIME, "scatter(): Expected dtype int32/int64 for index");
    if (src->dtype != a->dtype)
        return ampc_set_error(AMPC_E_RUNTIME, "scatter(): Expected self.dtype to be equal to src.dtype");
    int64_t a_shape[AMPC_MAX_DIMS], a_strides[AMPC_MAX_DIMS], shape[AMPC_MAX_DIMS], index_strides[AMPC_MAX_DIMS];
    int64_t src_shape[AMPC_MAX_DIMS], src_strides[AMPC_MAX_DIMS];
    int nd = nonempty_dims(a, a_shape, a_strides);
    if (nonempty_dims(index, shape, index_strides) != nd)
        return ampc_set_error(AMPC_E_RUNTIME, "scatter_add(): Index tensor must have the same number of dimensions as self tensor");
    if (nonempty_dims(src, src_shape, src_strides) != nd)
        return ampc_set_error(AMPC_E_RUNTIME, "scatter_add(): Index tensor must have the same number of dimensions as src tensor");
    if (ampc_numel(index) == 0) return AMPC_OK;
    for (int i = 0; i < nd; i++)
        if (shape[i] > src_shape[i] || (i != d && shape[i] > a_shape[i])) {
            char si[160], sa[160], ss[160];
            return ampc_set_error(AMPC_E_RUNTIME,
                                  "scatter_add(): Expected index %s to be no larger than self %s apart from dimension "
                                  "%d and to be no larger size than src %s",
                                  ampc_shape_str(nd, shape, si, sizeof si), ampc_shape_str(nd, a_shape, sa, sizeof sa),
                                  d, ampc_shape_str(nd, src_shape, ss, sizeof ss));
        }
    int64_t size = a_shape[d], stride = a_strides[d];
    a_strides[d] = 0;
    ampc_status st = AMPC_OK;
    ampc_tensor *idx0 = index_as_int64(index);
    ampc_tensor *idx = idx0 ? unaliased(idx0, a) : NULL;
    ampc_tensor *src_u = unaliased(src, a);
    /* src seen with the index's shape (it may be larger) */
    if (src_u) nonempty_dims(src_u, src_shape, src_strides);
    ampc_tensor *values = src_u ? restride(src_u, nd, shape, src_strides) : NULL;
    if (!idx || !values) {
        st = ampc_last_status();
    } else {
        nonempty_dims(idx, shape, index_strides);
        st = run_one_index(AMPC_OP_SCATTER_ADD, true, a, values, nd, shape, a_strides, idx, index_strides, d, size,
                           stride, ampc_scalar_none());
        if (st == AMPC_OK) a->storage->version++;
    }
    ampc_tensor_decref(idx0);
    ampc_tensor_decref(idx);
    ampc_tensor_decref(src_u);
    ampc_tensor_decref(values);
    return st;
}

ampc_status ampc_scatter_add_(ampc_tensor *a, int64_t dim, const ampc_tensor *index, const ampc_tensor *src) {
    AMPC_TRY(ampc_autograd_check_inplace(a));
    AMPC_TRY(scatter_add_into(a, dim, index, src));
    const ampc_tensor *ins[2] = {a, src};
    return ampc_any_requires_grad(2, ins) ? ampc_ad_record_scatter_add(a, dim, index, src, a) : AMPC_OK;
}

ampc_tensor *ampc_scatter_add(const ampc_tensor *a, int64_t dim, const ampc_tensor *index, const ampc_tensor *src) {
    ampc_autocast_scope ac;
    int acr = ampc_autocast_enter(AMPC_OP_SCATTER_ADD, 2, (const ampc_tensor *[]){a, src}, false, &ac);
    if (acr) return acr < 0 ? NULL : ampc_autocast_exit(&ac, ampc_scatter_add(ac.t[0], dim, index, ac.t[1]));
    ampc_tensor *out = ampc_clone(a);
    if (out && scatter_add_into(out, dim, index, src) != AMPC_OK) {
        ampc_tensor_decref(out);
        return NULL;
    }
    const ampc_tensor *ins[2] = {a, src};
    if (out && ampc_any_requires_grad(2, ins))
        out = keep_if_recorded(out, ampc_ad_record_scatter_add(a, dim, index, src, out));
    return out;
}

/* ---------------------------------------------------------------- index_add */

/* a.index_add_(dim, index, src, alpha) without autograd */
static ampc_status index_add_into(ampc_tensor *a, int64_t dim, const ampc_tensor *index, const ampc_tensor *src,
                                  double alpha) {
    int d;
    AMPC_TRY(ampc_wrap_dim("index_add_", dim, a->ndim, &d));
    char si[160], sa[160];
    if (index->ndim > 1)
        return ampc_set_error(AMPC_E_INDEX,
                              "index_add_(): Index is supposed to be a vector, but got dim: %d with type: %s and size: %s",
                              index->ndim, ampc_dtype_torch_name(index->dtype),
                              ampc_shape_str(index->ndim, index->shape, si, sizeof si));
    if (!is_index_dtype(index->dtype))
        return ampc_set_error(AMPC_E_RUNTIME, "index_add_(): Expected dtype int32/int64 for index but got: %s",
                              ampc_dtype_torch_name(index->dtype));
    if (src->dtype != a->dtype)
        return ampc_set_error(AMPC_E_RUNTIME, "index_add_(): self (%s) and source (%s) must have the same scalar type",
                              ampc_dtype_torch_name(a->dtype), ampc_dtype_torch_name(src->dtype));
    int64_t n = ampc_numel(index);
    int64_t a_shape[AMPC_MAX_DIMS], a_strides[AMPC_MAX_DIMS], shape[AMPC_MAX_DIMS], src_strides[AMPC_MAX_DIMS];
    int nd = nonempty_dims(a, a_shape, a_strides);
    bool same = src->ndim == a->ndim;
    nonempty_dims(src, shape, src_strides);
    for (int i = 0; same && i < nd; i++)
        if (i != d && shape[i] != a_shape[i]) same = false;
    if (!same)
        return ampc_set_error(AMPC_E_RUNTIME,
                              "index_add_(): source tensor shape must match self tensor shape, excluding the specified "
                              "dimension. Got self.shape = %s source.shape = %s",
                              ampc_shape_str(a->ndim, a->shape, sa, sizeof sa),
                              ampc_shape_str(src->ndim, src->shape, si, sizeof si));
    if (n != shape[d])
        return ampc_set_error(AMPC_E_RUNTIME,
                              "index_add_(): Number of indices (%lld) should be equal to source.size(dim): (%lld), for dim: %d",
                              (long long)n, (long long)shape[d], d);
    int64_t size = a_shape[d], stride = a_strides[d], index_strides[AMPC_MAX_DIMS] = {0};
    a_strides[d] = 0;
    ampc_status st;
    ampc_tensor *idx0 = index_as_int64(index);
    ampc_tensor *idx = idx0 ? unaliased(idx0, a) : NULL;
    ampc_tensor *src_u = unaliased(src, a);
    if (!idx || !src_u) {
        st = ampc_last_status();
    } else {
        index_strides[d] = idx->ndim ? idx->strides[0] : 0;
        ampc_scalar alpha_s = ampc_dtype_is_floating(a->dtype) ? ampc_scalar_float(alpha)
                                                               : ampc_scalar_int((int64_t)alpha);
        /* R = source.shape; source seen with nonempty dims */
        nonempty_dims(src_u, shape, src_strides);
        ampc_tensor *values = restride(src_u, nd, shape, src_strides);
        st = values ? run_one_index(AMPC_OP_INDEX_ADD, true, a, values, nd, shape, a_strides, idx, index_strides, d,
                                    size, stride, alpha_s)
                    : ampc_last_status();
        ampc_tensor_decref(values);
        if (st == AMPC_OK) a->storage->version++;
    }
    ampc_tensor_decref(idx0);
    ampc_tensor_decref(idx);
    ampc_tensor_decref(src_u);
    return st;
}

ampc_status ampc_index_add_(ampc_tensor *a, int64_t dim, const ampc_tensor *index, const ampc_tensor *src,
                            double alpha) {
    AMPC_TRY(ampc_autograd_check_inplace(a));
    AMPC_TRY(index_add_into(a, dim, index, src, alpha));
    const ampc_tensor *ins[2] = {a, src};
    return ampc_any_requires_grad(2, ins) ? ampc_ad_record_index_add(a, dim, index, src, alpha, a) : AMPC_OK;
}

ampc_tensor *ampc_index_add(const ampc_tensor *a, int64_t dim, const ampc_tensor *index, const ampc_tensor *src,
                            double alpha) {
    ampc_tensor *out = ampc_clone(a);
    if (out && index_add_into(out, dim, index, src, alpha) != AMPC_OK) {
        ampc_tensor_decref(out);
        return NULL;
    }
    const ampc_tensor *ins[2] = {a, src};
    if (out && ampc_any_requires_grad(2, ins))
        out = keep_if_recorded(out, ampc_ad_record_index_add(a, dim, index, src, alpha, out));
    return out;
}

/* ---------------------------------------------------------------- advanced indexing */

/* a[i0, :, i2] as the kernels see it: the indexed tensor (after masks became index tensors),
 * the int64 index tensors with the dims they address, and the result shape R with the strides
 * that view the tensor and each index as R. */
typedef struct index_plan {
    ampc_tensor *view;                     /* owned: `a`, or a view of it (0-dim masks, merged dims) */
    int k;
    ampc_tensor *index[MAX_INDEX_TENSORS]; /* owned, int64 */
    int dim[MAX_INDEX_TENSORS];            /* dim of `view` each addresses, increasing */
    int nd;
    int64_t shape[AMPC_MAX_DIMS];          /* R */
    int64_t view_strides[AMPC_MAX_DIMS];   /* `view` seen as R: 0 on the indexed dims */
    int64_t index_strides[MAX_INDEX_TENSORS][AMPC_MAX_DIMS];
} index_plan;

static void plan_release(index_plan *p) {
    ampc_tensor_decref(p->view);
    for (int j = 0; j < p->k; j++) ampc_tensor_decref(p->index[j]);
}

static ampc_status too_many_indices(const ampc_tensor *a) {
    return ampc_set_error(AMPC_E_INDEX, "too many indices for tensor of dimension %d", a->ndim);
}

/* Takes the reference to `index`. */
static ampc_status plan_add(index_plan *p, ampc_tensor *index, int dim) {
    if (!index) return ampc_last_status();
    if (p->k == MAX_INDEX_TENSORS) {
        ampc_tensor_decref(index);
        return ampc_set_error(AMPC_E_NOT_IMPLEMENTED,
                              "index: ampc supports at most %d index tensors in one indexing expression (a "
                              "boolean mask counts once per dim it covers unless those dims are contiguous)",
                              MAX_INDEX_TENSORS);
    }
    p->index[p->k] = index;
    p->dim[p->k] = dim;
    p->k++;
    return AMPC_OK;
}

/* Replaces p->view by a view in which dims [pos, pos + n) are one dim, when memory allows it. */
static bool merge_dims(index_plan *p, int pos, int n) {
    const ampc_tensor *v = p->view;
    for (int i = pos; i < pos + n - 1; i++)
        if (v->strides[i] != v->strides[i + 1] * v->shape[i + 1]) return false;
    int64_t shape[AMPC_MAX_DIMS], strides[AMPC_MAX_DIMS];
    int nd = 0;
    for (int i = 0; i < v->ndim; i++) {
        if (i > pos && i < pos + n) {
            shape[nd - 1] *= v->shape[i];
            strides[nd - 1] = v->strides[i];
            continue;
        }
        shape[nd] = v->shape[i];
        strides[nd] = v->strides[i];
        nd++;
    }
    ampc_tensor *merged = restride(v, nd, shape, strides);
    if (!merged) return false;
    ampc_tensor_decref(p->view);
    p->view = merged;
    return true;
}

/* A bool/uint8 mask at dim *pos: becomes one int64 index per dim it covers (its nonzero()). */
static ampc_status plan_add_mask(index_plan *p, const ampc_tensor *a, const ampc_tensor *mask, int *pos) {
    ampc_tensor *m;
    if (mask->ndim == 0) {
        /* a[True] / a[False]: a new dim of size 1 that the mask then keeps or drops */
        ampc_tensor *v = ampc_unsqueeze(p->view, *pos);
        if (!v) return ampc_last_status();
        ampc_tensor_decref(p->view);
        p->view = v;
        int64_t one = 1, zero = 0;
        m = restride(mask, 1, &one, &zero);
    } else {
        ampc_tensor_incref((ampc_tensor *)mask);
        m = (ampc_tensor *)mask;
    }
    if (!m) return ampc_last_status();
    int n = m->ndim;
    if (*pos + n > p->view->ndim) {
        ampc_tensor_decref(m);
        return too_many_indices(a);
    }
    for (int j = 0; j < n; j++)
        if (m->shape[j] != p->view->shape[*pos + j]) {
            char sm[160], sv[160];
            ampc_set_error(AMPC_E_INDEX,
                           "The shape of the mask %s at index %d does not match the shape of the indexed tensor %s "
                           "at index %d",
                           ampc_shape_str(m->ndim, m->shape, sm, sizeof sm), j,
                           ampc_shape_str(p->view->ndim, p->view->shape, sv, sizeof sv), *pos + j);
            ampc_tensor_decref(m);
            return AMPC_E_INDEX;
        }
    /* A mask over dims laid out as one becomes one index instead of n: fewer index tensors
     * and less work per element. */
    if (n > 1 && merge_dims(p, *pos, n)) {
        int64_t numel = ampc_numel(m);
        ampc_tensor *flat = ampc_reshape(m, 1, &numel);
        ampc_tensor_decref(m);
        if (!flat) return ampc_last_status();
        m = flat;
        n = 1;
    }
    ampc_tensor *nz = ampc_nonzero(m); /* (count, n) */
    ampc_tensor_decref(m);
    if (!nz) return ampc_last_status();
    ampc_status st = AMPC_OK;
    for (int j = 0; j < n && st == AMPC_OK; j++) st = plan_add(p, ampc_select(nz, 1, j), *pos + j);
    ampc_tensor_decref(nz);
    *pos += n;
    return st;
}

/* Broadcasts the index tensors together (NumPy) into b, failing with PyTorch's IndexError. */
static ampc_status broadcast_indices(const index_plan *p, int *nb, int64_t *b) {
    *nb = 0;
    for (int j = 0; j < p->k; j++) {
        int64_t tmp[AMPC_MAX_DIMS];
        int nt;
        if (ampc_broadcast_shapes("index", *nb, b, p->index[j]->ndim, p->index[j]->shape, &nt, tmp) != AMPC_OK) {
            char msg[512], s[160];
            size_t len = 0;
            for (int i = 0; i < p->k && len < sizeof msg; i++)
                len += (size_t)snprintf(msg + len, sizeof msg - len, i ? ", %s" : "%s",
                                        ampc_shape_str(p->index[i]->ndim, p->index[i]->shape, s, sizeof s));
            return ampc_set_error(AMPC_E_INDEX,
                                  "shape mismatch: indexing tensors could not be broadcast together with shapes %s", msg);
        }
        *nb = nt;
        memcpy(b, tmp, sizeof(int64_t) * (size_t)nt);
    }
    return AMPC_OK;
}

/* Appends the broadcast block (the index tensors' common shape) to R at position p->nd. */
static void place_broadcast_dims(index_plan *p, int nb, const int64_t *b) {
    for (int i = 0; i < nb; i++, p->nd++) {
        p->shape[p->nd] = b[i];
        p->view_strides[p->nd] = 0;
        for (int j = 0; j < p->k; j++) {
            const ampc_tensor *t = p->index[j];
            int jj = i - (nb - t->ndim);
            p->index_strides[j][p->nd] = (jj < 0 || t->shape[jj] == 1) ? 0 : t->strides[jj];
        }
    }
}

/* Reads the indexing expression: each entry NULL (consumes one dim), an int64/int32 index
 * (one dim) or a bool/uint8 mask (as many dims as it has). Then R after NumPy's rule: the
 * broadcast block sits where the indexed dims were when they are adjacent, else first. */
static ampc_status plan_build(index_plan *p, const ampc_tensor *a, int n_idx, const ampc_tensor *const *indices) {
    memset(p, 0, sizeof *p);
    ampc_tensor_incref((ampc_tensor *)a);
    p->view = (ampc_tensor *)a;
    int pos = 0;
    for (int i = 0; i < n_idx; i++) {
        const ampc_tensor *e = indices[i];
        if (!e || is_index_dtype(e->dtype)) {
            if (pos >= p->view->ndim) return too_many_indices(a);
            if (e) AMPC_TRY(plan_add(p, index_as_int64(e), pos));
            pos++;
        } else if (e->dtype == AMPC_BOOL || e->dtype == AMPC_UINT8) {
            AMPC_TRY(plan_add_mask(p, a, e, &pos));
        } else {
            return ampc_set_error(AMPC_E_INDEX, "tensors used as indices must be long, int, byte or bool tensors");
        }
    }
    int nb;
    int64_t b[AMPC_MAX_DIMS];
    AMPC_TRY(broadcast_indices(p, &nb, b));
    const ampc_tensor *v = p->view;
    if (v->ndim - p->k + nb > AMPC_MAX_DIMS)
        return ampc_set_error(AMPC_E_VALUE, "index: the result would have %d dims; ampc tensors have at most %d",
                              v->ndim - p->k + nb, AMPC_MAX_DIMS);
    bool adjacent = true;
    for (int j = 1; j < p->k; j++)
        if (p->dim[j] != p->dim[j - 1] + 1) adjacent = false;
    if (!adjacent) place_broadcast_dims(p, nb, b);
    for (int d = 0, j = 0; d < v->ndim; d++) {
        if (j < p->k && d == p->dim[j]) {
            if (adjacent && j == 0) place_broadcast_dims(p, nb, b);
            j++;
            continue;
        }
        p->shape[p->nd] = v->shape[d];
        p->view_strides[p->nd] = v->strides[d];
        for (int jj = 0; jj < p->k; jj++) p->index_strides[jj][p->nd] = 0;
        p->nd++;
    }
    return AMPC_OK;
}

/* Views the indices as R and runs the kernel. */
static ampc_status plan_dispatch(ampc_op op, const index_plan *p, ampc_tensor *out0, const ampc_tensor *in0,
                                 bool accumulate) {
    ampc_tensor *index_r[MAX_INDEX_TENSORS] = {NULL};
    int64_t size[MAX_INDEX_TENSORS], stride[MAX_INDEX_TENSORS];
    ampc_status st = AMPC_OK;
    for (int j = 0; j < p->k && st == AMPC_OK; j++) {
        index_r[j] = restride(p->index[j], p->nd, p->shape, p->index_strides[j]);
        if (!index_r[j]) st = ampc_last_status();
        size[j] = p->view->shape[p->dim[j]];
        stride[j] = p->view->strides[p->dim[j]];
    }
    if (st == AMPC_OK)
        st = dispatch_index(op, out0, in0, p->k, index_r, size, stride, p->dim, accumulate, ampc_scalar_none(), 0);
    for (int j = 0; j < p->k; j++) ampc_tensor_decref(index_r[j]);
    return st;
}

ampc_tensor *ampc_index(const ampc_tensor *a, int n_idx, const ampc_tensor *const *indices) {
    index_plan p;
    ampc_tensor *out = NULL, *src = NULL;
    if (plan_build(&p, a, n_idx, indices) == AMPC_OK) {
        out = ampc_empty(p.nd, p.shape, a->dtype, a->device);
        src = out ? restride(p.view, p.nd, p.shape, p.view_strides) : NULL;
        if (!src || plan_dispatch(AMPC_OP_INDEX, &p, out, src, false) != AMPC_OK) {
            ampc_tensor_decref(out);
            out = NULL;
        }
    }
    ampc_tensor_decref(src);
    plan_release(&p);
    if (out && ampc_any_requires_grad(1, &a)) out = keep_if_recorded(out, ampc_ad_record_index(a, n_idx, indices, out));
    return out;
}

/* a[indices] = values (+= with accumulate) without autograd */
static ampc_status index_put_into(ampc_tensor *a, int n_idx, const ampc_tensor *const *indices,
                                  const ampc_tensor *values, bool accumulate) {
    if (values->dtype != a->dtype)
        return ampc_set_error(AMPC_E_RUNTIME,
                              "Index put requires the source and destination dtypes match, got %s for the destination "
                              "and %s for the source.",
                              ampc_dtype_torch_name(a->dtype), ampc_dtype_torch_name(values->dtype));
    index_plan p;
    ampc_status st = plan_build(&p, a, n_idx, indices);
    ampc_tensor *vals = NULL, *dst = NULL;
    if (st == AMPC_OK) {
        int nd;
        int64_t shape[AMPC_MAX_DIMS];
        if (ampc_broadcast_shapes("index_put_", p.nd, p.shape, values->ndim, values->shape, &nd, shape) != AMPC_OK ||
            nd != p.nd || memcmp(shape, p.shape, sizeof(int64_t) * (size_t)nd) != 0) {
            char sv[160], sr[160];
            st = ampc_set_error(AMPC_E_RUNTIME,
                                "shape mismatch: value tensor of shape %s cannot be broadcast to indexing result of "
                                "shape %s",
                                ampc_shape_str(values->ndim, values->shape, sv, sizeof sv),
                                ampc_shape_str(p.nd, p.shape, sr, sizeof sr));
        }
    }
    for (int j = 0; j < p.k && st == AMPC_OK; j++) {
        ampc_tensor *u = unaliased(p.index[j], a);
        if (!u) st = ampc_last_status();
        ampc_tensor_decref(p.index[j]);
        p.index[j] = u; /* NULL is fine for plan_release */
    }
    if (st == AMPC_OK) {
        ampc_tensor *v = unaliased(values, a);
        vals = v ? ampc_expand(v, p.nd, p.shape) : NULL;
        ampc_tensor_decref(v);
        dst = vals ? restride(p.view, p.nd, p.shape, p.view_strides) : NULL;
        st = dst ? plan_dispatch(AMPC_OP_INDEX_PUT, &p, dst, vals, accumulate) : ampc_last_status();
        if (st == AMPC_OK) a->storage->version++;
    }
    ampc_tensor_decref(vals);
    ampc_tensor_decref(dst);
    plan_release(&p);
    return st;
}

ampc_status ampc_index_put_(ampc_tensor *a, int n_idx, const ampc_tensor *const *indices, const ampc_tensor *values,
                            bool accumulate) {
    AMPC_TRY(ampc_autograd_check_inplace(a));
    AMPC_TRY(index_put_into(a, n_idx, indices, values, accumulate));
    const ampc_tensor *ins[2] = {a, values};
    return ampc_any_requires_grad(2, ins) ? ampc_ad_record_index_put_(a, n_idx, indices, values, accumulate) : AMPC_OK;
}

ampc_tensor *ampc_index_put(const ampc_tensor *a, int n_idx, const ampc_tensor *const *indices,
                            const ampc_tensor *values, bool accumulate) {
    ampc_autocast_scope ac;
    int acr = ampc_autocast_enter(AMPC_OP_INDEX_PUT, 2, (const ampc_tensor *[]){a, values}, false, &ac);
    if (acr) return acr < 0 ? NULL : ampc_autocast_exit(&ac, ampc_index_put(ac.t[0], n_idx, indices, ac.t[1], accumulate));
    /* a differentiable clone, then the in-place op on it: IndexPutBackward0 over CloneBackward0 */
    ampc_tensor *out = ampc_ad_clone(a);
    if (out && ampc_index_put_(out, n_idx, indices, values, accumulate) != AMPC_OK) {
        ampc_tensor_decref(out);
        return NULL;
    }
    return out;
}

/* ---------------------------------------------------------------- masked_fill */

static ampc_status check_mask_dtype(const ampc_tensor *mask) {
    if (mask->dtype != AMPC_BOOL)
        return ampc_set_error(AMPC_E_RUNTIME, "masked_fill_ only supports boolean masks, but got mask with dtype %s",
                              cpp_type_name(mask->dtype));
    return AMPC_OK;
}

/* a.masked_fill_(mask, value) without autograd */
static ampc_status masked_fill_into(ampc_tensor *a, const ampc_tensor *mask, ampc_scalar value) {
    AMPC_TRY(check_mask_dtype(mask));
    int nd;
    int64_t shape[AMPC_MAX_DIMS];
    AMPC_TRY(ampc_broadcast_shapes("masked_fill_", a->ndim, a->shape, mask->ndim, mask->shape, &nd, shape));
    if (nd != a->ndim || memcmp(shape, a->shape, sizeof(int64_t) * (size_t)nd) != 0) {
        char sa[160], sb[160];
        return ampc_set_error(AMPC_E_RUNTIME, "masked_fill_: output with shape %s doesn't match the broadcast shape %s",
                              ampc_shape_str(a->ndim, a->shape, sa, sizeof sa), ampc_shape_str(nd, shape, sb, sizeof sb));
    }
    /* The value stored once in a's dtype on a's device (FILL does the conversion); the kernel
     * copies its bytes. */
    ampc_tensor *v = ampc_full(0, NULL, value, a->dtype, a->device);
    if (!v) return ampc_last_status();
    ampc_tensor *m = unaliased(mask, a);
    ampc_status st = ampc_last_status();
    if (m) {
        ampc_masked_fill_args args = {.dst = a, .mask = m, .value = v};
        st = ampc_dispatch_masked_fill(AMPC_OP_MASKED_FILL, &args);
        if (st == AMPC_OK) a->storage->version++;
    }
    ampc_tensor_decref(m);
    ampc_tensor_decref(v);
    return st;
}

/* The MASKED_FILL row's contract, checked by every device's kernel. */
ampc_status ampc_masked_fill_check(ampc_op op, const ampc_masked_fill_args *p) {
    if (p->mask->dtype != AMPC_BOOL || p->value->dtype != p->dst->dtype || p->value->ndim != 0)
        return ampc_set_error(AMPC_E_RUNTIME, "%s: expects a bool mask and a 0-dim value of the output's dtype",
                              ampc_op_name(op));
    return AMPC_OK;
}

ampc_status ampc_masked_fill_(ampc_tensor *a, const ampc_tensor *mask, ampc_scalar value) {
    AMPC_TRY(ampc_autograd_check_inplace(a));
    AMPC_TRY(masked_fill_into(a, mask, value));
    const ampc_tensor *ins[1] = {a};
    return ampc_any_requires_grad(1, ins) ? ampc_ad_record_masked_fill(a, mask, a) : AMPC_OK;
}

ampc_tensor *ampc_masked_fill(const ampc_tensor *a, const ampc_tensor *mask, ampc_scalar value) {
    if (check_mask_dtype(mask) != AMPC_OK) return NULL;
    int nd;
    int64_t shape[AMPC_MAX_DIMS];
    if (ampc_broadcast_shapes("masked_fill", a->ndim, a->shape, mask->ndim, mask->shape, &nd, shape) != AMPC_OK)
        return NULL;
    /* out-of-place, the result takes the broadcast shape of a and mask (PyTorch) */
    ampc_tensor *expanded = ampc_expand(a, nd, shape);
    ampc_tensor *out = expanded ? ampc_clone(expanded) : NULL;
    ampc_tensor_decref(expanded);
    if (out && masked_fill_into(out, mask, value) != AMPC_OK) {
        ampc_tensor_decref(out);
        return NULL;
    }
    if (out && ampc_any_requires_grad(1, &a)) out = keep_if_recorded(out, ampc_ad_record_masked_fill(a, mask, out));
    return out;
}

/* ---------------------------------------------------------------- nonzero */

ampc_tensor *ampc_nonzero(const ampc_tensor *a) {
    /* Two kernel passes: count (the output's size), then fill. */
    ampc_tensor *count = ampc_empty(0, NULL, AMPC_INT64, a->device);
    if (!count) return NULL;
    ampc_nonzero_args args = {.out = count, .input = a, .fill = false};
    ampc_scalar n;
    ampc_status st = ampc_dispatch_nonzero(AMPC_OP_NONZERO, &args);
    if (st == AMPC_OK) st = ampc_get_scalar(count, 0, &n);
    ampc_tensor_decref(count);
    if (st != AMPC_OK) return NULL;
    int64_t shape[2] = {n.v.i, a->ndim};
    ampc_tensor *out = ampc_empty(2, shape, AMPC_INT64, a->device);
    if (!out || n.v.i == 0 || a->ndim == 0) return out;
    args.out = out;
    args.fill = true;
    if (ampc_dispatch_nonzero(AMPC_OP_NONZERO, &args) != AMPC_OK) {
        ampc_tensor_decref(out);
        return NULL;
    }
    return out;
}

/* ---------------------------------------------------------------- cat / stack */

static ampc_status check_devices(const char *op, int n, const ampc_tensor *const *ts) {
    for (int i = 1; i < n; i++)
        if (!ampc_device_eq(ts[i]->device, ts[0]->device)) {
            char d0[32], d1[32];
            return ampc_set_error(AMPC_E_RUNTIME,
                                  "Expected all tensors to be on the same device, but found at least two devices, "
                                  "%s and %s! (in %s)",
                                  ampc_device_str(ts[0]->device, d0, sizeof d0),
                                  ampc_device_str(ts[i]->device, d1, sizeof d1), op);
        }
    return AMPC_OK;
}

static ampc_dtype promote_all(int n, const ampc_tensor *const *ts) {
    ampc_dtype dt = AMPC_DTYPE_UNDEFINED;
    for (int i = 0; i < n; i++) dt = ampc_promote_types(dt, ts[i]->dtype);
    return dt;
}

/* PyTorch still skips 1-D empty tensors in cat's shape checks (legacy behaviour), so
 * cat([torch.tensor([]), x]) works for any x. */
static bool cat_skips(const ampc_tensor *t) { return t->ndim == 1 && t->shape[0] == 0; }

ampc_tensor *ampc_cat(int n, const ampc_tensor *const *ts, int64_t dim) {
    if (ampc_autocast_check_list_promote(AMPC_OP_CAT, n, ts) < 0) return NULL;
    if (n > 0 && ampc_any_requires_grad(n, ts)) return ampc_ad_cat(n, ts, dim); /* copies below then record nothing */
    if (n <= 0) {
        ampc_set_error(AMPC_E_VALUE, "cat(): expected a non-empty list of Tensors");
        return NULL;
    }
    for (int i = 0; i < n; i++)
        if (ts[i]->ndim == 0) {
            ampc_set_error(AMPC_E_RUNTIME, "cat(): zero-dimensional tensor (at position %d) cannot be concatenated", i);
            return NULL;
        }
    if (check_devices("cat", n, ts) != AMPC_OK) return NULL;
    ampc_dtype dtype = promote_all(n, ts);
    const ampc_tensor *ref = NULL;
    for (int i = 0; i < n && !ref; i++)
        if (!cat_skips(ts[i])) ref = ts[i];
    if (!ref) {
        int64_t zero = 0;
        return ampc_empty(1, &zero, dtype, ts[0]->device);
    }
    int d;
    if (ampc_wrap_dim("cat", dim, ref->ndim, &d) != AMPC_OK) return NULL;
    int64_t shape[AMPC_MAX_DIMS];
    memcpy(shape, ref->shape, sizeof shape);
    shape[d] = 0;
    for (int i = 0; i < n; i++) {
        const ampc_tensor *t = ts[i];
        if (cat_skips(t)) continue;
        if (t->ndim != ref->ndim) {
            ampc_set_error(AMPC_E_RUNTIME, "cat(): Tensors must have same number of dimensions: got %d and %d",
                           ref->ndim, t->ndim);
            return NULL;
        }
        for (int j = 0; j < t->ndim; j++)
            if (j != d && t->shape[j] != ref->shape[j]) {
                ampc_set_error(AMPC_E_RUNTIME,
                               "cat(): Sizes of tensors must match except in dimension %d. Expected size %lld but got "
                               "size %lld for tensor number %d in the list.",
                               d, (long long)ref->shape[j], (long long)t->shape[j], i);
                return NULL;
            }
        shape[d] += t->shape[d];
    }
    ampc_tensor *out = ampc_empty(ref->ndim, shape, dtype, ref->device);
    /* One COPY (with the cast to the promoted dtype) into each input's slice of the output. */
    int64_t start = 0;
    for (int i = 0; i < n && out; i++) {
        const ampc_tensor *t = ts[i];
        if (cat_skips(t) || t->shape[d] == 0) continue;
        ampc_tensor *slice = ampc_narrow(out, d, start, t->shape[d]);
        if (!slice || ampc_copy_(slice, t) != AMPC_OK) {
            ampc_tensor_decref(out);
            out = NULL;
        }
        ampc_tensor_decref(slice);
        start += t->shape[d];
    }
    if (out && ampc_any_requires_grad(n, ts)) out = keep_if_recorded(out, ampc_ad_record_cat(n, ts, dim, out));
    return out;
}

ampc_tensor *ampc_stack(int n, const ampc_tensor *const *ts, int64_t dim) {
    if (ampc_autocast_check_list_promote(AMPC_OP_STACK, n, ts) < 0) return NULL;
    if (n > 0 && ampc_any_requires_grad(n, ts)) return ampc_ad_stack(n, ts, dim); /* copies below then record nothing */
    if (n <= 0) {
        ampc_set_error(AMPC_E_RUNTIME, "stack expects a non-empty TensorList");
        return NULL;
    }
    const ampc_tensor *ref = ts[0];
    for (int i = 1; i < n; i++)
        if (ts[i]->ndim != ref->ndim ||
            memcmp(ts[i]->shape, ref->shape, sizeof(int64_t) * (size_t)ref->ndim) != 0) {
            char s0[160], si[160];
            ampc_set_error(AMPC_E_RUNTIME, "stack expects each tensor to be equal size, but got %s at entry 0 and %s at entry %d",
                           ampc_shape_str(ref->ndim, ref->shape, s0, sizeof s0),
                           ampc_shape_str(ts[i]->ndim, ts[i]->shape, si, sizeof si), i);
            return NULL;
        }
    int d;
    if (ampc_wrap_dim("stack", dim, ref->ndim + 1, &d) != AMPC_OK) return NULL;
    if (ref->ndim + 1 > AMPC_MAX_DIMS) {
        ampc_set_error(AMPC_E_VALUE, "stack: ampc tensors have at most %d dims", AMPC_MAX_DIMS);
        return NULL;
    }
    if (check_devices("stack", n, ts) != AMPC_OK) return NULL;
    int64_t shape[AMPC_MAX_DIMS];
    for (int i = 0, j = 0; i <= ref->ndim; i++) shape[i] = i == d ? n : ref->shape[j++];
    ampc_tensor *out = ampc_empty(ref->ndim + 1, shape, promote_all(n, ts), ref->device);
    for (int i = 0; i < n && out; i++) {
        ampc_tensor *slot = ampc_select(out, d, i);
        if (!slot || ampc_copy_(slot, ts[i]) != AMPC_OK) {
            ampc_tensor_decref(out);
            out = NULL;
        }
        ampc_tensor_decref(slot);
    }
    if (out && ampc_any_requires_grad(n, ts)) out = keep_if_recorded(out, ampc_ad_record_stack(n, ts, dim, out));
    return out;
}

/* ---------------------------------------------------------------- split / chunk / unbind */

void ampc_tensor_list_free(ampc_tensor **list, int64_t n) {
    if (!list) return;
    for (int64_t i = 0; i < n; i++) ampc_tensor_decref(list[i]);
    free(list);
}

static ampc_tensor **list_alloc(int64_t n) {
    ampc_tensor **list = (ampc_tensor **)calloc((size_t)(n > 0 ? n : 1), sizeof *list);
    if (!list) ampc_set_error(AMPC_E_NOMEM, "out of host memory for a list of %lld tensors", (long long)n);
    return list;
}

/* Pieces of `a` along dim d of the given lengths (they sum to the dim's size). */
static ampc_tensor **narrow_pieces(const ampc_tensor *a, int d, int64_t n, const int64_t *lengths,
                                   int64_t uniform, int64_t *n_out) {
    ampc_tensor **list = list_alloc(n);
    if (!list) return NULL;
    int64_t start = 0;
    for (int64_t i = 0; i < n; i++) {
        int64_t len = lengths ? lengths[i] : (uniform < a->shape[d] - start ? uniform : a->shape[d] - start);
        list[i] = ampc_narrow(a, d, start, len);
        if (!list[i]) {
            ampc_tensor_list_free(list, i);
            return NULL;
        }
        start += len;
    }
    if (ampc_any_requires_grad(1, &a) && ampc_ad_record_split(a, d, false, n, list) != AMPC_OK) {
        ampc_tensor_list_free(list, n);
        return NULL;
    }
    *n_out = n;
    return list;
}

ampc_tensor **ampc_split(const ampc_tensor *a, int64_t split_size, int64_t dim, int64_t *n) {
    int d;
    if (a->ndim == 0) {
        ampc_set_error(AMPC_E_RUNTIME, "split expects at least a 1-dimensional tensor");
        return NULL;
    }
    if (split_size < 0) {
        ampc_set_error(AMPC_E_RUNTIME, "split expects split_size be non-negative, but got split_size=%lld",
                       (long long)split_size);
        return NULL;
    }
    if (ampc_wrap_dim("split", dim, a->ndim, &d) != AMPC_OK) return NULL;
    int64_t size = a->shape[d];
    if (split_size == 0 && size != 0) {
        ampc_set_error(AMPC_E_RUNTIME, "split_size can only be 0 if dimension size is 0, but got dimension size of %lld",
                       (long long)size);
        return NULL;
    }
    int64_t pieces = split_size == 0 ? 1 : (size + split_size - 1) / split_size;
    if (pieces < 1) pieces = 1;
    return narrow_pieces(a, d, pieces, NULL, split_size, n);
}

ampc_tensor **ampc_split_with_sizes(const ampc_tensor *a, int n_sizes, const int64_t *sizes, int64_t dim,
                                    int64_t *n) {
    int d;
    if (a->ndim == 0) {
        ampc_set_error(AMPC_E_RUNTIME, "split expects at least a 1-dimensional tensor");
        return NULL;
    }
    if (ampc_wrap_dim("split_with_sizes", dim, a->ndim, &d) != AMPC_OK) return NULL;
    int64_t sum = 0;
    bool negative = false;
    for (int i = 0; i < n_sizes; i++) {
        sum += sizes[i];
        negative |= sizes[i] < 0;
    }
    if (negative || sum != a->shape[d]) {
        char s[400];
        size_t len = (size_t)snprintf(s, sizeof s, "[");
        for (int i = 0; i < n_sizes && len < sizeof s; i++)
            len += (size_t)snprintf(s + len, sizeof s - len, i ? ", %lld" : "%lld", (long long)sizes[i]);
        if (len < sizeof s) snprintf(s + len, sizeof s - len, "]");
        if (negative)
            ampc_set_error(AMPC_E_RUNTIME,
                           "split_with_sizes expects split_sizes have only non-negative entries, but got split_sizes=%s", s);
        else
            ampc_set_error(AMPC_E_RUNTIME,
                           "split_with_sizes expects split_sizes to sum exactly to %lld (input tensor's size at "
                           "dimension %d), but got split_sizes=%s",
                           (long long)a->shape[d], d, s);
        return NULL;
    }
    return narrow_pieces(a, d, n_sizes, sizes, 0, n);
}

ampc_tensor **ampc_chunk(const ampc_tensor *a, int64_t chunks, int64_t dim, int64_t *n) {
    int d;
    if (a->ndim == 0) {
        ampc_set_error(AMPC_E_RUNTIME, "chunk expects at least a 1-dimensional tensor");
        return NULL;
    }
    if (chunks <= 0) {
        ampc_set_error(AMPC_E_RUNTIME, "chunk expects `chunks` to be greater than 0, got: %lld", (long long)chunks);
        return NULL;
    }
    if (ampc_wrap_dim("chunk", dim, a->ndim, &d) != AMPC_OK) return NULL;
    int64_t size = a->shape[d];
    int64_t split_size = (size + chunks - 1) / chunks;
    /* An empty dim still yields `chunks` empty pieces (split alone would give one). */
    if (size == 0) return narrow_pieces(a, d, chunks, NULL, 0, n);
    return ampc_split(a, split_size, d, n);
}

ampc_tensor **ampc_unbind(const ampc_tensor *a, int64_t dim, int64_t *n) {
    int d;
    if (a->ndim == 0) {
        ampc_set_error(AMPC_E_INDEX, "Dimension specified as %lld but tensor has no dimensions", (long long)dim);
        return NULL;
    }
    if (ampc_wrap_dim("unbind", dim, a->ndim, &d) != AMPC_OK) return NULL;
    int64_t count = a->shape[d];
    ampc_tensor **list = list_alloc(count);
    if (!list) return NULL;
    for (int64_t i = 0; i < count; i++) {
        list[i] = ampc_select(a, d, i);
        if (!list[i]) {
            ampc_tensor_list_free(list, i);
            return NULL;
        }
    }
    if (ampc_any_requires_grad(1, &a) && ampc_ad_record_split(a, d, true, count, list) != AMPC_OK) {
        ampc_tensor_list_free(list, count);
        return NULL;
    }
    *n = count;
    return list;
}
