/* SPDX-License-Identifier: Apache-2.0 */
/* A binary min-heap of timers: elements ordered by (key, seq), where seq is
 * the insertion order, so equal keys pop first-in first-out. Each element
 * embeds a kd_heap_node_t, which records its slot so it can be removed or
 * re-keyed in O(log n). Not thread-safe. */
#ifndef KD_HEAP_H
#define KD_HEAP_H

#include <stddef.h>
#include <stdint.h>

typedef struct kd_heap_node {
        int64_t key;  /* due time, epoch ms */
        uint64_t seq; /* tie-breaker, set on insert */
        size_t slot;  /* index in the heap; SIZE_MAX when not in it */
} kd_heap_node_t;

typedef struct kd_heap {
        kd_heap_node_t **v; /* owned array of borrowed nodes */
        size_t len, cap;
        uint64_t next_seq;
} kd_heap_t;

void kd_heap_init(kd_heap_t *h);
/* Frees the array; the nodes are the caller's. */
void kd_heap_clear(kd_heap_t *h);

/* A node not yet in any heap. */
void kd_heap_node_init(kd_heap_node_t *n);
int kd_heap_node_queued(const kd_heap_node_t *n);

/* Grows the array to hold at least n nodes; -1 when out of memory. */
int kd_heap_reserve(kd_heap_t *h, size_t n);

/* Inserts n with key; -1 when out of memory (n unchanged). */
int kd_heap_push(kd_heap_t *h, kd_heap_node_t *n, int64_t key);

/* The smallest node, or NULL. */
kd_heap_node_t *kd_heap_peek(const kd_heap_t *h);

/* Removes and returns the smallest node, or NULL. */
kd_heap_node_t *kd_heap_pop(kd_heap_t *h);

/* Removes n (which must be in h). */
void kd_heap_remove(kd_heap_t *h, kd_heap_node_t *n);

#endif
