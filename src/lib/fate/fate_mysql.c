/* SPDX-License-Identifier: Apache-2.0 */
/* The fate store on MySQL (kd_fate_store_new, kd_fate.h): the
 * kdelay_fate table, behind the store's front (fate.c) as its operations
 * table (kd_fate_ops.h).
 *
 * Rows only ever move FIRING -> FIRED; CANCELLED is only ever inserted,
 * never reached by an update. So "INSERT IGNORE, then read the row" is
 * race-free: once a row exists, a cancel cannot change it, and a claim
 * that finds CANCELLED drops the task. Ids are sent as hex literals, so
 * no byte of an id can be mistaken for SQL. */
#include "kd_fate_mysql_int.h"

#include <mysql.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "kd_fate_ops.h"
#include "kd_schema.h"
#include "kd_util.h"

static void my_destroy(void *impl)
{
        kd_fate_mysql_t *my = impl;
        kd_fate_mysql_prep_free(my);
        kd_fate_mysql_bulk_free(my);
        if (my->conn)
                mysql_close(my->conn);
        pthread_mutex_destroy(&my->conn_lock);
        free(my);
}

static uint64_t my_statements(const void *impl)
{
        const kd_fate_mysql_t *my = impl;
        return my->statements;
}

static kdelay_err_t my_connect(void *impl, char *errstr, size_t errstr_size)
{
        return kd_fate_mysql_connect(impl, errstr, errstr_size);
}

static kdelay_err_t status_once(kd_fate_mysql_t *store, const char *id,
                                size_t id_len, kdelay_status_t *status,
                                char *errstr, size_t errstr_size);

static kdelay_err_t cancel_once(kd_fate_mysql_t *store, const char *id,
                                size_t id_len, char *errstr, size_t errstr_size)
{
        kd_sql_t sql = {0};
        int64_t now = kd_now_ms();
        int dup = 0;
        /* A plain INSERT (not IGNORE): only "row exists" may pass, every
         * other problem stays an error. It inserts nothing while a journal
         * is pending (deploy/mysql/009): the subquery's shared locks make a
         * mark wait for it, or it for the mark. */
        kd_sql_add(&sql, "INSERT INTO kdelay_fate (task_id, state, "
                         "decided_at_ms, updated_at_ms) SELECT ");
        kd_sql_add_hex(&sql, id, id_len);
        kd_sql_add(&sql,
                   ", 'CANCELLED', %lld, %lld FROM DUAL WHERE NOT EXISTS "
                   "(SELECT 1 FROM kdelay_reconcile WHERE pending_since_ms "
                   "IS NOT NULL)",
                   (long long)now, (long long)now);
        kdelay_err_t err = kd_fate_mysql_stmt_dup(store, &sql, "cancel", NULL,
                                                  &dup, errstr, errstr_size);
        free(sql.buf);
        if (err)
                return err;
        int inserted = !dup && mysql_affected_rows(store->conn) == 1;
        if (inserted)
                return KDELAY_OK; /* cancelled now */
        kdelay_status_t st;
        if ((err = status_once(store, id, id_len, &st, errstr, errstr_size)))
                return err;
        return dup ? kd_fate_cancel_found(st.fate, errstr, errstr_size)
                   : kd_fate_cancel_pending(st.fate, errstr, errstr_size);
}

/* Cancel and status are idempotent: when a connection that was up broke
 * under the call, one more try on a fresh connection is safe. */
#define KD_RETRY_ONCE(store, call)                                             \
        do {                                                                   \
                int had_conn_ = (store)->conn != NULL;                         \
                err = (call);                                                  \
                if (err == KDELAY_ERR_MYSQL && had_conn_ && !(store)->conn)    \
                        err = (call);                                          \
        } while (0)

static kdelay_err_t my_cancel(void *impl, const char *id, size_t id_len,
                              char *errstr, size_t errstr_size)
{
        kd_fate_mysql_t *store = impl;
        kdelay_err_t err;
        KD_RETRY_ONCE(store,
                      cancel_once(store, id, id_len, errstr, errstr_size));
        return err;
}

static kdelay_err_t my_status(void *impl, const char *id, size_t id_len,
                              kdelay_status_t *status, char *errstr,
                              size_t errstr_size)
{
        kd_fate_mysql_t *store = impl;
        kdelay_err_t err;
        KD_RETRY_ONCE(
            store, status_once(store, id, id_len, status, errstr, errstr_size));
        return err;
}

/* A row's fate from its state and its covered column (a FIRING row
 * covered by a run was delivered: FIRED). */
static kdelay_fate_t fate_of(const char *state, const char *covered)
{
        kdelay_fate_t f = kd_fate_parse(state);
        if (f == KDELAY_FATE_FIRING && covered && !strcmp(covered, "1"))
                return KDELAY_FATE_FIRED;
        return f;
}

static kdelay_err_t status_once(kd_fate_mysql_t *store, const char *id,
                                size_t id_len, kdelay_status_t *status,
                                char *errstr, size_t errstr_size)
{
        kd_sql_t sql = {0};
        MYSQL_RES *res = NULL;
        /* One row: the covered test is one dive into kdelay_fired_run's
         * primary key (its row is a constant to the subquery). */
        kd_sql_add(&sql, "SELECT state, fire_at_ms, owner, decided_at_ms, "
                         "updated_at_ms, dead_reason, ");
        kd_fate_mysql_add_covered(&sql);
        kd_sql_add(&sql, " FROM kdelay_fate WHERE task_id = ");
        kd_sql_add_hex(&sql, id, id_len);
        kdelay_err_t err = kd_fate_mysql_stmt(store, &sql, "status", &res,
                                              errstr, errstr_size);
        free(sql.buf);
        if (err)
                return err;
        kd_fate_status_none(status);
        MYSQL_ROW row = mysql_fetch_row(res);
        if (row) {
                status->fate = fate_of(row[0], row[6]);
                status->fire_at_ms = kd_sql_col_i64(row[1]);
                kd_strlcpy(status->owner, row[2] ? row[2] : "",
                           sizeof(status->owner));
                status->decided_at_ms = kd_sql_col_i64(row[3]);
                status->updated_at_ms = kd_sql_col_i64(row[4]);
                kd_strlcpy(status->dead_reason, row[5] ? row[5] : "",
                           sizeof(status->dead_reason));
        }
        mysql_free_result(res);
        return KDELAY_OK;
}

/* Appends a lease_until value: lease_ms from now by the server's clock,
 * or NULL for none. */
static void sql_add_lease(kd_sql_t *s, int64_t lease_ms)
{
        if (lease_ms > 0)
                kd_sql_add(s, "NOW(3) + INTERVAL %lld MICROSECOND",
                           (long long)lease_ms * 1000);
        else
                kd_sql_add(s, "NULL");
}

/* Appends an item's source as three values: topic, partition, offset
 * (NULLs when not known). */
static void sql_add_source(kd_sql_t *s, const kd_fate_claim_t *it)
{
        if (!it->src_topic) {
                kd_sql_add(s, "NULL,NULL,NULL");
                return;
        }
        kd_sql_add_hex(s, it->src_topic, strlen(it->src_topic));
        kd_sql_add(s, ",%d,%lld", (int)it->src_partition,
                   (long long)it->src_offset);
}

/* Appends " WHEN id THEN v" for column col (0 topic, 1 partition,
 * 2 offset) of an item's source; an item without one keeps the row's. */
static void sql_add_source_case(kd_sql_t *s, const kd_fate_claim_t *it, int col)
{
        if (!it->src_topic)
                return;
        kd_sql_add(s, " WHEN ");
        kd_sql_add_hex(s, it->id, it->id_len);
        kd_sql_add(s, " THEN ");
        if (col == 0)
                kd_sql_add_hex(s, it->src_topic, strlen(it->src_topic));
        else if (col == 1)
                kd_sql_add(s, "%d", (int)it->src_partition);
        else
                kd_sql_add(s, "%lld", (long long)it->src_offset);
}

static int any_source(const kd_fate_claim_t *items, size_t n)
{
        for (size_t i = 0; i < n; i++)
                if (items[i].src_topic)
                        return 1;
        return 0;
}

static int item_cmp(const void *x, const void *y)
{
        const kd_fate_claim_t *a = *(kd_fate_claim_t *const *)x;
        const kd_fate_claim_t *b = *(kd_fate_claim_t *const *)y;
        return kd_fate_id_cmp(a->id, a->id_len, b->id, b->id_len);
}

/* The items of sorted (n, by item_cmp) whose id is (id, len): the first
 * index and the count (0 when none). Duplicate ids share the row. */
static size_t find_items(kd_fate_claim_t *const *sorted, size_t n,
                         const char *id, size_t len, size_t *firstp)
{
        size_t lo = 0, hi = n;
        while (lo < hi) { /* the first item not below id */
                size_t mid = lo + (hi - lo) / 2;
                if (kd_fate_id_cmp(sorted[mid]->id, sorted[mid]->id_len, id,
                                   len) < 0)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        size_t end = lo;
        while (end < n &&
               !kd_fate_id_cmp(sorted[end]->id, sorted[end]->id_len, id, len))
                end++;
        *firstp = lo;
        return end - lo;
}

/* Called for each row read_fates reads: row[0] task_id, row[1] state,
 * row[2] owner, row[3] the covered test, then the caller's columns; fate
 * as readers see it (a covered FIRING row reads FIRED). */
typedef void kd_fate_row_fn(MYSQL_ROW row, const unsigned long *lens,
                            kdelay_fate_t fate, void *opaque);

/* One statement of read_fates: the rows of ids (n) with the covered test
 * of the owners guessed. A FIRING row whose owner was no guess (its
 * covered column NULL) and that a run could cover goes into later[] (id,
 * owner: pointers into *resp, which the caller frees), unless again:
 * then it reads uncovered. Every other row goes to fn. */
static kdelay_err_t
read_fates_once(kd_fate_mysql_t *store, const char *what, const char *cols,
                const char *const *ids, const size_t *id_lens, size_t n,
                const char *const *guess, const size_t *guess_lens,
                size_t nguess, int again, kd_fate_row_fn *fn, void *opaque,
                MYSQL_RES **resp, const char **later, size_t *later_lens,
                size_t *nlaterp, char *errstr, size_t errstr_size)
{
        kd_sql_t sql = {0};
        kd_sql_add(&sql, "SELECT task_id, state, owner, ");
        kd_fate_mysql_add_covered_of(&sql, guess, guess_lens, nguess);
        kd_sql_add(&sql, "%s FROM kdelay_fate WHERE task_id IN (", cols);
        kd_sql_add_id_list(&sql, ids, id_lens, n);
        kdelay_err_t err =
            kd_fate_mysql_stmt(store, &sql, what, resp, errstr, errstr_size);
        free(sql.buf);
        if (err)
                return err;
        MYSQL_ROW row;
        size_t nlater = 0;
        while ((row = mysql_fetch_row(*resp))) {
                unsigned long *lens = mysql_fetch_lengths(*resp);
                size_t plen;
                uint64_t seq;
                kdelay_fate_t f = fate_of(row[1], row[3]);
                if (!again && !row[3] && f == KDELAY_FATE_FIRING && row[2] &&
                    kd_fate_owner_split(row[2], lens[2], &plen, &seq) &&
                    nlater < n) {
                        later[2 * nlater] = row[0];
                        later_lens[2 * nlater] = lens[0];
                        later[2 * nlater + 1] = row[2];
                        later_lens[2 * nlater + 1] = lens[2];
                        nlater++;
                        continue;
                }
                fn(row, lens, f, opaque);
        }
        *nlaterp = nlater;
        return KDELAY_OK;
}

/* Ids per statement of read_fates (below). */
#define KD_READ_CHUNK 500

/* read_fates of at most KD_READ_CHUNK ids, nguess owners guessed. */
static kdelay_err_t read_fates_chunk(kd_fate_mysql_t *store, const char *what,
                                     const char *cols, const char *const *ids,
                                     const size_t *id_lens, size_t n,
                                     const char *const *guess,
                                     const size_t *guess_lens, size_t nguess,
                                     kd_fate_row_fn *fn, void *opaque,
                                     char *errstr, size_t errstr_size)
{
        /* later: id and owner of each row to read again, as pairs */
        const char **later = malloc(2 * n * sizeof(*later));
        size_t *later_lens = malloc(2 * n * sizeof(*later_lens));
        const char **again = malloc(2 * n * sizeof(*again));
        size_t *again_lens = malloc(2 * n * sizeof(*again_lens));
        MYSQL_RES *res = NULL, *res2 = NULL;
        size_t nlater = 0, none;
        kdelay_err_t err = KDELAY_OK;
        if (!later || !later_lens || !again || !again_lens)
                err = kd_fail(KDELAY_ERR_NO_MEMORY, errstr, errstr_size,
                              "%s: out of memory", what);
        if (!err)
                err = read_fates_once(store, what, cols, ids, id_lens, n, guess,
                                      guess_lens, nguess, 0, fn, opaque, &res,
                                      later, later_lens, &nlater, errstr,
                                      errstr_size);
        if (!err && nlater) {
                for (size_t i = 0; i < nlater; i++) {
                        again[i] = later[2 * i];
                        again_lens[i] = later_lens[2 * i];
                        again[nlater + i] = later[2 * i + 1];
                        again_lens[nlater + i] = later_lens[2 * i + 1];
                }
                err = read_fates_once(
                    store, what, cols, again, again_lens, nlater,
                    again + nlater, again_lens + nlater, nlater, 1, fn, opaque,
                    &res2, NULL, NULL, &none, errstr, errstr_size);
        }
        mysql_free_result(res2);
        mysql_free_result(res);
        free(later);
        free(later_lens);
        free(again);
        free(again_lens);
        return err;
}

/* Reads the rows of ids (n, repeats allowed), "SELECT task_id, state,
 * owner, <covered>, <cols> FROM kdelay_fate WHERE task_id IN (...)",
 * calling fn for each with its fate. The covered test is one dive into
 * kdelay_fired_run per row, however many runs its prefix has after it
 * (a test correlated with each row walks them: docs/fate-protocol.md,
 * "Runs of delivered claims", Cost): the owners the caller expects
 * (guess, nguess; the claims' own tokens) are tested by constants in the
 * statement; FIRING rows under another owner that a run could cover are
 * read again in a second statement with their owners as constants. Each
 * row's answer is of one statement: its state and the runs at one
 * moment. A row whose owner changed between the two reads as the second
 * statement finds it: FIRING under its new owner unless a run covers
 * that one (a takeover never takes a covered row). The guesses are gper
 * per id (0, 1 or 2), those of id i at guess[i * gper]. Ids go
 * KD_READ_CHUNK to a statement: the server tests a CASE's owners one by
 * one, so one statement of n rows under n owners would cost n² compares
 * (and its text grows with the owners). */
static kdelay_err_t
read_fates(kd_fate_mysql_t *store, const char *what, const char *cols,
           const char *const *ids, const size_t *id_lens, size_t n,
           const char *const *guess, const size_t *guess_lens, size_t gper,
           kd_fate_row_fn *fn, void *opaque, char *errstr, size_t errstr_size)
{
        kdelay_err_t err = KDELAY_OK;
        for (size_t lo = 0; !err && lo < n; lo += KD_READ_CHUNK) {
                size_t m = n - lo < KD_READ_CHUNK ? n - lo : KD_READ_CHUNK;
                err = read_fates_chunk(
                    store, what, cols, ids + lo, id_lens + lo, m,
                    guess ? guess + lo * gper : NULL,
                    guess ? guess_lens + lo * gper : NULL, guess ? m * gper : 0,
                    fn, opaque, errstr, errstr_size);
        }
        return err;
}

typedef struct read_back_ctx {
        kd_fate_claim_t **sorted; /* the items by item_cmp */
        size_t n;
} read_back_ctx_t;

static void read_back_row(MYSQL_ROW row, const unsigned long *lens,
                          kdelay_fate_t fate, void *opaque)
{
        read_back_ctx_t *c = opaque;
        size_t first,
            cnt = find_items(c->sorted, c->n, row[0], lens[0], &first);
        for (size_t k = first; k < first + cnt; k++) {
                kd_fate_claim_t *it = c->sorted[k];
                it->fate = fate;
                kd_strlcpy(it->row_owner, row[2] ? row[2] : "",
                           sizeof(it->row_owner));
                it->lease_left_ms = kd_sql_col_i64(row[4]);
        }
}

/* Reads the rows of items back: fate, owner and lease left of each. The
 * rows are matched to the items through a sorted index (n log n: a linear
 * match per row made large batches quadratic). The owners the rows are
 * expected to have are each item's own token (owner: the call's) and,
 * after a takeover (prior), the owner it found (a covered row keeps it):
 * rows under those are tested in the one statement. */
static kdelay_err_t read_back(kd_fate_mysql_t *store, kd_fate_claim_t *items,
                              size_t n, const char *owner, int prior,
                              char *errstr, size_t errstr_size)
{
        size_t ng = prior ? 2 * n : n;
        kd_fate_claim_t **sorted = malloc(n * sizeof(*sorted)); /* owned */
        const char **ids = malloc(ng * sizeof(*ids));
        size_t *lens = malloc(ng * sizeof(*lens));
        const char **guess = malloc(ng * sizeof(*guess));
        size_t *glens = malloc(ng * sizeof(*glens));
        char(*prev)[KD_FATE_OWNER_MAX + 1] =
            prior ? malloc(n * sizeof(*prev)) : NULL;
        kdelay_err_t err = KDELAY_OK;
        if (!sorted || !ids || !lens || !guess || !glens || (prior && !prev))
                err = kd_fail(KDELAY_ERR_NO_MEMORY, errstr, errstr_size,
                              "claim read-back: out of memory");
        size_t k = prior ? 2 : 1; /* guesses per item, interleaved */
        for (size_t i = 0; !err && i < n; i++) {
                ids[i] = items[i].id;
                lens[i] = items[i].id_len;
                guess[k * i] =
                    kd_fate_claim_owner(&items[i], owner, &glens[k * i]);
                if (prior) {
                        memcpy(prev[i], items[i].row_owner, sizeof(prev[i]));
                        guess[k * i + 1] = prev[i];
                        glens[k * i + 1] = strlen(prev[i]);
                }
                items[i].fate = KDELAY_FATE_UNDECIDED;
                items[i].row_owner[0] = '\0';
                items[i].lease_left_ms = -1;
                sorted[i] = &items[i];
        }
        if (!err) {
                qsort(sorted, n, sizeof(*sorted), item_cmp);
                read_back_ctx_t c = {sorted, n};
                err = read_fates(store, "claim read-back",
                                 ", IF(lease_until IS NULL, -1, GREATEST(0, "
                                 "TIMESTAMPDIFF(MICROSECOND, NOW(3), "
                                 "lease_until)) DIV 1000)",
                                 ids, lens, n, guess, glens, k, read_back_row,
                                 &c, errstr, errstr_size);
        }
        free(sorted);
        free(ids);
        free(lens);
        free(guess);
        free(glens);
        free(prev);
        return err;
}

static kdelay_err_t my_takeover(void *impl, kd_fate_claim_t *items, size_t n,
                                char *errstr, size_t errstr_size)
{
        kd_fate_mysql_t *store = impl;
        kd_sql_t sql = {0};
        kd_sql_add(&sql,
                   "UPDATE kdelay_fate SET updated_at_ms = %lld, owner = "
                   "CASE task_id",
                   (long long)kd_now_ms());
        for (size_t i = 0; i < n; i++) {
                kd_sql_add(&sql, " WHEN ");
                kd_sql_add_hex(&sql, items[i].id, items[i].id_len);
                kd_sql_add(&sql, " THEN ");
                kd_sql_add_hex(&sql, items[i].token, strlen(items[i].token));
        }
        kd_sql_add(&sql, " ELSE owner END");
        /* A CASE needs a WHEN: the source columns only when some item
         * has one. */
        static const char *const src_cols[] = {"src_topic", "src_partition",
                                               "src_offset"};
        for (int col = 0; col < 3 && any_source(items, n); col++) {
                kd_sql_add(&sql, ", %s = CASE task_id", src_cols[col]);
                for (size_t i = 0; i < n; i++)
                        sql_add_source_case(&sql, &items[i], col);
                kd_sql_add(&sql, " ELSE %s END", src_cols[col]);
        }
        kd_sql_add(&sql, ", lease_until = CASE task_id");
        for (size_t i = 0; i < n; i++) {
                kd_sql_add(&sql, " WHEN ");
                kd_sql_add_hex(&sql, items[i].id, items[i].id_len);
                kd_sql_add(&sql, " THEN ");
                sql_add_lease(&sql, items[i].lease_ms);
        }
        /* A claim whose lease still holds is not taken over, unless it is
         * this instance's previous process's. */
        kd_sql_add(&sql, " ELSE lease_until END WHERE state = 'FIRING' AND (");
        for (size_t i = 0; i < n; i++) {
                kd_sql_add(&sql, "%s(task_id = ", i ? " OR " : "");
                kd_sql_add_hex(&sql, items[i].id, items[i].id_len);
                /* CAST AS BINARY: owners are bytes, not text under the
                 * column's case-folding collation (the BINARY operator is
                 * deprecated in MySQL 8.0.27). */
                if (items[i].row_owner[0]) {
                        kd_sql_add(&sql, " AND CAST(owner AS BINARY) = ");
                        kd_sql_add_hex(&sql, items[i].row_owner,
                                       strlen(items[i].row_owner));
                } else {
                        kd_sql_add(&sql, " AND owner IS NULL");
                }
                if (!items[i].own_previous)
                        kd_sql_add(&sql, " AND (lease_until IS NULL OR "
                                         "lease_until <= NOW(3))");
                /* A row a run covers was delivered: never taken over. */
                kd_fate_mysql_add_uncovered(&sql, items[i].row_owner);
                kd_sql_add(&sql, ")");
        }
        kd_sql_add(&sql, ")");
        kdelay_err_t err = kd_fate_mysql_stmt(store, &sql, "takeover", NULL,
                                              errstr, errstr_size);
        free(sql.buf);
        if (err)
                return err;
        return read_back(store, items, n, NULL, 1, errstr, errstr_size);
}

/* After a claim's INSERT: when every item is fresh and the statement
 * added exactly n rows, fills each item as its own FIRING row and
 * returns 1. An existing row adds none: n rows added means n inserted.
 * Otherwise 0: renew and read them back. */
static int all_inserted(uint64_t affected, kd_fate_claim_t *items, size_t n,
                        const char *owner)
{
        for (size_t i = 0; i < n; i++)
                if (!items[i].fresh || !items[i].token)
                        return 0;
        if (affected != (uint64_t)n)
                return 0;
        for (size_t i = 0; i < n; i++) {
                size_t tlen;
                const char *tok = kd_fate_claim_owner(&items[i], owner, &tlen);
                items[i].fate = KDELAY_FATE_FIRING;
                memcpy(items[i].row_owner, tok ? tok : "", tlen);
                items[i].row_owner[tlen] = '\0';
                items[i].lease_left_ms =
                    items[i].lease_ms > 0 ? items[i].lease_ms : -1;
        }
        return 1;
}

/* After a claim's INSERT IGNORE that did not add every row: an item
 * whose row is FIRING under its own token claims it again, and its lease
 * is renewed (compare-and-set on state and owner). One statement, only
 * when some item asks for a lease under a token; owners compare as bytes
 * (CAST AS BINARY: the column's collation folds case). A fresh item's
 * token owns no row, so it is left out. Portable SQL: no ON DUPLICATE KEY
 * UPDATE ... VALUES(), deprecated in MySQL 8.0.20. */
static int renewable(const kd_fate_claim_t *it, const char *owner,
                     const char **tokp, size_t *tlenp)
{
        *tokp = kd_fate_claim_owner(it, owner, tlenp);
        return it->lease_ms > 0 && !it->fresh && *tokp && *tlenp;
}

static kdelay_err_t renew_own(kd_fate_mysql_t *store,
                              const kd_fate_claim_t *items, size_t n,
                              const char *owner, char *errstr,
                              size_t errstr_size)
{
        /* One pass: the CASE goes into sql, the owners' conditions into
         * cond, appended after it. */
        kd_sql_t sql = {0}, cond = {0};
        size_t asked = 0;
        kd_sql_add(&sql, "UPDATE kdelay_fate SET lease_until = CASE task_id");
        for (size_t i = 0; i < n; i++) {
                const char *tok;
                size_t tlen;
                if (!renewable(&items[i], owner, &tok, &tlen))
                        continue;
                kd_sql_add(&sql, " WHEN ");
                kd_sql_add_hex(&sql, items[i].id, items[i].id_len);
                kd_sql_add(&sql, " THEN ");
                sql_add_lease(&sql, items[i].lease_ms);
                kd_sql_add(&cond, "%s(task_id = ", asked++ ? " OR " : "");
                kd_sql_add_hex(&cond, items[i].id, items[i].id_len);
                kd_sql_add(&cond, " AND CAST(owner AS BINARY) = ");
                kd_sql_add_hex(&cond, tok, tlen);
                kd_sql_add(&cond, ")");
        }
        kdelay_err_t err = KDELAY_OK;
        if (asked) {
                if (cond.oom)
                        sql.oom = 1; /* stmt() reports it */
                else
                        kd_sql_add(&sql,
                                   " ELSE lease_until END WHERE state = "
                                   "'FIRING' AND (%.*s)",
                                   (int)cond.len, cond.buf);
                err = kd_fate_mysql_stmt(store, &sql, "claim renew", NULL,
                                         errstr, errstr_size);
        }
        free(sql.buf);
        free(cond.buf);
        return err;
}

/* After the claim's INSERT, which added `affected` rows: done when it
 * added every fresh item's; else renew own rows and read them back. */
static kdelay_err_t claim_rest(kd_fate_mysql_t *store, kd_fate_claim_t *items,
                               size_t n, const char *owner, uint64_t affected,
                               char *errstr, size_t errstr_size)
{
        if (all_inserted(affected, items, n, owner))
                return KDELAY_OK;
        kdelay_err_t err =
            renew_own(store, items, n, owner, errstr, errstr_size);
        if (err)
                return err;
        return read_back(store, items, n, owner, 0, errstr, errstr_size);
}

static kdelay_err_t my_claim(void *impl, kd_fate_claim_t *items, size_t n,
                             const char *owner, char *errstr,
                             size_t errstr_size)
{
        kd_fate_mysql_t *store = impl;
        kd_sql_t sql = {0};
        int64_t now = kd_now_ms();
        uint64_t affected = 0;
        kdelay_err_t err;
        if (kd_fate_mysql_prep_claim(store, items, n, owner, now, &affected,
                                     &err, errstr, errstr_size))
                return err ? err
                           : claim_rest(store, items, n, owner, affected,
                                        errstr, errstr_size);
        kd_sql_add(&sql, "INSERT IGNORE INTO kdelay_fate (task_id, state, "
                         "fire_at_ms, owner, decided_at_ms, updated_at_ms, "
                         "lease_until, src_topic, src_partition, src_offset) "
                         "VALUES ");
        for (size_t i = 0; i < n; i++) {
                size_t tlen;
                const char *tok = kd_fate_claim_owner(&items[i], owner, &tlen);
                kd_sql_add(&sql, "%s(", i ? "," : "");
                kd_sql_add_hex(&sql, items[i].id, items[i].id_len);
                kd_sql_add(&sql, ",'FIRING',%lld,",
                           (long long)items[i].fire_at_ms);
                if (tlen)
                        kd_sql_add_hex(&sql, tok, tlen);
                else
                        kd_sql_add(&sql, "NULL");
                kd_sql_add(&sql, ",%lld,%lld,", (long long)now, (long long)now);
                sql_add_lease(&sql, items[i].lease_ms);
                kd_sql_add(&sql, ",");
                sql_add_source(&sql, &items[i]);
                kd_sql_add(&sql, ")");
        }
        err =
            kd_fate_mysql_stmt(store, &sql, "claim", NULL, errstr, errstr_size);
        free(sql.buf);
        if (err)
                return err;
        return claim_rest(store, items, n, owner,
                          (uint64_t)mysql_affected_rows(store->conn), errstr,
                          errstr_size);
}

static kdelay_err_t my_mark_fired(void *impl, const char *const *ids,
                                  const size_t *id_lens, size_t n, char *errstr,
                                  size_t errstr_size)
{
        kd_fate_mysql_t *store = impl;
        kd_sql_t sql = {0};
        kd_sql_add(&sql,
                   "UPDATE kdelay_fate SET state = 'FIRED', updated_at_ms = "
                   "%lld WHERE state = 'FIRING' AND task_id IN (",
                   (long long)kd_now_ms());
        kd_sql_add_id_list(&sql, ids, id_lens, n);
        kdelay_err_t err = kd_fate_mysql_stmt(store, &sql, "mark fired", NULL,
                                              errstr, errstr_size);
        free(sql.buf);
        return err;
}

static kdelay_err_t my_mark_dead(void *impl, const char *const *ids,
                                 const size_t *id_lens, size_t n,
                                 const char *reason, char *errstr,
                                 size_t errstr_size)
{
        kd_fate_mysql_t *store = impl;
        kd_sql_t sql = {0};
        /* reason: [a-z0-9-] only (kd_fate_mark_dead checked). */
        kd_sql_add(
            &sql,
            "UPDATE kdelay_fate SET state = 'DEAD', dead_reason = '%s', "
            "updated_at_ms = %lld WHERE state = 'FIRING' AND task_id IN (",
            reason, (long long)kd_now_ms());
        kd_sql_add_id_list(&sql, ids, id_lens, n);
        kdelay_err_t err = kd_fate_mysql_stmt(store, &sql, "mark dead", NULL,
                                              errstr, errstr_size);
        free(sql.buf);
        return err;
}

static kdelay_err_t my_note_cancelled(void *impl, const char *const *ids,
                                      const size_t *id_lens,
                                      const int64_t *fire_ats, size_t n,
                                      char *errstr, size_t errstr_size)
{
        kd_fate_mysql_t *store = impl;
        kd_sql_t sql = {0};
        kd_sql_add(&sql, "UPDATE kdelay_fate SET fire_at_ms = CASE task_id");
        for (size_t i = 0; i < n; i++) {
                kd_sql_add(&sql, " WHEN ");
                kd_sql_add_hex(&sql, ids[i], id_lens[i]);
                kd_sql_add(&sql, " THEN %lld", (long long)fire_ats[i]);
        }
        kd_sql_add(&sql,
                   " END WHERE state = 'CANCELLED' AND fire_at_ms IS NULL "
                   "AND task_id IN (");
        kd_sql_add_id_list(&sql, ids, id_lens, n);
        kdelay_err_t err = kd_fate_mysql_stmt(store, &sql, "note cancelled",
                                              NULL, errstr, errstr_size);
        free(sql.buf);
        return err;
}

static kdelay_err_t my_gc(void *impl, int64_t due_before_ms,
                          int64_t decided_before_ms, int batch,
                          uint64_t *deletedp, char *errstr, size_t errstr_size)
{
        kd_fate_mysql_t *store = impl;
        kd_sql_t sql = {0};
        /* Small batches keep each statement's locks short. */
        kd_sql_add(&sql,
                   "DELETE FROM kdelay_fate WHERE decided_at_ms < %lld AND "
                   "(fire_at_ms < %lld OR (fire_at_ms IS NULL AND "
                   "decided_at_ms < %lld)) LIMIT %d",
                   (long long)due_before_ms, (long long)due_before_ms,
                   (long long)decided_before_ms, batch);
        kdelay_err_t err =
            kd_fate_mysql_stmt(store, &sql, "gc", NULL, errstr, errstr_size);
        free(sql.buf);
        if (!err)
                *deletedp = (uint64_t)mysql_affected_rows(store->conn);
        return err;
}

typedef struct lookup_ctx {
        const char *const *ids;
        const size_t *id_lens;
        kdelay_fate_t *fates;
        size_t n;
} lookup_ctx_t;

static void lookup_row(MYSQL_ROW row, const unsigned long *lens,
                       kdelay_fate_t fate, void *opaque)
{
        lookup_ctx_t *c = opaque;
        /* A handful of rows per call (a scan's page): a linear match. */
        for (size_t i = 0; i < c->n; i++)
                if (c->id_lens[i] == lens[0] &&
                    !memcmp(c->ids[i], row[0], lens[0]))
                        c->fates[i] = fate;
}

/* No owner is expected: a FIRING row that a run could cover is tested in
 * a second statement, by its owner as a constant (read_fates). */
static kdelay_err_t my_lookup(void *impl, const char *const *ids,
                              const size_t *id_lens, size_t n,
                              kdelay_fate_t *fates, char *errstr,
                              size_t errstr_size)
{
        lookup_ctx_t c = {ids, id_lens, fates, n};
        return read_fates(impl, "look up fates", "", ids, id_lens, n, NULL,
                          NULL, 0, lookup_row, &c, errstr, errstr_size);
}

static kdelay_err_t my_schema_version(void *impl, int *versionp, char *errstr,
                                      size_t errstr_size)
{
        kd_fate_mysql_t *my = impl;
        kdelay_err_t err = kd_fate_mysql_connect(my, errstr, errstr_size);
        if (!err && kd_schema_version(my->conn, versionp, errstr, errstr_size))
                err = kd_fate_mysql_fail_no(
                    my, "read schema version", mysql_errno(my->conn),
                    mysql_error(my->conn), errstr, errstr_size);
        return err;
}

static const kd_fate_ops_t kd_fate_mysql_ops = {
    .connect = my_connect,
    .cancel = my_cancel,
    .status = my_status,
    .claim = my_claim,
    .takeover = my_takeover,
    .mark_fired = my_mark_fired,
    .mark_runs = kd_fate_mysql_mark_runs,
    .gc_runs = kd_fate_mysql_gc_runs,
    .mark_dead = my_mark_dead,
    .note_cancelled = my_note_cancelled,
    .gc = my_gc,
    .firing = kd_fate_mysql_firing,
    .counts = kd_fate_mysql_counts,
    .lookup = my_lookup,
    .apply_unclaimed = kd_fate_mysql_apply_unclaimed,
    .unclaimed_list = kd_fate_mysql_unclaimed_list,
    .gc_unclaimed = kd_fate_mysql_gc_unclaimed,
    .pending_mark = kd_fate_mysql_pending_mark,
    .pending_get = kd_fate_mysql_pending_get,
    .pending_renew = kd_fate_mysql_pending_renew,
    .pending_clear = kd_fate_mysql_pending_clear,
    .schema_version = my_schema_version,
    .statements = my_statements,
    .interrupt = kd_fate_mysql_interrupt,
    .destroy = my_destroy,
};

kdelay_err_t kd_fate_store_new(kd_fate_store_t **storep,
                               const kdelay_conf_t *conf)
{
        kd_fate_mysql_t *my = calloc(1, sizeof(*my));
        if (!my)
                return KDELAY_ERR_NO_MEMORY;
        my->conf = conf;
        if (pthread_mutex_init(&my->conn_lock, NULL)) {
                free(my);
                return KDELAY_ERR_SYSTEM;
        }
        return kd_fate_store_wrap(storep, &kd_fate_mysql_ops, my);
}
