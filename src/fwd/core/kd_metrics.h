/* SPDX-License-Identifier: Apache-2.0 */
/* The forwarder's metric table: one row per metric (name, type, unit,
 * labels, help), in the manner of nng's nni_stat_info. The same rows make
 * the `event=stats` log line now and the Prometheus exporter later; a new
 * metric is one line in KD_METRICS. Counters only ever go up. The one
 * family outside it is per partition (labelled by topic and partition,
 * their number unknown until assignment): kd_partgauges.h. */
#ifndef KD_METRICS_H
#define KD_METRICS_H

#include <stddef.h>
#include <stdint.h>

typedef enum kd_metric_type {
        KD_METRIC_COUNTER,  /* monotonic, never decreases */
        KD_METRIC_GAUGE,    /* a level, set when read */
        KD_METRIC_HISTOGRAM /* observations in buckets (kd_metric_bounds) */
} kd_metric_type_t;

/* X(ID, name, type, unit, help): name is the log key and the base of the
 * exported name; unit "" for counts. The log line keeps this order. */
#define KD_METRICS(X)                                                          \
        X(READ, "read", COUNTER, "", "Tier records read")                      \
        X(HELD, "held", COUNTER, "", "Tasks taken into the held set")          \
        X(HOPPED, "hopped", COUNTER, "", "Tasks hopped to a smaller tier")     \
        X(FIRED, "fired", COUNTER, "",                                         \
          "Tasks delivered to their target (exactly_once: committed)")         \
        X(CANCELLED, "cancelled", COUNTER, "",                                 \
          "Tasks dropped because their fate is CANCELLED")                     \
        X(ALREADY_FIRED, "already_fired", COUNTER, "",                         \
          "Tasks dropped because their fate is FIRED")                         \
        X(DUP_COPIES, "dup_copies", COUNTER, "",                               \
          "Copies of a task claimed by another copy in this assignment")       \
        X(FOREIGN_WAITS, "foreign_waits", COUNTER, "",                         \
          "Claims found FIRING under another owner and re-checked later")      \
        X(LEASE_RENEWALS, "lease_renewals", COUNTER, "",                       \
          "Claim leases renewed for tasks held or fired past a third of it")   \
        X(LEASES_LOST, "leases_lost", COUNTER, "",                             \
          "Claims found taken over after their lease passed")                  \
        X(TAKEOVERS, "takeovers", COUNTER, "",                                 \
          "FIRING claims taken over from an owner that seems gone")            \
        X(OWN_TAKEOVERS, "own_takeovers", COUNTER, "",                         \
          "FIRING claims of this instance's previous process, taken at once")  \
        X(HANDED_OVER, "handed_over", COUNTER, "",                             \
          "Held tasks hopped on a revoke for the next owner")                  \
        X(RATE_DEFERRED, "rate_deferred", COUNTER, "",                         \
          "Tasks to a rate-limited target sent back to a tier topic until "    \
          "their turn (the rule's share of the held set, or its queue, was "   \
          "full)")                                                             \
        X(NOT_BEFORE_IGNORED, "not_before_ignored", COUNTER, "",               \
          "Tasks whose kdelay-not-before was ignored: malformed, beyond 10 "   \
          "years, or on a target no rate limit limits")                        \
        X(DEAD, "dead", COUNTER, "", "Records dead-lettered (or dropped)")     \
        X(CREATE_TIME, "create_time", COUNTER, "",                             \
          "Tier records with the producer's time, not LogAppendTime")          \
        X(SCHEDULED_PAST, "scheduled_past", COUNTER, "",                       \
          "Tasks written already past their fire-at (lateness counts from "    \
          "their tier's due time)")                                            \
        X(WRONG_TIER, "wrong_tier", COUNTER, "",                               \
          "Tasks read from a tier larger than their delay allows")             \
        X(PRODUCE_RETRIES, "produce_retries", COUNTER, "",                     \
          "Produces retried after a failure")                                  \
        X(HELD_NOW, "held_now", GAUGE, "", "Tasks in the held set")            \
        X(HELD_MAX, "held_max", GAUGE, "", "Most tasks held at once")          \
        X(HELD_BYTES, "held_bytes", GAUGE, "bytes",                            \
          "Memory accounted to the held set")                                  \
        X(OUT_NOW, "out_now", GAUGE, "",                                       \
          "Hops and dead letters produced or retrying, not yet settled")       \
        X(OUT_MAX, "out_max", GAUGE, "",                                       \
          "Most hops and dead letters out at once")                            \
        X(CLAIM_QUEUE, "claim_queue", GAUGE, "", "Tasks waiting for a claim")  \
        X(INFLIGHT, "inflight", GAUGE, "", "Produces awaiting a report")       \
        X(PARTITIONS, "partitions", GAUGE, "", "Assigned tier partitions")     \
        X(PAUSED_WAITING, "paused_waiting", GAUGE, "",                         \
          "Partitions paused until their head is due")                         \
        X(TXN_COMMITS, "txn_commits", COUNTER, "", "Transactions committed")   \
        X(TXN_ABORTS, "txn_aborts", COUNTER, "", "Transactions aborted")       \
        X(TXN_ABORT_STREAK, "txn_abort_streak", GAUGE, "",                     \
          "Transactions aborted in a row (0 after a commit)")                  \
        X(RECORD_ABORTS, "record_aborts", COUNTER, "",                         \
          "Records produced in transactions that aborted")                     \
        X(REFUSED_KNOWN, "refused_known", COUNTER, "",                         \
          "Fires dead-lettered unproduced: their target refused such a "       \
          "record alone lately")                                               \
        X(SOLO, "solo", COUNTER, "",                                           \
          "Records produced alone after their batch or transaction failed")    \
        X(FIRES_BULK, "fires_bulk", COUNTER, "",                               \
          "Fires delivered through the bulk producer (at_least_once: "         \
          "late by more than 100 ms, a backlog; linger.ms 5)")                 \
        X(FIRES_PRECISE, "fires_precise", COUNTER, "",                         \
          "Fires delivered through the main producer (linger.ms 1)")           \
        X(BEHIND, "behind", GAUGE, "",                                         \
          "1 while tasks already due wait (a backlog: claim batches grow)")    \
        X(PRODUCER_RENEWALS, "producer_renewals", COUNTER, "",                 \
          "Producers re-created after a fatal error")                          \
        X(SKIPPED_DONE, "skipped_done", COUNTER, "",                           \
          "Records skipped as handled by an earlier owner (done set)")         \
        X(RATE_LIMITED, "rate_limited", COUNTER, "",                           \
          "Fires delayed by forwarder.max_fire_rate or a target rate limit")   \
        X(PAUSED_FULL, "paused_full", GAUGE, "",                               \
          "Partitions paused for back-pressure")                               \
        X(TIER_TOPICS_MISSING, "tier_topics_missing", GAUGE, "",               \
          "Tier topics of the ladder (and the journal under "                  \
          "fate_outage_policy=fire) that do not exist (kdelayctl topics "      \
          "create)")                                                           \
        X(INSTANCE_IN_USE, "instance_in_use", GAUGE, "",                       \
          "Other members of the group with this forwarder's instance name "    \
          "(client.id)")                                                       \
        X(READY, "ready", GAUGE, "", "1 when /readyz answers 200")             \
        X(CLAIMED, "claimed", COUNTER, "", "Claims won")                       \
        X(CLAIM_STATEMENTS, "claim_statements", COUNTER, "",                   \
          "Fate-table statements for claims and takeovers")                    \
        X(MARK_STATEMENTS, "mark_statements", COUNTER, "",                     \
          "Fate-table statements for FIRED marks and cancel due times")        \
        X(STORE_PINGS, "store_pings", COUNTER, "",                             \
          "Fate-store pings sent while it was idle (readiness)")               \
        X(MARKS_LOST, "marks_lost", COUNTER, "",                               \
          "FIRED or DEAD marks (or seqs of runs) not queued for lack of "      \
          "memory (rows stay FIRING)")                                         \
        X(FIRED_RUNS, "fired_runs", COUNTER, "",                               \
          "Runs of delivered claims recorded (forwarder.fate_marks=runs)")     \
        X(FIRED_RUN_SEQS, "fired_run_seqs", COUNTER, "",                       \
          "Claim tokens covered by the runs recorded")                         \
        X(RUNS_PARKED, "runs_parked", COUNTER, "",                             \
          "Claim tokens no run covers (unfinished past 1 s, revoked or "       \
          "stopped): delivered later, each takes a FIRED mark")                \
        X(RUNS_WINDOW, "runs_window", GAUGE, "",                               \
          "Claim tokens not yet covered nor parked")                           \
        X(RUNS_WINDOW_BYTES, "runs_window_bytes", GAUGE, "bytes",              \
          "Memory of the run tracker")                                         \
        X(TASK_STATE_BUGS, "task_state_bugs", COUNTER, "",                     \
          "Task state moves outside the lifecycle's table (a bug; logged "     \
          "as event=bug what=task_state)")                                     \
        X(TXN_STATE_BUGS, "txn_state_bugs", COUNTER, "",                       \
          "Transaction state moves outside exactly_once's table (a bug; "      \
          "logged as event=bug what=txn_state, the process exits)")            \
        X(COMMITS, "commits", COUNTER, "", "Offset commits sent")              \
        X(MYSQL_UP, "mysql_up", GAUGE, "", "1 when the fate store answers")    \
        X(FATE_OUTAGE, "fate_outage_ms", GAUGE, "ms",                          \
          "How long the fate store has been unreachable or failing (0 = "      \
          "it answers)")                                                       \
        X(FIRING_UNCLAIMED, "firing_unclaimed", GAUGE, "",                     \
          "1 while due tasks fire without a claim (fate_outage_policy=fire)")  \
        X(FIRED_UNCLAIMED, "fired_unclaimed", COUNTER, "",                     \
          "Tasks fired without a claim through a fate-store outage")           \
        X(JOURNAL_FAILED, "journal_failed", COUNTER, "",                       \
          "Journal records that failed (fires then wait for claims)")          \
        X(JOURNAL_REFUSED, "journal_refused", COUNTER, "",                     \
          "Journal records of delivery refused for good (the topic gone): "    \
          "their fires applied from memory instead")                           \
        X(JOURNAL_APPLIED, "journal_applied", COUNTER, "",                     \
          "Journal records applied to the fate table after an outage")         \
        X(FIRED_AFTER_CANCEL, "fired_after_cancel", COUNTER, "",               \
          "Tasks fired without a claim whose fate was CANCELLED (kdelayctl "   \
          "audit lists them)")                                                 \
        X(JOURNAL_UNCONFIRMED, "journal_unconfirmed", COUNTER, "",             \
          "Fires without a claim whose journal record of intent was applied "  \
          "with no delivery record after it (a forwarder stopped between "     \
          "the two): maybe delivered, fired again when read again")            \
        X(RECONCILE_PENDING, "reconcile_pending", GAUGE, "",                   \
          "1 while this forwarder holds its journal marked pending: cancels "  \
          "answer unknown until its fires without a claim are applied")        \
        X(RECONCILE_PENDING_AGE, "reconcile_pending_age_ms", GAUGE, "ms",      \
          "How long the journal has been marked pending, by any forwarder, "   \
          "as this one last read it (every 30 s): cancels answer unknown "     \
          "meanwhile (0 = not pending)")                                       \
        X(STORE_INFLIGHT, "store_inflight", GAUGE, "",                         \
          "Fate-store requests sent to its thread and not yet back")           \
        X(STORE_MS, "store_ms", HISTOGRAM, "ms",                               \
          "Fate-store request round trip, from the loop and back")             \
        X(CLAIM_BATCH, "claim_batch", HISTOGRAM, "",                           \
          "Tasks per claim request (one statement, two when read back)")       \
        X(CLOCK_AHEAD, "clock_ahead_ms", GAUGE, "ms",                          \
          "How far this clock runs ahead of the broker's (fires wait it out)") \
        X(PROBES, "probes", COUNTER, "",                                       \
          "Clock probes written to the smallest tier")                         \
        X(CLOCK_SKEWED, "clock_skewed", COUNTER, "",                           \
          "Times the clock was found beyond forwarder.max_clock_skew")         \
        X(LATE_MAX, "late_max_ms", GAUGE, "ms", "Latest fire so far")          \
        X(LATE, "late_ms", HISTOGRAM, "ms",                                    \
          "Fire lateness: produce time minus fire-at")

typedef enum kd_metric_id {
#define KD_METRIC_ENUM(id, name, type, unit, help) KD_M_##id,
        KD_METRICS(KD_METRIC_ENUM)
#undef KD_METRIC_ENUM
            KD_M__COUNT
} kd_metric_id_t;

typedef struct kd_metric_info {
        const char *name;
        kd_metric_type_t type;
        const char *unit; /* "" = a count */
        const char *help;
} kd_metric_info_t;

extern const kd_metric_info_t kd_metric_info[KD_M__COUNT];

/* Histogram bucket upper bounds (inclusive), in the metric's unit; the
 * last bucket is +Inf. Fire lateness: 1 ms to 60 s. */
#define KD_HIST_BUCKETS 16
extern const int64_t kd_metric_bounds[KD_HIST_BUCKETS];

typedef struct kd_hist {
        uint64_t bucket[KD_HIST_BUCKETS + 1]; /* per bucket, not cumulative */
        uint64_t count;
        int64_t sum;
} kd_hist_t;

/* Room for one counter per tier of the configured ladder. */
#define KD_METRIC_TIERS 32
/* Room for one counter per dead-letter reason seen; the last row counts
 * any further ones as "other". */
#define KD_METRIC_REASONS 24

typedef struct kd_metrics {
        int64_t v[KD_M__COUNT];      /* counters and gauges */
        kd_hist_t hist[KD_M__COUNT]; /* histograms only */
        /* Hops delivered into each tier of the ladder (by its index), the
         * per-tier rows of KD_M_HOPPED. */
        int64_t hopped_to[KD_METRIC_TIERS];
        /* Records dead-lettered (or dropped) by reason, the per-reason rows
         * of KD_M_DEAD, in the order first seen; names borrowed (static
         * strings, docs/wire-format.md's reasons). */
        const char *dead_reason[KD_METRIC_REASONS];
        int64_t dead_by_reason[KD_METRIC_REASONS];
        size_t dead_reasons;
} kd_metrics_t;

void kd_metric_add(kd_metrics_t *m, kd_metric_id_t id, uint64_t n);
static inline void kd_metric_inc(kd_metrics_t *m, kd_metric_id_t id)
{
        kd_metric_add(m, id, 1);
}
void kd_metric_set(kd_metrics_t *m, kd_metric_id_t id, int64_t v);
/* A gauge that keeps the largest value set. */
void kd_metric_max(kd_metrics_t *m, kd_metric_id_t id, int64_t v);
void kd_metric_observe(kd_metrics_t *m, kd_metric_id_t id, int64_t v);
int64_t kd_metric_get(const kd_metrics_t *m, kd_metric_id_t id);

/* Upper bound of the bucket holding quantile q (0..1) of a histogram;
 * -1 when it has no observations, INT64_MAX in the +Inf bucket. */
int64_t kd_metric_quantile(const kd_metrics_t *m, kd_metric_id_t id, double q);

/* Every metric as " name=value" in table order (histograms as
 * name_count, name_sum, name_p50, name_p99: bucket bounds, "inf" past the
 * last, -1 when empty), into buf. Returns the length
 * it needed (snprintf's convention). */
int kd_metrics_format(const kd_metrics_t *m, char *buf, size_t size);

/* A record dead-lettered (or dropped) for reason (static, borrowed):
 * KD_M_DEAD and its reason's row. */
void kd_metric_dead(kd_metrics_t *m, const char *reason);

/* A hop delivered into tier idx of the ladder: KD_M_HOPPED and its row. */
void kd_metric_hop(kd_metrics_t *m, size_t idx);

/* " hopped_to_<tier>=N" for each of the cnt tiers named names[i] (the
 * ladder's order), into buf; snprintf's convention. */
int kd_metrics_format_tiers(const kd_metrics_t *m, const char *const *names,
                            size_t cnt, char *buf, size_t size);

/* The labels of kdelay_build_info (src/common/buildinfo.h): version
 * ("0.3.0", "0.3.0-dev+<commit>"), revision (the commit) and schema (the
 * newest schema version the build's migrations reach). */
typedef struct kd_build_labels {
        const char *version;
        const char *revision;
        int schema;
} kd_build_labels_t;

/* metrics_prom.c: the table in the Prometheus text format (counters
 * kdelay_forwarder_<name>_total, ms in seconds), kdelay_build_info with
 * the build's labels, and the per-tier hop counters of the cnt tiers named
 * tiers[i], into buf; snprintf's convention. */
int kd_metrics_format_prometheus(const kd_metrics_t *m,
                                 const char *const *tiers, size_t tier_cnt,
                                 const kd_build_labels_t *build, char *buf,
                                 size_t size);

#endif
