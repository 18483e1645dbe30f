/* test_reduce.c: the reduction frontends and CPU kernels against naive double loops: dims and
 * keepdim, strided inputs, the along-rows and across-rows paths, threads, NaN, empty inputs and
 * the error messages PyTorch users see. */
#include <stdlib.h>
#include <string.h>

#include "ctest.h"

static ampc_tensor *f64_tensor(int ndim, const int64_t *shape, const double *vals) {
    return ctest_tensor(AMPC_FLOAT64, ndim, shape, vals);
}

/* Deterministic pseudo-random values in [-1, 1) plus an offset. */
static double *random_values(int64_t n, unsigned seed, double offset) {
    double *v = (double *)malloc(sizeof(double) * (size_t)n);
    for (int64_t i = 0; i < n; i++) {
        seed = seed * 1103515245u + 12345u;
        v[i] = ((seed >> 8) & 0xffff) / 32768.0 - 1.0 + offset;
    }
    return v;
}

static double get(const ampc_tensor *t, int64_t i) { return ctest_value(t, i); }

CTEST(reduce_sum_dims) {
    /* (2, 3, 4) of 0..23 */
    double v[24];
    for (int i = 0; i < 24; i++) v[i] = i;
    int64_t shape[3] = {2, 3, 4};
    ampc_tensor *t = f64_tensor(3, shape, v);
    int64_t d1[1] = {1};
    ampc_tensor *s = ampc_reduce(AMPC_OP_SUM, t, 1, d1, false, AMPC_DTYPE_UNDEFINED);
    CHECK(s && s->ndim == 2 && s->shape[0] == 2 && s->shape[1] == 4);
    CHECK(get(s, 0) == 0 + 4 + 8 && get(s, 7) == 15 + 19 + 23);
    int64_t d02[2] = {0, -1};
    ampc_tensor *k = ampc_reduce(AMPC_OP_SUM, t, 2, d02, true, AMPC_DTYPE_UNDEFINED);
    CHECK(k && k->ndim == 3 && k->shape[0] == 1 && k->shape[1] == 3 && k->shape[2] == 1);
    CHECK(get(k, 1) == (4 + 5 + 6 + 7) + (16 + 17 + 18 + 19));
    ampc_tensor *all = ampc_reduce(AMPC_OP_SUM, t, 0, NULL, false, AMPC_DTYPE_UNDEFINED);
    CHECK(all && all->ndim == 0 && get(all, 0) == 276);
    ampc_tensor *m = ampc_reduce(AMPC_OP_MEAN, t, 0, NULL, false, AMPC_FLOAT32);
    CHECK(m && m->dtype == AMPC_FLOAT32 && get(m, 0) == 11.5);
    ampc_tensor *p = ampc_reduce(AMPC_OP_PROD, t, 1, d1, false, AMPC_DTYPE_UNDEFINED);
    CHECK(p && get(p, 1) == 1.0 * 5 * 9);
    ampc_tensor *ts[] = {t, s, k, all, m, p};
    for (size_t i = 0; i < sizeof ts / sizeof *ts; i++) ampc_tensor_decref(ts[i]);
}

CTEST(reduce_int_and_bool) {
    int64_t shape[1] = {5};
    ampc_tensor *t = ampc_empty(1, shape, AMPC_INT32, ampc_cpu_device());
    int32_t vals[5] = {3, -7, 2147483647, 1, 0};
    memcpy(ampc_data_ptr(t), vals, sizeof vals);
    ampc_tensor *s = ampc_reduce(AMPC_OP_SUM, t, 0, NULL, false, AMPC_DTYPE_UNDEFINED);
    CHECK(s && s->dtype == AMPC_INT64 && get(s, 0) == 2147483644.0);
    ampc_tensor *mx = ampc_reduce(AMPC_OP_AMAX, t, 0, NULL, false, AMPC_DTYPE_UNDEFINED);
    CHECK(mx && mx->dtype == AMPC_INT32 && get(mx, 0) == 2147483647.0);
    ampc_tensor *an = ampc_reduce(AMPC_OP_ALL, t, 0, NULL, false, AMPC_DTYPE_UNDEFINED);
    CHECK(an && an->dtype == AMPC_BOOL && get(an, 0) == 0);
    ampc_tensor *ay = ampc_reduce(AMPC_OP_ANY, t, 0, NULL, false, AMPC_DTYPE_UNDEFINED);
    CHECK(ay && get(ay, 0) == 1);
    ampc_tensor *am = ampc_arg_reduce(AMPC_OP_ARGMIN, t, false, 0, false);
    CHECK(am && am->dtype == AMPC_INT64 && get(am, 0) == 1);
    CHECK(ampc_reduce(AMPC_OP_MEAN, t, 0, NULL, false, AMPC_DTYPE_UNDEFINED) == NULL);
    CHECK(strstr(ampc_last_error(), "Got: Int") != NULL);
    ampc_tensor *ts[] = {t, s, mx, an, ay, am};
    for (size_t i = 0; i < sizeof ts / sizeof *ts; i++) ampc_tensor_decref(ts[i]);
}

/* Large reductions take the threaded paths: one output (split elements), many outputs, and
 * column sums (across rows, also with the rows split over threads). */
CTEST(reduce_large_paths) {
    int64_t rows = 4096, cols = 48, n = rows * cols;
    double *v = random_values(n, 7, 0.25);
    int64_t shape[2] = {rows, cols};
    ampc_tensor *t64 = f64_tensor(2, shape, v);
    ampc_tensor *t = ampc_to(t64, AMPC_FLOAT32, ampc_cpu_device(), false);
    double total = 0;
    for (int64_t i = 0; i < n; i++) total += (float)v[i];
    ampc_tensor *s = ampc_reduce(AMPC_OP_SUM, t, 0, NULL, false, AMPC_FLOAT64);
    CHECK(s && fabs(get(s, 0) - total) < 1e-9 * n);
    int64_t d0[1] = {0}, d1[1] = {1};
    ampc_tensor *cs = ampc_reduce(AMPC_OP_SUM, t, 1, d0, false, AMPC_FLOAT64); /* across rows */
    ampc_tensor *rs = ampc_reduce(AMPC_OP_SUM, t, 1, d1, false, AMPC_FLOAT64); /* along rows */
    for (int64_t c = 0; c < cols; c++) {
        double e = 0;
        for (int64_t r = 0; r < rows; r++) e += (float)v[r * cols + c];
        CHECK_CLOSE(get(cs, c), e, 1e-12);
    }
    for (int64_t r = 0; r < rows; r += 97) {
        double e = 0;
        for (int64_t c = 0; c < cols; c++) e += (float)v[r * cols + c];
        CHECK_CLOSE(get(rs, r), e, 1e-12);
    }
    /* the transpose reduces its inner dim across rows of the storage */
    ampc_tensor *tt = ampc_transpose(t, 0, 1);
    ampc_tensor *ts = ampc_reduce(AMPC_OP_SUM, tt, 1, d1, false, AMPC_FLOAT64);
    for (int64_t c = 0; c < cols; c++) CHECK(get(ts, c) == get(cs, c));
    /* max with indices over the columns: a planted maximum and a tie after it */
    float *p = (float *)ampc_data_ptr(t);
    p[1000 * cols + 5] = 50.0f;
    p[3000 * cols + 5] = 50.0f;
    ampc_tensor *vals, *idx;
    CHECK(ampc_max_min_dim(AMPC_OP_MAX_DIM, t, 0, false, &vals, &idx) == AMPC_OK);
    CHECK(get(vals, 5) == 50.0 && get(idx, 5) == 1000);
    ampc_tensor *am = ampc_arg_reduce(AMPC_OP_ARGMAX, t, false, 0, false);
    CHECK(am && get(am, 0) == 1000 * cols + 5);
    ampc_tensor *all[] = {t64, t, s, cs, rs, tt, ts, vals, idx, am};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++) ampc_tensor_decref(all[i]);
    free(v);
}

CTEST(reduce_nan_and_ties) {
    double v[6] = {1, 3, NAN, 3, NAN, -2};
    int64_t shape[1] = {6};
    ampc_tensor *t = f64_tensor(1, shape, v);
    ampc_tensor *mx = ampc_reduce(AMPC_OP_AMAX, t, 0, NULL, false, AMPC_DTYPE_UNDEFINED);
    CHECK(mx && isnan(get(mx, 0)));
    ampc_tensor *am = ampc_arg_reduce(AMPC_OP_ARGMIN, t, false, 0, false);
    CHECK(am && get(am, 0) == 2);
    ampc_tensor *s = ampc_slice(t, 0, 0, 2, 1); /* {1, 3} */
    ampc_tensor *vals, *idx;
    CHECK(ampc_max_min_dim(AMPC_OP_MAX_DIM, s, -1, true, &vals, &idx) == AMPC_OK);
    CHECK(vals->ndim == 1 && get(vals, 0) == 3 && get(idx, 0) == 1);
    ampc_tensor *all[] = {t, mx, am, s, vals, idx};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++) ampc_tensor_decref(all[i]);
}

CTEST(reduce_var_norm_lse) {
    int64_t n = 1000;
    double *v = random_values(n, 3, 1e6); /* a large mean: one-pass formulas would cancel */
    int64_t shape[1] = {n};
    ampc_tensor *t = f64_tensor(1, shape, v);
    double mean = 0, m2 = 0, l1 = 0, l2 = 0, mx = -INFINITY;
    for (int64_t i = 0; i < n; i++) mean += v[i];
    mean /= n;
    for (int64_t i = 0; i < n; i++) {
        m2 += (v[i] - mean) * (v[i] - mean);
        l1 += fabs(v[i]);
        l2 += v[i] * v[i];
        if (v[i] > mx) mx = v[i];
    }
    double lse = 0;
    for (int64_t i = 0; i < n; i++) lse += exp(v[i] - mx);
    lse = mx + log(lse);
    ampc_tensor *var = ampc_var(t, 0, NULL, 1.0, false, false);
    CHECK(var && fabs(get(var, 0) - m2 / (n - 1)) < 1e-9 * (m2 / (n - 1)));
    ampc_tensor *sd = ampc_var(t, 0, NULL, 0.0, false, true);
    CHECK_CLOSE(get(sd, 0), sqrt(m2 / n), 1e-12);
    ampc_tensor *n1 = ampc_norm(t, 1.0, 0, NULL, false);
    ampc_tensor *n2 = ampc_norm(t, 2.0, 0, NULL, false);
    ampc_tensor *n3 = ampc_norm(t, 3.0, 0, NULL, false);
    ampc_tensor *ni = ampc_norm(t, INFINITY, 0, NULL, false);
    CHECK_CLOSE(get(n1, 0), l1, 1e-12);
    CHECK_CLOSE(get(n2, 0), sqrt(l2), 1e-12);
    CHECK(get(n3, 0) > get(ni, 0) && get(n3, 0) < get(n2, 0));
    CHECK(get(ni, 0) == mx);
    ampc_tensor *ls = ampc_reduce(AMPC_OP_LOGSUMEXP, t, 0, NULL, false, AMPC_DTYPE_UNDEFINED);
    CHECK_CLOSE(get(ls, 0), lse, 1e-12);
    ampc_tensor *all[] = {t, var, sd, n1, n2, n3, ni, ls};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++) ampc_tensor_decref(all[i]);
    free(v);
}

CTEST(reduce_empty) {
    int64_t shape[2] = {0, 3};
    ampc_tensor *e = ampc_empty(2, shape, AMPC_FLOAT32, ampc_cpu_device());
    int64_t d0[1] = {0};
    ampc_tensor *s = ampc_reduce(AMPC_OP_SUM, e, 1, d0, false, AMPC_DTYPE_UNDEFINED);
    CHECK(s && s->shape[0] == 3 && get(s, 2) == 0);
    ampc_tensor *p = ampc_reduce(AMPC_OP_PROD, e, 0, NULL, false, AMPC_DTYPE_UNDEFINED);
    CHECK(p && get(p, 0) == 1);
    ampc_tensor *m = ampc_reduce(AMPC_OP_MEAN, e, 0, NULL, false, AMPC_DTYPE_UNDEFINED);
    CHECK(m && isnan(get(m, 0)));
    ampc_tensor *l = ampc_reduce(AMPC_OP_LOGSUMEXP, e, 1, d0, false, AMPC_DTYPE_UNDEFINED);
    CHECK(l && get(l, 0) == -INFINITY);
    ampc_tensor *al = ampc_reduce(AMPC_OP_ALL, e, 0, NULL, false, AMPC_DTYPE_UNDEFINED);
    CHECK(al && get(al, 0) == 1);
    CHECK(ampc_reduce(AMPC_OP_MAX_DIM, e, 0, NULL, false, AMPC_DTYPE_UNDEFINED) == NULL);
    CHECK(ampc_last_status() == AMPC_E_RUNTIME &&
          strstr(ampc_last_error(), "max(): Expected reduction dim to be specified") != NULL);
    CHECK(ampc_reduce(AMPC_OP_AMAX, e, 1, d0, false, AMPC_DTYPE_UNDEFINED) == NULL);
    CHECK(ampc_last_status() == AMPC_E_INDEX &&
          strstr(ampc_last_error(), "amax(): Expected reduction dim 0 to have non-zero size.") != NULL);
    CHECK(ampc_norm(e, INFINITY, 0, NULL, false) == NULL);
    CHECK(strstr(ampc_last_error(), "cannot compute the inf norm on an empty tensor") != NULL);
    ampc_tensor *all[] = {e, s, p, m, l, al};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++) ampc_tensor_decref(all[i]);
}

CTEST(reduce_errors) {
    int64_t shape[2] = {2, 3};
    ampc_tensor *t = ampc_zeros(2, shape, AMPC_FLOAT32, ampc_cpu_device());
    int64_t dup[2] = {0, -2}, bad[1] = {2};
    CHECK(ampc_reduce(AMPC_OP_SUM, t, 2, dup, false, AMPC_DTYPE_UNDEFINED) == NULL);
    CHECK(strstr(ampc_last_error(), "dim 0 appears multiple times in the list of dims") != NULL);
    CHECK(ampc_reduce(AMPC_OP_SUM, t, 1, bad, false, AMPC_DTYPE_UNDEFINED) == NULL);
    CHECK(ampc_last_status() == AMPC_E_INDEX &&
          strstr(ampc_last_error(), "Dimension out of range (expected to be in range of [-2, 1], but got 2)"));
    ampc_tensor *v = NULL, *i = NULL;
    CHECK(ampc_max_min_dim(AMPC_OP_MIN_DIM, t, 5, false, &v, &i) == AMPC_E_INDEX && !v && !i);
    ampc_tensor *b = ampc_zeros(2, shape, AMPC_BOOL, ampc_cpu_device());
    CHECK(ampc_arg_reduce(AMPC_OP_ARGMAX, b, false, 0, false) == NULL);
    CHECK(ampc_var(b, 0, NULL, 1.0, false, false) == NULL);
    CHECK(strstr(ampc_last_error(), "std and var only support floating point") != NULL);
    CHECK(ampc_norm(b, 2.0, 0, NULL, false) == NULL);
    CHECK(strstr(ampc_last_error(), "Got Bool") != NULL);
    ampc_tensor_decref(b);
    ampc_tensor_decref(t);
}

CTEST(cumsum) {
    double v[6] = {1, 2, 3, 4, 5, 6};
    int64_t shape[2] = {2, 3};
    ampc_tensor *t = f64_tensor(2, shape, v);
    ampc_tensor *c0 = ampc_cumsum(t, 0, AMPC_DTYPE_UNDEFINED);
    ampc_tensor *c1 = ampc_cumsum(t, -1, AMPC_FLOAT32);
    CHECK(c0 && get(c0, 3) == 5 && get(c0, 5) == 9 && get(c0, 0) == 1);
    CHECK(c1 && c1->dtype == AMPC_FLOAT32 && get(c1, 2) == 6 && get(c1, 5) == 15);
    ampc_tensor *tt = ampc_transpose(t, 0, 1); /* (3, 2): 1 4 / 2 5 / 3 6 */
    ampc_tensor *ct = ampc_cumsum(tt, 0, AMPC_INT32);
    CHECK(ct && ct->dtype == AMPC_INT32 && get(ct, 4) == 6 && get(ct, 5) == 15);
    ampc_tensor *bad = ampc_cumsum(t, 2, AMPC_DTYPE_UNDEFINED);
    CHECK(bad == NULL && ampc_last_status() == AMPC_E_INDEX);
    ampc_tensor *all[] = {t, c0, c1, tt, ct};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++) ampc_tensor_decref(all[i]);
}

/* fp16 rows take three load paths (F16C or branch-free widening of contiguous rows, the
 * branch-free load of strided rows and of the across-rows loop); over every finite half the
 * double sum is exact, so all three must agree with ampc_half_to_f32 bit for bit. */
CTEST(reduce_fp16_load_paths) {
    int64_t n = 0, shape[1] = {63488}, pair[2] = {63488, 2};
    ampc_tensor *h = ampc_empty(1, shape, AMPC_FLOAT16, ampc_cpu_device());
    ampc_tensor *h2 = ampc_zeros(2, pair, AMPC_FLOAT16, ampc_cpu_device());
    ampc_half *p = (ampc_half *)ampc_data_ptr(h), *p2 = (ampc_half *)ampc_data_ptr(h2);
    double expected = 0;
    for (uint32_t bits = 0; bits < 0x10000u; bits++) {
        if ((bits & 0x7c00u) == 0x7c00u) continue; /* inf and NaN */
        p[n] = (ampc_half)bits;
        p2[2 * n] = (ampc_half)bits;
        expected += ampc_half_to_f32((ampc_half)bits);
        n++;
    }
    CHECK(n == 63488);
    ampc_tensor *s = ampc_reduce(AMPC_OP_SUM, h, 0, NULL, false, AMPC_FLOAT64);
    CHECK(s && get(s, 0) == expected);
    ampc_tensor *col = ampc_select(h2, 1, 0); /* stride 2 */
    ampc_tensor *sc = ampc_reduce(AMPC_OP_SUM, col, 0, NULL, false, AMPC_FLOAT64);
    CHECK(sc && get(sc, 0) == expected);
    int64_t rows_shape[2] = {63488 / 8, 8}, d0[1] = {0};
    ampc_tensor *v = ampc_view(h, 2, rows_shape);
    ampc_tensor *cols = ampc_reduce(AMPC_OP_SUM, v, 1, d0, false, AMPC_FLOAT64); /* across rows */
    double col_total = 0;
    for (int j = 0; j < 8; j++) col_total += get(cols, j);
    CHECK(cols && col_total == expected);
    ampc_tensor *mx = ampc_reduce(AMPC_OP_AMAX, h, 0, NULL, false, AMPC_DTYPE_UNDEFINED);
    CHECK(mx && get(mx, 0) == 65504.0);
    p[7] = 0x7e00u; /* a NaN wins */
    ampc_tensor *mn = ampc_reduce(AMPC_OP_AMIN, h, 0, NULL, false, AMPC_DTYPE_UNDEFINED);
    CHECK(mn && isnan(get(mn, 0)));
    ampc_tensor *all[] = {h, h2, s, col, sc, v, cols, mx, mn};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++) ampc_tensor_decref(all[i]);
}
