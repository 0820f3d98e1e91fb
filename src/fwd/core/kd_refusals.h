/* SPDX-License-Identifier: Apache-2.0 */
/* What target topics were seen to refuse, learned from records refused
 * alone (so surely for what they are): a topic that refused a keyless
 * record as INVALID_RECORD (a compacted topic), and the smallest record a
 * topic refused as too large. A later record the same topic would refuse
 * the same way goes to the dead letters before it is produced, so one bad
 * producer costs one refused batch per target, not one per record (an
 * aborted transaction each, in exactly_once). What is learned expires
 * after KD_REFUSALS_TTL_MS: an operator who changes the topic is believed
 * again by then. Sooner when the operator says so: a replayed task
 * (kdelay-replay-of, written by `kdelayctl dead replay` after a fix) is
 * answered only from what was learned after its tier record was written
 * (kd_refusals_since), so it is tried for real; and a delivery of what
 * the memory says its target refuses (a keyless record, a record at
 * least as large as the smallest refused) forgets that much
 * (kd_refusals_delivered): the fix is noticed by its first success. */
#ifndef KD_REFUSALS_H
#define KD_REFUSALS_H

#include <stddef.h>
#include <stdint.h>

#include <librdkafka/rdkafka.h>

#include "kd_task.h"

#define KD_REFUSALS_MAX    64
#define KD_REFUSALS_TTL_MS (10 * 60 * 1000)

typedef struct kd_refusal {
        char topic[256];       /* "" = free */
        int64_t keyless_until; /* monotonic; 0 = not learned */
        int64_t keyless_wall;  /* broker wall clock when last learned */
        size_t min_bytes;      /* smallest refused as too large */
        int64_t bytes_until;   /* monotonic; 0 = not learned */
        int64_t bytes_wall;    /* broker wall clock when last learned */
        rd_kafka_resp_err_t size_err;
        int64_t used_mono; /* the oldest goes when full */
} kd_refusal_t;

typedef struct kd_refusals {
        kd_refusal_t v[KD_REFUSALS_MAX];
        size_t used; /* topics in v: none, and a fire looks no further */
} kd_refusals_t;

/* What t's fire is counted as, in bytes: key, value and headers but the
 * routing ones (kdelay-target, kdelay-v), which a fire leaves behind. */
size_t kd_refusals_bytes(const kd_task_t *t);

/* t was refused alone with err (a record-class error): learns what it
 * says of t's target, at now_mono and now_wall (the broker's wall clock,
 * kd_fwd_now: what append times are compared with). */
void kd_refusals_learn(kd_refusals_t *r, const kd_task_t *t,
                       rd_kafka_resp_err_t err, int64_t now_mono,
                       int64_t now_wall);

/* What a check of t may answer from: everything (0), or for a replayed
 * task (it carries kdelay-replay-of) only what was learned after its tier
 * record was written (its append time): the replay says the target was
 * fixed, news newer than any refusal learned before it. */
int64_t kd_refusals_since(const kd_task_t *t);

/* The error t's target is known to refuse t with, from what was learned
 * at or after since_wall (kd_refusals_since; 0 = all); 0 when none. */
rd_kafka_resp_err_t kd_refusals_check(kd_refusals_t *r, const kd_task_t *t,
                                      int64_t now_mono, int64_t since_wall);

/* What kd_refusals_delivered forgot. */
#define KD_REFUSALS_FORGOT_KEYLESS 1
#define KD_REFUSALS_FORGOT_SIZE    2

/* t was delivered to its target: what the memory says that target
 * refuses and t was (a keyless record; a record at least as large as the
 * smallest refused) is forgotten, the topic having changed. Returns what
 * was forgotten (KD_REFUSALS_FORGOT_*), 0 when nothing. */
int kd_refusals_delivered(kd_refusals_t *r, const kd_task_t *t,
                          int64_t now_mono);

/* 1 when what t's target is known to refuse explains a batch of t's
 * refused with err (t itself not refused: kd_refusals_check said so):
 * a keyless record for INVALID_RECORD, a large one for a size error.
 * Then t was a victim of that batch, not its culprit. */
int kd_refusals_explains(kd_refusals_t *r, const kd_task_t *t,
                         rd_kafka_resp_err_t err, int64_t now_mono);

#endif
