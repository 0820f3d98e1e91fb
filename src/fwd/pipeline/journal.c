/* SPDX-License-Identifier: Apache-2.0 */
/* The journal's write side (kd_journal.h): owns f->journal. */
#include "kd_journal.h"
#include "kd_pipeline_state.h"

#include <string.h>

#include "core/kd_mode_ops.h"
#include "core/kd_perr.h"
#include "kd_journal_rec.h"
#include "kd_log.h"
#include "kd_util.h"
#include "producer/kd_producer.h"

/* After a failed journal record, fires wait for claims this long before a
 * record is tried again: a journal that cannot be written holds tasks as
 * the policy hold would, never fires them unrecorded. */
#define KD_JOURNAL_BROKEN_MS 10000

void kd_journal_init(kd_fwd_t *f)
{
        kd_conf_journal_topic(f->conf, f->journal->topic,
                              sizeof(f->journal->topic));
}

rd_kafka_resp_err_t kd_journal_write(kd_fwd_t *f, const kd_task_t *t,
                                     rd_kafka_t *rk, void *opaque, int intent)
{
        kd_journal_rec_t r = {.fire_at_ms = t->rec.fire_at_ms,
                              .fired_at_ms = t->sent_ms,
                              .src_partition = t->part ? t->part->partition : 0,
                              .src_offset = t->rec.offset,
                              .intent = intent};
        kd_strlcpy(r.src_topic, t->part ? t->part->topic : "-",
                   sizeof(r.src_topic));
        kd_strlcpy(r.forwarder, f->claim->token_name, sizeof(r.forwarder));
        /* Its fire failed for good: the record says it was dead-lettered. */
        if (!intent && t->fire_failed && t->dead_reason)
                kd_strlcpy(r.dead, t->dead_reason, sizeof(r.dead));
        char value[KD_JOURNAL_VALUE_MAX];
        int n = kd_journal_rec_format(&r, value, sizeof(value));
        if (n < 0)
                return RD_KAFKA_RESP_ERR__INVALID_ARG;
        /* Through the main producer's handle of the topic (its metadata
         * known: a produce by name to a topic new to the producer waits
         * up to a second, and at_least_once's fire waits for this one).
         * Counted here (a record in the fire's transaction) or by the
         * fire stage (kd_producer_sent). */
        rd_kafka_vu_t vu[] = {
            {.vtype = RD_KAFKA_VTYPE_TOPIC, .u.cstr = f->journal->topic},
            {.vtype = RD_KAFKA_VTYPE_KEY,
             .u.mem = {t->rec.id, strlen(t->rec.id)}},
            {.vtype = RD_KAFKA_VTYPE_VALUE, .u.mem = {value, (size_t)n}},
            {.vtype = RD_KAFKA_VTYPE_MSGFLAGS, .u.i = RD_KAFKA_MSG_F_COPY},
            {.vtype = RD_KAFKA_VTYPE_OPAQUE, .u.ptr = opaque}};
        rd_kafka_resp_err_t err = kd_producer_produce(
            f, rk, vu, sizeof(vu) / sizeof(vu[0]), KD_PRODUCE_BY_HANDLE);
        if (!err && opaque == kd_journal_marker(f))
                f->journal->inflight++;
        return err;
}

void kd_journal_warm(kd_fwd_t *f)
{
        (void)kd_producer_topic(f, f->journal->topic);
}

void *kd_journal_marker(kd_fwd_t *f)
{
        return &f->journal->marker;
}

int kd_journal_is(const kd_fwd_t *f, const void *opaque)
{
        return opaque == &f->journal->marker;
}

void kd_journal_reported(kd_fwd_t *f, const rd_kafka_message_t *m)
{
        f->journal->inflight--;
        if (!m->err) {
                f->journal->delivered++;
                f->journal->gone_since_mono = 0;
                return;
        }
        kd_journal_broken(f, m->err);
        if (f->mode->journal_failed)
                f->mode->journal_failed(&f->mode_ctx, m->err);
}

void kd_journal_broken(kd_fwd_t *f, rd_kafka_resp_err_t err)
{
        int64_t now = kd_fwd_mono_ms(f);
        kd_metric_inc(&f->metrics, KD_M_JOURNAL_FAILED);
        if (now >= f->journal->broken_until_mono) {
                char qt[300];
                kd_log(f->conf, KDELAY_LOG_ERROR,
                       "event=journal_failed topic=%s err=\"%s\" "
                       "action=hold_for_claims retry_in_ms=%d",
                       kd_log_quote(f->journal->topic, qt, sizeof(qt)),
                       rd_kafka_err2str(err), KD_JOURNAL_BROKEN_MS);
        }
        f->journal->broken_until_mono = now + KD_JOURNAL_BROKEN_MS;
}

int kd_journal_refuses(rd_kafka_resp_err_t err)
{
        return kd_perr_permanent(err) ||
               err == RD_KAFKA_RESP_ERR__UNKNOWN_PARTITION;
}

int kd_journal_refused_for_good(kd_fwd_t *f, rd_kafka_resp_err_t err)
{
        if (!kd_journal_refuses(err))
                return 0;
        if (err != RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART &&
            err != RD_KAFKA_RESP_ERR__UNKNOWN_PARTITION &&
            err != RD_KAFKA_RESP_ERR__UNKNOWN_TOPIC)
                return 1;
        int64_t now = kd_fwd_mono_ms(f);
        int64_t since = f->journal->gone_since_mono;
        /* A first answer, or one from long ago (a streak with nothing
         * written between): the topic may have been made again since. */
        if (!since || now - since > 10 * KD_JOURNAL_GONE_CONFIRM_MS) {
                f->journal->gone_since_mono = now;
                return 0;
        }
        return now - since >= KD_JOURNAL_GONE_CONFIRM_MS;
}

int kd_journal_usable(const kd_fwd_t *f)
{
        return kd_fwd_mono_ms(f) >= f->journal->broken_until_mono;
}
