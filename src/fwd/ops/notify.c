/* SPDX-License-Identifier: Apache-2.0 */
/* systemd notifications (kd_notify.h). */
#include "kd_notify.h"

#include <systemd/sd-daemon.h>

#include "kd_log.h"
#include "kd_ops_state.h"
#include "kd_util.h"

static void watchdog_cb(kd_timer_t *tm, void *arg)
{
        kd_fwd_t *f = arg;
        sd_notify(0, "WATCHDOG=1");
        if (kd_timer_arm(&f->timers, tm, KD_CLOCK_MONO,
                         kd_fwd_mono_ms(f) + f->ops->watchdog_ms, watchdog_cb,
                         f))
                kd_fwd_oom(f, "watchdog_timer");
}

void kd_notify_ready(kd_fwd_t *f)
{
        uint64_t usec = 0;
        int rc = sd_notifyf(0, "READY=1\nSTATUS=forwarding as %s", f->instance);
        if (rc <= 0)
                return; /* not under systemd (or it cannot be told) */
        if (sd_watchdog_enabled(0, &usec) > 0 && usec >= 2000) {
                f->ops->watchdog_ms = (int64_t)(usec / 2000); /* half, in ms */
                kd_timer_init(&f->ops->watchdog, watchdog_cb, f);
                if (kd_timer_arm(&f->timers, &f->ops->watchdog, KD_CLOCK_MONO,
                                 kd_fwd_mono_ms(f) + f->ops->watchdog_ms,
                                 watchdog_cb, f))
                        kd_fwd_oom(f, "watchdog_timer");
        }
        kd_log(f->conf, KDELAY_LOG_INFO,
               "event=systemd_notified ready=1 watchdog_ms=%lld",
               (long long)f->ops->watchdog_ms);
}

void kd_notify_stopping(kd_fwd_t *f)
{
        if (f->ops->watchdog_ms)
                kd_timer_disarm(&f->timers, &f->ops->watchdog);
        sd_notify(0, "STOPPING=1\nSTATUS=stopping");
}
