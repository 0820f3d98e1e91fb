/* Fire stage, part one: claimed tasks wait for their fire time, then for
 * their target's rate limit, if any, then for forwarder.max_fire_rate. After a
 * long outage many tasks are due at once; a token bucket spreads their fires so
 * targets and their consumers are not flooded. Tasks wait in a FIFO in the
 * order their timers came due, which is due order, so firing keeps it. */
#ifndef KD_PACE_H
#define KD_PACE_H

#include "kd_fwd_state.h"

/* t's claim is won: it fires at its fire time (through the rate limit). */
void kd_pace_claimed(kd_fwd_t *f, kd_task_t *t);

/* forwarder.target_rate_limits (docs/forwarder.md, "Target rate limits"):
 * a due task to a limited target waits in its rule's queue, in due order,
 * for a token of the rule's bucket, then goes on to max_fire_rate. A
 * rule's limit is the group's: each forwarder takes the share of it that
 * its tier partitions are of all (f->tier_partitions), as the tasks are
 * spread over them. */

/* Parses the rules and sets up their buckets (kd_fwd_new). */
kdelay_err_t kd_pace_init(kd_fwd_t *f, char *errstr, size_t errstr_size);

/* Frees what kd_pace_init made (no task waits any more). */
void kd_pace_clear(kd_fwd_t *f);

/* One event=target_rate_limit line per rule (with the stats line). */
void kd_pace_log(kd_fwd_t *f);

/* Appends the rules' metric families (kdelay_forwarder_rate_limited_*,
 * kdelay_forwarder_rate_limit_*, labelled by target) to buf (size
 * bytes, text at *len) in the Prometheus text format; *len grows by what
 * it needs, also past size (then the text is cut: format again). */
void kd_pace_format(const kd_fwd_t *f, char *buf, size_t size, size_t *len);

#endif
