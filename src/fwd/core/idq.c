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
        free(q->aux);
        memset(q, 0, sizeof(*q));
}

/* Room for one more entry at the end (with its aux when want_aux); -1
 * when out of memory. The taken entries before head are reused once they
 * are at least as many as the live ones (each entry is moved at most once
 * per doubling: amortised O(1)), else the arrays double. */
static int grow(kd_idq_t *q, int want_aux)
{
        if (want_aux && !q->aux && q->cap) {
                if (!(q->aux = calloc(q->cap, sizeof(*q->aux))))
                        return -1;
        }
        if (q->head + q->len < q->cap)
                return 0;
        if (q->head > 0 && q->head >= q->len) {
                memmove(q->ids, q->ids + q->head, q->len * sizeof(*q->ids));
                memmove(q->vals, q->vals + q->head, q->len * sizeof(*q->vals));
                if (q->aux)
                        memmove(q->aux, q->aux + q->head,
                                q->len * sizeof(*q->aux));
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
        int64_t *a =
            q->aux || want_aux ? realloc(q->aux, cap * sizeof(*a)) : NULL;
        if (a) {
                if (!q->aux) /* the first: entries before have none */
                        memset(a, 0, q->cap * sizeof(*a));
                q->aux = a;
        }
        if (!v || !w || ((q->aux || want_aux) && !a))
                return -1;
        q->cap = cap;
        return 0;
}

/* Appends id, val and aux (when the queue has aux values). */
static int give(kd_idq_t *q, char *id, int64_t val, int want_aux, int64_t aux)
{
        if (grow(q, want_aux))
                return -1;
        if (q->aux)
                q->aux[q->head + q->len] = aux;
        q->ids[q->head + q->len] = id;
        q->vals[q->head + q->len++] = val;
        return 0;
}

int kd_idq_give(kd_idq_t *q, char *id, int64_t val)
{
        return give(q, id, val, 0, 0);
}

int kd_idq_push2(kd_idq_t *q, const char *id, int64_t val, int64_t aux)
{
        char *copy = strdup(id);
        if (!copy)
                return -1;
        if (give(q, copy, val, 1, aux)) {
                free(copy);
                return -1;
        }
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
