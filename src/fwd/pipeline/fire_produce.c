/* SPDX-License-Identifier: Apache-2.0 */
/* Fire stage, headers and produce (kd_fire_produce.h): a task's headers
 * for its fire (lent), its hop or dead letter (copied) and back from its
 * report; the produce through the mode (which may hold it back or find it
 * poisoned) and the producer room (kd_producer.h), which counts it in
 * flight. */
#include "kd_fire_produce.h"
#include "kd_pipeline_state.h"

#include "core/kd_mode_ops.h"
#include "kd_fire.h"
#include "kd_fire_journal.h"
#include "kd_fire_retry.h"
#include "kd_held.h"
#include "kd_lifecycle.h"
#include "kd_wire.h"
#include "producer/kd_producer.h"

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
void kd_fire_produce(kd_fwd_t *f, kd_task_t *t, const char *topic,
                     rd_kafka_headers_t *hdrs, kd_task_state_t as)
{
        rd_kafka_resp_err_t err;
        kd_task_set_state(f, t, as);
        if (f->mode->poisoned && f->mode->poisoned(&f->mode_ctx, t, as, &err)) {
                headers_unused(t, hdrs);
                kd_fire_poisoned(f, t, as, err);
                return;
        }
        rd_kafka_t *rk = NULL;
        int wait = f->mode->begin(&f->mode_ctx, t, as, &rk);
        if (wait) {
                headers_unused(t, hdrs);
                if (wait > 0)
                        kd_fire_wait_turn(f, t, as, wait);
                else
                        kd_fire_retry_later(f, t, as, "produce_deferred",
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
                kd_task_to_flight(t);
                t->bulk = kd_producer_is_bulk(f, rk);
                if (kd_fire_journal_with(f, t, as, 1))
                        kd_fire_journal_with_fire(f, t, rk);
                if (f->mode->produced)
                        f->mode->produced(&f->mode_ctx, t);
                return;
        }
        headers_unused(t, hdrs);
        kd_fire_produce_failed(f, t, as, err, "produce_failed");
}

/* A copy of t's headers as read, for a hop or a dead letter (the routing
 * headers its fire removed put back first); NULL when out of memory (then
 * t is retried). */
rd_kafka_headers_t *kd_fire_headers_copy(kd_task_t *t)
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
void kd_fire_headers_returned(kd_task_t *t, const rd_kafka_message_t *m)
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

/* Produces t's fire (its checks made, kd_fire_now). */
void kd_fire_to_target(kd_fwd_t *f, kd_task_t *t, int64_t now)
{
        /* The fired record: key, value, user headers, kdelay-id and
         * kdelay-fire-at; the routing headers stay behind. */
        rd_kafka_headers_t *h = headers_lend(t);
        kd_held_remove(f, t);
        t->late_ms = now - kd_fire_due_ms(t);
        kd_held_note_late(f, t->late_ms);
        if (!h) {
                kd_fire_retry_later(f, t, KD_TASK_FIRING, "produce_failed",
                                    RD_KAFKA_RESP_ERR__FAIL);
                return;
        }
        kd_fire_produce(f, t, t->rec.target, h, KD_TASK_FIRING);
}
