/* SPDX-License-Identifier: Apache-2.0 */
/* kdelay-forwarder, the top of the pipeline: create, run and destroy a
 * forwarder (fwd.c, loop.c). Used by main.c, the tests and the benchmark;
 * the rooms see only core/kd_fwd_core.h, their own state and the
 * functions of the rooms below them. */
#ifndef KD_FWD_H
#define KD_FWD_H

#include <signal.h>

#include "core/kd_fwd_core.h"

/* fwd.c: lifecycle. On success conf and store are taken; store NULL makes
 * the MySQL store from conf. clock NULL: the host's clocks; a manual one
 * (a test's, kd_timer.h): the forwarder's clock is manual from birth,
 * reading what clock reads now, and moves when f->timers.clock is
 * advanced. On failure conf and store stay the caller's and errstr says
 * why. */
kdelay_err_t kd_fwd_new(kd_fwd_t **fp, kdelay_conf_t *conf,
                        kd_fate_store_t *store, const kd_clocksrc_t *clock,
                        char *errstr, size_t errstr_size);
void kd_fwd_destroy(kd_fwd_t *f);
void kd_fwd_log_stats(kd_fwd_t *f, const char *event);
/* fwd.c: the metrics and readiness to the HTTP endpoint (when on). */
void kd_fwd_publish(kd_fwd_t *f);
/* loop.c: runs until *stop is set, then shuts down cleanly. */
kdelay_err_t kd_fwd_run(kd_fwd_t *f, volatile sig_atomic_t *stop, int wake_fd);

/* The exit status of a forwarder whose forwarder.http_listen could not be
 * listened on (the binaries' KD_EXIT_HTTP_LISTEN, src/common/cli.h). */
#define KD_FWD_EXIT_HTTP_LISTEN 6

/* 1 when kd_fwd_run failed because forwarder.http_listen could not be
 * listened on (already logged, naming the address and the fix). */
int kd_fwd_http_failed(const kd_fwd_t *f);

#endif
