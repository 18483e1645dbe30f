/* nn_loss_ops.h: the frontends of issue 13's loss family beyond nn_ops.h's: ctc_loss
 * (nn_loss_ctc.c) and pdist (nn_pdist.c). Same conventions as nn_ops.h. */
#ifndef AMPC_NN_LOSS_OPS_H
#define AMPC_NN_LOSS_OPS_H

#include "ops.h"

#ifdef __cplusplus
extern "C" {
#endif

/* log_probs (T, N, C) float32/float64, targets (N, S) padded or 1-d concatenated, host lengths
 * (n_* of them, N each) -> the per-sample negative log-likelihood (N); *log_alpha_out (optional)
 * gets the (N, T, 2 max_target + 1) lattice. zero_infinity: the gradient of an infinite loss is 0
 * (the caller zeroes the value). */
ampc_tensor *ampc_ctc_loss(const ampc_tensor *log_probs, const ampc_tensor *targets, const int64_t *input_lengths,
                           int64_t n_input_lengths, const int64_t *target_lengths, int64_t n_target_lengths,
                           int64_t blank, bool zero_infinity, ampc_tensor **log_alpha_out);
/* the gradient rule's work: every tensor as the forward saved it (lengths and offsets on the device) */
ampc_tensor *ampc_ctc_loss_backward(const ampc_tensor *grad_nll, const ampc_tensor *log_probs,
                                    const ampc_tensor *targets, const ampc_tensor *input_lengths,
                                    const ampc_tensor *target_lengths, const ampc_tensor *target_offsets,
                                    const ampc_tensor *nll, const ampc_tensor *log_alpha, int64_t blank,
                                    bool zero_infinity);

/* input (N, M) float32/float64, p >= 0 (inf allowed) -> the N (N - 1) / 2 row-pair distances */
ampc_tensor *ampc_pdist(const ampc_tensor *input, double p);
/* grad and dist of the N (N - 1) / 2 pairs -> grad_input (N, M) */
ampc_tensor *ampc_pdist_backward(const ampc_tensor *grad, const ampc_tensor *input, const ampc_tensor *dist, double p);

#ifdef __cplusplus
}
#endif

#endif
