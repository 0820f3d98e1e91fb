/* SPDX-License-Identifier: Apache-2.0 */
/* What target topics refuse (kd_refusals.h). */
#include "kd_refusals.h"

#include <string.h>

#include <kdelay/kdelay.h>

#include "kd_perr.h"
#include "kd_util.h"

size_t kd_refusals_bytes(const kd_task_t *t)
{
        size_t n = t->rec.key_len + t->rec.value_len;
        const char *name;
        const void *val;
        size_t len;
        for (size_t i = 0;
             t->rec.hdrs &&
             !rd_kafka_header_get_all(t->rec.hdrs, i, &name, &val, &len);
             i++)
                /* The fired record goes without the routing headers, and
                 * they are gone from t's own after its fire
                 * (fire_produce.c). */
                if (strcmp(name, KDELAY_HDR_TARGET) &&
                    strcmp(name, KDELAY_HDR_VERSION))
                        n += strlen(name) + len;
        return n;
}

static kd_refusal_t *find(kd_refusals_t *r, const char *topic)
{
        if (!r->used)
                return NULL;
        for (size_t i = 0; i < KD_REFUSALS_MAX; i++)
                if (r->v[i].topic[0] && !strcmp(r->v[i].topic, topic))
                        return &r->v[i];
        return NULL;
}

static kd_refusal_t *find_or_add(kd_refusals_t *r, const char *topic,
                                 int64_t now)
{
        kd_refusal_t *e = find(r, topic), *old = &r->v[0];
        if (e)
                return e;
        for (size_t i = 0; i < KD_REFUSALS_MAX; i++) {
                if (!r->v[i].topic[0]) {
                        old = &r->v[i];
                        break;
                }
                if (r->v[i].used_mono < old->used_mono)
                        old = &r->v[i];
        }
        if (!old->topic[0])
                r->used++;
        memset(old, 0, sizeof(*old));
        kd_strlcpy(old->topic, topic, sizeof(old->topic));
        old->used_mono = now;
        return old;
}

void kd_refusals_learn(kd_refusals_t *r, const kd_task_t *t,
                       rd_kafka_resp_err_t err, int64_t now, int64_t now_wall)
{
        if (!t->rec.target)
                return;
        if (err == RD_KAFKA_RESP_ERR_INVALID_RECORD && !t->rec.key) {
                kd_refusal_t *e = find_or_add(r, t->rec.target, now);
                e->keyless_until = now + KD_REFUSALS_TTL_MS;
                e->keyless_wall = now_wall;
        } else if (kd_perr_too_large(err)) {
                kd_refusal_t *e = find_or_add(r, t->rec.target, now);
                size_t n = kd_refusals_bytes(t);
                if (!e->bytes_until || now >= e->bytes_until ||
                    n < e->min_bytes)
                        e->min_bytes = n;
                e->bytes_until = now + KD_REFUSALS_TTL_MS;
                e->bytes_wall = now_wall;
                e->size_err = err;
        }
}

int64_t kd_refusals_since(const kd_task_t *t)
{
        const void *v;
        size_t n;
        if (!t->rec.hdrs ||
            rd_kafka_header_get_last(t->rec.hdrs, KDELAY_HDR_REPLAY_OF, &v, &n))
                return 0;
        /* Never 0: a replay at the epoch still skips what came before. */
        return t->rec.append_ms > 0 ? t->rec.append_ms : 1;
}

rd_kafka_resp_err_t kd_refusals_check(kd_refusals_t *r, const kd_task_t *t,
                                      int64_t now, int64_t since_wall)
{
        kd_refusal_t *e = t->rec.target ? find(r, t->rec.target) : NULL;
        if (!e)
                return RD_KAFKA_RESP_ERR_NO_ERROR;
        e->used_mono = now;
        if (!t->rec.key && now < e->keyless_until &&
            e->keyless_wall >= since_wall)
                return RD_KAFKA_RESP_ERR_INVALID_RECORD;
        if (now < e->bytes_until && e->bytes_wall >= since_wall &&
            kd_refusals_bytes(t) >= e->min_bytes)
                return e->size_err;
        return RD_KAFKA_RESP_ERR_NO_ERROR;
}

int kd_refusals_delivered(kd_refusals_t *r, const kd_task_t *t, int64_t now)
{
        kd_refusal_t *e = t->rec.target ? find(r, t->rec.target) : NULL;
        int forgot = 0;
        if (!e)
                return 0;
        if (!t->rec.key && now < e->keyless_until) {
                e->keyless_until = 0;
                forgot |= KD_REFUSALS_FORGOT_KEYLESS;
        }
        if (now < e->bytes_until && kd_refusals_bytes(t) >= e->min_bytes) {
                e->bytes_until = 0;
                forgot |= KD_REFUSALS_FORGOT_SIZE;
        }
        if (now >= e->keyless_until && now >= e->bytes_until) {
                /* Nothing left to know of it: the slot is free. */
                memset(e, 0, sizeof(*e));
                r->used--;
        }
        return forgot;
}

int kd_refusals_explains(kd_refusals_t *r, const kd_task_t *t,
                         rd_kafka_resp_err_t err, int64_t now)
{
        const kd_refusal_t *e = t->rec.target ? find(r, t->rec.target) : NULL;
        if (!e)
                return 0;
        if (err == RD_KAFKA_RESP_ERR_INVALID_RECORD)
                return now < e->keyless_until;
        return kd_perr_too_large(err) && now < e->bytes_until;
}
