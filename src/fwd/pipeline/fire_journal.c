/* SPDX-License-Identifier: Apache-2.0 */
/* Fire stage, the journal records of a fire without a claim
 * (kd_fire_journal.h): written with the fire in its transaction
 * (exactly_once), or around it (at_least_once: a record of intent before
 * the fire, a record of delivery after); a record refused for good. The
 * journal's write side is the store room's (kd_journal.h). */
#include "kd_fire_journal.h"
#include "kd_pipeline_state.h"

#include "core/kd_mode_ops.h"
#include "kd_fire.h"
#include "kd_fire_retry.h"
#include "kd_journal.h"
#include "kd_lifecycle.h"
#include "kd_log.h"
#include "kd_settle.h"
#include "producer/kd_producer.h"

/* 1 when a produce of t as `as` is put on record by its journal record
 * (the settle stage says, kd_settle_mark: the claim stage let t fire
 * without a claim), and the mode writes that record with the produce (with
 * 1: exactly_once, in the produce's transaction) or around it (with 0:
 * at_least_once, a record of intent before the fire and a record of its
 * delivery after). */
int kd_fire_journal_with(const kd_fwd_t *f, const kd_task_t *t,
                         kd_task_state_t as, int with)
{
        return kd_settle_mark(t, as) == KD_MARK_JOURNAL &&
               !f->mode->journal_with_fire == !with;
}

/* A fire without a claim (or its dead letter), just produced through rk
 * in a transaction: its journal record goes in the same one. If it
 * cannot, the transaction must not commit the fire. */
void kd_fire_journal_with_fire(kd_fwd_t *f, kd_task_t *t, rd_kafka_t *rk)
{
        rd_kafka_resp_err_t err =
            kd_journal_write(f, t, rk, kd_journal_marker(f), 0);
        if (!err)
                return;
        kd_journal_broken(f, err);
        if (f->mode->journal_failed)
                f->mode->journal_failed(&f->mode_ctx, err);
}

/* The journal refuses t's record of delivery for good (its topic gone for
 * KD_JOURNAL_GONE_CONFIRM_MS, say: kd_journal_refused_for_good): the fire
 * was delivered, and a record that can never be written would hold t, its
 * offset and the journal's mark for ever. Its fire is kept in memory and
 * applied to the fate table from there (settle.c), like every fire of a
 * journal lost while this process lives, and t waits for that apply
 * (kd_settle_fired_held): its offset is done only once the fire is on
 * record, so a crash before (MySQL still down, say) reads t again. The
 * dead letter of a fire that failed has no fire to keep: settled.
 * at_least_once only: exactly_once writes a fire's record in its
 * transaction, and a refused one aborts it, fire and offset alike. */
void kd_fire_journal_refused(kd_fwd_t *f, kd_task_t *t, rd_kafka_resp_err_t err)
{
        char q[KD_LOG_QUOTED_MAX(KDELAY_ID_MAX)], qt[300];
        kd_journal_broken(f, err);
        /* Read before t may be released (a revoked task's is at once). */
        const char *id = kd_fire_id(t, q, sizeof(q));
        const char *dead =
            t->fire_failed && t->dead_reason ? t->dead_reason : "-";
        if (!t->fire_failed && kd_settle_fired_held(f, t)) {
                /* Out of memory: written again, and refused again, until
                 * it can be kept; counted and logged once, when it is. */
                kd_fire_retry_later(f, t, KD_TASK_JOURNAL, "journal_refused",
                                    err);
                return;
        }
        kd_metric_inc(&f->metrics, KD_M_JOURNAL_REFUSED);
        kd_log(f->conf, KDELAY_LOG_WARNING,
               "event=journal_record_refused id=%s journal=%s err=\"%s\" "
               "dead=%s action=apply_from_memory",
               id, kd_log_quote(f->journal->topic, qt, sizeof(qt)),
               rd_kafka_err2str(err), dead);
        if (t->fire_failed)
                f->mode->delivered(&f->mode_ctx, t);
}

/* A fire without a claim, at_least_once: its journal record, produced
 * around the fire. With intent, t is to fire: its record of intent goes
 * first, and the fire only once it is acknowledged (delivered), so that
 * whatever the crash point no fire is delivered with nothing in the
 * journal; a record that cannot be written breaks the journal, and t is
 * claimed instead (kd_fire_now asks again). Without, the fire (or its
 * dead letter) was delivered: its record of delivery now, and the task is
 * settled on the record's delivery, so that its offset is never committed
 * with the fire unrecorded (written again until it is). */
void kd_fire_journal_send(kd_fwd_t *f, kd_task_t *t, int intent)
{
        kd_task_set_state(f, t, intent ? KD_TASK_INTENT : KD_TASK_JOURNAL);
        if (intent)
                t->sent_ms = kd_fwd_wall_ms(f);
        rd_kafka_resp_err_t err =
            kd_journal_write(f, t, kd_producer_main(f), t, intent);
        if (!err) {
                kd_producer_sent(f);
                kd_task_to_flight(t);
                return;
        }
        if (!intent && kd_journal_refused_for_good(f, err)) {
                kd_fire_journal_refused(f, t, err);
                return;
        }
        kd_journal_broken(f, err);
        kd_fire_retry_later(f, t, intent ? KD_TASK_FIRING : KD_TASK_JOURNAL,
                            "journal_failed", err);
}
