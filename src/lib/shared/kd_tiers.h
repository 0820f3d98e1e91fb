/* SPDX-License-Identifier: Apache-2.0 */
/* Delay tiers: the sorted list of tier delays and the choice of a tier. */
#ifndef KD_TIERS_H
#define KD_TIERS_H

#include <stddef.h>
#include <stdint.h>

#include <kdelay/error.h>

#define KD_TIERS_MAX     32
#define KD_TIER_NAME_MAX 32

typedef struct kd_tier {
        int64_t delay_ms;
        char name[KD_TIER_NAME_MAX]; /* canonical duration text, "30m" */
} kd_tier_t;

/* Ascending by delay, no duplicates, 1..KD_TIERS_MAX entries. A value
 * type: copy it freely. */
typedef struct kd_tiers {
        kd_tier_t v[KD_TIERS_MAX];
        size_t cnt;
} kd_tiers_t;

/* Parses "1s,1m,30m,7d" (commas and/or spaces; any order). Each tier is a
 * positive duration of at most KDELAY_MAX_DELAY_MS; duplicates rejected. */
kdelay_err_t kd_tiers_parse(kd_tiers_t *out, const char *list, char *errstr,
                            size_t errstr_size);

/* Adds one tier given as duration text, keeping order (used when a list is
 * read item by item). */
kdelay_err_t kd_tiers_add(kd_tiers_t *tiers, const char *text, char *errstr,
                          size_t errstr_size);

/* Index of the tier a task with remaining delay remaining_ms belongs in:
 * the largest tier whose delay <= remaining_ms, or the smallest tier when
 * remaining_ms is below every tier (including <= 0). tiers->cnt > 0. */
size_t kd_tiers_choose(const kd_tiers_t *tiers, int64_t remaining_ms);

/* Index of the tier named name ("30m"), or -1. */
int kd_tiers_find(const kd_tiers_t *tiers, const char *name);

/* Writes "<prefix>.tier.<name>" into buf. */
void kd_tiers_topic(const kd_tiers_t *tiers, size_t idx, const char *prefix,
                    char *buf, size_t buf_size);

/* The delay of tier topic "<prefix>.tier.<duration>" into *delay_ms: 0,
 * or -1 when topic is not a tier topic of prefix (whether or not the
 * delay is in a ladder: a retired tier still holds pending tasks). */
int kd_tiers_topic_delay(const char *prefix, const char *topic,
                         int64_t *delay_ms);

/* The regular expression (librdkafka's "^..." subscription) that matches
 * every tier topic name of prefix, into buf (KD_TIERS_PATTERN_MAX bytes
 * hold any prefix). -1 with buf "" when it does not fit (never a cut
 * pattern that would match more). */
#define KD_TIERS_PATTERN_MAX 512
int kd_tiers_pattern(const char *prefix, char *buf, size_t buf_size);

/* Writes "1s,1m,30m,7d" into buf. */
void kd_tiers_format(const kd_tiers_t *tiers, char *buf, size_t buf_size);

#endif
