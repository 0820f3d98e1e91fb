/* SPDX-License-Identifier: Apache-2.0 */
/* Fire stage, part two: produce a task's record to its target (fire), to a
 * smaller tier (hop) or to the dead-letter topic, retry failed produces,
 * and hand delivery reports to the settle stage through the delivery mode.
 */
#ifndef KD_FIRE_H
#define KD_FIRE_H

#include "core/kd_fwd_state.h"

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
/* librdkafka's delivery report callback (the producer's opaque is f). */
void kd_fire_dr_cb(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque);

#endif
