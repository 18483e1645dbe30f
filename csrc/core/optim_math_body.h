/* optim_math_body.h: the per-element optimizer updates for one compute type. Included by
 * optim_math.h once with AMPC_OT = float (names *_f32) and once with double (*_f64); no include
 * guard on purpose.
 *
 * Each function applies one step to one element: `g` is the (already unscaled) gradient, `p` the
 * parameter (or its fp32 master copy) and the state pointers that element's optimizer state. The
 * comment beside each line is the PyTorch tensor op it mirrors; ATen evaluates `self + value * t1
 * * t2` (addcmul) and `self + value * t1 / t2` (addcdiv) left to right, and so does this code. */

/* torch.lerp: the form depends on the weight, for accuracy near both ends. */
AMPC_HD AMPC_OT AMPC_OFN(ampc_optim_lerp)(AMPC_OT self, AMPC_OT end, AMPC_OT w) {
    return (w < (AMPC_OT)0.5 && w > (AMPC_OT)-0.5) ? self + w * (end - self) : end - (end - self) * ((AMPC_OT)1 - w);
}

/* torch.maximum: NaN wins. */
AMPC_HD AMPC_OT AMPC_OFN(ampc_optim_max)(AMPC_OT a, AMPC_OT b) {
    return (a != a || a > b) ? a : b;
}

AMPC_HD void AMPC_OFN(ampc_sgd_update)(AMPC_OT *p, AMPC_OT g, AMPC_OT *buf, const ampc_sgd_coeffs *c) {
    if (c->maximize) g = -g;
    if (c->weight_decay != 0.0) g = g + (AMPC_OT)c->weight_decay * *p;        /* grad.add(param, alpha=wd) */
    if (c->use_momentum) {
        AMPC_OT b = c->first ? g                                                /* buf = grad.clone() */
                             : *buf * (AMPC_OT)c->momentum + (AMPC_OT)c->one_minus_dampening * g;
        *buf = b;                                                               /* buf.mul_(m).add_(g, alpha=1-d) */
        g = c->nesterov ? g + (AMPC_OT)c->momentum * b : b;                     /* grad.add(buf, alpha=m) */
    }
    *p = *p + (AMPC_OT)c->neg_lr * g;                                           /* param.add_(g, alpha=-lr) */
}

AMPC_HD void AMPC_OFN(ampc_adam_update)(AMPC_OT *p, AMPC_OT g, AMPC_OT *exp_avg, AMPC_OT *exp_avg_sq,
                                        AMPC_OT *max_exp_avg_sq, const ampc_adam_coeffs *c) {
    AMPC_OT param = *p;
    if (c->maximize) g = -g;
    if (c->weight_decay != 0.0) {
        if (c->decoupled)
            param = param * (AMPC_OT)c->decay;                                  /* param.mul_(1 - lr * wd) */
        else
            g = g + (AMPC_OT)c->weight_decay * param;                           /* grad.add(param, alpha=wd) */
    }
    AMPC_OT m = AMPC_OFN(ampc_optim_lerp)(*exp_avg, g, (AMPC_OT)c->one_minus_beta1); /* exp_avg.lerp_(g, 1-b1) */
    AMPC_OT v = *exp_avg_sq * (AMPC_OT)c->beta2 + (AMPC_OT)c->one_minus_beta2 * g * g; /* mul_(b2).addcmul_ */
    *exp_avg = m;
    *exp_avg_sq = v;
    if (c->amsgrad) {
        v = AMPC_OFN(ampc_optim_max)(*max_exp_avg_sq, v);                       /* torch.maximum(max, v, out=max) */
        *max_exp_avg_sq = v;
    }
    AMPC_OT denom = AMPC_OSQRT(v) / (AMPC_OT)c->bc2_sqrt + (AMPC_OT)c->eps;     /* (v.sqrt() / bc2_sqrt).add_(eps) */
    *p = param + (AMPC_OT)c->neg_step_size * m / denom;                         /* addcdiv_(m, denom, value=-step_size) */
}

AMPC_HD void AMPC_OFN(ampc_adadelta_update)(AMPC_OT *p, AMPC_OT g, AMPC_OT *square_avg, AMPC_OT *acc_delta,
                                            const ampc_adadelta_coeffs *c) {
    if (c->maximize) g = -g;
    if (c->weight_decay != 0.0) g = g + (AMPC_OT)c->weight_decay * *p;
    AMPC_OT sq = *square_avg * (AMPC_OT)c->rho + (AMPC_OT)c->one_minus_rho * g * g; /* mul_(rho).addcmul_ */
    AMPC_OT std = AMPC_OSQRT(sq + (AMPC_OT)c->eps);                             /* square_avg.add(eps).sqrt_() */
    AMPC_OT delta = AMPC_OSQRT(*acc_delta + (AMPC_OT)c->eps);                   /* acc_delta.add(eps).sqrt_() */
    delta = delta / std * g;                                                    /* delta.div_(std).mul_(grad) */
    *square_avg = sq;
    *acc_delta = *acc_delta * (AMPC_OT)c->rho + (AMPC_OT)c->one_minus_rho * delta * delta;
    *p = *p + (AMPC_OT)c->neg_lr * delta;                                       /* param.add_(delta, alpha=-lr) */
}

AMPC_HD void AMPC_OFN(ampc_rmsprop_update)(AMPC_OT *p, AMPC_OT g, AMPC_OT *square_avg, AMPC_OT *momentum_buffer,
                                           AMPC_OT *grad_avg, const ampc_rmsprop_coeffs *c) {
    if (c->maximize) g = -g;
    if (c->weight_decay != 0.0) g = g + (AMPC_OT)c->weight_decay * *p;
    AMPC_OT sq = *square_avg * (AMPC_OT)c->alpha + (AMPC_OT)c->one_minus_alpha * g * g; /* mul_(a).addcmul_ */
    *square_avg = sq;
    AMPC_OT avg;
    if (c->centered) {
        AMPC_OT ga = AMPC_OFN(ampc_optim_lerp)(*grad_avg, g, (AMPC_OT)c->one_minus_alpha); /* grad_avg.lerp_ */
        *grad_avg = ga;
        avg = AMPC_OSQRT(sq + (AMPC_OT)-1 * ga * ga);                           /* addcmul(ga, ga, value=-1).sqrt_() */
    } else {
        avg = AMPC_OSQRT(sq);
    }
    avg = avg + (AMPC_OT)c->eps;
    if (c->momentum > 0.0) {
        AMPC_OT b = *momentum_buffer * (AMPC_OT)c->momentum + (AMPC_OT)1 * g / avg; /* mul_(m).addcdiv_(g, avg) */
        *momentum_buffer = b;
        *p = *p + (AMPC_OT)c->neg_lr * b;                                       /* param.add_(buf, alpha=-lr) */
    } else {
        *p = *p + (AMPC_OT)c->neg_lr * g / avg;                                 /* addcdiv_(g, avg, value=-lr) */
    }
}

AMPC_HD void AMPC_OFN(ampc_adagrad_update)(AMPC_OT *p, AMPC_OT g, AMPC_OT *sum, const ampc_adagrad_coeffs *c) {
    if (c->maximize) g = -g;
    if (c->weight_decay != 0.0) g = g + (AMPC_OT)c->weight_decay * *p;
    AMPC_OT s = *sum + (AMPC_OT)1 * g * g;                                      /* state_sum.addcmul_(g, g, value=1) */
    *sum = s;
    AMPC_OT std = AMPC_OSQRT(s) + (AMPC_OT)c->eps;                              /* state_sum.sqrt().add_(eps) */
    *p = *p + (AMPC_OT)c->neg_clr * g / std;                                    /* addcdiv_(g, std, value=-clr) */
}
