/* What a failed produce says about its record: the classes of librdkafka's
 * produce errors that decide between retrying, isolating the record and
 * dead-lettering it, and the dead-letter reason each one gives. */
#ifndef KD_PERR_H
#define KD_PERR_H

#include <librdkafka/rdkafka.h>

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

#endif
