/* SPDX-License-Identifier: Apache-2.0 */
/* Fire stage, part two: produce a task's record to its target (fire), to a
 * smaller tier (hop) or to the dead-letter topic, retry failed produces,
 * and hand delivery reports to the settle stage through the delivery mode.
 * In five files by job: fire.c (deciding and starting a fire, a hop or a
 * dead letter), fire_produce.c (headers and the produce), fire_retry.c
 * (failure and retry), fire_journal.c (the journal records of a fire
 * without a claim) and fire_report.c (the delivery-report table); their
 * headers (kd_fire_produce.h, kd_fire_retry.h, kd_fire_journal.h) are for
 * each other only. */
#ifndef KD_FIRE_H
#define KD_FIRE_H

#include "core/kd_fwd_core.h"

/* When t is due as far as its lateness goes (t->late_ms = the produce's
 * time less this): its fire-at, or its tier's due time for a task written
 * already past it (fire.c says more). */
int64_t kd_fire_due_ms(const kd_task_t *t);
/* Produces t to its target now (wall-clock now, for lateness). */
void kd_fire_now(kd_fwd_t *f, kd_task_t *t, int64_t now);
/* Produces t to the tier that fits its remaining delay. */
void kd_fire_hop(kd_fwd_t *f, kd_task_t *t);
/* Produces t to the dead-letter topic with reason (static). */
void kd_fire_dead(kd_fwd_t *f, kd_task_t *t, const char *reason);
/* librdkafka's delivery report callback (the producer's opaque is f;
 * fire_report.c). */
void kd_fire_dr_cb(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque);

/* t's id quoted for a log line in buf (size bytes), or "-" when t has
 * none (a dead letter of a malformed record). */
const char *kd_fire_id(const kd_task_t *t, char *buf, size_t size);

#endif
