/* Intake stage (kd_intake.h): owns f->intake, the partition list, each
 * partition's backlog, pause state and wake timer. Calls downstream only:
 * schedule, claim/pace/fire (on revoke) and the mode. */
#include "kd_intake.h"

#include <stdlib.h>
#include <string.h>

#include "kd_claim.h"
#include "kd_fire.h"
#include "kd_held.h"
#include "kd_lifecycle.h"
#include "kd_log.h"
#include "kd_loop_pump.h"
#include "kd_mode.h"
#include "kd_probe.h"
#include "kd_sched.h"
#include "kd_settle.h"
#include "kd_store.h"
#include "kd_tiers.h"
#include "kd_util.h"
#include "kd_wire.h"

static kd_part_t *part_find(kd_fwd_t *f, const char *topic, int32_t partition)
{
        for (kd_part_t *p = f->intake.parts; p; p = p->next)
                if (p->partition == partition && !strcmp(p->topic, topic))
                        return p;
        return NULL;
}

static void pause_resume(kd_fwd_t *f, kd_part_t *p, int pause)
{
        rd_kafka_topic_partition_list_t *l =
            rd_kafka_topic_partition_list_new(1);
        rd_kafka_resp_err_t err = RD_KAFKA_RESP_ERR__FAIL;
        if (l) {
                rd_kafka_topic_partition_list_add(l, p->topic, p->partition);
                err = pause ? rd_kafka_pause_partitions(f->kafka.consumer, l)
                            : rd_kafka_resume_partitions(f->kafka.consumer, l);
                rd_kafka_topic_partition_list_destroy(l);
        }
        if (err) {
                char qt[KD_LOG_QUOTED_MAX(255)];
                kd_log(f->conf, KDELAY_LOG_ERROR,
                       "event=%s_failed topic=%s partition=%d err=\"%s\"",
                       pause ? "pause" : "resume",
                       kd_log_quote(p->topic, qt, sizeof(qt)), p->partition,
                       rd_kafka_err2str(err));
        }
}

static void set_state(kd_fwd_t *f, kd_part_t *p, kd_part_state_t to)
{
        f->intake.full += (to == KD_PART_FULL) - (p->state == KD_PART_FULL);
        p->state = to;
}

static void wake_cb(kd_timer_t *tm, void *arg);

/* Pauses p until wake_at (KD_PART_WAITING) or room (KD_PART_FULL). */
static void pause_part(kd_fwd_t *f, kd_part_t *p, kd_part_state_t why,
                       int64_t wake_at)
{
        if (p->state == KD_PART_FLOWING)
                pause_resume(f, p, 1);
        if (why == KD_PART_FULL && p->state != KD_PART_FULL) {
                char qt[KD_LOG_QUOTED_MAX(255)];
                kd_log(f->conf, KDELAY_LOG_NOTICE,
                       "event=partition_backpressure topic=%s partition=%d "
                       "held=%zu held_bytes=%lld out=%zu",
                       kd_log_quote(p->topic, qt, sizeof(qt)), p->partition,
                       f->held.cnt, (long long)f->held.bytes, f->held.out_cnt);
        }
        set_state(f, p, why);
        if (why != KD_PART_WAITING)
                kd_timer_disarm(&f->timers, &p->wake);
        else if (kd_timer_arm(&f->timers, &p->wake, KD_CLOCK_WALL, wake_at,
                              wake_cb, f))
                kd_fwd_oom(f, "wake_timer");
}

static void resume(kd_fwd_t *f, kd_part_t *p)
{
        if (p->state != KD_PART_FLOWING)
                pause_resume(f, p, 0);
        set_state(f, p, KD_PART_FLOWING);
        kd_timer_disarm(&f->timers, &p->wake);
}

/* Hands backlog heads to the schedule stage until one must wait. */
static void process(kd_fwd_t *f, kd_part_t *p)
{
        int64_t now = kd_fwd_now(f), wake_at = 0;
        while (p->backlog.head) {
                kd_sched_t what =
                    kd_sched_decide(f, p, p->backlog.head, now, &wake_at);
                if (what == KD_SCHED_WAIT) {
                        pause_part(f, p, KD_PART_WAITING, wake_at);
                        return;
                }
                if (what == KD_SCHED_FULL) {
                        pause_part(f, p, KD_PART_FULL, 0);
                        return;
                }
                kd_task_t *t = kd_taskq_pop(&p->backlog);
                t->where = KD_WHERE_NONE;
                kd_sched_take(f, t, what);
        }
        if (p->state != KD_PART_FLOWING)
                resume(f, p);
}

static void wake_cb(kd_timer_t *tm, void *arg)
{
        process(arg, (kd_part_t *)((char *)tm - offsetof(kd_part_t, wake)));
}

/* Room appeared: partitions paused for it try again. */
static void room_cb(kd_timer_t *tm, void *arg)
{
        (void)tm;
        kd_fwd_t *f = arg;
        for (kd_part_t *p = f->intake.parts; p && f->intake.full; p = p->next)
                if (p->state == KD_PART_FULL)
                        process(f, p);
}

void kd_intake_room(kd_fwd_t *f)
{
        if (f->intake.full &&
            kd_timer_arm_by(&f->timers, &f->intake.room, KD_CLOCK_MONO,
                            kd_mono_ms(), room_cb, f))
                kd_fwd_oom(f, "room_timer");
}

/* Copies the decoded wire fields into t, or marks it for the dead topic. */
static void decode(kd_fwd_t *f, kd_part_t *p, kd_task_t *t, int64_t now)
{
        kd_taskrec_t *r = &t->rec;
        kd_wire_task_t w;
        kd_wire_defect_t d = kd_wire_decode(r->hdrs, now, &w);
        if (d != KD_WIRE_OK) {
                t->dead_reason = kd_wire_defect_str(d);
                return;
        }
        if (kd_task_set_ids(t, w.id, w.id_len, w.target, w.target_len)) {
                t->dead_reason = "out-of-memory";
                return;
        }
        r->fire_at_ms = w.fire_at_ms;
        if (kd_conf_is_own_topic(f->conf, r->target)) {
                /* would loop through us */
                t->dead_reason = kd_wire_defect_str(KD_WIRE_BAD_TARGET);
                return;
        }
        if (kd_wire_topic_internal(w.target, w.target_len) ||
            !kd_targets_allow(&f->allowed, w.target, w.target_len)) {
                t->dead_reason = KD_DEAD_TARGET_FORBIDDEN;
                return;
        }
        /* A task due before its tier lets it be handled (its own delay
         * fitted a smaller tier) fires late by up to this tier's delay;
         * one written already past due belongs in the smallest tier. */
        int past = r->fire_at_ms < r->append_ms;
        if (past)
                kd_metric_inc(&f->metrics, KD_M_SCHEDULED_PAST);
        if (past ? p->tier_ms > f->conf->tiers.v[0].delay_ms
                 : r->fire_at_ms + f->conf->fwd_hold_horizon_ms <
                       r->append_ms + p->tier_ms) {
                char q[KD_LOG_QUOTED_MAX(KDELAY_ID_MAX)];
                char qt[KD_LOG_QUOTED_MAX(255)];
                kd_metric_inc(&f->metrics, KD_M_WRONG_TIER);
                kd_log(f->conf, KDELAY_LOG_WARNING,
                       "event=wrong_tier id=%s topic=%s partition=%d "
                       "offset=%lld fire_at=%lld append_time=%lld",
                       kd_log_quote(r->id, q, sizeof(q)),
                       kd_log_quote(p->topic, qt, sizeof(qt)), p->partition,
                       (long long)r->offset, (long long)r->fire_at_ms,
                       (long long)r->append_ms);
        }
}

/* A tier topic must stamp records with the broker's time
 * (message.timestamp.type=LogAppendTime, as `kdelayctl topics create`
 * makes them): a producer's time may lie in the future and stall the
 * partition until then. Such a record is counted, logged once per
 * partition, and taken as appended now at the latest. */
static void append_time_check(kd_fwd_t *f, kd_part_t *p,
                              const rd_kafka_message_t *m, kd_task_t *t)
{
        rd_kafka_timestamp_type_t tt;
        rd_kafka_message_timestamp(m, &tt);
        if (tt == RD_KAFKA_TIMESTAMP_LOG_APPEND_TIME)
                return;
        int64_t now = kd_fwd_now(f);
        kd_metric_inc(&f->metrics, KD_M_CREATE_TIME);
        if (t->rec.append_ms < 0 || t->rec.append_ms > now)
                t->rec.append_ms = now;
        if (p->create_time)
                return;
        p->create_time = 1;
        char qt[KD_LOG_QUOTED_MAX(255)];
        kd_log(f->conf, KDELAY_LOG_WARNING,
               "event=tier_not_log_append_time topic=%s partition=%d "
               "timestamp_type=%s action=take_append_as_now_at_latest "
               "fix=\"kdelayctl topics create (message.timestamp.type="
               "LogAppendTime)\"",
               kd_log_quote(p->topic, qt, sizeof(qt)), p->partition,
               tt == RD_KAFKA_TIMESTAMP_CREATE_TIME ? "create_time" : "none");
}

/* 1 when an earlier owner handled offset (the mode knows): done here
 * too, so that our commits keep saying so. */
static int handled_before(kd_fwd_t *f, kd_part_t *p, int64_t offset)
{
        if (!f->mode->handled || !f->mode->handled(f, p, offset))
                return 0;
        if (kd_offtrack_add(&p->track, offset) == 0)
                kd_offtrack_done(&p->track, offset);
        kd_metric_inc(&f->metrics, KD_M_SKIPPED_DONE);
        return 1;
}

void kd_intake_message(kd_fwd_t *f, rd_kafka_message_t *m)
{
        if (m->err) {
                /* The error text may come from the broker: quoted too. */
                char qt[KD_LOG_QUOTED_MAX(255)], qe[600];
                kd_log(
                    f->conf, KDELAY_LOG_WARNING,
                    "event=consume_error topic=%s partition=%d err=%s",
                    kd_log_quote(m->rkt ? rd_kafka_topic_name(m->rkt) : "-", qt,
                                 sizeof(qt)),
                    m->partition,
                    kd_log_quote(rd_kafka_message_errstr(m), qe, sizeof(qe)));
                return;
        }
        kd_part_t *p = part_find(f, rd_kafka_topic_name(m->rkt), m->partition);
        if (!p)
                return; /* not ours (any more) */
        if (p->track.next >= 0 && m->offset < p->track.next)
                return; /* seen before (re-delivery after a seek) */
        if (handled_before(f, p, m->offset))
                return;
        int probe = kd_probe_record(m); /* before the task takes m's headers */
        kd_task_t *t = kd_task_new(m);
        if (!t || kd_offtrack_add(&p->track, m->offset)) {
                /* Not tracked, so never committed: a restart re-reads it. */
                if (t)
                        kd_task_free(t);
                kd_fwd_oom(f, "task");
                return;
        }
        t->part = p;
        t->next = p->tasks;
        if (p->tasks)
                p->tasks->prev = t;
        p->tasks = t;
        if (probe) { /* a forwarder's clock probe: skip */
                f->mode->done(f, t);
                return;
        }
        kd_metric_inc(&f->metrics, KD_M_READ);
        append_time_check(f, p, m, t);
        decode(f, p, t, kd_fwd_now(f));
        kd_task_set_state(f, t, KD_TASK_QUEUED);
        kd_taskq_push(&p->backlog, t);
        t->where = KD_WHERE_BACKLOG;
        if (p->state == KD_PART_FLOWING)
                process(f, p);
}

/* 1 when the group rebalances incrementally (a cooperative assignor such
 * as cooperative-sticky): an assignment or revoke names only the
 * partitions that move, and the others keep flowing. */
static int cooperative(const kd_fwd_t *f)
{
        return !strcmp(rd_kafka_rebalance_protocol(f->kafka.consumer),
                       "COOPERATIVE");
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
                err = rd_kafka_assign(f->kafka.consumer, add ? parts : NULL);
        else if (add)
                error = rd_kafka_incremental_assign(f->kafka.consumer, parts);
        else
                error = rd_kafka_incremental_unassign(f->kafka.consumer, parts);
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
                kd_part_t *p = calloc(1, sizeof(*p));
                size_t mode_size = f->mode->part_size;
                if (p && mode_size && !(p->mode = calloc(1, mode_size))) {
                        free(p);
                        p = NULL;
                }
                if (!p) {
                        kd_fwd_oom(f, "partition");
                        return -1;
                }
                kd_strlcpy(p->topic, tp->topic, sizeof(p->topic));
                p->partition = tp->partition;
                p->tier_ms = tier_ms;
                p->state = KD_PART_FLOWING;
                kd_timer_init(&p->wake, wake_cb, f);
                kd_offtrack_init(&p->track);
                if (f->mode->opened)
                        *skipped += f->mode->opened(f, p, tp);
                p->next = f->intake.parts;
                f->intake.parts = p;
        }
        return 0;
}

void kd_intake_assign(kd_fwd_t *f, rd_kafka_topic_partition_list_t *parts)
{
        kd_claim_new_generation(f);
        if (f->mode->assigning && f->mode->assigning(f, parts)) {
                if (!cooperative(f))
                        assign(f, NULL, 0);
                return; /* the mode stops the forwarder */
        }
        f->intake.settled = 1;
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
        for (kd_task_t *t; (t = kd_taskq_pop(&p->backlog));)
                t->where = KD_WHERE_NONE; /* at once, not one by one */
        for (kd_task_t *t = p->tasks, *next; t; t = next) {
                next = t->next;
                t->part = NULL;
                t->prev = t->next = NULL;
                kd_settle_release(f, t);
        }
        p->tasks = NULL;
        if (p->state != KD_PART_FLOWING)
                resume(f, p); /* the pause flag outlives the assignment */
        kd_offtrack_clear(&p->track);
        if (f->mode->closed)
                f->mode->closed(f, p);
}

/* Drops every partition (only those revoking), their names into l when
 * given. */
static void drop(kd_fwd_t *f, rd_kafka_topic_partition_list_t *l,
                 int revoking_only)
{
        for (kd_part_t **pp = &f->intake.parts; *pp;) {
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
        if (!f->intake.parts)
                kd_timer_disarm(&f->timers, &f->intake.room);
}

static void drop_all(kd_fwd_t *f, rd_kafka_topic_partition_list_t *l)
{
        drop(f, l, 0);
}

/* Marks the partitions of parts as revoking (all when parts is NULL). */
static void mark_revoking(kd_fwd_t *f,
                          const rd_kafka_topic_partition_list_t *parts)
{
        for (kd_part_t *p = f->intake.parts; p; p = p->next)
                p->revoking =
                    !parts || rd_kafka_topic_partition_list_find(
                                  parts, p->topic, p->partition) != NULL;
}

/* Fires the tasks already claimed here (due within claim_ahead) when they
 * come due, rather than leaving them to the next owner, which would find
 * our claim and wait before taking it over. */
static void fire_claimed(kd_fwd_t *f, int64_t deadline)
{
        for (;;) {
                int64_t now = kd_fwd_now(f), next = INT64_MAX;
                for (kd_part_t *p = f->intake.parts; p; p = p->next) {
                        if (!p->revoking)
                                continue;
                        for (kd_task_t *t = p->tasks, *nx; t; t = nx) {
                                nx = t->next; /* a produce may free t */
                                if (t->state != KD_TASK_CLAIMED &&
                                    t->state != KD_TASK_PACED)
                                        continue;
                                if (t->rec.fire_at_ms <= now) {
                                        /* The rate limit yields to the
                                         * rebalance: these are due. */
                                        kd_task_detach(f, t);
                                        kd_fire_now(f, t, now);
                                } else if (t->rec.fire_at_ms < next) {
                                        next = t->rec.fire_at_ms;
                                }
                        }
                }
                if (next == INT64_MAX ||
                    kd_mono_ms() + (next - now) >= deadline)
                        return;
                /* Wait for the next fire time, serving reports meanwhile. */
                rd_kafka_poll(f->kafka.producer, (int)(next - now));
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
        for (kd_part_t *p = f->intake.parts; p; p = p->next) {
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
        if ((f->mode->assigning && f->mode->assigning(f, l)) ||
            open_parts(f, l, &skipped))
                return; /* the forwarder stops */
        for (int i = 0; i < l->cnt; i++)
                if (l->elems[i].offset < 0)
                        l->elems[i].offset = RD_KAFKA_OFFSET_BEGINNING;
        rd_kafka_error_t *error =
            rd_kafka_seek_partitions(f->kafka.consumer, l, 10000);
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

void kd_intake_revoke(kd_fwd_t *f, rd_kafka_topic_partition_list_t *parts)
{
        int coop = cooperative(f);
        f->intake.settled = 0;
        mark_revoking(f, coop ? parts : NULL);
        int64_t deadline =
            f->shutdown_deadline
                ? f->shutdown_deadline
                : kd_mono_ms() + f->conf->fwd_shutdown_timeout_ms;
        /* Claims out on the store get a short wait for their answer, so
         * that won ones fire here; a hung store must not hold the
         * rebalance (nor an open transaction) long. The rest is dropped:
         * the next owner finds the claim and takes it over. */
        int64_t store_deadline = kd_mono_ms() + f->conf->fwd_claim_ahead_ms;
        if (store_deadline > deadline)
                store_deadline = deadline;
        kd_loop_pump(f, store_deadline, kd_pump_store_idle);
        if (!f->fatal) {
                fire_claimed(f, deadline);
                hand_over(f);
        }
        /* Let in-flight produces finish so their offsets are committed
         * and the next owner does not produce them again. */
        kd_loop_pump(f, deadline, kd_pump_produces_done);
        int aborted = f->mode->revoke(f, deadline);
        kd_settle_flush(f);
        store_deadline = kd_mono_ms() + f->conf->fwd_claim_ahead_ms;
        kd_loop_pump(f, store_deadline < deadline ? store_deadline : deadline,
                     kd_pump_store_idle);
        drop(f, NULL, 1);
        kd_log(f->conf, KDELAY_LOG_INFO,
               "event=partitions_revoked count=%d inflight_abandoned=%zu "
               "kept=%d",
               parts->cnt, f->kafka.inflight, f->intake.parts != NULL);
        assign(f, parts, 0);
        if (!coop)
                return;
        /* The claims handed over stay under this generation's tokens: a
         * copy read later in a partition that stays must not take them
         * for a holder alive here. */
        kd_claim_new_generation(f);
        if (aborted && f->intake.parts)
                kd_intake_rewind(f); /* the abort undid their work too */
}

void kd_intake_rewind(kd_fwd_t *f)
{
        if (f->pumping) { /* not nested: the loop's next turn */
                f->intake.rewind_due = 1;
                return;
        }
        f->intake.rewind_due = 0;
        rd_kafka_topic_partition_list_t *l =
            rd_kafka_topic_partition_list_new(8);
        if (!l) {
                kd_fwd_oom(f, "rewind");
                return;
        }
        size_t n = 0;
        for (kd_part_t *p = f->intake.parts; p; p = p->next)
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
                kd_intake_assign(f, l);
        rd_kafka_topic_partition_list_destroy(l);
}

void kd_intake_clear(kd_fwd_t *f)
{
        drop_all(f, NULL);
}
