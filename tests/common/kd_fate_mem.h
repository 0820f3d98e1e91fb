/* SPDX-License-Identifier: Apache-2.0 */
/* The fate store in memory: the same semantics as the MySQL store
 * (kd_fate.h, docs/fate-protocol.md), held to them by the same contract
 * tests (tests/common/kd_fate_contract.h), for tests of the forwarder's
 * claim and fire logic without MySQL. Statements are counted as the MySQL store
 * sends them: claim and takeover 2, cancel 1, or 2 when the row existed
 * (too late included), every other call 1, connect 0; a call failed by an
 * injected fault or by running out of memory counts none.
 *
 * Thread-safe: one mutex inside serialises the calls, so a test may set
 * rows (kd_fate_mem_put) from another thread while a forwarder uses the
 * store. A delay is waited with the mutex free, so slow calls overlap as
 * they would on a server. */
#ifndef KD_FATE_MEM_H
#define KD_FATE_MEM_H

#include "kd_fate.h"

/* Journals whose reconciliation markers it holds (kd_fate_pending_mark
 * of one more fails with KDELAY_ERR_NO_MEMORY). */
#define KD_FATE_MEM_JOURNALS 8

/* An empty store; the caller owns it (kd_fate_store_destroy). */
kdelay_err_t kd_fate_mem_new(kd_fate_store_t **storep);

/* The calls below fail with KDELAY_ERR_INVALID_ARG for a store not made by
 * kd_fate_mem_new. A "call" is one of kd_fate_store_connect,
 * kd_fate_cancel, kd_fate_status, kd_fate_claim, kd_fate_takeover,
 * kd_fate_mark_fired, kd_fate_mark_runs, kd_fate_note_cancelled, kd_fate_gc
 * and kd_fate_gc_runs that reaches
 * the store: past the argument checks and with a non-empty batch. */

/* The next n calls fail with err (not KDELAY_OK), errstr filled, nothing
 * changed; n = 0 ends an injection still pending. */
kdelay_err_t kd_fate_mem_fail_next(kd_fate_store_t *store, unsigned n,
                                   kdelay_err_t err);

/* Every call first waits ms (>= 0; 0 = none) from its start: a store that
 * answers slowly, or hangs. A new delay applies to the calls already
 * waiting too, so setting 0 ends a hang. kd_fate_store_interrupt ends the
 * wait with an error. */
kdelay_err_t kd_fate_mem_set_delay(kd_fate_store_t *store, int ms);

/* Leases are set and read by mono(arg) (milliseconds, monotonic; called
 * on the store's caller's thread, under the store's lock) instead of the
 * host's monotonic clock: a test on a manual clock (kd_timer.h) passes
 * one reading it, so that leases pass in its virtual time; NULL: the
 * host's clock again. */
kdelay_err_t kd_fate_mem_set_lease_clock(kd_fate_store_t *store,
                                         int64_t (*mono)(void *arg), void *arg);

/* Calls made so far, failed ones included; 0 for another kind of store. */
uint64_t kd_fate_mem_calls(const kd_fate_store_t *store);

/* A row as a test reads or writes it. */
typedef struct kd_fate_mem_row {
        kdelay_fate_t fate;                /* KDELAY_FATE_UNDECIDED: no row */
        int64_t fire_at_ms;                /* due time; -1 = none */
        int64_t decided_at_ms;             /* when inserted */
        int64_t updated_at_ms;             /* last change */
        char owner[KD_FATE_OWNER_MAX + 1]; /* "" = none */
        int64_t lease_ms; /* put: a lease from now, 0 = none; get: what is
                             left, 0 = expired, -1 = none */
} kd_fate_mem_row_t;

/* Reads the row of id as it is (a FIRING row a run covers stays FIRING
 * here). Not a call: no fault, delay or count. */
kdelay_err_t kd_fate_mem_get(kd_fate_store_t *store, const char *id,
                             size_t id_len, kd_fate_mem_row_t *row);

/* Writes the row of id as another process would have (fate UNDECIDED
 * deletes it), whatever the protocol allows. Not a call either. */
kdelay_err_t kd_fate_mem_put(kd_fate_store_t *store, const char *id,
                             size_t id_len, const kd_fate_mem_row_t *row);

/* Moves journal's last mark or renewal ms into the past, as if its
 * marker had stopped renewing it ms earlier. Not a call either;
 * KDELAY_ERR_NOT_FOUND when the journal has no marker. */
kdelay_err_t kd_fate_mem_pending_age(kd_fate_store_t *store,
                                     const char *journal, int64_t ms);

#endif
