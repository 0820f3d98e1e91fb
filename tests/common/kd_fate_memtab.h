/* SPDX-License-Identifier: Apache-2.0 */
/* The rows of the in-memory fate store (fate_mem.c): a hash table of
 * kdelay_fate rows keyed by task id bytes, chained. Not thread-safe: the
 * store's lock guards it. */
#ifndef KD_FATE_MEMTAB_H
#define KD_FATE_MEMTAB_H

#include <stddef.h>
#include <stdint.h>

#include "kd_fate.h"

/* One row, the columns of deploy/mysql/001_fate.sql. */
typedef struct kd_memrow {
        struct kd_memrow *next; /* owned by the table: the bucket's next */
        kdelay_fate_t fate;
        int has_fire_at;          /* 0: fire_at_ms is NULL */
        int has_owner;            /* 0: owner is NULL */
        int has_lease;            /* 0: lease_until is NULL */
        int64_t lease_until_mono; /* the store's clock: kd_mono_ms() */
        int64_t fire_at_ms;
        int64_t decided_at_ms;
        int64_t updated_at_ms;
        size_t id_len;
        char id[KDELAY_ID_MAX];
        char owner[KD_FATE_OWNER_MAX + 1];        /* NUL-terminated */
        char dead_reason[KD_FATE_REASON_MAX + 1]; /* "" = NULL */
        char src_topic[256]; /* "" = NULL: the source columns */
        int32_t src_partition;
        int64_t src_offset;
        int64_t cancelled_at_ms; /* kdelay_unclaimed's; -1 = NULL */
} kd_memrow_t;

typedef struct kd_memtab {
        kd_memrow_t **buckets; /* owned, with every row in them */
        size_t nbuckets;       /* a power of two */
        size_t count;
} kd_memtab_t;

/* An empty table; KDELAY_ERR_NO_MEMORY when its buckets cannot be had. */
kdelay_err_t kd_memtab_init(kd_memtab_t *t);

/* Frees every row and the buckets. */
void kd_memtab_clear(kd_memtab_t *t);

/* A zeroed row of id (len <= KDELAY_ID_MAX) in no table, or NULL when out
 * of memory. The caller owns it until kd_memtab_link. */
kd_memrow_t *kd_memtab_row_new(const char *id, size_t len);

/* The row of id, or NULL. Borrowed from t. */
kd_memrow_t *kd_memtab_find(const kd_memtab_t *t, const char *id, size_t len);

/* Adds row (taken), whose id t does not hold yet. Never fails: when the
 * buckets cannot grow, chains only get longer. */
void kd_memtab_link(kd_memtab_t *t, kd_memrow_t *row);

/* Deletes the row of id, if any. */
void kd_memtab_delete(kd_memtab_t *t, const char *id, size_t len);

/* Calls fn(row, arg) on every row, in no particular order. */
void kd_memtab_each(const kd_memtab_t *t,
                    void (*fn)(const kd_memrow_t *row, void *arg), void *arg);

/* Deletes at most max rows for which keep(row, arg) is 0; returns how
 * many it deleted. */
size_t kd_memtab_prune(kd_memtab_t *t,
                       int (*keep)(const kd_memrow_t *row, const void *arg),
                       const void *arg, size_t max);

#endif
