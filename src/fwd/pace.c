/* forwarder.max_fire_rate: after a long outage many tasks are due at once;
 * a token bucket spreads their fires so targets and their consumers are
 * not flooded. Tasks wait in a FIFO in the order their timers came due,
 * which is due order, so firing keeps it. */
#include "kd_fwd.h"

/* The bucket holds a tenth of a second of fires (at least one). */
static double bucket_size(const kd_fwd_t *f)
{
        double b = f->conf->fwd_max_fire_rate / 10.0;
        return b < 1.0 ? 1.0 : b;
}

static void refill(kd_fwd_t *f, int64_t now)
{
        if (f->fire_tokens_ms == 0) {
                f->fire_tokens = bucket_size(f);
        } else if (now > f->fire_tokens_ms) {
                f->fire_tokens += (double)(now - f->fire_tokens_ms) *
                                  f->conf->fwd_max_fire_rate / 1000.0;
                if (f->fire_tokens > bucket_size(f))
                        f->fire_tokens = bucket_size(f);
        }
        f->fire_tokens_ms = now;
}

void kd_pace_fire(kd_fwd_t *f, kd_task_t *t, int64_t now)
{
        if (f->conf->fwd_max_fire_rate <= 0) {
                kd_produce_fire(f, t, now);
                return;
        }
        refill(f, now);
        if (!f->paceq.head && f->fire_tokens >= 1.0) {
                f->fire_tokens -= 1.0;
                kd_produce_fire(f, t, now);
                return;
        }
        f->stats.rate_limited++;
        t->state = KD_TASK_PACED;
        kd_taskq_push(&f->paceq, t);
}

void kd_pace_run(kd_fwd_t *f, int64_t now)
{
        if (!f->paceq.head)
                return;
        refill(f, now);
        while (f->paceq.head && f->fire_tokens >= 1.0) {
                kd_task_t *t = kd_taskq_pop(&f->paceq);
                f->fire_tokens -= 1.0;
                kd_produce_fire(f, t, now);
        }
}

int64_t kd_pace_next_ms(const kd_fwd_t *f)
{
        if (!f->paceq.head)
                return INT64_MAX;
        double missing = 1.0 - f->fire_tokens;
        if (missing <= 0)
                return f->fire_tokens_ms;
        return f->fire_tokens_ms +
               (int64_t)(missing * 1000.0 / f->conf->fwd_max_fire_rate) + 1;
}

void kd_pace_forget(kd_fwd_t *f, kd_task_t *t)
{
        kd_taskq_remove(&f->paceq, t);
}
