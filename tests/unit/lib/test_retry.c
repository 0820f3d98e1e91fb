/* SPDX-License-Identifier: Apache-2.0 */
/* kdelay_retry() on librdkafka's mock cluster (no broker, no MySQL): a
 * consumed record's first failure becomes a task in the tier topic with
 * the retry headers and the id derived from the record; the task as a
 * forwarder would fire it, failing again, counts on; past max_attempts,
 * and for malformed retry headers, the record goes to the dead topic;
 * a long topic's id is hashed; a bad policy sends nothing. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <kdelay/retry.h>

/* after rdkafka.h (kdelay/retry.h includes it) */
#include <librdkafka/rdkafka_mock.h>

#include "kd_test.h"
#include "kd_util.h"

#define LONG_TOPIC                                                             \
        "a-topic-name-long-enough-that-a-retry-id-with-it-would-pass-the-"     \
        "128-bytes-an-id-may-have.orders.payments.reminders.v2"

static rd_kafka_t *producer;
static rd_kafka_mock_cluster_t *mock; /* owned by producer */
static kdelay_conf_t *conf;
static char brokers[256];
static char errstr[512];

static int setup(void)
{
        rd_kafka_conf_t *kc = rd_kafka_conf_new();
        if (rd_kafka_conf_set(kc, "test.mock.num.brokers", "1", errstr,
                              sizeof(errstr)) ||
            !(producer =
                  rd_kafka_new(RD_KAFKA_PRODUCER, kc, errstr, sizeof(errstr))))
                return -1;
        mock = rd_kafka_handle_mock_cluster(producer);
        const char *topics[] = {"rt.tier.1s", "rt.tier.4s", "in", "dead",
                                LONG_TOPIC};
        for (size_t i = 0; i < sizeof(topics) / sizeof(topics[0]); i++)
                if (rd_kafka_mock_topic_create(mock, topics[i], 1, 1))
                        return -1;
        kd_strlcpy(brokers, rd_kafka_mock_cluster_bootstraps(mock),
                   sizeof(brokers));
        conf = kdelay_conf_new();
        return conf &&
                       !kdelay_conf_set(conf, "topic_prefix", "rt", errstr,
                                        sizeof(errstr)) &&
                       !kdelay_conf_set(conf, "tiers", "1s,4s", errstr,
                                        sizeof(errstr))
                   ? 0
                   : -1;
}

static int teardown(void)
{
        kdelay_conf_destroy(conf);
        rd_kafka_destroy(producer);
        return 0;
}

/* Produces key/value with hdrs (taken) to topic; waits for it. */
static void produce(const char *topic, const char *key, const char *value,
                    rd_kafka_headers_t *hdrs)
{
        CU_ASSERT_EQUAL_FATAL(
            rd_kafka_producev(
                producer, RD_KAFKA_V_TOPIC(topic),
                RD_KAFKA_V_KEY(key, strlen(key)),
                RD_KAFKA_V_VALUE((void *)value, strlen(value)),
                RD_KAFKA_V_HEADERS(hdrs ? hdrs : rd_kafka_headers_new(0)),
                RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_END),
            0);
        CU_ASSERT_EQUAL_FATAL(rd_kafka_flush(producer, 10000), 0);
}

/* The record at offset of topic's partition 0; *consumerp keeps it alive
 * (destroy after the message). */
static rd_kafka_message_t *read_at(const char *topic, int64_t offset,
                                   rd_kafka_t **consumerp)
{
        rd_kafka_conf_t *kc = rd_kafka_conf_new();
        rd_kafka_conf_set(kc, "bootstrap.servers", brokers, NULL, 0);
        rd_kafka_conf_set(kc, "group.id", "test_retry", NULL, 0);
        rd_kafka_t *c =
            rd_kafka_new(RD_KAFKA_CONSUMER, kc, errstr, sizeof(errstr));
        CU_ASSERT_PTR_NOT_NULL_FATAL(c);
        rd_kafka_topic_partition_list_t *a =
            rd_kafka_topic_partition_list_new(1);
        rd_kafka_topic_partition_list_add(a, topic, 0)->offset = offset;
        rd_kafka_assign(c, a);
        rd_kafka_topic_partition_list_destroy(a);
        rd_kafka_message_t *m = NULL;
        for (int i = 0; i < 100 && !m; i++) {
                m = rd_kafka_consumer_poll(c, 100);
                if (m && m->err) {
                        rd_kafka_message_destroy(m);
                        m = NULL;
                }
        }
        CU_ASSERT_PTR_NOT_NULL_FATAL(m);
        *consumerp = c;
        return m;
}

static void done(rd_kafka_message_t *m, rd_kafka_t *c)
{
        rd_kafka_message_destroy(m);
        rd_kafka_consumer_close(c);
        rd_kafka_destroy(c);
}

/* Header name of m as a string ("" when absent); count of them. */
static const char *hdr(const rd_kafka_message_t *m, const char *name, char *buf,
                       size_t size, int *count)
{
        rd_kafka_headers_t *h = NULL;
        const void *v;
        size_t n;
        buf[0] = '\0';
        *count = 0;
        if (rd_kafka_message_headers(m, &h))
                return buf;
        while (!rd_kafka_header_get(h, (size_t)*count, name, &v, &n)) {
                (*count)++;
                snprintf(buf, size, "%.*s", (int)n, v ? (const char *)v : "");
        }
        return buf;
}

#define HDR_IS(m, name, want)                                                  \
        do {                                                                   \
                char b_[1024];                                                 \
                int c_;                                                        \
                hdr(m, name, b_, sizeof(b_), &c_);                             \
                CU_ASSERT_EQUAL(c_, 1);                                        \
                CU_ASSERT_STRING_EQUAL(b_, want);                              \
        } while (0)

static kdelay_retry_policy_t policy_of(int max)
{
        kdelay_retry_policy_t p;
        kdelay_retry_policy_init(&p);
        p.backoff_initial_ms = 200;
        p.max_attempts = max;
        p.dead_topic = "dead";
        return p;
}

/* The tier record as a forwarder fires it: kdelay-target and kdelay-v
 * stay behind, the rest goes to the target. */
static void fire(const rd_kafka_message_t *task)
{
        rd_kafka_headers_t *h = NULL;
        CU_ASSERT_EQUAL_FATAL(rd_kafka_message_headers(task, &h), 0);
        rd_kafka_headers_t *copy = rd_kafka_headers_copy(h);
        rd_kafka_header_remove(copy, KDELAY_HDR_TARGET);
        rd_kafka_header_remove(copy, KDELAY_HDR_VERSION);
        produce("in", "k1", "v1", copy);
}

static void test_counts_on_then_dead(void)
{
        rd_kafka_headers_t *h = rd_kafka_headers_new(1);
        rd_kafka_header_add(h, "trace", -1, "t-1", -1);
        produce("in", "k1", "v1", h); /* offset 0 */
        kdelay_retry_policy_t p = policy_of(2);
        kdelay_retry_result_t r;
        rd_kafka_t *c;
        char buf[1024];
        int cnt;

        /* 1st failure: a task due in 160..200 ms, to the 1s tier. */
        rd_kafka_message_t *m = read_at("in", 0, &c);
        int64_t before = kd_now_ms();
        CU_ASSERT_EQUAL_FATAL(kdelay_retry(producer, conf, m, &p, "timeout\n1",
                                           NULL, &r, errstr, sizeof(errstr)),
                              KDELAY_OK);
        done(m, c);
        CU_ASSERT_EQUAL(r.outcome, KDELAY_RETRY_SCHEDULED);
        CU_ASSERT_EQUAL(r.attempt, 1);
        CU_ASSERT_STRING_EQUAL(r.task_id, "retry:in:0:0:1");
        CU_ASSERT_STRING_EQUAL(r.topic, "rt.tier.1s");
        CU_ASSERT(r.fire_at_ms >= before + 160 &&
                  r.fire_at_ms <= kd_now_ms() + 200);
        CU_ASSERT_EQUAL_FATAL(rd_kafka_flush(producer, 10000), 0);
        m = read_at("rt.tier.1s", 0, &c);
        HDR_IS(m, KDELAY_HDR_ID, "retry:in:0:0:1");
        HDR_IS(m, KDELAY_HDR_TARGET, "in");
        HDR_IS(m, KDELAY_HDR_ATTEMPT, "1");
        HDR_IS(m, KDELAY_HDR_ORIG_TOPIC, "in");
        HDR_IS(m, KDELAY_HDR_ORIG_PARTITION, "0");
        HDR_IS(m, KDELAY_HDR_ORIG_OFFSET, "0");
        HDR_IS(m, "trace", "t-1");
        hdr(m, KDELAY_HDR_FAILURES, buf, sizeof(buf), &cnt);
        CU_ASSERT(!strncmp(buf, "attempt=1 failed_at=", 20));
        CU_ASSERT_PTR_NOT_NULL(strstr(buf, " reason=timeout 1")); /* \n: ' ' */
        fire(m); /* offset 1 of in */
        done(m, c);

        /* 2nd failure of the fired retry: attempt 2, its own kdelay-id and
         * fire-at not copied, the history grows. */
        m = read_at("in", 1, &c);
        CU_ASSERT_EQUAL_FATAL(kdelay_retry(producer, conf, m, &p, "again", NULL,
                                           &r, errstr, sizeof(errstr)),
                              KDELAY_OK);
        done(m, c);
        CU_ASSERT_STRING_EQUAL(r.task_id, "retry:in:0:0:2");
        CU_ASSERT_EQUAL_FATAL(rd_kafka_flush(producer, 10000), 0);
        m = read_at("rt.tier.1s", 1, &c);
        HDR_IS(m, KDELAY_HDR_ID, "retry:in:0:0:2");
        HDR_IS(m, KDELAY_HDR_ATTEMPT, "2");
        HDR_IS(m, KDELAY_HDR_ORIG_OFFSET, "0");
        hdr(m, KDELAY_HDR_FIRE_AT, buf, sizeof(buf), &cnt);
        CU_ASSERT_EQUAL(cnt, 1);
        hdr(m, KDELAY_HDR_FAILURES, buf, sizeof(buf), &cnt);
        CU_ASSERT_PTR_NOT_NULL(strstr(buf, "\nattempt=2 failed_at="));
        fire(m); /* offset 2 */
        done(m, c);

        /* 3rd failure, max_attempts 2: the dead topic, the whole history. */
        m = read_at("in", 2, &c);
        CU_ASSERT_EQUAL_FATAL(kdelay_retry(producer, conf, m, &p, "third", NULL,
                                           &r, errstr, sizeof(errstr)),
                              KDELAY_OK);
        done(m, c);
        CU_ASSERT_EQUAL(r.outcome, KDELAY_RETRY_DEAD);
        CU_ASSERT_EQUAL(r.attempt, 3);
        CU_ASSERT_STRING_EQUAL(r.topic, "dead");
        CU_ASSERT_EQUAL_FATAL(rd_kafka_flush(producer, 10000), 0);
        m = read_at("dead", 0, &c);
        HDR_IS(m, KDELAY_HDR_ATTEMPT, "3");
        HDR_IS(m, KDELAY_HDR_DEAD_REASON, KDELAY_DEAD_RETRIES_EXHAUSTED);
        HDR_IS(m, "trace", "t-1");
        hdr(m, KDELAY_HDR_ID, buf, sizeof(buf), &cnt);
        CU_ASSERT_EQUAL(cnt, 0);
        hdr(m, KDELAY_HDR_FAILURES, buf, sizeof(buf), &cnt);
        CU_ASSERT_PTR_NOT_NULL(strstr(buf, "\nattempt=3 failed_at="));
        CU_ASSERT(m->key_len == 2 && !memcmp(m->key, "k1", 2));
        done(m, c);
}

/* Another producer's malformed kdelay-attempt harms only its record: it
 * is dead-lettered at once, saying which header. */
static void test_bad_header_dead_letters(void)
{
        rd_kafka_headers_t *h = rd_kafka_headers_new(1);
        rd_kafka_header_add(h, KDELAY_HDR_ATTEMPT, -1, "two", -1);
        produce("in", "k2", "v2", h); /* offset 3 */
        kdelay_retry_policy_t p = policy_of(5);
        kdelay_retry_result_t r;
        rd_kafka_t *c;
        rd_kafka_message_t *m = read_at("in", 3, &c);
        CU_ASSERT_EQUAL(kdelay_retry(producer, conf, m, &p, NULL, NULL, &r,
                                     errstr, sizeof(errstr)),
                        KDELAY_OK);
        done(m, c);
        CU_ASSERT_EQUAL(r.outcome, KDELAY_RETRY_DEAD);
        CU_ASSERT_EQUAL_FATAL(rd_kafka_flush(producer, 10000), 0);
        m = read_at("dead", 1, &c);
        HDR_IS(m, KDELAY_HDR_DEAD_REASON, "bad-retry-header kdelay-attempt");
        HDR_IS(m, KDELAY_HDR_ATTEMPT, "1");
        done(m, c);
}

/* An id that would pass 128 bytes is hashed: short, and the same for the
 * same record and attempt. */
static void test_long_topic_id(void)
{
        produce(LONG_TOPIC, "k3", "v3", NULL);
        kdelay_retry_policy_t p = policy_of(5);
        kdelay_retry_result_t r1, r2;
        rd_kafka_t *c;
        rd_kafka_message_t *m = read_at(LONG_TOPIC, 0, &c);
        CU_ASSERT_EQUAL(kdelay_retry(producer, conf, m, &p, NULL, NULL, &r1,
                                     errstr, sizeof(errstr)),
                        KDELAY_OK);
        CU_ASSERT_EQUAL(kdelay_retry(producer, conf, m, &p, NULL, NULL, &r2,
                                     errstr, sizeof(errstr)),
                        KDELAY_OK);
        done(m, c);
        CU_ASSERT(strlen(r1.task_id) <= KDELAY_ID_MAX);
        CU_ASSERT_STRING_EQUAL(r1.task_id, r2.task_id);
        CU_ASSERT(!strncmp(r1.task_id, "retry:" LONG_TOPIC, 6 + 64));
        /* FNV-1a 64 of "retry:<topic>:0:0:1", as retry.py and Retry.java
         * compute it (docs/retries.md). */
        CU_ASSERT_STRING_EQUAL(r1.task_id + 6 + 64, ":47fc38042ad2d869:1");
        printf("\n  hashed id: %s\n", r1.task_id);
        CU_ASSERT_EQUAL(rd_kafka_flush(producer, 10000), 0);
}

/* A topic name long enough that the long form passes 191 bytes: two
 * records still get two ids (the whole long form is hashed). */
static void test_longest_topic_ids_differ(void)
{
        char topic[250];
        memset(topic, 'x', 200);
        topic[200] = '\0';
        CU_ASSERT_EQUAL_FATAL(rd_kafka_mock_topic_create(mock, topic, 1, 1), 0);
        produce(topic, "k5", "v5", NULL);
        produce(topic, "k6", "v6", NULL);
        kdelay_retry_policy_t p = policy_of(5);
        kdelay_retry_result_t r[2];
        for (int i = 0; i < 2; i++) {
                rd_kafka_t *c;
                rd_kafka_message_t *m = read_at(topic, i, &c);
                CU_ASSERT_EQUAL(kdelay_retry(producer, conf, m, &p, NULL, NULL,
                                             &r[i], errstr, sizeof(errstr)),
                                KDELAY_OK);
                done(m, c);
        }
        CU_ASSERT_STRING_NOT_EQUAL(r[0].task_id, r[1].task_id);
        CU_ASSERT_EQUAL(rd_kafka_flush(producer, 10000), 0);
}

/* A policy out of range is refused before anything is sent. */
static void test_bad_policy(void)
{
        produce("in", "k4", "v4", NULL); /* offset 4 */
        rd_kafka_t *c;
        rd_kafka_message_t *m = read_at("in", 4, &c);
        kdelay_retry_policy_t p;
        kdelay_retry_policy_init(&p);
        CU_ASSERT_PTR_NULL(p.dead_topic);
        CU_ASSERT_EQUAL(kdelay_retry(producer, conf, m, &p, NULL, NULL, NULL,
                                     errstr, sizeof(errstr)),
                        KDELAY_ERR_INVALID_ARG);
        CU_ASSERT_PTR_NOT_NULL(strstr(errstr, "dead_topic"));
        p = policy_of(5);
        p.jitter = 1.5;
        CU_ASSERT_EQUAL(kdelay_retry(producer, conf, m, &p, NULL, NULL, NULL,
                                     errstr, sizeof(errstr)),
                        KDELAY_ERR_INVALID_ARG);
        p = policy_of(0);
        CU_ASSERT_EQUAL(kdelay_retry(producer, conf, m, &p, NULL, NULL, NULL,
                                     errstr, sizeof(errstr)),
                        KDELAY_ERR_INVALID_ARG);
        p = policy_of(5);
        p.backoff_max_ms = 10; /* below the initial 200 */
        CU_ASSERT_EQUAL(kdelay_retry(producer, conf, m, &p, NULL, NULL, NULL,
                                     errstr, sizeof(errstr)),
                        KDELAY_ERR_INVALID_ARG);
        CU_ASSERT_EQUAL(rd_kafka_outq_len(producer), 0);
        done(m, c);
}

int main(void)
{
        static const kd_test_case_t cases[] = {
            KD_TEST(test_counts_on_then_dead),
            KD_TEST(test_bad_header_dead_letters),
            KD_TEST(test_long_topic_id),
            KD_TEST(test_longest_topic_ids_differ),
            KD_TEST(test_bad_policy),
            KD_TEST_END};
        return kd_test_run("retry", cases, setup, teardown);
}
