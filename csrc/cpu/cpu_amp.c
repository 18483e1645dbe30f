/* cpu_amp.c: the scaler's kernels on the CPU: multi-tensor unscale + inf/NaN check, and the
 * scale update (formula shared with CUDA in core/amp_math.h). */
#include <math.h>
#include <stdint.h>

#include "../core/amp_math.h"
#include "../core/kernel_args.h"
#include "cpu_backend.h"
#include "cpu_dtype_loops.h"
#include "cpu_iter.h"

typedef struct {
    float inv_scale;
    int found; /* per-row flag; rows of one call may run on several threads */
} unscale_ctx;

/* Non-finite means all exponent bits set. Testing the bits of the stored value (rather than
 * isfinite() of the converted one) keeps the contiguous loops vectorized: the pass then runs at
 * memory speed. The check looks at the value before scaling, as PyTorch's kernel does; the
 * product is formed in fp32 and rounded once into the grad's dtype. inv_scale == 1 (the check
 * GradScaler runs for AMP-aware optimizers) only reads: the values would not change. */
#define F32_EXP 0x7f800000u
#define F16_EXP 0x7c00u
#define BF16_EXP 0x7f80u

static void unscale_f32(char **d, const int64_t *s, int64_t n, const void *c) {
    unscale_ctx *ctx = (unscale_ctx *)c;
    const float inv = ctx->inv_scale;
    unsigned bad = 0;
    if (s[0] == (int64_t)sizeof(float)) {
        float *x = (float *)d[0];
        const uint32_t *u = (const uint32_t *)d[0];
        if (inv == 1.0f) {
            for (int64_t k = 0; k < n; k++) bad |= (u[k] & F32_EXP) == F32_EXP;
        } else {
            for (int64_t k = 0; k < n; k++) {
                bad |= (u[k] & F32_EXP) == F32_EXP;
                x[k] *= inv;
            }
        }
    } else {
        char *p = d[0];
        for (int64_t k = 0; k < n; k++, p += s[0]) {
            bad |= (*(const uint32_t *)p & F32_EXP) == F32_EXP;
            *(float *)p *= inv;
        }
    }
    if (bad) __atomic_store_n(&ctx->found, 1, __ATOMIC_RELAXED);
}

#define DEFINE_UNSCALE_16(SUF, CT, EXP)                                                          \
    static void unscale_##SUF(char **d, const int64_t *s, int64_t n, const void *c) {            \
        unscale_ctx *ctx = (unscale_ctx *)c;                                                     \
        const float inv = ctx->inv_scale;                                                        \
        unsigned bad = 0;                                                                        \
        if (s[0] == (int64_t)sizeof(CT)) {                                                       \
            const uint16_t *u = (const uint16_t *)d[0];                                          \
            for (int64_t k = 0; k < n; k++) bad |= (u[k] & EXP) == EXP;                          \
            if (inv != 1.0f) unscale_##SUF##_values((CT *)d[0], n, inv);                         \
        } else {                                                                                 \
            char *p = d[0];                                                                      \
            for (int64_t k = 0; k < n; k++, p += s[0]) {                                         \
                bad |= (*(const uint16_t *)p & EXP) == EXP;                                      \
                if (inv != 1.0f) AMPC_STORE_##SUF(p, AMPC_LOAD_##SUF(p) * inv);                  \
            }                                                                                    \
        }                                                                                        \
        if (bad) __atomic_store_n(&ctx->found, 1, __ATOMIC_RELAXED);                             \
    }

/* x[k] = round(float(x[k]) * inv), contiguous. fp16 uses the F16C conversions when the CPU has
 * them (round to nearest even, as ampc_f32_to_half), 8 values at a time. */
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
__attribute__((target("avx,f16c"))) static void unscale_f16_f16c(ampc_half *x, int64_t n, float inv) {
    const __m256 vinv = _mm256_set1_ps(inv);
    int64_t k = 0;
    for (; k + 8 <= n; k += 8) {
        __m256 v = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(x + k)));
        _mm_storeu_si128((__m128i *)(x + k), _mm256_cvtps_ph(_mm256_mul_ps(v, vinv), _MM_FROUND_TO_NEAREST_INT));
    }
    for (; k < n; k++) x[k] = ampc_f32_to_half(ampc_half_to_f32(x[k]) * inv);
}
#define HAVE_F16C_PATH 1
#endif

static void unscale_f16_values(ampc_half *x, int64_t n, float inv) {
#ifdef HAVE_F16C_PATH
    if (__builtin_cpu_supports("avx") && __builtin_cpu_supports("f16c")) {
        unscale_f16_f16c(x, n, inv);
        return;
    }
#endif
    for (int64_t k = 0; k < n; k++) x[k] = ampc_f32_to_half(ampc_half_to_f32(x[k]) * inv);
}

static void unscale_bf16_values(ampc_bfloat16 *x, int64_t n, float inv) {
    for (int64_t k = 0; k < n; k++) x[k] = ampc_f32_to_bf16(ampc_bf16_to_f32(x[k]) * inv);
}

DEFINE_UNSCALE_16(f16, ampc_half, F16_EXP)
DEFINE_UNSCALE_16(bf16, ampc_bfloat16, BF16_EXP)

/* float64 grads: check and scale in double. */
static void unscale_f64(char **d, const int64_t *s, int64_t n, const void *c) {
    unscale_ctx *ctx = (unscale_ctx *)c;
    double inv = ctx->inv_scale;
    int bad = 0;
    char *p = d[0];
    for (int64_t k = 0; k < n; k++, p += s[0]) {
        double v = *(double *)p;
        bad |= !isfinite(v);
        *(double *)p = v * inv;
    }
    if (bad) __atomic_store_n(&ctx->found, 1, __ATOMIC_RELAXED);
}

static ampc_status cpu_unscale_check(ampc_op op, const ampc_amp_unscale_args *a) {
    unscale_ctx ctx = {*(const float *)ampc_data_ptr(a->inv_scale), 0};
    for (int i = 0; i < a->grads_n; i++) {
        ampc_tensor *g = a->grads[i];
        ampc_cpu_loop_fn fn = g->dtype == AMPC_FLOAT32    ? unscale_f32
                              : g->dtype == AMPC_FLOAT16  ? unscale_f16
                              : g->dtype == AMPC_BFLOAT16 ? unscale_bf16
                                                          : unscale_f64;
        ampc_cpu_iter it;
        AMPC_TRY(ampc_cpu_iter_init(&it, 1, &g, 0, NULL));
        ampc_cpu_iter_run(&it, fn, &ctx);
    }
    if (ctx.found) *(float *)ampc_data_ptr(a->found_inf) = 1.0f;
    return AMPC_OK;
}

static ampc_status cpu_update_scale(ampc_op op, const ampc_amp_update_scale_args *a) {
    float *scale = (float *)ampc_data_ptr(a->scale);
    int32_t *tracker = (int32_t *)ampc_data_ptr(a->growth_tracker);
    float found_inf = *(const float *)ampc_data_ptr(a->found_inf);
    ampc_amp_update_scale_math(scale, tracker, found_inf, a->growth_factor, a->backoff_factor, a->growth_interval,
                               a->min_scale, a->max_scale);
    if (a->stats)
        ampc_amp_record_stats((int64_t *)ampc_data_ptr(a->stats), a->history ? (float *)ampc_data_ptr(a->history) : NULL,
                              a->history ? ampc_numel(a->history) : 0, found_inf, *scale);
    return AMPC_OK;
}

void ampc_cpu_register_amp(void) {
    ampc_register_amp_unscale(AMPC_CPU, cpu_unscale_check);
    ampc_register_amp_update_scale(AMPC_CPU, cpu_update_scale);
}
