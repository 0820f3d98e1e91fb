/* SPDX-License-Identifier: Apache-2.0 */
/* A binary min-heap of timers ordered by (key, insertion order). */
#include "kd_heap.h"

#include <stdlib.h>

void kd_heap_init(kd_heap_t *h)
{
        h->v = NULL;
        h->len = h->cap = 0;
        h->next_seq = 0;
}

void kd_heap_clear(kd_heap_t *h)
{
        for (size_t i = 0; i < h->len; i++)
                h->v[i]->slot = SIZE_MAX;
        free(h->v);
        kd_heap_init(h);
}

void kd_heap_node_init(kd_heap_node_t *n)
{
        n->key = 0;
        n->seq = 0;
        n->slot = SIZE_MAX;
}

int kd_heap_node_queued(const kd_heap_node_t *n)
{
        return n->slot != SIZE_MAX;
}

static int less(const kd_heap_node_t *a, const kd_heap_node_t *b)
{
        return a->key < b->key || (a->key == b->key && a->seq < b->seq);
}

static void set(kd_heap_t *h, size_t i, kd_heap_node_t *n)
{
        h->v[i] = n;
        n->slot = i;
}

static void sift_up(kd_heap_t *h, size_t i)
{
        kd_heap_node_t *n = h->v[i];
        while (i > 0) {
                size_t parent = (i - 1) / 2;
                if (!less(n, h->v[parent]))
                        break;
                set(h, i, h->v[parent]);
                i = parent;
        }
        set(h, i, n);
}

static void sift_down(kd_heap_t *h, size_t i)
{
        kd_heap_node_t *n = h->v[i];
        for (;;) {
                size_t l = 2 * i + 1, r = l + 1, m = i;
                const kd_heap_node_t *best = n;
                if (l < h->len && less(h->v[l], best)) {
                        m = l;
                        best = h->v[l];
                }
                if (r < h->len && less(h->v[r], best))
                        m = r;
                if (m == i)
                        break;
                set(h, i, h->v[m]);
                i = m;
        }
        set(h, i, n);
}

int kd_heap_reserve(kd_heap_t *h, size_t n)
{
        if (n <= h->cap)
                return 0;
        size_t cap = h->cap ? h->cap : 64;
        while (cap < n)
                cap *= 2;
        kd_heap_node_t **v = realloc(h->v, cap * sizeof(*v));
        if (!v)
                return -1;
        h->v = v;
        h->cap = cap;
        return 0;
}

int kd_heap_push(kd_heap_t *h, kd_heap_node_t *n, int64_t key)
{
        if (h->len == h->cap && kd_heap_reserve(h, h->len + 1))
                return -1;
        n->key = key;
        n->seq = h->next_seq++;
        set(h, h->len++, n);
        sift_up(h, n->slot);
        return 0;
}

kd_heap_node_t *kd_heap_peek(const kd_heap_t *h)
{
        return h->len ? h->v[0] : NULL;
}

void kd_heap_remove(kd_heap_t *h, kd_heap_node_t *n)
{
        size_t i = n->slot;
        kd_heap_node_t *last = h->v[--h->len];
        n->slot = SIZE_MAX;
        if (i == h->len)
                return;
        set(h, i, last);
        if (i > 0 && less(last, h->v[(i - 1) / 2]))
                sift_up(h, i);
        else
                sift_down(h, i);
}

kd_heap_node_t *kd_heap_pop(kd_heap_t *h)
{
        kd_heap_node_t *n = kd_heap_peek(h);
        if (n)
                kd_heap_remove(h, n);
        return n;
}
