/* test_elementwise.c: the elementwise frontends and CPU kernels without Python: values,
 * promotion, scalar operands, broadcasting and strides, in-place rules and errors. Runs under
 * ASan/UBSan, so the integer edge cases (INT64_MIN / -1, overflow) double as UB checks. */
#include <stdlib.h>
#include <string.h>

#include "ctest.h"

static ampc_tensor *vec_f32(int n, const float *v) { return ctest_vec(AMPC_FLOAT32, n, v); }
static ampc_tensor *vec_i64(int n, const int64_t *v) { return ctest_vec(AMPC_INT64, n, v); }
static double elem(const ampc_tensor *t, int64_t i) { return ctest_value(t, i); }

CTEST(ew_add_values_and_alpha) {
    float a[5] = {1, 2, 3, 4, 5}, b[5] = {10, 20, 30, 40, 50};
    ampc_tensor *ta = vec_f32(5, a), *tb = vec_f32(5, b);
    ampc_tensor *r = ampc_binary(AMPC_OP_ADD, ta, tb, ampc_scalar_none());
    CHECK(r && r->dtype == AMPC_FLOAT32 && r->shape[0] == 5);
    for (int i = 0; r && i < 5; i++) CHECK(elem(r, i) == a[i] + b[i]);
    ampc_tensor_decref(r);
    r = ampc_binary(AMPC_OP_SUB, ta, tb, ampc_scalar_float(0.5));
    for (int i = 0; r && i < 5; i++) CHECK(elem(r, i) == a[i] - 0.5f * b[i]);
    ampc_tensor_decref(r);
    /* integer alpha must not be a float */
    int64_t iv[2] = {1, 2};
    ampc_tensor *ti = vec_i64(2, iv);
    CHECK(ampc_binary(AMPC_OP_ADD, ti, ti, ampc_scalar_float(1.5)) == NULL);
    CHECK(strstr(ampc_last_error(), "alpha must not be a floating point") != NULL);
    DECREF(ti, ta, tb);
}

CTEST(ew_scalar_operands_and_promotion) {
    int64_t iv[3] = {1, -2, 3};
    ampc_tensor *ti = vec_i64(3, iv);
    ampc_tensor *half = ampc_wrap_scalar(ampc_scalar_float(0.5), ampc_cpu_device());
    ampc_tensor *two = ampc_wrap_scalar(ampc_scalar_int(2), ampc_cpu_device());
    /* int tensor * Python float -> float32 */
    ampc_tensor *r = ampc_binary(AMPC_OP_MUL, ti, half, ampc_scalar_none());
    CHECK(r && r->dtype == AMPC_FLOAT32);
    CHECK(r && elem(r, 1) == -1.0);
    ampc_tensor_decref(r);
    /* Python int on the left of a non-commutative op */
    r = ampc_binary(AMPC_OP_SUB, two, ti, ampc_scalar_none());
    CHECK(r && r->dtype == AMPC_INT64 && elem(r, 0) == 1 && elem(r, 1) == 4);
    ampc_tensor_decref(r);
    /* scalar on the left of a comparison: 2 < x is x > 2 */
    r = ampc_binary(AMPC_OP_LT, two, ti, ampc_scalar_none());
    CHECK(r && r->dtype == AMPC_BOOL && elem(r, 0) == 0 && elem(r, 2) == 1);
    ampc_tensor_decref(r);
    /* true division of ints gives float32 */
    r = ampc_binary(AMPC_OP_DIV, ti, two, ampc_scalar_none());
    CHECK(r && r->dtype == AMPC_FLOAT32 && elem(r, 1) == -1.0);
    ampc_tensor_decref(r);
    /* floor division keeps int64 and floors */
    int64_t dv[3] = {7, -7, 2};
    ampc_tensor *td = vec_i64(3, dv);
    r = ampc_div_mode(td, two, 2);
    CHECK(r && r->dtype == AMPC_INT64 && elem(r, 0) == 3 && elem(r, 1) == -4);
    ampc_tensor_decref(r);
    r = ampc_div_mode(td, two, 1);
    CHECK(r && elem(r, 1) == -3);
    ampc_tensor_decref(r);
    ampc_tensor *m3 = ampc_wrap_scalar(ampc_scalar_int(-3), ampc_cpu_device());
    r = ampc_binary(AMPC_OP_REMAINDER, td, m3, ampc_scalar_none()); /* Python's %: sign of the divisor */
    CHECK(r && elem(r, 0) == -2 && elem(r, 1) == -1 && elem(r, 2) == -1);
    DECREF(r, m3, td, half, two, ti);
}

CTEST(ew_integer_edge_cases) {
    int64_t v[4] = {INT64_MIN, 5, -5, INT64_MAX};
    ampc_tensor *t = vec_i64(4, v);
    ampc_tensor *m1 = ampc_wrap_scalar(ampc_scalar_int(-1), ampc_cpu_device());
    ampc_tensor *zero = ampc_wrap_scalar(ampc_scalar_int(0), ampc_cpu_device());
    ampc_tensor *r = ampc_div_mode(t, m1, 2); /* INT64_MIN // -1 wraps, no trap */
    CHECK(r && elem(r, 1) == -5);
    if (r) CHECK(((int64_t *)ampc_data_ptr(r))[0] == INT64_MIN);
    ampc_tensor_decref(r);
    r = ampc_binary(AMPC_OP_REMAINDER, t, m1, ampc_scalar_none());
    CHECK(r && elem(r, 0) == 0);
    ampc_tensor_decref(r);
    r = ampc_binary(AMPC_OP_ADD, t, t, ampc_scalar_none()); /* wraps */
    CHECK(r != NULL);
    ampc_tensor_decref(r);
    r = ampc_unary(AMPC_OP_NEG, t);
    CHECK(r && elem(r, 1) == -5);
    ampc_tensor_decref(r);
    CHECK(ampc_div_mode(t, zero, 2) == NULL);
    CHECK(strcmp(ampc_last_error(), "ZeroDivisionError") == 0);
    CHECK(ampc_binary(AMPC_OP_REMAINDER, t, zero, ampc_scalar_none()) == NULL);
    /* pow: negative Python int exponent on ints is an error; 3 ** 40 wraps */
    CHECK(ampc_binary(AMPC_OP_POW, t, m1, ampc_scalar_none()) == NULL);
    CHECK(strstr(ampc_last_error(), "Integers to negative integer powers are not allowed.") != NULL);
    ampc_tensor *forty = ampc_wrap_scalar(ampc_scalar_int(40), ampc_cpu_device());
    r = ampc_binary(AMPC_OP_POW, t, forty, ampc_scalar_none());
    CHECK(r != NULL);
    DECREF(r, forty, zero, m1, t);
}

CTEST(ew_broadcast_and_strides) {
    /* (3, 4) + (4,) and (3, 4) + (3, 1), with a transposed operand */
    int64_t shape[2] = {4, 3};
    ampc_tensor *base = ampc_empty(2, shape, AMPC_FLOAT32, ampc_cpu_device());
    float *p = (float *)ampc_data_ptr(base);
    for (int i = 0; i < 12; i++) p[i] = (float)i;
    ampc_tensor *x = ampc_transpose(base, 0, 1); /* (3, 4), x[i][j] = 3j + i */
    float rv[4] = {100, 200, 300, 400}, cv[3] = {1000, 2000, 3000};
    ampc_tensor *row = vec_f32(4, rv), *col0 = vec_f32(3, cv);
    int64_t cs[2] = {3, 1};
    ampc_tensor *col = ampc_view(col0, 2, cs);
    ampc_tensor *r1 = ampc_binary(AMPC_OP_ADD, x, row, ampc_scalar_none());
    ampc_tensor *r2 = ampc_binary(AMPC_OP_MUL, x, col, ampc_scalar_none());
    CHECK(r1 && r1->ndim == 2 && r1->shape[0] == 3 && r1->shape[1] == 4);
    for (int i = 0; r1 && r2 && i < 3; i++)
        for (int j = 0; j < 4; j++) {
            CHECK(elem(r1, i * 4 + j) == 3 * j + i + rv[j]);
            CHECK(elem(r2, i * 4 + j) == (3 * j + i) * cv[i]);
        }
    /* zero-size */
    int64_t zs[2] = {0, 4};
    ampc_tensor *z = ampc_empty(2, zs, AMPC_FLOAT32, ampc_cpu_device());
    ampc_tensor *rz = ampc_binary(AMPC_OP_ADD, z, row, ampc_scalar_none());
    CHECK(rz && rz->shape[0] == 0 && rz->shape[1] == 4);
    /* shapes that do not broadcast */
    CHECK(ampc_binary(AMPC_OP_ADD, x, col0, ampc_scalar_none()) == NULL);
    CHECK(strstr(ampc_last_error(), "must match the size of tensor b") != NULL);
    DECREF(rz, z, r1, r2, col, col0, row, x, base);
}

CTEST(ew_unary_values) {
    float v[6] = {-2.5f, -0.5f, 0.0f, 0.5f, 1.5f, 2.5f};
    ampc_tensor *t = vec_f32(6, v);
    struct {
        ampc_op op;
        double (*ref)(double);
    } cases[] = {{AMPC_OP_EXP, exp}, {AMPC_OP_TANH, tanh}, {AMPC_OP_SIN, sin}, {AMPC_OP_ERF, erf},
                 {AMPC_OP_FLOOR, floor}, {AMPC_OP_CEIL, ceil}, {AMPC_OP_ROUND, nearbyint}, {AMPC_OP_ABS, fabs}};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        ampc_tensor *r = ampc_unary(cases[c].op, t);
        CHECK(r != NULL);
        for (int i = 0; r && i < 6; i++) CHECK_CLOSE(elem(r, i), cases[c].ref(v[i]), 1e-6);
        ampc_tensor_decref(r);
    }
    ampc_tensor *g = ampc_gelu(t, false), *gt = ampc_gelu(t, true), *sp = ampc_elementwise_params(AMPC_OP_SOFTPLUS, t, NULL, ampc_scalar_float(2.0), ampc_scalar_float(1.0));
    for (int i = 0; i < 6; i++) {
        double x = v[i];
        CHECK_CLOSE(elem(g, i), 0.5 * x * (1 + erf(x / sqrt(2.0))), 1e-6);
        CHECK_CLOSE(elem(gt, i), 0.5 * x * (1 + tanh(sqrt(2 / 3.14159265358979323846) * (x + 0.044715 * x * x * x))), 1e-6);
        CHECK_CLOSE(elem(sp, i), 2 * x > 1 ? x : log1p(exp(2 * x)) / 2, 1e-6);
    }
    DECREF(g, gt, sp);
    ampc_tensor *c = ampc_clamp(t, ampc_scalar_float(-1), ampc_scalar_none());
    CHECK(c && elem(c, 0) == -1 && elem(c, 5) == 2.5);
    ampc_tensor_decref(c);
    CHECK(ampc_clamp(t, ampc_scalar_none(), ampc_scalar_none()) == NULL);
    ampc_tensor_decref(t);
    /* float-only op of ints promotes; gelu of ints is not implemented */
    int64_t iv[2] = {0, 1};
    ampc_tensor *ti = vec_i64(2, iv);
    ampc_tensor *e = ampc_unary(AMPC_OP_EXP, ti);
    CHECK(e && e->dtype == AMPC_FLOAT32 && fabs(elem(e, 1) - 2.71828182845904523536) < 1e-6);
    ampc_tensor_decref(e);
    CHECK(ampc_gelu(ti, false) == NULL && ampc_last_status() == AMPC_E_NOT_IMPLEMENTED);
    ampc_tensor *nan_check = ampc_unary(AMPC_OP_ISNAN, ti);
    CHECK(nan_check && nan_check->dtype == AMPC_BOOL && elem(nan_check, 0) == 0);
    ampc_tensor_decref(nan_check);
    ampc_tensor_decref(ti);
}

CTEST(ew_fp16_bf16_opmath) {
    /* fp16 tensor + Python float: computed in float with the unrounded scalar, rounded once */
    int64_t shape[1] = {2};
    ampc_tensor *h = ampc_empty(1, shape, AMPC_FLOAT16, ampc_cpu_device());
    ampc_half *hp = (ampc_half *)ampc_data_ptr(h);
    hp[0] = ampc_f32_to_half(0.1f);
    hp[1] = ampc_f32_to_half(1.0f);
    ampc_tensor *s = ampc_wrap_scalar(ampc_scalar_float(0.1), ampc_cpu_device());
    ampc_tensor *r = ampc_binary(AMPC_OP_ADD, h, s, ampc_scalar_none());
    CHECK(r && r->dtype == AMPC_FLOAT16);
    if (r) CHECK(((ampc_half *)ampc_data_ptr(r))[1] == ampc_f32_to_half(ampc_half_to_f32(hp[1]) + 0.1f));
    ampc_tensor_decref(r);
    /* comparisons round the scalar to fp16 first: fp16(0.1) == 0.1 holds, as in torch */
    r = ampc_binary(AMPC_OP_EQ, h, s, ampc_scalar_none());
    CHECK(r && elem(r, 0) == 1 && elem(r, 1) == 0);
    ampc_tensor_decref(r);
    ampc_tensor *bf = ampc_to(h, AMPC_BFLOAT16, ampc_cpu_device(), false);
    r = ampc_unary(AMPC_OP_SIGMOID, bf);
    CHECK(r && r->dtype == AMPC_BFLOAT16);
    if (r) CHECK(((ampc_bfloat16 *)ampc_data_ptr(r))[1] == ampc_f32_to_bf16(1.0f / (1.0f + expf(-1.0f))));
    DECREF(r, bf, s, h);
}

CTEST(ew_inplace_rules) {
    float v[3] = {1, 2, 3};
    ampc_tensor *f = vec_f32(3, v);
    int64_t iv[3] = {1, 2, 3};
    ampc_tensor *i = vec_i64(3, iv);
    int64_t version = f->storage->version;
    CHECK(ampc_binary_(AMPC_OP_MUL, f, f, ampc_scalar_none()) == AMPC_OK);
    CHECK(f->storage->version == version + 1);
    CHECK(elem(f, 2) == 9);
    /* int tensor += float tensor cannot be cast back */
    CHECK(ampc_binary_(AMPC_OP_ADD, i, f, ampc_scalar_none()) != AMPC_OK);
    CHECK(strstr(ampc_last_error(), "result type Float can't be cast to the desired output type Long") != NULL);
    CHECK(ampc_unary_(AMPC_OP_EXP, i) != AMPC_OK);
    /* float tensor += int tensor is fine (int64 -> float32 computed in float32) */
    CHECK(ampc_binary_(AMPC_OP_ADD, f, i, ampc_scalar_none()) == AMPC_OK && elem(f, 0) == 2);
    /* the output must have the broadcast shape */
    int64_t s2[2] = {2, 3};
    ampc_tensor *big = ampc_zeros(2, s2, AMPC_FLOAT32, ampc_cpu_device());
    CHECK(ampc_binary_(AMPC_OP_ADD, f, big, ampc_scalar_none()) != AMPC_OK);
    CHECK(strstr(ampc_last_error(), "doesn't match the broadcast shape") != NULL);
    CHECK(ampc_binary_(AMPC_OP_ADD, big, f, ampc_scalar_none()) == AMPC_OK && elem(big, 5) == 12);
    /* expanded outputs and partially overlapping inputs are refused */
    ampc_tensor *ex = ampc_expand(f, 2, s2);
    CHECK(ampc_binary_(AMPC_OP_ADD, ex, big, ampc_scalar_none()) != AMPC_OK);
    CHECK(strstr(ampc_last_error(), "more than one element of the written-to tensor") != NULL);
    ampc_tensor *head = ampc_narrow(f, 0, 0, 2), *tail = ampc_narrow(f, 0, 1, 2);
    CHECK(ampc_binary_(AMPC_OP_ADD, head, tail, ampc_scalar_none()) != AMPC_OK);
    CHECK(strstr(ampc_last_error(), "some elements of the input tensor") != NULL);
    /* i.clamp_ / neg_ stay int */
    CHECK(ampc_clamp_(i, ampc_scalar_int(2), ampc_scalar_none()) == AMPC_OK && elem(i, 0) == 2);
    CHECK(ampc_unary_(AMPC_OP_NEG, i) == AMPC_OK && elem(i, 2) == -3);
    DECREF(head, tail, ex, big, i, f);
}

CTEST(ew_where) {
    int64_t shape[1] = {4};
    ampc_tensor *cond = ampc_empty(1, shape, AMPC_BOOL, ampc_cpu_device());
    bool *cp = (bool *)ampc_data_ptr(cond);
    cp[0] = true, cp[1] = false, cp[2] = true, cp[3] = false;
    float v[4] = {1, 2, 3, 4};
    ampc_tensor *x = vec_f32(4, v);
    ampc_tensor *zero = ampc_wrap_scalar(ampc_scalar_float(0.0), ampc_cpu_device());
    ampc_tensor *r = ampc_where(cond, x, zero);
    CHECK(r && r->dtype == AMPC_FLOAT32 && elem(r, 0) == 1 && elem(r, 1) == 0 && elem(r, 2) == 3);
    ampc_tensor_decref(r);
    r = ampc_where(cond, zero, x);
    CHECK(r && elem(r, 0) == 0 && elem(r, 1) == 2);
    ampc_tensor_decref(r);
    int64_t iv[4] = {10, 20, 30, 40};
    ampc_tensor *ti = vec_i64(4, iv);
    r = ampc_where(cond, ti, x); /* promotes to float32 */
    CHECK(r && r->dtype == AMPC_FLOAT32 && elem(r, 0) == 10 && elem(r, 1) == 2);
    ampc_tensor_decref(r);
    CHECK(ampc_where(x, x, x) == NULL);
    CHECK(strstr(ampc_last_error(), "where expected condition to be a boolean tensor") != NULL);
    DECREF(ti, zero, x, cond);
}

CTEST(ew_large_parallel) {
    /* big enough for the OpenMP split; checks every element */
    int64_t n = 100003;
    ampc_tensor *a = ampc_empty(1, &n, AMPC_FLOAT32, ampc_cpu_device());
    float *p = (float *)ampc_data_ptr(a);
    for (int64_t i = 0; i < n; i++) p[i] = (float)(i % 1000);
    ampc_tensor *two = ampc_wrap_scalar(ampc_scalar_float(2.0), ampc_cpu_device());
    ampc_tensor *r = ampc_binary(AMPC_OP_MUL, a, two, ampc_scalar_none());
    int bad = 0;
    const float *q = (const float *)ampc_data_ptr(r);
    for (int64_t i = 0; i < n; i++) bad += q[i] != 2.0f * (float)(i % 1000);
    CHECK(bad == 0);
    DECREF(r, two, a);
}
