/* SPDX-License-Identifier: Apache-2.0 */
/* kdelay's own topics (tiers + dead letters): create and check them with
 * the Kafka Admin API. Used by `kdelayctl topics` and the integration
 * tests; the forwarder does not create or check topics. */
#ifndef KD_TOPICS_H
#define KD_TOPICS_H

#include <stddef.h>
#include <stdint.h>

#include <kdelay/conf.h>
#include <kdelay/error.h>

#include "kd_tiers.h"

#define KD_TOPICS_MAX (KD_TIERS_MAX + 2) /* the tiers, dead, journal */

typedef enum kd_topic_state {
        KD_TOPIC_MISSING,
        KD_TOPIC_EXISTS,  /* was there before */
        KD_TOPIC_CREATED, /* created by this call */
        KD_TOPIC_FAILED,  /* creation failed: see problem */
        KD_TOPIC_SKIPPED  /* not needed (the journal under
                             fate_outage_policy=hold) and this principal
                             may not create it: left alone */
} kd_topic_state_t;

typedef struct kd_topic_report {
        char name[256];
        int64_t min_retention_ms; /* what its tier needs; -1 dead topic or
                                     journal */
        kd_topic_state_t state;
        int partitions;    /* -1 unknown */
        int needed;        /* the configured forwarders use it (the
                              journal only under fate_outage_policy=fire) */
        int ok;            /* after check: every config as required */
        char problem[512]; /* "; "-separated findings, "" when none */
} kd_topic_report_t;

/* Fills reports[] (KD_TOPICS_MAX entries) with the tier topics, the dead
 * topic and the journal, and *np with their number, stating whether each exists
 * and its partition count. */
kdelay_err_t kd_topics_list(const kdelay_conf_t *conf,
                            kd_topic_report_t *reports, size_t *np,
                            char *errstr, size_t errstr_size);

/* Creates every missing topic (partitions / replication_factor from conf
 * unless > 0 / != 0 overrides are given) with LogAppendTime, delete cleanup,
 * retention.bytes -1 and retention.ms = tier delay * 2 +
 * topics.retention_margin (the dead topic and the journal:
 * topics.dead_retention); topics
 * that exist are left alone. Then waits until every created topic has a
 * leader for each partition. A topic the broker refused is KD_TOPIC_FAILED
 * with the broker's reason in problem, and the call returns
 * KDELAY_ERR_KAFKA; errstr names the first such topic and why.
 * A topic refused for want of the Create ACL (a least-privilege principal,
 * e.g. the forwarder's in an init container) is looked up alone: problem
 * then says whether it is missing (the principal may Describe it) or
 * hidden (it may not), and which ACL (operation and resource) is lacking.
 * Such a topic that is not needed (the journal under
 * forwarder.fate_outage_policy=hold) is KD_TOPIC_SKIPPED and no error. */
kdelay_err_t kd_topics_create(const kdelay_conf_t *conf, int partitions,
                              int replication_factor,
                              kd_topic_report_t *reports, size_t *np,
                              char *errstr, size_t errstr_size);

/* Checks every topic's configuration: present, cleanup policy delete,
 * retention.bytes -1, and for tier topics also LogAppendTime and
 * retention.ms -1 or >= tier delay + topics.retention_margin (the dead
 * topic's timestamp type and retention are not checked). Sets each report's
 * ok/problem. Returns KDELAY_ERR_CONFIG when any topic is not ok. */
kdelay_err_t kd_topics_check(const kdelay_conf_t *conf,
                             kd_topic_report_t *reports, size_t *np,
                             char *errstr, size_t errstr_size);

/* What is known of a topic tasks are delivered to (kdelayctl dead replay
 * checks a replay against it). */
typedef struct kd_target_info {
        char name[256];            /* in: the topic */
        int exists;                /* 1 yes, 0 no, -1 unknown */
        int config_read;           /* 1: compact and max_message_bytes set */
        int compact;               /* cleanup.policy includes compact */
        int64_t max_message_bytes; /* -1 unknown */
        char cleanup_policy[64];   /* as the broker says it; "" unknown */
        char problem[256];         /* why something is unknown, "" when not */
} kd_target_info_t;

/* Fills t[0..n) (each name set by the caller, distinct) from one metadata
 * request and one DescribeConfigs request: whether each topic exists, its
 * cleanup.policy and max.message.bytes. What cannot be read (the principal
 * lacks Describe or DescribeConfigs on it, or the broker did not answer)
 * stays unknown with the reason in problem; a topic hidden from metadata
 * whose configuration cannot be read either is of unknown existence.
 * Fails only when no admin client can be made (then every entry is
 * unknown with that reason). */
kdelay_err_t kd_topics_describe_targets(const kdelay_conf_t *conf,
                                        kd_target_info_t *t, size_t n,
                                        char *errstr, size_t errstr_size);

#endif
