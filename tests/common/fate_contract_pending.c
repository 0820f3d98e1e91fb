/* SPDX-License-Identifier: Apache-2.0 */
/* The fate store contract (kd_fate_contract.h): the reconciliation
 * marker (kd_fate_pending_t) and what it does to cancels. */
#include "fate_contract.h"

#include <string.h>

#include "kd_util.h"

static void mark(const char *journal, const char *by)
{
        CU_ASSERT_EQUAL(kd_fate_pending_mark(kd_fc_store, journal, by,
                                             kd_fc_errstr,
                                             sizeof(kd_fc_errstr)),
                        KDELAY_OK);
}

static kd_fate_pending_t get(const char *journal)
{
        kd_fate_pending_t p;
        CU_ASSERT_EQUAL(kd_fate_pending_get(kd_fc_store, journal, &p,
                                            kd_fc_errstr, sizeof(kd_fc_errstr)),
                        KDELAY_OK);
        return p;
}

/* While a journal is pending a cancel records nothing and answers
 * "not known yet" unless the row already says FIRING, FIRED or DEAD;
 * once cleared it cancels as before. */
void test_cancel_waits_for_a_pending_journal(void)
{
        KD_FC_NEED_STORE();
        CU_ASSERT_EQUAL(kd_fc_cancel1("before"), KDELAY_OK);
        kd_fc_claim1("claimed", 1000, "fw-1");
        CU_ASSERT_EQUAL(kd_fc_put("dead", KDELAY_FATE_DEAD, 1000, 1000), 0);
        kd_fate_pending_t p = get(NULL);
        CU_ASSERT_EQUAL(p.epoch, 0);
        CU_ASSERT_EQUAL(p.since_ms, -1);
        int64_t t0 = kd_now_ms();
        mark("j.journal", "fw-1");
        uint64_t before = kd_fc_stmts();
        CU_ASSERT_EQUAL(kd_fc_cancel1("new"), KDELAY_ERR_RECONCILING);
        CU_ASSERT_EQUAL(kd_fc_stmts() - before, 2);
        CU_ASSERT_PTR_NOT_NULL(strstr(kd_fc_errstr, "nothing was recorded"));
        CU_ASSERT_EQUAL(kd_fc_status1("new").fate, KDELAY_FATE_UNDECIDED);
        /* A row cancelled before the outage: its fire may be in the
         * journal. */
        CU_ASSERT_EQUAL(kd_fc_cancel1("before"), KDELAY_ERR_RECONCILING);
        CU_ASSERT_EQUAL(kd_fc_cancel1("claimed"), KDELAY_ERR_TOO_LATE);
        CU_ASSERT_EQUAL(kd_fc_cancel1("dead"), KDELAY_ERR_DEAD);
        p = get(NULL);
        CU_ASSERT_STRING_EQUAL(p.journal, "j.journal");
        CU_ASSERT_STRING_EQUAL(p.by, "fw-1");
        CU_ASSERT_EQUAL(p.epoch, 1);
        CU_ASSERT(p.since_ms >= t0 && p.since_ms <= kd_now_ms());
        kd_fate_pending_t after;
        CU_ASSERT_EQUAL(kd_fate_pending_clear(kd_fc_store, "j.journal", p.epoch,
                                              "fw-2", -1, &after, kd_fc_errstr,
                                              sizeof(kd_fc_errstr)),
                        KDELAY_OK);
        CU_ASSERT_EQUAL(after.since_ms, -1);
        CU_ASSERT_EQUAL(after.epoch, 1);
        CU_ASSERT_EQUAL(get(NULL).since_ms, -1);
        CU_ASSERT_EQUAL(kd_fc_cancel1("new"), KDELAY_OK);
        CU_ASSERT_EQUAL(kd_fc_cancel1("before"), KDELAY_OK);
}

/* A mark made after a reconciliation read the epoch keeps the journal
 * pending through that reconciliation's clear; a second mark keeps the
 * first one's since. Journals are apart. Bad arguments send nothing. */
void test_pending_clear_needs_the_epoch_read(void)
{
        KD_FC_NEED_STORE();
        mark("a.journal", "fw-1");
        kd_fate_pending_t read = get("a.journal");
        mark("a.journal", NULL);
        kd_fate_pending_t p = get("a.journal");
        CU_ASSERT_EQUAL(p.epoch, read.epoch + 1);
        CU_ASSERT_EQUAL(p.since_ms, read.since_ms);
        CU_ASSERT_STRING_EQUAL(p.by, "");
        CU_ASSERT_EQUAL(
            kd_fate_pending_clear(kd_fc_store, "a.journal", read.epoch, "fw-1",
                                  -1, &p, kd_fc_errstr, sizeof(kd_fc_errstr)),
            KDELAY_OK);
        CU_ASSERT(p.since_ms >= 0); /* marked again since */
        CU_ASSERT_EQUAL(kd_fc_cancel1("x"), KDELAY_ERR_RECONCILING);
        mark("b.journal", "fw-9");
        CU_ASSERT_EQUAL(get("b.journal").epoch, 1);
        CU_ASSERT_EQUAL(kd_fate_pending_clear(
                            kd_fc_store, "a.journal", read.epoch + 1, "fw-1",
                            -1, &p, kd_fc_errstr, sizeof(kd_fc_errstr)),
                        KDELAY_OK);
        CU_ASSERT_EQUAL(p.since_ms, -1);
        CU_ASSERT_STRING_EQUAL(get(NULL).journal, "b.journal");
        CU_ASSERT_EQUAL(kd_fc_cancel1("x"), KDELAY_ERR_RECONCILING);
        CU_ASSERT_EQUAL(kd_fate_pending_clear(kd_fc_store, "b.journal", 1, NULL,
                                              -1, &p, kd_fc_errstr,
                                              sizeof(kd_fc_errstr)),
                        KDELAY_OK);
        CU_ASSERT_EQUAL(kd_fc_cancel1("x"), KDELAY_OK);
        /* A journal never marked reads as none. */
        p = get("c.journal");
        CU_ASSERT_EQUAL(p.epoch, 0);
        CU_ASSERT_EQUAL(p.since_ms, -1);
        uint64_t before = kd_fc_stmts();
        char longname[300];
        memset(longname, 'j', sizeof(longname) - 1);
        longname[sizeof(longname) - 1] = '\0';
        CU_ASSERT_EQUAL(kd_fate_pending_mark(kd_fc_store, longname, NULL,
                                             kd_fc_errstr,
                                             sizeof(kd_fc_errstr)),
                        KDELAY_ERR_INVALID_ARG);
        CU_ASSERT_EQUAL(kd_fate_pending_mark(kd_fc_store, "", NULL,
                                             kd_fc_errstr,
                                             sizeof(kd_fc_errstr)),
                        KDELAY_ERR_INVALID_ARG);
        CU_ASSERT_EQUAL(kd_fate_pending_mark(kd_fc_store, NULL, NULL,
                                             kd_fc_errstr,
                                             sizeof(kd_fc_errstr)),
                        KDELAY_ERR_INVALID_ARG);
        CU_ASSERT_EQUAL(kd_fc_stmts(), before);
}

/* A clear with stale_ms clears a mark only when nobody, its caller
 * included, marked or renewed it for stale_ms by the store's clock (the
 * server's: marked_age_ms says how long ago, as read): a live owner's
 * mark is cleared by no one, not even by another owner that renewed it
 * last (review finding 1). A renewal keeps the epoch and the since, and
 * changes nothing when the journal is not pending. */
void test_pending_clear_leaves_a_live_owners_mark(void)
{
        KD_FC_NEED_STORE();
        kd_fate_pending_t p;
        mark("o.journal", "fw-1");
        kd_fate_pending_t read = get("o.journal");
        CU_ASSERT(read.marked_age_ms >= 0 && read.marked_age_ms < 60000);
        CU_ASSERT_EQUAL(kd_fate_pending_clear(
                            kd_fc_store, "o.journal", read.epoch, "fw-2", 60000,
                            &p, kd_fc_errstr, sizeof(kd_fc_errstr)),
                        KDELAY_OK);
        CU_ASSERT(p.since_ms >= 0); /* renewed within 60 s */
        CU_ASSERT_EQUAL(p.epoch, read.epoch);
        CU_ASSERT_STRING_EQUAL(p.by, "fw-1");
        /* fw-2 renews it last; neither fw-2 nor fw-1 can clear it. */
        CU_ASSERT_EQUAL(kd_fate_pending_renew(kd_fc_store, "o.journal", "fw-2",
                                              kd_fc_errstr,
                                              sizeof(kd_fc_errstr)),
                        KDELAY_OK);
        p = get("o.journal");
        CU_ASSERT_EQUAL(p.epoch, read.epoch);
        CU_ASSERT_EQUAL(p.since_ms, read.since_ms);
        CU_ASSERT_STRING_EQUAL(p.by, "fw-2");
        CU_ASSERT_EQUAL(kd_fate_pending_clear(
                            kd_fc_store, "o.journal", read.epoch, "fw-2", 60000,
                            &p, kd_fc_errstr, sizeof(kd_fc_errstr)),
                        KDELAY_OK);
        CU_ASSERT(p.since_ms >= 0);
        CU_ASSERT_EQUAL(kd_fate_pending_clear(
                            kd_fc_store, "o.journal", read.epoch, "fw-1", 60000,
                            &p, kd_fc_errstr, sizeof(kd_fc_errstr)),
                        KDELAY_OK);
        CU_ASSERT(p.since_ms >= 0);
        /* Nobody renewed it for 0 ms... after a moment: stale, cleared. */
        kd_sleep_ms(5);
        CU_ASSERT_EQUAL(
            kd_fate_pending_clear(kd_fc_store, "o.journal", read.epoch, "fw-1",
                                  1, &p, kd_fc_errstr, sizeof(kd_fc_errstr)),
            KDELAY_OK);
        CU_ASSERT_EQUAL(p.since_ms, -1);
        /* Not pending: a renewal changes nothing. */
        CU_ASSERT_EQUAL(kd_fate_pending_renew(kd_fc_store, "o.journal", "fw-3",
                                              kd_fc_errstr,
                                              sizeof(kd_fc_errstr)),
                        KDELAY_OK);
        p = get("o.journal");
        CU_ASSERT_EQUAL(p.since_ms, -1);
        CU_ASSERT_STRING_EQUAL(p.by, "fw-2");
        /* Without stale_ms (-1), the epoch alone decides. */
        mark("o.journal", "fw-3");
        read = get("o.journal");
        CU_ASSERT_EQUAL(
            kd_fate_pending_clear(kd_fc_store, "o.journal", read.epoch, "fw-3",
                                  -1, &p, kd_fc_errstr, sizeof(kd_fc_errstr)),
            KDELAY_OK);
        CU_ASSERT_EQUAL(p.since_ms, -1);
        CU_ASSERT_EQUAL(kd_fc_cancel1("o"), KDELAY_OK);
}
