/* reduce_scan.c: frontends of issue 12's scans: cumprod, logcumsumexp, cummax and cummin
 * (ops.def rows CUMPROD, LOGCUMSUMEXP: the scan schema; CUMMAX, CUMMIN: scan_indices).
 *
 * PyTorch's rules: dim wraps (a 0-dim input scans its one element), cumprod's integer and bool
 * inputs give int64 unless dtype= says otherwise, logcumsumexp takes floating inputs only,
 * cummax/cummin keep the input's dtype (bool too) and give int64 indices. The input is cast and
 * made contiguous, the outputs are fresh contiguous tensors of its shape, and the kernel runs the
 * scan (kernels: cpu/cpu_scan_more.c, cuda/cuda_scan_more.cu). Gradients are recorded after the
 * run (derivatives_scan.c). */
#include <string.h>

#include "autocast.h"
#include "derivatives.h"
#include "kernel_args.h"
#include "ops.h"

/* `in` contiguous in `dt` (new reference). */
static ampc_tensor *contiguous_as(const ampc_tensor *a, ampc_dtype dt) {
    ampc_tensor *cast = ampc_to(a, dt, a->device, false);
    if (!cast) return NULL;
    ampc_tensor *in = ampc_contiguous(cast);
    ampc_tensor_decref(cast);
    return in;
}

/* Runs a `scan` row into a new tensor of dtype dt. */
static ampc_tensor *run_scan(ampc_op op, const ampc_tensor *a, int d, ampc_dtype dt) {
    ampc_tensor *in = contiguous_as(a, dt);
    if (!in) return NULL;
    ampc_tensor *out = ampc_empty(a->ndim, a->shape, dt, a->device);
    if (out && ampc_numel(out) > 0) {
        ampc_scan_args args = {.input = in, .output = out, .dim = a->ndim ? d : 0};
        if (ampc_dispatch_scan(op, &args) != AMPC_OK) {
            ampc_tensor_decref(out);
            out = NULL;
        }
    }
    ampc_tensor_decref(in);
    return out;
}

static ampc_tensor *recorded(ampc_tensor *out, ampc_status st) {
    if (out && st != AMPC_OK) {
        ampc_tensor_decref(out);
        return NULL;
    }
    return out;
}

ampc_tensor *ampc_cumprod(const ampc_tensor *a, int64_t dim, ampc_dtype dtype) {
    ampc_autocast_scope ac; /* torch's CUDA fp32_set_opt_dtype list */
    int acr = ampc_autocast_enter(AMPC_OP_CUMPROD, 1, &a, dtype != AMPC_DTYPE_UNDEFINED, &ac);
    if (acr) return acr < 0 ? NULL : ampc_autocast_exit(&ac, ampc_cumprod(ac.t[0], dim, ac.dtype));
    int d;
    if (ampc_wrap_dim("cumprod", dim, a->ndim, &d) != AMPC_OK) return NULL;
    if (dtype != AMPC_DTYPE_UNDEFINED && !ampc_dtype_is_valid(dtype)) {
        ampc_set_error(AMPC_E_TYPE, "cumprod(): invalid dtype %d", (int)dtype);
        return NULL;
    }
    ampc_dtype dt = dtype != AMPC_DTYPE_UNDEFINED ? dtype : ampc_dtype_is_integral(a->dtype, true) ? AMPC_INT64 : a->dtype;
    ampc_tensor *out = run_scan(AMPC_OP_CUMPROD, a, d, dt);
    if (out && ampc_any_requires_grad(1, &a)) out = recorded(out, ampc_ad_record_cumprod(a, a->ndim ? d : 0, out));
    return out;
}

ampc_tensor *ampc_logcumsumexp(const ampc_tensor *a, int64_t dim) {
    int d;
    if (ampc_wrap_dim("logcumsumexp", dim, a->ndim, &d) != AMPC_OK) return NULL;
    if (!ampc_dtype_is_floating(a->dtype)) {
        ampc_set_error(AMPC_E_NOT_IMPLEMENTED, "\"logcumsumexp_out_cpu\" not implemented for '%s'",
                       ampc_dtype_torch_name(a->dtype));
        return NULL;
    }
    ampc_tensor *out = run_scan(AMPC_OP_LOGCUMSUMEXP, a, d, a->dtype);
    if (out && ampc_any_requires_grad(1, &a)) out = recorded(out, ampc_ad_record_logcumsumexp(a, a->ndim ? d : 0, out));
    return out;
}

ampc_status ampc_cummax_cummin(ampc_op op, const ampc_tensor *a, int64_t dim, ampc_tensor **values,
                               ampc_tensor **indices) {
    *values = *indices = NULL;
    if (op != AMPC_OP_CUMMAX && op != AMPC_OP_CUMMIN)
        return ampc_set_error(AMPC_E_VALUE, "cummax_cummin: %s is not cummax or cummin", ampc_op_name(op));
    int d = 0;
    if (ampc_numel(a) > 0 || (dim >= -(int64_t)(a->ndim ? a->ndim : 1) && dim < (a->ndim ? a->ndim : 1)))
        AMPC_TRY(ampc_wrap_dim(ampc_op_name(op), dim, a->ndim, &d)); /* torch checks no dim of an empty input */
    ampc_tensor *in = contiguous_as(a, a->dtype);
    if (!in) return ampc_last_status();
    ampc_tensor *v = ampc_empty(a->ndim, a->shape, a->dtype, a->device);
    ampc_tensor *i = v ? ampc_empty(a->ndim, a->shape, AMPC_INT64, a->device) : NULL;
    ampc_status st = i ? AMPC_OK : ampc_last_status();
    if (st == AMPC_OK && ampc_numel(v) > 0) {
        ampc_scan_indices_args args = {.input = in, .values = v, .indices = i, .dim = a->ndim ? d : 0};
        st = ampc_dispatch_scan_indices(op, &args);
    }
    ampc_tensor_decref(in);
    if (st == AMPC_OK && ampc_any_requires_grad(1, &a)) st = ampc_ad_record_cummax_cummin(op, a, a->ndim ? d : 0, v, i);
    if (st != AMPC_OK) {
        ampc_tensor_decref(v);
        ampc_tensor_decref(i);
        return st;
    }
    *values = v;
    *indices = i;
    return AMPC_OK;
}
