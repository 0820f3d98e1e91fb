/* SPDX-License-Identifier: Apache-2.0 */
/* The figures table (docs/torture.md, "Reading the table"). */
#include <stdlib.h>
#include <string.h>

#include "report.h"

typedef struct lat {
        int64_t *v; /* owned */
        size_t n;
} lat_t;

static int cmp_i64(const void *a, const void *b)
{
        int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
        return x < y ? -1 : x > y;
}

static int64_t pct(const lat_t *l, double q)
{
        size_t i = (size_t)(q * (double)l->n);
        return l->v[i < l->n ? i : l->n - 1];
}

static void row_lat(FILE *out, const char *name, lat_t *l)
{
        if (!l->n) {
                fprintf(out, "  %-42s n=0\n", name);
                return;
        }
        qsort(l->v, l->n, sizeof(*l->v), cmp_i64);
        fprintf(out, "  %-42s %lld / %lld / %lld / %lld ms (n=%zu)\n", name,
                (long long)pct(l, 0.5), (long long)pct(l, 0.99),
                (long long)pct(l, 0.999), (long long)l->v[l->n - 1], l->n);
}

static void row(FILE *out, const char *name, long long v, const char *note)
{
        fprintf(out, "  %-42s %lld%s%s\n", name, v, note && *note ? "  " : "",
                note ? note : "");
}

/* Counted figures over the task table. */
typedef struct counts {
        long long acked, failed, acked_late, delivered, records, dups, cancels,
            c_ok, c_late, c_err, c_retried, race, race_ok, race_late, lost,
            unacked_missing, early_ts, early_rx, cancel_then_delivered,
            fate_cancel_delivered, too_late_missing, bad, dead_tasks,
            fate_fired, fate_covered, fate_firing, fate_cancelled, fate_none,
            fired_no_row, heavy, heavy_delivered, malformed, mal_dead, mal_dups,
            mal_missing, mal_delivered, mal_bad_reason;
        /* malformed and poison tasks never seen dead-lettered whose dead
         * letter a forwarder delivered while the dead_topic_delete fault
         * deleted the topic (doomed): gone with it, not missing */
        const unsigned char *doomed; /* per task; NULL = none */
        long long mal_destroyed, p_destroyed[TT_POISON_KINDS];
        /* the fate table unread: tasks neither delivered nor known to be
         * cancelled whose cancel was sent with no definite answer (a
         * CANCELLED row would settle them): the harness's, not LOST */
        long long undecided;
        /* forwarder.fate_outage_policy=fire: acknowledged cancels of tasks
         * delivered through a MySQL fault window, the cancel before the
         * window began, or during it or its reconciliation (the policy's
         * documented cost, not a failure). */
        long long through_before, through_gap;
        /* tasks fired without a claim (kdelay_unclaimed rows), of them
         * recorded as cancelled before; delivered tasks counted as fired
         * through an outage after a cancel without such a record */
        long long unclaimed, unclaimed_cancelled, through_unrecorded;
        /* poison tasks by kind (tt_poison_t; 0 = all kinds) */
        long long p_n[TT_POISON_KINDS], p_dead[TT_POISON_KINDS],
            p_missing[TT_POISON_KINDS], p_delivered[TT_POISON_KINDS],
            p_bad_reason[TT_POISON_KINDS], p_dups[TT_POISON_KINDS],
            p_fate_bad[TT_POISON_KINDS], p_no_error[TT_POISON_KINDS];
        /* innocent tasks of the poisoned targets; of them, batch-mates */
        long long inn, inn_delivered, inn_lost, mates, mates_delivered,
            mates_lost, fate_dead, fate_dead_innocent, fired_undelivered;
} counts_t;

/* A forwarder whose peak RSS passes this grew with something other than
 * its held window (TT_MAX_HELD_BYTES, 16 MB of prefetch, librdkafka's
 * buffers and its code). */
#define TT_RSS_BOUND_KB (512LL * 1024)
/* exactly_once: transactions aborted because the broker refused a record
 * (cause INVALID_RECORD, MSG_SIZE_TOO_LARGE), at most this many per
 * poison task of kinds 1 and 2 (its shared transaction, its solo one, and
 * slack for a rewind after a kill): more is an abort loop. */
#define TT_POISON_ABORTS_MAX 3

/* A fire through a fate-store outage may follow a cancel: how long after
 * a MySQL fault window a fire still counts as made through it (the
 * outage is seen, then fate_outage_after passes, within the window), and
 * how long after it a cancel is still before its reconciliation. */
#define TT_THROUGH_FIRE_SLACK_MS 5000
#define TT_THROUGH_CANCEL_GAP_MS 15000

/* The names of the checks that failed, comma-separated. */
typedef struct why {
        char buf[512];
        size_t len;
        int n;
} why_t;

static void why_add(why_t *w, int cond, const char *name)
{
        if (!cond)
                return;
        w->n++;
        int k = snprintf(w->buf + w->len, sizeof(w->buf) - w->len, "%s%s",
                         w->len ? "," : "", name);
        if (k > 0 && (size_t)k < sizeof(w->buf) - w->len)
                w->len += (size_t)k;
}

static int policy_fire(const tt_opts_t *o)
{
        return tt_policy_fire(o);
}

/* For an acknowledged cancel of delivered task t: 1 when it was fired
 * through a MySQL fault window under the policy fire and cancelled before
 * the window, 2 when cancelled during it or before its reconciliation, 0
 * otherwise (a failure). */
static int through_outage(const tt_report_in_t *in, const tt_task_t *t)
{
        const tt_fault_counts_t *f = in->faults;
        if (!policy_fire(in->opts))
                return 0;
        for (int w = 0; w < f->mysql_wins; w++) {
                int64_t b = f->mysql_win[w][0], e = f->mysql_win[w][1];
                if (t->first_ts < b ||
                    t->first_ts > e + TT_THROUGH_FIRE_SLACK_MS)
                        continue;
                if (t->cancel_sent_at < b)
                        return 1;
                if (t->cancel_sent_at < e + TT_THROUGH_CANCEL_GAP_MS)
                        return 2;
        }
        return 0;
}

/* A malformed or poison task whose dead letter went with the deleted
 * dead-letter topic (counts_t.doomed). */
static void log_destroyed(const tt_report_in_t *in, size_t i)
{
        const tt_task_t *t = &in->tasks[i];
        tt_log("event=dead_letter_destroyed idx=%zu id=%s malformed=%d "
               "poison=%d sched_at_s=%.3f acked_at_s=%.3f doomed_s=%.3f..%.3f "
               "why=\"its dead letter was delivered while the "
               "dead_topic_delete fault deleted the topic\"",
               i, t->id, t->malformed, t->poison,
               (double)(t->sched_at - in->t0) / 1e3,
               (double)(t->acked_at - in->t0) / 1e3,
               (double)(in->faults->dead_doomed[0] - in->t0) / 1e3,
               (double)(in->faults->dead_doomed[1] - in->t0) / 1e3);
}

/* How long after the delete's end a delivery report of a dead letter
 * appended before it may still be logged. */
#define TT_DOOMED_REPORT_MS 5000

typedef struct doomed_ctx {
        const tt_report_in_t *in;
        unsigned char *mark;
        char tier1s[160]; /* where malformed and internal tasks are written */
} doomed_ctx_t;

/* A dead letter delivered while the topic was being deleted: the task it
 * names (by id; a malformed one, id "-", by the tier record it was
 * written to, which it is dead-lettered from when first read). */
static void on_doomed_line(const tt_dead_line_t *l, void *ctx)
{
        doomed_ctx_t *d = ctx;
        const tt_report_in_t *in = d->in;
        int by_id = strcmp(l->id, "-") != 0;
        if (!by_id && strcmp(l->topic, d->tier1s))
                return;
        for (size_t i = 0; i < in->n; i++) {
                const tt_task_t *t = &in->tasks[i];
                if (!t->malformed && !t->poison)
                        continue;
                if (by_id ? !strcmp(t->id, l->id)
                          : (t->malformed || t->poison == TT_POISON_INTERNAL) &&
                                t->tier_partition == l->partition &&
                                t->tier_offset == l->offset)
                        d->mark[i] = 1;
        }
}

/* counts_t.doomed: NULL when no delete was injected (or out of memory:
 * then every such task counts as missing, as before). */
static unsigned char *doomed_marks(const tt_report_in_t *in)
{
        const int64_t *w = in->faults->dead_doomed;
        if (!w[1] || !in->n)
                return NULL;
        doomed_ctx_t d = {in, calloc(in->n, 1), ""};
        if (!d.mark)
                return NULL;
        snprintf(d.tier1s, sizeof(d.tier1s), "%s.tier.1s", in->names->prefix);
        tt_fleet_dead_lettered(in->fleet, w[0], w[1] + TT_DOOMED_REPORT_MS,
                               on_doomed_line, &d);
        return d.mark;
}

/* A poison task: dead-lettered with its reason (a refused record naming
 * the Kafka error), never on a target; kinds 1 and 2 were claimed, so
 * their fate row is DEAD with that reason; kind 3 is dead-lettered
 * before any claim, so it has no row. */
static void count_poison(const tt_report_in_t *in, size_t i, counts_t *c,
                         int *shown)
{
        const tt_task_t *t = &in->tasks[i];
        int acked = atomic_load(&t->sched_state) == TT_SCHED_ACKED;
        int dead = atomic_load(&t->dead_copies);
        int copies = atomic_load(&t->copies);
        int destroyed = acked && !dead && c->doomed && c->doomed[i];
        /* the fate table unread: nothing to check */
        int fate_bad = acked && in->fate_rows >= 0 &&
                       (t->poison == TT_POISON_INTERNAL
                            ? t->fate != TT_FATE_NONE
                            : t->fate != TT_FATE_DEAD || !t->fate_reason_ok);
        const int kinds[2] = {0, t->poison}; /* all, and its kind */
        for (int j = 0; j < 2; j++) {
                int k = kinds[j];
                c->p_n[k]++;
                c->p_dead[k] += dead > 0 && !t->dead_bad_reason;
                c->p_missing[k] += acked && !dead && !destroyed;
                c->p_destroyed[k] += destroyed;
                c->p_delivered[k] += copies > 0 || t->fate == TT_FATE_FIRED;
                c->p_bad_reason[k] += t->dead_bad_reason > 0;
                c->p_dups[k] += dead > 1 ? dead - 1 : 0;
                c->p_fate_bad[k] += fate_bad;
                c->p_no_error[k] += t->dead_no_error > 0;
        }
        if (destroyed)
                log_destroyed(in, i);
        else if ((acked && !dead) || copies || fate_bad || t->dead_bad_reason)
                if ((*shown)++ < 20)
                        tt_log("event=poison_wrong idx=%zu id=%s kind=%d "
                               "fire_at_s=%.3f sched_at_s=%.3f dead=%d "
                               "bad_reason=%d copies=%d fate=%d "
                               "fate_reason_ok=%d",
                               i, t->id, t->poison,
                               (double)(t->fire_at - in->t0) / 1e3,
                               (double)(t->sched_at - in->t0) / 1e3, dead,
                               t->dead_bad_reason, copies, t->fate,
                               t->fate_reason_ok);
}

static const char *fate_name(int fate)
{
        static const char *const names[] = {"none", "FIRING", "FIRED",
                                            "CANCELLED", "DEAD"};
        return fate >= 0 && fate <= TT_FATE_DEAD ? names[fate] : "?";
}

/* A lost task (acknowledged, never seen on its target after the drain
 * and the final read, not cancelled) with its last known place: the
 * tier record its schedule was acknowledged at (raw tasks), its fate row
 * (state, owner, the tier record claimed), and what the verifier saw of
 * it (dead-letter copies; never a copy on its target). */
static void log_lost(const tt_report_in_t *in, size_t i)
{
        const tt_task_t *t = &in->tasks[i];
        tt_log("event=lost idx=%zu id=%s fire_at_s=%.3f sched_at_s=%.3f "
               "acked_at_s=%.3f cat=%d via=%d cancel=%d answer=%d "
               "tier_partition=%d tier_offset=%lld fate=%s fate_owner=%s "
               "fate_src_partition=%d fate_src_offset=%lld verifier=%s "
               "dead=%d",
               i, t->id, (double)(t->fire_at - in->t0) / 1e3,
               (double)(t->sched_at - in->t0) / 1e3,
               (double)(t->acked_at - in->t0) / 1e3, t->cat, t->via,
               t->cancel_kind, t->answer, (int)t->tier_partition,
               (long long)t->tier_offset, fate_name(t->fate),
               t->fate_owner[0] ? t->fate_owner : "-",
               (int)t->fate_src_partition, (long long)t->fate_src_offset,
               atomic_load(&t->dead_copies) ? "dead_letter_only" : "never_seen",
               atomic_load(&t->dead_copies));
}

static void count(const tt_report_in_t *in, counts_t *c, lat_t *ts, lat_t *rx,
                  lat_t *cts, lat_t *crx, lat_t *mts)
{
        const tt_fault_counts_t *f = in->faults;
        int shown = 0;
        for (size_t i = 0; i < in->n; i++) {
                const tt_task_t *t = &in->tasks[i];
                int copies = atomic_load(&t->copies);
                int acked = atomic_load(&t->sched_state) == TT_SCHED_ACKED;
                c->acked += acked;
                c->failed += !acked;
                c->acked_late += acked && t->acked_at > t->fire_at;
                if (t->malformed) {
                        /* Dead-lettered with its reason, never fired. */
                        int dead = atomic_load(&t->dead_copies);
                        c->malformed++;
                        c->mal_dead += dead > 0;
                        c->mal_dups += dead > 1 ? dead - 1 : 0;
                        int destroyed =
                            acked && !dead && c->doomed && c->doomed[i];
                        c->mal_missing += acked && !dead && !destroyed;
                        c->mal_destroyed += destroyed;
                        c->mal_delivered += copies > 0;
                        c->mal_bad_reason += t->dead_bad_reason > 0;
                        if (destroyed)
                                log_destroyed(in, i);
                        else if (acked && !dead && shown++ < 20)
                                tt_log("event=malformed_not_dead_lettered "
                                       "idx=%zu id=%s sched_at_s=%.3f "
                                       "acked_at_s=%.3f kind=%d",
                                       i, t->id,
                                       (double)(t->sched_at - in->t0) / 1e3,
                                       (double)(t->acked_at - in->t0) / 1e3,
                                       t->malformed);
                        continue;
                }
                if (t->poison) {
                        count_poison(in, i, c, &shown);
                        continue;
                }
                c->delivered += copies > 0;
                c->records += copies;
                c->dups += copies > 1 ? copies - 1 : 0;
                if (t->cancel_kind != TT_CANCEL_NONE) {
                        int race = t->cancel_kind != TT_CANCEL_EARLY;
                        c->cancels++;
                        c->c_ok += t->answer == TT_ANS_OK;
                        c->c_late += t->answer == TT_ANS_TOO_LATE;
                        c->c_err += t->answer == TT_ANS_ERROR;
                        c->c_retried += t->first_answer == TT_ANS_ERROR;
                        c->race += race;
                        c->race_ok += race && t->answer == TT_ANS_OK;
                        c->race_late += race && t->answer == TT_ANS_TOO_LATE;
                }
                int cancelled =
                    t->answer == TT_ANS_OK || t->fate == TT_FATE_CANCELLED;
                int undecided = in->fate_rows < 0 &&
                                t->cancel_kind != TT_CANCEL_NONE &&
                                t->answer != TT_ANS_TOO_LATE;
                if (acked && !copies && !cancelled && undecided) {
                        c->undecided++;
                } else if (acked && !copies && !cancelled) {
                        c->lost++;
                        if (shown++ < 20)
                                log_lost(in, i);
                }
                if (t->target == TT_TARGET_COMPACT ||
                    t->target == TT_TARGET_SMALL) {
                        int lost = acked && !copies && !cancelled && !undecided;
                        c->inn++;
                        c->inn_delivered += copies > 0;
                        c->inn_lost += lost;
                        c->mates += t->mate;
                        c->mates_delivered += t->mate && copies;
                        c->mates_lost += t->mate && lost;
                        if (t->mate && copies)
                                mts->v[mts->n++] = t->first_ts - t->fire_at;
                }
                c->fate_dead_innocent += t->fate == TT_FATE_DEAD;
                c->unacked_missing += !acked && !copies && !cancelled;
                c->too_late_missing += t->answer == TT_ANS_TOO_LATE && !copies;
                c->early_ts += t->early_ts > 0;
                c->early_rx += t->early_rx > 0;
                int through = t->answer == TT_ANS_OK && copies
                                  ? through_outage(in, t)
                                  : 0;
                c->through_before += through == 1;
                c->through_gap += through == 2;
                c->unclaimed += t->unclaimed > 0;
                c->unclaimed_cancelled += t->unclaimed == 2;
                c->through_unrecorded += through && t->unclaimed != 2;
                if (t->answer == TT_ANS_OK && copies && !through) {
                        c->cancel_then_delivered++;
                        tt_log("event=cancel_acknowledged_then_delivered "
                               "idx=%zu id=%s fire_at_s=%.3f "
                               "cancel_sent_s=%.3f copies=%d",
                               i, t->id, (double)(t->fire_at - in->t0) / 1e3,
                               (double)(t->cancel_sent_at - in->t0) / 1e3,
                               copies);
                }
                c->fate_cancel_delivered +=
                    t->fate == TT_FATE_CANCELLED && copies;
                c->bad += t->bad_copy > 0;
                c->dead_tasks += atomic_load(&t->dead_copies) > 0;
                c->heavy += t->heavy;
                c->heavy_delivered += t->heavy && copies;
                c->fate_fired += t->fate == TT_FATE_FIRED;
                c->fate_covered += t->fate_covered;
                c->fate_firing += t->fate == TT_FATE_FIRING;
                c->fate_cancelled += t->fate == TT_FATE_CANCELLED;
                c->fate_none += t->fate == TT_FATE_NONE;
                c->fate_dead += t->fate == TT_FATE_DEAD;
                c->fired_no_row += copies && t->fate == TT_FATE_NONE;
                /* FIRED (by a forwarder, or by the audit's fix) but never
                 * seen on the target: counted in LOST too. */
                c->fired_undelivered += !copies && t->fate == TT_FATE_FIRED;
                if (!copies)
                        continue;
                ts->v[ts->n++] = t->first_ts - t->fire_at;
                rx->v[rx->n++] = t->first_rx - t->fire_at;
                if (f->outage_begin && t->fire_at >= f->outage_begin &&
                    t->fire_at <= f->outage_end) {
                        cts->v[cts->n++] = t->first_ts - t->fire_at;
                        crx->v[crx->n++] = t->first_rx - t->fire_at;
                }
        }
}

/* What the harness could not do (never the product's failure): faults
 * not injected by kind, tries and put-offs it needed, the verifier's
 * own trouble. */
static void harness_rows(const tt_report_in_t *in, FILE *out)
{
        const tt_fault_counts_t *f = in->faults;
        char kinds[256] = "";
        size_t len = 0;
        for (int k = 0; k < TT_F_KINDS; k++) {
                if (!f->not_injected[k])
                        continue;
                int w = snprintf(kinds + len, sizeof(kinds) - len, "%s%s=%d",
                                 len ? " " : "", tt_fault_name(k),
                                 f->not_injected[k]);
                if (w < 0 || (size_t)w >= sizeof(kinds) - len)
                        break;
                len += (size_t)w;
        }
        fprintf(out,
                "  %-42s not_injected=%d%s%s%s retried=%d deferred=%d "
                "dead_topic_unread=%d\n",
                "harness: faults", atomic_load(&f->failed), len ? " (" : "",
                kinds, len ? ")" : "", atomic_load(&f->retried), f->deferred,
                f->dead_unread);
        fprintf(out,
                "  %-42s seek_failed=%d seek_retries=%d rereads_skipped=%llu "
                "(a re-read record, by topic/partition/offset, is never a "
                "second copy)\n",
                "harness: verifier", atomic_load(&in->verifier->seek_failed),
                atomic_load(&in->verifier->seek_retries),
                (unsigned long long)in->verifier->rereads);
}

static void stats_rows(const tt_report_in_t *in, FILE *out)
{
        char buf[512] = "";
        size_t len = 0;
        for (int s = 0; s < TT_MAX_SLOTS; s++) {
                double spf;
                long long fired;
                if (!in->fleet->slots[s].starts ||
                    tt_fleet_last_stats(in->fleet, s, &spf, &fired))
                        continue;
                int w = snprintf(buf + len, sizeof(buf) - len,
                                 "%sslot%d=%.3f (fired %lld)", len ? ", " : "",
                                 s, spf, fired);
                if (w < 0 || (size_t)w >= sizeof(buf) - len)
                        break;
                len += (size_t)w;
        }
        fprintf(out, "  %-42s %s\n", "statements per fire (last stop)",
                len ? buf : "-");
}

int tt_report(const tt_report_in_t *in, FILE *out)
{
        const tt_opts_t *o = in->opts;
        const tt_fault_counts_t *f = in->faults;
        counts_t c;
        lat_t ts = {0}, rx = {0}, cts = {0}, crx = {0}, mts = {0};
        char note[320];
        memset(&c, 0, sizeof(c));
        size_t cap = in->n ? in->n : 1;
        ts.v = malloc(cap * sizeof(int64_t));
        rx.v = malloc(cap * sizeof(int64_t));
        cts.v = malloc(cap * sizeof(int64_t));
        crx.v = malloc(cap * sizeof(int64_t));
        mts.v = malloc(cap * sizeof(int64_t));
        if (!ts.v || !rx.v || !cts.v || !crx.v || !mts.v) {
                fprintf(out, "out of memory\n");
                return 1;
        }
        unsigned char *doomed = doomed_marks(in);
        c.doomed = doomed;
        count(in, &c, &ts, &rx, &cts, &crx, &mts);
        free(doomed);
        c.doomed = NULL;
        /* The product's guarantees (docs/torture.md, "Verdict"): any of
         * these fails the run. */
        why_t prod = {.len = 0}, harness = {.len = 0};
        why_add(&prod, c.lost, "lost");
        why_add(&prod, c.early_ts || c.early_rx, "early");
        why_add(&prod, c.cancel_then_delivered, "cancel_then_delivered");
        why_add(&prod, c.bad, "corrupted");
        why_add(&prod, c.dead_tasks, "innocent_dead_lettered");
        /* The re-made dead-letter topic not read from its beginning
         * (verifier_seek_failed): a dead letter not seen may be unread,
         * so a malformed or poison task missing is the harness's. */
        int dead_unverified = atomic_load(&in->verifier->seek_failed) > 0;
        why_add(&prod,
                (!dead_unverified && c.mal_missing) || c.mal_delivered ||
                    c.mal_bad_reason || (o->exactly_once && c.mal_dups),
                "malformed");
        why_add(&prod, c.fate_cancel_delivered, "fate_cancelled_delivered");
        why_add(&prod, in->fate_rows >= 0 && c.fired_no_row,
                "delivered_without_row");
        why_add(&prod, o->exactly_once && c.dups, "duplicates");
        why_add(&prod,
                (!dead_unverified && c.p_missing[0]) || c.p_delivered[0] ||
                    c.p_bad_reason[0] || c.p_fate_bad[0] || c.p_no_error[0] ||
                    (o->exactly_once && c.p_dups[0]),
                "poison");
        why_add(&prod, c.inn_lost, "innocent_lost");
        why_add(&prod, c.fate_dead_innocent, "innocent_dead_row");
        why_add(&prod, c.through_unrecorded, "fired_through_unrecorded");
        int64_t rss_kb = tt_fleet_peak_rss_kb(in->fleet);
        why_add(&prod, rss_kb > TT_RSS_BOUND_KB, "rss");
        /* The CreateTime tier was read (its warning logged once per
         * partition and process). */
        int create_time_seen =
            tt_fleet_log_count(in->fleet, "event=tier_not_log_append_time");
        /* exactly_once: at most one aborted transaction per fault. */
        int faults_n = f->kill9 + f->sigterm + f->mysql + f->mysql_pause +
                       f->mysql_ro + f->clock + f->kafka + f->added +
                       f->removed + f->outage + f->dead_topic;
        int aborts = tt_fleet_log_count(in->fleet, "event=txn_aborted");
        /* Open problem (docs/torture.md): while the dead-letter topic is
         * deleted, each transaction holding a dead letter fails to add
         * the partition (UNKNOWN_TOPIC_OR_PART) and aborts. Counted and
         * shown, not held against the bound until the forwarder holds
         * dead letters while their topic is missing. */
        int dead_gone = tt_fleet_log_count(
            in->fleet, "Failed to add partition(s) to transaction on broker");
        int bounded = aborts - (dead_gone < aborts ? dead_gone : aborts);
        /* A poison record's transaction aborts (the broker refused its
         * batch), and its solo one (which dead-letters it); the next
         * transaction on that partition may abort once for the
         * producer's sequence state. Counted apart, bounded per poison
         * task: more would be an abort loop. */
        static const char *const rec_causes[] = {
            "cause=INVALID_RECORD", "cause=MSG_SIZE_TOO_LARGE",
            "cause=RECORD_LIST_TOO_LARGE", NULL};
        static const char *const prod_causes[] = {
            "cause=OUT_OF_ORDER_SEQUENCE_NUMBER", "cause=UNKNOWN_PRODUCER_ID",
            "cause=INVALID_PRODUCER_EPOCH", NULL};
        int rec_aborts = 0, prod_aborts = 0;
        for (size_t k = 0; rec_causes[k]; k++)
                rec_aborts += tt_fleet_log_count(in->fleet, rec_causes[k]);
        for (size_t k = 0; prod_causes[k]; k++)
                prod_aborts += tt_fleet_log_count(in->fleet, prod_causes[k]);
        int poison_aborts =
            rec_aborts + (prod_aborts < rec_aborts ? prod_aborts : rec_aborts);
        if (poison_aborts > bounded)
                poison_aborts = bounded;
        bounded -= poison_aborts;
        long long claimed_poison =
            c.p_n[TT_POISON_KEYLESS] + c.p_n[TT_POISON_TOO_LARGE];
        why_add(&prod,
                (o->exactly_once && bounded > faults_n) ||
                    rec_aborts > TT_POISON_ABORTS_MAX * claimed_poison,
                "aborts");
        /* The forwarders' own conduct: read the CreateTime tier, never
         * died on their own, exited 0 on SIGTERM (docs/forwarder.md). */
        why_add(&prod, !create_time_seen, "create_time_tier_unread");
        why_add(&prod, f->crashes, "crashes");
        why_add(&prod, f->unclean_terms || in->stop_unclean, "unclean_exit");
        why_add(&prod, in->fate_rows >= 0 && c.fate_firing > 0,
                "firing_after_audit");
        /* The harness's own failures: a planned fault it could not
         * inject after every try, a check it could not make. They never
         * fail the run; they make it incomplete (exit 3). */
        why_add(&harness, atomic_load(&f->failed), "fault_not_injected");
        why_add(&harness, f->dead_unread, "dead_topic_unread");
        why_add(&harness, atomic_load(&in->verifier->seek_failed),
                "verifier_seek_failed");
        why_add(&harness, dead_unverified && (c.mal_missing || c.p_missing[0]),
                "dead_letters_unverified");
        /* exactly_once logs a dead letter on its delivery report, inside a
         * transaction that may still abort (and the delete's window is
         * when they do): a line is no proof the dead letter was
         * committed, so the destroyed ones are not verified either way —
         * the run is incomplete, not excused (at_least_once: acks=all,
         * the line is). */
        long long destroyed = c.mal_destroyed;
        for (int k = 0; k < TT_POISON_KINDS; k++)
                destroyed += c.p_destroyed[k];
        why_add(&harness, o->exactly_once && destroyed > 0,
                "dead_letters_destroyed_unverified");
        why_add(&harness, !in->caught_up, "verifier_not_read_to_end");
        why_add(&harness, !in->audit_ok, "audit_failed");
        why_add(&harness, in->fate_rows < 0, "fate_unread");
        why_add(&harness, c.undecided, "lost_undecided");
        int fail = prod.n > 0;

        fprintf(out,
                "\nkdelay-torture: mode=%s profile=%s seed=%llu tasks=%zu "
                "forwarders=%d window=%llds prefix=%s\n",
                o->mode, o->full ? "full" : "fast", (unsigned long long)o->seed,
                in->n, o->forwarders, (long long)(o->window_ms / 1000),
                in->names->prefix);
        for (size_t i = 0; i < o->fwd_props_cnt; i++)
                fprintf(out, "  forwarders run with -X %s\n", o->fwd_props[i]);
        fprintf(out, "  %-42s %s\n", "figure", "value");
        row(out, "scheduled", (long long)in->n, NULL);
        snprintf(note, sizeof(note),
                 "(failed %lld; acknowledged after fire-at %lld)", c.failed,
                 c.acked_late);
        row(out, "schedule acknowledged", c.acked, note);
        snprintf(note, sizeof(note), "(%lld records)", c.records);
        row(out, "delivered (distinct ids)", c.delivered, note);
        snprintf(note, sizeof(note),
                 "(of %lld cancels; %lld first answered error, retried)",
                 c.cancels, c.c_retried);
        row(out, "cancelled, acknowledged", c.c_ok, note);
        row(out, "cancel too late", c.c_late, NULL);
        row(out, "cancel unresolved (error)", c.c_err, NULL);
        snprintf(note, sizeof(note), "(of %lld racing: %lld ok, %lld too late)",
                 c.race, c.race_ok, c.race_late);
        row(out, "racing cancels", c.race, note);
        row(out, "LOST", c.lost,
            "(acknowledged, neither delivered nor cancelled)");
        if (in->fate_rows < 0)
                row(out, "harness: undecided (fate table unread)", c.undecided,
                    "(undelivered, cancel sent without a definite answer)");
        snprintf(note, sizeof(note), "(by receipt time: %lld)", c.early_rx);
        row(out, "EARLY (record timestamp < fire-at)", c.early_ts, note);
        row(out, "ACKNOWLEDGED-CANCEL-THEN-DELIVERED", c.cancel_then_delivered,
            policy_fire(o) ? "(outside the MySQL fault windows)" : NULL);
        if (policy_fire(o)) {
                snprintf(note, sizeof(note),
                         "(fate_outage_policy=fire: %lld cancelled before a "
                         "MySQL fault window, %lld during it or its "
                         "reconciliation; %d windows)",
                         c.through_before, c.through_gap,
                         in->faults->mysql_wins);
                row(out, "cancelled, then fired through an outage",
                    c.through_before + c.through_gap, note);
                snprintf(note, sizeof(note),
                         "(kdelay_unclaimed rows; %lld recorded as cancelled "
                         "before; fired through an outage after a cancel "
                         "without that record: %lld, must be 0)",
                         c.unclaimed_cancelled, c.through_unrecorded);
                row(out, "fired without a claim", c.unclaimed, note);
        }
        row(out, "DUPLICATES (extra copies by kdelay-id)", c.dups,
            o->exactly_once ? "(must be 0: exactly_once)" : "(allowed)");
        row(out, "corrupted copies (target/id/fire-at)", c.bad,
            "(headers included: a heavy task's 500 KB arrive whole)");
        snprintf(note, sizeof(note),
                 "(delivered %lld; %d KB of headers each, forwarders at "
                 "max_held_bytes=%lld MB)",
                 c.heavy_delivered, TT_BALLAST_BYTES / 1024,
                 TT_MAX_HELD_BYTES >> 20);
        row(out, "heavy tasks", c.heavy, note);
        snprintf(note, sizeof(note),
                 "(largest VmHWM before a stop; bound %lld MB)",
                 TT_RSS_BOUND_KB >> 10);
        row(out, "forwarder peak RSS, MB", rss_kb < 0 ? -1 : rss_kb >> 10,
            note);
        snprintf(note, sizeof(note),
                 "(tier.%s made with CreateTime: forwarder warnings, must be "
                 "> 0)",
                 TT_CREATE_TIME_TIER);
        row(out, "CreateTime tier read", create_time_seen, note);
        snprintf(note, sizeof(note),
                 "(dead-lettered %lld, missing %lld, delivered %lld, wrong "
                 "reason %lld, extra copies %lld%s; gone with the deleted "
                 "dead topic %lld)",
                 c.mal_dead, c.mal_missing, c.mal_delivered, c.mal_bad_reason,
                 c.mal_dups, o->exactly_once ? ": must be 0" : "",
                 c.mal_destroyed);
        row(out, "malformed tasks", c.malformed, note);
        snprintf(note, sizeof(note),
                 "(keyless %lld to the compacted target, too-large %lld, "
                 "%s %lld; dead-lettered with the reason %lld)",
                 c.p_n[TT_POISON_KEYLESS], c.p_n[TT_POISON_TOO_LARGE],
                 TT_INTERNAL_TOPIC, c.p_n[TT_POISON_INTERNAL], c.p_dead[0]);
        row(out, "poison tasks", c.p_n[0], note);
        static const char *const kind_names[TT_POISON_KINDS] = {
            NULL, "poison keyless: target-refused",
            "poison too large: too-large",
            "poison __consumer_offsets: forbidden"};
        for (int k = TT_POISON_KEYLESS; k < TT_POISON_KINDS; k++) {
                snprintf(note, sizeof(note),
                         "of %lld (missing %lld, delivered %lld, wrong "
                         "reason %lld, fate wrong %lld, no error header "
                         "%lld, extra copies %lld%s; gone with the deleted "
                         "dead topic %lld)",
                         c.p_n[k], c.p_missing[k], c.p_delivered[k],
                         c.p_bad_reason[k], c.p_fate_bad[k], c.p_no_error[k],
                         c.p_dups[k], o->exactly_once ? ": must be 0" : "",
                         c.p_destroyed[k]);
                row(out, kind_names[k], c.p_dead[k], note);
        }
        snprintf(note, sizeof(note),
                 "(of %lld innocent tasks of the compacted and small "
                 "targets, %lld delivered; must be 0)",
                 c.inn, c.inn_delivered);
        row(out, "innocent tasks lost (poisoned targets)", c.inn_lost, note);
        snprintf(note, sizeof(note),
                 "(of %lld due with a poison task on its target, %lld "
                 "delivered; must be 0)",
                 c.mates, c.mates_delivered);
        row(out, "innocent batch-mates lost", c.mates_lost, note);
        row_lat(out, "batch-mates' lateness, record ts", &mts);
        snprintf(note, sizeof(note),
                 "batch_refused=%d txn_solo=%d txn_solo_aborted=%d "
                 "fire_failed=%d solo_producer_started=%d",
                 tt_fleet_log_count(in->fleet, "event=batch_refused"),
                 tt_fleet_log_count(in->fleet, "event=txn_solo "),
                 tt_fleet_log_count(in->fleet, "event=txn_solo_aborted"),
                 tt_fleet_log_count(in->fleet, "event=fire_failed"),
                 tt_fleet_log_count(in->fleet, "event=solo_producer_started"));
        fprintf(out, "  %-42s %s\n", "forwarder isolation (log lines)", note);
        snprintf(note, sizeof(note),
                 "(%d faults: %.2f per fault%s; %d on a dead letter while "
                 "the dead topic was gone: open; %d for poison: %d record, "
                 "%d producer state; record at most %d per claimed poison)",
                 faults_n, faults_n ? (double)bounded / faults_n : 0.0,
                 o->exactly_once ? "; at most 1" : "",
                 aborts - bounded - poison_aborts, poison_aborts, rec_aborts,
                 prod_aborts, TT_POISON_ABORTS_MAX);
        row(out, "transactions aborted", aborts, note);
        row(out, "not delivered, schedule unacknowledged", c.unacked_missing,
            NULL);
        row_lat(out, "lateness, record ts p50/p99/p999/max", &ts);
        row_lat(out, "lateness, receipt p50/p99/p999/max", &rx);
        row_lat(out, "catch-up lateness, record ts", &cts);
        row_lat(out, "catch-up lateness, receipt", &crx);
        snprintf(note, sizeof(note),
                 "kill9=%d sigterm=%d mysql=%d mysql_pause=%d mysql_ro=%d "
                 "clock=%d kafka=%d add=%d remove=%d outage=%d dead_topic=%d",
                 f->kill9, f->sigterm, f->mysql, f->mysql_pause, f->mysql_ro,
                 f->clock, f->kafka, f->added, f->removed, f->outage,
                 f->dead_topic);
        fprintf(out, "  %-42s %s\n", "faults injected", note);
        snprintf(note, sizeof(note),
                 "skipped=%d crashes=%d unclean_sigterm=%d "
                 "unclean_final_stop=%d stuck_sigkilled=%d "
                 "sigterm_exit1_kafka_down=%d",
                 f->skipped, f->crashes, f->unclean_terms, in->stop_unclean,
                 in->fleet->stuck, f->terms_kafka_down);
        fprintf(out, "  %-42s %s\n", "fault notes", note);
        harness_rows(in, out);
        snprintf(note, sizeof(note),
                 "%.1f s (%s; stops after %lld s without a new arrival, at "
                 "most %lld s after the last due time)",
                 (double)in->drain_ms / 1e3, in->drain_why,
                 (long long)(o->drain_idle_ms / 1000),
                 (long long)(o->drain_cap_ms / 1000));
        fprintf(out, "  %-42s %s\n", "drain", note);
        if (f->outage_begin)
                fprintf(out, "  %-42s %.3f .. %.3f s after T0\n",
                        "outage (all forwarders stopped)",
                        (double)(f->outage_begin - in->t0) / 1e3,
                        (double)(f->outage_end - in->t0) / 1e3);
        snprintf(note, sizeof(note), "(dead-letter records %llu, unknown %llu)",
                 (unsigned long long)in->verifier->dead_records,
                 (unsigned long long)in->verifier->unknown);
        row(out, "dead-lettered tasks", c.dead_tasks, note);
        if (in->fate_rows >= 0)
                snprintf(note, sizeof(note),
                         "FIRED=%lld (FIRING covered by a run %lld) "
                         "FIRING=%lld CANCELLED=%lld DEAD=%lld "
                         "none=%lld (poison apart); delivered without row "
                         "%lld; FIRED, not delivered %lld",
                         c.fate_fired, c.fate_covered, c.fate_firing,
                         c.fate_cancelled, c.fate_dead, c.fate_none,
                         c.fired_no_row, c.fired_undelivered);
        else
                snprintf(note, sizeof(note), "could not be read");
        fprintf(out, "  %-42s %s\n", "fate table", note);
        row(out, "fate CANCELLED but delivered", c.fate_cancel_delivered, NULL);
        if (in->audit_ok)
                snprintf(note, sizeof(note),
                         "(goal 0; audit found %ld: %ld delivered, fixed; "
                         "%ld pending, %ld unknown)",
                         in->audit_firing, in->audit_fixed, in->audit_pending,
                         in->audit_unknown);
        else
                snprintf(note, sizeof(note), "(kdelayctl audit failed)");
        row(out, "FIRING rows after audit --fix",
            in->fate_rows >= 0 ? c.fate_firing : -1, note);
        fprintf(out, "  %-42s %s\n", "verifier read to the end",
                in->caught_up ? "yes" : "NO (timed out)");
        stats_rows(in, out);
        fprintf(out, "  %-42s %.1f s\n", "wall time",
                (double)in->wall_ms / 1e3);
        fprintf(out, "  %-42s %s\n", "run dir (logs)", in->names->run_dir);
        if (in->interrupted)
                fprintf(out, "RESULT: FAIL (interrupted: the figures are "
                             "partial)\n");
        else if (fail)
                fprintf(out, "RESULT: FAIL (product: %s%s%s)\n", prod.buf,
                        harness.n ? "; harness also: " : "", harness.buf);
        else if (harness.n)
                fprintf(out,
                        "RESULT: PASS, HARNESS INCOMPLETE (%s: no guarantee "
                        "broken; not all it planned was done)\n",
                        harness.buf);
        else
                fprintf(out, "RESULT: PASS\n");
        fflush(out);
        free(ts.v);
        free(rx.v);
        free(cts.v);
        free(crx.v);
        free(mts.v);
        return fail || in->interrupted ? 1 : harness.n ? TT_EXIT_HARNESS : 0;
}

int tt_report_dump(const tt_report_in_t *in, const char *path)
{
        FILE *fp = fopen(path, "w");
        if (!fp)
                return -1;
        fprintf(fp, "idx,id,cat,via,fire_at,sched_at,acked_at,state,"
                    "cancel,cancel_at,cancel_sent,answer,copies,first_ts,"
                    "first_rx,early,dead,fate,target,malformed,poison,"
                    "mate,tier_partition,tier_offset,fate_owner,"
                    "fate_src_partition,fate_src_offset\n");
        for (size_t i = 0; i < in->n; i++) {
                const tt_task_t *t = &in->tasks[i];
                int64_t z = in->t0;
                int copies = atomic_load(&t->copies);
                fprintf(
                    fp,
                    "%zu,%s,%d,%d,%lld,%lld,%lld,%d,%d,%lld,%lld,%d,%d,"
                    "%lld,%lld,%d,%d,%d,%d,%d,%d,%d,%d,%lld,%s,%d,%lld\n",
                    i, t->id, t->cat, t->via, (long long)(t->fire_at - z),
                    (long long)(t->sched_at - z),
                    (long long)(t->acked_at ? t->acked_at - z : -1),
                    atomic_load(&t->sched_state), t->cancel_kind,
                    (long long)(t->cancel_kind ? t->cancel_at - z : -1),
                    (long long)(t->cancel_sent_at ? t->cancel_sent_at - z : -1),
                    t->answer, copies,
                    (long long)(copies ? t->first_ts - z : -1),
                    (long long)(copies ? t->first_rx - z : -1),
                    t->early_ts + t->early_rx, atomic_load(&t->dead_copies),
                    t->fate, t->target, t->malformed, t->poison, t->mate,
                    (int)t->tier_partition, (long long)t->tier_offset,
                    t->fate_owner, (int)t->fate_src_partition,
                    (long long)t->fate_src_offset);
        }
        return fclose(fp) ? -1 : 0;
}
