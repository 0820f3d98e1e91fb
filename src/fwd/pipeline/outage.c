/* SPDX-License-Identifier: Apache-2.0 */
/* forwarder.fate_outage_policy (kd_outage.h): owns f->outage. Tells the
 * claim stage when claims may go out again (kd_claim_resume). */
#include "kd_outage.h"
#include "kd_pipeline_state.h"

#include <stdio.h>
#include <string.h>

#include "kd_claim.h"
#include "kd_journal.h"
#include "kd_log.h"
#include "kd_settle.h"
#include "kd_util.h"
#include "producer/kd_producer.h"
#include "store/kd_reconcile.h"
#include "store/kd_store.h"

/* How often a reconciliation is looked at while it runs. */
#define KD_OUTAGE_POLL_MS 100
/* A reconciliation that failed (Kafka unreachable, the journal topic
 * missing) is tried again after this. */
#define KD_OUTAGE_RETRY_MS 30000

/* How often, after a run, this process's fires without a claim are
 * looked at until all are settled; the wait is logged this often. */
#define KD_OUTAGE_SETTLE_POLL_MS 100
#define KD_OUTAGE_SETTLE_LOG_MS  10000
/* Fires made without a claim kept in memory until applied (settle.c):
 * beyond this many, due tasks wait for claims again (about 100 MB). */
#define KD_OUTAGE_UNCLAIMED_MAX 1000000

static void outage_cb(kd_timer_t *tm, void *arg);
static void poll_cb(kd_timer_t *tm, void *arg);
static void settle_cb(kd_timer_t *tm, void *arg);
static void sweep_cb(kd_timer_t *tm, void *arg);
static void renew_cb(kd_timer_t *tm, void *arg);
static void reconcile_begin(kd_fwd_t *f, const char *why, int claims_wait);
static void settle_again(kd_fwd_t *f, int64_t in_ms);
static int fires_unsettled(const kd_fwd_t *f);

static int policy_fire(const kd_fwd_t *f)
{
        return f->conf->fwd_outage_policy == KD_OUTAGE_FIRE;
}

/* A run this process needs for fires of its own (or, at its start, of
 * its past): under fire, claims wait for it (at most
 * KD_OUTAGE_APPLY_WAIT_MS), so that no claim fires again what the journal
 * says was fired. */
static void run_begin(kd_fwd_t *f, const char *why)
{
        reconcile_begin(f, why, policy_fire(f));
}

void kd_outage_init(kd_fwd_t *f)
{
        kd_timer_init(&f->outage->timer, outage_cb, f);
        kd_timer_init(&f->outage->poll, poll_cb, f);
        kd_timer_init(&f->outage->settle, settle_cb, f);
        kd_timer_init(&f->outage->sweep, sweep_cb, f);
        kd_timer_init(&f->outage->renew, renew_cb, f);
        f->outage->pending_seen_since_ms = -1;
}

/* KD_OUTAGE_SWEEP_MS +- KD_OUTAGE_SWEEP_JITTER_MS: spread by the
 * instance's name and the turn (splitmix64; not a secret, only spread). */
static int64_t sweep_period(kd_fwd_t *f)
{
        uint64_t x = ++f->outage->sweeps * 0x9e3779b97f4a7c15ULL;
        for (const char *c = f->instance; *c; c++)
                x = (x ^ (unsigned char)*c) * 0x100000001b3ULL;
        x += 0x9e3779b97f4a7c15ULL;
        x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
        x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
        x ^= x >> 31;
        return KD_OUTAGE_SWEEP_MS - KD_OUTAGE_SWEEP_JITTER_MS +
               (int64_t)(x % (2 * KD_OUTAGE_SWEEP_JITTER_MS + 1));
}

static void sweep_again(kd_fwd_t *f, int64_t in_ms)
{
        if (kd_timer_arm(&f->timers, &f->outage->sweep, KD_CLOCK_MONO,
                         kd_fwd_mono_ms(f) + in_ms, sweep_cb, f))
                kd_fwd_oom(f, "outage_sweep_timer");
}

void kd_outage_start(kd_fwd_t *f)
{
        if (policy_fire(f))
                kd_journal_warm(f);
        run_begin(f, "start");
        sweep_again(f, sweep_period(f));
}

/* Every forwarder, either policy: the journal is read from the journal
 * group's committed offsets, so records a forwarder that is gone left
 * unapplied (it stopped before MySQL came back) are applied, marked
 * pending first; a mark nobody renews any more is cleared once its run is
 * done (clear_done). Claims do not wait for it. Skipped while a run, a
 * clear or this process's own outage is under way: they decide. */
static void sweep_cb(kd_timer_t *tm, void *arg)
{
        (void)tm;
        kd_fwd_t *f = arg;
        kd_fwd_outage_t *o = f->outage;
        sweep_again(f, sweep_period(f));
        if (kd_store_down(f) || o->firing || o->reconcile || o->clear_out ||
            o->clear_wanted)
                return;
        reconcile_begin(f, "sweep", 0);
}

static void renew_again(kd_fwd_t *f)
{
        if (kd_timer_arm(&f->timers, &f->outage->renew, KD_CLOCK_MONO,
                         kd_fwd_mono_ms(f) + KD_OUTAGE_RENEW_MS, renew_cb, f))
                kd_fwd_oom(f, "outage_renew_timer");
}

/* This process marked the journal (or will, with MySQL's first answer):
 * it renews the mark while its own fires without a claim are unsettled,
 * so that no forwarder (itself included) clears it before their records
 * are within a run's ends. */
static void own_mark(kd_fwd_t *f)
{
        if (f->outage->owns_mark)
                return;
        f->outage->owns_mark = 1;
        f->outage->renewed_mono = 0; /* the gate's mark, or a run's */
        renew_again(f);
}

/* Renewals this far apart may have let the mark go stale, and another
 * forwarder clear it, while this one's fires were unsettled. */
#define KD_OUTAGE_RENEW_GAP_MS (KD_OUTAGE_MARK_STALE_MS - KD_OUTAGE_RENEW_MS)

static void renew_send(kd_fwd_t *f);

static void renew_done(kd_fwd_t *f, kd_store_req_t *r)
{
        kd_fwd_outage_t *o = f->outage;
        int64_t now = kd_fwd_mono_ms(f);
        int err = r->fw.err != KDELAY_OK;
        int gap = r->fw.op == KD_FW_RENEW_PENDING && o->renewed_mono &&
                  now - o->renewed_mono > KD_OUTAGE_RENEW_GAP_MS;
        o->renew_out = 0; /* failed: the store's backoff logs it */
        kd_store_req_done(f, r);
        if (err)
                return;
        o->renewed_mono = now;
        if (gap) { /* marked again (a new epoch): a clear since is undone */
                char q[300];
                kd_log(f->conf, KDELAY_LOG_WARNING,
                       "event=reconcile_pending_renew_late journal=%s "
                       "action=mark_again",
                       kd_log_quote(f->journal->topic, q, sizeof(q)));
                o->remark = 1;
                renew_send(f);
        }
}

static void renew_cb(kd_timer_t *tm, void *arg)
{
        (void)tm;
        kd_fwd_t *f = arg;
        kd_fwd_outage_t *o = f->outage;
        if (!o->owns_mark)
                return;
        renew_again(f);
        if (!o->firing && !fires_unsettled(f) && !kd_settle_unclaimed(f))
                return; /* nothing of its own left to keep it for */
        renew_send(f);
}

static void renew_send(kd_fwd_t *f)
{
        kd_fwd_outage_t *o = f->outage;
        if (o->renew_out || kd_store_down(f) || kd_store_gated(f) ||
            !kd_store_ready(f))
                return; /* the gate's mark goes first */
        if (o->renewed_mono &&
            kd_fwd_mono_ms(f) - o->renewed_mono > KD_OUTAGE_RENEW_GAP_MS)
                o->remark = 1;
        kd_store_req_t *r = kd_store_req_new(
            f, o->remark ? KD_FW_MARK_PENDING : KD_FW_RENEW_PENDING, 0);
        if (!r)
                return; /* again at the next tick */
        o->remark = 0;
        r->fw.journal = f->journal->topic;
        r->fw.by = f->instance;
        o->renew_out = 1;
        kd_store_submit(f, r, renew_done);
}

/* 1 when the journal topic is known gone (its metadata says so within
 * 2 s); 0 when it exists or cannot be told. */
static int journal_gone(kd_fwd_t *f)
{
        rd_kafka_topic_t *rkt = kd_producer_topic(f, f->journal->topic);
        const struct rd_kafka_metadata *md = NULL;
        if (!rkt || rd_kafka_metadata(kd_producer_main(f), 0, rkt, &md, 2000))
                return 0;
        int gone = md->topic_cnt == 1 &&
                   md->topics[0].err == RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART;
        rd_kafka_metadata_destroy(md);
        return gone;
}

void kd_outage_stop(kd_fwd_t *f)
{
        kd_fwd_outage_t *o = f->outage;
        /* Fires of its own not applied (the store down): logged; each id
         * when the journal that holds them failed or is gone. */
        if (kd_settle_unclaimed(f) > 0 && kd_producer_main(f))
                kd_settle_unclaimed_left(
                    f, kd_metric_get(&f->metrics, KD_M_JOURNAL_FAILED) > 0 ||
                           journal_gone(f));
        kd_timer_disarm(&f->timers, &o->timer);
        kd_timer_disarm(&f->timers, &o->poll);
        kd_timer_disarm(&f->timers, &o->settle);
        kd_timer_disarm(&f->timers, &o->sweep);
        kd_timer_disarm(&f->timers, &o->renew);
        if (!o->reconcile)
                return;
        char errstr[256];
        kd_reconcile_stats_t st;
        kdelay_err_t err =
            kd_reconcile_end(o->reconcile, &st, errstr, sizeof(errstr));
        o->reconcile = NULL;
        o->applying = 0;
        if (err)
                kd_log(f->conf, KDELAY_LOG_NOTICE,
                       "event=journal_apply_stopped applied=%llu "
                       "action=apply_at_next_start",
                       (unsigned long long)st.applied);
}

static void arm(kd_fwd_t *f, int64_t at)
{
        if (kd_timer_arm(&f->timers, &f->outage->timer, KD_CLOCK_MONO, at,
                         outage_cb, f))
                kd_fwd_oom(f, "outage_timer");
}

/* The store has been down for fate_outage_after: fire without claims. */
static void outage_cb(kd_timer_t *tm, void *arg)
{
        (void)tm;
        kd_fwd_t *f = arg;
        kd_fwd_outage_t *o = f->outage;
        int64_t now = kd_fwd_mono_ms(f);
        if (!kd_store_down(f)) {
                if (o->apply_again) /* a failed run's retry */
                        run_begin(f, "retry");
                return;
        }
        if (o->firing || !policy_fire(f))
                return;
        if (!kd_journal_usable(f)) { /* looked at again when it may be */
                arm(f, f->journal->broken_until_mono);
                return;
        }
        o->firing = 1;
        o->firing_since_mono = now;
        /* MySQL's first answer will be a mark of the journal pending, so
         * that no cancel answers "cancelled" for what is fired now until
         * the journal is applied. */
        kd_store_gate(f, f->journal->topic, kd_claim_resume);
        own_mark(f);
        kd_journal_warm(f); /* a renewed producer has no handle yet */
        kd_metric_set(&f->metrics, KD_M_FIRING_UNCLAIMED, 1);
        char qt[300];
        kd_log(f->conf, KDELAY_LOG_WARNING,
               "event=fate_outage down_ms=%lld after_ms=%lld journal=%s "
               "held=%zu action=fire_without_claims",
               (long long)(now - kd_store_down_since(f)),
               (long long)f->conf->fwd_outage_after_ms,
               kd_log_quote(f->journal->topic, qt, sizeof(qt)), f->held->cnt);
        kd_claim_resume(f);
}

void kd_outage_store_changed(kd_fwd_t *f)
{
        kd_fwd_outage_t *o = f->outage;
        if (!policy_fire(f))
                return;
        if (kd_store_down(f)) {
                if (!o->firing)
                        arm(f, kd_store_down_since(f) +
                                   f->conf->fwd_outage_after_ms);
                return;
        }
        kd_timer_disarm(&f->timers, &o->timer);
        if (!o->firing) {
                if (o->apply_again)
                        run_begin(f, "retry");
                else if (kd_settle_unclaimed(f) > 0)
                        /* An apply from memory failed (the store went away
                         * under it): again now, not at the next run (the
                         * tasks of refused records wait for it). */
                        settle_again(f, KD_OUTAGE_SETTLE_POLL_MS);
                return;
        }
        o->firing = 0;
        kd_metric_set(&f->metrics, KD_M_FIRING_UNCLAIMED, 0);
        kd_log(f->conf, KDELAY_LOG_NOTICE,
               "event=fate_outage_over fired_ms=%lld action=apply_journal",
               (long long)(kd_fwd_mono_ms(f) - o->firing_since_mono));
        run_begin(f, "outage_over");
}

static void claims_go(kd_fwd_t *f)
{
        f->outage->applying = 0;
        kd_claim_resume(f);
}

/* The journal could not be applied (all of it): claims go on, and it is
 * tried again later. */
static void apply_later(kd_fwd_t *f)
{
        f->outage->apply_again = 1;
        if (!kd_store_down(f))
                arm(f, kd_fwd_mono_ms(f) + KD_OUTAGE_RETRY_MS);
        claims_go(f);
        if (kd_settle_unclaimed(f) > 0) /* its own fires need no journal */
                settle_again(f, KD_OUTAGE_SETTLE_POLL_MS);
}

/* Starts applying the journal; claims wait for it with claims_wait. */
static void reconcile_begin(kd_fwd_t *f, const char *why, int claims_wait)
{
        kd_fwd_outage_t *o = f->outage;
        if (o->reconcile) {
                /* The run going on reads to the ends it saw: the records
                 * since are applied by a run after it. A sweep's may have
                 * read them before this outage's records: claims that
                 * must wait wait for a fresh run, begun as soon as it
                 * ends (review finding 8). */
                if (claims_wait && o->sweeping) {
                        if (!o->applying)
                                o->applying_since_mono = kd_fwd_mono_ms(f);
                        o->applying = 1;
                        o->sweeping = 0;
                        o->rerun_why = why;
                }
                return;
        }
        kd_timer_disarm(&f->timers, &o->settle); /* this run decides */
        kdelay_err_t err =
            kd_reconcile_start(&o->reconcile, f->conf, f->instance);
        if (err) {
                kd_log(f->conf, KDELAY_LOG_ERROR,
                       "event=journal_apply_failed why=%s err=%s "
                       "retry_in_ms=%d",
                       why, kdelay_err_name(err), KD_OUTAGE_RETRY_MS);
                o->reconcile = NULL;
                apply_later(f);
                return;
        }
        o->apply_again = 0;
        o->journal_at_start = f->journal->delivered;
        if (!o->applying)
                o->applying_since_mono = kd_fwd_mono_ms(f);
        o->applying = o->applying || claims_wait;
        o->sweeping = !claims_wait; /* a run in the background */
        o->run_why = why;
        kd_log(f->conf, o->sweeping ? KDELAY_LOG_DEBUG : KDELAY_LOG_INFO,
               "event=journal_apply_started why=%s", why);
        if (kd_timer_arm(&f->timers, &o->poll, KD_CLOCK_MONO,
                         kd_fwd_mono_ms(f) + KD_OUTAGE_POLL_MS, poll_cb, f))
                kd_fwd_oom(f, "outage_poll_timer");
}

static void poll_cb(kd_timer_t *tm, void *arg)
{
        kd_fwd_t *f = arg;
        kd_fwd_outage_t *o = f->outage;
        int64_t now = kd_fwd_mono_ms(f);
        kd_reconcile_stats_t st;
        if (!o->reconcile)
                return;
        if (!kd_reconcile_finished(o->reconcile)) {
                if (o->applying &&
                    now - o->applying_since_mono >= KD_OUTAGE_APPLY_WAIT_MS) {
                        kd_reconcile_progress(o->reconcile, &st);
                        kd_log(f->conf, KDELAY_LOG_WARNING,
                               "event=journal_apply_slow waited_ms=%lld "
                               "applied=%llu to_read=%lld "
                               "action=claims_resume",
                               (long long)(now - o->applying_since_mono),
                               (unsigned long long)st.applied,
                               (long long)st.end_lag);
                        claims_go(f);
                }
                if (kd_timer_arm(&f->timers, tm, KD_CLOCK_MONO,
                                 now + KD_OUTAGE_POLL_MS, poll_cb, f))
                        kd_fwd_oom(f, "outage_poll_timer");
                return;
        }
        char errstr[256] = "";
        kdelay_err_t err =
            kd_reconcile_end(o->reconcile, &st, errstr, sizeof(errstr));
        o->reconcile = NULL;
        kd_settle_schema_seen(f, st.schema); /* fate_marks=auto */
        kd_metric_add(&f->metrics, KD_M_JOURNAL_APPLIED, st.applied);
        kd_metric_add(&f->metrics, KD_M_FIRED_AFTER_CANCEL, st.after_cancel);
        kd_metric_add(&f->metrics, KD_M_JOURNAL_UNCONFIRMED, st.unconfirmed);
        if (st.read) { /* a run that failed may have read it */
                o->pending_seen_since_ms =
                    st.pending ? st.pending_since_ms : -1;
                o->pending_seen_mono = now;
        }
        if (!err && st.marked)
                own_mark(f); /* it found records nobody had marked */
        char q[300];
        /* A background run that found nothing is not news; one failing
         * (the journal hidden from this principal, say) is logged once
         * until one succeeds. */
        int quiet =
            o->sweeping && (err ? o->sweep_failed : !st.records && !st.pending);
        kd_log(f->conf,
               quiet         ? KDELAY_LOG_DEBUG
               : !err        ? KDELAY_LOG_NOTICE
               : o->sweeping ? KDELAY_LOG_WARNING
                             : KDELAY_LOG_ERROR,
               "event=journal_applied ok=%d records=%llu applied=%llu "
               "recorded=%llu fired_after_cancel=%llu intents=%llu "
               "unconfirmed=%llu malformed=%llu ms=%lld err=%s journal=%s "
               "why=%s",
               !err, (unsigned long long)st.records,
               (unsigned long long)st.applied, (unsigned long long)st.recorded,
               (unsigned long long)st.after_cancel,
               (unsigned long long)st.intents,
               (unsigned long long)st.unconfirmed,
               (unsigned long long)st.malformed,
               (long long)(now - o->applying_since_mono),
               kd_log_quote(err ? errstr : "", q, sizeof(q)),
               st.journal_gone ? "gone" : "read", o->run_why);
        if (o->rerun_why) { /* claims wait for a run after this one */
                const char *why = o->rerun_why;
                o->rerun_why = NULL;
                reconcile_begin(f, why, 1);
                return;
        }
        if (err && o->sweeping) { /* the next sweep tries again */
                o->sweep_failed = 1;
                claims_go(f);
                if (kd_settle_unclaimed(f) > 0)
                        settle_again(f, KD_OUTAGE_SETTLE_POLL_MS);
                return;
        }
        if (err) { /* the records stay: applied by the retry */
                apply_later(f);
                return;
        }
        o->sweep_failed = 0;
        claims_go(f);
        /* No journal topic: taken for gone (nothing to apply, the mark
         * may clear) only once runs KD_JOURNAL_GONE_CONFIRM_MS apart said
         * so, as a broker whose metadata lags says it of one that exists
         * (review finding 9); meanwhile the mark stays and a run is
         * brought forward to then. */
        if (!st.journal_gone)
                o->gone_seen_mono = 0;
        else if (!o->gone_seen_mono ||
                 now - o->gone_seen_mono > 10 * KD_JOURNAL_GONE_CONFIRM_MS)
                o->gone_seen_mono = now;
        if (st.journal_gone &&
            now - o->gone_seen_mono < KD_JOURNAL_GONE_CONFIRM_MS) {
                kd_log(f->conf, KDELAY_LOG_INFO,
                       "event=journal_gone_unconfirmed seen_ms_ago=%lld "
                       "action=run_again next_run_in_ms=%lld",
                       (long long)(now - o->gone_seen_mono),
                       (long long)(o->gone_seen_mono +
                                   KD_JOURNAL_GONE_CONFIRM_MS - now + 100));
                sweep_again(f, o->gone_seen_mono + KD_JOURNAL_GONE_CONFIRM_MS -
                                   now + 100);
                if (kd_settle_unclaimed(f) > 0)
                        settle_again(f, KD_OUTAGE_SETTLE_POLL_MS);
                return;
        }
        if (st.pending) {
                o->clear_wanted = 1;
                o->clear_epoch = st.epoch;
                o->clear_read_age_ms = st.marked_age_ms;
                o->settle_since_mono = o->settle_logged_mono = now;
        }
        /* Records delivered since it began may be past the ends it read
         * to: once more (the run reads from where this one committed). */
        if (f->journal->delivered != o->journal_at_start && !kd_store_down(f))
                run_begin(f, "more_records");
        else if (o->clear_wanted || kd_settle_unclaimed(f))
                settle_cb(&o->settle, f);
}

/* 1 while a fire this process made without a claim is not settled: its
 * journal record, or its delivery record to come, may not be in the
 * journal yet. Not a task whose record was refused for good (mem_fire):
 * none will be; it waits for its fire's apply from memory (settle_cb),
 * counted by kd_settle_unclaimed. */
static int fires_unsettled(const kd_fwd_t *f)
{
        if (f->journal->inflight > 0)
                return 1;
        for (const kd_part_t *p = f->intake->parts; p; p = p->next)
                for (const kd_task_t *t = p->tasks; t; t = t->next)
                        if (t->claim == KD_CLAIM_UNCLAIMED && !t->mem_fire)
                                return 1;
        return 0;
}

static void settle_again(kd_fwd_t *f, int64_t in_ms)
{
        if (kd_timer_arm(&f->timers, &f->outage->settle, KD_CLOCK_MONO,
                         kd_fwd_mono_ms(f) + in_ms, settle_cb, f))
                kd_fwd_oom(f, "outage_settle_timer");
}

/* The mark was renewed within KD_OUTAGE_MARK_STALE_MS (age_ms ago, by the
 * store's clock, last by `by`): a forwarder's fires may still be on their
 * way to the journal, past the ends a run read. Not cleared now: a run
 * once it is stale reads the journal again and clears it. */
static void clear_when_stale(kd_fwd_t *f, int64_t age_ms, const char *by)
{
        kd_fwd_outage_t *o = f->outage;
        o->clear_wanted = 0;
        o->owns_mark = 0; /* settled: nothing of its own to renew it for */
        int64_t in = KD_OUTAGE_MARK_STALE_MS - age_ms + 1000;
        if (in < 1000)
                in = 1000;
        if (in > KD_OUTAGE_SWEEP_MS)
                in = KD_OUTAGE_SWEEP_MS;
        char q[300], qb[300];
        kd_log(f->conf, KDELAY_LOG_INFO,
               "event=reconcile_pending_owned journal=%s by=%s "
               "renewed_ms_ago=%lld action=clear_when_stale "
               "next_run_in_ms=%lld",
               kd_log_quote(f->journal->topic, q, sizeof(q)),
               kd_log_quote(by, qb, sizeof(qb)), (long long)age_ms,
               (long long)in);
        sweep_again(f, in);
}

static void clear_done(kd_fwd_t *f, kd_store_req_t *r)
{
        kd_fwd_outage_t *o = f->outage;
        kd_fw_req_t *fw = &r->fw;
        o->clear_out = 0;
        char q[300];
        if (fw->err) { /* the store's backoff logs it */
                settle_again(f, 1000);
        } else if (fw->pending.since_ms >= 0 &&
                   fw->pending.epoch == o->clear_epoch) {
                /* Not marked since, but renewed since the run read it. */
                clear_when_stale(f, fw->pending.marked_age_ms, fw->pending.by);
        } else if (fw->pending.since_ms >= 0) {
                /* Marked again since the run read it: another forwarder
                 * fired without a claim, or a run found records. */
                kd_log(f->conf, KDELAY_LOG_INFO,
                       "event=reconcile_pending_kept journal=%s epoch=%llu "
                       "action=apply_again",
                       kd_log_quote(f->journal->topic, q, sizeof(q)),
                       (unsigned long long)fw->pending.epoch);
                if (!o->reconcile && !kd_store_down(f))
                        run_begin(f, "marked_again");
        } else {
                o->clear_wanted = 0;
                o->owns_mark = 0;
                o->pending_seen_since_ms = -1;
                kd_log(f->conf, KDELAY_LOG_NOTICE,
                       "event=reconcile_pending_cleared journal=%s "
                       "settle_ms=%lld action=cancels_answer_again",
                       kd_log_quote(f->journal->topic, q, sizeof(q)),
                       (long long)(kd_fwd_mono_ms(f) - o->settle_since_mono));
        }
        kd_store_req_done(f, r);
}

/* After a run that read the journal pending: once this process's fires
 * without a claim are settled (nothing of them can reach the journal
 * after the run's ends any more), the mark is cleared with the epoch the
 * run read; a mark since keeps it. */
static void settle_cb(kd_timer_t *tm, void *arg)
{
        (void)tm;
        kd_fwd_t *f = arg;
        kd_fwd_outage_t *o = f->outage;
        int64_t now = kd_fwd_mono_ms(f);
        if (o->clear_out || o->reconcile)
                return; /* the run going on decides */
        if (!o->clear_wanted && !kd_settle_unclaimed(f))
                return;
        if (kd_store_down(f) || kd_outage_firing(f))
                return; /* the outage's end runs it again */
        if (o->clear_wanted && f->journal->delivered != o->journal_at_start) {
                run_begin(f, "more_records");
                return;
        }
        if (fires_unsettled(f)) {
                if (now - o->settle_logged_mono >= KD_OUTAGE_SETTLE_LOG_MS) {
                        o->settle_logged_mono = now;
                        kd_log(f->conf, KDELAY_LOG_WARNING,
                               "event=reconcile_pending_waits waited_ms=%lld "
                               "journal_inflight=%zu "
                               "action=wait_for_fires_without_claims",
                               (long long)(now - o->settle_since_mono),
                               f->journal->inflight);
                }
                settle_again(f, KD_OUTAGE_SETTLE_POLL_MS);
                return;
        }
        /* Its own fires, from memory: those a lost journal lost (after a
         * failed run too: the journal may be what is gone). */
        if (kd_settle_unclaimed(f) > 0) {
                kd_settle_apply_unclaimed(f);
                settle_again(f, KD_OUTAGE_SETTLE_POLL_MS);
                return;
        }
        if (!o->clear_wanted)
                return;
        kd_store_req_t *r = kd_store_req_new(f, KD_FW_CLEAR_PENDING, 0);
        if (!r) {
                settle_again(f, 1000);
                return;
        }
        r->fw.journal = f->journal->topic;
        r->fw.by = f->instance;
        /* Renewed within the bound before the run read the ends: a
         * forwarder's fires may not all be within them. Epoch 0 (no row
         * has it) clears nothing: the answer says whether it was marked
         * since (run again) or is to be cleared once stale. */
        r->fw.epoch = o->clear_read_age_ms >= KD_OUTAGE_MARK_STALE_MS
                          ? o->clear_epoch
                          : 0;
        r->fw.stale_ms = KD_OUTAGE_MARK_STALE_MS;
        o->clear_out = 1;
        kd_store_submit(f, r, clear_done);
}

int kd_outage_firing(const kd_fwd_t *f)
{
        return f->outage->firing && kd_journal_usable(f) &&
               kd_settle_unclaimed(f) < KD_OUTAGE_UNCLAIMED_MAX;
}

int kd_outage_claims_wait(const kd_fwd_t *f)
{
        const kd_fwd_outage_t *o = f->outage;
        return o->applying && o->reconcile &&
               kd_fwd_mono_ms(f) - o->applying_since_mono <
                   KD_OUTAGE_APPLY_WAIT_MS;
}

void kd_outage_gauges(kd_fwd_t *f)
{
        kd_metric_set(
            &f->metrics, KD_M_FATE_OUTAGE,
            kd_store_down(f) ? kd_fwd_mono_ms(f) - kd_store_down_since(f) : 0);
        kd_metric_set(&f->metrics, KD_M_FIRING_UNCLAIMED, kd_outage_firing(f));
        kd_metric_set(&f->metrics, KD_M_RECONCILE_PENDING,
                      kd_store_gated(f) || f->outage->owns_mark);
        int64_t since = f->outage->pending_seen_since_ms;
        /* A reading two sweeps old says nothing any more (another
         * forwarder may have cleared the mark since), unless this process
         * keeps the mark itself. */
        if (since >= 0 && !f->outage->owns_mark && !f->outage->clear_wanted &&
            kd_fwd_mono_ms(f) - f->outage->pending_seen_mono >
                2 * KD_OUTAGE_SWEEP_MS)
                since = -1;
        int64_t age = since >= 0 ? kd_fwd_wall_ms(f) - since : 0;
        if (since >= 0 && age < 1)
                age = 1; /* pending: never 0 (another host's clock) */
        kd_metric_set(&f->metrics, KD_M_RECONCILE_PENDING_AGE, age);
        if (f->outage->firing &&
            kd_settle_unclaimed(f) >= KD_OUTAGE_UNCLAIMED_MAX &&
            !f->settle->uf_full_logged) {
                f->settle->uf_full_logged = 1;
                kd_log(f->conf, KDELAY_LOG_WARNING,
                       "event=fate_outage_bound fired_unclaimed=%zu "
                       "action=hold_for_claims",
                       kd_settle_unclaimed(f));
        }
        if (!f->outage->firing)
                f->settle->uf_full_logged = 0;
}

void kd_outage_why(const kd_fwd_t *f, char *buf, size_t size)
{
        const kd_fwd_outage_t *o = f->outage;
        if (kd_outage_firing(f))
                snprintf(buf, size,
                         "firing without claims for %lld ms "
                         "(forwarder.fate_outage_policy=fire): a cancel "
                         "recorded before the outage may be delivered; "
                         "journal %s",
                         (long long)(kd_fwd_mono_ms(f) - o->firing_since_mono),
                         f->journal->topic);
        else if (o->firing)
                snprintf(buf, size,
                         "the journal %s failed: due tasks wait for claims",
                         f->journal->topic);
        else if (kd_outage_claims_wait(f))
                snprintf(buf, size,
                         "applying the journal %s: claims wait for it",
                         f->journal->topic);
        else if (o->clear_wanted)
                snprintf(buf, size,
                         "the journal %s is marked pending: cancels answer "
                         "\"not known yet, retry\" until it is applied",
                         f->journal->topic);
        else
                buf[0] = '\0';
}
