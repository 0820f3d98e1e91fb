/* SPDX-License-Identifier: Apache-2.0 */
/* Intake stage (kd_intake.h): the record path. Each partition's backlog,
 * pause state and wake timer; records read into backlogs and handed to
 * the schedule stage when due. Which partitions there are is the
 * rebalance stage's (rebalance.c). Calls downstream only: schedule and
 * the mode. */
#include "kd_intake.h"
#include "kd_pipeline_state.h"

#include <stdlib.h>
#include <string.h>

#include "core/kd_dlist.h"
#include "core/kd_mode_ops.h"
#include "kd_held.h"
#include "kd_lifecycle.h"
#include "kd_log.h"
#include "kd_pace.h"
#include "kd_probe.h"
#include "kd_sched.h"
#include "kd_util.h"
#include "kd_wire.h"

static kd_part_t *part_find(kd_fwd_t *f, const char *topic, int32_t partition)
{
        for (kd_part_t *p = f->intake->parts; p; p = p->next)
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
                err = pause ? rd_kafka_pause_partitions(f->consumer.rk, l)
                            : rd_kafka_resume_partitions(f->consumer.rk, l);
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
        f->intake->full += (to == KD_PART_FULL) - (p->flow == KD_PART_FULL);
        p->flow = to;
}

static void wake_cb(kd_timer_t *tm, void *arg);
static void room_cb(kd_timer_t *tm, void *arg);

/* Pauses p until wake_at (KD_PART_WAITING) or room (KD_PART_FULL). */
static void pause_part(kd_fwd_t *f, kd_part_t *p, kd_part_state_t why,
                       int64_t wake_at)
{
        if (p->flow == KD_PART_FLOWING)
                pause_resume(f, p, 1);
        if (why == KD_PART_FULL && p->flow != KD_PART_FULL) {
                char qt[KD_LOG_QUOTED_MAX(255)];
                kd_log(f->conf, KDELAY_LOG_NOTICE,
                       "event=partition_backpressure topic=%s partition=%d "
                       "held=%zu held_bytes=%lld out=%zu",
                       kd_log_quote(p->topic, qt, sizeof(qt)), p->partition,
                       f->held->cnt, (long long)f->held->bytes,
                       f->held->out_cnt);
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
        if (p->flow != KD_PART_FLOWING)
                pause_resume(f, p, 0);
        set_state(f, p, KD_PART_FLOWING);
        kd_timer_disarm(&f->timers, &p->wake);
}

/* p's head did not fit (what: KD_SCHED_FULL or _SPAN): into the held set
 * (a drain starts; the room hook calls the paused partitions back when it
 * ends, at the latest), or within the mode's bound (the mode calls the
 * hook as its span shrinks). */
static void full(kd_fwd_t *f, kd_part_t *p, kd_sched_t what)
{
        pause_part(f, p, KD_PART_FULL, 0);
        if (what == KD_SCHED_FULL && kd_held_drain(f, kd_fwd_mono_ms(f)))
                kd_fwd_oom(f, "drain_timer");
}

/* Hands backlog heads to the schedule stage until one must wait. */
static void process(kd_fwd_t *f, kd_part_t *p)
{
        int64_t now = kd_fwd_now(f), wake_at = 0;
        /* Paused for room: resumes at the low-water mark of the mode's
         * bound (kd_sched.h). */
        int low = p->flow == KD_PART_FULL;
        while (p->backlog.head) {
                kd_sched_t what =
                    kd_sched_decide(f, p, p->backlog.head, now, low, &wake_at);
                if (what == KD_SCHED_WAIT) {
                        pause_part(f, p, KD_PART_WAITING, wake_at);
                        return;
                }
                if (what == KD_SCHED_FULL || what == KD_SCHED_SPAN) {
                        full(f, p, what);
                        return;
                }
                kd_task_t *t = kd_taskq_pop(&p->backlog);
                low = 0;
                kd_sched_take(f, t, what);
        }
        if (p->flow != KD_PART_FLOWING)
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
        for (kd_part_t *p = f->intake->parts; p && f->intake->full; p = p->next)
                if (p->flow == KD_PART_FULL)
                        process(f, p);
}

void kd_intake_room(kd_fwd_t *f)
{
        if (f->intake->full &&
            kd_timer_arm_by(&f->timers, &f->intake->room, KD_CLOCK_MONO,
                            kd_fwd_mono_ms(f), room_cb, f))
                kd_fwd_oom(f, "room_timer");
}

/* Why t's kdelay-not-before is not its turn, or NULL when it is (or when
 * it has none): a producer can write the header too, so it is taken only
 * as what a forwarder writes, a turn of the rule limiting the task's
 * target (docs/wire-format.md). */
static const char *not_before_flaw(kd_task_t *t, int64_t now)
{
        int64_t nb;
        switch (kd_wire_not_before(t->rec.hdrs, now, &nb)) {
        case KD_WIRE_NB_NONE:
                return NULL;
        case KD_WIRE_NB_BAD:
                return "not_epoch_ms";
        case KD_WIRE_NB_ABSURD:
                return "beyond_10_years";
        case KD_WIRE_NB_OK:
                break;
        }
        if (kd_pace_rule(t) < 0)
                return "target_not_limited";
        t->rec.not_before_ms = nb;
        return NULL;
}

/* Sets t's turn from its kdelay-not-before, or ignores the header (the
 * task is due at its fire-at, through its rule if one limits it): counted
 * always, logged once per partition and assignment. */
static void not_before_read(kd_fwd_t *f, kd_part_t *p, kd_task_t *t,
                            int64_t now)
{
        const char *why = not_before_flaw(t, now);
        if (!why)
                return;
        kd_metric_inc(&f->metrics, KD_M_NOT_BEFORE_IGNORED);
        if (p->not_before_logged)
                return;
        p->not_before_logged = 1;
        const void *v = NULL;
        size_t len = 0;
        rd_kafka_header_get_last(t->rec.hdrs, KDELAY_HDR_NOT_BEFORE, &v, &len);
        char q[KD_LOG_QUOTED_MAX(KDELAY_ID_MAX)];
        char qt[KD_LOG_QUOTED_MAX(255)], qv[KD_LOG_QUOTED_MAX(32)];
        char qg[KD_LOG_QUOTED_MAX(255)];
        kd_log_quote_mem(v, len > 32 ? 32 : len, qv, sizeof(qv));
        kd_log(f->conf, KDELAY_LOG_WARNING,
               "event=not_before_ignored id=%s target=%s topic=%s "
               "partition=%d offset=%lld not_before=%s why=%s "
               "action=due_at_fire_at more=\"counted as not_before_ignored, "
               "not logged again for this partition\"",
               kd_log_quote(t->rec.id, q, sizeof(q)),
               kd_log_quote(t->rec.target, qg, sizeof(qg)),
               kd_log_quote(p->topic, qt, sizeof(qt)), p->partition,
               (long long)t->rec.offset, qv, why);
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
            !kd_targets_allow(f->allowed, w.target, w.target_len)) {
                t->dead_reason = KD_DEAD_TARGET_FORBIDDEN;
                return;
        }
        kd_pace_rule_find(f, t);
        not_before_read(f, p, t, now);
        /* A task due before its tier lets it be handled (its own delay
         * fitted a smaller tier) fires late by up to this tier's delay;
         * one written already past due belongs in the smallest tier. */
        int64_t due = kd_task_due_at(t); /* a rate limit's turn counts */
        int past = due < r->append_ms;
        if (past && !r->not_before_ms)
                kd_metric_inc(&f->metrics, KD_M_SCHEDULED_PAST);
        if (past ? p->tier_ms > f->conf->tiers.v[0].delay_ms
                 : due + f->conf->fwd_hold_horizon_ms <
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
        if (!f->mode->handled || !f->mode->handled(&f->mode_ctx, p, offset))
                return 0;
        if (kd_offtrack_add(&p->track, offset) == 0)
                kd_offtrack_done(&p->track, offset);
        kd_metric_inc(&f->metrics, KD_M_SKIPPED_DONE);
        return 1;
}

/* The consumer failed for good: with static membership, another member
 * joined with this group.instance.id (the broker fences the older one:
 * FENCED_INSTANCE_ID). Said, and the forwarder stops (exit 1). */
static void consumer_fatal(kd_fwd_t *f)
{
        char why[512], q[600], qi[KD_LOG_QUOTED_MAX(64)];
        rd_kafka_resp_err_t err =
            rd_kafka_fatal_error(f->consumer.rk, why, sizeof(why));
        kd_log_quote(f->instance, qi, sizeof(qi));
        if (err == RD_KAFKA_RESP_ERR_FENCED_INSTANCE_ID)
                kd_log(f->conf, KDELAY_LOG_ERROR,
                       "event=instance_fenced instance=%s err=%s "
                       "why=\"another forwarder joined the group with the "
                       "same forwarder.instance (group.instance.id); give "
                       "each forwarder its own\" action=exit",
                       qi, kd_log_quote(why, q, sizeof(q)));
        else
                kd_log(f->conf, KDELAY_LOG_ERROR,
                       "event=consumer_fatal instance=%s err=%s code=%s "
                       "action=exit",
                       qi, kd_log_quote(why, q, sizeof(q)),
                       rd_kafka_err2name(err));
        kd_fwd_fatal(f, err == RD_KAFKA_RESP_ERR_FENCED_INSTANCE_ID
                            ? "instance_fenced"
                            : "consumer_fatal");
}

void kd_intake_message(kd_fwd_t *f, rd_kafka_message_t *m)
{
        if (m->err == RD_KAFKA_RESP_ERR__FATAL) {
                consumer_fatal(f);
                return;
        }
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
        KD_DLIST_PUSH(p->tasks, t);
        if (probe) { /* a forwarder's clock probe: skip */
                f->mode->done(&f->mode_ctx, t);
                return;
        }
        kd_metric_inc(&f->metrics, KD_M_READ);
        append_time_check(f, p, m, t);
        decode(f, p, t, kd_fwd_now(f));
        kd_task_set_state(f, t, KD_TASK_QUEUED);
        kd_taskq_push(&p->backlog, t);
        if (p->flow == KD_PART_FLOWING)
                process(f, p);
}

kd_part_t *kd_intake_part_open(kd_fwd_t *f, const char *topic,
                               int32_t partition, int64_t tier_ms)
{
        kd_part_t *p = calloc(1, sizeof(*p));
        if (p)
                kd_taskq_init(&p->backlog, KD_WHERE_BACKLOG);
        size_t mode_size = f->mode->part_size;
        if (p && mode_size && !(p->mode = calloc(1, mode_size))) {
                free(p);
                p = NULL;
        }
        if (!p) {
                kd_fwd_oom(f, "partition");
                return NULL;
        }
        kd_strlcpy(p->topic, topic, sizeof(p->topic));
        p->topic_len = strlen(p->topic);
        p->partition = partition;
        p->tier_ms = tier_ms;
        p->flow = KD_PART_FLOWING;
        kd_timer_init(&p->wake, wake_cb, f);
        kd_offtrack_init(&p->track);
        p->next = f->intake->parts;
        f->intake->parts = p;
        return p;
}

void kd_intake_part_flowing(kd_fwd_t *f, kd_part_t *p)
{
        if (p->flow != KD_PART_FLOWING)
                resume(f, p);
}

const kd_part_t *kd_intake_parts(const kd_fwd_t *f)
{
        return f->intake->parts;
}

int kd_intake_settled(const kd_fwd_t *f)
{
        return f->intake->settled;
}

int64_t kd_intake_revoked_at(const kd_fwd_t *f)
{
        return f->intake->revoked_at;
}
