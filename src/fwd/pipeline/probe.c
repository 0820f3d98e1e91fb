/* SPDX-License-Identifier: Apache-2.0 */
/* Under the fire stage, clock probes and the clock estimate (kd_probe.h):
 * owns f->clock. Calls the mode to produce inside a transaction. */
#include "kd_pipeline_state.h"
#include "kd_probe.h"

#include <string.h>

#include "core/kd_mode_ops.h"
#include "kd_log.h"
#include "kd_tiers.h"
#include "kd_util.h"
#include "producer/kd_producer.h"

/* Opens the gate for fires without a clock check, once, saying why. */
static void unchecked(kd_fwd_t *f, const char *why)
{
        kd_fwd_clock_t *c = f->clock;
        if (c->known)
                return;
        c->known = 1;
        kd_log(f->conf, KDELAY_LOG_WARNING,
               "event=clock_unchecked why=%s action=fire_by_local_clock", why);
}

int kd_probe_sample(kd_fwd_t *f, int64_t sent_ms, int64_t broker_ms)
{
        kd_fwd_clock_t *c = f->clock;
        if (kd_skew_observe(&c->skew, sent_ms, kd_fwd_wall_ms(f), broker_ms,
                            kd_fwd_mono_ms(f)))
                return -1;
        c->known = 1;
        c->last_sample_mono = kd_fwd_mono_ms(f);
        int64_t ahead = kd_skew_ahead_ms(&c->skew);
        int over =
            (ahead < 0 ? -ahead : ahead) > f->conf->fwd_max_clock_skew_ms;
        f->timers.wall_ahead_ms = ahead; /* wall timers: the broker's time */
        kd_metric_set(&f->metrics, KD_M_CLOCK_AHEAD, ahead);
        if (over == c->skewed)
                return 0;
        c->skewed = over;
        if (over) {
                kd_metric_inc(&f->metrics, KD_M_CLOCK_SKEWED);
                kd_log(f->conf, KDELAY_LOG_WARNING,
                       "event=clock_skew ahead_ms=%lld max_ms=%lld action=%s",
                       (long long)ahead,
                       (long long)f->conf->fwd_max_clock_skew_ms,
                       ahead > 0 ? "fire_late" : "fire_by_broker_time");
        } else {
                kd_log(f->conf, KDELAY_LOG_NOTICE,
                       "event=clock_skew_ok ahead_ms=%lld max_ms=%lld",
                       (long long)ahead,
                       (long long)f->conf->fwd_max_clock_skew_ms);
        }
        return 0;
}

/* Writes one probe to the smallest tier; 0 when it went out. */
static int probe_send(kd_fwd_t *f)
{
        kd_fwd_clock_t *c = f->clock;
        char topic[256];
        kd_tiers_topic(&f->conf->tiers, 0, f->conf->topic_prefix, topic,
                       sizeof(topic));
        rd_kafka_headers_t *h = rd_kafka_headers_new(2);
        if (!h)
                return -1;
        rd_kafka_header_add(h, KDELAY_HDR_VERSION, -1, "1", -1);
        rd_kafka_header_add(h, KD_PROBE_HDR, -1, f->instance, -1);
        rd_kafka_t *rk = NULL;
        if (f->mode->begin(&f->mode_ctx, NULL, KD_TASK_HOPPING,
                           &rk)) { /* not now */
                rd_kafka_headers_destroy(h);
                return -1;
        }
        c->sent_ms = kd_fwd_wall_ms(f);
        /* By name; counted in flight (kd_producer_reported at its
         * report). */
        rd_kafka_vu_t vu[] = {
            {.vtype = RD_KAFKA_VTYPE_TOPIC, .u.cstr = topic},
            {.vtype = RD_KAFKA_VTYPE_HEADERS, .u.headers = h},
            {.vtype = RD_KAFKA_VTYPE_OPAQUE, .u.ptr = &c->marker}};
        rd_kafka_resp_err_t err = kd_producer_produce(
            f, rk, vu, sizeof(vu) / sizeof(vu[0]), KD_PRODUCE_COUNTED);
        if (err) {
                rd_kafka_headers_destroy(h);
                return -1;
        }
        c->out = 1;
        kd_metric_inc(&f->metrics, KD_M_PROBES);
        return 0;
}

static void probe_cb(kd_timer_t *tm, void *arg)
{
        kd_fwd_t *f = arg;
        kd_fwd_clock_t *c = f->clock;
        int64_t now = kd_fwd_mono_ms(f);
        if (!c->known && now - c->started_mono >= KD_PROBE_GATE_MS)
                unchecked(f, "no_sample_in_30s");
        int64_t next = now + (c->known ? KD_PROBE_INTERVAL_MS : 1000);
        if (c->known && c->last_sample_mono &&
            now - c->last_sample_mono < KD_PROBE_INTERVAL_MS)
                next = c->last_sample_mono + KD_PROBE_INTERVAL_MS;
        else if (!c->out && !c->unusable)
                probe_send(f); /* failed: the next round tries again */
        if (kd_timer_arm(&f->timers, tm, KD_CLOCK_MONO, next, probe_cb, f))
                kd_fwd_oom(f, "probe_timer");
}

void kd_probe_start(kd_fwd_t *f)
{
        f->clock->started_mono = kd_fwd_mono_ms(f);
        if (kd_timer_arm(&f->timers, &f->clock->probe, KD_CLOCK_MONO,
                         kd_fwd_mono_ms(f), probe_cb, f))
                kd_fwd_oom(f, "probe_timer");
}

int kd_probe_is(const kd_fwd_t *f, const void *opaque)
{
        return opaque == &f->clock->marker;
}

void kd_probe_reported(kd_fwd_t *f, const rd_kafka_message_t *m)
{
        kd_fwd_clock_t *c = f->clock;
        c->out = 0;
        kd_producer_reported(f, 0);
        if (m->err) {
                kd_log(f->conf, KDELAY_LOG_INFO,
                       "event=probe_failed err=\"%s\" retry_in_ms=1000",
                       rd_kafka_err2str(m->err));
                return;
        }
        rd_kafka_timestamp_type_t tt;
        int64_t ts = rd_kafka_message_timestamp(m, &tt);
        if (tt != RD_KAFKA_TIMESTAMP_LOG_APPEND_TIME) {
                c->unusable = 1;
                unchecked(f, "tier_without_log_append_time");
                return;
        }
        /* A broker time a day or more off (librdkafka's mock reports
         * none) cannot be a clock's: nothing to learn. */
        if (kd_probe_sample(f, c->sent_ms, ts)) {
                c->unusable = 1; /* no more probes: none will tell */
                unchecked(f, "broker_time_unusable");
        }
}

int kd_probe_record(const rd_kafka_message_t *m)
{
        rd_kafka_headers_t *h = NULL;
        const void *v;
        size_t size;
        /* A task carrying the header by mistake is still a task. */
        return !rd_kafka_message_headers(m, &h) && h &&
               !rd_kafka_header_get_last(h, KD_PROBE_HDR, &v, &size) &&
               rd_kafka_header_get_last(h, KDELAY_HDR_ID, &v, &size);
}
