/* shape_ops.c: frontends of the ops that rearrange whole tensors: tril/triu (their own kernel),
 * flip, roll, rot90, repeat, tile, repeat_interleave and tril_indices/triu_indices.
 *
 * Only tril/triu need a kernel of their own. The others move elements by a rule that strides
 * can express, so they are one COPY (or index_select) over a computed view:
 *   flip    a view with negative strides on the flipped dims, copied out;
 *   roll    two slices of each rolled dim copied to their new places;
 *   repeat  the input as an expanded view (r0, s0, r1, s1, ...) with stride 0 on the r dims,
 *           copied out and viewed as (r0*s0, r1*s1, ...);
 *   repeat_interleave  index_select with an index built on the host (repeats are host data,
 *           as torch, which syncs on CUDA too).
 * The frontends that record a node of torch's name (TrilBackward0, FlipBackward0, RollBackward0,
 * RepeatBackward0) run their body with recording paused and record once at the end
 * (rules in derivatives_shape_ops.c); rot90, tile and repeat_interleave record through the ops
 * they call, as torch's composite ops do. */
#include <stdlib.h>
#include <string.h>

#include "autograd.h"
#include "derivatives.h"
#include "kernel_args.h"
#include "ops.h"

static ampc_tensor *fail_drop(ampc_tensor *t) {
    ampc_tensor_decref(t);
    return NULL;
}

/* Records op's node (shape_ops rules) on out when an input requires grad; drops out on failure. */
static ampc_tensor *record(ampc_op op, const ampc_tensor *a, ampc_tensor *out, const ampc_node_attrs *at) {
    if (!out || !ampc_any_requires_grad(1, &a)) return out;
    return ad_recorded(out, ampc_ad_record_shape_op(op, 1, &a, out, 0, NULL, at));
}

/* ---------------------------------------------------------------- tril / triu */

static ampc_status tril_check(const char *name, const ampc_tensor *a) {
    if (a->ndim < 2)
        return ampc_set_error(AMPC_E_RUNTIME, "%s: input tensor must have at least 2 dimensions", name);
    return AMPC_OK;
}

ampc_tensor *ampc_tril(const ampc_tensor *a, int64_t diagonal, bool upper) {
    ampc_op op = upper ? AMPC_OP_TRIU : AMPC_OP_TRIL;
    if (tril_check(ampc_op_name(op), a) != AMPC_OK) return NULL;
    ampc_tensor *out = ampc_empty(a->ndim, a->shape, a->dtype, a->device);
    if (!out) return NULL;
    ampc_tril_args args = {.out = out, .input = a, .diagonal = diagonal};
    if (ampc_dispatch_tril(op, &args) != AMPC_OK) return fail_drop(out);
    ampc_node_attrs at = {0};
    at.ints[0] = diagonal, at.n_ints = 1;
    return record(op, a, out, &at);
}

ampc_status ampc_tril_(ampc_tensor *a, int64_t diagonal, bool upper) {
    ampc_op op = upper ? AMPC_OP_TRIU : AMPC_OP_TRIL;
    AMPC_TRY(tril_check(upper ? "triu_" : "tril_", a));
    AMPC_TRY(ampc_autograd_check_inplace(a));
    AMPC_TRY(ampc_check_writable_once(a));
    ampc_tril_args args = {.out = a, .input = a, .diagonal = diagonal};
    AMPC_TRY(ampc_dispatch_tril(op, &args));
    a->storage->version++;
    if (!ampc_any_requires_grad(1, (const ampc_tensor *[]){a})) return AMPC_OK;
    ampc_node_attrs at = {0};
    at.ints[0] = diagonal, at.n_ints = 1;
    const ampc_tensor *in = a;
    return ampc_ad_record_shape_op(op, 1, &in, a, 0, NULL, &at);
}

/* ---------------------------------------------------------------- flip */

/* Wraps dims and fails on repeats (torch: "dim 0 appears multiple times in the list of dims"). */
static ampc_status wrap_dims(const char *op, int n, const int64_t *dims, int ndim, bool *mask) {
    memset(mask, 0, sizeof(bool) * AMPC_MAX_DIMS);
    for (int i = 0; i < n; i++) {
        int d;
        AMPC_TRY(ampc_wrap_dim(op, dims[i], ndim > 0 ? ndim : 1, &d));
        if (mask[d]) return ampc_set_error(AMPC_E_RUNTIME, "dim %d appears multiple times in the list of dims", d);
        mask[d] = true;
    }
    return AMPC_OK;
}

ampc_tensor *ampc_flip(const ampc_tensor *a, int n, const int64_t *dims) {
    bool mask[AMPC_MAX_DIMS];
    if (wrap_dims("flip", n, dims, a->ndim, mask) != AMPC_OK) return NULL;
    int64_t strides[AMPC_MAX_DIMS], offset = a->offset;
    for (int d = 0; d < a->ndim; d++) {
        strides[d] = a->strides[d];
        if (mask[d] && a->shape[d] > 1) {
            offset += (a->shape[d] - 1) * a->strides[d]; /* start at the last element, walk backwards */
            strides[d] = -a->strides[d];
        }
    }
    ampc_tensor *view = ampc_as_strided(a, a->ndim, a->shape, strides, offset);
    ampc_tensor *out = view ? ampc_empty(a->ndim, a->shape, a->dtype, a->device) : NULL;
    ampc_status st = out ? ampc_copy_(out, view) : ampc_last_status();
    ampc_tensor_decref(view);
    if (st != AMPC_OK) return fail_drop(out);
    ampc_node_attrs at = {0};
    for (int d = 0; d < a->ndim; d++)
        if (mask[d]) at.ints[at.n_ints++] = d;
    return record(AMPC_OP_FLIP, a, out, &at);
}

/* ---------------------------------------------------------------- roll */

/* out = a rolled by `shift` along dim d (no recording: a fresh copy). */
static ampc_tensor *roll_one(const ampc_tensor *a, int d, int64_t shift) {
    int64_t n = a->shape[d];
    ampc_tensor *out = ampc_empty(a->ndim, a->shape, a->dtype, a->device);
    if (!out || n == 0) return out;
    int64_t s = ((shift % n) + n) % n;
    /* out[s:] = a[:n-s], out[:s] = a[n-s:] */
    ampc_tensor *pieces[4] = {ampc_narrow(out, d, s, n - s), ampc_narrow(a, d, 0, n - s),
                              ampc_narrow(out, d, 0, s), ampc_narrow(a, d, n - s, s)};
    ampc_status st = AMPC_OK;
    for (int i = 0; i < 4; i++)
        if (!pieces[i]) st = ampc_last_status();
    if (st == AMPC_OK) st = ampc_copy_(pieces[0], pieces[1]);
    if (st == AMPC_OK && s) st = ampc_copy_(pieces[2], pieces[3]);
    for (int i = 0; i < 4; i++) ampc_tensor_decref(pieces[i]);
    return st == AMPC_OK ? out : fail_drop(out);
}

ampc_tensor *ampc_roll(const ampc_tensor *a, int n_shifts, const int64_t *shifts, int n_dims, const int64_t *dims) {
    if (n_shifts == 0) {
        ampc_set_error(AMPC_E_RUNTIME, "`shifts` required");
        return NULL;
    }
    if (n_dims == 0 && n_shifts != 1) {
        ampc_set_error(AMPC_E_RUNTIME, "shifts and dimensions must align. shifts: %d, dims:%d", n_shifts, n_dims);
        return NULL;
    }
    if (n_dims && n_shifts != n_dims) {
        ampc_set_error(AMPC_E_RUNTIME, "shifts and dimensions must align. shifts: %d, dims:%d", n_shifts, n_dims);
        return NULL;
    }
    if (n_shifts > AMPC_MAX_NODE_INTS / 2) {
        ampc_set_error(AMPC_E_VALUE, "roll: at most %d dims", AMPC_MAX_NODE_INTS / 2);
        return NULL;
    }
    ampc_node_attrs at = {0};
    ampc_tensor *out = NULL;
    bool prev = ampc_grad_mode_pause();
    if (n_dims == 0) { /* the flattened tensor, rolled, in the input's shape */
        int64_t numel = ampc_numel(a);
        ampc_tensor *flat = ampc_reshape(a, 1, &numel);
        ampc_tensor *r = flat ? roll_one(flat, 0, shifts[0]) : NULL;
        out = r ? ampc_view(r, a->ndim, a->shape) : NULL;
        ampc_tensor_decref(flat);
        ampc_tensor_decref(r);
        at.ints[0] = shifts[0], at.n_ints = 1;
    } else {
        ampc_tensor_incref((ampc_tensor *)a);
        out = (ampc_tensor *)a;
        for (int i = 0; i < n_dims && out; i++) {
            int d = 0;
            ampc_tensor *next = ampc_wrap_dim("roll", dims[i], a->ndim, &d) == AMPC_OK ? roll_one(out, d, shifts[i]) : NULL;
            ampc_tensor_decref(out);
            out = next;
            at.ints[2 * i] = shifts[i], at.ints[2 * i + 1] = d;
        }
        at.n_ints = 2 * n_dims;
    }
    ampc_grad_mode_restore(prev);
    return record(AMPC_OP_ROLL, a, out, &at);
}

/* ---------------------------------------------------------------- rot90 */

ampc_tensor *ampc_rot90(const ampc_tensor *a, int64_t k, int n_dims, const int64_t *dims) {
    if (n_dims != 2) {
        ampc_set_error(AMPC_E_RUNTIME, "expected total rotation dims == 2, but got dims = %d", n_dims);
        return NULL;
    }
    if (a->ndim < 2) {
        ampc_set_error(AMPC_E_RUNTIME, "expected total dims >= 2, but got total dims = %d", a->ndim);
        return NULL;
    }
    int d0, d1;
    if (ampc_wrap_dim("rot90", dims[0], a->ndim, &d0) != AMPC_OK || ampc_wrap_dim("rot90", dims[1], a->ndim, &d1) != AMPC_OK)
        return NULL;
    if (d0 == d1) {
        ampc_set_error(AMPC_E_RUNTIME, "expected rotation dims to be different, but got dim0 = %d and dim1 = %d", d0, d1);
        return NULL;
    }
    k = ((k % 4) + 4) % 4;
    int64_t one[1], both[2] = {d0, d1};
    ampc_tensor *f, *out;
    switch (k) {
    case 1:
        one[0] = d1;
        f = ampc_flip(a, 1, one);
        out = f ? ampc_transpose(f, d0, d1) : NULL;
        ampc_tensor_decref(f);
        return out;
    case 2: return ampc_flip(a, 2, both);
    case 3:
        one[0] = d0;
        f = ampc_flip(a, 1, one);
        out = f ? ampc_transpose(f, d0, d1) : NULL;
        ampc_tensor_decref(f);
        return out;
    default: return ampc_clone(a);
    }
}

/* ---------------------------------------------------------------- repeat / tile */

/* a (seen with n dims, leading 1s) repeated reps[i] times along each dim, without recording. */
static ampc_tensor *repeat_copy(const ampc_tensor *a, int n, const int64_t *reps, const int64_t *shape) {
    int lead = n - a->ndim, nd = 0;
    int64_t vshape[2 * AMPC_MAX_DIMS], vstrides[2 * AMPC_MAX_DIMS], oshape[AMPC_MAX_DIMS];
    for (int i = 0; i < n; i++) {
        int64_t s = i < lead ? 1 : a->shape[i - lead], st = i < lead ? 0 : a->strides[i - lead];
        oshape[i] = reps[i] * s;
        if (reps[i] != 1) vshape[nd] = reps[i], vstrides[nd++] = 0; /* the copies: stride 0 */
        if (s != 1) vshape[nd] = s, vstrides[nd++] = st;
    }
    if (nd > AMPC_MAX_DIMS) { /* too many dims for one view: repeat the last dim, then the rest */
        int64_t r1[AMPC_MAX_DIMS];
        for (int i = 0; i < n; i++) r1[i] = i == n - 1 ? reps[i] : 1;
        ampc_tensor *part = repeat_copy(a, n, r1, shape);
        for (int i = 0; i < n; i++) r1[i] = i == n - 1 ? 1 : reps[i];
        ampc_tensor *out = part ? repeat_copy(part, n, r1, shape) : NULL;
        ampc_tensor_decref(part);
        return out;
    }
    ampc_tensor *out = ampc_empty(n, oshape, a->dtype, a->device);
    if (!out || ampc_numel(out) == 0) return out;
    ampc_tensor *view = ampc_as_strided(a, nd, vshape, vstrides, a->offset);
    ampc_tensor *dst = view ? ampc_as_strided(out, nd, vshape, NULL, out->offset) : NULL;
    ampc_status st = dst ? ampc_copy_(dst, view) : ampc_last_status();
    ampc_tensor_decref(view);
    ampc_tensor_decref(dst);
    (void)shape;
    return st == AMPC_OK ? out : fail_drop(out);
}

ampc_tensor *ampc_repeat(const ampc_tensor *a, int n, const int64_t *reps) {
    if (n < a->ndim) {
        ampc_set_error(AMPC_E_RUNTIME,
                       "Number of dimensions of repeat dims can not be smaller than number of dimensions of tensor");
        return NULL;
    }
    if (n > AMPC_MAX_DIMS || n > AMPC_MAX_NODE_INTS) {
        ampc_set_error(AMPC_E_VALUE, "repeat: ampc tensors have at most %d dims, got %d", AMPC_MAX_DIMS, n);
        return NULL;
    }
    int64_t shape[AMPC_MAX_DIMS];
    int lead = n - a->ndim;
    for (int i = 0; i < n; i++) {
        shape[i] = reps[i] * (i < lead ? 1 : a->shape[i - lead]);
        if (reps[i] < 0) {
            char s[200];
            int64_t bad[AMPC_MAX_DIMS];
            for (int j = 0; j < n; j++) bad[j] = reps[j] * (j < lead ? 1 : a->shape[j - lead]);
            ampc_set_error(AMPC_E_RUNTIME, "Trying to create tensor with negative dimension %lld: %s",
                           (long long)bad[i], ampc_shape_str(n, bad, s, sizeof s));
            return NULL;
        }
    }
    ampc_tensor *out = repeat_copy(a, n, reps, shape);
    ampc_node_attrs at = {0};
    memcpy(at.ints, reps, sizeof(int64_t) * (size_t)n);
    at.n_ints = n;
    return record(AMPC_OP_REPEAT, a, out, &at);
}

ampc_tensor *ampc_tile(const ampc_tensor *a, int n, const int64_t *reps) {
    int64_t full[AMPC_MAX_DIMS];
    if (n > AMPC_MAX_DIMS) return ampc_repeat(a, n, reps); /* the error */
    int m = n < a->ndim ? a->ndim : n;
    for (int i = 0; i < m; i++) full[i] = i < m - n ? 1 : reps[i - (m - n)]; /* leading 1s: torch */
    return ampc_repeat(a, m, full);
}

/* ---------------------------------------------------------------- repeat_interleave */

/* The int64 index [0]*r0 + [1]*r1 + ... on the host (counts: int64 or int32, on any device). */
static ampc_tensor *interleave_index(int64_t n, const ampc_tensor *repeats, int64_t repeat, int64_t output_size,
                                     ampc_device dev) {
    ampc_tensor *r = NULL;
    if (repeats) {
        if (repeats->ndim > 1) {
            ampc_set_error(AMPC_E_RUNTIME, "repeat_interleave only accept 1D vector as repeat");
            return NULL;
        }
        if (repeats->dtype != AMPC_INT64 && repeats->dtype != AMPC_INT32) {
            ampc_set_error(AMPC_E_RUNTIME, "repeats has to be Long or Int tensor");
            return NULL;
        }
        int64_t k = ampc_numel(repeats);
        if (k != n && k != 1) {
            ampc_set_error(AMPC_E_RUNTIME, "repeats must have the same size as input along dim, but got repeats.size(0) = "
                           "%lld and input.size(%d) = %lld", (long long)k, 0, (long long)n);
            return NULL;
        }
        r = ampc_to(repeats, AMPC_INT64, ampc_cpu_device(), false);
        ampc_tensor *c = r ? ampc_contiguous(r) : NULL;
        ampc_tensor_decref(r);
        r = c;
        if (!r) return NULL;
        ampc_note_host_read();
    } else if (repeat < 0) {
        ampc_set_error(AMPC_E_RUNTIME, "repeats can not be negative");
        return NULL;
    }
    const int64_t *rv = r ? (const int64_t *)ampc_data_ptr(r) : NULL;
    int64_t k = r ? ampc_numel(r) : 1, total = 0;
    for (int64_t i = 0; i < n; i++) {
        int64_t c = rv ? rv[k == 1 ? 0 : i] : repeat;
        if (c < 0) {
            ampc_tensor_decref(r);
            ampc_set_error(AMPC_E_RUNTIME, "repeats can not be negative");
            return NULL;
        }
        total += c;
    }
    if (output_size >= 0 && output_size != total) {
        ampc_tensor_decref(r);
        ampc_set_error(AMPC_E_RUNTIME, "repeat_interleave: allocated size %lld does not match required size %lld",
                       (long long)output_size, (long long)total);
        return NULL;
    }
    ampc_tensor *idx = ampc_empty(1, &total, AMPC_INT64, ampc_cpu_device());
    if (idx) {
        int64_t *p = (int64_t *)ampc_data_ptr(idx);
        for (int64_t i = 0, j = 0; i < n; i++)
            for (int64_t c = rv ? rv[k == 1 ? 0 : i] : repeat; c > 0; c--) p[j++] = i;
    }
    ampc_tensor_decref(r);
    if (!idx || dev.type == AMPC_CPU) return idx;
    ampc_tensor *moved = ampc_to(idx, AMPC_INT64, dev, false);
    ampc_tensor_decref(idx);
    return moved;
}

ampc_tensor *ampc_repeat_interleave(const ampc_tensor *a, const ampc_tensor *repeats, int64_t repeat, bool has_dim,
                                    int64_t dim, int64_t output_size) {
    if (!a) { /* repeat_interleave(repeats): the index itself */
        if (repeats->ndim > 1) {
            ampc_set_error(AMPC_E_RUNTIME, "repeat_interleave only accept 1D vector as repeat");
            return NULL;
        }
        return interleave_index(ampc_numel(repeats), repeats, 0, output_size, repeats->device);
    }
    ampc_tensor *src;
    int d = 0;
    if (has_dim) {
        if (ampc_wrap_dim("repeat_interleave", dim, a->ndim > 0 ? a->ndim : 1, &d) != AMPC_OK) return NULL;
        src = a->ndim ? (ampc_tensor_incref((ampc_tensor *)a), (ampc_tensor *)a) : ampc_reshape(a, 1, (int64_t[]){1});
    } else {
        int64_t numel = ampc_numel(a);
        src = ampc_reshape(a, 1, &numel); /* records ViewBackward0 when a requires grad */
    }
    if (!src) return NULL;
    if (repeats && !ampc_device_eq(repeats->device, a->device) && repeats->ndim > 0 && ampc_numel(repeats) != 1) {
        char d0[32], d1[32];
        ampc_set_error(AMPC_E_RUNTIME, "Expected all tensors to be on the same device, but found at least two devices, %s and %s!",
                       ampc_device_str(a->device, d0, sizeof d0), ampc_device_str(repeats->device, d1, sizeof d1));
        return fail_drop(src);
    }
    ampc_tensor *idx = interleave_index(src->shape[d], repeats, repeat, output_size, a->device);
    ampc_tensor *out = idx ? ampc_index_select(src, d, idx) : NULL;
    ampc_tensor_decref(idx);
    ampc_tensor_decref(src);
    return out;
}

/* ---------------------------------------------------------------- tril_indices / triu_indices */

ampc_tensor *ampc_tril_indices(int64_t row, int64_t col, int64_t offset, bool upper, ampc_dtype dtype,
                               ampc_device dev) {
    const char *name = upper ? "triu_indices" : "tril_indices";
    if (row < 0 || col < 0) {
        ampc_set_error(AMPC_E_RUNTIME, "%s: row and col must be non-negative, got row = %lld, col = %lld", name,
                       (long long)row, (long long)col);
        return NULL;
    }
    if (dtype != AMPC_INT64 && dtype != AMPC_INT32) {
        ampc_set_error(AMPC_E_RUNTIME, "\"%s\" not implemented for '%s'", upper ? "triu_indices" : "tril_indices",
                       ampc_dtype_torch_name(dtype));
        return NULL;
    }
    int64_t count = 0;
    for (int64_t i = 0; i < row; i++)
        for (int64_t j = 0; j < col; j++) count += upper ? (j - i >= offset) : (j - i <= offset);
    int64_t shape[2] = {2, count};
    ampc_tensor *h = ampc_empty(2, shape, AMPC_INT64, ampc_cpu_device());
    if (!h) return NULL;
    int64_t *p = (int64_t *)ampc_data_ptr(h), k = 0;
    for (int64_t i = 0; i < row; i++)
        for (int64_t j = 0; j < col; j++)
            if (upper ? (j - i >= offset) : (j - i <= offset)) p[k] = i, p[count + k] = j, k++;
    ampc_tensor *out = ampc_to(h, dtype, dev, false);
    ampc_tensor_decref(h);
    return out;
}
