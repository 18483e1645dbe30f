/* amp_math.h: the GradScaler's arithmetic, shared by the CPU and CUDA kernels (AMPC_HD).
 *
 * PyTorch's _amp_update_scale_ (aten/src/ATen/native/cuda/AmpKernels.cu) exactly: on an inf/NaN
 * the scale is multiplied by backoff_factor and the tracker reset; otherwise the tracker counts
 * clean steps and, after growth_interval of them, the scale is multiplied by growth_factor
 * unless that would overflow to inf. ampc adds optional bounds: the scale never leaves
 * [min_scale, max_scale] (PyTorch issue #40497: the scale can otherwise collapse to 0). */
#ifndef AMPC_AMP_MATH_H
#define AMPC_AMP_MATH_H

#include <math.h>
#include <stdint.h>

#include "half.h"

AMPC_HD void ampc_amp_update_scale_math(float *scale, int32_t *growth_tracker, float found_inf,
                                        double growth_factor, double backoff_factor, int64_t growth_interval,
                                        double min_scale, double max_scale) {
    if (found_inf > 0.0f) {
        float s = (float)((double)*scale * backoff_factor);
        *scale = (double)s < min_scale ? (float)min_scale : s;
        *growth_tracker = 0;
    } else {
        int32_t successful = *growth_tracker + 1;
        if (successful == growth_interval) {
            float grown = (float)((double)*scale * growth_factor);
            if (isfinite(grown)) *scale = (double)grown > max_scale ? (float)max_scale : grown;
            *growth_tracker = 0;
        } else {
            *growth_tracker = successful;
        }
    }
}

/* Telemetry, updated in the same kernel as the scale (no extra launch, no host read):
 * stats = {updates, skipped, current overflow streak, last skipped update (1-based, 0: none)};
 * history (optional, capacity cap) is a ring of the scale after each update. */
enum { AMPC_AMP_STAT_STEPS, AMPC_AMP_STAT_SKIPPED, AMPC_AMP_STAT_STREAK, AMPC_AMP_STAT_LAST_SKIPPED, AMPC_AMP_NSTATS };

AMPC_HD void ampc_amp_record_stats(int64_t *stats, float *history, int64_t cap, float found_inf, float scale) {
    int64_t step = ++stats[AMPC_AMP_STAT_STEPS];
    if (found_inf > 0.0f) {
        stats[AMPC_AMP_STAT_SKIPPED]++;
        stats[AMPC_AMP_STAT_STREAK]++;
        stats[AMPC_AMP_STAT_LAST_SKIPPED] = step;
    } else {
        stats[AMPC_AMP_STAT_STREAK] = 0;
    }
    if (history && cap > 0) history[(step - 1) % cap] = scale;
}

#endif
