/* SPDX-License-Identifier: Apache-2.0 */
/* Claim stage (kd_claim.h): owns f->claim, the claim identity, queue and
 * flush timer. Calls downstream only: pacing (won claims), settle and
 * the mode (dropped tasks). */
#include "kd_claim.h"
#include "kd_pipeline_state.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "core/kd_mode_ops.h"
#include "kd_fire.h"
#include "kd_held.h"
#include "kd_lifecycle.h"
#include "kd_log.h"
#include "kd_outage.h"
#include "kd_pace.h"
#include "kd_settle.h"
#include "kd_util.h"
#include "kd_verdict.h"
#include "store/kd_store.h"

static void renew_cb(kd_timer_t *tm, void *arg);

void kd_claim_init(kd_fwd_t *f)
{
        kd_fwd_claim_t *c = f->claim;
        const kdelay_conf_t *conf = f->conf;
        kd_taskq_init(&c->q, KD_WHERE_CLAIM_Q);
        size_t len = strlen(f->instance);
        if (len <= 20) {
                kd_strlcpy(c->token_name, f->instance, sizeof(c->token_name));
        } else {
                uint32_t h = 2166136261u; /* FNV-1a */
                for (size_t i = 0; i < len; i++)
                        h = (h ^ (unsigned char)f->instance[i]) * 16777619u;
                snprintf(c->token_name, sizeof(c->token_name), "%.11s~%08x",
                         f->instance, h);
        }
        if (getrandom(&c->boot, sizeof(c->boot), 0) != sizeof(c->boot))
                c->boot = (uint32_t)getpid() ^ (uint32_t)kd_fwd_wall_ms(f);
        snprintf(c->own_tag, sizeof(c->own_tag), "%s:", c->token_name);
        snprintf(c->boot_tag, sizeof(c->boot_tag), "%08x.", c->boot);
        /* Seqs start at the wall clock in microseconds: above every seq
         * an earlier process of this token name gave (below a million
         * claims a second), so that a run it recorded (kept for the
         * retention) never covers a row of this one, even if its random
         * boot was drawn again: that row would read FIRED undelivered. */
        int64_t wall = kd_fwd_wall_ms(f);
        c->seq = wall > 0 ? (uint64_t)wall * 1000u : 0;
        kd_claim_new_generation(f);
        if (conf->fwd_claim_lease_ms > 0 &&
            kd_timer_arm(&f->timers, &c->renew, KD_CLOCK_MONO,
                         kd_fwd_mono_ms(f) + conf->fwd_claim_lease_ms / 3,
                         renew_cb, f))
                kd_fwd_oom(f, "renew_timer");
}

void kd_claim_new_generation(kd_fwd_t *f)
{
        kd_fwd_claim_t *c = f->claim;
        c->generation++;
        int len =
            snprintf(c->prefix, sizeof(c->prefix), "%s:%08x.%u:", c->token_name,
                     c->boot, c->generation);
        /* The run tracker's prefix is the tokens' without its last ':';
         * seqs go on from c->seq (never reset). */
        char prefix[sizeof(c->prefix)];
        kd_strlcpy(prefix, c->prefix, sizeof(prefix));
        if (len > 0 && (size_t)len <= sizeof(prefix))
                prefix[len - 1] = '\0';
        kd_settle_run_generation(f, prefix, c->seq);
}

void kd_claim_generations_gone(kd_fwd_t *f)
{
        f->claim->gone_upto = f->claim->generation;
}

static void flush_cb(kd_timer_t *tm, void *arg);

/* Claim batches out at once: while one is on the store, the next fills,
 * so a batch never waits behind a round trip it does not need. */
#define KD_CLAIM_PIPELINE 4

/* An UNDECIDED read-back (the row went between the INSERT and the read:
 * gc) is claimed again after this long, not at once. */
#define KD_UNDECIDED_WAIT_MS 100

/* Claims wait up to half of claim_ahead to fill a batch, so a claim still
 * lands well before its fire time; never before the store's retry time;
 * with the pipeline full, when a batch is back. */
static void arm(kd_fwd_t *f)
{
        kd_fwd_claim_t *c = f->claim;
        if (!c->q.head ||
            (c->inflight >= KD_CLAIM_PIPELINE && !kd_outage_firing(f))) {
                kd_timer_disarm(&f->timers, &c->flush);
                return;
        }
        int64_t at = c->q_since_mono + f->conf->fwd_claim_ahead_ms / 2;
        int firing = kd_outage_firing(f); /* no claims: fire them now */
        if (c->q.len >= (size_t)f->conf->fwd_claim_batch || firing)
                at = kd_fwd_mono_ms(f);
        if (!firing && at < kd_store_retry_mono(f))
                at = kd_store_retry_mono(f);
        if (kd_timer_arm(&f->timers, &c->flush, KD_CLOCK_MONO, at, flush_cb, f))
                kd_fwd_oom(f, "claim_timer");
}

void kd_claim_enqueue(kd_fwd_t *f, kd_task_t *t)
{
        kd_fwd_claim_t *c = f->claim;
        kd_store_req_detach(t); /* a lease renewal may be out for it */
        kd_task_set_state(f, t, KD_TASK_CLAIMING);
        t->claim = KD_CLAIM_ROW; /* a claim again: its result is new */
        if (!c->q.head)
                c->q_since_mono = kd_fwd_mono_ms(f);
        kd_taskq_push(&c->q, t);
        if (c->q.len == 1 || c->q.len == (size_t)f->conf->fwd_claim_batch)
                arm(f);
}

void kd_claim_due_cb(kd_timer_t *tm, void *arg)
{
        kd_claim_enqueue(arg, kd_task_of_timer(tm));
}

/* Where a claim outcome sends task t. */
typedef enum kd_outcome {
        KD_SETTLED,       /* fire, drop or wait: decided */
        KD_NEEDS_TAKEOVER /* FIRING under an owner that seems gone */
} kd_outcome_t;

/* Looks at the row again when another claimer's lease has passed (a
 * little after: the two clocks' ticks differ). */
#define KD_LEASE_SLACK_MS 20

static void wait_lease(kd_fwd_t *f, kd_task_t *t, int64_t left_ms)
{
        kd_task_set_state(f, t, KD_TASK_HELD);
        kd_metric_inc(&f->metrics, KD_M_FOREIGN_WAITS);
        if (kd_task_arm(f, t, KD_CLOCK_MONO,
                        kd_fwd_mono_ms(f) + left_ms + KD_LEASE_SLACK_MS,
                        kd_claim_due_cb))
                kd_fwd_oom(f, "claim_wait_timer");
}

/* Looks at the row again after the foreign-claim wait. */
static void wait_foreign(kd_fwd_t *f, kd_task_t *t)
{
        t->waited_foreign = 1;
        kd_task_set_state(f, t, KD_TASK_HELD);
        kd_metric_inc(&f->metrics, KD_M_FOREIGN_WAITS);
        if (kd_task_arm(f, t, KD_CLOCK_MONO,
                        kd_fwd_mono_ms(f) + f->conf->fwd_foreign_wait_ms,
                        kd_claim_due_cb))
                kd_fwd_oom(f, "claim_wait_timer");
}

/* 1 when owner is this instance's earlier process (a static member) or
 * a generation of this process with no task left (kd_verdict.h). */
static int own_earlier(const kd_fwd_t *f, const char *owner)
{
        return kd_verdict_own_earlier(f->claim, f->conf->fwd_static_membership,
                                      owner);
}

/* Acts on what the store's answer c means for t (kd_verdict). */
static kd_outcome_t outcome(kd_fwd_t *f, kd_task_t *t, const kd_fate_claim_t *c,
                            int after_takeover)
{
        char q[KD_LOG_QUOTED_MAX(KDELAY_ID_MAX)];
        const kd_verdict_in_t in = {.answer = c,
                                    .token = t->token,
                                    .assignment = f->claim->prefix,
                                    .own_earlier = own_earlier(f, c->row_owner),
                                    .after_takeover = after_takeover,
                                    .takeover_at_once =
                                        f->mode->takeover_at_once,
                                    .waited_foreign = t->waited_foreign};
        switch (kd_verdict(&in)) {
        /* CANCELLED, DONE (the row FIRED or DEAD) and OTHER_COPY (the row
         * another token's): t owns no FIRING row, its seq is finished.
         * The others leave it alive: it may still insert or take over a
         * row under its token. */
        case KD_VERDICT_CANCELLED:
                kd_metric_inc(&f->metrics, KD_M_CANCELLED);
                kd_log(f->conf, KDELAY_LOG_INFO, "event=task_cancelled id=%s",
                       kd_log_quote(t->rec.id, q, sizeof(q)));
                kd_settle_note_cancelled(f, t->rec.id, t->rec.fire_at_ms);
                kd_settle_run_finished(f, t->seq);
                f->mode->done(&f->mode_ctx, t);
                return KD_SETTLED;
        case KD_VERDICT_DONE:
                kd_metric_inc(&f->metrics, KD_M_ALREADY_FIRED);
                kd_settle_run_finished(f, t->seq);
                f->mode->done(&f->mode_ctx, t);
                return KD_SETTLED;
        case KD_VERDICT_UNDECIDED:
                kd_task_set_state(f, t, KD_TASK_HELD);
                if (kd_task_arm(f, t, KD_CLOCK_MONO,
                                kd_fwd_mono_ms(f) + KD_UNDECIDED_WAIT_MS,
                                kd_claim_due_cb))
                        kd_fwd_oom(f, "claim_wait_timer");
                return KD_SETTLED;
        case KD_VERDICT_MINE:
                kd_metric_inc(&f->metrics, KD_M_CLAIMED);
                kd_pace_claimed(f, t);
                return KD_SETTLED;
        case KD_VERDICT_OTHER_COPY:
                kd_metric_inc(&f->metrics, KD_M_DUP_COPIES);
                kd_settle_run_finished(f, t->seq);
                f->mode->done(&f->mode_ctx, t);
                return KD_SETTLED;
        case KD_VERDICT_TAKEOVER_OWN:
                kd_metric_inc(&f->metrics, KD_M_OWN_TAKEOVERS);
                return KD_NEEDS_TAKEOVER;
        case KD_VERDICT_WAIT_LEASE:
                wait_lease(f, t, c->lease_left_ms);
                return KD_SETTLED;
        case KD_VERDICT_WAIT_FOREIGN:
                wait_foreign(f, t);
                return KD_SETTLED;
        case KD_VERDICT_TAKEOVER:
                break;
        }
        return KD_NEEDS_TAKEOVER;
}

static void answered(kd_fwd_t *f, kd_store_req_t *r);
static void renewed(kd_fwd_t *f, kd_store_req_t *r);

/* When item c (of request fw) says t holds its claim: until when its
 * lease surely holds. The store set it at the earliest when fw was sent,
 * and read it back after; the smaller of the two bounds. */
static int lease_won(kd_fwd_t *f, kd_task_t *t, const kd_fw_req_t *fw,
                     const kd_fate_claim_t *c)
{
        if (fw->err || c->fate != KDELAY_FATE_FIRING ||
            strcmp(c->row_owner, t->token))
                return 0;
        int64_t lease = f->conf->fwd_claim_lease_ms;
        if (c->lease_left_ms >= 0 && c->lease_left_ms < lease)
                lease = c->lease_left_ms;
        t->lease_mono = f->conf->fwd_claim_lease_ms > 0
                            ? fw->submitted_mono + (lease > 0 ? lease : 1)
                            : 0;
        return 1;
}

/* Sends r, its items filled: its tasks wait on it. */
static void req_send(kd_fwd_t *f, kd_store_req_t *r)
{
        for (size_t i = 0; i < r->fw.n; i++)
                kd_task_to_claim_req(r->tasks[i]);
        f->claim->inflight++;
        kd_store_submit(f, r, answered);
}

/* Sends a takeover for the n tasks (all with tokens), items with the row
 * owners found. -1 when out of memory: nothing sent, the tasks
 * untouched. */
static int send_takeover(kd_fwd_t *f, kd_task_t **tasks,
                         const kd_fate_claim_t *found, size_t n)
{
        kd_store_req_t *r = kd_store_req_new(f, KD_FW_TAKEOVER, n);
        if (!r)
                return -1;
        for (size_t i = 0; i < n; i++) {
                if (kd_store_req_item(r, i, tasks[i], found[i].row_owner)) {
                        kd_store_req_free(r); /* unlinks the tasks */
                        return -1;
                }
                r->fw.items[i].lease_ms = f->conf->fwd_claim_lease_ms;
                r->fw.items[i].own_previous = found[i].own_previous;
        }
        req_send(f, r);
        return 0;
}

/* A claim or takeover is back: each task still here goes where its row
 * says; those needing a takeover go out together. */
static void answered(kd_fwd_t *f, kd_store_req_t *r)
{
        kd_fw_req_t *fw = &r->fw;
        int after_takeover = fw->op == KD_FW_TAKEOVER;
        size_t m = 0;
        f->claim->inflight--;
        for (size_t i = 0; i < fw->n; i++) {
                kd_task_t *t = r->tasks[i];
                if (!t)
                        continue; /* revoked meanwhile */
                t->req = NULL;
                kd_task_claim_answered(t);
                r->tasks[i] = NULL;
                if (fw->err) {
                        kd_claim_enqueue(f, t);
                        continue;
                }
                if (after_takeover)
                        kd_metric_inc(&f->metrics, KD_M_TAKEOVERS);
                lease_won(f, t, fw, &fw->items[i]);
                if (outcome(f, t, &fw->items[i], after_takeover) ==
                    KD_NEEDS_TAKEOVER) {
                        /* Packed to the front; i >= m. */
                        r->tasks[m] = t;
                        if (m != i)
                                memcpy(fw->items[m].row_owner,
                                       fw->items[i].row_owner,
                                       sizeof(fw->items[m].row_owner));
                        fw->items[m].own_previous =
                            own_earlier(f, fw->items[m].row_owner);
                        m++;
                }
        }
        if (m > 0 && send_takeover(f, r->tasks, fw->items, m)) {
                kd_store_failed(f, "takeover", "out of memory");
                for (size_t i = 0; i < m; i++)
                        kd_claim_enqueue(f, r->tasks[i]);
        }
        for (size_t i = 0; i < m; i++)
                r->tasks[i] = NULL; /* linked to the new request now */
        kd_store_req_done(f, r);
        arm(f);
}

/* While behind (kd_held_behind), a claim statement takes up to this many
 * times forwarder.claim_batch rows: fewer, larger statements for a
 * backlog, at most KD_CLAIM_BATCH_BEHIND_MAX (within the prepared
 * statement's limit of 65,535 placeholders, fate_claim_prep.c). */
#define KD_CLAIM_BATCH_BEHIND     4
#define KD_CLAIM_BATCH_BEHIND_MAX 4000

/* How many tasks the next claim statement takes at most. */
static size_t batch_max(kd_fwd_t *f)
{
        kd_fwd_claim_t *c = f->claim;
        size_t max = (size_t)f->conf->fwd_claim_batch;
        /* The queue's head is a sign of lateness too (a drain bound by
         * the store keeps its fires late only as long as they go out),
         * but not of being on time: the queue is in due order only per
         * partition, and a head not yet due says nothing of the tasks
         * behind it. Only the fires clear the signal (or its staleness). */
        int64_t late =
            c->q.head ? kd_fwd_now(f) - kd_fire_due_ms(c->q.head) : 0;
        if (late >= KD_BEHIND_CLEAR_MS)
                kd_held_note_late(f, late);
        if (!kd_held_behind(f))
                return max;
        size_t grown = max * KD_CLAIM_BATCH_BEHIND;
        if (grown > KD_CLAIM_BATCH_BEHIND_MAX)
                grown = KD_CLAIM_BATCH_BEHIND_MAX;
        return grown > max ? grown : max;
}

/* Sends one batch from the head of the queue. 0 on success. */
static int claim_batch(kd_fwd_t *f)
{
        kd_fwd_claim_t *c = f->claim;
        size_t n = c->q.len, max = batch_max(f);
        if (n > max)
                n = max;
        /* Straight into the request: a task array of a batch's size here
         * was a large allocation per batch, which made glibc consolidate
         * its free lists each time (a tenth of the loop's CPU in a
         * catch-up). */
        kd_store_req_t *r = kd_store_req_new(f, KD_FW_CLAIM, n);
        if (!r) {
                kd_store_failed(f, "claim", "out of memory");
                return -1;
        }
        for (size_t i = 0; i < n; i++) {
                kd_task_t *t = kd_taskq_pop(&c->q);
                int fresh = !t->token[0]; /* token made here: no row yet */
                /* A new token's seq goes to the run tracker first: refused
                 * (out of memory), no token is made and c->seq stays. */
                int failed = fresh && kd_settle_run_assign(f, c->seq + 1);
                if (fresh && !failed) {
                        t->seq = ++c->seq;
                        snprintf(t->token, sizeof(t->token), "%s%llu",
                                 c->prefix, (unsigned long long)t->seq);
                }
                if (failed || kd_store_req_item(r, i, t, NULL)) {
                        kd_store_failed(f, "claim", "out of memory");
                        kd_claim_enqueue(f, t);
                        for (size_t j = 0; j < i; j++) {
                                kd_task_t *u = r->tasks[j];
                                kd_store_req_detach(u);
                                kd_claim_enqueue(f, u);
                        }
                        kd_store_req_free(r);
                        return -1;
                }
                r->fw.items[i].lease_ms = f->conf->fwd_claim_lease_ms;
                r->fw.items[i].fresh = fresh;
        }
        req_send(f, r);
        kd_metric_observe(&f->metrics, KD_M_CLAIM_BATCH, (int64_t)n);
        return 0;
}

/* Claims the n tasks again, which renews their leases. -1 when out of
 * memory (then nothing is sent). */
static int send_renewals(kd_fwd_t *f, kd_task_t **tasks, size_t n)
{
        kd_store_req_t *r = kd_store_req_new(f, KD_FW_CLAIM, n);
        if (!r)
                return -1;
        for (size_t i = 0; i < n; i++) {
                if (kd_store_req_item(r, i, tasks[i], NULL)) {
                        kd_store_req_free(r);
                        return -1;
                }
                r->fw.items[i].lease_ms = f->conf->fwd_claim_lease_ms;
        }
        kd_store_submit(f, r, renewed);
        return 0;
}

/* A lease renewal is back: each task still here holds its claim longer,
 * or has lost it (taken over after its lease passed: this process was
 * stalled longer than the lease) and is dropped unless a produce of it is
 * in flight (its fire, which may then be delivered twice: counted and
 * logged; or the dead letter of a fire that failed): its report comes
 * for it. */
static void renewed(kd_fwd_t *f, kd_store_req_t *r)
{
        kd_fw_req_t *fw = &r->fw;
        for (size_t i = 0; i < fw->n; i++) {
                kd_task_t *t = r->tasks[i];
                if (!t)
                        continue;
                t->req = NULL;
                r->tasks[i] = NULL;
                if (fw->err)
                        continue; /* the next round tries again */
                if (lease_won(f, t, fw, &fw->items[i])) {
                        kd_metric_inc(&f->metrics, KD_M_LEASE_RENEWALS);
                        continue;
                }
                char q[KD_LOG_QUOTED_MAX(KDELAY_ID_MAX)];
                char qo[KD_LOG_QUOTED_MAX(KD_FATE_OWNER_MAX)];
                int out = t->where == KD_WHERE_FLIGHT;
                kd_metric_inc(&f->metrics, KD_M_LEASES_LOST);
                kd_log(f->conf, KDELAY_LOG_WARNING,
                       "event=claim_lost id=%s owner=%s fire_out=%d action=%s",
                       kd_log_quote(t->rec.id, q, sizeof(q)),
                       kd_log_quote(fw->items[i].row_owner, qo, sizeof(qo)),
                       out, out ? "none" : "drop");
                if (out)
                        continue; /* its report decides */
                /* The row is another owner's, decided or gone: none of
                 * its token's left to deliver. */
                kd_settle_run_finished(f, t->seq);
                f->mode->done(&f->mode_ctx,
                              t); /* detaches it (kd_settle_release) */
        }
        kd_store_req_done(f, r);
}

/* Renews the leases of the claims held here that have used a third of
 * theirs: tasks waiting to fire (rate limit, retries) or in flight. */
static void renew_cb(kd_timer_t *tm, void *arg)
{
        kd_fwd_t *f = arg;
        int64_t lease = f->conf->fwd_claim_lease_ms, now = kd_fwd_mono_ms(f);
        size_t batch = (size_t)f->conf->fwd_claim_batch;
        /* Nothing goes while the store is not ready: the next round
         * tries again (a lease outlives two rounds). */
        kd_task_t **due =
            kd_store_ready(f) ? malloc(batch * sizeof(*due)) : NULL;
        size_t n = 0;
        int stop = !due;
        for (kd_part_t *p = f->intake->parts; !stop && p; p = p->next) {
                for (kd_task_t *t = p->tasks; !stop && t; t = t->next) {
                        if (!kd_task_claimed(t) || !t->lease_mono || t->req ||
                            t->lease_mono - now > lease * 2 / 3)
                                continue;
                        due[n++] = t;
                        if (n == batch) {
                                /* Out of memory: the next round. */
                                stop = send_renewals(f, due, n) != 0;
                                n = 0;
                        }
                }
        }
        if (n > 0)
                send_renewals(f, due, n); /* else the next round */
        free(due);
        if (kd_timer_arm(&f->timers, tm, KD_CLOCK_MONO, now + lease / 3,
                         renew_cb, f))
                kd_fwd_oom(f, "renew_timer");
}

/* Through a fate-store outage (kd_outage.h): every queued task goes to
 * its fire without a claim. Its token stays: a claim of it that reached
 * the store before the outage is found FIRING under it, and made FIRED by
 * the journal. */
static void go_unclaimed(kd_fwd_t *f, kd_task_t *t)
{
        t->claim = KD_CLAIM_UNCLAIMED;
        t->lease_mono = 0; /* nothing to renew */
        kd_pace_claimed(f, t);
}

static void fire_unclaimed(kd_fwd_t *f)
{
        kd_task_t *t;
        while ((t = kd_taskq_pop(&f->claim->q)))
                go_unclaimed(f, t);
        /* Those whose claim is out on a store that does not answer (hung:
         * its answer may take the client's read timeout) go too; the
         * answer, when it comes, finds them gone. */
        if (!f->claim->inflight)
                return;
        for (kd_part_t *p = f->intake->parts; p; p = p->next)
                for (kd_task_t *u = p->tasks; u; u = u->next)
                        if (u->where == KD_WHERE_CLAIM_REQ &&
                            u->state == KD_TASK_CLAIMING) {
                                kd_task_detach(f, u);
                                go_unclaimed(f, u);
                        }
}

int kd_claim_holds(const kd_fwd_t *f, const kd_task_t *t)
{
        /* Without a claim: while the outage lets it (it ended, or the
         * journal failed, before its fire: claimed after all). */
        if (t->claim == KD_CLAIM_UNCLAIMED)
                return kd_outage_firing(f);
        /* Claimed: half its lease is left (in-flight fires get theirs
         * renewed, renew_cb). */
        return !t->lease_mono ||
               kd_fwd_mono_ms(f) + f->conf->fwd_claim_lease_ms / 2 <
                   t->lease_mono;
}

void kd_claim_resume(kd_fwd_t *f)
{
        arm(f);
}

static void flush_cb(kd_timer_t *tm, void *arg)
{
        (void)tm;
        kd_fwd_t *f = arg;
        if (kd_outage_firing(f)) {
                fire_unclaimed(f);
                return;
        }
        if (kd_outage_claims_wait(f))
                return; /* kd_claim_resume when the journal is applied */
        /* Due FIRED marks first: a claim after an outage must see the
         * deliveries made before it (the store runs requests in order). */
        kd_settle_flush_due(f);
        while (f->claim->q.head && f->claim->inflight < KD_CLAIM_PIPELINE &&
               kd_store_ready(f))
                if (claim_batch(f))
                        break;
        arm(f);
}
