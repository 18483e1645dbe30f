/* multi_tensor.c: frontends of the list ops (multi_tensor.h): argument checks, output allocation,
 * then one dispatch for the whole list. */
#include "multi_tensor.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernel_args.h"

/* Every tensor present, floating and on `dev`. */
static ampc_status check_list(const char *op, int n, ampc_tensor *const *ts, ampc_device dev) {
    for (int i = 0; i < n; i++) {
        char a[32], b[32];
        if (!ts[i]) return ampc_set_error(AMPC_E_VALUE, "%s: tensor %d is missing", op, i);
        if (!ampc_device_eq(ts[i]->device, dev))
            return ampc_set_error(AMPC_E_RUNTIME,
                                  "%s: Expected all tensors to be on the same device, but found at least two "
                                  "devices, %s and %s!",
                                  op, ampc_device_str(dev, a, sizeof a), ampc_device_str(ts[i]->device, b, sizeof b));
        if (!ampc_dtype_is_floating(ts[i]->dtype))
            return ampc_set_error(AMPC_E_RUNTIME,
                                  "%s: Expected a floating point tensor as input, but tensor %d has dtype %s", op, i,
                                  ampc_dtype_name(ts[i]->dtype));
    }
    return AMPC_OK;
}

ampc_tensor *ampc_multi_tensor_norm(int n, ampc_tensor *const *ts, double p) {
    static const char *op = "_multi_tensor_norm";
    if (isnan(p)) {
        ampc_set_error(AMPC_E_VALUE, "%s: the norm order p must not be NaN", op);
        return NULL;
    }
    if (n <= 0) return ampc_zeros(0, NULL, AMPC_FLOAT32, ampc_cpu_device());
    if (!ts[0]) {
        ampc_set_error(AMPC_E_VALUE, "%s: tensor 0 is missing", op);
        return NULL;
    }
    ampc_device dev = ts[0]->device;
    if (check_list(op, n, ts, dev) != AMPC_OK) return NULL;
    ampc_dtype out_dtype = AMPC_FLOAT32;
    for (int i = 0; i < n; i++)
        if (ts[i]->dtype == AMPC_FLOAT64) out_dtype = AMPC_FLOAT64;

    /* Kernels read each tensor as one flat run of elements: copy the rare strided one (a grad is
     * almost always contiguous, so this costs nothing in practice). */
    ampc_tensor **flat = (ampc_tensor **)calloc((size_t)n, sizeof *flat);
    ampc_tensor *out = NULL;
    if (!flat) {
        ampc_set_error(AMPC_E_NOMEM, "%s: out of host memory for %d tensors", op, n);
        return NULL;
    }
    for (int i = 0; i < n; i++)
        if (!(flat[i] = ampc_contiguous(ts[i]))) goto done;
    out = ampc_empty(0, NULL, out_dtype, dev);
    if (!out) goto done;
    ampc_grad_norm_args args = {.out = out, .tensors = flat, .tensors_n = n, .p = p};
    if (ampc_dispatch_grad_norm(AMPC_OP_GRAD_NORM, &args) != AMPC_OK) {
        ampc_tensor_decref(out);
        out = NULL;
    }
done:
    for (int i = 0; i < n; i++) ampc_tensor_decref(flat[i]);
    free(flat);
    return out;
}

ampc_status ampc_multi_tensor_scale_(int n, ampc_tensor *const *ts, const ampc_tensor *scale) {
    static const char *op = "_multi_tensor_scale_";
    if (n <= 0) return AMPC_OK;
    if (!ts[0]) return ampc_set_error(AMPC_E_VALUE, "%s: tensor 0 is missing", op);
    ampc_device dev = ts[0]->device;
    AMPC_TRY(check_list(op, n, ts, dev));
    if (!scale) return ampc_set_error(AMPC_E_VALUE, "%s: scale is missing", op);
    if (ampc_numel(scale) != 1 || !ampc_dtype_is_floating(scale->dtype))
        return ampc_set_error(AMPC_E_RUNTIME, "%s: scale must be a one-element floating tensor, got %lld elements "
                              "of %s", op, (long long)ampc_numel(scale), ampc_dtype_name(scale->dtype));
    if (!ampc_device_eq(scale->device, dev)) {
        char a[32], b[32];
        return ampc_set_error(AMPC_E_RUNTIME, "%s: scale is on %s but the tensors are on %s", op,
                              ampc_device_str(scale->device, a, sizeof a), ampc_device_str(dev, b, sizeof b));
    }
    /* No outputs: the dispatcher picks the device from the scale, checked above. */
    ampc_grad_scale_args args = {.scale = scale, .tensors = ts, .tensors_n = n};
    AMPC_TRY(ampc_dispatch_grad_scale(AMPC_OP_GRAD_SCALE, &args));
    for (int i = 0; i < n; i++) ts[i]->storage->version++;
    return AMPC_OK;
}
