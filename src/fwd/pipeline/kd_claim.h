/* SPDX-License-Identifier: Apache-2.0 */
/* Claim stage: held tasks coming due are claimed in the fate store in
 * batches (no task fires without its FIRING row); a won claim goes to the
 * fire stage at its fire time, a cancelled or fired one is settled. While
 * the store is unreachable, tasks wait and claims are retried with
 * backoff. */
#ifndef KD_CLAIM_H
#define KD_CLAIM_H

#include "core/kd_fwd_core.h"

/* Sets the claim identity: instance name and boot id. */
void kd_claim_init(kd_fwd_t *f);
/* Starts a new claim generation (on every assignment). */
void kd_claim_new_generation(kd_fwd_t *f);
/* Every task of the generations so far is gone (a rewind dropped them
 * all after an abort): their claims are taken over at once, not after
 * their lease. */
void kd_claim_generations_gone(kd_fwd_t *f);
/* Timer callback: the held task (arg is the kd_fwd_t, the timer a task's)
 * is within claim_ahead of its fire time; queue its claim. */
void kd_claim_due_cb(kd_timer_t *tm, void *arg);
/* Queues t's claim (a batch goes out when full or claim_ahead/2 after
 * its first task was queued). */
void kd_claim_enqueue(kd_fwd_t *f, kd_task_t *t);
/* The fire stage asks: 1 when due task t may fire on its claim
 * stage's result: claimed, half its lease left (a fire's lease is renewed
 * while in flight); or let fire without a claim (KD_CLAIM_UNCLAIMED) and
 * the outage still lets it. 0: t is claimed again (kd_claim_enqueue), which
 * renews its lease, finds it lost, or claims it after all. */
int kd_claim_holds(const kd_fwd_t *f, const kd_task_t *t);
/* Claims may go out again, or tasks fire without them (kd_outage.h; the
 * store's gate marked, kd_store_gate): the queue is looked at now. */
void kd_claim_resume(kd_fwd_t *f);

#endif
