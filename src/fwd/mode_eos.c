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
 * alone and, failing alone, dead-lettered. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kd_log.h"
#include "kd_mode.h"
#include "kd_perr.h"
#include "kd_poison.h"
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

/* The done set above the commit point is committed as offset metadata, at
 * most Kafka's default offset.metadata.max.bytes (4096). Its bitmap form
 * needs one character per 6 offsets from the commit point to the last
 * done one, so a record this far above the commit point waits (the
 * partition pauses) until older records are handled; completions in any
 * order never make the set larger. */
#define KD_OFFSET_METADATA_MAX 4096
#define KD_DONE_SPAN_MAX       24000

/* A record in a transaction that aborted comes back after the rewind
 * (kd_poison.h counts such records). It is produced alone, in a solo
 * transaction, after one abort whose cause names a record or its target
 * (kd_perr.h), or after this many of any other cause; while a solo
 * transaction is open the other produces wait this long between looks,
 * and a record waiting for its solo turn holds new transactions back at
 * most this long. */
#define KD_SOLO_AFTER_ABORTS 5
#define KD_SOLO_WAIT_MS      5
#define KD_SOLO_WAIT_MAX_MS  1000
/* The solo attempt after a solo abort waits this long, doubled each time
 * up to forwarder.retry_max, so that the others commit meanwhile. */
#define KD_SOLO_BACKOFF_MS 250

typedef enum kd_txn_state {
        KD_TXN_READY,      /* none open */
        KD_TXN_OPEN,       /* begun: produces go into it */
        KD_TXN_ABORTABLE,  /* a produce in it failed: abort and rewind */
        KD_TXN_COMMITTING, /* sending offsets, committing */
        KD_TXN_ABORTING,   /* aborting */
        KD_TXN_RENEW,      /* the producer failed for good: a new one
                              (kd_fwd_producer_renew) ends the transaction */
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

/* A partition as this mode sees it (p->mode). */
typedef struct eos_part {
        kd_part_t *part;              /* borrowed: the partition */
        struct eos_part *prev, *next; /* eos_state_t.parts */
        int64_t committed;            /* last commit point sent, -1 none */
        /* Records above the committed offset that an earlier owner handled
         * (its committed done set); skipped when read. */
        kd_offrange_t *skip; /* owned */
        size_t skip_cnt, skip_pos;
} eos_part_t;

typedef struct eos_state {
        eos_part_t *parts;  /* the open partitions */
        kd_txn_state_t txn; /* changed only by txn_set_state */
        int has_fire;       /* the open transaction holds a fire */
        int has_ontime;     /* ... one within KD_TXN_LATE_MS of its time */
        int dirty;          /* offsets moved since the last commit */
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

/* The only place the transaction state changes: transitions outside the
 * table are a bug, logged, and end the process (fatal). */
static void txn_set_state(kd_fwd_t *f, kd_txn_state_t to)
{
        eos_state_t *s = state_of(f);
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
        kd_txn_state_t from = s->txn;
        if (from == to)
                return;
        if (!(allowed[from] & (1u << to))) {
                kd_log(f->conf, KDELAY_LOG_ERROR,
                       "event=bug what=txn_state from=%s to=%s action=exit",
                       txn_state_names[from], txn_state_names[to]);
                to = KD_TXN_FATAL;
        }
        kd_log(f->conf, KDELAY_LOG_DEBUG, "event=txn_state from=%s to=%s",
               txn_state_names[from], txn_state_names[to]);
        s->txn = to;
        if (to == KD_TXN_RENEW) {
                f->kafka.renew = 1; /* the loop's next turn */
                /* One record's doing (it is dead-lettered next): not a
                 * reason to give up on renewals. */
                f->kafka.renew_for_record = s->solo != 0;
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
        rd_kafka_error_t *error = rd_kafka_begin_transaction(f->kafka.producer);
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

/* 1 when the record of e goes alone: its transactions aborted for a
 * cause that names a record or its target, or often for any cause. */
static int solo_needed(const kd_poison_entry_t *e)
{
        if (!e)
                return 0;
        if (e->solo_tries > 0)
                return 1;
        kd_perr_class_t c = kd_perr_class(e->err);
        int named = c == KD_PERR_RECORD || c == KD_PERR_TARGET;
        return e->aborts >= (named ? 1 : KD_SOLO_AFTER_ABORTS);
}

/* Holds the other produces back while a record waits for its turn to go
 * alone (at most KD_SOLO_WAIT_MS at a time, KD_SOLO_WAIT_MAX_MS in all);
 * begin's answer. */
static int wait_turn(kd_fwd_t *f, uint64_t key, int own_txn)
{
        eos_state_t *s = state_of(f);
        int64_t now = kd_fwd_mono_ms(f);
        if (!s->solo_wait || now - s->solo_wait_mono >= KD_SOLO_WAIT_MAX_MS) {
                s->solo_wait = key;
                s->solo_wait_mono = now;
                s->solo_wait_txn = own_txn;
                arm(f);
        }
        return KD_SOLO_WAIT_MS;
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

/* 1 while the likeliest culprit of e's group has yet to go alone (found,
 * it clears the others): a while, if it is still to come. now: monotonic. */
static int first_to_come(eos_state_t *s, const kd_poison_entry_t *e,
                         int64_t now)
{
        const kd_poison_entry_t *first =
            e->first != e->key ? kd_poison_find(&s->poison, e->first) : NULL;
        return first && first->group == e->group && !first->solo_tries &&
               now < e->first_until;
}

/* t's record (entry e), of a batch the broker refused, goes alone into
 * the open transaction: once nothing else is in flight, and with the
 * others held back until its report, so that it is a batch of its own.
 * Refused alone, it is the culprit (eos_failed); delivered, it commits
 * with the others. A round trip, not a transaction, per record.
 * begin's answer. */
static int alone_begin(kd_fwd_t *f, const kd_task_t *t, kd_poison_entry_t *e)
{
        eos_state_t *s = state_of(f);
        if (first_to_come(s, e, kd_fwd_mono_ms(f)))
                return KD_SOLO_WAIT_MS;
        if (f->kafka.inflight > 0)
                return wait_turn(f, e->key, 0);
        if (txn_begin(f))
                return -1;
        s->alone = e->key;
        if (s->solo_wait == e->key)
                s->solo_wait = 0;
        e->solo_tries++;
        log_alone(f, "batch", t, e);
        return 0;
}

/* t's record (entry e) goes alone: in a transaction of its own once the
 * open one, if it holds others, has committed. begin's answer. */
static int solo_begin(kd_fwd_t *f, const kd_task_t *t, kd_poison_entry_t *e)
{
        eos_state_t *s = state_of(f);
        int64_t now = kd_fwd_mono_ms(f);
        if (now < e->not_before_mono)
                return (int)(e->not_before_mono - now);
        /* Of a transaction a target refused: a record of the destination
         * fewest went to goes first (refused alone, it clears those that
         * went elsewhere). */
        if (first_to_come(s, e, now))
                return KD_SOLO_WAIT_MS;
        int alone = s->txn == KD_TXN_READY ||
                    (s->txn == KD_TXN_OPEN && s->poison.members_len == 0);
        if (!alone)
                return wait_turn(f, e->key, 1);
        if (txn_begin(f))
                return -1;
        s->solo = e->key;
        if (s->solo_wait == e->key)
                s->solo_wait = 0;
        e->solo_tries++;
        log_alone(f, "transaction", t, e);
        arm(f);
        return 0;
}

/* 1 when the record of e (t's fire), blamed once with a refused batch,
 * is known to have been a victim: its target is known to refuse what
 * refused that batch, and not t (else it was dead-lettered unproduced).
 * It goes back to shared batches, until it aborts one again. */
static int victim(kd_fwd_t *f, const kd_task_t *t, kd_poison_entry_t *e)
{
        if (!e->forgiven &&
            (e->solo_tries || e->aborts != 1 ||
             kd_perr_class(e->err) != KD_PERR_RECORD ||
             !kd_refusals_explains(&f->refusals, t, e->err, kd_fwd_mono_ms(f))))
                return 0;
        e->forgiven = 1;
        return 1;
}

/* Records of transactions that aborted go alone (solo_begin); while one
 * is alone in the open transaction, or waits for its turn, the others
 * wait. */
static int eos_begin(kd_fwd_t *f, const kd_task_t *t, kd_task_state_t as,
                     rd_kafka_t **rk)
{
        eos_state_t *s = state_of(f);
        *rk = f->kafka.producer;
        /* A new producer is due (after an abort for a refused record): no
         * transaction opens on the old one meanwhile, so that the loop
         * replaces it with nothing open. */
        if (f->kafka.reset && s->txn == KD_TXN_READY)
                return KD_SOLO_WAIT_MS;
        if (s->solo || s->alone)
                return KD_SOLO_WAIT_MS;
        kd_poison_entry_t *e =
            t ? kd_poison_find(&s->poison, kd_poison_key(t, as)) : NULL;
        if (e && as == KD_TASK_FIRING && victim(f, t, e))
                e = NULL;
        /* A replay its target is known to refuse (kd_fire_now) goes
         * alone, as the record of a refused batch does: delivered, it
         * commits with the others; refused, it is the culprit and
         * aborts this transaction only. */
        if (t && as == KD_TASK_FIRING && t->known_refusal && !solo_needed(e) &&
            kd_poison_key(t, as)) {
                if (!e)
                        e = kd_poison_get(&s->poison, kd_poison_key(t, as));
                if (kd_perr_class(e->err) != KD_PERR_RECORD)
                        e->err = t->known_refusal;
                return alone_begin(f, t, e);
        }
        /* A refused batch's record needs only a batch of its own; a
         * refusal of a whole transaction (or an unknown cause) names no
         * record, so each goes in a transaction of its own. */
        if (solo_needed(e))
                return kd_perr_class(e->err) == KD_PERR_RECORD
                           ? alone_begin(f, t, e)
                           : solo_begin(f, t, e);
        if (s->solo_wait &&
            kd_fwd_mono_ms(f) - s->solo_wait_mono < KD_SOLO_WAIT_MAX_MS)
                return KD_SOLO_WAIT_MS; /* a solo record goes first */
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

/* What a failure of a record alone counts toward forwarder.abort_limit:
 * all of it when the broker refused the record itself (it is the
 * culprit); one when the target refused it, when it broke the producer
 * (a transaction whose only partition was refused can leave librdkafka
 * unable to abort it), or when it failed while other transactions
 * committed (the cluster works: the record is what fails); none for the
 * producer's own state or for a cluster that commits nothing. */
static int solo_weight(const kd_fwd_t *f, const kd_poison_entry_t *e,
                       rd_kafka_resp_err_t cause, int fatal)
{
        const eos_state_t *s = state_of(f);
        kd_perr_class_t c = kd_perr_class(cause);
        if (c == KD_PERR_RECORD)
                return f->conf->fwd_abort_limit;
        if (c == KD_PERR_TARGET || fatal)
                return 1;
        /* A transactional call failing on the producer's state (_STATE
         * from send_offsets_to_transaction: the partition was refused
         * while it ran) after the record's target refused it: the same
         * refusal, seen through the state it left. */
        kd_perr_class_t was = kd_perr_class(e->err);
        if (c == KD_PERR_PRODUCER &&
            (was == KD_PERR_TARGET || was == KD_PERR_RECORD))
                return 1;
        return (c == KD_PERR_TRANSIENT || c == KD_PERR_CLUSTER) &&
               s->commits != e->commits_seen;
}

/* The solo transaction of key aborted because of cause (fatal: it broke
 * the producer): the record's failures count (solo_weight), and its next
 * solo attempt waits, longer each time, so that the others commit. */
static void solo_aborted(kd_fwd_t *f, uint64_t key, rd_kafka_resp_err_t cause,
                         int fatal)
{
        eos_state_t *s = state_of(f);
        kd_poison_entry_t *e = kd_poison_get(&s->poison, key);
        int counts = solo_weight(f, e, cause, fatal);
        e->solo_fails += counts;
        /* Its target refused it alone: the records of its transaction
         * that went elsewhere were its victims. */
        if (kd_perr_class(cause) == KD_PERR_TARGET)
                kd_poison_forgive_elsewhere(&s->poison, e->group, e->key,
                                            e->where);
        e->commits_seen = s->commits;
        /* A named cause stays the record's reason over a vaguer later
         * one (an abort the coordinator refuses after the refusal). */
        kd_perr_class_t c = kd_perr_class(cause), was = kd_perr_class(e->err);
        if (c == KD_PERR_RECORD || c == KD_PERR_TARGET ||
            (was != KD_PERR_RECORD && was != KD_PERR_TARGET))
                e->err = cause;
        int shift = e->solo_tries < 6 ? e->solo_tries - 1 : 5;
        int64_t backoff = (int64_t)KD_SOLO_BACKOFF_MS
                          << (shift > 0 ? shift : 0);
        if (backoff > f->conf->fwd_retry_max_ms)
                backoff = f->conf->fwd_retry_max_ms;
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

static int names_record(rd_kafka_resp_err_t err)
{
        kd_perr_class_t c = kd_perr_class(err);
        return c == KD_PERR_RECORD || c == KD_PERR_TARGET;
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
        if (names_record(s->cause))
                return;
        rd_kafka_error_t *error = rd_kafka_begin_transaction(f->kafka.producer);
        if (!error)
                return;
        rd_kafka_resp_err_t stored = rd_kafka_error_code(error);
        rd_kafka_error_destroy(error);
        if (!names_record(stored))
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
                            f->kafka.producer, KD_TXN_CALL_TIMEOUT_MS);
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
                while (rd_kafka_poll(f->kafka.producer, 0) > 0)
                        ;
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
                f->kafka.reset = 1;
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

static rd_kafka_topic_partition_list_t *offsets(kd_fwd_t *f, int *failed);

/* Sends every partition's offset and done set into the transaction;
 * KD_TXN_COMMITTED when the commit may go ahead. */
static kd_txn_result_t send_offsets(kd_fwd_t *f, int64_t deadline)
{
        int failed;
        rd_kafka_topic_partition_list_t *l = offsets(f, &failed);
        if (failed)
                return txn_abort(f, "done_set", deadline);
        if (!l)
                return KD_TXN_COMMITTED;
        rd_kafka_consumer_group_metadata_t *cgmd =
            rd_kafka_consumer_group_metadata(f->kafka.consumer);
        kd_txn_result_t r = KD_TXN_COMMITTED;
        rd_kafka_error_t *error;
        while ((error = rd_kafka_send_offsets_to_transaction(
                    f->kafka.producer, l, cgmd, KD_TXN_CALL_TIMEOUT_MS)) &&
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
        while ((error = rd_kafka_commit_transaction(f->kafka.producer,
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

/* --- offsets and done sets ------------------------------------------- */

/* Offsets and done sets of the assigned partitions; NULL when none has a
 * commit point, or when *failed (a done set that cannot be written: the
 * transaction must abort). Caller destroys it. */
static rd_kafka_topic_partition_list_t *offsets(kd_fwd_t *f, int *failed)
{
        rd_kafka_topic_partition_list_t *l =
            rd_kafka_topic_partition_list_new(8);
        *failed = !l;
        for (eos_part_t *ep = l ? state_of(f)->parts : NULL; ep;
             ep = ep->next) {
                const kd_part_t *p = ep->part;
                /* Runs the previous owner committed that we have not read
                 * yet stay in the set. */
                const kd_offrange_t *tail = ep->skip + ep->skip_pos;
                size_t tail_cnt = ep->skip_cnt - ep->skip_pos;
                int64_t cp = kd_offtrack_commit_after(&p->track, ep->committed,
                                                      &tail, &tail_cnt);
                if (cp < 0)
                        continue; /* nothing read, nothing committed */
                char meta[KD_OFFSET_METADATA_MAX];
                if (kd_offtrack_encode(&p->track, cp, tail, tail_cnt, meta,
                                       sizeof(meta))) {
                        /* Bounded by KD_DONE_SPAN_MAX; committing less would
                         * let the next owner redo what is done here. */
                        char qt[300];
                        kd_log(f->conf, KDELAY_LOG_ERROR,
                               "event=done_set_too_large topic=%s "
                               "partition=%d commit=%lld action=abort",
                               kd_log_quote(p->topic, qt, sizeof(qt)),
                               p->partition, (long long)cp);
                        *failed = 1;
                        break;
                }
                rd_kafka_topic_partition_t *tp =
                    rd_kafka_topic_partition_list_add(l, p->topic,
                                                      p->partition);
                tp->offset = cp;
                tp->metadata = strdup(meta);
                tp->metadata_size = tp->metadata ? strlen(meta) : 0;
                if (!tp->metadata)
                        *failed = 1;
                ep->committed = cp;
        }
        if (!l || l->cnt == 0 || *failed) {
                if (l)
                        rd_kafka_topic_partition_list_destroy(l);
                return NULL;
        }
        return l;
}

/* The committed offsets and done sets of parts, read with require-stable
 * semantics (a read_committed consumer waits for pending transactional
 * commits), written into parts as the offsets to start at. Retried until
 * it succeeds; -1 only when stopping or fatal. */
static int eos_assigning(kd_fwd_t *f, rd_kafka_topic_partition_list_t *parts)
{
        if (parts->cnt == 0)
                return 0;
        for (int attempt = 1;; attempt++) {
                rd_kafka_resp_err_t err =
                    rd_kafka_committed(f->kafka.consumer, parts, 10000);
                if (!err)
                        return 0;
                kd_log(f->conf, KDELAY_LOG_WARNING,
                       "event=committed_fetch_failed attempt=%d err=\"%s\"",
                       attempt, rd_kafka_err2str(err));
                if (*f->stop || attempt >= 30) {
                        if (attempt >= 30)
                                txn_set_state(f, KD_TXN_FATAL);
                        *f->stop = 1;
                        return -1;
                }
        }
}

/* p opens at tp's committed offset; tp's metadata, our done set, names
 * the records above it that the previous owner handled. */
static size_t eos_opened(kd_fwd_t *f, kd_part_t *p,
                         const rd_kafka_topic_partition_t *tp)
{
        eos_state_t *s = state_of(f);
        eos_part_t *ep = p->mode;
        ep->part = p;
        ep->committed = tp->offset;
        ep->next = s->parts;
        if (s->parts)
                s->parts->prev = ep;
        s->parts = ep;
        if (tp->offset < 0 || !tp->metadata)
                return 0;
        if (kd_offtrack_decode(tp->metadata, tp->metadata_size, tp->offset,
                               &ep->skip, &ep->skip_cnt)) {
                /* Not ours (another tool committed here): nothing to skip. */
                char qt[300];
                kd_log(f->conf, KDELAY_LOG_WARNING,
                       "event=done_set_unreadable topic=%s partition=%d "
                       "offset=%lld",
                       kd_log_quote(p->topic, qt, sizeof(qt)), p->partition,
                       (long long)tp->offset);
                return 0;
        }
        size_t n = 0;
        for (size_t k = 0; k < ep->skip_cnt; k++)
                n += (size_t)(ep->skip[k].last - ep->skip[k].first + 1);
        return n;
}

static void eos_closed(kd_fwd_t *f, kd_part_t *p)
{
        eos_state_t *s = state_of(f);
        eos_part_t *ep = p->mode;
        if (ep->prev)
                ep->prev->next = ep->next;
        else
                s->parts = ep->next;
        if (ep->next)
                ep->next->prev = ep->prev;
        ep->prev = ep->next = NULL;
        free(ep->skip);
        ep->skip = NULL;
        ep->skip_cnt = ep->skip_pos = 0;
}

/* Records come in offset order: the done set is walked once. */
static int eos_handled(kd_fwd_t *f, kd_part_t *p, int64_t offset)
{
        (void)f;
        eos_part_t *ep = p->mode;
        while (ep->skip_pos < ep->skip_cnt &&
               ep->skip[ep->skip_pos].last < offset)
                ep->skip_pos++;
        return ep->skip_pos < ep->skip_cnt &&
               ep->skip[ep->skip_pos].first <= offset;
}

static int eos_admit(const kd_fwd_t *f, const kd_part_t *p, const kd_task_t *t,
                     int low)
{
        (void)f;
        return t->rec.offset - kd_offtrack_commit_point(&p->track) <=
               (low ? KD_DONE_SPAN_MAX / 2 : KD_DONE_SPAN_MAX);
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
            kd_idq_push(t->unclaimed ? &s->unclaimed : &s->fired, t->rec.id,
                        t->late_ms)) {
                char q[KD_LOG_QUOTED_MAX(KDELAY_ID_MAX)];
                kd_metric_inc(&f->metrics, KD_M_MARKS_LOST);
                kd_log(f->conf, KDELAY_LOG_ERROR,
                       "event=out_of_memory what=fired_mark id=%s",
                       kd_log_quote(t->rec.id, q, sizeof(q)));
        }
        int dead = kd_settle_dead_index(t->dead_reason);
        if (t->state == KD_TASK_DEAD && t->fire_failed && !t->unclaimed &&
            dead >= 0 && kd_idq_push(&s->dead, t->rec.id, dead)) {
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
        kd_perr_class_t c = kd_perr_class(err);
        int named = c == KD_PERR_RECORD || c == KD_PERR_TARGET;
        /* A refusal is the cause even when a transactional call failed
         * on its account first (send_offsets: _STATE). */
        if (c != KD_PERR_PURGED &&
            (!s->cause ||
             (named && kd_perr_class(s->cause) == KD_PERR_PRODUCER)))
                s->cause = err;
        if (s->alone && s->alone == kd_poison_key(t, t->state)) {
                s->alone = 0;
                if (named) {
                        /* Refused alone: the culprit. */
                        kd_poison_entry_t *e = kd_poison_get(
                            &s->poison, kd_poison_key(t, t->state));
                        e->solo_fails += solo_weight(f, e, err, 0);
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
                    f->kafka.producer, KD_TXN_CALL_TIMEOUT_MS);
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
    .part_size = sizeof(eos_part_t),
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
