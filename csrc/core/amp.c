/* amp.c: frontends of the scaler ops: argument checks, then one dispatch per call. */
#include "amp.h"

#include <math.h>
#include <string.h>

#include "amp_math.h"
#include "kernel_args.h"

static ampc_status check_scalar_tensor(const char *op, const char *name, const ampc_tensor *t, ampc_dtype dt,
                                       ampc_device dev) {
    if (!t) return ampc_set_error(AMPC_E_VALUE, "%s: %s is missing", op, name);
    if (ampc_numel(t) != 1)
        return ampc_set_error(AMPC_E_RUNTIME, "%s: %s must be a 1-element tensor, got %lld elements", op, name,
                              (long long)ampc_numel(t));
    if (t->dtype != dt)
        return ampc_set_error(AMPC_E_TYPE, "%s: %s must be a %s tensor, got %s", op, name, ampc_dtype_name(dt),
                              ampc_dtype_name(t->dtype));
    if (!ampc_device_eq(t->device, dev)) {
        char a[32], b[32];
        return ampc_set_error(AMPC_E_RUNTIME, "%s: %s is on %s but the grads are on %s", op, name,
                              ampc_device_str(t->device, a, sizeof a), ampc_device_str(dev, b, sizeof b));
    }
    return AMPC_OK;
}

ampc_status ampc_amp_unscale_and_check_(int n, ampc_tensor *const *grads, ampc_tensor *found_inf,
                                        const ampc_tensor *inv_scale) {
    static const char *op = "_amp_foreach_non_finite_check_and_unscale_";
    if (n == 0) return AMPC_OK;
    ampc_device dev = grads[0]->device;
    for (int i = 0; i < n; i++) {
        char a[32], b[32];
        if (!ampc_device_eq(grads[i]->device, dev))
            return ampc_set_error(AMPC_E_RUNTIME, "%s: all grads must be on one device, got %s and %s", op,
                                  ampc_device_str(dev, a, sizeof a), ampc_device_str(grads[i]->device, b, sizeof b));
        if (!ampc_dtype_is_floating(grads[i]->dtype))
            return ampc_set_error(AMPC_E_TYPE, "%s: grad %d has dtype %s; only floating grads can be unscaled", op, i,
                                  ampc_dtype_name(grads[i]->dtype));
    }
    AMPC_TRY(check_scalar_tensor(op, "found_inf", found_inf, AMPC_FLOAT32, dev));
    AMPC_TRY(check_scalar_tensor(op, "inv_scale", inv_scale, AMPC_FLOAT32, dev));
    ampc_amp_unscale_args args = {.found_inf = found_inf, .inv_scale = inv_scale, .grads = grads, .grads_n = n};
    AMPC_TRY(ampc_dispatch_amp_unscale(AMPC_OP_AMP_UNSCALE_CHECK, &args));
    for (int i = 0; i < n; i++) grads[i]->storage->version++;
    found_inf->storage->version++;
    return AMPC_OK;
}

ampc_status ampc_amp_update_scale_(ampc_tensor *scale, ampc_tensor *growth_tracker, const ampc_tensor *found_inf,
                                   double growth_factor, double backoff_factor, int64_t growth_interval,
                                   double min_scale, double max_scale) {
    return ampc_amp_update_scale_stats_(scale, growth_tracker, found_inf, growth_factor, backoff_factor,
                                        growth_interval, min_scale, max_scale, NULL, NULL);
}

ampc_status ampc_amp_update_scale_stats_(ampc_tensor *scale, ampc_tensor *growth_tracker, const ampc_tensor *found_inf,
                                         double growth_factor, double backoff_factor, int64_t growth_interval,
                                         double min_scale, double max_scale, ampc_tensor *stats,
                                         ampc_tensor *history) {
    static const char *op = "_amp_update_scale_";
    ampc_device dev = scale->device;
    AMPC_TRY(check_scalar_tensor(op, "scale", scale, AMPC_FLOAT32, dev));
    AMPC_TRY(check_scalar_tensor(op, "growth_tracker", growth_tracker, AMPC_INT32, dev));
    AMPC_TRY(check_scalar_tensor(op, "found_inf", found_inf, AMPC_FLOAT32, dev));
    /* any growth_interval, as torch's kernel: one <= 0 is never reached, so the scale never grows */
    if (!(min_scale <= max_scale))
        return ampc_set_error(AMPC_E_VALUE, "%s: min_scale (%g) must not exceed max_scale (%g)", op, min_scale,
                              max_scale);
    if (stats) {
        if (stats->dtype != AMPC_INT64 || ampc_numel(stats) != AMPC_AMP_NSTATS || !ampc_is_contiguous(stats) ||
            !ampc_device_eq(stats->device, dev))
            return ampc_set_error(AMPC_E_VALUE, "%s: stats must be a contiguous int64 tensor of %d elements on the "
                                  "scale's device", op, AMPC_AMP_NSTATS);
        if (history && (history->dtype != AMPC_FLOAT32 || !ampc_is_contiguous(history) ||
                        !ampc_device_eq(history->device, dev)))
            return ampc_set_error(AMPC_E_VALUE, "%s: history must be a contiguous float32 tensor on the scale's device",
                                  op);
    }
    ampc_amp_update_scale_args args = {.scale = scale,
                                       .growth_tracker = growth_tracker,
                                       .stats = stats,
                                       .history = stats ? history : NULL,
                                       .found_inf = found_inf,
                                       .growth_factor = growth_factor,
                                       .backoff_factor = backoff_factor,
                                       .min_scale = min_scale,
                                       .max_scale = max_scale,
                                       .growth_interval = growth_interval};
    AMPC_TRY(ampc_dispatch_amp_update_scale(AMPC_OP_AMP_UPDATE_SCALE, &args));
    scale->storage->version++;
    growth_tracker->storage->version++;
    return AMPC_OK;
}
