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

AMPC_HD void AMPC_OFN(ampc_nadam_update)(AMPC_OT *p, AMPC_OT g, AMPC_OT *exp_avg, AMPC_OT *exp_avg_sq,
                                         const ampc_nadam_coeffs *c) {
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
    AMPC_OT denom = AMPC_OSQRT(v / (AMPC_OT)c->bc2) + (AMPC_OT)c->eps;         /* v.div(bc2).sqrt().add_(eps) */
    param = param + (AMPC_OT)c->grad_coef * g / denom;                          /* addcdiv_(grad, denom, value) */
    *p = param + (AMPC_OT)c->avg_coef * m / denom;                              /* addcdiv_(exp_avg, denom, value) */
}

AMPC_HD void AMPC_OFN(ampc_radam_update)(AMPC_OT *p, AMPC_OT g, AMPC_OT *exp_avg, AMPC_OT *exp_avg_sq,
                                         const ampc_radam_coeffs *c) {
    AMPC_OT param = *p;
    if (c->maximize) g = -g;
    if (c->weight_decay != 0.0) {
        if (c->decoupled)
            param = param * (AMPC_OT)c->decay;
        else
            g = g + (AMPC_OT)c->weight_decay * param;
    }
    AMPC_OT m = AMPC_OFN(ampc_optim_lerp)(*exp_avg, g, (AMPC_OT)c->one_minus_beta1);
    AMPC_OT v = *exp_avg_sq * (AMPC_OT)c->beta2 + (AMPC_OT)c->one_minus_beta2 * g * g;
    *exp_avg = m;
    *exp_avg_sq = v;
    AMPC_OT upd = m / (AMPC_OT)c->bc1 * (AMPC_OT)c->lr;                         /* exp_avg / bc1 * lr */
    if (c->rectified) {
        AMPC_OT adaptive = (AMPC_OT)1 / (AMPC_OSQRT(v) + (AMPC_OT)c->eps) * (AMPC_OT)c->bc2_sqrt; /* bc2**0.5 / (sqrt+eps) */
        upd = upd * adaptive * (AMPC_OT)c->rect;                                /* * adaptive_lr * rect */
    }
    *p = param + (AMPC_OT)-1 * upd;                                             /* param.add_(upd, alpha=-1) */
}

AMPC_HD void AMPC_OFN(ampc_adamax_update)(AMPC_OT *p, AMPC_OT g, AMPC_OT *exp_avg, AMPC_OT *exp_inf,
                                          const ampc_adamax_coeffs *c) {
    if (c->maximize) g = -g;
    if (c->weight_decay != 0.0) g = g + (AMPC_OT)c->weight_decay * *p;
    AMPC_OT m = AMPC_OFN(ampc_optim_lerp)(*exp_avg, g, (AMPC_OT)c->one_minus_beta1);
    AMPC_OT ag = g < (AMPC_OT)0 ? -g : g;                                       /* grad.abs() */
    AMPC_OT u = AMPC_OFN(ampc_optim_max)(*exp_inf * (AMPC_OT)c->beta2, ag + (AMPC_OT)c->eps); /* maximum(.., out) */
    *exp_avg = m;
    *exp_inf = u;
    *p = *p + (AMPC_OT)c->neg_clr * m / u;                                      /* addcdiv_(exp_avg, exp_inf, -clr) */
}

AMPC_HD void AMPC_OFN(ampc_asgd_update)(AMPC_OT *p, AMPC_OT g, AMPC_OT *ax, const ampc_asgd_coeffs *c) {
    if (c->maximize) g = -g;
    if (c->weight_decay != 0.0) g = g + (AMPC_OT)c->weight_decay * *p;
    AMPC_OT param = *p * (AMPC_OT)c->decay;                                     /* param.mul_(1 - lambd * eta) */
    param = param + (AMPC_OT)c->neg_eta * g;                                    /* param.add_(grad, alpha=-eta) */
    *p = param;
    if (c->ax_copy)
        *ax = param;                                                            /* ax.copy_(param) */
    else
        *ax = *ax + (param - *ax) * (AMPC_OT)c->mu;                             /* ax.add_(param.sub(ax).mul_(mu)) */
}

/* torch.sign: NaN gives 0. */
AMPC_HD AMPC_OT AMPC_OFN(ampc_optim_sign)(AMPC_OT x) {
    return (AMPC_OT)((x > (AMPC_OT)0) - (x < (AMPC_OT)0));
}

AMPC_HD void AMPC_OFN(ampc_rprop_update)(AMPC_OT *p, AMPC_OT g, AMPC_OT *prev, AMPC_OT *step_size,
                                         const ampc_rprop_coeffs *c) {
    if (c->maximize) g = -g;
    AMPC_OT s = AMPC_OFN(ampc_optim_sign)(g * *prev);                           /* grad.mul(prev).sign() */
    AMPC_OT etaminus = (AMPC_OT)c->etaminus;
    AMPC_OT f = s > (AMPC_OT)0 ? (AMPC_OT)c->etaplus : s < (AMPC_OT)0 ? etaminus : (AMPC_OT)1;
    AMPC_OT ss = *step_size * f;                                                /* step_size.mul_(sign) */
    AMPC_OT lo = (AMPC_OT)c->step_size_min, hi = (AMPC_OT)c->step_size_max;
    ss = ss != ss ? ss : (ss < lo ? lo : ss);                                   /* .clamp_(min, max) */
    ss = ss != ss ? ss : (ss > hi ? hi : ss);
    *step_size = ss;
    if (f == etaminus) g = (AMPC_OT)0;                                          /* grad[sign.eq(etaminus)] = 0 */
    *p = *p + (AMPC_OT)-1 * AMPC_OFN(ampc_optim_sign)(g) * ss;                  /* addcmul_(grad.sign(), ss, -1) */
    *prev = g;                                                                  /* prev.copy_(grad) */
}
