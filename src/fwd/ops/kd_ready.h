/* SPDX-License-Identifier: Apache-2.0 */
/* Readiness: what /readyz answers and gauge kdelay_forwarder_ready says.
 * Not ready before the first assignment, while tier topics are missing,
 * while the fate store does not answer, while transactions keep aborting
 * and once stopping. A rebalance is not unreadiness: every member of an
 * eager group is revoked at once, so a forwarder that was settled stays
 * ready through a revoke and the assignment that follows, unless that
 * takes over KD_READY_REBALANCE_MS (then "rebalance running for over 60 s"):
 * a rolling restart or a scale-up does not take every pod out at once. */
#ifndef KD_READY_H
#define KD_READY_H

#include <stddef.h>
#include <stdint.h>

#include "core/kd_fwd_core.h"

#define KD_READY_REBALANCE_MS 60000
/* Not ready after this many transactions aborted in a row. */
#define KD_READY_ABORT_STREAK 5

/* Why f is not ready at monotonic time now_ms (static text, or
 * f->ops->tiers_why); NULL when it is ready. */
const char *kd_ready_why(const kd_fwd_t *f, int64_t now_ms);

#endif
