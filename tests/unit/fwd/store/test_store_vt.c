/* SPDX-License-Identifier: Apache-2.0 */
/* The fate store's availability as logged, in virtual time (store.c): a
 * forwarder made but never run (kd_test_fwd_vt_log), on a manual clock
 * stepped a millisecond at a time, its store hung by never serving the
 * fate worker's answers (as test_outage_after), then answering when the
 * test serves them, against the in-memory fate store. A hang is logged
 * once, when a request has waited 5 s unanswered (what=no_answer, since_ms
 * from when it went out), however long it lasts (a minute here), and its
 * end once, with how long the store was down; mysql_up is 0 in between.
 *
 * Moved here from test_fwd_mock's hung_store_is_logged_down_once_and_up_
 * once, a 10 s timeline per delivery mode (issue 37); test_mysql_hang
 * checks the same two lines against a real frozen MariaDB. */
#include <stdio.h>
#include <string.h>

#include "core/kd_metrics.h"
#include "core/kd_timer.h"
#include "fwd_offline.h"
#include "kd_test.h"
#include "store/kd_store_state.h"
#include "top/kd_fwd.h"

#define MONO0 1000000
#define WALL0 1700000000000
/* store.c: a ping once nothing answered for 5 s; a request unanswered
 * 5 s more means the store is down, since it went out. */
#define PING_MS  5000
#define STALL_MS 5000
#define HANG_MS  60000

static kd_fwd_t *fwd;

/* What the forwarder logged: lines of the two events, and when (test
 * ms) the first of each came. */
static struct {
        int down, up;
        int64_t down_at, up_at;
        char down_line[512], up_line[512];
} seen;

static int64_t at(void)
{
        return kd_test_since(fwd, MONO0);
}

static void logged(kdelay_log_level_t level, const char *line, void *opaque)
{
        (void)level;
        (void)opaque;
        if (strstr(line, "event=mysql_unavailable ")) {
                if (!seen.down++) {
                        seen.down_at = at();
                        snprintf(seen.down_line, sizeof(seen.down_line), "%s",
                                 line);
                }
        } else if (strstr(line, "event=mysql_available ")) {
                if (!seen.up++) {
                        seen.up_at = at();
                        snprintf(seen.up_line, sizeof(seen.up_line), "%s",
                                 line);
                }
        }
}

static void step(int64_t ms)
{
        CU_ASSERT_EQUAL_FATAL(kd_test_step(fwd, ms), 0);
}

static void test_a_hang_is_logged_down_once_and_up_once(void)
{
        memset(&seen, 0, sizeof(seen));
        CU_ASSERT_EQUAL_FATAL(
            kd_test_fwd_vt_log(&fwd, "store", MONO0, WALL0, NULL, logged, NULL),
            0);
        /* The store hangs: nothing it answers is read. */
        step(HANG_MS);
        CU_ASSERT_EQUAL(seen.down, 1);
        CU_ASSERT_EQUAL(seen.up, 0);
        /* The ping went out when nothing had answered for PING_MS, and
         * was found unanswered STALL_MS after (looked at every second). */
        CU_ASSERT_EQUAL(seen.down_at, PING_MS + STALL_MS);
        CU_ASSERT_PTR_NOT_NULL(strstr(seen.down_line, "what=no_answer "));
        CU_ASSERT_PTR_NOT_NULL(strstr(seen.down_line, "since_ms=5000 "));
        CU_ASSERT_PTR_NOT_NULL(strstr(seen.down_line, "requests_out=1 "));
        CU_ASSERT_EQUAL(kd_metric_get(&fwd->metrics, KD_M_MYSQL_UP), 0);
        CU_ASSERT_TRUE(fwd->store->down);

        /* It answers: one line, down since the ping went out. */
        CU_ASSERT_EQUAL_FATAL(kd_test_store_answers(fwd), 0);
        CU_ASSERT_EQUAL(seen.up, 1);
        CU_ASSERT_EQUAL(seen.up_at, HANG_MS);
        CU_ASSERT_PTR_NOT_NULL(strstr(seen.up_line, "down_ms=55000 "));
        CU_ASSERT_EQUAL(kd_metric_get(&fwd->metrics, KD_M_MYSQL_UP), 1);
        CU_ASSERT_FALSE(fwd->store->down);

        /* Answering from now on (pings every 5 s): no more lines. */
        for (int i = 0; i < 20000; i++) {
                step(1);
                CU_ASSERT_EQUAL_FATAL(kd_test_store_answers(fwd), 0);
        }
        CU_ASSERT_EQUAL(seen.down, 1);
        CU_ASSERT_EQUAL(seen.up, 1);
        /* The hang's ping, and one for each 5 s of the 20 s after. */
        CU_ASSERT_EQUAL(kd_metric_get(&fwd->metrics, KD_M_STORE_PINGS), 5);
        kd_fwd_destroy(fwd);
        fwd = NULL;
}

int main(void)
{
        static const kd_test_case_t cases[] = {
            KD_TEST(test_a_hang_is_logged_down_once_and_up_once), KD_TEST_END};
        return kd_test_run("store_vt", cases, NULL, NULL);
}
