/* SPDX-License-Identifier: Apache-2.0 */
/* Fire stage, pacing half (kd_pace.h): owns f->pace — a token bucket, its
 * queue and timer per target rate limit, then the one of max_fire_rate.
 * Calls the produce half of the fire stage. */
#include "kd_pace.h"
#include "kd_pipeline_state.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kd_fire.h"
#include "kd_held.h"
#include "kd_lifecycle.h"
#include "kd_log.h"
#include "kd_util.h"
#include "producer/kd_producer.h"

/* A bucket: tokens refilled at rate per second, at most burst. */
typedef struct bucket {
        double *tokens;
        int64_t *tokens_mono;
        double rate, burst;
} bucket_t;

static void refill(bucket_t b, int64_t mono)
{
        if (*b.tokens_mono == 0) {
                *b.tokens = b.burst;
        } else if (mono > *b.tokens_mono) {
                *b.tokens += (double)(mono - *b.tokens_mono) * b.rate / 1000.0;
                if (*b.tokens > b.burst)
                        *b.tokens = b.burst;
        }
        *b.tokens_mono = mono;
}

/* When the next token comes (monotonic). */
static int64_t next_token(bucket_t b)
{
        double missing = 1.0 - *b.tokens;
        return *b.tokens_mono +
               (missing > 0 ? (int64_t)(missing * 1000.0 / b.rate) + 1 : 0);
}

/* 1 with a token of bucket b taken when nothing waits in q before it
 * and b has one now (refilled to mono), else 0. */
static int take_first(bucket_t b, const kd_taskq_t *q, int64_t mono)
{
        refill(b, mono);
        if (q->head || *b.tokens < 1.0)
                return 0;
        *b.tokens -= 1.0;
        return 1;
}

/* q's head, taken out with a token of bucket b (refilled by the caller),
 * or NULL when q is empty or b has none. */
static kd_task_t *pop_with_token(bucket_t b, kd_taskq_t *q)
{
        if (!q->head || *b.tokens < 1.0)
                return NULL;
        *b.tokens -= 1.0;
        return kd_taskq_pop(q);
}

/* Arms tm, a queue's timer, for bucket b's next token while q holds a
 * task (what names the timer in an out-of-memory exit). */
static void arm_for(kd_fwd_t *f, const kd_taskq_t *q, kd_timer_t *tm,
                    bucket_t b, kd_timer_cb_t *cb, void *arg, const char *what)
{
        if (q->head &&
            kd_timer_arm(&f->timers, tm, KD_CLOCK_MONO, next_token(b), cb, arg))
                kd_fwd_oom(f, what);
}

/* --- forwarder.max_fire_rate ------------------------------------------- */

/* The bucket holds a tenth of a second of fires (at least one). */
static bucket_t global_bucket(kd_fwd_t *f)
{
        double rate = f->conf->fwd_max_fire_rate;
        return (bucket_t){&f->pace->tokens, &f->pace->tokens_mono, rate,
                          rate / 10.0 < 1.0 ? 1.0 : rate / 10.0};
}

static void global_run_cb(kd_timer_t *tm, void *arg);

static void global_arm(kd_fwd_t *f)
{
        arm_for(f, &f->pace->q, &f->pace->timer, global_bucket(f),
                global_run_cb, f, "pace_timer");
}

/* Fires queued tasks as the rate allows. */
static void global_run_cb(kd_timer_t *tm, void *arg)
{
        (void)tm;
        kd_fwd_t *f = arg;
        bucket_t b = global_bucket(f);
        refill(b, kd_fwd_mono_ms(f));
        for (kd_task_t *t; (t = pop_with_token(b, &f->pace->q));)
                kd_fire_now(f, t, kd_fwd_now(f));
        global_arm(f);
}

/* t (due) fires now if max_fire_rate allows and nothing waits before it,
 * else queues (due order is kept). */
static void global_admit(kd_fwd_t *f, kd_task_t *t)
{
        kd_fwd_pace_t *p = f->pace;
        if (f->conf->fwd_max_fire_rate <= 0) {
                kd_fire_now(f, t, kd_fwd_now(f));
                return;
        }
        if (take_first(global_bucket(f), &p->q, kd_fwd_mono_ms(f))) {
                kd_fire_now(f, t, kd_fwd_now(f));
                return;
        }
        kd_metric_inc(&f->metrics, KD_M_RATE_LIMITED);
        if (t->state != KD_TASK_PACED)
                kd_task_set_state(f, t, KD_TASK_PACED);
        kd_taskq_push(&p->q, t);
        if (p->q.len == 1)
                global_arm(f);
}

/* --- forwarder.target_rate_limits --------------------------------------- */

/* This forwarder's part of each group-wide limit: the share of the tier
 * partitions it holds (tasks spread over them by key), worked out again
 * in each new millisecond, so that a rebalance changes it at once (a
 * share kept for a second after a join let both members take most of the
 * limit), and the tasks of one callback count the partitions once; the
 * whole limit while the total is unknown. */
static double share(kd_fwd_t *f, int64_t mono)
{
        kd_fwd_pace_t *p = f->pace;
        if (p->share_mono == mono)
                return p->share;
        int held = 0;
        for (const kd_part_t *pt = f->intake->parts; pt; pt = pt->next)
                held++;
        p->share = f->pace->tier_partitions > 0 && held > 0 &&
                           held < f->pace->tier_partitions
                       ? (double)held / f->pace->tier_partitions
                       : 1.0;
        p->share_mono = mono;
        return p->share;
}

static bucket_t rule_bucket(kd_fwd_t *f, kd_fwd_rlim_t *l, int64_t mono)
{
        const kd_ratelimit_t *r = &f->pace->rules->v[l - f->pace->lim];
        double s = share(f, mono), burst = r->burst * s;
        return (bucket_t){&l->tokens, &l->tokens_mono, r->rate * s,
                          burst < 1.0 ? 1.0 : burst};
}

static void rule_run_cb(kd_timer_t *tm, void *arg);

static void rule_arm(kd_fwd_t *f, kd_fwd_rlim_t *l)
{
        arm_for(f, &l->q, &l->timer, rule_bucket(f, l, kd_fwd_mono_ms(f)),
                rule_run_cb, l, "target_rate_timer");
}

/* The rule limiting target (an index of f->pace->lim), or -1: the one
 * matcher of the rules. */
static int rule_of_target(const kd_fwd_t *f, const char *target)
{
        return f->pace->rules->cnt && target
                   ? kd_ratelimits_match(f->pace->rules, target, strlen(target))
                   : -1;
}

/* The rule limiting t's target, or -1 (looked up at intake:
 * kd_pace_rule_find). */
static int rule_of(const kd_task_t *t)
{
        return t->rule - 1;
}

void kd_pace_rule_find(const kd_fwd_t *f, kd_task_t *t)
{
        t->rule = rule_of_target(f, t->rec.target) + 1;
}

/* t leaves its rule's queue with a token: claimed now, it fires at its
 * fire time, or at its slot (claim_ahead after the token) when that is
 * later, without asking the rule again: its fire keeps the tokens'
 * cadence whatever its claim took (a batch of claims answered at once
 * would otherwise fire together: 738 in one second at 500/s). */
static void rule_pass(kd_fwd_t *f, kd_fwd_rlim_t *l, kd_task_t *t)
{
        t->rate_passed = 1;
        t->rlim = (unsigned)(l - f->pace->lim); /* its fire's rule */
        t->rate_slot_mono = kd_fwd_mono_ms(f) + f->conf->fwd_claim_ahead_ms;
        f->hooks->claim(f, t);
}

int64_t kd_pace_fire_at(const kd_fwd_t *f, const kd_task_t *t)
{
        int64_t at = t->rec.fire_at_ms;
        if (!t->rate_passed || !t->rate_slot_mono)
                return at;
        int64_t slot = kd_fwd_now(f) + (t->rate_slot_mono - kd_fwd_mono_ms(f));
        return slot > at ? slot : at;
}

/* Lets queued tasks through to their claims as the rule allows. */
static void rule_run_cb(kd_timer_t *tm, void *arg)
{
        (void)tm;
        kd_fwd_rlim_t *l = arg;
        kd_fwd_t *f = l->f;
        int64_t mono = kd_fwd_mono_ms(f), now = kd_fwd_now(f);
        bucket_t b = rule_bucket(f, l, mono);
        refill(b, mono);
        for (kd_task_t *t; (t = pop_with_token(b, &l->q));) {
                if (now > t->rate_since)
                        l->waited_ms += now - t->rate_since;
                rule_pass(f, l, t);
        }
        rule_arm(f, l);
}

/* A rule's share of the held set (its tasks held, queued for a token,
 * claimed and not yet fired): what its rate (this forwarder's share)
 * lets through in the hold horizon and lookahead and KD_RATE_QUEUE_S
 * more, and its burst, but never more than an eighth of
 * forwarder.max_held (kd_held.h bounds all rules together to half of
 * it), so that a limited target's backlog cannot fill the held set and
 * hold up the tasks of other targets; at least one. Its tasks are held
 * only within the rule's horizon of their turns (kd_pace_horizon), the
 * share's time less KD_RATE_QUEUE_S (or half the share's time, when that
 * is more): no task of it waits more than that for a token after its
 * turn, nor keeps exactly_once's offset span open longer than the hold
 * horizon and that. */
#define KD_RATE_QUEUE_S 10
static size_t rule_held_share(kd_fwd_t *f, kd_fwd_rlim_t *l, int64_t mono)
{
        const kdelay_conf_t *c = f->conf;
        bucket_t b = rule_bucket(f, l, mono);
        double ahead = (double)(c->fwd_hold_horizon_ms + c->fwd_lookahead_ms);
        double room = b.rate * (ahead / 1000.0 + KD_RATE_QUEUE_S) + b.burst;
        double cap = (double)c->fwd_max_held / 8.0;
        if (room > cap)
                room = cap;
        return room < 1.0 ? 1 : (size_t)room;
}

/* The next turn of rule l for a task due at base with ahead tasks before
 * it: one gap of the rule's rate after each, and after the turns given
 * before (l->defer_until, which it becomes), and not before least plus
 * a gap. Worked out in fractional milliseconds (a gap rounded up to a
 * whole one let at most 1000 turns a second through: 500/s became
 * 333/s), the turn given rounded up. */
static int64_t rule_turn(kd_fwd_t *f, kd_fwd_rlim_t *l, int64_t base,
                         size_t ahead, int64_t least, double gap_least,
                         int64_t mono)
{
        bucket_t b = rule_bucket(f, l, mono);
        double gap = 1000.0 / b.rate;
        if (gap < gap_least)
                gap = gap_least;
        double turn = (double)base + (double)(ahead + 1) * gap;
        if (turn < l->defer_until + gap)
                turn = l->defer_until + gap;
        if (turn < (double)least + gap)
                turn = (double)least + gap;
        l->defer_until = turn;
        int64_t whole = (int64_t)turn;
        return whole + ((double)whole < turn);
}

/* t's claim is due but the queue holds the rule's share (it shrank: a
 * rebalance lowered this forwarder's part of the rate): t goes back to a
 * tier topic with its turn (kdelay-not-before: after the queue and the
 * tasks sent back before it, at the rule's rate), its offset is done,
 * and the forwarder that reads it holds it near that turn and queues it
 * again. */
static void rule_defer(kd_fwd_t *f, kd_fwd_rlim_t *l, kd_task_t *t,
                       int64_t mono)
{
        t->rec.not_before_ms =
            rule_turn(f, l, kd_fwd_now(f), l->q.len, 0, 0, mono);
        kd_metric_inc(&f->metrics, KD_M_RATE_DEFERRED);
        kd_held_remove(f, t);
        t->held_rule = (unsigned)(l - f->pace->lim) + 1; /* its out */
        kd_held_add_out(f, t);
        kd_fire_hop(f, t);
}

int kd_pace_rule(const kd_task_t *t)
{
        return rule_of(t);
}

int64_t kd_pace_horizon(kd_fwd_t *f, int rule)
{
        const kdelay_conf_t *c = f->conf;
        kd_fwd_rlim_t *l = &f->pace->lim[rule];
        int64_t mono = kd_fwd_mono_ms(f);
        bucket_t b = rule_bucket(f, l, mono);
        /* The share's time less the queue's, or, when that is less (a
         * share under 20 s of the rate), half the share's: the other half
         * for the queue and the claims. */
        int64_t all =
            (int64_t)((double)rule_held_share(f, l, mono) * 1000.0 / b.rate);
        int64_t w = all - KD_RATE_QUEUE_S * 1000;
        if (w < all / 2)
                w = all / 2;
        int64_t floor = c->fwd_claim_ahead_ms + 2 * c->fwd_lookahead_ms;
        if (c->tiers.cnt && floor < c->tiers.v[0].delay_ms)
                floor = c->tiers.v[0].delay_ms;
        if (w < floor)
                w = floor;
        return w < c->fwd_hold_horizon_ms ? w : c->fwd_hold_horizon_ms;
}

int kd_pace_share_full(kd_fwd_t *f, const kd_task_t *t, int rule)
{
        size_t cap = rule_held_share(f, &f->pace->lim[rule], kd_fwd_mono_ms(f));
        return kd_held_share_full(f, t, (unsigned)rule, cap);
}

void kd_pace_defer(kd_fwd_t *f, kd_task_t *t, int rule)
{
        int64_t now = kd_fwd_now(f), due = kd_task_due_at(t);
        kd_fwd_rlim_t *l = &f->pace->lim[rule];
        int64_t mono = kd_fwd_mono_ms(f);
        /* Its turn lies beyond the rule's horizon and the lookahead, so it
         * is read again only when it is due to be held; held that long
         * before its turn, no more tasks sent back than the share holds
         * may have turns within that time: when the share's time is
         * shorter (a horizon held up by its floor: a high rate, a small
         * max_held), their turns are spaced by that time over the share
         * instead of the rate's gap, else they came back at once, found
         * the share full and were sent back again and again. */
        int64_t held_for = kd_pace_horizon(f, rule) + f->conf->fwd_lookahead_ms;
        size_t cap = rule_held_share(f, l, mono);
        size_t fit = t->bytes
                         ? (size_t)(f->conf->fwd_max_held_bytes / 8) / t->bytes
                         : cap; /* tasks of its size in the bytes */
        if (fit < cap)
                cap = fit < 1 ? 1 : fit;
        double gap_least = (double)held_for / (double)cap;
        t->rec.not_before_ms = rule_turn(f, l, due > now ? due : now,
                                         kd_held_share(f, (unsigned)rule),
                                         now + held_for, gap_least, mono);
        kd_metric_inc(&f->metrics, KD_M_RATE_DEFERRED);
}

/* t (held, its claim due) goes on to its claim if its target's rule
 * allows and nothing waits before it, else queues behind the rule's
 * earlier tasks, unclaimed: a cancel meanwhile wins (its claim finds the
 * row), a rebalance hands it over as any held task (hopped: the next
 * owner reads it again and it queues there), and a bounded backlog stays
 * in Kafka rather than in memory. */
static void rule_hold(kd_fwd_t *f, kd_fwd_rlim_t *l, kd_task_t *t)
{
        int64_t mono = kd_fwd_mono_ms(f);
        if (take_first(rule_bucket(f, l, mono), &l->q, mono)) {
                rule_pass(f, l, t);
                return;
        }
        if (l->q.len >= rule_held_share(f, l, mono)) {
                rule_defer(f, l, t, mono);
                return;
        }
        kd_metric_inc(&f->metrics, KD_M_RATE_LIMITED);
        l->waited++;
        t->rlim = (unsigned)(l - f->pace->lim);
        t->rate_since = kd_fwd_now(f);
        kd_taskq_push(&l->q, t);
        if (l->q.len == 1)
                rule_arm(f, l);
}

void kd_pace_hold_due_cb(kd_timer_t *tm, void *arg)
{
        kd_fwd_t *f = arg;
        kd_task_t *t = kd_task_of_timer(tm);
        int r = t->rate_passed ? -1 : rule_of(t);
        if (r < 0)
                f->hooks->claim(f, t);
        else
                rule_hold(f, &f->pace->lim[r], t);
}

/* The fires' own bucket of rule l: the same rate and burst as its
 * claims', taken at each fire as it goes, so that the fires, not only the
 * tokens before the claims, keep the limit in any second: claims answered
 * late and together, or a loop held up (a commit, a slow host) that runs
 * its timers late, do not bunch them past the burst. */
static bucket_t fire_bucket(kd_fwd_t *f, kd_fwd_rlim_t *l, int64_t mono)
{
        bucket_t b = rule_bucket(f, l, mono);
        b.tokens = &l->fire_tokens;
        b.tokens_mono = &l->fire_tokens_mono;
        return b;
}

static void fire_run_cb(kd_timer_t *tm, void *arg);

static void fire_arm(kd_fwd_t *f, kd_fwd_rlim_t *l)
{
        arm_for(f, &l->fire_q, &l->fire_timer,
                fire_bucket(f, l, kd_fwd_mono_ms(f)), fire_run_cb, l,
                "target_rate_timer");
}

/* Where a fire let through by its rule goes next: max_fire_rate
 * (global_admit), or, in a revoke's wait, which max_fire_rate yields to,
 * its produce at once (fire_at_once). */
typedef void next_fn(kd_fwd_t *f, kd_task_t *t);

static void fire_at_once(kd_fwd_t *f, kd_task_t *t)
{
        kd_fire_now(f, t, kd_fwd_now(f));
}

/* Sends on the queued fires of rule l the bucket has tokens for now. */
static void fire_run(kd_fwd_t *f, kd_fwd_rlim_t *l, next_fn *then)
{
        int64_t mono = kd_fwd_mono_ms(f);
        bucket_t b = fire_bucket(f, l, mono);
        refill(b, mono);
        for (kd_task_t *t; (t = pop_with_token(b, &l->fire_q));)
                then(f, t);
}

static void fire_run_cb(kd_timer_t *tm, void *arg)
{
        (void)tm;
        kd_fwd_rlim_t *l = arg;
        fire_run(l->f, l, global_admit);
        fire_arm(l->f, l);
}

/* t (claimed, due): when its target's rule let it through before its
 * claim (t->rlim), on to then with a token of the rule's fires' bucket if
 * nothing waits before it, else queued (PACED) in due order, and 1;
 * without a rule, on to then, and 0. */
static int fire_admit(kd_fwd_t *f, kd_task_t *t, next_fn *then)
{
        kd_fwd_rlim_t *l = t->rate_passed ? &f->pace->lim[t->rlim] : NULL;
        int64_t mono = kd_fwd_mono_ms(f);
        if (!l || take_first(fire_bucket(f, l, mono), &l->fire_q, mono)) {
                then(f, t);
                return 0;
        }
        kd_task_set_state(f, t, KD_TASK_PACED);
        kd_taskq_push(&l->fire_q, t);
        if (l->fire_q.len == 1)
                fire_arm(f, l);
        return 1;
}

static void due_cb(kd_timer_t *tm, void *arg)
{
        fire_admit(arg, kd_task_of_timer(tm), global_admit);
}

int kd_pace_due_now(kd_fwd_t *f, kd_task_t *t)
{
        return fire_admit(f, t, fire_at_once);
}

int64_t kd_pace_release(kd_fwd_t *f)
{
        kd_fwd_pace_t *p = f->pace;
        int64_t next = INT64_MAX;
        for (size_t i = 0; i < p->rules->cnt; i++) {
                kd_fwd_rlim_t *l = &p->lim[i];
                fire_run(f, l, fire_at_once);
                if (l->fire_q.head) {
                        int64_t at =
                            next_token(fire_bucket(f, l, kd_fwd_mono_ms(f)));
                        next = at < next ? at : next;
                }
        }
        return next;
}

void kd_pace_claimed(kd_fwd_t *f, kd_task_t *t)
{
        kd_task_set_state(f, t, KD_TASK_CLAIMED);
        /* Its target's metadata asked for now, before the fire (none
         * made: the fire goes by name, kd_producer.h). */
        (void)kd_producer_topic(f, t->rec.target);
        if (kd_task_arm(f, t, KD_CLOCK_WALL, kd_pace_fire_at(f, t), due_cb))
                kd_fwd_oom(f, "fire_timer");
}

kdelay_err_t kd_pace_init(kd_fwd_t *f, char *errstr, size_t errstr_size)
{
        kd_fwd_pace_t *p = f->pace;
        kd_timer_init(&p->timer, NULL, f);
        kd_taskq_init(&p->q, KD_WHERE_PACE_Q);
        p->rules = &f->conf->fwd_rate_rules;
        if (!p->rules->cnt)
                return KDELAY_OK;
        if (!(p->lim = calloc(p->rules->cnt, sizeof(*p->lim))))
                return kd_fail(KDELAY_ERR_NO_MEMORY, errstr, errstr_size,
                               "out of memory");
        for (size_t i = 0; i < p->rules->cnt; i++) {
                p->lim[i].f = f;
                kd_taskq_init(&p->lim[i].q, KD_WHERE_TARGET_Q);
                kd_timer_init(&p->lim[i].timer, NULL, &p->lim[i]);
                kd_taskq_init(&p->lim[i].fire_q, KD_WHERE_FIRE_Q);
                kd_timer_init(&p->lim[i].fire_timer, NULL, &p->lim[i]);
        }
        return KDELAY_OK;
}

void kd_pace_clear(kd_fwd_t *f)
{
        free(f->pace->lim);
        f->pace->lim = NULL;
}

void kd_pace_log(kd_fwd_t *f)
{
        kd_fwd_pace_t *p = f->pace;
        for (size_t i = 0; i < p->rules->cnt; i++) {
                const kd_ratelimit_t *r = &p->rules->v[i];
                char q[KD_LOG_QUOTED_MAX(256)];
                kd_log(f->conf, KDELAY_LOG_INFO,
                       "event=target_rate_limit target=%s limit=%g share=%.3f "
                       "waiting=%zu waited=%llu waited_s=%.3f held=%zu "
                       "held_share=%zu horizon_ms=%lld",
                       kd_log_quote(r->as, q, sizeof(q)), r->rate,
                       share(f, kd_fwd_mono_ms(f)),
                       p->lim[i].q.len + p->lim[i].fire_q.len,
                       (unsigned long long)p->lim[i].waited,
                       (double)p->lim[i].waited_ms / 1000.0,
                       kd_held_share(f, (unsigned)i),
                       rule_held_share(f, &p->lim[i], kd_fwd_mono_ms(f)),
                       (long long)kd_pace_horizon(f, (int)i));
        }
}

/* What a rule's metric family samples. */
typedef enum rule_metric {
        RM_WAITED_S, /* time its fires waited, summed */
        RM_WAITED,   /* fires that waited */
        RM_WAITING,  /* due tasks waiting now */
        RM_RATE,     /* this forwarder's part of the rate */
        RM_HELD      /* its share of the held set in use */
} rule_metric_t;

/* Appends one metric family, a sample per rule. */
static void family(const kd_fwd_t *f, const char *name, const char *type,
                   const char *help, rule_metric_t which, char *buf,
                   size_t size, size_t *len)
{
        const kd_fwd_pace_t *p = f->pace;
        int n = snprintf(
            *len < size ? buf + *len : NULL, *len < size ? size - *len : 0,
            "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
        *len += n > 0 ? (size_t)n : 0;
        for (size_t i = 0; i < p->rules->cnt; i++) {
                const kd_fwd_rlim_t *l = &p->lim[i];
                double v = 0;
                switch (which) {
                case RM_WAITED_S:
                        v = (double)l->waited_ms / 1000.0;
                        break;
                case RM_WAITED:
                        v = (double)l->waited;
                        break;
                case RM_WAITING:
                        v = (double)(l->q.len + l->fire_q.len);
                        break;
                case RM_HELD:
                        v = (double)kd_held_share(f, (unsigned)i);
                        break;
                case RM_RATE:
                        v = p->rules->v[i].rate *
                            (p->share_mono ? p->share : 1.0);
                        break;
                }
                /* Label values: topic characters and '*' only. */
                n = snprintf(*len < size ? buf + *len : NULL,
                             *len < size ? size - *len : 0,
                             "%s{target=\"%s\"} %.17g\n", name,
                             p->rules->v[i].as, v);
                *len += n > 0 ? (size_t)n : 0;
        }
}

void kd_pace_format(const kd_fwd_t *f, char *buf, size_t size, size_t *len)
{
        if (!f->pace->rules->cnt)
                return;
        family(f, "kdelay_forwarder_rate_limited_seconds_total", "counter",
               "Time fires to a rate-limited target waited for its limit, "
               "summed (forwarder.target_rate_limits)",
               RM_WAITED_S, buf, size, len);
        family(f, "kdelay_forwarder_rate_limited_fires_total", "counter",
               "Fires that waited for their target's rate limit", RM_WAITED,
               buf, size, len);
        family(f, "kdelay_forwarder_rate_limit_waiting", "gauge",
               "Due tasks waiting for their target's rate limit now (for "
               "their claims or, claimed, for their fires)",
               RM_WAITING, buf, size, len);
        family(f, "kdelay_forwarder_rate_limit_held", "gauge",
               "Tasks to the target held in memory now (its share of the "
               "held set: waiting for their claims, for a token, or, "
               "claimed, for their fires)",
               RM_HELD, buf, size, len);
        family(f, "kdelay_forwarder_rate_limit_fires_per_second", "gauge",
               "This forwarder's part of the target's limit (its share of "
               "the tier partitions)",
               RM_RATE, buf, size, len);
}

void kd_pace_tier_partitions(kd_fwd_t *f, int parts)
{
        f->pace->tier_partitions = parts;
}
