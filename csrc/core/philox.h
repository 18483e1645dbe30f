/* philox.h: the Philox4x32-10 counter-based generator and the number transforms of ampc's CUDA
 * random kernels (AMPC_HD: also compiled for the host, where the C unit tests check them). The
 * CPU generator is torch's MT19937 instead (mt19937.h); this CUDA stream is ampc's own and does
 * not reproduce torch's CUDA numbers (curand Philox with torch's per-thread offsets).
 *
 * Why counter based: element i of a request can be computed from (seed, offset, i) alone, so any
 * CUDA grid shape produces the same tensor. The layout is the one
 * of Random123 and of curand's Philox4_32_10:
 *
 *   key     = (seed & 0xffffffff, seed >> 32)
 *   counter = (block & 0xffffffff, block >> 32, 0, 0)    one block = four 32-bit words
 *   word j of the stream = philox(counter = j / 4, key)[j % 4]
 *
 * so word j equals the first curand() of curand_init(seed, 0, j, &state).
 *
 * A request (one fill of a tensor of n elements) reserves a multiple of 4 words from the
 * device's generator starting at `offset` (random.c: ampc_philox_reserve). Element i (the
 * row-major linear index of the output, never a memory position, so strides do not matter)
 * consumes `w` consecutive words starting at word offset + i * w:
 *
 *   uniform, bernoulli, random_ with range <= 2^32: w = 1 (w = 2 for float64 uniform)
 *   random_ with range > 2^32: w = 2
 *   normal: Box-Muller on pairs of elements (2m, 2m+1) sharing two uniforms; float32/16/bf16
 *           use one word per uniform (w = 1), float64 two words per uniform (w = 2), so a pair
 *           always lies inside one block.
 *   randperm: Fisher-Yates step k takes the 64-bit value of words 2k, 2k+1 (random.c).
 *
 * Equivalently, element i lies in block offset/4 + i/(4/w); what each op makes of a block is in
 * random_transforms.h, shared by the CPU and CUDA kernels.
 *
 * Arithmetic that must round identically on both devices is written with ampc_fmul/ampc_fadd,
 * which stop nvcc from contracting a*b+c into an FMA (GCC does not contract under -std=c11). Normal samples go through log/sqrt/sin/cos in double: CPU and GPU agree
 * to within an ulp of double, which rounds to the same float in practice but is not promised
 * bit-for-bit. */
#ifndef AMPC_PHILOX_H
#define AMPC_PHILOX_H

#include <math.h>
#include <stdint.h>

#include "half.h" /* AMPC_HD */

#define AMPC_PHILOX_M0 0xD2511F53u
#define AMPC_PHILOX_M1 0xCD9E8D57u
#define AMPC_PHILOX_W0 0x9E3779B9u /* golden ratio */
#define AMPC_PHILOX_W1 0xBB67AE85u /* sqrt(3) - 1 */

typedef struct ampc_philox_block {
    uint32_t w[4];
} ampc_philox_block;

AMPC_HD uint32_t ampc_philox_mulhilo(uint32_t a, uint32_t b, uint32_t *hi) {
#if defined(__CUDA_ARCH__)
    *hi = __umulhi(a, b);
    return a * b;
#else
    uint64_t p = (uint64_t)a * (uint64_t)b;
    *hi = (uint32_t)(p >> 32);
    return (uint32_t)p;
#endif
}

/* Philox4x32 with 10 rounds over a full 128-bit counter (Random123's philox4x32_R(10, ...)). */
AMPC_HD ampc_philox_block ampc_philox4x32_10(const uint32_t ctr[4], const uint32_t key[2]) {
    uint32_t c0 = ctr[0], c1 = ctr[1], c2 = ctr[2], c3 = ctr[3];
    uint32_t k0 = key[0], k1 = key[1];
    for (int round = 0; round < 10; round++) {
        uint32_t hi0, hi1;
        uint32_t lo0 = ampc_philox_mulhilo(AMPC_PHILOX_M0, c0, &hi0);
        uint32_t lo1 = ampc_philox_mulhilo(AMPC_PHILOX_M1, c2, &hi1);
        c0 = hi1 ^ c1 ^ k0;
        c1 = lo1;
        c2 = hi0 ^ c3 ^ k1;
        c3 = lo0;
        k0 += AMPC_PHILOX_W0; /* the key bump between rounds (one extra after the last is unused) */
        k1 += AMPC_PHILOX_W1;
    }
    ampc_philox_block out;
    out.w[0] = c0;
    out.w[1] = c1;
    out.w[2] = c2;
    out.w[3] = c3;
    return out;
}

/* Block number `block` (< 2^64) of the stream keyed by `seed`. */
AMPC_HD ampc_philox_block ampc_philox_at(uint64_t seed, uint64_t block) {
    uint32_t ctr[4] = {(uint32_t)block, (uint32_t)(block >> 32), 0u, 0u};
    uint32_t key[2] = {(uint32_t)seed, (uint32_t)(seed >> 32)};
    return ampc_philox4x32_10(ctr, key);
}

/* Word j of the stream (convenience for host code; kernels take whole blocks). */
AMPC_HD uint32_t ampc_philox_word(uint64_t seed, uint64_t j) {
    return ampc_philox_at(seed, j >> 2).w[j & 3];
}

/* ---- transforms ---- */

/* Separate multiply and add with round-to-nearest, never fused: both devices round alike. */
#if defined(__CUDA_ARCH__)
#define AMPC_ROUNDED_OP(NAME, T, OP, INTRINSIC) \
    AMPC_HD T NAME(T a, T b) { return INTRINSIC(a, b); }
#else
#define AMPC_ROUNDED_OP(NAME, T, OP, INTRINSIC) \
    AMPC_HD T NAME(T a, T b) { return a OP b; }
#endif
AMPC_ROUNDED_OP(ampc_fmul, float, *, __fmul_rn)
AMPC_ROUNDED_OP(ampc_fadd, float, +, __fadd_rn)
AMPC_ROUNDED_OP(ampc_dmul, double, *, __dmul_rn)
AMPC_ROUNDED_OP(ampc_dadd, double, +, __dadd_rn)
#undef AMPC_ROUNDED_OP

/* [0, 1) from the low 24 bits, as PyTorch does for float: every value exact in float. */
AMPC_HD float ampc_philox_u24(uint32_t x) { return (float)(x & 0xffffffu) * 5.9604644775390625e-08f; }

/* [0, 1) from 53 bits of two words (hi supplies the top 21 bits), for double. */
AMPC_HD double ampc_philox_u53(uint32_t lo, uint32_t hi) {
    uint64_t x = ((uint64_t)hi << 32) | lo;
    return (double)(x & ((1ull << 53) - 1)) * 1.1102230246251565e-16;
}

/* [0, 1) with 32 bits of resolution (bernoulli compares it with p in double). */
AMPC_HD double ampc_philox_u32(uint32_t x) { return (double)x * 2.3283064365386963e-10; }

/* (0, 1]: the Box-Muller radius takes log(u), so 0 must not occur. */
AMPC_HD double ampc_philox_u32_open0(uint32_t x) { return ((double)x + 1.0) * 2.3283064365386963e-10; }
AMPC_HD double ampc_philox_u53_open0(uint32_t lo, uint32_t hi) {
    uint64_t x = ((uint64_t)hi << 32) | lo;
    return (double)((x & ((1ull << 53) - 1)) + 1) * 1.1102230246251565e-16;
}

/* Box-Muller: two independent standard normals from u1 in (0, 1] and u2 in [0, 1). Element 2m
 * of a pair takes the cosine branch, element 2m+1 the sine branch. */
AMPC_HD void ampc_box_muller(double u1, double u2, double *z_cos, double *z_sin) {
    const double two_pi = 6.283185307179586;
    double r = sqrt(-2.0 * log(u1));
    double theta = two_pi * u2;
    *z_cos = r * cos(theta);
    *z_sin = r * sin(theta);
}

/* Standard normals of one block: four with 32-bit uniforms (float32/16/bf16 outputs), or two
 * with 53-bit uniforms (float64). Returns how many it wrote. */
AMPC_HD int ampc_philox_normals(ampc_philox_block b, int double_precision, double z[4]) {
    if (double_precision) {
        ampc_box_muller(ampc_philox_u53_open0(b.w[0], b.w[1]), ampc_philox_u53(b.w[2], b.w[3]), &z[0], &z[1]);
        return 2;
    }
    ampc_box_muller(ampc_philox_u32_open0(b.w[0]), ampc_philox_u32(b.w[1]), &z[0], &z[1]);
    ampc_box_muller(ampc_philox_u32_open0(b.w[2]), ampc_philox_u32(b.w[3]), &z[2], &z[3]);
    return 4;
}

/* Standard normal of element i of a request starting at block `block0` (= offset / 4): the
 * per-element form of the layout above, for tests and simple kernels. */
AMPC_HD double ampc_philox_normal_at(uint64_t seed, uint64_t block0, uint64_t i, int double_precision) {
    int per_block = double_precision ? 2 : 4;
    double z[4];
    ampc_philox_normals(ampc_philox_at(seed, block0 + i / (uint64_t)per_block), double_precision, z);
    return z[i % (uint64_t)per_block];
}

#endif
