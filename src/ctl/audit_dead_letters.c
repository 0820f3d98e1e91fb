/* SPDX-License-Identifier: Apache-2.0 */
/* kdelayctl audit: the dead letters of the window (audit_dead_letters.h). */
#include "audit_dead_letters.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "audit.h"
#include "ctl_scan.h"
#include "kd_fate.h"
#include "kd_log.h"
#include "kd_scan.h"
#include "kd_util.h"
#include "replay_items.h"
#include "replay_pending.h"

#define DEAD_COLUMNS "%-40s %-9s %-24s "

static int dead_item_cb(const kd_scan_rec_t *r, void *opaque)
{
        char reason[40];
        kd_ctl_dead_reason(r, reason, sizeof(reason));
        return kd_replay_items_add(opaque, r, reason) ? -1 : 0;
}

/* One dead letter not replayed: state "open" (a finding) or "cancelled"
 * (its task's fate is CANCELLED: nothing to act on), in the table (the
 * first after its header) or in rows_json; -1 when out of memory. */
static int dead_row(const kd_replay_item_t *it, const char *state,
                    const char *dead_topic, cJSON *rows_json, int first,
                    int shown_before)
{
        char q[KD_LOG_QUOTED_MAX(KDELAY_ID_MAX)];
        if (rows_json) {
                cJSON *o = kd_audit_json_row(rows_json);
                if (!o)
                        return -1;
                cJSON_AddStringToObject(o, "id", it->valid ? it->id : "");
                cJSON_AddStringToObject(o, "state", state);
                cJSON_AddStringToObject(o, "reason", it->reason);
                cJSON_AddNumberToObject(o, "partition", it->partition);
                cJSON_AddNumberToObject(o, "offset", (double)it->offset);
                return 0;
        }
        if (first)
                kd_audit_table_start(shown_before, DEAD_COLUMNS "%s\n",
                                     "DEAD_ID", "STATE", "REASON", "SOURCE");
        printf(DEAD_COLUMNS "%s/%d/%lld\n",
               it->valid ? kd_log_quote(it->id, q, sizeof(q)) : "-", state,
               it->reason[0] ? it->reason : "-", dead_topic, (int)it->partition,
               (long long)it->offset);
        return 0;
}

kdelay_err_t kd_audit_dead_letters(const kd_cli_t *cli, int64_t since_ms,
                                   const char *dead_topic, cJSON *rows_json,
                                   int shown_before,
                                   kd_audit_dead_counts_t *counts,
                                   char *errstr_out, size_t errstr_out_size)
{
        const kdelay_conf_t *conf = cli->conf;
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
        size_t shown = 0;
        int oom = 0; /* a row not added to rows_json */
        *counts = (kd_audit_dead_counts_t){0};
        kdelay_err_t err = kd_scan_dead(conf, since_ms, &opts, dead_item_cb,
                                        &items, &prog, errstr, sizeof(errstr));
        if (!prog.counted) {
                kd_replay_items_clear(&items);
                return kd_fail(err ? err : KDELAY_ERR_KAFKA, errstr_out,
                               errstr_out_size, "%s", errstr);
        }
        counts->records = (int64_t)prog.to_read;
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
        for (size_t i = 0; !err && !oom && i < n; i++) {
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
                oom = dead_row(it, is_cancelled ? "cancelled" : "open",
                               dead_topic, rows_json, !shown++, shown_before);
        }
        if (err) {
                fprintf(stderr,
                        "%s: warning: dead letters not read for replays "
                        "(%s): each counts as a finding\n",
                        cli->prog, errstr);
        } else {
                int64_t dead = counts->records;
                counts->replayed = replayed < dead ? replayed : dead;
                counts->cancelled = cancelled < dead - counts->replayed
                                        ? cancelled
                                        : dead - counts->replayed;
        }
        kd_fate_store_destroy(store);
        free(pending.v);
        free(ids);
        free(lens);
        free(fates);
        free(rid);
        kd_replay_items_clear(&items);
        if (oom)
                return kd_fail(KDELAY_ERR_NO_MEMORY, errstr_out,
                               errstr_out_size, "out of memory");
        return KDELAY_OK;
}
