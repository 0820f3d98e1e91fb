/* SPDX-License-Identifier: Apache-2.0 */
/* The MySQL fate store's connection (kd_fate_mysql_int.h): opened on
 * first use (the schema checked), closed after an error that leaves it
 * broken or on a read-only server, so that the next call reconnects, and
 * shut down under a blocked call from another thread; statements are sent
 * on it one at a time. What is prepared on a connection lives and dies
 * with it: the claim's statements (fate_claim_prep.c, fate_claim_bulk.c)
 * are closed here when it goes, and a server's refusal of them holds until
 * then. Below every other file of the store, which send through it. */
#include "kd_fate_mysql_int.h"

#include <errmsg.h>
#include <mysql.h>
#include <mysqld_error.h>
#include <pthread.h>
#include <sys/socket.h>

#include "kd_log.h"
#include "kd_mysql.h"
#include "kd_schema.h"
#include "kd_util.h"

void kd_fate_mysql_prep_close(kd_fate_mysql_t *store)
{
        if (store->claim_stmt)
                mysql_stmt_close(store->claim_stmt);
        store->claim_stmt = NULL;
        store->claim_rows = 0;
}

void kd_fate_mysql_bulk_close(kd_fate_mysql_t *store)
{
        kd_claim_bulk_t *b = &store->bulk;
        if (b->stmt)
                mysql_stmt_close(b->stmt);
        b->stmt = NULL;
}

int kd_fate_mysql_prep_refusal(unsigned no)
{
        return no == ER_MAX_PREPARED_STMT_COUNT_REACHED ||
               no == ER_UNSUPPORTED_PS || no == ER_UNKNOWN_COM_ERROR;
}

void kd_fate_mysql_prep_refused(kd_fate_mysql_t *store, const char *why)
{
        char q[600];
        store->claim_prep_off = 1;
        store->bulk.off = 1;
        kd_log(store->conf, KDELAY_LOG_WARNING,
               "event=claim_prepare_failed err=%s action=text_claims",
               kd_log_quote(why, q, sizeof(q)));
}

/* A new connection (or none): the claim's statements prepared on the old
 * one are closed, and a refusal of them is forgotten (the new one may
 * allow them). */
static void claim_stmts_forget(kd_fate_mysql_t *my)
{
        kd_fate_mysql_prep_close(my);
        kd_fate_mysql_bulk_close(my);
        my->bulk.off = 0;
        my->claim_prep_off = 0;
}

/* Sets my->conn (NULL closes it) where kd_fate_mysql_interrupt cannot
 * race. 0, or -1 when interrupted (conn is closed then). */
static int conn_set(kd_fate_mysql_t *my, MYSQL *conn)
{
        pthread_mutex_lock(&my->conn_lock);
        MYSQL *old = my->conn;
        int interrupted = my->interrupted;
        my->conn = interrupted ? NULL : conn;
        pthread_mutex_unlock(&my->conn_lock);
        if (old != conn)
                claim_stmts_forget(my); /* prepared on old */
        if (old && old != conn)
                mysql_close(old);
        if (interrupted && conn)
                mysql_close(conn);
        return interrupted ? -1 : 0;
}

void kd_fate_mysql_interrupt(void *impl)
{
        kd_fate_mysql_t *my = impl;
        pthread_mutex_lock(&my->conn_lock);
        my->interrupted = 1;
        if (my->conn) {
                my_socket fd = mysql_get_socket(my->conn);
                if (fd >= 0)
                        shutdown(fd, SHUT_RDWR);
        }
        pthread_mutex_unlock(&my->conn_lock);
}

kdelay_err_t kd_fate_mysql_connect(kd_fate_mysql_t *my, char *errstr,
                                   size_t errstr_size)
{
        if (my->conn)
                return KDELAY_OK;
        pthread_mutex_lock(&my->conn_lock);
        int interrupted = my->interrupted;
        pthread_mutex_unlock(&my->conn_lock);
        if (interrupted)
                return kd_fail(KDELAY_ERR_MYSQL, errstr, errstr_size,
                               "store interrupted");
        MYSQL *conn;
        kdelay_err_t err =
            kd_mysql_connect(my->conf, &conn, errstr, errstr_size);
        if (err)
                return err;
        if ((err = kd_schema_check(conn, errstr, errstr_size))) {
                mysql_close(conn);
                return err;
        }
        if (conn_set(my, conn))
                return kd_fail(KDELAY_ERR_MYSQL, errstr, errstr_size,
                               "store interrupted");
        return KDELAY_OK;
}

/* "The MySQL server is running with the --read-only option" and "Running
 * in read-only mode", by number: not every client library names both. */
#define KD_ER_OPTION_PREVENTS_STATEMENT 1290
#define KD_ER_READ_ONLY_MODE            1836

kdelay_err_t kd_fate_mysql_fail_no(kd_fate_mysql_t *store, const char *what,
                                   unsigned no, const char *msg, char *errstr,
                                   size_t errstr_size)
{
        /* The message first: msg may live in what a lost connection's
         * close frees. */
        kdelay_err_t err =
            no == ER_NO_SUCH_TABLE
                ? kd_fail(KDELAY_ERR_SCHEMA, errstr, errstr_size,
                          "%s: fate table missing: run `kdelayctl db "
                          "migrate`",
                          what)
                : kd_fail(KDELAY_ERR_MYSQL, errstr, errstr_size,
                          "%s: MySQL error %u: %s", what, no, msg);
        /* A read-only server (1290, 1836) is a demoted primary: after a
         * failover by a virtual IP or DNS name, only a new connection
         * reaches the new primary. */
        if ((no >= CR_MIN_ERROR && no <= CR_MAX_ERROR) ||
            no == ER_SERVER_SHUTDOWN || no == ER_CONNECTION_KILLED ||
            no == KD_ER_OPTION_PREVENTS_STATEMENT ||
            no == KD_ER_READ_ONLY_MODE) {
                kd_log(store->conf, KDELAY_LOG_WARNING,
                       "event=mysql_disconnected errno=%u", no);
                conn_set(store, NULL);
        }
        return err;
}

/* After a failed statement: forget a broken connection so the next call
 * reconnects; map the error. */
static kdelay_err_t stmt_fail(kd_fate_mysql_t *store, const char *what,
                              char *errstr, size_t errstr_size)
{
        return kd_fate_mysql_fail_no(store, what, mysql_errno(store->conn),
                                     mysql_error(store->conn), errstr,
                                     errstr_size);
}

kdelay_err_t kd_fate_mysql_stmt_dup(kd_fate_mysql_t *store, kd_sql_t *sql,
                                    const char *what, MYSQL_RES **resp,
                                    int *dupp, char *errstr, size_t errstr_size)
{
        if (sql->oom)
                return KDELAY_ERR_NO_MEMORY;
        kdelay_err_t err = kd_fate_mysql_connect(store, errstr, errstr_size);
        if (err)
                return err;
        store->statements++;
        if (dupp)
                *dupp = 0;
        if (mysql_real_query(store->conn, sql->buf, sql->len)) {
                if (dupp && mysql_errno(store->conn) == ER_DUP_ENTRY) {
                        *dupp = 1;
                        return KDELAY_OK;
                }
                return stmt_fail(store, what, errstr, errstr_size);
        }
        if (resp) {
                *resp = mysql_store_result(store->conn);
                if (!*resp)
                        return stmt_fail(store, what, errstr, errstr_size);
        }
        return KDELAY_OK;
}

kdelay_err_t kd_fate_mysql_stmt(kd_fate_mysql_t *store, kd_sql_t *sql,
                                const char *what, MYSQL_RES **resp,
                                char *errstr, size_t errstr_size)
{
        return kd_fate_mysql_stmt_dup(store, sql, what, resp, NULL, errstr,
                                      errstr_size);
}
