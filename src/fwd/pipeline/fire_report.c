/* SPDX-License-Identifier: Apache-2.0 */
/* Fire stage, the delivery reports (kd_fire_dr_cb, kd_fire.h): each
 * report is classified into one outcome (classify), and one row of the
 * table below says what follows: settled through the mode and the settle
 * stage, the fire after its record of intent, a retry or a dead letter
 * (fire_retry.c). */
#include "kd_fire.h"
#include "kd_pipeline_state.h"

#include "core/kd_mode_ops.h"
#include "core/kd_perr.h"
#include "core/kd_refusals.h"
#include "kd_fire_journal.h"
#include "kd_fire_produce.h"
#include "kd_fire_retry.h"
#include "kd_journal.h"
#include "kd_lifecycle.h"
#include "kd_log.h"
#include "kd_probe.h"
#include "kd_settle.h"
#include "producer/kd_producer.h"

/* t's fire was delivered: what its target was known to refuse and t
 * was, it no longer refuses (the topic changed). */
static void refusal_disproved(kd_fwd_t *f, const kd_task_t *t)
{
        int forgot = kd_refusals_delivered(&f->refusals, t, kd_fwd_mono_ms(f));
        if (!forgot)
                return;
        char q[KD_LOG_QUOTED_MAX(KDELAY_ID_MAX)], qt[300];
        kd_log(f->conf, KDELAY_LOG_NOTICE,
               "event=refusal_forgotten target=%s what=%s id=%s",
               kd_log_quote(t->rec.target, qt, sizeof(qt)),
               forgot == KD_REFUSALS_FORGOT_KEYLESS ? "keyless"
               : forgot == KD_REFUSALS_FORGOT_SIZE  ? "size"
                                                    : "keyless,size",
               kd_fire_id(t, q, sizeof(q)));
}

/* The report m of a produce that was not a fire (a hop, a dead letter, a
 * journal record) samples the broker's clock when its topic stamps the
 * append time. */
static void clock_sample(kd_fwd_t *f, const kd_task_t *t,
                         const rd_kafka_message_t *m)
{
        rd_kafka_timestamp_type_t tt;
        int64_t ts = rd_kafka_message_timestamp(m, &tt);
        if (tt == RD_KAFKA_TIMESTAMP_LOG_APPEND_TIME)
                kd_probe_sample(f, t->sent_ms, ts);
}

/* t's produce, delivered, is settled through the mode; or, when its
 * journal record is still owed (at_least_once writes it after the fire or
 * dead letter of a task without a claim), that record goes first. */
static void settle_delivered(kd_fwd_t *f, kd_task_t *t)
{
        if (kd_fire_journal_with(f, t, t->state, 0)) {
                kd_fire_journal_send(f, t, 0);
                return;
        }
        f->mode->delivered(&f->mode_ctx, t);
}

/* The outcomes of a delivery report. */
typedef enum kd_fire_outcome {
        KD_FIRE_DELIVERED,         /* delivered, as nothing below: settled */
        KD_FIRE_FIRED,             /* a fire delivered */
        KD_FIRE_HOPPED,            /* a hop delivered */
        KD_FIRE_DEAD_LETTERED,     /* a dead letter delivered */
        KD_FIRE_INTENT_DELIVERED,  /* a record of intent delivered */
        KD_FIRE_JOURNAL_DELIVERED, /* the journal record of a fire without
                                      a claim delivered */
        KD_FIRE_PROBE,             /* a clock probe's report */
        KD_FIRE_JOURNAL_WITH,      /* a journal record written with its fire */
        KD_FIRE_INTENT_FAILED,     /* a record of intent failed */
        KD_FIRE_JOURNAL_FAILED,    /* a fire's journal record failed */
        KD_FIRE_MODE_TOOK,         /* failed: the mode took it (exactly_once:
                                      the transaction aborts) */
        KD_FIRE_REVOKED,           /* failed, its partition gone */
        KD_FIRE_ALONE,             /* refused in a batch: the mode sends it
                                      again alone */
        KD_FIRE_REFUSED,           /* a fire its target refuses for good */
        KD_FIRE_FAILED,            /* failed otherwise: the failure policy */
        KD_FIRE_OUTCOMES
} kd_fire_outcome_t;

/* What a delivered produce as each state is. */
static const kd_fire_outcome_t delivered_as[KD_TASK_STATES] = {
    [KD_TASK_FIRING] = KD_FIRE_FIRED,
    [KD_TASK_HOPPING] = KD_FIRE_HOPPED,
    [KD_TASK_DEAD] = KD_FIRE_DEAD_LETTERED,
    [KD_TASK_INTENT] = KD_FIRE_INTENT_DELIVERED,
    [KD_TASK_JOURNAL] = KD_FIRE_JOURNAL_DELIVERED};

/* Takes in the report m of t's own produce: out of flight, its lent
 * headers back. */
static void reported(kd_fwd_t *f, kd_task_t *t, const rd_kafka_message_t *m)
{
        kd_producer_reported(f, 1);
        kd_task_reported(t);
        kd_fire_headers_returned(t, m);
}

/* What report m of t's produce says (a task's own report taken in
 * first: reported). The mode has its say on a failed fire, hop or dead
 * letter: exactly_once takes every one (failed), and at_least_once sends
 * one refused in a batch again alone, or learns what a refusal of it
 * alone says of its target (refused). */
static kd_fire_outcome_t classify(kd_fwd_t *f, kd_task_t *t,
                                  const rd_kafka_message_t *m)
{
        rd_kafka_resp_err_t err = m->err;
        if (kd_probe_is(f, t))
                return KD_FIRE_PROBE;
        if (kd_journal_is(f, t))
                return KD_FIRE_JOURNAL_WITH;
        reported(f, t, m);
        if (!err)
                return delivered_as[t->state];
        if (t->state == KD_TASK_INTENT || t->state == KD_TASK_JOURNAL)
                return t->state == KD_TASK_INTENT ? KD_FIRE_INTENT_FAILED
                                                  : KD_FIRE_JOURNAL_FAILED;
        if (f->mode->failed &&
            f->mode->failed(&f->mode_ctx, t, err, kd_perr_permanent(err)))
                return KD_FIRE_MODE_TOOK;
        if (!t->part)
                return KD_FIRE_REVOKED;
        if (f->mode->refused && f->mode->refused(&f->mode_ctx, t, err))
                return KD_FIRE_ALONE;
        if (t->state == KD_TASK_FIRING && kd_perr_permanent(err))
                return KD_FIRE_REFUSED;
        return KD_FIRE_FAILED;
}

static void on_delivered(kd_fwd_t *f, kd_task_t *t, const rd_kafka_message_t *m)
{
        clock_sample(f, t, m);
        settle_delivered(f, t);
}

static void on_fired(kd_fwd_t *f, kd_task_t *t, const rd_kafka_message_t *m)
{
        (void)m; /* a fire's own append time says nothing of the clock */
        kd_metric_inc(&f->metrics,
                      t->bulk ? KD_M_FIRES_BULK : KD_M_FIRES_PRECISE);
        refusal_disproved(f, t);
        settle_delivered(f, t);
}

static void on_hopped(kd_fwd_t *f, kd_task_t *t, const rd_kafka_message_t *m)
{
        clock_sample(f, t, m);
        kd_metric_hop(&f->metrics, t->hop_tier);
        settle_delivered(f, t);
}

static void on_dead_lettered(kd_fwd_t *f, kd_task_t *t,
                             const rd_kafka_message_t *m)
{
        clock_sample(f, t, m);
        kd_metric_dead(&f->metrics, t->dead_reason);
        char q[KD_LOG_QUOTED_MAX(KDELAY_ID_MAX)], qt[300];
        kd_log(f->conf, KDELAY_LOG_WARNING,
               "event=dead_lettered reason=%s id=%s topic=%s partition=%d "
               "offset=%lld",
               t->dead_reason, kd_fire_id(t, q, sizeof(q)),
               kd_log_quote(t->part ? t->part->topic : "-", qt, sizeof(qt)),
               t->part ? t->part->partition : -1, (long long)t->rec.offset);
        settle_delivered(f, t);
}

/* The fire it announced goes now (revoked meanwhile: the next owner
 * re-reads it). */
static void on_intent_delivered(kd_fwd_t *f, kd_task_t *t,
                                const rd_kafka_message_t *m)
{
        clock_sample(f, t, m);
        f->journal->delivered++;
        f->journal->gone_since_mono = 0;
        if (!t->part) {
                kd_settle_release(f, t);
                return;
        }
        kd_fire_to_target(f, t, kd_fwd_now(f));
}

static void on_journal_delivered(kd_fwd_t *f, kd_task_t *t,
                                 const rd_kafka_message_t *m)
{
        clock_sample(f, t, m);
        f->journal->delivered++;
        f->journal->gone_since_mono = 0;
        f->mode->delivered(&f->mode_ctx, t);
}

static void on_probe(kd_fwd_t *f, kd_task_t *t, const rd_kafka_message_t *m)
{
        (void)t;
        kd_probe_reported(f, m);
}

static void on_journal_with(kd_fwd_t *f, kd_task_t *t,
                            const rd_kafka_message_t *m)
{
        (void)t;
        kd_journal_reported(f, m);
}

/* A journal record's report failed, and the journal is broken. Of a
 * record of intent: nothing was fired, t waits for its claim (kd_fire_now
 * asks the claim stage again). Of a record of delivery: the fire was
 * delivered, only its record is written again while the error may pass
 * (the task holds its offset meanwhile); refused for good (the topic
 * gone), the fire is applied from memory instead (journal_refused). */
static void on_record_failed(kd_fwd_t *f, kd_task_t *t,
                             const rd_kafka_message_t *m)
{
        if (!t->part) {
                kd_journal_broken(f, m->err);
                /* Its partition revoked: nobody writes the record of a
                 * delivered fire again, so its fire is kept in memory and
                 * applied from there (settle.c) before t goes. */
                if (t->state == KD_TASK_JOURNAL && !t->fire_failed)
                        kd_settle_fired(f, t->rec.id, t->late_ms, 1, t->seq);
                kd_settle_release(f, t);
                return;
        }
        if (t->state == KD_TASK_JOURNAL &&
            kd_journal_refused_for_good(f, m->err)) {
                kd_fire_journal_refused(f, t, m->err);
                return;
        }
        kd_journal_broken(f, m->err);
        kd_fire_retry_later(
            f, t, t->state == KD_TASK_INTENT ? KD_TASK_FIRING : KD_TASK_JOURNAL,
            "journal_failed", m->err);
}

static void on_mode_took(kd_fwd_t *f, kd_task_t *t, const rd_kafka_message_t *m)
{
        (void)f; /* t is the mode's, freed */
        (void)t;
        (void)m;
}

/* The next owner re-reads it. */
static void on_revoked(kd_fwd_t *f, kd_task_t *t, const rd_kafka_message_t *m)
{
        (void)m;
        kd_settle_release(f, t);
}

/* The broker refused the batch, maybe for a batch-mate: produced again
 * alone, it is delivered or found out. */
static void on_alone(kd_fwd_t *f, kd_task_t *t, const rd_kafka_message_t *m)
{
        kd_fire_retry_later(f, t, t->state, "batch_refused", m->err);
}

/* librdkafka retried already. */
static void on_refused(kd_fwd_t *f, kd_task_t *t, const rd_kafka_message_t *m)
{
        kd_fire_failed(f, t, m->err);
}

static void on_failed(kd_fwd_t *f, kd_task_t *t, const rd_kafka_message_t *m)
{
        kd_fire_produce_failed(f, t, t->state, m->err, "delivery_failed");
}

/* One row per outcome: what follows it. */
static void (*const then[KD_FIRE_OUTCOMES])(kd_fwd_t *f, kd_task_t *t,
                                            const rd_kafka_message_t *m) = {
    [KD_FIRE_DELIVERED] = on_delivered,
    [KD_FIRE_FIRED] = on_fired,
    [KD_FIRE_HOPPED] = on_hopped,
    [KD_FIRE_DEAD_LETTERED] = on_dead_lettered,
    [KD_FIRE_INTENT_DELIVERED] = on_intent_delivered,
    [KD_FIRE_JOURNAL_DELIVERED] = on_journal_delivered,
    [KD_FIRE_PROBE] = on_probe,
    [KD_FIRE_JOURNAL_WITH] = on_journal_with,
    [KD_FIRE_INTENT_FAILED] = on_record_failed,
    [KD_FIRE_JOURNAL_FAILED] = on_record_failed,
    [KD_FIRE_MODE_TOOK] = on_mode_took,
    [KD_FIRE_REVOKED] = on_revoked,
    [KD_FIRE_ALONE] = on_alone,
    [KD_FIRE_REFUSED] = on_refused,
    [KD_FIRE_FAILED] = on_failed};

void kd_fire_dr_cb(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque)
{
        (void)opaque;
        kd_fwd_t *f = rd_kafka_opaque(rk);
        kd_task_t *t = m->_private;
        then[classify(f, t, m)](f, t, m);
}
