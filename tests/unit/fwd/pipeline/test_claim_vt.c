/* SPDX-License-Identifier: Apache-2.0 */
/* The claim stage in virtual time (kd_claim.h): a forwarder made but never
 * run, on a manual clock stepped a millisecond at a time, against the
 * in-memory fate store. Everything the stage decides runs on the test's
 * thread; only the store's statements run on its worker, and the test
 * waits for their answers (no clock moves meanwhile) before serving them
 * as the loop would (kd_store_serve). A claim waits up to claim_ahead/2 to
 * fill its batch and goes at once when the batch is full; a won claim's
 * lease is renewed in the first round that finds a third of it used, not
 * before; a claim another owner holds now is lost, and its task dropped. */
#include <stdio.h>

#include "core/kd_part.h"
#include "core/kd_timer.h"
#include "fwd_offline.h"
#include "kd_fate_mem.h"
#include "kd_test.h"
#include "pipeline/kd_claim.h"
#include "pipeline/kd_pipeline_state.h"
#include "store/kd_store.h"
#include "store/kd_store_state.h"
#include "top/kd_fwd.h"

#define MONO0    1000000
#define WALL0    1700000000000
#define LINGER   500 /* claim_ahead / 2 */
#define LEASE_MS 3000

static const char *const settings[] = {"forwarder.claim_ahead",
                                       "1s",
                                       "forwarder.claim_batch",
                                       "3",
                                       "forwarder.claim_lease",
                                       "3s",
                                       NULL};

static kd_fwd_t *born(void)
{
        kd_fwd_t *f = NULL;
        return kd_test_fwd_vt(&f, "claim", MONO0, WALL0, settings) ? NULL : f;
}

static void step(kd_fwd_t *f, int64_t ms)
{
        CU_ASSERT_EQUAL_FATAL(kd_test_step(f, ms), 0);
}

static void serve_all(kd_fwd_t *f)
{
        CU_ASSERT_EQUAL_FATAL(kd_test_store_answers(f), 0);
}

/* A held task whose claim is due, to target "out", fire-at in a minute. */
static kd_task_t *held(kd_fwd_t *f, const char *id)
{
        kd_task_t *t = kd_test_task(id, "out", kd_fwd_now(f) + 60000);
        CU_ASSERT_PTR_NOT_NULL_FATAL(t);
        t->state = KD_TASK_HELD;
        return t;
}

static void test_a_batch_waits_half_claim_ahead_or_goes_full(void)
{
        kd_fwd_t *f = born();
        CU_ASSERT_PTR_NOT_NULL_FATAL(f);
        kd_task_t *t[5];
        for (int i = 0; i < 5; i++) {
                char id[8];
                snprintf(id, sizeof(id), "b%d", i);
                t[i] = held(f, id);
        }
        kd_claim_enqueue(f, t[0]);
        step(f, LINGER - 1);
        CU_ASSERT_EQUAL(t[0]->where, KD_WHERE_CLAIM_Q);
        CU_ASSERT_EQUAL(f->claim->inflight, 0);
        step(f, 1); /* a batch of one, claim_ahead/2 after it was queued */
        CU_ASSERT_EQUAL(t[0]->where, KD_WHERE_CLAIM_REQ);
        CU_ASSERT_EQUAL(f->claim->inflight, 1);
        /* Three (claim_batch) go at once, in the same millisecond. */
        for (int i = 1; i <= 3; i++)
                kd_claim_enqueue(f, t[i]);
        kd_timers_run(&f->timers, 1000);
        for (int i = 1; i <= 3; i++)
                CU_ASSERT_EQUAL(t[i]->where, KD_WHERE_CLAIM_REQ);
        CU_ASSERT_EQUAL(f->claim->inflight, 2);
        /* The next one waits for its own batch's linger. */
        kd_claim_enqueue(f, t[4]);
        step(f, LINGER - 1);
        CU_ASSERT_EQUAL(t[4]->where, KD_WHERE_CLAIM_Q);
        step(f, 1);
        CU_ASSERT_EQUAL(t[4]->where, KD_WHERE_CLAIM_REQ);
        CU_ASSERT_EQUAL(f->claim->inflight, 3);
        serve_all(f);
        CU_ASSERT_EQUAL(f->claim->inflight, 0);
        for (int i = 0; i < 5; i++)
                CU_ASSERT_EQUAL(t[i]->state, KD_TASK_CLAIMED);
        CU_ASSERT_EQUAL(kd_metric_get(&f->metrics, KD_M_CLAIMED), 5);
        for (int i = 0; i < 5; i++)
                kd_test_task_drop(f, t[i]);
        CU_ASSERT_EQUAL(kd_metric_get(&f->metrics, KD_M_TASK_STATE_BUGS), 0);
        kd_fwd_destroy(f);
}

static void test_a_lease_is_renewed_before_it_expires_a_lost_one_dropped(void)
{
        kd_fwd_t *f = born();
        CU_ASSERT_PTR_NOT_NULL_FATAL(f);
        /* The renewal rounds walk the partitions' task lists: one
         * partition, two tasks. */
        kd_part_t p = {.topic = "kdelay-1m", .topic_len = 9};
        kd_task_t *a = held(f, "a"), *b = held(f, "b");
        a->part = b->part = &p;
        p.tasks = a;
        a->next = b;
        b->prev = a;
        f->intake->parts = &p;
        kd_claim_enqueue(f, a);
        kd_claim_enqueue(f, b);
        step(f, LINGER);
        serve_all(f);
        CU_ASSERT_EQUAL(a->state, KD_TASK_CLAIMED);
        CU_ASSERT_EQUAL(b->state, KD_TASK_CLAIMED);
        /* Held from the claim's sending for the lease (the store's leases
         * pass on the same clock: kd_test_fwd_vt). */
        CU_ASSERT_EQUAL(a->lease_mono, MONO0 + LINGER + LEASE_MS);
        /* Another owner has b's row now (its lease taken over). */
        kd_fate_mem_row_t row = {.fate = KDELAY_FATE_FIRING,
                                 .fire_at_ms = b->rec.fire_at_ms,
                                 .lease_ms = 60000};
        snprintf(row.owner, sizeof(row.owner), "other:1.1:1");
        CU_ASSERT_EQUAL(kd_fate_mem_put(f->store->fate, "b", 1, &row), 0);
        /* Rounds every lease/3 from birth: the one at 1,000 ms finds 2.5 s
         * left (not a third used), the one at 2,000 ms 1.5 s: renewed
         * then, not a millisecond before. */
        step(f, 2000 - LINGER - 1);
        CU_ASSERT_PTR_NULL(a->req);
        CU_ASSERT_EQUAL(f->store->inflight, 0);
        step(f, 1);
        CU_ASSERT_PTR_NOT_NULL(a->req);
        CU_ASSERT_PTR_NOT_NULL(b->req);
        serve_all(f);
        CU_ASSERT_EQUAL(kd_metric_get(&f->metrics, KD_M_LEASE_RENEWALS), 1);
        CU_ASSERT_EQUAL(a->lease_mono, MONO0 + 2000 + LEASE_MS);
        /* b's claim is lost: dropped (nothing of it in flight). */
        CU_ASSERT_EQUAL(kd_metric_get(&f->metrics, KD_M_LEASES_LOST), 1);
        CU_ASSERT_PTR_EQUAL(p.tasks, a);
        CU_ASSERT_PTR_NULL(a->next);
        f->intake->parts = NULL;
        kd_test_task_drop(f, a);
        CU_ASSERT_EQUAL(kd_metric_get(&f->metrics, KD_M_TASK_STATE_BUGS), 0);
        kd_fwd_destroy(f);
}

int main(void)
{
        static const kd_test_case_t cases[] = {
            KD_TEST(test_a_batch_waits_half_claim_ahead_or_goes_full),
            KD_TEST(
                test_a_lease_is_renewed_before_it_expires_a_lost_one_dropped),
            KD_TEST_END};
        return kd_test_run("claim_vt", cases, NULL, NULL);
}
