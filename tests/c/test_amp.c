/* test_amp.c: the scaler's unscale + check and scale update (PyTorch's test values). */
#include <string.h>

#include "ctest.h"

static ampc_tensor *scalar_tensor(ampc_dtype dt, double v) {
    return ampc_full(0, NULL, ampc_scalar_float(v), dt, ampc_cpu_device());
}

static double value(const ampc_tensor *t, int64_t i) {
    ampc_scalar s;
    ampc_get_scalar(t, i, &s);
    return ampc_scalar_to_double(s);
}

CTEST(amp_unscale_and_check) {
    int64_t shape[1] = {5};
    ampc_dtype dts[3] = {AMPC_FLOAT32, AMPC_FLOAT16, AMPC_BFLOAT16};
    ampc_tensor *g[3];
    for (int i = 0; i < 3; i++) g[i] = ampc_full(1, shape, ampc_scalar_float(1024.0), dts[i], ampc_cpu_device());
    ampc_tensor *found = scalar_tensor(AMPC_FLOAT32, 0.0), *inv = scalar_tensor(AMPC_FLOAT32, 1.0 / 256);
    CHECK(ampc_amp_unscale_and_check_(3, g, found, inv) == AMPC_OK);
    CHECK(value(found, 0) == 0.0);
    for (int i = 0; i < 3; i++) CHECK(value(g[i], 4) == 4.0);
    /* an inf in the fp16 grad sets found_inf; the other grads are still unscaled */
    ampc_tensor *el = ampc_select(g[1], 0, 2);
    CHECK(ampc_fill_(el, ampc_scalar_float(INFINITY)) == AMPC_OK);
    CHECK(ampc_fill_(el, ampc_scalar_float(1e6)) == AMPC_E_RUNTIME); /* out of fp16's range: torch refuses too */
    CHECK(ampc_amp_unscale_and_check_(3, g, found, inv) == AMPC_OK);
    CHECK(value(found, 0) == 1.0);
    CHECK(value(g[0], 0) == 4.0 / 256);
    /* a NaN is caught too, and found_inf is never cleared by a clean call */
    CHECK(ampc_amp_unscale_and_check_(1, g, found, inv) == AMPC_OK && value(found, 0) == 1.0);
    /* errors: int grads, wrong found_inf dtype */
    ampc_tensor *ig = ampc_zeros(1, shape, AMPC_INT64, ampc_cpu_device());
    CHECK(ampc_amp_unscale_and_check_(1, &ig, found, inv) == AMPC_E_TYPE);
    ampc_tensor *bad = scalar_tensor(AMPC_FLOAT64, 0.0);
    CHECK(ampc_amp_unscale_and_check_(1, g, bad, inv) == AMPC_E_TYPE);
    ampc_tensor *all[] = {g[0], g[1], g[2], found, inv, el, ig, bad};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++) ampc_tensor_decref(all[i]);
}

CTEST(amp_update_scale) {
    /* PyTorch's test_grad_scaling_update_scale: growth 2, backoff 0.25, interval 2 */
    ampc_tensor *scale = scalar_tensor(AMPC_FLOAT32, 4.0), *tracker = scalar_tensor(AMPC_INT32, 0);
    ampc_tensor *found = scalar_tensor(AMPC_FLOAT32, 0.0);
    CHECK(ampc_amp_update_scale_(scale, tracker, found, 2.0, 0.25, 2, 0, INFINITY) == AMPC_OK);
    CHECK(value(scale, 0) == 4.0 && value(tracker, 0) == 1);
    CHECK(ampc_amp_update_scale_(scale, tracker, found, 2.0, 0.25, 2, 0, INFINITY) == AMPC_OK);
    CHECK(value(scale, 0) == 8.0 && value(tracker, 0) == 0);
    ampc_fill_(found, ampc_scalar_float(1.0));
    CHECK(ampc_amp_update_scale_(scale, tracker, found, 2.0, 0.25, 2, 0, INFINITY) == AMPC_OK);
    CHECK(value(scale, 0) == 2.0 && value(tracker, 0) == 0);
    /* never grows to inf */
    ampc_fill_(scale, ampc_scalar_float(3e38));
    ampc_fill_(found, ampc_scalar_float(0.0));
    CHECK(ampc_amp_update_scale_(scale, tracker, found, 2.0, 0.5, 1, 0, INFINITY) == AMPC_OK);
    CHECK(value(scale, 0) == (double)3e38f);
    /* bounds */
    ampc_fill_(scale, ampc_scalar_float(1.0));
    ampc_fill_(found, ampc_scalar_float(1.0));
    CHECK(ampc_amp_update_scale_(scale, tracker, found, 2.0, 0.5, 1, 1.0, 1024.0) == AMPC_OK);
    CHECK(value(scale, 0) == 1.0);
    /* growth_interval 0 is never reached (torch's kernel): clean steps never grow the scale */
    ampc_fill_(found, ampc_scalar_float(0.0));
    for (int i = 0; i < 3; i++) CHECK(ampc_amp_update_scale_(scale, tracker, found, 2.0, 0.5, 0, 0, INFINITY) == AMPC_OK);
    CHECK(value(scale, 0) == 1.0);
    DECREF(scale, tracker, found);
}
