/* SPDX-License-Identifier: Apache-2.0 */
/* kdelayctl db, the verb's front: its help, its options, and the sub-verb
 * run: migrate and version (db_schema), migrate --print
 * (db_migrate_print), gc (db_gc), grants (db_grants_print). */
#include <stdlib.h>
#include <string.h>

#include <kdelay/kdelay.h>

#include "cli.h"
#include "ctl.h"
#include "ctl_verbs.h"
#include "db_gc.h"
#include "db_grants_print.h"
#include "db_migrate_print.h"
#include "db_schema.h"
#include "kd_log.h"
#include "kd_schema.h"
#include "kd_schema_migrate.h"

static const char kd_db_help[] =
    "Usage: kdelayctl db migrate [--enable STEP [--force]] [--json] "
    "[--print]\n"
    "       kdelayctl db version [--json]\n"
    "       kdelayctl db gc [--older-than DURATION] [--batch N] [--pause R]\n"
    "                       [--json]\n"
    "       kdelayctl db grants --role ROLE [--user USER[@HOST]] [--json]\n"
    "\n"
    "migrate  applies every schema migration the database lacks, in order\n"
    "         (deploy/mysql/NNN_*.sql, built into kdelayctl), recording each\n"
    "         in table kdelay_schema. Safe to run again and concurrently.\n"
    "         It stops before an opt-in step (exit 0, the command to take\n"
    "         it printed) unless the database had no schema at all (a\n"
    "         fresh install takes every step).\n"
    "         --enable STEP: takes the opt-in step STEP too. lean-fate\n"
    "         (version 11: forwarders record deliveries as runs) is for\n"
    "         once every forwarder and client runs 0.4.0 or newer\n"
    "         (docs/upgrading.md): refused (exit 2) while a member of the\n"
    "         forwarder group does not say it runs 0.4.0 or newer in its\n"
    "         client.id (kdelay-forwarder/VERSION/INSTANCE); exit 1 when\n"
    "         the group cannot be read. --force: takes it without asking\n"
    "         the group (clients are never asked: see to them first).\n"
    "         --print: prints every statement of every migration built in,\n"
    "         each after its guard, as it would send them; no connection.\n"
    "version  prints the database's schema version and this build's, and\n"
    "         the opt-in step it waits for, if any.\n"
    "gc       deletes fate rows decided more than DURATION ago of tasks\n"
    "         due more than DURATION ago (default mysql.fate_retention,\n"
    "         30d), in batches of N rows (default 1000) so no statement\n"
    "         holds locks for long. Rows of cancelled tasks whose due time\n"
    "         is unknown (no forwarder has seen them yet) are kept until 10\n"
    "         years past the cancel. DURATION shorter than the longest tier\n"
    "         topic's retention (2 x the largest tier + topics.\n"
    "         retention_margin: 21d by default) is refused: a record still\n"
    "         in Kafka, re-read without its row, would fire again.\n"
    "         After each batch gc pauses R times as long as the batch\n"
    "         took (--pause, default 1: it works at most half the time),\n"
    "         so that the forwarders' claims keep the server's CPU and\n"
    "         disk; 0 runs flat out. Progress on stderr every 5 s\n"
    "         (event=gc_progress: rows deleted, rows/s), then one\n"
    "         event=gc_done line.\n"
    "grants   prints the GRANT statements of the least privileges ROLE needs\n"
    "         on the database of mysql.url (default kdelay), for USER "
    "(default\n"
    "         kdelay_ROLE; HOST default %). ROLE is forwarder (the\n"
    "         forwarders), admin (schedule, cancel, status, tasks,\n"
    "         reschedule, audit, stats), client (an application's cancel\n"
    "         and status, docs/fate-protocol.md \"Clients\"), migrate (db\n"
    "         migrate, db version) or gc (db gc). Needs no connection; run\n"
    "         the output as a user\n"
    "         that may grant, after db migrate for all but migrate.\n"
    "\n"
    "--json   one JSON object on stdout: migrate {\"from\", \"to\"}, version\n"
    "         {\"database\", \"this_build\"} (both with \"waiting\":\n"
    "         {\"version\", \"step\"} while an opt-in step waits), gc\n"
    "         {\"deleted\", \"batches\"},\n"
    "         grants {\"role\", \"account\", \"statements\": [...]}.\n"
    "\n"
    "The database comes from mysql.url (--mysql); it must exist. Exit\n"
    "codes: 0 done, 1 failed, 2 bad command line or refused.\n"
    "\n";

enum {
        OPT_OLDER = 0x200,
        OPT_BATCH,
        OPT_PAUSE,
        OPT_ROLE,
        OPT_USER,
        OPT_JSON,
        OPT_PRINT,
        OPT_ENABLE,
        OPT_FORCE
};

/* The options of every sub-verb (each takes its own, kd_ctl_db). */
typedef struct db_args {
        kd_cli_t *cli;
        kd_db_gc_opts_t gc; /* gc */
        const char *role;   /* grants */
        const char *user;   /* grants; NULL = kdelay_<role> */
        int json;
        int print;          /* migrate --print */
        const char *enable; /* migrate --enable: an opt-in step's name */
        int force;          /* migrate --force: no group check */
} db_args_t;

static int db_on_opt(int opt, const char *arg, void *ctx)
{
        db_args_t *a = ctx;
        if (opt == OPT_JSON) {
                a->json = 1;
                return KD_EXIT_OK;
        }
        if (opt == OPT_PRINT) {
                a->print = 1;
                return KD_EXIT_OK;
        }
        if (opt == OPT_FORCE) {
                a->force = 1;
                return KD_EXIT_OK;
        }
        if (opt == OPT_ENABLE) {
                char q[KD_LOG_QUOTED_MAX(64)];
                if (!kd_schema_opt_in_known(arg))
                        return kd_cli_usage_error(
                            a->cli,
                            "--enable %s: no opt-in step of that name "
                            "(this build has: lean-fate)",
                            kd_log_quote(arg, q, sizeof(q)));
                a->enable = arg;
                return KD_EXIT_OK;
        }
        if (opt == OPT_ROLE) {
                a->role = arg;
                return KD_EXIT_OK;
        }
        if (opt == OPT_USER) {
                a->user = arg;
                return KD_EXIT_OK;
        }
        if (opt == OPT_OLDER) {
                a->gc.older = arg;
                return KD_EXIT_OK;
        }
        if (opt == OPT_PAUSE) {
                char *end;
                double v = strtod(arg, &end);
                if (end == arg || *end || !(v >= 0 && v <= 100))
                        return kd_cli_usage_error(
                            a->cli, "--pause: \"%s\" is not in 0..100", arg);
                a->gc.pause = v;
                return KD_EXIT_OK;
        }
        if (opt == OPT_BATCH) {
                char *end;
                long v = strtol(arg, &end, 10);
                if (end == arg || *end || v < 1 || v > 100000)
                        return kd_cli_usage_error(
                            a->cli, "--batch: \"%s\" is not in 1..100000", arg);
                a->gc.batch = (int)v;
                return KD_EXIT_OK;
        }
        return KD_EXIT_USAGE;
}

int kd_ctl_db(int argc, char **argv)
{
        kd_cli_t cli;
        int argi;
        int rc;
        const char *sub =
            kd_ctl_subverb(&cli, "db", kd_db_help, argc, argv, &rc);
        if (!sub)
                return rc;
        int migrate = !strcmp(sub, "migrate");
        int gc = !strcmp(sub, "gc");
        int grants = !strcmp(sub, "grants");
        static const struct option gc_opts[] = {
            {"older-than", required_argument, NULL, OPT_OLDER},
            {"batch", required_argument, NULL, OPT_BATCH},
            {"pause", required_argument, NULL, OPT_PAUSE},
            {"json", no_argument, NULL, OPT_JSON},
            {NULL, 0, NULL, 0}};
        static const struct option grants_opts[] = {
            {"role", required_argument, NULL, OPT_ROLE},
            {"user", required_argument, NULL, OPT_USER},
            {"json", no_argument, NULL, OPT_JSON},
            {NULL, 0, NULL, 0}};
        static const struct option json_opts[] = {
            {"json", no_argument, NULL, OPT_JSON}, {NULL, 0, NULL, 0}};
        static const struct option migrate_opts[] = {
            {"json", no_argument, NULL, OPT_JSON},
            {"print", no_argument, NULL, OPT_PRINT},
            {"enable", required_argument, NULL, OPT_ENABLE},
            {"force", no_argument, NULL, OPT_FORCE},
            {NULL, 0, NULL, 0}};
        db_args_t ga = {.cli = &cli, .gc = {.batch = 1000, .pause = 1}};
        rc = kd_cli_parse(&cli, argc - 1, argv + 1, "",
                          gc        ? gc_opts
                          : grants  ? grants_opts
                          : migrate ? migrate_opts
                                    : json_opts,
                          db_on_opt, &ga, kd_db_help, &argi);
        if (rc == KD_EXIT_OK && argi < argc - 1)
                rc = kd_cli_usage_error(&cli, "unexpected argument \"%s\"",
                                        argv[argi + 1]);
        if (rc == KD_EXIT_OK && ga.force && !ga.enable)
                rc = kd_cli_usage_error(&cli, "--force goes with --enable");
        if (rc != KD_EXIT_OK) {
                kd_cli_clear(&cli);
                return rc == KD_CLI_HELP_SHOWN ? KD_EXIT_OK : rc;
        }
        if (gc)
                rc = kd_db_gc(&cli, &ga.gc, ga.json);
        else if (grants)
                rc = kd_db_grants_print(&cli, ga.role, ga.user, ga.json);
        else if (ga.print)
                rc = kd_db_migrate_print(&cli);
        else
                rc = kd_db_schema(&cli, migrate, ga.enable, ga.force, ga.json);
        kd_cli_clear(&cli);
        return rc;
}
