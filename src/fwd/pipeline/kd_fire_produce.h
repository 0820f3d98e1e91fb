/* SPDX-License-Identifier: Apache-2.0 */
/* Fire stage, headers and produce (fire_produce.c): for the fire stage's
 * own files only (kd_fire.h says which). */
#ifndef KD_FIRE_PRODUCE_H
#define KD_FIRE_PRODUCE_H

#include "core/kd_fwd_core.h"

/* Produces t's fire to its target, its checks made (kd_fire_now): its
 * own headers lent to the produce, out of the held set, its lateness
 * from now (wall clock). */
void kd_fire_to_target(kd_fwd_t *f, kd_task_t *t, int64_t now);
/* Sends t with headers hdrs (taken) to topic as `as` (FIRING, HOPPING or
 * DEAD): through the mode and the producer room; a failure, a wait or a
 * poisoned record goes to fire_retry.c. */
void kd_fire_produce(kd_fwd_t *f, kd_task_t *t, const char *topic,
                     rd_kafka_headers_t *hdrs, kd_task_state_t as);
/* A copy of t's headers as read, for a hop or a dead letter (the routing
 * headers its fire removed put back first); NULL when out of memory. The
 * caller owns the copy (kd_fire_produce takes it). */
rd_kafka_headers_t *kd_fire_headers_copy(kd_task_t *t);
/* The report m of t's produce brings t's lent headers back (if lent). */
void kd_fire_headers_returned(kd_task_t *t, const rd_kafka_message_t *m);

#endif
