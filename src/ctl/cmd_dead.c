/* SPDX-License-Identifier: Apache-2.0 */
/* kdelayctl dead list / replay: the dead-letter topic's records of a
 * window, with their reasons (kd_scan_dead); replaying them
 * (replay_run.c). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include <kdelay/kdelay.h>

#include "cli.h"
#include "ctl.h"
#include "ctl_json.h"
#include "ctl_scan.h"
#include "ctl_time.h"
#include "ctl_verbs.h"
#include "kd_conf.h"
#include "kd_util.h"
#include "kd_wire.h"
#include "replay_items.h"
#include "replay_run.h"

static const char kd_dead_help[] =
    "Usage: kdelayctl dead list [--reason R] [--since D] [--limit N]\n"
    "                           [--json] [--budget D]\n"
    "       kdelayctl dead replay [--reason R] [--id ID]... [--since D]\n"
    "                             [--at TIME | --now] [--dry-run] [--json]\n"
    "                             [--budget D]\n"
    "\n"
    "The records of the dead-letter topic (<topic_prefix>.dead) appended\n"
    "in the last D, oldest first per partition: when each was\n"
    "dead-lettered, its reason (the kdelay-dead-reason header), the task's\n"
    "id, target and due time when its headers hold them (\"-\" when not:\n"
    "a malformed record), and where it is in the dead-letter topic: a\n"
    "table DEAD_AT REASON ID TARGET FIRE_AT WHERE. Then a summary line:\n"
    "the count by reason.\n"
    "\n"
    "  --reason R           only dead letters with reason R (e.g.\n"
    "                       target-unavailable, target-forbidden, bad-id)\n"
    "  --since D            the window (default 24h)\n"
    "  --limit N            at most N lines (default 100; 0 = all); the\n"
    "                       summary counts every record of the window\n"
    "  --json               JSON lines: one object per dead letter, then\n"
    "                       {\"summary\": {...}}\n"
    "  --budget D           stop reading after D (default 60s); an\n"
    "                       incomplete read is said on stderr, exit 1\n"
    "\n"
    "replay schedules the matching dead letters of the window again (with\n"
    "their key, value and user headers, to their target) once the cause is\n"
    "fixed: only reasons a user can fix (target-unavailable,\n"
    "target-forbidden, tier-unavailable, too-large, target-refused); a\n"
    "malformed record or another reason is REFUSED with why. Each target\n"
    "is checked first (read once: its existence from metadata, its\n"
    "cleanup.policy and max.message.bytes with DescribeConfigs): a dead\n"
    "letter the target would refuse again is not replayed but REFUSED\n"
    "(WOULD_FAIL with --dry-run) with why: target missing, compacted\n"
    "topic needs a key (a keyless record), or too large for the target (N\n"
    "bytes > max.message.bytes M; N is the fired record's size at most:\n"
    "key, value, headers with kdelay-id, kdelay-fire-at and\n"
    "kdelay-replay-of, and the batch's overhead). What cannot be read\n"
    "(no Describe or DescribeConfigs on the target) is not checked, and\n"
    "the line says so. REPLAYED means scheduled again: the forwarder\n"
    "tries a replay for real even when it remembers its target refusing\n"
    "such a record (before the fix); what it still cannot deliver is\n"
    "dead-lettered again (kdelayctl status NEW_ID says DEAD). A replayed\n"
    "task gets the id <id>~replay-<partition>-<offset> (its dead letter's\n"
    "place, replacing a replay's own suffix: ids do not nest; a hash when\n"
    "too long) and the header kdelay-replay-of: <id>, so replaying\n"
    "the same dead letter again writes the same task, which fires once: a\n"
    "second run SKIPs it (\"replayed before\": its copy has a fate, or is\n"
    "still pending in a tier topic; the tier topics' pending records are\n"
    "read once per run, for at most 30 s). A task whose own fate is\n"
    "FIRED, FIRING or CANCELLED is SKIPPED. One line per dead letter: ID\n"
    "REPLAYED|SKIPPED|REFUSED|ERROR [NEW_ID] [WHY] (--dry-run:\n"
    "WOULD_REPLAY|WOULD_FAIL in place of REPLAYED and of a target's\n"
    "REFUSED); with --json an object with id, target, reason, partition,\n"
    "offset, result, new_id, why and the target check: target_check\n"
    "(ok, failed, incomplete), failure (target-missing, needs-key,\n"
    "too-large), target_exists, size_estimate, cleanup_policy and\n"
    "max_message_bytes or config_error.\n"
    "\n"
    "  --id ID              only this task (repeatable, at most 64)\n"
    "  --at TIME            due at TIME (default: now, --now)\n"
    "  --dry-run            say what would be replayed, schedule nothing\n"
    "  --since D            replay: the window (default 7d)\n"
    "\n"
    "Exit codes: 0, 1 error, incomplete, or (replay) something refused,\n"
    "failed or (--dry-run) would fail, 2 usage error.\n"
    "\n";

enum {
        OPT_JSON = 0x200,
        OPT_REASON,
        OPT_SINCE,
        OPT_LIMIT,
        OPT_BUDGET,
        OPT_ID,
        OPT_AT,
        OPT_NOW,
        OPT_DRY_RUN
};

#define KD_REPLAY_IDS_MAX 64

typedef struct dead_args {
        kd_cli_t *cli;
        const char *reason; /* borrowed from argv; NULL = every reason */
        int64_t since_ms;   /* the window */
        size_t limit;       /* 0 = no limit */
        int json;
        kd_scan_opts_t scan;
        /* Results: */
        size_t shown;
        kd_ctl_reasons_t counts;
        /* replay: */
        const char *ids[KD_REPLAY_IDS_MAX]; /* borrowed from argv */
        size_t id_cnt;
        int64_t at_ms; /* KDELAY_TIME_UNSET: now */
        int dry_run;
        kd_replay_items_t items;
        int oom;
} dead_args_t;

static int on_opt(int opt, const char *arg, void *ctx)
{
        dead_args_t *a = ctx;
        char *end;
        switch (opt) {
        case OPT_JSON:
                a->json = 1;
                return KD_EXIT_OK;
        case OPT_REASON:
                a->reason = arg;
                return KD_EXIT_OK;
        case OPT_SINCE:
                if (kdelay_duration_parse(arg, &a->since_ms) ||
                    a->since_ms <= 0)
                        return kd_cli_usage_error(
                            a->cli, "bad --since \"%s\": a duration (24h)",
                            arg);
                return KD_EXIT_OK;
        case OPT_LIMIT:
                errno = 0;
                unsigned long long n = strtoull(arg, &end, 10);
                if (errno || end == arg || *end || arg[0] == '-')
                        return kd_cli_usage_error(
                            a->cli, "bad --limit \"%s\": a count", arg);
                a->limit = (size_t)n;
                return KD_EXIT_OK;
        case OPT_BUDGET:
                if (kdelay_duration_parse(arg, &a->scan.budget_ms) ||
                    a->scan.budget_ms <= 0)
                        return kd_cli_usage_error(
                            a->cli, "bad --budget \"%s\": a duration (30s)",
                            arg);
                return KD_EXIT_OK;
        case OPT_ID:
                if (a->id_cnt == KD_REPLAY_IDS_MAX)
                        return kd_cli_usage_error(a->cli, "at most %d --id",
                                                  KD_REPLAY_IDS_MAX);
                a->ids[a->id_cnt++] = arg;
                return KD_EXIT_OK;
        case OPT_AT:
                if (kd_ctl_time_parse(arg, &a->at_ms))
                        return kd_cli_usage_error(
                            a->cli, "bad --at \"%s\": epoch ms or RFC 3339",
                            arg);
                return KD_EXIT_OK;
        case OPT_NOW:
                a->at_ms = KDELAY_TIME_UNSET;
                return KD_EXIT_OK;
        case OPT_DRY_RUN:
                a->dry_run = 1;
                return KD_EXIT_OK;
        default:
                return KD_EXIT_USAGE;
        }
}

/* A decoded task's id and target, NUL-terminated (they point into the
 * record's headers). */
typedef struct dead_task {
        char id[KDELAY_ID_MAX + 1];
        char target[256];
} dead_task_t;

static void task_copy(const kd_scan_rec_t *r, dead_task_t *t)
{
        snprintf(t->id, sizeof(t->id), "%.*s", (int)r->task.id_len, r->task.id);
        snprintf(t->target, sizeof(t->target), "%.*s", (int)r->task.target_len,
                 r->task.target);
}

static void print_json(const kd_scan_rec_t *r, const dead_task_t *t,
                       const char *reason, int64_t ts)
{
        cJSON *o = cJSON_CreateObject();
        cJSON_AddNumberToObject(o, "dead_at_ms", (double)ts);
        cJSON_AddStringToObject(o, "reason", reason);
        if (r->defect == KD_WIRE_OK) {
                cJSON_AddStringToObject(o, "id", t->id);
                cJSON_AddStringToObject(o, "target", t->target);
                cJSON_AddNumberToObject(o, "fire_at_ms",
                                        (double)r->task.fire_at_ms);
        } else {
                cJSON_AddNullToObject(o, "id");
                cJSON_AddNullToObject(o, "target");
                cJSON_AddNullToObject(o, "fire_at_ms");
        }
        cJSON_AddStringToObject(o, "topic", r->part->topic);
        cJSON_AddNumberToObject(o, "partition", r->part->partition);
        cJSON_AddNumberToObject(o, "offset", (double)r->offset);
        kd_ctl_json_print(o);
}

static int on_record(const kd_scan_rec_t *r, void *opaque)
{
        dead_args_t *a = opaque;
        char reason[40];
        kd_ctl_dead_reason(r, reason, sizeof(reason));
        if (a->reason && strcmp(a->reason, reason))
                return 0;
        kd_ctl_reasons_add(&a->counts, reason);
        if (a->limit && a->shown >= a->limit)
                return 0;
        a->shown++;
        int64_t ts = rd_kafka_message_timestamp(r->msg, NULL);
        dead_task_t t;
        task_copy(r, &t);
        if (a->json) {
                print_json(r, &t, reason, ts);
                return 0;
        }
        /* Ids and targets of a valid task are printable (UTF-8, no
         * control characters): shown as they are. */
        char at[40], due[40];
        int ok = r->defect == KD_WIRE_OK;
        if (a->shown == 1 && kd_cli_headers())
                printf("%-24s %-20s %-36s %-24s %-24s %s\n", "DEAD_AT",
                       "REASON", "ID", "TARGET", "FIRE_AT", "WHERE");
        printf("%-24s %-20s %-36s %-24s %-24s %s/%d/%lld\n",
               kd_ctl_time_format(ts, at, sizeof(at)), reason, ok ? t.id : "-",
               ok ? t.target : "-",
               ok ? kd_ctl_time_format(r->task.fire_at_ms, due, sizeof(due))
                  : "-",
               r->part->topic, (int)r->part->partition, (long long)r->offset);
        return 0;
}

/* replay's scan: the matching dead letters, copied. */
static int on_replay_record(const kd_scan_rec_t *r, void *opaque)
{
        dead_args_t *a = opaque;
        char reason[40];
        kd_ctl_dead_reason(r, reason, sizeof(reason));
        if (a->reason && strcmp(a->reason, reason))
                return 0;
        if (a->id_cnt) {
                int match = 0;
                for (size_t i = 0; !match && i < a->id_cnt; i++)
                        match = r->defect == KD_WIRE_OK &&
                                strlen(a->ids[i]) == r->task.id_len &&
                                !memcmp(a->ids[i], r->task.id, r->task.id_len);
                if (!match)
                        return 0;
        }
        if (kd_replay_items_add(&a->items, r, reason)) {
                a->oom = 1;
                return -1;
        }
        return 0;
}

static int run_replay(dead_args_t *a)
{
        char errstr[512];
        kd_scan_progress_t prog;
        kdelay_err_t err =
            kd_scan_dead(a->cli->conf, kd_now_ms() - a->since_ms, &a->scan,
                         on_replay_record, a, &prog, errstr, sizeof(errstr));
        if (!err && !prog.complete)
                err = kd_fail(KDELAY_ERR_TIMED_OUT, errstr, sizeof(errstr),
                              "the dead-letter topic was not read to its end "
                              "within --budget: nothing replayed");
        kdelay_client_t *client = NULL;
        int rc = KD_EXIT_OK;
        if (err) {
                fprintf(stderr, "%s: %s: %s\n", a->cli->prog,
                        kdelay_err_str(err), errstr);
                rc = kd_cli_exit_code(err);
        } else if ((rc = kd_cli_client(a->cli, &client)) == KD_EXIT_OK) {
                kd_replay_counts_t n;
                int64_t at =
                    a->at_ms == KDELAY_TIME_UNSET ? kd_now_ms() : a->at_ms;
                if (kd_replay_run(client, &a->items, at, a->dry_run, a->json,
                                  &n))
                        rc = KD_EXIT_ERROR;
                else
                        rc = n.errors || n.refused ? KD_EXIT_ERROR : KD_EXIT_OK;
                kd_cli_log(a->cli, KDELAY_LOG_INFO,
                           "event=dead_replayed matched=%zu replayed=%zu "
                           "skipped=%zu refused=%zu target_refused=%zu "
                           "errors=%zu dry_run=%d",
                           a->items.cnt, n.replayed, n.skipped, n.refused,
                           n.target_refused, n.errors, a->dry_run);
        }
        kdelay_client_destroy(client);
        kd_replay_items_clear(&a->items);
        return rc;
}

static void print_summary(const dead_args_t *a, int complete)
{
        char w[32];
        kdelay_duration_format(a->since_ms, w, sizeof(w));
        if (a->json) {
                cJSON *o = cJSON_CreateObject();
                cJSON *s = cJSON_AddObjectToObject(o, "summary");
                cJSON_AddStringToObject(s, "window", w);
                cJSON_AddNumberToObject(s, "total", (double)a->counts.total);
                cJSON_AddNumberToObject(s, "shown", (double)a->shown);
                cJSON_AddBoolToObject(s, "complete", complete);
                kd_ctl_reasons_json(&a->counts, s, "by_reason");
                kd_ctl_json_print(o);
                return;
        }
        printf("dead letters in the last %s: %zu", w, a->counts.total);
        kd_ctl_reasons_print(&a->counts);
        printf("%s\n", complete ? "" : " (incomplete)");
}

static int run(dead_args_t *a)
{
        char errstr[512];
        kd_scan_progress_t prog;
        kdelay_err_t err =
            kd_scan_dead(a->cli->conf, kd_now_ms() - a->since_ms, &a->scan,
                         on_record, a, &prog, errstr, sizeof(errstr));
        if (err) {
                fprintf(stderr, "%s: %s: %s\n", a->cli->prog,
                        kdelay_err_str(err), errstr);
                return kd_cli_exit_code(err);
        }
        print_summary(a, prog.complete);
        if (!prog.complete) {
                kd_cli_log(a->cli, KDELAY_LOG_WARNING,
                           "event=scan_incomplete budget_ms=%lld records=%llu "
                           "of_at_most=%llu",
                           (long long)a->scan.budget_ms,
                           (unsigned long long)prog.records,
                           (unsigned long long)prog.to_read);
                return KD_EXIT_ERROR;
        }
        return KD_EXIT_OK;
}

int kd_ctl_dead(int argc, char **argv)
{
        static const struct option opts[] = {
            {"json", no_argument, NULL, OPT_JSON},
            {"reason", required_argument, NULL, OPT_REASON},
            {"since", required_argument, NULL, OPT_SINCE},
            {"limit", required_argument, NULL, OPT_LIMIT},
            {"budget", required_argument, NULL, OPT_BUDGET},
            {NULL, 0, NULL, 0}};
        static const struct option replay_opts[] = {
            {"json", no_argument, NULL, OPT_JSON},
            {"reason", required_argument, NULL, OPT_REASON},
            {"since", required_argument, NULL, OPT_SINCE},
            {"budget", required_argument, NULL, OPT_BUDGET},
            {"id", required_argument, NULL, OPT_ID},
            {"at", required_argument, NULL, OPT_AT},
            {"now", no_argument, NULL, OPT_NOW},
            {"dry-run", no_argument, NULL, OPT_DRY_RUN},
            {NULL, 0, NULL, 0}};
        kd_cli_t cli;
        int rc, argi;
        const char *sub =
            kd_ctl_subverb(&cli, "dead", kd_dead_help, argc, argv, &rc);
        if (!sub)
                return rc;
        dead_args_t *a = calloc(1, sizeof(*a)); /* owned; large */
        if (!a) {
                fprintf(stderr, "%s: out of memory\n", cli.prog);
                kd_cli_clear(&cli);
                return KD_EXIT_ERROR;
        }
        int replay = !strcmp(sub, "replay");
        a->cli = &cli;
        a->since_ms = replay ? 7 * 86400000LL : 86400000LL;
        a->at_ms = KDELAY_TIME_UNSET;
        a->limit = 100;
        a->scan.budget_ms = KD_CTL_SCAN_BUDGET_MS;
        a->scan.progress = kd_ctl_scan_progress;
        a->scan.opaque = &cli;
        rc = kd_cli_parse(&cli, argc - 1, argv + 1, "",
                          replay ? replay_opts : opts, on_opt, a, kd_dead_help,
                          &argi);
        if (rc == KD_EXIT_OK && argi < argc - 1)
                rc = kd_cli_usage_error(&cli, "unexpected argument \"%s\"",
                                        argv[1 + argi]);
        if (rc == KD_EXIT_OK)
                rc = replay ? run_replay(a) : run(a);
        free(a);
        kd_cli_clear(&cli);
        return rc == KD_CLI_HELP_SHOWN ? KD_EXIT_OK : rc;
}
