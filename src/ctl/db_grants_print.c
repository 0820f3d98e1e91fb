/* SPDX-License-Identifier: Apache-2.0 */
/* kdelayctl db grants, the sub-verb (db_grants_print.h). */
#include "db_grants_print.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "ctl_json.h"
#include "db_grants.h"
#include "kd_conf.h"
#include "kd_log.h"
#include "kd_mysql.h"

/* The grants of role as {"role", "account", "statements": [...]}. */
static int grants_json(const char *role, const char *db, const char *account)
{
        char *text = NULL;
        size_t len = 0;
        FILE *mem = open_memstream(&text, &len);
        if (!mem)
                return KD_EXIT_ERROR;
        kd_db_grants_write(mem, role, db, account);
        if (fclose(mem)) {
                free(text);
                return KD_EXIT_ERROR;
        }
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "role", role);
        cJSON_AddStringToObject(o, "account", account);
        cJSON *st = cJSON_AddArrayToObject(o, "statements");
        char *save = NULL;
        for (char *l = strtok_r(text, "\n", &save); l && st;
             l = strtok_r(NULL, "\n", &save))
                if (strncmp(l, "--", 2))
                        cJSON_AddItemToArray(st, cJSON_CreateString(l));
        free(text);
        return kd_ctl_json_print(o) ? KD_EXIT_ERROR : KD_EXIT_OK;
}

int kd_db_grants_print(kd_cli_t *cli, const char *role, const char *user,
                       int json)
{
        char account[300], dflt[128], q[300];
        if (!role)
                return kd_cli_usage_error(cli, "--role is required (forwarder, "
                                               "admin, client, migrate or gc)");
        int known = 0;
        for (size_t i = 0; kd_db_grant_roles[i]; i++)
                known |= !strcmp(kd_db_grant_roles[i], role);
        if (!known)
                return kd_cli_usage_error(
                    cli,
                    "--role %s is not forwarder, admin, client, migrate or gc",
                    kd_log_quote(role, q, sizeof(q)));
        snprintf(dflt, sizeof(dflt), "kdelay_%s", role);
        if (kd_db_grants_account(user ? user : dflt, account, sizeof(account)))
                return kd_cli_usage_error(
                    cli,
                    "--user %s: want USER or USER@HOST without quotes, "
                    "backslashes, backticks or control characters",
                    kd_log_quote(user, q, sizeof(q)));
        /* mysql.url, parsed when set (zero when unset). */
        const kd_mysql_params_t *p = &cli->conf->mysql_params;
        const char *db = p->db ? p->db : "kdelay";
        int rc = KD_EXIT_OK;
        if (strpbrk(db, "`\n"))
                rc = kd_cli_usage_error(cli,
                                        "the database name holds a backtick "
                                        "or a newline");
        else if (!json)
                kd_db_grants_write(stdout, role, db, account);
        else
                rc = grants_json(role, db, account);
        return rc;
}
