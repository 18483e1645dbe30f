/* cpu_nn_loss_ce_rows.c: cross_entropy's fast path on the CPU, (N, C) float32 logits with class
 * targets (the language-model and classifier case): one row per task, in float, with an exp
 * built to vectorise (ce_expf: 8 lanes of FMA intrinsics where the CPU has AVX2, picked at run
 * time; plain C otherwise). The general path (cpu_nn_loss_class.c: any dtype, K-dim,
 * probabilities) works in double tiles with libm's exp, 6-8x torch's time on a 700 x 10000 batch;
 * this path keeps torch's own precision (torch too sums float exps from Sleef's 1-ulp expf),
 * which tests/test_loss_more.py checks against torch; benchmarks/bench_loss.py times it. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "../core/loss_math.h"
#include "cpu_nn_common.h"
#include "cpu_nn_loss_ce_rows.h"

#define LANES 16

/* exp(x) for x <= ~0 (every argument here is x - max or x - lse): Cody-Waite range reduction
 * by ln 2 and Cephes' degree-5 polynomial on [-ln2/2, ln2/2], within 2 ulp of expf; branch-free
 * so the loops vectorise; 0 below -87.3, where expf is denormal. NaN stays NaN. */
#define CE_EXPF_BODY(x)                                                                                            \
    float xc = (x) < -87.3f ? -87.3f : (x);                                                                        \
    int32_t ni = -(int32_t)(0.5f - xc * 1.44269504088896341f); /* round(xc / ln2), xc <= 0 */                      \
    float n = (float)ni;                                                                                           \
    float r = xc - n * 0.693359375f + n * 2.12194440e-4f;                                                          \
    float p = 1.9875691500e-4f;                                                                                    \
    p = p * r + 1.3981999507e-3f;                                                                                  \
    p = p * r + 8.3334519073e-3f;                                                                                  \
    p = p * r + 4.1665795894e-2f;                                                                                  \
    p = p * r + 1.6666665459e-1f;                                                                                  \
    p = p * r + 5.0000001201e-1f;                                                                                  \
    float e = p * r * r + r + 1.0f;                                                                                \
    int32_t bits = (ni + 127) << 23;                                                                               \
    float scale;                                                                                                   \
    memcpy(&scale, &bits, sizeof scale);

#define CE_ROWS(ATTR, S)                                                                                           \
    ATTR static inline float ce_expf_##S(float x) {                                                                \
        CE_EXPF_BODY(x)                                                                                            \
        return (x) < -87.3f ? 0.0f : e * scale;                                                                    \
    }                                                                                                              \
    /* max of a row, NaN-propagating through the sum that follows */                                             \
    ATTR static float row_max_##S(const float *x, int64_t c) {                                                     \
        float m[LANES];                                                                                            \
        for (int l = 0; l < LANES; l++) m[l] = -INFINITY;                                                          \
        int64_t i = 0;                                                                                             \
        for (; i + LANES <= c; i += LANES)                                                                         \
            for (int l = 0; l < LANES; l++) m[l] = x[i + l] > m[l] ? x[i + l] : m[l];                              \
        float mx = -INFINITY;                                                                                      \
        for (int l = 0; l < LANES; l++) mx = m[l] > mx ? m[l] : mx;                                                \
        for (; i < c; i++) mx = x[i] > mx ? x[i] : mx;                                                             \
        return mx;                                                                                                 \
    }                                                                                                              \
    /* log(sum exp(x - mx)) (float lanes, added up in double), *mx_out = mx = the row's max */                    \
    ATTR static double row_logsum_##S(const float *x, int64_t c, float *mx_out) {                                  \
        float mx = row_max_##S(x, c);                                                                              \
        *mx_out = mx;                                                                                              \
        float s[LANES];                                                                                            \
        for (int l = 0; l < LANES; l++) s[l] = 0;                                                                  \
        int64_t i = 0;                                                                                             \
        for (; i + LANES <= c; i += LANES)                                                                         \
            for (int l = 0; l < LANES; l++) s[l] += ce_expf_##S(x[i + l] - mx);                                    \
        double sum = 0;                                                                                            \
        for (int l = 0; l < LANES; l++) sum += s[l];                                                               \
        for (; i < c; i++) sum += ce_expf_##S(x[i] - mx);                                                          \
        return log(sum);                                                                                           \
    }                                                                                                              \
    /* grad row: g_c = ga * p_c (+ smoothing), p_c = exp((x_c - s1) - s2), lse = s1 + s2 */                         \
    ATTR static void row_grad_##S(const float *x, float *gx, int64_t c, float s1, float s2, float ga, float gb,    \
                                  const float *wf, float wsum) {                                                   \
        if (!wf) {                                                                                                 \
            for (int64_t i = 0; i < c; i++) gx[i] = ga * ce_expf_##S((x[i] - s1) - s2);                            \
        } else { /* label smoothing: a1 p_c + a2 (p_c sum(w) - w_c), ga = g a1, gb = g a2 */                        \
            for (int64_t i = 0; i < c; i++) {                                                                      \
                float p = ce_expf_##S((x[i] - s1) - s2);                                                           \
                gx[i] = ga * p + gb * (p * wsum - wf[i]);                                                          \
            }                                                                                                      \
        }                                                                                                          \
    }

CE_ROWS(, base)

#if defined(__x86_64__) && defined(__GNUC__)
#define CE_AVX2 1
#include <immintrin.h>
#define AVX2 __attribute__((target("avx2,fma")))

/* ce_expf on 8 lanes: the same reduction and polynomial, in FMA */
AVX2 static inline __m256 ce_exp8(__m256 x) {
    const __m256 lo = _mm256_set1_ps(-87.3f);
    __m256 under = _mm256_cmp_ps(x, lo, _CMP_LT_OQ); /* false for NaN, which then stays NaN */
    __m256 xc = _mm256_max_ps(lo, x);               /* the second operand (x) when x is NaN */
    __m256 n = _mm256_round_ps(_mm256_mul_ps(xc, _mm256_set1_ps(1.44269504088896341f)),
                               _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), xc);
    r = _mm256_fmadd_ps(n, _mm256_set1_ps(2.12194440e-4f), r);
    __m256 p = _mm256_set1_ps(1.9875691500e-4f);
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.3981999507e-3f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(8.3334519073e-3f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(4.1665795894e-2f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.6666665459e-1f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(5.0000001201e-1f));
    __m256 e = _mm256_add_ps(_mm256_fmadd_ps(p, _mm256_mul_ps(r, r), r), _mm256_set1_ps(1.0f));
    __m256i bits = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
    return _mm256_andnot_ps(under, _mm256_mul_ps(e, _mm256_castsi256_ps(bits)));
}

AVX2 static double row_logsum_avx2(const float *x, int64_t c, float *mx_out) {
    __m256 m0 = _mm256_set1_ps(-INFINITY), m1 = m0;
    int64_t i = 0;
    for (; i + 16 <= c; i += 16) {
        m0 = _mm256_max_ps(m0, _mm256_loadu_ps(x + i));
        m1 = _mm256_max_ps(m1, _mm256_loadu_ps(x + i + 8));
    }
    float lanes[8];
    _mm256_storeu_ps(lanes, _mm256_max_ps(m0, m1));
    float mx = -INFINITY;
    for (int l = 0; l < 8; l++) mx = lanes[l] > mx ? lanes[l] : mx;
    for (int64_t k = i; k < c; k++) mx = x[k] > mx ? x[k] : mx;
    *mx_out = mx;
    __m256 vm = _mm256_set1_ps(mx), s0 = _mm256_setzero_ps(), s1 = s0, s2 = s0, s3 = s0;
    for (i = 0; i + 32 <= c; i += 32) {
        s0 = _mm256_add_ps(s0, ce_exp8(_mm256_sub_ps(_mm256_loadu_ps(x + i), vm)));
        s1 = _mm256_add_ps(s1, ce_exp8(_mm256_sub_ps(_mm256_loadu_ps(x + i + 8), vm)));
        s2 = _mm256_add_ps(s2, ce_exp8(_mm256_sub_ps(_mm256_loadu_ps(x + i + 16), vm)));
        s3 = _mm256_add_ps(s3, ce_exp8(_mm256_sub_ps(_mm256_loadu_ps(x + i + 24), vm)));
    }
    for (; i + 8 <= c; i += 8) s0 = _mm256_add_ps(s0, ce_exp8(_mm256_sub_ps(_mm256_loadu_ps(x + i), vm)));
    double sum = 0;
    _mm256_storeu_ps(lanes, _mm256_add_ps(_mm256_add_ps(s0, s1), _mm256_add_ps(s2, s3)));
    for (int l = 0; l < 8; l++) sum += lanes[l];
    for (; i < c; i++) sum += ce_expf_base(x[i] - mx);
    return log(sum);
}

AVX2 static void row_grad_avx2(const float *x, float *gx, int64_t c, float s1, float s2, float ga, float gb,
                               const float *wf, float wsum) {
    __m256 v1 = _mm256_set1_ps(s1), v2 = _mm256_set1_ps(s2), va = _mm256_set1_ps(ga), vb = _mm256_set1_ps(gb), vs = _mm256_set1_ps(wsum);
    int64_t i = 0;
    if (!wf) {
        for (; i + 8 <= c; i += 8)
            _mm256_storeu_ps(gx + i, _mm256_mul_ps(va, ce_exp8(_mm256_sub_ps(_mm256_sub_ps(_mm256_loadu_ps(x + i), v1), v2))));
        for (; i < c; i++) gx[i] = ga * ce_expf_base((x[i] - s1) - s2);
        return;
    }
    for (; i + 8 <= c; i += 8) {
        __m256 p = ce_exp8(_mm256_sub_ps(_mm256_sub_ps(_mm256_loadu_ps(x + i), v1), v2));
        __m256 sm = _mm256_fmsub_ps(p, vs, _mm256_loadu_ps(wf + i));
        _mm256_storeu_ps(gx + i, _mm256_fmadd_ps(va, p, _mm256_mul_ps(vb, sm)));
    }
    for (; i < c; i++) {
        float p = ce_expf_base((x[i] - s1) - s2);
        gx[i] = ga * p + gb * (p * wsum - wf[i]);
    }
}
#endif

static bool use_avx2(void) {
#ifdef CE_AVX2
    static int cached = -1;
    if (cached < 0) {
        __builtin_cpu_init();
        cached = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    }
    return cached != 0;
#else
    return false;
#endif
}

static double row_logsum(bool avx2, const float *x, int64_t c, float *mx) {
#ifdef CE_AVX2
    if (avx2) return row_logsum_avx2(x, c, mx);
#endif
    (void)avx2;
    return row_logsum_base(x, c, mx);
}

static void row_grad(bool avx2, const float *x, float *gx, int64_t c, float s1, float s2, float ga, float gb,
                     const float *wf, float wsum) {
#ifdef CE_AVX2
    if (avx2) {
        row_grad_avx2(x, gx, c, s1, s2, ga, gb, wf, wsum);
        return;
    }
#endif
    (void)avx2;
    row_grad_base(x, gx, c, s1, s2, ga, gb, wf, wsum);
}

void cpu_ce_rows_forward(const ce_rows_job *j) {
    bool avx2 = use_avx2();
    int64_t n = j->n, c = j->c;
#ifdef _OPENMP
#pragma omp parallel for schedule(static) num_threads(nn_threads(n * c))
#endif
    for (int64_t r = 0; r < n; r++) {
        const float *x = j->x + r * c;
        float mx;
        double logsum = row_logsum(avx2, x, c, &mx);
        double lse = (double)mx + logsum; /* the loss uses it unrounded: x_t - lse loses no bits to a large max */
        j->lse[r] = (float)lse;
        j->row_loss[r] = j->row_weight[r] = 0;
        int64_t cls = nn_get_index(j->target_dtype, j->target, r);
        if (cls == j->ignore) continue;
        if (cls < 0 || cls >= c) {
            nn_set_flag(j->bad);
            __atomic_store_n(j->bad_target, cls, __ATOMIC_RELAXED);
            continue;
        }
        double smooth = 0;
        if (j->ls > 0)
            for (int64_t i = 0; i < c; i++) smooth -= j->w[i] * ((double)x[i] - lse);
        j->row_weight[r] = j->w[cls];
        j->row_loss[r] = ampc_ce_class_loss_d((double)x[cls] - lse, j->w[cls], j->ls, (double)c, smooth);
    }
}

void cpu_ce_rows_backward(const ce_rows_job *j) {
    bool avx2 = use_avx2();
    int64_t n = j->n, c = j->c;
    bool smooth = j->ls > 0;
#ifdef _OPENMP
#pragma omp parallel for schedule(static) num_threads(nn_threads(n * c))
#endif
    for (int64_t r = 0; r < n; r++) {
        float *gx = j->gx + r * c;
        int64_t cls = nn_get_index(j->target_dtype, j->target, r);
        if (!ampc_class_target_valid(cls, j->ignore, c)) {
            memset(gx, 0, sizeof(float) * (size_t)c);
            continue;
        }
        double g = j->grad ? (double)j->grad[r] : j->gscale;
        double a1 = (1 - j->ls) * j->w[cls], a2 = j->ls / (double)c;
        /* p = exp(x - lse) from the stored float lse, unless |lse| is large enough for its rounding
         * to matter (ulp(16) / 2 = 1e-6): then from the row's max and log-sum, recomputed */
        float s1 = j->lse[r], s2 = 0;
        if (!(fabsf(s1) < 16)) s2 = (float)row_logsum(avx2, j->x + r * c, c, &s1);
        row_grad(avx2, j->x + r * c, gx, c, s1, s2, (float)(g * a1), (float)(g * a2), smooth ? j->wf : NULL,
                 (float)j->wsum);
        gx[cls] -= (float)(g * a1);
    }
}
