/* SPDX-License-Identifier: Apache-2.0 */
/* Runs of delivered claims on MySQL (kd_fate_mark_runs, kdelay_fired_run,
 * deploy/mysql/010): the statements that record and delete runs, and the
 * SQL by which the fate table's readers tell a covered FIRING row
 * (delivered: it reads FIRED) from one still in flight. Prefixes are sent
 * as hex literals, like ids. */
#include "kd_fate_mysql_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kd_util.h"

/* The seq of kdelay_fate.owner '<a>:<b>:<seq>' as text. */
#define KD_RUN_SEQ "SUBSTRING_INDEX(kdelay_fate.owner, ':', -1)"

/* 1 when the kdelay_fate row at hand is FIRING and covered by a run, else
 * 0 (never NULL). The owner must split as kd_fate_owner_split says: two
 * ':' around non-empty parts, the seq in its shortest decimal form (CAST
 * back to text gives the same bytes: no sign, no leading zero, no
 * overflow). The run with the greatest seq_lo at or below the seq decides
 * (runs of one prefix never overlap). `kdelay_fate.task_id IS NOT NULL`
 * keys MariaDB's subquery cache on the row: keyed on the owner alone, it
 * would compare owners under the column's case-folding collation and
 * answer for 'FW:..' what it found for 'fw:..'. A plain SELECT only: CAST
 * warns on an owner that is not a token, which a strict UPDATE would
 * refuse (the takeover guards with constants instead). */
static const char kd_covered_sql[] =
    "COALESCE(kdelay_fate.state = 'FIRING' AND kdelay_fate.owner LIKE "
    "'_%:_%:_%' AND kdelay_fate.owner NOT LIKE '%:%:%:%' AND "
    "CAST(CAST(" KD_RUN_SEQ " AS UNSIGNED) AS BINARY) = CAST(" KD_RUN_SEQ
    " AS BINARY) AND (SELECT r.seq_hi FROM kdelay_fired_run r WHERE "
    "r.owner_prefix = CAST(SUBSTRING_INDEX(kdelay_fate.owner, ':', 2) AS "
    "BINARY) AND r.seq_lo <= CAST(" KD_RUN_SEQ " AS UNSIGNED) AND "
    "kdelay_fate.task_id IS NOT NULL ORDER BY r.seq_lo DESC LIMIT 1) >= "
    "CAST(" KD_RUN_SEQ " AS UNSIGNED), 0)";

void kd_fate_mysql_add_covered(kd_sql_t *sql)
{
        kd_sql_add(sql, "%s", kd_covered_sql);
}

/* Appends "COALESCE((SELECT seq_hi of the nearest run of prefix at or
 * below seq) >= seq, 0)": 1 when a run covers the token '<prefix>:<seq>',
 * else 0. Constants only: one dive into the primary key (EXPLAIN: range),
 * however many runs of the prefix come after seq. */
static void add_run_test(kd_sql_t *sql, const char *prefix, size_t plen,
                         uint64_t seq)
{
        kd_sql_add(sql, "COALESCE((SELECT r.seq_hi FROM kdelay_fired_run r "
                        "WHERE r.owner_prefix = ");
        kd_sql_add_hex(sql, prefix, plen);
        kd_sql_add(sql,
                   " AND r.seq_lo <= %llu ORDER BY r.seq_lo DESC LIMIT 1) >= "
                   "%llu, 0)",
                   (unsigned long long)seq, (unsigned long long)seq);
}

void kd_fate_mysql_add_uncovered(kd_sql_t *sql, const char *owner)
{
        size_t plen;
        uint64_t seq;
        if (!owner || !kd_fate_owner_split(owner, strlen(owner), &plen, &seq))
                return; /* no run covers it */
        kd_sql_add(sql, " AND NOT ");
        add_run_test(sql, owner, plen, seq);
}

typedef struct owner_ref {
        const char *p;
        size_t len;
} owner_ref_t;

static int owner_ref_cmp(const void *x, const void *y)
{
        const owner_ref_t *a = x, *b = y;
        return kd_fate_id_cmp(a->p, a->len, b->p, b->len);
}

void kd_fate_mysql_add_covered_of(kd_sql_t *sql, const char *const *owners,
                                  const size_t *lens, size_t n)
{
        owner_ref_t *v = n ? malloc(n * sizeof(*v)) : NULL; /* owned */
        size_t m = 0;
        if (n && !v) {
                sql->oom = 1; /* the statement reports it */
                return;
        }
        for (size_t i = 0; i < n; i++) {
                size_t plen;
                uint64_t seq;
                if (owners[i] &&
                    kd_fate_owner_split(owners[i], lens[i], &plen, &seq))
                        v[m++] = (owner_ref_t){owners[i], lens[i]};
        }
        /* Each owner once: its subquery is a constant, run at most once. */
        if (m > 1) /* (qsort of none: NULL, undefined) */
                qsort(v, m, sizeof(*v), owner_ref_cmp);
        size_t u = 0;
        for (size_t i = 0; i < m; i++)
                if (!u || owner_ref_cmp(&v[u - 1], &v[i]))
                        v[u++] = v[i];
        kd_sql_add(sql, "IF(kdelay_fate.state = 'FIRING', ");
        if (!u)
                kd_sql_add(sql, "NULL");
        else
                kd_sql_add(sql, "CASE CAST(kdelay_fate.owner AS BINARY)");
        for (size_t i = 0; i < u; i++) {
                size_t plen;
                uint64_t seq;
                (void)kd_fate_owner_split(v[i].p, v[i].len, &plen, &seq);
                kd_sql_add(sql, " WHEN ");
                kd_sql_add_hex(sql, v[i].p, v[i].len);
                kd_sql_add(sql, " THEN ");
                add_run_test(sql, v[i].p, plen, seq);
        }
        kd_sql_add(sql, "%s, 0)", u ? " END" : "");
        free(v);
}

kdelay_err_t kd_fate_mysql_mark_runs(void *impl, const char *prefix,
                                     const uint64_t *lo, const uint64_t *hi,
                                     size_t n, char *errstr, size_t errstr_size)
{
        kd_sql_t sql = {0};
        long long now = (long long)kd_now_ms();
        size_t plen = strlen(prefix);
        /* IGNORE: a run recorded already (a request retried after its
         * answer was lost) stays as it is. */
        kd_sql_add(&sql, "INSERT IGNORE INTO kdelay_fired_run (owner_prefix, "
                         "seq_lo, seq_hi, created_at_ms) VALUES ");
        for (size_t i = 0; i < n; i++) {
                kd_sql_add(&sql, "%s(", i ? "," : "");
                kd_sql_add_hex(&sql, prefix, plen);
                kd_sql_add(&sql, ",%llu,%llu,%lld)", (unsigned long long)lo[i],
                           (unsigned long long)hi[i], now);
        }
        kdelay_err_t err = kd_fate_mysql_stmt(impl, &sql, "mark runs", NULL,
                                              errstr, errstr_size);
        free(sql.buf);
        return err;
}

kdelay_err_t kd_fate_mysql_gc_runs(void *impl, int64_t created_before_ms,
                                   int batch, uint64_t *deletedp, char *errstr,
                                   size_t errstr_size)
{
        kd_fate_mysql_t *store = impl;
        kd_sql_t sql = {0};
        kd_sql_add(&sql,
                   "DELETE FROM kdelay_fired_run WHERE created_at_ms < %lld "
                   "LIMIT %d",
                   (long long)created_before_ms, batch);
        kdelay_err_t err = kd_fate_mysql_stmt(store, &sql, "gc runs", NULL,
                                              errstr, errstr_size);
        free(sql.buf);
        if (!err)
                *deletedp = (uint64_t)mysql_affected_rows(store->conn);
        return err;
}
