/* SPDX-License-Identifier: Apache-2.0 */
/* Under the fire stage, the clock-skew estimate (kd_skew.h). Owns only the
 * kd_skew_t it is given. */
#include "kd_skew.h"

static void window_clear(kd_skew_window_t *w)
{
        w->lo = INT64_MIN;
        w->hi = INT64_MAX;
}

void kd_skew_init(kd_skew_t *s)
{
        window_clear(&s->cur);
        window_clear(&s->prev);
        s->window_mono = 0;
        s->samples = 0;
}

/* Starts a new window when the current one is over. */
static void roll(kd_skew_t *s, int64_t now_mono)
{
        if (s->window_mono == 0) {
                s->window_mono = now_mono;
                return;
        }
        if (now_mono - s->window_mono < KD_SKEW_WINDOW_MS)
                return;
        /* One window passed: the current one becomes the previous; more
         * than one: both are stale. */
        if (now_mono - s->window_mono < 2 * KD_SKEW_WINDOW_MS)
                s->prev = s->cur;
        else
                window_clear(&s->prev);
        window_clear(&s->cur);
        s->window_mono = now_mono;
}

static int sane(int64_t d)
{
        return d <= KD_SKEW_SANE_MS && d >= -KD_SKEW_SANE_MS;
}

int kd_skew_observe(kd_skew_t *s, int64_t sent_ms, int64_t recv_ms,
                    int64_t broker_ms, int64_t now_mono)
{
        int64_t lo = sent_ms - broker_ms, hi = recv_ms - broker_ms;
        if (broker_ms <= 0 || !sane(lo) || !sane(hi) || lo > hi)
                return -1;
        roll(s, now_mono);
        if (lo > s->cur.lo)
                s->cur.lo = lo;
        if (hi < s->cur.hi)
                s->cur.hi = hi;
        s->samples++;
        return 0;
}

int64_t kd_skew_ahead_ms(const kd_skew_t *s)
{
        int64_t lo = s->cur.lo > s->prev.lo ? s->cur.lo : s->prev.lo;
        int64_t hi = s->cur.hi < s->prev.hi ? s->cur.hi : s->prev.hi;
        /* Ahead (lo > 0) or behind (hi < 0) for sure: the smallest upper
         * bound, which the true offset never exceeds, so no fire is early
         * (late by a report's trip); when the bounds disagree (a step in
         * the window) the larger of the two. Neither: 0. */
        if (lo > 0)
                return hi > lo ? hi : lo;
        if (hi < 0)
                return hi;
        return 0;
}
