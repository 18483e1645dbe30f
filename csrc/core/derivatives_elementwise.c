/* derivatives_elementwise.c: gradient rules of the elementwise ops (unary math, activations,
 * binary arithmetic, where, dtype casts) and the calls elementwise.c makes to record them.
 *
 * Each rule is one line of math per input, written with the ad_* helpers (derivatives.h) so
 * that it is differentiable itself. Rules return grads of the output's broadcast shape; the
 * engine sums them to each input's shape and casts them to its dtype.
 * Saved tensors: unary rules save the input or the output (whichever the formula needs: exp,
 * sqrt, sigmoid... use the output, so their in-place forms need no copy); binary rules save
 * a (slot 0), b (slot 1) and, for pow, the output (slot 2), each only when a grad needs it. */
#include <math.h>

#include "derivatives.h"

#define M_2_SQRTPI_ 1.12837916709551257390 /* 2/sqrt(pi) */

/* ------------------------------------------------------------------ unary */

/* Slot 0 of a unary node: the input or the output, see saves_output(). */
#define X(n) ad_saved(n, 0)
#define G ad_ref(go[0])

/* The SAVE column of the unary rows: which tensor slot 0 of the node holds. */
enum { SAVE_NONE, SAVE_SELF, SAVE_OUT };
static const unsigned char unary_saves[AMPC_NUM_OPS] = {
#define AMPC_EW_OP(id, name, kind, ac, grad, save, rule, tkernel, form, dtypes, stem, bind) [AMPC_OP_##id] = save,
#include "ops.def"
#undef AMPC_EW_OP
};
static bool saves_output(ampc_op op) { return unary_saves[op] == SAVE_OUT; }

/* GRAD_BY rows: the fused backward op (plus one; 0: none) that computes their input's grad. */
#define GRAD(node) 0
#define GRAD_BY(node, op) AMPC_OP_##op + 1
#define GRAD_LINEAR(node) 0
#define NOGRAD 0
#define AMPC_EW_OP(id, name, kind, ac, grad, save, rule, tkernel, form, dtypes, stem, bind) [AMPC_OP_##id] = grad,
static const int fused_backward[AMPC_NUM_OPS] = {
#include "ops.def"
};
#undef AMPC_EW_OP
#undef GRAD
#undef GRAD_BY
#undef GRAD_LINEAR
#undef NOGRAD

/* grad = OP(g, saved; p0, p1): one fused kernel (recorded, so it is differentiable again). */
static ampc_tensor *fused_act_grad(ampc_op op, ampc_node *n, ampc_tensor *const *go, ampc_scalar p0, ampc_scalar p1) {
    ampc_tensor *x = X(n);
    ampc_tensor *r = x ? ampc_elementwise_params(op, go[0], x, p0, p1) : NULL;
    ampc_tensor_decref(x);
    return r;
}

static ampc_tensor *unary_grad(ampc_node *n, ampc_op op, ampc_tensor *const *go) {
    switch (op) {
    case AMPC_OP_NEG: /* d(-a) = -g */
        return ad_un(AMPC_OP_NEG, G);
    case AMPC_OP_ABS: /* g sign(a) */
        return ad_mul(G, ad_un(AMPC_OP_SIGN, X(n)));
    case AMPC_OP_EXP: /* g y */
        return ad_mul(G, X(n));
    case AMPC_OP_LOG: /* g / a */
        return ad_div(G, X(n));
    case AMPC_OP_SQRT: /* g / (2 y) */
        return ad_div(G, ad_scale(X(n), 2.0));
    case AMPC_OP_RSQRT: { /* y = a^-1/2: -g y^3 / 2 */
        ampc_tensor *y = X(n);
        return ad_mul(G, ad_scale(ad_mul(ad_mul(ad_ref(y), ad_ref(y)), y), -0.5));
    }
    case AMPC_OP_RECIPROCAL: { /* -g y^2 */
        ampc_tensor *y = X(n);
        return ad_mul(G, ad_scale(ad_mul(ad_ref(y), y), -1.0));
    }
    /* the activations: one fused backward kernel each, math in opmath (issue 14) */
    case AMPC_OP_SIGMOID: /* g y (1 - y) */
        return fused_act_grad(AMPC_OP_SIGMOID_BACKWARD, n, go, ampc_scalar_none(), ampc_scalar_none());
    case AMPC_OP_TANH: /* g (1 - y^2) */
        return fused_act_grad(AMPC_OP_TANH_BACKWARD, n, go, ampc_scalar_none(), ampc_scalar_none());
    case AMPC_OP_RELU: /* g [y > 0]: threshold_backward(g, y, 0), torch's rule */
        return fused_act_grad(AMPC_OP_THRESHOLD_BACKWARD, n, go, ampc_scalar_float(0.0), ampc_scalar_float(0.0));
    case AMPC_OP_GELU: /* attrs.ints[0]: 0 erf, 1 tanh approximation */
        return fused_act_grad(AMPC_OP_GELU_BACKWARD, n, go, ampc_scalar_float(n->attrs.ints[0] ? 1.0 : 0.0),
                              ampc_scalar_none());
    case AMPC_OP_SILU: /* s = sigmoid(a): g s (1 + a (1 - s)) */
        return fused_act_grad(AMPC_OP_SILU_BACKWARD, n, go, ampc_scalar_none(), ampc_scalar_none());
    case AMPC_OP_SOFTPLUS: /* g sigmoid(beta a) where beta a <= threshold, else g */
        return fused_act_grad(AMPC_OP_SOFTPLUS_BACKWARD, n, go, n->attrs.scalars[0], n->attrs.scalars[1]);
    case AMPC_OP_SIN: /* g cos(a) */
        return ad_mul(G, ad_un(AMPC_OP_COS, X(n)));
    case AMPC_OP_COS: /* -g sin(a) */
        return ad_mul(G, ad_scale(ad_un(AMPC_OP_SIN, X(n)), -1.0));
    case AMPC_OP_ERF: { /* g 2/sqrt(pi) e^(-a^2) */
        ampc_tensor *a = X(n);
        return ad_mul(G, ad_scale(ad_un(AMPC_OP_EXP, ad_scale(ad_mul(ad_ref(a), a), -1.0)), M_2_SQRTPI_));
    }
    case AMPC_OP_CLAMP: { /* g [min <= a <= max] (a bound of NONE is open) */
        ampc_tensor *a = X(n);
        ampc_dtype dt = go[0]->dtype;
        ampc_tensor *g = G;
        if (n->attrs.scalars[0].kind != AMPC_SCALAR_NONE)
            g = ad_mul(g, ad_mask(ad_cmps(AMPC_OP_GE, ad_ref(a), ampc_scalar_to_double(n->attrs.scalars[0])), dt));
        if (n->attrs.scalars[1].kind != AMPC_SCALAR_NONE)
            g = ad_mul(g, ad_mask(ad_cmps(AMPC_OP_LE, ad_ref(a), ampc_scalar_to_double(n->attrs.scalars[1])), dt));
        ampc_tensor_decref(a);
        return g;
    }
    /* issue 12 */
    case AMPC_OP_ACOS: /* -g / sqrt(1 - a^2) */
    case AMPC_OP_ASIN: { /* g / sqrt(1 - a^2) */
        ampc_tensor *a = X(n);
        ampc_tensor *d = ad_un(AMPC_OP_RSQRT, ad_rsubs(1.0, ad_mul(ad_ref(a), a)));
        return ad_mul(G, op == AMPC_OP_ACOS ? ad_scale(d, -1.0) : d);
    }
    case AMPC_OP_ATAN: { /* g / (1 + a^2) */
        ampc_tensor *a = X(n);
        return ad_div(G, ad_adds(ad_mul(ad_ref(a), a), 1.0));
    }
    case AMPC_OP_COSH: /* g sinh(a) */
        return ad_mul(G, ad_un(AMPC_OP_SINH, X(n)));
    case AMPC_OP_SINH: /* g cosh(a) */
        return ad_mul(G, ad_un(AMPC_OP_COSH, X(n)));
    case AMPC_OP_TAN: { /* g (1 + y^2) */
        ampc_tensor *y = X(n);
        return ad_mul(G, ad_adds(ad_mul(ad_ref(y), y), 1.0));
    }
    case AMPC_OP_ACOSH: /* g / sqrt(a^2 - 1) */
    case AMPC_OP_ASINH: { /* g / sqrt(a^2 + 1) */
        ampc_tensor *a = X(n);
        return ad_mul(G, ad_un(AMPC_OP_RSQRT, ad_adds(ad_mul(ad_ref(a), a), op == AMPC_OP_ACOSH ? -1.0 : 1.0)));
    }
    case AMPC_OP_ATANH: { /* g / (1 - a^2) */
        ampc_tensor *a = X(n);
        return ad_div(G, ad_rsubs(1.0, ad_mul(ad_ref(a), a)));
    }
    case AMPC_OP_LOG1P: /* g / (1 + a) */
        return ad_div(G, ad_adds(X(n), 1.0));
    case AMPC_OP_EXPM1: /* g (y + 1) */
        return ad_mul(G, ad_adds(X(n), 1.0));
    case AMPC_OP_EXP2: /* g y ln 2 */
        return ad_mul(G, ad_scale(X(n), 0.693147180559945309417232121458));
    case AMPC_OP_LOG2: /* g / (a ln 2) */
        return ad_div(G, ad_scale(X(n), 0.693147180559945309417232121458));
    case AMPC_OP_LOG10: /* g / (a ln 10) */
        return ad_div(G, ad_scale(X(n), 2.302585092994045684017991454684));
    case AMPC_OP_ERFC: { /* -g 2/sqrt(pi) e^(-a^2) */
        ampc_tensor *a = X(n);
        return ad_mul(G, ad_scale(ad_un(AMPC_OP_EXP, ad_scale(ad_mul(ad_ref(a), a), -1.0)), -M_2_SQRTPI_));
    }
    case AMPC_OP_ERFINV: { /* g sqrt(pi)/2 e^(y^2) */
        ampc_tensor *y = X(n);
        return ad_mul(G, ad_scale(ad_un(AMPC_OP_EXP, ad_mul(ad_ref(y), y)), 0.886226925452758013649083741671));
    }
    case AMPC_OP_LGAMMA: /* g digamma(a) */
        return ad_mul(G, ad_un(AMPC_OP_DIGAMMA, X(n)));
    case AMPC_OP_DIGAMMA: /* g polygamma(1, a) */
    case AMPC_OP_POLYGAMMA: { /* g polygamma(n + 1, a) */
        int64_t order = op == AMPC_OP_DIGAMMA ? 1 : ampc_scalar_to_int(n->attrs.scalars[0]) + 1;
        ampc_tensor *a = X(n);
        ampc_tensor *d = a ? ampc_elementwise_params(AMPC_OP_POLYGAMMA, a, NULL, ampc_scalar_int(order), ampc_scalar_none()) : NULL;
        ampc_tensor_decref(a);
        return ad_mul(G, d);
    }
    case AMPC_OP_SINC: { /* g (pi a cos(pi a) - sin(pi a)) / (pi a^2), 0 where pi a^2 is 0 (torch's order) */
        ampc_tensor *a = X(n);
        ampc_tensor *pa = ad_scale(ad_ref(a), 3.14159265358979323846);
        ampc_tensor *pa_cos = ad_mul(ad_ref(pa), ad_un(AMPC_OP_COS, ad_ref(pa)));
        ampc_tensor *num = ad_sub(pa_cos, ad_un(AMPC_OP_SIN, pa)); /* pa consumed last: argument order is unspecified */
        ampc_tensor *sq = ad_scale(ad_mul(ad_ref(a), a), 3.14159265358979323846);
        ampc_tensor *d = ad_div(ad_mul(G, num), ad_ref(sq));
        return ad_where(ad_cmps(AMPC_OP_EQ, sq, 0.0), ad_num(0.0, d), d);
    }
    case AMPC_OP_LOGIT: { /* g / (a (1 - a)); eps: 0 outside [eps, 1 - eps]; None: NaN outside [0, 1] (torch's
                           * vectorized kernel; its scalar tail writes g * inf at a == -0.0) */
        double eps = ampc_scalar_to_double(n->attrs.scalars[0]);
        ampc_tensor *a = X(n);
        ampc_tensor *d = ad_div(G, ad_mul(ad_ref(a), ad_rsubs(1.0, ad_ref(a))));
        bool none = isnan(eps);
        double lo = none ? 0.0 : eps, hi = none ? 1.0 : 1.0 - eps;
        ampc_tensor *above_lo = ad_cmps(AMPC_OP_GE, ad_ref(a), lo);
        ampc_tensor *inside = ad_bin(AMPC_OP_LOGICAL_AND, above_lo, ad_cmps(AMPC_OP_LE, a, hi)); /* NaN: outside */
        return ad_where(inside, d, ad_num(none ? NAN : 0.0, d));
    }
    case AMPC_OP_FRAC: /* g */
        return G;
    case AMPC_OP_DEG2RAD: /* g pi/180 */
        return ad_scale(G, 0.017453292519943295769);
    case AMPC_OP_RAD2DEG: /* g 180/pi */
        return ad_scale(G, 57.295779513082320876798);
    case AMPC_OP_TRUNC: case AMPC_OP_SGN: /* piecewise constant: 0 */
    case AMPC_OP_SIGN: case AMPC_OP_FLOOR: case AMPC_OP_CEIL: case AMPC_OP_ROUND: /* piecewise constant: 0 */
        return ampc_zeros(go[0]->ndim, go[0]->shape, go[0]->dtype, go[0]->device);
    default:
        if (fused_backward[op]) { /* the row's fused backward op: grad = OP(g, saved; p0, p1) */
            ampc_tensor *x = X(n);
            ampc_tensor *r = x ? ampc_elementwise_params((ampc_op)(fused_backward[op] - 1), go[0], x, n->attrs.scalars[0],
                                                         n->attrs.scalars[1])
                               : NULL;
            ampc_tensor_decref(x);
            return r;
        }
        ampc_set_error(AMPC_E_NOT_IMPLEMENTED, "%s: no derivative for %s", ampc_node_name(n), ampc_op_name(op));
        return NULL;
    }
}

/* The op of a unary node is its attrs.ints[1] (ints[0] an approximation mode: GELU_TANH's). */
static ampc_status unary_backward(ampc_node *n, ampc_tensor *const *go, ampc_tensor **gi) {
    gi[0] = unary_grad(n, (ampc_op)n->attrs.ints[1], go);
    return ad_done(n, gi);
}

/* Every differentiable unary row gets a rule named by its GRAD column. */
#define GRAD(node) {node, unary_backward}
#define GRAD_BY(node, op) {node, unary_backward}
#define GRAD_LINEAR(node) {NULL, NULL}
#define NOGRAD {NULL, NULL}
#define AMPC_OP(id, name, kind, schema, backends, ac, ...)
#define UNARY_RULE_UNARY(id, ...) [AMPC_OP_##id] = __VA_ARGS__,
#define UNARY_RULE_BINARY(id, ...)
#define UNARY_RULE_COMPARE(id, ...)
#define AMPC_EW_OP(id, name, kind, ac, grad, save, rule, tkernel, form, dtypes, stem, bind) UNARY_RULE_##kind(id, grad)
static const ampc_grad_rule unary_rules[AMPC_NUM_OPS] = {
#include "ops.def"
};
#undef UNARY_RULE_UNARY
#undef UNARY_RULE_BINARY
#undef UNARY_RULE_COMPARE
#undef AMPC_EW_OP
#undef AMPC_OP
#undef GRAD
#undef GRAD_BY
#undef GRAD_LINEAR
#undef NOGRAD

static bool unary_needs_self(ampc_op op) {
    return op >= 0 && op < AMPC_NUM_OPS && unary_rules[op].backward && unary_saves[op] == SAVE_SELF;
}

static ampc_status record_unary(ampc_op op, const ampc_tensor *a, const ampc_tensor *a_value, ampc_tensor *out,
                                const ampc_scalar *params) {
    if (op < 0 || op >= AMPC_NUM_OPS || !unary_rules[op].backward || !ampc_dtype_is_floating(out->dtype))
        return AMPC_OK; /* not differentiable (logical_not, isnan, ...) */
    ampc_node_attrs at = {0};
    at.ints[1] = op;
    at.n_ints = 2;
    if (params) {
        if (op == AMPC_OP_GELU) at.ints[0] = ampc_scalar_to_int(params[0]);
        else at.scalars[0] = params[0], at.scalars[1] = params[1];
    }
    const ampc_tensor *save = unary_saves[op] == SAVE_NONE ? NULL : saves_output(op) ? out : a_value;
    return ampc_autograd_record(&unary_rules[op], 1, &a, 1, &out, 1, &save, &at) ? AMPC_OK : ampc_last_status();
}

ampc_status ampc_ad_record_unary(ampc_op op, const ampc_tensor *a, ampc_tensor *out, const ampc_scalar *params) {
    return record_unary(op, a, a, out, params);
}

ampc_status ampc_ad_record_unary_(ampc_op op, const ampc_tensor *a_before, ampc_tensor *a, const ampc_scalar *params) {
    return record_unary(op, a, a_before, a, params);
}

/* ------------------------------------------------------------------ binary */

#define A(n) ad_saved(n, 0)
#define B(n) ad_saved(n, 1)
#define Y(n) ad_saved(n, 2)

static ampc_tensor *alpha_scaled(ampc_tensor *g, const ampc_node *n, double sign) {
    ampc_scalar al = n->attrs.scalars[0];
    double alpha = al.kind == AMPC_SCALAR_NONE ? 1.0 : ampc_scalar_to_double(al);
    return alpha * sign == 1.0 ? g : ad_scale(g, alpha * sign);
}

static ampc_status add_backward(ampc_node *n, ampc_tensor *const *go, ampc_tensor **gi) {
    if (n->needs_input_grad[0]) gi[0] = G;                         /* d(a + alpha b)/da = 1 */
    if (n->needs_input_grad[1]) gi[1] = alpha_scaled(G, n, 1.0);   /* d/db = alpha */
    return ad_done(n, gi);
}

static ampc_status sub_backward(ampc_node *n, ampc_tensor *const *go, ampc_tensor **gi) {
    if (n->needs_input_grad[0]) gi[0] = G;                         /* d(a - alpha b)/da = 1 */
    if (n->needs_input_grad[1]) gi[1] = alpha_scaled(G, n, -1.0);  /* d/db = -alpha */
    return ad_done(n, gi);
}

static ampc_status mul_backward(ampc_node *n, ampc_tensor *const *go, ampc_tensor **gi) {
    if (n->needs_input_grad[0]) gi[0] = ad_mul(G, B(n)); /* d(a b)/da = b */
    if (n->needs_input_grad[1]) gi[1] = ad_mul(G, A(n)); /* d(a b)/db = a */
    return ad_done(n, gi);
}

static ampc_status div_backward(ampc_node *n, ampc_tensor *const *go, ampc_tensor **gi) {
    if (n->needs_input_grad[0]) gi[0] = ad_div(G, B(n)); /* d(a/b)/da = 1/b */
    if (n->needs_input_grad[1]) {                        /* d(a/b)/db = -a/b^2 */
        ampc_tensor *b = B(n);
        gi[1] = ad_scale(ad_div(ad_mul(G, A(n)), ad_mul(ad_ref(b), b)), -1.0);
    }
    return ad_done(n, gi);
}

static ampc_status pow_backward(ampc_node *n, ampc_tensor *const *go, ampc_tensor **gi) {
    if (n->needs_input_grad[0]) { /* d(a^b)/da = b a^(b-1), 0 where b == 0 (PyTorch's convention) */
        ampc_tensor *b = B(n);
        ampc_tensor *d = ad_mul(ad_ref(b), ad_bin(AMPC_OP_POW, A(n), ad_adds(ad_ref(b), -1.0)));
        ampc_tensor *g = ad_mul(G, d);
        gi[0] = ad_where(ad_cmps(AMPC_OP_EQ, b, 0.0), ad_num(0.0, g), g);
    }
    if (n->needs_input_grad[1]) { /* d(a^b)/db = a^b log(a), 0 where a == 0 and b >= 0 */
        ampc_tensor *a = A(n), *b = B(n);
        ampc_tensor *zero_base = ad_bin(AMPC_OP_LOGICAL_AND, ad_cmps(AMPC_OP_EQ, ad_ref(a), 0.0), ad_cmps(AMPC_OP_GE, b, 0.0));
        /* log of the base in the promoted dtype (torch's pow_backward_exponent), not in its own
         * (a bf16 base with an fp32 exponent would lose 0.3%) */
        ampc_tensor *log_a = ad_un(AMPC_OP_LOG, a && a->dtype != go[0]->dtype ? ad_to(a, go[0]->dtype) : a);
        ampc_tensor *g = ad_mul(G, ad_mul(Y(n), log_a));
        gi[1] = ad_where(zero_base, ad_num(0.0, g), g);
    }
    return ad_done(n, gi);
}

/* maximum: ga = g (1 - [b > a] - [a == b]/2), gb = g (1 - [a > b] - [a == b]/2); minimum
 * mirrored. Written as "all but what the other operand wins", as torch: where a comparison is
 * false both ways (a NaN operand) both inputs get the whole grad. */
static ampc_tensor *extremum_share(ampc_node *n, ampc_tensor *const *go, ampc_op wins, int self, int other) {
    ampc_dtype dt = go[0]->dtype;
    ampc_tensor *x = ad_saved(n, self), *y = ad_saved(n, other);
    ampc_tensor *lose = ad_mask(ad_bin(wins, ad_ref(y), ad_ref(x)), dt);
    ampc_tensor *tie = ad_scale(ad_mask(ad_bin(AMPC_OP_EQ, x, y), dt), 0.5);
    return ad_mul(G, ad_rsubs(1.0, ad_add(lose, tie)));
}

static ampc_status maximum_backward(ampc_node *n, ampc_tensor *const *go, ampc_tensor **gi) {
    if (n->needs_input_grad[0]) gi[0] = extremum_share(n, go, AMPC_OP_GT, 0, 1);
    if (n->needs_input_grad[1]) gi[1] = extremum_share(n, go, AMPC_OP_GT, 1, 0);
    return ad_done(n, gi);
}

static ampc_status minimum_backward(ampc_node *n, ampc_tensor *const *go, ampc_tensor **gi) {
    if (n->needs_input_grad[0]) gi[0] = extremum_share(n, go, AMPC_OP_LT, 0, 1);
    if (n->needs_input_grad[1]) gi[1] = extremum_share(n, go, AMPC_OP_LT, 1, 0);
    return ad_done(n, gi);
}

/* div with a rounding mode is piecewise constant: zero grads, but the graph is kept (torch). */
static ampc_status div_mode_backward(ampc_node *n, ampc_tensor *const *go, ampc_tensor **gi) {
    for (int i = 0; i < 2; i++)
        if (n->needs_input_grad[i]) gi[i] = ampc_zeros(go[0]->ndim, go[0]->shape, go[0]->dtype, go[0]->device);
    return ad_done(n, gi);
}
static const ampc_grad_rule div_mode_rule = {"DivBackward2", div_mode_backward}; /* also for a Python number */

ampc_status ampc_ad_record_div_mode(const ampc_tensor *a, const ampc_tensor *b, ampc_tensor *out) {
    if (!ampc_dtype_is_floating(out->dtype)) return AMPC_OK;
    const ampc_tensor *ins[2] = {a, b};
    ampc_node_attrs at = {0};
    return ampc_autograd_record(&div_mode_rule, 2, ins, 1, &out, 0, NULL, &at) ? AMPC_OK : ampc_last_status();
}

static ampc_status atan2_backward(ampc_node *n, ampc_tensor *const *go, ampc_tensor **gi) {
    /* d atan2(a, b)/da = b / (a^2 + b^2), d/db = -a / (a^2 + b^2) */
    ampc_tensor *a = A(n), *b = B(n);
    ampc_tensor *r2 = ad_add(ad_mul(ad_ref(a), ad_ref(a)), ad_mul(ad_ref(b), ad_ref(b)));
    if (n->needs_input_grad[0]) gi[0] = ad_div(ad_mul(G, ad_ref(b)), ad_ref(r2));
    if (n->needs_input_grad[1]) gi[1] = ad_div(ad_mul(G, ad_scale(ad_ref(a), -1.0)), ad_ref(r2));
    ampc_tensor_decref(a);
    ampc_tensor_decref(b);
    ampc_tensor_decref(r2);
    return ad_done(n, gi);
}

static ampc_status remainder_backward(ampc_node *n, ampc_tensor *const *go, ampc_tensor **gi) {
    /* a - floor(a/b) b: d/da = 1, d/db = -floor(a/b) */
    if (n->needs_input_grad[0]) gi[0] = G;
    if (n->needs_input_grad[1]) {
        ampc_tensor *a = A(n), *b = B(n), *q = a && b ? ampc_div_mode(a, b, 2) : NULL;
        ampc_tensor_decref(a);
        ampc_tensor_decref(b);
        gi[1] = ad_mul(G, ad_scale(q, -1.0));
    }
    return ad_done(n, gi);
}

/* ---- issue 12's binary rows: rules named by their GRAD column, one switch on the op
 * (attrs.ints[1]); slots as above: a (0), b (1), the output (2). */
static ampc_status table_binary_backward(ampc_node *n, ampc_tensor *const *go, ampc_tensor **gi) {
    ampc_op op = (ampc_op)n->attrs.ints[1];
    ampc_dtype dt = go[0]->dtype;
    bool g0 = n->needs_input_grad[0], g1 = n->needs_input_grad[1];
    switch (op) {
    case AMPC_OP_COPYSIGN: /* g y / a (0 where a == 0); none for the sign's source */
        if (g0) {
            ampc_tensor *a = A(n);
            ampc_tensor *ratio = ad_div(Y(n), ad_ref(a));
            gi[0] = ad_mul(G, ad_where(ad_cmps(AMPC_OP_EQ, a, 0.0), ad_num(0.0, ratio), ratio));
        }
        if (g1) gi[1] = ampc_zeros(go[0]->ndim, go[0]->shape, dt, go[0]->device);
        break;
    case AMPC_OP_FMOD: /* a - trunc(a / b) b: g, -g trunc(a / b) */
        if (g0) gi[0] = G;
        if (g1) {
            ampc_tensor *a = A(n), *b = B(n), *q = a && b ? ampc_div_mode(a, b, 1) : NULL;
            ampc_tensor_decref(a);
            ampc_tensor_decref(b);
            gi[1] = ad_mul(G, ad_scale(q, -1.0));
        }
        break;
    case AMPC_OP_HYPOT: /* g a / y, g b / y */
        if (g0) gi[0] = ad_div(ad_mul(G, A(n)), Y(n));
        if (g1) gi[1] = ad_div(ad_mul(G, B(n)), Y(n));
        break;
    case AMPC_OP_LOGADDEXP:  /* g / (1 + e^(b - a)), g / (1 + e^(a - b)) */
    case AMPC_OP_LOGADDEXP2: { /* the same with 2^ */
        ampc_op e = op == AMPC_OP_LOGADDEXP ? AMPC_OP_EXP : AMPC_OP_EXP2;
        if (g0) gi[0] = ad_div(G, ad_adds(ad_un(e, ad_sub(B(n), A(n))), 1.0));
        if (g1) gi[1] = ad_div(G, ad_adds(ad_un(e, ad_sub(A(n), B(n))), 1.0));
        break;
    }
    case AMPC_OP_XLOGY: /* g log(b), 0 where a == 0 and b <= 0 (torch's rule); g a / b; in the grad's dtype */
        if (g0) {
            ampc_tensor *b = B(n);
            /* log(b) in the grad's dtype, as torch: an fp16 b under a float64 a, or a Python number b (whose
             * own log would run in the default dtype) become a plain tensor of that dtype first */
            if (b && b->is_wrapped_number) b = ad_add(ampc_zeros(0, NULL, dt, b->device), b);
            else if (b && b->dtype != dt) b = ad_to(b, dt);
            ampc_tensor *d = ad_mul(G, ad_un(AMPC_OP_LOG, ad_ref(b)));
            ampc_tensor *zero = ad_bin(AMPC_OP_LOGICAL_AND, ad_cmps(AMPC_OP_EQ, A(n), 0.0), ad_cmps(AMPC_OP_LE, b, 0.0));
            gi[0] = ad_where(zero, ad_num(0.0, d), d);
        }
        if (g1) gi[1] = ad_div(ad_mul(G, A(n)), B(n));
        break;
    case AMPC_OP_FMAX:   /* a wins where a >= b or b is NaN (a <= b for fmin); b takes the rest */
    case AMPC_OP_FMIN: {
        ampc_tensor *b = B(n);
        ampc_tensor *ordered = ad_bin(op == AMPC_OP_FMAX ? AMPC_OP_GE : AMPC_OP_LE, A(n), ad_ref(b));
        ampc_tensor *wins = ad_bin(AMPC_OP_LOGICAL_OR, ordered, ad_un(AMPC_OP_ISNAN, b));
        if (g0) gi[0] = ad_mul(G, ad_mask(ad_ref(wins), dt));
        if (g1) gi[1] = ad_mul(G, ad_mask(ad_un(AMPC_OP_LOGICAL_NOT, ad_ref(wins)), dt));
        ampc_tensor_decref(wins);
        break;
    }
    default:
        ampc_set_error(AMPC_E_NOT_IMPLEMENTED, "%s: no derivative for %s", ampc_node_name(n), ampc_op_name(op));
        return ampc_last_status();
    }
    return ad_done(n, gi);
}

#define GRAD(node) {node, table_binary_backward}
#define GRAD_BY(node, op) {NULL, NULL}
#define GRAD_LINEAR(node) {NULL, NULL}
#define NOGRAD {NULL, NULL}
#define AMPC_OP(id, name, kind, schema, backends, ac, ...)
#define TABLE_RULE_UNARY(id, ...)
#define TABLE_RULE_BINARY(id, ...) [AMPC_OP_##id] = __VA_ARGS__,
#define TABLE_RULE_COMPARE(id, ...)
#define AMPC_EW_OP(id, name, kind, ac, grad, save, rule, tkernel, form, dtypes, stem, bind) TABLE_RULE_##kind(id, grad)
static const ampc_grad_rule table_binary_rules[AMPC_NUM_OPS] = {
#include "ops.def"
};
#undef TABLE_RULE_UNARY
#undef TABLE_RULE_BINARY
#undef TABLE_RULE_COMPARE
#undef AMPC_EW_OP
#undef AMPC_OP
#undef GRAD
#undef GRAD_BY
#undef GRAD_LINEAR
#undef NOGRAD
static const ampc_grad_rule fmod_scalar_rule = {"FmodBackward0", table_binary_backward};

static const ampc_grad_rule add_rule = {"AddBackward0", add_backward}, add_scalar_rule = {"AddBackward1", add_backward},
                            sub_rule = {"SubBackward0", sub_backward}, sub_scalar_rule = {"SubBackward1", sub_backward},
                            rsub_rule = {"RsubBackward1", sub_backward}, mul_rule = {"MulBackward0", mul_backward},
                            div_rule = {"DivBackward0", div_backward}, pow_scalar_rule = {"PowBackward0", pow_backward},
                            pow_rule = {"PowBackward1", pow_backward}, pow_base_rule = {"PowBackward2", pow_backward},
                            maximum_rule = {"MaximumBackward0", maximum_backward},
                            minimum_rule = {"MinimumBackward0", minimum_backward},
                            atan2_rule = {"Atan2Backward0", atan2_backward},
                            remainder_rule = {"RemainderBackward0", remainder_backward};

static const ampc_grad_rule *binary_rule(ampc_op op, const ampc_tensor *a, const ampc_tensor *b) {
    switch (op) {
    case AMPC_OP_ADD: return b->is_wrapped_number ? &add_scalar_rule : &add_rule;
    case AMPC_OP_SUB: return a->is_wrapped_number ? &rsub_rule : b->is_wrapped_number ? &sub_scalar_rule : &sub_rule;
    case AMPC_OP_MUL: return &mul_rule;
    case AMPC_OP_DIV: return &div_rule;
    case AMPC_OP_POW: return a->is_wrapped_number ? &pow_base_rule : b->is_wrapped_number ? &pow_scalar_rule : &pow_rule;
    case AMPC_OP_MAXIMUM: return &maximum_rule;
    case AMPC_OP_MINIMUM: return &minimum_rule;
    case AMPC_OP_ATAN2: return &atan2_rule;
    case AMPC_OP_REMAINDER: return &remainder_rule;
    case AMPC_OP_FMOD: return b->is_wrapped_number ? &fmod_scalar_rule : &table_binary_rules[op];
    case AMPC_OP_PRELU: return ampc_ad_prelu_rule(); /* derivatives_act.c */
    default: /* issue 12's rows by their GRAD column; comparisons, logical and bitwise ops: none */
        return table_binary_rules[op].backward ? &table_binary_rules[op] : NULL;
    }
}

/* Which of a (0) and b (1) the rule reads, given which inputs need grads. */
static void binary_saves(ampc_op op, bool ga, bool gb, bool *save_a, bool *save_b, bool *save_y) {
    *save_a = *save_b = *save_y = false;
    switch (op) {
    case AMPC_OP_MUL: *save_a = gb; *save_b = ga; break;
    case AMPC_OP_DIV: *save_a = gb; *save_b = ga || gb; break;
    case AMPC_OP_POW: *save_a = true; *save_b = true; *save_y = gb; break;
    case AMPC_OP_MAXIMUM: case AMPC_OP_MINIMUM: case AMPC_OP_ATAN2: case AMPC_OP_REMAINDER:
        *save_a = *save_b = true; break;
    case AMPC_OP_COPYSIGN: case AMPC_OP_HYPOT: *save_a = *save_b = *save_y = true; break;
    case AMPC_OP_FMOD: case AMPC_OP_LOGADDEXP: case AMPC_OP_LOGADDEXP2: case AMPC_OP_XLOGY: case AMPC_OP_FMAX:
    case AMPC_OP_FMIN: *save_a = *save_b = true; break;
    case AMPC_OP_PRELU: *save_a = *save_b = true; break;
    default: break;
    }
}

static bool binary_needs_self(ampc_op op, const ampc_tensor *a, const ampc_tensor *b) {
    bool sa, sb, sy;
    binary_saves(op, a->requires_grad, b->requires_grad, &sa, &sb, &sy);
    return sa || (sb && b == a); /* x.mul_(x) reads x's old value as b too */
}

static ampc_status record_binary(ampc_op op, const ampc_tensor *a, const ampc_tensor *a_value, const ampc_tensor *b,
                                 ampc_scalar alpha, ampc_tensor *out) {
    const ampc_grad_rule *rule = binary_rule(op, a, b);
    if (!rule || !ampc_dtype_is_floating(out->dtype)) return AMPC_OK;
    bool sa, sb, sy;
    binary_saves(op, a->requires_grad, b->requires_grad, &sa, &sb, &sy);
    ampc_node_attrs at = {0};
    at.scalars[0] = alpha;
    at.ints[1] = op; /* table_binary_backward's switch */
    at.n_ints = 2;
    const ampc_tensor *ins[2] = {a, b};
    const ampc_tensor *saved[3] = {sa ? a_value : NULL, sb ? (b == out ? a_value : b) : NULL, sy ? out : NULL};
    return ampc_autograd_record(rule, 2, ins, 1, &out, 3, saved, &at) ? AMPC_OK : ampc_last_status();
}

ampc_status ampc_ad_record_binary(ampc_op op, const ampc_tensor *a, const ampc_tensor *b, ampc_scalar alpha,
                                  ampc_tensor *out) {
    return record_binary(op, a, a, b, alpha, out);
}

ampc_status ampc_ad_record_binary_(ampc_op op, const ampc_tensor *a_before, ampc_tensor *a, const ampc_tensor *b,
                                   ampc_scalar alpha) {
    return record_binary(op, a, a_before, b, alpha, a);
}

/* ------------------------------------------------------------------ where, casts */

static ampc_status where_backward(ampc_node *n, ampc_tensor *const *go, ampc_tensor **gi) {
    ampc_tensor *cond = ad_saved(n, 0);
    if (n->needs_input_grad[1]) gi[1] = ad_where(ad_ref(cond), G, ad_num(0.0, go[0])); /* g where cond */
    if (n->needs_input_grad[2]) gi[2] = ad_where(ad_ref(cond), ad_num(0.0, go[0]), G); /* g where !cond */
    ampc_tensor_decref(cond);
    return ad_done(n, gi);
}

static const ampc_grad_rule where_rule = {"WhereBackward0", where_backward};

ampc_status ampc_ad_record_where(const ampc_tensor *cond, const ampc_tensor *a, const ampc_tensor *b,
                                 ampc_tensor *out) {
    if (!ampc_dtype_is_floating(out->dtype)) return AMPC_OK;
    const ampc_tensor *ins[3] = {NULL, a, b}; /* the condition is never differentiable */
    return ampc_autograd_record(&where_rule, 3, ins, 1, &out, 1, &cond, NULL) ? AMPC_OK : ampc_last_status();
}

/* d to(a, dtype)/da = identity: the engine casts the grad back to a's dtype and device */
static ampc_status to_backward(ampc_node *n, ampc_tensor *const *go, ampc_tensor **gi) {
    gi[0] = G;
    return ad_done(n, gi);
}

static const ampc_grad_rule to_rule = {"ToCopyBackward0", to_backward};

ampc_status ampc_ad_record_to(const ampc_tensor *a, ampc_tensor *out) {
    if (!ampc_dtype_is_floating(out->dtype) || !ampc_dtype_is_floating(a->dtype)) return AMPC_OK;
    return ampc_autograd_record(&to_rule, 1, &a, 1, &out, 0, NULL, NULL) ? AMPC_OK : ampc_last_status();
}

/* ------------------------------------------------------------------ fused backward rows
 * A GRAD_LINEAR row (hardtanh_backward, ...) is linear in its first operand (the incoming
 * grad) and piecewise constant in its second: d/dg = the op itself on the new grad, d/dx = 0. */
static ampc_status linear_backward(ampc_node *n, ampc_tensor *const *go, ampc_tensor **gi) {
    if (n->needs_input_grad[0]) {
        ampc_tensor *x = ad_saved(n, 0);
        gi[0] = x ? ampc_elementwise_params((ampc_op)n->attrs.ints[1], go[0], x, n->attrs.scalars[0], n->attrs.scalars[1]) : NULL;
        ampc_tensor_decref(x);
    }
    if (n->needs_input_grad[1]) gi[1] = ampc_zeros(go[0]->ndim, go[0]->shape, go[0]->dtype, go[0]->device);
    return ad_done(n, gi);
}

#define GRAD(node) {NULL, NULL}
#define GRAD_BY(node, op) {NULL, NULL}
#define GRAD_LINEAR(node) {node, linear_backward}
#define NOGRAD {NULL, NULL}
#define AMPC_EW_OP(id, name, kind, ac, grad, save, rule, tkernel, form, dtypes, stem, bind) [AMPC_OP_##id] = grad,
static const ampc_grad_rule linear_rules[AMPC_NUM_OPS] = {
#include "ops.def"
};
#undef AMPC_EW_OP
#undef GRAD
#undef GRAD_BY
#undef GRAD_LINEAR
#undef NOGRAD

static ampc_status record_linear(ampc_op op, const ampc_tensor *a, const ampc_tensor *b, const ampc_scalar *p,
                                 ampc_tensor *out) {
    if (!linear_rules[op].backward || !ampc_dtype_is_floating(out->dtype)) return AMPC_OK;
    ampc_node_attrs at = ad_op_attrs(op, p);
    const ampc_tensor *ins[2] = {a, b};
    return ampc_autograd_record(&linear_rules[op], 2, ins, 1, &out, 1, &b, &at) ? AMPC_OK : ampc_last_status();
}

/* The old value of `a` when the rule of its in-place op reads it (recording off). */
static ampc_status copy_before(bool needed, const ampc_tensor *a, ampc_tensor **before);

/* ------------------------------------------------------------------ frontends' recording path */

ampc_tensor *ampc_ad_unary(ampc_op op, const ampc_tensor *a) {
    ampc_tensor *out;
    AD_PAUSED(out, ampc_unary(op, a));
    return ad_recorded(out, out ? ampc_ad_record_unary(op, a, out, NULL) : AMPC_OK);
}

ampc_tensor *ampc_ad_gelu(const ampc_tensor *a, bool tanh_approximation) {
    ampc_tensor *out;
    AD_PAUSED(out, ampc_gelu(a, tanh_approximation));
    ampc_scalar mode = ampc_scalar_int(tanh_approximation);
    return ad_recorded(out, out ? ampc_ad_record_unary(AMPC_OP_GELU, a, out, &mode) : AMPC_OK);
}

ampc_tensor *ampc_ad_elementwise_params(ampc_op op, const ampc_tensor *a, const ampc_tensor *b, ampc_scalar p0,
                                        ampc_scalar p1) {
    ampc_tensor *out;
    AD_PAUSED(out, ampc_elementwise_params(op, a, b, p0, p1));
    if (!out) return NULL;
    ampc_scalar p[2] = {p0, p1};
    if (ampc_op_kind_of(op) == AMPC_KIND_UNARY) return ad_recorded(out, ampc_ad_record_unary(op, a, out, p));
    if (ampc_ad_act_backward_rule(op)) return ad_recorded(out, ampc_ad_record_act_backward(op, a, b, p, out));
    return ad_recorded(out, record_linear(op, a, b, p, out));
}

ampc_status ampc_ad_elementwise_params_(ampc_op op, ampc_tensor *a, ampc_scalar p0, ampc_scalar p1) {
    ampc_tensor *before;
    AMPC_TRY(ampc_autograd_check_inplace(a));
    AMPC_TRY(copy_before(unary_needs_self(op), a, &before));
    ampc_status st;
    AD_PAUSED(st, ampc_elementwise_params_(op, a, p0, p1));
    ampc_scalar p[2] = {p0, p1};
    if (st == AMPC_OK) st = ampc_ad_record_unary_(op, before, a, p);
    ampc_tensor_decref(before);
    return st;
}

ampc_tensor *ampc_ad_clamp(const ampc_tensor *a, ampc_scalar min, ampc_scalar max) {
    ampc_tensor *out;
    AD_PAUSED(out, ampc_clamp(a, min, max));
    ampc_scalar p[2] = {min, max};
    return ad_recorded(out, out ? ampc_ad_record_unary(AMPC_OP_CLAMP, a, out, p) : AMPC_OK);
}

ampc_tensor *ampc_ad_binary(ampc_op op, const ampc_tensor *a, const ampc_tensor *b, ampc_scalar alpha) {
    ampc_tensor *out;
    AD_PAUSED(out, ampc_binary(op, a, b, alpha));
    return ad_recorded(out, out ? ampc_ad_record_binary(op, a, b, alpha, out) : AMPC_OK);
}

ampc_tensor *ampc_ad_where(const ampc_tensor *cond, const ampc_tensor *a, const ampc_tensor *b) {
    ampc_tensor *out;
    AD_PAUSED(out, ampc_where(cond, a, b));
    return ad_recorded(out, out ? ampc_ad_record_where(cond, a, b, out) : AMPC_OK);
}

/* The old value of `a` when the rule of its in-place op reads it (recording off). */
static ampc_status copy_before(bool needed, const ampc_tensor *a, ampc_tensor **before) {
    *before = NULL;
    if (!needed) return AMPC_OK;
    AD_PAUSED(*before, ampc_clone(a));
    return *before ? AMPC_OK : ampc_last_status();
}

ampc_status ampc_ad_binary_(ampc_op op, ampc_tensor *a, const ampc_tensor *b, ampc_scalar alpha) {
    ampc_tensor *before;
    AMPC_TRY(ampc_autograd_check_inplace(a));
    AMPC_TRY(copy_before(binary_needs_self(op, a, b), a, &before));
    ampc_status st;
    AD_PAUSED(st, ampc_binary_(op, a, b, alpha));
    if (st == AMPC_OK) st = ampc_ad_record_binary_(op, before, a, b, alpha);
    ampc_tensor_decref(before);
    return st;
}

/* acosh_, asinh_, atanh_: torch records a node whose backward refuses (no in-place formula) */
static ampc_status refused_inplace_backward(ampc_node *n, ampc_tensor *const *go, ampc_tensor **gi) {
    return ampc_set_error(AMPC_E_NOT_IMPLEMENTED, "the derivative for 'inplace version of %s' is not implemented.",
                          ampc_op_name((ampc_op)n->attrs.ints[1]));
}
static const ampc_grad_rule refused_rules[3] = {{"AcoshBackward1", refused_inplace_backward},
                                                {"AsinhBackward1", refused_inplace_backward},
                                                {"AtanhBackward1", refused_inplace_backward}};

static ampc_status unary_inplace(ampc_op op, ampc_tensor *a, ampc_scalar min, ampc_scalar max) {
    if (op == AMPC_OP_ACOSH || op == AMPC_OP_ASINH || op == AMPC_OP_ATANH) {
        AMPC_TRY(ampc_autograd_check_inplace(a));
        ampc_status st;
        AD_PAUSED(st, ampc_unary_(op, a));
        if (st != AMPC_OK || !ampc_dtype_is_floating(a->dtype)) return st;
        ampc_node_attrs at = {0};
        at.ints[1] = op;
        at.n_ints = 2;
        const ampc_grad_rule *rule = &refused_rules[op == AMPC_OP_ACOSH ? 0 : op == AMPC_OP_ASINH ? 1 : 2];
        const ampc_tensor *in = a;
        return ampc_autograd_record(rule, 1, &in, 1, &a, 0, NULL, &at) ? AMPC_OK : ampc_last_status();
    }
    ampc_tensor *before;
    AMPC_TRY(ampc_autograd_check_inplace(a));
    AMPC_TRY(copy_before(unary_needs_self(op), a, &before));
    ampc_status st;
    if (op == AMPC_OP_CLAMP) AD_PAUSED(st, ampc_clamp_(a, min, max));
    else AD_PAUSED(st, ampc_unary_(op, a));
    ampc_scalar p[2] = {min, max};
    if (st == AMPC_OK) st = ampc_ad_record_unary_(op, before, a, op == AMPC_OP_CLAMP ? p : NULL);
    ampc_tensor_decref(before);
    return st;
}

ampc_status ampc_ad_unary_(ampc_op op, ampc_tensor *a) {
    return unary_inplace(op, a, ampc_scalar_none(), ampc_scalar_none());
}

ampc_status ampc_ad_clamp_(ampc_tensor *a, ampc_scalar min, ampc_scalar max) {
    return unary_inplace(AMPC_OP_CLAMP, a, min, max);
}
