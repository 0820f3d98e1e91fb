/* SPDX-License-Identifier: Apache-2.0 */
/* Integration: kdelay-forwarder with forwarder.delivery=exactly_once on the
 * real broker and MariaDB.
 *
 *   - 600 tasks due over ~20 s (held at once, and hopped through the 1 s
 *     tier several times), 10% cancelled before due; two forwarders in
 *     one group; one killed with SIGKILL and restarted under the same
 *     instance name (its transactional.id fences the dead one), the other
 *     stopped with SIGTERM and restarted. A read_committed consumer sees
 *     every task that was not cancelled exactly once, none early.
 *   - A second process with the same instance name fences the first,
 *     which exits non-zero with a clear log line.
 *   - A fire whose target does not exist fails its transaction: it is
 *     aborted, the partitions are read again from the committed offsets,
 *     the other fires in it are delivered exactly once, and the task goes
 *     to the dead-letter topic.
 *   - A catch-up (tasks overdue by seconds when the forwarder starts)
 *     commits once per forwarder.transaction_interval, not at every loop
 *     turn, and delivers every task once. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "it_env.h"
#include "kd_test.h"
#include "kd_util.h"

static char url[256], db[64];

/* The group session timeout the forwarders run with (set explicitly, the
 * forwarder's default): a SIGKILLed member's partitions move only after
 * it, so the lateness bound below is derived from it. */
#define SESSION_TIMEOUT_MS 10000

/* The old four-tier ladder, for client and forwarders: tasks due within
 * 21 s hop through the 1 s tier every second, so that at the kill records
 * are held below hopped ones and done sets are committed above the commit
 * points (the default ladder holds most of them at once). */
#define TIERS "1s,1m,30m,7d"

static int suite_init(void)
{
        if (it_env_init())
                return -1;
        it_unique(db, sizeof(db), "kdit_eos");
        return it_db_create(db, 1, url, sizeof(url));
}

static int suite_cleanup(void)
{
        it_db_drop(db);
        return 0;
}

/* A forwarder in exactly-once mode for prefix pfx (group <pfx>-group),
 * with up to two more properties (NULL: none). */
static void fwd_start2(it_fwd_t *f, const char *pfx, const char *extra,
                       const char *extra2)
{
        char grp[96], session[64];
        snprintf(grp, sizeof(grp), "%s-group", pfx);
        snprintf(session, sizeof(session), "session.timeout.ms=%d",
                 SESSION_TIMEOUT_MS);
        const char *props[] = {"forwarder.delivery=exactly_once",
                               "tiers=" TIERS,
                               "forwarder.hold_horizon=5s",
                               "forwarder.stats_interval=5s",
                               session,
                               extra ? extra : "forwarder.max_held=100000",
                               extra2,
                               NULL};
        CU_ASSERT_FATAL(
            it_fwd_start(f, KDELAY_FORWARDER, pfx, grp, url, props) == 0);
}

static void fwd_start(it_fwd_t *f, const char *pfx, const char *extra)
{
        fwd_start2(f, pfx, extra, NULL);
}

/* A fresh prefix with its tier topics and a target, and a client. */
static kdelay_client_t *scratch(const char *stem, char *pfx, size_t pfx_size,
                                char *target, size_t target_size)
{
        char errstr[512];
        kdelay_client_t *c = NULL;
        it_unique(pfx, pfx_size, stem);
        snprintf(target, target_size, "%s.target", pfx);
        CU_ASSERT_EQUAL_FATAL(it_tiers_create(pfx, url, 2), 0);
        kdelay_conf_t *conf = it_conf_new(pfx, url);
        CU_ASSERT_PTR_NOT_NULL_FATAL(conf);
        CU_ASSERT_EQUAL_FATAL(
            kdelay_conf_set(conf, "tiers", TIERS, errstr, sizeof(errstr)),
            KDELAY_OK);
        CU_ASSERT_EQUAL_FATAL(it_create_topic(target, 2), 0);
        CU_ASSERT_EQUAL_FATAL(
            kdelay_client_new(&c, conf, errstr, sizeof(errstr)), KDELAY_OK);
        return c;
}

static int cmp_i64(const void *a, const void *b)
{
        int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
        return x < y ? -1 : x > y;
}

/* Sorts v, prints its quantiles and returns its p99 (0 when empty). */
static int64_t print_lateness(const char *what, int64_t *v, size_t n)
{
        if (!n)
                return 0;
        qsort(v, n, sizeof(*v), cmp_i64);
        printf("\n  %s n=%zu p50=%lld p99=%lld max=%lld ms", what, n,
               (long long)v[n / 2], (long long)v[(n * 99) / 100],
               (long long)v[n - 1]);
        return v[(n * 99) / 100];
}

enum { N_TASKS = 600 };

/* Lateness beyond the time a fault stalls delivery (see its use). */
#define LATE_SLACK_MS 5000

typedef struct task {
        char id[KDELAY_ID_MAX + 1];
        int64_t fire_at;
        int cancelled; /* acknowledged cancel */
        int copies;    /* deliveries seen by the read_committed consumer */
} task_t;

static task_t tasks[N_TASKS];

static task_t *task_by_id(const char *id)
{
        for (int i = 0; id && i < N_TASKS; i++)
                if (!strcmp(tasks[i].id, id))
                        return &tasks[i];
        return NULL;
}

static void test_exactly_once_through_kill_and_restart(void)
{
        char pfx[40], target[96], errstr[512];
        kdelay_client_t *c =
            scratch("iteos", pfx, sizeof(pfx), target, sizeof(target));
        int64_t start = kd_now_ms();
        /* Due from +3 s to +21 s: with a 5 s hold horizon most hop through
         * the 1 s tier a few times before they are held. */
        for (int i = 0; i < N_TASKS; i++) {
                kdelay_task_t t;
                char key[16];
                kdelay_task_init(&t);
                t.topic = target;
                t.value = "eos";
                t.value_len = 3;
                /* Keyed: spread over every tier partition by its hash
                 * (keyless records go stickily to a few), so that each
                 * forwarder's partitions hold tasks with hops above them
                 * when one is killed: committed done sets to read. */
                t.key_len = (size_t)snprintf(key, sizeof(key), "k%d", i);
                t.key = key;
                tasks[i].fire_at = start + 3000 + (int64_t)i * 18000 / N_TASKS;
                t.fire_at_ms = tasks[i].fire_at;
                CU_ASSERT_EQUAL_FATAL(
                    kdelay_schedule_async(c, &t, NULL, NULL, tasks[i].id,
                                          sizeof(tasks[i].id), errstr,
                                          sizeof(errstr)),
                    KDELAY_OK);
        }
        CU_ASSERT_EQUAL_FATAL(kdelay_flush(c, 30000), KDELAY_OK);
        for (int i = 0; i < N_TASKS; i += 10) {
                kdelay_err_t err =
                    kdelay_cancel(c, tasks[i].id, errstr, sizeof(errstr));
                CU_ASSERT_EQUAL(err, KDELAY_OK);
                tasks[i].cancelled = err == KDELAY_OK;
        }
        it_fwd_t a = {"eosA", -1, ""}, b = {"eosB", -1, ""};
        fwd_start(&a, pfx, NULL);
        fwd_start(&b, pfx, NULL);
        CU_ASSERT_EQUAL(it_wait_log(a.log, "event=partitions_assigned", 30000),
                        0);
        CU_ASSERT_EQUAL(it_wait_log(b.log, "event=partitions_assigned", 30000),
                        0);
        /* The faults are placed on the tasks' timeline (no event to wait
         * for): at +8 s tasks are held and others hop above them, so the
         * killed one leaves committed done sets above its commit points.
         * The one killed is the one holding more at its +5 s stats line
         * (with the tasks keyed, both hold some). */
        it_sleep_until(start + 8000);
        it_fwd_t *killed = &a, *stopped = &b;
        if (it_log_sum(b.log, "event=stats", "held") >
            it_log_sum(a.log, "event=stats", "held")) {
                killed = &b;
                stopped = &a;
        }
        CU_ASSERT_EQUAL(it_fwd_stop(killed, SIGKILL), 128 + SIGKILL);
        int64_t killed_at = kd_now_ms();
        fwd_start(killed, pfx, NULL); /* same transactional.id: fences it */
        it_sleep_until(start + 13000);
        CU_ASSERT_EQUAL(it_fwd_stop(stopped, SIGTERM), 0);
        fwd_start(stopped, pfx, NULL);

        /* Every task that was not cancelled on the target (the event), then
         * everything read again to check it: a read that ends after 3 s
         * without a record, the time a duplicate has to show up. */
        int expected = 0;
        for (int i = 0; i < N_TASKS; i++)
                expected += !tasks[i].cancelled;
        const char *tl[] = {target, NULL};
        CU_ASSERT_EQUAL(it_wait_records(tl, (size_t)expected, 90000),
                        (size_t)expected);
        it_msg_t *msgs = NULL;
        size_t got = it_consume_all(tl, &msgs, 3000, 60000);
        int64_t *late = calloc(got + 1, sizeof(*late));
        CU_ASSERT_PTR_NOT_NULL_FATAL(late);
        int64_t *late_quiet = calloc(got + 1, sizeof(*late_quiet));
        CU_ASSERT_PTR_NOT_NULL_FATAL(late_quiet);
        size_t nl = 0, nq = 0;
        int early = 0, unknown = 0, over_bound = 0;
        for (size_t k = 0; k < got; k++) {
                char *id = it_header(&msgs[k], KDELAY_HDR_ID);
                task_t *t = task_by_id(id);
                if (!t) {
                        unknown++;
                } else {
                        t->copies++;
                        early += msgs[k].ts < t->fire_at;
                        late[nl++] = msgs[k].ts - t->fire_at;
                        /* Due well before the kill: no fault near it. */
                        if (t->fire_at < killed_at - 1000)
                                late_quiet[nq++] = msgs[k].ts - t->fire_at;
                        /* The SIGKILL leaves the killed one's partitions
                         * idle until the group's session times out (the
                         * SIGTERM's rebalance waits for it too): a task
                         * due before then may come when it ends; plus
                         * LATE_SLACK_MS for the rebalance, the fencing of
                         * the dead transaction and a commit. A behaviour
                         * bound (seen: max 9.3 s), not a benchmark. */
                        int64_t resumed = killed_at + SESSION_TIMEOUT_MS;
                        int64_t bound =
                            (resumed > t->fire_at ? resumed - t->fire_at : 0) +
                            LATE_SLACK_MS;
                        if (msgs[k].ts - t->fire_at > bound) {
                                over_bound++;
                                printf("\n  %s late %lld ms, bound %lld ms",
                                       t->id,
                                       (long long)(msgs[k].ts - t->fire_at),
                                       (long long)bound);
                        }
                }
                free(id);
                it_msg_free(&msgs[k]);
        }
        free(msgs);
        int lost = 0, dups = 0, cancel_delivered = 0;
        for (int i = 0; i < N_TASKS; i++) {
                if (tasks[i].cancelled)
                        cancel_delivered += tasks[i].copies > 0;
                else
                        lost += tasks[i].copies == 0;
                dups += tasks[i].copies > 1 ? tasks[i].copies - 1 : 0;
        }
        CU_ASSERT_EQUAL(it_fwd_stop(&a, SIGTERM), 0);
        CU_ASSERT_EQUAL(it_fwd_stop(&b, SIGTERM), 0);
        printf("\n  exactly-once: records=%zu lost=%d early=%d "
               "cancelled_then_delivered=%d duplicates=%d unknown=%d",
               got, lost, early, cancel_delivered, dups, unknown);
        print_lateness("lateness (record timestamp)", late, nl);
        int64_t p99_quiet =
            print_lateness("lateness due before the kill", late_quiet, nq);
        /* The done sets: the killed one committed records handled above a
         * held one; its successor read them with the offsets and skipped
         * them (each process's counter is in its forwarder_stopped line;
         * the killed one wrote none). */
        int64_t done_read =
            it_log_sum(a.log, "event=partitions_assigned",
                       "done_above_commit") +
            it_log_sum(b.log, "event=partitions_assigned", "done_above_commit");
        int64_t skipped =
            it_log_sum(a.log, "event=forwarder_stopped", "skipped_done") +
            it_log_sum(b.log, "event=forwarder_stopped", "skipped_done");
        printf("\n  (the SIGKILL leaves its partitions idle until the group's "
               "session times out: that is the tail; over the bound: %d)"
               "\n  done sets: %lld records above the commit points read at "
               "assignment, %lld skipped as done by an earlier owner's "
               "transaction; logs %s %s",
               over_bound, (long long)done_read, (long long)skipped, a.log,
               b.log);
        CU_ASSERT_EQUAL(over_bound, 0);
        /* Before any fault a fire is late by about a transaction commit: a
         * generous behaviour bound, not a benchmark. With n=120 the p99 is
         * the second-latest task; seen 59-124 ms, and 950 ms once on the
         * 2-core machine loaded by other builds. */
        CU_ASSERT(nq > 0);
        CU_ASSERT(p99_quiet < 2500);
        CU_ASSERT(done_read > 0);
        CU_ASSERT(skipped > 0);
        CU_ASSERT_EQUAL(lost, 0);
        CU_ASSERT_EQUAL(early, 0);
        CU_ASSERT_EQUAL(cancel_delivered, 0);
        CU_ASSERT_EQUAL(dups, 0);
        CU_ASSERT_EQUAL(unknown, 0);
        free(late);
        free(late_quiet);
        kdelay_client_destroy(c);
}

/* Two processes with one instance name share a transactional.id: the
 * second one's init_transactions fences the first, whose next transaction
 * fails fatally; a fence renews the producer (a coordinator's own fence
 * after a Kafka restart looks the same), which fences the second, which
 * renews in turn; the first, fenced again within 30 s of its renewal,
 * exits 1 (why=fenced_again) — or the second does, whichever is fenced
 * twice first. They never both run on: exactly one exits 1 with
 * event=producer_fatal ... action=exit, and the other stops cleanly. */
static void test_same_instance_is_fenced(void)
{
        char pfx[40], target[96], errstr[512];
        kdelay_client_t *c =
            scratch("itfence", pfx, sizeof(pfx), target, sizeof(target));
        it_fwd_t first = {"eosF", -1, ""}, second = {"eosF", -1, ""};
        fwd_start(&first, pfx, NULL);
        CU_ASSERT_EQUAL_FATAL(
            it_wait_log(first.log, "event=partitions_assigned", 30000), 0);
        snprintf(second.log, sizeof(second.log), "%s", first.log);
        fwd_start(&second, pfx, "forwarder.stats_interval=1s");
        /* Work for the first one, whatever the group decides. */
        for (int i = 0; i < 20; i++) {
                kdelay_task_t t;
                kdelay_task_init(&t);
                t.topic = target;
                t.value = "f";
                t.value_len = 1;
                t.delay_ms = 1000 + 100 * i;
                CU_ASSERT_EQUAL(
                    kdelay_schedule(c, &t, NULL, 0, errstr, sizeof(errstr)),
                    KDELAY_OK);
        }
        it_fwd_t *gone = NULL, *other = NULL;
        int rc = -1;
        for (int waited = 0; !gone && waited < 60000; waited += 500) {
                if ((rc = it_wait_pid(first.pid, 250)) != -1)
                        gone = &first, other = &second;
                else if ((rc = it_wait_pid(second.pid, 250)) != -1)
                        gone = &second, other = &first;
        }
        printf("\n  fenced forwarder: the %s, exit %d",
               gone == &second ? "second (the first renewed its producer)"
                               : "first",
               rc);
        CU_ASSERT_PTR_NOT_NULL(gone);
        if (gone) {
                gone->pid = -1;
                CU_ASSERT_EQUAL(rc, 1);
                CU_ASSERT(it_log_count(first.log, "event=producer_fatal") > 0);
                CU_ASSERT(it_log_count(first.log, "action=exit") > 0);
                CU_ASSERT_EQUAL(it_fwd_stop(other, SIGTERM), 0);
        } else { /* both still run: neither is left behind */
                it_fwd_stop(&first, SIGKILL);
                it_fwd_stop(&second, SIGKILL);
        }
        kdelay_client_destroy(c);
}

/* A fire to a topic that does not exist fails its transaction. */
static void test_failed_fire_aborts_and_rewinds(void)
{
        enum { N = 40 };
        char pfx[40], target[96], missing[128], errstr[512];
        char ids[N][KDELAY_ID_MAX + 1], bad_id[KDELAY_ID_MAX + 1];
        kdelay_client_t *c =
            scratch("itabort", pfx, sizeof(pfx), target, sizeof(target));
        snprintf(missing, sizeof(missing), "%s.missing", pfx);
        int64_t due = kd_now_ms() + 4000;
        kdelay_task_t t;
        kdelay_task_init(&t);
        t.topic = missing;
        t.value = "m";
        t.value_len = 1;
        t.fire_at_ms = due;
        CU_ASSERT_EQUAL_FATAL(kdelay_schedule(c, &t, bad_id, sizeof(bad_id),
                                              errstr, sizeof(errstr)),
                              KDELAY_OK);
        for (int i = 0; i < N; i++) {
                t.topic = target;
                t.fire_at_ms = due + i % 4; /* in the same transactions */
                CU_ASSERT_EQUAL_FATAL(kdelay_schedule(c, &t, ids[i],
                                                      sizeof(ids[i]), errstr,
                                                      sizeof(errstr)),
                                      KDELAY_OK);
        }
        it_fwd_t f = {"eosAb", -1, ""};
        fwd_start(&f, pfx, NULL);
        const char *tl[] = {target, NULL};
        it_msg_t msgs[N + 8];
        size_t got = it_consume(tl, msgs, N + 8, 25000);
        int seen[N] = {0}, dups = 0;
        for (size_t k = 0; k < got; k++) {
                char *id = it_header(&msgs[k], KDELAY_HDR_ID);
                for (int i = 0; id && i < N; i++)
                        if (!strcmp(id, ids[i]))
                                dups += seen[i]++ > 0;
                free(id);
                it_msg_free(&msgs[k]);
        }
        int delivered = 0;
        for (int i = 0; i < N; i++)
                delivered += seen[i] > 0;
        char dead[96];
        snprintf(dead, sizeof(dead), "%s.dead", pfx);
        const char *dl[] = {dead, NULL};
        it_msg_t d[2];
        size_t nd = it_consume(dl, d, 1, 30000);
        char *reason = nd ? it_header(&d[0], KDELAY_HDR_DEAD_REASON) : NULL;
        char *did = nd ? it_header(&d[0], KDELAY_HDR_ID) : NULL;
        printf("\n  abort: delivered=%d/%d duplicates=%d dead=%zu reason=%s "
               "aborts=%d rewinds=%d",
               delivered, N, dups, nd, reason ? reason : "-",
               it_log_count(f.log, "event=txn_aborted"),
               it_log_count(f.log, "event=partitions_rewound"));
        CU_ASSERT_EQUAL(delivered, N);
        CU_ASSERT_EQUAL(dups, 0);
        CU_ASSERT(it_log_count(f.log, "event=txn_aborted") >= 1);
        CU_ASSERT(it_log_count(f.log, "event=partitions_rewound") >= 1);
        CU_ASSERT_EQUAL(nd, 1);
        CU_ASSERT_STRING_EQUAL(reason ? reason : "", "target-unavailable");
        CU_ASSERT_STRING_EQUAL(did ? did : "", bad_id);
        free(reason);
        free(did);
        /* Its fate: DEAD with the reason, once the transaction that
         * produced the dead letter committed; a cancel says so. */
        kdelay_status_t st;
        int64_t deadline = kd_now_ms() + 10000;
        do {
                if (kdelay_status(c, bad_id, &st, errstr, sizeof(errstr)))
                        st.fate = KDELAY_FATE_UNDECIDED;
                if (st.fate != KDELAY_FATE_DEAD)
                        usleep(100 * 1000);
        } while (st.fate != KDELAY_FATE_DEAD && kd_now_ms() < deadline);
        printf(" fate=%s dead_reason=%s", kdelay_fate_str(st.fate),
               st.dead_reason);
        CU_ASSERT_EQUAL(st.fate, KDELAY_FATE_DEAD);
        CU_ASSERT_STRING_EQUAL(st.dead_reason, "target-unavailable");
        CU_ASSERT_EQUAL(kdelay_cancel(c, bad_id, errstr, sizeof(errstr)),
                        KDELAY_ERR_DEAD);
        for (size_t k = 0; k < nd; k++)
                it_msg_free(&d[k]);
        CU_ASSERT_EQUAL(it_fwd_stop(&f, SIGTERM), 0);
        kdelay_client_destroy(c);
}

static int cmp_str(const void *a, const void *b)
{
        const char *x = *(char *const *)a, *y = *(char *const *)b;
        return strcmp(x ? x : "", y ? y : "");
}

/* A catch-up's fires (more than a second late when produced) commit once
 * per forwarder.transaction_interval (2 s here); on-time fires would
 * commit at the next loop turn, every 20 ms or so. Paced at 1,000 fires/s
 * so that the catch-up outlasts the first commit (which takes most of a
 * second: the coordinator's set-up) and spans several intervals. */
static void test_catch_up_commits_per_interval(void)
{
        enum { N = 3000 };
        char pfx[40], target[96], errstr[512];
        kdelay_client_t *c =
            scratch("itcatch", pfx, sizeof(pfx), target, sizeof(target));
        kdelay_task_t t;
        kdelay_task_init(&t);
        t.topic = target;
        t.value = "c";
        t.value_len = 1;
        t.fire_at_ms = kd_now_ms() - 5000;
        char id[KDELAY_ID_MAX + 1];
        for (int i = 0; i < N; i++)
                CU_ASSERT_EQUAL_FATAL(
                    kdelay_schedule_async(c, &t, NULL, NULL, id, sizeof(id),
                                          errstr, sizeof(errstr)),
                    KDELAY_OK);
        CU_ASSERT_EQUAL_FATAL(kdelay_flush(c, 30000), KDELAY_OK);
        it_fwd_t f = {"eosCatch", -1, ""};
        fwd_start2(&f, pfx, "forwarder.transaction_interval=2s",
                   "forwarder.max_fire_rate=1000");
        const char *tl[] = {target, NULL};
        it_msg_t *msgs = calloc(N, sizeof(*msgs));
        char **seen = calloc(N, sizeof(*seen));
        CU_ASSERT_PTR_NOT_NULL_FATAL(msgs);
        CU_ASSERT_PTR_NOT_NULL_FATAL(seen);
        /* Stopped once all are in: an idle forwarder commits its offsets
         * now and then, which is not the catch-up's doing. */
        size_t got = it_consume(tl, msgs, N, 40000);
        int64_t first = INT64_MAX, last = 0;
        for (size_t k = 0; k < got; k++) {
                if (msgs[k].ts < first)
                        first = msgs[k].ts;
                if (msgs[k].ts > last)
                        last = msgs[k].ts;
                seen[k] = it_header(&msgs[k], KDELAY_HDR_ID);
                it_msg_free(&msgs[k]);
        }
        free(msgs);
        qsort(seen, got, sizeof(*seen), cmp_str);
        int dups = 0;
        for (size_t k = 1; k < got; k++)
                dups += seen[k] && seen[k - 1] && !strcmp(seen[k], seen[k - 1]);
        for (size_t k = 0; k < got; k++)
                free(seen[k]);
        free(seen);
        CU_ASSERT_EQUAL(it_fwd_stop(&f, SIGTERM), 0);
        int64_t commits =
            it_log_sum(f.log, "event=forwarder_stopped ", "txn_commits");
        int64_t span = got ? last - first : -1;
        printf("\n  catch-up: delivered %zu of %d (%d twice) over %lld ms in "
               "%lld commits (at most %lld)",
               got, N, dups, (long long)span, (long long)commits,
               (long long)(span / 2000 + 3));
        CU_ASSERT_EQUAL(got, N);
        CU_ASSERT_EQUAL(dups, 0);
        CU_ASSERT(commits >= 1);
        /* One per interval over the fires' span, plus the first and a
         * last one of offsets; at every turn it would be span / 20 ms. */
        CU_ASSERT(commits <= span / 2000 + 3);
        kdelay_client_destroy(c);
}

int main(void)
{
        static const kd_test_case_t cases[] = {
            KD_TEST(test_failed_fire_aborts_and_rewinds),
            KD_TEST(test_catch_up_commits_per_interval),
            KD_TEST(test_same_instance_is_fenced),
            KD_TEST(test_exactly_once_through_kill_and_restart), KD_TEST_END};
        return kd_test_run("exactly_once", cases, suite_init, suite_cleanup);
}
