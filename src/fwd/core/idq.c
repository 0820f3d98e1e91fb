/* SPDX-License-Identifier: Apache-2.0 */
/* Batched id queue (kd_idq.h). */
#include "kd_idq.h"

#include <stdlib.h>
#include <string.h>

void kd_idq_clear(kd_idq_t *q)
{
        for (size_t i = 0; i < q->len; i++)
                free(q->ids[q->head + i]);
        free(q->ids);
        free(q->vals);
        memset(q, 0, sizeof(*q));
}

/* Room for one more entry at the end; -1 when out of memory. The taken
 * entries before head are reused once they are at least as many as the
 * live ones (each entry is moved at most once per doubling: amortised
 * O(1)), else the arrays double. */
static int grow(kd_idq_t *q)
{
        if (q->head + q->len < q->cap)
                return 0;
        if (q->head > 0 && q->head >= q->len) {
                memmove(q->ids, q->ids + q->head, q->len * sizeof(*q->ids));
                memmove(q->vals, q->vals + q->head, q->len * sizeof(*q->vals));
                q->head = 0;
                return 0;
        }
        size_t cap = q->cap ? q->cap * 2 : 256;
        char **v = realloc(q->ids, cap * sizeof(*v));
        if (v)
                q->ids = v;
        int64_t *w = realloc(q->vals, cap * sizeof(*w));
        if (w)
                q->vals = w;
        if (!v || !w)
                return -1;
        q->cap = cap;
        return 0;
}

int kd_idq_give(kd_idq_t *q, char *id, int64_t val)
{
        if (grow(q))
                return -1;
        q->ids[q->head + q->len] = id;
        q->vals[q->head + q->len++] = val;
        return 0;
}

int kd_idq_push(kd_idq_t *q, const char *id, int64_t val)
{
        char *copy = strdup(id);
        if (!copy)
                return -1;
        if (kd_idq_give(q, copy, val)) {
                free(copy);
                return -1;
        }
        return 0;
}

void kd_idq_take(kd_idq_t *q, size_t n, char **ids, int64_t *vals)
{
        memcpy(ids, q->ids + q->head, n * sizeof(*ids));
        memcpy(vals, q->vals + q->head, n * sizeof(*vals));
        q->head += n;
        q->len -= n;
        if (!q->len)
                q->head = 0;
}

int kd_idbatch_push(kd_idbatch_t *b, const char *id, int64_t val, int64_t aux)
{
        size_t n = strlen(id) + 1;
        if (b->used + n > b->buf_cap) {
                size_t cap = b->buf_cap ? b->buf_cap : 4096;
                while (cap < b->used + n)
                        cap *= 2;
                char *buf = realloc(b->buf, cap);
                if (!buf)
                        return -1;
                b->buf = buf;
                b->buf_cap = cap;
        }
        if (b->len == b->cap) {
                size_t cap = b->cap ? b->cap * 2 : 128;
                kd_idbatch_ent_t *e = realloc(b->ents, cap * sizeof(*e));
                if (!e)
                        return -1;
                b->ents = e;
                b->cap = cap;
        }
        memcpy(b->buf + b->used, id, n);
        b->ents[b->len++] = (kd_idbatch_ent_t){b->used, val, aux};
        b->used += n;
        return 0;
}

void kd_idbatch_free(kd_idbatch_t *b)
{
        free(b->buf);
        free(b->ents);
        memset(b, 0, sizeof(*b));
}

void kd_idbatch_reset(kd_idbatch_t *b)
{
        if (b->buf_cap + b->cap * sizeof(*b->ents) > KD_IDBATCH_KEEP_BYTES) {
                kd_idbatch_free(b);
                return;
        }
        b->used = b->len = 0;
}
