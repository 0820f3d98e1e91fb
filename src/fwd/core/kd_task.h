/* SPDX-License-Identifier: Apache-2.0 */
/* A task in the forwarder: the record as read from Kafka (kd_taskrec_t,
 * what is persisted and produced again) inside its in-memory bookkeeping
 * (kd_task_t), as beanstalkd keeps its Jobrec inside the Job. Plus the
 * FIFO of tasks (kd_taskq_t) used by backlogs, the claim queue and the
 * pacing queue. */
#ifndef KD_TASK_H
#define KD_TASK_H

#include <stddef.h>
#include <stdint.h>

#include <librdkafka/rdkafka.h>

#include "kd_timer.h"

/* The dead-letter reason of a task whose target forwarder.allowed_targets
 * does not allow (the wire format's reasons come from kd_wire.h). */
#define KD_DEAD_TARGET_FORBIDDEN "target-forbidden"

typedef struct kd_part kd_part_t;
struct kd_store_req;

/* The tier record, copied out of the consumed message. */
typedef struct kd_taskrec {
        int64_t offset;
        int64_t append_ms; /* LogAppendTime of the source record */
        void *key; /* in the task's own block (kd_task_new); NULL = null key */
        size_t key_len;
        void *value; /* in the task's own block; NULL = null value */
        size_t value_len;
        rd_kafka_headers_t *hdrs; /* owned (taken from the message); may be
                                     NULL; NULL while lent to its fire
                                     (kd_task_t.hdrs, KD_HDRS_LENT) */
        /* Decoded from the headers (NULL/0 when the record is malformed). */
        char *id;      /* owned, NUL-terminated: one block with target */
        size_t id_len; /* strlen(id) */
        char *target;  /* inside id's block, NUL-terminated */
        int64_t fire_at_ms;
        int64_t not_before_ms; /* kdelay-not-before: sent back by a rate
                                  limit until then; 0 = none */
} kd_taskrec_t;

/* What a task is waiting for. Changed only through kd_task_set_state
 * (kd_lifecycle.h), which checks each move against the table there. */
typedef enum kd_task_state {
        KD_TASK_NEW,      /* read, not yet decoded (kd_task_new) */
        KD_TASK_QUEUED,   /* read, in its partition's backlog */
        KD_TASK_HELD,     /* timer at fire_at - claim_ahead, then (a
                             rate-limited target) in its rule's queue */
        KD_TASK_CLAIMING, /* in the claim queue */
        KD_TASK_CLAIMED,  /* FIRING in the fate store, timer at fire_at */
        KD_TASK_PACED,    /* due, claimed, waiting for its target rate
                             limit's fires' bucket or max_fire_rate */
        KD_TASK_FIRING,   /* produced to its target, awaiting the report */
        KD_TASK_HOPPING,  /* produced to a tier, awaiting the report */
        KD_TASK_DEAD,     /* produced to the dead topic, awaiting report */
        KD_TASK_RETRY,    /* a produce failed; timer at the retry time */
        KD_TASK_JOURNAL,  /* fired without a claim, its journal record
                             produced, awaiting the report (at_least_once) */
        KD_TASK_INTENT    /* to fire without a claim: its journal record of
                             intent produced, awaiting the report; the fire
                             follows it (at_least_once) */
} kd_task_state_t;
#define KD_TASK_STATES (KD_TASK_INTENT + 1)

/* The one place a task waits in, which kd_task_detach (kd_lifecycle.h)
 * takes it out of. Written by the lifecycle alone (kd_lifecycle.h: the
 * queues, the timer, the named moves of the claim and fire stages). Its
 * partition's task list, the held set's accounting, a lease renewal out for it
 * (req while claimed) and the apply of its fire from memory (mem_fire) are not
 * places: they last from its read (its claim, its record's refusal) to its end.
 */
typedef enum kd_task_where {
        KD_WHERE_NONE,      /* nowhere: being handled, or handled */
        KD_WHERE_BACKLOG,   /* its partition's backlog (QUEUED) */
        KD_WHERE_TIMER,     /* its own timer: the hold, a foreign-claim
                               wait, the fire, a retry (HELD, CLAIMED,
                               RETRY) */
        KD_WHERE_CLAIM_Q,   /* the claim queue (CLAIMING) */
        KD_WHERE_CLAIM_REQ, /* a claim or takeover request out on the
                               fate store, t->req (CLAIMING) */
        KD_WHERE_PACE_Q,    /* the pacing queue (PACED) */
        KD_WHERE_TARGET_Q,  /* a target rate limit's queue, t->rlim
                               (HELD: unclaimed) */
        KD_WHERE_FIRE_Q,    /* a target rate limit's fire queue, t->rlim
                               (PACED: claimed, due) */
        KD_WHERE_FLIGHT     /* produced, its delivery report to come
                               (FIRING, HOPPING, DEAD, JOURNAL, INTENT): not
                               detachable */
} kd_task_where_t;
#define KD_WHERE_PLACES (KD_WHERE_FLIGHT + 1)

/* Where a task's own headers (rec.hdrs) stand, for its fire
 * (fire_produce.c). */
typedef enum kd_task_hdrs {
        KD_HDRS_AS_READ,  /* as read, kdelay-target and kdelay-v in */
        KD_HDRS_UNROUTED, /* without kdelay-target and kdelay-v, removed
                             for its fire: put back before a hop or a dead
                             letter copies them */
        KD_HDRS_LENT      /* unrouted, and lent to its fire rather than
                             copied (rec.hdrs NULL): back with the delivery
                             report, or when the produce fails */
} kd_task_hdrs_t;

/* The claim stage's result for a task it let go to its fire (kd_claim.h),
 * which says how the settle stage puts the fire on record (kd_settle.h):
 * by its row, or by a journal record. Set only by the claim stage: ROW as
 * each claim begins, UNCLAIMED where a fate-store outage lets it fire
 * without one. */
typedef enum kd_task_claim {
        KD_CLAIM_ROW,      /* claimed (or not yet): its FIRING row is
                              marked FIRED or DEAD */
        KD_CLAIM_UNCLAIMED /* fired without a claim through a fate-store
                              outage (forwarder.fate_outage_policy=fire):
                              its journal record stands for the FIRED
                              mark */
} kd_task_claim_t;

/* How a produce is put on record: the settle stage's decision
 * (kd_settle_mark), from the claim stage's result (t->claim). Here, beside
 * that result, so that the delivery modes see it too (kd_mode_mark). */
typedef enum kd_settle_mark {
        KD_MARK_NONE,   /* nothing to mark: a hop, the dead letter of a task
                           never claimed (malformed, forbidden ...) */
        KD_MARK_ROW,    /* its row in the fate store: FIRED (a fire) or DEAD
                           (the dead letter of a fire that failed for good) */
        KD_MARK_JOURNAL /* its journal record (kd_journal.h): the fire was
                           let go without a claim (KD_CLAIM_UNCLAIMED); the
                           record stands for the mark until the fires kept
                           for kd_settle_apply_unclaimed are applied */
} kd_settle_mark_t;

typedef struct kd_task {
        kd_taskrec_t rec;
        kd_task_state_t state;
        kd_task_where_t where;
        kd_timer_t timer;         /* HELD, CLAIMED, RETRY; foreign wait */
        kd_task_state_t retry_as; /* KD_TASK_RETRY: what to produce again */
        int retries;
        unsigned hop_tier; /* KD_TASK_HOPPING: the ladder index produced to */
        unsigned rlim;     /* KD_WHERE_TARGET_Q, KD_WHERE_FIRE_Q: its
                              forwarder.target_rate_limits rule */
        int rule;          /* the forwarder.target_rate_limits rule limiting its
                              target + 1 (0 = none), looked up once at intake:
                              the rules are fixed for the process's life */
        int rate_passed;   /* its target's rate limit let it through (a
                              token taken before its claim): not asked
                              again, whatever claims it takes */
        int64_t rate_since;     /* KD_WHERE_TARGET_Q: wall time it joined */
        int64_t rate_slot_mono; /* rate_passed: it fires no earlier
                                   (monotonic; kd_pace_fire_at) */
        int64_t late_ms;        /* produce time of the last fire - fire_at */
        int64_t sent_ms;        /* wall time of the last produce */
        int64_t lease_mono;     /* our claim's lease surely holds until then
                                   (monotonic); 0 = no lease */
        kd_part_t *part;        /* borrowed; NULL once revoked */
        struct kd_task *prev, *next; /* the partition's task list */
        struct kd_task *qnext;       /* link in one kd_taskq_t */
        const char *dead_reason;     /* static; set when dead-lettered */
        size_t bytes;                /* memory accounted to the held set */
        int held;                    /* counted in the held set */
        unsigned held_rule;          /* held or sent back for its turn
                                        (out): counted in the share of this
                                        forwarder.target_rate_limits rule + 1 (0 =
                                        not counted in one) */
        int out; /* counted as a hop or dead letter not yet settled */
        int waited_foreign; /* waited once for a foreign claim */
        int fire_failed;    /* claimed, its fire failed: dead-lettered */
        int solo; /* the delivery mode's alone-fallback (at_least_once,
                     mode_alo.c): produce it alone, the broker refused a
                     batch it was in, maybe for a batch-mate */
        int bulk; /* its fire went through the bulk producer (late: a
                     backlog; at_least_once) */
        rd_kafka_resp_err_t known_refusal; /* a replay its target is known to
                                              refuse with this, learned
                                              before the replay: its fire
                                              goes alone, for real, in
                                              either mode (kd_fire_now);
                                              0 = not so */
        kd_task_claim_t claim;             /* the claim stage's result */
        kd_task_hdrs_t hdrs;               /* where its own headers stand */
        rd_kafka_resp_err_t dead_err;      /* why its produce failed for good;
                                              0 = it did not */
        char token[65]; /* claim owner token, fixed at the first claim so a
                           retried claim recognises its own row */
        uint64_t seq;   /* the seq of token (claim.c's c->seq, the run
                           tracker's: kd_runs.h); 0 = no token */
        struct kd_store_req *req; /* borrowed: the request carrying this
                                     task's claim (CLAIMING, where
                                     KD_WHERE_CLAIM_REQ), its lease
                                     renewal (claimed) or the apply of its
                                     fire from memory (mem_fire); NULL =
                                     none */
        size_t req_slot;          /* the task's item in req; with mem_fire
                                     and no req, its fire's in the fires
                                     kept in memory (settle.c) */
        int mem_fire; /* fired without a claim and delivered, its record of
                         delivery refused for good: its fire is kept in
                         memory, and the task (its offset not done) waits
                         for that fire's apply to the fate table
                         (kd_settle_fired_held) */
} kd_task_t;

/* When t is due as far as its path goes: its fire-at, or the turn a
 * target rate limit gave it when that is later. */
static inline int64_t kd_task_due_at(const kd_task_t *t)
{
        return t->rec.not_before_ms > t->rec.fire_at_ms ? t->rec.not_before_ms
                                                        : t->rec.fire_at_ms;
}

/* The task whose timer tm is. */
static inline kd_task_t *kd_task_of_timer(kd_timer_t *tm)
{
        return (kd_task_t *)((char *)tm - offsetof(kd_task_t, timer));
}

/* A task copied out of m (its decoded fields still unset), in one block
 * with m's key and value; m's headers are taken over, not copied (m has
 * none afterwards). NULL when out of memory (m keeps its headers). The
 * caller owns the task (kd_task_free). */
kd_task_t *kd_task_new(rd_kafka_message_t *m);
/* Sets t's id and target (copies, in one block); -1 when out of memory. */
int kd_task_set_ids(kd_task_t *t, const char *id, size_t id_len,
                    const char *target, size_t target_len);
/* Frees t's record and t; t must be out of every queue, list and timer
 * (kd_settle_release takes it out first). */
void kd_task_free(kd_task_t *t);

/* A FIFO of tasks linked through qnext (a task is in at most one). The
 * queue is a place (kd_task_where_t): it records it in each task it takes
 * and sets KD_WHERE_NONE in each it lets go, so no stage sets a queued
 * task's place by hand. Its operations (kd_taskq_push, ...) are the
 * lifecycle's, the one writer of a task's place (kd_lifecycle.h). */
typedef struct kd_taskq {
        kd_task_t *head, *tail;
        size_t len;
        kd_task_where_t where; /* the place it is (kd_taskq_init) */
} kd_taskq_t;

#endif
