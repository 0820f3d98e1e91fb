/* SPDX-License-Identifier: Apache-2.0 */
/* The pipeline room's state as a whole (pipeline_state.c): made and
 * freed by top (fwd.c), and what other rooms read of it, each a
 * function: the room's fields are private (kd_pipeline_state.h). */
#ifndef KD_PIPELINE_H
#define KD_PIPELINE_H

#include <stddef.h>

#include "core/kd_fwd_core.h"

/* f->intake, f->held, ..., f->hooks made in one allocation, zeroed, their
 * timers initialised and the claim hook set to kd_claim_enqueue; the
 * stages' own init (kd_claim_init, kd_journal_init, kd_outage_init,
 * kd_pace_init) follows. KDELAY_ERR_NO_MEMORY, else KDELAY_OK. */
kdelay_err_t kd_pipeline_state_new(kd_fwd_t *f);
/* Frees what kd_pipeline_state_new made, after the stages' own clear
 * and stop functions (kd_fwd_destroy calls those); the handles NULL.
 * NULL handles: nothing. */
void kd_pipeline_state_free(kd_fwd_t *f);

/* What waits for the store, for its log lines (kd_store_load_fn): tasks
 * held, claims queued. */
void kd_pipeline_load(const kd_fwd_t *f, size_t *held, size_t *claim_queue);

/* The pipeline's gauges set from its state, just before they are shown:
 * held tasks and bytes, hops and dead letters out, the claim queue,
 * partitions and the paused ones, the "behind" signal, the outage's and
 * the runs' gauges. */
void kd_pipeline_gauges(kd_fwd_t *f);

#endif
