/* SPDX-License-Identifier: Apache-2.0 */
/* What a failed produce says about its record: the classes of librdkafka's
 * produce errors that decide between retrying, isolating the record and
 * dead-lettering it, and the dead-letter reason each one gives. */
#ifndef KD_PERR_H
#define KD_PERR_H

#include <librdkafka/rdkafka.h>

#include "kd_task.h"

typedef enum kd_perr_class {
        /* Neither named below nor known: retrying may succeed, but a
         * record whose transactions keep aborting this way is suspect. */
        KD_PERR_TRANSIENT,
        /* The cluster or the connection (timeouts, leaders moving,
         * brokers or coordinators down): retrying succeeds once it is
         * back; never a record's fault. */
        KD_PERR_CLUSTER,
        /* The target topic refuses every record: missing, not allowed to
         * this client, or not a topic a client may write. */
        KD_PERR_TARGET,
        /* The broker refused a record batch for what one of its records
         * is (too large for the topic, no key for a compacted topic, a
         * timestamp out of range): librdkafka reports the error on every
         * record of the batch, so the culprit is found by producing each
         * alone. */
        KD_PERR_RECORD,
        /* Never sent: purged by an abort or a close (a victim, not a
         * cause). */
        KD_PERR_PURGED,
        /* The producer's own sequence, epoch or transaction state: after
         * a batch was refused, the next transaction on its partition fails
         * once this way until the abort bumps the epoch, and a call after
         * the transaction failed answers _STATE (never the record's
         * fault). */
        KD_PERR_PRODUCER
} kd_perr_class_t;

kd_perr_class_t kd_perr_class(rd_kafka_resp_err_t err);

/* 1 when producing the same record to the same topic cannot succeed. */
int kd_perr_permanent(rd_kafka_resp_err_t err);

/* 1 for the errors of a record (or its batch) over a size limit. */
int kd_perr_too_large(rd_kafka_resp_err_t err);

/* The dead-letter reason of a claimed task whose fire failed with err
 * (static): too-large, target-refused or target-unavailable. */
const char *kd_perr_dead_reason(rd_kafka_resp_err_t err);

/* A fire whose target answers a permanent error (missing, not allowed)
 * is tried this many times (about 6 s of backoff: the target may be
 * created any moment) before it is dead-lettered. */
#define KD_PERR_PERMANENT_RETRIES 5

/* What the fire stage does after a produce of a task as `as` failed. */
typedef enum kd_perr_then {
        KD_THEN_RETRY,        /* produce it again after the backoff */
        KD_THEN_FIRE_FAILED,  /* a fire (or a hop over a size limit) that
                                 cannot succeed: dead-lettered, its reason
                                 from the error (kd_perr_dead_reason) */
        KD_THEN_DEAD_SMALLER, /* a dead letter over a size limit: sent
                                 again without its key and value */
        KD_THEN_HOP_FAILED,   /* a hop its tier keeps refusing: dead-lettered
                                 tier-unavailable */
        KD_THEN_DEAD_DROPPED  /* a dead letter that cannot be written:
                                 dropped (logged, counted) */
} kd_perr_then_t;

/* The fire stage's failure policy: a produce as `as` failed with err after
 * retries earlier tries; poisoned: the delivery mode found it failed for
 * good often enough (kd_mode_ops.h poisoned), so it is not produced again as
 * it is. */
kd_perr_then_t kd_perr_then(kd_task_state_t as, rd_kafka_resp_err_t err,
                            int retries, int poisoned);

#endif
