/* Schedule stage (kd_sched.h). Owns no state of its own: the held set is
 * accounted in held.c, the timers are the task's. Calls downstream: the
 * claim stage (hold timers), the fire stage (hops, dead letters), the
 * mode (admission). */
#include "kd_sched.h"

#include "kd_claim.h"
#include "kd_fire.h"
#include "kd_held.h"
#include "kd_mode.h"

kd_sched_t kd_sched_decide(const kd_fwd_t *f, const kd_part_t *p,
                           const kd_task_t *t, int64_t now, int64_t *wake_at)
{
        const kdelay_conf_t *c = f->conf;
        if (t->dead_reason)
                return kd_held_out_full(f, t) ? KD_SCHED_FULL : KD_SCHED_DEAD;
        /* Due in its tier at append time + tier delay. A task whose own
         * due time is within the hold horizon is due earlier: handling it
         * then keeps the tier's bound (never later than the tier allows)
         * and lets short delays in the smallest tier fire on time. */
        int64_t due = t->rec.fire_at_ms - c->fwd_hold_horizon_ms;
        int64_t tier_due = t->rec.append_ms + c->tiers.v[p->tier].delay_ms;
        if (tier_due < due)
                due = tier_due;
        if (due - c->fwd_lookahead_ms > now) {
                *wake_at = due - c->fwd_lookahead_ms;
                return KD_SCHED_WAIT;
        }
        if (!f->mode->admit(f, p, t))
                return KD_SCHED_FULL;
        if (t->rec.fire_at_ms - now >
            c->fwd_hold_horizon_ms + c->fwd_lookahead_ms)
                return kd_held_out_full(f, t) ? KD_SCHED_FULL : KD_SCHED_HOP;
        return kd_held_full(f, t) ? KD_SCHED_FULL : KD_SCHED_HOLD;
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
        t->state = KD_TASK_HELD;
        kd_metric_inc(&f->metrics, KD_M_HELD);
        if (kd_timer_arm(&f->timers, &t->timer, KD_CLOCK_WALL,
                         t->rec.fire_at_ms - f->conf->fwd_claim_ahead_ms,
                         kd_claim_due_cb, f))
                kd_fwd_oom(f, "hold_timer");
}
