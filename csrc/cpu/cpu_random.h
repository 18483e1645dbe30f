/* cpu_random.h: what the CPU kernels that draw from the CPU generator share (cpu_random.c,
 * cpu_sampling.c, the dropout of cpu_nn_misc.c): torch's element order and a serial driver.
 *
 * torch's CPU random kernels are serial loops over a TensorIterator; so are these. A driver
 * call walks the output in that order in chunks: gen() makes the next n values (doubles, or
 * int64 when `ints`) from the generator, and they are stored through the output's strides. */
#ifndef AMPC_CPU_RANDOM_H
#define AMPC_CPU_RANDOM_H

#include <stdbool.h>
#include <stdint.h>

#include "../core/mt19937.h"
#include "../core/tensor.h"

#define AMPC_CPU_RNG_CHUNK 1024

/* Byte offsets of elements [b, b + n) of t in torch's iteration order: row-major for a
 * contiguous tensor, else the dimensions sorted by stride, the largest outermost. */
void ampc_cpu_rng_offsets(const ampc_tensor *t, int64_t b, int64_t n, int64_t *offs);

/* Stores n values (d, or iv when d is NULL) at the byte offsets offs (NULL: contiguous from
 * element b), rounded to t's dtype as the CPU stores round. */
void ampc_cpu_rng_store(const ampc_tensor *t, int64_t b, int64_t n, const int64_t *offs, const double *d,
                        const int64_t *iv);

typedef void (*ampc_cpu_rng_gen)(void *ctx, int64_t b, int64_t n, double *d, int64_t *iv);

/* Fills t in torch's order with gen's values, one chunk at a time, on this thread. */
void ampc_cpu_rng_serial(ampc_tensor *t, bool ints, ampc_cpu_rng_gen gen, void *ctx);

/* normal_distribution<double>(mean, std) of torch's generator: Box-Muller on two 53-bit
 * uniforms, the sine sample cached in g for the next call (cpu_random.c). */
double ampc_cpu_normal_double(ampc_cpu_generator *g, double mean, double std);

/* Whether torch's float32 normal kernel on this machine is the AVX2 one (cpu_normal_avx2.c). */
bool ampc_cpu_normal_uses_avx2(void);
/* torch's normal_fill_16_AVX2 over data[0..16): Box-Muller of uniforms data[j], data[j + 8]. */
void ampc_cpu_normal_fill16_avx2(float *data, float mean, float std);

#endif
