/* SPDX-License-Identifier: Apache-2.0 */
/* Delivery mode exactly_once (kd_mode.h): every hop, fire and dead letter
 * goes into a Kafka transaction together with the source partitions'
 * offsets and done sets (consume-transform-produce, as librdkafka's
 * examples/transactions.c). A transaction that holds an on-time fire
 * commits at the next loop turn; one that holds only a catch-up's fires
 * (KD_TXN_LATE_MS), hops, dead letters or offsets after
 * forwarder.transaction_interval. docs/reliability.md states the
 * guarantee. Owns the transaction state (one enum, changed only through
 * txn_set_state), its commit timer, the fires of the open transaction and
 * the accounting of the records of aborted ones (kd_poison.h), which ends
 * an abort loop: a record that keeps its transactions aborting is produced
 * alone and, failing alone, dead-lettered. Its other two parts: when a
 * record goes alone, waits or is a victim is decided by eos_poison.c
 * (pure, kd_eos_poison.h), carried out here; the partitions' offsets and
 * done sets are eos_offsets.c's (kd_eos_offsets.h). */
#include <assert.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kd_eos_offsets.h"
#include "kd_eos_poison.h"
#include "kd_log.h"
#include "kd_mode.h"
#include "kd_perr.h"
#include "kd_poison.h"
#include "kd_producer.h"
#include "kd_settle.h"
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
        kd_idq_t fired;     /* fired in the open transaction: id, lateness */
        kd_idq_t unclaimed; /* fired without a claim in it (their journal
                               records are in it too): id, lateness */
        int journal_failed; /* a journal record of it failed: its abort
                               is no record's fault */
        kd_idq_t dead;      /* claimed and dead-lettered in it: id, reason
                               index (kd_settle_dead_reasons) */
        kd_timer_t commit;
        const char *forced[16]; /* producer properties, into txn_id */
        char *txn_id;           /* owned */
        kd_poison_t poison;     /* records of aborted transactions */
        uint64_t solo;          /* the key of the record alone in the open
                                   transaction; 0 = a shared one */
        uint64_t alone;     /* the key of a record in flight alone (a batch of
                               its own) in the open shared transaction, until
                               its report; 0 = none */
        uint64_t solo_wait; /* a record waiting for its solo turn */
        int64_t solo_wait_mono;    /* since when */
        int solo_wait_txn;         /* it waits for a transaction of its own (not
                                      only for the produces in flight) */
        rd_kafka_resp_err_t cause; /* why the open transaction fails: the
                                      first error seen; 0 = none yet */
        rd_kafka_resp_err_t last_cause; /* of the last abort */
        uint64_t commits;               /* transactions committed */
        int abort_streak;               /* aborted since the last commit */
        unsigned fire_commits;          /* committed transactions with fires */
} eos_state_t;

/* forwarder.fault.kill_after_commit: the crash between a commit and the
 * FIRED marks, on demand (tests of kdelayctl audit). */
static void fault_after_commit(kd_fwd_t *f, eos_state_t *s)
{
        int n = f->conf->fwd_fault_kill_after_commit;
        if (n <= 0 || ++s->fire_commits != (unsigned)n)
                return;
        kd_log(f->conf, KDELAY_LOG_WARNING,
               "event=fault_injected what=kill_after_commit commit=%d "
               "fires=%zu",
               n, s->fired.len);
        raise(SIGKILL);
}

static eos_state_t *state_of(const kd_fwd_t *f)
{
        return f->mode_state;
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
static void txn_set_state(kd_fwd_t *f, kd_txn_state_t to)
{
        eos_state_t *s = state_of(f);
        kd_txn_state_t from = s->txn;
        if (from == to)
                return;
        if (!txn_move_allowed(from, to)) {
                kd_metric_inc(&f->metrics, KD_M_TXN_STATE_BUGS);
                kd_log(f->conf, KDELAY_LOG_ERROR,
                       "event=bug what=txn_state from=%s to=%s action=exit",
                       txn_state_names[from], txn_state_names[to]);
                assert(!"illegal transaction state move");
                to = KD_TXN_FATAL;
        }
        kd_log(f->conf, KDELAY_LOG_DEBUG, "event=txn_state from=%s to=%s",
               txn_state_names[from], txn_state_names[to]);
        s->txn = to;
        if (to == KD_TXN_RENEW) {
                /* The loop's next turn. One record's doing (it is
                 * dead-lettered next): not a reason to give up on
                 * renewals. */
                kd_producer_renew_soon(f, s->solo != 0);
        }
        if (to == KD_TXN_FATAL) {
                kd_fwd_fatal(f, "transaction");
        }
}

/* --- the transaction ------------------------------------------------- */

static void commit_cb(kd_timer_t *tm, void *arg);

/* When the transaction is due for its commit; re-armed whenever an input
 * changes. */
static void arm(kd_fwd_t *f)
{
        eos_state_t *s = state_of(f);
        int64_t at = INT64_MAX, interval = f->conf->fwd_txn_interval_ms;
        if (s->txn == KD_TXN_ABORTABLE)
                at = 0;
        else if (s->txn == KD_TXN_OPEN && s->solo_wait && s->solo_wait_txn)
                at = 0; /* a record waits for a transaction of its own */
        else if (s->txn == KD_TXN_OPEN && (s->has_ontime || s->solo))
                at = s->last_mono + KD_TXN_SETTLE_MS;
        else if (s->txn == KD_TXN_OPEN && s->has_fire)
                at = s->last_mono + interval; /* a catch-up's fires only */
        else if (s->txn == KD_TXN_OPEN)
                at = s->opened_mono + interval;
        else if (s->txn == KD_TXN_READY && s->dirty)
                at = s->last_mono + interval;
        if (at == INT64_MAX)
                kd_timer_disarm(&f->timers, &s->commit);
        else if (kd_timer_arm(&f->timers, &s->commit, KD_CLOCK_MONO, at,
                              commit_cb, f))
                kd_fwd_oom(f, "txn_timer");
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
static kd_txn_next_t classify(kd_fwd_t *f, rd_kafka_error_t *error,
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
        kd_log(f->conf,
               next == KD_NEXT_RETRY ? KDELAY_LOG_WARNING : KDELAY_LOG_ERROR,
               "event=txn_error what=%s err=%s code=%s action=%s", what,
               kd_log_quote(rd_kafka_error_string(error), q, sizeof(q)),
               rd_kafka_error_name(error),
               next == KD_NEXT_FATAL   ? "renew_producer"
               : next == KD_NEXT_RETRY ? "retry"
                                       : "abort");
        rd_kafka_error_destroy(error);
        eos_state_t *s = state_of(f);
        if (next != KD_NEXT_RETRY && !s->cause)
                s->cause = code; /* the transaction's records learn why */
        if (next == KD_NEXT_FATAL)
                txn_set_state(f, KD_TXN_RENEW);
        return next;
}

/* Begins a transaction unless one is open; -1 when none can be. */
static int txn_begin(kd_fwd_t *f)
{
        eos_state_t *s = state_of(f);
        if (s->txn == KD_TXN_OPEN)
                return 0;
        if (s->txn != KD_TXN_READY)
                return -1; /* failed or fatal: deferred until the abort */
        rd_kafka_error_t *error =
            rd_kafka_begin_transaction(kd_producer_main(f));
        if (error) {
                classify(f, error, "begin_transaction");
                return -1;
        }
        txn_set_state(f, KD_TXN_OPEN);
        s->has_fire = s->has_ontime = 0;
        s->opened_mono = kd_fwd_mono_ms(f);
        arm(f);
        return 0;
}

/* --- poison isolation: the decisions are eos_poison.c's ------------- */

/* The record of key waits for its turn to go alone, holding the other
 * produces back (at most KD_SOLO_WAIT_MS at a time, KD_SOLO_WAIT_MAX_MS
 * in all); own_txn: for a transaction of its own. */
static void wait_turn(kd_fwd_t *f, uint64_t key, int own_txn)
{
        eos_state_t *s = state_of(f);
        int64_t now = kd_fwd_mono_ms(f);
        if (!s->solo_wait || now - s->solo_wait_mono >= KD_SOLO_WAIT_MAX_MS) {
                s->solo_wait = key;
                s->solo_wait_mono = now;
                s->solo_wait_txn = own_txn;
                arm(f);
        }
}

static void log_alone(kd_fwd_t *f, const char *how, const kd_task_t *t,
                      const kd_poison_entry_t *e)
{
        char q[KD_LOG_QUOTED_MAX(KDELAY_ID_MAX)];
        kd_metric_inc(&f->metrics, KD_M_SOLO);
        kd_log(f->conf, KDELAY_LOG_NOTICE,
               "event=txn_solo how=%s id=%s aborts=%d solo_aborts=%d err=%s",
               how, t->rec.id ? kd_log_quote(t->rec.id, q, sizeof(q)) : "-",
               e->aborts, e->solo_fails, rd_kafka_err2name(e->err));
}

/* t's record (entry e) goes alone, as d says (KD_EOS_ALONE: into the open
 * transaction, a batch of its own, the others held back until its report;
 * refused alone, it is the culprit (eos_failed), delivered, it commits
 * with the others. KD_EOS_SOLO: in a transaction of its own). */
static int go_alone(kd_fwd_t *f, const kd_task_t *t, kd_poison_entry_t *e,
                    kd_eos_act_t act)
{
        eos_state_t *s = state_of(f);
        if (txn_begin(f))
                return -1;
        if (act == KD_EOS_ALONE)
                s->alone = e->key;
        else
                s->solo = e->key;
        if (s->solo_wait == e->key)
                s->solo_wait = 0;
        e->solo_tries++;
        log_alone(f, act == KD_EOS_ALONE ? "batch" : "transaction", t, e);
        if (act == KD_EOS_SOLO)
                arm(f);
        return 0;
}

/* Records of transactions that aborted go alone; while one is alone in
 * the open transaction, or waits for its turn, the others wait
 * (kd_eos_decide). */
static int eos_begin(kd_fwd_t *f, const kd_task_t *t, kd_task_state_t as,
                     rd_kafka_t **rk)
{
        eos_state_t *s = state_of(f);
        *rk = kd_producer_main(f);
        uint64_t key = t ? kd_poison_key(t, as) : 0;
        kd_poison_entry_t *e = t ? kd_poison_find(&s->poison, key) : NULL;
        kd_eos_view_t v = {
            .txn_ready = s->txn == KD_TXN_READY,
            .txn_open = s->txn == KD_TXN_OPEN,
            .members = s->poison.members_len,
            .reset_due = kd_producer_reset_due(f),
            .busy = s->solo || s->alone,
            .inflight = kd_producer_inflight(f),
            .solo_wait = s->solo_wait,
            .solo_wait_at = s->solo_wait_mono,
            .known_refusal =
                t && as == KD_TASK_FIRING && t->known_refusal && key,
        };
        if (kd_eos_held_back(&v))
                return KD_SOLO_WAIT_MS;
        /* Blamed once with a refused batch, known a victim: it goes back
         * to shared batches, until it aborts one again. */
        if (e && as == KD_TASK_FIRING &&
            kd_eos_victim(e, kd_eos_victim_possible(e) &&
                                 kd_refusals_explains(&f->refusals, t, e->err,
                                                      kd_fwd_mono_ms(f)))) {
                e->forgiven = 1;
                e = NULL;
        }
        v.now = kd_fwd_mono_ms(f);
        const kd_poison_entry_t *first =
            e && e->first != e->key ? kd_poison_find(&s->poison, e->first)
                                    : NULL;
        kd_eos_decision_t d = kd_eos_decide(&v, e, first);
        if (d.act == KD_EOS_KNOWN) {
                /* A replay its target is known to refuse (kd_fire_now)
                 * goes alone, as the record of a refused batch does. */
                e = kd_poison_get(&s->poison, key);
                if (kd_perr_class(e->err) != KD_PERR_RECORD)
                        e->err = t->known_refusal;
                first = e->first != e->key
                            ? kd_poison_find(&s->poison, e->first)
                            : NULL;
                d = kd_eos_alone(&v, e, first);
        }
        switch (d.act) {
        case KD_EOS_WAIT:
                return d.wait_ms;
        case KD_EOS_TURN:
                wait_turn(f, e->key, d.own_txn);
                return d.wait_ms;
        case KD_EOS_ALONE:
        case KD_EOS_SOLO:
                return go_alone(f, t, e, d.act);
        case KD_EOS_SHARED:
        case KD_EOS_KNOWN:
                break;
        }
        s->solo_wait = 0;
        return txn_begin(f);
}

/* The transaction state cannot be recovered here: exit for a restart. */
static kd_txn_result_t give_up(kd_fwd_t *f, const char *what)
{
        kd_log(f->conf, KDELAY_LOG_ERROR,
               "event=txn_unrecoverable what=%s action=exit", what);
        txn_set_state(f, KD_TXN_FATAL);
        return KD_TXN_EXIT;
}

/* When retries of a transactional call end: deadline (a shutdown's or a
 * revoke's; 0 = none), or, when a signal came before a shutdown began,
 * shutdown_timeout after the first retry that saw it (*local: 0 until
 * then); 0 = no end (not stopping). */
static int64_t retry_deadline(kd_fwd_t *f, int64_t deadline, int64_t *local)
{
        if (deadline)
                return deadline;
        if (!*f->stop)
                return 0;
        if (!*local)
                *local = kd_fwd_mono_ms(f) + f->conf->fwd_shutdown_timeout_ms;
        return *local;
}

/* deadline (monotonic; 0 = none) has come. */
static int past(const kd_fwd_t *f, int64_t deadline)
{
        return deadline && kd_fwd_mono_ms(f) >= deadline;
}

/* The solo transaction of key aborted because of cause (fatal: it broke
 * the producer): the record's failures count (kd_eos_solo_weight), and its next
 * solo attempt waits, longer each time, so that the others commit. */
static void solo_aborted(kd_fwd_t *f, uint64_t key, rd_kafka_resp_err_t cause,
                         int fatal)
{
        eos_state_t *s = state_of(f);
        kd_poison_entry_t *e = kd_poison_get(&s->poison, key);
        int counts = kd_eos_solo_weight(e, cause, fatal, s->commits,
                                        f->conf->fwd_abort_limit);
        e->solo_fails += counts;
        /* Its target refused it alone: the records of its transaction
         * that went elsewhere were its victims. */
        if (kd_perr_class(cause) == KD_PERR_TARGET)
                kd_poison_forgive_elsewhere(&s->poison, e->group, e->key,
                                            e->where);
        e->commits_seen = s->commits;
        e->err = kd_eos_solo_reason(e->err, cause);
        int64_t backoff =
            kd_eos_solo_backoff(e->solo_tries, f->conf->fwd_retry_max_ms);
        e->not_before_mono = kd_fwd_mono_ms(f) + backoff;
        kd_log(f->conf, KDELAY_LOG_WARNING,
               "event=txn_solo_aborted err=%s counted=%d solo_aborts=%d "
               "limit=%d retry_in_ms=%lld",
               rd_kafka_err2name(cause), counts, e->solo_fails,
               f->conf->fwd_abort_limit, (long long)backoff);
}

/* The open transaction is over, committed or not: the one place that
 * ends its bookkeeping. Committed, what it fired and dead-lettered is
 * marked FIRED or DEAD; aborted (or ended by a new producer), none of it
 * happened, and its records are accounted (kd_poison.h). */
static void txn_over(kd_fwd_t *f, int committed, int fatal)
{
        eos_state_t *s = state_of(f);
        if (committed) {
                for (size_t i = 0; i < s->fired.len; i++)
                        kd_settle_fired(f, s->fired.ids[i], s->fired.vals[i],
                                        0);
                for (size_t i = 0; i < s->unclaimed.len; i++)
                        kd_settle_fired(f, s->unclaimed.ids[i],
                                        s->unclaimed.vals[i], 1);
                for (size_t i = 0; i < s->dead.len; i++)
                        kd_settle_dead(f, s->dead.ids[i],
                                       kd_settle_dead_reasons[s->dead.vals[i]]);
                kd_poison_committed(&s->poison);
                s->commits++;
                s->abort_streak = 0;
                kd_metric_inc(&f->metrics, KD_M_TXN_COMMITS);
        } else {
                rd_kafka_resp_err_t cause =
                    s->cause ? s->cause : RD_KAFKA_RESP_ERR__FAIL;
                kd_metric_add(&f->metrics, KD_M_RECORD_ABORTS,
                              s->poison.members_len);
                if (s->journal_failed) {
                        kd_poison_members_clear(&s->poison);
                } else if (s->solo) {
                        kd_poison_members_clear(&s->poison);
                        solo_aborted(f, s->solo, cause, fatal);
                } else {
                        kd_poison_aborted(&s->poison, cause, kd_fwd_mono_ms(f));
                }
                s->last_cause = cause;
                s->abort_streak++;
                kd_metric_inc(&f->metrics, KD_M_TXN_ABORTS);
        }
        kd_metric_set(&f->metrics, KD_M_TXN_ABORT_STREAK, s->abort_streak);
        kd_idq_clear(&s->fired);
        kd_idq_clear(&s->unclaimed);
        kd_idq_clear(&s->dead);
        s->journal_failed = 0;
        s->has_fire = s->has_ontime = 0;
        s->dirty = 0; /* committed, or the rewind starts from the commit */
        s->solo = 0;
        s->alone = 0;
        s->cause = 0;
        s->last_mono = kd_fwd_mono_ms(f);
        arm(f);
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
static void learn_cause(kd_fwd_t *f)
{
        eos_state_t *s = state_of(f);
        if (kd_eos_names_record(s->cause))
                return;
        rd_kafka_error_t *error =
            rd_kafka_begin_transaction(kd_producer_main(f));
        if (!error)
                return;
        rd_kafka_resp_err_t stored = rd_kafka_error_code(error);
        rd_kafka_error_destroy(error);
        if (!kd_eos_names_record(stored))
                return;
        kd_log(f->conf, KDELAY_LOG_INFO,
               "event=txn_abort_cause seen=%s cause=%s",
               rd_kafka_err2name(s->cause), rd_kafka_err2name(stored));
        s->cause = stored;
}

/* Aborts the open transaction (if any) and forgets its fires. */
static kd_txn_result_t txn_abort(kd_fwd_t *f, const char *why, int64_t deadline)
{
        eos_state_t *s = state_of(f);
        if (dead(s))
                return KD_TXN_EXIT;
        if (s->txn != KD_TXN_READY) {
                int64_t local = 0;
                learn_cause(f);
                txn_set_state(f, KD_TXN_ABORTING);
                for (;;) {
                        rd_kafka_error_t *error = rd_kafka_abort_transaction(
                            kd_producer_main(f), KD_TXN_CALL_TIMEOUT_MS);
                        if (!error)
                                break;
                        /* A commit still in progress: only a commit call
                         * ends it, and this answer comes at once (never
                         * retried, it would spin). */
                        int conflict = rd_kafka_error_code(error) ==
                                       RD_KAFKA_RESP_ERR__CONFLICT;
                        kd_txn_next_t next =
                            classify(f, error, "abort_transaction");
                        if (next == KD_NEXT_FATAL)
                                return KD_TXN_EXIT;
                        if (next != KD_NEXT_RETRY || conflict ||
                            past(f, retry_deadline(f, deadline, &local)))
                                return give_up(f, "abort_transaction");
                }
                /* Reports of the purged and the in-flight produces come
                 * now; what they say delivered belongs to the aborted
                 * transaction. */
                kd_producer_serve_main(f);
                txn_set_state(f, KD_TXN_READY);
        }
        txn_over(f, 0, 0);
        kd_log(f->conf, KDELAY_LOG_WARNING,
               "event=txn_aborted why=%s cause=%s streak=%d action=rewind", why,
               rd_kafka_err2name(s->last_cause), s->abort_streak);
        /* A refused batch's sequence numbers stay used in librdkafka
         * 2.0.2: the next transaction writing that partition would abort
         * on the gap (OUT_OF_ORDER_SEQUENCE_NUMBER). A new producer starts
         * a new epoch first. */
        if (kd_perr_class(s->last_cause) == KD_PERR_RECORD)
                kd_producer_reset_soon(f);
        return KD_TXN_ABORTED;
}

/* After a failed call: 1 to call again (retriable, and not past the
 * shutdown deadline), else *result says what the transaction came to. */
static int again(kd_fwd_t *f, rd_kafka_error_t *error, const char *what,
                 int64_t deadline, kd_txn_result_t *result)
{
        kd_txn_next_t next = classify(f, error, what);
        if (next == KD_NEXT_FATAL) {
                *result = KD_TXN_EXIT;
                return 0;
        }
        /* A signal during a long outage ends the retries (abort). */
        int stopping = deadline ? kd_fwd_mono_ms(f) >= deadline : *f->stop;
        if (next == KD_NEXT_RETRY && !stopping)
                return 1;
        *result = txn_abort(f, what, deadline);
        return 0;
}

/* Sends every partition's offset and done set into the transaction;
 * KD_TXN_COMMITTED when the commit may go ahead. */
static kd_txn_result_t send_offsets(kd_fwd_t *f, int64_t deadline)
{
        int failed;
        rd_kafka_topic_partition_list_t *l =
            kd_eos_offsets_list(&state_of(f)->offsets, f->conf, &failed);
        if (failed)
                return txn_abort(f, "done_set", deadline);
        if (!l)
                return KD_TXN_COMMITTED;
        rd_kafka_consumer_group_metadata_t *cgmd =
            rd_kafka_consumer_group_metadata(f->consumer.rk);
        kd_txn_result_t r = KD_TXN_COMMITTED;
        rd_kafka_error_t *error;
        while ((error = rd_kafka_send_offsets_to_transaction(
                    kd_producer_main(f), l, cgmd, KD_TXN_CALL_TIMEOUT_MS)) &&
               again(f, error, "send_offsets_to_transaction", deadline, &r))
                ;
        rd_kafka_consumer_group_metadata_destroy(cgmd);
        rd_kafka_topic_partition_list_destroy(l);
        return error ? r : KD_TXN_COMMITTED;
}

/* Commits the open transaction (or, when only offsets moved, one holding
 * just them) with every partition's offset and done set. */
static kd_txn_result_t txn_commit(kd_fwd_t *f, int64_t deadline)
{
        eos_state_t *s = state_of(f);
        if (dead(s))
                return KD_TXN_EXIT;
        if (s->txn == KD_TXN_ABORTABLE)
                return txn_abort(f, "delivery_failed", deadline);
        if (s->txn == KD_TXN_READY && !s->dirty)
                return KD_TXN_COMMITTED;
        if (txn_begin(f))
                return dead(s) ? KD_TXN_EXIT : txn_abort(f, "begin", deadline);
        int64_t t0 = kd_fwd_mono_ms(f);
        txn_set_state(f, KD_TXN_COMMITTING);
        kd_txn_result_t r = send_offsets(f, deadline);
        if (r != KD_TXN_COMMITTED)
                return r;
        int64_t t1 = kd_fwd_mono_ms(f);
        /* A commit that timed out goes on in the background, and only
         * another commit call ends it: an abort meanwhile is refused
         * (_CONFLICT). So a retriable failure is committed again, even
         * when stopping, until the retry deadline; past it the process
         * exits with the transaction unresolved (the next owner's
         * init_transactions ends it, committed or aborted, and its
         * records are redone from the committed offsets if aborted). */
        rd_kafka_error_t *error;
        int64_t local = 0;
        while ((error = rd_kafka_commit_transaction(kd_producer_main(f),
                                                    KD_TXN_CALL_TIMEOUT_MS))) {
                kd_txn_next_t next = classify(f, error, "commit_transaction");
                if (next == KD_NEXT_FATAL)
                        return KD_TXN_EXIT;
                if (next == KD_NEXT_ABORT)
                        return txn_abort(f, "commit_transaction", deadline);
                if (past(f, retry_deadline(f, deadline, &local)))
                        return give_up(f, "commit_transaction");
        }
        if (s->txn == KD_TXN_ABORTABLE) /* a report failed meanwhile */
                return txn_abort(f, "delivery_failed", deadline);
        txn_set_state(f, KD_TXN_READY);
        kd_log(f->conf, KDELAY_LOG_DEBUG,
               "event=txn_committed fires=%zu ms=%lld offsets_ms=%lld "
               "solo=%d",
               s->fired.len, (long long)(kd_fwd_mono_ms(f) - t0),
               (long long)(t1 - t0), s->solo != 0);
        if (s->fired.len)
                fault_after_commit(f, s);
        txn_over(f, 1, 0);
        return KD_TXN_COMMITTED;
}

static void commit_cb(kd_timer_t *tm, void *arg)
{
        (void)tm;
        kd_fwd_t *f = arg;
        /* The loop's timer: the shutdown's deadline, if one began. */
        if (txn_commit(f, f->shutdown_deadline) == KD_TXN_ABORTED)
                f->hooks.rewind(f);
}

/* --- offsets and done sets (eos_offsets.c) -------------------------- */

static int eos_assigning(kd_fwd_t *f, rd_kafka_topic_partition_list_t *parts)
{
        int r = kd_eos_offsets_fetch(f->consumer.rk, f->conf, parts, f->stop);
        if (!r)
                return 0;
        if (r == -2)
                txn_set_state(f, KD_TXN_FATAL);
        *f->stop = 1;
        return -1;
}

static size_t eos_opened(kd_fwd_t *f, kd_part_t *p,
                         const rd_kafka_topic_partition_t *tp)
{
        return kd_eos_offsets_opened(&state_of(f)->offsets, f->conf, p, tp);
}

static void eos_closed(kd_fwd_t *f, kd_part_t *p)
{
        kd_eos_offsets_closed(&state_of(f)->offsets, p);
}

static int eos_handled(kd_fwd_t *f, kd_part_t *p, int64_t offset)
{
        (void)f;
        return kd_eos_offsets_handled(p, offset);
}

static int eos_admit(const kd_fwd_t *f, const kd_part_t *p, const kd_task_t *t,
                     int low)
{
        (void)f;
        return kd_eos_offsets_admit(p, t, low);
}

/* --- produce and settle ---------------------------------------------- */

/* A record whose solo transactions aborted as often as the limit allows
 * (once when the broker refused the record itself) goes elsewhere: the
 * fire stage dead-letters it with *err. */
static int eos_poisoned(kd_fwd_t *f, const kd_task_t *t, kd_task_state_t as,
                        rd_kafka_resp_err_t *err)
{
        const kd_poison_entry_t *e =
            kd_poison_find(&state_of(f)->poison, kd_poison_key(t, as));
        if (!e || e->solo_fails < f->conf->fwd_abort_limit)
                return 0;
        *err = e->err;
        return 1;
}

/* The offset of t is done as far as the transaction goes: its commit
 * carries it, and an abort rewinds it. */
static void moved(kd_fwd_t *f)
{
        eos_state_t *s = state_of(f);
        if (!s->dirty) {
                s->dirty = 1;
                arm(f);
        }
}

static void eos_produced(kd_fwd_t *f, kd_task_t *t)
{
        eos_state_t *s = state_of(f);
        if (!t->part)
                return;
        /* Its destination: a fire's target, else kdelay's own topics. */
        uint64_t where = t->state == KD_TASK_FIRING && t->rec.target
                             ? kd_poison_where(t->rec.target)
                             : 0;
        if (kd_poison_member(&s->poison, kd_poison_key(t, t->state), where))
                kd_log(f->conf, KDELAY_LOG_ERROR,
                       "event=out_of_memory what=txn_member "
                       "action=not_accounted");
        if (kd_offtrack_done(&t->part->track, t->rec.offset) == 0)
                f->hooks.room(f);
        if (s->solo)
                arm(f); /* commit it at once */
        if (t->state == KD_TASK_FIRING) {
                int ontime =
                    t->sent_ms - f->timers.wall_ahead_ms - t->rec.fire_at_ms <=
                    KD_TXN_LATE_MS;
                if (!s->has_fire || (ontime && !s->has_ontime)) {
                        s->has_fire = 1;
                        s->has_ontime |= ontime;
                        arm(f);
                }
        }
        moved(f);
}

static void eos_delivered(kd_fwd_t *f, kd_task_t *t)
{
        eos_state_t *s = state_of(f);
        if (s->alone && s->alone == kd_poison_key(t, t->state))
                s->alone = 0; /* the others go on */
        /* FIRED (and counted) once the transaction commits. */
        if (t->state == KD_TASK_FIRING &&
            kd_idq_push(kd_settle_mark(t, t->state) == KD_MARK_JOURNAL
                            ? &s->unclaimed
                            : &s->fired,
                        t->rec.id, t->late_ms)) {
                char q[KD_LOG_QUOTED_MAX(KDELAY_ID_MAX)];
                kd_metric_inc(&f->metrics, KD_M_MARKS_LOST);
                kd_log(f->conf, KDELAY_LOG_ERROR,
                       "event=out_of_memory what=fired_mark id=%s",
                       kd_log_quote(t->rec.id, q, sizeof(q)));
        }
        int dead = kd_settle_dead_index(t->dead_reason);
        if (t->state == KD_TASK_DEAD &&
            kd_settle_mark(t, t->state) == KD_MARK_ROW && dead >= 0 &&
            kd_idq_push(&s->dead, t->rec.id, dead)) {
                char q[KD_LOG_QUOTED_MAX(KDELAY_ID_MAX)];
                kd_metric_inc(&f->metrics, KD_M_MARKS_LOST);
                kd_log(f->conf, KDELAY_LOG_ERROR,
                       "event=out_of_memory what=dead_mark id=%s",
                       kd_log_quote(t->rec.id, q, sizeof(q)));
        }
        kd_settle_done(f, t);
}

static int eos_failed(kd_fwd_t *f, kd_task_t *t, rd_kafka_resp_err_t err,
                      int permanent)
{
        eos_state_t *s = state_of(f);
        (void)permanent;
        /* The transaction cannot commit: abort it, and read again from
         * the committed offsets. The first error that is not a purge is
         * its cause. */
        int named = kd_eos_names_record(err);
        s->cause = kd_eos_cause(s->cause, err);
        if (s->alone && s->alone == kd_poison_key(t, t->state)) {
                s->alone = 0;
                if (named) {
                        /* Refused alone: the culprit. */
                        kd_poison_entry_t *e = kd_poison_get(
                            &s->poison, kd_poison_key(t, t->state));
                        e->solo_fails += kd_eos_solo_weight(
                            e, err, 0, s->commits, f->conf->fwd_abort_limit);
                        e->err = err;
                        /* Its batch-mates were its victims. */
                        kd_poison_forgive(&s->poison, e->group, e->key);
                        kd_refusals_learn(&f->refusals, t, err,
                                          kd_fwd_mono_ms(f), kd_fwd_now(f));
                }
        }
        if (named && kd_poison_blame(&s->poison, kd_poison_key(t, t->state),
                                     kd_poison_likely(t, err)))
                kd_log(f->conf, KDELAY_LOG_ERROR,
                       "event=out_of_memory what=txn_blame "
                       "action=count_every_record");
        if (t->part && (s->txn == KD_TXN_OPEN || s->txn == KD_TXN_COMMITTING)) {
                char q[KD_LOG_QUOTED_MAX(KDELAY_ID_MAX)];
                txn_set_state(f, KD_TXN_ABORTABLE);
                kd_log(f->conf, KDELAY_LOG_WARNING,
                       "event=delivery_failed id=%s err=\"%s\" "
                       "action=abort_transaction",
                       t->rec.id ? kd_log_quote(t->rec.id, q, sizeof(q)) : "-",
                       rd_kafka_err2str(err));
                arm(f);
        }
        kd_settle_release(f, t);
        return 1;
}

/* A journal record of the open transaction failed: it must not commit
 * (librdkafka fails the commit too), and its abort blames no record. */
static void eos_journal_failed(kd_fwd_t *f, rd_kafka_resp_err_t err)
{
        eos_state_t *s = state_of(f);
        s->journal_failed = 1;
        if (!s->cause)
                s->cause = err;
        if (s->txn == KD_TXN_OPEN || s->txn == KD_TXN_COMMITTING) {
                txn_set_state(f, KD_TXN_ABORTABLE);
                arm(f);
        }
}

static void eos_done(kd_fwd_t *f, kd_task_t *t)
{
        if (t->part)
                moved(f);
        kd_settle_done(f, t);
}

static int eos_revoke(kd_fwd_t *f, int64_t deadline)
{
        /* The fires and hand-overs commit with the offsets while this
         * generation still owns the partitions; aborted, the next owner
         * redoes them from our last commit. Retries end at the deadline:
         * the whole group waits for this. */
        return txn_commit(f, deadline) == KD_TXN_ABORTED;
}

/* --- lifecycle ------------------------------------------------------- */

/* Exactly-once: a crashed instance's open transaction blocks
 * read_committed consumers of the targets until it times out (or the
 * instance restarts and fences it); keep that short. Produces must time
 * out within a transaction. A missing target must fail as unknown (5 s)
 * before a produce times out (10 s), so that it counts as permanent. */
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

static kdelay_err_t eos_init(kd_fwd_t *f, const char *const **defaults,
                             const char *const **forced, char *errstr,
                             size_t errstr_size)
{
        const kdelay_conf_t *c = f->conf;
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
        f->mode_state = s;
        kd_timer_init(&s->commit, commit_cb, f);
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

static void eos_destroy(kd_fwd_t *f)
{
        eos_state_t *s = f->mode_state;
        if (!s)
                return;
        kd_timer_disarm(&f->timers, &s->commit);
        kd_idq_clear(&s->fired);
        kd_idq_clear(&s->unclaimed);
        kd_idq_clear(&s->dead);
        kd_poison_destroy(&s->poison);
        free(s->txn_id);
        free(s);
        f->mode_state = NULL;
}

/* init_transactions: fences an earlier process with the same
 * transactional.id and aborts its open transaction. */
static kdelay_err_t eos_start(kd_fwd_t *f, char *errstr, size_t errstr_size)
{
        for (;;) {
                rd_kafka_error_t *error = rd_kafka_init_transactions(
                    kd_producer_main(f), KD_TXN_CALL_TIMEOUT_MS);
                if (!error)
                        return KDELAY_OK;
                /* A broker still starting is worth waiting for. */
                int retry = rd_kafka_error_is_retriable(error) &&
                            !rd_kafka_error_is_fatal(error) && !*f->stop;
                if (!retry) {
                        kd_fail(KDELAY_ERR_KAFKA, errstr, errstr_size,
                                "init_transactions: %s",
                                rd_kafka_error_string(error));
                        rd_kafka_error_destroy(error);
                        return KDELAY_ERR_KAFKA;
                }
                classify(f, error, "init_transactions");
        }
}

/* A new producer (the old one failed for good): its init_transactions
 * fences the old and aborts the open transaction, whose records are redone
 * from the committed offsets. */
static kdelay_err_t eos_renewed(kd_fwd_t *f, char *errstr, size_t errstr_size)
{
        eos_state_t *s = state_of(f);
        /* No transaction open (a reset after an abort): nothing to redo. */
        int idle = s->txn == KD_TXN_READY && s->poison.members_len == 0;
        kdelay_err_t err = eos_start(f, errstr, errstr_size);
        if (err)
                return err;
        if (idle)
                return KDELAY_OK;
        /* A transaction open on the old producer was aborted by the new
         * one's init_transactions. */
        if (s->txn == KD_TXN_OPEN || s->txn == KD_TXN_ABORTABLE ||
            s->txn == KD_TXN_COMMITTING)
                txn_set_state(f, KD_TXN_ABORTING);
        txn_set_state(f, KD_TXN_READY);
        /* Fenced, the open transaction aborted: nothing in it fired or
         * was dead-lettered (its dead marks too: the dead letters are
         * produced again after the rewind). */
        txn_over(f, 0, 1);
        kd_log(f->conf, KDELAY_LOG_WARNING,
               "event=txn_aborted why=producer_renewed cause=%s streak=%d "
               "action=rewind",
               rd_kafka_err2name(s->last_cause), s->abort_streak);
        f->hooks.rewind(f);
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
