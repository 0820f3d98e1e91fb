/* SPDX-License-Identifier: Apache-2.0 */
/* The forwarder processes of a run, one per slot. Slots 0..base-1 are the
 * regular forwarders; slot `base` is the one added and removed later. A
 * slot keeps its forwarder.instance (torture-<slot>) across restarts.
 *
 * Not thread-safe: one thread at a time drives a fleet (the fault injector
 * during the run, main before and after it). */
#ifndef TT_FLEET_H
#define TT_FLEET_H

#include <sys/types.h>

#include "torture.h"

typedef struct tt_slot {
        pid_t pid;    /* -1 when no process */
        int stopping; /* signal sent, exit not yet collected; 0 = none */
        int young;    /* SIGTERMed within 200 ms of its spawn: it may not
                         have reached main (its handler) yet: exit 143 */
        int64_t started_ms;
        int starts;
        int unexpected_exits;    /* found dead without being told to */
        int64_t clock_offset_ms; /* its wall clock at its next start */
        int64_t peak_rss_kb;     /* largest VmHWM read before a stop */
        char log[700];
} tt_slot_t;

typedef struct tt_fleet {
        const tt_opts_t *opts;   /* borrowed */
        const tt_names_t *names; /* borrowed */
        int base;
        tt_slot_t slots[TT_MAX_SLOTS];
        /* forwarders that had not exited 30 s after a signal and were
         * killed (SIGKILL) by tt_fleet_wait */
        int stuck;
} tt_fleet_t;

void tt_fleet_init(tt_fleet_t *f, const tt_opts_t *o, const tt_names_t *n);

/* Starts slot's forwarder (logs appended to its file); the slot must have
 * no process (tt_fleet_wait() first). 0 on success. */
int tt_fleet_start(tt_fleet_t *f, int slot);

/* A process that has not been told to stop. */
int tt_fleet_running(const tt_fleet_t *f, int slot);

/* Sends sig to slot's forwarder and returns at once; the slot is then
 * "stopping" until tt_fleet_wait() collects the exit. -1 when the slot
 * was not running. */
int tt_fleet_signal(tt_fleet_t *f, int slot, int sig);

/* Waits for slot's process to exit (SIGKILL after timeout_ms). Returns
 * its exit status (128+signal when killed), -1 when there was none. */
int tt_fleet_wait(tt_fleet_t *f, int slot, int timeout_ms);

/* Whether exit status rc after a SIGTERM is a clean stop: 0, or death by
 * the signal of a process too young to have its handler. */
int tt_fleet_clean_term(const tt_fleet_t *f, int slot, int rc);

/* Signal and wait. */
int tt_fleet_stop(tt_fleet_t *f, int slot, int sig);

/* SIGTERM to every running slot at once (stopping ones are not signalled
 * again: a second SIGTERM makes a forwarder exit at once), then waits for
 * every process. Returns how many SIGTERMed forwarders exited non-zero. */
int tt_fleet_stop_all(tt_fleet_t *f);

/* Reaps slots whose process exited on its own (a crash); logs and counts
 * each. Returns how many were found. */
int tt_fleet_reap(tt_fleet_t *f);

/* The largest peak RSS (VmHWM, kB) any forwarder process of the fleet
 * reached, as read before each was signalled; -1 when none was read. */
int64_t tt_fleet_peak_rss_kb(const tt_fleet_t *f);

/* Lines containing needle in every slot's log, added up. */
int tt_fleet_log_count(const tt_fleet_t *f, const char *needle);

/* One `event=dead_lettered` line of a forwarder's log: a dead letter
 * delivered (its broker acknowledged it) at ts_ms (epoch, the line's
 * ts), of task id ("-": none read, a malformed record) read at topic,
 * partition and offset (the tier record). */
typedef struct tt_dead_line {
        int64_t ts_ms;
        char id[128];
        char topic[256];
        int partition;
        long long offset;
} tt_dead_line_t;

/* Calls fn for every such line of every slot's log whose ts is in
 * [from_ms, to_ms]. Lines it cannot read are skipped. */
void tt_fleet_dead_lettered(const tt_fleet_t *f, int64_t from_ms, int64_t to_ms,
                            void (*fn)(const tt_dead_line_t *l, void *ctx),
                            void *ctx);

/* From slot's log: the last forwarder_stopped line's statements_per_fire
 * and fired counters. 0 when found. */
int tt_fleet_last_stats(const tt_fleet_t *f, int slot, double *spf,
                        long long *fired);

#endif
