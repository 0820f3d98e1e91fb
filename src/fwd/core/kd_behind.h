/* SPDX-License-Identifier: Apache-2.0 */
/* The forwarder's "behind" signal (docs/forwarder.md, "Batches that grow
 * with a backlog"): on while tasks already due wait, off while fires go
 * out on time. Pure: fed with what the stages see (a fire's lateness, the
 * claim queue's head, the held set's fill), read with a monotonic time;
 * no clock of its own. Hysteresis keeps it from flapping: on when
 * something due waits more than KD_BEHIND_MS, or the held set is full
 * while something due waits; off only when something is less than
 * KD_BEHIND_CLEAR_MS late with the held set under half and nothing was
 * KD_BEHIND_CLEAR_MS late or more for KD_BEHIND_CALM_MS (tasks of several
 * partitions go out interleaved: one on time among late ones proves
 * nothing), or when no sign of lateness came for KD_BEHIND_STALE_MS
 * (nothing due waits: the backlog is gone, or the forwarder is idle).
 * Between the two thresholds it stays as it was. */
#ifndef KD_BEHIND_H
#define KD_BEHIND_H

#include <stdint.h>

#define KD_BEHIND_MS       100
#define KD_BEHIND_CLEAR_MS 20
#define KD_BEHIND_CALM_MS  250
#define KD_BEHIND_STALE_MS 2000

typedef struct kd_behind {
        int on;
        int64_t seen_mono; /* the last sign of lateness while on */
        uint64_t turns_on; /* how often it came on */
} kd_behind_t;

/* What a stage saw at mono: something due (a fire going out, the claim
 * queue's head) late_ms past its due time (negative: not yet due);
 * held_half: the held set at or above half its limits; held_full: full
 * (partitions paused for room). Returns 1 when the signal came on, -1
 * when it went off, else 0 (for a log line per change). */
int kd_behind_note(kd_behind_t *b, int64_t mono, int64_t late_ms, int held_half,
                   int held_full);

/* 1 while behind at mono (a signal on but stale reads off). */
int kd_behind_on(const kd_behind_t *b, int64_t mono);

#endif
