/* SPDX-License-Identifier: Apache-2.0 */
/* The delivery modes' context (kd_mode_ctx.h): its services, each a thin
 * call into the stage or room that owns what it touches. The one file of
 * the mode module that sees the forwarder (kd_fwd_t). */
#include "kd_mode_ctx.h"
#include "pipeline/kd_intake.h"
#include "pipeline/kd_rebalance.h"
#include "pipeline/kd_settle.h"
#include "producer/kd_producer.h"

void kd_mode_ctx_init(kd_mode_ctx_t *m, kd_fwd_t *f)
{
        m->conf = f->conf;
        m->metrics = &f->metrics;
        m->timers = &f->timers;
        m->refusals = &f->refusals;
        m->state = NULL;
        m->fwd = f;
}

int kd_mode_stopping(const kd_mode_ctx_t *m)
{
        return *m->fwd->stop != 0;
}

void kd_mode_stop(kd_mode_ctx_t *m)
{
        *m->fwd->stop = 1;
}

int64_t kd_mode_shutdown_deadline(const kd_mode_ctx_t *m)
{
        return m->fwd->shutdown_deadline;
}

void kd_mode_fatal(kd_mode_ctx_t *m, const char *why)
{
        kd_fwd_fatal(m->fwd, why);
}

void kd_mode_oom(kd_mode_ctx_t *m, const char *what)
{
        kd_fwd_oom(m->fwd, what);
}

void kd_mode_room(kd_mode_ctx_t *m)
{
        kd_intake_room(m->fwd);
}

void kd_mode_rewind(kd_mode_ctx_t *m)
{
        kd_rebalance_rewind(m->fwd);
}

void kd_mode_settle_done(kd_mode_ctx_t *m, kd_task_t *t)
{
        kd_settle_done(m->fwd, t);
}

void kd_mode_settle_release(kd_mode_ctx_t *m, kd_task_t *t)
{
        kd_settle_release(m->fwd, t);
}

void kd_mode_settle_fired(kd_mode_ctx_t *m, const char *id, int64_t late_ms,
                          int unclaimed, uint64_t seq)
{
        kd_settle_fired(m->fwd, id, late_ms, unclaimed, seq);
}

void kd_mode_settle_dead(kd_mode_ctx_t *m, const char *id, const char *reason,
                         uint64_t seq)
{
        kd_settle_dead(m->fwd, id, reason, seq);
}

void kd_mode_settle_delivered(kd_mode_ctx_t *m, kd_task_t *t)
{
        kd_settle_delivered(m->fwd, t);
}

kd_settle_mark_t kd_mode_mark(const kd_task_t *t, kd_task_state_t as)
{
        return kd_settle_mark(t, as);
}

int kd_mode_dead_index(const char *reason)
{
        return kd_settle_dead_index(reason);
}

const char *kd_mode_dead_reason(int index)
{
        return kd_settle_dead_reasons[index];
}

rd_kafka_t *kd_mode_producer_main(const kd_mode_ctx_t *m)
{
        return kd_producer_main(m->fwd);
}

rd_kafka_t *kd_mode_producer_solo(kd_mode_ctx_t *m)
{
        return kd_producer_solo(m->fwd);
}

rd_kafka_t *kd_mode_producer_bulk(kd_mode_ctx_t *m)
{
        return kd_producer_bulk(m->fwd);
}

size_t kd_mode_producer_inflight(const kd_mode_ctx_t *m)
{
        return kd_producer_inflight(m->fwd);
}

void kd_mode_producer_renew_soon(kd_mode_ctx_t *m, int for_record)
{
        kd_producer_renew_soon(m->fwd, for_record);
}

void kd_mode_producer_reset_soon(kd_mode_ctx_t *m)
{
        kd_producer_reset_soon(m->fwd);
}

int kd_mode_producer_reset_due(const kd_mode_ctx_t *m)
{
        return kd_producer_reset_due(m->fwd);
}

void kd_mode_producer_serve_main(kd_mode_ctx_t *m)
{
        kd_producer_serve_main(m->fwd);
}

rd_kafka_error_t *kd_mode_txn_init(kd_mode_ctx_t *m, int timeout_ms)
{
        return rd_kafka_init_transactions(kd_producer_main(m->fwd), timeout_ms);
}

rd_kafka_error_t *kd_mode_txn_begin(kd_mode_ctx_t *m)
{
        return rd_kafka_begin_transaction(kd_producer_main(m->fwd));
}

rd_kafka_error_t *kd_mode_txn_send_offsets(
    kd_mode_ctx_t *m, const rd_kafka_topic_partition_list_t *offsets,
    const rd_kafka_consumer_group_metadata_t *cgmd, int timeout_ms)
{
        return rd_kafka_send_offsets_to_transaction(kd_producer_main(m->fwd),
                                                    offsets, cgmd, timeout_ms);
}

rd_kafka_error_t *kd_mode_txn_commit(kd_mode_ctx_t *m, int timeout_ms)
{
        return rd_kafka_commit_transaction(kd_producer_main(m->fwd),
                                           timeout_ms);
}

rd_kafka_error_t *kd_mode_txn_abort(kd_mode_ctx_t *m, int timeout_ms)
{
        return rd_kafka_abort_transaction(kd_producer_main(m->fwd), timeout_ms);
}

rd_kafka_resp_err_t
kd_mode_commit(kd_mode_ctx_t *m, const rd_kafka_topic_partition_list_t *offsets,
               int async)
{
        return rd_kafka_commit(m->fwd->consumer.rk, offsets, async);
}

rd_kafka_resp_err_t kd_mode_committed(kd_mode_ctx_t *m,
                                      rd_kafka_topic_partition_list_t *parts,
                                      int timeout_ms)
{
        return rd_kafka_committed(m->fwd->consumer.rk, parts, timeout_ms);
}

rd_kafka_consumer_group_metadata_t *
kd_mode_group_metadata(const kd_mode_ctx_t *m)
{
        return rd_kafka_consumer_group_metadata(m->fwd->consumer.rk);
}
