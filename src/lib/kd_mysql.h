/* MySQL connection settings and connecting (MariaDB Connector/C). */
#ifndef KD_MYSQL_H
#define KD_MYSQL_H

#include <mysql.h>

#include <kdelay/conf.h>
#include <kdelay/error.h>

typedef struct kd_mysql_params {
        char *user;     /* owned */
        char *password; /* owned; NULL = none given */
        char *host;     /* owned */
        unsigned port;  /* 3306 when absent */
        char *db;       /* owned */
} kd_mysql_params_t;

/* Parses mysql://user[:password]@host[:port]/db. User and password may be
 * percent-encoded. On success the caller owns *out (kd_mysql_params_clear). */
kdelay_err_t kd_mysql_url_parse(const char *url, kd_mysql_params_t *out,
                                char *errstr, size_t errstr_size);

void kd_mysql_params_clear(kd_mysql_params_t *p);

/* Connects using conf's mysql.* settings. Password: mysql.password, else the
 * URL's, else the environment variable named by mysql.password_env.
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
