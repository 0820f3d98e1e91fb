/* SPDX-License-Identifier: Apache-2.0 */
/* kdelay_task_record and kdelay_produce (kdelay/producer.h) without a
 * broker: the tier topic for the task's delay, headers that decode back
 * to the task (user headers kept), and the refusals, which create and
 * enqueue nothing. */
#include <string.h>

#include <kdelay/producer.h>

#include "kd_test.h"
#include "kd_util.h"
#include "kd_wire.h"

static char errstr[512];
static int reports; /* delivery reports of the unit's producer */

static void dr_count(rd_kafka_t *rk, const rd_kafka_message_t *m, void *op)
{
        (void)rk;
        (void)m;
        (void)op;
        reports++;
}

static void task_for(kdelay_task_t *t, int64_t delay_ms)
{
        kdelay_task_init(t);
        t->topic = "orders.reminders";
        t->value = "v";
        t->value_len = 1;
        t->delay_ms = delay_ms;
}

static void test_record_names_the_tier_and_decodes_back(void)
{
        static const kdelay_header_t uh[] = {{"trace", "abc", 3}};
        kdelay_conf_t *conf = kdelay_conf_new();
        CU_ASSERT_PTR_NOT_NULL_FATAL(conf);
        CU_ASSERT_EQUAL(kdelay_conf_set(conf, "topic_prefix", "pfx", errstr,
                                        sizeof(errstr)),
                        KDELAY_OK);
        kdelay_task_t t;
        task_for(&t, 75 * 1000);
        t.headers = uh;
        t.header_cnt = 1;
        t.id = "task-1";
        char topic[256], id[KDELAY_ID_MAX + 1];
        rd_kafka_headers_t *h = NULL;
        int64_t before = kd_now_ms();
        CU_ASSERT_EQUAL_FATAL(kdelay_task_record(conf, &t, topic, sizeof(topic),
                                                 &h, id, sizeof(id), errstr,
                                                 sizeof(errstr)),
                              KDELAY_OK);
        CU_ASSERT_STRING_EQUAL(topic, "pfx.tier.1m"); /* 75 s: the 1m tier */
        CU_ASSERT_STRING_EQUAL(id, "task-1");
        kd_wire_task_t w;
        CU_ASSERT_EQUAL_FATAL(kd_wire_decode(h, kd_now_ms(), &w), KD_WIRE_OK);
        CU_ASSERT_EQUAL(w.id_len, 6);
        CU_ASSERT_EQUAL(memcmp(w.id, "task-1", 6), 0);
        CU_ASSERT_EQUAL(w.target_len, strlen("orders.reminders"));
        CU_ASSERT(w.fire_at_ms >= before + 75000 &&
                  w.fire_at_ms <= kd_now_ms() + 75000);
        const void *v;
        size_t len;
        CU_ASSERT_EQUAL(rd_kafka_header_get_last(h, "trace", &v, &len),
                        RD_KAFKA_RESP_ERR_NO_ERROR);
        CU_ASSERT_EQUAL(len, 3);
        rd_kafka_headers_destroy(h);

        /* No id given: a new one each time. */
        char id2[KDELAY_ID_MAX + 1];
        t.id = NULL;
        CU_ASSERT_EQUAL(kdelay_task_record(conf, &t, topic, sizeof(topic), &h,
                                           id, sizeof(id), errstr,
                                           sizeof(errstr)),
                        KDELAY_OK);
        rd_kafka_headers_destroy(h);
        CU_ASSERT_EQUAL(kdelay_task_record(conf, &t, topic, sizeof(topic), &h,
                                           id2, sizeof(id2), errstr,
                                           sizeof(errstr)),
                        KDELAY_OK);
        rd_kafka_headers_destroy(h);
        CU_ASSERT_STRING_NOT_EQUAL(id, id2);
        kdelay_conf_destroy(conf);
}

static void test_refusals_create_and_enqueue_nothing(void)
{
        kdelay_conf_t *conf = kdelay_conf_new();
        CU_ASSERT_PTR_NOT_NULL_FATAL(conf);
        kdelay_task_t t;
        char topic[256], small[4];
        rd_kafka_headers_t *h = NULL;
        task_for(&t, 1000);
        t.topic = "bad topic";
        CU_ASSERT_EQUAL(kdelay_task_record(conf, &t, topic, sizeof(topic), &h,
                                           NULL, 0, errstr, sizeof(errstr)),
                        KDELAY_ERR_INVALID_TOPIC);
        CU_ASSERT_PTR_NULL(h);
        task_for(&t, 1000);
        t.id = "a-longer-id";
        CU_ASSERT_EQUAL(kdelay_task_record(conf, &t, topic, sizeof(topic), &h,
                                           small, sizeof(small), errstr,
                                           sizeof(errstr)),
                        KDELAY_ERR_INVALID_ARG);
        CU_ASSERT_EQUAL(kdelay_task_record(conf, &t, small, sizeof(small), &h,
                                           NULL, 0, errstr, sizeof(errstr)),
                        KDELAY_ERR_INVALID_ARG);
        CU_ASSERT_PTR_NULL(h);
        t.delay_ms = -5;
        CU_ASSERT_EQUAL(kdelay_task_record(conf, &t, topic, sizeof(topic), &h,
                                           NULL, 0, errstr, sizeof(errstr)),
                        KDELAY_ERR_INVALID_TIME);

        /* kdelay_produce refuses the same before it enqueues: of three
         * calls, only the good one is ever reported (purged here, as no
         * broker listens). */
        char es[512];
        rd_kafka_conf_t *kc = rd_kafka_conf_new();
        rd_kafka_conf_set(kc, "bootstrap.servers", "127.0.0.1:1", es,
                          sizeof(es));
        rd_kafka_conf_set(kc, "log_level", "0", es, sizeof(es));
        rd_kafka_conf_set_dr_msg_cb(kc, dr_count);
        rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_PRODUCER, kc, es, sizeof(es));
        CU_ASSERT_PTR_NOT_NULL_FATAL(rk);
        CU_ASSERT_EQUAL(
            kdelay_produce(rk, conf, &t, NULL, NULL, 0, errstr, sizeof(errstr)),
            KDELAY_ERR_INVALID_TIME);
        CU_ASSERT_EQUAL(kdelay_produce(NULL, conf, &t, NULL, NULL, 0, errstr,
                                       sizeof(errstr)),
                        KDELAY_ERR_INVALID_ARG);
        task_for(&t, 1000);
        CU_ASSERT_EQUAL(
            kdelay_produce(rk, conf, &t, NULL, NULL, 0, errstr, sizeof(errstr)),
            KDELAY_OK);
        reports = 0;
        CU_ASSERT_EQUAL(rd_kafka_purge(rk, RD_KAFKA_PURGE_F_QUEUE |
                                               RD_KAFKA_PURGE_F_INFLIGHT),
                        RD_KAFKA_RESP_ERR_NO_ERROR);
        for (int i = 0; i < 50 && reports < 1; i++)
                rd_kafka_poll(rk, 100);
        rd_kafka_poll(rk, 200); /* a second report would come now */
        CU_ASSERT_EQUAL(reports, 1);
        rd_kafka_destroy(rk);
        kdelay_conf_destroy(conf);
}

int main(void)
{
        static const kd_test_case_t cases[] = {
            KD_TEST(test_record_names_the_tier_and_decodes_back),
            KD_TEST(test_refusals_create_and_enqueue_nothing), KD_TEST_END};
        return kd_test_run("record", cases, NULL, NULL);
}
