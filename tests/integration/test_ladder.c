/* SPDX-License-Identifier: Apache-2.0 */
/* Integration: tier ladders on the real broker.
 *
 * 1. The plan is what the forwarder does: tasks on a compressed ladder
 *    (1s, 3s, 10s; hold horizon 500 ms) hop exactly as kd_path_plan
 *    (kdelayctl tiers plan) predicts, tier by tier, by the forwarder's own
 *    hopped_to_<tier> counters. Only delays whose path is the same under
 *    a read lag of up to 250 ms per hop and a schedule 50 ms late are
 *    used, so timing noise cannot change a path.
 * 2. The ladder changes under load: a forwarder on ladder A (1s, 4s, 10s)
 *    is joined by one on ladder B (1s, 3s, 6s), then stopped; tasks are
 *    scheduled before, during and after by producers on both ladders. Every
 *    task is delivered once, none early, and the retired tiers (4s, 10s)
 *    are read to their end by the group: nothing is stranded there.
 *
 * Issue 37: both kept (a real broker's tier topics, a real rebalance
 * between ladders); the ladder change shortened: its tasks are due over
 * 12 s (from 20 s), both retired tiers still used (asserted). The plan's
 * delays stay 1.5..25 s: below 16 s no stable path uses the 10 s tier
 * (every tier is now asserted to be on some path). */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "it_env.h"
#include "kd_path.h"
#include "kd_test.h"
#include "kd_topics.h"
#include "kd_util.h"

#define SEC 1000LL

static kdelay_conf_t *conf_with(const char *prefix, const char *url,
                                const char *tiers)
{
        kdelay_conf_t *c = it_conf_new(prefix, url);
        char errstr[256];
        if (c && kdelay_conf_set(c, "tiers", tiers, errstr, sizeof(errstr))) {
                fprintf(stderr, "tiers %s: %s\n", tiers, errstr);
                kdelay_conf_destroy(c);
                return NULL;
        }
        return c;
}

static int topics_for(const char *prefix, const char *url, const char *tiers)
{
        kd_topic_report_t reports[KD_TOPICS_MAX];
        size_t n;
        char errstr[512];
        kdelay_conf_t *c = conf_with(prefix, url, tiers);
        int rc = c ? (int)kd_topics_create(c, 2, 1, reports, &n, errstr,
                                           sizeof(errstr))
                   : -1;
        if (rc)
                fprintf(stderr, "topics %s: %s\n", tiers, c ? errstr : "-");
        kdelay_conf_destroy(c);
        return rc;
}

/* Schedules tasks[i] due at fire_at[i] through a client on ladder tiers. */
static int schedule_all(const char *prefix, const char *url, const char *tiers,
                        const char *target, const int64_t *fire_at, size_t n,
                        const char *id_stem, size_t id_base)
{
        kdelay_client_t *c = NULL;
        char errstr[512];
        kdelay_conf_t *conf = conf_with(prefix, url, tiers);
        if (!conf || kdelay_client_new(&c, conf, errstr, sizeof(errstr))) {
                kdelay_conf_destroy(conf);
                return -1;
        }
        int rc = 0;
        for (size_t i = 0; i < n && !rc; i++)
                rc = it_schedule_v(c, target, id_stem, (long)(id_base + i),
                                   fire_at[i], errstr,
                                   sizeof(errstr)) != KDELAY_OK;
        if (!rc)
                rc = kdelay_flush(c, 30000) != KDELAY_OK;
        kdelay_client_destroy(c);
        return rc;
}

/* Delivery checks: every id of the n expected arrived exactly once, none
 * before its fire-at. Returns the max lateness in ms (-1 on a failure,
 * asserted here). */
static int64_t check_deliveries(const char *target, size_t n, int timeout_ms)
{
        const char *topics[] = {target, NULL};
        it_msg_t *msgs = NULL;
        size_t got = it_wait_records(topics, n, timeout_ms);
        CU_ASSERT_EQUAL(got, n);
        size_t cnt = it_consume_all(topics, &msgs, 3000, 30000);
        int early = 0, dup = 0;
        int64_t late_max = 0;
        char **seen = calloc(cnt ? cnt : 1, sizeof(*seen));
        CU_ASSERT_PTR_NOT_NULL_FATAL(seen);
        for (size_t k = 0; k < cnt; k++) {
                char *id = it_header(&msgs[k], KDELAY_HDR_ID);
                char *fa = it_header(&msgs[k], KDELAY_HDR_FIRE_AT);
                /* The fired record's timestamp: the forwarder's produce
                 * time (this is a second read: receive times say nothing). */
                int64_t fire_at = fa ? atoll(fa) : 0;
                early += msgs[k].ts < fire_at;
                if (msgs[k].ts - fire_at > late_max)
                        late_max = msgs[k].ts - fire_at;
                for (size_t j = 0; id && j < k; j++)
                        dup += seen[j] && !strcmp(seen[j], id);
                seen[k] = id;
                free(fa);
                it_msg_free(&msgs[k]);
        }
        for (size_t k = 0; k < cnt; k++)
                free(seen[k]);
        free(seen);
        free(msgs);
        printf("  delivered %zu of %zu, duplicates %d, early %d, late max "
               "%lld ms\n",
               cnt, n, dup, early, (long long)late_max);
        CU_ASSERT_EQUAL(cnt, n);
        CU_ASSERT_EQUAL(dup, 0);
        CU_ASSERT_EQUAL(early, 0);
        return late_max;
}

#define PLAN_LADDER "1s,3s,10s"
#define PLAN_TASKS  256

static int same_hops(const kd_path_t *a, const kd_path_t *b, size_t cnt)
{
        return !memcmp(a->hops_by_tier, b->hops_by_tier,
                       cnt * sizeof(a->hops_by_tier[0]));
}

static void test_forwarder_hops_as_planned(void)
{
        char prefix[40], group[64], db[64], url[256], target[96];
        it_unique(prefix, sizeof(prefix), "itplan");
        it_unique(db, sizeof(db), "kdit_plan");
        snprintf(group, sizeof(group), "%s-group", prefix);
        snprintf(target, sizeof(target), "%s.target", prefix);
        CU_ASSERT_EQUAL_FATAL(it_db_create(db, 1, url, sizeof(url)), 0);
        CU_ASSERT_EQUAL_FATAL(topics_for(prefix, url, PLAN_LADDER), 0);
        CU_ASSERT_EQUAL_FATAL(it_create_topic(target, 2), 0);

        kd_tiers_t tiers;
        CU_ASSERT_EQUAL_FATAL(kd_tiers_parse(&tiers, PLAN_LADDER, NULL, 0), 0);
        kd_path_rules_t rules = {
            .tiers = &tiers, .hold_horizon_ms = 500, .lookahead_ms = 50};
        /* Delays 1.5..25 s whose path holds under lag and a schedule
         * 50 ms late (the 10 s tier is on a stable path only past 16 s). */
        int64_t delays[PLAN_TASKS];
        uint64_t want[KD_TIERS_MAX] = {0}, want_total = 0;
        size_t n = 0;
        for (int64_t d = 1500; d < 25000 && n < PLAN_TASKS; d += 97) {
                kd_path_t p[4];
                for (int k = 0; k < 4; k++) {
                        kd_path_rules_t r = rules;
                        r.lag_ms = k & 1 ? 250 : 0;
                        kd_path_plan(&r, d - (k & 2 ? 50 : 0), &p[k]);
                }
                if (!same_hops(&p[0], &p[1], tiers.cnt) ||
                    !same_hops(&p[0], &p[2], tiers.cnt) ||
                    !same_hops(&p[0], &p[3], tiers.cnt))
                        continue;
                delays[n++] = d;
                for (size_t i = 0; i < tiers.cnt; i++)
                        want[i] += p[0].hops_by_tier[i];
                want_total += p[0].hops;
        }
        CU_ASSERT_FATAL(n >= 40);
        CU_ASSERT_FATAL(want_total >= n); /* paths with hops, not held */
        for (size_t i = 0; i < tiers.cnt; i++)
                CU_ASSERT(want[i] > 0); /* every tier on some path */

        it_fwd_t f = {.instance = "fwPLAN", .pid = -1};
        const char *props[] = {
            "tiers=" PLAN_LADDER, "forwarder.hold_horizon=500ms",
            "forwarder.lookahead=50ms", "forwarder.claim_ahead=100ms", NULL};
        CU_ASSERT_EQUAL_FATAL(
            it_fwd_start(&f, KDELAY_FORWARDER, prefix, group, url, props), 0);
        CU_ASSERT_EQUAL_FATAL(
            it_wait_log(f.log, "event=partitions_assigned", 30000), 0);
        int64_t fire_at[PLAN_TASKS], now = kd_now_ms();
        for (size_t i = 0; i < n; i++)
                fire_at[i] = now + delays[i];
        CU_ASSERT_EQUAL_FATAL(schedule_all(prefix, url, PLAN_LADDER, target,
                                           fire_at, n, "plan", 0),
                              0);
        check_deliveries(target, n, 40000);
        CU_ASSERT_EQUAL(it_fwd_stop(&f, SIGTERM), 0);

        printf("  %zu tasks, planned hops %llu:", n,
               (unsigned long long)want_total);
        for (size_t i = 0; i < tiers.cnt; i++) {
                char field[64];
                snprintf(field, sizeof(field), "hopped_to_%s", tiers.v[i].name);
                int64_t got = it_log_sum(f.log, "at=forwarder_stopped", field);
                printf(" %s planned %llu counted %lld;", tiers.v[i].name,
                       (unsigned long long)want[i], (long long)got);
                CU_ASSERT_EQUAL(got, (int64_t)want[i]);
        }
        printf("\n");
        CU_ASSERT_EQUAL(it_log_sum(f.log, "event=forwarder_stopped ", "hopped"),
                        (int64_t)want_total);
        it_db_drop(db);
}

#define LADDER_A "1s,4s,10s"
#define LADDER_B "1s,3s,6s"
#define BATCH    40

/* The group's committed offset of every partition of topic reaches its
 * end: every record there was handled. */
static void assert_drained(const char *group, const char *topic)
{
        const char *props[] = {"group.id", group, NULL};
        rd_kafka_t *rk = it_kafka_new(RD_KAFKA_CONSUMER, props);
        CU_ASSERT_PTR_NOT_NULL_FATAL(rk);
        rd_kafka_topic_partition_list_t *l =
            rd_kafka_topic_partition_list_new(2);
        for (int p = 0; p < 2; p++)
                rd_kafka_topic_partition_list_add(l, topic, p);
        CU_ASSERT_EQUAL(rd_kafka_committed(rk, l, 10000), 0);
        int64_t records = 0;
        for (int p = 0; p < l->cnt; p++) {
                int64_t lo = 0, hi = 0;
                CU_ASSERT_EQUAL(rd_kafka_query_watermark_offsets(
                                    rk, topic, p, &lo, &hi, 10000),
                                0);
                printf("  %s [%d]: committed %lld of %lld\n", topic, p,
                       (long long)l->elems[p].offset, (long long)hi);
                /* A partition no record reached has nothing to commit
                 * (keyless hops stick to one partition for a while). */
                CU_ASSERT(l->elems[p].offset == hi ||
                          (hi == 0 && l->elems[p].offset < 0));
                records += hi;
        }
        CU_ASSERT(records > 0); /* the retired tier was used */
        rd_kafka_topic_partition_list_destroy(l);
        rd_kafka_destroy(rk);
}

/* Due from 5 s after base over span: on ladder A the 10 s tier is used
 * from 11 s on (hold horizon 1 s), the 4 s tier below. */
#define SPAN (12 * SEC)

static void fire_times(int64_t *fire_at, size_t n, int64_t base, int64_t span)
{
        for (size_t i = 0; i < n; i++)
                fire_at[i] = base + 5 * SEC + (int64_t)i * span / (int64_t)n;
}

static void test_ladder_change_under_load(void)
{
        char prefix[40], group[64], db[64], url[256], target[96];
        it_unique(prefix, sizeof(prefix), "itmove");
        it_unique(db, sizeof(db), "kdit_move");
        snprintf(group, sizeof(group), "%s-group", prefix);
        snprintf(target, sizeof(target), "%s.target", prefix);
        CU_ASSERT_EQUAL_FATAL(it_db_create(db, 1, url, sizeof(url)), 0);
        /* The operator's first step: create the new ladder's topics. */
        CU_ASSERT_EQUAL_FATAL(topics_for(prefix, url, LADDER_A), 0);
        CU_ASSERT_EQUAL_FATAL(topics_for(prefix, url, LADDER_B), 0);
        CU_ASSERT_EQUAL_FATAL(it_create_topic(target, 2), 0);

        const char *pa[] = {"tiers=" LADDER_A, "forwarder.hold_horizon=1s",
                            NULL};
        const char *pb[] = {"tiers=" LADDER_B, "forwarder.hold_horizon=1s",
                            NULL};
        it_fwd_t fa = {.instance = "fwA", .pid = -1};
        it_fwd_t fb = {.instance = "fwB", .pid = -1};
        CU_ASSERT_EQUAL_FATAL(
            it_fwd_start(&fa, KDELAY_FORWARDER, prefix, group, url, pa), 0);
        CU_ASSERT_EQUAL_FATAL(
            it_wait_log(fa.log, "event=partitions_assigned", 30000), 0);

        int64_t fire_at[BATCH];
        /* Before the move: ladder A's producers, due in 5..17 s. */
        fire_times(fire_at, BATCH, kd_now_ms(), SPAN);
        CU_ASSERT_EQUAL_FATAL(
            schedule_all(prefix, url, LADDER_A, target, fire_at, BATCH, "a", 0),
            0);
        /* The move: B joins, A leaves (a rolling restart). */
        it_sleep_until(kd_now_ms() + 3 * SEC);
        CU_ASSERT_EQUAL_FATAL(
            it_fwd_start(&fb, KDELAY_FORWARDER, prefix, group, url, pb), 0);
        CU_ASSERT_EQUAL_FATAL(
            it_wait_log(fb.log, "event=partitions_assigned", 30000), 0);
        fire_times(fire_at, BATCH, kd_now_ms(), SPAN);
        CU_ASSERT_EQUAL_FATAL(schedule_all(prefix, url, LADDER_A, target,
                                           fire_at, BATCH, "a", BATCH),
                              0);
        it_sleep_until(kd_now_ms() + 3 * SEC);
        CU_ASSERT_EQUAL(it_fwd_stop(&fa, SIGTERM), 0);
        /* After: a producer still on ladder A, and one on B. */
        fire_times(fire_at, BATCH, kd_now_ms(), SPAN);
        CU_ASSERT_EQUAL_FATAL(schedule_all(prefix, url, LADDER_A, target,
                                           fire_at, BATCH, "a", 2 * BATCH),
                              0);
        fire_times(fire_at, BATCH, kd_now_ms(), SPAN);
        CU_ASSERT_EQUAL_FATAL(
            schedule_all(prefix, url, LADDER_B, target, fire_at, BATCH, "b", 0),
            0);

        int64_t late = check_deliveries(target, 4 * BATCH, 90000);
        /* A rebalance pauses the group for seconds; nothing waits on a
         * retired tier beyond that. */
        CU_ASSERT(late < 15 * SEC);
        CU_ASSERT_EQUAL(it_fwd_stop(&fb, SIGTERM), 0);
        CU_ASSERT(it_log_sum(fb.log, "event=forwarder_stopped ", "hopped") > 0);
        char t4[128], t10[128];
        snprintf(t4, sizeof(t4), "%s.tier.4s", prefix);
        snprintf(t10, sizeof(t10), "%s.tier.10s", prefix);
        assert_drained(group, t4);
        assert_drained(group, t10);
        it_db_drop(db);
}

int main(void)
{
        static const kd_test_case_t cases[] = {
            KD_TEST(test_forwarder_hops_as_planned),
            KD_TEST(test_ladder_change_under_load),
            KD_TEST_END,
        };
        return kd_test_run("ladder", cases, it_env_init, NULL);
}
