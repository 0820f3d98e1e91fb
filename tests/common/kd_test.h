/* A thin CUnit harness: one suite per test program, run with the basic
 * runner (which prints CUnit's summary), exit status 1 on any failure. */
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

#define KD_TEST(fn)                                                            \
        {                                                                      \
#fn, fn                                                        \
        }
#define KD_TEST_END                                                            \
        {                                                                      \
                NULL, NULL                                                     \
        }

#endif
