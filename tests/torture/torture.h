/* SPDX-License-Identifier: Apache-2.0 */
/* kdelay-torture: shared types of the torture tool (docs/torture.md).
 *
 * One run: plan N tasks and a fault schedule from a seed, schedule the
 * tasks from producer threads, cancel some, inject faults into the
 * forwarders, MySQL and Kafka, watch every target topic with an
 * independent read_committed consumer, and print one table of figures.
 *
 * Ownership: main.c owns the task table (tt_task_t[]) and every module
 * context; each thread writes only the task fields its section names
 * (plan: before any thread starts; producer; cancel; verifier; fate:
 * after every thread has been joined). */
#ifndef TT_TORTURE_H
#define TT_TORTURE_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <kdelay/kdelay.h>
#include <librdkafka/rdkafka.h>

/* Target topics, 3 partitions each: target0..2 plain, target3 compacted
 * (cleanup.policy=compact: a keyless record is refused), target4 with
 * max.message.bytes=TT_SMALL_MAX_BYTES (a record batch above it is
 * refused). Innocent tasks target all five; poison tasks the last two
 * (and __consumer_offsets). */
#define TT_TARGETS         5
#define TT_TARGETS_PLAIN   3 /* the plan's draw: 0..2 */
#define TT_TARGET_COMPACT  3
#define TT_TARGET_SMALL    4
#define TT_SMALL_MAX_BYTES 262144
#define TT_INTERNAL_TOPIC  "__consumer_offsets"
#define TT_MAX_SLOTS       17 /* forwarder slots: --forwarders (<= 16) + 1 added */
#define TT_ID_SIZE         64 /* ids are "<prefix>-<idx>" or a 26-char ULID */
/* Heavy tasks carry a header this large ("torture-ballast"), so that a
 * few records weigh what thousands do; the forwarders run with
 * TT_MAX_HELD_BYTES. */
#define TT_BALLAST_BYTES  (500 * 1024)
#define TT_BALLAST_HEADER "torture-ballast"
/* The tier of the default ladder created with CreateTime by mistake: 1m,
 * which the raw producers (ladder 1s,1m,30m,7d) write every task 1 to 30
 * minutes ahead to, whatever the default ladder around it. */
#define TT_CREATE_TIME_TIER "1m"
#define TT_MAX_HELD_BYTES   (64LL * 1024 * 1024)
/* The dead-letter topic is deleted for this long, at a fixed share of the
 * window (tt_dead_gone_at: clear of the Kafka restarts; fixed, so that the
 * plan keeps malformed tasks out of the seconds before it: what the
 * verifier had not read when the topic went is gone with it), and made
 * again with `kdelayctl topics create`. */
#define TT_DEAD_GONE_MS      20000
#define TT_DEAD_QUIET_BEFORE 10000
/* One raw task in this many (not heavy) is malformed on purpose. */
#define TT_MALFORMED_EVERY 97
/* One raw task in this many (not heavy, not malformed) is poison: a
 * record its target refuses; the next TT_POISON_MATES tasks (of kinds 1
 * and 2) are its batch-mates: same target, same due time. */
#define TT_POISON_EVERY 89 /* --poison-every: docs/torture.md */
#define TT_POISON_MATES 6
/* A too-large poison task's value: above TT_SMALL_MAX_BYTES alone. The
 * limit is far above a batch of innocent records even at the catch-up
 * after the outage, so that only poison records are refused here (a
 * batch of innocent records above a topic's limit is test_poison's
 * case: at the torture's catch-up each such batch's records would go
 * alone, which exactly_once pays a round trip each for). */
#define TT_POISON_VALUE_BYTES 300000

/* How many -X properties the tool passes on to the forwarders. */
#define TT_FWD_PROPS_MAX 8

/* Command line, after defaults and the profile are applied. Read-only
 * once parsed. Strings point into argv or static defaults. */
typedef struct tt_opts {
        size_t tasks;
        int full;                /* profile full (else fast) */
        int64_t window_ms;       /* due times spread over [T0, T0+window] */
        int64_t hold_horizon_ms; /* passed to the forwarders; 0 = default */
        /* The drain after the last due time (main.c's drain): it ends
         * when every expected task arrived, when none arrived for
         * drain_idle_ms, or at drain_cap_ms, whichever comes first. */
        int64_t drain_idle_ms, drain_cap_ms;
        int exactly_once;
        const char *mode;
        int forwarders;
        uint64_t seed;
        const char *forwarder_path;
        const char *kdelayctl_path;
        const char *stack_path;
        const char *run_base; /* run dirs go below */
        long max_fire_rate;   /* -1 = not passed */
        size_t poison_every;  /* one raw task in this many is poison */
        /* -X name=value for every forwarder (points into argv) */
        const char *fwd_props[TT_FWD_PROPS_MAX];
        size_t fwd_props_cnt;
} tt_opts_t;

/* The forwarders' MySQL password travels in this environment variable
 * (mysql.password_env), never on their command line. */
#define KD_TT_FW_PASSWORD_ENV "KDTORT_FW_PASSWORD"

/* Names of this run's resources. Filled by main.c, read-only afterwards. */
typedef struct tt_names {
        const char *brokers;
        char prefix[40];
        char group[64];
        char db[64];
        char mysql_url[512];    /* root: the tool's own (cancels, checks) */
        char fw_mysql_url[512]; /* the forwarders': DML grants only, the
                                   password in KD_TT_FW_PASSWORD_ENV */
        char run_dir[600];
        char targets[TT_TARGETS][96];
        char dead[96];
} tt_names_t;

typedef enum tt_via { TT_VIA_LIB_SYNC, TT_VIA_LIB_ASYNC, TT_VIA_RAW } tt_via_t;

typedef enum tt_cat {
        TT_CAT_HELD, /* due within the hold horizon when scheduled */
        TT_CAT_1S,   /* 1s tier, hops along it */
        TT_CAT_1M,   /* 1m tier, then 1s hops or held */
        TT_CAT_30M   /* 30m tier (windows above 30 min) */
} tt_cat_t;

/* A raw task malformed on purpose: it must reach the dead-letter topic
 * (with this reason) and never a target. */
typedef enum tt_malformed {
        TT_MAL_NONE,
        TT_MAL_NO_TARGET,  /* no kdelay-target: "missing-target" */
        TT_MAL_BAD_FIRE_AT /* kdelay-fire-at "soon": "bad-fire-at" */
} tt_malformed_t;

/* A raw task its target refuses (poison): it must reach the dead-letter
 * topic with this reason, never a target, and its batch-mates must be
 * delivered (issue 19). */
typedef enum tt_poison {
        TT_POISON_NONE,
        TT_POISON_KEYLESS,   /* no key, to the compacted target:
                                "target-refused" (INVALID_RECORD) */
        TT_POISON_TOO_LARGE, /* value above the small target's limit:
                                "too-large" (MSG_SIZE_TOO_LARGE) */
        TT_POISON_INTERNAL,  /* to __consumer_offsets, 1 s tier:
                                "target-forbidden", never claimed */
        TT_POISON_KINDS
} tt_poison_t;

typedef enum tt_cancel_kind {
        TT_CANCEL_NONE,
        TT_CANCEL_EARLY, /* long before due */
        TT_CANCEL_CLAIM, /* around the claim: fire-at - 700..200 ms */
        TT_CANCEL_FIRE   /* within 25 ms of fire-at, before or after */
} tt_cancel_kind_t;

typedef enum tt_answer {
        TT_ANS_NONE,
        TT_ANS_OK,       /* acknowledged cancelled */
        TT_ANS_TOO_LATE, /* KDELAY_ERR_TOO_LATE */
        TT_ANS_ERROR     /* still an error after the retries */
} tt_answer_t;

enum tt_sched_state {
        TT_SCHED_PLANNED = 0,
        TT_SCHED_ENQUEUED, /* id valid, not yet acknowledged */
        TT_SCHED_ACKED,
        TT_SCHED_FAILED
};

enum tt_fate {
        TT_FATE_NONE,
        TT_FATE_FIRING,
        TT_FATE_FIRED,
        TT_FATE_CANCELLED,
        TT_FATE_DEAD
};

typedef struct tt_task {
        /* plan (plan.c), before any thread starts */
        int64_t fire_at;
        int64_t sched_at;
        int64_t cancel_at;
        uint8_t via, cat, cancel_kind, target;
        uint8_t gen_id;    /* the library generates the id */
        uint8_t heavy;     /* raw, with TT_BALLAST_BYTES of headers */
        uint8_t malformed; /* tt_malformed_t: raw, to the 1 s tier */
        uint8_t poison;    /* tt_poison_t: raw */
        uint8_t mate;      /* a poison task's batch-mate (innocent) */
        /* producer thread; id published by sched_state >= ENQUEUED */
        char id[TT_ID_SIZE];
        _Atomic int sched_state;
        int64_t acked_at;
        /* cancel thread */
        uint8_t answer, first_answer;
        int64_t cancel_sent_at;
        /* verifier thread (copies read by main while draining) */
        _Atomic int copies;
        _Atomic int dead_copies; /* read by main while draining */
        int dead_bad_reason;     /* a dead letter with another reason */
        int dead_no_error;       /* poison 1, 2: without kdelay-dead-error */
        int early_ts, early_rx, bad_copy;
        int64_t first_ts, first_rx;
        /* raw producer's delivery report: where the task went on its tier
         * (-1: not known, e.g. a library task) */
        int32_t tier_partition;
        int64_t tier_offset;
        /* after every thread has been joined */
        uint8_t fate;
        /* its fate row's owner (truncated) and the tier record it claimed
         * (src_partition/src_offset; -1 none): a lost task's last known
         * place */
        char fate_owner[32];
        int32_t fate_src_partition;
        int64_t fate_src_offset;
        uint8_t fate_reason_ok; /* DEAD with the expected dead_reason */
        /* FIRED read from a FIRING row a run of delivered claims covers */
        uint8_t fate_covered;
        /* its kdelay_unclaimed row (fired without a claim through a MySQL
         * outage, fate_outage_policy=fire): 0 none, else 1 + the prior
         * fate it recorded (kd_unclaimed_prior_t: 2 = cancelled) */
        uint8_t unclaimed;
} tt_task_t;

/* --- util.c ----------------------------------------------------------------
 */

/* Deterministic generator (splitmix64), one per user: not thread-safe. */
typedef struct tt_rng {
        uint64_t s;
} tt_rng_t;

/* 1 when the forwarders run with -X forwarder.fate_outage_policy=fire:
 * the MySQL fault windows are longer (faults.c), and fires through them
 * after a cancel are the policy's cost, not a failure (report.c). */
int tt_policy_fire(const struct tt_opts *o);

void tt_rng_seed(tt_rng_t *r, uint64_t seed, uint64_t stream);
uint64_t tt_rng_next(tt_rng_t *r);
/* Uniform in [lo, hi] (lo <= hi). */
int64_t tt_rng_range(tt_rng_t *r, int64_t lo, int64_t hi);

/* One key=value line to stderr with a timestamp; thread-safe. */
void tt_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Sleeps until wall-clock time at_ms (the run's timeline), waking early
 * when *stop is set. 0 when at_ms was reached, -1 when stopped. */
int tt_sleep_until(int64_t at_ms, const atomic_int *stop);

/* Sleeps ms, waking early when *stop is set (for retry back-off). */
int tt_sleep_ms(int64_t ms, const atomic_int *stop);

/* A kdelay conf for this run (brokers, mysql.url, prefix) whose library
 * log lines at warning level and above go to log (may be NULL). Caller
 * owns it. NULL on failure. */
kdelay_conf_t *tt_conf_new(const tt_names_t *names, FILE *log_file);

/* --- plan.c ----------------------------------------------------------------
 */

/* Plans n tasks over the window starting at t0 (epoch ms). */
void tt_plan_tasks(tt_task_t *tasks, size_t n, const tt_opts_t *o,
                   const tt_names_t *names, int64_t t0);

/* The hold horizon the forwarders run with. */
int64_t tt_hold_horizon(const tt_opts_t *o);
/* When the dead-letter topic is deleted, ms after T0. */
int64_t tt_dead_gone_at(const tt_opts_t *o);
/* The dead-letter reason a malformed or poison task must arrive with;
 * NULL for the others (never dead-lettered). */
const char *tt_dead_reason_want(const tt_task_t *t);

/* librdkafka's log lines of a client built from rkc go to fp (also its
 * conf opaque, so the client must not use that otherwise). */
void tt_rk_log_to(rd_kafka_conf_t *rkc, FILE *fp);

#endif
