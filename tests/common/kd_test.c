/* SPDX-License-Identifier: Apache-2.0 */
/* A thin CUnit harness: suites of a program, basic runner, exit 1 on any
 * failure, including a failed suite initialisation. */
#include "kd_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Registers suite d unless KD_TEST_SUITE names another; 0 on success. */
static int add_suite(const kd_test_suite_t *d)
{
        const char *suite = getenv("KD_TEST_SUITE");
        const char *only = getenv("KD_TEST_ONLY");
        if (suite && strcmp(suite, d->name))
                return 0;
        CU_pSuite s = CU_add_suite_with_setup_and_teardown(
            d->name, d->init, d->cleanup, d->setup, d->teardown);
        if (!s)
                return -1;
        for (const kd_test_case_t *c = d->cases; c->name; c++)
                if ((!only || !strcmp(only, c->name)) &&
                    !CU_add_test(s, c->name, c->fn))
                        return -1;
        return 0;
}

int kd_test_run(const char *suite, const kd_test_case_t *cases,
                int (*init)(void), int (*cleanup)(void))
{
        const kd_test_suite_t suites[] = {
            {suite, cases, init, cleanup, NULL, NULL},
            {NULL, NULL, NULL, NULL, NULL, NULL}};
        return kd_test_run_suites(suites);
}

int kd_test_run_suites(const kd_test_suite_t *suites)
{
        /* Named after the first suite in messages. */
        const char *suite = suites[0].name;
        if (CU_initialize_registry() != CUE_SUCCESS)
                return 1;
        for (const kd_test_suite_t *d = suites; d->name; d++)
                if (add_suite(d))
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
