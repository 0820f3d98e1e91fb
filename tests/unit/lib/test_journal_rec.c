/* SPDX-License-Identifier: Apache-2.0 */
/* Journal record values (kd_journal_rec.h): what is written is read back;
 * a value a reader cannot trust is refused, whole. */
#include <stdio.h>
#include <string.h>

#include "kd_journal_rec.h"
#include "kd_test.h"

static kd_journal_rec_t sample(void)
{
        kd_journal_rec_t r = {.fire_at_ms = 1764780000000,
                              .fired_at_ms = 1764780000003,
                              .src_partition = 2,
                              .src_offset = 4711};
        strcpy(r.src_topic, "kdelay.tier.1s");
        strcpy(r.forwarder, "fw-1");
        return r;
}

static void test_round_trip(void)
{
        kd_journal_rec_t r = sample(), back;
        char buf[KD_JOURNAL_VALUE_MAX];
        int n = kd_journal_rec_format(&r, buf, sizeof(buf));
        CU_ASSERT_STRING_EQUAL(buf, "v=1 fire_at=1764780000000 "
                                    "fired_at=1764780000003 "
                                    "topic=kdelay.tier.1s partition=2 "
                                    "offset=4711 forwarder=fw-1");
        CU_ASSERT_EQUAL_FATAL(n, (int)strlen(buf));
        CU_ASSERT_EQUAL_FATAL(kd_journal_rec_parse(buf, (size_t)n, &back), 0);
        CU_ASSERT_EQUAL(memcmp(&r, &back, sizeof(r)), 0);
        strcpy(r.dead, "too-large");
        n = kd_journal_rec_format(&r, buf, sizeof(buf));
        CU_ASSERT_PTR_NOT_NULL(strstr(buf, " dead=too-large"));
        CU_ASSERT_EQUAL_FATAL(kd_journal_rec_parse(buf, (size_t)n, &back), 0);
        CU_ASSERT_STRING_EQUAL(back.dead, "too-large");
        /* Fields of a newer writer are ignored, the order is free. */
        const char *v = "forwarder=x fire_at=1 fired_at=2 v=1 later=abc "
                        "topic=t partition=0 offset=3";
        CU_ASSERT_EQUAL(kd_journal_rec_parse(v, strlen(v), &back), 0);
        CU_ASSERT_EQUAL(back.src_offset, 3);
}

/* A record of intent is version 2 (a version 1 reader skips it rather
 * than take it for a delivery) and says intent=1; never a dead letter. */
static void test_intent(void)
{
        kd_journal_rec_t r = sample(), back;
        char buf[KD_JOURNAL_VALUE_MAX];
        r.intent = 1;
        int n = kd_journal_rec_format(&r, buf, sizeof(buf));
        CU_ASSERT_STRING_EQUAL(buf, "v=2 fire_at=1764780000000 "
                                    "fired_at=1764780000003 "
                                    "topic=kdelay.tier.1s partition=2 "
                                    "offset=4711 forwarder=fw-1 intent=1");
        CU_ASSERT_EQUAL_FATAL(kd_journal_rec_parse(buf, (size_t)n, &back), 0);
        CU_ASSERT_EQUAL(memcmp(&r, &back, sizeof(r)), 0);
        CU_ASSERT_EQUAL(back.intent, 1);
        strcpy(r.dead, "too-large");
        CU_ASSERT_EQUAL(kd_journal_rec_format(&r, buf, sizeof(buf)), -1);
        static const char *const bad[] = {
            "v=1 fire_at=1 fired_at=2 topic=t partition=0 offset=3 "
            "forwarder=x intent=1",
            "v=2 fire_at=1 fired_at=2 topic=t partition=0 offset=3 "
            "forwarder=x intent=0",
            "v=2 fire_at=1 fired_at=2 topic=t partition=0 offset=3 "
            "forwarder=x intent=1 dead=too-large",
            "v=3 fire_at=1 fired_at=2 topic=t partition=0 offset=3 "
            "forwarder=x intent=1"};
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
                CU_ASSERT_EQUAL(
                    kd_journal_rec_parse(bad[i], strlen(bad[i]), &back), -1);
}

static void test_refused(void)
{
        kd_journal_rec_t r = sample(), back;
        char buf[KD_JOURNAL_VALUE_MAX];
        strcpy(r.src_topic, "a b");
        CU_ASSERT_EQUAL(kd_journal_rec_format(&r, buf, sizeof(buf)), -1);
        r = sample();
        strcpy(r.forwarder, "x=y");
        CU_ASSERT_EQUAL(kd_journal_rec_format(&r, buf, sizeof(buf)), -1);
        r = sample();
        CU_ASSERT_EQUAL(kd_journal_rec_format(&r, buf, 20), -1);
        static const char *const bad[] = {
            "",
            "v=2 fire_at=1 fired_at=2 topic=t partition=0 offset=3 "
            "forwarder=x",
            "v=1 fired_at=2 topic=t partition=0 offset=3 forwarder=x",
            "v=1 fire_at=1x fired_at=2 topic=t partition=0 offset=3 "
            "forwarder=x",
            "v=1 fire_at=1 fired_at=2 topic=t partition=-1 offset=3 "
            "forwarder=x",
            "v=1 fire_at=1 fired_at=2 topic=t partition=0 offset=3 "
            "forwarder=x dead=Too-Large",
            "v=1 fire_at=1 fired_at=2 topic=t partition=0 offset=3 "
            "forwarder=x junk",
            "v=1 fire_at=1 fired_at=2 topic= partition=0 offset=3 "
            "forwarder=x"};
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
                CU_ASSERT_EQUAL(
                    kd_journal_rec_parse(bad[i], strlen(bad[i]), &back), -1);
}

int main(void)
{
        static const kd_test_case_t cases[] = {
            KD_TEST(test_round_trip), KD_TEST(test_intent),
            KD_TEST(test_refused), KD_TEST_END};
        return kd_test_run("journal_rec", cases, NULL, NULL);
}
