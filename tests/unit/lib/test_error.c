/* SPDX-License-Identifier: Apache-2.0 */
/* Error codes and fate names. */
#include <string.h>

#include <kdelay/error.h>
#include <kdelay/kdelay.h>

#include "kd_test.h"

static void test_every_code_named(void)
{
        for (int i = 0; i < KDELAY_ERR__COUNT; i++) {
                kdelay_err_t e = (kdelay_err_t)i;
                const char *name = kdelay_err_name(e);
                const char *desc = kdelay_err_str(e);
                CU_ASSERT_PTR_NOT_NULL_FATAL(name);
                CU_ASSERT_PTR_NOT_NULL_FATAL(desc);
                CU_ASSERT_EQUAL(strncmp(name, "KDELAY_", 7), 0);
                CU_ASSERT_TRUE(strlen(name) > 7);
                CU_ASSERT_TRUE(strlen(desc) > 0);
                /* Not the out-of-range answers. */
                CU_ASSERT_TRUE(strstr(name, "UNKNOWN") == NULL ||
                               e == KDELAY_ERR_UNKNOWN_PROPERTY);
                CU_ASSERT_STRING_NOT_EQUAL(desc, "unknown error");
        }
}

static void test_names_unique(void)
{
        for (int i = 0; i < KDELAY_ERR__COUNT; i++)
                for (int j = i + 1; j < KDELAY_ERR__COUNT; j++) {
                        CU_ASSERT_STRING_NOT_EQUAL(
                            kdelay_err_name((kdelay_err_t)i),
                            kdelay_err_name((kdelay_err_t)j));
                        CU_ASSERT_STRING_NOT_EQUAL(
                            kdelay_err_str((kdelay_err_t)i),
                            kdelay_err_str((kdelay_err_t)j));
                }
}

static void test_names_match_enum(void)
{
        /* Spot checks that the table is indexed right. */
        CU_ASSERT_STRING_EQUAL(kdelay_err_name(KDELAY_OK), "KDELAY_OK");
        CU_ASSERT_STRING_EQUAL(kdelay_err_name(KDELAY_ERR_INVALID_ARG),
                               "KDELAY_ERR_INVALID_ARG");
        CU_ASSERT_STRING_EQUAL(kdelay_err_name(KDELAY_ERR_CONFIG),
                               "KDELAY_ERR_CONFIG");
        CU_ASSERT_STRING_EQUAL(kdelay_err_name(KDELAY_ERR_UNKNOWN_PROPERTY),
                               "KDELAY_ERR_UNKNOWN_PROPERTY");
        CU_ASSERT_STRING_EQUAL(kdelay_err_name(KDELAY_ERR_KAFKA),
                               "KDELAY_ERR_KAFKA");
        CU_ASSERT_STRING_EQUAL(kdelay_err_name(KDELAY_ERR_TIMED_OUT),
                               "KDELAY_ERR_TIMED_OUT");
        CU_ASSERT_STRING_EQUAL(kdelay_err_name(KDELAY_ERR_TOO_LATE),
                               "KDELAY_ERR_TOO_LATE");
        CU_ASSERT_STRING_EQUAL(kdelay_err_name(KDELAY_ERR_MALFORMED),
                               "KDELAY_ERR_MALFORMED");
        CU_ASSERT_STRING_EQUAL(kdelay_err_name(KDELAY_ERR_NOT_FOUND),
                               "KDELAY_ERR_NOT_FOUND");
        CU_ASSERT_STRING_EQUAL(
            kdelay_err_name((kdelay_err_t)(KDELAY_ERR__COUNT - 1)),
            "KDELAY_ERR_RECONCILING");
        CU_ASSERT_STRING_EQUAL(kdelay_err_name(KDELAY_ERR_DEAD),
                               "KDELAY_ERR_DEAD");
}

static void test_out_of_range(void)
{
        static const int codes[] = {KDELAY_ERR__COUNT, KDELAY_ERR__COUNT + 1,
                                    1000, -1, -1000};
        for (size_t i = 0; i < sizeof(codes) / sizeof(codes[0]); i++) {
                kdelay_err_t e = (kdelay_err_t)codes[i];
                const char *name = kdelay_err_name(e);
                const char *desc = kdelay_err_str(e);
                CU_ASSERT_PTR_NOT_NULL_FATAL(name);
                CU_ASSERT_PTR_NOT_NULL_FATAL(desc);
                CU_ASSERT_STRING_EQUAL(name, "KDELAY_ERR_UNKNOWN");
                CU_ASSERT_PTR_NOT_NULL(strstr(desc, "unknown"));
                CU_ASSERT_FALSE(kdelay_err_is_retriable(e));
        }
}

static void test_retriable(void)
{
        static const kdelay_err_t yes[] =
            {
                KDELAY_ERR_KAFKA,       KDELAY_ERR_MYSQL,
                KDELAY_ERR_TIMED_OUT,   KDELAY_ERR_QUEUE_FULL,
                KDELAY_ERR_RECONCILING, /* a cancel after an outage: retry */
            };
        static const kdelay_err_t no[] = {
            KDELAY_OK,
            KDELAY_ERR_INVALID_ARG,
            KDELAY_ERR_INVALID_ID,
            KDELAY_ERR_INVALID_TOPIC,
            KDELAY_ERR_INVALID_TIME,
            KDELAY_ERR_INVALID_DURATION,
            KDELAY_ERR_INVALID_TIERS,
            KDELAY_ERR_INVALID_HEADER,
            KDELAY_ERR_CONFIG,
            KDELAY_ERR_UNKNOWN_PROPERTY,
            KDELAY_ERR_NOT_CONFIGURED,
            KDELAY_ERR_TOO_LATE,
            KDELAY_ERR_MALFORMED,
            KDELAY_ERR_NOT_FOUND,
        };
        for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++)
                CU_ASSERT_TRUE(kdelay_err_is_retriable(yes[i]));
        for (size_t i = 0; i < sizeof(no) / sizeof(no[0]); i++)
                CU_ASSERT_FALSE(kdelay_err_is_retriable(no[i]));
}

static void test_fate_str(void)
{
        CU_ASSERT_STRING_EQUAL(kdelay_fate_str(KDELAY_FATE_UNDECIDED),
                               "UNDECIDED");
        CU_ASSERT_STRING_EQUAL(kdelay_fate_str(KDELAY_FATE_FIRING), "FIRING");
        CU_ASSERT_STRING_EQUAL(kdelay_fate_str(KDELAY_FATE_FIRED), "FIRED");
        CU_ASSERT_STRING_EQUAL(kdelay_fate_str(KDELAY_FATE_CANCELLED),
                               "CANCELLED");
        /* Never NULL, even for a value outside the enum. */
        CU_ASSERT_PTR_NOT_NULL(kdelay_fate_str((kdelay_fate_t)42));
}

static const kd_test_case_t cases[] = {
    KD_TEST(test_every_code_named),
    KD_TEST(test_names_unique),
    KD_TEST(test_names_match_enum),
    KD_TEST(test_out_of_range),
    KD_TEST(test_retriable),
    KD_TEST(test_fate_str),
    KD_TEST_END,
};

int main(void)
{
        return kd_test_run("error", cases, NULL, NULL);
}
