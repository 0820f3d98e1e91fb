/* Producing: fire to the target, hop to a tier, dead-letter; delivery
 * reports decide when a task's offset is handled. */
#include <stdlib.h>
#include <string.h>

#include "kd_fwd.h"
#include "kd_log.h"
#include "kd_util.h"

#define KD_FIRE_PERMANENT_RETRIES 5

/* Errors after which producing the same record to the same topic cannot
 * succeed. */
static int permanent(rd_kafka_resp_err_t err)
{
        switch (err) {
        case RD_KAFKA_RESP_ERR__UNKNOWN_TOPIC:
        case RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART:
        case RD_KAFKA_RESP_ERR_TOPIC_EXCEPTION:
        case RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED:
        case RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE:
        case RD_KAFKA_RESP_ERR_RECORD_LIST_TOO_LARGE:
        case RD_KAFKA_RESP_ERR_INVALID_RECORD:
                return 1;
        default:
                return 0;
        }
}

/* A fire that cannot succeed: the task goes to the dead-letter topic. */
static void fire_failed(kd_fwd_t *f, kd_task_t *t, rd_kafka_resp_err_t err)
{
        kd_log(f->conf, KDELAY_LOG_ERROR,
               "event=fire_failed id=%s target=%s err=\"%s\" retries=%d "
               "action=dead_letter",
               t->id, t->target, rd_kafka_err2str(err), t->retries);
        t->retries = 0;
        kd_produce_dead(f, t,
                        err == RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE ||
                                err == RD_KAFKA_RESP_ERR_RECORD_LIST_TOO_LARGE
                            ? "too-large"
                            : "target-unavailable");
}

static int too_large(rd_kafka_resp_err_t err)
{
        return err == RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE ||
               err == RD_KAFKA_RESP_ERR_RECORD_LIST_TOO_LARGE;
}

/* Schedules producing t again as `as` after an exponential backoff. */
static void retry_later(kd_fwd_t *f, kd_task_t *t, kd_task_state_t as,
                        const char *event, rd_kafka_resp_err_t err)
{
        int64_t backoff = 100LL << (t->retries < 6 ? t->retries : 6);
        if (backoff > f->conf->fwd_retry_max_ms)
                backoff = f->conf->fwd_retry_max_ms;
        t->retries++;
        f->stats.produce_retries++;
        kd_log(f->conf, KDELAY_LOG_WARNING,
               "event=%s id=%s err=\"%s\" retry_in_ms=%lld", event,
               t->id ? t->id : "-", rd_kafka_err2str(err), (long long)backoff);
        t->retry_as = as;
        t->state = KD_TASK_RETRY;
        kd_heap_push(&f->timers, &t->timer, kd_now_ms() + backoff);
}

static void dead_letter_too_large(kd_fwd_t *f, kd_task_t *t);
static int poisoned(kd_fwd_t *f, kd_task_t *t, kd_task_state_t state);

/* A produce of t as `state` failed with err: retry it later, or, when it
 * cannot succeed, send it elsewhere. */
static void produce_failed(kd_fwd_t *f, kd_task_t *t, kd_task_state_t state,
                           rd_kafka_resp_err_t err, const char *event)
{
        if (too_large(err)) {
                if (state == KD_TASK_DEAD) {
                        dead_letter_too_large(f, t);
                        return;
                }
                fire_failed(f, t, err); /* a hop or a fire: too-large */
                return;
        }
        /* The target may be created any moment: give it a few retries
         * (about 6 s) before the task goes to the dead-letter topic. */
        if (state == KD_TASK_FIRING && permanent(err) &&
            t->retries >= KD_FIRE_PERMANENT_RETRIES) {
                fire_failed(f, t, err);
                return;
        }
        retry_later(f, t, state, event, err);
}

/* Sends t with headers hdrs (taken) to topic; on a local failure the task
 * is retried later. */
static void produce(kd_fwd_t *f, kd_task_t *t, const char *topic,
                    rd_kafka_headers_t *hdrs, kd_task_state_t state)
{
        t->state = state;
        if (poisoned(f, t, state)) {
                rd_kafka_headers_destroy(hdrs);
                return;
        }
        if (f->eos && kd_txn_begin(f)) {
                rd_kafka_headers_destroy(hdrs);
                retry_later(f, t, state, "produce_deferred",
                            RD_KAFKA_RESP_ERR__STATE);
                return;
        }
        rd_kafka_resp_err_t err = rd_kafka_producev(
            f->producer, RD_KAFKA_V_TOPIC(topic),
            RD_KAFKA_V_KEY(t->key, t->key_len),
            RD_KAFKA_V_VALUE(t->value, t->value_len), RD_KAFKA_V_HEADERS(hdrs),
            RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_OPAQUE(t),
            RD_KAFKA_V_END);
        if (!err) {
                f->inflight++;
                if (f->eos && t->part) {
                        /* Handled as far as the transaction goes: its
                         * commit carries this offset as done, and a failed
                         * delivery aborts it. */
                        kd_offtrack_done(&t->part->track, t->offset);
                        f->txn_dirty = 1;
                        if (state == KD_TASK_FIRING)
                                f->txn_has_fire = 1;
                }
                return;
        }
        rd_kafka_headers_destroy(hdrs);
        produce_failed(f, t, state, err, "produce_failed");
}

static rd_kafka_headers_t *headers_copy(const kd_task_t *t)
{
        return t->hdrs ? rd_kafka_headers_copy(t->hdrs)
                       : rd_kafka_headers_new(1);
}

/* Exactly-once: a produce whose delivery failed for good aborts its
 * transaction, and the record comes back after the rewind, to fail again.
 * These counts (per source record, the most recent KD_POISON_MAX; value =
 * failures + last error << 32) send it elsewhere after as many attempts as
 * at-least-once makes for a fire. */
#define KD_POISON_MAX 256

/* The source record and what was produced from it. */
static void poison_key(const kd_task_t *t, kd_task_state_t state, char *buf,
                       size_t size)
{
        snprintf(buf, size, "%s/%d/%lld/%d", t->part->topic, t->part->partition,
                 (long long)t->offset, (int)state);
}

static int64_t *poison_slot(kd_fwd_t *f, const kd_task_t *t,
                            kd_task_state_t state)
{
        char key[300];
        if (!t->part || f->poison.len == 0) /* the usual case: no key */
                return NULL;
        poison_key(t, state, key, sizeof(key));
        for (size_t i = 0; i < f->poison.len; i++)
                if (!strcmp(f->poison.ids[i], key))
                        return &f->poison.vals[i];
        return NULL;
}

static void poison_bump(kd_fwd_t *f, const kd_task_t *t,
                        rd_kafka_resp_err_t err)
{
        char key[300];
        int64_t *v = poison_slot(f, t, t->state);
        int64_t n = v ? (*v & 0xffffffff) + 1 : 1;
        int64_t val = n | ((int64_t)(uint32_t)err << 32);
        if (v) {
                *v = val;
                return;
        }
        if (!t->part)
                return;
        if (f->poison.len >= KD_POISON_MAX) {
                free(f->poison.ids[0]);
                memmove(f->poison.ids, f->poison.ids + 1,
                        (f->poison.len - 1) * sizeof(*f->poison.ids));
                memmove(f->poison.vals, f->poison.vals + 1,
                        (f->poison.len - 1) * sizeof(*f->poison.vals));
                f->poison.len--;
        }
        poison_key(t, t->state, key, sizeof(key));
        kd_idq_push(&f->poison, key, val);
}

/* Exactly-once: t failed for good often enough; handles it as a local
 * failure would (no produce, no abort). 1 when it did. */
static int poisoned(kd_fwd_t *f, kd_task_t *t, kd_task_state_t state)
{
        int64_t *v = f->eos ? poison_slot(f, t, state) : NULL;
        if (!v || (*v & 0xffffffff) < KD_FIRE_PERMANENT_RETRIES)
                return 0;
        rd_kafka_resp_err_t err = (rd_kafka_resp_err_t)(int32_t)(*v >> 32);
        if (state == KD_TASK_HOPPING && !too_large(err)) {
                /* A tier topic refuses it: stop aborting everything. */
                kd_log(f->conf, KDELAY_LOG_ERROR,
                       "event=hop_failed id=%s err=\"%s\" "
                       "action=dead_letter",
                       t->id ? t->id : "-", rd_kafka_err2str(err));
                kd_produce_dead(f, t, "tier-unavailable");
                return 1;
        }
        if (state == KD_TASK_DEAD && !too_large(err)) {
                kd_log(f->conf, KDELAY_LOG_ERROR,
                       "event=dead_letter_dropped reason=%s topic=%s "
                       "partition=%d offset=%lld err=\"%s\"",
                       t->dead_reason, t->part->topic, t->part->partition,
                       (long long)t->offset, rd_kafka_err2str(err));
                f->stats.dead++;
                kd_task_done(f, t);
                return 1;
        }
        t->retries = KD_FIRE_PERMANENT_RETRIES;
        produce_failed(f, t, state, err, "produce_failed");
        return 1;
}

void kd_produce_fire(kd_fwd_t *f, kd_task_t *t, int64_t now)
{
        /* The fired record: key, value, user headers, kdelay-id and
         * kdelay-fire-at; the routing headers stay behind. */
        rd_kafka_headers_t *h = headers_copy(t);
        rd_kafka_header_remove(h, KDELAY_HDR_TARGET);
        rd_kafka_header_remove(h, KDELAY_HDR_VERSION);
        kd_task_unhold(f, t);
        int64_t late = now - t->fire_at_ms;
        if (late > f->stats.late_max_ms)
                f->stats.late_max_ms = late;
        produce(f, t, t->target, h, KD_TASK_FIRING);
}

void kd_produce_hop(kd_fwd_t *f, kd_task_t *t, size_t tier)
{
        char topic[256];
        kd_tiers_topic(&f->conf->tiers, tier, f->conf->topic_prefix, topic,
                       sizeof(topic));
        produce(f, t, topic, headers_copy(t), KD_TASK_HOPPING);
}

void kd_produce_dead(kd_fwd_t *f, kd_task_t *t, const char *reason)
{
        char topic[256];
        rd_kafka_headers_t *h = headers_copy(t);
        t->dead_reason = reason;
        /* Ours is the only reason: a forged one from the producer goes. */
        rd_kafka_header_remove(h, KDELAY_HDR_DEAD_REASON);
        rd_kafka_header_add(h, KDELAY_HDR_DEAD_REASON, -1, reason, -1);
        kd_conf_dead_topic(f->conf, topic, sizeof(topic));
        produce(f, t, topic, h, KD_TASK_DEAD);
}

/* A dead letter too large for the dead-letter topic: sent again without
 * its key and value (the headers say what it was); if even that fails it
 * is logged and dropped, so that it cannot stop its partition. */
static void dead_letter_too_large(kd_fwd_t *f, kd_task_t *t)
{
        if (t->key || t->value) {
                kd_log(f->conf, KDELAY_LOG_WARNING,
                       "event=dead_letter_too_large topic=%s partition=%d "
                       "offset=%lld bytes=%zu action=drop_key_and_value",
                       t->part ? t->part->topic : "-",
                       t->part ? t->part->partition : -1, (long long)t->offset,
                       t->key_len + t->value_len);
                free(t->key);
                free(t->value);
                t->key = t->value = NULL;
                t->key_len = t->value_len = 0;
                kd_produce_dead(f, t, t->dead_reason);
                return;
        }
        kd_log(f->conf, KDELAY_LOG_ERROR,
               "event=dead_letter_dropped reason=%s topic=%s partition=%d "
               "offset=%lld why=too_large",
               t->dead_reason, t->part ? t->part->topic : "-",
               t->part ? t->part->partition : -1, (long long)t->offset);
        f->stats.dead++;
        kd_task_done(f, t);
}

void kd_produce_dr_cb(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque)
{
        (void)rk;
        (void)opaque;
        kd_task_t *t = m->_private;
        kd_fwd_t *f = rd_kafka_opaque(rk);
        f->inflight--;
        f->last_report_mono = kd_mono_ms();
        if (!m->err) {
                switch (t->state) {
                case KD_TASK_FIRING:
                        f->stats.fired++;
                        /* Exactly-once: FIRED once the transaction commits */
                        if (f->eos)
                                kd_idq_push(&f->txn_fired, t->id, 0);
                        else
                                kd_claim_mark_fired(f, t->id);
                        break;
                case KD_TASK_HOPPING:
                        f->stats.hopped++;
                        break;
                default:
                        f->stats.dead++;
                        kd_log(f->conf, KDELAY_LOG_WARNING,
                               "event=dead_lettered reason=%s topic=%s "
                               "partition=%d offset=%lld",
                               t->dead_reason, t->part ? t->part->topic : "-",
                               t->part ? t->part->partition : -1,
                               (long long)t->offset);
                }
                kd_task_done(f, t);
                return;
        }
        if (f->eos) {
                /* The transaction cannot commit: abort it, and read again
                 * from the committed offsets (loop.c). */
                if (permanent(m->err))
                        poison_bump(f, t, m->err);
                if (t->part) {
                        f->txn_failed = 1;
                        kd_log(f->conf, KDELAY_LOG_WARNING,
                               "event=delivery_failed id=%s err=\"%s\" "
                               "action=abort_transaction",
                               t->id ? t->id : "-", rd_kafka_err2str(m->err));
                }
                kd_task_free(f, t);
                return;
        }
        if (!t->part) { /* revoked meanwhile: the next owner re-reads it */
                kd_task_free(f, t);
                return;
        }
        if (t->state == KD_TASK_FIRING && permanent(m->err)) {
                fire_failed(f, t, m->err); /* librdkafka retried already */
                return;
        }
        produce_failed(f, t, t->state, m->err, "delivery_failed");
}

/* How long a drain waits without any report before giving up. */
#define KD_STALL_MS 1000

void kd_produce_drain(kd_fwd_t *f, int64_t deadline)
{
        f->last_report_mono = kd_mono_ms();
        while (f->inflight > 0) {
                int64_t now = kd_mono_ms();
                if (now >= deadline || now - f->last_report_mono >= KD_STALL_MS)
                        return;
                rd_kafka_poll(f->producer, 100);
        }
}
