/* SPDX-License-Identifier: Apache-2.0 */
/* Task paths through the tiers (the forwarder's due/hop rules) and tier
 * plans over delay distributions (kdelayctl tiers plan). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <kdelay/kdelay.h>

#include "kd_conf.h"
#include "kd_path.h"
#include "kd_plan.h"
#include "kd_test.h"

#define SEC  1000LL
#define MIN  (60 * SEC)
#define HOUR (60 * MIN)
#define DAY  (24 * HOUR)

/* old4: the first default (issue 9's "before"); old12: the default until
 * issue 44; def: the shipped default, as kdelay_conf_new() has it. */
static kd_tiers_t old4, old12, def;

static int suite_init(void)
{
        kdelay_conf_t *conf = kdelay_conf_new();
        if (!conf)
                return -1;
        def = conf->tiers;
        kdelay_conf_destroy(conf);
        return kd_tiers_parse(&old4, "1s,1m,30m,7d", NULL, 0) ||
               kd_tiers_parse(&old12, "1s,5s,15s,1m,5m,10m,30m,2h,6h,1d,3d,7d",
                              NULL, 0);
}

static kd_path_rules_t rules(const kd_tiers_t *t)
{
        kd_path_rules_t r = {
            .tiers = t, .hold_horizon_ms = 30 * SEC, .lookahead_ms = 200};
        return r;
}

/* Every path adds up: writes = schedule + hops + fire, by tier too. */
static void path_is(const kd_tiers_t *t, int64_t delay, unsigned writes,
                    const unsigned *hops_by_tier, int64_t held_ms)
{
        kd_path_rules_t r = rules(t);
        kd_path_t p;
        kd_path_plan(&r, delay, &p);
        CU_ASSERT_EQUAL(p.writes, writes);
        CU_ASSERT_EQUAL(p.hops + 2, p.writes);
        unsigned sum_w = 0, sum_h = 0;
        for (size_t i = 0; i < t->cnt; i++) {
                CU_ASSERT_EQUAL(p.hops_by_tier[i], hops_by_tier[i]);
                sum_w += p.writes_by_tier[i];
                sum_h += p.hops_by_tier[i];
        }
        CU_ASSERT_EQUAL(sum_h, p.hops);
        CU_ASSERT_EQUAL(sum_w, p.hops + 1);
        CU_ASSERT_EQUAL(p.held_ms, held_ms);
        if (p.writes != writes)
                fprintf(stderr, "\ndelay %lld: writes %u, want %u\n",
                        (long long)delay, p.writes, writes);
}

static void test_due_and_hops(void)
{
        /* The tier's time, or the fire-at less the horizon if earlier. */
        CU_ASSERT_EQUAL(kd_path_due(100 * SEC, 0, MIN, 30 * SEC), MIN);
        CU_ASSERT_EQUAL(kd_path_due(70 * SEC, 0, MIN, 30 * SEC), 40 * SEC);
        CU_ASSERT_EQUAL(kd_path_due(10 * SEC, 5 * SEC, MIN, 30 * SEC),
                        -20 * SEC);
        /* Hops only beyond horizon + lookahead. */
        CU_ASSERT_TRUE(kd_path_hops(30201, 0, 30 * SEC, 200));
        CU_ASSERT_FALSE(kd_path_hops(30200, 0, 30 * SEC, 200));
        CU_ASSERT_FALSE(kd_path_hops(-5, 0, 30 * SEC, 200));
}

/* The figures for the old ladder: a 45 s task hops about 15 times
 * through tier.1s, a 25-minute one about 25 times through tier.1m. */
static void test_old_ladder_paths(void)
{
        unsigned none[4] = {0}, h45[4] = {18}, h25m[4] = {0, 24};
        unsigned h6d[4] = {35, 0, 287};
        path_is(&old4, 0, 2, none, 0);
        path_is(&old4, 10 * SEC, 2, none, 10 * SEC);
        path_is(&old4, 45 * SEC, 20, h45, 30200);
        path_is(&old4, 25 * MIN, 26, h25m, 30200);
        path_is(&old4, 6 * DAY, 324, h6d, 30200);
        path_is(&old4, 7 * DAY, 2, none, 30200);
}

/* The default until issue 44 (12 tiers): a 25-minute task hops twice. */
static void test_old12_ladder_paths(void)
{
        unsigned none[12] = {0}, h25m[12] = {0, 0, 0, 0, 1, 1};
        unsigned h6d[12] = {[10] = 1};
        path_is(&old12, 10 * SEC, 2, none, 10 * SEC);
        path_is(&old12, 45 * SEC, 2, none, 30200);
        path_is(&old12, 25 * MIN, 4, h25m, 30200);
        path_is(&old12, 6 * DAY, 3, h6d, 30200);
        path_is(&old12, 7 * DAY, 2, none, 30200);
}

/* The default (20 tiers, docs/forwarder.md "The ladder and what it
 * costs"): 1s,30s,1m,1m30s,2m,3m,5m,8m,12m,20m,30m,45m,1h,1h30m,4h,6h,
 * 16h,1d,2d12h,7d, indexes 0..19. */
static void test_default_ladder_paths(void)
{
        CU_ASSERT_EQUAL_FATAL(def.cnt, 20);
        unsigned none[20] = {0}, h25m[20] = {[6] = 1};
        unsigned h6d[20] = {[17] = 1, [18] = 1};
        path_is(&def, 10 * SEC, 2, none, 10 * SEC);
        path_is(&def, 45 * SEC, 2, none, 30200);
        path_is(&def, 100 * SEC, 2, none, 30200);
        /* 20m, then the 5m left in tier.5m. */
        path_is(&def, 25 * MIN, 3, h25m, 30200);
        /* 2d12h twice over (the 84 h left after the first), then 1d. */
        path_is(&def, 6 * DAY, 4, h6d, 30200);
        path_is(&def, 7 * DAY, 2, none, 30200);
}

/* A lag on every read moves hops later; the path still ends held. */
static void test_lag(void)
{
        kd_path_rules_t r = rules(&old4);
        r.lag_ms = 300;
        kd_path_t p;
        kd_path_plan(&r, 45 * SEC, &p);
        CU_ASSERT(p.hops > 0 && p.hops < 18);
        CU_ASSERT(p.held_ms <= 30200);
}

static kd_plan_result_t plan_of(const kd_tiers_t *t, int64_t lag_ms)
{
        kd_dist_t d;
        char errstr[256];
        kd_plan_result_t res;
        memset(&res, 0, sizeof(res));
        CU_ASSERT_EQUAL_FATAL(
            kd_dist_parse(&d, "loguniform:1s:7d", errstr, sizeof(errstr)),
            KDELAY_OK);
        kd_path_rules_t r = rules(t);
        r.lag_ms = lag_ms;
        CU_ASSERT_EQUAL(
            kd_plan_run(&r, &d, 100000, 1, &res, errstr, sizeof(errstr)),
            KDELAY_OK);
        kd_dist_clear(&d);
        return res;
}

/* The shipped ladder meets issue 44's bound: mean <= 4 Kafka writes per
 * task for delays log-uniform over [1 s, 7 d] (kdelayctl tiers plan's
 * default distribution, seed 1), on time and with reads 50 ms or 1 s
 * late; 12 tiers cost 5.6, the 4 of issue 9 about 41. */
static void test_plan_default_ladder(void)
{
        kd_plan_result_t res = plan_of(&def, 0);
        CU_ASSERT_EQUAL(res.samples, 100000);
        CU_ASSERT(res.mean_writes <= 4.0);
        CU_ASSERT(res.p99_writes <= 10);
        CU_ASSERT(res.p50_writes >= 2 && res.p50_writes <= res.p99_writes);
        CU_ASSERT(res.p99_writes <= res.max_writes);
        uint64_t writes = 0;
        for (size_t i = 0; i < def.cnt; i++)
                writes += res.writes_by_tier[i];
        /* Every task is scheduled once and fired once. */
        CU_ASSERT_EQUAL(writes + 100000,
                        (uint64_t)(res.mean_writes * 100000 + 0.5));
        printf("\n  default ladder: mean %.2f p50 %u p99 %u max %u",
               res.mean_writes, res.p50_writes, res.p99_writes, res.max_writes);
        for (int64_t lag = 50; lag <= 1000; lag += 950) {
                res = plan_of(&def, lag);
                CU_ASSERT(res.mean_writes <= 4.0);
                printf("; lag %lld ms: mean %.2f", (long long)lag,
                       res.mean_writes);
        }
        printf("\n");

        res = plan_of(&old12, 0);
        CU_ASSERT(res.mean_writes > 5.0 && res.mean_writes <= 6.0);
        res = plan_of(&old4, 0);
        CU_ASSERT(res.mean_writes > 30.0);
}

/* The default keeps the four tiers the design names (docs/design.md, "Tier
 * topics") and no tier below 30 s but 1s: a task with at most hold horizon
 * + lookahead (30.2 s) left is held, so 5s or 15s would never be hopped
 * into. */
static void test_default_ladder_shape(void)
{
        static const char *const named[] = {"1s", "1m", "30m", "7d"};
        for (size_t i = 0; i < sizeof(named) / sizeof(named[0]); i++)
                CU_ASSERT(kd_tiers_find(&def, named[i]) >= 0);
        CU_ASSERT_EQUAL(def.v[0].delay_ms, SEC);
        CU_ASSERT_EQUAL(def.v[1].delay_ms, 30 * SEC);
}

static void test_plan_same_seed_same_plan(void)
{
        kd_dist_t d;
        CU_ASSERT_EQUAL_FATAL(kd_dist_parse(&d, "uniform:1m:2h", NULL, 0),
                              KDELAY_OK);
        kd_path_rules_t r = rules(&def);
        kd_plan_result_t a, b;
        CU_ASSERT_EQUAL(kd_plan_run(&r, &d, 5000, 7, &a, NULL, 0), KDELAY_OK);
        CU_ASSERT_EQUAL(kd_plan_run(&r, &d, 5000, 7, &b, NULL, 0), KDELAY_OK);
        CU_ASSERT_EQUAL(memcmp(&a, &b, sizeof(a)), 0);
        CU_ASSERT_EQUAL(kd_plan_run(&r, &d, 0, 7, &a, NULL, 0),
                        KDELAY_ERR_INVALID_ARG);
        kd_dist_clear(&d);
}

static void test_dist_file(void)
{
        char path[] = "/tmp/kd_test_path_XXXXXX";
        int fd = mkstemp(path);
        CU_ASSERT_FATAL(fd >= 0);
        static const char text[] = "# delays\n45s\n\n  1500000  \n6d # six\n";
        CU_ASSERT_EQUAL_FATAL(write(fd, text, sizeof(text) - 1),
                              (ssize_t)(sizeof(text) - 1));
        close(fd);
        char spec[64], errstr[256];
        snprintf(spec, sizeof(spec), "file:%s", path);
        kd_dist_t d;
        CU_ASSERT_EQUAL_FATAL(kd_dist_parse(&d, spec, errstr, sizeof(errstr)),
                              KDELAY_OK);
        CU_ASSERT_EQUAL(d.cnt, 3);
        kd_path_rules_t r = rules(&old4);
        kd_plan_result_t res;
        CU_ASSERT_EQUAL(kd_plan_run(&r, &d, 1, 1, &res, NULL, 0), KDELAY_OK);
        CU_ASSERT_EQUAL(res.samples, 3);
        /* The three paths of test_old_ladder_paths: 20, 26, 324 writes. */
        CU_ASSERT_EQUAL(res.p50_writes, 26);
        CU_ASSERT_EQUAL(res.max_writes, 324);
        CU_ASSERT_EQUAL(res.hops_by_tier[0], 18 + 35);
        kd_dist_clear(&d);

        /* A bad line is named by its number. */
        FILE *fp = fopen(path, "w");
        CU_ASSERT_PTR_NOT_NULL_FATAL(fp);
        fputs("1s\nsoon\n", fp);
        fclose(fp);
        CU_ASSERT_EQUAL(kd_dist_parse(&d, spec, errstr, sizeof(errstr)),
                        KDELAY_ERR_INVALID_ARG);
        CU_ASSERT_PTR_NOT_NULL(strstr(errstr, ":2: \"soon\""));
        unlink(path);
        CU_ASSERT_EQUAL(kd_dist_parse(&d, spec, errstr, sizeof(errstr)),
                        KDELAY_ERR_INVALID_ARG);
        CU_ASSERT_PTR_NOT_NULL(strstr(errstr, "cannot read"));
}

static void test_dist_rejects(void)
{
        static const char *const bad[] = {"",
                                          "loguniform",
                                          "loguniform:1s",
                                          "loguniform:0s:1d",
                                          "uniform:2h:1h",
                                          "uniform:x:1h",
                                          "normal:1s:2s",
                                          "file:",
                                          "loguniform:1s:7d:9"};
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                kd_dist_t d;
                char errstr[256] = "";
                CU_ASSERT_EQUAL(
                    kd_dist_parse(&d, bad[i], errstr, sizeof(errstr)),
                    KDELAY_ERR_INVALID_ARG);
                CU_ASSERT(errstr[0] != '\0');
        }
}

static const kd_test_case_t cases[] = {
    KD_TEST(test_due_and_hops),
    KD_TEST(test_old_ladder_paths),
    KD_TEST(test_old12_ladder_paths),
    KD_TEST(test_default_ladder_paths),
    KD_TEST(test_lag),
    KD_TEST(test_plan_default_ladder),
    KD_TEST(test_default_ladder_shape),
    KD_TEST(test_plan_same_seed_same_plan),
    KD_TEST(test_dist_file),
    KD_TEST(test_dist_rejects),
    KD_TEST_END,
};

int main(void)
{
        return kd_test_run("path", cases, suite_init, NULL);
}
