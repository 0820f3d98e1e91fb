/* SPDX-License-Identifier: Apache-2.0 */
/* The settle stage's FIRED marks at a stop (settle.c, kd_settle_drain), in
 * virtual time against the in-memory fate store: a forwarder made but
 * never run (kd_test_fwd_vt).
 *
 * Issue 44: in a catch-up drain the marks wait behind the claims (two
 * mark statements out at a time, one store connection), so a stop finds
 * tens of thousands of them queued; the stop sent one flush (two batches)
 * and waited for the store to be idle, and the rest were dropped without
 * a word: 88,600 of 200,000 delivered tasks stayed FIRING (bench_limit
 * --drain-tasks 200000: updates 0.557 per fire). Now every batch goes. */
#include <stdio.h>
#include <string.h>

#include "fwd_offline.h"
#include "kd_fate_mem.h"
#include "kd_fwd.h"
#include "kd_settle.h"
#include "kd_test.h"

#define MONO0 1000000
#define WALL0 1700000000000
/* More than two batches of claim_batch (500). */
#define N 1300

static kd_fwd_t *fwd;

static void id_of(int i, char *id, size_t size)
{
        snprintf(id, size, "t%d", i);
}

/* N rows FIRING, their tasks delivered: their marks queued. */
static void delivered(void)
{
        for (int i = 0; i < N; i++) {
                char id[16];
                id_of(i, id, sizeof(id));
                kd_fate_mem_row_t row = {.fate = KDELAY_FATE_FIRING,
                                         .fire_at_ms = WALL0};
                CU_ASSERT_EQUAL_FATAL(
                    kd_fate_mem_put(fwd->store.fate, id, strlen(id), &row),
                    KDELAY_OK);
                kd_settle_fired(fwd, id, 0, 0, 0);
        }
}

static int fired_rows(void)
{
        int n = 0;
        for (int i = 0; i < N; i++) {
                char id[16];
                kd_fate_mem_row_t row;
                id_of(i, id, sizeof(id));
                if (kd_fate_mem_get(fwd->store.fate, id, strlen(id), &row) ==
                        KDELAY_OK &&
                    row.fate == KDELAY_FATE_FIRED)
                        n++;
        }
        return n;
}

static void test_a_stop_writes_every_queued_mark(void)
{
        CU_ASSERT_EQUAL_FATAL(
            kd_test_fwd_vt(&fwd, "settle", MONO0, WALL0, NULL), 0);
        delivered();
        CU_ASSERT_EQUAL(kd_settle_queued(fwd), N);
        CU_ASSERT_EQUAL(kd_settle_drain(fwd, MONO0 + 60000), 0);
        int fired = fired_rows();
        printf("  %d of %d delivered tasks FIRED after the stop's drain\n",
               fired, N);
        CU_ASSERT_EQUAL(fired, N);
        CU_ASSERT_EQUAL(kd_settle_queued(fwd), 0);
        CU_ASSERT_EQUAL(fwd->store.inflight, 0);
        kd_fwd_destroy(fwd);
        fwd = NULL;
}

/* A mark that fails at the stop (or just before it): the store backs
 * off, and the drain waits the backoff out (on the forwarder's clock,
 * here virtual) and writes every mark all the same. */
static void test_a_failed_mark_is_written_after_the_backoff(void)
{
        CU_ASSERT_EQUAL_FATAL(
            kd_test_fwd_vt(&fwd, "settle", MONO0, WALL0, NULL), 0);
        delivered();
        CU_ASSERT_EQUAL(
            kd_fate_mem_fail_next(fwd->store.fate, 1, KDELAY_ERR_MYSQL),
            KDELAY_OK);
        CU_ASSERT_EQUAL(kd_settle_drain(fwd, MONO0 + 60000), 0);
        CU_ASSERT_EQUAL(fired_rows(), N);
        CU_ASSERT_EQUAL(kd_settle_queued(fwd), 0);
        CU_ASSERT(kd_test_since(fwd, MONO0) >= 100); /* the backoff */
        kd_fwd_destroy(fwd);
        fwd = NULL;
}

/* A store that keeps failing, or whose retry comes after the deadline:
 * the drain ends (-1) with what is left queued, counted by
 * kd_settle_queued for the stop's log line, and never runs past the
 * deadline. */
static void test_a_store_that_keeps_failing_ends_the_drain(void)
{
        CU_ASSERT_EQUAL_FATAL(
            kd_test_fwd_vt(&fwd, "settle", MONO0, WALL0, NULL), 0);
        delivered();
        CU_ASSERT_EQUAL(
            kd_fate_mem_fail_next(fwd->store.fate, 1000, KDELAY_ERR_MYSQL),
            KDELAY_OK);
        CU_ASSERT_EQUAL(kd_settle_drain(fwd, MONO0 + 60000), -1);
        CU_ASSERT_EQUAL(kd_settle_queued(fwd), N);
        CU_ASSERT_EQUAL(fired_rows(), 0);
        CU_ASSERT(kd_test_since(fwd, MONO0) < 60000);
        CU_ASSERT_EQUAL(fwd->store.inflight, 0);
        /* Its retry after the deadline: over at once. */
        int64_t now = kd_fwd_mono_ms(fwd);
        CU_ASSERT_EQUAL(kd_settle_drain(fwd, now + 50), -1);
        CU_ASSERT_EQUAL(kd_fwd_mono_ms(fwd), now);
        CU_ASSERT_EQUAL(
            kd_fate_mem_fail_next(fwd->store.fate, 0, KDELAY_ERR_MYSQL),
            KDELAY_OK);
        kd_fwd_destroy(fwd);
        fwd = NULL;
}

int main(void)
{
        static const kd_test_case_t cases[] = {
            KD_TEST(test_a_stop_writes_every_queued_mark),
            KD_TEST(test_a_failed_mark_is_written_after_the_backoff),
            KD_TEST(test_a_store_that_keeps_failing_ends_the_drain),
            KD_TEST_END};
        return kd_test_run("settle_vt", cases, NULL, NULL);
}
