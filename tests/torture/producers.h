/* SPDX-License-Identifier: Apache-2.0 */
/* Producer threads: schedule every planned task at its schedule time.
 * Thread 0 uses kdelay_schedule() (synchronous), thread 1
 * kdelay_schedule_async(), threads 2 and 3 a plain idempotent librdkafka
 * producer writing the wire-format headers themselves. */
#ifndef TT_PRODUCERS_H
#define TT_PRODUCERS_H

#include <pthread.h>
#include <stdio.h>

#include "torture.h"

#define TT_PRODUCER_THREADS 4

typedef struct tt_producer_thread tt_producer_thread_t;

typedef struct tt_producers {
        tt_task_t *tasks; /* borrowed; each thread writes its own tasks'
                             producer fields */
        size_t n;
        const tt_names_t *names;       /* borrowed */
        const atomic_int *stop;        /* borrowed */
        FILE *lib_log;                 /* borrowed; library log lines */
        tt_producer_thread_t *threads; /* owned */
} tt_producers_t;

int tt_producers_start(tt_producers_t *p);

/* Waits until every thread has sent its tasks and had them acknowledged
 * (or failed), then frees the threads. */
void tt_producers_join(tt_producers_t *p);

#endif
