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
    ampc_tensor_decref(gx);
    ampc_tensor_decref(gw);
    ampc_tensor_decref(gb);
    free(xv), free(wv), free(bv), free(gv), free(ro), free(rgx), free(rgw);
    ampc_tensor_decref(gout);
    ampc_tensor_decref(out);
done:
    ampc_tensor_decref(x);
    ampc_tensor_decref(w);
    ampc_tensor_decref(b);
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
    ampc_tensor_decref(bad);
    ampc_tensor_decref(x);
    ampc_tensor_decref(w);
}
