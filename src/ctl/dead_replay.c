/* kdelayctl dead replay: schedules dead-lettered tasks again (dead_replay.h).
 *
 * A replayed task gets a new id fixed by its dead letter's place
 * (<id>~replay-<partition>-<offset>, or a hash when that is too long), so
 * a second replay of the same dead letter writes the same task again and
 * the fate table lets only one copy fire: replay is idempotent. The new
 * record carries kdelay-replay-of: <id>. The old id keeps its fate (DEAD,
 * or none for a task dead-lettered before any claim). */
#include "dead_replay.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl_json.h"
#include "kd_client.h"
#include "kd_util.h"
#include "kd_wire.h"

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

/* The replay's id of item: fixed by its dead letter's place. */
static void replay_id(const kd_replay_item_t *it, char *buf, size_t size)
{
        char tail[64];
        snprintf(tail, sizeof(tail), "~replay-%d-%lld", (int)it->partition,
                 (long long)it->offset);
        size_t n = strlen(it->id), t = strlen(tail);
        if (n + t <= KDELAY_ID_MAX && n + t < size) {
                memcpy(buf, it->id, n);
                memcpy(buf + n, tail, t + 1);
                return;
        }
        uint64_t h = 1469598103934665603ULL; /* FNV-1a of the id */
        for (const char *c = it->id; *c; c++)
                h = (h ^ (unsigned char)*c) * 1099511628211ULL;
        snprintf(buf, size, "replay-%016llx%s", (unsigned long long)h, tail);
}

static int replayable(const char *reason)
{
        for (size_t i = 0; i < KD_ARRAY_LEN(kd_replayable); i++)
                if (!strcmp(reason, kd_replayable[i]))
                        return 1;
        return 0;
}

/* One answer: a line, or a JSON object. */
static void answer(int json, const kd_replay_item_t *it, const char *result,
                   const char *new_id, const char *why)
{
        if (json) {
                cJSON *o = cJSON_CreateObject();
                if (it->valid)
                        cJSON_AddStringToObject(o, "id", it->id);
                else
                        cJSON_AddNullToObject(o, "id");
                cJSON_AddStringToObject(o, "reason", it->reason);
                cJSON_AddNumberToObject(o, "partition", it->partition);
                cJSON_AddNumberToObject(o, "offset", (double)it->offset);
                cJSON_AddStringToObject(o, "result", result);
                if (new_id)
                        cJSON_AddStringToObject(o, "new_id", new_id);
                if (why)
                        cJSON_AddStringToObject(o, "why", why);
                kd_ctl_json_print(o);
                return;
        }
        printf("%s %s%s%s%s%s\n", it->valid ? it->id : "-", result,
               new_id ? " " : "", new_id ? new_id : "", why ? " " : "",
               why ? why : "");
}

/* Schedules item again under new_id, due at fire_at_ms. */
static kdelay_err_t reschedule(kdelay_client_t *c, const kd_replay_item_t *it,
                               const char *new_id, int64_t fire_at_ms,
                               char *errstr, size_t errstr_size)
{
        kdelay_header_t *h; /* owned: points into it->user_hdrs */
        size_t nh;
        if (kd_client_headers_array(it->user_hdrs, &h, &nh))
                return kd_fail(KDELAY_ERR_NO_MEMORY, errstr, errstr_size,
                               "out of memory");
        kdelay_task_t t;
        kdelay_task_init(&t);
        t.topic = it->target;
        t.id = new_id;
        t.key = it->key;
        t.key_len = it->key_len;
        t.value = it->value;
        t.value_len = it->value_len;
        t.headers = h;
        t.header_cnt = nh;
        t.fire_at_ms = fire_at_ms;
        char out[KDELAY_ID_MAX + 1];
        kdelay_err_t err =
            kd_client_schedule_from(c, &t, KDELAY_HDR_REPLAY_OF, it->id, out,
                                    sizeof(out), errstr, errstr_size);
        free(h);
        return err;
}

int kd_replay_run(kdelay_client_t *c, const kd_replay_items_t *r,
                  int64_t fire_at_ms, int dry_run, int json,
                  kd_replay_counts_t *counts)
{
        memset(counts, 0, sizeof(*counts));
        for (size_t i = 0; i < r->cnt; i++) {
                const kd_replay_item_t *it = &r->v[i];
                char new_id[KDELAY_ID_MAX + 32], why[600];
                if (!it->valid || !replayable(it->reason)) {
                        snprintf(why, sizeof(why),
                                 "%s is not a reason a replay can fix%s",
                                 it->reason,
                                 it->valid ? "" : " (the record is malformed)");
                        answer(json, it, "REFUSED", NULL, why);
                        counts->refused++;
                        continue;
                }
                replay_id(it, new_id, sizeof(new_id));
                const char *ids[2] = {it->id, new_id};
                size_t lens[2] = {strlen(it->id), strlen(new_id)};
                kdelay_fate_t fates[2];
                kdelay_err_t err = kd_client_fate_lookup(c, ids, lens, 2, fates,
                                                         why, sizeof(why));
                if (err) {
                        answer(json, it, "ERROR", NULL, why);
                        counts->errors++;
                        continue;
                }
                /* The task itself must not be decided otherwise. */
                if (fates[0] != KDELAY_FATE_UNDECIDED &&
                    fates[0] != KDELAY_FATE_DEAD) {
                        snprintf(why, sizeof(why), "its fate is %s",
                                 kdelay_fate_str(fates[0]));
                        answer(json, it, "SKIPPED", NULL, why);
                        counts->skipped++;
                        continue;
                }
                /* Replayed before: its copy fired, fires or was cancelled. */
                if (fates[1] != KDELAY_FATE_UNDECIDED) {
                        snprintf(why, sizeof(why), "replayed before: %s",
                                 kdelay_fate_str(fates[1]));
                        answer(json, it, "SKIPPED", new_id, why);
                        counts->skipped++;
                        continue;
                }
                if (dry_run) {
                        answer(json, it, "WOULD_REPLAY", new_id, NULL);
                        counts->replayed++;
                        continue;
                }
                err = reschedule(c, it, new_id, fire_at_ms, why, sizeof(why));
                if (err) {
                        answer(json, it, "ERROR", new_id, why);
                        counts->errors++;
                        continue;
                }
                answer(json, it, "REPLAYED", new_id, NULL);
                counts->replayed++;
        }
        return 0;
}
