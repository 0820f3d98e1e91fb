/* SPDX-License-Identifier: Apache-2.0 */
/* kdelayctl cancel: cancel one task, or every id read from standard input
 * ("-"), each answer on stdout (text or one JSON object per id). */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <cjson/cJSON.h>

#include <kdelay/kdelay.h>

#include "cli.h"
#include "ctl.h"
#include "ctl_idlines.h"
#include "ctl_json.h"

static const char kd_cancel_help[] =
    "Usage: kdelayctl cancel [--json] [OPTIONS] ID\n"
    "       kdelayctl cancel [--json] [OPTIONS] -\n"
    "\n"
    "Cancels task ID. A cancel that succeeds means the task will never be\n"
    "delivered; it may name a task no forwarder has seen yet.\n"
    "Prints \"ID CANCELLED\" on success.\n"
    "With \"-\", cancels every id read from standard input, one per line\n"
    "(blank lines and lines starting with # skipped), and prints one line\n"
    "per id: \"ID CANCELLED\", \"ID TOO_LATE\", \"ID DEAD\", \"ID UNKNOWN\n"
    "reason\" or \"ID ERROR reason\";\n"
    "a line that cannot be an id (over 1023 bytes, a NUL byte) is reported\n"
    "on stderr by its number (exit 2) and the next line is read;\n"
    "progress goes to stderr every 1000 ids.\n"
    "\n"
    "  --json               JSON lines, one object per id: {\"id\", "
    "\"result\":\n"
    "                       CANCELLED | TOO_LATE | DEAD | UNKNOWN | ERROR,\n"
    "                       \"error\"};\n"
    "                       a failure before any id is looked at (usage,\n"
    "                       configuration) is one such object (ERROR, id\n"
    "                       null unless given); a byte that is not UTF-8\n"
    "                       is written \\ufffd\n"
    "\n"
    "Exit codes: 0 cancelled (now or before), 3 too late (the task is\n"
    "already firing or fired and will be or was delivered), 1 error (MySQL\n"
    "unreachable or failing: the outcome is unknown, retry) or UNKNOWN\n"
    "(fires made without a claim through a fate-store outage are being\n"
    "reconciled and this task may be one of them; nothing was recorded:\n"
    "retry; docs/fate-protocol.md), 2 usage or\n"
    "configuration error (an invalid id), 5 dead (a forwarder claimed the\n"
    "task and dead-lettered it: it will not be delivered, and its dead\n"
    "letter stays). With \"-\": the worst answer of all ids, 1 before 2\n"
    "before 5 before 3.\n"
    "\n";

enum { OPT_JSON = 0x200 };

static int on_opt(int opt, const char *arg, void *ctx)
{
        (void)arg;
        if (opt != OPT_JSON)
                return KD_EXIT_USAGE;
        *(int *)ctx = 1;
        return KD_EXIT_OK;
}

/* Cancels id and prints its answer; returns its exit code. batch: every
 * answer is a line on stdout (else only success, as before). */
static int cancel_one(kd_cli_t *cli, kdelay_client_t *client, const char *id,
                      int json, int batch)
{
        char errstr[512] = "";
        kdelay_err_t err = kdelay_cancel(client, id, errstr, sizeof(errstr));
        const char *result = err == KDELAY_OK                ? "CANCELLED"
                             : err == KDELAY_ERR_TOO_LATE    ? "TOO_LATE"
                             : err == KDELAY_ERR_DEAD        ? "DEAD"
                             : err == KDELAY_ERR_RECONCILING ? "UNKNOWN"
                                                             : "ERROR";
        int answer =
            !err || err == KDELAY_ERR_TOO_LATE || err == KDELAY_ERR_DEAD;
        if (json) {
                cJSON *o = cJSON_CreateObject();
                cJSON_AddStringToObject(o, "id", id);
                cJSON_AddStringToObject(o, "result", result);
                if (err)
                        cJSON_AddStringToObject(o, "error", errstr);
                kd_ctl_json_print(o);
        } else if (err == KDELAY_OK || batch) {
                printf("%s %s%s%s\n", id, result, answer ? "" : " ",
                       answer ? "" : errstr);
        }
        if (err == KDELAY_ERR_TOO_LATE && !batch)
                fprintf(stderr, "%s: too late: %s\n", cli->prog, errstr);
        else if (err == KDELAY_ERR_DEAD && !batch)
                fprintf(stderr, "%s: %s\n", cli->prog, errstr);
        else if (!answer)
                fprintf(stderr, "%s: %s: %s\n", cli->prog, kdelay_err_str(err),
                        errstr);
        return kd_cli_exit_code(err);
}

/* The answer of a cancel that failed before any id was looked at (usage,
 * configuration, the client): id may be NULL (none, or "-"). */
static void json_failed(const char *id, int rc)
{
        cJSON *o = cJSON_CreateObject();
        if (id)
                cJSON_AddStringToObject(o, "id", id);
        else
                cJSON_AddNullToObject(o, "id");
        cJSON_AddStringToObject(o, "result", "ERROR");
        cJSON_AddStringToObject(o, "error",
                                rc == KD_EXIT_USAGE
                                    ? "usage or configuration error (the "
                                      "reason is on stderr)"
                                    : "error (the reason is on stderr)");
        kd_ctl_json_print(o);
}

/* The worse of two exit codes: error, usage, dead, too late, ok. */
static int worse(int a, int b)
{
        static const int order[] = {KD_EXIT_ERROR, KD_EXIT_USAGE, KD_EXIT_DEAD,
                                    KD_EXIT_TOO_LATE, KD_EXIT_OK};
        for (size_t i = 0; i < sizeof(order) / sizeof(order[0]); i++)
                if (a == order[i] || b == order[i])
                        return order[i];
        return a;
}

/* Reports bad line n of standard input; its exit code. */
static int bad_line(kd_cli_t *cli, unsigned long n, kd_ctl_idline_t kind)
{
        fprintf(stderr, "%s: line %lu: %s\n", cli->prog, n,
                kind == KD_CTL_IDLINE_NUL ? "holds a NUL byte, not an id"
                                          : "too long for an id");
        return KD_EXIT_USAGE;
}

static int cancel_stdin(kd_cli_t *cli, kdelay_client_t *client, int json)
{
        kd_ctl_idlines_t in;
        kd_ctl_idline_t kind;
        const char *id;
        int rc = KD_EXIT_OK;
        unsigned long n = 0;
        kd_ctl_idlines_init(&in, stdin);
        while ((kind = kd_ctl_idlines_next(&in, &id)) != KD_CTL_IDLINE_EOF) {
                if (kind == KD_CTL_IDLINE_ERROR) {
                        fprintf(stderr, "%s: reading standard input: %s\n",
                                cli->prog, strerror(errno));
                        rc = worse(rc, KD_EXIT_ERROR);
                        break;
                }
                if (kind == KD_CTL_IDLINE_SKIP)
                        continue;
                if (kind != KD_CTL_IDLINE_ID) {
                        rc = worse(rc, bad_line(cli, in.line, kind));
                        continue;
                }
                rc = worse(rc, cancel_one(cli, client, id, json, 1));
                fflush(stdout);
                if (++n % 1000 == 0)
                        kd_cli_log(cli, KDELAY_LOG_INFO,
                                   "event=cancel_progress ids=%lu", n);
        }
        kd_cli_log(cli, KDELAY_LOG_INFO, "event=cancel_done ids=%lu exit=%d", n,
                   rc);
        return rc;
}

int kd_ctl_cancel(int argc, char **argv)
{
        static const struct option opts[] = {
            {"json", no_argument, NULL, OPT_JSON}, {NULL, 0, NULL, 0}};
        kd_cli_t cli;
        int json = 0, argi = argc; /* argc: no operand seen */
        kd_cli_init(&cli, "kdelayctl cancel");
        int rc = kd_cli_parse(&cli, argc, argv, "", opts, on_opt, &json,
                              kd_cancel_help, &argi);
        if (rc == KD_EXIT_OK && argi >= argc)
                rc = kd_cli_usage_error(
                    &cli, "a task ID is required (or -: ids from stdin)");
        if (rc == KD_EXIT_OK && argi + 1 < argc)
                rc = kd_cli_usage_error(&cli, "unexpected argument \"%s\"",
                                        argv[argi + 1]);
        kdelay_client_t *client = NULL;
        if (rc == KD_EXIT_OK &&
            (rc = kd_cli_client(&cli, &client)) == KD_EXIT_OK)
                rc = !strcmp(argv[argi], "-")
                         ? cancel_stdin(&cli, client, json)
                         : cancel_one(&cli, client, argv[argi], json, 0);
        else if (rc != KD_CLI_HELP_SHOWN && kd_ctl_json_asked(argc, argv))
                /* Nothing was cancelled; the reason is on stderr. */
                json_failed(argi >= argc || !strcmp(argv[argi], "-")
                                ? NULL
                                : argv[argi],
                            rc);
        kdelay_client_destroy(client);
        kd_cli_clear(&cli);
        return rc == KD_CLI_HELP_SHOWN ? KD_EXIT_OK : rc;
}
