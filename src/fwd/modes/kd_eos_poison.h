/* SPDX-License-Identifier: Apache-2.0 */
/* exactly_once's poison isolation (eos_poison.c): its state
 * (kd_eos_iso_t: the records of aborted transactions, the record alone
 * or waiting for its turn, the open transaction's cause) and its
 * decisions: when a record of an aborted transaction (kd_poison.h) goes
 * alone, waits for its turn, or goes back to shared transactions as a
 * victim; what its solo aborts count and how long its next attempt waits;
 * which error is the open transaction's cause. The decisions are pure
 * functions over a small view of the transaction (kd_eos_view_t), the
 * record's entry and a clock reading; the state changes only through the
 * kd_eos_iso_ functions. No forwarder, no librdkafka handle: mode_eos.c,
 * the transaction state machine, keeps a kd_eos_iso_t, fills the view,
 * carries out the answer and logs (test_eos_poison tests each branch). */
#ifndef KD_EOS_POISON_H
#define KD_EOS_POISON_H

#include <stdint.h>

#include <librdkafka/rdkafka.h>

#include "kd_poison.h"

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

/* What the transaction looks like to a produce about to begin. */
typedef struct kd_eos_view {
        int txn_ready;        /* no transaction open */
        int txn_open;         /* one open, produces go into it */
        size_t members;       /* records produced into the open one */
        int reset_due;        /* a new producer is due (a reset) */
        int busy;             /* a record is alone or solo in the open one */
        size_t inflight;      /* produces in flight */
        uint64_t solo_wait;   /* a record waiting for its solo turn; 0 none */
        int64_t solo_wait_at; /* since when (monotonic) */
        int known_refusal;    /* the produce is a fire its target is known to
                                 refuse (kd_fire_now), and has a key */
        int64_t now;          /* monotonic */
} kd_eos_view_t;

/* What the produce does (kd_eos_decide's answer). */
typedef enum kd_eos_act {
        KD_EOS_SHARED, /* into the shared transaction (begins one) */
        KD_EOS_WAIT,   /* wait wait_ms and ask again */
        KD_EOS_TURN,   /* wait for its turn: it becomes the record waiting
                          (own_txn: for a transaction of its own), then as
                          KD_EOS_WAIT */
        KD_EOS_ALONE,  /* alone in the open transaction: a batch of its own */
        KD_EOS_SOLO,   /* alone in a transaction of its own */
        KD_EOS_KNOWN   /* a known refusal: its entry (made when missing)
                          records the refusal, then kd_eos_alone decides */
} kd_eos_act_t;

typedef struct kd_eos_decision {
        kd_eos_act_t act;
        int wait_ms; /* KD_EOS_WAIT, KD_EOS_TURN */
        int own_txn; /* KD_EOS_TURN */
} kd_eos_decision_t;

/* 1 when the record of e goes alone: its transactions aborted for a
 * cause that names a record or its target, or often for any cause. */
int kd_eos_solo_needed(const kd_poison_entry_t *e);

/* 1 while first, the likeliest culprit of e's group (NULL: none other),
 * has yet to go alone, and now (monotonic) is within e's wait for it. */
int kd_eos_first_to_come(const kd_poison_entry_t *e,
                         const kd_poison_entry_t *first, int64_t now);

/* 1 when e (a fire's record, blamed once with a refused batch, not
 * forgiven yet) may be a victim: what its target is known to refuse
 * (kd_refusals_explains) is to be asked. */
int kd_eos_victim_possible(const kd_poison_entry_t *e);

/* 1 when e is a victim: forgiven already, or possibly one and explained
 * (its target is known to refuse what refused its batch). */
int kd_eos_victim(const kd_poison_entry_t *e, int explained);

/* 1 when no produce may begin: a new producer is due and no transaction
 * is open, or a record is alone in the open one. Then none is asked
 * whether it is a victim either. */
int kd_eos_held_back(const kd_eos_view_t *v);

/* e's record (the entry of a refused batch's record, or of a known
 * refusal) goes alone into the open transaction once nothing else is in
 * flight (KD_EOS_ALONE), after the first of its group (first: NULL,
 * none other) has gone, else waits. */
kd_eos_decision_t kd_eos_alone(const kd_eos_view_t *v,
                               const kd_poison_entry_t *e,
                               const kd_poison_entry_t *first);

/* What a produce does: v, the transaction; e, its record's entry (NULL:
 * none, or a victim); first, the likeliest culprit of e's group (NULL:
 * none other). */
kd_eos_decision_t kd_eos_decide(const kd_eos_view_t *v,
                                const kd_poison_entry_t *e,
                                const kd_poison_entry_t *first);

/* What a failure of a record alone counts toward abort_limit: all of it
 * when the broker refused the record itself (it is the culprit); one when
 * the target refused it, when it broke the producer (fatal), or when it
 * failed while other transactions committed (commits, the count now, is
 * not e's commits_seen); none for the producer's own state or for a
 * cluster that commits nothing. */
int kd_eos_solo_weight(const kd_poison_entry_t *e, rd_kafka_resp_err_t cause,
                       int fatal, uint64_t commits, int abort_limit);

/* The reason a record keeps after a solo abort for cause (it had was): a
 * named cause stays over a vaguer later one. */
rd_kafka_resp_err_t kd_eos_solo_reason(rd_kafka_resp_err_t was,
                                       rd_kafka_resp_err_t cause);

/* How long the solo attempt after the solo_tries-th one waits. */
int64_t kd_eos_solo_backoff(int solo_tries, int64_t retry_max_ms);

/* 1 when err names a record or its target (kd_perr.h). */
int kd_eos_names_record(rd_kafka_resp_err_t err);

/* The open transaction's cause (cur; 0 none yet) after a delivery failed
 * with err: the first that is not a purge, or a refusal over a failure
 * of the producer's state seen first. */
rd_kafka_resp_err_t kd_eos_cause(rd_kafka_resp_err_t cur,
                                 rd_kafka_resp_err_t err);

/* --- the state ------------------------------------------------------- */

/* Poison isolation's state, beside the transaction's (mode_eos.c reads
 * it; only the functions below change it). Zeroed: nothing aborted. */
typedef struct kd_eos_iso {
        kd_poison_t poison; /* records of aborted transactions */
        uint64_t solo;      /* the key of the record alone in the open
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
        uint64_t commits;          /* transactions committed */
} kd_eos_iso_t;

/* Frees what s holds. */
void kd_eos_iso_destroy(kd_eos_iso_t *s);

/* v's fields that are s's: members, busy, solo_wait, solo_wait_at. */
void kd_eos_iso_view(const kd_eos_iso_t *s, kd_eos_view_t *v);

/* The record of key waits for its turn to go alone (KD_EOS_TURN; own_txn:
 * for a transaction of its own), unless another waits, for less than
 * KD_SOLO_WAIT_MAX_MS: 1 when it became the record waiting (the commit
 * timer is to be re-armed). */
int kd_eos_iso_wait_turn(kd_eos_iso_t *s, uint64_t key, int own_txn,
                         int64_t now);

/* e's record goes alone as act says (KD_EOS_ALONE: a batch of its own in
 * the open transaction; KD_EOS_SOLO: a transaction of its own). */
void kd_eos_iso_alone(kd_eos_iso_t *s, kd_poison_entry_t *e, kd_eos_act_t act);

/* A produce goes into the shared transaction: no record waits. */
void kd_eos_iso_shared(kd_eos_iso_t *s);

/* An error that ends the open transaction (a transactional call's, a
 * journal record's): its cause unless one is known. */
void kd_eos_iso_cause(kd_eos_iso_t *s, rd_kafka_resp_err_t err);

/* 1 when the open transaction's cause is known to name a record or its
 * target; else learn_stored takes stored (what the producer kept as its
 * abortable error) when stored does: 1 when it did. */
int kd_eos_iso_cause_named(const kd_eos_iso_t *s);
int kd_eos_iso_learn_stored(kd_eos_iso_t *s, rd_kafka_resp_err_t stored);

/* The produce of key was delivered: a record alone lets the others go. */
void kd_eos_iso_delivered(kd_eos_iso_t *s, uint64_t key);

/* The produce of key failed with err in the open transaction (likely:
 * kd_poison_likely): err may become its cause. Refused alone (err names
 * it), the record is the culprit: its failures count toward abort_limit,
 * its batch-mates are forgiven, and its entry is returned (the caller
 * learns the refusal); else NULL. A cause that names a record blames key;
 * *oom is set when that could not be recorded (then every record
 * counts). */
kd_poison_entry_t *kd_eos_iso_failed(kd_eos_iso_t *s, uint64_t key,
                                     int64_t likely, rd_kafka_resp_err_t err,
                                     int abort_limit, int *oom);

/* A solo transaction's abort, as kd_eos_iso_aborted counted it. */
typedef struct kd_eos_solo_abort {
        const kd_poison_entry_t *e; /* its record's; NULL: not a solo one */
        int counted;                /* toward abort_limit */
        int64_t backoff_ms;         /* its next attempt waits so long */
} kd_eos_solo_abort_t;

/* The open transaction committed: its records' entries go. */
void kd_eos_iso_committed(kd_eos_iso_t *s);

/* The open transaction aborted at now (fatal: a new producer ended it;
 * journal_failed: a journal record failed, no record's fault): its cause
 * (_FAIL when none was seen) is returned. Its records are accounted
 * (kd_poison_aborted), or, when it was a solo one, the record's failures
 * count (kd_eos_solo_weight, toward abort_limit) and its next attempt
 * waits (kd_eos_solo_backoff, up to retry_max_ms): *sa says so. */
rd_kafka_resp_err_t kd_eos_iso_aborted(kd_eos_iso_t *s, int journal_failed,
                                       int fatal, int abort_limit,
                                       int64_t retry_max_ms, int64_t now,
                                       kd_eos_solo_abort_t *sa);

/* The open transaction is over (after committed or aborted): no record
 * alone, no cause. */
void kd_eos_iso_over(kd_eos_iso_t *s);

#endif
