/* SPDX-License-Identifier: Apache-2.0 */
/* A task's lifecycle: the one owner of its state (kd_task_state_t) and of
 * its place (kd_task_where_t). Every stage moves a task through
 * kd_task_set_state, which checks the move against a table of the moves
 * the pipeline makes (lifecycle.c), as mode_eos.c's txn_set_state does
 * for the transaction; and takes a task out of wherever it waits with
 * kd_task_detach, whatever its state. The queues set a task's place
 * as it joins and leaves them (kd_taskq_t); a task's own timer, a claim
 * request and a produce in flight are set by kd_task_arm, the claim
 * stage and the fire stage. Below the stages (they all call
 * it), above the store (a claim request is a place). */
#ifndef KD_LIFECYCLE_H
#define KD_LIFECYCLE_H

#include "core/kd_fwd_state.h"

/* Moves t to state `to`. A move outside the table is a bug: logged
 * (event=bug what=task_state) and counted (task_state_bugs); then Debug
 * and sanitizer builds abort, and Release builds make the move all the
 * same, so that the pipeline goes on as it would have. */
void kd_task_set_state(kd_fwd_t *f, kd_task_t *t, kd_task_state_t to);
/* 1 when the table allows the move from -> to. */
int kd_task_move_allowed(kd_task_state_t from, kd_task_state_t to);
/* The state's name in logs ("held"); "?" outside the enum. */
const char *kd_task_state_name(kd_task_state_t s);

/* Arms t's own timer (kd_timer_arm's arguments and answer, f as its
 * argument) and records it as t's place. */
int kd_task_arm(kd_fwd_t *f, kd_task_t *t, kd_clock_t clock, int64_t at,
                kd_timer_cb_t *cb);
/* Takes t out of its place (backlog, timer, claim queue or request,
 * pacing queue): 0, t is nowhere now. -1 when its produce is in flight
 * (its report will come for it): t is left where it is. */
int kd_task_detach(kd_fwd_t *f, kd_task_t *t);

/* 1 when t holds a claim of its own whose lease it must keep: claimed,
 * waiting to fire (rate limit, a retry of its fire) or firing. */
int kd_task_claimed(const kd_task_t *t);

#endif
