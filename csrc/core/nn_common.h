/* nn_common.h: helpers shared by the nn frontends (nn_*.c), not part of the public API:
 * argument checks with PyTorch's wording, the dtype of saved statistics, contiguity of
 * optional tensors, and the GEMM call convolution and attention are built on. */
#ifndef AMPC_NN_COMMON_H
#define AMPC_NN_COMMON_H

#include <string.h>

#include "kernel_args.h"
#include "nn_ops.h"

/* Statistics (mean, rstd, lse, total weight) are float32, float64 for float64 inputs. */
static inline ampc_dtype nn_stats_dtype(ampc_dtype dt) { return dt == AMPC_FLOAT64 ? AMPC_FLOAT64 : AMPC_FLOAT32; }

/* "[2, 3]" of a tensor, into buf. */
const char *nn_shape(const ampc_tensor *t, char *buf, size_t cap);
/* PyTorch's legacy type name ("torch.FloatTensor", "torch.cuda.HalfTensor") for messages. */
const char *nn_type_name(const ampc_tensor *t, char *buf, size_t cap);

/* `op` needs a floating tensor for `what`. */
ampc_status nn_check_floating(const char *op, const ampc_tensor *t, const char *what);
/* All non-NULL tensors on one device (PyTorch's "Expected all tensors to be on the same device"). */
ampc_status nn_check_device(const char *op, int n, const ampc_tensor *const *ts);

/* *out = contiguous(t), or NULL when t is NULL. */
ampc_status nn_contig(const ampc_tensor *t, ampc_tensor **out);
/* Decrefs n tensors (NULLs allowed). */
void nn_release(int n, ampc_tensor **ts);
/* The end of a frontend: decrefs the n temporaries, then returns out when st is AMPC_OK, else
 * decrefs out too and returns NULL (the error stays set). */
static inline ampc_tensor *nn_finish(ampc_status st, ampc_tensor *out, int n, ampc_tensor **tmp) {
    nn_release(n, tmp);
    if (st == AMPC_OK) return out;
    ampc_tensor_decref(out);
    return NULL;
}

/* C = beta * bias + alpha * (a @ b) through the GEMM kernel: a (*batch, n, k), b (*batch, k, m)
 * with equal batch dims (stride 0 where broadcast), bias NULL or of C's shape (any strides).
 * Frontends in linalg.c do NumPy's rules for users; the nn ops know their layouts and call the
 * kernel directly, so their internals never show up as autograd nodes. C is fresh and
 * contiguous, in a's dtype. */
ampc_tensor *nn_gemm(const ampc_tensor *a, const ampc_tensor *b, const ampc_tensor *bias, double beta,
                     double alpha);
/* The same into a given contiguous C of the result's shape (a slice of a larger output). */
ampc_status nn_gemm_into(ampc_tensor *c, const ampc_tensor *a, const ampc_tensor *b, const ampc_tensor *bias,
                         double beta, double alpha);

/* A view of contiguous t with a new shape (no checks beyond numel). */
ampc_tensor *nn_reshape_view(const ampc_tensor *t, int ndim, const int64_t *shape);

/* SOFTMAX_BACKWARD or LOG_SOFTMAX_BACKWARD: grad x in input_dtype (UNDEFINED: y's), times
 * `scale` (attention folds its score scale in here). nn_softmax.c. */
ampc_tensor *nn_softmax_backward(ampc_op op, const ampc_tensor *grad_out, const ampc_tensor *output, int64_t dim,
                                 ampc_dtype input_dtype, double scale);

/* grad (of a broadcast shape) summed down to `shape` (PyTorch's sum_to_size). New reference. */
ampc_tensor *nn_sum_to(const ampc_tensor *grad, int ndim, const int64_t *shape);

/* The nn gradient rules run kernels, which record nothing. Under create_graph=True (grad mode on
 * while backward runs) their results would silently miss the second-order terms, so a rule
 * starts with this check and refuses instead. */
ampc_status nn_first_order_only(const struct ampc_node *node);
/* How an nn gradient rule starts: nn_first_order_only, then the node's saved tensors into
 * saved[0 .. n_saved), the rest of the cap slots NULL. */
ampc_status nn_rule_saved(struct ampc_node *node, int cap, const ampc_tensor **saved);

#endif
