/* SPDX-License-Identifier: Apache-2.0 */
/* kdelayctl db migrate --enable's check of the forwarder group
 * (db_migrate_enable.h). */
#include "db_migrate_enable.h"

#include <stdio.h>
#include <string.h>

#include <kdelay/kdelay.h>

#include "kd_conf.h"
#include "kd_log.h"
#include "kd_oldfwd.h"
#include "kd_schema.h"
#include "kd_schema_steps.h"

int kd_db_migrate_enable_check(kd_cli_t *cli, MYSQL *conn, const char *step)
{
        char errstr[512], name[KD_SCHEMA_OPT_IN_MAX + 1];
        int version;
        if (kd_schema_version(conn, &version, errstr, sizeof(errstr))) {
                fprintf(stderr, "%s: %s\n", cli->prog, errstr);
                return KD_EXIT_ERROR;
        }
        const kd_migration_t *m = NULL;
        for (size_t i = 0; version > 0 && i < kd_migrations_cnt; i++)
                if (kd_migrations[i].version > version &&
                    kd_schema_opt_in(&kd_migrations[i], name, sizeof(name)) &&
                    !strcmp(name, step))
                        m = &kd_migrations[i];
        if (!m)
                return KD_EXIT_OK;
        int v[3];
        char floor[32];
        if (kd_schema_floor_of(m->sql, v) != 1)
                return KD_EXIT_OK; /* no release named: nothing to ask */
        snprintf(floor, sizeof(floor), "%d.%d.%d", v[0], v[1], v[2]);
        kd_oldfwd_t o;
        if (kd_oldfwd_scan(cli->conf, floor, &o, errstr, sizeof(errstr))) {
                fprintf(stderr,
                        "%s: --enable %s: cannot tell which releases the "
                        "forwarder group runs: %s (--force takes the step "
                        "without asking)\n",
                        cli->prog, step, errstr);
                return KD_EXIT_ERROR;
        }
        kd_cli_log(cli, KDELAY_LOG_INFO,
                   "event=enable_check step=%s members=%d older=%d", step,
                   o.members, o.older);
        if (!o.older)
                return KD_EXIT_OK;
        char q[KD_LOG_QUOTED_MAX(sizeof(o.list))];
        fprintf(stderr,
                "%s: --enable %s refused: %d of the %d members of forwarder "
                "group \"%s\" do not say they run kdelay %s or newer "
                "(client.id kdelay-forwarder/VERSION/INSTANCE): %s. Upgrade "
                "them first. A static member (forwarder.static_membership) "
                "keeps the client.id it first joined with across restarts "
                "quicker than its session timeout, so one already upgraded "
                "can show its old one: check each forwarder's version "
                "(kdelay_build_info), then --force takes the step "
                "(docs/upgrading.md)\n",
                cli->prog, step, o.older, o.members, cli->conf->fwd_group_id,
                floor, kd_log_quote(o.list, q, sizeof(q)));
        return KD_EXIT_USAGE;
}
