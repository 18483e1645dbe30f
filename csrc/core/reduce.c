/* reduce.c: frontends of the reductions (sum, mean, prod, amax/amin, max/min with indices,
 * argmax/argmin, var/std, norm, logsumexp, any/all) and of the scan cumsum.
 *
 * Each frontend applies PyTorch's rules: which dims are reduced (none given = all, negative dims
 * wrap, duplicates and out-of-range dims fail), the output dtype (integer sums become int64,
 * mean/var/norm need floating input, any/all give bool), and the errors for empty inputs of
 * reductions without an identity (max, argmax, the inf norm). It then allocates the outputs and
 * dispatches. The REDUCE kernel contract (same for every device), ampc_reduce_args (ops.def):
 *   input       the input, any strides, of the dtype the kernel computes from
 *   values      the output seen with keepdim shape (reduced dims have size 1 there), so a dim is
 *               reduced exactly where it has size 1 and the input does not
 *   indices     max/min with indices: the int64 indices, seen the same way; NULL otherwise
 *   dims        the reduced dims, ascending (n_dims of them)
 *   keepdim     as given; correction of var/std, p of norm (0 for the other ops)
 * The SCAN kernel (cumsum), ampc_scan_args: contiguous input and output of one shape and dtype,
 * dim the scanned dim.
 * When an input requires grad, each frontend records its node (derivatives_reduce.c) after
 * computing the result; argmax/argmin, any and all have no gradient. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "autocast.h"
#include "derivatives.h"
#include "kernel_args.h"
#include "ops.h"

/* `out` once its autograd node is recorded (status `st`), or NULL, dropping it, if that failed. */
static ampc_tensor *keep_if_recorded(ampc_tensor *out, ampc_status st) {
    if (st == AMPC_OK) return out;
    ampc_tensor_decref(out);
    return NULL;
}


/* Marks the dims of `a` that `dims` reduces (n_dims == 0: all of them). */
static ampc_status reduced_dims_mask(const char *op, const ampc_tensor *a, int n_dims, const int64_t *dims,
                                     bool mask[AMPC_MAX_DIMS]) {
    memset(mask, 0, sizeof(bool) * AMPC_MAX_DIMS);
    if (n_dims == 0) {
        for (int d = 0; d < a->ndim; d++) mask[d] = true;
        return AMPC_OK;
    }
    bool seen[AMPC_MAX_DIMS] = {false};
    for (int i = 0; i < n_dims; i++) {
        int d;
        AMPC_TRY(ampc_wrap_dim(op, dims[i], a->ndim, &d));
        if (seen[d]) return ampc_set_error(AMPC_E_RUNTIME, "dim %d appears multiple times in the list of dims", d);
        seen[d] = true;
        if (d < a->ndim) mask[d] = true; /* a 0-dim tensor accepts dim 0 but has nothing to reduce */
    }
    return AMPC_OK;
}

/* Reductions without an identity (max, argmax, the inf norm) refuse empty reductions, with
 * PyTorch's two messages: one when no dim was named, one naming the empty reduced dim. */
static ampc_status check_nonempty(const char *op, const ampc_tensor *a, bool dims_given, const bool *mask,
                                  bool is_arg) {
    if (ampc_numel(a) != 0) return AMPC_OK;
    if (!dims_given) {
        if (is_arg)
            return ampc_set_error(AMPC_E_INDEX,
                                  "%s(): Expected reduction dim to be specified for input.numel() == 0.", op);
        return ampc_set_error(AMPC_E_RUNTIME,
                              "%s(): Expected reduction dim to be specified for input.numel() == 0. Specify the "
                              "reduction dim with the 'dim' argument.",
                              op);
    }
    for (int d = 0; d < a->ndim; d++)
        if (mask[d] && a->shape[d] == 0)
            return ampc_set_error(AMPC_E_INDEX, "%s(): Expected reduction dim %d to have non-zero size.", op, d);
    return AMPC_OK;
}

/* Allocates the result of reducing `a` over `mask` and the keepdim-shaped view of it that the
 * kernel writes through. */
static ampc_status alloc_reduced(const ampc_tensor *a, const bool *mask, bool keepdim, ampc_dtype dtype,
                                 ampc_tensor **out, ampc_tensor **kernel_view) {
    int64_t shape[AMPC_MAX_DIMS], kshape[AMPC_MAX_DIMS], kstrides[AMPC_MAX_DIMS];
    int nd = 0;
    for (int d = 0; d < a->ndim; d++) {
        kshape[d] = mask[d] ? 1 : a->shape[d];
        if (!mask[d] || keepdim) shape[nd++] = kshape[d];
    }
    *out = ampc_empty(nd, shape, dtype, a->device);
    if (!*out) return ampc_last_status();
    for (int d = 0, j = 0; d < a->ndim; d++) {
        if (keepdim)
            kstrides[d] = (*out)->strides[d];
        else
            kstrides[d] = mask[d] ? 0 : (*out)->strides[j++];
    }
    *kernel_view = ampc_as_strided(*out, a->ndim, kshape, kstrides, (*out)->offset);
    if (!*kernel_view) {
        ampc_tensor_decref(*out);
        *out = NULL;
        return ampc_last_status();
    }
    return AMPC_OK;
}

/* Allocates n_out outputs of the given dtypes and runs the REDUCE kernel of `op` on `in`;
 * `param` is the correction of var/std, the order p of norm. */
static ampc_status run_reduce(ampc_op op, const ampc_tensor *in, const bool *mask, bool keepdim, int n_out,
                              const ampc_dtype *dtypes, double param, ampc_tensor **outs) {
    ampc_tensor *views[2] = {NULL, NULL};
    ampc_status st = AMPC_OK;
    for (int i = 0; i < n_out; i++) outs[i] = NULL;
    for (int i = 0; i < n_out && st == AMPC_OK; i++)
        st = alloc_reduced(in, mask, keepdim, dtypes[i], &outs[i], &views[i]);
    if (st == AMPC_OK && ampc_numel(outs[0]) > 0) {
        ampc_reduce_args args;
        memset(&args, 0, sizeof args);
        args.input = in;
        args.values = views[0];
        args.indices = views[1];
        for (int d = 0; d < in->ndim; d++)
            if (mask[d]) args.dims[args.n_dims++] = d;
        args.keepdim = keepdim;
        if (op == AMPC_OP_VAR || op == AMPC_OP_STD) args.correction = param;
        if (op == AMPC_OP_NORM) args.p = param;
        st = ampc_dispatch_reduce(op, &args);
    }
    for (int i = 0; i < n_out; i++) {
        ampc_tensor_decref(views[i]);
        if (st != AMPC_OK) {
            ampc_tensor_decref(outs[i]);
            outs[i] = NULL;
        }
    }
    return st;
}

/* The input the kernel reads: `a` itself when the kernel can widen it on the fly (int -> int64,
 * a float to a wider float), else `a` cast to `dtype` first, as PyTorch's CPU reductions do. */
static ampc_tensor *input_as(const ampc_tensor *a, ampc_dtype dtype) {
    bool same_kind = ampc_dtype_is_floating(a->dtype) == ampc_dtype_is_floating(dtype);
    if (same_kind && ampc_promote_types(a->dtype, dtype) == dtype) {
        ampc_tensor_incref((ampc_tensor *)a);
        return (ampc_tensor *)a;
    }
    return ampc_to(a, dtype, a->device, false);
}

static ampc_tensor *reduce_one(ampc_op op, const ampc_tensor *a, const bool *mask, bool keepdim, ampc_dtype out_dt,
                               double param) {
    ampc_tensor *out = NULL;
    run_reduce(op, a, mask, keepdim, 1, &out_dt, param, &out);
    return out;
}

ampc_tensor *ampc_reduce(ampc_op op, const ampc_tensor *a, int n_dims, const int64_t *dims, bool keepdim,
                         ampc_dtype dtype) {
    ampc_autocast_scope ac; /* sum, prod: fp32 through dtype (no copy); logsumexp: fp32 */
    int acr = ampc_autocast_enter_op(op, 1, &a, dtype != AMPC_DTYPE_UNDEFINED, &ac);
    if (acr) return acr < 0 ? NULL : ampc_autocast_exit(&ac, ampc_reduce(op, ac.t[0], n_dims, dims, keepdim, ac.dtype));
    /* max()/min() over dims without indices are amax/amin under their own names. */
    const char *name = ampc_op_name(op);
    ampc_op kernel_op = op == AMPC_OP_MAX_DIM ? AMPC_OP_AMAX : op == AMPC_OP_MIN_DIM ? AMPC_OP_AMIN : op;
    bool mask[AMPC_MAX_DIMS];
    if (reduced_dims_mask(name, a, n_dims, dims, mask) != AMPC_OK) return NULL;
    if (dtype != AMPC_DTYPE_UNDEFINED && !ampc_dtype_is_valid(dtype)) {
        ampc_set_error(AMPC_E_TYPE, "%s(): invalid dtype %d", name, (int)dtype);
        return NULL;
    }
    ampc_dtype out_dt;
    switch (kernel_op) {
    case AMPC_OP_SUM:
    case AMPC_OP_PROD:
        out_dt = dtype != AMPC_DTYPE_UNDEFINED ? dtype
                 : ampc_dtype_is_integral(a->dtype, true) ? AMPC_INT64
                                                          : a->dtype;
        break;
    case AMPC_OP_MEAN:
        if (dtype != AMPC_DTYPE_UNDEFINED && !ampc_dtype_is_floating(dtype)) {
            ampc_set_error(AMPC_E_RUNTIME,
                           "mean(): could not infer output dtype. Optional dtype must be either a floating point "
                           "or complex dtype. Got: %s",
                           ampc_dtype_torch_name(dtype));
            return NULL;
        }
        if (dtype == AMPC_DTYPE_UNDEFINED && !ampc_dtype_is_floating(a->dtype)) {
            ampc_set_error(AMPC_E_RUNTIME,
                           "mean(): could not infer output dtype. Input dtype must be either a floating point or "
                           "complex dtype. Got: %s",
                           ampc_dtype_torch_name(a->dtype));
            return NULL;
        }
        out_dt = dtype != AMPC_DTYPE_UNDEFINED ? dtype : a->dtype;
        break;
    case AMPC_OP_AMAX:
    case AMPC_OP_AMIN:
        if (check_nonempty(name, a, n_dims > 0, mask, false) != AMPC_OK) return NULL;
        out_dt = a->dtype;
        break;
    case AMPC_OP_ANY:
    case AMPC_OP_ALL:
        out_dt = a->dtype == AMPC_UINT8 ? AMPC_UINT8 : AMPC_BOOL; /* PyTorch keeps uint8 for legacy masks */
        break;
    case AMPC_OP_LOGSUMEXP:
        /* integer inputs are promoted to the default float dtype */
        out_dt = ampc_dtype_is_floating(a->dtype) ? a->dtype : ampc_get_default_dtype();
        if (dtype != AMPC_DTYPE_UNDEFINED) out_dt = dtype;
        break;
    default:
        ampc_set_error(AMPC_E_VALUE, "ampc_reduce: %s is not a plain reduction", name);
        return NULL;
    }
    /* amax/amin/any/all read the input as it is; the others compute in the output's dtype */
    bool reads_as_is = kernel_op == AMPC_OP_AMAX || kernel_op == AMPC_OP_AMIN || kernel_op == AMPC_OP_ANY ||
                       kernel_op == AMPC_OP_ALL;
    ampc_tensor *in = input_as(a, reads_as_is ? a->dtype : out_dt);
    if (!in) return NULL;
    ampc_tensor *out = reduce_one(kernel_op, in, mask, keepdim, out_dt, 0.0);
    ampc_tensor_decref(in);
    if (out && ampc_any_requires_grad(1, &a))
        out = keep_if_recorded(out, ampc_ad_record_reduce(op, a, n_dims, dims, keepdim, out));
    return out;
}

ampc_tensor *ampc_var(const ampc_tensor *a, int n_dims, const int64_t *dims, double correction, bool keepdim,
                      bool take_sqrt) {
    ampc_op op = take_sqrt ? AMPC_OP_STD : AMPC_OP_VAR;
    bool mask[AMPC_MAX_DIMS];
    if (reduced_dims_mask(ampc_op_name(op), a, n_dims, dims, mask) != AMPC_OK) return NULL;
    if (!ampc_dtype_is_floating(a->dtype)) {
        ampc_set_error(AMPC_E_RUNTIME, "std and var only support floating point and complex dtypes");
        return NULL;
    }
    ampc_tensor *out = reduce_one(op, a, mask, keepdim, a->dtype, correction);
    if (out && ampc_any_requires_grad(1, &a))
        out = keep_if_recorded(out, ampc_ad_record_var(a, n_dims, dims, correction, keepdim, take_sqrt, out));
    return out;
}

ampc_tensor *ampc_norm(const ampc_tensor *a, double p, int n_dims, const int64_t *dims, bool keepdim) {
    return ampc_vector_norm(a, p, n_dims, dims, keepdim, AMPC_DTYPE_UNDEFINED);
}

ampc_tensor *ampc_vector_norm(const ampc_tensor *a, double p, int n_dims, const int64_t *dims, bool keepdim,
                              ampc_dtype dtype) {
    ampc_autocast_scope ac;
    int acr = ampc_autocast_enter(AMPC_OP_NORM, 1, &a, dtype != AMPC_DTYPE_UNDEFINED, &ac);
    if (acr) return acr < 0 ? NULL : ampc_autocast_exit(&ac, ampc_vector_norm(ac.t[0], p, n_dims, dims, keepdim, dtype));
    bool mask[AMPC_MAX_DIMS];
    if (reduced_dims_mask("linalg.vector_norm", a, n_dims, dims, mask) != AMPC_OK) return NULL;
    if (!ampc_dtype_is_floating(a->dtype)) {
        ampc_set_error(AMPC_E_RUNTIME,
                       "linalg.vector_norm: Expected a floating point or complex tensor as input. Got %s",
                       ampc_dtype_torch_name(a->dtype));
        return NULL;
    }
    if (dtype != AMPC_DTYPE_UNDEFINED && !ampc_dtype_is_floating(dtype)) {
        ampc_set_error(AMPC_E_RUNTIME, "linalg.vector_norm: dtype should be floating point or complex, but got %s",
                       ampc_dtype_torch_name(dtype));
        return NULL;
    }
    /* Only widening dtypes, as in PyTorch: the kernel reads the input and rounds into dtype. */
    if (dtype != AMPC_DTYPE_UNDEFINED && ampc_promote_types(a->dtype, dtype) != dtype) {
        ampc_set_error(AMPC_E_RUNTIME,
                       "linalg.vector_norm: the dtype of the input (%s) should be convertible without narrowing to "
                       "the specified dtype (%s)",
                       ampc_dtype_torch_name(a->dtype), ampc_dtype_torch_name(dtype));
        return NULL;
    }
    if (isnan(p)) {
        ampc_set_error(AMPC_E_RUNTIME, "linalg.vector_norm: the order of the norm must not be nan");
        return NULL;
    }
    /* Negative orders and the inf norm have no identity: an empty reduction is an error. */
    if ((p < 0 || isinf(p)) && ampc_numel(a) == 0) {
        if (n_dims == 0) {
            ampc_set_error(AMPC_E_RUNTIME,
                           "linalg.vector_norm cannot compute the %g norm on an empty tensor because the operation "
                           "does not have an identity",
                           p);
            return NULL;
        }
        for (int d = 0; d < a->ndim; d++)
            if (mask[d] && a->shape[d] == 0) {
                ampc_set_error(AMPC_E_RUNTIME,
                               "linalg.vector_norm cannot compute the %g norm on the dimension %d because this "
                               "dimension is empty and the operation does not have an identity",
                               p, d);
                return NULL;
            }
    }
    ampc_tensor *out = reduce_one(AMPC_OP_NORM, a, mask, keepdim, dtype != AMPC_DTYPE_UNDEFINED ? dtype : a->dtype, p);
    if (out && ampc_any_requires_grad(1, &a))
        out = keep_if_recorded(out, ampc_ad_record_norm(a, p, n_dims, dims, keepdim, out));
    return out;
}

ampc_status ampc_max_min_dim(ampc_op op, const ampc_tensor *a, int64_t dim, bool keepdim, ampc_tensor **values,
                             ampc_tensor **indices) {
    *values = *indices = NULL;
    if (op != AMPC_OP_MAX_DIM && op != AMPC_OP_MIN_DIM)
        return ampc_set_error(AMPC_E_VALUE, "ampc_max_min_dim: %s is not max or min", ampc_op_name(op));
    const char *name = ampc_op_name(op);
    bool mask[AMPC_MAX_DIMS];
    AMPC_TRY(reduced_dims_mask(name, a, 1, &dim, mask));
    AMPC_TRY(check_nonempty(name, a, true, mask, false));
    ampc_dtype dts[2] = {a->dtype, AMPC_INT64};
    ampc_tensor *outs[2];
    AMPC_TRY(run_reduce(op, a, mask, keepdim, 2, dts, 0.0, outs));
    ampc_status st = ampc_any_requires_grad(1, &a)
                         ? ampc_ad_record_max_min_dim(op, a, dim, keepdim, outs[0], outs[1])
                         : AMPC_OK;
    if (st != AMPC_OK) {
        ampc_tensor_decref(outs[0]);
        ampc_tensor_decref(outs[1]);
        return st;
    }
    *values = outs[0];
    *indices = outs[1];
    return AMPC_OK;
}

ampc_tensor *ampc_arg_reduce(ampc_op op, const ampc_tensor *a, bool has_dim, int64_t dim, bool keepdim) {
    if (op != AMPC_OP_ARGMAX && op != AMPC_OP_ARGMIN) {
        ampc_set_error(AMPC_E_VALUE, "ampc_arg_reduce: %s is not argmax or argmin", ampc_op_name(op));
        return NULL;
    }
    const char *name = ampc_op_name(op);
    if (a->dtype == AMPC_BOOL) {
        ampc_set_error(AMPC_E_RUNTIME, "%s(): does not support bool input", name);
        return NULL;
    }
    bool mask[AMPC_MAX_DIMS];
    /* Without a dim the input is flattened: reducing every dim in row-major order gives the
     * flat index; keepdim then keeps all of them as size 1. */
    if (reduced_dims_mask(name, a, has_dim ? 1 : 0, &dim, mask) != AMPC_OK) return NULL;
    if (check_nonempty(name, a, has_dim, mask, true) != AMPC_OK) return NULL;
    return reduce_one(op, a, mask, keepdim, AMPC_INT64, 0.0);
}

ampc_tensor *ampc_cumsum(const ampc_tensor *a, int64_t dim, ampc_dtype dtype) {
    ampc_autocast_scope ac;
    int acr = ampc_autocast_enter(AMPC_OP_CUMSUM, 1, &a, dtype != AMPC_DTYPE_UNDEFINED, &ac);
    if (acr) return acr < 0 ? NULL : ampc_autocast_exit(&ac, ampc_cumsum(ac.t[0], dim, ac.dtype));
    int d;
    if (ampc_wrap_dim("cumsum", dim, a->ndim, &d) != AMPC_OK) return NULL;
    if (dtype != AMPC_DTYPE_UNDEFINED && !ampc_dtype_is_valid(dtype)) {
        ampc_set_error(AMPC_E_TYPE, "cumsum(): invalid dtype %d", (int)dtype);
        return NULL;
    }
    ampc_dtype out_dt = dtype != AMPC_DTYPE_UNDEFINED              ? dtype
                        : ampc_dtype_is_integral(a->dtype, true) ? AMPC_INT64
                                                                 : a->dtype;
    ampc_tensor *cast = ampc_to(a, out_dt, a->device, false);
    if (!cast) return NULL;
    ampc_tensor *in = ampc_contiguous(cast);
    ampc_tensor_decref(cast);
    if (!in) return NULL;
    ampc_tensor *out = ampc_empty(a->ndim, a->shape, out_dt, a->device);
    if (out && ampc_numel(out) > 0) {
        ampc_scan_args args = {.input = in, .output = out, .dim = a->ndim ? d : 0};
        if (ampc_dispatch_scan(AMPC_OP_CUMSUM, &args) != AMPC_OK) {
            ampc_tensor_decref(out);
            out = NULL;
        }
    }
    ampc_tensor_decref(in);
    if (out && ampc_any_requires_grad(1, &a)) out = keep_if_recorded(out, ampc_ad_record_cumsum(a, dim, out));
    return out;
}
