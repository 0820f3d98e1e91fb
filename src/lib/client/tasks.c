/* SPDX-License-Identifier: Apache-2.0 */
/* Pending tasks found by a scan, with their fates (kd_tasks.h). */
#include "kd_tasks.h"

#include <stdlib.h>
#include <string.h>

#include "kd_client.h"
#include "kd_util.h"

/* Records are looked up in the fate table this many at a time. */
#define KD_TASKS_PAGE 256

typedef struct kd_tasks_run {
        kdelay_client_t *client; /* borrowed */
        const kd_tasks_query_t *q;
        kd_tasks_found_t *out;
        kd_tasks_item_t page[KD_TASKS_PAGE];
        size_t page_cnt;
        kdelay_err_t err; /* a failure inside the callback */
        char errstr[512]; /* its detail */
        size_t errstr_size;
} kd_tasks_run_t;

void kd_tasks_query_init(kd_tasks_query_t *q)
{
        memset(q, 0, sizeof(*q));
        q->due_after_ms = INT64_MIN;
        q->due_before_ms = INT64_MAX;
}

void kd_tasks_found_clear(kd_tasks_found_t *out)
{
        free(out->items);
        free(out->key);
        free(out->value);
        if (out->user_hdrs)
                rd_kafka_headers_destroy(out->user_hdrs);
        memset(out, 0, sizeof(*out));
}

static int keep(const kd_tasks_run_t *r, kdelay_fate_t fate)
{
        return r->q->any_fate || fate == KDELAY_FATE_UNDECIDED ||
               fate == KDELAY_FATE_FIRING;
}

/* Looks the page's fates up and moves the tasks to keep into out. */
static kdelay_err_t resolve(kd_tasks_run_t *r)
{
        const char *ids[KD_TASKS_PAGE];
        size_t lens[KD_TASKS_PAGE];
        kdelay_fate_t fates[KD_TASKS_PAGE];
        if (!r->page_cnt)
                return KDELAY_OK;
        for (size_t i = 0; i < r->page_cnt; i++) {
                ids[i] = r->page[i].p.id;
                lens[i] = strlen(ids[i]);
        }
        kdelay_err_t err =
            kd_client_fate_lookup(r->client, ids, lens, r->page_cnt, fates,
                                  r->errstr, r->errstr_size);
        if (err)
                return err;
        kd_tasks_found_t *o = r->out;
        for (size_t i = 0; i < r->page_cnt; i++) {
                if (!keep(r, fates[i]))
                        continue;
                if (o->cnt == o->cap) {
                        size_t cap = o->cap ? o->cap * 2 : 64;
                        kd_tasks_item_t *n =
                            realloc(o->items, cap * sizeof(*n));
                        if (!n)
                                return kd_fail(KDELAY_ERR_NO_MEMORY, r->errstr,
                                               r->errstr_size, "out of memory");
                        o->items = n;
                        o->cap = cap;
                }
                r->page[i].p.fate = fates[i];
                o->items[o->cnt++] = r->page[i];
        }
        r->page_cnt = 0;
        return KDELAY_OK;
}

/* Copies a block (NULL stays NULL); -1 when out of memory. */
static int dup_block(const void *src, size_t len, void **dstp, size_t *lenp)
{
        *dstp = NULL;
        *lenp = len;
        if (!src)
                return 0;
        if (!(*dstp = malloc(len ? len : 1)))
                return -1;
        memcpy(*dstp, src, len);
        return 0;
}

/* The match's key, value and user headers into out. -1: out of memory. */
static int keep_record(kd_tasks_found_t *o, const kd_scan_rec_t *rec)
{
        const rd_kafka_message_t *m = rec->msg;
        if (dup_block(m->key, m->key_len, &o->key, &o->key_len) ||
            dup_block(m->payload, m->len, &o->value, &o->value_len))
                return -1;
        const char *name;
        const void *v;
        size_t len;
        for (size_t i = 0; rec->hdrs && !rd_kafka_header_get_all(
                                            rec->hdrs, i, &name, &v, &len);
             i++) {
                if (!strncmp(name, "kdelay-", 7))
                        continue;
                if (!o->user_hdrs && !(o->user_hdrs = rd_kafka_headers_new(8)))
                        return -1;
                if (rd_kafka_header_add(o->user_hdrs, name, -1, v,
                                        (ssize_t)len))
                        return -1;
        }
        return 0;
}

static int matches(const kd_tasks_query_t *q, const kd_wire_task_t *t)
{
        if (q->id &&
            (strlen(q->id) != t->id_len || memcmp(q->id, t->id, t->id_len)))
                return 0;
        if (q->target && (strlen(q->target) != t->target_len ||
                          memcmp(q->target, t->target, t->target_len)))
                return 0;
        return t->fire_at_ms >= q->due_after_ms &&
               t->fire_at_ms < q->due_before_ms;
}

static int on_record(const kd_scan_rec_t *rec, void *opaque)
{
        kd_tasks_run_t *r = opaque;
        const kd_wire_task_t *t = &rec->task;
        if (rec->defect != KD_WIRE_OK || !matches(r->q, t))
                return 0; /* malformed records are the dead letters' */
        r->out->matched++;
        kd_tasks_item_t *it = &r->page[r->page_cnt++];
        memset(it, 0, sizeof(*it));
        memcpy(it->p.id, t->id, t->id_len);
        size_t tl = t->target_len < sizeof(it->p.target) - 1
                        ? t->target_len
                        : sizeof(it->p.target) - 1;
        memcpy(it->p.target, t->target, tl);
        kd_strlcpy(it->p.tier_topic, rec->part->topic,
                   sizeof(it->p.tier_topic));
        it->p.partition = rec->part->partition;
        it->p.offset = rec->offset;
        it->p.fire_at_ms = t->fire_at_ms;
        it->tier_ms = rec->part->tier_ms;
        if (r->q->keep_record && !r->out->key && !r->out->value &&
            !r->out->user_hdrs && keep_record(r->out, rec)) {
                r->err = kd_fail(KDELAY_ERR_NO_MEMORY, r->errstr,
                                 r->errstr_size, "out of memory");
                return -1;
        }
        if (r->q->id)
                return 1; /* the id's first record: enough */
        if (r->page_cnt == KD_TASKS_PAGE && (r->err = resolve(r)))
                return -1;
        return r->q->limit && r->out->cnt >= r->q->limit;
}

static int by_id_then_tier(const void *a, const void *b)
{
        const kd_tasks_item_t *x = a, *y = b;
        int c = strcmp(x->p.id, y->p.id);
        if (c)
                return c;
        return x->tier_ms < y->tier_ms ? -1 : x->tier_ms > y->tier_ms;
}

static int by_fire_at(const void *a, const void *b)
{
        const kd_tasks_item_t *x = a, *y = b;
        if (x->p.fire_at_ms != y->p.fire_at_ms)
                return x->p.fire_at_ms < y->p.fire_at_ms ? -1 : 1;
        return strcmp(x->p.id, y->p.id);
}

/* One item per id (the shortest tier's), then by due time. */
static void tidy(kd_tasks_found_t *o)
{
        if (o->cnt < 2)
                return;
        qsort(o->items, o->cnt, sizeof(*o->items), by_id_then_tier);
        size_t m = 1;
        for (size_t i = 1; i < o->cnt; i++)
                if (strcmp(o->items[i].p.id, o->items[m - 1].p.id))
                        o->items[m++] = o->items[i];
        o->cnt = m;
        qsort(o->items, o->cnt, sizeof(*o->items), by_fire_at);
}

kdelay_err_t kd_tasks_find(kdelay_client_t *client, const kd_tasks_query_t *q,
                           kd_tasks_found_t *out, char *errstr,
                           size_t errstr_size)
{
        memset(out, 0, sizeof(*out));
        kd_tasks_run_t *r = calloc(1, sizeof(*r)); /* owned: a page is big */
        if (!r)
                return kd_fail(KDELAY_ERR_NO_MEMORY, errstr, errstr_size,
                               "out of memory");
        r->client = client;
        r->q = q;
        r->out = out;
        r->errstr_size = sizeof(r->errstr);
        kdelay_err_t err =
            kd_scan_run(kd_client_conf(client), &q->scan, on_record, r,
                        &out->prog, errstr, errstr_size);
        if (!err && !r->err)
                r->err = resolve(r);
        if (r->err) {
                err = r->err;
                kd_strlcpy(errstr, r->errstr, errstr_size);
        }
        free(r);
        if (err) {
                kd_tasks_found_clear(out);
                return err;
        }
        tidy(out);
        if (q->limit && out->cnt > q->limit)
                out->cnt = q->limit;
        return KDELAY_OK;
}
