/* SPDX-License-Identifier: Apache-2.0 */
/* Task ids: ULID layout, monotonicity, uniqueness across threads. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <kdelay/kdelay.h>

#include "kd_taskid.h"
#include "kd_test.h"
#include "kd_util.h"

#define ID_SIZE (KDELAY_ID_GEN_LEN + 1)

static const char b32[] = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";

static const uint8_t zero_rand[10] = {0};
static const uint8_t ones_rand[10] = {0xff, 0xff, 0xff, 0xff, 0xff,
                                      0xff, 0xff, 0xff, 0xff, 0xff};

/* A state before any id: every real time is later. */
static kd_taskid_state_t fresh_state(void)
{
        kd_taskid_state_t st;
        memset(&st, 0, sizeof(st));
        st.last_ms = -1;
        return st;
}

/* Value of base32 digits s[0..n), or -1 when a digit is not Crockford. */
static int64_t b32_value(const char *s, size_t n)
{
        int64_t v = 0;
        for (size_t i = 0; i < n; i++) {
                const char *p = s[i] ? strchr(b32, s[i]) : NULL;
                if (!p)
                        return -1;
                v = v * 32 + (p - b32);
        }
        return v;
}

/* The 48-bit time encoded in a ULID's first 10 characters. */
static int64_t id_time(const char *id)
{
        return b32_value(id, 10);
}

/* The 80 random bits of a ULID (last 16 characters) as 10 bytes. */
static void id_rand(const char *id, uint8_t out[10])
{
        /* Two halves of 40 bits = 8 digits each. */
        int64_t hi = b32_value(id + 10, 8);
        int64_t lo = b32_value(id + 18, 8);
        for (int i = 4; i >= 0; i--) {
                out[i] = (uint8_t)(hi & 0xff);
                out[5 + i] = (uint8_t)(lo & 0xff);
                hi >>= 8;
                lo >>= 8;
        }
}

static int is_ulid(const char *id)
{
        if (strlen(id) != KDELAY_ID_GEN_LEN)
                return 0;
        for (size_t i = 0; i < KDELAY_ID_GEN_LEN; i++)
                if (!id[i] || !strchr(b32, id[i]))
                        return 0;
        /* 26 digits hold 130 bits; the top digit carries only 3. */
        return id[0] <= '7';
}

static void next_ok(kd_taskid_state_t *st, int64_t now, const uint8_t r[10],
                    char *buf)
{
        memset(buf, '#', ID_SIZE);
        CU_ASSERT_EQUAL_FATAL(kd_taskid_next(st, now, r, buf, ID_SIZE),
                              KDELAY_OK);
        CU_ASSERT_TRUE(is_ulid(buf));
}

/* --- known vectors ---------------------------------------------------------
 */

static void test_vectors(void)
{
        static const struct {
                int64_t t;
                uint8_t r[10];
                const char *want;
        } v[] = {
            {0, {0}, "00000000000000000000000000"},
            {1, {0}, "00000000010000000000000000"},
            {31, {0}, "000000000Z0000000000000000"},
            {32, {0}, "00000000100000000000000000"},
            /* The ULID specification's time example. */
            {1469918176385,
             {0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef, 0x01, 0x23},
             "01ARYZ6S4104HMASW9NF6YY093"},
            {(1LL << 48) - 1,
             {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff},
             "7ZZZZZZZZZZZZZZZZZZZZZZZZZ"},
            {0, {0x80}, "0000000000G000000000000000"},
            {0, {0, 0, 0, 0, 0, 0, 0, 0, 0, 1}, "00000000000000000000000001"},
            {1000,
             {0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff},
             "00000000Z8000000000000007Z"},
        };
        for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
                kd_taskid_state_t st = fresh_state();
                char buf[ID_SIZE];
                next_ok(&st, v[i].t, v[i].r, buf);
                CU_ASSERT_STRING_EQUAL(buf, v[i].want);
                CU_ASSERT_EQUAL(st.last_ms, v[i].t);
                CU_ASSERT_EQUAL(memcmp(st.rand, v[i].r, 10), 0);
                /* And our decoder agrees with the encoder. */
                uint8_t r[10];
                CU_ASSERT_EQUAL(id_time(buf), v[i].t);
                id_rand(buf, r);
                CU_ASSERT_EQUAL(memcmp(r, v[i].r, 10), 0);
        }
}

static void test_time_prefix(void)
{
        /* Only the first 10 characters carry the time. */
        kd_taskid_state_t st = fresh_state();
        char buf[ID_SIZE];
        next_ok(&st, 1469918176385, ones_rand, buf);
        CU_ASSERT_EQUAL(strncmp(buf, "01ARYZ6S41", 10), 0);
        CU_ASSERT_STRING_EQUAL(buf + 10, "ZZZZZZZZZZZZZZZZ");
}

static void test_bad_args(void)
{
        kd_taskid_state_t st = fresh_state();
        char buf[ID_SIZE];
        CU_ASSERT_EQUAL(kd_taskid_next(&st, -1, zero_rand, buf, sizeof(buf)),
                        KDELAY_ERR_INVALID_ARG);
        CU_ASSERT_EQUAL(
            kd_taskid_next(&st, 1LL << 48, zero_rand, buf, sizeof(buf)),
            KDELAY_ERR_INVALID_ARG);
        CU_ASSERT_EQUAL(kd_taskid_next(&st, 5, zero_rand, buf, ID_SIZE - 1),
                        KDELAY_ERR_INVALID_ARG);
        /* The state is untouched by a rejected call. */
        CU_ASSERT_EQUAL(st.last_ms, -1);
        CU_ASSERT_EQUAL(memcmp(st.rand, zero_rand, 10), 0);

        CU_ASSERT_EQUAL(kd_taskid_generate(buf, ID_SIZE - 1),
                        KDELAY_ERR_INVALID_ARG);
}

/* --- monotonicity ------------------------------------------------------------
 */

static void test_same_ms_increments(void)
{
        const uint8_t r1[10] = {9, 8, 7, 6, 5, 4, 3, 2, 1, 0xfe};
        const uint8_t r2[10] = {0x55, 0x55, 0x55, 0x55, 0x55,
                                0x55, 0x55, 0x55, 0x55, 0x55};
        kd_taskid_state_t st = fresh_state();
        char a[ID_SIZE], b[ID_SIZE], c[ID_SIZE];
        uint8_t r[10];

        next_ok(&st, 1000, r1, a);
        next_ok(&st, 1000, r2, b); /* same ms: r2 is not used */
        next_ok(&st, 1000, r2, c);
        CU_ASSERT_TRUE(strcmp(a, b) < 0);
        CU_ASSERT_TRUE(strcmp(b, c) < 0);
        CU_ASSERT_EQUAL(id_time(b), 1000);
        CU_ASSERT_EQUAL(id_time(c), 1000);

        const uint8_t want_b[10] = {9, 8, 7, 6, 5, 4, 3, 2, 1, 0xff};
        const uint8_t want_c[10] = {9, 8, 7, 6, 5, 4, 3, 2, 2, 0x00};
        id_rand(b, r);
        CU_ASSERT_EQUAL(memcmp(r, want_b, 10), 0);
        id_rand(c, r); /* the carry crosses a byte */
        CU_ASSERT_EQUAL(memcmp(r, want_c, 10), 0);
        CU_ASSERT_EQUAL(strncmp(a, b, 24), 0);
}

static void test_clock_backwards(void)
{
        const uint8_t r1[10] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1};
        const uint8_t r2[10] = {0};
        kd_taskid_state_t st = fresh_state();
        char a[ID_SIZE], b[ID_SIZE], c[ID_SIZE], d[ID_SIZE];
        uint8_t r[10];

        next_ok(&st, 5000, r1, a);
        next_ok(&st, 4000, r2, b); /* clock stepped back 1 s */
        next_ok(&st, 0, r2, c);
        CU_ASSERT_TRUE(strcmp(a, b) < 0);
        CU_ASSERT_TRUE(strcmp(b, c) < 0);
        /* The time stays at the latest seen. */
        CU_ASSERT_EQUAL(id_time(b), 5000);
        CU_ASSERT_EQUAL(id_time(c), 5000);
        const uint8_t want_c[10] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 3};
        id_rand(c, r);
        CU_ASSERT_EQUAL(memcmp(r, want_c, 10), 0);

        /* When the clock moves forward again, fresh entropy is used. */
        next_ok(&st, 5001, r2, d);
        CU_ASSERT_TRUE(strcmp(c, d) < 0);
        CU_ASSERT_EQUAL(id_time(d), 5001);
        id_rand(d, r);
        CU_ASSERT_EQUAL(memcmp(r, r2, 10), 0);
}

static void test_new_ms_uses_fresh_rand(void)
{
        /* A later ms with smaller random bits still sorts later. */
        kd_taskid_state_t st = fresh_state();
        char a[ID_SIZE], b[ID_SIZE];
        next_ok(&st, 7000, ones_rand, a);
        next_ok(&st, 7001, zero_rand, b);
        CU_ASSERT_STRING_EQUAL(b + 10, "0000000000000000");
        CU_ASSERT_EQUAL(id_time(b), 7001);
        CU_ASSERT_TRUE(strcmp(a, b) < 0);
}

static void test_random_overflow_carries_into_time(void)
{
        const uint8_t r2[10] = {0x12, 0x34, 0x56, 0x78, 0x9a,
                                0xbc, 0xde, 0xf0, 0x11, 0x22};
        kd_taskid_state_t st = fresh_state();
        char a[ID_SIZE], b[ID_SIZE], c[ID_SIZE];
        uint8_t r[10];

        next_ok(&st, 5000, ones_rand, a);
        CU_ASSERT_STRING_EQUAL(a + 10, "ZZZZZZZZZZZZZZZZ");
        next_ok(&st, 5000, r2, b);
        CU_ASSERT_TRUE(strcmp(a, b) < 0);
        CU_ASSERT_EQUAL(id_time(b), 5001);
        id_rand(b, r);
        CU_ASSERT_EQUAL(memcmp(r, r2, 10), 0);
        CU_ASSERT_EQUAL(st.last_ms, 5001);

        /* The clock catching up with the borrowed ms keeps counting. */
        next_ok(&st, 5001, zero_rand, c);
        CU_ASSERT_TRUE(strcmp(b, c) < 0);
        CU_ASSERT_EQUAL(id_time(c), 5001);
}

static void test_sequence_strictly_increasing(void)
{
        /* Many ids within few ms, with a clock that jitters backwards. */
        kd_taskid_state_t st = fresh_state();
        char prev[ID_SIZE] = "", cur[ID_SIZE];
        uint8_t r[10];
        unsigned x = 12345;
        for (int i = 0; i < 20000; i++) {
                for (int k = 0; k < 10; k++) {
                        x = x * 1103515245u + 12345u;
                        r[k] = (uint8_t)(x >> 16);
                }
                int64_t now = 1700000000000LL + i / 100 - (i % 7 == 0 ? 3 : 0);
                CU_ASSERT_EQUAL_FATAL(
                    kd_taskid_next(&st, now, r, cur, sizeof(cur)), KDELAY_OK);
                if (strcmp(prev, cur) >= 0) {
                        CU_FAIL_FATAL("ids not strictly increasing");
                }
                memcpy(prev, cur, sizeof(cur));
        }
}

/* --- the process-wide generator ----------------------------------------------
 */

#define GEN_N 100000

static void test_generate(void)
{
        char(*ids)[ID_SIZE] = malloc((size_t)GEN_N * ID_SIZE);
        CU_ASSERT_PTR_NOT_NULL_FATAL(ids);
        int64_t before = kd_now_ms();
        for (int i = 0; i < GEN_N; i++) {
                memset(ids[i], '#', ID_SIZE);
                if (kd_taskid_generate(ids[i], ID_SIZE) != KDELAY_OK) {
                        free(ids);
                        CU_FAIL_FATAL("kd_taskid_generate failed");
                }
        }
        int64_t after = kd_now_ms();
        int bad_form = 0, not_increasing = 0;
        for (int i = 0; i < GEN_N; i++) {
                if (!is_ulid(ids[i]))
                        bad_form++;
                if (i && strcmp(ids[i - 1], ids[i]) >= 0)
                        not_increasing++;
        }
        CU_ASSERT_EQUAL(bad_form, 0);
        CU_ASSERT_EQUAL(not_increasing, 0);
        /* The time part is the wall clock (the random part cannot
         * realistically overflow within 100000 ids). */
        CU_ASSERT_TRUE(id_time(ids[0]) >= before);
        CU_ASSERT_TRUE(id_time(ids[GEN_N - 1]) <= after);
        /* No I, L, O or U ever. */
        for (int i = 0; i < GEN_N; i++)
                if (strpbrk(ids[i], "ILOUilou")) {
                        CU_FAIL("id with a letter outside Crockford base32");
                        break;
                }
        free(ids);
}

#define THR_N 20000

struct thr {
        char (*ids)[ID_SIZE];
        int failed;
};

static void *gen_thread(void *arg)
{
        struct thr *t = arg;
        for (int i = 0; i < THR_N; i++)
                if (kd_taskid_generate(t->ids[i], ID_SIZE) != KDELAY_OK)
                        t->failed++;
        return NULL;
}

static int cmp_id(const void *a, const void *b)
{
        return strcmp(a, b);
}

static void test_generate_threads(void)
{
        char(*ids)[ID_SIZE] = calloc(2 * THR_N, ID_SIZE);
        CU_ASSERT_PTR_NOT_NULL_FATAL(ids);
        struct thr t[2] = {{ids, 0}, {ids + THR_N, 0}};
        pthread_t th[2];
        for (int i = 0; i < 2; i++)
                CU_ASSERT_EQUAL_FATAL(
                    pthread_create(&th[i], NULL, gen_thread, &t[i]), 0);
        for (int i = 0; i < 2; i++)
                pthread_join(th[i], NULL);
        CU_ASSERT_EQUAL(t[0].failed, 0);
        CU_ASSERT_EQUAL(t[1].failed, 0);

        /* Each thread sees its own ids strictly increasing. */
        int not_increasing = 0;
        for (int k = 0; k < 2; k++)
                for (int i = 1; i < THR_N; i++)
                        if (strcmp(t[k].ids[i - 1], t[k].ids[i]) >= 0)
                                not_increasing++;
        CU_ASSERT_EQUAL(not_increasing, 0);

        /* And all 40000 are distinct. */
        qsort(ids, 2 * THR_N, ID_SIZE, cmp_id);
        int dups = 0, bad_form = 0;
        for (int i = 0; i < 2 * THR_N; i++) {
                if (!is_ulid(ids[i]))
                        bad_form++;
                if (i && strcmp(ids[i - 1], ids[i]) == 0)
                        dups++;
        }
        CU_ASSERT_EQUAL(bad_form, 0);
        CU_ASSERT_EQUAL(dups, 0);
        free(ids);
}

static const kd_test_case_t cases[] = {
    KD_TEST(test_vectors),
    KD_TEST(test_time_prefix),
    KD_TEST(test_bad_args),
    KD_TEST(test_same_ms_increments),
    KD_TEST(test_clock_backwards),
    KD_TEST(test_new_ms_uses_fresh_rand),
    KD_TEST(test_random_overflow_carries_into_time),
    KD_TEST(test_sequence_strictly_increasing),
    KD_TEST(test_generate),
    KD_TEST(test_generate_threads),
    KD_TEST_END,
};

int main(void)
{
        return kd_test_run("taskid", cases, NULL, NULL);
}
