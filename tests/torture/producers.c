/* SPDX-License-Identifier: Apache-2.0 */
/* Producer threads (producers.h). */
#include <stdlib.h>
#include <string.h>

#include <librdkafka/rdkafka.h>

#include "kd_tiers.h"
#include "kd_util.h"
#include "producers.h"

struct tt_producer_thread {
        tt_producers_t *p; /* the owner */
        int role;          /* 0 sync, 1 async, 2/3 raw */
        size_t *idx;       /* owned: this thread's tasks by schedule time */
        size_t cnt;
        pthread_t thread;
        int started;
};

static int cmp_sched(const void *a, const void *b, void *tasks)
{
        int64_t x = ((const tt_task_t *)tasks)[*(const size_t *)a].sched_at;
        int64_t y = ((const tt_task_t *)tasks)[*(const size_t *)b].sched_at;
        return x < y ? -1 : x > y;
}

static void set_state(tt_task_t *t, int ok)
{
        t->acked_at = kd_now_ms();
        atomic_store(&t->sched_state, ok ? TT_SCHED_ACKED : TT_SCHED_FAILED);
}

/* The task as the library takes it; buffers belong to the caller. */
static void lib_task(const tt_producers_t *p, size_t i, kdelay_task_t *kt,
                     kdelay_header_t *h, char *key, char *value, char *seq)
{
        const tt_task_t *t = &p->tasks[i];
        snprintf(key, 24, "k%zu", i);
        snprintf(value, 32, "torture %zu", i);
        snprintf(seq, 24, "%zu", i);
        h->name = "torture-idx";
        h->value = seq;
        h->value_len = strlen(seq);
        kdelay_task_init(kt);
        kt->topic = p->names->targets[t->target];
        kt->key = key;
        kt->key_len = strlen(key);
        kt->value = value;
        kt->value_len = strlen(value);
        kt->headers = h;
        kt->header_cnt = 1;
        kt->fire_at_ms = t->fire_at;
        kt->id = t->gen_id ? NULL : t->id;
}

static void async_cb(kdelay_err_t err, const char *task_id, const char *errstr,
                     void *opaque)
{
        (void)task_id;
        if (err)
                tt_log("event=schedule_failed via=async id=%s err=%s "
                       "detail=\"%s\"",
                       task_id, kdelay_err_name(err), errstr ? errstr : "");
        set_state(opaque, err == KDELAY_OK);
}

static void run_lib(tt_producer_thread_t *th)
{
        tt_producers_t *p = th->p;
        char errstr[512];
        kdelay_client_t *c = NULL;
        kdelay_conf_t *conf = tt_conf_new(p->names, p->lib_log);
        if (!conf || kdelay_client_new(&c, conf, errstr, sizeof(errstr))) {
                tt_log("event=client_failed role=%d err=\"%s\"", th->role,
                       conf ? errstr : "conf");
                kdelay_conf_destroy(conf);
                for (size_t k = 0; k < th->cnt; k++)
                        set_state(&p->tasks[th->idx[k]], 0);
                return;
        }
        for (size_t k = 0; k < th->cnt; k++) {
                size_t i = th->idx[k];
                tt_task_t *t = &p->tasks[i];
                char key[24], value[32], seq[24], id[KDELAY_ID_MAX + 1];
                kdelay_header_t h;
                kdelay_task_t kt;
                if (tt_sleep_until(t->sched_at, p->stop)) {
                        set_state(t, 0);
                        continue;
                }
                lib_task(p, i, &kt, &h, key, value, seq);
                kdelay_err_t err;
                if (th->role == 0) {
                        err = kdelay_schedule(c, &kt, id, sizeof(id), errstr,
                                              sizeof(errstr));
                        if (t->gen_id && !err)
                                kd_strlcpy(t->id, id, sizeof(t->id));
                        atomic_store(&t->sched_state, TT_SCHED_ENQUEUED);
                        if (err)
                                tt_log("event=schedule_failed via=sync "
                                       "idx=%zu err=%s detail=\"%s\"",
                                       i, kdelay_err_name(err), errstr);
                        set_state(t, err == KDELAY_OK);
                        continue;
                }
                while ((err = kdelay_schedule_async(c, &kt, async_cb, t, id,
                                                    sizeof(id), errstr,
                                                    sizeof(errstr))) &&
                       kdelay_err_is_retriable(err) && !atomic_load(p->stop))
                        kdelay_poll(c, 100); /* local queue full */
                if (err) {
                        tt_log("event=schedule_failed via=async idx=%zu "
                               "err=%s detail=\"%s\"",
                               i, kdelay_err_name(err), errstr);
                        set_state(t, 0);
                        continue;
                }
                if (t->gen_id)
                        kd_strlcpy(t->id, id, sizeof(t->id));
                /* Publishes the id to the verifier. */
                atomic_store(&t->sched_state, TT_SCHED_ENQUEUED);
                kdelay_poll(c, 0);
        }
        if (kdelay_flush(c, 120000))
                tt_log("event=flush_timed_out role=%d outstanding=%d", th->role,
                       kdelay_outq_len(c));
        kdelay_client_destroy(c); /* outstanding tasks: callbacks PURGED */
}

static void raw_dr(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque)
{
        (void)rk;
        (void)opaque;
        tt_task_t *t = m->_private;
        if (m->err)
                tt_log("event=schedule_failed via=raw err=\"%s\"",
                       rd_kafka_err2str(m->err));
        else {
                t->tier_partition = m->partition;
                t->tier_offset = m->offset;
        }
        set_state(t, m->err == 0);
}

static rd_kafka_t *raw_producer(const tt_producers_t *p)
{
        char errstr[512];
        rd_kafka_conf_t *rkc = rd_kafka_conf_new();
        static const char *const props[] = {
            "enable.idempotence", "true",   "linger.ms", "5",
            "message.timeout.ms", "300000", NULL};
        if (rd_kafka_conf_set(rkc, "bootstrap.servers", p->names->brokers,
                              errstr, sizeof(errstr)))
                goto fail;
        for (size_t i = 0; props[i]; i += 2)
                if (rd_kafka_conf_set(rkc, props[i], props[i + 1], errstr,
                                      sizeof(errstr)))
                        goto fail;
        rd_kafka_conf_set_dr_msg_cb(rkc, raw_dr);
        tt_rk_log_to(rkc, p->lib_log);
        rd_kafka_t *rk =
            rd_kafka_new(RD_KAFKA_PRODUCER, rkc, errstr, sizeof(errstr));
        if (rk)
                return rk;
fail:
        rd_kafka_conf_destroy(rkc);
        tt_log("event=producer_failed err=\"%s\"", errstr);
        return NULL;
}

/* The heavy tasks' extra header value (read-only after the first fill,
 * which tt_producers_start does before any thread starts). */
static char tt_ballast[TT_BALLAST_BYTES];

/* A too-large poison task's value (filled like tt_ballast). */
static char tt_poison_value[TT_POISON_VALUE_BYTES];

/* Sends task i as a docs/wire-format.md producer would. 0 when queued. */
static int raw_send(const tt_producers_t *p, rd_kafka_t *rk,
                    const kd_tiers_t *tiers, size_t i)
{
        tt_task_t *t = &p->tasks[i];
        char topic[128], key[24], value[32], seq[24], fire_at[24];
        /* A malformed task, or one for an internal topic, in the smallest
         * tier: dead-lettered when read, a second after it was written. */
        int now_dead = t->malformed || t->poison == TT_POISON_INTERNAL;
        kd_tiers_topic(
            tiers,
            now_dead ? 0 : kd_tiers_choose(tiers, t->fire_at - kd_now_ms()),
            p->names->prefix, topic, sizeof(topic));
        snprintf(key, sizeof(key), "k%zu", i);
        snprintf(value, sizeof(value), "torture %zu", i);
        const char *target = t->poison == TT_POISON_INTERNAL
                                 ? TT_INTERNAL_TOPIC
                                 : p->names->targets[t->target];
        /* Keyless (poison for the compacted target), or too large. */
        size_t key_len = t->poison == TT_POISON_KEYLESS ? 0 : strlen(key);
        char *val = t->poison == TT_POISON_TOO_LARGE ? tt_poison_value : value;
        size_t val_len = t->poison == TT_POISON_TOO_LARGE
                             ? sizeof(tt_poison_value)
                             : strlen(value);
        snprintf(seq, sizeof(seq), "%zu", i);
        snprintf(fire_at, sizeof(fire_at), "%lld", (long long)t->fire_at);
        for (;;) {
                rd_kafka_headers_t *h = rd_kafka_headers_new(5);
                rd_kafka_header_add(h, "torture-idx", -1, seq, -1);
                rd_kafka_header_add(h, KDELAY_HDR_ID, -1, t->id, -1);
                if (t->malformed != TT_MAL_NO_TARGET)
                        rd_kafka_header_add(h, KDELAY_HDR_TARGET, -1, target,
                                            -1);
                rd_kafka_header_add(
                    h, KDELAY_HDR_FIRE_AT, -1,
                    t->malformed == TT_MAL_BAD_FIRE_AT ? "soon" : fire_at, -1);
                rd_kafka_header_add(h, KDELAY_HDR_VERSION, -1,
                                    KDELAY_WIRE_VERSION, -1);
                if (t->heavy)
                        rd_kafka_header_add(h, TT_BALLAST_HEADER, -1,
                                            tt_ballast, sizeof(tt_ballast));
                rd_kafka_resp_err_t err = rd_kafka_producev(
                    rk, RD_KAFKA_V_TOPIC(topic),
                    RD_KAFKA_V_KEY(key_len ? key : NULL, key_len),
                    RD_KAFKA_V_VALUE(val, val_len), RD_KAFKA_V_HEADERS(h),
                    RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
                    RD_KAFKA_V_OPAQUE(t), RD_KAFKA_V_END);
                if (!err)
                        return 0;
                rd_kafka_headers_destroy(h); /* not taken on failure */
                if (err != RD_KAFKA_RESP_ERR__QUEUE_FULL ||
                    atomic_load(p->stop)) {
                        tt_log("event=schedule_failed via=raw idx=%zu "
                               "err=\"%s\"",
                               i, rd_kafka_err2str(err));
                        return -1;
                }
                rd_kafka_poll(rk, 100);
        }
}

static void run_raw(tt_producer_thread_t *th)
{
        tt_producers_t *p = th->p;
        kd_tiers_t tiers;
        rd_kafka_t *rk = raw_producer(p);
        kd_tiers_parse(&tiers, "1s,1m,30m,7d", NULL, 0);
        for (size_t k = 0; k < th->cnt; k++) {
                tt_task_t *t = &p->tasks[th->idx[k]];
                if (!rk || tt_sleep_until(t->sched_at, p->stop) ||
                    raw_send(p, rk, &tiers, th->idx[k])) {
                        set_state(t, 0);
                        continue;
                }
                atomic_store(&t->sched_state, TT_SCHED_ENQUEUED);
                rd_kafka_poll(rk, 0);
        }
        if (!rk)
                return;
        if (rd_kafka_flush(rk, 120000))
                tt_log("event=flush_timed_out role=%d outstanding=%d", th->role,
                       rd_kafka_outq_len(rk));
        /* What is left fails through its delivery report. */
        rd_kafka_purge(rk, RD_KAFKA_PURGE_F_QUEUE | RD_KAFKA_PURGE_F_INFLIGHT);
        rd_kafka_poll(rk, 0);
        rd_kafka_destroy(rk);
}

static void *producer_main(void *arg)
{
        tt_producer_thread_t *th = arg;
        if (th->role < 2)
                run_lib(th);
        else
                run_raw(th);
        tt_log("event=producer_done role=%d tasks=%zu", th->role, th->cnt);
        return NULL;
}

int tt_producers_start(tt_producers_t *p)
{
        memset(tt_ballast, 'b', sizeof(tt_ballast));
        memset(tt_poison_value, 'p', sizeof(tt_poison_value));
        p->threads = calloc(TT_PRODUCER_THREADS, sizeof(*p->threads));
        if (!p->threads)
                return -1;
        for (int r = 0; r < TT_PRODUCER_THREADS; r++) {
                tt_producer_thread_t *th = &p->threads[r];
                th->p = p;
                th->role = r;
                th->idx = malloc((p->n ? p->n : 1) * sizeof(*th->idx));
                if (!th->idx)
                        return -1;
                for (size_t i = 0; i < p->n; i++) {
                        const tt_task_t *t = &p->tasks[i];
                        int role = t->via == TT_VIA_LIB_SYNC ? 0
                                   : t->via == TT_VIA_LIB_ASYNC
                                       ? 1
                                       : 2 + (int)(i & 1);
                        if (role == r)
                                th->idx[th->cnt++] = i;
                }
                qsort_r(th->idx, th->cnt, sizeof(*th->idx), cmp_sched,
                        p->tasks);
        }
        for (int r = 0; r < TT_PRODUCER_THREADS; r++) {
                if (pthread_create(&p->threads[r].thread, NULL, producer_main,
                                   &p->threads[r]))
                        return -1;
                p->threads[r].started = 1;
        }
        return 0;
}

void tt_producers_join(tt_producers_t *p)
{
        if (!p->threads)
                return;
        for (int r = 0; r < TT_PRODUCER_THREADS; r++) {
                if (p->threads[r].started)
                        pthread_join(p->threads[r].thread, NULL);
                free(p->threads[r].idx);
        }
        free(p->threads);
        p->threads = NULL;
}
