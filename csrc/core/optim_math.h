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

typedef struct ampc_nadam_coeffs {
    double one_minus_beta1, beta2, one_minus_beta2, eps, weight_decay;
    double decay;      /* decoupled weight decay: 1 - lr * weight_decay */
    double bc2;        /* 1 - beta2^t */
    double grad_coef;  /* -lr * (1 - mu) / (1 - mu_product) */
    double avg_coef;   /* -lr * mu_next / (1 - mu_product * mu_next) */
    bool maximize, decoupled;
} ampc_nadam_coeffs;

typedef struct ampc_radam_coeffs {
    double one_minus_beta1, beta2, one_minus_beta2, eps, weight_decay, decay, lr;
    double bc1, bc2_sqrt, rect; /* rect: the variance rectification, used when rectified */
    bool rectified;             /* rho_t > 5 */
    bool maximize, decoupled;
} ampc_radam_coeffs;

typedef struct ampc_adamax_coeffs {
    double one_minus_beta1, beta2, eps, weight_decay, neg_clr;
    bool maximize;
} ampc_adamax_coeffs;

typedef struct ampc_asgd_coeffs {
    double decay, neg_eta, weight_decay; /* decay: 1 - lambd * eta */
    float mu;
    bool ax_copy; /* mu == 1: ax takes the param (torch's `mu.item() != 1` test) */
    bool maximize;
} ampc_asgd_coeffs;

typedef struct ampc_rprop_coeffs {
    double etaminus, etaplus, step_size_min, step_size_max;
    bool maximize;
} ampc_rprop_coeffs;

/* NAdam's mu at step t (torch: beta1 * (1 - 0.5 * 0.96 ** (t * momentum_decay))). */
AMPC_HD double ampc_nadam_mu(const ampc_nadam_options *o, double t) {
    return o->beta1 * (1.0 - 0.5 * pow(0.96, t * o->momentum_decay));
}

/* The float32 mu_product after step t: `mu_product *= mu` on a float32 tensor. */
AMPC_HD float ampc_nadam_mu_product_after(const ampc_nadam_options *o, float mu_product_before, double step) {
    return mu_product_before * (float)ampc_nadam_mu(o, step);
}

/* `step`: the counter after this step's increment; `mu_product`: after this step's update. */
AMPC_HD ampc_nadam_coeffs ampc_nadam_coeffs_for(const ampc_nadam_options *o, double step, float mu_product) {
    ampc_nadam_coeffs c;
    double mu = ampc_nadam_mu(o, step), mu_next = ampc_nadam_mu(o, step + 1.0);
    double mp = (double)mu_product;
    c.one_minus_beta1 = 1.0 - o->beta1;
    c.beta2 = o->beta2;
    c.one_minus_beta2 = 1.0 - o->beta2;
    c.eps = o->eps;
    c.weight_decay = o->weight_decay;
    c.decay = 1.0 - o->lr * o->weight_decay;
    c.bc2 = 1.0 - pow(o->beta2, step);
    c.grad_coef = -o->lr * (1.0 - mu) / (1.0 - mp);
    c.avg_coef = (-o->lr * mu_next) / (1.0 - mp * mu_next);
    c.maximize = o->maximize;
    c.decoupled = o->decoupled_weight_decay;
    return c;
}

/* `step`: the counter after this step's increment. */
AMPC_HD ampc_radam_coeffs ampc_radam_coeffs_for(const ampc_radam_options *o, double step) {
    ampc_radam_coeffs c;
    double bc2 = 1.0 - pow(o->beta2, step);
    double rho_inf = 2.0 / (1.0 - o->beta2) - 1.0;
    double rho_t = rho_inf - 2.0 * step * pow(o->beta2, step) / bc2;
    c.one_minus_beta1 = 1.0 - o->beta1;
    c.beta2 = o->beta2;
    c.one_minus_beta2 = 1.0 - o->beta2;
    c.eps = o->eps;
    c.weight_decay = o->weight_decay;
    c.decay = 1.0 - o->lr * o->weight_decay;
    c.lr = o->lr;
    c.bc1 = 1.0 - pow(o->beta1, step);
    c.bc2_sqrt = pow(bc2, 0.5);
    c.rectified = rho_t > 5.0;
    c.rect = c.rectified ? pow((rho_t - 4) * (rho_t - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho_t), 0.5) : 1.0;
    c.maximize = o->maximize;
    c.decoupled = o->decoupled_weight_decay;
    return c;
}

/* `step`: the counter after this step's increment. */
AMPC_HD ampc_adamax_coeffs ampc_adamax_coeffs_for(const ampc_adamax_options *o, double step) {
    ampc_adamax_coeffs c;
    c.one_minus_beta1 = 1.0 - o->beta1;
    c.beta2 = o->beta2;
    c.eps = o->eps;
    c.weight_decay = o->weight_decay;
    c.neg_clr = -(o->lr / (1.0 - pow(o->beta1, step)));
    c.maximize = o->maximize;
    return c;
}

/* eta and mu: the parameter's float32 scalars before this step. */
AMPC_HD ampc_asgd_coeffs ampc_asgd_coeffs_for(const ampc_asgd_options *o, float eta, float mu) {
    ampc_asgd_coeffs c;
    c.decay = 1.0 - o->lambd * (double)eta;
    c.neg_eta = -(double)eta;
    c.weight_decay = o->weight_decay;
    c.mu = mu;
    c.ax_copy = mu == 1.0f;
    c.maximize = o->maximize;
    return c;
}

/* ASGD's eta and mu after step `step` (torch computes them in Python floats, stores float32). */
AMPC_HD float ampc_asgd_eta_after(const ampc_asgd_options *o, double step) {
    return (float)(o->lr / pow(1.0 + o->lambd * o->lr * step, o->alpha));
}
AMPC_HD float ampc_asgd_mu_after(const ampc_asgd_options *o, double step) {
    double d = step - o->t0;
    return (float)(1.0 / (d > 1.0 ? d : 1.0));
}

AMPC_HD ampc_rprop_coeffs ampc_rprop_coeffs_for(const ampc_rprop_options *o) {
    ampc_rprop_coeffs c;
    c.etaminus = o->etaminus;
    c.etaplus = o->etaplus;
    c.step_size_min = o->step_size_min;
    c.step_size_max = o->step_size_max;
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
