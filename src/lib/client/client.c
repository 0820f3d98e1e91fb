/* SPDX-License-Identifier: Apache-2.0 */
/* The producer-side client: schedule (sync/async), cancel, status. */
#include <kdelay/kdelay.h>

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include <librdkafka/rdkafka.h>

#include "kd_client.h"
#include "kd_conf.h"
#include "kd_fate.h"
#include "kd_log.h"
#include "kd_record.h"
#include "kd_topicset.h"
#include "kd_util.h"
#include "kd_wire.h"

struct kdelay_client_s {
        kd_rk_owner_t owner;      /* first: librdkafka's opaque */
        kdelay_conf_t *conf;      /* owned */
        _Atomic(rd_kafka_t *) rk; /* owned; idempotent producer, lazy */
        pthread_mutex_t rk_lock;  /* serialises creating rk */
        pthread_mutex_t fate_lock;
        kd_fate_store_t *fate; /* owned; guarded by fate_lock */
        atomic_int pending;    /* tasks enqueued and not yet reported */
        /* Topics the producer's metadata showed to exist (kd_topic_check):
         * asked once per client. A missing one is asked again next time,
         * so a topic created meanwhile is found. */
        pthread_mutex_t topics_lock;
        kd_topicset_t topics_ok; /* guarded by topics_lock */
};

/* Per-task delivery state, the message opaque. Sync calls keep it on their
 * stack; async ones on the heap, freed by the delivery callback. */
typedef struct kd_pending {
        kdelay_client_t *client;  /* borrowed */
        kdelay_delivery_cb_t *cb; /* async: user callback */
        void *opaque;
        int is_async;
        const char *link_name; /* borrowed: from_id's header */
        const char *from_id;   /* borrowed: reschedule's link, or NULL */
        char *id_out;          /* caller's buffer for the id, may be NULL */
        size_t id_out_size;
        atomic_int done; /* sync: set by the delivery callback */
        kdelay_err_t err;
        char errstr[256];
        char id[KDELAY_ID_MAX + 1];
} kd_pending_t;

/* The client's producer defaults, which the user may override with -X /
 * kafka = [...]; what no one overrides is kd_producer_forced (kd_conf.h). */
static const char *const kd_client_producer_defaults[] = {
    "linger.ms",
    "5",
    "partitioner",
    "murmur2_random",
    "allow.auto.create.topics",
    "false",
    NULL};

const char *kdelay_fate_str(kdelay_fate_t fate)
{
        return kd_fate_name(fate); /* the fate table's names (fate_row.c) */
}

void kdelay_task_init(kdelay_task_t *task)
{
        memset(task, 0, sizeof(*task));
        task->fire_at_ms = KDELAY_TIME_UNSET;
        task->delay_ms = KDELAY_TIME_UNSET;
}

static void dr_msg_cb(rd_kafka_t *rk, const rd_kafka_message_t *m,
                      void *rk_opaque)
{
        (void)rk;
        (void)rk_opaque;
        kd_pending_t *p = m->_private;
        kdelay_err_t err = KDELAY_OK;
        const char *why = "";
        if (!p)
                return;
        atomic_fetch_sub(&p->client->pending, 1);
        if (m->err == RD_KAFKA_RESP_ERR__PURGE_QUEUE ||
            m->err == RD_KAFKA_RESP_ERR__PURGE_INFLIGHT) {
                err = KDELAY_ERR_PURGED;
                why = "client destroyed before delivery was confirmed";
        } else if (m->err == RD_KAFKA_RESP_ERR__MSG_TIMED_OUT) {
                err = KDELAY_ERR_TIMED_OUT;
                why = rd_kafka_err2str(m->err);
        } else if (m->err == RD_KAFKA_RESP_ERR__UNKNOWN_TOPIC ||
                   m->err == RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART) {
                err = KDELAY_ERR_NO_SUCH_TOPIC;
                why = rd_kafka_err2str(m->err);
        } else if (m->err) {
                err = KDELAY_ERR_KAFKA;
                why = rd_kafka_err2str(m->err);
        }
        /* The tier topic is named: "Message timed out" alone does not say
         * where it was going. */
        char detail[sizeof(p->errstr)] = "";
        if (err)
                snprintf(detail, sizeof(detail), "tier topic '%s': %s%s",
                         rd_kafka_topic_name(m->rkt), why,
                         err == KDELAY_ERR_NO_SUCH_TOPIC
                             ? " (create the tier topics: kdelayctl topics "
                               "create)"
                             : "");
        if (p->is_async) {
                if (p->cb)
                        p->cb(err, p->id, detail, p->opaque);
                free(p);
                return;
        }
        p->err = err;
        kd_strlcpy(p->errstr, detail, sizeof(p->errstr));
        atomic_store(&p->done, 1);
}

/* The producer, created on first use so that cancel/status never touch
 * Kafka. Returns NULL until then. */
static rd_kafka_t *producer_get(kdelay_client_t *c)
{
        return atomic_load_explicit(&c->rk, memory_order_acquire);
}

static kdelay_err_t producer_start(kdelay_client_t *c, char *errstr,
                                   size_t errstr_size)
{
        kdelay_err_t err = KDELAY_OK;
        pthread_mutex_lock(&c->rk_lock);
        if (!producer_get(c)) {
                rd_kafka_conf_t *rkc = kd_conf_rk_conf(
                    c->conf, &c->owner, kd_client_producer_defaults,
                    kd_producer_forced, errstr, errstr_size);
                rd_kafka_t *rk = NULL;
                if (!rkc) {
                        err = KDELAY_ERR_CONFIG;
                } else {
                        rd_kafka_conf_set_dr_msg_cb(rkc, dr_msg_cb);
                        rk = kd_conf_rk_make(RD_KAFKA_PRODUCER, rkc, errstr,
                                             errstr_size);
                        if (!rk)
                                err = KDELAY_ERR_KAFKA;
                }
                atomic_store_explicit(&c->rk, rk, memory_order_release);
        }
        pthread_mutex_unlock(&c->rk_lock);
        return err;
}

kdelay_err_t kdelay_client_new(kdelay_client_t **clientp, kdelay_conf_t *conf,
                               char *errstr, size_t errstr_size)
{
        if (!clientp || !conf)
                return kd_fail(KDELAY_ERR_INVALID_ARG, errstr, errstr_size,
                               "clientp and conf are required");
        /* Check the Kafka properties now, so a bad one fails here rather
         * than at the first schedule. */
        rd_kafka_conf_t *rkc =
            kd_conf_rk_conf(conf, NULL, kd_client_producer_defaults,
                            kd_producer_forced, errstr, errstr_size);
        if (!rkc)
                return KDELAY_ERR_CONFIG;
        rd_kafka_conf_destroy(rkc);
        kdelay_client_t *c = calloc(1, sizeof(*c));
        if (!c || kd_fate_store_new(&c->fate, conf)) {
                free(c);
                return kd_fail(KDELAY_ERR_NO_MEMORY, errstr, errstr_size,
                               "out of memory");
        }
        atomic_init(&c->rk, NULL);
        atomic_init(&c->pending, 0);
        pthread_mutex_init(&c->rk_lock, NULL);
        pthread_mutex_init(&c->fate_lock, NULL);
        pthread_mutex_init(&c->topics_lock, NULL);
        c->conf = conf;
        c->owner.conf = conf;
        *clientp = c;
        return KDELAY_OK;
}

void kdelay_client_destroy(kdelay_client_t *c)
{
        if (!c)
                return;
        rd_kafka_t *rk = producer_get(c);
        if (rk) {
                /* Every accepted async task gets its callback: purge what is
                 * left, then serve the purge reports. */
                rd_kafka_purge(rk, RD_KAFKA_PURGE_F_QUEUE |
                                       RD_KAFKA_PURGE_F_INFLIGHT);
                /* Purge reports are local: they all arrive promptly. */
                while (atomic_load(&c->pending) > 0)
                        rd_kafka_poll(rk, 100);
                rd_kafka_destroy(rk);
        }
        kd_fate_store_destroy(c->fate);
        pthread_mutex_destroy(&c->fate_lock);
        pthread_mutex_destroy(&c->rk_lock);
        kd_topicset_clear(&c->topics_ok);
        pthread_mutex_destroy(&c->topics_lock);
        kdelay_conf_destroy(c->conf);
        free(c);
}

static int topic_known(kdelay_client_t *c, const char *topic)
{
        pthread_mutex_lock(&c->topics_lock);
        int found = kd_topicset_has(&c->topics_ok, topic);
        pthread_mutex_unlock(&c->topics_lock);
        return found;
}

static void topic_remember(kdelay_client_t *c, const char *topic)
{
        pthread_mutex_lock(&c->topics_lock);
        /* Out of memory: not remembered, asked again next time. */
        (void)kd_topicset_add(&c->topics_ok, topic);
        pthread_mutex_unlock(&c->topics_lock);
}

/* How long the metadata request of a topic check may take. */
#define KD_TOPIC_CHECK_TIMEOUT_MS 5000

/* Asks the producer's metadata whether topic exists, once per client for
 * a topic found. KDELAY_ERR_NO_SUCH_TOPIC when the broker says it does
 * not (asked again next time: it may be created meanwhile); an answer
 * that says nothing (time-out, broker down) lets the task go on, to
 * succeed or fail as it would have without the check. */
static kdelay_err_t topic_check(kdelay_client_t *c, const char *topic,
                                int is_tier, char *errstr, size_t errstr_size)
{
        if (topic_known(c, topic))
                return KDELAY_OK;
        rd_kafka_t *rk = producer_get(c);
        rd_kafka_topic_t *rkt = rd_kafka_topic_new(rk, topic, NULL);
        const struct rd_kafka_metadata *md = NULL;
        rd_kafka_resp_err_t err =
            rkt ? rd_kafka_metadata(rk, 0, rkt, &md, KD_TOPIC_CHECK_TIMEOUT_MS)
                : rd_kafka_last_error();
        rd_kafka_resp_err_t terr =
            !err && md && md->topic_cnt == 1 ? md->topics[0].err : err;
        int missing = terr == RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART;
        if (md)
                rd_kafka_metadata_destroy(md);
        if (rkt)
                rd_kafka_topic_destroy(rkt);
        char q[300];
        kd_log_quote(topic, q, sizeof(q));
        if (missing) {
                kd_log(c->conf, KDELAY_LOG_INFO,
                       "event=topic_missing topic=%s role=%s", q,
                       is_tier ? "tier" : "target");
                if (is_tier)
                        return kd_fail(KDELAY_ERR_NO_SUCH_TOPIC, errstr,
                                       errstr_size,
                                       "tier topic '%s' does not exist "
                                       "(create the tier topics: kdelayctl "
                                       "topics create)",
                                       topic);
                return kd_fail(KDELAY_ERR_NO_SUCH_TOPIC, errstr, errstr_size,
                               "target topic '%s' does not exist (create it "
                               "first, or skip this check: "
                               "producer.check_target=0, kdelayctl schedule "
                               "--no-target-check)",
                               topic);
        }
        /* Found, or no answer: either way not asked again by this client,
         * so an unreachable broker costs one wait, not one per task. */
        if (terr != RD_KAFKA_RESP_ERR_NO_ERROR &&
            terr != RD_KAFKA_RESP_ERR_LEADER_NOT_AVAILABLE)
                kd_log(c->conf, KDELAY_LOG_INFO,
                       "event=topic_check_skipped topic=%s err=%s", q,
                       rd_kafka_err2name(terr));
        topic_remember(c, topic);
        return KDELAY_OK;
}

/* Validates and enqueues (the record path shared with kdelay_produce:
 * kd_record.h); p->id receives the id. */
static kdelay_err_t produce(kdelay_client_t *c, const kdelay_task_t *t,
                            kd_pending_t *p, char *errstr, size_t errstr_size)
{
        kd_record_t rec;
        kdelay_err_t err =
            kd_record_make(c->conf, t, p->id_out != NULL, p->id_out_size, &rec,
                           errstr, errstr_size);
        if (err)
                return err;
        kd_strlcpy(p->id, rec.id, sizeof(p->id));
        if (p->from_id &&
            rd_kafka_header_add(rec.hdrs, p->link_name, -1, p->from_id, -1)) {
                kd_record_clear(&rec);
                return kd_fail(KDELAY_ERR_NO_MEMORY, errstr, errstr_size,
                               "out of memory");
        }
        if ((err = producer_start(c, errstr, errstr_size)) ||
            (err = topic_check(c, rec.topic, 1, errstr, errstr_size)) ||
            (c->conf->producer_check_target &&
             (err = topic_check(c, t->topic, 0, errstr, errstr_size)))) {
                kd_record_clear(&rec);
                return err;
        }
        p->client = c;
        /* Counted before producev: another thread's poll may report the
         * task before producev returns. */
        atomic_fetch_add(&c->pending, 1);
        err = kd_record_produce(producer_get(c), &rec, t, p, c->conf, "client",
                                errstr, errstr_size);
        if (err)
                atomic_fetch_sub(&c->pending, 1);
        return err;
}

static void id_copy_out(const char *id, char *id_out, size_t id_out_size)
{
        if (id_out && id_out_size)
                kd_strlcpy(id_out, id, id_out_size);
}

kdelay_err_t kdelay_schedule(kdelay_client_t *c, const kdelay_task_t *task,
                             char *id_out, size_t id_out_size, char *errstr,
                             size_t errstr_size)
{
        return kd_client_schedule_from(c, task, NULL, NULL, id_out, id_out_size,
                                       errstr, errstr_size);
}

kdelay_err_t kd_client_schedule_from(kdelay_client_t *c,
                                     const kdelay_task_t *task,
                                     const char *link_name, const char *from_id,
                                     char *id_out, size_t id_out_size,
                                     char *errstr, size_t errstr_size)
{
        kd_pending_t p = {.is_async = 0,
                          .link_name = link_name,
                          .from_id = from_id,
                          .id_out = id_out,
                          .id_out_size = id_out_size};
        if (!c)
                return kd_fail(KDELAY_ERR_INVALID_ARG, errstr, errstr_size,
                               "client is NULL");
        atomic_init(&p.done, 0);
        kdelay_err_t err;
        /* A full local queue drains as deliveries complete: wait for it. */
        while ((err = produce(c, task, &p, errstr, errstr_size)) ==
               KDELAY_ERR_QUEUE_FULL)
                rd_kafka_poll(producer_get(c), 100);
        if (err)
                return err;
        id_copy_out(p.id, id_out, id_out_size);
        while (!atomic_load(&p.done))
                rd_kafka_poll(producer_get(c), 100);
        if (p.err)
                return kd_fail(p.err, errstr, errstr_size,
                               "task %s not written: %s", p.id, p.errstr);
        return KDELAY_OK;
}

kdelay_err_t kdelay_schedule_async(kdelay_client_t *c,
                                   const kdelay_task_t *task,
                                   kdelay_delivery_cb_t *cb, void *opaque,
                                   char *id_out, size_t id_out_size,
                                   char *errstr, size_t errstr_size)
{
        if (!c)
                return kd_fail(KDELAY_ERR_INVALID_ARG, errstr, errstr_size,
                               "client is NULL");
        kd_pending_t *p = calloc(1, sizeof(*p));
        if (!p)
                return kd_fail(KDELAY_ERR_NO_MEMORY, errstr, errstr_size,
                               "out of memory");
        p->is_async = 1;
        p->id_out = id_out;
        p->id_out_size = id_out_size;
        p->cb = cb;
        p->opaque = opaque;
        kdelay_err_t err = produce(c, task, p, errstr, errstr_size);
        if (err) {
                free(p);
                return err;
        }
        id_copy_out(p->id, id_out, id_out_size);
        return KDELAY_OK;
}

int kdelay_poll(kdelay_client_t *c, int timeout_ms)
{
        /* Started here too, so a poll thread started before the first
         * schedule waits instead of spinning. */
        if (!c || producer_start(c, NULL, 0))
                return 0;
        return rd_kafka_poll(producer_get(c), timeout_ms);
}

kdelay_err_t kdelay_flush(kdelay_client_t *c, int timeout_ms)
{
        if (!c)
                return KDELAY_ERR_INVALID_ARG;
        rd_kafka_t *rk = producer_get(c);
        if (!rk)
                return KDELAY_OK;
        return rd_kafka_flush(rk, timeout_ms) ? KDELAY_ERR_TIMED_OUT
                                              : KDELAY_OK;
}

int kdelay_outq_len(kdelay_client_t *c)
{
        return c ? atomic_load(&c->pending) : 0;
}

/* Calls into the fate store start with errstr cleared, and end here: the
 * store leaves it unfilled on some failures (out of memory), and the API
 * promises a detail on every error. */
static void errstr_clear(char *errstr, size_t errstr_size)
{
        if (errstr && errstr_size)
                errstr[0] = '\0';
}

static kdelay_err_t errstr_ensure(kdelay_err_t err, const char *what,
                                  char *errstr, size_t errstr_size)
{
        if (err && errstr && errstr_size && !errstr[0])
                kd_fail(err, errstr, errstr_size, "%s: %s", what,
                        kdelay_err_str(err));
        return err;
}

static kdelay_err_t id_check(const char *id, char *errstr, size_t errstr_size)
{
        if (!id || !kd_wire_id_valid(id, strlen(id)))
                return kd_fail(KDELAY_ERR_INVALID_ID, errstr, errstr_size,
                               "task id must be 1..%d bytes of UTF-8",
                               KDELAY_ID_MAX);
        return KDELAY_OK;
}

kdelay_err_t kdelay_cancel(kdelay_client_t *c, const char *id, char *errstr,
                           size_t errstr_size)
{
        kdelay_err_t err;
        if (!c)
                return kd_fail(KDELAY_ERR_INVALID_ARG, errstr, errstr_size,
                               "client is NULL");
        if ((err = id_check(id, errstr, errstr_size)))
                return err;
        char qid[KD_LOG_QUOTED_MAX(KDELAY_ID_MAX)];
        errstr_clear(errstr, errstr_size);
        pthread_mutex_lock(&c->fate_lock);
        err = kd_fate_cancel(c->fate, id, strlen(id), errstr, errstr_size);
        pthread_mutex_unlock(&c->fate_lock);
        errstr_ensure(err, "cancel", errstr, errstr_size);
        kd_log(c->conf,
               err && err != KDELAY_ERR_TOO_LATE ? KDELAY_LOG_WARNING
                                                 : KDELAY_LOG_INFO,
               "event=task_cancel id=%s result=%s",
               kd_log_quote(id, qid, sizeof(qid)), kdelay_err_name(err));
        return err;
}

kdelay_err_t kdelay_status(kdelay_client_t *c, const char *id,
                           kdelay_status_t *status, char *errstr,
                           size_t errstr_size)
{
        kdelay_err_t err;
        if (!c || !status)
                return kd_fail(KDELAY_ERR_INVALID_ARG, errstr, errstr_size,
                               "%s is NULL", !c ? "client" : "status");
        if ((err = id_check(id, errstr, errstr_size)))
                return err;
        errstr_clear(errstr, errstr_size);
        pthread_mutex_lock(&c->fate_lock);
        err = kd_fate_status(c->fate, id, strlen(id), status, errstr,
                             errstr_size);
        pthread_mutex_unlock(&c->fate_lock);
        return errstr_ensure(err, "status", errstr, errstr_size);
}

const kdelay_conf_t *kd_client_conf(const kdelay_client_t *c)
{
        return c->conf;
}

kdelay_err_t kd_client_fate_lookup(kdelay_client_t *c, const char *const *ids,
                                   const size_t *id_lens, size_t n,
                                   kdelay_fate_t *fates, char *errstr,
                                   size_t errstr_size)
{
        errstr_clear(errstr, errstr_size);
        pthread_mutex_lock(&c->fate_lock);
        kdelay_err_t err = kd_fate_lookup(c->fate, ids, id_lens, n, fates,
                                          errstr, errstr_size);
        pthread_mutex_unlock(&c->fate_lock);
        return errstr_ensure(err, "look up fates", errstr, errstr_size);
}

kdelay_err_t kd_client_unclaimed(kdelay_client_t *c, const char *id,
                                 kd_fate_unclaimed_row_t *row, size_t *np,
                                 char *errstr, size_t errstr_size)
{
        errstr_clear(errstr, errstr_size);
        pthread_mutex_lock(&c->fate_lock);
        kdelay_err_t err = kd_fate_unclaimed_list(
            c->fate, id, strlen(id), -1, 0, row, 1, np, errstr, errstr_size);
        pthread_mutex_unlock(&c->fate_lock);
        return errstr_ensure(err, "read kdelay_unclaimed", errstr, errstr_size);
}

kdelay_err_t kd_client_pending(kdelay_client_t *c, kd_fate_pending_t *p,
                               char *errstr, size_t errstr_size)
{
        errstr_clear(errstr, errstr_size);
        pthread_mutex_lock(&c->fate_lock);
        kdelay_err_t err =
            kd_fate_pending_get(c->fate, NULL, p, errstr, errstr_size);
        pthread_mutex_unlock(&c->fate_lock);
        return errstr_ensure(err, "read kdelay_reconcile", errstr, errstr_size);
}

kdelay_err_t kd_client_headers_array(const rd_kafka_headers_t *h,
                                     kdelay_header_t **arrp, size_t *cntp)
{
        *arrp = NULL;
        *cntp = h ? rd_kafka_header_cnt(h) : 0;
        if (!*cntp)
                return KDELAY_OK;
        kdelay_header_t *a = calloc(*cntp, sizeof(*a));
        if (!a)
                return KDELAY_ERR_NO_MEMORY;
        for (size_t i = 0; i < *cntp; i++) {
                const void *v;
                if (rd_kafka_header_get_all(h, i, &a[i].name, &v,
                                            &a[i].value_len)) {
                        free(a);
                        *cntp = 0;
                        return KDELAY_ERR_NO_MEMORY;
                }
                a[i].value = v;
        }
        *arrp = a;
        return KDELAY_OK;
}
