/* SPDX-License-Identifier: Apache-2.0 */
/* Cancel threads: cancel the planned 10% through kdelay_cancel() at their
 * planned moments (long before due, around the claim, around fire-at).
 * An error answer means "unknown" (docs/fate-protocol.md): the cancel is
 * retried every 200 ms for up to 30 s, as a careful client would. */
#ifndef TT_CANCELS_H
#define TT_CANCELS_H

#include <pthread.h>
#include <stdio.h>

#include "torture.h"

#define TT_CANCEL_THREADS 2

typedef struct tt_cancel_thread tt_cancel_thread_t;

typedef struct tt_cancels {
        tt_task_t *tasks; /* borrowed; threads write the cancel fields */
        size_t n;
        const tt_names_t *names;     /* borrowed */
        const atomic_int *stop;      /* borrowed */
        FILE *lib_log;               /* borrowed */
        tt_cancel_thread_t *threads; /* owned */
} tt_cancels_t;

int tt_cancels_start(tt_cancels_t *c);
void tt_cancels_join(tt_cancels_t *c);

#endif
