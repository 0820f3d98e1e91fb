/* SPDX-License-Identifier: Apache-2.0 */
/* Integration: cooperative rebalancing (partition.assignment.strategy =
 * cooperative-sticky), in both delivery modes.
 *
 * Forwarder A holds every partition while 300 tasks come due over 12 s.
 * Forwarder B joins 5 s in and leaves (SIGTERM) 4 s later. The group
 * rebalances incrementally: A gives B a share in a revoke that keeps the
 * rest (`kept=1`, the mechanism asserted) and takes B's share back when B
 * leaves. Every task is delivered, none early, none twice in
 * exactly_once, and none waits for a session timeout (10 s).
 *
 * What librdkafka 2.0.2 does besides, printed and not asserted: its
 * cooperative-sticky assignor may move A's other half too in a second
 * round (a whole-assignment revoke in two steps), and in exactly_once a
 * member that gains partitions gets no callback before the generation
 * moves on, so its open transaction's offsets are refused (ILLEGAL
 * GENERATION): it aborts and rewinds (docs/forwarder.md). */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "it_env.h"
#include "kd_test.h"
#include "kd_util.h"

#define SEC      1000LL
#define N_TASKS  300
#define DUE_FROM (3 * SEC)
#define DUE_SPAN (12 * SEC)
#define B_JOINS  (5 * SEC)
#define B_LEAVES (9 * SEC)

/* Schedules the tasks through the library; 0 on success. */
static int schedule(const char *prefix, const char *url, const char *target,
                    int64_t t0, int64_t *fire_at)
{
        kdelay_client_t *c = NULL;
        char errstr[512];
        if (kdelay_client_new(&c, it_conf_new(prefix, url), errstr,
                              sizeof(errstr)))
                return -1;
        int rc = 0;
        for (int i = 0; i < N_TASKS && !rc; i++) {
                fire_at[i] = t0 + DUE_FROM + i * DUE_SPAN / N_TASKS;
                rc = it_schedule_v(c, target, prefix, i, fire_at[i], errstr,
                                   sizeof(errstr)) != KDELAY_OK;
        }
        if (kdelay_flush(c, 30000) != KDELAY_OK)
                rc = -1;
        kdelay_client_destroy(c);
        return rc;
}

static void run(const char *mode)
{
        char prefix[40], group[64], db[64], url[256], target[96], xm[64];
        it_unique(prefix, sizeof(prefix), "itcoop");
        it_unique(db, sizeof(db), "kdit_coop");
        snprintf(group, sizeof(group), "%s-group", prefix);
        snprintf(target, sizeof(target), "%s.target", prefix);
        snprintf(xm, sizeof(xm), "forwarder.delivery=%s", mode);
        CU_ASSERT_EQUAL_FATAL(it_db_create(db, 1, url, sizeof(url)), 0);
        CU_ASSERT_EQUAL_FATAL(it_tiers_create(prefix, url, 2), 0);
        CU_ASSERT_EQUAL_FATAL(it_create_topic(target, 2), 0);

        const char *props[] = {
            "partition.assignment.strategy=cooperative-sticky",
            "forwarder.hold_horizon=2s", xm, NULL};
        it_fwd_t a = {.instance = "fwCoopA", .pid = -1};
        it_fwd_t b = {.instance = "fwCoopB", .pid = -1};
        CU_ASSERT_EQUAL_FATAL(
            it_fwd_start(&a, KDELAY_FORWARDER, prefix, group, url, props), 0);
        CU_ASSERT_EQUAL_FATAL(it_wait_log(a.log, "protocol=cooperative", 30000),
                              0);

        int64_t t0 = kd_now_ms(), fire_at[N_TASKS];
        CU_ASSERT_EQUAL_FATAL(schedule(prefix, url, target, t0, fire_at), 0);

        it_sleep_until(t0 + B_JOINS);
        CU_ASSERT_EQUAL_FATAL(
            it_fwd_start(&b, KDELAY_FORWARDER, prefix, group, url, props), 0);
        /* A hands B a share and keeps the rest. */
        CU_ASSERT_EQUAL(it_wait_log(a.log, "kept=1", 20000), 0);
        it_sleep_until(t0 + B_LEAVES);
        CU_ASSERT_EQUAL(it_fwd_stop(&b, SIGTERM), 0);

        const char *topics[] = {target, NULL};
        it_msg_t *msgs = NULL;
        CU_ASSERT_EQUAL(it_wait_records(topics, N_TASKS, 40000), N_TASKS);
        size_t cnt = it_consume_all(topics, &msgs, 3000, 30000);
        int seen[N_TASKS] = {0}, early = 0;
        int64_t worst = 0;
        for (size_t k = 0; k < cnt; k++) {
                char *id = it_header(&msgs[k], KDELAY_HDR_ID);
                const char *dash = id ? strrchr(id, '-') : NULL;
                int i = dash ? atoi(dash + 1) : -1;
                if (i >= 0 && i < N_TASKS) {
                        seen[i]++;
                        early += msgs[k].ts < fire_at[i];
                        if (msgs[k].ts - fire_at[i] > worst)
                                worst = msgs[k].ts - fire_at[i];
                }
                free(id);
                it_msg_free(&msgs[k]);
        }
        free(msgs);
        int missing = 0, dups = 0;
        for (int i = 0; i < N_TASKS; i++) {
                missing += !seen[i];
                dups += seen[i] > 1 ? seen[i] - 1 : 0;
        }
        /* Before A's own stop, which revokes everything. */
        int a_kept = it_log_count(a.log, "kept=1");
        int a_dropped_all = it_log_count(a.log, "kept=0");
        int a_rewound = it_log_count(a.log, "event=partitions_rewound");
        int a_assigned = it_log_count(a.log, "event=partitions_assigned");
        CU_ASSERT_EQUAL(it_fwd_stop(&a, SIGTERM), 0);
        printf("\n  %s: %zu records, missing %d, duplicates %d, early %d, "
               "worst lateness %lld ms; A: assignments %d, revokes keeping "
               "some %d, revokes of all it had %d, rewinds %d\n",
               mode, cnt, missing, dups, early, (long long)worst, a_assigned,
               a_kept, a_dropped_all, a_rewound);
        CU_ASSERT_EQUAL(missing, 0);
        CU_ASSERT_EQUAL(early, 0);
        if (!strcmp(mode, "exactly_once"))
                CU_ASSERT_EQUAL(dups, 0);
        /* No wait for a session timeout (10 s): a bound on behaviour, not
         * a speed (seen: 1.3 s at least once, 5.1 s exactly once with the
         * abort and rewind). */
        CU_ASSERT(worst < 10 * SEC);
        CU_ASSERT(a_kept >= 1);
        /* Its first share, the empty one after the hand-over, B's back. */
        CU_ASSERT(a_assigned >= 3);
        it_db_drop(db);
}

static void test_at_least_once(void)
{
        run("at_least_once");
}

static void test_exactly_once(void)
{
        run("exactly_once");
}

int main(void)
{
        static const kd_test_case_t cases[] = {KD_TEST(test_at_least_once),
                                               KD_TEST(test_exactly_once),
                                               KD_TEST_END};
        return kd_test_run("cooperative", cases, it_env_init, NULL);
}
