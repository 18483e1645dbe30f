/* cuda_optim.cu: the fused optimizer steps on CUDA (FUSED_* rows of ops.def): SGD, Adam/AdamW,
 * Adadelta, RMSprop, Adagrad, NAdam, RAdam, Adamax, ASGD, Rprop. The per-element rules and per-parameter coefficients are those of
 * core/optim_math.h, which the CPU kernel (cpu/cpu_optim.c) runs too: one formula, two devices.
 *
 * One call is one launch per tensor table (cuda_multi_tensor.cuh: ~470 parameters per launch)
 * plus one small launch that advances the step counters. Everything a step reads is read on the
 * device: found_inf (!= 0: every block returns at once and the counters stay, so params, grads,
 * state and steps are untouched), grad_scale (grads divided by it and written back, as PyTorch's
 * fused kernels), and the step counters (each block computes its parameter's coefficients from
 * the counter before the step + 1, as the CPU does after its increment).
 *
 * Why two launches: every block of a parameter must see the counter before this step, and no
 * block can know when the others have read it, so the increment runs in a second kernel on the
 * same stream (PyTorch's fused Adam also increments its steps in a launch of its own).
 *
 * Element layout: param, grad, master (fp32, fp16/bf16 params only), state0..2 of one shape, all
 * contiguous (the frontend copies the rare strided one). Arithmetic in fp32 (fp64 for fp64
 * params), each stored value rounded once; with master weights the fp32 master and state are
 * updated and the parameter receives the rounded master. */
#include "../core/kernel_args.h"
#include "../core/optim.h"
#include "../core/optim_math.h"
#include "cuda_multi_tensor.cuh"

namespace {

/* Rule::apply in float and double: the optim_math.h rule UPDATE##_f32 / _f64 with ARGS (from p,
 * g, s0, s1, s2, c). */
#define AMPC_RULE_APPLY(RULE, UPDATE, ARGS)                                                                    \
    template <> __device__ __forceinline__ void RULE::apply(float *p, float g, float *s0, float *s1, float *s2,   \
                                                            const coeffs &c) {                                 \
        (void)s0, (void)s1, (void)s2;                                                                          \
        UPDATE##_f32 ARGS;                                                                                     \
    }                                                                                                          \
    template <> __device__ __forceinline__ void RULE::apply(double *p, double g, double *s0, double *s1,         \
                                                            double *s2, const coeffs &c) {                     \
        (void)s0, (void)s1, (void)s2;                                                                          \
        UPDATE##_f64 ARGS;                                                                                     \
    }

/* A rule's op, options and coeffs types, and of(a): its options in the kernel arguments. */
#define AMPC_RULE_TYPES(NAME, OP)                                                \
    static constexpr ampc_op op = AMPC_OP_##OP;                                 \
    typedef ampc_##NAME##_options options;                                      \
    typedef ampc_##NAME##_coeffs coeffs;                                        \
    static const options *of(const ampc_fused_optim_args *a) { return a->NAME; }

typedef ampc_mt_meta<AMPC_OPTIM_SLOTS, ampc_mt_capacity<AMPC_OPTIM_SLOTS>::value> optim_meta;

/* ---------------------------------------------------------------- the rules, per op
 * make(o, has_step, before, q1, q2): the parameter's coefficients from its counter and its scalar
 * states (ampc_optim_scalar_state; q1, q2 for state slots 1 and 2, 0 when not scalars) before
 * this step (cpu_optim.c's prepare); apply: one element, in float or double; advance(o, after,
 * q1, q2): the scalar states after the step (the rules without any inherit no_scalars). */

struct no_scalars {
    static __device__ __forceinline__ void advance(const void *, double, float *, float *) {}
};

struct sgd_rule : no_scalars {
    AMPC_RULE_TYPES(sgd, FUSED_SGD)
    static __device__ __forceinline__ coeffs make(const options &o, bool, float before, float, float) {
        return ampc_sgd_coeffs_for(&o, (double)before); /* momentum updates taken before this one */
    }
    template <typename V> static __device__ __forceinline__ void apply(V *p, V g, V *s0, V *, V *, const coeffs &c);
};
AMPC_RULE_APPLY(sgd_rule, ampc_sgd_update, (p, g, s0, &c))

/* The counter after this step's increment, as the CPU computes it (float + 1, then widened). */
__device__ __forceinline__ double step_after(bool has_step, float before) {
    return has_step ? (double)(before + 1.0f) : 1.0;
}

struct adam_rule : no_scalars {
    AMPC_RULE_TYPES(adam, FUSED_ADAM)
    static __device__ __forceinline__ coeffs make(const options &o, bool has_step, float before, float, float) {
        return ampc_adam_coeffs_for(&o, step_after(has_step, before));
    }
    template <typename V> static __device__ __forceinline__ void apply(V *p, V g, V *s0, V *s1, V *s2, const coeffs &c);
};
AMPC_RULE_APPLY(adam_rule, ampc_adam_update, (p, g, s0, s1, s2, &c))

struct adadelta_rule : no_scalars {
    AMPC_RULE_TYPES(adadelta, FUSED_ADADELTA)
    static __device__ __forceinline__ coeffs make(const options &o, bool, float, float, float) { return ampc_adadelta_coeffs_for(&o); }
    template <typename V> static __device__ __forceinline__ void apply(V *p, V g, V *s0, V *s1, V *, const coeffs &c);
};
AMPC_RULE_APPLY(adadelta_rule, ampc_adadelta_update, (p, g, s0, s1, &c))

struct rmsprop_rule : no_scalars {
    AMPC_RULE_TYPES(rmsprop, FUSED_RMSPROP)
    static __device__ __forceinline__ coeffs make(const options &o, bool, float, float, float) { return ampc_rmsprop_coeffs_for(&o); }
    template <typename V> static __device__ __forceinline__ void apply(V *p, V g, V *s0, V *s1, V *s2, const coeffs &c);
};
AMPC_RULE_APPLY(rmsprop_rule, ampc_rmsprop_update, (p, g, s0, s1, s2, &c))

struct adagrad_rule : no_scalars {
    AMPC_RULE_TYPES(adagrad, FUSED_ADAGRAD)
    static __device__ __forceinline__ coeffs make(const options &o, bool has_step, float before, float, float) {
        return ampc_adagrad_coeffs_for(&o, step_after(has_step, before));
    }
    template <typename V> static __device__ __forceinline__ void apply(V *p, V g, V *s0, V *, V *, const coeffs &c);
};
AMPC_RULE_APPLY(adagrad_rule, ampc_adagrad_update, (p, g, s0, &c))

struct nadam_rule {
    AMPC_RULE_TYPES(nadam, FUSED_NADAM)
    static __device__ __forceinline__ coeffs make(const options &o, bool has_step, float before, float,
                                                  float mu_product) {
        double after = step_after(has_step, before);
        return ampc_nadam_coeffs_for(&o, after, ampc_nadam_mu_product_after(&o, mu_product, after));
    }
    static __device__ __forceinline__ void advance(const options *o, double after, float *, float *mu_product) {
        *mu_product = ampc_nadam_mu_product_after(o, *mu_product, after);
    }
    template <typename V> static __device__ __forceinline__ void apply(V *p, V g, V *s0, V *s1, V *, const coeffs &c);
};
AMPC_RULE_APPLY(nadam_rule, ampc_nadam_update, (p, g, s0, s1, &c))

struct radam_rule : no_scalars {
    AMPC_RULE_TYPES(radam, FUSED_RADAM)
    static __device__ __forceinline__ coeffs make(const options &o, bool has_step, float before, float, float) {
        return ampc_radam_coeffs_for(&o, step_after(has_step, before));
    }
    template <typename V> static __device__ __forceinline__ void apply(V *p, V g, V *s0, V *s1, V *, const coeffs &c);
};
AMPC_RULE_APPLY(radam_rule, ampc_radam_update, (p, g, s0, s1, &c))

struct adamax_rule : no_scalars {
    AMPC_RULE_TYPES(adamax, FUSED_ADAMAX)
    static __device__ __forceinline__ coeffs make(const options &o, bool has_step, float before, float, float) {
        return ampc_adamax_coeffs_for(&o, step_after(has_step, before));
    }
    template <typename V> static __device__ __forceinline__ void apply(V *p, V g, V *s0, V *s1, V *, const coeffs &c);
};
AMPC_RULE_APPLY(adamax_rule, ampc_adamax_update, (p, g, s0, s1, &c))

struct asgd_rule {
    AMPC_RULE_TYPES(asgd, FUSED_ASGD)
    static __device__ __forceinline__ coeffs make(const options &o, bool, float, float eta, float mu) {
        return ampc_asgd_coeffs_for(&o, eta, mu);
    }
    static __device__ __forceinline__ void advance(const options *o, double after, float *eta, float *mu) {
        *eta = ampc_asgd_eta_after(o, after);
        *mu = ampc_asgd_mu_after(o, after);
    }
    template <typename V> static __device__ __forceinline__ void apply(V *p, V g, V *s0, V *, V *, const coeffs &c);
};
AMPC_RULE_APPLY(asgd_rule, ampc_asgd_update, (p, g, s0, &c))

struct rprop_rule : no_scalars {
    AMPC_RULE_TYPES(rprop, FUSED_RPROP)
    static __device__ __forceinline__ coeffs make(const options &o, bool, float, float, float) {
        return ampc_rprop_coeffs_for(&o);
    }
    template <typename V> static __device__ __forceinline__ void apply(V *p, V g, V *s0, V *s1, V *, const coeffs &c);
};
AMPC_RULE_APPLY(rprop_rule, ampc_rprop_update, (p, g, s0, s1, &c))

/* ---------------------------------------------------------------- the kernels */

constexpr int kW = 4; /* elements per thread per step: 16-byte fp32 accesses, 8-byte fp16 */

/* Slot k of the block's tensor at its chunk, as T*; NULL for an unused slot. */
template <typename T> __device__ __forceinline__ T *slot_at(const optim_meta &m, int k, const ampc_mt_chunk &c) {
    T *p = (T *)m.ptr[k][c.t];
    return p ? p + c.start : nullptr;
}

/* P: the parameter's storage type; S: the state's (float under master weights, else P). */
template <typename Rule, typename P, typename S, bool MASTER>
__global__ void __launch_bounds__(AMPC_MT_THREADS)
    fused_step_kernel(const __grid_constant__ optim_meta m, const typename Rule::options opts, const float *grad_scale,
                      const float *found_inf) {
    if (found_inf && *found_inf != 0.0f) return; /* a skipped step touches nothing */
    typedef ampc_opmath_t<P> V;
    const ampc_mt_chunk c = ampc_mt_chunk_of(m, (int32_t)blockIdx.x);
    P *param = slot_at<P>(m, AMPC_OPTIM_SLOT_PARAM, c);
    P *grad = slot_at<P>(m, AMPC_OPTIM_SLOT_GRAD, c);
    float *master = MASTER ? slot_at<float>(m, AMPC_OPTIM_SLOT_MASTER, c) : nullptr;
    const bool q1 = ampc_optim_scalar_state(Rule::op, 1), q2 = ampc_optim_scalar_state(Rule::op, 2);
    S *s0 = slot_at<S>(m, AMPC_OPTIM_SLOT_STATE0, c);
    S *s1 = q1 ? nullptr : slot_at<S>(m, AMPC_OPTIM_SLOT_STATE1, c);
    S *s2 = q2 ? nullptr : slot_at<S>(m, AMPC_OPTIM_SLOT_STATE2, c);
    const float *step = (const float *)m.ptr[AMPC_OPTIM_SLOT_STEP][c.t];
    const float v1 = q1 ? *(const float *)m.ptr[AMPC_OPTIM_SLOT_STATE1][c.t] : 0.0f;
    const float v2 = q2 ? *(const float *)m.ptr[AMPC_OPTIM_SLOT_STATE2][c.t] : 0.0f;
    const typename Rule::options o = opts;
    const typename Rule::coeffs k = Rule::make(o, step != nullptr, step ? *step : 0.0f, v1, v2);
    const bool has_gs = grad_scale != nullptr;
    const V gs = has_gs ? (V)*grad_scale : (V)1;
    const bool vec = ampc_mt_aligned<kW>(param) && ampc_mt_aligned<kW>(grad) && ampc_mt_aligned<kW>(master) &&
                     ampc_mt_aligned<kW>(s0) && ampc_mt_aligned<kW>(s1) && ampc_mt_aligned<kW>(s2);
    for (int64_t i = (int64_t)threadIdx.x * kW; i < c.n; i += (int64_t)blockDim.x * kW) {
        V g[kW], p[kW], a[kW] = {}, b[kW] = {}, d[kW] = {};
        ampc_mt_load<kW>(g, grad, i, c.n, vec);
        if (has_gs) {
#pragma unroll
            for (int w = 0; w < kW; w++) g[w] = g[w] / gs;
            ampc_mt_store<kW>(grad, g, i, c.n, vec); /* the unscaled grad, rounded to its dtype */
        }
        if (MASTER) ampc_mt_load<kW>(p, master, i, c.n, vec);
        else ampc_mt_load<kW>(p, param, i, c.n, vec);
        if (s0) ampc_mt_load<kW>(a, s0, i, c.n, vec);
        if (s1) ampc_mt_load<kW>(b, s1, i, c.n, vec);
        if (s2) ampc_mt_load<kW>(d, s2, i, c.n, vec);
#pragma unroll
        for (int w = 0; w < kW; w++) Rule::apply(&p[w], g[w], &a[w], &b[w], &d[w], k);
        if (s0) ampc_mt_store<kW>(s0, a, i, c.n, vec);
        if (s1) ampc_mt_store<kW>(s1, b, i, c.n, vec);
        if (s2) ampc_mt_store<kW>(s2, d, i, c.n, vec);
        if (MASTER) ampc_mt_store<kW>(master, p, i, c.n, vec);
        ampc_mt_store<kW>(param, p, i, c.n, vec);
    }
}

/* The step counters of one call, advanced after its update kernels (step_t += 1 in float32, as
 * PyTorch's step tensor), with the scalar states that follow them (q1, q2: NULL or state slots 1
 * and 2), unless the step was skipped. */
#define STEP_CAP ((int)((AMPC_MT_META_BYTES - sizeof(int32_t)) / (3 * sizeof(float *))))
struct step_list {
    float *step[STEP_CAP];
    float *q1[STEP_CAP];
    float *q2[STEP_CAP];
    int32_t n;
};

template <typename Rule>
__global__ void advance_steps_kernel(const __grid_constant__ step_list l, const typename Rule::options opts,
                                     const float *found_inf) {
    if (found_inf && *found_inf != 0.0f) return;
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= l.n) return;
    float after = *l.step[i] + 1.0f;
    *l.step[i] = after;
    if (l.q1[i] || l.q2[i]) Rule::advance(&opts, (double)after, l.q1[i], l.q2[i]);
}

/* ---------------------------------------------------------------- host side */

template <typename Rule, typename P, typename S, bool MASTER>
ampc_status launch_updates(const ampc_fused_optim_args *a, int n_params, cudaStream_t stream, const float *grad_scale,
                           const float *found_inf) {
    const typename Rule::options opts = *Rule::of(a);
    return ampc_mt_apply<AMPC_OPTIM_SLOTS, ampc_mt_capacity<AMPC_OPTIM_SLOTS>::value>(
        n_params,
        [&](int i, void **p, int64_t *numel) {
            ampc_tensor *const *slots = a->slots + (size_t)i * AMPC_OPTIM_SLOTS;
            for (int k = 0; k < AMPC_OPTIM_SLOTS; k++) p[k] = slots[k] ? ampc_data_ptr(slots[k]) : NULL;
            *numel = ampc_numel(slots[AMPC_OPTIM_SLOT_PARAM]);
            return true;
        },
        [&](const optim_meta &m, int blocks, int64_t) -> ampc_status {
            fused_step_kernel<Rule, P, S, MASTER><<<blocks, AMPC_MT_THREADS, 0, stream>>>(m, opts, grad_scale, found_inf);
            AMPC_CUDA_CHECK_LAUNCH();
            return AMPC_OK;
        });
}

template <typename Rule>
ampc_status advance_steps(const ampc_fused_optim_args *a, int n_params, cudaStream_t stream, const float *found_inf) {
    static_assert(sizeof(step_list) <= AMPC_MT_META_BYTES, "step list exceeds the parameter budget");
    step_list &l = *new (ampc_mt_table_buffer()) step_list; /* free again: the updates are launched */
    l.n = 0;
    for (int i = 0; i <= n_params; i++) {
        ampc_tensor *s = i < n_params ? a->slots[(size_t)i * AMPC_OPTIM_SLOTS + AMPC_OPTIM_SLOT_STEP] : NULL;
        if (s) {
            ampc_tensor *const *slots = a->slots + (size_t)i * AMPC_OPTIM_SLOTS;
            ampc_tensor *t1 = ampc_optim_scalar_state(Rule::op, 1) ? slots[AMPC_OPTIM_SLOT_STATE1] : NULL;
            ampc_tensor *t2 = ampc_optim_scalar_state(Rule::op, 2) ? slots[AMPC_OPTIM_SLOT_STATE2] : NULL;
            l.q1[l.n] = t1 ? (float *)ampc_data_ptr(t1) : nullptr;
            l.q2[l.n] = t2 ? (float *)ampc_data_ptr(t2) : nullptr;
            l.step[l.n++] = (float *)ampc_data_ptr(s);
        }
        if (l.n > 0 && (l.n == STEP_CAP || i == n_params)) {
            advance_steps_kernel<Rule><<<(l.n + 255) / 256, 256, 0, stream>>>(l, *Rule::of(a), found_inf);
            AMPC_CUDA_CHECK_LAUNCH();
            l.n = 0;
        }
    }
    return AMPC_OK;
}

template <typename Rule> ampc_status cuda_fused_step(ampc_op op, const ampc_fused_optim_args *a) {
    const char *name = ampc_op_name(op);
    if (a->slots_per_param != AMPC_OPTIM_SLOTS || a->slots_n % AMPC_OPTIM_SLOTS != 0 || !Rule::of(a))
        return ampc_set_error(AMPC_E_RUNTIME, "%s: unexpected kernel arguments (%d tensors, %d slots)", name,
                              a->slots_n, a->slots_per_param);
    const int n = a->slots_n / AMPC_OPTIM_SLOTS;
    if (n == 0) return AMPC_OK;
    ampc_tensor *p0 = a->slots[AMPC_OPTIM_SLOT_PARAM];
    ampc_cuda_guard guard(p0);
    cudaStream_t stream = ampc_cuda_stream_of(p0);
    const float *gs = a->grad_scale ? (const float *)ampc_data_ptr(a->grad_scale) : nullptr;
    const float *fi = a->found_inf ? (const float *)ampc_data_ptr(a->found_inf) : nullptr;
    /* masters come for every parameter of the call or for none (core/optim.c) */
    const bool master = a->slots[AMPC_OPTIM_SLOT_MASTER] != NULL;
    ampc_status st;
    switch (p0->dtype) {
    case AMPC_FLOAT32: st = launch_updates<Rule, float, float, false>(a, n, stream, gs, fi); break;
    case AMPC_FLOAT64: st = launch_updates<Rule, double, double, false>(a, n, stream, gs, fi); break;
    case AMPC_FLOAT16:
        st = master ? launch_updates<Rule, __half, float, true>(a, n, stream, gs, fi)
                    : launch_updates<Rule, __half, __half, false>(a, n, stream, gs, fi);
        break;
    case AMPC_BFLOAT16:
        st = master ? launch_updates<Rule, __nv_bfloat16, float, true>(a, n, stream, gs, fi)
                    : launch_updates<Rule, __nv_bfloat16, __nv_bfloat16, false>(a, n, stream, gs, fi);
        break;
    default:
        return ampc_set_error(AMPC_E_TYPE, "%s: CUDA kernel does not support dtype %s", name,
                              ampc_dtype_name(p0->dtype));
    }
    AMPC_TRY(st);
    return advance_steps<Rule>(a, n, stream, fi);
}

/* cuda_fused_step with the rule of op, the first of Rules whose op it is. */
template <typename... Rules> ampc_status fused_step_by_op(ampc_op op, const ampc_fused_optim_args *a) {
    ampc_status st = AMPC_OK;
    bool found = ((op == Rules::op && (st = cuda_fused_step<Rules>(op, a), true)) || ...);
    return found ? st : ampc_set_error(AMPC_E_RUNTIME, "%s: not a fused optimizer", ampc_op_name(op));
}

/* The fused_optim schema's one kernel: each optimizer's update rule is a template argument. */
ampc_status cuda_fused_optim(ampc_op op, const ampc_fused_optim_args *a) {
    return fused_step_by_op<sgd_rule, adam_rule, adadelta_rule, rmsprop_rule, adagrad_rule, nadam_rule, radam_rule,
                            adamax_rule, asgd_rule, rprop_rule>(op, a);
}

} // namespace

extern "C" void ampc_cuda_register_optim(void) { ampc_register_fused_optim(AMPC_CUDA, cuda_fused_optim); }
