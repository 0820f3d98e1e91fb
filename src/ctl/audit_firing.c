/* SPDX-License-Identifier: Apache-2.0 */
/* kdelayctl audit: the stuck claims (audit_firing.h). */
#include "audit_firing.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "audit.h"
#include "audit_dead_from.h"
#include "ctl_time.h"
#include "kd_fate.h"
#include "kd_log.h"
#include "kd_scan.h"
#include "kd_util.h"
#include "kd_wire.h"

static const char *const kd_verdict_names[KD_AUDIT_VERDICT__N] = {
    "delivered", "pending", "unknown", "dead_lettered"};

const char *kd_audit_verdict_name(kd_audit_verdict_t v)
{
        return kd_verdict_names[v];
}

typedef struct firing_audit {
        const kd_cli_t *cli;
        const kd_grouppos_t *pos;
        int fix;
        kd_fate_firing_t *rows;                 /* owned */
        kd_audit_verdict_t *verdict;            /* owned, per row */
        char (*reason)[KD_FATE_REASON_MAX + 1]; /* owned, per row: the
                                                   dead letter's reason */
        size_t row_cnt;
        kd_audit_firing_counts_t *counts;
} firing_audit_t;

static kd_audit_verdict_t judge(const firing_audit_t *au,
                                const kd_fate_firing_t *r)
{
        if (!r->src_topic[0])
                return KD_AUDIT_UNKNOWN;
        const kd_grouppos_part_t *p =
            kd_grouppos_find(au->pos, r->src_topic, r->src_partition);
        if (!p)
                return KD_AUDIT_UNKNOWN;
        return kd_grouppos_handled(p, r->src_offset) ? KD_AUDIT_DELIVERED
                                                     : KD_AUDIT_PENDING;
}

/* Marks the dead-lettered rows DEAD with their dead letter's reason. */
static kdelay_err_t fix_dead_rows(firing_audit_t *au, kd_fate_store_t *store,
                                  char *errstr, size_t errstr_size)
{
        for (size_t i = 0; i < au->row_cnt; i++) {
                if (au->verdict[i] != KD_AUDIT_DEAD_LETTERED)
                        continue;
                const char *id = au->rows[i].id;
                size_t len = au->rows[i].id_len;
                kdelay_err_t err = kd_fate_mark_dead(
                    store, &id, &len, 1, au->reason[i], errstr, errstr_size);
                if (err)
                        return err;
                au->counts->fixed++;
        }
        return KDELAY_OK;
}

/* Marks the delivered rows FIRED, a claim batch at a time, and the
 * dead-lettered ones DEAD. */
static kdelay_err_t fix_rows(firing_audit_t *au, kd_fate_store_t *store,
                             char *errstr, size_t errstr_size)
{
        kdelay_err_t derr = fix_dead_rows(au, store, errstr, errstr_size);
        if (derr)
                return derr;
        const char *ids[500];
        size_t lens[500], n = 0;
        for (size_t i = 0; i <= au->row_cnt; i++) {
                if (i < au->row_cnt && au->verdict[i] == KD_AUDIT_DELIVERED) {
                        ids[n] = au->rows[i].id;
                        lens[n++] = au->rows[i].id_len;
                }
                if (n == 500 || (i == au->row_cnt && n)) {
                        kdelay_err_t err = kd_fate_mark_fired(
                            store, ids, lens, n, errstr, errstr_size);
                        if (err)
                                return err;
                        au->counts->fixed += n;
                        n = 0;
                }
        }
        return KDELAY_OK;
}

#define FIRING_COLUMNS "%-36s %-13s %-8s %-24s %-24s "

/* Row i in the table, or in rows_json; -1 when out of memory. */
static int report_row(const firing_audit_t *au, size_t i, cJSON *rows_json)
{
        const kd_fate_firing_t *r = &au->rows[i];
        const char *v = kd_audit_verdict_name(au->verdict[i]);
        int fixable = au->verdict[i] == KD_AUDIT_DELIVERED ||
                      au->verdict[i] == KD_AUDIT_DEAD_LETTERED;
        const char *done =
            fixable ? (au->fix ? "fixed" : "fixable") : "reported";
        if (rows_json) {
                cJSON *o = kd_audit_json_row(rows_json);
                if (!o)
                        return -1;
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
                return 0;
        }
        char t[40], q[KD_LOG_QUOTED_MAX(KDELAY_ID_MAX)];
        char qo[KD_LOG_QUOTED_MAX(KD_FATE_OWNER_MAX)];
        printf(FIRING_COLUMNS "%s/%d/%lld\n", kd_log_quote(r->id, q, sizeof(q)),
               v, done,
               r->owner[0] ? kd_log_quote(r->owner, qo, sizeof(qo)) : "-",
               kd_ctl_time_format(r->updated_at_ms, t, sizeof(t)),
               r->src_topic[0] ? r->src_topic : "-", (int)r->src_partition,
               (long long)r->src_offset);
        return 0;
}

/* The delivered rows by id (sorted indexes into au->rows), for the dead
 * letters to find theirs. */
typedef struct dead_match {
        firing_audit_t *au;
        size_t *idx; /* owned */
        size_t n;
} dead_match_t;

static const firing_audit_t *sort_au; /* qsort has no context argument */

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
                        m->au->verdict[i] = KD_AUDIT_DEAD_LETTERED;
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
 * finish leaves them `unknown` (said on stderr). */
static kdelay_err_t find_dead_letters(firing_audit_t *au, char *errstr,
                                      size_t errstr_size)
{
        dead_match_t m = {au, malloc(au->row_cnt * sizeof(size_t) + 1), 0};
        int64_t since = INT64_MAX;
        if (!m.idx)
                return kd_fail(KDELAY_ERR_NO_MEMORY, errstr, errstr_size,
                               "out of memory");
        for (size_t i = 0; i < au->row_cnt; i++)
                if (au->verdict[i] == KD_AUDIT_DELIVERED) {
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
                err = kd_scan_dead(au->cli->conf, since, &opts, on_dead_letter,
                                   &m, &prog, errstr, errstr_size);
        }
        if (m.n && (err || !prog.complete) && err != KDELAY_ERR_NO_MEMORY) {
                /* Not fatal, but a row whose dead letter may be in what
                 * was not read is not known to be delivered: `unknown`,
                 * which --fix leaves alone (marked FIRED, a dead-lettered
                 * task would say it was delivered). */
                size_t left = 0;
                for (size_t k = 0; k < m.n; k++)
                        if (au->verdict[m.idx[k]] == KD_AUDIT_DELIVERED) {
                                au->verdict[m.idx[k]] = KD_AUDIT_UNKNOWN;
                                left++;
                        }
                fprintf(stderr,
                        "%s: warning: dead letters %s: %zu row(s) that "
                        "looked delivered are reported unknown (not "
                        "fixed); run the audit again, or with "
                        "--older-than to take fewer rows\n",
                        au->cli->prog,
                        err ? errstr : "not all read within the budget", left);
                err = KDELAY_OK;
        }
        free(m.idx);
        return err;
}

/* Reads, judges, fixes and reports the rows (kd_audit_firing). */
static kdelay_err_t audit_rows(firing_audit_t *au, int64_t older_ms,
                               cJSON *rows_json, char *errstr,
                               size_t errstr_size)
{
        kd_fate_store_t *store = NULL;
        kdelay_err_t err = kd_fate_store_new(&store, au->cli->conf);
        if (err)
                return kd_fail(err, errstr, errstr_size,
                               "cannot create the fate store");
        au->rows = calloc(KD_AUDIT_FIRING_MAX, sizeof(*au->rows));
        au->verdict = calloc(KD_AUDIT_FIRING_MAX, sizeof(*au->verdict));
        au->reason = calloc(KD_AUDIT_FIRING_MAX, sizeof(*au->reason));
        if (!au->rows || !au->verdict || !au->reason)
                err = kd_fail(KDELAY_ERR_NO_MEMORY, errstr, errstr_size,
                              "out of memory");
        /* Rows stamped ahead of this clock by more than the bound come
         * from a claimer whose clock ran ahead: their age is unknown, so
         * they are audited too (the verdict does not depend on it). */
        int64_t now = kd_now_ms();
        if (!err)
                err = kd_fate_firing(
                    store, older_ms ? now - older_ms : INT64_MAX,
                    older_ms ? now + older_ms : INT64_MAX, au->rows,
                    KD_AUDIT_FIRING_MAX, &au->row_cnt, errstr, errstr_size);
        au->counts->rows = au->row_cnt;
        au->counts->more = au->row_cnt == KD_AUDIT_FIRING_MAX;
        for (size_t i = 0; !err && i < au->row_cnt; i++)
                au->verdict[i] = judge(au, &au->rows[i]);
        if (!err)
                err = find_dead_letters(au, errstr, errstr_size);
        for (size_t i = 0; !err && i < au->row_cnt; i++)
                au->counts->verdicts[au->verdict[i]]++;
        if (!err && au->fix)
                err = fix_rows(au, store, errstr, errstr_size);
        if (!err && !rows_json && au->row_cnt > 0)
                kd_audit_table_start(0, FIRING_COLUMNS "%s\n", "FIRING_ID",
                                     "VERDICT", "ACTION", "OWNER", "UPDATED",
                                     "SOURCE");
        for (size_t i = 0; !err && i < au->row_cnt; i++)
                if (report_row(au, i, rows_json))
                        err = kd_fail(KDELAY_ERR_NO_MEMORY, errstr, errstr_size,
                                      "out of memory");
        kd_fate_store_destroy(store);
        return err;
}

kdelay_err_t kd_audit_firing(const kd_cli_t *cli, const kd_grouppos_t *pos,
                             int64_t older_ms, int fix, cJSON *rows_json,
                             kd_audit_firing_counts_t *counts, char *errstr,
                             size_t errstr_size)
{
        firing_audit_t au = {
            .cli = cli, .pos = pos, .fix = fix, .counts = counts};
        *counts = (kd_audit_firing_counts_t){0};
        kdelay_err_t err =
            audit_rows(&au, older_ms, rows_json, errstr, errstr_size);
        free(au.rows);
        free(au.verdict);
        free(au.reason);
        return err;
}
