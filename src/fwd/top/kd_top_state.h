/* SPDX-License-Identifier: Apache-2.0 */
/* Top's own state (the statistics line, the HTTP endpoint): private to
 * top and the unit tests. */
#ifndef KD_TOP_STATE_H
#define KD_TOP_STATE_H

#include "core/kd_fwd_core.h"

struct kd_fwd_top {
        kd_timer_t stats_timer;
        struct kd_http *http;  /* owned; NULL = forwarder.http_listen off */
        int http_failed;       /* kd_fwd_http_failed */
        kd_timer_t http_timer; /* publishes metrics and readiness */
};

#endif
