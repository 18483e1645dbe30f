/* nn_conv_more.h: the frontends of issue 13's convolution family: F.pad in every mode (nn_pad.c),
 * convolutions of 1-3 dims, direct and transposed (nn_conv.c), unfold and fold (nn_fold.c),
 * interpolate (nn_resample.c). Same conventions as nn_ops.h: checks with PyTorch's messages, outputs on the
 * input's device, a node recorded when an input requires grad, NULL (error set) on failure. */
#ifndef AMPC_NN_CONV_MORE_H
#define AMPC_NN_CONV_MORE_H

#include "ops.h"

#ifdef __cplusplus
extern "C" {
#endif

/* torch.nn.functional.pad's modes. */
typedef enum ampc_pad_mode {
    AMPC_PAD_CONSTANT = 0,
    AMPC_PAD_REFLECT = 1,
    AMPC_PAD_REPLICATE = 2,
    AMPC_PAD_CIRCULAR = 3,
} ampc_pad_mode;

/* F.pad(input, pad, mode, value): pad[2i], pad[2i+1] pad dim ndim-1-i before and after
 * (negative: crop). Constant mode pads any number of dims with `value`; the other modes pad the
 * last 1-3 dims of a (batched or unbatched) input, as PyTorch. */
ampc_tensor *ampc_pad(const ampc_tensor *input, int npad, const int64_t *pad, ampc_pad_mode mode, double value);
/* The adjoint of a non-constant pad: grad_out of the padded shape -> grad of input_shape
 * (the sum over every output position that read each input element). */
ampc_tensor *ampc_pad_backward(const ampc_tensor *grad_out, int ndim, const int64_t *input_shape, int npad,
                               const int64_t *pad, ampc_pad_mode mode);

/* ---- convolution of 1-3 spatial dims, direct or transposed (nn_conv.c) ----
 * Spatial triples are (d, h, w); a problem of fewer dims uses the last entries (the others are
 * ignored). Direct: input (N, C, *in), weight (O, C/G, *k), out (N, O, *out). Transposed: input
 * (N, C_in, *in), weight (C_in, C_out/G, *k), out (N, C_out, *out) with out = (in - 1) * stride -
 * pad_lo - pad_hi + dilation * (k - 1) + output_padding + 1. Unbatched inputs drop N. */
typedef struct ampc_convnd_params {
    int spatial;     /* 1, 2 or 3 */
    bool transposed;
    int64_t stride[3], pad_lo[3], pad_hi[3], dilation[3], output_padding[3];
    int64_t groups;
} ampc_convnd_params;

ampc_tensor *ampc_convolution_nd(const ampc_tensor *input, const ampc_tensor *weight, const ampc_tensor *bias,
                                 const ampc_convnd_params *p);
/* Grads of the outputs asked for (need[0..2]: input, weight, bias); others set to NULL. */
ampc_status ampc_convolution_nd_backward(const ampc_tensor *grad_out, const ampc_tensor *input,
                                         const ampc_tensor *weight, const ampc_convnd_params *p, const bool need[3],
                                         ampc_tensor **grad_input, ampc_tensor **grad_weight, ampc_tensor **grad_bias);

/* ---- F.unfold / F.fold (nn_fold.c): input (N, C, H, W) <-> cols (N, C*kh*kw, L), unbatched
 * without N; pairs are (h, w), padding symmetric. ---- */
ampc_tensor *ampc_unfold_im2col(const ampc_tensor *input, const int64_t kernel[2], const int64_t dilation[2],
                                const int64_t padding[2], const int64_t stride[2]);
ampc_tensor *ampc_fold_col2im(const ampc_tensor *input, const int64_t output_size[2], const int64_t kernel[2],
                              const int64_t dilation[2], const int64_t padding[2], const int64_t stride[2]);

/* ---- F.interpolate (nn_resample.c) ----
 * input (N, C, *in) with 1-3 spatial dims -> (N, C, *out_size). scales[i]: the scale_factor of
 * spatial dim i that PyTorch's kernels use for the source index (<= 0: none, in/out is used);
 * align_corners for linear and bicubic. */
typedef enum ampc_interp_mode {
    AMPC_INTERP_NEAREST = 0,
    AMPC_INTERP_NEAREST_EXACT = 1,
    AMPC_INTERP_LINEAR = 2, /* linear, bilinear, trilinear by the spatial dims */
    AMPC_INTERP_BICUBIC = 3,
    AMPC_INTERP_AREA = 4,   /* adaptive average pooling */
    AMPC_INTERP_BILINEAR_AA = 5, /* antialias=True: the filter widens with the downscale factor */
    AMPC_INTERP_BICUBIC_AA = 6,
} ampc_interp_mode;

ampc_tensor *ampc_interpolate(const ampc_tensor *input, ampc_interp_mode mode, int spatial, const int64_t *out_size,
                              const double *scales, bool align_corners);
ampc_tensor *ampc_interpolate_backward(const ampc_tensor *grad_out, const int64_t *input_shape, ampc_interp_mode mode,
                                       int spatial, const double *scales, bool align_corners);

#ifdef __cplusplus
}
#endif

#endif
