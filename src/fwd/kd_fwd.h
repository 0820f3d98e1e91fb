/* kdelay-forwarder, the top of the pipeline: create, run and destroy a
 * forwarder (fwd.c, loop.c). Used by main.c, the tests and the benchmark;
 * the stages see only kd_fwd_state.h and each other's headers. */
#ifndef KD_FWD_H
#define KD_FWD_H

#include <signal.h>

#include "kd_fwd_state.h"

/* fwd.c: lifecycle. On success conf and store are taken; store NULL makes
 * the MySQL store from conf. On failure both stay the caller's and errstr
 * says why. */
kdelay_err_t kd_fwd_new(kd_fwd_t **fp, kdelay_conf_t *conf,
                        kd_fate_store_t *store, char *errstr,
                        size_t errstr_size);
void kd_fwd_destroy(kd_fwd_t *f);
void kd_fwd_log_stats(kd_fwd_t *f, const char *event);

/* loop.c: runs until *stop is set, then shuts down cleanly. */
kdelay_err_t kd_fwd_run(kd_fwd_t *f, volatile sig_atomic_t *stop, int wake_fd);

#endif
