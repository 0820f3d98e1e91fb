/* SPDX-License-Identifier: Apache-2.0 */
/* The loop's one turn over a table of event sources, and the nested event
 * pump that turns it over the store and the producers (kd_loop_pump.h):
 * the producer room's drain, and the fate store's answers meanwhile. */
#include "kd_loop_pump.h"

#include <assert.h>
#include <errno.h>
#include <poll.h>
#include <string.h>
#include <unistd.h>

#include "kd_producer.h"
#include "kd_util.h"
#include "store/kd_store.h"

static int serve_store(kd_fwd_t *f)
{
        kd_store_serve(f);
        return 0;
}

static int serve_producers(kd_fwd_t *f)
{
        kd_producer_serve(f);
        return 0;
}

const kd_loop_src_t kd_loop_src_store = {kd_store_fd, serve_store,
                                         KD_LOOP_SRC_NESTED};
const kd_loop_src_t kd_loop_src_producer = {
    kd_producer_wake_fd, serve_producers,
    KD_LOOP_SRC_PIPE | KD_LOOP_SRC_NESTED};

static void drain_pipe(int fd)
{
        char buf[256];
        while (read(fd, buf, sizeof(buf)) > 0)
                ;
}

int kd_loop_turn(kd_fwd_t *f, const kd_loop_src_t *const *src, size_t n,
                 int wait_ms)
{
        struct pollfd fds[KD_LOOP_SRC_MAX];
        int at[KD_LOOP_SRC_MAX]; /* source i's entry in fds; -1: none */
        nfds_t nfds = 0;
        if (n > KD_LOOP_SRC_MAX) {
                errno = EINVAL;
                return -1;
        }
        for (size_t i = 0; i < n; i++) {
                assert(!f->pumping || (src[i]->flags & KD_LOOP_SRC_NESTED));
                int fd = src[i]->fd(f);
                at[i] = fd >= 0 ? (int)nfds : -1;
                if (fd >= 0)
                        fds[nfds++] = (struct pollfd){fd, POLLIN, 0};
        }
        if (poll(fds, nfds, wait_ms) < 0 && errno != EINTR)
                return -1;
        for (size_t i = 0; i < n; i++)
                if ((src[i]->flags & KD_LOOP_SRC_PIPE) && at[i] >= 0 &&
                    (fds[at[i]].revents & POLLIN))
                        drain_pipe(fds[at[i]].fd);
        int more = 0;
        for (size_t i = 0; i < n; i++)
                if (src[i]->serve)
                        more |= src[i]->serve(f);
        return more;
}

int kd_pump_store_idle(kd_fwd_t *f)
{
        return kd_store_inflight(f) == 0;
}

int kd_pump_produces_done(kd_fwd_t *f)
{
        return kd_producer_quiet(f);
}

/* What the nested pump serves: the store's answers, the producers'
 * reports. */
static const kd_loop_src_t *const pump_src[] = {&kd_loop_src_store,
                                                &kd_loop_src_producer};
_Static_assert(KD_ARRAY_LEN(pump_src) <= KD_LOOP_SRC_MAX, "pump sources");

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
                if (kd_loop_turn(f, pump_src, KD_ARRAY_LEN(pump_src),
                                 left > 100 ? 100 : (int)left) < 0) {
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
