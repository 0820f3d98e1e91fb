/* SPDX-License-Identifier: Apache-2.0 */
/* The independent verifier: a read_committed consumer of every target
 * topic and the dead-letter topic, running in its own thread for the
 * whole run, recording each task's copies, timestamps and receipt times
 * (its own consumer, no group: it never affects the forwarders). */
#ifndef TT_VERIFY_H
#define TT_VERIFY_H

#include <pthread.h>
#include <stdio.h>

#include <librdkafka/rdkafka.h>

#include "torture.h"

typedef struct tt_verifier {
        tt_task_t *tasks; /* borrowed; the thread writes the verifier
                             fields */
        size_t n;
        const tt_names_t *names; /* borrowed */
        FILE *client_log;        /* borrowed; librdkafka's log lines */
        rd_kafka_t *rk;          /* owned */
        rd_kafka_topic_partition_list_t *parts; /* owned */
        pthread_t thread;
        int started;
        atomic_int quit;
        atomic_int catchup_req;
        pthread_mutex_t lock;
        pthread_cond_t cond;
        size_t firsts; /* under lock: tasks seen at least once */
        int caught_up; /* under lock */
        /* the thread's counters; read after tt_verifier_stop() */
        uint64_t records, dead_records, unknown;
        /* The thread's: per partition of parts, the offset after the last
         * record counted; a record below it is a re-read (after a seek or
         * an offset reset), skipped, never a second copy. */
        int64_t *next_off; /* owned */
        uint64_t rereads;  /* records skipped as re-reads */
        /* Bumped by tt_verifier_dead_back() before it resumes the
         * dead-letter topic (a new incarnation, offsets from 0 again);
         * the thread resets its dead partitions' next_off when it sees a
         * new value. */
        atomic_int dead_epoch;
        int dead_epoch_seen; /* the thread's */
        /* The verifier's own failures (harness, not product): seeks of
         * the re-made dead-letter topic that failed for good, and tries
         * that failed before one succeeded. */
        atomic_int seek_failed, seek_retries;
} tt_verifier_t;

int tt_verifier_start(tt_verifier_t *v);

/* Waits until the number of tasks seen differs from `seen` or wall-clock
 * deadline_ms passes; returns the number seen. */
size_t tt_verifier_wait(tt_verifier_t *v, size_t seen, int64_t deadline_ms);

/* Reads on until every partition's position reaches the high watermark
 * taken now. 0 when it did within timeout_ms. */
int tt_verifier_catch_up(tt_verifier_t *v, int timeout_ms);

/* Before the dead-letter topic is deleted (from another thread; the
 * consumer's calls are thread-safe): reads it to its end, then pauses it,
 * so that nothing of it is counted twice. 0 when it read to the end
 * within timeout_ms. */
int tt_verifier_dead_gone(tt_verifier_t *v, int timeout_ms);
/* After the topic was made again: reads it from its beginning (the seek
 * tried again for up to TT_VERIFIER_SEEK_BOUND_MS while the new topic's
 * metadata arrives). 0 when the seek succeeded; a seek that failed for
 * good is counted in seek_failed. Once per new topic: each call starts
 * the count of its offsets again. */
#define TT_VERIFIER_SEEK_BOUND_MS 60000
int tt_verifier_dead_back(tt_verifier_t *v);

/* When the topic was not deleted after all: reads on from where
 * tt_verifier_dead_gone() paused it. 0 on success. */
int tt_verifier_dead_resume(tt_verifier_t *v);

void tt_verifier_stop(tt_verifier_t *v);

/* Reads the fate table into each task's fate field. Returns the number of
 * rows read, -1 on error. Call after every thread has been joined. */
long tt_fate_read(tt_task_t *tasks, size_t n, const tt_names_t *names);

#endif
