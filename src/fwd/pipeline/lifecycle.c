/* SPDX-License-Identifier: Apache-2.0 */
/* A task's lifecycle (kd_lifecycle.h): its state moves, checked against
 * the table below, and its place, the one writer of each (place(), below:
 * the queues, the timer, detach and the named moves). Owns no state of
 * its own: the task's fields and the queues it joins and leaves (claim,
 * pacing, backlog, a rule's) through their kd_taskq_t. */
#include "kd_lifecycle.h"
#include "kd_pipeline_state.h"

#include <assert.h>

#include "kd_log.h"
#include "store/kd_store.h"

static const char *const state_names[KD_TASK_STATES] = {
    "new",    "queued",  "held", "claiming", "claimed", "paced",
    "firing", "hopping", "dead", "retry",    "journal", "intent"};

const char *kd_task_state_name(kd_task_state_t s)
{
        return (unsigned)s < KD_TASK_STATES ? state_names[s] : "?";
}

#define TO(s) (1u << KD_TASK_##s)

/* The moves the pipeline makes, from -> to, and who makes them:
 *
 *  from      to        where
 *  new       queued    intake: decoded, into its partition's backlog
 *  queued    held      sched: held, hold timer at fire_at - claim_ahead
 *  queued    hopping   sched: hopped (fire.c kd_fire_hop)
 *  queued    dead      sched: malformed or forbidden, dead-lettered
 *  queued    retry     fire: no memory for the hop's or dead letter's
 *                      headers, produced later
 *  held      claiming  claim: its hold or wait timer ran (claim_due_cb,
 *                      pace.c kd_pace_hold_due_cb), or its target's rate
 *                      limit let it out of its queue (pace.c)
 *  held      hopping   intake: handed over on a revoke
 *  held      retry     intake: handed over, no memory for the headers
 *  claiming  claiming  claim: the request failed, queued again
 *  claiming  held      claim: FIRING under another owner (lease or
 *                      foreign wait), or no row yet (undecided)
 *  claiming  claimed   claim: won (pace.c kd_pace_claimed: fire timer);
 *                      or fired without a claim (an outage, policy fire)
 *  claiming  hopping   intake: handed over on a revoke (claim forgotten)
 *  claiming  retry     intake: handed over, no memory for the headers
 *  claimed   paced     pace: due, waiting for max_fire_rate
 *  claimed   firing    fire: produced to its target (or refused_known)
 *  claimed   claiming  fire: its lease may end before the report:
 *                      claimed again (kd_claim_enqueue)
 *  claimed   retry     fire: waiting for the first clock sample, or no
 *                      memory for the headers
 *  paced     firing    as from claimed
 *  paced     claiming  as from claimed
 *  paced     retry     as from claimed
 *  firing    dead      fire: failed for good, dead-lettered
 *  firing    journal   fire: fired without a claim and delivered: its
 *                      journal record (at_least_once)
 *  dead      journal   fire: as firing -> journal, for the dead letter of
 *                      a fire without a claim that failed for good
 *  firing    retry     fire: produce failed or deferred (the mode holds
 *                      it back), the batch refused: produced again later
 *  hopping   dead      fire: too large, or the tier refuses it for good
 *  hopping   retry     as from firing
 *  dead      dead      fire: too large for the dead topic, sent again
 *                      without key and value
 *  dead      retry     as from firing
 *  retry     retry     fire: still waiting (clock, headers)
 *  retry     firing    fire: the retry of a fire
 *  retry     hopping   fire: the retry of a hop; intake: handed over
 *  retry     dead      fire: the retry of a dead letter
 *  retry     claiming  fire: as claimed -> claiming
 *  retry     journal   fire: the retry of a journal record
 *  journal   retry     fire: the journal record failed: written again
 *  claimed   intent    fire: to fire without a claim (at_least_once):
 *                      its record of intent first
 *  paced     intent    as from claimed
 *  retry     intent    as from claimed
 *  intent    firing    fire: the record of intent delivered: the fire
 *  intent    retry     fire: the record of intent failed: claimed (the
 *                      journal is broken)
 *
 * A task ends (freed by kd_settle_release) from any state. */
static const unsigned moves[KD_TASK_STATES] = {
    [KD_TASK_NEW] = TO(QUEUED),
    [KD_TASK_QUEUED] = TO(HELD) | TO(HOPPING) | TO(DEAD) | TO(RETRY),
    [KD_TASK_HELD] = TO(CLAIMING) | TO(HOPPING) | TO(RETRY),
    [KD_TASK_CLAIMING] =
        TO(CLAIMING) | TO(HELD) | TO(CLAIMED) | TO(HOPPING) | TO(RETRY),
    [KD_TASK_CLAIMED] =
        TO(PACED) | TO(FIRING) | TO(CLAIMING) | TO(RETRY) | TO(INTENT),
    [KD_TASK_PACED] = TO(FIRING) | TO(CLAIMING) | TO(RETRY) | TO(INTENT),
    [KD_TASK_FIRING] = TO(DEAD) | TO(RETRY) | TO(JOURNAL),
    [KD_TASK_HOPPING] = TO(DEAD) | TO(RETRY),
    [KD_TASK_DEAD] = TO(DEAD) | TO(RETRY) | TO(JOURNAL),
    [KD_TASK_RETRY] = TO(RETRY) | TO(FIRING) | TO(HOPPING) | TO(DEAD) |
                      TO(CLAIMING) | TO(JOURNAL) | TO(INTENT),
    [KD_TASK_JOURNAL] = TO(RETRY),
    [KD_TASK_INTENT] = TO(FIRING) | TO(RETRY)};

#undef TO

int kd_task_move_allowed(kd_task_state_t from, kd_task_state_t to)
{
        return (unsigned)from < KD_TASK_STATES &&
               (unsigned)to < KD_TASK_STATES && (moves[from] >> to & 1u);
}

void kd_task_set_state(kd_fwd_t *f, kd_task_t *t, kd_task_state_t to)
{
        kd_task_state_t from = t->state;
        if (!kd_task_move_allowed(from, to)) {
                /* Debug and sanitizer builds stop here, as librdkafka
                 * asserts its transaction moves: a test meets the bug
                 * where it happens. In Release the move is made all the
                 * same: exiting over a move the table missed would cost
                 * more than going on as before the table. */
                char q[KD_LOG_QUOTED_MAX(KDELAY_ID_MAX)];
                kd_metric_inc(&f->metrics, KD_M_TASK_STATE_BUGS);
                kd_log(f->conf, KDELAY_LOG_ERROR,
                       "event=bug what=task_state from=%s to=%s id=%s",
                       kd_task_state_name(from), kd_task_state_name(to),
                       t->rec.id ? kd_log_quote(t->rec.id, q, sizeof(q)) : "-");
                assert(!"illegal task state move");
        }
        t->state = to;
}

/* A set of places, for the places a move may come from. */
#define AT(w) (1u << KD_WHERE_##w)
/* Nowhere, or its own timer, which ran (a timer's place outlasts its run
 * until the task moves on: disarming a timer that ran does nothing). */
#define LOOSE (AT(NONE) | AT(TIMER))

/* The one writer of a task's place: t moves to `to` from one of the
 * places `from`. From another, a bug (in two places at once, or a report
 * for a task not in flight): Debug and sanitizer builds stop here, as on
 * a state move outside its table; Release builds make the move. */
static void place(kd_task_t *t, kd_task_where_t to, unsigned from)
{
        assert((unsigned)t->where < KD_WHERE_PLACES && (from >> t->where & 1u));
        (void)from; /* Release builds check nothing */
        t->where = to;
}

int kd_task_arm(kd_fwd_t *f, kd_task_t *t, kd_clock_t clock, int64_t at,
                kd_timer_cb_t *cb)
{
        place(t, KD_WHERE_TIMER, LOOSE);
        return kd_timer_arm(&f->timers, &t->timer, clock, at, cb, f);
}

/* t leaves pacing queue q, whose timer tm serves its head: disarmed
 * once q is empty. */
static void leave(kd_fwd_t *f, kd_taskq_t *q, kd_timer_t *tm, kd_task_t *t)
{
        if (kd_taskq_remove(q, t) && !q->head)
                kd_timer_disarm(&f->timers, tm);
}

int kd_task_detach(kd_fwd_t *f, kd_task_t *t)
{
        switch (t->where) {
        case KD_WHERE_NONE:
                break;
        case KD_WHERE_BACKLOG:
                if (t->part)
                        kd_taskq_remove(&t->part->backlog, t);
                break;
        case KD_WHERE_TIMER:
                kd_timer_disarm(&f->timers, &t->timer);
                break;
        case KD_WHERE_CLAIM_Q:
                kd_taskq_remove(&f->claim->q, t);
                break;
        case KD_WHERE_CLAIM_REQ:
                kd_store_req_detach(t); /* its answer will be ignored */
                break;
        case KD_WHERE_PACE_Q:
                leave(f, &f->pace->q, &f->pace->timer, t);
                break;
        case KD_WHERE_TARGET_Q:
                leave(f, &f->pace->lim[t->rlim].q, &f->pace->lim[t->rlim].timer,
                      t);
                break;
        case KD_WHERE_FIRE_Q:
                leave(f, &f->pace->lim[t->rlim].fire_q,
                      &f->pace->lim[t->rlim].fire_timer, t);
                break;
        case KD_WHERE_FLIGHT:
                return -1;
        }
        place(t, KD_WHERE_NONE, ~AT(FLIGHT));
        return 0;
}

int kd_task_claimed(const kd_task_t *t)
{
        return t->state == KD_TASK_CLAIMED || t->state == KD_TASK_PACED ||
               t->state == KD_TASK_FIRING ||
               (t->state == KD_TASK_RETRY && t->retry_as == KD_TASK_FIRING);
}

void kd_task_to_claim_req(kd_task_t *t)
{
        place(t, KD_WHERE_CLAIM_REQ, AT(NONE));
}

void kd_task_claim_answered(kd_task_t *t)
{
        place(t, KD_WHERE_NONE, AT(CLAIM_REQ));
}

void kd_task_to_flight(kd_task_t *t)
{
        place(t, KD_WHERE_FLIGHT, LOOSE);
}

void kd_task_reported(kd_task_t *t)
{
        place(t, KD_WHERE_NONE, AT(FLIGHT));
}

/* The task queues: a queue is a place. */

void kd_taskq_init(kd_taskq_t *q, kd_task_where_t where)
{
        assert(where != KD_WHERE_NONE);
        *q = (kd_taskq_t){.where = where};
}

/* t takes q's place. A queue never initialised, or a task still in
 * another queue, a request or in flight, is a bug: Debug and sanitizer
 * builds stop on it. */
static void joined(kd_taskq_t *q, kd_task_t *t)
{
        assert(q->where != KD_WHERE_NONE);
        place(t, q->where, LOOSE);
}

/* t, found in q, leaves it: nowhere. */
static void left(kd_taskq_t *q, kd_task_t *t)
{
        t->qnext = NULL;
        place(t, KD_WHERE_NONE, 1u << q->where);
        q->len--;
}

void kd_taskq_push(kd_taskq_t *q, kd_task_t *t)
{
        joined(q, t);
        t->qnext = NULL;
        if (q->tail)
                q->tail->qnext = t;
        else
                q->head = t;
        q->tail = t;
        q->len++;
}

void kd_taskq_push_front(kd_taskq_t *q, kd_task_t *t)
{
        joined(q, t);
        t->qnext = q->head;
        q->head = t;
        if (!q->tail)
                q->tail = t;
        q->len++;
}

kd_task_t *kd_taskq_pop(kd_taskq_t *q)
{
        kd_task_t *t = q->head;
        if (!t)
                return NULL;
        q->head = t->qnext;
        if (!q->head)
                q->tail = NULL;
        left(q, t);
        return t;
}

int kd_taskq_remove(kd_taskq_t *q, kd_task_t *t)
{
        kd_task_t **pp = &q->head, *prev = NULL;
        while (*pp && *pp != t) {
                prev = *pp;
                pp = &(*pp)->qnext;
        }
        if (!*pp)
                return 0;
        *pp = t->qnext;
        if (q->tail == t)
                q->tail = prev;
        left(q, t);
        return 1;
}
