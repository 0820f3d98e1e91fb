/* SPDX-License-Identifier: Apache-2.0 */
/* A consumer that retries failed records later without blocking its
 * partition (kdelay/retry.h), exactly once: consume -> process -> produce
 * in one Kafka transaction with the consumed offsets, the retries
 * (kdelay_retry) and the dead letters included. A record is processed
 * once: its output, its retry or its dead letter is written if and only
 * if its offset is committed.
 *
 * "Processing" here copies the record to OUT_TOPIC, and fails while the
 * record asks for it: a value ending "#fail=N" fails its first N
 * attempts (a stand-in for a call that times out). The policy: backoff
 * 200 ms doubling, jitter 0.2, 3 attempts, then DEAD_TOPIC.
 *
 * Build: cc retrying_consumer.c $(pkg-config --cflags --libs kdelay rdkafka)
 * Run:   ./retrying_consumer BROKERS GROUP IN_TOPIC OUT_TOPIC DEAD_TOPIC \
 *            [TOPIC_PREFIX [TIERS]]
 *        (a kdelay stack: tier topics created, a forwarder running; the
 *        three topics must exist). Runs until SIGINT/SIGTERM; one line
 *        per transaction on stderr. The output records carry the input's
 *        headers (kdelay-attempt, kdelay-failures, kdelay-fire-at of a
 *        retried one). */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <kdelay/retry.h>

#define BATCH 200

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
        (void)sig;
        stop = 1;
}

/* Failures this record asks for: N of a value ending "#fail=N". */
static int wanted_failures(const rd_kafka_message_t *m)
{
        const char *v = m->payload;
        for (size_t i = m->len; v && i-- > 0;)
                if (v[i] == '#') {
                        if (m->len - i > 6 && !memcmp(v + i, "#fail=", 6))
                                return atoi(v + i + 6); /* "#fail=N" */
                        break;
                }
        return 0;
}

/* The failures behind this record: its kdelay-attempt, 0 if none. */
static int failures_so_far(const rd_kafka_message_t *m)
{
        rd_kafka_headers_t *h;
        const void *v;
        size_t n;
        char buf[16];
        if (rd_kafka_message_headers(m, &h) ||
            rd_kafka_header_get_last(h, KDELAY_HDR_ATTEMPT, &v, &n) || !v ||
            n >= sizeof(buf))
                return 0;
        memcpy(buf, v, n);
        buf[n] = '\0';
        return atoi(buf);
}

/* Success: the record, with its headers, to out. */
static rd_kafka_resp_err_t process(rd_kafka_t *rk, const char *out,
                                   const rd_kafka_message_t *m)
{
        rd_kafka_headers_t *h = NULL, *copy;
        copy = rd_kafka_message_headers(m, &h) ? rd_kafka_headers_new(0)
                                               : rd_kafka_headers_copy(h);
        rd_kafka_resp_err_t err = rd_kafka_producev(
            rk, RD_KAFKA_V_TOPIC(out), RD_KAFKA_V_KEY(m->key, m->key_len),
            RD_KAFKA_V_VALUE(m->payload, m->len), RD_KAFKA_V_HEADERS(copy),
            RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_END);
        if (err)
                rd_kafka_headers_destroy(copy);
        return err;
}

/* Back to the last committed offsets after an abort: what the aborted
 * transaction read is read again. */
static void rewind_to_committed(rd_kafka_t *consumer)
{
        rd_kafka_topic_partition_list_t *parts;
        if (rd_kafka_assignment(consumer, &parts))
                return;
        if (!rd_kafka_committed(consumer, parts, 10000))
                for (int i = 0; i < parts->cnt; i++) {
                        rd_kafka_topic_partition_t *p = &parts->elems[i];
                        if (p->offset < 0)
                                p->offset = RD_KAFKA_OFFSET_BEGINNING;
                }
        rd_kafka_error_t *e = rd_kafka_seek_partitions(consumer, parts, 10000);
        if (e)
                rd_kafka_error_destroy(e);
        rd_kafka_topic_partition_list_destroy(parts);
}

static rd_kafka_t *client(rd_kafka_type_t type, const char *brokers,
                          const char *group)
{
        char errstr[512], txid[300];
        rd_kafka_conf_t *c = rd_kafka_conf_new();
        int bad = rd_kafka_conf_set(c, "bootstrap.servers", brokers, errstr,
                                    sizeof(errstr)) ||
                  rd_kafka_conf_set(c, "allow.auto.create.topics", "false",
                                    errstr, sizeof(errstr));
        if (type == RD_KAFKA_CONSUMER)
                bad = bad ||
                      rd_kafka_conf_set(c, "group.id", group, errstr,
                                        sizeof(errstr)) ||
                      rd_kafka_conf_set(c, "enable.auto.commit", "false",
                                        errstr, sizeof(errstr)) ||
                      rd_kafka_conf_set(c, "isolation.level", "read_committed",
                                        errstr, sizeof(errstr)) ||
                      rd_kafka_conf_set(c, "auto.offset.reset", "earliest",
                                        errstr, sizeof(errstr)) ||
                      /* Static membership: a restarted consumer gets its
                       * partitions back at once, not after the dead one's
                       * session times out. */
                      rd_kafka_conf_set(c, "group.instance.id",
                                        "retrying-consumer-1", errstr,
                                        sizeof(errstr));
        else {
                /* One transactional id per group member would be needed
                 * with several; this example runs one. */
                snprintf(txid, sizeof(txid), "%s-retrying-consumer", group);
                bad = bad || rd_kafka_conf_set(c, "transactional.id", txid,
                                               errstr, sizeof(errstr));
        }
        rd_kafka_t *rk =
            bad ? NULL : rd_kafka_new(type, c, errstr, sizeof(errstr));
        if (!rk) {
                fprintf(stderr, "retrying_consumer: %s\n", errstr);
                if (bad)
                        rd_kafka_conf_destroy(c);
        }
        return rk;
}

int main(int argc, char **argv)
{
        char errstr[512];
        if (argc < 6) {
                fprintf(stderr, "usage: retrying_consumer BROKERS GROUP "
                                "IN_TOPIC OUT_TOPIC DEAD_TOPIC [TOPIC_PREFIX "
                                "[TIERS]]\n");
                return 2;
        }
        const char *brokers = argv[1], *group = argv[2], *in = argv[3],
                   *out = argv[4];
        kdelay_conf_t *conf = kdelay_conf_new();
        if (!conf ||
            (argc > 6 && kdelay_conf_set(conf, "topic_prefix", argv[6], errstr,
                                         sizeof(errstr))) ||
            (argc > 7 &&
             kdelay_conf_set(conf, "tiers", argv[7], errstr, sizeof(errstr)))) {
                fprintf(stderr, "retrying_consumer: conf: %s\n",
                        conf ? errstr : "out of memory");
                return 2;
        }
        kdelay_retry_policy_t policy;
        kdelay_retry_policy_init(&policy);
        policy.backoff_initial_ms = 200;
        policy.max_attempts = 3;
        policy.dead_topic = argv[5];

        rd_kafka_t *consumer = client(RD_KAFKA_CONSUMER, brokers, group);
        rd_kafka_t *producer = client(RD_KAFKA_PRODUCER, brokers, group);
        if (!consumer || !producer)
                return 1;
        rd_kafka_error_t *e = rd_kafka_init_transactions(producer, 30000);
        if (e) {
                fprintf(stderr, "retrying_consumer: init_transactions: %s\n",
                        rd_kafka_error_string(e));
                return 1;
        }
        rd_kafka_topic_partition_list_t *sub =
            rd_kafka_topic_partition_list_new(1);
        rd_kafka_topic_partition_list_add(sub, in, RD_KAFKA_PARTITION_UA);
        rd_kafka_subscribe(consumer, sub);
        rd_kafka_topic_partition_list_destroy(sub);
        signal(SIGINT, on_signal);
        signal(SIGTERM, on_signal);

        int rc = 0;
        while (!stop) {
                rd_kafka_message_t *batch[BATCH];
                int n = 0;
                rd_kafka_message_t *m = rd_kafka_consumer_poll(consumer, 500);
                while (m && n < BATCH) {
                        if (m->err)
                                rd_kafka_message_destroy(m);
                        else
                                batch[n++] = m;
                        m = n < BATCH ? rd_kafka_consumer_poll(consumer, 0)
                                      : NULL;
                }
                if (m)
                        rd_kafka_message_destroy(m);
                if (!n)
                        continue;
                int processed = 0, retried = 0, dead = 0, failed = 0;
                e = rd_kafka_begin_transaction(producer);
                for (int i = 0; i < n && !e && !failed; i++) {
                        if (failures_so_far(batch[i]) >=
                            wanted_failures(batch[i])) {
                                failed = !!process(producer, out, batch[i]);
                                processed++;
                                continue;
                        }
                        kdelay_retry_result_t r;
                        if (kdelay_retry(producer, conf, batch[i], &policy,
                                         "simulated failure", NULL, &r, errstr,
                                         sizeof(errstr))) {
                                fprintf(stderr,
                                        "retrying_consumer: retry: %s\n",
                                        errstr);
                                failed = 1;
                        } else if (r.outcome == KDELAY_RETRY_DEAD) {
                                dead++;
                        } else {
                                retried++;
                        }
                }
                rd_kafka_topic_partition_list_t *pos = NULL;
                if (!e && !failed && !rd_kafka_assignment(consumer, &pos) &&
                    !rd_kafka_position(consumer, pos)) {
                        rd_kafka_consumer_group_metadata_t *gm =
                            rd_kafka_consumer_group_metadata(consumer);
                        e = rd_kafka_send_offsets_to_transaction(producer, pos,
                                                                 gm, 30000);
                        rd_kafka_consumer_group_metadata_destroy(gm);
                        if (!e)
                                e = rd_kafka_commit_transaction(producer,
                                                                30000);
                } else if (!e) {
                        e = rd_kafka_error_new(RD_KAFKA_RESP_ERR__FAIL,
                                               "a produce failed");
                }
                if (pos)
                        rd_kafka_topic_partition_list_destroy(pos);
                for (int i = 0; i < n; i++)
                        rd_kafka_message_destroy(batch[i]);
                if (!e) {
                        fprintf(stderr,
                                "retrying_consumer: committed records=%d "
                                "processed=%d retried=%d dead=%d\n",
                                n, processed, retried, dead);
                        continue;
                }
                /* Not committed: abort, and read the batch again. */
                fprintf(stderr, "retrying_consumer: transaction: %s\n",
                        rd_kafka_error_string(e));
                int fatal = rd_kafka_error_is_fatal(e);
                rd_kafka_error_destroy(e);
                if (fatal ||
                    (e = rd_kafka_abort_transaction(producer, 30000))) {
                        if (!fatal) {
                                fprintf(stderr,
                                        "retrying_consumer: abort: %s\n",
                                        rd_kafka_error_string(e));
                                rd_kafka_error_destroy(e);
                        }
                        rc = 1;
                        break;
                }
                rewind_to_committed(consumer);
        }
        rd_kafka_consumer_close(consumer);
        rd_kafka_destroy(consumer);
        rd_kafka_destroy(producer);
        kdelay_conf_destroy(conf);
        return rc;
}
