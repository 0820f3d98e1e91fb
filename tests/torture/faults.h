/* SPDX-License-Identifier: Apache-2.0 */
/* The fault schedule: planned from the seed before the run, printed up
 * front, executed by one injector thread at its wall-clock times, and
 * logged with the times things actually happened. */
#ifndef TT_FAULTS_H
#define TT_FAULTS_H

#include <pthread.h>
#include <stdio.h>

#include "fleet.h"
#include "torture.h"

typedef enum tt_fault_kind {
        TT_F_KILL9,   /* kill -9 a forwarder */
        TT_F_TERM,    /* SIGTERM a forwarder */
        TT_F_RESTART, /* restart the slot a KILL9/TERM stopped */
        TT_F_MYSQL_STOP,
        TT_F_MYSQL_START,
        TT_F_KAFKA_STOP,
        TT_F_KAFKA_START,
        TT_F_ADD,          /* start the extra forwarder (rebalance) */
        TT_F_REMOVE,       /* SIGTERM the extra forwarder (rebalance) */
        TT_F_OUTAGE_BEGIN, /* SIGTERM every forwarder */
        TT_F_OUTAGE_END,   /* restart them all: catch-up */
        TT_F_MYSQL_PAUSE,  /* SIGSTOP MySQL: every statement hangs */
        TT_F_MYSQL_RESUME, /* SIGCONT */
        TT_F_CLOCK_OFF,    /* restart a slot with its wall clock arg ms off */
        TT_F_CLOCK_ON,     /* restart it with the true clock */
        TT_F_MYSQL_RO,     /* SET GLOBAL read_only = ON (a demoted primary) */
        TT_F_MYSQL_RW,     /* and OFF */
        TT_F_DEAD_DELETE,  /* delete the dead-letter topic */
        TT_F_DEAD_CREATE,  /* make it again: kdelayctl topics create */
        TT_F_KINDS
} tt_fault_kind_t;

typedef struct tt_fault {
        int64_t at_rel; /* planned, ms after T0 */
        tt_fault_kind_t kind;
        int slot;    /* KILL9/TERM/RESTART: planned slot */
        int id;      /* creation order, for ref */
        int ref;     /* an ending fault: index of its beginning; the gap
                        between them is kept when the beginning ran late */
        int64_t arg; /* CLOCK_OFF: the offset (ms) */
        /* filled when executed */
        int done_slot; /* the slot acted on, -1 = skipped */
        int64_t began_rel, ended_rel;
        int rc;     /* 0, or the harness could not inject it */
        int done;   /* ran for good (injected, skipped or given up) */
        int defers; /* times it was put off for later (TT_FAULT_DEFERS) */
        int64_t retry_rel; /* put off until then, ms after T0; 0 = not */
        int reaped; /* RESTART: its slot's exit collected (and counted) by
                       an earlier try: a retry only starts the slot */
} tt_fault_t;

/* A fault whose precondition is not met yet (a broker still starting, a
 * slow stop under load) is tried again every TT_FAULT_RETRY_EVERY_MS for
 * up to TT_FAULT_RETRY_BOUND_MS; one still not injected then is put off
 * TT_FAULT_DEFER_MS later in the schedule (its lane's later faults wait
 * behind it, in their order), up to TT_FAULT_DEFERS times, before it
 * counts as not injected (a harness failure, not the product's:
 * docs/torture.md, "Verdict"). */
#define TT_FAULT_RETRY_BOUND_MS 60000
#define TT_FAULT_RETRY_EVERY_MS 2000
#define TT_FAULT_DEFER_MS       10000
#define TT_FAULT_DEFERS         2
/* The run's whole budget for that: the time of failed tries, their waits
 * and the put-offs, over every lane. Once spent, a fault gets one try
 * (no retry, no put-off), and a fault that begins something (a stop, a
 * kill, a pause) is not injected at all; nor is one of a kind that was
 * already given up once. So a broken stack.sh verb costs the run about
 * this much, not minutes per fault. */
#define TT_FAULT_RETRY_BUDGET_MS 120000

#define TT_MYSQL_WINS_MAX 32

/* Figures of the injector, read by main after tt_faults_join(). */
/* The transaction coordinator is back this long after `kafka-start` on
 * the test stack (30-40 s, docs/reliability.md), with margin. */
#define TT_KAFKA_SETTLE_MS 60000

typedef struct tt_fault_counts {
        int kill9, sigterm, mysql, mysql_pause, mysql_ro, clock, kafka, added,
            removed, outage, dead_topic, skipped;
        int dead_unread; /* the verifier had not read the dead-letter topic
                            to its end when it was deleted */
        /* The harness's own trouble: planned faults never injected after
         * every try (by kind), tries that failed before one succeeded,
         * faults put off for later. */
        atomic_int failed;
        int not_injected[TT_F_KINDS];
        atomic_int retried;
        int deferred;
        int crashes;       /* forwarders found dead on their own */
        int unclean_terms; /* SIGTERM not answered by exit 0 */
        /* SIGTERM answered by exit 1 while Kafka was down or its
         * coordinators loading: the stop could not end its transaction in
         * forwarder.shutdown_timeout (documented; not a failure) */
        int terms_kafka_down;
        int64_t outage_begin, outage_end; /* epoch ms; 0 = none */
        /* MySQL faults (stop, pause, read-only) as windows: when each
         * began and when its end was done (epoch ms). */
        int64_t mysql_win[TT_MYSQL_WINS_MAX][2];
        int mysql_wins;
        /* dead_topic_delete, injected: from the verifier's last look at
         * the topic's ends to the delete's end (epoch ms; 0 = none). A
         * dead letter delivered meanwhile went with the topic. */
        int64_t dead_doomed[2];
} tt_fault_counts_t;

struct tt_faults;
struct tt_verifier;

/* The injector threads: forwarders; MySQL and Kafka (so that a slow
 * Kafka restart does not hold up the kills); the dead-letter topic (so
 * that it goes at its planned time, which the plan keeps quiet). */
enum { TT_LANE_PROCESS, TT_LANE_STACK, TT_LANE_TOPIC, TT_LANES };

/* One injector thread. */
typedef struct tt_injector {
        struct tt_faults *fs; /* the owner */
        int lane;             /* TT_LANE_* */
        pthread_t thread;
        int started;
} tt_injector_t;

typedef struct tt_faults {
        tt_fault_t *v; /* owned */
        size_t n;
        int64_t t0;
        tt_fleet_t *fleet;      /* borrowed; driven only by the injector while
                                   it runs */
        const char *stack;      /* stack.sh path, borrowed */
        FILE *stack_log;        /* borrowed */
        const atomic_int *stop; /* borrowed */
        struct tt_verifier *verifier; /* borrowed: told of the dead-letter
                                         topic's deletion */
        const char *dead_topic;       /* borrowed */
        /* Makes the dead-letter topic again (kdelayctl); 0 on success. */
        int (*dead_create)(void *arg);
        void *dead_create_arg;
        int dead_gone; /* the topic thread's */
        /* When Kafka was last stopped, and started again (epoch ms, 0 =
         * never): written by the stack thread, read by the others. */
        _Atomic int64_t kafka_stop_ms, kafka_start_ms;
        int kafka_down, mysql_down, mysql_paused, mysql_ro; /* the stack
                                                              thread's */
        tt_fault_counts_t counts;
        tt_injector_t inj[TT_LANES];
        /* ms of TT_FAULT_RETRY_BUDGET_MS spent, every lane's */
        _Atomic int64_t retry_spent_ms;
        atomic_int budget_logged;
        int budget_off; /* tt_faults_join's clean-up: retried regardless */
        /* given up once (each kind is one lane's) */
        int kind_failed[TT_F_KINDS];
} tt_faults_t;

/* Plans the schedule for the options' window and forwarders. */
int tt_faults_plan(tt_faults_t *fs, const tt_opts_t *o);

/* Prints the planned schedule (relative times) to out. */
void tt_faults_print(const tt_faults_t *fs, FILE *out);

const char *tt_fault_name(tt_fault_kind_t kind);

/* Runs the schedule from t0 on in two threads: one drives the forwarders,
 * the other stops and starts MySQL and Kafka (stack.sh serialises those
 * anyway), so a slow Kafka restart does not hold up the kills. */
int tt_faults_start(tt_faults_t *fs, int64_t t0);

/* Waits for the injector to finish its schedule (or stop), then brings
 * back whatever is still down (Kafka, MySQL, forwarders). */
void tt_faults_join(tt_faults_t *fs);

void tt_faults_free(tt_faults_t *fs);

#endif
