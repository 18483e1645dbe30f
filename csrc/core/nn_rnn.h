/* nn_rnn.h: the fused recurrent cells behind nn.LSTM, nn.GRU and their cells (nn_rnn.c), torch's
 * _thnn_fused_lstm_cell and _thnn_fused_gru_cell with their backward.
 *
 * Conventions of nn_ops.h: PyTorch's checks and messages, outputs on the inputs' device, new
 * references (NULL with the error set) or a status; optional tensors (the biases) are NULL. Under
 * autocast both cells run in the lower-precision dtype (torch's CUDA list). */
#ifndef AMPC_NN_RNN_H
#define AMPC_NN_RNN_H

#include "ops.h"

#ifdef __cplusplus
extern "C" {
#endif

/* input_gates, hidden_gates (B, 4H), cx (B, H), biases (4H) -> hy, cy (B, H) and the workspace
 * (B, 4H: the activated gates i, f, g, o) the backward reads. Records ThnnFusedLstmCellBackward0
 * on hy and cy when an input requires grad. */
ampc_status ampc_thnn_fused_lstm_cell(const ampc_tensor *input_gates, const ampc_tensor *hidden_gates,
                                      const ampc_tensor *cx, const ampc_tensor *input_bias,
                                      const ampc_tensor *hidden_bias, ampc_tensor **hy, ampc_tensor **cy,
                                      ampc_tensor **workspace);
/* grad_hy?, grad_cy? (NULL: zeros) -> *grad_gates (B, 4H), *grad_cx (B, H); *grad_bias (4H, the
 * gates' grads summed over the batch) when has_bias, else NULL. */
ampc_status ampc_thnn_fused_lstm_cell_backward(const ampc_tensor *grad_hy, const ampc_tensor *grad_cy,
                                               const ampc_tensor *cx, const ampc_tensor *cy,
                                               const ampc_tensor *workspace, bool has_bias,
                                               ampc_tensor **grad_gates, ampc_tensor **grad_cx,
                                               ampc_tensor **grad_bias);
/* input_gates, hidden_gates (B, 3H), hx (B, H), biases (3H) -> hy (B, H) and the workspace (B, 5H:
 * r, z, n, hidden n + its bias, hx). Records ThnnFusedGruCellBackward0 on hy. */
ampc_status ampc_thnn_fused_gru_cell(const ampc_tensor *input_gates, const ampc_tensor *hidden_gates,
                                     const ampc_tensor *hx, const ampc_tensor *input_bias,
                                     const ampc_tensor *hidden_bias, ampc_tensor **hy, ampc_tensor **workspace);
/* grad_hy (B, H) -> grads of the input and hidden gates (B, 3H) and of hx (B, H); the bias grads
 * (3H) when has_bias, else NULL. */
ampc_status ampc_thnn_fused_gru_cell_backward(const ampc_tensor *grad_hy, const ampc_tensor *workspace,
                                              bool has_bias, ampc_tensor **grad_input_gates,
                                              ampc_tensor **grad_hidden_gates, ampc_tensor **grad_hx,
                                              ampc_tensor **grad_input_bias, ampc_tensor **grad_hidden_bias);

#ifdef __cplusplus
}
#endif
#endif
