/* SPDX-License-Identifier: Apache-2.0 */
/* What a delivery mode sees of the forwarder beyond its context's fields
 * (core/kd_mode_ops.h, kd_mode_ctx_t, the only argument of its
 * operations, as nng's protocols see their socket through nni_sock and
 * librdkafka's callers its handles): everything that reaches another part
 * of the forwarder is a service below, implemented in mode_ctx.c, the one
 * file that sees both sides: the settle stage, the producer room (the
 * transactional calls on its main producer), the consumer's offsets, the
 * intake's room and the rebalance's rewind, stop and the shutdown's
 * deadline. The seam is the compiler's: a mode file defines KD_MODE_SEAM
 * before its includes, and kd_fwd_core.h (struct kd_fwd, included by
 * every stage's header) then fails to compile in it. */
#ifndef KD_MODE_CTX_H
#define KD_MODE_CTX_H

#include <stddef.h>
#include <stdint.h>

#include <librdkafka/rdkafka.h>

#include "core/kd_mode_ops.h"

/* fwd.c: m for f (conf, metrics, timers, refusals; state NULL). */
void kd_mode_ctx_init(kd_mode_ctx_t *m, struct kd_fwd *f);

/* --- the clock (the timer service's) -------------------------------- */

/* Monotonic now: intervals, backoffs, thresholds (kd_fwd_mono_ms). */
static inline int64_t kd_mode_mono_ms(const kd_mode_ctx_t *m)
{
        return kd_clocksrc_mono_ms(&m->timers->clock);
}

/* Now by the broker's wall clock (kd_fwd_now). */
static inline int64_t kd_mode_now(const kd_mode_ctx_t *m)
{
        return kd_timers_now(m->timers, KD_CLOCK_WALL);
}

/* --- stopping ---------------------------------------------------------- */

/* 1 once a signal (or a fatal error) asked the forwarder to stop. */
int kd_mode_stopping(const kd_mode_ctx_t *m);
/* Asks the forwarder to stop (the loop ends; not an error by itself). */
void kd_mode_stop(kd_mode_ctx_t *m);
/* The shutdown's deadline (monotonic; 0 = not shutting down). */
int64_t kd_mode_shutdown_deadline(const kd_mode_ctx_t *m);
/* kd_fwd_fatal and kd_fwd_oom (kd_fwd_core.h): stop for good, exit
 * non-zero; why and what static. */
void kd_mode_fatal(kd_mode_ctx_t *m, const char *why);
void kd_mode_oom(kd_mode_ctx_t *m, const char *what);

/* --- the intake and the rebalance ----------------------------------- */

/* A commit point moved: paused partitions may have room again. */
void kd_mode_room(kd_mode_ctx_t *m);
/* A transaction aborted: every partition is read again from its
 * committed offset. */
void kd_mode_rewind(kd_mode_ctx_t *m);

/* --- the settle stage (kd_settle.h) ----------------------------------- */

void kd_mode_settle_done(kd_mode_ctx_t *m, kd_task_t *t);
/* kd_settle_delivered: at_least_once's delivered op. */
void kd_mode_settle_delivered(kd_mode_ctx_t *m, kd_task_t *t);
/* kd_settle_mark: how a produce of t as `as` is put on record. */
kd_settle_mark_t kd_mode_mark(const kd_task_t *t, kd_task_state_t as);
void kd_mode_settle_release(kd_mode_ctx_t *m, kd_task_t *t);
/* kd_settle_fired and kd_settle_dead; seq is the task's token's (0 =
 * none), which a run then covers (forwarder.fate_marks=runs). */
void kd_mode_settle_fired(kd_mode_ctx_t *m, const char *id, int64_t late_ms,
                          int unclaimed, uint64_t seq);
void kd_mode_settle_dead(kd_mode_ctx_t *m, const char *id, const char *reason,
                         uint64_t seq);
/* kd_settle_dead_index, and the reason of such an index. */
int kd_mode_dead_index(const char *reason);
const char *kd_mode_dead_reason(int index);

/* --- the producer room (kd_producer.h) -------------------------------- */

/* The main producer (NULL when there is none); at_least_once's solo
 * producer (NULL when it cannot be made, logged); at_least_once's bulk
 * producer for a backlog's late fires (kd_producer_bulk; NULL when it
 * cannot be made: the main one then). */
rd_kafka_t *kd_mode_producer_main(const kd_mode_ctx_t *m);
rd_kafka_t *kd_mode_producer_solo(kd_mode_ctx_t *m);
rd_kafka_t *kd_mode_producer_bulk(kd_mode_ctx_t *m);
/* A fire later than this (t->late_ms) goes through the bulk producer. */
#define KD_BULK_LATE_MS 100
size_t kd_mode_producer_inflight(const kd_mode_ctx_t *m);
void kd_mode_producer_renew_soon(kd_mode_ctx_t *m, int for_record);
void kd_mode_producer_reset_soon(kd_mode_ctx_t *m);
int kd_mode_producer_reset_due(const kd_mode_ctx_t *m);
/* The main producer's reports waiting now. */
void kd_mode_producer_serve_main(kd_mode_ctx_t *m);

/* The transactional calls on the main producer (librdkafka's, same
 * answers: NULL or an error the caller destroys). send_offsets takes the
 * consumer's group metadata (kd_mode_group_metadata). */
rd_kafka_error_t *kd_mode_txn_init(kd_mode_ctx_t *m, int timeout_ms);
rd_kafka_error_t *kd_mode_txn_begin(kd_mode_ctx_t *m);
rd_kafka_error_t *kd_mode_txn_send_offsets(
    kd_mode_ctx_t *m, const rd_kafka_topic_partition_list_t *offsets,
    const rd_kafka_consumer_group_metadata_t *cgmd, int timeout_ms);
rd_kafka_error_t *kd_mode_txn_commit(kd_mode_ctx_t *m, int timeout_ms);
rd_kafka_error_t *kd_mode_txn_abort(kd_mode_ctx_t *m, int timeout_ms);

/* --- the consumer's offsets ------------------------------------------- */

/* rd_kafka_commit of offsets (async or not). */
rd_kafka_resp_err_t
kd_mode_commit(kd_mode_ctx_t *m, const rd_kafka_topic_partition_list_t *offsets,
               int async);
/* rd_kafka_committed: parts' committed offsets and metadata. */
rd_kafka_resp_err_t kd_mode_committed(kd_mode_ctx_t *m,
                                      rd_kafka_topic_partition_list_t *parts,
                                      int timeout_ms);
/* The consumer's group metadata (caller destroys; NULL out of memory). */
rd_kafka_consumer_group_metadata_t *
kd_mode_group_metadata(const kd_mode_ctx_t *m);

#endif
