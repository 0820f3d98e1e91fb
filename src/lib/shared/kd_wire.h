/* SPDX-License-Identifier: Apache-2.0 */
/* Wire format v1: validation, header encoding and decoding of task
 * records (docs/wire-format.md). Shared by the library and the forwarder. */
#ifndef KD_WIRE_H
#define KD_WIRE_H

#include <stddef.h>
#include <stdint.h>

#include <librdkafka/rdkafka.h>

#include <kdelay/kdelay.h>

/* Why a record is not a valid v1 task; the text is the dead-letter
 * reason header value. */
typedef enum kd_wire_defect {
        KD_WIRE_OK = 0,
        KD_WIRE_NO_VERSION,     /* "missing-version" */
        KD_WIRE_BAD_VERSION,    /* "unknown-version" */
        KD_WIRE_NO_ID,          /* "missing-id" */
        KD_WIRE_BAD_ID,         /* "bad-id": empty, > 128 bytes, not UTF-8 */
        KD_WIRE_NO_TARGET,      /* "missing-target" */
        KD_WIRE_BAD_TARGET,     /* "bad-target" */
        KD_WIRE_NO_FIRE_AT,     /* "missing-fire-at" */
        KD_WIRE_BAD_FIRE_AT,    /* "bad-fire-at": not decimal ms */
        KD_WIRE_ABSURD_FIRE_AT, /* "absurd-fire-at": beyond 10 years */
        KD_WIRE_DUP_HEADER,     /* "duplicate-header": a kdelay-* twice */
        KD_WIRE__COUNT
} kd_wire_defect_t;

const char *kd_wire_defect_str(kd_wire_defect_t d);

/* A decoded task; id and target point into the record's headers and
 * live as long as they do. Not NUL-terminated. */
typedef struct kd_wire_task {
        const char *id;
        size_t id_len;
        const char *target;
        size_t target_len;
        int64_t fire_at_ms;
} kd_wire_task_t;

/* Non-zero when id is 1..KDELAY_ID_MAX bytes of valid UTF-8 without control
 * characters (C0, DEL): ids end up in logs and terminals. */
int kd_wire_id_valid(const char *id, size_t len);

/* Non-zero when Kafka accepts name as a topic: 1..249 of [A-Za-z0-9._-],
 * not "." or "..". */
int kd_wire_topic_valid(const char *name, size_t len);
/* 1 when name (len bytes) is a Kafka internal topic (`__consumer_offsets`,
 * `__transaction_state`, any name starting with `__`): never a target. */
int kd_wire_topic_internal(const char *name, size_t len);

/* What the kdelay-not-before header of a record says. Forwarders write
 * it (a rate limit's turn), but any producer can: it is checked like any
 * input (docs/wire-format.md). */
typedef enum kd_wire_nb {
        KD_WIRE_NB_NONE = 0, /* absent */
        KD_WIRE_NB_OK,       /* a turn: *ms */
        KD_WIRE_NB_BAD,      /* not decimal epoch ms within 2^63 - 1 */
        KD_WIRE_NB_ABSURD    /* beyond now + 10 years + 1 day, as fire-at */
} kd_wire_nb_t;

/* Reads the last kdelay-not-before header of hdrs (may be NULL) into
 * *ms (0 unless KD_WIRE_NB_OK); now_ms bounds it as kd_wire_decode
 * bounds fire-at. */
kd_wire_nb_t kd_wire_not_before(const rd_kafka_headers_t *hdrs, int64_t now_ms,
                                int64_t *ms);

/* Non-zero when a user header name is usable: non-empty and not in the
 * reserved "kdelay-" namespace. */
int kd_wire_user_header_valid(const char *name);

/* Decodes hdrs (may be NULL) into *task. now_ms bounds fire-at (absurd when
 * beyond now + 10 years + 1 day). */
kd_wire_defect_t kd_wire_decode(const rd_kafka_headers_t *hdrs, int64_t now_ms,
                                kd_wire_task_t *task);

/* Builds the headers of a v1 task: user headers first, then kdelay-id,
 * kdelay-target, kdelay-fire-at, kdelay-v. Caller owns *hdrsp (pass it to
 * producev, which takes it on success, or destroy it). Inputs are assumed
 * validated. */
kdelay_err_t kd_wire_encode(rd_kafka_headers_t **hdrsp, const char *id,
                            const char *target, int64_t fire_at_ms,
                            const kdelay_header_t *user, size_t user_cnt);

#endif
