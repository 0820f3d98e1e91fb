/* SPDX-License-Identifier: Apache-2.0 */
/* MySQL schema: the versions this build knows and needs, and the
 * database's (kd_schema.h); applying migrations is kdelayctl's
 * (src/lib/ctlonly/schema_migrate.c). */
#include "kd_schema.h"

#include <mysqld_error.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <kdelay/kdelay.h>

#include "kd_mysql.h"
#include "kd_schema_steps.h"
#include "kd_util.h"

int kd_schema_latest(void)
{
        return kd_migrations_cnt ? kd_migrations[kd_migrations_cnt - 1].version
                                 : 0;
}

int kd_schema_opt_in(const kd_migration_t *m, char *name, size_t size)
{
        char buf[KD_SCHEMA_OPT_IN_MAX + 1];
        int rc = kd_schema_opt_in_of(m->sql, name ? name : buf,
                                     name ? size : sizeof(buf));
        return rc == 1;
}

int kd_schema_needed(void)
{
        size_t i = kd_migrations_cnt;
        while (i > 0 && kd_schema_opt_in(&kd_migrations[i - 1], NULL, 0))
                i--;
        return i ? kd_migrations[i - 1].version : 0;
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

kdelay_err_t kd_schema_newer_usable(MYSQL *conn, int version, char *errstr,
                                    size_t errstr_size)
{
        int me[3], floor[3] = {0, 0, 0}, v[3];
        char sql[160], top[32] = "";
        if (kd_release_parse(KDELAY_VERSION_STR, me))
                return kd_fail(KDELAY_ERR_SCHEMA, errstr, errstr_size,
                               "this kdelay's version \"%s\" is not X.Y.Z",
                               KDELAY_VERSION_STR);
        snprintf(sql, sizeof(sql),
                 "SELECT version, compat_floor FROM kdelay_schema WHERE "
                 "version > %d",
                 kd_schema_latest());
        MYSQL_RES *res = NULL;
        if (mysql_query(conn, sql) || !(res = mysql_store_result(conn)))
                return kd_mysql_fail(conn, "read schema floors", errstr,
                                     errstr_size);
        MYSQL_ROW row;
        int unknown = 0;
        while ((row = mysql_fetch_row(res))) {
                if (!row[1] || kd_release_parse(row[1], v)) {
                        unknown = 1; /* no floor: assume none may */
                        continue;
                }
                if (kd_release_cmp(v, floor) > 0) {
                        memcpy(floor, v, sizeof(floor));
                        kd_strlcpy(top, row[1], sizeof(top));
                }
        }
        mysql_free_result(res);
        if (!unknown && kd_release_cmp(floor, me) <= 0)
                return KDELAY_OK;
        if (unknown)
                return kd_fail(KDELAY_ERR_SCHEMA, errstr, errstr_size,
                               "database schema is version %d, newer than "
                               "this kdelay %s knows (%d) and records no "
                               "release floor: upgrade kdelay",
                               version, KDELAY_VERSION_STR, kd_schema_latest());
        return kd_fail(KDELAY_ERR_SCHEMA, errstr, errstr_size,
                       "database schema is version %d, which needs kdelay "
                       "%s or newer; this is kdelay %s: upgrade kdelay",
                       version, top, KDELAY_VERSION_STR);
}

kdelay_err_t kd_schema_check(MYSQL *conn, char *errstr, size_t errstr_size)
{
        int version;
        kdelay_err_t err =
            kd_schema_version(conn, &version, errstr, errstr_size);
        if (err)
                return err;
        if (version < kd_schema_needed())
                return kd_fail(KDELAY_ERR_SCHEMA, errstr, errstr_size,
                               "database schema is version %d, this kdelay "
                               "needs %d: run `kdelayctl db migrate`",
                               version, kd_schema_needed());
        if (version > kd_schema_latest())
                return kd_schema_newer_usable(conn, version, errstr,
                                              errstr_size);
        return KDELAY_OK;
}
