/* test_index.c: indexing and joining in the C core: index_select, gather, scatter_add, index_add,
 * advanced indexing and index_put_, masked_fill, nonzero, cat, stack, split/chunk/unbind. Bad
 * indices must fail with AMPC_E_INDEX before any memory is touched (ASan checks the "before"). */
#include <stdlib.h>
#include <string.h>

#include "ctest.h"

static ampc_tensor *make_f32(int nd, const int64_t *shape, const float *v) {
    return ctest_tensor(AMPC_FLOAT32, nd, shape, v);
}
static ampc_tensor *make_i64(int nd, const int64_t *shape, const int64_t *v) {
    return ctest_tensor(AMPC_INT64, nd, shape, v);
}
static ampc_tensor *make_bool(int nd, const int64_t *shape, const bool *v) {
    return ctest_tensor(AMPC_BOOL, nd, shape, v);
}

/* 0, 1, 2, ... as float32 of the given shape */
static ampc_tensor *iota_f32(int nd, const int64_t *shape) {
    ampc_tensor *t = ampc_empty(nd, shape, AMPC_FLOAT32, ampc_cpu_device());
    float *p = (float *)ampc_data_ptr(t);
    for (int64_t i = 0; i < ampc_numel(t); i++) p[i] = (float)i;
    return t;
}

static double at(const ampc_tensor *t, int64_t i) {
    ampc_scalar s;
    if (ampc_get_scalar(t, i, &s) != AMPC_OK) return -12345.0;
    return ampc_scalar_to_double(s);
}

static bool shape_is(const ampc_tensor *t, int nd, const int64_t *shape) {
    if (!t || t->ndim != nd) return false;
    for (int i = 0; i < nd; i++)
        if (t->shape[i] != shape[i]) return false;
    return true;
}

static bool error_has(ampc_status code, const char *text) {
    return ampc_last_status() == code && strstr(ampc_last_error(), text) != NULL;
}

CTEST(index_select_all_forms) {
    int64_t s34[2] = {3, 4}, s2[1] = {2};
    ampc_tensor *a = iota_f32(2, s34);
    ampc_tensor *idx = make_i64(1, s2, (int64_t[]){2, 0});
    ampc_tensor *r = ampc_index_select(a, 0, idx); /* rows 2 and 0 */
    CHECK(shape_is(r, 2, (int64_t[]){2, 4}));
    CHECK(at(r, 0) == 8 && at(r, 3) == 11 && at(r, 4) == 0 && at(r, 7) == 3);
    ampc_tensor_decref(r);
    /* along dim 1 of a transposed (non-contiguous) source, with an int32 index */
    ampc_tensor *at_ = ampc_transpose(a, 0, 1); /* (4, 3) */
    ampc_tensor *idx32 = ampc_to(idx, AMPC_INT32, ampc_cpu_device(), false);
    r = ampc_index_select(at_, 1, idx32); /* columns 2, 0 of a^T: rows 2, 0 of a, transposed */
    CHECK(shape_is(r, 2, (int64_t[]){4, 2}));
    CHECK(at(r, 0) == 8 && at(r, 1) == 0 && at(r, 2) == 9 && at(r, 7) == 3);
    ampc_tensor_decref(r);
    /* every dtype moves bytes unchanged */
    for (int dt = 0; dt < AMPC_NUM_DTYPES; dt++) {
        ampc_tensor *c = ampc_to(a, (ampc_dtype)dt, ampc_cpu_device(), false);
        r = ampc_index_select(c, 1, idx);
        CHECK(r && r->dtype == dt && shape_is(r, 2, (int64_t[]){3, 2}));
        ampc_tensor *expect_src = ampc_to(a, (ampc_dtype)dt, ampc_cpu_device(), false);
        CHECK(at(r, 2) == at(expect_src, 6) && at(r, 3) == at(expect_src, 4));
        DECREF(expect_src, r, c);
    }
    /* out of bounds, both signs: IndexError, no access */
    ampc_tensor *bad = make_i64(1, s2, (int64_t[]){1, 3});
    CHECK(ampc_index_select(a, 0, bad) == NULL && error_has(AMPC_E_INDEX, "index 3 is out of bounds for dimension 0 with size 3"));
    ((int64_t *)ampc_data_ptr(bad))[1] = -4;
    CHECK(ampc_index_select(a, 0, bad) == NULL && error_has(AMPC_E_INDEX, "index -4 is out of bounds"));
    ((int64_t *)ampc_data_ptr(bad))[1] = INT64_MIN;
    CHECK(ampc_index_select(a, 0, bad) == NULL && ampc_last_status() == AMPC_E_INDEX);
    ampc_tensor *fidx = ampc_to(idx, AMPC_FLOAT32, ampc_cpu_device(), false);
    CHECK(ampc_index_select(a, 0, fidx) == NULL && error_has(AMPC_E_RUNTIME, "Expected dtype int32 or int64 for index"));
    CHECK(ampc_index_select(a, 2, idx) == NULL && error_has(AMPC_E_INDEX, "Dimension out of range"));
    DECREF(fidx, bad, idx32, at_, idx, a);
}

CTEST(gather_and_scatter_add) {
    int64_t s34[2] = {3, 4}, s22[2] = {2, 2};
    ampc_tensor *a = iota_f32(2, s34);
    ampc_tensor *idx = make_i64(2, s22, (int64_t[]){3, 0, 3, 1});
    ampc_tensor *r = ampc_gather(a, 1, idx); /* r[i][j] = a[i][idx[i][j]] */
    CHECK(shape_is(r, 2, s22));
    CHECK(at(r, 0) == 3 && at(r, 1) == 0 && at(r, 2) == 7 && at(r, 3) == 5);
    ampc_tensor_decref(r);
    /* scatter_add: duplicates accumulate */
    ampc_tensor *z = ampc_zeros(2, s34, AMPC_FLOAT32, ampc_cpu_device());
    ampc_tensor *dup = make_i64(2, s22, (int64_t[]){1, 1, 0, 0});
    ampc_tensor *src = make_f32(2, s22, (float[]){1, 2, 3, 4});
    CHECK(ampc_scatter_add_(z, 1, dup, src) == AMPC_OK);
    CHECK(at(z, 1) == 3 && at(z, 4) == 7 && at(z, 0) == 0);
    /* out-of-bounds index: error, destination untouched */
    ampc_tensor *bad = make_i64(2, s22, (int64_t[]){0, 0, 0, 4});
    CHECK(ampc_scatter_add_(z, 1, bad, src) == AMPC_E_RUNTIME); /* torch: a RuntimeError (index_bounds.h) */
    CHECK(error_has(AMPC_E_RUNTIME, "index 4 is out of bounds for dimension 1 with size 4"));
    CHECK(at(z, 0) == 0 && at(z, 1) == 3);
    CHECK(ampc_gather(a, 1, bad) == NULL && ampc_last_status() == AMPC_E_RUNTIME);
    ((int64_t *)ampc_data_ptr(bad))[3] = -1; /* gather takes no negative index (torch) */
    CHECK(ampc_gather(a, 1, bad) == NULL && error_has(AMPC_E_RUNTIME, "index -1"));
    /* shape rules */
    int64_t s1[1] = {2};
    ampc_tensor *flat = make_i64(1, s1, (int64_t[]){0, 1});
    CHECK(ampc_gather(a, 0, flat) == NULL && error_has(AMPC_E_RUNTIME, "same number of dimensions"));
    int64_t s25[2] = {2, 5};
    ampc_tensor *wide = ampc_zeros(2, s25, AMPC_INT64, ampc_cpu_device());
    CHECK(ampc_gather(a, 0, wide) == NULL && error_has(AMPC_E_RUNTIME, "Size does not match at dimension 1"));
    ampc_tensor *srcd = ampc_to(src, AMPC_FLOAT64, ampc_cpu_device(), false);
    CHECK(ampc_scatter_add_(z, 1, dup, srcd) == AMPC_E_RUNTIME && error_has(AMPC_E_RUNTIME, "self.dtype to be equal"));
    /* self as its own index source: int64 tensor gathering itself */
    ampc_tensor *self = make_i64(1, s1, (int64_t[]){1, 0});
    CHECK(ampc_scatter_add_(self, 0, self, self) == AMPC_OK);
    CHECK(at(self, 0) == 1 && at(self, 1) == 1);
    DECREF(self, srcd, wide, flat, bad, src, dup, z, idx, a);
}

CTEST(index_add_dtypes) {
    int64_t s34[2] = {3, 4}, s24[2] = {2, 4}, s2[1] = {2};
    ampc_tensor *idx = make_i64(1, s2, (int64_t[]){2, 2});
    ampc_tensor *a = iota_f32(2, s34);
    ampc_tensor *src = iota_f32(2, s24);
    for (int dt = 0; dt < AMPC_NUM_DTYPES; dt++) {
        if (dt == AMPC_BOOL) continue;
        ampc_tensor *ad = ampc_to(a, (ampc_dtype)dt, ampc_cpu_device(), false);
        ampc_tensor *sd = ampc_to(src, (ampc_dtype)dt, ampc_cpu_device(), false);
        ampc_tensor *r = ampc_index_add(ad, 0, idx, sd, 2.0);
        CHECK(r && r->dtype == dt);
        /* row 2 += 2 * (row 0 + row 1) of src: 8 + 2 * (0 + 4) = 16 */
        CHECK(at(r, 8) == 16 && at(r, 11) == 11 + 2 * (3 + 7) && at(r, 0) == 0);
        CHECK(at(ad, 8) == 8); /* out-of-place */
        DECREF(r, sd, ad);
    }
    ampc_tensor *bad = make_i64(1, s2, (int64_t[]){0, 3});
    CHECK(ampc_index_add_(a, 0, bad, src, 1.0) == AMPC_E_RUNTIME); /* torch: a RuntimeError */
    CHECK(at(a, 0) == 0);
    CHECK(ampc_index_add_(a, 0, idx, a, 1.0) == AMPC_E_RUNTIME && error_has(AMPC_E_RUNTIME, "Number of indices (2)"));
    DECREF(bad, src, a, idx);
}

CTEST(advanced_index_get_put) {
    int64_t s234[3] = {2, 3, 4}, s2[1] = {2}, s3[1] = {3};
    ampc_tensor *a = iota_f32(3, s234);
    ampc_tensor *i0 = make_i64(1, s2, (int64_t[]){1, 0});
    ampc_tensor *i2 = make_i64(1, s2, (int64_t[]){3, -1});
    /* a[i0, :, i2]: indices separated by a slice -> broadcast dims first: (2, 3) */
    const ampc_tensor *sep[3] = {i0, NULL, i2};
    ampc_tensor *r = ampc_index(a, 3, sep);
    CHECK(shape_is(r, 2, (int64_t[]){2, 3}));
    CHECK(at(r, 0) == 15 && at(r, 1) == 19 && at(r, 3) == 3 && at(r, 5) == 11);
    ampc_tensor_decref(r);
    /* a[:, i, j] adjacent -> in place: (2, 2) */
    ampc_tensor *i1 = make_i64(1, s2, (int64_t[]){2, 0});
    const ampc_tensor *adj[3] = {NULL, i1, i2};
    r = ampc_index(a, 3, adj);
    CHECK(shape_is(r, 2, (int64_t[]){2, 2}));
    CHECK(at(r, 0) == 11 && at(r, 1) == 3 && at(r, 2) == 23);
    ampc_tensor_decref(r);
    /* bool mask over the last two dims (merged into one index) */
    bool mv[12] = {0};
    mv[1] = mv[6] = mv[11] = true;
    ampc_tensor *mask = make_bool(2, (int64_t[]){3, 4}, mv);
    const ampc_tensor *m[2] = {NULL, mask};
    r = ampc_index(a, 2, m);
    CHECK(shape_is(r, 2, (int64_t[]){2, 3}));
    CHECK(at(r, 0) == 1 && at(r, 1) == 6 && at(r, 2) == 11 && at(r, 3) == 13);
    ampc_tensor_decref(r);
    /* the same mask on a transposed view (dims not mergeable: two index tensors) */
    ampc_tensor *t = ampc_permute(a, 3, (int64_t[]){0, 2, 1}); /* (2, 4, 3) */
    ampc_tensor *mt = ampc_transpose(mask, 0, 1);
    const ampc_tensor *m2[2] = {NULL, mt};
    r = ampc_index(t, 2, m2);
    CHECK(shape_is(r, 2, (int64_t[]){2, 3}));
    /* mask^T true at (1,0) (2,1) (3,2) of t[0] = a[0][0][1], a[0][1][2], a[0][2][3] */
    CHECK(at(r, 0) == 1 && at(r, 1) == 6 && at(r, 2) == 11);
    ampc_tensor_decref(r);
    /* mask shape mismatch and bad dtypes */
    bool bv[2] = {true, false};
    ampc_tensor *m2s = make_bool(1, s2, bv);
    const ampc_tensor *mm[2] = {NULL, m2s};
    CHECK(ampc_index(a, 2, mm) == NULL &&
          error_has(AMPC_E_INDEX, "The shape of the mask [2] at index 0 does not match the shape of the indexed tensor [2, 3, 4] at index 1"));
    ampc_tensor *fi = ampc_to(i0, AMPC_FLOAT32, ampc_cpu_device(), false);
    const ampc_tensor *ff[1] = {fi};
    CHECK(ampc_index(a, 1, ff) == NULL && error_has(AMPC_E_INDEX, "tensors used as indices must be long, int, byte or bool"));
    const ampc_tensor *many[4] = {i0, NULL, NULL, NULL};
    CHECK(ampc_index(a, 4, many) == NULL && error_has(AMPC_E_INDEX, "too many indices for tensor of dimension 3"));
    ampc_tensor *i3 = make_i64(1, s3, (int64_t[]){0, 1, 2});
    const ampc_tensor *nb[2] = {i0, i3};
    CHECK(ampc_index(a, 2, nb) == NULL &&
          error_has(AMPC_E_INDEX, "shape mismatch: indexing tensors could not be broadcast together with shapes [2], [3]"));
    /* out-of-bounds gathers and puts: error, nothing written */
    ampc_tensor *oob = make_i64(1, s2, (int64_t[]){0, 4});
    const ampc_tensor *ob[3] = {NULL, NULL, oob};
    CHECK(ampc_index(a, 3, ob) == NULL && error_has(AMPC_E_INDEX, "index 4 is out of bounds for dimension 2 with size 4"));
    ampc_tensor *one = ampc_full(0, NULL, ampc_scalar_float(-1), AMPC_FLOAT32, ampc_cpu_device());
    CHECK(ampc_index_put_(a, 3, ob, one, false) == AMPC_E_INDEX);
    CHECK(ampc_index_put_(a, 3, ob, one, true) == AMPC_E_INDEX);
    for (int i = 0; i < 24; i++) CHECK(at(a, i) == i);
    /* put and accumulate with repeated indices */
    ampc_tensor *rep = make_i64(1, s3, (int64_t[]){1, 1, 1});
    const ampc_tensor *rp[1] = {rep};
    ampc_tensor *ones = ampc_full(1, (int64_t[]){4}, ampc_scalar_float(1), AMPC_FLOAT32, ampc_cpu_device());
    CHECK(ampc_index_put_(a, 1, rp, ones, true) == AMPC_OK); /* a[1] += 3 (broadcast over (3, 3, 4)) */
    CHECK(at(a, 12) == 15 && at(a, 23) == 26 && at(a, 0) == 0);
    CHECK(ampc_index_put_(a, 3, sep, one, false) == AMPC_OK); /* a[i0, :, i2] = -1 */
    CHECK(at(a, 15) == -1 && at(a, 3) == -1 && at(a, 2) == 2);
    ampc_tensor *dbl = ampc_full(0, NULL, ampc_scalar_float(1), AMPC_FLOAT64, ampc_cpu_device());
    CHECK(ampc_index_put_(a, 1, rp, dbl, false) == AMPC_E_RUNTIME && error_has(AMPC_E_RUNTIME, "dtypes match"));
    ampc_tensor *v3 = ampc_zeros(1, s3, AMPC_FLOAT32, ampc_cpu_device());
    CHECK(ampc_index_put_(a, 1, rp, v3, false) == AMPC_E_RUNTIME &&
          error_has(AMPC_E_RUNTIME, "value tensor of shape [3] cannot be broadcast to indexing result of shape [3, 3, 4]"));
    /* an int64 tensor indexed by itself: the index is copied before the write */
    ampc_tensor *self = make_i64(1, s3, (int64_t[]){2, 0, 1});
    const ampc_tensor *sp[1] = {self};
    ampc_tensor *big = ampc_full(0, NULL, ampc_scalar_int(100), AMPC_INT64, ampc_cpu_device());
    CHECK(ampc_index_put_(self, 1, sp, big, false) == AMPC_OK);
    CHECK(at(self, 0) == 100 && at(self, 1) == 100 && at(self, 2) == 100);
    DECREF(big, self, v3, dbl, ones, rep, one, oob, i3, fi, m2s, mt, t, mask, i1, i2, i0, a);
}

CTEST(masked_fill_and_nonzero) {
    int64_t s23[2] = {2, 3}, s3[1] = {3};
    ampc_tensor *a = iota_f32(2, s23);
    ampc_tensor *row = make_bool(1, s3, (bool[]){true, false, true});
    ampc_tensor *r = ampc_masked_fill(a, row, ampc_scalar_float(-2.5));
    CHECK(shape_is(r, 2, s23) && at(r, 0) == -2.5 && at(r, 1) == 1 && at(r, 5) == -2.5 && at(a, 0) == 0);
    ampc_tensor_decref(r);
    ampc_tensor *h = ampc_to(a, AMPC_FLOAT16, ampc_cpu_device(), false);
    CHECK(ampc_masked_fill_(h, row, ampc_scalar_float(0.5)) == AMPC_OK && at(h, 3) == 0.5 && at(h, 4) == 4);
    ampc_tensor *fm = ampc_to(row, AMPC_FLOAT32, ampc_cpu_device(), false);
    CHECK(ampc_masked_fill_(a, fm, ampc_scalar_int(1)) == AMPC_E_RUNTIME &&
          error_has(AMPC_E_RUNTIME, "masked_fill_ only supports boolean masks, but got mask with dtype float"));
    ampc_tensor *big = make_bool(2, (int64_t[]){2, 2}, (bool[]){true, true, true, true});
    CHECK(ampc_masked_fill_(a, big, ampc_scalar_int(1)) != AMPC_OK);
    /* nonzero: NaN counts, -0.0 does not */
    ampc_tensor *v = make_f32(2, s23, (float[]){0.f, -0.f, NAN, 1.f, 0.f, -3.f});
    ampc_tensor *nz = ampc_nonzero(v);
    CHECK(shape_is(nz, 2, (int64_t[]){3, 2}));
    CHECK(at(nz, 0) == 0 && at(nz, 1) == 2 && at(nz, 2) == 1 && at(nz, 3) == 0 && at(nz, 4) == 1 && at(nz, 5) == 2);
    ampc_tensor_decref(nz);
    ampc_tensor *vt = ampc_transpose(v, 0, 1); /* (3, 2): order follows the view */
    nz = ampc_nonzero(vt);
    CHECK(shape_is(nz, 2, (int64_t[]){3, 2}));
    CHECK(at(nz, 0) == 0 && at(nz, 1) == 1 && at(nz, 2) == 2 && at(nz, 3) == 0 && at(nz, 4) == 2 && at(nz, 5) == 1);
    ampc_tensor_decref(nz);
    ampc_tensor *s = ampc_full(0, NULL, ampc_scalar_float(2), AMPC_FLOAT32, ampc_cpu_device());
    nz = ampc_nonzero(s);
    CHECK(shape_is(nz, 2, (int64_t[]){1, 0}));
    ampc_tensor_decref(nz);
    ampc_tensor *e = ampc_zeros(2, (int64_t[]){0, 3}, AMPC_BOOL, ampc_cpu_device());
    nz = ampc_nonzero(e);
    CHECK(shape_is(nz, 2, (int64_t[]){0, 2}));
    DECREF(nz, e, s, vt, v, big, fm, h, row, a);
}

CTEST(cat_stack_split) {
    int64_t s23[2] = {2, 3}, s22[2] = {2, 2};
    ampc_tensor *a = iota_f32(2, s23);
    ampc_tensor *b = ampc_full(2, s22, ampc_scalar_int(7), AMPC_INT32, ampc_cpu_device());
    ampc_tensor *empty = ampc_empty(1, (int64_t[]){0}, AMPC_FLOAT64, ampc_cpu_device());
    const ampc_tensor *ts[3] = {a, empty, b};
    ampc_tensor *r = ampc_cat(3, ts, -1); /* the 1-D empty tensor is skipped but promotes */
    CHECK(shape_is(r, 2, (int64_t[]){2, 5}) && r->dtype == AMPC_FLOAT64);
    CHECK(at(r, 2) == 2 && at(r, 3) == 7 && at(r, 5) == 3 && at(r, 9) == 7);
    ampc_tensor_decref(r);
    const ampc_tensor *bad[2] = {a, b};
    CHECK(ampc_cat(2, bad, 0) == NULL &&
          error_has(AMPC_E_RUNTIME,
                    "Sizes of tensors must match except in dimension 0. Expected size 3 but got size 2 for tensor number 1 in the list."));
    CHECK(ampc_cat(0, bad, 0) == NULL && error_has(AMPC_E_VALUE, "expected a non-empty list of Tensors"));
    CHECK(ampc_stack(2, bad, 0) == NULL && error_has(AMPC_E_RUNTIME, "stack expects each tensor to be equal size"));
    const ampc_tensor *same[2] = {a, a};
    r = ampc_stack(2, same, 2);
    CHECK(shape_is(r, 3, (int64_t[]){2, 3, 2}) && at(r, 2) == 1 && at(r, 3) == 1 && at(r, 11) == 5);
    ampc_tensor_decref(r);
    int64_t n;
    ampc_tensor **parts = ampc_split(a, 2, 1, &n);
    CHECK(parts && n == 2 && shape_is(parts[0], 2, s22) && shape_is(parts[1], 2, (int64_t[]){2, 1}));
    CHECK(parts && parts[1]->storage == a->storage && at(parts[1], 1) == 5);
    ampc_tensor_list_free(parts, n);
    parts = ampc_chunk(a, 4, 1, &n); /* 3 columns in chunks of 1 */
    CHECK(parts && n == 3);
    ampc_tensor_list_free(parts, n);
    parts = ampc_split_with_sizes(a, 2, (int64_t[]){1, 2}, 1, &n);
    CHECK(parts && n == 2 && parts[1]->shape[1] == 2);
    ampc_tensor_list_free(parts, n);
    CHECK(ampc_split_with_sizes(a, 2, (int64_t[]){1, 1}, 1, &n) == NULL && error_has(AMPC_E_RUNTIME, "sum exactly to 3"));
    parts = ampc_unbind(a, 1, &n);
    CHECK(parts && n == 3 && shape_is(parts[2], 1, (int64_t[]){2}) && at(parts[2], 1) == 5);
    ampc_tensor_list_free(parts, n);
    DECREF(empty, b, a);
}
