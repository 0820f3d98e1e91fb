/* SPDX-License-Identifier: Apache-2.0 */
/* kdelay-forwarder, the top of the pipeline: create, run and destroy a
 * forwarder (fwd.c, loop.c). Used by main.c, the tests and the benchmark;
 * the stages see only kd_fwd_state.h and each other's headers. */
#ifndef KD_FWD_H
#define KD_FWD_H

#include <signal.h>

#include "kd_fwd_state.h"

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
/* fwd.c: librdkafka writes a byte to fds[1] whenever q turns non-empty;
 * -1 (errno) when the pipe cannot be made. */
int kd_fwd_io_wakeup(rd_kafka_queue_t *q, int fds[2]);
/* fwd.c: the producer failed for good (err, why: its fatal error, or 0
 * when the mode found it): replaces it with a new one of the same
 * properties, whose queue wakes fds[1] of f->kafka.io_fds, and lets the
 * mode recover. -1 when it cannot: a fence (another process owns the
 * transactional.id), a renewal within KD_RENEW_MIN_INTERVAL_MS of the
 * last (unless the mode set renew_for_record: one record alone in its
 * transaction broke the producer, and it goes to the dead letters), or
 * the new producer failing; the caller stops and exits non-zero. */
#define KD_RENEW_MIN_INTERVAL_MS 30000
int kd_fwd_producer_renew(kd_fwd_t *f, rd_kafka_resp_err_t err,
                          const char *why);
/* fwd.c: replaces the healthy producer with a new one (the mode asked:
 * f->kafka.reset), as a renewal does but with none of its limits; -1 as
 * kd_fwd_producer_renew when the new one fails. */
int kd_fwd_producer_reset(kd_fwd_t *f, const char *why);

/* fwd.c: ends the solo producer (if any): its produces purged and
 * reported (the fire stage retries them); a later need makes a new one. */
void kd_fwd_solo_close(kd_fwd_t *f);

/* loop.c: runs until *stop is set, then shuts down cleanly. */
kdelay_err_t kd_fwd_run(kd_fwd_t *f, volatile sig_atomic_t *stop, int wake_fd);

/* The exit status of a forwarder whose forwarder.http_listen could not be
 * listened on (the binaries' KD_EXIT_HTTP_LISTEN, src/common/cli.h). */
#define KD_FWD_EXIT_HTTP_LISTEN 6

/* 1 when kd_fwd_run failed because forwarder.http_listen could not be
 * listened on (already logged, naming the address and the fix). */
int kd_fwd_http_failed(const kd_fwd_t *f);

#endif
