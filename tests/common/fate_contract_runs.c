/* SPDX-License-Identifier: Apache-2.0 */
/* The fate store contract (kd_fate_contract.h): runs of delivered claims
 * (kd_fate_mark_runs, kdelay_fired_run). A FIRING row whose owner token
 * '<prefix>:<seq>' a run of its prefix covers reads FIRED everywhere, is
 * never taken over and is not listed as FIRING; every other row reads as
 * it is. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "fate_contract.h"
#include "kd_util.h"

#define P1 "fw:0000abcd.1" /* a token prefix: '<name>:<boot>.<gen>' */

/* Claims id under token (a fresh claim, no lease); asserted. */
static kd_fate_claim_t claim_tok(const char *id, const char *token)
{
        kd_fate_claim_t c = kd_fc_item(id, 5, token);
        c.fresh = 1;
        CU_ASSERT_EQUAL(kd_fate_claim(kd_fc_store, &c, 1, NULL, kd_fc_errstr,
                                      sizeof(kd_fc_errstr)),
                        KDELAY_OK);
        CU_ASSERT_STRING_EQUAL(c.row_owner, token);
        return c;
}

static kdelay_err_t runs(const char *prefix, const uint64_t *lo,
                         const uint64_t *hi, size_t n)
{
        return kd_fate_mark_runs(kd_fc_store, prefix, lo, hi, n, kd_fc_errstr,
                                 sizeof(kd_fc_errstr));
}

static kdelay_err_t run1(const char *prefix, uint64_t lo, uint64_t hi)
{
        return runs(prefix, &lo, &hi, 1);
}

static kdelay_fate_t fate_of(const char *id)
{
        return kd_fc_status1(id).fate;
}

/* Runs [1, 10] and [12, 12]: seqs 5, 10, 12 read FIRED in status, lookup
 * and the claim read-back, 11 and 13 FIRING; the row itself keeps its
 * owner; a cancel of either is too late. The same runs again (a retried
 * request) are OK and change nothing. One statement a call. */
void test_runs_cover_firing_rows(void)
{
        KD_FC_NEED_STORE();
        claim_tok("c5", P1 ":5");
        claim_tok("c10", P1 ":10");
        claim_tok("c11", P1 ":11");
        claim_tok("c12", P1 ":12");
        claim_tok("c13", P1 ":13");
        uint64_t lo[] = {1, 12}, hi[] = {10, 12};
        uint64_t before = kd_fc_stmts();
        CU_ASSERT_EQUAL(runs(P1, lo, hi, 2), KDELAY_OK);
        CU_ASSERT_EQUAL(kd_fc_stmts() - before, 1);
        kdelay_status_t st = kd_fc_status1("c5");
        CU_ASSERT_EQUAL(st.fate, KDELAY_FATE_FIRED);
        CU_ASSERT_STRING_EQUAL(st.owner, P1 ":5");
        CU_ASSERT_EQUAL(st.fire_at_ms, 5);
        CU_ASSERT_EQUAL(fate_of("c10"), KDELAY_FATE_FIRED);
        CU_ASSERT_EQUAL(fate_of("c11"), KDELAY_FATE_FIRING);
        CU_ASSERT_EQUAL(fate_of("c12"), KDELAY_FATE_FIRED);
        CU_ASSERT_EQUAL(fate_of("c13"), KDELAY_FATE_FIRING);
        const char *ids[] = {"c5", "c11", "c12", "c13", "none"};
        size_t lens[] = {2, 3, 3, 3, 4};
        kdelay_fate_t fates[5];
        CU_ASSERT_EQUAL(kd_fate_lookup(kd_fc_store, ids, lens, 5, fates,
                                       kd_fc_errstr, sizeof(kd_fc_errstr)),
                        KDELAY_OK);
        CU_ASSERT_EQUAL(fates[0], KDELAY_FATE_FIRED);
        CU_ASSERT_EQUAL(fates[1], KDELAY_FATE_FIRING);
        CU_ASSERT_EQUAL(fates[2], KDELAY_FATE_FIRED);
        CU_ASSERT_EQUAL(fates[3], KDELAY_FATE_FIRING);
        CU_ASSERT_EQUAL(fates[4], KDELAY_FATE_UNDECIDED);
        /* The claim read-back: a second copy of c5 (another token) and the
         * owner's own claim again both find it delivered. */
        kd_fate_claim_t again[] = {kd_fc_item("c5", 5, P1 ":99"),
                                   kd_fc_item("c5", 5, P1 ":5"),
                                   kd_fc_item("c11", 5, P1 ":11")};
        CU_ASSERT_EQUAL(kd_fate_claim(kd_fc_store, again, 3, NULL, kd_fc_errstr,
                                      sizeof(kd_fc_errstr)),
                        KDELAY_OK);
        CU_ASSERT_EQUAL(again[0].fate, KDELAY_FATE_FIRED);
        CU_ASSERT_STRING_EQUAL(again[0].row_owner, P1 ":5");
        CU_ASSERT_EQUAL(again[1].fate, KDELAY_FATE_FIRED);
        CU_ASSERT_EQUAL(again[2].fate, KDELAY_FATE_FIRING);
        CU_ASSERT_STRING_EQUAL(again[2].row_owner, P1 ":11");
        CU_ASSERT_EQUAL(kd_fc_cancel1("c5"), KDELAY_ERR_TOO_LATE);
        CU_ASSERT_EQUAL(kd_fc_cancel1("c11"), KDELAY_ERR_TOO_LATE);
        CU_ASSERT_EQUAL(fate_of("c5"), KDELAY_FATE_FIRED);
        /* Retried after a lost answer: OK, nothing changes. */
        before = kd_fc_stmts();
        CU_ASSERT_EQUAL(runs(P1, lo, hi, 2), KDELAY_OK);
        CU_ASSERT_EQUAL(kd_fc_stmts() - before, 1);
        CU_ASSERT_EQUAL(fate_of("c10"), KDELAY_FATE_FIRED);
        CU_ASSERT_EQUAL(fate_of("c11"), KDELAY_FATE_FIRING);
        /* A row marked FIRED reads FIRED whether covered or not. */
        kd_fc_fire1("c10");
        kd_fc_fire1("c11");
        CU_ASSERT_EQUAL(fate_of("c10"), KDELAY_FATE_FIRED);
        CU_ASSERT_EQUAL(fate_of("c11"), KDELAY_FATE_FIRED);
}

/* The claim read-back and lookup of rows whose owner is not the claim's
 * token (a repeated schedule of delivered ids, another copy's claims)
 * find them covered as rows of the claims' own tokens are, in one batch
 * with rows of every other kind: covered FIRING rows of other tokens and
 * of the own token read FIRED with their owner kept, uncovered ones
 * FIRING, a marked row FIRED, a cancelled one CANCELLED, a row without a
 * token owner FIRING, an id without a row FIRING under the new claim. */
void test_runs_cover_rows_of_other_owners(void)
{
        KD_FC_NEED_STORE();
        static const char *const ids[] = {"o1", "o2", "o3", "o4", "o5",
                                          "o6", "ox", "of", "oc", "onew"};
        enum { N = KD_ARRAY_LEN(ids) };
        char tok[N][40];
        for (size_t i = 0; i < 6; i++) {
                snprintf(tok[i], sizeof(tok[i]), P1 ":%zu", i + 1);
                claim_tok(ids[i], tok[i]);
        }
        kd_fc_claim1("ox", 5, "fw-plain");
        claim_tok("of", P1 ":8");
        kd_fc_fire1("of");
        CU_ASSERT_EQUAL(kd_fc_cancel1("oc"), KDELAY_OK);
        CU_ASSERT_EQUAL(run1(P1, 1, 4), KDELAY_OK);
        /* Claimed again under a later generation's tokens, but o4 and o5
         * under their own (a renewal). */
        kd_fate_claim_t c[N];
        for (size_t i = 0; i < N; i++) {
                if (i != 3 && i != 4)
                        snprintf(tok[i], sizeof(tok[i]), "fw:0000abcd.2:%zu",
                                 i + 1);
                c[i] = kd_fc_item(ids[i], 5, tok[i]);
        }
        CU_ASSERT_EQUAL_FATAL(kd_fate_claim(kd_fc_store, c, N, NULL,
                                            kd_fc_errstr, sizeof(kd_fc_errstr)),
                              KDELAY_OK);
        static const kdelay_fate_t want[N] = {
            KDELAY_FATE_FIRED,  KDELAY_FATE_FIRED,  KDELAY_FATE_FIRED,
            KDELAY_FATE_FIRED,  KDELAY_FATE_FIRING, KDELAY_FATE_FIRING,
            KDELAY_FATE_FIRING, KDELAY_FATE_FIRED,  KDELAY_FATE_CANCELLED,
            KDELAY_FATE_FIRING};
        char own[40];
        for (size_t i = 0; i < N; i++) {
                CU_ASSERT_EQUAL(c[i].fate, want[i]);
                if (i < 6) {
                        snprintf(own, sizeof(own), P1 ":%zu", i + 1);
                        CU_ASSERT_STRING_EQUAL(c[i].row_owner, own);
                }
        }
        CU_ASSERT_STRING_EQUAL(c[6].row_owner, "fw-plain");
        CU_ASSERT_STRING_EQUAL(c[9].row_owner, "fw:0000abcd.2:10");
        size_t lens[N];
        kdelay_fate_t fates[N];
        for (size_t i = 0; i < N; i++)
                lens[i] = strlen(ids[i]);
        CU_ASSERT_EQUAL(kd_fate_lookup(kd_fc_store, ids, lens, N, fates,
                                       kd_fc_errstr, sizeof(kd_fc_errstr)),
                        KDELAY_OK);
        for (size_t i = 0; i < N; i++)
                CU_ASSERT_EQUAL(fates[i], want[i]);
        /* A run over o5, o6 and the new claim of onew: FIRED too. */
        uint64_t lo[] = {5}, hi[] = {6};
        CU_ASSERT_EQUAL(runs(P1, lo, hi, 1), KDELAY_OK);
        CU_ASSERT_EQUAL(run1("fw:0000abcd.2", 10, 10), KDELAY_OK);
        CU_ASSERT_EQUAL(kd_fate_claim(kd_fc_store, c, N, NULL, kd_fc_errstr,
                                      sizeof(kd_fc_errstr)),
                        KDELAY_OK);
        CU_ASSERT_EQUAL(kd_fate_lookup(kd_fc_store, ids, lens, N, fates,
                                       kd_fc_errstr, sizeof(kd_fc_errstr)),
                        KDELAY_OK);
        for (size_t i = 0; i < N; i++) {
                kdelay_fate_t w =
                    i == 4 || i == 5 || i == 9 ? KDELAY_FATE_FIRED : want[i];
                CU_ASSERT_EQUAL(c[i].fate, w);
                CU_ASSERT_EQUAL(fates[i], w);
        }
}

/* kd_fate_counts: rows by state as readers see them. A FIRING row a run
 * covers counts FIRED (and in fired_by_runs), one no run covers FIRING
 * (a token's or not); a marked row FIRED once, covered or not. */
void test_counts_split_covered_firing_rows(void)
{
        KD_FC_NEED_STORE();
        kd_fate_counts_t c;
        CU_ASSERT_EQUAL(
            kd_fate_counts(kd_fc_store, &c, kd_fc_errstr, sizeof(kd_fc_errstr)),
            KDELAY_OK);
        CU_ASSERT_EQUAL(c.firing + c.fired + c.cancelled + c.dead, 0);
        claim_tok("k1", P1 ":1");
        claim_tok("k2", P1 ":2");
        claim_tok("k3", P1 ":3");
        claim_tok("k4", P1 ":4");           /* marked FIRED, then covered too */
        claim_tok("k5", "FW:0000ABCD.1:2"); /* another prefix by bytes */
        kd_fc_claim1("k6", 5, "fw-plain");
        claim_tok("kd", P1 ":9");
        kd_fc_fire1("k4");
        CU_ASSERT_EQUAL(kd_fc_cancel1("kc"), KDELAY_OK);
        const char *dead = "kd";
        size_t dlen = 2;
        CU_ASSERT_EQUAL(kd_fate_mark_dead(kd_fc_store, &dead, &dlen, 1,
                                          "missing-target", kd_fc_errstr,
                                          sizeof(kd_fc_errstr)),
                        KDELAY_OK);
        uint64_t lo[] = {1, 4}, hi[] = {2, 9};
        CU_ASSERT_EQUAL(runs(P1, lo, hi, 2), KDELAY_OK);
        uint64_t before = kd_fc_stmts();
        CU_ASSERT_EQUAL(
            kd_fate_counts(kd_fc_store, &c, kd_fc_errstr, sizeof(kd_fc_errstr)),
            KDELAY_OK);
        /* the runs, one page, the count by state (the MySQL store's
         * read-only transaction around them: two more) */
        CU_ASSERT(kd_fc_stmts() - before >= 3 && kd_fc_stmts() - before <= 5);
        CU_ASSERT_EQUAL(c.firing, 3);        /* k3, k5, k6 */
        CU_ASSERT_EQUAL(c.fired, 3);         /* k1, k2, k4 */
        CU_ASSERT_EQUAL(c.fired_by_runs, 2); /* k1, k2 */
        CU_ASSERT_EQUAL(c.cancelled, 1);
        CU_ASSERT_EQUAL(c.dead, 1);
        /* As status answers, row by row. */
        CU_ASSERT_EQUAL(fate_of("k1"), KDELAY_FATE_FIRED);
        CU_ASSERT_EQUAL(fate_of("k3"), KDELAY_FATE_FIRING);
        CU_ASSERT_EQUAL(fate_of("k5"), KDELAY_FATE_FIRING);
}

/* A run covers only its own prefix: runs of another generation, boot or
 * name, or of a name that is a prefix of this one, cover nothing here. */
void test_runs_of_another_prefix_do_not_cover(void)
{
        KD_FC_NEED_STORE();
        claim_tok("a", P1 ":7");
        CU_ASSERT_EQUAL(run1("fw:0000abcd.2", 1, 100), KDELAY_OK);
        CU_ASSERT_EQUAL(run1("fw:0000abce.1", 1, 100), KDELAY_OK);
        CU_ASSERT_EQUAL(run1("fw-b:0000abcd.1", 1, 100), KDELAY_OK);
        CU_ASSERT_EQUAL(run1("f:0000abcd.1", 1, 100), KDELAY_OK);
        CU_ASSERT_EQUAL(run1("fw:0000abcd.10", 1, 100), KDELAY_OK);
        CU_ASSERT_EQUAL(run1("FW:0000ABCD.1", 1, 100), KDELAY_OK);
        CU_ASSERT_EQUAL(fate_of("a"), KDELAY_FATE_FIRING);
        CU_ASSERT_EQUAL(run1(P1, 7, 7), KDELAY_OK);
        CU_ASSERT_EQUAL(fate_of("a"), KDELAY_FATE_FIRED);
}

/* Only an owner '<a>:<b>:<seq>' with seq in its shortest decimal form can
 * be covered: no owner, no ':', one ':', three, a seq with a sign, a
 * letter, a leading zero or past UINT64_MAX never are, nor one whose
 * prefix differs in case only (bytes compare). A hashed token name
 * ('~', kd_fwd_claim_t) is a name like any other; UINT64_MAX is a seq
 * like any other. */
void test_run_owner_edge_cases(void)
{
        KD_FC_NEED_STORE();
        static const char *const never[] = {
            "fw",     P1,
            P1 ":",   ":0000abcd.1:5",
            "fw::5",  P1 ":5:5",
            P1 ":05", P1 ":+5",
            P1 ":5x", P1 ":x5",
            P1 ": 5", "FW:0000ABCD.1:5",
            P1 ":-5", "fw:0000abcd.1:18446744073709551616"};
        char id[16];
        /* First the covered ones, so that a reader that caches its answer
         * by owner under a case-folding collation would show it. */
        claim_tok("yes", P1 ":5");
        claim_tok("hash", "fw-long-nam~1a2b3c4d:0000abcd.2:7");
        claim_tok("max", P1 ":18446744073709551615");
        CU_ASSERT_EQUAL(kd_fc_put("nobody", KDELAY_FATE_FIRING, 5, 1), 0);
        for (size_t i = 0; i < KD_ARRAY_LEN(never); i++) {
                snprintf(id, sizeof(id), "never-%zu", i);
                claim_tok(id, never[i]);
        }
        uint64_t lo[] = {0, 18446744073709551610ULL}, hi[] = {100, UINT64_MAX};
        CU_ASSERT_EQUAL(runs(P1, lo, hi, 2), KDELAY_OK);
        CU_ASSERT_EQUAL(run1("fw-long-nam~1a2b3c4d:0000abcd.2", 1, 10),
                        KDELAY_OK);
        CU_ASSERT_EQUAL(fate_of("yes"), KDELAY_FATE_FIRED);
        CU_ASSERT_EQUAL(fate_of("hash"), KDELAY_FATE_FIRED);
        CU_ASSERT_EQUAL(fate_of("max"), KDELAY_FATE_FIRED);
        CU_ASSERT_EQUAL(fate_of("nobody"), KDELAY_FATE_FIRING);
        /* Looked up in one statement with the covered row first. */
        enum { N = KD_ARRAY_LEN(never) + 1 };
        const char *ids[N] = {"yes"};
        size_t lens[N] = {3};
        kdelay_fate_t fates[N];
        char names[N][16];
        for (size_t i = 1; i < N; i++) {
                snprintf(names[i], sizeof(names[i]), "never-%zu", i - 1);
                ids[i] = names[i];
                lens[i] = strlen(names[i]);
                CU_ASSERT_EQUAL(fate_of(names[i]), KDELAY_FATE_FIRING);
        }
        CU_ASSERT_EQUAL(kd_fate_lookup(kd_fc_store, ids, lens, N, fates,
                                       kd_fc_errstr, sizeof(kd_fc_errstr)),
                        KDELAY_OK);
        CU_ASSERT_EQUAL(fates[0], KDELAY_FATE_FIRED);
        for (size_t i = 1; i < N; i++)
                CU_ASSERT_EQUAL(fates[i], KDELAY_FATE_FIRING);
        kd_fate_firing_t rows[32];
        size_t n = 0;
        CU_ASSERT_EQUAL(kd_fate_firing(kd_fc_store, INT64_MAX, INT64_MAX, rows,
                                       32, &n, kd_fc_errstr,
                                       sizeof(kd_fc_errstr)),
                        KDELAY_OK);
        CU_ASSERT_EQUAL(n, KD_ARRAY_LEN(never) + 1); /* + nobody */
}

/* A covered row was delivered: a takeover leaves it (its owner stays, it
 * reads FIRED); an uncovered row of the same prefix is taken over. */
void test_takeover_of_a_covered_row_fails(void)
{
        KD_FC_NEED_STORE();
        claim_tok("t5", P1 ":5");
        claim_tok("t6", P1 ":6");
        CU_ASSERT_EQUAL(run1(P1, 5, 5), KDELAY_OK);
        kd_fate_claim_t t[] = {kd_fc_item("t5", 5, "fw-b:00000001.1:1"),
                               kd_fc_item("t6", 5, "fw-b:00000001.1:2")};
        kd_strlcpy(t[0].row_owner, P1 ":5", sizeof(t[0].row_owner));
        kd_strlcpy(t[1].row_owner, P1 ":6", sizeof(t[1].row_owner));
        CU_ASSERT_EQUAL(kd_fate_takeover(kd_fc_store, t, 2, kd_fc_errstr,
                                         sizeof(kd_fc_errstr)),
                        KDELAY_OK);
        CU_ASSERT_EQUAL(t[0].fate, KDELAY_FATE_FIRED);
        CU_ASSERT_STRING_EQUAL(t[0].row_owner, P1 ":5");
        CU_ASSERT_EQUAL(t[1].fate, KDELAY_FATE_FIRING);
        CU_ASSERT_STRING_EQUAL(t[1].row_owner, "fw-b:00000001.1:2");
        /* own_previous ignores the lease, never a run. */
        kd_fate_claim_t own = kd_fc_item("t5", 5, "fw:0000abcd.2:1");
        own.own_previous = 1;
        kd_strlcpy(own.row_owner, P1 ":5", sizeof(own.row_owner));
        CU_ASSERT_EQUAL(kd_fate_takeover(kd_fc_store, &own, 1, kd_fc_errstr,
                                         sizeof(kd_fc_errstr)),
                        KDELAY_OK);
        CU_ASSERT_EQUAL(own.fate, KDELAY_FATE_FIRED);
        CU_ASSERT_STRING_EQUAL(own.row_owner, P1 ":5");
}

/* audit's scan lists only FIRING rows no run covers. */
void test_firing_scan_skips_covered_rows(void)
{
        KD_FC_NEED_STORE();
        claim_tok("f1", P1 ":1");
        claim_tok("f2", P1 ":2");
        claim_tok("f3", P1 ":3");
        CU_ASSERT_EQUAL(run1(P1, 1, 2), KDELAY_OK);
        kd_fate_firing_t rows[4];
        size_t n = 0;
        CU_ASSERT_EQUAL(kd_fate_firing(kd_fc_store, kd_now_ms() + 1000,
                                       INT64_MAX, rows, 4, &n, kd_fc_errstr,
                                       sizeof(kd_fc_errstr)),
                        KDELAY_OK);
        CU_ASSERT_EQUAL_FATAL(n, 1);
        CU_ASSERT_STRING_EQUAL(rows[0].id, "f3");
}

/* The scan lists the oldest uncovered rows, oldest first, however many
 * covered rows are older or lie between them (MySQL tests coverage after
 * reading a page, fate_firing.c). */
void test_firing_scan_keeps_the_oldest_uncovered(void)
{
        KD_FC_NEED_STORE();
        const char *order[] = {"c1", "u1", "c2", "u2", "c3", "u3", "c4"};
        const char *tok[] = {P1 ":1", P1 ":2", P1 ":3", P1 ":4",
                             P1 ":5", P1 ":6", P1 ":7"};
        /* Claimed in reverse id order, so that the id order is not the
         * age order. */
        for (size_t i = 0; i < 7; i++) {
                claim_tok(order[6 - i], tok[6 - i]);
                kd_sleep_ms(3);
        }
        uint64_t lo[] = {1, 3, 5, 7}, hi[] = {1, 3, 5, 7};
        CU_ASSERT_EQUAL(runs(P1, lo, hi, 4), KDELAY_OK);
        kd_fate_firing_t rows[4];
        size_t n = 0;
        int64_t later = kd_now_ms() + 1000;
        CU_ASSERT_EQUAL(kd_fate_firing(kd_fc_store, later, INT64_MAX, rows, 2,
                                       &n, kd_fc_errstr, sizeof(kd_fc_errstr)),
                        KDELAY_OK);
        CU_ASSERT_EQUAL_FATAL(n, 2);
        CU_ASSERT_STRING_EQUAL(rows[0].id, "u3"); /* claimed first */
        CU_ASSERT_STRING_EQUAL(rows[1].id, "u2");
        CU_ASSERT_EQUAL(kd_fate_firing(kd_fc_store, later, INT64_MAX, rows, 4,
                                       &n, kd_fc_errstr, sizeof(kd_fc_errstr)),
                        KDELAY_OK);
        CU_ASSERT_EQUAL_FATAL(n, 3);
        CU_ASSERT_STRING_EQUAL(rows[0].id, "u3");
        CU_ASSERT_STRING_EQUAL(rows[1].id, "u2");
        CU_ASSERT_STRING_EQUAL(rows[2].id, "u1");
        CU_ASSERT_STRING_EQUAL(rows[2].owner, P1 ":2");
        CU_ASSERT(rows[0].updated_at_ms < rows[1].updated_at_ms);
        CU_ASSERT(rows[1].updated_at_ms < rows[2].updated_at_ms);
        CU_ASSERT_EQUAL(kd_fate_firing(kd_fc_store, later, INT64_MAX, rows, 0,
                                       &n, kd_fc_errstr, sizeof(kd_fc_errstr)),
                        KDELAY_OK);
        CU_ASSERT_EQUAL(n, 0);
}

/* gc deletes the rows first, then the runs recorded before the same
 * horizon, in batches; a run recorded after it stays. */
void test_gc_removes_rows_then_runs(void)
{
        KD_FC_NEED_STORE();
        int64_t day = 86400000, now = kd_now_ms();
        claim_tok("g1", P1 ":1");
        claim_tok("g2", P1 ":2");
        uint64_t lo[] = {1, 2}, hi[] = {1, 2};
        CU_ASSERT_EQUAL(runs(P1, lo, hi, 2), KDELAY_OK);
        uint64_t got = 99;
        /* Before the horizon: neither rows nor runs go. */
        CU_ASSERT_EQUAL(kd_fate_gc_runs(kd_fc_store, now - day, 10, &got,
                                        kd_fc_errstr, sizeof(kd_fc_errstr)),
                        KDELAY_OK);
        CU_ASSERT_EQUAL(got, 0);
        CU_ASSERT_EQUAL(fate_of("g1"), KDELAY_FATE_FIRED);
        CU_ASSERT_EQUAL(kd_fate_gc(kd_fc_store, now + day, now + day, 10, &got,
                                   kd_fc_errstr, sizeof(kd_fc_errstr)),
                        KDELAY_OK);
        CU_ASSERT_EQUAL(got, 2);
        CU_ASSERT_EQUAL(fate_of("g1"), KDELAY_FATE_UNDECIDED);
        uint64_t before = kd_fc_stmts();
        CU_ASSERT_EQUAL(kd_fate_gc_runs(kd_fc_store, now + day, 1, &got,
                                        kd_fc_errstr, sizeof(kd_fc_errstr)),
                        KDELAY_OK);
        CU_ASSERT_EQUAL(got, 1);
        CU_ASSERT_EQUAL(kd_fc_stmts() - before, 1);
        CU_ASSERT_EQUAL(kd_fate_gc_runs(kd_fc_store, now + day, 10, &got,
                                        kd_fc_errstr, sizeof(kd_fc_errstr)),
                        KDELAY_OK);
        CU_ASSERT_EQUAL(got, 1);
        /* The runs are gone: a row of a covered token again reads FIRING. */
        claim_tok("g1", P1 ":1");
        CU_ASSERT_EQUAL(fate_of("g1"), KDELAY_FATE_FIRING);
        CU_ASSERT_EQUAL(kd_fate_gc_runs(kd_fc_store, now + day, 10, &got,
                                        kd_fc_errstr, sizeof(kd_fc_errstr)),
                        KDELAY_OK);
        CU_ASSERT_EQUAL(got, 0);
}

/* What kd_fate_mark_runs refuses, with no statement sent: a prefix that
 * is no token's ('<name>:<boot>.<gen>', <= KD_FATE_RUN_PREFIX_MAX bytes),
 * an empty run, runs out of order or overlapping; no runs is OK without
 * a statement. */
void test_mark_runs_arguments(void)
{
        KD_FC_NEED_STORE();
        char longp[KD_FATE_RUN_PREFIX_MAX + 2];
        memset(longp, 'n', sizeof(longp) - 1);
        longp[sizeof(longp) - 1] = '\0';
        longp[3] = ':';
        static const char *const bad[] = {"fw", "fw:", ":x", "a:b:c", "", "::"};
        uint64_t before = kd_fc_stmts();
        CU_ASSERT_EQUAL(run1(NULL, 1, 1), KDELAY_ERR_INVALID_ARG);
        for (size_t i = 0; i < KD_ARRAY_LEN(bad); i++)
                CU_ASSERT_EQUAL(run1(bad[i], 1, 1), KDELAY_ERR_INVALID_ARG);
        CU_ASSERT_EQUAL(run1(longp, 1, 1), KDELAY_ERR_INVALID_ARG);
        longp[KD_FATE_RUN_PREFIX_MAX] = '\0'; /* the longest: fits */
        CU_ASSERT_EQUAL(run1(P1, 5, 4), KDELAY_ERR_INVALID_ARG);
        uint64_t lo[] = {1, 5}, hi[] = {5, 9};   /* overlap at 5 */
        uint64_t lo2[] = {6, 1}, hi2[] = {9, 3}; /* descending */
        CU_ASSERT_EQUAL(runs(P1, lo, hi, 2), KDELAY_ERR_INVALID_ARG);
        CU_ASSERT_EQUAL(runs(P1, lo2, hi2, 2), KDELAY_ERR_INVALID_ARG);
        CU_ASSERT_EQUAL(runs(P1, NULL, NULL, 0), KDELAY_OK);
        CU_ASSERT_EQUAL(runs(P1, NULL, NULL, 1), KDELAY_ERR_INVALID_ARG);
        uint64_t got = 7;
        CU_ASSERT_EQUAL(kd_fate_gc_runs(kd_fc_store, 0, -1, &got, kd_fc_errstr,
                                        sizeof(kd_fc_errstr)),
                        KDELAY_ERR_INVALID_ARG);
        CU_ASSERT_EQUAL(kd_fate_gc_runs(kd_fc_store, 0, 0, &got, kd_fc_errstr,
                                        sizeof(kd_fc_errstr)),
                        KDELAY_OK);
        CU_ASSERT_EQUAL(got, 0);
        CU_ASSERT_EQUAL(kd_fc_stmts(), before);
        CU_ASSERT_EQUAL(run1(longp, 1, 1), KDELAY_OK);
        CU_ASSERT_EQUAL(kd_fc_stmts() - before, 1);
        /* A token of the longest prefix fits the owner column. */
        char tok[KD_FATE_OWNER_MAX + 1];
        memcpy(tok, longp, KD_FATE_RUN_PREFIX_MAX);
        memcpy(tok + KD_FATE_RUN_PREFIX_MAX, ":1", 3);
        claim_tok("long", tok);
        CU_ASSERT_EQUAL(fate_of("long"), KDELAY_FATE_FIRED);
}
