/* SPDX-License-Identifier: Apache-2.0 */
/* The fate store's front: every kd_fate_ function dispatches through the
 * store's operations table (kd_fate_ops.h), after what every
 * implementation shares: arguments are checked and empty batches answered
 * here, without a statement, so that no implementation differs there.
 * It knows no implementation: each wraps its own state into a store
 * (kd_fate_store_wrap; kd_fate_store_new in fate_mysql.c). What a row
 * says, the same for every store, is fate_row.c's. */
#include "kd_fate.h"

#include <stdlib.h>
#include <string.h>

#include "kd_fate_ops.h"
#include "kd_util.h"

struct kd_fate_store {
        const kd_fate_ops_t *ops; /* borrowed: static */
        void *impl;               /* owned: freed by ops->destroy */
};

kdelay_err_t kd_fate_store_wrap(kd_fate_store_t **storep,
                                const kd_fate_ops_t *ops, void *impl)
{
        kd_fate_store_t *st = calloc(1, sizeof(*st));
        if (!st) {
                ops->destroy(impl);
                return KDELAY_ERR_NO_MEMORY;
        }
        st->ops = ops;
        st->impl = impl;
        *storep = st;
        return KDELAY_OK;
}

void *kd_fate_store_impl(const kd_fate_store_t *store, const kd_fate_ops_t *ops)
{
        return store && store->ops == ops ? store->impl : NULL;
}

/* An id the fate table can hold: VARBINARY(KDELAY_ID_MAX). A longer one
 * would be cut (INSERT IGNORE) and meet another id's row. */
static kdelay_err_t check_id(const char *id, size_t len, char *errstr,
                             size_t errstr_size)
{
        if (!id || len > KDELAY_ID_MAX)
                return kd_fail(KDELAY_ERR_INVALID_ID, errstr, errstr_size,
                               "task id missing or over %d bytes",
                               KDELAY_ID_MAX);
        return KDELAY_OK;
}

static kdelay_err_t check_ids(const char *const *ids, const size_t *lens,
                              size_t n, char *errstr, size_t errstr_size)
{
        kdelay_err_t err = KDELAY_OK;
        for (size_t i = 0; i < n && !err; i++)
                err = check_id(ids[i], lens[i], errstr, errstr_size);
        return err;
}

/* Claim items' ids; with `tokens`, every token present and no longer than
 * an owner (a takeover writes it whole). */
static kdelay_err_t check_items(const kd_fate_claim_t *items, size_t n,
                                int tokens, char *errstr, size_t errstr_size)
{
        kdelay_err_t err = KDELAY_OK;
        for (size_t i = 0; i < n && !err; i++) {
                err =
                    check_id(items[i].id, items[i].id_len, errstr, errstr_size);
                if (!err && tokens &&
                    (!items[i].token ||
                     strlen(items[i].token) > KD_FATE_OWNER_MAX))
                        err =
                            kd_fail(KDELAY_ERR_INVALID_ARG, errstr, errstr_size,
                                    "takeover token missing or over %d "
                                    "bytes",
                                    KD_FATE_OWNER_MAX);
                if (!err && items[i].src_topic &&
                    strlen(items[i].src_topic) > 255)
                        err =
                            kd_fail(KDELAY_ERR_INVALID_ARG, errstr, errstr_size,
                                    "source topic over 255 bytes");
        }
        return err;
}

void kd_fate_store_destroy(kd_fate_store_t *store)
{
        if (!store)
                return;
        store->ops->destroy(store->impl);
        free(store);
}

void kd_fate_store_interrupt(kd_fate_store_t *store)
{
        if (store)
                store->ops->interrupt(store->impl);
}

uint64_t kd_fate_statements(const kd_fate_store_t *store)
{
        return store->ops->statements(store->impl);
}

kdelay_err_t kd_fate_store_connect(kd_fate_store_t *store, char *errstr,
                                   size_t errstr_size)
{
        return store->ops->connect(store->impl, errstr, errstr_size);
}

kdelay_err_t kd_fate_cancel(kd_fate_store_t *store, const char *id,
                            size_t id_len, char *errstr, size_t errstr_size)
{
        kdelay_err_t err = check_id(id, id_len, errstr, errstr_size);
        if (err)
                return err;
        return store->ops->cancel(store->impl, id, id_len, errstr, errstr_size);
}

kdelay_err_t kd_fate_status(kd_fate_store_t *store, const char *id,
                            size_t id_len, kdelay_status_t *status,
                            char *errstr, size_t errstr_size)
{
        kdelay_err_t err = check_id(id, id_len, errstr, errstr_size);
        if (err)
                return err;
        return store->ops->status(store->impl, id, id_len, status, errstr,
                                  errstr_size);
}

kdelay_err_t kd_fate_claim(kd_fate_store_t *store, kd_fate_claim_t *items,
                           size_t n, const char *owner, char *errstr,
                           size_t errstr_size)
{
        kdelay_err_t err = check_items(items, n, 0, errstr, errstr_size);
        if (err || n == 0)
                return err;
        return store->ops->claim(store->impl, items, n, owner, errstr,
                                 errstr_size);
}

kdelay_err_t kd_fate_takeover(kd_fate_store_t *store, kd_fate_claim_t *items,
                              size_t n, char *errstr, size_t errstr_size)
{
        kdelay_err_t err = check_items(items, n, 1, errstr, errstr_size);
        if (err || n == 0)
                return err;
        return store->ops->takeover(store->impl, items, n, errstr, errstr_size);
}

kdelay_err_t kd_fate_mark_fired(kd_fate_store_t *store, const char *const *ids,
                                const size_t *id_lens, size_t n, char *errstr,
                                size_t errstr_size)
{
        kdelay_err_t err = check_ids(ids, id_lens, n, errstr, errstr_size);
        if (err || n == 0)
                return err;
        return store->ops->mark_fired(store->impl, ids, id_lens, n, errstr,
                                      errstr_size);
}

/* A run prefix (kd_fate_mark_runs): 3..KD_FATE_RUN_PREFIX_MAX bytes,
 * exactly one ':', with bytes on both sides. */
static int run_prefix_ok(const char *prefix)
{
        if (!prefix)
                return 0;
        size_t len = strlen(prefix);
        const char *c = strchr(prefix, ':');
        return len >= 3 && len <= KD_FATE_RUN_PREFIX_MAX && c && c != prefix &&
               c[1] && !strchr(c + 1, ':');
}

kdelay_err_t kd_fate_mark_runs(kd_fate_store_t *store, const char *prefix,
                               const uint64_t *lo, const uint64_t *hi, size_t n,
                               char *errstr, size_t errstr_size)
{
        if (!run_prefix_ok(prefix))
                return kd_fail(KDELAY_ERR_INVALID_ARG, errstr, errstr_size,
                               "run prefix missing, over %d bytes or not "
                               "'<name>:<boot>.<gen>'",
                               KD_FATE_RUN_PREFIX_MAX);
        if (n == 0)
                return KDELAY_OK;
        if (!lo || !hi)
                return kd_fail(KDELAY_ERR_INVALID_ARG, errstr, errstr_size,
                               "no runs");
        for (size_t i = 0; i < n; i++)
                if (lo[i] > hi[i] || (i && lo[i] <= hi[i - 1]))
                        return kd_fail(KDELAY_ERR_INVALID_ARG, errstr,
                                       errstr_size,
                                       "run %zu [%llu, %llu] is empty or "
                                       "not after the one before",
                                       i, (unsigned long long)lo[i],
                                       (unsigned long long)hi[i]);
        return store->ops->mark_runs(store->impl, prefix, lo, hi, n, errstr,
                                     errstr_size);
}

kdelay_err_t kd_fate_schema_version(kd_fate_store_t *store, int *versionp,
                                    char *errstr, size_t errstr_size)
{
        *versionp = 0;
        if (!store->ops->schema_version)
                return KDELAY_OK;
        return store->ops->schema_version(store->impl, versionp, errstr,
                                          errstr_size);
}

/* A store's delete of at most batch rows older than before_ms (runs,
 * unclaimed rows). */
typedef kdelay_err_t (*gc_op_t)(void *impl, int64_t before_ms, int batch,
                                uint64_t *deletedp, char *errstr,
                                size_t errstr_size);

/* op after the checks of a gc call: *deletedp 0, a negative batch
 * refused, an empty one answered without a statement. */
static kdelay_err_t gc_checked(kd_fate_store_t *store, gc_op_t op,
                               int64_t before_ms, int batch, uint64_t *deletedp,
                               char *errstr, size_t errstr_size)
{
        *deletedp = 0;
        if (batch < 0)
                return kd_fail(KDELAY_ERR_INVALID_ARG, errstr, errstr_size,
                               "negative gc batch");
        if (batch == 0)
                return KDELAY_OK;
        return op(store->impl, before_ms, batch, deletedp, errstr, errstr_size);
}

kdelay_err_t kd_fate_gc_runs(kd_fate_store_t *store, int64_t created_before_ms,
                             int batch, uint64_t *deletedp, char *errstr,
                             size_t errstr_size)
{
        return gc_checked(store, store->ops->gc_runs, created_before_ms, batch,
                          deletedp, errstr, errstr_size);
}

/* 1 when reason can stand in a DEAD row: 1..KD_FATE_REASON_MAX bytes of
 * [a-z0-9-] (written into SQL as it is). */
static int reason_ok(const char *reason)
{
        return reason && *reason && strlen(reason) <= KD_FATE_REASON_MAX &&
               strspn(reason, "abcdefghijklmnopqrstuvwxyz0123456789-") ==
                   strlen(reason);
}

kdelay_err_t kd_fate_mark_dead(kd_fate_store_t *store, const char *const *ids,
                               const size_t *id_lens, size_t n,
                               const char *reason, char *errstr,
                               size_t errstr_size)
{
        kdelay_err_t err = check_ids(ids, id_lens, n, errstr, errstr_size);
        if (!err && !reason_ok(reason))
                err = kd_fail(KDELAY_ERR_INVALID_ARG, errstr, errstr_size,
                              "a dead-letter reason of 1..%d bytes of "
                              "[a-z0-9-] is needed",
                              KD_FATE_REASON_MAX);
        if (err || n == 0)
                return err;
        return store->ops->mark_dead(store->impl, ids, id_lens, n, reason,
                                     errstr, errstr_size);
}

kdelay_err_t kd_fate_note_cancelled(kd_fate_store_t *store,
                                    const char *const *ids,
                                    const size_t *id_lens,
                                    const int64_t *fire_ats, size_t n,
                                    char *errstr, size_t errstr_size)
{
        kdelay_err_t err = check_ids(ids, id_lens, n, errstr, errstr_size);
        if (err || n == 0)
                return err;
        return store->ops->note_cancelled(store->impl, ids, id_lens, fire_ats,
                                          n, errstr, errstr_size);
}

kdelay_err_t kd_fate_gc(kd_fate_store_t *store, int64_t due_before_ms,
                        int64_t decided_before_ms, int batch,
                        uint64_t *deletedp, char *errstr, size_t errstr_size)
{
        if (batch < 0)
                return kd_fail(KDELAY_ERR_INVALID_ARG, errstr, errstr_size,
                               "gc batch %d is negative", batch);
        return store->ops->gc(store->impl, due_before_ms, decided_before_ms,
                              batch, deletedp, errstr, errstr_size);
}

kdelay_err_t kd_fate_firing(kd_fate_store_t *store, int64_t updated_before_ms,
                            int64_t updated_after_ms, kd_fate_firing_t *rows,
                            size_t max, size_t *np, char *errstr,
                            size_t errstr_size)
{
        *np = 0;
        if (!rows && max)
                return kd_fail(KDELAY_ERR_INVALID_ARG, errstr, errstr_size,
                               "no room for the rows");
        if (max == 0)
                return KDELAY_OK;
        return store->ops->firing(store->impl, updated_before_ms,
                                  updated_after_ms, rows, max, np, errstr,
                                  errstr_size);
}

kdelay_err_t kd_fate_lookup(kd_fate_store_t *store, const char *const *ids,
                            const size_t *id_lens, size_t n,
                            kdelay_fate_t *fates, char *errstr,
                            size_t errstr_size)
{
        kdelay_err_t err = check_ids(ids, id_lens, n, errstr, errstr_size);
        if (err || n == 0)
                return err;
        for (size_t i = 0; i < n; i++)
                fates[i] = KDELAY_FATE_UNDECIDED;
        return store->ops->lookup(store->impl, ids, id_lens, n, fates, errstr,
                                  errstr_size);
}

kdelay_err_t kd_fate_counts(kd_fate_store_t *store, kd_fate_counts_t *counts,
                            char *errstr, size_t errstr_size)
{
        memset(counts, 0, sizeof(*counts));
        return store->ops->counts(store->impl, counts, errstr, errstr_size);
}

kdelay_err_t kd_fate_apply_unclaimed(kd_fate_store_t *store,
                                     kd_fate_unclaimed_t *items, size_t n,
                                     char *errstr, size_t errstr_size)
{
        kdelay_err_t err = KDELAY_OK;
        for (size_t i = 0; i < n && !err; i++) {
                err =
                    check_id(items[i].id, items[i].id_len, errstr, errstr_size);
                const char *r = items[i].dead_reason;
                if (!err && r && !reason_ok(r))
                        err = kd_fail(KDELAY_ERR_INVALID_ARG, errstr,
                                      errstr_size, "bad dead-letter reason");
                items[i].prior = KD_PRIOR_FIRED;
                items[i].recorded = 0;
        }
        if (err || n == 0)
                return err;
        return store->ops->apply_unclaimed(store->impl, items, n, errstr,
                                           errstr_size);
}

kdelay_err_t kd_fate_unclaimed_list(kd_fate_store_t *store, const char *id,
                                    size_t id_len, int prior,
                                    int64_t applied_after_ms,
                                    kd_fate_unclaimed_row_t *rows, size_t max,
                                    size_t *np, char *errstr,
                                    size_t errstr_size)
{
        *np = 0;
        if (id) {
                kdelay_err_t err = check_id(id, id_len, errstr, errstr_size);
                if (err)
                        return err;
        }
        if (prior < -1 || prior >= KD_PRIORS || (!rows && max))
                return kd_fail(KDELAY_ERR_INVALID_ARG, errstr, errstr_size,
                               "bad prior or no room for the rows");
        if (max == 0)
                return KDELAY_OK;
        return store->ops->unclaimed_list(store->impl, id, id_len, prior,
                                          applied_after_ms, rows, max, np,
                                          errstr, errstr_size);
}

kdelay_err_t kd_fate_gc_unclaimed(kd_fate_store_t *store,
                                  int64_t applied_before_ms, int batch,
                                  uint64_t *deletedp, char *errstr,
                                  size_t errstr_size)
{
        return gc_checked(store, store->ops->gc_unclaimed, applied_before_ms,
                          batch, deletedp, errstr, errstr_size);
}

static kdelay_err_t check_pending_args(const char *journal, const char *by,
                                       char *errstr, size_t errstr_size)
{
        if (journal && (!journal[0] || strlen(journal) > 255))
                return kd_fail(KDELAY_ERR_INVALID_ARG, errstr, errstr_size,
                               "journal topic empty or over 255 bytes");
        if (by && strlen(by) > KD_FATE_OWNER_MAX)
                return kd_fail(KDELAY_ERR_INVALID_ARG, errstr, errstr_size,
                               "marker name over %d bytes", KD_FATE_OWNER_MAX);
        return KDELAY_OK;
}

/* check_pending_args with a journal required (a mark, a clear). */
static kdelay_err_t check_mark_args(const char *journal, const char *by,
                                    char *errstr, size_t errstr_size)
{
        if (!journal)
                return kd_fail(KDELAY_ERR_INVALID_ARG, errstr, errstr_size,
                               "no journal topic");
        return check_pending_args(journal, by, errstr, errstr_size);
}

static void pending_none(kd_fate_pending_t *p)
{
        memset(p, 0, sizeof(*p));
        p->since_ms = p->marked_at_ms = p->marked_age_ms = -1;
}

kdelay_err_t kd_fate_pending_mark(kd_fate_store_t *store, const char *journal,
                                  const char *by, char *errstr,
                                  size_t errstr_size)
{
        kdelay_err_t err = check_mark_args(journal, by, errstr, errstr_size);
        if (err)
                return err;
        return store->ops->pending_mark(store->impl, journal, by, errstr,
                                        errstr_size);
}

kdelay_err_t kd_fate_pending_get(kd_fate_store_t *store, const char *journal,
                                 kd_fate_pending_t *p, char *errstr,
                                 size_t errstr_size)
{
        pending_none(p);
        kdelay_err_t err =
            check_pending_args(journal, NULL, errstr, errstr_size);
        if (err)
                return err;
        return store->ops->pending_get(store->impl, journal, p, errstr,
                                       errstr_size);
}

kdelay_err_t kd_fate_pending_renew(kd_fate_store_t *store, const char *journal,
                                   const char *by, char *errstr,
                                   size_t errstr_size)
{
        kdelay_err_t err = check_mark_args(journal, by, errstr, errstr_size);
        if (err)
                return err;
        return store->ops->pending_renew(store->impl, journal, by, errstr,
                                         errstr_size);
}

kdelay_err_t kd_fate_pending_clear(kd_fate_store_t *store, const char *journal,
                                   uint64_t epoch, const char *by,
                                   int64_t stale_ms, kd_fate_pending_t *p,
                                   char *errstr, size_t errstr_size)
{
        pending_none(p);
        kdelay_err_t err = check_mark_args(journal, by, errstr, errstr_size);
        if (err)
                return err;
        return store->ops->pending_clear(store->impl, journal, epoch, by,
                                         stale_ms, p, errstr, errstr_size);
}
