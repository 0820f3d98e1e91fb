/* SPDX-License-Identifier: Apache-2.0 */
/* The "behind" signal (kd_behind.h): on past KD_BEHIND_MS or with the
 * held set full and something due, off only under KD_BEHIND_CLEAR_MS with
 * the held set under half, unchanged in between, stale after
 * KD_BEHIND_STALE_MS without a sign of lateness. */
#include "core/kd_behind.h"
#include "kd_test.h"

static void test_comes_on_past_the_threshold_only(void)
{
        kd_behind_t b = {0};
        CU_ASSERT_EQUAL(kd_behind_note(&b, 1000, 0, 0, 0), 0);
        CU_ASSERT_EQUAL(kd_behind_note(&b, 1001, KD_BEHIND_MS, 0, 0), 0);
        CU_ASSERT_FALSE(kd_behind_on(&b, 1001));
        CU_ASSERT_EQUAL(kd_behind_note(&b, 1002, KD_BEHIND_MS + 1, 0, 0), 1);
        CU_ASSERT_TRUE(kd_behind_on(&b, 1002));
        CU_ASSERT_EQUAL(b.turns_on, 1);
        /* Already on: no second change. */
        CU_ASSERT_EQUAL(kd_behind_note(&b, 1003, 5000, 1, 1), 0);
        CU_ASSERT_EQUAL(b.turns_on, 1);
}

static void test_held_full_with_something_due_is_behind(void)
{
        kd_behind_t b = {0};
        /* Full, but nothing due yet: on time. */
        CU_ASSERT_EQUAL(kd_behind_note(&b, 10, -50, 1, 1), 0);
        CU_ASSERT_EQUAL(kd_behind_note(&b, 10, 0, 1, 1), 0);
        CU_ASSERT_FALSE(kd_behind_on(&b, 10));
        /* Full and a head 1 ms past due. */
        CU_ASSERT_EQUAL(kd_behind_note(&b, 11, 1, 1, 1), 1);
        CU_ASSERT_TRUE(kd_behind_on(&b, 11));
}

static void test_hysteresis_between_the_thresholds(void)
{
        kd_behind_t b = {0};
        kd_behind_note(&b, 0, 500, 0, 0);
        /* 20..100 ms late: stays on, and the sign keeps it fresh. */
        for (int64_t t = 100; t <= 10000; t += 100)
                CU_ASSERT_EQUAL(kd_behind_note(&b, t, 50, 0, 0), 0);
        CU_ASSERT_TRUE(kd_behind_on(&b, 10000));
        /* On time, the set under half, but a late sign 1 ms ago: one
         * on-time fire among late ones (another partition's) is not
         * enough. */
        CU_ASSERT_EQUAL(kd_behind_note(&b, 10001, -120, 0, 0), 0);
        CU_ASSERT_TRUE(kd_behind_on(&b, 10001));
        /* Calm long enough but the held set still half full: still on. */
        CU_ASSERT_EQUAL(kd_behind_note(&b, 10000 + KD_BEHIND_CALM_MS, 2, 1, 0),
                        0);
        CU_ASSERT_TRUE(kd_behind_on(&b, 10000 + KD_BEHIND_CALM_MS));
        /* Calm and the set under half: off. */
        CU_ASSERT_EQUAL(kd_behind_note(&b, 10000 + KD_BEHIND_CALM_MS + 1,
                                       KD_BEHIND_CLEAR_MS - 1, 0, 0),
                        -1);
        CU_ASSERT_FALSE(kd_behind_on(&b, 10000 + KD_BEHIND_CALM_MS + 1));
        /* Off, 20..100 ms late: stays off. */
        for (int64_t t = 10500; t <= 11000; t += 100)
                CU_ASSERT_EQUAL(kd_behind_note(&b, t, 99, 1, 0), 0);
        CU_ASSERT_FALSE(kd_behind_on(&b, 11000));
        CU_ASSERT_EQUAL(b.turns_on, 1);
}

/* Late fires interleaved with on-time ones (a drain of tasks scheduled
 * in the past, several partitions): no flapping. */
static void test_interleaved_on_time_fires_do_not_flap(void)
{
        kd_behind_t b = {0};
        int changes = 0;
        for (int64_t t = 0; t < 5000; t += 3)
                changes +=
                    kd_behind_note(&b, t, (t / 3) % 2 ? -120 : 1900, 0, 0) != 0;
        CU_ASSERT_EQUAL(changes, 1);
        CU_ASSERT_TRUE(kd_behind_on(&b, 5000));
}

static void test_goes_stale_without_a_sign(void)
{
        kd_behind_t b = {0};
        kd_behind_note(&b, 1000, 300, 0, 0);
        CU_ASSERT_TRUE(kd_behind_on(&b, 1000 + KD_BEHIND_STALE_MS - 1));
        CU_ASSERT_FALSE(kd_behind_on(&b, 1000 + KD_BEHIND_STALE_MS));
        /* On time with the set half full does not refresh it either. */
        kd_behind_note(&b, 5000, 300, 0, 0);
        kd_behind_note(&b, 5000 + KD_BEHIND_STALE_MS - 1, 0, 1, 0);
        CU_ASSERT_FALSE(kd_behind_on(&b, 5000 + KD_BEHIND_STALE_MS));
        /* Stale, a note between the thresholds does not bring it back,
         * and reports no change. */
        CU_ASSERT_EQUAL(kd_behind_note(&b, 9000, 50, 0, 0), 0);
        CU_ASSERT_FALSE(kd_behind_on(&b, 9000));
        /* A stale signal comes on again as a change. */
        CU_ASSERT_EQUAL(kd_behind_note(&b, 9100, 150, 0, 0), 1);
        CU_ASSERT_EQUAL(b.turns_on, 3);
}

int main(void)
{
        static const kd_test_case_t cases[] = {
            KD_TEST(test_comes_on_past_the_threshold_only),
            KD_TEST(test_held_full_with_something_due_is_behind),
            KD_TEST(test_hysteresis_between_the_thresholds),
            KD_TEST(test_interleaved_on_time_fires_do_not_flap),
            KD_TEST(test_goes_stale_without_a_sign),
            KD_TEST_END};
        return kd_test_run("behind", cases, NULL, NULL);
}
