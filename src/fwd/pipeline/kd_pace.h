/* SPDX-License-Identifier: Apache-2.0 */
/* Fire stage, part one: a held task whose claim is due waits for its
 * target's rate limit, if any, before its claim; claimed tasks wait for
 * their fire time, then for forwarder.max_fire_rate. After a long outage
 * many tasks are due at once; a token bucket spreads their fires so
 * targets and their consumers are not flooded. Tasks wait in a FIFO in the
 * order their timers came due, which is due order, so firing keeps it. */
#ifndef KD_PACE_H
#define KD_PACE_H

#include "core/kd_fwd_core.h"

/* t's claim is won: it fires at kd_pace_fire_at (through max_fire_rate). */
void kd_pace_claimed(kd_fwd_t *f, kd_task_t *t);

/* When claimed task t may fire (wall clock): its fire-at, or, when its
 * target's rate limit let it through, its slot (claim_ahead after its
 * token) if that is later. */
int64_t kd_pace_fire_at(const kd_fwd_t *f, const kd_task_t *t);

/* For a loop that does not run the timers (a revoke's wait,
 * kd_rebalance), where max_fire_rate yields: claimed task t (taken out of
 * its timer) is due now: produced at once, or, when its target's rule's
 * fires' bucket has no token for it, queued for one, and 1 (t is not
 * touched after a produce, which may free it). And kd_pace_release
 * produces the fires waiting for their target's rule that its bucket lets
 * go now; the monotonic time the next may go, INT64_MAX when none waits. */
int kd_pace_due_now(kd_fwd_t *f, kd_task_t *t);
int64_t kd_pace_release(kd_fwd_t *f);

/* The hold timer of a held task (fire_at - claim_ahead, kd_sched_take):
 * claimed now, or, when its target's rule limits it, once a token lets
 * it through. */
void kd_pace_hold_due_cb(kd_timer_t *tm, void *arg);

/* The schedule stage's side of a target rate limit: a task to a limited
 * target is held only within its rule's horizon and share, so that a
 * backlog of any size leaves the held set (and exactly_once's offset
 * span) to the tasks of other targets. kd_pace_rule: the rule limiting
 * t's target (an index), or -1, as kd_pace_rule_find found it at intake
 * (the one lookup of a task's rule). kd_pace_horizon: how far ahead of its
 * turn (kd_task_due_at) a task of rule is held at most — the time the
 * rule's rate takes to let its share through less the 10 s it may wait
 * in the rule's queue (or half that time when that is more), at least
 * claim_ahead and twice the lookahead added up (and the smallest tier),
 * at most hold_horizon;
 * further away it hops like any task beyond the hold horizon.
 * kd_pace_share_full: 1 when t does not fit into its rule's share of the
 * held set (kd_held_share_full). kd_pace_defer: t, due within the
 * horizon but without room in the share, gets its turn
 * (t->rec.not_before_ms: after the share and the turns given before, at
 * the rule's rate or, when the share's time is shorter than the horizon
 * and the lookahead, that time over the share apart; beyond the horizon
 * and the lookahead, so it is read again only when due to be held),
 * counted in rate_deferred; the caller hops it (counted in the out bound
 * of the tasks sent back, kd_held_limited_out_full). */
int kd_pace_rule(const kd_task_t *t);
int64_t kd_pace_horizon(kd_fwd_t *f, int rule);
void kd_pace_rule_find(const kd_fwd_t *f, kd_task_t *t);
int kd_pace_share_full(kd_fwd_t *f, const kd_task_t *t, int rule);
void kd_pace_defer(kd_fwd_t *f, kd_task_t *t, int rule);

/* forwarder.target_rate_limits (docs/forwarder.md, "Target rate limits"):
 * a task to a limited target waits unclaimed in its rule's queue, in due
 * order, for a token of the rule's bucket, then is claimed; due, it waits
 * in due order for a token of the rule's second bucket, which counts the
 * fires as they go, and goes on to max_fire_rate. A
 * rule's limit is the group's: each forwarder takes the share of it that
 * its tier partitions are of all (f->pace->tier_partitions), as the tasks are
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

/* The partitions of the tier topics the group reads, as the ops' tier
 * check last read them (0 = unknown): the share above. */
void kd_pace_tier_partitions(kd_fwd_t *f, int parts);

#endif
