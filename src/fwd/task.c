/* In-memory tasks: copied out of consumed records, accounted in the held
 * set, freed when handled. */
#include <stdlib.h>
#include <string.h>

#include "kd_fwd.h"

static void *dup_bytes(const void *p, size_t n)
{
        if (!p)
                return NULL;
        void *d = malloc(n ? n : 1);
        if (d && n)
                memcpy(d, p, n);
        return d;
}

kd_task_t *kd_task_from_message(const rd_kafka_message_t *m)
{
        kd_task_t *t = calloc(1, sizeof(*t));
        if (!t)
                return NULL;
        kd_heap_node_init(&t->timer);
        t->offset = m->offset;
        t->append_ms = rd_kafka_message_timestamp(m, NULL);
        t->key_len = m->key_len;
        t->value_len = m->len;
        t->key = dup_bytes(m->key, m->key_len);
        t->value = dup_bytes(m->payload, m->len);
        rd_kafka_headers_t *h = NULL;
        if (!rd_kafka_message_headers(m, &h) && h)
                t->hdrs = rd_kafka_headers_copy(h);
        if ((m->key && !t->key) || (m->payload && !t->value) ||
            (h && !t->hdrs)) {
                free(t->key);
                free(t->value);
                if (t->hdrs)
                        rd_kafka_headers_destroy(t->hdrs);
                free(t);
                return NULL;
        }
        t->bytes = sizeof(*t) + m->key_len + m->len + 256;
        return t;
}

void kd_task_hold(kd_fwd_t *f, kd_task_t *t)
{
        if (t->held)
                return;
        t->held = 1;
        if (++f->held_cnt > f->stats.held_max)
                f->stats.held_max = f->held_cnt;
        f->held_bytes += (int64_t)t->bytes;
}

void kd_task_unhold(kd_fwd_t *f, kd_task_t *t)
{
        if (!t->held)
                return;
        t->held = 0;
        f->held_cnt--;
        f->held_bytes -= (int64_t)t->bytes;
}

int kd_fwd_held_full(const kd_fwd_t *f, const kd_task_t *t)
{
        return f->held_cnt + 1 > (size_t)f->conf->fwd_max_held ||
               f->held_bytes + (int64_t)t->bytes > f->conf->fwd_max_held_bytes;
}

void kd_task_free(kd_fwd_t *f, kd_task_t *t)
{
        kd_task_unhold(f, t);
        if (kd_heap_node_queued(&t->timer))
                kd_heap_remove(&f->timers, &t->timer);
        if (t->state == KD_TASK_PACED)
                kd_pace_forget(f, t);
        kd_part_t *p = t->part;
        if (p) {
                if (t->prev)
                        t->prev->next = t->next;
                else
                        p->tasks = t->next;
                if (t->next)
                        t->next->prev = t->prev;
        }
        free(t->id);
        free(t->target);
        free(t->key);
        free(t->value);
        if (t->hdrs)
                rd_kafka_headers_destroy(t->hdrs);
        free(t);
}

void kd_task_done(kd_fwd_t *f, kd_task_t *t)
{
        if (t->part) {
                kd_offtrack_done(&t->part->track, t->offset);
                f->txn_dirty = 1;
        }
        kd_task_free(f, t);
}

void kd_taskq_push(kd_taskq_t *q, kd_task_t *t)
{
        t->qnext = NULL;
        if (q->tail)
                q->tail->qnext = t;
        else
                q->head = t;
        q->tail = t;
        q->len++;
}

kd_task_t *kd_taskq_pop(kd_taskq_t *q)
{
        kd_task_t *t = q->head;
        if (!t)
                return NULL;
        q->head = t->qnext;
        if (!q->head)
                q->tail = NULL;
        t->qnext = NULL;
        q->len--;
        return t;
}

int kd_taskq_remove(kd_taskq_t *q, kd_task_t *t)
{
        kd_task_t **pp = &q->head, *prev = NULL;
        while (*pp && *pp != t) {
                prev = *pp;
                pp = &(*pp)->qnext;
        }
        if (!*pp)
                return 0;
        *pp = t->qnext;
        if (q->tail == t)
                q->tail = prev;
        t->qnext = NULL;
        q->len--;
        return 1;
}
