/* SPDX-License-Identifier: Apache-2.0 */
/* The claim INSERT as one array-bound row (issue 44): MariaDB's bulk
 * execution (COM_STMT_BULK_EXECUTE, MariaDB Connector/C's
 * STMT_ATTR_ARRAY_SIZE) runs a one-row prepared INSERT once per item of
 * a column-wise array, in one round trip. The server then sets up the
 * statement's nine parameters once instead of nine per row: a catch-up's
 * claim costs MariaDB about a quarter less CPU per row than the prepared
 * claim of n rows (fate_claim_prep.c), and every row count uses the one
 * statement, prepared once per connection.
 *
 * Same columns, INSERT IGNORE and lease by the server's clock as the
 * text claim; the affected rows are the whole array's, as one statement
 * of n rows reports them. A server without bulk operations (MySQL, a
 * proxy) gets the claim of n rows on that connection; one that refuses
 * the prepare, text claims (kd_fate_mysql_prep_refused). The claim of n
 * rows (fate_claim_prep.c) tries this one first; the statement goes with
 * its connection (fate_mysql_conn.c).
 * Two switches for the suite, read as the claim is prepared on a
 * connection: KDELAY_TEST_CLAIM_BULK_OFF (set, any value) turns it off,
 * so that the suite runs the other claim against MariaDB too;
 * KDELAY_TEST_CLAIM_BULK_REFUSE (a refusal's error number) has every bulk
 * execute refused as a proxy that advertises bulk operations but refuses
 * the command would, so that the suite runs the fallback (no server here
 * refuses it). */
#include "kd_fate_mysql_int.h"

#include <stdlib.h>
#include <string.h>

#include "kd_fate_ops.h"

#define BULK_SQL                                                               \
        "INSERT IGNORE INTO kdelay_fate (task_id, state, fire_at_ms, owner, "  \
        "decided_at_ms, updated_at_ms, lease_until, src_topic, "               \
        "src_partition, src_offset) VALUES (?,'FIRING',?,?,?,?,NOW(3) + "      \
        "INTERVAL ? MICROSECOND,?,?,?)"
#define BULK_COLS 9

void kd_fate_mysql_bulk_free(kd_fate_mysql_t *store)
{
        kd_fate_mysql_bulk_close(store);
        free(store->bulk.mem);
        memset(&store->bulk, 0, sizeof(store->bulk));
}

/* Room for n rows in the column arrays (one block: the 8-byte columns,
 * then the 4-byte one, then the indicators); 0, or -1 out of memory. */
static int bulk_room(kd_claim_bulk_t *b, size_t n)
{
        if (n <= b->cap)
                return 0;
        size_t eight = 10 * sizeof(int64_t), four = sizeof(int32_t), one = 3;
        char *mem = calloc(n, eight + four + one);
        if (!mem)
                return -1;
        free(b->mem);
        b->mem = mem;
        b->cap = n;
        b->id = (const char **)mem;
        b->owner = b->id + n;
        b->topic = b->owner + n;
        b->id_len = (unsigned long *)(b->topic + n);
        b->owner_len = b->id_len + n;
        b->topic_len = b->owner_len + n;
        b->fire_at = (int64_t *)(b->topic_len + n);
        b->now = b->fire_at + n;
        b->lease_us = b->now + n;
        b->src_offset = b->lease_us + n;
        b->src_partition = (int32_t *)(b->src_offset + n);
        b->owner_ind = (char *)(b->src_partition + n);
        b->lease_ind = b->owner_ind + n;
        b->src_ind = b->lease_ind + n;
        return 0;
}

/* 1 when conn's server runs bulk operations (MariaDB 10.2.7 and later;
 * not MySQL): MARIADB_STMT_BULK_SUPPORTED, by the public calls. */
static int bulk_supported(MYSQL *conn)
{
        unsigned long caps = 0, ext = 0;
        if (mariadb_get_infov(conn, MARIADB_CONNECTION_SERVER_CAPABILITIES,
                              &caps) ||
            mariadb_get_infov(
                conn, MARIADB_CONNECTION_EXTENDED_SERVER_CAPABILITIES, &ext))
                return 0;
        return !(caps & CLIENT_MYSQL) &&
               (ext &
                (unsigned long)(MARIADB_CLIENT_STMT_BULK_OPERATIONS >> 32));
}

/* KDELAY_TEST_CLAIM_BULK_REFUSE's error number when it is a refusal, else
 * 0. */
static unsigned test_refusal(void)
{
        const char *refuse = getenv("KDELAY_TEST_CLAIM_BULK_REFUSE");
        unsigned no = refuse ? (unsigned)strtoul(refuse, NULL, 10) : 0;
        return kd_fate_mysql_prep_refusal(no) ? no : 0;
}

/* Prepares the one-row claim on the connection: 0 ready, 1 not for this
 * connection (no bulk operations, or the prepare refused), -1 an error
 * (*errp). */
static int bulk_prepare(kd_fate_mysql_t *store, kdelay_err_t *errp,
                        char *errstr, size_t errstr_size)
{
        kd_claim_bulk_t *b = &store->bulk;
        if (getenv("KDELAY_TEST_CLAIM_BULK_OFF") ||
            !bulk_supported(store->conn)) {
                b->off = 1;
                return 1;
        }
        b->refuse_for_test = test_refusal();
        MYSQL_STMT *st = mysql_stmt_init(store->conn);
        if (!st) {
                *errp = kd_fail(KDELAY_ERR_NO_MEMORY, errstr, errstr_size,
                                "claim prepare: out of memory");
                return -1;
        }
        /* Not counted in store->statements: once per connection, like
         * its setup (kd_fate.h, kd_fate_statements). */
        if (mysql_stmt_prepare(st, BULK_SQL, strlen(BULK_SQL))) {
                unsigned no = mysql_stmt_errno(st);
                kdelay_err_t err = kd_fate_mysql_fail_no(
                    store, "claim prepare", no, mysql_stmt_error(st), errstr,
                    errstr_size);
                mysql_stmt_close(st);
                if (!store->conn || !kd_fate_mysql_prep_refusal(no)) {
                        /* lost, or a passing error (a lock wait): the
                         * claim is retried, prepared again */
                        *errp = err;
                        return -1;
                }
                kd_fate_mysql_prep_refused(store, errstr);
                return 1;
        }
        b->stmt = st;
        return 0;
}

static void bind_col(MYSQL_BIND *c, enum enum_field_types type, void *arr,
                     unsigned long *len, char *ind)
{
        memset(c, 0, sizeof(*c));
        c->buffer_type = type;
        c->buffer = arr; /* read only: input arrays, one value per row */
        c->length = len;
        c->u.indicator = ind;
}

/* Fills row i of the arrays from item it. */
static void fill_row(kd_claim_bulk_t *b, size_t i, const kd_fate_claim_t *it,
                     const char *owner, int64_t now)
{
        size_t tlen;
        const char *tok = kd_fate_claim_owner(it, owner, &tlen);
        const char *topic = it->src_topic;
        b->id[i] = it->id;
        b->id_len[i] = (unsigned long)it->id_len;
        b->fire_at[i] = it->fire_at_ms;
        b->owner[i] = tlen ? tok : NULL;
        b->owner_len[i] = (unsigned long)tlen;
        b->owner_ind[i] = tlen ? STMT_INDICATOR_NONE : STMT_INDICATOR_NULL;
        b->now[i] = now;
        b->lease_us[i] = it->lease_ms * 1000;
        b->lease_ind[i] =
            it->lease_ms > 0 ? STMT_INDICATOR_NONE : STMT_INDICATOR_NULL;
        b->topic[i] = topic;
        b->topic_len[i] = topic ? (unsigned long)strlen(topic) : 0;
        b->src_partition[i] = topic ? it->src_partition : 0;
        b->src_offset[i] = topic ? it->src_offset : 0;
        b->src_ind[i] = topic ? STMT_INDICATOR_NONE : STMT_INDICATOR_NULL;
}

int kd_fate_mysql_bulk_claim(kd_fate_mysql_t *store,
                             const kd_fate_claim_t *items, size_t n,
                             const char *owner, int64_t now,
                             uint64_t *affectedp, kdelay_err_t *errp,
                             char *errstr, size_t errstr_size)
{
        kd_claim_bulk_t *b = &store->bulk;
        if (b->off)
                return 0;
        kdelay_err_t err = kd_fate_mysql_connect(store, errstr, errstr_size);
        if (err) {
                *errp = err;
                return 1;
        }
        if (bulk_room(b, n))
                return 0; /* out of memory: the claim of n rows tries */
        if (!b->stmt) {
                int r = bulk_prepare(store, errp, errstr, errstr_size);
                if (r)
                        return r < 0;
        }
        for (size_t i = 0; i < n; i++)
                fill_row(b, i, &items[i], owner, now);
        MYSQL_BIND c[BULK_COLS];
        bind_col(&c[0], MYSQL_TYPE_STRING, b->id, b->id_len, NULL);
        bind_col(&c[1], MYSQL_TYPE_LONGLONG, b->fire_at, NULL, NULL);
        bind_col(&c[2], MYSQL_TYPE_STRING, b->owner, b->owner_len,
                 b->owner_ind);
        bind_col(&c[3], MYSQL_TYPE_LONGLONG, b->now, NULL, NULL);
        bind_col(&c[4], MYSQL_TYPE_LONGLONG, b->now, NULL, NULL);
        bind_col(&c[5], MYSQL_TYPE_LONGLONG, b->lease_us, NULL, b->lease_ind);
        bind_col(&c[6], MYSQL_TYPE_STRING, b->topic, b->topic_len, b->src_ind);
        bind_col(&c[7], MYSQL_TYPE_LONG, b->src_partition, NULL, b->src_ind);
        bind_col(&c[8], MYSQL_TYPE_LONGLONG, b->src_offset, NULL, b->src_ind);
        unsigned int rows = (unsigned int)n;
        MYSQL_STMT *st = b->stmt;
        store->statements++;
        if (b->refuse_for_test ||
            mysql_stmt_attr_set(st, STMT_ATTR_ARRAY_SIZE, &rows) ||
            mysql_stmt_bind_param(st, c) || mysql_stmt_execute(st)) {
                unsigned no = b->refuse_for_test ? b->refuse_for_test
                                                 : mysql_stmt_errno(st);
                if (kd_fate_mysql_prep_refusal(no)) {
                        /* Advertised but refused (a proxy): the claim of
                         * n rows, now and on this connection. Rows the
                         * refused call may have written read back as
                         * ours (INSERT IGNORE, then the read-back). */
                        kd_fate_mysql_bulk_close(store);
                        b->off = 1;
                        return 0;
                }
                /* Prepared again next time (a schema change, a lost
                 * connection: kd_fate_mysql_fail_no closes that one). */
                *errp = kd_fate_mysql_fail_no(store, "claim", no,
                                              mysql_stmt_error(st), errstr,
                                              errstr_size);
                kd_fate_mysql_bulk_close(store);
                return 1;
        }
        *affectedp = (uint64_t)mysql_stmt_affected_rows(st);
        *errp = KDELAY_OK;
        return 1;
}
