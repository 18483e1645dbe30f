/* cpu_gemm_blocked.c: ampc's own float/double GEMM, for builds without CBLAS and for
 * AMPC_GEMM=fallback. C = alpha * A @ B + beta * C, A and B read through any strides.
 *
 * The classic packed, cache-tiled scheme (Goto / BLIS): a KC x NC panel of B is packed once into
 * NR-wide column strips (L3-sized), each MC x KC block of A into MR-high row strips (L2-sized),
 * and an MR x NR micro-kernel sums KC rank-1 updates in registers. Packing is also what makes
 * strided and transposed operands cost nothing extra. OpenMP splits the MC row blocks.
 *
 * The micro-kernel is a plain C loop, compiled three times (generic, AVX2+FMA, AVX-512) and
 * picked at run time, so a distributed build runs the widest vectors the CPU has without
 * -march=native. MR x NR = 6 x 32 because GCC keeps that accumulator tile in registers (at 6 x 16
 * it splits it into scalars and runs 50x slower); 6 x 32 floats are 12 zmm registers. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_gemm.h"

#define MR 6
#define NR 32
#define KC 256
#define MC (16 * MR)
#define NC (64 * NR)

/* One micro-kernel per (type, instruction set): acc (MR x NR, row-major) = sum over kc of
 * a-strip column times b-strip row. FMA variants use fma() so the contraction is explicit
 * (-std=c11 turns off implicit fp contraction). */
#define DEFINE_MICRO_KERNEL(NAME, T, ATTR, MULADD)                                                  \
    ATTR static void NAME(int64_t kc, const T *restrict ap, const T *restrict bp, T *restrict out) { \
        T acc[MR][NR];                                                                              \
        memset(acc, 0, sizeof acc);                                                                 \
        for (int64_t p = 0; p < kc; p++) {                                                          \
            const T *a = ap + p * MR, *b = bp + p * NR;                                             \
            for (int i = 0; i < MR; i++)                                                            \
                for (int j = 0; j < NR; j++) acc[i][j] = MULADD(a[i], b[j], acc[i][j]);             \
        }                                                                                           \
        memcpy(out, acc, sizeof acc);                                                               \
    }

#define MULADD_PLAIN(a, b, c) ((a) * (b) + (c))

#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
#define AMPC_GEMM_X86 1
#define ATTR_AVX2 __attribute__((target("avx2,fma")))
#define ATTR_AVX512 __attribute__((target("avx512f,fma")))
#endif

typedef void (*micro_fn_f32)(int64_t, const float *restrict, const float *restrict, float *restrict);
typedef void (*micro_fn_f64)(int64_t, const double *restrict, const double *restrict, double *restrict);

DEFINE_MICRO_KERNEL(micro_f32_generic, float, , MULADD_PLAIN)
DEFINE_MICRO_KERNEL(micro_f64_generic, double, , MULADD_PLAIN)
#ifdef AMPC_GEMM_X86
DEFINE_MICRO_KERNEL(micro_f32_avx2, float, ATTR_AVX2, fmaf)
DEFINE_MICRO_KERNEL(micro_f64_avx2, double, ATTR_AVX2, fma)
DEFINE_MICRO_KERNEL(micro_f32_avx512, float, ATTR_AVX512, fmaf)
DEFINE_MICRO_KERNEL(micro_f64_avx512, double, ATTR_AVX512, fma)
#endif

/* 0 generic, 1 AVX2+FMA, 2 AVX-512; decided once (cpuid is cheap but not free). */
static int simd_level(void) {
    static int level = -1;
    if (level < 0) {
        int l = 0;
#ifdef AMPC_GEMM_X86
        __builtin_cpu_init();
        if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) l = 1;
        if (__builtin_cpu_supports("avx512f")) l = 2;
#endif
        level = l;
    }
    return level;
}

static micro_fn_f32 pick_f32(void) {
#ifdef AMPC_GEMM_X86
    switch (simd_level()) {
    case 2: return micro_f32_avx512;
    case 1: return micro_f32_avx2;
    default: break;
    }
#endif
    return micro_f32_generic;
}

static micro_fn_f64 pick_f64(void) {
#ifdef AMPC_GEMM_X86
    switch (simd_level()) {
    case 2: return micro_f64_avx512;
    case 1: return micro_f64_avx2;
    default: break;
    }
#endif
    return micro_f64_generic;
}

#define T float
#define SUF f32
#include "cpu_gemm_blocked_impl.h"
#undef T
#undef SUF

#define T double
#define SUF f64
#include "cpu_gemm_blocked_impl.h"
#undef T
#undef SUF
