/* SPDX-License-Identifier: Apache-2.0 */
/* kdelayctl db grants: the least MySQL privileges of each kdelay role
 * (docs/security.md). The statements follow what each binary runs:
 * src/lib/fate/fate_mysql.c (claims, marks, cancels, lookups, gc),
 * src/lib/fate/schema.c (the schema table read) and
 * src/lib/ctlonly/schema_migrate.c (the migrations). */
#include "db_grants.h"

#include <string.h>

typedef struct kd_db_role {
        const char *name;
        const char *runs;     /* the comment line */
        const char *privs[7]; /* "PRIVILEGES ON <table>", NULL-ended; the
                                 table "*" is the whole database */
} kd_db_role_t;

static const kd_db_role_t kd_db_roles[] = {
    {"forwarder",
     "kdelay-forwarder: claims, FIRED marks, takeovers, the schema check, "
     "the journal of an outage (fate_outage_policy=fire)",
     {"SELECT, INSERT, UPDATE ON kdelay_fate", "SELECT ON kdelay_schema",
      "SELECT, INSERT ON kdelay_unclaimed",
      "SELECT, INSERT, UPDATE ON kdelay_reconcile",
      "SELECT, INSERT ON kdelay_fired_run", NULL}},
    {"admin",
     "kdelayctl schedule, cancel, status, tasks, reschedule, audit, stats",
     {"SELECT, INSERT, UPDATE ON kdelay_fate", "SELECT ON kdelay_schema",
      "SELECT ON kdelay_unclaimed", "SELECT ON kdelay_reconcile",
      "SELECT ON kdelay_fired_run", NULL}},
    {"client",
     "an application's cancel and status (docs/fate-protocol.md, Clients): "
     "inserts CANCELLED rows, never updates; reads whether a "
     "reconciliation is pending",
     {"SELECT, INSERT ON kdelay_fate", "SELECT ON kdelay_schema",
      "SELECT ON kdelay_reconcile", "SELECT ON kdelay_fired_run", NULL}},
    {"migrate",
     "kdelayctl db migrate and db version: creates and alters the tables",
     {"SELECT, INSERT, CREATE, ALTER, INDEX ON *", NULL}},
    {"gc",
     "kdelayctl db gc: deletes expired fate rows and runs",
     {"SELECT, DELETE ON kdelay_fate", "SELECT ON kdelay_schema",
      "SELECT, DELETE ON kdelay_unclaimed",
      "SELECT, DELETE ON kdelay_fired_run", NULL}},
};

const char *const kd_db_grant_roles[] = {"forwarder", "admin", "client",
                                         "migrate",   "gc",    NULL};

int kd_db_grants_write(FILE *out, const char *role, const char *db,
                       const char *account)
{
        const kd_db_role_t *r = NULL;
        for (size_t i = 0; i < sizeof(kd_db_roles) / sizeof(kd_db_roles[0]);
             i++)
                if (!strcmp(kd_db_roles[i].name, role))
                        r = &kd_db_roles[i];
        if (!r)
                return -1;
        fprintf(out, "-- kdelay role %s: %s\n", r->name, r->runs);
        if (strcmp(r->name, "migrate"))
                fprintf(out, "-- (the tables must exist: run after "
                             "`kdelayctl db migrate`)\n");
        for (size_t i = 0; r->privs[i]; i++) {
                const char *on = strstr(r->privs[i], " ON ");
                const char *table = on + 4;
                fprintf(out, "GRANT %.*s ON `%s`.", (int)(on - r->privs[i]),
                        r->privs[i], db);
                if (!strcmp(table, "*"))
                        fprintf(out, "*");
                else
                        fprintf(out, "`%s`", table);
                fprintf(out, " TO %s;\n", account);
        }
        return 0;
}

static int name_ok(const char *s, size_t n)
{
        if (n == 0)
                return 0;
        for (size_t i = 0; i < n; i++)
                if ((unsigned char)s[i] < 0x20 || s[i] == '\'' || s[i] == '"' ||
                    s[i] == '\\' || s[i] == '`' || s[i] == 0x7f)
                        return 0;
        return 1;
}

int kd_db_grants_account(const char *spec, char *buf, size_t size)
{
        const char *at = strrchr(spec, '@');
        size_t ulen = at ? (size_t)(at - spec) : strlen(spec);
        const char *host = at ? at + 1 : "%";
        if (!name_ok(spec, ulen) || !name_ok(host, strlen(host)))
                return -1;
        int n = snprintf(buf, size, "'%.*s'@'%s'", (int)ulen, spec, host);
        return n < 0 || (size_t)n >= size ? -1 : 0;
}
