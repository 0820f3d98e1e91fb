/* SPDX-License-Identifier: Apache-2.0 */
/* Migrations applied in order under a lock (kd_schema_migrate.h). */
#include "kd_schema_migrate.h"

#include <mysqld_error.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <kdelay/kdelay.h>

#include "kd_mysql.h"
#include "kd_schema_steps.h"
#include "kd_util.h"

#define KD_SCHEMA_LOCK "kdelay_schema_migrate"

const kd_migration_t *kd_schema_waiting(int version, char *name, size_t size)
{
        for (size_t i = 0; i < kd_migrations_cnt; i++)
                if (kd_migrations[i].version > version)
                        return kd_schema_opt_in(&kd_migrations[i], name, size)
                                   ? &kd_migrations[i]
                                   : NULL;
        return NULL;
}

int kd_schema_opt_in_known(const char *name)
{
        char n[KD_SCHEMA_OPT_IN_MAX + 1];
        for (size_t i = 0; i < kd_migrations_cnt; i++)
                if (kd_schema_opt_in(&kd_migrations[i], n, sizeof(n)) &&
                    !strcmp(n, name))
                        return 1;
        return 0;
}

/* Whether migrate takes migration m: not opt-in, or opt-in and enabled
 * (its name is enable), or the database was fresh when migrate began. */
static int takes(const kd_migration_t *m, const char *enable, int fresh)
{
        char n[KD_SCHEMA_OPT_IN_MAX + 1];
        if (fresh || !kd_schema_opt_in(m, n, sizeof(n)))
                return 1;
        return enable && !strcmp(n, enable);
}

/* The version migrate brings a database at version to: up to the first
 * opt-in step it does not take. */
static int target(int version, const char *enable, int fresh)
{
        for (size_t i = 0; i < kd_migrations_cnt; i++) {
                const kd_migration_t *m = &kd_migrations[i];
                if (m->version <= version)
                        continue;
                if (!takes(m, enable, fresh))
                        break;
                version = m->version;
        }
        return version;
}

/* *metp = 1 when the step is done already: its "unless" guard names a
 * column or index that exists, or its "if index" guard one that does not
 * (information_schema, as MySQL and MariaDB both answer it); 0 otherwise
 * and when it has no guard. */
static kdelay_err_t guard_met(MYSQL *conn, const kd_schema_step_t *st,
                              int *metp, char *errstr, size_t errstr_size)
{
        *metp = 0;
        if (st->guard == KD_SCHEMA_GUARD_NONE)
                return KDELAY_OK;
        char sql[512];
        /* Names are [A-Za-z0-9_] (kd_schema_step_next checked). */
        snprintf(sql, sizeof(sql),
                 "SELECT COUNT(*) FROM information_schema.%s WHERE "
                 "TABLE_SCHEMA = DATABASE() AND TABLE_NAME = '%s' AND %s = "
                 "'%s'",
                 st->guard == KD_SCHEMA_GUARD_COLUMN ? "COLUMNS" : "STATISTICS",
                 st->table,
                 st->guard == KD_SCHEMA_GUARD_COLUMN ? "COLUMN_NAME"
                                                     : "INDEX_NAME",
                 st->name);
        MYSQL_RES *res = NULL;
        if (mysql_query(conn, sql) || !(res = mysql_store_result(conn)))
                return kd_mysql_fail(conn, "migration guard", errstr,
                                     errstr_size);
        MYSQL_ROW row = mysql_fetch_row(res);
        int exists = row && row[0] && atoi(row[0]) > 0;
        *metp = st->guard == KD_SCHEMA_GUARD_IF_INDEX ? !exists : exists;
        mysql_free_result(res);
        return KDELAY_OK;
}

/* Runs a migration's statements one by one (kd_schema_steps.h), skipping
 * each whose guard says it was applied already: a migration interrupted
 * before its version was recorded runs again to the end. */
static kdelay_err_t run_steps(MYSQL *conn, const kd_migration_t *m,
                              char *errstr, size_t errstr_size)
{
        const char *pos = m->sql;
        kd_schema_step_t st;
        int rc;
        char what[128];
        snprintf(what, sizeof(what), "migration %s", m->name);
        while ((rc = kd_schema_step_next(&pos, &st, errstr, errstr_size)) > 0) {
                int met;
                kdelay_err_t err =
                    guard_met(conn, &st, &met, errstr, errstr_size);
                if (err)
                        return err;
                if (met)
                        continue;
                if (mysql_real_query(conn, st.sql, st.sql_len))
                        return kd_mysql_fail(conn, what, errstr, errstr_size);
                MYSQL_RES *res = mysql_store_result(conn);
                if (res)
                        mysql_free_result(res);
        }
        if (rc < 0) {
                char why[256];
                kd_strlcpy(why, errstr, sizeof(why));
                return kd_fail(KDELAY_ERR_SCHEMA, errstr, errstr_size, "%s: %s",
                               what, why);
        }
        return KDELAY_OK;
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

/* Records migration m as applied, with its release floor from version
 * KD_SCHEMA_FLOOR_SINCE on (the column exists from then). */
static kdelay_err_t record(MYSQL *conn, const kd_migration_t *m, char *errstr,
                           size_t errstr_size)
{
        int v[3];
        char sql[320];
        if (m->version < KD_SCHEMA_FLOOR_SINCE)
                snprintf(sql, sizeof(sql),
                         "INSERT INTO kdelay_schema (version, name, "
                         "applied_at_ms) VALUES (%d, '%s', %lld)",
                         m->version, m->name, (long long)kd_now_ms());
        else if (kd_schema_floor_of(m->sql, v) == 1)
                snprintf(sql, sizeof(sql),
                         "INSERT INTO kdelay_schema (version, name, "
                         "applied_at_ms, compat_floor) VALUES (%d, '%s', "
                         "%lld, '%d.%d.%d')",
                         m->version, m->name, (long long)kd_now_ms(), v[0],
                         v[1], v[2]);
        else
                return kd_fail(KDELAY_ERR_SCHEMA, errstr, errstr_size,
                               "migration %s declares no release floor "
                               "(-- kdelay: floor X.Y.Z)",
                               m->name);
        return kd_mysql_exec(conn, sql, errstr, errstr_size);
}

/* Whether MySQL error code e is a privilege refusal. */
static int denied(unsigned e)
{
        return e == ER_DBACCESS_DENIED_ERROR ||
               e == ER_TABLEACCESS_DENIED_ERROR ||
               e == ER_COLUMNACCESS_DENIED_ERROR ||
               e == ER_SPECIFIC_ACCESS_DENIED_ERROR;
}

kdelay_err_t kd_schema_migrate(MYSQL *conn, kd_schema_progress_cb_t *cb,
                               void *opaque, int *fromp, int *top, char *errstr,
                               size_t errstr_size)
{
        return kd_schema_migrate_opt(conn, cb, opaque, NULL, fromp, top, errstr,
                                     errstr_size);
}

kdelay_err_t kd_schema_migrate_opt(MYSQL *conn, kd_schema_progress_cb_t *cb,
                                   void *opaque, const char *enable, int *fromp,
                                   int *top, char *errstr, size_t errstr_size)
{
        kdelay_err_t err;
        int version = 0;
        /* Nothing to do needs only SELECT on kdelay_schema: a user without
         * CREATE (the forwarder's, in an init container) finds the schema
         * current and is done. */
        if ((err = kd_schema_version(conn, &version, errstr, errstr_size)))
                return err;
        /* No schema at all: a fresh install, where nothing older can
         * share the database, takes the opt-in steps too. */
        int fresh = version == 0;
        if (version >= kd_schema_latest() ||
            target(version, enable, fresh) == version) {
                if (fromp)
                        *fromp = version;
                if (top)
                        *top = version;
                return version > kd_schema_latest()
                           ? kd_schema_newer_usable(conn, version, errstr,
                                                    errstr_size)
                           : KDELAY_OK;
        }
        int goal = target(version, enable, fresh);
        if ((err = lock_take(conn, errstr, errstr_size)))
                return err;
        err = kd_mysql_exec(conn,
                            "CREATE TABLE IF NOT EXISTS kdelay_schema ("
                            " version INT NOT NULL PRIMARY KEY,"
                            " name VARCHAR(200) NOT NULL,"
                            " applied_at_ms BIGINT NOT NULL) ENGINE = InnoDB",
                            errstr, errstr_size);
        if (!err)
                err = kd_schema_version(conn, &version, errstr, errstr_size);
        if (!err && version > kd_schema_latest())
                err =
                    kd_schema_newer_usable(conn, version, errstr, errstr_size);
        if (fromp)
                *fromp = version;
        for (size_t i = 0; !err && i < kd_migrations_cnt; i++) {
                const kd_migration_t *m = &kd_migrations[i];
                if (m->version <= version)
                        continue;
                if (!takes(m, enable, fresh))
                        break; /* an opt-in step waits (kd_schema_waiting) */
                if (cb)
                        cb(m, opaque);
                if ((err = run_steps(conn, m, errstr, errstr_size)) ||
                    (err = record(conn, m, errstr, errstr_size)))
                        break;
                version = m->version;
        }
        if (top)
                *top = version;
        if (err && denied(mysql_errno(conn))) {
                char why[400];
                kd_strlcpy(why, errstr, sizeof(why));
                kd_schema_denied(err, version, goal, why, errstr, errstr_size);
        }
        lock_release(conn);
        return err;
}

kdelay_err_t kd_schema_denied(kdelay_err_t err, int version, int goal,
                              const char *why, char *errstr, size_t errstr_size)
{
        int needed = kd_schema_needed();
        if (version < needed)
                return kd_fail(err, errstr, errstr_size,
                               "schema version %d, this kdelay needs %d, and "
                               "this MySQL user may not migrate it (the "
                               "grants of `kdelayctl db grants --role "
                               "migrate`): %s",
                               version, needed, why);
        return kd_fail(err, errstr, errstr_size,
                       "schema version %d (this kdelay needs %d), to %d by "
                       "an opt-in step, and this MySQL user may not migrate "
                       "it (the grants of `kdelayctl db grants --role "
                       "migrate`): %s",
                       version, needed, goal, why);
}
