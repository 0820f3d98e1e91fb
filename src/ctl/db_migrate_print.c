/* SPDX-License-Identifier: Apache-2.0 */
/* kdelayctl db migrate --print (db_migrate_print.h). */
#include "db_migrate_print.h"

#include <stdio.h>

#include "kd_schema.h"
#include "kd_schema_steps.h"

int kd_db_migrate_print(kd_cli_t *cli)
{
        for (size_t i = 0; i < kd_migrations_cnt; i++) {
                const kd_migration_t *m = &kd_migrations[i];
                const char *pos = m->sql;
                kd_schema_step_t st;
                char errstr[256];
                int r;
                printf("-- %s (version %d)\n", m->name, m->version);
                while ((r = kd_schema_step_next(&pos, &st, errstr,
                                                sizeof(errstr))) > 0) {
                        if (st.guard != KD_SCHEMA_GUARD_NONE)
                                printf("-- kdelay: %s %s.%s\n",
                                       kd_schema_guard_name(st.guard), st.table,
                                       st.name);
                        printf("%.*s;\n", (int)st.sql_len, st.sql);
                }
                if (r < 0) {
                        fprintf(stderr, "%s: migration %s: %s\n", cli->prog,
                                m->name, errstr);
                        return KD_EXIT_ERROR;
                }
        }
        return fflush(stdout) ? KD_EXIT_ERROR : KD_EXIT_OK;
}
