/* SPDX-License-Identifier: Apache-2.0 */
/* Integration: schedule through libkdelay against the real broker, read
 * the records back from the tier topics with a plain consumer. */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "it_env.h"
#include "kd_conf.h"
#include "kd_test.h"
#include "kd_topics.h"
#include "kd_util.h"

static char prefix[64];
static kdelay_client_t *client;

static int suite_init(void)
{
        char errstr[512];
        kd_topic_report_t reports[KD_TOPICS_MAX];
        size_t n;
        if (it_env_init())
                return -1;
        it_unique(prefix, sizeof(prefix), "itsched");
        kdelay_conf_t *conf = it_conf_new(prefix, NULL);
        if (!conf ||
            kd_topics_create(conf, 2, 1, reports, &n, errstr, sizeof(errstr))) {
                fprintf(stderr, "topics create: %s\n", errstr);
                kdelay_conf_destroy(conf);
                return -1;
        }
        if (kdelay_client_new(&client, conf, errstr, sizeof(errstr))) {
                fprintf(stderr, "client: %s\n", errstr);
                kdelay_conf_destroy(conf);
                return -1;
        }
        return 0;
}

static int suite_cleanup(void)
{
        kdelay_client_destroy(client);
        return 0;
}

static void tier_topic(const char *tier, char *buf, size_t size)
{
        snprintf(buf, size, "%s.tier.%s", prefix, tier);
}

typedef struct expect {
        int64_t delay_ms;
        const char *tier;
        char id[KDELAY_ID_MAX + 1];
        int64_t before, after; /* wall clock around the schedule call */
        int seen;
} expect_t;

/* Delays away from tier boundaries (those are unit-tested): the remaining
 * time at produce is a few ms below the delay. */
static void test_sync_schedule_lands_in_right_tier(void)
{
        expect_t ex[] = {
            {0, "1s", "", 0, 0, 0},
            {500, "1s", "", 0, 0, 0},
            {10000, "1s", "", 0, 0, 0},
            {59000, "30s", "", 0, 0, 0},
            {61000, "1m", "", 0, 0, 0},
            {95000, "1m30s", "", 0, 0, 0}, /* a tier named in two units */
            {29 * 60000, "20m", "", 0, 0, 0},
            {31 * 60000, "30m", "", 0, 0, 0},
            {6LL * 86400000, "2d12h", "", 0, 0, 0},
            {8LL * 86400000, "7d", "", 0, 0, 0},
            {KDELAY_MAX_DELAY_MS, "7d", "", 0, 0, 0},
        };
        size_t n = sizeof(ex) / sizeof(ex[0]);
        kdelay_header_t hdrs[] = {{"trace", "abc", 3},
                                  {"bin", "\x00\x01\xff", 3},
                                  {"empty", NULL, 0}};
        char errstr[512];
        for (size_t i = 0; i < n; i++) {
                kdelay_task_t t;
                char key[32], value[32];
                kdelay_task_init(&t);
                snprintf(key, sizeof(key), "key-%zu", i);
                snprintf(value, sizeof(value), "value-%zu", i);
                t.topic = "orders.due";
                t.key = key;
                t.key_len = strlen(key);
                t.value = value;
                t.value_len = strlen(value);
                t.headers = hdrs;
                t.header_cnt = 3;
                t.delay_ms = ex[i].delay_ms;
                ex[i].before = kd_now_ms();
                kdelay_err_t err =
                    kdelay_schedule(client, &t, ex[i].id, sizeof(ex[i].id),
                                    errstr, sizeof(errstr));
                ex[i].after = kd_now_ms();
                CU_ASSERT_EQUAL_FATAL(err, KDELAY_OK);
                CU_ASSERT_EQUAL(strlen(ex[i].id), KDELAY_ID_GEN_LEN);
        }
        /* The default ladder. */
        const char *tiers[] = {"1s",  "30s", "1m", "1m30s", "2m",
                               "3m",  "5m",  "8m", "12m",   "20m",
                               "30m", "45m", "1h", "1h30m", "4h",
                               "6h",  "16h", "1d", "2d12h", "7d"};
        enum { NT = sizeof(tiers) / sizeof(tiers[0]) };
        char topics[NT][128];
        const char *tl[NT + 1];
        for (int i = 0; i < NT; i++) {
                tier_topic(tiers[i], topics[i], sizeof(topics[i]));
                tl[i] = topics[i];
        }
        tl[NT] = NULL;
        it_msg_t msgs[32];
        size_t got = it_consume(tl, msgs, n, 30000);
        CU_ASSERT_EQUAL_FATAL(got, n);
        for (size_t k = 0; k < got; k++) {
                it_msg_t *m = &msgs[k];
                char *id = it_header(m, KDELAY_HDR_ID);
                char *target = it_header(m, KDELAY_HDR_TARGET);
                char *fire_at = it_header(m, KDELAY_HDR_FIRE_AT);
                char *v = it_header(m, KDELAY_HDR_VERSION);
                CU_ASSERT_PTR_NOT_NULL_FATAL(id);
                expect_t *e = NULL;
                for (size_t i = 0; i < n; i++)
                        if (!strcmp(ex[i].id, id))
                                e = &ex[i];
                CU_ASSERT_PTR_NOT_NULL_FATAL(e);
                e->seen++;
                char want_topic[128];
                tier_topic(e->tier, want_topic, sizeof(want_topic));
                CU_ASSERT_STRING_EQUAL(m->topic, want_topic);
                CU_ASSERT_STRING_EQUAL(target, "orders.due");
                CU_ASSERT_STRING_EQUAL(v, "1");
                long long fa = atoll(fire_at);
                CU_ASSERT(fa >= e->before + e->delay_ms);
                CU_ASSERT(fa <= e->after + e->delay_ms);
                size_t i = (size_t)(e - ex);
                char key[32], value[32];
                snprintf(key, sizeof(key), "key-%zu", i);
                snprintf(value, sizeof(value), "value-%zu", i);
                CU_ASSERT_EQUAL(m->key_len, strlen(key));
                CU_ASSERT(m->key && !memcmp(m->key, key, m->key_len));
                CU_ASSERT_EQUAL(m->len, strlen(value));
                CU_ASSERT(m->value && !memcmp(m->value, value, m->len));
                /* User headers, in order, before the kdelay ones. */
                rd_kafka_headers_t *h = m->headers;
                CU_ASSERT_PTR_NOT_NULL_FATAL(h);
                CU_ASSERT_EQUAL(rd_kafka_header_cnt(h), 7);
                const char *name;
                const void *hv;
                size_t hl;
                CU_ASSERT_EQUAL(rd_kafka_header_get_all(h, 0, &name, &hv, &hl),
                                0);
                CU_ASSERT_STRING_EQUAL(name, "trace");
                CU_ASSERT(hl == 3 && !memcmp(hv, "abc", 3));
                CU_ASSERT_EQUAL(rd_kafka_header_get_all(h, 1, &name, &hv, &hl),
                                0);
                CU_ASSERT_STRING_EQUAL(name, "bin");
                CU_ASSERT(hl == 3 && !memcmp(hv, "\x00\x01\xff", 3));
                CU_ASSERT_EQUAL(rd_kafka_header_get_all(h, 2, &name, &hv, &hl),
                                0);
                CU_ASSERT_STRING_EQUAL(name, "empty");
                CU_ASSERT_EQUAL(hl, 0);
                /* The broker stamped the append time. */
                int64_t ts = m->ts;
                CU_ASSERT_EQUAL(m->tstype, RD_KAFKA_TIMESTAMP_LOG_APPEND_TIME);
                CU_ASSERT(ts >= e->before - 1000 && ts <= kd_now_ms());
                free(id);
                free(target);
                free(fire_at);
                free(v);
                it_msg_free(m);
        }
        for (size_t i = 0; i < n; i++)
                CU_ASSERT_EQUAL(ex[i].seen, 1);
}

static void test_absolute_time_and_given_id(void)
{
        kdelay_task_t t;
        char id[KDELAY_ID_MAX + 1], errstr[256], want_id[64];
        kdelay_task_init(&t);
        it_unique(want_id, sizeof(want_id), "order-ü-");
        int64_t at = kd_now_ms() + 2 * 3600000LL;
        t.topic = "orders.due";
        t.value = "v";
        t.value_len = 1;
        t.fire_at_ms = at;
        t.id = want_id;
        CU_ASSERT_EQUAL_FATAL(
            kdelay_schedule(client, &t, id, sizeof(id), errstr, sizeof(errstr)),
            KDELAY_OK);
        CU_ASSERT_STRING_EQUAL(id, want_id);
        char topic[128];
        tier_topic("1h30m", topic, sizeof(topic)); /* a little under 2h */
        const char *tl[] = {topic, NULL};
        it_msg_t msgs[64];
        size_t got = it_consume(tl, msgs, 1, 15000);
        int found = 0;
        for (size_t k = 0; k < got; k++) {
                char *hid = it_header(&msgs[k], KDELAY_HDR_ID);
                char *fa = it_header(&msgs[k], KDELAY_HDR_FIRE_AT);
                if (hid && !strcmp(hid, want_id)) {
                        found++;
                        CU_ASSERT_EQUAL(atoll(fa), at);
                        CU_ASSERT_PTR_NULL(msgs[k].key);
                }
                free(hid);
                free(fa);
                it_msg_free(&msgs[k]);
        }
        CU_ASSERT_EQUAL(found, 1);
}

static atomic_int cb_ok, cb_fail;

static void on_delivery(kdelay_err_t err, const char *id, const char *errstr,
                        void *opaque)
{
        (void)errstr;
        CU_ASSERT_PTR_NOT_NULL(id);
        CU_ASSERT_PTR_EQUAL(opaque, &cb_ok);
        if (err)
                atomic_fetch_add(&cb_fail, 1);
        else
                atomic_fetch_add(&cb_ok, 1);
}

static void test_async_schedule_and_flush(void)
{
        enum { N = 300 };
        static char ids[N][KDELAY_ID_MAX + 1];
        char errstr[256];
        atomic_store(&cb_ok, 0);
        atomic_store(&cb_fail, 0);
        for (int i = 0; i < N; i++) {
                kdelay_task_t t;
                kdelay_task_init(&t);
                t.topic = "async.target";
                t.value = "payload";
                t.value_len = 7;
                t.delay_ms = 1000LL * 3600 * 24 * 8; /* 7d tier */
                CU_ASSERT_EQUAL_FATAL(
                    kdelay_schedule_async(client, &t, on_delivery, &cb_ok,
                                          ids[i], sizeof(ids[i]), errstr,
                                          sizeof(errstr)),
                    KDELAY_OK);
                if (i > 0)
                        CU_ASSERT(strcmp(ids[i - 1], ids[i]) < 0);
        }
        CU_ASSERT_EQUAL(kdelay_flush(client, 30000), KDELAY_OK);
        CU_ASSERT_EQUAL(atomic_load(&cb_ok), N);
        CU_ASSERT_EQUAL(atomic_load(&cb_fail), 0);
        CU_ASSERT_EQUAL(kdelay_outq_len(client), 0);

        char topic[128];
        tier_topic("7d", topic, sizeof(topic));
        const char *tl[] = {topic, NULL};
        /* Plus the first test's two 7d tasks. */
        static it_msg_t msgs[N + 2];
        size_t got = it_consume(tl, msgs, N + 2, 15000);
        CU_ASSERT_EQUAL(got, N + 2);
        int found = 0;
        for (size_t k = 0; k < got; k++) {
                char *hid = it_header(&msgs[k], KDELAY_HDR_ID);
                for (int i = 0; hid && i < N; i++)
                        if (!strcmp(hid, ids[i]))
                                found++;
                free(hid);
                it_msg_free(&msgs[k]);
        }
        CU_ASSERT_EQUAL(found, N);
}

static void expect_reject(kdelay_task_t *t, kdelay_err_t want)
{
        char errstr[256] = "";
        char id[KDELAY_ID_MAX + 1];
        kdelay_err_t err =
            kdelay_schedule(client, t, id, sizeof(id), errstr, sizeof(errstr));
        if (err != want)
                fprintf(stderr, "\nexpected %s, got %s: %s\n",
                        kdelay_err_name(want), kdelay_err_name(err), errstr);
        CU_ASSERT_EQUAL(err, want);
        CU_ASSERT(strlen(errstr) > 0);
        err = kdelay_schedule_async(client, t, NULL, NULL, id, sizeof(id),
                                    errstr, sizeof(errstr));
        CU_ASSERT_EQUAL(err, want);
}

static void base_task(kdelay_task_t *t)
{
        kdelay_task_init(t);
        t->topic = "ok.topic";
        t->value = "v";
        t->value_len = 1;
        t->delay_ms = 1000;
}

static void test_bad_input_is_rejected_before_sending(void)
{
        kdelay_task_t t;
        char own[128], long_id[KDELAY_ID_MAX + 2], long_topic[251];
        kdelay_header_t reserved = {"kdelay-id", "x", 1};
        kdelay_header_t unnamed = {"", "x", 1};

        CU_ASSERT_EQUAL(kdelay_flush(client, 10000), KDELAY_OK);
        base_task(&t);
        t.topic = NULL;
        expect_reject(&t, KDELAY_ERR_INVALID_ARG);
        base_task(&t);
        t.topic = "bad topic";
        expect_reject(&t, KDELAY_ERR_INVALID_TOPIC);
        base_task(&t);
        t.topic = "..";
        expect_reject(&t, KDELAY_ERR_INVALID_TOPIC);
        memset(long_topic, 'a', 250);
        long_topic[250] = '\0';
        base_task(&t);
        t.topic = long_topic;
        expect_reject(&t, KDELAY_ERR_INVALID_TOPIC);
        base_task(&t);
        tier_topic("1m", own, sizeof(own));
        t.topic = own;
        expect_reject(&t, KDELAY_ERR_INVALID_TOPIC);
        base_task(&t);
        t.fire_at_ms = kd_now_ms() + 5000; /* both times */
        expect_reject(&t, KDELAY_ERR_INVALID_ARG);
        base_task(&t);
        t.delay_ms = KDELAY_TIME_UNSET; /* neither */
        expect_reject(&t, KDELAY_ERR_INVALID_ARG);
        base_task(&t);
        t.delay_ms = -1;
        expect_reject(&t, KDELAY_ERR_INVALID_TIME);
        base_task(&t);
        t.delay_ms = KDELAY_MAX_DELAY_MS + 1;
        expect_reject(&t, KDELAY_ERR_INVALID_TIME);
        base_task(&t);
        t.delay_ms = KDELAY_TIME_UNSET;
        t.fire_at_ms = kd_now_ms() + KDELAY_MAX_DELAY_MS + 60000;
        expect_reject(&t, KDELAY_ERR_INVALID_TIME);
        base_task(&t);
        t.delay_ms = KDELAY_TIME_UNSET;
        t.fire_at_ms = -5;
        expect_reject(&t, KDELAY_ERR_INVALID_TIME);
        base_task(&t);
        t.id = "";
        expect_reject(&t, KDELAY_ERR_INVALID_ID);
        memset(long_id, 'x', KDELAY_ID_MAX + 1);
        long_id[KDELAY_ID_MAX + 1] = '\0';
        base_task(&t);
        t.id = long_id;
        expect_reject(&t, KDELAY_ERR_INVALID_ID);
        base_task(&t);
        t.id = "bad\xc3\x28utf8";
        expect_reject(&t, KDELAY_ERR_INVALID_ID);
        base_task(&t);
        t.headers = &reserved;
        t.header_cnt = 1;
        expect_reject(&t, KDELAY_ERR_INVALID_HEADER);
        base_task(&t);
        t.headers = &unnamed;
        t.header_cnt = 1;
        expect_reject(&t, KDELAY_ERR_INVALID_HEADER);
        base_task(&t);
        t.value = NULL; /* length without data */
        expect_reject(&t, KDELAY_ERR_INVALID_ARG);
        /* An id buffer too small for the id: refused, never cut short. */
        base_task(&t);
        char small[10];
        CU_ASSERT_EQUAL(
            kdelay_schedule(client, &t, small, sizeof(small), NULL, 0),
            KDELAY_ERR_INVALID_ARG);
        /* Nothing was enqueued by any of them. */
        CU_ASSERT_EQUAL(kdelay_outq_len(client), 0);
}

/* A topic the task needs that does not exist fails at once, naming it:
 * the tier topic always, the target with producer.check_target=1. */
static void test_missing_topics_fail_at_once(void)
{
        char errstr[512], id[KDELAY_ID_MAX + 1], other[96], want[160];
        kdelay_client_t *c = NULL;
        kdelay_task_t t;
        kdelay_conf_t *conf = it_conf_new(prefix, NULL);
        CU_ASSERT_PTR_NOT_NULL_FATAL(conf);
        CU_ASSERT_EQUAL_FATAL(
            kdelay_conf_set(conf, "producer.check_target", "1", NULL, 0), 0);
        CU_ASSERT_EQUAL_FATAL(
            kdelay_client_new(&c, conf, errstr, sizeof(errstr)), KDELAY_OK);
        base_task(&t);
        t.topic = "no.such.topic";
        int64_t t0 = kd_now_ms();
        CU_ASSERT_EQUAL(
            kdelay_schedule(c, &t, id, sizeof(id), errstr, sizeof(errstr)),
            KDELAY_ERR_NO_SUCH_TOPIC);
        CU_ASSERT_PTR_NOT_NULL(
            strstr(errstr, "target topic 'no.such.topic' does not exist"));
        CU_ASSERT_EQUAL(kdelay_schedule_async(c, &t, NULL, NULL, id, sizeof(id),
                                              errstr, sizeof(errstr)),
                        KDELAY_ERR_NO_SUCH_TOPIC);
        CU_ASSERT_EQUAL(kdelay_outq_len(c), 0);
        kdelay_client_destroy(c);

        /* A prefix without tier topics: the tier topic is named. */
        snprintf(other, sizeof(other), "%s_none", prefix);
        conf = it_conf_new(other, NULL);
        CU_ASSERT_PTR_NOT_NULL_FATAL(conf);
        CU_ASSERT_EQUAL_FATAL(
            kdelay_client_new(&c, conf, errstr, sizeof(errstr)), KDELAY_OK);
        base_task(&t);
        CU_ASSERT_EQUAL(
            kdelay_schedule(c, &t, id, sizeof(id), errstr, sizeof(errstr)),
            KDELAY_ERR_NO_SUCH_TOPIC);
        snprintf(want, sizeof(want), "tier topic '%s.tier.1s' does not exist",
                 other);
        CU_ASSERT_PTR_NOT_NULL(strstr(errstr, want));
        CU_ASSERT_PTR_NOT_NULL(strstr(errstr, "kdelayctl topics create"));
        kdelay_client_destroy(c);
        CU_ASSERT(kd_now_ms() - t0 < 10000);
        CU_ASSERT_EQUAL(kdelay_err_is_retriable(KDELAY_ERR_NO_SUCH_TOPIC), 0);
}

static atomic_int purged;

static void on_purge(kdelay_err_t err, const char *id, const char *errstr,
                     void *opaque)
{
        (void)id;
        (void)errstr;
        (void)opaque;
        if (err == KDELAY_ERR_PURGED)
                atomic_fetch_add(&purged, 1);
}

static void test_destroy_reports_undelivered_tasks(void)
{
        /* A client whose broker never answers: destroy must still call
         * every callback, with KDELAY_ERR_PURGED. */
        kdelay_conf_t *conf = it_conf_new(prefix, NULL);
        kdelay_client_t *c = NULL;
        char errstr[256], id[KDELAY_ID_MAX + 1];
        CU_ASSERT_PTR_NOT_NULL_FATAL(conf);
        CU_ASSERT_EQUAL_FATAL(
            kdelay_conf_set(conf, "brokers", "127.0.0.1:1", NULL, 0), 0);
        CU_ASSERT_EQUAL_FATAL(
            kdelay_client_new(&c, conf, errstr, sizeof(errstr)), KDELAY_OK);
        atomic_store(&purged, 0);
        kdelay_task_t t;
        base_task(&t);
        for (int i = 0; i < 5; i++)
                CU_ASSERT_EQUAL(kdelay_schedule_async(c, &t, on_purge, NULL, id,
                                                      sizeof(id), errstr,
                                                      sizeof(errstr)),
                                KDELAY_OK);
        CU_ASSERT_EQUAL(kdelay_outq_len(c), 5);
        CU_ASSERT_EQUAL(kdelay_flush(c, 100), KDELAY_ERR_TIMED_OUT);
        kdelay_client_destroy(c);
        CU_ASSERT_EQUAL(atomic_load(&purged), 5);
}

int main(void)
{
        static const kd_test_case_t cases[] = {
            KD_TEST(test_sync_schedule_lands_in_right_tier),
            KD_TEST(test_absolute_time_and_given_id),
            KD_TEST(test_async_schedule_and_flush),
            KD_TEST(test_bad_input_is_rejected_before_sending),
            KD_TEST(test_missing_topics_fail_at_once),
            KD_TEST(test_destroy_reports_undelivered_tasks),
            KD_TEST_END};
        return kd_test_run("schedule", cases, suite_init, suite_cleanup);
}
