/* Settle stage (kd_settle.h): owns f->settle, the FIRED marks and cancel
 * due times waiting for the fate store, and the end of every task. */
#include "kd_settle.h"

#include <stdlib.h>
#include <string.h>

#include "kd_held.h"
#include "kd_log.h"
#include "kd_store.h"
#include "kd_util.h"

/* FIRED marks are batched over this long. */
#define KD_MARK_INTERVAL_MS 250

void kd_settle_release(kd_fwd_t *f, kd_task_t *t)
{
        kd_timer_disarm(&f->timers, &t->timer);
        kd_held_remove(f, t);
        kd_part_t *p = t->part;
        if (p) {
                if (t->prev)
                        t->prev->next = t->next;
                else
                        p->tasks = t->next;
                if (t->next)
                        t->next->prev = t->prev;
        }
        kd_task_free(t);
}

void kd_settle_done(kd_fwd_t *f, kd_task_t *t)
{
        int moved = 0;
        if (t->part)
                moved = kd_offtrack_done(&t->part->track, t->rec.offset) == 0;
        kd_settle_release(f, t);
        if (moved)
                f->hooks.room(f); /* the commit point may have moved */
}

static void flush_cb(kd_timer_t *tm, void *arg)
{
        (void)tm;
        kd_settle_flush(arg);
}

/* Flushes when a batch is full, else within KD_MARK_INTERVAL_MS. */
static void arm(kd_fwd_t *f)
{
        kd_fwd_settle_t *s = &f->settle;
        int64_t at = kd_mono_ms() + KD_MARK_INTERVAL_MS;
        if (s->fired.len + s->seen.len >= (size_t)f->conf->fwd_claim_batch)
                at = kd_mono_ms();
        if (at < kd_store_retry_mono(f))
                at = kd_store_retry_mono(f);
        if (kd_timer_arm_by(&f->timers, &s->flush, KD_CLOCK_MONO, at, flush_cb,
                            f))
                kd_fwd_oom(f, "settle_timer");
}

void kd_settle_fired(kd_fwd_t *f, const char *id, int64_t late_ms)
{
        kd_metric_inc(&f->metrics, KD_M_FIRED);
        kd_metric_max(&f->metrics, KD_M_LATE_MAX, late_ms);
        kd_metric_observe(&f->metrics, KD_M_LATE, late_ms);
        if (kd_idq_push(&f->settle.fired, id, 0)) {
                /* The row stays FIRING: still correct (a cancel answers
                 * "too late"), only status shows FIRING. Counted. */
                char q[160];
                kd_metric_inc(&f->metrics, KD_M_MARKS_LOST);
                kd_log(f->conf, KDELAY_LOG_ERROR,
                       "event=out_of_memory what=fired_mark id=%s",
                       kd_log_quote(id, q, sizeof(q)));
                return;
        }
        arm(f);
}

void kd_settle_note_cancelled(kd_fwd_t *f, const char *id, int64_t fire_at)
{
        /* Out of memory: gc keeps the row longer, which is safe. */
        if (kd_idq_push(&f->settle.seen, id, fire_at) == 0)
                arm(f);
}

/* Writes one batch of a queue; the fate-store statement behind it. */
typedef kdelay_err_t(kd_idq_write_fn)(kd_fwd_t *f, const char *const *ids,
                                      const size_t *lens, const int64_t *vals,
                                      size_t n, char *errstr,
                                      size_t errstr_size);

static kdelay_err_t write_fired(kd_fwd_t *f, const char *const *ids,
                                const size_t *lens, const int64_t *vals,
                                size_t n, char *errstr, size_t errstr_size)
{
        (void)vals;
        return kd_store_mark_fired(f, ids, lens, n, errstr, errstr_size);
}

/* Writes q in batches of claim_batch ids, one statement each, until it is
 * empty or the store fails (then it backs off; 0 returned). */
static int idq_flush(kd_fwd_t *f, kd_idq_t *q, kd_idq_write_fn *write,
                     const char *what)
{
        while (q->len > 0 && kd_store_ready(f)) {
                size_t n = q->len;
                if (n > (size_t)f->conf->fwd_claim_batch)
                        n = (size_t)f->conf->fwd_claim_batch;
                size_t *lens = malloc(n * sizeof(*lens));
                char errstr[512];
                if (!lens) {
                        kd_store_failed(f, what, "out of memory");
                        return 0;
                }
                for (size_t i = 0; i < n; i++)
                        lens[i] = strlen(q->ids[i]);
                kdelay_err_t err = write(f, (const char *const *)q->ids, lens,
                                         q->vals, n, errstr, sizeof(errstr));
                free(lens);
                if (err) {
                        kd_store_failed(f, what, errstr);
                        return 0;
                }
                kd_store_ok(f);
                kd_idq_shift(q, n);
        }
        return q->len == 0;
}

void kd_settle_flush(kd_fwd_t *f)
{
        kd_fwd_settle_t *s = &f->settle;
        if (idq_flush(f, &s->seen, kd_store_note_cancelled, "note_cancelled") &&
            idq_flush(f, &s->fired, write_fired, "mark_fired"))
                kd_timer_disarm(&f->timers, &s->flush);
        else
                arm(f); /* at the store's retry time */
}

void kd_settle_flush_due(kd_fwd_t *f)
{
        if (kd_timer_due(&f->settle.flush) <= kd_mono_ms())
                kd_settle_flush(f);
}

void kd_settle_clear(kd_fwd_t *f)
{
        kd_timer_disarm(&f->timers, &f->settle.flush);
        kd_idq_clear(&f->settle.fired);
        kd_idq_clear(&f->settle.seen);
}
