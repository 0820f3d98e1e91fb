/* SPDX-License-Identifier: Apache-2.0 */
/* Fire stage, failure and retry (fire_retry.c): for the fire stage's own
 * files only (kd_fire.h says which). A retried task waits in state RETRY
 * on its own timer, t->retry_as saying what it is produced as again. */
#ifndef KD_FIRE_RETRY_H
#define KD_FIRE_RETRY_H

#include "core/kd_fwd_core.h"

/* A fire that cannot succeed (err): logged, and the task dead-lettered. */
void kd_fire_failed(kd_fwd_t *f, kd_task_t *t, rd_kafka_resp_err_t err);
/* t is produced again as `as` in ms (what: the timer's name if it cannot
 * be armed, kd_fwd_oom), quietly. */
void kd_fire_retry_in(kd_fwd_t *f, kd_task_t *t, kd_task_state_t as, int64_t ms,
                      const char *what);
/* t is produced again as `as` after an exponential backoff (up to
 * forwarder.retry_max), counted and logged as event with err. */
void kd_fire_retry_later(kd_fwd_t *f, kd_task_t *t, kd_task_state_t as,
                         const char *event, rd_kafka_resp_err_t err);
/* A produce of t as `as` failed with err (logged as event): the failure
 * policy says what follows. */
void kd_fire_produce_failed(kd_fwd_t *f, kd_task_t *t, kd_task_state_t as,
                            rd_kafka_resp_err_t err, const char *event);
/* Producing t as `as` failed for good often enough (the mode counted,
 * err its last error): the policy for a poisoned record, no produce. */
void kd_fire_poisoned(kd_fwd_t *f, kd_task_t *t, kd_task_state_t as,
                      rd_kafka_resp_err_t err);
/* The mode holds t's produce as `as` back for wait_ms (capped): asked
 * again then, quietly. */
void kd_fire_wait_turn(kd_fwd_t *f, kd_task_t *t, kd_task_state_t as,
                       int wait_ms);

#endif
