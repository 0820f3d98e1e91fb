/* SPDX-License-Identifier: Apache-2.0 */
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
 * aborts.
 *
 * test_replay_after_fix: dead letters of a target fixed since are
 * replayed and delivered, though the forwarder remembers the target
 * refusing them (issue 35). */
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
        char sql[1024];
        out[0] = '\0';
        MYSQL *conn = it_mysql_connect();
        if (!conn)
                return;
        /* Its state as readers see it (a FIRING row a run covers is
         * FIRED): IT_FATE_STATE_SQL names the tables bare. */
        snprintf(sql, sizeof(sql), "USE `%s`", db);
        if (mysql_query(conn, sql)) {
                mysql_close(conn);
                return;
        }
        snprintf(sql, sizeof(sql),
                 "SELECT " IT_FATE_STATE_SQL ", IFNULL(dead_reason, '-') FROM "
                 "kdelay_fate WHERE task_id = '%s'",
                 id);
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

/* Issue 35 (6): a replay after fixing its target delivers. Per mode, 10
 * keyless tasks for a compacted topic ("fixed") and 10 for another
 * ("stays") are dead-lettered target-refused, the forwarder remembering
 * both targets' refusal for 10 minutes; "fixed" is then set to
 * cleanup.policy=delete and every dead letter replayed. Checked: the 10
 * of "stays" are not replayed (REFUSED: compacted topic needs a key; exit
 * 1); the 10 of "fixed" are REPLAYED and delivered once each, tried for
 * real though their target is remembered refusing (event=replay_tried),
 * the first delivery forgetting the refusal (event=refusal_forgotten);
 * nothing more is dead-lettered. Before the fix the forwarder
 * dead-lettered the 10 replays again in 0.3 s from its memory. */
#define N_REPLAY 10

typedef struct replay_run {
        const char *delivery;
        char prefix[40], fixed[96], stays[96], dead[96];
        it_fwd_t fwd;
} replay_run_t;

static replay_run_t replay_runs[2] = {
    {.delivery = "at_least_once", .fwd = {"fwReplayA", -1, "", NULL}},
    {.delivery = "exactly_once", .fwd = {"fwReplayE", -1, "", NULL}}};

/* Sets topic's cleanup.policy (AlterConfigs); 0 on success. */
static int alter_cleanup_policy(const char *topic, const char *policy)
{
        char errstr[512];
        rd_kafka_t *rk = it_kafka_new(RD_KAFKA_PRODUCER, NULL);
        if (!rk)
                return -1;
        rd_kafka_ConfigResource_t *cr =
            rd_kafka_ConfigResource_new(RD_KAFKA_RESOURCE_TOPIC, topic);
        rd_kafka_ConfigResource_set_config(cr, "cleanup.policy", policy);
        rd_kafka_AdminOptions_t *opt =
            rd_kafka_AdminOptions_new(rk, RD_KAFKA_ADMIN_OP_ALTERCONFIGS);
        rd_kafka_AdminOptions_set_request_timeout(opt, 10000, errstr,
                                                  sizeof(errstr));
        rd_kafka_queue_t *q = rd_kafka_queue_new(rk);
        rd_kafka_AlterConfigs(rk, &cr, 1, opt, q);
        rd_kafka_event_t *ev = rd_kafka_queue_poll(q, 15000);
        int rc = -1;
        if (ev && !rd_kafka_event_error(ev)) {
                size_t n = 0;
                const rd_kafka_ConfigResource_t **res =
                    rd_kafka_AlterConfigs_result_resources(
                        rd_kafka_event_AlterConfigs_result(ev), &n);
                rc = n == 1 && !rd_kafka_ConfigResource_error(res[0]) ? 0 : -1;
        }
        if (rc)
                printf("\n  AlterConfigs %s: %s", topic,
                       ev ? rd_kafka_event_error_string(ev) : "no answer");
        if (ev)
                rd_kafka_event_destroy(ev);
        rd_kafka_queue_destroy(q);
        rd_kafka_AdminOptions_destroy(opt);
        rd_kafka_ConfigResource_destroy(cr);
        rd_kafka_destroy(rk);
        return rc;
}

static void replay_setup(replay_run_t *r)
{
        static const char *const compact[] = {"cleanup.policy", "compact",
                                              NULL};
        char grp[96], delivery[64];
        it_unique(r->prefix, sizeof(r->prefix), "itrepl");
        snprintf(r->fixed, sizeof(r->fixed), "%s.fixed", r->prefix);
        snprintf(r->stays, sizeof(r->stays), "%s.stays", r->prefix);
        snprintf(r->dead, sizeof(r->dead), "%s.dead", r->prefix);
        CU_ASSERT_EQUAL_FATAL(it_tiers_create(r->prefix, url, 2), 0);
        CU_ASSERT_EQUAL_FATAL(it_create_topic_conf(r->fixed, 1, compact), 0);
        CU_ASSERT_EQUAL_FATAL(it_create_topic_conf(r->stays, 1, compact), 0);
        snprintf(grp, sizeof(grp), "%s-group", r->prefix);
        snprintf(delivery, sizeof(delivery), "forwarder.delivery=%s",
                 r->delivery);
        const char *props[] = {delivery, "forwarder.stats_interval=5s",
                               "forwarder.hold_horizon=10s", NULL};
        CU_ASSERT_FATAL(it_fwd_start(&r->fwd, KDELAY_FORWARDER, r->prefix, grp,
                                     url, props) == 0);
}

static void replay_schedule(replay_run_t *r, int64_t fire_at)
{
        char errstr[512], id[96];
        kdelay_client_t *c = NULL;
        kdelay_conf_t *conf = it_conf_new(r->prefix, url);
        CU_ASSERT_PTR_NOT_NULL_FATAL(conf);
        CU_ASSERT_EQUAL_FATAL(
            kdelay_client_new(&c, conf, errstr, sizeof(errstr)), KDELAY_OK);
        for (int i = 0; i < N_REPLAY; i++) {
                snprintf(id, sizeof(id), "%s-f%d", r->prefix, i);
                schedule(c, r->fixed, id, NULL, 20, fire_at);
                snprintf(id, sizeof(id), "%s-s%d", r->prefix, i);
                schedule(c, r->stays, id, NULL, 20, fire_at);
        }
        CU_ASSERT_EQUAL(kdelay_flush(c, 10000), KDELAY_OK);
        kdelay_client_destroy(c);
}

/* Runs kdelayctl dead replay for r; its exit status, its output in
 * *out (caller frees). */
static int replay_ctl(replay_run_t *r, char **out)
{
        char *err = NULL;
        int rc = it_ctl(KDELAY_CTL, r->prefix, url, out, &err, "dead", "replay",
                        "--reason", "target-refused", NULL);
        printf("\n  %s: dead replay exit %d, stderr: %s", r->delivery, rc,
               err ? err : "");
        free(err);
        return rc;
}

/* How many lines of out hold both a and b. */
static int lines_with(const char *out, const char *a, const char *b)
{
        int n = 0;
        for (const char *l = out; l && *l;) {
                const char *e = strchr(l, '\n');
                size_t len = e ? (size_t)(e - l) : strlen(l);
                char line[1024];
                snprintf(line, sizeof(line), "%.*s", (int)len, l);
                n += strstr(line, a) && strstr(line, b);
                l = e ? e + 1 : NULL;
        }
        return n;
}

static void replay_check(replay_run_t *r, int64_t replayed_at)
{
        /* Each replay of "fixed" delivered once, with kdelay-replay-of. */
        const char *topics[] = {r->fixed, NULL};
        it_msg_t msgs[N_REPLAY + 1];
        size_t n = it_consume(topics, msgs, N_REPLAY, 30000);
        int seen[N_REPLAY] = {0}, stray = 0;
        int64_t last = 0;
        for (size_t i = 0; i < n; i++) {
                char *of = it_header(&msgs[i], KDELAY_HDR_REPLAY_OF);
                int k = -1;
                size_t plen = strlen(r->prefix);
                if (of && !strncmp(of, r->prefix, plen) &&
                    sscanf(of + plen, "-f%d", &k) == 1 && k >= 0 &&
                    k < N_REPLAY)
                        seen[k]++;
                else
                        stray++;
                if (msgs[i].ts > last)
                        last = msgs[i].ts;
                free(of);
                it_msg_free(&msgs[i]);
        }
        int once = 0;
        for (int k = 0; k < N_REPLAY; k++)
                once += seen[k] == 1;
        printf("\n  %s: replays delivered once %d/%d, unexpected %d",
               r->delivery, once, N_REPLAY, stray);
        if (n)
                printf(" (the last %lld ms after the replay)",
                       (long long)(last - replayed_at));
        CU_ASSERT_EQUAL(once, N_REPLAY);
        CU_ASSERT_EQUAL(stray, 0);
        /* Nothing dead-lettered again: the 2 x 10 of before only. */
        const char *dead[] = {r->dead, NULL};
        it_msg_t *dl = NULL;
        size_t nd = it_consume_all(dead, &dl, 3000, 30000);
        int again = 0;
        int64_t again_last = 0;
        for (size_t i = 0; i < nd; i++) {
                char *of = it_header(&dl[i], KDELAY_HDR_REPLAY_OF);
                if (of) {
                        again++;
                        if (dl[i].ts > again_last)
                                again_last = dl[i].ts;
                }
                free(of);
                it_msg_free(&dl[i]);
        }
        free(dl);
        printf("\n  %s: dead letters %zu (were %d), replays among them %d",
               r->delivery, nd, 2 * N_REPLAY, again);
        if (again)
                printf(" (the last %lld ms after the replay)",
                       (long long)(again_last - replayed_at));
        CU_ASSERT_EQUAL(nd, 2 * N_REPLAY);
        CU_ASSERT_EQUAL(again, 0);
}

static void test_replay_after_fix(void)
{
        for (int m = 0; m < 2; m++)
                replay_setup(&replay_runs[m]);
        for (int m = 0; m < 2; m++)
                CU_ASSERT_FATAL(it_wait_log(replay_runs[m].fwd.log,
                                            "event=partitions_assigned",
                                            60000) == 0);
        int64_t fire_at = kd_now_ms() + 4000;
        for (int m = 0; m < 2; m++)
                replay_schedule(&replay_runs[m], fire_at);
        for (int m = 0; m < 2; m++) {
                const char *dead[] = {replay_runs[m].dead, NULL};
                CU_ASSERT_EQUAL_FATAL(
                    it_wait_records(dead, 2 * N_REPLAY, 60000), 2 * N_REPLAY);
        }
        /* The operator fixes one target (and not the other). */
        for (int m = 0; m < 2; m++)
                CU_ASSERT_EQUAL_FATAL(
                    alter_cleanup_policy(replay_runs[m].fixed, "delete"), 0);
        it_sleep_until(kd_now_ms() + 1000); /* the broker applies it */
        int64_t replayed_at[2];
        for (int m = 0; m < 2; m++) {
                replay_run_t *r = &replay_runs[m];
                char *out = NULL;
                replayed_at[m] = kd_now_ms();
                int rc = replay_ctl(r, &out);
                int ok = lines_with(out, " REPLAYED ", "~replay-");
                int refused =
                    lines_with(out, " REFUSED ", "compacted topic needs a key");
                char f_id[64], s_id[64];
                snprintf(f_id, sizeof(f_id), "%s-f", r->prefix);
                snprintf(s_id, sizeof(s_id), "%s-s", r->prefix);
                int fixed_ok = lines_with(out, f_id, " REPLAYED ");
                int stays_refused = lines_with(out, s_id, " REFUSED ");
                printf("\n  %s: REPLAYED %d (of the fixed target %d), "
                       "REFUSED %d (of the compacted one %d)",
                       r->delivery, ok, fixed_ok, refused, stays_refused);
                CU_ASSERT_EQUAL(rc, 1); /* something refused */
                CU_ASSERT_EQUAL(ok, N_REPLAY);
                CU_ASSERT_EQUAL(fixed_ok, N_REPLAY);
                CU_ASSERT_EQUAL(refused, N_REPLAY);
                CU_ASSERT_EQUAL(stays_refused, N_REPLAY);
                free(out);
        }
        for (int m = 0; m < 2; m++)
                replay_check(&replay_runs[m], replayed_at[m]);
        for (int m = 0; m < 2; m++) {
                replay_run_t *r = &replay_runs[m];
                CU_ASSERT_EQUAL(it_fwd_stop(&r->fwd, SIGTERM), 0);
                int tried = it_log_count(r->fwd.log, "event=replay_tried");
                int forgot =
                    it_log_count(r->fwd.log, "event=refusal_forgotten");
                printf("\n  %s: replay_tried=%d refusal_forgotten=%d "
                       "txn_aborted=%d",
                       r->delivery, tried, forgot,
                       it_log_count(r->fwd.log, "event=txn_aborted"));
                CU_ASSERT(tried >= 1);
                CU_ASSERT_EQUAL(forgot, 1);
        }
}

int main(void)
{
        static const kd_test_case_t cases[] = {KD_TEST(test_poison_batches),
                                               KD_TEST(test_replay_after_fix),
                                               KD_TEST_END};
        return kd_test_run("poison", cases, suite_init, suite_cleanup);
}
