/* optim_math.h: the update rules of ampc's fused optimizers, shared by the CPU and CUDA kernels.
 *
 * Two levels, both AMPC_HD:
 *   ampc_<alg>_coeffs_for(options, step)   per parameter: the scalars of one step, computed in
 *                                          double from the device-side step counter (Adam's bias
 *                                          corrections, Adagrad's decayed lr), as PyTorch computes
 *                                          them in Python floats;
 *   ampc_<alg>_update_<f32|f64>(...)       per element: PyTorch's single-tensor update
 *                                          (torch/optim/<alg>.py, _single_tensor_<alg>), each tensor
 *                                          op written out in the same order and grouping, in the
 *                                          compute type (fp32 for fp32/fp16/bf16 params: PyTorch's
 *                                          opmath; fp64 for fp64), scalars cast to it as ATen casts
 *                                          a Python scalar. The element functions are in
 *                                          optim_math_body.h, included once per compute type.
 * Unscaling (g / grad_scale) and master-weight rounding are the kernel's job, around these. */
#ifndef AMPC_OPTIM_MATH_H
#define AMPC_OPTIM_MATH_H

#include <math.h>
#include <stdbool.h>

#include "half.h"
#include "optim.h"

typedef struct ampc_sgd_coeffs {
    double neg_lr, momentum, one_minus_dampening, weight_decay;
    bool use_momentum, first, nesterov, maximize;
} ampc_sgd_coeffs;

typedef struct ampc_adam_coeffs {
    double one_minus_beta1, beta2, one_minus_beta2, eps, weight_decay;
    double decay;         /* AdamW: 1 - lr * weight_decay */
    double neg_step_size; /* -lr / (1 - beta1^t) */
    double bc2_sqrt;      /* sqrt(1 - beta2^t) */
    bool amsgrad, maximize, decoupled;
} ampc_adam_coeffs;

typedef struct ampc_adadelta_coeffs {
    double neg_lr, rho, one_minus_rho, eps, weight_decay;
    bool maximize;
} ampc_adadelta_coeffs;

typedef struct ampc_rmsprop_coeffs {
    double neg_lr, alpha, one_minus_alpha, eps, weight_decay, momentum;
    bool centered, maximize;
} ampc_rmsprop_coeffs;

typedef struct ampc_adagrad_coeffs {
    double neg_clr, eps, weight_decay;
    bool maximize;
} ampc_adagrad_coeffs;

/* `momentum_steps`: momentum updates taken before this one (0: the buffer is created from g). */
AMPC_HD ampc_sgd_coeffs ampc_sgd_coeffs_for(const ampc_sgd_options *o, double momentum_steps) {
    ampc_sgd_coeffs c;
    c.neg_lr = -o->lr;
    c.momentum = o->momentum;
    c.one_minus_dampening = 1.0 - o->dampening;
    c.weight_decay = o->weight_decay;
    c.use_momentum = o->momentum != 0.0;
    c.first = momentum_steps == 0.0;
    c.nesterov = o->nesterov;
    c.maximize = o->maximize;
    return c;
}

/* `step`: the counter after this step's increment (1 on the first step). */
AMPC_HD ampc_adam_coeffs ampc_adam_coeffs_for(const ampc_adam_options *o, double step) {
    ampc_adam_coeffs c;
    double bc1 = 1.0 - pow(o->beta1, step);
    double bc2 = 1.0 - pow(o->beta2, step);
    c.one_minus_beta1 = 1.0 - o->beta1;
    c.beta2 = o->beta2;
    c.one_minus_beta2 = 1.0 - o->beta2;
    c.eps = o->eps;
    c.weight_decay = o->weight_decay;
    c.decay = 1.0 - o->lr * o->weight_decay;
    c.neg_step_size = -(o->lr / bc1);
    c.bc2_sqrt = sqrt(bc2);
    c.amsgrad = o->amsgrad;
    c.maximize = o->maximize;
    c.decoupled = o->decoupled_weight_decay;
    return c;
}

AMPC_HD ampc_adadelta_coeffs ampc_adadelta_coeffs_for(const ampc_adadelta_options *o) {
    ampc_adadelta_coeffs c;
    c.neg_lr = -o->lr;
    c.rho = o->rho;
    c.one_minus_rho = 1.0 - o->rho;
    c.eps = o->eps;
    c.weight_decay = o->weight_decay;
    c.maximize = o->maximize;
    return c;
}

AMPC_HD ampc_rmsprop_coeffs ampc_rmsprop_coeffs_for(const ampc_rmsprop_options *o) {
    ampc_rmsprop_coeffs c;
    c.neg_lr = -o->lr;
    c.alpha = o->alpha;
    c.one_minus_alpha = 1.0 - o->alpha;
    c.eps = o->eps;
    c.weight_decay = o->weight_decay;
    c.momentum = o->momentum;
    c.centered = o->centered;
    c.maximize = o->maximize;
    return c;
}

/* `step`: the counter after this step's increment. */
AMPC_HD ampc_adagrad_coeffs ampc_adagrad_coeffs_for(const ampc_adagrad_options *o, double step) {
    ampc_adagrad_coeffs c;
    c.neg_clr = -(o->lr / (1.0 + (step - 1.0) * o->lr_decay));
    c.eps = o->eps;
    c.weight_decay = o->weight_decay;
    c.maximize = o->maximize;
    return c;
}

#define AMPC_OT float
#define AMPC_OFN(name) name##_f32
#define AMPC_OSQRT sqrtf
#include "optim_math_body.h"
#undef AMPC_OT
#undef AMPC_OFN
#undef AMPC_OSQRT

#define AMPC_OT double
#define AMPC_OFN(name) name##_f64
#define AMPC_OSQRT sqrt
#include "optim_math_body.h"
#undef AMPC_OT
#undef AMPC_OFN
#undef AMPC_OSQRT

#endif
