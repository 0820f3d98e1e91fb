/* SPDX-License-Identifier: Apache-2.0 */
/* The fate store contract (kd_fate_contract.h): the journal of fires made
 * without a claim applied to the fate table (kd_fate_apply_unclaimed),
 * listed and collected. */
#include <string.h>

#include "fate_contract.h"
#include "kd_util.h"

#define N_ITEMS 6

/* Rows before: "n" none, "c" CANCELLED, "f" FIRING (a claim), "d" DEAD,
 * "x" FIRED; "n" twice in the batch (a journal may repeat). */
static void items_init(kd_fate_unclaimed_t *it)
{
        static const char *const ids[N_ITEMS] = {"n", "c", "f", "d", "x", "n"};
        memset(it, 0, N_ITEMS * sizeof(*it));
        for (int i = 0; i < N_ITEMS; i++) {
                it[i].id = ids[i];
                it[i].id_len = 1;
                it[i].fire_at_ms = 1000 + i;
                it[i].fired_at_ms = 2000 + i;
                it[i].forwarder = "fw-1";
                it[i].src_topic = "kdelay.tier.1s";
                it[i].src_partition = 2;
                it[i].src_offset = 40 + i;
        }
}

static void rows_init(void)
{
        CU_ASSERT_EQUAL(kd_fc_cancel1("c"), KDELAY_OK);
        kd_fc_claim1("f", 5, "fw-2");
        CU_ASSERT_EQUAL(kd_fc_put("d", KDELAY_FATE_DEAD, 5, 5), 0);
        kd_fc_claim1("x", 5, "fw-2");
        kd_fc_fire1("x");
}

static kdelay_err_t apply(kd_fate_unclaimed_t *it)
{
        return kd_fate_apply_unclaimed(kd_fc_store, it, N_ITEMS, kd_fc_errstr,
                                       sizeof(kd_fc_errstr));
}

/* Every task's row is FIRED but the DEAD one's; the fire is on record
 * with what the row said; a cancel now is too late. Four statements. */
void test_apply_unclaimed_fires_and_records(void)
{
        KD_FC_NEED_STORE();
        rows_init();
        int64_t cancelled_at = kd_fc_status1("c").decided_at_ms;
        kd_fate_unclaimed_t it[N_ITEMS];
        items_init(it);
        uint64_t before = kd_fc_stmts();
        CU_ASSERT_EQUAL_FATAL(apply(it), KDELAY_OK);
        CU_ASSERT_EQUAL(kd_fc_stmts() - before, 4);
        /* When the cancel came, for telling it from one after the fire. */
        CU_ASSERT_EQUAL(it[1].cancelled_at_ms, cancelled_at);
        CU_ASSERT_EQUAL(it[0].cancelled_at_ms, -1);
        static const kd_unclaimed_prior_t want[N_ITEMS] = {
            KD_PRIOR_FIRED, KD_PRIOR_CANCELLED, KD_PRIOR_FIRING,
            KD_PRIOR_DEAD,  KD_PRIOR_FIRED,     KD_PRIOR_FIRED};
        for (int i = 0; i < N_ITEMS; i++) {
                CU_ASSERT_EQUAL(it[i].prior, want[i]);
                CU_ASSERT_EQUAL(it[i].recorded, 1);
        }
        kdelay_status_t st = kd_fc_status1("n");
        CU_ASSERT_EQUAL(st.fate, KDELAY_FATE_FIRED);
        CU_ASSERT_STRING_EQUAL(st.owner, "fw-1");
        CU_ASSERT_EQUAL(st.fire_at_ms, 1000);
        CU_ASSERT_EQUAL(st.decided_at_ms, 2000);
        CU_ASSERT_EQUAL(kd_fc_status1("c").fate, KDELAY_FATE_FIRED);
        CU_ASSERT_EQUAL(kd_fc_status1("f").fate, KDELAY_FATE_FIRED);
        CU_ASSERT_EQUAL(kd_fc_status1("d").fate, KDELAY_FATE_DEAD);
        CU_ASSERT_EQUAL(kd_fc_status1("x").fate, KDELAY_FATE_FIRED);
        CU_ASSERT_EQUAL(kd_fc_cancel1("n"), KDELAY_ERR_TOO_LATE);
        CU_ASSERT_EQUAL(kd_fc_cancel1("c"), KDELAY_ERR_TOO_LATE);

        kd_fate_unclaimed_row_t rows[8];
        size_t n = 99;
        CU_ASSERT_EQUAL(kd_fate_unclaimed_list(
                            kd_fc_store, NULL, 0, KD_PRIOR_CANCELLED, 0, rows,
                            8, &n, kd_fc_errstr, sizeof(kd_fc_errstr)),
                        KDELAY_OK);
        CU_ASSERT_EQUAL_FATAL(n, 1);
        CU_ASSERT_STRING_EQUAL(rows[0].id, "c");
        CU_ASSERT_EQUAL(rows[0].fire_at_ms, 1001);
        CU_ASSERT_EQUAL(rows[0].fired_at_ms, 2001);
        CU_ASSERT_STRING_EQUAL(rows[0].forwarder, "fw-1");
        CU_ASSERT_STRING_EQUAL(rows[0].src_topic, "kdelay.tier.1s");
        CU_ASSERT_EQUAL(rows[0].src_partition, 2);
        CU_ASSERT_EQUAL(rows[0].src_offset, 41);
        CU_ASSERT_EQUAL(rows[0].cancelled_at_ms, cancelled_at);
        CU_ASSERT_EQUAL(kd_fate_unclaimed_list(kd_fc_store, NULL, 0, -1, 0,
                                               rows, 8, &n, kd_fc_errstr,
                                               sizeof(kd_fc_errstr)),
                        KDELAY_OK);
        CU_ASSERT_EQUAL(n, 5);
        CU_ASSERT_EQUAL(kd_fate_unclaimed_list(kd_fc_store, "d", 1, -1, 0, rows,
                                               1, &n, kd_fc_errstr,
                                               sizeof(kd_fc_errstr)),
                        KDELAY_OK);
        CU_ASSERT_EQUAL_FATAL(n, 1);
        CU_ASSERT_EQUAL(rows[0].prior, KD_PRIOR_DEAD);
        CU_ASSERT_EQUAL(rows[0].cancelled_at_ms, -1);
        /* Applied again: the record's answer, its cancel time too. */
        items_init(it);
        CU_ASSERT_EQUAL_FATAL(apply(it), KDELAY_OK);
        CU_ASSERT_EQUAL(it[1].cancelled_at_ms, cancelled_at);
}

/* Applied again (a crash before the journal's offsets were committed):
 * nothing new is recorded, the first answers stay (the cancelled task is
 * still reported as such), the rows stay; then gc takes the records. */
void test_apply_unclaimed_again_changes_nothing(void)
{
        KD_FC_NEED_STORE();
        rows_init();
        kd_fate_unclaimed_t it[N_ITEMS];
        items_init(it);
        CU_ASSERT_EQUAL_FATAL(apply(it), KDELAY_OK);
        items_init(it);
        uint64_t before = kd_fc_stmts();
        CU_ASSERT_EQUAL_FATAL(apply(it), KDELAY_OK);
        CU_ASSERT_EQUAL(kd_fc_stmts() - before, 3);
        CU_ASSERT_EQUAL(it[1].prior, KD_PRIOR_CANCELLED);
        CU_ASSERT_EQUAL(it[2].prior, KD_PRIOR_FIRING);
        for (int i = 0; i < N_ITEMS; i++)
                CU_ASSERT_EQUAL(it[i].recorded, 0);
        CU_ASSERT_EQUAL(kd_fc_status1("c").fate, KDELAY_FATE_FIRED);
        CU_ASSERT_EQUAL(kd_fc_status1("d").fate, KDELAY_FATE_DEAD);
        uint64_t deleted = 0;
        CU_ASSERT_EQUAL(kd_fate_gc_unclaimed(kd_fc_store, 0, 100, &deleted,
                                             kd_fc_errstr,
                                             sizeof(kd_fc_errstr)),
                        KDELAY_OK);
        CU_ASSERT_EQUAL(deleted, 0);
        CU_ASSERT_EQUAL(kd_fate_gc_unclaimed(kd_fc_store, kd_now_ms() + 1000,
                                             100, &deleted, kd_fc_errstr,
                                             sizeof(kd_fc_errstr)),
                        KDELAY_OK);
        CU_ASSERT_EQUAL(deleted, 5);
}

/* Fires that failed for good were dead-lettered: the row becomes DEAD
 * with the reason (inserted, or from FIRING), a CANCELLED one stays (it
 * was not delivered); the record keeps the reason, and the cancelled one
 * is no fire after a cancel. Four statements. */
void test_apply_unclaimed_dead_letters(void)
{
        KD_FC_NEED_STORE();
        CU_ASSERT_EQUAL(kd_fc_cancel1("dc"), KDELAY_OK);
        kd_fc_claim1("df", 5, "fw-2");
        kd_fate_unclaimed_t it[3];
        static const char *const ids[3] = {"dn", "df", "dc"};
        memset(it, 0, sizeof(it));
        for (int i = 0; i < 3; i++) {
                it[i].id = ids[i];
                it[i].id_len = 2;
                it[i].fire_at_ms = 1000;
                it[i].fired_at_ms = 2000;
                it[i].forwarder = "fw-1";
                it[i].dead_reason = "too-large";
        }
        uint64_t before = kd_fc_stmts();
        CU_ASSERT_EQUAL_FATAL(kd_fate_apply_unclaimed(kd_fc_store, it, 3,
                                                      kd_fc_errstr,
                                                      sizeof(kd_fc_errstr)),
                              KDELAY_OK);
        CU_ASSERT_EQUAL(kd_fc_stmts() - before, 4);
        kdelay_status_t st = kd_fc_status1("dn");
        CU_ASSERT_EQUAL(st.fate, KDELAY_FATE_DEAD);
        CU_ASSERT_STRING_EQUAL(st.dead_reason, "too-large");
        st = kd_fc_status1("df");
        CU_ASSERT_EQUAL(st.fate, KDELAY_FATE_DEAD);
        CU_ASSERT_STRING_EQUAL(st.dead_reason, "too-large");
        CU_ASSERT_EQUAL(kd_fc_status1("dc").fate, KDELAY_FATE_CANCELLED);
        CU_ASSERT_EQUAL(it[2].prior, KD_PRIOR_CANCELLED);
        kd_fate_unclaimed_row_t rows[4];
        size_t n = 99;
        CU_ASSERT_EQUAL(kd_fate_unclaimed_list(
                            kd_fc_store, NULL, 0, KD_PRIOR_CANCELLED, 0, rows,
                            4, &n, kd_fc_errstr, sizeof(kd_fc_errstr)),
                        KDELAY_OK);
        CU_ASSERT_EQUAL(n, 0);
        CU_ASSERT_EQUAL(kd_fate_unclaimed_list(kd_fc_store, "dc", 2, -1, 0,
                                               rows, 1, &n, kd_fc_errstr,
                                               sizeof(kd_fc_errstr)),
                        KDELAY_OK);
        CU_ASSERT_EQUAL_FATAL(n, 1);
        CU_ASSERT_STRING_EQUAL(rows[0].dead_reason, "too-large");
        /* A reason the fate table cannot take is refused, nothing sent. */
        it[0].dead_reason = "Too Large";
        before = kd_fc_stmts();
        CU_ASSERT_EQUAL(kd_fate_apply_unclaimed(kd_fc_store, it, 1,
                                                kd_fc_errstr,
                                                sizeof(kd_fc_errstr)),
                        KDELAY_ERR_INVALID_ARG);
        CU_ASSERT_EQUAL(kd_fc_stmts(), before);
}

/* Records of intent (at_least_once writes one before each fire without a
 * claim): no fate row is inserted or changed; a cancelled task goes on
 * record (it may have been delivered) and its row stays CANCELLED until
 * its delivery record makes it FIRED; any other task is left alone (read
 * again, it fires again). Two statements; one when applied again. */
void test_apply_unclaimed_intents(void)
{
        KD_FC_NEED_STORE();
        CU_ASSERT_EQUAL(kd_fc_cancel1("ic"), KDELAY_OK);
        kd_fc_claim1("if", 5, "fw-2");
        kd_fc_claim1("ix", 5, "fw-2");
        kd_fc_fire1("ix");
        static const char *const ids[4] = {"ic", "in", "if", "ix"};
        kd_fate_unclaimed_t it[4];
        memset(it, 0, sizeof(it));
        for (int i = 0; i < 4; i++) {
                it[i].id = ids[i];
                it[i].id_len = 2;
                it[i].fire_at_ms = 1000;
                it[i].fired_at_ms = 2000 + i;
                it[i].forwarder = "fw-1";
                it[i].intent = 1;
        }
        uint64_t before = kd_fc_stmts();
        CU_ASSERT_EQUAL_FATAL(kd_fate_apply_unclaimed(kd_fc_store, it, 4,
                                                      kd_fc_errstr,
                                                      sizeof(kd_fc_errstr)),
                              KDELAY_OK);
        CU_ASSERT_EQUAL(kd_fc_stmts() - before, 2);
        CU_ASSERT_EQUAL(it[0].prior, KD_PRIOR_CANCELLED);
        CU_ASSERT_EQUAL(it[0].recorded, 1);
        for (int i = 1; i < 4; i++)
                CU_ASSERT_EQUAL(it[i].recorded, 0);
        CU_ASSERT_EQUAL(kd_fc_status1("ic").fate, KDELAY_FATE_CANCELLED);
        CU_ASSERT_EQUAL(kd_fc_status1("in").fate, KDELAY_FATE_UNDECIDED);
        CU_ASSERT_EQUAL(kd_fc_status1("if").fate, KDELAY_FATE_FIRING);
        CU_ASSERT_EQUAL(kd_fc_status1("ix").fate, KDELAY_FATE_FIRED);
        kd_fate_unclaimed_row_t rows[4];
        size_t n = 99;
        CU_ASSERT_EQUAL(kd_fate_unclaimed_list(
                            kd_fc_store, NULL, 0, KD_PRIOR_CANCELLED, 0, rows,
                            4, &n, kd_fc_errstr, sizeof(kd_fc_errstr)),
                        KDELAY_OK);
        CU_ASSERT_EQUAL_FATAL(n, 1);
        CU_ASSERT_STRING_EQUAL(rows[0].id, "ic");
        CU_ASSERT_EQUAL(rows[0].fired_at_ms, 2000);
        CU_ASSERT_EQUAL(kd_fate_unclaimed_list(kd_fc_store, "in", 2, -1, 0,
                                               rows, 1, &n, kd_fc_errstr,
                                               sizeof(kd_fc_errstr)),
                        KDELAY_OK);
        CU_ASSERT_EQUAL(n, 0);
        /* Again: nothing new, one statement. */
        for (int i = 0; i < 4; i++)
                it[i].recorded = 0;
        before = kd_fc_stmts();
        CU_ASSERT_EQUAL_FATAL(kd_fate_apply_unclaimed(kd_fc_store, it, 4,
                                                      kd_fc_errstr,
                                                      sizeof(kd_fc_errstr)),
                              KDELAY_OK);
        CU_ASSERT_EQUAL(kd_fc_stmts() - before, 1);
        CU_ASSERT_EQUAL(it[0].recorded, 0);
        CU_ASSERT_EQUAL(it[0].prior, KD_PRIOR_CANCELLED);
        /* Its delivery record: FIRED, on record as before (not twice). */
        it[0].intent = 0;
        before = kd_fc_stmts();
        CU_ASSERT_EQUAL_FATAL(kd_fate_apply_unclaimed(kd_fc_store, it, 1,
                                                      kd_fc_errstr,
                                                      sizeof(kd_fc_errstr)),
                              KDELAY_OK);
        CU_ASSERT_EQUAL(kd_fc_stmts() - before, 3);
        CU_ASSERT_EQUAL(it[0].recorded, 0);
        CU_ASSERT_EQUAL(kd_fc_status1("ic").fate, KDELAY_FATE_FIRED);
}
