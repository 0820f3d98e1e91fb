/* SPDX-License-Identifier: Apache-2.0 */
/* exactly_once's offset bookkeeping (eos_offsets.c): each open source
 * partition's last commit point sent and the done set an earlier owner
 * committed above it. The offsets and done sets go into every transaction
 * as offset metadata (kd_offtrack.h's encoding); read back when a
 * partition is assigned, the done set names the records to skip. No
 * forwarder state: mode_eos.c keeps a kd_eos_offsets_t and calls these. */
#ifndef KD_EOS_OFFSETS_H
#define KD_EOS_OFFSETS_H

#include <stddef.h>
#include <stdint.h>

#include <librdkafka/rdkafka.h>

#include <kdelay/kdelay.h>

#include "core/kd_part.h"
#include "core/kd_task.h"

/* The done set above the commit point is committed as offset metadata, at
 * most Kafka's default offset.metadata.max.bytes (4096). Its bitmap form
 * needs one character per 6 offsets from the commit point to the last
 * done one, so a record this far above the commit point waits (the
 * partition pauses) until older records are handled; completions in any
 * order never make the set larger. */
#define KD_OFFSET_METADATA_MAX 4096
#define KD_DONE_SPAN_MAX       24000

/* A partition as this mode sees it (p->mode). */
typedef struct kd_eos_part {
        kd_part_t *part;                 /* borrowed: the partition */
        struct kd_eos_part *prev, *next; /* kd_eos_offsets_t.parts */
        int64_t committed;               /* last commit point sent, -1 none */
        /* Records above the committed offset that an earlier owner handled
         * (its committed done set); skipped when read. */
        kd_offrange_t *skip; /* owned */
        size_t skip_cnt, skip_pos;
} kd_eos_part_t;

typedef struct kd_eos_offsets {
        kd_eos_part_t *parts; /* the open partitions */
} kd_eos_offsets_t;

/* Offsets and done sets of the open partitions, each one's commit point
 * recorded as sent; NULL when none has a commit point, or when *failed (a
 * done set that cannot be written: the transaction must abort). Caller
 * destroys it. */
rd_kafka_topic_partition_list_t *kd_eos_offsets_list(kd_eos_offsets_t *o,
                                                     const kdelay_conf_t *conf,
                                                     int *failed);

/* How the fetch reaches the consumer (mode_eos.c passes its context's
 * services): committed, rd_kafka_committed of parts; stopping, 1 once the
 * forwarder is asked to stop. */
typedef struct kd_eos_consumer {
        rd_kafka_resp_err_t (*committed)(void *arg,
                                         rd_kafka_topic_partition_list_t *parts,
                                         int timeout_ms);
        int (*stopping)(void *arg);
        void *arg;
} kd_eos_consumer_t;

/* One attempt of the fetch below waits this long for an answer, in calls
 * of at most KD_EOS_FETCH_SLICE_MS: a stop asked meanwhile is seen within
 * a slice (a SIGTERM while Kafka is away returns promptly). */
#define KD_EOS_FETCH_TIMEOUT_MS 10000
#define KD_EOS_FETCH_SLICE_MS   1000
#define KD_EOS_FETCH_ATTEMPTS   30

/* The committed offsets and done sets of parts, read with require-stable
 * semantics (a read_committed consumer waits for pending transactional
 * commits), written into parts as the offsets to start at. Retried until
 * it succeeds: 0; -1 when stopping (checked before each slice); -2 after
 * KD_EOS_FETCH_ATTEMPTS failed attempts. */
int kd_eos_offsets_fetch(const kd_eos_consumer_t *c, const kdelay_conf_t *conf,
                         rd_kafka_topic_partition_list_t *parts);

/* p (its p->mode a kd_eos_part_t) opens at tp's committed offset; tp's
 * metadata, our done set, names the records above it that the previous
 * owner handled: their count. */
size_t kd_eos_offsets_opened(kd_eos_offsets_t *o, const kdelay_conf_t *conf,
                             kd_part_t *p,
                             const rd_kafka_topic_partition_t *tp);

/* p closes: out of the list, its done set freed. */
void kd_eos_offsets_closed(kd_eos_offsets_t *o, kd_part_t *p);

/* 1 when the record at offset of p was handled by an earlier owner.
 * Records come in offset order: the done set is walked once. */
int kd_eos_offsets_handled(kd_part_t *p, int64_t offset);

/* 1 when t may be taken in: not so far above p's commit point that the
 * done set would outgrow the metadata (low: half as far). */
int kd_eos_offsets_admit(const kd_part_t *p, const kd_task_t *t, int low);

#endif
