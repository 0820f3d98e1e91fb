/* SPDX-License-Identifier: Apache-2.0 */
/* The journal, its reconciliation and the pending mark in virtual time
 * (forwarder.fate_outage_policy=fire: journal.c, outage.c, store.c's
 * gate, settle.c's fires kept until applied): a forwarder made but never
 * run (kd_test_fwd_vt), its store hung by never serving the fate worker's
 * answers (as test_outage_after), then answering again when the test
 * serves them, against the in-memory fate store, whose marker
 * (kd_fate_pending_get) is what the test reads.
 *
 * The reconciliation run reads the journal topic on a thread of its own
 * (reconcile.c): here it is the test's stand-in, linked instead of
 * reconcile.c (kd_reconcile.h's five functions, defined below; kd_fwd is a
 * static library, so reconcile.o is never pulled in). The test says when
 * a run ends and how; a run that ends reads the marker as the real one
 * does before the ends it reads to. What is tested is what the forwarder
 * decides around the run:
 *  - once fires without claims began, MySQL's first statement when it
 *    answers again is the mark (at the gate's next check, 25 ms), before
 *    the request it goes with;
 *  - the mark is cleared only after a run succeeded and this process's
 *    own fires without a claim are settled and applied, and only once
 *    nobody renewed it for KD_OUTAGE_MARK_STALE_MS as a run read it
 *    (two owners: the one settling first leaves it to the other);
 *  - a revoked task's failed record of delivery keeps its fire;
 *  - a mark by another forwarder since the run read the marker keeps the
 *    journal pending, and a run begins again;
 *  - claims wait for a run at most KD_OUTAGE_APPLY_WAIT_MS; a failed run
 *    leaves the mark and is tried again KD_OUTAGE_RETRY_MS later;
 *  - a failed journal record holds fires for claims 10 s;
 *  - a record of delivery the journal refuses for good ("unknown topic":
 *    the topic deleted while it was in flight, such answers spanning
 *    KD_JOURNAL_GONE_CONFIRM_MS: before, it is written again) is not
 *    written again: its fire is applied from memory, and the mark clears
 *    (issue 43, case 2); its task holds its offset until that apply
 *    succeeds, so a crash before it reads the task again;
 *  - a forwarder renews its mark while its fires are unsettled; another
 *    forwarder's clear leaves a renewed mark and clears a stale one;
 *  - any forwarder, hold policy too, applies a journal at its start and
 *    every KD_OUTAGE_SWEEP_MS, marks what it finds unmarked, and clears a
 *    mark left by a forwarder that is gone (issue 43, case 3). */
#include <stdio.h>
#include <string.h>

#include "core/kd_part.h"
#include "core/kd_timer.h"
#include "fwd_offline.h"
#include "kd_fate_mem.h"
#include "kd_test.h"
#include "modes/kd_mode.h"
#include "pipeline/kd_claim.h"
#include "pipeline/kd_fire.h"
#include "pipeline/kd_intake.h"
#include "pipeline/kd_journal.h"
#include "pipeline/kd_lifecycle.h"
#include "pipeline/kd_outage.h"
#include "pipeline/kd_pipeline_state.h"
#include "pipeline/kd_settle.h"
#include "producer/kd_producer.h"
#include "store/kd_reconcile.h"
#include "store/kd_store.h"
#include "store/kd_store_state.h"
#include "top/kd_fwd.h"

#define MONO0 1000000
#define WALL0 1700000000000
/* store.c: a ping once nothing answered for 5 s; a request unanswered
 * 5 s more means the store is down, since it went out; fires without
 * claims fate_outage_after (7 s) from then. */
#define FIRING_AT 12000
/* The test's MySQL answers again then. */
#define BACK_AT 15000
/* store.c: while gated, a ping (which carries the mark) every 25 ms. */
#define GATE_CHECK_MS 25
/* outage.c: a run is looked at every 100 ms; claims wait for it 30 s at
 * most; a failed one is tried again 30 s on; after a run, own fires
 * without a claim are looked at every 100 ms until settled. */
#define POLL_MS       100
#define APPLY_WAIT_MS 30000
#define RETRY_MS      30000
/* journal.c: a failed record holds fires for claims this long. */
#define BROKEN_MS 10000

/* The reconciliation run's stand-in (kd_reconcile.h). */
struct kd_reconcile {
        int unused;
};

static struct {
        struct kd_reconcile run;
        kd_fwd_t *f;
        int starts, ends;        /* runs begun, ended */
        int64_t started_at;      /* test ms of the last start */
        int done;                /* the run going on is over */
        kdelay_err_t result;     /* how */
        kd_reconcile_stats_t st; /* what it read */
        int after_cancel_logs;
} fake;

/* The test's time: ms since the forwarder's birth. */
static int64_t at(const kd_fwd_t *f)
{
        return kd_test_since(f, MONO0);
}

kdelay_err_t kd_reconcile_start(kd_reconcile_t **rp, const kdelay_conf_t *conf,
                                const char *by)
{
        (void)conf;
        (void)by;
        fake.starts++;
        fake.started_at = fake.f ? at(fake.f) : -1;
        fake.done = 0;
        fake.result = KDELAY_OK;
        memset(&fake.st, 0, sizeof(fake.st));
        *rp = &fake.run;
        return KDELAY_OK;
}

void kd_reconcile_progress(kd_reconcile_t *r, kd_reconcile_stats_t *st)
{
        (void)r;
        *st = fake.st;
}

int kd_reconcile_finished(kd_reconcile_t *r)
{
        (void)r;
        return fake.done;
}

kdelay_err_t kd_reconcile_end(kd_reconcile_t *r, kd_reconcile_stats_t *st,
                              char *errstr, size_t errstr_size)
{
        (void)r;
        fake.ends++;
        if (st)
                *st = fake.st;
        kdelay_err_t err = fake.done ? fake.result : KDELAY_ERR_TIMED_OUT;
        if (err)
                snprintf(errstr, errstr_size, "the test's run failed");
        return err;
}

void kd_reconcile_log_after_cancel(const kdelay_conf_t *conf,
                                   const kd_fate_unclaimed_t *it, int delivered)
{
        (void)conf;
        (void)it;
        (void)delivered;
        fake.after_cancel_logs++;
}

static const char *const settings[] = {"forwarder.fate_outage_policy", "fire",
                                       "forwarder.fate_outage_after", "7s",
                                       NULL};

static kd_fwd_t *born_with(const char *const *kv)
{
        memset(&fake, 0, sizeof(fake));
        kd_fwd_t *f = NULL;
        if (kd_test_fwd_vt(&f, "journal", MONO0, WALL0, kv))
                return NULL;
        fake.f = f;
        return f;
}

static kd_fwd_t *born(void)
{
        return born_with(settings);
}

static void tick(kd_fwd_t *f)
{
        CU_ASSERT_EQUAL_FATAL(kd_test_step(f, 1), 0);
}

/* Steps to ms, the store's answers never read (MySQL hangs). */
static void step_to(kd_fwd_t *f, int64_t ms)
{
        CU_ASSERT_EQUAL_FATAL(kd_test_step_to(f, MONO0, ms), 0);
}

/* Steps to ms, every answer served in the millisecond its request went
 * out (MySQL answers at once). */
static void step_serving_to(kd_fwd_t *f, int64_t ms)
{
        CU_ASSERT_EQUAL_FATAL(kd_test_store_answers(f), 0);
        if (at(f) < ms)
                CU_ASSERT_EQUAL_FATAL(kd_test_step_serving(f, ms - at(f)), 0);
}

/* The journal's marker as the store has it. */
static kd_fate_pending_t marker(kd_fwd_t *f)
{
        kd_fate_pending_t p;
        char errstr[256];
        memset(&p, 0, sizeof(p));
        CU_ASSERT_EQUAL(kd_fate_pending_get(f->store->fate, f->journal->topic,
                                            &p, errstr, sizeof(errstr)),
                        KDELAY_OK);
        return p;
}

static int journal_pending(kd_fwd_t *f)
{
        return marker(f).since_ms >= 0;
}

/* The run going on ends with err; it read the marker as it is now. */
static void run_ends(kd_fwd_t *f, kdelay_err_t err)
{
        kd_fate_pending_t p = marker(f);
        fake.st.read = 1;
        fake.st.pending = p.since_ms >= 0;
        fake.st.pending_since_ms = p.since_ms;
        fake.st.marked_age_ms = p.marked_age_ms;
        fake.st.epoch = p.epoch;
        fake.result = err;
        fake.done = 1;
}

/* Each run that begins ends at once, reading the mark as it is; once
 * nobody renewed it for KD_OUTAGE_MARK_STALE_MS, the next run reads it
 * stale and its clear goes: the test time it is cleared (within `within`
 * ms), or -1. */
static int64_t cleared_once_stale(kd_fwd_t *f, int64_t within)
{
        int64_t from = at(f);
        while (journal_pending(f) && at(f) < from + within) {
                step_serving_to(f, at(f) + 1);
                if (fake.starts > fake.ends && !fake.done)
                        run_ends(f, KDELAY_OK); /* reads it as it is */
        }
        return journal_pending(f) ? -1 : at(f);
}

/* A forwarder born with kv, the journal marked by `by` first when it is
 * not NULL (a forwarder gone since), whose outage run (kd_outage_start at
 * 1 s) ended, two polls on; NULL when it cannot be made. */
static kd_fwd_t *born_after_a_run(const char *const *kv, const char *by)
{
        kd_fwd_t *f = born_with(kv);
        if (!f)
                return NULL;
        if (by) {
                char errstr[256];
                CU_ASSERT_EQUAL(kd_fate_pending_mark(f->store->fate,
                                                     f->journal->topic, by,
                                                     errstr, sizeof(errstr)),
                                KDELAY_OK);
        }
        step_serving_to(f, 1000);
        kd_outage_start(f);
        step_serving_to(f, 1000 + POLL_MS - 50);
        run_ends(f, KDELAY_OK);
        step_serving_to(f, 1000 + 2 * POLL_MS);
        return f;
}

/* Fires without claims from FIRING_AT; MySQL answers again at BACK_AT,
 * a run begins; the gate's mark is made at BACK_AT + GATE_CHECK_MS. */
static void outage_and_back(kd_fwd_t *f)
{
        step_to(f, FIRING_AT - 1);
        CU_ASSERT_FALSE(kd_outage_firing(f));
        step_to(f, FIRING_AT);
        CU_ASSERT_TRUE(kd_outage_firing(f));
        step_to(f, BACK_AT);
        CU_ASSERT_EQUAL_FATAL(kd_test_store_answers(f), 0);
        CU_ASSERT_FALSE(f->store->down);
        CU_ASSERT_FALSE(kd_outage_firing(f));
        CU_ASSERT_EQUAL(fake.starts, 1);
        CU_ASSERT_EQUAL(fake.started_at, BACK_AT);
        step_serving_to(f, BACK_AT + GATE_CHECK_MS);
        CU_ASSERT_TRUE(journal_pending(f));
        CU_ASSERT_FALSE(f->store->gate);
}

/* Fires without claims began: the journal is marked pending with
 * MySQL's first statement when it answers again, before anything else. */
static int64_t resumed_pings = -1, resumed_at = -1;
static int resumes;

static void claims_resume_seen(kd_fwd_t *f)
{
        resumes++;
        resumed_at = at(f);
        resumed_pings = kd_metric_get(&f->metrics, KD_M_STORE_PINGS);
        kd_claim_resume(f);
}

static void test_the_gate_marks_the_journal_pending_first(void)
{
        kd_fwd_t *f = born();
        CU_ASSERT_PTR_NOT_NULL_FATAL(f);
        resumes = 0;
        step_to(f, FIRING_AT);
        CU_ASSERT_TRUE(kd_outage_firing(f));
        CU_ASSERT_TRUE(f->store->gate);
        /* Not before MySQL answers: nothing reaches it meanwhile. */
        kd_fate_pending_t p = marker(f);
        CU_ASSERT_EQUAL(p.since_ms, -1);
        CU_ASSERT_EQUAL(p.epoch, 0);
        step_to(f, BACK_AT);
        CU_ASSERT_EQUAL_FATAL(kd_test_store_answers(f), 0); /* the old ping */
        CU_ASSERT_FALSE(f->store->down);
        CU_ASSERT_EQUAL(fake.starts, 1); /* the outage's end begins a run */
        CU_ASSERT_TRUE(kd_outage_claims_wait(f));
        CU_ASSERT_FALSE(journal_pending(f));
        /* The first request after the return goes at the gate's next
         * check, and the mark with it. */
        while (f->store->inflight == 0 && at(f) < BACK_AT + 1000)
                tick(f);
        CU_ASSERT_EQUAL(at(f), BACK_AT + GATE_CHECK_MS);
        CU_ASSERT_EQUAL(f->store->inflight, 2);
        int64_t pings = kd_metric_get(&f->metrics, KD_M_STORE_PINGS);
        f->store->gate_marked = claims_resume_seen; /* kd_claim_resume's */
        CU_ASSERT_EQUAL_FATAL(kd_test_store_answers(f), 0);
        /* The mark's answer came first: the ping's was not in yet. */
        CU_ASSERT_EQUAL(resumes, 1);
        CU_ASSERT_EQUAL(resumed_at, BACK_AT + GATE_CHECK_MS);
        CU_ASSERT_EQUAL(resumed_pings, pings);
        CU_ASSERT_EQUAL(kd_metric_get(&f->metrics, KD_M_STORE_PINGS),
                        pings + 1);
        p = marker(f);
        CU_ASSERT(p.since_ms >= 0);
        CU_ASSERT_EQUAL(p.epoch, 1);
        CU_ASSERT_STRING_EQUAL(p.by, f->instance);
        CU_ASSERT_FALSE(f->store->gate);
        /* Marked once: the next requests go alone. */
        step_serving_to(f, BACK_AT + 2000);
        CU_ASSERT_EQUAL(marker(f).epoch, 1);
        kd_fwd_destroy(f);
}

static void test_the_mark_is_cleared_once_the_run_and_own_fires_are_done(void)
{
        kd_fwd_t *f = born();
        CU_ASSERT_PTR_NOT_NULL_FATAL(f);
        /* A task fired without a claim, its journal record's report not
         * in yet (at_least_once: KD_TASK_JOURNAL). */
        kd_part_t *part = kd_intake_part_open(f, "kdelay-1m", 0, 60000);
        CU_ASSERT_PTR_NOT_NULL_FATAL(part);
        kd_task_t *u = kd_test_task_in(
            part, "u", "out", kd_fwd_now(f) + FIRING_AT, KD_TASK_JOURNAL);
        CU_ASSERT_PTR_NOT_NULL_FATAL(u);
        u->claim = KD_CLAIM_UNCLAIMED;
        outage_and_back(f);
        CU_ASSERT_EQUAL(marker(f).epoch, 1);
        /* The run ends between two looks: seen at the next. */
        step_serving_to(f, BACK_AT + 5 * POLL_MS - 50);
        run_ends(f, KDELAY_OK);
        CU_ASSERT_EQUAL(fake.st.epoch, 1);
        step_serving_to(f, BACK_AT + 5 * POLL_MS - 1);
        CU_ASSERT_EQUAL(fake.ends, 0);
        CU_ASSERT_TRUE(kd_outage_claims_wait(f));
        step_serving_to(f, BACK_AT + 5 * POLL_MS);
        CU_ASSERT_EQUAL(fake.ends, 1);
        CU_ASSERT_FALSE(kd_outage_claims_wait(f)); /* claims go on */
        /* u's record may still reach the journal past the run's ends:
         * the mark stays. */
        step_serving_to(f, BACK_AT + 2050);
        CU_ASSERT_TRUE(journal_pending(f));
        /* u settles (its record delivered): kept until applied. */
        f->mode->delivered(&f->mode_ctx, u);
        CU_ASSERT_EQUAL(kd_settle_unclaimed(f), 1);
        CU_ASSERT_EQUAL(kd_metric_get(&f->metrics, KD_M_FIRED_UNCLAIMED), 1);
        /* The next look applies it from memory (a FIRED row)... */
        step_serving_to(f, BACK_AT + 2099);
        CU_ASSERT_EQUAL(kd_settle_unclaimed(f), 1);
        step_serving_to(f, BACK_AT + 2100);
        CU_ASSERT_EQUAL(kd_settle_unclaimed(f), 0);
        kd_fate_mem_row_t row;
        CU_ASSERT_EQUAL(kd_fate_mem_get(f->store->fate, "u", 1, &row),
                        KDELAY_OK);
        CU_ASSERT_EQUAL(row.fate, KDELAY_FATE_FIRED);
        CU_ASSERT_TRUE(journal_pending(f));
        /* ... and the one after would clear it, but the run read a mark
         * renewed (u unsettled, at BACK_AT + 2000) within
         * KD_OUTAGE_MARK_STALE_MS: the mark stays until a run reads it
         * stale, then clears it with that run's epoch. */
        step_serving_to(f, BACK_AT + 2200);
        CU_ASSERT_TRUE(journal_pending(f));
        CU_ASSERT_FALSE(f->outage->clear_wanted);
        CU_ASSERT_EQUAL(fake.starts, 1);
        int64_t t = cleared_once_stale(f, KD_OUTAGE_SWEEP_MS +
                                              KD_OUTAGE_SWEEP_JITTER_MS);
        CU_ASSERT(t > BACK_AT + 2000 + KD_OUTAGE_MARK_STALE_MS);
        CU_ASSERT(t <= BACK_AT + 2000 + KD_OUTAGE_MARK_STALE_MS + 1000 +
                           3 * POLL_MS);
        kd_fate_pending_t p = marker(f);
        CU_ASSERT_EQUAL(p.since_ms, -1);
        CU_ASSERT_EQUAL(p.epoch, 1);
        CU_ASSERT_FALSE(f->outage->clear_wanted);
        CU_ASSERT_EQUAL(fake.starts, 2);
        CU_ASSERT_EQUAL(kd_metric_get(&f->metrics, KD_M_TASK_STATE_BUGS), 0);
        kd_fwd_destroy(f);
}

static void test_a_mark_since_the_run_read_keeps_the_journal_pending(void)
{
        kd_fwd_t *f = born();
        CU_ASSERT_PTR_NOT_NULL_FATAL(f);
        outage_and_back(f);
        step_serving_to(f, BACK_AT + 5 * POLL_MS - 50);
        run_ends(f, KDELAY_OK); /* read epoch 1 */
        /* Another forwarder fires without a claim and marks it since. */
        char errstr[256];
        CU_ASSERT_EQUAL(kd_fate_pending_mark(f->store->fate, f->journal->topic,
                                             "other:1.1:1", errstr,
                                             sizeof(errstr)),
                        KDELAY_OK);
        /* The clear with epoch 1 goes as the run is seen over, and finds
         * the mark: kept, and a run begins again at once. */
        step_serving_to(f, BACK_AT + 5 * POLL_MS);
        CU_ASSERT_EQUAL(fake.ends, 1);
        kd_fate_pending_t p = marker(f);
        CU_ASSERT(p.since_ms >= 0);
        CU_ASSERT_EQUAL(p.epoch, 2);
        CU_ASSERT_STRING_EQUAL(p.by, "other:1.1:1");
        CU_ASSERT_EQUAL(fake.starts, 2);
        CU_ASSERT_EQUAL(fake.started_at, BACK_AT + 5 * POLL_MS);
        CU_ASSERT_TRUE(f->outage->clear_wanted);
        /* That run reads epoch 2; its end's clear leaves the mark: the
         * other forwarder made it and is alive (it marked within
         * KD_OUTAGE_MARK_STALE_MS), its fires may be on their way. */
        step_serving_to(f, BACK_AT + 10 * POLL_MS - 50);
        run_ends(f, KDELAY_OK);
        step_serving_to(f, BACK_AT + 10 * POLL_MS - 1);
        CU_ASSERT_TRUE(journal_pending(f));
        step_serving_to(f, BACK_AT + 10 * POLL_MS);
        p = marker(f);
        CU_ASSERT(p.since_ms >= 0);
        CU_ASSERT_EQUAL(p.epoch, 2);
        CU_ASSERT_FALSE(f->outage->clear_wanted);
        CU_ASSERT_EQUAL(fake.starts, 2);
        /* The other one stops without clearing it: nobody renews it. The
         * next run (at most KD_OUTAGE_SWEEP_MS on) clears it. */
        CU_ASSERT_EQUAL(kd_fate_mem_pending_age(f->store->fate,
                                                f->journal->topic,
                                                KD_OUTAGE_MARK_STALE_MS + 1),
                        KDELAY_OK);
        int64_t refused = at(f);
        while (fake.starts == 2 &&
               at(f) < refused + KD_OUTAGE_SWEEP_MS + KD_OUTAGE_SWEEP_JITTER_MS)
                step_serving_to(f, at(f) + 1);
        CU_ASSERT_EQUAL_FATAL(fake.starts, 3);
        CU_ASSERT_FALSE(kd_outage_claims_wait(f)); /* a sweep's */
        run_ends(f, KDELAY_OK);
        step_serving_to(f, at(f) + POLL_MS);
        p = marker(f);
        CU_ASSERT_EQUAL(p.since_ms, -1);
        CU_ASSERT_EQUAL(p.epoch, 2);
        kd_fwd_destroy(f);
}

static void test_claims_wait_30s_a_failed_run_is_tried_again_30s_on(void)
{
        kd_fwd_t *f = born();
        CU_ASSERT_PTR_NOT_NULL_FATAL(f);
        outage_and_back(f);
        /* The run goes on: claims wait for it 30 s from its start. */
        step_serving_to(f, BACK_AT + APPLY_WAIT_MS - 1);
        CU_ASSERT_TRUE(kd_outage_claims_wait(f));
        step_serving_to(f, BACK_AT + APPLY_WAIT_MS);
        CU_ASSERT_FALSE(kd_outage_claims_wait(f));
        CU_ASSERT_FALSE(f->outage->applying);
        CU_ASSERT_EQUAL(fake.ends, 0);
        /* It fails: the mark stays; the next run 30 s after. */
        const int64_t failed = BACK_AT + APPLY_WAIT_MS + 10 * POLL_MS;
        step_serving_to(f, failed - 50);
        run_ends(f, KDELAY_ERR_KAFKA);
        step_serving_to(f, failed);
        CU_ASSERT_EQUAL(fake.ends, 1);
        CU_ASSERT_TRUE(f->outage->apply_again);
        step_serving_to(f, failed + RETRY_MS - 1);
        CU_ASSERT_TRUE(journal_pending(f));
        CU_ASSERT_EQUAL(fake.starts, 1);
        step_serving_to(f, failed + RETRY_MS);
        CU_ASSERT_EQUAL(fake.starts, 2);
        CU_ASSERT_EQUAL(fake.started_at, failed + RETRY_MS);
        CU_ASSERT_FALSE(f->outage->apply_again);
        /* That one succeeds: the mark is cleared as it is seen over. */
        step_serving_to(f, failed + RETRY_MS + POLL_MS - 50);
        run_ends(f, KDELAY_OK);
        step_serving_to(f, failed + RETRY_MS + POLL_MS - 1);
        CU_ASSERT_TRUE(journal_pending(f));
        step_serving_to(f, failed + RETRY_MS + POLL_MS);
        CU_ASSERT_FALSE(journal_pending(f));
        CU_ASSERT_EQUAL(marker(f).epoch, 1);
        kd_fwd_destroy(f);
}

static void test_a_failed_journal_record_holds_fires_10s(void)
{
        kd_fwd_t *f = born();
        CU_ASSERT_PTR_NOT_NULL_FATAL(f);
        /* A record fails a second before fires would begin: they begin
         * BROKEN_MS after it instead. */
        const int64_t broke = FIRING_AT - 1000;
        step_to(f, broke);
        kd_journal_broken(f, RD_KAFKA_RESP_ERR__MSG_TIMED_OUT);
        CU_ASSERT_EQUAL(kd_metric_get(&f->metrics, KD_M_JOURNAL_FAILED), 1);
        step_to(f, broke + BROKEN_MS - 1);
        CU_ASSERT_FALSE(kd_outage_firing(f));
        CU_ASSERT_FALSE(f->outage->firing);
        step_to(f, broke + BROKEN_MS);
        CU_ASSERT_TRUE(kd_outage_firing(f));
        CU_ASSERT_EQUAL(f->outage->firing_since_mono - MONO0,
                        broke + BROKEN_MS);
        /* One fails while firing: due tasks wait for claims 10 s. */
        const int64_t again = broke + BROKEN_MS + 4000;
        step_to(f, again);
        kd_journal_broken(f, RD_KAFKA_RESP_ERR__MSG_TIMED_OUT);
        CU_ASSERT_FALSE(kd_outage_firing(f));
        step_to(f, again + BROKEN_MS - 1);
        CU_ASSERT_FALSE(kd_outage_firing(f));
        step_to(f, again + BROKEN_MS);
        CU_ASSERT_TRUE(kd_outage_firing(f));
        CU_ASSERT_EQUAL(kd_metric_get(&f->metrics, KD_M_JOURNAL_FAILED), 2);
        kd_fwd_destroy(f);
}

/* A task fired without a claim in partition `partition` of kdelay-1m
 * (at_least_once), its record of delivery in flight to the journal. */
static kd_task_t *record_in_flight_in(kd_fwd_t *f, const char *id,
                                      int32_t partition)
{
        kd_part_t *part = kd_intake_part_open(f, "kdelay-1m", partition, 60000);
        CU_ASSERT_PTR_NOT_NULL_FATAL(part);
        kd_task_t *u = kd_test_task_in(
            part, id, "out", kd_fwd_now(f) + FIRING_AT, KD_TASK_JOURNAL);
        CU_ASSERT_PTR_NOT_NULL_FATAL(u);
        u->claim = KD_CLAIM_UNCLAIMED;
        kd_task_to_flight(u);
        kd_producer_sent(f);
        return u;
}

/* u's record is answered err: its topic is gone. */
static void answered_gone(kd_fwd_t *f, kd_task_t *u, rd_kafka_resp_err_t err)
{
        rd_kafka_message_t m;
        memset(&m, 0, sizeof(m));
        m.err = err;
        m.partition = 0;
        m.offset = -1;
        m._private = u;
        kd_fire_dr_cb(kd_producer_main(f), &m, NULL);
}

/* Issue 43, case 2: the journal topic deleted while a record of delivery
 * is in flight. The run finds no topic (nothing to apply); the record is
 * answered "unknown topic": not written again, its fire applied from
 * memory (a FIRED row; a report of the cancel it beat), the mark
 * cleared. Before: written again every few seconds for ever, the mark
 * kept, every cancel UNKNOWN. */
static void test_a_record_refused_for_good_is_applied_from_memory(void)
{
        kd_fwd_t *f = born();
        CU_ASSERT_PTR_NOT_NULL_FATAL(f);
        kd_fate_mem_row_t row = {.fate = KDELAY_FATE_CANCELLED,
                                 .fire_at_ms = WALL0};
        CU_ASSERT_EQUAL(kd_fate_mem_put(f->store->fate, "u", 1, &row),
                        KDELAY_OK);
        kd_task_t *u = record_in_flight_in(f, "u", 0);
        kd_task_t *v = record_in_flight_in(f, "v", 0);
        kd_part_t *part = u->part;
        outage_and_back(f);
        step_serving_to(f, BACK_AT + 5 * POLL_MS - 50);
        fake.st.journal_gone = 1;
        run_ends(f, KDELAY_OK);
        step_serving_to(f, BACK_AT + 5 * POLL_MS);
        CU_ASSERT_EQUAL(fake.ends, 1);
        /* One answer "no topic" is not taken for gone (review finding 9):
         * no clear; a run once KD_JOURNAL_GONE_CONFIRM_MS passed. */
        CU_ASSERT_FALSE(f->outage->clear_wanted);
        /* u's record is still out: the mark stays. */
        step_serving_to(f, BACK_AT + 2000);
        CU_ASSERT_TRUE(journal_pending(f));
        CU_ASSERT_EQUAL(kd_settle_unclaimed(f), 0);
        /* The delete lands on them: the broker says the topic is
         * unknown, librdkafka that the partition it chose is. */
        /* The broker has said so for KD_JOURNAL_GONE_CONFIRM_MS already
         * (test_an_unknown_topic_once_is_written_again: before that, the
         * record is written again). */
        f->journal->gone_since_mono =
            kd_fwd_mono_ms(f) - KD_JOURNAL_GONE_CONFIRM_MS;
        answered_gone(f, u, RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART);
        answered_gone(f, v, RD_KAFKA_RESP_ERR__UNKNOWN_PARTITION);
        /* Not written again; held until their fires are applied. */
        CU_ASSERT_PTR_NOT_NULL(part->tasks);
        CU_ASSERT_EQUAL(kd_producer_inflight(f), 0);
        CU_ASSERT_EQUAL(kd_settle_unclaimed(f), 2);
        CU_ASSERT_EQUAL(kd_metric_get(&f->metrics, KD_M_JOURNAL_REFUSED), 2);
        CU_ASSERT_EQUAL(kd_metric_get(&f->metrics, KD_M_FIRED_UNCLAIMED), 2);
        /* The run brought forward to KD_JOURNAL_GONE_CONFIRM_MS after
         * the first finds no topic again: gone; the settle poll applies
         * them from memory, then clears the mark once stale. */
        int starts = fake.starts;
        while (fake.starts == starts &&
               at(f) < BACK_AT + 5 * POLL_MS + KD_JOURNAL_GONE_CONFIRM_MS + 200)
                step_serving_to(f, at(f) + 1);
        CU_ASSERT_EQUAL_FATAL(fake.starts, 2);
        CU_ASSERT(fake.started_at >=
                  BACK_AT + 5 * POLL_MS + KD_JOURNAL_GONE_CONFIRM_MS);
        fake.st.journal_gone = 1;
        run_ends(f, KDELAY_OK);
        step_serving_to(f, at(f) + 3 * POLL_MS);
        CU_ASSERT_EQUAL(kd_settle_unclaimed(f), 0);
        CU_ASSERT_PTR_NULL(part->tasks); /* settled once applied */
        CU_ASSERT_EQUAL(kd_fate_mem_get(f->store->fate, "u", 1, &row),
                        KDELAY_OK);
        CU_ASSERT_EQUAL(row.fate, KDELAY_FATE_FIRED);
        CU_ASSERT_EQUAL(kd_fate_mem_get(f->store->fate, "v", 1, &row),
                        KDELAY_OK);
        CU_ASSERT_EQUAL(row.fate, KDELAY_FATE_FIRED);
        CU_ASSERT_EQUAL(fake.after_cancel_logs, 1);
        CU_ASSERT_EQUAL(kd_metric_get(&f->metrics, KD_M_FIRED_AFTER_CANCEL), 1);
        CU_ASSERT_FALSE(f->outage->owns_mark);
        /* Cleared once nobody renewed it for KD_OUTAGE_MARK_STALE_MS. */
        CU_ASSERT(cleared_once_stale(f, KD_OUTAGE_SWEEP_MS +
                                            KD_OUTAGE_SWEEP_JITTER_MS) > 0);
        CU_ASSERT_EQUAL(kd_metric_get(&f->metrics, KD_M_TASK_STATE_BUGS), 0);
        kd_fwd_destroy(f);
}

/* u's record of delivery refused for good (the journal topic gone for
 * KD_JOURNAL_GONE_CONFIRM_MS) while MySQL is still down. */
static void refused_for_good(kd_fwd_t *f, kd_task_t *u)
{
        f->journal->gone_since_mono =
            kd_fwd_mono_ms(f) - KD_JOURNAL_GONE_CONFIRM_MS;
        answered_gone(f, u, RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART);
}

/* The task's source offset (kd_test_task_in: 7) as a commit would send
 * it: the commit point. 7 = the task is read again after a crash; 8 = it
 * is not. */
static int64_t commit_point(const kd_part_t *part)
{
        return kd_offtrack_commit_point(&part->track);
}

/* The fire of id in the fate table: FIRED, or UNDECIDED (no row). */
static kdelay_fate_t fate_of(kd_fwd_t *f, const char *id)
{
        kd_fate_mem_row_t row;
        CU_ASSERT_EQUAL(kd_fate_mem_get(f->store->fate, id, strlen(id), &row),
                        KDELAY_OK);
        return row.fate;
}

/* MySQL answers again after the outage of outage_and_back's times; the
 * journal's run finds no topic and ends. */
static void back_and_run_finds_no_topic(kd_fwd_t *f)
{
        step_to(f, BACK_AT);
        CU_ASSERT_EQUAL_FATAL(kd_test_store_answers(f), 0);
        CU_ASSERT_FALSE(f->store->down);
        step_serving_to(f, BACK_AT + 5 * POLL_MS - 50);
        fake.st.journal_gone = 1;
        run_ends(f, KDELAY_OK);
        step_serving_to(f, BACK_AT + 5 * POLL_MS);
        CU_ASSERT_EQUAL(fake.ends, 1);
}

/* A forwarder with the record of delivery of u (partition 0) in flight,
 * and of w (partition 1) when w is not NULL, a second after fires
 * without claims began (FIRING_AT: MySQL down); NULL when it cannot be
 * made. */
static kd_fwd_t *born_with_u_in_flight(kd_task_t **u, kd_task_t **w)
{
        *u = NULL;
        if (w)
                *w = NULL;
        kd_fwd_t *f = born();
        if (!f)
                return NULL;
        *u = record_in_flight_in(f, "u", 0);
        if (w)
                *w = record_in_flight_in(f, "w", 1);
        step_to(f, FIRING_AT + 1000);
        return f;
}

/* A record of delivery refused for good while MySQL is down: the fire is
 * kept in memory, and its task holds its offset (and its place in the
 * held set) until that fire is in the fate table; a failed apply keeps
 * it; then it is settled. Before: settled at once, its offset committable
 * (8) with the fire only in memory, so a crash then (MySQL still down)
 * lost its report for good. */
static void test_a_refused_record_holds_its_offset_until_applied(void)
{
        kd_task_t *u;
        kd_fwd_t *f = born_with_u_in_flight(&u, NULL);
        CU_ASSERT_PTR_NOT_NULL_FATAL(f);
        kd_part_t *part = u->part;
        CU_ASSERT_TRUE(f->store->down);
        CU_ASSERT_EQUAL(commit_point(part), 7);
        refused_for_good(f, u);
        CU_ASSERT_EQUAL(kd_metric_get(&f->metrics, KD_M_JOURNAL_REFUSED), 1);
        CU_ASSERT_EQUAL(kd_metric_get(&f->metrics, KD_M_FIRED_UNCLAIMED), 1);
        CU_ASSERT_EQUAL(kd_settle_unclaimed(f), 1);
        CU_ASSERT_EQUAL(kd_producer_inflight(f), 0);
        /* Not settled: read again after a crash. */
        CU_ASSERT_EQUAL(commit_point(part), 7);
        CU_ASSERT_PTR_EQUAL(part->tasks, u);
        CU_ASSERT_EQUAL(f->held->cnt, 1);
        /* MySQL down for as long as it takes: still held. */
        step_to(f, BACK_AT - 1);
        CU_ASSERT_EQUAL(commit_point(part), 7);
        CU_ASSERT_EQUAL(fate_of(f, "u"), KDELAY_FATE_UNDECIDED);
        /* Back; the run finds no topic; the next settle look applies the
         * fire from memory, and that first apply fails: still held. */
        back_and_run_finds_no_topic(f);
        CU_ASSERT_EQUAL(commit_point(part), 7);
        CU_ASSERT_EQUAL(
            kd_fate_mem_fail_next(f->store->fate, 1, KDELAY_ERR_MYSQL),
            KDELAY_OK);
        uint64_t calls = kd_fate_mem_calls(f->store->fate);
        step_serving_to(f, BACK_AT + 6 * POLL_MS);
        CU_ASSERT_EQUAL(kd_fate_mem_calls(f->store->fate), calls + 1);
        CU_ASSERT_EQUAL(kd_settle_unclaimed(f), 1);
        CU_ASSERT_EQUAL(fate_of(f, "u"), KDELAY_FATE_UNDECIDED);
        CU_ASSERT_EQUAL(commit_point(part), 7);
        CU_ASSERT_PTR_EQUAL(part->tasks, u);
        /* Applied again after the store's backoff: only then settled. */
        int64_t applied = -1, released = -1;
        while (at(f) < BACK_AT + KD_OUTAGE_SWEEP_MS +
                           KD_OUTAGE_SWEEP_JITTER_MS + 2000 &&
               applied < 0) {
                step_serving_to(f, at(f) + 1);
                if (fake.starts > fake.ends && !fake.done) {
                        fake.st.journal_gone = 1;
                        run_ends(f, KDELAY_OK);
                }
                if (released < 0 && commit_point(part) != 7)
                        released = at(f);
                if (kd_settle_unclaimed(f) == 0)
                        applied = at(f);
        }
        CU_ASSERT_EQUAL(released, applied); /* not before */
        /* Once the store answers again, not at the next run. */
        CU_ASSERT(applied < BACK_AT + 6 * POLL_MS + 1000);
        CU_ASSERT(applied > 0);
        /* On record, then settled: its offset done, out of the held set. */
        CU_ASSERT_EQUAL(fate_of(f, "u"), KDELAY_FATE_FIRED);
        CU_ASSERT_EQUAL(commit_point(part), 8);
        CU_ASSERT_PTR_NULL(part->tasks);
        CU_ASSERT_EQUAL(f->held->cnt, 0);
        CU_ASSERT_EQUAL(kd_metric_get(&f->metrics, KD_M_FIRED), 1);
        CU_ASSERT_EQUAL(kd_metric_get(&f->metrics, KD_M_JOURNAL_APPLIED), 1);
        /* The mark clears once stale, as before. */
        CU_ASSERT(cleared_once_stale(f, KD_OUTAGE_SWEEP_MS +
                                            KD_OUTAGE_SWEEP_JITTER_MS +
                                            KD_JOURNAL_GONE_CONFIRM_MS) > 0);
        CU_ASSERT_EQUAL(kd_metric_get(&f->metrics, KD_M_TASK_STATE_BUGS), 0);
        kd_fwd_destroy(f);
}

/* The crash: the forwarder is dropped while MySQL is still down, its
 * refused record's fire never applied. What survives is the committed
 * offset, which must be below the task (7: read again, fired again as
 * at_least_once allows, and recorded then). A SIGTERM is the same: its
 * revoke drops the task unsettled (kd_fwd_destroy's kd_rebalance_clear).
 * Before: 8, the delivered fire on no record anywhere. */
static void test_a_crash_before_the_apply_reads_the_task_again(void)
{
        kd_task_t *u, *w;
        kd_fwd_t *f = born_with_u_in_flight(&u, &w);
        CU_ASSERT_PTR_NOT_NULL_FATAL(f);
        kd_part_t *pu = u->part, *pw = w->part;
        refused_for_good(f, u);
        step_to(f, FIRING_AT + 20000);
        refused_for_good(f, w);
        CU_ASSERT_EQUAL(kd_settle_unclaimed(f), 2);
        step_to(f, FIRING_AT + 60000);
        CU_ASSERT_TRUE(f->store->down);
        CU_ASSERT_EQUAL(commit_point(pu), 7);
        CU_ASSERT_EQUAL(commit_point(pw), 7);
        CU_ASSERT_EQUAL(fate_of(f, "u"), KDELAY_FATE_UNDECIDED);
        CU_ASSERT_EQUAL(fate_of(f, "w"), KDELAY_FATE_UNDECIDED);
        kd_fwd_destroy(f); /* crashed: nothing more is settled */
}

/* Revoked while it waits for its apply (in memory, then with the apply
 * out on the store): the task goes unsettled (the next owner reads it
 * again), its fire stays and is applied all the same. */
static void test_a_revoked_task_waiting_for_its_apply_keeps_its_fire(void)
{
        kd_task_t *u, *w;
        kd_fwd_t *f = born_with_u_in_flight(&u, &w);
        CU_ASSERT_PTR_NOT_NULL_FATAL(f);
        kd_part_t *pu = u->part, *pw = w->part;
        refused_for_good(f, u);
        refused_for_good(f, w);
        CU_ASSERT_EQUAL(f->held->cnt, 2);
        /* u's partition revoked while its fire waits in memory. */
        CU_ASSERT_PTR_EQUAL_FATAL(pu->tasks, u);
        kd_settle_release(f, u);
        CU_ASSERT_PTR_NULL(pu->tasks);
        CU_ASSERT_EQUAL(commit_point(pu), 7);
        CU_ASSERT_EQUAL(kd_settle_unclaimed(f), 2);
        CU_ASSERT_EQUAL(f->held->cnt, 1);
        /* Back; the run ends; the apply goes out, its answer unread. */
        back_and_run_finds_no_topic(f);
        step_to(f, at(f) + 3 * POLL_MS);
        CU_ASSERT_EQUAL(f->settle->uf_out, 2);
        /* w's partition revoked meanwhile. */
        kd_settle_release(f, w);
        CU_ASSERT_PTR_NULL(pw->tasks);
        CU_ASSERT_EQUAL(f->held->cnt, 0);
        step_serving_to(f, at(f) + 1);
        CU_ASSERT_EQUAL(kd_settle_unclaimed(f), 0);
        CU_ASSERT_EQUAL(fate_of(f, "u"), KDELAY_FATE_FIRED);
        CU_ASSERT_EQUAL(fate_of(f, "w"), KDELAY_FATE_FIRED);
        CU_ASSERT_EQUAL(commit_point(pu), 7);
        CU_ASSERT_EQUAL(commit_point(pw), 7);
        CU_ASSERT_EQUAL(kd_metric_get(&f->metrics, KD_M_TASK_STATE_BUGS), 0);
        kd_fwd_destroy(f);
}

/* Review: a task whose partition was revoked while its fire was out (in
 * flight: kd_settle_release left it to its report), whose record of
 * delivery is then refused for good: there is no offset to hold (the
 * next owner reads it again), so it is released at once, not kept in
 * the held set on no partition's list (freed by nothing while MySQL
 * stayed down, leaked at the stop); its fire is kept and applied. */
static void test_a_revoked_tasks_refused_record_is_not_held(void)
{
        kd_task_t *u;
        kd_fwd_t *f = born_with_u_in_flight(&u, NULL);
        CU_ASSERT_PTR_NOT_NULL_FATAL(f);
        kd_part_t *pu = u->part;
        kd_settle_release(f, u); /* revoked: in flight, left to its report */
        CU_ASSERT_PTR_NULL(u->part);
        CU_ASSERT_PTR_NULL(pu->tasks);
        /* Its report comes (reported: in flight no more), and its record
         * is refused for good at once. */
        kd_task_reported(u);
        kd_producer_reported(f, 1);
        CU_ASSERT_EQUAL(kd_settle_fired_held(f, u), 0); /* u is gone */
        CU_ASSERT_EQUAL(f->held->cnt, 0);
        CU_ASSERT_EQUAL(kd_settle_unclaimed(f), 1);
        CU_ASSERT_EQUAL(commit_point(pu), 7);
        back_and_run_finds_no_topic(f);
        step_serving_to(f, at(f) + 3 * POLL_MS);
        CU_ASSERT_EQUAL(kd_settle_unclaimed(f), 0);
        CU_ASSERT_EQUAL(fate_of(f, "u"), KDELAY_FATE_FIRED);
        CU_ASSERT_EQUAL(commit_point(pu), 7);
        kd_fwd_destroy(f);
}

/* Its own fires unsettled, a forwarder renews its mark every
 * KD_OUTAGE_RENEW_MS: another forwarder's clear (a sweep's) leaves it,
 * however long ago it was made. */
/* Review finding 3a: "unknown topic or partition" also comes from a
 * broker whose metadata lags (a topic just made, a rolling restart): one
 * such answer is not "gone"; the record of delivery is written again as
 * for any error, until such answers span KD_JOURNAL_GONE_CONFIRM_MS with
 * no record delivered between. Before: applied from memory at the first
 * answer, its offset done with the fire on no record. */
static void test_an_unknown_topic_once_is_written_again(void)
{
        kd_fwd_t *f = born();
        CU_ASSERT_PTR_NOT_NULL_FATAL(f);
        kd_task_t *u = record_in_flight_in(f, "u", 0);
        kd_part_t *part = u->part;
        step_serving_to(f, 1000);
        answered_gone(f, u, RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART);
        CU_ASSERT_PTR_EQUAL(part->tasks, u); /* kept, written again */
        CU_ASSERT_EQUAL(kd_settle_unclaimed(f), 0);
        CU_ASSERT_EQUAL(kd_metric_get(&f->metrics, KD_M_JOURNAL_REFUSED), 0);
        step_serving_to(f, 2000);
        CU_ASSERT_EQUAL(u->where, KD_WHERE_FLIGHT);
        /* The streak decides: gone only KD_JOURNAL_GONE_CONFIRM_MS on. */
        int64_t first = f->journal->gone_since_mono;
        CU_ASSERT_EQUAL(first, MONO0 + 1000);
        CU_ASSERT_FALSE(kd_journal_refused_for_good(
            f, RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART));
        step_serving_to(f, 1000 + KD_JOURNAL_GONE_CONFIRM_MS - 1);
        CU_ASSERT_FALSE(kd_journal_refused_for_good(
            f, RD_KAFKA_RESP_ERR__UNKNOWN_PARTITION));
        step_serving_to(f, 1000 + KD_JOURNAL_GONE_CONFIRM_MS);
        CU_ASSERT_TRUE(kd_journal_refused_for_good(
            f, RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART));
        /* A record delivered ends the streak. */
        rd_kafka_message_t m;
        memset(&m, 0, sizeof(m));
        f->journal->inflight++;
        kd_journal_reported(f, &m);
        CU_ASSERT_EQUAL(f->journal->gone_since_mono, 0);
        CU_ASSERT_FALSE(kd_journal_refused_for_good(
            f, RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART));
        /* u's record, written again, is still queued in librdkafka: purged,
         * so that no report of it comes after u is freed. */
        rd_kafka_purge(kd_producer_main(f), RD_KAFKA_PURGE_F_QUEUE);
        rd_kafka_poll(kd_producer_main(f), 0);
        kd_fwd_destroy(f);
}

static void test_an_owner_renews_its_mark_while_its_fires_are_out(void)
{
        kd_fwd_t *f = born();
        CU_ASSERT_PTR_NOT_NULL_FATAL(f);
        kd_task_t *u = record_in_flight_in(f, "u", 0);
        outage_and_back(f);
        CU_ASSERT_TRUE(f->outage->owns_mark);
        step_serving_to(f, BACK_AT + 5 * POLL_MS - 50);
        run_ends(f, KDELAY_OK);
        /* Made long ago, as far as the store knows. */
        CU_ASSERT_EQUAL(
            kd_fate_mem_pending_age(f->store->fate, f->journal->topic, 600000),
            KDELAY_OK);
        int64_t old = marker(f).marked_at_ms;
        step_serving_to(f, FIRING_AT + KD_OUTAGE_RENEW_MS * 2);
        kd_fate_pending_t p = marker(f);
        CU_ASSERT(p.marked_at_ms >= old + 600000 - 1000);
        CU_ASSERT_STRING_EQUAL(p.by, f->instance);
        CU_ASSERT_EQUAL(p.epoch, 1); /* a renewal is no mark */
        char errstr[256];
        CU_ASSERT_EQUAL(kd_fate_pending_clear(f->store->fate, f->journal->topic,
                                              p.epoch, "other:1.1:1",
                                              KD_OUTAGE_MARK_STALE_MS, &p,
                                              errstr, sizeof(errstr)),
                        KDELAY_OK);
        CU_ASSERT(p.since_ms >= 0);
        /* Its record delivered, applied: no renewal after, cleared once
         * stale. */
        kd_producer_reported(f, 0);
        kd_task_reported(u);
        f->mode->delivered(&f->mode_ctx, u);
        step_serving_to(f, at(f) + 3 * POLL_MS);
        int64_t settled = marker(f).marked_at_ms;
        step_serving_to(f, at(f) + 2 * KD_OUTAGE_RENEW_MS);
        CU_ASSERT_EQUAL(marker(f).marked_at_ms, settled);
        CU_ASSERT_FALSE(f->outage->owns_mark);
        CU_ASSERT(cleared_once_stale(f, KD_OUTAGE_SWEEP_MS +
                                            KD_OUTAGE_SWEEP_JITTER_MS) > 0);
        kd_fwd_destroy(f);
}

/* Review finding 1: two forwarders fired without claims in one outage
 * and both own the mark; this one renewed it last and settles first,
 * while the other (the test, through the store) still has a record in
 * flight and renews it every KD_OUTAGE_RENEW_MS. The mark stays until
 * the other stops renewing (settled) and a run reads it stale. Before: the
 * clear of whoever renewed last went at once (marked_by = me), and cancels
 * answered "cancelled" for tasks the other had delivered. */
static void test_two_owners_the_last_renewer_settling_first_keeps_the_mark(void)
{
        kd_fwd_t *f = born();
        CU_ASSERT_PTR_NOT_NULL_FATAL(f);
        kd_task_t *u = record_in_flight_in(f, "u", 0);
        outage_and_back(f);
        char errstr[256];
        const char *other = "other:1.1:1";
        CU_ASSERT_EQUAL(kd_fate_pending_mark(f->store->fate, f->journal->topic,
                                             other, errstr, sizeof(errstr)),
                        KDELAY_OK);
        step_serving_to(f, BACK_AT + 5 * POLL_MS - 50);
        run_ends(f, KDELAY_OK); /* epoch 2, fresh */
        /* The other renews, then this one: the last renewer. */
        step_serving_to(f, BACK_AT + 1500);
        CU_ASSERT_EQUAL(kd_fate_pending_renew(f->store->fate, f->journal->topic,
                                              other, errstr, sizeof(errstr)),
                        KDELAY_OK);
        step_serving_to(f, BACK_AT + 2010);
        CU_ASSERT_STRING_EQUAL(marker(f).by, f->instance);
        /* This one settles: its record delivered, its fire applied. */
        kd_producer_reported(f, 0);
        kd_task_reported(u);
        f->mode->delivered(&f->mode_ctx, u);
        /* The other's record stays in flight 40 s: it renews every 5 s;
         * every run of this one reads the mark, and it stays. */
        int64_t renewed = BACK_AT + 1500;
        int ended = fake.ends;
        while (at(f) < BACK_AT + 42000) {
                step_serving_to(f, at(f) + 1);
                if (at(f) >= renewed + KD_OUTAGE_RENEW_MS) {
                        renewed = at(f);
                        CU_ASSERT_EQUAL(kd_fate_pending_renew(
                                            f->store->fate, f->journal->topic,
                                            other, errstr, sizeof(errstr)),
                                        KDELAY_OK);
                }
                if (fake.starts > fake.ends && !fake.done)
                        run_ends(f, KDELAY_OK);
                if (!journal_pending(f))
                        break;
        }
        CU_ASSERT_TRUE(journal_pending(f));
        CU_ASSERT_EQUAL(kd_settle_unclaimed(f), 0);
        CU_ASSERT(fake.ends > ended); /* it did look, and left it */
        CU_ASSERT_EQUAL(marker(f).epoch, 2);
        /* The other's record is in: it stops renewing. Cleared once stale
         * (a run within KD_OUTAGE_SWEEP_MS of the last look). */
        int64_t t =
            cleared_once_stale(f, KD_OUTAGE_MARK_STALE_MS + KD_OUTAGE_SWEEP_MS);
        CU_ASSERT(t > renewed + KD_OUTAGE_MARK_STALE_MS);
        CU_ASSERT(t <= renewed + KD_OUTAGE_MARK_STALE_MS + KD_OUTAGE_SWEEP_MS);
        CU_ASSERT_EQUAL(kd_metric_get(&f->metrics, KD_M_TASK_STATE_BUGS), 0);
        kd_fwd_destroy(f);
}

/* Review finding 4: a record of delivery fails after its task's
 * partition was revoked (an orphan in flight): the fire was delivered and
 * nobody writes its record again, so it is kept in memory and applied
 * from there at the next run. Before: released, the fire on no record. */
static void test_a_revoked_tasks_failed_delivery_record_keeps_its_fire(void)
{
        kd_fwd_t *f = born_after_a_run(settings, NULL);
        CU_ASSERT_PTR_NOT_NULL_FATAL(f);
        kd_task_t *u = record_in_flight_in(f, "r", 0);
        kd_settle_release(f, u); /* revoked: only unlinked, in flight */
        CU_ASSERT_PTR_NULL(u->part);
        answered_gone(f, u, RD_KAFKA_RESP_ERR__MSG_TIMED_OUT);
        CU_ASSERT_EQUAL(kd_producer_inflight(f), 0);
        CU_ASSERT_EQUAL(kd_settle_unclaimed(f), 1);
        /* The next run's end applies it (a FIRED row). */
        int starts = fake.starts;
        while (fake.starts == starts &&
               at(f) <
                   1000 + 2 * (KD_OUTAGE_SWEEP_MS + KD_OUTAGE_SWEEP_JITTER_MS))
                step_serving_to(f, at(f) + 1);
        run_ends(f, KDELAY_OK);
        step_serving_to(f, at(f) + 3 * POLL_MS);
        CU_ASSERT_EQUAL(kd_settle_unclaimed(f), 0);
        kd_fate_mem_row_t row;
        CU_ASSERT_EQUAL(kd_fate_mem_get(f->store->fate, "r", 1, &row),
                        KDELAY_OK);
        CU_ASSERT_EQUAL(row.fate, KDELAY_FATE_FIRED);
        CU_ASSERT_EQUAL(kd_metric_get(&f->metrics, KD_M_TASK_STATE_BUGS), 0);
        kd_fwd_destroy(f);
}

/* Review finding 8: an outage ends while a sweep's run is under way (it
 * may have read the journal's ends before the outage's records). Claims
 * wait, and a fresh run begins as soon as the sweep's ends. Before: the
 * sweep's run swallowed the outage's, claims went on at once. */
static void test_an_outage_over_during_a_sweep_waits_for_a_fresh_run(void)
{
        kd_fwd_t *f = born();
        CU_ASSERT_PTR_NOT_NULL_FATAL(f);
        step_serving_to(f, 1000);
        kd_outage_start(f);
        step_serving_to(f, 1000 + POLL_MS - 50);
        run_ends(f, KDELAY_OK);
        while (fake.starts == 1 &&
               at(f) < 1000 + KD_OUTAGE_SWEEP_MS + KD_OUTAGE_SWEEP_JITTER_MS)
                step_serving_to(f, at(f) + 1);
        CU_ASSERT_EQUAL(fake.starts, 2); /* a sweep, never ending yet */
        CU_ASSERT_FALSE(kd_outage_claims_wait(f));
        /* MySQL hangs: fires without claims, then it answers again. */
        int64_t hang = at(f);
        while (!kd_outage_firing(f) && at(f) < hang + 30000)
                step_to(f, at(f) + 1);
        CU_ASSERT_TRUE_FATAL(kd_outage_firing(f));
        step_to(f, at(f) + 2000);
        CU_ASSERT_EQUAL_FATAL(kd_test_store_answers(f), 0);
        CU_ASSERT_FALSE(kd_outage_firing(f));
        CU_ASSERT_EQUAL(fake.starts, 2);
        CU_ASSERT_TRUE(kd_outage_claims_wait(f));
        step_serving_to(f, at(f) + 5 * POLL_MS);
        CU_ASSERT_TRUE(kd_outage_claims_wait(f));
        /* The sweep's run ends: a fresh one begins at once, claims wait. */
        run_ends(f, KDELAY_OK);
        step_serving_to(f, at(f) + POLL_MS);
        CU_ASSERT_EQUAL(fake.starts, 3);
        CU_ASSERT_TRUE(kd_outage_claims_wait(f));
        step_serving_to(f, at(f) + POLL_MS - 50);
        run_ends(f, KDELAY_OK);
        step_serving_to(f, at(f) + POLL_MS);
        CU_ASSERT_EQUAL(fake.ends, 3);
        CU_ASSERT_FALSE(kd_outage_claims_wait(f));
        kd_fwd_destroy(f);
}

/* Review finding 5: this owner's renewals stop for longer than the lease
 * allows (MySQL hangs for it, short of an outage it fires through) while
 * its record is in flight: another forwarder may have cleared the stale
 * mark meanwhile. The late renewal's answer makes it mark again (a new
 * epoch), so a clear since is undone and a clear with the old epoch
 * fails. Before: it renewed a mark perhaps cleared already. */
static void test_a_late_renewal_marks_again(void)
{
        kd_fwd_t *f = born();
        CU_ASSERT_PTR_NOT_NULL_FATAL(f);
        kd_task_t *u = record_in_flight_in(f, "u", 0);
        outage_and_back(f);
        step_serving_to(f, BACK_AT + 5 * POLL_MS - 50);
        run_ends(f, KDELAY_OK);
        step_serving_to(f, BACK_AT + 2100); /* renewed at BACK_AT + 2000 */
        CU_ASSERT_EQUAL(marker(f).epoch, 1);
        /* MySQL hangs 11 s (short of fires without claims at
         * BACK_AT + 14000): the renewal at BACK_AT + 7000 waits. */
        step_to(f, BACK_AT + 13000);
        CU_ASSERT_FALSE(kd_outage_firing(f));
        CU_ASSERT_EQUAL(marker(f).epoch, 1);
        CU_ASSERT_EQUAL_FATAL(kd_test_store_answers(f), 0);
        step_serving_to(f, BACK_AT + 13000 + 50);
        CU_ASSERT_EQUAL(marker(f).epoch, 2);
        CU_ASSERT_TRUE(journal_pending(f));
        CU_ASSERT_STRING_EQUAL(marker(f).by, f->instance);
        /* Its record delivered (the test's report): u settles. */
        kd_producer_reported(f, 0);
        kd_task_reported(u);
        f->mode->delivered(&f->mode_ctx, u);
        kd_fwd_destroy(f);
}

static const char *const hold[] = {"forwarder.fate_outage_policy", "hold",
                                   NULL};

/* Issue 43, case 3: a forwarder under fire stopped before MySQL came
 * back left records nobody marked. One under hold applies them at its
 * start (claims do not wait), marking the journal first as the run
 * does, and clears its own mark; and again every KD_OUTAGE_SWEEP_MS.
 * Before: only a forwarder under fire ran the journal, at its start. */
static void test_a_hold_forwarder_applies_a_journal_left_unmarked(void)
{
        kd_fwd_t *f = born_with(hold);
        CU_ASSERT_PTR_NOT_NULL_FATAL(f);
        step_serving_to(f, 1000);
        kd_outage_start(f);
        CU_ASSERT_EQUAL(fake.starts, 1);
        CU_ASSERT_FALSE(kd_outage_claims_wait(f));
        /* The run found records and no mark: it marks, then reads. */
        char errstr[256];
        CU_ASSERT_EQUAL(kd_fate_pending_mark(f->store->fate, f->journal->topic,
                                             f->instance, errstr,
                                             sizeof(errstr)),
                        KDELAY_OK);
        fake.st.marked = 1;
        fake.st.records = fake.st.applied = fake.st.recorded = 40;
        step_serving_to(f, 1000 + POLL_MS - 50);
        run_ends(f, KDELAY_OK);
        step_serving_to(f, 1000 + POLL_MS);
        CU_ASSERT_EQUAL(fake.ends, 1);
        CU_ASSERT_EQUAL(kd_metric_get(&f->metrics, KD_M_JOURNAL_APPLIED), 40);
        step_serving_to(f, 1000 + 2 * POLL_MS);
        CU_ASSERT_TRUE(journal_pending(f)); /* marked just now */
        CU_ASSERT_FALSE(f->outage->owns_mark);
        CU_ASSERT_FALSE(kd_outage_firing(f));
        /* A run once the mark is stale clears it. */
        int64_t t = cleared_once_stale(f, KD_OUTAGE_SWEEP_MS +
                                              KD_OUTAGE_SWEEP_JITTER_MS);
        CU_ASSERT(t > 1000 + KD_OUTAGE_MARK_STALE_MS);
        CU_ASSERT(t <= 1000 + KD_OUTAGE_MARK_STALE_MS + 1000 + 3 * POLL_MS);
        CU_ASSERT_EQUAL(fake.starts, 2);
        /* The next run KD_OUTAGE_SWEEP_MS (+- KD_OUTAGE_SWEEP_JITTER_MS)
         * after that one. */
        int64_t swept = fake.started_at;
        step_serving_to(f, swept + KD_OUTAGE_SWEEP_MS -
                               KD_OUTAGE_SWEEP_JITTER_MS - 1);
        CU_ASSERT_EQUAL(fake.starts, 2);
        while (fake.starts == 2 &&
               at(f) < swept + KD_OUTAGE_SWEEP_MS + KD_OUTAGE_SWEEP_JITTER_MS)
                step_serving_to(f, at(f) + 1);
        CU_ASSERT_EQUAL(fake.starts, 3);
        run_ends(f, KDELAY_OK);
        step_serving_to(f, at(f) + POLL_MS);
        CU_ASSERT_EQUAL(fake.ends, 3);
        kd_fwd_destroy(f);
}

/* Issue 43, case 3: a forwarder under fire stopped after it marked the
 * journal (nobody renews the mark). One under hold leaves the mark while
 * it is fresh, and clears it at the first run after it went stale: the
 * time cancels answer UNKNOWN is bounded. Before: the mark stayed until
 * a forwarder under fire started. */
static void test_a_hold_forwarder_clears_a_gone_forwarders_mark(void)
{
        kd_fwd_t *f = born_after_a_run(hold, "gone:1.1:1");
        CU_ASSERT_PTR_NOT_NULL_FATAL(f);
        CU_ASSERT_EQUAL(fake.ends, 1);
        CU_ASSERT_TRUE(journal_pending(f)); /* renewed just now: left */
        CU_ASSERT_FALSE(f->outage->clear_wanted);
        kd_outage_gauges(f);
        CU_ASSERT(kd_metric_get(&f->metrics, KD_M_RECONCILE_PENDING_AGE) > 0);
        CU_ASSERT_EQUAL(kd_metric_get(&f->metrics, KD_M_RECONCILE_PENDING), 0);
        /* Its forwarder is gone: nobody renews it. */
        CU_ASSERT_EQUAL(kd_fate_mem_pending_age(f->store->fate,
                                                f->journal->topic,
                                                KD_OUTAGE_MARK_STALE_MS + 1),
                        KDELAY_OK);
        int64_t from = at(f);
        while (fake.starts == 1 &&
               at(f) < from + KD_OUTAGE_SWEEP_MS + KD_OUTAGE_SWEEP_JITTER_MS)
                step_serving_to(f, at(f) + 1);
        CU_ASSERT_EQUAL_FATAL(fake.starts, 2);
        run_ends(f, KDELAY_OK);
        step_serving_to(f, at(f) + 2 * POLL_MS);
        CU_ASSERT_FALSE(journal_pending(f));
        kd_fate_pending_t p = marker(f);
        CU_ASSERT_EQUAL(p.epoch, 1);
        kd_outage_gauges(f);
        CU_ASSERT_EQUAL(kd_metric_get(&f->metrics, KD_M_RECONCILE_PENDING_AGE),
                        0);
        kd_fwd_destroy(f);
}

/* Review finding 11: the age gauge follows the mark as last read; once
 * another forwarder cleared it and this one's runs stopped reading it (a
 * run hung on Kafka), a reading older than two sweeps is dropped instead
 * of growing for ever (a false KdelayJournalUnreconciled). */
static void test_the_age_gauge_drops_a_reading_two_sweeps_old(void)
{
        kd_fwd_t *f = born_after_a_run(hold, "gone:1.1:1");
        CU_ASSERT_PTR_NOT_NULL_FATAL(f);
        char errstr[256];
        int64_t read_at = at(f);
        kd_outage_gauges(f);
        CU_ASSERT(kd_metric_get(&f->metrics, KD_M_RECONCILE_PENDING_AGE) > 0);
        /* Another forwarder clears it; this one's next run never ends. */
        kd_fate_pending_t p = marker(f);
        CU_ASSERT_EQUAL(kd_fate_pending_clear(f->store->fate, f->journal->topic,
                                              p.epoch, "gone:1.1:1", -1, &p,
                                              errstr, sizeof(errstr)),
                        KDELAY_OK);
        CU_ASSERT_FALSE(journal_pending(f));
        step_serving_to(f, read_at + 2 * KD_OUTAGE_SWEEP_MS - 1000);
        CU_ASSERT_EQUAL(fake.starts, 2);
        CU_ASSERT_EQUAL(fake.ends, 1);
        kd_outage_gauges(f);
        CU_ASSERT(kd_metric_get(&f->metrics, KD_M_RECONCILE_PENDING_AGE) > 0);
        step_serving_to(f, read_at + 2 * KD_OUTAGE_SWEEP_MS + 1000);
        kd_outage_gauges(f);
        CU_ASSERT_EQUAL(kd_metric_get(&f->metrics, KD_M_RECONCILE_PENDING_AGE),
                        0);
        kd_fwd_destroy(f);
}

/* Review finding 10: the sweeps of forwarders started together do not
 * keep in step: each period is KD_OUTAGE_SWEEP_MS give or take
 * KD_OUTAGE_SWEEP_JITTER_MS, and they differ. Before: exactly 30 s each. */
static void test_the_sweep_period_is_jittered(void)
{
        kd_fwd_t *f = born_with(hold);
        CU_ASSERT_PTR_NOT_NULL_FATAL(f);
        step_serving_to(f, 1000);
        kd_outage_start(f);
        int64_t last = at(f), gaps[6];
        int differ = 0;
        for (int i = 0; i < 6; i++) {
                int starts = fake.starts;
                if (fake.starts > fake.ends && !fake.done)
                        run_ends(f, KDELAY_OK);
                while (fake.starts == starts &&
                       at(f) < last + KD_OUTAGE_SWEEP_MS +
                                   KD_OUTAGE_SWEEP_JITTER_MS + 1000)
                        step_serving_to(f, at(f) + 1);
                CU_ASSERT_EQUAL_FATAL(fake.starts, starts + 1);
                gaps[i] = fake.started_at - last;
                last = fake.started_at;
                CU_ASSERT(gaps[i] >=
                          KD_OUTAGE_SWEEP_MS - KD_OUTAGE_SWEEP_JITTER_MS);
                CU_ASSERT(gaps[i] <=
                          KD_OUTAGE_SWEEP_MS + KD_OUTAGE_SWEEP_JITTER_MS + 2);
                differ += i > 0 && gaps[i] != gaps[i - 1];
        }
        CU_ASSERT(differ > 0);
        kd_fwd_destroy(f);
}

int main(void)
{
        static const kd_test_case_t cases[] = {
            KD_TEST(test_the_gate_marks_the_journal_pending_first),
            KD_TEST(
                test_the_mark_is_cleared_once_the_run_and_own_fires_are_done),
            KD_TEST(test_a_mark_since_the_run_read_keeps_the_journal_pending),
            KD_TEST(test_claims_wait_30s_a_failed_run_is_tried_again_30s_on),
            KD_TEST(test_a_failed_journal_record_holds_fires_10s),
            KD_TEST(test_a_record_refused_for_good_is_applied_from_memory),
            KD_TEST(test_an_unknown_topic_once_is_written_again),
            KD_TEST(test_a_refused_record_holds_its_offset_until_applied),
            KD_TEST(test_a_revoked_tasks_refused_record_is_not_held),
            KD_TEST(test_a_crash_before_the_apply_reads_the_task_again),
            KD_TEST(test_a_revoked_task_waiting_for_its_apply_keeps_its_fire),
            KD_TEST(test_an_owner_renews_its_mark_while_its_fires_are_out),
            KD_TEST(
                test_two_owners_the_last_renewer_settling_first_keeps_the_mark),
            KD_TEST(test_a_revoked_tasks_failed_delivery_record_keeps_its_fire),
            KD_TEST(test_an_outage_over_during_a_sweep_waits_for_a_fresh_run),
            KD_TEST(test_a_late_renewal_marks_again),
            KD_TEST(test_a_hold_forwarder_applies_a_journal_left_unmarked),
            KD_TEST(test_a_hold_forwarder_clears_a_gone_forwarders_mark),
            KD_TEST(test_the_age_gauge_drops_a_reading_two_sweeps_old),
            KD_TEST(test_the_sweep_period_is_jittered),
            KD_TEST_END};
        return kd_test_run("journal_vt", cases, NULL, NULL);
}
