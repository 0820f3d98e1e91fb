/* SPDX-License-Identifier: Apache-2.0 */
/* The delivery-mode seam: at_least_once (mode_alo.c) and exactly_once
 * (mode_eos.c) are two implementations of this table of operations, in
 * the manner of nng's protocol ops. Nothing outside those two files tests
 * which mode runs; the fire and intake stages call these operations with
 * the forwarder's mode context (&f->mode_ctx), and that context is all a
 * mode sees (kd_mode_ctx.h): its own state (m->state, and per partition
 * p->mode, part_size bytes), the conf, metrics, the clock, the refusal
 * memory, and the services of the settle stage, the producer room and the
 * consumer's offsets. It reads a partition's identity and offset tracker,
 * never the intake's list of partitions nor another stage's state: a mode
 * file cannot include kd_fwd_state.h (KD_MODE_SEAM), so the compiler
 * refuses any use of the forwarder's fields. Operations marked optional
 * may be NULL: the caller then does what the comment says for NULL.
 * Deadlines are arguments. */
#ifndef KD_MODE_H
#define KD_MODE_H

#include "kd_mode_ctx.h"

typedef struct kd_mode_ops kd_mode_ops_t;

struct kd_mode_ops {
        const char *name; /* forwarder.delivery */
        /* A foreign FIRING claim is taken over at once rather than after
         * forwarder.foreign_claim_wait. */
        int takeover_at_once;
        /* A fire without a claim writes its journal record with the fire
         * (the transaction holds both); 0: after the fire's delivery, and
         * the task is settled on the record's (kd_journal.h). */
        int journal_with_fire;

        /* Checks the conf, allocates m->state, and names the
         * producer's properties (NULL-terminated name, value pairs, valid
         * until destroy): defaults the user may override, and the forced
         * ones the mode's guarantee depends on. */
        kdelay_err_t (*init)(kd_mode_ctx_t *m, const char *const **defaults,
                             const char *const **forced, char *errstr,
                             size_t errstr_size);
        void (*destroy)(kd_mode_ctx_t *m);
        /* Before the consumer subscribes (exactly_once fences an earlier
         * process with the same transactional.id). Optional. */
        kdelay_err_t (*start)(kd_mode_ctx_t *m, char *errstr,
                              size_t errstr_size);

        /* Bytes of the mode's state per partition (p->mode); 0 = none. */
        size_t part_size;
        /* Partitions being assigned: may set the offsets to start at in
         * parts; -1 when the forwarder must stop instead. Optional (NULL:
         * the committed offsets). */
        int (*assigning)(kd_mode_ctx_t *m,
                         rd_kafka_topic_partition_list_t *parts);
        /* Partition p was created for tp of the assignment (p->mode
         * zeroed): the count of offsets above tp's that an earlier owner
         * handled (handled() says which). Optional. */
        size_t (*opened)(kd_mode_ctx_t *m, kd_part_t *p,
                         const rd_kafka_topic_partition_t *tp);
        /* Partition p goes (revoked, rewound, shut down): what p->mode
         * owns is freed. Optional. */
        void (*closed)(kd_mode_ctx_t *m, kd_part_t *p);
        /* 1 when the record at offset of p, read in offset order, was
         * handled by an earlier owner (its committed done set): intake
         * marks it done without a task. Optional (NULL: never). */
        int (*handled)(kd_mode_ctx_t *m, kd_part_t *p, int64_t offset);
        /* 1 when the backlog head t of p may be handled now; 0 pauses p
         * until room appears (the room hook). low: p is paused for room
         * and resumes only below half the bound (kd_sched_decide).
         * Optional (NULL: 1). */
        int (*admit)(const kd_mode_ctx_t *m, const kd_part_t *p,
                     const kd_task_t *t, int low);

        /* Before producing t as `as` (t NULL: a clock probe, produced
         * only when 0): 0 to produce now, with *rk; > 0 to wait that many
         * ms and ask again (a solo transaction is open, or t waits for
         * one); -1 to defer it with the retry backoff (the transaction
         * failed). */
        int (*begin)(kd_mode_ctx_t *m, const kd_task_t *t, kd_task_state_t as,
                     rd_kafka_t **rk);
        /* 1 when producing t as `as` already failed for good often
         * enough; *err gets the last error. Optional (NULL: 0). */
        int (*poisoned)(kd_mode_ctx_t *m, const kd_task_t *t,
                        kd_task_state_t as, rd_kafka_resp_err_t *err);
        /* Produce fire/hop: librdkafka took t's record. Optional. */
        void (*produced)(kd_mode_ctx_t *m, kd_task_t *t);

        /* Settle: t's produce was delivered; frees t. */
        void (*delivered)(kd_mode_ctx_t *m, kd_task_t *t);
        /* t's produce failed for good (after librdkafka's retries): 1 when
         * the mode handled it (t freed), 0 when the fire stage retries or
         * dead-letters it. permanent: producing it again cannot succeed.
         * Optional (NULL: 0). */
        int (*failed)(kd_mode_ctx_t *m, kd_task_t *t, rd_kafka_resp_err_t err,
                      int permanent);
        /* The alone-fallback: t's fire, hop or dead letter failed for
         * good with err, the fire stage to handle it (failed is NULL or
         * left it), its partition kept. 1 when t goes again alone, after
         * the retry backoff (logged event=batch_refused): the broker
         * refused a batch it was in for what one of its records is, maybe
         * a batch-mate's, and alone it is delivered or found out (begin
         * picks the producer); 0 when the fire stage goes on (a fire
         * refused alone: the mode learned what that says of its target,
         * kd_refusals.h). Optional (NULL: 0). */
        int (*refused)(kd_mode_ctx_t *m, kd_task_t *t, rd_kafka_resp_err_t err);
        /* A journal record produced with a fire (journal_with_fire) failed
         * with err: the fire must not count. Optional. */
        void (*journal_failed)(kd_mode_ctx_t *m, rd_kafka_resp_err_t err);
        /* t is handled without a produce (dropped, already fired); frees
         * t. */
        void (*done)(kd_mode_ctx_t *m, kd_task_t *t);

        /* Commit offsets before the partitions go (revoke), within
         * deadline (monotonic ms). 1 when what it committed was aborted
         * instead (partitions that stay must then be rewound). */
        int (*revoke)(kd_mode_ctx_t *m, int64_t deadline);
        /* A new producer replaced one that failed for good (fwd.c):
         * exactly_once initialises its transactions (fencing the old one,
         * which aborts its transaction) and rewinds. Optional. */
        kdelay_err_t (*renewed)(kd_mode_ctx_t *m, char *errstr,
                                size_t errstr_size);
        /* The coordinator's answer to the consumer's own offset commits
         * (librdkafka's offset_commit_cb): err, and offsets with each
         * partition's err (not owned). Optional. */
        void (*committed)(kd_mode_ctx_t *m, rd_kafka_resp_err_t err,
                          const rd_kafka_topic_partition_list_t *offsets);
};

extern const kd_mode_ops_t kd_mode_alo;
extern const kd_mode_ops_t kd_mode_eos;

/* The ops of conf's forwarder.delivery. */
const kd_mode_ops_t *kd_mode_select(const kdelay_conf_t *conf);

#endif
