/* SPDX-License-Identifier: Apache-2.0 */
/* The forwarder object (kd_fwd.h), the composition root: makes each
 * room's state (core/kd_fwd_core.h), creates and destroys the Kafka
 * consumer, the producer room (kd_producer.h), the fate store and the
 * delivery mode, wires the store's events to the outage policy, and writes
 * the statistics line from the metric table. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "buildinfo.h"
#include "core/kd_instance.h"
#include "kd_fwd.h"
#include "kd_fwdid.h"
#include "kd_log.h"
#include "kd_top_state.h"
#include "kd_util.h"
#include "modes/kd_mode.h"
#include "ops/kd_guard.h"
#include "ops/kd_http.h"
#include "ops/kd_ops.h"
#include "ops/kd_partgauges.h"
#include "ops/kd_ready.h"
#include "ops/kd_tiercheck.h"
#include "pipeline/kd_claim.h"
#include "pipeline/kd_fire.h"
#include "pipeline/kd_held.h"
#include "pipeline/kd_journal.h"
#include "pipeline/kd_outage.h"
#include "pipeline/kd_pace.h"
#include "pipeline/kd_pipeline.h"
#include "pipeline/kd_rebalance.h"
#include "pipeline/kd_settle.h"
#include "producer/kd_producer.h"
#include "store/kd_store.h"

/* Consumer defaults the user may override. Bounded prefetch keeps memory
 * independent of the backlog, and what a pause drops (librdkafka discards a
 * paused partition's prefetched records and fetches them again on resume)
 * small; short fetch waits make resumes prompt. 16 MB (issue 44): with
 * 4 MB, about a tenth of a second of a catch-up's records, the drain
 * waited on its fetches (63-67k fires/s against 96-97k with 16 MB, the
 * CPU per fire of the forwarder, broker and MariaDB lower too); the
 * refetching that made 16 MB cost 2.2 times the records before the held
 * set's low-water resume is gone with it. */
static const char *const kd_consumer_defaults[] = {"auto.offset.reset",
                                                   "earliest",
                                                   "queued.max.messages.kbytes",
                                                   "16384",
                                                   "fetch.wait.max.ms",
                                                   "100",
                                                   "session.timeout.ms",
                                                   "10000",
                                                   "heartbeat.interval.ms",
                                                   "1000",
                                                   NULL};

static void rebalance_cb(rd_kafka_t *rk, rd_kafka_resp_err_t err,
                         rd_kafka_topic_partition_list_t *parts, void *opaque)
{
        (void)rk;
        kd_fwd_t *f = opaque;
        if (err == RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS) {
                kd_rebalance_assign(f, parts);
                kd_tiercheck_soon(f); /* a member may have joined */
        } else
                kd_rebalance_revoke(f, parts);
}

static void offset_commit_cb(rd_kafka_t *rk, rd_kafka_resp_err_t err,
                             rd_kafka_topic_partition_list_t *offsets,
                             void *opaque)
{
        (void)rk;
        kd_fwd_t *f = opaque;
        if (f->mode->committed)
                f->mode->committed(&f->mode_ctx, err, offsets);
}

static rd_kafka_t *consumer_new(kd_fwd_t *f, const char *const *defaults,
                                const char *const *forced, char *errstr,
                                size_t errstr_size)
{
        rd_kafka_conf_t *rkc = kd_conf_rk_conf(f->conf, &f->owner, defaults,
                                               forced, errstr, errstr_size);
        if (!rkc)
                return NULL;
        rd_kafka_conf_set_rebalance_cb(rkc, rebalance_cb);
        rd_kafka_conf_set_offset_commit_cb(rkc, offset_commit_cb);
        return kd_conf_rk_make(RD_KAFKA_CONSUMER, rkc, errstr, errstr_size);
}

/* The MySQL fate store from conf. A schema mismatch is fatal; MySQL being
 * down is not (claims wait and retry; hops and dead letters go on). */
static kdelay_err_t store_open(kd_fwd_t *f, char *errstr, size_t errstr_size)
{
        const kdelay_conf_t *conf = f->conf;
        if (!conf->mysql_url)
                return kd_fail(KDELAY_ERR_NOT_CONFIGURED, errstr, errstr_size,
                               "the forwarder needs MySQL: set mysql.url or "
                               "pass --mysql");
        kd_fate_store_t *fate = NULL; /* f's once attached */
        if (kd_fate_store_new(&fate, conf))
                return kd_fail(KDELAY_ERR_NO_MEMORY, errstr, errstr_size,
                               "out of memory");
        kd_store_attach(f, fate);
        char why[512];
        kdelay_err_t err = kd_fate_store_connect(fate, why, sizeof(why));
        if (err == KDELAY_ERR_SCHEMA)
                return kd_fail(err, errstr, errstr_size, "%s", why);
        if (err) {
                char q[600];
                kd_log(conf, KDELAY_LOG_WARNING,
                       "event=mysql_unavailable what=startup err=%s",
                       kd_log_quote(why, q, sizeof(q)));
        }
        kd_metric_set(&f->metrics, KD_M_MYSQL_UP, !err);
        return KDELAY_OK;
}

static kdelay_err_t clients_open(kd_fwd_t *f, const char *const *defaults,
                                 const char *const *forced, char *errstr,
                                 size_t errstr_size)
{
        const kdelay_conf_t *c = f->conf;
        if (c->fwd_static_membership < 0 || c->fwd_static_membership > 1 ||
            (c->fwd_static_membership && !c->fwd_instance))
                return kd_fail(KDELAY_ERR_CONFIG, errstr, errstr_size,
                               "forwarder.static_membership must be 0, or 1 "
                               "with forwarder.instance set (the static "
                               "member's group.instance.id)");
        /* A static member: the instance is its group.instance.id. */
        const char *forced_consumer[] = {
            "group.id",
            c->fwd_group_id,
            "enable.auto.commit",
            "false",
            "enable.auto.offset.store",
            "false",
            "enable.partition.eof",
            "false",
            "isolation.level",
            "read_committed",
            c->fwd_static_membership ? "group.instance.id" : NULL,
            c->fwd_instance,
            NULL};
        /* The defaults, and client.id = kdelay-forwarder/<release>/<the
         * instance> (kd_fwdid.h), so that the group's members (kdelayctl
         * stats, kafka-consumer-groups) say which forwarder each is and
         * `db migrate --enable lean-fate` which release it runs. */
        const char *consumer_defaults[KD_ARRAY_LEN(kd_consumer_defaults) + 2];
        char client_id[sizeof(f->instance) + 64];
        if (kd_fwdid_make(f->instance, client_id, sizeof(client_id)))
                return kd_fail(KDELAY_ERR_INVALID_ARG, errstr, errstr_size,
                               "client.id of instance too long");
        size_t d = 0;
        for (; kd_consumer_defaults[d]; d++)
                consumer_defaults[d] = kd_consumer_defaults[d];
        consumer_defaults[d++] = "client.id";
        consumer_defaults[d++] = client_id;
        consumer_defaults[d] = NULL;
        f->consumer.rk = consumer_new(f, consumer_defaults, forced_consumer,
                                      errstr, errstr_size);
        if (!f->consumer.rk)
                return KDELAY_ERR_KAFKA;
        rd_kafka_poll_set_consumer(f->consumer.rk);
        return kd_producer_open(f, defaults, forced, kd_fire_dr_cb, errstr,
                                errstr_size);
}

/* The rooms' state and f itself freed (after kd_fwd_destroy's stops, or
 * on a kd_fwd_new that failed); each tolerates a handle not made. */
static void kd_fwd_free_rooms(kd_fwd_t *f)
{
        if (!f)
                return;
        kd_ops_state_free(f);
        kd_pipeline_state_free(f);
        kd_store_state_free(f); /* and the fate store, if attached */
        kd_producer_free(f);
        free(f->top);
        free(f);
}

kdelay_err_t kd_fwd_new(kd_fwd_t **fp, kdelay_conf_t *conf,
                        kd_fate_store_t *store, const kd_clocksrc_t *clock,
                        char *errstr, size_t errstr_size)
{
        kdelay_err_t guard = kd_guard_check(conf, errstr, errstr_size);
        if (guard)
                return guard;
        kd_fwd_t *f = calloc(1, sizeof(*f));
        if (!f || !(f->top = calloc(1, sizeof(*f->top))) ||
            kd_producer_new(f) || kd_store_state_new(f) ||
            kd_pipeline_state_new(f) || kd_ops_state_new(f)) {
                kd_fwd_free_rooms(f);
                return kd_fail(KDELAY_ERR_NO_MEMORY, errstr, errstr_size,
                               "out of memory");
        }
        f->conf = conf;
        f->owner.conf = conf;
        f->stop = &f->no_stop;
        f->wake_fd = -1;
        kd_mode_ctx_init(&f->mode_ctx, f);
        kd_timers_init(&f->timers);
        if (clock && clock->manual)
                kd_clocksrc_manual(&f->timers.clock, kd_clocksrc_mono_ms(clock),
                                   kd_clocksrc_wall_ms(clock));
        f->consumer.io_fds[0] = f->consumer.io_fds[1] = -1;
        kd_timer_init(&f->top->stats_timer, NULL, f);
        kd_timer_init(&f->top->http_timer, NULL, f);
        kd_instance_name(conf, f->instance, sizeof(f->instance));
        kd_claim_init(f);
        kd_journal_init(f);
        kd_outage_init(f);
        f->mode = kd_mode_select(conf);
        const char *const *defaults, *const *forced;
        kdelay_err_t err = KDELAY_OK;
        f->allowed = &conf->fwd_targets;
        if (!f->allowed->cnt)
                kd_log(conf, KDELAY_LOG_WARNING,
                       "event=allowed_targets_unset reason=\"a task may "
                       "name any topic this forwarder may write as its "
                       "target; set forwarder.allowed_targets\"");
        if (!err)
                err = kd_pace_init(f, errstr, errstr_size);
        if (!err)
                err = f->mode->init(&f->mode_ctx, &defaults, &forced, errstr,
                                    errstr_size);
        if (!err && store)
                kd_store_attach(f, store);
        else if (!err)
                err = store_open(f, errstr, errstr_size);
        if (!err)
                err = clients_open(f, defaults, forced, errstr, errstr_size);
        if (!err)
                err = kd_store_start(f, kd_outage_store_changed,
                                     kd_pipeline_load, errstr, errstr_size);
        if (err) {
                f->conf = NULL; /* both stay the caller's on failure */
                if (store && kd_store_fate(f) == store)
                        kd_store_detach(f);
                kd_fwd_destroy(f);
                return err;
        }
        *fp = f;
        return KDELAY_OK;
}

void kd_fwd_destroy(kd_fwd_t *f)
{
        if (!f)
                return;
        /* Partitions still assigned (kd_fwd_run not called, or it failed)
         * resume while their consumer lives. */
        kd_rebalance_clear(f);
        kd_outage_stop(f);
        if (f->consumer.q)
                rd_kafka_queue_destroy(f->consumer.q);
        if (f->consumer.rk)
                rd_kafka_destroy(f->consumer.rk);
        kd_http_stop(f->top->http);
        /* Reports of produces still in flight free their (orphan) tasks. */
        kd_producer_close(f);
        /* Every task is gone: requests still out carry none. */
        kd_store_stop(f);
        kd_settle_clear(f);
        if (f->mode)
                f->mode->destroy(&f->mode_ctx);
        kd_timers_clear(&f->timers);
        for (int j = 0; j < 2; j++)
                if (f->consumer.io_fds[j] >= 0)
                        close(f->consumer.io_fds[j]);
        kd_pace_clear(f);
        kdelay_conf_t *conf =
            f->conf; /* after the fate store, which reads it */
        kd_fwd_free_rooms(f);
        kdelay_conf_destroy(conf);
}

/* Gauges read from the pipeline's state just before they are shown. */
static void refresh_gauges(kd_fwd_t *f)
{
        kd_metrics_t *m = &f->metrics;
        kd_pipeline_gauges(f);
        kd_metric_set(m, KD_M_INFLIGHT, (int64_t)kd_producer_inflight(f));
        kd_metric_set(m, KD_M_READY, !kd_ready_why(f, kd_fwd_mono_ms(f)));
}

void kd_fwd_log_stats(kd_fwd_t *f, const char *event)
{
        char line[2048];
        kd_metrics_t *m = &f->metrics;
        refresh_gauges(f);
        int64_t fired = kd_metric_get(m, KD_M_FIRED);
        int64_t statements = kd_metric_get(m, KD_M_CLAIM_STATEMENTS) +
                             kd_metric_get(m, KD_M_MARK_STATEMENTS);
        if (kd_metrics_format(m, line, sizeof(line)) < 0)
                line[0] = '\0';
        kd_log(f->conf, KDELAY_LOG_INFO,
               "event=%s%s statements_per_fire=%.3f mysql=%s", event, line,
               fired ? (double)statements / (double)fired : 0.0,
               kd_store_down(f) ? "down" : "up");
        /* The per-tier rows on a line of their own (an event name that
         * starts no other: tests and tools match "event=stats" and
         * "event=forwarder_stopped" as prefixes): the stats line is near
         * the log's line limit. */
        const kd_tiers_t *tiers = &f->conf->tiers;
        const char *names[KD_TIERS_MAX];
        for (size_t i = 0; i < tiers->cnt; i++)
                names[i] = tiers->v[i].name;
        if (kd_metrics_format_tiers(m, names, tiers->cnt, line, sizeof(line)) <
            0)
                line[0] = '\0';
        kd_log(f->conf, KDELAY_LOG_INFO, "event=tier_hops at=%s%s", event,
               line);
        kd_pace_log(f);
}

void kd_fwd_publish(kd_fwd_t *f)
{
        if (!f->top->http)
                return;
        const kd_tiers_t *tiers = &f->conf->tiers;
        const char *names[KD_TIERS_MAX];
        for (size_t i = 0; i < tiers->cnt; i++)
                names[i] = tiers->v[i].name;
        refresh_gauges(f);
        const char *why = kd_ready_why(f, kd_fwd_mono_ms(f));
        char stack[16384], *buf = stack;
        size_t cap = sizeof(stack), len = 0;
        const kd_build_labels_t build = {
            kd_build_version(), kd_build_revision(), kd_build_schema()};
        int n = kd_metrics_format_prometheus(&f->metrics, names, tiers->cnt,
                                             &build, buf, cap);
        if (n >= 0) {
                len = (size_t)n;
                kd_partgauges_format(f, buf, cap, &len);
                kd_pace_format(f, buf, cap, &len);
        }
        if (n >= 0 && len >= cap) { /* more partitions: once more */
                cap = len + 1;
                buf = malloc(cap);
                n = buf ? kd_metrics_format_prometheus(
                              &f->metrics, names, tiers->cnt, &build, buf, cap)
                        : -1;
                len = n >= 0 ? (size_t)n : 0;
                if (n >= 0) {
                        kd_partgauges_format(f, buf, cap, &len);
                        kd_pace_format(f, buf, cap, &len);
                }
                if (len >= cap)
                        n = -1; /* grew meanwhile: next time */
        }
        if (!buf || n < 0 || kd_http_publish(f->top->http, buf, len))
                kd_log(f->conf, KDELAY_LOG_WARNING,
                       "event=metrics_not_published why=out_of_memory");
        if (buf != stack)
                free(buf);
        char note[KD_HTTP_WHY_MAX],
            body[2 * KD_HTTP_WHY_MAX +
                 4]; /* cut to KD_HTTP_WHY_MAX by kd_http_ready */
        kd_outage_why(f, note, sizeof(note));
        snprintf(body, sizeof(body), "%s%s%s", why ? why : "",
                 why && note[0] ? "; " : "", note);
        kd_http_ready(f->top->http, !why, body);
}
