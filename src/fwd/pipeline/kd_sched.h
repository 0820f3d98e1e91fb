/* SPDX-License-Identifier: Apache-2.0 */
/* Schedule stage: for a partition's backlog head, the hold/hop decision —
 * wait (not due in its tier yet), dead-letter (malformed), hop (due later
 * than the hold horizon), or hold in memory with a timer that claims it
 * claim_ahead before its fire time. */
#ifndef KD_SCHED_H
#define KD_SCHED_H

#include "core/kd_fwd_core.h"

typedef enum kd_sched {
        KD_SCHED_WAIT,  /* not due: pause the partition until *wake_at */
        KD_SCHED_FULL,  /* no room in the held set: pause until room
                           appears (a drain starts, kd_held.h) */
        KD_SCHED_SPAN,  /* the mode's own bound (exactly_once's span of
                           open offsets, this partition's), or the out
                           bound of the tasks sent back for their turns
                           (kd_held_limited_out_full): pause
                           this partition until it is down to half, no
                           drain */
        KD_SCHED_DEAD,  /* malformed: to the dead-letter topic */
        KD_SCHED_HOP,   /* to a smaller tier */
        KD_SCHED_DEFER, /* its target's rate limit holds its share of the
                           held set: to a tier with its turn
                           (kdelay-not-before, kd_pace_defer) */
        KD_SCHED_HOLD   /* into the held set */
} kd_sched_t;

/* What to do with t, the backlog head of p, at wall time now. Decides
 * only (f is not const: a rule's share of the rate is worked out at each
 * use, kd_pace.h); *wake_at (wall ms) is set for KD_SCHED_WAIT. A task to
 * a limited target is held only within its rule's horizon and share
 * (kd_pace_horizon, kd_pace_share_full). The held set's
 * bounds are halved while it drains (kd_held.h); low: p is paused for the
 * mode's own bound (exactly_once's span of open offsets, the partition's
 * alone), and its head goes on only once that is down to half, for the
 * same reason. */
kd_sched_t kd_sched_decide(kd_fwd_t *f, const kd_part_t *p, const kd_task_t *t,
                           int64_t now, int low, int64_t *wake_at);
/* Carries out a decision other than WAIT/FULL for t, which its caller has
 * taken off the backlog. */
void kd_sched_take(kd_fwd_t *f, kd_task_t *t, kd_sched_t what);

#endif
