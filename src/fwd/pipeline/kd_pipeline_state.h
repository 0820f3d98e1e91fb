/* SPDX-License-Identifier: Apache-2.0 */
/* The pipeline room's state: one struct per stage, private to
 * the pipeline room (and the unit tests); every other room asks the stages'
 * functions (kd_intake.h, kd_held.h, kd_claim.h, ...).
 * cmake/fwd_rooms.cmake refuses this header to the other rooms. */
#ifndef KD_PIPELINE_STATE_H
#define KD_PIPELINE_STATE_H

#include <stddef.h>
#include <stdint.h>

#include "core/kd_behind.h"
#include "core/kd_fwd_core.h"
#include "core/kd_idq.h"
#include "core/kd_skew.h"
#include "kd_ratelimits.h"

/* forwarder.fate_outage_policy=fire (outage.c): whether due tasks fire
 * without a claim now, and the journal's application after an outage
 * (reconcile.c) that claims wait for. */
typedef struct kd_fwd_outage {
        int firing;                /* due tasks fire without a claim */
        int64_t firing_since_mono; /* when firing began */
        kd_timer_t timer; /* monotonic: the outage reaches fate_outage_after;
                             then, while applying, its bound */
        int applying;     /* the journal is being applied: claims wait */
        int64_t applying_since_mono;
        struct kd_reconcile *reconcile; /* owned; NULL = none running */
        int apply_again;           /* the last run failed: again when the store
                                      answers (timer) */
        uint64_t journal_at_start; /* f->journal->delivered when the run
                                      began: records since need another */
        kd_timer_t poll;           /* monotonic: is it done? */
        /* The journal's reconciliation marker (docs/fate-protocol.md):
         * cleared with the epoch the last run read, once this process's
         * fires without a claim are all settled. */
        int clear_wanted;
        uint64_t clear_epoch;
        int clear_out;              /* the clear is on the store */
        int64_t settle_since_mono;  /* waiting for them since */
        int64_t settle_logged_mono; /* the wait last logged */
        kd_timer_t settle;          /* monotonic: settled yet? */
        /* Every forwarder, either policy: a run every KD_OUTAGE_SWEEP_MS
         * applies a journal left by a forwarder that is gone, and clears
         * a mark nobody renews (outage.c). */
        kd_timer_t sweep;    /* monotonic: the next run */
        int sweeping;        /* the run going on is in the background (claims do
                                not wait; a failure waits for the next sweep) */
        const char *run_why; /* static: why it began */
        uint64_t sweeps;     /* sweep periods drawn (their jitter's turn) */
        const char *rerun_why; /* static: a run claims wait for, to begin
                                  when the sweep going on ends; NULL */
        int sweep_failed;      /* the last background run failed (logged) */
        int owns_mark;         /* this process marked the journal and has not
                                  cleared it: renewed every KD_OUTAGE_RENEW_MS */
        int renew_out;         /* a renewal is on the store */
        int remark;            /* the next renewal is a mark (a new epoch) */
        int64_t renewed_mono;  /* monotonic: the last renewal answered; 0 */
        kd_timer_t renew;      /* monotonic: the next renewal */
        int64_t pending_seen_since_ms; /* the mark as the last run read it
                                          (the marker's clock); -1 = none */
        int64_t pending_seen_mono;     /* monotonic: when a run last read
                                          it */
        int64_t gone_seen_mono;    /* monotonic: the first run of those since
                                      that found no journal topic; 0 none */
        int64_t clear_read_age_ms; /* the mark's age (store's clock) as the
                                      run to clear with read it, before its
                                      ends: a clear needs it stale */
} kd_fwd_outage_t;

/* The journal topic "<topic_prefix>.journal" (journal.c): one record per
 * fire made without a claim. */
typedef struct kd_fwd_journal {
        char topic[256];
        char marker;     /* the opaque of journal records produced in the fire's
                            transaction: &marker */
        size_t inflight; /* such records awaiting their report */
        uint64_t delivered; /* journal records delivered (both modes) */
        /* A journal write failed: no fire without a claim until then
         * (monotonic; 0 = none). */
        int64_t broken_until_mono;
        /* Monotonic: the first of the "unknown topic or partition"
         * answers since the last record delivered (0 = none): the topic
         * is taken for gone once they span KD_JOURNAL_GONE_CONFIRM_MS. */
        int64_t gone_since_mono;
} kd_fwd_journal_t;

/* Claim identity and queue (claim.c). Claim tokens
 * "<instance>:<boot>.<generation>:<seq>": a FIRING row whose owner starts
 * with prefix was claimed by another copy of the same task inside this
 * assignment, which this process still holds or has fired. */
typedef struct kd_fwd_claim {
        /* The instance (f->instance) in tokens: itself up to 20
         * characters, else its first 11, '~' and a hash of the whole
         * (distinct instances keep distinct names). */
        char token_name[24];
        char own_tag[40];  /* "<token_name>:": tokens of this instance */
        char boot_tag[12]; /* "<boot>.": tokens of this process */
        char prefix[48];
        uint32_t boot;
        unsigned generation;
        /* Generations up to this one have no task left in this process
         * (a rewind dropped them all): their FIRING claims are taken over
         * at once. 0 = none. */
        unsigned gone_upto;
        uint64_t seq;
        kd_taskq_t q;
        int64_t q_since_mono; /* when the oldest queued claim was queued */
        kd_timer_t flush;     /* monotonic: batch full, or waited enough */
        size_t inflight;      /* claim and takeover requests out */
        kd_timer_t renew;     /* monotonic: leases to renew */
} kd_fwd_claim_t;

/* Tasks of one forwarder.target_rate_limits rule in the held set, or of
 * every rule together (held.c). */
typedef struct kd_held_share {
        size_t cnt;
        int64_t bytes;
        size_t out_cnt; /* sent back for their turns, not yet settled */
        int64_t out_bytes;
} kd_held_share_t;

/* The held set: tasks kept in memory until due (held.c). */
typedef struct kd_fwd_held {
        size_t cnt;
        int64_t bytes;
        /* Of them, the tasks to rate-limited targets, per rule (a task's
         * held_rule) and of all rules together: each rule keeps to its
         * share (kd_held_share_full), so that a limited target's backlog
         * leaves room for the tasks of other targets. */
        kd_held_share_t rule[KD_RATELIMITS_MAX];
        kd_held_share_t limited;
        size_t out_cnt; /* hops and dead letters not yet settled (with
                           the tasks sent back, counted in their rule's
                           out too) */
        int64_t out_bytes;
        /* A partition paused for room: until then (monotonic), or until
         * the set is down to half, every partition takes tasks only below
         * half the limits (kd_held_drain); 0 = not draining. */
        int64_t low_until_mono;
        kd_timer_t drain_end; /* monotonic: ends a drain at its limit */
} kd_fwd_held_t;

/* One forwarder.target_rate_limits rule: its bucket and the due tasks
 * to its targets waiting for it, in due order (pace.c). */
typedef struct kd_fwd_rlim {
        kd_fwd_t *f; /* its forwarder: the timer's argument */
        double tokens;
        int64_t tokens_mono; /* last refill; 0 = never */
        kd_taskq_t q;
        kd_timer_t timer;  /* monotonic: the next token for q's head */
        uint64_t waited;   /* tasks that waited for it (counter) */
        int64_t waited_ms; /* how long they waited, summed (counter) */
        /* The fires' own bucket (same rate and burst), taken when a fire
         * is produced, and the claimed due tasks waiting for it in due
         * order: a loop held up (a commit, a slow host) or claims answered
         * together cannot bunch the fires past the burst. */
        double fire_tokens;
        int64_t fire_tokens_mono; /* last refill; 0 = never */
        kd_taskq_t fire_q;
        kd_timer_t fire_timer; /* monotonic: the next token for fire_q */
        double defer_until;    /* the last turn given to a task sent back
                                  to Kafka (wall ms, fractional: turns
                                  closer than 1 ms apart above 1000/s;
                                  0 = none) */
} kd_fwd_rlim_t;

/* forwarder.max_fire_rate: a token bucket and the due tasks waiting for
 * it in due order; and one per target rate limit in front of it
 * (pace.c). */
typedef struct kd_fwd_pace {
        double tokens;
        int64_t tokens_mono; /* last refill; 0 = never */
        kd_taskq_t q;
        kd_timer_t timer; /* monotonic: the next token for q's head */
        /* forwarder.target_rate_limits: the conf's, parsed when set */
        const kd_ratelimits_t *rules;
        kd_fwd_rlim_t *lim; /* owned: one per rule */
        double share;       /* this forwarder's part of each limit */
        /* Partitions of the tier topics the group reads, from the last
         * metadata the ops' tier check read (kd_pace_tier_partitions);
         * 0 = unknown. */
        int tier_partitions;
        int64_t share_mono; /* when share was worked out; 0 = never */
} kd_fwd_pace_t;

/* Settled fates waiting for the fate store (settle.c). */

/* The dead-letter reasons of a claimed task (a fire that failed;
 * kd_settle_dead_reasons). */
#define KD_SETTLE_DEAD_REASONS 3

typedef struct kd_fwd_settle {
        kd_idq_t fired; /* delivered, not yet marked FIRED */
        kd_idq_t seen;  /* dropped as CANCELLED, due time not yet written */
        /* Claimed, then dead-lettered, not yet marked DEAD: one queue per
         * reason of kd_settle_dead_reasons. */
        kd_idq_t dead[KD_SETTLE_DEAD_REASONS];
        kd_timer_t flush;
        size_t inflight; /* mark requests out */
        /* Fires made without a claim, delivered (exactly_once: committed),
         * kept until applied from here after the journal's run
         * (kd_settle_apply_unclaimed): a journal topic lost meanwhile
         * loses no report while this process lives. Owned. */
        struct kd_ufire *uf;
        size_t uf_len, uf_cap;
        size_t uf_out;      /* of them in requests out (not in uf) */
        int uf_full_logged; /* the bound was logged in this outage */
        /* forwarder.fate_marks=runs (docs/plans/issue-44.md §7): the run
         * tracker of the claim generation (owned; NULL = a FIRED mark per
         * task), and the runs taken from it waiting to be sent (owned,
         * settle.c's kd_run_t; those sent come back here if they fail). */
        struct kd_runs *runs;
        struct kd_run *rq;
        size_t rq_len, rq_cap;
        int runs_off; /* the tracker could not be made: marks per task */
        int schema;   /* the fate store's schema version last read; 0 =
                         none yet (kd_settle_schema_seen) */
} kd_fwd_settle_t;

/* This clock against the broker's, and the probes that measure it
 * (probe.c). */
typedef struct kd_fwd_clock {
        kd_skew_t skew;
        int skewed;               /* logged as beyond max_clock_skew */
        int known;                /* a sample came, or none can: fires go */
        int64_t started_mono;     /* the loop's start */
        int64_t last_sample_mono; /* 0 = none yet */
        kd_timer_t probe;         /* monotonic: the next probe */
        int out;                  /* a probe awaits its report */
        int unusable;             /* its broker time says nothing: stop */
        int64_t sent_ms;          /* its local send time */
        char marker;              /* its opaque: &marker */
} kd_fwd_clock_t;

/* Assigned partitions: the record path (intake.c); the list and the
 * flags below are kept by the rebalance stage (rebalance.c). */
typedef struct kd_fwd_intake {
        kd_part_t *parts;
        size_t full;     /* partitions in KD_PART_FULL */
        kd_timer_t room; /* monotonic, now: room appeared for FULL ones */
        int settled;     /* an assignment (maybe empty) and no revoke since */
        /* Monotonic: the revoke that ended the last settled assignment
         * (0 = never settled); readiness (kd_ready.h) bounds a rebalance. */
        int64_t revoked_at;
        int rewind_due; /* a rewind asked for inside the pump: next turn */
} kd_fwd_intake_t;

/* Where a test stands in for a stage, set by kd_pipeline_state_new to
 * the stage itself: the pacing stage hands a task whose target's rate limit let
 * it through to the claim stage (kd_claim_enqueue) through claim, which the
 * virtual-time tests of the schedule, pacing and backlog set to a claim
 * won at once (tests/unit/fwd/pipeline/: test_sched_vt.c, test_pace_vt.c,
 * test_backlog_vt.c). Every other call between the stages is plain. */
typedef struct kd_fwd_hooks {
        /* Held task t may be claimed now (upstream of the claim's
         * answer). */
        void (*claim)(kd_fwd_t *f, kd_task_t *t);
} kd_fwd_hooks_t;

/* The stages' state in one allocation (kd_pipeline_state_new), each
 * reached by its handle in struct kd_fwd (f->claim, f->held, ...). */
typedef struct kd_pipeline_state {
        kd_fwd_intake_t intake;
        kd_fwd_held_t held;
        kd_behind_t behind;
        kd_fwd_claim_t claim;
        kd_fwd_outage_t outage;
        kd_fwd_journal_t journal;
        kd_fwd_pace_t pace;
        kd_fwd_clock_t clock;
        kd_fwd_settle_t settle;
        kd_fwd_hooks_t hooks;
} kd_pipeline_state_t;

#endif
