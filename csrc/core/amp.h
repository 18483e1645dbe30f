/* amp.h: the C entry points of mixed-precision training: the GradScaler's unscale + inf/NaN
 * check and its scale update. Both work on device tensors and never read a value back to the
 * host, so a training step with the scaler makes no host-device synchronisation. */
#ifndef AMPC_AMP_H
#define AMPC_AMP_H

#include "tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* grads[i] *= inv_scale for every grad (in place, in its own dtype, computed in fp32), and
 * found_inf = 1 if any grad held a non-finite value before scaling (found_inf is only ever set,
 * never cleared, so several calls can share it). All tensors on one device; found_inf and
 * inv_scale are one-element float32 tensors. One kernel launch for the whole list. */
ampc_status ampc_amp_unscale_and_check_(int n, ampc_tensor *const *grads, ampc_tensor *found_inf,
                                        const ampc_tensor *inv_scale);

/* The scale update, on the device (see amp_math.h). min_scale/max_scale: pass 0 and INFINITY
 * for PyTorch's unbounded behaviour. */
ampc_status ampc_amp_update_scale_(ampc_tensor *scale, ampc_tensor *growth_tracker, const ampc_tensor *found_inf,
                                   double growth_factor, double backoff_factor, int64_t growth_interval,
                                   double min_scale, double max_scale);
/* The same, also recording telemetry in the same kernel (amp_math.h): stats is a contiguous
 * int64 tensor of 4 elements, history (may be NULL) a contiguous float32 ring of any length. */
ampc_status ampc_amp_update_scale_stats_(ampc_tensor *scale, ampc_tensor *growth_tracker, const ampc_tensor *found_inf,
                                         double growth_factor, double backoff_factor, int64_t growth_interval,
                                         double min_scale, double max_scale, ampc_tensor *stats,
                                         ampc_tensor *history);

#ifdef __cplusplus
}
#endif
#endif
