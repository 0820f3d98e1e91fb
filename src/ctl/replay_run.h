/* SPDX-License-Identifier: Apache-2.0 */
/* kdelayctl dead replay: dead-lettered tasks scheduled again, once. The
 * run judges each dead letter in turn, on the files below it: the dead
 * letters copied out of the scan and their ids (replay_items), the copies
 * replayed before and still pending (replay_pending), the target check
 * (replay_target) and the answer printed (replay_answer). */
#ifndef REPLAY_RUN_H
#define REPLAY_RUN_H

#include <stddef.h>
#include <stdint.h>

#include <kdelay/kdelay.h>

#include "replay_items.h"

typedef struct kd_replay_counts {
        size_t replayed;       /* or would be, in a dry run */
        size_t skipped;        /* decided otherwise, or replayed before */
        size_t refused;        /* malformed, a reason no replay fixes, or the
                                  target would refuse it (WOULD_FAIL) */
        size_t target_refused; /* of refused: by the target check */
        size_t errors;
} kd_replay_counts_t;

/* Replays each item of r through c, due at fire_at_ms: an answer per item
 * on stdout (a line "ID RESULT [NEW_ID] [WHY]", or a JSON object), the
 * totals in *counts. Each target is described once first (an admin
 * client of c's conf): an item its target would refuse as it did (the topic
 * missing, compacted and the record keyless, or the record larger than its
 * max.message.bytes) is not replayed: WOULD_FAIL in a dry run, REFUSED
 * otherwise. What cannot be read is not checked, and the answer says so.
 * 0, or -1 when out of memory (nothing done). */
int kd_replay_run(kdelay_client_t *c, const kd_replay_items_t *r,
                  int64_t fire_at_ms, int dry_run, int json,
                  kd_replay_counts_t *counts);

#endif
