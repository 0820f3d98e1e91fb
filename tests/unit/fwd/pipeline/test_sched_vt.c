/* SPDX-License-Identifier: Apache-2.0 */
/* The schedule stage in virtual time (kd_sched.h, pace.c's hold and fire
 * timers): a forwarder made but never run, on a manual clock stepped a
 * millisecond at a time, single-threaded. A backlog head waits until
 * fire_at - hold_horizon - lookahead and is held from then, not a
 * millisecond before; held, its claim is due claim_ahead before its fire
 * time, and, claimed, it goes to its fire at fire_at exactly. A task to a
 * rate-limited target is held only within its rule's horizon of its turn
 * and while its rule's share of the held set has room. */
#include <stdio.h>
#include <stdlib.h>

#include "core/kd_part.h"
#include "core/kd_timer.h"
#include "fwd_offline.h"
#include "kd_test.h"
#include "pipeline/kd_claim.h"
#include "pipeline/kd_held.h"
#include "pipeline/kd_lifecycle.h"
#include "pipeline/kd_pace.h"
#include "pipeline/kd_pipeline_state.h"
#include "pipeline/kd_sched.h"
#include "top/kd_fwd.h"

#define MONO0      1000000
#define WALL0      1700000000000
#define HORIZON_MS 10000
#define LOOK_MS    200
#define AHEAD_MS   1000
#define FIRE_AT    (WALL0 + 60000)

static const char *const settings[] = {"forwarder.hold_horizon",
                                       "10s",
                                       "forwarder.lookahead",
                                       "200ms",
                                       "forwarder.claim_ahead",
                                       "1s",
                                       "forwarder.target_rate_limits",
                                       "slow=10/1",
                                       "forwarder.max_held",
                                       "80",
                                       NULL};
/* slow's share of the held set: 10 s and the horizon of its rate, at
 * most max_held / 8; its horizon: half the share's time (1 s), at least
 * claim_ahead and twice the lookahead (kd_pace.h). */
#define SHARE       10
#define RULE_WINDOW (AHEAD_MS + 2 * LOOK_MS)
/* Turns given to tasks sent back: a task is held the rule's horizon and
 * the lookahead before its turn, so no more than the share may have
 * turns within that time: (1400 + 200) / 10 = 160 ms apart, more than
 * the rate's gap of 100 ms (before: 101, a gap rounded up to whole ms). */
#define GAP_MS ((RULE_WINDOW + LOOK_MS) / SHARE)

static kd_fwd_t *fwd;
static int64_t claimed_at; /* wall time the claim hook ran; -1: not yet */

static int setup(void)
{
        return kd_test_fwd_vt(&fwd, "sched", MONO0, WALL0, settings);
}

static int teardown(void)
{
        kd_fwd_destroy(fwd);
        return 0;
}

static int64_t wall(void)
{
        return kd_fwd_now(fwd);
}

/* Moves the clock to wall time `at` (not back), a millisecond at a time,
 * running what comes due each millisecond. */
static void step_to(int64_t at)
{
        while (wall() < at) {
                CU_ASSERT_EQUAL_FATAL(
                    kd_clocksrc_advance(&fwd->timers.clock, 1), 0);
                kd_timers_run(&fwd->timers, 1000);
        }
}

/* The claim stage, stood in for: the claim is won at once. */
static void claim_won(kd_fwd_t *f, kd_task_t *t)
{
        claimed_at = kd_fwd_now(f);
        kd_task_set_state(f, t, KD_TASK_CLAIMING);
        kd_pace_claimed(f, t);
}

static void test_held_from_fire_at_less_horizon_and_lookahead(void)
{
        kd_part_t p = {.tier_ms = 60000};
        kd_task_t *t = kd_test_task_of(fwd, "a", "out", FIRE_AT);
        CU_ASSERT_PTR_NOT_NULL_FATAL(t);
        t->rec.append_ms = FIRE_AT - 60000; /* its tier is due at fire_at */
        int64_t wake = 0, hold_from = FIRE_AT - HORIZON_MS - LOOK_MS;
        CU_ASSERT_EQUAL(kd_sched_decide(fwd, &p, t, wall(), 0, &wake),
                        KD_SCHED_WAIT);
        CU_ASSERT_EQUAL(wake, hold_from);
        step_to(hold_from - 1);
        CU_ASSERT_EQUAL(kd_sched_decide(fwd, &p, t, wall(), 0, &wake),
                        KD_SCHED_WAIT);
        CU_ASSERT_EQUAL(wake, hold_from);
        step_to(hold_from);
        CU_ASSERT_EQUAL(kd_sched_decide(fwd, &p, t, wall(), 0, &wake),
                        KD_SCHED_HOLD);
        /* A task due one millisecond later hops instead (its fire is
         * beyond the horizon and lookahead). */
        t->rec.fire_at_ms = FIRE_AT + 1;
        CU_ASSERT_EQUAL(kd_sched_decide(fwd, &p, t, wall(), 0, &wake),
                        KD_SCHED_WAIT);
        step_to(hold_from + 1);
        CU_ASSERT_EQUAL(kd_sched_decide(fwd, &p, t, wall(), 0, &wake),
                        KD_SCHED_HOLD);
        kd_test_task_drop(fwd, t);
}

static void test_claimed_claim_ahead_before_and_fired_at_fire_at(void)
{
        int64_t start = wall();
        kd_task_t *t = kd_test_task_of(fwd, "b", "out", start + 5000);
        CU_ASSERT_PTR_NOT_NULL_FATAL(t);
        int64_t fire_at = t->rec.fire_at_ms;
        fwd->hooks->claim = claim_won;
        claimed_at = -1;
        kd_sched_take(fwd, t, KD_SCHED_HOLD);
        CU_ASSERT_EQUAL(t->state, KD_TASK_HELD);
        CU_ASSERT_EQUAL(t->where, KD_WHERE_TIMER);
        CU_ASSERT_EQUAL(kd_timer_due(&t->timer), fire_at - AHEAD_MS);
        CU_ASSERT_EQUAL(fwd->held->cnt, 1);
        step_to(fire_at - AHEAD_MS - 1);
        CU_ASSERT_EQUAL(claimed_at, -1);
        CU_ASSERT_EQUAL(t->state, KD_TASK_HELD);
        step_to(fire_at - AHEAD_MS);
        CU_ASSERT_EQUAL(claimed_at, fire_at - AHEAD_MS);
        CU_ASSERT_EQUAL(t->state, KD_TASK_CLAIMED);
        step_to(fire_at - 1);
        CU_ASSERT_EQUAL(t->state, KD_TASK_CLAIMED);
        /* At fire_at the fire stage has it: this forwarder has not yet
         * measured the broker's clock (never run), so it waits for that
         * (kd_fire_now: RETRY, to fire). */
        step_to(fire_at);
        CU_ASSERT_EQUAL(t->state, KD_TASK_RETRY);
        CU_ASSERT_EQUAL(t->retry_as, KD_TASK_FIRING);
        fwd->hooks->claim = kd_claim_enqueue;
        /* Every move was a legal one (kd_lifecycle.h). */
        CU_ASSERT_EQUAL(kd_metric_get(&fwd->metrics, KD_M_TASK_STATE_BUGS), 0);
        kd_test_task_drop(fwd, t);
        CU_ASSERT_EQUAL(fwd->held->cnt, 0);
}

/* A limited task sent back with its turn (kdelay-not-before) is read
 * and held only within its rule's horizon of that turn, not the hold
 * horizon (before, held from 10 s ahead: tasks sent back refilled the
 * held set); and only while its rule's share has room: past it, sent
 * back with a turn after the share's, while the held set keeps room for
 * other targets' tasks. */
static void test_a_limited_task_held_within_its_rules_horizon_and_share(void)
{
        kd_part_t p = {.tier_ms = 60000};
        int64_t now = wall(), wake = 0;
        kd_task_t *t = kd_test_task_of(fwd, "s", "slow", now - 1000);
        CU_ASSERT_PTR_NOT_NULL_FATAL(t);
        t->rec.append_ms = now; /* its tier is due in a minute */
        t->rec.not_before_ms = now + 5000;
        CU_ASSERT_EQUAL(kd_pace_horizon(fwd, 0), RULE_WINDOW);
        /* Read in the tier's time only within the rule's horizon. */
        CU_ASSERT_EQUAL(kd_sched_decide(fwd, &p, t, now, 0, &wake),
                        KD_SCHED_WAIT);
        CU_ASSERT_EQUAL(wake, now + 5000 - RULE_WINDOW - LOOK_MS);
        /* Read earlier (its tier came due), it hops: not held yet. */
        t->rec.append_ms = now - 60000;
        CU_ASSERT_EQUAL(kd_sched_decide(fwd, &p, t, now, 0, &wake),
                        KD_SCHED_HOP);
        t->rec.not_before_ms = now + RULE_WINDOW + LOOK_MS;
        CU_ASSERT_EQUAL(kd_sched_decide(fwd, &p, t, now, 0, &wake),
                        KD_SCHED_HOLD);
        /* Its share held, the next goes back; another target's task is
         * held. */
        kd_task_t *held[SHARE];
        for (int i = 0; i < SHARE; i++) {
                char id[8];
                snprintf(id, sizeof(id), "h%d", i);
                held[i] = kd_test_task_of(fwd, id, "slow", now + 1000);
                CU_ASSERT_PTR_NOT_NULL_FATAL(held[i]);
                kd_sched_take(fwd, held[i], KD_SCHED_HOLD);
        }
        CU_ASSERT_EQUAL(fwd->held->limited.cnt, SHARE);
        CU_ASSERT_EQUAL(kd_sched_decide(fwd, &p, t, now, 0, &wake),
                        KD_SCHED_DEFER);
        kd_task_t *o = kd_test_task_of(fwd, "o", "out", now + 1000);
        CU_ASSERT_PTR_NOT_NULL_FATAL(o);
        o->rec.append_ms = now - 60000;
        CU_ASSERT_EQUAL(kd_sched_decide(fwd, &p, o, now, 0, &wake),
                        KD_SCHED_HOLD);
        /* Its turn: after the share's, then after the turns given. */
        int64_t due = t->rec.not_before_ms;
        kd_pace_defer(fwd, t, 0);
        CU_ASSERT_EQUAL(t->rec.not_before_ms, due + (SHARE + 1) * GAP_MS);
        /* Beyond the rule's horizon: read again now, it hops (it is not
         * read into the held set, nor sent back again, before then). */
        CU_ASSERT(t->rec.not_before_ms - now > RULE_WINDOW + LOOK_MS);
        CU_ASSERT_EQUAL(kd_sched_decide(fwd, &p, t, now, 0, &wake),
                        KD_SCHED_HOP);
        kd_task_t *t2 = kd_test_task_of(fwd, "s2", "slow", now - 1000);
        CU_ASSERT_PTR_NOT_NULL_FATAL(t2);
        t2->rec.not_before_ms = due;
        kd_pace_defer(fwd, t2, 0);
        CU_ASSERT_EQUAL(t2->rec.not_before_ms, due + (SHARE + 2) * GAP_MS);
        kd_test_task_drop(fwd, t2);
        CU_ASSERT_EQUAL(kd_metric_get(&fwd->metrics, KD_M_RATE_DEFERRED), 2);
        /* The tasks sent back and not yet settled have their own bound, a
         * quarter of max_held (20): past it only the partition that reads
         * the next waits (SPAN: no drain), and another target's task still
         * hops through the out share of the others. */
        kd_task_t *out[20];
        for (int i = 0; i < 20; i++) {
                char id[8];
                snprintf(id, sizeof(id), "x%d", i);
                out[i] = kd_test_task_of(fwd, id, "slow", now - 1000);
                CU_ASSERT_PTR_NOT_NULL_FATAL(out[i]);
                out[i]->held_rule = 1;
                kd_held_add_out(fwd, out[i]);
        }
        CU_ASSERT_EQUAL(fwd->held->limited.out_cnt, 20);
        kd_task_t *t3 = kd_test_task_of(fwd, "s3", "slow", now - 1000);
        CU_ASSERT_PTR_NOT_NULL_FATAL(t3);
        t3->rec.append_ms = now - 60000;
        CU_ASSERT_EQUAL(kd_sched_decide(fwd, &p, t3, now, 0, &wake),
                        KD_SCHED_SPAN);
        CU_ASSERT_EQUAL(fwd->held->low_until_mono, 0);
        kd_task_t *o2 = kd_test_task_of(fwd, "o2", "out", now + 60000);
        CU_ASSERT_PTR_NOT_NULL_FATAL(o2);
        o2->rec.append_ms = now - 60000;
        CU_ASSERT_EQUAL(kd_sched_decide(fwd, &p, o2, now, 0, &wake),
                        KD_SCHED_HOP);
        for (int i = 0; i < 20; i++)
                kd_test_task_drop(fwd, out[i]);
        CU_ASSERT_EQUAL(fwd->held->limited.out_cnt, 0);
        CU_ASSERT_EQUAL(fwd->held->rule[0].out_cnt, 0);
        CU_ASSERT_EQUAL(fwd->held->out_cnt, 0);
        CU_ASSERT_EQUAL(kd_sched_decide(fwd, &p, t3, now, 0, &wake),
                        KD_SCHED_DEFER);
        kd_task_free(t3);
        kd_task_free(o2);
        for (int i = 0; i < SHARE; i++)
                kd_test_task_drop(fwd, held[i]);
        CU_ASSERT_EQUAL(fwd->held->limited.cnt, 0);
        CU_ASSERT_EQUAL(fwd->held->rule[0].cnt, 0);
        kd_test_task_drop(fwd, t);
        kd_test_task_drop(fwd, o);
}

int main(void)
{
        static const kd_test_case_t cases[] = {
            KD_TEST(test_held_from_fire_at_less_horizon_and_lookahead),
            KD_TEST(test_claimed_claim_ahead_before_and_fired_at_fire_at),
            KD_TEST(
                test_a_limited_task_held_within_its_rules_horizon_and_share),
            KD_TEST_END};
        return kd_test_run("sched_vt", cases, setup, teardown);
}
