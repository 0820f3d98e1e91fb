/* Integration: one task its target refuses harms nothing but itself, on
 * the real broker and MariaDB, in both delivery modes side by side (one
 * forwarder each, its own topic prefix).
 *
 * Due at the same instant, per mode:
 *   - 10 keyed tasks and 1 keyless one for a compacted topic (one
 *     partition: they share a record batch, which the broker refuses as a
 *     whole for the keyless record, INVALID_RECORD);
 *   - 10 tasks of 300 bytes and 1 of 3000 for a topic with
 *     max.message.bytes=2000 (the limit applies to a whole batch);
 *   - 1 task for __consumer_offsets (written raw: the library refuses it)
 *     and 10 for an ordinary topic.
 *
 * It checks: the 30 innocent tasks are delivered once each, never early,
 * at most LATE_MAX_MS late (lateness printed); the keyless task is
 * dead-lettered target-refused (kdelay-dead-error INVALID_RECORD), the
 * large one too-large (MSG_SIZE_TOO_LARGE), both with a DEAD fate row;
 * the internal-topic task target-forbidden, with no fate row; nothing
 * else is dead-lettered. The mechanism shows in the logs: at_least_once
 * produced the refused batch's records again alone (batch_refused),
 * exactly_once in solo transactions (txn_solo), with a bounded number of
 * aborts. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "it_env.h"
#include "kd_test.h"
#include "kd_util.h"

#define N_INNOCENT  10   /* per target */
#define LATE_MAX_MS 8000 /* exactly_once: a few aborts and solo commits */
#define MAX_ABORTS  12

static char url[256], db[64];

typedef struct mode_run {
        const char *delivery;
        char prefix[40], compact[96], small[96], plain[96], dead[96];
        it_fwd_t fwd;
        int64_t fire_at;
} mode_run_t;

static mode_run_t runs[2] = {
    {.delivery = "at_least_once", .fwd = {"fwPoisonA", -1, "", NULL}},
    {.delivery = "exactly_once", .fwd = {"fwPoisonE", -1, "", NULL}}};

static int suite_init(void)
{
        if (it_env_init())
                return -1;
        it_unique(db, sizeof(db), "kdit_poison");
        return it_db_create(db, 1, url, sizeof(url));
}

static int suite_cleanup(void)
{
        it_db_drop(db);
        return 0;
}

static void topics_create(mode_run_t *r)
{
        static const char *const compact[] = {"cleanup.policy", "compact",
                                              NULL};
        static const char *const small[] = {"max.message.bytes", "2000", NULL};
        it_unique(r->prefix, sizeof(r->prefix), "itpois");
        snprintf(r->compact, sizeof(r->compact), "%s.compact", r->prefix);
        snprintf(r->small, sizeof(r->small), "%s.small", r->prefix);
        snprintf(r->plain, sizeof(r->plain), "%s.plain", r->prefix);
        snprintf(r->dead, sizeof(r->dead), "%s.dead", r->prefix);
        CU_ASSERT_EQUAL_FATAL(it_tiers_create(r->prefix, url, 2), 0);
        CU_ASSERT_EQUAL_FATAL(it_create_topic_conf(r->compact, 1, compact), 0);
        CU_ASSERT_EQUAL_FATAL(it_create_topic_conf(r->small, 1, small), 0);
        CU_ASSERT_EQUAL_FATAL(it_create_topic(r->plain, 2), 0);
}

static void fwd_start(mode_run_t *r)
{
        char grp[96], delivery[64];
        snprintf(grp, sizeof(grp), "%s-group", r->prefix);
        snprintf(delivery, sizeof(delivery), "forwarder.delivery=%s",
                 r->delivery);
        const char *props[] = {delivery, "forwarder.stats_interval=5s",
                               "forwarder.hold_horizon=10s", NULL};
        CU_ASSERT_FATAL(it_fwd_start(&r->fwd, KDELAY_FORWARDER, r->prefix, grp,
                                     url, props) == 0);
}

/* Schedules task id for topic through c: key (NULL = none) and a value
 * of value_len bytes. */
static void schedule(kdelay_client_t *c, const char *topic, const char *id,
                     const char *key, size_t value_len, int64_t fire_at)
{
        static char value[4096];
        char errstr[512];
        memset(value, 'v', sizeof(value));
        kdelay_task_t t;
        kdelay_task_init(&t);
        t.topic = topic;
        t.id = id;
        t.key = key;
        t.key_len = key ? strlen(key) : 0;
        t.value = value;
        t.value_len = value_len;
        t.fire_at_ms = fire_at;
        kdelay_err_t err = kdelay_schedule_async(c, &t, NULL, NULL, NULL, 0,
                                                 errstr, sizeof(errstr));
        if (err)
                printf("\n  schedule %s: %s", id, errstr);
        CU_ASSERT_EQUAL(err, KDELAY_OK);
}

/* A task for __consumer_offsets, refused by the library and written raw
 * into the 1s tier, as any Kafka client could. */
static void schedule_internal(kdelay_client_t *c, mode_run_t *r)
{
        char errstr[512], id[64], fire_at[24], tier[128];
        kdelay_task_t t;
        kdelay_task_init(&t);
        t.topic = "__consumer_offsets";
        t.fire_at_ms = r->fire_at;
        CU_ASSERT_EQUAL(kdelay_schedule(c, &t, NULL, 0, errstr, sizeof(errstr)),
                        KDELAY_ERR_INVALID_TOPIC);
        snprintf(id, sizeof(id), "%s-internal", r->prefix);
        snprintf(fire_at, sizeof(fire_at), "%lld", (long long)r->fire_at);
        snprintf(tier, sizeof(tier), "%s.tier.1s", r->prefix);
        rd_kafka_t *rk = it_kafka_new(RD_KAFKA_PRODUCER, NULL);
        CU_ASSERT_PTR_NOT_NULL_FATAL(rk);
        rd_kafka_headers_t *h = rd_kafka_headers_new(4);
        rd_kafka_header_add(h, KDELAY_HDR_VERSION, -1, "1", -1);
        rd_kafka_header_add(h, KDELAY_HDR_ID, -1, id, -1);
        rd_kafka_header_add(h, KDELAY_HDR_TARGET, -1, "__consumer_offsets", -1);
        rd_kafka_header_add(h, KDELAY_HDR_FIRE_AT, -1, fire_at, -1);
        CU_ASSERT_EQUAL(rd_kafka_producev(rk, RD_KAFKA_V_TOPIC(tier),
                                          RD_KAFKA_V_VALUE("x", 1),
                                          RD_KAFKA_V_HEADERS(h),
                                          RD_KAFKA_V_END),
                        RD_KAFKA_RESP_ERR_NO_ERROR);
        CU_ASSERT_EQUAL(rd_kafka_flush(rk, 10000), RD_KAFKA_RESP_ERR_NO_ERROR);
        rd_kafka_destroy(rk);
}

static void schedule_all(mode_run_t *r, int64_t fire_at)
{
        char errstr[512], id[96], key[32];
        kdelay_client_t *c = NULL;
        r->fire_at = fire_at;
        kdelay_conf_t *conf = it_conf_new(r->prefix, url);
        CU_ASSERT_PTR_NOT_NULL_FATAL(conf);
        CU_ASSERT_EQUAL_FATAL(
            kdelay_client_new(&c, conf, errstr, sizeof(errstr)), KDELAY_OK);
        for (int i = 0; i < N_INNOCENT; i++) {
                snprintf(key, sizeof(key), "k%d", i);
                snprintf(id, sizeof(id), "%s-c%d", r->prefix, i);
                schedule(c, r->compact, id, key, 20, fire_at);
                snprintf(id, sizeof(id), "%s-s%d", r->prefix, i);
                schedule(c, r->small, id, key, 300, fire_at);
                snprintf(id, sizeof(id), "%s-p%d", r->prefix, i);
                schedule(c, r->plain, id, key, 20, fire_at);
        }
        snprintf(id, sizeof(id), "%s-keyless", r->prefix);
        schedule(c, r->compact, id, NULL, 20, fire_at);
        snprintf(id, sizeof(id), "%s-large", r->prefix);
        schedule(c, r->small, id, "big", 3000, fire_at);
        CU_ASSERT_EQUAL(kdelay_flush(c, 10000), KDELAY_OK);
        schedule_internal(c, r);
        kdelay_client_destroy(c);
}

/* The fate row of id: "STATE reason" ("" when none). */
static void fate_row(const char *id, char *out, size_t size)
{
        char sql[512];
        out[0] = '\0';
        MYSQL *conn = it_mysql_connect();
        if (!conn)
                return;
        snprintf(sql, sizeof(sql),
                 "SELECT state, IFNULL(dead_reason, '-') FROM `%s`.kdelay_fate "
                 "WHERE task_id = '%s'",
                 db, id);
        if (!mysql_query(conn, sql)) {
                MYSQL_RES *res = mysql_store_result(conn);
                MYSQL_ROW row = res ? mysql_fetch_row(res) : NULL;
                if (row)
                        snprintf(out, size, "%s %s", row[0], row[1]);
                if (res)
                        mysql_free_result(res);
        }
        mysql_close(conn);
}

static void check_targets(mode_run_t *r)
{
        const char *topics[] = {r->compact, r->small, r->plain, NULL};
        it_msg_t *msgs = NULL;
        size_t n = it_consume_all(topics, &msgs, 3000, 60000);
        int64_t late[3 * N_INNOCENT];
        size_t nl = 0, early = 0, stray = 0;
        int seen[3][N_INNOCENT] = {{0}};
        for (size_t i = 0; i < n; i++) {
                char *id = it_header(&msgs[i], KDELAY_HDR_ID);
                char kind;
                int k;
                size_t plen = strlen(r->prefix);
                if (id && !strncmp(id, r->prefix, plen) &&
                    sscanf(id + plen, "-%c%d", &kind, &k) == 2 && k >= 0 &&
                    k < N_INNOCENT && strchr("csp", kind)) {
                        int t = kind == 'c' ? 0 : kind == 's' ? 1 : 2;
                        seen[t][k]++;
                        /* Its timestamp: when the forwarder produced it
                         * (the consumer starts late, and read_committed
                         * waits for the last transaction on a
                         * partition). */
                        int64_t l = msgs[i].ts - r->fire_at;
                        if (msgs[i].ts < r->fire_at)
                                early++;
                        if (nl < KD_ARRAY_LEN(late))
                                late[nl++] = l;
                } else {
                        stray++;
                        printf("\n  %s: unexpected record %s", r->delivery,
                               id ? id : "(no id)");
                }
                free(id);
                it_msg_free(&msgs[i]);
        }
        free(msgs);
        int once = 0;
        for (int t = 0; t < 3; t++)
                for (int k = 0; k < N_INNOCENT; k++)
                        once += seen[t][k] == 1;
        int64_t p99, max;
        char what[64];
        snprintf(what, sizeof(what), "%s innocent", r->delivery);
        it_report_lateness(what, late, nl, &p99, &max);
        printf("\n  %s: innocent delivered once %d/%d, early %zu, "
               "unexpected %zu",
               r->delivery, once, 3 * N_INNOCENT, early, stray);
        CU_ASSERT_EQUAL(once, 3 * N_INNOCENT);
        CU_ASSERT_EQUAL(nl, 3 * N_INNOCENT);
        CU_ASSERT_EQUAL(early, 0);
        CU_ASSERT_EQUAL(stray, 0);
        CU_ASSERT(max <= LATE_MAX_MS);
}

static void check_dead(mode_run_t *r)
{
        const char *topics[] = {r->dead, NULL};
        it_msg_t msgs[3], again[4];
        size_t n = it_consume(topics, msgs, 3, 60000);
        /* Read again from the start: nothing beyond those three. */
        size_t more = it_consume(topics, again, 4, 3000);
        for (size_t i = 0; i < more; i++)
                it_msg_free(&again[i]);
        int keyless = 0, large = 0, internal = 0;
        for (size_t i = 0; i < n; i++) {
                char *id = it_header(&msgs[i], KDELAY_HDR_ID);
                char *reason = it_header(&msgs[i], KDELAY_HDR_DEAD_REASON);
                char *error = it_header(&msgs[i], KDELAY_HDR_DEAD_ERROR);
                const char *tail = id ? id + strlen(r->prefix) : "";
                printf("\n  %s: dead %s reason=%s error=%s", r->delivery,
                       id ? id : "-", reason ? reason : "-",
                       error ? error : "-");
                if (!strcmp(tail, "-keyless"))
                        keyless += reason && error &&
                                   !strcmp(reason, "target-refused") &&
                                   !strcmp(error, "INVALID_RECORD");
                else if (!strcmp(tail, "-large"))
                        large += reason && error &&
                                 !strcmp(reason, "too-large") &&
                                 !strcmp(error, "MSG_SIZE_TOO_LARGE");
                else if (!strcmp(tail, "-internal"))
                        internal += reason && !error &&
                                    !strcmp(reason, "target-forbidden");
                free(id);
                free(reason);
                free(error);
                it_msg_free(&msgs[i]);
        }
        CU_ASSERT_EQUAL(n, 3);
        CU_ASSERT_EQUAL(more, n); /* nothing else dead-lettered */
        CU_ASSERT_EQUAL(keyless, 1);
        CU_ASSERT_EQUAL(large, 1);
        CU_ASSERT_EQUAL(internal, 1);
        char id[96], row[64];
        snprintf(id, sizeof(id), "%s-keyless", r->prefix);
        fate_row(id, row, sizeof(row));
        CU_ASSERT_STRING_EQUAL(row, "DEAD target-refused");
        snprintf(id, sizeof(id), "%s-large", r->prefix);
        fate_row(id, row, sizeof(row));
        CU_ASSERT_STRING_EQUAL(row, "DEAD too-large");
        snprintf(id, sizeof(id), "%s-internal", r->prefix);
        fate_row(id, row, sizeof(row));
        CU_ASSERT_STRING_EQUAL(row, "");
        snprintf(id, sizeof(id), "%s-p0", r->prefix);
        fate_row(id, row, sizeof(row));
        CU_ASSERT_STRING_EQUAL(row, "FIRED -");
}

static void check_log(mode_run_t *r, int eos)
{
        int aborts = it_log_count(r->fwd.log, "event=txn_aborted");
        int solo = it_log_count(r->fwd.log, "event=txn_solo ");
        int refused = it_log_count(r->fwd.log, "event=batch_refused");
        /* A refused record's abort is followed by a new producer, so that
         * no transaction aborts on the sequence gap it left. */
        int resets = it_log_count(r->fwd.log, "event=producer_reset");
        int gaps = it_log_count(r->fwd.log, "cause=OUT_OF_ORDER_SEQUENCE");
        printf("\n  %s: batch_refused=%d txn_solo=%d txn_aborted=%d "
               "producer_reset=%d gap_aborts=%d",
               r->delivery, refused, solo, aborts, resets, gaps);
        if (eos) {
                CU_ASSERT(solo >= 2);
                CU_ASSERT(aborts <= MAX_ABORTS);
                CU_ASSERT(resets >= 1);
                CU_ASSERT_EQUAL(gaps, 0);
        } else {
                CU_ASSERT(refused >= 2);
                CU_ASSERT_EQUAL(aborts, 0);
        }
}

static void test_poison_batches(void)
{
        for (int m = 0; m < 2; m++) {
                topics_create(&runs[m]);
                fwd_start(&runs[m]);
        }
        for (int m = 0; m < 2; m++)
                CU_ASSERT_FATAL(it_wait_log(runs[m].fwd.log,
                                            "event=partitions_assigned",
                                            60000) == 0);
        int64_t fire_at = kd_now_ms() + 4000;
        for (int m = 0; m < 2; m++)
                schedule_all(&runs[m], fire_at);
        it_sleep_until(fire_at);
        for (int m = 0; m < 2; m++) {
                check_targets(&runs[m]);
                check_dead(&runs[m]);
        }
        for (int m = 0; m < 2; m++) {
                CU_ASSERT_EQUAL(it_fwd_stop(&runs[m].fwd, SIGTERM), 0);
                check_log(&runs[m], m == 1);
        }
}

int main(void)
{
        static const kd_test_case_t cases[] = {KD_TEST(test_poison_batches),
                                               KD_TEST_END};
        return kd_test_run("poison", cases, suite_init, suite_cleanup);
}
