/* derivatives_act_backward.c: the gradients of the fused activation-backward rows (issue 14), so
 * that double backward (create_graph=True, gradient penalties, Hessian-vector products) works
 * through gelu_backward, silu_backward, sigmoid_backward, tanh_backward and softplus_backward.
 *
 * Each row is r = g * f'(x) (for sigmoid and tanh: r = g * h(y) with y the forward's output):
 *   dr/dg = f'(x): the row itself applied to the new upstream grad gg (one fused kernel);
 *   dr/dx = gg * g * f''(x), composed with the ad_* helpers (differentiable again), in fp32 for
 *           fp16/bf16 inputs as torch's opmath (x^2 overflows fp16 from |x| ~ 256).
 * The second derivatives, with s = sigmoid, t = tanh, phi the normal pdf:
 *   gelu (erf)   phi(x) (2 - x^2)
 *   gelu (tanh)  (1 - t^2) (u' - x t u'^2 + x u''/2),  u = b (x + k x^3), u' = b (1 + 3 k x^2), u'' = 6 b k x
 *   silu         s (1 - s) (2 + x (1 - 2 s))
 *   sigmoid      d/dy [y (1 - y)] = 1 - 2 y
 *   tanh         d/dy [1 - y^2] = -2 y
 *   softplus     beta s(beta x) (1 - s(beta x)) where beta x <= threshold, else 0 */
#include "derivatives.h"

#define GELU_B 0.79788456080286535588 /* sqrt(2/pi) */
#define GELU_K 0.044715
#define INV_SQRT_2PI 0.39894228040143267794

/* f''(x) (or the y-derivative) of row op; x is borrowed. */
static ampc_tensor *second_derivative(ampc_op op, ampc_tensor *x, ampc_scalar p0, ampc_scalar p1) {
    switch (op) {
    case AMPC_OP_SIGMOID_BACKWARD:
        return ad_rsubs(1.0, ad_scale(ad_ref(x), 2.0));
    case AMPC_OP_TANH_BACKWARD:
        return ad_scale(ad_ref(x), -2.0);
    case AMPC_OP_SILU_BACKWARD: {
        ampc_tensor *s = ad_un(AMPC_OP_SIGMOID, ad_ref(x));
        ampc_tensor *ds = ad_mul(ad_ref(s), ad_rsubs(1.0, ad_ref(s)));
        ampc_tensor *inner = ad_adds(ad_mul(ad_ref(x), ad_rsubs(1.0, ad_scale(s, 2.0))), 2.0);
        return ad_mul(ds, inner);
    }
    case AMPC_OP_GELU_BACKWARD: {
        if (ampc_scalar_to_double(p0) == 0.0) {
            ampc_tensor *pdf = ad_scale(ad_un(AMPC_OP_EXP, ad_scale(ad_mul(ad_ref(x), ad_ref(x)), -0.5)), INV_SQRT_2PI);
            return ad_mul(pdf, ad_rsubs(2.0, ad_mul(ad_ref(x), ad_ref(x))));
        }
        ampc_tensor *x2 = ad_mul(ad_ref(x), ad_ref(x));
        ampc_tensor *u = ad_scale(ad_mul(ad_ref(x), ad_adds(ad_scale(ad_ref(x2), GELU_K), 1.0)), GELU_B);
        ampc_tensor *t = ad_un(AMPC_OP_TANH, u);
        ampc_tensor *du = ad_scale(ad_adds(ad_scale(ad_ref(x2), 3.0 * GELU_K), 1.0), GELU_B);
        ampc_tensor *sech2 = ad_rsubs(1.0, ad_mul(ad_ref(t), ad_ref(t)));
        ampc_tensor *curve = ad_mul(ad_mul(ad_ref(x), t), ad_mul(ad_ref(du), ad_ref(du)));
        ampc_tensor *term = ad_add(ad_sub(du, curve), ad_scale(x2, 3.0 * GELU_B * GELU_K));
        return ad_mul(sech2, term);
    }
    case AMPC_OP_SOFTPLUS_BACKWARD: {
        double beta = ampc_scalar_to_double(p0), threshold = ampc_scalar_to_double(p1);
        ampc_tensor *bx = ad_scale(ad_ref(x), beta);
        ampc_tensor *linear = ad_cmps(AMPC_OP_GT, ad_ref(bx), threshold);
        ampc_tensor *s = ad_un(AMPC_OP_SIGMOID, bx);
        ampc_tensor *one_minus = ad_rsubs(1.0, ad_ref(s)); /* its own statement: argument order is unspecified */
        ampc_tensor *d = ad_scale(ad_mul(s, one_minus), beta);
        return ad_where(linear, ad_num(0.0, d), d);
    }
    default:
        ampc_set_error(AMPC_E_NOT_IMPLEMENTED, "no second derivative for %s", ampc_op_name(op));
        return NULL;
    }
}

ampc_status ampc_ad_act_double_backward(ampc_node *n, ampc_tensor *const *go, ampc_tensor **gi,
                                        ampc_act_second_derivative d2_of) {
    ampc_op op = (ampc_op)n->attrs.ints[1];
    ampc_scalar p0 = n->attrs.scalars[0], p1 = n->attrs.scalars[1];
    ampc_tensor *x = ad_saved(n, 1);
    if (!x) return ampc_last_status();
    if (n->needs_input_grad[0]) gi[0] = ampc_elementwise_params(op, go[0], x, p0, p1);
    if (n->needs_input_grad[1]) {
        ampc_tensor *g = ad_saved(n, 0);
        ampc_dtype dt = go[0]->dtype;
        bool lowp = dt == AMPC_FLOAT16 || dt == AMPC_BFLOAT16;
        ampc_tensor *xm = lowp ? ad_to(ad_ref(x), AMPC_FLOAT32) : ad_ref(x);
        ampc_tensor *gg = lowp ? ad_to(ad_ref(go[0]), AMPC_FLOAT32) : ad_ref(go[0]);
        ampc_tensor *gm = lowp ? ad_to(g, AMPC_FLOAT32) : g;
        ampc_tensor *d2 = xm ? d2_of(op, xm, p0, p1) : NULL;
        ampc_tensor_decref(xm);
        ampc_tensor *r = ad_mul(ad_mul(gg, gm), d2);
        gi[1] = lowp ? ad_to(r, dt) : r;
    }
    ampc_tensor_decref(x);
    return ad_done(n, gi);
}

/* Saved: slot 0 the grad g, slot 1 x (or y); attrs.ints[1] the row, scalars its parameters. */
static ampc_status act_backward_backward(ampc_node *n, ampc_tensor *const *go, ampc_tensor **gi) {
    return ampc_ad_act_double_backward(n, go, gi, second_derivative);
}

static const ampc_grad_rule gelu_rule = {"GeluBackwardBackward0", act_backward_backward},
                            silu_rule = {"SiluBackwardBackward0", act_backward_backward},
                            sigmoid_rule = {"SigmoidBackwardBackward0", act_backward_backward},
                            tanh_rule = {"TanhBackwardBackward0", act_backward_backward},
                            softplus_rule = {"SoftplusBackwardBackward0", act_backward_backward};

const ampc_grad_rule *ampc_ad_act_backward_rule(ampc_op op) {
    switch (op) {
    case AMPC_OP_GELU_BACKWARD: return &gelu_rule;
    case AMPC_OP_SILU_BACKWARD: return &silu_rule;
    case AMPC_OP_SIGMOID_BACKWARD: return &sigmoid_rule;
    case AMPC_OP_TANH_BACKWARD: return &tanh_rule;
    case AMPC_OP_SOFTPLUS_BACKWARD: return &softplus_rule;
    default: return ampc_ad_act_rule(op); /* issue 13's rows (derivatives_act.c) */
    }
}

ampc_status ampc_ad_record_act_backward(ampc_op op, const ampc_tensor *g, const ampc_tensor *x, const ampc_scalar *p,
                                        ampc_tensor *out) {
    if (!ampc_dtype_is_floating(out->dtype)) return AMPC_OK;
    ampc_node_attrs at = ad_op_attrs(op, p);
    const ampc_tensor *ins[2] = {g, x};
    const ampc_tensor *saved[2] = {g, x};
    return ampc_autograd_record(ampc_ad_act_backward_rule(op), 2, ins, 1, &out, 2, saved, &at) ? AMPC_OK
                                                                                                : ampc_last_status();
}
