/* SPDX-License-Identifier: Apache-2.0 */
/* kdelayctl dead replay: schedules dead-lettered tasks again (dead_replay.h).
 *
 * A replayed task gets a new id fixed by its dead letter's place
 * (<id>~replay-<partition>-<offset>, or a hash when that is too long), so
 * a second replay of the same dead letter writes the same task again and
 * the fate table lets only one copy fire: replay is idempotent. A replay
 * of a replay's dead letter replaces the suffix (replay_id.h): the ids do
 * not nest, and stay unique, each dead letter having its own place. The
 * id earlier releases gave (nested) is looked up as well, so a dead
 * letter they replayed is not replayed again. The new record carries
 * kdelay-replay-of: <id>. The old id keeps its fate (DEAD, or none for a
 * task dead-lettered before any claim). */
#include "dead_replay.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl_json.h"
#include "kd_client.h"
#include "kd_scan.h"
#include "kd_topics.h"
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

static int replayable(const char *reason)
{
        for (size_t i = 0; i < KD_ARRAY_LEN(kd_replayable); i++)
                if (!strcmp(reason, kd_replayable[i]))
                        return 1;
        return 0;
}

/* What the target check found for an item (NULL: not checked). */
typedef struct replay_check {
        const kd_target_info_t *ti; /* the target's description */
        size_t size;                /* the fired record's size, at most */
        const char *failure;        /* "target-missing", "needs-key",
                                       "too-large"; NULL when none */
} replay_check_t;

/* The check's fields of an answer in JSON. */
static void answer_check_json(cJSON *o, const replay_check_t *k)
{
        const kd_target_info_t *ti = k->ti;
        cJSON_AddStringToObject(o, "target_check",
                                k->failure        ? "failed"
                                : ti->config_read ? "ok"
                                                  : "incomplete");
        if (k->failure)
                cJSON_AddStringToObject(o, "failure", k->failure);
        if (ti->exists >= 0)
                cJSON_AddBoolToObject(o, "target_exists", ti->exists);
        else
                cJSON_AddNullToObject(o, "target_exists");
        cJSON_AddNumberToObject(o, "size_estimate", (double)k->size);
        if (ti->config_read) {
                cJSON_AddStringToObject(o, "cleanup_policy",
                                        ti->cleanup_policy);
                cJSON_AddNumberToObject(o, "max_message_bytes",
                                        (double)ti->max_message_bytes);
        } else if (ti->exists != 0) {
                cJSON_AddStringToObject(o, "config_error", ti->problem);
        }
}

/* One answer: a line, or a JSON object. */
static void answer(int json, const kd_replay_item_t *it, const char *result,
                   const char *new_id, const char *why,
                   const replay_check_t *chk)
{
        if (json) {
                cJSON *o = cJSON_CreateObject();
                if (!o) {
                        fprintf(stderr, "kdelayctl dead replay: out of "
                                        "memory\n");
                        return;
                }
                if (it->valid) {
                        cJSON_AddStringToObject(o, "id", it->id);
                        cJSON_AddStringToObject(o, "target", it->target);
                } else {
                        cJSON_AddNullToObject(o, "id");
                        cJSON_AddNullToObject(o, "target");
                }
                cJSON_AddStringToObject(o, "reason", it->reason);
                cJSON_AddNumberToObject(o, "partition", it->partition);
                cJSON_AddNumberToObject(o, "offset", (double)it->offset);
                cJSON_AddStringToObject(o, "result", result);
                if (new_id)
                        cJSON_AddStringToObject(o, "new_id", new_id);
                if (why)
                        cJSON_AddStringToObject(o, "why", why);
                if (chk && chk->ti)
                        answer_check_json(o, chk);
                kd_ctl_json_print(o);
                return;
        }
        printf("%s %s%s%s%s%s\n", it->valid ? it->id : "-", result,
               new_id ? " " : "", new_id ? new_id : "", why ? " " : "",
               why ? why : "");
}

/* Kafka's record batch (v2) holding the fired record alone, its varints
 * at their widest: the batch header, then the record's length,
 * attributes, timestamp and offset deltas, key and value lengths and
 * header count, then per header its name's and value's lengths. The
 * topic's max.message.bytes bounds such a batch (uncompressed, at most). */
#define KD_BATCH_OVERHEAD  61
#define KD_RECORD_OVERHEAD (5 + 1 + 10 + 5 + 5 + 5 + 5)
#define KD_HEADER_OVERHEAD (5 + 5)
#define KD_FIRE_AT_MAX_LEN 20 /* an int64 in decimal */

/* The size of the record the forwarder will produce for item's replay
 * new_id, at most: its key, value and user headers, kdelay-id,
 * kdelay-fire-at and kdelay-replay-of. */
static size_t fired_size(const kd_replay_item_t *it, const char *new_id)
{
        size_t n = KD_BATCH_OVERHEAD + KD_RECORD_OVERHEAD + it->key_len +
                   it->value_len;
        n += KD_HEADER_OVERHEAD + strlen(KDELAY_HDR_ID) + strlen(new_id);
        n += KD_HEADER_OVERHEAD + strlen(KDELAY_HDR_FIRE_AT) +
             KD_FIRE_AT_MAX_LEN;
        n += KD_HEADER_OVERHEAD + strlen(KDELAY_HDR_REPLAY_OF) + strlen(it->id);
        size_t nh = rd_kafka_header_cnt(it->user_hdrs);
        for (size_t i = 0; i < nh; i++) {
                const char *name;
                const void *v;
                size_t len;
                if (rd_kafka_header_get_all(it->user_hdrs, i, &name, &v, &len))
                        break;
                n += KD_HEADER_OVERHEAD + strlen(name) + len;
        }
        return n;
}

/* Judges item's replay new_id against its target's description: k's
 * failure is set when the broker would refuse it the way it was refused
 * (why says how); without a failure, why notes what could not be checked
 * ("" when everything was). */
static void target_check(const kd_target_info_t *ti, const kd_replay_item_t *it,
                         const char *new_id, replay_check_t *k, char *why,
                         size_t why_size)
{
        k->ti = ti;
        k->size = fired_size(it, new_id);
        k->failure = NULL;
        why[0] = '\0';
        if (ti->exists == 0) {
                k->failure = "target-missing";
                snprintf(why, why_size, "target missing (\"%s\")", ti->name);
        } else if (!ti->config_read) {
                snprintf(why, why_size,
                         "the configuration of target \"%s\" could not be "
                         "read (%s): %s not checked",
                         ti->name, ti->problem,
                         ti->exists == 1 ? "key and size"
                                         : "existence, key and size");
        } else if (ti->compact && !it->key) {
                k->failure = "needs-key";
                snprintf(why, why_size,
                         "compacted topic needs a key (\"%s\": "
                         "cleanup.policy=%s)",
                         ti->name, ti->cleanup_policy);
        } else if (k->size > (uint64_t)ti->max_message_bytes) {
                k->failure = "too-large";
                snprintf(why, why_size,
                         "too large for the target (%zu bytes > "
                         "max.message.bytes %lld of \"%s\")",
                         k->size, (long long)ti->max_message_bytes, ti->name);
        }
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

/* The distinct targets of the items a replay may schedule, described. */
typedef struct replay_targets {
        kd_target_info_t *v; /* owned */
        size_t cnt;
} replay_targets_t;

static const kd_target_info_t *targets_find(const replay_targets_t *t,
                                            const char *name)
{
        for (size_t i = 0; i < t->cnt; i++)
                if (!strcmp(t->v[i].name, name))
                        return &t->v[i];
        return NULL;
}

/* Describes each target of r's replayable items once; -1 when out of
 * memory. What cannot be read is left unknown in the entries. */
static int targets_describe(const kdelay_conf_t *conf,
                            const kd_replay_items_t *r, replay_targets_t *t)
{
        memset(t, 0, sizeof(*t));
        if (!r->cnt)
                return 0;
        if (!(t->v = calloc(r->cnt, sizeof(*t->v))))
                return -1;
        for (size_t i = 0; i < r->cnt; i++) {
                const kd_replay_item_t *it = &r->v[i];
                if (it->valid && replayable(it->reason) &&
                    !targets_find(t, it->target))
                        kd_strlcpy(t->v[t->cnt++].name, it->target,
                                   sizeof(t->v[0].name));
        }
        char errstr[256];
        if (kd_topics_describe_targets(conf, t->v, t->cnt, errstr,
                                       sizeof(errstr)))
                fprintf(stderr,
                        "kdelayctl dead replay: the targets could not be "
                        "described: %s\n",
                        errstr);
        return 0;
}

static int pending_cb(const kd_scan_rec_t *rec, void *opaque)
{
        kd_replay_pendings_t *p = opaque;
        const void *v;
        size_t n;
        if (rec->defect != KD_WIRE_OK || !rec->hdrs ||
            rd_kafka_header_get_last(rec->hdrs, KDELAY_HDR_REPLAY_OF, &v, &n))
                return 0;
        if (p->cnt == p->cap) {
                size_t cap = p->cap ? 2 * p->cap : 16;
                kd_replay_pending_t *g = realloc(p->v, cap * sizeof(*g));
                if (!g) {
                        p->oom = 1;
                        return -1;
                }
                p->v = g;
                p->cap = cap;
        }
        kd_replay_pending_t *e = &p->v[p->cnt++];
        snprintf(e->id, sizeof(e->id), "%.*s", (int)rec->task.id_len,
                 rec->task.id);
        kd_strlcpy(e->tier_topic, rec->part->topic, sizeof(e->tier_topic));
        return 0;
}

const kd_replay_pending_t *kd_replay_pending_find(const kd_replay_pendings_t *p,
                                                  const char *id)
{
        for (size_t i = 0; i < p->cnt; i++)
                if (!strcmp(p->v[i].id, id))
                        return &p->v[i];
        return NULL;
}

/* How long the look for replayed copies still pending may take. */
#define KD_REPLAY_SCAN_BUDGET_MS 30000

/* Reads the tier topics' pending records once for replayed copies, so a
 * second replay of a dead letter whose copy has no fate yet (not fired:
 * no forwarder, or due later) says SKIPPED too. A scan cut short or
 * failed is said on stderr; the fate table still lets one copy fire. */
void kd_replay_pending_read(const kdelay_conf_t *conf, kd_replay_pendings_t *p)
{
        char errstr[512];
        kd_scan_progress_t prog;
        kd_scan_opts_t opts = {.budget_ms = KD_REPLAY_SCAN_BUDGET_MS};
        memset(p, 0, sizeof(*p));
        kdelay_err_t err = kd_scan_run(conf, &opts, pending_cb, p, &prog,
                                       errstr, sizeof(errstr));
        p->complete = !err && prog.complete;
        if (err)
                fprintf(stderr,
                        "kdelayctl dead replay: warning: could not read the "
                        "tier topics for copies replayed before: %s; a copy "
                        "still pending is written again (it fires once)\n",
                        p->oom ? "out of memory" : errstr);
        else if (!prog.complete)
                fprintf(stderr,
                        "kdelayctl dead replay: warning: the tier topics "
                        "were not all read within %d s; a copy replayed "
                        "before and still pending may be written again (it "
                        "fires once)\n",
                        KD_REPLAY_SCAN_BUDGET_MS / 1000);
}

int kd_replay_run(kdelay_client_t *c, const kd_replay_items_t *r,
                  int64_t fire_at_ms, int dry_run, int json,
                  kd_replay_counts_t *counts)
{
        memset(counts, 0, sizeof(*counts));
        kd_replay_pendings_t pending;
        kd_replay_pending_read(kd_client_conf(c), &pending);
        replay_targets_t targets;
        if (targets_describe(kd_client_conf(c), r, &targets)) {
                fprintf(stderr, "kdelayctl dead replay: out of memory\n");
                free(pending.v);
                return -1;
        }
        for (size_t i = 0; i < r->cnt; i++) {
                const kd_replay_item_t *it = &r->v[i];
                char new_id[KDELAY_ID_MAX + 32], why[600];
                if (!it->valid || !replayable(it->reason)) {
                        snprintf(why, sizeof(why),
                                 "%s is not a reason a replay can fix%s",
                                 it->reason,
                                 it->valid ? "" : " (the record is malformed)");
                        answer(json, it, "REFUSED", NULL, why, NULL);
                        counts->refused++;
                        continue;
                }
                char old_id[KDELAY_ID_MAX + 32];
                kd_replay_item_id(it, new_id, sizeof(new_id));
                kd_replay_item_id_nested(it, old_id, sizeof(old_id));
                /* The copy an earlier release made (nested id) counts. */
                int nested = strcmp(old_id, new_id) != 0;
                const char *ids[3] = {it->id, new_id, old_id};
                size_t lens[3] = {strlen(it->id), strlen(new_id),
                                  strlen(old_id)};
                kdelay_fate_t fates[3];
                kdelay_err_t err = kd_client_fate_lookup(
                    c, ids, lens, nested ? 3 : 2, fates, why, sizeof(why));
                if (err) {
                        answer(json, it, "ERROR", NULL, why, NULL);
                        counts->errors++;
                        continue;
                }
                /* The task itself must not be decided otherwise. */
                if (fates[0] != KDELAY_FATE_UNDECIDED &&
                    fates[0] != KDELAY_FATE_DEAD) {
                        snprintf(why, sizeof(why), "its fate is %s",
                                 kdelay_fate_str(fates[0]));
                        answer(json, it, "SKIPPED", NULL, why, NULL);
                        counts->skipped++;
                        continue;
                }
                /* Replayed before: its copy fired, fires or was cancelled. */
                int before =
                    fates[1] != KDELAY_FATE_UNDECIDED
                        ? 1
                        : (nested && fates[2] != KDELAY_FATE_UNDECIDED ? 2 : 0);
                if (before) {
                        snprintf(why, sizeof(why), "replayed before: %s",
                                 kdelay_fate_str(fates[before]));
                        answer(json, it, "SKIPPED", ids[before], why, NULL);
                        counts->skipped++;
                        continue;
                }
                /* Replayed before, its copy not due or not fired yet. */
                const kd_replay_pending_t *pr =
                    kd_replay_pending_find(&pending, new_id);
                if (!pr && nested)
                        pr = kd_replay_pending_find(&pending, old_id);
                if (pr) {
                        snprintf(why, sizeof(why),
                                 "replayed before: pending in %s",
                                 pr->tier_topic);
                        answer(json, it, "SKIPPED", pr->id, why, NULL);
                        counts->skipped++;
                        continue;
                }
                /* Would the target refuse it as it did? Then not now. */
                replay_check_t chk = {0};
                const kd_target_info_t *ti = targets_find(&targets, it->target);
                if (ti)
                        target_check(ti, it, new_id, &chk, why, sizeof(why));
                else
                        why[0] = '\0';
                const char *note = why[0] ? why : NULL;
                if (chk.failure) {
                        answer(json, it, dry_run ? "WOULD_FAIL" : "REFUSED",
                               NULL, why, &chk);
                        counts->refused++;
                        counts->target_refused++;
                        continue;
                }
                if (dry_run) {
                        answer(json, it, "WOULD_REPLAY", new_id, note, &chk);
                        counts->replayed++;
                        continue;
                }
                char note_buf[600];
                kd_strlcpy(note_buf, why, sizeof(note_buf));
                err = reschedule(c, it, new_id, fire_at_ms, why, sizeof(why));
                if (err) {
                        answer(json, it, "ERROR", new_id, why, &chk);
                        counts->errors++;
                        continue;
                }
                answer(json, it, "REPLAYED", new_id, note ? note_buf : NULL,
                       &chk);
                counts->replayed++;
        }
        free(targets.v);
        free(pending.v);
        return 0;
}
