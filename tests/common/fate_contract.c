/* SPDX-License-Identifier: Apache-2.0 */
/* The fate store contract (kd_fate_contract.h): claims, cancels and
 * status. The updates of rows that exist (takeover, mark fired, note
 * cancelled, gc) are in fate_contract_update.c. Every case gets a new
 * store over an empty table. */
#include "fate_contract.h"

#include <stdio.h>
#include <string.h>

#include "kd_util.h"

static const kd_fate_contract_t *impl; /* borrowed */
kd_fate_store_t *kd_fc_store;          /* owned: this case's */
char kd_fc_errstr[256];

static void setup(void)
{
        kd_fc_store = NULL;
        if (impl->open(&kd_fc_store))
                kd_fc_store = NULL; /* the case fails on it */
}

static void teardown(void)
{
        kd_fate_store_destroy(kd_fc_store);
        kd_fc_store = NULL;
}

int kd_fc_put(const char *id, kdelay_fate_t fate, int64_t fire_at_ms,
              int64_t decided_at_ms)
{
        return impl->put(kd_fc_store, id, fate, fire_at_ms, decided_at_ms);
}

uint64_t kd_fc_stmts(void)
{
        return kd_fate_statements(kd_fc_store);
}

kd_fate_claim_t kd_fc_item(const char *id, int64_t fire_at, const char *token)
{
        kd_fate_claim_t c = {id,    strlen(id), fire_at, KDELAY_FATE_UNDECIDED,
                             token, ""};
        return c;
}

kd_fate_claim_t kd_fc_claim1(const char *id, int64_t fire_at, const char *owner)
{
        kd_fate_claim_t c = kd_fc_item(id, fire_at, NULL);
        CU_ASSERT_EQUAL(kd_fate_claim(kd_fc_store, &c, 1, owner, kd_fc_errstr,
                                      sizeof(kd_fc_errstr)),
                        KDELAY_OK);
        return c;
}

void kd_fc_fire1(const char *id)
{
        size_t len = strlen(id);
        CU_ASSERT_EQUAL(kd_fate_mark_fired(kd_fc_store, &id, &len, 1,
                                           kd_fc_errstr, sizeof(kd_fc_errstr)),
                        KDELAY_OK);
}

kdelay_err_t kd_fc_cancel1(const char *id)
{
        return kd_fate_cancel(kd_fc_store, id, strlen(id), kd_fc_errstr,
                              sizeof(kd_fc_errstr));
}

kdelay_status_t kd_fc_status_n(const char *id, size_t len)
{
        kdelay_status_t st;
        memset(&st, 0, sizeof(st));
        CU_ASSERT_EQUAL(kd_fate_status(kd_fc_store, id, len, &st, kd_fc_errstr,
                                       sizeof(kd_fc_errstr)),
                        KDELAY_OK);
        return st;
}

kdelay_status_t kd_fc_status1(const char *id)
{
        return kd_fc_status_n(id, strlen(id));
}

static void test_status_of_unknown_id_is_undecided(void)
{
        KD_FC_NEED_STORE();
        uint64_t before = kd_fc_stmts();
        kdelay_status_t st = kd_fc_status1("nobody");
        CU_ASSERT_EQUAL(kd_fc_stmts() - before, 1);
        CU_ASSERT_EQUAL(st.fate, KDELAY_FATE_UNDECIDED);
        CU_ASSERT_EQUAL(st.fire_at_ms, -1);
        CU_ASSERT_EQUAL(st.decided_at_ms, -1);
        CU_ASSERT_EQUAL(st.updated_at_ms, -1);
        CU_ASSERT_STRING_EQUAL(st.owner, "");
}

static void test_claim_inserts_firing_rows(void)
{
        KD_FC_NEED_STORE();
        int64_t t0 = kd_now_ms();
        kd_fate_claim_t c[2] = {kd_fc_item("a", 1000, NULL),
                                kd_fc_item("b", 2000, "tok-b")};
        uint64_t before = kd_fc_stmts();
        CU_ASSERT_EQUAL_FATAL(kd_fate_claim(kd_fc_store, c, 2, "fw-1",
                                            kd_fc_errstr, sizeof(kd_fc_errstr)),
                              KDELAY_OK);
        CU_ASSERT_EQUAL(kd_fc_stmts() - before, 2);
        CU_ASSERT_EQUAL(c[0].fate, KDELAY_FATE_FIRING);
        CU_ASSERT_STRING_EQUAL(c[0].row_owner, "fw-1");
        CU_ASSERT_EQUAL(c[1].fate, KDELAY_FATE_FIRING);
        CU_ASSERT_STRING_EQUAL(c[1].row_owner, "tok-b");
        kdelay_status_t st = kd_fc_status1("a");
        CU_ASSERT_EQUAL(st.fate, KDELAY_FATE_FIRING);
        CU_ASSERT_EQUAL(st.fire_at_ms, 1000);
        CU_ASSERT_STRING_EQUAL(st.owner, "fw-1");
        CU_ASSERT(st.decided_at_ms >= t0 && st.decided_at_ms <= kd_now_ms());
        CU_ASSERT_EQUAL(st.updated_at_ms, st.decided_at_ms);
}

static void test_claim_loses_to_an_earlier_claim(void)
{
        KD_FC_NEED_STORE();
        kd_fc_claim1("a", 1000, "fw-1");
        kd_fate_claim_t c = kd_fc_claim1("a", 2000, "fw-2");
        CU_ASSERT_EQUAL(c.fate, KDELAY_FATE_FIRING);
        CU_ASSERT_STRING_EQUAL(c.row_owner, "fw-1");
        kdelay_status_t st = kd_fc_status1("a");
        CU_ASSERT_EQUAL(st.fire_at_ms, 1000);
        CU_ASSERT_STRING_EQUAL(st.owner, "fw-1");
}

static void test_claim_finds_cancelled_and_fired(void)
{
        KD_FC_NEED_STORE();
        CU_ASSERT_EQUAL(kd_fc_cancel1("c"), KDELAY_OK);
        kd_fc_claim1("f", 5, "fw-1");
        kd_fc_fire1("f");
        kd_fate_claim_t c[3] = {kd_fc_item("c", 5, NULL),
                                kd_fc_item("f", 5, NULL),
                                kd_fc_item("n", 5, NULL)};
        CU_ASSERT_EQUAL_FATAL(kd_fate_claim(kd_fc_store, c, 3, "fw-2",
                                            kd_fc_errstr, sizeof(kd_fc_errstr)),
                              KDELAY_OK);
        CU_ASSERT_EQUAL(c[0].fate, KDELAY_FATE_CANCELLED);
        CU_ASSERT_STRING_EQUAL(c[0].row_owner, "");
        CU_ASSERT_EQUAL(c[1].fate, KDELAY_FATE_FIRED);
        CU_ASSERT_STRING_EQUAL(c[1].row_owner, "fw-1");
        CU_ASSERT_EQUAL(c[2].fate, KDELAY_FATE_FIRING);
        CU_ASSERT_STRING_EQUAL(c[2].row_owner, "fw-2");
        CU_ASSERT_EQUAL(kd_fc_status1("c").fate, KDELAY_FATE_CANCELLED);
        CU_ASSERT_EQUAL(kd_fc_status1("c").fire_at_ms, -1);
}

/* One batch of 200 in two statements, then one to mark it fired. */
static void test_batch_claim_uses_two_statements(void)
{
        enum { N = 200 };
        static char ids[N][16];
        static kd_fate_claim_t items[N];
        static const char *fired[N];
        static size_t lens[N];
        KD_FC_NEED_STORE();
        for (int i = 0; i < N; i++) {
                snprintf(ids[i], sizeof(ids[i]), "task-%d", i);
                if (i % 10 == 0)
                        CU_ASSERT_EQUAL(kd_fc_cancel1(ids[i]), KDELAY_OK);
                if (i % 10 == 1) {
                        kd_fc_claim1(ids[i], 1, "fw-0");
                        kd_fc_fire1(ids[i]);
                }
                items[i] = kd_fc_item(ids[i], 42, NULL);
        }
        uint64_t before = kd_fc_stmts();
        CU_ASSERT_EQUAL_FATAL(kd_fate_claim(kd_fc_store, items, N, "fw-batch",
                                            kd_fc_errstr, sizeof(kd_fc_errstr)),
                              KDELAY_OK);
        CU_ASSERT_EQUAL(kd_fc_stmts() - before, 2);
        size_t nf = 0;
        for (int i = 0; i < N; i++) {
                kdelay_fate_t want = i % 10 == 0   ? KDELAY_FATE_CANCELLED
                                     : i % 10 == 1 ? KDELAY_FATE_FIRED
                                                   : KDELAY_FATE_FIRING;
                CU_ASSERT_EQUAL(items[i].fate, want);
                if (items[i].fate == KDELAY_FATE_FIRING) {
                        fired[nf] = ids[i];
                        lens[nf++] = strlen(ids[i]);
                }
        }
        before = kd_fc_stmts();
        CU_ASSERT_EQUAL(kd_fate_mark_fired(kd_fc_store, fired, lens, nf,
                                           kd_fc_errstr, sizeof(kd_fc_errstr)),
                        KDELAY_OK);
        CU_ASSERT_EQUAL(kd_fc_stmts() - before, 1);
        CU_ASSERT_EQUAL(kd_fc_status1(ids[5]).fate, KDELAY_FATE_FIRED);
}

/* A batch of fresh claims (new tokens) that all insert is answered by
 * the insert alone: one statement, each item FIRING under its token with
 * the lease it asked for. */
static void test_fresh_batch_that_inserts_all_is_one_statement(void)
{
        enum { N = 100 };
        static char ids[N][16], toks[N][16];
        static kd_fate_claim_t items[N];
        KD_FC_NEED_STORE();
        for (int i = 0; i < N; i++) {
                snprintf(ids[i], sizeof(ids[i]), "fresh-%d", i);
                snprintf(toks[i], sizeof(toks[i]), "tok-%d", i);
                items[i] = kd_fc_item(ids[i], 42, toks[i]);
                items[i].fresh = 1;
                items[i].lease_ms = i % 2 ? 30000 : 0;
        }
        uint64_t before = kd_fc_stmts();
        CU_ASSERT_EQUAL_FATAL(kd_fate_claim(kd_fc_store, items, N, "fw",
                                            kd_fc_errstr, sizeof(kd_fc_errstr)),
                              KDELAY_OK);
        CU_ASSERT_EQUAL(kd_fc_stmts() - before, 1);
        for (int i = 0; i < N; i++) {
                CU_ASSERT_EQUAL(items[i].fate, KDELAY_FATE_FIRING);
                CU_ASSERT_STRING_EQUAL(items[i].row_owner, toks[i]);
                if (i % 2) {
                        CU_ASSERT(items[i].lease_left_ms > 29000 &&
                                  items[i].lease_left_ms <= 30000);
                } else {
                        CU_ASSERT_EQUAL(items[i].lease_left_ms, -1);
                }
        }
        kdelay_status_t st = kd_fc_status1(ids[7]);
        CU_ASSERT_EQUAL(st.fate, KDELAY_FATE_FIRING);
        CU_ASSERT_STRING_EQUAL(st.owner, toks[7]);
}

/* Fresh claims that meet rows (cancelled, fired, another's claim, the
 * same id twice in the batch) read them back: two statements, each item
 * told its row's fate and owner. */
/* pad more fresh items, each under its own new token, after the six:
 * 34 make a batch of 40, which the MySQL store sends bound (array-bound
 * on MariaDB, fate_claim_bulk.c) where 6 go as text: the affected rows
 * of either must send it to the read-back. */
static void fresh_claims_meeting_rows(int pad)
{
        enum { MAXPAD = 34 };
        static char ids[MAXPAD][24], toks[MAXPAD][24];
        kd_fate_claim_t c[6 + MAXPAD];
        CU_ASSERT_FATAL(pad >= 0 && pad <= MAXPAD);
        KD_FC_NEED_STORE();
        CU_ASSERT_EQUAL(kd_fc_cancel1("c"), KDELAY_OK);
        kd_fc_claim1("f", 5, "fw-1");
        kd_fc_fire1("f");
        kd_fc_claim1("o", 5, "fw-1");
        c[0] = kd_fc_item("n1", 5, "t-n1");
        c[1] = kd_fc_item("c", 5, "t-c");
        c[2] = kd_fc_item("f", 5, "t-f");
        c[3] = kd_fc_item("o", 5, "t-o");
        c[4] = kd_fc_item("d", 5, "t-d1");
        c[5] = kd_fc_item("d", 5, "t-d2");
        for (int i = 0; i < pad; i++) {
                snprintf(ids[i], sizeof(ids[i]), "pad-%d", i);
                snprintf(toks[i], sizeof(toks[i]), "t-pad-%d", i);
                c[6 + i] = kd_fc_item(ids[i], 5, toks[i]);
        }
        for (int i = 0; i < 6 + pad; i++) {
                c[i].fresh = 1;
                c[i].lease_ms = 30000;
        }
        uint64_t before = kd_fc_stmts();
        CU_ASSERT_EQUAL_FATAL(kd_fate_claim(kd_fc_store, c, (size_t)(6 + pad),
                                            NULL, kd_fc_errstr,
                                            sizeof(kd_fc_errstr)),
                              KDELAY_OK);
        CU_ASSERT_EQUAL(kd_fc_stmts() - before, 2);
        CU_ASSERT_EQUAL(c[0].fate, KDELAY_FATE_FIRING);
        CU_ASSERT_STRING_EQUAL(c[0].row_owner, "t-n1");
        CU_ASSERT_EQUAL(c[1].fate, KDELAY_FATE_CANCELLED);
        CU_ASSERT_EQUAL(c[2].fate, KDELAY_FATE_FIRED);
        CU_ASSERT_STRING_EQUAL(c[2].row_owner, "fw-1");
        CU_ASSERT_EQUAL(c[3].fate, KDELAY_FATE_FIRING);
        CU_ASSERT_STRING_EQUAL(c[3].row_owner, "fw-1");
        CU_ASSERT_EQUAL(c[4].fate, KDELAY_FATE_FIRING);
        CU_ASSERT_STRING_EQUAL(c[4].row_owner, "t-d1");
        CU_ASSERT_EQUAL(c[5].fate, KDELAY_FATE_FIRING);
        CU_ASSERT_STRING_EQUAL(c[5].row_owner, "t-d1");
        for (int i = 0; i < pad; i++) {
                CU_ASSERT_EQUAL(c[6 + i].fate, KDELAY_FATE_FIRING);
                CU_ASSERT_STRING_EQUAL(c[6 + i].row_owner, toks[i]);
        }
}

static void test_fresh_claims_meeting_rows_read_them_back(void)
{
        fresh_claims_meeting_rows(0);
}

static void test_fresh_batch_of_40_meeting_rows_reads_them_back(void)
{
        fresh_claims_meeting_rows(34);
}

/* Fresh items without tokens (the call's owner) never skip the read-back:
 * with the owner shared, a row an item renews and a row another's claim
 * holds would add as many rows as two inserts. */
static void test_fresh_items_without_tokens_are_read_back(void)
{
        KD_FC_NEED_STORE();
        kd_fc_claim1("a", 5, "fw");
        kd_fc_claim1("b", 5, "other");
        kd_fate_claim_t c[3] = {kd_fc_item("a", 5, NULL),
                                kd_fc_item("b", 5, NULL),
                                kd_fc_item("n", 5, NULL)};
        for (int i = 0; i < 3; i++) {
                c[i].fresh = 1;
                c[i].lease_ms = 30000;
        }
        CU_ASSERT_EQUAL_FATAL(kd_fate_claim(kd_fc_store, c, 3, "fw",
                                            kd_fc_errstr, sizeof(kd_fc_errstr)),
                              KDELAY_OK);
        CU_ASSERT_STRING_EQUAL(c[0].row_owner, "fw");
        CU_ASSERT_STRING_EQUAL(c[1].row_owner, "other");
        CU_ASSERT_STRING_EQUAL(c[2].row_owner, "fw");
}

/* An id twice in a batch: the first item inserts, both read the row. */
static void test_claim_batch_with_an_id_twice(void)
{
        KD_FC_NEED_STORE();
        kd_fate_claim_t c[2] = {kd_fc_item("x", 7, "t1"),
                                kd_fc_item("x", 8, "t2")};
        CU_ASSERT_EQUAL_FATAL(kd_fate_claim(kd_fc_store, c, 2, NULL,
                                            kd_fc_errstr, sizeof(kd_fc_errstr)),
                              KDELAY_OK);
        for (int i = 0; i < 2; i++) {
                CU_ASSERT_EQUAL(c[i].fate, KDELAY_FATE_FIRING);
                CU_ASSERT_STRING_EQUAL(c[i].row_owner, "t1");
        }
        CU_ASSERT_EQUAL(kd_fc_status1("x").fire_at_ms, 7);
}

/* No owner at all writes none; a token is cut to the owner column. */
static void test_claim_owner_none_or_cut(void)
{
        KD_FC_NEED_STORE();
        char tok[KD_FATE_OWNER_MAX + 7];
        memset(tok, 'k', sizeof(tok) - 1);
        tok[sizeof(tok) - 1] = '\0';
        kd_fate_claim_t c[3] = {kd_fc_item("none", 1, NULL),
                                kd_fc_item("empty", 1, ""),
                                kd_fc_item("long", 1, tok)};
        CU_ASSERT_EQUAL_FATAL(kd_fate_claim(kd_fc_store, c, 3, NULL,
                                            kd_fc_errstr, sizeof(kd_fc_errstr)),
                              KDELAY_OK);
        CU_ASSERT_STRING_EQUAL(c[0].row_owner, "");
        CU_ASSERT_STRING_EQUAL(c[1].row_owner, "");
        CU_ASSERT_EQUAL(strlen(c[2].row_owner), KD_FATE_OWNER_MAX);
        CU_ASSERT_EQUAL(strncmp(c[2].row_owner, tok, KD_FATE_OWNER_MAX), 0);
        CU_ASSERT_STRING_EQUAL(kd_fc_status1("none").owner, "");
}

static void test_cancel_inserts_once(void)
{
        KD_FC_NEED_STORE();
        int64_t t0 = kd_now_ms();
        uint64_t before = kd_fc_stmts();
        CU_ASSERT_EQUAL(kd_fc_cancel1("c"), KDELAY_OK);
        CU_ASSERT_EQUAL(kd_fc_stmts() - before, 1);
        kdelay_status_t st = kd_fc_status1("c");
        CU_ASSERT_EQUAL(st.fate, KDELAY_FATE_CANCELLED);
        CU_ASSERT_EQUAL(st.fire_at_ms, -1);
        CU_ASSERT_STRING_EQUAL(st.owner, "");
        CU_ASSERT(st.decided_at_ms >= t0 && st.decided_at_ms <= kd_now_ms());
        /* Again: the insert meets the row, a read says CANCELLED. */
        before = kd_fc_stmts();
        CU_ASSERT_EQUAL(kd_fc_cancel1("c"), KDELAY_OK);
        CU_ASSERT_EQUAL(kd_fc_stmts() - before, 2);
        CU_ASSERT_EQUAL(kd_fc_status1("c").decided_at_ms, st.decided_at_ms);
}

static void test_cancel_after_claim_is_too_late(void)
{
        KD_FC_NEED_STORE();
        kd_fc_claim1("t", 1234, "fw-1");
        uint64_t before = kd_fc_stmts();
        CU_ASSERT_EQUAL(kd_fc_cancel1("t"), KDELAY_ERR_TOO_LATE);
        CU_ASSERT_EQUAL(kd_fc_stmts() - before, 2);
        CU_ASSERT_PTR_NOT_NULL(strstr(kd_fc_errstr, "FIRING"));
        CU_ASSERT_EQUAL(kd_fc_status1("t").fate, KDELAY_FATE_FIRING);
        kd_fc_fire1("t");
        CU_ASSERT_EQUAL(kd_fc_cancel1("t"), KDELAY_ERR_TOO_LATE);
        CU_ASSERT_PTR_NOT_NULL(strstr(kd_fc_errstr, "FIRED"));
        kdelay_status_t st = kd_fc_status1("t");
        CU_ASSERT_EQUAL(st.fate, KDELAY_FATE_FIRED);
        CU_ASSERT_EQUAL(st.fire_at_ms, 1234);
        CU_ASSERT(st.updated_at_ms >= st.decided_at_ms);
}

/* Ids are bytes: case, a trailing space, NUL and non-UTF-8 bytes and
 * SQL's metacharacters all make ids of their own. */
static void test_ids_are_bytes(void)
{
        static const struct {
                const char *id;
                size_t len;
        } ids[] = {{"a", 1},
                   {"A", 1},
                   {"a ", 2},
                   {"a\0b", 3},
                   {"a\0c", 3},
                   {"\xff\xfe", 2},
                   {"x' OR '1'='1", 12},
                   {"back\\", 5}};
        char big[KDELAY_ID_MAX];
        memset(big, 'z', sizeof(big));
        KD_FC_NEED_STORE();
        CU_ASSERT_EQUAL(kd_fate_cancel(kd_fc_store, "a", 1, kd_fc_errstr,
                                       sizeof(kd_fc_errstr)),
                        KDELAY_OK);
        kd_fate_claim_t c[KD_ARRAY_LEN(ids) + 1];
        for (size_t i = 0; i < KD_ARRAY_LEN(ids); i++)
                c[i] = (kd_fate_claim_t){ids[i].id,  ids[i].len,
                                         (int64_t)i, KDELAY_FATE_UNDECIDED,
                                         NULL,       ""};
        c[KD_ARRAY_LEN(ids)] = (kd_fate_claim_t){
            big, sizeof(big), 99, KDELAY_FATE_UNDECIDED, NULL, ""};
        CU_ASSERT_EQUAL_FATAL(kd_fate_claim(kd_fc_store, c, KD_ARRAY_LEN(c),
                                            "fw-1", kd_fc_errstr,
                                            sizeof(kd_fc_errstr)),
                              KDELAY_OK);
        CU_ASSERT_EQUAL(c[0].fate, KDELAY_FATE_CANCELLED);
        for (size_t i = 1; i < KD_ARRAY_LEN(ids); i++) {
                CU_ASSERT_EQUAL(c[i].fate, KDELAY_FATE_FIRING);
                CU_ASSERT_EQUAL(
                    kd_fc_status_n(ids[i].id, ids[i].len).fire_at_ms,
                    (int64_t)i);
        }
        CU_ASSERT_EQUAL(c[KD_ARRAY_LEN(ids)].fate, KDELAY_FATE_FIRING);
        CU_ASSERT_EQUAL(kd_fc_status_n(big, sizeof(big)).fire_at_ms, 99);
}

/* The checks every implementation shares: nothing reaches the store. */
static void test_bad_arguments_are_refused(void)
{
        char big[KDELAY_ID_MAX + 1];
        memset(big, 'z', sizeof(big));
        KD_FC_NEED_STORE();
        uint64_t before = kd_fc_stmts();
        CU_ASSERT_EQUAL(kd_fate_cancel(kd_fc_store, big, sizeof(big),
                                       kd_fc_errstr, sizeof(kd_fc_errstr)),
                        KDELAY_ERR_INVALID_ID);
        kd_fate_claim_t c = {big,  sizeof(big), 1, KDELAY_FATE_UNDECIDED,
                             NULL, ""};
        CU_ASSERT_EQUAL(kd_fate_claim(kd_fc_store, &c, 1, "fw", kd_fc_errstr,
                                      sizeof(kd_fc_errstr)),
                        KDELAY_ERR_INVALID_ID);
        c = kd_fc_item("ok", 1, NULL);
        CU_ASSERT_EQUAL(kd_fate_takeover(kd_fc_store, &c, 1, kd_fc_errstr,
                                         sizeof(kd_fc_errstr)),
                        KDELAY_ERR_INVALID_ARG);
        uint64_t got = 7;
        CU_ASSERT_EQUAL(kd_fate_gc(kd_fc_store, 0, 0, -1, &got, kd_fc_errstr,
                                   sizeof(kd_fc_errstr)),
                        KDELAY_ERR_INVALID_ARG);
        CU_ASSERT_EQUAL(kd_fc_stmts(), before);
        CU_ASSERT_EQUAL(kd_fc_status1("ok").fate, KDELAY_FATE_UNDECIDED);
}

/* Empty batches are answered without a statement. */
static void test_empty_batches_send_nothing(void)
{
        KD_FC_NEED_STORE();
        uint64_t before = kd_fc_stmts();
        CU_ASSERT_EQUAL(kd_fate_claim(kd_fc_store, NULL, 0, "fw", kd_fc_errstr,
                                      sizeof(kd_fc_errstr)),
                        KDELAY_OK);
        CU_ASSERT_EQUAL(kd_fate_takeover(kd_fc_store, NULL, 0, kd_fc_errstr,
                                         sizeof(kd_fc_errstr)),
                        KDELAY_OK);
        CU_ASSERT_EQUAL(kd_fate_mark_fired(kd_fc_store, NULL, NULL, 0,
                                           kd_fc_errstr, sizeof(kd_fc_errstr)),
                        KDELAY_OK);
        CU_ASSERT_EQUAL(kd_fate_note_cancelled(kd_fc_store, NULL, NULL, NULL, 0,
                                               kd_fc_errstr,
                                               sizeof(kd_fc_errstr)),
                        KDELAY_OK);
        CU_ASSERT_EQUAL(kd_fc_stmts(), before);
}

static const kd_test_case_t cases[] = {
    KD_TEST(test_status_of_unknown_id_is_undecided),
    KD_TEST(test_claim_inserts_firing_rows),
    KD_TEST(test_claim_loses_to_an_earlier_claim),
    KD_TEST(test_claim_finds_cancelled_and_fired),
    KD_TEST(test_batch_claim_uses_two_statements),
    KD_TEST(test_fresh_batch_that_inserts_all_is_one_statement),
    KD_TEST(test_fresh_claims_meeting_rows_read_them_back),
    KD_TEST(test_fresh_batch_of_40_meeting_rows_reads_them_back),
    KD_TEST(test_fresh_items_without_tokens_are_read_back),
    KD_TEST(test_claim_batch_with_an_id_twice),
    KD_TEST(test_claim_owner_none_or_cut),
    KD_TEST(test_cancel_inserts_once),
    KD_TEST(test_cancel_after_claim_is_too_late),
    KD_TEST(test_ids_are_bytes),
    KD_TEST(test_bad_arguments_are_refused),
    KD_TEST(test_empty_batches_send_nothing),
    KD_FC_UPDATE_CASES,
    KD_TEST_END};

kd_test_suite_t kd_fate_contract_suite(const char *name,
                                       const kd_fate_contract_t *c)
{
        impl = c;
        kd_test_suite_t s = {name, cases, c->init, c->cleanup, setup, teardown};
        return s;
}
