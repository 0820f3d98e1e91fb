/* SPDX-License-Identifier: Apache-2.0 */
/* Fire stage, failure and retry (kd_fire_retry.h): what follows a produce
 * that failed, as the failure policy (kd_perr_then) says: produced again
 * after a backoff, dead-lettered, sent again smaller, or dropped; and the
 * timer that produces a task again. */
#include "kd_fire_retry.h"
#include "kd_pipeline_state.h"

#include "core/kd_mode_ops.h"
#include "core/kd_perr.h"
#include "kd_fire.h"
#include "kd_fire_journal.h"
#include "kd_lifecycle.h"
#include "kd_log.h"

/* How long a produce the mode holds back (a solo transaction is open)
 * waits before it asks again, at most. */
#define KD_FIRE_WAIT_MAX_MS 1000

/* A fire that cannot succeed: the task goes to the dead-letter topic. */
void kd_fire_failed(kd_fwd_t *f, kd_task_t *t, rd_kafka_resp_err_t err)
{
        char q[KD_LOG_QUOTED_MAX(KDELAY_ID_MAX)], qt[300];
        kd_log(f->conf, KDELAY_LOG_ERROR,
               "event=fire_failed id=%s target=%s err=\"%s\" retries=%d "
               "action=dead_letter",
               kd_fire_id(t, q, sizeof(q)),
               kd_log_quote(t->rec.target, qt, sizeof(qt)),
               rd_kafka_err2str(err), t->retries);
        t->retries = 0;
        t->fire_failed = t->state == KD_TASK_FIRING; /* claimed: DEAD */
        t->dead_err = err;
        kd_fire_dead(f, t, kd_perr_dead_reason(err));
}

static void retry_cb(kd_timer_t *tm, void *arg)
{
        kd_fwd_t *f = arg;
        kd_task_t *t = kd_task_of_timer(tm);
        if (t->retry_as == KD_TASK_FIRING)
                kd_fire_now(f, t, kd_fwd_now(f));
        else if (t->retry_as == KD_TASK_JOURNAL)
                kd_fire_journal_send(f, t, 0);
        else if (t->retry_as == KD_TASK_HOPPING)
                kd_fire_hop(f, t);
        else
                kd_fire_dead(f, t, t->dead_reason);
}

void kd_fire_retry_in(kd_fwd_t *f, kd_task_t *t, kd_task_state_t as, int64_t ms,
                      const char *what)
{
        t->retry_as = as;
        kd_task_set_state(f, t, KD_TASK_RETRY);
        if (kd_task_arm(f, t, KD_CLOCK_MONO, kd_fwd_mono_ms(f) + ms, retry_cb))
                kd_fwd_oom(f, what);
}

/* Produces t again as `as` after an exponential backoff. */
void kd_fire_retry_later(kd_fwd_t *f, kd_task_t *t, kd_task_state_t as,
                         const char *event, rd_kafka_resp_err_t err)
{
        int64_t backoff = 100LL << (t->retries < 6 ? t->retries : 6);
        char q[KD_LOG_QUOTED_MAX(KDELAY_ID_MAX)];
        if (backoff > f->conf->fwd_retry_max_ms)
                backoff = f->conf->fwd_retry_max_ms;
        t->retries++;
        kd_metric_inc(&f->metrics, KD_M_PRODUCE_RETRIES);
        /* The source record too: a dead letter may have no id. */
        char qt[300];
        kd_log(f->conf, KDELAY_LOG_WARNING,
               "event=%s as=%s id=%s topic=%s partition=%d offset=%lld "
               "err=\"%s\" retry_in_ms=%lld",
               event,
               as == KD_TASK_DEAD      ? "dead_letter"
               : as == KD_TASK_HOPPING ? "hop"
               : as == KD_TASK_JOURNAL ? "journal"
                                       : "fire",
               kd_fire_id(t, q, sizeof(q)),
               kd_log_quote(t->part ? t->part->topic : "-", qt, sizeof(qt)),
               t->part ? t->part->partition : -1, (long long)t->rec.offset,
               rd_kafka_err2str(err), (long long)backoff);
        kd_fire_retry_in(f, t, as, backoff, "retry_timer");
}

/* A dead letter too large for the dead-letter topic: sent again without
 * its key and value (the headers say what it was); if even that fails it
 * is logged and dropped, so that it cannot stop its partition. */
static void dead_letter_too_large(kd_fwd_t *f, kd_task_t *t)
{
        kd_taskrec_t *r = &t->rec;
        char topic[300];
        kd_log_quote(t->part ? t->part->topic : "-", topic, sizeof(topic));
        int partition = t->part ? t->part->partition : -1;
        if (r->key || r->value) {
                kd_log(f->conf, KDELAY_LOG_WARNING,
                       "event=dead_letter_too_large topic=%s partition=%d "
                       "offset=%lld bytes=%zu action=drop_key_and_value",
                       topic, partition, (long long)r->offset,
                       r->key_len + r->value_len);
                r->key = r->value = NULL; /* in the task's block */
                r->key_len = r->value_len = 0;
                kd_fire_dead(f, t, t->dead_reason);
                return;
        }
        kd_log(f->conf, KDELAY_LOG_ERROR,
               "event=dead_letter_dropped reason=%s topic=%s partition=%d "
               "offset=%lld why=too_large",
               t->dead_reason, topic, partition, (long long)r->offset);
        kd_metric_dead(&f->metrics, t->dead_reason);
        f->mode->done(&f->mode_ctx, t);
}

/* Does what the failure policy (kd_perr_then) says after a produce of t
 * as `as` failed with err. */
static void after_failure(kd_fwd_t *f, kd_task_t *t, kd_task_state_t as,
                          rd_kafka_resp_err_t err, const char *event,
                          kd_perr_then_t then)
{
        char q[KD_LOG_QUOTED_MAX(KDELAY_ID_MAX)], qt[300];
        switch (then) {
        case KD_THEN_RETRY:
                kd_fire_retry_later(f, t, as, event, err);
                return;
        case KD_THEN_FIRE_FAILED:
                kd_fire_failed(f, t, err);
                return;
        case KD_THEN_DEAD_SMALLER:
                dead_letter_too_large(f, t);
                return;
        case KD_THEN_HOP_FAILED:
                kd_log(f->conf, KDELAY_LOG_ERROR,
                       "event=hop_failed id=%s err=\"%s\" action=dead_letter",
                       kd_fire_id(t, q, sizeof(q)), rd_kafka_err2str(err));
                kd_fire_dead(f, t, "tier-unavailable");
                return;
        case KD_THEN_DEAD_DROPPED:
                kd_log(f->conf, KDELAY_LOG_ERROR,
                       "event=dead_letter_dropped reason=%s topic=%s "
                       "partition=%d offset=%lld err=\"%s\"",
                       t->dead_reason,
                       kd_log_quote(t->part ? t->part->topic : "-", qt,
                                    sizeof(qt)),
                       t->part ? t->part->partition : -1,
                       (long long)t->rec.offset, rd_kafka_err2str(err));
                kd_metric_dead(&f->metrics, t->dead_reason);
                f->mode->done(&f->mode_ctx, t);
                return;
        }
}

/* A produce of t as `as` failed with err. */
void kd_fire_produce_failed(kd_fwd_t *f, kd_task_t *t, kd_task_state_t as,
                            rd_kafka_resp_err_t err, const char *event)
{
        after_failure(f, t, as, err, event,
                      kd_perr_then(as, err, t->retries, 0));
}

/* Producing t as `as` failed for good often enough (the mode counted):
 * handled as the policy says for a poisoned record, without producing. */
void kd_fire_poisoned(kd_fwd_t *f, kd_task_t *t, kd_task_state_t as,
                      rd_kafka_resp_err_t err)
{
        after_failure(f, t, as, err, "produce_failed",
                      kd_perr_then(as, err, t->retries, 1));
}

/* The mode holds t's produce back for wait_ms (a solo transaction is
 * open, or t waits for one): asked again then, quietly. */
void kd_fire_wait_turn(kd_fwd_t *f, kd_task_t *t, kd_task_state_t as,
                       int wait_ms)
{
        if (wait_ms > KD_FIRE_WAIT_MAX_MS)
                wait_ms = KD_FIRE_WAIT_MAX_MS;
        kd_fire_retry_in(f, t, as, wait_ms, "wait_timer");
}
