/* cpu_random.c: CPU kernels of the RANDOM family: UNIFORM, NORMAL, RANDINT, BERNOULLI, drawn
 * from the CPU generator (torch's MT19937, core/mt19937.h) exactly as torch's CPU kernels draw
 * them, and ARANGE (start + i * step, no randomness).
 *
 * The stream is sequential, so every draw runs on one thread in torch's element order: linear for
 * a contiguous output, else TensorIterator's order (dimensions sorted by stride, the smallest
 * innermost: memory order for a permuted tensor). Per element, as torch's DistributionTemplates:
 *   uniform  float/half/bf16: random() low `digits` bits * 2^-digits, times (to - from) rounded
 *            as the dtype does, plus from, in float; double: random64() 53 bits, in double
 *   normal   contiguous with >= 16 elements: normal_fill (all uniforms first, Box-Muller on each
 *            16-block of 8 + 8 pairs, the tail block recomputed from 16 fresh uniforms; float32
 *            on an AVX2 machine: the AVX2 kernel with avx_mathfun's log/sincos, cpu_normal_avx2.c),
 *            else normal_distribution<double> with its cached sine sample
 *   random_  random() % range, or random64() % range when the range needs 64 bits and the dtype is
 *            int64/double/float/bf16; the full int64 range: random64() itself
 *   bernoulli double draws (random64) < p; a float32 (or smaller) p tensor: float draws < p
 * No CPU-vendor branch: torch 2.13's bernoulli_(float p) has an MKL (VSL_BRNG_MCG31) path for Intel
 * CPUs in its source, but since PR 146174 it is compiled only under FBCODE_CAFFE2 (issue 132395): the
 * released libtorch_cpu's bernoulli_scalar_kernel calls only this mt19937 loop, on every vendor. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../core/mt19937.h"
#include "../core/ops.h"
#include "../core/random_transforms.h"
#include "cpu_backend.h"
#include "cpu_dtype_loops.h"
#include "cpu_random.h"

#ifdef _OPENMP
#include <omp.h>
#endif

#define CHUNK 1024           /* elements per buffer */
#define PARALLEL_MIN 65536   /* below this many elements one thread is faster (ARANGE) */

/* ARANGE: int64 arithmetic when start and step are ints and the output integral, else double. */
typedef struct arange_params {
    bool ints;
    int64_t istart, istep;
    double dstart, dstep;
} arange_params;

/* ARANGE's kernel call. */
typedef struct random_ctx {
    arange_params ar;
} random_ctx;

static void gen_arange(const arange_params *a, int64_t b, int64_t e, double *d, int64_t *iv) {
    if (a->ints)
        for (int64_t i = b; i < e; i++) iv[i - b] = a->istart + i * a->istep;
    else
        for (int64_t i = b; i < e; i++) d[i - b] = a->dstart + (double)i * a->dstep;
}

/* ---- element order and storing through the output's strides ---- */

/* Byte offsets of elements [b, b + n) of t from its data pointer (row-major order of t). */
static void element_offsets(const ampc_tensor *t, int64_t b, int64_t n, int64_t *offs) {
    int nd = t->ndim;
    int64_t item = (int64_t)ampc_dtype_itemsize(t->dtype);
    int64_t idx[AMPC_MAX_DIMS], off = 0, rem = b;
    for (int i = nd - 1; i >= 0; i--) {
        idx[i] = rem % t->shape[i];
        rem /= t->shape[i];
        off += idx[i] * t->strides[i];
    }
    for (int64_t k = 0; k < n; k++) {
        offs[k] = off * item;
        for (int i = nd - 1; i >= 0; i--) { /* odometer step */
            off += t->strides[i];
            if (++idx[i] < t->shape[i]) break;
            off -= idx[i] * t->strides[i];
            idx[i] = 0;
        }
    }
}

/* t's dims in torch's iteration order (size-1 dims dropped) into v: shape, and either t's strides
 * or (row_major) the strides of a contiguous tensor of t's shape. */
static void iteration_view(const ampc_tensor *t, bool row_major, ampc_tensor *v) {
    int64_t cs[AMPC_MAX_DIMS], acc = 1;
    for (int i = t->ndim - 1; i >= 0; i--) cs[i] = acc, acc *= t->shape[i];
    int64_t key[AMPC_MAX_DIMS];
    *v = *t;
    int nd = 0;
    for (int i = 0; i < t->ndim; i++)
        if (t->shape[i] != 1) {
            int j = nd++;
            int64_t s = t->strides[i] < 0 ? -t->strides[i] : t->strides[i];
            while (j > 0) {
                int64_t sp = key[j - 1];
                if (sp >= s) break;
                v->shape[j] = v->shape[j - 1], v->strides[j] = v->strides[j - 1];
                key[j] = sp;
                j--;
            }
            v->shape[j] = t->shape[i], v->strides[j] = row_major ? cs[i] : t->strides[i];
            key[j] = s;
        }
    v->ndim = nd;
}

void ampc_cpu_rng_offsets(const ampc_tensor *t, int64_t b, int64_t n, int64_t *offs) {
    /* TensorIterator drops size-1 dims and orders the rest by stride (stable insertion from
     * the innermost), so a permuted tensor is walked in memory order. */
    ampc_tensor v;
    iteration_view(t, false, &v);
    element_offsets(&v, b, n, offs);
}

/* The row-major indices of t's elements [b, b + n) in torch's iteration order. */
static void iteration_indices(const ampc_tensor *t, int64_t b, int64_t n, int64_t *idx) {
    ampc_tensor v;
    iteration_view(t, true, &v);
    v.dtype = AMPC_UINT8; /* element_offsets scales by the item size: 1 gives indices */
    element_offsets(&v, b, n, idx);
}

void ampc_cpu_rng_store(const ampc_tensor *t, int64_t b, int64_t n, const int64_t *offs, const double *d,
                        const int64_t *iv) {
    char *base = (char *)ampc_data_ptr(t);
#define STORE_CASE(ENUM, SUF, CT, VT)                                                                 \
    case ENUM: {                                                                                      \
        if (!offs) {                                                                                  \
            char *p = base + b * (int64_t)sizeof(CT);                                                 \
            if (d)                                                                                    \
                for (int64_t k = 0; k < n; k++) AMPC_STORE_##SUF(p + k * (int64_t)sizeof(CT), d[k]);  \
            else                                                                                      \
                for (int64_t k = 0; k < n; k++) AMPC_STORE_##SUF(p + k * (int64_t)sizeof(CT), iv[k]); \
        } else if (d) {                                                                               \
            for (int64_t k = 0; k < n; k++) AMPC_STORE_##SUF(base + offs[k], d[k]);                   \
        } else {                                                                                      \
            for (int64_t k = 0; k < n; k++) AMPC_STORE_##SUF(base + offs[k], iv[k]);                  \
        }                                                                                             \
        break;                                                                                        \
    }
    switch (t->dtype) {
        AMPC_FOR_EACH_DTYPE(STORE_CASE)
    default: break;
    }
#undef STORE_CASE
}

void ampc_cpu_rng_serial(ampc_tensor *t, bool ints, ampc_cpu_rng_gen gen, void *ctx) {
    int64_t n = ampc_numel(t);
    bool contiguous = ampc_is_contiguous(t);
    double d[AMPC_CPU_RNG_CHUNK];
    int64_t iv[AMPC_CPU_RNG_CHUNK], offs[AMPC_CPU_RNG_CHUNK];
    for (int64_t b = 0; b < n; b += AMPC_CPU_RNG_CHUNK) {
        int64_t m = n - b < AMPC_CPU_RNG_CHUNK ? n - b : AMPC_CPU_RNG_CHUNK;
        gen(ctx, b, m, ints ? NULL : d, ints ? iv : NULL);
        if (!contiguous) ampc_cpu_rng_offsets(t, b, m, offs);
        ampc_cpu_rng_store(t, b, m, contiguous ? NULL : offs, ints ? NULL : d, ints ? iv : NULL);
    }
}

/* ---- the transforms ---- */

static int float_digits(int dtype) { (void)dtype; return 24; } /* half/bf16 draw as float (opmath) */

/* A float rounded to a 16-bit dtype and back (float32: itself). */
static float round_f(int dtype, float v) {
    if (dtype == AMPC_FLOAT16) return ampc_half_to_f32(ampc_f32_to_half(v));
    if (dtype == AMPC_BFLOAT16) return ampc_bf16_to_f32(ampc_f32_to_bf16(v));
    return v;
}

typedef struct mt_ctx {
    ampc_cpu_generator *g;
    const ampc_random_params *p;
    float ffrom, fto, frange; /* UNIFORM below float64: from, to and (to - from) as torch rounds them */
} mt_ctx;

/* normal_distribution<double>(mean, std): Box-Muller on two 53-bit uniforms, the sine kept for
 * the next call (torch's next_double_normal_sample). */
double ampc_cpu_normal_double(ampc_cpu_generator *g, double mean, double std) {
    if (g->has_double_normal) {
        g->has_double_normal = false;
        return fma(g->double_normal, std, mean);
    }
    double u1 = ampc_mt_unit_double(g);
    double u2 = ampc_mt_unit_double(g);
    double r = sqrt(-2.0 * log1p(-u2));
    double theta = 2.0 * 3.14159265358979323846 * u1;
    g->double_normal = r * sin(theta);
    g->has_double_normal = true;
    return fma(r * cos(theta), std, mean);
}

static void gen_mt(void *vctx, int64_t b, int64_t n, double *d, int64_t *iv) {
    mt_ctx *c = (mt_ctx *)vctx;
    const ampc_random_params *p = c->p;
    ampc_cpu_generator *g = c->g;
    switch (p->op) {
    case AMPC_OP_UNIFORM:
        if (p->dtype == AMPC_FLOAT64) {
            for (int64_t k = 0; k < n; k++) {
                double v = fma(ampc_mt_unit_double(g), p->b - p->a, p->a);
                d[k] = v == p->b ? p->a : v;
            }
        } else {
            int digits = float_digits(p->dtype);
            for (int64_t k = 0; k < n; k++) {
                /* a value that rounds up to `to` in the dtype becomes `from`, as torch's kernel */
                float v = round_f(p->dtype, fmaf(ampc_mt_unit_float(g, digits), c->frange, c->ffrom));
                d[k] = v == c->fto ? c->ffrom : v;
            }
        }
        break;
    case AMPC_OP_NORMAL: /* the serial path: per-element parameters or the small/strided case */
        for (int64_t k = 0; k < n; k++) {
            double mean = p->p0 ? p->p0[b + k] : p->a, std = p->p1 ? p->p1[b + k] : p->b;
            d[k] = ampc_cpu_normal_double(g, mean, std);
        }
        break;
    case AMPC_OP_RANDINT: {
        bool wide = p->range == 0 || (p->range >= (UINT64_C(1) << 32) &&
                                      (p->dtype == AMPC_INT64 || p->dtype == AMPC_FLOAT64 ||
                                       p->dtype == AMPC_FLOAT32 || p->dtype == AMPC_BFLOAT16));
        for (int64_t k = 0; k < n; k++) {
            uint64_t x = wide ? ampc_mt_random64(g) : ampc_mt_random(g);
            /* the full int64 range is random64() itself (torch's uniform_int_full_range) */
            iv[k] = p->range ? (int64_t)(x % p->range + (uint64_t)p->low) : (int64_t)x;
        }
        break;
    }
    case AMPC_OP_BERNOULLI:
        if (p->p0 && p->a == 32) { /* a float p tensor: bernoulli_distribution<float> */
            for (int64_t k = 0; k < n; k++) iv[k] = ampc_mt_unit_float(g, 24) < (float)p->p0[b + k];
        } else {
            for (int64_t k = 0; k < n; k++) iv[k] = ampc_mt_unit_double(g) < (p->p0 ? p->p0[b + k] : p->a);
        }
        break;
    default: break;
    }
}

/* torch's normal_fill_16 in the dtype's arithmetic (float for half/bf16, rounding each named
 * intermediate to the dtype as c10::Half/BFloat16 variables do). */
static void normal_fill16(int dtype, double *data, double mean, double std) {
    if (dtype == AMPC_FLOAT64) {
        for (int j = 0; j < 8; j++) {
            double u1 = 1 - data[j], u2 = data[j + 8];
            double radius = sqrt(-2 * log(u1));
            double theta = 2.0f * 3.14159265358979323846 * u2;
            data[j] = fma(radius * cos(theta), std, mean);
            data[j + 8] = fma(radius * sin(theta), std, mean);
        }
        return;
    }
    float m = (float)mean, s = (float)std;
    for (int j = 0; j < 8; j++) {
        float u1 = round_f(dtype, 1 - (float)data[j]), u2 = (float)data[j + 8];
        float radius = round_f(dtype, sqrtf(-2 * logf(u1)));
        float theta = round_f(dtype, (float)(2.0f * 3.14159265358979323846 * (double)u2));
        data[j] = round_f(dtype, fmaf(radius * cosf(theta), s, m));
        data[j + 8] = round_f(dtype, fmaf(radius * sinf(theta), s, m));
    }
}

/* torch's float Box-Muller on 16 uniforms (AVX2 or scalar, as its build on this machine). */
static void fill16_float(bool avx2, float *f, float mean, float std) {
    if (avx2) {
        ampc_cpu_normal_fill16_avx2(f, mean, std);
        return;
    }
    double d[16];
    for (int i = 0; i < 16; i++) d[i] = f[i];
    normal_fill16(AMPC_FLOAT32, d, mean, std);
    for (int i = 0; i < 16; i++) f[i] = (float)d[i];
}

/* torch's normal_fill: n >= 16, t contiguous. float32 and float64 draw all n uniforms, transform
 * each 16-block in place, then redraw the last 16 from 16 fresh uniforms when n % 16 != 0.
 * float16/bfloat16 run in float through a 16-element buffer: each block draws its own uniforms
 * (the same stream for the whole blocks) and the tail block draws 16 fresh ones right after the
 * last whole block, so its values differ from float32's for the same seed. */
static ampc_status normal_fill(ampc_cpu_generator *g, const ampc_random_params *p, ampc_tensor *t) {
    int64_t n = ampc_numel(t);
    int dt = p->dtype;
    if (dt != AMPC_FLOAT64) {
        bool avx2 = ampc_cpu_normal_uses_avx2();
        bool reduced = dt != AMPC_FLOAT32;
        float mean = (float)p->a, std = (float)p->b;
        float *f = (float *)malloc(sizeof(float) * (size_t)n);
        if (!f) return ampc_set_error(AMPC_E_NOMEM, "normal_: out of memory for %lld elements", (long long)n);
        int64_t drawn = reduced ? n / 16 * 16 : n;
        for (int64_t i = 0; i < drawn; i++) f[i] = ampc_mt_unit_float(g, 24);
        for (int64_t i = 0; i < n - 15; i += 16) fill16_float(avx2, f + i, mean, std);
        if (n % 16 != 0) {
            float tail[16];
            for (int i = 0; i < 16; i++) tail[i] = ampc_mt_unit_float(g, 24);
            fill16_float(avx2, tail, mean, std);
            memcpy(f + n - 16, tail, sizeof tail);
        }
        if (dt == AMPC_FLOAT32) {
            memcpy(ampc_data_ptr(t), f, sizeof(float) * (size_t)n);
        } else {
            char *out = (char *)ampc_data_ptr(t);
            if (dt == AMPC_FLOAT16)
                for (int64_t i = 0; i < n; i++) AMPC_STORE_f16(out + 2 * i, f[i]);
            else
                for (int64_t i = 0; i < n; i++) AMPC_STORE_bf16(out + 2 * i, f[i]);
        }
        free(f);
        return AMPC_OK;
    }
    double *d = (double *)malloc(sizeof(double) * (size_t)n);
    if (!d) return ampc_set_error(AMPC_E_NOMEM, "normal_: out of memory for %lld elements", (long long)n);
    for (int64_t i = 0; i < n; i++) d[i] = ampc_mt_unit_double(g);
    for (int64_t i = 0; i < n - 15; i += 16) normal_fill16(dt, d + i, p->a, p->b);
    if (n % 16 != 0) {
        double *tail = d + n - 16;
        for (int i = 0; i < 16; i++) tail[i] = ampc_mt_unit_double(g);
        normal_fill16(dt, tail, p->a, p->b);
    }
    ampc_cpu_rng_store(t, 0, n, NULL, d, NULL);
    free(d);
    return AMPC_OK;
}

/* UNIFORM, NORMAL, RANDINT, BERNOULLI: cpu_uniform, ... (one kernel per schema) run the draws here. */
static ampc_status random_fill(const ampc_random_params *p, ampc_tensor *t) {
    ampc_cpu_generator *g = ampc_cpu_generator_default();
    int64_t n = ampc_numel(t);
    if (n == 0) return AMPC_OK;
    if (p->op == AMPC_OP_NORMAL && !p->p0 && n >= 16 && ampc_is_contiguous(t)) return normal_fill(g, p, t);
    ampc_random_params q = *p;
    double *perm[2] = {NULL, NULL};
    if ((p->p0 || p->p1) && !ampc_is_contiguous(t)) {
        /* the parameters are laid out row-major; the draws walk torch's order */
        int64_t *idx = (int64_t *)malloc(sizeof(int64_t) * (size_t)n);
        const double *src[2] = {p->p0, p->p1};
        for (int k = 0; k < 2; k++) perm[k] = src[k] ? (double *)malloc(sizeof(double) * (size_t)n) : NULL;
        if (!idx || (p->p0 && !perm[0]) || (p->p1 && !perm[1])) {
            free(idx), free(perm[0]), free(perm[1]);
            return ampc_set_error(AMPC_E_NOMEM, "%s: out of memory", ampc_op_name((ampc_op)p->op));
        }
        iteration_indices(t, 0, n, idx);
        for (int k = 0; k < 2; k++)
            for (int64_t i = 0; perm[k] && i < n; i++) perm[k][i] = src[k][idx[i]];
        free(idx);
        q.p0 = perm[0], q.p1 = perm[1];
    }
    mt_ctx c = {.g = g, .p = &q};
    if (p->op == AMPC_OP_UNIFORM && p->dtype != AMPC_FLOAT64) {
        /* float arithmetic (opmath) for half/bf16 too */
        float from = (float)p->a, to = (float)p->b;
        c.ffrom = from, c.fto = round_f(p->dtype, to);
        c.frange = to - from;
    }
    ampc_cpu_rng_serial(t, ampc_random_makes_ints(p), gen_mt, &c);
    free(perm[0]), free(perm[1]);
    return AMPC_OK;
}
AMPC_RANDOM_KERNELS(cpu, random_fill)

static ampc_status cpu_arange(ampc_op op, const ampc_arange_args *p) {
    random_ctx c;
    ampc_tensor *t = p->out;
    c.ar.ints = p->start.kind == AMPC_SCALAR_INT && p->step.kind == AMPC_SCALAR_INT &&
                !ampc_dtype_is_floating(t->dtype);
    c.ar.istart = ampc_scalar_to_int(p->start);
    c.ar.istep = ampc_scalar_to_int(p->step);
    c.ar.dstart = ampc_scalar_to_double(p->start);
    c.ar.dstep = ampc_scalar_to_double(p->step);
    int64_t n = ampc_numel(t);
    bool contiguous = ampc_is_contiguous(t);
    int64_t chunks = (n + CHUNK - 1) / CHUNK;
#ifdef _OPENMP
#pragma omp parallel for schedule(static) if (n >= PARALLEL_MIN)
#endif
    for (int64_t k = 0; k < chunks; k++) {
        int64_t b = k * CHUNK, e = b + CHUNK < n ? b + CHUNK : n;
        double d[CHUNK];
        int64_t iv[CHUNK], offs[CHUNK];
        gen_arange(&c.ar, b, e, d, iv);
        if (!contiguous) element_offsets(t, b, e - b, offs);
        ampc_cpu_rng_store(t, b, e - b, contiguous ? NULL : offs, c.ar.ints ? NULL : d, c.ar.ints ? iv : NULL);
    }
    return AMPC_OK;
}

void ampc_cpu_register_random(void) {
    ampc_register_uniform(AMPC_CPU, cpu_uniform);
    ampc_register_normal(AMPC_CPU, cpu_normal);
    ampc_register_randint(AMPC_CPU, cpu_randint);
    ampc_register_bernoulli(AMPC_CPU, cpu_bernoulli);
    ampc_register_arange(AMPC_CPU, cpu_arange);
}
