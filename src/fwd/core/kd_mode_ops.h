/* SPDX-License-Identifier: Apache-2.0 */
/* The delivery-mode seam, as the stages call it: the table of operations
 * (f->mode) and the context each operation gets (&f->mode_ctx). Its two
 * implementations, at_least_once and exactly_once, are the modes room's
 * (modes/kd_mode.h names them, in the manner of nng's protocol ops);
 * nothing outside those files tests which mode runs. The stages, the
 * journal, the producer room and the top call these operations with the
 * forwarder's mode context, and that context is all a mode sees
 * (modes/kd_mode_ctx.h has its services): its own state (m->state, and
 * per partition p->mode, part_size bytes), the conf, metrics, the clock,
 * the refusal memory, and the services of the settle stage, the producer
 * room and the consumer's offsets. It reads a
 * partition's identity and offset tracker, never the intake's list of
 * partitions nor another stage's state: a mode file cannot include
 * kd_fwd_core.h (KD_MODE_SEAM), so the compiler refuses any use of the
 * forwarder's fields. Operations marked optional may be NULL: the caller
 * then does what the comment says for NULL. Deadlines are arguments. */
#ifndef KD_MODE_OPS_H
#define KD_MODE_OPS_H

#include <stddef.h>
#include <stdint.h>

#include <librdkafka/rdkafka.h>

#include <kdelay/kdelay.h>

#include "kd_conf.h"
#include "kd_metrics.h"
#include "kd_part.h"
#include "kd_refusals.h"
#include "kd_task.h"
#include "kd_timer.h"

/* What a mode sees of the forwarder: a struct of exactly what it may use,
 * not an opaque handle. The plain things it reads and bumps on every
 * produce (the conf, the metric table, the timer service and its clock,
 * the refusal memory, its own state) are fields, read without a call;
 * everything that reaches another part of the forwarder is a service of
 * modes/kd_mode_ctx.h. fwd is the forwarder itself, an incomplete type
 * here: no mode can name its fields. */
typedef struct kd_mode_ctx {
        const kdelay_conf_t *conf; /* borrowed: the forwarder's (kd_log's) */
        kd_metrics_t *metrics;     /* borrowed: the metric table */
        kd_timers_t *timers;       /* borrowed: the timer service, the one
                                      clock (kd_mode_mono_ms, kd_mode_now) */
        kd_refusals_t *refusals;   /* borrowed: what targets were seen to
                                      refuse */
        void *state;               /* owned by the mode: its init allocates
                                      it, its destroy frees it */
        struct kd_fwd *fwd;        /* the forwarder: mode_ctx.c's alone */
} kd_mode_ctx_t;

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

#endif
