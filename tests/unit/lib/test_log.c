/* SPDX-License-Identifier: Apache-2.0 */
/* Log lines: kd_log_quote's forms, and that a value from input logged
 * through kd_log parses back whole, as one field, whatever it holds. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <kdelay/conf.h>

#include "kd_log.h"
#include "kd_logfields.h"
#include "kd_test.h"

/* A task id with everything that could forge or hide a field: '=',
 * spaces, double quotes, backslashes, newlines, a tab, the bidi override,
 * isolate and marks (U+202E, U+2066, U+2069, U+200F, U+200E), and a byte
 * that is not UTF-8. */
static const char nasty_id[] = "a=b c\"d\\e\nevent=forged level=error\r\tx "
                               "\xe2\x80\xae"
                               "evil"
                               "\xe2\x81\xa6"
                               "iso"
                               "\xe2\x81\xa9"
                               "\xe2\x80\x8f"
                               "\xe2\x80\x8e"
                               "\\\" end\xff";

/* --- kd_log_quote ----------------------------------------------------- */

static void quote_is(const char *in, const char *want)
{
        char buf[128];
        memset(buf, '#', sizeof(buf));
        const char *r = kd_log_quote(in, buf, sizeof(buf));
        CU_ASSERT_PTR_EQUAL(r, buf);
        CU_ASSERT_STRING_EQUAL(buf, want);
}

static void test_quote_forms(void)
{
        quote_is("plain", "plain");
        quote_is("kdelay.tier.1s", "kdelay.tier.1s");
        quote_is("caf\xc3\xa9", "caf\xc3\xa9"); /* UTF-8 is kept as is */
        quote_is("a b", "\"a b\"");
        quote_is("say \"hi\"", "\"say \\\"hi\\\"\"");
        quote_is("back\\slash", "\"back\\\\slash\"");
        quote_is("k=v", "\"k=v\"");
        quote_is("line1\nline2", "\"line1\\x0aline2\"");
        quote_is("tab\there", "\"tab\\x09here\"");
        quote_is("\r", "\"\\x0d\"");
        quote_is("del\x7f", "\"del\\x7f\"");
        quote_is("", "\"\"");
        quote_is(NULL, "\"\"");
}

static void test_quote_invisible_and_bad_utf8(void)
{
        /* Bidi embeddings, overrides, isolates and marks. */
        quote_is("a\xe2\x80\xaa"
                 "b",
                 "\"a\\u202ab\"");
        quote_is("\xe2\x80\xae"
                 "cba",
                 "\"\\u202ecba\"");
        quote_is("\xe2\x81\xa6x\xe2\x81\xa9", "\"\\u2066x\\u2069\"");
        quote_is("\xe2\x80\x8e\xe2\x80\x8f", "\"\\u200e\\u200f\"");
        quote_is("\xd8\x9c", "\"\\u061c\"");         /* Arabic letter mark */
        quote_is("\xe2\x80\xa8", "\"\\u2028\"");     /* line separator */
        quote_is("\xef\xbb\xbfid", "\"\\ufeffid\""); /* byte order mark */
        quote_is("\xc2\x85", "\"\\u0085\"");         /* C1 control NEL */
        /* Bytes that are not UTF-8: stray, overlong, surrogate, cut. */
        quote_is("\xff", "\"\\xff\"");
        quote_is("\xc0\xaf", "\"\\xc0\\xaf\"");
        quote_is("\xed\xa0\x80", "\"\\xed\\xa0\\x80\"");
        quote_is("ab\xe2\x80", "\"ab\\xe2\\x80\"");
        /* Other characters beyond ASCII stay readable. */
        quote_is("\xe2\x82\xac\xf0\x9f\x98\x80",
                 "\xe2\x82\xac\xf0\x9f\x98\x80");
        char buf[16];
        CU_ASSERT_EQUAL(kd_log_quote_mem("a\0b", 3, buf, sizeof(buf)), 3);
        CU_ASSERT_STRING_EQUAL(buf, "\"a\\x00b\"");
}

/* Every buffer size: the value is well formed, ends with its closing
 * quote, and stands for a prefix of the input that ends on a whole
 * character. */
static void test_quote_truncates_whole(void)
{
        const size_t len = strlen(nasty_id);
        char full[512];
        CU_ASSERT_EQUAL_FATAL(
            kd_log_quote_mem(nasty_id, len, full, sizeof(full)), len);
        for (size_t size = 1; size <= strlen(full) + 1; size++) {
                char *buf = malloc(size); /* exact, for ASan */
                CU_ASSERT_PTR_NOT_NULL_FATAL(buf);
                size_t used = kd_log_quote_mem(nasty_id, len, buf, size);
                size_t n = strlen(buf);
                CU_ASSERT_FATAL(n < size);
                if (size < 3) {
                        CU_ASSERT_EQUAL(n, 0);
                        free(buf);
                        continue;
                }
                CU_ASSERT_EQUAL(buf[0], '"');
                CU_ASSERT_EQUAL(buf[n - 1], '"');
                char out[512];
                size_t out_len = 0;
                CU_ASSERT_EQUAL(kd_logvalue_parse(buf, n, out, &out_len),
                                (long)n);
                CU_ASSERT_EQUAL(out_len, used);
                CU_ASSERT(memcmp(out, nasty_id, used) == 0);
                CU_ASSERT_EQUAL(used == len, size > strlen(full));
                free(buf);
        }
        /* A bare value that does not fit is quoted, not cut bare. */
        char buf[8];
        kd_log_quote("abcdefghijkl", buf, sizeof(buf));
        CU_ASSERT_STRING_EQUAL(buf, "\"abcde\"");
        kd_log_quote("abcdefg", buf, sizeof(buf));
        CU_ASSERT_STRING_EQUAL(buf, "abcdefg");
        /* No escape is split. */
        kd_log_quote("\n\n\n\n\n\n", buf, sizeof(buf));
        CU_ASSERT_STRING_EQUAL(buf, "\"\\x0a\"");
        char one[1] = {'#'};
        kd_log_quote("a b", one, sizeof(one));
        CU_ASSERT_EQUAL(one[0], '\0');
        kd_log_quote("ab", one, sizeof(one));
        CU_ASSERT_EQUAL(one[0], '\0');
}

/* --- through kd_log --------------------------------------------------- */

typedef struct captured {
        int lines;
        char line[2048];
} captured_t;

static void capture(kdelay_log_level_t level, const char *line, void *opaque)
{
        captured_t *c = opaque;
        (void)level;
        c->lines++;
        snprintf(c->line, sizeof(c->line), "%s", line);
}

static kdelay_conf_t *capturing_conf(captured_t *c)
{
        kdelay_conf_t *conf = kdelay_conf_new();
        CU_ASSERT_PTR_NOT_NULL_FATAL(conf);
        memset(c, 0, sizeof(*c));
        kdelay_conf_set_log_cb(conf, capture, KDELAY_LOG_DEBUG, c);
        return conf;
}

static void test_id_round_trips_through_kd_log(void)
{
        captured_t cap;
        kdelay_conf_t *conf = capturing_conf(&cap);
        char qid[512], qtopic[64];
        kd_log(conf, KDELAY_LOG_WARNING, "event=test id=%s topic=%s n=%d",
               kd_log_quote(nasty_id, qid, sizeof(qid)),
               kd_log_quote("orders", qtopic, sizeof(qtopic)), 7);
        CU_ASSERT_EQUAL_FATAL(cap.lines, 1);
        /* One line, nothing a terminal could reorder. */
        CU_ASSERT_PTR_NULL(strchr(cap.line, '\n'));
        CU_ASSERT_PTR_NULL(strstr(cap.line, "\xe2\x80\xae"));
        CU_ASSERT_PTR_NULL(strstr(cap.line, "\xe2\x81\xa6"));
        CU_ASSERT_PTR_NOT_NULL(strstr(cap.line, "\\u202e"));

        kd_logfield_t f[8];
        int n = kd_logfields_parse(cap.line, f, 8);
        CU_ASSERT_EQUAL_FATAL(n, 4);
        CU_ASSERT_STRING_EQUAL(f[0].key, "event");
        CU_ASSERT_STRING_EQUAL(f[0].value, "test");
        CU_ASSERT_STRING_EQUAL(f[1].key, "id");
        CU_ASSERT_EQUAL(f[1].value_len, strlen(nasty_id));
        CU_ASSERT(memcmp(f[1].value, nasty_id, strlen(nasty_id)) == 0);
        CU_ASSERT_STRING_EQUAL(f[2].key, "topic");
        CU_ASSERT_STRING_EQUAL(f[2].value, "orders");
        CU_ASSERT_STRING_EQUAL(f[3].key, "n");
        CU_ASSERT_STRING_EQUAL(f[3].value, "7");
        kd_logfields_free(f, n);
        kdelay_conf_destroy(conf);
}

/* A line longer than kd_log's buffer keeps whole fields: a quoted value
 * is closed, a bare one dropped, and truncated=true says so. */
static void test_long_line_keeps_fields_whole(void)
{
        captured_t cap;
        kdelay_conf_t *conf = capturing_conf(&cap);
        char big[KD_LOG_LINE_MAX], qbig[KD_LOG_QUOTED_MAX(KD_LOG_LINE_MAX)];
        for (size_t i = 0; i + 1 < sizeof(big); i++)
                big[i] = "a\"b\\ \n"[i % 6];
        big[sizeof(big) - 1] = '\0';
        kd_log_quote(big, qbig, sizeof(qbig));
        for (int shift = 0; shift < 8; shift++) {
                kd_log(conf, KDELAY_LOG_INFO, "event=long%.*s v=%s after=1",
                       shift, "xxxxxxx", qbig);
                kd_logfield_t f[8];
                int n = kd_logfields_parse(cap.line, f, 8);
                CU_ASSERT_EQUAL_FATAL(n, 3);
                CU_ASSERT_STRING_EQUAL(f[1].key, "v");
                CU_ASSERT(f[1].value_len >
                          500); /* escapes: 11 chars per 6 bytes */
                CU_ASSERT(memcmp(f[1].value, big, f[1].value_len) == 0);
                CU_ASSERT_STRING_EQUAL(f[2].key, "truncated");
                CU_ASSERT_STRING_EQUAL(f[2].value, "true");
                kd_logfields_free(f, n);
        }
        /* A bare value cut short is dropped with its key. */
        char bare[KD_LOG_LINE_MAX + 200];
        memset(bare, 'z', sizeof(bare) - 1);
        bare[sizeof(bare) - 1] = '\0';
        kd_log(conf, KDELAY_LOG_INFO, "event=long n=%s", bare);
        CU_ASSERT_STRING_EQUAL(cap.line, "event=long truncated=true");
        kdelay_conf_destroy(conf);
}

int main(void)
{
        static const kd_test_case_t cases[] = {
            KD_TEST(test_quote_forms),
            KD_TEST(test_quote_invisible_and_bad_utf8),
            KD_TEST(test_quote_truncates_whole),
            KD_TEST(test_id_round_trips_through_kd_log),
            KD_TEST(test_long_line_keeps_fields_whole),
            KD_TEST_END};
        return kd_test_run("log", cases, NULL, NULL);
}
