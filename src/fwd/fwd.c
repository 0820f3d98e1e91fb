/* SPDX-License-Identifier: Apache-2.0 */
/* The forwarder object (kd_fwd.h): creates and destroys the Kafka
 * clients, the fate store and the delivery mode, wires the pipeline's
 * hooks, and writes the statistics line from the metric table. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "buildinfo.h"
#include "kd_claim.h"
#include "kd_fire.h"
#include "kd_fwd.h"
#include "kd_guard.h"
#include "kd_http.h"
#include "kd_intake.h"
#include "kd_journal.h"
#include "kd_log.h"
#include "kd_loop_pump.h"
#include "kd_mode.h"
#include "kd_outage.h"
#include "kd_pace.h"
#include "kd_partgauges.h"
#include "kd_ready.h"
#include "kd_rebalance.h"
#include "kd_settle.h"
#include "kd_store.h"
#include "kd_tiercheck.h"
#include "kd_tophandles.h"
#include "kd_util.h"

/* Consumer defaults the user may override. Bounded prefetch keeps memory
 * independent of the backlog, and what a pause drops (librdkafka discards a
 * paused partition's prefetched records and fetches them again on resume)
 * small: 4 MB is a tenth of a second of a catch-up's records and cut what
 * its drain fetched from 2.2 to 1.1 times its records (16 MB before);
 * short fetch waits make resumes prompt. */
static const char *const kd_consumer_defaults[] = {"auto.offset.reset",
                                                   "earliest",
                                                   "queued.max.messages.kbytes",
                                                   "4096",
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
                f->mode->committed(f, err, offsets);
}

static rd_kafka_t *client_new(kd_fwd_t *f, rd_kafka_type_t type,
                              const char *const *defaults,
                              const char *const *forced, char *errstr,
                              size_t errstr_size)
{
        char why[512];
        rd_kafka_conf_t *rkc = kd_conf_rk_conf(f->conf, &f->owner, defaults,
                                               forced, errstr, errstr_size);
        if (!rkc)
                return NULL;
        if (type == RD_KAFKA_CONSUMER) {
                rd_kafka_conf_set_rebalance_cb(rkc, rebalance_cb);
                rd_kafka_conf_set_offset_commit_cb(rkc, offset_commit_cb);
        } else
                rd_kafka_conf_set_dr_msg_cb(rkc, kd_fire_dr_cb);
        rd_kafka_t *rk = rd_kafka_new(type, rkc, why, sizeof(why));
        if (!rk) {
                rd_kafka_conf_destroy(rkc);
                kd_fail(KDELAY_ERR_KAFKA, errstr, errstr_size,
                        "cannot create Kafka %s: %s",
                        type == RD_KAFKA_CONSUMER ? "consumer" : "producer",
                        why);
        }
        return rk;
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
        if (kd_fate_store_new(&f->store.fate, conf))
                return kd_fail(KDELAY_ERR_NO_MEMORY, errstr, errstr_size,
                               "out of memory");
        char why[512];
        kdelay_err_t err =
            kd_fate_store_connect(f->store.fate, why, sizeof(why));
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

/* Topic handles for every topic the producer writes but the targets: a
 * handle asks for the topic's metadata at once. A handle not made costs
 * only that wait later: logged, not fatal. */
static void warm_topics(kd_fwd_t *f)
{
        const kdelay_conf_t *c = f->conf;
        kd_fwd_kafka_t *k = &f->kafka;
        char name[256], q[KD_LOG_QUOTED_MAX(255)];
        for (size_t i = 0; i <= c->tiers.cnt; i++) {
                if (i < c->tiers.cnt)
                        kd_tiers_topic(&c->tiers, i, c->topic_prefix, name,
                                       sizeof(name));
                else
                        kd_conf_dead_topic(c, name, sizeof(name));
                rd_kafka_topic_t *t =
                    rd_kafka_topic_new(k->producer, name, NULL);
                if (t)
                        k->warm[k->warm_cnt++] = t;
                else
                        kd_log(c, KDELAY_LOG_WARNING,
                               "event=topic_handle_failed topic=%s err=\"%s\"",
                               kd_log_quote(name, q, sizeof(q)),
                               rd_kafka_err2str(rd_kafka_last_error()));
        }
}

/* Handles on the producer of the topics in md (those its predecessor
 * wrote) that warm_topics did not make: their metadata is fetched now,
 * not at their first fire. */
static void warm_known(kd_fwd_t *f, const rd_kafka_metadata_t *md)
{
        kd_fwd_kafka_t *k = &f->kafka;
        for (int i = 0, made = 0;
             md && i < md->topic_cnt && made < KD_WARM_TARGETS_MAX; i++) {
                const char *name = md->topics[i].topic;
                int have = 0;
                for (size_t j = 0; j < k->warm_cnt && !have; j++)
                        have = !strcmp(rd_kafka_topic_name(k->warm[j]), name);
                /* else its first fire waits for the metadata */
                if (!have && kd_tophandles_get(f, name))
                        made++;
        }
}

/* Drops the producer's warm topic handles. */
static void warm_release(kd_fwd_kafka_t *k)
{
        for (size_t i = 0; i < k->warm_cnt; i++)
                rd_kafka_topic_destroy(k->warm[i]);
        k->warm_cnt = 0;
        kd_tophandles_release(k);
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
        /* The defaults, and client.id = the instance, so that the group's
         * members (kdelayctl stats, kafka-consumer-groups) say which
         * forwarder each is. */
        const char *consumer_defaults[KD_ARRAY_LEN(kd_consumer_defaults) + 2];
        size_t d = 0;
        for (; kd_consumer_defaults[d]; d++)
                consumer_defaults[d] = kd_consumer_defaults[d];
        consumer_defaults[d++] = "client.id";
        consumer_defaults[d++] = f->claim.instance;
        consumer_defaults[d] = NULL;
        f->kafka.consumer = client_new(f, RD_KAFKA_CONSUMER, consumer_defaults,
                                       forced_consumer, errstr, errstr_size);
        if (!f->kafka.consumer)
                return KDELAY_ERR_KAFKA;
        rd_kafka_poll_set_consumer(f->kafka.consumer);
        f->kafka.producer_defaults = defaults;
        f->kafka.producer_forced = forced;
        f->kafka.producer = client_new(f, RD_KAFKA_PRODUCER, defaults, forced,
                                       errstr, errstr_size);
        if (!f->kafka.producer)
                return KDELAY_ERR_KAFKA;
        warm_topics(f);
        return KDELAY_OK;
}

int kd_fwd_io_wakeup(rd_kafka_queue_t *q, int fds[2])
{
        if (pipe2(fds, O_NONBLOCK | O_CLOEXEC))
                return -1;
        rd_kafka_queue_io_event_enable(q, fds[1], "1", 1);
        return 0;
}

/* 0 for the fatal errors a new producer cannot get past: another process
 * owns the transactional.id now (a new producer would fence it back), or
 * the credentials do not allow it. */
static int renewable(rd_kafka_resp_err_t err)
{
        switch (err) {
        case RD_KAFKA_RESP_ERR__FENCED:
        case RD_KAFKA_RESP_ERR_PRODUCER_FENCED:
        case RD_KAFKA_RESP_ERR_INVALID_PRODUCER_EPOCH:
        case RD_KAFKA_RESP_ERR_TRANSACTIONAL_ID_AUTHORIZATION_FAILED:
        case RD_KAFKA_RESP_ERR_CLUSTER_AUTHORIZATION_FAILED:
                return 0;
        default:
                return 1;
        }
}

/* Of the fatal errors renewable() refuses, those of missing ACLs. */
static int denied(rd_kafka_resp_err_t err)
{
        return err == RD_KAFKA_RESP_ERR_TRANSACTIONAL_ID_AUTHORIZATION_FAILED ||
               err == RD_KAFKA_RESP_ERR_CLUSTER_AUTHORIZATION_FAILED;
}

/* The solo producer's own properties, forced over the main one's: a
 * batch holds one record, sent at once. */
static const char *const solo_forced[] = {"batch.num.messages", "1",
                                          "linger.ms", "0", NULL};

static rd_kafka_t *solo_producer(kd_fwd_t *f)
{
        kd_fwd_kafka_t *k = &f->kafka;
        if (k->solo)
                return k->solo;
        const char *forced[64];
        size_t n = 0;
        for (size_t i = 0; k->producer_forced[i] && n + 6 < 64; i++)
                forced[n++] = k->producer_forced[i];
        for (size_t i = 0; solo_forced[i]; i++)
                forced[n++] = solo_forced[i];
        forced[n] = NULL;
        char errstr[512], q[600];
        k->solo = client_new(f, RD_KAFKA_PRODUCER, k->producer_defaults, forced,
                             errstr, sizeof(errstr));
        if (k->solo)
                k->solo_q = rd_kafka_queue_get_main(k->solo);
        if (!k->solo || !k->solo_q) {
                kd_log(
                    f->conf, KDELAY_LOG_WARNING,
                    "event=solo_producer_failed err=%s action=retry",
                    kd_log_quote(k->solo ? "no queue" : errstr, q, sizeof(q)));
                if (k->solo)
                        rd_kafka_destroy(k->solo);
                k->solo = NULL;
                return NULL;
        }
        rd_kafka_queue_io_event_enable(k->solo_q, k->io_fds[1][1], "1", 1);
        kd_log(f->conf, KDELAY_LOG_NOTICE,
               "event=solo_producer_started why=batch_refused");
        return k->solo;
}

void kd_fwd_solo_close(kd_fwd_t *f)
{
        kd_fwd_kafka_t *k = &f->kafka;
        if (!k->solo)
                return;
        /* Purged produces report now; the fire stage retries them. */
        rd_kafka_purge(k->solo,
                       RD_KAFKA_PURGE_F_QUEUE | RD_KAFKA_PURGE_F_INFLIGHT);
        rd_kafka_flush(k->solo, 1000);
        rd_kafka_queue_io_event_enable(k->solo_q, -1, NULL, 0);
        rd_kafka_queue_destroy(k->solo_q);
        k->solo_q = NULL;
        rd_kafka_destroy(k->solo);
        k->solo = NULL;
}

/* Ends the failed producer: its produces purged and their reports served
 * (the fire stage retries them, or the mode drops them with their
 * transaction), its topic handles, queue and wake-up pipe gone. */
static void producer_close(kd_fwd_t *f)
{
        kd_fwd_kafka_t *k = &f->kafka;
        kd_fwd_solo_close(f); /* it shares the wake-up pipe */
        rd_kafka_purge(k->producer,
                       RD_KAFKA_PURGE_F_QUEUE | RD_KAFKA_PURGE_F_INFLIGHT);
        kd_loop_pump(f, kd_fwd_mono_ms(f) + 1000, kd_pump_produces_done);
        warm_release(k);
        if (k->producer_q) {
                rd_kafka_queue_io_event_enable(k->producer_q, -1, NULL, 0);
                rd_kafka_queue_destroy(k->producer_q);
                k->producer_q = NULL;
        }
        for (int j = 0; j < 2; j++) {
                if (k->io_fds[1][j] >= 0)
                        close(k->io_fds[1][j]);
                k->io_fds[1][j] = -1;
        }
        rd_kafka_destroy(k->producer);
        k->producer = NULL;
}

/* The renewal failed: the loop stops, the process exits non-zero. */
static int renew_failed(kd_fwd_t *f, const char *what, const char *why)
{
        char q[600];
        kd_log(f->conf, KDELAY_LOG_ERROR,
               "event=producer_renew_failed what=%s err=%s action=exit", what,
               kd_log_quote(why, q, sizeof(q)));
        kd_fwd_fatal(f, "producer_renew_failed");
        return -1;
}

/* A new producer of the same properties in place of the old (started
 * at now), and the mode's recovery. */
static int producer_replace(kd_fwd_t *f, int64_t now)
{
        kd_fwd_kafka_t *k = &f->kafka;
        char errstr[512];
        /* The topics it knows (a local answer, or one request). */
        const rd_kafka_metadata_t *md = NULL;
        if (rd_kafka_metadata(k->producer, 0, NULL, &md, 1000))
                md = NULL;
        producer_close(f);
        k->producer = client_new(f, RD_KAFKA_PRODUCER, k->producer_defaults,
                                 k->producer_forced, errstr, sizeof(errstr));
        if (k->producer) {
                warm_topics(f);
                warm_known(f, md);
        }
        if (md)
                rd_kafka_metadata_destroy(md);
        if (!k->producer)
                return renew_failed(f, "producer", errstr);
        k->producer_q = rd_kafka_queue_get_main(k->producer);
        if (!k->producer_q || kd_fwd_io_wakeup(k->producer_q, k->io_fds[1]))
                return renew_failed(f, "io_wakeup", strerror(errno));
        if (f->mode->renewed && f->mode->renewed(f, errstr, sizeof(errstr)))
                return renew_failed(f, f->mode->name, errstr);
        kd_log(f->conf, KDELAY_LOG_NOTICE, "event=producer_renewed ms=%lld",
               (long long)(kd_fwd_mono_ms(f) - now));
        return 0;
}

int kd_fwd_producer_renew(kd_fwd_t *f, rd_kafka_resp_err_t err, const char *why)
{
        kd_fwd_kafka_t *k = &f->kafka;
        char q[600];
        int64_t now = kd_fwd_mono_ms(f);
        k->renew = 0;
        int for_record = k->renew_for_record;
        k->renew_for_record = 0;
        int soon = !for_record && k->renewed_mono &&
                   now - k->renewed_mono < KD_RENEW_MIN_INTERVAL_MS;
        kd_log(f->conf, KDELAY_LOG_ERROR,
               "event=producer_fatal err=%s code=%s for_record=%d action=%s",
               kd_log_quote(why, q, sizeof(q)), rd_kafka_err2name(err),
               for_record,
               renewable(err) ? (soon ? "exit why=renewed_recently" : "renew")
               : denied(err)  ? "exit why=denied"
                              : "exit why=fenced");
        if (!renewable(err) || soon) {
                kd_fwd_fatal(f, "producer_fatal");
                return -1;
        }
        if (!for_record) /* a record's renewals prove no loop */
                k->renewed_mono = now;
        kd_metric_inc(&f->metrics, KD_M_PRODUCER_RENEWALS);
        return producer_replace(f, now);
}

int kd_fwd_producer_reset(kd_fwd_t *f, const char *why)
{
        f->kafka.reset = 0;
        kd_log(f->conf, KDELAY_LOG_NOTICE,
               "event=producer_reset why=%s action=new_producer", why);
        return producer_replace(f, kd_fwd_mono_ms(f));
}

kdelay_err_t kd_fwd_new(kd_fwd_t **fp, kdelay_conf_t *conf,
                        kd_fate_store_t *store, const kd_clocksrc_t *clock,
                        char *errstr, size_t errstr_size)
{
        kdelay_err_t guard = kd_guard_check(conf, errstr, errstr_size);
        if (guard)
                return guard;
        kd_fwd_t *f = calloc(1, sizeof(*f));
        if (!f)
                return kd_fail(KDELAY_ERR_NO_MEMORY, errstr, errstr_size,
                               "out of memory");
        f->conf = conf;
        f->owner.conf = conf;
        f->stop = &f->no_stop;
        f->wake_fd = -1;
        kd_timers_init(&f->timers);
        if (clock && clock->manual)
                kd_clocksrc_manual(&f->timers.clock, kd_clocksrc_mono_ms(clock),
                                   kd_clocksrc_wall_ms(clock));
        for (int i = 0; i < 2; i++)
                f->kafka.io_fds[i][0] = f->kafka.io_fds[i][1] = -1;
        f->hooks.room = kd_intake_room;
        f->hooks.rewind = kd_rebalance_rewind;
        f->hooks.reclaim = kd_claim_enqueue;
        f->hooks.claim = kd_claim_enqueue;
        f->hooks.solo_producer = solo_producer;
        f->hooks.store_changed = kd_outage_store_changed;
        f->hooks.claims_resume = kd_claim_resume;
        kd_timer_init(&f->intake.room, NULL, f);
        kd_timer_init(&f->held.drain_end, NULL, f);
        kd_timer_init(&f->claim.flush, NULL, f);
        kd_timer_init(&f->claim.renew, NULL, f);
        kd_timer_init(&f->settle.flush, NULL, f);
        kd_timer_init(&f->stats_timer, NULL, f);
        kd_timer_init(&f->tiercheck_timer, NULL, f);
        kd_timer_init(&f->http_timer, NULL, f);
        kd_timer_init(&f->watchdog, NULL, f);
        kd_skew_init(&f->clock.skew);
        kd_timer_init(&f->clock.probe, NULL, f);
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
                err = f->mode->init(f, &defaults, &forced, errstr, errstr_size);
        if (!err && store)
                f->store.fate = store;
        else if (!err)
                err = store_open(f, errstr, errstr_size);
        if (!err)
                err = clients_open(f, defaults, forced, errstr, errstr_size);
        if (!err)
                err = kd_store_start(f, errstr, errstr_size);
        if (err) {
                f->conf = NULL; /* both stay the caller's on failure */
                if (f->store.fate == store)
                        f->store.fate = NULL;
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
        kd_fwd_kafka_t *k = &f->kafka;
        /* Partitions still assigned (kd_fwd_run not called, or it failed)
         * resume while their consumer lives. */
        kd_rebalance_clear(f);
        kd_outage_stop(f);
        if (k->consumer_q)
                rd_kafka_queue_destroy(k->consumer_q);
        if (k->producer_q)
                rd_kafka_queue_destroy(k->producer_q);
        if (k->consumer)
                rd_kafka_destroy(k->consumer);
        /* Reports of produces still in flight free their (orphan) tasks. */
        warm_release(k);
        kd_http_stop(f->http);
        kd_fwd_solo_close(f);
        if (k->producer) {
                rd_kafka_flush(k->producer, 1000);
                rd_kafka_purge(k->producer, RD_KAFKA_PURGE_F_QUEUE |
                                                RD_KAFKA_PURGE_F_INFLIGHT);
                rd_kafka_poll(k->producer, 0);
                rd_kafka_destroy(k->producer);
        }
        /* Every task is gone: requests still out carry none. */
        kd_store_stop(f);
        kd_settle_clear(f);
        if (f->mode)
                f->mode->destroy(f);
        kd_timers_clear(&f->timers);
        for (int i = 0; i < 2; i++)
                for (int j = 0; j < 2; j++)
                        if (k->io_fds[i][j] >= 0)
                                close(k->io_fds[i][j]);
        kd_fate_store_destroy(f->store.fate);
        kd_pace_clear(f);
        kdelay_conf_destroy(f->conf);
        free(f);
}

/* Gauges read from the pipeline's state just before they are shown. */
static void refresh_gauges(kd_fwd_t *f)
{
        int64_t parts = 0, waiting = 0, full = 0;
        for (const kd_part_t *p = f->intake.parts; p; p = p->next) {
                parts++;
                waiting += p->flow == KD_PART_WAITING;
                full += p->flow == KD_PART_FULL;
        }
        kd_metrics_t *m = &f->metrics;
        kd_metric_set(m, KD_M_HELD_NOW, (int64_t)f->held.cnt);
        kd_metric_set(m, KD_M_HELD_BYTES, f->held.bytes);
        kd_metric_set(m, KD_M_OUT_NOW, (int64_t)f->held.out_cnt);
        kd_metric_set(m, KD_M_CLAIM_QUEUE, (int64_t)f->claim.q.len);
        kd_metric_set(m, KD_M_INFLIGHT, (int64_t)f->kafka.inflight);
        kd_metric_set(m, KD_M_PARTITIONS, parts);
        kd_metric_set(m, KD_M_PAUSED_WAITING, waiting);
        kd_metric_set(m, KD_M_PAUSED_FULL, full);
        kd_metric_set(m, KD_M_READY, !kd_ready_why(f, kd_fwd_mono_ms(f)));
        kd_outage_gauges(f);
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
               f->store.down ? "down" : "up");
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
        if (!f->http)
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
        if (!buf || n < 0 || kd_http_publish(f->http, buf, len))
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
        kd_http_ready(f->http, !why, body);
}
