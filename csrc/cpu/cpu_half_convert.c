/* cpu_half_convert.c: the block conversions of cpu_half_convert.h.
 *
 * fp16: VCVTPH2PS/VCVTPS2PH round to nearest even, keep subnormals, quieten NaNs and keep their
 * top payload bits, exactly like ampc_half_to_f32/ampc_f32_to_half except that a signalling
 * fp16 NaN widens quietened (the scalar code keeps it signalling): still a NaN of the same sign
 * and payload. The immediate rounding mode ignores MXCSR. Tails use half.h.
 * bf16: plain integer loops the compiler vectorizes (AVX512-BF16's VCVTNEPS2BF16 flushes
 * subnormal inputs to zero, so it would not match). */
#include "cpu_half_convert.h"

#include <string.h>

/* A conversion kernel: STEP converts elements [i, i + W) (W = 1: plain C), the tail goes
 * element by element through half.h's SCALAR. */
#define F16_KERNEL(NAME, ATTR, W, SRC_T, DST_T, STEP, SCALAR)             \
    ATTR static void NAME(const SRC_T *src, DST_T *dst, int64_t n) {      \
        int64_t i = 0;                                                    \
        for (; i + W <= n; i += W) STEP;                                  \
        for (; i < n; i++) dst[i] = SCALAR(src[i]);                       \
    }

#define F16_PLAIN_STEP(SCALAR) dst[i] = SCALAR(src[i])
F16_KERNEL(f16_to_f32_plain, , 1, ampc_half, float, F16_PLAIN_STEP(ampc_half_to_f32), ampc_half_to_f32)
F16_KERNEL(f32_to_f16_plain, , 1, float, ampc_half, F16_PLAIN_STEP(ampc_f32_to_half), ampc_f32_to_half)

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define AMPC_X86 1
#define F16_RND (_MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)

F16_KERNEL(f16_to_f32_avx512, __attribute__((target("avx512f"))), 16, ampc_half, float,
           _mm512_storeu_ps(dst + i, _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(src + i)))),
           ampc_half_to_f32)
F16_KERNEL(f32_to_f16_avx512, __attribute__((target("avx512f"))), 16, float, ampc_half,
           _mm256_storeu_si256((__m256i *)(dst + i), _mm512_cvtps_ph(_mm512_loadu_ps(src + i), F16_RND)),
           ampc_f32_to_half)
F16_KERNEL(f16_to_f32_f16c, __attribute__((target("avx,f16c"))), 8, ampc_half, float,
           _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(src + i)))), ampc_half_to_f32)
F16_KERNEL(f32_to_f16_f16c, __attribute__((target("avx,f16c"))), 8, float, ampc_half,
           _mm_storeu_si128((__m128i *)(dst + i), _mm256_cvtps_ph(_mm256_loadu_ps(src + i), F16_RND)),
           ampc_f32_to_half)
#else /* level 0 only: the plain kernels stand in for the vector ones */
#define f16_to_f32_avx512 f16_to_f32_plain
#define f32_to_f16_avx512 f32_to_f16_plain
#define f16_to_f32_f16c f16_to_f32_plain
#define f32_to_f16_f16c f32_to_f16_plain
#endif

/* 2: AVX-512, 1: F16C, 0: plain C. Computed once; the race of two first calls is benign. */
static int f16_level(void) {
    static int level = -1;
    int l = __atomic_load_n(&level, __ATOMIC_RELAXED);
    if (l < 0) {
        l = 0;
#ifdef AMPC_X86
        if (__builtin_cpu_supports("avx") && __builtin_cpu_supports("f16c")) l = 1;
        if (__builtin_cpu_supports("avx512f")) l = 2;
#endif
        __atomic_store_n(&level, l, __ATOMIC_RELAXED);
    }
    return l;
}

/* An entry point: the kernel of the CPU's level, called directly. */
#define F16_ENTRY(NAME, SRC_T, DST_T, STEM)                                \
    void NAME(const SRC_T *src, DST_T *dst, int64_t n) {                  \
        switch (f16_level()) {                                            \
        case 2: STEM##_avx512(src, dst, n); return;                       \
        case 1: STEM##_f16c(src, dst, n); return;                         \
        default: STEM##_plain(src, dst, n); return;                       \
        }                                                                 \
    }

F16_ENTRY(ampc_cpu_f16_to_f32, ampc_half, float, f16_to_f32)
F16_ENTRY(ampc_cpu_f32_to_f16, float, ampc_half, f32_to_f16)

void ampc_cpu_bf16_to_f32(const ampc_bfloat16 *src, float *dst, int64_t n) {
    for (int64_t i = 0; i < n; i++) dst[i] = ampc_bf16_to_f32(src[i]);
}

/* half.h's ampc_f32_to_bf16 without the branch, so it vectorizes. */
void ampc_cpu_f32_to_bf16(const float *src, ampc_bfloat16 *dst, int64_t n) {
    for (int64_t i = 0; i < n; i++) {
        uint32_t u;
        memcpy(&u, src + i, sizeof u);
        uint32_t rounded = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
        uint32_t quiet_nan = (u >> 16) | 0x0040u;
        dst[i] = (ampc_bfloat16)((u & 0x7fffffffu) > 0x7f800000u ? quiet_nan : rounded);
    }
}
