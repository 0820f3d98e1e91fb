/* SPDX-License-Identifier: Apache-2.0 */
/* A forwarder made but never run, for unit tests of its stages: brokers
 * at 127.0.0.1:1 (never contacted), an in-memory fate store. */
#ifndef KD_FWD_OFFLINE_H
#define KD_FWD_OFFLINE_H

#include "top/kd_fwd.h"

/* 0 and *fp (the caller's, kd_fwd_destroy frees it), or -1. */
int kd_test_fwd_offline(kd_fwd_t **fp, const char *instance);

/* The same on a manual clock reading mono_ms and wall_ms (kd_timer.h),
 * with the settings kv (name, value, ..., NULL) besides: a stage's
 * timeline in virtual time; the in-memory store's leases pass on the same
 * clock (kd_fate_mem_set_lease_clock). 0 and *fp, or -1. */
int kd_test_fwd_vt(kd_fwd_t **fp, const char *instance, int64_t mono_ms,
                   int64_t wall_ms, const char *const *kv);
/* The same, its log lines (up to INFO) passed to log_cb with log_opaque
 * (borrowed: they must outlive the forwarder). */
int kd_test_fwd_vt_log(kd_fwd_t **fp, const char *instance, int64_t mono_ms,
                       int64_t wall_ms, const char *const *kv,
                       kdelay_log_cb_t *log_cb, void *log_opaque);

/* Virtual time: ms the manual clock moved since mono0; and the clock
 * stepped a millisecond at a time, ms times (or up to since == ms),
 * running what is due after each step, as the loop would. 0, or -1 when
 * the clock could not move (not a manual one). */
int64_t kd_test_since(const kd_fwd_t *f, int64_t mono0);
int kd_test_step(kd_fwd_t *f, int64_t ms);
int kd_test_step_to(kd_fwd_t *f, int64_t mono0, int64_t ms);
/* kd_test_step with the fate store answering at once: after each
 * millisecond, every answer out is served (kd_test_store_answers). 0, or
 * -1 as kd_test_step or when an answer took more than 10 s. */
int kd_test_step_serving(kd_fwd_t *f, int64_t ms);

/* A task as the intake leaves it in its partition's backlog (QUEUED, in
 * no partition), with id, target and fire-at; NULL when out of memory.
 * kd_test_task leaves its rate-limit rule unlooked-up (none);
 * kd_test_task_of looks it up in f's rules, as the intake does. */
kd_task_t *kd_test_task(const char *id, const char *target, int64_t fire_at_ms);
kd_task_t *kd_test_task_of(const kd_fwd_t *f, const char *id,
                           const char *target, int64_t fire_at_ms);
/* kd_test_task's, read from offset 7 of partition part (tracked there,
 * the partition's only task), in state; NULL when out of memory. */
kd_task_t *kd_test_task_in(kd_part_t *part, const char *id, const char *target,
                           int64_t fire_at_ms, kd_task_state_t state);
/* Takes t out of wherever it waits and the held set, and frees it. */
void kd_test_task_drop(kd_fwd_t *f, kd_task_t *t);

/* Waits for every request out on the fate store's worker to come back
 * and runs its answer (kd_store_serve), as the loop does when the
 * worker's fd is readable; a manual clock stands still meanwhile. 0, or
 * -1 when one took more than 10 s. */
int kd_test_store_answers(kd_fwd_t *f);

#endif
