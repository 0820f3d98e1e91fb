/* SPDX-License-Identifier: Apache-2.0 */
/* kdelayctl dead replay: schedules dead-lettered tasks again (replay_run.h).
 *
 * A replayed task gets a new id fixed by its dead letter's place
 * (<id>~replay-<partition>-<offset>, or a hash when that is too long), so
 * a second replay of the same dead letter writes the same task again and
 * the fate table lets only one copy fire: replay is idempotent. A replay
 * of a replay's dead letter replaces the suffix (replay_id.h): the ids do
 * not nest, and stay unique, each dead letter having its own place. The
 * id earlier releases gave (nested) is looked up as well, so a dead
 * letter they replayed is not replayed again. The new record carries
 * kdelay-replay-of: <id>. The old id keeps its fate (DEAD, or none for a
 * task dead-lettered before any claim). */
#include "replay_run.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kd_client.h"
#include "kd_util.h"
#include "replay_answer.h"
#include "replay_pending.h"
#include "replay_target.h"

/* Schedules item again under new_id, due at fire_at_ms. */
static kdelay_err_t reschedule(kdelay_client_t *c, const kd_replay_item_t *it,
                               const char *new_id, int64_t fire_at_ms,
                               char *errstr, size_t errstr_size)
{
        kdelay_header_t *h; /* owned: points into it->user_hdrs */
        size_t nh;
        if (kd_client_headers_array(it->user_hdrs, &h, &nh))
                return kd_fail(KDELAY_ERR_NO_MEMORY, errstr, errstr_size,
                               "out of memory");
        kdelay_task_t t;
        kdelay_task_init(&t);
        t.topic = it->target;
        t.id = new_id;
        t.key = it->key;
        t.key_len = it->key_len;
        t.value = it->value;
        t.value_len = it->value_len;
        t.headers = h;
        t.header_cnt = nh;
        t.fire_at_ms = fire_at_ms;
        char out[KDELAY_ID_MAX + 1];
        kdelay_err_t err =
            kd_client_schedule_from(c, &t, KDELAY_HDR_REPLAY_OF, it->id, out,
                                    sizeof(out), errstr, errstr_size);
        free(h);
        return err;
}

int kd_replay_run(kdelay_client_t *c, const kd_replay_items_t *r,
                  int64_t fire_at_ms, int dry_run, int json,
                  kd_replay_counts_t *counts)
{
        memset(counts, 0, sizeof(*counts));
        kd_replay_pendings_t pending;
        kd_replay_pending_read(kd_client_conf(c), &pending);
        kd_replay_targets_t targets;
        if (kd_replay_targets_describe(kd_client_conf(c), r, &targets)) {
                fprintf(stderr, "kdelayctl dead replay: out of memory\n");
                free(pending.v);
                return -1;
        }
        for (size_t i = 0; i < r->cnt; i++) {
                const kd_replay_item_t *it = &r->v[i];
                char new_id[KDELAY_ID_MAX + 32], why[600];
                if (!it->valid || !kd_replay_reason_fixable(it->reason)) {
                        snprintf(why, sizeof(why),
                                 "%s is not a reason a replay can fix%s",
                                 it->reason,
                                 it->valid ? "" : " (the record is malformed)");
                        kd_replay_answer(json, it, "REFUSED", NULL, why, NULL);
                        counts->refused++;
                        continue;
                }
                char old_id[KDELAY_ID_MAX + 32];
                kd_replay_item_id(it, new_id, sizeof(new_id));
                kd_replay_item_id_nested(it, old_id, sizeof(old_id));
                /* The copy an earlier release made (nested id) counts. */
                int nested = strcmp(old_id, new_id) != 0;
                const char *ids[3] = {it->id, new_id, old_id};
                size_t lens[3] = {strlen(it->id), strlen(new_id),
                                  strlen(old_id)};
                kdelay_fate_t fates[3];
                kdelay_err_t err = kd_client_fate_lookup(
                    c, ids, lens, nested ? 3 : 2, fates, why, sizeof(why));
                if (err) {
                        kd_replay_answer(json, it, "ERROR", NULL, why, NULL);
                        counts->errors++;
                        continue;
                }
                /* The task itself must not be decided otherwise. */
                if (fates[0] != KDELAY_FATE_UNDECIDED &&
                    fates[0] != KDELAY_FATE_DEAD) {
                        snprintf(why, sizeof(why), "its fate is %s",
                                 kdelay_fate_str(fates[0]));
                        kd_replay_answer(json, it, "SKIPPED", NULL, why, NULL);
                        counts->skipped++;
                        continue;
                }
                /* Replayed before: its copy fired, fires or was cancelled. */
                int before =
                    fates[1] != KDELAY_FATE_UNDECIDED
                        ? 1
                        : (nested && fates[2] != KDELAY_FATE_UNDECIDED ? 2 : 0);
                if (before) {
                        snprintf(why, sizeof(why), "replayed before: %s",
                                 kdelay_fate_str(fates[before]));
                        kd_replay_answer(json, it, "SKIPPED", ids[before], why,
                                         NULL);
                        counts->skipped++;
                        continue;
                }
                /* Replayed before, its copy not due or not fired yet. */
                const kd_replay_pending_t *pr =
                    kd_replay_pending_find(&pending, new_id);
                if (!pr && nested)
                        pr = kd_replay_pending_find(&pending, old_id);
                if (pr) {
                        snprintf(why, sizeof(why),
                                 "replayed before: pending in %s",
                                 pr->tier_topic);
                        kd_replay_answer(json, it, "SKIPPED", pr->id, why,
                                         NULL);
                        counts->skipped++;
                        continue;
                }
                /* Would the target refuse it as it did? Then not now. */
                kd_replay_check_t chk = {0};
                const kd_target_info_t *ti =
                    kd_replay_targets_find(&targets, it->target);
                if (ti)
                        kd_replay_target_check(ti, it, new_id, &chk, why,
                                               sizeof(why));
                else
                        why[0] = '\0';
                const char *note = why[0] ? why : NULL;
                if (chk.failure) {
                        kd_replay_answer(json, it,
                                         dry_run ? "WOULD_FAIL" : "REFUSED",
                                         NULL, why, &chk);
                        counts->refused++;
                        counts->target_refused++;
                        continue;
                }
                if (dry_run) {
                        kd_replay_answer(json, it, "WOULD_REPLAY", new_id, note,
                                         &chk);
                        counts->replayed++;
                        continue;
                }
                char note_buf[600];
                kd_strlcpy(note_buf, why, sizeof(note_buf));
                err = reschedule(c, it, new_id, fire_at_ms, why, sizeof(why));
                if (err) {
                        kd_replay_answer(json, it, "ERROR", new_id, why, &chk);
                        counts->errors++;
                        continue;
                }
                kd_replay_answer(json, it, "REPLAYED", new_id,
                                 note ? note_buf : NULL, &chk);
                counts->replayed++;
        }
        free(targets.v);
        free(pending.v);
        return 0;
}
