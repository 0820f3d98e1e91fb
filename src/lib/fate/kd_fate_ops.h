/* SPDX-License-Identifier: Apache-2.0 */
/* What an implementation of the fate store provides (in the manner of
 * nng's protocol ops): one table of operations over its private state.
 * kd_fate.h's functions check their arguments, answer empty batches, and
 * then dispatch here, so an operation sees only what it must act on:
 * every id 0..KDELAY_ID_MAX bytes, n > 0, every takeover token non-NULL
 * and at most KD_FATE_OWNER_MAX bytes, batch >= 0. The semantics each
 * operation must give are kd_fate.h's and docs/fate-protocol.md's; the
 * MySQL implementation (fate_mysql.c) is the reference. */
#ifndef KD_FATE_OPS_H
#define KD_FATE_OPS_H

#include "kd_fate.h"

typedef struct kd_fate_ops {
        kdelay_err_t (*connect)(void *impl, char *errstr, size_t errstr_size);
        kdelay_err_t (*cancel)(void *impl, const char *id, size_t id_len,
                               char *errstr, size_t errstr_size);
        kdelay_err_t (*status)(void *impl, const char *id, size_t id_len,
                               kdelay_status_t *status, char *errstr,
                               size_t errstr_size);
        kdelay_err_t (*claim)(void *impl, kd_fate_claim_t *items, size_t n,
                              const char *owner, char *errstr,
                              size_t errstr_size);
        kdelay_err_t (*takeover)(void *impl, kd_fate_claim_t *items, size_t n,
                                 char *errstr, size_t errstr_size);
        kdelay_err_t (*mark_fired)(void *impl, const char *const *ids,
                                   const size_t *id_lens, size_t n,
                                   char *errstr, size_t errstr_size);
        /* prefix checked (kd_fate_mark_runs), n > 0 */
        kdelay_err_t (*mark_runs)(void *impl, const char *prefix,
                                  const uint64_t *lo, const uint64_t *hi,
                                  size_t n, char *errstr, size_t errstr_size);
        kdelay_err_t (*gc_runs)(void *impl, int64_t created_before_ms,
                                int batch, uint64_t *deletedp, char *errstr,
                                size_t errstr_size);
        kdelay_err_t (*mark_dead)(void *impl, const char *const *ids,
                                  const size_t *id_lens, size_t n,
                                  const char *reason, char *errstr,
                                  size_t errstr_size);
        kdelay_err_t (*note_cancelled)(void *impl, const char *const *ids,
                                       const size_t *id_lens,
                                       const int64_t *fire_ats, size_t n,
                                       char *errstr, size_t errstr_size);
        kdelay_err_t (*gc)(void *impl, int64_t due_before_ms,
                           int64_t decided_before_ms, int batch,
                           uint64_t *deletedp, char *errstr,
                           size_t errstr_size);
        kdelay_err_t (*firing)(void *impl, int64_t updated_before_ms,
                               int64_t updated_after_ms, kd_fate_firing_t *rows,
                               size_t max, size_t *np, char *errstr,
                               size_t errstr_size);
        kdelay_err_t (*counts)(void *impl, kd_fate_counts_t *counts,
                               char *errstr, size_t errstr_size);
        kdelay_err_t (*lookup)(void *impl, const char *const *ids,
                               const size_t *id_lens, size_t n,
                               kdelay_fate_t *fates, char *errstr,
                               size_t errstr_size);
        kdelay_err_t (*apply_unclaimed)(void *impl, kd_fate_unclaimed_t *items,
                                        size_t n, char *errstr,
                                        size_t errstr_size);
        kdelay_err_t (*unclaimed_list)(void *impl, const char *id,
                                       size_t id_len, int prior,
                                       int64_t applied_after_ms,
                                       kd_fate_unclaimed_row_t *rows,
                                       size_t max, size_t *np, char *errstr,
                                       size_t errstr_size);
        kdelay_err_t (*gc_unclaimed)(void *impl, int64_t applied_before_ms,
                                     int batch, uint64_t *deletedp,
                                     char *errstr, size_t errstr_size);
        kdelay_err_t (*pending_mark)(void *impl, const char *journal,
                                     const char *by, char *errstr,
                                     size_t errstr_size);
        kdelay_err_t (*pending_get)(void *impl, const char *journal,
                                    kd_fate_pending_t *p, char *errstr,
                                    size_t errstr_size);
        kdelay_err_t (*pending_renew)(void *impl, const char *journal,
                                      const char *by, char *errstr,
                                      size_t errstr_size);
        kdelay_err_t (*pending_clear)(void *impl, const char *journal,
                                      uint64_t epoch, const char *by,
                                      int64_t stale_ms, kd_fate_pending_t *p,
                                      char *errstr, size_t errstr_size);
        /* May be NULL: the store has no schema version (kd_fate.h) */
        kdelay_err_t (*schema_version)(void *impl, int *versionp, char *errstr,
                                       size_t errstr_size);
        uint64_t (*statements)(const void *impl);
        /* Called from another thread while a call may be blocked in the
         * store: that call, and every later one, fails soon. */
        void (*interrupt)(void *impl);
        void (*destroy)(void *impl);
} kd_fate_ops_t;

/* Makes a store of impl driven by ops. ops is borrowed (static); impl is
 * taken in every case: on failure it is destroyed with ops->destroy. */
kdelay_err_t kd_fate_store_wrap(kd_fate_store_t **storep,
                                const kd_fate_ops_t *ops, void *impl);

/* The impl of store when its ops are `ops` (borrowed), else NULL: lets an
 * implementation's own functions refuse a store of another kind. */
void *kd_fate_store_impl(const kd_fate_store_t *store,
                         const kd_fate_ops_t *ops);

/* What every implementation shares about a row (fate_row.c). */

/* The owner a claim item writes when it inserts the row: its token, else
 * the call's owner, at most KD_FATE_OWNER_MAX bytes of it; *lenp gets 0
 * when the row gets no owner (NULL or ""). Borrowed from item or owner. */
const char *kd_fate_claim_owner(const kd_fate_claim_t *item, const char *owner,
                                size_t *lenp);

/* Sets *status to what a status of no row says: UNDECIDED, times -1. */
void kd_fate_status_none(kdelay_status_t *status);

/* What a cancel answers that inserted nothing because a journal is
 * pending, its row (if any) being `fate`: too late or dead as
 * kd_fate_cancel_found says, else KDELAY_ERR_RECONCILING. */
kdelay_err_t kd_fate_cancel_pending(kdelay_fate_t fate, char *errstr,
                                    size_t errstr_size);

/* What a cancel answers that found a row of `fate` already there:
 * KDELAY_OK for CANCELLED, KDELAY_ERR_TOO_LATE for FIRING or FIRED, and
 * for no row (gone between two statements: gc) a retriable
 * KDELAY_ERR_MYSQL. */
kdelay_err_t kd_fate_cancel_found(kdelay_fate_t fate, char *errstr,
                                  size_t errstr_size);

#endif
