/* SPDX-License-Identifier: Apache-2.0 */
/* kdelayctl dead replay, the target check: each target described once,
 * then each replay judged against its target's description (the topic
 * missing, compacted and the record keyless, or the record larger than
 * its max.message.bytes: the broker would refuse it as it did). */
#ifndef REPLAY_TARGET_H
#define REPLAY_TARGET_H

#include <stddef.h>

#include <kdelay/kdelay.h>

#include "kd_topics.h"
#include "replay_items.h"

/* What the target check found for an item (NULL: not checked). */
typedef struct kd_replay_check {
        const kd_target_info_t *ti; /* the target's description */
        size_t size;                /* the fired record's size, at most */
        const char *failure;        /* "target-missing", "needs-key",
                                       "too-large"; NULL when none */
} kd_replay_check_t;

/* The distinct targets of the items a replay may schedule, described. */
typedef struct kd_replay_targets {
        kd_target_info_t *v; /* owned: free() it */
        size_t cnt;
} kd_replay_targets_t;

/* Describes each target of r's replayable items (valid, their reason
 * fixable) once, through an admin client of conf; -1 when out of memory.
 * What cannot be read is left unknown in the entries (said on stderr). */
int kd_replay_targets_describe(const kdelay_conf_t *conf,
                               const kd_replay_items_t *r,
                               kd_replay_targets_t *t);
/* The description of target name, or NULL. */
const kd_target_info_t *kd_replay_targets_find(const kd_replay_targets_t *t,
                                               const char *name);

/* Judges item's replay new_id against its target's description ti: k's
 * failure is set when the broker would refuse it the way it was refused
 * (why says how); without a failure, why notes what could not be checked
 * ("" when everything was). */
void kd_replay_target_check(const kd_target_info_t *ti,
                            const kd_replay_item_t *it, const char *new_id,
                            kd_replay_check_t *k, char *why, size_t why_size);

#endif
