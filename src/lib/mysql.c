/* MySQL connection settings and connecting (MariaDB Connector/C). */
#define _POSIX_C_SOURCE 200809L
#include "kd_mysql.h"

#include <errmsg.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kd_conf.h"
#include "kd_log.h"
#include "kd_util.h"

void kd_mysql_params_clear(kd_mysql_params_t *p)
{
        free(p->user);
        free(p->password);
        free(p->host);
        free(p->db);
        memset(p, 0, sizeof(*p));
}

static int hexval(char c)
{
        if (c >= '0' && c <= '9')
                return c - '0';
        if (c >= 'a' && c <= 'f')
                return c - 'a' + 10;
        if (c >= 'A' && c <= 'F')
                return c - 'A' + 10;
        return -1;
}

/* Percent-decodes s[0..len) into a new string; NULL on bad escape/OOM. */
static char *pct_decode(const char *s, size_t len)
{
        char *out = malloc(len + 1);
        size_t o = 0;
        if (!out)
                return NULL;
        for (size_t i = 0; i < len; i++) {
                if (s[i] == '%') {
                        int hi, lo;
                        if (i + 2 >= len) {
                                free(out);
                                return NULL;
                        }
                        hi = hexval(s[i + 1]);
                        lo = hexval(s[i + 2]);
                        if (hi < 0 || lo < 0 || (hi == 0 && lo == 0)) {
                                free(out);
                                return NULL;
                        }
                        out[o++] = (char)(hi * 16 + lo);
                        i += 2;
                } else {
                        out[o++] = s[i];
                }
        }
        out[o] = '\0';
        return out;
}

kdelay_err_t kd_mysql_url_parse(const char *url, kd_mysql_params_t *out,
                                char *errstr, size_t errstr_size)
{
        static const char scheme[] = "mysql://";
        kd_mysql_params_t p = {0};
        const char *bad = NULL;

        memset(out, 0, sizeof(*out));
        if (!url || strncmp(url, scheme, sizeof(scheme) - 1) != 0) {
                bad = "must start with mysql://";
                goto fail;
        }
        const char *s = url + sizeof(scheme) - 1;
        const char *at = strrchr(s, '@');
        const char *slash = strchr(at ? at : s, '/');
        if (!at || at == s) {
                bad =
                    "needs user@host (mysql://user[:password]@host[:port]/db)";
                goto fail;
        }
        if (!slash || !slash[1] || strchr(slash + 1, '/') ||
            strchr(slash + 1, '?')) {
                bad = "needs a database name after the host (/db)";
                goto fail;
        }
        const char *colon = memchr(s, ':', (size_t)(at - s));
        size_t ulen = colon ? (size_t)(colon - s) : (size_t)(at - s);
        if (ulen == 0) {
                bad = "the user name is empty";
                goto fail;
        }
        p.user = pct_decode(s, ulen);
        if (colon)
                p.password = pct_decode(colon + 1, (size_t)(at - colon - 1));
        if (!p.user || (colon && !p.password)) {
                bad = "bad percent-encoding in user or password";
                goto fail;
        }
        const char *h = at + 1;
        const char *pc = memchr(h, ':', (size_t)(slash - h));
        size_t hlen = pc ? (size_t)(pc - h) : (size_t)(slash - h);
        if (hlen == 0) {
                bad = "the host is empty";
                goto fail;
        }
        p.host = strndup(h, hlen);
        p.port = 3306;
        if (pc) {
                int64_t port;
                if (kd_parse_i64(pc + 1, (size_t)(slash - pc - 1), &port) ||
                    port < 1 || port > 65535) {
                        bad = "the port must be 1..65535";
                        goto fail;
                }
                p.port = (unsigned)port;
        }
        p.db = strdup(slash + 1);
        if (!p.host || !p.db) {
                kd_mysql_params_clear(&p);
                return KDELAY_ERR_NO_MEMORY;
        }
        *out = p;
        return KDELAY_OK;
fail:
        kd_mysql_params_clear(&p);
        return kd_fail(KDELAY_ERR_CONFIG, errstr, errstr_size, "mysql.url: %s",
                       bad);
}

kdelay_err_t kd_mysql_fail(MYSQL *conn, const char *what, char *errstr,
                           size_t errstr_size)
{
        return kd_fail(KDELAY_ERR_MYSQL, errstr, errstr_size,
                       "%s: MySQL error %u: %s", what, mysql_errno(conn),
                       mysql_error(conn));
}

/* The first line of path (a secret: never logged) into buf; -1 with
 * errstr when it cannot be read or is empty. */
static int password_file(const char *path, char *buf, size_t size, char *errstr,
                         size_t errstr_size)
{
        FILE *fp = fopen(path, "r");
        char q[600];
        if (!fp || !fgets(buf, (int)size, fp)) {
                int e = fp ? 0 : errno;
                if (fp)
                        fclose(fp);
                kd_fail(KDELAY_ERR_CONFIG, errstr, errstr_size,
                        "cannot read mysql.password_file %s: %s",
                        kd_log_quote(path, q, sizeof(q)),
                        e ? strerror(e) : "empty");
                return -1;
        }
        fclose(fp);
        buf[strcspn(buf, "\r\n")] = '\0';
        return 0;
}

kdelay_err_t kd_mysql_connect(const kdelay_conf_t *conf, MYSQL **connp,
                              char *errstr, size_t errstr_size)
{
        char from_file[512] = "";
        kd_mysql_params_t p;
        kdelay_err_t err;

        if (!conf->mysql_url)
                return kd_fail(KDELAY_ERR_NOT_CONFIGURED, errstr, errstr_size,
                               "no MySQL configured (set mysql.url or pass "
                               "--mysql mysql://user@host:port/db)");
        if ((err =
                 kd_mysql_url_parse(conf->mysql_url, &p, errstr, errstr_size)))
                return err;
        const char *password = conf->mysql_password;
        if (!password)
                password = p.password;
        if (!password && conf->mysql_password_file) {
                if (password_file(conf->mysql_password_file, from_file,
                                  sizeof(from_file), errstr, errstr_size)) {
                        kd_mysql_params_clear(&p);
                        return KDELAY_ERR_CONFIG;
                }
                password = from_file;
        }
        if (!password && conf->mysql_password_env)
                password = getenv(conf->mysql_password_env);

        MYSQL *conn = mysql_init(NULL);
        if (!conn) {
                kd_mysql_params_clear(&p);
                return kd_fail(KDELAY_ERR_NO_MEMORY, errstr, errstr_size,
                               "cannot start a MySQL connection: out of "
                               "memory");
        }
        unsigned timeout = (unsigned)conf->mysql_connect_timeout_s;
        unsigned rw_timeout = 30;
        mysql_optionsv(conn, MYSQL_OPT_CONNECT_TIMEOUT, &timeout);
        mysql_optionsv(conn, MYSQL_OPT_READ_TIMEOUT, &rw_timeout);
        mysql_optionsv(conn, MYSQL_OPT_WRITE_TIMEOUT, &rw_timeout);
        mysql_optionsv(conn, MYSQL_SET_CHARSET_NAME, "utf8mb4");
        /* Force TCP even for "localhost": the URL names a host and port. */
        unsigned proto = MYSQL_PROTOCOL_TCP;
        mysql_optionsv(conn, MYSQL_OPT_PROTOCOL, &proto);
        int connected = mysql_real_connect(conn, p.host, p.user, password, p.db,
                                           p.port, NULL, 0) != NULL;
        /* The file's copy of the secret is not kept. */
        for (volatile char *c = from_file; c < from_file + sizeof(from_file);
             c++)
                *c = '\0';
        if (!connected) {
                err = kd_fail(KDELAY_ERR_MYSQL, errstr, errstr_size,
                              "cannot connect to MySQL at %s:%u as %s "
                              "(db %s): %s",
                              p.host, p.port, p.user, p.db, mysql_error(conn));
                mysql_close(conn);
                kd_mysql_params_clear(&p);
                return err;
        }
        /* Each fate statement must be durable on its own, whatever the
         * server's default (a DBA may set autocommit=0). */
        if (mysql_autocommit(conn, 1)) {
                err = kd_mysql_fail(conn, "enable autocommit", errstr,
                                    errstr_size);
                mysql_close(conn);
                kd_mysql_params_clear(&p);
                return err;
        }
        char qhost[300], qdb[200];
        kd_log(conf, KDELAY_LOG_DEBUG,
               "event=mysql_connected host=%s port=%u db=%s",
               kd_log_quote(p.host, qhost, sizeof(qhost)), p.port,
               kd_log_quote(p.db, qdb, sizeof(qdb)));
        kd_mysql_params_clear(&p);
        *connp = conn;
        return KDELAY_OK;
}

kdelay_err_t kd_mysql_exec(MYSQL *conn, const char *sql, char *errstr,
                           size_t errstr_size)
{
        if (mysql_query(conn, sql))
                return kd_mysql_fail(conn, "query", errstr, errstr_size);
        MYSQL_RES *res = mysql_store_result(conn);
        if (res)
                mysql_free_result(res);
        return KDELAY_OK;
}
