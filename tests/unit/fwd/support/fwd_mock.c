/* SPDX-License-Identifier: Apache-2.0 */
/* A forwarder under test on librdkafka's mock cluster and the in-memory
 * fate store (fwd_mock.h). */
#include "fwd_mock.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "kd_conf.h"
#include "kd_tiers.h"
#include "kd_util.h"

#define FM_TIER_PARTITIONS   2
#define FM_TARGET_PARTITIONS 3
#define FM_LOG_MAX           100000

/* --- the log ------------------------------------------------------------ */

/* Each line starts with the wall clock's milliseconds within the minute,
 * for reading a dump against fire-at times. */
static void log_add(fm_log_t *l, const char *fmt, ...)
{
        char line[2048];
        int64_t now = kd_now_ms();
        int n =
            snprintf(line, sizeof(line), "%05lld ", (long long)(now % 60000));
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(line + n, sizeof(line) - (size_t)n, fmt, ap);
        va_end(ap);
        char *copy = strdup(line);
        if (!copy)
                return;
        pthread_mutex_lock(&l->lock);
        if (l->cnt >= FM_LOG_MAX) { /* a runaway: keep the beginning */
                pthread_mutex_unlock(&l->lock);
                free(copy);
                return;
        }
        if (l->cnt == l->cap) {
                size_t cap = l->cap ? l->cap * 2 : 256;
                char **v = realloc(l->lines, cap * sizeof(*v));
                if (!v) {
                        pthread_mutex_unlock(&l->lock);
                        free(copy);
                        return;
                }
                l->lines = v;
                l->cap = cap;
        }
        l->lines[l->cnt++] = copy;
        pthread_mutex_unlock(&l->lock);
}

void fm_note(fm_env_t *e, const char *fmt, ...)
{
        char line[1024];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(line, sizeof(line), fmt, ap);
        va_end(ap);
        log_add(&e->log, "6 test %s", line);
}

/* kdelay's log callback (forwarder, library). */
static void kd_log_cb(kdelay_log_level_t level, const char *line, void *opaque)
{
        fm_env_t *e = opaque;
        log_add(&e->log, "%d %s", (int)level, line);
        void (*on_line)(fm_env_t *, const char *) = atomic_load(&e->on_line);
        if (on_line)
                on_line(e, line);
}

/* librdkafka's, for the handles made here. */
static void rk_log_cb(const rd_kafka_t *rk, int level, const char *fac,
                      const char *buf)
{
        fm_env_t *e = rd_kafka_opaque(rk);
        if (e)
                log_add(&e->log, "%d rdkafka %s fac=%s %s", level,
                        rd_kafka_name(rk), fac, buf);
}

static int line_has(const char *line, const char *n1, const char *n2,
                    const char *n3)
{
        return (!n1 || strstr(line, n1)) && (!n2 || strstr(line, n2)) &&
               (!n3 || strstr(line, n3));
}

int fm_log_count(fm_env_t *e, const char *n1, const char *n2, const char *n3)
{
        int n = 0;
        pthread_mutex_lock(&e->log.lock);
        for (size_t i = 0; i < e->log.cnt; i++)
                n += line_has(e->log.lines[i], n1, n2, n3);
        pthread_mutex_unlock(&e->log.lock);
        return n;
}

int fm_log_wait(fm_env_t *e, int want, const char *n1, const char *n2,
                int timeout_ms)
{
        int64_t end = kd_mono_ms() + timeout_ms;
        while (fm_log_count(e, n1, n2, NULL) < want) {
                if (kd_mono_ms() >= end)
                        return -1;
                kd_sleep_ms(10);
        }
        return 0;
}

void fm_log_dump(fm_env_t *e)
{
        pthread_mutex_lock(&e->log.lock);
        fprintf(stderr, "---- %s: %zu log lines (prefix %s) ----\n", e->name,
                e->log.cnt, e->prefix);
        for (size_t i = 0; i < e->log.cnt; i++)
                fprintf(stderr, "%s\n", e->log.lines[i]);
        fprintf(stderr, "---- end of %s ----\n", e->name);
        pthread_mutex_unlock(&e->log.lock);
}

/* --- plain librdkafka handles --------------------------------------------- */

/* A handle of type on the environment's cluster with extra properties
 * (NULL-ended name, value pairs); logs go to the environment's log. */
static rd_kafka_t *
rk_new(fm_env_t *e, rd_kafka_type_t type, const char *const *props,
       void (*dr)(rd_kafka_t *, const rd_kafka_message_t *, void *), int logs)
{
        char why[512];
        rd_kafka_conf_t *c = rd_kafka_conf_new();
        if (e->brokers[0] && rd_kafka_conf_set(c, "bootstrap.servers",
                                               e->brokers, why, sizeof(why))) {
                fprintf(stderr, "%s: bootstrap.servers: %s\n", e->name, why);
                rd_kafka_conf_destroy(c);
                return NULL;
        }
        for (; props && props[0]; props += 2)
                if (rd_kafka_conf_set(c, props[0], props[1], why,
                                      sizeof(why))) {
                        fprintf(stderr, "%s: %s: %s\n", e->name, props[0], why);
                        rd_kafka_conf_destroy(c);
                        return NULL;
                }
        rd_kafka_conf_set_opaque(c, logs ? e : NULL); /* NULL: dropped */
        rd_kafka_conf_set_log_cb(c, rk_log_cb);
        if (dr)
                rd_kafka_conf_set_dr_msg_cb(c, dr);
        rd_kafka_t *rk = rd_kafka_new(type, c, why, sizeof(why));
        if (!rk) {
                fprintf(stderr, "%s: rd_kafka_new: %s\n", e->name, why);
                rd_kafka_conf_destroy(c);
        }
        return rk;
}

/* --- destroying mock clusters in the background ----------------------------
 */

/* rd_kafka_mock_cluster_destroy takes a second (its thread's poll): done in
 * a thread of its own per cluster, joined by fm_reap. */
typedef struct reap {
        rd_kafka_mock_cluster_t *mock;
        rd_kafka_t *rk;
} reap_t;

#define FM_REAP_MAX 64
static pthread_mutex_t reap_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_t reap_threads[FM_REAP_MAX];
static size_t reap_cnt;

static void *reap_main(void *arg)
{
        reap_t *r = arg;
        if (r->mock)
                rd_kafka_mock_cluster_destroy(r->mock);
        if (r->rk)
                rd_kafka_destroy(r->rk);
        free(r);
        return NULL;
}

static void reap_later(rd_kafka_mock_cluster_t *mock, rd_kafka_t *rk)
{
        reap_t *r = malloc(sizeof(*r));
        if (r) {
                r->mock = mock;
                r->rk = rk;
                pthread_mutex_lock(&reap_lock);
                int ok = reap_cnt < FM_REAP_MAX &&
                         !pthread_create(&reap_threads[reap_cnt], NULL,
                                         reap_main, r);
                if (ok)
                        reap_cnt++;
                pthread_mutex_unlock(&reap_lock);
                if (ok)
                        return;
                reap_main(r);
                return;
        }
        if (mock)
                rd_kafka_mock_cluster_destroy(mock);
        if (rk)
                rd_kafka_destroy(rk);
}

void fm_reap(void)
{
        pthread_mutex_lock(&reap_lock);
        for (size_t i = 0; i < reap_cnt; i++)
                pthread_join(reap_threads[i], NULL);
        reap_cnt = 0;
        pthread_mutex_unlock(&reap_lock);
}

/* --- the environment ------------------------------------------------------ */

static void *run_thread(void *arg)
{
        fm_env_t *e = arg;
        e->run_err = kd_fwd_run(e->fwd, &e->stop, e->wake[0]);
        return NULL;
}

void fm_tier_topic(const fm_env_t *e, size_t idx, char *buf, size_t size)
{
        kd_tiers_topic(&e->conf->tiers, idx, e->conf->topic_prefix, buf, size);
}

static int conf_set(fm_env_t *e, kdelay_conf_t *c, const char *name,
                    const char *value)
{
        char errstr[512];
        if (kdelay_conf_set(c, name, value, errstr, sizeof(errstr))) {
                fprintf(stderr, "%s: %s=%s: %s\n", e->name, name, value,
                        errstr);
                return -1;
        }
        return 0;
}

/* Creates topic; with several brokers its partitions are led by broker
 * `leader`. */
static int topic_create(fm_env_t *e, const char *topic, int partitions,
                        int leader)
{
        rd_kafka_resp_err_t err =
            rd_kafka_mock_topic_create(e->mock, topic, partitions, 1);
        for (int p = 0; !err && leader > 0 && p < partitions; p++)
                err = rd_kafka_mock_partition_set_leader(e->mock, topic, p,
                                                         leader);
        if (err) {
                fprintf(stderr, "%s: create %s: %s\n", e->name, topic,
                        rd_kafka_err2str(err));
                return -1;
        }
        return 0;
}

int fm_start(fm_env_t *e, const char *name, const char *delivery,
             const char *const *overrides, int brokers)
{
        static atomic_int seq;
        memset(e, 0, sizeof(*e));
        pthread_mutex_init(&e->log.lock, NULL);
        e->wake[0] = e->wake[1] = -1;
        e->started = 1;
        kd_strlcpy(e->name, name, sizeof(e->name));
        snprintf(e->prefix, sizeof(e->prefix), "fm%d_%d", (int)getpid(),
                 atomic_fetch_add(&seq, 1) + 1);
        snprintf(e->group, sizeof(e->group), "%s-group", e->prefix);
        snprintf(e->target, sizeof(e->target), "%s.target", e->prefix);
        snprintf(e->dead, sizeof(e->dead), "%s.dead", e->prefix);
        e->exactly_once = !strcmp(delivery, "exactly_once");

        /* The mock cluster lives on a handle of its own, whose logs are
         * dropped: it is destroyed in the background (fm_reap), maybe
         * after the environment's log. */
        e->mock_rk = rk_new(e, RD_KAFKA_PRODUCER, NULL, NULL, 0);
        if (!e->mock_rk)
                goto fail;
        e->mock = rd_kafka_mock_cluster_new(e->mock_rk, brokers);
        if (!e->mock) {
                fprintf(stderr, "%s: no mock cluster\n", e->name);
                goto fail;
        }
        kd_strlcpy(e->brokers, rd_kafka_mock_cluster_bootstraps(e->mock),
                   sizeof(e->brokers));

        kdelay_conf_t *c = kdelay_conf_new();
        if (!c)
                goto fail;
        kdelay_conf_set_log_cb(c, kd_log_cb, KDELAY_LOG_DEBUG, e);
        const char *const props[] = {"brokers",
                                     e->brokers,
                                     "topic_prefix",
                                     e->prefix,
                                     "tiers",
                                     "1s,5s",
                                     "forwarder.hold_horizon",
                                     "2s",
                                     "forwarder.claim_ahead",
                                     "100ms",
                                     "forwarder.lookahead",
                                     "50ms",
                                     "forwarder.commit_interval",
                                     "100ms",
                                     "forwarder.stats_interval",
                                     "0s",
                                     "forwarder.shutdown_timeout",
                                     "5s",
                                     "forwarder.instance",
                                     "fm1",
                                     "forwarder.group_id",
                                     e->group,
                                     "forwarder.delivery",
                                     delivery,
                                     NULL};
        for (const char *const *kv = props; kv[0]; kv += 2)
                if (conf_set(e, c, kv[0], kv[1])) {
                        kdelay_conf_destroy(c);
                        goto fail;
                }
        for (const char *const *o = overrides; o && *o; o++) {
                char errstr[512];
                if (kdelay_conf_set_pair(c, *o, errstr, sizeof(errstr))) {
                        fprintf(stderr, "%s: %s: %s\n", e->name, *o, errstr);
                        kdelay_conf_destroy(c);
                        goto fail;
                }
        }
        if (getenv("FM_RDKAFKA_DEBUG")) /* development: librdkafka's debug */
                kdelay_conf_set_kafka(c, "debug", getenv("FM_RDKAFKA_DEBUG"),
                                      NULL, 0);
        e->conf = kdelay_conf_dup(c);
        if (!e->conf) {
                kdelay_conf_destroy(c);
                goto fail;
        }

        for (size_t i = 0; i < e->conf->tiers.cnt; i++) {
                char topic[256];
                fm_tier_topic(e, i, topic, sizeof(topic));
                if (topic_create(e, topic, FM_TIER_PARTITIONS,
                                 brokers > 1 ? 1 : 0)) {
                        kdelay_conf_destroy(c);
                        goto fail;
                }
        }
        if (topic_create(e, e->dead, 1, brokers > 1 ? 1 : 0) ||
            topic_create(e, e->target, FM_TARGET_PARTITIONS,
                         brokers > 1 ? 2 : 0)) {
                kdelay_conf_destroy(c);
                goto fail;
        }

        kd_fate_store_t *store = NULL;
        char errstr[512];
        if (kd_fate_mem_new(&store)) {
                kdelay_conf_destroy(c);
                goto fail;
        }
        if (kd_fwd_new(&e->fwd, c, store, NULL, errstr, sizeof(errstr))) {
                fprintf(stderr, "%s: kd_fwd_new: %s\n", e->name, errstr);
                kd_fate_store_destroy(store);
                kdelay_conf_destroy(c);
                goto fail;
        }
        e->store = store; /* the forwarder's now */

        if (pipe2(e->wake, O_CLOEXEC | O_NONBLOCK)) {
                e->wake[0] = e->wake[1] = -1;
                goto fail;
        }
        if (pthread_create(&e->thread, NULL, run_thread, e)) {
                fprintf(stderr, "%s: pthread_create failed\n", e->name);
                goto fail;
        }
        e->running = 1;
        return 0;
fail:
        fm_destroy(e);
        return -1;
}

/* Lines from e->log_mark on with n1 and not n2. */
static int count_since_mark(fm_env_t *e, const char *n1, const char *n2)
{
        int n = 0;
        pthread_mutex_lock(&e->log.lock);
        for (size_t i = e->log_mark; i < e->log.cnt; i++)
                n +=
                    strstr(e->log.lines[i], n1) && !strstr(e->log.lines[i], n2);
        pthread_mutex_unlock(&e->log.lock);
        return n;
}

int fm_wait_assigned(fm_env_t *e, int timeout_ms)
{
        /* One line per assignment; "count=0" is an empty one. */
        int64_t end = kd_mono_ms() + timeout_ms;
        for (;;) {
                if (count_since_mark(e, "event=partitions_assigned",
                                     "count=0 ") > 0)
                        return 0;
                if (!e->running || kd_mono_ms() >= end)
                        return -1;
                kd_sleep_ms(20);
        }
}

kdelay_err_t fm_stop(fm_env_t *e)
{
        if (e->running) {
                e->stop = 1;
                if (write(e->wake[1], "s", 1) < 0) {
                        /* the loop also sees stop within a second */
                }
                pthread_join(e->thread, NULL);
                e->running = 0;
        }
        return e->run_err;
}

int fm_restart(fm_env_t *e, const char *const *ids, size_t n)
{
        char errstr[512];
        kd_fate_store_t *store = NULL;
        kdelay_conf_t *c = kdelay_conf_dup(e->conf);
        if (!c || !e->fwd || e->running || kd_fate_mem_new(&store)) {
                kdelay_conf_destroy(c);
                return -1;
        }
        for (size_t i = 0; i < n; i++) {
                kd_fate_mem_row_t row = fm_fate(e, ids[i]);
                if (row.fate != KDELAY_FATE_UNDECIDED &&
                    kd_fate_mem_put(store, ids[i], strlen(ids[i]), &row)) {
                        kd_fate_store_destroy(store);
                        kdelay_conf_destroy(c);
                        return -1;
                }
        }
        kd_fwd_destroy(e->fwd);
        e->fwd = NULL;
        e->store = NULL;
        pthread_mutex_lock(&e->log.lock);
        e->log_mark = e->log.cnt;
        pthread_mutex_unlock(&e->log.lock);
        log_add(&e->log, "6 fm_restart: a new forwarder, same group");
        if (kd_fwd_new(&e->fwd, c, store, NULL, errstr, sizeof(errstr))) {
                fprintf(stderr, "%s: kd_fwd_new: %s\n", e->name, errstr);
                kd_fate_store_destroy(store);
                kdelay_conf_destroy(c);
                return -1;
        }
        e->store = store;
        e->stop = 0;
        e->run_err = KDELAY_OK;
        char b;
        while (read(e->wake[0], &b, 1) > 0)
                ; /* the last stop's byte */
        if (pthread_create(&e->thread, NULL, run_thread, e))
                return -1;
        e->running = 1;
        return 0;
}

void fm_destroy(fm_env_t *e)
{
        if (!e->started)
                return;
        fm_stop(e);
        if (e->fwd)
                kd_fwd_destroy(e->fwd); /* its conf and store too */
        e->fwd = NULL;
        e->store = NULL;
        kdelay_conf_destroy(e->conf);
        e->conf = NULL;
        if (e->mock || e->mock_rk)
                reap_later(e->mock, e->mock_rk);
        e->mock = NULL;
        e->mock_rk = NULL;
        for (int i = 0; i < 2; i++)
                if (e->wake[i] >= 0)
                        close(e->wake[i]);
        e->wake[0] = e->wake[1] = -1;
        for (size_t i = 0; i < e->log.cnt; i++)
                free(e->log.lines[i]);
        free(e->log.lines);
        e->log.lines = NULL;
        e->log.cnt = e->log.cap = 0;
        pthread_mutex_destroy(&e->log.lock);
        e->started = 0;
}

int64_t fm_metric(const fm_env_t *e, kd_metric_id_t id)
{
        return e->fwd ? kd_metric_get(&e->fwd->metrics, id) : -1;
}

/* --- scheduling --------------------------------------------------------- */

static void schedule_cb(kdelay_err_t err, const char *task_id,
                        const char *errstr, void *opaque)
{
        (void)task_id;
        (void)errstr;
        *(kdelay_err_t *)opaque = err;
}

int fm_schedule(fm_env_t *e, fm_task_t *tasks, size_t n)
{
        kdelay_conf_t *c = kdelay_conf_dup(e->conf);
        kdelay_client_t *client = NULL;
        char errstr[512];
        int rc = -1;
        kdelay_err_t *res = calloc(n ? n : 1, sizeof(*res));
        if (!c || !res) {
                kdelay_conf_destroy(c);
                free(res);
                return -1;
        }
        if (kdelay_client_new(&client, c, errstr, sizeof(errstr))) {
                fprintf(stderr, "%s: kdelay_client_new: %s\n", e->name, errstr);
                kdelay_conf_destroy(c);
                free(res);
                return -1;
        }
        int64_t now = kd_now_ms();
        size_t accepted = 0;
        for (size_t i = 0; i < n; i++) {
                fm_task_t *t = &tasks[i];
                kdelay_task_t kt;
                kdelay_task_init(&kt);
                if (!t->fire_at_ms)
                        t->fire_at_ms = now + t->delay_ms;
                kt.topic = t->target ? t->target : e->target;
                kt.key = t->key;
                kt.key_len = t->key_len;
                kt.value = t->value;
                kt.value_len = t->value_len;
                kt.headers = t->headers;
                kt.header_cnt = t->header_cnt;
                kt.fire_at_ms = t->fire_at_ms;
                kt.id = t->id;
                res[i] = KDELAY_ERR_TIMED_OUT; /* until its callback */
                kdelay_err_t err =
                    kdelay_schedule_async(client, &kt, schedule_cb, &res[i],
                                          NULL, 0, errstr, sizeof(errstr));
                if (err) {
                        fprintf(stderr, "%s: schedule %s: %s\n", e->name, t->id,
                                errstr);
                        res[i] = err;
                        continue;
                }
                accepted++;
        }
        if (kdelay_flush(client, 10000))
                fprintf(stderr, "%s: schedule: flush timed out\n", e->name);
        kdelay_client_destroy(client); /* serves what is left */
        rc = accepted == n ? 0 : -1;
        for (size_t i = 0; i < n; i++)
                if (res[i]) {
                        fprintf(stderr, "%s: task %s not acknowledged: %s\n",
                                e->name, tasks[i].id, kdelay_err_str(res[i]));
                        rc = -1;
                }
        free(res);
        return rc;
}

static void raw_dr_cb(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque)
{
        (void)rk;
        (void)opaque;
        *(rd_kafka_resp_err_t *)m->_private = m->err;
}

int fm_produce_raw(fm_env_t *e, const char *topic, int32_t partition,
                   const void *key, size_t key_len, const void *value,
                   size_t value_len, const char *const *headers)
{
        static const char *const props[] = {"acks", "all", "linger.ms", "0",
                                            NULL};
        rd_kafka_t *rk = rk_new(e, RD_KAFKA_PRODUCER, props, raw_dr_cb, 1);
        if (!rk)
                return -1;
        rd_kafka_headers_t *h = rd_kafka_headers_new(8);
        for (; headers && headers[0]; headers += 2)
                rd_kafka_header_add(h, headers[0], -1, headers[1], -1);
        rd_kafka_resp_err_t dr = RD_KAFKA_RESP_ERR__IN_PROGRESS;
        rd_kafka_resp_err_t err = rd_kafka_producev(
            rk, RD_KAFKA_V_TOPIC(topic), RD_KAFKA_V_PARTITION(partition),
            RD_KAFKA_V_KEY(key, key_len),
            RD_KAFKA_V_VALUE((void *)value, value_len), RD_KAFKA_V_HEADERS(h),
            RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_OPAQUE(&dr),
            RD_KAFKA_V_END);
        if (err) {
                rd_kafka_headers_destroy(h);
                fprintf(stderr, "%s: producev %s: %s\n", e->name, topic,
                        rd_kafka_err2str(err));
                rd_kafka_destroy(rk);
                return -1;
        }
        rd_kafka_flush(rk, 10000);
        rd_kafka_destroy(rk);
        if (dr) {
                fprintf(stderr, "%s: raw record to %s: %s\n", e->name, topic,
                        rd_kafka_err2str(dr));
                return -1;
        }
        return 0;
}

/* --- reading back ------------------------------------------------------- */

static int partition_cnt(rd_kafka_t *rk, const char *topic)
{
        rd_kafka_topic_t *rkt = rd_kafka_topic_new(rk, topic, NULL);
        const struct rd_kafka_metadata *md = NULL;
        int cnt = -1;
        if (rkt && !rd_kafka_metadata(rk, 0, rkt, &md, 5000)) {
                if (md->topic_cnt == 1 && !md->topics[0].err)
                        cnt = md->topics[0].partition_cnt;
                rd_kafka_metadata_destroy(md);
        }
        if (rkt)
                rd_kafka_topic_destroy(rkt);
        return cnt;
}

int fm_consume(fm_env_t *e, const char *topic, fm_msg_t **msgsp)
{
        static const char *const props[] = {"enable.partition.eof",
                                            "true",
                                            "isolation.level",
                                            "read_committed",
                                            "auto.offset.reset",
                                            "earliest",
                                            "fetch.wait.max.ms",
                                            "50",
                                            NULL};
        *msgsp = NULL;
        /* A group id (never joined: assign only) lets consumer_poll serve
         * the fetched messages. */
        char group[128];
        snprintf(group, sizeof(group), "%s-reader", e->prefix);
        const char *const with_group[] = {
            props[0], props[1], props[2],   props[3], props[4], props[5],
            props[6], props[7], "group.id", group,    NULL};
        rd_kafka_t *rk = rk_new(e, RD_KAFKA_CONSUMER, with_group, NULL, 1);
        if (!rk)
                return -1;
        int parts = partition_cnt(rk, topic);
        if (parts <= 0 || parts > 64) {
                fprintf(stderr, "%s: no metadata for %s\n", e->name, topic);
                rd_kafka_destroy(rk);
                return -1;
        }
        rd_kafka_topic_partition_list_t *l =
            rd_kafka_topic_partition_list_new(parts);
        for (int p = 0; p < parts; p++)
                rd_kafka_topic_partition_list_add(l, topic, p)->offset =
                    RD_KAFKA_OFFSET_BEGINNING;
        rd_kafka_assign(rk, l);
        rd_kafka_topic_partition_list_destroy(l);
        int eof[64] = {0}, eofs = 0, cnt = 0, cap = 0, ok = 0;
        fm_msg_t *msgs = NULL;
        int64_t end = kd_mono_ms() + 10000;
        while (kd_mono_ms() < end) {
                rd_kafka_message_t *m = rd_kafka_consumer_poll(rk, 100);
                if (!m)
                        continue;
                if (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF) {
                        fm_note(e, "read %s [%d] end at offset %lld", topic,
                                (int)m->partition, (long long)m->offset);
                        if (m->partition >= 0 && m->partition < parts &&
                            !eof[m->partition]) {
                                eof[m->partition] = 1;
                                eofs++;
                        }
                        rd_kafka_message_destroy(m);
                        if (eofs == parts) {
                                ok = 1;
                                break;
                        }
                        continue;
                }
                if (m->err) {
                        log_add(&e->log, "3 fm_consume %s: %s", topic,
                                rd_kafka_message_errstr(m));
                        rd_kafka_message_destroy(m);
                        continue;
                }
                if (cnt == cap) {
                        int ncap = cap ? cap * 2 : 32;
                        fm_msg_t *v = realloc(msgs, (size_t)ncap * sizeof(*v));
                        if (!v) {
                                rd_kafka_message_destroy(m);
                                break;
                        }
                        msgs = v;
                        cap = ncap;
                }
                fm_msg_t *o = &msgs[cnt++];
                memset(o, 0, sizeof(*o));
                o->partition = m->partition;
                o->offset = m->offset;
                o->key = kd_memdup(m->key, m->key_len);
                o->key_len = m->key_len;
                o->value = kd_memdup(m->payload, m->len);
                o->value_len = m->len;
                o->ts = rd_kafka_message_timestamp(m, &o->tstype);
                rd_kafka_headers_t *h = NULL;
                if (!rd_kafka_message_headers(m, &h) && h)
                        o->headers = rd_kafka_headers_copy(h);
                char idbuf[160];
                const char *id =
                    fm_header_str(o, "kdelay-id", idbuf, sizeof(idbuf));
                fm_note(e, "read %s [%d] offset %lld ts %lld id %s", topic,
                        (int)o->partition, (long long)o->offset,
                        (long long)o->ts, id ? id : "-");
                if (m->partition >= 0 && m->partition < parts &&
                    eof[m->partition]) {
                        eof[m->partition] = 0;
                        eofs--;
                }
                rd_kafka_message_destroy(m);
        }
        rd_kafka_consumer_close(rk);
        rd_kafka_destroy(rk);
        if (!ok) {
                fprintf(stderr, "%s: %s not read to its end\n", e->name, topic);
                fm_msgs_free(msgs, cnt);
                return -1;
        }
        *msgsp = msgs;
        return cnt;
}

void fm_msgs_free(fm_msg_t *msgs, int cnt)
{
        for (int i = 0; i < cnt; i++) {
                free(msgs[i].key);
                free(msgs[i].value);
                if (msgs[i].headers)
                        rd_kafka_headers_destroy(msgs[i].headers);
        }
        free(msgs);
}

int fm_header(const fm_msg_t *m, const char *name, int idx, const void **valp)
{
        const void *v = NULL;
        size_t size = 0;
        if (!m->headers ||
            rd_kafka_header_get(m->headers, (size_t)idx, name, &v, &size))
                return -1;
        *valp = v;
        return (int)size;
}

int fm_header_cnt(const fm_msg_t *m, const char *name)
{
        int n = 0;
        const void *v;
        while (fm_header(m, name, n, &v) >= 0)
                n++;
        return n;
}

const char *fm_header_str(const fm_msg_t *m, const char *name, char *buf,
                          size_t size)
{
        const void *v;
        int len = fm_header(m, name, 0, &v);
        if (len < 0 || (size_t)len >= size)
                return NULL;
        if (len)
                memcpy(buf, v, (size_t)len);
        buf[len] = '\0';
        return buf;
}

/* --- fates and offsets ---------------------------------------------------- */

kd_fate_mem_row_t fm_fate_raw(fm_env_t *e, const char *id)
{
        kd_fate_mem_row_t row;
        memset(&row, 0, sizeof(row));
        row.fate = KDELAY_FATE_UNDECIDED;
        if (kd_fate_mem_get(e->store, id, strlen(id), &row))
                row.fate = KDELAY_FATE_UNDECIDED;
        return row;
}

kd_fate_mem_row_t fm_fate(fm_env_t *e, const char *id)
{
        kd_fate_mem_row_t row = fm_fate_raw(e, id);
        char marks[8] = "";
        kdelay_status_t st;
        /* Only under runs: a status is a call of the store, which would
         * take a failure a case injected for the forwarder. */
        if (row.fate == KDELAY_FATE_FIRING &&
            kdelay_conf_get(e->conf, "forwarder.fate_marks", marks,
                            sizeof(marks)) == KDELAY_OK &&
            !strcmp(marks, "runs") &&
            kd_fate_status(e->store, id, strlen(id), &st, NULL, 0) == KDELAY_OK)
                row.fate = st.fate;
        return row;
}

int fm_wait_fates(fm_env_t *e, const char *const *ids, size_t n,
                  kdelay_fate_t fate, int timeout_ms)
{
        int64_t end = kd_mono_ms() + timeout_ms;
        for (;;) {
                size_t ok = 0;
                for (size_t i = 0; i < n; i++)
                        ok += fm_fate(e, ids[i]).fate == fate;
                if (ok == n)
                        return 0;
                if (kd_mono_ms() >= end)
                        return -1;
                kd_sleep_ms(20);
        }
}

int fm_watermarks(fm_env_t *e, const char *topic, int cnt, int64_t *hwm)
{
        rd_kafka_t *rk = rk_new(e, RD_KAFKA_CONSUMER, NULL, NULL, 1);
        if (!rk)
                return -1;
        int rc = 0;
        for (int p = 0; p < cnt && !rc; p++) {
                int64_t lo;
                if (rd_kafka_query_watermark_offsets(rk, topic, p, &lo, &hwm[p],
                                                     5000))
                        rc = -1;
        }
        rd_kafka_destroy(rk);
        return rc;
}

int fm_committed(fm_env_t *e, const char *topic, int cnt, int64_t *offs)
{
        const char *const props[] = {"group.id", e->group, NULL};
        rd_kafka_t *rk = rk_new(e, RD_KAFKA_CONSUMER, props, NULL, 1);
        if (!rk)
                return -1;
        rd_kafka_topic_partition_list_t *l =
            rd_kafka_topic_partition_list_new(cnt);
        for (int p = 0; p < cnt; p++)
                rd_kafka_topic_partition_list_add(l, topic, p);
        rd_kafka_resp_err_t err = rd_kafka_committed(rk, l, 5000);
        int rc = err ? -1 : 0;
        for (int p = 0; p < cnt && !rc; p++) {
                if (l->elems[p].err)
                        rc = -1;
                offs[p] = l->elems[p].offset;
        }
        rd_kafka_topic_partition_list_destroy(l);
        rd_kafka_destroy(rk);
        return rc;
}
