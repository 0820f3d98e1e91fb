/* SPDX-License-Identifier: Apache-2.0 */
/* Schedule stage (kd_sched.h). Owns no state of its own: the held set is
 * accounted in held.c, the timers are the task's. Calls downstream: the
 * claim stage (hold timers), the fire stage (hops, dead letters), the
 * mode (admission). */
#include "kd_sched.h"

#include "kd_claim.h"
#include "kd_fire.h"
#include "kd_held.h"
#include "kd_lifecycle.h"
#include "kd_mode.h"
#include "kd_pace.h"
#include "kd_path.h"

kd_sched_t kd_sched_decide(const kd_fwd_t *f, const kd_part_t *p,
                           const kd_task_t *t, int64_t now, int low,
                           int64_t *wake_at)
{
        const kdelay_conf_t *c = f->conf;
        /* Draining (kd_held.h): every partition waits for half. */
        int held_low = kd_held_low(f);
        if (t->dead_reason)
                return kd_held_out_full(f, t, held_low) ? KD_SCHED_FULL
                                                        : KD_SCHED_DEAD;
        int64_t due = kd_path_due(kd_task_due_at(t), t->rec.append_ms,
                                  p->tier_ms, c->fwd_hold_horizon_ms);
        if (due - c->fwd_lookahead_ms > now) {
                *wake_at = due - c->fwd_lookahead_ms;
                return KD_SCHED_WAIT;
        }
        if (f->mode->admit && !f->mode->admit(&f->mode_ctx, p, t, low))
                return KD_SCHED_SPAN;
        if (kd_path_hops(kd_task_due_at(t), now, c->fwd_hold_horizon_ms,
                         c->fwd_lookahead_ms))
                return kd_held_out_full(f, t, held_low) ? KD_SCHED_FULL
                                                        : KD_SCHED_HOP;
        return kd_held_full(f, t, held_low) ? KD_SCHED_FULL : KD_SCHED_HOLD;
}

void kd_sched_take(kd_fwd_t *f, kd_task_t *t, kd_sched_t what)
{
        switch (what) {
        case KD_SCHED_DEAD:
                kd_held_add_out(f, t);
                kd_fire_dead(f, t, t->dead_reason);
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
        kd_held_add(f, t);
        kd_task_set_state(f, t, KD_TASK_HELD);
        kd_metric_inc(&f->metrics, KD_M_HELD);
        if (kd_task_arm(f, t, KD_CLOCK_WALL,
                        kd_task_due_at(t) - f->conf->fwd_claim_ahead_ms,
                        kd_pace_hold_due_cb))
                kd_fwd_oom(f, "hold_timer");
}
