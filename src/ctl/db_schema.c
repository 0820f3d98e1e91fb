/* SPDX-License-Identifier: Apache-2.0 */
/* kdelayctl db migrate and db version (db_schema.h). */
#include "db_schema.h"

#include <stdio.h>

#include <cjson/cJSON.h>

#include <kdelay/kdelay.h>

#include "ctl_json.h"
#include "db_migrate_enable.h"
#include "kd_mysql.h"
#include "kd_schema.h"
#include "kd_schema_migrate.h"
#include "kd_schema_steps.h"

/* The opt-in step m (named step) a database waits for, and how to take
 * it. */
static void print_waiting(const kd_migration_t *m, const char *step)
{
        int v[3] = {0, 0, 0};
        kd_schema_floor_of(m->sql, v);
        printf("waiting %d %s: opt-in; once every forwarder and client runs "
               "kdelay %d.%d.%d or newer (docs/upgrading.md): kdelayctl db "
               "migrate --enable %s\n",
               m->version, step, v[0], v[1], v[2], step);
}

static void on_migration(const kd_migration_t *m, void *opaque)
{
        kd_cli_log(opaque, KDELAY_LOG_INFO,
                   "event=migration_apply version=%d name=%s", m->version,
                   m->name);
}

int kd_db_schema(kd_cli_t *cli, int migrate, const char *enable, int force,
                 int json)
{
        char errstr[512];
        int rc = KD_EXIT_OK;
        MYSQL *conn = NULL;
        kdelay_err_t err =
            kd_mysql_connect(cli->conf, &conn, errstr, sizeof(errstr));
        int from = 0, to = 0;
        if (!err && migrate && enable && !force)
                rc = kd_db_migrate_enable_check(cli, conn, enable);
        /* rc: refused, or the check failed (it said why) */
        if (!err && rc == KD_EXIT_OK && migrate)
                err = kd_schema_migrate_opt(conn, on_migration, cli, enable,
                                            &from, &to, errstr, sizeof(errstr));
        else if (!err && rc == KD_EXIT_OK)
                err = kd_schema_version(conn, &to, errstr, sizeof(errstr));
        char step[KD_SCHEMA_OPT_IN_MAX + 1] = "";
        const kd_migration_t *wait =
            !err && to ? kd_schema_waiting(to, step, sizeof(step)) : NULL;
        if (rc == KD_EXIT_OK && err) {
                fprintf(stderr, "%s: %s\n", cli->prog, errstr);
                rc = KD_EXIT_ERROR;
        } else if (rc == KD_EXIT_OK && json) {
                cJSON *o = cJSON_CreateObject();
                cJSON_AddNumberToObject(o, migrate ? "from" : "database",
                                        migrate ? from : to);
                cJSON_AddNumberToObject(o, migrate ? "to" : "this_build",
                                        migrate ? to : kd_schema_latest());
                cJSON *w = wait ? cJSON_AddObjectToObject(o, "waiting") : NULL;
                if (w) {
                        cJSON_AddNumberToObject(w, "version", wait->version);
                        cJSON_AddStringToObject(w, "step", step);
                }
                kd_ctl_json_print(o);
        } else if (rc == KD_EXIT_OK) {
                if (migrate)
                        printf("schema version %d (was %d)\n", to, from);
                else
                        printf("database %d\nthis-build %d\n", to,
                               kd_schema_latest());
                if (wait)
                        print_waiting(wait, step);
        }
        if (conn)
                mysql_close(conn);
        return rc;
}
