/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libkdelay — schedule, cancel and inspect delayed Kafka tasks.
 *
 * A task is one Kafka record in a delay-tier topic (wire format v1, see
 * docs/wire-format.md); kdelay-forwarder delivers it to its target topic
 * when it is due. This library writes such records, and records a task's
 * cancellation in MySQL (the fate table) so that a cancel that reports
 * success is never delivered.
 *
 * Errors: every call returns a kdelay_err_t (see kdelay/error.h); calls
 * with errstr fill it with a one-line detail. The library never exits the
 * process and never prints: it logs through the conf's log callback.
 *
 * Thread safety: a kdelay_client_t may be shared by threads for
 * kdelay_schedule(), kdelay_schedule_async(), kdelay_cancel(),
 * kdelay_status(), kdelay_poll() and kdelay_flush(). kdelay_client_destroy()
 * must not race any other call on the same client.
 */
#ifndef KDELAY_KDELAY_H
#define KDELAY_KDELAY_H

#include <stddef.h>
#include <stdint.h>

#include <kdelay/conf.h>
#include <kdelay/error.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The release (semantic versioning; CHANGELOG.md, RELEASES). CMakeLists.txt
 * reads it from here: the one place it is written. */
#define KDELAY_VERSION_STR "0.4.0"
/* The pre-release marker: "dev" while the tree heads for
 * KDELAY_VERSION_STR, "" in its release commit (docs/development.md
 * "Cutting a release"). The binaries print 0.3.0-dev+<commit> for the
 * former, 0.3.0 for the latter (cmake/version.sh). */
#define KDELAY_VERSION_PRE "dev"

/* Wire format v1 header names. */
#define KDELAY_HDR_ID          "kdelay-id"
#define KDELAY_HDR_TARGET      "kdelay-target"
#define KDELAY_HDR_FIRE_AT     "kdelay-fire-at"
#define KDELAY_HDR_VERSION     "kdelay-v"
#define KDELAY_HDR_DEAD_REASON "kdelay-dead-reason"
/* On a dead letter whose produce failed: the Kafka error's name
 * (INVALID_RECORD, MSG_SIZE_TOO_LARGE, TOPIC_AUTHORIZATION_FAILED...). */
#define KDELAY_HDR_DEAD_ERROR "kdelay-dead-error"
/* On a task made by kdelay_reschedule(): the id of the task it replaces.
 * Delivered with the task, like kdelay-id. */
#define KDELAY_HDR_RESCHEDULED_FROM "kdelay-rescheduled-from"
/* On a task `kdelayctl dead replay` scheduled again: the dead-lettered
 * task's id. */
#define KDELAY_HDR_REPLAY_OF "kdelay-replay-of"
/* Written by forwarders only: a task to a rate-limited target sent back
 * to a tier topic until its turn (epoch ms). The forwarder that reads it
 * holds it until then; its fired record does not carry it. */
#define KDELAY_HDR_NOT_BEFORE "kdelay-not-before"
#define KDELAY_WIRE_VERSION   "1"

/* A task id is 1..KDELAY_ID_MAX bytes of UTF-8. Generated ids are
 * KDELAY_ID_GEN_LEN characters (a ULID: time-ordered, Crockford base32). */
#define KDELAY_ID_MAX     128
#define KDELAY_ID_GEN_LEN 26

/* The furthest a task may be scheduled ahead: 10 years (365-day years). */
#define KDELAY_MAX_DELAY_MS (10LL * 365 * 24 * 3600 * 1000)

/* "Not set" marker for kdelay_task_t's time fields. */
#define KDELAY_TIME_UNSET INT64_MIN

/* Parses a duration typed by a person: a non-negative integer followed by
 * a unit, "ms", "s", "m", "h" or "d" ("250ms", "30s", "5m", "2h", "7d").
 * Units may be combined largest first ("1h30m"). Returns
 * KDELAY_ERR_INVALID_DURATION for anything else or on overflow. */
kdelay_err_t kdelay_duration_parse(const char *text, int64_t *msp);

/* Writes the shortest exact text form of ms ("1s", "90s" -> "1m30s",
 * "250ms") into buf. Returns buf. */
char *kdelay_duration_format(int64_t ms, char *buf, size_t buf_size);

/* One user header. The value need not be NUL-terminated; a NULL value
 * with value_len 0 is a header without value. */
typedef struct kdelay_header {
        const char *name;
        const void *value;
        size_t value_len;
} kdelay_header_t;

/* What to deliver, where and when. Initialise with kdelay_task_init(),
 * then set topic, value, and exactly one of fire_at_ms / delay_ms.
 * All pointers are borrowed for the duration of the schedule call. */
typedef struct kdelay_task {
        const char *topic; /* target topic (required) */
        const void *key;   /* NULL = no key */
        size_t key_len;
        const void *value; /* NULL = null value (tombstone) */
        size_t value_len;
        const kdelay_header_t *headers; /* user headers, may be NULL */
        size_t header_cnt;
        int64_t fire_at_ms; /* absolute due time, epoch ms */
        int64_t delay_ms;   /* or: due this long from now */
        const char *id;     /* NULL = generate a ULID */
} kdelay_task_t;

/* Sets every field of task to its "unset" value. */
void kdelay_task_init(kdelay_task_t *task);

typedef struct kdelay_client_s kdelay_client_t;

/* Creates a client. On success the client owns conf (do not touch or free
 * it afterwards); on failure conf is still the caller's. Kafka properties
 * are checked here; the producer starts with the first schedule call and
 * the MySQL connection with the first cancel/status call, so a client used
 * only to cancel never talks to Kafka. */
kdelay_err_t kdelay_client_new(kdelay_client_t **clientp, kdelay_conf_t *conf,
                               char *errstr, size_t errstr_size);

/* Destroys client. Tasks still waiting for delivery are abandoned: their
 * callbacks are called with KDELAY_ERR_PURGED (the task may or may not have
 * been written). Call kdelay_flush() first to wait for them. NULL ok. */
void kdelay_client_destroy(kdelay_client_t *client);

/* Schedules task and waits until Kafka has acknowledged it (acks=all) or
 * failed: at most librdkafka's message.timeout.ms (default 300 s; set it
 * with kdelay_conf_set_kafka). id_out (may be NULL) receives the task id;
 * when it is too small for the id the call fails with
 * KDELAY_ERR_INVALID_ARG before sending (KDELAY_ID_MAX + 1 bytes always
 * suffice). Input errors are returned before anything is sent. While it
 * waits it serves delivery callbacks, so callbacks of asynchronous tasks
 * may run inside this call, on this thread.
 * Topic checks: the first task to a tier topic (and, with property
 * producer.check_target=1, to a target topic) asks the broker's metadata
 * once per client (at most 5 s) whether the topic exists:
 * KDELAY_ERR_NO_SUCH_TOPIC names the missing topic at once. */
kdelay_err_t kdelay_schedule(kdelay_client_t *client, const kdelay_task_t *task,
                             char *id_out, size_t id_out_size, char *errstr,
                             size_t errstr_size);

/* Called exactly once per accepted asynchronous task, from
 * kdelay_poll()/kdelay_flush()/kdelay_client_destroy(). err is KDELAY_OK
 * when the task is durably in its tier topic. task_id and errstr are valid
 * during the call only. */
typedef void(kdelay_delivery_cb_t)(kdelay_err_t err, const char *task_id,
                                   const char *errstr, void *opaque);

/* Enqueues task and returns at once (but for the first task to a topic:
 * see the topic checks of kdelay_schedule). On KDELAY_OK, cb (may be
 * NULL) is called later exactly once; on any other return it is never
 * called. */
kdelay_err_t kdelay_schedule_async(kdelay_client_t *client,
                                   const kdelay_task_t *task,
                                   kdelay_delivery_cb_t *cb, void *opaque,
                                   char *id_out, size_t id_out_size,
                                   char *errstr, size_t errstr_size);

/* Serves delivery callbacks, waiting up to timeout_ms (-1 = forever) for
 * the first. Returns the number of callbacks served. */
int kdelay_poll(kdelay_client_t *client, int timeout_ms);

/* Waits until every enqueued task is delivered or failed, serving
 * callbacks. KDELAY_ERR_TIMED_OUT when some are still outstanding. */
kdelay_err_t kdelay_flush(kdelay_client_t *client, int timeout_ms);

/* Number of tasks enqueued and not yet reported. */
int kdelay_outq_len(kdelay_client_t *client);

/* The fate of a task as the fate table records it. */
typedef enum kdelay_fate {
        KDELAY_FATE_UNDECIDED = 0, /* no row: pending, unknown or expired */
        KDELAY_FATE_FIRING,        /* claimed by a forwarder, in flight */
        KDELAY_FATE_FIRED,         /* delivered to its target */
        KDELAY_FATE_CANCELLED,     /* cancelled; will never be delivered */
        KDELAY_FATE_DEAD /* claimed, then dead-lettered (its target refused
                            it): never delivered; dead_reason says why */
} kdelay_fate_t;

/* "UNDECIDED", "FIRING", "FIRED", "CANCELLED", "DEAD"; static. */
const char *kdelay_fate_str(kdelay_fate_t fate);

typedef struct kdelay_status {
        kdelay_fate_t fate;
        int64_t decided_at_ms; /* when the row was inserted, or -1 */
        int64_t updated_at_ms; /* last state change, or -1 */
        int64_t fire_at_ms;    /* due time when a forwarder claimed, or -1 */
        char owner[64];        /* forwarder that claimed it, or "" */
        char dead_reason[32];  /* DEAD: the dead-letter reason, else "" */
} kdelay_status_t;

/* Cancels task id. KDELAY_OK: cancelled (now or before); the task will never
 * be delivered. KDELAY_ERR_TOO_LATE: it is already FIRING or FIRED and will
 * be (or was) delivered. KDELAY_ERR_DEAD: it was dead-lettered (DEAD): it
 * will not be delivered, and it is not cancelled either (its dead letter
 * stays). KDELAY_ERR_RECONCILING: fires made without a claim through a
 * fate-store outage (forwarder.fate_outage_policy=fire) are still being
 * reconciled and this task may be one of them; nothing was recorded:
 * retry. Any other error: nothing is known; retry.
 * Cancelling an id no forwarder has seen yet is allowed. */
kdelay_err_t kdelay_cancel(kdelay_client_t *client, const char *id,
                           char *errstr, size_t errstr_size);

/* Reads the fate of task id into *status. */
kdelay_err_t kdelay_status(kdelay_client_t *client, const char *id,
                           kdelay_status_t *status, char *errstr,
                           size_t errstr_size);

/* A task still waiting in a tier topic, as a scan found it. */
typedef struct kdelay_pending {
        char id[KDELAY_ID_MAX + 1];
        char target[256];     /* the topic it will be delivered to */
        char tier_topic[256]; /* where its record waits */
        int32_t partition;
        int64_t offset;
        int64_t fire_at_ms;
        kdelay_fate_t fate; /* UNDECIDED: waiting; FIRING: claimed, being
                               delivered */
} kdelay_pending_t;

/* Looks for task id in the tier topics: reads every record the forwarder
 * group has not handled yet, from its committed offsets to the end (a
 * consumer of the group that never joins it), for at most budget_ms
 * (0 = no bound), and fills *found with the first record of id whose
 * fate is not decided. KDELAY_ERR_NOT_FOUND: no such record (the task
 * fired, was cancelled, or never existed); KDELAY_ERR_TIMED_OUT: the
 * budget ran out first. Cost: a read of the pending part of every tier
 * partition — an admin call, not a hot-path one. */
kdelay_err_t kdelay_find(kdelay_client_t *client, const char *id,
                         int64_t budget_ms, kdelay_pending_t *found,
                         char *errstr, size_t errstr_size);

/* Moves pending task id to another time: finds its record (as
 * kdelay_find, budget_ms), cancels id, and schedules a new task with the
 * same target, key, value and user headers, due at fire_at_ms (or
 * delay_ms from now: exactly one of them set, the other
 * KDELAY_TIME_UNSET), carrying KDELAY_HDR_RESCHEDULED_FROM = id. The
 * new task's id is new_id, or a generated one when new_id is NULL; it
 * goes to new_id_out (KDELAY_ID_MAX + 1 bytes suffice).
 *  KDELAY_ERR_TOO_LATE: id fired (or is firing) first; nothing scheduled.
 *  KDELAY_ERR_NOT_FOUND / _TIMED_OUT: as kdelay_find; nothing changed.
 *  Any other error after the cancel: id IS cancelled and the new task may
 *  not be written; errstr says so. Finish it by calling again with the
 *  same new_id (from new_id_out): a cancelled id whose record is still
 *  pending is then rescheduled without another cancel, and a new task
 *  written twice under one id fires once. */
kdelay_err_t kdelay_reschedule(kdelay_client_t *client, const char *id,
                               int64_t fire_at_ms, int64_t delay_ms,
                               const char *new_id, int64_t budget_ms,
                               char *new_id_out, size_t new_id_out_size,
                               char *errstr, size_t errstr_size);

#ifdef __cplusplus
}
#endif
#endif /* KDELAY_KDELAY_H */
