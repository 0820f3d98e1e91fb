/* SPDX-License-Identifier: Apache-2.0 */
/* The fate store contract (kd_fate_contract.h): updates of rows that
 * exist — takeover, mark fired, note cancelled — and gc. */
#include <string.h>

#include "fate_contract.h"
#include "kd_util.h"

static kdelay_err_t takeover1(kd_fate_claim_t *c)
{
        return kd_fate_takeover(kd_fc_store, c, 1, kd_fc_errstr,
                                sizeof(kd_fc_errstr));
}

/* A claim's lease, by the store's clock: while it holds, no takeover;
 * the claimer renews it by claiming its row again (another claimer does
 * not); once it has passed, a takeover wins and sets its own. A row
 * claimed without a lease has none (-1) and may be taken over at once. */
void test_lease_holds_off_takeover_until_it_passes(void)
{
        KD_FC_NEED_STORE();
        kd_fate_claim_t a = kd_fc_item("L", 5, "fw-a:1");
        a.lease_ms = 400;
        CU_ASSERT_EQUAL_FATAL(kd_fate_claim(kd_fc_store, &a, 1, NULL,
                                            kd_fc_errstr, sizeof(kd_fc_errstr)),
                              KDELAY_OK);
        CU_ASSERT_STRING_EQUAL(a.row_owner, "fw-a:1");
        CU_ASSERT(a.lease_left_ms > 0 && a.lease_left_ms <= 400);
        kd_fate_claim_t b = a;
        b.token = "fw-b:1";
        b.lease_ms = 5000;
        CU_ASSERT_EQUAL(takeover1(&b), KDELAY_OK);
        CU_ASSERT_STRING_EQUAL(b.row_owner, "fw-a:1"); /* the lease holds */
        CU_ASSERT(b.lease_left_ms > 0);
        kd_sleep_ms(250);
        /* Another claimer's claim changes nothing; the owner's renews. */
        kd_fate_claim_t c = kd_fc_item("L", 5, "fw-c:1");
        c.lease_ms = 5000;
        CU_ASSERT_EQUAL(kd_fate_claim(kd_fc_store, &c, 1, NULL, kd_fc_errstr,
                                      sizeof(kd_fc_errstr)),
                        KDELAY_OK);
        CU_ASSERT_STRING_EQUAL(c.row_owner, "fw-a:1");
        CU_ASSERT(c.lease_left_ms >= 0 && c.lease_left_ms <= 150);
        CU_ASSERT_EQUAL(kd_fate_claim(kd_fc_store, &a, 1, NULL, kd_fc_errstr,
                                      sizeof(kd_fc_errstr)),
                        KDELAY_OK);
        CU_ASSERT_STRING_EQUAL(a.row_owner, "fw-a:1");
        CU_ASSERT(a.lease_left_ms > 250); /* renewed: 400 from now */
        CU_ASSERT_EQUAL(takeover1(&b), KDELAY_OK);
        CU_ASSERT_STRING_EQUAL(b.row_owner, "fw-a:1");
        /* Passed: the takeover wins, with its own lease. */
        kd_sleep_ms(450);
        CU_ASSERT_EQUAL(takeover1(&b), KDELAY_OK);
        CU_ASSERT_EQUAL(b.fate, KDELAY_FATE_FIRING);
        CU_ASSERT_STRING_EQUAL(b.row_owner, "fw-b:1");
        CU_ASSERT(b.lease_left_ms > 4000);
        /* The old owner's claim again: it lost, and renews nothing. */
        CU_ASSERT_EQUAL(kd_fate_claim(kd_fc_store, &a, 1, NULL, kd_fc_errstr,
                                      sizeof(kd_fc_errstr)),
                        KDELAY_OK);
        CU_ASSERT_STRING_EQUAL(a.row_owner, "fw-b:1");
        CU_ASSERT(a.lease_left_ms > 4000);
        /* No lease: -1, and taken over at once. */
        kd_fate_claim_t n = kd_fc_claim1("N", 5, "fw-n:1");
        CU_ASSERT_EQUAL(n.lease_left_ms, -1);
        n.token = "fw-m:1";
        CU_ASSERT_EQUAL(takeover1(&n), KDELAY_OK);
        CU_ASSERT_STRING_EQUAL(n.row_owner, "fw-m:1");
        CU_ASSERT_EQUAL(n.lease_left_ms, -1);
}

/* A claim of this instance's previous process (own_previous) is taken
 * over while its lease still holds; the compare-and-set on the owner
 * stays. */
void test_own_previous_takeover_ignores_the_lease(void)
{
        KD_FC_NEED_STORE();
        kd_fate_claim_t a = kd_fc_item("P", 5, "fw-p:old");
        a.lease_ms = 60000;
        CU_ASSERT_EQUAL_FATAL(kd_fate_claim(kd_fc_store, &a, 1, NULL,
                                            kd_fc_errstr, sizeof(kd_fc_errstr)),
                              KDELAY_OK);
        CU_ASSERT(a.lease_left_ms > 50000);
        kd_fate_claim_t wrong = a;
        wrong.token = "fw-p:new";
        wrong.own_previous = 1;
        kd_strlcpy(wrong.row_owner, "fw-q:old", sizeof(wrong.row_owner));
        CU_ASSERT_EQUAL(takeover1(&wrong), KDELAY_OK);
        CU_ASSERT_STRING_EQUAL(wrong.row_owner, "fw-p:old"); /* not its owner */
        kd_fate_claim_t b = a;
        b.token = "fw-p:new";
        b.lease_ms = 5000;
        b.own_previous = 1;
        CU_ASSERT_EQUAL(takeover1(&b), KDELAY_OK);
        CU_ASSERT_EQUAL(b.fate, KDELAY_FATE_FIRING);
        CU_ASSERT_STRING_EQUAL(b.row_owner, "fw-p:new");
        CU_ASSERT(b.lease_left_ms > 4000 && b.lease_left_ms <= 5000);
}

/* Takeover is a compare-and-set on the owner: of two forwarders that both
 * think the claimer died, exactly one wins. */
void test_takeover_is_compare_and_set(void)
{
        KD_FC_NEED_STORE();
        kd_fate_claim_t c = kd_fc_item("t", 5, "dead-fw:1");
        CU_ASSERT_EQUAL_FATAL(kd_fate_claim(kd_fc_store, &c, 1, NULL,
                                            kd_fc_errstr, sizeof(kd_fc_errstr)),
                              KDELAY_OK);
        CU_ASSERT_STRING_EQUAL(c.row_owner, "dead-fw:1");
        /* Two contenders saw owner dead-fw:1. */
        kd_fate_claim_t x = c, y = c;
        x.token = "fw-x:7";
        y.token = "fw-y:9";
        uint64_t before = kd_fc_stmts();
        CU_ASSERT_EQUAL(takeover1(&x), KDELAY_OK);
        CU_ASSERT_EQUAL(kd_fc_stmts() - before, 2);
        CU_ASSERT_EQUAL(x.fate, KDELAY_FATE_FIRING);
        CU_ASSERT_STRING_EQUAL(x.row_owner, "fw-x:7");
        CU_ASSERT_EQUAL(takeover1(&y), KDELAY_OK);
        CU_ASSERT_EQUAL(y.fate, KDELAY_FATE_FIRING);
        CU_ASSERT_STRING_EQUAL(y.row_owner, "fw-x:7"); /* y lost */
        /* Owners compare as bytes: another case is another owner. */
        kd_fate_claim_t u = x;
        kd_strlcpy(u.row_owner, "FW-X:7", sizeof(u.row_owner));
        u.token = "fw-u:1";
        CU_ASSERT_EQUAL(takeover1(&u), KDELAY_OK);
        CU_ASSERT_STRING_EQUAL(u.row_owner, "fw-x:7");
        /* A claim again (INSERT IGNORE) keeps the owner. */
        kd_fate_claim_t z = kd_fc_item("t", 5, "fw-z:1");
        CU_ASSERT_EQUAL(kd_fate_claim(kd_fc_store, &z, 1, NULL, kd_fc_errstr,
                                      sizeof(kd_fc_errstr)),
                        KDELAY_OK);
        CU_ASSERT_STRING_EQUAL(z.row_owner, "fw-x:7");
        /* A FIRED row is not taken over. */
        kd_fc_fire1("t");
        kd_fate_claim_t w = x;
        w.token = "fw-w:1";
        CU_ASSERT_EQUAL(takeover1(&w), KDELAY_OK);
        CU_ASSERT_EQUAL(w.fate, KDELAY_FATE_FIRED);
        CU_ASSERT_STRING_EQUAL(w.row_owner, "fw-x:7");
        /* Nor a CANCELLED one, and an unknown id stays unknown. */
        CU_ASSERT_EQUAL(kd_fc_cancel1("c"), KDELAY_OK);
        kd_fate_claim_t v[2] = {kd_fc_item("c", 5, "fw-v:1"),
                                kd_fc_item("nobody", 5, "fw-v:1")};
        CU_ASSERT_EQUAL(kd_fate_takeover(kd_fc_store, v, 2, kd_fc_errstr,
                                         sizeof(kd_fc_errstr)),
                        KDELAY_OK);
        CU_ASSERT_EQUAL(v[0].fate, KDELAY_FATE_CANCELLED);
        CU_ASSERT_STRING_EQUAL(v[0].row_owner, "");
        CU_ASSERT_EQUAL(v[1].fate, KDELAY_FATE_UNDECIDED);
        CU_ASSERT_STRING_EQUAL(v[1].row_owner, "");
        CU_ASSERT_EQUAL(kd_fc_status1("nobody").fate, KDELAY_FATE_UNDECIDED);
}

/* A row claimed without an owner: row_owner "" stands for "none". */
void test_takeover_of_a_row_without_owner(void)
{
        KD_FC_NEED_STORE();
        kd_fate_claim_t c = kd_fc_claim1("t", 5, NULL);
        CU_ASSERT_STRING_EQUAL(c.row_owner, "");
        c.token = "fw-t:1";
        CU_ASSERT_EQUAL(takeover1(&c), KDELAY_OK);
        CU_ASSERT_STRING_EQUAL(c.row_owner, "fw-t:1");
        kd_fate_claim_t d = kd_fc_item("t", 5, "fw-d:1"); /* saw none */
        CU_ASSERT_EQUAL(takeover1(&d), KDELAY_OK);
        CU_ASSERT_STRING_EQUAL(d.row_owner, "fw-t:1");
        CU_ASSERT_STRING_EQUAL(kd_fc_status1("t").owner, "fw-t:1");
}

void test_mark_fired_moves_only_firing(void)
{
        KD_FC_NEED_STORE();
        kd_fc_claim1("f", 5, "fw-1");
        CU_ASSERT_EQUAL(kd_fc_cancel1("c"), KDELAY_OK);
        const char *ids[] = {"f", "c", "nobody", "f"};
        size_t lens[] = {1, 1, 6, 1};
        uint64_t before = kd_fc_stmts();
        CU_ASSERT_EQUAL(kd_fate_mark_fired(kd_fc_store, ids, lens, 4,
                                           kd_fc_errstr, sizeof(kd_fc_errstr)),
                        KDELAY_OK);
        CU_ASSERT_EQUAL(kd_fc_stmts() - before, 1);
        kdelay_status_t st = kd_fc_status1("f");
        CU_ASSERT_EQUAL(st.fate, KDELAY_FATE_FIRED);
        CU_ASSERT_STRING_EQUAL(st.owner, "fw-1");
        CU_ASSERT(st.updated_at_ms >= st.decided_at_ms);
        CU_ASSERT_EQUAL(kd_fc_status1("c").fate, KDELAY_FATE_CANCELLED);
        CU_ASSERT_EQUAL(kd_fc_status1("nobody").fate, KDELAY_FATE_UNDECIDED);
}

/* A claimed task dead-lettered: FIRING -> DEAD with its reason, in one
 * statement; a cancel of it answers KDELAY_ERR_DEAD; other rows stay; a
 * reason outside [a-z0-9-] is refused before any statement. */
void test_mark_dead_moves_only_firing(void)
{
        KD_FC_NEED_STORE();
        kd_fc_claim1("d", 5, "fw-1");
        kd_fc_claim1("f", 5, "fw-1");
        kd_fc_fire1("f");
        CU_ASSERT_EQUAL(kd_fc_cancel1("c"), KDELAY_OK);
        const char *ids[] = {"d", "f", "c", "nobody"};
        size_t lens[] = {1, 1, 1, 6};
        uint64_t before = kd_fc_stmts();
        CU_ASSERT_EQUAL(kd_fate_mark_dead(kd_fc_store, ids, lens, 4,
                                          "target-unavailable", kd_fc_errstr,
                                          sizeof(kd_fc_errstr)),
                        KDELAY_OK);
        CU_ASSERT_EQUAL(kd_fc_stmts() - before, 1);
        kdelay_status_t st = kd_fc_status1("d");
        CU_ASSERT_EQUAL(st.fate, KDELAY_FATE_DEAD);
        CU_ASSERT_STRING_EQUAL(st.dead_reason, "target-unavailable");
        CU_ASSERT_STRING_EQUAL(st.owner, "fw-1");
        CU_ASSERT_EQUAL(kd_fc_status1("f").fate, KDELAY_FATE_FIRED);
        CU_ASSERT_STRING_EQUAL(kd_fc_status1("f").dead_reason, "");
        CU_ASSERT_EQUAL(kd_fc_status1("c").fate, KDELAY_FATE_CANCELLED);
        CU_ASSERT_EQUAL(kd_fc_status1("nobody").fate, KDELAY_FATE_UNDECIDED);
        CU_ASSERT_EQUAL(kd_fc_cancel1("d"), KDELAY_ERR_DEAD);
        CU_ASSERT_EQUAL(kd_fc_status1("d").fate, KDELAY_FATE_DEAD);
        /* A claim meeting it reads DEAD: the forwarder skips it. */
        kd_fate_claim_t c = kd_fc_claim1("d", 5, "fw-2");
        CU_ASSERT_EQUAL(c.fate, KDELAY_FATE_DEAD);
        before = kd_fc_stmts();
        CU_ASSERT_EQUAL(kd_fate_mark_dead(kd_fc_store, ids, lens, 1,
                                          "x'; DROP TABLE t; --", kd_fc_errstr,
                                          sizeof(kd_fc_errstr)),
                        KDELAY_ERR_INVALID_ARG);
        CU_ASSERT_EQUAL(kd_fate_mark_dead(kd_fc_store, ids, lens, 1, "",
                                          kd_fc_errstr, sizeof(kd_fc_errstr)),
                        KDELAY_ERR_INVALID_ARG);
        CU_ASSERT_EQUAL(kd_fc_stmts() - before, 0);
}

/* The forwarder records the due time of a cancelled task it drops: only
 * into CANCELLED rows still without one, the first item of an id wins. */
void test_note_cancelled_sets_due_time_once(void)
{
        KD_FC_NEED_STORE();
        CU_ASSERT_EQUAL(kd_fc_cancel1("c"), KDELAY_OK);
        kd_fc_claim1("f", 1000, "fw-1");
        const char *ids[] = {"c", "f", "nobody", "c"};
        size_t lens[] = {1, 1, 6, 1};
        int64_t fa[] = {1234567, 5, 6, 999};
        uint64_t before = kd_fc_stmts();
        CU_ASSERT_EQUAL(kd_fate_note_cancelled(kd_fc_store, ids, lens, fa, 4,
                                               kd_fc_errstr,
                                               sizeof(kd_fc_errstr)),
                        KDELAY_OK);
        CU_ASSERT_EQUAL(kd_fc_stmts() - before, 1);
        fa[0] = 7654321; /* a second note does not move it */
        CU_ASSERT_EQUAL(kd_fate_note_cancelled(kd_fc_store, ids, lens, fa, 1,
                                               kd_fc_errstr,
                                               sizeof(kd_fc_errstr)),
                        KDELAY_OK);
        kdelay_status_t st = kd_fc_status1("c");
        CU_ASSERT_EQUAL(st.fate, KDELAY_FATE_CANCELLED);
        CU_ASSERT_EQUAL(st.fire_at_ms, 1234567);
        CU_ASSERT_EQUAL(kd_fc_status1("f").fire_at_ms, 1000);
        CU_ASSERT_EQUAL(kd_fc_status1("nobody").fate, KDELAY_FATE_UNDECIDED);
}

/* gc deletes rows of tasks long past due, in batches, and keeps cancels
 * whose due time is unknown (the task may still be pending). */
void test_gc_deletes_only_expired_rows(void)
{
        int64_t now = kd_now_ms(), day = 86400000LL, keep = 30 * day;
        const struct {
                const char *id;
                kdelay_fate_t fate;
                int64_t fire_at; /* -1 = none */
                int64_t decided;
                int kept;
        } rows[] = {
            {"gc-old-fired", KDELAY_FATE_FIRED, now - 40 * day, now - 40 * day,
             0},
            {"gc-old-firing", KDELAY_FATE_FIRING, now - 31 * day,
             now - 31 * day, 0},
            {"gc-old-seen-cancel", KDELAY_FATE_CANCELLED, now - 35 * day,
             now - 60 * day, 0},
            {"gc-new-fired", KDELAY_FATE_FIRED, now - 29 * day, now - 29 * day,
             1},
            {"gc-future-cancel", KDELAY_FATE_CANCELLED, now + 90 * day,
             now - 60 * day, 1},
            {"gc-unseen-cancel", KDELAY_FATE_CANCELLED, -1, now - 400 * day, 1},
            /* Due long ago, decided lately: its record is still in Kafka. */
            {"gc-old-due-new-cancel", KDELAY_FATE_CANCELLED, now - 31 * day,
             now - day, 1},
            {"gc-old-due-new-fired", KDELAY_FATE_FIRED, now - 40 * day,
             now - 29 * day, 1},
        };
        KD_FC_NEED_STORE();
        for (size_t i = 0; i < KD_ARRAY_LEN(rows); i++)
                CU_ASSERT_EQUAL_FATAL(kd_fc_put(rows[i].id, rows[i].fate,
                                                rows[i].fire_at,
                                                rows[i].decided),
                                      0);
        CU_ASSERT_EQUAL(kd_fc_cancel1("young-cancel"), KDELAY_OK);
        /* Batches of 2: the three expired rows need two statements. */
        uint64_t got[3] = {9, 9, 9};
        for (int i = 0; i < 3; i++) {
                uint64_t before = kd_fc_stmts();
                CU_ASSERT_EQUAL_FATAL(
                    kd_fate_gc(kd_fc_store, now - keep,
                               now - KDELAY_MAX_DELAY_MS - keep, 2, &got[i],
                               kd_fc_errstr, sizeof(kd_fc_errstr)),
                    KDELAY_OK);
                CU_ASSERT_EQUAL(kd_fc_stmts() - before, 1);
        }
        CU_ASSERT_EQUAL(got[0], 2);
        CU_ASSERT_EQUAL(got[1], 1);
        CU_ASSERT_EQUAL(got[2], 0);
        for (size_t i = 0; i < KD_ARRAY_LEN(rows); i++)
                CU_ASSERT_EQUAL(
                    kd_fc_status1(rows[i].id).fate ==
                        (rows[i].kept ? rows[i].fate : KDELAY_FATE_UNDECIDED),
                    1);
        CU_ASSERT_EQUAL(kd_fc_status1("young-cancel").fate,
                        KDELAY_FATE_CANCELLED);
        /* A batch of 0 deletes nothing. */
        CU_ASSERT_EQUAL(kd_fate_gc(kd_fc_store, now + day, now + day, 0,
                                   &got[0], kd_fc_errstr, sizeof(kd_fc_errstr)),
                        KDELAY_OK);
        CU_ASSERT_EQUAL(got[0], 0);
}
