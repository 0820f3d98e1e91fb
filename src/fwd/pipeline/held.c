/* SPDX-License-Identifier: Apache-2.0 */
/* Schedule stage, held set (kd_held.h): owns the count and bytes in
 * f->held. */
#include "kd_held.h"
#include "kd_pipeline_state.h"

#include "kd_intake.h"

/* Counts t into (sign 1) or out of (-1) its rule's share and the
 * limited tasks' (t->held_rule; none when 0): held, or out when t->out. */
static void share_count(kd_fwd_t *f, const kd_task_t *t, int sign)
{
        if (!t->held_rule || t->held_rule > KD_RATELIMITS_MAX)
                return;
        kd_held_share_t *s[2] = {&f->held->rule[t->held_rule - 1],
                                 &f->held->limited};
        int64_t bytes = (int64_t)t->bytes;
        for (int i = 0; i < 2; i++) {
                size_t *cnt = t->out ? &s[i]->out_cnt : &s[i]->cnt;
                int64_t *b = t->out ? &s[i]->out_bytes : &s[i]->bytes;
                if (sign > 0) {
                        ++*cnt;
                        *b += bytes;
                } else {
                        --*cnt;
                        *b -= bytes;
                }
        }
}

void kd_held_add(kd_fwd_t *f, kd_task_t *t)
{
        if (t->held)
                return;
        t->held = 1;
        f->held->cnt++;
        f->held->bytes += (int64_t)t->bytes;
        share_count(f, t, 1);
        kd_metric_max(&f->metrics, KD_M_HELD_MAX, (int64_t)f->held->cnt);
}

void kd_held_add_out(kd_fwd_t *f, kd_task_t *t)
{
        if (t->held || t->out)
                return;
        t->out = 1;
        f->held->out_cnt++;
        f->held->out_bytes += (int64_t)t->bytes;
        share_count(f, t, 1);
        kd_metric_max(&f->metrics, KD_M_OUT_MAX, (int64_t)f->held->out_cnt);
}

/* 1 when the set and the out share are at or below half their limits. */
static int at_half(const kd_fwd_t *f)
{
        const kd_fwd_held_t *h = f->held;
        size_t max = (size_t)f->conf->fwd_max_held;
        int64_t max_bytes = f->conf->fwd_max_held_bytes;
        return h->cnt + h->out_cnt <= max / 2 &&
               h->bytes + h->out_bytes <= max_bytes / 2 &&
               h->out_cnt - h->limited.out_cnt <= max / 8 &&
               h->out_bytes - h->limited.out_bytes <= max_bytes / 8;
}

void kd_held_remove(kd_fwd_t *f, kd_task_t *t)
{
        if (!t->out && !t->held)
                return;
        if (t->out) {
                share_count(f, t, -1);
                t->held_rule = 0;
                t->out = 0;
                f->held->out_cnt--;
                f->held->out_bytes -= (int64_t)t->bytes;
        } else {
                t->held = 0;
                f->held->cnt--;
                f->held->bytes -= (int64_t)t->bytes;
                share_count(f, t, -1);
                t->held_rule = 0;
        }
        if (f->held->low_until_mono && at_half(f)) {
                f->held->low_until_mono = 0; /* drained */
                kd_timer_disarm(&f->timers, &f->held->drain_end);
        }
        kd_intake_room(f);
}

/* The drain's limit: over, whatever the set holds. */
static void drain_end_cb(kd_timer_t *tm, void *arg)
{
        (void)tm;
        kd_fwd_t *f = arg;
        f->held->low_until_mono = 0;
        kd_intake_room(f);
}

int kd_held_drain(kd_fwd_t *f, int64_t now_mono)
{
        if (kd_held_low(f) || at_half(f))
                return 0;
        int64_t until = now_mono + KD_HELD_DRAIN_MS;
        if (kd_timer_arm(&f->timers, &f->held->drain_end, KD_CLOCK_MONO, until,
                         drain_end_cb, f))
                return -1;
        f->held->low_until_mono = until;
        return 0;
}

int kd_held_full(const kd_fwd_t *f, const kd_task_t *t, int low)
{
        const kd_fwd_held_t *h = f->held;
        size_t max = (size_t)f->conf->fwd_max_held;
        int64_t max_bytes = f->conf->fwd_max_held_bytes;
        if (low && (h->cnt + h->out_cnt > max / 2 ||
                    h->bytes + h->out_bytes > max_bytes / 2))
                return 1;
        return h->cnt + h->out_cnt + 1 > max ||
               h->bytes + h->out_bytes + (int64_t)t->bytes > max_bytes;
}

int kd_held_out_full(const kd_fwd_t *f, const kd_task_t *t, int low)
{
        const kd_fwd_held_t *h = f->held;
        size_t max = (size_t)f->conf->fwd_max_held / 4;
        int64_t max_bytes = f->conf->fwd_max_held_bytes / 4;
        /* The tasks sent back for their turns have their own bound. */
        size_t cnt = h->out_cnt - h->limited.out_cnt;
        int64_t bytes = h->out_bytes - h->limited.out_bytes;
        if (cnt == 0)
                return 0;
        if (low && (cnt > max / 2 || bytes > max_bytes / 2))
                return 1;
        return cnt + 1 > max || bytes + (int64_t)t->bytes > max_bytes;
}

int kd_held_limited_out_full(const kd_fwd_t *f, const kd_task_t *t, int low)
{
        const kd_held_share_t *all = &f->held->limited;
        size_t max = (size_t)f->conf->fwd_max_held / 4;
        int64_t max_bytes = f->conf->fwd_max_held_bytes / 4;
        if (all->out_cnt == 0)
                return 0;
        if (low && (all->out_cnt > max / 2 || all->out_bytes > max_bytes / 2))
                return 1;
        return all->out_cnt + 1 > max ||
               all->out_bytes + (int64_t)t->bytes > max_bytes;
}

int kd_held_share_full(const kd_fwd_t *f, const kd_task_t *t, unsigned rule,
                       size_t cap)
{
        if (rule >= KD_RATELIMITS_MAX)
                return 1;
        const kd_held_share_t *r = &f->held->rule[rule],
                              *all = &f->held->limited;
        /* A rule's first task always fits: one bigger than an eighth of
         * max_held_bytes, or any with max_held below 8, would otherwise
         * be sent back every time it is read, for ever. */
        if (r->cnt == 0)
                return 0;
        size_t half = (size_t)f->conf->fwd_max_held / 2;
        int64_t max_bytes = f->conf->fwd_max_held_bytes;
        int64_t bytes = (int64_t)t->bytes;
        if (half < 1)
                half = 1;
        return r->cnt + 1 > cap || r->bytes + bytes > max_bytes / 8 ||
               all->cnt + 1 > half || all->bytes + bytes > max_bytes / 2;
}

size_t kd_held_share(const kd_fwd_t *f, unsigned rule)
{
        return rule < KD_RATELIMITS_MAX ? f->held->rule[rule].cnt : 0;
}

void kd_held_note_late(kd_fwd_t *f, int64_t late_ms)
{
        int64_t mono = kd_fwd_mono_ms(f);
        int change = kd_behind_note(f->behind, mono, late_ms, !at_half(f),
                                    kd_held_low(f));
        if (change)
                kd_log(f->conf, KDELAY_LOG_INFO,
                       "event=backlog behind=%d late_ms=%lld held=%zu "
                       "claim_queue=%zu",
                       change > 0, (long long)late_ms, f->held->cnt,
                       f->claim->q.len);
}

int kd_held_behind(const kd_fwd_t *f)
{
        return kd_behind_on(f->behind, kd_fwd_mono_ms(f));
}

int kd_held_low(const kd_fwd_t *f)
{
        return f->held->low_until_mono != 0;
}

size_t kd_held_count(const kd_fwd_t *f)
{
        return f->held->cnt;
}
