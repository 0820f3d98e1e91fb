/* SPDX-License-Identifier: Apache-2.0 */
/* The crash loop of bench_limit (issue 9, docs/performance.md): two
 * forwarders as static members of their group, each under a stable
 * instance; every 3-6 s one of them, at random, is killed with SIGKILL
 * and restarted 0-2 s later under the same instance, for loop_s seconds.
 * Tasks are due 0.1 s to loop_s + 10 s after they are produced (0.1..70 s
 * for the 60 s loop), each in the tier the library would pick. Printed:
 * lateness p50/p99/max, lost, early, duplicates, kills, and the revokes
 * (rebalances) live members saw. */
#include "bl.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kd_tiers.h"
#include "kd_util.h"

/* Tasks are due from 0.1 s after they are produced until 10 s after the
 * loop ends (0.1..70 s for a 60 s loop). */
#define CRASH_FIRST_MS 100
#define CRASH_AFTER_MS 9900

static int64_t at_crash(int i, void *arg)
{
        return bl_at_spread(i, arg);
}

/* Produces the n tasks, each run of tasks that share a tier in one go. */
static int produce(int n, const bl_spread_t *sp)
{
        int i = 0;
        while (i < n) {
                char tier[KD_TIER_NAME_MAX], topic[128];
                kd_strlcpy(
                    tier,
                    bl_tier_for(bl_at_spread(i, (void *)sp) - kd_now_ms()),
                    sizeof(tier));
                int j = i + 1;
                while (j < n &&
                       !strcmp(bl_tier_for(bl_at_spread(j, (void *)sp) -
                                           kd_now_ms()),
                               tier))
                        j++;
                snprintf(topic, sizeof(topic), "%s.tier.%s", bl_prefix, tier);
                if (bl_produce(topic, j - i, i, at_crash, (void *)sp, "k"))
                        return -1;
                i = j;
        }
        return 0;
}

void bl_crash_run(int n, int loop_s, int is_static)
{
        char grp[96], rgrp[96];
        if (bl_section(NULL, grp, sizeof(grp), rgrp, sizeof(rgrp)))
                return;
        const char *extra[] = {is_static ? "forwarder.static_membership=1"
                                         : "forwarder.static_membership=0",
                               NULL};
        bl_fwd_t fw[2];
        bl_check(bl_fwd_start(&fw[0], "blK0", "at_least_once", grp, extra, 1) ==
                     0,
                 "crash start");
        bl_check(bl_fwd_start(&fw[1], "blK1", "at_least_once", grp, extra, 1) ==
                     0,
                 "crash start");
        /* Both in the group before the tasks come. */
        it_sleep_until(kd_now_ms() + 3 * SEC);
        const int64_t span = loop_s * SEC + CRASH_AFTER_MS;
        bl_spread_t sp = {kd_now_ms() + CRASH_FIRST_MS, span, n};
        bl_check(produce(n, &sp) == 0, "crash produce");

        srand(2026);
        int kills = 0;
        int64_t loop_end = kd_now_ms() + loop_s * SEC;
        for (;;) {
                int64_t next = kd_now_ms() + 3 * SEC + rand() % (3 * SEC);
                if (next > loop_end)
                        break;
                it_sleep_until(next);
                bl_fwd_t *v = &fw[rand() % 2];
                int64_t down = rand() % (2 * SEC + 1);
                it_fwd_stop(&v->f, SIGKILL);
                kills++;
                it_sleep_until(kd_now_ms() + down);
                bl_check(bl_fwd_start(v, v->instance, "at_least_once", grp,
                                      extra, 0) == 0,
                         "crash restart");
        }
        bl_seen_t s;
        bl_check(bl_read_target(rgrp, n, (int)(span + 120 * SEC), 3000, &s) ==
                     0,
                 "crash delivered");
        long long revoked = 0;
        for (int k = 0; k < 2; k++) {
                bl_check(bl_fwd_stop(&fw[k]) == 0, "crash forwarder exit");
                revoked +=
                    it_log_count(fw[k].f.log, "event=partitions_revoked");
        }
        bl_check(s.early == 0, "crash early");
        printf("crash_kills %d loop_s %d tasks %d static_members %d\n", kills,
               loop_s, n, is_static);
        printf("crash_lateness_ms p50 %lld p99 %lld max %lld\n",
               (long long)s.p50, (long long)s.p99, (long long)s.max);
        printf("crash_lost %zu early %d duplicates %zu\n", (size_t)n - s.n,
               s.early, s.dups);
        /* Rebalances a live member went through (a killed one logs none;
         * the final stops add one each). */
        printf("crash_revokes %lld\n", revoked);
        it_db_drop(bl_db);
}
