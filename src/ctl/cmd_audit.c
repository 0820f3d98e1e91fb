/* SPDX-License-Identifier: Apache-2.0 */
/* kdelayctl audit: the fate table's stuck claims resolved exactly, tier
 * partitions whose head is overdue, dead letters of a window. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include <kdelay/kdelay.h>

#include "audit_dead.h"
#include "audit_unclaimed.h"
#include "cli.h"
#include "ctl.h"
#include "ctl_json.h"
#include "ctl_scan.h"
#include "ctl_time.h"
#include "dead_replay.h"
#include "kd_conf.h"
#include "kd_fate.h"
#include "kd_grouppos.h"
#include "kd_log.h"
#include "kd_scan.h"
#include "kd_util.h"
#include "kd_wire.h"

/* FIRING rows read per audit run. */
#define KD_AUDIT_ROWS_MAX   10000
#define KD_AUDIT_TIMEOUT_MS 10000
/* The dead letters of delivered-looking rows are looked for for at most
 * this long (from when: kd_audit_dead_from). */
#define KD_AUDIT_DEAD_BUDGET_MS 30000

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

typedef enum row_verdict {
        ROW_DELIVERED,
        ROW_PENDING,
        ROW_UNKNOWN,
        ROW_DEAD_LETTERED, /* handled by a dead letter, not a fire */
        ROW__N
} verdict_t;

static const char *const kd_verdict_names[ROW__N] = {
    "delivered", "pending", "unknown", "dead_lettered"};

typedef struct audit {
        audit_args_t *a;
        rd_kafka_t *rk; /* owned: a group client */
        kd_grouppos_t pos;
        kd_fate_firing_t *rows;                 /* owned */
        verdict_t *verdict;                     /* owned, per row */
        char (*reason)[KD_FATE_REASON_MAX + 1]; /* owned, per row: the
                                                   dead letter's reason */
        size_t row_cnt;
        size_t counts[ROW__N];
        size_t fixed;
        int more_rows; /* the listing hit KD_AUDIT_ROWS_MAX */
        cJSON *json;   /* owned: the report when --json */
        size_t overdue;
        int64_t dead;
        int64_t dead_replayed;  /* of dead: history, replayed before */
        int64_t dead_cancelled; /* of dead: their task cancelled */
        size_t after_cancel;    /* fired after a cancel (an outage) */
        int more_after_cancel;
        char dead_topic[256];
        int firing_shown, overdue_shown; /* text: rows printed so far */
} audit_t;

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

static verdict_t judge(const audit_t *au, const kd_fate_firing_t *r)
{
        if (!r->src_topic[0])
                return ROW_UNKNOWN;
        const kd_grouppos_part_t *p =
            kd_grouppos_find(&au->pos, r->src_topic, r->src_partition);
        if (!p)
                return ROW_UNKNOWN;
        return kd_grouppos_handled(p, r->src_offset) ? ROW_DELIVERED
                                                     : ROW_PENDING;
}

/* Marks the dead-lettered rows DEAD with their dead letter's reason. */
static kdelay_err_t fix_dead_rows(audit_t *au, kd_fate_store_t *store,
                                  char *errstr, size_t errstr_size)
{
        for (size_t i = 0; i < au->row_cnt; i++) {
                if (au->verdict[i] != ROW_DEAD_LETTERED)
                        continue;
                const char *id = au->rows[i].id;
                size_t len = au->rows[i].id_len;
                kdelay_err_t err = kd_fate_mark_dead(
                    store, &id, &len, 1, au->reason[i], errstr, errstr_size);
                if (err)
                        return err;
                au->fixed++;
        }
        return KDELAY_OK;
}

/* Marks the delivered rows FIRED, a claim batch at a time, and the
 * dead-lettered ones DEAD. */
static kdelay_err_t fix_rows(audit_t *au, kd_fate_store_t *store, char *errstr,
                             size_t errstr_size)
{
        kdelay_err_t derr = fix_dead_rows(au, store, errstr, errstr_size);
        if (derr)
                return derr;
        const char *ids[500];
        size_t lens[500], n = 0;
        for (size_t i = 0; i <= au->row_cnt; i++) {
                if (i < au->row_cnt && au->verdict[i] == ROW_DELIVERED) {
                        ids[n] = au->rows[i].id;
                        lens[n++] = au->rows[i].id_len;
                }
                if (n == 500 || (i == au->row_cnt && n)) {
                        kdelay_err_t err = kd_fate_mark_fired(
                            store, ids, lens, n, errstr, errstr_size);
                        if (err)
                                return err;
                        au->fixed += n;
                        n = 0;
                }
        }
        return KDELAY_OK;
}

static void report_row(audit_t *au, size_t i)
{
        const kd_fate_firing_t *r = &au->rows[i];
        const char *v = kd_verdict_names[au->verdict[i]];
        int fixable = au->verdict[i] == ROW_DELIVERED ||
                      au->verdict[i] == ROW_DEAD_LETTERED;
        const char *done =
            fixable ? (au->a->fix ? "fixed" : "fixable") : "reported";
        char t[40], q[KD_LOG_QUOTED_MAX(KDELAY_ID_MAX)];
        if (au->json) {
                cJSON *o = cJSON_CreateObject();
                cJSON_AddStringToObject(o, "id", r->id);
                cJSON_AddStringToObject(o, "verdict", v);
                cJSON_AddStringToObject(o, "action", done);
                cJSON_AddStringToObject(o, "owner", r->owner);
                cJSON_AddNumberToObject(o, "updated_at_ms",
                                        (double)r->updated_at_ms);
                if (r->src_topic[0]) {
                        cJSON_AddStringToObject(o, "tier_topic", r->src_topic);
                        cJSON_AddNumberToObject(o, "partition",
                                                r->src_partition);
                        cJSON_AddNumberToObject(o, "offset",
                                                (double)r->src_offset);
                }
                cJSON_AddItemToArray(cJSON_GetObjectItem(au->json, "firing"),
                                     o);
                return;
        }
        char qo[KD_LOG_QUOTED_MAX(KD_FATE_OWNER_MAX)];
        if (!au->firing_shown++ && kd_cli_headers())
                printf("%-36s %-13s %-8s %-24s %-24s %s\n", "FIRING_ID",
                       "VERDICT", "ACTION", "OWNER", "UPDATED", "SOURCE");
        printf("%-36s %-13s %-8s %-24s %-24s %s/%d/%lld\n",
               kd_log_quote(r->id, q, sizeof(q)), v, done,
               r->owner[0] ? kd_log_quote(r->owner, qo, sizeof(qo)) : "-",
               kd_ctl_time_format(r->updated_at_ms, t, sizeof(t)),
               r->src_topic[0] ? r->src_topic : "-", (int)r->src_partition,
               (long long)r->src_offset);
}

/* The delivered rows by id (sorted indexes into au->rows), for the dead
 * letters to find theirs. */
typedef struct dead_match {
        audit_t *au;
        size_t *idx; /* owned */
        size_t n;
} dead_match_t;

static const audit_t *sort_au; /* qsort has no context argument */

static int cmp_row_id(const void *a, const void *b)
{
        return strcmp(sort_au->rows[*(const size_t *)a].id,
                      sort_au->rows[*(const size_t *)b].id);
}

static int on_dead_letter(const kd_scan_rec_t *rec, void *opaque)
{
        dead_match_t *m = opaque;
        if (rec->defect != KD_WIRE_OK)
                return 0;
        size_t lo = 0, hi = m->n;
        while (lo < hi) { /* the row whose id the dead letter carries */
                size_t mid = (lo + hi) / 2;
                const kd_fate_firing_t *r = &m->au->rows[m->idx[mid]];
                int c = strncmp(rec->task.id, r->id, rec->task.id_len);
                if (!c && r->id_len != rec->task.id_len)
                        c = r->id_len > rec->task.id_len ? -1 : 1;
                if (!c) {
                        const void *v = NULL;
                        size_t len = 0;
                        size_t i = m->idx[mid];
                        if (rd_kafka_header_get_last(
                                (rd_kafka_headers_t *)rec->hdrs,
                                KDELAY_HDR_DEAD_REASON, &v, &len) ||
                            !v || len == 0 || len > KD_FATE_REASON_MAX)
                                return 0;
                        memcpy(m->au->reason[i], v, len);
                        m->au->reason[i][len] = '\0';
                        m->au->verdict[i] = ROW_DEAD_LETTERED;
                        return 0;
                }
                if (c < 0)
                        hi = mid;
                else
                        lo = mid + 1;
        }
        return 0;
}

/* A FIRING row whose source the group has handled was delivered — or
 * dead-lettered (its target refused it, and the DEAD mark was lost with
 * its forwarder): the dead-letter topic, read from the oldest such row's
 * claim or fire-at on (kd_audit_dead_from), tells which. A read that cannot
 * finish leaves them `delivered`, as before. */
static kdelay_err_t find_dead_letters(audit_t *au, char *errstr,
                                      size_t errstr_size)
{
        dead_match_t m = {au, malloc(au->row_cnt * sizeof(size_t) + 1), 0};
        int64_t since = INT64_MAX;
        if (!m.idx)
                return kd_fail(KDELAY_ERR_NO_MEMORY, errstr, errstr_size,
                               "out of memory");
        for (size_t i = 0; i < au->row_cnt; i++)
                if (au->verdict[i] == ROW_DELIVERED) {
                        int64_t from = kd_audit_dead_from(
                            au->rows[i].updated_at_ms, au->rows[i].fire_at_ms);
                        m.idx[m.n++] = i;
                        if (from < since)
                                since = from;
                }
        kdelay_err_t err = KDELAY_OK;
        kd_scan_progress_t prog = {0};
        if (m.n) {
                sort_au = au;
                qsort(m.idx, m.n, sizeof(*m.idx), cmp_row_id);
                kd_scan_opts_t opts = {.budget_ms = KD_AUDIT_DEAD_BUDGET_MS};
                err =
                    kd_scan_dead(au->a->cli->conf, since, &opts, on_dead_letter,
                                 &m, &prog, errstr, errstr_size);
        }
        if (m.n && (err || !prog.complete) && err != KDELAY_ERR_NO_MEMORY) {
                /* Not fatal, but a row whose dead letter may be in what
                 * was not read is not known to be delivered: `unknown`,
                 * which --fix leaves alone (marked FIRED, a dead-lettered
                 * task would say it was delivered). */
                size_t left = 0;
                for (size_t k = 0; k < m.n; k++)
                        if (au->verdict[m.idx[k]] == ROW_DELIVERED) {
                                au->verdict[m.idx[k]] = ROW_UNKNOWN;
                                left++;
                        }
                fprintf(stderr,
                        "%s: warning: dead letters %s: %zu row(s) that "
                        "looked delivered are reported unknown (not "
                        "fixed); run the audit again, or with "
                        "--older-than to take fewer rows\n",
                        au->a->cli->prog,
                        err ? errstr : "not all read within the budget", left);
                err = KDELAY_OK;
        }
        free(m.idx);
        return err;
}

static kdelay_err_t audit_firing(audit_t *au, char *errstr, size_t errstr_size)
{
        kd_fate_store_t *store = NULL;
        kdelay_err_t err = kd_fate_store_new(&store, au->a->cli->conf);
        if (err)
                return kd_fail(err, errstr, errstr_size,
                               "cannot create the fate store");
        au->rows = calloc(KD_AUDIT_ROWS_MAX, sizeof(*au->rows));
        au->verdict = calloc(KD_AUDIT_ROWS_MAX, sizeof(*au->verdict));
        au->reason = calloc(KD_AUDIT_ROWS_MAX, sizeof(*au->reason));
        if (!au->rows || !au->verdict || !au->reason)
                err = kd_fail(KDELAY_ERR_NO_MEMORY, errstr, errstr_size,
                              "out of memory");
        /* Rows stamped ahead of this clock by more than the bound come
         * from a claimer whose clock ran ahead: their age is unknown, so
         * they are audited too (the verdict does not depend on it). */
        int64_t now = kd_now_ms(), older = au->a->older_ms;
        if (!err)
                err = kd_fate_firing(store, older ? now - older : INT64_MAX,
                                     older ? now + older : INT64_MAX, au->rows,
                                     KD_AUDIT_ROWS_MAX, &au->row_cnt, errstr,
                                     errstr_size);
        au->more_rows = au->row_cnt == KD_AUDIT_ROWS_MAX;
        for (size_t i = 0; !err && i < au->row_cnt; i++)
                au->verdict[i] = judge(au, &au->rows[i]);
        if (!err)
                err = find_dead_letters(au, errstr, errstr_size);
        for (size_t i = 0; !err && i < au->row_cnt; i++)
                au->counts[au->verdict[i]]++;
        if (!err && au->a->fix)
                err = fix_rows(au, store, errstr, errstr_size);
        for (size_t i = 0; !err && i < au->row_cnt; i++)
                report_row(au, i);
        kd_fate_store_destroy(store);
        return err;
}

/* The overdue table's header, a blank line after the firing table. */
static void overdue_header(const audit_t *au)
{
        if (au->firing_shown)
                printf("\n");
        if (kd_cli_headers())
                printf("%-40s %12s %-24s %12s\n", "OVERDUE_PARTITION", "OFFSET",
                       "DUE", "OVERDUE_MS");
}

/* One partition's head (kd_grouppos_heads): a finding when due more than
 * the bound ago. */
static void head_seen(const rd_kafka_message_t *m, void *opaque)
{
        audit_t *au = opaque;
        const kd_grouppos_part_t *p = kd_grouppos_find(
            &au->pos, rd_kafka_topic_name(m->rkt), m->partition);
        rd_kafka_headers_t *h = NULL;
        kd_wire_task_t t;
        int64_t now = kd_now_ms();
        if (!p || rd_kafka_message_headers((rd_kafka_message_t *)m, &h) ||
            kd_wire_decode(h, now, &t) != KD_WIRE_OK ||
            now - t.fire_at_ms <= au->a->overdue_ms)
                return;
        char ts[40];
        au->overdue++;
        if (au->json) {
                cJSON *o = cJSON_CreateObject();
                cJSON_AddStringToObject(o, "tier_topic", p->topic);
                cJSON_AddNumberToObject(o, "partition", p->partition);
                cJSON_AddNumberToObject(o, "offset", (double)m->offset);
                cJSON_AddNumberToObject(o, "overdue_ms",
                                        (double)(now - t.fire_at_ms));
                cJSON_AddItemToArray(cJSON_GetObjectItem(au->json, "overdue"),
                                     o);
        } else {
                char where[300];
                if (!au->overdue_shown++)
                        overdue_header(au);
                snprintf(where, sizeof(where), "%s/%d", p->topic,
                         (int)p->partition);
                printf("%-40s %12lld %-24s %12lld\n", where,
                       (long long)m->offset,
                       kd_ctl_time_format(t.fire_at_ms, ts, sizeof(ts)),
                       (long long)(now - t.fire_at_ms));
        }
}

/* Reads the head (next record to handle) of every partition with one,
 * and reports those due more than the bound ago. */
static kdelay_err_t audit_heads(audit_t *au, char *errstr, size_t errstr_size)
{
        rd_kafka_topic_partition_list_t *l =
            rd_kafka_topic_partition_list_new((int)au->pos.cnt + 1);
        if (!l)
                return kd_fail(KDELAY_ERR_NO_MEMORY, errstr, errstr_size,
                               "out of memory");
        for (size_t i = 0; i < au->pos.cnt; i++) {
                const kd_grouppos_part_t *p = &au->pos.parts[i];
                if (kd_grouppos_start(p) < p->high)
                        rd_kafka_topic_partition_list_add(l, p->topic,
                                                          p->partition)
                            ->offset = kd_grouppos_start(p);
        }
        rd_kafka_resp_err_t kerr =
            kd_grouppos_heads(au->rk, l, KD_AUDIT_TIMEOUT_MS, head_seen, au);
        rd_kafka_topic_partition_list_destroy(l);
        if (kerr)
                return kd_fail(KDELAY_ERR_KAFKA, errstr, errstr_size,
                               "assign: %s", rd_kafka_err2str(kerr));
        return KDELAY_OK;
}

static int dead_item_cb(const kd_scan_rec_t *r, void *opaque)
{
        char reason[40];
        kd_ctl_dead_reason(r, reason, sizeof(reason));
        return kd_replay_items_add(opaque, r, reason) ? -1 : 0;
}

/* One dead letter not replayed: state "open" (a finding) or "cancelled"
 * (its task's fate is CANCELLED: nothing to act on). */
static void dead_row(audit_t *au, const kd_replay_item_t *it, const char *state,
                     int *shown)
{
        char q[KD_LOG_QUOTED_MAX(KDELAY_ID_MAX)];
        if (au->json) {
                cJSON *o = cJSON_CreateObject();
                cJSON_AddStringToObject(o, "id", it->valid ? it->id : "");
                cJSON_AddStringToObject(o, "state", state);
                cJSON_AddStringToObject(o, "reason", it->reason);
                cJSON_AddNumberToObject(o, "partition", it->partition);
                cJSON_AddNumberToObject(o, "offset", (double)it->offset);
                cJSON_AddItemToArray(cJSON_GetObjectItem(au->json, "dead"), o);
                return;
        }
        if (!(*shown)++) {
                if (au->firing_shown || au->overdue_shown)
                        printf("\n");
                if (kd_cli_headers())
                        printf("%-40s %-9s %-24s %s\n", "DEAD_ID", "STATE",
                               "REASON", "SOURCE");
        }
        printf("%-40s %-9s %-24s %s/%d/%lld\n",
               it->valid ? kd_log_quote(it->id, q, sizeof(q)) : "-", state,
               it->reason[0] ? it->reason : "-", au->dead_topic,
               (int)it->partition, (long long)it->offset);
}

/* The dead letters of the window (kd_scan_dead): how many, and which were
 * replayed (history): their copy's id (kd_replay_item_id, or the nested id
 * of earlier releases) has a fate, or is pending in a tier topic. A
 * missing dead-letter topic has none; what cannot be counted is an error;
 * what cannot be read then leaves them all findings, said on stderr. */
static kdelay_err_t audit_dead(audit_t *au, char *errstr_out,
                               size_t errstr_out_size)
{
        const kdelay_conf_t *conf = au->a->cli->conf;
        kd_replay_items_t items = {0};
        kd_replay_pendings_t pending = {0};
        kd_fate_store_t *store = NULL;
        kd_scan_progress_t prog = {0};
        kd_scan_opts_t opts = {.budget_ms = KD_AUDIT_DEAD_BUDGET_MS,
                               .missing_empty = 1};
        char errstr[512] = "";
        const char **ids = NULL;
        size_t *lens = NULL;
        kdelay_fate_t *fates = NULL;
        char(*rid)[KDELAY_ID_MAX + 32] = NULL;
        int shown = 0;
        kdelay_err_t err =
            kd_scan_dead(conf, kd_now_ms() - au->a->window_ms, &opts,
                         dead_item_cb, &items, &prog, errstr, sizeof(errstr));
        if (!prog.counted) {
                kd_replay_items_clear(&items);
                return kd_fail(err ? err : KDELAY_ERR_KAFKA, errstr_out,
                               errstr_out_size, "%s", errstr);
        }
        au->dead = (int64_t)prog.to_read;
        if (!err && !prog.complete)
                err = kd_fail(KDELAY_ERR_TIMED_OUT, errstr, sizeof(errstr),
                              "not all read within %d s",
                              KD_AUDIT_DEAD_BUDGET_MS / 1000);
        size_t n = items.cnt;
        if (!err && n) { /* the copy's id, its nested id, the task's own */
                ids = calloc(3 * n, sizeof(*ids));
                lens = calloc(3 * n, sizeof(*lens));
                fates = calloc(3 * n, sizeof(*fates));
                rid = calloc(3 * n, sizeof(*rid));
                if (!ids || !lens || !fates || !rid)
                        err = kd_fail(KDELAY_ERR_NO_MEMORY, errstr,
                                      sizeof(errstr), "out of memory");
        }
        for (size_t i = 0; !err && i < n; i++) {
                kd_replay_item_id(&items.v[i], rid[i], sizeof(rid[i]));
                kd_replay_item_id_nested(&items.v[i], rid[n + i],
                                         sizeof(rid[n + i]));
                /* malformed: an empty id, which has no fate */
                kd_strlcpy(rid[2 * n + i],
                           items.v[i].valid ? items.v[i].id : "",
                           sizeof(rid[2 * n + i]));
        }
        for (size_t i = 0; !err && i < 3 * n; i++) {
                ids[i] = rid[i];
                lens[i] = strlen(rid[i]);
        }
        if (!err && n && !(err = kd_fate_store_new(&store, conf)))
                err = kd_fate_lookup(store, ids, lens, 3 * n, fates, errstr,
                                     sizeof(errstr));
        if (!err && n)
                kd_replay_pending_read(conf, &pending);
        int64_t replayed = 0, cancelled = 0;
        for (size_t i = 0; !err && i < n; i++) {
                const kd_replay_item_t *it = &items.v[i];
                if (it->valid &&
                    (fates[i] != KDELAY_FATE_UNDECIDED ||
                     fates[n + i] != KDELAY_FATE_UNDECIDED ||
                     kd_replay_pending_find(&pending, rid[i]) ||
                     kd_replay_pending_find(&pending, rid[n + i]))) {
                        replayed++; /* history: not listed */
                        continue;
                }
                int is_cancelled =
                    it->valid && fates[2 * n + i] == KDELAY_FATE_CANCELLED;
                cancelled += is_cancelled;
                dead_row(au, it, is_cancelled ? "cancelled" : "open", &shown);
        }
        if (err) {
                fprintf(stderr,
                        "%s: warning: dead letters not read for replays "
                        "(%s): each counts as a finding\n",
                        au->a->cli->prog, errstr);
        } else {
                au->dead_replayed = replayed < au->dead ? replayed : au->dead;
                au->dead_cancelled = cancelled < au->dead - au->dead_replayed
                                         ? cancelled
                                         : au->dead - au->dead_replayed;
        }
        kd_fate_store_destroy(store);
        free(pending.v);
        free(ids);
        free(lens);
        free(fates);
        free(rid);
        kd_replay_items_clear(&items);
        return KDELAY_OK;
}

static int summary(audit_t *au)
{
        size_t findings =
            au->counts[ROW_PENDING] + au->counts[ROW_UNKNOWN] +
            au->counts[ROW_DELIVERED] + au->counts[ROW_DEAD_LETTERED] -
            au->fixed + au->overdue +
            (au->dead - au->dead_replayed - au->dead_cancelled > 0) +
            au->after_cancel;
        char w[32];
        kdelay_duration_format(au->a->window_ms, w, sizeof(w));
        if (au->json) {
                cJSON *s = cJSON_AddObjectToObject(au->json, "summary");
                cJSON_AddNumberToObject(s, "firing", (double)au->row_cnt);
                for (int v = 0; v < ROW__N; v++)
                        cJSON_AddNumberToObject(s, kd_verdict_names[v],
                                                (double)au->counts[v]);
                cJSON_AddNumberToObject(s, "fixed", (double)au->fixed);
                cJSON_AddBoolToObject(s, "more_firing", au->more_rows);
                cJSON_AddNumberToObject(s, "overdue_partitions",
                                        (double)au->overdue);
                cJSON_AddNumberToObject(s, "dead_letters", (double)au->dead);
                cJSON_AddNumberToObject(s, "dead_replayed",
                                        (double)au->dead_replayed);
                cJSON_AddNumberToObject(s, "dead_cancelled",
                                        (double)au->dead_cancelled);
                cJSON_AddStringToObject(s, "dead_window", w);
                cJSON_AddNumberToObject(s, "fired_after_cancel",
                                        (double)au->after_cancel);
                cJSON_AddNumberToObject(s, "findings", (double)findings);
                kd_ctl_json_write(au->json);
        } else {
                if (au->dead > 0)
                        printf("dead topic=%s records=%lld replayed=%lld "
                               "cancelled=%lld window=%s\n",
                               au->dead_topic, (long long)au->dead,
                               (long long)au->dead_replayed,
                               (long long)au->dead_cancelled, w);
                printf(
                    "summary firing=%zu delivered=%zu fixed=%zu "
                    "pending=%zu unknown=%zu dead_lettered=%zu "
                    "more_firing=%d overdue_partitions=%zu "
                    "dead_letters=%lld dead_replayed=%lld "
                    "dead_cancelled=%lld fired_after_cancel=%zu "
                    "findings=%zu\n",
                    au->row_cnt, au->counts[ROW_DELIVERED], au->fixed,
                    au->counts[ROW_PENDING], au->counts[ROW_UNKNOWN],
                    au->counts[ROW_DEAD_LETTERED], au->more_rows, au->overdue,
                    (long long)au->dead, (long long)au->dead_replayed,
                    (long long)au->dead_cancelled, au->after_cancel, findings);
        }
        return findings ? KD_EXIT_ERROR : KD_EXIT_OK;
}

static int run(audit_args_t *a)
{
        char errstr[512];
        kd_rk_owner_t owner = {a->cli->conf};
        audit_t au = {.a = a};
        kd_conf_dead_topic(a->cli->conf, au.dead_topic, sizeof(au.dead_topic));
        if (a->json && !(au.json = cJSON_CreateObject())) {
                fprintf(stderr, "%s: out of memory\n", a->cli->prog);
                return KD_EXIT_ERROR;
        }
        if (au.json) {
                cJSON_AddArrayToObject(au.json, "firing");
                cJSON_AddArrayToObject(au.json, "overdue");
                cJSON_AddArrayToObject(au.json, "dead");
        }
        kdelay_err_t err = KDELAY_OK;
        au.rk = kd_grouppos_client(&owner, errstr, sizeof(errstr));
        if (!au.rk)
                err = KDELAY_ERR_KAFKA;
        /* The group's position first: a row whose offset it has handled
         * then was surely delivered before the row was read. */
        if (!err)
                err = kd_grouppos_read(au.rk, a->cli->conf, &au.pos, errstr,
                                       sizeof(errstr));
        if (!err)
                err = audit_firing(&au, errstr, sizeof(errstr));
        if (!err)
                err = audit_heads(&au, errstr, sizeof(errstr));
        if (!err)
                err = audit_dead(&au, errstr, sizeof(errstr));
        if (!err)
                err = kd_audit_unclaimed(
                    a->cli->conf, kd_now_ms() - a->window_ms, au.json,
                    au.firing_shown || au.overdue_shown || au.dead > 0,
                    &au.after_cancel, &au.more_after_cancel, errstr,
                    sizeof(errstr));
        int rc;
        if (err) {
                fprintf(stderr, "%s: %s: %s\n", a->cli->prog,
                        kdelay_err_str(err), errstr);
                rc = KD_EXIT_ERROR;
        } else {
                rc = summary(&au);
        }
        if (au.rk) {
                rd_kafka_consumer_close(au.rk);
                rd_kafka_destroy(au.rk);
        }
        kd_grouppos_clear(&au.pos);
        free(au.rows);
        free(au.verdict);
        free(au.reason);
        cJSON_Delete(au.json);
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
