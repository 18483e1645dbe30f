/* nn_conv_more.h: the frontends of issue 13's convolution family beyond nn_conv.c: F.pad in every
 * mode (nn_pad.c). Same conventions as nn_ops.h: checks with PyTorch's messages, outputs on the
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

#ifdef __cplusplus
}
#endif

#endif
