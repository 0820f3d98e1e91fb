/* SPDX-License-Identifier: Apache-2.0 */
/* The forwarder's one loop turn and its one nested event pump, as redis's
 * aeProcessEvents and processEventsWhileBlocked. The turn (kd_loop_turn)
 * waits on a table of event sources and serves them; the main loop
 * (loop.c) turns it over the consumer, the fate store, the producers and
 * the signal pipe, and the nested pump (kd_loop_pump) over the store and
 * the producers alone. Here, in the producer room, because the pump is
 * the room's drain and every caller of either stands at or above it; the
 * top passes its own sources down in its table.
 *
 * The nested pump runs where a step must wait inside a callback or at
 * shutdown (a revoke waiting for claims and produces, a producer being
 * replaced, the shutdown): it serves the fate store's answers and the
 * producers' delivery reports, and nothing else: no consumer messages, so
 * no rebalance, and no timers. While it runs f->pumping is set, and the
 * paths that must not run nested consult it: a rewind asked for meanwhile
 * waits for the loop's next turn (kd_rebalance_rewind), a producer renewal
 * never starts inside it (kd_producer_recover), nor does a failed solo or
 * bulk producer close (kd_producer_serve). Everything else a report sets
 * off (settling a task, a dead letter produced, a retry timer armed) is
 * safe nested: it only queues work. */
#ifndef KD_LOOP_PUMP_H
#define KD_LOOP_PUMP_H

#include "core/kd_fwd_core.h"

/* An event source of the turn: what it waits on, what it serves. */
typedef struct kd_loop_src {
        /* The fd readable when the source has work, read at each turn (a
         * renewed producer has a new pipe); -1: none now. */
        int (*fd)(const kd_fwd_t *f);
        /* Serves what waits, ready or not; 1 when more may wait than it
         * served (the next turn does not wait). NULL: the fd only wakes
         * the turn (a signal: the loop looks at its stop flag). */
        int (*serve)(kd_fwd_t *f);
        unsigned flags; /* KD_LOOP_SRC_* */
} kd_loop_src_t;

/* The fd is a wake-up pipe: emptied, when readable, before the serving. */
#define KD_LOOP_SRC_PIPE 1u
/* Safe inside the nested pump (a consumer's messages are not). */
#define KD_LOOP_SRC_NESTED 2u
/* The most sources one turn waits on. */
#define KD_LOOP_SRC_MAX 8

/* The fate store's answers (kd_store_serve) and the producers' delivery
 * reports (kd_producer_serve): sources of both the loop and the pump. */
extern const kd_loop_src_t kd_loop_src_store;
extern const kd_loop_src_t kd_loop_src_producer;

/* One turn over the n sources of src (n <= KD_LOOP_SRC_MAX): waits at
 * most wait_ms (0: not at all) for one of their fds, empties the wake-up
 * pipes that are readable, then serves every source in table order. 1
 * when a source says more may wait, 0 when none does, -1 (errno) when
 * the wait failed (an interrupted wait is a turn like another). Nested
 * (f->pumping), every source must be KD_LOOP_SRC_NESTED. */
int kd_loop_turn(kd_fwd_t *f, const kd_loop_src_t *const *src, size_t n,
                 int wait_ms);

/* When a pump may stop: 1 when what it waits for is done. */
typedef int (*kd_pump_until_t)(kd_fwd_t *f);

/* Pumps until until(f) says done (0) or the monotonic deadline passes
 * (-1), a turn at a time over the store and the producers (at most 100 ms
 * each). Not re-entrant: a nested call is a bug (logged, returns -1). */
int kd_loop_pump(kd_fwd_t *f, int64_t deadline, kd_pump_until_t until);

/* No request out on the fate store. */
int kd_pump_store_idle(kd_fwd_t *f);

/* No produce awaits its report; or none was reported for
 * KD_PUMP_STALL_MS, so that a produce stuck on a missing topic does not
 * hold a rebalance, and so the whole group, up (the drain's start counts
 * as a report). */
#define KD_PUMP_STALL_MS 1000
int kd_pump_produces_done(kd_fwd_t *f);

#endif
