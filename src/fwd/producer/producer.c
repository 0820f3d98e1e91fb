/* SPDX-License-Identifier: Apache-2.0 */
/* The producer room (kd_producer.h): the main, solo and bulk producers, their
 * queues and wake-up pipe, the in-flight count, renewal and reset. The
 * topic handles are producer_tophandles.c's. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/kd_io_wakeup.h"
#include "core/kd_mode_ops.h"
#include "kd_log.h"
#include "kd_loop_pump.h"
#include "kd_producer_state.h"
#include "kd_util.h"

int kd_producer_new(kd_fwd_t *f)
{
        kd_producer_t *k = calloc(1, sizeof(*k));
        if (!k)
                return -1;
        k->io_fds[0] = k->io_fds[1] = -1;
        f->producer = k;
        return 0;
}

static rd_kafka_t *producer_new(kd_fwd_t *f, const char *const *forced,
                                char *errstr, size_t errstr_size)
{
        kd_producer_t *k = f->producer;
        rd_kafka_conf_t *rkc = kd_conf_rk_conf(f->conf, &f->owner, k->defaults,
                                               forced, errstr, errstr_size);
        if (!rkc)
                return NULL;
        rd_kafka_conf_set_dr_msg_cb(rkc, k->dr_cb);
        return kd_conf_rk_make(RD_KAFKA_PRODUCER, rkc, errstr, errstr_size);
}

/* Topic handles for every topic the producer writes but the targets: a
 * handle asks for the topic's metadata at once. A handle not made costs
 * only that wait later: logged, not fatal. */
static void warm_topics(kd_fwd_t *f)
{
        const kdelay_conf_t *c = f->conf;
        kd_producer_t *k = f->producer;
        char name[256], q[KD_LOG_QUOTED_MAX(255)];
        for (size_t i = 0; i <= c->tiers.cnt; i++) {
                if (i < c->tiers.cnt)
                        kd_tiers_topic(&c->tiers, i, c->topic_prefix, name,
                                       sizeof(name));
                else
                        kd_conf_dead_topic(c, name, sizeof(name));
                rd_kafka_topic_t *t = rd_kafka_topic_new(k->main, name, NULL);
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
        kd_producer_t *k = f->producer;
        for (int i = 0, made = 0;
             md && i < md->topic_cnt && made < KD_WARM_TARGETS_MAX; i++) {
                const char *name = md->topics[i].topic;
                int have = 0;
                for (size_t j = 0; j < k->warm_cnt && !have; j++)
                        have = !strcmp(rd_kafka_topic_name(k->warm[j]), name);
                /* else its first fire waits for the metadata */
                if (!have && kd_producer_topic(f, name))
                        made++;
        }
}

/* Drops the producer's warm topic handles. */
static void warm_release(kd_producer_t *k)
{
        for (size_t i = 0; i < k->warm_cnt; i++)
                rd_kafka_topic_destroy(k->warm[i]);
        k->warm_cnt = 0;
        kd_producer_topics_release(k);
}

kdelay_err_t kd_producer_open(kd_fwd_t *f, const char *const *defaults,
                              const char *const *forced,
                              kd_producer_dr_cb_t *dr_cb, char *errstr,
                              size_t errstr_size)
{
        kd_producer_t *k = f->producer;
        k->defaults = defaults;
        k->forced = forced;
        k->dr_cb = dr_cb;
        k->main = producer_new(f, forced, errstr, errstr_size);
        if (!k->main)
                return KDELAY_ERR_KAFKA;
        warm_topics(f);
        return KDELAY_OK;
}

int kd_producer_start(kd_fwd_t *f)
{
        kd_producer_t *k = f->producer;
        k->main_q = rd_kafka_queue_get_main(k->main);
        if (!k->main_q)
                return -1;
        return kd_fwd_io_wakeup(k->main_q, k->io_fds);
}

int kd_producer_wake_fd(const kd_fwd_t *f)
{
        return f->producer->io_fds[0];
}

rd_kafka_t *kd_producer_main(const kd_fwd_t *f)
{
        return f->producer ? f->producer->main : NULL;
}

/* A side producer (the solo or the bulk one): the main one's properties
 * with extra (name, value pairs, NULL-terminated) forced over them, its
 * queue into *qp, waking the producers' pipe. NULL, and errstr filled,
 * when it cannot be made. */
static rd_kafka_t *side_producer_new(kd_fwd_t *f, const char *const *extra,
                                     rd_kafka_queue_t **qp, char *errstr,
                                     size_t errstr_size)
{
        kd_producer_t *k = f->producer;
        const char *forced[64];
        size_t n = 0, x = 0;
        while (extra[x])
                x++;
        for (size_t i = 0; k->forced[i] && n + x + 2 < 64; i++)
                forced[n++] = k->forced[i];
        for (size_t i = 0; i < x; i++)
                forced[n++] = extra[i];
        forced[n] = NULL;
        rd_kafka_t *rk = producer_new(f, forced, errstr, errstr_size);
        if (!rk)
                return NULL;
        rd_kafka_queue_t *q = rd_kafka_queue_get_main(rk);
        if (!q) {
                kd_strlcpy(errstr, "no queue", errstr_size);
                rd_kafka_destroy(rk);
                return NULL;
        }
        rd_kafka_queue_io_event_enable(q, k->io_fds[1], "1", 1);
        *qp = q;
        return rk;
}

/* The solo producer's own properties, forced over the main one's: a
 * batch holds one record, sent at once. */
static const char *const solo_forced[] = {"batch.num.messages", "1",
                                          "linger.ms", "0", NULL};

rd_kafka_t *kd_producer_solo(kd_fwd_t *f)
{
        kd_producer_t *k = f->producer;
        if (k->solo)
                return k->solo;
        char errstr[512], q[600];
        k->solo = side_producer_new(f, solo_forced, &k->solo_q, errstr,
                                    sizeof(errstr));
        if (!k->solo) {
                kd_log(f->conf, KDELAY_LOG_WARNING,
                       "event=solo_producer_failed err=%s action=retry",
                       kd_log_quote(errstr, q, sizeof(q)));
                return NULL;
        }
        kd_log(f->conf, KDELAY_LOG_NOTICE,
               "event=solo_producer_started why=batch_refused");
        return k->solo;
}

void kd_producer_solo_close(kd_fwd_t *f)
{
        kd_producer_t *k = f->producer;
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

/* The bulk producer's own properties, forced over the main one's: a
 * backlog's fires in batches as large as a plain copy's (linger.ms 5,
 * librdkafka's batch limits; idempotence and the rest as the main one). */
static const char *const bulk_forced[] = {
    "linger.ms",          "5",     "batch.size", "1000000",
    "batch.num.messages", "10000", NULL};

/* A bulk producer not made is not asked for again within this long (the
 * fires go through the main one meanwhile). */
#define KD_BULK_RETRY_MS 10000

rd_kafka_t *kd_producer_bulk(kd_fwd_t *f)
{
        kd_producer_t *k = f->producer;
        if (k->bulk)
                return k->bulk;
        int64_t now = kd_fwd_mono_ms(f);
        if (!k->main || (k->bulk_failed_mono &&
                         now - k->bulk_failed_mono < KD_BULK_RETRY_MS))
                return NULL;
        char errstr[512], q[600];
        k->bulk = side_producer_new(f, bulk_forced, &k->bulk_q, errstr,
                                    sizeof(errstr));
        if (!k->bulk) {
                kd_log(f->conf, KDELAY_LOG_WARNING,
                       "event=bulk_producer_failed err=%s action=use_main",
                       kd_log_quote(errstr, q, sizeof(q)));
                k->bulk_failed_mono = now;
                return NULL;
        }
        kd_log(f->conf, KDELAY_LOG_NOTICE,
               "event=bulk_producer_started why=late_fires linger_ms=5");
        return k->bulk;
}

int kd_producer_is_bulk(const kd_fwd_t *f, const rd_kafka_t *rk)
{
        return rk && f->producer && rk == f->producer->bulk;
}

/* Ends the bulk producer (if any). flush_ms > 0: what it holds is sent
 * first, for up to that long (a stop); then whatever is left is purged
 * and reported (the fire stage retries it, or a stop frees it). */
static void bulk_close(kd_fwd_t *f, int flush_ms)
{
        kd_producer_t *k = f->producer;
        if (!k->bulk)
                return;
        if (flush_ms > 0)
                rd_kafka_flush(k->bulk, flush_ms);
        rd_kafka_purge(k->bulk,
                       RD_KAFKA_PURGE_F_QUEUE | RD_KAFKA_PURGE_F_INFLIGHT);
        rd_kafka_flush(k->bulk, 1000);
        kd_producer_bulk_topics_release(k);
        rd_kafka_queue_io_event_enable(k->bulk_q, -1, NULL, 0);
        rd_kafka_queue_destroy(k->bulk_q);
        k->bulk_q = NULL;
        rd_kafka_destroy(k->bulk);
        k->bulk = NULL;
}

void kd_producer_close(kd_fwd_t *f)
{
        kd_producer_t *k = f->producer;
        if (!k)
                return;
        /* Reports of produces still in flight free their (orphan) tasks. */
        warm_release(k);
        kd_producer_solo_close(f);
        bulk_close(f, 1000);
        if (k->main_q) {
                rd_kafka_queue_destroy(k->main_q);
                k->main_q = NULL;
        }
        if (k->main) {
                rd_kafka_flush(k->main, 1000);
                rd_kafka_purge(k->main, RD_KAFKA_PURGE_F_QUEUE |
                                            RD_KAFKA_PURGE_F_INFLIGHT);
                rd_kafka_poll(k->main, 0);
                rd_kafka_destroy(k->main);
                k->main = NULL;
        }
}

void kd_producer_free(kd_fwd_t *f)
{
        kd_producer_t *k = f->producer;
        if (!k)
                return;
        for (int j = 0; j < 2; j++)
                if (k->io_fds[j] >= 0)
                        close(k->io_fds[j]);
        free(k);
        f->producer = NULL;
}

rd_kafka_resp_err_t kd_producer_produce(kd_fwd_t *f, rd_kafka_t *rk,
                                        rd_kafka_vu_t *vu, size_t cnt,
                                        unsigned flags)
{
        /* Through the producer's handle of the topic when there is one
         * (its metadata asked for at the claim), else by name. */
        kd_producer_t *k = f->producer;
        rd_kafka_topic_t *rkt = NULL;
        if (flags & KD_PRODUCE_BY_HANDLE && rk == k->main)
                rkt = kd_producer_topic(f, vu[0].u.cstr);
        else if (flags & KD_PRODUCE_BY_HANDLE && rk && rk == k->bulk)
                rkt = kd_producer_bulk_topic(k, vu[0].u.cstr);
        if (rkt) {
                vu[0].vtype = RD_KAFKA_VTYPE_RKT;
                vu[0].u.rkt = rkt;
        }
        rd_kafka_error_t *error = rd_kafka_produceva(rk, vu, cnt);
        rd_kafka_resp_err_t err =
            error ? rd_kafka_error_code(error) : RD_KAFKA_RESP_ERR_NO_ERROR;
        rd_kafka_error_destroy(error);
        if (!err && flags & KD_PRODUCE_COUNTED)
                k->inflight++;
        return err;
}

void kd_producer_sent(kd_fwd_t *f)
{
        f->producer->inflight++;
}

void kd_producer_reported(kd_fwd_t *f, int stamp)
{
        f->producer->inflight--;
        if (stamp)
                f->producer->last_report_mono = kd_fwd_mono_ms(f);
}

size_t kd_producer_inflight(const kd_fwd_t *f)
{
        return f->producer ? f->producer->inflight : 0;
}

void kd_producer_drain_begin(kd_fwd_t *f)
{
        f->producer->last_report_mono = kd_fwd_mono_ms(f);
}

int kd_producer_quiet(const kd_fwd_t *f)
{
        const kd_producer_t *k = f->producer;
        return k->inflight == 0 ||
               kd_fwd_mono_ms(f) - k->last_report_mono >= KD_PUMP_STALL_MS;
}

int kd_producer_drain(kd_fwd_t *f, int64_t deadline)
{
        return kd_loop_pump(f, deadline, kd_pump_produces_done);
}

void kd_producer_wait(kd_fwd_t *f, int wait_ms)
{
        kd_producer_t *k = f->producer;
        rd_kafka_poll(k->main, wait_ms > 0 && k->bulk ? 10 : wait_ms);
        if (k->bulk)
                rd_kafka_poll(k->bulk, 0);
}

void kd_producer_serve_main(kd_fwd_t *f)
{
        if (!f->producer->main) /* between a renewal's close and open */
                return;
        while (rd_kafka_poll(f->producer->main, 0) > 0)
                ;
}

/* The bulk producer's reports waiting now; one that failed for good goes
 * (its produces are retried, through a new one), at the loop's turn: not
 * inside the nested pump, whose deadline its flush would hold up. */
static void serve_bulk(kd_fwd_t *f)
{
        kd_producer_t *k = f->producer;
        char why[512], q[600];
        if (!k->bulk)
                return;
        while (rd_kafka_poll(k->bulk, 0) > 0)
                ;
        rd_kafka_resp_err_t err =
            rd_kafka_fatal_error(k->bulk, why, sizeof(why));
        if (!err || f->pumping)
                return;
        kd_log(f->conf, KDELAY_LOG_ERROR,
               "event=bulk_producer_fatal err=%s code=%s action=renew",
               kd_log_quote(why, q, sizeof(q)), rd_kafka_err2name(err));
        bulk_close(f, 0);
}

void kd_producer_serve(kd_fwd_t *f)
{
        kd_producer_t *k = f->producer;
        char why[512];
        kd_producer_serve_main(f);
        serve_bulk(f);
        if (!k->solo)
                return;
        while (rd_kafka_poll(k->solo, 0) > 0)
                ;
        rd_kafka_resp_err_t err =
            rd_kafka_fatal_error(k->solo, why, sizeof(why));
        if (!err || f->pumping) /* as the bulk one's */
                return;
        char q[600];
        kd_log(f->conf, KDELAY_LOG_ERROR,
               "event=solo_producer_fatal err=%s code=%s action=renew",
               kd_log_quote(why, q, sizeof(q)), rd_kafka_err2name(err));
        kd_producer_solo_close(f);
}

void kd_producer_renew_soon(kd_fwd_t *f, int for_record)
{
        f->producer->renew = 1;
        f->producer->renew_for_record = for_record;
}

int kd_producer_renew_due(const kd_fwd_t *f)
{
        return f->producer->renew;
}

void kd_producer_reset_soon(kd_fwd_t *f)
{
        f->producer->reset = 1;
}

int kd_producer_reset_due(const kd_fwd_t *f)
{
        return f->producer->reset;
}

/* A fence: the coordinator bumped the transactional.id's epoch past
 * this producer's. Another process with the same id started (its
 * init_transactions), or the coordinator itself aborted a transaction
 * that outlived transaction.timeout.ms (a Kafka restart during a commit:
 * librdkafka 2.0.2 reports both as _FENCED, as a torture run saw). A new
 * producer gets past the second; against another process it fences that
 * one in turn, and the renewal interval ends the turns: a fence within
 * KD_RENEW_MIN_INTERVAL_MS of this process's last renewal exits. */
static int fenced(rd_kafka_resp_err_t err)
{
        return err == RD_KAFKA_RESP_ERR__FENCED ||
               err == RD_KAFKA_RESP_ERR_PRODUCER_FENCED ||
               err == RD_KAFKA_RESP_ERR_INVALID_PRODUCER_EPOCH;
}

/* 0 for the fatal errors a new producer cannot get past: the
 * credentials do not allow it. */
static int renewable(rd_kafka_resp_err_t err)
{
        switch (err) {
        case RD_KAFKA_RESP_ERR_TRANSACTIONAL_ID_AUTHORIZATION_FAILED:
        case RD_KAFKA_RESP_ERR_CLUSTER_AUTHORIZATION_FAILED:
                return 0;
        default:
                return 1;
        }
}

/* Ends the failed producer: its produces purged and their reports served
 * (the fire stage retries them, or the mode drops them with their
 * transaction), its topic handles, queue and wake-up pipe gone. */
static void producer_close(kd_fwd_t *f)
{
        kd_producer_t *k = f->producer;
        kd_producer_solo_close(f); /* they share the wake-up pipe */
        bulk_close(f, 0);
        rd_kafka_purge(k->main,
                       RD_KAFKA_PURGE_F_QUEUE | RD_KAFKA_PURGE_F_INFLIGHT);
        kd_producer_drain(f, kd_fwd_mono_ms(f) + 1000);
        warm_release(k);
        if (k->main_q) {
                rd_kafka_queue_io_event_enable(k->main_q, -1, NULL, 0);
                rd_kafka_queue_destroy(k->main_q);
                k->main_q = NULL;
        }
        for (int j = 0; j < 2; j++) {
                if (k->io_fds[j] >= 0)
                        close(k->io_fds[j]);
                k->io_fds[j] = -1;
        }
        rd_kafka_destroy(k->main);
        k->main = NULL;
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
        kd_producer_t *k = f->producer;
        char errstr[512];
        /* The topics it knows (a local answer, or one request). */
        const rd_kafka_metadata_t *md = NULL;
        if (rd_kafka_metadata(k->main, 0, NULL, &md, 1000))
                md = NULL;
        producer_close(f);
        k->main = producer_new(f, k->forced, errstr, sizeof(errstr));
        if (k->main) {
                warm_topics(f);
                warm_known(f, md);
        }
        if (md)
                rd_kafka_metadata_destroy(md);
        if (!k->main)
                return renew_failed(f, "producer", errstr);
        k->main_q = rd_kafka_queue_get_main(k->main);
        if (!k->main_q || kd_fwd_io_wakeup(k->main_q, k->io_fds))
                return renew_failed(f, "io_wakeup", strerror(errno));
        if (f->mode && f->mode->renewed &&
            f->mode->renewed(&f->mode_ctx, errstr, sizeof(errstr)))
                return renew_failed(f, f->mode->name, errstr);
        kd_log(f->conf, KDELAY_LOG_NOTICE, "event=producer_renewed ms=%lld",
               (long long)(kd_fwd_mono_ms(f) - now));
        return 0;
}

/* The producer failed for good (err, why: its fatal error, or 0 when the
 * mode found it): a new one (kd_producer_recover). */
static int producer_renew(kd_fwd_t *f, rd_kafka_resp_err_t err, const char *why)
{
        kd_producer_t *k = f->producer;
        char q[600];
        int64_t now = kd_fwd_mono_ms(f);
        k->renew = 0;
        int for_record = k->renew_for_record;
        k->renew_for_record = 0;
        /* A fence keeps to the interval even for a record: two processes
         * with one transactional.id must not take turns for ever. */
        int soon = (!for_record || fenced(err)) && k->renewed_mono &&
                   now - k->renewed_mono < KD_RENEW_MIN_INTERVAL_MS;
        kd_log(f->conf, KDELAY_LOG_ERROR,
               "event=producer_fatal err=%s code=%s for_record=%d action=%s",
               kd_log_quote(why, q, sizeof(q)), rd_kafka_err2name(err),
               for_record,
               !renewable(err)       ? "exit why=denied"
               : soon && fenced(err) ? "exit why=fenced_again"
               : soon                ? "exit why=renewed_recently"
                                     : "renew");
        if (!renewable(err) || soon) {
                kd_fwd_fatal(f, "producer_fatal");
                return -1;
        }
        if (!for_record) /* a record's renewals prove no loop */
                k->renewed_mono = now;
        kd_metric_inc(&f->metrics, KD_M_PRODUCER_RENEWALS);
        return producer_replace(f, now);
}

/* Replaces the healthy producer with a new one (the mode asked), as a
 * renewal does but with none of its limits. */
static int producer_reset(kd_fwd_t *f, const char *why)
{
        f->producer->reset = 0;
        kd_log(f->conf, KDELAY_LOG_NOTICE,
               "event=producer_reset why=%s action=new_producer", why);
        return producer_replace(f, kd_fwd_mono_ms(f));
}

int kd_producer_recover(kd_fwd_t *f)
{
        kd_producer_t *k = f->producer;
        char why[512] = "a transactional call failed for good";
        /* A fatal producer error (sequence loss, a transaction the
         * coordinator refuses) cannot be retried away: a new producer
         * replaces the old, or, fenced or failing again soon, the
         * forwarder stops cleanly and exits non-zero so that a supervisor
         * starts a fresh process. */
        rd_kafka_resp_err_t ferr =
            rd_kafka_fatal_error(k->main, why, sizeof(why));
        if (!ferr && !k->renew && !k->reset)
                return 0;
        if (ferr || k->renew
                ? producer_renew(f, ferr ? ferr : RD_KAFKA_RESP_ERR__FATAL, why)
                : producer_reset(f, "sequence_gap"))
                return -1;
        k->reset = 0;
        return 1;
}
