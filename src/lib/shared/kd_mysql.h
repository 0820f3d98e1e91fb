/* SPDX-License-Identifier: Apache-2.0 */
/* MySQL connection settings and connecting (MariaDB Connector/C). */
#ifndef KD_MYSQL_H
#define KD_MYSQL_H

#include <mysql.h>

#include <kdelay/conf.h>
#include <kdelay/error.h>

/* mysql.ssl_mode, as MySQL's clients name them (docs/security.md). */
typedef enum kd_mysql_ssl_mode {
        KD_MYSQL_SSL_UNSET,     /* not given: PREFERRED */
        KD_MYSQL_SSL_DISABLED,  /* plaintext */
        KD_MYSQL_SSL_PREFERRED, /* TLS when the server offers it, unverified */
        KD_MYSQL_SSL_REQUIRED,  /* TLS or no connection, unverified */
        KD_MYSQL_SSL_VERIFY_CA, /* TLS, the server's chain checked against
                                   mysql.ssl_ca */
        KD_MYSQL_SSL_VERIFY_IDENTITY /* VERIFY_CA and the host name */
} kd_mysql_ssl_mode_t;

/* The mode named s (case-insensitive); -1 for an unknown name. */
int kd_mysql_ssl_mode_parse(const char *s, kd_mysql_ssl_mode_t *out);

typedef struct kd_mysql_params {
        char *user;     /* owned */
        char *password; /* owned; NULL = none given */
        char *host;     /* owned */
        unsigned port;  /* 3306 when absent */
        char *db;       /* owned */
        /* From the URL's query (?ssl-mode=...&ssl-ca=...): */
        kd_mysql_ssl_mode_t ssl_mode;
        char *ssl_ca;   /* owned; NULL = none */
        char *ssl_cert; /* owned; NULL = none */
        char *ssl_key;  /* owned; NULL = none */
} kd_mysql_params_t;

/* Parses mysql://user[:password]@host[:port]/db[?name=value&...] (host
 * may be an IPv6 address in brackets, [::1], stored without them) with the
 * query names ssl-mode, ssl-ca, ssl-cert and ssl-key ('_' for '-' too).
 * User, password and query values may be percent-encoded. On success the
 * caller owns *out (kd_mysql_params_clear). */
kdelay_err_t kd_mysql_url_parse(const char *url, kd_mysql_params_t *out,
                                char *errstr, size_t errstr_size);

void kd_mysql_params_clear(kd_mysql_params_t *p);

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
