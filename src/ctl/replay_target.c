/* SPDX-License-Identifier: Apache-2.0 */
/* kdelayctl dead replay, the target check (replay_target.h). */
#include "replay_target.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kd_util.h"
#include "kd_wire.h"

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

void kd_replay_target_check(const kd_target_info_t *ti,
                            const kd_replay_item_t *it, const char *new_id,
                            kd_replay_check_t *k, char *why, size_t why_size)
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

const kd_target_info_t *kd_replay_targets_find(const kd_replay_targets_t *t,
                                               const char *name)
{
        for (size_t i = 0; i < t->cnt; i++)
                if (!strcmp(t->v[i].name, name))
                        return &t->v[i];
        return NULL;
}

int kd_replay_targets_describe(const kdelay_conf_t *conf,
                               const kd_replay_items_t *r,
                               kd_replay_targets_t *t)
{
        memset(t, 0, sizeof(*t));
        if (!r->cnt)
                return 0;
        if (!(t->v = calloc(r->cnt, sizeof(*t->v))))
                return -1;
        for (size_t i = 0; i < r->cnt; i++) {
                const kd_replay_item_t *it = &r->v[i];
                if (it->valid && kd_replay_reason_fixable(it->reason) &&
                    !kd_replay_targets_find(t, it->target))
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
