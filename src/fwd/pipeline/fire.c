/* SPDX-License-Identifier: Apache-2.0 */
/* Fire stage, produce half (kd_fire.h): fire, hop, dead-letter, retries, the
 * delivery report callback. Produces through the producer room
 * (kd_producer.h), which counts them in flight. Calls the mode and the
 * settle stage. */
#include "kd_fire.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/kd_mode_ops.h"
#include "core/kd_perr.h"
#include "core/kd_refusals.h"
#include "kd_claim.h"
#include "kd_held.h"
#include "kd_journal.h"
#include "kd_lifecycle.h"
#include "kd_log.h"
#include "kd_probe.h"
#include "kd_settle.h"
#include "kd_tiers.h"
#include "kd_util.h"
#include "kd_wire.h"
#include "producer/kd_producer.h"

/* How long a produce the mode holds back (a solo transaction is open)
 * waits before it asks again, at most. */
#define KD_FIRE_WAIT_MAX_MS 1000

static const char *id_of(const kd_task_t *t, char *buf, size_t size)
{
        return t->rec.id ? kd_log_quote(t->rec.id, buf, size) : "-";
}

/* A fire that cannot succeed: the task goes to the dead-letter topic. */
static void fire_failed(kd_fwd_t *f, kd_task_t *t, rd_kafka_resp_err_t err)
{
        char q[KD_LOG_QUOTED_MAX(KDELAY_ID_MAX)], qt[300];
        kd_log(f->conf, KDELAY_LOG_ERROR,
               "event=fire_failed id=%s target=%s err=\"%s\" retries=%d "
               "action=dead_letter",
               id_of(t, q, sizeof(q)),
               kd_log_quote(t->rec.target, qt, sizeof(qt)),
               rd_kafka_err2str(err), t->retries);
        t->retries = 0;
        t->fire_failed = t->state == KD_TASK_FIRING; /* claimed: DEAD */
        t->dead_err = err;
        kd_fire_dead(f, t, kd_perr_dead_reason(err));
}

static void journal_send(kd_fwd_t *f, kd_task_t *t, int intent);

static void retry_cb(kd_timer_t *tm, void *arg)
{
        kd_fwd_t *f = arg;
        kd_task_t *t = kd_task_of_timer(tm);
        if (t->retry_as == KD_TASK_FIRING)
                kd_fire_now(f, t, kd_fwd_now(f));
        else if (t->retry_as == KD_TASK_JOURNAL)
                journal_send(f, t, 0);
        else if (t->retry_as == KD_TASK_HOPPING)
                kd_fire_hop(f, t);
        else
                kd_fire_dead(f, t, t->dead_reason);
}

/* Produces t again as `as` after an exponential backoff. */
static void retry_later(kd_fwd_t *f, kd_task_t *t, kd_task_state_t as,
                        const char *event, rd_kafka_resp_err_t err)
{
        int64_t backoff = 100LL << (t->retries < 6 ? t->retries : 6);
        char q[KD_LOG_QUOTED_MAX(KDELAY_ID_MAX)];
        if (backoff > f->conf->fwd_retry_max_ms)
                backoff = f->conf->fwd_retry_max_ms;
        t->retries++;
        kd_metric_inc(&f->metrics, KD_M_PRODUCE_RETRIES);
        /* The source record too: a dead letter may have no id. */
        char qt[300];
        kd_log(f->conf, KDELAY_LOG_WARNING,
               "event=%s as=%s id=%s topic=%s partition=%d offset=%lld "
               "err=\"%s\" retry_in_ms=%lld",
               event,
               as == KD_TASK_DEAD      ? "dead_letter"
               : as == KD_TASK_HOPPING ? "hop"
               : as == KD_TASK_JOURNAL ? "journal"
                                       : "fire",
               id_of(t, q, sizeof(q)),
               kd_log_quote(t->part ? t->part->topic : "-", qt, sizeof(qt)),
               t->part ? t->part->partition : -1, (long long)t->rec.offset,
               rd_kafka_err2str(err), (long long)backoff);
        t->retry_as = as;
        kd_task_set_state(f, t, KD_TASK_RETRY);
        if (kd_task_arm(f, t, KD_CLOCK_MONO, kd_fwd_mono_ms(f) + backoff,
                        retry_cb))
                kd_fwd_oom(f, "retry_timer");
}

/* A dead letter too large for the dead-letter topic: sent again without
 * its key and value (the headers say what it was); if even that fails it
 * is logged and dropped, so that it cannot stop its partition. */
static void dead_letter_too_large(kd_fwd_t *f, kd_task_t *t)
{
        kd_taskrec_t *r = &t->rec;
        char topic[300];
        kd_log_quote(t->part ? t->part->topic : "-", topic, sizeof(topic));
        int partition = t->part ? t->part->partition : -1;
        if (r->key || r->value) {
                kd_log(f->conf, KDELAY_LOG_WARNING,
                       "event=dead_letter_too_large topic=%s partition=%d "
                       "offset=%lld bytes=%zu action=drop_key_and_value",
                       topic, partition, (long long)r->offset,
                       r->key_len + r->value_len);
                r->key = r->value = NULL; /* in the task's block */
                r->key_len = r->value_len = 0;
                kd_fire_dead(f, t, t->dead_reason);
                return;
        }
        kd_log(f->conf, KDELAY_LOG_ERROR,
               "event=dead_letter_dropped reason=%s topic=%s partition=%d "
               "offset=%lld why=too_large",
               t->dead_reason, topic, partition, (long long)r->offset);
        kd_metric_dead(&f->metrics, t->dead_reason);
        f->mode->done(&f->mode_ctx, t);
}

/* Does what the failure policy (kd_perr_then) says after a produce of t
 * as `as` failed with err. */
static void after_failure(kd_fwd_t *f, kd_task_t *t, kd_task_state_t as,
                          rd_kafka_resp_err_t err, const char *event,
                          kd_perr_then_t then)
{
        char q[KD_LOG_QUOTED_MAX(KDELAY_ID_MAX)], qt[300];
        switch (then) {
        case KD_THEN_RETRY:
                retry_later(f, t, as, event, err);
                return;
        case KD_THEN_FIRE_FAILED:
                fire_failed(f, t, err);
                return;
        case KD_THEN_DEAD_SMALLER:
                dead_letter_too_large(f, t);
                return;
        case KD_THEN_HOP_FAILED:
                kd_log(f->conf, KDELAY_LOG_ERROR,
                       "event=hop_failed id=%s err=\"%s\" action=dead_letter",
                       id_of(t, q, sizeof(q)), rd_kafka_err2str(err));
                kd_fire_dead(f, t, "tier-unavailable");
                return;
        case KD_THEN_DEAD_DROPPED:
                kd_log(f->conf, KDELAY_LOG_ERROR,
                       "event=dead_letter_dropped reason=%s topic=%s "
                       "partition=%d offset=%lld err=\"%s\"",
                       t->dead_reason,
                       kd_log_quote(t->part ? t->part->topic : "-", qt,
                                    sizeof(qt)),
                       t->part ? t->part->partition : -1,
                       (long long)t->rec.offset, rd_kafka_err2str(err));
                kd_metric_dead(&f->metrics, t->dead_reason);
                f->mode->done(&f->mode_ctx, t);
                return;
        }
}

/* A produce of t as `as` failed with err. */
static void produce_failed(kd_fwd_t *f, kd_task_t *t, kd_task_state_t as,
                           rd_kafka_resp_err_t err, const char *event)
{
        after_failure(f, t, as, err, event,
                      kd_perr_then(as, err, t->retries, 0));
}

/* Producing t as `as` failed for good often enough (the mode counted):
 * handled as the policy says for a poisoned record, without producing. */
static void poisoned(kd_fwd_t *f, kd_task_t *t, kd_task_state_t as,
                     rd_kafka_resp_err_t err)
{
        after_failure(f, t, as, err, "produce_failed",
                      kd_perr_then(as, err, t->retries, 1));
}

/* The mode holds t's produce back for wait_ms (a solo transaction is
 * open, or t waits for one): asked again then, quietly. */
static void wait_turn(kd_fwd_t *f, kd_task_t *t, kd_task_state_t as,
                      int wait_ms)
{
        if (wait_ms > KD_FIRE_WAIT_MAX_MS)
                wait_ms = KD_FIRE_WAIT_MAX_MS;
        t->retry_as = as;
        kd_task_set_state(f, t, KD_TASK_RETRY);
        if (kd_task_arm(f, t, KD_CLOCK_MONO, kd_fwd_mono_ms(f) + wait_ms,
                        retry_cb))
                kd_fwd_oom(f, "wait_timer");
}

/* 1 when a produce of t as `as` is put on record by its journal record
 * (the settle stage says, kd_settle_mark: the claim stage let t fire
 * without a claim), and the mode writes that record with the produce (with
 * 1: exactly_once, in the produce's transaction) or around it (with 0:
 * at_least_once, a record of intent before the fire and a record of its
 * delivery after). */
static int journal_with(const kd_fwd_t *f, const kd_task_t *t,
                        kd_task_state_t as, int with)
{
        return kd_settle_mark(t, as) == KD_MARK_JOURNAL &&
               !f->mode->journal_with_fire == !with;
}

/* A fire without a claim (or its dead letter), just produced through rk
 * in a transaction: its journal record goes in the same one. If it
 * cannot, the transaction must not commit the fire. */
static void journal_with_fire(kd_fwd_t *f, kd_task_t *t, rd_kafka_t *rk)
{
        rd_kafka_resp_err_t err =
            kd_journal_write(f, t, rk, kd_journal_marker(f), 0);
        if (!err)
                return;
        kd_journal_broken(f, err);
        if (f->mode->journal_failed)
                f->mode->journal_failed(&f->mode_ctx, err);
}

/* The journal refuses t's record of delivery for good (its topic gone for
 * KD_JOURNAL_GONE_CONFIRM_MS, say: kd_journal_refused_for_good): the fire
 * was delivered, and a record that can never be written would hold t, its
 * offset and the journal's mark for ever. Its fire is kept in memory and
 * applied to the fate table from there (settle.c), like every fire of a
 * journal lost while this process lives, and t waits for that apply
 * (kd_settle_fired_held): its offset is done only once the fire is on
 * record, so a crash before (MySQL still down, say) reads t again. The
 * dead letter of a fire that failed has no fire to keep: settled.
 * at_least_once only: exactly_once writes a fire's record in its
 * transaction, and a refused one aborts it, fire and offset alike. */
static void journal_refused(kd_fwd_t *f, kd_task_t *t, rd_kafka_resp_err_t err)
{
        char q[KD_LOG_QUOTED_MAX(KDELAY_ID_MAX)], qt[300];
        kd_journal_broken(f, err);
        /* Read before t may be released (a revoked task's is at once). */
        const char *id = id_of(t, q, sizeof(q));
        const char *dead =
            t->fire_failed && t->dead_reason ? t->dead_reason : "-";
        if (!t->fire_failed && kd_settle_fired_held(f, t)) {
                /* Out of memory: written again, and refused again, until
                 * it can be kept; counted and logged once, when it is. */
                retry_later(f, t, KD_TASK_JOURNAL, "journal_refused", err);
                return;
        }
        kd_metric_inc(&f->metrics, KD_M_JOURNAL_REFUSED);
        kd_log(f->conf, KDELAY_LOG_WARNING,
               "event=journal_record_refused id=%s journal=%s err=\"%s\" "
               "dead=%s action=apply_from_memory",
               id, kd_log_quote(f->journal.topic, qt, sizeof(qt)),
               rd_kafka_err2str(err), dead);
        if (t->fire_failed)
                f->mode->delivered(&f->mode_ctx, t);
}

/* A fire without a claim, at_least_once: its journal record, produced
 * around the fire. With intent, t is to fire: its record of intent goes
 * first, and the fire only once it is acknowledged (delivered), so that
 * whatever the crash point no fire is delivered with nothing in the
 * journal; a record that cannot be written breaks the journal, and t is
 * claimed instead (kd_fire_now asks again). Without, the fire (or its
 * dead letter) was delivered: its record of delivery now, and the task is
 * settled on the record's delivery, so that its offset is never committed
 * with the fire unrecorded (written again until it is). */
static void journal_send(kd_fwd_t *f, kd_task_t *t, int intent)
{
        kd_task_set_state(f, t, intent ? KD_TASK_INTENT : KD_TASK_JOURNAL);
        if (intent)
                t->sent_ms = kd_fwd_wall_ms(f);
        rd_kafka_resp_err_t err =
            kd_journal_write(f, t, kd_producer_main(f), t, intent);
        if (!err) {
                kd_producer_sent(f);
                t->where = KD_WHERE_FLIGHT;
                return;
        }
        if (!intent && kd_journal_refused_for_good(f, err)) {
                journal_refused(f, t, err);
                return;
        }
        kd_journal_broken(f, err);
        retry_later(f, t, intent ? KD_TASK_FIRING : KD_TASK_JOURNAL,
                    "journal_failed", err);
}

/* Headers hdrs of t's that did not go out: back to t if they were its
 * own (lent), destroyed if a copy. */
static void headers_unused(kd_task_t *t, rd_kafka_headers_t *hdrs)
{
        if (t->hdrs != KD_HDRS_LENT) {
                rd_kafka_headers_destroy(hdrs);
                return;
        }
        t->rec.hdrs = hdrs;
        t->hdrs = KD_HDRS_UNROUTED;
}

/* Sends t with headers hdrs (taken) to topic as `as`. */
static void produce(kd_fwd_t *f, kd_task_t *t, const char *topic,
                    rd_kafka_headers_t *hdrs, kd_task_state_t as)
{
        rd_kafka_resp_err_t err;
        kd_task_set_state(f, t, as);
        if (f->mode->poisoned && f->mode->poisoned(&f->mode_ctx, t, as, &err)) {
                headers_unused(t, hdrs);
                poisoned(f, t, as, err);
                return;
        }
        rd_kafka_t *rk = NULL;
        int wait = f->mode->begin(&f->mode_ctx, t, as, &rk);
        if (wait) {
                headers_unused(t, hdrs);
                if (wait > 0)
                        wait_turn(f, t, as, wait);
                else
                        retry_later(f, t, as, "produce_deferred",
                                    RD_KAFKA_RESP_ERR__STATE);
                return;
        }
        const kd_taskrec_t *r = &t->rec;
        rd_kafka_vu_t vu[] = {
            {.vtype = RD_KAFKA_VTYPE_TOPIC, .u.cstr = topic},
            {.vtype = RD_KAFKA_VTYPE_KEY, .u.mem = {r->key, r->key_len}},
            {.vtype = RD_KAFKA_VTYPE_VALUE, .u.mem = {r->value, r->value_len}},
            {.vtype = RD_KAFKA_VTYPE_HEADERS, .u.headers = hdrs},
            {.vtype = RD_KAFKA_VTYPE_MSGFLAGS, .u.i = RD_KAFKA_MSG_F_COPY},
            {.vtype = RD_KAFKA_VTYPE_OPAQUE, .u.ptr = t}};
        /* Through the producer's handle of the topic when there is one
         * (its metadata asked for at the claim, kd_producer_topic), else by
         * name: the producer room's. */
        t->sent_ms = kd_fwd_wall_ms(f);
        err = kd_producer_produce(f, rk, vu, sizeof(vu) / sizeof(vu[0]),
                                  KD_PRODUCE_COUNTED | KD_PRODUCE_BY_HANDLE);
        if (!err) {
                t->where = KD_WHERE_FLIGHT;
                t->bulk = kd_producer_is_bulk(f, rk);
                if (journal_with(f, t, as, 1))
                        journal_with_fire(f, t, rk);
                if (f->mode->produced)
                        f->mode->produced(&f->mode_ctx, t);
                return;
        }
        headers_unused(t, hdrs);
        produce_failed(f, t, as, err, "produce_failed");
}

/* A copy of t's headers as read, for a hop or a dead letter (the routing
 * headers its fire removed put back first); NULL when out of memory (then
 * t is retried). */
static rd_kafka_headers_t *headers_copy(kd_task_t *t)
{
        rd_kafka_headers_t *h = t->rec.hdrs;
        if (!h)
                return rd_kafka_headers_new(1);
        if (t->hdrs == KD_HDRS_UNROUTED) {
                /* Removed first: an add that failed before left one. */
                rd_kafka_header_remove(h, KDELAY_HDR_TARGET);
                rd_kafka_header_remove(h, KDELAY_HDR_VERSION);
                if (rd_kafka_header_add(h, KDELAY_HDR_TARGET, -1, t->rec.target,
                                        -1) ||
                    rd_kafka_header_add(h, KDELAY_HDR_VERSION, -1,
                                        KDELAY_WIRE_VERSION, -1))
                        return NULL;
                t->hdrs = KD_HDRS_AS_READ;
        }
        return rd_kafka_headers_copy(h);
}

/* t's headers for its fire: its own, lent to the produce rather than
 * copied (a fire is one produce per task, and the copy was a tenth of the
 * forwarder's CPU per fire), without the routing headers; back with the
 * delivery report (kd_fire_dr_cb). NULL when out of memory. */
static rd_kafka_headers_t *headers_lend(kd_task_t *t)
{
        rd_kafka_headers_t *h = t->rec.hdrs;
        if (!h)
                return rd_kafka_headers_new(1);
        t->rec.hdrs = NULL;
        if (t->hdrs == KD_HDRS_AS_READ) {
                rd_kafka_header_remove(h, KDELAY_HDR_TARGET);
                rd_kafka_header_remove(h, KDELAY_HDR_VERSION);
                rd_kafka_header_remove(h, KDELAY_HDR_NOT_BEFORE);
        }
        t->hdrs = KD_HDRS_LENT;
        return h;
}

/* The report of t's fire brings its lent headers back. */
static void headers_returned(kd_task_t *t, const rd_kafka_message_t *m)
{
        if (t->hdrs != KD_HDRS_LENT)
                return;
        t->hdrs = KD_HDRS_UNROUTED;
        /* m is librdkafka's until the callback returns, and its headers
         * are the ones the produce took: detached, they are t's again and
         * librdkafka no longer destroys them with m. */
        rd_kafka_headers_t *h = NULL;
        if (!rd_kafka_message_detach_headers((rd_kafka_message_t *)m, &h))
                t->rec.hdrs = h;
}

/* When t was due as far as the forwarder goes, what its lateness counts
 * from: its fire-at, or, for a task written already past it (scheduled
 * in the past: the producer's choice), when its tier record came due. A
 * task a rate limit sent back (not_before) counts from its fire-at: its
 * wait is lateness. */
int64_t kd_fire_due_ms(const kd_task_t *t)
{
        const kd_taskrec_t *r = &t->rec;
        if (r->fire_at_ms >= r->append_ms || !t->part || r->not_before_ms)
                return r->fire_at_ms;
        return r->append_ms + t->part->tier_ms;
}

static void fire_produce(kd_fwd_t *f, kd_task_t *t, int64_t now);

/* How often a fire waiting for the first clock sample looks again. */
#define KD_CLOCK_WAIT_MS 20

void kd_fire_now(kd_fwd_t *f, kd_task_t *t, int64_t now)
{
        if (!kd_claim_holds(f, t)) {
                /* Its lease may pass before its fire is delivered, or the
                 * claim stage no longer lets it fire without a claim:
                 * claimed again (which renews it, finds it lost, or claims
                 * it after all). */
                kd_task_detach(f, t);
                kd_claim_enqueue(f, t);
                return;
        }
        if (!f->clock.known) { /* fire-at by whose clock? Not yet known. */
                t->retry_as = KD_TASK_FIRING;
                kd_task_set_state(f, t, KD_TASK_RETRY);
                if (kd_task_arm(f, t, KD_CLOCK_MONO,
                                kd_fwd_mono_ms(f) + KD_CLOCK_WAIT_MS, retry_cb))
                        kd_fwd_oom(f, "clock_wait_timer");
                return;
        }
        /* Its target refused such a record alone a moment ago: the same
         * answer, without a refused batch (or an aborted transaction). A
         * replay written since (the operator fixed the target) is tried
         * for real instead, alone (kd_refusals.h). */
        int64_t mono = kd_fwd_mono_ms(f);
        rd_kafka_resp_err_t known = kd_refusals_check(&f->refusals, t, mono, 0);
        rd_kafka_resp_err_t was = t->known_refusal;
        t->known_refusal = RD_KAFKA_RESP_ERR_NO_ERROR;
        if (known &&
            !kd_refusals_check(&f->refusals, t, mono, kd_refusals_since(t))) {
                t->known_refusal = known; /* learned before the replay */
                known = RD_KAFKA_RESP_ERR_NO_ERROR;
        }
        if (t->known_refusal && !was) {
                char q[KD_LOG_QUOTED_MAX(KDELAY_ID_MAX)], qt[300];
                kd_log(f->conf, KDELAY_LOG_NOTICE,
                       "event=replay_tried id=%s target=%s known=%s "
                       "action=produce_alone",
                       id_of(t, q, sizeof(q)),
                       kd_log_quote(t->rec.target, qt, sizeof(qt)),
                       rd_kafka_err2name(t->known_refusal));
        }
        if (known) {
                kd_held_remove(f, t);
                t->late_ms = now - kd_fire_due_ms(t);
                /* Claimed: its row goes DEAD. */
                kd_task_set_state(f, t, KD_TASK_FIRING);
                kd_metric_inc(&f->metrics, KD_M_REFUSED_KNOWN);
                fire_failed(f, t, known);
                return;
        }
        if (journal_with(f, t, KD_TASK_FIRING, 0)) {
                journal_send(f, t, 1);
                return;
        }
        fire_produce(f, t, now);
}

/* Produces t's fire (its checks made, kd_fire_now). */
static void fire_produce(kd_fwd_t *f, kd_task_t *t, int64_t now)
{
        /* The fired record: key, value, user headers, kdelay-id and
         * kdelay-fire-at; the routing headers stay behind. */
        rd_kafka_headers_t *h = headers_lend(t);
        kd_held_remove(f, t);
        t->late_ms = now - kd_fire_due_ms(t);
        kd_held_note_late(f, t->late_ms);
        if (!h) {
                retry_later(f, t, KD_TASK_FIRING, "produce_failed",
                            RD_KAFKA_RESP_ERR__FAIL);
                return;
        }
        produce(f, t, t->rec.target, h, KD_TASK_FIRING);
}

void kd_fire_hop(kd_fwd_t *f, kd_task_t *t)
{
        char topic[256];
        size_t tier =
            kd_tiers_choose(&f->conf->tiers, kd_task_due_at(t) - kd_fwd_now(f));
        rd_kafka_headers_t *h = headers_copy(t);
        if (h) /* the header read, ignored or replaced by the turn now */
                rd_kafka_header_remove(h, KDELAY_HDR_NOT_BEFORE);
        if (h && t->rec.not_before_ms) { /* a rate limit's turn goes along */
                char nb[24];
                snprintf(nb, sizeof(nb), "%lld",
                         (long long)t->rec.not_before_ms);
                if (rd_kafka_header_add(h, KDELAY_HDR_NOT_BEFORE, -1, nb, -1)) {
                        rd_kafka_headers_destroy(h);
                        h = NULL;
                }
        }
        if (!h) {
                retry_later(f, t, KD_TASK_HOPPING, "produce_failed",
                            RD_KAFKA_RESP_ERR__FAIL);
                return;
        }
        kd_tiers_topic(&f->conf->tiers, tier, f->conf->topic_prefix, topic,
                       sizeof(topic));
        t->hop_tier = (unsigned)tier;
        produce(f, t, topic, h, KD_TASK_HOPPING);
}

void kd_fire_dead(kd_fwd_t *f, kd_task_t *t, const char *reason)
{
        char topic[256];
        rd_kafka_headers_t *h = headers_copy(t);
        t->dead_reason = reason;
        if (!h) {
                retry_later(f, t, KD_TASK_DEAD, "produce_failed",
                            RD_KAFKA_RESP_ERR__FAIL);
                return;
        }
        /* Ours is the only reason: a forged one from the producer goes. */
        rd_kafka_header_remove(h, KDELAY_HDR_DEAD_REASON);
        rd_kafka_header_remove(h, KDELAY_HDR_DEAD_ERROR);
        rd_kafka_header_add(h, KDELAY_HDR_DEAD_REASON, -1, reason, -1);
        if (t->dead_err)
                rd_kafka_header_add(h, KDELAY_HDR_DEAD_ERROR, -1,
                                    rd_kafka_err2name(t->dead_err), -1);
        kd_conf_dead_topic(f->conf, topic, sizeof(topic));
        produce(f, t, topic, h, KD_TASK_DEAD);
}

/* The delivery-report path: each report is classified into one outcome
 * (classify), and one row of the table below says what follows. */

/* t's fire was delivered: what its target was known to refuse and t
 * was, it no longer refuses (the topic changed). */
static void refusal_disproved(kd_fwd_t *f, const kd_task_t *t)
{
        int forgot = kd_refusals_delivered(&f->refusals, t, kd_fwd_mono_ms(f));
        if (!forgot)
                return;
        char q[KD_LOG_QUOTED_MAX(KDELAY_ID_MAX)], qt[300];
        kd_log(f->conf, KDELAY_LOG_NOTICE,
               "event=refusal_forgotten target=%s what=%s id=%s",
               kd_log_quote(t->rec.target, qt, sizeof(qt)),
               forgot == KD_REFUSALS_FORGOT_KEYLESS ? "keyless"
               : forgot == KD_REFUSALS_FORGOT_SIZE  ? "size"
                                                    : "keyless,size",
               id_of(t, q, sizeof(q)));
}

/* The report m of a produce that was not a fire (a hop, a dead letter, a
 * journal record) samples the broker's clock when its topic stamps the
 * append time. */
static void clock_sample(kd_fwd_t *f, const kd_task_t *t,
                         const rd_kafka_message_t *m)
{
        rd_kafka_timestamp_type_t tt;
        int64_t ts = rd_kafka_message_timestamp(m, &tt);
        if (tt == RD_KAFKA_TIMESTAMP_LOG_APPEND_TIME)
                kd_probe_sample(f, t->sent_ms, ts);
}

/* t's produce, delivered, is settled through the mode; or, when its
 * journal record is still owed (at_least_once writes it after the fire or
 * dead letter of a task without a claim), that record goes first. */
static void settle_delivered(kd_fwd_t *f, kd_task_t *t)
{
        if (journal_with(f, t, t->state, 0)) {
                journal_send(f, t, 0);
                return;
        }
        f->mode->delivered(&f->mode_ctx, t);
}

/* The outcomes of a delivery report. */
typedef enum kd_fire_outcome {
        KD_FIRE_DELIVERED,         /* delivered, as nothing below: settled */
        KD_FIRE_FIRED,             /* a fire delivered */
        KD_FIRE_HOPPED,            /* a hop delivered */
        KD_FIRE_DEAD_LETTERED,     /* a dead letter delivered */
        KD_FIRE_INTENT_DELIVERED,  /* a record of intent delivered */
        KD_FIRE_JOURNAL_DELIVERED, /* the journal record of a fire without
                                      a claim delivered */
        KD_FIRE_PROBE,             /* a clock probe's report */
        KD_FIRE_JOURNAL_WITH,      /* a journal record written with its fire */
        KD_FIRE_INTENT_FAILED,     /* a record of intent failed */
        KD_FIRE_JOURNAL_FAILED,    /* a fire's journal record failed */
        KD_FIRE_MODE_TOOK,         /* failed: the mode took it (exactly_once:
                                      the transaction aborts) */
        KD_FIRE_REVOKED,           /* failed, its partition gone */
        KD_FIRE_ALONE,             /* refused in a batch: the mode sends it
                                      again alone */
        KD_FIRE_REFUSED,           /* a fire its target refuses for good */
        KD_FIRE_FAILED,            /* failed otherwise: the failure policy */
        KD_FIRE_OUTCOMES
} kd_fire_outcome_t;

/* What a delivered produce as each state is. */
static const kd_fire_outcome_t delivered_as[KD_TASK_STATES] = {
    [KD_TASK_FIRING] = KD_FIRE_FIRED,
    [KD_TASK_HOPPING] = KD_FIRE_HOPPED,
    [KD_TASK_DEAD] = KD_FIRE_DEAD_LETTERED,
    [KD_TASK_INTENT] = KD_FIRE_INTENT_DELIVERED,
    [KD_TASK_JOURNAL] = KD_FIRE_JOURNAL_DELIVERED};

/* Takes in the report m of t's own produce: out of flight, its lent
 * headers back. */
static void reported(kd_fwd_t *f, kd_task_t *t, const rd_kafka_message_t *m)
{
        kd_producer_reported(f, 1);
        t->where = KD_WHERE_NONE; /* reported */
        headers_returned(t, m);
}

/* What report m of t's produce says (a task's own report taken in
 * first: reported). The mode has its say on a failed fire, hop or dead
 * letter: exactly_once takes every one (failed), and at_least_once sends
 * one refused in a batch again alone, or learns what a refusal of it
 * alone says of its target (refused). */
static kd_fire_outcome_t classify(kd_fwd_t *f, kd_task_t *t,
                                  const rd_kafka_message_t *m)
{
        rd_kafka_resp_err_t err = m->err;
        if (kd_probe_is(f, t))
                return KD_FIRE_PROBE;
        if (kd_journal_is(f, t))
                return KD_FIRE_JOURNAL_WITH;
        reported(f, t, m);
        if (!err)
                return delivered_as[t->state];
        if (t->state == KD_TASK_INTENT || t->state == KD_TASK_JOURNAL)
                return t->state == KD_TASK_INTENT ? KD_FIRE_INTENT_FAILED
                                                  : KD_FIRE_JOURNAL_FAILED;
        if (f->mode->failed &&
            f->mode->failed(&f->mode_ctx, t, err, kd_perr_permanent(err)))
                return KD_FIRE_MODE_TOOK;
        if (!t->part)
                return KD_FIRE_REVOKED;
        if (f->mode->refused && f->mode->refused(&f->mode_ctx, t, err))
                return KD_FIRE_ALONE;
        if (t->state == KD_TASK_FIRING && kd_perr_permanent(err))
                return KD_FIRE_REFUSED;
        return KD_FIRE_FAILED;
}

static void on_delivered(kd_fwd_t *f, kd_task_t *t, const rd_kafka_message_t *m)
{
        clock_sample(f, t, m);
        settle_delivered(f, t);
}

static void on_fired(kd_fwd_t *f, kd_task_t *t, const rd_kafka_message_t *m)
{
        (void)m; /* a fire's own append time says nothing of the clock */
        kd_metric_inc(&f->metrics,
                      t->bulk ? KD_M_FIRES_BULK : KD_M_FIRES_PRECISE);
        refusal_disproved(f, t);
        settle_delivered(f, t);
}

static void on_hopped(kd_fwd_t *f, kd_task_t *t, const rd_kafka_message_t *m)
{
        clock_sample(f, t, m);
        kd_metric_hop(&f->metrics, t->hop_tier);
        settle_delivered(f, t);
}

static void on_dead_lettered(kd_fwd_t *f, kd_task_t *t,
                             const rd_kafka_message_t *m)
{
        clock_sample(f, t, m);
        kd_metric_dead(&f->metrics, t->dead_reason);
        char q[KD_LOG_QUOTED_MAX(KDELAY_ID_MAX)], qt[300];
        kd_log(f->conf, KDELAY_LOG_WARNING,
               "event=dead_lettered reason=%s id=%s topic=%s partition=%d "
               "offset=%lld",
               t->dead_reason, id_of(t, q, sizeof(q)),
               kd_log_quote(t->part ? t->part->topic : "-", qt, sizeof(qt)),
               t->part ? t->part->partition : -1, (long long)t->rec.offset);
        settle_delivered(f, t);
}

/* The fire it announced goes now (revoked meanwhile: the next owner
 * re-reads it). */
static void on_intent_delivered(kd_fwd_t *f, kd_task_t *t,
                                const rd_kafka_message_t *m)
{
        clock_sample(f, t, m);
        f->journal.delivered++;
        f->journal.gone_since_mono = 0;
        if (!t->part) {
                kd_settle_release(f, t);
                return;
        }
        fire_produce(f, t, kd_fwd_now(f));
}

static void on_journal_delivered(kd_fwd_t *f, kd_task_t *t,
                                 const rd_kafka_message_t *m)
{
        clock_sample(f, t, m);
        f->journal.delivered++;
        f->journal.gone_since_mono = 0;
        f->mode->delivered(&f->mode_ctx, t);
}

static void on_probe(kd_fwd_t *f, kd_task_t *t, const rd_kafka_message_t *m)
{
        (void)t;
        kd_probe_reported(f, m);
}

static void on_journal_with(kd_fwd_t *f, kd_task_t *t,
                            const rd_kafka_message_t *m)
{
        (void)t;
        kd_journal_reported(f, m);
}

/* A journal record's report failed, and the journal is broken. Of a
 * record of intent: nothing was fired, t waits for its claim (kd_fire_now
 * asks the claim stage again). Of a record of delivery: the fire was
 * delivered, only its record is written again while the error may pass
 * (the task holds its offset meanwhile); refused for good (the topic
 * gone), the fire is applied from memory instead (journal_refused). */
static void on_record_failed(kd_fwd_t *f, kd_task_t *t,
                             const rd_kafka_message_t *m)
{
        if (!t->part) {
                kd_journal_broken(f, m->err);
                /* Its partition revoked: nobody writes the record of a
                 * delivered fire again, so its fire is kept in memory and
                 * applied from there (settle.c) before t goes. */
                if (t->state == KD_TASK_JOURNAL && !t->fire_failed)
                        kd_settle_fired(f, t->rec.id, t->late_ms, 1, t->seq);
                kd_settle_release(f, t);
                return;
        }
        if (t->state == KD_TASK_JOURNAL &&
            kd_journal_refused_for_good(f, m->err)) {
                journal_refused(f, t, m->err);
                return;
        }
        kd_journal_broken(f, m->err);
        retry_later(
            f, t, t->state == KD_TASK_INTENT ? KD_TASK_FIRING : KD_TASK_JOURNAL,
            "journal_failed", m->err);
}

static void on_mode_took(kd_fwd_t *f, kd_task_t *t, const rd_kafka_message_t *m)
{
        (void)f; /* t is the mode's, freed */
        (void)t;
        (void)m;
}

/* The next owner re-reads it. */
static void on_revoked(kd_fwd_t *f, kd_task_t *t, const rd_kafka_message_t *m)
{
        (void)m;
        kd_settle_release(f, t);
}

/* The broker refused the batch, maybe for a batch-mate: produced again
 * alone, it is delivered or found out. */
static void on_alone(kd_fwd_t *f, kd_task_t *t, const rd_kafka_message_t *m)
{
        retry_later(f, t, t->state, "batch_refused", m->err);
}

/* librdkafka retried already. */
static void on_refused(kd_fwd_t *f, kd_task_t *t, const rd_kafka_message_t *m)
{
        fire_failed(f, t, m->err);
}

static void on_failed(kd_fwd_t *f, kd_task_t *t, const rd_kafka_message_t *m)
{
        produce_failed(f, t, t->state, m->err, "delivery_failed");
}

/* One row per outcome: what follows it. */
static void (*const then[KD_FIRE_OUTCOMES])(kd_fwd_t *f, kd_task_t *t,
                                            const rd_kafka_message_t *m) = {
    [KD_FIRE_DELIVERED] = on_delivered,
    [KD_FIRE_FIRED] = on_fired,
    [KD_FIRE_HOPPED] = on_hopped,
    [KD_FIRE_DEAD_LETTERED] = on_dead_lettered,
    [KD_FIRE_INTENT_DELIVERED] = on_intent_delivered,
    [KD_FIRE_JOURNAL_DELIVERED] = on_journal_delivered,
    [KD_FIRE_PROBE] = on_probe,
    [KD_FIRE_JOURNAL_WITH] = on_journal_with,
    [KD_FIRE_INTENT_FAILED] = on_record_failed,
    [KD_FIRE_JOURNAL_FAILED] = on_record_failed,
    [KD_FIRE_MODE_TOOK] = on_mode_took,
    [KD_FIRE_REVOKED] = on_revoked,
    [KD_FIRE_ALONE] = on_alone,
    [KD_FIRE_REFUSED] = on_refused,
    [KD_FIRE_FAILED] = on_failed};

void kd_fire_dr_cb(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque)
{
        (void)opaque;
        kd_fwd_t *f = rd_kafka_opaque(rk);
        kd_task_t *t = m->_private;
        then[classify(f, t, m)](f, t, m);
}
