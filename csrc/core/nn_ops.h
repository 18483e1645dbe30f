/* nn_ops.h: the frontends behind ampc.nn.functional: convolution, pooling, normalization,
 * embedding, dropout, softmax, losses, attention, linear.
 *
 * Same conventions as ops.h: each function checks its arguments with PyTorch's messages,
 * allocates outputs on the inputs' device, runs the NN kernels of ops.def, and returns a new
 * reference (NULL with the error set) or a status. Optional tensors are NULL. When grad mode is
 * on and an input requires grad, the frontend records its node; the gradient rule sits next to
 * the forward in the same nn_*.c file. The *_backward functions are what those rules run; they
 * are public so tests (and other backends' kernel checks) can call them directly. */
#ifndef AMPC_NN_OPS_H
#define AMPC_NN_OPS_H

#include "ops.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ampc_reduction (none / mean / sum, torch's reduction=) is in dispatch.h: kernel arguments carry it */

/* ---- linear (nn_misc.c) ---- */
/* input (*, in), weight (out, in), bias (out) -> (*, out) */
ampc_tensor *ampc_linear(const ampc_tensor *input, const ampc_tensor *weight, const ampc_tensor *bias);

/* ---- convolution (nn_conv.c): im2col + GEMM ----
 * 1-d or 2-d, chosen by the weight's rank (3 or 4). Spatial arrays are (h, w); a 1-d
 * convolution uses index 1 only (h entries ignored). pad_lo/pad_hi: padding before/after, equal
 * for PyTorch's integer padding, unequal for padding="same" with an even receptive field. */
typedef struct ampc_conv_params {
    int64_t stride[2], pad_lo[2], pad_hi[2], dilation[2];
    int64_t groups;
} ampc_conv_params;

ampc_tensor *ampc_convolution(const ampc_tensor *input, const ampc_tensor *weight, const ampc_tensor *bias,
                              const ampc_conv_params *p);
ampc_tensor *ampc_conv2d(const ampc_tensor *input, const ampc_tensor *weight, const ampc_tensor *bias,
                         const int64_t stride[2], const int64_t padding[2], const int64_t dilation[2], int64_t groups);
ampc_tensor *ampc_conv1d(const ampc_tensor *input, const ampc_tensor *weight, const ampc_tensor *bias, int64_t stride,
                         int64_t padding, int64_t dilation, int64_t groups);
/* Grads of the outputs asked for (need[0..2]: input, weight, bias); others set to NULL. */
ampc_status ampc_convolution_backward(const ampc_tensor *grad_out, const ampc_tensor *input, const ampc_tensor *weight,
                                      const ampc_conv_params *p, const bool need[3], ampc_tensor **grad_input,
                                      ampc_tensor **grad_weight, ampc_tensor **grad_bias);

/* ---- pooling (nn_pool.c): input (N, C, H, W) or (C, H, W) ---- */
/* stride NULL or {0, 0}: the kernel size. indices may be NULL (return_indices=False). */
ampc_status ampc_max_pool2d(const ampc_tensor *input, const int64_t kernel[2], const int64_t stride[2],
                            const int64_t padding[2], const int64_t dilation[2], bool ceil_mode, ampc_tensor **out,
                            ampc_tensor **indices);
/* Backward functions take the input's shape (ndim 3 or 4), not the input: that is all they need. */
ampc_tensor *ampc_max_pool2d_backward(const ampc_tensor *grad_out, int ndim, const int64_t *input_shape,
                                      const ampc_tensor *indices);
/* divisor_override 0: none */
ampc_tensor *ampc_avg_pool2d(const ampc_tensor *input, const int64_t kernel[2], const int64_t stride[2],
                             const int64_t padding[2], bool ceil_mode, bool count_include_pad,
                             int64_t divisor_override);
ampc_tensor *ampc_avg_pool2d_backward(const ampc_tensor *grad_out, int ndim, const int64_t *input_shape,
                                      const int64_t kernel[2], const int64_t stride[2], const int64_t padding[2],
                                      bool ceil_mode, bool count_include_pad, int64_t divisor_override);
/* output_size entries < 0 keep the input's size (PyTorch's None). */
ampc_tensor *ampc_adaptive_avg_pool2d(const ampc_tensor *input, const int64_t output_size[2]);
ampc_tensor *ampc_adaptive_avg_pool2d_backward(const ampc_tensor *grad_out, int ndim, const int64_t *input_shape);

/* ---- normalization (nn_norm.c) ---- */
/* input (N, C, *). training: normalizes with the batch statistics and, when given, updates
 * running_mean/running_var in place (momentum, unbiased variance); else uses the running stats. */
ampc_tensor *ampc_batch_norm(const ampc_tensor *input, ampc_tensor *running_mean, ampc_tensor *running_var,
                             const ampc_tensor *weight, const ampc_tensor *bias, bool training, double momentum,
                             double eps);
/* The same, also returning the stats backward uses (save_mean, save_invstd: batch mean and
 * 1/sqrt(var + eps) when training; eval returns running_mean and running_var itself). */
ampc_tensor *ampc_native_batch_norm(const ampc_tensor *input, ampc_tensor *running_mean, ampc_tensor *running_var,
                                    const ampc_tensor *weight, const ampc_tensor *bias, bool training, double momentum,
                                    double eps, ampc_tensor **save_mean, ampc_tensor **save_invstd);
ampc_status ampc_native_batch_norm_backward(const ampc_tensor *grad_out, const ampc_tensor *input,
                                            const ampc_tensor *weight, const ampc_tensor *save_mean,
                                            const ampc_tensor *save_invstd, bool training, double eps,
                                            const bool need[3], ampc_tensor **grad_input, ampc_tensor **grad_weight,
                                            ampc_tensor **grad_bias);
/* normalized_shape: the trailing n_norm dims of input; weight/bias of that shape. */
ampc_tensor *ampc_layer_norm(const ampc_tensor *input, int n_norm, const int64_t *normalized_shape,
                             const ampc_tensor *weight, const ampc_tensor *bias, double eps);
ampc_tensor *ampc_native_layer_norm(const ampc_tensor *input, int n_norm, const int64_t *normalized_shape,
                                    const ampc_tensor *weight, const ampc_tensor *bias, double eps,
                                    ampc_tensor **mean, ampc_tensor **rstd);
ampc_status ampc_native_layer_norm_backward(const ampc_tensor *grad_out, const ampc_tensor *input, int n_norm,
                                            const ampc_tensor *mean, const ampc_tensor *rstd,
                                            const ampc_tensor *weight, const bool need[3], ampc_tensor **grad_input,
                                            ampc_tensor **grad_weight, ampc_tensor **grad_bias);
ampc_tensor *ampc_group_norm(const ampc_tensor *input, int64_t num_groups, const ampc_tensor *weight,
                             const ampc_tensor *bias, double eps);
ampc_tensor *ampc_native_group_norm(const ampc_tensor *input, int64_t num_groups, const ampc_tensor *weight,
                                    const ampc_tensor *bias, double eps, ampc_tensor **mean, ampc_tensor **rstd);
ampc_status ampc_native_group_norm_backward(const ampc_tensor *grad_out, const ampc_tensor *input,
                                            int64_t num_groups, const ampc_tensor *mean, const ampc_tensor *rstd,
                                            const ampc_tensor *weight, const bool need[3], ampc_tensor **grad_input,
                                            ampc_tensor **grad_weight, ampc_tensor **grad_bias);

/* ---- embedding and dropout (nn_misc.c) ---- */
/* weight (V, D), indices int64/int32 of any shape -> (*indices, D). padding_idx < 0 after
 * wrapping (pass INT64_MIN for None): none. */
ampc_tensor *ampc_embedding(const ampc_tensor *weight, const ampc_tensor *indices, int64_t padding_idx,
                            bool scale_grad_by_freq);
ampc_tensor *ampc_embedding_backward(const ampc_tensor *grad_out, const ampc_tensor *indices, int64_t num_weights,
                                     int64_t padding_idx, bool scale_grad_by_freq);
/* Not training or p == 0: a new reference to input itself. mask (optional out): the bool keep
 * mask drawn, NULL when nothing was drawn. */
ampc_tensor *ampc_dropout(const ampc_tensor *input, double p, bool training);
ampc_tensor *ampc_native_dropout(const ampc_tensor *input, double p, ampc_tensor **mask);
/* grad * mask * scale */
ampc_tensor *ampc_masked_scale(const ampc_tensor *grad, const ampc_tensor *mask, double scale);

/* ---- softmax and classification losses (nn_softmax.c) ---- */
/* dtype AMPC_DTYPE_UNDEFINED: the input's; else input is read in its dtype and the result is
 * computed in at least fp32 and written in `dtype` (torch's dtype argument). */
ampc_tensor *ampc_softmax(const ampc_tensor *input, int64_t dim, ampc_dtype dtype);
ampc_tensor *ampc_log_softmax(const ampc_tensor *input, int64_t dim, ampc_dtype dtype);
/* grad x (in input_dtype) from grad y and y. */
ampc_tensor *ampc_softmax_backward(const ampc_tensor *grad_out, const ampc_tensor *output, int64_t dim,
                                   ampc_dtype input_dtype);
ampc_tensor *ampc_log_softmax_backward(const ampc_tensor *grad_out, const ampc_tensor *output, int64_t dim,
                                       ampc_dtype input_dtype);
/* input (N, C, *) or (C); target: int64 class indices (N, *) or () / probabilities like input. */
ampc_tensor *ampc_cross_entropy(const ampc_tensor *input, const ampc_tensor *target, const ampc_tensor *weight,
                                ampc_reduction reduction, int64_t ignore_index, double label_smoothing);
ampc_tensor *ampc_nll_loss(const ampc_tensor *input, const ampc_tensor *target, const ampc_tensor *weight,
                           ampc_reduction reduction, int64_t ignore_index);
/* The same, also returning what backward needs: the log-sum-exp of every row ((N, *) stats) and
 * the total weight (0-dim; the divisor of reduction='mean'). */
ampc_tensor *ampc_native_cross_entropy(const ampc_tensor *input, const ampc_tensor *target, const ampc_tensor *weight,
                                       ampc_reduction reduction, int64_t ignore_index, double label_smoothing,
                                       ampc_tensor **lse, ampc_tensor **total_weight);
/* grad_target only for probability targets (need_target). */
ampc_status ampc_cross_entropy_backward(const ampc_tensor *grad_loss, const ampc_tensor *input,
                                        const ampc_tensor *target, const ampc_tensor *weight, const ampc_tensor *lse,
                                        const ampc_tensor *total_weight, ampc_reduction reduction,
                                        int64_t ignore_index, double label_smoothing, bool need_input,
                                        bool need_target, ampc_tensor **grad_input, ampc_tensor **grad_target);
ampc_tensor *ampc_native_nll_loss(const ampc_tensor *input, const ampc_tensor *target, const ampc_tensor *weight,
                                  ampc_reduction reduction, int64_t ignore_index, ampc_tensor **total_weight);
ampc_tensor *ampc_nll_loss_backward(const ampc_tensor *grad_loss, const ampc_tensor *input, const ampc_tensor *target,
                                    const ampc_tensor *weight, const ampc_tensor *total_weight,
                                    ampc_reduction reduction, int64_t ignore_index);

/* ---- elementwise losses (nn_loss.c): input and target broadcast together ---- */
ampc_tensor *ampc_mse_loss(const ampc_tensor *input, const ampc_tensor *target, ampc_reduction reduction);
ampc_tensor *ampc_l1_loss(const ampc_tensor *input, const ampc_tensor *target, ampc_reduction reduction);
ampc_tensor *ampc_smooth_l1_loss(const ampc_tensor *input, const ampc_tensor *target, ampc_reduction reduction,
                                 double beta);
ampc_tensor *ampc_binary_cross_entropy(const ampc_tensor *input, const ampc_tensor *target,
                                       const ampc_tensor *weight, ampc_reduction reduction);
ampc_tensor *ampc_binary_cross_entropy_with_logits(const ampc_tensor *input, const ampc_tensor *target,
                                                   const ampc_tensor *weight, const ampc_tensor *pos_weight,
                                                   ampc_reduction reduction);
/* Grads of any of the five (op: AMPC_OP_MSE_LOSS ... AMPC_OP_BCE_WITH_LOGITS_LOSS) w.r.t. input
 * and target (need[0], need[1]), summed back to their shapes when they were broadcast. */
ampc_status ampc_pointwise_loss_backward(ampc_op op, const ampc_tensor *grad_loss, const ampc_tensor *input,
                                         const ampc_tensor *target, const ampc_tensor *weight,
                                         const ampc_tensor *pos_weight, ampc_reduction reduction, double beta,
                                         const bool need[2], ampc_tensor **grad_input, ampc_tensor **grad_target);

/* ---- attention (nn_attn.c) ---- */
/* query (*, L, E), key (*, S, E), value (*, S, Ev) -> (*, L, Ev); attn_mask NULL, bool (True
 * takes part) or floating (added), broadcastable to (*, L, S); scale NaN: 1/sqrt(E); enable_gqa:
 * key and value may have fewer heads (dim -3) than query, a divisor of its. */
ampc_tensor *ampc_scaled_dot_product_attention(const ampc_tensor *query, const ampc_tensor *key,
                                               const ampc_tensor *value, const ampc_tensor *attn_mask,
                                               double dropout_p, bool is_causal, double scale, bool enable_gqa);

#ifdef __cplusplus
}
#endif
#endif
