/* SPDX-License-Identifier: Apache-2.0 */
/* kdelayctl dead replay's ids (src/ctl/replay_id.c): fixed by the dead
 * letter's place, a replay's own suffix replaced rather than nested. */
#include <stdio.h>
#include <string.h>

#include <kdelay/kdelay.h>

#include "kd_test.h"
#include "replay_id.h"

static void test_suffix_found(void)
{
        CU_ASSERT_EQUAL(kd_replay_stem_len("order-7"), 7);
        CU_ASSERT_EQUAL(kd_replay_stem_len("order-7~replay-5-2"), 7);
        CU_ASSERT_EQUAL(kd_replay_stem_len("a~replay-12-3456"), 1);
        /* Only the last suffix, and only a whole one. */
        CU_ASSERT_EQUAL(kd_replay_stem_len("a~replay-5-2~replay-3-8"), 12);
        CU_ASSERT_EQUAL(kd_replay_stem_len("a~replay-5-"), 11);
        CU_ASSERT_EQUAL(kd_replay_stem_len("a~replay--2"), 11);
        CU_ASSERT_EQUAL(kd_replay_stem_len("a~replay-x-2"), 12);
        CU_ASSERT_EQUAL(kd_replay_stem_len("a-replay-5-2"), 12);
        CU_ASSERT_EQUAL(kd_replay_stem_len("5-2"), 3);
        CU_ASSERT_EQUAL(kd_replay_stem_len(""), 0);
        CU_ASSERT_EQUAL(kd_replay_stem_len("~replay-5-2"), 0);
}

static void test_replay_of_replay_does_not_nest(void)
{
        char a[KDELAY_ID_MAX + 32], b[KDELAY_ID_MAX + 32];
        kd_replay_id("order-7", 5, 2, a, sizeof(a));
        CU_ASSERT_STRING_EQUAL(a, "order-7~replay-5-2");
        /* That copy dead-lettered at 3/8, replayed: the suffix replaced. */
        kd_replay_id(a, 3, 8, b, sizeof(b));
        CU_ASSERT_STRING_EQUAL(b, "order-7~replay-3-8");
        /* Idempotent: the same dead letter, the same id. */
        kd_replay_id("order-7~replay-5-2", 3, 8, a, sizeof(a));
        CU_ASSERT_STRING_EQUAL(a, b);
        /* Another dead letter, another id. */
        kd_replay_id("order-7~replay-5-2", 3, 9, a, sizeof(a));
        CU_ASSERT_STRING_EQUAL(a, "order-7~replay-3-9");
        /* The id earlier releases gave, looked up too. */
        kd_replay_id_nested("order-7~replay-5-2", 3, 8, a, sizeof(a));
        CU_ASSERT_STRING_EQUAL(a, "order-7~replay-5-2~replay-3-8");
        kd_replay_id_nested("order-7", 5, 2, a, sizeof(a));
        CU_ASSERT_STRING_EQUAL(a, "order-7~replay-5-2");
}

static void test_long_ids_hashed_once(void)
{
        char id[KDELAY_ID_MAX + 1], a[KDELAY_ID_MAX + 32],
            b[KDELAY_ID_MAX + 32], c[KDELAY_ID_MAX + 32];
        memset(id, 'x', KDELAY_ID_MAX);
        id[KDELAY_ID_MAX] = '\0';
        kd_replay_id(id, 1, 2, a, sizeof(a));
        CU_ASSERT_EQUAL(strncmp(a, "replay-", 7), 0);
        CU_ASSERT_PTR_NOT_NULL(strstr(a, "~replay-1-2"));
        CU_ASSERT(strlen(a) <= KDELAY_ID_MAX);
        /* Its replay keeps the hash and replaces the place. */
        kd_replay_id(a, 3, 4, b, sizeof(b));
        CU_ASSERT_EQUAL(strncmp(a, b, strlen("replay-") + 16), 0);
        CU_ASSERT_STRING_EQUAL(b + strlen("replay-") + 16, "~replay-3-4");
        /* A stem that fits with its suffix but not with a longer one. */
        memset(id, 'y', KDELAY_ID_MAX);
        snprintf(id + KDELAY_ID_MAX - 11, 12, "~replay-1-2");
        kd_replay_id(id, 10, 20, c, sizeof(c));
        CU_ASSERT(strlen(c) <= KDELAY_ID_MAX);
        CU_ASSERT_PTR_NOT_NULL(strstr(c, "~replay-10-20"));
        CU_ASSERT_PTR_NULL(strstr(c, "~replay-1-2"));
}

int main(void)
{
        static const kd_test_case_t cases[] = {
            KD_TEST(test_suffix_found),
            KD_TEST(test_replay_of_replay_does_not_nest),
            KD_TEST(test_long_ids_hashed_once), KD_TEST_END};
        return kd_test_run("replay_id", cases, NULL, NULL);
}
