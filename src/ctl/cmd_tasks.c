/* SPDX-License-Identifier: Apache-2.0 */
/* kdelayctl tasks find / list: pending tasks, read from the tier topics
 * (kd_tasks.h). */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <kdelay/kdelay.h>

#include "cli.h"
#include "ctl.h"
#include "ctl_scan.h"
#include "ctl_time.h"
#include "ctl_verbs.h"
#include "kd_log.h"
#include "kd_tasks.h"

static const char kd_tasks_help[] =
    "Usage: kdelayctl tasks find [--json] [--budget D] ID\n"
    "       kdelayctl tasks list [--target T] [--due-after TIME]\n"
    "                            [--due-before TIME] [--limit N] [--json]\n"
    "                            [--budget D]\n"
    "\n"
    "Pending tasks, read from the tier topics: every record the forwarder\n"
    "group has not handled yet, from its committed offsets to the end of\n"
    "each partition (as a consumer of the group that never joins it and\n"
    "commits nothing), without those whose fate is decided (FIRED,\n"
    "CANCELLED). A task is PENDING, or FIRING when a forwarder has claimed\n"
    "it and is delivering it. A task in two tiers while it hops is shown\n"
    "once, where it goes. A scan reads the whole pending backlog: it is an\n"
    "admin tool, bounded by --budget, with a progress line on stderr each\n"
    "second.\n"
    "\n"
    "  find ID              the task's tier topic, partition, offset, due\n"
    "                       time and target. Exit 4 when no pending task\n"
    "                       has that id (fired, cancelled or unknown)\n"
    "  list                 pending tasks by due time, a table: ID STATE\n"
    "                       FIRE_AT TARGET TIER_TOPIC PARTITION OFFSET\n"
    "  --target T           only tasks for topic T\n"
    "  --due-after TIME     only tasks due at or after TIME\n"
    "  --due-before TIME    only tasks due before TIME (epoch ms or RFC "
    "3339)\n"
    "  --limit N            at most N tasks (default 100; 0 = all)\n"
    "  --json               find: one JSON document; list: JSON lines,\n"
    "                       one object per task\n"
    "  --budget D           stop scanning after D (default 60s); an\n"
    "                       incomplete scan is said on stderr, exit 1\n"
    "\n";

enum {
        OPT_JSON = 0x200,
        OPT_TARGET,
        OPT_AFTER,
        OPT_BEFORE,
        OPT_LIMIT,
        OPT_BUDGET
};

typedef struct tasks_args {
        kd_cli_t *cli;
        kd_tasks_query_t q;
        int json;
} tasks_args_t;

static int on_opt(int opt, const char *arg, void *ctx)
{
        tasks_args_t *a = ctx;
        char *end;
        switch (opt) {
        case OPT_JSON:
                a->json = 1;
                return KD_EXIT_OK;
        case OPT_TARGET:
                a->q.target = arg;
                return KD_EXIT_OK;
        case OPT_AFTER:
        case OPT_BEFORE:
                if (kd_ctl_time_parse(arg, opt == OPT_AFTER
                                               ? &a->q.due_after_ms
                                               : &a->q.due_before_ms))
                        return kd_cli_usage_error(
                            a->cli, "bad time \"%s\": epoch ms or RFC 3339",
                            arg);
                return KD_EXIT_OK;
        case OPT_LIMIT:
                errno = 0;
                unsigned long long n = strtoull(arg, &end, 10);
                if (errno || end == arg || *end || arg[0] == '-')
                        return kd_cli_usage_error(
                            a->cli, "bad --limit \"%s\": a count", arg);
                a->q.limit = (size_t)n;
                return KD_EXIT_OK;
        case OPT_BUDGET:
                if (kdelay_duration_parse(arg, &a->q.scan.budget_ms) ||
                    a->q.scan.budget_ms <= 0)
                        return kd_cli_usage_error(
                            a->cli, "bad --budget \"%s\": a duration (30s)",
                            arg);
                return KD_EXIT_OK;
        default:
                return KD_EXIT_USAGE;
        }
}

/* What an incomplete scan means for the exit code: 1, said on stderr. */
static int incomplete(const kd_cli_t *cli, const kd_tasks_found_t *f,
                      int64_t budget_ms)
{
        kd_cli_log(cli, KDELAY_LOG_WARNING,
                   "event=scan_incomplete budget_ms=%lld records=%llu "
                   "of_at_most=%llu partitions_done=%zu/%zu",
                   (long long)budget_ms, (unsigned long long)f->prog.records,
                   (unsigned long long)f->prog.to_read, f->prog.parts_done,
                   f->prog.parts);
        return KD_EXIT_ERROR;
}

static void print_row(const kdelay_pending_t *p)
{
        char t[40];
        printf("%-36s %-7s %-24s %-24s %-28s %9d %lld\n", p->id,
               kd_ctl_pending_state(p),
               kd_ctl_time_format(p->fire_at_ms, t, sizeof(t)), p->target,
               p->tier_topic, (int)p->partition, (long long)p->offset);
}

static int run(tasks_args_t *a, kdelay_client_t *client, int find)
{
        char errstr[512];
        kd_tasks_found_t f;
        kdelay_err_t err =
            kd_tasks_find(client, &a->q, &f, errstr, sizeof(errstr));
        if (err) {
                fprintf(stderr, "%s: %s: %s\n", a->cli->prog,
                        kdelay_err_str(err), errstr);
                return kd_cli_exit_code(err);
        }
        int rc = KD_EXIT_OK;
        if (!a->json && !find && f.cnt && kd_cli_headers())
                printf("%-36s %-7s %-24s %-24s %-28s %9s %s\n", "ID", "STATE",
                       "FIRE_AT", "TARGET", "TIER_TOPIC", "PARTITION",
                       "OFFSET");
        for (size_t i = 0; i < f.cnt; i++) {
                if (a->json)
                        kd_ctl_pending_json(&f.items[i].p);
                else if (find)
                        kd_ctl_pending_text(&f.items[i].p);
                else
                        print_row(&f.items[i].p);
        }
        int limited = a->q.limit && f.cnt >= a->q.limit;
        if (find && f.cnt == 0 && (f.prog.complete || f.matched)) {
                char q[KD_LOG_QUOTED_MAX(KDELAY_ID_MAX)];
                fprintf(stderr,
                        "%s: no pending task has id %s: %s (see kdelayctl "
                        "status)\n",
                        a->cli->prog, kd_log_quote(a->q.id, q, sizeof(q)),
                        f.matched ? "its fate is decided"
                                  : "it fired, was cancelled or never "
                                    "existed");
                rc = KD_EXIT_NOT_FOUND;
        } else if (!f.prog.complete && !(find && f.cnt) && !limited) {
                rc = incomplete(a->cli, &f, a->q.scan.budget_ms);
        } else if (!find) {
                kd_cli_log(a->cli, KDELAY_LOG_INFO,
                           "event=tasks_listed tasks=%zu records=%llu "
                           "limit_reached=%d elapsed_ms=%lld",
                           f.cnt, (unsigned long long)f.prog.records, limited,
                           (long long)f.prog.elapsed_ms);
        }
        kd_tasks_found_clear(&f);
        return rc;
}

int kd_ctl_tasks(int argc, char **argv)
{
        static const struct option find_opts[] = {
            {"json", no_argument, NULL, OPT_JSON},
            {"budget", required_argument, NULL, OPT_BUDGET},
            {NULL, 0, NULL, 0}};
        static const struct option list_opts[] = {
            {"json", no_argument, NULL, OPT_JSON},
            {"budget", required_argument, NULL, OPT_BUDGET},
            {"target", required_argument, NULL, OPT_TARGET},
            {"due-after", required_argument, NULL, OPT_AFTER},
            {"due-before", required_argument, NULL, OPT_BEFORE},
            {"limit", required_argument, NULL, OPT_LIMIT},
            {NULL, 0, NULL, 0}};
        kd_cli_t cli;
        int rc, argi;
        const char *sub =
            kd_ctl_subverb(&cli, "tasks", kd_tasks_help, argc, argv, &rc);
        if (!sub)
                return rc;
        int find = !strcmp(sub, "find");
        tasks_args_t a = {.cli = &cli};
        kd_tasks_query_init(&a.q);
        a.q.limit = find ? 0 : 100;
        a.q.scan.budget_ms = KD_CTL_SCAN_BUDGET_MS;
        a.q.scan.progress = kd_ctl_scan_progress;
        a.q.scan.opaque = &cli;
        rc = kd_cli_parse(&cli, argc - 1, argv + 1, "",
                          find ? find_opts : list_opts, on_opt, &a,
                          kd_tasks_help, &argi);
        if (rc == KD_EXIT_OK && find && argi >= argc - 1)
                rc = kd_cli_usage_error(&cli, "a task ID is required");
        if (rc == KD_EXIT_OK && argi + (find ? 1 : 0) < argc - 1)
                rc = kd_cli_usage_error(&cli, "unexpected argument \"%s\"",
                                        argv[1 + argi + (find ? 1 : 0)]);
        if (rc == KD_EXIT_OK && find)
                a.q.id = argv[1 + argi];
        kdelay_client_t *client = NULL;
        if (rc == KD_EXIT_OK &&
            (rc = kd_cli_client(&cli, &client)) == KD_EXIT_OK)
                rc = run(&a, client, find);
        kdelay_client_destroy(client);
        kd_cli_clear(&cli);
        return rc == KD_CLI_HELP_SHOWN ? KD_EXIT_OK : rc;
}
