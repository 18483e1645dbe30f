/* test_core.c: dtype promotion, fp16/bf16 rounding, views and copies in the C core. */
#include <stdlib.h>
#include <string.h>

#include "ctest.h"

/* The result dtype of two operands, each a dtype, a dim count and whether it is a Python number. */
static ampc_dtype result_type_of(ampc_dtype a, int a_dim, bool a_python, ampc_dtype b, int b_dim, bool b_python) {
    ampc_result_type_state st;
    ampc_result_type_init(&st);
    ampc_result_type_update(&st, a, a_dim, a_python);
    ampc_result_type_update(&st, b, b_dim, b_python);
    return ampc_result_type_finish(&st);
}

CTEST(dtype_promotion) {
    CHECK(ampc_promote_types(AMPC_FLOAT16, AMPC_BFLOAT16) == AMPC_FLOAT32);
    CHECK(ampc_promote_types(AMPC_UINT8, AMPC_INT32) == AMPC_INT32);
    CHECK(ampc_promote_types(AMPC_BOOL, AMPC_UINT8) == AMPC_UINT8);
    CHECK(ampc_promote_types(AMPC_INT64, AMPC_FLOAT16) == AMPC_FLOAT16);
    /* int tensor + Python float -> default float dtype */
    CHECK(result_type_of(AMPC_INT64, 1, false, AMPC_FLOAT64, 0, true) == AMPC_FLOAT32);
    /* fp16 tensor + 0-dim fp32 tensor stays fp16 */
    CHECK(result_type_of(AMPC_FLOAT16, 2, false, AMPC_FLOAT32, 0, false) == AMPC_FLOAT16);
    /* int tensor + 0-dim float64 tensor -> float64 */
    CHECK(result_type_of(AMPC_INT32, 1, false, AMPC_FLOAT64, 0, false) == AMPC_FLOAT64);
    /* bool tensor + Python int -> int64 */
    CHECK(result_type_of(AMPC_BOOL, 1, false, AMPC_INT64, 0, true) == AMPC_INT64);
    /* uint8 tensor + Python int stays uint8 */
    CHECK(result_type_of(AMPC_UINT8, 1, false, AMPC_INT64, 0, true) == AMPC_UINT8);
}

CTEST(half_roundtrip) {
    /* every finite half converts to float and back unchanged */
    for (uint32_t h = 0; h < 0x10000u; h++) {
        if ((h & 0x7c00u) == 0x7c00u && (h & 0x3ffu)) continue; /* NaN payloads checked below */
        float f = ampc_half_to_f32((ampc_half)h);
        if (ampc_f32_to_half(f) != h) {
            CHECK(ampc_f32_to_half(f) == h);
            break;
        }
    }
    CHECK(ampc_f32_to_half(65504.0f) == 0x7bffu);
    CHECK(ampc_f32_to_half(65519.0f) == 0x7bffu);
    CHECK(ampc_f32_to_half(65520.0f) == 0x7c00u);
    CHECK(ampc_f32_to_half(-1e10f) == 0xfc00u);
    CHECK((ampc_f32_to_half(nanf("")) & 0x7fffu) > 0x7c00u);
    CHECK(ampc_f32_to_half(5.9604644775390625e-08f) == 1);  /* smallest subnormal */
    CHECK(ampc_f32_to_half(2.98023223876953125e-08f) == 0); /* half of it: ties to even */
}

CTEST(bf16_rounding) {
    CHECK(ampc_f32_to_bf16(1.0f) == 0x3f80u);
    CHECK(ampc_f32_to_bf16(ampc_bits_f32(0x3f808000u)) == 0x3f80u); /* tie -> even */
    CHECK(ampc_f32_to_bf16(ampc_bits_f32(0x3f818000u)) == 0x3f82u); /* tie -> even (up) */
    CHECK(ampc_f32_to_bf16(ampc_bits_f32(0x7f7fffffu)) == 0x7f80u); /* overflow to inf */
    CHECK((ampc_f32_to_bf16(nanf("")) & 0x7fffu) > 0x7f80u);
}

CTEST(views_share_storage) {
    int64_t shape[2] = {3, 4};
    ampc_tensor *t = ampc_zeros(2, shape, AMPC_FLOAT32, ampc_cpu_device());
    CHECK(t != NULL);
    float *p = (float *)ampc_data_ptr(t);
    for (int i = 0; i < 12; i++) p[i] = (float)i;
    ampc_tensor *tt = ampc_transpose(t, 0, 1);
    CHECK(tt->shape[0] == 4 && tt->shape[1] == 3 && !ampc_is_contiguous(tt));
    CHECK(tt->storage == t->storage && tt->view_base == t);
    ampc_tensor *c = ampc_contiguous(tt);
    CHECK(ampc_is_contiguous(c) && c->storage != t->storage);
    float *q = (float *)ampc_data_ptr(c);
    CHECK(q[1] == 4.0f && q[3] == 1.0f);
    int64_t flat[1] = {-1};
    ampc_tensor *v = ampc_view(t, 1, flat);
    CHECK(v && v->shape[0] == 12);
    ampc_tensor *s = ampc_slice(t, 1, 1, 4, 2);
    CHECK(s->shape[1] == 2 && s->offset == 1 && s->strides[1] == 2);
    ampc_tensor *r = ampc_reshape(tt, 1, flat); /* not viewable: copies */
    CHECK(r && r->storage != t->storage);
    ampc_tensor *u = ampc_unsqueeze(t, -1);
    CHECK(u->ndim == 3 && u->shape[2] == 1);
    int64_t eshape[3] = {2, 3, 4};
    ampc_tensor *e = ampc_expand(t, 3, eshape);
    CHECK(e && e->strides[0] == 0);
    ampc_tensor *all[] = {tt, c, v, s, r, u, e, t};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++) ampc_tensor_decref(all[i]);
}

CTEST(view_errors) {
    int64_t shape[2] = {3, 4};
    ampc_tensor *t = ampc_zeros(2, shape, AMPC_FLOAT32, ampc_cpu_device());
    int64_t bad[1] = {5};
    CHECK(ampc_view(t, 1, bad) == NULL && ampc_last_status() == AMPC_E_RUNTIME);
    CHECK(strstr(ampc_last_error(), "invalid for input of size 12") != NULL);
    CHECK(ampc_transpose(t, 0, 2) == NULL && ampc_last_status() == AMPC_E_INDEX);
    ampc_tensor *tt = ampc_transpose(t, 0, 1);
    int64_t flat[1] = {12};
    CHECK(ampc_view(tt, 1, flat) == NULL);
    ampc_tensor_decref(tt);
    ampc_tensor_decref(t);
}

CTEST(copy_casts) {
    int64_t shape[1] = {6};
    ampc_tensor *f = ampc_empty(1, shape, AMPC_FLOAT32, ampc_cpu_device());
    float vals[6] = {1.5f, -2.25f, 70000.0f, 0.0f, 3.0f, -0.0f};
    memcpy(ampc_data_ptr(f), vals, sizeof vals);
    for (int dt = 0; dt < AMPC_NUM_DTYPES; dt++) {
        ampc_tensor *c = ampc_to(f, (ampc_dtype)dt, ampc_cpu_device(), false);
        CHECK(c != NULL && c->dtype == dt);
        ampc_scalar s;
        CHECK(ampc_get_scalar(c, 0, &s) == AMPC_OK);
        if (dt == AMPC_BOOL) CHECK(s.v.b);
        else if (ampc_dtype_is_floating((ampc_dtype)dt)) CHECK(s.v.f == 1.5);
        else CHECK(s.v.i == 1);
        if (dt == AMPC_FLOAT16) {
            CHECK(ampc_get_scalar(c, 2, &s) == AMPC_OK && isinf(s.v.f));
        }
        ampc_tensor_decref(c);
    }
    ampc_tensor_decref(f);
}

CTEST(fill) {
    int64_t shape[2] = {4, 5};
    ampc_tensor *t = ampc_full(2, shape, ampc_scalar_float(2.5), AMPC_BFLOAT16, ampc_cpu_device());
    ampc_scalar s;
    CHECK(ampc_get_scalar(t, 19, &s) == AMPC_OK && s.v.f == 2.5);
    ampc_tensor *col = ampc_select(t, 1, 2);
    CHECK(ampc_fill_(col, ampc_scalar_int(7)) == AMPC_OK);
    CHECK(ampc_get_scalar(t, 7, &s) == AMPC_OK && s.v.f == 7.0);
    CHECK(ampc_get_scalar(t, 8, &s) == AMPC_OK && s.v.f == 2.5);
    ampc_tensor_decref(col);
    ampc_tensor_decref(t);
}

/* resize_ grows the shared storage in place: the old bytes stay as the prefix and a view made
 * before sees the new memory (ASan checks the swap of the two allocations). */
CTEST(resize_grows_storage_in_place) {
    int64_t n = 6;
    ampc_tensor *t = ampc_zeros(1, &n, AMPC_FLOAT32, ampc_cpu_device());
    float *p = (float *)ampc_data_ptr(t);
    for (int i = 0; i < 6; i++) p[i] = (float)i;
    ampc_tensor *v = ampc_narrow(t, 0, 1, 2);
    int64_t shape[2] = {3, 4};
    CHECK(ampc_resize_(t, 2, shape) == AMPC_OK);
    CHECK(t->ndim == 2 && t->strides[0] == 4 && t->strides[1] == 1 && t->storage->nbytes >= 48);
    float *q = (float *)ampc_data_ptr(t);
    CHECK(q[5] == 5.0f);
    q[1] = 9.0f;
    CHECK(*(float *)ampc_data_ptr(v) == 9.0f && v->storage == t->storage);
    int64_t small = 2;
    CHECK(ampc_resize_(t, 1, &small) == AMPC_OK && t->shape[0] == 2);
    int64_t neg = -1;
    CHECK(ampc_resize_(t, 1, &neg) == AMPC_E_RUNTIME);
    ampc_tensor_decref(v);
    ampc_tensor_decref(t);
}
