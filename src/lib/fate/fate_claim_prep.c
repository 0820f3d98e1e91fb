/* SPDX-License-Identifier: Apache-2.0 */
/* The claim INSERT as a server-side prepared statement (issue 24): the
 * server parses a claim of n rows once per connection instead of once per
 * batch, and ids, owners and topics travel as bytes in the binary
 * protocol instead of hex. The statement is the text claim's (fate_mysql.c
 * my_claim) with a placeholder for every value: same columns, same
 * INSERT IGNORE, the lease by the server's clock.
 *
 * One statement is kept, for one row count: a claim of the same count as
 * the one before it (a catch-up's full batches) prepares it; other counts
 * go as text, so an on-time trickle of odd sizes never pays a prepare. A
 * server that refuses the prepare gets text claims on that connection.
 * A claim of the rows this form takes goes first as one array-bound row
 * where the server runs those (fate_claim_bulk.c): this file calls that
 * one, never the other way round. Both statements go with their
 * connection (fate_mysql_conn.c). */
#include "kd_fate_mysql_int.h"

#include <stdlib.h>
#include <string.h>

#include "kd_fate_ops.h"

/* Placeholders per row: task_id, fire_at_ms, owner, decided_at_ms,
 * updated_at_ms, the lease in microseconds, src_topic, src_partition,
 * src_offset. */
#define PREP_COLS 9
/* Smaller claims go as text: a prepare pays only for repeated batches. */
#define PREP_MIN_ROWS 32
/* The protocol's limit is 65,535 placeholders per statement. */
#define PREP_MAX_ROWS (65535 / PREP_COLS)

#define PREP_HEAD                                                              \
        "INSERT IGNORE INTO kdelay_fate (task_id, state, fire_at_ms, owner, "  \
        "decided_at_ms, updated_at_ms, lease_until, src_topic, "               \
        "src_partition, src_offset) VALUES "
#define PREP_ROW "(?,'FIRING',?,?,?,?,NOW(3) + INTERVAL ? MICROSECOND,?,?,?)"

void kd_fate_mysql_prep_free(kd_fate_mysql_t *store)
{
        kd_fate_mysql_prep_close(store);
        free(store->claim_binds);
        free(store->claim_lease_us);
        store->claim_binds = NULL;
        store->claim_lease_us = NULL;
        store->claim_cap = 0;
}

/* Room for the binds of n rows; 0, or -1 out of memory. */
static int prep_room(kd_fate_mysql_t *store, size_t n)
{
        if (n <= store->claim_cap)
                return 0;
        MYSQL_BIND *b = calloc(n * PREP_COLS, sizeof(*b));
        int64_t *lease = calloc(n, sizeof(*lease));
        if (!b || !lease) {
                free(b);
                free(lease);
                return -1;
        }
        free(store->claim_binds);
        free(store->claim_lease_us);
        store->claim_binds = b;
        store->claim_lease_us = lease;
        store->claim_cap = n;
        return 0;
}

/* Prepares the claim of n rows on the connection. */
static kdelay_err_t prep_new(kd_fate_mysql_t *store, size_t n, char *errstr,
                             size_t errstr_size)
{
        kd_sql_t sql = {0};
        store->claim_prep_errno = 0;
        kd_sql_add(&sql, "%s", PREP_HEAD);
        for (size_t i = 0; i < n; i++)
                kd_sql_add(&sql, "%s%s", i ? "," : "", PREP_ROW);
        if (sql.oom) {
                free(sql.buf);
                return kd_fail(KDELAY_ERR_NO_MEMORY, errstr, errstr_size,
                               "claim prepare: out of memory");
        }
        MYSQL_STMT *st = mysql_stmt_init(store->conn);
        if (!st) {
                free(sql.buf);
                return kd_fail(KDELAY_ERR_NO_MEMORY, errstr, errstr_size,
                               "claim prepare: out of memory");
        }
        store->statements++;
        if (mysql_stmt_prepare(st, sql.buf, sql.len)) {
                free(sql.buf);
                store->claim_prep_errno = mysql_stmt_errno(st);
                kdelay_err_t err = kd_fate_mysql_fail_no(
                    store, "claim prepare", store->claim_prep_errno,
                    mysql_stmt_error(st), errstr, errstr_size);
                mysql_stmt_close(st);
                return err;
        }
        free(sql.buf);
        store->claim_stmt = st;
        store->claim_rows = n;
        return KDELAY_OK;
}

static void bind_bytes(MYSQL_BIND *b, enum enum_field_types type, const void *p,
                       size_t len)
{
        memset(b, 0, sizeof(*b));
        b->buffer_type = p ? type : MYSQL_TYPE_NULL;
        b->buffer = (void *)p; /* read only: an input parameter */
        b->buffer_length = (unsigned long)len;
}

/* The binds of row i of the claim. */
static void bind_row(kd_fate_mysql_t *store, const kd_fate_claim_t *it,
                     size_t i, const char *owner, const int64_t *now)
{
        MYSQL_BIND *b = &store->claim_binds[i * PREP_COLS];
        int64_t *lease = &store->claim_lease_us[i];
        size_t tlen;
        const char *tok = kd_fate_claim_owner(it, owner, &tlen);
        *lease = it->lease_ms * 1000;
        bind_bytes(&b[0], MYSQL_TYPE_STRING, it->id, it->id_len);
        bind_bytes(&b[1], MYSQL_TYPE_LONGLONG, &it->fire_at_ms, 0);
        bind_bytes(&b[2], MYSQL_TYPE_STRING, tlen ? tok : NULL, tlen);
        bind_bytes(&b[3], MYSQL_TYPE_LONGLONG, now, 0);
        bind_bytes(&b[4], MYSQL_TYPE_LONGLONG, now, 0);
        bind_bytes(&b[5], MYSQL_TYPE_LONGLONG, it->lease_ms > 0 ? lease : NULL,
                   0);
        const char *topic = it->src_topic;
        bind_bytes(&b[6], MYSQL_TYPE_STRING, topic, topic ? strlen(topic) : 0);
        bind_bytes(&b[7], MYSQL_TYPE_LONG, topic ? &it->src_partition : NULL,
                   0);
        bind_bytes(&b[8], MYSQL_TYPE_LONGLONG, topic ? &it->src_offset : NULL,
                   0);
}

int kd_fate_mysql_prep_claim(kd_fate_mysql_t *store,
                             const kd_fate_claim_t *items, size_t n,
                             const char *owner, int64_t now,
                             uint64_t *affectedp, kdelay_err_t *errp,
                             char *errstr, size_t errstr_size)
{
        size_t last = store->claim_last;
        store->claim_last = n;
        if (n >= PREP_MIN_ROWS && n <= PREP_MAX_ROWS &&
            kd_fate_mysql_bulk_claim(store, items, n, owner, now, affectedp,
                                     errp, errstr, errstr_size))
                return 1;
        if (n < PREP_MIN_ROWS || n > PREP_MAX_ROWS || store->claim_prep_off ||
            (n != store->claim_rows && n != last))
                return 0;
        kdelay_err_t err = kd_fate_mysql_connect(store, errstr, errstr_size);
        if (err) {
                *errp = err;
                return 1;
        }
        if (prep_room(store, n))
                return 0; /* out of memory: the text claim tries */
        if (n != store->claim_rows) {
                kd_fate_mysql_prep_close(store);
                err = prep_new(store, n, errstr, errstr_size);
                if (err && !store->conn) { /* lost: the claim is retried */
                        *errp = err;
                        return 1;
                }
                if (err &&
                    !kd_fate_mysql_prep_refusal(store->claim_prep_errno)) {
                        *errp = err; /* passing (a lock wait): retried */
                        return 1;
                }
                if (err) {
                        kd_fate_mysql_prep_refused(store, errstr);
                        return 0;
                }
        }
        for (size_t i = 0; i < n; i++)
                bind_row(store, &items[i], i, owner, &now);
        MYSQL_STMT *st = store->claim_stmt;
        store->statements++;
        if (mysql_stmt_bind_param(st, store->claim_binds) ||
            mysql_stmt_execute(st)) {
                /* Prepared again next time (a schema change, a lost
                 * connection: kd_fate_mysql_fail_no closes that one). */
                *errp = kd_fate_mysql_fail_no(
                    store, "claim", mysql_stmt_errno(st), mysql_stmt_error(st),
                    errstr, errstr_size);
                kd_fate_mysql_prep_close(store);
                return 1;
        }
        *affectedp = (uint64_t)mysql_stmt_affected_rows(st);
        *errp = KDELAY_OK;
        return 1;
}
