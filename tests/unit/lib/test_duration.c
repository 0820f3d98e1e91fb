/* SPDX-License-Identifier: Apache-2.0 */
/* kdelay_duration_parse / kdelay_duration_format. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <kdelay/kdelay.h>

#include "kd_test.h"

#define SEC  1000LL
#define MIN  (60 * SEC)
#define HOUR (60 * MIN)
#define DAY  (24 * HOUR)

/* Parses text, expecting success with value want. */
static void parse_ok(const char *text, int64_t want)
{
        int64_t ms = -12345;
        kdelay_err_t err = kdelay_duration_parse(text, &ms);
        CU_ASSERT_EQUAL(err, KDELAY_OK);
        CU_ASSERT_EQUAL(ms, want);
}

/* Parses text, expecting KDELAY_ERR_INVALID_DURATION and *msp untouched. */
static void parse_bad(const char *text)
{
        int64_t ms = -12345;
        kdelay_err_t err = kdelay_duration_parse(text, &ms);
        CU_ASSERT_EQUAL(err, KDELAY_ERR_INVALID_DURATION);
        CU_ASSERT_EQUAL(ms, -12345);
}

static void fmt_is(int64_t ms, const char *want)
{
        char buf[64];
        memset(buf, 'X', sizeof(buf));
        char *r = kdelay_duration_format(ms, buf, sizeof(buf));
        CU_ASSERT_PTR_EQUAL(r, buf);
        CU_ASSERT_STRING_EQUAL(buf, want);
}

static void test_parse_units(void)
{
        parse_ok("250ms", 250);
        parse_ok("30s", 30 * SEC);
        parse_ok("5m", 5 * MIN);
        parse_ok("2h", 2 * HOUR);
        parse_ok("7d", 7 * DAY);
        parse_ok("0s", 0);
        parse_ok("0ms", 0);
        parse_ok("1ms", 1);
        parse_ok("007s", 7 * SEC);
        /* Leading zeros beyond 19 digits are still one number. */
        parse_ok("00000000000000000000090s", 90 * SEC);
        parse_ok("0000000000000000000000ms", 0);
}

static void test_parse_combined(void)
{
        parse_ok("1h30m", HOUR + 30 * MIN);
        parse_ok("1d2h3m4s5ms", DAY + 2 * HOUR + 3 * MIN + 4 * SEC + 5);
        parse_ok("1m30s", 90 * SEC);
        parse_ok("1s500ms", 1500);
        /* "ms" is one unit, not "m" followed by "s". */
        parse_ok("1m5ms", MIN + 5);
        /* Units may be skipped, only the order matters. */
        parse_ok("1d1s", DAY + SEC);
}

static void test_parse_large(void)
{
        /* The largest whole number of days that fits in int64 ms. */
        int64_t max_days = INT64_MAX / DAY;
        char text[64];
        snprintf(text, sizeof(text), "%lldd", (long long)max_days);
        parse_ok(text, max_days * DAY);
        parse_ok("9223372036854775807ms", INT64_MAX);
        parse_ok("3650d", 3650 * DAY);
        /* The parts add up to exactly INT64_MAX. */
        parse_ok("106751991167d25975807ms", INT64_MAX);
}

static void test_parse_rejects(void)
{
        parse_bad("");
        parse_bad("5");
        parse_bad("5x");
        parse_bad("m");
        parse_bad("ms");
        parse_bad("s5");
        parse_bad("-1s");
        parse_bad("+1s");
        parse_bad("1.5s");
        parse_bad("1,5s");
        parse_bad(" 1s");
        parse_bad("1s ");
        parse_bad("1 s");
        parse_bad("1S");
        parse_bad("1sec");
        parse_bad("1h30");
        parse_bad("30m1h"); /* order: largest first */
        parse_bad("1s1m");
        parse_bad("5ms1s");
        parse_bad("1m1m"); /* repeated unit */
        parse_bad("1s1s");
        parse_bad("1ms1ms");
        parse_bad("99999999999999999999d"); /* does not fit int64 */
        parse_bad("9223372036854775807d");  /* fits, but not as ms */
        parse_bad("9223372036854775808ms"); /* INT64_MAX + 1 */
        parse_bad("106751991168d");         /* max days + 1 */
        /* The sum overflows although each part fits. */
        parse_bad("106751991167d25975808ms");
}

static void test_parse_null(void)
{
        int64_t ms = 7;
        CU_ASSERT_EQUAL(kdelay_duration_parse(NULL, &ms),
                        KDELAY_ERR_INVALID_DURATION);
        CU_ASSERT_EQUAL(ms, 7);
        CU_ASSERT_EQUAL(kdelay_duration_parse("1s", NULL),
                        KDELAY_ERR_INVALID_DURATION);
}

static void test_format(void)
{
        fmt_is(0, "0s");
        fmt_is(1, "1ms");
        fmt_is(250, "250ms");
        fmt_is(1000, "1s");
        fmt_is(1500, "1s500ms");
        fmt_is(60000, "1m");
        fmt_is(90000, "1m30s");
        fmt_is(HOUR + 30 * MIN, "1h30m");
        fmt_is(24 * HOUR, "1d");
        fmt_is(7 * DAY, "7d");
        fmt_is(DAY + 1, "1d1ms");
        fmt_is(DAY + 2 * HOUR + 3 * MIN + 4 * SEC + 5, "1d2h3m4s5ms");
        fmt_is(-1000, "-1s");
}

static void test_format_small_buffer(void)
{
        char buf[4];
        memset(buf, 'X', sizeof(buf));
        kdelay_duration_format(DAY + 2 * HOUR + 3 * MIN, buf, sizeof(buf));
        /* Truncated, but always terminated within the buffer. */
        CU_ASSERT_PTR_NOT_NULL(memchr(buf, '\0', sizeof(buf)));
        CU_ASSERT_EQUAL(strncmp(buf, "1d2h", strlen(buf)), 0);
}

/* format(parse(x)) is the canonical form of x; parse(format(ms)) == ms. */
static void test_round_trip(void)
{
        static const struct {
                const char *in, *canon;
        } cases[] = {
            {"250ms", "250ms"}, {"30s", "30s"},        {"5m", "5m"},
            {"2h", "2h"},       {"7d", "7d"},          {"1h30m", "1h30m"},
            {"0s", "0s"},       {"0ms", "0s"},         {"90s", "1m30s"},
            {"60s", "1m"},      {"1000ms", "1s"},      {"24h", "1d"},
            {"168h", "7d"},     {"1500ms", "1s500ms"}, {"120m", "2h"},
        };
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                int64_t ms;
                char buf[64];
                CU_ASSERT_EQUAL_FATAL(kdelay_duration_parse(cases[i].in, &ms),
                                      KDELAY_OK);
                kdelay_duration_format(ms, buf, sizeof(buf));
                CU_ASSERT_STRING_EQUAL(buf, cases[i].canon);
        }

        static const int64_t values[] = {
            0,
            1,
            999,
            1000,
            1001,
            59999,
            60000,
            3599999,
            3600000,
            86399999,
            86400000,
            604800000,
            12345678901LL,
            INT64_MAX / DAY * DAY,
            INT64_MAX,
        };
        for (size_t i = 0; i < sizeof(values) / sizeof(values[0]); i++) {
                char buf[64];
                int64_t ms = -1;
                kdelay_duration_format(values[i], buf, sizeof(buf));
                CU_ASSERT_EQUAL(kdelay_duration_parse(buf, &ms), KDELAY_OK);
                CU_ASSERT_EQUAL(ms, values[i]);
        }
}

static const kd_test_case_t cases[] = {
    KD_TEST(test_parse_units),
    KD_TEST(test_parse_combined),
    KD_TEST(test_parse_large),
    KD_TEST(test_parse_rejects),
    KD_TEST(test_parse_null),
    KD_TEST(test_format),
    KD_TEST(test_format_small_buffer),
    KD_TEST(test_round_trip),
    KD_TEST_END,
};

int main(void)
{
        return kd_test_run("duration", cases, NULL, NULL);
}
