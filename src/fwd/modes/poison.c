/* SPDX-License-Identifier: Apache-2.0 */
/* The records of aborted transactions (kd_poison.h). */
#include "kd_poison.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/kd_part.h"
#include "core/kd_perr.h"

static uint64_t fnv(uint64_t h, const void *buf, size_t len)
{
        const unsigned char *b = buf;
        for (size_t i = 0; i < len; i++)
                h = (h ^ b[i]) * 1099511628211ULL;
        return h;
}

uint64_t kd_poison_key(const kd_task_t *t, kd_task_state_t as)
{
        if (!t->part)
                return 0;
        uint64_t h =
            fnv(1469598103934665603ULL, t->part->topic, strlen(t->part->topic));
        int32_t partition = t->part->partition;
        int64_t offset = t->rec.offset;
        int kind = (int)as;
        h = fnv(h, &partition, sizeof(partition));
        h = fnv(h, &offset, sizeof(offset));
        h = fnv(h, &kind, sizeof(kind));
        return h ? h : 1;
}

static size_t bucket_of(uint64_t key)
{
        return (size_t)(key % KD_POISON_BUCKETS);
}

kd_poison_entry_t *kd_poison_find(kd_poison_t *p, uint64_t key)
{
        if (!key || p->used == 0) /* the usual case: nothing to look */
                return NULL;
        for (kd_poison_entry_t *e = p->bucket[bucket_of(key)]; e; e = e->chain)
                if (e->key == key)
                        return e;
        return NULL;
}

static void unlink_entry(kd_poison_t *p, kd_poison_entry_t *e)
{
        for (kd_poison_entry_t **pp = &p->bucket[bucket_of(e->key)]; *pp;
             pp = &(*pp)->chain)
                if (*pp == e) {
                        *pp = e->chain;
                        break;
                }
        e->key = 0;
        p->used--;
}

kd_poison_entry_t *kd_poison_get(kd_poison_t *p, uint64_t key)
{
        kd_poison_entry_t *e = kd_poison_find(p, key);
        if (e)
                return e;
        e = &p->ring[p->next];
        p->next = (p->next + 1) % KD_POISON_MAX;
        if (e->key) /* the oldest goes */
                unlink_entry(p, e);
        memset(e, 0, sizeof(*e));
        e->key = key;
        e->chain = p->bucket[bucket_of(key)];
        p->bucket[bucket_of(key)] = e;
        p->used++;
        return e;
}

/* Appends key to the growing array *v; -1 when out of memory. */
static int keys_push(uint64_t **v, size_t *len, size_t *cap, uint64_t key)
{
        if (*len == *cap) {
                size_t n = *cap ? *cap * 2 : 256;
                uint64_t *m = realloc(*v, n * sizeof(*m));
                if (!m)
                        return -1;
                *v = m;
                *cap = n;
        }
        (*v)[(*len)++] = key;
        return 0;
}

uint64_t kd_poison_where(const char *topic)
{
        uint64_t h = fnv(1469598103934665603ULL, topic, strlen(topic));
        return h ? h : 1;
}

int kd_poison_member(kd_poison_t *p, uint64_t key, uint64_t where)
{
        if (!key)
                return 0;
        if (p->members_len == p->members_cap) {
                /* where[] first: members_cap grows with members[]. */
                size_t n = p->members_cap ? p->members_cap * 2 : 256;
                uint64_t *w = realloc(p->where, n * sizeof(*w));
                if (!w)
                        return -1;
                p->where = w;
        }
        size_t i = p->members_len;
        if (keys_push(&p->members, &p->members_len, &p->members_cap, key))
                return -1;
        p->where[i] = where;
        return 0;
}

int kd_poison_blame(kd_poison_t *p, uint64_t key, int64_t likely)
{
        if (!key)
                return 0;
        if (p->likely_cap < p->blamed_len + 1) {
                size_t n = p->blamed_len * 2 + 256;
                int64_t *l = realloc(p->likely, n * sizeof(*l));
                if (!l) {
                        p->blamed_len = 0; /* then every member counts */
                        return -1;
                }
                p->likely = l;
                p->likely_cap = n;
        }
        p->likely[p->blamed_len] = likely;
        if (keys_push(&p->blamed, &p->blamed_len, &p->blamed_cap, key)) {
                p->blamed_len = 0;
                return -1;
        }
        return 0;
}

int64_t kd_poison_likely(const kd_task_t *t, rd_kafka_resp_err_t err)
{
        if (err == RD_KAFKA_RESP_ERR_INVALID_RECORD && !t->rec.key)
                return INT64_MAX;
        return (int64_t)(t->rec.key_len + t->rec.value_len);
}

void kd_poison_forgive(kd_poison_t *p, uint64_t group, uint64_t key)
{
        for (size_t i = 0; group && p->used > 0 && i < KD_POISON_MAX; i++) {
                kd_poison_entry_t *e = &p->ring[i];
                if (e->key && e->key != key && e->group == group &&
                    !e->solo_fails)
                        unlink_entry(p, e);
        }
}

void kd_poison_forgive_elsewhere(kd_poison_t *p, uint64_t group, uint64_t key,
                                 uint64_t where)
{
        for (size_t i = 0; group && p->used > 0 && i < KD_POISON_MAX; i++) {
                kd_poison_entry_t *e = &p->ring[i];
                if (e->key && e->key != key && e->group == group &&
                    e->where != where && !e->solo_fails)
                        unlink_entry(p, e);
        }
}

static void count(kd_poison_t *p, uint64_t key, rd_kafka_resp_err_t cause)
{
        kd_poison_entry_t *e = kd_poison_get(p, key);
        e->aborts++;
        e->err = cause;
        e->forgiven = 0;
}

/* The blamed records (a refused batch's) become one group, with the
 * likeliest culprit named to go alone first. */
static void name_group(kd_poison_t *p, int64_t now)
{
        uint64_t group = ++p->groups, first = 0;
        int64_t best = INT64_MIN;
        for (size_t i = 0; i < p->blamed_len; i++)
                if (p->likely[i] > best) {
                        best = p->likely[i];
                        first = p->blamed[i];
                }
        for (size_t i = 0; i < p->blamed_len; i++) {
                kd_poison_entry_t *e = kd_poison_find(p, p->blamed[i]);
                if (e) {
                        e->group = group;
                        e->first = first;
                        e->first_until = now + KD_POISON_FIRST_WAIT_MS;
                }
        }
}

static int cmp_u64(const void *a, const void *b)
{
        uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
        return x < y ? -1 : x > y;
}

/* The destination fewest members went to, in *rarest, kdelay's own
 * topics (0: the forwarder's ACLs on them are checked at its start) the
 * least likely; 0 when they all went to one (or out of memory: then no
 * group, each goes alone in turn). */
static int rarest_where(const kd_poison_t *p, uint64_t *rarest)
{
        size_t n = p->members_len;
        uint64_t *w = n > 1 ? malloc(n * sizeof(*w)) : NULL;
        if (!w)
                return 0;
        memcpy(w, p->where, n * sizeof(*w));
        qsort(w, n, sizeof(*w), cmp_u64);
        size_t best = SIZE_MAX, runs = 0;
        for (size_t i = 0, j; i < n; i = j) {
                for (j = i + 1; j < n && w[j] == w[i]; j++)
                        ;
                runs++;
                if (w[i] && j - i < best) {
                        best = j - i;
                        *rarest = w[i];
                }
        }
        free(w);
        return runs > 1 && best != SIZE_MAX;
}

/* A transaction refused as a whole by one of its destinations: its
 * members become one group, a member of the rarest destination first. */
static void name_target_group(kd_poison_t *p, int64_t now)
{
        uint64_t rarest = 0, first = 0;
        if (!rarest_where(p, &rarest))
                return;
        for (size_t i = 0; !first && i < p->members_len; i++)
                if (p->where[i] == rarest)
                        first = p->members[i];
        if (!first)
                return;
        uint64_t group = ++p->groups;
        for (size_t i = 0; i < p->members_len; i++) {
                kd_poison_entry_t *e = kd_poison_find(p, p->members[i]);
                if (e) {
                        e->group = group;
                        e->first = first;
                        e->first_until = now + KD_POISON_FIRST_WAIT_MS;
                        e->where = p->where[i];
                }
        }
}

void kd_poison_aborted(kd_poison_t *p, rd_kafka_resp_err_t cause, int64_t now)
{
        kd_perr_class_t c = kd_perr_class(cause);
        if (c != KD_PERR_CLUSTER && c != KD_PERR_PRODUCER) {
                const uint64_t *v = p->blamed_len ? p->blamed : p->members;
                size_t n = p->blamed_len ? p->blamed_len : p->members_len;
                for (size_t i = 0; i < n; i++)
                        count(p, v[i], cause);
                if (p->blamed_len)
                        name_group(p, now);
                else if (c == KD_PERR_TARGET)
                        name_target_group(p, now);
        }
        kd_poison_members_clear(p);
}

void kd_poison_members_clear(kd_poison_t *p)
{
        p->members_len = 0;
        p->blamed_len = 0;
}

void kd_poison_committed(kd_poison_t *p)
{
        for (size_t i = 0; p->used > 0 && i < p->members_len; i++) {
                kd_poison_entry_t *e = kd_poison_find(p, p->members[i]);
                if (e)
                        unlink_entry(p, e);
        }
        kd_poison_members_clear(p);
}

void kd_poison_destroy(kd_poison_t *p)
{
        free(p->members);
        free(p->where);
        p->where = NULL;
        free(p->blamed);
        free(p->likely);
        p->likely = NULL;
        p->likely_cap = 0;
        p->members = p->blamed = NULL;
        p->members_len = p->members_cap = 0;
        p->blamed_len = p->blamed_cap = 0;
}
