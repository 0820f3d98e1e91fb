/* SPDX-License-Identifier: Apache-2.0 */
/* Where the forwarder group stands in the tier topics: for every tier
 * partition, the group's committed offset and (exactly_once) the done set
 * committed with it as offset metadata, and the partition's watermarks.
 * A record the group has handled — hopped, fired or dead-lettered, and
 * committed — is below the committed offset or in the done set; every
 * other record from the committed offset on is still the group's to
 * handle. Read through a consumer of the group that never joins it. */
#ifndef KD_GROUPPOS_H
#define KD_GROUPPOS_H

#include <stddef.h>
#include <stdint.h>

#include <librdkafka/rdkafka.h>

#include "kd_conf.h"
#include "kd_doneset.h"

typedef struct kd_grouppos_part {
        char topic[256];
        int64_t tier_ms; /* the tier's delay, from the topic's name */
        int32_t partition;
        int64_t low, high;   /* watermarks */
        int64_t committed;   /* the group's offset; -1: none committed */
        kd_offrange_t *done; /* owned: handled records above committed */
        size_t done_cnt;
} kd_grouppos_part_t;

typedef struct kd_grouppos {
        kd_grouppos_part_t *parts; /* owned, by tier then partition */
        size_t cnt;
} kd_grouppos_t;

/* A consumer of conf's forwarder group that never joins it (assign only,
 * no commits), reading committed records only, with partition EOF
 * events. owner must outlive it. NULL on failure, with errstr. */
/* A consumer of group `group` (borrowed) that never joins it: it reads
 * partitions it assigns itself, read_committed, from the earliest offset
 * when none is committed, reports each partition's end, and commits only
 * when told. NULL on failure, with errstr set; owner must outlive it. */
rd_kafka_t *kd_group_reader(kd_rk_owner_t *owner, const char *group,
                            char *errstr, size_t errstr_size);

rd_kafka_t *kd_grouppos_client(kd_rk_owner_t *owner, char *errstr,
                               size_t errstr_size);

/* The partition count of topic in md; -1 when md lacks it or has an
 * error for it. */
int kd_grouppos_partitions_of(const struct rd_kafka_metadata *md,
                              const char *topic);

/* Reads the group's position on every partition of every tier topic of
 * conf's prefix (`<prefix>.tier.<duration>`, in the ladder or not: as the
 * forwarders, which read them all) through rk (a kd_grouppos_client). On
 * error *pos is empty. */
kdelay_err_t kd_grouppos_read(rd_kafka_t *rk, const kdelay_conf_t *conf,
                              kd_grouppos_t *pos, char *errstr,
                              size_t errstr_size);

void kd_grouppos_clear(kd_grouppos_t *pos);

/* The entry of topic/partition, or NULL. Borrowed from pos. */
const kd_grouppos_part_t *kd_grouppos_find(const kd_grouppos_t *pos,
                                           const char *topic,
                                           int32_t partition);

/* Where the group reads the partition next: its committed offset, or the
 * low watermark when it has none (or it is below the retention). */
int64_t kd_grouppos_start(const kd_grouppos_part_t *p);

/* 1 when the group has handled offset: below where it starts or in its
 * committed done set. */
int kd_grouppos_handled(const kd_grouppos_part_t *p, int64_t offset);

#endif
