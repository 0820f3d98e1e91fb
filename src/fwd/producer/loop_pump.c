/* SPDX-License-Identifier: Apache-2.0 */
/* The nested event pump (kd_loop_pump.h): the producer room's drain, and
 * the fate store's answers meanwhile. */
#include "kd_loop_pump.h"

#include <errno.h>
#include <poll.h>
#include <string.h>

#include "kd_producer.h"
#include "kd_util.h"
#include "store/kd_store.h"

int kd_pump_store_idle(kd_fwd_t *f)
{
        return f->store.inflight == 0;
}

int kd_pump_produces_done(kd_fwd_t *f)
{
        return kd_producer_quiet(f);
}

/* One turn: what the store finished, and the producers' reports, waiting
 * at most wait_ms for either. -1 when the store's fd cannot be polled. */
static int turn(kd_fwd_t *f, int wait_ms)
{
        int produces = kd_producer_inflight(f) > 0;
        if (f->store.inflight > 0) {
                struct pollfd p = {kd_store_fd(f), POLLIN, 0};
                if (poll(&p, 1, produces ? 0 : wait_ms) < 0 && errno != EINTR)
                        return -1;
                kd_store_serve(f);
        }
        kd_producer_poll(f, !produces ? 0 : f->store.inflight ? 10 : wait_ms);
        return 0;
}

int kd_loop_pump(kd_fwd_t *f, int64_t deadline, kd_pump_until_t until)
{
        if (f->pumping) {
                kd_log(f->conf, KDELAY_LOG_ERROR,
                       "event=bug what=nested_pump action=return");
                return -1;
        }
        f->pumping = 1;
        kd_producer_drain_begin(f);
        int rc = 0;
        while (!until(f)) {
                int64_t left = deadline - kd_fwd_mono_ms(f);
                if (left <= 0) {
                        rc = -1;
                        break;
                }
                if (turn(f, left > 100 ? 100 : (int)left)) {
                        kd_log(f->conf, KDELAY_LOG_ERROR,
                               "event=poll_failed what=pump err=\"%s\"",
                               strerror(errno));
                        rc = -1;
                        break;
                }
        }
        f->pumping = 0;
        return rc;
}
