/* SPDX-License-Identifier: Apache-2.0 */
/* Pacing in virtual time (kd_pace.h): a forwarder made but never run, on a
 * manual clock stepped a millisecond at a time, single-threaded; the claim
 * stage is stood in for (a claim is won the moment it is asked for). The
 * tasks to a target under forwarder.target_rate_limits go to their claims
 * at the rule's rate, in due order, a task to another target is not held
 * up by them; forwarder.max_fire_rate spreads fires due together, in due
 * order, and counts each fire that waited for a token (rate_limited). */
#include <stdio.h>

#include "core/kd_timer.h"
#include "fwd_offline.h"
#include "kd_test.h"
#include "pipeline/kd_claim.h"
#include "pipeline/kd_lifecycle.h"
#include "pipeline/kd_pace.h"
#include "pipeline/kd_pipeline_state.h"
#include "pipeline/kd_sched.h"
#include "top/kd_fwd.h"

#define MONO0    1000000
#define WALL0    1700000000000
#define AHEAD_MS 1000
#define N        6

static const char *const settings[] = {"forwarder.claim_ahead",
                                       "1s",
                                       "forwarder.target_rate_limits",
                                       "slow=10/1",
                                       "forwarder.max_fire_rate",
                                       "4",
                                       NULL};

static kd_fwd_t *fwd;
static kd_task_t *order[N + 1];
static int64_t at_mono[N + 1];
static int claims;
static int won; /* the stand-in claims them */

static int setup(void)
{
        return kd_test_fwd_vt(&fwd, "pace", MONO0, WALL0, settings);
}

static int teardown(void)
{
        kd_fwd_destroy(fwd);
        return 0;
}

static int64_t mono(void)
{
        return kd_fwd_mono_ms(fwd);
}

static void step(int64_t ms)
{
        CU_ASSERT_EQUAL_FATAL(kd_test_step(fwd, ms), 0);
}

static void claim_asked(kd_fwd_t *f, kd_task_t *t)
{
        if (claims <= N) {
                order[claims] = t;
                at_mono[claims] = kd_fwd_mono_ms(f);
        }
        claims++;
        if (won) {
                kd_task_set_state(f, t, KD_TASK_CLAIMING);
                kd_pace_claimed(f, t);
        }
}

/* n tasks to target due at fire_at, ids tag0, tag1 ..., held (their
 * claims due claim_ahead before). */
static void hold(kd_task_t **t, int n, char tag, const char *target,
                 int64_t fire_at)
{
        for (int i = 0; i < n; i++) {
                char id[16];
                snprintf(id, sizeof(id), "%c%d", tag, i);
                t[i] = kd_test_task_of(fwd, id, target, fire_at);
                CU_ASSERT_PTR_NOT_NULL_FATAL(t[i]);
                kd_sched_take(fwd, t[i], KD_SCHED_HOLD);
        }
}

static void test_a_limited_target_goes_at_its_rate_others_at_once(void)
{
        kd_task_t *slow[N], *other;
        int64_t fire_at = kd_fwd_now(fwd) + 5000;
        fwd->hooks->claim = claim_asked;
        claims = 0;
        won = 0;
        hold(slow, N, 's', "slow", fire_at);
        other = kd_test_task_of(fwd, "o", "fast", fire_at);
        CU_ASSERT_PTR_NOT_NULL_FATAL(other);
        kd_sched_take(fwd, other, KD_SCHED_HOLD);
        int64_t due = mono() + 5000 - AHEAD_MS; /* their claims are due */
        step(5000 - AHEAD_MS - 1);
        CU_ASSERT_EQUAL(claims, 0);
        step(1);
        /* The burst (1) lets the first through; the other target's task
         * is not held up behind the rest. */
        CU_ASSERT_EQUAL(claims, 2);
        CU_ASSERT_PTR_EQUAL(order[0], slow[0]);
        CU_ASSERT_PTR_EQUAL(order[1], other);
        CU_ASSERT_EQUAL(at_mono[1], due);
        CU_ASSERT_EQUAL(fwd->pace->lim[0].q.len, N - 1);
        CU_ASSERT_EQUAL(slow[1]->where, KD_WHERE_TARGET_Q);
        step(2000);
        CU_ASSERT_EQUAL(claims, N + 1);
        /* The rest in due order, one a token: 10/s is a token every
         * 100 ms, and the bucket's wait is rounded up a millisecond (never
         * faster than the rate): exactly 101 ms apart. */
        for (int i = 1; i < N; i++) {
                CU_ASSERT_PTR_EQUAL(order[i + 1], slow[i]);
                CU_ASSERT_EQUAL(at_mono[i + 1] - due, 101 * i);
        }
        fwd->hooks->claim = kd_claim_enqueue;
        /* Every move was a legal one (kd_lifecycle.h). */
        CU_ASSERT_EQUAL(kd_metric_get(&fwd->metrics, KD_M_TASK_STATE_BUGS), 0);
        for (int i = 0; i < N; i++)
                kd_test_task_drop(fwd, slow[i]);
        kd_test_task_drop(fwd, other);
}

/* Wall time t went to its fire (kd_fire_now: RETRY, waiting for the
 * broker's clock, this forwarder never having run), stepping at most
 * limit ms; -1 if not. */
static int64_t fired_within(kd_task_t *t, int64_t limit)
{
        for (int64_t i = 0; i <= limit; i++) {
                if (i)
                        step(1);
                if (t->state == KD_TASK_RETRY)
                        return kd_fwd_now(fwd);
        }
        return -1;
}

static void test_max_fire_rate_spreads_fires_due_together(void)
{
        kd_task_t *t[3];
        int64_t fire_at = kd_fwd_now(fwd) + 3000;
        int64_t limited = kd_metric_get(&fwd->metrics, KD_M_RATE_LIMITED);
        fwd->hooks->claim = claim_asked;
        claims = 0;
        won = 1;
        hold(t, 3, 'f', "fast", fire_at);
        step(3000 - 1);
        CU_ASSERT_EQUAL(claims, 3);
        for (int i = 0; i < 3; i++)
                CU_ASSERT_EQUAL(t[i]->state, KD_TASK_CLAIMED);
        /* 4/s, a burst of one: the first at its fire time, the next two
         * queued (PACED), then a token every 250 ms (+1, rounded up). */
        step(1);
        CU_ASSERT_EQUAL(kd_fwd_now(fwd), fire_at);
        CU_ASSERT_EQUAL(t[0]->state, KD_TASK_RETRY);
        CU_ASSERT_EQUAL(t[1]->state, KD_TASK_PACED);
        CU_ASSERT_EQUAL(t[2]->state, KD_TASK_PACED);
        CU_ASSERT_EQUAL(fwd->pace->q.len, 2);
        CU_ASSERT_EQUAL(fired_within(t[1], 1000) - fire_at, 251);
        CU_ASSERT_EQUAL(t[2]->state, KD_TASK_PACED);
        CU_ASSERT_EQUAL(fired_within(t[2], 1000) - fire_at, 502);
        /* The two that waited for a token were counted (rate_limited). */
        CU_ASSERT_EQUAL(
            kd_metric_get(&fwd->metrics, KD_M_RATE_LIMITED) - limited, 2);
        fwd->hooks->claim = kd_claim_enqueue;
        /* Every move was a legal one (kd_lifecycle.h). */
        CU_ASSERT_EQUAL(kd_metric_get(&fwd->metrics, KD_M_TASK_STATE_BUGS), 0);
        for (int i = 0; i < 3; i++)
                kd_test_task_drop(fwd, t[i]);
}

/* Fires to a limited target keep its burst whatever the loop does: 60
 * tasks due together to a target limited to 100/s with a burst of 10; the
 * claims let through are answered late and together (a slow fate store),
 * then the loop is held up 300 ms (a commit, a slow host: no timer runs)
 * while they fire. After it, no more than the burst fire at once, and no
 * window of W ms holds more than the burst and W ms of the rate. (The
 * fires were booked ahead before, and the slots of the stall all went
 * at its end: 30 at once.) */
#define BUSY_N     60
#define BUSY_RATE  100
#define BUSY_BURST 10
#define STALL_MS   300

/* The busy case's forwarder (the file's, fwd, set aside meanwhile), its
 * tasks, and when each went to its fire (ms after fire_at; -1 = not yet). */
static kd_fwd_t *set_aside;
static kd_task_t *busy_t[BUSY_N];
static int64_t busy_fired[BUSY_N], busy_fire_at;
static int busy_went;

/* BUSY_N tasks to "busy" (BUSY_RATE/s, a burst of BUSY_BURST) due in 3 s,
 * held on a forwarder of their own (with max_fire_rate, max_rate fires/s,
 * unless 0); their claims won when asked if claims_won. */
static void busy_begin(int claims_won, const char *max_rate)
{
        const char *const busy[] = {"forwarder.claim_ahead",
                                    "1s",
                                    "forwarder.target_rate_limits",
                                    "busy=100/10",
                                    "forwarder.max_fire_rate",
                                    max_rate,
                                    NULL};
        set_aside = fwd;
        CU_ASSERT_EQUAL_FATAL(
            kd_test_fwd_vt(&fwd, "pace-busy", MONO0, WALL0, busy), 0);
        fwd->hooks->claim = claim_asked;
        claims = 0;
        won = claims_won;
        busy_fire_at = kd_fwd_now(fwd) + 3000;
        hold(busy_t, BUSY_N, 'b', "busy", busy_fire_at);
        for (int i = 0; i < BUSY_N; i++)
                busy_fired[i] = -1;
        busy_went = 0;
}

/* Notes the tasks gone to their fire since the last look (kd_fire_now:
 * RETRY, waiting for the broker's clock). */
static void busy_look(void)
{
        for (int i = 0; i < BUSY_N; i++)
                if (busy_fired[i] < 0 && busy_t[i]->state == KD_TASK_RETRY) {
                        busy_fired[i] = kd_fwd_now(fwd) - busy_fire_at;
                        busy_went++;
                }
}

/* All went, none early, in due order, the burst at one instant and no
 * more, no window of w ms over the burst and w ms of the rate, the last
 * at last_ms (virtual time: exact); prints how (what: the case). Then
 * drops the forwarder. */
static void busy_end(const char *what, int64_t last_ms)
{
        int worst_at_once = 0, over = 0;
        CU_ASSERT_EQUAL(busy_went, BUSY_N);
        for (int i = 0; i < BUSY_N; i++) {
                CU_ASSERT(busy_fired[i] >= 0);
                if (i)
                        CU_ASSERT(busy_fired[i] >= busy_fired[i - 1]);
                for (int j = i; j < BUSY_N; j++) {
                        int64_t w = busy_fired[j] - busy_fired[i];
                        int n = j - i + 1;
                        if (!w && n > worst_at_once)
                                worst_at_once = n;
                        if (n > BUSY_BURST + w * BUSY_RATE / 1000 + 1)
                                over++;
                }
        }
        CU_ASSERT_EQUAL(worst_at_once, BUSY_BURST);
        CU_ASSERT_EQUAL(over, 0);
        CU_ASSERT_EQUAL(busy_fired[BUSY_N - 1], last_ms);
        printf("  %d fires due together at %d/s, burst %d, %s: most at one "
               "instant %d, windows over the limit %d, the last at +%lld "
               "ms\n",
               BUSY_N, BUSY_RATE, BUSY_BURST, what, worst_at_once, over,
               (long long)busy_fired[BUSY_N - 1]);
        CU_ASSERT_EQUAL(kd_metric_get(&fwd->metrics, KD_M_TASK_STATE_BUGS), 0);
        for (int i = 0; i < BUSY_N; i++)
                kd_test_task_drop(fwd, busy_t[i]);
        kd_fwd_destroy(fwd);
        fwd = set_aside;
}

/* Fires to a limited target keep its burst whatever the loop does: the
 * claims let through are answered late and together (a slow fate store),
 * then the loop is held up STALL_MS (a commit, a slow host: no timer
 * runs) while they fire. (The fires were booked ahead before, and the
 * slots of the stall all went at its end: 30 at once.) */
static void test_a_held_up_loop_does_not_bunch_a_limited_targets_fires(void)
{
        busy_begin(0, "0"); /* answered below, together */
        int answered = 0, stalled = 0;
        while (busy_went < BUSY_N && kd_fwd_now(fwd) < busy_fire_at + 5000) {
                if (!answered && kd_fwd_now(fwd) >= busy_fire_at + 200) {
                        answered = 1; /* every claim asked, at once */
                        CU_ASSERT_EQUAL(claims, BUSY_N);
                        for (int i = 0; i < BUSY_N; i++) {
                                kd_task_set_state(fwd, busy_t[i],
                                                  KD_TASK_CLAIMING);
                                kd_pace_claimed(fwd, busy_t[i]);
                        }
                }
                if (!stalled && kd_fwd_now(fwd) >= busy_fire_at + 250) {
                        stalled = 1; /* nothing runs for STALL_MS */
                        CU_ASSERT_EQUAL_FATAL(
                            kd_clocksrc_advance(&fwd->timers.clock, STALL_MS),
                            0);
                        kd_timers_run(&fwd->timers, 100000);
                } else {
                        step(1);
                }
                busy_look();
        }
        CU_ASSERT(answered && stalled);
        /* 25 by the stall's end (the burst twice, 5 between), then one
         * every 10 ms: the last 350 ms on. */
        busy_end("claims answered together, then a 300 ms stall", 910);
}

/* A revoke's wait runs no timers (kd_rebalance's fire_claimed): the
 * claimed tasks it finds due go through their rule's fires' bucket
 * (kd_pace_due_now), the rest of them as kd_pace_release lets them out,
 * never all at once; max_fire_rate (here 20/s) yields to the rebalance:
 * none is left in its queue, where the revoke would not fire it. */
static void test_a_revokes_wait_keeps_a_limited_targets_burst(void)
{
        busy_begin(1, "20");
        step(3000 - 1); /* all claimed, their fire timers armed */
        CU_ASSERT_EQUAL(claims, BUSY_N);
        /* The revoke comes 1 s after they were due: each is due. */
        CU_ASSERT_EQUAL_FATAL(kd_clocksrc_advance(&fwd->timers.clock, 1001), 0);
        int queued = 0;
        for (int i = 0; i < BUSY_N; i++) {
                CU_ASSERT_EQUAL(busy_t[i]->state, KD_TASK_CLAIMED);
                kd_task_detach(fwd, busy_t[i]);
                queued += kd_pace_due_now(fwd, busy_t[i]);
        }
        busy_look();
        CU_ASSERT_EQUAL(busy_went, BUSY_BURST);
        CU_ASSERT_EQUAL(queued, BUSY_N - BUSY_BURST);
        int releases = 0;
        for (int64_t next; (next = kd_pace_release(fwd)) != INT64_MAX;) {
                busy_look();
                int64_t mono = kd_fwd_mono_ms(fwd);
                CU_ASSERT_FATAL(next > mono && releases++ < 10 * BUSY_N);
                CU_ASSERT_EQUAL_FATAL(
                    kd_clocksrc_advance(&fwd->timers.clock, next - mono), 0);
        }
        busy_look();
        CU_ASSERT_EQUAL(fwd->pace->q.len, 0);
        /* Due at +1001, the burst then, one every 10 ms after. */
        busy_end("due at a revoke's wait",
                 1001 + 10 * (BUSY_N - BUSY_BURST) - 1);
}

int main(void)
{
        static const kd_test_case_t cases[] = {
            KD_TEST(test_a_limited_target_goes_at_its_rate_others_at_once),
            KD_TEST(test_max_fire_rate_spreads_fires_due_together),
            KD_TEST(test_a_held_up_loop_does_not_bunch_a_limited_targets_fires),
            KD_TEST(test_a_revokes_wait_keeps_a_limited_targets_burst),
            KD_TEST_END};
        return kd_test_run("pace_vt", cases, setup, teardown);
}
