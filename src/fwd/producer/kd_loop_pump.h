/* SPDX-License-Identifier: Apache-2.0 */
/* The forwarder's one nested event pump, as redis's
 * processEventsWhileBlocked: where a step must wait inside a callback or
 * at shutdown (a revoke waiting for claims and produces, a producer being
 * replaced, the shutdown), it serves the fate store's answers and the
 * producers' delivery reports, and nothing else: no consumer messages, so
 * no rebalance, and no timers. While it runs f->pumping is set, and the
 * paths that must not run nested consult it: a rewind asked for meanwhile
 * waits for the loop's next turn (kd_rebalance_rewind), a producer renewal
 * never starts inside it (kd_producer_recover). Everything else a
 * report sets off (settling a task, a dead letter produced, a retry timer
 * armed) is safe nested: it only queues work. */
#ifndef KD_LOOP_PUMP_H
#define KD_LOOP_PUMP_H

#include "core/kd_fwd_state.h"

/* When a pump may stop: 1 when what it waits for is done. */
typedef int (*kd_pump_until_t)(kd_fwd_t *f);

/* Pumps until until(f) says done (0) or the monotonic deadline passes
 * (-1). Not re-entrant: a nested call is a bug (logged, returns -1). */
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
