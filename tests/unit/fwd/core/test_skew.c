/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for the clock-skew estimate (kd_skew.h). */
#include <stdint.h>

#include "core/kd_skew.h"
#include "kd_test.h"

#define W KD_SKEW_WINDOW_MS
#define T 1796000000000LL /* a wall time */

static void test_no_samples_no_skew(void)
{
        kd_skew_t s;
        kd_skew_init(&s);
        CU_ASSERT_EQUAL(kd_skew_ahead_ms(&s), 0);
}

/* Appended between send and report: the clocks agree as far as we can
 * tell. */
static void test_append_between_send_and_report_is_no_skew(void)
{
        kd_skew_t s;
        kd_skew_init(&s);
        CU_ASSERT_EQUAL(kd_skew_observe(&s, T, T + 20, T + 5, 1), 0);
        CU_ASSERT_EQUAL(kd_skew_observe(&s, T + 1000, T + 1040, T + 1030, 2),
                        0);
        CU_ASSERT_EQUAL(kd_skew_ahead_ms(&s), 0);
        CU_ASSERT_EQUAL(s.samples, 2);
}

/* Appended "before" it was sent: this clock runs ahead by at least that,
 * and by at most report - append: the smallest upper bound counts (never
 * early, late by a report's trip). */
static void test_append_before_send_is_a_lead(void)
{
        kd_skew_t s;
        kd_skew_init(&s);
        kd_skew_observe(&s, T, T + 10, T - 3000, 1);        /* 3000..3010 */
        kd_skew_observe(&s, T + 100, T + 105, T - 2902, 2); /* 3002..3007 */
        CU_ASSERT_EQUAL(kd_skew_ahead_ms(&s), 3007);
        /* Bounds that disagree (a step): the larger. */
        kd_skew_observe(&s, T + 200, T + 220, T - 2400, 3); /* 2600..2620 */
        CU_ASSERT_EQUAL(kd_skew_ahead_ms(&s), 3002);
}

/* Appended "after" it was reported: this clock runs behind by at least
 * that; the smallest upper bound counts. */
static void test_append_after_report_is_a_lag(void)
{
        kd_skew_t s;
        kd_skew_init(&s);
        kd_skew_observe(&s, T, T + 10, T + 3010, 1);        /* <= -3000 */
        kd_skew_observe(&s, T + 100, T + 120, T + 2620, 2); /* <= -2500 */
        CU_ASSERT_EQUAL(kd_skew_ahead_ms(&s), -3000);
}

/* A clock corrected back is followed once two windows of samples have
 * passed; without samples the estimate stays. */
static void test_a_corrected_clock_is_followed_within_two_windows(void)
{
        kd_skew_t s;
        kd_skew_init(&s);
        kd_skew_observe(&s, T, T + 10, T - 3000, 1);
        CU_ASSERT_EQUAL(kd_skew_ahead_ms(&s), 3010);
        CU_ASSERT_EQUAL(kd_skew_ahead_ms(&s), 3010); /* no sample: stays */
        kd_skew_observe(&s, T + 20000, T + 20020, T + 20010, 1 + W);
        CU_ASSERT_EQUAL(kd_skew_ahead_ms(&s), 3000); /* previous window's */
        kd_skew_observe(&s, T + 30000, T + 30020, T + 30010, 1 + 2 * W);
        CU_ASSERT_EQUAL(kd_skew_ahead_ms(&s), 0);
        /* A step ahead: the previous window's upper bound (10) disagrees
         * with this lower bound (1000): the larger. */
        kd_skew_observe(&s, T + 40000, T + 40010, T + 39000, 1 + 3 * W);
        CU_ASSERT_EQUAL(kd_skew_ahead_ms(&s), 1000);
        /* A gap of more than two windows forgets both. */
        kd_skew_observe(&s, T + 50000, T + 50020, T + 50010, 1 + 6 * W);
        CU_ASSERT_EQUAL(kd_skew_ahead_ms(&s), 0);
}

/* A missing broker time (the mock cluster's 0), one a day off, or a
 * report before its send is not a sample. */
static void test_nonsense_is_not_a_sample(void)
{
        kd_skew_t s;
        kd_skew_init(&s);
        CU_ASSERT_EQUAL(kd_skew_observe(&s, T, T + 5, 0, 1), -1);
        CU_ASSERT_EQUAL(kd_skew_observe(&s, T, T + 5, -1, 1), -1);
        CU_ASSERT_EQUAL(
            kd_skew_observe(&s, T, T + 5, T - KD_SKEW_SANE_MS - 1, 1), -1);
        CU_ASSERT_EQUAL(kd_skew_observe(&s, T, T - 5, T, 1), -1);
        CU_ASSERT_EQUAL(s.samples, 0);
        CU_ASSERT_EQUAL(kd_skew_ahead_ms(&s), 0);
        /* An hour either way is believed. */
        CU_ASSERT_EQUAL(kd_skew_observe(&s, T, T + 5, T - 3600000, 1), 0);
        CU_ASSERT_EQUAL(kd_skew_ahead_ms(&s), 3600005);
}

int main(void)
{
        static const kd_test_case_t cases[] = {
            KD_TEST(test_no_samples_no_skew),
            KD_TEST(test_append_between_send_and_report_is_no_skew),
            KD_TEST(test_append_before_send_is_a_lead),
            KD_TEST(test_append_after_report_is_a_lag),
            KD_TEST(test_a_corrected_clock_is_followed_within_two_windows),
            KD_TEST(test_nonsense_is_not_a_sample),
            KD_TEST_END};
        return kd_test_run("skew", cases, NULL, NULL);
}
