/* optim.h: the fused optimizer steps of ampc.optim (SGD, Adam/AdamW, Adadelta, RMSprop, Adagrad).
 *
 * Each function updates a list of parameters of one device and one dtype in ONE kernel call, with
 * PyTorch's update rules (core/optim_math.h holds them, shared by the CPU and CUDA kernels).
 * Everything a step reads or writes lives on the device, so the GradScaler can drive a step without
 * a host synchronisation:
 *   found_inf   (optional, 1-element float32): when != 0 the kernel leaves params, grads, state and
 *               step counters untouched (the skipped step of GradScaler.step, decided on the device);
 *   grad_scale  (optional, 1-element float32): grads are divided by it first and the unscaled grad
 *               is written back, as PyTorch's fused kernels do;
 *   steps       per-parameter 0-dim float32 step counters, incremented by the kernel (never on a
 *               skipped step), from which Adam's bias corrections and Adagrad's lr decay are
 *               computed on the device.
 * fp16/bf16 parameters may carry fp32 master weights: the kernel updates the master copy and writes
 * its rounded value back to the parameter; the optimizer state is then fp32. Without master weights
 * the state has the parameter's dtype and the math runs in fp32 with one rounding per store. */
#ifndef AMPC_OPTIM_H
#define AMPC_OPTIM_H

#include <stdbool.h>

#include "dispatch.h" /* ampc_op, for ampc_optim_scalar_state */
#include "half.h"     /* AMPC_HD */
#include "tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Hyperparameters, PyTorch's names and meanings. */
typedef struct ampc_sgd_options {
    double lr, momentum, dampening, weight_decay;
    bool nesterov, maximize;
} ampc_sgd_options;

typedef struct ampc_adam_options {
    double lr, beta1, beta2, eps, weight_decay;
    bool amsgrad, maximize;
    bool decoupled_weight_decay; /* AdamW: p *= 1 - lr * weight_decay instead of g += weight_decay * p */
} ampc_adam_options;

typedef struct ampc_adadelta_options {
    double lr, rho, eps, weight_decay;
    bool maximize;
} ampc_adadelta_options;

typedef struct ampc_rmsprop_options {
    double lr, alpha, eps, weight_decay, momentum;
    bool centered, maximize;
} ampc_rmsprop_options;

typedef struct ampc_adagrad_options {
    double lr, lr_decay, weight_decay, eps;
    bool maximize;
} ampc_adagrad_options;

typedef struct ampc_nadam_options {
    double lr, beta1, beta2, eps, weight_decay, momentum_decay;
    bool maximize, decoupled_weight_decay;
} ampc_nadam_options;

typedef struct ampc_radam_options {
    double lr, beta1, beta2, eps, weight_decay;
    bool maximize, decoupled_weight_decay;
} ampc_radam_options;

typedef struct ampc_adamax_options {
    double lr, beta1, beta2, eps, weight_decay;
    bool maximize;
} ampc_adamax_options;

typedef struct ampc_asgd_options {
    double lr, lambd, alpha, t0, weight_decay;
    bool maximize;
} ampc_asgd_options;

typedef struct ampc_rprop_options {
    double etaminus, etaplus, step_size_min, step_size_max;
    bool maximize;
} ampc_rprop_options;

/* The tensors of one fused step: n parameters on one device with one dtype (float32, float64,
 * float16 or bfloat16). Every array has n entries; an optional array may be NULL as a whole.
 * Per parameter, grads, masters and state buffers have the parameter's shape. */
typedef struct ampc_optim_tensors {
    int n;
    ampc_tensor *const *params;  /* updated in place */
    ampc_tensor *const *grads;   /* the params' dtype; unscaled in place when grad_scale is given */
    ampc_tensor *const *masters; /* NULL, or fp32 master weights of fp16/bf16 params */
    ampc_tensor *const *steps;   /* 0-dim float32 counters (SGD: momentum updates taken; NULL without momentum) */
    ampc_tensor *const *state[3]; /* the algorithm's buffers, listed with each function below */
    const ampc_tensor *grad_scale; /* NULL or 1-element float32 */
    const ampc_tensor *found_inf;  /* NULL or 1-element float32 */
} ampc_optim_tensors;

/* state[0] momentum_buffer (when momentum != 0; a counter of 0 means "first step": the buffer is
 * set to the grad, as PyTorch's lazily created buffer). */
ampc_status ampc_fused_sgd_(const ampc_optim_tensors *t, const ampc_sgd_options *o);
/* state[0] exp_avg, state[1] exp_avg_sq, state[2] max_exp_avg_sq (amsgrad only). */
ampc_status ampc_fused_adam_(const ampc_optim_tensors *t, const ampc_adam_options *o);
/* state[0] square_avg, state[1] acc_delta. */
ampc_status ampc_fused_adadelta_(const ampc_optim_tensors *t, const ampc_adadelta_options *o);
/* state[0] square_avg, state[1] momentum_buffer (momentum > 0), state[2] grad_avg (centered). */
ampc_status ampc_fused_rmsprop_(const ampc_optim_tensors *t, const ampc_rmsprop_options *o);
/* state[0] sum. */
ampc_status ampc_fused_adagrad_(const ampc_optim_tensors *t, const ampc_adagrad_options *o);
/* Some states are per-parameter scalars (0-dim float32, like the step counters): the kernel reads
 * them into the coefficients and advances them with the counter (ampc_optim_scalar_state). */
/* state[0] exp_avg, state[1] exp_avg_sq, state[2] mu_product (scalar). */
ampc_status ampc_fused_nadam_(const ampc_optim_tensors *t, const ampc_nadam_options *o);
/* state[0] exp_avg, state[1] exp_avg_sq. */
ampc_status ampc_fused_radam_(const ampc_optim_tensors *t, const ampc_radam_options *o);
/* state[0] exp_avg, state[1] exp_inf. */
ampc_status ampc_fused_adamax_(const ampc_optim_tensors *t, const ampc_adamax_options *o);
/* state[0] ax, state[1] eta (scalar), state[2] mu (scalar). */
ampc_status ampc_fused_asgd_(const ampc_optim_tensors *t, const ampc_asgd_options *o);
/* state[0] prev, state[1] step_size. */
ampc_status ampc_fused_rprop_(const ampc_optim_tensors *t, const ampc_rprop_options *o);

/* Whether state slot j (0..2) of `op` holds a per-parameter 0-dim float32 scalar (host and device). */
AMPC_HD bool ampc_optim_scalar_state(ampc_op op, int j) {
    return (op == AMPC_OP_FUSED_NADAM && j == 2) || (op == AMPC_OP_FUSED_ASGD && j >= 1);
}

/* Kernel layout (ops.def, FUSED_* rows, schema fused_optim): slots holds AMPC_OPTIM_SLOTS
 * (slots_per_param) tensors per parameter in this order, NULL for an unused slot; grad_scale and
 * found_inf may be NULL; param0 is the first param (it picks the device); the op's options ride in
 * their own field (sgd, adam, ...). Every tensor in the list is contiguous. */
enum {
    AMPC_OPTIM_SLOT_PARAM,
    AMPC_OPTIM_SLOT_GRAD,
    AMPC_OPTIM_SLOT_MASTER,
    AMPC_OPTIM_SLOT_STEP,
    AMPC_OPTIM_SLOT_STATE0,
    AMPC_OPTIM_SLOT_STATE1,
    AMPC_OPTIM_SLOT_STATE2,
    AMPC_OPTIM_SLOTS
};

#ifdef __cplusplus
}
#endif
#endif
