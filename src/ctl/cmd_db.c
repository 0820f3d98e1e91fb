/* SPDX-License-Identifier: Apache-2.0 */
/* kdelayctl db: migrate the MySQL schema, show its version. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <kdelay/kdelay.h>

#include "cli.h"
#include "ctl.h"
#include "ctl_json.h"
#include "ctl_verbs.h"
#include "db_grants.h"
#include "kd_conf.h"
#include "kd_fate.h"
#include "kd_log.h"
#include "kd_mysql.h"
#include "kd_oldfwd.h"
#include "kd_schema.h"
#include "kd_schema_steps.h"
#include "kd_util.h"

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

typedef struct gc_args {
        kd_cli_t *cli;
        const char *older;
        int batch;
        double pause;     /* gc: pause per batch, times the batch's time */
        const char *role; /* grants */
        const char *user; /* grants; NULL = kdelay_<role> */
        int json;
        int print;          /* migrate --print */
        const char *enable; /* migrate --enable: an opt-in step's name */
        int force;          /* migrate --force: no group check */
} gc_args_t;

static int gc_on_opt(int opt, const char *arg, void *ctx)
{
        gc_args_t *a = ctx;
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
                a->older = arg;
                return KD_EXIT_OK;
        }
        if (opt == OPT_PAUSE) {
                char *end;
                double v = strtod(arg, &end);
                if (end == arg || *end || !(v >= 0 && v <= 100))
                        return kd_cli_usage_error(
                            a->cli, "--pause: \"%s\" is not in 0..100", arg);
                a->pause = v;
                return KD_EXIT_OK;
        }
        if (opt == OPT_BATCH) {
                char *end;
                long v = strtol(arg, &end, 10);
                if (end == arg || *end || v < 1 || v > 100000)
                        return kd_cli_usage_error(
                            a->cli, "--batch: \"%s\" is not in 1..100000", arg);
                a->batch = (int)v;
                return KD_EXIT_OK;
        }
        return KD_EXIT_USAGE;
}

#define GC_PROGRESS_MS 5000
/* Runs are kept this much longer than the rows they cover (clocks). */
#define KD_GC_RUN_SLACK_MS (3600LL * 1000)

/* One progress line: rows deleted from table so far (the rate counts
 * from t0_ms). */
static void gc_progress(kd_cli_t *cli, const char *table, uint64_t deleted,
                        int batches, int64_t t0_ms)
{
        int64_t ms = kd_mono_ms() - t0_ms;
        kd_cli_log(cli, KDELAY_LOG_INFO,
                   "event=gc_progress table=%s deleted=%llu batches=%d "
                   "seconds=%.1f rows_per_s=%.0f",
                   table, (unsigned long long)deleted, batches, ms / 1000.0,
                   ms > 0 ? (double)deleted * 1000.0 / (double)ms : 0.0);
}

/* Before a batch: pauses --pause times as long as the previous batch
 * took (*batch_t0 its start, -1 before the first), then marks this one's
 * start. */
static void gc_pause(const gc_args_t *a, int64_t *batch_t0)
{
        if (*batch_t0 >= 0 && a->pause > 0) {
                kd_sleep_ms(
                    (int64_t)((double)(kd_mono_ms() - *batch_t0) * a->pause));
        }
        *batch_t0 = kd_mono_ms();
}

/* Deletes expired rows batch by batch, logging progress. */
static int run_gc(kd_cli_t *cli, const gc_args_t *a)
{
        char errstr[512];
        int64_t keep = cli->conf->fate_retention_ms;
        if (a->older && kdelay_duration_parse(a->older, &keep))
                return kd_cli_usage_error(cli,
                                          "--older-than \"%s\" is not a "
                                          "duration (e.g. 30d)",
                                          a->older);
        int64_t longest = 0;
        for (size_t i = 0; i < cli->conf->tiers.cnt; i++)
                if (kd_conf_tier_retention_ms(cli->conf, i) > longest)
                        longest = kd_conf_tier_retention_ms(cli->conf, i);
        if (keep < longest) {
                char k[32], l[32];
                return kd_cli_usage_error(
                    cli,
                    "a retention of %s is shorter than the longest tier "
                    "topic's (%s): a record still in Kafka, re-read after "
                    "its row is gone, would fire again",
                    kdelay_duration_format(keep, k, sizeof(k)),
                    kdelay_duration_format(longest, l, sizeof(l)));
        }
        kd_fate_store_t *st = NULL;
        if (kd_fate_store_new(&st, cli->conf))
                return KD_EXIT_ERROR;
        int64_t now = kd_now_ms(), t0 = kd_mono_ms(), shown = t0, batch_t0 = -1;
        uint64_t total = 0, n = 0;
        int batches = 0;
        kdelay_err_t err;
        do {
                gc_pause(a, &batch_t0);
                err =
                    kd_fate_gc(st, now - keep, now - KDELAY_MAX_DELAY_MS - keep,
                               a->batch, &n, errstr, sizeof(errstr));
                if (err)
                        break;
                total += n;
                batches++;
                /* Progress every few seconds: a gc of millions of rows
                 * runs for minutes, in thousands of batches. */
                if (kd_mono_ms() - shown >= GC_PROGRESS_MS) {
                        shown = kd_mono_ms();
                        gc_progress(cli, "kdelay_fate", total, batches, t0);
                }
        } while (n == (uint64_t)a->batch);
        /* The records of fires without a claim (kdelay_unclaimed) go with
         * the same retention, counted from when they were applied. */
        uint64_t unclaimed = 0;
        int ubatches = 0;
        int64_t ut0 = kd_mono_ms(); /* its rate counts from here */
        while (!err) {
                gc_pause(a, &batch_t0);
                err = kd_fate_gc_unclaimed(st, now - keep, a->batch, &n, errstr,
                                           sizeof(errstr));
                if (err || n == 0)
                        break;
                unclaimed += n;
                ubatches++;
                if (kd_mono_ms() - shown >= GC_PROGRESS_MS) {
                        shown = kd_mono_ms();
                        gc_progress(cli, "kdelay_unclaimed", unclaimed,
                                    ubatches, ut0);
                }
                if (n < (uint64_t)a->batch)
                        break;
        }
        /* Then the runs of delivered claims (kdelay_fired_run) recorded
         * an hour before the rows' horizon: a row a run covers was claimed
         * and due before the run was recorded, so it went above. The hour
         * is for clocks: a run is stamped by its forwarder's own clock,
         * a row's fire-at by the broker's (review: a forwarder running
         * behind would leave a row whose run went first, FIRING again). */
        uint64_t runs = 0;
        int rbatches = 0;
        int64_t rt0 = kd_mono_ms();
        while (!err) {
                gc_pause(a, &batch_t0);
                err = kd_fate_gc_runs(st, now - keep - KD_GC_RUN_SLACK_MS,
                                      a->batch, &n, errstr, sizeof(errstr));
                if (err || n == 0)
                        break;
                runs += n;
                rbatches++;
                if (kd_mono_ms() - shown >= GC_PROGRESS_MS) {
                        shown = kd_mono_ms();
                        gc_progress(cli, "kdelay_fired_run", runs, rbatches,
                                    rt0);
                }
                if (n < (uint64_t)a->batch)
                        break;
        }
        kd_fate_store_destroy(st);
        if (!err)
                kd_cli_log(cli, KDELAY_LOG_INFO,
                           "event=gc_done deleted=%llu unclaimed_deleted=%llu "
                           "runs_deleted=%llu batches=%d seconds=%.1f",
                           (unsigned long long)total,
                           (unsigned long long)unclaimed,
                           (unsigned long long)runs, batches,
                           (kd_mono_ms() - t0) / 1000.0);
        if (err) {
                fprintf(stderr, "%s: %s (deleted %llu rows before)\n",
                        cli->prog, errstr, (unsigned long long)total);
                return kd_cli_exit_code(err);
        }
        if (a->json) {
                cJSON *o = cJSON_CreateObject();
                cJSON_AddNumberToObject(o, "deleted", (double)total);
                cJSON_AddNumberToObject(o, "batches", batches);
                cJSON_AddNumberToObject(o, "unclaimed_deleted",
                                        (double)unclaimed);
                cJSON_AddNumberToObject(o, "runs_deleted", (double)runs);
                kd_ctl_json_print(o);
        } else {
                printf("deleted %llu rows in %d batches\n",
                       (unsigned long long)total, batches);
                if (unclaimed)
                        printf("deleted %llu records of fires without a "
                               "claim\n",
                               (unsigned long long)unclaimed);
                if (runs)
                        printf("deleted %llu runs of delivered claims\n",
                               (unsigned long long)runs);
        }
        return KD_EXIT_OK;
}

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

/* db grants: the statements, from the configuration alone. */
static int run_grants(kd_cli_t *cli, const gc_args_t *a)
{
        char account[300], user[128], q[300];
        if (!a->role)
                return kd_cli_usage_error(cli, "--role is required (forwarder, "
                                               "admin, client, migrate or gc)");
        int known = 0;
        for (size_t i = 0; kd_db_grant_roles[i]; i++)
                known |= !strcmp(kd_db_grant_roles[i], a->role);
        if (!known)
                return kd_cli_usage_error(
                    cli,
                    "--role %s is not forwarder, admin, client, migrate or gc",
                    kd_log_quote(a->role, q, sizeof(q)));
        snprintf(user, sizeof(user), "kdelay_%s", a->role);
        if (kd_db_grants_account(a->user ? a->user : user, account,
                                 sizeof(account)))
                return kd_cli_usage_error(
                    cli,
                    "--user %s: want USER or USER@HOST without quotes, "
                    "backslashes, backticks or control characters",
                    kd_log_quote(a->user, q, sizeof(q)));
        /* mysql.url, parsed when set (zero when unset). */
        const kd_mysql_params_t *p = &cli->conf->mysql_params;
        const char *db = p->db ? p->db : "kdelay";
        int rc = KD_EXIT_OK;
        if (strpbrk(db, "`\n"))
                rc = kd_cli_usage_error(cli,
                                        "the database name holds a backtick "
                                        "or a newline");
        else if (!a->json)
                kd_db_grants_write(stdout, a->role, db, account);
        else
                rc = grants_json(a->role, db, account);
        return rc;
}

/* migrate --print: every statement of every migration built in, as the
 * migrator sends them (its own split), each after its guard; no
 * connection. tools/sqlcheck parses this output. */
static int print_migrations(kd_cli_t *cli)
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

/* --enable step without --force: KD_EXIT_OK to go on, else the exit code
 * after saying why: KD_EXIT_USAGE while the forwarder group has a member
 * that does not say it runs the step's release floor or newer,
 * KD_EXIT_ERROR when the group cannot be read. Nothing is asked of a
 * database with no schema (fresh: nothing old shares it) or one that has
 * the step already. */
static int enable_check(kd_cli_t *cli, MYSQL *conn, const char *step)
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
        gc_args_t ga = {.cli = &cli, .batch = 1000, .pause = 1};
        rc = kd_cli_parse(&cli, argc - 1, argv + 1, "",
                          gc        ? gc_opts
                          : grants  ? grants_opts
                          : migrate ? migrate_opts
                                    : json_opts,
                          gc_on_opt, &ga, kd_db_help, &argi);
        if (rc == KD_EXIT_OK && argi < argc - 1)
                rc = kd_cli_usage_error(&cli, "unexpected argument \"%s\"",
                                        argv[argi + 1]);
        if (rc == KD_EXIT_OK && ga.force && !ga.enable)
                rc = kd_cli_usage_error(&cli, "--force goes with --enable");
        if (rc != KD_EXIT_OK) {
                kd_cli_clear(&cli);
                return rc == KD_CLI_HELP_SHOWN ? KD_EXIT_OK : rc;
        }
        if (gc || grants || ga.print) {
                rc = gc       ? run_gc(&cli, &ga)
                     : grants ? run_grants(&cli, &ga)
                              : print_migrations(&cli);
                kd_cli_clear(&cli);
                return rc;
        }
        MYSQL *conn = NULL;
        kdelay_err_t err =
            kd_mysql_connect(cli.conf, &conn, errstr, sizeof(errstr));
        int from = 0, to = 0;
        if (!err && migrate && ga.enable && !ga.force)
                rc = enable_check(&cli, conn, ga.enable);
        /* rc: refused, or the check failed (it said why) */
        if (!err && rc == KD_EXIT_OK && migrate)
                err = kd_schema_migrate_opt(conn, on_migration, &cli, ga.enable,
                                            &from, &to, errstr, sizeof(errstr));
        else if (!err && rc == KD_EXIT_OK)
                err = kd_schema_version(conn, &to, errstr, sizeof(errstr));
        char step[KD_SCHEMA_OPT_IN_MAX + 1] = "";
        const kd_migration_t *wait =
            !err && to ? kd_schema_waiting(to, step, sizeof(step)) : NULL;
        if (rc == KD_EXIT_OK && err) {
                fprintf(stderr, "%s: %s\n", cli.prog, errstr);
                rc = KD_EXIT_ERROR;
        } else if (rc == KD_EXIT_OK && ga.json) {
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
        kd_cli_clear(&cli);
        return rc;
}
