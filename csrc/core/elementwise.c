/* elementwise.c: frontends of the elementwise ops (UNARY, BINARY, COMPARE and TERNARY rows of
 * ops.def): PyTorch's shape, dtype and argument rules, then one dispatch.
 *
 * Every public function builds an ew_call and hands it to ew_run, which
 *   1. broadcasts the inputs' shapes,
 *   2. finds the compute dtype (torch.result_type over the operands, then the op's rule from
 *      the `rules` table: float-only ops promote integers to the default float dtype, ...) and
 *      the output dtype (bool for comparisons, isnan, logical ops),
 *   3. raises PyTorch's errors for what the op does not support,
 *   4. for in-place / out= calls checks the output (shape, can_cast, memory overlap),
 *   5. casts tensor inputs to the compute dtype, and passes 0-dim CPU tensors (Python numbers
 *      among them) as scalar values instead (the kernel contract: in[k] == NULL means operand k
 *      is args.scalars[1 + k]), which is also how a CPU scalar meets a CUDA tensor,
 *   6. dispatches into the output, or into a temporary of the result dtype that is then copied
 *      into an output of another dtype (`int_tensor.add_(...)`, `x_fp16 += x_fp32`).
 * Autograd: see the public frontends at the end.
 * Scalars are rounded to the compute dtype first, as PyTorch's TensorIterator does, except where
 * torch's CPU kernels read the original value in opmath precision (the second operand of mul and
 * div; a float32/float64 pow exponent), so fp16/bf16 results match torch bit for bit. */
#include <math.h>
#include <string.h>

#include "autocast.h"
#include "derivatives.h"
#include "elementwise_forms.h"
#include "ops.h"

/* ------------------------------------------------------------------ per-op rules (ops.def) */

enum {
    EW_FLOAT_RESULT = 1 << 0,         /* integer/bool inputs compute in the default float dtype */
    EW_BOOL_RESULT = 1 << 1,          /* the output is bool */
    EW_NO_BOOL = 1 << 2,              /* a bool compute dtype is not implemented */
    EW_FLOAT_ONLY = 1 << 3,           /* only floating compute dtypes are implemented */
    EW_INTEGRAL_ONLY = 1 << 4,        /* only integer and bool compute dtypes (bitwise ops) */
    EW_IDENTITY_ON_INTEGRAL = 1 << 5, /* floor/ceil/round of integers: a copy */
    EW_CONST_ON_INTEGRAL = 1 << 6,    /* isfinite/isnan/isinf of integers: a constant */
};

typedef struct ew_rule {
    unsigned flags;
    const char *kernel; /* the name PyTorch's "... not implemented for 'Bool'" errors quote */
} ew_rule;

/* The RULE and "torch_kernel" columns of the elementwise rows (WHERE, a TERNARY row of its own
 * schema, has no rule flags). */
static const ew_rule rules[AMPC_NUM_OPS] = {
#define AMPC_EW_OP(id, name, kind, ac, grad, save, rule, tkernel, form, dtypes, stem, bind) [AMPC_OP_##id] = {rule, tkernel},
#include "ops.def"
#undef AMPC_EW_OP
    [AMPC_OP_WHERE] = {0, "where_cpu"},
};

static int op_arity(ampc_op op) {
    ampc_op_kind k = ampc_op_kind_of(op);
    return k == AMPC_KIND_UNARY ? 1 : k == AMPC_KIND_TERNARY ? 3 : 2;
}

/* torch.can_cast: no float -> integer, no non-bool -> bool. */
static bool can_cast(ampc_dtype from, ampc_dtype to) {
    if (ampc_dtype_is_floating(from) && ampc_dtype_is_integral(to, false)) return false;
    if (from != AMPC_BOOL && to == AMPC_BOOL) return false;
    return true;
}

/* ------------------------------------------------------------------ one call */

typedef struct ew_call {
    ampc_op op;
    int n_in;
    const ampc_tensor *in[3];
    ampc_scalar params[2]; /* ADD/SUB: alpha; CLAMP: min, max; BIND_PARAMS2 rows: their two */
    int64_t mode;          /* DIV: 0 true, 1 trunc, 2 floor; AMPC_OP_GELU: 0 exact, 1 tanh; ROUND: decimals */
} ew_call;

static bool is_cpu_scalar(const ampc_tensor *t) { return t->ndim == 0 && t->device.type == AMPC_CPU; }

/* Which inputs travel as scalar values: 0-dim CPU tensors, while one tensor operand remains
 * (binary: prefer the right operand; where: never the condition). */
static bool passes_as_scalar(const ew_call *c, int k) {
    ampc_op_kind kind = ampc_op_kind_of(c->op);
    if (kind == AMPC_KIND_UNARY || !is_cpu_scalar(c->in[k])) return false;
    if (kind == AMPC_KIND_TERNARY) return k > 0;
    return k == 1 || !is_cpu_scalar(c->in[1]);
}

/* The value of a 0-dim CPU tensor. */
static ampc_scalar cpu_scalar_value(const ampc_tensor *t) { return ampc_scalar_load(ampc_data_ptr(t), t->dtype); }

/* A scalar as it reads after a cast to a floating dtype (integers are left to the kernel,
 * which wraps them to its width). */
static ampc_scalar round_to_dtype(ampc_scalar v, ampc_dtype dt) {
    if (!ampc_dtype_is_floating(dt) || dt == AMPC_FLOAT64 || v.kind == AMPC_SCALAR_NONE) return v;
    float f = v.kind == AMPC_SCALAR_FLOAT ? (float)v.v.f : (float)ampc_scalar_to_int(v);
    if (dt == AMPC_FLOAT16) f = ampc_half_to_f32(ampc_f32_to_half(f));
    if (dt == AMPC_BFLOAT16) f = ampc_bf16_to_f32(ampc_f32_to_bf16(f));
    return ampc_scalar_float(f);
}

/* torch reads these scalars in opmath precision without rounding them to the dtype first (its
 * mul and div kernels take `original_scalar_value`; add and sub round like the other ops). */
static bool scalar_keeps_precision(ampc_op op, int k, ampc_dtype compute) {
    if (k != 1) return false;
    if (op == AMPC_OP_MUL || op == AMPC_OP_DIV) return true;
    return op == AMPC_OP_POW && (compute == AMPC_FLOAT32 || compute == AMPC_FLOAT64);
}

static const char *effective_kernel_name(const ew_call *c) {
    if (c->op == AMPC_OP_DIV && c->mode == 1) return "div_trunc_cpu";
    if (c->op == AMPC_OP_DIV && c->mode == 2) return "div_floor_cpu";
    if (c->op == AMPC_OP_ROUND && c->mode != 0) return "round_cpu";
    if (c->op == AMPC_OP_CLAMP && c->params[0].kind == AMPC_SCALAR_NONE) return "clamp_max_scalar_cpu";
    if (c->op == AMPC_OP_CLAMP && c->params[1].kind == AMPC_SCALAR_NONE) return "clamp_min_scalar_cpu";
    return rules[c->op].kernel;
}

static unsigned effective_flags(const ew_call *c) {
    if (c->op == AMPC_OP_DIV && c->mode != 0) return EW_NO_BOOL; /* trunc/floor keep the dtype */
    if (c->op == AMPC_OP_ROUND && c->mode != 0) return EW_FLOAT_ONLY; /* decimals: floats only */
    return rules[c->op].flags;
}

/* Step 2: the compute dtype and the output dtype. */
static void result_dtypes(const ew_call *c, ampc_dtype *compute, ampc_dtype *out_dt) {
    ampc_result_type_state st;
    ampc_result_type_init(&st);
    for (int k = c->op == AMPC_OP_WHERE ? 1 : 0; k < c->n_in; k++)
        ampc_result_type_update(&st, c->in[k]->dtype, c->in[k]->ndim, c->in[k]->is_wrapped_number);
    if (c->op == AMPC_OP_CLAMP)
        for (int k = 0; k < 2; k++)
            if (c->params[k].kind != AMPC_SCALAR_NONE)
                ampc_result_type_update(&st, ampc_scalar_dtype(c->params[k]), 0, true);
    ampc_dtype common = ampc_result_type_finish(&st);
    unsigned flags = effective_flags(c);
    if ((flags & EW_FLOAT_RESULT) && !ampc_dtype_is_floating(common)) common = ampc_get_default_dtype();
    *compute = common;
    *out_dt = (flags & EW_BOOL_RESULT) ? AMPC_BOOL : common;
}

/* Step 3a: PyTorch's argument errors (raised before anything runs). */
static ampc_status check_arguments(const ew_call *c, ampc_dtype compute) {
    switch (c->op) {
    case AMPC_OP_NEG:
        if (compute == AMPC_BOOL)
            return ampc_set_error(AMPC_E_RUNTIME, "Negation, the `-` operator, on a bool tensor is not supported. If you "
                                                  "are trying to invert a mask, use the `~` or `logical_not()` operator instead.");
        break;
    case AMPC_OP_RELU:
        if (compute == AMPC_BOOL) return ampc_set_error(AMPC_E_RUNTIME, "Boolean inputs not supported for relu");
        break;
    case AMPC_OP_HARDTANH:
        if (compute == AMPC_BOOL) return ampc_set_error(AMPC_E_RUNTIME, "Bool inputs not supported for hardtanh");
        if (ampc_scalar_to_double(c->params[0]) > ampc_scalar_to_double(c->params[1]))
            return ampc_set_error(AMPC_E_VALUE_ERROR, "min_val cannot be greater than max_val");
        break;
    case AMPC_OP_CLAMP:
        if (c->params[0].kind == AMPC_SCALAR_NONE && c->params[1].kind == AMPC_SCALAR_NONE)
            return ampc_set_error(AMPC_E_RUNTIME, "torch.clamp: At least one of 'min' or 'max' must not be None");
        break;
    case AMPC_OP_SUB:
        if (c->in[0]->dtype == AMPC_BOOL && c->in[1]->dtype == AMPC_BOOL)
            return ampc_set_error(AMPC_E_RUNTIME, "Subtraction, the `-` operator, with two bool tensors is not supported. "
                                                  "Use the `^` or `logical_xor()` operator instead.");
        if (c->in[0]->dtype == AMPC_BOOL || c->in[1]->dtype == AMPC_BOOL)
            return ampc_set_error(AMPC_E_RUNTIME, "Subtraction, the `-` operator, with a bool tensor is not supported. "
                                                  "If you are trying to invert a mask, use the `~` or `logical_not()` "
                                                  "operator instead.");
        __attribute__((fallthrough)); /* sub takes alpha like add */
    case AMPC_OP_ADD:
        if (c->params[0].kind == AMPC_SCALAR_FLOAT && !ampc_dtype_is_floating(compute))
            return ampc_set_error(AMPC_E_RUNTIME, "For integral input tensors, argument alpha must not be a floating point number.");
        if (c->params[0].kind == AMPC_SCALAR_BOOL && compute != AMPC_BOOL)
            return ampc_set_error(AMPC_E_RUNTIME, "Boolean alpha only supported for Boolean results.");
        break;
    case AMPC_OP_DIV:
        if (c->mode < 0 || c->mode > 2)
            return ampc_set_error(AMPC_E_RUNTIME, "div expected rounding_mode to be one of None, 'trunc', or 'floor' "
                                                  "but found mode %lld", (long long)c->mode);
        break;
    case AMPC_OP_POW: {
        const ampc_tensor *e = c->in[1];
        if (e->is_wrapped_number && is_cpu_scalar(e) && ampc_dtype_is_integral(c->in[0]->dtype, true) &&
            !ampc_dtype_is_floating(e->dtype) &&
            ampc_scalar_to_int(cpu_scalar_value(e)) < 0)
            return ampc_set_error(AMPC_E_RUNTIME, "Integers to negative integer powers are not allowed.");
        break;
    }
    case AMPC_OP_WHERE:
        if (c->in[0]->dtype != AMPC_BOOL && c->in[0]->dtype != AMPC_UINT8)
            return ampc_set_error(AMPC_E_RUNTIME, "where expected condition to be a boolean tensor, but got a tensor with dtype %s",
                                  ampc_dtype_torch_name(c->in[0]->dtype));
        break;
    case AMPC_OP_POLYGAMMA:
        if (ampc_scalar_to_double(c->params[0]) < 0)
            return ampc_set_error(AMPC_E_RUNTIME, "polygamma(n, x) does not support negative n.");
        break;
    case AMPC_OP_HEAVISIDE:
        if (c->in[0]->dtype != c->in[1]->dtype)
            return ampc_set_error(AMPC_E_RUNTIME, "heaviside is not yet implemented for tensors with different dtypes.");
        break;
    case AMPC_OP_GELU:
        if (c->mode != 0 && c->mode != 1)
            return ampc_set_error(AMPC_E_RUNTIME, "approximate argument must be either none or tanh.");
        break;
    default: break;
    }
    return AMPC_OK;
}

/* Step 3b: dtypes the kernels do not implement, with torch's NotImplementedError text. */
static ampc_status check_kernel_dtype(const ew_call *c, ampc_dtype compute) {
    unsigned flags = effective_flags(c);
    bool bad = ((flags & EW_NO_BOOL) && compute == AMPC_BOOL) ||
               ((flags & EW_FLOAT_ONLY) && !ampc_dtype_is_floating(compute)) ||
               ((flags & EW_INTEGRAL_ONLY) && ampc_dtype_is_floating(compute));
    if (bad)
        return ampc_set_error(AMPC_E_NOT_IMPLEMENTED, "\"%s\" not implemented for '%s'", effective_kernel_name(c),
                              ampc_dtype_torch_name(compute));
    return AMPC_OK;
}

/* ---- memory overlap (PyTorch's has_internal_overlap / get_overlap_status) ---- */


/* True when the elements fill a block of memory exactly once, in some dim order. */
static bool is_non_overlapping_and_dense(const ampc_tensor *t) {
    int order[AMPC_MAX_DIMS], n = 0;
    for (int i = 0; i < t->ndim; i++) {
        if (t->shape[i] == 0) return true;
        if (t->shape[i] == 1) continue;
        int j = n++;
        while (j > 0 && t->strides[order[j - 1]] > t->strides[i]) {
            order[j] = order[j - 1];
            j--;
        }
        order[j] = i;
    }
    int64_t expected = 1;
    for (int j = 0; j < n; j++) {
        if (t->strides[order[j]] != expected) return false;
        expected *= t->shape[order[j]];
    }
    return true;
}

/* [begin, end) in bytes of the memory a strided tensor touches (strides are never negative). */
static void memory_range(const ampc_tensor *t, const char **begin, const char **end) {
    int64_t item = (int64_t)ampc_dtype_itemsize(t->dtype), last = 0;
    for (int i = 0; i < t->ndim; i++) last += (t->shape[i] - 1) * t->strides[i];
    *begin = (const char *)ampc_data_ptr(t);
    *end = *begin + (ampc_numel(t) ? (last + 1) * item : 0);
}

typedef enum { OVERLAP_NONE, OVERLAP_FULL, OVERLAP_PARTIAL, OVERLAP_UNKNOWN } overlap_kind;

static overlap_kind overlap_between(const ampc_tensor *out, const ampc_tensor *in) {
    if (out->storage != in->storage || ampc_numel(out) == 0 || ampc_numel(in) == 0) return OVERLAP_NONE;
    const char *ob, *oe, *ib, *ie;
    memory_range(out, &ob, &oe);
    memory_range(in, &ib, &ie);
    if (!(ob < ie && ib < oe)) return OVERLAP_NONE;
    bool same_view = ob == ib && out->dtype == in->dtype && out->ndim == in->ndim &&
                     memcmp(out->shape, in->shape, sizeof(int64_t) * (size_t)out->ndim) == 0 &&
                     memcmp(out->strides, in->strides, sizeof(int64_t) * (size_t)out->ndim) == 0;
    if (same_view) return OVERLAP_FULL;
    if (is_non_overlapping_and_dense(out) && is_non_overlapping_and_dense(in)) return OVERLAP_PARTIAL;
    return OVERLAP_UNKNOWN;
}

/* ------------------------------------------------------------------ the kernel form
 * Which loop of the op runs (elementwise_forms.h) and its parameters, from the call's mode,
 * parameters and scalar operands. Both backends run what this picks. */
static void choose_form(const ew_call *c, ampc_dtype compute, ampc_elementwise_args *e) {
    e->form = (int)ampc_ew_form_of_op(c->op); /* its own row's loop unless a variant applies */
    e->p0 = e->p1 = ampc_scalar_none();
    e->exponent = 0;
    switch (c->op) {
    case AMPC_OP_ADD:
    case AMPC_OP_SUB: {
        /* torch: alpha.to<scalar_t>(); alpha 1 takes the plain loop */
        ampc_scalar alpha = round_to_dtype(c->params[0], compute);
        if (alpha.kind != AMPC_SCALAR_NONE && ampc_scalar_to_double(alpha) != 1) {
            e->form = c->op == AMPC_OP_ADD ? AMPC_EW_FORM_ADD_ALPHA : AMPC_EW_FORM_SUB_ALPHA;
            e->p0 = alpha;
        }
        break;
    }
    case AMPC_OP_GELU:
        if (c->mode == 1) e->form = AMPC_EW_FORM_GELU_TANH;
        break;
    case AMPC_OP_ROUND:
        if (c->mode != 0) {
            e->form = c->mode > 0 ? AMPC_EW_FORM_ROUND_DECIMALS : AMPC_EW_FORM_ROUND_NEG_DECIMALS;
            e->p0 = ampc_scalar_float(pow(10.0, (double)(c->mode > 0 ? c->mode : -c->mode)));
        }
        break;
    case AMPC_OP_CLAMP:
        e->p0 = c->params[0].kind == AMPC_SCALAR_NONE ? ampc_ew_clamp_open_bound(compute, false) : c->params[0];
        e->p1 = c->params[1].kind == AMPC_SCALAR_NONE ? ampc_ew_clamp_open_bound(compute, true) : c->params[1];
        break;
    case AMPC_OP_DIV: {
        /* A divisor read as a scalar value (absent, or one element against a larger output)
         * takes fp16/bf16 floor division off torch's stepwise form, as torch's CPU kernel does. */
        bool b_is_scalar = !e->b || (e->a && ampc_numel(e->out) > 1 && ampc_numel(e->b) == 1);
        if (c->mode == 1) e->form = AMPC_EW_FORM_DIV_TRUNC;
        if (c->mode == 2) {
            e->form = AMPC_EW_FORM_DIV_FLOOR;
            if (!b_is_scalar && compute == AMPC_FLOAT16) e->form = AMPC_EW_FORM_DIV_FLOOR_STEPWISE_F16;
            if (!b_is_scalar && compute == AMPC_BFLOAT16) e->form = AMPC_EW_FORM_DIV_FLOOR_STEPWISE_BF16;
        }
        break;
    }
    case AMPC_OP_POW:
        if (!e->b) { /* x ** e: torch's special cases of a scalar exponent become unary forms */
            double x = ampc_scalar_to_double(e->scalar_b);
            e->p0 = e->scalar_b;
            e->exponent = x;
            switch (ampc_ew_pow_scalar_form(ampc_dtype_is_floating(compute), x)) {
            case AMPC_POW_SQUARE: e->form = AMPC_EW_FORM_POW_SQUARE; break;
            case AMPC_POW_CUBE: e->form = AMPC_EW_FORM_POW_CUBE; break;
            case AMPC_POW_INV_SQUARE: e->form = AMPC_EW_FORM_POW_INV_SQUARE; break;
            case AMPC_POW_SQRT: e->form = AMPC_EW_FORM_SQRT; break;
            case AMPC_POW_RSQRT: e->form = AMPC_EW_FORM_RSQRT; break;
            case AMPC_POW_RECIPROCAL: e->form = AMPC_EW_FORM_RECIPROCAL; break;
            default: e->form = compute == AMPC_FLOAT32 ? AMPC_EW_FORM_POW_SCALAR_WIDE : AMPC_EW_FORM_POW_SCALAR; break;
            }
        }
        break;
    case AMPC_OP_LOGIT: /* fp16/bf16 round after every step, as torch's kernels on the 16-bit type */
    case AMPC_OP_XLOGY:
        e->p0 = c->params[0];
        if (compute == AMPC_FLOAT16) e->form = c->op == AMPC_OP_LOGIT ? AMPC_EW_FORM_LOGIT_F16 : AMPC_EW_FORM_XLOGY_F16;
        if (compute == AMPC_BFLOAT16) e->form = c->op == AMPC_OP_LOGIT ? AMPC_EW_FORM_LOGIT_BF16 : AMPC_EW_FORM_XLOGY_BF16;
        break;
    case AMPC_OP_FMAX:
    case AMPC_OP_FMIN:
        if (compute == AMPC_BFLOAT16) e->form = c->op == AMPC_OP_FMAX ? AMPC_EW_FORM_FMAX_BF16 : AMPC_EW_FORM_FMIN_BF16;
        break;
    case AMPC_OP_NEXTAFTER: /* fp16/bf16 step in their own format */
        if (compute == AMPC_FLOAT16) e->form = AMPC_EW_FORM_NEXTAFTER_F16;
        if (compute == AMPC_BFLOAT16) e->form = AMPC_EW_FORM_NEXTAFTER_BF16;
        break;
    default:
        /* the BIND_PARAMS2 rows of ops.def keep their two parameters in params[0..1] */
        e->p0 = c->params[0];
        e->p1 = c->params[1];
        break;
    }
}

/* ------------------------------------------------------------------ the run */

/* The result of a call whose value needs no kernel: a fill or a copy of an input. */
typedef enum { SHORTCUT_NONE, SHORTCUT_FILL, SHORTCUT_COPY } shortcut_kind;

static shortcut_kind find_shortcut(const ew_call *c, ampc_dtype compute, ampc_scalar *fill_value) {
    unsigned flags = effective_flags(c);
    bool integral = !ampc_dtype_is_floating(compute);
    if ((flags & EW_IDENTITY_ON_INTEGRAL) && integral && compute != AMPC_BOOL && c->mode == 0) return SHORTCUT_COPY;
    if ((flags & EW_CONST_ON_INTEGRAL) && integral) {
        *fill_value = ampc_scalar_bool(c->op == AMPC_OP_ISFINITE);
        return SHORTCUT_FILL;
    }
    if (c->op == AMPC_OP_SIGN && compute == AMPC_BOOL) return SHORTCUT_COPY;
    if (c->op == AMPC_OP_CLAMP && !integral) {
        for (int k = 0; k < 2; k++) {
            if (c->params[k].kind == AMPC_SCALAR_FLOAT && isnan(c->params[k].v.f)) {
                *fill_value = ampc_scalar_float(NAN);
                return SHORTCUT_FILL;
            }
        }
    }
    if (c->op == AMPC_OP_POW && c->in[1]->is_wrapped_number && is_cpu_scalar(c->in[1])) { /* x ** 0 == 1, x ** 1 == x */
        double e = ampc_scalar_to_double(cpu_scalar_value(c->in[1]));
        if (e == 0) {
            *fill_value = ampc_scalar_int(1);
            return SHORTCUT_FILL;
        }
        if (e == 1) return SHORTCUT_COPY;
    }
    return SHORTCUT_NONE;
}

/* Runs a call into `out` (NULL: a new tensor of the result shape and dtype). Returns a new
 * reference to the result (to `out` itself when given). */
static ampc_tensor *ew_run(const ew_call *c, ampc_tensor *out) {
    const char *name = ampc_op_name(c->op);
    for (int k = 0; k < c->n_in; k++)
        if (!c->in[k]) {
            ampc_set_error(AMPC_E_VALUE, "%s: input %d is missing", name, k);
            return NULL;
        }

    /* 1. shape */
    int nd = c->in[0]->ndim;
    int64_t shape[AMPC_MAX_DIMS];
    if (nd) memcpy(shape, c->in[0]->shape, sizeof(int64_t) * (size_t)nd);
    for (int k = 1; k < c->n_in; k++) {
        int64_t so_far[AMPC_MAX_DIMS];
        if (nd) memcpy(so_far, shape, sizeof(int64_t) * (size_t)nd);
        if (ampc_broadcast_shapes(name, nd, so_far, c->in[k]->ndim, c->in[k]->shape, &nd, shape) != AMPC_OK) return NULL;
    }

    /* 2. dtypes, 3. argument errors */
    ampc_dtype compute, out_dt;
    result_dtypes(c, &compute, &out_dt);
    if (check_arguments(c, compute) != AMPC_OK) return NULL;

    /* 4. the given output */
    ampc_device dev = c->in[0]->device;
    for (int k = 0; k < c->n_in; k++)
        if (!is_cpu_scalar(c->in[k])) {
            dev = c->in[k]->device;
            break;
        }
    if (out) {
        char so[160], sb[160];
        if (out->ndim != nd || (nd && memcmp(out->shape, shape, sizeof(int64_t) * (size_t)nd) != 0)) {
            ampc_set_error(AMPC_E_RUNTIME, "output with shape %s doesn't match the broadcast shape %s",
                           ampc_shape_str(out->ndim, out->shape, so, sizeof so), ampc_shape_str(nd, shape, sb, sizeof sb));
            return NULL;
        }
        if (!can_cast(out_dt, out->dtype)) {
            ampc_set_error(AMPC_E_RUNTIME, "result type %s can't be cast to the desired output type %s",
                           ampc_dtype_torch_name(out_dt), ampc_dtype_torch_name(out->dtype));
            return NULL;
        }
        if (ampc_check_writable_once(out) != AMPC_OK) return NULL;
        for (int k = 0; k < c->n_in; k++)
            if (overlap_between(out, c->in[k]) == OVERLAP_PARTIAL) {
                ampc_set_error(AMPC_E_RUNTIME, "unsupported operation: some elements of the input tensor and the written-to "
                                               "tensor refer to a single memory location. Please clone() the tensor before "
                                               "performing the operation.");
                return NULL;
            }
        dev = out->device;
    }

    /* results that need no kernel */
    ampc_scalar fill_value = ampc_scalar_none();
    shortcut_kind shortcut = find_shortcut(c, compute, &fill_value);
    if (shortcut == SHORTCUT_NONE && check_kernel_dtype(c, compute) != AMPC_OK) return NULL;
    ampc_tensor *result = out;
    if (result)
        ampc_tensor_incref(result);
    else if (!(result = ampc_empty(nd, shape, out_dt, dev)))
        return NULL;
    if (shortcut != SHORTCUT_NONE) {
        ampc_status st = AMPC_OK;
        if (shortcut == SHORTCUT_FILL)
            st = ampc_fill_(result, fill_value);
        else if (overlap_between(result, c->in[0]) != OVERLAP_FULL)
            st = ampc_copy_(result, c->in[0]);
        if (st != AMPC_OK) {
            ampc_tensor_decref(result);
            return NULL;
        }
        return result;
    }

    /* 5. kernel inputs */
    const ampc_tensor *operand[3] = {NULL, NULL, NULL};
    ampc_scalar scalar[3] = {ampc_scalar_none(), ampc_scalar_none(), ampc_scalar_none()};
    ampc_tensor *owned[3] = {NULL, NULL, NULL};
    ampc_tensor *target = NULL;
    ampc_status st = AMPC_OK;
    for (int k = 0; k < c->n_in && st == AMPC_OK; k++) {
        const ampc_tensor *t = c->in[k];
        ampc_dtype want = (c->op == AMPC_OP_WHERE && k == 0) ? AMPC_BOOL : compute;
        if (passes_as_scalar(c, k)) {
            ampc_scalar v = cpu_scalar_value(t);
            scalar[k] = scalar_keeps_precision(c->op, k, compute) ? v : round_to_dtype(v, compute);
            continue;
        }
        ampc_device to_dev = is_cpu_scalar(t) ? dev : t->device; /* a CPU 0-dim condition moves */
        owned[k] = ampc_to(t, want, to_dev, false);
        if (!owned[k]) {
            st = ampc_last_status();
            break;
        }
        /* an input that overlaps the output in a way an elementwise pass cannot read safely */
        if (out && overlap_between(out, owned[k]) == OVERLAP_UNKNOWN) {
            ampc_tensor *copy = ampc_clone(owned[k]);
            ampc_tensor_decref(owned[k]);
            owned[k] = copy;
            if (!copy) {
                st = ampc_last_status();
                break;
            }
        }
        operand[k] = owned[k];
    }

    /* 6. dispatch, through a temporary when the output has another dtype */
    if (st == AMPC_OK) {
        target = result->dtype == out_dt ? result : ampc_empty(nd, shape, out_dt, result->device);
        if (!target) st = ampc_last_status();
    }
    if (st == AMPC_OK) {
        if (c->op == AMPC_OP_WHERE) {
            ampc_where_args w = {.out = target, .cond = operand[0], .x = operand[1], .y = operand[2],
                                 .x_scalar = scalar[1], .y_scalar = scalar[2]};
            st = ampc_dispatch_where(AMPC_OP_WHERE, &w);
        } else {
            ampc_elementwise_args e = {.out = target, .a = operand[0], .b = operand[1], .scalar_a = scalar[0],
                                       .scalar_b = scalar[1], .scalar_c = ampc_scalar_none()};
            choose_form(c, compute, &e);
            /* torch converts a scalar exponent to the tensor's floating type first: 1e5 for fp16 overflows */
            if (c->op == AMPC_OP_POW && !operand[1] && c->in[1]->is_wrapped_number && !scalar_keeps_precision(c->op, 1, compute))
                st = ampc_check_scalar_fits(cpu_scalar_value(c->in[1]), compute);
            if (st == AMPC_OK) st = ampc_dispatch_elementwise(c->op, &e);
        }
        if (st == AMPC_OK && target != result) st = ampc_copy_(result, target);
        else if (st == AMPC_OK && out) out->storage->version++;
    }
    if (target && target != result) ampc_tensor_decref(target);
    for (int k = 0; k < 3; k++) ampc_tensor_decref(owned[k]);
    if (st != AMPC_OK) {
        ampc_tensor_decref(result);
        return NULL;
    }
    return result;
}

static ew_call make_call(ampc_op op, int n_in, const ampc_tensor *a, const ampc_tensor *b, const ampc_tensor *c) {
    ew_call call;
    memset(&call, 0, sizeof call);
    call.op = op;
    call.n_in = n_in;
    call.in[0] = a;
    call.in[1] = b;
    call.in[2] = c;
    call.params[0] = ampc_scalar_none();
    call.params[1] = ampc_scalar_none();
    return call;
}

static bool check_kind(ampc_op op, ampc_op_kind k1, ampc_op_kind k2, const char *fn) {
    if (op < 0 || op >= AMPC_NUM_OPS || (ampc_op_kind_of(op) != k1 && ampc_op_kind_of(op) != k2)) {
        ampc_set_error(AMPC_E_VALUE, "%s: op %s is not of the right kind", fn, ampc_op_name(op));
        return false;
    }
    return true;
}

/* ------------------------------------------------------------------ public frontends
 * Autograd: a frontend whose inputs require grad hands the call to its ampc_ad_* twin
 * (derivatives_elementwise.c), which calls it again with recording paused and then records one
 * node. Division with a rounding mode is not recorded: its gradient is zero wherever it exists. */

static ampc_tensor *run_new(const ew_call *c) { return ew_run(c, NULL); }

static ampc_status run_in_place(const ew_call *c, ampc_tensor *a) {
    ampc_tensor *r = ew_run(c, a);
    if (!r) return ampc_last_status();
    ampc_tensor_decref(r);
    return AMPC_OK;
}

static bool tracks_grad(int n, const ampc_tensor *a, const ampc_tensor *b, const ampc_tensor *c) {
    const ampc_tensor *ins[3] = {a, b, c};
    return ampc_any_requires_grad(n, ins);
}

ampc_tensor *ampc_unary(ampc_op op, const ampc_tensor *a) {
    ampc_autocast_scope ac;
    int acr = ampc_autocast_enter_op(op, 1, &a, false, &ac);
    if (acr) return acr < 0 ? NULL : ampc_autocast_exit(&ac, ampc_unary(op, ac.t[0]));
    if (!check_kind(op, AMPC_KIND_UNARY, AMPC_KIND_UNARY, "ampc_unary")) return NULL;
    if (tracks_grad(1, a, NULL, NULL)) return ampc_ad_unary(op, a);
    ew_call c = make_call(op, 1, a, NULL, NULL);
    return run_new(&c);
}

ampc_status ampc_unary_(ampc_op op, ampc_tensor *a) {
    if (!check_kind(op, AMPC_KIND_UNARY, AMPC_KIND_UNARY, "ampc_unary_")) return ampc_last_status();
    if (tracks_grad(1, a, NULL, NULL)) return ampc_ad_unary_(op, a);
    ew_call c = make_call(op, 1, a, NULL, NULL);
    return run_in_place(&c, a);
}

/* round's gradient is zero; decimals only change the value, so the record is ROUND's. */
static ampc_status round_call(ampc_tensor *a_inplace, const ampc_tensor *a, int64_t decimals, ampc_tensor **out) {
    ew_call c = make_call(AMPC_OP_ROUND, 1, a, NULL, NULL);
    c.mode = decimals;
    if (decimals == 0) {
        if (!a_inplace) return (*out = ampc_unary(AMPC_OP_ROUND, a)) ? AMPC_OK : ampc_last_status();
        return ampc_unary_(AMPC_OP_ROUND, a_inplace);
    }
    bool track = tracks_grad(1, a, NULL, NULL);
    if (a_inplace && track) AMPC_TRY(ampc_autograd_check_inplace(a_inplace));
    bool previous = track ? ampc_grad_mode_pause() : false;
    ampc_tensor *r = ew_run(&c, a_inplace);
    if (track) ampc_grad_mode_restore(previous);
    ampc_status st = r ? AMPC_OK : ampc_last_status();
    if (st == AMPC_OK && track)
        st = a_inplace ? ampc_ad_record_unary_(AMPC_OP_ROUND, NULL, a_inplace, NULL) : ampc_ad_record_unary(AMPC_OP_ROUND, a, r, NULL);
    if (st != AMPC_OK || a_inplace) ampc_tensor_decref(r);
    else *out = r;
    return st;
}

ampc_tensor *ampc_round(const ampc_tensor *a, int64_t decimals) {
    ampc_tensor *out = NULL;
    return round_call(NULL, a, decimals, &out) == AMPC_OK ? out : NULL;
}

ampc_status ampc_round_(ampc_tensor *a, int64_t decimals) { return round_call(a, a, decimals, NULL); }

ampc_tensor *ampc_gelu(const ampc_tensor *a, bool tanh_approximation) {
    if (tracks_grad(1, a, NULL, NULL)) return ampc_ad_gelu(a, tanh_approximation);
    ew_call c = make_call(AMPC_OP_GELU, 1, a, NULL, NULL);
    c.mode = tanh_approximation ? 1 : 0;
    return run_new(&c);
}

ampc_tensor *ampc_elementwise_params(ampc_op op, const ampc_tensor *a, const ampc_tensor *b, ampc_scalar p0,
                                     ampc_scalar p1) {
    ampc_op_kind kind = ampc_op_is_elementwise(op) ? ampc_op_kind_of(op) : AMPC_KIND_TERNARY;
    if (kind != AMPC_KIND_UNARY && kind != AMPC_KIND_BINARY) {
        ampc_set_error(AMPC_E_VALUE, "elementwise_params: %s is not a unary or binary elementwise op", ampc_op_name(op));
        return NULL;
    }
    int n = kind == AMPC_KIND_UNARY ? 1 : 2;
    ampc_autocast_scope ac;
    int acr = ampc_autocast_enter_op(op, n, (const ampc_tensor *[]){a, b}, false, &ac);
    if (acr) return acr < 0 ? NULL : ampc_autocast_exit(&ac, ampc_elementwise_params(op, ac.t[0], n > 1 ? ac.t[1] : NULL, p0, p1));
    if (tracks_grad(n, a, b, NULL)) return ampc_ad_elementwise_params(op, a, b, p0, p1);
    ew_call c = make_call(op, n, a, b, NULL);
    c.params[0] = p0;
    c.params[1] = p1;
    return run_new(&c);
}

ampc_status ampc_elementwise_params_(ampc_op op, ampc_tensor *a, ampc_scalar p0, ampc_scalar p1) {
    if (!check_kind(op, AMPC_KIND_UNARY, AMPC_KIND_UNARY, "ampc_elementwise_params_")) return ampc_last_status();
    if (tracks_grad(1, a, NULL, NULL)) return ampc_ad_elementwise_params_(op, a, p0, p1);
    ew_call c = make_call(op, 1, a, NULL, NULL);
    c.params[0] = p0;
    c.params[1] = p1;
    return run_in_place(&c, a);
}

ampc_tensor *ampc_clamp(const ampc_tensor *a, ampc_scalar min, ampc_scalar max) {
    if (tracks_grad(1, a, NULL, NULL)) return ampc_ad_clamp(a, min, max);
    ew_call c = make_call(AMPC_OP_CLAMP, 1, a, NULL, NULL);
    c.params[0] = min;
    c.params[1] = max;
    return run_new(&c);
}

ampc_status ampc_clamp_(ampc_tensor *a, ampc_scalar min, ampc_scalar max) {
    if (tracks_grad(1, a, NULL, NULL)) return ampc_ad_clamp_(a, min, max);
    ew_call c = make_call(AMPC_OP_CLAMP, 1, a, NULL, NULL);
    c.params[0] = min;
    c.params[1] = max;
    return run_in_place(&c, a);
}

/* A binary call; `mode` is DIV's rounding mode, which ampc_binary's signature has no room for. */
static bool binary_call(ampc_op op, const ampc_tensor *a, const ampc_tensor *b, ampc_scalar alpha, int64_t mode,
                        ew_call *c) {
    if (!check_kind(op, AMPC_KIND_BINARY, AMPC_KIND_COMPARE, "ampc_binary")) return false;
    *c = make_call(op, 2, a, b, NULL);
    if (op == AMPC_OP_ADD || op == AMPC_OP_SUB) c->params[0] = alpha;
    c->mode = mode;
    return true;
}

ampc_tensor *ampc_binary(ampc_op op, const ampc_tensor *a, const ampc_tensor *b, ampc_scalar alpha) {
    ampc_autocast_scope ac; /* pow (fp32), atan2 (promote) */
    int acr = ampc_autocast_enter_op(op, 2, (const ampc_tensor *[]){a, b}, false, &ac);
    if (acr) return acr < 0 ? NULL : ampc_autocast_exit(&ac, ampc_binary(op, ac.t[0], ac.t[1], alpha));
    ew_call c;
    if (!binary_call(op, a, b, alpha, 0, &c)) return NULL;
    if (tracks_grad(2, a, b, NULL)) return ampc_ad_binary(op, a, b, alpha);
    return run_new(&c);
}

ampc_status ampc_binary_(ampc_op op, ampc_tensor *a, const ampc_tensor *b, ampc_scalar alpha) {
    ew_call c;
    if (!binary_call(op, a, b, alpha, 0, &c)) return ampc_last_status();
    if (tracks_grad(2, a, b, NULL)) return ampc_ad_binary_(op, a, b, alpha);
    return run_in_place(&c, a);
}

ampc_tensor *ampc_div_mode(const ampc_tensor *a, const ampc_tensor *b, int rounding_mode) {
    if (rounding_mode == 0) return ampc_binary(AMPC_OP_DIV, a, b, ampc_scalar_none());
    ew_call c;
    if (!binary_call(AMPC_OP_DIV, a, b, ampc_scalar_none(), rounding_mode, &c)) return NULL;
    bool track = tracks_grad(2, a, b, NULL);
    ampc_tensor *out = run_new(&c);
    if (out && track && ampc_ad_record_div_mode(a, b, out) != AMPC_OK) out = (ampc_tensor_decref(out), NULL);
    return out;
}

ampc_status ampc_div_mode_(ampc_tensor *a, const ampc_tensor *b, int rounding_mode) {
    if (rounding_mode == 0) return ampc_binary_(AMPC_OP_DIV, a, b, ampc_scalar_none());
    AMPC_TRY(ampc_autograd_check_inplace(a));
    ew_call c;
    if (!binary_call(AMPC_OP_DIV, a, b, ampc_scalar_none(), rounding_mode, &c)) return ampc_last_status();
    bool track = tracks_grad(2, a, b, NULL);
    AMPC_TRY(run_in_place(&c, a));
    return track ? ampc_ad_record_div_mode(a, b, a) : AMPC_OK;
}

/* clamp with tensor bounds (either may be NULL): minimum(maximum(a, min), max), which promotes
 * and propagates NaN from every operand like torch.clamp(Tensor, Tensor, Tensor). */
ampc_tensor *ampc_clamp_tensors(const ampc_tensor *a, const ampc_tensor *min, const ampc_tensor *max) {
    if (!min && !max) {
        ampc_set_error(AMPC_E_RUNTIME, "torch.clamp: At least one of 'min' or 'max' must not be None");
        return NULL;
    }
    ampc_tensor *lower = min ? ampc_binary(AMPC_OP_MAXIMUM, a, min, ampc_scalar_none()) : NULL;
    if (min && !lower) return NULL;
    if (!max) return lower;
    ampc_tensor *r = ampc_binary(AMPC_OP_MINIMUM, lower ? lower : a, max, ampc_scalar_none());
    ampc_tensor_decref(lower);
    return r;
}

ampc_status ampc_clamp_tensors_(ampc_tensor *a, const ampc_tensor *min, const ampc_tensor *max) {
    if (!min && !max) return ampc_set_error(AMPC_E_RUNTIME, "torch.clamp: At least one of 'min' or 'max' must not be None");
    if (min) AMPC_TRY(ampc_binary_(AMPC_OP_MAXIMUM, a, min, ampc_scalar_none()));
    if (max) AMPC_TRY(ampc_binary_(AMPC_OP_MINIMUM, a, max, ampc_scalar_none()));
    return AMPC_OK;
}

/* ~x: logical not of bools, x ^ -1 of integers (two's complement NOT), as torch.bitwise_not. */
ampc_tensor *ampc_bitwise_not(const ampc_tensor *a) {
    if (a->dtype == AMPC_BOOL) return ampc_unary(AMPC_OP_LOGICAL_NOT, a);
    if (!ampc_dtype_is_integral(a->dtype, false)) {
        ampc_set_error(AMPC_E_NOT_IMPLEMENTED, "\"bitwise_not_cpu\" not implemented for '%s'", ampc_dtype_torch_name(a->dtype));
        return NULL;
    }
    ampc_tensor *all_ones = ampc_wrap_scalar(ampc_scalar_int(-1), ampc_cpu_device());
    if (!all_ones) return NULL;
    ampc_tensor *r = ampc_binary(AMPC_OP_BITWISE_XOR, a, all_ones, ampc_scalar_none());
    ampc_tensor_decref(all_ones);
    return r;
}

ampc_tensor *ampc_where(const ampc_tensor *cond, const ampc_tensor *a, const ampc_tensor *b) {
    if (tracks_grad(3, cond, a, b)) return ampc_ad_where(cond, a, b);
    ew_call c = make_call(AMPC_OP_WHERE, 3, cond, a, b);
    return run_new(&c);
}

/* out= calls are not differentiable, as in PyTorch. */
ampc_status ampc_elementwise_into(ampc_op op, ampc_tensor *out, int n_in, const ampc_tensor **ins,
                                  const ampc_scalar *scalars, int n_scalars) {
    if (!ampc_op_is_elementwise(op)) return ampc_set_error(AMPC_E_VALUE, "elementwise_into: %s is not an elementwise op", ampc_op_name(op));
    if (!out || n_in != op_arity(op) || !ins)
        return ampc_set_error(AMPC_E_VALUE, "elementwise_into: %s takes an output and %d inputs, got %d", ampc_op_name(op),
                              op_arity(op), n_in);
    ew_call c = make_call(op, n_in, ins[0], n_in > 1 ? ins[1] : NULL, n_in > 2 ? ins[2] : NULL);
    /* scalars: the op's parameters in ops.def order; DIV's rounding mode, AMPC_OP_GELU's approximation
     * and ROUND's decimals ride as an INT scalars[0]. */
    for (int k = 0; k < n_scalars && k < 2; k++) {
        if ((op == AMPC_OP_DIV || op == AMPC_OP_GELU || op == AMPC_OP_ROUND) && k == 0)
            c.mode = ampc_scalar_to_int(scalars[0]);
        else
            c.params[k] = scalars[k];
    }
    if (ampc_any_requires_grad(c.n_in, c.in))
        return ampc_set_error(AMPC_E_RUNTIME, "%s(): functions with out=... arguments don't support automatic "
                                              "differentiation, but one of the arguments requires grad.", ampc_op_name(op));
    return run_in_place(&c, out);
}
