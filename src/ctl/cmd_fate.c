/* SPDX-License-Identifier: Apache-2.0 */
/* kdelayctl status: a task's fate in the MySQL fate table. */
#include <stdio.h>
#include <string.h>

#include <cjson/cJSON.h>

#include <kdelay/kdelay.h>

#include "cli.h"
#include "ctl.h"
#include "ctl_json.h"
#include "ctl_scan.h"
#include "ctl_time.h"
#include "kd_client.h"
#include "kd_fate.h"
#include "kd_util.h"

static const char kd_status_help[] =
    "Usage: kdelayctl status [--json] [--scan] [OPTIONS] ID\n"
    "\n"
    "Shows the fate of task ID: UNDECIDED (pending, unknown, or its row\n"
    "expired), FIRING (claimed by a forwarder), FIRED, CANCELLED or DEAD\n"
    "(claimed, then dead-lettered: its target refused it; with the\n"
    "reason), with the times recorded. A task fired without a claim\n"
    "through a MySQL outage (forwarder.fate_outage_policy=fire) is FIRED\n"
    "with a note, in --json \"unclaimed\": what its row said before\n"
    "(\"fired\", or \"cancelled\": a cancel came first),\n"
    "\"unclaimed_fired_at_ms\" and \"delivered\": \"yes\". A cancelled task\n"
    "whose fire without a claim was announced but its delivery never\n"
    "recorded (its forwarder stopped in between) stays CANCELLED with a\n"
    "note, \"delivered\": \"maybe\": treat it as delivered. While MySQL is\n"
    "down status cannot answer (exit 1, the reason on stderr). While\n"
    "such fires are being reconciled, an UNDECIDED or CANCELLED task is\n"
    "shown with a note that its fate is not final, in --json\n"
    "\"reconciling\": {\"journal\", \"since_ms\", \"marked_by\"}.\n"
    "\n"
    "  --json               one JSON document on stdout, always exactly one:\n"
    "                       an error (an invalid id, usage, configuration,\n"
    "                       MySQL) is {\"id\", \"fate\": null, \"error\"};\n"
    "                       a byte that is not UTF-8 is written \\ufffd\n"
    "  --scan               when UNDECIDED, look for the task in the tier\n"
    "                       topics (as `tasks find`, bounded by 60s): found,\n"
    "                       it is PENDING, shown with its tier topic,\n"
    "                       partition, offset, due time and target\n"
    "\n";

enum { OPT_JSON = 0x200, OPT_SCAN };

typedef struct status_args {
        int json, scan;
} status_args_t;

/* Parses options and the single ID operand; creates the client. */
static int setup(kd_cli_t *cli, int argc, char **argv,
                 const struct option *opts, kd_cli_opt_fn *on_opt, void *ctx,
                 const char *help, const char **idp, kdelay_client_t **clientp)
{
        int argi = argc; /* argc: no operand seen */
        int rc =
            kd_cli_parse(cli, argc, argv, "", opts, on_opt, ctx, help, &argi);
        if (argi < argc)
                *idp = argv[argi]; /* for --json's answer, even on error */
        if (rc != KD_EXIT_OK)
                return rc;
        if (argi >= argc)
                return kd_cli_usage_error(cli, "a task ID is required");
        if (argi + 1 < argc)
                return kd_cli_usage_error(cli, "unexpected argument \"%s\"",
                                          argv[argi + 1]);
        return kd_cli_client(cli, clientp);
}

static int status_on_opt(int opt, const char *arg, void *ctx)
{
        status_args_t *a = ctx;
        (void)arg;
        if (opt == OPT_JSON)
                a->json = 1;
        else if (opt == OPT_SCAN)
                a->scan = 1;
        else
                return KD_EXIT_USAGE;
        return KD_EXIT_OK;
}

/* What kdelay_unclaimed says of a FIRED or CANCELLED task: "" (fired
 * under a claim, or never fired), else the fate its row had when the
 * journal of a fate-store outage was applied ("fired": none;
 * "cancelled": a cancel came first). A CANCELLED task on record was
 * fired without a claim and its delivery not confirmed (a record of
 * intent alone): it may have been delivered. */
typedef struct unclaimed_note {
        char prior[16];
        int64_t fired_at_ms;
        int64_t cancelled_at_ms; /* -1: not known */
} unclaimed_note_t;

/* A task UNDECIDED or CANCELLED while a journal is pending (pend->since_ms
 * >= 0) may have been fired without a claim: its fate is not final. */
static int pending_applies(const kdelay_status_t *st,
                           const kd_fate_pending_t *pend)
{
        return pend->since_ms >= 0 && (st->fate == KDELAY_FATE_UNDECIDED ||
                                       st->fate == KDELAY_FATE_CANCELLED);
}

static void print_json(const char *id, const kdelay_status_t *st,
                       const unclaimed_note_t *un,
                       const kd_fate_pending_t *pend)
{
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "id", id);
        cJSON_AddStringToObject(o, "fate", kdelay_fate_str(st->fate));
        const struct {
                const char *name;
                int64_t v;
        } times[] = {{"fire_at_ms", st->fire_at_ms},
                     {"decided_at_ms", st->decided_at_ms},
                     {"updated_at_ms", st->updated_at_ms}};
        for (size_t i = 0; i < sizeof(times) / sizeof(times[0]); i++) {
                if (times[i].v < 0)
                        cJSON_AddNullToObject(o, times[i].name);
                else
                        cJSON_AddNumberToObject(o, times[i].name,
                                                (double)times[i].v);
        }
        if (st->owner[0])
                cJSON_AddStringToObject(o, "owner", st->owner);
        else
                cJSON_AddNullToObject(o, "owner");
        if (st->dead_reason[0])
                cJSON_AddStringToObject(o, "dead_reason", st->dead_reason);
        if (un->prior[0]) {
                cJSON_AddStringToObject(o, "unclaimed", un->prior);
                cJSON_AddNumberToObject(o, "unclaimed_fired_at_ms",
                                        (double)un->fired_at_ms);
                cJSON_AddStringToObject(
                    o, "delivered",
                    st->fate == KDELAY_FATE_CANCELLED ? "maybe" : "yes");
                const char *when = kd_unclaimed_cancel_when(un->cancelled_at_ms,
                                                            un->fired_at_ms);
                if (when && !strcmp(un->prior, "cancelled")) {
                        cJSON_AddNumberToObject(o, "cancelled_at_ms",
                                                (double)un->cancelled_at_ms);
                        cJSON_AddStringToObject(o, "cancelled", when);
                }
        }
        if (pending_applies(st, pend)) {
                cJSON *r = cJSON_AddObjectToObject(o, "reconciling");
                if (r) {
                        cJSON_AddStringToObject(r, "journal", pend->journal);
                        cJSON_AddNumberToObject(r, "since_ms",
                                                (double)pend->since_ms);
                        cJSON_AddStringToObject(r, "marked_by", pend->by);
                }
        }
        kd_ctl_json_print(o);
}

/* status --json when there is no fate to show: {"id", "fate": null,
 * "error"}; id may be NULL (none given). */
static void print_json_error(const char *id, const char *error)
{
        cJSON *o = cJSON_CreateObject();
        if (id)
                cJSON_AddStringToObject(o, "id", id);
        else
                cJSON_AddNullToObject(o, "id");
        cJSON_AddNullToObject(o, "fate");
        cJSON_AddStringToObject(o, "error", error);
        kd_ctl_json_print(o);
}

/* An error of the library: on stderr, and in --json on stdout too. */
static int report(const kd_cli_t *cli, const char *what, const char *id,
                  int json, kdelay_err_t err, const char *errstr)
{
        char msg[700];
        snprintf(msg, sizeof(msg), "%s%s: %s", what, kdelay_err_str(err),
                 errstr);
        fprintf(stderr, "%s: %s\n", cli->prog, msg);
        if (json)
                print_json_error(id, msg);
        return kd_cli_exit_code(err);
}

static void print_text(const char *id, const kdelay_status_t *st,
                       const unclaimed_note_t *un,
                       const kd_fate_pending_t *pend)
{
        char t[40];
        printf("id       %s\n", id);
        printf("fate     %s\n", kdelay_fate_str(st->fate));
        if (st->fire_at_ms >= 0)
                printf("fire-at  %s\n",
                       kd_ctl_time_format(st->fire_at_ms, t, sizeof(t)));
        if (st->decided_at_ms >= 0)
                printf("decided  %s\n",
                       kd_ctl_time_format(st->decided_at_ms, t, sizeof(t)));
        if (st->updated_at_ms >= 0)
                printf("updated  %s\n",
                       kd_ctl_time_format(st->updated_at_ms, t, sizeof(t)));
        if (st->owner[0])
                printf("owner    %s\n", st->owner);
        if (st->dead_reason[0])
                printf("reason   %s\n", st->dead_reason);
        const char *when =
            kd_unclaimed_cancel_when(un->cancelled_at_ms, un->fired_at_ms);
        int after = when && !strcmp(when, "after_fire");
        if (un->prior[0] && st->fate == KDELAY_FATE_CANCELLED)
                printf("note     %s through a fate-store outage at %s; its "
                       "delivery was not confirmed (its forwarder stopped "
                       "before recording it): it may have been delivered "
                       "(kdelayctl audit)\n",
                       after ? "fired without a claim, then cancelled "
                               "before the fires were reconciled,"
                             : "cancelled, then fired without a claim",
                       kd_ctl_time_format(un->fired_at_ms, t, sizeof(t)));
        else if (un->prior[0])
                printf("note     fired without a claim through a fate-store "
                       "outage at %s%s\n",
                       kd_ctl_time_format(un->fired_at_ms, t, sizeof(t)),
                       strcmp(un->prior, "cancelled") ? ""
                       : after ? "; then cancelled after MySQL answered again "
                                 "and before the fires were reconciled: that "
                                 "cancel answered OK, but the task had been "
                                 "delivered (kdelayctl audit)"
                               : "; it had been cancelled before (kdelayctl "
                                 "audit)");
        if (pending_applies(st, pend))
                printf("note     not final: fires made without a claim "
                       "through a fate-store outage are being reconciled "
                       "(journal %s, pending since %s, marked by %s); this "
                       "task may be one of them, and a cancel answers "
                       "UNKNOWN until it is done\n",
                       pend->journal,
                       kd_ctl_time_format(pend->since_ms, t, sizeof(t)),
                       pend->by[0] ? pend->by : "-");
}

/* The pending reconciliation a note names (since_ms -1 when none, or when
 * it cannot be read: the reason is on stderr). */
static void read_pending(kd_cli_t *cli, kdelay_client_t *client,
                         kd_fate_pending_t *pend)
{
        char errstr[256];
        kdelay_err_t err =
            kd_client_pending(client, pend, errstr, sizeof(errstr));
        if (err) {
                pend->since_ms = -1;
                fprintf(stderr,
                        "%s: warning: cannot tell whether a reconciliation "
                        "is pending: %s\n",
                        cli->prog, errstr);
        }
}

/* The note of a FIRED or CANCELLED task (empty when none, or when it cannot be
 * read: the fate above stands, and the reason is on stderr). */
static void read_note(kd_cli_t *cli, kdelay_client_t *client, const char *id,
                      kdelay_fate_t fate, unclaimed_note_t *un)
{
        kd_fate_unclaimed_row_t row;
        size_t n = 0;
        char errstr[256];
        kdelay_err_t err =
            kd_client_unclaimed(client, id, &row, &n, errstr, sizeof(errstr));
        if (err) {
                fprintf(stderr,
                        "%s: warning: cannot tell whether it fired without a "
                        "claim: %s\n",
                        cli->prog, errstr);
                return;
        }
        /* A cancelled task dead-lettered without a claim was not
         * delivered: its cancel holds, nothing to note. */
        if (n == 1 && !(fate == KDELAY_FATE_CANCELLED && row.dead_reason[0])) {
                kd_strlcpy(un->prior, kd_unclaimed_prior_str(row.prior),
                           sizeof(un->prior));
                un->fired_at_ms = row.fired_at_ms;
                un->cancelled_at_ms = row.cancelled_at_ms;
        }
}

/* status --scan of an UNDECIDED task: PENDING where the scan finds it. */
static int scan_status(kd_cli_t *cli, kdelay_client_t *client, const char *id,
                       int json, const kdelay_status_t *st)
{
        char errstr[512];
        kdelay_pending_t p;
        kdelay_err_t err = kdelay_find(client, id, KD_CTL_SCAN_BUDGET_MS, &p,
                                       errstr, sizeof(errstr));
        if (err == KDELAY_ERR_NOT_FOUND) {
                unclaimed_note_t none = {"", 0, -1};
                kd_fate_pending_t pend;
                read_pending(cli, client, &pend);
                json ? print_json(id, st, &none, &pend)
                     : print_text(id, st, &none, &pend);
                return KD_EXIT_OK;
        }
        if (err)
                return report(cli, "scan: ", id, json, err, errstr);
        if (json)
                kd_ctl_pending_json(&p);
        else
                kd_ctl_pending_text(&p);
        return KD_EXIT_OK;
}

int kd_ctl_status(int argc, char **argv)
{
        static const struct option opts[] = {
            {"json", no_argument, NULL, OPT_JSON},
            {"scan", no_argument, NULL, OPT_SCAN},
            {NULL, 0, NULL, 0}};
        kd_cli_t cli;
        const char *id = NULL;
        kdelay_client_t *client = NULL;
        status_args_t a = {0, 0};
        char errstr[512];
        kd_cli_init(&cli, "kdelayctl status");
        int rc = setup(&cli, argc, argv, opts, status_on_opt, &a,
                       kd_status_help, &id, &client);
        if (rc == KD_EXIT_OK) {
                kdelay_status_t st;
                kdelay_err_t err =
                    kdelay_status(client, id, &st, errstr, sizeof(errstr));
                if (err) {
                        rc = report(&cli, "", id, a.json, err, errstr);
                } else if (a.scan && st.fate == KDELAY_FATE_UNDECIDED) {
                        rc = scan_status(&cli, client, id, a.json, &st);
                } else {
                        unclaimed_note_t un = {"", 0, -1};
                        kd_fate_pending_t pend = {.since_ms = -1};
                        if (st.fate == KDELAY_FATE_FIRED ||
                            st.fate == KDELAY_FATE_CANCELLED)
                                read_note(&cli, client, id, st.fate, &un);
                        if (st.fate == KDELAY_FATE_UNDECIDED ||
                            st.fate == KDELAY_FATE_CANCELLED)
                                read_pending(&cli, client, &pend);
                        if (a.json)
                                print_json(id, &st, &un, &pend);
                        else
                                print_text(id, &st, &un, &pend);
                }
        } else if (rc != KD_CLI_HELP_SHOWN && kd_ctl_json_asked(argc, argv)) {
                /* Nothing was looked up; the reason is on stderr. */
                print_json_error(id, rc == KD_EXIT_USAGE
                                         ? "usage or configuration error (the "
                                           "reason is on stderr)"
                                         : "error (the reason is on stderr)");
        }
        kdelay_client_destroy(client);
        kd_cli_clear(&cli);
        return rc == KD_CLI_HELP_SHOWN ? KD_EXIT_OK : rc;
}
