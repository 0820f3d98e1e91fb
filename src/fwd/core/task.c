/* SPDX-License-Identifier: Apache-2.0 */
/* Tasks: copied out of consumed records, freed when handled. Owns
 * nothing beyond each task's record (kd_task.h). The task FIFO's
 * operations are the lifecycle's (lifecycle.c): a queue is a place. */
#include "kd_task.h"

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

kd_task_t *kd_task_new(rd_kafka_message_t *m)
{
        /* One block: the task, then its key and value (copied over, so
         * only the task is zeroed). */
        kd_task_t *t = malloc(sizeof(*t) + m->key_len + m->len);
        if (!t)
                return NULL;
        memset(t, 0, sizeof(*t));
        kd_timer_init(&t->timer, NULL, NULL);
        kd_taskrec_t *r = &t->rec;
        char *tail = (char *)(t + 1);
        r->offset = m->offset;
        r->append_ms = rd_kafka_message_timestamp(m, NULL);
        r->key_len = m->key_len;
        r->value_len = m->len;
        if (m->key) {
                r->key = memcpy(tail, m->key, m->key_len);
                tail += m->key_len;
        }
        if (m->payload)
                r->value = memcpy(tail, m->payload, m->len);
        rd_kafka_headers_t *h = NULL;
        if (!rd_kafka_message_detach_headers(m, &h))
                r->hdrs = h; /* otherwise none, or unparseable */
        t->bytes = sizeof(*t) + m->key_len + m->len + headers_bytes(r->hdrs);
        return t;
}

int kd_task_set_ids(kd_task_t *t, const char *id, size_t id_len,
                    const char *target, size_t target_len)
{
        char *b = malloc(id_len + target_len + 2);
        if (!b)
                return -1;
        memcpy(b, id, id_len);
        b[id_len] = '\0';
        memcpy(b + id_len + 1, target, target_len);
        b[id_len + 1 + target_len] = '\0';
        t->rec.id = b;
        t->rec.id_len = id_len;
        t->rec.target = b + id_len + 1;
        t->bytes += id_len + target_len + 2;
        return 0;
}

void kd_task_free(kd_task_t *t)
{
        kd_taskrec_t *r = &t->rec;
        free(r->id); /* and target */
        if (r->hdrs)
                rd_kafka_headers_destroy(r->hdrs);
        free(t);
}
