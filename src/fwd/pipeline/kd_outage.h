/* SPDX-License-Identifier: Apache-2.0 */
/* forwarder.fate_outage_policy: what due tasks do while the fate store is
 * unreachable or failing. hold: they wait for their claims. fire: once
 * the store has been down for forwarder.fate_outage_after, they fire
 * without a claim, each with a journal record (kd_journal.h); when the
 * store answers again the journal is applied (kd_reconcile.h) before
 * claims go out again (for at most KD_OUTAGE_APPLY_WAIT_MS). Owns
 * f->outage; the claim stage asks it what to do with its queue. */
#ifndef KD_OUTAGE_H
#define KD_OUTAGE_H

#include "core/kd_fwd_core.h"

/* Claims wait at most this long for the journal to be applied. */
#define KD_OUTAGE_APPLY_WAIT_MS 30000
/* Every forwarder, either policy, applies the journal at its start and
 * this often after (a journal left by a forwarder that is gone). */
#define KD_OUTAGE_SWEEP_MS 30000
/* Each period is KD_OUTAGE_SWEEP_MS give or take this (spread by instance
 * and turn), so that forwarders started together do not sweep together
 * (review finding 10). */
#define KD_OUTAGE_SWEEP_JITTER_MS (KD_OUTAGE_SWEEP_MS / 5)
/* A forwarder renews the journal's mark this often while (and only while)
 * fires it made without a claim are unsettled. A clear, by any forwarder
 * (the owner too), needs the mark unrenewed for KD_OUTAGE_MARK_STALE_MS
 * by the store's clock, both as its run read it before the journal's ends
 * and when it clears: then no forwarder had fires unsettled when the ends
 * were read (each renews every KD_OUTAGE_RENEW_MS; the other 10 s are the
 * margin for a renewal that waits), so all their records were within the
 * ends. Cancels answer UNKNOWN after the last forwarder that fired settled
 * (or stopped) for about KD_OUTAGE_MARK_STALE_MS + 1 s + a run, at most
 * KD_OUTAGE_MARK_STALE_MS + KD_OUTAGE_SWEEP_MS + a run
 * (docs/reliability.md). */
#define KD_OUTAGE_RENEW_MS      5000
#define KD_OUTAGE_MARK_STALE_MS 15000

void kd_outage_init(kd_fwd_t *f);
/* The loop starts: the journal left by an earlier process is applied
 * (either policy; under fire claims wait for it), and again every
 * KD_OUTAGE_SWEEP_MS. */
void kd_outage_start(kd_fwd_t *f);
/* Shutdown: a reconciliation still running is stopped (its records are
 * applied again by the next one). */
void kd_outage_stop(kd_fwd_t *f);
/* The store went down or came back (kd_store_start's changed, wired by
 * fwd.c). */
void kd_outage_store_changed(kd_fwd_t *f);
/* 1 when due tasks fire without a claim now. */
int kd_outage_firing(const kd_fwd_t *f);
/* 1 while claims wait for the journal to be applied. */
int kd_outage_claims_wait(const kd_fwd_t *f);
/* Sets the gauges fate_outage_ms and firing_unclaimed. */
void kd_outage_gauges(kd_fwd_t *f);
/* For /readyz's body: a line saying tasks fire without claims, or that
 * the journal is being applied; "" when neither. */
void kd_outage_why(const kd_fwd_t *f, char *buf, size_t size);

#endif
