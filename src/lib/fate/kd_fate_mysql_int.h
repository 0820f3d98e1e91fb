/* SPDX-License-Identifier: Apache-2.0 */
/* Inside the MySQL fate store: its state and its connection's statement
 * runner (fate_mysql_conn.c), shared by fate_mysql.c (the fate table, the
 * store's operations table), the claim's bound forms (fate_claim_prep.c,
 * fate_claim_bulk.c), fate_unclaimed.c (fires made without a claim,
 * kdelay_unclaimed), fate_firing.c, fate_pending.c and fate_runs.c (runs
 * of delivered claims, kdelay_fired_run). */
#ifndef KD_FATE_MYSQL_INT_H
#define KD_FATE_MYSQL_INT_H

#include <mysql.h>
#include <pthread.h>
#include <string.h>

#include "kd_fate.h"
#include "kd_sql.h"

/* The array-bound claim (fate_claim_bulk.c): its statement and the
 * column arrays of the rows it sends, all in one block. */
typedef struct kd_claim_bulk {
        MYSQL_STMT *stmt; /* owned; NULL = not prepared on conn */
        int off;          /* conn has no bulk operations, or refused */
        /* KDELAY_TEST_CLAIM_BULK_REFUSE: the server error a test makes
         * every bulk execute meet (a refusal: 1047, 1295, 1461); 0 none. */
        unsigned refuse_for_test;
        char *mem; /* owned: the arrays below, cap rows each */
        size_t cap;
        const char **id, **owner, **topic; /* borrowed from the items */
        unsigned long *id_len, *owner_len, *topic_len;
        int64_t *fire_at, *now, *lease_us, *src_offset;
        int32_t *src_partition;
        char *owner_ind, *lease_ind, *src_ind; /* STMT_INDICATOR_* */
} kd_claim_bulk_t;

typedef struct kd_fate_mysql {
        const kdelay_conf_t *conf; /* borrowed */
        MYSQL *conn;               /* owned; NULL = not connected */
        uint64_t statements;
        /* conn's changes and the interrupt flag, so that another thread
         * can shut down the socket of a blocked call
         * (kd_fate_mysql_interrupt). */
        pthread_mutex_t conn_lock;
        int interrupted; /* guarded by conn_lock */
        /* The claim prepared on conn (fate_claim_prep.c): */
        MYSQL_STMT *claim_stmt;  /* owned; NULL = none */
        size_t claim_rows;       /* its row count (0 = none) */
        size_t claim_last;       /* the previous claim's row count */
        MYSQL_BIND *claim_binds; /* owned: claim_cap rows' binds */
        int64_t *claim_lease_us; /* owned: claim_cap rows' leases */
        size_t claim_cap;
        int claim_prep_off;        /* the server refused a prepare on conn */
        unsigned claim_prep_errno; /* the last failed prepare's error */
        kd_claim_bulk_t bulk;
} kd_fate_mysql_t;

/* The order ids are matched to read-back rows in (a sorted index, n log
 * n): by length, then bytes. */
static inline int kd_fate_id_cmp(const char *a, size_t alen, const char *b,
                                 size_t blen)
{
        if (alen != blen)
                return alen < blen ? -1 : 1;
        return memcmp(a, b, alen);
}

/* The connection (fate_mysql_conn.c). */

/* Sends one statement (connecting first if need be); for reads, *resp
 * gets the stored result (the caller frees it). A connection error closes
 * the connection (the next call reconnects). */
kdelay_err_t kd_fate_mysql_stmt(kd_fate_mysql_t *store, kd_sql_t *sql,
                                const char *what, MYSQL_RES **resp,
                                char *errstr, size_t errstr_size);
/* kd_fate_mysql_stmt, but with dupp a duplicate-key error is none:
 * *dupp says whether it came (dupp NULL: an error, as there). */
kdelay_err_t kd_fate_mysql_stmt_dup(kd_fate_mysql_t *store, kd_sql_t *sql,
                                    const char *what, MYSQL_RES **resp,
                                    int *dupp, char *errstr,
                                    size_t errstr_size);

/* Connects when not connected (checking the schema). */
kdelay_err_t kd_fate_mysql_connect(kd_fate_mysql_t *store, char *errstr,
                                   size_t errstr_size);

/* The error of a failed statement (errno no, message msg): a broken
 * connection (or a read-only server) is closed, so the next call
 * reconnects; a missing table is KDELAY_ERR_SCHEMA. */
kdelay_err_t kd_fate_mysql_fail_no(kd_fate_mysql_t *store, const char *what,
                                   unsigned no, const char *msg, char *errstr,
                                   size_t errstr_size);

/* The kd_fate_ops_t interrupt: shuts the socket down under a blocked call
 * (it fails at once with "lost connection"), and no call reconnects
 * afterwards. A connect in progress ends by its own timeout
 * (mysql.connect_timeout). */
void kd_fate_mysql_interrupt(void *impl);

/* Closes the prepared claim (fate_claim_prep.c), as its connection goes
 * or after it failed (prepared again). */
void kd_fate_mysql_prep_close(kd_fate_mysql_t *store);
/* Closes the array-bound claim (fate_claim_bulk.c), as its connection
 * goes or after a failed execute (prepared again). */
void kd_fate_mysql_bulk_close(kd_fate_mysql_t *store);
/* 1 when a prepare's or bulk execute's error no says the server will
 * not do it on this connection (max_prepared_stmt_count reached, no
 * prepared statements or bulk command there), not a passing failure. */
int kd_fate_mysql_prep_refusal(unsigned no);
/* The server refused a claim's prepare (max_prepared_stmt_count
 * reached, a proxy without prepared statements; why: its error): text
 * claims on this connection, said once. */
void kd_fate_mysql_prep_refused(kd_fate_mysql_t *store, const char *why);

/* The claim's bound forms (fate_claim_prep.c, fate_claim_bulk.c). */

/* The claim's INSERT of n items as a prepared statement
 * (fate_claim_prep.c), or first as one array-bound row where the server
 * runs those: 0 when not used for this n (the caller sends it as text);
 * 1 when tried: *errp its result, *affectedp the rows it added. */
int kd_fate_mysql_prep_claim(kd_fate_mysql_t *store,
                             const kd_fate_claim_t *items, size_t n,
                             const char *owner, int64_t now,
                             uint64_t *affectedp, kdelay_err_t *errp,
                             char *errstr, size_t errstr_size);
/* The claim's INSERT of n items as one array-bound row
 * (fate_claim_bulk.c): 0 when not used (the server has no bulk
 * operations: the caller claims n rows another way); 1 when tried: *errp
 * its result, *affectedp the rows it added. */
int kd_fate_mysql_bulk_claim(kd_fate_mysql_t *store,
                             const kd_fate_claim_t *items, size_t n,
                             const char *owner, int64_t now,
                             uint64_t *affectedp, kdelay_err_t *errp,
                             char *errstr, size_t errstr_size);
/* Closes the array-bound claim and frees its arrays (the store's
 * destroy). */
void kd_fate_mysql_bulk_free(kd_fate_mysql_t *store);
/* Closes the prepared claim and frees its buffers (the store's
 * destroy). */
void kd_fate_mysql_prep_free(kd_fate_mysql_t *store);

/* The kd_fate_ops_t entries of fate_unclaimed.c (kd_fate.h says what each
 * does). */
kdelay_err_t kd_fate_mysql_apply_unclaimed(void *impl,
                                           kd_fate_unclaimed_t *items, size_t n,
                                           char *errstr, size_t errstr_size);
kdelay_err_t kd_fate_mysql_unclaimed_list(void *impl, const char *id,
                                          size_t id_len, int prior,
                                          int64_t applied_after_ms,
                                          kd_fate_unclaimed_row_t *rows,
                                          size_t max, size_t *np, char *errstr,
                                          size_t errstr_size);
kdelay_err_t kd_fate_mysql_gc_unclaimed(void *impl, int64_t applied_before_ms,
                                        int batch, uint64_t *deletedp,
                                        char *errstr, size_t errstr_size);

/* Runs of delivered claims (fate_runs.c, kdelay_fired_run). */
/* Appends an expression over the kdelay_fate row at hand: 1 when it is
 * FIRING and a run covers it (delivered), else 0. For SELECTs only. The
 * subquery is correlated with the row: one dive when the row is a
 * constant (a primary-key equality: status), but over many rows MariaDB
 * walks each row's prefix from its last run back to the row's seq; those
 * use kd_fate_mysql_add_covered_of. */
void kd_fate_mysql_add_covered(kd_sql_t *sql);
/* Appends an expression over the kdelay_fate row at hand: 0 when it is
 * not FIRING; when it is, 1 or 0 as a run covers it or not if its owner is
 * one of owners[] (n of them, lens[i] bytes each; repeats, NULLs and
 * owners no run can cover are skipped), else NULL (the caller reads the
 * row's owner and asks again with it). Constants only: one dive into
 * kdelay_fired_run's primary key per distinct owner (its subquery is
 * uncorrelated), however many runs of its prefix come after it. */
void kd_fate_mysql_add_covered_of(kd_sql_t *sql, const char *const *owners,
                                  const size_t *lens, size_t n);

/* kd_fate_firing: the runs read once, the FIRING rows in pages, each
 * tested in memory (fate_firing.c). */
kdelay_err_t kd_fate_mysql_firing(void *impl, int64_t updated_before_ms,
                                  int64_t updated_after_ms,
                                  kd_fate_firing_t *rows, size_t max,
                                  size_t *np, char *errstr, size_t errstr_size);
/* kd_fate_counts: the other states by one grouped count, the FIRING rows
 * in pages, each tested in memory (fate_firing.c). */
kdelay_err_t kd_fate_mysql_counts(void *impl, kd_fate_counts_t *counts,
                                  char *errstr, size_t errstr_size);
/* Appends " AND <no run covers a row of owner>" (constants only: for a
 * strict UPDATE's WHERE), or nothing when owner (NULL = none) is not one a
 * run can cover (kd_fate_owner_split). */
void kd_fate_mysql_add_uncovered(kd_sql_t *sql, const char *owner);
/* The kd_fate_ops_t entries of fate_runs.c. */
kdelay_err_t kd_fate_mysql_mark_runs(void *impl, const char *prefix,
                                     const uint64_t *lo, const uint64_t *hi,
                                     size_t n, char *errstr,
                                     size_t errstr_size);
kdelay_err_t kd_fate_mysql_gc_runs(void *impl, int64_t created_before_ms,
                                   int batch, uint64_t *deletedp, char *errstr,
                                   size_t errstr_size);

/* The kd_fate_ops_t entries of fate_pending.c (kdelay_reconcile). */
kdelay_err_t kd_fate_mysql_pending_mark(void *impl, const char *journal,
                                        const char *by, char *errstr,
                                        size_t errstr_size);
kdelay_err_t kd_fate_mysql_pending_get(void *impl, const char *journal,
                                       kd_fate_pending_t *p, char *errstr,
                                       size_t errstr_size);
kdelay_err_t kd_fate_mysql_pending_renew(void *impl, const char *journal,
                                         const char *by, char *errstr,
                                         size_t errstr_size);
kdelay_err_t kd_fate_mysql_pending_clear(void *impl, const char *journal,
                                         uint64_t epoch, const char *by,
                                         int64_t stale_ms, kd_fate_pending_t *p,
                                         char *errstr, size_t errstr_size);

#endif
