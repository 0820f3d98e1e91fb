/* SPDX-License-Identifier: Apache-2.0 */
/* kdelayctl audit: where a FIRING row's dead letter is looked for
 * (src/ctl/audit_dead_from.c). A claim stamped by a clock that ran an hour
 * ahead must not move the read past the dead letter, which the fire
 * wrote at fire-at by the broker's clock: read from there on, the row was
 * judged delivered and --fix marked a dead-lettered task FIRED. */
#include <stdint.h>

#include "audit_dead_from.h"
#include "kd_test.h"

#define HOUR 3600000LL

/* A dead letter written at the row's fire-at, as the broker stamps it. */
static int found(int64_t updated_at_ms, int64_t fire_at_ms, int64_t dead_ts)
{
        return kd_audit_dead_from(updated_at_ms, fire_at_ms) <= dead_ts;
}

static void test_claim_with_true_clock(void)
{
        int64_t fire_at = 1700000000000LL;
        /* Claimed 700 ms ahead, dead-lettered at fire-at. */
        CU_ASSERT_EQUAL(kd_audit_dead_from(fire_at - 700, fire_at),
                        fire_at - 700 - KD_AUDIT_SLACK_MS);
        CU_ASSERT(found(fire_at - 700, fire_at, fire_at));
        /* Claimed late (a catch-up): its claim is the earlier bound. */
        CU_ASSERT(found(fire_at + 30000, fire_at, fire_at + 30100));
}

static void test_claim_stamped_an_hour_ahead(void)
{
        int64_t fire_at = 1700000000000LL;
        /* The claimer's clock ran an hour ahead (torture's clock fault):
         * its claim says fire_at + 1 h - 700 ms, its dead letter came at
         * fire_at + 200 ms by the broker's clock. */
        int64_t updated = fire_at + HOUR - 700;
        CU_ASSERT(found(updated, fire_at, fire_at + 200));
        CU_ASSERT_EQUAL(kd_audit_dead_from(updated, fire_at),
                        fire_at - KD_AUDIT_SLACK_MS);
}

static void test_claim_stamped_behind(void)
{
        int64_t fire_at = 1700000000000LL;
        /* An hour behind: the claim is the earlier bound, read from there. */
        CU_ASSERT_EQUAL(kd_audit_dead_from(fire_at - HOUR, fire_at),
                        fire_at - HOUR - KD_AUDIT_SLACK_MS);
}

static void test_fire_at_not_recorded(void)
{
        CU_ASSERT_EQUAL(kd_audit_dead_from(5 * HOUR, -1),
                        5 * HOUR - KD_AUDIT_SLACK_MS);
        /* Never wraps, never below 0: a negative time is a special
         * position ("the end": -1) to Kafka's offsets-for-times. */
        CU_ASSERT_EQUAL(kd_audit_dead_from(INT64_MIN + 5, -1), 0);
        CU_ASSERT_EQUAL(kd_audit_dead_from(0, 0), 0);
        CU_ASSERT_EQUAL(kd_audit_dead_from(KD_AUDIT_SLACK_MS + 1, -1), 1);
}

int main(void)
{
        static const kd_test_case_t cases[] = {
            KD_TEST(test_claim_with_true_clock),
            KD_TEST(test_claim_stamped_an_hour_ahead),
            KD_TEST(test_claim_stamped_behind),
            KD_TEST(test_fire_at_not_recorded), KD_TEST_END};
        return kd_test_run("audit_dead_from", cases, NULL, NULL);
}
