/* SPDX-License-Identifier: Apache-2.0 */
/* The schedule stage in virtual time (kd_sched.h, pace.c's hold and fire
 * timers): a forwarder made but never run, on a manual clock stepped a
 * millisecond at a time, single-threaded. A backlog head waits until
 * fire_at - hold_horizon - lookahead and is held from then, not a
 * millisecond before; held, its claim is due claim_ahead before its fire
 * time, and, claimed, it goes to its fire at fire_at exactly. */
#include <stdlib.h>

#include "fwd_offline.h"
#include "kd_claim.h"
#include "kd_fwd.h"
#include "kd_lifecycle.h"
#include "kd_pace.h"
#include "kd_part.h"
#include "kd_sched.h"
#include "kd_test.h"
#include "kd_timer.h"

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
                                       NULL};

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
        kd_task_t *t = kd_test_task("a", "out", FIRE_AT);
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
        kd_task_t *t = kd_test_task("b", "out", start + 5000);
        CU_ASSERT_PTR_NOT_NULL_FATAL(t);
        int64_t fire_at = t->rec.fire_at_ms;
        fwd->hooks.claim = claim_won;
        claimed_at = -1;
        kd_sched_take(fwd, t, KD_SCHED_HOLD);
        CU_ASSERT_EQUAL(t->state, KD_TASK_HELD);
        CU_ASSERT_EQUAL(t->where, KD_WHERE_TIMER);
        CU_ASSERT_EQUAL(kd_timer_due(&t->timer), fire_at - AHEAD_MS);
        CU_ASSERT_EQUAL(fwd->held.cnt, 1);
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
        fwd->hooks.claim = kd_claim_enqueue;
        /* Every move was a legal one (kd_lifecycle.h). */
        CU_ASSERT_EQUAL(kd_metric_get(&fwd->metrics, KD_M_TASK_STATE_BUGS), 0);
        kd_test_task_drop(fwd, t);
        CU_ASSERT_EQUAL(fwd->held.cnt, 0);
}

int main(void)
{
        static const kd_test_case_t cases[] = {
            KD_TEST(test_held_from_fire_at_less_horizon_and_lookahead),
            KD_TEST(test_claimed_claim_ahead_before_and_fired_at_fire_at),
            KD_TEST_END};
        return kd_test_run("sched_vt", cases, setup, teardown);
}
