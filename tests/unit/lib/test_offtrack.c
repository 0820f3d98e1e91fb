/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for the per-partition offset tracker: the commit point is the
 * lowest offset not yet handled. */
#include <stdlib.h>
#include <string.h>

#include "kd_offtrack.h"
#include "kd_test.h"

static void test_empty_has_no_commit_point(void)
{
        kd_offtrack_t t;
        kd_offtrack_init(&t);
        CU_ASSERT_EQUAL(kd_offtrack_commit_point(&t), -1);
        CU_ASSERT_EQUAL(kd_offtrack_pending(&t), 0);
        CU_ASSERT_EQUAL(kd_offtrack_done(&t, 5), -1);
        kd_offtrack_clear(&t);
}

static void test_out_of_order_completion(void)
{
        kd_offtrack_t t;
        kd_offtrack_init(&t);
        for (int64_t o = 10; o < 15; o++)
                CU_ASSERT_EQUAL(kd_offtrack_add(&t, o), 0);
        CU_ASSERT_EQUAL(kd_offtrack_commit_point(&t), 10);
        CU_ASSERT_EQUAL(kd_offtrack_done(&t, 12), 0);
        CU_ASSERT_EQUAL(kd_offtrack_done(&t, 11), 0);
        /* 10 still held: nothing may be committed past it. */
        CU_ASSERT_EQUAL(kd_offtrack_commit_point(&t), 10);
        CU_ASSERT_EQUAL(kd_offtrack_pending(&t), 3);
        CU_ASSERT_EQUAL(kd_offtrack_done(&t, 10), 0);
        CU_ASSERT_EQUAL(kd_offtrack_commit_point(&t), 13);
        CU_ASSERT_EQUAL(kd_offtrack_done(&t, 14), 0);
        CU_ASSERT_EQUAL(kd_offtrack_commit_point(&t), 13);
        CU_ASSERT_EQUAL(kd_offtrack_done(&t, 13), 0);
        /* All done: the offset after the last one read. */
        CU_ASSERT_EQUAL(kd_offtrack_commit_point(&t), 15);
        CU_ASSERT_EQUAL(kd_offtrack_pending(&t), 0);
        kd_offtrack_clear(&t);
}

static void test_gaps_and_rejects(void)
{
        kd_offtrack_t t;
        kd_offtrack_init(&t);
        /* Gaps (compaction, transaction markers) are fine. */
        CU_ASSERT_EQUAL(kd_offtrack_add(&t, 100), 0);
        CU_ASSERT_EQUAL(kd_offtrack_add(&t, 103), 0);
        CU_ASSERT_EQUAL(kd_offtrack_add(&t, 110), 0);
        /* Going backwards or repeating is refused. */
        CU_ASSERT_EQUAL(kd_offtrack_add(&t, 110), -1);
        CU_ASSERT_EQUAL(kd_offtrack_add(&t, 50), -1);
        CU_ASSERT_EQUAL(kd_offtrack_add(&t, -1), -1);
        CU_ASSERT_EQUAL(kd_offtrack_done(&t, 101), -1); /* never read */
        CU_ASSERT_EQUAL(kd_offtrack_done(&t, 100), 0);
        CU_ASSERT_EQUAL(kd_offtrack_done(&t, 100), -1); /* already past */
        CU_ASSERT_EQUAL(kd_offtrack_commit_point(&t), 103);
        CU_ASSERT_EQUAL(kd_offtrack_done(&t, 110), 0);
        CU_ASSERT_EQUAL(kd_offtrack_commit_point(&t), 103);
        CU_ASSERT_EQUAL(kd_offtrack_done(&t, 103), 0);
        CU_ASSERT_EQUAL(kd_offtrack_commit_point(&t), 111);
        kd_offtrack_clear(&t);
}

/* Many records, completed in a shuffled order, through ring growth and
 * wrap-around: the commit point always equals the smallest undone one. */
static void test_shuffled_against_reference(void)
{
        enum { N = 50000 };
        static int64_t order[N];
        static unsigned char done[N];
        kd_offtrack_t t;
        kd_offtrack_init(&t);
        srand(11);
        for (int i = 0; i < N; i++) {
                CU_ASSERT_EQUAL_FATAL(kd_offtrack_add(&t, 1000 + 2 * i), 0);
                order[i] = i;
        }
        for (int i = N - 1; i > 0; i--) {
                int j = rand() % (i + 1);
                int64_t x = order[i];
                order[i] = order[j];
                order[j] = x;
        }
        int lowest = 0;
        for (int k = 0; k < N; k++) {
                int i = (int)order[k];
                CU_ASSERT_EQUAL_FATAL(kd_offtrack_done(&t, 1000 + 2 * i), 0);
                done[i] = 1;
                while (lowest < N && done[lowest])
                        lowest++;
                int64_t want =
                    lowest < N ? 1000 + 2 * lowest : 1000 + 2 * (N - 1) + 1;
                CU_ASSERT_EQUAL_FATAL(kd_offtrack_commit_point(&t), want);
                /* Keep reading while completing: exercises wrap-around. */
                if (k % 1000 == 0)
                        CU_ASSERT_EQUAL_FATAL(kd_offtrack_pending(&t),
                                              (size_t)(N - k - 1));
        }
        kd_offtrack_clear(&t);
}

/* A sliding window (read ahead, complete behind): the ring wraps around
 * many times without growing. */
static void test_sliding_window_wraps(void)
{
        kd_offtrack_t t;
        kd_offtrack_init(&t);
        for (int64_t o = 0; o < 100000; o++) {
                CU_ASSERT_EQUAL_FATAL(kd_offtrack_add(&t, o), 0);
                if (o >= 50) {
                        /* complete two behind, out of order */
                        if (o % 2 == 0) {
                                CU_ASSERT_EQUAL_FATAL(
                                    kd_offtrack_done(&t, o - 49), 0);
                                CU_ASSERT_EQUAL_FATAL(
                                    kd_offtrack_done(&t, o - 50), 0);
                                CU_ASSERT_EQUAL_FATAL(
                                    kd_offtrack_commit_point(&t), o - 48);
                        }
                }
        }
        CU_ASSERT(t.cap <= 128);
        kd_offtrack_clear(&t);
}

/* Counts runs of done entries in a reference array from index lo. */
static size_t ref_runs(const unsigned char *done, int lo, int n)
{
        size_t runs = 0;
        for (int i = lo; i < n; i++)
                if (done[i] && (i == lo || !done[i - 1]))
                        runs++;
        return runs;
}

/* Random completion with gaps between offsets: the run count is exact at
 * every step, and the encoded done set decodes to exactly the done offsets
 * above the commit point. */
static void test_runs_and_encoding_against_reference(void)
{
        enum { N = 3000 };
        static unsigned char done[N];
        kd_offtrack_t t;
        kd_offtrack_init(&t);
        srand(5);
        for (int i = 0; i < N; i++)
                CU_ASSERT_EQUAL_FATAL(kd_offtrack_add(&t, 7 + 3 * i), 0);
        int lowest = 0;
        char buf[65536];
        for (int k = 0; k < 2 * N; k++) {
                int i = rand() % N;
                CU_ASSERT_EQUAL_FATAL(kd_offtrack_done(&t, 7 + 3 * i),
                                      i < lowest ? -1 : 0);
                done[i] = 1;
                while (lowest < N && done[lowest])
                        lowest++;
                if (k % 97 != 0)
                        continue;
                const kd_offrange_t *none = NULL;
                size_t none_cnt = 0;
                int64_t cp = kd_offtrack_commit_after(&t, -1, &none, &none_cnt);
                CU_ASSERT_EQUAL_FATAL(
                    kd_offtrack_encode(&t, cp, NULL, 0, buf, sizeof(buf)), 0);
                kd_offrange_t *r;
                size_t cnt;
                CU_ASSERT_EQUAL_FATAL(
                    kd_doneset_decode(buf, strlen(buf), cp, &r, &cnt), 0);
                /* The runs form has one range per run (the bitmap cannot
                 * tell offsets never read, here every 2 of 3, from ones
                 * not done, and needs not: those never arrive). */
                if (!strncmp(buf, "kd1", 3))
                        CU_ASSERT_EQUAL_FATAL(cnt, ref_runs(done, lowest, N));
                /* Every offset above cp is in a range iff it is done. */
                size_t j = 0;
                for (int x = lowest; x < N; x++) {
                        int64_t o = 7 + 3 * x;
                        while (j < cnt && r[j].last < o)
                                j++;
                        int in = j < cnt && r[j].first <= o;
                        CU_ASSERT_EQUAL_FATAL(in, done[x]);
                }
                free(r);
        }
        kd_offtrack_clear(&t);
}

/* Encodes t (with tail) at its commit point and decodes it again. */
static size_t round_trip(const kd_offtrack_t *t, const kd_offrange_t *tail,
                         size_t tail_cnt, char *buf, size_t size,
                         kd_offrange_t **r)
{
        size_t cnt = 0;
        int64_t cp = kd_offtrack_commit_after(t, -1, &tail, &tail_cnt);
        CU_ASSERT_EQUAL_FATAL(
            kd_offtrack_encode(t, cp, tail, tail_cnt, buf, size), 0);
        CU_ASSERT_EQUAL_FATAL(kd_doneset_decode(buf, strlen(buf), cp, r, &cnt),
                              0);
        return cnt;
}

static void test_encoding_forms_tail_and_bad_text(void)
{
        kd_offtrack_t t;
        kd_offrange_t *r;
        char buf[4096];
        kd_offtrack_init(&t);
        /* Few runs over a long span: the runs form. */
        kd_offtrack_add(&t, 0);
        kd_offtrack_add(&t, 1000);
        kd_offtrack_add(&t, 1001);
        kd_offtrack_done(&t, 1000);
        kd_offtrack_done(&t, 1001);
        CU_ASSERT_EQUAL(round_trip(&t, NULL, 0, buf, sizeof(buf), &r), 1);
        CU_ASSERT_STRING_EQUAL(buf, "kd1;rs.1");
        CU_ASSERT(r[0].first == 1000 && r[0].last == 1001);
        free(r);
        /* Done records not read yet (the previous owner's) are kept. */
        kd_offrange_t tail[] = {{1005, 1007}, {1020, 1020}};
        CU_ASSERT_EQUAL(round_trip(&t, tail, 2, buf, sizeof(buf), &r), 3);
        CU_ASSERT(r[1].first == 1005 && r[1].last == 1007);
        CU_ASSERT(r[2].first == 1020 && r[2].last == 1020);
        free(r);
        kd_offtrack_clear(&t);

        /* Every other record done (fires in an order unrelated to the
         * offsets): 1,500 runs do not fit as runs, the bitmap does. */
        for (int64_t o = 0; o < 3001; o++)
                kd_offtrack_add(&t, o);
        for (int64_t o = 1; o < 3001; o += 2)
                kd_offtrack_done(&t, o);
        CU_ASSERT_EQUAL(round_trip(&t, NULL, 0, buf, sizeof(buf), &r), 1500);
        CU_ASSERT_NSTRING_EQUAL(buf, "kdb;", 4);
        CU_ASSERT(strlen(buf) < 4 + 3000 / 6 + 2);
        CU_ASSERT(r[0].first == 1 && r[1499].last == 2999);
        free(r);
        CU_ASSERT_EQUAL(kd_offtrack_encode(&t, 0, NULL, 0, buf, 100), -1);
        kd_offtrack_clear(&t);

        /* All read is done and the next offset begins a tail range: the
         * commit point moves past it instead of dropping it. */
        for (int64_t o = 0; o < 10; o++) {
                kd_offtrack_add(&t, o);
                kd_offtrack_done(&t, o);
        }
        kd_offrange_t tail2[] = {{10, 14}, {20, 20}};
        const kd_offrange_t *tp = tail2;
        size_t tc = 2;
        CU_ASSERT_EQUAL(kd_offtrack_commit_after(&t, -1, &tp, &tc), 15);
        CU_ASSERT_EQUAL(tc, 1);
        CU_ASSERT_EQUAL(tp->first, 20);
        kd_offtrack_clear(&t);
        /* Nothing read: the fallback commit point. */
        tp = tail2;
        tc = 2;
        CU_ASSERT_EQUAL(kd_offtrack_commit_after(&t, 3, &tp, &tc), 3);
        CU_ASSERT_EQUAL(tc, 2);
        tc = 0;
        CU_ASSERT_EQUAL(kd_offtrack_commit_after(&t, -1, &tp, &tc), -1);

        size_t cnt;
        static const char *const bad[] = {"kd2",
                                          "kd1;",
                                          "kd1;1",
                                          "kd1;1.",
                                          "kd1;0.1",
                                          "kd1;1.1;",
                                          "kd1;-1.1",
                                          "kd1;1.1!",
                                          "kd1;A.1",
                                          "x",
                                          "kd1;1.1.",
                                          "kd1;zzzzzzzzzzzzzzz.1",
                                          "kd1;1.zzzzzzzzzzzzz",
                                          "kdb;!",
                                          "kdb;AB=",
                                          "kdb"};
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                CU_ASSERT_EQUAL(
                    kd_doneset_decode(bad[i], strlen(bad[i]), 100, &r, &cnt),
                    -1);
                CU_ASSERT_PTR_NULL(r);
        }
        CU_ASSERT_EQUAL(kd_doneset_decode(NULL, 0, 5, &r, &cnt), 0);
        CU_ASSERT_EQUAL(cnt, 0);
        CU_ASSERT_EQUAL(kd_doneset_decode("kd1", 3, 5, &r, &cnt), 0);
        CU_ASSERT_EQUAL(cnt, 0);
        CU_ASSERT_EQUAL(kd_doneset_decode("kdb;", 4, 5, &r, &cnt), 0);
        CU_ASSERT_EQUAL(cnt, 0);
        CU_ASSERT_EQUAL(kd_doneset_decode("kdb;BA", 6, 5, &r, &cnt), 0);
        CU_ASSERT_EQUAL(cnt, 1); /* bit 0 of char 0: offset 6 */
        CU_ASSERT(cnt == 1 && r[0].first == 6 && r[0].last == 6);
        free(r);
}

int main(void)
{
        static const kd_test_case_t cases[] = {
            KD_TEST(test_empty_has_no_commit_point),
            KD_TEST(test_out_of_order_completion),
            KD_TEST(test_gaps_and_rejects),
            KD_TEST(test_shuffled_against_reference),
            KD_TEST(test_sliding_window_wraps),
            KD_TEST(test_runs_and_encoding_against_reference),
            KD_TEST(test_encoding_forms_tail_and_bad_text),
            KD_TEST_END};
        return kd_test_run("offtrack", cases, NULL, NULL);
}
