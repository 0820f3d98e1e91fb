/* SPDX-License-Identifier: Apache-2.0 */
/* The forwarder's ground (struct kd_fwd): what every room stands on, and
 * one handle per room's state. Top composes it (top/fwd.c; the public
 * API is top/kd_fwd.h); each room completes only its own handles' types,
 * in its state header, kd_<room>_state.h, private to it
 * (cmake/fwd_rooms.cmake refuses it to any other room), so another room's
 * fields do not compile outside it: a room asks another's functions. One thread
 * runs one event loop (loop.c); librdkafka's threads only wake it through queue
 * io-event fds.
 *
 * A record flows intake → schedule → claim → pace/fire → settle
 * (docs/forwarder.md has the diagram); the delivery mode is an ops table
 * (kd_mode_ops.h) with one implementation per mode, between the fire and
 * settle stages. */
#ifndef KD_FWD_CORE_H
#define KD_FWD_CORE_H

/* The delivery modes see the forwarder only through their context
 * (modes/kd_mode_ctx.h): a mode file defines KD_MODE_SEAM, and any header
 * that would show it the forwarder's fields stops its compilation here. */
#ifdef KD_MODE_SEAM
#error "a delivery mode sees the forwarder only through kd_mode_ctx.h"
#endif

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#include <librdkafka/rdkafka.h>

#include <kdelay/kdelay.h>

#include "kd_conf.h"
#include "kd_fate.h"
#include "kd_log.h"
#include "kd_metrics.h"
#include "kd_mode_ops.h"
#include "kd_part.h"
#include "kd_refusals.h"
#include "kd_targets.h"
#include "kd_task.h"
#include "kd_timer.h"

typedef struct kd_fwd kd_fwd_t;

/* The group's rebalance protocol (pipeline/rebalance.c). */
typedef enum kd_rebalance_protocol {
        KD_REBALANCE_UNKNOWN = 0, /* not joined yet */
        KD_REBALANCE_EAGER,
        KD_REBALANCE_COOPERATIVE
} kd_rebalance_protocol_t;

/* The consumer (top/fwd.c creates it; top/loop.c polls it; the intake,
 * the rebalance, the modes' offsets and ops' gauges use its handle). */
typedef struct kd_fwd_consumer {
        rd_kafka_t *rk;      /* owned */
        rd_kafka_queue_t *q; /* owned reference */
        int io_fds[2];       /* its queue's wake-up pipe */
        /* The group's rebalance protocol once joined. Fixed for the
         * process's life (every configured assignor has the same type), so
         * asked of librdkafka once: asked in a revoke that
         * rd_kafka_consumer_close serves, rd_kafka_rebalance_protocol can
         * block for ever (librdkafka#4041, seen in librdkafka 2.0.2). */
        kd_rebalance_protocol_t protocol;
} kd_fwd_consumer_t;

/* The rooms' state, each complete only in its room's private header. */
typedef struct kd_producer kd_producer_t;       /* producer */
typedef struct kd_fwd_store kd_fwd_store_t;     /* store */
typedef struct kd_fwd_intake kd_fwd_intake_t;   /* pipeline: intake */
typedef struct kd_fwd_held kd_fwd_held_t;       /* pipeline: held set */
typedef struct kd_behind kd_behind_t;           /* pipeline: due, waiting */
typedef struct kd_fwd_claim kd_fwd_claim_t;     /* pipeline: claim */
typedef struct kd_fwd_outage kd_fwd_outage_t;   /* pipeline: outage */
typedef struct kd_fwd_journal kd_fwd_journal_t; /* pipeline: journal */
typedef struct kd_fwd_pace kd_fwd_pace_t;       /* pipeline: pacing */
typedef struct kd_fwd_clock kd_fwd_clock_t;     /* pipeline: broker clock */
typedef struct kd_fwd_settle kd_fwd_settle_t;   /* pipeline: settle */
typedef struct kd_fwd_hooks kd_fwd_hooks_t;     /* pipeline: test seams */
typedef struct kd_fwd_ops kd_fwd_ops_t;         /* ops */
typedef struct kd_fwd_top kd_fwd_top_t;         /* top */

struct kd_fwd {
        kd_rk_owner_t owner; /* first: both clients' librdkafka opaque */
        kdelay_conf_t *conf; /* owned */
        kd_timers_t timers;  /* the one clock, and every timer */
        kd_metrics_t metrics;
        /* This process's name: forwarder.instance, else "<host>-<pid>",
         * in [A-Za-z0-9._-] (kd_instance.h): claim tokens, the journal's
         * records, logs, client.id. */
        char instance[64];
        kd_fwd_consumer_t consumer;
        const kd_mode_ops_t *mode; /* the delivery mode */
        /* What the mode sees (kd_mode_ops.h), the argument of its
         * operations; its state, mode_ctx.state, is the mode's. */
        kd_mode_ctx_t mode_ctx;
        /* forwarder.allowed_targets: the conf's, parsed when set */
        const kd_targets_t *allowed;
        kd_refusals_t refusals; /* what targets were seen to refuse */

        /* One handle per room (owned; made and freed by its room:
         * kd_producer_new/_free, kd_store_state_new/_free,
         * kd_pipeline_state_new/_free (the stages share one allocation),
         * kd_ops_state_new/_free, and top's own in top/fwd.c; top/fwd.c
         * calls them all). */
        kd_producer_t *producer;
        kd_fwd_store_t *store;
        kd_fwd_intake_t *intake;
        kd_fwd_held_t *held;
        /* Tasks already due wait (kd_behind.h): fed by the fire and claim
         * stages through kd_held_note_late, read by the claim stage. */
        kd_behind_t *behind;
        kd_fwd_claim_t *claim;
        kd_fwd_outage_t *outage;
        kd_fwd_journal_t *journal;
        kd_fwd_pace_t *pace;
        kd_fwd_clock_t *clock;
        kd_fwd_settle_t *settle;
        kd_fwd_hooks_t *hooks;
        kd_fwd_ops_t *ops;
        kd_fwd_top_t *top;

        int64_t shutdown_deadline;   /* monotonic; 0 = not shutting down */
        volatile sig_atomic_t *stop; /* borrowed: set by signal handlers;
                                        &no_stop before kd_fwd_run */
        volatile sig_atomic_t no_stop;
        int wake_fd; /* borrowed: readable on a signal */
        /* The forwarder stops for good and exits non-zero (kd_fwd_fatal):
         * an unrecoverable Kafka error, out of memory, a failed poll. */
        int fatal;
        const char *fatal_why; /* static: the first reason */
        int pumping;           /* inside kd_loop_pump (kd_loop_pump.h) */
};

/* Monotonic now, from the forwarder's one clock (f->timers.clock): what
 * every interval, backoff and threshold is measured with. */
static inline int64_t kd_fwd_mono_ms(const kd_fwd_t *f)
{
        return kd_clocksrc_mono_ms(&f->timers.clock);
}

/* This host's wall time (epoch ms), from the forwarder's one clock: for
 * timestamps this host sets (a send's time, a boot id); compare fire-at
 * and append times with kd_fwd_now. */
static inline int64_t kd_fwd_wall_ms(const kd_fwd_t *f)
{
        return kd_clocksrc_wall_ms(&f->timers.clock);
}

/* Now by the broker's wall clock, as far as the forwarder can tell: what
 * fire-at and append times are compared with. */
static inline int64_t kd_fwd_now(const kd_fwd_t *f)
{
        return kd_timers_now(&f->timers, KD_CLOCK_WALL);
}

/* The one way the forwarder stops for good: the loop ends, and the
 * process exits non-zero (a supervisor starts a fresh one, which re-reads
 * every record not committed). why: static, the first one is logged at
 * the exit (the caller logs the event itself). */
static inline void kd_fwd_fatal(kd_fwd_t *f, const char *why)
{
        if (!f->fatal)
                f->fatal_why = why;
        f->fatal = 1;
        *f->stop = 1;
}

/* Out of memory where a task would be stranded: log, stop, exit non-zero
 * (a restart re-reads every record not committed). */
static inline void kd_fwd_oom(kd_fwd_t *f, const char *what)
{
        kd_log(f->conf, KDELAY_LOG_ERROR,
               "event=out_of_memory what=%s action=exit", what);
        kd_fwd_fatal(f, "out_of_memory");
}

#endif
