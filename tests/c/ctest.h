/* ctest.h: a minimal unit-test harness for the C core (no Python). Each test file defines
 * functions with CTEST(name) and lists them in tests/c/test_main.c. */
#ifndef AMPC_CTEST_H
#define AMPC_CTEST_H

#include <math.h>
#include <stdio.h>

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

#endif
