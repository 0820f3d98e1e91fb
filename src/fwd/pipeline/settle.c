/* SPDX-License-Identifier: Apache-2.0 */
/* Settle stage (kd_settle.h): owns f->settle, the FIRED marks and cancel
 * due times waiting for the fate store, and the end of every task. */
#include "kd_pipeline_state.h"
#include "kd_settle.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "core/kd_dlist.h"
#include "kd_held.h"
#include "kd_intake.h"
#include "kd_lifecycle.h"
#include "kd_log.h"
#include "kd_runs.h"
#include "kd_util.h"
#include "producer/kd_loop_pump.h"
#include "store/kd_reconcile.h"
#include "store/kd_store.h"

/* One fire made without a claim, kept until applied (f->settle->uf). */
typedef struct kd_ufire {
        char *id; /* owned */
        int64_t fire_at_ms, fired_at_ms;
        kd_task_t *task; /* borrowed: its task, waiting for this apply to be
                            settled (kd_settle_fired_held); NULL = none */
} kd_ufire_t;

/* One run of delivered claims taken from the tracker, waiting to be sent
 * (f->settle->rq): every seq lo..hi of generation prefix. */
typedef struct kd_run {
        char prefix[KD_RUNS_PREFIX_MAX];
        uint64_t lo, hi;
} kd_run_t;

/* Runs taken from the tracker at a time. */
#define KD_RUNS_TAKE 64

/* FIRED marks are batched over this long. */
#define KD_MARK_INTERVAL_MS 250
/* Backoffs a stop's kd_settle_drain waits out at most. */
#define KD_SETTLE_DRAIN_RETRIES 5

/* t, waiting for its fire's apply, goes before it: its fire stays kept
 * (applied all the same), without it. */
static void uf_unlink(kd_fwd_t *f, kd_task_t *t)
{
        if (!t->mem_fire)
                return;
        t->mem_fire = 0;
        if (t->req) /* in a request out: kd_store_req_detach */
                return;
        int at_slot = t->req_slot < f->settle->uf_len &&
                      f->settle->uf[t->req_slot].task == t;
        assert(at_slot); /* a kept fire's task is where it says */
        if (at_slot)     /* never a write out of the array */
                f->settle->uf[t->req_slot].task = NULL;
}

void kd_settle_release(kd_fwd_t *f, kd_task_t *t)
{
        uf_unlink(f, t);
        /* A lease renewal, or its fire's apply, may be out for it. */
        kd_store_req_detach(t);
        int orphan = kd_task_detach(f, t) != 0; /* in flight */
        kd_part_t *p = t->part;
        if (p) {
                KD_DLIST_UNLINK(p->tasks, t);
                t->part = NULL;
        }
        if (orphan)
                return; /* its report releases it again */
        kd_timer_disarm(&f->timers, &t->timer); /* never freed armed */
        kd_held_remove(f, t);
        kd_task_free(t);
}

void kd_settle_done(kd_fwd_t *f, kd_task_t *t)
{
        int moved = 0;
        if (t->part)
                moved = kd_offtrack_done(&t->part->track, t->rec.offset) == 0;
        kd_settle_release(f, t);
        if (moved)
                kd_intake_room(f); /* the commit point may have moved */
}

static void flush_cb(kd_timer_t *tm, void *arg)
{
        (void)tm;
        kd_settle_flush(arg);
}

/* Mark requests out at once: the store runs them one by one anyway; the
 * rest waits in its queue, where it costs less than in the worker's. */
#define KD_SETTLE_PIPELINE 2

/* Ids and runs waiting in every queue. */
static size_t queued(const kd_fwd_settle_t *s)
{
        size_t n = s->fired.len + s->seen.len + s->rq_len;
        for (int i = 0; i < KD_SETTLE_DEAD_REASONS; i++)
                n += s->dead[i].len;
        return n;
}

/* Flushes when a batch is full, else within KD_MARK_INTERVAL_MS; with
 * the pipeline full, when a request is back. */
static void arm(kd_fwd_t *f)
{
        kd_fwd_settle_t *s = f->settle;
        if (s->inflight >= KD_SETTLE_PIPELINE) {
                kd_timer_disarm(&f->timers, &s->flush);
                return;
        }
        int64_t at = kd_fwd_mono_ms(f) + KD_MARK_INTERVAL_MS;
        if (queued(s) >= (size_t)f->conf->fwd_claim_batch)
                at = kd_fwd_mono_ms(f);
        if (at < kd_store_retry_mono(f))
                at = kd_store_retry_mono(f);
        if (kd_timer_arm_by(&f->timers, &s->flush, KD_CLOCK_MONO, at, flush_cb,
                            f))
                kd_fwd_oom(f, "settle_timer");
}

/* Appends a fire made without a claim (a copy of id), with the task
 * waiting for its apply (or NULL); -1 when out of memory. */
static int uf_push(kd_fwd_settle_t *s, const char *id, int64_t fire_at_ms,
                   int64_t fired_at_ms, kd_task_t *task)
{
        if (s->uf_len == s->uf_cap) {
                size_t cap = s->uf_cap ? s->uf_cap * 2 : 64;
                kd_ufire_t *v = realloc(s->uf, cap * sizeof(*v));
                if (!v)
                        return -1;
                s->uf = v;
                s->uf_cap = cap;
        }
        char *copy = strdup(id);
        if (!copy)
                return -1;
        if (task)
                task->req_slot = s->uf_len;
        s->uf[s->uf_len++] = (kd_ufire_t){copy, fire_at_ms, fired_at_ms, task};
        return 0;
}

kd_settle_mark_t kd_settle_mark(const kd_task_t *t, kd_task_state_t as)
{
        kd_settle_mark_t by =
            t->claim == KD_CLAIM_UNCLAIMED ? KD_MARK_JOURNAL : KD_MARK_ROW;
        switch (as) {
        case KD_TASK_FIRING:
                return by;
        case KD_TASK_DEAD:
                return t->fire_failed ? by : KD_MARK_NONE;
        case KD_TASK_JOURNAL:
                return KD_MARK_JOURNAL;
        default:
                return KD_MARK_NONE;
        }
}

/* Room for n more runs in s->rq; -1 when out of memory. */
static int rq_room(kd_fwd_settle_t *s, size_t n)
{
        if (s->rq_len + n <= s->rq_cap)
                return 0;
        size_t cap = s->rq_cap ? s->rq_cap : 16;
        while (cap < s->rq_len + n)
                cap *= 2;
        kd_run_t *v = realloc(s->rq, cap * sizeof(*v));
        if (!v)
                return -1;
        s->rq = v;
        s->rq_cap = cap;
        return 0;
}

/* The n runs of prefix will never be recorded (out of memory): their
 * rows stay FIRING, which audit reports, as a lost FIRED mark. */
static void runs_lost(kd_fwd_t *f, const char *prefix, const uint64_t *lo,
                      const uint64_t *hi, size_t n, const char *why)
{
        char q[KD_LOG_QUOTED_MAX(KD_RUNS_PREFIX_MAX)];
        for (size_t i = 0; i < n; i++) {
                kd_metric_add(&f->metrics, KD_M_MARKS_LOST, hi[i] - lo[i] + 1);
                kd_log(f->conf, KDELAY_LOG_ERROR,
                       "event=fired_runs_lost prefix=%s lo=%llu hi=%llu "
                       "why=%s",
                       kd_log_quote(prefix, q, sizeof(q)),
                       (unsigned long long)lo[i], (unsigned long long)hi[i],
                       why);
        }
}

/* Appends the n runs of prefix to s->rq (room made by rq_room). */
static void rq_append(kd_fwd_settle_t *s, const char *prefix,
                      const uint64_t *lo, const uint64_t *hi, size_t n)
{
        for (size_t i = 0; i < n; i++) {
                kd_run_t *r = &s->rq[s->rq_len++];
                kd_strlcpy(r->prefix, prefix, sizeof(r->prefix));
                r->lo = lo[i];
                r->hi = hi[i];
        }
}

/* Every run the tracker holds into s->rq, its OPEN seqs parked: a new
 * generation or a stop. */
static void runs_drop(kd_fwd_t *f)
{
        kd_fwd_settle_t *s = f->settle;
        uint64_t lo[KD_RUNS_TAKE], hi[KD_RUNS_TAKE], parked = 0;
        const char *prefix = kd_runs_prefix(s->runs);
        size_t n;
        do {
                n = kd_runs_drop(s->runs, lo, hi, KD_RUNS_TAKE, &parked);
                if (n && rq_room(s, n))
                        runs_lost(f, prefix, lo, hi, n, "out_of_memory");
                else
                        rq_append(s, prefix, lo, hi, n);
        } while (n == KD_RUNS_TAKE);
        kd_metric_add(&f->metrics, KD_M_RUNS_PARKED, parked);
}

/* At a flush: the runs the tracker lets go now into s->rq. Out of memory
 * for them, none is taken: the tracker keeps them for the next flush. */
static void runs_take(kd_fwd_t *f)
{
        kd_fwd_settle_t *s = f->settle;
        if (!s->runs)
                return;
        uint64_t lo[KD_RUNS_TAKE], hi[KD_RUNS_TAKE], parked = 0;
        int64_t now = kd_fwd_mono_ms(f);
        size_t n = KD_RUNS_TAKE;
        while (n == KD_RUNS_TAKE && rq_room(s, KD_RUNS_TAKE) == 0) {
                n = kd_runs_take(s->runs, now, lo, hi, KD_RUNS_TAKE, &parked);
                rq_append(s, kd_runs_prefix(s->runs), lo, hi, n);
        }
        kd_metric_add(&f->metrics, KD_M_RUNS_PARKED, parked);
}

/* How long a claimed seq may stay unfinished before it is parked: 1 s
 * past the claim's lead (claim_ahead) and, in exactly_once, the longest
 * wait for the commit its fire rides in, with half a second to spare
 * (a transaction_interval of 2 s parked 2,999 of 3,000 seqs of a
 * catch-up at a flat 1 s). */
static int64_t run_park_ms(const kdelay_conf_t *conf)
{
        int64_t ms = conf->fwd_claim_ahead_ms + 500;
        if (conf->fwd_delivery == KD_DELIVERY_EXACTLY_ONCE)
                ms += conf->fwd_txn_interval_ms;
        return ms > KD_RUN_PARK_MS ? ms : KD_RUN_PARK_MS;
}

/* auto keeps per-task marks without a claim lease (claim_lease=0): a run
 * records a delivery up to the park time after it, a mark within a
 * flush, and without a lease a second copy takes a FIRING row over after
 * foreign_claim_wait alone (review: in exactly_once, a duplicate). */
int kd_settle_runs_on(const kd_fwd_t *f)
{
        int marks = f->conf->fwd_fate_marks;
        return marks == KD_FATE_MARKS_RUNS ||
               (marks == KD_FATE_MARKS_AUTO &&
                f->settle->schema >= KD_FATE_LEAN_SCHEMA &&
                f->conf->fwd_claim_lease_ms > 0);
}

void kd_settle_schema_seen(kd_fwd_t *f, int version)
{
        kd_fwd_settle_t *s = f->settle;
        if (version <= 0 || version == s->schema)
                return;
        int was = kd_settle_runs_on(f);
        s->schema = version;
        if (was || !kd_settle_runs_on(f))
                return; /* no way back: a schema never goes down */
        kd_log(f->conf, KDELAY_LOG_NOTICE,
               "event=fate_marks_switch from=rows to=runs schema=%d "
               "why=\"forwarder.fate_marks=auto and the schema reached %d "
               "(lean-fate): deliveries are recorded as runs\"",
               version, KD_FATE_LEAN_SCHEMA);
        /* The generation's seqs from the next on go into runs; those
         * given before are an earlier generation's to the tracker, so
         * each of their delivered tasks takes its own FIRED mark. Before
         * the first generation, its start makes the tracker. */
        const kd_fwd_claim_t *c = f->claim;
        size_t len = strlen(c->prefix);
        if (c->generation == 0 || len < 2)
                return;
        char prefix[sizeof(c->prefix)];
        kd_strlcpy(prefix, c->prefix, sizeof(prefix));
        prefix[len - 1] = '\0'; /* the tokens' prefix without its ':' */
        kd_settle_run_generation(f, prefix, c->seq);
}

void kd_settle_run_generation(kd_fwd_t *f, const char *prefix,
                              uint64_t last_seq)
{
        kd_fwd_settle_t *s = f->settle;
        if (!kd_settle_runs_on(f) || s->runs_off)
                return;
        char q[KD_LOG_QUOTED_MAX(KD_RUNS_PREFIX_MAX)];
        if (s->runs) {
                char copy[KD_RUNS_PREFIX_MAX]; /* prefix may be the tracker's */
                kd_strlcpy(copy, prefix, sizeof(copy));
                runs_drop(f);
                if (kd_runs_restart(s->runs, copy, last_seq) == 0) {
                        /* Out now, before the new generation's claims: a
                         * copy read again (a rewind) finds its delivered
                         * row covered, not its own to take over. */
                        kd_settle_flush(f);
                        return;
                }
                kd_runs_free(s->runs);
                s->runs = NULL;
        } else if ((s->runs = kd_runs_new(prefix, last_seq))) {
                kd_runs_set_park(s->runs, run_park_ms(f->conf));
                return;
        }
        /* Marks per task from now on (safe: today's way). */
        s->runs_off = 1;
        kd_log(f->conf, KDELAY_LOG_ERROR,
               "event=out_of_memory what=run_tracker prefix=%s "
               "action=fired_marks",
               kd_log_quote(prefix, q, sizeof(q)));
}

int kd_settle_run_assign(kd_fwd_t *f, uint64_t seq)
{
        kd_fwd_settle_t *s = f->settle;
        return s->runs ? kd_runs_assign(s->runs, seq, kd_fwd_mono_ms(f)) : 0;
}

void kd_settle_run_finished(kd_fwd_t *f, uint64_t seq)
{
        kd_fwd_settle_t *s = f->settle;
        if (!s->runs || !seq)
                return;
        kd_runs_done(s->runs, seq); /* owning no row: nothing to mark */
        arm(f);
}

void kd_settle_runs_gauges(kd_fwd_t *f)
{
        const kd_runs_t *r = f->settle->runs;
        kd_metric_set(&f->metrics, KD_M_RUNS_WINDOW,
                      r ? (int64_t)kd_runs_waiting(r) : 0);
        kd_metric_set(&f->metrics, KD_M_RUNS_WINDOW_BYTES,
                      r ? (int64_t)kd_runs_bytes(r) : 0);
}

void kd_settle_delivered(kd_fwd_t *f, kd_task_t *t)
{
        /* A task without a claim: its journal record (JOURNAL) stands for
         * its FIRED or DEAD mark. */
        int fired = t->state == KD_TASK_FIRING ||
                    (t->state == KD_TASK_JOURNAL && !t->fire_failed);
        kd_settle_mark_t mark =
            kd_settle_mark(t, fired ? KD_TASK_FIRING : t->state);
        if (fired)
                kd_settle_fired(f, t->rec.id, t->late_ms,
                                mark == KD_MARK_JOURNAL, t->seq);
        else if (mark == KD_MARK_ROW)
                kd_settle_dead(f, t->rec.id, t->dead_reason, t->seq);
        kd_settle_done(f, t);
}

/* A fire delivered late_ms after its fire time, counted. */
static void count_fired(kd_fwd_t *f, int64_t late_ms, int unclaimed)
{
        kd_metric_inc(&f->metrics, KD_M_FIRED);
        kd_metric_max(&f->metrics, KD_M_LATE_MAX, late_ms);
        kd_metric_observe(&f->metrics, KD_M_LATE, late_ms);
        if (unclaimed)
                kd_metric_inc(&f->metrics, KD_M_FIRED_UNCLAIMED);
}

void kd_settle_fired(kd_fwd_t *f, const char *id, int64_t late_ms,
                     int unclaimed, uint64_t seq)
{
        count_fired(f, late_ms, unclaimed);
        /* Delivered: a run covers its token's row, unless its seq was
         * parked (then its own FIRED mark, below). */
        kd_runs_cover_t cover = KD_RUNS_PARKED;
        if (f->settle->runs && seq)
                cover = kd_runs_done(f->settle->runs, seq);
        if (unclaimed) { /* its journal record stands for the mark */
                int64_t now = kd_fwd_wall_ms(f);
                if (uf_push(f->settle, id, now - late_ms, now, NULL)) {
                        /* Its journal record stays the only one. */
                        char q[KD_LOG_QUOTED_MAX(KDELAY_ID_MAX)];
                        kd_log(f->conf, KDELAY_LOG_ERROR,
                               "event=out_of_memory what=unclaimed_fire "
                               "id=%s action=journal_only",
                               kd_log_quote(id, q, sizeof(q)));
                }
                return;
        }
        if (cover == KD_RUNS_RUN) {
                arm(f); /* the run's take */
                return;
        }
        if (kd_idq_push(&f->settle->fired, id, 0)) {
                /* The row stays FIRING: still correct (a cancel answers
                 * "too late"), only status shows FIRING. Counted. */
                char q[KD_LOG_QUOTED_MAX(KDELAY_ID_MAX)];
                kd_metric_inc(&f->metrics, KD_M_MARKS_LOST);
                kd_log(f->conf, KDELAY_LOG_ERROR,
                       "event=out_of_memory what=fired_mark id=%s",
                       kd_log_quote(id, q, sizeof(q)));
                return;
        }
        arm(f);
}

int kd_settle_fired_held(kd_fwd_t *f, kd_task_t *t)
{
        if (!t->part) {
                /* Its partition revoked while its fire was out: no offset
                 * to hold (the next owner reads it again); its fire is
                 * kept and applied all the same, as on_record_failed does
                 * for a record of delivery that failed after a revoke. */
                kd_settle_fired(f, t->rec.id, t->late_ms, 1, t->seq);
                kd_settle_release(f, t);
                return 0;
        }
        int64_t now = kd_fwd_wall_ms(f);
        kd_store_req_detach(t); /* none out for it: no claim, no lease */
        if (uf_push(f->settle, t->rec.id, now - t->late_ms, now, t))
                return -1;
        count_fired(f, t->late_ms, 1);
        kd_settle_run_finished(f, t->seq); /* delivered */
        kd_task_detach(f, t); /* nowhere: not a place (kd_task.h) */
        t->mem_fire = 1;
        /* In memory for as long as MySQL is away, as a held task waiting
         * for its claim is: it counts in the held set, which pauses the
         * partitions once full. */
        kd_held_add(f, t);
        return 0;
}

const char *const kd_settle_dead_reasons[KD_SETTLE_DEAD_REASONS] = {
    "target-unavailable", "too-large", "target-refused"};

int kd_settle_dead_index(const char *reason)
{
        for (int i = 0; i < KD_SETTLE_DEAD_REASONS; i++)
                if (reason && !strcmp(reason, kd_settle_dead_reasons[i]))
                        return i;
        return -1;
}

void kd_settle_dead(kd_fwd_t *f, const char *id, const char *reason,
                    uint64_t seq)
{
        int i = kd_settle_dead_index(reason);
        char q[KD_LOG_QUOTED_MAX(KDELAY_ID_MAX)];
        /* The seq rides with the mark: finished once the mark is in. A
         * lost mark never finishes it (parked: its row uncovered). */
        if (i < 0 || kd_idq_push(&f->settle->dead[i], id, (int64_t)seq)) {
                /* The row stays FIRING: a cancel answers "too late", which
                 * stays true (never delivered, never to be); audit reports
                 * it. Counted. */
                kd_metric_inc(&f->metrics, KD_M_MARKS_LOST);
                kd_log(f->conf, KDELAY_LOG_ERROR,
                       "event=dead_mark_lost id=%s reason=%s why=%s",
                       kd_log_quote(id, q, sizeof(q)), reason ? reason : "-",
                       i < 0 ? "unknown_reason" : "out_of_memory");
                return;
        }
        arm(f);
}

void kd_settle_note_cancelled(kd_fwd_t *f, const char *id, int64_t fire_at)
{
        /* Out of memory: gc keeps the row longer, which is safe. */
        if (kd_idq_push(&f->settle->seen, id, fire_at) == 0)
                arm(f);
}

/* A MARK_RUNS request is back: counted, or its runs to the front of
 * s->rq again (sent after the store's backoff; INSERT IGNORE makes a
 * resend after a lost answer harmless). */
static void runs_flushed(kd_fwd_t *f, kd_fw_req_t *fw)
{
        kd_fwd_settle_t *s = f->settle;
        if (!fw->err) {
                kd_metric_add(&f->metrics, KD_M_FIRED_RUNS, fw->n);
                for (size_t i = 0; i < fw->n; i++)
                        kd_metric_add(&f->metrics, KD_M_FIRED_RUN_SEQS,
                                      fw->hi[i] - fw->lo[i] + 1);
                return;
        }
        /* Refused as invalid, they would be refused again for ever (and
         * hold every statement behind them): a bug, logged and counted. */
        if (fw->err == KDELAY_ERR_INVALID_ARG) {
                runs_lost(f, fw->prefix, fw->lo, fw->hi, fw->n, "refused");
                return;
        }
        if (rq_room(s, fw->n)) {
                runs_lost(f, fw->prefix, fw->lo, fw->hi, fw->n,
                          "out_of_memory");
                return;
        }
        memmove(s->rq + fw->n, s->rq, s->rq_len * sizeof(*s->rq));
        for (size_t i = 0; i < fw->n; i++) {
                kd_run_t *r = &s->rq[i];
                kd_strlcpy(r->prefix, fw->prefix, sizeof(r->prefix));
                r->lo = fw->lo[i];
                r->hi = fw->hi[i];
        }
        s->rq_len += fw->n;
}

/* 1 while flushes must go on though nothing is queued: seqs wait in the
 * tracker (DONE ones behind a young OPEN one need a later take). */
static int runs_waiting(const kd_fwd_settle_t *s)
{
        return s->runs && kd_runs_waiting(s->runs) > 0;
}

static void flushed(kd_fwd_t *f, kd_store_req_t *r)
{
        kd_fwd_settle_t *s = f->settle;
        kd_fw_req_t *fw = &r->fw;
        s->inflight--;
        if (fw->op == KD_FW_MARK_RUNS) {
                runs_flushed(f, fw);
        } else if (fw->op == KD_FW_MARK_DEAD && !fw->err) {
                /* The DEAD marks are in, and the store runs requests in
                 * order: a run taken from now on lands after them. */
                for (size_t i = 0; i < fw->n; i++)
                        kd_settle_run_finished(f, (uint64_t)fw->vals[i]);
        } else if (fw->err) {
                /* Queued again, to be sent after the store's backoff. */
                kd_idq_t *q = fw->op == KD_FW_MARK_FIRED ? &s->fired
                              : fw->op == KD_FW_NOTE_CANCELLED
                                  ? &s->seen
                                  : &s->dead[kd_settle_dead_index(fw->reason)];
                for (size_t i = 0; i < fw->n; i++) {
                        if (kd_idq_give(q, fw->ids[i], fw->vals[i]) == 0)
                                fw->ids[i] = NULL;
                        else if (fw->op != KD_FW_NOTE_CANCELLED)
                                kd_metric_inc(&f->metrics, KD_M_MARKS_LOST);
                }
        }
        kd_store_req_done(f, r);
        if (queued(s) > 0 || runs_waiting(s))
                arm(f);
}

/* Sends q in batches of claim_batch ids, one statement each, while the
 * store takes them (MARK_DEAD: with reason, static). 1 when all of q is
 * out. */
static int idq_flush(kd_fwd_t *f, kd_idq_t *q, kd_fw_op_t op,
                     const char *reason)
{
        kd_fwd_settle_t *s = f->settle;
        while (q->len > 0 && s->inflight < KD_SETTLE_PIPELINE &&
               kd_store_ready(f)) {
                size_t n = q->len;
                if (n > (size_t)f->conf->fwd_claim_batch)
                        n = (size_t)f->conf->fwd_claim_batch;
                kd_store_req_t *r = kd_store_req_new(f, op, n);
                if (!r) {
                        kd_store_failed(f, "mark", "out of memory");
                        return 0;
                }
                kd_idq_take(q, n, r->fw.ids, r->fw.vals);
                r->fw.reason = reason;
                for (size_t i = 0; i < n; i++)
                        r->fw.lens[i] = strlen(r->fw.ids[i]);
                s->inflight++;
                kd_store_submit(f, r, flushed);
        }
        return q->len == 0;
}

/* Sends s->rq, one statement per request of the leading runs of one
 * prefix (ascending: runs put back after a failure may not be), at most
 * claim_batch, while the store takes them. 1 when all of it is out. */
static int runs_flush(kd_fwd_t *f)
{
        kd_fwd_settle_t *s = f->settle;
        while (s->rq_len > 0 && s->inflight < KD_SETTLE_PIPELINE &&
               kd_store_ready(f)) {
                size_t n = 1;
                while (n < s->rq_len && n < (size_t)f->conf->fwd_claim_batch &&
                       !strcmp(s->rq[n].prefix, s->rq[0].prefix) &&
                       s->rq[n].lo > s->rq[n - 1].hi)
                        n++;
                kd_store_req_t *r = kd_store_req_new(f, KD_FW_MARK_RUNS, n);
                if (!r) {
                        kd_store_failed(f, "mark", "out of memory");
                        return 0;
                }
                kd_strlcpy(r->fw.prefix, s->rq[0].prefix, sizeof(r->fw.prefix));
                for (size_t i = 0; i < n; i++) {
                        r->fw.lo[i] = s->rq[i].lo;
                        r->fw.hi[i] = s->rq[i].hi;
                }
                s->rq_len -= n;
                memmove(s->rq, s->rq + n, s->rq_len * sizeof(*s->rq));
                s->inflight++;
                kd_store_submit(f, r, flushed);
        }
        return s->rq_len == 0;
}

void kd_settle_flush(kd_fwd_t *f)
{
        kd_fwd_settle_t *s = f->settle;
        runs_take(f);
        /* Runs before the FIRED marks, as claim.c's flush sends both
         * before claims: a claim after an outage sees the deliveries. */
        int all = idq_flush(f, &s->seen, KD_FW_NOTE_CANCELLED, NULL) &&
                  runs_flush(f) &&
                  idq_flush(f, &s->fired, KD_FW_MARK_FIRED, NULL);
        for (int i = 0; all && i < KD_SETTLE_DEAD_REASONS; i++)
                all = idq_flush(f, &s->dead[i], KD_FW_MARK_DEAD,
                                kd_settle_dead_reasons[i]);
        if (all && !runs_waiting(s))
                kd_timer_disarm(&f->timers, &s->flush);
        else
                arm(f); /* at the store's retry time, or when one is back */
}

int kd_settle_drain(kd_fwd_t *f, int64_t deadline)
{
        /* A stop: the tracker's DONE seqs go into runs to send, its OPEN
         * ones are parked (unfinished claims stay FIRING for the next
         * owner). */
        if (f->settle->runs)
                kd_settle_run_generation(f, kd_runs_prefix(f->settle->runs),
                                         kd_runs_last(f->settle->runs));
        /* The pump serves the store's answers but runs no timer, so each
         * round sends the next batches itself (a flush sends at most
         * KD_SETTLE_PIPELINE of them); a store backing off (a statement
         * failed, before the stop or during it) is waited for while the
         * deadline allows, KD_SETTLE_DRAIN_RETRIES times at most. */
        for (int retries = 0;;) {
                if (kd_fwd_mono_ms(f) >= deadline)
                        return -1;
                kd_settle_flush(f);
                if (kd_loop_pump(f, deadline, kd_pump_store_idle))
                        return -1;
                if (!queued(f->settle))
                        return 0;
                if (kd_store_ready(f))
                        continue;
                int64_t wait = kd_store_retry_mono(f) - kd_fwd_mono_ms(f);
                if (++retries > KD_SETTLE_DRAIN_RETRIES ||
                    kd_fwd_mono_ms(f) + wait >= deadline)
                        return -1;
                kd_clocksrc_sleep(&f->timers.clock, wait);
        }
}

size_t kd_settle_queued(const kd_fwd_t *f)
{
        return queued(f->settle);
}

void kd_settle_flush_due(kd_fwd_t *f)
{
        if (kd_timer_due(&f->settle->flush) <= kd_fwd_mono_ms(f))
                kd_settle_flush(f);
}

size_t kd_settle_unclaimed(const kd_fwd_t *f)
{
        return f->settle->uf_len + f->settle->uf_out;
}

/* Fire i of r failed to apply: queued again (after the store's backoff),
 * with its task. Out of memory, it is lost from memory (its journal
 * record, if any, stays) and its task, if any, goes unsettled: its
 * offset not done, it is read again after a restart or a rebalance
 * (fired again, as at_least_once allows, and recorded then). */
static void uf_again(kd_fwd_t *f, kd_store_req_t *r, size_t i)
{
        kd_fate_unclaimed_t *it = &r->fw.uitems[i];
        kd_task_t *t = r->tasks[i];
        if (t) {
                r->tasks[i] = NULL;
                t->req = NULL;
        }
        if (!uf_push(f->settle, r->fw.ids[i], it->fire_at_ms, it->fired_at_ms,
                     t))
                return;
        char q[KD_LOG_QUOTED_MAX(KDELAY_ID_MAX)];
        kd_metric_inc(&f->metrics, KD_M_MARKS_LOST);
        kd_log(f->conf, KDELAY_LOG_ERROR,
               "event=out_of_memory what=unclaimed_fire id=%s action=%s",
               kd_log_quote(r->fw.ids[i], q, sizeof(q)),
               t ? "exit_read_again" : "journal_only");
        if (t) {
                /* Its fire is now nowhere but in its task's offset, which
                 * the partition's commit point cannot pass: a restart
                 * reads it again (fired again, as at_least_once allows,
                 * and recorded then), as every allocation the loop cannot
                 * do without. */
                t->mem_fire = 0;
                kd_settle_release(f, t);
                kd_fwd_oom(f, "unclaimed_fire");
        }
}

/* Fire i of r is in the fate table: its task, if one waits, is settled
 * (only at_least_once writes records of delivery, so only its tasks
 * wait here, and its settling is kd_settle_done). */
static void uf_settle(kd_fwd_t *f, kd_store_req_t *r, size_t i)
{
        kd_task_t *t = r->tasks[i];
        if (!t)
                return;
        r->tasks[i] = NULL;
        t->req = NULL;
        t->mem_fire = 0;
        kd_settle_done(f, t);
}

static void uf_applied(kd_fwd_t *f, kd_store_req_t *r)
{
        kd_fwd_settle_t *s = f->settle;
        kd_fw_req_t *fw = &r->fw;
        s->uf_out -= fw->n;
        uint64_t recorded = 0;
        for (size_t i = 0; i < fw->n; i++) {
                kd_fate_unclaimed_t *it = &fw->uitems[i];
                if (fw->err) {
                        uf_again(f, r, i);
                        continue;
                }
                uf_settle(f, r, i);
                if (!it->recorded)
                        continue; /* the journal's run had it */
                recorded++;
                if (it->prior == KD_PRIOR_CANCELLED) {
                        kd_metric_inc(&f->metrics, KD_M_FIRED_AFTER_CANCEL);
                        kd_reconcile_log_after_cancel(f->conf, it, 1);
                }
        }
        if (recorded) {
                char q[300];
                kd_metric_add(&f->metrics, KD_M_JOURNAL_APPLIED, recorded);
                kd_log(f->conf, KDELAY_LOG_WARNING,
                       "event=journal_records_missing journal=%s "
                       "recorded=%llu action=applied_from_memory",
                       kd_log_quote(f->journal->topic, q, sizeof(q)),
                       (unsigned long long)recorded);
        }
        kd_store_req_done(f, r);
}

void kd_settle_apply_unclaimed(kd_fwd_t *f)
{
        kd_fwd_settle_t *s = f->settle;
        while (s->uf_len > 0 && kd_store_ready(f)) {
                size_t n = s->uf_len;
                if (n > (size_t)f->conf->fwd_claim_batch)
                        n = (size_t)f->conf->fwd_claim_batch;
                kd_store_req_t *r =
                    kd_store_req_new(f, KD_FW_APPLY_UNCLAIMED, n);
                kd_fate_unclaimed_t *items =
                    r ? calloc(n, sizeof(*items)) : NULL;
                if (!items) {
                        kd_store_req_free(r);
                        kd_store_failed(f, "apply_unclaimed", "out of memory");
                        return;
                }
                r->fw.uitems = items;
                kd_ufire_t *u = s->uf + s->uf_len - n; /* the newest n */
                for (size_t i = 0; i < n; i++) {
                        r->fw.ids[i] = u[i].id; /* taken */
                        r->fw.lens[i] = strlen(u[i].id);
                        items[i].id = u[i].id;
                        items[i].id_len = r->fw.lens[i];
                        items[i].fire_at_ms = u[i].fire_at_ms;
                        items[i].fired_at_ms = u[i].fired_at_ms;
                        items[i].forwarder = f->claim->token_name;
                        items[i].src_partition = -1;
                        items[i].src_offset = -1;
                        if ((r->tasks[i] = u[i].task)) {
                                u[i].task->req = r;
                                u[i].task->req_slot = i;
                        }
                }
                s->uf_len -= n;
                s->uf_out += n;
                kd_store_submit(f, r, uf_applied);
        }
}

void kd_settle_unclaimed_left(kd_fwd_t *f, int journal_lost)
{
        kd_fwd_settle_t *s = f->settle;
        if (!s->uf_len)
                return;
        char q[300];
        kd_log(f->conf, KDELAY_LOG_WARNING,
               "event=unclaimed_fires_unapplied count=%zu journal=%s "
               "action=applied_from_the_journal_by_the_next_run",
               s->uf_len, kd_log_quote(f->journal->topic, q, sizeof(q)));
        /* When the journal failed since or is gone (its topic deleted,
         * say), the ids are the only trace left: one line each. */
        if (!journal_lost)
                return;
        for (size_t i = 0; i < s->uf_len; i++) {
                char qi[KD_LOG_QUOTED_MAX(KDELAY_ID_MAX)];
                kd_log(f->conf, KDELAY_LOG_WARNING,
                       "event=unclaimed_fire_unapplied id=%s fire_at_ms=%lld "
                       "fired_at_ms=%lld reason=\"fired without a claim "
                       "through a fate-store outage; the journal failed "
                       "or is gone, so its record may be lost: if it was "
                       "cancelled, it was delivered all the same\"",
                       kd_log_quote(s->uf[i].id, qi, sizeof(qi)),
                       (long long)s->uf[i].fire_at_ms,
                       (long long)s->uf[i].fired_at_ms);
        }
}

void kd_settle_clear(kd_fwd_t *f)
{
        kd_timer_disarm(&f->timers, &f->settle->flush);
        kd_idq_clear(&f->settle->fired);
        kd_idq_clear(&f->settle->seen);
        for (int i = 0; i < KD_SETTLE_DEAD_REASONS; i++)
                kd_idq_clear(&f->settle->dead[i]);
        for (size_t i = 0; i < f->settle->uf_len; i++)
                free(f->settle->uf[i].id);
        free(f->settle->uf);
        f->settle->uf = NULL;
        f->settle->uf_len = f->settle->uf_cap = 0;
        kd_runs_free(f->settle->runs);
        f->settle->runs = NULL;
        free(f->settle->rq);
        f->settle->rq = NULL;
        f->settle->rq_len = f->settle->rq_cap = 0;
}
