/* SPDX-License-Identifier: Apache-2.0 */
/* Reconciliation after a fate-store outage (forwarder.fate_outage_policy
 * =fire): the journal topic is read from the journal group's committed
 * offsets ("<group_id>.journal", a group no consumer joins) up to the
 * ends it had when the run began, each record applied to the fate table
 * (kd_fate_apply_unclaimed: a FIRED row, and a kdelay_unclaimed row saying
 * what the row was before), and the offsets committed only after their
 * records were applied: a crash re-applies, which changes nothing.
 *
 * A journal topic that does not exist holds nothing to apply: the run
 * succeeds (journal_gone), so that a mark can clear once the forwarders
 * that fired apply their fires from memory. A committed offset past the
 * end (the topic made again) reads the topic from its start.
 *
 * It runs on a thread of its own, with its own consumer and its own MySQL
 * connection, so that the loop never waits for it; the loop polls it.
 * Every forwarder runs it at its start and every KD_OUTAGE_SWEEP_MS,
 * whatever its policy (a journal left by a forwarder that is gone), and
 * reads the schema version first (forwarder.fate_marks=auto switches on
 * it: kd_settle_schema_seen), and
 * one with the policy fire after each outage it fired through; several at
 * once apply the same records, which is idempotent.
 *
 * Cancels wait for it (docs/fate-protocol.md, "While a reconciliation is
 * pending"): a run reads the journal's marker before the ends it reads to
 * and marks it pending when it finds records to apply and no mark; the
 * loop clears the mark with the epoch the run read once its own fires
 * without a claim are all settled (outage.c). */
#ifndef KD_RECONCILE_H
#define KD_RECONCILE_H

#include <stdint.h>

#include <kdelay/kdelay.h>

#include "kd_conf.h"
#include "kd_fate.h"

typedef struct kd_reconcile kd_reconcile_t;

/* What a run did. */
typedef struct kd_reconcile_stats {
        uint64_t records;      /* journal records read */
        uint64_t applied;      /* applied (a FIRED row made sure) */
        uint64_t recorded;     /* of them, put on record by this run */
        uint64_t after_cancel; /* of those, CANCELLED before: delivered,
                                  or maybe delivered (a record of intent
                                  alone), after a cancel that answered OK */
        uint64_t intents;      /* records of intent read (at_least_once) */
        uint64_t unconfirmed;  /* intents without a delivery record after
                                  them in the run: fires that may have been
                                  delivered (read again, fired again) */
        uint64_t malformed;    /* records that are no journal record: skipped */
        int64_t end_lag;       /* records still to read, as of the run's
                                  start; 0 when done */
        /* The journal's reconciliation marker (kd_fate_pending_t) as the
         * run read it before the ends it reads to, after marking it
         * itself when it found records to apply and no mark: */
        int pending;              /* the journal was pending */
        uint64_t epoch;           /* its epoch: a clear names it */
        int marked;               /* the run marked it */
        int64_t pending_since_ms; /* pending since (marker's clock); -1 */
        int64_t marked_age_ms;    /* how long before the read the mark was
                                     made or renewed (the store's clock);
                                     -1 none */
        int journal_gone;         /* the journal topic does not exist: no
                                     record to read (a run that succeeds) */
        int schema; /* the fate store's schema version, read at the run's
                       start (kd_fate_schema_version); 0 unknown */
        /* The ones above were read (else all 0): a run that failed past
         * its first read of the marker has them too. */
        int read;
} kd_reconcile_stats_t;

/* Logs event=fired_after_cancel for item it, put on record with prior
 * CANCELLED (delivered: a delivery record, else a record of intent). */
void kd_reconcile_log_after_cancel(const kdelay_conf_t *conf,
                                   const kd_fate_unclaimed_t *it,
                                   int delivered);

/* Starts a run on a thread: conf and by (the instance, for the marker's
 * marked_by) are borrowed (must outlive the run). KDELAY_ERR_NO_MEMORY or
 * KDELAY_ERR_SYSTEM when it cannot start. */
kdelay_err_t kd_reconcile_start(kd_reconcile_t **rp, const kdelay_conf_t *conf,
                                const char *by);
/* The figures so far (safe while it runs). */
void kd_reconcile_progress(kd_reconcile_t *r, kd_reconcile_stats_t *st);
/* 1 when the run is over (kd_reconcile_end then returns at once). */
int kd_reconcile_finished(kd_reconcile_t *r);
/* Ends the run: stops it if still running (a MySQL call in progress is
 * interrupted), joins its thread, frees it. Returns how it ended:
 * KDELAY_OK when every record up to the ends was applied and committed,
 * else the error, with errstr set. *st gets the figures (may be NULL). */
kdelay_err_t kd_reconcile_end(kd_reconcile_t *r, kd_reconcile_stats_t *st,
                              char *errstr, size_t errstr_size);

#endif
