/* SPDX-License-Identifier: Apache-2.0 */
/* Timer service: two heaps, one per clock, and the clock source they are
 * read from (kd_timer.h). The only place in src/fwd that reads the host's
 * clocks. */
#include "kd_timer.h"

#include <stdatomic.h>
#include <stddef.h>
#include <stdlib.h>

#include "kd_util.h"

static kd_timer_t *timer_of(kd_heap_node_t *n)
{
        return (kd_timer_t *)((char *)n - offsetof(kd_timer_t, node));
}

static kd_heap_t *heap_of(kd_timers_t *ts, kd_clock_t clock)
{
        return clock == KD_CLOCK_WALL ? &ts->wall : &ts->mono;
}

void kd_clocksrc_real(kd_clocksrc_t *c)
{
        c->manual = 0;
        atomic_store(&c->mono_ms, 0);
        atomic_store(&c->wall_ms, 0);
}

void kd_clocksrc_manual(kd_clocksrc_t *c, int64_t mono_ms, int64_t wall_ms)
{
        c->manual = 1;
        atomic_store(&c->mono_ms, mono_ms);
        atomic_store(&c->wall_ms, wall_ms);
}

int64_t kd_clocksrc_mono_ms(const kd_clocksrc_t *c)
{
        return c->manual ? atomic_load(&c->mono_ms) : kd_mono_ms();
}

int64_t kd_clocksrc_wall_ms(const kd_clocksrc_t *c)
{
        /* kd_now_ms applies the process's test clock offset
         * (KDELAY_TEST_CLOCK_OFFSET_MS): the fate store's timestamps, taken
         * in the library, run just as far ahead. */
        return c->manual ? atomic_load(&c->wall_ms) : kd_now_ms();
}

int kd_clocksrc_advance(kd_clocksrc_t *c, int64_t ms)
{
        if (!c->manual || ms < 0)
                return -1;
        atomic_fetch_add(&c->mono_ms, ms);
        atomic_fetch_add(&c->wall_ms, ms);
        return 0;
}

void kd_clocksrc_sleep(kd_clocksrc_t *c, int64_t ms)
{
        if (ms > 0 && kd_clocksrc_advance(c, ms))
                kd_sleep_ms(ms);
}

int kd_clocksrc_set_wall(kd_clocksrc_t *c, int64_t wall_ms)
{
        if (!c->manual)
                return -1;
        atomic_store(&c->wall_ms, wall_ms);
        return 0;
}

int64_t kd_timers_now(const kd_timers_t *ts, kd_clock_t clock)
{
        return clock == KD_CLOCK_WALL
                   ? kd_clocksrc_wall_ms(&ts->clock) - ts->wall_ahead_ms
                   : kd_clocksrc_mono_ms(&ts->clock);
}

void kd_timers_init(kd_timers_t *ts)
{
        kd_heap_init(&ts->wall);
        kd_heap_init(&ts->mono);
        kd_clocksrc_real(&ts->clock);
        ts->wall_ahead_ms = 0;
}

void kd_timers_clear(kd_timers_t *ts)
{
        kd_heap_clear(&ts->wall);
        kd_heap_clear(&ts->mono);
}

void kd_timer_init(kd_timer_t *tm, kd_timer_cb_t *cb, void *arg)
{
        kd_heap_node_init(&tm->node);
        tm->cb = cb;
        tm->arg = arg;
        tm->clock = KD_CLOCK_MONO;
}

int kd_timer_armed(const kd_timer_t *tm)
{
        return kd_heap_node_queued(&tm->node);
}

void kd_timer_disarm(kd_timers_t *ts, kd_timer_t *tm)
{
        if (kd_timer_armed(tm))
                kd_heap_remove(heap_of(ts, tm->clock), &tm->node);
}

int kd_timer_arm(kd_timers_t *ts, kd_timer_t *tm, kd_clock_t clock, int64_t at,
                 kd_timer_cb_t *cb, void *arg)
{
        kd_timer_disarm(ts, tm);
        tm->clock = clock;
        tm->cb = cb;
        tm->arg = arg;
        return kd_heap_push(heap_of(ts, clock), &tm->node, at);
}

int kd_timer_arm_by(kd_timers_t *ts, kd_timer_t *tm, kd_clock_t clock,
                    int64_t at, kd_timer_cb_t *cb, void *arg)
{
        if (kd_timer_armed(tm) && tm->clock == clock && tm->node.key <= at &&
            tm->cb == cb && tm->arg == arg)
                return 0;
        return kd_timer_arm(ts, tm, clock, at, cb, arg);
}

int64_t kd_timer_due(const kd_timer_t *tm)
{
        return kd_timer_armed(tm) ? tm->node.key : INT64_MAX;
}

/* Milliseconds until the head of h is due on clock; INT64_MAX when empty. */
static int64_t head_wait(const kd_timers_t *ts, const kd_heap_t *h,
                         kd_clock_t clock)
{
        const kd_heap_node_t *n = kd_heap_peek(h);
        if (!n)
                return INT64_MAX;
        int64_t w = n->key - kd_timers_now(ts, clock);
        return w < 0 ? 0 : w;
}

int kd_timers_wait_ms(const kd_timers_t *ts, int max_ms)
{
        int64_t w = head_wait(ts, &ts->wall, KD_CLOCK_WALL);
        int64_t m = head_wait(ts, &ts->mono, KD_CLOCK_MONO);
        if (m < w)
                w = m;
        return w < max_ms ? (int)w : max_ms;
}

size_t kd_timers_run(kd_timers_t *ts, size_t limit)
{
        size_t ran = 0;
        while (ran < limit) {
                /* The more overdue of the two heads runs first. */
                const kd_heap_node_t *w = kd_heap_peek(&ts->wall);
                const kd_heap_node_t *m = kd_heap_peek(&ts->mono);
                int64_t ow = w ? kd_timers_now(ts, KD_CLOCK_WALL) - w->key : -1;
                int64_t om = m ? kd_timers_now(ts, KD_CLOCK_MONO) - m->key : -1;
                kd_heap_t *h;
                if (ow < 0 && om < 0)
                        break;
                h = ow >= om ? &ts->wall : &ts->mono;
                kd_timer_t *tm = timer_of(kd_heap_pop(h));
                tm->cb(tm, tm->arg);
                ran++;
        }
        return ran;
}
