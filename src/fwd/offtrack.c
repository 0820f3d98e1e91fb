/* Per-partition offset tracker: the lowest offset not yet fully handled. */
#include "kd_offtrack.h"

#include <stdlib.h>
#include <string.h>

void kd_offtrack_init(kd_offtrack_t *t)
{
        memset(t, 0, sizeof(*t));
        t->next = -1;
        t->committed = -1;
}

void kd_offtrack_clear(kd_offtrack_t *t)
{
        free(t->off);
        free(t->done);
        kd_offtrack_init(t);
}

/* Drops done records from the front. */
static void advance(kd_offtrack_t *t)
{
        while (t->len > 0 && t->done[t->head]) {
                t->head = (t->head + 1) % t->cap;
                t->len--;
        }
}

static int grow(kd_offtrack_t *t)
{
        size_t cap = t->cap ? t->cap * 2 : 64;
        int64_t *off = malloc(cap * sizeof(*off));
        unsigned char *done = malloc(cap);
        if (!off || !done) {
                free(off);
                free(done);
                return -1;
        }
        for (size_t i = 0; i < t->len; i++) {
                off[i] = t->off[(t->head + i) % t->cap];
                done[i] = t->done[(t->head + i) % t->cap];
        }
        free(t->off);
        free(t->done);
        t->off = off;
        t->done = done;
        t->head = 0;
        t->cap = cap;
        return 0;
}

int kd_offtrack_add(kd_offtrack_t *t, int64_t offset)
{
        if (offset < 0 || (t->next >= 0 && offset < t->next))
                return -1;
        if (t->len == t->cap && grow(t))
                return -1;
        size_t i = (t->head + t->len) % t->cap;
        t->off[i] = offset;
        t->done[i] = 0;
        t->len++;
        t->next = offset + 1;
        return 0;
}

int kd_offtrack_done(kd_offtrack_t *t, int64_t offset)
{
        /* Offsets in the ring are increasing: binary search. */
        size_t lo = 0, hi = t->len;
        while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;
                int64_t o = t->off[(t->head + mid) % t->cap];
                if (o < offset)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        if (lo == t->len || t->off[(t->head + lo) % t->cap] != offset)
                return -1;
        t->done[(t->head + lo) % t->cap] = 1;
        advance(t);
        return 0;
}

int64_t kd_offtrack_commit_point(const kd_offtrack_t *t)
{
        if (t->len > 0)
                return t->off[t->head];
        return t->next;
}

size_t kd_offtrack_pending(const kd_offtrack_t *t)
{
        size_t n = 0;
        for (size_t i = 0; i < t->len; i++)
                n += !t->done[(t->head + i) % t->cap];
        return n;
}
