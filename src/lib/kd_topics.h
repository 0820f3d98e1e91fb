/* kdelay's own topics (tiers + dead letters): create and check them with
 * the Kafka Admin API. Used by kdelayctl and the forwarder's start-up. */
#ifndef KD_TOPICS_H
#define KD_TOPICS_H

#include <stddef.h>

#include <kdelay/conf.h>
#include <kdelay/error.h>

#include "kd_tiers.h"

#define KD_TOPICS_MAX (KD_TIERS_MAX + 1)

typedef enum kd_topic_state {
        KD_TOPIC_MISSING,
        KD_TOPIC_EXISTS,  /* was there before */
        KD_TOPIC_CREATED, /* created by this call */
        KD_TOPIC_FAILED   /* creation failed: see problem */
} kd_topic_state_t;

typedef struct kd_topic_report {
        char name[256];
        int64_t min_retention_ms; /* what its tier needs; -1 dead topic */
        kd_topic_state_t state;
        int partitions;    /* -1 unknown */
        int ok;            /* after check: every config as required */
        char problem[512]; /* "; "-separated findings, "" when none */
} kd_topic_report_t;

/* Fills reports[] (KD_TOPICS_MAX entries) with the tier topics then the dead
 * topic, and *np with their number, stating whether each exists. */
kdelay_err_t kd_topics_list(const kdelay_conf_t *conf,
                            kd_topic_report_t *reports, size_t *np,
                            char *errstr, size_t errstr_size);

/* Creates every missing topic (partitions/replication_factor from conf
 * unless > 0 / != 0 overrides given) with LogAppendTime, delete cleanup and
 * a retention of tier delay * 2 + topics.retention_margin. */
kdelay_err_t kd_topics_create(const kdelay_conf_t *conf, int partitions,
                              int replication_factor,
                              kd_topic_report_t *reports, size_t *np,
                              char *errstr, size_t errstr_size);

/* Checks every topic's configuration: present, LogAppendTime, cleanup
 * policy delete, retention.bytes -1, retention.ms >= tier delay +
 * topics.retention_margin. Sets each report's ok/problem. Returns
 * KDELAY_ERR_CONFIG when any topic is not ok. */
kdelay_err_t kd_topics_check(const kdelay_conf_t *conf,
                             kd_topic_report_t *reports, size_t *np,
                             char *errstr, size_t errstr_size);

#endif
