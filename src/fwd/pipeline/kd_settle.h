/* SPDX-License-Identifier: Apache-2.0 */
/* Settle stage, the common part under both delivery modes: a handled
 * task's offset is done and the task freed; FIRED marks and the due times
 * of dropped cancelled tasks go to the fate store in batches. The modes
 * (kd_mode_ops.h) build on these; upstream, it tells the intake when a
 * commit point moved (kd_intake_room). */
#ifndef KD_SETTLE_H
#define KD_SETTLE_H

#include "core/kd_fwd_core.h"

/* Lets t go: out of its place (kd_task_detach), its partition's list and
 * the held set, and frees it; its offset stays not done (a restart or the
 * next owner re-reads it). A task whose produce is in flight is only
 * unlinked from its partition: an orphan, released again by its report. */
void kd_settle_release(kd_fwd_t *f, kd_task_t *t);
/* Marks t's offset handled (when it still has its partition) and frees
 * it. */
void kd_settle_done(kd_fwd_t *f, kd_task_t *t);

/* How a produce of t as `as` (KD_TASK_FIRING, _HOPPING, _DEAD; _JOURNAL:
 * the record itself) is put on record (kd_settle_mark_t, kd_task.h). */
kd_settle_mark_t kd_settle_mark(const kd_task_t *t, kd_task_state_t as);
/* t's produce was delivered (at_least_once): its mark as kd_settle_mark
 * says (a fire FIRED, or counted and kept when its journal record stands
 * for it; the dead letter of a claimed fire DEAD), its offset done, t
 * freed. */
void kd_settle_delivered(kd_fwd_t *f, kd_task_t *t);

/* Task id was delivered (exactly_once: committed), late_ms after its fire
 * time: counted, and its FIRED mark queued (a copy of id is kept) unless
 * it was fired without a claim (its journal record stands for it) or a
 * run of the tracker will cover seq, its token's (forwarder.fate_marks=
 * runs; seq 0 = no token). */
void kd_settle_fired(kd_fwd_t *f, const char *id, int64_t late_ms,
                     int unclaimed, uint64_t seq);
/* t, fired without a claim and delivered (at_least_once), has no journal
 * record and never will (its record of delivery refused for good): its
 * fire is counted and kept in memory as kd_settle_fired keeps one, and t
 * with it, its offset not done and back in the held set, until that fire
 * is applied (kd_settle_apply_unclaimed); then t is settled
 * (kd_settle_done). So its offset is never committed with its fire on no
 * record: a crash before the apply reads t again. Released before (its
 * partition revoked, a stop), t goes unsettled and its fire is applied all
 * the same; already without a partition (revoked while its fire was out),
 * t is released at once, its fire kept. -1 when out of memory (nothing
 * done). */
int kd_settle_fired_held(kd_fwd_t *f, kd_task_t *t);
/* Fires made without a claim kept for kd_settle_apply_unclaimed (queued
 * and in requests out). */
size_t kd_settle_unclaimed(const kd_fwd_t *f);
/* Applies them to the fate store (kd_fate_apply_unclaimed, batches of
 * claim_batch, while the store takes them), after the journal's run:
 * those the journal lost are put on record from here (logged
 * event=journal_records_missing), and the tasks waiting for them
 * (kd_settle_fired_held) settled; failed ones are queued again. */
void kd_settle_apply_unclaimed(kd_fwd_t *f);
/* At the end: logs those not applied (the store down), each id too when
 * journal_lost (the journal failed meanwhile, or its topic is gone). */
void kd_settle_unclaimed_left(kd_fwd_t *f, int journal_lost);
/* The reasons kd_settle_dead marks (KD_SETTLE_DEAD_REASONS), and the
 * index of reason among them, or -1. */
extern const char *const kd_settle_dead_reasons[];
int kd_settle_dead_index(const char *reason);
/* Task id, claimed, was dead-lettered (exactly_once: committed) with
 * reason: its DEAD mark queued (a copy of id is kept), with seq, its
 * token's, finished (kd_settle_run_finished) once the mark is in. */
void kd_settle_dead(kd_fwd_t *f, const char *id, const char *reason,
                    uint64_t seq);

/* Runs of delivered claims (forwarder.fate_marks=runs or auto, kd_runs.h,
 * docs/plans/issue-44.md §7): settle owns the tracker of the claim
 * generation; each flush records the runs it lets go. With rows (or no
 * tracker for lack of memory) these do nothing. */
/* 1 when deliveries go into runs: forwarder.fate_marks=runs, or auto and
 * the schema last read (kd_settle_schema_seen) is lean-fate's
 * (KD_FATE_LEAN_SCHEMA) or newer. */
int kd_settle_runs_on(const kd_fwd_t *f);
/* The fate store's schema is version (read every KD_OUTAGE_SWEEP_MS by
 * the journal's run; <= 0 unknown: ignored). Under auto, reaching
 * KD_FATE_LEAN_SCHEMA switches rows -> runs at once (logged
 * event=fate_marks_switch), for the seqs given from now on: every reader
 * from 0.4.0 on understands both ways, so no fence is needed. */
void kd_settle_schema_seen(kd_fwd_t *f, int version);
/* A new claim generation, prefix "<token_name>:<boot>.<gen>", its seqs
 * after last_seq: the tracker made (the first), or the last one's runs
 * queued to be sent and its unfinished seqs parked (never covered). */
void kd_settle_run_generation(kd_fwd_t *f, const char *prefix,
                              uint64_t last_seq);
/* seq is given to a task's new token now. -1 when it must not be (out of
 * memory: the tracker refused it; the caller makes no token). */
int kd_settle_run_assign(kd_fwd_t *f, uint64_t seq);
/* The task of seq (0: none) let go owning no row under its token, or its
 * DEAD mark in: a run may cover it. Never for a task still alive, nor
 * for one delivered (kd_settle_fired). */
void kd_settle_run_finished(kd_fwd_t *f, uint64_t seq);
/* The runs_window gauges, read before they are shown. */
void kd_settle_runs_gauges(kd_fwd_t *f);
/* Queues the due time of a task dropped as CANCELLED for its row. */
void kd_settle_note_cancelled(kd_fwd_t *f, const char *id, int64_t fire_at);
/* Writes what is queued now, in batches, unless the store backs off. */
void kd_settle_flush(kd_fwd_t *f);
/* Writes all that is queued and waits for the answers (a stop: the
 * loop's timers no longer send the next batches), until deadline
 * (monotonic). 0 when nothing is left queued or out; -1 when the deadline
 * came first or a mark failed (the store backs off): what is left
 * (kd_settle_queued) stays FIRING, which a cancel still answers "too
 * late" and audit --fix marks. */
int kd_settle_drain(kd_fwd_t *f, int64_t deadline);
/* FIRED and DEAD marks, runs and cancel due times queued, not yet
 * sent. */
size_t kd_settle_queued(const kd_fwd_t *f);
/* The same, only when the batch is due (full, or waited long enough). */
void kd_settle_flush_due(kd_fwd_t *f);
/* Frees what is queued (shutdown). */
void kd_settle_clear(kd_fwd_t *f);

#endif
