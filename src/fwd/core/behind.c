/* SPDX-License-Identifier: Apache-2.0 */
/* The "behind" signal (kd_behind.h). */
#include "kd_behind.h"

int kd_behind_note(kd_behind_t *b, int64_t mono, int64_t late_ms, int held_half,
                   int held_full)
{
        int was = kd_behind_on(b, mono);
        if (late_ms > KD_BEHIND_MS || (held_full && late_ms > 0)) {
                b->on = 1;
                b->seen_mono = mono;
                if (!was)
                        b->turns_on++;
                return was ? 0 : 1;
        }
        if (!was) {
                b->on = 0; /* a stale signal ends here */
                return 0;
        }
        if (late_ms >= KD_BEHIND_CLEAR_MS) {
                b->seen_mono = mono; /* still late enough: kept on */
                return 0;
        }
        if (held_half || mono - b->seen_mono < KD_BEHIND_CALM_MS)
                return 0;
        b->on = 0;
        return -1;
}

int kd_behind_on(const kd_behind_t *b, int64_t mono)
{
        return b->on && mono - b->seen_mono < KD_BEHIND_STALE_MS;
}
