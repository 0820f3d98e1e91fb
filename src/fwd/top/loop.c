/* SPDX-License-Identifier: Apache-2.0 */
/* The forwarder's event loop: run the timers that are due, then one turn
 * (kd_loop_turn, kd_loop_pump.h: the nested pump turns it too) over the
 * sources below: wait for Kafka, the fate store, a signal or the next
 * deadline, serve the store, the consumer and the producers; repeat.
 * Every duty is a timer (kd_timer.h); this file only turns. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "buildinfo.h"
#include "core/kd_io_wakeup.h"
#include "kd_fwd.h"
#include "kd_log.h"
#include "kd_top_state.h"
#include "kd_util.h"
#include "modes/kd_mode.h"
#include "ops/kd_http.h"
#include "ops/kd_notify.h"
#include "ops/kd_tiercheck.h"
#include "pipeline/kd_fire.h"
#include "pipeline/kd_held.h"
#include "pipeline/kd_intake.h"
#include "pipeline/kd_outage.h"
#include "pipeline/kd_probe.h"
#include "pipeline/kd_rebalance.h"
#include "pipeline/kd_settle.h"
#include "producer/kd_loop_pump.h"
#include "producer/kd_producer.h"
#include "store/kd_store.h"

/* Messages handled, and timers run, per wake-up before the other gets its
 * turn. */
#define KD_LOOP_BATCH 2000

/* The longest wait without a deadline (signals also wake the loop). */
#define KD_LOOP_IDLE_MS 1000

/* How often the HTTP endpoint's metrics and readiness are refreshed. */
#define KD_HTTP_PUBLISH_MS 1000

/* Serves up to KD_LOOP_BATCH consumer messages; 1 when more may wait. */
static int serve_consumer(kd_fwd_t *f)
{
        for (int i = 0; i < KD_LOOP_BATCH; i++) {
                rd_kafka_message_t *m =
                    rd_kafka_consumer_poll(f->consumer.rk, 0);
                if (!m)
                        return 0;
                kd_intake_message(f, m);
                rd_kafka_message_destroy(m);
        }
        return 1;
}

static int consumer_fd(const kd_fwd_t *f)
{
        return f->consumer.io_fds[0];
}

static int signal_fd(const kd_fwd_t *f)
{
        return f->wake_fd;
}

/* The consumer's messages: the loop's alone (never nested: a message may
 * start a rebalance). */
static const kd_loop_src_t consumer_src = {consumer_fd, serve_consumer,
                                           KD_LOOP_SRC_PIPE};
/* A signal only wakes the turn: the loop then sees *stop. */
static const kd_loop_src_t signal_src = {signal_fd, NULL, 0};

/* The loop's sources, served in this order at each turn. */
static const kd_loop_src_t *const loop_src[] = {
    &kd_loop_src_store, &consumer_src, &kd_loop_src_producer, &signal_src};
_Static_assert(KD_ARRAY_LEN(loop_src) <= KD_LOOP_SRC_MAX, "loop sources");

static void stats_cb(kd_timer_t *tm, void *arg)
{
        kd_fwd_t *f = arg;
        kd_fwd_log_stats(f, "stats");
        if (kd_timer_arm(&f->timers, tm, KD_CLOCK_MONO,
                         kd_fwd_mono_ms(f) + f->conf->fwd_stats_interval_ms,
                         stats_cb, f))
                kd_fwd_oom(f, "stats_timer");
}

static void http_cb(kd_timer_t *tm, void *arg)
{
        kd_fwd_t *f = arg;
        kd_fwd_publish(f);
        if (kd_timer_arm(&f->timers, tm, KD_CLOCK_MONO,
                         kd_fwd_mono_ms(f) + KD_HTTP_PUBLISH_MS, http_cb, f))
                kd_fwd_oom(f, "http_timer");
}

/* The HTTP endpoint, when forwarder.http_listen is set. A failure is
 * not one a restart gets past (kd_fwd_http_failed: exit 6): the line
 * names the address and where to give this instance one of its own,
 * under the systemd unit its environment file (forwarder.md). */
static kdelay_err_t http_start(kd_fwd_t *f)
{
        const char *listen = f->conf->fwd_http_listen;
        char why[512], q[600], ql[300], fix[512], qf[640];
        if (!listen || !*listen)
                return KDELAY_OK;
        kdelay_err_t err =
            kd_http_start(&f->top->http, &f->conf->fwd_http_addr, listen,
                          &f->timers.clock, why, sizeof(why));
        if (err) {
                int taken = err == KDELAY_ERR_SYSTEM && errno == EADDRINUSE;
                f->top->http_failed = 1;
                snprintf(fix, sizeof(fix),
                         "%sgive each forwarder on a host a port of its own: "
                         "-X forwarder.http_listen=HOST:PORT, under the "
                         "systemd unit KDELAY_HTTP_LISTEN=HOST:PORT in "
                         "/etc/default/kdelay-forwarder-%s",
                         taken ? "another process listens there (a second "
                                 "forwarder?): "
                               : "",
                         f->instance);
                kd_log(f->conf, KDELAY_LOG_ERROR,
                       "event=startup_failed what=http listen=%s err=%s "
                       "fix=%s exit=%d",
                       kd_log_quote(listen, ql, sizeof(ql)),
                       kd_log_quote(why, q, sizeof(q)),
                       kd_log_quote(fix, qf, sizeof(qf)),
                       KD_FWD_EXIT_HTTP_LISTEN);
                return err;
        }
        kd_log(f->conf, KDELAY_LOG_NOTICE,
               "event=http_listening listen=%s port=%u paths=/metrics,/healthz,"
               "/readyz",
               kd_log_quote(listen, ql, sizeof(ql)),
               kd_http_port(f->top->http));
        kd_fwd_publish(f);
        if (kd_timer_arm(&f->timers, &f->top->http_timer, KD_CLOCK_MONO,
                         kd_fwd_mono_ms(f) + KD_HTTP_PUBLISH_MS, http_cb, f))
                return KDELAY_ERR_NO_MEMORY;
        return KDELAY_OK;
}

static void log_start(kd_fwd_t *f)
{
        const kdelay_conf_t *c = f->conf;
        char tiers[256], horizon[32], look[32], ahead[32];
        char pattern[KD_TIERS_PATTERN_MAX];
        char qp[KD_LOG_QUOTED_MAX(KD_TIERS_PATTERN_MAX)];
        char qi[KD_LOG_QUOTED_MAX(64)], qg[KD_LOG_QUOTED_MAX(255)], qb[600];
        kd_tiers_format(&c->tiers, tiers, sizeof(tiers));
        (void)kd_tiers_pattern(c->topic_prefix, pattern, sizeof(pattern));
        kd_log(
            c, KDELAY_LOG_NOTICE,
            "event=forwarder_start version=%s commit=%s schema=%d "
            "instance=%s group=%s "
            "brokers=%s tiers=%s hops_to=%s.tier.{%s} reads=%s "
            "dead_topic=%s.dead "
            "hold_horizon=%s lookahead=%s claim_ahead=%s max_held=%d "
            "max_held_bytes=%lld delivery=%s max_fire_rate=%d",
            kd_build_version(), kd_build_revision(), kd_build_schema(),
            kd_log_quote(f->instance, qi, sizeof(qi)),
            kd_log_quote(c->fwd_group_id, qg, sizeof(qg)),
            kd_log_quote(kd_conf_brokers(c), qb, sizeof(qb)), tiers,
            c->topic_prefix, tiers, kd_log_quote(pattern, qp, sizeof(qp)),
            c->topic_prefix,
            kdelay_duration_format(c->fwd_hold_horizon_ms, horizon,
                                   sizeof(horizon)),
            kdelay_duration_format(c->fwd_lookahead_ms, look, sizeof(look)),
            kdelay_duration_format(c->fwd_claim_ahead_ms, ahead, sizeof(ahead)),
            c->fwd_max_held, (long long)c->fwd_max_held_bytes, f->mode->name,
            c->fwd_max_fire_rate);
}

/* Every tier topic of the prefix, by pattern, not only the configured
 * ladder: records in a tier that was removed from the ladder (or that an
 * older producer still writes) are read and hop into the current one. */
static kdelay_err_t subscribe(kd_fwd_t *f)
{
        const kdelay_conf_t *c = f->conf;
        rd_kafka_topic_partition_list_t *l =
            rd_kafka_topic_partition_list_new(1);
        if (!l)
                return KDELAY_ERR_NO_MEMORY;
        char pattern[KD_TIERS_PATTERN_MAX];
        if (kd_tiers_pattern(c->topic_prefix, pattern, sizeof(pattern))) {
                rd_kafka_topic_partition_list_destroy(l);
                kd_log(c, KDELAY_LOG_ERROR,
                       "event=subscribe_failed err=\"topic_prefix too long "
                       "for a pattern\"");
                return KDELAY_ERR_CONFIG;
        }
        rd_kafka_topic_partition_list_add(l, pattern, RD_KAFKA_PARTITION_UA);
        rd_kafka_resp_err_t err = rd_kafka_subscribe(f->consumer.rk, l);
        rd_kafka_topic_partition_list_destroy(l);
        if (err) {
                kd_log(c, KDELAY_LOG_ERROR, "event=subscribe_failed err=\"%s\"",
                       rd_kafka_err2str(err));
                return KDELAY_ERR_KAFKA;
        }
        return KDELAY_OK;
}

/* Stop fetching, let in-flight work finish, commit what is complete,
 * leave the group (the revoke drops held tasks: they are not committed). */
static void shutdown_clean(kd_fwd_t *f)
{
        kd_log(f->conf, KDELAY_LOG_NOTICE,
               "event=forwarder_stopping held=%zu inflight=%zu",
               kd_held_count(f), kd_producer_inflight(f));
        kd_notify_stopping(f);
        /* One deadline for the whole shutdown, revoke included. */
        f->shutdown_deadline =
            kd_fwd_mono_ms(f) + f->conf->fwd_shutdown_timeout_ms;
        rd_kafka_resp_err_t err = rd_kafka_consumer_close(f->consumer.rk);
        if (err)
                kd_log(f->conf, KDELAY_LOG_WARNING,
                       "event=consumer_close_failed err=\"%s\"",
                       rd_kafka_err2str(err));
        if (kd_producer_renew_due(
                f)) { /* failed during the revoke: unresolved */
                kd_log(f->conf, KDELAY_LOG_ERROR,
                       "event=producer_fatal what=shutdown action=exit");
                kd_fwd_fatal(f, "producer_unresolved");
        }
        /* Orphans from the revoke report here; mark what they delivered. */
        kd_producer_drain(f, f->shutdown_deadline);
        /* Every mark queued goes out (a drain leaves tens of thousands
         * queued behind the claims: they were dropped here before). */
        if (kd_settle_drain(f, f->shutdown_deadline))
                kd_log(f->conf, KDELAY_LOG_WARNING,
                       "event=store_abandoned requests=%zu marks_unsent=%zu "
                       "why=%s",
                       kd_store_inflight(f), kd_settle_queued(f),
                       kd_store_inflight(f) ? "shutdown_timeout"
                                            : "store_failed");
        kd_fwd_log_stats(f, "forwarder_stopped");
        kd_fwd_publish(f); /* the last figures; not ready */
}

/* Wake-up pipes, the mode's start, the subscription. KDELAY_OK with
 * *stopped set when a signal came while the mode waited for the broker. */
static kdelay_err_t start(kd_fwd_t *f, int *stopped)
{
        char why[512];
        f->consumer.q = rd_kafka_queue_get_consumer(f->consumer.rk);
        if (!f->consumer.q || kd_producer_start(f) ||
            kd_fwd_io_wakeup(f->consumer.q, f->consumer.io_fds)) {
                kd_log(f->conf, KDELAY_LOG_ERROR,
                       "event=startup_failed what=io_wakeup err=\"%s\"",
                       strerror(errno));
                return KDELAY_ERR_SYSTEM;
        }
        log_start(f);
        kdelay_err_t err = http_start(f);
        if (err)
                return err;
        if (f->mode->start && f->mode->start(&f->mode_ctx, why, sizeof(why))) {
                if (*f->stop && !f->fatal) {
                        /* Nothing was consumed or produced. */
                        kd_log(f->conf, KDELAY_LOG_NOTICE,
                               "event=forwarder_stopped before=start");
                        *stopped = 1;
                        return KDELAY_OK;
                }
                char q[600];
                kd_log(f->conf, KDELAY_LOG_ERROR,
                       "event=startup_failed what=%s_start err=%s",
                       f->mode->name, kd_log_quote(why, q, sizeof(q)));
                return KDELAY_ERR_KAFKA;
        }
        kd_probe_start(f);
        if (f->conf->fwd_stats_interval_ms > 0 &&
            kd_timer_arm(&f->timers, &f->top->stats_timer, KD_CLOCK_MONO,
                         kd_fwd_mono_ms(f) + f->conf->fwd_stats_interval_ms,
                         stats_cb, f))
                return KDELAY_ERR_NO_MEMORY;
        kd_tiercheck_start(f);
        kd_outage_start(f);
        kdelay_err_t sub = subscribe(f);
        if (!sub)
                kd_notify_ready(f);
        return sub;
}

int kd_fwd_http_failed(const kd_fwd_t *f)
{
        return f->top->http_failed;
}

kdelay_err_t kd_fwd_run(kd_fwd_t *f, volatile sig_atomic_t *stop, int wake_fd)
{
        int stopped = 0;
        f->stop = stop;
        f->wake_fd = wake_fd;
        kdelay_err_t result = start(f, &stopped);
        if (result || stopped)
                return result;
        int more = 1; /* the queues may hold events from before io setup */
        while (!*stop) {
                /* The producer room replaces a producer that failed for
                 * good, or that the mode asked to (kd_producer_recover). */
                int recovered = kd_producer_recover(f);
                if (recovered < 0)
                        break;
                if (recovered) { /* its new pipe: the next turn's */
                        more = 1;
                        continue;
                }
                if (f->fatal)
                        break;
                if (kd_rebalance_rewind_due(f)) /* asked in the pump */
                        kd_rebalance_rewind(f);
                if (f->top->http)
                        kd_http_alive(f->top->http, kd_fwd_mono_ms(f));
                more |=
                    kd_timers_run(&f->timers, KD_LOOP_BATCH) == KD_LOOP_BATCH;
                int timeout =
                    more ? 0 : kd_timers_wait_ms(&f->timers, KD_LOOP_IDLE_MS);
                more =
                    kd_loop_turn(f, loop_src, KD_ARRAY_LEN(loop_src), timeout);
                if (more < 0) {
                        kd_log(f->conf, KDELAY_LOG_ERROR,
                               "event=poll_failed err=\"%s\" action=exit",
                               strerror(errno));
                        kd_fwd_fatal(f, "poll_failed");
                        break;
                }
        }
        shutdown_clean(f);
        if (f->fatal) {
                kd_log(f->conf, KDELAY_LOG_ERROR,
                       "event=forwarder_fatal why=%s action=exit",
                       f->fatal_why);
                return KDELAY_ERR_KAFKA;
        }
        return KDELAY_OK;
}
