/* numerics.h: what a floating tensor holds, in the terms of mixed precision (ampc.amp.debug): how
 * many values are NaN, infinite, exactly zero or subnormal in the tensor's own dtype, and the
 * largest finite magnitude. */
#ifndef AMPC_NUMERICS_H
#define AMPC_NUMERICS_H

#include "tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ampc_numerics {
    int64_t numel, n_nan, n_inf, n_zero;
    int64_t n_subnormal; /* 0 < |x| < the dtype's smallest normal number (fp16: 2^-14) */
    double max_abs;      /* over the finite values; 0 when there are none */
} ampc_numerics;

/* Fills r for floating tensor t (any strides, any device: a device tensor is copied to the host
 * first, which synchronises). Integer and bool tensors fail with AMPC_E_TYPE. */
ampc_status ampc_tensor_numerics(const ampc_tensor *t, ampc_numerics *r);

#ifdef __cplusplus
}
#endif
#endif
