/* SPDX-License-Identifier: Apache-2.0 */
/* Fires made without a claim, on MySQL (kd_fate_mysql_int.h): the journal
 * of forwarder.fate_outage_policy=fire applied to kdelay_fate, and
 * recorded in kdelay_unclaimed (deploy/mysql/007_unclaimed.sql).
 *
 * The apply is plain statements, no transaction, so that it is
 * idempotent and safe beside claims, cancels and another applier:
 *   1. INSERT IGNORE a FIRED fate row per delivered task, a DEAD one per
 *      dead-lettered task: from here on, a cancel finds a row (too late,
 *      or dead), so every CANCELLED row the next statement sees was there
 *      before the journal was applied;
 *   2. read which rows are CANCELLED, FIRING or DEAD, and which tasks
 *      kdelay_unclaimed holds already (the first application's answer);
 *   3. INSERT IGNORE the kdelay_unclaimed rows with what 2 found;
 *   4. UPDATE the CANCELLED and FIRING rows of delivered tasks to FIRED;
 *   5. UPDATE the FIRING rows of dead-lettered tasks to DEAD (a
 *      CANCELLED one stays: it was not delivered).
 * A crash between any two repeats the steps after it; 3 comes before 4
 * so that a cancel overridden by 4 is always on record.
 *
 * A record of intent (at_least_once writes one before each such fire, so
 * that a crash before the delivery record leaves a trace) takes part in 2
 * and 3 only, and in 3 only when its row is CANCELLED: a cancelled task
 * that may have been delivered goes on record with prior "cancelled" and
 * its row stays CANCELLED (status and audit tell it by that: delivery not
 * confirmed). Any other task of an intent is left alone: not cancelled,
 * its tier record is read again and fired again if its delivery record
 * never comes (at_least_once). */
#include <errmsg.h>
#include <stdlib.h>
#include <string.h>

#include "kd_fate_mysql_int.h"
#include "kd_fate_ops.h"

static int item_cmp(const void *x, const void *y)
{
        const kd_fate_unclaimed_t *a = *(kd_fate_unclaimed_t *const *)x;
        const kd_fate_unclaimed_t *b = *(kd_fate_unclaimed_t *const *)y;
        return kd_fate_id_cmp(a->id, a->id_len, b->id, b->id_len);
}

/* Calls fn on every item of sorted (n, by item_cmp) whose id is (id,
 * len): a journal may name a task twice. */
static void each_match(kd_fate_unclaimed_t *const *sorted, size_t n,
                       const char *id, size_t len,
                       void (*fn)(kd_fate_unclaimed_t *it, char **row),
                       char **v)
{
        size_t lo = 0, hi = n;
        while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;
                if (kd_fate_id_cmp(sorted[mid]->id, sorted[mid]->id_len, id,
                                   len) < 0)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        for (; lo < n &&
               !kd_fate_id_cmp(sorted[lo]->id, sorted[lo]->id_len, id, len);
             lo++)
                fn(sorted[lo], v);
}

static kd_unclaimed_prior_t prior_of_fate(const char *state)
{
        kdelay_fate_t f = kd_fate_parse(state);
        return f == KDELAY_FATE_CANCELLED ? KD_PRIOR_CANCELLED
               : f == KDELAY_FATE_FIRING  ? KD_PRIOR_FIRING
               : f == KDELAY_FATE_DEAD    ? KD_PRIOR_DEAD
                                          : KD_PRIOR_FIRED;
}

static kd_unclaimed_prior_t prior_parse(const char *s)
{
        for (int p = 0; s && p < KD_PRIORS; p++)
                if (!strcmp(s, kd_unclaimed_prior_str((kd_unclaimed_prior_t)p)))
                        return (kd_unclaimed_prior_t)p;
        return KD_PRIOR_FIRED;
}

/* Item states while applying: the fate row's (2: row is 'f', id, state,
 * decided time), and whether kdelay_unclaimed held the task already ('u',
 * id, prior, cancelled time). recorded is 1 until found. */
static void set_fate(kd_fate_unclaimed_t *it, char **row)
{
        if (!it->recorded) /* on record already: its row decides */
                return;
        it->prior = prior_of_fate(row[2]);
        if (it->prior == KD_PRIOR_CANCELLED)
                it->cancelled_at_ms = kd_sql_col_i64(row[3]);
}

static void set_recorded(kd_fate_unclaimed_t *it, char **row)
{
        it->recorded = 0;
        it->prior = prior_parse(row[2]);
        it->cancelled_at_ms = kd_sql_col_i64(row[3]);
}

static void add_source(kd_sql_t *s, const kd_fate_unclaimed_t *it)
{
        if (!it->src_topic) {
                kd_sql_add(s, "NULL,NULL,NULL");
                return;
        }
        kd_sql_add_hex(s, it->src_topic, strlen(it->src_topic));
        kd_sql_add(s, ",%d,%lld", (int)it->src_partition,
                   (long long)it->src_offset);
}

static void add_reason(kd_sql_t *s, const kd_fate_unclaimed_t *it)
{
        if (it->dead_reason)
                kd_sql_add(s, ",'%s'", it->dead_reason);
        else
                kd_sql_add(s, ",NULL");
}

static void add_forwarder(kd_sql_t *s, const kd_fate_unclaimed_t *it)
{
        size_t len = it->forwarder ? strlen(it->forwarder) : 0;
        if (len > KD_FATE_OWNER_MAX)
                len = KD_FATE_OWNER_MAX;
        if (len)
                kd_sql_add_hex(s, it->forwarder, len);
        else
                kd_sql_add(s, "NULL");
}

/* Which items add_ids lists. */
typedef enum which {
        ALL,
        DELIVERED_CONFLICTS, /* delivered, its row CANCELLED or FIRING */
        DEAD_CONFLICTS       /* dead-lettered, its row FIRING */
} which_t;

static int listed(const kd_fate_unclaimed_t *it, which_t which)
{
        switch (which) {
        case ALL:
                return 1;
        case DELIVERED_CONFLICTS:
                return !it->intent && !it->dead_reason &&
                       (it->prior == KD_PRIOR_CANCELLED ||
                        it->prior == KD_PRIOR_FIRING);
        case DEAD_CONFLICTS:
                return !it->intent && it->dead_reason &&
                       it->prior == KD_PRIOR_FIRING;
        }
        return 0;
}

static void add_ids(kd_sql_t *s, const kd_fate_unclaimed_t *items, size_t n,
                    which_t which)
{
        int first = 1;
        for (size_t i = 0; i < n; i++) {
                if (!listed(&items[i], which))
                        continue;
                kd_sql_add(s, first ? "" : ",");
                kd_sql_add_hex(s, items[i].id, items[i].id_len);
                first = 0;
        }
        kd_sql_add(s, ")");
}

/* Sends one statement of the apply, and empties sql. */
static kdelay_err_t apply_send(kd_fate_mysql_t *store, kd_sql_t *sql,
                               char *errstr, size_t errstr_size)
{
        kdelay_err_t err = kd_fate_mysql_stmt(store, sql, "apply journal", NULL,
                                              errstr, errstr_size);
        free(sql->buf);
        memset(sql, 0, sizeof(*sql));
        return err;
}

/* 1: a FIRED (or DEAD) row for every task that has none. */
static kdelay_err_t insert_fired(kd_fate_mysql_t *store,
                                 const kd_fate_unclaimed_t *items, size_t n,
                                 int64_t now, char *errstr, size_t errstr_size)
{
        kd_sql_t sql = {0};
        size_t k = 0;
        kd_sql_add(&sql, "INSERT IGNORE INTO kdelay_fate (task_id, state, "
                         "fire_at_ms, owner, decided_at_ms, updated_at_ms, "
                         "src_topic, src_partition, src_offset, dead_reason) "
                         "VALUES ");
        for (size_t i = 0; i < n; i++) {
                const kd_fate_unclaimed_t *it = &items[i];
                if (it->intent)
                        continue;
                kd_sql_add(&sql, "%s(", k++ ? "," : "");
                kd_sql_add_hex(&sql, it->id, it->id_len);
                /* A reason is [a-z0-9-] (kd_fate_apply_unclaimed checked). */
                kd_sql_add(&sql, ",'%s',%lld,",
                           it->dead_reason ? "DEAD" : "FIRED",
                           (long long)it->fire_at_ms);
                add_forwarder(&sql, it);
                kd_sql_add(&sql, ",%lld,%lld,", (long long)it->fired_at_ms,
                           (long long)now);
                add_source(&sql, it);
                add_reason(&sql, it);
                kd_sql_add(&sql, ")");
        }
        if (!k) { /* intents only */
                free(sql.buf);
                return KDELAY_OK;
        }
        return apply_send(store, &sql, errstr, errstr_size);
}

/* 2: what each task's rows say. */
static kdelay_err_t read_priors(kd_fate_mysql_t *store,
                                kd_fate_unclaimed_t *items, size_t n,
                                char *errstr, size_t errstr_size)
{
        kd_fate_unclaimed_t **sorted = malloc(n * sizeof(*sorted));
        if (!sorted)
                return KDELAY_ERR_NO_MEMORY;
        for (size_t i = 0; i < n; i++) {
                sorted[i] = &items[i];
                items[i].recorded = 1;
                items[i].cancelled_at_ms = -1;
        }
        qsort(sorted, n, sizeof(*sorted), item_cmp);
        kd_sql_t sql = {0};
        MYSQL_RES *res = NULL;
        kd_sql_add(&sql, "SELECT 'u', task_id, prior, cancelled_at_ms FROM "
                         "kdelay_unclaimed WHERE task_id IN (");
        add_ids(&sql, items, n, ALL);
        kd_sql_add(&sql, " UNION ALL SELECT 'f', task_id, state, "
                         "decided_at_ms FROM "
                         "kdelay_fate WHERE state IN ('CANCELLED', 'FIRING', "
                         "'DEAD') AND task_id IN (");
        add_ids(&sql, items, n, ALL);
        kdelay_err_t err = kd_fate_mysql_stmt(store, &sql, "apply journal",
                                              &res, errstr, errstr_size);
        free(sql.buf);
        if (err) {
                free(sorted);
                return err;
        }
        /* kdelay_unclaimed's answer wins over the fate row's: rows of 'u'
         * first, whatever order the server returns them in. */
        for (int pass = 0; pass < 2; pass++) {
                MYSQL_ROW row;
                mysql_data_seek(res, 0);
                while ((row = mysql_fetch_row(res))) {
                        unsigned long *lens = mysql_fetch_lengths(res);
                        if (!row[0] || !row[1] || (row[0][0] == 'u') != !pass)
                                continue;
                        each_match(sorted, n, row[1], lens[1],
                                   pass ? set_fate : set_recorded, row);
                }
        }
        mysql_free_result(res);
        free(sorted);
        /* An intent goes on record only for a cancelled task. */
        for (size_t i = 0; i < n; i++)
                if (items[i].intent && items[i].prior != KD_PRIOR_CANCELLED)
                        items[i].recorded = 0;
        return KDELAY_OK;
}

/* 3: the kdelay_unclaimed rows of the tasks not on record yet. */
static kdelay_err_t record(kd_fate_mysql_t *store,
                           const kd_fate_unclaimed_t *items, size_t n,
                           int64_t now, char *errstr, size_t errstr_size)
{
        kd_sql_t sql = {0};
        size_t k = 0;
        /* The forwarder after the source: two hex literals side by side
         * read as one id list to tools/sqlcheck's shapes. */
        kd_sql_add(&sql, "INSERT IGNORE INTO kdelay_unclaimed (task_id, "
                         "prior, fire_at_ms, fired_at_ms, src_topic, "
                         "src_partition, src_offset, forwarder, dead_reason, "
                         "applied_at_ms, cancelled_at_ms) VALUES ");
        for (size_t i = 0; i < n; i++) {
                const kd_fate_unclaimed_t *it = &items[i];
                if (!it->recorded)
                        continue;
                kd_sql_add(&sql, "%s(", k++ ? "," : "");
                kd_sql_add_hex(&sql, it->id, it->id_len);
                kd_sql_add(
                    &sql, ",'%s',%lld,%lld,", kd_unclaimed_prior_str(it->prior),
                    (long long)it->fire_at_ms, (long long)it->fired_at_ms);
                add_source(&sql, it);
                kd_sql_add(&sql, ",");
                add_forwarder(&sql, it);
                add_reason(&sql, it);
                kd_sql_add(&sql, ",%lld,", (long long)now);
                if (it->prior == KD_PRIOR_CANCELLED && it->cancelled_at_ms >= 0)
                        kd_sql_add(&sql, "%lld)",
                                   (long long)it->cancelled_at_ms);
                else
                        kd_sql_add(&sql, "NULL)");
        }
        kdelay_err_t err = k ? kd_fate_mysql_stmt(store, &sql, "apply journal",
                                                  NULL, errstr, errstr_size)
                             : KDELAY_OK;
        free(sql.buf);
        return err;
}

/* 4: delivered tasks' CANCELLED and FIRING rows to FIRED. */
static kdelay_err_t update_fired(kd_fate_mysql_t *store,
                                 const kd_fate_unclaimed_t *items, size_t n,
                                 int64_t now, char *errstr, size_t errstr_size)
{
        kd_sql_t sql = {0};
        kd_sql_add(&sql,
                   "UPDATE kdelay_fate SET state = 'FIRED', updated_at_ms = "
                   "%lld WHERE state IN ('CANCELLED', 'FIRING') AND task_id "
                   "IN (",
                   (long long)now);
        add_ids(&sql, items, n, DELIVERED_CONFLICTS);
        return apply_send(store, &sql, errstr, errstr_size);
}

/* 5: dead-lettered tasks' FIRING rows to DEAD with their reasons. */
static kdelay_err_t update_dead(kd_fate_mysql_t *store,
                                const kd_fate_unclaimed_t *items, size_t n,
                                int64_t now, char *errstr, size_t errstr_size)
{
        kd_sql_t sql = {0};
        kd_sql_add(&sql, "UPDATE kdelay_fate SET state = 'DEAD', "
                         "dead_reason = CASE task_id");
        for (size_t i = 0; i < n; i++) {
                if (!listed(&items[i], DEAD_CONFLICTS))
                        continue;
                kd_sql_add(&sql, " WHEN ");
                kd_sql_add_hex(&sql, items[i].id, items[i].id_len);
                kd_sql_add(&sql, " THEN '%s'", items[i].dead_reason);
        }
        kd_sql_add(&sql,
                   " END, updated_at_ms = %lld WHERE state = 'FIRING' AND "
                   "task_id IN (",
                   (long long)now);
        add_ids(&sql, items, n, DEAD_CONFLICTS);
        return apply_send(store, &sql, errstr, errstr_size);
}

kdelay_err_t kd_fate_mysql_apply_unclaimed(void *impl,
                                           kd_fate_unclaimed_t *items, size_t n,
                                           char *errstr, size_t errstr_size)
{
        kd_fate_mysql_t *store = impl;
        int64_t now = kd_now_ms();
        kdelay_err_t err =
            insert_fired(store, items, n, now, errstr, errstr_size);
        if (!err)
                err = read_priors(store, items, n, errstr, errstr_size);
        if (!err)
                err = record(store, items, n, now, errstr, errstr_size);
        if (err)
                return err;
        /* 4 and 5. A task on record from an earlier application whose
         * update did not happen is among them too (its prior is the
         * record's). */
        size_t delivered = 0, dead = 0;
        for (size_t i = 0; i < n; i++) {
                delivered += listed(&items[i], DELIVERED_CONFLICTS);
                dead += listed(&items[i], DEAD_CONFLICTS);
        }
        if (delivered)
                err = update_fired(store, items, n, now, errstr, errstr_size);
        if (!err && dead)
                err = update_dead(store, items, n, now, errstr, errstr_size);
        return err;
}

kdelay_err_t kd_fate_mysql_unclaimed_list(void *impl, const char *id,
                                          size_t id_len, int prior,
                                          int64_t applied_after_ms,
                                          kd_fate_unclaimed_row_t *rows,
                                          size_t max, size_t *np, char *errstr,
                                          size_t errstr_size)
{
        kd_fate_mysql_t *store = impl;
        kd_sql_t sql = {0};
        MYSQL_RES *res = NULL;
        kd_sql_add(&sql, "SELECT task_id, prior, fire_at_ms, fired_at_ms, "
                         "applied_at_ms, forwarder, src_topic, src_partition, "
                         "src_offset, dead_reason, cancelled_at_ms FROM "
                         "kdelay_unclaimed "
                         "WHERE ");
        if (id) {
                kd_sql_add(&sql, "task_id = ");
                kd_sql_add_hex(&sql, id, id_len);
        } else {
                kd_sql_add(&sql, "applied_at_ms >= %lld",
                           (long long)applied_after_ms);
                if (prior >= 0)
                        kd_sql_add(&sql, " AND prior = '%s'",
                                   kd_unclaimed_prior_str(
                                       (kd_unclaimed_prior_t)prior));
                /* A cancelled task dead-lettered was not delivered. */
                if (prior == KD_PRIOR_CANCELLED)
                        kd_sql_add(&sql, " AND dead_reason IS NULL");
                kd_sql_add(&sql, " ORDER BY applied_at_ms LIMIT %zu", max);
        }
        kdelay_err_t err = kd_fate_mysql_stmt(store, &sql, "list unclaimed",
                                              &res, errstr, errstr_size);
        free(sql.buf);
        if (err)
                return err;
        MYSQL_ROW row;
        size_t n = 0;
        while (n < max && (row = mysql_fetch_row(res))) {
                unsigned long *lens = mysql_fetch_lengths(res);
                kd_fate_unclaimed_row_t *r = &rows[n];
                if (!row[0] || lens[0] > KDELAY_ID_MAX)
                        continue; /* not a row kdelay wrote */
                memset(r, 0, sizeof(*r));
                memcpy(r->id, row[0], lens[0]);
                r->id_len = lens[0];
                r->prior = prior_parse(row[1]);
                r->fire_at_ms = kd_sql_col_i64(row[2]);
                r->fired_at_ms = kd_sql_col_i64(row[3]);
                r->applied_at_ms = kd_sql_col_i64(row[4]);
                kd_strlcpy(r->forwarder, row[5] ? row[5] : "",
                           sizeof(r->forwarder));
                kd_strlcpy(r->src_topic, row[6] ? row[6] : "",
                           sizeof(r->src_topic));
                r->src_partition = (int32_t)kd_sql_col_i64(row[7]);
                r->src_offset = kd_sql_col_i64(row[8]);
                kd_strlcpy(r->dead_reason, row[9] ? row[9] : "",
                           sizeof(r->dead_reason));
                r->cancelled_at_ms = kd_sql_col_i64(row[10]);
                n++;
        }
        mysql_free_result(res);
        *np = n;
        return KDELAY_OK;
}

kdelay_err_t kd_fate_mysql_gc_unclaimed(void *impl, int64_t applied_before_ms,
                                        int batch, uint64_t *deletedp,
                                        char *errstr, size_t errstr_size)
{
        kd_fate_mysql_t *store = impl;
        kd_sql_t sql = {0};
        kd_sql_add(&sql,
                   "DELETE FROM kdelay_unclaimed WHERE applied_at_ms < %lld "
                   "LIMIT %d",
                   (long long)applied_before_ms, batch);
        kdelay_err_t err = kd_fate_mysql_stmt(store, &sql, "gc unclaimed", NULL,
                                              errstr, errstr_size);
        free(sql.buf);
        if (!err)
                *deletedp = (uint64_t)mysql_affected_rows(store->conn);
        return err;
}
