/* cpu_nn_attn.c: fused scaled_dot_product_attention on the CPU (rows SDPA_FLASH and
 * SDPA_FLASH_BACKWARD of ops.def; the frontend and the gradient rule are core/nn_attn.c).
 *
 * Flash attention: a tile of BQ queries meets the keys BK at a time, and an online softmax
 * (running row max m, running sum l, output rescaled by exp(m_old - m_new)) folds each tile into
 * the output, so memory is O(L + S) per head instead of the (L, S) score matrix. The forward
 * keeps lse = m + log(l) per query row; the backward recomputes P = exp(scores - lse) tile by
 * tile (FlashAttention-2), in two passes over the keys of a query tile (D = rowsum(P * dP) first,
 * the P and dP tiles of that query tile kept meanwhile: O(S) memory):
 *   dV += P'^T dO,  dP = dO V^T * keep / (1 - p),  dS = P * (dP - D),
 *   dQ += dS K * scale,  dK += dS^T (Q * scale)            (P' = P * keep / (1 - p))
 * fp16/bf16 inputs are widened to fp32 once per tile and all sums run in fp32; fp64 in fp64.
 *
 * Parallel work: the forward splits (query head, query tile); the backward splits query heads,
 * each with fp32 dK/dV accumulators of its own, summed over the heads of a group (GQA) at the end.
 * The tile products go through one small GEMM (C += A B, row-major), an AVX2+FMA micro-kernel
 * where the CPU has it; keys are stored transposed in tiles of BK columns (row stride KT_LD, not a
 * power of two, so the rows of a tile do not collide in one cache set). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../core/dispatch.h"
#include "../core/half.h"
#include "../core/kernel_args.h"
#include "../core/ops.h"
#include "../core/philox.h"
#include "cpu_backend.h"
#include "cpu_half_convert.h"
#include "cpu_nn_common.h"

#if defined(__GNUC__) && defined(__x86_64__)
#include <immintrin.h>
#define ATTN_X86 1
#endif

#define BQ 64          /* query rows per tile */
#define BK 128         /* key columns per tile */
#define KT_LD (BK + 16) /* row stride of a transposed key/value tile */

/* ---------------------------------------------------------------- geometry */

typedef struct attn_geom {
    int64_t n, hq, hk, group, l, s, e, ev;
    int64_t nkb;              /* key tiles: ceil(s / BK) */
    const void *mask;         /* NULL: none */
    ampc_dtype mask_dt;
    int64_t ms[4];            /* mask strides (N, Hq, L, S), elements */
    bool causal;
    double scale, p;          /* p: dropout probability */
    uint64_t seed, offset;
    ampc_dtype dt;
} attn_geom;

static attn_geom geom_of(const ampc_tensor *q, const ampc_tensor *k, const ampc_tensor *v, const ampc_tensor *mask,
                         double scale, bool causal, double p, uint64_t seed, uint64_t offset) {
    attn_geom g;
    memset(&g, 0, sizeof g);
    g.n = q->shape[0], g.hq = q->shape[1], g.l = q->shape[2], g.e = q->shape[3];
    g.hk = k->shape[1], g.s = k->shape[2], g.ev = v->shape[3];
    g.group = g.hk > 0 ? g.hq / g.hk : 1;
    g.nkb = (g.s + BK - 1) / BK;
    g.mask = mask ? ampc_data_ptr(mask) : NULL;
    g.mask_dt = mask ? mask->dtype : AMPC_BOOL;
    for (int i = 0; i < 4 && mask; i++) g.ms[i] = mask->strides[i];
    g.causal = causal, g.scale = scale, g.p = p, g.seed = seed, g.offset = offset;
    g.dt = q->dtype;
    return g;
}

/* The key/value head that query head nq (over N * Hq) reads. */
static inline int64_t kv_head(const attn_geom *g, int64_t nq) {
    return (nq / g->hq) * g->hk + (nq % g->hq) / g->group;
}

/* Keys a query tile [i0, i0 + bq) looks at: all, or j <= i under is_causal. */
static inline int64_t key_end(const attn_geom *g, int64_t i0, int64_t bq) {
    if (!g->causal) return g->s;
    return i0 + bq < g->s ? i0 + bq : g->s;
}

/* ---------------------------------------------------------------- float32 tile GEMM */

/* C (n x m) += A (n x k) @ B (k x m), row-major with leading dims. */
static void gemm_f32_generic(int64_t n, int64_t m, int64_t k, const float *restrict a, int64_t lda,
                             const float *restrict b, int64_t ldb, float *restrict c, int64_t ldc) {
    for (int64_t i = 0; i < n; i++)
        for (int64_t p = 0; p < k; p++) {
            float av = a[i * lda + p];
            const float *bp = b + p * ldb;
            float *cp = c + i * ldc;
            for (int64_t j = 0; j < m; j++) cp[j] += av * bp[j];
        }
}

#ifdef ATTN_X86
/* 4 x 16 register tile (8 ymm accumulators), then 4 x 8, then scalar columns and rows. */
__attribute__((target("avx2,fma"))) static void gemm_f32_avx2(int64_t n, int64_t m, int64_t k, const float *restrict a,
                                                               int64_t lda, const float *restrict b, int64_t ldb,
                                                               float *restrict c, int64_t ldc) {
    int64_t i = 0;
    for (; i + 4 <= n; i += 4) {
        const float *a0 = a + i * lda, *a1 = a0 + lda, *a2 = a1 + lda, *a3 = a2 + lda;
        float *c0 = c + i * ldc, *c1 = c0 + ldc, *c2 = c1 + ldc, *c3 = c2 + ldc;
        int64_t j = 0;
        for (; j + 16 <= m; j += 16) {
            __m256 x00 = _mm256_loadu_ps(c0 + j), x01 = _mm256_loadu_ps(c0 + j + 8);
            __m256 x10 = _mm256_loadu_ps(c1 + j), x11 = _mm256_loadu_ps(c1 + j + 8);
            __m256 x20 = _mm256_loadu_ps(c2 + j), x21 = _mm256_loadu_ps(c2 + j + 8);
            __m256 x30 = _mm256_loadu_ps(c3 + j), x31 = _mm256_loadu_ps(c3 + j + 8);
            for (int64_t p = 0; p < k; p++) {
                const float *bp = b + p * ldb + j;
                __m256 b0 = _mm256_loadu_ps(bp), b1 = _mm256_loadu_ps(bp + 8), av;
                av = _mm256_broadcast_ss(a0 + p), x00 = _mm256_fmadd_ps(av, b0, x00), x01 = _mm256_fmadd_ps(av, b1, x01);
                av = _mm256_broadcast_ss(a1 + p), x10 = _mm256_fmadd_ps(av, b0, x10), x11 = _mm256_fmadd_ps(av, b1, x11);
                av = _mm256_broadcast_ss(a2 + p), x20 = _mm256_fmadd_ps(av, b0, x20), x21 = _mm256_fmadd_ps(av, b1, x21);
                av = _mm256_broadcast_ss(a3 + p), x30 = _mm256_fmadd_ps(av, b0, x30), x31 = _mm256_fmadd_ps(av, b1, x31);
            }
            _mm256_storeu_ps(c0 + j, x00), _mm256_storeu_ps(c0 + j + 8, x01);
            _mm256_storeu_ps(c1 + j, x10), _mm256_storeu_ps(c1 + j + 8, x11);
            _mm256_storeu_ps(c2 + j, x20), _mm256_storeu_ps(c2 + j + 8, x21);
            _mm256_storeu_ps(c3 + j, x30), _mm256_storeu_ps(c3 + j + 8, x31);
        }
        for (; j + 8 <= m; j += 8) {
            __m256 x0 = _mm256_loadu_ps(c0 + j), x1 = _mm256_loadu_ps(c1 + j);
            __m256 x2 = _mm256_loadu_ps(c2 + j), x3 = _mm256_loadu_ps(c3 + j);
            for (int64_t p = 0; p < k; p++) {
                __m256 bv = _mm256_loadu_ps(b + p * ldb + j);
                x0 = _mm256_fmadd_ps(_mm256_broadcast_ss(a0 + p), bv, x0);
                x1 = _mm256_fmadd_ps(_mm256_broadcast_ss(a1 + p), bv, x1);
                x2 = _mm256_fmadd_ps(_mm256_broadcast_ss(a2 + p), bv, x2);
                x3 = _mm256_fmadd_ps(_mm256_broadcast_ss(a3 + p), bv, x3);
            }
            _mm256_storeu_ps(c0 + j, x0), _mm256_storeu_ps(c1 + j, x1);
            _mm256_storeu_ps(c2 + j, x2), _mm256_storeu_ps(c3 + j, x3);
        }
        for (; j < m; j++) {
            float s0 = c0[j], s1 = c1[j], s2 = c2[j], s3 = c3[j];
            for (int64_t p = 0; p < k; p++) {
                float bv = b[p * ldb + j];
                s0 = fmaf(a0[p], bv, s0), s1 = fmaf(a1[p], bv, s1), s2 = fmaf(a2[p], bv, s2), s3 = fmaf(a3[p], bv, s3);
            }
            c0[j] = s0, c1[j] = s1, c2[j] = s2, c3[j] = s3;
        }
    }
    for (; i < n; i++) /* the last rows: fmaf in the same order as above */
        for (int64_t j = 0; j < m; j++) {
            float acc = c[i * ldc + j];
            for (int64_t p = 0; p < k; p++) acc = fmaf(a[i * lda + p], b[p * ldb + j], acc);
            c[i * ldc + j] = acc;
        }
}
#endif

typedef void (*gemm_f32_fn)(int64_t, int64_t, int64_t, const float *restrict, int64_t, const float *restrict, int64_t,
                            float *restrict, int64_t);

static gemm_f32_fn pick_gemm_f32(void) {
#ifdef ATTN_X86
    static int level = -1;
    if (level < 0) {
        __builtin_cpu_init();
        level = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    }
    if (level) return gemm_f32_avx2;
#endif
    return gemm_f32_generic;
}

static void gemm_f64(int64_t n, int64_t m, int64_t k, const double *restrict a, int64_t lda, const double *restrict b,
                     int64_t ldb, double *restrict c, int64_t ldc) {
    for (int64_t i = 0; i < n; i++)
        for (int64_t p = 0; p < k; p++) {
            double av = a[i * lda + p];
            const double *bp = b + p * ldb;
            double *cp = c + i * ldc;
            for (int64_t j = 0; j < m; j++) cp[j] += av * bp[j];
        }
}

/* ---------------------------------------------------------------- row max, exp of a row */

/* exp(v) in float: Cody-Waite reduction and Cephes' degree-6 polynomial (within 2 ulp); below
 * e^-87 the result is 0 (so -inf gives 0), NaN stays NaN. */
static inline float expf_poly(float v) {
    float z = v < -87.0f ? -87.0f : (v > 88.0f ? 88.0f : v);
    float nf = (z * 1.44269504088896341f + 12582912.0f) - 12582912.0f; /* round to nearest */
    float r = z - nf * 0.693359375f;
    r = r + nf * 2.12194440e-4f;
    float p = 1.9875691500e-4f;
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    float y = p * r * r + r + 1.0f;
    uint32_t bits = (uint32_t)((int32_t)nf + 127) << 23;
    float sc;
    memcpy(&sc, &bits, sizeof sc);
    return v < -87.0f ? 0.0f : (v != v ? v : y * sc);
}

/* The max of x[0 .. n) over its non-NaN values; -inf when there are none. A row whose scores are all
 * NaN is thus an empty row (output 0), one with some NaN gives NaN through exp: torch's CPU flash
 * kernel does the same. */
static float row_max_f32_generic(const float *x, int64_t n) {
    float mx = -INFINITY;
    for (int64_t i = 0; i < n; i++) mx = x[i] > mx ? x[i] : mx;
    return mx;
}

/* x[i] = exp(x[i] - sub); returns the sum of the new x. */
static float exp_sub_f32_generic(float *x, int64_t n, float sub) {
    float sum = 0;
    for (int64_t i = 0; i < n; i++) sum += (x[i] = expf_poly(x[i] - sub));
    return sum;
}

#ifdef ATTN_X86
__attribute__((target("avx2,fma"))) static float hsum256(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_shuffle_ps(s, s, 1));
    return _mm_cvtss_f32(s);
}

__attribute__((target("avx2,fma"))) static float row_max_f32_avx2(const float *x, int64_t n) {
    __m256 mx = _mm256_set1_ps(-INFINITY);
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) mx = _mm256_max_ps(_mm256_loadu_ps(x + i), mx); /* a NaN lane keeps mx */
    float m[8], r = -INFINITY;
    _mm256_storeu_ps(m, mx);
    for (int j = 0; j < 8; j++) r = m[j] > r ? m[j] : r;
    for (; i < n; i++) r = x[i] > r ? x[i] : r;
    return r;
}

/* The same polynomial as expf_poly, 8 lanes at a time (with FMA: within the same 2 ulp). */
__attribute__((target("avx2,fma"))) static float exp_sub_f32_avx2(float *x, int64_t n, float sub) {
    const __m256 vsub = _mm256_set1_ps(sub), lo = _mm256_set1_ps(-87.0f), hi = _mm256_set1_ps(88.0f);
    __m256 sum = _mm256_setzero_ps();
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256 v = _mm256_sub_ps(_mm256_loadu_ps(x + i), vsub);
        __m256 z = _mm256_min_ps(_mm256_max_ps(v, lo), hi);
        __m256 nf = _mm256_round_ps(_mm256_mul_ps(z, _mm256_set1_ps(1.44269504088896341f)),
                                    _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
        __m256 r = _mm256_fnmadd_ps(nf, _mm256_set1_ps(0.693359375f), z);
        r = _mm256_fmadd_ps(nf, _mm256_set1_ps(2.12194440e-4f), r);
        __m256 p = _mm256_set1_ps(1.9875691500e-4f);
        p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.3981999507e-3f));
        p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(8.3334519073e-3f));
        p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(4.1665795894e-2f));
        p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.6666665459e-1f));
        p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(5.0000001201e-1f));
        __m256 y = _mm256_add_ps(_mm256_fmadd_ps(p, _mm256_mul_ps(r, r), r), _mm256_set1_ps(1.0f));
        __m256i e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(nf), _mm256_set1_epi32(127)), 23);
        y = _mm256_mul_ps(y, _mm256_castsi256_ps(e));
        y = _mm256_blendv_ps(y, _mm256_setzero_ps(), _mm256_cmp_ps(v, lo, _CMP_LT_OQ));
        y = _mm256_blendv_ps(y, v, _mm256_cmp_ps(v, v, _CMP_UNORD_Q)); /* NaN stays NaN */
        _mm256_storeu_ps(x + i, y);
        sum = _mm256_add_ps(sum, y);
    }
    float total = hsum256(sum);
    for (; i < n; i++) total += (x[i] = expf_poly(x[i] - sub));
    return total;
}
#endif

static float row_max_f32(const float *x, int64_t n) {
#ifdef ATTN_X86
    if (pick_gemm_f32() != gemm_f32_generic) return row_max_f32_avx2(x, n);
#endif
    return row_max_f32_generic(x, n);
}

static float exp_sub_f32(float *x, int64_t n, float sub) {
#ifdef ATTN_X86
    if (pick_gemm_f32() != gemm_f32_generic) return exp_sub_f32_avx2(x, n, sub);
#endif
    return exp_sub_f32_generic(x, n, sub);
}

static double row_max_f64(const double *x, int64_t n) {
    double mx = -INFINITY;
    for (int64_t i = 0; i < n; i++) mx = x[i] > mx ? x[i] : mx;
    return mx;
}

static double exp_sub_f64(double *x, int64_t n, double sub) {
    double sum = 0;
    for (int64_t i = 0; i < n; i++) sum += (x[i] = exp(x[i] - sub));
    return sum;
}

/* ---------------------------------------------------------------- loads and stores */

static void load_f32(ampc_dtype dt, const void *base, int64_t off, int64_t n, float *dst) {
    switch (dt) {
    case AMPC_FLOAT16: ampc_cpu_f16_to_f32((const ampc_half *)base + off, dst, n); break;
    case AMPC_BFLOAT16: ampc_cpu_bf16_to_f32((const ampc_bfloat16 *)base + off, dst, n); break;
    default: memcpy(dst, (const float *)base + off, sizeof(float) * (size_t)n); break;
    }
}

static void store_f32(ampc_dtype dt, void *base, int64_t off, int64_t n, const float *src) {
    switch (dt) {
    case AMPC_FLOAT16: ampc_cpu_f32_to_f16(src, (ampc_half *)base + off, n); break;
    case AMPC_BFLOAT16: ampc_cpu_f32_to_bf16(src, (ampc_bfloat16 *)base + off, n); break;
    default: memcpy((float *)base + off, src, sizeof(float) * (size_t)n); break;
    }
}

static void load_f64(ampc_dtype dt, const void *base, int64_t off, int64_t n, double *dst) {
    (void)dt;
    memcpy(dst, (const double *)base + off, sizeof(double) * (size_t)n);
}

static void store_f64(ampc_dtype dt, void *base, int64_t off, int64_t n, const double *src) {
    (void)dt;
    memcpy((double *)base + off, src, sizeof(double) * (size_t)n);
}

/* Mask element (already offset) as an additive value: bool False -> -inf. */
static inline double mask_value(ampc_dtype dt, const void *m, int64_t i) {
    switch (dt) {
    case AMPC_BOOL: return ((const uint8_t *)m)[i] ? 0.0 : -INFINITY;
    case AMPC_FLOAT16: return ampc_half_to_f32(((const ampc_half *)m)[i]);
    case AMPC_BFLOAT16: return ampc_bf16_to_f32(((const ampc_bfloat16 *)m)[i]);
    case AMPC_FLOAT64: return ((const double *)m)[i];
    default: return ((const float *)m)[i];
    }
}

/* p[jj] *= keep(nq, i, j0 + jj) / (1 - p) for jj < n: one Philox block per 4 words. */
#define DEFINE_DROPOUT_ROW(NAME, T)                                                                     \
    static void NAME(const attn_geom *g, int64_t nq, int64_t i, int64_t j0, int64_t n, T *p) {        \
        T keep_scale = (T)(1.0 / (1.0 - g->p));                                                         \
        uint64_t w = g->offset + (uint64_t)((nq * g->l + i) * g->s + j0);                               \
        double thresh = 1.0 - g->p;                                                                     \
        ampc_philox_block blk = ampc_philox_at(g->seed, w >> 2);                                        \
        for (int64_t jj = 0; jj < n; jj++, w++) {                                                       \
            if ((w & 3) == 0 && jj > 0) blk = ampc_philox_at(g->seed, w >> 2);                          \
            p[jj] = ampc_philox_u32(blk.w[w & 3]) < thresh ? p[jj] * keep_scale : (T)0;                 \
        }                                                                                               \
    }

/* ---------------------------------------------------------------- per-dtype bodies */

#define T float
#define SUF f32
#define GEMM(...) pick_gemm_f32()(__VA_ARGS__)
#define EXP_SUB exp_sub_f32
#define ROW_MAX row_max_f32
#include "cpu_nn_attn_impl.h"
#undef T
#undef SUF
#undef GEMM
#undef EXP_SUB
#undef ROW_MAX

#define T double
#define SUF f64
#define GEMM(...) gemm_f64(__VA_ARGS__)
#define EXP_SUB exp_sub_f64
#define ROW_MAX row_max_f64
#include "cpu_nn_attn_impl.h"
#undef T
#undef SUF
#undef GEMM
#undef EXP_SUB
#undef ROW_MAX

/* ---------------------------------------------------------------- kernels */

static ampc_status cpu_sdpa_flash(ampc_op op, const ampc_sdpa_flash_args *a) {
    attn_geom g = geom_of(a->q, a->k, a->v, a->mask, a->scale, a->is_causal, a->dropout_p, a->seed, a->offset);
    if (g.n * g.hq * g.l == 0) return AMPC_OK;
    if (g.dt == AMPC_FLOAT64) return attn_forward_f64(op, &g, a);
    return attn_forward_f32(op, &g, a);
}

static ampc_status cpu_sdpa_flash_backward(ampc_op op, const ampc_sdpa_flash_backward_args *a) {
    attn_geom g = geom_of(a->q, a->k, a->v, a->mask, a->scale, a->is_causal, a->dropout_p, a->seed, a->offset);
    if (g.dt == AMPC_FLOAT64) return attn_backward_f64(op, &g, a);
    return attn_backward_f32(op, &g, a);
}

void ampc_cpu_register_nn_attn(void) {
    ampc_register_sdpa_flash(AMPC_CPU, cpu_sdpa_flash);
    ampc_register_sdpa_flash_backward(AMPC_CPU, cpu_sdpa_flash_backward);
}
