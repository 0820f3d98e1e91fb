/* kdelayctl db: migrate the MySQL schema, show its version. */
#include <stdio.h>
#include <string.h>

#include <kdelay/kdelay.h>

#include "cli.h"
#include "ctl.h"
#include "kd_mysql.h"
#include "kd_schema.h"

static const char kd_db_help[] =
    "Usage: kdelayctl db migrate\n"
    "       kdelayctl db version\n"
    "\n"
    "migrate  applies every schema migration the database lacks, in order\n"
    "         (deploy/mysql/NNN_*.sql, built into kdelayctl), recording each\n"
    "         in table kdelay_schema. Safe to run again and concurrently.\n"
    "version  prints the database's schema version and this build's.\n"
    "\n"
    "The database comes from mysql.url (--mysql); it must exist.\n"
    "\n";

static void on_migration(const kd_migration_t *m, void *opaque)
{
        kd_cli_log(opaque, KDELAY_LOG_INFO,
                   "event=migration_apply version=%d name=%s", m->version,
                   m->name);
}

int kd_ctl_db(int argc, char **argv)
{
        kd_cli_t cli;
        int argi;
        char errstr[512];
        if (argc < 2 || argv[1][0] == '-') {
                kd_cli_init(&cli, "kdelayctl db");
                if (argc >= 2 &&
                    (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
                        fputs(kd_db_help, stdout);
                        fputs(KD_CLI_HELP, stdout);
                        return KD_EXIT_OK;
                }
                return kd_cli_usage_error(&cli,
                                          "expected 'migrate' or 'version'");
        }
        int migrate = !strcmp(argv[1], "migrate");
        kd_cli_init(&cli,
                    migrate ? "kdelayctl db migrate" : "kdelayctl db version");
        if (!migrate && strcmp(argv[1], "version"))
                return kd_cli_usage_error(&cli,
                                          "unknown subcommand \"%s\" (expected "
                                          "'migrate' or 'version')",
                                          argv[1]);
        int rc = kd_cli_parse(&cli, argc - 1, argv + 1, "", NULL, NULL, NULL,
                              kd_db_help, &argi);
        if (rc == KD_EXIT_OK && argi < argc - 1)
                rc = kd_cli_usage_error(&cli, "unexpected argument \"%s\"",
                                        argv[argi + 1]);
        if (rc != KD_EXIT_OK) {
                kd_cli_clear(&cli);
                return rc == KD_CLI_HELP_SHOWN ? KD_EXIT_OK : rc;
        }
        MYSQL *conn = NULL;
        kdelay_err_t err =
            kd_mysql_connect(cli.conf, &conn, errstr, sizeof(errstr));
        int from = 0, to = 0;
        if (!err && migrate)
                err = kd_schema_migrate(conn, on_migration, &cli, &from, &to,
                                        errstr, sizeof(errstr));
        else if (!err)
                err = kd_schema_version(conn, &to, errstr, sizeof(errstr));
        if (err) {
                fprintf(stderr, "%s: %s\n", cli.prog, errstr);
                rc = KD_EXIT_ERROR;
        } else if (migrate) {
                printf("schema version %d (was %d)\n", to, from);
        } else {
                printf("database %d\nthis-build %d\n", to, kd_schema_latest());
        }
        if (conn)
                mysql_close(conn);
        kd_cli_clear(&cli);
        return rc;
}
