/* SPDX-License-Identifier: Apache-2.0 */
/* Integration: MySQL hangs. The stack's private MariaDB is frozen with
 * SIGSTOP (`stack.sh mysql-pause`) for 35 s, longer than the client's 30 s
 * read timeout, under two forwarders at once, one per delivery mode (each
 * its own topics and database):
 *
 *   - 100 tasks due 5 s after the hang hop through the 1 s tier all along
 *     (hold horizon 2 s, the ladder 1s,1m,30m,7d of TIERS: a steady stream
 *     of hops), and a malformed record is written during the hang:
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
 *     for leaving the group, with exit status 0.
 *
 * What it proves, and where the stage logic is proven instead (issue 37:
 * integration keeps what needs the real MariaDB and broker):
 *   at_least_once_goes_on_while_mysql_hangs  kept: a real SIGSTOP past
 *       the client's read timeout (the read timeout and reconnects in
 *       between still make one outage), every check above
 *   exactly_once_goes_on_while_mysql_hangs   kept, the same checks with
 *       real transactions; shortened: in the same hang as at_least_once
 *       (it was a second 35 s hang after it)
 * (the two are one case now, both_modes_go_on_while_mysql_hangs), and both
 * modes' hopping tasks are due 5 s after the hang (they were 15 s after).
 * That a hung store holds only claims and does not hold the stop is proven
 * per mode on the mock cluster by test_fwd_mock (hung_store_*: an
 * in-memory store that never answers); that it is logged down and up once,
 * and when, in virtual time by test_store_vt and test_outage_after. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "it_env.h"
#include "kd_test.h"
#include "kd_util.h"

#define N_HOP   100
#define N_DUE   50
#define N_ALL   (N_HOP + N_DUE)
#define HANG_MS 35000
/* After the schedule: 3 s before the hang, the hang, and 5 s after it. */
#define HOP_DUE_MS    (3000 + HANG_MS + 5000)
#define DUE_IN_HANG   10000 /* after the hang began */
#define STOP_BOUND_MS 13000 /* shutdown_timeout 3 s + leaving the group */
/* The old four-tier ladder: a 43 s task hops through the 1 s tier every
 * second, whatever the default ladder is. */
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

/* Waits until the stats line's key reaches at least min (at most
 * timeout_ms): 0, or -1. */
static int wait_stat(const char *path, const char *key, int64_t min,
                     int timeout_ms)
{
        for (int64_t end = kd_mono_ms() + timeout_ms; kd_mono_ms() < end;
             usleep(100000))
                if (last_stat(path, key) >= min)
                        return 0;
        return -1;
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

/* One forwarder in one delivery mode, and what the test saw of it. */
typedef struct hang_run {
        const char *delivery;
        int eos;
        const char *commits_key;
        char prefix[40], group[64], db[64], url[256], target[96], dead[96];
        char mode_prop[64];
        task_t t[N_ALL];
        task_t last; /* the claim out at the stop */
        it_fwd_t f;
        int64_t hops0, commits0;
} hang_run_t;

static void run_start(hang_run_t *r, const char *delivery)
{
        r->delivery = delivery;
        r->eos = !strcmp(delivery, "exactly_once");
        r->commits_key = r->eos ? "txn_commits" : "commits";
        it_unique(r->prefix, sizeof(r->prefix), r->eos ? "ithangx" : "ithanga");
        it_unique(r->db, sizeof(r->db), "kdit_hang");
        snprintf(r->group, sizeof(r->group), "%s-group", r->prefix);
        snprintf(r->target, sizeof(r->target), "%s.target", r->prefix);
        snprintf(r->dead, sizeof(r->dead), "%s.dead", r->prefix);
        snprintf(r->mode_prop, sizeof(r->mode_prop), "forwarder.delivery=%s",
                 delivery);
        CU_ASSERT_EQUAL_FATAL(it_db_create(r->db, 1, r->url, sizeof(r->url)),
                              0);
        CU_ASSERT_EQUAL_FATAL(it_tiers_create(r->prefix, r->url, 2), 0);
        CU_ASSERT_EQUAL_FATAL(it_create_topic(r->target, 2), 0);
        r->f =
            (it_fwd_t){.instance = r->eos ? "fwHANGX" : "fwHANGA", .pid = -1};
        const char *props[] = {r->mode_prop,
                               "tiers=" TIERS,
                               "forwarder.hold_horizon=2s",
                               "forwarder.stats_interval=1s",
                               "forwarder.commit_interval=500ms",
                               "forwarder.shutdown_timeout=3s",
                               NULL};
        CU_ASSERT_EQUAL_FATAL(it_fwd_start(&r->f, KDELAY_FORWARDER, r->prefix,
                                           r->group, r->url, props),
                              0);
}

/* During the hang, from 3 s in until 5 s before its end: hops and commits
 * rising, the malformed record dead-lettered, nothing fired, the store
 * logged down once. */
static void hang_check(hang_run_t *r)
{
        int64_t hops1 = last_stat(r->f.log, "hopped");
        int64_t commits1 = last_stat(r->f.log, r->commits_key);
        size_t dead_in_hang = topic_records(r->dead);
        size_t fired_in_hang = count_delivered(r->target, r->t, N_ALL, 1000);
        /* Before the client's 30 s read timeout fails anything: the store
         * is logged down once, from a request left unanswered 5 s. */
        int down_lines = log_count(r->f.log, "event=mysql_unavailable");
        int stall_lines = log_count(r->f.log, "what=no_answer");
        printf("\n  %s, during the hang: hopped %lld -> %lld, %s %lld -> %lld, "
               "dead letters %zu, fired %zu",
               r->delivery, (long long)r->hops0, (long long)hops1,
               r->commits_key, (long long)r->commits0, (long long)commits1,
               dead_in_hang, fired_in_hang);
        CU_ASSERT(r->hops0 >= 0);
        CU_ASSERT(hops1 >= r->hops0 + N_HOP * 10); /* ~1 hop/s per task */
        /* Commits go on (at-least-once's stop at the first task whose
         * claim is out, so fewer than one per commit_interval). */
        CU_ASSERT(commits1 > r->commits0);
        CU_ASSERT_EQUAL(dead_in_hang, 1);
        CU_ASSERT_EQUAL(fired_in_hang, 0); /* no claim, no fire */
        CU_ASSERT_EQUAL(down_lines, 1);
        CU_ASSERT_EQUAL(stall_lines, 1);
}

/* After the hang: every task once (at least once), none early; one line
 * for the outage and one for its end; a SIGHUP ignored. */
static void after_check(hang_run_t *r, int64_t resumed)
{
        task_t *t = r->t;
        int64_t until = kd_mono_ms() + 60000;
        size_t have = 0;
        while ((have = count_delivered(r->target, t, N_ALL, 1500)) < N_ALL &&
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
        printf("\n  %s after it: delivered %zu of %d, early %d, duplicated %d, "
               "latest %lld ms after due or resume",
               r->delivery, have, N_ALL, early, extra, (long long)late_max);
        CU_ASSERT_EQUAL(early, 0);
        CU_ASSERT_EQUAL(extra, 0); /* no process died */
        /* One line for the outage, one for its end, whatever failed in
         * between (the read timeout, reconnects). */
        CU_ASSERT_EQUAL(wait_log(r->f.log, "event=mysql_available", 10000), 0);
        int up_lines = log_count(r->f.log, "event=mysql_available");
        int down_lines = log_count(r->f.log, "event=mysql_unavailable");
        printf("; logged down %d, up %d (%s)", down_lines, up_lines,
               log_has(r->f.log, "down_ms=") ? "with down_ms" : "no down_ms");
        CU_ASSERT_EQUAL(down_lines, 1);
        CU_ASSERT_EQUAL(up_lines, 1);
        CU_ASSERT(log_has(r->f.log, "event=mysql_available down_ms="));

        /* SIGHUP (a terminal hang-up, a supervisor's reload) is ignored. */
        CU_ASSERT_EQUAL(kill(r->f.pid, SIGHUP), 0);
        usleep(500000);
        CU_ASSERT_EQUAL(it_wait_pid(r->f.pid, 0), -1); /* still running */
}

enum { ALO, EOS, N_MODES };
static hang_run_t runs[N_MODES];

static void run_both(void)
{
        static const char *const deliveries[N_MODES] = {"at_least_once",
                                                        "exactly_once"};
        memset(runs, 0, sizeof(runs));
        for (int m = 0; m < N_MODES; m++)
                run_start(&runs[m], deliveries[m]);
        for (int m = 0; m < N_MODES; m++)
                CU_ASSERT_EQUAL_FATAL(
                    wait_log(runs[m].f.log, "event=partitions_assigned", 30000),
                    0);

        int64_t t0 = kd_now_ms();
        for (int m = 0; m < N_MODES; m++)
                schedule(runs[m].prefix, runs[m].url, runs[m].target, runs[m].t,
                         N_HOP, t0 + HOP_DUE_MS);
        /* Hops under way: each task hopped once (stats every second). */
        for (int m = 0; m < N_MODES; m++)
                CU_ASSERT_EQUAL_FATAL(
                    wait_stat(runs[m].f.log, "hopped", N_HOP, 30000), 0);
        int64_t hang_at = kd_now_ms();
        for (int m = 0; m < N_MODES; m++)
                schedule(runs[m].prefix, runs[m].url, runs[m].target,
                         runs[m].t + N_HOP, N_DUE, hang_at + DUE_IN_HANG);

        CU_ASSERT_EQUAL_FATAL(it_stack("mysql-pause"), 0);
        usleep(3000000);
        for (int m = 0; m < N_MODES; m++) {
                runs[m].hops0 = last_stat(runs[m].f.log, "hopped");
                runs[m].commits0 =
                    last_stat(runs[m].f.log, runs[m].commits_key);
                produce_malformed(runs[m].prefix, runs[m].target);
        }
        usleep((useconds_t)(HANG_MS - 8000) * 1000);
        for (int m = 0; m < N_MODES; m++)
                hang_check(&runs[m]);
        CU_ASSERT_EQUAL(it_stack("mysql-resume"), 0);
        int64_t resumed = kd_now_ms();
        for (int m = 0; m < N_MODES; m++)
                after_check(&runs[m], resumed);

        /* A stop while MySQL hangs with a claim out. */
        for (int m = 0; m < N_MODES; m++)
                schedule(runs[m].prefix, runs[m].url, runs[m].target,
                         &runs[m].last, 1, kd_now_ms() + 1500);
        CU_ASSERT_EQUAL_FATAL(it_stack("mysql-pause"), 0);
        usleep(2500000); /* the claims are out */
        int64_t s0 = kd_mono_ms();
        for (int m = 0; m < N_MODES; m++)
                CU_ASSERT_EQUAL(kill(runs[m].f.pid, SIGTERM), 0);
        /* Each from the signal until its exit was seen (an upper bound
         * for the second). */
        for (int m = 0; m < N_MODES; m++) {
                hang_run_t *r = &runs[m];
                int rc = it_wait_pid(r->f.pid, 30000);
                int64_t took = kd_mono_ms() - s0;
                r->f.pid = -1;
                printf("\n  %s: SIGTERM in a hang: exit %d after %lld ms",
                       r->delivery, rc, (long long)took);
                CU_ASSERT_EQUAL(rc, 0);
                CU_ASSERT(took < STOP_BOUND_MS);
                CU_ASSERT(log_has(r->f.log, "event=store_abandoned"));
        }
        printf("\n");
        CU_ASSERT_EQUAL(it_stack("mysql-resume"), 0);
        for (int m = 0; m < N_MODES; m++)
                it_db_drop(runs[m].db);
}

static void test_both_modes_go_on_while_mysql_hangs(void)
{
        run_both();
}

/* A failed case must not leave MySQL frozen for the tests after it, nor
 * its forwarders running. */
static int suite_cleanup(void)
{
        it_stack("mysql-resume");
        for (int m = 0; m < N_MODES; m++)
                if (runs[m].f.pid > 0)
                        it_fwd_stop(&runs[m].f, SIGKILL);
        return 0;
}

int main(void)
{
        static const kd_test_case_t cases[] = {
            KD_TEST(test_both_modes_go_on_while_mysql_hangs), KD_TEST_END};
        return kd_test_run("mysql_hang", cases, suite_init, suite_cleanup);
}
