/* SPDX-License-Identifier: Apache-2.0 */
/* Lease takeover in virtual time (claim.c, kd_verdict.h): a forwarder made
 * but never run, on a manual clock stepped a millisecond at a time, against
 * the in-memory fate store, whose leases pass on the same clock
 * (kd_test_fwd_vt). A task's row is FIRING under another owner: while that
 * owner's lease holds, the claim waits for it (and KD_LEASE_SLACK_MS); once
 * it passed, at_least_once waits forwarder.foreign_claim_wait once more
 * for the owner's FIRED mark, then takes the claim over — at those
 * moments, not a millisecond before. An owner that keeps renewing its
 * lease keeps its claim: the claim waits for each renewed lease in turn
 * and never takes it over (moved here from test_fwd_mock's
 * a_live_claim_with_a_lease_is_never_taken_over, issue 37). */
#include <stdio.h>

#include "core/kd_timer.h"
#include "fwd_offline.h"
#include "kd_fate_mem.h"
#include "kd_test.h"
#include "pipeline/kd_claim.h"
#include "store/kd_store_state.h"
#include "top/kd_fwd.h"

#define MONO0      1000000
#define WALL0      1700000000000
#define LINGER     500  /* claim_ahead / 2: a claim's batch waits */
#define SLACK      20   /* claim.c: KD_LEASE_SLACK_MS */
#define FOREIGN_MS 1000 /* forwarder.foreign_claim_wait */
#define THEIRS_MS  2000 /* the other owner's lease left at birth */
#define OTHER      "other:0a0b0c0d.1:7"

static const char *const settings[] = {"forwarder.claim_ahead",
                                       "1s",
                                       "forwarder.claim_lease",
                                       "3s",
                                       "forwarder.foreign_claim_wait",
                                       "1s",
                                       NULL};

static void step(kd_fwd_t *f, int64_t ms)
{
        CU_ASSERT_EQUAL_FATAL(kd_test_step_serving(f, ms), 0);
}

/* Steps until t is in place `where` (at most limit ms): the monotonic
 * time it got there, or -1. */
static int64_t step_until(kd_fwd_t *f, kd_task_t *t, kd_task_where_t where,
                          int64_t limit)
{
        for (int64_t i = 0; i <= limit; i++) {
                if (i)
                        step(f, 1);
                if (t->where == where)
                        return kd_fwd_mono_ms(f);
        }
        return -1;
}

static const char *owner_of(kd_fwd_t *f, const char *id, char *buf, size_t size)
{
        kd_fate_mem_row_t row;
        if (kd_fate_mem_get(f->store->fate, id, 1, &row))
                return "";
        snprintf(buf, size, "%s", row.owner);
        return buf;
}

/* Another owner holds task t's row FIRING, with a lease of lease_ms (put
 * again: renewed). */
static void other_holds(kd_fwd_t *f, const kd_task_t *t, int64_t lease_ms)
{
        kd_fate_mem_row_t row = {.fate = KDELAY_FATE_FIRING,
                                 .fire_at_ms = t->rec.fire_at_ms,
                                 .lease_ms = lease_ms};
        snprintf(row.owner, sizeof(row.owner), "%s", OTHER);
        CU_ASSERT_EQUAL_FATAL(kd_fate_mem_put(f->store->fate, "t", 1, &row), 0);
}

/* Task "t", held, due a minute on, its row held by another owner with a
 * lease of lease_ms. */
static kd_task_t *held_under_other(kd_fwd_t *f, int64_t lease_ms)
{
        kd_task_t *t = kd_test_task("t", "out", WALL0 + 60000);
        CU_ASSERT_PTR_NOT_NULL_FATAL(t);
        t->state = KD_TASK_HELD;
        other_holds(f, t, lease_ms);
        return t;
}

static void test_taken_over_once_the_lease_and_foreign_wait_passed(void)
{
        kd_fwd_t *f = NULL;
        CU_ASSERT_EQUAL_FATAL(
            kd_test_fwd_vt(&f, "takeover", MONO0, WALL0, settings), 0);
        kd_task_t *t = held_under_other(f, THEIRS_MS);
        char buf[KD_FATE_OWNER_MAX + 1];

        /* The claim goes out after its batch's linger and finds the other
         * owner's lease holding (1,500 ms left): it waits that and the
         * slack. */
        kd_claim_enqueue(f, t);
        step(f, LINGER);
        CU_ASSERT_EQUAL(t->state, KD_TASK_HELD);
        CU_ASSERT_EQUAL(t->where, KD_WHERE_TIMER);
        int64_t lease_end = MONO0 + THEIRS_MS;
        CU_ASSERT_EQUAL(kd_timer_due(&t->timer), lease_end + SLACK);
        CU_ASSERT_EQUAL(step_until(f, t, KD_WHERE_CLAIM_Q, 10000),
                        lease_end + SLACK);
        /* Claimed again after the linger: the lease passed, so
         * at_least_once waits foreign_claim_wait for the owner's mark. */
        int64_t again = lease_end + SLACK + LINGER;
        step(f, LINGER - 1);
        CU_ASSERT_EQUAL(t->where, KD_WHERE_CLAIM_Q);
        step(f, 1);
        CU_ASSERT_EQUAL(t->where, KD_WHERE_TIMER);
        CU_ASSERT_EQUAL(kd_timer_due(&t->timer), again + FOREIGN_MS);
        CU_ASSERT_STRING_EQUAL(owner_of(f, "t", buf, sizeof(buf)), OTHER);
        CU_ASSERT_EQUAL(kd_metric_get(&f->metrics, KD_M_TAKEOVERS), 0);
        /* Then claimed once more, found unchanged: taken over, its claim
         * and the takeover answered in the same millisecond. */
        int64_t taken = again + FOREIGN_MS + LINGER;
        step(f, FOREIGN_MS + LINGER - 1);
        CU_ASSERT_EQUAL(t->state, KD_TASK_CLAIMING);
        CU_ASSERT_STRING_EQUAL(owner_of(f, "t", buf, sizeof(buf)), OTHER);
        step(f, 1);
        CU_ASSERT_EQUAL(kd_fwd_mono_ms(f), taken);
        CU_ASSERT_EQUAL(t->state, KD_TASK_CLAIMED);
        CU_ASSERT_EQUAL(kd_metric_get(&f->metrics, KD_M_TAKEOVERS), 1);
        CU_ASSERT_STRING_EQUAL(owner_of(f, "t", buf, sizeof(buf)), t->token);
        CU_ASSERT_EQUAL(t->lease_mono, taken + 3000);
        CU_ASSERT_EQUAL(kd_metric_get(&f->metrics, KD_M_TASK_STATE_BUGS), 0);
        kd_test_task_drop(f, t);
        kd_fwd_destroy(f);
}

/* The other owner renews its lease (800 ms) every 300 ms for 10 s: the
 * claim looks at the row each time the lease it saw passed, finds it
 * renewed, and waits again; it is never taken over. */
static void test_a_renewed_lease_is_never_taken_over(void)
{
        enum { LEASE = 800, RENEW_EVERY = 300, RENEWING_MS = 10000 };
        kd_fwd_t *f = NULL;
        CU_ASSERT_EQUAL_FATAL(
            kd_test_fwd_vt(&f, "takeover", MONO0, WALL0, settings), 0);
        kd_task_t *t = held_under_other(f, LEASE);
        char buf[KD_FATE_OWNER_MAX + 1];

        kd_claim_enqueue(f, t);
        int64_t looked = 0, prev_where = t->where;
        for (int ms = 1; ms <= RENEWING_MS; ms++) {
                if (ms % RENEW_EVERY == 0)
                        other_holds(f, t, LEASE);
                step(f, 1);
                CU_ASSERT_NOT_EQUAL_FATAL(t->state, KD_TASK_CLAIMED);
                /* Each time it goes back to the claim queue, the row is
                 * looked at again. */
                looked += t->where == KD_WHERE_CLAIM_Q &&
                          prev_where != KD_WHERE_CLAIM_Q;
                prev_where = t->where;
        }
        printf("\n  looked at the row again %lld times in %d ms",
               (long long)looked, RENEWING_MS);
        CU_ASSERT_EQUAL(looked, 8); /* virtual time: exact */
        CU_ASSERT_STRING_EQUAL(owner_of(f, "t", buf, sizeof(buf)), OTHER);
        CU_ASSERT_EQUAL(kd_metric_get(&f->metrics, KD_M_TAKEOVERS), 0);
        CU_ASSERT_EQUAL(kd_metric_get(&f->metrics, KD_M_TASK_STATE_BUGS), 0);
        /* Dropped while it waits on its timer (no claim out). */
        CU_ASSERT(step_until(f, t, KD_WHERE_TIMER, 10000) > 0);
        kd_test_task_drop(f, t);
        kd_fwd_destroy(f);
}

int main(void)
{
        static const kd_test_case_t cases[] = {
            KD_TEST(test_taken_over_once_the_lease_and_foreign_wait_passed),
            KD_TEST(test_a_renewed_lease_is_never_taken_over), KD_TEST_END};
        return kd_test_run("takeover_vt", cases, NULL, NULL);
}
