/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for the forwarder's timer heap. */
#include <stdint.h>
#include <stdlib.h>

#include "core/kd_heap.h"
#include "kd_test.h"

typedef struct item {
        kd_heap_node_t node;
        int id;
} item_t;

static void test_pops_in_key_order_fifo_on_ties(void)
{
        kd_heap_t h;
        item_t it[6] = {{.id = 0}, {.id = 1}, {.id = 2},
                        {.id = 3}, {.id = 4}, {.id = 5}};
        int64_t keys[6] = {50, 10, 30, 10, 50, 20};
        kd_heap_init(&h);
        CU_ASSERT_PTR_NULL(kd_heap_peek(&h));
        CU_ASSERT_PTR_NULL(kd_heap_pop(&h));
        for (int i = 0; i < 6; i++) {
                kd_heap_node_init(&it[i].node);
                CU_ASSERT_FALSE(kd_heap_node_queued(&it[i].node));
                CU_ASSERT_EQUAL(kd_heap_push(&h, &it[i].node, keys[i]), 0);
                CU_ASSERT_TRUE(kd_heap_node_queued(&it[i].node));
        }
        /* Equal keys come out in insertion order. */
        int want[6] = {1, 3, 5, 2, 0, 4};
        for (int i = 0; i < 6; i++) {
                item_t *x = (item_t *)kd_heap_pop(&h);
                CU_ASSERT_PTR_NOT_NULL_FATAL(x);
                CU_ASSERT_EQUAL(x->id, want[i]);
                CU_ASSERT_FALSE(kd_heap_node_queued(&x->node));
        }
        CU_ASSERT_PTR_NULL(kd_heap_pop(&h));
        kd_heap_clear(&h);
}

static void test_remove_and_rekey(void)
{
        kd_heap_t h;
        item_t it[5];
        kd_heap_init(&h);
        for (int i = 0; i < 5; i++) {
                it[i].id = i;
                kd_heap_node_init(&it[i].node);
                kd_heap_push(&h, &it[i].node, 100 - i * 10); /* 100..60 */
        }
        kd_heap_remove(&h, &it[4].node); /* the smallest */
        kd_heap_remove(&h, &it[1].node); /* one in the middle */
        CU_ASSERT_FALSE(kd_heap_node_queued(&it[4].node));
        /* Re-key: remove and push again with a new due time. */
        kd_heap_remove(&h, &it[0].node);
        kd_heap_push(&h, &it[0].node, 5);
        int want[3] = {0, 3, 2};
        for (int i = 0; i < 3; i++)
                CU_ASSERT_EQUAL(((item_t *)kd_heap_pop(&h))->id, want[i]);
        CU_ASSERT_PTR_NULL(kd_heap_peek(&h));
        kd_heap_clear(&h);
}

static int cmp(const void *a, const void *b)
{
        int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
        return x < y ? -1 : x > y;
}

/* Random pushes and removals against a sorted reference. */
static void test_random_against_sorted(void)
{
        enum { N = 20000 };
        static item_t it[N];
        static int64_t ref[N];
        kd_heap_t h;
        size_t nref = 0;
        kd_heap_init(&h);
        srand(7);
        for (int i = 0; i < N; i++) {
                it[i].id = i;
                kd_heap_node_init(&it[i].node);
                CU_ASSERT_EQUAL_FATAL(
                    kd_heap_push(&h, &it[i].node, rand() % 1000), 0);
        }
        /* Remove every third node. */
        for (int i = 0; i < N; i += 3)
                kd_heap_remove(&h, &it[i].node);
        for (int i = 0; i < N; i++)
                if (i % 3)
                        ref[nref++] = it[i].node.key;
        qsort(ref, nref, sizeof(ref[0]), cmp);
        for (size_t i = 0; i < nref; i++) {
                kd_heap_node_t *n = kd_heap_pop(&h);
                CU_ASSERT_PTR_NOT_NULL_FATAL(n);
                CU_ASSERT_EQUAL_FATAL(n->key, ref[i]);
        }
        CU_ASSERT_PTR_NULL(kd_heap_pop(&h));
        kd_heap_clear(&h);
}

int main(void)
{
        static const kd_test_case_t cases[] = {
            KD_TEST(test_pops_in_key_order_fifo_on_ties),
            KD_TEST(test_remove_and_rekey), KD_TEST(test_random_against_sorted),
            KD_TEST_END};
        return kd_test_run("heap", cases, NULL, NULL);
}
