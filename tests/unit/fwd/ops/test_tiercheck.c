/* SPDX-License-Identifier: Apache-2.0 */
/* Which tier topics of the ladder a metadata answer lacks
 * (kd_tiercheck_missing): none, some, all, and the pattern's matches. */
#include <string.h>

#include <kdelay/kdelay.h>

#include "kd_conf.h"
#include "kd_test.h"
#include "ops/kd_tiercheck.h"

static struct rd_kafka_metadata md_of(struct rd_kafka_metadata_topic *t, int n)
{
        struct rd_kafka_metadata md;
        memset(&md, 0, sizeof(md));
        md.topics = t;
        md.topic_cnt = n;
        return md;
}

static void test_missing_tiers_named(void)
{
        kdelay_conf_t *conf = kdelay_conf_new();
        CU_ASSERT_PTR_NOT_NULL_FATAL(conf);
        CU_ASSERT_EQUAL_FATAL(
            kdelay_conf_set(conf, "tiers", "5s,1m,1h", NULL, 0), 0);
        CU_ASSERT_EQUAL_FATAL(
            kdelay_conf_set(conf, "topic_prefix", "p", NULL, 0), 0);
        char missing[64];
        int matching = -1;
        struct rd_kafka_metadata_topic all[] = {
            {.topic = "p.tier.5s"},
            {.topic = "p.tier.1m"},
            {.topic = "p.tier.1h"},
            {.topic = "p.tier.2d"}, /* off the ladder: read, not required */
            {.topic = "other"}};
        struct rd_kafka_metadata md = md_of(all, 5);
        CU_ASSERT_EQUAL(kd_tiercheck_missing(conf, &md, missing,
                                             sizeof(missing), &matching),
                        0);
        CU_ASSERT_STRING_EQUAL(missing, "");
        CU_ASSERT_EQUAL(matching, 4);

        /* 1m listed with an error that says it does not exist. */
        all[1].err = RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART;
        md = md_of(all, 5);
        CU_ASSERT_EQUAL(kd_tiercheck_missing(conf, &md, missing,
                                             sizeof(missing), &matching),
                        1);
        CU_ASSERT_STRING_EQUAL(missing, "p.tier.1m");

        /* None of the prefix: every tier named, no pattern match. */
        md = md_of(all + 4, 1);
        CU_ASSERT_EQUAL(kd_tiercheck_missing(conf, &md, missing,
                                             sizeof(missing), &matching),
                        3);
        CU_ASSERT_STRING_EQUAL(missing, "p.tier.5s,p.tier.1m,p.tier.1h");
        CU_ASSERT_EQUAL(matching, 0);

        /* Cut short, and says so. */
        char small[12];
        CU_ASSERT_EQUAL(
            kd_tiercheck_missing(conf, &md, small, sizeof(small), &matching),
            3);
        CU_ASSERT_EQUAL(strlen(small), sizeof(small) - 1);
        CU_ASSERT_STRING_EQUAL(small + sizeof(small) - 4, "...");
        kdelay_conf_destroy(conf);
}

int main(void)
{
        static const kd_test_case_t cases[] = {
            KD_TEST(test_missing_tiers_named), KD_TEST_END};
        return kd_test_run("tiercheck", cases, NULL, NULL);
}
