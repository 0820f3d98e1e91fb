/* SPDX-License-Identifier: Apache-2.0 */
/* The batched id queue (kd_idq.h): first in, first out through takes,
 * pushes and gives mixed in any order, with the arrays' room reused; and
 * the id batch, its ids inline and its room kept for the next batch. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/kd_idq.h"
#include "kd_test.h"

/* Takes n from q and checks they are ids next .. next+n-1 with values
 * 10 * id; frees them. */
static void take_check(kd_idq_t *q, size_t n, long *next)
{
        char *ids[512];
        int64_t vals[512];
        kd_idq_take(q, n, ids, vals);
        for (size_t i = 0; i < n; i++, (*next)++) {
                char want[32];
                snprintf(want, sizeof(want), "id%ld", *next);
                CU_ASSERT_STRING_EQUAL(ids[i], want);
                CU_ASSERT_EQUAL(vals[i], *next * 10);
                free(ids[i]);
        }
}

static void push_n(kd_idq_t *q, size_t n, long *pushed)
{
        for (size_t i = 0; i < n; i++, (*pushed)++) {
                char id[32];
                snprintf(id, sizeof(id), "id%ld", *pushed);
                CU_ASSERT_EQUAL_FATAL(kd_idq_push(q, id, *pushed * 10), 0);
        }
}

static void test_first_in_first_out_whatever_the_mix(void)
{
        kd_idq_t q = {0};
        long pushed = 0, next = 0;
        /* A drain: the queue grows faster than batches leave. */
        for (int round = 0; round < 200; round++) {
                push_n(&q, 700, &pushed);
                take_check(&q, 500, &next);
                CU_ASSERT_EQUAL(q.len, (size_t)(pushed - next));
        }
        size_t cap_at_peak = q.cap;
        /* It drains while pushes go on at a lower rate: the room taken is
         * reused, the arrays do not grow. */
        while (q.len >= 500) {
                take_check(&q, 500, &next);
                push_n(&q, 300, &pushed);
        }
        CU_ASSERT_EQUAL(q.cap, cap_at_peak);
        /* Entries read in place keep their order. */
        for (size_t i = 0; i < q.len; i++) {
                char want[32];
                snprintf(want, sizeof(want), "id%ld", next + (long)i);
                CU_ASSERT_STRING_EQUAL(kd_idq_id(&q, i), want);
                CU_ASSERT_EQUAL(kd_idq_val(&q, i), (next + (long)i) * 10);
        }
        take_check(&q, q.len, &next);
        CU_ASSERT_EQUAL(q.len, 0);
        CU_ASSERT_EQUAL(q.head, 0);
        CU_ASSERT_EQUAL(next, pushed);
        /* What is left when cleared is freed (ASan's leak check). */
        push_n(&q, 1000, &pushed);
        take_check(&q, 400, &next);
        kd_idq_clear(&q);
        CU_ASSERT_EQUAL(q.len, 0);
        CU_ASSERT_PTR_NULL(q.ids);
}

/* An id given back (a failed statement's) goes to the end. */
static void test_a_given_id_goes_last(void)
{
        kd_idq_t q = {0};
        long pushed = 0, next = 0;
        push_n(&q, 3, &pushed);
        char *ids[3];
        int64_t vals[3];
        kd_idq_take(&q, 1, ids, vals);
        CU_ASSERT_EQUAL(kd_idq_give(&q, ids[0], vals[0]), 0);
        CU_ASSERT_STRING_EQUAL(kd_idq_id(&q, 0), "id1");
        CU_ASSERT_STRING_EQUAL(kd_idq_id(&q, 2), "id0");
        next = 1;
        take_check(&q, 2, &next);
        next = 0;
        take_check(&q, 1, &next);
        kd_idq_clear(&q);
}

/* A batch (exactly_once's fires of one transaction): entries read back in
 * order with both values, whatever the ids' lengths; emptied, it keeps
 * its memory, so the next batch of the same size appends without an
 * allocation (the buffers stay where they are); one that grew past
 * KD_IDBATCH_KEEP_BYTES gives it back. */
static void test_a_batch_keeps_ids_inline_and_its_room(void)
{
        kd_idbatch_t b = {0};
        char id[64];
        for (int round = 0; round < 3; round++) {
                for (long i = 0; i < 5000; i++) {
                        snprintf(id, sizeof(id), "%0*ld", (int)(i % 40) + 1, i);
                        CU_ASSERT_EQUAL_FATAL(
                            kd_idbatch_push(&b, id, i, 1000 + i), 0);
                }
                CU_ASSERT_EQUAL(b.len, 5000);
                for (size_t i = 0; i < b.len; i++) {
                        snprintf(id, sizeof(id), "%0*ld", (int)(i % 40) + 1,
                                 (long)i);
                        CU_ASSERT_STRING_EQUAL(kd_idbatch_id(&b, i), id);
                        CU_ASSERT_EQUAL(kd_idbatch_val(&b, i), (int64_t)i);
                        CU_ASSERT_EQUAL(kd_idbatch_aux(&b, i),
                                        1000 + (int64_t)i);
                }
                static char *buf;
                static kd_idbatch_ent_t *ents;
                if (round > 0) { /* the same memory, grown no further */
                        CU_ASSERT_PTR_EQUAL(b.buf, buf);
                        CU_ASSERT_PTR_EQUAL(b.ents, ents);
                }
                buf = b.buf;
                ents = b.ents;
                kd_idbatch_reset(&b);
                CU_ASSERT_EQUAL(b.len, 0);
                CU_ASSERT_EQUAL(b.used, 0);
                CU_ASSERT_PTR_EQUAL(b.buf, buf);
        }
        /* A transaction far larger than usual: its memory goes. */
        for (long i = 0; i < 100000; i++) {
                snprintf(id, sizeof(id), "01JTESTTASKID%013ld", i);
                CU_ASSERT_EQUAL_FATAL(kd_idbatch_push(&b, id, i, i), 0);
        }
        CU_ASSERT_STRING_EQUAL(kd_idbatch_id(&b, 99999),
                               "01JTESTTASKID0000000099999");
        kd_idbatch_reset(&b);
        CU_ASSERT_PTR_NULL(b.buf);
        CU_ASSERT_PTR_NULL(b.ents);
        CU_ASSERT_EQUAL(kd_idbatch_push(&b, "again", 1, 2), 0);
        CU_ASSERT_STRING_EQUAL(kd_idbatch_id(&b, 0), "again");
        kd_idbatch_free(&b);
        CU_ASSERT_EQUAL(b.len, 0);
        CU_ASSERT_PTR_NULL(b.buf);
}

int main(void)
{
        static const kd_test_case_t cases[] = {
            KD_TEST(test_first_in_first_out_whatever_the_mix),
            KD_TEST(test_a_given_id_goes_last),
            KD_TEST(test_a_batch_keeps_ids_inline_and_its_room), KD_TEST_END};
        return kd_test_run("idq", cases, NULL, NULL);
}
