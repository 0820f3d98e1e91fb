/* SPDX-License-Identifier: Apache-2.0 */
/* How far this host's wall clock runs ahead of the broker's (negative:
 * behind), as far as the forwarder can tell. A record it produced at
 * local time `sent`, whose delivery report came at local time `recv`, and
 * that the broker appended at `broker` (LogAppendTime, in the report of a
 * hop or dead letter), was appended between the two: the local clock is
 * ahead by at least sent - broker and at most recv - broker. Over the
 * last one or two windows of samples (a clock corrected is followed
 * within two windows; without samples the estimate stays) the estimate is
 * the smallest upper bound when the clock is ahead (the largest lower
 * bound above 0) or behind (the smallest upper bound below 0), else 0: the
 * true offset never exceeds it, so the correction never makes a fire early
 * by the broker's clock, only late by a report's trip. */
#ifndef KD_SKEW_H
#define KD_SKEW_H

#include <stdint.h>

/* Samples are kept in windows of this long (monotonic). */
#define KD_SKEW_WINDOW_MS 15000

typedef struct kd_skew_window {
        int64_t lo; /* largest lower bound; INT64_MIN: none */
        int64_t hi; /* smallest upper bound; INT64_MAX: none */
} kd_skew_window_t;

typedef struct kd_skew {
        kd_skew_window_t cur, prev;
        int64_t window_mono; /* start of the current window */
        int64_t samples;
} kd_skew_t;

void kd_skew_init(kd_skew_t *s);
/* Samples further off than this (a day) are not believed: a broker time
 * missing (<= 0, as librdkafka's mock cluster reports) or nonsense. */
#define KD_SKEW_SANE_MS (24LL * 3600 * 1000)

/* One produce of ours, sent at local wall time sent_ms, reported at
 * recv_ms, appended by the broker at broker_ms, observed at monotonic time
 * now_mono. 0 when taken, -1 when not believed (see KD_SKEW_SANE_MS). */
int kd_skew_observe(kd_skew_t *s, int64_t sent_ms, int64_t recv_ms,
                    int64_t broker_ms, int64_t now_mono);
/* The estimate in ms: > 0 ahead, < 0 behind. */
int64_t kd_skew_ahead_ms(const kd_skew_t *s);

#endif
