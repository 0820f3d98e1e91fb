/* SPDX-License-Identifier: Apache-2.0 */
/* Fire stage (kd_fire.h): deciding and starting a fire (is its claim
 * still good, is the clock known, does its target refuse such a record,
 * does a record of intent go first), a hop or a dead letter. The produce
 * itself is fire_produce.c's; a failed one, fire_retry.c's; the journal
 * records of a fire without a claim, fire_journal.c's; the delivery
 * reports, fire_report.c's. */
#include "kd_fire.h"
#include "kd_pipeline_state.h"

#include <stdio.h>

#include "core/kd_mode_ops.h"
#include "core/kd_perr.h"
#include "core/kd_refusals.h"
#include "kd_claim.h"
#include "kd_fire_journal.h"
#include "kd_fire_produce.h"
#include "kd_fire_retry.h"
#include "kd_held.h"
#include "kd_lifecycle.h"
#include "kd_log.h"
#include "kd_probe.h"
#include "kd_settle.h"
#include "kd_tiers.h"
#include "kd_wire.h"
#include "producer/kd_producer.h"

const char *kd_fire_id(const kd_task_t *t, char *buf, size_t size)
{
        return t->rec.id ? kd_log_quote(t->rec.id, buf, size) : "-";
}

/* When t was due as far as the forwarder goes, what its lateness counts
 * from: its fire-at, or, for a task written already past it (scheduled
 * in the past: the producer's choice), when its tier record came due. A
 * task a rate limit sent back (not_before) counts from its fire-at: its
 * wait is lateness. */
int64_t kd_fire_due_ms(const kd_task_t *t)
{
        const kd_taskrec_t *r = &t->rec;
        if (r->fire_at_ms >= r->append_ms || !t->part || r->not_before_ms)
                return r->fire_at_ms;
        return r->append_ms + t->part->tier_ms;
}

/* How often a fire waiting for the first clock sample looks again. */
#define KD_CLOCK_WAIT_MS 20

void kd_fire_now(kd_fwd_t *f, kd_task_t *t, int64_t now)
{
        if (!kd_claim_holds(f, t)) {
                /* Its lease may pass before its fire is delivered, or the
                 * claim stage no longer lets it fire without a claim:
                 * claimed again (which renews it, finds it lost, or claims
                 * it after all). */
                kd_task_detach(f, t);
                kd_claim_enqueue(f, t);
                return;
        }
        if (!f->clock->known) { /* fire-at by whose clock? Not yet known. */
                kd_fire_retry_in(f, t, KD_TASK_FIRING, KD_CLOCK_WAIT_MS,
                                 "clock_wait_timer");
                return;
        }
        /* Its target refused such a record alone a moment ago: the same
         * answer, without a refused batch (or an aborted transaction). A
         * replay written since (the operator fixed the target) is tried
         * for real instead, alone (kd_refusals.h). */
        int64_t mono = kd_fwd_mono_ms(f);
        rd_kafka_resp_err_t known = kd_refusals_check(&f->refusals, t, mono, 0);
        rd_kafka_resp_err_t was = t->known_refusal;
        t->known_refusal = RD_KAFKA_RESP_ERR_NO_ERROR;
        if (known &&
            !kd_refusals_check(&f->refusals, t, mono, kd_refusals_since(t))) {
                t->known_refusal = known; /* learned before the replay */
                known = RD_KAFKA_RESP_ERR_NO_ERROR;
        }
        if (t->known_refusal && !was) {
                char q[KD_LOG_QUOTED_MAX(KDELAY_ID_MAX)], qt[300];
                kd_log(f->conf, KDELAY_LOG_NOTICE,
                       "event=replay_tried id=%s target=%s known=%s "
                       "action=produce_alone",
                       kd_fire_id(t, q, sizeof(q)),
                       kd_log_quote(t->rec.target, qt, sizeof(qt)),
                       rd_kafka_err2name(t->known_refusal));
        }
        if (known) {
                kd_held_remove(f, t);
                t->late_ms = now - kd_fire_due_ms(t);
                /* Claimed: its row goes DEAD. */
                kd_task_set_state(f, t, KD_TASK_FIRING);
                kd_metric_inc(&f->metrics, KD_M_REFUSED_KNOWN);
                kd_fire_failed(f, t, known);
                return;
        }
        if (kd_fire_journal_with(f, t, KD_TASK_FIRING, 0)) {
                kd_fire_journal_send(f, t, 1);
                return;
        }
        kd_fire_to_target(f, t, now);
}

void kd_fire_hop(kd_fwd_t *f, kd_task_t *t)
{
        char topic[256];
        size_t tier =
            kd_tiers_choose(&f->conf->tiers, kd_task_due_at(t) - kd_fwd_now(f));
        rd_kafka_headers_t *h = kd_fire_headers_copy(t);
        if (h) /* the header read, ignored or replaced by the turn now */
                rd_kafka_header_remove(h, KDELAY_HDR_NOT_BEFORE);
        if (h && t->rec.not_before_ms) { /* a rate limit's turn goes along */
                char nb[24];
                snprintf(nb, sizeof(nb), "%lld",
                         (long long)t->rec.not_before_ms);
                if (rd_kafka_header_add(h, KDELAY_HDR_NOT_BEFORE, -1, nb, -1)) {
                        rd_kafka_headers_destroy(h);
                        h = NULL;
                }
        }
        if (!h) {
                kd_fire_retry_later(f, t, KD_TASK_HOPPING, "produce_failed",
                                    RD_KAFKA_RESP_ERR__FAIL);
                return;
        }
        kd_tiers_topic(&f->conf->tiers, tier, f->conf->topic_prefix, topic,
                       sizeof(topic));
        t->hop_tier = (unsigned)tier;
        kd_fire_produce(f, t, topic, h, KD_TASK_HOPPING);
}

void kd_fire_dead(kd_fwd_t *f, kd_task_t *t, const char *reason)
{
        char topic[256];
        rd_kafka_headers_t *h = kd_fire_headers_copy(t);
        t->dead_reason = reason;
        if (!h) {
                kd_fire_retry_later(f, t, KD_TASK_DEAD, "produce_failed",
                                    RD_KAFKA_RESP_ERR__FAIL);
                return;
        }
        /* Ours is the only reason: a forged one from the producer goes. */
        rd_kafka_header_remove(h, KDELAY_HDR_DEAD_REASON);
        rd_kafka_header_remove(h, KDELAY_HDR_DEAD_ERROR);
        rd_kafka_header_add(h, KDELAY_HDR_DEAD_REASON, -1, reason, -1);
        if (t->dead_err)
                rd_kafka_header_add(h, KDELAY_HDR_DEAD_ERROR, -1,
                                    rd_kafka_err2name(t->dead_err), -1);
        kd_conf_dead_topic(f->conf, topic, sizeof(topic));
        kd_fire_produce(f, t, topic, h, KD_TASK_DEAD);
}
