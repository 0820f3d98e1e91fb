/* SPDX-License-Identifier: Apache-2.0 */
/* A limited target's backlog beside other targets, in virtual time (issue
 * 43, point 1): a forwarder made but never run, on a manual clock stepped
 * a millisecond at a time, single-threaded, at_least_once, a small
 * forwarder.max_held and the default hold horizon (30 s) and ladder. The
 * test is the intake and Kafka: PARTS partitions per tier, in append
 * order (LogAppendTime), each head handed to the schedule stage as
 * intake.c does (kd_sched_decide, kd_sched_take; a partition without room
 * waits, and starts a drain when the held set is full); a hop — a task
 * sent back by its rate limit, or one beyond the hold horizon — is
 * delivered HOP_MIN_MS to HOP_MAX_MS after it is produced (it counts as
 * out until then), then appended to the tier it went to, with its
 * kdelay-not-before, and its produce is purged (its report frees it).
 * The claim stage is stood in for (a claim is won the moment
 * it is asked for); a fire is the task reaching kd_fire_now (RETRY: this
 * forwarder never measured the broker's clock).
 *
 * A backlog of tasks to a limited target comes due at one instant, the
 * tasks of another target, scheduled after it (behind it in each tier),
 * come due at that same instant and one by one after it: each of them
 * fires within OTHER_LATE_MS of its fire-at, none early; the run goes
 * on until every task fired: each limited task fires exactly once, none
 * early, no more than the rate and burst in any second, and the shares'
 * counts are back to 0 at the end;
 * the held set never passes max_held, the limited tasks never more than
 * half of it. Before the fix the tasks sent back were read again and
 * held from the hold horizon before their turn, which refilled the held
 * set (all of it, in both trials), and the partitions waited for room:
 * at 20/s the others were up to 2.9 s late. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/kd_part.h"
#include "core/kd_timer.h"
#include "fwd_offline.h"
#include "kd_test.h"
#include "pipeline/kd_held.h"
#include "pipeline/kd_lifecycle.h"
#include "pipeline/kd_pace.h"
#include "pipeline/kd_pipeline_state.h"
#include "pipeline/kd_sched.h"
#include "producer/kd_producer.h"
#include "top/kd_fwd.h"

#define MONO0         1000000
#define WALL0         1700000000000
#define DUE_IN_MS     9000 /* the backlog's instant, after the start */
#define OTHER_LATE_MS 100
#define MAX_RECS      600000
#define MAX_LIVE      65536
#define PARTS         2   /* partitions of each tier: a key's is id % 2 */
#define HOP_MIN_MS    20  /* a hop's produce is delivered (lands in its tier */
#define HOP_MAX_MS    100 /* and leaves the out share) after 20-100 ms */
#define FETCH_MS                                                               \
        100 /* a resumed partition's next records come then                    \
               (fetch.wait.max.ms: librdkafka dropped what                     \
               it had fetched ahead when it was paused) */

/* A record in a tier partition. */
typedef struct rec {
        char id[16];
        int key; /* its partition in each tier */
        int limited;
        int orig; /* the record first scheduled (its task) */
        int64_t fire_at, not_before, append;
} rec_t;

/* A tier partition: records in append order, the head read into a task
 * (head_task) until the schedule stage takes it. */
typedef struct simpart {
        kd_part_t part; /* tier_ms only: what the schedule stage reads */
        int *recs;      /* indexes into sim.recs */
        size_t len, cap, next;
        kd_task_t *head_task;
        int full;         /* paused: no room (it starts a drain) */
        int64_t wake_at;  /* paused: head not due until then; 0 = flowing */
        int paused;       /* full or waiting: records past the head fetched
                             again on resume */
        int64_t fetch_at; /* resumed: the records past the head from then */
} simpart_t;

typedef struct trial {
        const char *name;
        const char *rate; /* forwarder.target_rate_limits value */
        const char *max_held;
        double per_s, burst; /* the limit, for the check */
        int n_limited, n_at, n_after;
        int64_t after_from_ms, after_span_ms;
        size_t limited_bytes;  /* 0: 100 */
        int max_sends_back;    /* per task, at most (0: not checked) */
        int64_t other_late_ms; /* 0: OTHER_LATE_MS */
        int64_t max_took_ms;   /* the backlog drained within (0: not
                                  checked) */
} trial_t;

static struct sim {
        kd_fwd_t *f;
        rec_t *recs;
        size_t nrecs;
        simpart_t *parts;
        size_t nparts;
        kd_task_t *live[MAX_LIVE]; /* held by the forwarder */
        int live_rec[MAX_LIVE];
        size_t nlive;
        int64_t *fired;      /* per record: fire time (-1 = not yet) */
        int64_t *limited_at; /* fire times of limited tasks, in order */
        size_t nlimited_at;
        size_t held_most, limited_most;
        int *fires;            /* per first record: times fired */
        int *sent_back;        /* per first record: times sent back */
        int pending[MAX_LIVE]; /* hops produced, not yet delivered */
        size_t pending_tier[MAX_LIVE], npending;
        int64_t deliver_at; /* of the pending hops (0: none) */
        size_t limited_bytes;
        size_t hops, tasks_fired;
} sim;

static int64_t now_wall(void)
{
        return kd_fwd_now(sim.f);
}

static int rec_new(const char *id, int key, int limited, int64_t fire_at,
                   int64_t not_before, int64_t append)
{
        CU_ASSERT_FATAL(sim.nrecs < MAX_RECS);
        rec_t *r = &sim.recs[sim.nrecs];
        snprintf(r->id, sizeof(r->id), "%s", id);
        r->key = key;
        r->limited = limited;
        r->orig = (int)sim.nrecs;
        r->fire_at = fire_at;
        r->not_before = not_before;
        r->append = append;
        sim.fired[sim.nrecs] = -1;
        return (int)sim.nrecs++;
}

/* Appends record i to its key's partition of tier. */
static void append_to_tier(int i, size_t tier)
{
        simpart_t *sp = &sim.parts[tier * PARTS + (size_t)sim.recs[i].key];
        if (sp->len == sp->cap) {
                sp->cap = sp->cap ? 2 * sp->cap : 1024;
                sp->recs = realloc(sp->recs, sp->cap * sizeof(int));
                CU_ASSERT_PTR_NOT_NULL_FATAL(sp->recs);
        }
        sp->recs[sp->len++] = i;
}

static void schedule(const char *id, int key, int limited, int64_t fire_at)
{
        int64_t now = now_wall();
        int i = rec_new(id, key, limited, fire_at, 0, now);
        append_to_tier(i, kd_tiers_choose(&sim.f->conf->tiers, fire_at - now));
}

/* The task the intake would make of record i (kd_test_task_of, the tier
 * record's append time and kdelay-not-before set). */
static kd_task_t *read_rec(int i)
{
        const rec_t *r = &sim.recs[i];
        kd_task_t *t = kd_test_task_of(
            sim.f, r->id, r->limited ? "slow" : "fast", r->fire_at);
        CU_ASSERT_PTR_NOT_NULL_FATAL(t);
        t->rec.append_ms = r->append;
        t->rec.not_before_ms = r->not_before;
        t->rec.offset = i; /* which record it is */
        if (r->limited && sim.limited_bytes)
                t->bytes = sim.limited_bytes;
        return t;
}

/* A produce of t (a hop) went out: the produces pending are delivered
 * together HOP_MIN_MS to HOP_MAX_MS after the first of them (t counts in
 * the out share until then), each landing in its tier then. */
static void hopped(kd_task_t *t)
{
        const rec_t *r = &sim.recs[t->rec.offset];
        int orig = r->orig;
        int i = rec_new(r->id, r->key, r->limited, r->fire_at,
                        t->rec.not_before_ms, 0);
        sim.recs[i].orig = orig;
        if (t->rec.not_before_ms != r->not_before) /* a new turn */
                sim.sent_back[orig]++;
        CU_ASSERT_FATAL(sim.npending < MAX_LIVE);
        sim.pending[sim.npending] = i;
        sim.pending_tier[sim.npending++] = t->hop_tier;
        if (!sim.deliver_at)
                sim.deliver_at =
                    now_wall() + HOP_MIN_MS +
                    (int64_t)(rand() % (HOP_MAX_MS - HOP_MIN_MS + 1));
        sim.hops++;
}

static void live_add(kd_task_t *t)
{
        CU_ASSERT_FATAL(sim.nlive < MAX_LIVE);
        sim.live[sim.nlive] = t;
        sim.live_rec[sim.nlive++] = (int)t->rec.offset;
}

/* Hands the heads of sp to the schedule stage until one must wait, as
 * intake.c's process() does. */
static void process(simpart_t *sp)
{
        int64_t now = now_wall();
        if (sp->wake_at && now < sp->wake_at)
                return;
        sp->wake_at = 0;
        int low = sp->full;
        while (sp->head_task || sp->next < sp->len) {
                if (!sp->head_task && now < sp->fetch_at)
                        return; /* fetched again after the resume */
                if (!sp->head_task)
                        sp->head_task = read_rec(sp->recs[sp->next++]);
                kd_task_t *t = sp->head_task;
                int64_t wake = 0;
                kd_sched_t what =
                    kd_sched_decide(sim.f, &sp->part, t, now, low, &wake);
                if (what == KD_SCHED_WAIT) {
                        sp->wake_at = wake;
                        sp->paused = 1;
                        return;
                }
                if (what == KD_SCHED_FULL || what == KD_SCHED_SPAN) {
                        sp->full = 1;
                        sp->paused = 1;
                        if (what == KD_SCHED_FULL)
                                CU_ASSERT_EQUAL(
                                    kd_held_drain(sim.f, kd_fwd_mono_ms(sim.f)),
                                    0);
                        return;
                }
                sp->head_task = NULL;
                sp->full = 0;
                low = 0;
                if (sp->paused) { /* resumed */
                        sp->paused = 0;
                        sp->fetch_at = now + FETCH_MS;
                }
                kd_sched_take(sim.f, t, what);
                if (t->state == KD_TASK_HOPPING)
                        hopped(t);
                else
                        live_add(t);
        }
}

/* The tasks the forwarder holds: fired (reached kd_fire_now) are noted
 * and let go, sent back by their rate limit (hopping) land in a tier. */
static void look_at_live(void)
{
        for (size_t k = 0; k < sim.nlive;) {
                kd_task_t *t = sim.live[k];
                int i = sim.live_rec[k];
                if (t->state == KD_TASK_RETRY) {
                        sim.fired[i] = now_wall();
                        sim.fired[sim.recs[i].orig] = now_wall();
                        if (sim.fires[sim.recs[i].orig]++ == 0)
                                sim.tasks_fired++;
                        if (sim.recs[i].limited)
                                sim.limited_at[sim.nlimited_at++] = now_wall();
                        kd_test_task_drop(sim.f, t);
                } else if (t->state == KD_TASK_HOPPING) {
                        hopped(t);
                } else {
                        k++;
                        continue;
                }
                sim.live[k] = sim.live[--sim.nlive];
                sim.live_rec[k] = sim.live_rec[sim.nlive];
        }
}

static void let_go_of_hops(void)
{
        if (!sim.deliver_at || now_wall() < sim.deliver_at)
                return;
        sim.deliver_at = 0;
        for (size_t k = 0; k < sim.npending; k++) {
                sim.recs[sim.pending[k]].append = now_wall();
                append_to_tier(sim.pending[k], sim.pending_tier[k]);
        }
        sim.npending = 0;
        CU_ASSERT_EQUAL(
            rd_kafka_purge(kd_producer_main(sim.f),
                           RD_KAFKA_PURGE_F_QUEUE | RD_KAFKA_PURGE_F_INFLIGHT),
            RD_KAFKA_RESP_ERR_NO_ERROR);
        kd_producer_serve(sim.f);
}

static void step(void)
{
        CU_ASSERT_EQUAL_FATAL(kd_clocksrc_advance(&sim.f->timers.clock, 1), 0);
        kd_timers_run(&sim.f->timers, 100000);
        look_at_live();
        /* Each partition first in turn. */
        size_t first = (size_t)kd_fwd_mono_ms(sim.f) % sim.nparts;
        for (size_t p = 0; p < sim.nparts; p++)
                process(&sim.parts[(first + p) % sim.nparts]);
        let_go_of_hops();
        if (sim.f->held->cnt > sim.held_most)
                sim.held_most = sim.f->held->cnt;
        size_t limited = 0;
        for (size_t k = 0; k < sim.nlive; k++)
                limited +=
                    sim.live[k]->held && sim.recs[sim.live_rec[k]].limited;
        if (limited > sim.limited_most)
                sim.limited_most = limited;
}

/* The claim stage, stood in for: the claim is won at once. */
static void claim_won(kd_fwd_t *f, kd_task_t *t)
{
        kd_task_set_state(f, t, KD_TASK_CLAIMING);
        kd_pace_claimed(f, t);
}

static int by_time(const void *a, const void *b)
{
        int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
        return (x > y) - (x < y);
}

static size_t busiest_second(int64_t *ts, size_t n)
{
        size_t worst = 0, j = 0;
        qsort(ts, n, sizeof(*ts), by_time);
        for (size_t i = 0; i < n; i++) {
                while (ts[j] <= ts[i] - 1000)
                        j++;
                if (i - j + 1 > worst)
                        worst = i - j + 1;
        }
        return worst;
}

static void run(const trial_t *tr)
{
        const char *const settings[] = {"forwarder.target_rate_limits",
                                        tr->rate, "forwarder.max_held",
                                        tr->max_held, NULL};
        memset(&sim, 0, sizeof(sim));
        CU_ASSERT_EQUAL_FATAL(
            kd_test_fwd_vt(&sim.f, "backlog", MONO0, WALL0, settings), 0);
        sim.f->hooks->claim = claim_won;
        sim.recs = calloc(MAX_RECS, sizeof(*sim.recs));
        sim.fired = calloc(MAX_RECS, sizeof(*sim.fired));
        sim.limited_at = calloc(MAX_RECS, sizeof(*sim.limited_at));
        sim.fires = calloc(MAX_RECS, sizeof(*sim.fires));
        sim.sent_back = calloc(MAX_RECS, sizeof(*sim.sent_back));
        sim.limited_bytes = tr->limited_bytes;
        srand(43);
        sim.nparts = sim.f->conf->tiers.cnt * PARTS;
        sim.parts = calloc(sim.nparts, sizeof(*sim.parts));
        CU_ASSERT_FATAL(sim.recs && sim.fired && sim.limited_at && sim.parts &&
                        sim.fires && sim.sent_back);
        for (size_t p = 0; p < sim.nparts; p++)
                sim.parts[p].part.tier_ms =
                    sim.f->conf->tiers.v[p / PARTS].delay_ms;

        /* The backlog first, then the others: behind it in each tier. */
        int64_t t_due = now_wall() + DUE_IN_MS;
        char id[16];
        for (int i = 0; i < tr->n_limited; i++) {
                snprintf(id, sizeof(id), "l%d", i);
                schedule(id, i % PARTS, 1, t_due);
        }
        size_t first_other = sim.nrecs;
        int n_other = tr->n_at + tr->n_after;
        for (int i = 0; i < n_other; i++) {
                int64_t due =
                    i < tr->n_at
                        ? t_due
                        : t_due + tr->after_from_ms +
                              (i - tr->n_at) * tr->after_span_ms / tr->n_after;
                snprintf(id, sizeof(id), "o%d", i);
                schedule(id, i % PARTS, 0, due);
        }
        /* Until every task fired (the backlog drained), or far past the
         * time its rate takes. */
        int64_t end = t_due + tr->after_from_ms + tr->after_span_ms + 5000;
        int64_t drained = t_due + (int64_t)(tr->n_limited * 1000.0 / tr->per_s);
        if (end < drained)
                end = drained;
        end += 60000 + (end - t_due) / 2;
        size_t n_all = (size_t)(tr->n_limited + tr->n_at + tr->n_after);
        while (now_wall() < end && sim.tasks_fired < n_all)
                step();
        /* A little more: a second fire of a task would show. */
        for (int k = 0; k < 2000; k++)
                step();
        int64_t took = now_wall() - t_due;

        /* The others: all fired, none early, each within the bound. */
        int64_t worst = -1, worst_at = -1;
        int missing = 0, early = 0;
        for (size_t i = first_other; i < first_other + (size_t)n_other; i++) {
                int64_t late = sim.fired[i] - sim.recs[i].fire_at;
                if (sim.fired[i] < 0) {
                        missing++;
                        continue;
                }
                early += late < 0;
                if (late > worst)
                        worst = late;
                if (i < first_other + (size_t)tr->n_at && late > worst_at)
                        worst_at = late;
        }
        int limited_early = 0;
        for (size_t i = 0; i < sim.nlimited_at; i++)
                limited_early += sim.limited_at[i] < t_due;
        size_t busiest = busiest_second(sim.limited_at, sim.nlimited_at);
        size_t max_held = (size_t)sim.f->conf->fwd_max_held;
        int64_t deferred = kd_metric_get(&sim.f->metrics, KD_M_RATE_DEFERRED);
        printf("\n  %s: %d limited due at once at %s, %d others due at that "
               "instant and %d over %lld s from +%lld ms, max_held=%s: others "
               "late at most %lld ms (those due at the instant %lld ms), "
               "missing %d, early %d; limited fired %zu, busiest second %zu, "
               "early %d; sent back %lld, hops %zu; held at most %zu, limited "
               "at most %zu\n",
               tr->name, tr->n_limited, tr->rate, tr->n_at, tr->n_after,
               (long long)tr->after_span_ms / 1000,
               (long long)tr->after_from_ms, tr->max_held, (long long)worst,
               (long long)worst_at, missing, early, sim.nlimited_at, busiest,
               limited_early, (long long)deferred, sim.hops, sim.held_most,
               sim.limited_most);
        /* Every limited task fired, and once. */
        int limited_missing = 0, limited_twice = 0, most_sent = 0;
        for (size_t i = 0; i < (size_t)tr->n_limited; i++) {
                limited_missing += sim.fires[i] == 0;
                limited_twice += sim.fires[i] > 1;
                if (sim.sent_back[i] > most_sent)
                        most_sent = sim.sent_back[i];
        }
        printf("  took %lld ms after the instant (the rate: %lld ms); limited "
               "missing %d, fired twice %d, sent back at most %d times\n",
               (long long)took, (long long)(tr->n_limited * 1000.0 / tr->per_s),
               limited_missing, limited_twice, most_sent);
        CU_ASSERT_EQUAL(missing, 0);
        CU_ASSERT_EQUAL(early, 0);
        CU_ASSERT(worst <=
                  (tr->other_late_ms ? tr->other_late_ms : OTHER_LATE_MS));
        CU_ASSERT_EQUAL(limited_early, 0);
        CU_ASSERT_EQUAL(limited_missing, 0);
        CU_ASSERT_EQUAL(limited_twice, 0);
        CU_ASSERT_EQUAL(sim.nlimited_at, (size_t)tr->n_limited);
        CU_ASSERT(busiest <= (size_t)(tr->per_s + tr->burst));
        if (tr->max_took_ms)
                CU_ASSERT(took <= tr->max_took_ms);
        if (tr->max_sends_back)
                CU_ASSERT(most_sent <= tr->max_sends_back);
        /* The shares' counts back to 0. */
        CU_ASSERT_EQUAL(sim.f->held->rule[0].cnt, 0);
        CU_ASSERT_EQUAL(sim.f->held->rule[0].bytes, 0);
        CU_ASSERT_EQUAL(sim.f->held->limited.cnt, 0);
        CU_ASSERT_EQUAL(sim.f->held->limited.bytes, 0);
        CU_ASSERT(sim.held_most <= max_held);
        CU_ASSERT(sim.limited_most <= (max_held < 2 ? 1 : max_held / 2));
        if (tr->n_limited >= 100) /* a backlog: it was sent back */
                CU_ASSERT(deferred > 0);
        CU_ASSERT_EQUAL(kd_metric_get(&sim.f->metrics, KD_M_TASK_STATE_BUGS),
                        0);

        for (size_t k = 0; k < sim.nlive; k++)
                kd_test_task_drop(sim.f, sim.live[k]);
        for (size_t p = 0; p < sim.nparts; p++) {
                if (sim.parts[p].head_task)
                        kd_task_free(sim.parts[p].head_task);
                free(sim.parts[p].recs);
        }
        kd_fwd_destroy(sim.f);
        free(sim.parts);
        free(sim.recs);
        free(sim.fired);
        free(sim.limited_at);
        free(sim.fires);
        free(sim.sent_back);
}

/* The second trial: 600 tasks at 20/s (burst 5), max_held=400,
 * the others due at the instant and over the next 10 s. Before: 2.9 s
 * late here (8.6 s on a real stack). */
static void test_a_backlog_at_20_per_s_beside_others_max_held_400(void)
{
        const trial_t tr = {"20/s", "slow=20/5", "400", 20, 5,
                            600,    20,          100,   0,  10000};
        run(&tr);
}

/* The first trial: 2,000 tasks at 5/s, max_held=500, the others
 * due at the instant and over 20 s from 2 s after (p99 8.2 s late in the
 * issue). Before, here: the limited tasks held all of the held set (500),
 * the others on time only because the model's fetches are prompt. */
static void test_a_backlog_at_5_per_s_beside_others_max_held_500(void)
{
        const trial_t tr = {"5/s", "slow=5", "500", 5,    1,
                            2000,  40,       200,   2000, 20000};
        run(&tr);
}

/* Review finding 1: a limited task bigger than an eighth of
 * max_held_bytes (the default 256 MiB: 32 MiB and a byte) never fit its
 * rule's share and was sent back every time it was read, for ever (in
 * the review's simulation a 40 MB task sent back ~480 times in 55 s).
 * Now a rule's first task always fits: all fire, once each. */
static void test_limited_tasks_bigger_than_an_eighth_of_max_held_bytes(void)
{
        trial_t tr = {"big", "slow=5", "500", 5, 1, 10, 20, 20, 0, 5000};
        tr.limited_bytes = (size_t)(256 << 20) / 8 + 1;
        tr.max_sends_back = 10;
        run(&tr);
}

/* Review finding 1: max_held=1 — half of it was 0, so every limited task
 * was sent back every time (0 of 10 fired, 719 sends-back). */
static void test_limited_tasks_with_max_held_1(void)
{
        trial_t tr = {"max_held=1", "slow=5", "1", 5, 1, 10, 0, 0, 0, 0};
        tr.max_sends_back = 10;
        run(&tr);
}

/* Review findings 2 and 3: 20,000 tasks at 2000/s, max_held=4000 (the
 * rule's share 500, a quarter of a second of the rate, below the 1 s
 * horizon floor): turns rounded up to whole milliseconds let at most
 * 1000 a second through (20 s, not 10), and a task sent back got a turn
 * inside the horizon, so it was read again at once, found the share
 * full and was sent back again (~9 hops a task). */
static void test_a_backlog_at_2000_per_s_max_held_4000(void)
{
        trial_t tr = {"2000/s", "slow=2000", "4000", 2000, 200,
                      20000,    20,          100,    0,    10000};
        tr.max_sends_back = 3;
        /* The others are behind the 20,000 in the same partitions: they
         * wait until those are read through, a quarter of max_held sent
         * back per hop delivery (before: 1,760 ms, with drains). */
        tr.other_late_ms = 2000;
        run(&tr);
}

/* Review finding 2: 20,000 tasks at 2000/s, max_held=40000 (the share,
 * 5000, is 2.5 s of the rate): the turns given to the tasks sent back
 * were whole milliseconds apart, so they came at most 1000 a second. */
static void test_a_backlog_at_2000_per_s_takes_its_rate(void)
{
        trial_t tr = {"2000/s, max_held=40000",
                      "slow=2000",
                      "40000",
                      2000,
                      200,
                      20000,
                      20,
                      100,
                      0,
                      10000};
        tr.max_took_ms = 12000;
        run(&tr);
}

int main(void)
{
        static const kd_test_case_t cases[] = {
            KD_TEST(test_limited_tasks_bigger_than_an_eighth_of_max_held_bytes),
            KD_TEST(test_limited_tasks_with_max_held_1),
            KD_TEST(test_a_backlog_at_2000_per_s_max_held_4000),
            KD_TEST(test_a_backlog_at_2000_per_s_takes_its_rate),
            KD_TEST(test_a_backlog_at_20_per_s_beside_others_max_held_400),
            KD_TEST(test_a_backlog_at_5_per_s_beside_others_max_held_500),
            KD_TEST_END};
        return kd_test_run("backlog_vt", cases, NULL, NULL);
}
