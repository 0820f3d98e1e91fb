/* SPDX-License-Identifier: Apache-2.0 */
/* The loop's one turn and the one nested event pump (kd_loop_pump.h):
 * the turn waits for the first of its sources, empties a wake-up pipe,
 * serves every source and says when more waits; the pump ends when its
 * condition holds or at its deadline, says so while it runs, refuses to
 * nest, and a rewind asked for inside it waits for the loop's next turn.
 * A forwarder made but never run: no broker is contacted. */

#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include "fwd_offline.h"
#include "kd_test.h"
#include "kd_util.h"
#include "pipeline/kd_pipeline_state.h"
#include "pipeline/kd_rebalance.h"
#include "producer/kd_loop_pump.h"
#include "top/kd_fwd.h"

static kd_fwd_t *fwd;
static int turns, seen_pumping, nested_rc;

static int setup(void)
{
        return kd_test_fwd_offline(&fwd, "pump");
}

static int teardown(void)
{
        kd_fwd_destroy(fwd);
        return 0;
}

static int done_at_once(kd_fwd_t *f)
{
        seen_pumping = f->pumping;
        return 1;
}

static int never(kd_fwd_t *f)
{
        turns++;
        seen_pumping = f->pumping;
        return 0;
}

static int nests(kd_fwd_t *f)
{
        nested_rc = kd_loop_pump(f, kd_mono_ms() + 1000, done_at_once);
        return 1;
}

static int asks_rewind(kd_fwd_t *f)
{
        kd_rebalance_rewind(f);
        return 1;
}

static void test_ends_when_done_or_at_the_deadline(void)
{
        seen_pumping = -1;
        CU_ASSERT_EQUAL(kd_loop_pump(fwd, kd_mono_ms() + 1000, done_at_once),
                        0);
        CU_ASSERT_EQUAL(seen_pumping, 1); /* the check runs inside it */
        CU_ASSERT_EQUAL(fwd->pumping, 0);
        int64_t t0 = kd_mono_ms();
        turns = 0;
        CU_ASSERT_EQUAL(kd_loop_pump(fwd, t0 + 30, never), -1);
        CU_ASSERT(kd_mono_ms() - t0 >= 30);
        CU_ASSERT(turns >= 2);
        CU_ASSERT_EQUAL(seen_pumping, 1);
        CU_ASSERT_EQUAL(fwd->pumping, 0);
        /* Nothing in flight: a drain of produces is done at once. */
        CU_ASSERT_EQUAL(kd_loop_pump(fwd, t0 + 1000, kd_pump_produces_done), 0);
        CU_ASSERT_EQUAL(kd_loop_pump(fwd, t0 + 1000, kd_pump_store_idle), 0);
}

static void test_refuses_to_nest(void)
{
        nested_rc = 0;
        CU_ASSERT_EQUAL(kd_loop_pump(fwd, kd_mono_ms() + 1000, nests), 0);
        CU_ASSERT_EQUAL(nested_rc, -1); /* logged as event=bug */
        CU_ASSERT_EQUAL(fwd->pumping, 0);
}

/* A source of the turn: a pipe, its served count, what it says. */
static int src_pipe[2] = {-1, -1}, served, says_more;

static int pipe_fd(const kd_fwd_t *f)
{
        (void)f;
        return src_pipe[0];
}

static int count_served(kd_fwd_t *f)
{
        (void)f;
        served++;
        return says_more;
}

static int no_fd(const kd_fwd_t *f)
{
        (void)f;
        return -1;
}

static void test_one_turn_over_a_table_of_sources(void)
{
        static const kd_loop_src_t piped = {pipe_fd, count_served,
                                            KD_LOOP_SRC_PIPE};
        static const kd_loop_src_t fdless = {no_fd, count_served, 0};
        static const kd_loop_src_t waker = {pipe_fd, NULL, 0};
        const kd_loop_src_t *const both[] = {&piped, &fdless};
        CU_ASSERT_EQUAL_FATAL(pipe2(src_pipe, O_NONBLOCK | O_CLOEXEC), 0);
        /* Nothing ready: it waits its time, then serves each source. */
        served = says_more = 0;
        int64_t t0 = kd_mono_ms();
        CU_ASSERT_EQUAL(kd_loop_turn(fwd, both, 2, 30), 0);
        CU_ASSERT(kd_mono_ms() - t0 >= 30);
        CU_ASSERT_EQUAL(served, 2);
        /* A byte in the pipe: at once, the pipe emptied, more said. */
        CU_ASSERT_EQUAL(write(src_pipe[1], "11", 2), 2);
        says_more = 1;
        t0 = kd_mono_ms();
        CU_ASSERT_EQUAL(kd_loop_turn(fwd, both, 2, 5000), 1);
        CU_ASSERT(kd_mono_ms() - t0 < 1000);
        CU_ASSERT_EQUAL(served, 4);
        char c;
        CU_ASSERT_EQUAL(read(src_pipe[0], &c, 1), -1); /* emptied */
        /* A source without serving only wakes the turn: not emptied. */
        const kd_loop_src_t *const wakes[] = {&waker};
        CU_ASSERT_EQUAL(write(src_pipe[1], "1", 1), 1);
        CU_ASSERT_EQUAL(kd_loop_turn(fwd, wakes, 1, 5000), 0);
        CU_ASSERT_EQUAL(read(src_pipe[0], &c, 1), 1);
        /* More sources than a turn waits on: refused. */
        const kd_loop_src_t *many[KD_LOOP_SRC_MAX + 1];
        for (size_t i = 0; i < KD_LOOP_SRC_MAX + 1; i++)
                many[i] = &fdless;
        errno = 0;
        CU_ASSERT_EQUAL(kd_loop_turn(fwd, many, KD_LOOP_SRC_MAX + 1, 0), -1);
        CU_ASSERT_EQUAL(errno, EINVAL);
        close(src_pipe[0]);
        close(src_pipe[1]);
        src_pipe[0] = src_pipe[1] = -1;
}

static void test_a_rewind_inside_waits_for_the_loop(void)
{
        fwd->intake->rewind_due = 0;
        CU_ASSERT_EQUAL(kd_loop_pump(fwd, kd_mono_ms() + 1000, asks_rewind), 0);
        /* Not done inside: the loop does it on its next turn (loop.c). */
        CU_ASSERT_EQUAL(fwd->intake->rewind_due, 1);
        fwd->intake->rewind_due = 0;
}

int main(void)
{
        static const kd_test_case_t cases[] = {
            KD_TEST(test_ends_when_done_or_at_the_deadline),
            KD_TEST(test_refuses_to_nest),
            KD_TEST(test_one_turn_over_a_table_of_sources),
            KD_TEST(test_a_rewind_inside_waits_for_the_loop), KD_TEST_END};
        return kd_test_run("loop_pump", cases, setup, teardown);
}
