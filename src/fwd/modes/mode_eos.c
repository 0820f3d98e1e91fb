/* SPDX-License-Identifier: Apache-2.0 */
/* Delivery mode exactly_once (kd_mode.h): every hop, fire and dead letter
 * goes into a Kafka transaction together with the source partitions'
 * offsets and done sets (consume-transform-produce, as librdkafka's
 * examples/transactions.c). A transaction that holds an on-time fire
 * commits at the next loop turn; one that holds only a catch-up's fires
 * (KD_TXN_LATE_MS), hops, dead letters or offsets after
 * forwarder.transaction_interval. docs/reliability.md states the
 * guarantee. Owns the transaction state (one enum, changed only through
 * txn_set_state), its commit timer and the fires of the open transaction.
 * Its other two parts: poison isolation (eos_poison.c, kd_eos_poison.h),
 * which ends an abort loop — a record that keeps its transactions aborting
 * is produced alone and, failing alone, dead-lettered — keeps its own
 * state (kd_eos_iso_t: the records of aborted transactions, kd_poison.h;
 * the record alone or waiting; the transaction's cause) and decides when a
 * record goes alone, waits or is a victim (pure), carried out here; the
 * partitions' offsets and done sets are eos_offsets.c's
 * (kd_eos_offsets.h). Like every mode it sees only its context
 * (kd_mode_ctx.h). */
#define KD_MODE_SEAM 1 /* kd_mode_ctx.h: the forwarder stays out */

#include <assert.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/kd_idq.h"
#include "core/kd_perr.h"
#include "kd_eos_offsets.h"
#include "kd_eos_poison.h"
#include "kd_log.h"
#include "kd_mode.h"
#include "kd_poison.h"
#include "kd_util.h"

/* Longest a single transactional call may block the loop before it is
 * retried (retriable errors) from the top. */
#define KD_TXN_CALL_TIMEOUT_MS 10000

/* The coordinator completes a commit (writes its markers) after answering
 * it; offsets sent to the next transaction before that are refused as
 * CONCURRENT_TRANSACTIONS and librdkafka retries them only ~100 ms later.
 * Waiting this long after a commit avoids that. */
#define KD_TXN_SETTLE_MS 20

/* A fire produced more than this after its fire-at (by the broker's
 * clock) is a catch-up's: it does not make its transaction commit at the
 * next turn. A catch-up then commits every forwarder.transaction_interval,
 * not every KD_TXN_SETTLE_MS: each commit writes a marker to every
 * partition it touched and the offsets (a catch-up of 1M tasks: 411-455
 * commits -> 139, the broker's CPU per fire 4.5-5.5 -> 4.0 us); a fire
 * that is a second late already becomes visible at most that interval
 * later. */
#define KD_TXN_LATE_MS 1000

typedef enum kd_txn_state {
        KD_TXN_READY,      /* none open */
        KD_TXN_OPEN,       /* begun: produces go into it */
        KD_TXN_ABORTABLE,  /* a produce in it failed: abort and rewind */
        KD_TXN_COMMITTING, /* sending offsets, committing */
        KD_TXN_ABORTING,   /* aborting */
        KD_TXN_RENEW,      /* the producer failed for good: a new one
                              (kd_producer_recover) ends the transaction */
        KD_TXN_FATAL       /* unrecoverable: the process exits */
} kd_txn_state_t;

/* What a commit or abort came to. */
typedef enum kd_txn_result {
        KD_TXN_COMMITTED, /* committed, or nothing to commit */
        KD_TXN_ABORTED,   /* aborted: the caller rewinds (or drops) */
        KD_TXN_EXIT       /* fatal: no transaction until a new producer */
} kd_txn_result_t;

static const char *const txn_state_names[] = {
    "ready", "open", "abortable", "committing", "aborting", "renew", "fatal"};

typedef struct eos_state {
        kd_eos_offsets_t offsets; /* the open partitions' (eos_offsets.c) */
        kd_txn_state_t txn;       /* changed only by txn_set_state */
        int has_fire;             /* the open transaction holds a fire */
        int has_ontime; /* ... one within KD_TXN_LATE_MS of its time */
        int dirty;      /* offsets moved since the last commit */
        int64_t opened_mono, last_mono; /* begin; last commit or abort */
        /* The ids inline, so that a fire costs no allocation (kd_idq.h);
         * aux: the token's seq. */
        kd_idbatch_t fired;     /* fired in the open transaction: id,
                                   lateness */
        kd_idbatch_t unclaimed; /* fired without a claim in it (their
                                   journal records are in it too): id,
                                   lateness */
        int journal_failed;     /* a journal record of it failed: its abort
                                   is no record's fault */
        kd_idbatch_t dead;      /* claimed and dead-lettered in it: id, reason
                                   index (kd_settle_dead_reasons) */
        kd_timer_t commit;
        const char *forced[16]; /* producer properties, into txn_id */
        char *txn_id;           /* owned */
        kd_eos_iso_t iso;       /* poison isolation's state (eos_poison.c) */
        rd_kafka_resp_err_t last_cause; /* of the last abort */
        int abort_streak;               /* aborted since the last commit */
        unsigned fire_commits;          /* committed transactions with fires */
} eos_state_t;

/* forwarder.fault.kill_after_commit: the crash between a commit and the
 * FIRED marks, on demand (tests of kdelayctl audit). */
static void fault_after_commit(kd_mode_ctx_t *m, eos_state_t *s)
{
        int n = m->conf->fwd_fault_kill_after_commit;
        if (n <= 0 || ++s->fire_commits != (unsigned)n)
                return;
        kd_log(m->conf, KDELAY_LOG_WARNING,
               "event=fault_injected what=kill_after_commit commit=%d "
               "fires=%zu",
               n, s->fired.len);
        raise(SIGKILL);
}

static eos_state_t *state_of(const kd_mode_ctx_t *m)
{
        return m->state;
}

/* The transactions' state machine: the moves it makes, as librdkafka's
 * rd_kafka_txn_state_transition_is_valid. */
static int txn_move_allowed(kd_txn_state_t from, kd_txn_state_t to)
{
        const unsigned end = 1u << KD_TXN_RENEW | 1u << KD_TXN_FATAL;
        const unsigned allowed[] = {
            [KD_TXN_READY] = 1u << KD_TXN_OPEN | end,
            [KD_TXN_OPEN] = 1u << KD_TXN_ABORTABLE | 1u << KD_TXN_COMMITTING |
                            1u << KD_TXN_ABORTING | end,
            [KD_TXN_ABORTABLE] = 1u << KD_TXN_ABORTING | end,
            [KD_TXN_COMMITTING] = 1u << KD_TXN_READY | 1u << KD_TXN_ABORTABLE |
                                  1u << KD_TXN_ABORTING | end,
            [KD_TXN_ABORTING] = 1u << KD_TXN_READY | end,
            [KD_TXN_RENEW] = 1u << KD_TXN_READY | 1u << KD_TXN_FATAL,
            [KD_TXN_FATAL] = 0};
        return (allowed[from] & (1u << to)) != 0;
}

/* The only place the transaction state changes (as librdkafka's
 * rd_kafka_txn_set_state): a move outside the table is a bug. In Debug
 * (and sanitizer) builds it aborts at once; in Release it is logged
 * (event=bug what=txn_state), counted (txn_state_bugs), and ends the
 * process (fatal). */
static void txn_set_state(kd_mode_ctx_t *m, kd_txn_state_t to)
{
        eos_state_t *s = state_of(m);
        kd_txn_state_t from = s->txn;
        if (from == to)
                return;
        if (!txn_move_allowed(from, to)) {
                kd_metric_inc(m->metrics, KD_M_TXN_STATE_BUGS);
                kd_log(m->conf, KDELAY_LOG_ERROR,
                       "event=bug what=txn_state from=%s to=%s action=exit",
                       txn_state_names[from], txn_state_names[to]);
                assert(!"illegal transaction state move");
                to = KD_TXN_FATAL;
        }
        kd_log(m->conf, KDELAY_LOG_DEBUG, "event=txn_state from=%s to=%s",
               txn_state_names[from], txn_state_names[to]);
        s->txn = to;
        if (to == KD_TXN_RENEW) {
                /* The loop's next turn. One record's doing (it is
                 * dead-lettered next): not a reason to give up on
                 * renewals. */
                kd_mode_producer_renew_soon(m, s->iso.solo != 0);
        }
        if (to == KD_TXN_FATAL) {
                kd_mode_fatal(m, "transaction");
        }
}

/* --- the transaction ------------------------------------------------- */

static void commit_cb(kd_timer_t *tm, void *arg);

/* When the transaction is due for its commit; re-armed whenever an input
 * changes. */
static void arm(kd_mode_ctx_t *m)
{
        eos_state_t *s = state_of(m);
        int64_t at = INT64_MAX, interval = m->conf->fwd_txn_interval_ms;
        if (s->txn == KD_TXN_ABORTABLE)
                at = 0;
        else if (s->txn == KD_TXN_OPEN && s->iso.solo_wait &&
                 s->iso.solo_wait_txn)
                at = 0; /* a record waits for a transaction of its own */
        else if (s->txn == KD_TXN_OPEN && (s->has_ontime || s->iso.solo))
                at = s->last_mono + KD_TXN_SETTLE_MS;
        else if (s->txn == KD_TXN_OPEN && s->has_fire)
                at = s->last_mono + interval; /* a catch-up's fires only */
        else if (s->txn == KD_TXN_OPEN)
                at = s->opened_mono + interval;
        else if (s->txn == KD_TXN_READY && s->dirty)
                at = s->last_mono + interval;
        if (at == INT64_MAX)
                kd_timer_disarm(m->timers, &s->commit);
        else if (kd_timer_arm(m->timers, &s->commit, KD_CLOCK_MONO, at,
                              commit_cb, m))
                kd_mode_oom(m, "txn_timer");
}

/* What a failed transactional call leaves us to do. */
typedef enum kd_txn_next {
        KD_NEXT_RETRY,
        KD_NEXT_ABORT,
        KD_NEXT_FATAL
} kd_txn_next_t;

/* 1 when no transactional call can be made (until a new producer). */
static int dead(const eos_state_t *s)
{
        return s->txn == KD_TXN_RENEW || s->txn == KD_TXN_FATAL;
}

/* Logs error (taken) and classifies it. A fatal error asks for a new
 * producer: the loop makes one, or exits when it cannot (fenced). */
static kd_txn_next_t classify(kd_mode_ctx_t *m, rd_kafka_error_t *error,
                              const char *what)
{
        kd_txn_next_t next = KD_NEXT_ABORT;
        rd_kafka_resp_err_t code = rd_kafka_error_code(error);
        if (rd_kafka_error_is_fatal(error))
                next = KD_NEXT_FATAL;
        else if (rd_kafka_error_txn_requires_abort(error))
                next = KD_NEXT_ABORT;
        else if (rd_kafka_error_is_retriable(error))
                next = KD_NEXT_RETRY;
        char q[600];
        kd_log(m->conf,
               next == KD_NEXT_RETRY ? KDELAY_LOG_WARNING : KDELAY_LOG_ERROR,
               "event=txn_error what=%s err=%s code=%s action=%s", what,
               kd_log_quote(rd_kafka_error_string(error), q, sizeof(q)),
               rd_kafka_error_name(error),
               next == KD_NEXT_FATAL   ? "renew_producer"
               : next == KD_NEXT_RETRY ? "retry"
                                       : "abort");
        rd_kafka_error_destroy(error);
        eos_state_t *s = state_of(m);
        if (next != KD_NEXT_RETRY) /* the transaction's records learn why */
                kd_eos_iso_cause(&s->iso, code);
        if (next == KD_NEXT_FATAL)
                txn_set_state(m, KD_TXN_RENEW);
        return next;
}

/* Begins a transaction unless one is open; -1 when none can be. */
static int txn_begin(kd_mode_ctx_t *m)
{
        eos_state_t *s = state_of(m);
        if (s->txn == KD_TXN_OPEN)
                return 0;
        if (s->txn != KD_TXN_READY)
                return -1; /* failed or fatal: deferred until the abort */
        rd_kafka_error_t *error = kd_mode_txn_begin(m);
        if (error) {
                classify(m, error, "begin_transaction");
                return -1;
        }
        txn_set_state(m, KD_TXN_OPEN);
        s->has_fire = s->has_ontime = 0;
        s->opened_mono = kd_mode_mono_ms(m);
        arm(m);
        return 0;
}

/* --- poison isolation: the decisions are eos_poison.c's ------------- */

/* The record of key waits for its turn to go alone, holding the other
 * produces back (at most KD_SOLO_WAIT_MS at a time, KD_SOLO_WAIT_MAX_MS
 * in all); own_txn: for a transaction of its own. */
static void wait_turn(kd_mode_ctx_t *m, uint64_t key, int own_txn)
{
        eos_state_t *s = state_of(m);
        if (kd_eos_iso_wait_turn(&s->iso, key, own_txn, kd_mode_mono_ms(m)))
                arm(m);
}

static void log_alone(kd_mode_ctx_t *m, const char *how, const kd_task_t *t,
                      const kd_poison_entry_t *e)
{
        char q[KD_LOG_QUOTED_MAX(KDELAY_ID_MAX)];
        kd_metric_inc(m->metrics, KD_M_SOLO);
        kd_log(m->conf, KDELAY_LOG_NOTICE,
               "event=txn_solo how=%s id=%s aborts=%d solo_aborts=%d err=%s",
               how, t->rec.id ? kd_log_quote(t->rec.id, q, sizeof(q)) : "-",
               e->aborts, e->solo_fails, rd_kafka_err2name(e->err));
}

/* t's record (entry e) goes alone, as d says (KD_EOS_ALONE: into the open
 * transaction, a batch of its own, the others held back until its report;
 * refused alone, it is the culprit (eos_failed), delivered, it commits
 * with the others. KD_EOS_SOLO: in a transaction of its own). */
static int go_alone(kd_mode_ctx_t *m, const kd_task_t *t, kd_poison_entry_t *e,
                    kd_eos_act_t act)
{
        eos_state_t *s = state_of(m);
        if (txn_begin(m))
                return -1;
        kd_eos_iso_alone(&s->iso, e, act);
        log_alone(m, act == KD_EOS_ALONE ? "batch" : "transaction", t, e);
        if (act == KD_EOS_SOLO)
                arm(m);
        return 0;
}

/* Records of transactions that aborted go alone; while one is alone in
 * the open transaction, or waits for its turn, the others wait
 * (kd_eos_decide). */
static int eos_begin(kd_mode_ctx_t *m, const kd_task_t *t, kd_task_state_t as,
                     rd_kafka_t **rk)
{
        eos_state_t *s = state_of(m);
        *rk = kd_mode_producer_main(m);
        uint64_t key = t ? kd_poison_key(t, as) : 0;
        kd_poison_entry_t *e = t ? kd_poison_find(&s->iso.poison, key) : NULL;
        kd_eos_view_t v = {
            .txn_ready = s->txn == KD_TXN_READY,
            .txn_open = s->txn == KD_TXN_OPEN,
            .reset_due = kd_mode_producer_reset_due(m),
            .inflight = kd_mode_producer_inflight(m),
            .known_refusal =
                t && as == KD_TASK_FIRING && t->known_refusal && key,
        };
        kd_eos_iso_view(&s->iso, &v);
        if (kd_eos_held_back(&v))
                return KD_SOLO_WAIT_MS;
        /* Blamed once with a refused batch, known a victim: it goes back
         * to shared batches, until it aborts one again. */
        if (e && as == KD_TASK_FIRING &&
            kd_eos_victim(e, kd_eos_victim_possible(e) &&
                                 kd_refusals_explains(m->refusals, t, e->err,
                                                      kd_mode_mono_ms(m)))) {
                e->forgiven = 1;
                e = NULL;
        }
        v.now = kd_mode_mono_ms(m);
        const kd_poison_entry_t *first =
            e && e->first != e->key ? kd_poison_find(&s->iso.poison, e->first)
                                    : NULL;
        kd_eos_decision_t d = kd_eos_decide(&v, e, first);
        if (d.act == KD_EOS_KNOWN) {
                /* A replay its target is known to refuse (kd_fire_now)
                 * goes alone, as the record of a refused batch does. */
                e = kd_poison_get(&s->iso.poison, key);
                if (kd_perr_class(e->err) != KD_PERR_RECORD)
                        e->err = t->known_refusal;
                first = e->first != e->key
                            ? kd_poison_find(&s->iso.poison, e->first)
                            : NULL;
                d = kd_eos_alone(&v, e, first);
        }
        switch (d.act) {
        case KD_EOS_WAIT:
                return d.wait_ms;
        case KD_EOS_TURN:
                wait_turn(m, e->key, d.own_txn);
                return d.wait_ms;
        case KD_EOS_ALONE:
        case KD_EOS_SOLO:
                return go_alone(m, t, e, d.act);
        case KD_EOS_SHARED:
        case KD_EOS_KNOWN:
                break;
        }
        kd_eos_iso_shared(&s->iso);
        return txn_begin(m);
}

/* The transaction state cannot be recovered here: exit for a restart. */
static kd_txn_result_t give_up(kd_mode_ctx_t *m, const char *what)
{
        kd_log(m->conf, KDELAY_LOG_ERROR,
               "event=txn_unrecoverable what=%s action=exit", what);
        txn_set_state(m, KD_TXN_FATAL);
        return KD_TXN_EXIT;
}

/* When retries of a transactional call end: deadline (a shutdown's or a
 * revoke's; 0 = none), or, when a signal came before a shutdown began,
 * shutdown_timeout after the first retry that saw it (*local: 0 until
 * then); 0 = no end (not stopping). */
static int64_t retry_deadline(kd_mode_ctx_t *m, int64_t deadline,
                              int64_t *local)
{
        if (deadline)
                return deadline;
        if (!kd_mode_stopping(m))
                return 0;
        if (!*local)
                *local = kd_mode_mono_ms(m) + m->conf->fwd_shutdown_timeout_ms;
        return *local;
}

/* deadline (monotonic; 0 = none) has come. */
static int past(const kd_mode_ctx_t *m, int64_t deadline)
{
        return deadline && kd_mode_mono_ms(m) >= deadline;
}

/* A solo transaction aborted because of cause: its record's failures
 * counted (kd_eos_solo_weight), and its next solo attempt waits, longer
 * each time, so that the others commit (kd_eos_iso_aborted). */
static void log_solo_aborted(kd_mode_ctx_t *m, rd_kafka_resp_err_t cause,
                             const kd_eos_solo_abort_t *sa)
{
        kd_log(m->conf, KDELAY_LOG_WARNING,
               "event=txn_solo_aborted err=%s counted=%d solo_aborts=%d "
               "limit=%d retry_in_ms=%lld",
               rd_kafka_err2name(cause), sa->counted, sa->e->solo_fails,
               m->conf->fwd_abort_limit, (long long)sa->backoff_ms);
}

/* The open transaction is over, committed or not: the one place that
 * ends its bookkeeping. Committed, what it fired and dead-lettered is
 * marked FIRED or DEAD; aborted (or ended by a new producer), none of it
 * happened, and its records are accounted (kd_poison.h). */
static void txn_over(kd_mode_ctx_t *m, int committed, int fatal)
{
        eos_state_t *s = state_of(m);
        if (committed) {
                /* Each with its token's seq (aux): a run covers it only
                 * now; an abort leaves it unfinished (parked at the
                 * rewind's new generation). */
                for (size_t i = 0; i < s->fired.len; i++)
                        kd_mode_settle_fired(
                            m, kd_idbatch_id(&s->fired, i),
                            kd_idbatch_val(&s->fired, i), 0,
                            (uint64_t)kd_idbatch_aux(&s->fired, i));
                for (size_t i = 0; i < s->unclaimed.len; i++)
                        kd_mode_settle_fired(
                            m, kd_idbatch_id(&s->unclaimed, i),
                            kd_idbatch_val(&s->unclaimed, i), 1,
                            (uint64_t)kd_idbatch_aux(&s->unclaimed, i));
                for (size_t i = 0; i < s->dead.len; i++)
                        kd_mode_settle_dead(
                            m, kd_idbatch_id(&s->dead, i),
                            kd_mode_dead_reason(
                                (int)kd_idbatch_val(&s->dead, i)),
                            (uint64_t)kd_idbatch_aux(&s->dead, i));
                kd_eos_iso_committed(&s->iso);
                s->abort_streak = 0;
                kd_metric_inc(m->metrics, KD_M_TXN_COMMITS);
        } else {
                kd_metric_add(m->metrics, KD_M_RECORD_ABORTS,
                              s->iso.poison.members_len);
                kd_eos_solo_abort_t sa;
                rd_kafka_resp_err_t cause = kd_eos_iso_aborted(
                    &s->iso, s->journal_failed, fatal, m->conf->fwd_abort_limit,
                    m->conf->fwd_retry_max_ms, kd_mode_mono_ms(m), &sa);
                if (sa.e)
                        log_solo_aborted(m, cause, &sa);
                s->last_cause = cause;
                s->abort_streak++;
                kd_metric_inc(m->metrics, KD_M_TXN_ABORTS);
        }
        kd_metric_set(m->metrics, KD_M_TXN_ABORT_STREAK, s->abort_streak);
        kd_idbatch_reset(&s->fired);
        kd_idbatch_reset(&s->unclaimed);
        kd_idbatch_reset(&s->dead);
        s->journal_failed = 0;
        s->has_fire = s->has_ontime = 0;
        s->dirty = 0; /* committed, or the rewind starts from the commit */
        kd_eos_iso_over(&s->iso);
        s->last_mono = kd_mode_mono_ms(m);
        arm(m);
}

/* The refusal that made the open transaction abortable, asked of the
 * producer when what failed named only its state: librdkafka 2.0.2's
 * send_offsets_to_transaction answers _STATE when a partition was refused
 * while it ran, and the abort of such a transaction can fail with
 * INVALID_TXN_STATE. Counted as the producer's own state, they blamed no
 * record (kd_poison_aborted), and the same refused record aborted
 * transaction after transaction (test_kafka_acl, Describe only: up to 15
 * aborts, its innocent companions 5 s late). A call made in the abortable
 * state returns the stored error: begin_transaction, which outside READY
 * changes nothing (were it READY, the abort that follows ends the
 * transaction it began). */
static void learn_cause(kd_mode_ctx_t *m)
{
        eos_state_t *s = state_of(m);
        if (kd_eos_iso_cause_named(&s->iso))
                return;
        rd_kafka_error_t *error = kd_mode_txn_begin(m);
        if (!error)
                return;
        rd_kafka_resp_err_t stored = rd_kafka_error_code(error);
        rd_kafka_error_destroy(error);
        rd_kafka_resp_err_t seen = s->iso.cause;
        if (kd_eos_iso_learn_stored(&s->iso, stored))
                kd_log(m->conf, KDELAY_LOG_INFO,
                       "event=txn_abort_cause seen=%s cause=%s",
                       rd_kafka_err2name(seen), rd_kafka_err2name(stored));
}

/* Aborts the open transaction (if any) and forgets its fires. */
static kd_txn_result_t txn_abort(kd_mode_ctx_t *m, const char *why,
                                 int64_t deadline)
{
        eos_state_t *s = state_of(m);
        if (dead(s))
                return KD_TXN_EXIT;
        if (s->txn != KD_TXN_READY) {
                int64_t local = 0;
                learn_cause(m);
                txn_set_state(m, KD_TXN_ABORTING);
                for (;;) {
                        rd_kafka_error_t *error =
                            kd_mode_txn_abort(m, KD_TXN_CALL_TIMEOUT_MS);
                        if (!error)
                                break;
                        /* A commit still in progress: only a commit call
                         * ends it, and this answer comes at once (never
                         * retried, it would spin). */
                        int conflict = rd_kafka_error_code(error) ==
                                       RD_KAFKA_RESP_ERR__CONFLICT;
                        kd_txn_next_t next =
                            classify(m, error, "abort_transaction");
                        if (next == KD_NEXT_FATAL)
                                return KD_TXN_EXIT;
                        if (next != KD_NEXT_RETRY || conflict ||
                            past(m, retry_deadline(m, deadline, &local)))
                                return give_up(m, "abort_transaction");
                }
                /* Reports of the purged and the in-flight produces come
                 * now; what they say delivered belongs to the aborted
                 * transaction. */
                kd_mode_producer_serve_main(m);
                txn_set_state(m, KD_TXN_READY);
        }
        txn_over(m, 0, 0);
        kd_log(m->conf, KDELAY_LOG_WARNING,
               "event=txn_aborted why=%s cause=%s streak=%d action=rewind", why,
               rd_kafka_err2name(s->last_cause), s->abort_streak);
        /* A refused batch's sequence numbers stay used in librdkafka
         * 2.0.2: the next transaction writing that partition would abort
         * on the gap (OUT_OF_ORDER_SEQUENCE_NUMBER). A new producer starts
         * a new epoch first. */
        if (kd_perr_class(s->last_cause) == KD_PERR_RECORD)
                kd_mode_producer_reset_soon(m);
        return KD_TXN_ABORTED;
}

/* After a failed call: 1 to call again (retriable, and not past the
 * shutdown deadline), else *result says what the transaction came to. */
static int again(kd_mode_ctx_t *m, rd_kafka_error_t *error, const char *what,
                 int64_t deadline, kd_txn_result_t *result)
{
        kd_txn_next_t next = classify(m, error, what);
        if (next == KD_NEXT_FATAL) {
                *result = KD_TXN_EXIT;
                return 0;
        }
        /* A signal during a long outage ends the retries (abort). */
        int stopping =
            deadline ? kd_mode_mono_ms(m) >= deadline : kd_mode_stopping(m);
        if (next == KD_NEXT_RETRY && !stopping)
                return 1;
        *result = txn_abort(m, what, deadline);
        return 0;
}

/* Sends every partition's offset and done set into the transaction;
 * KD_TXN_COMMITTED when the commit may go ahead. */
static kd_txn_result_t send_offsets(kd_mode_ctx_t *m, int64_t deadline)
{
        int failed;
        rd_kafka_topic_partition_list_t *l =
            kd_eos_offsets_list(&state_of(m)->offsets, m->conf, &failed);
        if (failed)
                return txn_abort(m, "done_set", deadline);
        if (!l)
                return KD_TXN_COMMITTED;
        rd_kafka_consumer_group_metadata_t *cgmd = kd_mode_group_metadata(m);
        kd_txn_result_t r = KD_TXN_COMMITTED;
        rd_kafka_error_t *error;
        while ((error = kd_mode_txn_send_offsets(m, l, cgmd,
                                                 KD_TXN_CALL_TIMEOUT_MS)) &&
               again(m, error, "send_offsets_to_transaction", deadline, &r))
                ;
        rd_kafka_consumer_group_metadata_destroy(cgmd);
        rd_kafka_topic_partition_list_destroy(l);
        return error ? r : KD_TXN_COMMITTED;
}

/* Commits the open transaction (or, when only offsets moved, one holding
 * just them) with every partition's offset and done set. */
static kd_txn_result_t txn_commit(kd_mode_ctx_t *m, int64_t deadline)
{
        eos_state_t *s = state_of(m);
        if (dead(s))
                return KD_TXN_EXIT;
        if (s->txn == KD_TXN_ABORTABLE)
                return txn_abort(m, "delivery_failed", deadline);
        if (s->txn == KD_TXN_READY && !s->dirty)
                return KD_TXN_COMMITTED;
        if (txn_begin(m))
                return dead(s) ? KD_TXN_EXIT : txn_abort(m, "begin", deadline);
        int64_t t0 = kd_mode_mono_ms(m);
        txn_set_state(m, KD_TXN_COMMITTING);
        kd_txn_result_t r = send_offsets(m, deadline);
        if (r != KD_TXN_COMMITTED)
                return r;
        int64_t t1 = kd_mode_mono_ms(m);
        /* A commit that timed out goes on in the background, and only
         * another commit call ends it: an abort meanwhile is refused
         * (_CONFLICT). So a retriable failure is committed again, even
         * when stopping, until the retry deadline; past it the process
         * exits with the transaction unresolved (the next owner's
         * init_transactions ends it, committed or aborted, and its
         * records are redone from the committed offsets if aborted). */
        rd_kafka_error_t *error;
        int64_t local = 0;
        while ((error = kd_mode_txn_commit(m, KD_TXN_CALL_TIMEOUT_MS))) {
                kd_txn_next_t next = classify(m, error, "commit_transaction");
                if (next == KD_NEXT_FATAL)
                        return KD_TXN_EXIT;
                if (next == KD_NEXT_ABORT)
                        return txn_abort(m, "commit_transaction", deadline);
                if (past(m, retry_deadline(m, deadline, &local)))
                        return give_up(m, "commit_transaction");
        }
        if (s->txn == KD_TXN_ABORTABLE) /* a report failed meanwhile */
                return txn_abort(m, "delivery_failed", deadline);
        txn_set_state(m, KD_TXN_READY);
        kd_log(m->conf, KDELAY_LOG_DEBUG,
               "event=txn_committed fires=%zu ms=%lld offsets_ms=%lld "
               "solo=%d",
               s->fired.len, (long long)(kd_mode_mono_ms(m) - t0),
               (long long)(t1 - t0), s->iso.solo != 0);
        if (s->fired.len)
                fault_after_commit(m, s);
        txn_over(m, 1, 0);
        return KD_TXN_COMMITTED;
}

static void commit_cb(kd_timer_t *tm, void *arg)
{
        (void)tm;
        kd_mode_ctx_t *m = arg;
        /* The loop's timer: the shutdown's deadline, if one began. */
        if (txn_commit(m, kd_mode_shutdown_deadline(m)) == KD_TXN_ABORTED)
                kd_mode_rewind(m);
}

/* --- offsets and done sets (eos_offsets.c) -------------------------- */

static rd_kafka_resp_err_t
committed_of(void *arg, rd_kafka_topic_partition_list_t *parts, int timeout_ms)
{
        return kd_mode_committed(arg, parts, timeout_ms);
}

static int stopping_of(void *arg)
{
        return kd_mode_stopping(arg);
}

static int eos_assigning(kd_mode_ctx_t *m,
                         rd_kafka_topic_partition_list_t *parts)
{
        const kd_eos_consumer_t c = {committed_of, stopping_of, m};
        int r = kd_eos_offsets_fetch(&c, m->conf, parts);
        if (!r)
                return 0;
        if (r == -2)
                txn_set_state(m, KD_TXN_FATAL);
        kd_mode_stop(m);
        return -1;
}

static size_t eos_opened(kd_mode_ctx_t *m, kd_part_t *p,
                         const rd_kafka_topic_partition_t *tp)
{
        return kd_eos_offsets_opened(&state_of(m)->offsets, m->conf, p, tp);
}

static void eos_closed(kd_mode_ctx_t *m, kd_part_t *p)
{
        kd_eos_offsets_closed(&state_of(m)->offsets, p);
}

static int eos_handled(kd_mode_ctx_t *m, kd_part_t *p, int64_t offset)
{
        (void)m;
        return kd_eos_offsets_handled(p, offset);
}

static int eos_admit(const kd_mode_ctx_t *m, const kd_part_t *p,
                     const kd_task_t *t, int low)
{
        (void)m;
        return kd_eos_offsets_admit(p, t, low);
}

/* --- produce and settle ---------------------------------------------- */

/* A record whose solo transactions aborted as often as the limit allows
 * (once when the broker refused the record itself) goes elsewhere: the
 * fire stage dead-letters it with *err. */
static int eos_poisoned(kd_mode_ctx_t *m, const kd_task_t *t,
                        kd_task_state_t as, rd_kafka_resp_err_t *err)
{
        const kd_poison_entry_t *e =
            kd_poison_find(&state_of(m)->iso.poison, kd_poison_key(t, as));
        if (!e || e->solo_fails < m->conf->fwd_abort_limit)
                return 0;
        *err = e->err;
        return 1;
}

/* The offset of t is done as far as the transaction goes: its commit
 * carries it, and an abort rewinds it. */
static void moved(kd_mode_ctx_t *m)
{
        eos_state_t *s = state_of(m);
        if (!s->dirty) {
                s->dirty = 1;
                arm(m);
        }
}

static void eos_produced(kd_mode_ctx_t *m, kd_task_t *t)
{
        eos_state_t *s = state_of(m);
        if (!t->part)
                return;
        /* Its destination: a fire's target, else kdelay's own topics. */
        uint64_t where = t->state == KD_TASK_FIRING && t->rec.target
                             ? kd_poison_where(t->rec.target)
                             : 0;
        if (kd_poison_member(&s->iso.poison, kd_poison_key(t, t->state), where))
                kd_log(m->conf, KDELAY_LOG_ERROR,
                       "event=out_of_memory what=txn_member "
                       "action=not_accounted");
        if (kd_offtrack_done(&t->part->track, t->rec.offset) == 0)
                kd_mode_room(m);
        if (s->iso.solo)
                arm(m); /* commit it at once */
        if (t->state == KD_TASK_FIRING) {
                int ontime =
                    t->sent_ms - m->timers->wall_ahead_ms - t->rec.fire_at_ms <=
                    KD_TXN_LATE_MS;
                if (!s->has_fire || (ontime && !s->has_ontime)) {
                        s->has_fire = 1;
                        s->has_ontime |= ontime;
                        arm(m);
                }
        }
        moved(m);
}

static void eos_delivered(kd_mode_ctx_t *m, kd_task_t *t)
{
        eos_state_t *s = state_of(m);
        if (s->iso.alone) /* a record alone: this one? (hashed only then) */
                kd_eos_iso_delivered(&s->iso, kd_poison_key(t, t->state));
        /* FIRED (and counted), DEAD, once the transaction commits. */
        kd_settle_mark_t mark = kd_mode_mark(t, t->state);
        int dead = -1, lost = 0;
        /* The seq of its token rides along (t is freed below). */
        if (t->state == KD_TASK_FIRING)
                lost = kd_idbatch_push(mark == KD_MARK_JOURNAL ? &s->unclaimed
                                                               : &s->fired,
                                       t->rec.id, t->late_ms, (int64_t)t->seq);
        else if (t->state == KD_TASK_DEAD && mark == KD_MARK_ROW &&
                 (dead = kd_mode_dead_index(t->dead_reason)) >= 0)
                lost =
                    kd_idbatch_push(&s->dead, t->rec.id, dead, (int64_t)t->seq);
        if (lost) {
                char q[KD_LOG_QUOTED_MAX(KDELAY_ID_MAX)];
                kd_metric_inc(m->metrics, KD_M_MARKS_LOST);
                kd_log(m->conf, KDELAY_LOG_ERROR,
                       "event=out_of_memory what=%s id=%s",
                       t->state == KD_TASK_FIRING ? "fired_mark" : "dead_mark",
                       kd_log_quote(t->rec.id, q, sizeof(q)));
        }
        kd_mode_settle_done(m, t);
}

static int eos_failed(kd_mode_ctx_t *m, kd_task_t *t, rd_kafka_resp_err_t err,
                      int permanent)
{
        eos_state_t *s = state_of(m);
        (void)permanent;
        /* The transaction cannot commit: abort it, and read again from
         * the committed offsets. The first error that is not a purge is
         * its cause. */
        int oom;
        /* Refused alone: the culprit, whose refusal is learnt. */
        if (kd_eos_iso_failed(&s->iso, kd_poison_key(t, t->state),
                              kd_poison_likely(t, err), err,
                              m->conf->fwd_abort_limit, &oom))
                kd_refusals_learn(m->refusals, t, err, kd_mode_mono_ms(m),
                                  kd_mode_now(m));
        if (oom)
                kd_log(m->conf, KDELAY_LOG_ERROR,
                       "event=out_of_memory what=txn_blame "
                       "action=count_every_record");
        if (t->part && (s->txn == KD_TXN_OPEN || s->txn == KD_TXN_COMMITTING)) {
                char q[KD_LOG_QUOTED_MAX(KDELAY_ID_MAX)];
                txn_set_state(m, KD_TXN_ABORTABLE);
                kd_log(m->conf, KDELAY_LOG_WARNING,
                       "event=delivery_failed id=%s err=\"%s\" "
                       "action=abort_transaction",
                       t->rec.id ? kd_log_quote(t->rec.id, q, sizeof(q)) : "-",
                       rd_kafka_err2str(err));
                arm(m);
        }
        kd_mode_settle_release(m, t);
        return 1;
}

/* A journal record of the open transaction failed: it must not commit
 * (librdkafka fails the commit too), and its abort blames no record. */
static void eos_journal_failed(kd_mode_ctx_t *m, rd_kafka_resp_err_t err)
{
        eos_state_t *s = state_of(m);
        s->journal_failed = 1;
        kd_eos_iso_cause(&s->iso, err);
        if (s->txn == KD_TXN_OPEN || s->txn == KD_TXN_COMMITTING) {
                txn_set_state(m, KD_TXN_ABORTABLE);
                arm(m);
        }
}

static void eos_done(kd_mode_ctx_t *m, kd_task_t *t)
{
        if (t->part)
                moved(m);
        kd_mode_settle_done(m, t);
}

static int eos_revoke(kd_mode_ctx_t *m, int64_t deadline)
{
        /* The fires and hand-overs commit with the offsets while this
         * generation still owns the partitions; aborted, the next owner
         * redoes them from our last commit. Retries end at the deadline:
         * the whole group waits for this. */
        return txn_commit(m, deadline) == KD_TXN_ABORTED;
}

/* --- lifecycle ------------------------------------------------------- */

/* Exactly-once: a crashed instance's open transaction blocks
 * read_committed consumers of the targets until it times out (or the
 * instance restarts and fences it); keep that short. Produces must time
 * out within a transaction. A missing target must fail as unknown (5 s)
 * before a produce times out (10 s), so that it counts as permanent.
 * linger.ms 1, as at_least_once's main producer: 5 was tried (issue 44:
 * the commit flushes first, so on-time fires lose nothing, and the
 * broker's CPU per catch-up fire fell) and broke poison isolation under
 * torture: a batch of 25 records with one too large for its target
 * fails whole, the transaction aborts with every record in it, and the
 * run delivered 635 of 10,000 tasks. */
static const char *const eos_producer_defaults[] = {
    "linger.ms",
    "1",
    "partitioner",
    "murmur2_random",
    "transaction.timeout.ms",
    "10000",
    "message.timeout.ms",
    "10000",
    "topic.metadata.propagation.max.ms",
    "5000",
    "message.max.bytes",
    "1048588",
    NULL};

static kdelay_err_t eos_init(kd_mode_ctx_t *m, const char *const **defaults,
                             const char *const **forced, char *errstr,
                             size_t errstr_size)
{
        const kdelay_conf_t *c = m->conf;
        if (!c->fwd_txn_id && !c->fwd_instance)
                return kd_fail(KDELAY_ERR_CONFIG, errstr, errstr_size,
                               "forwarder.delivery=exactly_once needs a "
                               "stable forwarder.instance (or "
                               "forwarder.transactional_id), so that a "
                               "restarted forwarder fences its predecessor");
        eos_state_t *s = calloc(1, sizeof(*s));
        if (!s)
                return kd_fail(KDELAY_ERR_NO_MEMORY, errstr, errstr_size,
                               "out of memory");
        m->state = s;
        kd_timer_init(&s->commit, commit_cb, m);
        /* The whole id, never truncated: two instances must not share
         * one. */
        int n = c->fwd_txn_id ? snprintf(NULL, 0, "%s", c->fwd_txn_id)
                              : snprintf(NULL, 0, "%s-%s", c->fwd_group_id,
                                         c->fwd_instance);
        s->txn_id = n >= 0 ? malloc((size_t)n + 1) : NULL;
        if (!s->txn_id)
                return kd_fail(KDELAY_ERR_NO_MEMORY, errstr, errstr_size,
                               "out of memory");
        if (c->fwd_txn_id)
                snprintf(s->txn_id, (size_t)n + 1, "%s", c->fwd_txn_id);
        else
                snprintf(s->txn_id, (size_t)n + 1, "%s-%s", c->fwd_group_id,
                         c->fwd_instance);
        /* The library's forced pairs, and the transactional id. */
        size_t i = 0;
        for (; kd_producer_forced[i] && i + 3 < KD_ARRAY_LEN(s->forced); i++)
                s->forced[i] = kd_producer_forced[i];
        s->forced[i++] = "transactional.id";
        s->forced[i++] = s->txn_id;
        s->forced[i] = NULL;
        *defaults = eos_producer_defaults;
        *forced = s->forced;
        return KDELAY_OK;
}

static void eos_destroy(kd_mode_ctx_t *m)
{
        eos_state_t *s = m->state;
        if (!s)
                return;
        kd_timer_disarm(m->timers, &s->commit);
        kd_idbatch_free(&s->fired);
        kd_idbatch_free(&s->unclaimed);
        kd_idbatch_free(&s->dead);
        kd_eos_iso_destroy(&s->iso);
        free(s->txn_id);
        free(s);
        m->state = NULL;
}

/* init_transactions: fences an earlier process with the same
 * transactional.id and aborts its open transaction. */
static kdelay_err_t eos_start(kd_mode_ctx_t *m, char *errstr,
                              size_t errstr_size)
{
        for (;;) {
                rd_kafka_error_t *error =
                    kd_mode_txn_init(m, KD_TXN_CALL_TIMEOUT_MS);
                if (!error)
                        return KDELAY_OK;
                /* A broker still starting is worth waiting for. */
                int retry = rd_kafka_error_is_retriable(error) &&
                            !rd_kafka_error_is_fatal(error) &&
                            !kd_mode_stopping(m);
                if (!retry) {
                        kd_fail(KDELAY_ERR_KAFKA, errstr, errstr_size,
                                "init_transactions: %s",
                                rd_kafka_error_string(error));
                        rd_kafka_error_destroy(error);
                        return KDELAY_ERR_KAFKA;
                }
                classify(m, error, "init_transactions");
        }
}

/* A new producer (the old one failed for good): its init_transactions
 * fences the old and aborts the open transaction, whose records are redone
 * from the committed offsets. */
static kdelay_err_t eos_renewed(kd_mode_ctx_t *m, char *errstr,
                                size_t errstr_size)
{
        eos_state_t *s = state_of(m);
        /* No transaction open (a reset after an abort): nothing to redo. */
        int idle = s->txn == KD_TXN_READY && s->iso.poison.members_len == 0;
        kdelay_err_t err = eos_start(m, errstr, errstr_size);
        if (err)
                return err;
        if (idle)
                return KDELAY_OK;
        /* A transaction open on the old producer was aborted by the new
         * one's init_transactions. */
        if (s->txn == KD_TXN_OPEN || s->txn == KD_TXN_ABORTABLE ||
            s->txn == KD_TXN_COMMITTING)
                txn_set_state(m, KD_TXN_ABORTING);
        txn_set_state(m, KD_TXN_READY);
        /* Fenced, the open transaction aborted: nothing in it fired or
         * was dead-lettered (its dead marks too: the dead letters are
         * produced again after the rewind). */
        txn_over(m, 0, 1);
        kd_log(m->conf, KDELAY_LOG_WARNING,
               "event=txn_aborted why=producer_renewed cause=%s streak=%d "
               "action=rewind",
               rd_kafka_err2name(s->last_cause), s->abort_streak);
        kd_mode_rewind(m);
        return KDELAY_OK;
}

const kd_mode_ops_t kd_mode_eos = {
    .name = "exactly_once",
    .takeover_at_once = 1,
    .journal_with_fire = 1,
    .init = eos_init,
    .destroy = eos_destroy,
    .start = eos_start,
    .part_size = sizeof(kd_eos_part_t),
    .assigning = eos_assigning,
    .opened = eos_opened,
    .closed = eos_closed,
    .handled = eos_handled,
    .admit = eos_admit,
    .begin = eos_begin,
    .poisoned = eos_poisoned,
    .produced = eos_produced,
    .delivered = eos_delivered,
    .failed = eos_failed,
    .journal_failed = eos_journal_failed,
    .done = eos_done,
    .revoke = eos_revoke,
    .renewed = eos_renewed,
    /* Offsets go with the transactions; the consumer commits none
     * (committed: NULL). */
};

const kd_mode_ops_t *kd_mode_select(const kdelay_conf_t *conf)
{
        return conf->fwd_delivery == KD_DELIVERY_EXACTLY_ONCE ? &kd_mode_eos
                                                              : &kd_mode_alo;
}
