/* SPDX-License-Identifier: Apache-2.0 */
/* kdelayctl audit, the verb's front: its options, its audits run in turn
 * (audit.h names them), the summary and the exit code. */
#include <stdio.h>

#include <cjson/cJSON.h>

#include <kdelay/kdelay.h>

#include "audit.h"
#include "audit_dead_letters.h"
#include "audit_firing.h"
#include "audit_overdue.h"
#include "audit_unclaimed.h"
#include "cli.h"
#include "ctl.h"
#include "ctl_json.h"
#include "kd_conf.h"
#include "kd_grouppos.h"
#include "kd_util.h"

static const char kd_audit_help[] =
    "Usage: kdelayctl audit [--older-than D] [--fix] [--overdue D]\n"
    "                       [--dead-window D] [--json]\n"
    "\n"
    "Checks what no forwarder will resolve by itself:\n"
    "  firing   FIRING fate rows last changed more than --older-than ago.\n"
    "           Each claim row records where its task's record was read;\n"
    "           an offset the forwarder group has handled (below its\n"
    "           committed offset, or in the done set exactly_once commits\n"
    "           with it) was delivered — both modes commit only after\n"
    "           delivery — so the row is `delivered`, and --fix marks it\n"
    "           FIRED. Otherwise the record is still the group's to handle\n"
    "           and the row is `pending` (reported, not touched); a row\n"
    "           without a location (claimed before schema 4), or read from\n"
    "           a topic that is not a tier topic of this prefix (deleted,\n"
    "           or another deployment's), is `unknown`. A handled row whose\n"
    "           task is in the dead-letter topic (its target refused it;\n"
    "           the DEAD mark was lost with its forwarder) is\n"
    "           `dead_lettered`, and --fix marks it DEAD with the dead\n"
    "           letter's reason.\n"
    "  overdue  tier partitions whose next record to handle was due more\n"
    "           than --overdue ago: no forwarder runs, or one is stuck.\n"
    "  fired_after_cancel\n"
    "           tasks cancelled before a fate-store outage and fired\n"
    "           through it without a claim (forwarder.fate_outage_policy\n"
    "           =fire), recorded when the journal was applied in the last\n"
    "           --dead-window: the cancel had answered OK, the task was\n"
    "           delivered all the same (nothing to fix; tell its owner).\n"
    "           DELIVERED says yes (its delivery is on record, fate FIRED)\n"
    "           or maybe (at_least_once: its forwarder stopped between the\n"
    "           fire and the record of its delivery; the fate stays\n"
    "           CANCELLED; treat it as delivered).\n"
    "  dead     records in the dead-letter topic of the last --dead-window\n"
    "           not replayed yet (a finding); those `dead replay` replayed\n"
    "           (their copy has a fate, or is pending in a tier topic) are\n"
    "           history: counted as dead_replayed, not a finding. One whose\n"
    "           task was cancelled (its fate CANCELLED: nothing to deliver,\n"
    "           nothing to act on) is listed as `cancelled` and counted as\n"
    "           dead_cancelled, not a finding either.\n"
    "\n"
    "Output: a table of the firing rows found (FIRING_ID VERDICT ACTION\n"
    "OWNER UPDATED SOURCE), a table of the overdue partitions\n"
    "(OVERDUE_PARTITION OFFSET DUE OVERDUE_MS), a table of the dead\n"
    "letters not replayed (DEAD_ID STATE REASON SOURCE; STATE `open`, a\n"
    "finding, or `cancelled`) and their count, a table\n"
    "of fires after a cancel (FIRED_AFTER_CANCEL_ID FIRE_AT FIRED_AT\n"
    "FORWARDER SOURCE DELIVERED) and a summary as key=value lines\n"
    "(`summary ...\n"
    "findings=N`).\n"
    "\n"
    "  --older-than D       FIRING rows last changed more than D ago\n"
    "                       (default 1m), or stamped more than D ahead of\n"
    "                       this clock (a claimer's clock ran ahead);\n"
    "                       0s: every FIRING row\n"
    "  --fix                mark delivered rows FIRED, dead-lettered DEAD\n"
    "  --overdue D          overdue bound (default 1m)\n"
    "  --dead-window D      dead-letter and fired-after-cancel window\n"
    "                       (default 24h)\n"
    "  --json               one JSON document on stdout: {\"firing\": [...],\n"
    "                       \"overdue\": [...], \"dead\": [...],\n"
    "                       \"summary\": {...}}\n"
    "\n"
    "Exit codes: 0 nothing needs action (history does not count: rows\n"
    "fixed by --fix, dead letters replayed or of cancelled tasks), 1\n"
    "findings, or an error (said on stderr).\n"
    "\n";

enum { OPT_OLDER = 0x200, OPT_FIX, OPT_OVERDUE, OPT_WINDOW, OPT_JSON };

typedef struct audit_args {
        kd_cli_t *cli;
        int64_t older_ms, overdue_ms, window_ms;
        int fix, json;
} audit_args_t;

/* What the audits found, for the summary. */
typedef struct audit_report {
        cJSON *json; /* owned: the document when --json */
        /* its arrays, one an audit (owned by json) */
        cJSON *firing_json, *overdue_json, *dead_json, *unclaimed_json;
        kd_audit_firing_counts_t firing;
        size_t overdue;
        kd_audit_dead_counts_t dead;
        size_t after_cancel; /* fired after a cancel (an outage) */
        int more_after_cancel;
        char dead_topic[256];
} audit_report_t;

/* The --json document with an array for each audit, in the order they
 * run; -1 when out of memory. */
static int report_json_new(audit_report_t *r)
{
        if (!(r->json = cJSON_CreateObject()))
                return -1;
        r->firing_json = cJSON_AddArrayToObject(r->json, "firing");
        r->overdue_json = cJSON_AddArrayToObject(r->json, "overdue");
        r->dead_json = cJSON_AddArrayToObject(r->json, "dead");
        r->unclaimed_json =
            cJSON_AddArrayToObject(r->json, "fired_after_cancel");
        return r->firing_json && r->overdue_json && r->dead_json &&
                       r->unclaimed_json
                   ? 0
                   : -1;
}

static int on_opt(int opt, const char *arg, void *ctx)
{
        audit_args_t *a = ctx;
        int64_t *dst = opt == OPT_OLDER     ? &a->older_ms
                       : opt == OPT_OVERDUE ? &a->overdue_ms
                                            : &a->window_ms;
        switch (opt) {
        case OPT_FIX:
                a->fix = 1;
                return KD_EXIT_OK;
        case OPT_JSON:
                a->json = 1;
                return KD_EXIT_OK;
        case OPT_OLDER:
        case OPT_OVERDUE:
        case OPT_WINDOW:
                if (kdelay_duration_parse(arg, dst))
                        return kd_cli_usage_error(
                            a->cli, "bad duration \"%s\": 30s, 5m, 2h", arg);
                return KD_EXIT_OK;
        default:
                return KD_EXIT_USAGE;
        }
}

static int summary(const audit_args_t *a, audit_report_t *r)
{
        const kd_audit_firing_counts_t *f = &r->firing;
        const kd_audit_dead_counts_t *d = &r->dead;
        size_t findings =
            f->verdicts[KD_AUDIT_PENDING] + f->verdicts[KD_AUDIT_UNKNOWN] +
            f->verdicts[KD_AUDIT_DELIVERED] +
            f->verdicts[KD_AUDIT_DEAD_LETTERED] - f->fixed + r->overdue +
            (d->records - d->replayed - d->cancelled > 0) + r->after_cancel;
        char w[32];
        kdelay_duration_format(a->window_ms, w, sizeof(w));
        if (r->json) {
                cJSON *s = cJSON_AddObjectToObject(r->json, "summary");
                cJSON_AddNumberToObject(s, "firing", (double)f->rows);
                for (int v = 0; v < KD_AUDIT_VERDICT__N; v++)
                        cJSON_AddNumberToObject(s, kd_audit_verdict_name(v),
                                                (double)f->verdicts[v]);
                cJSON_AddNumberToObject(s, "fixed", (double)f->fixed);
                cJSON_AddBoolToObject(s, "more_firing", f->more);
                cJSON_AddNumberToObject(s, "overdue_partitions",
                                        (double)r->overdue);
                cJSON_AddNumberToObject(s, "dead_letters", (double)d->records);
                cJSON_AddNumberToObject(s, "dead_replayed",
                                        (double)d->replayed);
                cJSON_AddNumberToObject(s, "dead_cancelled",
                                        (double)d->cancelled);
                cJSON_AddStringToObject(s, "dead_window", w);
                cJSON_AddNumberToObject(s, "fired_after_cancel",
                                        (double)r->after_cancel);
                cJSON_AddNumberToObject(s, "findings", (double)findings);
                kd_ctl_json_write(r->json);
        } else {
                if (d->records > 0)
                        printf("dead topic=%s records=%lld replayed=%lld "
                               "cancelled=%lld window=%s\n",
                               r->dead_topic, (long long)d->records,
                               (long long)d->replayed, (long long)d->cancelled,
                               w);
                printf("summary firing=%zu delivered=%zu fixed=%zu "
                       "pending=%zu unknown=%zu dead_lettered=%zu "
                       "more_firing=%d overdue_partitions=%zu "
                       "dead_letters=%lld dead_replayed=%lld "
                       "dead_cancelled=%lld fired_after_cancel=%zu "
                       "findings=%zu\n",
                       f->rows, f->verdicts[KD_AUDIT_DELIVERED], f->fixed,
                       f->verdicts[KD_AUDIT_PENDING],
                       f->verdicts[KD_AUDIT_UNKNOWN],
                       f->verdicts[KD_AUDIT_DEAD_LETTERED], f->more, r->overdue,
                       (long long)d->records, (long long)d->replayed,
                       (long long)d->cancelled, r->after_cancel, findings);
        }
        return findings ? KD_EXIT_ERROR : KD_EXIT_OK;
}

/* The audits in turn, through rk (a group client); each table after the
 * first printed is set off by a blank line. */
static kdelay_err_t run_audits(const audit_args_t *a, rd_kafka_t *rk,
                               const kd_grouppos_t *pos, audit_report_t *r,
                               char *errstr, size_t errstr_size)
{
        const kd_cli_t *cli = a->cli;
        kdelay_err_t err =
            kd_audit_firing(cli, pos, a->older_ms, a->fix, r->firing_json,
                            &r->firing, errstr, errstr_size);
        if (!err)
                err = kd_audit_overdue(rk, pos, a->overdue_ms, r->overdue_json,
                                       r->firing.rows > 0, &r->overdue, errstr,
                                       errstr_size);
        if (!err)
                err = kd_audit_dead_letters(
                    cli, kd_now_ms() - a->window_ms, r->dead_topic,
                    r->dead_json, r->firing.rows > 0 || r->overdue > 0,
                    &r->dead, errstr, errstr_size);
        if (!err)
                err = kd_audit_unclaimed(
                    cli->conf, kd_now_ms() - a->window_ms, r->unclaimed_json,
                    r->firing.rows > 0 || r->overdue > 0 || r->dead.records > 0,
                    &r->after_cancel, &r->more_after_cancel, errstr,
                    errstr_size);
        return err;
}

static int run(audit_args_t *a)
{
        char errstr[512];
        kd_rk_owner_t owner = {a->cli->conf};
        kd_grouppos_t pos = {0};
        audit_report_t r = {0};
        kd_conf_dead_topic(a->cli->conf, r.dead_topic, sizeof(r.dead_topic));
        if (a->json && report_json_new(&r)) {
                cJSON_Delete(r.json);
                fprintf(stderr, "%s: out of memory\n", a->cli->prog);
                return KD_EXIT_ERROR;
        }
        kdelay_err_t err = KDELAY_OK;
        rd_kafka_t *rk = kd_grouppos_client(&owner, errstr, sizeof(errstr));
        if (!rk)
                err = KDELAY_ERR_KAFKA;
        /* The group's position first: a row whose offset it has handled
         * then was surely delivered before the row was read. */
        if (!err)
                err = kd_grouppos_read(rk, a->cli->conf, &pos, errstr,
                                       sizeof(errstr));
        if (!err)
                err = run_audits(a, rk, &pos, &r, errstr, sizeof(errstr));
        int rc;
        if (err) {
                fprintf(stderr, "%s: %s: %s\n", a->cli->prog,
                        kdelay_err_str(err), errstr);
                rc = KD_EXIT_ERROR;
        } else {
                rc = summary(a, &r);
        }
        if (rk) {
                rd_kafka_consumer_close(rk);
                rd_kafka_destroy(rk);
        }
        kd_grouppos_clear(&pos);
        cJSON_Delete(r.json);
        return rc;
}

int kd_ctl_audit(int argc, char **argv)
{
        static const struct option opts[] = {
            {"older-than", required_argument, NULL, OPT_OLDER},
            {"fix", no_argument, NULL, OPT_FIX},
            {"overdue", required_argument, NULL, OPT_OVERDUE},
            {"dead-window", required_argument, NULL, OPT_WINDOW},
            {"json", no_argument, NULL, OPT_JSON},
            {NULL, 0, NULL, 0}};
        kd_cli_t cli;
        int argi;
        audit_args_t a = {.cli = &cli,
                          .older_ms = 60000,
                          .overdue_ms = 60000,
                          .window_ms = 24LL * 3600 * 1000};
        kd_cli_init(&cli, "kdelayctl audit");
        int rc = kd_cli_parse(&cli, argc, argv, "", opts, on_opt, &a,
                              kd_audit_help, &argi);
        if (rc == KD_EXIT_OK && argi < argc)
                rc = kd_cli_usage_error(&cli, "unexpected argument \"%s\"",
                                        argv[argi]);
        if (rc == KD_EXIT_OK)
                rc = run(&a);
        kd_cli_clear(&cli);
        return rc == KD_CLI_HELP_SHOWN ? KD_EXIT_OK : rc;
}
