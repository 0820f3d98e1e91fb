/* SPDX-License-Identifier: Apache-2.0 */
/* The reconciliation marker on MySQL (kd_fate.h, kd_fate_pending_t): the
 * kdelay_reconcile table, one row per journal topic (deploy/mysql/009).
 * Strings are sent as hex literals, like ids. */
#include "kd_fate_mysql_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kd_util.h"

/* Now on the server's clock, in ms (MariaDB and MySQL 8): marks, renewals
 * and clears compare times of one clock only. */
#define NOW_MS "FLOOR(UNIX_TIMESTAMP(NOW(3)) * 1000)"

static void add_str(kd_sql_t *sql, const char *s)
{
        if (s)
                kd_sql_add_hex(sql, s, strlen(s));
        else
                kd_sql_add(sql, "NULL");
}

kdelay_err_t kd_fate_mysql_pending_mark(void *impl, const char *journal,
                                        const char *by, char *errstr,
                                        size_t errstr_size)
{
        kd_sql_t sql = {0};
        kd_sql_add(&sql, "INSERT INTO kdelay_reconcile (journal, epoch, "
                         "pending_since_ms, marked_at_ms, marked_by) VALUES (");
        add_str(&sql, journal);
        kd_sql_add(&sql, ", 1, " NOW_MS ", " NOW_MS ", ");
        add_str(&sql, by);
        kd_sql_add(&sql, ") ON DUPLICATE KEY UPDATE epoch = epoch + 1, "
                         "pending_since_ms = COALESCE(pending_since_ms, " NOW_MS
                         "), marked_at_ms = " NOW_MS ", marked_by = ");
        add_str(&sql, by);
        kdelay_err_t err = kd_fate_mysql_stmt(impl, &sql, "reconcile mark",
                                              NULL, errstr, errstr_size);
        free(sql.buf);
        return err;
}

kdelay_err_t kd_fate_mysql_pending_get(void *impl, const char *journal,
                                       kd_fate_pending_t *p, char *errstr,
                                       size_t errstr_size)
{
        kd_sql_t sql = {0};
        MYSQL_RES *res = NULL;
        kd_sql_add(&sql, "SELECT journal, epoch, pending_since_ms, "
                         "marked_at_ms, marked_by, " NOW_MS
                         " - marked_at_ms FROM kdelay_reconcile ");
        if (journal) {
                kd_sql_add(&sql, "WHERE journal = ");
                add_str(&sql, journal);
        } else {
                kd_sql_add(&sql, "WHERE pending_since_ms IS NOT NULL ORDER "
                                 "BY pending_since_ms LIMIT 1");
        }
        kdelay_err_t err = kd_fate_mysql_stmt(impl, &sql, "reconcile read",
                                              &res, errstr, errstr_size);
        free(sql.buf);
        if (err)
                return err;
        MYSQL_ROW row = mysql_fetch_row(res);
        if (row) {
                kd_strlcpy(p->journal, row[0] ? row[0] : "",
                           sizeof(p->journal));
                p->epoch = row[1] ? strtoull(row[1], NULL, 10) : 0;
                p->since_ms = kd_sql_col_i64(row[2]);
                p->marked_at_ms = kd_sql_col_i64(row[3]);
                kd_strlcpy(p->by, row[4] ? row[4] : "", sizeof(p->by));
                p->marked_age_ms = kd_sql_col_i64(row[5]);
        }
        mysql_free_result(res);
        return KDELAY_OK;
}

kdelay_err_t kd_fate_mysql_pending_renew(void *impl, const char *journal,
                                         const char *by, char *errstr,
                                         size_t errstr_size)
{
        kd_sql_t sql = {0};
        kd_sql_add(&sql, "UPDATE kdelay_reconcile SET marked_at_ms = " NOW_MS
                         ", marked_by = ");
        add_str(&sql, by);
        kd_sql_add(&sql, " WHERE journal = ");
        add_str(&sql, journal);
        kd_sql_add(&sql, " AND pending_since_ms IS NOT NULL");
        kdelay_err_t err = kd_fate_mysql_stmt(impl, &sql, "reconcile renew",
                                              NULL, errstr, errstr_size);
        free(sql.buf);
        return err;
}

kdelay_err_t kd_fate_mysql_pending_clear(void *impl, const char *journal,
                                         uint64_t epoch, const char *by,
                                         int64_t stale_ms, kd_fate_pending_t *p,
                                         char *errstr, size_t errstr_size)
{
        kd_sql_t sql = {0};
        kd_sql_add(&sql, "UPDATE kdelay_reconcile SET pending_since_ms = NULL, "
                         "cleared_at_ms = " NOW_MS ", cleared_by = ");
        add_str(&sql, by);
        kd_sql_add(&sql, " WHERE journal = ");
        add_str(&sql, journal);
        kd_sql_add(&sql,
                   " AND epoch = %llu AND pending_since_ms IS NOT "
                   "NULL",
                   (unsigned long long)epoch);
        if (stale_ms >= 0) /* nobody with fires unsettled renews it */
                kd_sql_add(&sql, " AND marked_at_ms < " NOW_MS " - %lld",
                           (long long)stale_ms);
        kdelay_err_t err = kd_fate_mysql_stmt(impl, &sql, "reconcile clear",
                                              NULL, errstr, errstr_size);
        free(sql.buf);
        if (err)
                return err;
        return kd_fate_mysql_pending_get(impl, journal, p, errstr, errstr_size);
}
