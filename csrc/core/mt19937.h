/* mt19937.h: the CPU generator, the same stream as PyTorch's CPUGeneratorImpl, so that
 * manual_seed(s) then rand/randn/randint/... give torch's CPU numbers bit for bit.
 *
 * torch's CPU generator is a 32-bit Mersenne Twister (MT19937) seeded with the low 32 bits of
 * the seed (init_genrand), plus two one-value caches of the Box-Muller sine sample that its
 * scalar normal_distribution<double>/<float> keep between calls. random() is one 32-bit
 * output; random64() is two of them, the first in the high half. The kernels that read it
 * (cpu/cpu_random.c, cpu/cpu_sampling.c) run serially in torch's element order, because the
 * stream is sequential: element k consumes the k-th draw(s).
 *
 * Plain C11 with no Python, shared by the core (random.c owns the one CPU instance and its
 * state bytes) and the CPU kernels. */
#ifndef AMPC_MT19937_H
#define AMPC_MT19937_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#define AMPC_MT_N 624
#define AMPC_MT_M 397

typedef struct ampc_cpu_generator {
    uint64_t seed;              /* what manual_seed gave (initial_seed); the engine uses its low 32 bits */
    uint32_t state[AMPC_MT_N];
    int32_t left;               /* outputs left before the next twist, as torch's left_ (1: twist first) */
    int32_t next;               /* index of the next state word */
    bool has_float_normal;      /* torch's next_float_normal_sample_ */
    float float_normal;
    bool has_double_normal;     /* torch's next_double_normal_sample_ */
    double double_normal;
} ampc_cpu_generator;

/* Serialised state (get_rng_state): seed u64, left i32, next i32, 624 state words, then
 * has_float u8, float f32, has_double u8, double f64, all little-endian. */
#define AMPC_CPU_RNG_STATE_BYTES (8 + 4 + 4 + 4 * AMPC_MT_N + 1 + 4 + 1 + 8)

static inline void ampc_mt_seed(ampc_cpu_generator *g, uint64_t seed) {
    g->seed = seed;
    g->state[0] = (uint32_t)(seed & 0xffffffffu);
    for (int j = 1; j < AMPC_MT_N; j++)
        g->state[j] = 1812433253u * (g->state[j - 1] ^ (g->state[j - 1] >> 30)) + (uint32_t)j;
    g->left = 1;
    g->next = 0;
    g->has_float_normal = g->has_double_normal = false;
    g->float_normal = 0.0f;
    g->double_normal = 0.0;
}

static inline uint32_t ampc_mt_twist(uint32_t u, uint32_t v) {
    return (((u & 0x80000000u) | (v & 0x7fffffffu)) >> 1) ^ ((v & 1u) ? 0x9908b0dfu : 0u);
}

static inline void ampc_mt_next_state(ampc_cpu_generator *g) {
    uint32_t *p = g->state;
    g->left = AMPC_MT_N;
    g->next = 0;
    for (int j = AMPC_MT_N - AMPC_MT_M + 1; --j; p++) *p = p[AMPC_MT_M] ^ ampc_mt_twist(p[0], p[1]);
    for (int j = AMPC_MT_M; --j; p++) *p = p[AMPC_MT_M - AMPC_MT_N] ^ ampc_mt_twist(p[0], p[1]);
    *p = p[AMPC_MT_M - AMPC_MT_N] ^ ampc_mt_twist(p[0], g->state[0]);
}

/* torch's random(): one tempered 32-bit output. */
static inline uint32_t ampc_mt_random(ampc_cpu_generator *g) {
    if (--g->left == 0) ampc_mt_next_state(g);
    uint32_t y = g->state[g->next++];
    y ^= (y >> 11);
    y ^= (y << 7) & 0x9d2c5680u;
    y ^= (y << 15) & 0xefc60000u;
    y ^= (y >> 18);
    return y;
}

/* torch's random64(): the first draw is the high half. */
static inline uint64_t ampc_mt_random64(ampc_cpu_generator *g) {
    uint32_t hi = ampc_mt_random(g);
    uint32_t lo = ampc_mt_random(g);
    return ((uint64_t)hi << 32) | lo;
}

/* uniform_real_distribution<T>(0, 1) before the from/to scaling: 24 (float), 53 (double),
 * 11 (half) or 8 (bfloat16) random bits times 2^-digits. */
static inline float ampc_mt_unit_float(ampc_cpu_generator *g, int digits) {
    uint32_t v = ampc_mt_random(g);
    return (float)(v & ((1u << digits) - 1u)) * (1.0f / (float)(1u << digits));
}
static inline double ampc_mt_unit_double(ampc_cpu_generator *g) {
    uint64_t v = ampc_mt_random64(g);
    return (double)(v & ((UINT64_C(1) << 53) - 1)) * (1.0 / (double)(UINT64_C(1) << 53));
}

static inline void ampc_mt_serialize(const ampc_cpu_generator *g, uint8_t *out) {
    size_t o = 0;
    memcpy(out + o, &g->seed, 8), o += 8; /* x86-64 and every CUDA host are little-endian */
    memcpy(out + o, &g->left, 4), o += 4;
    memcpy(out + o, &g->next, 4), o += 4;
    memcpy(out + o, g->state, 4 * AMPC_MT_N), o += 4 * AMPC_MT_N;
    out[o++] = g->has_float_normal;
    memcpy(out + o, &g->float_normal, 4), o += 4;
    out[o++] = g->has_double_normal;
    memcpy(out + o, &g->double_normal, 8);
}

/* False when the bytes are not a state (left/next out of range): the generator is unchanged. */
static inline bool ampc_mt_deserialize(ampc_cpu_generator *g, const uint8_t *in) {
    ampc_cpu_generator t;
    size_t o = 0;
    memcpy(&t.seed, in + o, 8), o += 8;
    memcpy(&t.left, in + o, 4), o += 4;
    memcpy(&t.next, in + o, 4), o += 4;
    memcpy(t.state, in + o, 4 * AMPC_MT_N), o += 4 * AMPC_MT_N;
    t.has_float_normal = in[o++] != 0;
    memcpy(&t.float_normal, in + o, 4), o += 4;
    t.has_double_normal = in[o++] != 0;
    memcpy(&t.double_normal, in + o, 8);
    if (t.left < 1 || t.left > AMPC_MT_N || t.next < 0 || t.next > AMPC_MT_N || t.next + t.left > AMPC_MT_N + 1)
        return false;
    *g = t;
    return true;
}

#endif
