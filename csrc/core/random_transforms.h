/* random_transforms.h: what each RANDOM op makes of one Philox block in the CUDA kernels
 * (cuda/cuda_random.cu), and the typed-argument plumbing (ampc_random_params) the CPU kernels
 * share (cpu/cpu_random.c, which draws from torch's MT19937 instead, not from these blocks).
 *
 * A request's elements are grouped by block: block k (counted from the request's first block)
 * makes elements [k * per, k * per + per), per = 4 / words-per-element (philox.h). A kernel
 * calls ampc_random_block for the blocks it owns and stores the results through the output's
 * strides; results come back as double (UNIFORM, NORMAL) or int64 (RANDINT, BERNOULLI). */
#ifndef AMPC_RANDOM_TRANSFORMS_H
#define AMPC_RANDOM_TRANSFORMS_H

#include <stdbool.h>

#include "dispatch.h"
#include "kernel_args.h"
#include "philox.h"

/* Everything a block needs, derived once per kernel call from the op's typed arguments. Plain data, so
 * it can be passed by value to a CUDA kernel. */
typedef struct ampc_random_params {
    int op;           /* AMPC_OP_UNIFORM, _NORMAL, _RANDINT, _BERNOULLI */
    int dtype;        /* the output's ampc_dtype */
    int per_block;    /* elements per block: 4, or 2 for two-word elements */
    uint64_t seed, block0;
    double a, b;      /* UNIFORM from/to; NORMAL mean/std; BERNOULLI p */
    int64_t low;      /* RANDINT: low + x mod range (range 0: all 2^64 values) */
    uint64_t range;
    const double *p0, *p1; /* per-element NORMAL mean/std or BERNOULLI p (contiguous float64), or NULL */
} ampc_random_params;

/* The fields every RANDOM op's params share. */
static inline ampc_random_params ampc_random_params_init(ampc_op op, const ampc_tensor *out, uint64_t seed,
                                                         uint64_t offset) {
    ampc_random_params p;
    p.op = (int)op;
    p.dtype = (int)out->dtype;
    p.per_block = 4;
    p.seed = seed, p.block0 = offset / 4;
    p.a = p.b = 0;
    p.low = 0;
    p.range = 0;
    p.p0 = p.p1 = NULL;
    return p;
}

/* UNIFORM and NORMAL draw floating values only; float64 takes two words per element. */
static inline bool ampc_random_floating_only(ampc_random_params *p) {
    if (!ampc_dtype_is_floating((ampc_dtype)p->dtype)) {
        ampc_set_error(AMPC_E_NOT_IMPLEMENTED, "%s: not implemented for dtype %s", ampc_op_name((ampc_op)p->op),
                       ampc_dtype_name((ampc_dtype)p->dtype));
        return false;
    }
    if (p->dtype == AMPC_FLOAT64) p->per_block = 2;
    return true;
}

/* The params of each RANDOM schema's typed arguments (kernel_args.h), or false with the error set. */
static inline bool ampc_random_params_uniform(ampc_op op, const ampc_uniform_args *u, ampc_random_params *p) {
    *p = ampc_random_params_init(op, u->out, u->seed, u->offset);
    p->a = u->from, p->b = u->to;
    return ampc_random_floating_only(p);
}

static inline bool ampc_random_params_normal(ampc_op op, const ampc_normal_args *u, ampc_random_params *p) {
    *p = ampc_random_params_init(op, u->out, u->seed, u->offset);
    p->a = u->mean, p->b = u->stddev;
    if (u->means && u->stddevs) {
        p->p0 = (const double *)ampc_data_ptr(u->means);
        p->p1 = (const double *)ampc_data_ptr(u->stddevs);
    }
    return ampc_random_floating_only(p);
}

static inline bool ampc_random_params_randint(ampc_op op, const ampc_randint_args *u, ampc_random_params *p) {
    *p = ampc_random_params_init(op, u->out, u->seed, u->offset);
    p->a = (double)u->low, p->b = (double)u->high;
    p->low = u->low;
    p->range = (uint64_t)u->high - (uint64_t)p->low + 1u; /* high is inclusive */
    if (p->range == 0 || p->range > ((uint64_t)1 << 32)) p->per_block = 2;
    return true;
}

static inline bool ampc_random_params_bernoulli(ampc_op op, const ampc_bernoulli_args *u, ampc_random_params *p) {
    *p = ampc_random_params_init(op, u->out, u->seed, u->offset);
    p->a = u->p;
    if (u->probs) p->p0 = (const double *)ampc_data_ptr(u->probs);
    return true;
}

/* A backend's typed kernels prefix_uniform, prefix_normal, prefix_randint and prefix_bernoulli:
 * each makes its schema's params and hands them to the backend's
 * `ampc_status fill(const ampc_random_params *p, ampc_tensor *out)`, which runs the draws. */
#define AMPC_RANDOM_KERNEL(prefix, schema, fill)                                       \
    static ampc_status prefix##_##schema(ampc_op op, const ampc_##schema##_args *a) {  \
        ampc_random_params p;                                                          \
        if (!ampc_random_params_##schema(op, a, &p)) return ampc_last_status();        \
        return fill(&p, a->out);                                                       \
    }
#define AMPC_RANDOM_KERNELS(prefix, fill)                                              \
    AMPC_RANDOM_KERNEL(prefix, uniform, fill)                                          \
    AMPC_RANDOM_KERNEL(prefix, normal, fill)                                           \
    AMPC_RANDOM_KERNEL(prefix, randint, fill)                                          \
    AMPC_RANDOM_KERNEL(prefix, bernoulli, fill)

/* A value rounded to a floating output dtype and widened back to double (exact). */
AMPC_HD double ampc_round_to_dtype(int dtype, double v) {
    switch (dtype) {
    case AMPC_FLOAT32: return (double)(float)v;
    case AMPC_FLOAT16: return (double)ampc_half_to_f32(ampc_f32_to_half((float)v));
    case AMPC_BFLOAT16: return (double)ampc_bf16_to_f32(ampc_f32_to_bf16((float)v));
    default: return v;
    }
}

/* Elements of block k (relative to the request): n = min(per_block, elements left) of them,
 * starting at element index first = k * per_block. Writes d[] or iv[] (the other is unused). */
AMPC_HD void ampc_random_block(const ampc_random_params *p, uint64_t k, int n, double *d, int64_t *iv) {
    ampc_philox_block blk = ampc_philox_at(p->seed, p->block0 + k);
    uint64_t first = k * (uint64_t)p->per_block;
    switch (p->op) {
    case AMPC_OP_UNIFORM:
        for (int s = 0; s < n; s++) {
            double v;
            if (p->per_block == 2) { /* float64: 53-bit uniforms, double arithmetic */
                v = ampc_dadd(ampc_dmul(ampc_philox_u53(blk.w[2 * s], blk.w[2 * s + 1]), p->b - p->a), p->a);
            } else { /* float32/16/bf16: 24-bit uniforms, float arithmetic, one rounding to the dtype */
                float u = ampc_philox_u24(blk.w[s]);
                v = ampc_round_to_dtype(p->dtype, ampc_fadd(ampc_fmul(u, (float)(p->b - p->a)), (float)p->a));
            }
            d[s] = v == p->b ? p->a : v; /* [from, to): a value rounded up to `to` becomes `from`, as PyTorch */
        }
        break;
    case AMPC_OP_NORMAL: {
        double z[4];
        ampc_philox_normals(blk, p->per_block == 2, z);
        for (int s = 0; s < n; s++) {
            double mean = p->p0 ? p->p0[first + s] : p->a, std = p->p1 ? p->p1[first + s] : p->b;
            d[s] = ampc_dadd(ampc_dmul(z[s], std), mean);
        }
        break;
    }
    case AMPC_OP_RANDINT:
        for (int s = 0; s < n; s++) {
            uint64_t x;
            if (p->per_block == 2) {
                x = ((uint64_t)blk.w[2 * s + 1] << 32) | blk.w[2 * s];
                if (p->range) x %= p->range;
            } else {
                x = (uint64_t)blk.w[s] % p->range;
            }
            iv[s] = (int64_t)((uint64_t)p->low + x);
        }
        break;
    case AMPC_OP_BERNOULLI:
        for (int s = 0; s < n; s++) iv[s] = ampc_philox_u32(blk.w[s]) < (p->p0 ? p->p0[first + s] : p->a);
        break;
    default: break;
    }
}

/* RANDINT and BERNOULLI produce integers; UNIFORM and NORMAL doubles. */
AMPC_HD bool ampc_random_makes_ints(const ampc_random_params *p) {
    return p->op == AMPC_OP_RANDINT || p->op == AMPC_OP_BERNOULLI;
}

#endif
