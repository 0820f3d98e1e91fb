/* SPDX-License-Identifier: Apache-2.0 */
/* A task's lifecycle: the one owner of its state (kd_task_state_t) and of
 * its place (kd_task_where_t), and their one writer (lifecycle.c). Every
 * stage moves a task through kd_task_set_state, which checks the move
 * against a table of the moves the pipeline makes, as mode_eos.c's
 * txn_set_state does for the transaction; and takes a task out of
 * wherever it waits with kd_task_detach, whatever its state. A task's
 * place changes only here, each move checked against the places it may
 * come from (Debug and sanitizer builds stop on another): as it joins
 * and leaves a queue (kd_taskq_*), as its own timer is armed
 * (kd_task_arm), and by the named moves below that the claim stage (a
 * claim request out, answered) and the fire stage (a produce in flight,
 * reported) call. Below the stages (they all call it), above the store
 * (a claim request is a place). */
#ifndef KD_LIFECYCLE_H
#define KD_LIFECYCLE_H

#include "core/kd_fwd_core.h"

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

/* The claim stage: t (nowhere) waits on a claim or takeover request out
 * on the fate store (t->req); its answer came: t is nowhere again. */
void kd_task_to_claim_req(kd_task_t *t);
void kd_task_claim_answered(kd_task_t *t);
/* The fire stage: t (nowhere, or its timer just ran) was produced, its
 * report to come; its report came (t was in flight): nowhere again. */
void kd_task_to_flight(kd_task_t *t);
void kd_task_reported(kd_task_t *t);

/* The task queues (kd_taskq_t, kd_task.h), each a place. kd_taskq_init:
 * an empty queue that is the place `where` (not KD_WHERE_NONE).
 * kd_taskq_push, kd_taskq_push_front: t (nowhere, or its timer just ran)
 * joins q, its place q's. kd_taskq_pop: the head, taken out (nowhere);
 * NULL when empty. kd_taskq_remove: takes t out if in q (nowhere); 1 when
 * it was. */
void kd_taskq_init(kd_taskq_t *q, kd_task_where_t where);
void kd_taskq_push(kd_taskq_t *q, kd_task_t *t);
void kd_taskq_push_front(kd_taskq_t *q, kd_task_t *t);
kd_task_t *kd_taskq_pop(kd_taskq_t *q);
int kd_taskq_remove(kd_taskq_t *q, kd_task_t *t);

#endif
