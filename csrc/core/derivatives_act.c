/* derivatives_act.c: the gradients of issue 13's activation rows that are not linear in the input:
 * the fused backward rows elu_backward, celu_backward, hardswish_backward, log_sigmoid_backward
 * and mish_backward (double backward: gradient penalties, Hessian-vector products), and prelu's
 * two-input rule.
 *
 * A fused backward row is r = g * f'(x):
 *   dr/dg = f'(x): the row itself applied to the new upstream grad gg (one fused kernel);
 *   dr/dx = gg * g * f''(x), composed with the ad_* helpers (differentiable again), in fp32 for
 *           fp16/bf16 inputs as torch's opmath.
 * The second derivatives, with s = sigmoid(x), t = tanh(softplus(x)):
 *   elu (alpha a, scale c)     a c e^x where x <= 0, else 0
 *   celu (alpha a, inv = 1/float(a))  inv^2 a e^(x inv) where x <= 0, else 0 (torch's elu_double_backward)
 *   hardswish                  1/3 on (-3, 3), else 0
 *   log_sigmoid                -s (1 - s)
 *   mish                       (1 - t^2) s (2 + x (1 - s) - 2 x s t)
 * prelu(x, w) = x > 0 ? x : w x: d/dx = g where x > 0 else g w; d/dw = 0 where x > 0 else g x
 * (the engine sums the weight's grad over the dims it was broadcast along). */
#include "derivatives.h"

/* f''(x) of row op; x is borrowed. */
static ampc_tensor *second_derivative(ampc_op op, ampc_tensor *x, ampc_scalar p0, ampc_scalar p1) {
    switch (op) {
    case AMPC_OP_ELU_BACKWARD: {
        double coef = ampc_scalar_to_double(p0) * ampc_scalar_to_double(p1);
        ampc_tensor *d = ad_scale(ad_un(AMPC_OP_EXP, ad_ref(x)), coef);
        return ad_where(ad_cmps(AMPC_OP_LE, ad_ref(x), 0.0), d, ad_num(0.0, d));
    }
    case AMPC_OP_CELU_BACKWARD: {
        double alpha = ampc_scalar_to_double(p0), inv = 1.0 / (double)(float)alpha; /* as celu_backward */
        ampc_tensor *d = ad_scale(ad_un(AMPC_OP_EXP, ad_scale(ad_ref(x), inv)), inv * inv * alpha);
        return ad_where(ad_cmps(AMPC_OP_LE, ad_ref(x), 0.0), d, ad_num(0.0, d));
    }
    case AMPC_OP_HARDSWISH_BACKWARD: {
        ampc_tensor *above = ad_cmps(AMPC_OP_GT, ad_ref(x), -3.0);
        ampc_tensor *inside = ad_bin(AMPC_OP_LOGICAL_AND, above, ad_cmps(AMPC_OP_LT, ad_ref(x), 3.0));
        return ad_scale(ad_mask(inside, x->dtype), 1.0 / 3.0);
    }
    case AMPC_OP_LOG_SIGMOID_BACKWARD: {
        ampc_tensor *s = ad_un(AMPC_OP_SIGMOID, ad_ref(x));
        ampc_tensor *one_minus = ad_rsubs(1.0, ad_ref(s));
        return ad_scale(ad_mul(s, one_minus), -1.0);
    }
    case AMPC_OP_MISH_BACKWARD: {
        ampc_tensor *s = ad_un(AMPC_OP_SIGMOID, ad_ref(x));
        ampc_tensor *t = ad_un(AMPC_OP_TANH, ad_un(AMPC_OP_LOG1P, ad_un(AMPC_OP_EXP, ad_ref(x))));
        ampc_tensor *sech2 = ad_rsubs(1.0, ad_mul(ad_ref(t), ad_ref(t)));
        ampc_tensor *one_minus_s = ad_rsubs(1.0, ad_ref(s));
        ampc_tensor *two_st = ad_scale(ad_mul(ad_ref(s), t), 2.0);
        ampc_tensor *inner = ad_adds(ad_mul(ad_ref(x), ad_sub(one_minus_s, two_st)), 2.0);
        return ad_mul(ad_mul(sech2, s), inner);
    }
    default:
        ampc_set_error(AMPC_E_NOT_IMPLEMENTED, "no second derivative for %s", ampc_op_name(op));
        return NULL;
    }
}

/* Saved: slot 0 the grad g, slot 1 x; attrs.ints[1] the row, scalars its parameters. */
static ampc_status act_row_backward(ampc_node *n, ampc_tensor *const *go, ampc_tensor **gi) {
    return ampc_ad_act_double_backward(n, go, gi, second_derivative);
}

static const ampc_grad_rule elu_rule = {"EluBackwardBackward0", act_row_backward},
                            hardswish_rule = {"HardswishBackwardBackward0", act_row_backward},
                            log_sigmoid_rule = {"LogSigmoidBackwardBackward0", act_row_backward},
                            mish_rule = {"MishBackwardBackward0", act_row_backward};

const ampc_grad_rule *ampc_ad_act_rule(ampc_op op) {
    switch (op) {
    case AMPC_OP_ELU_BACKWARD: case AMPC_OP_CELU_BACKWARD: return &elu_rule;
    case AMPC_OP_HARDSWISH_BACKWARD: return &hardswish_rule;
    case AMPC_OP_LOG_SIGMOID_BACKWARD: return &log_sigmoid_rule;
    case AMPC_OP_MISH_BACKWARD: return &mish_rule;
    default: return NULL;
    }
}

/* prelu: slot 0 the input x, slot 1 the weight w (as broadcast by the caller's view) */
static ampc_status prelu_backward(ampc_node *n, ampc_tensor *const *go, ampc_tensor **gi) {
    ampc_tensor *x = ad_saved(n, 0);
    if (!x) return ampc_last_status();
    ampc_tensor *positive = ad_cmps(AMPC_OP_GT, ad_ref(x), 0.0);
    if (n->needs_input_grad[0]) {
        ampc_tensor *gw = ad_mul(ad_ref(go[0]), ad_saved(n, 1));
        gi[0] = ad_where(ad_ref(positive), ad_ref(go[0]), gw);
    }
    if (n->needs_input_grad[1]) {
        ampc_tensor *gx = ad_mul(ad_ref(go[0]), ad_ref(x));
        gi[1] = ad_where(ad_ref(positive), ad_num(0.0, gx), gx);
    }
    ampc_tensor_decref(positive);
    ampc_tensor_decref(x);
    return ad_done(n, gi);
}

static const ampc_grad_rule prelu_rule = {"PreluKernelBackward0", prelu_backward};

const ampc_grad_rule *ampc_ad_prelu_rule(void) { return &prelu_rule; }
