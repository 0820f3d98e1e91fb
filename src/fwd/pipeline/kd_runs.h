/* SPDX-License-Identifier: Apache-2.0 */
/* The run tracker (docs/plans/issue-44.md §1.2): which owner tokens of one
 * claim generation "<prefix>:<seq>" may be recorded as one delivered run
 * (kd_fate_mark_runs: every FIRING row owned by prefix:s, lo <= s <= hi,
 * was delivered), instead of a FIRED mark per task.
 *
 * Seqs come from claim.c's ++c->seq, which no generation resets: they
 * grow for the whole process, so a seq below a generation's first is an
 * earlier generation's. Each seq of the window is OPEN (its task may
 * still own, insert or take over a FIRING row undelivered) or DONE (its
 * task is finished: no row under its token can ever be FIRING and
 * undelivered). A seq never assigned (skipped) owns no row: DONE.
 * Every seq <= emitted is covered by a run taken, parked (skipped while
 * OPEN: never covered; if its task is delivered later, kd_runs_done says
 * so and the caller marks that task FIRED alone), never assigned, or of
 * an earlier generation. A run never covers an OPEN seq; runs of one
 * prefix never overlap.
 *
 * Pure: no clock (the caller passes now, monotonic ms), no log, no store.
 * Memory: one bit per seq of the window (emitted, last], in a ring of
 * 64-bit words that doubles when the window outgrows it (never shrinks,
 * at most KD_RUNS_WINDOW_MAX seqs), plus a fixed table of assign times
 * (KD_RUNS_SLICES slices): when kd_runs_take runs every flush (250 ms),
 * the window holds the seqs assigned in the last KD_RUN_PARK_MS +
 * KD_RUNS_SLICE_MS + one flush, e.g. 16 KB of bits for 100,000 claims a
 * second. Only kd_runs_new and a growing kd_runs_assign allocate. */
#ifndef KD_RUNS_H
#define KD_RUNS_H

#include <stddef.h>
#include <stdint.h>

/* An OPEN seq assigned at least this long ago is parked by kd_runs_take,
 * so the runs behind it keep flowing (the least; kd_runs_set_park). */
#define KD_RUN_PARK_MS 1000
/* Assign times are kept per slice of this long (at KD_RUN_PARK_MS; it
 * scales with the park time): a seq is parked no earlier than the park
 * time after its assign, and no later than the park time + a slice (at
 * the first take after). */
#define KD_RUNS_SLICE_MS 32
#define KD_RUNS_SLICES   (KD_RUN_PARK_MS / KD_RUNS_SLICE_MS + 3)
/* The longest window (seqs not yet emitted or parked): 16 MB of bits. */
#define KD_RUNS_WINDOW_MAX ((uint64_t)1 << 27)
/* A prefix "<token_name>:<boot>.<generation>" (kdelay_fired_run's
 * owner_prefix is VARBINARY(64)), with its NUL. */
#define KD_RUNS_PREFIX_MAX 65

typedef struct kd_runs kd_runs_t;

/* What kd_runs_done says of a finished task's seq. */
typedef enum kd_runs_cover {
        KD_RUNS_RUN,   /* a run taken later covers it: nothing to mark */
        KD_RUNS_PARKED /* no run ever will (parked, an earlier generation,
                          or not assigned here): a delivered task takes
                          its own FIRED mark */
} kd_runs_cover_t;

/* A tracker for generation prefix (copied) whose seqs follow last_seq
 * (claim.c's c->seq now). NULL when out of memory or prefix is longer
 * than KD_RUNS_PREFIX_MAX - 1. The caller owns it (kd_runs_free). */
kd_runs_t *kd_runs_new(const char *prefix, uint64_t last_seq);
void kd_runs_free(kd_runs_t *r);
/* A new generation: prefix (copied), seqs following last_seq. What the
 * window held is forgotten: drain it first (kd_runs_drop until it takes
 * fewer than it may), so its DONE seqs are covered under the old prefix.
 * -1 when prefix is too long (nothing changed). */
int kd_runs_restart(kd_runs_t *r, const char *prefix, uint64_t last_seq);
/* An OPEN seq is parked park_ms after its assign (at least
 * KD_RUN_PARK_MS, the default): longer where a task's claim comes that
 * much before its end (claim_ahead, an exactly_once transaction's
 * interval), so that such tasks are not all parked. Set it before the
 * first assign. */
void kd_runs_set_park(kd_runs_t *r, int64_t park_ms);
int64_t kd_runs_park_ms(const kd_runs_t *r);
/* The generation's prefix (the tracker's, valid until the next
 * restart). */
const char *kd_runs_prefix(const kd_runs_t *r);

/* Task token prefix:seq was made at now (seq > every seq assigned so far;
 * the seqs between, never assigned, count as DONE). The seq is OPEN.
 * -1 (nothing changed) when out of memory, when the window would pass
 * KD_RUNS_WINDOW_MAX, or when seq is not above the last one: the caller
 * must then not give this seq to a task (a seq never given owns no row:
 * the next assign counts it DONE). */
int kd_runs_assign(kd_runs_t *r, uint64_t seq, int64_t now_ms);
/* The task of seq is finished: delivered (exactly_once: committed), or
 * let go owning no row under its token (its claim answered CANCELLED,
 * DONE or another copy's; its row taken over by another owner), or its
 * DEAD mark acknowledged by the store. Call it once per task, never for
 * a task still alive. */
kd_runs_cover_t kd_runs_done(kd_runs_t *r, uint64_t seq);

/* At a flush: from emitted + 1, the longest stretches of DONE seqs, at
 * most max of them, into lo[i]..hi[i] (ascending, disjoint), parking
 * each OPEN seq met that was assigned KD_RUN_PARK_MS or more before now;
 * stops at an OPEN seq younger than that. The count of seqs parked is
 * added to *parked (may be NULL). Returns the runs taken (the caller now
 * records them; a failed record is the caller's to send again). */
size_t kd_runs_take(kd_runs_t *r, int64_t now_ms, uint64_t *lo, uint64_t *hi,
                    size_t max, uint64_t *parked);
/* A revoke, a new generation or a stop: as kd_runs_take, but every OPEN
 * seq is parked, whatever its age (a revoked claim's row stays FIRING for
 * the next owner). The window is empty once it returns fewer than max. */
size_t kd_runs_drop(kd_runs_t *r, uint64_t *lo, uint64_t *hi, size_t max,
                    uint64_t *parked);

/* Seqs not yet emitted nor parked (last - emitted). */
uint64_t kd_runs_waiting(const kd_runs_t *r);
/* Every seq up to it is covered, parked, never assigned or earlier. */
uint64_t kd_runs_emitted(const kd_runs_t *r);
/* The last seq assigned (or last_seq of the restart). */
uint64_t kd_runs_last(const kd_runs_t *r);
/* Bytes held (the tracker and its bitmap). */
size_t kd_runs_bytes(const kd_runs_t *r);

#endif
