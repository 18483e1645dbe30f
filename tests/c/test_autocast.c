/* test_autocast.c: autocast in the C core without Python: rows found by ops.def name, the
 * policies' output dtypes, explicit dtypes, the weight cache's rules (grad history, views,
 * dtype switches) and the CUDA ban (on a tensor only labelled CUDA: the ban fires before any
 * data is touched). The per-row value checks live in tests/test_autocast.py. */
#include <string.h>

#include "core/derivatives.h"
#include "ctest.h"

static ampc_tensor *filled(int ndim, const int64_t *shape, double v, ampc_dtype dt) {
    return ampc_full(ndim, shape, ampc_scalar_float(v), dt, ampc_cpu_device());
}

static void region_begin(ampc_dtype dt) {
    ampc_autocast_set_enabled(AMPC_CPU, true);
    ampc_autocast_set_dtype(AMPC_CPU, dt);
    ampc_autocast_increment_nesting();
}

static void region_end(void) {
    if (ampc_autocast_decrement_nesting() == 0) ampc_autocast_clear_cache();
    ampc_autocast_set_enabled(AMPC_CPU, false);
    ampc_autocast_set_dtype(AMPC_CPU, AMPC_BFLOAT16);
}

CTEST(autocast_rows_by_name) {
    CHECK(ampc_op_find("mm") == AMPC_OP_MM);
    CHECK(ampc_op_find("not_an_op") == -1);
    CHECK(ampc_op_autocast_policy(AMPC_OP_SUM) == AMPC_AC_POLICY_FP32_DTYPE);
    CHECK(ampc_op_autocast_policy(AMPC_OP_NEG) == AMPC_AC_POLICY_NONE);
    /* the CPU's own lists (autocast_cpu.c): exp and sum run as called there, mm and mse_loss as on CUDA */
    CHECK(ampc_op_autocast_policy_on(AMPC_OP_EXP, AMPC_CUDA) == AMPC_AC_POLICY_FP32);
    CHECK(ampc_op_autocast_policy_on(AMPC_OP_EXP, AMPC_CPU) == AMPC_AC_POLICY_NONE);
    CHECK(ampc_op_autocast_policy_on(AMPC_OP_SUM, AMPC_CPU) == AMPC_AC_POLICY_NONE);
    CHECK(ampc_op_autocast_policy_on(AMPC_OP_MM, AMPC_CPU) == AMPC_AC_POLICY_LOWER);
    CHECK(ampc_op_autocast_policy_on(AMPC_OP_MSE_LOSS, AMPC_CPU) == AMPC_AC_POLICY_FP32);
    CHECK(ampc_op_autocast_policy_on(AMPC_OP_BCE_LOSS, AMPC_CPU) == AMPC_AC_POLICY_FP32);
    /* every row has a distinct name */
    for (int i = 0; i < AMPC_NUM_OPS; i++) CHECK(ampc_op_find(ampc_op_name((ampc_op)i)) == i);
}

CTEST(autocast_policies_output_dtypes) {
    int64_t s[2] = {3, 4};
    ampc_tensor *h = filled(2, s, 0.5, AMPC_FLOAT16), *f = filled(2, s, 0.25, AMPC_FLOAT32);
    region_begin(AMPC_FLOAT16);
    ampc_tensor *e = ampc_unary(AMPC_OP_EXP, h);              /* CPU region: not on the CPU's list */
    ampc_tensor *sq = ampc_unary(AMPC_OP_SQRT, h);                                      /* no row */
    ampc_tensor *sm = ampc_reduce(AMPC_OP_SUM, h, 0, NULL, false, AMPC_DTYPE_UNDEFINED); /* CUDA list only */
    ampc_tensor *sm16 = ampc_reduce(AMPC_OP_SUM, h, 0, NULL, false, AMPC_FLOAT16);       /* explicit */
    ampc_tensor *mean = ampc_reduce(AMPC_OP_MEAN, h, 0, NULL, false, AMPC_DTYPE_UNDEFINED);
    ampc_tensor *at = ampc_binary(AMPC_OP_ATAN2, h, f, ampc_scalar_none());              /* native promotion */
    ampc_tensor *ft = ampc_transpose(f, 0, 1);
    ampc_tensor *mm = ampc_mm(f, ft);                                                   /* lower */
    CHECK(ampc_unary_(AMPC_OP_EXP, h) == AMPC_OK && h->dtype == AMPC_FLOAT16);            /* in place: never cast */
    region_end();
    CHECK(e && e->dtype == AMPC_FLOAT16);
    CHECK(sq && sq->dtype == AMPC_FLOAT16);
    CHECK(sm && sm->dtype == AMPC_FLOAT16);
    CHECK(sm16 && sm16->dtype == AMPC_FLOAT16);
    CHECK(mean && mean->dtype == AMPC_FLOAT16);
    CHECK(at && at->dtype == AMPC_FLOAT32);
    CHECK(mm && mm->dtype == AMPC_FLOAT16);
    ampc_tensor *list[] = {h, f, e, sq, sm, sm16, mean, at, ft, mm};
    for (size_t i = 0; i < sizeof list / sizeof list[0]; i++) ampc_tensor_decref(list[i]);
}

CTEST(autocast_weight_cache_rules) {
    int64_t s[2] = {4, 4};
    ampc_tensor *x = filled(2, s, 1.0, AMPC_FLOAT32), *w = filled(2, s, 0.5, AMPC_FLOAT32);
    CHECK(ampc_set_requires_grad(w, true) == AMPC_OK);
    region_begin(AMPC_FLOAT16);
    /* under no_grad the cast has no history: not cached */
    bool previous = ampc_grad_mode_pause();
    ampc_tensor *y0 = ampc_mm(x, w);
    ampc_grad_mode_restore(previous);
    CHECK(ampc_autocast_cache_size() == 0);
    ampc_tensor *y1 = ampc_mm(x, w), *y2 = ampc_mm(x, w);
    CHECK(ampc_autocast_cache_size() == 1);
    CHECK(y1 && y1->grad_fn != NULL);
    /* a view of the weight is never cached */
    ampc_tensor *wt = ampc_transpose(w, 0, 1);
    ampc_tensor *y3 = ampc_mm(x, wt);
    CHECK(ampc_autocast_cache_size() == 1);
    /* a dtype switch inside the region gets its own cast (keyed by dtype) */
    ampc_autocast_set_dtype(AMPC_CPU, AMPC_BFLOAT16);
    ampc_tensor *y4 = ampc_mm(x, w);
    CHECK(y4 && y4->dtype == AMPC_BFLOAT16);
    CHECK(ampc_autocast_cache_size() == 2);
    region_end();
    CHECK(ampc_autocast_cache_size() == 0);
    ampc_tensor *list[] = {x, w, y0, y1, y2, wt, y3, y4};
    for (size_t i = 0; i < sizeof list / sizeof list[0]; i++) ampc_tensor_decref(list[i]);
}

CTEST(autocast_cuda_ban) {
    int64_t n = 4;
    ampc_tensor *p = filled(1, &n, 0.5, AMPC_FLOAT32), *t = filled(1, &n, 1.0, AMPC_FLOAT32);
    ampc_device cpu = p->device;
    p->device.type = AMPC_CUDA; /* a label only: the ban fires before anything reads the data */
    t->device.type = AMPC_CUDA;
    ampc_autocast_set_enabled(AMPC_CUDA, true);
    ampc_autocast_scope ac;
    int r = ampc_autocast_enter(AMPC_OP_BCE_LOSS, 2, (const ampc_tensor *[]){p, t}, false, &ac);
    ampc_autocast_set_enabled(AMPC_CUDA, false);
    CHECK(r == -1 && ampc_last_status() == AMPC_E_RUNTIME);
    CHECK(strstr(ampc_last_error(), "are unsafe to autocast") != NULL);
    p->device = cpu;
    t->device = cpu;
    /* on the CPU the same row runs in fp32 (PyTorch's CPU list) */
    ampc_autocast_set_enabled(AMPC_CPU, true);
    ampc_tensor *ph = ampc_to(p, AMPC_FLOAT16, cpu, false);
    r = ampc_autocast_enter(AMPC_OP_BCE_LOSS, 2, (const ampc_tensor *[]){ph, t}, false, &ac);
    CHECK(r == 1 && ac.t[0]->dtype == AMPC_FLOAT32);
    if (r == 1) ampc_autocast_exit(&ac, NULL);
    ampc_autocast_set_enabled(AMPC_CPU, false);
    DECREF(p, t, ph);
}
