/* SPDX-License-Identifier: Apache-2.0 */
/* Schedule stage (kd_sched.h). Owns no state of its own: the held set is
 * accounted in held.c, the timers are the task's. Calls downstream: the
 * claim stage (hold timers), the fire stage (hops, dead letters), the
 * mode (admission). */
#include "kd_pipeline_state.h"
#include "kd_sched.h"

#include <assert.h>

#include "core/kd_mode_ops.h"
#include "kd_claim.h"
#include "kd_fire.h"
#include "kd_held.h"
#include "kd_lifecycle.h"
#include "kd_pace.h"
#include "kd_path.h"

kd_sched_t kd_sched_decide(kd_fwd_t *f, const kd_part_t *p, const kd_task_t *t,
                           int64_t now, int low, int64_t *wake_at)
{
        const kdelay_conf_t *c = f->conf;
        /* Draining (kd_held.h): every partition waits for half. */
        int held_low = kd_held_low(f);
        if (t->dead_reason)
                return kd_held_out_full(f, t, held_low) ? KD_SCHED_FULL
                                                        : KD_SCHED_DEAD;
        /* A limited target's task is held only within its rule's horizon
         * (kd_pace.h): further from its turn it is read and hops like
         * any task beyond the hold horizon. */
        int rule = kd_pace_rule(t);
        int64_t horizon =
            rule < 0 ? c->fwd_hold_horizon_ms : kd_pace_horizon(f, rule);
        int64_t due = kd_path_due(kd_task_due_at(t), t->rec.append_ms,
                                  p->tier_ms, horizon);
        if (due - c->fwd_lookahead_ms > now) {
                *wake_at = due - c->fwd_lookahead_ms;
                return KD_SCHED_WAIT;
        }
        if (f->mode->admit && !f->mode->admit(&f->mode_ctx, p, t, low))
                return KD_SCHED_SPAN;
        if (kd_path_hops(kd_task_due_at(t), now, horizon, c->fwd_lookahead_ms))
                return kd_held_out_full(f, t, held_low) ? KD_SCHED_FULL
                                                        : KD_SCHED_HOP;
        /* Its rule's share is full: back to Kafka with a turn, whatever
         * room the held set has for other targets, counted in the out
         * bound of the tasks sent back (kd_held.h); while that is full
         * only this partition waits, for their hops to settle (no drain:
         * the other partitions go on). */
        if (rule >= 0 && kd_pace_share_full(f, t, rule)) {
                if (kd_held_full(f, t, held_low))
                        return KD_SCHED_FULL;
                return kd_held_limited_out_full(f, t, low) ? KD_SCHED_SPAN
                                                           : KD_SCHED_DEFER;
        }
        return kd_held_full(f, t, held_low) ? KD_SCHED_FULL : KD_SCHED_HOLD;
}

void kd_sched_take(kd_fwd_t *f, kd_task_t *t, kd_sched_t what)
{
        int rule = kd_pace_rule(t);
        switch (what) {
        case KD_SCHED_DEAD:
                kd_held_add_out(f, t);
                kd_fire_dead(f, t, t->dead_reason);
                return;
        case KD_SCHED_DEFER:
                assert(rule >= 0); /* kd_sched_decide said so */
                kd_pace_defer(f, t, rule);
                t->held_rule = (unsigned)rule + 1; /* its rule's out */
                kd_held_add_out(f, t);
                kd_fire_hop(f, t);
                return;
        case KD_SCHED_HOP:
                kd_held_add_out(f, t);
                kd_fire_hop(f, t);
                return;
        case KD_SCHED_HOLD:
                break;
        default:
                return;
        }
        t->held_rule = rule < 0 ? 0 : (unsigned)rule + 1;
        kd_held_add(f, t);
        kd_task_set_state(f, t, KD_TASK_HELD);
        kd_metric_inc(&f->metrics, KD_M_HELD);
        if (kd_task_arm(f, t, KD_CLOCK_WALL,
                        kd_task_due_at(t) - f->conf->fwd_claim_ahead_ms,
                        kd_pace_hold_due_cb))
                kd_fwd_oom(f, "hold_timer");
}
