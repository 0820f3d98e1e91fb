/* SPDX-License-Identifier: Apache-2.0 */
/* Tier plans: what a ladder costs in Kafka writes for a distribution of
 * delays, each path computed by kd_path_plan (the forwarder's rules). */
#ifndef KD_PLAN_H
#define KD_PLAN_H

#include <stddef.h>
#include <stdint.h>

#include <kdelay/error.h>

#include "kd_path.h"

typedef enum kd_dist_kind {
        KD_DIST_LOGUNIFORM, /* log-uniform over [lo, hi] */
        KD_DIST_UNIFORM,    /* uniform over [lo, hi] */
        KD_DIST_LIST        /* every delay of a list once */
} kd_dist_kind_t;

typedef struct kd_dist {
        kd_dist_kind_t kind;
        int64_t lo_ms, hi_ms;
        int64_t *delays; /* owned; KD_DIST_LIST */
        size_t cnt;
} kd_dist_t;

/* Parses "loguniform:A:B", "uniform:A:B" (durations, 0 < A <= B) or
 * "file:PATH" (one delay a line: a duration or integer milliseconds;
 * blank lines and "#" comments skipped). kd_dist_clear frees it. */
kdelay_err_t kd_dist_parse(kd_dist_t *d, const char *spec, char *errstr,
                           size_t errstr_size);
void kd_dist_clear(kd_dist_t *d);

typedef struct kd_plan_result {
        size_t samples;
        double mean_writes, mean_hops;
        unsigned p50_writes, p99_writes, max_writes;
        uint64_t writes_by_tier[KD_TIERS_MAX]; /* schedules and hops into */
        uint64_t hops_by_tier[KD_TIERS_MAX];   /* hops into */
} kd_plan_result_t;

/* Plans samples delays drawn from d with seed (a list is taken whole,
 * samples ignored). KDELAY_ERR_NO_MEMORY or KDELAY_ERR_INVALID_ARG (no
 * samples) with errstr. */
kdelay_err_t kd_plan_run(const kd_path_rules_t *rules, const kd_dist_t *d,
                         size_t samples, uint64_t seed, kd_plan_result_t *out,
                         char *errstr, size_t errstr_size);

#endif
