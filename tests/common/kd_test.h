/* SPDX-License-Identifier: Apache-2.0 */
/* A thin CUnit harness: one or more suites per test program, run with the
 * basic runner (which prints CUnit's summary), exit status 1 on any
 * failure. */
#ifndef KD_TEST_H
#define KD_TEST_H

#include <CUnit/Basic.h>
#include <CUnit/CUnit.h>

typedef struct kd_test_case {
        const char *name;
        void (*fn)(void);
} kd_test_case_t;

/* Runs the cases as suite `suite`. init/cleanup may be NULL; a failing
 * init fails the whole program (never a silent skip). Returns the exit
 * status for main. */
int kd_test_run(const char *suite, const kd_test_case_t *cases,
                int (*init)(void), int (*cleanup)(void));

/* One suite of a program with several. */
typedef struct kd_test_suite {
        const char *name;            /* NULL ends an array of suites */
        const kd_test_case_t *cases; /* borrowed; ends with KD_TEST_END */
        int (*init)(void);           /* once before; may be NULL */
        int (*cleanup)(void);        /* once after; may be NULL */
        void (*setup)(void);         /* before each case; may be NULL */
        void (*teardown)(void);      /* after each case; may be NULL */
} kd_test_suite_t;

/* Runs every suite of `suites` (ended by a NULL name) like kd_test_run.
 * KD_TEST_SUITE=name runs only that suite, KD_TEST_ONLY=name only the
 * cases of that name (for development). */
int kd_test_run_suites(const kd_test_suite_t *suites);

#define KD_TEST(fn)                                                            \
        {                                                                      \
#fn, fn                                                        \
        }
#define KD_TEST_END                                                            \
        {                                                                      \
                NULL, NULL                                                     \
        }

#endif
