/* sampling.c: frontends of the sampling ops: exponential_, geometric_, log_normal_, cauchy_,
 * multinomial, poisson and binomial (issue 12).
 *
 * Each checks its arguments with torch's messages, reserves Philox words for a CUDA output (the
 * CPU kernels draw from the CPU generator, torch's mt19937), and dispatches its kernel. The
 * kernels (cpu/cpu_sampling.c, cuda/cuda_sampling.cu) share the samplers of sampling_math.h.
 * Philox layout on CUDA: element i (or multinomial row i) owns block offset/4 + i and draws
 * with counter word 2 counting its draws, so each request reserves 4 words per element. */
#include <math.h>
#include <string.h>

#include "kernel_args.h"
#include "ops.h"

static void reserve(ampc_device dev, int64_t n, uint64_t *seed, uint64_t *offset) {
    *seed = *offset = 0;
    if (dev.type != AMPC_CPU && n > 0) ampc_philox_reserve(dev, (uint64_t)n * 4, seed, offset);
}

static ampc_status run_sample(ampc_op op, ampc_tensor *t, double a, double b) {
    int64_t n = ampc_numel(t);
    if (n == 0) return AMPC_OK;
    AMPC_TRY(ampc_check_writable_once(t));
    ampc_sample_args args = {.out = t, .a = a, .b = b};
    reserve(t->device, n, &args.seed, &args.offset);
    AMPC_TRY(ampc_dispatch_sample(op, &args));
    t->storage->version++;
    return AMPC_OK;
}

static ampc_status continuous(const char *name, const ampc_tensor *t) {
    if (!ampc_dtype_is_floating(t->dtype))
        return ampc_set_error(AMPC_E_RUNTIME,
                              "%s distribution is a continuous probability distribution. dtype must be a floating "
                              "point but you specified %s",
                              name, ampc_dtype_torch_name(t->dtype));
    return AMPC_OK;
}

ampc_status ampc_exponential_(ampc_tensor *t, double lambd) {
    if (!(lambd > 0.0))
        return ampc_set_error(AMPC_E_RUNTIME, "exponential_ expects lambda > 0.0, but found lambda=%g", lambd);
    AMPC_TRY(continuous("Exponential", t));
    return run_sample(AMPC_OP_EXPONENTIAL, t, lambd, 0);
}

ampc_status ampc_geometric_(ampc_tensor *t, double p) {
    if (!(p > 0 && p < 1))
        return ampc_set_error(AMPC_E_RUNTIME, "geometric_ expects p to be in (0, 1), but got p=%g", p);
    return run_sample(AMPC_OP_GEOMETRIC, t, p, 0);
}

ampc_status ampc_log_normal_(ampc_tensor *t, double mean, double std) {
    if (!(std > 0.0)) return ampc_set_error(AMPC_E_RUNTIME, "log_normal_ expects std > 0.0, but found std=%g", std);
    if (!ampc_dtype_is_floating(t->dtype))
        return ampc_set_error(AMPC_E_NOT_IMPLEMENTED, "\"log_normal_cpu\" not implemented for '%s'",
                              ampc_dtype_torch_name(t->dtype));
    return run_sample(AMPC_OP_LOG_NORMAL, t, mean, std);
}

ampc_status ampc_cauchy_(ampc_tensor *t, double median, double sigma) {
    if (!(sigma > 0.0))
        return ampc_set_error(AMPC_E_RUNTIME, "cauchy_ expects sigma > 0.0, but found sigma=%g", sigma);
    if (!ampc_dtype_is_floating(t->dtype))
        return ampc_set_error(AMPC_E_RUNTIME,
                              "Cauchy distribution is a continuous probability distribution. dtype must be a floating "
                              "point but you specified %s",
                              t->dtype == AMPC_INT64 ? "long int" : ampc_dtype_torch_name(t->dtype));
    return run_sample(AMPC_OP_CAUCHY, t, median, sigma);
}

/* ---------------------------------------------------------------- multinomial */

/* Row checks on a host float64 copy: what torch checks before sampling (its two paths word
 * the errors differently). */
static ampc_status check_probs(const ampc_tensor *probs, bool fast_path) {
    ampc_tensor *h = ampc_to(probs, AMPC_FLOAT64, ampc_cpu_device(), false);
    ampc_tensor *c = h ? ampc_contiguous(h) : NULL;
    ampc_tensor_decref(h);
    if (!c) return ampc_last_status();
    const double *v = (const double *)ampc_data_ptr(c);
    int64_t k = probs->shape[probs->ndim - 1], rows = k ? ampc_numel(c) / k : 0;
    ampc_status st = AMPC_OK;
    for (int64_t r = 0; r < rows && st == AMPC_OK; r++) {
        double sum = 0;
        for (int64_t j = 0; j < k; j++) {
            double x = v[r * k + j];
            if (fast_path && !(x >= 0 && x < INFINITY)) {
                st = ampc_set_error(AMPC_E_RUNTIME, "probability tensor contains either `inf`, `nan` or element < 0");
                break;
            }
            if (!fast_path && x < 0) {
                st = ampc_set_error(AMPC_E_RUNTIME, "invalid multinomial distribution (encountering probability entry < 0)");
                break;
            }
            if (!fast_path && !isfinite(x)) {
                st = ampc_set_error(AMPC_E_RUNTIME,
                                    "invalid multinomial distribution (encountering probability entry = infinity or NaN)");
                break;
            }
            sum += x;
        }
        if (st == AMPC_OK && !(sum > 0))
            st = ampc_set_error(AMPC_E_RUNTIME, "invalid multinomial distribution (sum of probabilities <= 0)");
    }
    ampc_tensor_decref(c);
    return st;
}

ampc_tensor *ampc_multinomial(const ampc_tensor *probs, int64_t n_sample, bool replacement) {
    if (probs->ndim < 1 || probs->ndim > 2) {
        ampc_set_error(AMPC_E_RUNTIME, "prob_dist must be 1 or 2 dim");
        return NULL;
    }
    if (!ampc_dtype_is_floating(probs->dtype)) {
        ampc_set_error(AMPC_E_RUNTIME, "multinomial only supports floating-point dtypes for input, got: %s",
                       ampc_dtype_torch_name(probs->dtype));
        return NULL;
    }
    if (n_sample <= 0) {
        ampc_set_error(AMPC_E_RUNTIME, "cannot sample n_sample <= 0 samples");
        return NULL;
    }
    int64_t k = probs->shape[probs->ndim - 1];
    if (!replacement && n_sample > k) {
        ampc_set_error(AMPC_E_RUNTIME, "cannot sample n_sample > prob_dist.size(-1) samples without replacement");
        return NULL;
    }
    if (k > ((int64_t)1 << 24)) {
        ampc_set_error(AMPC_E_RUNTIME, "number of categories cannot exceed 2^24");
        return NULL;
    }
    int64_t rows = probs->ndim == 2 ? probs->shape[0] : 1;
    int64_t shape[2] = {rows, n_sample};
    ampc_tensor *out = probs->ndim == 2 ? ampc_empty(2, shape, AMPC_INT64, probs->device)
                                        : ampc_empty(1, shape + 1, AMPC_INT64, probs->device);
    if (!out || ampc_numel(out) == 0) return out;
    if (check_probs(probs, !replacement || n_sample == 1) != AMPC_OK) {
        ampc_tensor_decref(out);
        return NULL;
    }
    ampc_tensor *p = ampc_contiguous(probs);
    ampc_multinomial_args a = {.out = out, .probs = p, .n_sample = n_sample, .replacement = replacement};
    reserve(probs->device, rows, &a.seed, &a.offset);
    ampc_status st = p ? ampc_dispatch_multinomial(AMPC_OP_MULTINOMIAL, &a) : ampc_last_status();
    ampc_tensor_decref(p);
    if (st != AMPC_OK) {
        ampc_tensor_decref(out);
        return NULL;
    }
    return out;
}

/* ---------------------------------------------------------------- poisson, binomial */

/* src broadcast to out's shape, as a contiguous tensor of out's dtype. */
static ampc_tensor *ampc_expand_copy(const ampc_tensor *src, const ampc_tensor *out) {
    ampc_tensor *e = ampc_expand(src, out->ndim, out->shape);
    ampc_tensor *c = e ? ampc_empty(out->ndim, out->shape, out->dtype, out->device) : NULL;
    if (c && ampc_copy_(c, e) != AMPC_OK) c = (ampc_tensor_decref(c), NULL);
    ampc_tensor_decref(e);
    return c;
}

ampc_tensor *ampc_poisson(const ampc_tensor *rates) {
    if (!ampc_dtype_is_floating(rates->dtype)) {
        ampc_set_error(AMPC_E_NOT_IMPLEMENTED, "\"poisson_cpu\" not implemented for '%s'",
                       ampc_dtype_torch_name(rates->dtype));
        return NULL;
    }
    ampc_tensor *r = ampc_contiguous(rates);
    ampc_tensor *out = r ? ampc_empty(rates->ndim, rates->shape, rates->dtype, rates->device) : NULL;
    ampc_status st = out ? AMPC_OK : ampc_last_status();
    if (st == AMPC_OK && ampc_numel(out) > 0) {
        ampc_tensor *h = ampc_to(r, AMPC_FLOAT64, ampc_cpu_device(), false);
        if (!h) st = ampc_last_status();
        for (int64_t i = 0; h && i < ampc_numel(h); i++)
            if (!(((const double *)ampc_data_ptr(h))[i] >= 0)) {
                st = ampc_set_error(AMPC_E_RUNTIME, "invalid Poisson rate, expected rate to be non-negative");
                break;
            }
        ampc_tensor_decref(h);
        ampc_poisson_args a = {.out = out, .rates = r};
        reserve(out->device, ampc_numel(out), &a.seed, &a.offset);
        if (st == AMPC_OK) st = ampc_dispatch_poisson(AMPC_OP_POISSON, &a);
    }
    ampc_tensor_decref(r);
    if (st != AMPC_OK) {
        ampc_tensor_decref(out);
        return NULL;
    }
    return out;
}

ampc_tensor *ampc_binomial(const ampc_tensor *count, const ampc_tensor *prob) {
    if (!ampc_dtype_is_floating(count->dtype)) {
        ampc_set_error(AMPC_E_VALUE_ERROR, "binomial only supports floating-point dtypes for count, got: %s",
                       ampc_dtype_torch_name(count->dtype));
        return NULL;
    }
    if (!ampc_dtype_is_floating(prob->dtype)) {
        ampc_set_error(AMPC_E_VALUE_ERROR, "binomial only supports floating-point dtypes for prob, got: %s",
                       ampc_dtype_torch_name(prob->dtype));
        return NULL;
    }
    if (count->dtype != AMPC_FLOAT32 && count->dtype != AMPC_FLOAT64) {
        ampc_set_error(AMPC_E_NOT_IMPLEMENTED, "\"binomial_cpu\" not implemented for '%s'",
                       ampc_dtype_torch_name(count->dtype));
        return NULL;
    }
    if (!ampc_device_eq(count->device, prob->device)) {
        ampc_set_error(AMPC_E_RUNTIME, "binomial: count and prob must be on the same device");
        return NULL;
    }
    int nd;
    int64_t shape[AMPC_MAX_DIMS];
    if (ampc_broadcast_shapes("binomial", count->ndim, count->shape, prob->ndim, prob->shape, &nd, shape) != AMPC_OK)
        return NULL;
    ampc_tensor *out = ampc_empty(nd, shape, count->dtype, count->device);
    ampc_tensor *c = out ? ampc_expand_copy(count, out) : NULL;
    ampc_tensor *p = c ? ampc_expand_copy(prob, out) : NULL;
    ampc_status st = p ? AMPC_OK : ampc_last_status();
    if (st == AMPC_OK && ampc_numel(out) > 0) {
        ampc_binomial_args a = {.out = out, .count = c, .prob = p};
        reserve(out->device, ampc_numel(out), &a.seed, &a.offset);
        st = ampc_dispatch_binomial(AMPC_OP_BINOMIAL, &a);
    }
    ampc_tensor_decref(c);
    ampc_tensor_decref(p);
    if (st != AMPC_OK) {
        ampc_tensor_decref(out);
        return NULL;
    }
    return out;
}
