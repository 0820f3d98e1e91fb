/* SPDX-License-Identifier: Apache-2.0 */
/* The ops room's state: private to the ops room (and the unit tests); every
 * other room asks the ops' functions (kd_tiercheck.h, kd_notify.h, ...).
 * cmake/fwd_rooms.cmake refuses this header to the other rooms. */
#ifndef KD_OPS_STATE_H
#define KD_OPS_STATE_H

#include <stdint.h>

#include "core/kd_fwd_core.h"

/* The longest /readyz reason for missing tier topics (tiercheck.c). */
#define KD_TIERS_WHY_MAX 480

struct kd_fwd_ops {
        /* The ladder's tier topics that do not exist (tiercheck.c): their
         * names, comma-separated ("" = none), and the 503 reason. */
        kd_timer_t tiercheck_timer;
        char tiers_missing[384];
        char tiers_why[KD_TIERS_WHY_MAX];
        kd_timer_t watchdog; /* systemd's WATCHDOG=1 (notify.c) */
        int64_t watchdog_ms; /* its interval; 0 = not asked for */
};

#endif
