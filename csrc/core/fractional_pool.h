/* fractional_pool.h: the pseudo-random window starts of fractional max pooling (Graham 2014),
 * shared by the CPU and CUDA kernels (AMPC_HD) so both pick the same windows.
 *
 * PyTorch's rule (FractionalMaxPool2d.cpp / .cu): along an axis of `in` elements pooled to `out`
 * windows of `pool`, with u the plane's sample in [0, 1) and alpha = (in - pool) / (out - 1),
 * window i starts at int((i + u) * alpha) - int(u * alpha), the last one at in - pool. The
 * arithmetic is the opmath type's: float for fp16/bf16/fp32 inputs (as torch's CUDA kernel; its
 * CPU kernel rounds each step to fp16/bf16 for those), double for fp64. */
#ifndef AMPC_FRACTIONAL_POOL_H
#define AMPC_FRACTIONAL_POOL_H

#include <stdint.h>

#include "half.h"

AMPC_HD int64_t ampc_frac_start_f(float u, int64_t i, int64_t in, int64_t out, int64_t pool) {
    if (i == out - 1) return in - pool;
    float alpha = (float)(in - pool) / (float)(out - 1);
    return (int64_t)((int)(((float)i + u) * alpha) - (int)(u * alpha));
}

AMPC_HD int64_t ampc_frac_start_d(double u, int64_t i, int64_t in, int64_t out, int64_t pool) {
    if (i == out - 1) return in - pool;
    double alpha = (double)(in - pool) / (double)(out - 1);
    return (int64_t)((int)(((double)i + u) * alpha) - (int)(u * alpha));
}

#endif
