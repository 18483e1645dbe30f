/* test_nn.c: the nn frontends and kernels (core/nn_*.c, cpu/cpu_nn_*.c) against plain double
 * loops written here: convolution (forward and both grads over a grid of stride, padding,
 * dilation, groups), pooling, normalization, softmax and losses, embedding, dropout's stream,
 * attention; argument errors; no leaks (ASan). The Python tests compare with PyTorch. */
#include <stdlib.h>
#include <string.h>

#include "core/nn_ops.h"
#include "ctest.h"

/* ---------------------------------------------------------------- helpers */

static uint64_t rng_state = 88172645463325252ull;
static double urand(void) { /* xorshift64: [-1, 1) */
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (double)(rng_state >> 11) * (2.0 / 9007199254740992.0) - 1.0;
}

/* A tensor of dtype dt with random values in [-1, 1); *vals (if given) gets the values as stored. */
static ampc_tensor *rnd(int nd, const int64_t *shape, ampc_dtype dt) {
    ampc_tensor *d = ampc_empty(nd, shape, AMPC_FLOAT64, ampc_cpu_device());
    double *p = (double *)ampc_data_ptr(d);
    for (int64_t i = 0; i < ampc_numel(d); i++) p[i] = urand();
    ampc_tensor *t = ampc_to(d, dt, ampc_cpu_device(), false);
    ampc_tensor_decref(d);
    return t;
}

/* The values of t (any dtype, any strides) as a malloc'd double array in row-major order. */
static double *vals(const ampc_tensor *t) {
    ampc_tensor *d = ampc_to(t, AMPC_FLOAT64, ampc_cpu_device(), true);
    ampc_tensor *c = ampc_contiguous(d);
    int64_t n = ampc_numel(t);
    double *v = (double *)malloc(sizeof(double) * (size_t)(n ? n : 1));
    memcpy(v, ampc_data_ptr(c), sizeof(double) * (size_t)n);
    ampc_tensor_decref(c);
    ampc_tensor_decref(d);
    return v;
}

static double max_rel_err(const ampc_tensor *t, const double *ref, int64_t n) {
    double *v = vals(t), worst = 0;
    for (int64_t i = 0; i < n; i++) {
        double e = fabs(v[i] - ref[i]) / (1.0 + fabs(ref[i]));
        if (e > worst || e != e) worst = e != e ? INFINITY : e;
    }
    free(v);
    return worst;
}

static ampc_tensor *scalar_tensor(double v, ampc_dtype dt) {
    return ampc_full(0, NULL, ampc_scalar_float(v), dt, ampc_cpu_device());
}

/* ---------------------------------------------------------------- convolution */

typedef struct conv_case {
    int64_t n, c, h, w, o, kh, kw, sh, sw, ph, pw, dh, dw, g;
} conv_case;

/* Direct convolution and its two grads (grad_out all given), in double. */
static void conv_ref(const conv_case *k, const double *x, const double *w, const double *b, const double *gout,
                     int64_t oh, int64_t ow, double *out, double *gx, double *gw) {
    int64_t cg = k->c / k->g, og = k->o / k->g;
    memset(gx, 0, sizeof(double) * (size_t)(k->n * k->c * k->h * k->w));
    memset(gw, 0, sizeof(double) * (size_t)(k->o * cg * k->kh * k->kw));
    for (int64_t n = 0; n < k->n; n++)
        for (int64_t o = 0; o < k->o; o++)
            for (int64_t i = 0; i < oh; i++)
                for (int64_t j = 0; j < ow; j++) {
                    double s = b ? b[o] : 0;
                    int64_t oi = ((n * k->o + o) * oh + i) * ow + j;
                    for (int64_t ci = 0; ci < cg; ci++)
                        for (int64_t a = 0; a < k->kh; a++)
                            for (int64_t bb = 0; bb < k->kw; bb++) {
                                int64_t y = i * k->sh - k->ph + a * k->dh, xx = j * k->sw - k->pw + bb * k->dw;
                                if (y < 0 || y >= k->h || xx < 0 || xx >= k->w) continue;
                                int64_t c = (o / og) * cg + ci;
                                int64_t xi = ((n * k->c + c) * k->h + y) * k->w + xx;
                                int64_t wi = ((o * cg + ci) * k->kh + a) * k->kw + bb;
                                s += x[xi] * w[wi];
                                gx[xi] += gout[oi] * w[wi];
                                gw[wi] += gout[oi] * x[xi];
                            }
                    out[oi] = s;
                }
}

static void check_conv_case(const conv_case *k, ampc_dtype dt, double tol) {
    int64_t xs[4] = {k->n, k->c, k->h, k->w}, ws[4] = {k->o, k->c / k->g, k->kh, k->kw}, bs[1] = {k->o};
    ampc_tensor *x = rnd(4, xs, dt), *w = rnd(4, ws, dt), *b = rnd(1, bs, dt);
    int64_t stride[2] = {k->sh, k->sw}, pad[2] = {k->ph, k->pw}, dil[2] = {k->dh, k->dw};
    ampc_tensor *out = ampc_conv2d(x, w, b, stride, pad, dil, k->g);
    CHECK(out != NULL);
    if (!out) goto done;
    int64_t oh = out->shape[2], ow = out->shape[3];
    CHECK(oh == (k->h + 2 * k->ph - k->dh * (k->kh - 1) - 1) / k->sh + 1);
    ampc_tensor *gout = rnd(4, out->shape, dt);
    double *xv = vals(x), *wv = vals(w), *bv = vals(b), *gv = vals(gout);
    int64_t no = ampc_numel(out), nx = ampc_numel(x), nw = ampc_numel(w);
    double *ro = malloc(sizeof(double) * (size_t)no), *rgx = malloc(sizeof(double) * (size_t)nx),
           *rgw = malloc(sizeof(double) * (size_t)nw);
    conv_ref(k, xv, wv, bv, gv, oh, ow, ro, rgx, rgw);
    CHECK(max_rel_err(out, ro, no) < tol);
    ampc_conv_params p = {{k->sh, k->sw}, {k->ph, k->pw}, {k->ph, k->pw}, {k->dh, k->dw}, k->g};
    bool need[3] = {true, true, true};
    ampc_tensor *gx, *gw, *gb;
    CHECK(ampc_convolution_backward(gout, x, w, &p, need, &gx, &gw, &gb) == AMPC_OK);
    if (gx && gw && gb) {
        CHECK(max_rel_err(gx, rgx, nx) < tol);
        CHECK(max_rel_err(gw, rgw, nw) < tol * 4);
        double *rgb = calloc((size_t)k->o, sizeof(double));
        for (int64_t i = 0; i < no; i++) rgb[(i / (oh * ow)) % k->o] += gv[i];
        CHECK(max_rel_err(gb, rgb, k->o) < tol * 4);
        free(rgb);
    }
    DECREF(gx, gw, gb);
    free(xv), free(wv), free(bv), free(gv), free(ro), free(rgx), free(rgw);
    ampc_tensor_decref(gout);
    ampc_tensor_decref(out);
done:
    DECREF(x, w, b);
}

CTEST(nn_conv2d_grid) {
    static const conv_case cases[] = {
        /* n c h w  o kh kw sh sw ph pw dh dw g */
        {2, 3, 7, 6, 4, 3, 3, 1, 1, 0, 0, 1, 1, 1}, {2, 3, 7, 6, 4, 3, 3, 1, 1, 1, 1, 1, 1, 1},
        {1, 4, 9, 8, 6, 3, 2, 2, 3, 1, 0, 1, 1, 2}, {2, 4, 9, 9, 4, 3, 3, 1, 2, 2, 1, 2, 1, 4},
        {3, 6, 5, 5, 6, 1, 1, 1, 1, 0, 0, 1, 1, 3}, {2, 2, 6, 6, 3, 1, 1, 2, 2, 1, 0, 1, 1, 1},
        {1, 2, 4, 4, 2, 4, 4, 1, 1, 0, 0, 1, 1, 1}, {0, 2, 4, 4, 2, 3, 3, 1, 1, 1, 1, 1, 1, 1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        check_conv_case(&cases[i], AMPC_FLOAT64, 1e-12);
        check_conv_case(&cases[i], AMPC_FLOAT32, 1e-5);
    }
    check_conv_case(&cases[2], AMPC_FLOAT16, 1e-2);
    check_conv_case(&cases[3], AMPC_BFLOAT16, 5e-2);
}

CTEST(nn_conv_unbatched_and_1d) {
    /* conv1d is conv2d with H = 1; unbatched is batch 1 without the batch dim */
    int64_t xs[3] = {2, 4, 10}, ws[3] = {6, 2, 3}, xs2[4] = {2, 4, 1, 10}, ws2[4] = {6, 2, 1, 3};
    ampc_tensor *x = rnd(3, xs, AMPC_FLOAT64), *w = rnd(3, ws, AMPC_FLOAT64);
    ampc_tensor *x2 = ampc_view(x, 4, xs2), *w2 = ampc_view(w, 4, ws2);
    ampc_tensor *y = ampc_conv1d(x, w, NULL, 2, 1, 2, 2);
    int64_t st[2] = {1, 2}, pd[2] = {0, 1}, dl[2] = {1, 2};
    ampc_tensor *y2 = ampc_conv2d(x2, w2, NULL, st, pd, dl, 2);
    CHECK(y && y2 && y->ndim == 3 && y->shape[2] == 4);
    if (y && y2) {
        double *v2 = vals(y2);
        CHECK(max_rel_err(y, v2, ampc_numel(y)) == 0);
        free(v2);
    }
    ampc_tensor *xu = ampc_select(x2, 0, 1); /* (4, 1, 10), unbatched */
    ampc_tensor *yu = ampc_conv2d(xu, w2, NULL, st, pd, dl, 2);
    CHECK(yu && yu->ndim == 3 && yu->shape[0] == 6);
    if (yu && y2) {
        ampc_tensor *ref = ampc_select(y2, 0, 1);
        double *rv = vals(ref);
        CHECK(max_rel_err(yu, rv, ampc_numel(yu)) == 0);
        free(rv);
        ampc_tensor_decref(ref);
    }
    ampc_tensor *tmp[] = {x, w, x2, w2, y, y2, xu, yu};
    for (size_t i = 0; i < sizeof tmp / sizeof tmp[0]; i++) ampc_tensor_decref(tmp[i]);
}

CTEST(nn_conv_errors) {
    int64_t s2[2] = {2, 3}, xs[4] = {2, 4, 8, 8}, ws[4] = {8, 3, 3, 3};
    int64_t one[2] = {1, 1}, zero[2] = {0, 0};
    ampc_tensor *bad = rnd(2, s2, AMPC_FLOAT32), *x = rnd(4, xs, AMPC_FLOAT32), *w = rnd(4, ws, AMPC_FLOAT32);
    CHECK(ampc_conv2d(bad, w, NULL, one, zero, one, 1) == NULL);
    CHECK(strstr(ampc_last_error(), "Expected 3D (unbatched) or 4D (batched) input to conv2d, but got input of size: [2, 3]"));
    CHECK(ampc_conv2d(x, w, NULL, one, zero, one, 1) == NULL);
    CHECK(strstr(ampc_last_error(), "Given groups=1, weight of size [8, 3, 3, 3], expected input[2, 4, 8, 8] to have 3 "
                                    "channels, but got 4 channels instead"));
    CHECK(ampc_conv2d(x, w, NULL, zero, zero, one, 1) == NULL);
    CHECK(strstr(ampc_last_error(), "non-positive stride"));
    DECREF(bad, x, w);
}

/* ---------------------------------------------------------------- central differences */

/* out = f(x, ctx); the check compares d sum(out * g) / dx with `analytic`. x is float64. */
typedef ampc_tensor *(*fwd_fn)(const ampc_tensor *x, const void *ctx);

static void check_fd(fwd_fn f, const void *ctx, ampc_tensor *x, const ampc_tensor *g, const ampc_tensor *analytic,
                     double tol) {
    double *xp = (double *)ampc_data_ptr(x), *gv = vals(g), *an = vals(analytic);
    int64_t n = ampc_numel(x), ng = ampc_numel(g);
    double worst = 0;
    for (int64_t i = 0; i < n; i++) {
        double keep = xp[i], s[2];
        for (int k = 0; k < 2; k++) {
            xp[i] = keep + (k ? -1e-6 : 1e-6);
            ampc_tensor *y = f(x, ctx);
            double *yv = y ? vals(y) : NULL, acc = 0;
            for (int64_t j = 0; yv && j < ng; j++) acc += yv[j] * gv[j];
            s[k] = acc;
            free(yv);
            ampc_tensor_decref(y);
        }
        xp[i] = keep;
        double num = (s[0] - s[1]) / 2e-6, e = fabs(num - an[i]) / (1 + fabs(num));
        if (e > worst) worst = e;
    }
    CHECK(worst < tol);
    if (worst >= tol) fprintf(stderr, "  worst relative gradient error %g\n", worst);
    free(gv), free(an);
}

typedef struct pool_ctx {
    int kind; /* 0 max, 1 avg, 2 adaptive */
    int64_t k[2], s[2], p[2], d[2];
    bool ceil, include_pad;
} pool_ctx;

static ampc_tensor *pool_fwd(const ampc_tensor *x, const void *vctx) {
    const pool_ctx *c = (const pool_ctx *)vctx;
    if (c->kind == 0) {
        ampc_tensor *y, *ind;
        if (ampc_max_pool2d(x, c->k, c->s, c->p, c->d, c->ceil, &y, &ind) != AMPC_OK) return NULL;
        ampc_tensor_decref(ind);
        return y;
    }
    if (c->kind == 1) return ampc_avg_pool2d(x, c->k, c->s, c->p, c->ceil, c->include_pad, 0);
    return ampc_adaptive_avg_pool2d(x, c->k);
}

CTEST(nn_pool_backward_central_differences) {
    int64_t xs[4] = {2, 2, 5, 6};
    pool_ctx cases[3] = {{0, {3, 2}, {2, 1}, {1, 1}, {1, 2}, true, false},
                         {1, {3, 3}, {2, 2}, {1, 1}, {1, 1}, true, false},
                         {2, {2, 4}, {0, 0}, {0, 0}, {0, 0}, false, false}};
    for (int i = 0; i < 3; i++) {
        ampc_tensor *x = rnd(4, xs, AMPC_FLOAT64), *y = pool_fwd(x, &cases[i]);
        CHECK(y != NULL);
        if (!y) {
            ampc_tensor_decref(x);
            continue;
        }
        ampc_tensor *g = rnd(y->ndim, y->shape, AMPC_FLOAT64), *gx = NULL;
        pool_ctx *c = &cases[i];
        if (c->kind == 0) {
            ampc_tensor *y2, *ind;
            CHECK(ampc_max_pool2d(x, c->k, c->s, c->p, c->d, c->ceil, &y2, &ind) == AMPC_OK);
            gx = ampc_max_pool2d_backward(g, 4, xs, ind);
            ampc_tensor_decref(y2), ampc_tensor_decref(ind);
        } else if (c->kind == 1) {
            gx = ampc_avg_pool2d_backward(g, 4, xs, c->k, c->s, c->p, c->ceil, c->include_pad, 0);
        } else {
            gx = ampc_adaptive_avg_pool2d_backward(g, 4, xs);
        }
        CHECK(gx != NULL);
        if (gx) check_fd(pool_fwd, c, x, g, gx, 1e-6);
        ampc_tensor_decref(gx), ampc_tensor_decref(g), ampc_tensor_decref(y), ampc_tensor_decref(x);
    }
}

/* ---------------------------------------------------------------- normalization */

typedef struct norm_ctx {
    int kind; /* 0 batch (training), 1 layer, 2 group */
    const ampc_tensor *w, *b;
} norm_ctx;

static ampc_tensor *norm_fwd(const ampc_tensor *x, const void *vctx) {
    const norm_ctx *c = (const norm_ctx *)vctx;
    if (c->kind == 0) return ampc_batch_norm(x, NULL, NULL, c->w, c->b, true, 0.1, 1e-5);
    if (c->kind == 1) return ampc_layer_norm(x, 1, x->shape + x->ndim - 1, c->w, c->b, 1e-5);
    return ampc_group_norm(x, 2, c->w, c->b, 1e-5);
}

CTEST(nn_norm_backward_central_differences) {
    int64_t xs3[3] = {3, 4, 5}, c4[1] = {4}, c5[1] = {5};
    for (int kind = 0; kind < 3; kind++) {
        const int64_t *ps = kind == 1 ? c5 : c4;
        ampc_tensor *x = rnd(3, xs3, AMPC_FLOAT64), *w = rnd(1, ps, AMPC_FLOAT64), *b = rnd(1, ps, AMPC_FLOAT64);
        norm_ctx c = {kind, w, b};
        ampc_tensor *g = rnd(3, xs3, AMPC_FLOAT64), *mean = NULL, *inv = NULL, *y = NULL;
        ampc_tensor *gx = NULL, *gw = NULL, *gb = NULL;
        bool need[3] = {true, true, true};
        if (kind == 0) {
            y = ampc_native_batch_norm(x, NULL, NULL, w, b, true, 0.1, 1e-5, &mean, &inv);
            CHECK(ampc_native_batch_norm_backward(g, x, w, mean, inv, true, 1e-5, need, &gx, &gw, &gb) == AMPC_OK);
        } else if (kind == 1) {
            y = ampc_native_layer_norm(x, 1, c5, w, b, 1e-5, &mean, &inv);
            CHECK(ampc_native_layer_norm_backward(g, x, 1, mean, inv, w, need, &gx, &gw, &gb) == AMPC_OK);
        } else {
            y = ampc_native_group_norm(x, 2, w, b, 1e-5, &mean, &inv);
            CHECK(ampc_native_group_norm_backward(g, x, 2, mean, inv, w, need, &gx, &gw, &gb) == AMPC_OK);
        }
        CHECK(y && gx && gw && gb);
        if (gx) check_fd(norm_fwd, &c, x, g, gx, 1e-5);
        if (gb) { /* grad bias: sum of g over everything but the channel (or the normalized dim) */
            double *gv = vals(g), want[5] = {0};
            for (int64_t i = 0; i < 60; i++) want[kind == 1 ? i % 5 : (i / 5) % 4] += gv[i];
            CHECK(max_rel_err(gb, want, kind == 1 ? 5 : 4) < 1e-12);
            free(gv);
        }
        ampc_tensor *tmp[] = {x, w, b, g, mean, inv, y, gx, gw, gb};
        for (size_t i = 0; i < sizeof tmp / sizeof tmp[0]; i++) ampc_tensor_decref(tmp[i]);
    }
}

CTEST(nn_batch_norm_running_stats) {
    int64_t xs[2] = {6, 2}, cs[1] = {2};
    ampc_tensor *x = rnd(2, xs, AMPC_FLOAT64);
    ampc_tensor *rm = ampc_zeros(1, cs, AMPC_FLOAT32, ampc_cpu_device());
    ampc_tensor *rv = ampc_full(1, cs, ampc_scalar_float(1.0), AMPC_FLOAT32, ampc_cpu_device());
    ampc_tensor *y = ampc_batch_norm(x, rm, rv, NULL, NULL, true, 0.25, 1e-5);
    double *xv = vals(x), want_m[2], want_v[2];
    for (int c = 0; c < 2; c++) {
        double s = 0, q = 0;
        for (int i = 0; i < 6; i++) s += xv[i * 2 + c];
        double m = s / 6;
        for (int i = 0; i < 6; i++) q += (xv[i * 2 + c] - m) * (xv[i * 2 + c] - m);
        want_m[c] = 0.25 * m;
        want_v[c] = 0.75 + 0.25 * q / 5; /* unbiased, as PyTorch */
    }
    CHECK(y && max_rel_err(rm, want_m, 2) < 1e-6 && max_rel_err(rv, want_v, 2) < 1e-6);
    free(xv);
    ampc_tensor *one[1] = {NULL};
    int64_t s1[2] = {1, 2};
    one[0] = rnd(2, s1, AMPC_FLOAT64);
    CHECK(ampc_batch_norm(one[0], NULL, NULL, NULL, NULL, true, 0.1, 1e-5) == NULL);
    CHECK(strstr(ampc_last_error(), "Expected more than 1 value per channel when training"));
    ampc_tensor *tmp[] = {x, rm, rv, y, one[0]};
    for (size_t i = 0; i < sizeof tmp / sizeof tmp[0]; i++) ampc_tensor_decref(tmp[i]);
}

/* ---------------------------------------------------------------- softmax and classification losses */

typedef struct ce_ctx {
    int kind; /* 0 softmax(dim 1), 1 log_softmax(dim 0), 2 cross_entropy classes, 3 probs, 4 nll */
    const ampc_tensor *target, *weight;
    ampc_reduction reduction;
    double ls;
} ce_ctx;

static ampc_tensor *ce_fwd(const ampc_tensor *x, const void *vctx) {
    const ce_ctx *c = (const ce_ctx *)vctx;
    switch (c->kind) {
    case 0: return ampc_softmax(x, 1, AMPC_DTYPE_UNDEFINED);
    case 1: return ampc_log_softmax(x, 0, AMPC_DTYPE_UNDEFINED);
    case 4: return ampc_nll_loss(x, c->target, c->weight, c->reduction, 1);
    default: return ampc_cross_entropy(x, c->target, c->weight, c->reduction, c->kind == 2 ? 1 : -100, c->ls);
    }
}

CTEST(nn_softmax_cross_entropy_central_differences) {
    int64_t xs[3] = {3, 4, 2}, ts[2] = {3, 2}, ws[1] = {4};
    ampc_tensor *x = rnd(3, xs, AMPC_FLOAT64), *w = rnd(1, ws, AMPC_FLOAT64), *probs = rnd(3, xs, AMPC_FLOAT64);
    ampc_tensor *t = ampc_empty(2, ts, AMPC_INT64, ampc_cpu_device());
    int64_t tv[6] = {0, 3, 1 /* ignored */, 2, 3, 0};
    memcpy(ampc_data_ptr(t), tv, sizeof tv);
    for (int kind = 0; kind < 5; kind++)
        for (int r = 0; r < 3; r++) {
            if (kind < 2 && r > 0) continue;
            ce_ctx c = {kind, kind == 3 ? probs : t, w, (ampc_reduction)r, kind == 2 || kind == 3 ? 0.2 : 0.0};
            ampc_tensor *y = ce_fwd(x, &c);
            CHECK(y != NULL);
            if (!y) continue;
            ampc_tensor *g = rnd(y->ndim, y->shape, AMPC_FLOAT64), *gx = NULL, *gt = NULL, *lse = NULL, *tw = NULL;
            if (kind == 0) gx = ampc_softmax_backward(g, y, 1, AMPC_FLOAT64);
            if (kind == 1) gx = ampc_log_softmax_backward(g, y, 0, AMPC_FLOAT64);
            if (kind == 2 || kind == 3) {
                ampc_tensor *y2 = ampc_native_cross_entropy(x, c.target, w, c.reduction, kind == 2 ? 1 : -100, c.ls,
                                                            &lse, &tw);
                CHECK(ampc_cross_entropy_backward(g, x, c.target, w, lse, tw, c.reduction, kind == 2 ? 1 : -100, c.ls,
                                                  true, kind == 3, &gx, &gt) == AMPC_OK);
                ampc_tensor_decref(y2);
            }
            if (kind == 4) {
                ampc_tensor *y2 = ampc_native_nll_loss(x, t, w, c.reduction, 1, &tw);
                gx = ampc_nll_loss_backward(g, x, t, w, tw, c.reduction, 1);
                ampc_tensor_decref(y2);
            }
            CHECK(gx != NULL);
            if (gx) check_fd(ce_fwd, &c, x, g, gx, 1e-6);
            CHECK((kind == 3) == (gt != NULL));
            ampc_tensor *tmp[] = {y, g, gx, gt, lse, tw};
            for (size_t i = 0; i < sizeof tmp / sizeof tmp[0]; i++) ampc_tensor_decref(tmp[i]);
        }
    tv[4] = 4; /* out of bounds */
    memcpy(ampc_data_ptr(t), tv, sizeof tv);
    CHECK(ampc_cross_entropy(x, t, NULL, AMPC_REDUCTION_MEAN, -100, 0) == NULL && ampc_last_status() == AMPC_E_INDEX);
    CHECK(strstr(ampc_last_error(), "Target 4 is out of bounds."));
    CHECK(ampc_nll_loss(x, t, NULL, AMPC_REDUCTION_SUM, -100) == NULL && ampc_last_status() == AMPC_E_INDEX);
    ampc_tensor *tmp[] = {x, w, probs, t};
    for (size_t i = 0; i < sizeof tmp / sizeof tmp[0]; i++) ampc_tensor_decref(tmp[i]);
}

/* ---------------------------------------------------------------- elementwise losses */

typedef struct loss_ctx {
    ampc_op op;
    const ampc_tensor *other, *w, *pw;
    ampc_reduction reduction;
    bool wrt_target;
} loss_ctx;

static ampc_tensor *loss_fwd(const ampc_tensor *v, const void *vctx) {
    const loss_ctx *c = (const loss_ctx *)vctx;
    const ampc_tensor *x = c->wrt_target ? c->other : v, *t = c->wrt_target ? v : c->other;
    switch (c->op) {
    case AMPC_OP_MSE_LOSS: return ampc_mse_loss(x, t, c->reduction);
    case AMPC_OP_L1_LOSS: return ampc_l1_loss(x, t, c->reduction);
    case AMPC_OP_SMOOTH_L1_LOSS: return ampc_smooth_l1_loss(x, t, c->reduction, 0.5);
    case AMPC_OP_BCE_LOSS: return ampc_binary_cross_entropy(x, t, c->w, c->reduction);
    default: return ampc_binary_cross_entropy_with_logits(x, t, c->w, c->pw, c->reduction);
    }
}

CTEST(nn_losses_central_differences) {
    int64_t s[2] = {3, 4}, s4[1] = {4};
    ampc_tensor *x = rnd(2, s, AMPC_FLOAT64), *t = rnd(2, s, AMPC_FLOAT64), *w = rnd(1, s4, AMPC_FLOAT64);
    ampc_tensor *pw = rnd(1, s4, AMPC_FLOAT64);
    double *xp = (double *)ampc_data_ptr(x), *tp = (double *)ampc_data_ptr(t);
    for (int i = 0; i < 12; i++) xp[i] = 0.5 + 0.4 * xp[i], tp[i] = 0.5 + 0.5 * tp[i]; /* BCE needs (0, 1) */
    for (ampc_op op = AMPC_OP_MSE_LOSS; op <= AMPC_OP_BCE_WITH_LOGITS_LOSS; op++)
        for (int r = 0; r < 3; r++) {
            bool bce = op == AMPC_OP_BCE_LOSS || op == AMPC_OP_BCE_WITH_LOGITS_LOSS;
            const ampc_tensor *wt = bce ? w : NULL, *pwt = op == AMPC_OP_BCE_WITH_LOGITS_LOSS ? pw : NULL;
            loss_ctx c = {op, t, wt, pwt, (ampc_reduction)r, false};
            ampc_tensor *y = loss_fwd(x, &c);
            CHECK(y != NULL);
            if (!y) continue;
            ampc_tensor *g = rnd(y->ndim, y->shape, AMPC_FLOAT64), *gx, *gt;
            bool need[2] = {true, true};
            CHECK(ampc_pointwise_loss_backward(op, g, x, t, wt, pwt, (ampc_reduction)r, 0.5, need, &gx, &gt) == AMPC_OK);
            if (gx && gt) {
                check_fd(loss_fwd, &c, x, g, gx, 1e-6);
                loss_ctx ct = {op, x, wt, pwt, (ampc_reduction)r, true};
                check_fd(loss_fwd, &ct, t, g, gt, 1e-6);
            }
            ampc_tensor *tmp[] = {y, g, gx, gt};
            for (size_t i = 0; i < sizeof tmp / sizeof tmp[0]; i++) ampc_tensor_decref(tmp[i]);
        }
    xp[0] = 1.5;
    CHECK(ampc_binary_cross_entropy(x, t, NULL, AMPC_REDUCTION_MEAN) == NULL);
    CHECK(strstr(ampc_last_error(), "all elements of input should be between 0 and 1"));
    ampc_tensor *tmp[] = {x, t, w, pw};
    for (size_t i = 0; i < sizeof tmp / sizeof tmp[0]; i++) ampc_tensor_decref(tmp[i]);
}

/* ---------------------------------------------------------------- embedding, dropout, attention */

CTEST(nn_embedding_forward_backward) {
    int64_t ws[2] = {5, 3}, is[2] = {2, 3};
    ampc_tensor *w = rnd(2, ws, AMPC_FLOAT32), *idx = ampc_empty(2, is, AMPC_INT64, ampc_cpu_device());
    int64_t iv[6] = {4, 0, 4, 2, 4, 1};
    memcpy(ampc_data_ptr(idx), iv, sizeof iv);
    ampc_tensor *y = ampc_embedding(w, idx, INT64_MIN, false);
    CHECK(y && y->ndim == 3 && y->shape[2] == 3);
    double *wv = vals(w), want[18];
    for (int i = 0; i < 6; i++)
        for (int c = 0; c < 3; c++) want[i * 3 + c] = wv[iv[i] * 3 + c];
    if (y) CHECK(max_rel_err(y, want, 18) == 0);
    ampc_tensor *g = rnd(3, y ? y->shape : is, AMPC_FLOAT32);
    double *gv = vals(g), gw_want[15] = {0};
    for (int i = 0; i < 6; i++)
        for (int c = 0; c < 3; c++)
            if (iv[i] != 0) gw_want[iv[i] * 3 + c] += gv[i * 3 + c] / (iv[i] == 4 ? 3.0 : 1.0);
    ampc_tensor *gw = ampc_embedding_backward(g, idx, 5, 0, true); /* padding_idx 0, scale_grad_by_freq */
    CHECK(gw && max_rel_err(gw, gw_want, 15) < 1e-6);
    iv[5] = 5;
    memcpy(ampc_data_ptr(idx), iv, sizeof iv);
    CHECK(ampc_embedding(w, idx, INT64_MIN, false) == NULL && ampc_last_status() == AMPC_E_INDEX);
    CHECK(strstr(ampc_last_error(), "index out of range in self"));
    free(wv), free(gv);
    ampc_tensor *tmp[] = {w, idx, y, g, gw};
    for (size_t i = 0; i < sizeof tmp / sizeof tmp[0]; i++) ampc_tensor_decref(tmp[i]);
}

CTEST(nn_dropout_follows_the_bernoulli_stream) {
    int64_t s[2] = {37, 29}; /* not a multiple of 4 */
    ampc_tensor *x = ampc_full(2, s, ampc_scalar_float(1.0), AMPC_FLOAT16, ampc_cpu_device());
    ampc_manual_seed(11);
    ampc_tensor *mask, *y = ampc_native_dropout(x, 0.4, &mask);
    ampc_manual_seed(11);
    ampc_tensor *keep = ampc_empty(2, s, AMPC_FLOAT32, ampc_cpu_device());
    CHECK(ampc_bernoulli_(keep, 0.6) == AMPC_OK);
    double *yv = y ? vals(y) : NULL, *kv = vals(keep), *mv = mask ? vals(mask) : NULL;
    int64_t n = 37 * 29, kept = 0;
    bool same = yv && mv;
    for (int64_t i = 0; same && i < n; i++) {
        same = (kv[i] != 0) == (mv[i] != 0) && yv[i] == (kv[i] != 0 ? (double)ampc_half_to_f32(ampc_f32_to_half(1 / 0.6f)) : 0);
        kept += kv[i] != 0;
    }
    CHECK(same);
    CHECK(kept > n / 2 && kept < n * 7 / 10);
    ampc_tensor *gx = y ? ampc_masked_scale(y, mask, 0.6) : NULL; /* y * mask * (1 - p) gives the mask back */
    double *gv = gx ? vals(gx) : NULL;
    for (int64_t i = 0; gv && i < n; i++) same = same && fabs(gv[i] - mv[i]) < 1e-3;
    CHECK(gv && same);
    free(yv), free(kv), free(mv), free(gv);
    ampc_tensor *tmp[] = {x, mask, y, keep, gx};
    for (size_t i = 0; i < sizeof tmp / sizeof tmp[0]; i++) ampc_tensor_decref(tmp[i]);
}

CTEST(nn_attention_matches_loops) {
    int64_t qs[3] = {2, 3, 4}, ks[3] = {2, 5, 4}, vs[3] = {2, 5, 2}, ms[2] = {3, 5};
    ampc_tensor *q = rnd(3, qs, AMPC_FLOAT64), *k = rnd(3, ks, AMPC_FLOAT64), *v = rnd(3, vs, AMPC_FLOAT64);
    ampc_tensor *m = ampc_empty(2, ms, AMPC_BOOL, ampc_cpu_device());
    bool *mp = (bool *)ampc_data_ptr(m);
    for (int i = 0; i < 15; i++) mp[i] = (i % 3) != 1 && i != 5; /* row 1 fully masked */
    for (int i = 5; i < 10; i++) mp[i] = false;
    ampc_tensor *y = ampc_scaled_dot_product_attention(q, k, v, m, 0.0, false, NAN, false);
    double *qv = vals(q), *kv = vals(k), *vv = vals(v), want[12];
    for (int b = 0; b < 2; b++)
        for (int i = 0; i < 3; i++) {
            double s[5], mx = -INFINITY, sum = 0;
            for (int j = 0; j < 5; j++) {
                s[j] = 0;
                for (int e = 0; e < 4; e++) s[j] += qv[(b * 3 + i) * 4 + e] * kv[(b * 5 + j) * 4 + e] / 2.0;
                if (!mp[i * 5 + j]) s[j] = -INFINITY;
                if (s[j] > mx) mx = s[j];
            }
            for (int j = 0; j < 5; j++) sum += (s[j] = mx == -INFINITY ? 0 : exp(s[j] - mx));
            for (int c = 0; c < 2; c++) {
                double acc = 0;
                for (int j = 0; j < 5; j++) acc += (sum > 0 ? s[j] / sum : 0) * vv[(b * 5 + j) * 2 + c];
                want[(b * 3 + i) * 2 + c] = acc;
            }
        }
    CHECK(y && max_rel_err(y, want, 12) < 1e-12);
    free(qv), free(kv), free(vv);
    ampc_tensor *tmp[] = {q, k, v, m, y};
    for (size_t i = 0; i < sizeof tmp / sizeof tmp[0]; i++) ampc_tensor_decref(tmp[i]);
}
