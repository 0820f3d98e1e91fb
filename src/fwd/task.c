/* Tasks: copied out of consumed records, freed when handled; the task
 * FIFO. Owns nothing beyond each task's record (kd_task.h). */
#include "kd_task.h"
#include "kd_util.h"

#include <stdlib.h>
#include <string.h>

/* Bytes a header set takes, for the held-set accounting. */
static size_t headers_bytes(const rd_kafka_headers_t *h)
{
        size_t total = 0;
        const char *name;
        const void *val;
        size_t size;
        for (size_t i = 0;
             h && !rd_kafka_header_get_all(h, i, &name, &val, &size); i++)
                total += strlen(name) + size + 32;
        return total;
}

kd_task_t *kd_task_new(const rd_kafka_message_t *m)
{
        kd_task_t *t = calloc(1, sizeof(*t));
        if (!t)
                return NULL;
        kd_timer_init(&t->timer, NULL, NULL);
        kd_taskrec_t *r = &t->rec;
        r->offset = m->offset;
        r->append_ms = rd_kafka_message_timestamp(m, NULL);
        r->key_len = m->key_len;
        r->value_len = m->len;
        r->key = kd_memdup(m->key, m->key_len);
        r->value = kd_memdup(m->payload, m->len);
        rd_kafka_headers_t *h = NULL;
        if (!rd_kafka_message_headers(m, &h) && h)
                r->hdrs = rd_kafka_headers_copy(h);
        if ((m->key && !r->key) || (m->payload && !r->value) ||
            (h && !r->hdrs)) {
                kd_task_free(t);
                return NULL;
        }
        t->bytes = sizeof(*t) + m->key_len + m->len + headers_bytes(r->hdrs);
        return t;
}

void kd_task_free(kd_task_t *t)
{
        kd_taskrec_t *r = &t->rec;
        free(r->id);
        free(r->target);
        free(r->key);
        free(r->value);
        if (r->hdrs)
                rd_kafka_headers_destroy(r->hdrs);
        free(t);
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
