/* SPDX-License-Identifier: Apache-2.0 */
/* The settle stage's FIRED marks at a stop (settle.c, kd_settle_drain), in
 * virtual time against the in-memory fate store: a forwarder made but
 * never run (kd_test_fwd_vt).
 *
 * Issue 44: in a catch-up drain the marks wait behind the claims (two
 * mark statements out at a time, one store connection), so a stop finds
 * tens of thousands of them queued; the stop sent one flush (two batches)
 * and waited for the store to be idle, and the rest were dropped without
 * a word: 88,600 of 200,000 delivered tasks stayed FIRING (bench_limit
 * --drain-tasks 200000: updates 0.557 per fire). Now every batch goes.
 *
 * Under forwarder.fate_marks=runs (docs/plans/issue-44.md §7): where the
 * run tracker's calls go. Tasks claimed through claim_batch and delivered
 * in order are covered by one run a flush later, with no FIRED mark; one
 * held back is parked and marks alone; a stop, a new generation, a failed
 * run, a dead letter and the claim answers that leave a task owning no
 * row; a lease renewal that finds the claim lost (the row another
 * owner's) finishes a seq with nothing in flight, and leaves one whose
 * fire is in flight open until its report, and no run reads the other
 * owner's row as FIRED. */
#include <stdio.h>
#include <string.h>

#include "core/kd_dlist.h"
#include "fwd_offline.h"
#include "kd_fate_mem.h"
#include "kd_test.h"
#include "kd_util.h"
#include "pipeline/kd_claim.h"
#include "pipeline/kd_intake.h"
#include "pipeline/kd_lifecycle.h"
#include "pipeline/kd_pipeline_state.h"
#include "pipeline/kd_runs.h"
#include "pipeline/kd_settle.h"
#include "store/kd_store.h"
#include "store/kd_store_state.h"
#include "top/kd_fwd.h"

#define MONO0 1000000
#define WALL0 1700000000000
/* More than two batches of claim_batch (500). */
#define N 1300

static kd_fwd_t *fwd;

static void id_of(int i, char *id, size_t size)
{
        snprintf(id, size, "t%d", i);
}

/* N rows FIRING, their tasks delivered: their marks queued. */
static void delivered(void)
{
        for (int i = 0; i < N; i++) {
                char id[16];
                id_of(i, id, sizeof(id));
                kd_fate_mem_row_t row = {.fate = KDELAY_FATE_FIRING,
                                         .fire_at_ms = WALL0};
                CU_ASSERT_EQUAL_FATAL(
                    kd_fate_mem_put(fwd->store->fate, id, strlen(id), &row),
                    KDELAY_OK);
                kd_settle_fired(fwd, id, 0, 0, 0);
        }
}

static int fired_rows(void)
{
        int n = 0;
        for (int i = 0; i < N; i++) {
                char id[16];
                kd_fate_mem_row_t row;
                id_of(i, id, sizeof(id));
                if (kd_fate_mem_get(fwd->store->fate, id, strlen(id), &row) ==
                        KDELAY_OK &&
                    row.fate == KDELAY_FATE_FIRED)
                        n++;
        }
        return n;
}

static void test_a_stop_writes_every_queued_mark(void)
{
        CU_ASSERT_EQUAL_FATAL(
            kd_test_fwd_vt(&fwd, "settle", MONO0, WALL0, NULL), 0);
        delivered();
        CU_ASSERT_EQUAL(kd_settle_queued(fwd), N);
        CU_ASSERT_EQUAL(kd_settle_drain(fwd, MONO0 + 60000), 0);
        int fired = fired_rows();
        printf("  %d of %d delivered tasks FIRED after the stop's drain\n",
               fired, N);
        CU_ASSERT_EQUAL(fired, N);
        CU_ASSERT_EQUAL(kd_settle_queued(fwd), 0);
        CU_ASSERT_EQUAL(fwd->store->inflight, 0);
        kd_fwd_destroy(fwd);
        fwd = NULL;
}

/* A mark that fails at the stop (or just before it): the store backs
 * off, and the drain waits the backoff out (on the forwarder's clock,
 * here virtual) and writes every mark all the same. */
static void test_a_failed_mark_is_written_after_the_backoff(void)
{
        CU_ASSERT_EQUAL_FATAL(
            kd_test_fwd_vt(&fwd, "settle", MONO0, WALL0, NULL), 0);
        delivered();
        CU_ASSERT_EQUAL(
            kd_fate_mem_fail_next(fwd->store->fate, 1, KDELAY_ERR_MYSQL),
            KDELAY_OK);
        CU_ASSERT_EQUAL(kd_settle_drain(fwd, MONO0 + 60000), 0);
        CU_ASSERT_EQUAL(fired_rows(), N);
        CU_ASSERT_EQUAL(kd_settle_queued(fwd), 0);
        CU_ASSERT(kd_test_since(fwd, MONO0) >= 100); /* the backoff */
        kd_fwd_destroy(fwd);
        fwd = NULL;
}

/* A store that keeps failing, or whose retry comes after the deadline:
 * the drain ends (-1) with what is left queued, counted by
 * kd_settle_queued for the stop's log line, and never runs past the
 * deadline. */
static void test_a_store_that_keeps_failing_ends_the_drain(void)
{
        CU_ASSERT_EQUAL_FATAL(
            kd_test_fwd_vt(&fwd, "settle", MONO0, WALL0, NULL), 0);
        delivered();
        CU_ASSERT_EQUAL(
            kd_fate_mem_fail_next(fwd->store->fate, 1000, KDELAY_ERR_MYSQL),
            KDELAY_OK);
        CU_ASSERT_EQUAL(kd_settle_drain(fwd, MONO0 + 60000), -1);
        CU_ASSERT_EQUAL(kd_settle_queued(fwd), N);
        CU_ASSERT_EQUAL(fired_rows(), 0);
        CU_ASSERT(kd_test_since(fwd, MONO0) < 60000);
        CU_ASSERT_EQUAL(fwd->store->inflight, 0);
        /* Its retry after the deadline: over at once. */
        int64_t now = kd_fwd_mono_ms(fwd);
        CU_ASSERT_EQUAL(kd_settle_drain(fwd, now + 50), -1);
        CU_ASSERT_EQUAL(kd_fwd_mono_ms(fwd), now);
        CU_ASSERT_EQUAL(
            kd_fate_mem_fail_next(fwd->store->fate, 0, KDELAY_ERR_MYSQL),
            KDELAY_OK);
        kd_fwd_destroy(fwd);
        fwd = NULL;
}

/* --- forwarder.fate_marks=runs (docs/plans/issue-44.md §7) ------------- */

static const char *const runs_settings[] = {"forwarder.fate_marks",
                                            "runs",
                                            "forwarder.claim_ahead",
                                            "1s",
                                            "forwarder.claim_batch",
                                            "500",
                                            NULL};

static kd_task_t *tasks[N];
/* The claim seq at the forwarder's birth (the wall clock in µs): the
 * first token's seq is seq0 + 1. */
static uint64_t seq0;

/* The tracker's park time (claim_ahead 1 s here: 1.5 s), and the latest
 * a seq is parked: a slice after it (kd_runs.h). */
static int64_t park_ms(void)
{
        return kd_runs_park_ms(fwd->settle->runs);
}

static int64_t park_late_ms(void)
{
        int64_t p = park_ms();
        return p + (p * KD_RUNS_SLICE_MS + KD_RUN_PARK_MS - 1) / KD_RUN_PARK_MS;
}

/* Its fate as readers see it: a FIRING row a run covers reads FIRED. */
static kdelay_fate_t fate_of(const char *id)
{
        kdelay_status_t st;
        if (kd_fate_status(fwd->store->fate, id, strlen(id), &st, NULL, 0))
                return (kdelay_fate_t)-1;
        return st.fate;
}

/* The row itself (a covered FIRING row stays FIRING here; a FIRED mark
 * makes it FIRED). */
static kdelay_fate_t raw_of(const char *id)
{
        kd_fate_mem_row_t row;
        if (kd_fate_mem_get(fwd->store->fate, id, strlen(id), &row))
                return (kdelay_fate_t)-1;
        return row.fate;
}

/* Tasks lo..hi-1 that read `fate` (derived when derived, else raw). */
static int count_fate(int lo, int hi, kdelay_fate_t fate, int derived)
{
        int n = 0;
        for (int i = lo; i < hi; i++) {
                char id[16];
                id_of(i, id, sizeof(id));
                n += (derived ? fate_of(id) : raw_of(id)) == fate;
        }
        return n;
}

static void serve(int64_t ms)
{
        CU_ASSERT_EQUAL_FATAL(kd_test_step_serving(fwd, ms), 0);
}

/* A forwarder at fate_marks=runs with N held tasks, due in a minute,
 * claimed through claim_batch (their rows FIRING under tokens of seqs
 * 1..N, in order). */
static void runs_claimed(void)
{
        CU_ASSERT_EQUAL_FATAL(
            kd_test_fwd_vt(&fwd, "settle", MONO0, WALL0, runs_settings), 0);
        CU_ASSERT_PTR_NOT_NULL_FATAL(fwd->settle->runs);
        seq0 = fwd->claim->seq;
        CU_ASSERT_EQUAL(seq0, (uint64_t)WALL0 * 1000);
        for (int i = 0; i < N; i++) {
                char id[16];
                id_of(i, id, sizeof(id));
                tasks[i] = kd_test_task(id, "out", WALL0 + 60000);
                CU_ASSERT_PTR_NOT_NULL_FATAL(tasks[i]);
                tasks[i]->state = KD_TASK_HELD;
                kd_claim_enqueue(fwd, tasks[i]);
        }
        serve(600); /* two full batches at once, the rest after 500 ms */
        for (int i = 0; i < N; i++) {
                CU_ASSERT_EQUAL_FATAL(tasks[i]->state, KD_TASK_CLAIMED);
                CU_ASSERT_EQUAL(tasks[i]->seq, seq0 + (uint64_t)i + 1);
        }
        CU_ASSERT_EQUAL(count_fate(0, N, KDELAY_FATE_FIRING, 0), N);
        CU_ASSERT_EQUAL(kd_metric_get(&fwd->metrics, KD_M_MARK_STATEMENTS), 0);
}

/* Task i delivered (at_least_once: its report is in). */
static void deliver(int i)
{
        tasks[i]->state = KD_TASK_FIRING;
        kd_settle_delivered(fwd, tasks[i]);
        tasks[i] = NULL;
}

static void runs_done(void)
{
        for (int i = 0; i < N; i++)
                if (tasks[i]) {
                        kd_test_task_drop(fwd, tasks[i]);
                        tasks[i] = NULL;
                }
        kd_fwd_destroy(fwd);
        fwd = NULL;
}

static int64_t metric(kd_metric_id_t id)
{
        return kd_metric_get(&fwd->metrics, id);
}

/* Delivered in claim order: one flush later a single run covers them
 * all, in one statement, with no FIRED mark; every row reads FIRED. */
static void test_runs_cover_tasks_delivered_in_claim_order(void)
{
        runs_claimed();
        for (int i = 0; i < N; i++)
                deliver(i);
        CU_ASSERT_EQUAL(kd_settle_queued(fwd), 0); /* no mark queued */
        serve(250);
        CU_ASSERT_EQUAL(metric(KD_M_FIRED_RUNS), 1);
        CU_ASSERT_EQUAL(metric(KD_M_FIRED_RUN_SEQS), N);
        CU_ASSERT_EQUAL(metric(KD_M_MARK_STATEMENTS), 1);
        CU_ASSERT_EQUAL(metric(KD_M_RUNS_PARKED), 0);
        CU_ASSERT_EQUAL(count_fate(0, N, KDELAY_FATE_FIRED, 1), N);
        CU_ASSERT_EQUAL(count_fate(0, N, KDELAY_FATE_FIRING, 0), N);
        CU_ASSERT_EQUAL(kd_runs_waiting(fwd->settle->runs), 0);
        runs_done();
}

#define HELD_BACK 100

/* One task held back: the runs stop before it, until its seq is parked
 * (the park time after its claim, at most a slice and a flush later);
 * then the
 * others are covered and it is not; delivered later, it takes a FIRED
 * mark of its own. */
static void test_a_task_held_back_is_parked_then_marked_alone(void)
{
        runs_claimed();
        int64_t claimed_at = kd_test_since(fwd, MONO0); /* the last batch */
        for (int i = 0; i < N; i++)
                if (i != HELD_BACK)
                        deliver(i);
        serve(250);
        CU_ASSERT_EQUAL(count_fate(0, HELD_BACK, KDELAY_FATE_FIRED, 1),
                        HELD_BACK);
        CU_ASSERT_EQUAL(count_fate(HELD_BACK, N, KDELAY_FATE_FIRING, 1),
                        N - HELD_BACK);
        /* Its claim went with the first batch, at about 0: parked at the
         * first flush at least the park time after it. */
        CU_ASSERT_EQUAL_FATAL(kd_test_step_to(fwd, MONO0, park_ms() - 1), 0);
        CU_ASSERT_EQUAL(kd_test_store_answers(fwd), 0);
        CU_ASSERT_EQUAL(count_fate(HELD_BACK + 1, N, KDELAY_FATE_FIRED, 1), 0);
        CU_ASSERT_EQUAL(metric(KD_M_RUNS_PARKED), 0);
        while (kd_test_since(fwd, MONO0) < park_late_ms() + 250 + 1)
                serve(1);
        printf("  last batch claimed at +%lld ms; the others covered by "
               "+%lld ms\n",
               (long long)claimed_at, (long long)kd_test_since(fwd, MONO0));
        CU_ASSERT_EQUAL(metric(KD_M_RUNS_PARKED), 1);
        CU_ASSERT_EQUAL(count_fate(0, N, KDELAY_FATE_FIRED, 1), N - 1);
        char id[16];
        id_of(HELD_BACK, id, sizeof(id));
        CU_ASSERT_EQUAL(fate_of(id), KDELAY_FATE_FIRING);
        CU_ASSERT_EQUAL(metric(KD_M_MARK_STATEMENTS), 2); /* two runs */
        deliver(HELD_BACK);
        CU_ASSERT_EQUAL(kd_settle_queued(fwd), 1); /* its own mark */
        serve(250);
        CU_ASSERT_EQUAL(raw_of(id), KDELAY_FATE_FIRED);
        CU_ASSERT_EQUAL(count_fate(0, N, KDELAY_FATE_FIRED, 0), 1);
        CU_ASSERT_EQUAL(metric(KD_M_MARK_STATEMENTS), 3);
        runs_done();
}

/* A stop: the drain sends the runs of every task delivered, and parks
 * those not delivered (their rows FIRING and uncovered: the next owner
 * takes them over). */
static void test_a_stop_sends_every_run_and_parks_the_rest(void)
{
        runs_claimed();
        for (int i = 0; i < N; i++)
                if (i != HELD_BACK)
                        deliver(i);
        CU_ASSERT_EQUAL(kd_settle_drain(fwd, MONO0 + 60000), 0);
        CU_ASSERT_EQUAL(count_fate(0, N, KDELAY_FATE_FIRED, 1), N - 1);
        CU_ASSERT_EQUAL(metric(KD_M_FIRED_RUNS), 2);
        CU_ASSERT_EQUAL(metric(KD_M_RUNS_PARKED), 1);
        CU_ASSERT_EQUAL(kd_settle_queued(fwd), 0);
        CU_ASSERT_EQUAL(kd_runs_waiting(fwd->settle->runs), 0);
        /* Once the leases passed, the next owner's takeover of the
         * undelivered row wins. */
        CU_ASSERT_EQUAL_FATAL(kd_test_step(fwd, 5000), 0);
        char id[16];
        id_of(HELD_BACK, id, sizeof(id));
        kd_fate_claim_t it = {.id = id,
                              .id_len = strlen(id),
                              .fire_at_ms = WALL0 + 60000,
                              .token = "next:00000001.1:1",
                              .lease_ms = 5000};
        kd_strlcpy(it.row_owner, tasks[HELD_BACK]->token, sizeof(it.row_owner));
        CU_ASSERT_EQUAL(kd_fate_takeover(fwd->store->fate, &it, 1, NULL, 0),
                        KDELAY_OK);
        CU_ASSERT_EQUAL(it.fate, KDELAY_FATE_FIRING);
        CU_ASSERT_STRING_EQUAL(it.row_owner, "next:00000001.1:1");
        /* A delivered one's is refused: its row reads FIRED. */
        id_of(0, id, sizeof(id));
        kd_fate_claim_t done = {.id = id,
                                .id_len = strlen(id),
                                .fire_at_ms = WALL0 + 60000,
                                .token = "next:00000001.1:2",
                                .lease_ms = 5000};
        snprintf(done.row_owner, sizeof(done.row_owner), "%.*s1",
                 (int)strlen(fwd->claim->prefix), fwd->claim->prefix);
        CU_ASSERT_EQUAL(kd_fate_takeover(fwd->store->fate, &done, 1, NULL, 0),
                        KDELAY_OK);
        CU_ASSERT_EQUAL(done.fate, KDELAY_FATE_FIRED);
        runs_done();
}

/* A new claim generation (a revoke, a rewind) with a claim in flight:
 * the old generation's runs go, its unfinished seq is parked; the task,
 * delivered afterwards (a kept partition), marks alone; the new
 * generation's first run starts after the last seq. */
static void test_a_new_generation_parks_what_is_unfinished(void)
{
        runs_claimed();
        for (int i = 0; i < N; i++)
                if (i != HELD_BACK)
                        deliver(i);
        kd_claim_new_generation(fwd);
        CU_ASSERT_EQUAL(metric(KD_M_RUNS_PARKED), 1);
        CU_ASSERT_EQUAL(kd_runs_emitted(fwd->settle->runs), seq0 + N);
        serve(250);
        CU_ASSERT_EQUAL(count_fate(0, N, KDELAY_FATE_FIRED, 1), N - 1);
        CU_ASSERT_EQUAL(metric(KD_M_FIRED_RUNS), 2);
        deliver(HELD_BACK);
        serve(250);
        char id[16];
        id_of(HELD_BACK, id, sizeof(id));
        CU_ASSERT_EQUAL(raw_of(id), KDELAY_FATE_FIRED); /* its own mark */
        /* A task claimed now: seq N + 1, under the new prefix. */
        kd_task_t *t = kd_test_task("new", "out", WALL0 + 60000);
        CU_ASSERT_PTR_NOT_NULL_FATAL(t);
        t->state = KD_TASK_HELD;
        kd_claim_enqueue(fwd, t);
        serve(600);
        CU_ASSERT_EQUAL(t->seq, seq0 + (uint64_t)N + 1);
        t->state = KD_TASK_FIRING;
        kd_settle_delivered(fwd, t);
        serve(250);
        CU_ASSERT_EQUAL(fate_of("new"), KDELAY_FATE_FIRED);
        CU_ASSERT_EQUAL(raw_of("new"), KDELAY_FATE_FIRING);
        CU_ASSERT_EQUAL(metric(KD_M_FIRED_RUNS), 3);
        CU_ASSERT_EQUAL(metric(KD_M_FIRED_RUN_SEQS), N); /* N-1, then 1 */
        runs_done();
}

/* A run whose statement fails goes again after the backoff: every row
 * FIRED, the run counted once. */
static void test_a_failed_run_is_sent_again(void)
{
        runs_claimed();
        for (int i = 0; i < N; i++)
                deliver(i);
        CU_ASSERT_EQUAL(
            kd_fate_mem_fail_next(fwd->store->fate, 1, KDELAY_ERR_MYSQL),
            KDELAY_OK);
        serve(250);
        CU_ASSERT_EQUAL(metric(KD_M_FIRED_RUNS), 0);
        CU_ASSERT_EQUAL(kd_settle_queued(fwd), 1); /* the run, back */
        CU_ASSERT_EQUAL(count_fate(0, N, KDELAY_FATE_FIRED, 1), 0);
        serve(400); /* the backoff (100 ms), then the flush */
        CU_ASSERT_EQUAL(metric(KD_M_FIRED_RUNS), 1);
        CU_ASSERT_EQUAL(kd_settle_queued(fwd), 0);
        CU_ASSERT_EQUAL(count_fate(0, N, KDELAY_FATE_FIRED, 1), N);
        runs_done();
}

/* A dead letter's seq joins a run only once its DEAD mark is in (the
 * store runs requests in order); a DEAD mark lost leaves its seq parked
 * and its row FIRING, uncovered (audit's case). */
static void test_a_dead_letter_joins_a_run_after_its_mark(void)
{
        runs_claimed();
        tasks[0]->fire_failed = 1;
        tasks[0]->dead_reason = "target-refused";
        tasks[0]->state = KD_TASK_DEAD;
        kd_settle_delivered(fwd, tasks[0]);
        tasks[0] = NULL;
        for (int i = 1; i < HELD_BACK; i++)
                deliver(i);
        serve(250); /* the DEAD mark out; the runs wait for it */
        CU_ASSERT_EQUAL(metric(KD_M_FIRED_RUNS), 0);
        CU_ASSERT_EQUAL(raw_of("t0"), KDELAY_FATE_DEAD);
        CU_ASSERT_EQUAL(fate_of("t1"), KDELAY_FATE_FIRING);
        /* A DEAD mark that cannot be queued (a reason it does not know
         * stands for running out of memory: the same path). */
        kd_task_t *t = tasks[HELD_BACK];
        t->fire_failed = 1;
        t->dead_reason = "no-such-reason";
        t->state = KD_TASK_DEAD;
        kd_settle_delivered(fwd, t);
        tasks[HELD_BACK] = NULL;
        CU_ASSERT_EQUAL(metric(KD_M_MARKS_LOST), 1);
        for (int i = HELD_BACK + 1; i < N; i++)
                deliver(i);
        /* The first flush the park time after the claims: the dead
         * letter's seq in the first run; the lost one's parked between
         * the two. */
        while (kd_test_since(fwd, MONO0) < park_late_ms() + 250 + 1)
                serve(1);
        CU_ASSERT_EQUAL(metric(KD_M_FIRED_RUNS), 2);
        CU_ASSERT_EQUAL(metric(KD_M_FIRED_RUN_SEQS), N - 1);
        CU_ASSERT_EQUAL(metric(KD_M_RUNS_PARKED), 1);
        CU_ASSERT_EQUAL(raw_of("t0"), KDELAY_FATE_DEAD);
        CU_ASSERT_EQUAL(count_fate(1, N, KDELAY_FATE_FIRED, 1), N - 2);
        char id[16];
        id_of(HELD_BACK, id, sizeof(id));
        CU_ASSERT_EQUAL(fate_of(id), KDELAY_FATE_FIRING);
        runs_done();
}

/* A claim whose answer leaves its task owning no row finishes its seq
 * (CANCELLED, DONE, another copy's): runs go over it, touching no row;
 * one waiting on a foreign claim's lease stays unfinished (it may take
 * that row over under its token later) and is parked. */
static void test_claim_outcomes_owning_no_row_finish_their_seq(void)
{
        CU_ASSERT_EQUAL_FATAL(
            kd_test_fwd_vt(&fwd, "settle", MONO0, WALL0, runs_settings), 0);
        seq0 = fwd->claim->seq;
        kd_fate_mem_row_t cancelled = {.fate = KDELAY_FATE_CANCELLED,
                                       .fire_at_ms = -1};
        kd_fate_mem_row_t fired = {.fate = KDELAY_FATE_FIRED,
                                   .fire_at_ms = WALL0 + 60000};
        kd_fate_mem_row_t foreign = {.fate = KDELAY_FATE_FIRING,
                                     .fire_at_ms = WALL0 + 60000,
                                     .owner = "other:00000001.1:5",
                                     .lease_ms = 60000};
        CU_ASSERT_EQUAL(kd_fate_mem_put(fwd->store->fate, "c", 1, &cancelled),
                        KDELAY_OK);
        CU_ASSERT_EQUAL(kd_fate_mem_put(fwd->store->fate, "d", 1, &fired),
                        KDELAY_OK);
        CU_ASSERT_EQUAL(kd_fate_mem_put(fwd->store->fate, "w", 1, &foreign),
                        KDELAY_OK);
        /* Seqs 1..5: c, d, a, a's copy, w; then x0..x9 (6..15). */
        const char *ids[15] = {"c",  "d",  "a",  "a",  "w",  "x0", "x1", "x2",
                               "x3", "x4", "x5", "x6", "x7", "x8", "x9"};
        kd_task_t *t[15];
        for (int i = 0; i < 15; i++) {
                t[i] = kd_test_task(ids[i], "out", WALL0 + 60000);
                CU_ASSERT_PTR_NOT_NULL_FATAL(t[i]);
                t[i]->state = KD_TASK_HELD;
                kd_claim_enqueue(fwd, t[i]);
        }
        serve(501); /* one batch, claim_ahead/2 after */
        CU_ASSERT_EQUAL(metric(KD_M_CANCELLED), 1);
        CU_ASSERT_EQUAL(metric(KD_M_ALREADY_FIRED), 1);
        CU_ASSERT_EQUAL(metric(KD_M_DUP_COPIES), 1);
        CU_ASSERT_EQUAL(metric(KD_M_CLAIMED), 11);
        CU_ASSERT_EQUAL(t[4]->state, KD_TASK_HELD); /* waits on the lease */
        CU_ASSERT_EQUAL(t[2]->seq, seq0 + 3);
        for (int i = 2; i < 15; i += i == 2 ? 3 : 1) { /* a, x0..x9 */
                t[i]->state = KD_TASK_FIRING;
                kd_settle_delivered(fwd, t[i]);
        }
        serve(250);
        CU_ASSERT_EQUAL(metric(KD_M_FIRED_RUNS), 1); /* 1..4 */
        CU_ASSERT_EQUAL(metric(KD_M_FIRED_RUN_SEQS), 4);
        CU_ASSERT_EQUAL(fate_of("a"), KDELAY_FATE_FIRED);
        CU_ASSERT_EQUAL(raw_of("a"), KDELAY_FATE_FIRING);
        CU_ASSERT_EQUAL(fate_of("x0"), KDELAY_FATE_FIRING);
        CU_ASSERT_EQUAL(raw_of("c"), KDELAY_FATE_CANCELLED);
        CU_ASSERT_EQUAL(raw_of("d"), KDELAY_FATE_FIRED);
        while (kd_test_since(fwd, MONO0) < 501 + park_late_ms() + 250)
                serve(1);
        CU_ASSERT_EQUAL(metric(KD_M_RUNS_PARKED), 1); /* w's */
        CU_ASSERT_EQUAL(metric(KD_M_FIRED_RUNS), 2);  /* and 6..15 */
        CU_ASSERT_EQUAL(metric(KD_M_FIRED_RUN_SEQS), 14);
        CU_ASSERT_EQUAL(fate_of("x9"), KDELAY_FATE_FIRED);
        CU_ASSERT_EQUAL(fate_of("w"), KDELAY_FATE_FIRING);
        CU_ASSERT_EQUAL(metric(KD_M_MARK_STATEMENTS), 3); /* + c's due */
        kd_test_task_drop(fwd, t[4]);
        kd_fwd_destroy(fwd);
        fwd = NULL;
}

/* A seq the tracker refuses (here: not above the last it knows, as a
 * tracker out of memory would refuse one): claim_batch makes no token,
 * c->seq stays, the task goes back to the claim queue and no row is
 * written under that seq. */
static void test_a_refused_seq_makes_no_token(void)
{
        CU_ASSERT_EQUAL_FATAL(
            kd_test_fwd_vt(&fwd, "settle", MONO0, WALL0, runs_settings), 0);
        seq0 = fwd->claim->seq;
        kd_settle_run_generation(fwd, "settle:00000000.9", seq0 + 1000);
        kd_task_t *t = kd_test_task("r", "out", WALL0 + 60000);
        CU_ASSERT_PTR_NOT_NULL_FATAL(t);
        t->state = KD_TASK_HELD;
        kd_claim_enqueue(fwd, t);
        serve(501);
        CU_ASSERT_EQUAL(t->token[0], '\0');
        CU_ASSERT_EQUAL(t->seq, 0);
        CU_ASSERT_EQUAL(fwd->claim->seq, seq0);
        CU_ASSERT_EQUAL(t->where, KD_WHERE_CLAIM_Q);
        CU_ASSERT_EQUAL(raw_of("r"), KDELAY_FATE_UNDECIDED);
        CU_ASSERT_EQUAL(metric(KD_M_CLAIM_STATEMENTS), 0);
        CU_ASSERT(kd_store_retry_mono(fwd) > kd_fwd_mono_ms(fwd) - 501);
        kd_test_task_drop(fwd, t);
        kd_fwd_destroy(fwd);
        fwd = NULL;
}

/* --- a lost lease (claim.c's renewed) ----------------------------------- */

static const char *const lease_settings[] = {"forwarder.fate_marks",
                                             "runs",
                                             "forwarder.claim_ahead",
                                             "1s",
                                             "forwarder.claim_batch",
                                             "500",
                                             "forwarder.claim_lease",
                                             "1500ms",
                                             NULL};

/* Steps a millisecond at a time, serving the store's answers, to ms after
 * MONO0. */
static void serve_to(int64_t ms)
{
        while (kd_test_since(fwd, MONO0) < ms)
                serve(1);
}

/* A lease renewal that finds the claim lost (the row FIRING under another
 * owner's token: taken over after the lease passed, this process stalled
 * longer than that) finishes the seq of a task with nothing in flight
 * (claim.c's renewed drops it): its token owns no row, so the run that
 * goes over its seq writes nothing for the other owner's row, which still
 * reads FIRING. A task whose fire is in flight keeps its seq open (its
 * report decides): the runs stop before it (not parked: it is young), and
 * once it is delivered a run covers a seq that owns no row either; the
 * other owner's row reads FIRING still, and no FIRED mark is written. */
static void test_a_lost_lease_finishes_a_seq_owning_no_row(void)
{
        enum { L = 5 };
        CU_ASSERT_EQUAL_FATAL(
            kd_test_fwd_vt(&fwd, "settle", MONO0, WALL0, lease_settings), 0);
        seq0 = fwd->claim->seq;
        /* The renewal rounds walk the partitions' tasks. */
        kd_part_t *part = kd_intake_part_open(fwd, "kdelay-1m", 0, 60000);
        CU_ASSERT_PTR_NOT_NULL_FATAL(part);
        kd_task_t *t[L];
        for (int i = 0; i < L; i++) {
                char id[16];
                snprintf(id, sizeof(id), "l%d", i);
                t[i] = kd_test_task(id, "out", WALL0 + 60000);
                CU_ASSERT_PTR_NOT_NULL_FATAL(t[i]);
                t[i]->rec.offset = 100 + i;
                CU_ASSERT_EQUAL_FATAL(kd_offtrack_add(&part->track, 100 + i),
                                      0);
                t[i]->part = part;
                KD_DLIST_PUSH(part->tasks, t[i]);
                t[i]->state = KD_TASK_HELD;
                kd_claim_enqueue(fwd, t[i]);
        }
        serve_to(501); /* one batch at +500; leases to +2000 */
        for (int i = 0; i < L; i++) {
                CU_ASSERT_EQUAL_FATAL(t[i]->state, KD_TASK_CLAIMED);
                CU_ASSERT_EQUAL(t[i]->seq, seq0 + (uint64_t)i + 1);
                CU_ASSERT_EQUAL(t[i]->lease_mono, MONO0 + 500 + 1500);
        }
        /* l1's and l3's rows are another owner's now; l3's fire is out. */
        kd_fate_mem_row_t other = {.fate = KDELAY_FATE_FIRING,
                                   .fire_at_ms = WALL0 + 60000,
                                   .owner = "other:00000001.1:9",
                                   .lease_ms = 60000};
        CU_ASSERT_EQUAL(kd_fate_mem_put(fwd->store->fate, "l1", 2, &other),
                        KDELAY_OK);
        CU_ASSERT_EQUAL(kd_fate_mem_put(fwd->store->fate, "l3", 2, &other),
                        KDELAY_OK);
        kd_task_detach(fwd, t[3]);
        t[3]->state = KD_TASK_FIRING;
        kd_task_to_flight(t[3]);
        /* The others delivered: a flush covers l0, then stops at l1. */
        for (int i = 0; i < L; i += 2) {
                t[i]->state = KD_TASK_FIRING;
                kd_settle_delivered(fwd, t[i]);
                t[i] = NULL;
        }
        serve_to(999);
        CU_ASSERT_EQUAL(metric(KD_M_FIRED_RUN_SEQS), 1);
        CU_ASSERT_EQUAL(metric(KD_M_LEASES_LOST), 0);
        /* The round at +1000 finds a third of the leases used: l1's and
         * l3's renewals answer another owner. l1 goes (its seq DONE); l3
         * waits for its report. */
        serve_to(1001);
        CU_ASSERT_EQUAL(metric(KD_M_LEASES_LOST), 2);
        CU_ASSERT_EQUAL(metric(KD_M_LEASE_RENEWALS), 0);
        t[1] = NULL; /* dropped: freed */
        CU_ASSERT_PTR_EQUAL(part->tasks, t[3]);
        CU_ASSERT_PTR_NULL(t[3]->next);
        CU_ASSERT_EQUAL(t[3]->state, KD_TASK_FIRING);
        serve_to(1300);
        CU_ASSERT_EQUAL(metric(KD_M_FIRED_RUN_SEQS), 3); /* and l1, l2 */
        CU_ASSERT(kd_runs_emitted(fwd->settle->runs) == seq0 + 3);
        CU_ASSERT_EQUAL(metric(KD_M_RUNS_PARKED), 0);
        CU_ASSERT_EQUAL(fate_of("l0"), KDELAY_FATE_FIRED);
        CU_ASSERT_EQUAL(fate_of("l1"), KDELAY_FATE_FIRING); /* not ours */
        CU_ASSERT_EQUAL(fate_of("l2"), KDELAY_FATE_FIRED);
        CU_ASSERT_EQUAL(fate_of("l3"), KDELAY_FATE_FIRING);
        CU_ASSERT_EQUAL(fate_of("l4"), KDELAY_FATE_FIRING); /* behind l3 */
        /* l3's report: delivered. A run covers its seq, which owns no row:
         * the other owner's row reads FIRING, its owner unchanged. */
        kd_task_reported(t[3]);
        kd_settle_delivered(fwd, t[3]);
        t[3] = NULL;
        serve_to(1600);
        CU_ASSERT_EQUAL(metric(KD_M_FIRED_RUN_SEQS), L);
        CU_ASSERT_EQUAL(metric(KD_M_RUNS_PARKED), 0);
        CU_ASSERT_EQUAL(kd_settle_queued(fwd), 0); /* no FIRED mark */
        CU_ASSERT_EQUAL(metric(KD_M_MARK_STATEMENTS), metric(KD_M_FIRED_RUNS));
        CU_ASSERT_EQUAL(fate_of("l4"), KDELAY_FATE_FIRED);
        const char *theirs[] = {"l1", "l3"};
        for (int i = 0; i < 2; i++) {
                kd_fate_mem_row_t row;
                CU_ASSERT_EQUAL(fate_of(theirs[i]), KDELAY_FATE_FIRING);
                CU_ASSERT_EQUAL(
                    kd_fate_mem_get(fwd->store->fate, theirs[i], 2, &row),
                    KDELAY_OK);
                CU_ASSERT_EQUAL(row.fate, KDELAY_FATE_FIRING);
                CU_ASSERT_STRING_EQUAL(row.owner, "other:00000001.1:9");
        }
        CU_ASSERT_PTR_NULL(part->tasks);
        CU_ASSERT_EQUAL(metric(KD_M_TASK_STATE_BUGS), 0);
        kd_fwd_destroy(fwd);
        fwd = NULL;
}

/* --- forwarder.fate_marks=auto: runs from schema 11 on, switched live -- */

static int switch_lines;

static void count_switch(kdelay_log_level_t level, const char *line,
                         void *opaque)
{
        (void)level;
        (void)opaque;
        switch_lines += strstr(line, "event=fate_marks_switch from=rows "
                                     "to=runs schema=11") != NULL;
}

/* Tasks lo..hi-1, held and due in a minute, claimed (seqs in order). */
static void claim_range(int lo, int hi)
{
        for (int i = lo; i < hi; i++) {
                char id[16];
                id_of(i, id, sizeof(id));
                tasks[i] = kd_test_task(id, "out", WALL0 + 60000);
                CU_ASSERT_PTR_NOT_NULL_FATAL(tasks[i]);
                tasks[i]->state = KD_TASK_HELD;
                kd_claim_enqueue(fwd, tasks[i]);
        }
        serve(600);
        for (int i = lo; i < hi; i++)
                CU_ASSERT_EQUAL_FATAL(tasks[i]->state, KD_TASK_CLAIMED);
}

/* auto marks rows while the schema is unknown or 10; when 11 is read it
 * switches at once, logged once: the seqs given before keep their own
 * FIRED marks, those after go into runs; every task reads FIRED. */
static void test_auto_switches_to_runs_at_schema_11(void)
{
        static const char *const auto_settings[] = {"forwarder.fate_marks",
                                                    "auto",
                                                    "forwarder.claim_ahead",
                                                    "1s",
                                                    "forwarder.claim_batch",
                                                    "500",
                                                    NULL};
        enum { K = 500 };
        switch_lines = 0;
        CU_ASSERT_EQUAL_FATAL(kd_test_fwd_vt_log(&fwd, "settle", MONO0, WALL0,
                                                 auto_settings, count_switch,
                                                 NULL),
                              0);
        CU_ASSERT(!kd_settle_runs_on(fwd));
        CU_ASSERT_PTR_NULL(fwd->settle->runs);
        kd_settle_schema_seen(fwd, 10);
        kd_settle_schema_seen(fwd, 0); /* unknown: ignored */
        CU_ASSERT_EQUAL(fwd->settle->schema, 10);
        CU_ASSERT(!kd_settle_runs_on(fwd));
        claim_range(0, K);
        kd_settle_schema_seen(fwd, 11);
        CU_ASSERT(kd_settle_runs_on(fwd));
        CU_ASSERT_PTR_NOT_NULL_FATAL(fwd->settle->runs);
        CU_ASSERT_EQUAL(switch_lines, 1);
        kd_settle_schema_seen(fwd, 11); /* read again: nothing new */
        kd_settle_schema_seen(fwd, 12);
        CU_ASSERT_EQUAL(switch_lines, 1);
        claim_range(K, N);
        CU_ASSERT_EQUAL(tasks[K]->seq, (uint64_t)WALL0 * 1000 + K + 1);
        for (int i = 0; i < N; i++)
                deliver(i);
        serve(250);
        serve(250);
        CU_ASSERT_EQUAL(kd_settle_queued(fwd), 0);
        CU_ASSERT_EQUAL(metric(KD_M_FIRED_RUN_SEQS), N - K);
        CU_ASSERT_EQUAL(count_fate(0, K, KDELAY_FATE_FIRED, 0), K);
        CU_ASSERT_EQUAL(count_fate(K, N, KDELAY_FATE_FIRING, 0), N - K);
        CU_ASSERT_EQUAL(count_fate(0, N, KDELAY_FATE_FIRED, 1), N);
        runs_done();
}

/* rows stays rows whatever the schema; runs is runs from the start. */
static void test_rows_and_runs_ignore_the_schema(void)
{
        static const char *const rows_settings[] = {"forwarder.fate_marks",
                                                    "rows", NULL};
        CU_ASSERT_EQUAL_FATAL(
            kd_test_fwd_vt(&fwd, "settle", MONO0, WALL0, rows_settings), 0);
        kd_settle_schema_seen(fwd, 11);
        CU_ASSERT(!kd_settle_runs_on(fwd));
        CU_ASSERT_PTR_NULL(fwd->settle->runs);
        kd_fwd_destroy(fwd);
        CU_ASSERT_EQUAL_FATAL(
            kd_test_fwd_vt(&fwd, "settle", MONO0, WALL0, runs_settings), 0);
        CU_ASSERT(kd_settle_runs_on(fwd));
        kd_settle_schema_seen(fwd, 10);
        CU_ASSERT(kd_settle_runs_on(fwd));
        CU_ASSERT_PTR_NOT_NULL(fwd->settle->runs);
        kd_fwd_destroy(fwd);
        fwd = NULL;
}

/* auto without a claim lease keeps a mark per task at schema 11: a run
 * records a delivery later than a mark, and without a lease another
 * copy takes a FIRING row over after foreign_claim_wait alone. */
static void test_auto_without_a_lease_keeps_rows(void)
{
        static const char *const settings[] = {"forwarder.fate_marks", "auto",
                                               "forwarder.claim_lease", "0s",
                                               NULL};
        CU_ASSERT_EQUAL_FATAL(
            kd_test_fwd_vt(&fwd, "settle", MONO0, WALL0, settings), 0);
        kd_settle_schema_seen(fwd, 11);
        CU_ASSERT(!kd_settle_runs_on(fwd));
        CU_ASSERT_PTR_NULL(fwd->settle->runs);
        kd_fwd_destroy(fwd);
        fwd = NULL;
}

int main(void)
{
        static const kd_test_case_t cases[] = {
            KD_TEST(test_a_stop_writes_every_queued_mark),
            KD_TEST(test_a_failed_mark_is_written_after_the_backoff),
            KD_TEST(test_a_store_that_keeps_failing_ends_the_drain),
            KD_TEST(test_runs_cover_tasks_delivered_in_claim_order),
            KD_TEST(test_a_task_held_back_is_parked_then_marked_alone),
            KD_TEST(test_a_stop_sends_every_run_and_parks_the_rest),
            KD_TEST(test_a_new_generation_parks_what_is_unfinished),
            KD_TEST(test_a_failed_run_is_sent_again),
            KD_TEST(test_a_dead_letter_joins_a_run_after_its_mark),
            KD_TEST(test_claim_outcomes_owning_no_row_finish_their_seq),
            KD_TEST(test_a_refused_seq_makes_no_token),
            KD_TEST(test_a_lost_lease_finishes_a_seq_owning_no_row),
            KD_TEST(test_auto_switches_to_runs_at_schema_11),
            KD_TEST(test_rows_and_runs_ignore_the_schema),
            KD_TEST(test_auto_without_a_lease_keeps_rows),
            KD_TEST_END};
        return kd_test_run("settle_vt", cases, NULL, NULL);
}
