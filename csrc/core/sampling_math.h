/* sampling_math.h: the per-element samplers of the sampling ops (exponential_, geometric_,
 * log_normal_, cauchy_, poisson, binomial), shared by the CPU kernels (cpu/cpu_sampling.c) and
 * the CUDA kernels (cuda/cuda_sampling.cu).
 *
 * A sampler reads 53-bit uniforms in [0, 1) from an ampc_usrc: on the CPU torch's generator
 * (random64 per draw, as torch's uniform_real_distribution<double>), on CUDA a Philox stream
 * of its own per element (counter = (block, iteration), so a rejection loop may draw any number
 * of values and the grid shape never changes them). The formulas are torch's CPU ones
 * (TransformationHelper.h, Distributions.h: Hoermann's PTRS for poisson, BTRS for binomial),
 * in double. */
#ifndef AMPC_SAMPLING_MATH_H
#define AMPC_SAMPLING_MATH_H

#include <math.h>
#include <stdint.h>

#include "philox.h"
#if !defined(__CUDACC__)
#include "mt19937.h"
#endif

typedef struct ampc_usrc {
#if !defined(__CUDACC__)
    ampc_cpu_generator *g; /* the CPU generator, or NULL for Philox */
#endif
    uint64_t seed, block;  /* Philox: this element's block */
    uint32_t iter;         /* Philox: the next counter word 2 */
    int k;                 /* Philox: next word of blk (4: draw a new block) */
    ampc_philox_block blk;
} ampc_usrc;

AMPC_HD ampc_usrc ampc_usrc_philox(uint64_t seed, uint64_t block) {
    ampc_usrc s;
#if !defined(__CUDACC__)
    s.g = 0;
#endif
    s.seed = seed, s.block = block, s.iter = 0, s.k = 4;
    return s;
}

AMPC_HD double ampc_usrc_next(ampc_usrc *s) {
#if !defined(__CUDACC__)
    if (s->g) return ampc_mt_unit_double(s->g);
#endif
    if (s->k >= 4) {
        uint32_t ctr[4] = {(uint32_t)s->block, (uint32_t)(s->block >> 32), s->iter++, 0};
        uint32_t key[2] = {(uint32_t)s->seed, (uint32_t)(s->seed >> 32)};
        s->blk = ampc_philox4x32_10(ctr, key);
        s->k = 0;
    }
    double u = ampc_philox_u53(s->blk.w[s->k], s->blk.w[s->k + 1]);
    s->k += 2;
    return u;
}

#define AMPC_PI 3.14159265358979323846

/* torch's CPU transforms of one uniform u in [0, 1) */
AMPC_HD double ampc_sample_exponential(double u, double lambd) { return -1.0 / lambd * log1p(-u); }
AMPC_HD double ampc_sample_geometric(double u, double p) { return ceil(log(u) / log1p(-p)); }
AMPC_HD double ampc_sample_cauchy(double u, double median, double sigma) {
    return median + sigma * tan(AMPC_PI * (u - 0.5));
}

/* Poisson(lambda): Hoermann's transformed rejection for lambda >= 10, else multiplying uniforms
 * (torch's sample_poisson). */
AMPC_HD double ampc_sample_poisson(double lambda, ampc_usrc *src) {
    if (lambda >= 10) {
        double slam = sqrt(lambda), loglam = log(lambda);
        double b = 0.931 + 2.53 * slam;
        double a = -0.059 + 0.02483 * b;
        double invalpha = 1.1239 + 1.1328 / (b - 3.4);
        double vr = 0.9277 - 3.6224 / (b - 2);
        for (;;) {
            double U = ampc_usrc_next(src) - 0.5;
            double V = ampc_usrc_next(src);
            double us = 0.5 - fabs(U);
            int64_t k = (int64_t)floor((2 * a / us + b) * U + lambda + 0.43);
            if (us >= 0.07 && V <= vr) return (double)k;
            if (k < 0 || (us < 0.013 && V > us)) continue;
            if (log(V) + log(invalpha) - log(a / (us * us) + b) <= -lambda + (double)k * loglam - lgamma((double)k + 1))
                return (double)k;
        }
    }
    if (lambda == 0) return 0;
    double enlam = exp(-lambda), prod = 1.0;
    int64_t x = 0;
    for (;;) {
        prod *= ampc_usrc_next(src);
        if (prod > enlam) x += 1;
        else return (double)x;
    }
}

AMPC_HD double ampc_stirling_tail(double k) {
    const double tail[10] = {0.0810614667953272,  0.0413406959554092,  0.0276779256849983, 0.02079067210376509,
                             0.0166446911898211,  0.0138761288230707,  0.0118967099458917, 0.0104112652619720,
                             0.00925546218271273, 0.00833056343336287};
    if (k <= 9) return tail[(int)k];
    double kp1sq = (k + 1) * (k + 1);
    return (1.0 / 12 - (1.0 / 360 - 1.0 / 1260 / kp1sq) / kp1sq) / (k + 1);
}

AMPC_HD double ampc_binomial_inversion(double count, double prob, ampc_usrc *src) {
    double geom_sum = 0, num_geom = 0, logprob = log1p(-prob);
    for (;;) {
        double geom = ceil(log(ampc_usrc_next(src)) / logprob);
        geom_sum += geom;
        if (geom_sum > count) break;
        num_geom = num_geom + 1;
    }
    return num_geom;
}

AMPC_HD double ampc_binomial_btrs(double count, double prob, ampc_usrc *src) {
    double stddev = sqrt(count * prob * (1 - prob));
    double b = 1.15 + 2.53 * stddev;
    double a = -0.0873 + 0.0248 * b + 0.01 * prob;
    double c = count * prob + 0.5;
    double v_r = 0.92 - 4.2 / b;
    double r = prob / (1 - prob);
    double alpha = (2.83 + 5.1 / b) * stddev;
    double m = floor((count + 1) * prob);
    for (;;) {
        double U = ampc_usrc_next(src) - 0.5;
        double V = ampc_usrc_next(src);
        double us = 0.5 - fabs(U);
        double k = floor((2 * a / us + b) * U + c);
        if (k < 0 || k > count) continue;
        if (us >= 0.07 && V <= v_r) return k;
        V = log(V * alpha / (a / (us * us) + b));
        double upper = (m + 0.5) * log((m + 1) / (r * (count - m + 1))) +
                       (count + 1) * log((count - m + 1) / (count - k + 1)) +
                       (k + 0.5) * log(r * (count - k + 1) / (k + 1)) + ampc_stirling_tail(m) +
                       ampc_stirling_tail(count - m) - ampc_stirling_tail(k) - ampc_stirling_tail(count - k);
        if (V <= upper) return k;
    }
}

/* Binomial(count, prob), torch's sample_binomial: BTRS when the mean is >= 10, else inversion,
 * on the smaller of prob and 1 - prob. */
AMPC_HD double ampc_sample_binomial(double count, double prob, ampc_usrc *src) {
    if (count <= 0.0 || prob <= 0.0) return 0;
    if (prob >= 1.0) return count;
    if (prob <= 0.5) {
        if (count * prob >= 10.0) return ampc_binomial_btrs(count, prob, src);
        return ampc_binomial_inversion(count, prob, src);
    }
    if (prob > 0.5) {
        double q = 1.0 - prob;
        if (count * q >= 10.0) return count - ampc_binomial_btrs(count, q, src);
        return count - ampc_binomial_inversion(count, q, src);
    }
    return NAN;
}

#endif
