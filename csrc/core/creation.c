/* creation.c: arange, linspace and eye, the creation functions that compute values.
 *
 * All three are device-generic: they allocate on the target device and fill through kernels
 * every backend has (ARANGE, FILL), never through host loops, so they cost no host-device
 * copy on a GPU. */
#include <math.h>
#include <string.h>

#include "kernel_args.h"
#include "ops.h"

/* out[i] = start + i * step through the ARANGE kernel. Integral values travel as ints so int64
 * results beyond 2^53 stay exact. */
static ampc_status fill_arange(ampc_tensor *out, double start, double step) {
    if (ampc_numel(out) == 0) return AMPC_OK;
    bool ints = !ampc_dtype_is_floating(out->dtype) && start == floor(start) && step == floor(step) &&
                fabs(start) < 9.2e18 && fabs(step) < 9.2e18;
    ampc_arange_args args = {.out = out,
                             .start = ints ? ampc_scalar_int((int64_t)start) : ampc_scalar_float(start),
                             .step = ints ? ampc_scalar_int((int64_t)step) : ampc_scalar_float(step)};
    AMPC_TRY(ampc_dispatch_arange(AMPC_OP_ARANGE, &args));
    out->storage->version++;
    return AMPC_OK;
}

ampc_tensor *ampc_arange(double start, double end, double step, ampc_dtype dtype, ampc_device dev) {
    if (!isfinite(start) || !isfinite(end)) {
        ampc_set_error(AMPC_E_RUNTIME, "arange: unsupported range: %g -> %g", start, end);
        return NULL;
    }
    if (step == 0 || !isfinite(step)) {
        ampc_set_error(AMPC_E_RUNTIME, "arange: step must be nonzero");
        return NULL;
    }
    if ((step > 0 && end < start) || (step < 0 && end > start)) {
        ampc_set_error(AMPC_E_RUNTIME, "arange: upper bound and lower bound inconsistent with step sign");
        return NULL;
    }
    /* PyTorch's rules: the length comes from the double values, except for int64 where start,
     * end and step are truncated to integers first; integral outputs always step by the
     * truncated step from the truncated start. */
    double size_d = ceil((end - start) / step);
    if (ampc_dtype_is_integral(dtype, true)) {
        if (fabs(start) > 9.2e18 || fabs(end) > 9.2e18 || fabs(step) > 9.2e18) {
            ampc_set_error(AMPC_E_RUNTIME, "arange: bounds do not fit in int64");
            return NULL;
        }
        start = trunc(start);
        step = trunc(step);
        if (step == 0) {
            ampc_set_error(AMPC_E_RUNTIME, "arange: step must be nonzero");
            return NULL;
        }
        if (dtype == AMPC_INT64) {
            int64_t is = (int64_t)start, ie = (int64_t)trunc(end), st = (int64_t)step, sgn = st > 0 ? 1 : -1;
            size_d = (double)((ie - is + st - sgn) / st);
            if (size_d < 0) size_d = 0;
        }
    }
    if (size_d > 9.0e18) {
        ampc_set_error(AMPC_E_RUNTIME, "arange: invalid size, possible overflow?");
        return NULL;
    }
    int64_t n = (int64_t)size_d;
    ampc_tensor *t = ampc_empty(1, &n, dtype, dev);
    if (t && fill_arange(t, start, step) != AMPC_OK) {
        ampc_tensor_decref(t);
        return NULL;
    }
    return t;
}

ampc_tensor *ampc_linspace(double start, double end, int64_t steps, ampc_dtype dtype, ampc_device dev) {
    if (steps < 0) {
        ampc_set_error(AMPC_E_RUNTIME, "linspace: number of steps must be non-negative");
        return NULL;
    }
    ampc_tensor *t = ampc_empty(1, &steps, dtype, dev);
    if (!t || steps == 0) return t;
    if (steps == 1) {
        if (ampc_fill_(t, ampc_scalar_float(start)) != AMPC_OK) goto fail;
        return t;
    }
    /* PyTorch's symmetric formula: the first half counts up from start, the second half down
     * from end, so both endpoints are exact. */
    double step = (end - start) / (double)(steps - 1);
    int64_t half = steps / 2;
    ampc_tensor *lo = ampc_narrow(t, 0, 0, half);
    ampc_tensor *hi = lo ? ampc_narrow(t, 0, half, steps - half) : NULL;
    ampc_status st = hi ? fill_arange(lo, start, step) : ampc_last_status();
    if (st == AMPC_OK) st = fill_arange(hi, end - step * (double)(steps - half - 1), step);
    ampc_tensor_decref(lo);
    ampc_tensor_decref(hi);
    if (st != AMPC_OK) goto fail;
    return t;
fail:
    ampc_tensor_decref(t);
    return NULL;
}

ampc_tensor *ampc_eye(int64_t n, int64_t m, ampc_dtype dtype, ampc_device dev) {
    if (n < 0) {
        ampc_set_error(AMPC_E_RUNTIME, "eye: n must be greater or equal to 0, got %lld", (long long)n);
        return NULL;
    }
    if (m < 0) {
        ampc_set_error(AMPC_E_RUNTIME, "eye: m must be greater or equal to 0, got %lld", (long long)m);
        return NULL;
    }
    int64_t shape[2] = {n, m};
    ampc_tensor *t = ampc_zeros(2, shape, dtype, dev);
    if (!t) return NULL;
    /* The diagonal is a strided view (stride m + 1) of the zeroed matrix: fill it with ones. */
    int64_t diag_len = n < m ? n : m, diag_stride = m + 1;
    ampc_tensor *diag = ampc_as_strided(t, 1, &diag_len, &diag_stride, t->offset);
    if (!diag || ampc_fill_(diag, ampc_scalar_int(1)) != AMPC_OK) {
        ampc_tensor_decref(diag);
        ampc_tensor_decref(t);
        return NULL;
    }
    ampc_tensor_decref(diag);
    return t;
}
