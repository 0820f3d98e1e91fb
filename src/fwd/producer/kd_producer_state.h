/* SPDX-License-Identifier: Apache-2.0 */
/* The producer room's state (kd_producer.h): private to producer*.c
 * (and the unit tests); everything else asks the room's functions
 * (check_fwd_layers.sh). */
#ifndef KD_PRODUCER_STATE_H
#define KD_PRODUCER_STATE_H

#include "kd_producer.h"

/* A new producer's handles made at once for the targets its predecessor
 * wrote: at most this many. */
#define KD_WARM_TARGETS_MAX 64
/* The topic handle cache (producer_tophandles.c): slots, direct-mapped. */
#define KD_TOPHANDLE_SLOTS 1024

struct kd_producer {
        rd_kafka_t *main;         /* owned */
        rd_kafka_queue_t *main_q; /* owned reference */
        /* at_least_once: a second producer that sends one record a batch,
         * for records whose batch the broker refused as a whole (made
         * when first needed: kd_producer_solo); NULL = none. */
        rd_kafka_t *solo;         /* owned */
        rd_kafka_queue_t *solo_q; /* owned reference; wakes io_fds */
        /* at_least_once: a third producer for fires already late by more
         * than KD_BULK_LATE_MS (a backlog), in large batches (linger.ms 5);
         * made when first needed (kd_producer_bulk); NULL = none. */
        rd_kafka_t *bulk;         /* owned */
        rd_kafka_queue_t *bulk_q; /* owned reference; wakes io_fds */
        int64_t bulk_failed_mono; /* the last bulk producer not made; 0 */
        int io_fds[2];            /* the producers' queue wake-up pipe */
        kd_producer_dr_cb_t *dr_cb;
        size_t inflight;          /* produces awaiting a report */
        int64_t last_report_mono; /* when a delivery report last came */
        /* The producer failed for good and a new one may recover
         * (kd_producer_recover, from the loop). */
        int renew;
        int64_t renewed_mono; /* the last renewal; 0 = none */
        /* The renewal is for a record alone in its transaction (the
         * mode dead-letters it): exempt from the renewal interval. */
        int renew_for_record;
        /* The mode wants a new producer though the old one is healthy
         * (kd_producer_reset_soon). From the loop, when set. */
        int reset;
        /* The mode's producer properties, for a renewal (valid until the
         * mode's destroy). */
        const char *const *defaults, *const *forced;
        /* The producer's handles of every ladder tier and the dead topic,
         * made at start so that their metadata is fetched before the first
         * hop (a first produce to a topic waits about a second for it). */
        rd_kafka_topic_t *warm[KD_TIERS_MAX + 1]; /* owned */
        size_t warm_cnt;
        /* The handles of the topics fires go to (kd_producer_topic); a new
         * producer's made at once for the targets its predecessor wrote
         * (at most KD_WARM_TARGETS_MAX). */
        rd_kafka_topic_t *tophandles[KD_TOPHANDLE_SLOTS]; /* owned */
        /* The bulk producer's own, alike (made at its first fire to
         * each target: a backlog's fires wait for no metadata scan). */
        rd_kafka_topic_t *bulk_handles[KD_TOPHANDLE_SLOTS]; /* owned */
};

/* Drops every handle of kd_producer_topic (before the producer is
 * destroyed); kd_producer_bulk_topics_release, the bulk producer's. */
void kd_producer_topics_release(kd_producer_t *p);
void kd_producer_bulk_topics_release(kd_producer_t *p);
/* The bulk producer's handle of topic (kd_producer_topic's cache, its
 * own table); NULL as there. */
rd_kafka_topic_t *kd_producer_bulk_topic(kd_producer_t *p, const char *topic);

#endif
