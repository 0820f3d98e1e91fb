/* SPDX-License-Identifier: Apache-2.0 */
/* The batched id queue (kd_idq.h): first in, first out through takes,
 * pushes and gives mixed in any order, with the arrays' room reused. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kd_idq.h"
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

/* A second value per entry (exactly_once's queues carry the token's seq
 * beside the lateness): entries pushed before the first kd_idq_push2
 * read 0; every one keeps its own through growth and reuse of the room. */
static void test_aux_values_follow_their_entries(void)
{
        kd_idq_t q = {0};
        CU_ASSERT_EQUAL(kd_idq_push(&q, "plain", 1), 0);
        long n = 0;
        for (; n < 1000; n++) {
                char id[32];
                snprintf(id, sizeof(id), "id%ld", n);
                CU_ASSERT_EQUAL_FATAL(kd_idq_push2(&q, id, n, 1000 + n), 0);
        }
        CU_ASSERT_EQUAL(q.len, 1001);
        CU_ASSERT_EQUAL(kd_idq_aux(&q, 0), 0);
        CU_ASSERT_EQUAL(kd_idq_val(&q, 0), 1);
        for (long i = 0; i < n; i++) {
                CU_ASSERT_EQUAL(kd_idq_val(&q, (size_t)i + 1), i);
                CU_ASSERT_EQUAL(kd_idq_aux(&q, (size_t)i + 1), 1000 + i);
        }
        /* Taken from the front, then room reused by pushes: the rest keep
         * theirs. */
        char *ids[600];
        int64_t vals[600];
        kd_idq_take(&q, 600, ids, vals);
        for (int i = 0; i < 600; i++)
                free(ids[i]);
        for (long i = 0; i < 700; i++, n++) {
                char id[32];
                snprintf(id, sizeof(id), "id%ld", n);
                CU_ASSERT_EQUAL_FATAL(kd_idq_push2(&q, id, n, 1000 + n), 0);
        }
        CU_ASSERT_EQUAL(q.len, 1101);
        for (size_t i = 0; i < q.len; i++) {
                long v = (long)kd_idq_val(&q, i);
                CU_ASSERT_EQUAL(kd_idq_aux(&q, i), 1000 + v);
        }
        kd_idq_clear(&q);
        CU_ASSERT_EQUAL(kd_idq_aux(&q, 0), 0); /* none: cleared */
}

int main(void)
{
        static const kd_test_case_t cases[] = {
            KD_TEST(test_first_in_first_out_whatever_the_mix),
            KD_TEST(test_a_given_id_goes_last),
            KD_TEST(test_aux_values_follow_their_entries), KD_TEST_END};
        return kd_test_run("idq", cases, NULL, NULL);
}
