/* test_gemm.c: the matrix frontends (linalg.c) and the CPU GEMM kernel against a plain double
 * reference, on every backend the build has (CBLAS, the blocked C fallback, AMX), with
 * transposed, sliced and broadcast operands, edge tile sizes, k = 0 and the error messages. */
#include <stdlib.h>
#include <string.h>

#include "core/autocast.h"
#include "cpu/cpu_gemm.h"
#include "ctest.h"

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static double rnd(void) { /* uniform in [-1, 1) */
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    return (double)(rng_state >> 11) / (double)(1ull << 53) * 2.0 - 1.0;
}

/* A contiguous tensor of random values (small integers for integer dtypes). */
static ampc_tensor *rand_tensor(int ndim, const int64_t *shape, ampc_dtype dt) {
    ampc_tensor *t = ampc_empty(ndim, shape, dt, ampc_cpu_device());
    char *p = (char *)ampc_data_ptr(t);
    for (int64_t i = 0; i < ampc_numel(t); i++) {
        double v = rnd();
        switch (dt) {
        case AMPC_FLOAT32: ((float *)p)[i] = (float)v; break;
        case AMPC_FLOAT64: ((double *)p)[i] = v; break;
        case AMPC_FLOAT16: ((ampc_half *)p)[i] = ampc_f32_to_half((float)v); break;
        case AMPC_BFLOAT16: ((ampc_bfloat16 *)p)[i] = ampc_f32_to_bf16((float)v); break;
        case AMPC_INT64: ((int64_t *)p)[i] = (int64_t)(v * 50); break;
        case AMPC_INT32: ((int32_t *)p)[i] = (int32_t)(v * 50); break;
        case AMPC_UINT8: ((uint8_t *)p)[i] = (uint8_t)(int)((v + 1) * 20); break;
        default: break;
        }
    }
    return t;
}

static ampc_tensor *rand2(int64_t r, int64_t c, ampc_dtype dt) {
    int64_t s[2] = {r, c};
    return rand_tensor(2, s, dt);
}

/* Element at a multi-index (any strides) as a double. */
static double at(const ampc_tensor *t, const int64_t *idx) {
    int64_t off = t->offset;
    for (int d = 0; d < t->ndim; d++) off += idx[d] * t->strides[d];
    const char *p = (const char *)t->storage->data + off * (int64_t)ampc_dtype_itemsize(t->dtype);
    switch (t->dtype) {
    case AMPC_FLOAT32: return *(const float *)p;
    case AMPC_FLOAT64: return *(const double *)p;
    case AMPC_FLOAT16: return ampc_half_to_f32(*(const ampc_half *)p);
    case AMPC_BFLOAT16: return ampc_bf16_to_f32(*(const ampc_bfloat16 *)p);
    case AMPC_INT64: return (double)*(const int64_t *)p;
    case AMPC_INT32: return *(const int32_t *)p;
    case AMPC_UINT8: return *(const uint8_t *)p;
    default: return *(const bool *)p;
    }
}

static double round_to(ampc_dtype dt, double v) {
    if (dt == AMPC_FLOAT16) return ampc_half_to_f32(ampc_f32_to_half((float)v));
    if (dt == AMPC_BFLOAT16) return ampc_bf16_to_f32(ampc_f32_to_bf16((float)v));
    if (dt == AMPC_FLOAT32) return (float)v;
    return v;
}

/* Relative tolerance of one output element, against the double sum of |products|. */
static double tol_of(ampc_dtype dt, int64_t k) {
    switch (dt) {
    case AMPC_FLOAT32: return 2e-6 * (double)(k + 4);
    case AMPC_FLOAT64: return 1e-14 * (double)(k + 4);
    case AMPC_FLOAT16: return 1.0 / 1024 + 2e-6 * (double)(k + 4); /* one rounding of the result */
    case AMPC_BFLOAT16: return 1.0 / 128 + 2e-6 * (double)(k + 4);
    default: return 0;
    }
}

/* Checks every `step`-th element of c (*batch, n, m) == beta * bias + alpha * a @ b, with every
 * operand already of the same ndim and batch shape (expanded) or NULL bias; returns the number
 * of bad elements. */
static int check_gemm_every(int64_t step, const ampc_tensor *c, const ampc_tensor *a, const ampc_tensor *b,
                            const ampc_tensor *bias, double beta, double alpha) {
    int nd = c->ndim, bad = 0;
    int64_t n = c->shape[nd - 2], m = c->shape[nd - 1], k = a->shape[nd - 1];
    int64_t total = ampc_numel(c);
    bool is_int = !ampc_dtype_is_floating(c->dtype);
    if (is_int) alpha = trunc(alpha), beta = trunc(beta); /* PyTorch's integer addmm */
    for (int64_t e = 0; e < total && bad < 5; e += step) {
        int64_t idx[AMPC_MAX_DIMS], ia[AMPC_MAX_DIMS], ib[AMPC_MAX_DIMS], rem = e;
        for (int d = nd - 1; d >= 0; d--) idx[d] = rem % c->shape[d], rem /= c->shape[d];
        memcpy(ia, idx, sizeof ia);
        memcpy(ib, idx, sizeof ib);
        double sum = 0, mag = 0;
        for (int64_t p = 0; p < k; p++) {
            ia[nd - 1] = p;
            ib[nd - 2] = p;
            double prod = at(a, ia) * at(b, ib);
            sum += prod;
            mag += fabs(prod);
        }
        double want = alpha * sum, got = at(c, idx);
        if (bias && beta != 0) want += beta * at(bias, idx), mag += fabs(beta * at(bias, idx));
        bool ok;
        if (is_int) {
            ok = got == want;
        } else {
            want = round_to(c->dtype, want);
            ok = fabs(got - want) <= tol_of(c->dtype, k) * (fabs(alpha) * mag + fabs(want) + 1e-30);
        }
        if (!ok) {
            fprintf(stderr, "  %s gemm n=%lld m=%lld k=%lld elem %lld: got %.9g want %.9g\n", ampc_dtype_name(c->dtype),
                    (long long)n, (long long)m, (long long)k, (long long)e, got, want);
            bad++;
        }
    }
    return bad;
}

static int check_gemm(const ampc_tensor *c, const ampc_tensor *a, const ampc_tensor *b, const ampc_tensor *bias,
                      double beta, double alpha) {
    return check_gemm_every(1, c, a, b, bias, beta, alpha);
}

/* Views of a contiguous (r x c) tensor as its transpose made contiguous the other way round:
 * returns a (r x c) view with strides (1, r). */
static ampc_tensor *transposed_rand(int64_t r, int64_t c, ampc_dtype dt) {
    ampc_tensor *t = rand2(c, r, dt);
    ampc_tensor *v = ampc_transpose(t, 0, 1);
    ampc_tensor_decref(t);
    return v;
}

static const char *backends[] = {"auto", "blas", "fallback"};

static void each_backend(void (*body)(void)) {
    for (int i = 0; i < 3; i++) {
        if (ampc_cpu_gemm_set_backend(backends[i]) != AMPC_OK) {
            ampc_clear_error(); /* "blas" in a build without CBLAS */
            continue;
        }
        body();
    }
    ampc_cpu_gemm_set_backend("auto");
}

static void mm_float_body(void) {
    const ampc_dtype dts[] = {AMPC_FLOAT32, AMPC_FLOAT64, AMPC_FLOAT16, AMPC_BFLOAT16};
    const int64_t sizes[][3] = {{1, 1, 1}, {7, 5, 3}, {13, 33, 65}, {40, 20, 257}, {31, 129, 18}, {2, 3, 1}};
    for (int d = 0; d < 4; d++)
        for (int s = 0; s < 6; s++)
            for (int layout = 0; layout < 4; layout++) { /* plain, A^T, B^T, both */
                int64_t n = sizes[s][0], m = sizes[s][1], k = sizes[s][2];
                ampc_tensor *a = layout & 1 ? transposed_rand(n, k, dts[d]) : rand2(n, k, dts[d]);
                ampc_tensor *b = layout & 2 ? transposed_rand(k, m, dts[d]) : rand2(k, m, dts[d]);
                ampc_tensor *c = ampc_mm(a, b);
                CHECK(c && c->shape[0] == n && c->shape[1] == m && c->dtype == dts[d] && ampc_is_contiguous(c));
                if (c) CHECK(check_gemm(c, a, b, NULL, 0, 1) == 0);
                DECREF(a, b, c);
            }
}

CTEST(gemm_mm_float) { each_backend(mm_float_body); }

static void strided_body(void) {
    /* every other row and column of a bigger matrix: BLAS cannot take it, so it is packed */
    const ampc_dtype dts[] = {AMPC_FLOAT32, AMPC_FLOAT64, AMPC_BFLOAT16, AMPC_FLOAT16, AMPC_INT64};
    for (int d = 0; d < 5; d++) {
        ampc_tensor *big_a = rand2(20, 30, dts[d]), *big_b = rand2(30, 22, dts[d]);
        ampc_tensor *ra = ampc_slice(big_a, 0, 0, 20, 2), *a = ampc_slice(ra, 1, 1, 30, 2); /* 10 x 15 */
        ampc_tensor *rb = ampc_slice(big_b, 1, 0, 22, 2), *b = ampc_slice(rb, 0, 0, 30, 2); /* 15 x 11 */
        ampc_tensor *c = ampc_mm(a, b);
        CHECK(c && c->shape[0] == 10 && c->shape[1] == 11);
        if (c) CHECK(check_gemm(c, a, b, NULL, 0, 1) == 0);
        /* a row broadcast down the rows (stride 0) */
        int64_t shape[2] = {6, 15};
        ampc_tensor *row = ampc_slice(a, 0, 3, 4, 1), *rows = ampc_expand(row, 2, shape);
        ampc_tensor *c2 = ampc_mm(rows, b);
        if (c2) CHECK(check_gemm(c2, rows, b, NULL, 0, 1) == 0);
        ampc_tensor *list[] = {big_a, big_b, ra, a, rb, b, c, row, rows, c2};
        for (int i = 0; i < 10; i++) ampc_tensor_decref(list[i]);
    }
}

CTEST(gemm_strided_operands) { each_backend(strided_body); }

static void large_body(void) {
    /* several KC and NC blocks, OpenMP row blocks, tile edges everywhere; a sample checked */
    const ampc_dtype dts[] = {AMPC_FLOAT32, AMPC_FLOAT64, AMPC_BFLOAT16, AMPC_FLOAT16};
    for (int d = 0; d < 4; d++) {
        ampc_tensor *a = transposed_rand(103, 530, dts[d]), *b = rand2(530, 2085, dts[d]);
        ampc_tensor *c = ampc_mm(a, b);
        CHECK(c != NULL);
        if (c) CHECK(check_gemm_every(997, c, a, b, NULL, 0, 1) == 0);
        DECREF(a, b, c);
    }
}

CTEST(gemm_large_blocks) { each_backend(large_body); }

CTEST(gemm_integers) {
    const ampc_dtype dts[] = {AMPC_INT64, AMPC_INT32, AMPC_UINT8};
    for (int d = 0; d < 3; d++) {
        ampc_tensor *a = rand2(9, 17, dts[d]), *b = transposed_rand(17, 5, dts[d]);
        ampc_tensor *c = ampc_mm(a, b);
        CHECK(c && c->dtype == dts[d]);
        if (c && dts[d] != AMPC_UINT8) CHECK(check_gemm(c, a, b, NULL, 0, 1) == 0);
        DECREF(a, b, c);
    }
    /* wrapping: int32 2^16 * 2^16 * 2 = 2^33 wraps to 0, like PyTorch */
    int64_t s[2] = {1, 2}, s2[2] = {2, 1};
    ampc_tensor *a = ampc_full(2, s, ampc_scalar_int(65536), AMPC_INT32, ampc_cpu_device());
    ampc_tensor *b = ampc_full(2, s2, ampc_scalar_int(65536), AMPC_INT32, ampc_cpu_device());
    ampc_tensor *c = ampc_mm(a, b);
    CHECK(c && ((int32_t *)ampc_data_ptr(c))[0] == 0);
    /* addmm on integers truncates alpha and beta: 3 * trunc(0.5) + trunc(1.5) * 2 = 2 */
    int64_t sq[2] = {2, 2};
    ampc_tensor *o = ampc_full(2, sq, ampc_scalar_int(1), AMPC_INT64, ampc_cpu_device());
    ampc_tensor *three = ampc_full(2, sq, ampc_scalar_int(3), AMPC_INT64, ampc_cpu_device());
    ampc_tensor *r = ampc_addmm(three, o, o, 0.5, 1.5);
    CHECK(r && ((int64_t *)ampc_data_ptr(r))[3] == 2);
    ampc_tensor *r2 = ampc_addmm(three, o, o, 2, 3);
    CHECK(r2 && ((int64_t *)ampc_data_ptr(r2))[0] == 12);
    /* bool has no kernel, as in PyTorch */
    ampc_tensor *bb = ampc_full(2, sq, ampc_scalar_bool(true), AMPC_BOOL, ampc_cpu_device());
    ampc_tensor *bc = ampc_mm(bb, bb);
    CHECK(!bc && ampc_last_status() == AMPC_E_NOT_IMPLEMENTED && strstr(ampc_last_error(), "bool"));
    ampc_tensor *list[] = {a, b, c, o, three, r, r2, bb};
    for (int i = 0; i < 8; i++) ampc_tensor_decref(list[i]);
}

static void addmm_body(void) {
    const ampc_dtype dts[] = {AMPC_FLOAT32, AMPC_FLOAT64, AMPC_FLOAT16, AMPC_BFLOAT16};
    for (int d = 0; d < 4; d++) {
        ampc_tensor *a = rand2(19, 37, dts[d]), *b = transposed_rand(37, 35, dts[d]);
        int64_t one = 35;
        ampc_tensor *bias = rand_tensor(1, &one, dts[d]); /* broadcast along rows, like nn.Linear */
        int64_t shape[2] = {19, 35};
        ampc_tensor *bias2 = ampc_expand(bias, 2, shape);
        ampc_tensor *c = ampc_addmm(bias, a, b, 0.75, -1.5);
        CHECK(c && c->shape[0] == 19 && c->shape[1] == 35);
        if (c) CHECK(check_gemm(c, a, b, bias2, 0.75, -1.5) == 0);
        /* beta = 0: a NaN input must not leak through */
        ampc_tensor *nan = ampc_full(1, &one, ampc_scalar_float(NAN), dts[d], ampc_cpu_device());
        ampc_tensor *c0 = ampc_addmm(nan, a, b, 0.0, 2.0);
        if (c0) CHECK(check_gemm(c0, a, b, NULL, 0, 2.0) == 0);
        ampc_tensor *list[] = {a, b, bias, bias2, c, nan, c0};
        for (int i = 0; i < 7; i++) ampc_tensor_decref(list[i]);
    }
}

CTEST(gemm_addmm) { each_backend(addmm_body); }

static void batched_body(void) {
    const ampc_dtype dts[] = {AMPC_FLOAT32, AMPC_BFLOAT16, AMPC_FLOAT16, AMPC_INT64};
    for (int d = 0; d < 4; d++) {
        int64_t sa[3] = {4, 9, 14}, sb[3] = {4, 14, 6};
        ampc_tensor *a = rand_tensor(3, sa, dts[d]), *b = rand_tensor(3, sb, dts[d]);
        ampc_tensor *c = ampc_bmm(a, b);
        CHECK(c && c->ndim == 3 && c->shape[0] == 4 && c->shape[2] == 6);
        if (c) CHECK(check_gemm(c, a, b, NULL, 0, 1) == 0);
        /* baddbmm with a (9, 6) input broadcast over the batch */
        int64_t sbias[2] = {9, 6}, full[3] = {4, 9, 6};
        ampc_tensor *bias = rand_tensor(2, sbias, dts[d]), *bias3 = ampc_expand(bias, 3, full);
        ampc_tensor *c2 = ampc_baddbmm(bias, a, b, 0.5, 2.0);
        if (c2) CHECK(check_gemm(c2, a, b, bias3, 0.5, 2.0) == 0);
        /* matmul broadcasting (2, 1, 9, 14) @ (3, 14, 6) -> (2, 3, 9, 6) */
        int64_t s4[4] = {2, 1, 9, 14}, s3[3] = {3, 14, 6}, e4a[4] = {2, 3, 9, 14}, e4b[4] = {2, 3, 14, 6};
        ampc_tensor *x = rand_tensor(4, s4, dts[d]), *y = rand_tensor(3, s3, dts[d]);
        ampc_tensor *z = ampc_matmul(x, y);
        CHECK(z && z->ndim == 4 && z->shape[0] == 2 && z->shape[1] == 3 && z->shape[2] == 9 && z->shape[3] == 6);
        ampc_tensor *xe = ampc_expand(x, 4, e4a), *ye = ampc_expand(y, 4, e4b);
        if (z) CHECK(check_gemm(z, xe, ye, NULL, 0, 1) == 0);
        ampc_tensor *list[] = {a, b, c, bias, bias3, c2, x, y, z, xe, ye};
        for (int i = 0; i < 11; i++) ampc_tensor_decref(list[i]);
    }
}

CTEST(gemm_batched_broadcast) { each_backend(batched_body); }

CTEST(gemm_matmul_ranks) {
    int64_t k = 7;
    ampc_tensor *v = rand_tensor(1, &k, AMPC_FLOAT64), *w = rand_tensor(1, &k, AMPC_FLOAT64);
    ampc_tensor *mat = rand2(5, 7, AMPC_FLOAT64), *mat_t = rand2(7, 4, AMPC_FLOAT64);
    int64_t s3[3] = {3, 5, 7}, s3b[3] = {3, 7, 4};
    ampc_tensor *bat = rand_tensor(3, s3, AMPC_FLOAT64), *batb = rand_tensor(3, s3b, AMPC_FLOAT64);

    ampc_tensor *d = ampc_matmul(v, w); /* 1-D . 1-D -> 0-dim */
    CHECK(d && d->ndim == 0);
    double want = 0;
    for (int i = 0; i < 7; i++) want += ((double *)ampc_data_ptr(v))[i] * ((double *)ampc_data_ptr(w))[i];
    if (d) CHECK_CLOSE(*(double *)ampc_data_ptr(d), want, 1e-12);

    ampc_tensor *mv = ampc_matmul(mat, v); /* (5, 7) @ (7) -> (5) */
    CHECK(mv && mv->ndim == 1 && mv->shape[0] == 5);
    ampc_tensor *vm = ampc_matmul(v, mat_t); /* (7) @ (7, 4) -> (4) */
    CHECK(vm && vm->ndim == 1 && vm->shape[0] == 4);
    ampc_tensor *bv = ampc_matmul(bat, v); /* (3, 5, 7) @ (7) -> (3, 5), folded */
    CHECK(bv && bv->ndim == 2 && bv->shape[0] == 3 && bv->shape[1] == 5);
    ampc_tensor *vb = ampc_matmul(v, batb); /* (7) @ (3, 7, 4) -> (3, 4) */
    CHECK(vb && vb->ndim == 2 && vb->shape[0] == 3 && vb->shape[1] == 4);
    ampc_tensor *bm = ampc_matmul(bat, mat_t); /* (3, 5, 7) @ (7, 4) -> (3, 5, 4), folded */
    CHECK(bm && bm->ndim == 3 && bm->shape[2] == 4 && bm->view_base == NULL);
    if (bv && bm && vb && mv && vm) {
        /* bv[2, 1] = bat[2, 1, :] . v ; bm[1, 4-1] = bat[1, 4, :] . mat_t[:, 3] */
        double s1 = 0, s2 = 0, s3v = 0, s4 = 0, s5 = 0;
        const double *pb = (const double *)ampc_data_ptr(bat), *pv = (const double *)ampc_data_ptr(v);
        const double *pm = (const double *)ampc_data_ptr(mat_t), *pbb = (const double *)ampc_data_ptr(batb);
        const double *pmat = (const double *)ampc_data_ptr(mat);
        for (int p = 0; p < 7; p++) {
            s1 += pb[(2 * 5 + 1) * 7 + p] * pv[p];
            s2 += pb[(1 * 5 + 4) * 7 + p] * pm[p * 4 + 3];
            s3v += pv[p] * pbb[(2 * 7 + p) * 4 + 1];
            s4 += pmat[3 * 7 + p] * pv[p];
            s5 += pv[p] * pm[p * 4 + 2];
        }
        CHECK_CLOSE(((double *)ampc_data_ptr(bv))[2 * 5 + 1], s1, 1e-12);
        CHECK_CLOSE(((double *)ampc_data_ptr(bm))[(1 * 5 + 4) * 4 + 3], s2, 1e-12);
        CHECK_CLOSE(((double *)ampc_data_ptr(vb))[2 * 4 + 1], s3v, 1e-12);
        CHECK_CLOSE(((double *)ampc_data_ptr(mv))[3], s4, 1e-12);
        CHECK_CLOSE(((double *)ampc_data_ptr(vm))[2], s5, 1e-12);
    }
    /* a transposed batch cannot fold into rows: read in place by the batched GEMM */
    ampc_tensor *bt = ampc_transpose(batb, 1, 2); /* (3, 4, 7) */
    ampc_tensor *btv = ampc_matmul(bt, v);
    CHECK(btv && btv->ndim == 2 && btv->shape[0] == 3 && btv->shape[1] == 4);
    if (btv) {
        double s = 0;
        const double *pbb = (const double *)ampc_data_ptr(batb), *pv = (const double *)ampc_data_ptr(v);
        for (int p = 0; p < 7; p++) s += pbb[(1 * 7 + p) * 4 + 2] * pv[p];
        CHECK_CLOSE(((double *)ampc_data_ptr(btv))[1 * 4 + 2], s, 1e-12);
    }
    ampc_tensor *list[] = {v, w, mat, mat_t, bat, batb, d, mv, vm, bv, vb, bm, bt, btv};
    for (int i = 0; i < 14; i++) ampc_tensor_decref(list[i]);
}

static void zero_size_body(void) {
    const ampc_dtype dts[] = {AMPC_FLOAT32, AMPC_FLOAT64, AMPC_FLOAT16, AMPC_BFLOAT16, AMPC_INT64};
    for (int d = 0; d < 5; d++) {
        /* k = 0: zeros, or beta * input */
        ampc_tensor *a = rand2(3, 0, dts[d]), *b = rand2(0, 4, dts[d]);
        ampc_tensor *c = ampc_mm(a, b);
        CHECK(c && c->shape[0] == 3 && c->shape[1] == 4);
        if (c) CHECK(check_gemm(c, a, b, NULL, 0, 1) == 0);
        int64_t four = 4;
        ampc_tensor *bias = rand_tensor(1, &four, dts[d]), *c2 = ampc_addmm(bias, a, b, 2.0, 1.0);
        int64_t shape[2] = {3, 4};
        ampc_tensor *bias2 = ampc_expand(bias, 2, shape);
        if (c2) CHECK(check_gemm(c2, a, b, bias2, 2.0, 1.0) == 0);
        /* n = 0 and an empty batch */
        ampc_tensor *e = rand2(0, 5, dts[d]), *f = rand2(5, 2, dts[d]), *g = ampc_mm(e, f);
        CHECK(g && g->shape[0] == 0 && g->shape[1] == 2);
        int64_t s0[3] = {0, 2, 3}, s1[3] = {0, 3, 2};
        ampc_tensor *x = rand_tensor(3, s0, dts[d]), *y = rand_tensor(3, s1, dts[d]), *z = ampc_bmm(x, y);
        CHECK(z && z->shape[0] == 0 && z->shape[1] == 2 && z->shape[2] == 2);
        ampc_tensor *list[] = {a, b, c, bias, c2, bias2, e, f, g, x, y, z};
        for (int i = 0; i < 12; i++) ampc_tensor_decref(list[i]);
    }
}

CTEST(gemm_zero_sizes) { each_backend(zero_size_body); }

CTEST(gemm_amx_kernel) {
    if (!ampc_cpu_gemm_has_amx()) return; /* nothing to test on this CPU */
    /* tile edges: n and m around 16 / 32, k around 32, k across KC = 512 and n across MC = 128;
     * alpha 1 with beta 0 or 1 takes the path where tiles load and store C directly */
    const int64_t sizes[][3] = {{15, 17, 31}, {32, 32, 32}, {33, 47, 33}, {1, 1, 1}, {130, 40, 1030}, {64, 96, 600}};
    const float coefs[][2] = {{2.0f, 0.5f}, {1.0f, 1.0f}, {1.0f, 0.0f}};
    for (int s = 0; s < 6; s++)
        for (int layout = 0; layout < 4; layout++) {
            int64_t n = sizes[s][0], m = sizes[s][1], k = sizes[s][2];
            float alpha = coefs[layout % 3][0], beta = coefs[layout % 3][1];
            ampc_tensor *a = layout & 1 ? transposed_rand(n, k, AMPC_BFLOAT16) : rand2(n, k, AMPC_BFLOAT16);
            ampc_tensor *b = layout & 2 ? transposed_rand(k, m, AMPC_BFLOAT16) : rand2(k, m, AMPC_BFLOAT16);
            float *c = (float *)malloc(sizeof(float) * (size_t)(n * m));
            for (int64_t i = 0; i < n * m; i++) c[i] = beta == 0 ? NAN : 1.0f; /* beta 0 must not read C */
            CHECK(ampc_cpu_gemm_bf16_amx(n, m, k, alpha, (const uint16_t *)ampc_data_ptr(a), a->strides[0],
                                         a->strides[1], (const uint16_t *)ampc_data_ptr(b), b->strides[0],
                                         b->strides[1], beta, c, m) == AMPC_OK);
            int bad = 0;
            for (int64_t i = 0; i < n && bad < 3; i++)
                for (int64_t j = 0; j < m && bad < 3; j++) {
                    double sum = 0, mag = 0;
                    for (int64_t p = 0; p < k; p++) {
                        int64_t ia[2] = {i, p}, ib[2] = {p, j};
                        double prod = at(a, ia) * at(b, ib);
                        sum += prod, mag += fabs(prod);
                    }
                    double want = alpha * sum + beta;
                    if (!(fabs(c[i * m + j] - want) <= 1e-6 * (double)(k + 4) * (alpha * mag + 1))) {
                        fprintf(stderr, "  amx n=%lld m=%lld k=%lld (%lld,%lld): got %g want %g\n", (long long)n,
                                (long long)m, (long long)k, (long long)i, (long long)j, c[i * m + j], want);
                        bad++;
                    }
                }
            CHECK(bad == 0);
            free(c);
            ampc_tensor_decref(a);
            ampc_tensor_decref(b);
        }
}

CTEST(gemm_backend_switch) {
    CHECK(strcmp(ampc_cpu_gemm_get_backend(), "auto") == 0);
    CHECK(ampc_cpu_gemm_set_backend("fallback") == AMPC_OK);
    CHECK(strcmp(ampc_cpu_gemm_get_backend(), "fallback") == 0);
    CHECK(ampc_cpu_gemm_set_backend("mkl") == AMPC_E_VALUE && strstr(ampc_last_error(), "unknown backend 'mkl'"));
    CHECK(strcmp(ampc_cpu_gemm_get_backend(), "fallback") == 0);
    CHECK(ampc_cpu_gemm_set_backend("blas") == (ampc_cpu_gemm_has_blas() ? AMPC_OK : AMPC_E_VALUE));
    CHECK(ampc_cpu_gemm_set_backend("auto") == AMPC_OK);
}

/* The call fails with `status` and a message containing `needle`. */
static void expect_error(ampc_tensor *r, ampc_status status, const char *needle) {
    CHECK(r == NULL);
    if (r) {
        ampc_tensor_decref(r);
        return;
    }
    CHECK(ampc_last_status() == status);
    if (!strstr(ampc_last_error(), needle)) {
        fprintf(stderr, "  expected '%s' in '%s'\n", needle, ampc_last_error());
        CHECK(!"message");
    }
}

CTEST(gemm_errors) {
    ampc_tensor *a23 = rand2(2, 3, AMPC_FLOAT32), *a45 = rand2(4, 5, AMPC_FLOAT32), *h35 = rand2(3, 5, AMPC_FLOAT16);
    ampc_tensor *a35 = rand2(3, 5, AMPC_FLOAT32);
    int64_t s3[1] = {3}, s4[1] = {4}, s234[3] = {2, 3, 4}, s345[3] = {3, 4, 5}, s255[3] = {2, 5, 5};
    ampc_tensor *v3 = rand_tensor(1, s3, AMPC_FLOAT32), *v4 = rand_tensor(1, s4, AMPC_FLOAT32);
    ampc_tensor *b234 = rand_tensor(3, s234, AMPC_FLOAT32), *b345 = rand_tensor(3, s345, AMPC_FLOAT32);
    ampc_tensor *b255 = rand_tensor(3, s255, AMPC_FLOAT32);
    ampc_tensor *scalar = ampc_full(0, NULL, ampc_scalar_float(1), AMPC_FLOAT32, ampc_cpu_device());

    expect_error(ampc_mm(a23, a45), AMPC_E_RUNTIME, "mat1 and mat2 shapes cannot be multiplied (2x3 and 4x5)");
    expect_error(ampc_mm(a23, h35), AMPC_E_RUNTIME, "expected m1 and m2 to have the same dtype, but got: float32 != float16");
    expect_error(ampc_mm(v3, a23), AMPC_E_RUNTIME, "self must be a matrix");
    expect_error(ampc_mm(a23, v3), AMPC_E_RUNTIME, "mat2 must be a matrix");
    expect_error(ampc_bmm(b234, b345), AMPC_E_RUNTIME,
                 "Expected size for first two dimensions of batch2 tensor to be: [2, 4] but got: [3, 4].");
    expect_error(ampc_bmm(a23, b345), AMPC_E_RUNTIME, "batch1 must be a 3D tensor");
    expect_error(ampc_matmul(scalar, v3), AMPC_E_RUNTIME,
                 "both arguments to matmul need to be at least 1D, but they are 0D and 1D");
    expect_error(ampc_matmul(v3, v4), AMPC_E_RUNTIME,
                 "inconsistent tensor size, expected tensor [3] and src [4] to have the same number of elements");
    expect_error(ampc_matmul(b234, a35), AMPC_E_RUNTIME, "mat1 and mat2 shapes cannot be multiplied (6x4 and 3x5)");
    expect_error(ampc_matmul(b234, v3), AMPC_E_RUNTIME, "size mismatch, got input (6), mat (6x4), vec (3)");
    expect_error(ampc_matmul(b234, b255), AMPC_E_RUNTIME,
                 "Expected size for first two dimensions of batch2 tensor to be: [2, 4] but got: [2, 5].");
    expect_error(ampc_matmul(b234, b345), AMPC_E_RUNTIME, "The size of tensor a (2) must match the size of tensor b (3)");
    expect_error(ampc_addmm(v3, a23, a35, 1, 1), AMPC_E_RUNTIME,
                 "The expanded size of the tensor (5) must match the existing size (3) at non-singleton dimension 1");
    expect_error(ampc_addmm(a35, a35, a45, 1, 1), AMPC_E_RUNTIME, "mat1 and mat2 shapes cannot be multiplied (3x5 and 4x5)");
    expect_error(ampc_addmm(v3, v3, a35, 1, 1), AMPC_E_RUNTIME, "mat1 must be a matrix, got 1-D tensor");
    expect_error(ampc_addmm(h35, a23, a35, 1, 1), AMPC_E_RUNTIME, "self and mat2 must have the same dtype");
    expect_error(ampc_baddbmm(a45, b234, b345, 1, 1), AMPC_E_RUNTIME, "Expected size for first two dimensions");
    expect_error(ampc_dot(a23, v3), AMPC_E_RUNTIME, "1D tensors expected, but got 2D and 1D tensors");
    expect_error(ampc_mv(v3, v3), AMPC_E_RUNTIME, "vector + matrix @ vector expected, got 1, 1, 1");
    expect_error(ampc_mv(a45, v3), AMPC_E_RUNTIME, "size mismatch, got input (4), mat (4x5), vec (3)");

    ampc_tensor *list[] = {a23, a45, h35, a35, v3, v4, b234, b345, b255, scalar};
    for (int i = 0; i < 10; i++) ampc_tensor_decref(list[i]);
}

/* Largest |x - y| over two tensors of the same shape (any strides), as doubles. */
static double max_diff(const ampc_tensor *x, const ampc_tensor *y) {
    if (x->ndim != y->ndim || memcmp(x->shape, y->shape, sizeof(int64_t) * (size_t)x->ndim) != 0) return INFINITY;
    double worst = 0;
    int64_t idx[AMPC_MAX_DIMS] = {0};
    for (int64_t e = 0; e < ampc_numel(x); e++) {
        int64_t rem = e;
        for (int d = x->ndim - 1; d >= 0; d--) idx[d] = rem % x->shape[d], rem /= x->shape[d];
        double diff = fabs(at(x, idx) - at(y, idx));
        if (!(diff <= worst)) worst = diff;
    }
    return worst;
}

CTEST(einsum_cases) {
    ampc_tensor *a = rand2(4, 5, AMPC_FLOAT64), *b = rand2(5, 3, AMPC_FLOAT64), *sq = rand2(4, 4, AMPC_FLOAT64);
    int64_t s4[4] = {2, 3, 4, 5}, s4k[4] = {2, 3, 6, 5};
    ampc_tensor *q = rand_tensor(4, s4, AMPC_FLOAT64), *k = rand_tensor(4, s4k, AMPC_FLOAT64);

    const ampc_tensor *ab[2] = {a, b};
    ampc_tensor *e1 = ampc_einsum("ij,jk->ik", 2, ab), *r1 = ampc_mm(a, b);
    CHECK(e1 && max_diff(e1, r1) < 1e-12);
    ampc_tensor *e1i = ampc_einsum("ij,jk", 2, ab); /* implicit output: ik */
    CHECK(e1i && max_diff(e1i, r1) < 1e-12);

    const ampc_tensor *qk[2] = {q, k};
    ampc_tensor *kt = ampc_transpose(k, 2, 3);
    ampc_tensor *e2 = ampc_einsum("bhqd,bhkd->bhqk", 2, qk), *r2 = ampc_matmul(q, kt);
    CHECK(e2 && max_diff(e2, r2) < 1e-12);
    ampc_tensor *e2e = ampc_einsum("...qd,...kd->...qk", 2, qk);
    CHECK(e2e && max_diff(e2e, r2) < 1e-12);

    const ampc_tensor *one[1] = {sq};
    ampc_tensor *diag = ampc_einsum("ii->i", 1, one), *trace = ampc_einsum("ii", 1, one);
    ampc_tensor *total = ampc_einsum("ij->", 1, one), *tr = ampc_einsum("ij->ji", 1, one);
    CHECK(diag && diag->ndim == 1 && diag->shape[0] == 4 && diag->storage == sq->storage);
    CHECK(trace && trace->ndim == 0 && total && total->ndim == 0);
    CHECK(tr && tr->storage == sq->storage && tr->strides[0] == 1);
    if (diag && trace && total) {
        const double *p = (const double *)ampc_data_ptr(sq);
        double tsum = 0, all = 0;
        for (int i = 0; i < 16; i++) all += p[i];
        for (int i = 0; i < 4; i++) tsum += p[i * 5];
        int64_t i2[1] = {2};
        CHECK(at(diag, i2) == p[10]);
        CHECK_CLOSE(at(trace, NULL), tsum, 1e-12);
        CHECK_CLOSE(at(total, NULL), all, 1e-12);
    }

    /* "i,i->" is dot; "ij,ij->i" a batched dot; three operands chain left to right */
    int64_t five = 5;
    ampc_tensor *v = rand_tensor(1, &five, AMPC_FLOAT64), *w = rand_tensor(1, &five, AMPC_FLOAT64);
    const ampc_tensor *vw[2] = {v, w}, *aa[2] = {a, a}, *abv[3] = {a, b, a};
    ampc_tensor *e3 = ampc_einsum("i,i->", 2, vw), *r3 = ampc_dot(v, w);
    CHECK(e3 && max_diff(e3, r3) < 1e-12);
    ampc_tensor *e4 = ampc_einsum("ij,ij->i", 2, aa);
    CHECK(e4 && e4->ndim == 1 && e4->shape[0] == 4);
    if (e4) {
        double s = 0;
        const double *p = (const double *)ampc_data_ptr(a);
        for (int j = 0; j < 5; j++) s += p[5 + j] * p[5 + j];
        int64_t i1[1] = {1};
        CHECK_CLOSE(at(e4, i1), s, 1e-12);
    }
    ampc_tensor *e5 = ampc_einsum("ij,jk,lk->il", 3, abv); /* (a @ b) @ a^T... shapes: (4,5)(5,3)(4,5)? */
    CHECK(e5 == NULL); /* k is 3 in b and 5 in the third operand */
    CHECK(strstr(ampc_last_error(), "subscript k has size 5 for operand 2 which does not broadcast"));

    /* errors */
    CHECK(ampc_einsum("ij,jk->ik", 1, ab) == NULL &&
          strstr(ampc_last_error(), "fewer operands were provided than specified in the equation"));
    CHECK(ampc_einsum("ij->iz", 1, one) == NULL &&
          strstr(ampc_last_error(), "output subscript z does not appear in the equation for any input operand"));
    CHECK(ampc_einsum("ijk->i", 1, one) == NULL &&
          strstr(ampc_last_error(), "the number of subscripts in the equation (3) does not match the number of "
                                    "dimensions (2) for operand 0 and no ellipsis was given"));
    CHECK(ampc_einsum("ij->ii", 1, one) == NULL && strstr(ampc_last_error(), "output subscript i appears more than once"));
    CHECK(ampc_einsum("i1->i", 1, one) == NULL && strstr(ampc_last_error(), "invalid subscript given at index 1"));

    ampc_tensor *list[] = {a, b, sq, q, k, e1, r1, e1i, kt, e2, r2, e2e, diag, trace, total, tr, v, w, e3, r3, e4};
    for (size_t i = 0; i < sizeof list / sizeof list[0]; i++) ampc_tensor_decref(list[i]);
}

CTEST(gemm_autocast) {
    /* inside a CPU autocast region the matrix ops run in bf16 (the CPU default), float64 stays */
    ampc_tensor *a = rand2(6, 7, AMPC_FLOAT32), *b = rand2(7, 3, AMPC_FLOAT32), *d = rand2(7, 3, AMPC_FLOAT64);
    int64_t three = 3;
    ampc_tensor *bias = rand_tensor(1, &three, AMPC_FLOAT32);
    ampc_autocast_set_enabled(AMPC_CPU, true);
    ampc_autocast_increment_nesting();
    ampc_tensor *dt = ampc_transpose(d, 0, 1);
    ampc_tensor *c = ampc_matmul(a, b), *c2 = ampc_addmm(bias, a, b, 1, 1), *c3 = ampc_mm(d, dt);
    const ampc_tensor *ab[2] = {a, b};
    ampc_tensor *c4 = ampc_einsum("ij,jk->ik", 2, ab);
    if (ampc_autocast_decrement_nesting() == 0) ampc_autocast_clear_cache();
    ampc_autocast_set_enabled(AMPC_CPU, false);
    CHECK(c && c->dtype == AMPC_BFLOAT16 && c2 && c2->dtype == AMPC_BFLOAT16 && c4 && c4->dtype == AMPC_BFLOAT16);
    CHECK(c3 && c3->dtype == AMPC_FLOAT64);
    ampc_tensor *plain = ampc_mm(a, b);
    CHECK(plain && plain->dtype == AMPC_FLOAT32);
    if (c && plain) CHECK(max_diff(c, plain) < 0.1);
    ampc_tensor *list[] = {a, b, d, dt, bias, c, c2, c3, c4, plain};
    for (size_t i = 0; i < sizeof list / sizeof list[0]; i++) ampc_tensor_decref(list[i]);
}
