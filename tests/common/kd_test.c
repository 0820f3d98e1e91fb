/* A thin CUnit harness: one suite per program, basic runner, exit 1 on any
 * failure, including a failed suite initialisation. */
#include "kd_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int kd_test_run(const char *suite, const kd_test_case_t *cases,
                int (*init)(void), int (*cleanup)(void))
{
        if (CU_initialize_registry() != CUE_SUCCESS)
                return 1;
        CU_pSuite s = CU_add_suite(suite, init, cleanup);
        if (!s)
                goto fail;
        /* KD_TEST_ONLY=name runs one test (for development). */
        const char *only = getenv("KD_TEST_ONLY");
        for (const kd_test_case_t *c = cases; c->name; c++)
                if ((!only || !strcmp(only, c->name)) &&
                    !CU_add_test(s, c->name, c->fn))
                        goto fail;
        CU_basic_set_mode(CU_BRM_VERBOSE);
        if (CU_basic_run_tests() != CUE_SUCCESS)
                goto fail;
        unsigned failures = CU_get_number_of_failures() +
                            CU_get_number_of_suites_failed() +
                            CU_get_number_of_tests_failed();
        unsigned ran = CU_get_number_of_tests_run();
        CU_cleanup_registry();
        if (ran == 0) {
                fprintf(stderr, "%s: no test ran\n", suite);
                return 1;
        }
        return failures ? 1 : 0;
fail:
        fprintf(stderr, "%s: CUnit error: %s\n", suite, CU_get_error_msg());
        CU_cleanup_registry();
        return 1;
}
