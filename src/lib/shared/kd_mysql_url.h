/* SPDX-License-Identifier: Apache-2.0 */
/* mysql.url and mysql.ssl_mode parsed (mysql.c): the forms the
 * configuration object keeps of them (kd_conf.h), without the MySQL
 * connector's headers. */
#ifndef KD_MYSQL_URL_H
#define KD_MYSQL_URL_H

#include <stddef.h>

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

#endif
