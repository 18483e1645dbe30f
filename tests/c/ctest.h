/* ctest.h: a minimal unit-test harness for the C core (no Python). Each test file defines
 * functions with CTEST(name) and lists them in tests/c/test_main.c. */
#ifndef AMPC_CTEST_H
#define AMPC_CTEST_H

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/ampc.h"

extern int ctest_failures;
extern const char *ctest_current;

#define CTEST(name) void ctest_##name(void)

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "%s:%d: [%s] CHECK failed: %s (last error: %s)\n", __FILE__, __LINE__, \
                    ctest_current, #cond, ampc_last_error());                                      \
            ctest_failures++;                                                                      \
        }                                                                                          \
    } while (0)

#define CHECK_CLOSE(a, b, tol) CHECK(fabs((double)(a) - (double)(b)) <= (tol) * (1.0 + fabs((double)(b))))

/* Shared by the test files: a CPU tensor holding a copy of `values` (ampc_nbytes of them, laid out
 * contiguously in dtype dt), the double value of element i (NaN for a NULL tensor or a failed
 * read, so a CHECK on it fails instead of crashing), and DECREF(a, b, ...) for the tensors a test
 * made (NULL entries skipped, as ampc_tensor_decref does). */
static inline ampc_tensor *ctest_tensor(ampc_dtype dt, int ndim, const int64_t *shape, const void *values) {
    ampc_tensor *t = ampc_empty(ndim, shape, dt, ampc_cpu_device());
    if (t) memcpy(ampc_data_ptr(t), values, ampc_nbytes(t));
    return t;
}

static inline ampc_tensor *ctest_vec(ampc_dtype dt, int64_t n, const void *values) {
    return ctest_tensor(dt, 1, &n, values);
}

static inline double ctest_value(const ampc_tensor *t, int64_t i) {
    ampc_scalar s;
    if (!t || ampc_get_scalar(t, i, &s) != AMPC_OK) return NAN;
    return ampc_scalar_to_double(s);
}

static inline void ctest_decref_all(ampc_tensor *const *ts, size_t n) {
    for (size_t i = 0; i < n; i++) ampc_tensor_decref(ts[i]);
}

#define DECREF(...) \
    ctest_decref_all((ampc_tensor *[]){__VA_ARGS__}, sizeof((ampc_tensor *[]){__VA_ARGS__}) / sizeof(ampc_tensor *))

#endif
