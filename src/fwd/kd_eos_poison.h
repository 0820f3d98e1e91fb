/* SPDX-License-Identifier: Apache-2.0 */
/* exactly_once's poison isolation, its decisions (eos_poison.c): when a
 * record of an aborted transaction (kd_poison.h) goes alone, waits for
 * its turn, or goes back to shared transactions as a victim; what its
 * solo aborts count and how long its next attempt waits; which error is
 * the open transaction's cause. Pure functions over a small view of the
 * transaction (kd_eos_view_t), the record's entry and a clock reading: no
 * forwarder, no librdkafka handle. mode_eos.c fills the view and carries
 * out the answer (test_eos_poison tests each branch). */
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

#endif
