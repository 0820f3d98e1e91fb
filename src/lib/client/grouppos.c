/* SPDX-License-Identifier: Apache-2.0 */
/* The forwarder group's position in the tier topics (kd_grouppos.h). */
#include "kd_grouppos.h"
#include "kd_watermarks.h"

#include <stdlib.h>
#include <string.h>

#include "kd_tiers.h"
#include "kd_util.h"

#define KD_GROUPPOS_TIMEOUT_MS 10000

rd_kafka_t *kd_group_reader(kd_rk_owner_t *owner, const char *group,
                            char *errstr, size_t errstr_size)
{
        const char *forced[] = {"group.id",
                                group,
                                "enable.auto.commit",
                                "false",
                                "enable.auto.offset.store",
                                "false",
                                "enable.partition.eof",
                                "true",
                                "isolation.level",
                                "read_committed",
                                "auto.offset.reset",
                                "earliest",
                                NULL};
        return kd_conf_rk_new(owner, RD_KAFKA_CONSUMER, forced, errstr,
                              errstr_size);
}

rd_kafka_t *kd_grouppos_client(kd_rk_owner_t *owner, char *errstr,
                               size_t errstr_size)
{
        return kd_group_reader(owner, owner->conf->fwd_group_id, errstr,
                               errstr_size);
}

void kd_grouppos_clear(kd_grouppos_t *pos)
{
        for (size_t i = 0; i < pos->cnt; i++)
                free(pos->parts[i].done);
        free(pos->parts);
        memset(pos, 0, sizeof(*pos));
}

int kd_grouppos_partitions_of(const struct rd_kafka_metadata *md,
                              const char *topic)
{
        for (int i = 0; i < md->topic_cnt; i++)
                if (!strcmp(md->topics[i].topic, topic))
                        return md->topics[i].err ? -1
                                                 : md->topics[i].partition_cnt;
        return -1;
}

/* Fills committed offsets, done sets and watermarks of pos's parts. */
static kdelay_err_t read_offsets(rd_kafka_t *rk, kd_grouppos_t *pos,
                                 char *errstr, size_t errstr_size)
{
        rd_kafka_topic_partition_list_t *l =
            rd_kafka_topic_partition_list_new((int)pos->cnt);
        if (!l)
                return kd_fail(KDELAY_ERR_NO_MEMORY, errstr, errstr_size,
                               "out of memory");
        for (size_t i = 0; i < pos->cnt; i++)
                rd_kafka_topic_partition_list_add(l, pos->parts[i].topic,
                                                  pos->parts[i].partition);
        rd_kafka_resp_err_t err =
            rd_kafka_committed(rk, l, KD_GROUPPOS_TIMEOUT_MS);
        const char *what = "committed offsets";
        for (size_t i = 0; !err && i < pos->cnt; i++) {
                kd_grouppos_part_t *p = &pos->parts[i];
                const rd_kafka_topic_partition_t *tp = &l->elems[i];
                p->committed = tp->offset >= 0 ? tp->offset : -1;
                /* A done set that does not decode is ignored: its records
                 * then count as not handled, which only reports more. */
                if (p->committed >= 0 && tp->metadata &&
                    kd_doneset_decode(tp->metadata, tp->metadata_size,
                                      p->committed, &p->done,
                                      &p->done_cnt) < 0) {
                        p->done = NULL;
                        p->done_cnt = 0;
                }
                err = kd_watermarks(rk, p->topic, p->partition, &p->low,
                                    &p->high, KD_GROUPPOS_TIMEOUT_MS);
                what = "watermarks";
        }
        rd_kafka_topic_partition_list_destroy(l);
        if (err)
                return kd_fail(KDELAY_ERR_KAFKA, errstr, errstr_size,
                               "%s of the tier topics: %s", what,
                               rd_kafka_err2str(err));
        return KDELAY_OK;
}

/* Adds an entry per partition of every tier topic of conf's prefix that
 * md names. */
static kdelay_err_t add_parts(const kdelay_conf_t *conf,
                              const struct rd_kafka_metadata *md,
                              kd_grouppos_t *pos, char *errstr,
                              size_t errstr_size)
{
        size_t total = 0;
        int64_t ms;
        for (int i = 0; i < md->topic_cnt; i++)
                if (!md->topics[i].err &&
                    !kd_tiers_topic_delay(conf->topic_prefix,
                                          md->topics[i].topic, &ms))
                        total += (size_t)md->topics[i].partition_cnt;
        pos->parts = calloc(total ? total : 1, sizeof(*pos->parts));
        if (!pos->parts)
                return kd_fail(KDELAY_ERR_NO_MEMORY, errstr, errstr_size,
                               "out of memory");
        for (int i = 0; i < md->topic_cnt; i++) {
                const rd_kafka_metadata_topic_t *t = &md->topics[i];
                if (t->err ||
                    kd_tiers_topic_delay(conf->topic_prefix, t->topic, &ms))
                        continue;
                for (int p = 0; p < t->partition_cnt && pos->cnt < total; p++) {
                        kd_grouppos_part_t *e = &pos->parts[pos->cnt++];
                        kd_strlcpy(e->topic, t->topic, sizeof(e->topic));
                        e->tier_ms = ms;
                        e->partition = t->partitions[p].id;
                        e->committed = -1;
                }
        }
        return KDELAY_OK;
}

kdelay_err_t kd_grouppos_read(rd_kafka_t *rk, const kdelay_conf_t *conf,
                              kd_grouppos_t *pos, char *errstr,
                              size_t errstr_size)
{
        memset(pos, 0, sizeof(*pos));
        const struct rd_kafka_metadata *md = NULL;
        rd_kafka_resp_err_t merr =
            rd_kafka_metadata(rk, 1, NULL, &md, KD_GROUPPOS_TIMEOUT_MS);
        if (merr)
                return kd_fail(KDELAY_ERR_KAFKA, errstr, errstr_size,
                               "metadata: %s", rd_kafka_err2str(merr));
        kdelay_err_t err = add_parts(conf, md, pos, errstr, errstr_size);
        rd_kafka_metadata_destroy(md);
        if (!err && pos->cnt)
                err = read_offsets(rk, pos, errstr, errstr_size);
        if (err)
                kd_grouppos_clear(pos);
        return err;
}

const kd_grouppos_part_t *kd_grouppos_find(const kd_grouppos_t *pos,
                                           const char *topic, int32_t partition)
{
        for (size_t i = 0; i < pos->cnt; i++)
                if (pos->parts[i].partition == partition &&
                    !strcmp(pos->parts[i].topic, topic))
                        return &pos->parts[i];
        return NULL;
}

int64_t kd_grouppos_start(const kd_grouppos_part_t *p)
{
        return p->committed >= p->low ? p->committed : p->low;
}

int kd_grouppos_handled(const kd_grouppos_part_t *p, int64_t offset)
{
        if (offset < kd_grouppos_start(p))
                return 1;
        for (size_t i = 0; i < p->done_cnt; i++)
                if (offset >= p->done[i].first && offset <= p->done[i].last)
                        return 1;
        return 0;
}
