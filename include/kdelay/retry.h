/* SPDX-License-Identifier: Apache-2.0 */
/* Retrying a consumed record later without blocking its partition: the
 * record is scheduled again as a kdelay task (same key, value and user
 * headers) through the application's own producer, due after a backoff,
 * and after the last allowed attempt it goes to a dead-letter topic with
 * its history (docs/retries.md). Include after, or instead of,
 * <kdelay/kdelay.h>; link librdkafka as well as libkdelay.
 *
 * Inside a transaction (consume -> process -> produce with
 * send_offsets_to_transaction), the retry is written if and only if the
 * transaction commits, with the consumed offset: a consumer that crashes
 * before the commit reads the record again, and its retry was never
 * written; after the commit the record is not read again. Outside one, a
 * retry written before a crash may be written again when the record is
 * read again; the retry's task id is derived from the original record
 * and the attempt, so the forwarder fires the two copies once.
 *
 * The headers (wire format, docs/wire-format.md), on the retry and on
 * the dead letter:
 *   kdelay-attempt              the number of failures so far ("1" on the
 *                               first retry)
 *   kdelay-original-topic       where the record was first consumed
 *   kdelay-original-partition   (kept from the first failure on)
 *   kdelay-original-offset
 *   kdelay-failures             one line per failure, oldest first:
 *                               "attempt=N failed_at=EPOCH_MS reason=TEXT"
 *                               (reason: the caller's, control characters
 *                               as spaces, at most 200 bytes)
 * and on the dead letter kdelay-dead-reason "retries-exhausted". Every
 * other kdelay-* header of the consumed record (the fired task's id and
 * fire-at) is dropped; the user's headers are kept. */
#ifndef KDELAY_RETRY_H
#define KDELAY_RETRY_H

#include <librdkafka/rdkafka.h>

#include <kdelay/kdelay.h>

#ifdef __cplusplus
extern "C" {
#endif

#define KDELAY_HDR_ATTEMPT            "kdelay-attempt"
#define KDELAY_HDR_ORIG_TOPIC         "kdelay-original-topic"
#define KDELAY_HDR_ORIG_PARTITION     "kdelay-original-partition"
#define KDELAY_HDR_ORIG_OFFSET        "kdelay-original-offset"
#define KDELAY_HDR_FAILURES           "kdelay-failures"
#define KDELAY_DEAD_RETRIES_EXHAUSTED "retries-exhausted"

/* The longest reason kept per failure, in bytes. */
#define KDELAY_RETRY_REASON_MAX 200
/* The most attempts a policy may allow. */
#define KDELAY_RETRY_ATTEMPTS_MAX 100

/* Exponential backoff with jitter. Initialise with
 * kdelay_retry_policy_init(), then set dead_topic (required) and what
 * else differs. The n-th retry (n = 1, 2, ...) is due
 *   d(n) = min(backoff_max_ms, backoff_initial_ms * multiplier^(n-1))
 * less a random part of up to jitter * d(n): never sooner than
 * (1 - jitter) * d(n) after the call, never later than d(n). Strings are
 * borrowed for the duration of the call. */
typedef struct kdelay_retry_policy {
        int64_t backoff_initial_ms; /* 1000 */
        int64_t backoff_max_ms;     /* 3600000 (1 h) */
        double multiplier;          /* 2.0; >= 1 */
        double jitter;              /* 0.2; 0 .. 1 */
        int max_attempts;           /* 5: failures retried; the next goes to the
                                       dead-letter topic (1 .. 100) */
        const char *retry_topic;    /* NULL: the original topic (the
                                       consumed record's, or its
                                       kdelay-original-topic) */
        const char *dead_topic;     /* required: where the last failure goes */
} kdelay_retry_policy_t;

/* Sets every field of policy to its default (dead_topic NULL). */
void kdelay_retry_policy_init(kdelay_retry_policy_t *policy);

typedef enum kdelay_retry_outcome {
        KDELAY_RETRY_SCHEDULED = 1, /* a task due at fire_at_ms */
        KDELAY_RETRY_DEAD = 2       /* produced to the dead-letter topic */
} kdelay_retry_outcome_t;

typedef struct kdelay_retry_result {
        kdelay_retry_outcome_t outcome;
        int attempt;        /* failures so far, this one included */
        int64_t fire_at_ms; /* SCHEDULED: when the retry is due */
        char task_id[KDELAY_ID_MAX + 1]; /* SCHEDULED: the retry's id */
        char topic[256]; /* the topic written: a tier topic or the dead
                            topic */
} kdelay_retry_result_t;

/* Schedules msg (borrowed: a record the application consumed and failed
 * to process) again under policy, or dead-letters it once its failures
 * exceed policy->max_attempts, through rk (borrowed: the application's
 * producer; transactional or idempotent with acks=all, see
 * kdelay/producer.h). reason (may be NULL) says why processing failed;
 * conf (borrowed) says where the tier topics are. msg_opaque is the
 * message opaque of rk's delivery report. result (may be NULL) says what
 * was done. Returns once the record is enqueued in rk:
 *   KDELAY_ERR_INVALID_ARG: no dead_topic, a policy value out of range,
 *     a message with an error, or a malformed kdelay-attempt/original
 *     header (errstr names it); nothing was enqueued;
 *   KDELAY_ERR_QUEUE_FULL, KDELAY_ERR_KAFKA: as kdelay_produce(); nothing
 *     was enqueued. */
kdelay_err_t kdelay_retry(rd_kafka_t *rk, const kdelay_conf_t *conf,
                          const rd_kafka_message_t *msg,
                          const kdelay_retry_policy_t *policy,
                          const char *reason, void *msg_opaque,
                          kdelay_retry_result_t *result, char *errstr,
                          size_t errstr_size);

#ifdef __cplusplus
}
#endif

#endif
