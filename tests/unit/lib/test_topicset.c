/* SPDX-License-Identifier: Apache-2.0 */
/* The client's set of topics found to exist (kd_topicset.h): lookups,
 * duplicates, and the bound (a full set forgets everything first). */
#include <stdio.h>
#include <string.h>

#include "kd_test.h"
#include "kd_topicset.h"

static void test_has_and_add(void)
{
        kd_topicset_t s = {0};
        CU_ASSERT_FALSE(kd_topicset_has(&s, "orders"));
        CU_ASSERT_EQUAL(kd_topicset_add(&s, "orders"), 0);
        CU_ASSERT_EQUAL(kd_topicset_add(&s, "orders"), 0);
        CU_ASSERT_EQUAL(s.cnt, 1);
        CU_ASSERT_TRUE(kd_topicset_has(&s, "orders"));
        CU_ASSERT_FALSE(kd_topicset_has(&s, "order"));
        CU_ASSERT_FALSE(kd_topicset_has(&s, ""));
        kd_topicset_clear(&s);
        CU_ASSERT_FALSE(kd_topicset_has(&s, "orders"));
        kd_topicset_clear(&s);
}

static void test_bound(void)
{
        kd_topicset_t s = {0};
        char name[32];
        for (int i = 0; i < KD_TOPICSET_MAX; i++) {
                snprintf(name, sizeof(name), "t.%d", i);
                CU_ASSERT_EQUAL_FATAL(kd_topicset_add(&s, name), 0);
        }
        CU_ASSERT_EQUAL(s.cnt, KD_TOPICSET_MAX);
        for (int i = 0; i < KD_TOPICSET_MAX; i++) {
                snprintf(name, sizeof(name), "t.%d", i);
                CU_ASSERT_TRUE(kd_topicset_has(&s, name));
        }
        CU_ASSERT_EQUAL(kd_topicset_add(&s, "one.more"), 0);
        CU_ASSERT_EQUAL(s.cnt, 1);
        CU_ASSERT_TRUE(kd_topicset_has(&s, "one.more"));
        CU_ASSERT_FALSE(kd_topicset_has(&s, "t.0"));
        kd_topicset_clear(&s);
}

int main(void)
{
        static const kd_test_case_t cases[] = {
            KD_TEST(test_has_and_add), KD_TEST(test_bound), KD_TEST_END};
        return kd_test_run("topicset", cases, NULL, NULL);
}
