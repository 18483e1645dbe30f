/* test_optim.c: the fused optimizer steps (core/optim.h) against update rules written out here in
 * double, the found_inf skip and grad_scale unscale, master weights, strided tensors, the
 * multi-threaded path and argument errors. */
#include <stdlib.h>
#include <string.h>

#include "ctest.h"

static ampc_tensor *vec(int64_t n, ampc_dtype dt, const double *v) {
    ampc_tensor *t = ampc_empty(1, &n, dt, ampc_cpu_device());
    for (int64_t i = 0; i < n; i++) {
        ampc_tensor *e = ampc_select(t, 0, i);
        ampc_fill_(e, ampc_scalar_float(v[i]));
        ampc_tensor_decref(e);
    }
    return t;
}

static double at(const ampc_tensor *t, int64_t i) {
    ampc_scalar s;
    if (ampc_get_scalar(t, i, &s) != AMPC_OK) return NAN;
    return ampc_scalar_to_double(s);
}

static ampc_tensor *scalar_f32(double v) { return ampc_full(0, NULL, ampc_scalar_float(v), AMPC_FLOAT32, ampc_cpu_device()); }

static const double P0[4] = {0.5, -1.25, 2.0, 0.125}, G0[4] = {0.1, -0.4, 0.25, 1.5};

CTEST(optim_sgd_momentum_steps) {
    ampc_tensor *p = vec(4, AMPC_FLOAT32, P0), *g = vec(4, AMPC_FLOAT32, G0);
    ampc_tensor *buf = ampc_zeros(1, (int64_t[]){4}, AMPC_FLOAT32, ampc_cpu_device()), *count = scalar_f32(0);
    ampc_sgd_options o = {.lr = 0.1, .momentum = 0.9, .dampening = 0.2, .weight_decay = 0.01, .nesterov = false};
    ampc_optim_tensors t = {.n = 1, .params = &p, .grads = &g, .steps = &count, .state = {&buf}};
    double ep[4], eb[4];
    memcpy(ep, P0, sizeof ep);
    for (int step = 0; step < 3; step++) {
        CHECK(ampc_fused_sgd_(&t, &o) == AMPC_OK);
        for (int i = 0; i < 4; i++) {
            double gi = G0[i] + 0.01 * ep[i];
            eb[i] = step == 0 ? gi : 0.9 * eb[i] + 0.8 * gi; /* the first step copies the grad */
            ep[i] -= 0.1 * eb[i];
            CHECK_CLOSE(at(p, i), ep[i], 1e-6);
            CHECK_CLOSE(at(buf, i), eb[i], 1e-6);
        }
    }
    CHECK(at(count, 0) == 3.0);
    ampc_tensor *all[] = {p, g, buf, count};
    for (size_t i = 0; i < 4; i++) ampc_tensor_decref(all[i]);
}

/* Adam written out in double, for `steps` steps on the same grad. */
static void adam_reference(double *p, double *m, double *v, int steps, bool adamw) {
    const double lr = 0.01, b1 = 0.9, b2 = 0.999, eps = 1e-8, wd = 0.1;
    for (int s = 1; s <= steps; s++)
        for (int i = 0; i < 4; i++) {
            double g = G0[i];
            if (adamw) p[i] *= 1 - lr * wd;
            else g += wd * p[i];
            m[i] = b1 * m[i] + (1 - b1) * g;
            v[i] = b2 * v[i] + (1 - b2) * g * g;
            double denom = sqrt(v[i]) / sqrt(1 - pow(b2, s)) + eps;
            p[i] -= lr / (1 - pow(b1, s)) * m[i] / denom;
        }
}

CTEST(optim_adam_skip_and_unscale) {
    for (int adamw = 0; adamw < 2; adamw++) {
        ampc_tensor *p = vec(4, AMPC_FLOAT32, P0), *g = vec(4, AMPC_FLOAT32, G0);
        int64_t four = 4;
        ampc_tensor *m = ampc_zeros(1, &four, AMPC_FLOAT32, ampc_cpu_device());
        ampc_tensor *v = ampc_zeros(1, &four, AMPC_FLOAT32, ampc_cpu_device());
        ampc_tensor *step = scalar_f32(0), *found = scalar_f32(0), *scale = scalar_f32(8.0);
        ampc_adam_options o = {.lr = 0.01, .beta1 = 0.9, .beta2 = 0.999, .eps = 1e-8, .weight_decay = 0.1,
                               .decoupled_weight_decay = adamw};
        ampc_optim_tensors t = {.n = 1, .params = &p, .grads = &g, .steps = &step, .state = {&m, &v},
                                .found_inf = found};
        CHECK(ampc_fused_adam_(&t, &o) == AMPC_OK);
        /* a skipped step: nothing moves, the step counter included */
        ampc_fill_(found, ampc_scalar_float(1.0));
        ampc_fill_(g, ampc_scalar_float(NAN));
        CHECK(ampc_fused_adam_(&t, &o) == AMPC_OK);
        CHECK(at(step, 0) == 1.0 && isnan(at(g, 0)));
        /* a scaled grad: divided first and written back unscaled */
        ampc_fill_(found, ampc_scalar_float(0.0));
        for (int i = 0; i < 4; i++) {
            ampc_tensor *e = ampc_select(g, 0, i);
            ampc_fill_(e, ampc_scalar_float(G0[i] * 8.0));
            ampc_tensor_decref(e);
        }
        t.grad_scale = scale;
        CHECK(ampc_fused_adam_(&t, &o) == AMPC_OK);
        double ep[4], em[4] = {0}, ev[4] = {0};
        memcpy(ep, P0, sizeof ep);
        adam_reference(ep, em, ev, 2, adamw);
        for (int i = 0; i < 4; i++) {
            CHECK_CLOSE(at(p, i), ep[i], 1e-6);
            CHECK_CLOSE(at(m, i), em[i], 1e-6);
            CHECK_CLOSE(at(v, i), ev[i], 1e-6);
            CHECK(at(g, i) == (double)(float)G0[i]);
        }
        CHECK(at(step, 0) == 2.0);
        ampc_tensor *all[] = {p, g, m, v, step, found, scale};
        for (size_t i = 0; i < 7; i++) ampc_tensor_decref(all[i]);
    }
}

CTEST(optim_master_weights_fp16) {
    ampc_tensor *p = vec(4, AMPC_FLOAT16, P0), *g = vec(4, AMPC_FLOAT16, G0);
    ampc_tensor *master = ampc_to(p, AMPC_FLOAT32, ampc_cpu_device(), true);
    int64_t four = 4;
    ampc_tensor *sum = ampc_zeros(1, &four, AMPC_FLOAT32, ampc_cpu_device()), *step = scalar_f32(0);
    ampc_adagrad_options o = {.lr = 0.1, .eps = 1e-10};
    ampc_optim_tensors t = {.n = 1, .params = &p, .grads = &g, .masters = &master, .steps = &step, .state = {&sum}};
    for (int s = 0; s < 5; s++) CHECK(ampc_fused_adagrad_(&t, &o) == AMPC_OK);
    for (int i = 0; i < 4; i++) {
        double gi = (double)ampc_half_to_f32(ampc_f32_to_half((float)G0[i]));
        double ep = P0[i], es = 0;
        for (int s = 0; s < 5; s++) {
            es += gi * gi;
            ep -= 0.1 * gi / (sqrt(es) + 1e-10);
        }
        CHECK_CLOSE(at(master, i), ep, 1e-6);
        CHECK(at(p, i) == (double)ampc_half_to_f32(ampc_f32_to_half((float)at(master, i))));
    }
    /* a master of the wrong dtype, and master weights for an fp32 param, are refused */
    ampc_tensor *p32 = vec(4, AMPC_FLOAT32, P0), *g32 = vec(4, AMPC_FLOAT32, G0);
    ampc_optim_tensors bad = {.n = 1, .params = &p32, .grads = &g32, .masters = &master, .steps = &step,
                              .state = {&sum}};
    CHECK(ampc_fused_adagrad_(&bad, &o) == AMPC_E_TYPE);
    ampc_tensor *all[] = {p, g, master, sum, step, p32, g32};
    for (size_t i = 0; i < 7; i++) ampc_tensor_decref(all[i]);
}

/* RMSprop on a transposed (non-contiguous) param and state gives the contiguous result. */
CTEST(optim_strided_tensors) {
    int64_t shape[2] = {3, 5};
    ampc_tensor *base = ampc_empty(2, shape, AMPC_FLOAT32, ampc_cpu_device());
    ampc_uniform_(base, -1, 1);
    ampc_tensor *grad = ampc_empty(2, shape, AMPC_FLOAT32, ampc_cpu_device());
    ampc_uniform_(grad, -1, 1);
    ampc_tensor *pt = ampc_transpose(base, 0, 1), *gt = ampc_transpose(grad, 0, 1); /* (5, 3) views */
    ampc_tensor *pc = ampc_clone(pt), *gc = ampc_clone(gt);
    ampc_tensor *sq_base = ampc_zeros(2, shape, AMPC_FLOAT32, ampc_cpu_device());
    ampc_tensor *sq_t = ampc_transpose(sq_base, 0, 1);
    int64_t shape_t[2] = {5, 3};
    ampc_tensor *sq_c = ampc_zeros(2, shape_t, AMPC_FLOAT32, ampc_cpu_device());
    ampc_tensor *s1 = scalar_f32(0), *s2 = scalar_f32(0);
    ampc_rmsprop_options o = {.lr = 0.01, .alpha = 0.99, .eps = 1e-8, .weight_decay = 0.05};
    ampc_optim_tensors a = {.n = 1, .params = &pt, .grads = &gt, .steps = &s1, .state = {&sq_t}};
    ampc_optim_tensors b = {.n = 1, .params = &pc, .grads = &gc, .steps = &s2, .state = {&sq_c}};
    for (int s = 0; s < 3; s++) {
        CHECK(ampc_fused_rmsprop_(&a, &o) == AMPC_OK);
        CHECK(ampc_fused_rmsprop_(&b, &o) == AMPC_OK);
    }
    for (int64_t i = 0; i < 15; i++) {
        CHECK(at(pt, i) == at(pc, i));
        CHECK(at(sq_t, i) == at(sq_c, i));
    }
    ampc_tensor *all[] = {base, grad, pt, gt, pc, gc, sq_base, sq_t, sq_c, s1, s2};
    for (size_t i = 0; i < 11; i++) ampc_tensor_decref(all[i]);
}

/* Many parameters and one large one (the OpenMP path): every element gets the same update as a
 * lone element with the same values. */
CTEST(optim_parallel_lists) {
    enum { N = 40 };
    ampc_tensor *ps[N], *gs[N], *ms[N], *vs[N], *steps[N];
    for (int i = 0; i < N; i++) {
        int64_t n = i == 0 ? 200000 : 1 + i * 37;
        ps[i] = ampc_full(1, &n, ampc_scalar_float(0.5 + i), AMPC_FLOAT32, ampc_cpu_device());
        gs[i] = ampc_full(1, &n, ampc_scalar_float(0.25 - 0.01 * i), AMPC_FLOAT32, ampc_cpu_device());
        ms[i] = ampc_zeros(1, &n, AMPC_FLOAT32, ampc_cpu_device());
        vs[i] = ampc_zeros(1, &n, AMPC_FLOAT32, ampc_cpu_device());
        steps[i] = scalar_f32(0);
    }
    ampc_adam_options o = {.lr = 0.01, .beta1 = 0.9, .beta2 = 0.999, .eps = 1e-8};
    ampc_optim_tensors t = {.n = N, .params = ps, .grads = gs, .steps = steps, .state = {ms, vs}};
    CHECK(ampc_fused_adam_(&t, &o) == AMPC_OK);
    for (int i = 0; i < N; i++) {
        /* first Adam step: m/sqrt(v) after bias correction is g/|g|, so p - lr * g / (|g| + eps) */
        double g = (float)(0.25 - 0.01 * i);
        double expect = (float)(0.5 + i) - 0.01 * g / (fabs(g) + 1e-8);
        int64_t n = ampc_numel(ps[i]);
        CHECK_CLOSE(at(ps[i], 0), expect, 1e-6);
        CHECK(at(ps[i], n - 1) == at(ps[i], 0));
        CHECK(at(ps[i], n / 2) == at(ps[i], 0));
        CHECK(at(steps[i], 0) == 1.0);
    }
    for (int i = 0; i < N; i++) {
        DECREF(ps[i], gs[i], ms[i], vs[i], steps[i]);
    }
}

CTEST(optim_errors) {
    int64_t four = 4, three = 3;
    ampc_tensor *p = ampc_zeros(1, &four, AMPC_FLOAT32, ampc_cpu_device());
    ampc_tensor *g = ampc_zeros(1, &four, AMPC_FLOAT32, ampc_cpu_device());
    ampc_tensor *g3 = ampc_zeros(1, &three, AMPC_FLOAT32, ampc_cpu_device());
    ampc_tensor *g64 = ampc_zeros(1, &four, AMPC_FLOAT64, ampc_cpu_device());
    ampc_tensor *pi = ampc_zeros(1, &four, AMPC_INT64, ampc_cpu_device());
    ampc_tensor *buf = ampc_zeros(1, &four, AMPC_FLOAT32, ampc_cpu_device());
    ampc_tensor *step = scalar_f32(0), *step64 = ampc_zeros(0, NULL, AMPC_FLOAT64, ampc_cpu_device());
    ampc_tensor *expanded = ampc_expand(step, 1, &four);
    ampc_sgd_options o = {.lr = 0.1, .momentum = 0.9};
    ampc_optim_tensors t = {.n = 1, .params = &p, .grads = &g3, .steps = &step, .state = {&buf}};
    CHECK(ampc_fused_sgd_(&t, &o) == AMPC_E_RUNTIME); /* grad shape */
    CHECK(strstr(ampc_last_error(), "grad 0 has shape [3]") != NULL);
    t.grads = &g64;
    CHECK(ampc_fused_sgd_(&t, &o) == AMPC_E_TYPE); /* grad dtype */
    t.grads = &g;
    t.state[0] = NULL;
    CHECK(ampc_fused_sgd_(&t, &o) == AMPC_E_VALUE); /* missing momentum buffers */
    t.state[0] = &buf;
    t.steps = &step64;
    CHECK(ampc_fused_sgd_(&t, &o) == AMPC_E_TYPE); /* float64 step counter */
    t.steps = &step;
    t.found_inf = step64;
    CHECK(ampc_fused_sgd_(&t, &o) == AMPC_E_TYPE);
    t.found_inf = NULL;
    ampc_optim_tensors ti = {.n = 1, .params = &pi, .grads = &pi};
    ampc_sgd_options plain = {.lr = 0.1};
    CHECK(ampc_fused_sgd_(&ti, &plain) == AMPC_E_TYPE); /* integer params */
    ampc_optim_tensors te = {.n = 1, .params = &expanded, .grads = &g};
    CHECK(ampc_fused_sgd_(&te, &plain) == AMPC_E_RUNTIME); /* an expanded param overlaps itself */
    ampc_sgd_options nesterov = {.lr = 0.1, .momentum = 0.0, .nesterov = true};
    CHECK(ampc_fused_sgd_(&t, &nesterov) == AMPC_E_VALUE);
    ampc_optim_tensors empty = {.n = 0};
    CHECK(ampc_fused_sgd_(&empty, &o) == AMPC_OK);
    ampc_tensor *all[] = {p, g, g3, g64, pi, buf, step, step64, expanded};
    for (size_t i = 0; i < 9; i++) ampc_tensor_decref(all[i]);
}
