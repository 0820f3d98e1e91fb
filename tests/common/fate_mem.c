/* SPDX-License-Identifier: Apache-2.0 */
/* The fate store in memory (kd_fate_mem.h): each operation does to a hash
 * table of rows (fate_memtab.c) what the MySQL store's statements do to
 * the kdelay_fate table, under one mutex, so a call is as atomic as a
 * statement. Where a statement's CASE picks the first matching item of a
 * batch, so does the code here. */
#include "kd_fate_mem.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kd_fate_memtab.h"
#include "kd_fate_ops.h"
#include "kd_util.h"

/* One kdelay_fired_run row. */
typedef struct kd_memrun {
        char prefix[KD_FATE_RUN_PREFIX_MAX]; /* not NUL-terminated */
        size_t prefix_len;
        uint64_t lo, hi;
        int64_t created_at_ms;
} kd_memrun_t;

typedef struct kd_fate_mem {
        pthread_mutex_t lock;
        pthread_cond_t wake; /* delay changed, or interrupted */
        kd_memtab_t rows;    /* owned; guarded by lock */
        /* kdelay_unclaimed: fate holds the prior (a kd_unclaimed_prior_t),
         * decided_at_ms the fire, updated_at_ms the apply, owner the
         * forwarder. Owned; guarded by lock. */
        kd_memtab_t unclaimed;
        /* kdelay_fired_run: ordered by (prefix as bytes, lo), as its
         * primary key. Owned; guarded by lock. */
        kd_memrun_t *runs;
        size_t nruns, runs_cap;
        unsigned fail_left;     /* guarded by lock */
        kdelay_err_t fail_err;  /* guarded by lock */
        int delay_ms;           /* guarded by lock */
        int interrupted;        /* guarded by lock */
        _Atomic uint64_t calls; /* written under lock */
        _Atomic uint64_t stmts; /* written under lock */
        /* kdelay_reconcile: a few journals' markers; guarded by lock. */
        kd_fate_pending_t pending[KD_FATE_MEM_JOURNALS];
        size_t npending;
        /* The leases' clock (kd_fate_mem_set_lease_clock); NULL: the
         * host's monotonic clock. Guarded by lock. */
        int64_t (*lease_mono)(void *arg);
        void *lease_mono_arg;
        int64_t marker_base; /* the marker's clock on the leases' one:
                                wall ms at its 0 */
} kd_fate_mem_t;

/* Now by the leases' clock (lock held). */
static int64_t lease_now(const kd_fate_mem_t *m)
{
        return m->lease_mono ? m->lease_mono(m->lease_mono_arg) : kd_mono_ms();
}

/* (prefix, lo) against a run, as VARBINARY keys compare: bytes, then
 * the shorter first. */
static int run_cmp(const char *p, size_t plen, uint64_t lo,
                   const kd_memrun_t *r)
{
        size_t n = plen < r->prefix_len ? plen : r->prefix_len;
        int c = memcmp(p, r->prefix, n);
        if (c)
                return c;
        if (plen != r->prefix_len)
                return plen < r->prefix_len ? -1 : 1;
        return lo < r->lo ? -1 : lo > r->lo;
}

/* The first run above (p, lo) in key order (lock held). */
static size_t run_upper(const kd_fate_mem_t *m, const char *p, size_t plen,
                        uint64_t lo)
{
        size_t a = 0, b = m->nruns;
        while (a < b) {
                size_t mid = a + (b - a) / 2;
                if (run_cmp(p, plen, lo, &m->runs[mid]) >= 0)
                        a = mid + 1;
                else
                        b = mid;
        }
        return a;
}

/* 1 when r is FIRING and covered by a run (lock held): the run of its
 * owner's prefix with the greatest lo at or below its seq reaches it. */
static int covered(const kd_fate_mem_t *m, const kd_memrow_t *r)
{
        size_t plen;
        uint64_t seq;
        if (!r || r->fate != KDELAY_FATE_FIRING || !r->has_owner ||
            !kd_fate_owner_split(r->owner, strlen(r->owner), &plen, &seq))
                return 0;
        size_t at = run_upper(m, r->owner, plen, seq);
        if (at == 0)
                return 0;
        const kd_memrun_t *run = &m->runs[at - 1];
        return run->prefix_len == plen &&
               !memcmp(run->prefix, r->owner, plen) && run->hi >= seq;
}

/* The fate a reader sees: a covered FIRING row reads FIRED. */
static kdelay_fate_t fate_read(const kd_fate_mem_t *m, const kd_memrow_t *r)
{
        if (!r)
                return KDELAY_FATE_UNDECIDED;
        return covered(m, r) ? KDELAY_FATE_FIRED : r->fate;
}

/* Now by the marker's clock, MySQL's server clock here (lock held): the
 * wall clock, moved on by the leases' clock when a test set one. */
static int64_t marker_now(const kd_fate_mem_t *m)
{
        return m->lease_mono ? m->marker_base + lease_now(m) : kd_now_ms();
}

/* 1 when some journal is pending (lock held). */
static int any_pending(const kd_fate_mem_t *m)
{
        for (size_t i = 0; i < m->npending; i++)
                if (m->pending[i].since_ms >= 0)
                        return 1;
        return 0;
}

/* Waits, lock held, until the delay (re-read when it changes) has passed
 * since start_mono or the store is interrupted. */
static void delay(kd_fate_mem_t *m, int64_t start_mono)
{
        while (!m->interrupted && m->delay_ms > 0) {
                int64_t until = start_mono + m->delay_ms;
                if (kd_mono_ms() >= until)
                        return;
                struct timespec ts;
                clock_gettime(CLOCK_MONOTONIC, &ts);
                int64_t ns =
                    (int64_t)ts.tv_nsec + (until - kd_mono_ms()) * 1000000LL;
                ts.tv_sec += (time_t)(ns / 1000000000LL);
                ts.tv_nsec = (long)(ns % 1000000000LL);
                int rc = pthread_cond_timedwait(&m->wake, &m->lock, &ts);
                if (rc && rc != ETIMEDOUT && rc != EINTR)
                        return;
        }
}

/* Every call starts here: counts it, waits out the delay (the lock is
 * free meanwhile, so slow calls overlap), takes the lock. An injected
 * fault or an interrupt fails it instead, with nothing changed. */
static kdelay_err_t enter(kd_fate_mem_t *m, char *errstr, size_t errstr_size)
{
        int64_t start = kd_mono_ms();
        pthread_mutex_lock(&m->lock);
        m->calls++;
        kdelay_err_t err = KDELAY_OK;
        if (m->fail_left > 0) {
                m->fail_left--;
                err = m->fail_err;
        }
        delay(m, start);
        if (m->interrupted) {
                pthread_mutex_unlock(&m->lock);
                return kd_fail(KDELAY_ERR_MYSQL, errstr, errstr_size,
                               "store interrupted");
        }
        if (err) {
                pthread_mutex_unlock(&m->lock);
                return kd_fail(err, errstr, errstr_size, "injected fault (%s)",
                               kdelay_err_name(err));
        }
        return KDELAY_OK;
}

/* Ends a call that entered: counts the statements MySQL would have
 * sent, drops the lock. */
static kdelay_err_t leave(kd_fate_mem_t *m, unsigned stmts, kdelay_err_t err)
{
        m->stmts += stmts;
        pthread_mutex_unlock(&m->lock);
        return err;
}

static void set_owner(kd_memrow_t *r, const char *owner, size_t len)
{
        memcpy(r->owner, owner, len);
        r->owner[len] = '\0';
        r->has_owner = 1;
}

/* The source columns of a claim item that has one. */
static void set_source(kd_memrow_t *r, const kd_fate_claim_t *it)
{
        if (!it->src_topic)
                return;
        kd_strlcpy(r->src_topic, it->src_topic, sizeof(r->src_topic));
        r->src_partition = it->src_partition;
        r->src_offset = it->src_offset;
}

static kdelay_err_t mem_connect(void *impl, char *errstr, size_t errstr_size)
{
        kd_fate_mem_t *m = impl;
        kdelay_err_t err = enter(m, errstr, errstr_size);
        return err ? err : leave(m, 0, KDELAY_OK);
}

static kdelay_err_t mem_cancel(void *impl, const char *id, size_t id_len,
                               char *errstr, size_t errstr_size)
{
        kd_fate_mem_t *m = impl;
        kdelay_err_t err = enter(m, errstr, errstr_size);
        if (err)
                return err;
        kd_memrow_t *r = kd_memtab_find(&m->rows, id, id_len);
        if (any_pending(m)) /* nothing inserted; a status reads the row */
                return leave(
                    m, 2,
                    kd_fate_cancel_pending(r ? r->fate : KDELAY_FATE_UNDECIDED,
                                           errstr, errstr_size));
        if (r) /* the INSERT met the row; a status reads it */
                return leave(
                    m, 2, kd_fate_cancel_found(r->fate, errstr, errstr_size));
        if (!(r = kd_memtab_row_new(id, id_len)))
                return leave(m, 0, KDELAY_ERR_NO_MEMORY);
        r->fate = KDELAY_FATE_CANCELLED;
        r->decided_at_ms = r->updated_at_ms = kd_now_ms();
        kd_memtab_link(&m->rows, r);
        return leave(m, 1, KDELAY_OK);
}

static kdelay_err_t mem_status(void *impl, const char *id, size_t id_len,
                               kdelay_status_t *status, char *errstr,
                               size_t errstr_size)
{
        kd_fate_mem_t *m = impl;
        kdelay_err_t err = enter(m, errstr, errstr_size);
        if (err)
                return err;
        kd_fate_status_none(status);
        const kd_memrow_t *r = kd_memtab_find(&m->rows, id, id_len);
        if (r) {
                status->fate = fate_read(m, r);
                status->fire_at_ms = r->has_fire_at ? r->fire_at_ms : -1;
                kd_strlcpy(status->owner, r->owner, sizeof(status->owner));
                status->decided_at_ms = r->decided_at_ms;
                status->updated_at_ms = r->updated_at_ms;
                kd_strlcpy(status->dead_reason, r->dead_reason,
                           sizeof(status->dead_reason));
        }
        return leave(m, 1, KDELAY_OK);
}

/* What the read-back says of a row's lease: ms left, 0 expired, -1 none. */
static int64_t lease_left(const kd_fate_mem_t *m, const kd_memrow_t *r)
{
        if (!r || !r->has_lease)
                return -1;
        int64_t left = r->lease_until_mono - lease_now(m);
        return left > 0 ? left : 0;
}

/* The read-back of claim and takeover: fate and owner of each item. */
static void read_back(kd_fate_mem_t *m, kd_fate_claim_t *items, size_t n)
{
        for (size_t i = 0; i < n; i++) {
                const kd_memrow_t *r =
                    kd_memtab_find(&m->rows, items[i].id, items[i].id_len);
                items[i].fate = fate_read(m, r);
                kd_strlcpy(items[i].row_owner, r ? r->owner : "",
                           sizeof(items[i].row_owner));
                items[i].lease_left_ms = lease_left(m, r);
        }
}

/* INSERT IGNORE of FIRING rows: every row is allocated before any is
 * linked, so running out of memory changes nothing. */
/* lease_ms from now (the store's clock is monotonic); 0: none. */
static void set_lease(const kd_fate_mem_t *m, kd_memrow_t *r, int64_t lease_ms)
{
        r->has_lease = lease_ms > 0;
        r->lease_until_mono = lease_ms > 0 ? lease_now(m) + lease_ms : 0;
}

/* The ON DUPLICATE KEY UPDATE of a claim meeting a row: a FIRING row of
 * the same owner gets the item's lease (when it has one). */
static void renew(kd_fate_mem_t *m, const kd_fate_claim_t *items, size_t i,
                  const char *owner)
{
        size_t len;
        const char *tok = kd_fate_claim_owner(&items[i], owner, &len);
        kd_memrow_t *r = kd_memtab_find(&m->rows, items[i].id, items[i].id_len);
        if (r && r->fate == KDELAY_FATE_FIRING && items[i].lease_ms > 0 &&
            r->has_owner && len && strlen(r->owner) == len &&
            !memcmp(r->owner, tok, len))
                set_lease(m, r, items[i].lease_ms);
}

static kdelay_err_t insert_firing(kd_fate_mem_t *m, kd_fate_claim_t *items,
                                  size_t n, const char *owner,
                                  size_t *insertedp)
{
        *insertedp = 0;
        kd_memrow_t **fresh = calloc(n, sizeof(*fresh)); /* owned */
        if (!fresh)
                return KDELAY_ERR_NO_MEMORY;
        kdelay_err_t err = KDELAY_OK;
        for (size_t i = 0; i < n && !err; i++)
                if (!kd_memtab_find(&m->rows, items[i].id, items[i].id_len) &&
                    !(fresh[i] =
                          kd_memtab_row_new(items[i].id, items[i].id_len)))
                        err = KDELAY_ERR_NO_MEMORY;
        int64_t now = kd_now_ms();
        for (size_t i = 0; i < n; i++) {
                kd_memrow_t *r = fresh[i];
                /* An id twice in the batch: the first one inserted it. */
                if (!r || err ||
                    kd_memtab_find(&m->rows, items[i].id, items[i].id_len)) {
                        free(r);
                        if (!err)
                                renew(m, items, i, owner);
                        continue;
                }
                size_t len;
                const char *tok = kd_fate_claim_owner(&items[i], owner, &len);
                r->fate = KDELAY_FATE_FIRING;
                r->has_fire_at = 1;
                r->fire_at_ms = items[i].fire_at_ms;
                if (len)
                        set_owner(r, tok, len);
                set_lease(m, r, items[i].lease_ms);
                set_source(r, &items[i]);
                r->decided_at_ms = r->updated_at_ms = now;
                kd_memtab_link(&m->rows, r);
                (*insertedp)++;
        }
        free(fresh);
        return err;
}

/* The statements a claim costs MySQL: one when every item is fresh and
 * was inserted (kd_fate.h), else two (the read-back). */
static unsigned claim_statements(const kd_fate_claim_t *items, size_t n,
                                 size_t inserted)
{
        for (size_t i = 0; i < n; i++)
                if (!items[i].fresh || !items[i].token)
                        return 2;
        return inserted == n ? 1 : 2;
}

static kdelay_err_t mem_claim(void *impl, kd_fate_claim_t *items, size_t n,
                              const char *owner, char *errstr,
                              size_t errstr_size)
{
        kd_fate_mem_t *m = impl;
        kdelay_err_t err = enter(m, errstr, errstr_size);
        if (err)
                return err;
        size_t inserted;
        if ((err = insert_firing(m, items, n, owner, &inserted)))
                return leave(m, 0, err);
        read_back(m, items, n);
        return leave(m, claim_statements(items, n, inserted), KDELAY_OK);
}

/* The owner <=> row_owner of a takeover item: "" stands for NULL. */
static int owner_is(const kd_memrow_t *r, const char *row_owner)
{
        if (!row_owner[0])
                return !r->has_owner;
        return r->has_owner && !strcmp(r->owner, row_owner);
}

/* The first item of items[0..i] with the id of items[i]: the WHEN a CASE
 * on task_id picks. */
static size_t first_of(const kd_fate_claim_t *items, size_t i)
{
        for (size_t j = 0; j < i; j++)
                if (items[j].id_len == items[i].id_len &&
                    !memcmp(items[j].id, items[i].id, items[i].id_len))
                        return j;
        return i;
}

static kdelay_err_t mem_takeover(void *impl, kd_fate_claim_t *items, size_t n,
                                 char *errstr, size_t errstr_size)
{
        kd_fate_mem_t *m = impl;
        kdelay_err_t err = enter(m, errstr, errstr_size);
        if (err)
                return err;
        int64_t now = kd_now_ms();
        for (size_t i = 0; i < n; i++) {
                kd_memrow_t *r =
                    kd_memtab_find(&m->rows, items[i].id, items[i].id_len);
                if (!r || r->fate != KDELAY_FATE_FIRING ||
                    !owner_is(r, items[i].row_owner) ||
                    (lease_left(m, r) > 0 && !items[i].own_previous) ||
                    covered(m, r))
                        continue;
                const kd_fate_claim_t *first = &items[first_of(items, i)];
                set_owner(r, first->token, strlen(first->token));
                set_lease(m, r, first->lease_ms);
                /* The statement's source CASE names only items with one. */
                for (size_t j = 0; j <= i; j++)
                        if (items[j].src_topic &&
                            items[j].id_len == items[i].id_len &&
                            !memcmp(items[j].id, items[i].id,
                                    items[i].id_len)) {
                                set_source(r, &items[j]);
                                break;
                        }
                r->updated_at_ms = now;
        }
        read_back(m, items, n);
        return leave(m, 2, KDELAY_OK);
}

/* An UPDATE ... WHERE task_id IN (ids): set(row, i, arg) on the row of
 * each ids[i] that has one. One statement. */
static kdelay_err_t
update_ids(void *impl, const char *const *ids, const size_t *id_lens, size_t n,
           void (*set)(kd_memrow_t *r, size_t i, const void *arg),
           const void *arg, char *errstr, size_t errstr_size)
{
        kd_fate_mem_t *m = impl;
        kdelay_err_t err = enter(m, errstr, errstr_size);
        if (err)
                return err;
        for (size_t i = 0; i < n; i++) {
                kd_memrow_t *r = kd_memtab_find(&m->rows, ids[i], id_lens[i]);
                if (r)
                        set(r, i, arg);
        }
        return leave(m, 1, KDELAY_OK);
}

/* FIRING -> FIRED at the time *arg. */
static void fire_row(kd_memrow_t *r, size_t i, const void *arg)
{
        (void)i;
        if (r->fate == KDELAY_FATE_FIRING) {
                r->fate = KDELAY_FATE_FIRED;
                r->updated_at_ms = *(const int64_t *)arg;
        }
}

static kdelay_err_t mem_mark_fired(void *impl, const char *const *ids,
                                   const size_t *id_lens, size_t n,
                                   char *errstr, size_t errstr_size)
{
        int64_t now = kd_now_ms();
        return update_ids(impl, ids, id_lens, n, fire_row, &now, errstr,
                          errstr_size);
}

/* INSERT IGNORE INTO kdelay_fired_run: room for every run is made first,
 * so running out of memory changes nothing. */
static kdelay_err_t mem_mark_runs(void *impl, const char *prefix,
                                  const uint64_t *lo, const uint64_t *hi,
                                  size_t n, char *errstr, size_t errstr_size)
{
        kd_fate_mem_t *m = impl;
        kdelay_err_t err = enter(m, errstr, errstr_size);
        if (err)
                return err;
        if (m->nruns + n > m->runs_cap) {
                size_t cap = (m->nruns + n) * 2;
                kd_memrun_t *v = realloc(m->runs, cap * sizeof(*v));
                if (!v)
                        return leave(m, 0, KDELAY_ERR_NO_MEMORY);
                m->runs = v;
                m->runs_cap = cap;
        }
        size_t plen = strlen(prefix);
        int64_t now = kd_now_ms();
        for (size_t i = 0; i < n; i++) {
                size_t at = run_upper(m, prefix, plen, lo[i]);
                if (at > 0 && !run_cmp(prefix, plen, lo[i], &m->runs[at - 1]))
                        continue; /* recorded already: IGNORE */
                memmove(&m->runs[at + 1], &m->runs[at],
                        (m->nruns - at) * sizeof(m->runs[0]));
                kd_memrun_t *r = &m->runs[at];
                memcpy(r->prefix, prefix, plen);
                r->prefix_len = plen;
                r->lo = lo[i];
                r->hi = hi[i];
                r->created_at_ms = now;
                m->nruns++;
        }
        return leave(m, 1, KDELAY_OK);
}

static kdelay_err_t mem_gc_runs(void *impl, int64_t created_before_ms,
                                int batch, uint64_t *deletedp, char *errstr,
                                size_t errstr_size)
{
        kd_fate_mem_t *m = impl;
        kdelay_err_t err = enter(m, errstr, errstr_size);
        if (err)
                return err;
        size_t kept = 0, gone = 0;
        for (size_t i = 0; i < m->nruns; i++) {
                if (gone < (size_t)batch &&
                    m->runs[i].created_at_ms < created_before_ms) {
                        gone++;
                        continue;
                }
                m->runs[kept++] = m->runs[i];
        }
        m->nruns = kept;
        *deletedp = gone;
        return leave(m, 1, KDELAY_OK);
}

typedef struct kd_dead_mark {
        int64_t now;
        const char *reason;
} kd_dead_mark_t;

/* FIRING -> DEAD with the reason of the kd_dead_mark_t at arg. */
static void dead_row(kd_memrow_t *r, size_t i, const void *arg)
{
        const kd_dead_mark_t *d = arg;
        (void)i;
        if (r->fate == KDELAY_FATE_FIRING) {
                r->fate = KDELAY_FATE_DEAD;
                r->updated_at_ms = d->now;
                kd_strlcpy(r->dead_reason, d->reason, sizeof(r->dead_reason));
        }
}

static kdelay_err_t mem_mark_dead(void *impl, const char *const *ids,
                                  const size_t *id_lens, size_t n,
                                  const char *reason, char *errstr,
                                  size_t errstr_size)
{
        kd_dead_mark_t d = {kd_now_ms(), reason};
        return update_ids(impl, ids, id_lens, n, dead_row, &d, errstr,
                          errstr_size);
}

/* A CANCELLED row's due time, from the fire_ats array at arg, if it has
 * none: the first item of an id sets it, later ones find it set. */
static void note_row(kd_memrow_t *r, size_t i, const void *arg)
{
        if (r->fate == KDELAY_FATE_CANCELLED && !r->has_fire_at) {
                r->has_fire_at = 1;
                r->fire_at_ms = ((const int64_t *)arg)[i];
        }
}

static kdelay_err_t mem_note_cancelled(void *impl, const char *const *ids,
                                       const size_t *id_lens,
                                       const int64_t *fire_ats, size_t n,
                                       char *errstr, size_t errstr_size)
{
        return update_ids(impl, ids, id_lens, n, note_row, fire_ats, errstr,
                          errstr_size);
}

typedef struct kd_gc_bounds {
        int64_t due_before_ms, decided_before_ms;
} kd_gc_bounds_t;

static int gc_keep(const kd_memrow_t *r, const void *arg)
{
        const kd_gc_bounds_t *b = arg;
        if (r->decided_at_ms >= b->due_before_ms)
                return 1; /* decided within the retention */
        if (r->has_fire_at)
                return r->fire_at_ms >= b->due_before_ms;
        return r->decided_at_ms >= b->decided_before_ms;
}

static kdelay_err_t mem_gc(void *impl, int64_t due_before_ms,
                           int64_t decided_before_ms, int batch,
                           uint64_t *deletedp, char *errstr, size_t errstr_size)
{
        kd_fate_mem_t *m = impl;
        kdelay_err_t err = enter(m, errstr, errstr_size);
        if (err)
                return err;
        kd_gc_bounds_t b = {due_before_ms, decided_before_ms};
        *deletedp = kd_memtab_prune(&m->rows, gc_keep, &b, (size_t)batch);
        return leave(m, 1, KDELAY_OK);
}

typedef struct kd_firing_scan {
        const kd_fate_mem_t *m;
        int64_t before, after;
        kd_fate_firing_t *rows;
        size_t max, n;
} kd_firing_scan_t;

/* Keeps the max oldest FIRING rows changed before `before`, in rows[]
 * ordered by change time (an insertion sort: audits list a few). */
static void firing_row(const kd_memrow_t *r, void *arg)
{
        kd_firing_scan_t *s = arg;
        if (r->fate != KDELAY_FATE_FIRING ||
            (r->updated_at_ms >= s->before && r->updated_at_ms <= s->after) ||
            covered(s->m, r))
                return;
        size_t at = s->n;
        while (at > 0 && s->rows[at - 1].updated_at_ms > r->updated_at_ms)
                at--;
        if (at >= s->max)
                return;
        size_t keep = s->n < s->max ? s->n : s->max - 1;
        memmove(&s->rows[at + 1], &s->rows[at],
                (keep - at) * sizeof(s->rows[0]));
        kd_fate_firing_t *f = &s->rows[at];
        memset(f, 0, sizeof(*f));
        memcpy(f->id, r->id, r->id_len);
        f->id_len = r->id_len;
        if (r->has_owner)
                kd_strlcpy(f->owner, r->owner, sizeof(f->owner));
        f->fire_at_ms = r->has_fire_at ? r->fire_at_ms : -1;
        f->updated_at_ms = r->updated_at_ms;
        kd_strlcpy(f->src_topic, r->src_topic, sizeof(f->src_topic));
        f->src_partition = r->src_topic[0] ? r->src_partition : -1;
        f->src_offset = r->src_topic[0] ? r->src_offset : -1;
        s->n = keep + 1;
}

static kdelay_err_t mem_firing(void *impl, int64_t updated_before_ms,
                               int64_t updated_after_ms, kd_fate_firing_t *rows,
                               size_t max, size_t *np, char *errstr,
                               size_t errstr_size)
{
        kd_fate_mem_t *m = impl;
        kdelay_err_t err = enter(m, errstr, errstr_size);
        if (err)
                return err;
        kd_firing_scan_t s = {m, updated_before_ms, updated_after_ms, rows, max,
                              0};
        kd_memtab_each(&m->rows, firing_row, &s);
        *np = s.n;
        return leave(m, 1, KDELAY_OK);
}

typedef struct kd_count_scan {
        const kd_fate_mem_t *m;
        kd_fate_counts_t *c;
} kd_count_scan_t;

static void count_row(const kd_memrow_t *r, void *arg)
{
        kd_count_scan_t *s = arg;
        switch (r->fate) {
        case KDELAY_FATE_FIRING:
                if (covered(s->m, r)) {
                        s->c->fired++;
                        s->c->fired_by_runs++;
                } else {
                        s->c->firing++;
                }
                break;
        case KDELAY_FATE_FIRED:
                s->c->fired++;
                break;
        case KDELAY_FATE_CANCELLED:
                s->c->cancelled++;
                break;
        case KDELAY_FATE_DEAD:
                s->c->dead++;
                break;
        default:
                break;
        }
}

/* kd_fate_counts: MySQL's grouped count, the runs and the pages of FIRING
 * rows are three statements at least (one more per 20,000 FIRING rows). */
static kdelay_err_t mem_counts(void *impl, kd_fate_counts_t *counts,
                               char *errstr, size_t errstr_size)
{
        kd_fate_mem_t *m = impl;
        kdelay_err_t err = enter(m, errstr, errstr_size);
        if (err)
                return err;
        kd_count_scan_t s = {m, counts};
        kd_memtab_each(&m->rows, count_row, &s);
        return leave(
            m, 3 + (unsigned)(counts->firing + counts->fired_by_runs) / 20000,
            KDELAY_OK);
}

static kdelay_err_t mem_lookup(void *impl, const char *const *ids,
                               const size_t *id_lens, size_t n,
                               kdelay_fate_t *fates, char *errstr,
                               size_t errstr_size)
{
        kd_fate_mem_t *m = impl;
        kdelay_err_t err = enter(m, errstr, errstr_size);
        if (err)
                return err;
        for (size_t i = 0; i < n; i++) {
                const kd_memrow_t *r =
                    kd_memtab_find(&m->rows, ids[i], id_lens[i]);
                fates[i] = fate_read(m, r);
        }
        return leave(m, 1, KDELAY_OK);
}

/* kd_fate_apply_unclaimed as fate_unclaimed.c's statements do it. */
static kdelay_err_t mem_apply_unclaimed(void *impl, kd_fate_unclaimed_t *items,
                                        size_t n, char *errstr,
                                        size_t errstr_size)
{
        kd_fate_mem_t *m = impl;
        int64_t now = kd_now_ms();
        kdelay_err_t err = enter(m, errstr, errstr_size);
        if (err)
                return err;
        unsigned stmts = 1;
        int record = 0, delivered = 0, dead = 0;
        for (size_t i = 0; i < n; i++) { /* 1: a FIRED row where none */
                kd_fate_unclaimed_t *it = &items[i];
                if (it->intent)
                        continue;
                stmts = 2;
                if (kd_memtab_find(&m->rows, it->id, it->id_len))
                        continue;
                kd_memrow_t *r = kd_memtab_row_new(it->id, it->id_len);
                if (!r)
                        return leave(m, 0, KDELAY_ERR_NO_MEMORY);
                r->fate =
                    it->dead_reason ? KDELAY_FATE_DEAD : KDELAY_FATE_FIRED;
                if (it->dead_reason)
                        kd_strlcpy(r->dead_reason, it->dead_reason,
                                   sizeof(r->dead_reason));
                r->has_fire_at = 1;
                r->fire_at_ms = it->fire_at_ms;
                if (it->forwarder && it->forwarder[0])
                        set_owner(r, it->forwarder,
                                  strnlen(it->forwarder, KD_FATE_OWNER_MAX));
                r->decided_at_ms = it->fired_at_ms;
                r->updated_at_ms = now;
                kd_memtab_link(&m->rows, r);
        }
        for (size_t i = 0; i < n; i++) { /* 2: what the rows say */
                kd_fate_unclaimed_t *it = &items[i];
                const kd_memrow_t *u =
                    kd_memtab_find(&m->unclaimed, it->id, it->id_len);
                const kd_memrow_t *r =
                    kd_memtab_find(&m->rows, it->id, it->id_len);
                it->recorded = !u;
                it->cancelled_at_ms = u ? u->cancelled_at_ms
                                      : r && r->fate == KDELAY_FATE_CANCELLED
                                          ? r->decided_at_ms
                                          : -1;
                it->prior = u    ? u->fate
                            : !r ? KD_PRIOR_FIRED /* an intent's */
                            : r->fate == KDELAY_FATE_CANCELLED
                                ? KD_PRIOR_CANCELLED
                            : r->fate == KDELAY_FATE_FIRING ? KD_PRIOR_FIRING
                            : r->fate == KDELAY_FATE_DEAD   ? KD_PRIOR_DEAD
                                                            : KD_PRIOR_FIRED;
                if (it->intent) { /* on record only when cancelled */
                        it->recorded &= it->prior == KD_PRIOR_CANCELLED;
                        record |= it->recorded;
                        continue;
                }
                record |= it->recorded;
                delivered |=
                    !it->dead_reason && (it->prior == KD_PRIOR_CANCELLED ||
                                         it->prior == KD_PRIOR_FIRING);
                dead |= it->dead_reason && it->prior == KD_PRIOR_FIRING;
        }
        for (size_t i = 0; i < n; i++) { /* 3: on record */
                kd_fate_unclaimed_t *it = &items[i];
                if (!it->recorded ||
                    kd_memtab_find(&m->unclaimed, it->id, it->id_len))
                        continue;
                kd_memrow_t *u = kd_memtab_row_new(it->id, it->id_len);
                if (!u)
                        return leave(m, stmts, KDELAY_ERR_NO_MEMORY);
                u->fate = (kdelay_fate_t)it->prior;
                u->cancelled_at_ms =
                    it->prior == KD_PRIOR_CANCELLED ? it->cancelled_at_ms : -1;
                u->fire_at_ms = it->fire_at_ms;
                u->decided_at_ms = it->fired_at_ms;
                u->updated_at_ms = now;
                if (it->forwarder && it->forwarder[0])
                        set_owner(u, it->forwarder,
                                  strnlen(it->forwarder, KD_FATE_OWNER_MAX));
                if (it->src_topic) {
                        kd_strlcpy(u->src_topic, it->src_topic,
                                   sizeof(u->src_topic));
                        u->src_partition = it->src_partition;
                        u->src_offset = it->src_offset;
                }
                if (it->dead_reason)
                        kd_strlcpy(u->dead_reason, it->dead_reason,
                                   sizeof(u->dead_reason));
                kd_memtab_link(&m->unclaimed, u);
        }
        stmts += record;
        for (size_t i = 0; i < n; i++) { /* 4, 5: FIRED, DEAD */
                const kd_fate_unclaimed_t *it = &items[i];
                kd_memrow_t *r = kd_memtab_find(&m->rows, it->id, it->id_len);
                if (it->intent)
                        continue;
                int to_fired = !it->dead_reason &&
                               (it->prior == KD_PRIOR_CANCELLED ||
                                it->prior == KD_PRIOR_FIRING) &&
                               (r->fate == KDELAY_FATE_CANCELLED ||
                                r->fate == KDELAY_FATE_FIRING);
                int to_dead = it->dead_reason && it->prior == KD_PRIOR_FIRING &&
                              r->fate == KDELAY_FATE_FIRING;
                if (to_dead)
                        kd_strlcpy(r->dead_reason, it->dead_reason,
                                   sizeof(r->dead_reason));
                if (to_fired || to_dead) {
                        r->fate =
                            to_dead ? KDELAY_FATE_DEAD : KDELAY_FATE_FIRED;
                        r->has_lease = 0;
                        r->updated_at_ms = now;
                }
        }
        return leave(m, stmts + (unsigned)delivered + (unsigned)dead,
                     KDELAY_OK);
}

typedef struct kd_unclaimed_sel {
        int prior;
        int64_t after;
        kd_fate_unclaimed_row_t *rows;
        size_t max, n;
} kd_unclaimed_sel_t;

static void unclaimed_row(const kd_memrow_t *u, kd_fate_unclaimed_row_t *r)
{
        memset(r, 0, sizeof(*r));
        memcpy(r->id, u->id, u->id_len);
        r->id_len = u->id_len;
        r->prior = (kd_unclaimed_prior_t)u->fate;
        r->fire_at_ms = u->fire_at_ms;
        r->fired_at_ms = u->decided_at_ms;
        r->applied_at_ms = u->updated_at_ms;
        kd_strlcpy(r->forwarder, u->owner, sizeof(r->forwarder));
        kd_strlcpy(r->src_topic, u->src_topic, sizeof(r->src_topic));
        r->src_partition = u->src_partition;
        r->src_offset = u->src_offset;
        kd_strlcpy(r->dead_reason, u->dead_reason, sizeof(r->dead_reason));
        r->cancelled_at_ms = u->cancelled_at_ms;
}

/* Keeps the oldest max matching rows, ordered by apply time. */
static void unclaimed_pick(const kd_memrow_t *u, void *arg)
{
        kd_unclaimed_sel_t *s = arg;
        if (u->updated_at_ms < s->after ||
            (s->prior >= 0 && (int)u->fate != s->prior) ||
            (s->prior == KD_PRIOR_CANCELLED && u->dead_reason[0]))
                return;
        size_t i = s->n < s->max ? s->n++ : s->max;
        if (i == s->max) {
                if (s->rows[s->max - 1].applied_at_ms <= u->updated_at_ms)
                        return;
                i = s->max - 1;
        }
        unclaimed_row(u, &s->rows[i]);
        while (i > 0 &&
               s->rows[i - 1].applied_at_ms > s->rows[i].applied_at_ms) {
                kd_fate_unclaimed_row_t t = s->rows[i - 1];
                s->rows[i - 1] = s->rows[i];
                s->rows[i] = t;
                i--;
        }
}

static kdelay_err_t
mem_unclaimed_list(void *impl, const char *id, size_t id_len, int prior,
                   int64_t applied_after_ms, kd_fate_unclaimed_row_t *rows,
                   size_t max, size_t *np, char *errstr, size_t errstr_size)
{
        kd_fate_mem_t *m = impl;
        kdelay_err_t err = enter(m, errstr, errstr_size);
        if (err)
                return err;
        if (id) {
                const kd_memrow_t *u =
                    kd_memtab_find(&m->unclaimed, id, id_len);
                if (u)
                        unclaimed_row(u, &rows[0]);
                *np = u ? 1 : 0;
                return leave(m, 1, KDELAY_OK);
        }
        kd_unclaimed_sel_t s = {prior, applied_after_ms, rows, max, 0};
        kd_memtab_each(&m->unclaimed, unclaimed_pick, &s);
        *np = s.n;
        return leave(m, 1, KDELAY_OK);
}

typedef struct kd_unclaimed_gc {
        int64_t before;
        char (*ids)[KDELAY_ID_MAX];
        size_t *lens;
        size_t max, n;
} kd_unclaimed_gc_t;

static void unclaimed_old(const kd_memrow_t *u, void *arg)
{
        kd_unclaimed_gc_t *g = arg;
        if (u->updated_at_ms >= g->before || g->n == g->max)
                return;
        memcpy(g->ids[g->n], u->id, u->id_len);
        g->lens[g->n++] = u->id_len;
}

static kdelay_err_t mem_gc_unclaimed(void *impl, int64_t applied_before_ms,
                                     int batch, uint64_t *deletedp,
                                     char *errstr, size_t errstr_size)
{
        kd_fate_mem_t *m = impl;
        kdelay_err_t err = enter(m, errstr, errstr_size);
        if (err)
                return err;
        kd_unclaimed_gc_t g = {
            applied_before_ms, malloc((size_t)batch * KDELAY_ID_MAX),
            malloc((size_t)batch * sizeof(size_t)), (size_t)batch, 0};
        if (!g.ids || !g.lens) {
                free(g.ids);
                free(g.lens);
                return leave(m, 0, KDELAY_ERR_NO_MEMORY);
        }
        kd_memtab_each(&m->unclaimed, unclaimed_old, &g);
        for (size_t i = 0; i < g.n; i++)
                kd_memtab_delete(&m->unclaimed, g.ids[i], g.lens[i]);
        *deletedp = g.n;
        free(g.ids);
        free(g.lens);
        return leave(m, 1, KDELAY_OK);
}

/* The marker of journal (lock held), made when make; NULL when none (or
 * no room). */
static kd_fate_pending_t *pending_of(kd_fate_mem_t *m, const char *journal,
                                     int make)
{
        for (size_t i = 0; i < m->npending; i++)
                if (!strcmp(m->pending[i].journal, journal))
                        return &m->pending[i];
        if (!make || m->npending == KD_FATE_MEM_JOURNALS)
                return NULL;
        kd_fate_pending_t *p = &m->pending[m->npending++];
        memset(p, 0, sizeof(*p));
        p->since_ms = p->marked_at_ms = p->marked_age_ms = -1;
        kd_strlcpy(p->journal, journal, sizeof(p->journal));
        return p;
}

/* p marked or renewed now by `by`. */
static void pending_stamp(kd_fate_mem_t *m, kd_fate_pending_t *p,
                          const char *by)
{
        p->marked_at_ms = marker_now(m);
        kd_strlcpy(p->by, by ? by : "", sizeof(p->by));
}

static kdelay_err_t mem_pending_mark(void *impl, const char *journal,
                                     const char *by, char *errstr,
                                     size_t errstr_size)
{
        kd_fate_mem_t *m = impl;
        kdelay_err_t err = enter(m, errstr, errstr_size);
        if (err)
                return err;
        kd_fate_pending_t *p = pending_of(m, journal, 1);
        if (!p)
                return leave(m, 0, KDELAY_ERR_NO_MEMORY);
        p->epoch++;
        pending_stamp(m, p, by);
        if (p->since_ms < 0)
                p->since_ms = p->marked_at_ms;
        return leave(m, 1, KDELAY_OK);
}

static kdelay_err_t mem_pending_get(void *impl, const char *journal,
                                    kd_fate_pending_t *p, char *errstr,
                                    size_t errstr_size)
{
        kd_fate_mem_t *m = impl;
        kdelay_err_t err = enter(m, errstr, errstr_size);
        if (err)
                return err;
        const kd_fate_pending_t *q = NULL;
        if (journal)
                q = pending_of(m, journal, 0);
        else
                for (size_t i = 0; i < m->npending; i++)
                        if (m->pending[i].since_ms >= 0 &&
                            (!q || m->pending[i].since_ms < q->since_ms))
                                q = &m->pending[i];
        if (q) {
                *p = *q;
                p->marked_age_ms =
                    q->marked_at_ms >= 0 ? marker_now(m) - q->marked_at_ms : -1;
        }
        return leave(m, 1, KDELAY_OK);
}

static kdelay_err_t mem_pending_renew(void *impl, const char *journal,
                                      const char *by, char *errstr,
                                      size_t errstr_size)
{
        kd_fate_mem_t *m = impl;
        kdelay_err_t err = enter(m, errstr, errstr_size);
        if (err)
                return err;
        kd_fate_pending_t *p = pending_of(m, journal, 0);
        if (p && p->since_ms >= 0)
                pending_stamp(m, p, by);
        return leave(m, 1, KDELAY_OK);
}

/* 1 when a clear with stale_ms may clear q (kd_fate.h): nobody, the
 * caller included, marked or renewed it for stale_ms. */
static int clear_allowed(const kd_fate_mem_t *m, const kd_fate_pending_t *q,
                         int64_t stale_ms)
{
        return stale_ms < 0 || q->marked_at_ms < marker_now(m) - stale_ms;
}

static kdelay_err_t mem_pending_clear(void *impl, const char *journal,
                                      uint64_t epoch, const char *by,
                                      int64_t stale_ms, kd_fate_pending_t *p,
                                      char *errstr, size_t errstr_size)
{
        kd_fate_mem_t *m = impl;
        kdelay_err_t err = enter(m, errstr, errstr_size);
        if (err)
                return err;
        kd_fate_pending_t *q = pending_of(m, journal, 0);
        (void)by;
        if (q && q->epoch == epoch && clear_allowed(m, q, stale_ms))
                q->since_ms = -1;
        if (q) {
                *p = *q;
                p->marked_age_ms =
                    q->marked_at_ms >= 0 ? marker_now(m) - q->marked_at_ms : -1;
        }
        return leave(m, 2, KDELAY_OK);
}

static uint64_t mem_statements(const void *impl)
{
        const kd_fate_mem_t *m = impl;
        return m->stmts;
}

static void mem_interrupt(void *impl)
{
        kd_fate_mem_t *m = impl;
        pthread_mutex_lock(&m->lock);
        m->interrupted = 1;
        pthread_cond_broadcast(&m->wake);
        pthread_mutex_unlock(&m->lock);
}

static void mem_destroy(void *impl)
{
        kd_fate_mem_t *m = impl;
        kd_memtab_clear(&m->rows);
        kd_memtab_clear(&m->unclaimed);
        free(m->runs);
        pthread_cond_destroy(&m->wake);
        pthread_mutex_destroy(&m->lock);
        free(m);
}

static const kd_fate_ops_t kd_fate_mem_ops = {
    .connect = mem_connect,
    .cancel = mem_cancel,
    .status = mem_status,
    .claim = mem_claim,
    .takeover = mem_takeover,
    .mark_fired = mem_mark_fired,
    .mark_runs = mem_mark_runs,
    .gc_runs = mem_gc_runs,
    .mark_dead = mem_mark_dead,
    .note_cancelled = mem_note_cancelled,
    .gc = mem_gc,
    .firing = mem_firing,
    .counts = mem_counts,
    .lookup = mem_lookup,
    .apply_unclaimed = mem_apply_unclaimed,
    .unclaimed_list = mem_unclaimed_list,
    .gc_unclaimed = mem_gc_unclaimed,
    .pending_mark = mem_pending_mark,
    .pending_get = mem_pending_get,
    .pending_renew = mem_pending_renew,
    .pending_clear = mem_pending_clear,
    .statements = mem_statements,
    .interrupt = mem_interrupt,
    .destroy = mem_destroy,
};

kdelay_err_t kd_fate_mem_new(kd_fate_store_t **storep)
{
        kd_fate_mem_t *m = calloc(1, sizeof(*m));
        if (!m)
                return KDELAY_ERR_NO_MEMORY;
        if (kd_memtab_init(&m->rows)) {
                free(m);
                return KDELAY_ERR_NO_MEMORY;
        }
        if (kd_memtab_init(&m->unclaimed)) {
                kd_memtab_clear(&m->rows);
                free(m);
                return KDELAY_ERR_NO_MEMORY;
        }
        pthread_condattr_t ca;
        int rc = pthread_condattr_init(&ca);
        int cond = !rc && !pthread_condattr_setclock(&ca, CLOCK_MONOTONIC) &&
                   !pthread_cond_init(&m->wake, &ca);
        if (!rc)
                pthread_condattr_destroy(&ca);
        if (!cond || pthread_mutex_init(&m->lock, NULL)) {
                if (cond)
                        pthread_cond_destroy(&m->wake);
                kd_memtab_clear(&m->rows);
                kd_memtab_clear(&m->unclaimed);
                free(m);
                return KDELAY_ERR_SYSTEM;
        }
        return kd_fate_store_wrap(storep, &kd_fate_mem_ops, m);
}

/* The store's state for the test hooks below, locked; NULL when store is
 * of another kind. */
static kd_fate_mem_t *hook(const kd_fate_store_t *store)
{
        kd_fate_mem_t *m = kd_fate_store_impl(store, &kd_fate_mem_ops);
        if (m)
                pthread_mutex_lock(&m->lock);
        return m;
}

kdelay_err_t kd_fate_mem_fail_next(kd_fate_store_t *store, unsigned n,
                                   kdelay_err_t err)
{
        if (err == KDELAY_OK)
                return KDELAY_ERR_INVALID_ARG;
        kd_fate_mem_t *m = hook(store);
        if (!m)
                return KDELAY_ERR_INVALID_ARG;
        m->fail_left = n;
        m->fail_err = err;
        pthread_mutex_unlock(&m->lock);
        return KDELAY_OK;
}

kdelay_err_t kd_fate_mem_set_delay(kd_fate_store_t *store, int ms)
{
        if (ms < 0)
                return KDELAY_ERR_INVALID_ARG;
        kd_fate_mem_t *m = hook(store);
        if (!m)
                return KDELAY_ERR_INVALID_ARG;
        m->delay_ms = ms;
        pthread_cond_broadcast(&m->wake);
        pthread_mutex_unlock(&m->lock);
        return KDELAY_OK;
}

kdelay_err_t kd_fate_mem_set_lease_clock(kd_fate_store_t *store,
                                         int64_t (*mono)(void *arg), void *arg)
{
        kd_fate_mem_t *m = hook(store);
        if (!m)
                return KDELAY_ERR_INVALID_ARG;
        m->lease_mono = mono;
        m->lease_mono_arg = arg;
        if (mono)
                m->marker_base = kd_now_ms() - mono(arg);
        pthread_mutex_unlock(&m->lock);
        return KDELAY_OK;
}

uint64_t kd_fate_mem_calls(const kd_fate_store_t *store)
{
        const kd_fate_mem_t *m = kd_fate_store_impl(store, &kd_fate_mem_ops);
        return m ? m->calls : 0;
}

kdelay_err_t kd_fate_mem_get(kd_fate_store_t *store, const char *id,
                             size_t id_len, kd_fate_mem_row_t *row)
{
        if (!id || id_len > KDELAY_ID_MAX)
                return KDELAY_ERR_INVALID_ID;
        kd_fate_mem_t *m = hook(store);
        if (!m)
                return KDELAY_ERR_INVALID_ARG;
        const kd_memrow_t *r = kd_memtab_find(&m->rows, id, id_len);
        memset(row, 0, sizeof(*row));
        row->fate = KDELAY_FATE_UNDECIDED;
        row->fire_at_ms = row->decided_at_ms = row->updated_at_ms = -1;
        row->lease_ms = -1;
        if (r) {
                row->fate = r->fate;
                row->fire_at_ms = r->has_fire_at ? r->fire_at_ms : -1;
                row->decided_at_ms = r->decided_at_ms;
                row->updated_at_ms = r->updated_at_ms;
                kd_strlcpy(row->owner, r->owner, sizeof(row->owner));
                row->lease_ms = lease_left(m, r);
        }
        pthread_mutex_unlock(&m->lock);
        return KDELAY_OK;
}

kdelay_err_t kd_fate_mem_put(kd_fate_store_t *store, const char *id,
                             size_t id_len, const kd_fate_mem_row_t *row)
{
        if (!id || id_len > KDELAY_ID_MAX)
                return KDELAY_ERR_INVALID_ID;
        kd_fate_mem_t *m = hook(store);
        if (!m)
                return KDELAY_ERR_INVALID_ARG;
        kdelay_err_t err = KDELAY_OK;
        kd_memrow_t *r = kd_memtab_find(&m->rows, id, id_len);
        int fresh = !r;
        if (row->fate == KDELAY_FATE_UNDECIDED) {
                kd_memtab_delete(&m->rows, id, id_len);
        } else if (fresh && !(r = kd_memtab_row_new(id, id_len))) {
                err = KDELAY_ERR_NO_MEMORY;
        } else {
                r->fate = row->fate;
                r->has_fire_at = row->fire_at_ms != -1;
                r->fire_at_ms = row->fire_at_ms;
                r->decided_at_ms = row->decided_at_ms;
                r->updated_at_ms = row->updated_at_ms;
                size_t len = strnlen(row->owner, KD_FATE_OWNER_MAX);
                r->has_owner = 0;
                r->owner[0] = '\0';
                if (len)
                        set_owner(r, row->owner, len);
                set_lease(m, r, row->lease_ms);
                if (fresh)
                        kd_memtab_link(&m->rows, r);
        }
        pthread_mutex_unlock(&m->lock);
        return err;
}

kdelay_err_t kd_fate_mem_pending_age(kd_fate_store_t *store,
                                     const char *journal, int64_t ms)
{
        kd_fate_mem_t *m = hook(store);
        if (!m)
                return KDELAY_ERR_INVALID_ARG;
        kd_fate_pending_t *p = pending_of(m, journal, 0);
        if (p)
                p->marked_at_ms -= ms;
        pthread_mutex_unlock(&m->lock);
        return p ? KDELAY_OK : KDELAY_ERR_NOT_FOUND;
}
