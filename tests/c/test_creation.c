/* test_creation.c: arange, linspace and eye of the C core (creation.c): lengths and values
 * against PyTorch's rules, strided fills, and their errors, under ASan/UBSan. */
#include "ctest.h"

static double at(const ampc_tensor *t, int64_t i) { return ctest_value(t, i); }

/* One case: `make` returns a new CPU tensor t, which must satisfy `cond`; t is freed after. */
#define CHECK_MADE(make, cond)            \
    do {                                  \
        ampc_tensor *t = (make);          \
        CHECK(t && (cond));               \
        ampc_tensor_decref(t);            \
    } while (0)

static ampc_device cpu(void) { return ampc_cpu_device(); }

CTEST(creation_arange) {
    CHECK_MADE(ampc_arange(0, 1, 0.25, AMPC_FLOAT32, cpu()), t->ndim == 1 && t->shape[0] == 4 && at(t, 3) == 0.75);
    CHECK_MADE(ampc_arange(10, 0, -3, AMPC_INT64, cpu()), t->shape[0] == 4 && at(t, 0) == 10 && at(t, 3) == 1);
    /* int64 truncates the bounds before counting: (0, 4.5, 1.5) -> (0, 4, 1) -> 4 elements */
    CHECK_MADE(ampc_arange(0, 4.5, 1.5, AMPC_INT64, cpu()), t->shape[0] == 4 && at(t, 3) == 3);
    /* other integral dtypes count in double but step by the truncated step: 0 2 4 6 */
    CHECK_MADE(ampc_arange(0, 10, 2.5, AMPC_UINT8, cpu()), t->shape[0] == 4 && at(t, 3) == 6);
    CHECK_MADE(ampc_arange(3, 3, 1, AMPC_FLOAT64, cpu()), t->shape[0] == 0);
    CHECK(ampc_arange(0, 1, 0, AMPC_FLOAT32, cpu()) == NULL && ampc_last_status() == AMPC_E_RUNTIME);
    CHECK(ampc_arange(0, 1, -1, AMPC_FLOAT32, cpu()) == NULL);
    CHECK(ampc_arange(0, INFINITY, 1, AMPC_FLOAT32, cpu()) == NULL);
    CHECK(ampc_arange(0, 5, 0.5, AMPC_INT64, cpu()) == NULL); /* step truncates to 0 */
    ampc_clear_error();
}

CTEST(creation_linspace) {
    CHECK_MADE(ampc_linspace(-1, 1, 5, AMPC_FLOAT64, cpu()),
               t->shape[0] == 5 && at(t, 0) == -1 && at(t, 1) == -0.5 && at(t, 2) == 0 && at(t, 4) == 1);
    /* PyTorch: 0 3 6 10 */
    CHECK_MADE(ampc_linspace(0, 10, 4, AMPC_INT64, cpu()), at(t, 1) == 3 && at(t, 2) == 6 && at(t, 3) == 10);
    CHECK_MADE(ampc_linspace(2, 7, 1, AMPC_FLOAT16, cpu()), t->shape[0] == 1 && at(t, 0) == 2);
    CHECK_MADE(ampc_linspace(2, 7, 0, AMPC_FLOAT32, cpu()), t->shape[0] == 0);
    CHECK(ampc_linspace(0, 1, -2, AMPC_FLOAT32, cpu()) == NULL);
    ampc_clear_error();
}

CTEST(creation_eye) {
    ampc_tensor *t = ampc_eye(3, 5, AMPC_BFLOAT16, cpu());
    CHECK(t && t->shape[0] == 3 && t->shape[1] == 5);
    int ok = 1;
    for (int64_t i = 0; i < 15; i++) ok &= at(t, i) == ((i / 5 == i % 5) ? 1.0 : 0.0);
    CHECK(ok);
    ampc_tensor_decref(t);
    CHECK_MADE(ampc_eye(4, 2, AMPC_BOOL, cpu()), at(t, 0) == 1 && at(t, 3) == 1 && at(t, 4) == 0 && at(t, 6) == 0);
    CHECK_MADE(ampc_eye(0, 0, AMPC_FLOAT32, cpu()), ampc_numel(t) == 0);
    CHECK(ampc_eye(-1, 2, AMPC_FLOAT32, cpu()) == NULL);
    CHECK(ampc_eye(2, -1, AMPC_FLOAT32, cpu()) == NULL);
    ampc_clear_error();
}
