/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for the forwarder's timer service: two clocks, due order,
 * re-arming from a callback, the batch limit, waits; its clock source, and
 * timers run in virtual time on a manual clock. */
#include <stdint.h>
#include <stdlib.h>

#include "core/kd_timer.h"
#include "kd_test.h"
#include "kd_util.h"

typedef struct probe {
        kd_timer_t tm;
        int id;
        int *log; /* borrowed: ids in run order */
        size_t *len;
        kd_timers_t *ts;
        int rearm; /* re-arms itself this many more times */
} probe_t;

static void record(kd_timer_t *tm, void *arg)
{
        probe_t *p = arg;
        (void)tm;
        p->log[(*p->len)++] = p->id;
        if (p->rearm-- > 0)
                CU_ASSERT_EQUAL(kd_timer_arm(p->ts, &p->tm, KD_CLOCK_MONO,
                                             kd_mono_ms() - 1, record, p),
                                0);
}

static void probe_init(probe_t *p, int id, kd_timers_t *ts, int *log,
                       size_t *len)
{
        p->id = id;
        p->log = log;
        p->len = len;
        p->ts = ts;
        p->rearm = 0;
        kd_timer_init(&p->tm, record, p);
}

static void test_runs_due_timers_most_overdue_first(void)
{
        kd_timers_t ts;
        probe_t p[4];
        int log[8];
        size_t len = 0;
        kd_timers_init(&ts);
        for (int i = 0; i < 4; i++)
                probe_init(&p[i], i, &ts, log, &len);
        int64_t wall = kd_now_ms(), mono = kd_mono_ms();
        /* 0: wall, 30 ms overdue; 1: mono, 10 ms overdue; 2: mono, 40 ms
         * overdue; 3: wall, in an hour. */
        CU_ASSERT_EQUAL(kd_timer_arm(&ts, &p[0].tm, KD_CLOCK_WALL, wall - 30,
                                     record, &p[0]),
                        0);
        CU_ASSERT_EQUAL(kd_timer_arm(&ts, &p[1].tm, KD_CLOCK_MONO, mono - 10,
                                     record, &p[1]),
                        0);
        CU_ASSERT_EQUAL(kd_timer_arm(&ts, &p[2].tm, KD_CLOCK_MONO, mono - 40,
                                     record, &p[2]),
                        0);
        CU_ASSERT_EQUAL(kd_timer_arm(&ts, &p[3].tm, KD_CLOCK_WALL,
                                     wall + 3600000, record, &p[3]),
                        0);
        CU_ASSERT_EQUAL(kd_timers_run(&ts, 100), 3);
        CU_ASSERT_EQUAL(len, 3);
        CU_ASSERT_EQUAL(log[0], 2);
        CU_ASSERT_EQUAL(log[1], 0);
        CU_ASSERT_EQUAL(log[2], 1);
        CU_ASSERT_FALSE(kd_timer_armed(&p[0].tm));
        CU_ASSERT_TRUE(kd_timer_armed(&p[3].tm));
        /* The hour-away timer bounds the wait, the cap wins. */
        CU_ASSERT_EQUAL(kd_timers_wait_ms(&ts, 1000), 1000);
        kd_timer_disarm(&ts, &p[3].tm);
        CU_ASSERT_FALSE(kd_timer_armed(&p[3].tm));
        CU_ASSERT_EQUAL(kd_timer_due(&p[3].tm), INT64_MAX);
        kd_timers_clear(&ts);
}

static void test_rearm_moves_and_by_keeps_earlier(void)
{
        kd_timers_t ts;
        probe_t p;
        int log[4];
        size_t len = 0;
        kd_timers_init(&ts);
        probe_init(&p, 7, &ts, log, &len);
        int64_t mono = kd_mono_ms();
        CU_ASSERT_EQUAL(
            kd_timer_arm(&ts, &p.tm, KD_CLOCK_MONO, mono + 500, record, &p), 0);
        /* arm_by keeps an earlier deadline, moves to an earlier one. */
        CU_ASSERT_EQUAL(
            kd_timer_arm_by(&ts, &p.tm, KD_CLOCK_MONO, mono + 900, record, &p),
            0);
        CU_ASSERT_EQUAL(kd_timer_due(&p.tm), mono + 500);
        CU_ASSERT_EQUAL(
            kd_timer_arm_by(&ts, &p.tm, KD_CLOCK_MONO, mono + 100, record, &p),
            0);
        CU_ASSERT_EQUAL(kd_timer_due(&p.tm), mono + 100);
        /* arm moves it either way, also across clocks. */
        CU_ASSERT_EQUAL(kd_timer_arm(&ts, &p.tm, KD_CLOCK_WALL,
                                     kd_now_ms() + 300, record, &p),
                        0);
        int w = kd_timers_wait_ms(&ts, 1000);
        CU_ASSERT(w > 200 && w <= 300);
        CU_ASSERT_EQUAL(kd_timers_run(&ts, 10), 0);
        kd_timers_clear(&ts);
        CU_ASSERT_FALSE(kd_timer_armed(&p.tm));
}

static void test_callback_rearm_runs_in_the_same_call_up_to_limit(void)
{
        kd_timers_t ts;
        probe_t p;
        int log[8];
        size_t len = 0;
        kd_timers_init(&ts);
        probe_init(&p, 1, &ts, log, &len);
        p.rearm = 5;
        CU_ASSERT_EQUAL(
            kd_timer_arm(&ts, &p.tm, KD_CLOCK_MONO, kd_mono_ms(), record, &p),
            0);
        /* The limit leaves the rest for the next turn. */
        CU_ASSERT_EQUAL(kd_timers_run(&ts, 4), 4);
        CU_ASSERT_EQUAL(kd_timers_wait_ms(&ts, 1000), 0);
        CU_ASSERT_EQUAL(kd_timers_run(&ts, 100), 2);
        CU_ASSERT_EQUAL(len, 6);
        CU_ASSERT_FALSE(kd_timer_armed(&p.tm));
        kd_timers_clear(&ts);
}

static void test_manual_clock_reads_what_it_is_told(void)
{
        kd_clocksrc_t c;
        kd_clocksrc_manual(&c, 5000, 1700000000000);
        CU_ASSERT_EQUAL(kd_clocksrc_mono_ms(&c), 5000);
        CU_ASSERT_EQUAL(kd_clocksrc_wall_ms(&c), 1700000000000);
        /* Still, until told: reading twice gives the same. */
        CU_ASSERT_EQUAL(kd_clocksrc_mono_ms(&c), 5000);
        CU_ASSERT_EQUAL(kd_clocksrc_advance(&c, 250), 0);
        CU_ASSERT_EQUAL(kd_clocksrc_mono_ms(&c), 5250);
        CU_ASSERT_EQUAL(kd_clocksrc_wall_ms(&c), 1700000000250);
        CU_ASSERT_EQUAL(kd_clocksrc_advance(&c, 0), 0);
        CU_ASSERT_EQUAL(kd_clocksrc_mono_ms(&c), 5250);
        /* Monotonic time never goes back: a negative advance is refused,
         * a wall step either way leaves it where it is. */
        CU_ASSERT_EQUAL(kd_clocksrc_advance(&c, -1), -1);
        CU_ASSERT_EQUAL(kd_clocksrc_mono_ms(&c), 5250);
        CU_ASSERT_EQUAL(kd_clocksrc_wall_ms(&c), 1700000000250);
        CU_ASSERT_EQUAL(kd_clocksrc_set_wall(&c, 1600000000000), 0);
        CU_ASSERT_EQUAL(kd_clocksrc_wall_ms(&c), 1600000000000);
        CU_ASSERT_EQUAL(kd_clocksrc_mono_ms(&c), 5250);
        CU_ASSERT_EQUAL(kd_clocksrc_set_wall(&c, 1800000000000), 0);
        CU_ASSERT_EQUAL(kd_clocksrc_mono_ms(&c), 5250);
        CU_ASSERT_EQUAL(kd_clocksrc_advance(&c, 1), 0);
        CU_ASSERT_EQUAL(kd_clocksrc_wall_ms(&c), 1800000000001);
        CU_ASSERT_EQUAL(kd_clocksrc_mono_ms(&c), 5251);
}

static void test_real_clock_is_the_hosts_and_not_driven(void)
{
        kd_clocksrc_t c;
        kd_timers_t ts;
        kd_timers_init(&ts); /* the default: the host's clocks */
        kd_clocksrc_real(&c);
        int64_t m0 = kd_mono_ms(), w0 = kd_now_ms();
        int64_t m = kd_clocksrc_mono_ms(&ts.clock), w = kd_clocksrc_wall_ms(&c);
        int64_t m1 = kd_mono_ms(), w1 = kd_now_ms();
        CU_ASSERT(m0 <= m && m <= m1);
        CU_ASSERT(w0 <= w && w <= w1);
        CU_ASSERT_EQUAL(kd_clocksrc_advance(&c, 10), -1);
        CU_ASSERT_EQUAL(kd_clocksrc_set_wall(&c, 0), -1);
        /* The process's test offset (KDELAY_TEST_CLOCK_OFFSET_MS) moves
         * the real clock's wall time, not its monotonic time. */
        kd_clock_offset_set(3600000);
        w = kd_clocksrc_wall_ms(&c);
        kd_clock_offset_set(0);
        CU_ASSERT(w >= w0 + 3600000);
        CU_ASSERT(kd_clocksrc_mono_ms(&c) < m0 + 3600000);
        kd_timers_clear(&ts);
}

/* Timers on a manual clock: nothing runs until the clock is advanced to
 * its deadline; wall timers run on the broker's time (wall_ahead_ms). */
static void test_timers_run_in_virtual_time(void)
{
        kd_timers_t ts;
        probe_t p[3];
        int log[8];
        size_t len = 0;
        kd_timers_init(&ts);
        kd_clocksrc_manual(&ts.clock, 1000, 1700000000000);
        ts.wall_ahead_ms = 200; /* this host runs 200 ms ahead */
        CU_ASSERT_EQUAL(kd_timers_now(&ts, KD_CLOCK_MONO), 1000);
        CU_ASSERT_EQUAL(kd_timers_now(&ts, KD_CLOCK_WALL), 1699999999800);
        for (int i = 0; i < 3; i++)
                probe_init(&p[i], i, &ts, log, &len);
        /* 0: mono in 60 s; 1: wall (broker's) in 30 s; 2: mono in 1 ms. */
        CU_ASSERT_EQUAL(
            kd_timer_arm(&ts, &p[0].tm, KD_CLOCK_MONO, 61000, record, &p[0]),
            0);
        CU_ASSERT_EQUAL(kd_timer_arm(&ts, &p[1].tm, KD_CLOCK_WALL,
                                     1700000029800, record, &p[1]),
                        0);
        CU_ASSERT_EQUAL(
            kd_timer_arm(&ts, &p[2].tm, KD_CLOCK_MONO, 1001, record, &p[2]), 0);
        CU_ASSERT_EQUAL(kd_timers_wait_ms(&ts, 100000), 1);
        CU_ASSERT_EQUAL(kd_timers_run(&ts, 10), 0);
        CU_ASSERT_EQUAL(kd_clocksrc_advance(&ts.clock, 1), 0);
        CU_ASSERT_EQUAL(kd_timers_run(&ts, 10), 1);
        CU_ASSERT_EQUAL(log[0], 2);
        /* Next: the wall timer, 29,999 ms on; one ms short, nothing. */
        CU_ASSERT_EQUAL(kd_timers_wait_ms(&ts, 100000), 29999);
        CU_ASSERT_EQUAL(kd_clocksrc_advance(&ts.clock, 29998), 0);
        CU_ASSERT_EQUAL(kd_timers_wait_ms(&ts, 100000), 1);
        CU_ASSERT_EQUAL(kd_timers_run(&ts, 10), 0);
        CU_ASSERT_EQUAL(kd_clocksrc_advance(&ts.clock, 1), 0);
        CU_ASSERT_EQUAL(kd_timers_run(&ts, 10), 1);
        CU_ASSERT_EQUAL(log[1], 1);
        /* A wall step back does not delay a monotonic timer; a wall step
         * forward brings a wall timer due at once. */
        CU_ASSERT_EQUAL(kd_clocksrc_set_wall(&ts.clock, 1), 0);
        CU_ASSERT_EQUAL(kd_timers_wait_ms(&ts, 100000), 30000);
        CU_ASSERT_EQUAL(
            kd_timer_arm(&ts, &p[1].tm, KD_CLOCK_WALL, 1000, record, &p[1]), 0);
        CU_ASSERT_EQUAL(kd_timers_run(&ts, 10), 0);
        CU_ASSERT_EQUAL(kd_clocksrc_set_wall(&ts.clock, 1200), 0);
        CU_ASSERT_EQUAL(kd_timers_run(&ts, 10), 1);
        CU_ASSERT_EQUAL(log[2], 1);
        /* Both overdue after one big advance: the more overdue first. */
        CU_ASSERT_EQUAL(
            kd_timer_arm(&ts, &p[1].tm, KD_CLOCK_WALL, 2000, record, &p[1]), 0);
        CU_ASSERT_EQUAL(kd_clocksrc_advance(&ts.clock, 40000), 0);
        CU_ASSERT_EQUAL(kd_timers_run(&ts, 10), 2);
        CU_ASSERT_EQUAL(len, 5);
        CU_ASSERT_EQUAL(log[3], 1); /* 39,000 ms overdue */
        CU_ASSERT_EQUAL(log[4], 0); /* 10,000 ms overdue */
        CU_ASSERT_EQUAL(kd_timers_wait_ms(&ts, 100000), 100000);
        kd_timers_clear(&ts);
}

int main(void)
{
        static const kd_test_case_t cases[] = {
            KD_TEST(test_runs_due_timers_most_overdue_first),
            KD_TEST(test_rearm_moves_and_by_keeps_earlier),
            KD_TEST(test_callback_rearm_runs_in_the_same_call_up_to_limit),
            KD_TEST(test_manual_clock_reads_what_it_is_told),
            KD_TEST(test_real_clock_is_the_hosts_and_not_driven),
            KD_TEST(test_timers_run_in_virtual_time),
            KD_TEST_END};
        return kd_test_run("timer", cases, NULL, NULL);
}
