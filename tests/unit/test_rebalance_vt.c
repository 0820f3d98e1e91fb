/* SPDX-License-Identifier: Apache-2.0 */
/* The rebalance stage asks librdkafka for the group's rebalance protocol
 * once (rebalance.c, cooperative()), never again: asked in the revoke
 * that rd_kafka_consumer_close serves at a stop, rd_kafka_rebalance_
 * protocol can block for ever (librdkafka#4041; seen in a clean-clone CI
 * run: a forwarder's SIGTERM hung after event=partitions_revoked, its
 * main thread in rd_kafka_rebalance_protocol under
 * rd_kafka_consumer_close, until the stack went down).
 *
 * A forwarder made but never run (kd_test_fwd_vt), its mode started; the
 * test links its own rd_kafka_rebalance_protocol, rd_kafka_assign and
 * rd_kafka_commit (the consumer never joins a group), which take the
 * place of librdkafka's for the forwarder's calls and count them. */
#include <string.h>

#include "fwd_offline.h"
#include "kd_fwd.h"
#include "kd_mode.h"
#include "kd_rebalance.h"
#include "kd_test.h"

#define MONO0 1000000
#define WALL0 1700000000000

static struct {
        int protocol, assign, commit;
} calls;

const char *rd_kafka_rebalance_protocol(rd_kafka_t *rk)
{
        (void)rk;
        calls.protocol++;
        return "EAGER";
}

rd_kafka_resp_err_t rd_kafka_assign(rd_kafka_t *rk,
                                    const rd_kafka_topic_partition_list_t *l)
{
        (void)rk;
        (void)l;
        calls.assign++;
        return RD_KAFKA_RESP_ERR_NO_ERROR;
}

rd_kafka_resp_err_t rd_kafka_commit(rd_kafka_t *rk,
                                    const rd_kafka_topic_partition_list_t *l,
                                    int async)
{
        (void)rk;
        (void)l;
        (void)async;
        calls.commit++;
        return RD_KAFKA_RESP_ERR_NO_ERROR;
}

static void test_a_stops_revoke_does_not_ask_the_protocol(void)
{
        kd_fwd_t *f = NULL;
        memset(&calls, 0, sizeof(calls));
        CU_ASSERT_EQUAL_FATAL(kd_test_fwd_vt(&f, "rebal", MONO0, WALL0, NULL),
                              0);
        char why[256];
        CU_ASSERT_EQUAL_FATAL(f->mode->start(&f->mode_ctx, why, sizeof(why)),
                              KDELAY_OK);
        rd_kafka_topic_partition_list_t *l =
            rd_kafka_topic_partition_list_new(2);
        CU_ASSERT_PTR_NOT_NULL_FATAL(l);
        rd_kafka_topic_partition_list_add(l, "kdelay.tier.1m", 0);
        rd_kafka_topic_partition_list_add(l, "kdelay.tier.1m", 1);
        kd_rebalance_assign(f, l);
        CU_ASSERT_EQUAL(calls.assign, 1);
        int asked = calls.protocol;
        CU_ASSERT(asked >= 1);
        /* A rebalance while running: asked no more. */
        kd_rebalance_revoke(f, l);
        kd_rebalance_assign(f, l);
        CU_ASSERT_EQUAL(calls.assign, 3);
        /* The stop: the close's revoke (shutdown_clean sets the deadline
         * first) never asks. */
        f->shutdown_deadline = kd_fwd_mono_ms(f) + 5000;
        kd_rebalance_revoke(f, l);
        CU_ASSERT_EQUAL(calls.assign, 4);
        CU_ASSERT_EQUAL(calls.protocol - asked,
                        1); /* the second assignment's group_closed check */
        rd_kafka_topic_partition_list_destroy(l);
        kd_fwd_destroy(f);
}

int main(void)
{
        static const kd_test_case_t cases[] = {
            KD_TEST(test_a_stops_revoke_does_not_ask_the_protocol),
            KD_TEST_END};
        return kd_test_run("rebalance_vt", cases, NULL, NULL);
}
