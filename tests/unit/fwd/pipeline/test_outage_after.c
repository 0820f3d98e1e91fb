/* SPDX-License-Identifier: Apache-2.0 */
/* forwarder.fate_outage_after in virtual time: a forwarder made but never
 * run (no broker contacted; the in-memory fate store), its clock manual
 * and stepped a millisecond at a time, single-threaded (the fate worker's
 * answers are never read: MySQL hangs). The store is found down once a
 * request has waited KD_STORE_STALL_MS, dated from when it went out; due
 * tasks fire without claims fate_outage_after from then, not a
 * millisecond earlier; failing statements date the outage from the first
 * failure, later ones do not put it off. A minute of the forwarder's time
 * in milliseconds of the test's. */
#include <kdelay/conf.h>

#include "core/kd_timer.h"
#include "kd_fate_mem.h"
#include "kd_test.h"
#include "pipeline/kd_outage.h"
#include "pipeline/kd_pipeline_state.h"
#include "store/kd_store.h"
#include "store/kd_store_state.h"
#include "top/kd_fwd.h"

#define T0       1000000
#define AFTER_MS 7000
/* store.c: a ping once no answer came for 5 s, looked at every 1 s; a
 * request unanswered for 5 s means the store is down. */
#define PING_MS  5000
#define STALL_MS 5000

/* A forwarder born on a manual clock, fate_outage_policy fire, or NULL. */
static kd_fwd_t *born(void)
{
        kd_fwd_t *fwd = NULL;
        kdelay_conf_t *c = kdelay_conf_new();
        kd_fate_store_t *store = NULL;
        char errstr[256];
        if (!c ||
            kdelay_conf_set(c, "brokers", "127.0.0.1:1", errstr,
                            sizeof(errstr)) ||
            kdelay_conf_set(c, "forwarder.instance", "outage", errstr,
                            sizeof(errstr)) ||
            kdelay_conf_set(c, "forwarder.fate_outage_policy", "fire", errstr,
                            sizeof(errstr)) ||
            kdelay_conf_set(c, "forwarder.fate_outage_after", "7s", errstr,
                            sizeof(errstr)) ||
            kd_fate_mem_new(&store))
                return NULL;
        /* The forwarder's time moves only when the test says, from its
         * birth: monotonic T0, wall time 2023-11-14. */
        kd_clocksrc_t clock;
        kd_clocksrc_manual(&clock, T0, 1700000000000);
        return kd_fwd_new(&fwd, c, store, &clock, errstr, sizeof(errstr)) ? NULL
                                                                          : fwd;
}

/* Steps fwd's clock 1 ms at a time (running what is due) until due tasks
 * fire without claims, at most limit_ms: the ms stepped, or -1. */
static int64_t step_until_firing(kd_fwd_t *fwd, int64_t limit_ms)
{
        for (int64_t ms = 0; ms <= limit_ms; ms++) {
                if (ms && kd_clocksrc_advance(&fwd->timers.clock, 1))
                        return -1;
                kd_timers_run(&fwd->timers, 1000);
                if (kd_outage_firing(fwd))
                        return ms;
        }
        return -1;
}

static void test_fires_without_claims_fate_outage_after_the_last_answer(void)
{
        kd_fwd_t *fwd = born();
        CU_ASSERT_PTR_NOT_NULL_FATAL(fwd);
        kd_clocksrc_t *clock = &fwd->timers.clock;
        const int64_t t0 = T0;
        CU_ASSERT_EQUAL(kd_clocksrc_mono_ms(clock), T0);
        int64_t down_at = -1, firing_at = -1;
        CU_ASSERT_EQUAL(fwd->conf->fwd_outage_after_ms, AFTER_MS);
        CU_ASSERT_FALSE(fwd->store->down);
        for (int64_t ms = 0; ms <= 60000 && firing_at < 0; ms++) {
                if (ms)
                        CU_ASSERT_EQUAL(kd_clocksrc_advance(clock, 1), 0);
                kd_timers_run(&fwd->timers, 1000);
                if (fwd->store->down && down_at < 0)
                        down_at = ms;
                if (kd_outage_firing(fwd))
                        firing_at = ms;
                else if (down_at >= 0)
                        CU_ASSERT(ms - (fwd->store->down_since_mono - t0) <
                                  AFTER_MS);
        }
        /* The ping went out when nothing had answered for PING_MS; with
         * no answer for STALL_MS after it the store is down, since the
         * ping went out. */
        CU_ASSERT_EQUAL(fwd->store->down_since_mono - t0, PING_MS);
        CU_ASSERT_EQUAL(down_at, PING_MS + STALL_MS);
        /* Fire without claims exactly fate_outage_after from then. */
        CU_ASSERT_EQUAL(firing_at, PING_MS + AFTER_MS);
        CU_ASSERT_EQUAL(fwd->outage->firing_since_mono - t0,
                        PING_MS + AFTER_MS);
        CU_ASSERT_EQUAL(kd_metric_get(&fwd->metrics, KD_M_FIRING_UNCLAIMED), 1);
        /* MySQL's first answer is to mark the journal pending. */
        CU_ASSERT_TRUE(fwd->store->gate);
        /* Monotonic time it was; a wall step changes none of it. */
        CU_ASSERT_EQUAL(kd_clocksrc_set_wall(clock, 0), 0);
        kd_timers_run(&fwd->timers, 1000);
        CU_ASSERT_TRUE(kd_outage_firing(fwd));
        kd_fwd_destroy(fwd);
}

static void test_failing_statements_date_the_outage_from_the_first(void)
{
        kd_fwd_t *fwd = born();
        CU_ASSERT_PTR_NOT_NULL_FATAL(fwd);
        kd_clocksrc_t *clock = &fwd->timers.clock;
        CU_ASSERT_EQUAL(kd_clocksrc_advance(clock, 1500), 0);
        kd_timers_run(&fwd->timers, 1000);
        kd_store_failed(fwd, "claim", "Lost connection to server");
        CU_ASSERT_TRUE(fwd->store->down);
        CU_ASSERT_EQUAL(fwd->store->down_since_mono, T0 + 1500);
        /* Failing again 3 s on (a retry): the outage still runs from the
         * first failure. */
        CU_ASSERT_EQUAL(step_until_firing(fwd, 3000), -1);
        kd_store_failed(fwd, "ping", "Lost connection to server");
        CU_ASSERT_EQUAL(fwd->store->down_since_mono, T0 + 1500);
        /* 3,000 ms on so far; firing 7,000 after the first. */
        CU_ASSERT_EQUAL(step_until_firing(fwd, 60000), AFTER_MS - 3000);
        CU_ASSERT_EQUAL(fwd->outage->firing_since_mono, T0 + 1500 + AFTER_MS);
        kd_fwd_destroy(fwd);
}

int main(void)
{
        static const kd_test_case_t cases[] = {
            KD_TEST(
                test_fires_without_claims_fate_outage_after_the_last_answer),
            KD_TEST(test_failing_statements_date_the_outage_from_the_first),
            KD_TEST_END};
        return kd_test_run("outage_after", cases, NULL, NULL);
}
