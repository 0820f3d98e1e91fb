/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for exactly_once's committed-offsets fetch
 * (kd_eos_offsets_fetch, kd_eos_offsets.h) through its consumer seam: a
 * stop asked while the fetch waits is seen within one slice, never after
 * a whole attempt's timeout (issue 43: a SIGTERM waited out a 10 s fetch
 * while Kafka was away). No broker, no clock: a fake committed() that
 * answers from a script. */
#include <stdio.h>

#include "kd_test.h"
#include "modes/kd_eos_offsets.h"

typedef struct fake {
        int calls;       /* committed() calls so far */
        int max_timeout; /* the largest timeout_ms passed */
        int stop_after;  /* the stop is asked during this call (0 never) */
        int ok_at;       /* this call succeeds (0 never) */
        rd_kafka_resp_err_t err; /* what the other calls answer */
        int stop;                /* the forwarder's stop flag */
} fake_t;

static rd_kafka_resp_err_t
fake_committed(void *arg, rd_kafka_topic_partition_list_t *p, int timeout_ms)
{
        fake_t *f = arg;
        (void)p;
        f->calls++;
        if (timeout_ms > f->max_timeout)
                f->max_timeout = timeout_ms;
        if (f->calls == f->stop_after)
                f->stop = 1;
        return f->calls == f->ok_at ? RD_KAFKA_RESP_ERR_NO_ERROR : f->err;
}

static int fake_stopping(void *arg)
{
        return ((fake_t *)arg)->stop;
}

static rd_kafka_topic_partition_list_t *one_part(void)
{
        rd_kafka_topic_partition_list_t *l =
            rd_kafka_topic_partition_list_new(1);
        rd_kafka_topic_partition_list_add(l, "t", 0);
        return l;
}

static int fetch(fake_t *f)
{
        kdelay_conf_t *conf = kdelay_conf_new();
        rd_kafka_topic_partition_list_t *l = one_part();
        const kd_eos_consumer_t c = {fake_committed, fake_stopping, f};
        int r = kd_eos_offsets_fetch(&c, conf, l);
        rd_kafka_topic_partition_list_destroy(l);
        kdelay_conf_destroy(conf);
        return r;
}

/* Kafka away: every call times out. A stop asked during the first call
 * ends the fetch before the next one; no call waits longer than a
 * slice. */
static void test_stop_during_timeout(void)
{
        fake_t f = {.stop_after = 1, .err = RD_KAFKA_RESP_ERR__TIMED_OUT};
        CU_ASSERT_EQUAL(fetch(&f), -1);
        CU_ASSERT_EQUAL(f.calls, 1);
        CU_ASSERT(f.max_timeout <= KD_EOS_FETCH_SLICE_MS);
        CU_ASSERT(f.max_timeout > 0);
}

/* The same a few slices in. */
static void test_stop_later_slice(void)
{
        fake_t f = {.stop_after = 3, .err = RD_KAFKA_RESP_ERR__TIMED_OUT};
        CU_ASSERT_EQUAL(fetch(&f), -1);
        CU_ASSERT_EQUAL(f.calls, 3);
}

/* Timed-out slices continue the same attempt: an answer in a later slice
 * of the first attempt is a success. */
static void test_answer_after_slices(void)
{
        fake_t f = {.ok_at = 4, .err = RD_KAFKA_RESP_ERR__TIMED_OUT};
        CU_ASSERT_EQUAL(fetch(&f), 0);
        CU_ASSERT_EQUAL(f.calls, 4);
}

/* A stop already asked: no fetch at all. */
static void test_stopped_before(void)
{
        fake_t f = {.stop = 1, .ok_at = 1};
        CU_ASSERT_EQUAL(fetch(&f), -1);
        CU_ASSERT_EQUAL(f.calls, 0);
}

/* An error that comes back at once (not a timeout) is one failed attempt,
 * then the fetch tries again and succeeds. */
static void test_error_then_ok(void)
{
        fake_t f = {.ok_at = 2, .err = RD_KAFKA_RESP_ERR_NOT_COORDINATOR};
        CU_ASSERT_EQUAL(fetch(&f), 0);
        CU_ASSERT_EQUAL(f.calls, 2);
}

int main(void)
{
        static const kd_test_case_t cases[] = {
            KD_TEST(test_stop_during_timeout), KD_TEST(test_stop_later_slice),
            KD_TEST(test_answer_after_slices), KD_TEST(test_stopped_before),
            KD_TEST(test_error_then_ok),       KD_TEST_END};
        return kd_test_run("eos_fetch", cases, NULL, NULL);
}
