/* SPDX-License-Identifier: Apache-2.0 */
/* audit's scan and stats' counts on MySQL (kd_fate_firing,
 * kd_fate_counts): the FIRING rows, told covered by a run of delivered
 * claims or not. The covered test in SQL costs, over many rows,
 * one walk of the prefix's runs per row (MariaDB reads a correlated
 * subquery by `ref` on owner_prefix from the last run back: rows x runs,
 * over 30 s for 200,000 rows and 2,000 runs a prefix). So the runs are
 * read once, into memory (16 bytes each: never more than the rows they
 * cover), the FIRING rows in pages in primary-key order, and each row is
 * tested here by two binary searches. The oldest `max` uncovered rows are
 * kept in a heap, as ORDER BY updated_at_ms LIMIT max kept them. (A
 * window function over runs and rows merged in order, the one statement
 * that counts without the walk, took 5.6-6.1 s for 1M FIRING rows and
 * 100,000 runs on MariaDB 10.11, against about 1 s here.) */
#include "kd_fate_mysql_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kd_util.h"

/* FIRING rows read per statement. */
#define KD_FIRING_PAGE 5000

typedef struct kd_run_prefix {
        char *bytes; /* owned */
        size_t len;
        size_t first, n; /* its runs in kd_runs_t's lo/hi, by seq_lo */
} kd_run_prefix_t;

typedef struct kd_runs {
        kd_run_prefix_t *prefix; /* owned; sorted as bytes */
        size_t nprefix, capprefix;
        uint64_t *lo, *hi; /* owned */
        size_t n, cap;
} kd_runs_t;

static void runs_free(kd_runs_t *r)
{
        for (size_t i = 0; i < r->nprefix; i++)
                free(r->prefix[i].bytes);
        free(r->prefix);
        free(r->lo);
        free(r->hi);
}

static int bytes_cmp(const char *a, size_t alen, const char *b, size_t blen)
{
        int c = memcmp(a, b, alen < blen ? alen : blen);
        if (c)
                return c;
        return alen < blen ? -1 : alen > blen;
}

/* Appends the run (p, lo, hi); runs come sorted by (prefix, seq_lo). */
static int runs_add(kd_runs_t *r, const char *p, size_t plen, uint64_t lo,
                    uint64_t hi)
{
        kd_run_prefix_t *last = r->nprefix ? &r->prefix[r->nprefix - 1] : NULL;
        if (!last || bytes_cmp(last->bytes, last->len, p, plen)) {
                if (last && bytes_cmp(last->bytes, last->len, p, plen) > 0)
                        return -1; /* not in byte order: never from the PK */
                if (r->nprefix == r->capprefix) {
                        size_t cap = r->capprefix ? 2 * r->capprefix : 16;
                        void *np = realloc(r->prefix, cap * sizeof(*r->prefix));
                        if (!np)
                                return -1;
                        r->prefix = np;
                        r->capprefix = cap;
                }
                last = &r->prefix[r->nprefix];
                if (!(last->bytes = malloc(plen ? plen : 1)))
                        return -1;
                memcpy(last->bytes, p, plen);
                last->len = plen;
                last->first = r->n;
                last->n = 0;
                r->nprefix++;
        }
        if (r->n == r->cap) {
                size_t cap = r->cap ? 2 * r->cap : 1024;
                uint64_t *nlo = realloc(r->lo, cap * sizeof(*r->lo));
                if (!nlo)
                        return -1;
                r->lo = nlo;
                uint64_t *nhi = realloc(r->hi, cap * sizeof(*r->hi));
                if (!nhi)
                        return -1;
                r->hi = nhi;
                r->cap = cap;
        }
        r->lo[r->n] = lo;
        r->hi[r->n] = hi;
        r->n++;
        last->n++;
        return 0;
}

static kdelay_err_t runs_load(kd_fate_mysql_t *store, kd_runs_t *r,
                              char *errstr, size_t errstr_size)
{
        kd_sql_t sql = {0};
        MYSQL_RES *res = NULL;
        /* The primary key's order; compared as bytes (VARBINARY). */
        kd_sql_add(&sql, "SELECT owner_prefix, seq_lo, seq_hi FROM "
                         "kdelay_fired_run ORDER BY owner_prefix, seq_lo");
        kdelay_err_t err = kd_fate_mysql_stmt(store, &sql, "read runs", &res,
                                              errstr, errstr_size);
        free(sql.buf);
        if (err)
                return err;
        MYSQL_ROW row;
        while (!err && (row = mysql_fetch_row(res))) {
                unsigned long *lens = mysql_fetch_lengths(res);
                if (!row[0] || !row[1] || !row[2])
                        continue;
                if (runs_add(r, row[0], lens[0], strtoull(row[1], NULL, 10),
                             strtoull(row[2], NULL, 10)))
                        err = kd_fail(KDELAY_ERR_NO_MEMORY, errstr, errstr_size,
                                      "out of memory reading %zu runs", r->n);
        }
        mysql_free_result(res);
        return err;
}

/* Whether a run covers the FIRING row of this owner. */
static int runs_cover(const kd_runs_t *r, const char *owner, size_t len)
{
        size_t plen;
        uint64_t seq;
        if (!kd_fate_owner_split(owner, len, &plen, &seq))
                return 0;
        size_t a = 0, b = r->nprefix;
        while (a < b) {
                size_t m = a + (b - a) / 2;
                int c = bytes_cmp(r->prefix[m].bytes, r->prefix[m].len, owner,
                                  plen);
                if (!c) {
                        const uint64_t *lo = r->lo + r->prefix[m].first;
                        const uint64_t *hi = r->hi + r->prefix[m].first;
                        /* The greatest seq_lo at or below seq decides. */
                        size_t x = 0, y = r->prefix[m].n;
                        while (x < y) {
                                size_t k = x + (y - x) / 2;
                                if (lo[k] <= seq)
                                        x = k + 1;
                                else
                                        y = k;
                        }
                        return x > 0 && hi[x - 1] >= seq;
                }
                if (c < 0)
                        a = m + 1;
                else
                        b = m;
        }
        return 0;
}

/* The oldest max rows: a max-heap on updated_at_ms over idx (positions in
 * rows) while collecting. */
typedef struct kd_oldest {
        kd_fate_firing_t *rows; /* the caller's */
        size_t *idx;            /* owned */
        size_t n, max;
} kd_oldest_t;

static int64_t heap_at(const kd_oldest_t *h, size_t i)
{
        return h->rows[h->idx[i]].updated_at_ms;
}

static void heap_swap(kd_oldest_t *h, size_t i, size_t j)
{
        size_t t = h->idx[i];
        h->idx[i] = h->idx[j];
        h->idx[j] = t;
}

/* Where the next row goes (NULL: younger than all of the max kept);
 * heap_settle() after filling it. */
static kd_fate_firing_t *heap_slot(kd_oldest_t *h, int64_t updated_at_ms)
{
        if (h->n < h->max) {
                h->idx[h->n] = h->n;
                return &h->rows[h->n];
        }
        if (!h->max || updated_at_ms >= heap_at(h, 0))
                return NULL;
        return &h->rows[h->idx[0]];
}

static void heap_settle(kd_oldest_t *h)
{
        if (h->n < h->max) { /* a new leaf: up */
                size_t i = h->n++;
                while (i && heap_at(h, (i - 1) / 2) < heap_at(h, i)) {
                        heap_swap(h, i, (i - 1) / 2);
                        i = (i - 1) / 2;
                }
                return;
        }
        size_t i = 0; /* a new root: down */
        for (;;) {
                size_t l = 2 * i + 1, r = l + 1, big = i;
                if (l < h->n && heap_at(h, l) > heap_at(h, big))
                        big = l;
                if (r < h->n && heap_at(h, r) > heap_at(h, big))
                        big = r;
                if (big == i)
                        return;
                heap_swap(h, i, big);
                i = big;
        }
}

static int by_updated(const void *a, const void *b)
{
        int64_t x = ((const kd_fate_firing_t *)a)->updated_at_ms;
        int64_t y = ((const kd_fate_firing_t *)b)->updated_at_ms;
        return (x > y) - (x < y);
}

/* A FIRING row handed on by firing_walk: its columns (task_id and owner
 * first) and whether a run covers it (delivered, its mark left to the
 * run). */
typedef void (*firing_visit_fn)(MYSQL_ROW row, const unsigned long *lens,
                                int covered, void *arg);

/* Every FIRING row matching `where` (appended after the state's test;
 * "" for all) with the columns cols, task_id and owner first, read in
 * pages of `page` rows in task_id order, each handed to visit. */
static kdelay_err_t firing_walk(kd_fate_mysql_t *store, const kd_runs_t *runs,
                                const char *cols, const char *where, int page,
                                const char *what, firing_visit_fn visit,
                                void *arg, char *errstr, size_t errstr_size)
{
        char last[KDELAY_ID_MAX + 1];
        size_t last_len = 0, n = (size_t)page;
        kdelay_err_t err = KDELAY_OK;
        while (!err && n == (size_t)page) {
                kd_sql_t sql = {0};
                MYSQL_RES *res = NULL;
                kd_sql_add(&sql,
                           "SELECT %s FROM kdelay_fate WHERE state = "
                           "'FIRING'%s",
                           cols, where);
                if (last_len) {
                        kd_sql_add(&sql, " AND task_id > ");
                        kd_sql_add_hex(&sql, last, last_len);
                }
                kd_sql_add(&sql, " ORDER BY task_id LIMIT %d", page);
                err = kd_fate_mysql_stmt(store, &sql, what, &res, errstr,
                                         errstr_size);
                free(sql.buf);
                if (err)
                        break;
                MYSQL_ROW row;
                n = 0;
                while ((row = mysql_fetch_row(res))) {
                        unsigned long *lens = mysql_fetch_lengths(res);
                        n++;
                        /* The page goes on after its last id; a row
                         * without a usable id (never: VARBINARY(128) NOT
                         * NULL) is skipped. */
                        if (!row[0] || !lens[0] || lens[0] > KDELAY_ID_MAX)
                                continue;
                        memcpy(last, row[0], lens[0]);
                        last_len = lens[0];
                        visit(row, lens,
                              row[1] && runs_cover(runs, row[1], lens[1]), arg);
                }
                mysql_free_result(res);
        }
        return err;
}

/* firing_walk's visitor for kd_fate_mysql_firing: an uncovered row into
 * the heap of the oldest (arg). */
static void firing_keep_oldest(MYSQL_ROW row, const unsigned long *lens,
                               int covered, void *arg)
{
        kd_oldest_t *h = arg;
        if (covered)
                return; /* delivered */
        int64_t updated = kd_sql_col_i64(row[3]);
        kd_fate_firing_t *r = heap_slot(h, updated);
        if (!r)
                return;
        memset(r, 0, sizeof(*r));
        memcpy(r->id, row[0], lens[0]);
        r->id_len = lens[0];
        kd_strlcpy(r->owner, row[1] ? row[1] : "", sizeof(r->owner));
        r->fire_at_ms = kd_sql_col_i64(row[2]);
        r->updated_at_ms = updated;
        kd_strlcpy(r->src_topic, row[4] ? row[4] : "", sizeof(r->src_topic));
        r->src_partition = (int32_t)kd_sql_col_i64(row[5]);
        r->src_offset = kd_sql_col_i64(row[6]);
        heap_settle(h);
}

kdelay_err_t kd_fate_mysql_firing(void *impl, int64_t updated_before_ms,
                                  int64_t updated_after_ms,
                                  kd_fate_firing_t *rows, size_t max,
                                  size_t *np, char *errstr, size_t errstr_size)
{
        kd_fate_mysql_t *store = impl;
        kd_runs_t runs = {0};
        kd_oldest_t h = {.rows = rows, .max = max};
        char where[96];
        snprintf(where, sizeof(where),
                 " AND (updated_at_ms < %lld OR updated_at_ms > %lld)",
                 (long long)updated_before_ms, (long long)updated_after_ms);
        *np = 0;
        if (max && !(h.idx = malloc(max * sizeof(*h.idx))))
                return kd_fail(KDELAY_ERR_NO_MEMORY, errstr, errstr_size,
                               "out of memory");
        kdelay_err_t err = runs_load(store, &runs, errstr, errstr_size);
        if (!err)
                err = firing_walk(store, &runs,
                                  "task_id, owner, fire_at_ms, updated_at_ms, "
                                  "src_topic, src_partition, src_offset",
                                  where, KD_FIRING_PAGE, "list firing",
                                  firing_keep_oldest, &h, errstr, errstr_size);
        if (!err) {
                qsort(rows, h.n, sizeof(*rows), by_updated);
                *np = h.n;
        }
        free(h.idx);
        runs_free(&runs);
        return err;
}

/* FIRING rows' owners read per statement by kd_fate_mysql_counts. */
#define KD_COUNT_PAGE 20000

/* firing_walk's visitor for kd_fate_mysql_counts: a row counted FIRED
 * by its run or FIRING into the counts (arg). */
static void firing_count(MYSQL_ROW row, const unsigned long *lens, int covered,
                         void *arg)
{
        (void)row;
        (void)lens;
        kd_fate_counts_t *c = arg;
        if (covered)
                c->fired_by_runs++;
        else
                c->firing++;
}

/* The rows in the other states: one grouped count (FIRING's is the
 * pages'). */
static kdelay_err_t count_states(kd_fate_mysql_t *store, kd_fate_counts_t *c,
                                 char *errstr, size_t errstr_size)
{
        kd_sql_t sql = {0};
        MYSQL_RES *res = NULL;
        kd_sql_add(&sql, "SELECT state, COUNT(*) FROM kdelay_fate GROUP BY "
                         "state");
        kdelay_err_t err = kd_fate_mysql_stmt(store, &sql, "count fate rows",
                                              &res, errstr, errstr_size);
        free(sql.buf);
        if (err)
                return err;
        MYSQL_ROW row;
        while ((row = mysql_fetch_row(res))) {
                uint64_t v = row[1] ? strtoull(row[1], NULL, 10) : 0;
                switch (row[0] ? kd_fate_parse(row[0])
                               : KDELAY_FATE_UNDECIDED) {
                case KDELAY_FATE_FIRED:
                        c->fired += v;
                        break;
                case KDELAY_FATE_CANCELLED:
                        c->cancelled += v;
                        break;
                case KDELAY_FATE_DEAD:
                        c->dead += v;
                        break;
                default: /* FIRING: counted by the pages */
                        break;
                }
        }
        mysql_free_result(res);
        return KDELAY_OK;
}

kdelay_err_t kd_fate_mysql_counts(void *impl, kd_fate_counts_t *counts,
                                  char *errstr, size_t errstr_size)
{
        kd_fate_mysql_t *store = impl;
        kd_runs_t runs = {0};
        /* One snapshot for the runs, the pages and the count by state: a
         * row marked FIRED between two of them would be counted twice,
         * one inserted behind the pages' cursor not at all. The session
         * reads REPEATABLE READ (kd_mysql's init command), so the first
         * read of the transaction fixes its snapshot; read only, nothing
         * is locked. */
        kd_sql_t sql = {0};
        kd_sql_add(&sql, "START TRANSACTION READ ONLY");
        kdelay_err_t err = kd_fate_mysql_stmt(store, &sql, "count fate rows",
                                              NULL, errstr, errstr_size);
        free(sql.buf);
        if (!err)
                err = runs_load(store, &runs, errstr, errstr_size);
        if (!err)
                err = firing_walk(store, &runs, "task_id, owner", "",
                                  KD_COUNT_PAGE, "count firing", firing_count,
                                  counts, errstr, errstr_size);
        if (!err)
                err = count_states(store, counts, errstr, errstr_size);
        counts->fired += counts->fired_by_runs;
        runs_free(&runs);
        /* Ended either way (a lost connection ended it already). */
        if (store->conn) {
                kd_sql_t end = {0};
                char e2[256];
                kd_sql_add(&end, "%s", err ? "ROLLBACK" : "COMMIT");
                kdelay_err_t err2 = kd_fate_mysql_stmt(
                    store, &end, "count fate rows", NULL, e2, sizeof(e2));
                free(end.buf);
                if (!err && err2) {
                        kd_strlcpy(errstr, e2, errstr_size);
                        err = err2;
                }
        }
        return err;
}
