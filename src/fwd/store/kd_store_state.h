/* SPDX-License-Identifier: Apache-2.0 */
/* The store room's state: private to the store room (and the unit tests);
 * every other room asks kd_store.h's functions. cmake/fwd_rooms.cmake
 * refuses this header to the other rooms. */
#ifndef KD_STORE_STATE_H
#define KD_STORE_STATE_H

#include <stddef.h>
#include <stdint.h>

#include "core/kd_fwd_core.h"
#include "kd_store.h"

/* Requests kept for reuse, per kind (claims and takeovers; marks): as
 * many as a catch-up has out at once (four claims, two batches of marks;
 * claim.c, settle.c); at most about 0.4 MB with batches of 500. */
#define KD_STORE_SPARES 4

/* The fate store, its thread, and the backoff while it fails (store.c). */
typedef struct kd_fwd_store {
        kd_fate_store_t *fate;         /* owned */
        struct kd_fate_worker *worker; /* owned; NULL = not started */
        size_t inflight;               /* requests out on the worker */
        int halted;         /* a statement failed: send nothing until every
                               request out is back */
        int64_t retry_mono; /* no statement before this; 0 = now */
        int64_t backoff_ms;
        int down;                   /* logged as unavailable */
        int64_t down_since_mono;    /* when it stopped answering */
        int64_t waiting_since_mono; /* requests out, none back since */
        kd_timer_t ping;            /* monotonic: a ping when idle (store.c) */
        /* Runs when the store goes down or comes back (kd_store_start's
         * caller's; NULL: none). */
        void (*changed)(kd_fwd_t *f);
        /* What waits for the store, for its log lines (kd_store_start's
         * caller's; NULL: none logged). */
        kd_store_load_fn *load;
        int64_t last_done_mono; /* a request last came back */
        /* The journal must be marked pending before any other statement
         * (kd_store_gate): gate_out while that mark is out; gate_marked
         * runs when it succeeded (the gate's caller's; NULL: none). */
        int gate, gate_out;
        void (*gate_marked)(kd_fwd_t *f);
        const char *gate_journal; /* the gate's caller's: the journal topic */
        struct kd_store_req *gate_req; /* owned (the worker's while out) */
        /* Requests back and kept for reuse (kd_store_req_done), [0] claims
         * and takeovers, [1] marks; owned. */
        struct kd_store_req *spare[2][KD_STORE_SPARES];
        size_t spares[2];
} kd_fwd_store_t;

#endif
