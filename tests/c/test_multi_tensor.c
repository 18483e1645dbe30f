/* test_multi_tensor.c: the list ops behind clip_grad_norm_: the total norm of many tensors of mixed
 * dtypes and strides (checked against a double loop over the same values), and the in-place scale. */
#include <math.h>
#include <string.h>

#include "ctest.h"

static double value(const ampc_tensor *t, int64_t i) {
    ampc_scalar s;
    ampc_get_scalar(t, i, &s);
    return ampc_scalar_to_double(s);
}

/* The reference: the same reduction over every element read back as double. */
static double reference_norm(int n, ampc_tensor *const *ts, double p) {
    double acc = isinf(p) && p < 0 ? INFINITY : 0.0;
    for (int i = 0; i < n; i++)
        for (int64_t j = 0; j < ampc_numel(ts[i]); j++) {
            double a = fabs(value(ts[i], j));
            if (isinf(p)) acc = p > 0 ? fmax(acc, a) : fmin(acc, a);
            else if (p == 0) acc += a != 0;
            else acc += pow(a, p);
        }
    return isinf(p) || p == 0 ? acc : pow(acc, 1.0 / p);
}

CTEST(multi_tensor_norm) {
    ampc_manual_seed(7);
    ampc_device cpu = ampc_cpu_device();
    int64_t s0[2] = {37, 5}, s1[1] = {300001}, s2[3] = {4, 6, 3}, s3[1] = {0};
    ampc_tensor *ts[5];
    ts[0] = ampc_empty(2, s0, AMPC_FLOAT32, cpu);
    ts[1] = ampc_empty(1, s1, AMPC_FLOAT32, cpu); /* several chunks: the threaded path */
    ts[2] = ampc_empty(3, s2, AMPC_FLOAT16, cpu);
    ts[3] = ampc_empty(1, s3, AMPC_BFLOAT16, cpu);
    ampc_tensor *base = ampc_empty(2, s0, AMPC_BFLOAT16, cpu);
    for (int i = 0; i < 3; i++) CHECK(ampc_uniform_(ts[i], -2.0, 2.0) == AMPC_OK);
    CHECK(ampc_uniform_(base, -3.0, 3.0) == AMPC_OK);
    ts[4] = ampc_transpose(base, 0, 1); /* strided */
    double ps[] = {2.0, 1.0, 0.0, 3.5, INFINITY, -INFINITY, 0.5};
    for (size_t k = 0; k < sizeof ps / sizeof *ps; k++) {
        ampc_tensor *r = ampc_multi_tensor_norm(5, ts, ps[k]);
        CHECK(r && r->ndim == 0 && r->dtype == AMPC_FLOAT32 && !r->requires_grad);
        if (r) CHECK_CLOSE(value(r, 0), reference_norm(5, ts, ps[k]), 1e-5);
        ampc_tensor_decref(r);
    }
    /* float64 anywhere makes the result float64 */
    ampc_tensor *d = ampc_full(1, s3, ampc_scalar_float(1.0), AMPC_FLOAT64, cpu);
    ampc_tensor *mixed[2] = {ts[0], d};
    ampc_tensor *r = ampc_multi_tensor_norm(2, mixed, 2.0);
    CHECK(r && r->dtype == AMPC_FLOAT64);
    ampc_tensor_decref(r);
    ampc_tensor_decref(d);
    /* fp16 tensors whose own norm overflows fp16 still give a finite total */
    int64_t s4[1] = {4};
    ampc_tensor *h = ampc_full(1, s4, ampc_scalar_float(60000.0), AMPC_FLOAT16, cpu);
    r = ampc_multi_tensor_norm(1, &h, 2.0);
    CHECK(r && value(r, 0) == 120000.0);
    ampc_tensor_decref(r);
    /* NaN wins, also for the inf norm */
    ampc_tensor *el = ampc_select(h, 0, 1);
    ampc_fill_(el, ampc_scalar_float(NAN));
    r = ampc_multi_tensor_norm(1, &h, INFINITY);
    CHECK(r && isnan(value(r, 0)));
    ampc_tensor_decref(r);
    r = ampc_multi_tensor_norm(1, &h, 2.0);
    CHECK(r && isnan(value(r, 0)));
    ampc_tensor_decref(r);
    /* empty list -> 0 */
    r = ampc_multi_tensor_norm(0, NULL, 2.0);
    CHECK(r && value(r, 0) == 0.0);
    ampc_tensor_decref(r);
    /* errors: integer tensors, NaN p */
    ampc_tensor *it = ampc_zeros(1, s4, AMPC_INT64, cpu);
    CHECK(ampc_multi_tensor_norm(1, &it, 2.0) == NULL && ampc_last_status() == AMPC_E_RUNTIME);
    CHECK(strstr(ampc_last_error(), "floating point") != NULL);
    CHECK(ampc_multi_tensor_norm(1, ts, NAN) == NULL);
    ampc_tensor *all[] = {ts[0], ts[1], ts[2], ts[3], ts[4], base, h, el, it};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++) ampc_tensor_decref(all[i]);
}

CTEST(multi_tensor_scale) {
    ampc_device cpu = ampc_cpu_device();
    int64_t s0[2] = {3, 4}, s1[1] = {5};
    ampc_tensor *a = ampc_full(2, s0, ampc_scalar_float(3.0), AMPC_FLOAT32, cpu);
    ampc_tensor *b = ampc_full(1, s1, ampc_scalar_float(3.0), AMPC_FLOAT16, cpu);
    ampc_tensor *c = ampc_full(2, s0, ampc_scalar_float(3.0), AMPC_FLOAT64, cpu);
    ampc_tensor *ct = ampc_transpose(c, 0, 1);
    ampc_tensor *scale = ampc_full(0, NULL, ampc_scalar_float(0.25), AMPC_FLOAT32, cpu);
    ampc_tensor *ts[3] = {a, b, ct};
    CHECK(ampc_multi_tensor_scale_(3, ts, scale) == AMPC_OK);
    CHECK(value(a, 11) == 0.75 && value(b, 4) == 0.75 && value(c, 5) == 0.75);
    CHECK(ampc_multi_tensor_scale_(0, NULL, scale) == AMPC_OK);
    /* errors: a scale of several elements, an integer tensor */
    ampc_tensor *bad_scale = ampc_zeros(1, s1, AMPC_FLOAT32, cpu);
    CHECK(ampc_multi_tensor_scale_(1, ts, bad_scale) == AMPC_E_RUNTIME);
    ampc_tensor *it = ampc_zeros(1, s1, AMPC_INT32, cpu);
    CHECK(ampc_multi_tensor_scale_(1, &it, scale) == AMPC_E_RUNTIME);
    ampc_tensor *all[] = {a, b, c, ct, scale, bad_scale, it};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++) ampc_tensor_decref(all[i]);
}
