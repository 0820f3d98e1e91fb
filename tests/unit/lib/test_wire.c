/* SPDX-License-Identifier: Apache-2.0 */
/* Wire format v1: header encoding, decoding and validation. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <librdkafka/rdkafka.h>

#include <kdelay/kdelay.h>

#include "kd_test.h"
#include "kd_wire.h"

#define NOW_MS   1700000000000LL /* a fixed "now" for decoding */
#define DAY_MS   86400000LL
#define LIMIT_MS (NOW_MS + KDELAY_MAX_DELAY_MS + DAY_MS) /* last non-absurd */

/* Headers of a valid task, built field by field so single fields can be
 * left out, repeated or replaced. A NULL field is left out; len -1 means
 * strlen. */
typedef struct fields {
        const char *version;
        const char *id;
        ssize_t id_len;
        const char *target;
        ssize_t target_len;
        const char *fire_at;
} fields_t;

static fields_t good(void)
{
        fields_t f = {"1", "task-1", -1, "orders", -1, "1700000060000"};
        return f;
}

static rd_kafka_headers_t *build(const fields_t *f)
{
        rd_kafka_headers_t *h = rd_kafka_headers_new(8);
        rd_kafka_header_add(h, "trace", -1, "abc", -1);
        if (f->id)
                rd_kafka_header_add(h, KDELAY_HDR_ID, -1, f->id, f->id_len);
        if (f->target)
                rd_kafka_header_add(h, KDELAY_HDR_TARGET, -1, f->target,
                                    f->target_len);
        if (f->fire_at)
                rd_kafka_header_add(h, KDELAY_HDR_FIRE_AT, -1, f->fire_at, -1);
        if (f->version)
                rd_kafka_header_add(h, KDELAY_HDR_VERSION, -1, f->version, -1);
        return h;
}

/* Decodes f's headers and returns the defect. */
static kd_wire_defect_t decode(const fields_t *f)
{
        rd_kafka_headers_t *h = build(f);
        kd_wire_task_t task;
        kd_wire_defect_t d = kd_wire_decode(h, NOW_MS, &task);
        rd_kafka_headers_destroy(h);
        return d;
}

static void expect(const fields_t *f, kd_wire_defect_t want)
{
        kd_wire_defect_t got = decode(f);
        if (got != want)
                fprintf(stderr, "\ndecode: got %s, want %s\n",
                        kd_wire_defect_str(got), kd_wire_defect_str(want));
        CU_ASSERT_EQUAL(got, want);
}

static void expect_id(const char *id, size_t len, kd_wire_defect_t want)
{
        fields_t f = good();
        f.id = id;
        f.id_len = (ssize_t)len;
        expect(&f, want);
        /* kd_wire_id_valid agrees with the decoder. */
        CU_ASSERT_EQUAL(kd_wire_id_valid(id, len) != 0, want == KD_WIRE_OK);
}

static void expect_target(const char *target, size_t len, kd_wire_defect_t want)
{
        fields_t f = good();
        f.target = target;
        f.target_len = (ssize_t)len;
        expect(&f, want);
        CU_ASSERT_EQUAL(kd_wire_topic_valid(target, len) != 0,
                        want == KD_WIRE_OK);
}

static void expect_fire_at(const char *fire_at, kd_wire_defect_t want)
{
        fields_t f = good();
        f.fire_at = fire_at;
        expect(&f, want);
}

/* --- encode / decode ----------------------------------------------------- */

static void test_round_trip(void)
{
        rd_kafka_headers_t *h = NULL;
        CU_ASSERT_EQUAL_FATAL(kd_wire_encode(&h, "01ARYZ6S41TSV4RRFFQ69G5FAV",
                                             "orders.eu-1", 1700000060123LL,
                                             NULL, 0),
                              KDELAY_OK);
        CU_ASSERT_PTR_NOT_NULL_FATAL(h);
        CU_ASSERT_EQUAL(rd_kafka_header_cnt(h), 4);

        kd_wire_task_t task;
        CU_ASSERT_EQUAL_FATAL(kd_wire_decode(h, NOW_MS, &task), KD_WIRE_OK);
        CU_ASSERT_EQUAL(task.id_len, 26);
        CU_ASSERT_EQUAL(memcmp(task.id, "01ARYZ6S41TSV4RRFFQ69G5FAV", 26), 0);
        CU_ASSERT_EQUAL(task.target_len, strlen("orders.eu-1"));
        CU_ASSERT_EQUAL(memcmp(task.target, "orders.eu-1", task.target_len), 0);
        CU_ASSERT_EQUAL(task.fire_at_ms, 1700000060123LL);

        /* The kdelay headers, in the documented order and form. */
        static const char *const names[] = {KDELAY_HDR_ID, KDELAY_HDR_TARGET,
                                            KDELAY_HDR_FIRE_AT,
                                            KDELAY_HDR_VERSION};
        static const char *const values[] = {
            "01ARYZ6S41TSV4RRFFQ69G5FAV", "orders.eu-1", "1700000060123", "1"};
        for (size_t i = 0; i < 4; i++) {
                const char *name;
                const void *v;
                size_t len;
                CU_ASSERT_EQUAL_FATAL(
                    rd_kafka_header_get_all(h, i, &name, &v, &len),
                    RD_KAFKA_RESP_ERR_NO_ERROR);
                CU_ASSERT_STRING_EQUAL(name, names[i]);
                CU_ASSERT_EQUAL(len, strlen(values[i]));
                CU_ASSERT_EQUAL(memcmp(v, values[i], len), 0);
        }
        rd_kafka_headers_destroy(h);
}

static void test_round_trip_user_headers(void)
{
        static const unsigned char bin[] = {0x00, 0xff, 0x80, 0x00,
                                            0x7f, '=',  '"',  '\n'};
        const kdelay_header_t user[] =
            {
                {"trace", "t-1", 3}, {"bin", bin, sizeof(bin)},
                {"empty", "", 0},    {"novalue", NULL, 0},
                {"trace", "t-2", 3}, /* repeated name: kept, in order */
            };
        const size_t n = sizeof(user) / sizeof(user[0]);
        rd_kafka_headers_t *h = NULL;
        CU_ASSERT_EQUAL_FATAL(
            kd_wire_encode(&h, "id-\xc3\xa9", "t", 0, user, n), KDELAY_OK);
        CU_ASSERT_EQUAL_FATAL(rd_kafka_header_cnt(h), n + 4);

        for (size_t i = 0; i < n; i++) {
                const char *name;
                const void *v;
                size_t len;
                CU_ASSERT_EQUAL_FATAL(
                    rd_kafka_header_get_all(h, i, &name, &v, &len),
                    RD_KAFKA_RESP_ERR_NO_ERROR);
                CU_ASSERT_STRING_EQUAL(name, user[i].name);
                CU_ASSERT_EQUAL(len, user[i].value_len);
                if (user[i].value) {
                        CU_ASSERT_PTR_NOT_NULL_FATAL(v);
                        CU_ASSERT_EQUAL(memcmp(v, user[i].value, len), 0);
                } else {
                        CU_ASSERT_PTR_NULL(v);
                }
        }
        /* The kdelay headers follow the user's. */
        const char *name;
        const void *v;
        size_t len;
        CU_ASSERT_EQUAL(rd_kafka_header_get_all(h, n, &name, &v, &len),
                        RD_KAFKA_RESP_ERR_NO_ERROR);
        CU_ASSERT_STRING_EQUAL(name, KDELAY_HDR_ID);

        kd_wire_task_t task;
        CU_ASSERT_EQUAL_FATAL(kd_wire_decode(h, NOW_MS, &task), KD_WIRE_OK);
        CU_ASSERT_EQUAL(task.id_len, 5);
        CU_ASSERT_EQUAL(memcmp(task.id, "id-\xc3\xa9", 5), 0);
        CU_ASSERT_EQUAL(task.target_len, 1);
        CU_ASSERT_EQUAL(task.target[0], 't');
        CU_ASSERT_EQUAL(task.fire_at_ms, 0);
        rd_kafka_headers_destroy(h);
}

static void test_round_trip_limits(void)
{
        char id[KDELAY_ID_MAX + 1];
        char target[250];
        memset(id, 'i', KDELAY_ID_MAX);
        id[KDELAY_ID_MAX] = '\0';
        memset(target, 'T', 249);
        target[249] = '\0';
        rd_kafka_headers_t *h = NULL;
        CU_ASSERT_EQUAL_FATAL(kd_wire_encode(&h, id, target, LIMIT_MS, NULL, 0),
                              KDELAY_OK);
        kd_wire_task_t task;
        CU_ASSERT_EQUAL(kd_wire_decode(h, NOW_MS, &task), KD_WIRE_OK);
        CU_ASSERT_EQUAL(task.id_len, KDELAY_ID_MAX);
        CU_ASSERT_EQUAL(task.target_len, 249);
        CU_ASSERT_EQUAL(task.fire_at_ms, LIMIT_MS);
        rd_kafka_headers_destroy(h);
}

static void test_decode_good_with_user_headers(void)
{
        fields_t f = good();
        rd_kafka_headers_t *h = build(&f);
        kd_wire_task_t task;
        CU_ASSERT_EQUAL_FATAL(kd_wire_decode(h, NOW_MS, &task), KD_WIRE_OK);
        CU_ASSERT_EQUAL(task.id_len, 6);
        CU_ASSERT_EQUAL(memcmp(task.id, "task-1", 6), 0);
        CU_ASSERT_EQUAL(task.target_len, 6);
        CU_ASSERT_EQUAL(memcmp(task.target, "orders", 6), 0);
        CU_ASSERT_EQUAL(task.fire_at_ms, 1700000060000LL);
        rd_kafka_headers_destroy(h);
}

/* --- defects ---------------------------------------------------------------
 */

static void test_no_headers(void)
{
        kd_wire_task_t task;
        CU_ASSERT_EQUAL(kd_wire_decode(NULL, NOW_MS, &task),
                        KD_WIRE_NO_VERSION);
        rd_kafka_headers_t *h = rd_kafka_headers_new(1);
        CU_ASSERT_EQUAL(kd_wire_decode(h, NOW_MS, &task), KD_WIRE_NO_VERSION);
        rd_kafka_header_add(h, "trace", -1, "x", -1);
        CU_ASSERT_EQUAL(kd_wire_decode(h, NOW_MS, &task), KD_WIRE_NO_VERSION);
        rd_kafka_headers_destroy(h);
}

static void test_version(void)
{
        fields_t f = good();
        f.version = NULL;
        expect(&f, KD_WIRE_NO_VERSION);
        f.version = "2";
        expect(&f, KD_WIRE_BAD_VERSION);
        f.version = "";
        expect(&f, KD_WIRE_BAD_VERSION);
        f.version = "0";
        expect(&f, KD_WIRE_BAD_VERSION);
        f.version = "11";
        expect(&f, KD_WIRE_BAD_VERSION);
        f.version = "1 ";
        expect(&f, KD_WIRE_BAD_VERSION);
        f.version = "v1";
        expect(&f, KD_WIRE_BAD_VERSION);

        /* A version header without a value. */
        f = good();
        f.version = NULL;
        rd_kafka_headers_t *h = build(&f);
        rd_kafka_header_add(h, KDELAY_HDR_VERSION, -1, NULL, 0);
        kd_wire_task_t task;
        CU_ASSERT_EQUAL(kd_wire_decode(h, NOW_MS, &task), KD_WIRE_BAD_VERSION);
        rd_kafka_headers_destroy(h);
}

static void test_missing_fields(void)
{
        fields_t f = good();
        f.id = NULL;
        expect(&f, KD_WIRE_NO_ID);
        f = good();
        f.target = NULL;
        expect(&f, KD_WIRE_NO_TARGET);
        f = good();
        f.fire_at = NULL;
        expect(&f, KD_WIRE_NO_FIRE_AT);
}

static void test_id_length(void)
{
        char id[KDELAY_ID_MAX + 2];
        memset(id, 'a', sizeof(id));
        expect_id(id, 0, KD_WIRE_BAD_ID);
        expect_id(id, 1, KD_WIRE_OK);
        expect_id(id, KDELAY_ID_MAX, KD_WIRE_OK);
        expect_id(id, KDELAY_ID_MAX + 1, KD_WIRE_BAD_ID);

        /* 128 bytes of multibyte UTF-8 is fine, 129 is not. */
        char mb[KDELAY_ID_MAX + 3];
        for (size_t i = 0; i + 1 < sizeof(mb); i += 2) {
                mb[i] = (char)0xc3;
                mb[i + 1] = (char)0xa9; /* é */
        }
        expect_id(mb, KDELAY_ID_MAX, KD_WIRE_OK);
        memcpy(mb + KDELAY_ID_MAX, "x", 1);
        expect_id(mb, KDELAY_ID_MAX + 1, KD_WIRE_BAD_ID);

        /* An id header without a value. */
        fields_t f = good();
        f.id = NULL;
        rd_kafka_headers_t *h = build(&f);
        rd_kafka_header_add(h, KDELAY_HDR_ID, -1, NULL, 0);
        kd_wire_task_t task;
        CU_ASSERT_EQUAL(kd_wire_decode(h, NOW_MS, &task), KD_WIRE_BAD_ID);
        rd_kafka_headers_destroy(h);
}

#define ID(lit) lit, sizeof(lit) - 1

static void test_id_utf8(void)
{
        /* Valid: ASCII, 2-, 3- and 4-byte sequences, the extremes. */
        expect_id(ID("01ARYZ6S41TSV4RRFFQ69G5FAV"), KD_WIRE_OK);
        expect_id(ID("caf\xc3\xa9"), KD_WIRE_OK);      /* é */
        expect_id(ID("\xe2\x82\xac-42"), KD_WIRE_OK);  /* € */
        expect_id(ID("\xf0\x9f\x98\x80"), KD_WIRE_OK); /* 😀 */
        expect_id(ID("\xd0\xb7\xd0\xb0\xd0\xb4\xd0\xb0\xd1\x87\xd0\xb0"),
                  KD_WIRE_OK);                         /* задача */
        expect_id(ID("\xc2\x80"), KD_WIRE_OK);         /* U+0080 */
        expect_id(ID("\xe0\xa0\x80"), KD_WIRE_OK);     /* U+0800 */
        expect_id(ID("\xed\x9f\xbf"), KD_WIRE_OK);     /* U+D7FF */
        expect_id(ID("\xee\x80\x80"), KD_WIRE_OK);     /* U+E000 */
        expect_id(ID("\xef\xbf\xbf"), KD_WIRE_OK);     /* U+FFFF */
        expect_id(ID("\xf0\x90\x80\x80"), KD_WIRE_OK); /* U+10000 */
        expect_id(ID("\xf4\x8f\xbf\xbf"), KD_WIRE_OK); /* U+10FFFF */

        /* Control characters would end up raw in logs and terminals. */
        expect_id(ID("\x7f"), KD_WIRE_BAD_ID);
        expect_id(ID("a\nb event=forged"), KD_WIRE_BAD_ID);
        expect_id(ID("tab\there"), KD_WIRE_BAD_ID);
        expect_id(ID("\x1b[31m"), KD_WIRE_BAD_ID);
        expect_id(ID("space ok"), KD_WIRE_OK);

        /* Invalid. */
        expect_id(ID("\xc0\xaf"), KD_WIRE_BAD_ID);         /* overlong '/' */
        expect_id(ID("\xc1\xbf"), KD_WIRE_BAD_ID);         /* overlong */
        expect_id(ID("\xe0\x80\xaf"), KD_WIRE_BAD_ID);     /* overlong */
        expect_id(ID("\xf0\x80\x80\xaf"), KD_WIRE_BAD_ID); /* overlong */
        expect_id(ID("a\x80"), KD_WIRE_BAD_ID); /* lone continuation */
        expect_id(ID("\x80"), KD_WIRE_BAD_ID);
        expect_id(ID("\xbf"), KD_WIRE_BAD_ID);
        expect_id(ID("\xed\xa0\x80"), KD_WIRE_BAD_ID); /* surrogate D800 */
        expect_id(ID("\xed\xbf\xbf"), KD_WIRE_BAD_ID); /* surrogate DFFF */
        expect_id(ID("\xe2\x82"), KD_WIRE_BAD_ID);     /* truncated */
        expect_id(ID("\xe2\x82x"), KD_WIRE_BAD_ID);    /* cut short */
        expect_id(ID("ab\xc3"), KD_WIRE_BAD_ID);       /* truncated at end */
        expect_id(ID("\xf0\x9f\x98"), KD_WIRE_BAD_ID); /* truncated */
        expect_id(ID("\xf4\x90\x80\x80"), KD_WIRE_BAD_ID); /* > U+10FFFF */
        expect_id(ID("\xf5\x80\x80\x80"), KD_WIRE_BAD_ID);
        expect_id(ID("\xf8\x88\x80\x80\x80"), KD_WIRE_BAD_ID);
        expect_id(ID("\xfe"), KD_WIRE_BAD_ID);
        expect_id(ID("\xff"), KD_WIRE_BAD_ID);
        expect_id(ID("a\0b"), KD_WIRE_BAD_ID); /* embedded NUL */
        expect_id(ID("\0"), KD_WIRE_BAD_ID);
        expect_id(ID("ab\0"), KD_WIRE_BAD_ID); /* trailing NUL */

        /* A sequence cut by the length, even when the bytes after it
         * would complete it. */
        CU_ASSERT_FALSE(kd_wire_id_valid("\xe2\x82\xac", 2));
        CU_ASSERT_FALSE(kd_wire_id_valid("\xf0\x9f\x98\x80", 3));
        CU_ASSERT_FALSE(kd_wire_id_valid("a\xc3\xa9", 2));
        CU_ASSERT_TRUE(kd_wire_id_valid("a\xc3\xa9", 3));
        CU_ASSERT_TRUE(kd_wire_id_valid("abc", 2));

        CU_ASSERT_FALSE(kd_wire_id_valid(NULL, 3));
}

static void test_target(void)
{
        expect_target(ID("orders"), KD_WIRE_OK);
        expect_target(ID("a"), KD_WIRE_OK);
        expect_target(ID("A-Z_a-z.0-9"), KD_WIRE_OK);
        expect_target(ID("..."), KD_WIRE_OK);
        expect_target(ID(".a"), KD_WIRE_OK);
        expect_target(ID(""), KD_WIRE_BAD_TARGET);
        expect_target(ID("."), KD_WIRE_BAD_TARGET);
        expect_target(ID(".."), KD_WIRE_BAD_TARGET);
        expect_target(ID("a b"), KD_WIRE_BAD_TARGET);
        expect_target(ID("a/b"), KD_WIRE_BAD_TARGET);
        expect_target(ID("a:b"), KD_WIRE_BAD_TARGET);
        expect_target(ID("a\0b"), KD_WIRE_BAD_TARGET);
        expect_target(ID("caf\xc3\xa9"), KD_WIRE_BAD_TARGET);
        expect_target(ID("orders\n"), KD_WIRE_BAD_TARGET);

        char name[251];
        memset(name, 'x', sizeof(name));
        expect_target(name, 249, KD_WIRE_OK);
        expect_target(name, 250, KD_WIRE_BAD_TARGET);
        expect_target(name, 251, KD_WIRE_BAD_TARGET);

        CU_ASSERT_FALSE(kd_wire_topic_valid(NULL, 3));
}

static void test_fire_at(void)
{
        char buf[32];

        expect_fire_at("0", KD_WIRE_OK); /* long past: fire at once */
        expect_fire_at("1", KD_WIRE_OK);
        expect_fire_at("1700000000000", KD_WIRE_OK);
        snprintf(buf, sizeof(buf), "%lld", (long long)LIMIT_MS);
        expect_fire_at(buf, KD_WIRE_OK);

        expect_fire_at("", KD_WIRE_BAD_FIRE_AT);
        expect_fire_at("-5", KD_WIRE_BAD_FIRE_AT);
        expect_fire_at("+5", KD_WIRE_BAD_FIRE_AT);
        expect_fire_at("12a", KD_WIRE_BAD_FIRE_AT);
        expect_fire_at("a12", KD_WIRE_BAD_FIRE_AT);
        expect_fire_at(" 12", KD_WIRE_BAD_FIRE_AT);
        expect_fire_at("12 ", KD_WIRE_BAD_FIRE_AT);
        expect_fire_at("1.5", KD_WIRE_BAD_FIRE_AT);
        expect_fire_at("1e12", KD_WIRE_BAD_FIRE_AT);
        expect_fire_at("0x10", KD_WIRE_BAD_FIRE_AT);
        expect_fire_at("99999999999999999999", KD_WIRE_BAD_FIRE_AT);
        expect_fire_at("9223372036854775808", KD_WIRE_BAD_FIRE_AT);
        /* Leading zeros are digits, beyond 19 characters too. */
        expect_fire_at("0001700000000000", KD_WIRE_OK);
        expect_fire_at("00000000000000000000001700000000000", KD_WIRE_OK);
        expect_fire_at("00000000000000000000000", KD_WIRE_OK);
        expect_fire_at("000000000009223372036854775808", KD_WIRE_BAD_FIRE_AT);

        /* Beyond now + 10 years + 1 day. */
        snprintf(buf, sizeof(buf), "%lld", (long long)(LIMIT_MS + 1));
        expect_fire_at(buf, KD_WIRE_ABSURD_FIRE_AT);
        snprintf(buf, sizeof(buf), "%lld",
                 (long long)(NOW_MS + 2 * KDELAY_MAX_DELAY_MS));
        expect_fire_at(buf, KD_WIRE_ABSURD_FIRE_AT);
        expect_fire_at("9223372036854775807", KD_WIRE_ABSURD_FIRE_AT);

        /* A fire-at header without a value. */
        fields_t f = good();
        f.fire_at = NULL;
        rd_kafka_headers_t *h = build(&f);
        rd_kafka_header_add(h, KDELAY_HDR_FIRE_AT, -1, NULL, 0);
        kd_wire_task_t task;
        CU_ASSERT_EQUAL(kd_wire_decode(h, NOW_MS, &task), KD_WIRE_BAD_FIRE_AT);
        rd_kafka_headers_destroy(h);
}

static void test_fire_at_relative_to_now(void)
{
        /* The bound moves with now_ms. */
        fields_t f = good();
        char buf[32];
        snprintf(buf, sizeof(buf), "%lld", (long long)(LIMIT_MS + 1));
        f.fire_at = buf;
        rd_kafka_headers_t *h = build(&f);
        kd_wire_task_t task;
        CU_ASSERT_EQUAL(kd_wire_decode(h, NOW_MS, &task),
                        KD_WIRE_ABSURD_FIRE_AT);
        CU_ASSERT_EQUAL(kd_wire_decode(h, NOW_MS + 1, &task), KD_WIRE_OK);
        CU_ASSERT_EQUAL(task.fire_at_ms, LIMIT_MS + 1);
        /* A clock at its extremes: the bound saturates, never overflows
         * (fuzz/regress/wire/wire-absurd-bound-overflows-at-int64-max-now). */
        CU_ASSERT_EQUAL(kd_wire_decode(h, INT64_MAX, &task), KD_WIRE_OK);
        CU_ASSERT_EQUAL(kd_wire_decode(h, INT64_MIN, &task),
                        KD_WIRE_ABSURD_FIRE_AT);
        rd_kafka_headers_destroy(h);
}

static void test_duplicates(void)
{
        static const char *const hdrs[] = {KDELAY_HDR_ID, KDELAY_HDR_TARGET,
                                           KDELAY_HDR_FIRE_AT,
                                           KDELAY_HDR_VERSION};
        static const char *const vals[] = {"task-1", "orders", "1700000060000",
                                           "1"};
        for (size_t i = 0; i < 4; i++) {
                fields_t f = good();
                rd_kafka_headers_t *h = build(&f);
                /* Even an identical repeat is a defect. */
                rd_kafka_header_add(h, hdrs[i], -1, vals[i], -1);
                kd_wire_task_t task;
                kd_wire_defect_t d = kd_wire_decode(h, NOW_MS, &task);
                if (d != KD_WIRE_DUP_HEADER)
                        fprintf(stderr, "\nduplicate %s: got %s\n", hdrs[i],
                                kd_wire_defect_str(d));
                CU_ASSERT_EQUAL(d, KD_WIRE_DUP_HEADER);
                rd_kafka_headers_destroy(h);
        }

        /* A different second id. */
        fields_t f = good();
        rd_kafka_headers_t *h = build(&f);
        rd_kafka_header_add(h, KDELAY_HDR_ID, -1, "task-2", -1);
        kd_wire_task_t task;
        CU_ASSERT_EQUAL(kd_wire_decode(h, NOW_MS, &task), KD_WIRE_DUP_HEADER);
        rd_kafka_headers_destroy(h);

        /* Repeated user headers are fine. */
        f = good();
        h = build(&f);
        rd_kafka_header_add(h, "trace", -1, "again", -1);
        CU_ASSERT_EQUAL(kd_wire_decode(h, NOW_MS, &task), KD_WIRE_OK);
        rd_kafka_headers_destroy(h);
}

static void test_defect_str(void)
{
        static const struct {
                kd_wire_defect_t d;
                const char *s;
        } names[] = {
            {KD_WIRE_OK, "ok"},
            {KD_WIRE_NO_VERSION, "missing-version"},
            {KD_WIRE_BAD_VERSION, "unknown-version"},
            {KD_WIRE_NO_ID, "missing-id"},
            {KD_WIRE_BAD_ID, "bad-id"},
            {KD_WIRE_NO_TARGET, "missing-target"},
            {KD_WIRE_BAD_TARGET, "bad-target"},
            {KD_WIRE_NO_FIRE_AT, "missing-fire-at"},
            {KD_WIRE_BAD_FIRE_AT, "bad-fire-at"},
            {KD_WIRE_ABSURD_FIRE_AT, "absurd-fire-at"},
            {KD_WIRE_DUP_HEADER, "duplicate-header"},
        };
        CU_ASSERT_EQUAL(sizeof(names) / sizeof(names[0]), KD_WIRE__COUNT);
        for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
                CU_ASSERT_STRING_EQUAL(kd_wire_defect_str(names[i].d),
                                       names[i].s);
        CU_ASSERT_STRING_EQUAL(kd_wire_defect_str(KD_WIRE__COUNT), "unknown");
        CU_ASSERT_STRING_EQUAL(kd_wire_defect_str((kd_wire_defect_t)-1),
                               "unknown");
}

static void test_user_header_valid(void)
{
        CU_ASSERT_TRUE(kd_wire_user_header_valid("trace"));
        CU_ASSERT_TRUE(kd_wire_user_header_valid("x"));
        CU_ASSERT_TRUE(kd_wire_user_header_valid("kdelay"));
        CU_ASSERT_TRUE(kd_wire_user_header_valid("kdelayx"));
        CU_ASSERT_TRUE(kd_wire_user_header_valid("my-kdelay-id"));
        CU_ASSERT_FALSE(kd_wire_user_header_valid("kdelay-x"));
        CU_ASSERT_FALSE(kd_wire_user_header_valid("kdelay-"));
        CU_ASSERT_FALSE(kd_wire_user_header_valid(KDELAY_HDR_ID));
        CU_ASSERT_FALSE(kd_wire_user_header_valid(KDELAY_HDR_TARGET));
        CU_ASSERT_FALSE(kd_wire_user_header_valid(KDELAY_HDR_FIRE_AT));
        CU_ASSERT_FALSE(kd_wire_user_header_valid(KDELAY_HDR_VERSION));
        CU_ASSERT_FALSE(kd_wire_user_header_valid(KDELAY_HDR_DEAD_REASON));
        CU_ASSERT_FALSE(kd_wire_user_header_valid(""));
        CU_ASSERT_FALSE(kd_wire_user_header_valid(NULL));
}

/* kd_wire_not_before on a record whose only kdelay-not-before is value
 * (NULL: a null value) says want, with *ms as_ms. */
static void expect_not_before(const char *value, int64_t now, kd_wire_nb_t want,
                              int64_t as_ms)
{
        rd_kafka_headers_t *h = rd_kafka_headers_new(1);
        int64_t ms = -1;
        rd_kafka_header_add(h, KDELAY_HDR_NOT_BEFORE, -1, value,
                            value ? -1 : 0);
        CU_ASSERT_EQUAL(kd_wire_not_before(h, now, &ms), want);
        CU_ASSERT_EQUAL(ms, as_ms);
        rd_kafka_headers_destroy(h);
}

/* kdelay-not-before (written by forwarders, checked like any input): the
 * last one; decimal epoch ms (leading zeros allowed) within 2^63 - 1, else
 * bad; beyond now + 10 years + 1 day, absurd (as fire-at). */
static void test_not_before(void)
{
        const int64_t now = 1764780000000LL;
        const int64_t horizon = now + KDELAY_MAX_DELAY_MS + 86400000LL;
        rd_kafka_headers_t *h = rd_kafka_headers_new(4);
        int64_t ms = -1;
        CU_ASSERT_EQUAL(kd_wire_not_before(NULL, now, &ms), KD_WIRE_NB_NONE);
        CU_ASSERT_EQUAL(ms, 0);
        CU_ASSERT_EQUAL(kd_wire_not_before(h, now, &ms), KD_WIRE_NB_NONE);
        rd_kafka_header_add(h, KDELAY_HDR_NOT_BEFORE, -1, "1764780000000", -1);
        rd_kafka_header_add(h, KDELAY_HDR_NOT_BEFORE, -1, "1764780000123", -1);
        CU_ASSERT_EQUAL(kd_wire_not_before(h, now, &ms), KD_WIRE_NB_OK);
        CU_ASSERT_EQUAL(ms, 1764780000123LL); /* the last one */
        rd_kafka_headers_destroy(h);
        expect_not_before("0001764780000123", now, KD_WIRE_NB_OK,
                          1764780000123LL);
        static const char *const bad[] = {
            "", "-5", "12a", " 1", "9223372036854775808", NULL};
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
                expect_not_before(bad[i], now, KD_WIRE_NB_BAD, 0);
        char at[24], past[24];
        snprintf(at, sizeof(at), "%lld", (long long)horizon);
        snprintf(past, sizeof(past), "%lld", (long long)horizon + 1);
        expect_not_before(at, now, KD_WIRE_NB_OK, horizon);
        const char *const absurd[] = {"999999999999999", "9223372036854775807",
                                      past};
        for (size_t i = 0; i < sizeof(absurd) / sizeof(absurd[0]); i++)
                expect_not_before(absurd[i], now, KD_WIRE_NB_ABSURD, 0);
}

static const kd_test_case_t cases[] = {
    KD_TEST(test_round_trip),
    KD_TEST(test_round_trip_user_headers),
    KD_TEST(test_round_trip_limits),
    KD_TEST(test_decode_good_with_user_headers),
    KD_TEST(test_no_headers),
    KD_TEST(test_version),
    KD_TEST(test_missing_fields),
    KD_TEST(test_id_length),
    KD_TEST(test_id_utf8),
    KD_TEST(test_target),
    KD_TEST(test_fire_at),
    KD_TEST(test_fire_at_relative_to_now),
    KD_TEST(test_duplicates),
    KD_TEST(test_defect_str),
    KD_TEST(test_user_header_valid),
    KD_TEST(test_not_before),
    KD_TEST_END,
};

int main(void)
{
        return kd_test_run("wire", cases, NULL, NULL);
}
