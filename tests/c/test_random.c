/* test_random.c: Philox and MT19937 known answers, the CPU stream layout, generator state, statistics of every
 * random kernel, layout independence (strided outputs), errors, randperm and ARANGE. */
#include <stdlib.h>
#include <string.h>

#include "core/kernel_args.h"
#include "core/mt19937.h"
#include "core/philox.h"
#include "ctest.h"

static ampc_tensor *new1d(int64_t n, ampc_dtype dt) {
    int64_t shape[1] = {n};
    return ampc_empty(1, shape, dt, ampc_cpu_device());
}

static double elem(const ampc_tensor *t, int64_t i) { return ctest_value(t, i); }

/* n draws in dtype dt after ampc_manual_seed(seed), widened to double (the caller frees them):
 * ampc_uniform_(a, b), or ampc_normal_(mean a, std b) when normal. NULL if the kernel fails. */
static double *seeded_draws(ampc_dtype dt, int64_t n, uint64_t seed, bool normal, double a, double b) {
    ampc_tensor *t = new1d(n, dt);
    ampc_manual_seed(seed);
    ampc_status st = normal ? ampc_normal_(t, a, b) : ampc_uniform_(t, a, b);
    double *v = st == AMPC_OK ? (double *)malloc(sizeof(double) * (size_t)n) : NULL;
    for (int64_t i = 0; v && i < n; i++)
        v[i] = dt == AMPC_FLOAT32 ? ((float *)ampc_data_ptr(t))[i] : ((double *)ampc_data_ptr(t))[i];
    ampc_tensor_decref(t);
    return v;
}

CTEST(philox_known_answers) {
    /* Random123's kat_vectors for philox4x32 10 (counter[4] key[2] -> output[4]). */
    static const uint32_t kat[3][10] = {
        {0, 0, 0, 0, 0, 0, 0x6627e8d5u, 0xe169c58du, 0xbc57ac4cu, 0x9b00dbd8u},
        {0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu, 0x408f276du, 0x41c83b0eu,
         0xa20bc7c6u, 0x6d5451fdu},
        {0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u, 0xa4093822u, 0x299f31d0u, 0xd16cfe09u, 0x94fdccebu,
         0x5001e420u, 0x24126ea1u},
    };
    for (int k = 0; k < 3; k++) {
        ampc_philox_block b = ampc_philox4x32_10(kat[k], kat[k] + 4);
        for (int j = 0; j < 4; j++) CHECK(b.w[j] == kat[k][6 + j]);
    }
    /* The (seed, block) form puts the seed in the key and the block in the counter's low half. */
    ampc_philox_block b = ampc_philox_at(0x299f31d0a4093822ull, 0x85a308d3243f6a88ull);
    uint32_t ctr[4] = {0x243f6a88u, 0x85a308d3u, 0, 0}, key[2] = {0xa4093822u, 0x299f31d0u};
    ampc_philox_block r = ampc_philox4x32_10(ctr, key);
    for (int j = 0; j < 4; j++) CHECK(b.w[j] == r.w[j]);
    CHECK(ampc_philox_word(0, 2) == 0xbc57ac4cu);
}

CTEST(random_reproducible) {
    ampc_tensor *a = new1d(1001, AMPC_FLOAT32), *b = new1d(1001, AMPC_FLOAT32);
    ampc_manual_seed(123);
    CHECK(ampc_initial_seed() == 123);
    CHECK(ampc_uniform_(a, 0, 1) == AMPC_OK);
    ampc_manual_seed(123);
    CHECK(ampc_uniform_(b, 0, 1) == AMPC_OK);
    CHECK(memcmp(ampc_data_ptr(a), ampc_data_ptr(b), 1001 * 4) == 0);
    /* the next call continues the stream: different values */
    CHECK(ampc_uniform_(b, 0, 1) == AMPC_OK);
    CHECK(memcmp(ampc_data_ptr(a), ampc_data_ptr(b), 1001 * 4) != 0);
    ampc_manual_seed(124);
    CHECK(ampc_uniform_(b, 0, 1) == AMPC_OK);
    CHECK(memcmp(ampc_data_ptr(a), ampc_data_ptr(b), 1001 * 4) != 0);
    /* get/set state replays a draw (state bytes, the normal-sample cache included) */
    uint8_t state[AMPC_CPU_RNG_STATE_BYTES];
    CHECK(ampc_rng_state_size(ampc_cpu_device()) == AMPC_CPU_RNG_STATE_BYTES);
    ampc_tensor *s3 = new1d(3, AMPC_FLOAT32), *s3b = new1d(3, AMPC_FLOAT32);
    CHECK(ampc_normal_(s3, 0, 1) == AMPC_OK); /* 3 < 16: the serial path leaves a cached sample */
    ampc_rng_state_get(ampc_cpu_device(), state);
    CHECK(ampc_rng_state_seed(state) == 124);
    CHECK(ampc_normal_(a, 0, 1) == AMPC_OK && ampc_normal_(s3, 0, 1) == AMPC_OK);
    CHECK(ampc_rng_state_set(ampc_cpu_device(), state, sizeof state) == AMPC_OK);
    CHECK(ampc_normal_(b, 0, 1) == AMPC_OK && ampc_normal_(s3b, 0, 1) == AMPC_OK);
    CHECK(memcmp(ampc_data_ptr(a), ampc_data_ptr(b), 1001 * 4) == 0);
    CHECK(memcmp(ampc_data_ptr(s3), ampc_data_ptr(s3b), 3 * 4) == 0);
    CHECK(ampc_rng_state_set(ampc_cpu_device(), state, 16) != AMPC_OK); /* wrong size */
    memset(state + 8, 0xff, 8);                                         /* left/next out of range */
    CHECK(ampc_rng_state_set(ampc_cpu_device(), state, sizeof state) != AMPC_OK);
    /* the engine is MT19937 (torch's): the C++ standard's answers for the default seed 5489 */
    ampc_cpu_generator g;
    ampc_mt_seed(&g, 5489);
    CHECK(ampc_mt_random(&g) == 3499211612u && ampc_mt_random(&g) == 581869302u && ampc_mt_random(&g) == 3890346734u);
    for (int i = 3; i < 9999; i++) ampc_mt_random(&g);
    CHECK(ampc_mt_random(&g) == 4123659995u);
    ampc_mt_seed(&g, ((uint64_t)1 << 32) + 5489); /* the engine takes the low 32 bits of the seed */
    CHECK(ampc_mt_random64(&g) == (((uint64_t)3499211612u << 32) | 581869302u));
    /* rand's first element is the first draw's low 24 bits / 2^24 */
    ampc_manual_seed(5489);
    CHECK(ampc_uniform_(a, 0, 1) == AMPC_OK);
    CHECK(((float *)ampc_data_ptr(a))[0] == (float)(3499211612u & 0xffffffu) / 16777216.0f);
    CHECK(((float *)ampc_data_ptr(a))[1] == (float)(581869302u & 0xffffffu) / 16777216.0f);
    DECREF(s3, s3b);
    ampc_tensor_decref(a);
    ampc_tensor_decref(b);
}

CTEST(random_uniform_stats) {
    int64_t n = 1 << 20;
    ampc_dtype dts[2] = {AMPC_FLOAT32, AMPC_FLOAT64};
    for (int k = 0; k < 2; k++) {
        double *draws = seeded_draws(dts[k], n, 42, false, -2.0, 3.0);
        CHECK(draws != NULL);
        double sum = 0, sq = 0, lo = 1e9, hi = -1e9;
        int64_t below_half = 0;
        for (int64_t i = 0; draws && i < n; i++) {
            double v = draws[i];
            sum += v;
            sq += v * v;
            lo = v < lo ? v : lo;
            hi = v > hi ? v : hi;
            below_half += v < 0.5;
        }
        double mean = sum / n, var = sq / n - mean * mean;
        CHECK(fabs(mean - 0.5) < 0.01);
        CHECK(fabs(var - 25.0 / 12.0) < 0.02);
        CHECK(lo >= -2.0 && hi < 3.0 && lo < -1.99 && hi > 2.99);
        CHECK(fabs((double)below_half / n - 0.5) < 0.003); /* CDF at the midpoint, 6 sigma */
        free(draws);
    }
}

CTEST(random_normal_stats) {
    int64_t n = 1 << 20;
    ampc_dtype dts[2] = {AMPC_FLOAT32, AMPC_FLOAT64};
    for (int k = 0; k < 2; k++) {
        double *draws = seeded_draws(dts[k], n, 43, true, 1.5, 2.0);
        CHECK(draws != NULL);
        double sum = 0, sq = 0;
        int64_t below = 0;
        for (int64_t i = 0; draws && i < n; i++) {
            double v = draws[i];
            sum += v;
            sq += (v - 1.5) * (v - 1.5);
            below += v < 3.5; /* mean + 1 std: Phi(1) = 0.841345 */
        }
        CHECK(fabs(sum / n - 1.5) < 0.012);
        CHECK(fabs(sqrt(sq / n) - 2.0) < 0.01);
        CHECK(fabs((double)below / n - 0.841345) < 0.0025);
        free(draws);
    }
}

CTEST(random_strided_outputs) {
    /* torch's element order: a transposed output is filled in memory order (uniform, random_),
     * a step-sliced one in row-major order, as torch's TensorIterator walks them. */
    int64_t shape[2] = {37, 53};
    ampc_tensor *base = ampc_zeros(2, shape, AMPC_FLOAT32, ampc_cpu_device());
    ampc_tensor *tt = ampc_transpose(base, 0, 1); /* (53, 37) view */
    ampc_tensor *ref = ampc_empty(2, shape, AMPC_FLOAT32, ampc_cpu_device());
    for (int k = 0; k < 2; k++) {
        ampc_manual_seed(9);
        ampc_status s1 = k == 0 ? ampc_uniform_(tt, 0, 1) : ampc_random_(tt, -5, 5);
        ampc_manual_seed(9);
        ampc_status s2 = k == 0 ? ampc_uniform_(ref, 0, 1) : ampc_random_(ref, -5, 5);
        CHECK(s1 == AMPC_OK && s2 == AMPC_OK);
        int same = 1;
        for (int64_t i = 0; i < 53; i++)
            for (int64_t j = 0; j < 37; j++) same &= elem(tt, i * 37 + j) == elem(ref, j * 53 + i);
        CHECK(same);
    }
    ampc_tensor *sl = ampc_slice(base, 1, 1, 53, 3); /* (37, 18), inner stride 3 */
    int64_t sshape[2] = {37, 18};
    ampc_tensor *sref = ampc_empty(2, sshape, AMPC_FLOAT32, ampc_cpu_device());
    CHECK(ampc_fill_(base, ampc_scalar_float(-7.0)) == AMPC_OK);
    ampc_manual_seed(10);
    CHECK(ampc_uniform_(sl, 0, 1) == AMPC_OK);
    ampc_manual_seed(10);
    CHECK(ampc_uniform_(sref, 0, 1) == AMPC_OK);
    int same = 1;
    for (int64_t i = 0; i < 37 * 18; i++) same &= elem(sl, i) == elem(sref, i);
    CHECK(same);
    CHECK(elem(base, 0) == -7.0 && elem(base, 2) == -7.0 && elem(base, 1) != -7.0); /* only the view's elements */
    DECREF(sl, sref, ref, tt, base);
}

CTEST(random_half_outputs) {
    int64_t n = 4099;
    ampc_tensor *f = new1d(n, AMPC_FLOAT32), *h = new1d(n, AMPC_FLOAT16), *b = new1d(n, AMPC_BFLOAT16);
    ampc_manual_seed(5);
    CHECK(ampc_uniform_(f, 0, 1) == AMPC_OK);
    ampc_manual_seed(5);
    CHECK(ampc_uniform_(h, 0, 1) == AMPC_OK);
    ampc_manual_seed(5);
    CHECK(ampc_uniform_(b, 0, 1) == AMPC_OK);
    int ok = 1, ones = 0;
    for (int64_t i = 0; i < n; i++) {
        float fv = ((float *)ampc_data_ptr(f))[i];
        ampc_half hv = ((ampc_half *)ampc_data_ptr(h))[i];
        ampc_bfloat16 bv = ((ampc_bfloat16 *)ampc_data_ptr(b))[i];
        /* the float32 value rounded once, or `from` where it rounded up to `to` */
        ampc_half he = ampc_f32_to_half(fv);
        ampc_bfloat16 be = ampc_f32_to_bf16(fv);
        if (ampc_half_to_f32(he) == 1.0f) he = 0, ones++;
        if (ampc_bf16_to_f32(be) == 1.0f) be = 0, ones++;
        ok &= hv == he && bv == be;
        ok &= ampc_half_to_f32(hv) < 1.0f && ampc_bf16_to_f32(bv) < 1.0f;
    }
    CHECK(ok);
    CHECK(ones > 0); /* bf16 has only 8 bits: some values do round up to 1 */
    ampc_manual_seed(5);
    CHECK(ampc_normal_(h, 0, 1) == AMPC_OK);
    double sum = 0;
    for (int64_t i = 0; i < n; i++) sum += ampc_half_to_f32(((ampc_half *)ampc_data_ptr(h))[i]);
    CHECK(fabs(sum / n) < 0.1);
    DECREF(f, h, b);
}

CTEST(random_randint) {
    int64_t n = 100000;
    ampc_tensor *t = new1d(n, AMPC_INT64);
    ampc_manual_seed(11);
    CHECK(ampc_random_(t, -3, 7) == AMPC_OK);
    int64_t counts[10] = {0};
    int ok = 1;
    for (int64_t i = 0; i < n; i++) {
        int64_t v = ((int64_t *)ampc_data_ptr(t))[i];
        ok &= v >= -3 && v < 7;
        if (v >= -3 && v < 7) counts[v + 3]++;
    }
    CHECK(ok);
    for (int k = 0; k < 10; k++) CHECK(counts[k] > 9400 && counts[k] < 10600);
    /* a range wider than 2^32 takes two words per element */
    CHECK(ampc_random_(t, -((int64_t)1 << 40), (int64_t)1 << 40) == AMPC_OK);
    int64_t big = 0;
    for (int64_t i = 0; i < n; i++) {
        int64_t v = ((int64_t *)ampc_data_ptr(t))[i];
        ok &= v >= -((int64_t)1 << 40) && v < ((int64_t)1 << 40);
        big += v > ((int64_t)1 << 39) || v < -((int64_t)1 << 39);
    }
    CHECK(ok && big > n / 2 - 1000 && big < n / 2 + 1000);
    /* the whole int64 range */
    CHECK(ampc_random_to_max_(t, INT64_MIN) == AMPC_OK);
    int64_t neg = 0;
    for (int64_t i = 0; i < n; i++) neg += ((int64_t *)ampc_data_ptr(t))[i] < 0;
    CHECK(neg > n / 2 - 1000 && neg < n / 2 + 1000);
    /* every dtype: uint8 [0, 256), bool [0, 2), float */
    ampc_tensor *u = new1d(5000, AMPC_UINT8), *b = new1d(5000, AMPC_BOOL), *f = new1d(5000, AMPC_FLOAT16);
    CHECK(ampc_random_(u, 0, 256) == AMPC_OK && ampc_random_to_max_(b, 0) == AMPC_OK && ampc_random_(f, -100, 100) == AMPC_OK);
    int seen_255 = 0, trues = 0;
    for (int64_t i = 0; i < 5000; i++) {
        seen_255 |= ((uint8_t *)ampc_data_ptr(u))[i] == 255;
        trues += ((bool *)ampc_data_ptr(b))[i];
        float v = ampc_half_to_f32(((ampc_half *)ampc_data_ptr(f))[i]);
        ok &= v >= -100 && v < 100 && v == floorf(v);
    }
    CHECK(ok && seen_255 && trues > 2300 && trues < 2700);
    DECREF(u, b, f, t);
}

CTEST(random_bernoulli) {
    int64_t n = 200000;
    ampc_tensor *t = new1d(n, AMPC_FLOAT32);
    ampc_manual_seed(3);
    CHECK(ampc_bernoulli_(t, 0.3) == AMPC_OK);
    double sum = 0;
    int ok = 1;
    for (int64_t i = 0; i < n; i++) {
        float v = ((float *)ampc_data_ptr(t))[i];
        ok &= v == 0.0f || v == 1.0f;
        sum += v;
    }
    CHECK(ok && fabs(sum / n - 0.3) < 0.005);
    CHECK(ampc_bernoulli_(t, 0.0) == AMPC_OK);
    CHECK(elem(t, 17) == 0.0);
    CHECK(ampc_bernoulli_(t, 1.0) == AMPC_OK);
    CHECK(elem(t, 17) == 1.0);
    /* per-element probabilities, broadcast over rows */
    int64_t shape[2] = {1000, 2}, pshape[1] = {2};
    ampc_tensor *out = ampc_empty(2, shape, AMPC_BOOL, ampc_cpu_device());
    ampc_tensor *p = ampc_empty(1, pshape, AMPC_FLOAT64, ampc_cpu_device());
    ((double *)ampc_data_ptr(p))[0] = 0.1;
    ((double *)ampc_data_ptr(p))[1] = 0.9;
    CHECK(ampc_bernoulli_p_(out, p) == AMPC_OK);
    int64_t c0 = 0, c1 = 0;
    for (int64_t i = 0; i < 1000; i++) {
        c0 += ((bool *)ampc_data_ptr(out))[2 * i];
        c1 += ((bool *)ampc_data_ptr(out))[2 * i + 1];
    }
    CHECK(c0 > 60 && c0 < 140 && c1 > 860 && c1 < 940);
    ampc_tensor *drawn = ampc_bernoulli(p);
    CHECK(drawn && drawn->dtype == AMPC_FLOAT64 && drawn->shape[0] == 2);
    ((double *)ampc_data_ptr(p))[1] = 1.5;
    CHECK(ampc_bernoulli_p_(out, p) == AMPC_E_RUNTIME);
    CHECK(strstr(ampc_last_error(), "p_in >= 0 && p_in <= 1") != NULL);
    DECREF(drawn, p, out, t);
}

CTEST(random_normal_tensors) {
    int64_t mshape[2] = {2, 1}, sshape[1] = {50000};
    ampc_tensor *mean = ampc_empty(2, mshape, AMPC_FLOAT32, ampc_cpu_device());
    ((float *)ampc_data_ptr(mean))[0] = -10.0f;
    ((float *)ampc_data_ptr(mean))[1] = 10.0f;
    ampc_tensor *std = ampc_full(1, sshape, ampc_scalar_float(0.5), AMPC_FLOAT32, ampc_cpu_device());
    ampc_tensor *out = ampc_normal_tensors(mean, std);
    CHECK(out && out->ndim == 2 && out->shape[0] == 2 && out->shape[1] == 50000 && out->dtype == AMPC_FLOAT32);
    if (out) {
        double s0 = 0, s1 = 0, q0 = 0;
        for (int64_t i = 0; i < 50000; i++) {
            double a = ((float *)ampc_data_ptr(out))[i], b = ((float *)ampc_data_ptr(out))[50000 + i];
            s0 += a;
            s1 += b;
            q0 += (a + 10) * (a + 10);
        }
        CHECK(fabs(s0 / 50000 + 10) < 0.02 && fabs(s1 / 50000 - 10) < 0.02 && fabs(sqrt(q0 / 50000) - 0.5) < 0.01);
    }
    ampc_tensor_decref(out);
    CHECK(ampc_fill_(std, ampc_scalar_float(-1.0)) == AMPC_OK);
    CHECK(ampc_normal_tensors(mean, std) == NULL);
    CHECK(strstr(ampc_last_error(), "normal expects all elements of std >= 0.0") != NULL);
    ampc_tensor *wrapped = ampc_wrap_scalar(ampc_scalar_float(2.0), ampc_cpu_device());
    out = ampc_normal_tensors(mean, wrapped);
    CHECK(out && out->shape[0] == 2 && out->shape[1] == 1);
    DECREF(out, wrapped, std, mean);
}

CTEST(random_errors) {
    ampc_tensor *f = new1d(4, AMPC_FLOAT32), *l = new1d(4, AMPC_INT64), *u = new1d(4, AMPC_UINT8);
    CHECK(ampc_random_(f, 5, 5) == AMPC_E_RUNTIME);
    CHECK(strcmp(ampc_last_error(), "random_ expects 'from' to be less than 'to', but got from=5 >= to=5") == 0);
    CHECK(ampc_normal_(f, 0, -1) == AMPC_E_RUNTIME);
    CHECK(strcmp(ampc_last_error(), "normal expects std >= 0.0, but found std -1") == 0);
    CHECK(ampc_uniform_(l, 0, 1) == AMPC_E_NOT_IMPLEMENTED);
    CHECK(strstr(ampc_last_error(), "not implemented for 'Long'") != NULL);
    CHECK(ampc_normal_(l, 0, 1) == AMPC_E_NOT_IMPLEMENTED);
    CHECK(ampc_uniform_(f, 2, 1) == AMPC_E_RUNTIME);
    CHECK(strstr(ampc_last_error(), "[from, to) range, but found from=2 > to=1") != NULL);
    CHECK(ampc_uniform_(f, 0, INFINITY) == AMPC_E_RUNTIME);
    CHECK(strcmp(ampc_last_error(), "to is out of bounds for float") == 0);
    CHECK(ampc_random_(u, 0, 300) == AMPC_E_RUNTIME);
    CHECK(strcmp(ampc_last_error(), "to - 1 is out of bounds for unsigned char") == 0);
    CHECK(ampc_random_(u, -5, 3) == AMPC_E_RUNTIME);
    CHECK(strcmp(ampc_last_error(), "from is out of bounds for unsigned char") == 0);
    CHECK(ampc_bernoulli_(f, 1.5) == AMPC_E_RUNTIME);
    CHECK(strcmp(ampc_last_error(), "bernoulli_ expects p to be in [0, 1], but got p=1.5") == 0);
    CHECK(ampc_randperm(-1, AMPC_INT64, ampc_cpu_device()) == NULL);
    CHECK(strstr(ampc_last_error(), "negative dimension -1") != NULL);
    CHECK(ampc_randperm(3000, AMPC_FLOAT16, ampc_cpu_device()) == NULL);
    CHECK(strcmp(ampc_last_error(), "n cannot be greater than 2049 for Half type.") == 0);
    CHECK(ampc_randperm(3, AMPC_BOOL, ampc_cpu_device()) == NULL);
    /* zero-size tensors are fine and draw nothing */
    ampc_tensor *e = new1d(0, AMPC_FLOAT32);
    uint8_t st0[AMPC_CPU_RNG_STATE_BYTES], st1[AMPC_CPU_RNG_STATE_BYTES];
    ampc_rng_state_get(ampc_cpu_device(), st0);
    CHECK(ampc_uniform_(e, 0, 1) == AMPC_OK && ampc_normal_(e, 0, 1) == AMPC_OK);
    ampc_rng_state_get(ampc_cpu_device(), st1);
    CHECK(memcmp(st0, st1, sizeof st0) == 0);
    DECREF(e, f, l, u);
}

CTEST(random_randperm) {
    int64_t ns[4] = {0, 1, 2, 10007};
    for (int k = 0; k < 4; k++) {
        int64_t n = ns[k];
        ampc_manual_seed(77);
        ampc_tensor *p = ampc_randperm(n, AMPC_INT64, ampc_cpu_device());
        CHECK(p && p->ndim == 1 && p->shape[0] == n);
        if (!p) continue;
        char *seen = (char *)calloc((size_t)n + 1, 1);
        int ok = 1, moved = 0;
        for (int64_t i = 0; i < n; i++) {
            int64_t v = ((int64_t *)ampc_data_ptr(p))[i];
            ok &= v >= 0 && v < n && !seen[v];
            if (v >= 0 && v < n) seen[v] = 1;
            moved += v != i;
        }
        CHECK(ok);
        if (n > 100) CHECK(moved > n - 100);
        ampc_manual_seed(77);
        ampc_tensor *q = ampc_randperm(n, AMPC_INT32, ampc_cpu_device());
        CHECK(q && q->dtype == AMPC_INT32);
        for (int64_t i = 0; q && i < n; i++) ok &= ((int32_t *)ampc_data_ptr(q))[i] == ((int64_t *)ampc_data_ptr(p))[i];
        CHECK(ok);
        free(seen);
        ampc_tensor_decref(p);
        ampc_tensor_decref(q);
    }
}

CTEST(arange_kernel) {
    ampc_dtype dts[8] = {AMPC_FLOAT32, AMPC_FLOAT16, AMPC_BFLOAT16, AMPC_FLOAT64,
                         AMPC_INT64, AMPC_INT32, AMPC_UINT8, AMPC_BOOL};
    for (int k = 0; k < 8; k++) {
        ampc_tensor *t = new1d(2000, dts[k]);
        ampc_arange_args a = {.out = t, .start = ampc_scalar_int(3), .step = ampc_scalar_int(-2)};
        CHECK(ampc_dispatch_arange(AMPC_OP_ARANGE, &a) == AMPC_OK);
        int ok = 1;
        for (int64_t i = 0; i < 2000; i += 7) {
            double want = 3.0 - 2.0 * (double)i;
            switch (dts[k]) {
            case AMPC_FLOAT16: want = ampc_half_to_f32(ampc_f32_to_half((float)want)); break;
            case AMPC_BFLOAT16: want = ampc_bf16_to_f32(ampc_f32_to_bf16((float)want)); break;
            case AMPC_UINT8: want = (double)(uint8_t)(int64_t)want; break;
            case AMPC_BOOL: want = want != 0; break;
            default: break;
            }
            ok &= elem(t, i) == want;
        }
        CHECK(ok);
        ampc_tensor_decref(t);
    }
    /* float steps, into a strided view */
    int64_t shape[2] = {10, 10};
    ampc_tensor *m = ampc_zeros(2, shape, AMPC_FLOAT64, ampc_cpu_device());
    ampc_tensor *col = ampc_select(m, 1, 3); /* (10,), stride 10 */
    ampc_arange_args a = {.out = col, .start = ampc_scalar_float(0.5), .step = ampc_scalar_float(0.25)};
    CHECK(ampc_dispatch_arange(AMPC_OP_ARANGE, &a) == AMPC_OK);
    CHECK(elem(m, 3) == 0.5 && elem(m, 93) == 0.5 + 9 * 0.25 && elem(m, 4) == 0.0);
    ampc_tensor_decref(col);
    ampc_tensor_decref(m);
}
