/* SPDX-License-Identifier: Apache-2.0 */
/* Rebalance stage (kd_rebalance.h): which tier partitions this forwarder
 * holds. Assign opens them (at the offsets the mode reads); revoke fires
 * what is claimed and due, hands the rest over, lets the produces finish
 * and the mode commit, then drops them; a rewind (an aborted transaction)
 * drops every partition and reads again from the committed offsets. It
 * runs inside librdkafka's rebalance callback: it waits only through the
 * producer room (kd_producer.h): the nested pump (kd_loop_pump.h), or the
 * room's wait for a claimed task's fire time. Calls the intake
 * (partitions), claim, fire, held, settle and the mode. */
#include "kd_pipeline_state.h"
#include "kd_rebalance.h"

#include <stdlib.h>
#include <string.h>

#include "core/kd_mode_ops.h"
#include "kd_claim.h"
#include "kd_fire.h"
#include "kd_held.h"
#include "kd_intake.h"
#include "kd_lifecycle.h"
#include "kd_log.h"
#include "kd_pace.h"
#include "kd_settle.h"
#include "kd_tiers.h"
#include "kd_util.h"
#include "producer/kd_loop_pump.h"
#include "producer/kd_producer.h"

/* 1 when the group rebalances incrementally (a cooperative assignor such
 * as cooperative-sticky): an assignment or revoke names only the
 * partitions that move, and the others keep flowing. Asked of librdkafka
 * until it says EAGER or COOPERATIVE, then kept (f->consumer.protocol:
 * the close's revoke must not ask, librdkafka#4041), so a revoke served
 * by the close answers what the group was. 0 before the group is joined,
 * when nothing is assigned yet. */
static int cooperative(kd_fwd_t *f)
{
        if (f->consumer.protocol == KD_REBALANCE_UNKNOWN) {
                const char *p = rd_kafka_rebalance_protocol(f->consumer.rk);
                if (p && !strcmp(p, "COOPERATIVE"))
                        f->consumer.protocol = KD_REBALANCE_COOPERATIVE;
                else if (p && !strcmp(p, "EAGER"))
                        f->consumer.protocol = KD_REBALANCE_EAGER;
        }
        return f->consumer.protocol == KD_REBALANCE_COOPERATIVE;
}

/* 1 when the consumer group has terminated: the rebalance protocol is
 * NULL then. librdkafka 2.0.2's rd_kafka_consumer_close terminates the
 * group while an assignment waits in the consumer's queue (a stop during
 * a rebalance), then serves it to the rebalance callback. */
static int group_closed(const kd_fwd_t *f)
{
        return rd_kafka_rebalance_protocol(f->consumer.rk) == NULL;
}

/* Eager protocol: the whole assignment becomes parts (NULL: none).
 * Cooperative: parts are added (add) or removed. */
static void assign(kd_fwd_t *f, const rd_kafka_topic_partition_list_t *parts,
                   int add)
{
        const char *why;
        rd_kafka_error_t *error = NULL;
        rd_kafka_resp_err_t err = RD_KAFKA_RESP_ERR_NO_ERROR;
        if (!cooperative(f))
                err = rd_kafka_assign(f->consumer.rk, add ? parts : NULL);
        else if (add)
                error = rd_kafka_incremental_assign(f->consumer.rk, parts);
        else
                error = rd_kafka_incremental_unassign(f->consumer.rk, parts);
        if (!err && !error)
                return;
        why = error ? rd_kafka_error_string(error) : rd_kafka_err2str(err);
        /* Nothing would be read or committed: exit for a restart. */
        kd_log(f->conf, KDELAY_LOG_ERROR,
               "event=assign_failed err=\"%s\" action=exit", why);
        if (error)
                rd_kafka_error_destroy(error);
        kd_fwd_fatal(f, "assign_failed");
}

/* Opens a partition for each tier topic's element of parts (the mode's
 * offsets set); the count of offsets an earlier owner's done sets skip
 * into *skipped. -1 when out of memory (logged; the forwarder stops). */
static int open_parts(kd_fwd_t *f, const rd_kafka_topic_partition_list_t *parts,
                      size_t *skipped)
{
        *skipped = 0;
        for (int i = 0; i < parts->cnt; i++) {
                const rd_kafka_topic_partition_t *tp = &parts->elems[i];
                int64_t tier_ms;
                if (kd_tiers_topic_delay(f->conf->topic_prefix, tp->topic,
                                         &tier_ms))
                        continue; /* the pattern admits only tier names */
                kd_part_t *p =
                    kd_intake_part_open(f, tp->topic, tp->partition, tier_ms);
                if (!p)
                        return -1;
                if (f->mode->opened)
                        *skipped += f->mode->opened(&f->mode_ctx, p, tp);
        }
        return 0;
}

void kd_rebalance_assign(kd_fwd_t *f, rd_kafka_topic_partition_list_t *parts)
{
        if (group_closed(f)) {
                /* Nothing would be read or committed: the partitions are
                 * the group's next owner's. The answer (an unassign) is
                 * one librdkafka no longer waits for. */
                rd_kafka_resp_err_t err = rd_kafka_assign(f->consumer.rk, NULL);
                /* The stop goes on: a failed unassign here loses nothing
                 * (none of them was opened), unlike assign()'s. */
                kd_log(f->conf, KDELAY_LOG_NOTICE,
                       "event=assignment_dropped count=%d why=group_closed "
                       "unassign=%s",
                       parts->cnt, err ? rd_kafka_err2name(err) : "ok");
                return;
        }
        kd_claim_new_generation(f);
        if (f->mode->assigning && f->mode->assigning(&f->mode_ctx, parts)) {
                if (!cooperative(f))
                        assign(f, NULL, 0);
                return; /* the mode stops the forwarder */
        }
        f->intake->settled = 1;
        size_t skipped;
        if (open_parts(f, parts, &skipped)) {
                if (!cooperative(f))
                        assign(f, NULL, 0);
                return;
        }
        kd_log(f->conf, KDELAY_LOG_INFO,
               "event=partitions_assigned count=%d done_above_commit=%zu "
               "protocol=%s",
               parts->cnt, skipped, cooperative(f) ? "cooperative" : "eager");
        assign(f, parts, 1);
}

/* Drops everything held for p: not committed, so the next owner re-reads
 * it. Tasks with a produce in flight live on as orphans until reported
 * (kd_settle_release). */
static void part_drop(kd_fwd_t *f, kd_part_t *p)
{
        while (kd_taskq_pop(&p->backlog)) /* at once, not one by one */
                ;
        for (kd_task_t *t = p->tasks, *next; t; t = next) {
                next = t->next;
                t->part = NULL;
                t->prev = t->next = NULL;
                kd_settle_release(f, t);
        }
        p->tasks = NULL;
        kd_intake_part_flowing(f, p); /* a pause outlives the assignment */
        kd_offtrack_clear(&p->track);
        if (f->mode->closed)
                f->mode->closed(&f->mode_ctx, p);
}

/* Drops every partition (only those revoking), their names into l when
 * given. */
static void drop(kd_fwd_t *f, rd_kafka_topic_partition_list_t *l,
                 int revoking_only)
{
        for (kd_part_t **pp = &f->intake->parts; *pp;) {
                kd_part_t *p = *pp;
                if (revoking_only && !p->revoking) {
                        pp = &p->next;
                        continue;
                }
                *pp = p->next;
                if (l)
                        rd_kafka_topic_partition_list_add(l, p->topic,
                                                          p->partition);
                part_drop(f, p);
                free(p->mode);
                free(p);
        }
        if (!f->intake->parts)
                kd_timer_disarm(&f->timers, &f->intake->room);
}

static void drop_all(kd_fwd_t *f, rd_kafka_topic_partition_list_t *l)
{
        drop(f, l, 0);
}

/* Marks the partitions of parts as revoking (all when parts is NULL). */
static void mark_revoking(kd_fwd_t *f,
                          const rd_kafka_topic_partition_list_t *parts)
{
        for (kd_part_t *p = f->intake->parts; p; p = p->next)
                p->revoking =
                    !parts || rd_kafka_topic_partition_list_find(
                                  parts, p->topic, p->partition) != NULL;
}

/* Fires the tasks already claimed here (due within claim_ahead) when they
 * come due, rather than leaving them to the next owner, which would find
 * our claim and wait before taking it over. A task to a rate-limited
 * target is claimed only once its limit let it through (pace.c): those
 * still waiting in their rule's queue are held, handed over unclaimed
 * (hand_over), never flushed to their target; the claimed ones keep
 * their slots and wait for their rule's fires' bucket. max_fire_rate
 * yields to the rebalance. */
static void fire_claimed(kd_fwd_t *f, int64_t deadline)
{
        for (;;) {
                int64_t now = kd_fwd_now(f), next = INT64_MAX;
                int waiting = 0; /* for a rule's fires' bucket */
                for (kd_part_t *p = f->intake->parts; p; p = p->next) {
                        if (!p->revoking)
                                continue;
                        for (kd_task_t *t = p->tasks, *nx; t; t = nx) {
                                nx = t->next; /* a produce may free t */
                                if (t->where == KD_WHERE_FIRE_Q) {
                                        waiting = 1;
                                        continue;
                                }
                                if (t->state != KD_TASK_CLAIMED &&
                                    t->state != KD_TASK_PACED)
                                        continue;
                                int64_t at = kd_pace_fire_at(f, t);
                                if (at > now) {
                                        next = at < next ? at : next;
                                        continue;
                                }
                                kd_task_detach(f, t);
                                if (t->state == KD_TASK_CLAIMED)
                                        waiting |= kd_pace_due_now(f, t);
                                else /* max_fire_rate's queue */
                                        kd_fire_now(f, t, now);
                        }
                }
                /* The fires waiting for their rule's bucket go as it lets
                 * them (its timer does not run here). */
                int64_t rel = kd_pace_release(f);
                if (waiting && rel != INT64_MAX) {
                        rel = now + (rel - kd_fwd_mono_ms(f));
                        next = rel < next ? rel : next;
                }
                if (next == INT64_MAX ||
                    kd_fwd_mono_ms(f) + (next - now) >= deadline)
                        return;
                /* Wait for the next fire time, serving the main
                 * producer's reports meanwhile (the producer room's wait;
                 * the store's answers wait for the pumps below). */
                kd_producer_wait(f, next - now > 1 ? (int)(next - now) : 1);
        }
}

/* 1 when t is handed over on a revoke: held, claiming, or waiting to hop
 * again — not yet claimed, nor in flight, nor a dead letter (which goes
 * on), nor still in the backlog. */
static int hands_over(const kd_task_t *t)
{
        return t->state == KD_TASK_HELD || t->state == KD_TASK_CLAIMING ||
               (t->state == KD_TASK_RETRY && t->retry_as == KD_TASK_HOPPING);
}

/* Hands over the tasks held from revoked partitions by hopping them: once
 * their reports are in, their offsets are done, so the next owner resumes
 * after them instead of re-reading — and re-hopping — everything from the
 * oldest held task on. Not a claimed task: its FIRING row names its
 * source record, and a committed source tells `kdelayctl audit` that the
 * task was delivered (--fix would mark it FIRED, and its copy would then
 * be dropped); it stays unhandled, and the next owner takes the claim
 * over. */
static void hand_over(kd_fwd_t *f)
{
        for (kd_part_t *p = f->intake->parts; p; p = p->next) {
                if (!p->revoking)
                        continue;
                for (kd_task_t *t = p->tasks, *nx; t; t = nx) {
                        nx = t->next; /* a produce may free t */
                        if (!hands_over(t))
                                continue;
                        kd_task_detach(f, t);
                        kd_held_remove(f, t);
                        kd_metric_inc(&f->metrics, KD_M_HANDED_OVER);
                        kd_fire_hop(f, t);
                }
        }
}

/* Opens the partitions of l again at their committed offsets, as the
 * mode reads them (with exactly_once's done sets), and moves each fetch
 * there: the cooperative protocol's rewind, which keeps the assignment. */
static void reopen(kd_fwd_t *f, rd_kafka_topic_partition_list_t *l)
{
        size_t skipped;
        kd_claim_new_generation(f);
        if ((f->mode->assigning && f->mode->assigning(&f->mode_ctx, l)) ||
            open_parts(f, l, &skipped))
                return; /* the forwarder stops */
        for (int i = 0; i < l->cnt; i++)
                if (l->elems[i].offset < 0)
                        l->elems[i].offset = RD_KAFKA_OFFSET_BEGINNING;
        rd_kafka_error_t *error =
            rd_kafka_seek_partitions(f->consumer.rk, l, 10000);
        for (int i = 0; !error && i < l->cnt; i++)
                if (l->elems[i].err)
                        error = rd_kafka_error_new(l->elems[i].err, "%s [%d]",
                                                   l->elems[i].topic,
                                                   (int)l->elems[i].partition);
        if (!error)
                return;
        /* Reads would go on from where they were, past what was aborted. */
        kd_log(f->conf, KDELAY_LOG_ERROR,
               "event=seek_failed err=\"%s\" action=exit",
               rd_kafka_error_string(error));
        rd_kafka_error_destroy(error);
        kd_fwd_fatal(f, "seek_failed");
}

void kd_rebalance_revoke(kd_fwd_t *f, rd_kafka_topic_partition_list_t *parts)
{
        int coop = cooperative(f);
        if (f->intake->settled) /* a rebalance starts: readiness bounds it */
                f->intake->revoked_at = kd_fwd_mono_ms(f);
        f->intake->settled = 0;
        mark_revoking(f, coop ? parts : NULL);
        int64_t deadline =
            f->shutdown_deadline
                ? f->shutdown_deadline
                : kd_fwd_mono_ms(f) + f->conf->fwd_shutdown_timeout_ms;
        /* Claims out on the store get a short wait for their answer, so
         * that won ones fire here; a hung store must not hold the
         * rebalance (nor an open transaction) long. The rest is dropped:
         * the next owner finds the claim and takes it over. */
        int64_t store_deadline =
            kd_fwd_mono_ms(f) + f->conf->fwd_claim_ahead_ms;
        if (store_deadline > deadline)
                store_deadline = deadline;
        kd_loop_pump(f, store_deadline, kd_pump_store_idle);
        if (!f->fatal) {
                fire_claimed(f, deadline);
                hand_over(f);
        }
        /* Let in-flight produces finish so their offsets are committed
         * and the next owner does not produce them again. */
        kd_producer_drain(f, deadline);
        int aborted = f->mode->revoke(&f->mode_ctx, deadline);
        kd_settle_flush(f);
        store_deadline = kd_fwd_mono_ms(f) + f->conf->fwd_claim_ahead_ms;
        kd_loop_pump(f, store_deadline < deadline ? store_deadline : deadline,
                     kd_pump_store_idle);
        drop(f, NULL, 1);
        kd_log(f->conf, KDELAY_LOG_INFO,
               "event=partitions_revoked count=%d inflight_abandoned=%zu "
               "kept=%d",
               parts->cnt, kd_producer_inflight(f), f->intake->parts != NULL);
        assign(f, parts, 0);
        if (!coop)
                return;
        /* The claims handed over stay under this generation's tokens: a
         * copy read later in a partition that stays must not take them
         * for a holder alive here. */
        kd_claim_new_generation(f);
        if (aborted && f->intake->parts)
                kd_rebalance_rewind(f); /* the abort undid their work too */
}

void kd_rebalance_rewind(kd_fwd_t *f)
{
        if (f->pumping) { /* not nested: the loop's next turn */
                f->intake->rewind_due = 1;
                return;
        }
        f->intake->rewind_due = 0;
        rd_kafka_topic_partition_list_t *l =
            rd_kafka_topic_partition_list_new(8);
        if (!l) {
                kd_fwd_oom(f, "rewind");
                return;
        }
        size_t n = 0;
        for (kd_part_t *p = f->intake->parts; p; p = p->next)
                n++;
        drop_all(f, l);
        /* The abort ended every produce (their reports are in): no task
         * of this process holds a claim now. */
        kd_claim_generations_gone(f);
        kd_log(f->conf, KDELAY_LOG_NOTICE, "event=partitions_rewound count=%zu",
               n);
        /* A fresh assignment restarts every fetch at the committed offset
         * and discards what was prefetched; the cooperative protocol keeps
         * its assignment and seeks (a seek discards what was prefetched
         * too). */
        if (cooperative(f))
                reopen(f, l);
        else
                kd_rebalance_assign(f, l);
        rd_kafka_topic_partition_list_destroy(l);
}

void kd_rebalance_clear(kd_fwd_t *f)
{
        drop_all(f, NULL);
}

int kd_rebalance_rewind_due(const kd_fwd_t *f)
{
        return f->intake->rewind_due;
}
