/* The forwarder object: its Kafka clients, MySQL store and statistics. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "kd_fwd.h"
#include "kd_log.h"
#include "kd_schema.h"
#include "kd_util.h"

/* Consumer defaults the user may override. Bounded prefetch keeps memory
 * independent of the backlog; short fetch waits make resumes prompt. */
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
/* A report within 30 s: a fire whose target is missing goes to the dead
 * letters in about that time, not librdkafka's default 300 s.
 * message.max.bytes: the broker's default record limit (1048588), so that
 * every record it accepted into a tier topic can be produced again, and a
 * larger one fails here, at once, and goes to the dead letters. */
static const char *const kd_producer_defaults[] = {"linger.ms",
                                                   "1",
                                                   "partitioner",
                                                   "murmur2_random",
                                                   "message.timeout.ms",
                                                   "30000",
                                                   "message.max.bytes",
                                                   "1048588",
                                                   NULL};
static const char *const kd_producer_forced[] = {"enable.idempotence", "true",
                                                 "acks", "all", NULL};
/* Exactly-once: a crashed instance's open transaction blocks
 * read_committed consumers of the targets until it times out (or the
 * instance restarts and fences it); keep that short. Produces must time
 * out within a transaction. A missing target must fail as unknown (5 s)
 * before a produce times out (10 s), so that it counts as permanent. */
static const char *const kd_txn_producer_defaults[] = {
    "linger.ms",
    "1",
    "partitioner",
    "murmur2_random",
    "transaction.timeout.ms",
    "10000",
    "message.timeout.ms",
    "10000",
    "topic.metadata.propagation.max.ms",
    "5000",
    "message.max.bytes",
    "1048588",
    NULL};

static void rebalance_cb(rd_kafka_t *rk, rd_kafka_resp_err_t err,
                         rd_kafka_topic_partition_list_t *parts, void *opaque)
{
        (void)rk;
        kd_fwd_t *f = opaque;
        if (err == RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS)
                kd_part_assign(f, parts);
        else
                kd_part_revoke(f, parts);
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
        if (type == RD_KAFKA_CONSUMER)
                rd_kafka_conf_set_rebalance_cb(rkc, rebalance_cb);
        else
                rd_kafka_conf_set_dr_msg_cb(rkc, kd_produce_dr_cb);
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

kdelay_err_t kd_fwd_new(kd_fwd_t **fp, kdelay_conf_t *conf, char *errstr,
                        size_t errstr_size)
{
        kd_fwd_t *f = calloc(1, sizeof(*f));
        if (!f)
                return KDELAY_ERR_NO_MEMORY;
        f->conf = conf;
        f->owner.conf = conf;
        kd_heap_init(&f->timers);
        for (int i = 0; i < 2; i++)
                f->io_fds[i][0] = f->io_fds[i][1] = -1;
        if (conf->fwd_instance) {
                kd_strlcpy(f->instance, conf->fwd_instance,
                           sizeof(f->instance));
        } else {
                char host[48] = "host";
                gethostname(host, sizeof(host) - 1);
                snprintf(f->instance, sizeof(f->instance), "%s-%d", host,
                         (int)getpid());
        }
        /* Owner tokens keep to [A-Za-z0-9._-]. */
        for (char *c = f->instance; *c; c++)
                if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') ||
                      (*c >= '0' && *c <= '9') || *c == '.' || *c == '_' ||
                      *c == '-'))
                        *c = '_';
        if (getrandom(&f->boot, sizeof(f->boot), 0) != sizeof(f->boot))
                f->boot = (uint32_t)getpid() ^ (uint32_t)kd_now_ms();
        kd_claim_new_generation(f);
        kdelay_err_t err = KDELAY_OK;
        if (!conf->mysql_url) {
                err = kd_fail(KDELAY_ERR_NOT_CONFIGURED, errstr, errstr_size,
                              "the forwarder needs MySQL: set mysql.url or "
                              "pass --mysql");
                goto fail;
        }
        if (kd_fate_store_new(&f->fate, conf)) {
                err = KDELAY_ERR_NO_MEMORY;
                goto fail;
        }
        /* A schema mismatch is fatal; MySQL being down is not (claims wait
         * and retry; hops and dead letters go on). */
        char why[512];
        err = kd_fate_store_connect(f->fate, why, sizeof(why));
        if (err == KDELAY_ERR_SCHEMA) {
                kd_fail(err, errstr, errstr_size, "%s", why);
                goto fail;
        }
        if (err) {
                char q[600];
                kd_log(conf, KDELAY_LOG_WARNING,
                       "event=mysql_unavailable what=startup err=%s",
                       kd_log_quote(why, q, sizeof(q)));
                err = KDELAY_OK;
        }
        const char *forced_consumer[] = {"group.id",
                                         conf->fwd_group_id,
                                         "enable.auto.commit",
                                         "false",
                                         "enable.auto.offset.store",
                                         "false",
                                         "enable.partition.eof",
                                         "false",
                                         "isolation.level",
                                         "read_committed",
                                         NULL};
        f->consumer = client_new(f, RD_KAFKA_CONSUMER, kd_consumer_defaults,
                                 forced_consumer, errstr, errstr_size);
        if (!f->consumer) {
                err = KDELAY_ERR_KAFKA;
                goto fail;
        }
        rd_kafka_poll_set_consumer(f->consumer);
        f->eos = conf->fwd_delivery == KD_DELIVERY_EXACTLY_ONCE;
        char txn_id[128];
        if (f->eos && !conf->fwd_txn_id && !conf->fwd_instance) {
                err = kd_fail(KDELAY_ERR_CONFIG, errstr, errstr_size,
                              "forwarder.delivery=exactly_once needs a "
                              "stable forwarder.instance (or "
                              "forwarder.transactional_id), so that a "
                              "restarted forwarder fences its predecessor");
                goto fail;
        }
        snprintf(txn_id, sizeof(txn_id), "%s",
                 conf->fwd_txn_id ? conf->fwd_txn_id : "");
        if (!conf->fwd_txn_id)
                snprintf(txn_id, sizeof(txn_id), "%s-%s", conf->fwd_group_id,
                         f->instance);
        const char *forced_txn[] = {"enable.idempotence", "true", "acks", "all",
                                    "transactional.id",   txn_id, NULL};
        f->producer = client_new(
            f, RD_KAFKA_PRODUCER,
            f->eos ? kd_txn_producer_defaults : kd_producer_defaults,
            f->eos ? forced_txn : kd_producer_forced, errstr, errstr_size);
        if (!f->producer) {
                err = KDELAY_ERR_KAFKA;
                goto fail;
        }
        *fp = f;
        return KDELAY_OK;
fail:
        f->conf = NULL; /* stays the caller's on failure */
        kd_fwd_destroy(f);
        return err;
}

void kd_fwd_destroy(kd_fwd_t *f)
{
        if (!f)
                return;
        if (f->consumer_q)
                rd_kafka_queue_destroy(f->consumer_q);
        if (f->producer_q)
                rd_kafka_queue_destroy(f->producer_q);
        if (f->consumer)
                rd_kafka_destroy(f->consumer);
        /* Reports of produces still in flight free their (orphan) tasks. */
        if (f->producer) {
                rd_kafka_flush(f->producer, 1000);
                rd_kafka_purge(f->producer, RD_KAFKA_PURGE_F_QUEUE |
                                                RD_KAFKA_PURGE_F_INFLIGHT);
                rd_kafka_poll(f->producer, 0);
                rd_kafka_destroy(f->producer);
        }
        while (f->claimq.head) {
                kd_task_t *t = f->claimq.head;
                kd_claim_forget(f, t);
                kd_task_free(f, t);
        }
        while (f->paceq.head)
                kd_task_free(f, f->paceq.head);
        kd_heap_node_t *n;
        while ((n = kd_heap_pop(&f->timers)))
                kd_task_free(
                    f, (kd_task_t *)((char *)n - offsetof(kd_task_t, timer)));
        kd_heap_clear(&f->timers);
        kd_idq_clear(&f->fired);
        kd_idq_clear(&f->seen);
        kd_idq_clear(&f->txn_fired);
        kd_idq_clear(&f->poison);
        for (int i = 0; i < 2; i++)
                for (int j = 0; j < 2; j++)
                        if (f->io_fds[i][j] >= 0)
                                close(f->io_fds[i][j]);
        kd_fate_store_destroy(f->fate);
        kdelay_conf_destroy(f->conf);
        free(f);
}

void kd_fwd_log_stats(kd_fwd_t *f, const char *event)
{
        size_t parts = 0, waiting = 0, full = 0;
        for (kd_part_t *p = f->parts; p; p = p->next) {
                parts++;
                waiting += p->state == KD_PART_WAITING;
                full += p->state == KD_PART_FULL;
        }
        const kd_fwd_stats_t *s = &f->stats;
        uint64_t statements = s->claim_statements + s->mark_statements;
        kd_log(f->conf, KDELAY_LOG_INFO,
               "event=%s read=%llu held=%llu hopped=%llu fired=%llu "
               "cancelled=%llu already_fired=%llu dup_copies=%llu "
               "foreign_waits=%llu takeovers=%llu handed_over=%llu dead=%llu "
               "wrong_tier=%llu "
               "produce_retries=%llu held_now=%zu held_max=%zu held_bytes=%lld "
               "claim_queue=%zu inflight=%zu partitions=%zu paused_waiting=%zu "
               "txn_commits=%llu txn_aborts=%llu skipped_done=%llu "
               "rate_limited=%llu "
               "paused_full=%zu claim_statements=%llu mark_statements=%llu "
               "statements_per_fire=%.3f late_max_ms=%lld mysql=%s",
               event, (unsigned long long)s->read, (unsigned long long)s->held,
               (unsigned long long)s->hopped, (unsigned long long)s->fired,
               (unsigned long long)s->cancelled,
               (unsigned long long)s->already_fired,
               (unsigned long long)s->dup_copies,
               (unsigned long long)s->foreign_waits,
               (unsigned long long)s->takeovers,
               (unsigned long long)s->handed_over, (unsigned long long)s->dead,
               (unsigned long long)s->wrong_tier,
               (unsigned long long)s->produce_retries, f->held_cnt, s->held_max,
               (long long)f->held_bytes, f->claimq.len, f->inflight, parts,
               waiting, (unsigned long long)s->txn_commits,
               (unsigned long long)s->txn_aborts,
               (unsigned long long)s->skipped_done,
               (unsigned long long)s->rate_limited, full,
               (unsigned long long)s->claim_statements,
               (unsigned long long)s->mark_statements,
               s->fired ? (double)statements / (double)s->fired : 0.0,
               (long long)s->late_max_ms, f->mysql_down ? "down" : "up");
}
