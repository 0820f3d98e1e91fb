/* SPDX-License-Identifier: Apache-2.0 */
/* Scheduling a kdelay task through the application's own librdkafka
 * producer (kdelay/producer.h), two ways:
 *
 *   1. kdelay_produce() inside the application's transaction, beside the
 *      order record it belongs to: the reminder exists if and only if the
 *      order does.
 *   2. kdelay_task_record(): kdelay makes the tier topic and headers, the
 *      application produces the record itself.
 *
 * Build: cc app_producer.c $(pkg-config --cflags --libs kdelay rdkafka)
 * Run:   ./app_producer BROKERS [TOPIC_PREFIX]   (a kdelay stack: tier
 *        topics created, a forwarder running; the orders and
 *        orders.reminders topics must exist) */
#include <stdio.h>
#include <string.h>

#include <kdelay/producer.h>

static int fail(const char *what, const char *why)
{
        fprintf(stderr, "app_producer: %s: %s\n", what, why);
        return 1;
}

int main(int argc, char **argv)
{
        char errstr[512], id[KDELAY_ID_MAX + 1];
        if (argc < 2)
                return fprintf(stderr, "usage: app_producer BROKERS "
                                       "[TOPIC_PREFIX]\n"),
                       2;

        /* kdelay's conf says where the tier topics are (prefix, ladder).
         * It is only read: one conf serves every thread. */
        kdelay_conf_t *conf = kdelay_conf_new();
        if (!conf || (argc > 2 && kdelay_conf_set(conf, "topic_prefix", argv[2],
                                                  errstr, sizeof(errstr))))
                return fail("conf", conf ? errstr : "out of memory");

        /* The application's producer: transactional, hence idempotent
         * with acks=all, as a delay task needs. */
        rd_kafka_conf_t *kc = rd_kafka_conf_new();
        if (rd_kafka_conf_set(kc, "bootstrap.servers", argv[1], errstr,
                              sizeof(errstr)) ||
            rd_kafka_conf_set(kc, "transactional.id", "orders-app-1", errstr,
                              sizeof(errstr)) ||
            rd_kafka_conf_set(kc, "allow.auto.create.topics", "false", errstr,
                              sizeof(errstr)))
                return fail("kafka conf", errstr);
        rd_kafka_t *rk =
            rd_kafka_new(RD_KAFKA_PRODUCER, kc, errstr, sizeof(errstr));
        if (!rk)
                return fail("producer", errstr);
        rd_kafka_error_t *e = rd_kafka_init_transactions(rk, 30000);
        if (e)
                return fail("init_transactions", rd_kafka_error_string(e));

        /* 1. The order and its reminder, atomically. */
        kdelay_task_t t;
        kdelay_task_init(&t);
        t.topic = "orders.reminders";
        t.key = "order-42";
        t.key_len = 8;
        t.value = "ship it";
        t.value_len = 7;
        t.delay_ms = 30 * 60 * 1000;
        if ((e = rd_kafka_begin_transaction(rk)))
                return fail("begin_transaction", rd_kafka_error_string(e));
        if (rd_kafka_producev(
                rk, RD_KAFKA_V_TOPIC("orders"), RD_KAFKA_V_KEY("order-42", 8),
                RD_KAFKA_V_VALUE("{\"total\":42}", 12),
                RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_END))
                return fail("order", "not enqueued");
        if (kdelay_produce(rk, conf, &t, NULL, id, sizeof(id), errstr,
                           sizeof(errstr)) != KDELAY_OK)
                return fail("reminder", errstr); /* then abort, in real life */
        if ((e = rd_kafka_commit_transaction(rk, 30000)))
                return fail("commit", rd_kafka_error_string(e));
        printf("order-42 and its reminder %s committed together\n", id);

        /* 2. The record made for us; we produce it (here, in a second
         * transaction). */
        char topic[256];
        rd_kafka_headers_t *h = NULL;
        t.key = "order-43";
        if (kdelay_task_record(conf, &t, topic, sizeof(topic), &h, id,
                               sizeof(id), errstr, sizeof(errstr)) != KDELAY_OK)
                return fail("record", errstr);
        if ((e = rd_kafka_begin_transaction(rk)))
                return fail("begin_transaction", rd_kafka_error_string(e));
        if (rd_kafka_producev(rk, RD_KAFKA_V_TOPIC(topic),
                              RD_KAFKA_V_KEY((void *)t.key, t.key_len),
                              RD_KAFKA_V_VALUE((void *)t.value, t.value_len),
                              RD_KAFKA_V_HEADERS(h),
                              RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
                              RD_KAFKA_V_END)) {
                rd_kafka_headers_destroy(h); /* not taken on failure */
                return fail("record", "not enqueued");
        }
        if ((e = rd_kafka_commit_transaction(rk, 30000)))
                return fail("commit", rd_kafka_error_string(e));
        printf("reminder %s written to %s\n", id, topic);

        rd_kafka_destroy(rk);
        kdelay_conf_destroy(conf);
        return 0;
}
