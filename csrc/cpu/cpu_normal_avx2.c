/* cpu_normal_avx2.c: torch's float32 normal kernel on AVX2 machines (normal_fill_16_AVX2), so
 * randn / normal_ of >= 16 contiguous float32 elements match torch's CPU numbers bit for bit.
 *
 * torch runs Box-Muller there with the log256_ps / sincos256_ps of avx_mathfun.h (Cephes
 * polynomials in AVX, after Julien Pommier's sse_mathfun), not libm, so the same polynomials are
 * written here, operation for operation (a rounding anywhere else changes the last bit), with
 * explicit intrinsics. torch's build lets GCC contract a * b + c into FMAs; the FMAs below are
 * the ones its binary (libtorch_cpu, NormalFill16<float, true>) executes, read off its
 * disassembly, including which product of y * z + e * q1 is fused. Compiled for AVX2+FMA
 * by function attribute; used only when the CPU has both (the capability torch picks there, its
 * AVX512 build also sends normal to this kernel); ATEN_CPU_CAPABILITY=default turns it off as it
 * turns off torch's. */
#include <stdlib.h>
#include <string.h>

#include "cpu_random.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

#define AVX2 __attribute__((target("avx2,fma")))

AVX2 static __m256 log256(__m256 x) {
    const __m256 one = _mm256_set1_ps(1.0f);
    __m256 invalid = _mm256_cmp_ps(x, _mm256_setzero_ps(), _CMP_LE_OS);
    x = _mm256_max_ps(x, _mm256_castsi256_ps(_mm256_set1_epi32(0x00800000))); /* no denormals */
    __m256i imm0 = _mm256_srli_epi32(_mm256_castps_si256(x), 23);
    x = _mm256_and_ps(x, _mm256_castsi256_ps(_mm256_set1_epi32(~0x7f800000))); /* the mantissa */
    x = _mm256_or_ps(x, _mm256_set1_ps(0.5f));
    imm0 = _mm256_sub_epi32(imm0, _mm256_set1_epi32(0x7f));
    __m256 e = _mm256_add_ps(_mm256_cvtepi32_ps(imm0), one);
    __m256 mask = _mm256_cmp_ps(x, _mm256_set1_ps(0.707106781186547524f), _CMP_LT_OS);
    __m256 tmp = _mm256_and_ps(x, mask);
    x = _mm256_sub_ps(x, one);
    e = _mm256_sub_ps(e, _mm256_and_ps(one, mask));
    x = _mm256_add_ps(x, tmp);
    __m256 z = _mm256_mul_ps(x, x);
    static const float p[9] = {7.0376836292E-2f, -1.1514610310E-1f, 1.1676998740E-1f, -1.2420140846E-1f,
                               1.4249322787E-1f, -1.6668057665E-1f, 2.0000714765E-1f, -2.4999993993E-1f,
                               3.3333331174E-1f};
    __m256 y = _mm256_set1_ps(p[0]);
    for (int i = 1; i < 9; i++) y = _mm256_fmadd_ps(y, x, _mm256_set1_ps(p[i]));
    y = _mm256_mul_ps(y, x);
    y = _mm256_fmadd_ps(y, z, _mm256_mul_ps(e, _mm256_set1_ps(-2.12194440e-4f)));
    y = _mm256_fnmadd_ps(z, _mm256_set1_ps(0.5f), y);
    x = _mm256_add_ps(x, y);
    x = _mm256_fmadd_ps(e, _mm256_set1_ps(0.693359375f), x);
    return _mm256_or_ps(x, invalid); /* NaN for x <= 0 */
}

AVX2 static void sincos256(__m256 x, __m256 *s, __m256 *c) {
    __m256 sign_bit_sin = _mm256_and_ps(x, _mm256_castsi256_ps(_mm256_set1_epi32((int)0x80000000)));
    x = _mm256_and_ps(x, _mm256_castsi256_ps(_mm256_set1_epi32(~(int)0x80000000)));
    __m256 y = _mm256_mul_ps(x, _mm256_set1_ps(1.27323954473516f)); /* 4 / pi */
    __m256i imm2 = _mm256_cvttps_epi32(y);
    imm2 = _mm256_add_epi32(imm2, _mm256_set1_epi32(1));
    imm2 = _mm256_and_si256(imm2, _mm256_set1_epi32(~1));
    y = _mm256_cvtepi32_ps(imm2);
    __m256i imm4 = imm2;
    __m256i imm0 = _mm256_slli_epi32(_mm256_and_si256(imm2, _mm256_set1_epi32(4)), 29);
    imm2 = _mm256_cmpeq_epi32(_mm256_and_si256(imm2, _mm256_set1_epi32(2)), _mm256_setzero_si256());
    __m256 swap_sign_bit_sin = _mm256_castsi256_ps(imm0);
    __m256 poly_mask = _mm256_castsi256_ps(imm2);
    /* x = ((x - y * DP1) - y * DP2) - y * DP3 */
    x = _mm256_fmadd_ps(y, _mm256_set1_ps(-0.78515625f), x);
    x = _mm256_fmadd_ps(y, _mm256_set1_ps(-2.4187564849853515625e-4f), x);
    x = _mm256_fmadd_ps(y, _mm256_set1_ps(-3.77489497744594108e-8f), x);
    imm4 = _mm256_sub_epi32(imm4, _mm256_set1_epi32(2));
    imm4 = _mm256_andnot_si256(imm4, _mm256_set1_epi32(4));
    imm4 = _mm256_slli_epi32(imm4, 29);
    __m256 sign_bit_cos = _mm256_castsi256_ps(imm4);
    sign_bit_sin = _mm256_xor_ps(sign_bit_sin, swap_sign_bit_sin);
    __m256 z = _mm256_mul_ps(x, x);
    y = _mm256_set1_ps(2.443315711809948E-005f);
    y = _mm256_fmadd_ps(y, z, _mm256_set1_ps(-1.388731625493765E-003f));
    y = _mm256_fmadd_ps(y, z, _mm256_set1_ps(4.166664568298827E-002f));
    y = _mm256_mul_ps(y, z);
    y = _mm256_fmsub_ps(z, y, _mm256_mul_ps(z, _mm256_set1_ps(0.5f)));
    y = _mm256_add_ps(y, _mm256_set1_ps(1.0f));
    __m256 y2 = _mm256_set1_ps(-1.9515295891E-4f);
    y2 = _mm256_fmadd_ps(y2, z, _mm256_set1_ps(8.3321608736E-3f));
    y2 = _mm256_fmadd_ps(y2, z, _mm256_set1_ps(-1.6666654611E-1f));
    y2 = _mm256_mul_ps(y2, z);
    y2 = _mm256_fmadd_ps(y2, x, x);
    __m256 ysin2 = _mm256_and_ps(poly_mask, y2);
    __m256 ysin1 = _mm256_andnot_ps(poly_mask, y);
    y2 = _mm256_sub_ps(y2, ysin2);
    y = _mm256_sub_ps(y, ysin1);
    *s = _mm256_xor_ps(_mm256_add_ps(ysin1, ysin2), sign_bit_sin);
    *c = _mm256_xor_ps(_mm256_add_ps(y, y2), sign_bit_cos);
}

AVX2 void ampc_cpu_normal_fill16_avx2(float *data, float mean, float std) {
    const __m256 u1 = _mm256_sub_ps(_mm256_set1_ps(1.0f), _mm256_loadu_ps(data));
    const __m256 u2 = _mm256_loadu_ps(data + 8);
    const __m256 radius = _mm256_sqrt_ps(_mm256_mul_ps(_mm256_set1_ps(-2.0f), log256(u1)));
    const __m256 theta = _mm256_mul_ps(_mm256_set1_ps((float)(2.0f * 3.14159265358979323846)), u2);
    __m256 sintheta, costheta;
    sincos256(theta, &sintheta, &costheta);
    const __m256 n1 = _mm256_mul_ps(radius, costheta), n2 = _mm256_mul_ps(radius, sintheta);
    const __m256 m = _mm256_set1_ps(mean), s = _mm256_set1_ps(std);
    _mm256_storeu_ps(data, _mm256_fmadd_ps(n1, s, m));
    _mm256_storeu_ps(data + 8, _mm256_fmadd_ps(n2, s, m));
}

bool ampc_cpu_normal_uses_avx2(void) {
    static int cached = -1;
    if (cached < 0) {
        const char *cap = getenv("ATEN_CPU_CAPABILITY");
        bool off = cap && (strcmp(cap, "default") == 0 || strcmp(cap, "DEFAULT") == 0);
        __builtin_cpu_init();
        cached = !off && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    }
    return cached != 0;
}

#else

bool ampc_cpu_normal_uses_avx2(void) { return false; }
void ampc_cpu_normal_fill16_avx2(float *data, float mean, float std) { (void)data, (void)mean, (void)std; }

#endif
