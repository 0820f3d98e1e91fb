/* SPDX-License-Identifier: Apache-2.0 */
/* Integration: a forwarder whose wall clock runs 3 s ahead of the
 * broker's, then one 3 s behind (KDELAY_TEST_CLOCK_OFFSET_MS=+-3000, the
 * forwarder's test aid; its monotonic clock and librdkafka's are left
 * alone — libfaketime was tried and stretches librdkafka's timed waits by
 * the offset, so a forwarder under it is late anyway and proves nothing).
 * 100 tasks due 20 s ahead hop through the 1 s tier (hold horizon 2 s);
 * the broker's append times of those hops show the forwarder its offset,
 * and it fires by the broker's time: no task reaches the target before its
 * fire-at by the test's clock (the broker's, on this one machine), and
 * none a second after it. The forwarder logs event=clock_skew with the
 * offset it found. Uncorrected, the first would fire 3 s early (and hop
 * every record at once, all of them looking overdue), the second 3 s
 * late. Lateness is judged by the host's wall clock; when that clock
 * steps during a run (a CI machine's jumped 16 s forward once, and the
 * tasks looked 10 s late), the run proves nothing and is made again. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "it_env.h"
#include "kd_test.h"
#include "kd_util.h"

#define N_TASKS 100
#define DUE_MS  20000
/* A run whose wall clock moved this much more or less than the monotonic
 * clock saw the host's clock step; runs made at most. */
#define STEP_MS  250
#define ATTEMPTS 3

/* The number in field `key` of the first line of path containing needle;
 * -1 when there is none. */
static int64_t log_field(const char *path, const char *needle, const char *key)
{
        FILE *fp = fopen(path, "r");
        if (!fp)
                return -1;
        char line[4096], k[64];
        int64_t v = -1;
        snprintf(k, sizeof(k), " %s=", key);
        while (v < 0 && fgets(line, sizeof(line), fp)) {
                const char *p = strstr(line, k);
                if (strstr(line, needle) && p)
                        v = strtoll(p + strlen(k), NULL, 10);
        }
        fclose(fp);
        return v;
}

/* One forwarder whose wall clock is offset_ms off the broker's. Returns
 * 1 when the host's clock stepped during the run (nothing asserted past
 * the setup), else 0. */
static int run_once(int64_t offset_ms)
{
        const int64_t wall0 = kd_now_ms() - kd_mono_ms();
        char prefix[40], group[64], db[64], url[256], target[96], off[64];
        snprintf(off, sizeof(off), "KDELAY_TEST_CLOCK_OFFSET_MS=%lld",
                 (long long)offset_ms);
        it_unique(prefix, sizeof(prefix), "itskew");
        it_unique(db, sizeof(db), "kdit_skew");
        snprintf(group, sizeof(group), "%s-group", prefix);
        snprintf(target, sizeof(target), "%s.target", prefix);
        CU_ASSERT_EQUAL_FATAL(it_db_create(db, 1, url, sizeof(url)), 0);
        CU_ASSERT_EQUAL_FATAL(it_tiers_create(prefix, url, 2), 0);
        CU_ASSERT_EQUAL_FATAL(it_create_topic(target, 2), 0);

        const char *const env[] = {off, NULL};
        it_fwd_t f = {.instance = "fwSKEW", .pid = -1, .env = env};
        const char *props[] = {"forwarder.hold_horizon=2s",
                               "forwarder.stats_interval=1s", NULL};
        CU_ASSERT_EQUAL_FATAL(
            it_fwd_start(&f, KDELAY_FORWARDER, prefix, group, url, props), 0);

        kdelay_client_t *c = NULL;
        char errstr[512], ids[N_TASKS][64];
        CU_ASSERT_EQUAL_FATAL(kdelay_client_new(&c, it_conf_new(prefix, url),
                                                errstr, sizeof(errstr)),
                              KDELAY_OK);
        int64_t fire_at = kd_now_ms() + DUE_MS;
        for (int i = 0; i < N_TASKS; i++) {
                kdelay_task_t kt;
                kdelay_task_init(&kt);
                kt.topic = target;
                kt.value = "v";
                kt.value_len = 1;
                kt.fire_at_ms = fire_at;
                CU_ASSERT_EQUAL_FATAL(
                    kdelay_schedule_async(c, &kt, NULL, NULL, ids[i],
                                          sizeof(ids[i]), errstr,
                                          sizeof(errstr)),
                    KDELAY_OK);
        }
        CU_ASSERT_EQUAL(kdelay_flush(c, 30000), KDELAY_OK);
        kdelay_client_destroy(c);

        const char *topics[] = {target, NULL};
        it_msg_t *msgs = calloc(N_TASKS, sizeof(*msgs));
        CU_ASSERT_PTR_NOT_NULL_FATAL(msgs);
        size_t n = it_consume(topics, msgs, N_TASKS, DUE_MS + 30000);
        int early = 0;
        int64_t first = INT64_MAX, last = 0;
        for (size_t k = 0; k < n; k++) {
                early += msgs[k].recv_ms < fire_at;
                if (msgs[k].recv_ms < first)
                        first = msgs[k].recv_ms;
                if (msgs[k].recv_ms > last)
                        last = msgs[k].recv_ms;
                it_msg_free(&msgs[k]);
        }
        free(msgs);
        CU_ASSERT_EQUAL(it_fwd_stop(&f, SIGTERM), 0);
        int64_t step = kd_now_ms() - kd_mono_ms() - wall0;
        if (step > STEP_MS || step < -STEP_MS) {
                printf("\n  clock %+lld ms off: the host's clock stepped "
                       "%+lld ms during the run; its lateness is not "
                       "judged, run again\n",
                       (long long)offset_ms, (long long)step);
                it_db_drop(db);
                return 1;
        }
        /* Logged once crossing the bound (an early, rougher estimate);
         * the final one in the last stats line. */
        int64_t warned = log_field(f.log, "event=clock_skew ", "ahead_ms");
        int64_t ahead =
            log_field(f.log, "event=forwarder_stopped ", "clock_ahead_ms");
        printf("\n  clock %+lld ms off: delivered %zu of %d, early %d, "
               "received %+lld..%+lld ms after fire-at; the forwarder warned "
               "at ahead_ms=%lld, ended at clock_ahead_ms=%lld\n",
               (long long)offset_ms, n, N_TASKS, early,
               (long long)(first - fire_at), (long long)(last - fire_at),
               (long long)warned, (long long)ahead);
        CU_ASSERT_EQUAL(n, N_TASKS);
        CU_ASSERT_EQUAL(early, 0);
        /* On time by the broker's clock: corrected (3 s off otherwise). */
        CU_ASSERT(last - fire_at < 1000);
        CU_ASSERT(warned > 250 || warned < -250); /* max_clock_skew */
        /* The smallest upper bound: the offset plus a report's trip, at
         * most (never below it: no early fire). */
        CU_ASSERT(ahead >= offset_ms);
        CU_ASSERT(ahead <= offset_ms + 500);
        it_db_drop(db);
        return 0;
}

static void run(int64_t offset_ms)
{
        int stepped = 1;
        for (int i = 0; stepped && i < ATTEMPTS; i++)
                stepped = run_once(offset_ms);
        CU_ASSERT_EQUAL(stepped, 0);
}

static void test_a_clock_ahead_fires_late_not_early(void)
{
        run(3000);
}

static void test_a_clock_behind_fires_on_time_not_late(void)
{
        run(-3000);
}

int main(void)
{
        static const kd_test_case_t cases[] = {
            KD_TEST(test_a_clock_ahead_fires_late_not_early),
            KD_TEST(test_a_clock_behind_fires_on_time_not_late), KD_TEST_END};
        return kd_test_run("clock_skew", cases, it_env_init, NULL);
}
