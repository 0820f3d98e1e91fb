/* SPDX-License-Identifier: Apache-2.0 */
/* The in-memory fate store's rows: a chained hash table keyed by task id
 * bytes (FNV-1a), doubling its buckets at one row per bucket. */
#include "kd_fate_memtab.h"

#include <stdlib.h>
#include <string.h>

enum { KD_MEMTAB_MIN_BUCKETS = 64 };

static uint64_t hash(const char *id, size_t len)
{
        uint64_t h = 14695981039346656037ULL;
        for (size_t i = 0; i < len; i++) {
                h ^= (unsigned char)id[i];
                h *= 1099511628211ULL;
        }
        return h;
}

static kd_memrow_t **bucket(const kd_memtab_t *t, const char *id, size_t len)
{
        return &t->buckets[hash(id, len) & (t->nbuckets - 1)];
}

kdelay_err_t kd_memtab_init(kd_memtab_t *t)
{
        memset(t, 0, sizeof(*t));
        t->buckets = calloc(KD_MEMTAB_MIN_BUCKETS, sizeof(*t->buckets));
        if (!t->buckets)
                return KDELAY_ERR_NO_MEMORY;
        t->nbuckets = KD_MEMTAB_MIN_BUCKETS;
        return KDELAY_OK;
}

void kd_memtab_clear(kd_memtab_t *t)
{
        for (size_t b = 0; b < t->nbuckets; b++) {
                kd_memrow_t *r = t->buckets[b];
                while (r) {
                        kd_memrow_t *next = r->next;
                        free(r);
                        r = next;
                }
        }
        free(t->buckets);
        memset(t, 0, sizeof(*t));
}

kd_memrow_t *kd_memtab_row_new(const char *id, size_t len)
{
        kd_memrow_t *r = calloc(1, sizeof(*r));
        if (!r)
                return NULL;
        memcpy(r->id, id, len);
        r->id_len = len;
        return r;
}

kd_memrow_t *kd_memtab_find(const kd_memtab_t *t, const char *id, size_t len)
{
        for (kd_memrow_t *r = *bucket(t, id, len); r; r = r->next)
                if (r->id_len == len && !memcmp(r->id, id, len))
                        return r;
        return NULL;
}

/* Doubles the buckets; on failure keeps the old ones (still correct). */
static void grow(kd_memtab_t *t)
{
        size_t nb = t->nbuckets * 2;
        kd_memrow_t **nbk = calloc(nb, sizeof(*nbk));
        if (!nbk)
                return;
        for (size_t b = 0; b < t->nbuckets; b++) {
                kd_memrow_t *r = t->buckets[b];
                while (r) {
                        kd_memrow_t *next = r->next;
                        kd_memrow_t **to =
                            &nbk[hash(r->id, r->id_len) & (nb - 1)];
                        r->next = *to;
                        *to = r;
                        r = next;
                }
        }
        free(t->buckets);
        t->buckets = nbk;
        t->nbuckets = nb;
}

void kd_memtab_link(kd_memtab_t *t, kd_memrow_t *row)
{
        if (t->count >= t->nbuckets)
                grow(t);
        kd_memrow_t **b = bucket(t, row->id, row->id_len);
        row->next = *b;
        *b = row;
        t->count++;
}

void kd_memtab_delete(kd_memtab_t *t, const char *id, size_t len)
{
        for (kd_memrow_t **p = bucket(t, id, len); *p; p = &(*p)->next) {
                kd_memrow_t *r = *p;
                if (r->id_len == len && !memcmp(r->id, id, len)) {
                        *p = r->next;
                        free(r);
                        t->count--;
                        return;
                }
        }
}

size_t kd_memtab_prune(kd_memtab_t *t,
                       int (*keep)(const kd_memrow_t *row, const void *arg),
                       const void *arg, size_t max)
{
        size_t deleted = 0;
        for (size_t b = 0; b < t->nbuckets && deleted < max; b++) {
                kd_memrow_t **p = &t->buckets[b];
                while (*p && deleted < max) {
                        kd_memrow_t *r = *p;
                        if (keep(r, arg)) {
                                p = &r->next;
                                continue;
                        }
                        *p = r->next;
                        free(r);
                        t->count--;
                        deleted++;
                }
        }
        return deleted;
}

void kd_memtab_each(const kd_memtab_t *t,
                    void (*fn)(const kd_memrow_t *row, void *arg), void *arg)
{
        for (size_t b = 0; b < t->nbuckets; b++)
                for (const kd_memrow_t *r = t->buckets[b]; r; r = r->next)
                        fn(r, arg);
}
