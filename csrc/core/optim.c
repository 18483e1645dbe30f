/* optim.c: frontends of the fused optimizer steps (optim.h): argument checks, the kernel's slot
 * layout, copies for the rare non-contiguous tensor, then one dispatch for the whole list. */
#include "optim.h"

#include <stdlib.h>
#include <string.h>

#include "kernel_args.h"

/* What one algorithm keeps per parameter: the names of its state buffers (NULL: slot unused under
 * these options) and whether it counts steps. */
typedef struct optim_layout {
    ampc_op op;
    const char *state_names[3];
    bool uses_step;
} optim_layout;

static bool same_shape(const ampc_tensor *a, const ampc_tensor *b) {
    if (a->ndim != b->ndim) return false;
    for (int d = 0; d < a->ndim; d++)
        if (a->shape[d] != b->shape[d]) return false;
    return true;
}


static ampc_status check_on_device(const char *op, const char *what, int i, const ampc_tensor *t, ampc_device dev) {
    if (ampc_device_eq(t->device, dev)) return AMPC_OK;
    char a[32], b[32];
    return ampc_set_error(AMPC_E_RUNTIME,
                          "Expected all tensors to be on the same device, but found at least two devices, %s and %s! "
                          "(in %s, %s %d)",
                          ampc_device_str(dev, a, sizeof a), ampc_device_str(t->device, b, sizeof b), op, what, i);
}

/* A per-parameter tensor (grad, master, state) must match its parameter's shape and have `dt`. */
static ampc_status check_companion(const char *op, const char *what, int i, const ampc_tensor *t,
                                   const ampc_tensor *param, ampc_dtype dt, bool written) {
    if (!t) return ampc_set_error(AMPC_E_VALUE, "%s: %s %d is missing", op, what, i);
    AMPC_TRY(check_on_device(op, what, i, t, param->device));
    if (t->dtype != dt)
        return ampc_set_error(AMPC_E_TYPE, "%s: %s %d has dtype %s, expected %s", op, what, i,
                              ampc_dtype_name(t->dtype), ampc_dtype_name(dt));
    if (!same_shape(t, param)) {
        char a[64], b[64];
        return ampc_set_error(AMPC_E_RUNTIME, "%s: %s %d has shape %s but its parameter has shape %s", op, what, i,
                              ampc_shape_str(t->ndim, t->shape, a, sizeof a),
                              ampc_shape_str(param->ndim, param->shape, b, sizeof b));
    }
    if (written && ampc_has_internal_overlap(t))
        return ampc_set_error(AMPC_E_RUNTIME,
                              "%s: unsupported operation: more than one element of %s %d refers to a single memory "
                              "location. Please clone() the tensor before performing the operation.", op, what, i);
    return AMPC_OK;
}

static ampc_status check_scalar(const char *op, const char *what, int i, const ampc_tensor *t, ampc_device dev) {
    if (!t) return ampc_set_error(AMPC_E_VALUE, "%s: %s %d is missing", op, what, i);
    AMPC_TRY(check_on_device(op, what, i, t, dev));
    if (t->dtype != AMPC_FLOAT32 || ampc_numel(t) != 1)
        return ampc_set_error(AMPC_E_TYPE, "%s: %s must be a 1-element float32 tensor, got %lld elements of %s", op,
                              what, (long long)ampc_numel(t), ampc_dtype_name(t->dtype));
    return AMPC_OK;
}

static ampc_status check_args(const optim_layout *L, const ampc_optim_tensors *t) {
    const char *op = ampc_op_name(L->op);
    ampc_tensor *const *p = t->params;
    ampc_device dev = p[0]->device;
    ampc_dtype dt = p[0]->dtype;
    if (dt != AMPC_FLOAT32 && dt != AMPC_FLOAT64 && dt != AMPC_FLOAT16 && dt != AMPC_BFLOAT16)
        return ampc_set_error(AMPC_E_TYPE, "%s: parameters must be floating point, got %s", op, ampc_dtype_name(dt));
    if (t->masters && dt != AMPC_FLOAT16 && dt != AMPC_BFLOAT16)
        return ampc_set_error(AMPC_E_TYPE, "%s: master weights are for float16/bfloat16 parameters, got %s", op,
                              ampc_dtype_name(dt));
    if (L->uses_step && !t->steps) return ampc_set_error(AMPC_E_VALUE, "%s: step counters are missing", op);
    for (int j = 0; j < 3; j++)
        if (L->state_names[j] && !t->state[j])
            return ampc_set_error(AMPC_E_VALUE, "%s: the %s buffers are missing", op, L->state_names[j]);
    ampc_dtype state_dt = t->masters ? AMPC_FLOAT32 : dt;
    for (int i = 0; i < t->n; i++) {
        if (!p[i]) return ampc_set_error(AMPC_E_VALUE, "%s: param %d is missing", op, i);
        AMPC_TRY(check_on_device(op, "param", i, p[i], dev));
        if (p[i]->dtype != dt)
            return ampc_set_error(AMPC_E_TYPE, "%s: all parameters of one call must share a dtype, got %s and %s", op,
                                  ampc_dtype_name(dt), ampc_dtype_name(p[i]->dtype));
        if (ampc_has_internal_overlap(p[i]))
            return ampc_set_error(AMPC_E_RUNTIME,
                                  "%s: unsupported operation: more than one element of param %d refers to a single "
                                  "memory location. Please clone() the tensor before performing the operation.", op, i);
        AMPC_TRY(check_companion(op, "grad", i, t->grads[i], p[i], dt, t->grad_scale != NULL));
        if (t->masters) AMPC_TRY(check_companion(op, "master weight", i, t->masters[i], p[i], AMPC_FLOAT32, true));
        if (L->uses_step) AMPC_TRY(check_scalar(op, "step", i, t->steps[i], dev));
        for (int j = 0; j < 3; j++) {
            if (!L->state_names[j]) continue;
            if (ampc_optim_scalar_state(L->op, j)) AMPC_TRY(check_scalar(op, L->state_names[j], i, t->state[j][i], dev));
            else AMPC_TRY(check_companion(op, L->state_names[j], i, t->state[j][i], p[i], state_dt, true));
        }
    }
    if (t->grad_scale) AMPC_TRY(check_scalar(op, "grad_scale", 0, t->grad_scale, dev));
    if (t->found_inf) AMPC_TRY(check_scalar(op, "found_inf", 0, t->found_inf, dev));
    return AMPC_OK;
}

/* The same memory as `t` without its autograd identity: the optimizer writes parameters as data,
 * outside any graph (PyTorch steps under no_grad), so copies here must not go through autograd. */
static ampc_tensor *raw_view(const ampc_tensor *t) {
    ampc_tensor *v = ampc_tensor_from_storage(t->storage, t->offset, t->ndim, t->shape, t->strides, t->dtype);
    if (v) v->device = t->device;
    return v;
}

/* `args` comes with the op's options field set; the tensors are filled in here. */
static ampc_status fused_step(const optim_layout *L, const ampc_optim_tensors *t, ampc_fused_optim_args *args) {
    if (t->n < 0) return ampc_set_error(AMPC_E_VALUE, "%s: negative parameter count %d", ampc_op_name(L->op), t->n);
    if (t->n == 0) return AMPC_OK;
    if (!t->params || !t->grads)
        return ampc_set_error(AMPC_E_VALUE, "%s: params and grads are required", ampc_op_name(L->op));
    AMPC_TRY(check_args(L, t));

    /* orig: the caller's tensors in slot order; slots: what the kernel gets (a contiguous copy where
     * the caller's tensor is strided; copied back afterwards). */
    size_t total = (size_t)t->n * AMPC_OPTIM_SLOTS;
    ampc_tensor **orig = (ampc_tensor **)calloc(total, sizeof *orig);
    ampc_tensor **slots = (ampc_tensor **)calloc(total, sizeof *slots);
    if (!orig || !slots) {
        free(orig);
        free(slots);
        return ampc_set_error(AMPC_E_NOMEM, "%s: out of memory", ampc_op_name(L->op));
    }
    for (int i = 0; i < t->n; i++) {
        ampc_tensor **o = orig + (size_t)i * AMPC_OPTIM_SLOTS;
        o[AMPC_OPTIM_SLOT_PARAM] = t->params[i];
        o[AMPC_OPTIM_SLOT_GRAD] = t->grads[i];
        o[AMPC_OPTIM_SLOT_MASTER] = t->masters ? t->masters[i] : NULL;
        o[AMPC_OPTIM_SLOT_STEP] = L->uses_step ? t->steps[i] : NULL;
        for (int j = 0; j < 3; j++) o[AMPC_OPTIM_SLOT_STATE0 + j] = L->state_names[j] ? t->state[j][i] : NULL;
    }
    ampc_status st = AMPC_OK;
    for (size_t k = 0; k < total && st == AMPC_OK; k++) {
        if (!orig[k] || ampc_is_contiguous(orig[k])) {
            slots[k] = orig[k];
            continue;
        }
        ampc_tensor *raw = raw_view(orig[k]);
        slots[k] = raw ? ampc_contiguous(raw) : NULL;
        ampc_tensor_decref(raw);
        if (!slots[k]) st = ampc_last_status();
    }
    if (st == AMPC_OK) {
        args->param0 = t->params[0];
        args->grad_scale = t->grad_scale;
        args->found_inf = t->found_inf;
        args->slots = slots;
        args->slots_n = (int)total;
        args->slots_per_param = AMPC_OPTIM_SLOTS;
        st = ampc_dispatch_fused_optim(L->op, args);
    }
    for (size_t k = 0; k < total; k++) {
        bool grad_slot = k % AMPC_OPTIM_SLOTS == AMPC_OPTIM_SLOT_GRAD;
        bool written = orig[k] && (!grad_slot || t->grad_scale);
        if (slots[k] && slots[k] != orig[k]) {
            if (st == AMPC_OK && written) {
                ampc_tensor *raw = raw_view(orig[k]);
                st = raw ? ampc_copy_(raw, slots[k]) : ampc_last_status();
                ampc_tensor_decref(raw);
            }
            ampc_tensor_decref(slots[k]);
        }
        if (st == AMPC_OK && written) orig[k]->storage->version++;
    }
    free(orig);
    free(slots);
    return st;
}

ampc_status ampc_fused_sgd_(const ampc_optim_tensors *t, const ampc_sgd_options *o) {
    bool momentum = o->momentum != 0.0;
    optim_layout L = {AMPC_OP_FUSED_SGD, {momentum ? "momentum_buffer" : NULL, NULL, NULL}, momentum};
    if (o->nesterov && (o->momentum <= 0.0 || o->dampening != 0.0))
        return ampc_set_error(AMPC_E_VALUE, "Nesterov momentum requires a momentum and zero dampening");
    ampc_fused_optim_args args = {.sgd = o};
    return fused_step(&L, t, &args);
}

ampc_status ampc_fused_adam_(const ampc_optim_tensors *t, const ampc_adam_options *o) {
    optim_layout L = {AMPC_OP_FUSED_ADAM, {"exp_avg", "exp_avg_sq", o->amsgrad ? "max_exp_avg_sq" : NULL}, true};
    ampc_fused_optim_args args = {.adam = o};
    return fused_step(&L, t, &args);
}

ampc_status ampc_fused_adadelta_(const ampc_optim_tensors *t, const ampc_adadelta_options *o) {
    optim_layout L = {AMPC_OP_FUSED_ADADELTA, {"square_avg", "acc_delta", NULL}, true};
    ampc_fused_optim_args args = {.adadelta = o};
    return fused_step(&L, t, &args);
}

ampc_status ampc_fused_rmsprop_(const ampc_optim_tensors *t, const ampc_rmsprop_options *o) {
    optim_layout L = {AMPC_OP_FUSED_RMSPROP,
                      {"square_avg", o->momentum > 0.0 ? "momentum_buffer" : NULL, o->centered ? "grad_avg" : NULL},
                      true};
    ampc_fused_optim_args args = {.rmsprop = o};
    return fused_step(&L, t, &args);
}

ampc_status ampc_fused_adagrad_(const ampc_optim_tensors *t, const ampc_adagrad_options *o) {
    optim_layout L = {AMPC_OP_FUSED_ADAGRAD, {"sum", NULL, NULL}, true};
    ampc_fused_optim_args args = {.adagrad = o};
    return fused_step(&L, t, &args);
}

ampc_status ampc_fused_nadam_(const ampc_optim_tensors *t, const ampc_nadam_options *o) {
    optim_layout L = {AMPC_OP_FUSED_NADAM, {"exp_avg", "exp_avg_sq", "mu_product"}, true};
    ampc_fused_optim_args args = {.nadam = o};
    return fused_step(&L, t, &args);
}

ampc_status ampc_fused_radam_(const ampc_optim_tensors *t, const ampc_radam_options *o) {
    optim_layout L = {AMPC_OP_FUSED_RADAM, {"exp_avg", "exp_avg_sq", NULL}, true};
    ampc_fused_optim_args args = {.radam = o};
    return fused_step(&L, t, &args);
}

ampc_status ampc_fused_adamax_(const ampc_optim_tensors *t, const ampc_adamax_options *o) {
    optim_layout L = {AMPC_OP_FUSED_ADAMAX, {"exp_avg", "exp_inf", NULL}, true};
    ampc_fused_optim_args args = {.adamax = o};
    return fused_step(&L, t, &args);
}

ampc_status ampc_fused_asgd_(const ampc_optim_tensors *t, const ampc_asgd_options *o) {
    optim_layout L = {AMPC_OP_FUSED_ASGD, {"ax", "eta", "mu"}, true};
    ampc_fused_optim_args args = {.asgd = o};
    return fused_step(&L, t, &args);
}

ampc_status ampc_fused_rprop_(const ampc_optim_tensors *t, const ampc_rprop_options *o) {
    optim_layout L = {AMPC_OP_FUSED_RPROP, {"prev", "step_size", NULL}, true};
    ampc_fused_optim_args args = {.rprop = o};
    return fused_step(&L, t, &args);
}
