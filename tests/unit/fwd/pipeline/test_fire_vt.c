/* SPDX-License-Identifier: Apache-2.0 */
/* The fire stage's seams in virtual time (fire*.c between claim.c,
 * settle.c and the delivery mode), at_least_once: a forwarder made but
 * never run (kd_test_fwd_vt), its store hung by never serving the fate
 * worker's answers (as test_outage_after), its producer pointed at no
 * broker, so that what it produces stays queued until the test purges it
 * and serves the reports (kd_fire_dr_cb) on its own thread.
 *  - the claim stage's result says "unclaimed" (a task a MySQL outage lets
 *    fire without a claim, fate_outage_policy=fire), and the settle stage
 *    puts such a fire on record by its journal: at_least_once writes the
 *    record of intent first, and the fire waits for it;
 *  - that record failing breaks the journal: the task is claimed after
 *    all (the claim stage's result is ROW again);
 *  - the alone-fallback is the mode's (mode_alo.c): a record refused in a
 *    batch goes again alone, through the solo producer; refused alone, its
 *    target's refusal is learned;
 *  - a late fire in flight on the bulk producer when the main producer
 *    fails for good (its renewal purges the bulk one without a flush), or
 *    when the bulk one does: its purged report makes it a retry, its
 *    offset held and its row FIRING, uncovered by any run, until a new
 *    bulk producer sends it again (issue 44's review). */
#include <string.h>

#include "core/kd_part.h"
#include "core/kd_timer.h"
#include "fwd_offline.h"
#include "kd_fate_mem.h"
#include "kd_test.h"
#include "modes/kd_mode.h"
#include "pipeline/kd_claim.h"
#include "pipeline/kd_intake.h"
#include "pipeline/kd_outage.h"
#include "pipeline/kd_pipeline_state.h"
#include "pipeline/kd_runs.h"
#include "pipeline/kd_settle.h"
#include "producer/kd_producer.h"
#include "store/kd_store_state.h"
#include "top/kd_fwd.h"

#define MONO0 1000000
#define WALL0 1700000000000
/* store.c: a ping once nothing answered for 5 s; a request unanswered
 * 5 s more means the store is down, since it went out; fires without
 * claims fate_outage_after (7 s) from then. */
#define FIRING_AT 12000
/* The task's fire time, a second later. */
#define FIRE_AT 13000
/* fire_retry.c: the first retry's backoff. */
#define RETRY_MS 100

static const char *const settings[] = {"forwarder.fate_outage_policy", "fire",
                                       "forwarder.fate_outage_after", "7s",
                                       NULL};

static void step_to(kd_fwd_t *f, int64_t ms)
{
        CU_ASSERT_EQUAL_FATAL(kd_test_step_to(f, MONO0, ms), 0);
}

/* A held task of partition part, to target "out", fire-at fire_ms of the
 * test's time; keyless, so that a target can refuse it as keyless. */
static kd_task_t *held(kd_part_t *part, const char *id, int64_t fire_ms)
{
        kd_task_t *t =
            kd_test_task_in(part, id, "out", WALL0 + fire_ms, KD_TASK_HELD);
        CU_ASSERT_PTR_NOT_NULL_FATAL(t);
        return t;
}

/* The producer's queued records fail (purged), and their reports are
 * served as the loop would. */
static void reports_failed(kd_fwd_t *f)
{
        CU_ASSERT_EQUAL(
            rd_kafka_purge(kd_producer_main(f),
                           RD_KAFKA_PURGE_F_QUEUE | RD_KAFKA_PURGE_F_INFLIGHT),
            RD_KAFKA_RESP_ERR_NO_ERROR);
        kd_producer_serve(f);
}

static void dropped(kd_fwd_t *f, kd_part_t *part, kd_task_t *t)
{
        part->tasks = NULL;
        t->part = NULL;
        kd_test_task_drop(f, t);
}

static void test_unclaimed_the_journal_first_claimed_once_it_fails(void)
{
        kd_fwd_t *f = NULL;
        CU_ASSERT_EQUAL_FATAL(
            kd_test_fwd_vt(&f, "fire", MONO0, WALL0, settings), 0);
        f->clock->known = 1; /* the broker's clock is not the subject */
        kd_part_t *part = kd_intake_part_open(f, "kdelay-1m", 0, 60000);
        CU_ASSERT_PTR_NOT_NULL_FATAL(part);
        kd_task_t *t = held(part, "u", FIRE_AT);
        step_to(f, FIRING_AT);
        CU_ASSERT_TRUE_FATAL(kd_outage_firing(f));
        /* Its claim is due: no claim, the claim stage says unclaimed. */
        kd_claim_enqueue(f, t);
        kd_timers_run(&f->timers, 1000);
        CU_ASSERT_EQUAL(t->state, KD_TASK_CLAIMED);
        CU_ASSERT_EQUAL(t->claim, KD_CLAIM_UNCLAIMED);
        CU_ASSERT_EQUAL(kd_settle_mark(t, KD_TASK_FIRING), KD_MARK_JOURNAL);
        /* At its fire time the settle stage's journal goes first: the
         * record of intent, the fire waiting for its report. */
        step_to(f, FIRE_AT - 1);
        CU_ASSERT_EQUAL(t->state, KD_TASK_CLAIMED);
        step_to(f, FIRE_AT);
        CU_ASSERT_EQUAL_FATAL(t->state, KD_TASK_INTENT);
        CU_ASSERT_EQUAL(t->where, KD_WHERE_FLIGHT);
        CU_ASSERT_EQUAL(kd_producer_inflight(f), 1);
        CU_ASSERT_EQUAL(kd_metric_get(&f->metrics, KD_M_FIRED), 0);
        /* The record fails: the journal is broken, nothing was fired. */
        reports_failed(f);
        CU_ASSERT_EQUAL(kd_producer_inflight(f), 0);
        CU_ASSERT_EQUAL(kd_metric_get(&f->metrics, KD_M_JOURNAL_FAILED), 1);
        CU_ASSERT_EQUAL(t->state, KD_TASK_RETRY);
        CU_ASSERT_EQUAL(t->retry_as, KD_TASK_FIRING);
        CU_ASSERT_FALSE(kd_outage_firing(f));
        /* Its retry finds no outage to fire through: claimed after all. */
        step_to(f, FIRE_AT + RETRY_MS - 1);
        CU_ASSERT_EQUAL(t->state, KD_TASK_RETRY);
        step_to(f, FIRE_AT + RETRY_MS);
        CU_ASSERT_EQUAL_FATAL(t->state, KD_TASK_CLAIMING);
        CU_ASSERT_EQUAL(t->claim, KD_CLAIM_ROW);
        CU_ASSERT_EQUAL(kd_settle_mark(t, KD_TASK_FIRING), KD_MARK_ROW);
        CU_ASSERT_EQUAL(kd_metric_get(&f->metrics, KD_M_TASK_STATE_BUGS), 0);
        dropped(f, part, t);
        kd_fwd_destroy(f);
}

static void test_alone_after_a_refused_batch_learned_when_refused_alone(void)
{
        kd_fwd_t *f = NULL;
        CU_ASSERT_EQUAL_FATAL(kd_test_fwd_vt(&f, "fire", MONO0, WALL0, NULL),
                              0);
        CU_ASSERT_STRING_EQUAL(f->mode->name, "at_least_once");
        CU_ASSERT_PTR_NOT_NULL_FATAL(f->mode->refused);
        kd_part_t *part = kd_intake_part_open(f, "kdelay-1m", 0, 60000);
        CU_ASSERT_PTR_NOT_NULL_FATAL(part);
        kd_task_t *t = held(part, "k", FIRE_AT);
        t->state = KD_TASK_FIRING;
        rd_kafka_t *rk = NULL;
        CU_ASSERT_EQUAL(f->mode->begin(&f->mode_ctx, t, KD_TASK_FIRING, &rk),
                        0);
        CU_ASSERT_PTR_EQUAL(rk, kd_producer_main(f));
        /* A cluster error says nothing of the record: not alone. */
        CU_ASSERT_FALSE(f->mode->refused(&f->mode_ctx, t,
                                         RD_KAFKA_RESP_ERR__MSG_TIMED_OUT));
        /* Its batch refused for what a record is: it goes again alone,
         * through the solo producer. */
        CU_ASSERT_TRUE(f->mode->refused(&f->mode_ctx, t,
                                        RD_KAFKA_RESP_ERR_INVALID_RECORD));
        CU_ASSERT_EQUAL(f->mode->begin(&f->mode_ctx, t, KD_TASK_FIRING, &rk),
                        0);
        CU_ASSERT_PTR_NOT_NULL(rk);
        CU_ASSERT_PTR_NOT_EQUAL(rk, kd_producer_main(f));
        CU_ASSERT_EQUAL(
            kd_refusals_check(&f->refusals, t, kd_fwd_mono_ms(f), 0),
            RD_KAFKA_RESP_ERR_NO_ERROR);
        /* Refused alone: the fire stage dead-letters it, and its target's
         * refusal of keyless records is learned. */
        CU_ASSERT_FALSE(f->mode->refused(&f->mode_ctx, t,
                                         RD_KAFKA_RESP_ERR_INVALID_RECORD));
        CU_ASSERT_EQUAL(
            kd_refusals_check(&f->refusals, t, kd_fwd_mono_ms(f), 0),
            RD_KAFKA_RESP_ERR_INVALID_RECORD);
        t->state = KD_TASK_HELD;
        dropped(f, part, t);
        kd_fwd_destroy(f);
}

/* Its fate as a reader sees it (a FIRING row a run covers reads FIRED). */
static kdelay_fate_t fate_of(kd_fwd_t *f, const char *id)
{
        kdelay_status_t st;
        if (kd_fate_status(f->store->fate, id, strlen(id), &st, NULL, 0))
                return (kdelay_fate_t)-1;
        return st.fate;
}

/* t, a purged fire, waits for its retry: not done, its offset held, its
 * row FIRING and no run over its seq. */
static void purged_retried(kd_fwd_t *f, kd_part_t *part, kd_task_t *t,
                           int retries)
{
        CU_ASSERT_EQUAL(kd_producer_inflight(f), 0);
        CU_ASSERT_EQUAL(t->state, KD_TASK_RETRY);
        CU_ASSERT_EQUAL(t->retry_as, KD_TASK_FIRING);
        CU_ASSERT_EQUAL(t->where, KD_WHERE_TIMER);
        CU_ASSERT_PTR_EQUAL(t->part, part);
        CU_ASSERT_EQUAL(t->retries, retries);
        CU_ASSERT_EQUAL(kd_offtrack_commit_point(&part->track), 7);
        CU_ASSERT_EQUAL(kd_offtrack_pending(&part->track), 1);
        CU_ASSERT_EQUAL(kd_metric_get(&f->metrics, KD_M_FIRED), 0);
        CU_ASSERT(kd_runs_emitted(f->settle->runs) < t->seq);
        CU_ASSERT_EQUAL(fate_of(f, t->rec.id), KDELAY_FATE_FIRING);
}

/* The retry's backoff (its first: 100 ms), then the fire again, in
 * flight through a bulk producer, which is made anew when the old one
 * went. */
static void sent_again(kd_fwd_t *f, kd_task_t *t)
{
        CU_ASSERT_EQUAL_FATAL(
            kd_test_step_serving(f, RETRY_MS << (t->retries - 1)), 0);
        CU_ASSERT_EQUAL(t->state, KD_TASK_FIRING);
        CU_ASSERT_EQUAL(t->where, KD_WHERE_FLIGHT);
        CU_ASSERT_EQUAL(kd_producer_inflight(f), 1);
        CU_ASSERT(t->bulk);
}

/* Issue 44's review: the renewal of a main producer that failed for good
 * purges the bulk producer without a flush (producer.c, bulk_close(f,
 * 0)), and so does the bulk producer's own fatal error. A late fire in
 * flight on it then is reported purged: the fire stage retries it, its
 * task stays unfinished (its offset is not done, so no commit passes it;
 * its row stays FIRING and no run covers its seq), and a new bulk
 * producer sends it again. Nothing is lost, nothing put on record
 * undelivered; a fire purged while in flight may have been written, so
 * its retry may deliver it twice (at_least_once). */
static void test_a_bulk_fire_purged_by_a_renewal_is_retried(void)
{
        static const char *const kv[] = {"forwarder.fate_marks", "runs", NULL};
        kd_fwd_t *f = NULL;
        CU_ASSERT_EQUAL_FATAL(kd_test_fwd_vt(&f, "fire", MONO0, WALL0, kv), 0);
        f->clock->known = 1;
        CU_ASSERT_PTR_NOT_NULL_FATAL(f->settle->runs);
        kd_part_t *part = kd_intake_part_open(f, "kdelay-1m", 0, 60000);
        CU_ASSERT_PTR_NOT_NULL_FATAL(part);
        /* Due a second ago (a backlog): claimed, then fired at once
         * through the bulk producer. */
        kd_task_t *t = held(part, "late", -1000);
        kd_claim_enqueue(f, t);
        CU_ASSERT_EQUAL_FATAL(kd_test_step_serving(f, 251), 0);
        CU_ASSERT_EQUAL_FATAL(t->state, KD_TASK_FIRING);
        CU_ASSERT(t->seq > 0);
        CU_ASSERT(t->late_ms > 1000);
        CU_ASSERT_EQUAL(t->where, KD_WHERE_FLIGHT);
        CU_ASSERT(t->bulk);
        CU_ASSERT_EQUAL(kd_producer_inflight(f), 1);
        /* The main producer fails for good: the loop's turn renews it,
         * and the bulk one goes with the old main one. */
        CU_ASSERT_EQUAL(rd_kafka_test_fatal_error(
                            kd_producer_main(f),
                            RD_KAFKA_RESP_ERR_OUT_OF_ORDER_SEQUENCE_NUMBER,
                            "test"),
                        RD_KAFKA_RESP_ERR_NO_ERROR);
        CU_ASSERT_EQUAL(kd_producer_recover(f), 1);
        CU_ASSERT_EQUAL(kd_metric_get(&f->metrics, KD_M_PRODUCER_RENEWALS), 1);
        purged_retried(f, part, t, 1);
        /* Flushes come and go: the seq stays open (no run, no mark). */
        CU_ASSERT_EQUAL_FATAL(kd_test_step_serving(f, RETRY_MS - 1), 0);
        purged_retried(f, part, t, 1);
        sent_again(f, t);
        /* The bulk producer itself fails for good: the loop's serving
         * turn ends it, and its fire is retried alike. */
        rd_kafka_t *bulk = kd_producer_bulk(f);
        CU_ASSERT_PTR_NOT_NULL_FATAL(bulk);
        rd_kafka_t *main = kd_producer_main(f);
        CU_ASSERT_EQUAL(
            rd_kafka_test_fatal_error(
                bulk, RD_KAFKA_RESP_ERR_OUT_OF_ORDER_SEQUENCE_NUMBER, "test"),
            RD_KAFKA_RESP_ERR_NO_ERROR);
        kd_producer_serve(f);
        CU_ASSERT_PTR_EQUAL(kd_producer_main(f), main);
        purged_retried(f, part, t, 2);
        sent_again(f, t);
        CU_ASSERT_EQUAL(kd_metric_get(&f->metrics, KD_M_PRODUCE_RETRIES), 2);
        CU_ASSERT_EQUAL(kd_metric_get(&f->metrics, KD_M_TASK_STATE_BUGS), 0);
        /* Its last fire purged too (the broker is nowhere), then gone. */
        CU_ASSERT_EQUAL(
            rd_kafka_purge(kd_producer_bulk(f),
                           RD_KAFKA_PURGE_F_QUEUE | RD_KAFKA_PURGE_F_INFLIGHT),
            RD_KAFKA_RESP_ERR_NO_ERROR);
        kd_producer_serve(f);
        purged_retried(f, part, t, 3);
        dropped(f, part, t);
        kd_fwd_destroy(f);
}

int main(void)
{
        static const kd_test_case_t cases[] = {
            KD_TEST(test_unclaimed_the_journal_first_claimed_once_it_fails),
            KD_TEST(
                test_alone_after_a_refused_batch_learned_when_refused_alone),
            KD_TEST(test_a_bulk_fire_purged_by_a_renewal_is_retried),
            KD_TEST_END};
        return kd_test_run("fire_vt", cases, NULL, NULL);
}
