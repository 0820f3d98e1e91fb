/* SPDX-License-Identifier: Apache-2.0 */
/* kdelayctl schedule: schedule one task and print its id. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <kdelay/kdelay.h>

#include "cli.h"
#include "ctl.h"
#include "ctl_json.h"
#include "ctl_time.h"
#include "kd_conf.h"
#include "kd_log.h"

#define KD_SCHED_HEADERS_MAX 64

typedef struct sched_args {
        kd_cli_t *cli;
        kdelay_task_t task;
        const char *delay;
        const char *at;
        kdelay_header_t headers[KD_SCHED_HEADERS_MAX];
        char *header_names[KD_SCHED_HEADERS_MAX]; /* owned */
        int has_value;
        int json;
        int no_target_check;
} sched_args_t;

static const char kd_schedule_help[] =
    "Usage: kdelayctl schedule --topic T --value V (--delay D | --at TIME)\n"
    "                          [--key K] [--id ID] [--header NAME=VALUE]...\n"
    "                          [--no-target-check] [--json]\n"
    "\n"
    "Schedules a task: deliver key/value to topic T when it is due. Prints "
    "the\n"
    "task id on stdout once Kafka has acknowledged the task (acks=all).\n"
    "A target topic or tier topic that does not exist is refused at once\n"
    "(exit 1, naming it).\n"
    "\n"
    "  --topic T            target topic (must be a valid Kafka topic name)\n"
    "  --no-target-check    do not check that T exists (a topic created "
    "later);\n"
    "                       same as -X producer.check_target=0\n"
    "  --value V            record value ('' for empty)\n"
    "  --key K              record key (default: no key)\n"
    "  --delay D            due after D: 250ms, 30s, 5m, 2h, 7d, 1h30m\n"
    "  --at TIME            due at TIME: epoch milliseconds (not seconds), or\n"
    "                       RFC 3339; a time already past fires at once\n"
    "                       (2026-12-01T08:00:00Z, "
    "2026-12-01T09:00:00.5+01:00)\n"
    "  --id ID              task id, 1..128 bytes UTF-8 (default: a new "
    "ULID)\n"
    "                       The id is the task's identity: a task whose id\n"
    "                       already has a fate (FIRED, CANCELLED) is dropped\n"
    "                       when it comes due, and counted by the forwarder;\n"
    "                       with mysql.url set, schedule warns about such an\n"
    "                       id and schedules it all the same.\n"
    "  --header NAME=VALUE  user header, repeatable; names kdelay-* are "
    "reserved\n"
    "  --json               one JSON document: {\"id\", \"target\",\n"
    "                       \"fire_at_ms\" or \"delay_ms\"}\n"
    "\n";

enum {
        OPT_TOPIC = 0x200,
        OPT_KEY,
        OPT_VALUE,
        OPT_DELAY,
        OPT_AT,
        OPT_ID,
        OPT_HEADER,
        OPT_JSON,
        OPT_NO_TARGET_CHECK
};

static const struct option kd_schedule_opts[] = {
    {"topic", required_argument, NULL, OPT_TOPIC},
    {"key", required_argument, NULL, OPT_KEY},
    {"value", required_argument, NULL, OPT_VALUE},
    {"delay", required_argument, NULL, OPT_DELAY},
    {"at", required_argument, NULL, OPT_AT},
    {"id", required_argument, NULL, OPT_ID},
    {"header", required_argument, NULL, OPT_HEADER},
    {"json", no_argument, NULL, OPT_JSON},
    {"no-target-check", no_argument, NULL, OPT_NO_TARGET_CHECK},
    {NULL, 0, NULL, 0}};

static int on_opt(int opt, const char *arg, void *ctx)
{
        sched_args_t *a = ctx;
        switch (opt) {
        case OPT_TOPIC:
                a->task.topic = arg;
                return KD_EXIT_OK;
        case OPT_KEY:
                a->task.key = arg;
                a->task.key_len = strlen(arg);
                return KD_EXIT_OK;
        case OPT_VALUE:
                a->task.value = arg;
                a->task.value_len = strlen(arg);
                a->has_value = 1;
                return KD_EXIT_OK;
        case OPT_DELAY:
                a->delay = arg;
                return KD_EXIT_OK;
        case OPT_AT:
                a->at = arg;
                return KD_EXIT_OK;
        case OPT_ID:
                a->task.id = arg;
                return KD_EXIT_OK;
        case OPT_JSON:
                a->json = 1;
                return KD_EXIT_OK;
        case OPT_NO_TARGET_CHECK:
                a->no_target_check = 1;
                return KD_EXIT_OK;
        case OPT_HEADER: {
                const char *eq = strchr(arg, '=');
                size_t i = a->task.header_cnt;
                if (!eq || eq == arg)
                        return kd_cli_usage_error(
                            a->cli, "--header expects NAME=VALUE, got \"%s\"",
                            arg);
                if (i == KD_SCHED_HEADERS_MAX)
                        return kd_cli_usage_error(a->cli, "at most %d headers",
                                                  KD_SCHED_HEADERS_MAX);
                a->header_names[i] = strndup(arg, (size_t)(eq - arg));
                if (!a->header_names[i])
                        return KD_EXIT_ERROR;
                a->headers[i].name = a->header_names[i];
                a->headers[i].value = eq + 1;
                a->headers[i].value_len = strlen(eq + 1);
                a->task.headers = a->headers;
                a->task.header_cnt = i + 1;
                return KD_EXIT_OK;
        }
        default:
                return kd_cli_usage_error(a->cli, "unexpected option");
        }
}

static int resolve_time(sched_args_t *a)
{
        if (!!a->delay == !!a->at)
                return kd_cli_usage_error(a->cli,
                                          "give exactly one of --delay and "
                                          "--at");
        if (a->delay) {
                if (kdelay_duration_parse(a->delay, &a->task.delay_ms))
                        return kd_cli_usage_error(
                            a->cli,
                            "--delay \"%s\" is not a duration (e.g. 250ms, "
                            "30s, 5m, 2h, 7d)",
                            a->delay);
                return KD_EXIT_OK;
        }
        if (kd_ctl_time_parse(a->at, &a->task.fire_at_ms))
                return kd_cli_usage_error(a->cli,
                                          "--at \"%s\" is neither epoch "
                                          "milliseconds (13 digits) nor an "
                                          "RFC 3339 time",
                                          a->at);
        return KD_EXIT_OK;
}

/* An id is the task's identity: one that already has a fate is dropped
 * when it comes due. Warned, not refused: the caller may mean it (a
 * re-run that must not fire twice). */
static void warn_if_decided(const kd_cli_t *cli, kdelay_client_t *client,
                            const char *id)
{
        char errstr[512], q[KD_LOG_QUOTED_MAX(KDELAY_ID_MAX)];
        kdelay_status_t st;
        kd_log_quote(id, q, sizeof(q));
        kdelay_err_t err =
            kdelay_status(client, id, &st, errstr, sizeof(errstr));
        if (err)
                fprintf(stderr,
                        "%s: warning: could not check whether id %s already "
                        "has a fate: %s\n",
                        cli->prog, q, errstr);
        else if (st.fate != KDELAY_FATE_UNDECIDED)
                fprintf(stderr,
                        "%s: warning: id %s already has a fate (%s): a task "
                        "with this id is dropped when it comes due\n",
                        cli->prog, q, kdelay_fate_str(st.fate));
}

int kd_ctl_schedule(int argc, char **argv)
{
        kd_cli_t cli;
        sched_args_t a = {.cli = &cli};
        int argi, rc;
        kdelay_task_init(&a.task);
        /* An interactive command should not wait librdkafka's default
         * 300 s for an unreachable broker; -X message.timeout.ms wins. A
         * target topic that does not exist is a typo until told otherwise
         * (--no-target-check). */
        static const char *const defaults[] = {"message.timeout.ms=30000",
                                               "producer.check_target=1", NULL};
        kd_cli_init(&cli, "kdelayctl schedule");
        cli.defaults = defaults;
        rc = kd_cli_parse(&cli, argc, argv, "", kd_schedule_opts, on_opt, &a,
                          kd_schedule_help, &argi);
        if (rc == KD_EXIT_OK && argi < argc)
                rc = kd_cli_usage_error(&cli, "unexpected argument \"%s\"",
                                        argv[argi]);
        if (rc == KD_EXIT_OK && !a.task.topic)
                rc = kd_cli_usage_error(&cli, "--topic is required");
        if (rc == KD_EXIT_OK && !a.has_value)
                rc = kd_cli_usage_error(&cli, "--value is required");
        if (rc == KD_EXIT_OK)
                rc = resolve_time(&a);
        if (rc == KD_EXIT_OK && a.no_target_check)
                cli.conf->producer_check_target = 0;
        if (rc == KD_EXIT_OK) {
                char errstr[512];
                char id[KDELAY_ID_MAX + 1];
                kdelay_client_t *client = NULL;
                int check = a.task.id && cli.conf->mysql_url;
                kdelay_err_t err = kdelay_client_new(&client, cli.conf, errstr,
                                                     sizeof(errstr));
                if (!err) {
                        cli.conf = NULL; /* the client owns it now */
                        if (check)
                                warn_if_decided(&cli, client, a.task.id);
                        err = kdelay_schedule(client, &a.task, id, sizeof(id),
                                              errstr, sizeof(errstr));
                        kdelay_client_destroy(client);
                }
                if (err) {
                        fprintf(stderr, "%s: %s: %s\n", cli.prog,
                                kdelay_err_str(err), errstr);
                        rc = kd_cli_exit_code(err);
                } else if (a.json) {
                        cJSON *o = cJSON_CreateObject();
                        cJSON_AddStringToObject(o, "id", id);
                        cJSON_AddStringToObject(o, "target", a.task.topic);
                        if (a.task.fire_at_ms != KDELAY_TIME_UNSET)
                                cJSON_AddNumberToObject(
                                    o, "fire_at_ms", (double)a.task.fire_at_ms);
                        else
                                cJSON_AddNumberToObject(
                                    o, "delay_ms", (double)a.task.delay_ms);
                        kd_ctl_json_print(o);
                } else {
                        printf("%s\n", id);
                }
        }
        for (size_t i = 0; i < a.task.header_cnt; i++)
                free(a.header_names[i]);
        kd_cli_clear(&cli);
        return rc == KD_CLI_HELP_SHOWN ? KD_EXIT_OK : rc;
}
