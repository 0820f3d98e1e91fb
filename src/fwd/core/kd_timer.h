/* SPDX-License-Identifier: Apache-2.0 */
/* The forwarder's timer service: every deadline duty (a held task's claim,
 * a claimed task's fire, retries, claim and FIRED-mark flushes, commits,
 * statistics, partition wake-ups) is a kd_timer_t with a callback. The
 * loop asks for the next deadline and runs what is due: one place per duty.
 *
 * A timer runs on one of two clocks, chosen when it is armed: wall time
 * for deadlines derived from a task's fire-at or a record's append time —
 * the broker's wall time, as far as the forwarder can tell (this host's
 * less its measured lead, wall_ahead_ms) —, monotonic time for every
 * interval (backoff, batching, commit cadence), so that a clock step
 * never stretches or cuts an interval. Not
 * thread-safe: the forwarder's one thread owns it.
 *
 * Both clocks are read through the service's clock source
 * (kd_clocksrc_t), the forwarder's one way to tell the time: the host's
 * clocks by default, or a manual clock a test sets and advances, so that
 * every deadline, interval and threshold runs in virtual time. */
#ifndef KD_TIMER_H
#define KD_TIMER_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "kd_heap.h"

typedef enum kd_clock {
        KD_CLOCK_WALL, /* the host's wall time less wall_ahead_ms: fire-at,
                          append time, by the broker's clock */
        KD_CLOCK_MONO  /* monotonic time: intervals */
} kd_clock_t;

/* Where the forwarder reads the time: the host's clocks (kd_clocksrc_real,
 * the default), or a manual clock that moves only when told to
 * (kd_clocksrc_manual). Readable from any thread (the HTTP server's reads
 * the loop's last turn against it): a manual clock's readings are atomic,
 * and the kind does not change once the forwarder runs. */
typedef struct kd_clocksrc {
        int manual;              /* 0: the host's clocks */
        _Atomic int64_t mono_ms; /* manual only: monotonic time */
        _Atomic int64_t wall_ms; /* manual only: epoch milliseconds */
} kd_clocksrc_t;

/* The host's clocks: monotonic time, and epoch milliseconds (including
 * the process's test clock offset, kd_clock_offset_set). */
void kd_clocksrc_real(kd_clocksrc_t *c);
/* A manual clock reading mono_ms and wall_ms until set or advanced. */
void kd_clocksrc_manual(kd_clocksrc_t *c, int64_t mono_ms, int64_t wall_ms);
/* Monotonic milliseconds: never goes back. */
int64_t kd_clocksrc_mono_ms(const kd_clocksrc_t *c);
/* Wall time, epoch milliseconds: the host's, not the broker's. */
int64_t kd_clocksrc_wall_ms(const kd_clocksrc_t *c);
/* Manual clock only (-1 otherwise): both readings move ms ahead (ms >= 0;
 * -1 when negative). */
int kd_clocksrc_advance(kd_clocksrc_t *c, int64_t ms);
/* Waits ms (>= 0) on c: the host's clocks sleep, a manual one moves ms
 * ahead at once (a wait inside a call, in virtual time). */
void kd_clocksrc_sleep(kd_clocksrc_t *c, int64_t ms);
/* Manual clock only (-1 otherwise): the wall time steps to wall_ms (as a
 * host's clock can, either way); monotonic time does not move. */
int kd_clocksrc_set_wall(kd_clocksrc_t *c, int64_t wall_ms);

typedef struct kd_timer kd_timer_t;

/* Runs a due timer, already disarmed; it may re-arm itself. */
typedef void kd_timer_cb_t(kd_timer_t *tm, void *arg);

struct kd_timer {
        kd_heap_node_t node; /* first: the heap's node */
        kd_timer_cb_t *cb;
        void *arg; /* borrowed; passed to cb */
        kd_clock_t clock;
};

typedef struct kd_timers {
        kd_heap_t wall, mono; /* armed timers of each clock */
        kd_clocksrc_t clock;  /* where both clocks are read */
        /* How far this host's wall clock runs ahead of the broker's
         * (kd_skew.h): wall timers run on the broker's time. */
        int64_t wall_ahead_ms;
} kd_timers_t;

/* Now on clock: wall time by the broker's clock, or monotonic time. */
int64_t kd_timers_now(const kd_timers_t *ts, kd_clock_t clock);

/* Empty, on the host's clocks (kd_clocksrc_real); a test may make
 * ts->clock manual before arming anything. */
void kd_timers_init(kd_timers_t *ts);
/* Frees the heaps; armed timers are disarmed, not run. */
void kd_timers_clear(kd_timers_t *ts);

void kd_timer_init(kd_timer_t *tm, kd_timer_cb_t *cb, void *arg);
int kd_timer_armed(const kd_timer_t *tm);

/* Arms tm (moving it if armed) to run at `at` on `clock`, with callback
 * cb and arg (they replace the timer's). -1 when out of memory; tm is
 * then disarmed. */
int kd_timer_arm(kd_timers_t *ts, kd_timer_t *tm, kd_clock_t clock, int64_t at,
                 kd_timer_cb_t *cb, void *arg);

/* Arms tm at `at` unless it is armed on the same clock earlier already. */
int kd_timer_arm_by(kd_timers_t *ts, kd_timer_t *tm, kd_clock_t clock,
                    int64_t at, kd_timer_cb_t *cb, void *arg);

void kd_timer_disarm(kd_timers_t *ts, kd_timer_t *tm);

/* When tm is due on its clock; INT64_MAX when not armed. */
int64_t kd_timer_due(const kd_timer_t *tm);

/* Milliseconds from now until the earliest armed timer is due (0 when one
 * is due), at most max_ms. */
int kd_timers_wait_ms(const kd_timers_t *ts, int max_ms);

/* Runs every timer due now, earliest first (a timer armed by a callback
 * for now runs in the same call); at most `limit` callbacks, so that Kafka
 * events get their turn. Returns the number run. */
size_t kd_timers_run(kd_timers_t *ts, size_t limit);

#endif
