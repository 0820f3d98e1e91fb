/* SPDX-License-Identifier: Apache-2.0 */
/* The fate store contract (kd_fate_contract.h): what kdelayctl audit and
 * the task scans read — a claim's source location, the FIRING rows
 * listed oldest first, fates looked up by the batch. */
#include <stdint.h>
#include <string.h>
#include <time.h>

#include "fate_contract.h"
#include "kd_util.h"

static kd_fate_claim_t sourced(const char *id, const char *token,
                               const char *topic, int32_t p, int64_t off)
{
        kd_fate_claim_t c = kd_fc_item(id, 5, token);
        c.src_topic = topic;
        c.src_partition = p;
        c.src_offset = off;
        return c;
}

static size_t firing(int64_t before, kd_fate_firing_t *rows, size_t max)
{
        size_t n = 99;
        CU_ASSERT_EQUAL(kd_fate_firing(kd_fc_store, before, INT64_MAX, rows,
                                       max, &n, kd_fc_errstr,
                                       sizeof(kd_fc_errstr)),
                        KDELAY_OK);
        return n;
}

/* A claim writes where it read its record; a takeover writes its own
 * (a later read of the task, maybe another copy); one without a source
 * keeps the row's. Only FIRING rows changed before the bound are
 * listed, oldest change first, at most max. */
void test_firing_rows_carry_their_source(void)
{
        KD_FC_NEED_STORE();
        kd_fate_claim_t a = sourced("a", "fw-a", "kdelay-t-1s", 3, 41);
        CU_ASSERT_EQUAL(kd_fate_claim(kd_fc_store, &a, 1, NULL, kd_fc_errstr,
                                      sizeof(kd_fc_errstr)),
                        KDELAY_OK);
        kd_sleep_ms(5);
        kd_fc_claim1("b", 6, "fw-b"); /* no source */
        kd_sleep_ms(5);
        kd_fc_claim1("c", 7, "fw-c");
        kd_fc_fire1("c");
        CU_ASSERT_EQUAL(kd_fc_cancel1("d"), KDELAY_OK);
        kd_fate_firing_t rows[4];
        int64_t later = kd_now_ms() + 1000;
        CU_ASSERT_EQUAL_FATAL(firing(later, rows, 4), 2);
        CU_ASSERT_STRING_EQUAL(rows[0].id, "a");
        CU_ASSERT_EQUAL(rows[0].id_len, 1);
        CU_ASSERT_STRING_EQUAL(rows[0].owner, "fw-a");
        CU_ASSERT_EQUAL(rows[0].fire_at_ms, 5);
        CU_ASSERT_STRING_EQUAL(rows[0].src_topic, "kdelay-t-1s");
        CU_ASSERT_EQUAL(rows[0].src_partition, 3);
        CU_ASSERT_EQUAL(rows[0].src_offset, 41);
        CU_ASSERT_STRING_EQUAL(rows[1].id, "b");
        CU_ASSERT_STRING_EQUAL(rows[1].src_topic, "");
        CU_ASSERT_EQUAL(firing(later, rows, 1), 1);
        CU_ASSERT_STRING_EQUAL(rows[0].id, "a");
        CU_ASSERT_EQUAL(firing(rows[0].updated_at_ms, rows, 4), 0);
        /* Changed after a bound (a claimer's clock ahead): listed too. */
        size_t n2 = 99;
        CU_ASSERT_EQUAL(kd_fate_firing(kd_fc_store, rows[0].updated_at_ms,
                                       rows[0].updated_at_ms, rows, 4, &n2,
                                       kd_fc_errstr, sizeof(kd_fc_errstr)),
                        KDELAY_OK);
        CU_ASSERT_EQUAL(n2, 1);
        CU_ASSERT_STRING_EQUAL(rows[0].id, "b");

        /* Taken over from another copy of the task: the new source. */
        kd_fate_claim_t t = sourced("a", "fw-z", "kdelay-t-0s", 0, 7);
        kd_strlcpy(t.row_owner, "fw-a", sizeof(t.row_owner));
        CU_ASSERT_EQUAL(kd_fate_takeover(kd_fc_store, &t, 1, kd_fc_errstr,
                                         sizeof(kd_fc_errstr)),
                        KDELAY_OK);
        CU_ASSERT_STRING_EQUAL(t.row_owner, "fw-z");
        kd_fate_claim_t u = kd_fc_item("b", 6, "fw-y");
        kd_strlcpy(u.row_owner, "fw-b", sizeof(u.row_owner));
        CU_ASSERT_EQUAL(kd_fate_takeover(kd_fc_store, &u, 1, kd_fc_errstr,
                                         sizeof(kd_fc_errstr)),
                        KDELAY_OK);
        size_t n = firing(later, rows, 4);
        CU_ASSERT_EQUAL_FATAL(n, 2);
        for (size_t i = 0; i < n; i++) {
                if (!strcmp(rows[i].id, "a")) {
                        CU_ASSERT_STRING_EQUAL(rows[i].src_topic,
                                               "kdelay-t-0s");
                        CU_ASSERT_EQUAL(rows[i].src_partition, 0);
                        CU_ASSERT_EQUAL(rows[i].src_offset, 7);
                } else {
                        CU_ASSERT_STRING_EQUAL(rows[i].owner, "fw-y");
                        CU_ASSERT_STRING_EQUAL(rows[i].src_topic, "");
                }
        }
}

/* One statement gives the fates of a batch; ids without a row are
 * UNDECIDED, an id twice gets its row twice. */
void test_lookup_reads_a_batch_of_fates(void)
{
        KD_FC_NEED_STORE();
        kd_fc_claim1("firing", 5, "fw");
        kd_fc_claim1("fired", 5, "fw");
        kd_fc_fire1("fired");
        CU_ASSERT_EQUAL(kd_fc_cancel1("cancelled"), KDELAY_OK);
        const char *ids[] = {"fired", "nobody", "cancelled", "firing", "fired"};
        size_t lens[] = {5, 6, 9, 6, 5};
        kdelay_fate_t fates[5];
        uint64_t before = kd_fc_stmts();
        CU_ASSERT_EQUAL(kd_fate_lookup(kd_fc_store, ids, lens, 5, fates,
                                       kd_fc_errstr, sizeof(kd_fc_errstr)),
                        KDELAY_OK);
        CU_ASSERT_EQUAL(kd_fc_stmts() - before, 1);
        CU_ASSERT_EQUAL(fates[0], KDELAY_FATE_FIRED);
        CU_ASSERT_EQUAL(fates[1], KDELAY_FATE_UNDECIDED);
        CU_ASSERT_EQUAL(fates[2], KDELAY_FATE_CANCELLED);
        CU_ASSERT_EQUAL(fates[3], KDELAY_FATE_FIRING);
        CU_ASSERT_EQUAL(fates[4], KDELAY_FATE_FIRED);
}
