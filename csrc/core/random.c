/* random.c: the per-device generators and the frontends of the random ops.
 *
 * The CPU generator is torch's: MT19937 with its normal-sample caches (mt19937.h), so
 * manual_seed(s) then the same calls give torch's CPU numbers bit for bit. Its stream is
 * sequential, so the CPU kernels (cpu_random.c, cpu_sampling.c) draw from it directly, serially,
 * in torch's element order; the (seed, offset) fields of the kernel arguments are unused there.
 *
 * CUDA generators stay Philox4x32-10 (philox.h): a state is (seed, offset), a request reserves a
 * range of counter words and the grid fills its tensor from (seed, offset, element index), the
 * same for any launch shape. This is ampc's own stream: it does not reproduce torch's CUDA
 * numbers (curand's Philox with torch's per-thread offsets), only their distributions.
 *
 * Frontends here check arguments with PyTorch's messages, reserve words (CUDA), and dispatch the
 * RANDOM kernels. The core runs under the binding's GIL, so the state needs no lock. */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "autograd.h"
#include "kernel_args.h"
#include "mt19937.h"
#include "ops.h"
#include "philox.h"

/* PyTorch's default seed (torch.initial_seed() before any manual_seed). */
#define AMPC_DEFAULT_SEED 67280421310721ull
#define AMPC_MAX_DEVICE_INDEX 128 /* ampc_device.index is an int8 */

typedef struct philox_state {
    uint64_t seed, offset; /* offset counts 32-bit words and stays a multiple of 4 */
} philox_state;

static philox_state generators[AMPC_NUM_DEVICE_TYPES][AMPC_MAX_DEVICE_INDEX];
static ampc_cpu_generator cpu_generator;
static bool generators_ready = false;

static void seed_all(uint64_t seed) {
    for (int t = 0; t < AMPC_NUM_DEVICE_TYPES; t++)
        for (int i = 0; i < AMPC_MAX_DEVICE_INDEX; i++) {
            generators[t][i].seed = seed;
            generators[t][i].offset = 0;
        }
    ampc_mt_seed(&cpu_generator, seed);
    generators_ready = true;
}

static philox_state *generator_of(ampc_device dev) {
    if (!generators_ready) seed_all(AMPC_DEFAULT_SEED);
    int type = (dev.type >= 0 && dev.type < AMPC_NUM_DEVICE_TYPES) ? dev.type : AMPC_CPU;
    int index = dev.index >= 0 ? dev.index : 0; /* an int8: always below AMPC_MAX_DEVICE_INDEX */
    return &generators[type][index];
}

ampc_cpu_generator *ampc_cpu_generator_default(void) {
    if (!generators_ready) seed_all(AMPC_DEFAULT_SEED);
    return &cpu_generator;
}

void ampc_manual_seed(uint64_t seed) { seed_all(seed); }

uint64_t ampc_initial_seed(void) { return ampc_cpu_generator_default()->seed; }

uint64_t ampc_seed(void) {
    uint64_t s = 0;
    FILE *f = fopen("/dev/urandom", "rb");
    if (f) {
        if (fread(&s, sizeof s, 1, f) != 1) s = 0;
        fclose(f);
    }
    if (s == 0) { /* no /dev/urandom: mix the clock and an address (ASLR) instead */
        struct timespec ts;
        timespec_get(&ts, TIME_UTC);
        s = ((uint64_t)ts.tv_sec * 1000000007ull) ^ (uint64_t)ts.tv_nsec ^ (uint64_t)(uintptr_t)&s;
    }
    s &= (((uint64_t)1) << 63) - 1; /* PyTorch's seeds fit in an int64 too */
    seed_all(s);
    return s;
}

void ampc_philox_reserve(ampc_device dev, uint64_t n, uint64_t *seed, uint64_t *offset) {
    philox_state *g = generator_of(dev);
    *seed = g->seed;
    *offset = g->offset;
    g->offset += (n + 3) & ~(uint64_t)3; /* whole blocks, so the next request starts a block */
}

size_t ampc_rng_state_size(ampc_device dev) { return dev.type == AMPC_CPU ? AMPC_CPU_RNG_STATE_BYTES : 16; }

void ampc_rng_state_get(ampc_device dev, uint8_t *out) {
    if (dev.type == AMPC_CPU) {
        ampc_mt_serialize(ampc_cpu_generator_default(), out);
        return;
    }
    philox_state *g = generator_of(dev);
    for (int i = 0; i < 8; i++) {
        out[i] = (uint8_t)(g->seed >> (8 * i));
        out[8 + i] = (uint8_t)(g->offset >> (8 * i));
    }
}

ampc_status ampc_rng_state_set(ampc_device dev, const uint8_t *in, size_t n) {
    if (n != ampc_rng_state_size(dev))
        return ampc_set_error(AMPC_E_RUNTIME, "set_rng_state: expected a uint8 tensor of %zu bytes for a %s generator "
                              "(as get_rng_state() returns), but got %zu bytes",
                              ampc_rng_state_size(dev), dev.type == AMPC_CPU ? "CPU" : "CUDA", n);
    if (dev.type == AMPC_CPU) {
        if (!ampc_mt_deserialize(ampc_cpu_generator_default(), in))
            return ampc_set_error(AMPC_E_RUNTIME, "set_rng_state: the bytes are not a CPU generator state");
        return AMPC_OK;
    }
    philox_state *g = generator_of(dev);
    uint64_t seed = 0, offset = 0;
    for (int i = 0; i < 8; i++) {
        seed |= (uint64_t)in[i] << (8 * i);
        offset |= (uint64_t)in[8 + i] << (8 * i);
    }
    g->seed = seed;
    g->offset = (offset + 3) & ~(uint64_t)3;
    return AMPC_OK;
}

void ampc_rng_state_for_seed(ampc_device dev, uint64_t seed, uint8_t *out) {
    if (dev.type == AMPC_CPU) {
        ampc_cpu_generator g;
        ampc_mt_seed(&g, seed);
        ampc_mt_serialize(&g, out);
        return;
    }
    for (int i = 0; i < 8; i++) {
        out[i] = (uint8_t)(seed >> (8 * i));
        out[8 + i] = 0;
    }
}

uint64_t ampc_rng_state_seed(const uint8_t *state) {
    uint64_t s = 0;
    for (int i = 0; i < 8; i++) s |= (uint64_t)state[i] << (8 * i); /* both layouts start with the seed */
    return s;
}

/* ---------------------------------------------------------------- argument checks */

/* PyTorch's C++ names of the element types, which its range-check messages print. */
static const char *cpp_type_name(ampc_dtype dt) {
    switch (dt) {
    case AMPC_FLOAT32: return "float";
    case AMPC_FLOAT16: return "c10::Half";
    case AMPC_BFLOAT16: return "c10::BFloat16";
    case AMPC_FLOAT64: return "double";
    case AMPC_INT64: return "long int";
    case AMPC_INT32: return "int";
    case AMPC_UINT8: return "unsigned char";
    case AMPC_BOOL: return "bool";
    default: return "?";
    }
}

static double floating_max(ampc_dtype dt) {
    switch (dt) {
    case AMPC_FLOAT16: return 65504.0;
    case AMPC_BFLOAT16: return 3.3895313892515355e38;
    case AMPC_FLOAT32: return FLT_MAX;
    default: return DBL_MAX;
    }
}

/* Integer range [lo, hi] random_ may draw into a dtype (floats: their finite range). */
static void integral_bounds(ampc_dtype dt, int64_t *lo, int64_t *hi) {
    switch (dt) {
    case AMPC_BOOL: *lo = 0; *hi = 1; break;
    case AMPC_UINT8: *lo = 0; *hi = 255; break;
    case AMPC_INT32: *lo = INT32_MIN; *hi = INT32_MAX; break;
    case AMPC_FLOAT16: *lo = -65504; *hi = 65504; break;
    default: *lo = INT64_MIN; *hi = INT64_MAX; break; /* int64, and floats wider than any int64 */
    }
}

/* The largest value random_() draws by default: the dtype's max for integers, 2^digits for
 * floats (the last integer every smaller one is exact below), as PyTorch does. */
static int64_t default_random_high(ampc_dtype dt) {
    switch (dt) {
    case AMPC_FLOAT16: return (int64_t)1 << 11;
    case AMPC_BFLOAT16: return (int64_t)1 << 8;
    case AMPC_FLOAT32: return (int64_t)1 << 24;
    case AMPC_FLOAT64: return (int64_t)1 << 53;
    default: {
        int64_t lo, hi;
        integral_bounds(dt, &lo, &hi);
        return hi;
    }
    }
}

static ampc_status check_floating(const char *op, const ampc_tensor *t) {
    if (!ampc_dtype_is_floating(t->dtype))
        return ampc_set_error(AMPC_E_NOT_IMPLEMENTED, "\"%s\" not implemented for '%s'", op,
                              ampc_dtype_torch_name(t->dtype));
    return AMPC_OK;
}

/* ---------------------------------------------------------------- dispatch */

/* Fills t with the RANDOM kernel `op`, reserving `words_per_element` Philox words per element. */
static ampc_status run_random(ampc_op op, ampc_tensor *t, uint64_t words_per_element, ampc_scalar s0,
                              ampc_scalar s1, int n_in, const ampc_tensor *in0, const ampc_tensor *in1) {
    int64_t n = ampc_numel(t);
    if (n == 0) return AMPC_OK;
    (void)n_in;
    uint64_t seed = 0, offset = 0; /* the CPU kernels draw from the CPU generator itself */
    if (t->device.type != AMPC_CPU) ampc_philox_reserve(t->device, (uint64_t)n * words_per_element, &seed, &offset);
    switch (op) {
    case AMPC_OP_UNIFORM: {
        ampc_uniform_args a = {.out = t, .from = ampc_scalar_to_double(s0), .to = ampc_scalar_to_double(s1),
                               .seed = seed, .offset = offset};
        AMPC_TRY(ampc_dispatch_uniform(op, &a));
        break;
    }
    case AMPC_OP_NORMAL: {
        ampc_normal_args a = {.out = t, .means = in0, .stddevs = in1, .mean = ampc_scalar_to_double(s0),
                              .stddev = ampc_scalar_to_double(s1), .seed = seed, .offset = offset};
        AMPC_TRY(ampc_dispatch_normal(op, &a));
        break;
    }
    case AMPC_OP_RANDINT: {
        ampc_randint_args a = {.out = t, .low = ampc_scalar_to_int(s0), .high = ampc_scalar_to_int(s1),
                               .seed = seed, .offset = offset};
        AMPC_TRY(ampc_dispatch_randint(op, &a));
        break;
    }
    default: {
        ampc_bernoulli_args a = {.out = t, .probs = in0, .p = ampc_scalar_to_double(s0), .seed = seed, .offset = offset};
        AMPC_TRY(ampc_dispatch_bernoulli(op, &a));
        break;
    }
    }
    t->storage->version++;
    return AMPC_OK;
}

static uint64_t uniform_words(ampc_dtype dt) { return dt == AMPC_FLOAT64 ? 2 : 1; }

ampc_status ampc_uniform_(ampc_tensor *t, double from, double to) {
    AMPC_TRY(check_floating("uniform_", t));
    double max = floating_max(t->dtype);
    const char *tn = cpp_type_name(t->dtype);
    if (!(from >= -max && from <= max)) return ampc_set_error(AMPC_E_RUNTIME, "from is out of bounds for %s", tn);
    if (!(to >= -max && to <= max)) return ampc_set_error(AMPC_E_RUNTIME, "to is out of bounds for %s", tn);
    if (from > to)
        return ampc_set_error(AMPC_E_RUNTIME, "uniform_ expects to return a [from, to) range, but found from=%g > to=%g",
                              from, to);
    if (!(to - from <= max))
        return ampc_set_error(AMPC_E_RUNTIME,
                              "uniform_ expects to-from <= std::numeric_limits<%s>::max(), but found to=%g and from=%g "
                              "which result in to-from to exceed the limit",
                              t->dtype == AMPC_FLOAT16 ? "Half" : t->dtype == AMPC_BFLOAT16 ? "BFloat16" : tn, to, from);
    return run_random(AMPC_OP_UNIFORM, t, uniform_words(t->dtype), ampc_scalar_float(from), ampc_scalar_float(to), 0,
                      NULL, NULL);
}

ampc_status ampc_normal_(ampc_tensor *t, double mean, double std) {
    AMPC_TRY(check_floating("normal_", t));
    if (!(std >= 0.0)) return ampc_set_error(AMPC_E_RUNTIME, "normal expects std >= 0.0, but found std %g", std);
    return run_random(AMPC_OP_NORMAL, t, uniform_words(t->dtype), ampc_scalar_float(mean), ampc_scalar_float(std), 0,
                      NULL, NULL);
}

/* random_ over the inclusive range [low, high_inclusive]; the kernel draws (high - low + 1)
 * values, computed in uint64 so a full int64 range (2^64 values: 0) fits. */
static ampc_status random_inclusive(ampc_tensor *t, int64_t low, int64_t high_inclusive) {
    int64_t lo, hi;
    integral_bounds(t->dtype, &lo, &hi);
    const char *tn = cpp_type_name(t->dtype);
    if (low < lo || low > hi) return ampc_set_error(AMPC_E_RUNTIME, "from is out of bounds for %s", tn);
    if (high_inclusive < lo || high_inclusive > hi)
        return ampc_set_error(AMPC_E_RUNTIME, "to - 1 is out of bounds for %s", tn);
    uint64_t range = (uint64_t)high_inclusive - (uint64_t)low + 1u; /* 0 means 2^64 */
    uint64_t words = (range != 0 && range <= ((uint64_t)1 << 32)) ? 1 : 2;
    return run_random(AMPC_OP_RANDINT, t, words, ampc_scalar_int(low), ampc_scalar_int(high_inclusive), 0, NULL, NULL);
}

ampc_status ampc_random_(ampc_tensor *t, int64_t low, int64_t high) {
    if (low >= high)
        return ampc_set_error(AMPC_E_RUNTIME,
                              "random_ expects 'from' to be less than 'to', but got from=%lld >= to=%lld",
                              (long long)low, (long long)high);
    return random_inclusive(t, low, high - 1);
}

ampc_status ampc_random_to_max_(ampc_tensor *t, int64_t low) {
    int64_t high = default_random_high(t->dtype);
    if (low > high)
        return ampc_set_error(AMPC_E_RUNTIME,
                              "random_ expects 'from' casted to dtype to be less than or equal to 'to' casted to "
                              "dtype, but got from=%lld > to=%lld",
                              (long long)low, (long long)high);
    return random_inclusive(t, low, high);
}

ampc_status ampc_bernoulli_(ampc_tensor *t, double p) {
    if (!(p >= 0.0 && p <= 1.0))
        return ampc_set_error(AMPC_E_RUNTIME, "bernoulli_ expects p to be in [0, 1], but got p=%g", p);
    return run_random(AMPC_OP_BERNOULLI, t, 1, ampc_scalar_float(p), ampc_scalar_none(), 0, NULL, NULL);
}

/* `src` broadcast to t's shape as a contiguous float64 tensor on t's device: the per-element
 * parameter layout the RANDOM kernels read (means, stddevs, probs). */
static ampc_tensor *as_f64_param(const char *op, const ampc_tensor *src, const ampc_tensor *t) {
    char s0[160], s1[160];
    int nd;
    int64_t shape[AMPC_MAX_DIMS];
    if (ampc_broadcast_shapes(op, src->ndim, src->shape, t->ndim, t->shape, &nd, shape) != AMPC_OK) return NULL;
    if (nd != t->ndim || (nd && memcmp(shape, t->shape, sizeof(int64_t) * (size_t)nd) != 0)) {
        ampc_set_error(AMPC_E_RUNTIME, "%s: parameter of shape %s cannot be broadcast to the output shape %s", op,
                       ampc_shape_str(src->ndim, src->shape, s0, sizeof s0),
                       ampc_shape_str(t->ndim, t->shape, s1, sizeof s1));
        return NULL;
    }
    ampc_tensor *out = ampc_empty(t->ndim, t->shape, AMPC_FLOAT64, t->device);
    if (out && ampc_copy_(out, src) != AMPC_OK) {
        ampc_tensor_decref(out);
        return NULL;
    }
    return out;
}

/* True when every element of the float64 tensor p satisfies lo <= x <= hi (NaN fails).
 * Reads through a host copy, so it also works for device tensors (one synchronisation). */
static ampc_status all_within(const ampc_tensor *p, double lo, double hi, bool *ok) {
    ampc_tensor *host = ampc_to(p, AMPC_FLOAT64, ampc_cpu_device(), false);
    if (!host) return ampc_last_status();
    ampc_tensor *c = ampc_contiguous(host);
    ampc_tensor_decref(host);
    if (!c) return ampc_last_status();
    const double *v = (const double *)ampc_data_ptr(c);
    int64_t n = ampc_numel(c);
    *ok = true;
    for (int64_t i = 0; i < n; i++)
        if (!(v[i] >= lo && v[i] <= hi)) {
            *ok = false;
            break;
        }
    ampc_tensor_decref(c);
    return AMPC_OK;
}

/* The value of a one-element tensor (a wrapped number), read through a host float64 copy. */
static ampc_status one_value(const ampc_tensor *t, double *v) {
    ampc_tensor *h = ampc_to(t, AMPC_FLOAT64, ampc_cpu_device(), false);
    if (!h) return ampc_last_status();
    *v = *(const double *)ampc_data_ptr(h);
    ampc_tensor_decref(h);
    return AMPC_OK;
}

static ampc_status same_device(const char *op, const ampc_tensor *a, const ampc_tensor *b) {
    char d0[32], d1[32];
    if (!ampc_device_eq(a->device, b->device) && !b->is_wrapped_number && !a->is_wrapped_number)
        return ampc_set_error(AMPC_E_RUNTIME,
                              "Expected all tensors to be on the same device, but found at least two devices, %s and "
                              "%s! (in %s)",
                              ampc_device_str(a->device, d0, sizeof d0), ampc_device_str(b->device, d1, sizeof d1),
                              op);
    return AMPC_OK;
}

ampc_status ampc_bernoulli_p_(ampc_tensor *t, const ampc_tensor *p) {
    AMPC_TRY(same_device("bernoulli_", t, p));
    if (!ampc_dtype_is_floating(p->dtype))
        return ampc_set_error(AMPC_E_NOT_IMPLEMENTED, "\"bernoulli_tensor_cpu_p_\" not implemented for '%s'",
                              ampc_dtype_torch_name(p->dtype));
    ampc_tensor *probs = as_f64_param("bernoulli_", p, t);
    if (!probs) return ampc_last_status();
    bool ok = true;
    ampc_status st = all_within(probs, 0.0, 1.0, &ok);
    if (st == AMPC_OK && !ok)
        st = ampc_set_error(AMPC_E_RUNTIME, "bernoulli: Expected p_in >= 0 && p_in <= 1 to be true, but got false.");
    if (st == AMPC_OK)
        /* p carries the draw precision for the CPU kernel: torch draws doubles for a float64 p, floats otherwise */
        st = run_random(AMPC_OP_BERNOULLI, t, 1, ampc_scalar_float(p->dtype == AMPC_FLOAT64 ? 64 : 32), ampc_scalar_none(),
                        1, probs, NULL);
    ampc_tensor_decref(probs);
    return st;
}

ampc_tensor *ampc_bernoulli(const ampc_tensor *probs) {
    ampc_tensor *out = ampc_empty_like(probs);
    if (out && ampc_bernoulli_p_(out, probs) != AMPC_OK) {
        ampc_tensor_decref(out);
        return NULL;
    }
    return out;
}

ampc_tensor *ampc_normal_tensors(const ampc_tensor *mean, const ampc_tensor *std) {
    if (same_device("normal", mean, std) != AMPC_OK) return NULL;
    ampc_result_type_state rt;
    ampc_result_type_init(&rt);
    ampc_result_type_update(&rt, mean->dtype, mean->ndim, mean->is_wrapped_number);
    ampc_result_type_update(&rt, std->dtype, std->ndim, std->is_wrapped_number);
    ampc_dtype dt = ampc_result_type_finish(&rt);
    if (!ampc_dtype_is_floating(dt)) {
        ampc_set_error(AMPC_E_NOT_IMPLEMENTED, "\"normal_\" not implemented for '%s'", ampc_dtype_torch_name(dt));
        return NULL;
    }
    int nd;
    int64_t shape[AMPC_MAX_DIMS];
    if (ampc_broadcast_shapes("normal", mean->ndim, mean->shape, std->ndim, std->shape, &nd, shape) != AMPC_OK)
        return NULL;
    ampc_device dev = mean->is_wrapped_number ? std->device : mean->device;
    /* torch's normal_out_impl: check std, draw normal_(0, std number or 1) into the output, then
     * out *= std (a tensor std) and out += mean, each op rounding to the dtype as torch's do */
    if (!std->is_wrapped_number) {
        bool ok = true;
        ampc_tensor *s = ampc_to(std, AMPC_FLOAT64, std->device, false);
        if (!s) return NULL;
        ampc_status st = all_within(s, 0.0, INFINITY, &ok);
        ampc_tensor_decref(s);
        if (st != AMPC_OK) return NULL;
        if (!ok) {
            ampc_set_error(AMPC_E_RUNTIME, "normal expects all elements of std >= 0.0");
            return NULL;
        }
    }
    ampc_tensor *out = ampc_empty(nd, shape, dt, dev);
    if (!out) return NULL;
    bool prev = ampc_grad_mode_pause();
    double sv = 1.0;
    ampc_status st = std->is_wrapped_number ? one_value(std, &sv) : AMPC_OK;
    if (st == AMPC_OK) st = ampc_normal_(out, 0.0, sv);
    if (st == AMPC_OK && !std->is_wrapped_number) st = ampc_binary_(AMPC_OP_MUL, out, std, ampc_scalar_none());
    if (st == AMPC_OK) st = ampc_binary_(AMPC_OP_ADD, out, mean, ampc_scalar_none());
    ampc_grad_mode_restore(prev);
    if (st != AMPC_OK) {
        ampc_tensor_decref(out);
        return NULL;
    }
    return out;
}

/* ---------------------------------------------------------------- randperm */

/* CPU: torch's randperm_cpu on the CPU generator. n < 2^32 / 20: start from the identity and
 * swap position i with i + random() % (n - i) for i < n - 1; larger n: the inside-out
 * Fisher-Yates with random64() % (i + 1) (torch's switch, so 32-bit modulo bias stays small).
 * CUDA: ampc's own Philox shuffle on the host, from the top: step k (i = n-1-k) swaps position i
 * with j = x_k mod (i + 1), x_k the 64-bit value of words 2k, 2k+1 of the reserved range. */
ampc_tensor *ampc_randperm(int64_t n, ampc_dtype dtype, ampc_device dev) {
    if (n < 0) {
        ampc_set_error(AMPC_E_RUNTIME, "Trying to create tensor with negative dimension %lld: [%lld]", (long long)n,
                       (long long)n);
        return NULL;
    }
    if (!ampc_dtype_is_valid(dtype)) {
        ampc_set_error(AMPC_E_TYPE, "randperm: invalid dtype %d", (int)dtype);
        return NULL;
    }
    if (ampc_check_device("randperm", dev) != AMPC_OK) return NULL;
    if (dtype == AMPC_BOOL) {
        ampc_set_error(AMPC_E_NOT_IMPLEMENTED, "\"randperm\" not implemented for 'Bool'");
        return NULL;
    }
    if (ampc_dtype_is_floating(dtype)) {
        int64_t max_n = default_random_high(dtype) + 1; /* PyTorch: every value below 2^digits + 1 is exact */
        if (n > max_n) {
            ampc_set_error(AMPC_E_RUNTIME, "n cannot be greater than %lld for %s type.", (long long)max_n,
                           ampc_dtype_torch_name(dtype));
            return NULL;
        }
    } else {
        int64_t lo, hi;
        integral_bounds(dtype, &lo, &hi);
        if (n - 1 > hi) {
            ampc_set_error(AMPC_E_RUNTIME, "value cannot be converted to type %s without overflow",
                           cpp_type_name(dtype));
            return NULL;
        }
    }
    int64_t shape[1] = {n};
    ampc_tensor *host = ampc_empty(1, shape, AMPC_INT64, ampc_cpu_device());
    if (!host) return NULL;
    int64_t *v = (int64_t *)ampc_data_ptr(host);
    if (dev.type == AMPC_CPU) {
        ampc_cpu_generator *g = ampc_cpu_generator_default();
        if (n < (int64_t)(UINT32_MAX / 20)) {
            for (int64_t i = 0; i < n; i++) v[i] = i;
            for (int64_t i = 0; i < n - 1; i++) {
                int64_t z = (int64_t)(ampc_mt_random(g) % (uint64_t)(n - i));
                int64_t tmp = v[i];
                v[i] = v[z + i];
                v[z + i] = tmp;
            }
        } else {
            for (int64_t i = 0; i < n; i++) {
                int64_t z = (int64_t)(ampc_mt_random64(g) % (uint64_t)(i + 1));
                v[i] = v[z];
                v[z] = i;
            }
        }
    } else {
        for (int64_t i = 0; i < n; i++) v[i] = i;
    }
    if (dev.type != AMPC_CPU && n > 1) {
        uint64_t seed, offset;
        ampc_philox_reserve(dev, (uint64_t)(n - 1) * 2, &seed, &offset);
        ampc_philox_block b = {{0, 0, 0, 0}};
        for (int64_t k = 0; k < n - 1; k++) {
            if ((k & 1) == 0) b = ampc_philox_at(seed, offset / 4 + (uint64_t)k / 2);
            uint64_t x = ((uint64_t)b.w[2 * (k & 1) + 1] << 32) | b.w[2 * (k & 1)];
            int64_t i = n - 1 - k;
            int64_t j = (int64_t)(x % (uint64_t)(i + 1));
            int64_t tmp = v[i];
            v[i] = v[j];
            v[j] = tmp;
        }
    }
    ampc_tensor *out = ampc_to(host, dtype, dev, false);
    ampc_tensor_decref(host);
    return out;
}
