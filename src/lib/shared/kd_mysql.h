/* SPDX-License-Identifier: Apache-2.0 */
/* MySQL connection settings and connecting (MariaDB Connector/C). */
#ifndef KD_MYSQL_H
#define KD_MYSQL_H

#include <mysql.h>

#include <kdelay/conf.h>
#include <kdelay/error.h>

#include "kd_mysql_url.h"

/* Connects using conf's mysql.* settings. Password: mysql.password, else the
 * URL's, else mysql.password_file's, else the environment variable named by
 * mysql.password_env. TLS: mysql.ssl_* over the URL's ssl-* parameters; from
 * REQUIRED up a connection without TLS is refused whatever the connector
 * does.
 * KDELAY_ERR_NOT_CONFIGURED without mysql.url. Caller owns *connp
 * (mysql_close). */
kdelay_err_t kd_mysql_connect(const kdelay_conf_t *conf, MYSQL **connp,
                              char *errstr, size_t errstr_size);

/* Runs one statement that returns no rows. */
kdelay_err_t kd_mysql_exec(MYSQL *conn, const char *sql, char *errstr,
                           size_t errstr_size);

/* Maps the last error on conn to a kdelay error and writes its text. */
kdelay_err_t kd_mysql_fail(MYSQL *conn, const char *what, char *errstr,
                           size_t errstr_size);

#endif
