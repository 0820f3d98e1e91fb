/* The held set's accounting: tasks kept in memory until due, bounded by
 * forwarder.max_held and forwarder.max_held_bytes. Every stage that lets a
 * task go updates it; a shrinking set calls the room hook. */
#ifndef KD_HELD_H
#define KD_HELD_H

#include "kd_fwd_state.h"

void kd_held_add(kd_fwd_t *f, kd_task_t *t);
/* Counts t, about to be hopped or dead-lettered, as "out" until it is
 * released: a tier or dead-letter topic that keeps failing then fills the
 * out share and pauses partitions instead of pulling them into memory. */
void kd_held_add_out(kd_fwd_t *f, kd_task_t *t);
/* Takes t out of the held set or the out share, whichever it is in. */
void kd_held_remove(kd_fwd_t *f, kd_task_t *t);
/* 1 when t does not fit into the held set now (held and out together
 * within max_held and max_held_bytes); low (a partition paused for room,
 * kd_sched_decide): also while the set is above half the limits. */
int kd_held_full(const kd_fwd_t *f, const kd_task_t *t, int low);
/* 1 when t does not fit into the out share now: a quarter of the limits
 * (one task always fits into an empty share); low: also while the share
 * is above half of that. */
int kd_held_out_full(const kd_fwd_t *f, const kd_task_t *t, int low);

#endif
