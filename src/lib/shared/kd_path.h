/* SPDX-License-Identifier: Apache-2.0 */
/* A task's path through the tiers: when a tier record is due, whether a
 * due record hops or is held, and the whole path of one delay (the
 * forwarder's rules, shared by kdelayctl tiers plan). */
#ifndef KD_PATH_H
#define KD_PATH_H

#include <stdint.h>

#include "kd_tiers.h"

/* When a record appended at append_ms to a tier of delay tier_ms is due:
 * the tier's time, or earlier when its fire-at comes within the hold
 * horizon (handling it then keeps the tier's bound and lets short delays
 * in the smallest tier fire on time). */
int64_t kd_path_due(int64_t fire_at_ms, int64_t append_ms, int64_t tier_ms,
                    int64_t hold_horizon_ms);

/* 1 when a record taken at now hops to a smaller tier, 0 when it is held
 * in memory until its fire-at. */
int kd_path_hops(int64_t fire_at_ms, int64_t now_ms, int64_t hold_horizon_ms,
                 int64_t lookahead_ms);

/* The rules a path is computed with. */
typedef struct kd_path_rules {
        const kd_tiers_t *tiers; /* borrowed */
        int64_t hold_horizon_ms;
        int64_t lookahead_ms;
        int64_t lag_ms; /* each read this late after its wake-up (>= 0) */
} kd_path_rules_t;

/* One task's path: every Kafka write, counted by the tier written. */
typedef struct kd_path {
        unsigned writes; /* schedule + hops + fire */
        unsigned hops;
        unsigned writes_by_tier[KD_TIERS_MAX]; /* schedule and hops into */
        unsigned hops_by_tier[KD_TIERS_MAX];   /* hops into each tier */
        int64_t held_ms; /* how long the task was held in memory */
} kd_path_t;

/* The path of a task scheduled delay_ms before its fire-at, as the
 * library schedules it and the forwarder moves it. */
void kd_path_plan(const kd_path_rules_t *rules, int64_t delay_ms,
                  kd_path_t *out);

#endif
