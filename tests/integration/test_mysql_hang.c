/* SPDX-License-Identifier: Apache-2.0 */
/* Integration: MySQL hangs. The stack's private MariaDB is frozen with
 * SIGSTOP (`stack.sh mysql-pause`) for 35 s, longer than the client's 30 s
 * read timeout, under one forwarder, in each delivery mode:
 *
 *   - 100 tasks due 50 s ahead hop through the 1 s tier all along (hold
 *     horizon 2 s, the ladder 1s,1m,30m,7d of TIERS: a steady stream of
 *     hops), and a malformed record is written during the hang:
 *     the forwarder's stats lines during the hang show hops and commits
 *     rising, and the record reaches the dead-letter topic before MySQL is
 *     back — the loop never waits for the store;
 *   - 50 tasks due 10 s into the hang are not fired during it (no claim
 *     without MySQL), then fire once each after it, none early;
 *   - one line says MySQL stopped answering (5 s after a request went
 *     unanswered, long before the read timeout), one that it answers
 *     again, with how long it was down;
 *   - a SIGHUP is ignored;
 *   - then MySQL is frozen again with a claim out, and a SIGTERM stops the
 *     forwarder within forwarder.shutdown_timeout (3 s here) and a margin
 *     for leaving the group, with exit status 0. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "it_env.h"
#include "kd_test.h"
#include "kd_util.h"

#define N_HOP         100
#define N_DUE         50
#define N_ALL         (N_HOP + N_DUE)
#define HANG_MS       35000
#define HOP_DUE_MS    50000 /* after the schedule */
#define DUE_IN_HANG   10000 /* after the hang began */
#define STOP_BOUND_MS 13000 /* shutdown_timeout 3 s + leaving the group */
/* The old four-tier ladder: a 50 s task hops through the 1 s tier every
 * second (the default ladder would hop it three times in all). */
#define TIERS "1s,1m,30m,7d"

typedef struct task {
        char id[64];
        int64_t fire_at;
        int copies;
        int64_t first_ts;
} task_t;

static int suite_init(void)
{
        return it_env_init();
}

/* The value of field `key` in the last line of the file at path that
 * contains `event=stats`; -1 when there is none. */
static int64_t last_stat(const char *path, const char *key)
{
        FILE *fp = fopen(path, "r");
        if (!fp)
                return -1;
        char line[4096], last[4096] = "";
        while (fgets(line, sizeof(line), fp))
                if (strstr(line, "event=stats "))
                        memcpy(last, line, sizeof(last));
        fclose(fp);
        char needle[64];
        snprintf(needle, sizeof(needle), " %s=", key);
        const char *p = strstr(last, needle);
        return p ? strtoll(p + strlen(needle), NULL, 10) : -1;
}

/* 1 when the file at path has a line containing needle. */
static int log_has(const char *path, const char *needle)
{
        FILE *fp = fopen(path, "r");
        if (!fp)
                return 0;
        char line[4096];
        int found = 0;
        while (!found && fgets(line, sizeof(line), fp))
                found = strstr(line, needle) != NULL;
        fclose(fp);
        return found;
}

/* The lines of the file at path that contain needle. */
static int log_count(const char *path, const char *needle)
{
        FILE *fp = fopen(path, "r");
        if (!fp)
                return 0;
        char line[4096];
        int n = 0;
        while (fgets(line, sizeof(line), fp))
                n += strstr(line, needle) != NULL;
        fclose(fp);
        return n;
}

/* Waits until the log has needle; 0 when it did within timeout_ms. */
static int wait_log(const char *path, const char *needle, int timeout_ms)
{
        int64_t until = kd_mono_ms() + timeout_ms;
        while (!log_has(path, needle))
                if (kd_mono_ms() > until)
                        return -1;
                else
                        usleep(100000);
        return 0;
}

static void schedule(const char *prefix, const char *url, const char *target,
                     task_t *t, size_t n, int64_t fire_at)
{
        kdelay_client_t *c = NULL;
        char errstr[512];
        kdelay_conf_t *conf = it_conf_new(prefix, url);
        CU_ASSERT_PTR_NOT_NULL_FATAL(conf);
        CU_ASSERT_EQUAL_FATAL(
            kdelay_conf_set(conf, "tiers", TIERS, errstr, sizeof(errstr)),
            KDELAY_OK);
        CU_ASSERT_EQUAL_FATAL(
            kdelay_client_new(&c, conf, errstr, sizeof(errstr)), KDELAY_OK);
        for (size_t i = 0; i < n; i++) {
                kdelay_task_t kt;
                kdelay_task_init(&kt);
                kt.topic = target;
                kt.value = "v";
                kt.value_len = 1;
                kt.fire_at_ms = t[i].fire_at = fire_at;
                CU_ASSERT_EQUAL_FATAL(
                    kdelay_schedule_async(c, &kt, NULL, NULL, t[i].id,
                                          sizeof(t[i].id), errstr,
                                          sizeof(errstr)),
                    KDELAY_OK);
        }
        CU_ASSERT_EQUAL(kdelay_flush(c, 30000), KDELAY_OK);
        kdelay_client_destroy(c);
}

/* Writes a record without kdelay-id to the 1 s tier of prefix. */
static void produce_malformed(const char *prefix, const char *target)
{
        rd_kafka_t *rk = it_kafka_new(RD_KAFKA_PRODUCER, NULL);
        CU_ASSERT_PTR_NOT_NULL_FATAL(rk);
        char topic[128];
        snprintf(topic, sizeof(topic), "%s.tier.1s", prefix);
        rd_kafka_headers_t *h = rd_kafka_headers_new(4);
        rd_kafka_header_add(h, "kdelay-v", -1, "1", -1);
        rd_kafka_header_add(h, "kdelay-target", -1, target, -1);
        rd_kafka_header_add(h, "kdelay-fire-at", -1, "1", -1);
        CU_ASSERT_EQUAL(
            rd_kafka_producev(rk, RD_KAFKA_V_TOPIC(topic),
                              RD_KAFKA_V_VALUE("bad", 3), RD_KAFKA_V_HEADERS(h),
                              RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
                              RD_KAFKA_V_END),
            0);
        CU_ASSERT_EQUAL(rd_kafka_flush(rk, 10000), 0);
        rd_kafka_destroy(rk);
}

/* Counts the records of target per task (and the first one's timestamp);
 * returns how many tasks of t have a copy. */
static size_t count_delivered(const char *target, task_t *t, size_t n,
                              int idle_ms)
{
        const char *topics[] = {target, NULL};
        it_msg_t *msgs = NULL;
        size_t cnt = it_consume_all(topics, &msgs, idle_ms, 30000);
        for (size_t i = 0; i < n; i++)
                t[i].copies = 0;
        for (size_t k = 0; k < cnt; k++) {
                char *id = it_header(&msgs[k], "kdelay-id");
                for (size_t i = 0; id && i < n; i++)
                        if (!strcmp(id, t[i].id)) {
                                if (!t[i].copies++ ||
                                    msgs[k].ts < t[i].first_ts)
                                        t[i].first_ts = msgs[k].ts;
                                break;
                        }
                free(id);
                it_msg_free(&msgs[k]);
        }
        free(msgs);
        size_t have = 0;
        for (size_t i = 0; i < n; i++)
                have += t[i].copies > 0;
        return have;
}

static size_t topic_records(const char *topic)
{
        const char *topics[] = {topic, NULL};
        it_msg_t *msgs = NULL;
        size_t cnt = it_consume_all(topics, &msgs, 1500, 10000);
        for (size_t k = 0; k < cnt; k++)
                it_msg_free(&msgs[k]);
        free(msgs);
        return cnt;
}

static void run(const char *delivery)
{
        int eos = !strcmp(delivery, "exactly_once");
        const char *commits_key = eos ? "txn_commits" : "commits";
        char prefix[40], group[64], db[64], url[256], target[96], dead[96];
        char mode_prop[64];
        static task_t t[N_ALL];
        memset(t, 0, sizeof(t));
        it_unique(prefix, sizeof(prefix), eos ? "ithangx" : "ithanga");
        it_unique(db, sizeof(db), "kdit_hang");
        snprintf(group, sizeof(group), "%s-group", prefix);
        snprintf(target, sizeof(target), "%s.target", prefix);
        snprintf(dead, sizeof(dead), "%s.dead", prefix);
        snprintf(mode_prop, sizeof(mode_prop), "forwarder.delivery=%s",
                 delivery);
        CU_ASSERT_EQUAL_FATAL(it_db_create(db, 1, url, sizeof(url)), 0);
        CU_ASSERT_EQUAL_FATAL(it_tiers_create(prefix, url, 2), 0);
        CU_ASSERT_EQUAL_FATAL(it_create_topic(target, 2), 0);

        it_fwd_t f = {.instance = "fwHANG", .pid = -1};
        const char *props[] = {mode_prop,
                               "tiers=" TIERS,
                               "forwarder.hold_horizon=2s",
                               "forwarder.stats_interval=1s",
                               "forwarder.commit_interval=500ms",
                               "forwarder.shutdown_timeout=3s",
                               NULL};
        CU_ASSERT_EQUAL_FATAL(
            it_fwd_start(&f, KDELAY_FORWARDER, prefix, group, url, props), 0);
        CU_ASSERT_EQUAL_FATAL(
            wait_log(f.log, "event=partitions_assigned", 30000), 0);

        int64_t t0 = kd_now_ms();
        schedule(prefix, url, target, t, N_HOP, t0 + HOP_DUE_MS);
        usleep(3000000); /* hops under way */
        int64_t hang_at = kd_now_ms();
        schedule(prefix, url, target, t + N_HOP, N_DUE, hang_at + DUE_IN_HANG);

        CU_ASSERT_EQUAL_FATAL(it_stack("mysql-pause"), 0);
        usleep(3000000);
        int64_t hops0 = last_stat(f.log, "hopped");
        int64_t commits0 = last_stat(f.log, commits_key);
        produce_malformed(prefix, target);
        usleep((useconds_t)(HANG_MS - 8000) * 1000);
        int64_t hops1 = last_stat(f.log, "hopped");
        int64_t commits1 = last_stat(f.log, commits_key);
        size_t dead_in_hang = topic_records(dead);
        size_t fired_in_hang = count_delivered(target, t, N_ALL, 1000);
        /* Before the client's 30 s read timeout fails anything: the store
         * is logged down once, from a request left unanswered 5 s. */
        int down_lines = log_count(f.log, "event=mysql_unavailable");
        int stall_lines = log_count(f.log, "what=no_answer");
        printf("\n  %s, during the hang: hopped %lld -> %lld, %s %lld -> %lld, "
               "dead letters %zu, fired %zu",
               delivery, (long long)hops0, (long long)hops1, commits_key,
               (long long)commits0, (long long)commits1, dead_in_hang,
               fired_in_hang);
        CU_ASSERT_EQUAL(it_stack("mysql-resume"), 0);
        int64_t resumed = kd_now_ms();

        CU_ASSERT(hops0 >= 0);
        CU_ASSERT(hops1 >= hops0 + N_HOP * 10); /* ~1 hop/s per task */
        /* Commits go on (at-least-once's stop at the first task whose
         * claim is out, so fewer than one per commit_interval). */
        CU_ASSERT(commits1 > commits0);
        CU_ASSERT_EQUAL(dead_in_hang, 1);
        CU_ASSERT_EQUAL(fired_in_hang, 0); /* no claim, no fire */
        CU_ASSERT_EQUAL(down_lines, 1);
        CU_ASSERT_EQUAL(stall_lines, 1);

        /* After the hang: every task once (at least once), none early. */
        int64_t until = kd_mono_ms() + 60000;
        size_t have = 0;
        while ((have = count_delivered(target, t, N_ALL, 1500)) < N_ALL &&
               kd_mono_ms() < until)
                usleep(500000);
        CU_ASSERT_EQUAL(have, N_ALL);
        int early = 0, extra = 0;
        int64_t late_max = 0;
        for (size_t i = 0; i < N_ALL; i++) {
                early += t[i].copies && t[i].first_ts < t[i].fire_at;
                extra += t[i].copies > 1;
                int64_t from = t[i].fire_at > resumed ? t[i].fire_at : resumed;
                if (t[i].copies && t[i].first_ts - from > late_max)
                        late_max = t[i].first_ts - from;
        }
        printf("; after it: delivered %zu of %d, early %d, duplicated %d, "
               "latest %lld ms after due or resume",
               have, N_ALL, early, extra, (long long)late_max);
        CU_ASSERT_EQUAL(early, 0);
        CU_ASSERT_EQUAL(extra, 0); /* no process died */
        /* One line for the outage, one for its end, whatever failed in
         * between (the read timeout, reconnects). */
        CU_ASSERT_EQUAL(wait_log(f.log, "event=mysql_available", 10000), 0);
        int up_lines = log_count(f.log, "event=mysql_available");
        down_lines = log_count(f.log, "event=mysql_unavailable");
        printf("; logged down %d, up %d (%s)", down_lines, up_lines,
               log_has(f.log, "down_ms=") ? "with down_ms" : "no down_ms");
        CU_ASSERT_EQUAL(down_lines, 1);
        CU_ASSERT_EQUAL(up_lines, 1);
        CU_ASSERT(log_has(f.log, "event=mysql_available down_ms="));

        /* SIGHUP (a terminal hang-up, a supervisor's reload) is ignored. */
        CU_ASSERT_EQUAL(kill(f.pid, SIGHUP), 0);
        usleep(500000);
        CU_ASSERT_EQUAL(it_wait_pid(f.pid, 0), -1); /* still running */

        /* A stop while MySQL hangs with a claim out. */
        task_t last;
        memset(&last, 0, sizeof(last));
        schedule(prefix, url, target, &last, 1, kd_now_ms() + 1500);
        CU_ASSERT_EQUAL_FATAL(it_stack("mysql-pause"), 0);
        usleep(2500000); /* the claim is out */
        int64_t s0 = kd_mono_ms();
        CU_ASSERT_EQUAL(kill(f.pid, SIGTERM), 0);
        int rc = it_wait_pid(f.pid, 30000);
        int64_t took = kd_mono_ms() - s0;
        CU_ASSERT_EQUAL(it_stack("mysql-resume"), 0);
        f.pid = -1;
        printf("; SIGTERM in a hang: exit %d after %lld ms\n", rc,
               (long long)took);
        CU_ASSERT_EQUAL(rc, 0);
        CU_ASSERT(took < STOP_BOUND_MS);
        CU_ASSERT(log_has(f.log, "event=store_abandoned"));
        it_db_drop(db);
}

static void test_at_least_once_goes_on_while_mysql_hangs(void)
{
        run("at_least_once");
}

static void test_exactly_once_goes_on_while_mysql_hangs(void)
{
        run("exactly_once");
}

/* A failed case must not leave MySQL frozen for the tests after it. */
static int suite_cleanup(void)
{
        it_stack("mysql-resume");
        return 0;
}

int main(void)
{
        static const kd_test_case_t cases[] = {
            KD_TEST(test_at_least_once_goes_on_while_mysql_hangs),
            KD_TEST(test_exactly_once_goes_on_while_mysql_hangs), KD_TEST_END};
        return kd_test_run("mysql_hang", cases, suite_init, suite_cleanup);
}
