/* cpu_sampling.c: CPU kernels of the sampling ops (issue 12): exponential_, geometric_,
 * log_normal_, cauchy_, multinomial, poisson, binomial, drawn from the CPU generator (torch's
 * mt19937) as torch's CPU kernels draw them, so manual_seed(s) gives torch's values.
 *
 * All are serial (the stream is sequential) in torch's element order (cpu_random.h). Per element:
 *   exponential_ / geometric_ / cauchy_: one 53-bit uniform through torch's transform (double,
 *     then rounded to the dtype); log_normal_: exp of normal_distribution<double> (with its
 *     cached sine sample); poisson / binomial: torch's rejection samplers (sampling_math.h).
 *   multinomial without replacement, or one sample: torch's Gumbel-style trick, q = exponential_(1)
 *     in the probabilities' dtype over the whole (rows, k) tensor, keys p / q in that dtype, then
 *     each row's argmax or its top n_sample keys (descending); with replacement: each row's
 *     normalised cumulative sums (float, or double for float64) and a binary search per 53-bit
 *     uniform. */
#include <math.h>
#include <stdlib.h>

#include "../core/kernel_args.h"
#include "../core/ops.h"
#include "../core/sampling_math.h"
#include "cpu_backend.h"
#include "cpu_dtype_loops.h"
#include "cpu_random.h"

static double load_at(const ampc_tensor *t, int64_t i) {
    const char *p = (const char *)ampc_data_ptr(t);
    switch (t->dtype) {
#define LOAD_CASE(ENUM, SUF, CT, VT) \
    case ENUM: return (double)AMPC_LOAD_##SUF(p + i * (int64_t)sizeof(CT));
        AMPC_FOR_EACH_DTYPE(LOAD_CASE)
#undef LOAD_CASE
    default: return 0;
    }
}

/* v rounded to a floating dtype (float64: itself). */
static double round_to(ampc_dtype dt, double v) {
    switch (dt) {
    case AMPC_FLOAT32: return (float)v;
    case AMPC_FLOAT16: return ampc_half_to_f32(ampc_f32_to_half((float)v));
    case AMPC_BFLOAT16: return ampc_bf16_to_f32(ampc_f32_to_bf16((float)v));
    default: return v;
    }
}

/* ---------------------------------------------------------------- fills */

typedef struct sample_ctx {
    ampc_op op;
    ampc_cpu_generator *g;
    double a, b;
} sample_ctx;

static void gen_sample(void *vctx, int64_t b, int64_t n, double *d, int64_t *iv) {
    sample_ctx *c = (sample_ctx *)vctx;
    (void)b, (void)iv;
    for (int64_t k = 0; k < n; k++) {
        switch (c->op) {
        case AMPC_OP_EXPONENTIAL: d[k] = ampc_sample_exponential(ampc_mt_unit_double(c->g), c->a); break;
        case AMPC_OP_GEOMETRIC: d[k] = ampc_sample_geometric(ampc_mt_unit_double(c->g), c->a); break;
        case AMPC_OP_LOG_NORMAL: d[k] = exp(ampc_cpu_normal_double(c->g, c->a, c->b)); break;
        default: d[k] = ampc_sample_cauchy(ampc_mt_unit_double(c->g), c->a, c->b); break;
        }
    }
}

static ampc_status cpu_sample(ampc_op op, const ampc_sample_args *a) {
    sample_ctx c = {.op = op, .g = ampc_cpu_generator_default(), .a = a->a, .b = a->b};
    ampc_cpu_rng_serial(a->out, false, gen_sample, &c);
    return AMPC_OK;
}

/* ---------------------------------------------------------------- multinomial */

static int cmp_desc(const void *x, const void *y, const double *keys) {
    int64_t i = *(const int64_t *)x, j = *(const int64_t *)y;
    if (keys[i] > keys[j]) return -1;
    if (keys[i] < keys[j]) return 1;
    return i < j ? -1 : i > j;
}

static const double *sort_keys; /* qsort has no context argument; the kernels run under the GIL */
static int cmp_keys(const void *x, const void *y) { return cmp_desc(x, y, sort_keys); }

static ampc_status cpu_multinomial(ampc_op op, const ampc_multinomial_args *a) {
    const ampc_tensor *probs = a->probs;
    ampc_dtype dt = probs->dtype;
    int64_t k = probs->shape[probs->ndim - 1], rows = probs->ndim == 2 ? probs->shape[0] : 1, ns = a->n_sample;
    int64_t *out = (int64_t *)ampc_data_ptr(a->out);
    ampc_cpu_generator *g = ampc_cpu_generator_default();
    if (!a->replacement || ns == 1) {
        double *keys = (double *)malloc(sizeof(double) * (size_t)(rows * k));
        int64_t *idx = ns > 1 ? (int64_t *)malloc(sizeof(int64_t) * (size_t)k) : NULL;
        if (!keys || (ns > 1 && !idx)) {
            free(keys), free(idx);
            return ampc_set_error(AMPC_E_NOMEM, "multinomial: out of memory");
        }
        for (int64_t i = 0; i < rows * k; i++) { /* q = empty_like(p).exponential_(1); q = p / q */
            double q = round_to(dt, ampc_sample_exponential(ampc_mt_unit_double(g), 1.0));
            double p = load_at(probs, i);
            keys[i] = dt == AMPC_FLOAT64 ? p / q : round_to(dt, (float)p / (float)q);
        }
        for (int64_t r = 0; r < rows; r++) {
            const double *kr = keys + r * k;
            if (ns == 1) {
                int64_t best = 0;
                for (int64_t j = 1; j < k; j++)
                    if (kr[j] > kr[best] || (isnan(kr[j]) && !isnan(kr[best]))) best = j;
                out[r] = best;
                continue;
            }
            if (ns <= 32) { /* a few picks: selection, O(ns * k) (ties: the lower index first, as the sort) */
                for (int64_t j = 0; j < k; j++) idx[j] = 0; /* taken flags */
                for (int64_t s = 0; s < ns; s++) {
                    int64_t best = -1;
                    for (int64_t j = 0; j < k; j++)
                        if (!idx[j] && (best < 0 || kr[j] > kr[best] || (isnan(kr[j]) && !isnan(kr[best])))) best = j;
                    idx[best] = 1;
                    out[r * ns + s] = best;
                }
                continue;
            }
            for (int64_t j = 0; j < k; j++) idx[j] = j;
            sort_keys = kr;
            qsort(idx, (size_t)k, sizeof(int64_t), cmp_keys);
            for (int64_t j = 0; j < ns; j++) out[r * ns + j] = idx[j];
        }
        free(keys), free(idx);
        return AMPC_OK;
    }
    double *cum = (double *)malloc(sizeof(double) * (size_t)k);
    if (!cum) return ampc_set_error(AMPC_E_NOMEM, "multinomial: out of memory");
    bool dbl = dt == AMPC_FLOAT64; /* torch's cumulative sums: double for float64, float otherwise */
    for (int64_t r = 0; r < rows; r++) {
        double sum = 0;
        float fsum = 0;
        for (int64_t j = 0; j < k; j++) {
            double v = load_at(probs, r * k + j);
            if (dbl) cum[j] = sum += v;
            else cum[j] = fsum += (float)v;
        }
        for (int64_t j = 0; j < k; j++) cum[j] = dbl ? cum[j] / sum : (double)((float)cum[j] / fsum);
        cum[k - 1] = 1;
        for (int64_t s = 0; s < ns; s++) {
            double u = ampc_mt_unit_double(g);
            int64_t left = 0, right = k;
            while (right - left > 0) {
                int64_t mid = left + (right - left) / 2;
                if (cum[mid] < u) left = mid + 1;
                else right = mid;
            }
            out[r * ns + s] = left;
        }
    }
    free(cum);
    return AMPC_OK;
}

/* ---------------------------------------------------------------- poisson, binomial */

static ampc_status cpu_poisson(ampc_op op, const ampc_poisson_args *a) {
    ampc_usrc src = ampc_usrc_philox(0, 0);
    src.g = ampc_cpu_generator_default();
    int64_t n = ampc_numel(a->out);
    for (int64_t i = 0; i < n; i++) {
        double v = round_to(a->out->dtype, ampc_sample_poisson(load_at(a->rates, i), &src));
        ampc_cpu_rng_store(a->out, i, 1, NULL, &v, NULL);
    }
    return AMPC_OK;
}

static ampc_status cpu_binomial(ampc_op op, const ampc_binomial_args *a) {
    ampc_usrc src = ampc_usrc_philox(0, 0);
    src.g = ampc_cpu_generator_default();
    int64_t n = ampc_numel(a->out);
    for (int64_t i = 0; i < n; i++) {
        double v = ampc_sample_binomial(load_at(a->count, i), load_at(a->prob, i), &src);
        ampc_cpu_rng_store(a->out, i, 1, NULL, &v, NULL);
    }
    return AMPC_OK;
}

void ampc_cpu_register_sampling(void) {
    ampc_register_sample(AMPC_CPU, cpu_sample);
    ampc_register_multinomial(AMPC_CPU, cpu_multinomial);
    ampc_register_poisson(AMPC_CPU, cpu_poisson);
    ampc_register_binomial(AMPC_CPU, cpu_binomial);
}
