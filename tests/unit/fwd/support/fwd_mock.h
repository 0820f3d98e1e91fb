/* SPDX-License-Identifier: Apache-2.0 */
/* A forwarder under test without any service: librdkafka's mock cluster
 * (one per environment, so injected errors stay in it) as Kafka and the
 * in-memory fate store (kd_fate_mem.h) as MySQL, the forwarder's event
 * loop in a thread of its own, and what a test needs around it: schedule
 * tasks with the library, write raw tier records, read a topic back, wait
 * for fates and log lines, read committed offsets.
 *
 * Log lines of the forwarder, the library and every librdkafka handle of
 * an environment are collected in memory (never printed): tests assert on
 * them and dump them when a case fails.
 *
 * What librdkafka 2.0.2's mock cluster cannot do, and the tests therefore
 * cannot check (see test_fwd_mock.c):
 *  - TxnOffsetCommit is answered but its offsets are dropped: offsets sent
 *    with send_offsets_to_transaction are never stored, so an exactly-once
 *    forwarder reading committed offsets (at a rewind or restart) finds
 *    none and starts at the beginning of every tier partition;
 *  - EndTxn writes no transaction markers and Fetch reports no aborted
 *    transactions: a read_committed consumer also sees the records of
 *    aborted transactions;
 *  - the first JoinGroup of a group is answered after 3 s (the broker's
 *    group.initial.rebalance.delay.ms), so every forwarder start costs 3 s;
 *  - records carry the producer's CreateTime (topics have no
 *    LogAppendTime);
 *  - it checks produce sequence numbers of transactional producers only:
 *    an idempotent producer's batch is accepted while the batch before it
 *    on the same partition is still being retried, and librdkafka then
 *    acknowledges the earlier message implicitly though it was never
 *    stored (a broker refuses the later batch as out of order);
 *  - it speaks Metadata v2 only, so it creates every topic a client asks
 *    about (AllowAutoTopicCreation is v4): a missing topic is one made
 *    and then reported unknown (rd_kafka_mock_topic_set_error);
 *  - destroying a cluster takes a second (done in the background).
 *
 * For development: FM_DUMP=1 dumps every case's log (not only a failed
 * one's), FM_TIMING=1 prints each case's duration, FM_RDKAFKA_DEBUG=<list>
 * sets librdkafka's `debug` on the forwarder's clients. */
#ifndef FWD_MOCK_H
#define FWD_MOCK_H

#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>

#include <kdelay/kdelay.h>

#include "kd_fate_mem.h"
#include "top/kd_fwd.h"

/* Collected log lines ("<level> <line>"). */
typedef struct fm_log {
        pthread_mutex_t lock;
        char **lines;
        size_t cnt, cap;
} fm_log_t;

/* One test environment: a mock cluster with its topics, a forwarder
 * running in a thread, its store (borrowed from the forwarder), a log. */
typedef struct fm_env {
        char name[64];     /* the case, for messages */
        char prefix[64];   /* topic_prefix, unique per environment */
        char group[96];    /* forwarder.group_id */
        char target[128];  /* "<prefix>.target", 3 partitions */
        char dead[128];    /* "<prefix>.dead", 1 partition */
        char brokers[256]; /* the mock cluster's bootstrap servers */
        int exactly_once;
        rd_kafka_t *mock_rk; /* owns the mock cluster */
        rd_kafka_mock_cluster_t *mock;
        kdelay_conf_t *conf;    /* a copy of the forwarder's: for clients */
        kd_fate_store_t *store; /* borrowed: the forwarder owns it */
        kd_fwd_t *fwd;          /* NULL after fm_destroy */
        pthread_t thread;
        int running; /* the thread runs kd_fwd_run */
        volatile sig_atomic_t stop;
        int wake[2];          /* wake[1] written to stop promptly */
        kdelay_err_t run_err; /* kd_fwd_run's result once stopped */
        fm_log_t log;
        size_t log_mark; /* fm_wait_assigned looks at lines from here */
        int started;     /* fm_start succeeded (fm_destroy undoes it) */
        /* Called with each line of the forwarder's log (the forwarder, the
         * library, the forwarder's librdkafka handles) once collected, in
         * the thread that logs it, while the forwarder runs: a case may
         * act at a given point of the forwarder's own thread (stop it,
         * wait there). NULL: none. */
        void (*_Atomic on_line)(struct fm_env *e, const char *line);
} fm_env_t;

/* Creates the mock cluster (`brokers` brokers, ids from 1), the tier,
 * dead-letter and target topics (tier topics 2 partitions each, the target
 * 3), the conf (small tiers and intervals, see fwd_mock.c; `delivery`
 * "at_least_once" or "exactly_once"; then each "name=value" of overrides,
 * a kdelay or librdkafka property, NULL-ended, may be NULL), the store and
 * the forwarder, and starts the forwarder's thread. With several brokers
 * the target's partitions are led by broker 2 and every other partition by
 * broker 1, so that errors pushed on broker 2 reach only the forwarder's
 * fires. 0 on success; else -1 with the reason printed and everything
 * undone. */
int fm_start(fm_env_t *e, const char *name, const char *delivery,
             const char *const *overrides, int brokers);

/* Waits until the forwarder has partitions assigned (its log says so).
 * 0 when it did within timeout_ms. */
int fm_wait_assigned(fm_env_t *e, int timeout_ms);

/* Stops the forwarder's loop (a clean shutdown: revoke, commit, leave)
 * and joins its thread; returns kd_fwd_run's result. Metrics may be read
 * afterwards. Idempotent. */
kdelay_err_t fm_stop(fm_env_t *e);

/* A restart after fm_stop, as a supervisor would do it: the stopped
 * forwarder (and its store) is destroyed and a new one, on the same conf
 * and group, runs in a new thread with a new store holding the rows of
 * ids (n) copied from the old one — the part of the fate table the test
 * knows about. Read the old forwarder's metrics before. 0 on success. */
int fm_restart(fm_env_t *e, const char *const *ids, size_t n);

/* Stops if running and frees everything. Idempotent; safe on a zeroed or
 * half-started environment. */
void fm_destroy(fm_env_t *e);

/* Waits for the mock clusters fm_destroy left to destroy in the
 * background (each takes a second). Call before the program ends. */
void fm_reap(void);

/* A metric of the stopped forwarder. */
int64_t fm_metric(const fm_env_t *e, kd_metric_id_t id);

/* Log lines containing every one of up to three needles (NULL ignored). */
int fm_log_count(fm_env_t *e, const char *n1, const char *n2, const char *n3);
/* Waits until at least `want` lines contain n1 (and n2 when not NULL);
 * 0 when they did within timeout_ms. */
int fm_log_wait(fm_env_t *e, int want, const char *n1, const char *n2,
                int timeout_ms);
/* Adds a line of the test's own to the log ("6 test ..."). */
void fm_note(fm_env_t *e, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Writes every collected line to stderr, headed by the case name. */
void fm_log_dump(fm_env_t *e);

/* A task to schedule with the library. */
typedef struct fm_task {
        char id[96];
        const char *target; /* NULL: the environment's target */
        int64_t fire_at_ms; /* set by fm_schedule from delay_ms when 0 */
        int64_t delay_ms;
        const void *key; /* NULL = null key */
        size_t key_len;
        const void *value; /* NULL = null value */
        size_t value_len;
        const kdelay_header_t *headers;
        size_t header_cnt;
} fm_task_t;

/* Schedules tasks with a kdelay client on a copy of the environment's
 * conf, waits until Kafka acknowledged every one, destroys the client.
 * fire_at_ms of each task without one is set from now + delay_ms. 0 when
 * all were acknowledged. */
int fm_schedule(fm_env_t *e, fm_task_t *tasks, size_t n);

/* Writes one raw record to topic/partition (-1: any) with headers given
 * as NULL-ended name, value strings (a NULL name ends; a value may not be
 * NULL). 0 when acknowledged. */
int fm_produce_raw(fm_env_t *e, const char *topic, int32_t partition,
                   const void *key, size_t key_len, const void *value,
                   size_t value_len, const char *const *headers);

/* A record read back, copied out of librdkafka. */
typedef struct fm_msg {
        int32_t partition;
        int64_t offset;
        void *key; /* owned; NULL = null key */
        size_t key_len;
        void *value; /* owned; NULL = null value */
        size_t value_len;
        int64_t ts;
        rd_kafka_timestamp_type_t tstype;
        rd_kafka_headers_t *headers; /* owned; NULL = none */
} fm_msg_t;

/* Reads every record of topic, all partitions, from the beginning to the
 * end (read_committed) into *msgsp (caller frees with fm_msgs_free).
 * Returns the count, or -1 when the end was not reached within 10 s. */
int fm_consume(fm_env_t *e, const char *topic, fm_msg_t **msgsp);
void fm_msgs_free(fm_msg_t *msgs, int cnt);

/* Header `name` of m: its idx-th occurrence (0 = first). Returns the
 * value length and sets *valp (NULL value: length 0), or -1 when absent. */
int fm_header(const fm_msg_t *m, const char *name, int idx, const void **valp);
/* How many headers named `name` m has. */
int fm_header_cnt(const fm_msg_t *m, const char *name);
/* Header `name` (first occurrence) as a NUL-terminated string in buf;
 * NULL when absent or too long. */
const char *fm_header_str(const fm_msg_t *m, const char *name, char *buf,
                          size_t size);

/* The fate row of id (kd_fate_mem_get), its fate as readers see it
 * (forwarder.fate_marks=runs: a FIRING row a run covers reads FIRED). */
kd_fate_mem_row_t fm_fate(fm_env_t *e, const char *id);
/* The row as it is (a covered FIRING row stays FIRING). */
kd_fate_mem_row_t fm_fate_raw(fm_env_t *e, const char *id);
/* Waits until every one of ids (n) has fate `fate`; 0 when they did
 * within timeout_ms. */
int fm_wait_fates(fm_env_t *e, const char *const *ids, size_t n,
                  kdelay_fate_t fate, int timeout_ms);

/* The high watermarks of topic's partitions 0..cnt-1 into hwm. 0 on
 * success. */
int fm_watermarks(fm_env_t *e, const char *topic, int cnt, int64_t *hwm);

/* The offsets committed by the forwarder's group for topic's partitions
 * 0..cnt-1 into offs (RD_KAFKA_OFFSET_INVALID when none), read by a
 * consumer of the same group that does not join it. 0 on success. */
int fm_committed(fm_env_t *e, const char *topic, int cnt, int64_t *offs);

/* "<prefix>.tier.<tier name>" of tier idx of the environment's tiers. */
void fm_tier_topic(const fm_env_t *e, size_t idx, char *buf, size_t size);

#endif
