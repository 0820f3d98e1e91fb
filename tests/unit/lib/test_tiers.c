/* SPDX-License-Identifier: Apache-2.0 */
/* Tier lists: parsing, choice of a tier, names. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <kdelay/kdelay.h>

#include "kd_test.h"
#include "kd_tiers.h"

#define SEC  1000LL
#define MIN  (60 * SEC)
#define HOUR (60 * MIN)
#define DAY  (24 * HOUR)

static kd_tiers_t def_tiers; /* "1s,1m,30m,7d" */

static int suite_init(void)
{
        char errstr[256];
        return kd_tiers_parse(&def_tiers, "1s,1m,30m,7d", errstr,
                              sizeof(errstr)) == KDELAY_OK
                   ? 0
                   : -1;
}

static void assert_default(const kd_tiers_t *t)
{
        CU_ASSERT_EQUAL_FATAL(t->cnt, 4);
        CU_ASSERT_EQUAL(t->v[0].delay_ms, SEC);
        CU_ASSERT_EQUAL(t->v[1].delay_ms, MIN);
        CU_ASSERT_EQUAL(t->v[2].delay_ms, 30 * MIN);
        CU_ASSERT_EQUAL(t->v[3].delay_ms, 7 * DAY);
        CU_ASSERT_STRING_EQUAL(t->v[0].name, "1s");
        CU_ASSERT_STRING_EQUAL(t->v[1].name, "1m");
        CU_ASSERT_STRING_EQUAL(t->v[2].name, "30m");
        CU_ASSERT_STRING_EQUAL(t->v[3].name, "7d");
}

static void test_parse_default(void)
{
        kd_tiers_t t;
        char errstr[256] = "";
        CU_ASSERT_EQUAL_FATAL(
            kd_tiers_parse(&t, "1s,1m,30m,7d", errstr, sizeof(errstr)),
            KDELAY_OK);
        assert_default(&t);
        CU_ASSERT_STRING_EQUAL(errstr, "");
}

static void test_parse_unsorted_and_spaces(void)
{
        static const char *const inputs[] = {
            "7d,30m,1m,1s",   "30m 1s 7d 1m",          "  1m ,7d,, 1s  30m ",
            ",1s,1m,30m,7d,", "60s,1800s,1000ms,168h",
        };
        for (size_t i = 0; i < sizeof(inputs) / sizeof(inputs[0]); i++) {
                kd_tiers_t t;
                char errstr[256];
                CU_ASSERT_EQUAL_FATAL(
                    kd_tiers_parse(&t, inputs[i], errstr, sizeof(errstr)),
                    KDELAY_OK);
                /* Names are canonical whatever the input spelled. */
                assert_default(&t);
        }
}

static void test_parse_single_and_max(void)
{
        kd_tiers_t t;
        char errstr[256];
        CU_ASSERT_EQUAL_FATAL(kd_tiers_parse(&t, "5m", errstr, sizeof(errstr)),
                              KDELAY_OK);
        CU_ASSERT_EQUAL(t.cnt, 1);
        CU_ASSERT_EQUAL(t.v[0].delay_ms, 5 * MIN);
        CU_ASSERT_STRING_EQUAL(t.v[0].name, "5m");

        /* 10 years (365-day years) is the largest tier allowed. */
        CU_ASSERT_EQUAL_FATAL(
            kd_tiers_parse(&t, "3650d", errstr, sizeof(errstr)), KDELAY_OK);
        CU_ASSERT_EQUAL(t.v[0].delay_ms, KDELAY_MAX_DELAY_MS);
        CU_ASSERT_EQUAL_FATAL(kd_tiers_parse(&t, "1ms", errstr, sizeof(errstr)),
                              KDELAY_OK);
        CU_ASSERT_EQUAL(t.v[0].delay_ms, 1);

        /* Exactly KD_TIERS_MAX tiers, given in descending order. */
        char list[1024] = "";
        size_t off = 0;
        for (int i = KD_TIERS_MAX; i >= 1; i--)
                off += (size_t)snprintf(list + off, sizeof(list) - off, "%s%ds",
                                        off ? "," : "", i);
        CU_ASSERT_EQUAL_FATAL(kd_tiers_parse(&t, list, errstr, sizeof(errstr)),
                              KDELAY_OK);
        CU_ASSERT_EQUAL(t.cnt, KD_TIERS_MAX);
        for (size_t i = 0; i < t.cnt; i++)
                CU_ASSERT_EQUAL(t.v[i].delay_ms, (int64_t)(i + 1) * SEC);
}

/* Expects kd_tiers_parse(list) to fail with INVALID_TIERS, a message, and
 * the output untouched. */
static void parse_bad(const char *list)
{
        kd_tiers_t t = def_tiers;
        char errstr[256] = "";
        CU_ASSERT_EQUAL(kd_tiers_parse(&t, list, errstr, sizeof(errstr)),
                        KDELAY_ERR_INVALID_TIERS);
        CU_ASSERT_NOT_EQUAL(errstr[0], '\0');
        CU_ASSERT_EQUAL(memcmp(&t, &def_tiers, sizeof(t)), 0);
}

static void test_parse_rejects(void)
{
        parse_bad("");
        parse_bad(" ");
        parse_bad(",,,");
        parse_bad(NULL);
        parse_bad("1m,60s");     /* duplicate, spelled differently */
        parse_bad("1s,1s");      /* duplicate */
        parse_bad("0s");         /* zero */
        parse_bad("1s,0ms");     /* zero */
        parse_bad("3651d");      /* above 10 years */
        parse_bad("3650d1ms");   /* just above 10 years */
        parse_bad("1s,garbage"); /* garbage */
        parse_bad("1s;1m");      /* wrong separator */
        parse_bad("5");          /* no unit */
        parse_bad("-1s");        /* negative */
        parse_bad("1s,1m,30m,7d,x");
        /* A single very long item. */
        char longitem[200];
        memset(longitem, '1', sizeof(longitem) - 2);
        longitem[sizeof(longitem) - 2] = 's';
        longitem[sizeof(longitem) - 1] = '\0';
        parse_bad(longitem);
}

static void test_parse_too_many(void)
{
        char list[1024] = "";
        size_t off = 0;
        for (int i = 1; i <= KD_TIERS_MAX + 1; i++)
                off += (size_t)snprintf(list + off, sizeof(list) - off, "%s%ds",
                                        off ? "," : "", i);
        CU_ASSERT_FATAL(off < sizeof(list));
        parse_bad(list);
}

static void test_parse_errstr_names_tier(void)
{
        kd_tiers_t t;
        char errstr[256] = "";
        CU_ASSERT_EQUAL(kd_tiers_parse(&t, "1s,bogus", errstr, sizeof(errstr)),
                        KDELAY_ERR_INVALID_TIERS);
        CU_ASSERT_PTR_NOT_NULL(strstr(errstr, "bogus"));
        /* A NULL errstr is allowed. */
        CU_ASSERT_EQUAL(kd_tiers_parse(&t, "1s,bogus", NULL, 0),
                        KDELAY_ERR_INVALID_TIERS);
}

static void test_add(void)
{
        kd_tiers_t t = {.cnt = 0};
        char errstr[256];
        CU_ASSERT_EQUAL(kd_tiers_add(&t, "30m", errstr, sizeof(errstr)),
                        KDELAY_OK);
        CU_ASSERT_EQUAL(kd_tiers_add(&t, "1s", errstr, sizeof(errstr)),
                        KDELAY_OK);
        CU_ASSERT_EQUAL(kd_tiers_add(&t, "168h", errstr, sizeof(errstr)),
                        KDELAY_OK);
        CU_ASSERT_EQUAL(kd_tiers_add(&t, "60s", errstr, sizeof(errstr)),
                        KDELAY_OK);
        assert_default(&t);
        CU_ASSERT_EQUAL(kd_tiers_add(&t, "1m", errstr, sizeof(errstr)),
                        KDELAY_ERR_INVALID_TIERS);
        CU_ASSERT_EQUAL(kd_tiers_add(&t, "0s", errstr, sizeof(errstr)),
                        KDELAY_ERR_INVALID_TIERS);
        assert_default(&t);
}

static void choose_is(const kd_tiers_t *t, int64_t remaining, size_t want)
{
        size_t got = kd_tiers_choose(t, remaining);
        if (got != want)
                fprintf(stderr, "\nchoose(%lld): got %zu, want %zu\n",
                        (long long)remaining, got, want);
        CU_ASSERT_EQUAL(got, want);
}

static void test_choose_boundaries(void)
{
        const kd_tiers_t *t = &def_tiers;
        choose_is(t, INT64_MIN, 0);
        choose_is(t, -5000, 0);
        choose_is(t, -1, 0);
        choose_is(t, 0, 0);
        choose_is(t, 999, 0);
        choose_is(t, 1000, 0);
        choose_is(t, 1001, 0);
        choose_is(t, 59999, 0);
        choose_is(t, 60000, 1);
        choose_is(t, 60001, 1);
        choose_is(t, 1799999, 1);
        choose_is(t, 1800000, 2);
        choose_is(t, 1800001, 2);
        choose_is(t, 7 * DAY - 1, 2);
        choose_is(t, 7 * DAY, 3);
        choose_is(t, 7 * DAY + 1, 3);
        choose_is(t, 8 * DAY, 3);
        choose_is(t, KDELAY_MAX_DELAY_MS, 3);
        choose_is(t, INT64_MAX, 3);
}

static void test_choose_single(void)
{
        kd_tiers_t t;
        char errstr[256];
        CU_ASSERT_EQUAL_FATAL(kd_tiers_parse(&t, "1m", errstr, sizeof(errstr)),
                              KDELAY_OK);
        choose_is(&t, INT64_MIN, 0);
        choose_is(&t, -1, 0);
        choose_is(&t, 0, 0);
        choose_is(&t, 59999, 0);
        choose_is(&t, 60000, 0);
        choose_is(&t, INT64_MAX, 0);
}

static void test_choose_two(void)
{
        kd_tiers_t t;
        char errstr[256];
        CU_ASSERT_EQUAL_FATAL(
            kd_tiers_parse(&t, "1h 250ms", errstr, sizeof(errstr)), KDELAY_OK);
        choose_is(&t, 0, 0);
        choose_is(&t, 250, 0);
        choose_is(&t, HOUR - 1, 0);
        choose_is(&t, HOUR, 1);
        choose_is(&t, INT64_MAX, 1);
}

static void test_topic(void)
{
        char buf[256];
        static const char *const want[] = {"kdelay.tier.1s", "kdelay.tier.1m",
                                           "kdelay.tier.30m", "kdelay.tier.7d"};
        for (size_t i = 0; i < def_tiers.cnt; i++) {
                kd_tiers_topic(&def_tiers, i, "kdelay", buf, sizeof(buf));
                CU_ASSERT_STRING_EQUAL(buf, want[i]);
        }
        kd_tiers_topic(&def_tiers, 2, "acme.prod", buf, sizeof(buf));
        CU_ASSERT_STRING_EQUAL(buf, "acme.prod.tier.30m");

        kd_tiers_t t;
        char errstr[256];
        CU_ASSERT_EQUAL_FATAL(
            kd_tiers_parse(&t, "90s,1500ms", errstr, sizeof(errstr)),
            KDELAY_OK);
        kd_tiers_topic(&t, 0, "kdelay", buf, sizeof(buf));
        CU_ASSERT_STRING_EQUAL(buf, "kdelay.tier.1s500ms");
        kd_tiers_topic(&t, 1, "kdelay", buf, sizeof(buf));
        CU_ASSERT_STRING_EQUAL(buf, "kdelay.tier.1m30s");

        /* Truncated, terminated. */
        char small[8];
        kd_tiers_topic(&def_tiers, 0, "kdelay", small, sizeof(small));
        CU_ASSERT_STRING_EQUAL(small, "kdelay.");
}

static void test_find(void)
{
        CU_ASSERT_EQUAL(kd_tiers_find(&def_tiers, "1s"), 0);
        CU_ASSERT_EQUAL(kd_tiers_find(&def_tiers, "1m"), 1);
        CU_ASSERT_EQUAL(kd_tiers_find(&def_tiers, "30m"), 2);
        CU_ASSERT_EQUAL(kd_tiers_find(&def_tiers, "7d"), 3);
        CU_ASSERT_EQUAL(kd_tiers_find(&def_tiers, "5m"), -1);
        CU_ASSERT_EQUAL(kd_tiers_find(&def_tiers, ""), -1);
        CU_ASSERT_EQUAL(kd_tiers_find(&def_tiers, "3"), -1);
        CU_ASSERT_EQUAL(kd_tiers_find(&def_tiers, "30"), -1);
        /* Names are the canonical forms only. */
        CU_ASSERT_EQUAL(kd_tiers_find(&def_tiers, "60s"), -1);
        CU_ASSERT_EQUAL(kd_tiers_find(&def_tiers, "kdelay.tier.1s"), -1);
}

static void test_format(void)
{
        char buf[256];
        kd_tiers_format(&def_tiers, buf, sizeof(buf));
        CU_ASSERT_STRING_EQUAL(buf, "1s,1m,30m,7d");

        kd_tiers_t t;
        char errstr[256];
        CU_ASSERT_EQUAL_FATAL(
            kd_tiers_parse(&t, "2h 90s 250ms", errstr, sizeof(errstr)),
            KDELAY_OK);
        kd_tiers_format(&t, buf, sizeof(buf));
        CU_ASSERT_STRING_EQUAL(buf, "250ms,1m30s,2h");

        /* format then parse gives the same list. */
        kd_tiers_t again;
        CU_ASSERT_EQUAL_FATAL(
            kd_tiers_parse(&again, buf, errstr, sizeof(errstr)), KDELAY_OK);
        CU_ASSERT_EQUAL(memcmp(&again, &t, sizeof(t)), 0);

        /* Truncated but terminated within the buffer. */
        char small[6];
        memset(small, 'X', sizeof(small));
        kd_tiers_format(&def_tiers, small, sizeof(small));
        CU_ASSERT_PTR_NOT_NULL(memchr(small, '\0', sizeof(small)));
        CU_ASSERT_EQUAL(strncmp(small, "1s,1m,30m,7d", strlen(small)), 0);
}

static void test_topic_delay(void)
{
        int64_t ms = -1;
        CU_ASSERT_EQUAL(kd_tiers_topic_delay("kdelay", "kdelay.tier.30m", &ms),
                        0);
        CU_ASSERT_EQUAL(ms, 1800000);
        /* Not in any ladder, still a tier topic (a retired tier). */
        CU_ASSERT_EQUAL(
            kd_tiers_topic_delay("kdelay", "kdelay.tier.1m30s", &ms), 0);
        CU_ASSERT_EQUAL(ms, 90000);
        CU_ASSERT_EQUAL(kd_tiers_topic_delay("a.b-c", "a.b-c.tier.250ms", &ms),
                        0);
        CU_ASSERT_EQUAL(ms, 250);
        static const char *const no[] = {
            "kdelay.tier.",    "kdelay.tier.x",      "kdelay.tier.0s",
            "kdelay.tier.5",   "kdelay.tier.5m.bak", "kdelay.tiers.5m",
            "kdelay.dead",     "other.tier.5m",      "kdelayx.tier.5m",
            "kdelay.tier.-5m", "kdelay.tier.99999d", "kdelay.tier. 5m",
            "xkdelay.tier.5m"};
        for (size_t i = 0; i < sizeof(no) / sizeof(no[0]); i++) {
                ms = -1;
                CU_ASSERT_EQUAL(kd_tiers_topic_delay("kdelay", no[i], &ms), -1);
                CU_ASSERT_EQUAL(ms, -1);
        }
}

static void test_pattern(void)
{
        char buf[KD_TIERS_PATTERN_MAX];
        CU_ASSERT_EQUAL(kd_tiers_pattern("kdelay", buf, sizeof(buf)), 0);
        CU_ASSERT_STRING_EQUAL(buf, "^kdelay\\.tier\\.[0-9][0-9a-z]*$");
        CU_ASSERT_EQUAL(kd_tiers_pattern("acme.prod_x-1", buf, sizeof(buf)), 0);
        CU_ASSERT_STRING_EQUAL(buf,
                               "^acme\\.prod_x-1\\.tier\\.[0-9][0-9a-z]*$");
        /* Too small: no pattern at all, never a cut one that matches
         * more topics. */
        for (size_t size = 0; size < 31; size++) {
                char small[32] = "x";
                CU_ASSERT_EQUAL(kd_tiers_pattern("kdelay", small, size), -1);
                if (size)
                        CU_ASSERT_STRING_EQUAL(small, "");
        }
        char just[31];
        CU_ASSERT_EQUAL(kd_tiers_pattern("kdelay", just, sizeof(just)), 0);
        /* The longest prefix, all dots, fits the documented size. */
        char pfx[201];
        memset(pfx, '.', 200);
        pfx[200] = '\0';
        CU_ASSERT_EQUAL(kd_tiers_pattern(pfx, buf, sizeof(buf)), 0);
}

static const kd_test_case_t cases[] = {
    KD_TEST(test_parse_default),
    KD_TEST(test_parse_unsorted_and_spaces),
    KD_TEST(test_parse_single_and_max),
    KD_TEST(test_parse_rejects),
    KD_TEST(test_parse_too_many),
    KD_TEST(test_parse_errstr_names_tier),
    KD_TEST(test_add),
    KD_TEST(test_choose_boundaries),
    KD_TEST(test_choose_single),
    KD_TEST(test_choose_two),
    KD_TEST(test_topic),
    KD_TEST(test_find),
    KD_TEST(test_format),
    KD_TEST(test_topic_delay),
    KD_TEST(test_pattern),
    KD_TEST_END,
};

int main(void)
{
        return kd_test_run("tiers", cases, suite_init, NULL);
}
