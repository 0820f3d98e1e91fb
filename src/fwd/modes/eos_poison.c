/* SPDX-License-Identifier: Apache-2.0 */
/* exactly_once's poison isolation (kd_eos_poison.h): its decisions, pure,
 * over the view mode_eos.c fills, and its state (kd_eos_iso_t), changed
 * only here; the mode carries the decisions out. */
#define KD_MODE_SEAM 1 /* the compiler keeps the forwarder out */

#include "core/kd_perr.h"
#include "kd_eos_poison.h"

int kd_eos_names_record(rd_kafka_resp_err_t err)
{
        kd_perr_class_t c = kd_perr_class(err);
        return c == KD_PERR_RECORD || c == KD_PERR_TARGET;
}

int kd_eos_solo_needed(const kd_poison_entry_t *e)
{
        if (!e)
                return 0;
        if (e->solo_tries > 0)
                return 1;
        return e->aborts >=
               (kd_eos_names_record(e->err) ? 1 : KD_SOLO_AFTER_ABORTS);
}

int kd_eos_first_to_come(const kd_poison_entry_t *e,
                         const kd_poison_entry_t *first, int64_t now)
{
        return first && first->group == e->group && !first->solo_tries &&
               now < e->first_until;
}

int kd_eos_victim_possible(const kd_poison_entry_t *e)
{
        return !e->forgiven && !e->solo_tries && e->aborts == 1 &&
               kd_perr_class(e->err) == KD_PERR_RECORD;
}

int kd_eos_victim(const kd_poison_entry_t *e, int explained)
{
        return e->forgiven || (kd_eos_victim_possible(e) && explained);
}

static kd_eos_decision_t wait_ms(int ms)
{
        return (kd_eos_decision_t){.act = KD_EOS_WAIT, .wait_ms = ms};
}

int kd_eos_held_back(const kd_eos_view_t *v)
{
        /* A new producer is due (after an abort for a refused record): no
         * transaction opens on the old one meanwhile, so that the loop
         * replaces it with nothing open. */
        return (v->reset_due && v->txn_ready) || v->busy;
}

kd_eos_decision_t kd_eos_alone(const kd_eos_view_t *v,
                               const kd_poison_entry_t *e,
                               const kd_poison_entry_t *first)
{
        if (kd_eos_first_to_come(e, first, v->now))
                return wait_ms(KD_SOLO_WAIT_MS);
        if (v->inflight > 0)
                return (kd_eos_decision_t){.act = KD_EOS_TURN,
                                           .wait_ms = KD_SOLO_WAIT_MS};
        return (kd_eos_decision_t){.act = KD_EOS_ALONE};
}

/* e's record goes in a transaction of its own once the open one, if it
 * holds others, has committed; its retry waits first. */
static kd_eos_decision_t solo(const kd_eos_view_t *v,
                              const kd_poison_entry_t *e,
                              const kd_poison_entry_t *first)
{
        if (v->now < e->not_before_mono)
                return wait_ms((int)(e->not_before_mono - v->now));
        /* Of a transaction a target refused: a record of the destination
         * fewest went to goes first (refused alone, it clears those that
         * went elsewhere). */
        if (kd_eos_first_to_come(e, first, v->now))
                return wait_ms(KD_SOLO_WAIT_MS);
        if (!(v->txn_ready || (v->txn_open && v->members == 0)))
                return (kd_eos_decision_t){.act = KD_EOS_TURN,
                                           .wait_ms = KD_SOLO_WAIT_MS,
                                           .own_txn = 1};
        return (kd_eos_decision_t){.act = KD_EOS_SOLO};
}

kd_eos_decision_t kd_eos_decide(const kd_eos_view_t *v,
                                const kd_poison_entry_t *e,
                                const kd_poison_entry_t *first)
{
        if (kd_eos_held_back(v))
                return wait_ms(KD_SOLO_WAIT_MS);
        /* A replay its target is known to refuse goes alone, as the record
         * of a refused batch does: delivered, it commits with the others;
         * refused, it is the culprit and aborts this transaction only. */
        if (v->known_refusal && !kd_eos_solo_needed(e))
                return (kd_eos_decision_t){.act = KD_EOS_KNOWN};
        /* A refused batch's record needs only a batch of its own; a
         * refusal of a whole transaction (or an unknown cause) names no
         * record, so each goes in a transaction of its own. */
        if (kd_eos_solo_needed(e))
                return kd_perr_class(e->err) == KD_PERR_RECORD
                           ? kd_eos_alone(v, e, first)
                           : solo(v, e, first);
        if (v->solo_wait && v->now - v->solo_wait_at < KD_SOLO_WAIT_MAX_MS)
                return wait_ms(KD_SOLO_WAIT_MS); /* a solo record goes first */
        return (kd_eos_decision_t){.act = KD_EOS_SHARED};
}

int kd_eos_solo_weight(const kd_poison_entry_t *e, rd_kafka_resp_err_t cause,
                       int fatal, uint64_t commits, int abort_limit)
{
        kd_perr_class_t c = kd_perr_class(cause);
        if (c == KD_PERR_RECORD)
                return abort_limit;
        if (c == KD_PERR_TARGET || fatal)
                return 1;
        /* A transactional call failing on the producer's state (_STATE
         * from send_offsets_to_transaction: the partition was refused
         * while it ran) after the record's target refused it: the same
         * refusal, seen through the state it left. */
        if (c == KD_PERR_PRODUCER && kd_eos_names_record(e->err))
                return 1;
        return (c == KD_PERR_TRANSIENT || c == KD_PERR_CLUSTER) &&
               commits != e->commits_seen;
}

rd_kafka_resp_err_t kd_eos_solo_reason(rd_kafka_resp_err_t was,
                                       rd_kafka_resp_err_t cause)
{
        /* A named cause stays the record's reason over a vaguer later
         * one (an abort the coordinator refuses after the refusal). */
        return kd_eos_names_record(cause) || !kd_eos_names_record(was) ? cause
                                                                       : was;
}

int64_t kd_eos_solo_backoff(int solo_tries, int64_t retry_max_ms)
{
        int shift = solo_tries < 6 ? solo_tries - 1 : 5;
        int64_t backoff = (int64_t)KD_SOLO_BACKOFF_MS
                          << (shift > 0 ? shift : 0);
        return backoff > retry_max_ms ? retry_max_ms : backoff;
}

rd_kafka_resp_err_t kd_eos_cause(rd_kafka_resp_err_t cur,
                                 rd_kafka_resp_err_t err)
{
        /* A refusal is the cause even when a transactional call failed on
         * its account first (send_offsets: _STATE). */
        if (kd_perr_class(err) != KD_PERR_PURGED &&
            (!cur || (kd_eos_names_record(err) &&
                      kd_perr_class(cur) == KD_PERR_PRODUCER)))
                return err;
        return cur;
}

/* --- the state ------------------------------------------------------- */

void kd_eos_iso_destroy(kd_eos_iso_t *s)
{
        kd_poison_destroy(&s->poison);
}

void kd_eos_iso_view(const kd_eos_iso_t *s, kd_eos_view_t *v)
{
        v->members = s->poison.members_len;
        v->busy = s->solo || s->alone;
        v->solo_wait = s->solo_wait;
        v->solo_wait_at = s->solo_wait_mono;
}

int kd_eos_iso_wait_turn(kd_eos_iso_t *s, uint64_t key, int own_txn,
                         int64_t now)
{
        if (s->solo_wait && now - s->solo_wait_mono < KD_SOLO_WAIT_MAX_MS)
                return 0;
        s->solo_wait = key;
        s->solo_wait_mono = now;
        s->solo_wait_txn = own_txn;
        return 1;
}

void kd_eos_iso_alone(kd_eos_iso_t *s, kd_poison_entry_t *e, kd_eos_act_t act)
{
        if (act == KD_EOS_ALONE)
                s->alone = e->key;
        else
                s->solo = e->key;
        if (s->solo_wait == e->key)
                s->solo_wait = 0;
        e->solo_tries++;
}

void kd_eos_iso_shared(kd_eos_iso_t *s)
{
        s->solo_wait = 0;
}

void kd_eos_iso_cause(kd_eos_iso_t *s, rd_kafka_resp_err_t err)
{
        if (!s->cause)
                s->cause = err;
}

int kd_eos_iso_cause_named(const kd_eos_iso_t *s)
{
        return kd_eos_names_record(s->cause);
}

int kd_eos_iso_learn_stored(kd_eos_iso_t *s, rd_kafka_resp_err_t stored)
{
        if (kd_eos_names_record(s->cause) || !kd_eos_names_record(stored))
                return 0;
        s->cause = stored;
        return 1;
}

void kd_eos_iso_delivered(kd_eos_iso_t *s, uint64_t key)
{
        if (s->alone && s->alone == key)
                s->alone = 0; /* the others go on */
}

kd_poison_entry_t *kd_eos_iso_failed(kd_eos_iso_t *s, uint64_t key,
                                     int64_t likely, rd_kafka_resp_err_t err,
                                     int abort_limit, int *oom)
{
        kd_poison_entry_t *culprit = NULL;
        int named = kd_eos_names_record(err);
        s->cause = kd_eos_cause(s->cause, err);
        if (s->alone && s->alone == key) {
                s->alone = 0;
                if (named) {
                        /* Refused alone: the culprit. */
                        culprit = kd_poison_get(&s->poison, key);
                        culprit->solo_fails += kd_eos_solo_weight(
                            culprit, err, 0, s->commits, abort_limit);
                        culprit->err = err;
                        /* Its batch-mates were its victims. */
                        kd_poison_forgive(&s->poison, culprit->group,
                                          culprit->key);
                }
        }
        *oom = named && kd_poison_blame(&s->poison, key, likely);
        return culprit;
}

void kd_eos_iso_committed(kd_eos_iso_t *s)
{
        kd_poison_committed(&s->poison);
        s->commits++;
}

rd_kafka_resp_err_t kd_eos_iso_aborted(kd_eos_iso_t *s, int journal_failed,
                                       int fatal, int abort_limit,
                                       int64_t retry_max_ms, int64_t now,
                                       kd_eos_solo_abort_t *sa)
{
        rd_kafka_resp_err_t cause =
            s->cause ? s->cause : RD_KAFKA_RESP_ERR__FAIL;
        *sa = (kd_eos_solo_abort_t){0};
        if (journal_failed) {
                kd_poison_members_clear(&s->poison);
        } else if (s->solo) {
                kd_poison_members_clear(&s->poison);
                /* Its failures count, and its next solo attempt waits,
                 * longer each time, so that the others commit. */
                kd_poison_entry_t *e = kd_poison_get(&s->poison, s->solo);
                sa->counted = kd_eos_solo_weight(e, cause, fatal, s->commits,
                                                 abort_limit);
                e->solo_fails += sa->counted;
                /* Its target refused it alone: the records of its
                 * transaction that went elsewhere were its victims. */
                if (kd_perr_class(cause) == KD_PERR_TARGET)
                        kd_poison_forgive_elsewhere(&s->poison, e->group,
                                                    e->key, e->where);
                e->commits_seen = s->commits;
                e->err = kd_eos_solo_reason(e->err, cause);
                sa->backoff_ms =
                    kd_eos_solo_backoff(e->solo_tries, retry_max_ms);
                e->not_before_mono = now + sa->backoff_ms;
                sa->e = e;
        } else {
                kd_poison_aborted(&s->poison, cause, now);
        }
        return cause;
}

void kd_eos_iso_over(kd_eos_iso_t *s)
{
        s->solo = 0;
        s->alone = 0;
        s->cause = 0;
}
