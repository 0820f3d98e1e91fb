/* SPDX-License-Identifier: Apache-2.0 */
/* The producer's topic handles by name (kd_producer.h; the room's
 * private state read through kd_producer_state.h): one handle per
 * name while it keeps its slot, the right name always, a bounded table
 * however many names come, nothing for a name librdkafka refuses or
 * without a producer, and none left after a release. A forwarder made but
 * never run: no broker is contacted. */
#include <stdio.h>
#include <string.h>

#include "fwd_offline.h"
#include "kd_test.h"
#include "producer/kd_producer_state.h"
#include "top/kd_fwd.h"

static kd_fwd_t *fwd;

static int setup(void)
{
        return kd_test_fwd_offline(&fwd, "handles");
}

static int teardown(void)
{
        kd_fwd_destroy(fwd);
        return 0;
}

static size_t slots_used(void)
{
        size_t n = 0;
        for (size_t i = 0; i < KD_TOPHANDLE_SLOTS; i++)
                n += fwd->producer->tophandles[i] != NULL;
        return n;
}

static void test_one_handle_per_name(void)
{
        CU_ASSERT_PTR_NOT_NULL_FATAL(kd_producer_main(fwd));
        rd_kafka_topic_t *a = kd_producer_topic(fwd, "orders.fired");
        CU_ASSERT_PTR_NOT_NULL_FATAL(a);
        CU_ASSERT_STRING_EQUAL(rd_kafka_topic_name(a), "orders.fired");
        CU_ASSERT_PTR_EQUAL(kd_producer_topic(fwd, "orders.fired"), a);
        rd_kafka_topic_t *b = kd_producer_topic(fwd, "payments.fired");
        CU_ASSERT_PTR_NOT_NULL_FATAL(b);
        CU_ASSERT_STRING_EQUAL(rd_kafka_topic_name(b), "payments.fired");
        kd_producer_topics_release(fwd->producer);
        CU_ASSERT_EQUAL(slots_used(), 0);
}

static void test_bounded_however_many_names(void)
{
        char name[64];
        for (int i = 0; i < 3 * KD_TOPHANDLE_SLOTS; i++) {
                snprintf(name, sizeof(name), "flood.%d", i);
                rd_kafka_topic_t *t = kd_producer_topic(fwd, name);
                CU_ASSERT_PTR_NOT_NULL_FATAL(t);
                CU_ASSERT_STRING_EQUAL(rd_kafka_topic_name(t), name);
        }
        CU_ASSERT(slots_used() <= KD_TOPHANDLE_SLOTS);
        /* A name pushed out of its slot gets a handle again. */
        rd_kafka_topic_t *t = kd_producer_topic(fwd, "flood.0");
        CU_ASSERT_PTR_NOT_NULL_FATAL(t);
        CU_ASSERT_STRING_EQUAL(rd_kafka_topic_name(t), "flood.0");
        kd_producer_topics_release(fwd->producer);
        CU_ASSERT_EQUAL(slots_used(), 0);
}

static void test_none_for_a_refused_name_or_no_producer(void)
{
        char longname[600];
        memset(longname, 'x', sizeof(longname) - 1);
        longname[sizeof(longname) - 1] = '\0';
        CU_ASSERT_PTR_NULL(kd_producer_topic(fwd, longname));
        CU_ASSERT_EQUAL(slots_used(), 0);
        rd_kafka_t *producer = fwd->producer->main;
        fwd->producer->main = NULL;
        CU_ASSERT_PTR_NULL(kd_producer_topic(fwd, "orders.fired"));
        fwd->producer->main = producer;
}

int main(void)
{
        static const kd_test_case_t cases[] = {
            KD_TEST(test_one_handle_per_name),
            KD_TEST(test_bounded_however_many_names),
            KD_TEST(test_none_for_a_refused_name_or_no_producer), KD_TEST_END};
        return kd_test_run("tophandles", cases, setup, teardown);
}
