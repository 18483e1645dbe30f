/* half.h: IEEE fp16 and bfloat16 <-> fp32 conversions, shared by the CPU and CUDA backends.
 *
 * fp16 and bf16 are real storage formats on every device, so the CPU must round exactly like the
 * GPU: round-to-nearest-even, overflow to +-inf, NaN kept (quietened), subnormals kept. Pure bit
 * manipulation, no intrinsics, so the same code runs in nvcc device code (AMPC_HD) and in C11. */
#ifndef AMPC_HALF_H
#define AMPC_HALF_H

#include <stdint.h>
#include <string.h>

#if defined(__CUDACC__)
#define AMPC_HD __host__ __device__ __forceinline__
#else
#define AMPC_HD static inline
#endif

typedef uint16_t ampc_half;     /* IEEE 754 binary16 bits */
typedef uint16_t ampc_bfloat16; /* top 16 bits of a binary32 */

AMPC_HD uint32_t ampc_f32_bits(float f) {
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

AMPC_HD float ampc_bits_f32(uint32_t u) {
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

AMPC_HD float ampc_bf16_to_f32(ampc_bfloat16 h) { return ampc_bits_f32((uint32_t)h << 16); }

AMPC_HD ampc_bfloat16 ampc_f32_to_bf16(float f) {
    uint32_t u = ampc_f32_bits(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) /* NaN: keep sign, force a quiet payload bit */
        return (ampc_bfloat16)((u >> 16) | 0x0040u);
    /* Round to nearest even: add 0x7fff plus the lowest kept bit, then truncate. Overflow of
     * the exponent carries naturally into +-inf. */
    u += 0x7fffu + ((u >> 16) & 1u);
    return (ampc_bfloat16)(u >> 16);
}

AMPC_HD float ampc_half_to_f32(ampc_half h) {
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu;
    uint32_t man = h & 0x3ffu;
    if (exp == 0x1fu) /* inf or NaN */
        return ampc_bits_f32(sign | 0x7f800000u | (man << 13));
    if (exp == 0) {
        if (man == 0) return ampc_bits_f32(sign);
        /* subnormal: value = man * 2^-24, exact in fp32 */
        float v = (float)man * 5.9604644775390625e-08f;
        return sign ? -v : v;
    }
    return ampc_bits_f32(sign | ((exp + 112u) << 23) | (man << 13));
}

AMPC_HD ampc_half ampc_f32_to_half(float f) {
    uint32_t u = ampc_f32_bits(f);
    uint32_t sign = (u >> 16) & 0x8000u;
    uint32_t abs = u & 0x7fffffffu;
    if (abs > 0x7f800000u) /* NaN: quiet, keep the top payload bits */
        return (ampc_half)(sign | 0x7e00u | ((abs >> 13) & 0x3ffu));
    if (abs >= 0x477ff000u) /* >= 65520 rounds to inf (65504 is the largest finite) */
        return (ampc_half)(sign | 0x7c00u);
    if (abs < 0x38800000u) { /* below 2^-14: subnormal or zero in fp16 */
        if (abs < 0x33000000u) return (ampc_half)sign; /* below 2^-25: rounds to zero */
        uint32_t exp = abs >> 23;
        uint32_t man = (abs & 0x7fffffu) | 0x800000u;
        uint32_t shift = 126u - exp; /* 14..24: bring the value to units of 2^-24 */
        uint32_t kept = man >> shift;
        uint32_t rest = man & ((1u << shift) - 1u);
        uint32_t halfway = 1u << (shift - 1u);
        if (rest > halfway || (rest == halfway && (kept & 1u))) kept++;
        return (ampc_half)(sign | kept);
    }
    /* normal: rebias the exponent, round the 13 dropped mantissa bits to nearest even */
    uint32_t r = abs - 0x38000000u;
    r += 0x0fffu + ((r >> 13) & 1u);
    return (ampc_half)(sign | (r >> 13));
}

#endif
