/* SPDX-License-Identifier: Apache-2.0 */
/* The held set's accounting: tasks kept in memory until due, bounded by
 * forwarder.max_held and forwarder.max_held_bytes. Every stage that lets a
 * task go updates it; a shrinking set calls the room hook. */
#ifndef KD_HELD_H
#define KD_HELD_H

#include "core/kd_fwd_core.h"

void kd_held_add(kd_fwd_t *f, kd_task_t *t);
/* Counts t, about to be hopped or dead-lettered, as "out" until it is
 * released: a tier or dead-letter topic that keeps failing then fills the
 * out share and pauses partitions instead of pulling them into memory. */
void kd_held_add_out(kd_fwd_t *f, kd_task_t *t);
/* Takes t out of the held set or the out share, whichever it is in. */
void kd_held_remove(kd_fwd_t *f, kd_task_t *t);

/* The shares of the rate-limited targets. A task held with t->held_rule
 * set (its forwarder.target_rate_limits rule + 1) counts in its rule's
 * share until it leaves the held set. 1 when t does not fit into rule's
 * share now: cap tasks of the rule (the pacing stage's, kd_pace.h), an
 * eighth of max_held_bytes; nor into all rules' together: half of
 * max_held (at least one) and of max_held_bytes. A rule's first task
 * always fits (its share empty), whatever its size: it is never sent
 * back for ever. The rest of the held set is for the tasks of other
 * targets and the out share (kd_held_out_full), which the tasks sent
 * back count in too. */
int kd_held_share_full(const kd_fwd_t *f, const kd_task_t *t, unsigned rule,
                       size_t cap);
/* 1 when t, to be sent back for its turn (kd_pace_defer), does not fit
 * into the out bound of the tasks sent back (all rules' together): a
 * quarter of max_held and of max_held_bytes (one always fits when none is
 * out); low: also while they are above half of that. Their own bound,
 * apart from the out share of the other targets' hops and dead letters
 * (kd_held_out_full): a mass send-back pauses only the partitions it is
 * read from until its hops settle (kd_sched.h: KD_SCHED_SPAN), without a
 * drain for every partition. A task sent back with t->held_rule set
 * counts in it until it is released. */
int kd_held_limited_out_full(const kd_fwd_t *f, const kd_task_t *t, int low);
/* Tasks of rule (an index of the rules) held now. */
size_t kd_held_share(const kd_fwd_t *f, unsigned rule);
/* 1 when t does not fit into the held set now (held and out together
 * within max_held and max_held_bytes); low (draining, kd_held_low): also
 * while the set is above half the limits. */
int kd_held_full(const kd_fwd_t *f, const kd_task_t *t, int low);
/* 1 when t does not fit into the out share now: a quarter of the limits
 * (one task always fits into an empty share); low: also while the share
 * is above half of that. The tasks sent back for their turns do not count
 * in it (kd_held_share_out_full), only in the held set's own bound
 * (kd_held_full). */
int kd_held_out_full(const kd_fwd_t *f, const kd_task_t *t, int low);

/* The low-water mark. A partition paused for room starts a drain: for
 * up to KD_HELD_DRAIN_MS, or until the set (and the out share) is down to
 * half, every partition takes tasks only below half the limits. Resumed at
 * each free slot instead, partitions filled the set and paused again
 * within one fetch, 20 times a second in a catch-up, and each pause drops
 * what the consumer had fetched ahead for the partition, which it fetches
 * again on resume (a drain fetched its records nine times over). Every
 * partition waits alike, so none is starved by the others' traffic, and
 * for at most KD_HELD_DRAIN_MS: a task is read at most that much later
 * than at the first free slot. */
#define KD_HELD_DRAIN_MS 1000
/* Starts a drain unless one is on or the set is at half already; its
 * timer (held.drain_end) ends it at now_mono + KD_HELD_DRAIN_MS and calls
 * the room hook. -1 when the timer cannot be armed (out of memory; no
 * drain then), else 0. */
int kd_held_drain(kd_fwd_t *f, int64_t now_mono);
/* 1 while a drain is on (no clock read: its end is a timer). */
int kd_held_low(const kd_fwd_t *f);
/* Tasks in the held set. */
size_t kd_held_count(const kd_fwd_t *f);

/* The "behind" signal (kd_behind.h, f->behind): something due (a fire
 * going out, the claim queue's head) is late_ms past its due time, noted
 * with the held set's fill (at or above half; full: a drain is on, a
 * partition paused for room). A change is logged (event=backlog).
 * kd_held_behind: 1 while behind. */
void kd_held_note_late(kd_fwd_t *f, int64_t late_ms);
int kd_held_behind(const kd_fwd_t *f);

#endif
