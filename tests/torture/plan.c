/* SPDX-License-Identifier: Apache-2.0 */
/* The task plan: due times, schedule times, paths, targets and cancels,
 * all derived from the seed (docs/torture.md, "What it schedules"). */
#include <stdio.h>

#include "torture.h"

#define SEC 1000LL
#define MIN (60 * SEC)

int64_t tt_hold_horizon(const tt_opts_t *o)
{
        return o->hold_horizon_ms > 0 ? o->hold_horizon_ms : 30 * SEC;
}

int64_t tt_dead_gone_at(const tt_opts_t *o)
{
        return o->window_ms * (o->full ? 28 : 12) / 100;
}

/* One raw task in TT_MALFORMED_EVERY (by index, not a draw: the plans of
 * a seed stay what they were) is malformed, alternately without target
 * and with an unparseable fire-at, never cancelled, and not scheduled in
 * the quiet seconds before the dead-letter topic is deleted. */
static void plan_malformed(tt_task_t *t, size_t i, const tt_opts_t *o,
                           int64_t t0)
{
        t->malformed = TT_MAL_NONE;
        if (t->via != TT_VIA_RAW || t->heavy || i % TT_MALFORMED_EVERY != 11)
                return;
        t->malformed = (i / TT_MALFORMED_EVERY) % 2 ? TT_MAL_NO_TARGET
                                                    : TT_MAL_BAD_FIRE_AT;
        t->cancel_kind = TT_CANCEL_NONE;
        int64_t gone = t0 + tt_dead_gone_at(o);
        if (t->sched_at > gone - TT_DEAD_QUIET_BEFORE && t->sched_at <= gone)
                t->sched_at = gone + SEC;
        if (t->fire_at < t->sched_at + SEC)
                t->fire_at = t->sched_at + SEC;
}

const char *tt_dead_reason_want(const tt_task_t *t)
{
        switch (t->malformed) {
        case TT_MAL_NO_TARGET:
                return "missing-target";
        case TT_MAL_BAD_FIRE_AT:
                return "bad-fire-at";
        default:
                break;
        }
        switch (t->poison) {
        case TT_POISON_KEYLESS:
                return "target-refused";
        case TT_POISON_TOO_LARGE:
                return "too-large";
        case TT_POISON_INTERNAL:
                return "target-forbidden";
        default:
                return NULL;
        }
}

/* Moves t (due time, schedule time: its lead kept) to fire at fire_at,
 * scheduled no earlier than t0. */
static void move_fire(tt_task_t *t, int64_t fire_at, int64_t t0)
{
        int64_t lead = t->fire_at - t->sched_at;
        t->fire_at = fire_at;
        t->sched_at = fire_at - lead > t0 ? fire_at - lead : t0;
}

/* One raw task in o->poison_every (by index, like the malformed ones; not
 * heavy, not malformed) is poison, the kinds in turn, never cancelled:
 * keyless to the compacted target, too large for the small target, or to
 * __consumer_offsets (written to the 1 s tier: dead-lettered when read,
 * so kept out of the quiet seconds before the dead-letter topic is
 * deleted, as the malformed ones). Kinds 1 and 2 are dead-lettered when
 * they fire: their due time is kept out of those seconds (and the few
 * after, for a solo retry), and the next TT_POISON_MATES innocent tasks
 * are moved to the same target and due time (their leads kept, never
 * cancelled), so that batches and transactions mix them. */
static void plan_poison(tt_task_t *tasks, size_t n, size_t i,
                        const tt_opts_t *o, int64_t t0)
{
        tt_task_t *t = &tasks[i];
        t->poison = TT_POISON_NONE;
        if (t->via != TT_VIA_RAW || t->heavy || t->malformed ||
            i % o->poison_every != 29)
                return;
        t->poison = (uint8_t)(TT_POISON_KEYLESS + (i / o->poison_every) % 3);
        t->cancel_kind = TT_CANCEL_NONE;
        int64_t gone = t0 + tt_dead_gone_at(o);
        if (t->poison == TT_POISON_INTERNAL) {
                if (t->sched_at > gone - TT_DEAD_QUIET_BEFORE &&
                    t->sched_at <= gone)
                        t->sched_at = gone + SEC;
                if (t->fire_at < t->sched_at + SEC)
                        t->fire_at = t->sched_at + SEC;
                return;
        }
        t->target = t->poison == TT_POISON_KEYLESS ? TT_TARGET_COMPACT
                                                   : TT_TARGET_SMALL;
        if (t->fire_at > gone - TT_DEAD_QUIET_BEFORE - 5 * SEC &&
            t->fire_at <= gone)
                move_fire(t, gone + SEC, t0);
        for (size_t k = i + 1, m = 0; k < n && m < TT_POISON_MATES; k++) {
                tt_task_t *b = &tasks[k];
                if (b->malformed || (b->heavy && t->target == TT_TARGET_SMALL))
                        continue;
                b->mate = 1;
                b->target = t->target;
                b->cancel_kind = TT_CANCEL_NONE;
                move_fire(b, t->fire_at, t0);
                m++;
        }
}

/* The lead (fire-at minus schedule time) range of a category, clipped to
 * the window; 0 when the window cannot hold it. */
static int lead_range(tt_cat_t cat, int64_t hold, int64_t window, int64_t *lo,
                      int64_t *hi)
{
        switch (cat) {
        case TT_CAT_HELD:
                *lo = 300;
                *hi = hold;
                break;
        case TT_CAT_1S:
                /* Beyond the hold horizon, but at most 15 s of 1 s hops. */
                *lo = hold + 500;
                *hi = hold + 15 * SEC < 59 * SEC ? hold + 15 * SEC : 59 * SEC;
                break;
        case TT_CAT_1M:
                *lo = MIN;
                *hi = 29 * MIN + 30 * SEC;
                break;
        case TT_CAT_30M:
                *lo = 30 * MIN;
                *hi = window;
                break;
        }
        if (*hi > window - SEC)
                *hi = window - SEC;
        return *lo <= *hi;
}

/* Shares in percent: held 25, 1s hops 35, 1m 30, 30m 10; a category the
 * window cannot hold falls back to the next smaller one. */
static tt_cat_t pick_cat(tt_rng_t *r, int64_t hold, int64_t window)
{
        int64_t roll = tt_rng_range(r, 0, 99), lo, hi;
        tt_cat_t cat = roll < 25   ? TT_CAT_HELD
                       : roll < 60 ? TT_CAT_1S
                       : roll < 90 ? TT_CAT_1M
                                   : TT_CAT_30M;
        while (cat > TT_CAT_HELD && !lead_range(cat, hold, window, &lo, &hi))
                cat--;
        return cat;
}

static tt_via_t pick_via(tt_rng_t *r)
{
        int64_t roll = tt_rng_range(r, 0, 99);
        return roll < 12   ? TT_VIA_LIB_SYNC
               : roll < 50 ? TT_VIA_LIB_ASYNC
                           : TT_VIA_RAW;
}

void tt_plan_tasks(tt_task_t *tasks, size_t n, const tt_opts_t *o,
                   const tt_names_t *names, int64_t t0)
{
        tt_rng_t r;
        tt_rng_seed(&r, o->seed, 1);
        int64_t hold = tt_hold_horizon(o), w = o->window_ms;
        for (size_t i = 0; i < n; i++) {
                tt_task_t *t = &tasks[i];
                int64_t lo, hi;
                t->cat = (uint8_t)pick_cat(&r, hold, w);
                if (!lead_range((tt_cat_t)t->cat, hold, w, &lo, &hi))
                        lo = hi = 300;
                int64_t lead = tt_rng_range(&r, lo, hi);
                int64_t fire_rel = tt_rng_range(&r, lead > SEC ? lead : SEC, w);
                t->fire_at = t0 + fire_rel;
                t->sched_at = t->fire_at - lead;
                t->tier_partition = t->fate_src_partition = -1;
                t->tier_offset = t->fate_src_offset = -1;
                t->via = (uint8_t)pick_via(&r);
                t->target = (uint8_t)tt_rng_range(&r, 0, TT_TARGETS_PLAIN - 1);
                /* Every fifth library task gets a generated ULID; it is
                 * never cancelled (a cancel needs the id up front). */
                t->gen_id = t->via != TT_VIA_RAW && tt_rng_range(&r, 0, 4) == 0;
                /* About one task in a thousand, raw: 500 KB of headers (by
                 * index, so the draws and hence the plans stay the same). */
                t->heavy = t->via == TT_VIA_RAW && i % 499 == 7;
                /* One task in 16 each to the compacted and the small
                 * target (by index; never a heavy one to the small). */
                if (i % 16 == 3)
                        t->target = TT_TARGET_COMPACT;
                else if (i % 16 == 11 && !t->heavy)
                        t->target = TT_TARGET_SMALL;
                if (!t->gen_id)
                        snprintf(t->id, sizeof(t->id), "%s-%zu", names->prefix,
                                 i);
                t->cancel_kind = TT_CANCEL_NONE;
                if (t->gen_id || tt_rng_range(&r, 0, 99) >= 10)
                        continue;
                /* Cancel: 55% early, 45% racing the claim or the fire. */
                int64_t roll = tt_rng_range(&r, 0, 99);
                int64_t span = t->fire_at - t->sched_at;
                if (roll < 55 && span > 2500) {
                        t->cancel_kind = TT_CANCEL_EARLY;
                        t->cancel_at = tt_rng_range(&r, t->sched_at + 100,
                                                    t->fire_at - 2 * SEC);
                } else if (roll < 78) {
                        t->cancel_kind = TT_CANCEL_CLAIM;
                        t->cancel_at = t->fire_at - tt_rng_range(&r, 200, 700);
                } else {
                        t->cancel_kind = TT_CANCEL_FIRE;
                        t->cancel_at = t->fire_at + tt_rng_range(&r, -25, 25);
                }
                if (t->cancel_at < t->sched_at + 50)
                        t->cancel_at = t->sched_at + 50;
        }
        for (size_t i = 0; i < n; i++)
                plan_malformed(&tasks[i], i, o, t0);
        for (size_t i = 0; i < n; i++)
                plan_poison(tasks, n, i, o, t0);
}
