/* cpu_optim.c: the fused optimizer kernels on the CPU (FUSED_* rows of ops.def).
 *
 * One call updates every parameter of a list: a serial pass reads found_inf (a skipped step
 * touches nothing), advances the step counters and computes each parameter's coefficients
 * (core/optim_math.h); then the elements are cut into chunks that OpenMP threads share, each chunk
 * running the per-element rule over plain arrays so the compiler vectorizes it.
 *   fp32 / fp64     the kernel works on the tensors' memory directly;
 *   fp16 / bf16     blocks of STAGE elements are widened to fp32, updated and rounded back once;
 *                   with master weights the fp32 master and state are used in place and only the
 *                   grad is widened and the parameter written (the master rounded). */
#include <stdlib.h>

/* The rules branch on options (maximize, weight decay, ...). GCC only turns such branches into
 * vector selects when it may evaluate both sides, which -ftrapping-math (the default) forbids for
 * floating-point arithmetic; ampc never reads the FP exception flags, so this file waives them.
 * Results do not change: no reassociation, no contraction. */
#pragma GCC optimize("no-trapping-math")

#include "../core/kernel_args.h"
#include "../core/optim.h"
#include "../core/optim_math.h"
#include "cpu_backend.h"
#include "cpu_half_convert.h"

#define CHUNK 32768        /* elements per unit of parallel work */
#define PARALLEL_MIN 65536 /* below this many elements in total, one thread is faster */
#define STAGE 256          /* fp16/bf16 elements widened at a time (5 buffers of 1 KiB) */

typedef union optim_coeffs {
    ampc_sgd_coeffs sgd;
    ampc_adam_coeffs adam;
    ampc_adadelta_coeffs adadelta;
    ampc_rmsprop_coeffs rmsprop;
    ampc_adagrad_coeffs adagrad;
    ampc_nadam_coeffs nadam;
    ampc_radam_coeffs radam;
    ampc_adamax_coeffs adamax;
    ampc_asgd_coeffs asgd;
    ampc_rprop_coeffs rprop;
} optim_coeffs;

/* The rows of each compute type; fp32 also in AVX2 and AVX-512 builds picked at run time (the
 * rules are the same C, so every variant gives the same bits: -std=c11 contracts no FMAs). */
#define ROW_T float
#define ROW_MATH(name) name##_f32
#define ROW_ATTR
#define ROW_FN(name) name##_f32
#include "cpu_optim_rows.h"
#undef ROW_FN
#undef ROW_ATTR
#define ROW_ATTR __attribute__((target("avx2")))
#define ROW_FN(name) name##_f32_avx2
#include "cpu_optim_rows.h"
#undef ROW_FN
#undef ROW_ATTR
#define ROW_ATTR __attribute__((target("avx512f,prefer-vector-width=512")))
#define ROW_FN(name) name##_f32_avx512
#include "cpu_optim_rows.h"
#undef ROW_FN
#undef ROW_ATTR
#undef ROW_MATH
#undef ROW_T

#define ROW_T double
#define ROW_MATH(name) name##_f64
#define ROW_ATTR
#define ROW_FN(name) name##_f64
#include "cpu_optim_rows.h"
#undef ROW_FN
#undef ROW_ATTR
#undef ROW_MATH
#undef ROW_T

typedef void (*row_f32_fn)(ampc_op, int64_t, float *, float *, float *, float *, float *, const optim_coeffs *, bool,
                           float);

static row_f32_fn pick_row_f32(void) {
    if (__builtin_cpu_supports("avx512f")) return row_f32_avx512;
    if (__builtin_cpu_supports("avx2")) return row_f32_avx2;
    return row_f32;
}

/* A scalar state of the parameter (ampc_optim_scalar_state), or NULL. */
static float *scalar_state(ampc_tensor *const *slots, int j) {
    ampc_tensor *t = slots[AMPC_OPTIM_SLOT_STATE0 + j];
    return t ? (float *)ampc_data_ptr(t) : NULL;
}

/* Steps the counter (unless this op has none), advances the parameter's scalar states and returns
 * its coefficients. */
static optim_coeffs prepare(ampc_op op, const ampc_fused_optim_args *a, ampc_tensor *const *slots) {
    ampc_tensor *step = slots[AMPC_OPTIM_SLOT_STEP];
    optim_coeffs c = {0};
    float *s = step ? (float *)ampc_data_ptr(step) : NULL;
    float before = s ? *s : 0.0f;
    if (s) *s = before + 1.0f; /* step_t += 1, in float32 as PyTorch's step tensor */
    double after = s ? (double)*s : 1.0;
    switch (op) {
    case AMPC_OP_FUSED_SGD: c.sgd = ampc_sgd_coeffs_for(a->sgd, before); break;
    case AMPC_OP_FUSED_ADAM: c.adam = ampc_adam_coeffs_for(a->adam, after); break;
    case AMPC_OP_FUSED_ADADELTA: c.adadelta = ampc_adadelta_coeffs_for(a->adadelta); break;
    case AMPC_OP_FUSED_RMSPROP: c.rmsprop = ampc_rmsprop_coeffs_for(a->rmsprop); break;
    case AMPC_OP_FUSED_ADAGRAD: c.adagrad = ampc_adagrad_coeffs_for(a->adagrad, after); break;
    case AMPC_OP_FUSED_NADAM: {
        float *mu_product = scalar_state(slots, 2);
        *mu_product = ampc_nadam_mu_product_after(a->nadam, *mu_product, after);
        c.nadam = ampc_nadam_coeffs_for(a->nadam, after, *mu_product);
        break;
    }
    case AMPC_OP_FUSED_RADAM: c.radam = ampc_radam_coeffs_for(a->radam, after); break;
    case AMPC_OP_FUSED_ADAMAX: c.adamax = ampc_adamax_coeffs_for(a->adamax, after); break;
    case AMPC_OP_FUSED_ASGD: {
        float *eta = scalar_state(slots, 1), *mu = scalar_state(slots, 2);
        c.asgd = ampc_asgd_coeffs_for(a->asgd, *eta, *mu); /* this step uses the values before it */
        *eta = ampc_asgd_eta_after(a->asgd, after);
        *mu = ampc_asgd_mu_after(a->asgd, after);
        break;
    }
    default: c.rprop = ampc_rprop_coeffs_for(a->rprop); break;
    }
    return c;
}

/* The element at `start` of a slot's tensor, or NULL for an unused slot. */
static char *slot_at(ampc_tensor *const *slots, int k, int64_t start) {
    ampc_tensor *t = slots[k];
    return t ? (char *)ampc_data_ptr(t) + start * (int64_t)ampc_dtype_itemsize(t->dtype) : NULL;
}

static void widen(float *dst, const char *src, ampc_dtype dt, int64_t n) {
    if (dt == AMPC_FLOAT16) ampc_cpu_f16_to_f32((const ampc_half *)src, dst, n);
    else ampc_cpu_bf16_to_f32((const ampc_bfloat16 *)src, dst, n);
}

static void narrow(char *dst, const float *src, ampc_dtype dt, int64_t n) {
    if (dt == AMPC_FLOAT16) ampc_cpu_f32_to_f16(src, (ampc_half *)dst, n);
    else ampc_cpu_f32_to_bf16(src, (ampc_bfloat16 *)dst, n);
}

/* fp16/bf16 parameters: the roles (param-or-master, grad, three states) as fp32 arrays, widening
 * the low-precision ones block by block. */
static void update_low_precision(row_f32_fn row, ampc_op op, ampc_tensor *const *slots, int64_t start,
                                 int64_t len, const optim_coeffs *c, bool has_gs, float gs) {
    enum { P, G, S0, S1, S2, NROLES };
    static const int role_slot[NROLES] = {AMPC_OPTIM_SLOT_PARAM, AMPC_OPTIM_SLOT_GRAD, AMPC_OPTIM_SLOT_STATE0,
                                          AMPC_OPTIM_SLOT_STATE1, AMPC_OPTIM_SLOT_STATE2};
    ampc_tensor *master = slots[AMPC_OPTIM_SLOT_MASTER];
    ampc_dtype low = slots[AMPC_OPTIM_SLOT_PARAM]->dtype;
    float buf[NROLES][STAGE];
    for (int64_t b = 0; b < len; b += STAGE) {
        int64_t n = len - b < STAGE ? len - b : STAGE;
        float *arr[NROLES];
        bool staged[NROLES];
        for (int r = 0; r < NROLES; r++) {
            int k = (r == P && master) ? AMPC_OPTIM_SLOT_MASTER : role_slot[r];
            bool scalar = r >= S0 && ampc_optim_scalar_state(op, r - S0); /* in the coefficients */
            char *src = scalar ? NULL : slot_at(slots, k, start + b);
            staged[r] = src && slots[k]->dtype != AMPC_FLOAT32;
            if (!src) arr[r] = buf[r]; /* unused slot: scratch */
            else if (staged[r]) widen(arr[r] = buf[r], src, slots[k]->dtype, n);
            else arr[r] = (float *)src;
        }
        row(op, n, arr[P], arr[G], arr[S0], arr[S1], arr[S2], c, has_gs, gs);
        for (int r = 0; r < NROLES; r++)
            if (staged[r] && (r != G || has_gs)) narrow(slot_at(slots, role_slot[r], start + b), arr[r], low, n);
        if (master) narrow(slot_at(slots, AMPC_OPTIM_SLOT_PARAM, start + b), arr[P], low, n);
    }
}

/* An unused state slot gets the param's own pointer: the rules never touch it, so no memory is
 * shared in fact and `restrict` holds. */
static void update_range(row_f32_fn row, ampc_op op, ampc_tensor *const *slots, int64_t start, int64_t len,
                         const optim_coeffs *c, bool has_gs, float gs) {
    ampc_dtype dt = slots[AMPC_OPTIM_SLOT_PARAM]->dtype;
    char *p = slot_at(slots, AMPC_OPTIM_SLOT_PARAM, start), *g = slot_at(slots, AMPC_OPTIM_SLOT_GRAD, start);
    char *s[3];
    for (int j = 0; j < 3; j++) {
        s[j] = ampc_optim_scalar_state(op, j) ? NULL : slot_at(slots, AMPC_OPTIM_SLOT_STATE0 + j, start);
        if (!s[j]) s[j] = p;
    }
    if (dt == AMPC_FLOAT32)
        row(op, len, (float *)p, (float *)g, (float *)s[0], (float *)s[1], (float *)s[2], c, has_gs, gs);
    else if (dt == AMPC_FLOAT64)
        row_f64(op, len, (double *)p, (double *)g, (double *)s[0], (double *)s[1], (double *)s[2], c, has_gs, gs);
    else
        update_low_precision(row, op, slots, start, len, c, has_gs, gs);
}

typedef struct work_item {
    int param;
    int64_t start, len;
} work_item;

/* The op's options field, or NULL when the frontend left it unset. */
static const void *options_of(ampc_op op, const ampc_fused_optim_args *a) {
    switch (op) {
    case AMPC_OP_FUSED_SGD: return a->sgd;
    case AMPC_OP_FUSED_ADAM: return a->adam;
    case AMPC_OP_FUSED_ADADELTA: return a->adadelta;
    case AMPC_OP_FUSED_RMSPROP: return a->rmsprop;
    case AMPC_OP_FUSED_ADAGRAD: return a->adagrad;
    case AMPC_OP_FUSED_NADAM: return a->nadam;
    case AMPC_OP_FUSED_RADAM: return a->radam;
    case AMPC_OP_FUSED_ADAMAX: return a->adamax;
    case AMPC_OP_FUSED_ASGD: return a->asgd;
    case AMPC_OP_FUSED_RPROP: return a->rprop;
    default: return NULL;
    }
}

static ampc_status cpu_fused_step(ampc_op op, const ampc_fused_optim_args *a) {
    if (a->slots_per_param != AMPC_OPTIM_SLOTS || a->slots_n % AMPC_OPTIM_SLOTS != 0 || !options_of(op, a))
        return ampc_set_error(AMPC_E_RUNTIME, "%s: unexpected kernel arguments (%d tensors, %d slots)",
                              ampc_op_name(op), a->slots_n, a->slots_per_param);
    const ampc_tensor *grad_scale = a->grad_scale, *found_inf = a->found_inf;
    if (found_inf && *(const float *)ampc_data_ptr(found_inf) != 0.0f) return AMPC_OK;
    bool has_gs = grad_scale != NULL;
    float gs = has_gs ? *(const float *)ampc_data_ptr(grad_scale) : 1.0f;
    row_f32_fn row = pick_row_f32();
    const int per = AMPC_OPTIM_SLOTS;
    int n = a->slots_n / per;

    optim_coeffs *coeffs = (optim_coeffs *)malloc(sizeof *coeffs * (size_t)n);
    int64_t n_items = 0, total = 0;
    for (int i = 0; i < n; i++) {
        int64_t numel = ampc_numel(a->slots[(size_t)i * per + AMPC_OPTIM_SLOT_PARAM]);
        n_items += (numel + CHUNK - 1) / CHUNK;
        total += numel;
    }
    work_item *items = (work_item *)malloc(sizeof *items * (size_t)(n_items ? n_items : 1));
    if (!coeffs || !items) {
        free(coeffs);
        free(items);
        return ampc_set_error(AMPC_E_NOMEM, "%s: out of memory", ampc_op_name(op));
    }
    int64_t w = 0;
    for (int i = 0; i < n; i++) {
        ampc_tensor *const *slots = a->slots + (size_t)i * per;
        coeffs[i] = prepare(op, a, slots);
        int64_t numel = ampc_numel(slots[AMPC_OPTIM_SLOT_PARAM]);
        for (int64_t s = 0; s < numel; s += CHUNK) items[w++] = (work_item){i, s, numel - s < CHUNK ? numel - s : CHUNK};
    }
#pragma omp parallel for schedule(dynamic) if (total >= PARALLEL_MIN)
    for (int64_t k = 0; k < n_items; k++) {
        const work_item *it = &items[k];
        update_range(row, op, a->slots + (size_t)it->param * per, it->start, it->len, &coeffs[it->param], has_gs, gs);
    }
    free(items);
    free(coeffs);
    return AMPC_OK;
}

void ampc_cpu_register_optim(void) {
    ampc_register_fused_optim(AMPC_CPU, cpu_fused_step);
}
