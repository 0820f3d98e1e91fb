/* SPDX-License-Identifier: Apache-2.0 */
/* systemd's service notifications (sd_notify from libsystemd), for a unit
 * with Type=notify (deploy/systemd/): READY=1 once the forwarder has
 * subscribed, STOPPING=1 when it shuts down, and WATCHDOG=1 from a loop
 * timer at half of the unit's WatchdogSec, so that a loop stuck past it
 * gets the service restarted. Outside systemd (no $NOTIFY_SOCKET) every
 * call does nothing. */
#ifndef KD_NOTIFY_H
#define KD_NOTIFY_H

#include "core/kd_fwd_core.h"

/* READY=1 with a STATUS= line; arms the watchdog timer when the unit asks
 * for one. */
void kd_notify_ready(kd_fwd_t *f);
/* STOPPING=1; the watchdog is fed no more (the stop has its own
 * timeout). */
void kd_notify_stopping(kd_fwd_t *f);

#endif
