/* SPDX-License-Identifier: Apache-2.0 */
/* forwarder.target_rate_limits: what the list takes and refuses, and which
 * rule limits a topic. */
#include <stdio.h>
#include <string.h>

#include "kd_ratelimits.h"
#include "kd_test.h"

static char errstr[512];

static void test_parse(void)
{
        kd_ratelimits_t l;
        CU_ASSERT_EQUAL_FATAL(kd_ratelimits_parse(&l,
                                                  " payments=500, orders.*"
                                                  "=2000/400 ,slow=3",
                                                  errstr, sizeof(errstr)),
                              KDELAY_OK);
        CU_ASSERT_EQUAL_FATAL(l.cnt, 3);
        CU_ASSERT_STRING_EQUAL(l.v[0].as, "payments");
        CU_ASSERT_EQUAL(l.v[0].rate, 500.0);
        CU_ASSERT_EQUAL(l.v[0].burst, 50.0); /* a tenth of a second */
        CU_ASSERT_STRING_EQUAL(l.v[1].as, "orders.*");
        CU_ASSERT_EQUAL(l.v[1].prefix, 1);
        CU_ASSERT_EQUAL(l.v[1].len, 7);
        CU_ASSERT_EQUAL(l.v[1].burst, 400.0);
        CU_ASSERT_EQUAL(l.v[2].burst, 1.0); /* at least one */
        kd_ratelimits_clear(&l);
        CU_ASSERT_EQUAL(kd_ratelimits_parse(&l, "", errstr, sizeof(errstr)),
                        KDELAY_OK);
        CU_ASSERT_EQUAL(l.cnt, 0);
        CU_ASSERT_EQUAL(kd_ratelimits_parse(&l, NULL, errstr, sizeof(errstr)),
                        KDELAY_OK);
}

static void test_refused(void)
{
        const char *bad[] = {"payments",    "payments=",    "payments=0",
                             "payments=-5", "payments=1.5", "=500",
                             "bad topic=5", "a=5/0",        "a=5/x",
                             "a=2000000",   "a=5,a=6",      "o.*=5,o.*=7",
                             ",",           "pay$ments=5"};
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                kd_ratelimits_t l;
                errstr[0] = '\0';
                kdelay_err_t err =
                    kd_ratelimits_parse(&l, bad[i], errstr, sizeof(errstr));
                if (err != KDELAY_ERR_CONFIG)
                        printf("\n  accepted: \"%s\"\n", bad[i]);
                CU_ASSERT_EQUAL(err, KDELAY_ERR_CONFIG);
                CU_ASSERT_PTR_NOT_NULL(
                    strstr(errstr, "forwarder.target_rate_limits"));
                CU_ASSERT_EQUAL(l.cnt, 0);
        }
        /* The entry at fault is named, quoted. */
        kd_ratelimits_t l;
        kd_ratelimits_parse(&l, "ok=5, pay$ments=5", errstr, sizeof(errstr));
        CU_ASSERT_PTR_NOT_NULL(strstr(errstr, "\"pay$ments=5\""));
}

static void test_match(void)
{
        kd_ratelimits_t l;
        CU_ASSERT_EQUAL_FATAL(
            kd_ratelimits_parse(&l, "o*=1, orders.*=2, orders.eu=3, *=4",
                                errstr, sizeof(errstr)),
            KDELAY_OK);
        struct {
                const char *topic;
                int rule;
        } cases[] = {{"orders.eu", 2}, /* the exact name first */
                     {"orders.us", 1}, /* then the longest prefix */
                     {"other", 0},      {"payments", 3},
                     {"orders.eu2", 1}, {"orders.", 1}};
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
                CU_ASSERT_EQUAL(kd_ratelimits_match(&l, cases[i].topic,
                                                    strlen(cases[i].topic)),
                                cases[i].rule);
        kd_ratelimits_clear(&l);
        CU_ASSERT_EQUAL_FATAL(
            kd_ratelimits_parse(&l, "a=1", errstr, sizeof(errstr)), KDELAY_OK);
        CU_ASSERT_EQUAL(kd_ratelimits_match(&l, "ab", 2), -1);
        CU_ASSERT_EQUAL(kd_ratelimits_match(&l, "a", 1), 0);
        kd_ratelimits_clear(&l);
}

int main(void)
{
        static const kd_test_case_t cases[] = {
            KD_TEST(test_parse), KD_TEST(test_refused), KD_TEST(test_match),
            KD_TEST_END};
        return kd_test_run("ratelimits", cases, NULL, NULL);
}
