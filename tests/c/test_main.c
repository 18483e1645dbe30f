/* test_main.c: runs every C unit test; exit status 1 when any check failed. The closing line
 * has the "N passed, N failed" form CI reads. */
#include <string.h>

#include "ctest.h"

int ctest_failures = 0;
const char *ctest_current = "";

#define TESTS(X) \
    X(dtype_promotion) X(half_roundtrip) X(bf16_rounding) X(views_share_storage) X(view_errors) \
    X(copy_casts) X(fill)

#define DECLARE(name) void ctest_##name(void);
TESTS(DECLARE)

int main(int argc, char **argv) {
    ampc_init_backends();
    int passed = 0, failed = 0;
#define RUN(name)                                                            \
    if (argc < 2 || strstr(#name, argv[1])) {                                \
        int before = ctest_failures;                                         \
        ctest_current = #name;                                               \
        ctest_##name();                                                      \
        if (ctest_failures == before) passed++; else failed++;               \
    }
    TESTS(RUN)
    printf("C core: %d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
