/* SPDX-License-Identifier: Apache-2.0 */
/*
 * kdelay — error codes.
 *
 * Every libkdelay function that can fail returns a kdelay_err_t. Functions
 * that take `char *errstr, size_t errstr_size` also write a one-line,
 * human-readable detail there on failure (never more than errstr_size - 1
 * bytes, always NUL-terminated when errstr_size > 0).
 */
#ifndef KDELAY_ERROR_H
#define KDELAY_ERROR_H

#ifdef __cplusplus
extern "C" {
#endif

typedef enum kdelay_err {
        KDELAY_OK = 0,
        /* Caller input errors: fix the input, retrying will not help. */
        KDELAY_ERR_INVALID_ARG,      /* NULL/missing or contradictory arg */
        KDELAY_ERR_INVALID_ID,       /* task id empty, > 128 bytes, !UTF-8 */
        KDELAY_ERR_INVALID_TOPIC,    /* topic name Kafka would reject */
        KDELAY_ERR_INVALID_TIME,     /* negative or absurd due time */
        KDELAY_ERR_INVALID_DURATION, /* unparseable duration text */
        KDELAY_ERR_INVALID_TIERS,    /* bad tier list */
        KDELAY_ERR_INVALID_HEADER,   /* reserved or malformed header */
        KDELAY_ERR_CONFIG,           /* config file unreadable or wrong */
        KDELAY_ERR_UNKNOWN_PROPERTY, /* unknown configuration property */
        /* Environment errors. */
        KDELAY_ERR_NO_MEMORY,
        KDELAY_ERR_KAFKA,          /* Kafka/librdkafka failure */
        KDELAY_ERR_QUEUE_FULL,     /* local produce queue full: poll */
        KDELAY_ERR_TIMED_OUT,      /* operation did not finish in time */
        KDELAY_ERR_MYSQL,          /* MySQL unreachable or query failed */
        KDELAY_ERR_NOT_CONFIGURED, /* e.g. cancel without mysql.url */
        KDELAY_ERR_SCHEMA,         /* database schema missing/too new */
        KDELAY_ERR_PURGED,         /* client destroyed before delivery */
        KDELAY_ERR_SYSTEM,         /* a system call failed (errno) */
        /* Outcomes. */
        KDELAY_ERR_TOO_LATE,  /* cancel lost: task already FIRING/FIRED */
        KDELAY_ERR_MALFORMED, /* a task record that cannot be decoded */
        KDELAY_ERR_NOT_FOUND, /* no pending task has that id */
        KDELAY_ERR_DEAD,      /* cancel: the task was dead-lettered (DEAD) */
        /* Environment error, added after the outcomes: a topic the task
         * needs (its tier topic; its target topic with
         * producer.check_target=1) does not exist. */
        KDELAY_ERR_NO_SUCH_TOPIC,
        /* Outcome, retriable: a cancel could not tell whether the task was
         * fired without a claim through a fate-store outage
         * (forwarder.fate_outage_policy=fire) until that is reconciled;
         * nothing was recorded. Retry (docs/fate-protocol.md). */
        KDELAY_ERR_RECONCILING,
        KDELAY_ERR__COUNT /* number of codes, not an error */
} kdelay_err_t;

/* Short English description of err; a static string, never NULL. */
const char *kdelay_err_str(kdelay_err_t err);

/* Symbolic name of err ("KDELAY_ERR_TOO_LATE"); static, never NULL. */
const char *kdelay_err_name(kdelay_err_t err);

/* Non-zero when the same call may succeed if retried later
 * (Kafka/MySQL unavailable, time-outs). */
int kdelay_err_is_retriable(kdelay_err_t err);

#ifdef __cplusplus
}
#endif
#endif /* KDELAY_ERROR_H */
