/* SPDX-License-Identifier: Apache-2.0 */
/* kdelayctl dead replay, the dead letters to replay (replay_items.h). */
#include "replay_items.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kd_util.h"
#include "kd_wire.h"
#include "replay_id.h"

/* Reasons a user can fix (create the topic, allow it, raise a limit). */
static const char *const kd_replayable[] = {
    "target-unavailable", "target-forbidden", "tier-unavailable", "too-large",
    "target-refused"};

void kd_replay_items_clear(kd_replay_items_t *r)
{
        for (size_t i = 0; i < r->cnt; i++) {
                free(r->v[i].key);
                free(r->v[i].value);
                if (r->v[i].user_hdrs)
                        rd_kafka_headers_destroy(r->v[i].user_hdrs);
        }
        free(r->v);
        memset(r, 0, sizeof(*r));
}

/* Copies n bytes of p (NULL stays NULL); -1 when out of memory. */
static int dup_bytes(const void *p, size_t n, void **out)
{
        *out = NULL;
        if (!p)
                return 0;
        if (!(*out = malloc(n ? n : 1)))
                return -1;
        memcpy(*out, p, n);
        return 0;
}

int kd_replay_items_add(kd_replay_items_t *r, const kd_scan_rec_t *rec,
                        const char *reason)
{
        if (r->cnt == r->cap) {
                size_t cap = r->cap ? 2 * r->cap : 64;
                kd_replay_item_t *v = realloc(r->v, cap * sizeof(*v));
                if (!v)
                        return -1;
                r->v = v;
                r->cap = cap;
        }
        kd_replay_item_t *it = &r->v[r->cnt];
        memset(it, 0, sizeof(*it));
        kd_strlcpy(it->reason, reason, sizeof(it->reason));
        it->partition = rec->part->partition;
        it->offset = rec->offset;
        it->valid = rec->defect == KD_WIRE_OK;
        if (it->valid) {
                snprintf(it->id, sizeof(it->id), "%.*s", (int)rec->task.id_len,
                         rec->task.id);
                snprintf(it->target, sizeof(it->target), "%.*s",
                         (int)rec->task.target_len, rec->task.target);
        }
        const rd_kafka_message_t *m = rec->msg;
        if (dup_bytes(m->key, m->key_len, &it->key) ||
            dup_bytes(m->payload, m->len, &it->value)) {
                free(it->key);
                return -1;
        }
        it->key_len = m->key_len;
        it->value_len = m->len;
        size_t nh = rec->hdrs ? rd_kafka_header_cnt(rec->hdrs) : 0;
        it->user_hdrs = rd_kafka_headers_new(nh ? nh : 1);
        for (size_t i = 0; it->user_hdrs && i < nh; i++) {
                const char *name;
                const void *v;
                size_t len;
                if (rd_kafka_header_get_all(rec->hdrs, i, &name, &v, &len))
                        break;
                if (strncmp(name, "kdelay-", 7))
                        rd_kafka_header_add(it->user_hdrs, name, -1, v,
                                            (ssize_t)len);
        }
        if (!it->user_hdrs) {
                free(it->key);
                free(it->value);
                return -1;
        }
        r->cnt++;
        return 0;
}

void kd_replay_item_id(const kd_replay_item_t *it, char *buf, size_t size)
{
        kd_replay_id(it->id, it->partition, it->offset, buf, size);
}

void kd_replay_item_id_nested(const kd_replay_item_t *it, char *buf,
                              size_t size)
{
        kd_replay_id_nested(it->id, it->partition, it->offset, buf, size);
}

int kd_replay_reason_fixable(const char *reason)
{
        for (size_t i = 0; i < KD_ARRAY_LEN(kd_replayable); i++)
                if (!strcmp(reason, kd_replayable[i]))
                        return 1;
        return 0;
}
