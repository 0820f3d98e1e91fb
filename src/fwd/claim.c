/* Claims in MySQL, in batches: no task fires without its FIRING row, and
 * delivered tasks are marked FIRED in one statement per batch. While MySQL
 * is unreachable, tasks stay held and claims are retried with backoff. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kd_fwd.h"
#include "kd_log.h"
#include "kd_util.h"

void kd_claim_enqueue(kd_fwd_t *f, kd_task_t *t)
{
        t->state = KD_TASK_CLAIMING;
        if (!f->claimq.head)
                f->claimq_since = kd_now_ms();
        kd_taskq_push(&f->claimq, t);
}

void kd_claim_forget(kd_fwd_t *f, kd_task_t *t)
{
        kd_taskq_remove(&f->claimq, t);
}

void kd_claim_new_generation(kd_fwd_t *f)
{
        f->generation++;
        snprintf(f->claim_prefix, sizeof(f->claim_prefix),
                 "%.20s:%08x.%u:", f->instance, f->boot, f->generation);
}

/* MySQL failed: back off, and say so once per outage. */
static void mysql_failed(kd_fwd_t *f, int64_t now, const char *what,
                         const char *errstr)
{
        int64_t b = f->mysql_backoff_ms ? f->mysql_backoff_ms * 2 : 100;
        if (b > f->conf->fwd_retry_max_ms)
                b = f->conf->fwd_retry_max_ms;
        f->mysql_backoff_ms = b;
        f->mysql_retry_ms = now + b;
        if (!f->mysql_down) {
                char q[512];
                f->mysql_down = 1;
                kd_log(f->conf, KDELAY_LOG_ERROR,
                       "event=mysql_unavailable what=%s err=%s held=%zu "
                       "action=hold_and_retry",
                       what, kd_log_quote(errstr, q, sizeof(q)), f->held_cnt);
        }
}

static void mysql_ok(kd_fwd_t *f)
{
        f->mysql_backoff_ms = 0;
        f->mysql_retry_ms = 0;
        if (f->mysql_down) {
                f->mysql_down = 0;
                kd_log(f->conf, KDELAY_LOG_NOTICE,
                       "event=mysql_available held=%zu claim_queue=%zu",
                       f->held_cnt, f->claimq.len);
        }
}

/* Where a claim outcome sends task t. */
typedef enum kd_settle {
        KD_SETTLED,       /* fire, drop or wait: decided */
        KD_NEEDS_TAKEOVER /* FIRING under an owner that seems gone */
} kd_settle_t;

static void hold_again(kd_fwd_t *f, kd_task_t *t, int64_t at)
{
        t->state = KD_TASK_HELD;
        kd_heap_push(&f->timers, &t->timer, at);
}

static kd_settle_t settle(kd_fwd_t *f, kd_task_t *t, const kd_fate_claim_t *c,
                          int64_t now, int after_takeover)
{
        const char *owner = c->row_owner;
        switch (c->fate) {
        case KDELAY_FATE_CANCELLED:
                f->stats.cancelled++;
                kd_log(f->conf, KDELAY_LOG_INFO, "event=task_cancelled id=%s",
                       t->id);
                kd_claim_note_cancelled(f, t->id, t->fire_at_ms);
                kd_task_done(f, t);
                return KD_SETTLED;
        case KDELAY_FATE_FIRED:
                f->stats.already_fired++;
                kd_task_done(f, t);
                return KD_SETTLED;
        case KDELAY_FATE_FIRING:
                break;
        default:
                /* No row after our insert (removed meanwhile): again. */
                kd_claim_enqueue(f, t);
                return KD_SETTLED;
        }
        if (!strcmp(owner, t->token)) {
                /* Ours: fire at fire_at. */
                f->stats.claimed++;
                t->state = KD_TASK_CLAIMED;
                kd_heap_push(&f->timers, &t->timer, t->fire_at_ms);
                return KD_SETTLED;
        }
        if (!strncmp(owner, f->claim_prefix, strlen(f->claim_prefix))) {
                /* Another copy of this task (a hop repeated after a
                 * rebalance or crash) holds the claim in this assignment:
                 * it fires, not this one. */
                f->stats.dup_copies++;
                kd_task_done(f, t);
                return KD_SETTLED;
        }
        /* Exactly-once: a foreign FIRING row belongs to a transaction that
         * aborted or will be fenced (a committed one would have marked this
         * record done in its offsets), so it is taken over at once. */
        if ((!f->eos && !t->waited_foreign) || after_takeover) {
                /* Claimed by another process, which is alive and about to
                 * mark it FIRED, or died. Look again a little later. */
                t->waited_foreign = 1;
                f->stats.foreign_waits++;
                hold_again(f, t, now + f->conf->fwd_foreign_wait_ms);
                return KD_SETTLED;
        }
        return KD_NEEDS_TAKEOVER;
}

/* Claims up to one batch from the head of the queue. 0 on success. */
static int claim_batch(kd_fwd_t *f, int64_t now)
{
        size_t n = f->claimq.len;
        if (n > (size_t)f->conf->fwd_claim_batch)
                n = (size_t)f->conf->fwd_claim_batch;
        kd_fate_claim_t *items = calloc(n, sizeof(*items));
        kd_task_t **tasks = calloc(n, sizeof(*tasks));
        char errstr[512];
        int rc = -1;
        if (!items || !tasks) {
                mysql_failed(f, now, "claim", "out of memory");
                goto out;
        }
        kd_task_t *t = f->claimq.head;
        for (size_t i = 0; i < n; i++, t = t->qnext) {
                tasks[i] = t;
                items[i].id = t->id;
                items[i].id_len = strlen(t->id);
                items[i].fire_at_ms = t->fire_at_ms;
                if (!t->token[0])
                        snprintf(t->token, sizeof(t->token), "%s%llu",
                                 f->claim_prefix,
                                 (unsigned long long)++f->claim_seq);
                items[i].token = t->token;
        }
        uint64_t before = kd_fate_statements(f->fate);
        kdelay_err_t err =
            kd_fate_claim(f->fate, items, n, NULL, errstr, sizeof(errstr));
        f->stats.claim_statements += kd_fate_statements(f->fate) - before;
        if (err) {
                mysql_failed(f, now, "claim", errstr);
                goto out;
        }
        mysql_ok(f);
        /* Settle each; the ones needing a takeover are packed to the
         * front of items/tasks. */
        size_t m = 0;
        for (size_t i = 0; i < n; i++) {
                kd_claim_forget(f, tasks[i]);
                if (settle(f, tasks[i], &items[i], now, 0) ==
                    KD_NEEDS_TAKEOVER) {
                        items[m] = items[i];
                        tasks[m++] = tasks[i];
                }
        }
        if (m > 0) {
                before = kd_fate_statements(f->fate);
                err =
                    kd_fate_takeover(f->fate, items, m, errstr, sizeof(errstr));
                f->stats.claim_statements +=
                    kd_fate_statements(f->fate) - before;
                for (size_t i = 0; i < m; i++) {
                        if (err)
                                kd_claim_enqueue(f, tasks[i]);
                        else
                                settle(f, tasks[i], &items[i], now, 1);
                }
                if (err) {
                        mysql_failed(f, now, "takeover", errstr);
                        goto out;
                }
                f->stats.takeovers += m;
        }
        rc = 0;
out:
        free(items);
        free(tasks);
        return rc;
}

void kd_claim_flush(kd_fwd_t *f, int64_t now)
{
        while (f->claimq.head && now >= f->mysql_retry_ms)
                if (claim_batch(f, now))
                        return;
}

void kd_idq_clear(kd_idq_t *q)
{
        for (size_t i = 0; i < q->len; i++)
                free(q->ids[i]);
        free(q->ids);
        free(q->vals);
        memset(q, 0, sizeof(*q));
}

int kd_idq_push(kd_idq_t *q, const char *id, int64_t val)
{
        if (q->len == q->cap) {
                size_t cap = q->cap ? q->cap * 2 : 256;
                char **v = realloc(q->ids, cap * sizeof(*v));
                if (v)
                        q->ids = v;
                int64_t *w = realloc(q->vals, cap * sizeof(*w));
                if (w)
                        q->vals = w;
                if (!v || !w)
                        return -1;
                q->cap = cap;
        }
        char *copy = strdup(id);
        if (!copy)
                return -1;
        q->ids[q->len] = copy;
        q->vals[q->len++] = val;
        return 0;
}

/* Writes one batch of a queue; the fate-table statement behind it. */
typedef kdelay_err_t(kd_idq_write_fn)(kd_fate_store_t *store,
                                      const char *const *ids,
                                      const size_t *lens, const int64_t *vals,
                                      size_t n, char *errstr,
                                      size_t errstr_size);

static kdelay_err_t write_fired(kd_fate_store_t *store, const char *const *ids,
                                const size_t *lens, const int64_t *vals,
                                size_t n, char *errstr, size_t errstr_size)
{
        (void)vals;
        return kd_fate_mark_fired(store, ids, lens, n, errstr, errstr_size);
}

/* Writes q in batches of claim_batch ids, one statement each, until it is
 * empty or MySQL fails (then it backs off; the queue waits). */
static void idq_flush(kd_fwd_t *f, kd_idq_t *q, kd_idq_write_fn *write,
                      const char *what, int64_t now)
{
        while (q->len > 0 && now >= f->mysql_retry_ms) {
                size_t n = q->len;
                if (n > (size_t)f->conf->fwd_claim_batch)
                        n = (size_t)f->conf->fwd_claim_batch;
                size_t *lens = malloc(n * sizeof(*lens));
                char errstr[512];
                if (!lens)
                        return;
                for (size_t i = 0; i < n; i++)
                        lens[i] = strlen(q->ids[i]);
                uint64_t before = kd_fate_statements(f->fate);
                kdelay_err_t err =
                    write(f->fate, (const char *const *)q->ids, lens, q->vals,
                          n, errstr, sizeof(errstr));
                f->stats.mark_statements +=
                    kd_fate_statements(f->fate) - before;
                free(lens);
                if (err) {
                        mysql_failed(f, now, what, errstr);
                        return;
                }
                mysql_ok(f);
                for (size_t i = 0; i < n; i++)
                        free(q->ids[i]);
                memmove(q->ids, q->ids + n, (q->len - n) * sizeof(*q->ids));
                memmove(q->vals, q->vals + n, (q->len - n) * sizeof(*q->vals));
                q->len -= n;
        }
}

void kd_claim_mark_fired(kd_fwd_t *f, const char *id)
{
        /* Out of memory: the row stays FIRING, which is still correct. */
        kd_idq_push(&f->fired, id, 0);
}

void kd_claim_note_cancelled(kd_fwd_t *f, const char *id, int64_t fire_at)
{
        /* Out of memory: gc keeps the row longer, which is safe. */
        kd_idq_push(&f->seen, id, fire_at);
}

void kd_claim_flush_fired(kd_fwd_t *f, int64_t now)
{
        idq_flush(f, &f->seen, kd_fate_note_cancelled, "note_cancelled", now);
        idq_flush(f, &f->fired, write_fired, "mark_fired", now);
}
