/* nn_poolnorm.h: the frontends of issue 13's pooling and normalisation part (nn_poolnorm.c):
 * N-d pooling over 1, 2 or 3 spatial dims served by one kernel schema (pool3d), and RMS norm.
 *
 * Pooling inputs are (N, C, *spatial) or unbatched (C, *spatial) with nsp spatial dims; window
 * arrays hold nsp entries. The 2-d max/avg/adaptive-avg pools of nn_pool.c keep their rows; the
 * 1-d pools are the 2-d ones over (N, C, 1, L), as in PyTorch. */
#ifndef AMPC_NN_POOLNORM_H
#define AMPC_NN_POOLNORM_H

#include "tensor.h"

/* max_pool3d: stride NULL or all zero = the kernel; indices may be NULL. */
ampc_status ampc_max_pool3d(const ampc_tensor *input, const int64_t kernel[3], const int64_t stride[3],
                            const int64_t padding[3], const int64_t dilation[3], bool ceil_mode, ampc_tensor **out,
                            ampc_tensor **indices);
/* avg_pool3d: divisor_override 0 is none. */
ampc_tensor *ampc_avg_pool3d(const ampc_tensor *input, const int64_t kernel[3], const int64_t stride[3],
                             const int64_t padding[3], bool ceil_mode, bool count_include_pad,
                             int64_t divisor_override);
/* Adaptive pools over nsp (2 or 3; avg: 3) spatial dims; output_size entries < 0 keep the input's. */
ampc_tensor *ampc_adaptive_avg_pool3d(const ampc_tensor *input, const int64_t output_size[3]);
ampc_status ampc_adaptive_max_pool_nd(int nsp, const ampc_tensor *input, const int64_t *output_size,
                                      ampc_tensor **out, ampc_tensor **indices);

/* Backward of the max pools (3d and adaptive, nsp spatial dims): grad_out and indices of the
 * output's shape, the input's shape given. */
ampc_tensor *ampc_max_pool_nd_backward(int nsp, bool adaptive, const ampc_tensor *grad_out, int ndim,
                                       const int64_t *input_shape, const ampc_tensor *indices);

/* fractional_max_pool2d/3d (nsp 2 or 3): kernel and output_size of nsp entries, samples (N', C,
 * nsp) in [0, 1) of the input's dtype (torch's _random_samples). */
ampc_status ampc_fractional_max_pool_nd(int nsp, const ampc_tensor *input, const int64_t *kernel,
                                        const int64_t *output_size, const ampc_tensor *samples, ampc_tensor **out,
                                        ampc_tensor **indices);

/* rms_norm over the trailing n_norm dims (weight of that shape or NULL); eps < 0: the input
 * dtype's machine epsilon (PyTorch's eps=None). rstd (optional out): (M) in the stats dtype. */
ampc_tensor *ampc_rms_norm(const ampc_tensor *input, int n_norm, const int64_t *normalized_shape,
                           const ampc_tensor *weight, double eps, ampc_tensor **rstd);

#endif
