/* How far this host's wall clock runs ahead of the broker's, as far as the
 * forwarder can tell: a record it produced at local time `sent` and that
 * the broker appended at `broker` (LogAppendTime, in the delivery report of
 * a hop or dead letter) was appended after it was sent, so the local clock
 * is ahead by at least sent - broker. The estimate is the largest such
 * bound seen over the last one to two windows of samples (a clock
 * corrected back is followed within two windows; without samples the
 * estimate stays), never below 0. Fires wait that much more, so that no
 * task fires before its fire-at by the broker's clock. */
#ifndef KD_SKEW_H
#define KD_SKEW_H

#include <stdint.h>

/* Samples are kept in windows of this long (monotonic). */
#define KD_SKEW_WINDOW_MS 15000

typedef struct kd_skew {
        int64_t cur_max, prev_max; /* INT64_MIN: no sample in the window */
        int64_t window_mono;       /* start of the current window */
        int64_t samples;
} kd_skew_t;

void kd_skew_init(kd_skew_t *s);
/* Samples further off than this (a day) are not believed: a broker time
 * missing (<= 0, as librdkafka's mock cluster reports) or nonsense. */
#define KD_SKEW_SANE_MS (24LL * 3600 * 1000)

/* One produce of ours, sent at local wall time sent_ms, appended by the
 * broker at broker_ms, observed at monotonic time now_mono. 0 when taken,
 * -1 when not believed (see KD_SKEW_SANE_MS). */
int kd_skew_observe(kd_skew_t *s, int64_t sent_ms, int64_t broker_ms,
                    int64_t now_mono);
/* The estimate, >= 0 ms. */
int64_t kd_skew_ahead_ms(const kd_skew_t *s);

#endif
