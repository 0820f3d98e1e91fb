/* SPDX-License-Identifier: Apache-2.0 */
/* kdelayctl's JSON writer (src/ctl/ctl_json.c): valid JSON in valid UTF-8
 * whatever bytes a string holds; invalid bytes each become \ufffd. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "ctl_json.h"
#include "kd_test.h"
#include "kd_util.h"

/* 1 when the len bytes at s are well-formed UTF-8 without control
 * characters (what a line of JSON text may hold). */
static int utf8_clean(const char *s, size_t len)
{
        const unsigned char *u = (const unsigned char *)s;
        for (size_t i = 0; i < len;) {
                uint32_t cp;
                size_t k = kd_utf8_seq(u + i, len - i, &cp);
                if (k == 0 || cp < 0x20)
                        return 0;
                i += k;
        }
        return 1;
}

/* Checks that the len bytes at in are written as want (the literal with
 * its quotes), that it is clean UTF-8 and that cJSON reads it back as
 * back (NULL: want without its quotes, as given). */
static void check(const char *in, size_t len, const char *want,
                  const char *back)
{
        char *got = kd_ctl_json_string(in, len);
        CU_ASSERT_PTR_NOT_NULL_FATAL(got);
        if (strcmp(got, want))
                printf("\n  got  %s\n  want %s\n", got, want);
        CU_ASSERT_STRING_EQUAL(got, want);
        CU_ASSERT(utf8_clean(got, strlen(got)));
        cJSON *o = cJSON_Parse(got);
        CU_ASSERT_FATAL(cJSON_IsString(o));
        if (back)
                CU_ASSERT_STRING_EQUAL(o->valuestring, back);
        cJSON_Delete(o);
        free(got);
}

#define CHECK(lit, want, back) check(lit, sizeof(lit) - 1, want, back)

static void test_valid_kept(void)
{
        CHECK("", "\"\"", "");
        CHECK("order-42", "\"order-42\"", "order-42");
        /* 2, 3 and 4 bytes, the edges of each, U+FFFD itself. */
        CHECK("\xc2\x80 \xc3\xa9 \xdf\xbf", "\"\xc2\x80 \xc3\xa9 \xdf\xbf\"",
              "\xc2\x80 \xc3\xa9 \xdf\xbf");
        CHECK(
            "\xe0\xa0\x80 \xe2\x82\xac \xed\x9f\xbf \xee\x80\x80 \xef\xbf\xbd",
            "\"\xe0\xa0\x80 \xe2\x82\xac \xed\x9f\xbf \xee\x80\x80 "
            "\xef\xbf\xbd\"",
            NULL);
        CHECK("\xf0\x90\x80\x80 \xf0\x9f\x98\x80 \xf4\x8f\xbf\xbf",
              "\"\xf0\x90\x80\x80 \xf0\x9f\x98\x80 \xf4\x8f\xbf\xbf\"", NULL);
        /* JSON's own escapes; DEL is fine as it is. */
        CHECK("a\"b\\c/\x7f", "\"a\\\"b\\\\c/\x7f\"", "a\"b\\c/\x7f");
        CHECK("\b\t\n\x0b\f\r\x01\x1f",
              "\"\\b\\t\\n\\u000b\\f\\r\\u0001\\u001f\"",
              "\b\t\n\x0b\f\r\x01\x1f");
        /* NUL, given with the length. */
        check("a\0b", 3, "\"a\\u0000b\"", NULL);
        /* NULL as "". */
        char *e = kd_ctl_json_string(NULL, 5);
        CU_ASSERT_STRING_EQUAL(e, "\"\"");
        free(e);
}

static void test_invalid_bytes(void)
{
        /* Stray bytes: continuation, C0, C1, F5..FF. */
        CHECK("\x80", "\"\\ufffd\"", "\xef\xbf\xbd");
        CHECK("a\xbf"
              "b",
              "\"a\\ufffdb\"",
              "a\xef\xbf\xbd"
              "b");
        CHECK("\xc0\xc1\xf5\xf8\xfe\xff",
              "\"\\ufffd\\ufffd\\ufffd\\ufffd\\ufffd\\ufffd\"", NULL);
        /* Truncated: by the end, by an ASCII byte, by another lead. */
        CHECK("\xe2\x82", "\"\\ufffd\\ufffd\"", NULL);
        CHECK("\xf0\x9f\x98", "\"\\ufffd\\ufffd\\ufffd\"", NULL);
        CHECK("\xe2\x82"
              "A",
              "\"\\ufffd\\ufffdA\"", NULL);
        CHECK("\xc3\xe2\x82\xac", "\"\\ufffd\xe2\x82\xac\"", NULL);
        check("\xe2\x82\xac", 2, "\"\\ufffd\\ufffd\"", NULL); /* len cuts */
        /* Overlong forms: '/' in 2, 3 and 4 bytes; NUL in 2. */
        CHECK("\xc0\xaf", "\"\\ufffd\\ufffd\"", NULL);
        CHECK("\xe0\x80\xaf", "\"\\ufffd\\ufffd\\ufffd\"", NULL);
        CHECK("\xf0\x80\x80\xaf", "\"\\ufffd\\ufffd\\ufffd\\ufffd\"", NULL);
        CHECK("\xc0\x80", "\"\\ufffd\\ufffd\"", NULL);
        /* Surrogates (U+D800, U+DFFF), and above U+10FFFF. */
        CHECK("\xed\xa0\x80", "\"\\ufffd\\ufffd\\ufffd\"", NULL);
        CHECK("\xed\xbf\xbf", "\"\\ufffd\\ufffd\\ufffd\"", NULL);
        CHECK("\xf4\x90\x80\x80", "\"\\ufffd\\ufffd\\ufffd\\ufffd\"", NULL);
        /* An id as a user typed it, invalid bytes among valid ones. */
        CHECK("ord\xe9r-\xc3\xa9-\xff", "\"ord\\ufffdr-\xc3\xa9-\\ufffd\"",
              "ord\xef\xbf\xbdr-\xc3\xa9-\xef\xbf\xbd");
}

/* Every byte pair and a spread of triples and quadruples: clean UTF-8 out,
 * cJSON reads it, and a well-formed input comes back unchanged. */
static void test_all_short_inputs(void)
{
        unsigned char in[4];
        unsigned long n = 0, bad = 0;
        for (unsigned a = 0; a < 256; a++) {
                for (unsigned b = 0; b < 256; b++) {
                        for (unsigned c = 0; c < 256; c += 17) {
                                in[0] = (unsigned char)a;
                                in[1] = (unsigned char)b;
                                in[2] = (unsigned char)c;
                                in[3] = (unsigned char)(a ^ b ^ c);
                                size_t len = 1 + (a + b + c) % 4;
                                char *got =
                                    kd_ctl_json_string((const char *)in, len);
                                cJSON *o = got ? cJSON_Parse(got) : NULL;
                                int ok = got && utf8_clean(got, strlen(got)) &&
                                         cJSON_IsString(o);
                                if (ok && !memchr(in, 0, len) &&
                                    utf8_clean((const char *)in, len))
                                        ok = strlen(o->valuestring) == len &&
                                             !memcmp(o->valuestring, in, len);
                                if (!ok && bad++ < 5)
                                        printf("\n  %02x %02x %02x %02x/%zu: "
                                               "%s",
                                               a, b, c, in[3], len,
                                               got ? got : "(null)");
                                cJSON_Delete(o);
                                free(got);
                                n++;
                        }
                }
        }
        CU_ASSERT_EQUAL(bad, 0);
        CU_ASSERT_EQUAL(n, 256ul * 256 * 16);
}

/* A whole answer: keys and values by the same rule, numbers as cJSON
 * writes them. */
static void test_text(void)
{
        cJSON *o = cJSON_CreateObject();
        CU_ASSERT_PTR_NOT_NULL_FATAL(o);
        cJSON_AddStringToObject(o, "id", "bad\xff-id");
        cJSON_AddNullToObject(o, "fate");
        cJSON_AddStringToObject(o, "error", "invalid task id: \"\xc0\xaf\"");
        cJSON_AddNumberToObject(o, "fire_at_ms", 1767225600123.0);
        cJSON_AddNumberToObject(o, "partition", -1);
        cJSON_AddNumberToObject(o, "mean", 5.83);
        cJSON_AddBoolToObject(o, "complete", 0);
        cJSON *a = cJSON_AddArrayToObject(o, "topics\x80");
        cJSON_AddItemToArray(a, cJSON_CreateString("t\xed\xa0\x80"));
        cJSON_AddItemToArray(a, cJSON_CreateTrue());
        cJSON_AddItemToArray(a, cJSON_CreateObject());
        cJSON_AddItemToArray(a, cJSON_CreateArray());
        char *got = kd_ctl_json_text(o);
        CU_ASSERT_PTR_NOT_NULL_FATAL(got);
        CU_ASSERT_STRING_EQUAL(
            got, "{\"id\":\"bad\\ufffd-id\",\"fate\":null,"
                 "\"error\":\"invalid task id: \\\"\\ufffd\\ufffd\\\"\","
                 "\"fire_at_ms\":1767225600123,\"partition\":-1,"
                 "\"mean\":5.83,\"complete\":false,"
                 "\"topics\\ufffd\":[\"t\\ufffd\\ufffd\\ufffd\",true,{},[]]}");
        CU_ASSERT(utf8_clean(got, strlen(got)));
        cJSON *back = cJSON_Parse(got);
        CU_ASSERT(cJSON_IsObject(back));
        cJSON_Delete(back);
        free(got);
        cJSON_Delete(o);

        /* Valid text: exactly what cJSON prints. */
        o = cJSON_CreateObject();
        CU_ASSERT_PTR_NOT_NULL_FATAL(o);
        cJSON_AddStringToObject(o, "id", "\xc3\xa9t\xc3\xa9\t\"q\"");
        cJSON_AddNumberToObject(o, "offset", 123456789012.0);
        cJSON_AddNumberToObject(o, "zero", 0);
        cJSON_AddNumberToObject(o, "p99", 0.1 + 0.2);
        cJSON_AddNumberToObject(o, "big", 1e300);
        cJSON_AddNullToObject(o, "owner");
        cJSON *ref = cJSON_AddObjectToObject(o, "by_reason");
        cJSON_AddNumberToObject(ref, "target-unavailable", 3);
        char *want = cJSON_PrintUnformatted(o);
        got = kd_ctl_json_text(o);
        CU_ASSERT_PTR_NOT_NULL_FATAL(got);
        CU_ASSERT_PTR_NOT_NULL_FATAL(want);
        CU_ASSERT_STRING_EQUAL(got, want);
        cJSON_free(want);
        free(got);
        cJSON_Delete(o);
        CU_ASSERT_PTR_NULL(kd_ctl_json_text(NULL));
}

static void test_asked(void)
{
        char *yes[] = {"status", "x", "--json", NULL};
        char *no[] = {"status", "--", "--json", NULL};
        char *not_quite[] = {"status", "--jsonx", "-j", NULL};
        CU_ASSERT_EQUAL(kd_ctl_json_asked(3, yes), 1);
        CU_ASSERT_EQUAL(kd_ctl_json_asked(3, no), 0);
        CU_ASSERT_EQUAL(kd_ctl_json_asked(3, not_quite), 0);
        CU_ASSERT_EQUAL(kd_ctl_json_asked(1, yes), 0);
}

static const kd_test_case_t cases[] = {
    KD_TEST(test_valid_kept),
    KD_TEST(test_invalid_bytes),
    KD_TEST(test_all_short_inputs),
    KD_TEST(test_text),
    KD_TEST(test_asked),
    KD_TEST_END,
};

int main(void)
{
        return kd_test_run("ctl_json", cases, NULL, NULL);
}
