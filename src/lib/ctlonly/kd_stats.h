/* SPDX-License-Identifier: Apache-2.0 */
/* What `kdelayctl stats` shows: per tier of the ladder, the records the
 * forwarder group has not committed yet (end offset minus the group's
 * committed offset, summed over the tier's partitions) and the age of the
 * oldest unhandled head; the group's state and members; the fate table's
 * rows by state (FIRED including the FIRING rows a run covers). */
#ifndef KD_STATS_H
#define KD_STATS_H

#include <stdint.h>

#include "kd_conf.h"
#include "kd_fate.h"
#include "kd_tiers.h"

typedef struct kd_tier_stats {
        char topic[256];
        int partitions;    /* -1: the topic is missing */
        int64_t end;       /* sum of the partitions' end offsets */
        int64_t committed; /* sum of the group's committed offsets (a
                              partition without one counts its start) */
        int64_t pending;   /* end - committed */
        /* Of the partitions' heads (the records at the committed offsets,
         * read back): the oldest one's age (now - its append time) and
         * the largest time past its due time; -1 when nothing is pending
         * or no head could be read within the bound. */
        int64_t head_age_ms;
        int64_t head_overdue_ms;
} kd_tier_stats_t;

typedef struct kd_stats {
        kd_tier_stats_t tiers[KD_TIERS_MAX];
        size_t tier_cnt;
        int64_t pending;      /* all tiers */
        char group_state[32]; /* "Stable", "Empty", "Dead", ... */
        int members;
        char member[16][256];  /* client ids of the first 16 members */
        kd_fate_counts_t fate; /* the fate table's rows by state */
} kd_stats_t;

/* The Kafka part (tiers and group) of conf's prefix and
 * forwarder.group_id. */
kdelay_err_t kd_stats_kafka(const kdelay_conf_t *conf, kd_stats_t *s,
                            char *errstr, size_t errstr_size);
/* The fate table's rows by state as status reads them: a FIRING row a
 * run of delivered claims covers counts FIRED (kd_fate_counts). */
kdelay_err_t kd_stats_fate(const kdelay_conf_t *conf, kd_stats_t *s,
                           char *errstr, size_t errstr_size);

#endif
