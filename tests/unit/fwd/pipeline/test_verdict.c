/* SPDX-License-Identifier: Apache-2.0 */
/* What the fate store's answer to a claim means (kd_verdict.h): every
 * verdict, and which owners are this instance's earlier ones. */
#include <stdio.h>
#include <string.h>

#include "kd_test.h"
#include "pipeline/kd_pipeline_state.h"
#include "pipeline/kd_verdict.h"

static kd_fate_claim_t answer(kdelay_fate_t fate, const char *owner,
                              int64_t lease_left_ms)
{
        kd_fate_claim_t c;
        memset(&c, 0, sizeof(c));
        c.fate = fate;
        snprintf(c.row_owner, sizeof(c.row_owner), "%s", owner);
        c.lease_left_ms = lease_left_ms;
        return c;
}

static kd_verdict_t verdict(const kd_fate_claim_t *c, int own_earlier,
                            int after_takeover, int at_once, int waited)
{
        const kd_verdict_in_t in = {.answer = c,
                                    .token = "fw1:0000002a.3:7",
                                    .assignment = "fw1:0000002a.3:",
                                    .own_earlier = own_earlier,
                                    .after_takeover = after_takeover,
                                    .takeover_at_once = at_once,
                                    .waited_foreign = waited};
        return kd_verdict(&in);
}

static void test_settled_fates(void)
{
        kd_fate_claim_t c = answer(KDELAY_FATE_CANCELLED, "x", 0);
        CU_ASSERT_EQUAL(verdict(&c, 0, 0, 0, 0), KD_VERDICT_CANCELLED);
        c = answer(KDELAY_FATE_FIRED, "x", 0);
        CU_ASSERT_EQUAL(verdict(&c, 0, 0, 0, 0), KD_VERDICT_DONE);
        c = answer(KDELAY_FATE_DEAD, "x", 0);
        CU_ASSERT_EQUAL(verdict(&c, 0, 0, 0, 0), KD_VERDICT_DONE);
        c = answer(KDELAY_FATE_UNDECIDED, "", 0);
        CU_ASSERT_EQUAL(verdict(&c, 0, 0, 0, 0), KD_VERDICT_UNDECIDED);
}

static void test_firing_rows(void)
{
        kd_fate_claim_t c = answer(KDELAY_FATE_FIRING, "fw1:0000002a.3:7", 5);
        CU_ASSERT_EQUAL(verdict(&c, 0, 0, 0, 0), KD_VERDICT_MINE);
        c = answer(KDELAY_FATE_FIRING, "fw1:0000002a.3:9", 5000);
        CU_ASSERT_EQUAL(verdict(&c, 0, 0, 0, 0), KD_VERDICT_OTHER_COPY);
        /* This instance's earlier process: at once, whatever its lease;
         * an answer to the takeover itself is not taken over again. */
        c = answer(KDELAY_FATE_FIRING, "fw1:00000001.1:4", 5000);
        CU_ASSERT_EQUAL(verdict(&c, 1, 0, 0, 0), KD_VERDICT_TAKEOVER_OWN);
        CU_ASSERT_EQUAL(verdict(&c, 1, 1, 0, 0), KD_VERDICT_WAIT_LEASE);
        /* Another process: its lease runs, or passed. */
        c = answer(KDELAY_FATE_FIRING, "fw2:00000001.1:4", 5000);
        CU_ASSERT_EQUAL(verdict(&c, 0, 0, 1, 1), KD_VERDICT_WAIT_LEASE);
        c = answer(KDELAY_FATE_FIRING, "fw2:00000001.1:4", 0);
        CU_ASSERT_EQUAL(verdict(&c, 0, 0, 0, 0), KD_VERDICT_WAIT_FOREIGN);
        CU_ASSERT_EQUAL(verdict(&c, 0, 0, 0, 1), KD_VERDICT_TAKEOVER);
        CU_ASSERT_EQUAL(verdict(&c, 0, 0, 1, 0), KD_VERDICT_TAKEOVER);
        CU_ASSERT_EQUAL(verdict(&c, 0, 1, 1, 1), KD_VERDICT_WAIT_FOREIGN);
        /* No lease at all (schema before 3, or claim_lease=0). */
        c = answer(KDELAY_FATE_FIRING, "fw2:00000001.1:4", -1);
        CU_ASSERT_EQUAL(verdict(&c, 0, 0, 0, 0), KD_VERDICT_WAIT_FOREIGN);
        CU_ASSERT_EQUAL(verdict(&c, 0, 0, 0, 1), KD_VERDICT_TAKEOVER);
        CU_ASSERT_EQUAL(verdict(&c, 0, 0, 1, 0), KD_VERDICT_TAKEOVER);
        CU_ASSERT_EQUAL(verdict(&c, 0, 1, 1, 1), KD_VERDICT_WAIT_FOREIGN);
}

static void test_own_earlier_owners(void)
{
        kd_fwd_claim_t c;
        memset(&c, 0, sizeof(c));
        snprintf(c.own_tag, sizeof(c.own_tag), "fw1:");
        snprintf(c.boot_tag, sizeof(c.boot_tag), "0000002a.");
        /* Another boot of this instance: only a static member's. */
        CU_ASSERT_TRUE(kd_verdict_own_earlier(&c, 1, "fw1:00000001.1:4"));
        CU_ASSERT_FALSE(kd_verdict_own_earlier(&c, 0, "fw1:00000001.1:4"));
        /* Another instance, never. */
        CU_ASSERT_FALSE(kd_verdict_own_earlier(&c, 1, "fw10:00000001.1:4"));
        CU_ASSERT_FALSE(kd_verdict_own_earlier(&c, 1, "fw2:0000002a.1:4"));
        /* This process: generations up to gone_upto only. */
        CU_ASSERT_FALSE(kd_verdict_own_earlier(&c, 1, "fw1:0000002a.1:4"));
        c.gone_upto = 2;
        CU_ASSERT_TRUE(kd_verdict_own_earlier(&c, 0, "fw1:0000002a.1:4"));
        CU_ASSERT_TRUE(kd_verdict_own_earlier(&c, 0, "fw1:0000002a.2:9"));
        CU_ASSERT_FALSE(kd_verdict_own_earlier(&c, 0, "fw1:0000002a.3:1"));
        CU_ASSERT_FALSE(kd_verdict_own_earlier(&c, 0, "fw1:0000002a.2x"));
}

int main(void)
{
        static const kd_test_case_t cases[] = {
            KD_TEST(test_settled_fates), KD_TEST(test_firing_rows),
            KD_TEST(test_own_earlier_owners), KD_TEST_END};
        return kd_test_run("verdict", cases, NULL, NULL);
}
