/* test_sort.c: the sorting and selection frontends and CPU kernels (core/sort*.c, cpu/cpu_sort*.c)
 * under ASan/UBSan against naive loops: the radix and insertion paths, strided rows, 64-bit keys,
 * the heap and quickselect paths of topk, medians with NaN, mode, searchsorted, unique, histc and
 * bincount. (Values against torch: tests/test_sort.py.) */
#include <math.h>
#include <stdlib.h>

#include "core/sort.h"
#include "ctest.h"

/* a CPU tensor of dtype dt holding the doubles v (converted) */
static ampc_tensor *make(ampc_dtype dt, int ndim, const int64_t *shape, const double *v) {
    ampc_tensor *d = ctest_tensor(AMPC_FLOAT64, ndim, shape, v);
    ampc_tensor *r = d ? ampc_to(d, dt, d->device, false) : NULL;
    ampc_tensor_decref(d);
    return r;
}

static ampc_tensor *make1(ampc_dtype dt, int64_t n, const double *v) { return make(dt, 1, &n, v); }

static double *values(int64_t n, unsigned seed, int levels) {
    double *v = (double *)malloc(sizeof(double) * (size_t)n);
    for (int64_t i = 0; i < n; i++) {
        seed = seed * 1103515245u + 12345u;
        v[i] = (double)((seed >> 8) % (unsigned)levels) - levels / 2; /* many ties */
    }
    return v;
}

/* rows of the (rows, n) result are ascending (descending: reversed) and stable, and values[i] ==
 * input[indices[i]] */
static int check_sorted_rows(const ampc_tensor *in, const ampc_tensor *v, const ampc_tensor *ix, int64_t rows,
                             int64_t n, bool desc) {
    for (int64_t r = 0; r < rows; r++)
        for (int64_t j = 0; j < n; j++) {
            double x = ctest_value(v, r * n + j);
            int64_t i = (int64_t)ctest_value(ix, r * n + j);
            if (i < 0 || i >= n || ctest_value(in, r * n + i) != x) return 0;
            if (j == 0) continue;
            double p = ctest_value(v, r * n + j - 1);
            int64_t pi = (int64_t)ctest_value(ix, r * n + j - 1);
            if (desc ? p < x : p > x) return 0;
            if (p == x && pi > i) return 0; /* stable */
        }
    return 1;
}

CTEST(sort_paths_and_strides) {
    int64_t ns[] = {1, 7, 33, 300, 5000};
    ampc_dtype dts[] = {AMPC_FLOAT32, AMPC_FLOAT64, AMPC_INT64, AMPC_FLOAT16, AMPC_INT32};
    for (size_t a = 0; a < sizeof ns / sizeof *ns; a++)
        for (size_t b = 0; b < sizeof dts / sizeof *dts; b++) {
            int64_t n = ns[a], shape[2] = {3, n};
            double *v = values(3 * n, (unsigned)(a * 7 + b), 11);
            ampc_tensor *t = make(dts[b], 2, shape, v);
            for (int desc = 0; desc < 2; desc++) {
                ampc_tensor *sv, *si;
                CHECK(ampc_sort(t, -1, desc, true, &sv, &si) == AMPC_OK);
                CHECK(check_sorted_rows(t, sv, si, 3, n, desc));
                ampc_tensor_decref(sv);
                ampc_tensor_decref(si);
            }
            /* a transposed view: rows of stride 1 along the sorted dim 0 */
            ampc_tensor *tt = ampc_transpose(t, 0, 1), *sv, *si;
            CHECK(ampc_sort(tt, 0, false, true, &sv, &si) == AMPC_OK);
            CHECK(sv->shape[0] == n && sv->shape[1] == 3);
            ampc_tensor *back = ampc_transpose(sv, 0, 1), *bi = ampc_transpose(si, 0, 1);
            ampc_tensor *bc = ampc_contiguous(back), *bic = ampc_contiguous(bi);
            CHECK(check_sorted_rows(t, bc, bic, 3, n, false));
            ampc_tensor *ts[] = {t, tt, sv, si, back, bi, bc, bic};
            for (size_t i = 0; i < sizeof ts / sizeof *ts; i++) ampc_tensor_decref(ts[i]);
            free(v);
        }
}

CTEST(sort_topk_paths) {
    int64_t n = 4096, shape[2] = {2, n};
    double *v = values(2 * n, 5, 1000);
    ampc_tensor *t = make(AMPC_FLOAT32, 2, shape, v);
    int64_t ks[] = {1, 10, 64, 700, 4096}; /* heap (k * 64 <= n), quickselect, full sort */
    for (size_t a = 0; a < sizeof ks / sizeof *ks; a++) {
        ampc_tensor *tv, *ti, *sv, *si;
        CHECK(ampc_topk(t, ks[a], 1, true, true, &tv, &ti) == AMPC_OK);
        CHECK(ampc_sort(t, 1, true, true, &sv, &si) == AMPC_OK);
        int ok = 1;
        for (int64_t r = 0; r < 2; r++)
            for (int64_t j = 0; j < ks[a]; j++) {
                ok &= ctest_value(tv, r * ks[a] + j) == ctest_value(sv, r * n + j);
                ok &= ctest_value(ti, r * ks[a] + j) == ctest_value(si, r * n + j); /* ties by index */
            }
        CHECK(ok);
        ampc_tensor *ts[] = {tv, ti, sv, si};
        for (size_t i = 0; i < 4; i++) ampc_tensor_decref(ts[i]);
    }
    ampc_tensor *tv, *ti;
    CHECK(ampc_topk(t, n + 1, 1, true, true, &tv, &ti) != AMPC_OK && !tv && !ti);
    ampc_tensor_decref(t);
    free(v);
}

CTEST(sort_selections) {
    double v[] = {3, NAN, 1, 2, 2, 5, 2, 1};
    ampc_tensor *t = make1(AMPC_FLOAT64, 8, v);
    ampc_tensor *m = ampc_median_all(AMPC_OP_MEDIAN, t), *nm = ampc_median_all(AMPC_OP_NANMEDIAN, t);
    CHECK(m && isnan(ctest_value(m, 0)) && nm && ctest_value(nm, 0) == 2);
    ampc_tensor *vv, *vi;
    CHECK(ampc_select_dim(AMPC_OP_MEDIAN, t, 0, 0, false, &vv, &vi) == AMPC_OK);
    CHECK(isnan(ctest_value(vv, 0)) && ctest_value(vi, 0) == 1); /* the first NaN */
    ampc_tensor_decref(vv);
    ampc_tensor_decref(vi);
    CHECK(ampc_select_dim(AMPC_OP_MODE, t, 0, 0, true, &vv, &vi) == AMPC_OK);
    CHECK(vv->ndim == 1 && ctest_value(vv, 0) == 2 && ctest_value(vi, 0) == 6); /* the last 2 */
    ampc_tensor_decref(vv);
    ampc_tensor_decref(vi);
    CHECK(ampc_select_dim(AMPC_OP_KTHVALUE, t, 3, 0, false, &vv, &vi) == AMPC_OK);
    CHECK(ctest_value(vv, 0) == 2 && ctest_value(vi, 0) == 3); /* 1 1 2(3) 2(4) 2(6) ... */
    ampc_tensor_decref(vv);
    ampc_tensor_decref(vi);
    CHECK(ampc_select_dim(AMPC_OP_KTHVALUE, t, 9, 0, false, &vv, &vi) == AMPC_E_RUNTIME);
    ampc_tensor_decref(m);
    ampc_tensor_decref(nm);
    ampc_tensor_decref(t);
}

CTEST(sort_search_unique_histograms) {
    double s[] = {1, 2, 2, 4}, q[] = {0, 2, 3, 5, NAN};
    ampc_tensor *st = make1(AMPC_FLOAT32, 4, s), *qt = make1(AMPC_FLOAT32, 5, q);
    ampc_tensor *l = ampc_searchsorted(st, qt, false, false, NULL), *r = ampc_searchsorted(st, qt, true, true, NULL);
    double wl[] = {0, 1, 3, 4, 4}, wr[] = {0, 3, 3, 4, 4};
    int ok = l && r && r->dtype == AMPC_INT32;
    for (int i = 0; ok && i < 5; i++) ok = ctest_value(l, i) == wl[i] && ctest_value(r, i) == wr[i];
    CHECK(ok);
    ampc_tensor *in = ampc_isin(qt, st, false);
    CHECK(in && ctest_value(in, 0) == 0 && ctest_value(in, 1) == 1 && ctest_value(in, 4) == 0);
    double u[] = {3, 1, 3, 2, 1, 3};
    ampc_tensor *ut = make1(AMPC_INT64, 6, u), *uv, *ui, *uc;
    CHECK(ampc_unique(ut, false, &uv, &ui, &uc) == AMPC_OK);
    CHECK(uv->shape[0] == 3 && ctest_value(uv, 2) == 3 && ctest_value(uc, 2) == 3 && ctest_value(ui, 3) == 1);
    double h[] = {0, 0.5, 1, 1.5, 2, -1, 3};
    ampc_tensor *ht = make1(AMPC_FLOAT32, 7, h), *hist = ampc_histc(ht, 4, 0, 2);
    CHECK(hist && ctest_value(hist, 0) == 1 && ctest_value(hist, 3) == 2); /* 2 falls in the last bin */
    double b[] = {0, 3, 3, 1};
    ampc_tensor *bt = make1(AMPC_INT64, 4, b), *bc = ampc_bincount(bt, NULL, 6);
    CHECK(bc && bc->shape[0] == 6 && ctest_value(bc, 3) == 2 && ctest_value(bc, 5) == 0);
    ampc_tensor *ts[] = {st, qt, l, r, in, ut, uv, ui, uc, ht, hist, bt, bc};
    for (size_t i = 0; i < sizeof ts / sizeof *ts; i++) ampc_tensor_decref(ts[i]);
}
