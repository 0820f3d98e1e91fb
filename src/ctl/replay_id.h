/* SPDX-License-Identifier: Apache-2.0 */
/* The id of a replayed task (kdelayctl dead replay), fixed by its dead
 * letter's place. */
#ifndef KD_REPLAY_ID_H
#define KD_REPLAY_ID_H

#include <stddef.h>
#include <stdint.h>

/* The length of id without a trailing "~replay-<partition>-<offset>" (a
 * replay's suffix); strlen(id) when it has none. */
size_t kd_replay_stem_len(const char *id);

/* The id of the replay of the dead letter of task id at partition and
 * offset of the dead-letter topic: id's stem (kd_replay_stem_len: a
 * replay of a replay replaces the suffix, the ids do not nest) followed
 * by "~replay-<partition>-<offset>", or, when that exceeds KDELAY_ID_MAX,
 * "replay-<hash of the stem>" followed by it. The same dead letter always
 * gives the same id, and two dead letters never one (their places
 * differ). buf: KDELAY_ID_MAX + 1 bytes suffice. */
void kd_replay_id(const char *id, int32_t partition, int64_t offset, char *buf,
                  size_t size);

/* The id earlier releases' replay gave it: the suffix appended to the whole
 * id (nested), a hash of the whole id when too long. A replay looks it up
 * too, so that a dead letter replayed before the upgrade is not replayed
 * again. */
void kd_replay_id_nested(const char *id, int32_t partition, int64_t offset,
                         char *buf, size_t size);

#endif
