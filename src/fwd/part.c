/* Partitions: assignment, the per-partition backlog, pause until the head
 * is due, and offset commits. */
#include <stdlib.h>
#include <string.h>

#include "kd_fwd.h"
#include "kd_log.h"
#include "kd_tiers.h"
#include "kd_util.h"
#include "kd_wire.h"

kd_part_t *kd_part_find(kd_fwd_t *f, const char *topic, int32_t partition)
{
        for (kd_part_t *p = f->parts; p; p = p->next)
                if (p->partition == partition && !strcmp(p->topic, topic))
                        return p;
        return NULL;
}

static void pause_resume(kd_fwd_t *f, kd_part_t *p, int pause)
{
        rd_kafka_topic_partition_list_t *l =
            rd_kafka_topic_partition_list_new(1);
        rd_kafka_topic_partition_list_add(l, p->topic, p->partition);
        rd_kafka_resp_err_t err =
            pause ? rd_kafka_pause_partitions(f->consumer, l)
                  : rd_kafka_resume_partitions(f->consumer, l);
        if (err)
                kd_log(f->conf, KDELAY_LOG_ERROR,
                       "event=%s_failed topic=%s partition=%d err=\"%s\"",
                       pause ? "pause" : "resume", p->topic, p->partition,
                       rd_kafka_err2str(err));
        rd_kafka_topic_partition_list_destroy(l);
}

void kd_part_pause(kd_fwd_t *f, kd_part_t *p, kd_part_state_t why,
                   int64_t wake_ms)
{
        if (p->state == KD_PART_FLOWING)
                pause_resume(f, p, 1);
        if (why == KD_PART_FULL && p->state != KD_PART_FULL)
                kd_log(f->conf, KDELAY_LOG_NOTICE,
                       "event=partition_backpressure topic=%s partition=%d "
                       "held=%zu held_bytes=%lld",
                       p->topic, p->partition, f->held_cnt,
                       (long long)f->held_bytes);
        p->state = why;
        p->wake_ms = wake_ms;
}

static void resume(kd_fwd_t *f, kd_part_t *p)
{
        if (p->state != KD_PART_FLOWING)
                pause_resume(f, p, 0);
        p->state = KD_PART_FLOWING;
        p->wake_ms = 0;
}

/* Exactly-once: the done set above the commit point is committed as
 * offset metadata, at most Kafka's default offset.metadata.max.bytes
 * (4096). Its bitmap form needs one character per 6 offsets from the
 * commit point to the last done one, so a record this far above the
 * commit point waits (the partition pauses) until older records are
 * handled; completions in any order never make the set larger. */
#define KD_OFFSET_METADATA_MAX 4096
#define KD_DONE_SPAN_MAX       24000

static int done_set_full(const kd_fwd_t *f, const kd_part_t *p,
                         const kd_task_t *head)
{
        return f->eos && head->offset - kd_offtrack_commit_point(&p->track) >
                             KD_DONE_SPAN_MAX;
}

/* Handles the backlog head t if it is due; 0 when the partition must
 * wait (then it is paused with a reason). */
static int process_head(kd_fwd_t *f, kd_part_t *p, kd_task_t *t, int64_t now)
{
        const kdelay_conf_t *c = f->conf;
        if (t->dead_reason) {
                kd_taskq_pop(&p->backlog);
                kd_produce_dead(f, t, t->dead_reason);
                return 1;
        }
        /* Due in its tier at append time + tier delay. A task whose own
         * due time is within the hold horizon is due earlier: processing it
         * then keeps the tier's bound (never later than the tier allows)
         * and lets short delays in the smallest tier fire on time. */
        int64_t tier_due = t->append_ms + c->tiers.v[p->tier].delay_ms;
        int64_t due = t->fire_at_ms - c->fwd_hold_horizon_ms;
        if (tier_due < due)
                due = tier_due;
        if (due - c->fwd_lookahead_ms > now) {
                kd_part_pause(f, p, KD_PART_WAITING, due - c->fwd_lookahead_ms);
                return 0;
        }
        if (done_set_full(f, p, t)) {
                kd_part_pause(f, p, KD_PART_FULL, 0);
                return 0;
        }
        int64_t remaining = t->fire_at_ms - now;
        if (remaining > c->fwd_hold_horizon_ms + c->fwd_lookahead_ms) {
                kd_taskq_pop(&p->backlog);
                kd_produce_hop(f, t, kd_tiers_choose(&c->tiers, remaining));
                return 1;
        }
        if (kd_fwd_held_full(f, t)) {
                kd_part_pause(f, p, KD_PART_FULL, 0);
                return 0;
        }
        kd_taskq_pop(&p->backlog);
        kd_task_hold(f, t);
        t->state = KD_TASK_HELD;
        int64_t claim_at = t->fire_at_ms - c->fwd_claim_ahead_ms;
        if (kd_heap_push(&f->timers, &t->timer, claim_at)) {
                /* Out of memory: leave it undone; a restart re-reads it. */
                kd_log(c, KDELAY_LOG_ERROR,
                       "event=out_of_memory what=timer id=%s", t->id);
                kd_task_unhold(f, t);
                return 1;
        }
        f->stats.held++;
        return 1;
}

static void process_partition(kd_fwd_t *f, kd_part_t *p, int64_t now)
{
        while (p->backlog.head)
                if (!process_head(f, p, p->backlog.head, now))
                        return;
        if (p->state != KD_PART_FLOWING)
                resume(f, p);
}

void kd_part_process_all(kd_fwd_t *f, int64_t now)
{
        for (kd_part_t *p = f->parts; p; p = p->next) {
                if ((p->state == KD_PART_WAITING && p->wake_ms <= now) ||
                    (p->state == KD_PART_FULL && p->backlog.head &&
                     !kd_fwd_held_full(f, p->backlog.head) &&
                     !done_set_full(f, p, p->backlog.head)))
                        process_partition(f, p, now);
        }
}

int64_t kd_part_next_wake(const kd_fwd_t *f)
{
        int64_t w = INT64_MAX;
        for (const kd_part_t *p = f->parts; p; p = p->next)
                if (p->state == KD_PART_WAITING && p->wake_ms < w)
                        w = p->wake_ms;
        return w;
}

/* Copies the decoded wire fields into t, or marks it for the dead topic. */
static void decode(kd_fwd_t *f, kd_part_t *p, kd_task_t *t, int64_t now)
{
        kd_wire_task_t w;
        kd_wire_defect_t d = kd_wire_decode(t->hdrs, now, &w);
        if (d == KD_WIRE_OK) {
                t->id = strndup(w.id, w.id_len);
                t->target = strndup(w.target, w.target_len);
                t->fire_at_ms = w.fire_at_ms;
                if (!t->id || !t->target)
                        d = KD_WIRE__COUNT; /* out of memory */
                else if (kd_conf_is_own_topic(f->conf, t->target))
                        d = KD_WIRE_BAD_TARGET; /* would loop through us */
        }
        if (d != KD_WIRE_OK) {
                t->dead_reason = d == KD_WIRE__COUNT ? "out-of-memory"
                                                     : kd_wire_defect_str(d);
                return;
        }
        /* A task due before its tier lets it be handled (its own delay
         * fitted a smaller tier) fires late by up to this tier's delay. */
        if (t->fire_at_ms + f->conf->fwd_hold_horizon_ms <
            t->append_ms + f->conf->tiers.v[p->tier].delay_ms) {
                f->stats.wrong_tier++;
                kd_log(f->conf, KDELAY_LOG_WARNING,
                       "event=wrong_tier id=%s topic=%s partition=%d "
                       "offset=%lld fire_at=%lld append_time=%lld",
                       t->id, p->topic, p->partition, (long long)t->offset,
                       (long long)t->fire_at_ms, (long long)t->append_ms);
        }
}

void kd_part_on_message(kd_fwd_t *f, rd_kafka_message_t *m)
{
        if (m->err) {
                kd_log(f->conf, KDELAY_LOG_WARNING,
                       "event=consume_error topic=%s partition=%d err=\"%s\"",
                       m->rkt ? rd_kafka_topic_name(m->rkt) : "-", m->partition,
                       rd_kafka_message_errstr(m));
                return;
        }
        kd_part_t *p =
            kd_part_find(f, rd_kafka_topic_name(m->rkt), m->partition);
        if (!p)
                return; /* not ours (any more) */
        if (p->track.next >= 0 && m->offset < p->track.next)
                return; /* seen before (re-delivery after a seek) */
        while (p->skip_pos < p->skip_cnt &&
               p->skip[p->skip_pos].last < m->offset)
                p->skip_pos++;
        if (p->skip_pos < p->skip_cnt &&
            p->skip[p->skip_pos].first <= m->offset) {
                /* Handled by the previous owner in a committed transaction:
                 * done here too, so that our commits keep saying so. */
                if (kd_offtrack_add(&p->track, m->offset) == 0)
                        kd_offtrack_done(&p->track, m->offset);
                f->stats.skipped_done++;
                return;
        }
        kd_task_t *t = kd_task_from_message(m);
        if (!t || kd_offtrack_add(&p->track, m->offset)) {
                /* Not tracked, so never committed: a restart re-reads it. */
                kd_log(f->conf, KDELAY_LOG_ERROR,
                       "event=out_of_memory what=task topic=%s partition=%d "
                       "offset=%lld",
                       p->topic, p->partition, (long long)m->offset);
                if (t)
                        kd_task_free(f, t);
                *f->stop = 1;
                return;
        }
        f->stats.read++;
        t->part = p;
        t->next = p->tasks;
        if (p->tasks)
                p->tasks->prev = t;
        p->tasks = t;
        int64_t now = kd_now_ms();
        decode(f, p, t, now);
        t->state = KD_TASK_QUEUED;
        kd_taskq_push(&p->backlog, t);
        if (p->state == KD_PART_FLOWING)
                process_partition(f, p, now);
}

/* Exactly-once: the committed offsets and done sets of parts, read with
 * require-stable semantics (a read_committed consumer waits for pending
 * transactional commits), written into parts as the offsets to start at.
 * Retried until it succeeds; -1 only when stopping or fatal. */
static int fetch_committed(kd_fwd_t *f, rd_kafka_topic_partition_list_t *parts)
{
        for (int attempt = 1;; attempt++) {
                rd_kafka_resp_err_t err =
                    rd_kafka_committed(f->consumer, parts, 10000);
                if (!err)
                        return 0;
                kd_log(f->conf, KDELAY_LOG_WARNING,
                       "event=committed_fetch_failed attempt=%d err=\"%s\"",
                       attempt, rd_kafka_err2str(err));
                if (*f->stop || attempt >= 30) {
                        f->fatal = attempt >= 30;
                        *f->stop = 1;
                        return -1;
                }
        }
}

static void load_done_set(kd_fwd_t *f, kd_part_t *p,
                          const rd_kafka_topic_partition_t *tp)
{
        if (tp->offset < 0 || !tp->metadata)
                return;
        if (kd_offtrack_decode(tp->metadata, tp->metadata_size, tp->offset,
                               &p->skip, &p->skip_cnt)) {
                /* Not ours (another tool committed here): nothing to skip. */
                kd_log(f->conf, KDELAY_LOG_WARNING,
                       "event=done_set_unreadable topic=%s partition=%d "
                       "offset=%lld",
                       p->topic, p->partition, (long long)tp->offset);
        }
}

void kd_part_assign(kd_fwd_t *f, rd_kafka_topic_partition_list_t *parts)
{
        kd_claim_new_generation(f);
        if (f->eos && parts->cnt > 0 && fetch_committed(f, parts)) {
                rd_kafka_assign(f->consumer, NULL);
                return;
        }
        size_t skipped = 0;
        for (int i = 0; i < parts->cnt; i++) {
                const rd_kafka_topic_partition_t *tp = &parts->elems[i];
                int tier = -1;
                char name[256];
                for (size_t k = 0; k < f->conf->tiers.cnt; k++) {
                        kd_tiers_topic(&f->conf->tiers, k,
                                       f->conf->topic_prefix, name,
                                       sizeof(name));
                        if (!strcmp(name, tp->topic))
                                tier = (int)k;
                }
                kd_part_t *p = calloc(1, sizeof(*p));
                if (tier < 0 || !p) {
                        free(p);
                        continue;
                }
                kd_strlcpy(p->topic, tp->topic, sizeof(p->topic));
                p->partition = tp->partition;
                p->tier = (size_t)tier;
                p->state = KD_PART_FLOWING;
                p->committed = f->eos ? tp->offset : -1;
                kd_offtrack_init(&p->track);
                if (f->eos)
                        load_done_set(f, p, tp);
                for (size_t k = 0; k < p->skip_cnt; k++)
                        skipped +=
                            (size_t)(p->skip[k].last - p->skip[k].first + 1);
                p->next = f->parts;
                f->parts = p;
        }
        kd_log(f->conf, KDELAY_LOG_INFO,
               "event=partitions_assigned count=%d done_above_commit=%zu",
               parts->cnt, skipped);
        rd_kafka_assign(f->consumer, parts);
}

/* Drops everything held for p: not committed, so the next owner re-reads
 * it. Tasks with a produce in flight live on as orphans until reported. */
static void part_drop(kd_fwd_t *f, kd_part_t *p)
{
        while (kd_taskq_pop(&p->backlog))
                ;
        kd_task_t *t = p->tasks;
        while (t) {
                kd_task_t *next = t->next;
                switch (t->state) {
                case KD_TASK_FIRING:
                case KD_TASK_HOPPING:
                case KD_TASK_DEAD:
                        t->part = NULL;
                        t->prev = t->next = NULL;
                        break;
                case KD_TASK_CLAIMING:
                        kd_claim_forget(f, t);
                        /* fallthrough */
                default:
                        t->part = NULL;
                        kd_task_free(f, t);
                }
                t = next;
        }
        p->tasks = NULL;
        if (p->state != KD_PART_FLOWING)
                resume(f, p); /* the pause flag outlives the assignment */
        kd_offtrack_clear(&p->track);
        free(p->skip);
        p->skip = NULL;
        p->skip_cnt = p->skip_pos = 0;
}

/* Fires the tasks already claimed here (due within claim_ahead) when they
 * come due, rather than leaving them to the next owner, which would find
 * our claim and wait before taking it over. */
static void fire_claimed(kd_fwd_t *f, int64_t deadline)
{
        for (;;) {
                int64_t now = kd_now_ms(), next = INT64_MAX;
                for (kd_part_t *p = f->parts; p; p = p->next) {
                        for (kd_task_t *t = p->tasks, *nx; t; t = nx) {
                                nx = t->next; /* a produce may free t */
                                if (t->state != KD_TASK_CLAIMED &&
                                    t->state != KD_TASK_PACED)
                                        continue;
                                if (t->fire_at_ms <= now) {
                                        /* The rate limit yields to the
                                         * rebalance: these are due. */
                                        if (t->state == KD_TASK_PACED)
                                                kd_pace_forget(f, t);
                                        else if (kd_heap_node_queued(&t->timer))
                                                kd_heap_remove(&f->timers,
                                                               &t->timer);
                                        kd_produce_fire(f, t, now);
                                } else if (t->fire_at_ms < next) {
                                        next = t->fire_at_ms;
                                }
                        }
                }
                if (next == INT64_MAX ||
                    kd_mono_ms() + (next - now) >= deadline)
                        return;
                /* Wait for the next fire time, serving reports meanwhile. */
                rd_kafka_poll(f->producer, (int)(next - now));
        }
}

/* Hands over the tasks held from revoked partitions by hopping them: once
 * their reports are in, their offsets are done, so the next owner resumes
 * after them instead of re-reading — and re-hopping — everything from the
 * oldest held task on. */
static void hand_over(kd_fwd_t *f)
{
        int64_t now = kd_now_ms();
        for (kd_part_t *p = f->parts; p; p = p->next) {
                for (kd_task_t *t = p->tasks, *nx; t; t = nx) {
                        nx = t->next; /* a produce may free t */
                        switch (t->state) {
                        case KD_TASK_CLAIMING:
                                kd_claim_forget(f, t);
                                break;
                        case KD_TASK_HELD:
                        case KD_TASK_CLAIMED:
                                break;
                        case KD_TASK_RETRY:
                                if (t->retry_as == KD_TASK_DEAD)
                                        continue;
                                break;
                        default:
                                continue; /* in flight, or not yet read */
                        }
                        if (kd_heap_node_queued(&t->timer))
                                kd_heap_remove(&f->timers, &t->timer);
                        kd_task_unhold(f, t);
                        f->stats.handed_over++;
                        kd_produce_hop(f, t,
                                       kd_tiers_choose(&f->conf->tiers,
                                                       t->fire_at_ms - now));
                }
        }
}

void kd_part_revoke(kd_fwd_t *f, rd_kafka_topic_partition_list_t *parts)
{
        int64_t deadline =
            f->shutdown_deadline
                ? f->shutdown_deadline
                : kd_mono_ms() + f->conf->fwd_shutdown_timeout_ms;
        if (!f->fatal) {
                fire_claimed(f, deadline);
                hand_over(f);
        }
        if (f->eos) {
                /* The fires and hand-overs commit with the offsets while
                 * this generation still owns the partitions; aborted, the
                 * next owner redoes them from our last commit. Retries end
                 * at the deadline: the whole group waits for this. */
                int64_t saved = f->shutdown_deadline;
                f->shutdown_deadline = deadline;
                kd_txn_commit(f);
                f->shutdown_deadline = saved;
        } else {
                /* Let in-flight produces finish so their offsets can be
                 * committed and the next owner does not deliver them
                 * again. */
                kd_produce_drain(f, deadline);
                kd_part_commit(f, 1);
        }
        kd_claim_flush_fired(f, kd_now_ms());
        kd_part_t **pp = &f->parts;
        while (*pp) {
                kd_part_t *p = *pp;
                *pp = p->next;
                part_drop(f, p);
                free(p);
        }
        kd_log(f->conf, KDELAY_LOG_INFO,
               "event=partitions_revoked count=%d inflight_abandoned=%zu",
               parts->cnt, f->inflight);
        rd_kafka_assign(f->consumer, NULL);
}

void kd_part_commit(kd_fwd_t *f, int sync)
{
        rd_kafka_topic_partition_list_t *l =
            rd_kafka_topic_partition_list_new(8);
        for (kd_part_t *p = f->parts; p; p = p->next) {
                int64_t cp = kd_offtrack_commit_point(&p->track);
                if (cp < 0 || cp <= p->committed)
                        continue;
                rd_kafka_topic_partition_list_add(l, p->topic, p->partition)
                    ->offset = cp;
                p->committed = cp;
        }
        if (l->cnt > 0) {
                rd_kafka_resp_err_t err =
                    rd_kafka_commit(f->consumer, l, sync ? 0 : 1);
                f->stats.commits++;
                if (err)
                        kd_log(f->conf, KDELAY_LOG_WARNING,
                               "event=commit_failed partitions=%d err=\"%s\"",
                               l->cnt, rd_kafka_err2str(err));
        }
        rd_kafka_topic_partition_list_destroy(l);
}

void kd_part_rewind(kd_fwd_t *f)
{
        rd_kafka_topic_partition_list_t *l =
            rd_kafka_topic_partition_list_new(8);
        size_t n = 0;
        kd_part_t **pp = &f->parts;
        while (*pp) {
                kd_part_t *p = *pp;
                *pp = p->next;
                rd_kafka_topic_partition_list_add(l, p->topic, p->partition);
                part_drop(f, p);
                free(p);
                n++;
        }
        kd_log(f->conf, KDELAY_LOG_NOTICE, "event=partitions_rewound count=%zu",
               n);
        /* A fresh assignment restarts every fetch at the committed offset
         * and discards what was prefetched. */
        kd_part_assign(f, l);
        rd_kafka_topic_partition_list_destroy(l);
}

rd_kafka_topic_partition_list_t *kd_part_offsets(kd_fwd_t *f, int *failed)
{
        rd_kafka_topic_partition_list_t *l =
            rd_kafka_topic_partition_list_new(8);
        *failed = 0;
        for (kd_part_t *p = f->parts; p; p = p->next) {
                /* Runs the previous owner committed that we have not read
                 * yet stay in the set. */
                const kd_offrange_t *tail = p->skip + p->skip_pos;
                size_t tail_cnt = p->skip_cnt - p->skip_pos;
                int64_t cp = kd_offtrack_commit_after(&p->track, p->committed,
                                                      &tail, &tail_cnt);
                if (cp < 0)
                        continue; /* nothing read, nothing committed */
                char meta[KD_OFFSET_METADATA_MAX];
                if (kd_offtrack_encode(&p->track, cp, tail, tail_cnt, meta,
                                       sizeof(meta))) {
                        /* Bounded by KD_DONE_SPAN_MAX; committing less would
                         * let the next owner redo what is done here. */
                        kd_log(f->conf, KDELAY_LOG_ERROR,
                               "event=done_set_too_large topic=%s "
                               "partition=%d commit=%lld action=abort",
                               p->topic, p->partition, (long long)cp);
                        *failed = 1;
                        break;
                }
                rd_kafka_topic_partition_t *tp =
                    rd_kafka_topic_partition_list_add(l, p->topic,
                                                      p->partition);
                tp->offset = cp;
                tp->metadata = strdup(meta);
                tp->metadata_size = tp->metadata ? strlen(meta) : 0;
                if (!tp->metadata)
                        *failed = 1;
                p->committed = cp;
        }
        if (l->cnt == 0 || *failed) {
                rd_kafka_topic_partition_list_destroy(l);
                return NULL;
        }
        return l;
}
