/* Fire stage, pacing half (kd_pace.h): owns f->pace, the token bucket, its
 * queue and timer. Calls the produce half of the fire stage. */
#include "kd_pace.h"

#include "kd_fire.h"
#include "kd_lifecycle.h"
#include "kd_util.h"

/* The bucket holds a tenth of a second of fires (at least one). */
static double bucket_size(const kd_fwd_t *f)
{
        double b = f->conf->fwd_max_fire_rate / 10.0;
        return b < 1.0 ? 1.0 : b;
}

static void refill(kd_fwd_t *f, int64_t mono)
{
        kd_fwd_pace_t *p = &f->pace;
        if (p->tokens_mono == 0) {
                p->tokens = bucket_size(f);
        } else if (mono > p->tokens_mono) {
                p->tokens += (double)(mono - p->tokens_mono) *
                             f->conf->fwd_max_fire_rate / 1000.0;
                if (p->tokens > bucket_size(f))
                        p->tokens = bucket_size(f);
        }
        p->tokens_mono = mono;
}

static void run_cb(kd_timer_t *tm, void *arg);

/* When the queue's head gets its token. */
static void arm(kd_fwd_t *f)
{
        kd_fwd_pace_t *p = &f->pace;
        if (!p->q.head)
                return;
        double missing = 1.0 - p->tokens;
        int64_t at = p->tokens_mono;
        if (missing > 0)
                at += (int64_t)(missing * 1000.0 / f->conf->fwd_max_fire_rate) +
                      1;
        if (kd_timer_arm(&f->timers, &p->timer, KD_CLOCK_MONO, at, run_cb, f))
                kd_fwd_oom(f, "pace_timer");
}

/* Fires queued tasks as the rate allows. */
static void run_cb(kd_timer_t *tm, void *arg)
{
        (void)tm;
        kd_fwd_t *f = arg;
        kd_fwd_pace_t *p = &f->pace;
        refill(f, kd_mono_ms());
        while (p->q.head && p->tokens >= 1.0) {
                kd_task_t *t = kd_taskq_pop(&p->q);
                t->where = KD_WHERE_NONE;
                p->tokens -= 1.0;
                kd_fire_now(f, t, kd_fwd_now(f));
        }
        arm(f);
}

/* t is due: fire it now if the rate allows and nothing waits before it,
 * else queue it (due order is kept). */
static void due_cb(kd_timer_t *tm, void *arg)
{
        kd_fwd_t *f = arg;
        kd_fwd_pace_t *p = &f->pace;
        kd_task_t *t = kd_task_of_timer(tm);
        if (f->conf->fwd_max_fire_rate <= 0) {
                kd_fire_now(f, t, kd_fwd_now(f));
                return;
        }
        refill(f, kd_mono_ms());
        if (!p->q.head && p->tokens >= 1.0) {
                p->tokens -= 1.0;
                kd_fire_now(f, t, kd_fwd_now(f));
                return;
        }
        kd_metric_inc(&f->metrics, KD_M_RATE_LIMITED);
        kd_task_set_state(f, t, KD_TASK_PACED);
        kd_taskq_push(&p->q, t);
        t->where = KD_WHERE_PACE_Q;
        if (p->q.len == 1)
                arm(f);
}

void kd_pace_claimed(kd_fwd_t *f, kd_task_t *t)
{
        kd_task_set_state(f, t, KD_TASK_CLAIMED);
        if (kd_task_arm(f, t, KD_CLOCK_WALL, t->rec.fire_at_ms, due_cb))
                kd_fwd_oom(f, "fire_timer");
}
