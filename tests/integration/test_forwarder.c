/* SPDX-License-Identifier: Apache-2.0 */
/* Integration: kdelay-forwarder end to end against the real broker and
 * MariaDB, in one timeline that exercises every path and fault at once:
 *
 *   2,000 tasks due from +3 s to +80 s, from the library and from a plain
 *   producer writing the headers itself, across every tier path (held at
 *   once, hops 1m -> 1s, repeated 1s hops); malformed records interleaved;
 *   two forwarders in one group; 10% cancelled before due; some cancelled
 *   after delivery (exit 3); forwarder A stopped with SIGTERM and
 *   restarted; forwarder B killed with SIGKILL and restarted; MySQL
 *   stopped for 5 s while tasks come due.
 *
 * Then it checks: nothing lost, nothing early, no acknowledged cancel
 * delivered, duplicates only among tasks in flight at the SIGKILL (same
 * kdelay-id), every malformed record dead-lettered with its reason, every
 * delivery claimed in MySQL, lateness outside the fault windows within a
 * behaviour bound (p99 under a second), and within each fault window
 * bounded by the time the fault ends. The windows are derived from when
 * the faults happened and the session timeout and foreign-claim wait the
 * forwarders run with.
 *
 * What each case proves, and where stage logic is proven instead (issue
 * 37: integration keeps what needs the real broker or MySQL):
 *   backpressure_bounds_the_held_set   kept: real partitions paused and
 *       resumed at half the held set (also test_fwd_mock, mock cluster)
 *   second_signal_exits_at_once        kept: a real process's signals
 *   max_fire_rate_paces_in_due_order   moved: test_pace_vt (tokens, due
 *       order, the burst, rate_limited counted) and test_fwd_mock's
 *       fire_rate_limit_spreads_due_tasks_in_due_order (both modes)
 *   forwarder_timeline                 shortened from 150 s to 80 s (the
 *       same faults, closer together): rebalances on a SIGTERM and a
 *       SIGKILL, a real MySQL stop, dead letters, cancels and audit
 *       --fix against real SQL; hold/claim/fire timing is proven by
 *       test_sched_vt, test_claim_vt and test_takeover_vt. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "it_env.h"
#include "kd_test.h"
#include "kd_tiers.h"
#include "kd_util.h"

#define N_TASKS         2000
#define N_RAW           400 /* of which written by a plain producer */
#define SPREAD_FIRST_MS 3000
#define SPREAD_LAST_MS  80000
#define N_TARGETS       3

/* What the forwarders run with, set explicitly so that the bounds below
 * derive from them: the group session timeout (a SIGKILLed member's
 * partitions move after it) and the foreign-claim wait (its FIRING claims
 * are taken over after it). */
#define SESSION_TIMEOUT_MS    10000
#define FOREIGN_CLAIM_WAIT_MS 2000

/* Lateness bounds: behaviour checks, not benchmarks (seen on a 2-core
 * machine shared with builds: p99 1 ms, max 26 ms outside faults). Outside
 * fault windows p99 stays below QUIET_P99_MS and every task below QUIET_MAX_MS;
 * inside one, a task comes at most QUIET_MAX_MS after the window closes. */
#define QUIET_P99_MS 1000
#define QUIET_MAX_MS 3000
/* After a rebalance starts (a restart) the partitions move within this. */
#define REBALANCE_MS 6000
/* After MySQL is back the claims retry within their backoff (up to 5 s). */
#define MYSQL_BACKOFF_MS 5000
/* A fire is marked FIRED within this (marks go every 250 ms): a task fired
 * by the SIGKILLed forwarder no longer before its kill is FIRED, so it is
 * not fired again. */
#define MARK_DELAY_MS 1000

static char prefix[40], group[64], db[64], url[256];
static char targets[N_TARGETS][96], dead_topic[96];
static char stack_sh[512];

typedef struct task {
        char id[64];
        int64_t fire_at;
        int target;
        int cancel_ok; /* cancelled before due, acknowledged */
        int too_late;  /* cancelled after delivery: exit 3 */
        int delivered; /* copies seen on the target */
        int64_t first_ts;
} task_t;

static task_t tasks[N_TASKS];

static int suite_init(void)
{
        if (it_env_init())
                return -1;
        it_unique(prefix, sizeof(prefix), "itfwd");
        snprintf(group, sizeof(group), "%s-group", prefix);
        it_unique(db, sizeof(db), "kdit_fwd");
        if (it_db_create(db, 1, url, sizeof(url)) ||
            it_tiers_create(prefix, url, 2))
                return -1;
        for (int i = 0; i < N_TARGETS; i++) {
                snprintf(targets[i], sizeof(targets[i]), "%s.target%d", prefix,
                         i);
                if (it_create_topic(targets[i], 2))
                        return -1;
        }
        snprintf(dead_topic, sizeof(dead_topic), "%s.dead", prefix);
        snprintf(stack_sh, sizeof(stack_sh), "%s/deploy/local/stack.sh",
                 KDELAY_SOURCE_DIR);
        return 0;
}

static int suite_cleanup(void)
{
        it_db_drop(db);
        return 0;
}

/* --- forwarder processes ------------------------------------------------- */

static void fwd_start_ex(it_fwd_t *f, const char *pfx_name,
                         const char *grp_name, const char *extra)
{
        char session[64], wait[64];
        snprintf(session, sizeof(session), "session.timeout.ms=%d",
                 SESSION_TIMEOUT_MS);
        snprintf(wait, sizeof(wait), "forwarder.foreign_claim_wait=%dms",
                 FOREIGN_CLAIM_WAIT_MS);
        const char *props[] = {"forwarder.hold_horizon=10s",
                               "forwarder.stats_interval=5s",
                               "forwarder.commit_interval=500ms",
                               session,
                               wait,
                               extra,
                               NULL};
        CU_ASSERT_FATAL(it_fwd_start(f, KDELAY_FORWARDER, pfx_name, grp_name,
                                     url, props) == 0);
}

static void fwd_start(it_fwd_t *f)
{
        fwd_start_ex(f, prefix, group, "forwarder.max_held=100000");
}

/* --- scheduling ------------------------------------------------------------
 */

static void schedule_library(int64_t start)
{
        kdelay_client_t *c = NULL;
        char errstr[512];
        CU_ASSERT_EQUAL_FATAL(kdelay_client_new(&c, it_conf_new(prefix, url),
                                                errstr, sizeof(errstr)),
                              KDELAY_OK);
        for (int i = N_RAW; i < N_TASKS; i++) {
                task_t *t = &tasks[i];
                char key[32], value[32], seq[16];
                snprintf(key, sizeof(key), "k%d", i);
                snprintf(value, sizeof(value), "v%d", i);
                snprintf(seq, sizeof(seq), "%d", i);
                kdelay_header_t h = {"test-seq", seq, strlen(seq)};
                kdelay_task_t kt;
                kdelay_task_init(&kt);
                kt.topic = targets[t->target];
                kt.key = key;
                kt.key_len = strlen(key);
                kt.value = value;
                kt.value_len = strlen(value);
                kt.headers = &h;
                kt.header_cnt = 1;
                kt.fire_at_ms = t->fire_at;
                (void)start;
                CU_ASSERT_EQUAL_FATAL(
                    kdelay_schedule_async(c, &kt, NULL, NULL, t->id,
                                          sizeof(t->id), errstr,
                                          sizeof(errstr)),
                    KDELAY_OK);
        }
        CU_ASSERT_EQUAL(kdelay_flush(c, 60000), KDELAY_OK);
        kdelay_client_destroy(c);
}

static rd_kafka_t *raw_producer(void)
{
        static const char *const props[] = {"enable.idempotence", "true", NULL};
        return it_kafka_new(RD_KAFKA_PRODUCER, props);
}

/* Produces one record with the given headers (name, value pairs, NULL
 * value = header without value; NULL-terminated) to tier `tier`. */
static void raw_send(rd_kafka_t *rk, const char *tier, const char *key,
                     const char *value, const char *const *hdrs)
{
        char topic[128];
        snprintf(topic, sizeof(topic), "%s.tier.%s", prefix, tier);
        rd_kafka_headers_t *h = rd_kafka_headers_new(8);
        for (size_t i = 0; hdrs[i]; i += 2)
                rd_kafka_header_add(h, hdrs[i], -1, hdrs[i + 1], -1);
        rd_kafka_resp_err_t err = rd_kafka_producev(
            rk, RD_KAFKA_V_TOPIC(topic),
            RD_KAFKA_V_KEY((void *)key, strlen(key)),
            RD_KAFKA_V_VALUE((void *)value, strlen(value)),
            RD_KAFKA_V_HEADERS(h), RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
            RD_KAFKA_V_END);
        CU_ASSERT_EQUAL_FATAL(err, 0);
}

/* The tier a producer following docs/wire-format.md picks, by the old
 * four-tier ladder: the forwarder runs the default one and reads every
 * tier topic, so such a producer keeps working. */
static const char *tier_for(int64_t remaining)
{
        kd_tiers_t tiers;
        kd_tiers_parse(&tiers, "1s,1m,30m,7d", NULL, 0);
        static char name[KD_TIER_NAME_MAX];
        kd_strlcpy(name, tiers.v[kd_tiers_choose(&tiers, remaining)].name,
                   sizeof(name));
        return name;
}

static void schedule_raw(rd_kafka_t *rk)
{
        for (int i = 0; i < N_RAW; i++) {
                task_t *t = &tasks[i];
                char key[32], value[32], seq[16], fire_at[24];
                snprintf(t->id, sizeof(t->id), "raw-%s-%d", prefix, i);
                snprintf(key, sizeof(key), "k%d", i);
                snprintf(value, sizeof(value), "v%d", i);
                snprintf(seq, sizeof(seq), "%d", i);
                snprintf(fire_at, sizeof(fire_at), "%lld",
                         (long long)t->fire_at);
                const char *h[] = {"test-seq",
                                   seq,
                                   "kdelay-id",
                                   t->id,
                                   "kdelay-target",
                                   targets[t->target],
                                   "kdelay-fire-at",
                                   fire_at,
                                   "kdelay-v",
                                   "1",
                                   NULL};
                raw_send(rk, tier_for(t->fire_at - kd_now_ms()), key, value, h);
        }
}

/* Malformed records and the dead-letter reason each must get. */
typedef struct bad {
        const char *kind;
        const char *tier;
        const char *reason;
} bad_t;

static const bad_t bads[] = {
    {"no-id", "1s", "missing-id"},
    {"empty-id", "1s", "bad-id"},
    {"long-id", "1m", "bad-id"},
    {"no-target", "1s", "missing-target"},
    {"bad-target", "1s", "bad-target"},
    {"no-fire-at", "1s", "missing-fire-at"},
    {"bad-fire-at", "1m", "bad-fire-at"},
    {"absurd-fire-at", "1s", "absurd-fire-at"},
    {"v2", "1s", "unknown-version"},
    {"no-version", "1s", "missing-version"},
    {"dup-id", "1s", "duplicate-header"},
    {"missing-target-topic", "1s", "target-unavailable"},
};
#define N_BADS (sizeof(bads) / sizeof(bads[0]))

static void schedule_bad(rd_kafka_t *rk, int64_t start)
{
        char long_id[130], soon[24], id[64], missing_topic[96];
        memset(long_id, 'x', 129);
        long_id[129] = '\0';
        snprintf(soon, sizeof(soon), "%lld", (long long)start + 5000);
        snprintf(missing_topic, sizeof(missing_topic), "%s.no-such-topic",
                 prefix);
        for (size_t i = 0; i < N_BADS; i++) {
                const bad_t *b = &bads[i];
                snprintf(id, sizeof(id), "bad-%s-%zu", prefix, i);
                const char *idv = id, *target = targets[0], *fa = soon,
                           *v = "1";
                const char *h[16];
                size_t n = 0;
                h[n++] = "test-bad";
                h[n++] = b->kind;
                if (!strcmp(b->kind, "empty-id"))
                        idv = "";
                if (!strcmp(b->kind, "long-id"))
                        idv = long_id;
                if (!strcmp(b->kind, "bad-target"))
                        target = "a b";
                if (!strcmp(b->kind, "missing-target-topic"))
                        target = missing_topic;
                if (!strcmp(b->kind, "bad-fire-at"))
                        fa = "12:00";
                if (!strcmp(b->kind, "absurd-fire-at"))
                        fa = "99999999999999";
                if (!strcmp(b->kind, "v2"))
                        v = "2";
                if (strcmp(b->kind, "no-id")) {
                        h[n++] = "kdelay-id";
                        h[n++] = idv;
                }
                if (!strcmp(b->kind, "dup-id")) {
                        h[n++] = "kdelay-id";
                        h[n++] = "other";
                }
                if (strcmp(b->kind, "no-target")) {
                        h[n++] = "kdelay-target";
                        h[n++] = target;
                }
                if (strcmp(b->kind, "no-fire-at")) {
                        h[n++] = "kdelay-fire-at";
                        h[n++] = fa;
                }
                if (strcmp(b->kind, "no-version")) {
                        h[n++] = "kdelay-v";
                        h[n++] = v;
                }
                h[n] = NULL;
                raw_send(rk, b->tier, b->kind, "bad", h);
        }
}

/* --- checks ----------------------------------------------------------------
 */

static task_t *task_by_id(const char *id)
{
        for (int i = 0; i < N_TASKS; i++)
                if (!strcmp(tasks[i].id, id))
                        return &tasks[i];
        return NULL;
}

/* When the faults happen, on the timeline (ms after start): each lasts a
 * fixed time, there being no event to wait for. */
#define A_STOP_AT     12000 /* A stopped with SIGTERM ... */
#define A_DOWN_MS     4000  /* ... and restarted after this */
#define B_KILL_AT     26000 /* B killed with SIGKILL ... */
#define B_DOWN_MS     5000  /* ... and restarted after this */
#define MYSQL_AT      48000 /* MySQL stopped ... */
#define MYSQL_DOWN_MS 5000  /* ... and started after this */

/* Fault windows (wall clock), filled in as the faults happen: a task due
 * inside one may be late until the window closes. */
enum { F_A, F_B, F_MYSQL, N_FAULTS };
static int64_t faults[N_FAULTS][2];

/* The end of the fault window fire_at is in, or -1 when in none. */
static int64_t fault_end(int64_t fire_at)
{
        int64_t end = -1;
        for (int i = 0; i < N_FAULTS; i++)
                if (fire_at >= faults[i][0] && fire_at <= faults[i][1] &&
                    faults[i][1] > end)
                        end = faults[i][1];
        return end;
}

/* Polls the fate of id until it is `want` or deadline_ms (wall clock);
 * 0 when it got there. */
static int wait_fate(kdelay_client_t *c, const char *id, kdelay_fate_t want,
                     int64_t deadline_ms)
{
        char errstr[512];
        for (;;) {
                kdelay_status_t st;
                if (kdelay_status(c, id, &st, errstr, sizeof(errstr)) ==
                        KDELAY_OK &&
                    st.fate == want)
                        return 0;
                if (kd_now_ms() >= deadline_ms)
                        return -1;
                struct timespec ts = {0, 100 * 1000 * 1000};
                nanosleep(&ts, NULL);
        }
}

/* kdelayctl audit --fix, as an operator runs it after a crash: a row the
 * SIGKILLed forwarder left FIRING after delivering and committing its
 * task (before its FIRED mark) is marked FIRED; any other FIRING row it
 * reports. Returns how many it fixed, -1 when it could not run. */
static long audit_fix(void)
{
        char grp[96], pfx[96];
        snprintf(grp, sizeof(grp), "forwarder.group_id=%s", group);
        snprintf(pfx, sizeof(pfx), "topic_prefix=%s", prefix);
        char *argv[] = {KDELAY_CTL,
                        "audit",
                        "--fix",
                        "--older-than",
                        "0s",
                        "--brokers",
                        (char *)it_brokers(),
                        "--mysql",
                        url,
                        "-X",
                        grp,
                        "-X",
                        pfx,
                        NULL};
        char *out = NULL, *err = NULL;
        int rc = it_run(argv, NULL, &out, &err);
        long fixed = -1;
        const char *sum = out ? strstr(out, "summary ") : NULL;
        if ((rc == 0 || rc == 1) && sum &&
            sscanf(sum, "summary firing=%*d delivered=%*d fixed=%ld", &fixed) !=
                1)
                fixed = -1;
        printf("\n  audit --fix: exit %d, %s", rc, sum ? sum : "no summary\n");
        /* The rows it did not fix (a dead-lettered task's claim, ...):
         * the tables' rows but those of action fixed. */
        for (char *l = out; l && *l;) {
                char *nl = strchr(l, '\n');
                if (nl)
                        *nl = '\0';
                if (*l && strncmp(l, "summary ", 8) && !strstr(l, " fixed "))
                        printf("  audit: %s\n", l);
                l = nl ? nl + 1 : NULL;
        }
        free(out);
        free(err);
        return fixed;
}

static void check_fate_rows(void)
{
        CU_ASSERT(audit_fix() >= 0);
        MYSQL *conn = it_mysql_connect();
        char sql[256];
        CU_ASSERT_PTR_NOT_NULL_FATAL(conn);
        snprintf(sql, sizeof(sql), "USE `%s`", db);
        CU_ASSERT_EQUAL_FATAL(mysql_query(conn, sql), 0);
        CU_ASSERT_EQUAL_FATAL(mysql_query(conn,
                                          "SELECT task_id, " IT_FATE_STATE_SQL
                                          ", fire_at_ms FROM kdelay_fate"),
                              0);
        MYSQL_RES *res = mysql_store_result(conn);
        CU_ASSERT_PTR_NOT_NULL_FATAL(res);
        static char state[N_TASKS][16];
        static int64_t fire_at[N_TASKS];
        MYSQL_ROW row;
        while ((row = mysql_fetch_row(res))) {
                task_t *t = task_by_id(row[0]);
                if (t) {
                        kd_strlcpy(state[t - tasks], row[1], 16);
                        fire_at[t - tasks] = row[2] ? atoll(row[2]) : -1;
                }
        }
        mysql_free_result(res);
        mysql_close(conn);
        int unclaimed = 0, not_fired = 0, cancel_no_due = 0;
        for (int i = 0; i < N_TASKS; i++) {
                /* Dropped cancels carry their due time for gc. */
                if (tasks[i].cancel_ok && (strcmp(state[i], "CANCELLED") ||
                                           fire_at[i] != tasks[i].fire_at))
                        cancel_no_due++;
                if (!tasks[i].delivered)
                        continue;
                if (strcmp(state[i], "FIRING") && strcmp(state[i], "FIRED"))
                        unclaimed++;
                if (strcmp(state[i], "FIRED"))
                        not_fired++;
        }
        printf("\n  delivered without a claim: %d, delivered not marked "
               "FIRED: %d",
               unclaimed, not_fired);
        CU_ASSERT_EQUAL(unclaimed, 0);
        /* Both stopped with SIGTERM, which marks FIRED what was delivered;
         * what the SIGKILLed one delivered unmarked was taken over and
         * marked by its successor, or, when it had committed the offset
         * too, found delivered and marked by the audit. */
        CU_ASSERT_EQUAL(not_fired, 0);
        CU_ASSERT_EQUAL(cancel_no_due, 0);
}

static void check_dead_letters(void)
{
        const char *tl[] = {dead_topic, NULL};
        it_msg_t *msgs = NULL;
        size_t n = it_consume_all(tl, &msgs, 3000, 30000);
        int found[N_BADS] = {0};
        int valid_dead = 0;
        for (size_t k = 0; k < n; k++) {
                char *kind = it_header(&msgs[k], "test-bad");
                char *reason = it_header(&msgs[k], KDELAY_HDR_DEAD_REASON);
                if (!kind) {
                        valid_dead++;
                } else {
                        for (size_t i = 0; i < N_BADS; i++) {
                                if (strcmp(kind, bads[i].kind))
                                        continue;
                                found[i]++;
                                if (!reason || strcmp(reason, bads[i].reason))
                                        printf("\n  dead %s: reason %s, want "
                                               "%s",
                                               kind, reason ? reason : "-",
                                               bads[i].reason);
                                CU_ASSERT_STRING_EQUAL(reason ? reason : "",
                                                       bads[i].reason);
                                /* Original key and value kept. */
                                CU_ASSERT(msgs[k].len == 3 &&
                                          !memcmp(msgs[k].value, "bad", 3));
                        }
                }
                free(kind);
                free(reason);
                it_msg_free(&msgs[k]);
        }
        free(msgs);
        for (size_t i = 0; i < N_BADS; i++) {
                if (found[i] < 1)
                        printf("\n  malformed %s not dead-lettered",
                               bads[i].kind);
                CU_ASSERT(found[i] >= 1);
        }
        CU_ASSERT_EQUAL(valid_dead, 0);
}

static void test_forwarder_timeline(void)
{
        it_fwd_t a = {"fwA", -1, ""}, b = {"fwB", -1, ""};
        int64_t start = kd_now_ms();
        for (int i = 0; i < N_TASKS; i++) {
                tasks[i].fire_at =
                    start + SPREAD_FIRST_MS +
                    (int64_t)i * (SPREAD_LAST_MS - SPREAD_FIRST_MS) / N_TASKS;
                tasks[i].target = i % N_TARGETS;
        }
        /* Mix raw and library tasks over the whole spread. */
        for (int i = 0; i < N_RAW; i++) {
                int j = i * (N_TASKS / N_RAW);
                task_t tmp = tasks[i];
                tasks[i] = tasks[j];
                tasks[j] = tmp;
        }
        fwd_start(&a);
        fwd_start(&b);
        rd_kafka_t *rk = raw_producer();
        CU_ASSERT_PTR_NOT_NULL_FATAL(rk);
        schedule_raw(rk);
        schedule_bad(rk, start);
        rd_kafka_flush(rk, 30000);
        CU_ASSERT_EQUAL(rd_kafka_outq_len(rk), 0);
        rd_kafka_destroy(rk);
        schedule_library(start);
        printf("\n  scheduled %d tasks in %lld ms", N_TASKS,
               (long long)(kd_now_ms() - start));

        /* Both forwarders get a share of the partitions. */
        CU_ASSERT_EQUAL(
            it_wait_log(a.log, "event=partitions_assigned count=", 30000), 0);
        CU_ASSERT_EQUAL(
            it_wait_log(b.log, "event=partitions_assigned count=", 30000), 0);

        /* Cancel 10% long before they are due: each must be acknowledged. */
        kdelay_client_t *c = NULL;
        char errstr[512];
        CU_ASSERT_EQUAL_FATAL(kdelay_client_new(&c, it_conf_new(prefix, url),
                                                errstr, sizeof(errstr)),
                              KDELAY_OK);
        int cancelled = 0;
        for (int i = 0; i < N_TASKS && cancelled < N_TASKS / 10; i++) {
                if (i % 5 != 3 || tasks[i].fire_at < kd_now_ms() + 15000)
                        continue;
                kdelay_err_t err =
                    kdelay_cancel(c, tasks[i].id, errstr, sizeof(errstr));
                CU_ASSERT_EQUAL(err, KDELAY_OK);
                tasks[i].cancel_ok = err == KDELAY_OK;
                cancelled++;
        }
        CU_ASSERT_EQUAL(cancelled, N_TASKS / 10);

        /* Cancel after delivery: too late (exit 3). Each once its fate is
         * FIRED (the event), among the first tasks due. */
        int late_cancels = 0;
        for (int i = 0; i < N_TASKS && late_cancels < 10; i++) {
                if (tasks[i].fire_at > start + 15000 || tasks[i].cancel_ok)
                        continue;
                CU_ASSERT_EQUAL(wait_fate(c, tasks[i].id, KDELAY_FATE_FIRED,
                                          tasks[i].fire_at + 30000),
                                0);
                char *argv[] = {KDELAY_CTL, "cancel",    "--mysql",
                                url,        tasks[i].id, NULL};
                int rc = it_run(argv, NULL, NULL, NULL);
                CU_ASSERT_EQUAL(rc, 3);
                tasks[i].too_late = 1;
                late_cancels++;
        }
        CU_ASSERT_EQUAL(late_cancels, 10);
        kdelay_client_destroy(c);

        /* Faults, at fixed points of the tasks' timeline and for fixed
         * times (the sleeps: no event to wait for). A task due from a
         * fault's start until it can be handled again is late: */
        char *down[] = {stack_sh, "mysql-stop", NULL};
        char *up[] = {stack_sh, "mysql-start", NULL};
        it_sleep_until(start + A_STOP_AT);
        faults[F_A][0] = kd_now_ms();
        CU_ASSERT_EQUAL(it_fwd_stop(&a, SIGTERM), 0);
        it_sleep_until(start + A_STOP_AT + A_DOWN_MS);
        fwd_start(&a);
        /* A stopping and A starting each move every partition. */
        faults[F_A][1] = kd_now_ms() + REBALANCE_MS;
        it_sleep_until(start + B_KILL_AT);
        CU_ASSERT_EQUAL(it_fwd_stop(&b, SIGKILL), 128 + SIGKILL);
        int64_t killed_at = kd_now_ms();
        /* A task due shortly before the kill may not have been fired; one
         * due after it waits for the session to time out, the group to
         * rebalance (B's restart joins then), and B's FIRING claims to be
         * taken over. */
        faults[F_B][0] = killed_at - QUIET_MAX_MS;
        faults[F_B][1] = killed_at + SESSION_TIMEOUT_MS + REBALANCE_MS +
                         FOREIGN_CLAIM_WAIT_MS;
        it_sleep_until(start + B_KILL_AT + B_DOWN_MS);
        fwd_start(&b);
        it_sleep_until(start + MYSQL_AT);
        faults[F_MYSQL][0] = kd_now_ms();
        CU_ASSERT_EQUAL(it_run(down, NULL, NULL, NULL), 0);
        it_sleep_until(start + MYSQL_AT + MYSQL_DOWN_MS);
        CU_ASSERT_EQUAL(it_run(up, NULL, NULL, NULL), 0);
        /* Claims resume within their backoff. */
        faults[F_MYSQL][1] = kd_now_ms() + MYSQL_BACKOFF_MS;

        /* Every task not cancelled on its target (the event; duplicates
         * count too, which is checked below), then everything read again
         * to check it: a read that ends after 5 s without a record. */
        const char *tl[N_TARGETS + 1];
        for (int i = 0; i < N_TARGETS; i++)
                tl[i] = targets[i];
        tl[N_TARGETS] = NULL;
        size_t expected = 0;
        for (int i = 0; i < N_TASKS; i++)
                expected += !tasks[i].cancel_ok;
        int64_t wait_ms = start + SPREAD_LAST_MS + 60000 - kd_now_ms();
        CU_ASSERT_EQUAL(it_wait_records(tl, expected, (int)wait_ms), expected);
        it_msg_t *msgs = NULL;
        size_t n = it_consume_all(tl, &msgs, 5000, 60000);

        int early = 0, cancelled_delivered = 0, unknown = 0;
        for (size_t k = 0; k < n; k++) {
                char *id = it_header(&msgs[k], KDELAY_HDR_ID);
                char *fa = it_header(&msgs[k], KDELAY_HDR_FIRE_AT);
                char *target = it_header(&msgs[k], KDELAY_HDR_TARGET);
                task_t *t = id ? task_by_id(id) : NULL;
                if (!t) {
                        unknown++;
                } else {
                        t->delivered++;
                        if (t->delivered == 1)
                                t->first_ts = msgs[k].ts;
                        if (msgs[k].ts < t->fire_at)
                                early++;
                        if (t->cancel_ok)
                                cancelled_delivered++;
                        CU_ASSERT_STRING_EQUAL(msgs[k].topic,
                                               targets[t->target]);
                        CU_ASSERT(fa && atoll(fa) == t->fire_at);
                        /* Routing headers stay behind. */
                        CU_ASSERT_PTR_NULL(target);
                        char key[32];
                        snprintf(key, sizeof(key), "k%d", (int)(t - tasks));
                        CU_ASSERT(msgs[k].key_len == strlen(key) &&
                                  !memcmp(msgs[k].key, key, msgs[k].key_len));
                }
                free(id);
                free(fa);
                free(target);
                it_msg_free(&msgs[k]);
        }
        free(msgs);

        int lost = 0, dups = 0, dups_outside = 0, over_bound = 0;
        static int64_t late_all[N_TASKS], late_quiet[N_TASKS];
        size_t n_all = 0, n_quiet = 0;
        for (int i = 0; i < N_TASKS; i++) {
                task_t *t = &tasks[i];
                if (!t->cancel_ok && !t->delivered) {
                        lost++;
                        printf("\n  LOST %s fire_at=+%lldms target=%s", t->id,
                               (long long)(t->fire_at - start),
                               targets[t->target]);
                }
                if (t->too_late)
                        CU_ASSERT(t->delivered >= 1);
                if (t->delivered > 1) {
                        dups += t->delivered - 1;
                        /* In flight at the kill: fired by B (so due before
                         * it, by at most QUIET_MAX_MS before it fired) and
                         * not yet marked FIRED; its claim is taken over
                         * and fired again. */
                        if (t->fire_at <
                                killed_at - QUIET_MAX_MS - MARK_DELAY_MS ||
                            t->fire_at > killed_at) {
                                dups_outside++;
                                printf("\n  DUPLICATE %s x%d fire_at=+%lldms",
                                       t->id, t->delivered,
                                       (long long)(t->fire_at - start));
                        }
                }
                if (t->delivered) {
                        int64_t late = t->first_ts - t->fire_at;
                        int64_t end = fault_end(t->fire_at);
                        /* Outside faults, and inside one: until it ends. */
                        int64_t bound =
                            (end > t->fire_at ? end - t->fire_at : 0) +
                            QUIET_MAX_MS;
                        late_all[n_all++] = late;
                        if (end < 0) {
                                late_quiet[n_quiet++] = late;
                                if (late > 1000)
                                        printf("\n  late %lldms outside "
                                               "faults: %s fire_at=+%lldms",
                                               (long long)late, t->id,
                                               (long long)(t->fire_at - start));
                        }
                        if (late > bound) {
                                over_bound++;
                                printf("\n  LATE %lldms (bound %lldms): %s "
                                       "fire_at=+%lldms",
                                       (long long)late, (long long)bound, t->id,
                                       (long long)(t->fire_at - start));
                        }
                }
        }
        printf("\n  records on targets: %zu; lost=%d early=%d "
               "cancelled_then_delivered=%d duplicates=%d (outside the kill "
               "window: %d) unknown=%d",
               n, lost, early, cancelled_delivered, dups, dups_outside,
               unknown);
        int64_t p99_all, max_all, p99_quiet, max_quiet;
        it_report_lateness("(all)", late_all, n_all, &p99_all, &max_all);
        it_report_lateness("(outside fault windows)", late_quiet, n_quiet,
                           &p99_quiet, &max_quiet);
        printf("\n  fault windows (ms after start):");
        for (int i = 0; i < N_FAULTS; i++)
                printf(" [%lld, %lld]", (long long)(faults[i][0] - start),
                       (long long)(faults[i][1] - start));
        printf("; late beyond their bound: %d", over_bound);
        /* The faults' windows cover about half the spread: a third of
         * the tasks at least is due outside them. */
        CU_ASSERT(n_quiet >= N_TASKS / 3);
        CU_ASSERT(p99_quiet < QUIET_P99_MS);
        CU_ASSERT(max_quiet < QUIET_MAX_MS);
        CU_ASSERT_EQUAL(over_bound, 0);
        CU_ASSERT_EQUAL(lost, 0);
        CU_ASSERT_EQUAL(early, 0);
        CU_ASSERT_EQUAL(cancelled_delivered, 0);
        CU_ASSERT_EQUAL(dups_outside, 0);
        CU_ASSERT_EQUAL(unknown, 0);

        check_dead_letters();
        CU_ASSERT_EQUAL(it_fwd_stop(&a, SIGTERM), 0);
        CU_ASSERT_EQUAL(it_fwd_stop(&b, SIGTERM), 0);
        check_fate_rows();
        printf("\n  forwarder logs: %s %s\n", a.log, b.log);
}

/* A fresh prefix of its own with its tier topics (partitions each), its
 * group name, and a client scheduling into it (caller destroys it). */
static kdelay_client_t *scratch(const char *stem, int partitions, char *pfx,
                                size_t pfx_size, char *grp, size_t grp_size)
{
        char errstr[512];
        kdelay_client_t *c = NULL;
        it_unique(pfx, pfx_size, stem);
        snprintf(grp, grp_size, "%s-group", pfx);
        CU_ASSERT_EQUAL_FATAL(it_tiers_create(pfx, url, partitions), 0);
        kdelay_conf_t *conf = it_conf_new(pfx, url);
        CU_ASSERT_EQUAL_FATAL(
            kdelay_client_new(&c, conf, errstr, sizeof(errstr)), KDELAY_OK);
        return c;
}

/* A held set of 5 tasks while 60 come due within two seconds: partitions
 * pause for back-pressure instead of holding more, and every task is still
 * delivered, none early. A paused partition resumes only once the set is
 * down to half (2): each pause then lets at least 3 tasks in, so the two
 * partitions pause at most 2 * (60 / 3 + 1) times (resumed at each free
 * slot, they paused about once per task each). */
static void test_backpressure_bounds_the_held_set(void)
{
        enum { N = 60 };
        char pfx[40], grp[64], errstr[512], target[96];
        char ids[N][KDELAY_ID_MAX + 1];
        int64_t fire_at[N];
        kdelay_client_t *c =
            scratch("itbp", 2, pfx, sizeof(pfx), grp, sizeof(grp));
        snprintf(target, sizeof(target), "%s.target", pfx);
        CU_ASSERT_EQUAL_FATAL(it_create_topic(target, 1), 0);
        int64_t start = kd_now_ms();
        for (int i = 0; i < N; i++) {
                kdelay_task_t t;
                kdelay_task_init(&t);
                t.topic = target;
                t.value = "bp";
                t.value_len = 2;
                fire_at[i] = start + 3000 + (i % 20) * 100;
                t.fire_at_ms = fire_at[i];
                CU_ASSERT_EQUAL_FATAL(
                    kdelay_schedule_async(c, &t, NULL, NULL, ids[i],
                                          sizeof(ids[i]), errstr,
                                          sizeof(errstr)),
                    KDELAY_OK);
        }
        CU_ASSERT_EQUAL(kdelay_flush(c, 30000), KDELAY_OK);
        kdelay_client_destroy(c);
        it_fwd_t f = {"fwBP", -1, ""};
        fwd_start_ex(&f, pfx, grp, "forwarder.max_held=5");
        const char *tl[] = {target, NULL};
        it_msg_t msgs[N + 8];
        size_t got = it_consume(tl, msgs, N, 60000);
        CU_ASSERT_EQUAL(got, N);
        int early = 0, found = 0;
        for (size_t k = 0; k < got; k++) {
                char *id = it_header(&msgs[k], KDELAY_HDR_ID);
                for (int i = 0; id && i < N; i++) {
                        if (strcmp(id, ids[i]))
                                continue;
                        found++;
                        early += msgs[k].ts < fire_at[i];
                }
                free(id);
                it_msg_free(&msgs[k]);
        }
        CU_ASSERT_EQUAL(found, N);
        CU_ASSERT_EQUAL(early, 0);
        CU_ASSERT_EQUAL(it_fwd_stop(&f, SIGTERM), 0);
        /* It did pause for back-pressure, and never held more than 5. */
        CU_ASSERT(it_log_count(f.log, "event=partition_backpressure") > 0);
        CU_ASSERT_EQUAL(it_log_count(f.log, "event=forwarder_stopped"), 1);
        CU_ASSERT(it_log_count(f.log, "held_max=5 ") >= 1);
        CU_ASSERT_EQUAL(it_log_count(f.log, "held_max=6"), 0);
        int pauses = it_log_count(f.log, "event=partition_backpressure");
        printf("\n  back-pressure: %d pauses logged (at most %d)", pauses,
               2 * (N / 3 + 1));
        CU_ASSERT(pauses <= 2 * (N / 3 + 1));
}

/* SIGTERM waits for produces in flight; a second signal does not. A fire
 * to a target that does not exist stays in flight (librdkafka waits for
 * the topic to appear), which holds the first shutdown up. */
static void test_second_signal_exits_at_once(void)
{
        char pfx[40], grp[64], errstr[512], missing[96];
        kdelay_client_t *c =
            scratch("itsig", 1, pfx, sizeof(pfx), grp, sizeof(grp));
        snprintf(missing, sizeof(missing), "%s.missing", pfx);
        kdelay_task_t t;
        kdelay_task_init(&t);
        t.topic = missing;
        t.value = "x";
        t.value_len = 1;
        t.delay_ms = 0;
        CU_ASSERT_EQUAL_FATAL(
            kdelay_schedule(c, &t, NULL, 0, errstr, sizeof(errstr)), KDELAY_OK);
        kdelay_client_destroy(c);
        it_fwd_t f = {"fwSIG", -1, ""};
        fwd_start_ex(&f, pfx, grp, "forwarder.stats_interval=200ms");
        CU_ASSERT_EQUAL_FATAL(it_wait_log(f.log, "inflight=1 ", 30000), 0);
        kill(f.pid, SIGTERM);
        CU_ASSERT_EQUAL_FATAL(
            it_wait_log(f.log, "event=forwarder_stopping", 10000), 0);
        int64_t t0 = kd_mono_ms();
        int rc = it_fwd_stop(&f, SIGTERM);
        int64_t took = kd_mono_ms() - t0;
        printf("\n  second signal: exit %d after %lld ms", rc, (long long)took);
        /* 130 comes only from the second-signal path; a finished
         * shutdown exits 0. */
        CU_ASSERT_EQUAL(rc, 130);
        /* At once: not after the produce in flight or shutdown_timeout
         * (a generous bound for a loaded machine). */
        CU_ASSERT(took < 2000);
}

int main(void)
{
        static const kd_test_case_t cases[] = {
            KD_TEST(test_backpressure_bounds_the_held_set),
            KD_TEST(test_second_signal_exits_at_once),
            KD_TEST(test_forwarder_timeline), KD_TEST_END};
        return kd_test_run("forwarder", cases, suite_init, suite_cleanup);
}
