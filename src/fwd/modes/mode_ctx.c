/* SPDX-License-Identifier: Apache-2.0 */
/* The delivery modes' context (kd_mode_ctx.h): its services, each a thin
 * call into the stage or room that owns what it touches. The one file of
 * the mode module that sees the forwarder (kd_fwd_t). */
#include "kd_mode_ctx.h"
#include "kd_producer.h"
#include "kd_settle.h"

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
        m->fwd->hooks.room(m->fwd);
}

void kd_mode_rewind(kd_mode_ctx_t *m)
{
        m->fwd->hooks.rewind(m->fwd);
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
                          int unclaimed)
{
        kd_settle_fired(m->fwd, id, late_ms, unclaimed);
}

void kd_mode_settle_dead(kd_mode_ctx_t *m, const char *id, const char *reason)
{
        kd_settle_dead(m->fwd, id, reason);
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

/* A commit's answer, for the callback librdkafka may call instead of
 * posting the event. */
static void commit_answered(rd_kafka_t *rk, rd_kafka_resp_err_t err,
                            rd_kafka_topic_partition_list_t *offsets,
                            void *opaque)
{
        (void)rk;
        (void)offsets;
        *(rd_kafka_resp_err_t *)opaque = err;
}

/* Waits on q for the answer to a commit until deadline (monotonic). */
static rd_kafka_resp_err_t commit_wait(kd_mode_ctx_t *m, rd_kafka_queue_t *q,
                                       rd_kafka_resp_err_t *answer,
                                       int64_t deadline)
{
        for (;;) {
                int64_t left = deadline - kd_mode_mono_ms(m);
                if (left <= 0)
                        return RD_KAFKA_RESP_ERR__TIMED_OUT;
                rd_kafka_event_t *ev =
                    rd_kafka_queue_poll(q, left > 100 ? 100 : (int)left);
                if (ev &&
                    rd_kafka_event_type(ev) == RD_KAFKA_EVENT_OFFSET_COMMIT) {
                        rd_kafka_resp_err_t err = rd_kafka_event_error(ev);
                        rd_kafka_event_destroy(ev);
                        return err;
                }
                if (ev)
                        rd_kafka_event_destroy(ev);
                if (*answer != RD_KAFKA_RESP_ERR__IN_PROGRESS)
                        return *answer;
        }
}

rd_kafka_resp_err_t
kd_mode_commit(kd_mode_ctx_t *m, const rd_kafka_topic_partition_list_t *offsets,
               int async)
{
        rd_kafka_t *rk = m->fwd->consumer.rk;
        if (async)
                return rd_kafka_commit(rk, offsets, 1);
        int64_t deadline = kd_mode_shutdown_deadline(m);
        if (!deadline)
                deadline =
                    kd_mode_mono_ms(m) + m->conf->fwd_shutdown_timeout_ms;
        rd_kafka_queue_t *q = rd_kafka_queue_new(rk);
        if (!q)
                return RD_KAFKA_RESP_ERR__FAIL;
        /* answer is written by librdkafka's thread only through the
         * callback served on this thread (q is ours). */
        rd_kafka_resp_err_t answer = RD_KAFKA_RESP_ERR__IN_PROGRESS;
        rd_kafka_resp_err_t err =
            rd_kafka_commit_queue(rk, offsets, q, commit_answered, &answer);
        if (!err)
                err = commit_wait(m, q, &answer, deadline);
        /* Given up: the answer, when it comes, goes with the queue. */
        rd_kafka_queue_destroy(q);
        return err;
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
