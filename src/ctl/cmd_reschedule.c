/* SPDX-License-Identifier: Apache-2.0 */
/* kdelayctl reschedule: move a pending task to another time
 * (kdelay_reschedule). */
#include <stdio.h>
#include <string.h>

#include <kdelay/kdelay.h>

#include "cli.h"
#include "ctl.h"
#include "ctl_json.h"
#include "ctl_scan.h"
#include "ctl_time.h"
#include "kd_util.h"

static const char kd_reschedule_help[] =
    "Usage: kdelayctl reschedule (--at TIME | --delay D) [--new-id ID]\n"
    "                            [--budget D] [--json] ID\n"
    "\n"
    "Moves pending task ID to another time: finds its record in the tier\n"
    "topics (as `tasks find`), cancels ID, and schedules a new task with\n"
    "the same target, key, value and user headers, carrying the header\n"
    "kdelay-rescheduled-from: ID. Prints the new task's id.\n"
    "\n"
    "  --at TIME            due at TIME (epoch ms or RFC 3339)\n"
    "  --delay D            due D from now (the time is fixed when the\n"
    "                       command starts)\n"
    "  --new-id ID          the new task's id (default: a new ULID). Given\n"
    "                       with a task that is CANCELLED already and still\n"
    "                       pending, it finishes an earlier reschedule\n"
    "                       that failed after its cancel\n"
    "  --budget D           bound of the scan (default 60s)\n"
    "  --json               one JSON document: {\"id\", \"new_id\",\n"
    "                       \"fire_at_ms\"}\n"
    "\n"
    "Exit codes: 0 rescheduled; 3 too late (ID fired or is firing first;\n"
    "nothing scheduled); 4 no pending task has that id; 1 error — when it\n"
    "came after the cancel, stderr says so and gives the command that\n"
    "finishes the reschedule (nothing is lost: the record is still in its\n"
    "tier topic until it comes due).\n"
    "\n";

enum { OPT_AT = 0x200, OPT_DELAY, OPT_NEW_ID, OPT_BUDGET, OPT_JSON };

typedef struct resched_args {
        kd_cli_t *cli;
        int64_t fire_at_ms;
        int has_at, has_delay;
        const char *new_id;
        int64_t budget_ms;
        int json;
} resched_args_t;

static int on_opt(int opt, const char *arg, void *ctx)
{
        resched_args_t *a = ctx;
        int64_t ms;
        switch (opt) {
        case OPT_AT:
                if (kd_ctl_time_parse(arg, &a->fire_at_ms))
                        return kd_cli_usage_error(
                            a->cli, "bad --at \"%s\": epoch ms or RFC 3339",
                            arg);
                a->has_at = 1;
                return KD_EXIT_OK;
        case OPT_DELAY:
                if (kdelay_duration_parse(arg, &ms))
                        return kd_cli_usage_error(
                            a->cli, "bad --delay \"%s\": 30s, 5m, 2h", arg);
                a->fire_at_ms = kd_now_ms() + ms;
                a->has_delay = 1;
                return KD_EXIT_OK;
        case OPT_NEW_ID:
                a->new_id = arg;
                return KD_EXIT_OK;
        case OPT_JSON:
                a->json = 1;
                return KD_EXIT_OK;
        case OPT_BUDGET:
                if (kdelay_duration_parse(arg, &a->budget_ms) ||
                    a->budget_ms <= 0)
                        return kd_cli_usage_error(
                            a->cli, "bad --budget \"%s\": a duration", arg);
                return KD_EXIT_OK;
        default:
                return KD_EXIT_USAGE;
        }
}

static int run(resched_args_t *a, kdelay_client_t *client, const char *id)
{
        /* new_id is set just before the cancel: set, the task may be
         * cancelled, and the same new id finishes the job. */
        char new_id[KDELAY_ID_MAX + 1] = "", errstr[1024];
        kdelay_err_t err = kdelay_reschedule(
            client, id, a->fire_at_ms, KDELAY_TIME_UNSET, a->new_id,
            a->budget_ms, new_id, sizeof(new_id), errstr, sizeof(errstr));
        if (!err && a->json) {
                cJSON *o = cJSON_CreateObject();
                cJSON_AddStringToObject(o, "id", id);
                cJSON_AddStringToObject(o, "new_id", new_id);
                cJSON_AddNumberToObject(o, "fire_at_ms", (double)a->fire_at_ms);
                kd_ctl_json_print(o);
        } else if (!err) {
                printf("%s\n", new_id);
        }
        if (!err)
                return KD_EXIT_OK;
        fprintf(stderr, "%s: %s: %s\n", a->cli->prog, kdelay_err_str(err),
                errstr);
        if (err != KDELAY_ERR_TOO_LATE && err != KDELAY_ERR_NOT_FOUND &&
            err != KDELAY_ERR_TIMED_OUT && new_id[0])
                fprintf(stderr,
                        "%s: to finish: kdelayctl reschedule --at %lld "
                        "--new-id %s %s\n",
                        a->cli->prog, (long long)a->fire_at_ms, new_id, id);
        return kd_cli_exit_code(err);
}

int kd_ctl_reschedule(int argc, char **argv)
{
        static const struct option opts[] = {
            {"at", required_argument, NULL, OPT_AT},
            {"delay", required_argument, NULL, OPT_DELAY},
            {"new-id", required_argument, NULL, OPT_NEW_ID},
            {"budget", required_argument, NULL, OPT_BUDGET},
            {"json", no_argument, NULL, OPT_JSON},
            {NULL, 0, NULL, 0}};
        kd_cli_t cli;
        int argi;
        resched_args_t a = {.cli = &cli, .budget_ms = KD_CTL_SCAN_BUDGET_MS};
        kd_cli_init(&cli, "kdelayctl reschedule");
        int rc = kd_cli_parse(&cli, argc, argv, "", opts, on_opt, &a,
                              kd_reschedule_help, &argi);
        if (rc == KD_EXIT_OK && a.has_at + a.has_delay != 1)
                rc =
                    kd_cli_usage_error(&cli, "exactly one of --at and --delay");
        if (rc == KD_EXIT_OK && argi >= argc)
                rc = kd_cli_usage_error(&cli, "a task ID is required");
        if (rc == KD_EXIT_OK && argi + 1 < argc)
                rc = kd_cli_usage_error(&cli, "unexpected argument \"%s\"",
                                        argv[argi + 1]);
        kdelay_client_t *client = NULL;
        if (rc == KD_EXIT_OK &&
            (rc = kd_cli_client(&cli, &client)) == KD_EXIT_OK)
                rc = run(&a, client, argv[argi]);
        kdelay_client_destroy(client);
        kd_cli_clear(&cli);
        return rc == KD_CLI_HELP_SHOWN ? KD_EXIT_OK : rc;
}
