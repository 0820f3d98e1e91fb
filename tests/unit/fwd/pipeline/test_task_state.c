/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for a task's lifecycle (kd_lifecycle.h): every (from, to)
 * pair of states against the table of moves, each illegal one logged
 * once and counted, and made all the same (Release) or aborting (Debug
 * and sanitizer builds); a queue recording its place in its tasks; a
 * task taken out of each of its places; a task in flight left to its
 * report. No broker, no store. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <kdelay/conf.h>

#include "core/kd_fwd_core.h"
#include "kd_test.h"
#include "kd_util.h"
#include "pipeline/kd_held.h"
#include "pipeline/kd_lifecycle.h"
#include "pipeline/kd_pipeline.h"
#include "pipeline/kd_pipeline_state.h"
#include "pipeline/kd_settle.h"
#include "store/kd_store.h"
#include "store/kd_store_state.h"

/* The moves the pipeline makes, written out again here so that a change
 * of the table is a change of this list too. */
static const struct {
        kd_task_state_t from, to;
} legal[] = {
    {KD_TASK_NEW, KD_TASK_QUEUED},        {KD_TASK_QUEUED, KD_TASK_HELD},
    {KD_TASK_QUEUED, KD_TASK_HOPPING},    {KD_TASK_QUEUED, KD_TASK_DEAD},
    {KD_TASK_QUEUED, KD_TASK_RETRY},      {KD_TASK_HELD, KD_TASK_CLAIMING},
    {KD_TASK_HELD, KD_TASK_HOPPING},      {KD_TASK_HELD, KD_TASK_RETRY},
    {KD_TASK_CLAIMING, KD_TASK_CLAIMING}, {KD_TASK_CLAIMING, KD_TASK_HELD},
    {KD_TASK_CLAIMING, KD_TASK_CLAIMED},  {KD_TASK_CLAIMING, KD_TASK_HOPPING},
    {KD_TASK_CLAIMING, KD_TASK_RETRY},    {KD_TASK_CLAIMED, KD_TASK_PACED},
    {KD_TASK_CLAIMED, KD_TASK_FIRING},    {KD_TASK_CLAIMED, KD_TASK_CLAIMING},
    {KD_TASK_CLAIMED, KD_TASK_RETRY},     {KD_TASK_PACED, KD_TASK_FIRING},
    {KD_TASK_PACED, KD_TASK_CLAIMING},    {KD_TASK_PACED, KD_TASK_RETRY},
    {KD_TASK_FIRING, KD_TASK_DEAD},       {KD_TASK_FIRING, KD_TASK_RETRY},
    {KD_TASK_HOPPING, KD_TASK_DEAD},      {KD_TASK_HOPPING, KD_TASK_RETRY},
    {KD_TASK_DEAD, KD_TASK_DEAD},         {KD_TASK_DEAD, KD_TASK_RETRY},
    {KD_TASK_RETRY, KD_TASK_RETRY},       {KD_TASK_RETRY, KD_TASK_FIRING},
    {KD_TASK_RETRY, KD_TASK_HOPPING},     {KD_TASK_RETRY, KD_TASK_DEAD},
    {KD_TASK_RETRY, KD_TASK_CLAIMING},    {KD_TASK_FIRING, KD_TASK_JOURNAL},
    {KD_TASK_RETRY, KD_TASK_JOURNAL},     {KD_TASK_JOURNAL, KD_TASK_RETRY},
    {KD_TASK_DEAD, KD_TASK_JOURNAL},      {KD_TASK_CLAIMED, KD_TASK_INTENT},
    {KD_TASK_PACED, KD_TASK_INTENT},      {KD_TASK_RETRY, KD_TASK_INTENT},
    {KD_TASK_INTENT, KD_TASK_FIRING},     {KD_TASK_INTENT, KD_TASK_RETRY},
};

static int expected(kd_task_state_t from, kd_task_state_t to)
{
        for (size_t i = 0; i < KD_ARRAY_LEN(legal); i++)
                if (legal[i].from == from && legal[i].to == to)
                        return 1;
        return 0;
}

/* The forwarder's log: how many lines, and the last. */
static int log_lines;
static char last_line[512];

static void log_cb(kdelay_log_level_t level, const char *line, void *opaque)
{
        (void)level;
        (void)opaque;
        log_lines++;
        kd_strlcpy(last_line, line, sizeof(last_line));
}

/* A forwarder with what the lifecycle touches: conf (its log), metrics,
 * timers, the claim and pacing queues. */
static kd_fwd_t *fwd_new(void)
{
        kd_fwd_t *f = calloc(1, sizeof(*f));
        CU_ASSERT_PTR_NOT_NULL_FATAL(f);
        f->conf = kdelay_conf_new();
        CU_ASSERT_PTR_NOT_NULL_FATAL(f->conf);
        kdelay_conf_set_log_cb(f->conf, log_cb, KDELAY_LOG_DEBUG, NULL);
        kd_timers_init(&f->timers);
        CU_ASSERT_FATAL(kd_pipeline_state_new(f) == KDELAY_OK);
        CU_ASSERT_FATAL(kd_store_state_new(f) == 0);
        kd_timer_init(&f->pace->timer, NULL, NULL);
        kd_taskq_init(&f->pace->q, KD_WHERE_PACE_Q);
        kd_taskq_init(&f->claim->q, KD_WHERE_CLAIM_Q);
        kd_timer_init(&f->held->drain_end, NULL, f);
        return f;
}

static void fwd_free(kd_fwd_t *f)
{
        kd_timers_clear(&f->timers);
        kd_store_state_free(f);
        kd_pipeline_state_free(f);
        kdelay_conf_destroy(f->conf);
        free(f);
}

/* A task as kd_task_new leaves it (no record), with id (may be NULL). */
static kd_task_t *task_new(const char *id)
{
        kd_task_t *t = calloc(1, sizeof(*t));
        CU_ASSERT_PTR_NOT_NULL_FATAL(t);
        kd_timer_init(&t->timer, NULL, NULL);
        if (id)
                CU_ASSERT_EQUAL_FATAL(
                    kd_task_set_ids(t, id, strlen(id), "target", 6), 0);
        return t;
}

static void never_cb(kd_timer_t *tm, void *arg)
{
        (void)tm;
        (void)arg;
        CU_FAIL("a detached timer ran");
}

#ifndef NDEBUG
/* Debug and sanitizer builds: the illegal move from -> to, made in a
 * child, aborts it (after its log line and count). 1 when it did. */
static int aborts(kd_fwd_t *f, kd_task_t *t, int from, int to)
{
        fflush(NULL);
        pid_t pid = fork();
        if (pid < 0)
                return 0;
        if (pid == 0) {
                struct rlimit none = {0, 0};
                (void)setrlimit(RLIMIT_CORE, &none); /* no core file */
                if (!freopen("/dev/null", "w", stderr))
                        _exit(3);
                t->state = (kd_task_state_t)from;
                kd_task_set_state(f, t, (kd_task_state_t)to);
                _exit(0);
        }
        int status;
        if (waitpid(pid, &status, 0) != pid)
                return 0;
        return WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT;
}
#endif

/* Every pair: the table says what the list says. A legal move is made,
 * neither logged nor counted. An illegal one aborts a Debug or sanitizer
 * build; in Release it is made all the same, counted and logged once,
 * with both names and the id quoted. */
static void test_every_pair_against_the_table(void)
{
        kd_fwd_t *f = fwd_new();
        kd_task_t *t = task_new("id with space");
        size_t legal_seen = 0;
        CU_ASSERT_EQUAL(KD_TASK_STATES, 12);
        for (int from = 0; from < KD_TASK_STATES; from++) {
                for (int to = 0; to < KD_TASK_STATES; to++) {
                        int ok = expected(from, to);
                        legal_seen += (size_t)ok;
                        CU_ASSERT_EQUAL(kd_task_move_allowed(from, to), ok);
#ifndef NDEBUG
                        if (!ok) {
                                CU_ASSERT_TRUE(aborts(f, t, from, to));
                                continue;
                        }
#endif
                        int64_t bugs =
                            kd_metric_get(&f->metrics, KD_M_TASK_STATE_BUGS);
                        int lines = log_lines;
                        t->state = from;
                        kd_task_set_state(f, t, to);
                        CU_ASSERT_EQUAL(t->state, (kd_task_state_t)to);
                        CU_ASSERT_EQUAL(
                            kd_metric_get(&f->metrics, KD_M_TASK_STATE_BUGS),
                            bugs + !ok);
                        CU_ASSERT_EQUAL(log_lines, lines + !ok);
                        if (ok)
                                continue;
                        char want[256];
                        snprintf(want, sizeof(want),
                                 "event=bug what=task_state from=%s to=%s "
                                 "id=\"id with space\"",
                                 kd_task_state_name(from),
                                 kd_task_state_name(to));
                        CU_ASSERT_STRING_EQUAL(last_line, want);
                }
        }
        CU_ASSERT_EQUAL(legal_seen, KD_ARRAY_LEN(legal));
#ifdef NDEBUG
        CU_ASSERT_EQUAL(kd_metric_get(&f->metrics, KD_M_TASK_STATE_BUGS),
                        KD_TASK_STATES * KD_TASK_STATES -
                            (int64_t)KD_ARRAY_LEN(legal));
#endif
        /* Nothing leaves the table's range; a task without an id (a
         * malformed record) is logged as "-". */
        CU_ASSERT_FALSE(kd_task_move_allowed(KD_TASK_STATES, KD_TASK_NEW));
        CU_ASSERT_FALSE(kd_task_move_allowed(KD_TASK_NEW, KD_TASK_STATES));
        CU_ASSERT_STRING_EQUAL(kd_task_state_name(KD_TASK_STATES), "?");
        CU_ASSERT_STRING_EQUAL(kd_task_state_name(KD_TASK_PACED), "paced");
#ifdef NDEBUG
        kd_task_t *anon = task_new(NULL);
        anon->state = KD_TASK_FIRING;
        kd_task_set_state(f, anon, KD_TASK_HELD);
        CU_ASSERT_STRING_EQUAL(last_line, "event=bug what=task_state "
                                          "from=firing to=held id=-");
        kd_task_free(anon);
#endif
        kd_task_free(t);
        fwd_free(f);
}

/* From each place detach takes the task out, and only it; a task in
 * flight stays. */
static void test_detach_from_every_place(void)
{
        kd_fwd_t *f = fwd_new();
        kd_part_t p;
        memset(&p, 0, sizeof(p));
        kd_taskq_init(&p.backlog, KD_WHERE_BACKLOG);
        kd_task_t *t = task_new("t"), *u = task_new("u");
        t->part = u->part = &p;

        CU_ASSERT_EQUAL(kd_task_detach(f, t), 0); /* nowhere */
        CU_ASSERT_EQUAL(t->where, KD_WHERE_NONE);

        kd_taskq_push(&p.backlog, u);
        kd_taskq_push(&p.backlog, t);
        /* The queue records its place in the task. */
        CU_ASSERT_EQUAL(t->where, KD_WHERE_BACKLOG);
        CU_ASSERT_EQUAL(u->where, KD_WHERE_BACKLOG);
        CU_ASSERT_EQUAL(kd_task_detach(f, t), 0);
        CU_ASSERT_EQUAL(t->where, KD_WHERE_NONE);
        CU_ASSERT_EQUAL(p.backlog.len, 1);
        CU_ASSERT_PTR_EQUAL(p.backlog.head, u);
        CU_ASSERT_EQUAL(kd_task_detach(f, u), 0);
        CU_ASSERT_EQUAL(p.backlog.len, 0);

        CU_ASSERT_EQUAL(
            kd_task_arm(f, t, KD_CLOCK_MONO, kd_mono_ms() + 1000, never_cb), 0);
        CU_ASSERT_EQUAL(t->where, KD_WHERE_TIMER);
        CU_ASSERT_TRUE(kd_timer_armed(&t->timer));
        CU_ASSERT_EQUAL(kd_task_detach(f, t), 0);
        CU_ASSERT_FALSE(kd_timer_armed(&t->timer));
        CU_ASSERT_EQUAL(t->where, KD_WHERE_NONE);

        kd_taskq_push(&f->claim->q, t);
        kd_taskq_push(&f->claim->q, u);
        CU_ASSERT_EQUAL(t->where, KD_WHERE_CLAIM_Q);
        CU_ASSERT_EQUAL(u->where, KD_WHERE_CLAIM_Q);
        CU_ASSERT_EQUAL(kd_task_detach(f, t), 0);
        CU_ASSERT_EQUAL(f->claim->q.len, 1);
        CU_ASSERT_PTR_EQUAL(f->claim->q.head, u);
        CU_ASSERT_EQUAL(kd_task_detach(f, u), 0);
        CU_ASSERT_EQUAL(f->claim->q.len, 0);

        kd_store_req_t *r = kd_store_req_new(f, KD_FW_CLAIM, 1);
        CU_ASSERT_PTR_NOT_NULL_FATAL(r);
        CU_ASSERT_EQUAL_FATAL(kd_store_req_item(r, 0, t, NULL), 0);
        CU_ASSERT_PTR_EQUAL(t->req, r);
        kd_task_to_claim_req(t);
        CU_ASSERT_EQUAL(t->where, KD_WHERE_CLAIM_REQ);
        CU_ASSERT_EQUAL(kd_task_detach(f, t), 0);
        CU_ASSERT_PTR_NULL(t->req);
        CU_ASSERT_PTR_NULL(r->tasks[0]); /* its answer is ignored */
        kd_store_req_free(r);

        /* The pacing timer goes with the queue's last task. */
        CU_ASSERT_EQUAL(kd_timer_arm(&f->timers, &f->pace->timer, KD_CLOCK_MONO,
                                     kd_mono_ms() + 1000, never_cb, f),
                        0);
        kd_taskq_push(&f->pace->q, t);
        kd_taskq_push(&f->pace->q, u);
        CU_ASSERT_EQUAL(t->where, KD_WHERE_PACE_Q);
        CU_ASSERT_EQUAL(kd_task_detach(f, u), 0);
        CU_ASSERT_EQUAL(f->pace->q.len, 1);
        CU_ASSERT_TRUE(kd_timer_armed(&f->pace->timer));
        CU_ASSERT_EQUAL(kd_task_detach(f, t), 0);
        CU_ASSERT_EQUAL(f->pace->q.len, 0);
        CU_ASSERT_FALSE(kd_timer_armed(&f->pace->timer));

        kd_task_to_flight(t);
        CU_ASSERT_EQUAL(kd_task_detach(f, t), -1);
        CU_ASSERT_EQUAL(t->where, KD_WHERE_FLIGHT);
        kd_task_reported(t);
        CU_ASSERT_EQUAL(t->where, KD_WHERE_NONE);

        kd_task_free(t);
        kd_task_free(u);
        fwd_free(f);
}

/* kd_settle_release lets any task go: one in flight only leaves its
 * partition (an orphan, released again by its report), any other is
 * detached and freed (ASan and LSan see the rest). */
static void test_release_orphans_what_is_in_flight(void)
{
        kd_fwd_t *f = fwd_new();
        kd_part_t p;
        memset(&p, 0, sizeof(p));
        kd_taskq_init(&p.backlog, KD_WHERE_BACKLOG);
        kd_task_t *flying = task_new("flying"), *waiting = task_new("waiting"),
                  *queued = task_new("queued");
        kd_task_t *all[] = {queued, waiting, flying};
        for (size_t i = 0; i < KD_ARRAY_LEN(all); i++) {
                all[i]->part = &p;
                all[i]->next = p.tasks;
                if (p.tasks)
                        p.tasks->prev = all[i];
                p.tasks = all[i];
        }
        kd_task_to_flight(flying);
        CU_ASSERT_EQUAL(kd_task_arm(f, waiting, KD_CLOCK_MONO,
                                    kd_mono_ms() + 1000, never_cb),
                        0);
        kd_taskq_push(&p.backlog, queued);

        kd_settle_release(f, flying);
        CU_ASSERT_PTR_NULL(flying->part);
        CU_ASSERT_EQUAL(flying->where, KD_WHERE_FLIGHT);
        CU_ASSERT_PTR_EQUAL(p.tasks, waiting);
        CU_ASSERT_PTR_NULL(waiting->prev);

        kd_settle_release(f, waiting);
        CU_ASSERT_PTR_EQUAL(p.tasks, queued);
        CU_ASSERT_EQUAL(kd_timers_wait_ms(&f->timers, 5000), 5000);

        kd_settle_release(f, queued);
        CU_ASSERT_PTR_NULL(p.tasks);
        CU_ASSERT_EQUAL(p.backlog.len, 0);

        kd_task_reported(flying);
        kd_settle_release(f, flying);
        fwd_free(f);
}

/* Leases are renewed for the tasks that hold a claim of their own. */
static void test_claimed_states(void)
{
        kd_task_t t;
        memset(&t, 0, sizeof(t));
        for (int s = 0; s < KD_TASK_STATES; s++) {
                t.state = s;
                t.retry_as = KD_TASK_FIRING;
                int want = s == KD_TASK_CLAIMED || s == KD_TASK_PACED ||
                           s == KD_TASK_FIRING || s == KD_TASK_RETRY;
                CU_ASSERT_EQUAL(kd_task_claimed(&t), want);
                t.retry_as = KD_TASK_HOPPING;
                CU_ASSERT_EQUAL(kd_task_claimed(&t),
                                want && s != KD_TASK_RETRY);
        }
}

/* A request back from the store is kept and used again (kd_store_req_done):
 * its arrays come back zeroed, its items' strings stay right when their
 * block grows under them, and a claim's request never serves marks. */
static void test_store_requests_reused(void)
{
        kd_fwd_t *f = fwd_new();
        enum { N = 12 };
        kd_task_t *t[N];
        char id[200];
        kd_store_req_t *r = kd_store_req_new(f, KD_FW_CLAIM, N);
        CU_ASSERT_PTR_NOT_NULL_FATAL(r);
        for (int i = 0; i < N; i++) {
                /* Long ids: the string block grows several times. */
                snprintf(id, sizeof(id), "%0*d", 150, i);
                t[i] = task_new(id);
                snprintf(t[i]->token, sizeof(t[i]->token), "tok-%d", i);
                CU_ASSERT_EQUAL_FATAL(kd_store_req_item(r, (size_t)i, t[i],
                                                        i % 2 ? "owner" : NULL),
                                      0);
        }
        for (int i = 0; i < N; i++) {
                snprintf(id, sizeof(id), "%0*d", 150, i);
                CU_ASSERT_STRING_EQUAL(r->fw.items[i].id, id);
                CU_ASSERT_EQUAL(r->fw.items[i].id_len, 150);
                snprintf(id, sizeof(id), "tok-%d", i);
                CU_ASSERT_STRING_EQUAL(r->fw.items[i].token, id);
                CU_ASSERT_STRING_EQUAL(r->fw.items[i].row_owner,
                                       i % 2 ? "owner" : "");
                CU_ASSERT_PTR_EQUAL(t[i]->req, r);
        }
        r->fw.items[3].fate = KDELAY_FATE_FIRED;
        r->fw.err = KDELAY_ERR_MYSQL;
        kd_store_req_done(f, r);
        for (int i = 0; i < N; i++)
                CU_ASSERT_PTR_NULL(t[i]->req); /* unlinked */
        CU_ASSERT_EQUAL(f->store->spares[0], 1);

        /* Marks do not take a claim's arrays. */
        kd_store_req_t *m = kd_store_req_new(f, KD_FW_MARK_FIRED, 2);
        CU_ASSERT_PTR_NOT_NULL_FATAL(m);
        CU_ASSERT_PTR_NOT_EQUAL(m, r);
        CU_ASSERT_PTR_NOT_NULL_FATAL(m->fw.ids);
        m->fw.ids[0] = strdup("a"); /* owned by the request */
        kd_store_req_done(f, m);
        CU_ASSERT_EQUAL(f->store->spares[0], 1); /* each kind its own */
        CU_ASSERT_EQUAL(f->store->spares[1], 1);

        /* A smaller claim takes the kept one, all zero again. */
        kd_store_req_t *r2 = kd_store_req_new(f, KD_FW_TAKEOVER, 2);
        CU_ASSERT_PTR_EQUAL(r2, r);
        CU_ASSERT_EQUAL(r2->fw.op, KD_FW_TAKEOVER);
        CU_ASSERT_EQUAL(r2->fw.n, 2);
        CU_ASSERT_EQUAL(r2->fw.err, 0);
        CU_ASSERT_EQUAL(r2->strs_len, 0);
        for (int i = 0; i < 2; i++) {
                CU_ASSERT_PTR_NULL(r2->fw.items[i].id);
                CU_ASSERT_EQUAL(r2->fw.items[i].fate, 0);
                CU_ASSERT_PTR_NULL(r2->tasks[i]);
        }
        /* A larger one than any kept is new. */
        kd_store_req_t *r3 = kd_store_req_new(f, KD_FW_CLAIM, N + 1);
        CU_ASSERT_PTR_NOT_NULL_FATAL(r3);
        CU_ASSERT_PTR_NOT_EQUAL(r3, r);
        kd_store_req_free(r3);
        CU_ASSERT_EQUAL_FATAL(kd_store_req_item(r2, 0, t[0], NULL), 0);
        CU_ASSERT_STRING_EQUAL(r2->fw.items[0].token, "tok-0");
        kd_store_req_done(f, r2);

        /* More back than are kept: the largest stay, the rest are freed. */
        kd_store_req_t *many[KD_STORE_SPARES + 2];
        for (size_t i = 0; i < KD_STORE_SPARES + 2; i++)
                CU_ASSERT_PTR_NOT_NULL_FATAL(
                    many[i] = kd_store_req_new(f, KD_FW_MARK_DEAD, 1));
        CU_ASSERT_PTR_EQUAL(many[0], m); /* the kept one, room for 2 */
        kd_store_req_t *big = kd_store_req_new(f, KD_FW_MARK_FIRED, 500);
        CU_ASSERT_PTR_NOT_NULL_FATAL(big);
        for (size_t i = 0; i < KD_STORE_SPARES + 2; i++)
                kd_store_req_done(f, many[i]);
        kd_store_req_done(f, big);
        CU_ASSERT_EQUAL(f->store->spares[1], KD_STORE_SPARES);
        int kept_big = 0, kept_m = 0;
        for (size_t i = 0; i < KD_STORE_SPARES; i++) {
                kept_big += f->store->spare[1][i] == big;
                kept_m += f->store->spare[1][i] == m;
        }
        CU_ASSERT_EQUAL(kept_big, 1);
        CU_ASSERT_EQUAL(kept_m, 1);
        /* A small request takes the smallest that fits. */
        kd_store_req_t *s1 = kd_store_req_new(f, KD_FW_MARK_FIRED, 1);
        CU_ASSERT_PTR_NOT_NULL_FATAL(s1);
        CU_ASSERT_EQUAL(s1->cap, 1);
        kd_store_req_t *s2 = kd_store_req_new(f, KD_FW_MARK_FIRED, 2);
        CU_ASSERT_PTR_EQUAL(s2, m);
        kd_store_req_done(f, s1);
        kd_store_req_done(f, s2);
        kd_store_stop(f); /* frees the kept ones */
        CU_ASSERT_EQUAL(f->store->spares[0], 0);
        CU_ASSERT_EQUAL(f->store->spares[1], 0);
        for (int i = 0; i < N; i++)
                kd_task_free(t[i]);
        fwd_free(f);
}

/* The intake asked to look for room (kd_intake_room arms its room timer
 * while a partition waits for room): counted in rooms, the timer
 * disarmed. */
static int rooms;
static void count_room(kd_fwd_t *f)
{
        if (kd_timer_armed(&f->intake->room))
                rooms++;
        kd_timer_disarm(&f->timers, &f->intake->room);
}

/* A partition paused for room resumes at the low-water mark: half the
 * held set's limits (count or bytes), half the out share's. */
static void test_held_low_water(void)
{
        kd_fwd_t *f = fwd_new();
        f->conf->fwd_max_held = 16;
        f->conf->fwd_max_held_bytes = 16000;
        kd_task_t t = {0};
        t.bytes = 100;
        f->held->cnt = 15;
        CU_ASSERT_FALSE(kd_held_full(f, &t, 0)); /* room for one */
        CU_ASSERT_TRUE(kd_held_full(f, &t, 1));
        f->held->cnt = 16;
        CU_ASSERT_TRUE(kd_held_full(f, &t, 0));
        f->held->cnt = 9;
        CU_ASSERT_TRUE(kd_held_full(f, &t, 1));
        f->held->cnt = 8; /* half */
        CU_ASSERT_FALSE(kd_held_full(f, &t, 1));
        f->held->out_cnt = 1; /* counts with the held */
        CU_ASSERT_TRUE(kd_held_full(f, &t, 1));
        f->held->out_cnt = 0;
        f->held->bytes = 8001; /* over half the bytes */
        CU_ASSERT_TRUE(kd_held_full(f, &t, 1));
        CU_ASSERT_FALSE(kd_held_full(f, &t, 0));
        f->held->bytes = 0;
        /* A task larger than half the bytes still goes into an empty set. */
        f->held->cnt = 0;
        t.bytes = 12000;
        CU_ASSERT_FALSE(kd_held_full(f, &t, 1));
        t.bytes = 100;

        /* The out share: a quarter (4 tasks, 4000 bytes), low at half. */
        f->held->out_cnt = 3;
        f->held->out_bytes = 300;
        CU_ASSERT_FALSE(kd_held_out_full(f, &t, 0));
        CU_ASSERT_TRUE(kd_held_out_full(f, &t, 1));
        f->held->out_cnt = 2;
        f->held->out_bytes = 200;
        CU_ASSERT_FALSE(kd_held_out_full(f, &t, 1));
        f->held->out_bytes = 2001;
        CU_ASSERT_TRUE(kd_held_out_full(f, &t, 1));
        f->held->out_cnt = 0;
        f->held->out_bytes = 0;
        CU_ASSERT_FALSE(kd_held_out_full(f, &t, 1)); /* empty: always fits */

        /* A drain: on when started above half, ended by its timer after
         * KD_HELD_DRAIN_MS at most, or as soon as a removal brings the set
         * to half. */
        f->intake->full = 1; /* a partition waits for room */
        kd_timer_init(&f->intake->room, NULL, f);
        rooms = 0;
        f->held->cnt = 4;
        CU_ASSERT_EQUAL(kd_held_drain(f, 1000), 0); /* at half: none */
        CU_ASSERT_FALSE(kd_held_low(f));
        CU_ASSERT_FALSE(kd_timer_armed(&f->held->drain_end));
        kd_task_t u[5];
        memset(u, 0, sizeof(u));
        f->held->cnt = 0;
        for (int i = 0; i < 5; i++) {
                u[i].bytes = 10;
                kd_held_add(f, &u[i]);
        }
        f->held->cnt += 5; /* 10 held */
        CU_ASSERT_EQUAL(kd_held_drain(f, 1000), 0);
        CU_ASSERT_TRUE(kd_held_low(f));
        CU_ASSERT_EQUAL(kd_timer_due(&f->held->drain_end),
                        1000 + KD_HELD_DRAIN_MS);
        CU_ASSERT_EQUAL(kd_held_drain(f, 1500), 0); /* on already */
        CU_ASSERT_EQUAL(f->held->low_until_mono, 1000 + KD_HELD_DRAIN_MS);
        kd_held_remove(f, &u[0]); /* 9: still above half (8) */
        count_room(f);
        CU_ASSERT_TRUE(kd_held_low(f));
        kd_held_remove(f, &u[1]); /* 8: half */
        count_room(f);
        CU_ASSERT_FALSE(kd_held_low(f));
        CU_ASSERT_EQUAL(f->held->low_until_mono, 0);
        CU_ASSERT_FALSE(kd_timer_armed(&f->held->drain_end));
        CU_ASSERT_EQUAL(rooms, 2);
        /* Its limit: the timer (due long ago on the real monotonic clock)
         * ends it with the set still above half, and asks for room. */
        f->held->cnt += 4; /* 12 held */
        CU_ASSERT_EQUAL(kd_held_drain(f, 2000), 0);
        CU_ASSERT_TRUE(kd_held_low(f));
        CU_ASSERT_EQUAL(kd_timers_run(&f->timers, 1), 1);
        count_room(f);
        CU_ASSERT_FALSE(kd_held_low(f));
        CU_ASSERT_EQUAL(rooms, 3);
        f->held->cnt -= 4;
        for (int i = 2; i < 5; i++) {
                kd_held_remove(f, &u[i]);
                count_room(f);
        }
        kd_held_remove(f, &u[4]); /* not held any more: nothing */
        count_room(f);
        CU_ASSERT_EQUAL(rooms, 6);
        fwd_free(f);
}

int main(void)
{
        static const kd_test_case_t cases[] = {
            KD_TEST(test_every_pair_against_the_table),
            KD_TEST(test_detach_from_every_place),
            KD_TEST(test_release_orphans_what_is_in_flight),
            KD_TEST(test_claimed_states),
            KD_TEST(test_store_requests_reused),
            KD_TEST(test_held_low_water),
            KD_TEST_END};
        return kd_test_run("task_state", cases, NULL, NULL);
}
