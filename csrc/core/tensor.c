/* tensor.c: tensor lifetime, shape helpers, creation and views.
 *
 * Views never copy: they make a new ampc_tensor over the same storage with other shape, strides
 * and offset, and remember their base (view_base) as PyTorch does for autograd and autocast. */
#include "tensor.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "derivatives.h"
#include "dispatch.h"
#include "kernel_args.h"

void (*ampc_tensor_free_hook)(ampc_tensor *t) = NULL;

void ampc_tensor_incref(ampc_tensor *t) { t->refcount++; }

static int64_t live_tensors = 0; /* debug counter: tests check graphs free their tensors */

int64_t ampc_live_tensors(void) { return live_tensors; }

void ampc_tensor_decref(ampc_tensor *t) {
    if (!t || --t->refcount > 0) return;
    if (ampc_tensor_free_hook) ampc_tensor_free_hook(t);
    if (t->grad_fn || t->autograd_meta) ampc_autograd_tensor_release(t); /* iterative: see autograd.c */
    live_tensors--;
    ampc_tensor_decref(t->grad);
    ampc_tensor_decref(t->view_base);
    ampc_storage_decref(t->storage);
    free(t);
}

int64_t ampc_numel(const ampc_tensor *t) {
    int64_t n = 1;
    for (int i = 0; i < t->ndim; i++) n *= t->shape[i];
    return n;
}

size_t ampc_nbytes(const ampc_tensor *t) { return (size_t)ampc_numel(t) * ampc_dtype_itemsize(t->dtype); }

void *ampc_data_ptr(const ampc_tensor *t) {
    return (char *)t->storage->data + t->offset * (int64_t)ampc_dtype_itemsize(t->dtype);
}

bool ampc_is_contiguous(const ampc_tensor *t) {
    int64_t expected = 1;
    for (int i = t->ndim - 1; i >= 0; i--) {
        if (t->shape[i] == 1) continue; /* PyTorch ignores strides of size-1 dims */
        if (t->shape[i] == 0) return true;
        if (t->strides[i] != expected) return false;
        expected *= t->shape[i];
    }
    return true;
}

void ampc_contiguous_strides(int ndim, const int64_t *shape, int64_t *strides) {
    int64_t s = 1;
    for (int i = ndim - 1; i >= 0; i--) {
        strides[i] = s;
        s *= shape[i] > 1 ? shape[i] : 1;
    }
}

ampc_status ampc_wrap_dim(const char *op, int64_t dim, int ndim, int *out) {
    int n = ndim > 0 ? ndim : 1; /* a 0-dim tensor accepts dim 0 and -1, like PyTorch */
    if (dim < -n || dim >= n)
        return ampc_set_error(AMPC_E_INDEX,
                              "%s: Dimension out of range (expected to be in range of [%d, %d], but got %lld)",
                              op, -n, n - 1, (long long)dim);
    *out = (int)(dim < 0 ? dim + n : dim);
    return AMPC_OK;
}

const char *ampc_shape_str(int ndim, const int64_t *shape, char *buf, size_t cap) {
    size_t pos = 0;
    pos += (size_t)snprintf(buf + pos, cap - pos, "[");
    for (int i = 0; i < ndim && pos < cap; i++)
        pos += (size_t)snprintf(buf + pos, cap - pos, i ? ", %lld" : "%lld", (long long)shape[i]);
    if (pos < cap) snprintf(buf + pos, cap - pos, "]");
    return buf;
}

ampc_status ampc_broadcast_shapes(const char *op, int nda, const int64_t *a, int ndb,
                                  const int64_t *b, int *ndout, int64_t *out) {
    int nd = nda > ndb ? nda : ndb;
    for (int i = 0; i < nd; i++) {
        int ia = nda - nd + i, ib = ndb - nd + i;
        int64_t da = ia >= 0 ? a[ia] : 1, db = ib >= 0 ? b[ib] : 1;
        if (da != db && da != 1 && db != 1) {
            char sa[160], sb[160];
            return ampc_set_error(AMPC_E_RUNTIME,
                                  "%s: The size of tensor a (%lld) must match the size of tensor b (%lld) "
                                  "at non-singleton dimension %d (shapes %s and %s)",
                                  op, (long long)da, (long long)db, i, ampc_shape_str(nda, a, sa, sizeof sa),
                                  ampc_shape_str(ndb, b, sb, sizeof sb));
        }
        out[i] = da == 1 ? db : da;
    }
    *ndout = nd;
    return AMPC_OK;
}

/* ---------------------------------------------------------------- creation */

static ampc_tensor *tensor_alloc(void) {
    ampc_tensor *t = (ampc_tensor *)calloc(1, sizeof *t);
    if (!t) {
        ampc_set_error(AMPC_E_NOMEM, "out of host memory allocating a tensor");
    } else {
        t->refcount = 1;
        live_tensors++;
    }
    return t;
}

static ampc_status check_shape(const char *op, int ndim, const int64_t *shape) {
    if (ndim < 0 || ndim > AMPC_MAX_DIMS)
        return ampc_set_error(AMPC_E_VALUE, "%s: ampc tensors have at most %d dims, got %d", op,
                              AMPC_MAX_DIMS, ndim);
    for (int i = 0; i < ndim; i++)
        if (shape[i] < 0)
            return ampc_set_error(AMPC_E_RUNTIME, "%s: Trying to create tensor with negative dimension %lld",
                                  op, (long long)shape[i]);
    return AMPC_OK;
}

ampc_tensor *ampc_tensor_from_storage(ampc_storage *storage, int64_t offset, int ndim,
                                      const int64_t *shape, const int64_t *strides, ampc_dtype dtype) {
    if (check_shape("tensor", ndim, shape) != AMPC_OK) return NULL;
    ampc_tensor *t = tensor_alloc();
    if (!t) return NULL;
    ampc_storage_incref(storage);
    t->storage = storage;
    t->offset = offset;
    t->ndim = ndim;
    if (ndim) memcpy(t->shape, shape, sizeof(int64_t) * (size_t)ndim);
    if (strides && ndim)
        memcpy(t->strides, strides, sizeof(int64_t) * (size_t)ndim);
    else
        ampc_contiguous_strides(ndim, shape, t->strides);
    t->dtype = dtype;
    t->device = storage->device;
    return t;
}

ampc_tensor *ampc_empty(int ndim, const int64_t *shape, ampc_dtype dtype, ampc_device device) {
    if (!ampc_dtype_is_valid(dtype)) {
        ampc_set_error(AMPC_E_TYPE, "empty: invalid dtype %d", (int)dtype);
        return NULL;
    }
    if (check_shape("empty", ndim, shape) != AMPC_OK) return NULL;
    int64_t numel = 1;
    for (int i = 0; i < ndim; i++) {
        if (shape[i] && numel > INT64_MAX / 16 / shape[i]) {
            ampc_set_error(AMPC_E_NOMEM, "empty: tensor of this shape is too large");
            return NULL;
        }
        numel *= shape[i];
    }
    ampc_storage *s = ampc_storage_new(device, (size_t)numel * ampc_dtype_itemsize(dtype));
    if (!s) return NULL;
    ampc_tensor *t = ampc_tensor_from_storage(s, 0, ndim, shape, NULL, dtype);
    ampc_storage_decref(s);
    return t;
}

ampc_tensor *ampc_empty_like(const ampc_tensor *t) { return ampc_empty(t->ndim, t->shape, t->dtype, t->device); }

ampc_tensor *ampc_full(int ndim, const int64_t *shape, ampc_scalar value, ampc_dtype dtype, ampc_device device) {
    ampc_tensor *t = ampc_empty(ndim, shape, dtype, device);
    if (t && ampc_fill_(t, value) != AMPC_OK) {
        ampc_tensor_decref(t);
        return NULL;
    }
    return t;
}

ampc_tensor *ampc_zeros(int ndim, const int64_t *shape, ampc_dtype dtype, ampc_device device) {
    ampc_tensor *t = ampc_empty(ndim, shape, dtype, device);
    if (t && ampc_zero_(t) != AMPC_OK) {
        ampc_tensor_decref(t);
        return NULL;
    }
    return t;
}

ampc_tensor *ampc_wrap_scalar(ampc_scalar value, ampc_device device) {
    ampc_tensor *t = ampc_full(0, NULL, value, ampc_scalar_dtype(value), device);
    if (t) t->is_wrapped_number = true;
    return t;
}

/* ---------------------------------------------------------------- views */

ampc_tensor *ampc_as_strided(const ampc_tensor *t, int ndim, const int64_t *shape,
                             const int64_t *strides, int64_t offset) {
    ampc_tensor *v = ampc_tensor_from_storage(t->storage, offset, ndim, shape, strides, t->dtype);
    if (!v) return NULL;
    v->device = t->device;
    ampc_tensor *base = t->view_base ? t->view_base : (ampc_tensor *)t;
    ampc_tensor_incref(base);
    v->view_base = base;
    return v;
}

ampc_tensor *ampc_alias(const ampc_tensor *t) {
    if (ampc_any_requires_grad(1, (const ampc_tensor *[]){t})) return ampc_ad_alias(t);
    return ampc_as_strided(t, t->ndim, t->shape, t->strides, t->offset);
}

/* Fills in a single -1 of a requested shape from numel, or fails like PyTorch. */
static ampc_status infer_shape(const char *op, int64_t numel, int ndim, const int64_t *req, int64_t *out) {
    if (ndim > AMPC_MAX_DIMS)
        return ampc_set_error(AMPC_E_VALUE, "%s: ampc tensors have at most %d dims, got %d", op, AMPC_MAX_DIMS, ndim);
    int infer = -1;
    int64_t known = 1;
    for (int i = 0; i < ndim; i++) {
        if (req[i] == -1) {
            if (infer >= 0) return ampc_set_error(AMPC_E_RUNTIME, "%s: only one dimension can be inferred", op);
            infer = i;
        } else if (req[i] < 0) {
            return ampc_set_error(AMPC_E_RUNTIME, "%s: invalid shape dimension %lld", op, (long long)req[i]);
        } else {
            known *= req[i];
        }
        out[i] = req[i];
    }
    char buf[200];
    if (infer >= 0) {
        if (known == 0 || numel % known != 0)
            return ampc_set_error(AMPC_E_RUNTIME, "%s: shape '%s' is invalid for input of size %lld", op,
                                  ampc_shape_str(ndim, req, buf, sizeof buf), (long long)numel);
        out[infer] = numel / known;
    } else if (known != numel) {
        return ampc_set_error(AMPC_E_RUNTIME, "%s: shape '%s' is invalid for input of size %lld", op,
                              ampc_shape_str(ndim, req, buf, sizeof buf), (long long)numel);
    }
    return AMPC_OK;
}

/* Strides for viewing t with a new shape without copying, or false when impossible
 * (PyTorch's computeStride: walk chunks of dims that are contiguous with each other). */
static bool view_strides(const ampc_tensor *t, int ndim, const int64_t *shape, int64_t *strides) {
    int64_t numel = ampc_numel(t);
    if (numel == 0 || t->ndim == 0) {
        ampc_contiguous_strides(ndim, shape, strides);
        return true;
    }
    int view_d = ndim - 1;
    int64_t chunk_base_stride = t->strides[t->ndim - 1];
    int64_t tensor_numel = 1, view_numel = 1;
    for (int tensor_d = t->ndim - 1; tensor_d >= 0; tensor_d--) {
        tensor_numel *= t->shape[tensor_d];
        if (tensor_d == 0 ||
            (t->shape[tensor_d - 1] != 1 && t->strides[tensor_d - 1] != tensor_numel * chunk_base_stride)) {
            while (view_d >= 0 && (view_numel < tensor_numel || shape[view_d] == 1)) {
                strides[view_d] = view_numel * chunk_base_stride;
                view_numel *= shape[view_d];
                view_d--;
            }
            if (view_numel != tensor_numel) return false;
            if (tensor_d > 0) {
                chunk_base_stride = t->strides[tensor_d - 1];
                tensor_numel = 1;
                view_numel = 1;
            }
        }
    }
    return view_d == -1;
}

ampc_tensor *ampc_view(const ampc_tensor *t, int ndim, const int64_t *shape) {
    if (ampc_any_requires_grad(1, (const ampc_tensor *[]){t})) return ampc_ad_view(t, ndim, shape);
    int64_t real[AMPC_MAX_DIMS], strides[AMPC_MAX_DIMS];
    if (infer_shape("view", ampc_numel(t), ndim, shape, real) != AMPC_OK) return NULL;
    if (!view_strides(t, ndim, real, strides)) {
        ampc_set_error(AMPC_E_RUNTIME,
                       "view size is not compatible with input tensor's size and stride (at least one "
                       "dimension spans across two contiguous subspaces). Use .reshape(...) instead.");
        return NULL;
    }
    return ampc_as_strided(t, ndim, real, strides, t->offset);
}

ampc_tensor *ampc_reshape(const ampc_tensor *t, int ndim, const int64_t *shape) {
    if (ampc_any_requires_grad(1, (const ampc_tensor *[]){t})) return ampc_ad_reshape(t, ndim, shape);
    int64_t real[AMPC_MAX_DIMS], strides[AMPC_MAX_DIMS];
    if (infer_shape("reshape", ampc_numel(t), ndim, shape, real) != AMPC_OK) return NULL;
    if (view_strides(t, ndim, real, strides)) return ampc_as_strided(t, ndim, real, strides, t->offset);
    ampc_tensor *c = ampc_contiguous(t);
    if (!c) return NULL;
    ampc_tensor *v = ampc_tensor_from_storage(c->storage, c->offset, ndim, real, NULL, c->dtype);
    ampc_tensor_decref(c);
    return v;
}

ampc_tensor *ampc_permute(const ampc_tensor *t, int ndim, const int64_t *dims) {
    if (ampc_any_requires_grad(1, (const ampc_tensor *[]){t})) return ampc_ad_permute(t, ndim, dims);
    if (ndim != t->ndim) {
        ampc_set_error(AMPC_E_RUNTIME,
                       "permute(sparse_coo): number of dimensions in the tensor input does not match the "
                       "length of the desired ordering of dimensions i.e. input.dim() = %d is not equal to "
                       "len(dims) = %d",
                       t->ndim, ndim);
        return NULL;
    }
    int64_t shape[AMPC_MAX_DIMS], strides[AMPC_MAX_DIMS];
    bool seen[AMPC_MAX_DIMS] = {false};
    for (int i = 0; i < ndim; i++) {
        int d;
        if (ampc_wrap_dim("permute", dims[i], ndim, &d) != AMPC_OK) return NULL;
        if (seen[d]) {
            ampc_set_error(AMPC_E_RUNTIME, "permute(): duplicate dims are not allowed.");
            return NULL;
        }
        seen[d] = true;
        shape[i] = t->shape[d];
        strides[i] = t->strides[d];
    }
    return ampc_as_strided(t, ndim, shape, strides, t->offset);
}

ampc_tensor *ampc_transpose(const ampc_tensor *t, int64_t dim0, int64_t dim1) {
    if (ampc_any_requires_grad(1, (const ampc_tensor *[]){t})) return ampc_ad_transpose(t, dim0, dim1);
    int d0, d1;
    if (ampc_wrap_dim("transpose", dim0, t->ndim, &d0) != AMPC_OK ||
        ampc_wrap_dim("transpose", dim1, t->ndim, &d1) != AMPC_OK)
        return NULL;
    int64_t shape[AMPC_MAX_DIMS], strides[AMPC_MAX_DIMS];
    memcpy(shape, t->shape, sizeof shape);
    memcpy(strides, t->strides, sizeof strides);
    if (t->ndim > 0) {
        shape[d0] = t->shape[d1];
        shape[d1] = t->shape[d0];
        strides[d0] = t->strides[d1];
        strides[d1] = t->strides[d0];
    }
    return ampc_as_strided(t, t->ndim, shape, strides, t->offset);
}

ampc_tensor *ampc_unsqueeze(const ampc_tensor *t, int64_t dim) {
    if (ampc_any_requires_grad(1, (const ampc_tensor *[]){t})) return ampc_ad_unsqueeze(t, dim);
    int d;
    if (t->ndim >= AMPC_MAX_DIMS) {
        ampc_set_error(AMPC_E_VALUE, "unsqueeze: ampc tensors have at most %d dims", AMPC_MAX_DIMS);
        return NULL;
    }
    if (ampc_wrap_dim("unsqueeze", dim, t->ndim + 1, &d) != AMPC_OK) return NULL;
    int64_t shape[AMPC_MAX_DIMS], strides[AMPC_MAX_DIMS];
    for (int i = 0, j = 0; i <= t->ndim; i++) {
        if (i == d) {
            shape[i] = 1;
            strides[i] = j < t->ndim ? t->strides[j] * t->shape[j] : 1;
        } else {
            shape[i] = t->shape[j];
            strides[i] = t->strides[j];
            j++;
        }
    }
    return ampc_as_strided(t, t->ndim + 1, shape, strides, t->offset);
}

ampc_tensor *ampc_squeeze(const ampc_tensor *t, int ndims, const int64_t *dims) {
    if (ampc_any_requires_grad(1, (const ampc_tensor *[]){t})) return ampc_ad_squeeze(t, ndims, dims);
    bool drop[AMPC_MAX_DIMS] = {false};
    if (ndims == 0) {
        for (int i = 0; i < t->ndim; i++) drop[i] = t->shape[i] == 1;
    } else {
        for (int k = 0; k < ndims; k++) {
            int d;
            if (ampc_wrap_dim("squeeze", dims[k], t->ndim, &d) != AMPC_OK) return NULL;
            if (t->ndim > 0 && t->shape[d] == 1) drop[d] = true;
        }
    }
    int64_t shape[AMPC_MAX_DIMS], strides[AMPC_MAX_DIMS];
    int nd = 0;
    for (int i = 0; i < t->ndim; i++)
        if (!drop[i]) {
            shape[nd] = t->shape[i];
            strides[nd] = t->strides[i];
            nd++;
        }
    return ampc_as_strided(t, nd, shape, strides, t->offset);
}

ampc_tensor *ampc_expand(const ampc_tensor *t, int ndim, const int64_t *shape) {
    if (ampc_any_requires_grad(1, (const ampc_tensor *[]){t})) return ampc_ad_expand(t, ndim, shape);
    char sa[160], sb[160];
    if (ndim < t->ndim || ndim > AMPC_MAX_DIMS) {
        ampc_set_error(AMPC_E_RUNTIME,
                       "expand: the number of sizes provided (%d) must be greater or equal to the number "
                       "of dimensions in the tensor (%d)",
                       ndim, t->ndim);
        return NULL;
    }
    int64_t out_shape[AMPC_MAX_DIMS], strides[AMPC_MAX_DIMS];
    for (int i = ndim - 1; i >= 0; i--) {
        int j = i - (ndim - t->ndim);
        int64_t want = shape[i];
        if (j < 0) {
            if (want < 0) {
                ampc_set_error(AMPC_E_RUNTIME,
                               "expand: The expanded size of the tensor (-1) isn't allowed in a leading, "
                               "non-existing dimension %d",
                               i);
                return NULL;
            }
            out_shape[i] = want;
            strides[i] = 0;
        } else {
            int64_t have = t->shape[j];
            if (want == -1) want = have;
            if (have == want) {
                out_shape[i] = have;
                strides[i] = t->strides[j];
            } else if (have == 1 && want >= 0) {
                out_shape[i] = want;
                strides[i] = 0;
            } else {
                ampc_set_error(AMPC_E_RUNTIME,
                               "expand: The expanded size of the tensor (%lld) must match the existing size "
                               "(%lld) at non-singleton dimension %d.  Target sizes: %s.  Tensor sizes: %s",
                               (long long)want, (long long)have, i, ampc_shape_str(ndim, shape, sa, sizeof sa),
                               ampc_shape_str(t->ndim, t->shape, sb, sizeof sb));
                return NULL;
            }
        }
    }
    return ampc_as_strided(t, ndim, out_shape, strides, t->offset);
}

ampc_tensor *ampc_slice(const ampc_tensor *t, int64_t dim, int64_t start, int64_t stop, int64_t step) {
    if (ampc_any_requires_grad(1, (const ampc_tensor *[]){t})) return ampc_ad_slice(t, dim, start, stop, step);
    int d;
    if (t->ndim == 0) {
        ampc_set_error(AMPC_E_INDEX, "slice() cannot be applied to a 0-dim tensor.");
        return NULL;
    }
    if (ampc_wrap_dim("slice", dim, t->ndim, &d) != AMPC_OK) return NULL;
    if (step <= 0) {
        ampc_set_error(AMPC_E_VALUE, "slice: step must be greater than zero, got %lld", (long long)step);
        return NULL;
    }
    int64_t n = t->shape[d];
    if (start < 0) start += n;
    if (stop < 0) stop += n;
    if (start < 0) start = 0;
    if (start > n) start = n;
    if (stop < start) stop = start;
    if (stop > n) stop = n;
    int64_t shape[AMPC_MAX_DIMS], strides[AMPC_MAX_DIMS];
    memcpy(shape, t->shape, sizeof shape);
    memcpy(strides, t->strides, sizeof strides);
    shape[d] = (stop - start + step - 1) / step;
    strides[d] = t->strides[d] * step;
    return ampc_as_strided(t, t->ndim, shape, strides, t->offset + start * t->strides[d]);
}

/* The dim narrow and select take, which a 0-dim tensor lacks (PyTorch raises `code` for it). */
static ampc_status wrap_dim_not_0d(const char *op, ampc_status code, const ampc_tensor *t, int64_t dim, int *d) {
    if (t->ndim == 0) return ampc_set_error(code, "%s() cannot be applied to a 0-dim tensor.", op);
    return ampc_wrap_dim(op, dim, t->ndim, d);
}

ampc_tensor *ampc_narrow(const ampc_tensor *t, int64_t dim, int64_t start, int64_t length) {
    int d;
    if (wrap_dim_not_0d("narrow", AMPC_E_RUNTIME, t, dim, &d) != AMPC_OK) return NULL;
    int64_t n = t->shape[d];
    if (start < 0) start += n;
    if (start < 0 || start > n || length < 0 || start + length > n) {
        ampc_set_error(AMPC_E_INDEX, "narrow: start (%lld) + length (%lld) exceeds dimension size (%lld).",
                       (long long)start, (long long)length, (long long)n);
        return NULL;
    }
    return ampc_slice(t, d, start, start + length, 1);
}

ampc_tensor *ampc_select(const ampc_tensor *t, int64_t dim, int64_t index) {
    if (ampc_any_requires_grad(1, (const ampc_tensor *[]){t})) return ampc_ad_select(t, dim, index);
    int d;
    if (wrap_dim_not_0d("select", AMPC_E_INDEX, t, dim, &d) != AMPC_OK) return NULL;
    int64_t n = t->shape[d];
    if (index < -n || index >= n) {
        ampc_set_error(AMPC_E_INDEX, "index %lld is out of bounds for dimension %d with size %lld",
                       (long long)index, d, (long long)n);
        return NULL;
    }
    if (index < 0) index += n;
    int64_t shape[AMPC_MAX_DIMS], strides[AMPC_MAX_DIMS];
    for (int i = 0, j = 0; i < t->ndim; i++)
        if (i != d) {
            shape[j] = t->shape[i];
            strides[j] = t->strides[i];
            j++;
        }
    return ampc_as_strided(t, t->ndim - 1, shape, strides, t->offset + index * t->strides[d]);
}

ampc_tensor *ampc_flatten(const ampc_tensor *t, int64_t start_dim, int64_t end_dim) {
    int s, e;
    if (t->ndim == 0) {
        int64_t one = 1;
        return ampc_reshape(t, 1, &one);
    }
    if (ampc_wrap_dim("flatten", start_dim, t->ndim, &s) != AMPC_OK ||
        ampc_wrap_dim("flatten", end_dim, t->ndim, &e) != AMPC_OK)
        return NULL;
    if (s > e) {
        ampc_set_error(AMPC_E_RUNTIME, "flatten() has invalid args: start_dim cannot come after end_dim");
        return NULL;
    }
    int64_t shape[AMPC_MAX_DIMS];
    int nd = 0;
    for (int i = 0; i < s; i++) shape[nd++] = t->shape[i];
    int64_t m = 1;
    for (int i = s; i <= e; i++) m *= t->shape[i];
    shape[nd++] = m;
    for (int i = e + 1; i < t->ndim; i++) shape[nd++] = t->shape[i];
    return ampc_reshape(t, nd, shape);
}

/* ---------------------------------------------------------------- copies */

bool ampc_has_internal_overlap(const ampc_tensor *t) {
    for (int d = 0; d < t->ndim; d++)
        if (t->shape[d] > 1 && t->strides[d] == 0) return true;
    return false;
}

ampc_status ampc_check_writable_once(const ampc_tensor *t) {
    if (!ampc_has_internal_overlap(t)) return AMPC_OK;
    return ampc_set_error(AMPC_E_RUNTIME, "unsupported operation: more than one element of the written-to tensor refers "
                                          "to a single memory location. Please clone() the tensor before performing the operation.");
}

ampc_status ampc_copy_(ampc_tensor *dst, const ampc_tensor *src) {
    AMPC_TRY(ampc_check_writable_once(dst)); /* torch refuses to copy into an expanded view */
    if (ampc_any_requires_grad(2, (const ampc_tensor *[]){dst, src})) return ampc_ad_copy_(dst, src);
    int nd;
    int64_t shape[AMPC_MAX_DIMS];
    AMPC_TRY(ampc_broadcast_shapes("copy_", dst->ndim, dst->shape, src->ndim, src->shape, &nd, shape));
    char sa[160], sb[160];
    if (nd != dst->ndim || memcmp(shape, dst->shape, sizeof(int64_t) * (size_t)nd) != 0)
        return ampc_set_error(AMPC_E_RUNTIME, "copy_: source of shape %s cannot be broadcast to destination shape %s",
                              ampc_shape_str(src->ndim, src->shape, sa, sizeof sa),
                              ampc_shape_str(dst->ndim, dst->shape, sb, sizeof sb));
    ampc_copy_args args = {.dst = dst, .src = src, .non_blocking = ampc_non_blocking() != 0};
    AMPC_TRY(ampc_dispatch_copy(AMPC_OP_COPY, &args));
    dst->storage->version++;
    return AMPC_OK;
}

ampc_tensor *ampc_clone(const ampc_tensor *t) {
    if (ampc_any_requires_grad(1, (const ampc_tensor *[]){t})) return ampc_ad_clone(t);
    ampc_tensor *c = ampc_empty_like(t);
    if (c && ampc_copy_(c, t) != AMPC_OK) {
        ampc_tensor_decref(c);
        return NULL;
    }
    return c;
}

ampc_tensor *ampc_contiguous(const ampc_tensor *t) {
    if (ampc_is_contiguous(t)) {
        ampc_tensor_incref((ampc_tensor *)t);
        return (ampc_tensor *)t;
    }
    return ampc_clone(t);
}

ampc_tensor *ampc_to(const ampc_tensor *t, ampc_dtype dtype, ampc_device device, bool copy) {
    if (ampc_any_requires_grad(1, (const ampc_tensor *[]){t})) return ampc_ad_to(t, dtype, device, copy);
    if (dtype == AMPC_DTYPE_UNDEFINED) dtype = t->dtype;
    if (!copy && dtype == t->dtype && ampc_device_eq(device, t->device)) {
        ampc_tensor_incref((ampc_tensor *)t);
        return (ampc_tensor *)t;
    }
    ampc_tensor *out = ampc_empty(t->ndim, t->shape, dtype, device);
    if (out && ampc_copy_(out, t) != AMPC_OK) {
        ampc_tensor_decref(out);
        return NULL;
    }
    return out;
}

static _Thread_local bool non_blocking;

bool ampc_set_non_blocking(bool on) {
    bool prev = non_blocking;
    non_blocking = on;
    return prev;
}

bool ampc_non_blocking(void) { return non_blocking; }

bool ampc_is_pinned(const ampc_tensor *t) { return t->storage->pinned; }

ampc_tensor *ampc_pin_memory(const ampc_tensor *t) {
    if (t->device.type != AMPC_CPU) {
        char d[32];
        ampc_set_error(AMPC_E_RUNTIME, "cannot pin '%s' memory: only dense CPU tensors can be pinned",
                       ampc_device_str(t->device, d, sizeof d));
        return NULL;
    }
    if (ampc_is_pinned(t)) {
        ampc_tensor_incref((ampc_tensor *)t);
        return (ampc_tensor *)t;
    }
    ampc_storage *s = ampc_storage_new_pinned(ampc_nbytes(t));
    if (!s) return NULL;
    ampc_tensor *out = ampc_tensor_from_storage(s, 0, t->ndim, t->shape, NULL, t->dtype); /* contiguous */
    ampc_storage_decref(s);
    if (out && ampc_copy_(out, t) != AMPC_OK) { /* records CopyBackwards when t requires grad */
        ampc_tensor_decref(out);
        return NULL;
    }
    return out;
}

ampc_status ampc_fill_(ampc_tensor *t, ampc_scalar value) {
    AMPC_TRY(ampc_check_scalar_fits(value, t->dtype));
    if (ampc_any_requires_grad(1, (const ampc_tensor *[]){t})) return ampc_ad_fill_(t, value);
    ampc_fill_args args = {.dst = t, .value = value};
    AMPC_TRY(ampc_dispatch_fill(AMPC_OP_FILL, &args));
    t->storage->version++;
    return AMPC_OK;
}

ampc_status ampc_zero_(ampc_tensor *t) { return ampc_fill_(t, ampc_scalar_int(0)); }

static int64_t host_reads;

void ampc_note_host_read(void) { __atomic_fetch_add(&host_reads, 1, __ATOMIC_RELAXED); }
int64_t ampc_host_read_count(void) { return __atomic_load_n(&host_reads, __ATOMIC_RELAXED); }

ampc_status ampc_get_scalar(const ampc_tensor *t, int64_t linear_index, ampc_scalar *out) {
    ampc_note_host_read();
    int64_t numel = ampc_numel(t);
    if (linear_index < 0 || linear_index >= numel)
        return ampc_set_error(AMPC_E_INDEX, "element %lld is out of range for a tensor of %lld elements",
                              (long long)linear_index, (long long)numel);
    /* Copy the one element to a CPU scalar tensor, so this works for every device. */
    int64_t off = t->offset, rem = linear_index;
    for (int i = t->ndim - 1; i >= 0; i--) {
        off += (rem % t->shape[i]) * t->strides[i];
        rem /= t->shape[i];
    }
    ampc_tensor *src = ampc_tensor_from_storage(t->storage, off, 0, NULL, NULL, t->dtype);
    if (!src) return ampc_last_status();
    src->device = t->device;
    ampc_tensor *host = ampc_to(src, AMPC_DTYPE_UNDEFINED, ampc_cpu_device(), false);
    ampc_tensor_decref(src);
    if (!host) return ampc_last_status();
    void *p = ampc_data_ptr(host);
    switch (host->dtype) {
    case AMPC_FLOAT32: *out = ampc_scalar_float(*(float *)p); break;
    case AMPC_FLOAT16: *out = ampc_scalar_float(ampc_half_to_f32(*(ampc_half *)p)); break;
    case AMPC_BFLOAT16: *out = ampc_scalar_float(ampc_bf16_to_f32(*(ampc_bfloat16 *)p)); break;
    case AMPC_FLOAT64: *out = ampc_scalar_float(*(double *)p); break;
    case AMPC_INT64: *out = ampc_scalar_int(*(int64_t *)p); break;
    case AMPC_INT32: *out = ampc_scalar_int(*(int32_t *)p); break;
    case AMPC_UINT8: *out = ampc_scalar_int(*(uint8_t *)p); break;
    case AMPC_BOOL: *out = ampc_scalar_bool(*(bool *)p); break;
    default: break;
    }
    ampc_tensor_decref(host);
    return AMPC_OK;
}
