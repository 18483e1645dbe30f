/* cuda_sampling.cu: CUDA kernels of the sampling ops (issue 12): exponential_, geometric_,
 * log_normal_, cauchy_, multinomial, poisson, binomial, on Philox.
 *
 * These are ampc's own streams, not torch's CUDA numbers: element i (a multinomial row i) owns
 * Philox block offset/4 + i with counter word 2 counting its draws (core/sampling_math.h), so
 * every launch shape gives the same values for a seed. The transforms and rejection samplers are
 * the CPU's (sampling_math.h), so the two devices draw from the same distributions. Multinomial
 * runs one thread per row: with replacement, the normalised cumulative sums (in double, in the
 * output row as scratch would race, so each sample rescans its row) and a linear search; without,
 * keys p / Exp(1) and the n_sample largest by repeated selection. */
#include "../core/kernel_args.h"
#include "../core/sampling_math.h"
#include "cuda_common.cuh"

template <typename T, bool CONTIG>
__global__ void sample_kernel(int op, T *out, int64_t n, ampc_cuda_layout layout, double a, double b, uint64_t seed,
                              uint64_t block0) {
    AMPC_CUDA_KERNEL_LOOP(i, n) {
        ampc_usrc src = ampc_usrc_philox(seed, block0 + (uint64_t)i);
        double u = ampc_usrc_next(&src), v;
        if (op == AMPC_OP_EXPONENTIAL) v = ampc_sample_exponential(u, a);
        else if (op == AMPC_OP_GEOMETRIC) v = ampc_sample_geometric(u, a);
        else if (op == AMPC_OP_CAUCHY) v = ampc_sample_cauchy(u, a, b);
        else { /* LOG_NORMAL: Box-Muller on two uniforms (1 - u keeps the log finite) */
            double u2 = ampc_usrc_next(&src);
            v = exp(sqrt(-2.0 * log1p(-u)) * cos(2.0 * AMPC_PI * u2) * b + a);
        }
        out[CONTIG ? i : ampc_cuda_offset(layout, i)] = ampc_convert<T>(v);
    }
}

static ampc_status cuda_sample(ampc_op op, const ampc_sample_args *a) {
    ampc_tensor *t = a->out;
    int64_t n = ampc_numel(t);
    if (n == 0) return AMPC_OK;
    ampc_cuda_guard guard(t);
    cudaStream_t stream = ampc_cuda_stream_of(t);
    ampc_cuda_layout layout = ampc_cuda_layout_of(t);
    uint64_t block0 = a->offset / 4;
    AMPC_CUDA_SWITCH_ALL(t->dtype, ampc_op_name(op), {
        scalar_t *out = (scalar_t *)ampc_data_ptr(t);
        if (layout.contiguous)
            sample_kernel<scalar_t, true><<<ampc_cuda_blocks(n), AMPC_CUDA_THREADS, 0, stream>>>(
                (int)op, out, n, layout, a->a, a->b, a->seed, block0);
        else
            sample_kernel<scalar_t, false><<<ampc_cuda_blocks(n), AMPC_CUDA_THREADS, 0, stream>>>(
                (int)op, out, n, layout, a->a, a->b, a->seed, block0);
        AMPC_CUDA_CHECK_LAUNCH();
    })
    return AMPC_OK;
}

/* ---------------------------------------------------------------- multinomial */

template <typename T>
__global__ void multinomial_kernel(const T *probs, int64_t *out, int64_t rows, int64_t k, int64_t ns, bool replacement,
                                   uint64_t seed, uint64_t block0) {
    AMPC_CUDA_KERNEL_LOOP(r, rows) {
        const T *p = probs + r * k;
        int64_t *o = out + r * ns;
        ampc_usrc src = ampc_usrc_philox(seed, block0 + (uint64_t)r);
        if (replacement && ns > 1) {
            double sum = 0;
            for (int64_t j = 0; j < k; j++) sum += (double)ampc_load(p, j);
            for (int64_t s = 0; s < ns; s++) {
                double u = ampc_usrc_next(&src) * sum, c = 0;
                int64_t pick = k - 1;
                for (int64_t j = 0; j < k; j++) {
                    c += (double)ampc_load(p, j);
                    if (u < c) {
                        pick = j;
                        break;
                    }
                }
                while (pick > 0 && (double)ampc_load(p, pick) == 0) pick--; /* never a zero-probability category */
                o[s] = pick;
            }
            continue;
        }
        /* without replacement: the n_sample largest keys p / Exp(1); keys are recomputed from
         * the row's stream (same block, same counter order) for every pick, so nothing is stored */
        for (int64_t s = 0; s < ns; s++) {
            ampc_usrc it = src;
            int64_t best = -1;
            double best_key = -1;
            for (int64_t j = 0; j < k; j++) {
                double key = (double)ampc_load(p, j) / ampc_sample_exponential(ampc_usrc_next(&it), 1.0);
                bool taken = false;
                for (int64_t t = 0; t < s; t++) taken |= o[t] == j;
                if (!taken && key > best_key) best_key = key, best = j;
            }
            o[s] = best;
        }
    }
}

static ampc_status cuda_multinomial(ampc_op op, const ampc_multinomial_args *a) {
    const ampc_tensor *probs = a->probs;
    int64_t k = probs->shape[probs->ndim - 1], rows = probs->ndim == 2 ? probs->shape[0] : 1;
    if (rows == 0 || a->n_sample == 0) return AMPC_OK;
    ampc_cuda_guard guard(a->out);
    cudaStream_t stream = ampc_cuda_stream_of(a->out);
    AMPC_CUDA_SWITCH_FLOATING(probs->dtype, "multinomial", {
        multinomial_kernel<scalar_t><<<ampc_cuda_blocks(rows), AMPC_CUDA_THREADS, 0, stream>>>(
            (const scalar_t *)ampc_data_ptr(probs), (int64_t *)ampc_data_ptr(a->out), rows, k, a->n_sample,
            a->replacement, a->seed, a->offset / 4);
        AMPC_CUDA_CHECK_LAUNCH();
    })
    return AMPC_OK;
}

/* ---------------------------------------------------------------- poisson, binomial */

template <typename T>
__global__ void poisson_kernel(const T *rates, T *out, int64_t n, uint64_t seed, uint64_t block0) {
    AMPC_CUDA_KERNEL_LOOP(i, n) {
        ampc_usrc src = ampc_usrc_philox(seed, block0 + (uint64_t)i);
        out[i] = ampc_convert<T>(ampc_sample_poisson((double)ampc_load(rates, i), &src));
    }
}

template <typename T>
__global__ void binomial_kernel(const T *count, const T *prob, T *out, int64_t n, uint64_t seed, uint64_t block0) {
    AMPC_CUDA_KERNEL_LOOP(i, n) {
        ampc_usrc src = ampc_usrc_philox(seed, block0 + (uint64_t)i);
        out[i] = ampc_convert<T>(ampc_sample_binomial((double)ampc_load(count, i), (double)ampc_load(prob, i), &src));
    }
}

static ampc_status cuda_poisson(ampc_op op, const ampc_poisson_args *a) {
    int64_t n = ampc_numel(a->out);
    if (n == 0) return AMPC_OK;
    ampc_cuda_guard guard(a->out);
    cudaStream_t stream = ampc_cuda_stream_of(a->out);
    AMPC_CUDA_SWITCH_FLOATING(a->out->dtype, "poisson", {
        poisson_kernel<scalar_t><<<ampc_cuda_blocks(n), AMPC_CUDA_THREADS, 0, stream>>>(
            (const scalar_t *)ampc_data_ptr(a->rates), (scalar_t *)ampc_data_ptr(a->out), n, a->seed, a->offset / 4);
        AMPC_CUDA_CHECK_LAUNCH();
    })
    return AMPC_OK;
}

static ampc_status cuda_binomial(ampc_op op, const ampc_binomial_args *a) {
    int64_t n = ampc_numel(a->out);
    if (n == 0) return AMPC_OK;
    ampc_cuda_guard guard(a->out);
    cudaStream_t stream = ampc_cuda_stream_of(a->out);
    AMPC_CUDA_SWITCH_FLOATING(a->out->dtype, "binomial", {
        binomial_kernel<scalar_t><<<ampc_cuda_blocks(n), AMPC_CUDA_THREADS, 0, stream>>>(
            (const scalar_t *)ampc_data_ptr(a->count), (const scalar_t *)ampc_data_ptr(a->prob),
            (scalar_t *)ampc_data_ptr(a->out), n, a->seed, a->offset / 4);
        AMPC_CUDA_CHECK_LAUNCH();
    })
    return AMPC_OK;
}

extern "C" void ampc_cuda_register_sampling(void) {
    ampc_register_sample(AMPC_CUDA, cuda_sample);
    ampc_register_multinomial(AMPC_CUDA, cuda_multinomial);
    ampc_register_poisson(AMPC_CUDA, cuda_poisson);
    ampc_register_binomial(AMPC_CUDA, cuda_binomial);
}
