/* Exactly-once mode: every hop, fire and dead letter goes into a Kafka
 * transaction together with the source partitions' offsets and done sets
 * (consume-transform-produce, as librdkafka's examples/transactions.c).
 * A transaction that holds a fire commits at the next loop turn; one that
 * holds only hops, dead letters or offsets after forwarder.transaction_
 * interval. docs/reliability.md states the guarantee. */
#include <string.h>

#include "kd_fwd.h"
#include "kd_log.h"
#include "kd_util.h"

/* Longest a single transactional call may block the loop before it is
 * retried (retriable errors) from the top. */
#define KD_TXN_CALL_TIMEOUT_MS 10000

/* What a failed transactional call leaves us to do. */
typedef enum kd_txn_next {
        KD_NEXT_RETRY,
        KD_NEXT_ABORT,
        KD_NEXT_FATAL
} kd_txn_next_t;

/* Logs error (taken) and classifies it. */
static kd_txn_next_t classify(kd_fwd_t *f, rd_kafka_error_t *error,
                              const char *what)
{
        kd_txn_next_t next = KD_NEXT_ABORT;
        if (rd_kafka_error_is_fatal(error))
                next = KD_NEXT_FATAL;
        else if (rd_kafka_error_txn_requires_abort(error))
                next = KD_NEXT_ABORT;
        else if (rd_kafka_error_is_retriable(error))
                next = KD_NEXT_RETRY;
        char q[600];
        kd_log(f->conf,
               next == KD_NEXT_RETRY ? KDELAY_LOG_WARNING : KDELAY_LOG_ERROR,
               "event=txn_error what=%s err=%s code=%s action=%s", what,
               kd_log_quote(rd_kafka_error_string(error), q, sizeof(q)),
               rd_kafka_error_name(error),
               next == KD_NEXT_FATAL   ? "exit"
               : next == KD_NEXT_RETRY ? "retry"
                                       : "abort");
        rd_kafka_error_destroy(error);
        if (next == KD_NEXT_FATAL) {
                f->fatal = 1;
                *f->stop = 1;
        }
        return next;
}

kdelay_err_t kd_txn_init(kd_fwd_t *f, char *errstr, size_t errstr_size)
{
        for (;;) {
                rd_kafka_error_t *error = rd_kafka_init_transactions(
                    f->producer, KD_TXN_CALL_TIMEOUT_MS);
                if (!error)
                        return KDELAY_OK;
                /* A broker still starting is worth waiting for. */
                int retry = rd_kafka_error_is_retriable(error) &&
                            !rd_kafka_error_is_fatal(error) && !*f->stop;
                if (!retry) {
                        kd_fail(KDELAY_ERR_KAFKA, errstr, errstr_size,
                                "init_transactions: %s",
                                rd_kafka_error_string(error));
                        rd_kafka_error_destroy(error);
                        return KDELAY_ERR_KAFKA;
                }
                classify(f, error, "init_transactions");
        }
}

int kd_txn_begin(kd_fwd_t *f)
{
        if (f->txn_open)
                return 0;
        if (f->fatal)
                return -1;
        rd_kafka_error_t *error = rd_kafka_begin_transaction(f->producer);
        if (error) {
                classify(f, error, "begin_transaction");
                return -1;
        }
        f->txn_open = 1;
        f->txn_has_fire = 0;
        f->txn_opened_ms = kd_now_ms();
        return 0;
}

/* The coordinator completes a commit (writes its markers) after answering
 * it; offsets sent to the next transaction before that are refused as
 * CONCURRENT_TRANSACTIONS and librdkafka retries them only ~100 ms later.
 * Waiting this long after a commit avoids that. */
#define KD_TXN_SETTLE_MS 20

int64_t kd_txn_due_ms(const kd_fwd_t *f)
{
        if (f->txn_failed)
                return 0;
        if (f->txn_open && f->txn_has_fire)
                return f->txn_last_ms + KD_TXN_SETTLE_MS;
        if (f->txn_open)
                return f->txn_opened_ms + f->conf->fwd_txn_interval_ms;
        if (f->txn_dirty)
                return f->txn_last_ms + f->conf->fwd_txn_interval_ms;
        return INT64_MAX;
}

/* After a failed call: 1 to call again (retriable, and not past the
 * shutdown deadline), else what the transaction came to. */
static int again(kd_fwd_t *f, rd_kafka_error_t *error, const char *what,
                 kd_txn_result_t *result)
{
        kd_txn_next_t next = classify(f, error, what);
        if (next == KD_NEXT_FATAL) {
                *result = KD_TXN_FATAL;
                return 0;
        }
        /* A signal during a long outage ends the retries (abort). */
        int stopping = f->shutdown_deadline
                           ? kd_mono_ms() >= f->shutdown_deadline
                           : *f->stop;
        if (next == KD_NEXT_RETRY && !stopping)
                return 1;
        *result = kd_txn_abort(f, what);
        return 0;
}

/* The transaction state cannot be recovered here: exit for a restart. */
static kd_txn_result_t give_up(kd_fwd_t *f, const char *what)
{
        kd_log(f->conf, KDELAY_LOG_ERROR,
               "event=txn_unrecoverable what=%s action=exit", what);
        f->fatal = 1;
        *f->stop = 1;
        return KD_TXN_FATAL;
}

kd_txn_result_t kd_txn_abort(kd_fwd_t *f, const char *why)
{
        if (f->fatal)
                return KD_TXN_FATAL;
        if (f->txn_open) {
                for (;;) {
                        rd_kafka_error_t *error = rd_kafka_abort_transaction(
                            f->producer, KD_TXN_CALL_TIMEOUT_MS);
                        if (!error)
                                break;
                        kd_txn_next_t next =
                            classify(f, error, "abort_transaction");
                        if (next == KD_NEXT_FATAL)
                                return KD_TXN_FATAL;
                        if (next != KD_NEXT_RETRY ||
                            (f->shutdown_deadline &&
                             kd_mono_ms() >= f->shutdown_deadline))
                                return give_up(f, "abort_transaction");
                }
                /* Reports of the purged and the in-flight produces come
                 * now; what they say delivered belongs to the aborted
                 * transaction. */
                while (rd_kafka_poll(f->producer, 0) > 0)
                        ;
        }
        /* Nothing of the aborted transaction is FIRED. */
        f->stats.fired -= f->txn_fired.len;
        kd_idq_clear(&f->txn_fired);
        f->txn_failed = 0;
        f->txn_open = 0;
        f->txn_has_fire = 0;
        f->txn_dirty = 0; /* the rewind starts from what is committed */
        f->txn_last_ms = kd_now_ms();
        f->stats.txn_aborts++;
        kd_log(f->conf, KDELAY_LOG_WARNING,
               "event=txn_aborted why=%s action=rewind", why);
        return KD_TXN_ABORTED;
}

kd_txn_result_t kd_txn_commit(kd_fwd_t *f)
{
        if (f->fatal)
                return KD_TXN_FATAL;
        if (f->txn_failed)
                return kd_txn_abort(f, "delivery_failed");
        if (!f->txn_open && !f->txn_dirty)
                return KD_TXN_OK;
        if (kd_txn_begin(f))
                return f->fatal ? KD_TXN_FATAL : kd_txn_abort(f, "begin");
        int64_t t0 = kd_mono_ms();
        int failed;
        rd_kafka_topic_partition_list_t *offsets = kd_part_offsets(f, &failed);
        if (failed)
                return kd_txn_abort(f, "done_set");
        if (offsets) {
                rd_kafka_consumer_group_metadata_t *cgmd =
                    rd_kafka_consumer_group_metadata(f->consumer);
                kd_txn_result_t r = KD_TXN_OK;
                rd_kafka_error_t *error;
                while (
                    (error = rd_kafka_send_offsets_to_transaction(
                         f->producer, offsets, cgmd, KD_TXN_CALL_TIMEOUT_MS)) &&
                    again(f, error, "send_offsets_to_transaction", &r))
                        ;
                rd_kafka_consumer_group_metadata_destroy(cgmd);
                rd_kafka_topic_partition_list_destroy(offsets);
                if (error)
                        return r;
        }
        int64_t t1 = kd_mono_ms();
        kd_txn_result_t r = KD_TXN_OK;
        rd_kafka_error_t *error;
        while ((error = rd_kafka_commit_transaction(f->producer,
                                                    KD_TXN_CALL_TIMEOUT_MS))) {
                if (!again(f, error, "commit_transaction", &r))
                        return r;
        }
        /* commit_transaction served every delivery report; a failed one
         * makes it fail, so txn_failed cannot be set here. */
        f->txn_open = 0;
        f->txn_has_fire = 0;
        f->txn_dirty = 0;
        f->txn_last_ms = kd_now_ms();
        f->stats.txn_commits++;
        kd_log(f->conf, KDELAY_LOG_DEBUG,
               "event=txn_committed fires=%zu ms=%lld offsets_ms=%lld",
               f->txn_fired.len, (long long)(kd_mono_ms() - t0),
               (long long)(t1 - t0));
        for (size_t i = 0; i < f->txn_fired.len; i++)
                kd_claim_mark_fired(f, f->txn_fired.ids[i]);
        kd_idq_clear(&f->txn_fired);
        return KD_TXN_OK;
}
