/* multi_tensor.h: ops over a whole list of tensors in one kernel call, for the code that touches
 * every gradient of a model at once (nn.utils.clip_grad_norm_). One launch per list instead of one
 * per tensor, and results stay on the device: clipping reads no value back to the host. */
#ifndef AMPC_MULTI_TENSOR_H
#define AMPC_MULTI_TENSOR_H

#include "tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The p-norm of all elements of all tensors taken together, as if they were concatenated:
 * (sum_i sum |x|^p)^(1/p); p = inf: max |x|, p = -inf: min |x|, p = 0: count of non-zeros.
 * Tensors: one device, floating, any dtypes and strides. Accumulates in double on the CPU
 * (fp32 at least elsewhere), so fp16/bf16 tensors whose own norms would overflow their dtype still
 * give a finite total. NaN anywhere gives NaN. Returns a new 0-dim tensor on the tensors' device,
 * float64 if any tensor is float64, else float32; an empty list gives 0 (float32, CPU). The result
 * never requires grad. */
ampc_tensor *ampc_multi_tensor_norm(int n, ampc_tensor *const *ts, double p);

/* ts[i] *= scale for every tensor, in place, in one kernel call: scale is a one-element floating
 * tensor on the tensors' device (a device-side value such as a clip coefficient, never read on the
 * host). The product is formed in fp32 (double for float64 tensors) and rounded once. Not recorded
 * by autograd (like writing to .grad under no_grad). */
ampc_status ampc_multi_tensor_scale_(int n, ampc_tensor *const *ts, const ampc_tensor *scale);

#ifdef __cplusplus
}
#endif
#endif
