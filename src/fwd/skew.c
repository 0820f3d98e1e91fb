/* Under the fire stage, the clock-skew estimate (kd_skew.h). Owns only the
 * kd_skew_t it is given. */
#include "kd_skew.h"

void kd_skew_init(kd_skew_t *s)
{
        s->cur_max = s->prev_max = INT64_MIN;
        s->window_mono = 0;
        s->samples = 0;
}

/* Starts new windows until now_mono is in the current one. */
static void roll(kd_skew_t *s, int64_t now_mono)
{
        if (s->window_mono == 0) {
                s->window_mono = now_mono;
                return;
        }
        if (now_mono - s->window_mono < KD_SKEW_WINDOW_MS)
                return;
        /* One window passed: the current one becomes the previous; more
         * than one: both are stale. */
        s->prev_max = now_mono - s->window_mono < 2 * KD_SKEW_WINDOW_MS
                          ? s->cur_max
                          : INT64_MIN;
        s->cur_max = INT64_MIN;
        s->window_mono = now_mono;
}

int kd_skew_observe(kd_skew_t *s, int64_t sent_ms, int64_t broker_ms,
                    int64_t now_mono)
{
        int64_t bound = sent_ms - broker_ms;
        if (broker_ms <= 0 || bound > KD_SKEW_SANE_MS ||
            bound < -KD_SKEW_SANE_MS)
                return -1;
        roll(s, now_mono);
        if (bound > s->cur_max)
                s->cur_max = bound;
        s->samples++;
        return 0;
}

int64_t kd_skew_ahead_ms(const kd_skew_t *s)
{
        int64_t m = s->cur_max > s->prev_max ? s->cur_max : s->prev_max;
        return m > 0 ? m : 0;
}
