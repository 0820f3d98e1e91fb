/* Unit tests for the clock-skew estimate (kd_skew.h). */
#include <stdint.h>

#include "kd_skew.h"
#include "kd_test.h"

#define W KD_SKEW_WINDOW_MS

static void test_no_samples_no_skew(void)
{
        kd_skew_t s;
        kd_skew_init(&s);
        CU_ASSERT_EQUAL(kd_skew_ahead_ms(&s), 0);
}

/* A broker append after the send says nothing: the clock is not ahead. */
static void test_append_after_send_is_no_skew(void)
{
        kd_skew_t s;
        kd_skew_init(&s);
        kd_skew_observe(&s, 1000, 1005, 1);
        kd_skew_observe(&s, 2000, 2030, 2);
        CU_ASSERT_EQUAL(kd_skew_ahead_ms(&s), 0);
        CU_ASSERT_EQUAL(s.samples, 2);
}

/* Appended "before" it was sent: this clock runs ahead by at least that;
 * the largest bound of the window counts. */
static void test_append_before_send_is_the_skew(void)
{
        kd_skew_t s;
        kd_skew_init(&s);
        kd_skew_observe(&s, 10000, 7000, 1); /* >= 3000 ahead */
        kd_skew_observe(&s, 11000, 8500, 2); /* >= 2500 */
        CU_ASSERT_EQUAL(kd_skew_ahead_ms(&s), 3000);
}

/* A clock corrected back is followed once two windows of samples have
 * passed; without samples the estimate stays. */
static void test_a_corrected_clock_is_followed_within_two_windows(void)
{
        kd_skew_t s;
        kd_skew_init(&s);
        kd_skew_observe(&s, 10000, 7000, 1);
        CU_ASSERT_EQUAL(kd_skew_ahead_ms(&s), 3000);
        /* No sample for a long time: still 3000 (late, not early). */
        CU_ASSERT_EQUAL(kd_skew_ahead_ms(&s), 3000);
        kd_skew_observe(&s, 20000, 20010, 1 + W);
        CU_ASSERT_EQUAL(kd_skew_ahead_ms(&s), 3000); /* previous window */
        kd_skew_observe(&s, 30000, 30010, 1 + 2 * W);
        CU_ASSERT_EQUAL(kd_skew_ahead_ms(&s), 0);
        /* A gap of more than a window forgets both windows. */
        kd_skew_observe(&s, 40000, 39000, 1 + 3 * W);
        CU_ASSERT_EQUAL(kd_skew_ahead_ms(&s), 1000);
        kd_skew_observe(&s, 50000, 50001, 1 + 6 * W);
        CU_ASSERT_EQUAL(kd_skew_ahead_ms(&s), 0);
}

/* A missing broker time (the mock cluster's 0) or one a day off is not a
 * sample. */
static void test_nonsense_is_not_a_sample(void)
{
        kd_skew_t s;
        kd_skew_init(&s);
        CU_ASSERT_EQUAL(kd_skew_observe(&s, 1796000000000, 0, 1), -1);
        CU_ASSERT_EQUAL(kd_skew_observe(&s, 1796000000000, -1, 1), -1);
        CU_ASSERT_EQUAL(kd_skew_observe(&s, 1796000000000,
                                        1796000000000 - KD_SKEW_SANE_MS - 1, 1),
                        -1);
        CU_ASSERT_EQUAL(s.samples, 0);
        CU_ASSERT_EQUAL(kd_skew_ahead_ms(&s), 0);
        /* An hour is believed. */
        CU_ASSERT_EQUAL(
            kd_skew_observe(&s, 1796000000000, 1796000000000 - 3600000, 1), 0);
        CU_ASSERT_EQUAL(kd_skew_ahead_ms(&s), 3600000);
}

int main(void)
{
        static const kd_test_case_t cases[] = {
            KD_TEST(test_no_samples_no_skew),
            KD_TEST(test_append_after_send_is_no_skew),
            KD_TEST(test_append_before_send_is_the_skew),
            KD_TEST(test_a_corrected_clock_is_followed_within_two_windows),
            KD_TEST(test_nonsense_is_not_a_sample),
            KD_TEST_END};
        return kd_test_run("skew", cases, NULL, NULL);
}
