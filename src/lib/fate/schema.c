/* MySQL schema: versioned migrations, applied in order under a lock. */
#include "kd_schema.h"

#include <mysqld_error.h>
#include <stdio.h>
#include <stdlib.h>

#include "kd_mysql.h"
#include "kd_util.h"

#define KD_SCHEMA_LOCK "kdelay_schema_migrate"

int kd_schema_latest(void)
{
        return kd_migrations_cnt ? kd_migrations[kd_migrations_cnt - 1].version
                                 : 0;
}

kdelay_err_t kd_schema_version(MYSQL *conn, int *versionp, char *errstr,
                               size_t errstr_size)
{
        if (mysql_query(conn, "SELECT COALESCE(MAX(version), 0) FROM "
                              "kdelay_schema")) {
                if (mysql_errno(conn) == ER_NO_SUCH_TABLE) {
                        *versionp = 0;
                        return KDELAY_OK;
                }
                return kd_mysql_fail(conn, "read schema version", errstr,
                                     errstr_size);
        }
        MYSQL_RES *res = mysql_store_result(conn);
        MYSQL_ROW row = res ? mysql_fetch_row(res) : NULL;
        *versionp = row && row[0] ? atoi(row[0]) : 0;
        if (res)
                mysql_free_result(res);
        return KDELAY_OK;
}

/* Runs a multi-statement script, draining every result. */
static kdelay_err_t run_script(MYSQL *conn, const char *sql, const char *what,
                               char *errstr, size_t errstr_size)
{
        if (mysql_set_server_option(conn, MYSQL_OPTION_MULTI_STATEMENTS_ON))
                return kd_mysql_fail(conn, what, errstr, errstr_size);
        kdelay_err_t err = KDELAY_OK;
        int status = mysql_query(conn, sql);
        while (status == 0) {
                MYSQL_RES *res = mysql_store_result(conn);
                if (res)
                        mysql_free_result(res);
                status = mysql_next_result(conn); /* -1: no more results */
        }
        if (status > 0)
                err = kd_mysql_fail(conn, what, errstr, errstr_size);
        mysql_set_server_option(conn, MYSQL_OPTION_MULTI_STATEMENTS_OFF);
        return err;
}

static kdelay_err_t lock_take(MYSQL *conn, char *errstr, size_t errstr_size)
{
        if (mysql_query(conn, "SELECT GET_LOCK('" KD_SCHEMA_LOCK "', 60)"))
                return kd_mysql_fail(conn, "lock schema", errstr, errstr_size);
        MYSQL_RES *res = mysql_store_result(conn);
        MYSQL_ROW row = res ? mysql_fetch_row(res) : NULL;
        int got = row && row[0] && atoi(row[0]) == 1;
        if (res)
                mysql_free_result(res);
        return got ? KDELAY_OK
                   : kd_fail(KDELAY_ERR_TIMED_OUT, errstr, errstr_size,
                             "another migration holds lock %s for over 60s",
                             KD_SCHEMA_LOCK);
}

static void lock_release(MYSQL *conn)
{
        if (!mysql_query(conn, "SELECT RELEASE_LOCK('" KD_SCHEMA_LOCK "')")) {
                MYSQL_RES *res = mysql_store_result(conn);
                if (res)
                        mysql_free_result(res);
        }
}

kdelay_err_t kd_schema_migrate(MYSQL *conn, kd_schema_progress_cb_t *cb,
                               void *opaque, int *fromp, int *top, char *errstr,
                               size_t errstr_size)
{
        kdelay_err_t err;
        int version = 0;
        if ((err = lock_take(conn, errstr, errstr_size)))
                return err;
        err = run_script(conn,
                         "CREATE TABLE IF NOT EXISTS kdelay_schema ("
                         " version INT NOT NULL PRIMARY KEY,"
                         " name VARCHAR(200) NOT NULL,"
                         " applied_at_ms BIGINT NOT NULL) ENGINE = InnoDB",
                         "create kdelay_schema", errstr, errstr_size);
        if (!err)
                err = kd_schema_version(conn, &version, errstr, errstr_size);
        if (!err && version > kd_schema_latest())
                err = kd_fail(KDELAY_ERR_SCHEMA, errstr, errstr_size,
                              "database schema is version %d, newer than this "
                              "kdelay (%d): upgrade kdelay",
                              version, kd_schema_latest());
        if (fromp)
                *fromp = version;
        for (size_t i = 0; !err && i < kd_migrations_cnt; i++) {
                const kd_migration_t *m = &kd_migrations[i];
                if (m->version <= version)
                        continue;
                if (cb)
                        cb(m, opaque);
                char what[128];
                snprintf(what, sizeof(what), "migration %s", m->name);
                if ((err = run_script(conn, m->sql, what, errstr, errstr_size)))
                        break;
                char sql[256];
                snprintf(sql, sizeof(sql),
                         "INSERT INTO kdelay_schema (version, name, "
                         "applied_at_ms) VALUES (%d, '%s', %lld)",
                         m->version, m->name, (long long)kd_now_ms());
                if ((err = kd_mysql_exec(conn, sql, errstr, errstr_size)))
                        break;
                version = m->version;
        }
        if (top)
                *top = version;
        lock_release(conn);
        return err;
}

kdelay_err_t kd_schema_check(MYSQL *conn, char *errstr, size_t errstr_size)
{
        int version;
        kdelay_err_t err =
            kd_schema_version(conn, &version, errstr, errstr_size);
        if (err)
                return err;
        if (version < kd_schema_latest())
                return kd_fail(KDELAY_ERR_SCHEMA, errstr, errstr_size,
                               "database schema is version %d, this kdelay "
                               "needs %d: run `kdelayctl db migrate`",
                               version, kd_schema_latest());
        if (version > kd_schema_latest())
                return kd_fail(KDELAY_ERR_SCHEMA, errstr, errstr_size,
                               "database schema is version %d, newer than "
                               "this kdelay (%d): upgrade kdelay",
                               version, kd_schema_latest());
        return KDELAY_OK;
}
