/* SPDX-License-Identifier: Apache-2.0 */
/* MySQL connection settings and connecting (MariaDB Connector/C). */
#define _POSIX_C_SOURCE 200809L
#include "kd_mysql.h"

#include <errmsg.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "kd_conf.h"
#include "kd_log.h"
#include "kd_secret.h"
#include "kd_util.h"

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

void kd_mysql_params_clear(kd_mysql_params_t *p)
{
        free(p->user);
        free(p->password);
        free(p->host);
        free(p->db);
        free(p->ssl_ca);
        free(p->ssl_cert);
        free(p->ssl_key);
        memset(p, 0, sizeof(*p));
}

static const char *const kd_ssl_mode_names[] = {
    [KD_MYSQL_SSL_DISABLED] = "DISABLED",
    [KD_MYSQL_SSL_PREFERRED] = "PREFERRED",
    [KD_MYSQL_SSL_REQUIRED] = "REQUIRED",
    [KD_MYSQL_SSL_VERIFY_CA] = "VERIFY_CA",
    [KD_MYSQL_SSL_VERIFY_IDENTITY] = "VERIFY_IDENTITY"};

int kd_mysql_ssl_mode_parse(const char *s, kd_mysql_ssl_mode_t *out)
{
        for (size_t i = KD_MYSQL_SSL_DISABLED;
             i < KD_ARRAY_LEN(kd_ssl_mode_names); i++) {
                if (s && !strcasecmp(s, kd_ssl_mode_names[i])) {
                        *out = (kd_mysql_ssl_mode_t)i;
                        return 0;
                }
        }
        return -1;
}

/* The last c in [s, end), or NULL. */
static const char *last_in(const char *s, const char *end, char c)
{
        const char *r = NULL;
        for (; s < end; s++)
                if (*s == c)
                        r = s;
        return r;
}

/* One name=value of the URL's query [s, end) into p; the reason on error. */
static const char *query_param(const char *s, const char *end,
                               kd_mysql_params_t *p)
{
        const char *eq = memchr(s, '=', (size_t)(end - s));
        char name[16];
        size_t nlen = eq ? (size_t)(eq - s) : 0;
        if (!eq || nlen == 0 || nlen >= sizeof(name))
                return "each URL parameter must be name=value (ssl-mode, "
                       "ssl-ca, ssl-cert, ssl-key)";
        for (size_t i = 0; i < nlen; i++)
                name[i] = s[i] == '_' ? '-' : s[i];
        name[nlen] = '\0';
        char *value = pct_decode(eq + 1, (size_t)(end - eq - 1));
        if (!value)
                return "bad percent-encoding in a URL parameter";
        char **slot = NULL;
        if (!strcmp(name, "ssl-mode")) {
                int bad =
                    !*value || kd_mysql_ssl_mode_parse(value, &p->ssl_mode);
                free(value);
                return bad ? "ssl-mode must be DISABLED, PREFERRED, REQUIRED, "
                             "VERIFY_CA or VERIFY_IDENTITY"
                           : NULL;
        }
        if (!strcmp(name, "ssl-ca"))
                slot = &p->ssl_ca;
        else if (!strcmp(name, "ssl-cert"))
                slot = &p->ssl_cert;
        else if (!strcmp(name, "ssl-key"))
                slot = &p->ssl_key;
        if (!slot || !*value) {
                free(value);
                return slot ? "an ssl-ca, ssl-cert or ssl-key parameter is "
                              "empty"
                            : "unknown URL parameter (known: ssl-mode, "
                              "ssl-ca, ssl-cert, ssl-key)";
        }
        free(*slot);
        *slot = value;
        return NULL;
}

/* 1 when [s, end) is an IPv6 address's text: hex digits, ':' and '.'
 * (an IPv4 tail), with at least two ':'; the address itself is checked
 * when connecting. */
static int ipv6_text(const char *s, const char *end)
{
        int colons = 0;
        for (; s < end; s++) {
                if (*s == ':')
                        colons++;
                else if (*s != '.' && hexval(*s) < 0)
                        return 0;
        }
        return colons >= 2;
}

/* host[:port] or [IPv6][:port] at [h, end) into p->host (brackets
 * removed) and p->port (3306 when absent); the reason on error. */
static const char *host_port(const char *h, const char *end,
                             kd_mysql_params_t *p)
{
        const char *host = h, *host_end, *pc;
        if (*h == '[') {
                host = h + 1;
                host_end = memchr(host, ']', (size_t)(end - host));
                if (!host_end || !ipv6_text(host, host_end))
                        return "an IPv6 host must be an address in brackets "
                               "(mysql://user@[::1]:3306/db)";
                pc = host_end + 1 < end ? host_end + 1 : NULL;
                if (pc && *pc != ':')
                        return "only :port may follow an IPv6 host's ']'";
        } else {
                pc = memchr(h, ':', (size_t)(end - h));
                if (pc && memchr(pc + 1, ':', (size_t)(end - pc - 1)))
                        return "an IPv6 host must be in brackets "
                               "(mysql://user@[::1]:3306/db)";
                host_end = pc ? pc : end;
        }
        if (host_end == host)
                return "the host is empty";
        p->port = 3306;
        if (pc) {
                int64_t port;
                if (kd_parse_i64(pc + 1, (size_t)(end - pc - 1), &port) ||
                    port < 1 || port > 65535)
                        return "the port must be 1..65535";
                p->port = (unsigned)port;
        }
        p->host = strndup(host, (size_t)(host_end - host));
        return NULL;
}

kdelay_err_t kd_mysql_url_parse(const char *url, kd_mysql_params_t *out,
                                char *errstr, size_t errstr_size)
{
        static const char scheme[] = "mysql://";
        kd_mysql_params_t p = {0};
        const char *bad = NULL;
        char *base = NULL; /* owned: the URL without its query */

        memset(out, 0, sizeof(*out));
        if (!url || strncmp(url, scheme, sizeof(scheme) - 1) != 0) {
                bad = "must start with mysql://";
                goto fail;
        }
        const char *end = url + strlen(url);
        const char *q = strchr(url, '?');
        const char *at0 = last_in(url, q ? q : end, '@');
        if (q && !at0) { /* a '?' in the user or password */
                at0 = last_in(url, end, '@');
                q = at0 ? strchr(at0, '?') : NULL;
        }
        for (const char *a = q; a && a < end;) {
                const char *amp = strchr(a + 1, '&');
                const char *stop = amp ? amp : end;
                if ((bad = query_param(a + 1, stop, &p)))
                        goto fail;
                a = amp;
        }
        if (!(base = strndup(url, q ? (size_t)(q - url) : strlen(url)))) {
                kd_mysql_params_clear(&p);
                return KDELAY_ERR_NO_MEMORY;
        }
        const char *s = base + sizeof(scheme) - 1;
        const char *at = strrchr(s, '@');
        const char *slash = strchr(at ? at : s, '/');
        if (!at || at == s) {
                bad =
                    "needs user@host (mysql://user[:password]@host[:port]/db)";
                goto fail;
        }
        if (!slash || !slash[1] || strchr(slash + 1, '/')) {
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
        if ((bad = host_port(at + 1, slash, &p)))
                goto fail;
        p.db = strdup(slash + 1);
        free(base);
        if (!p.host || !p.db) {
                kd_mysql_params_clear(&p);
                return KDELAY_ERR_NO_MEMORY;
        }
        *out = p;
        return KDELAY_OK;
fail:
        free(base);
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
 * errstr when it cannot be read, is empty, or others may read it. */
static int password_file(const char *path, char *buf, size_t size, char *errstr,
                         size_t errstr_size)
{
        char q[600];
        int fd = kd_secret_open(path);
        if (fd >= 0 && kd_secret_file_check("mysql.password_file", path, fd,
                                            errstr, errstr_size)) {
                close(fd);
                return -1;
        }
        FILE *fp = fd >= 0 ? fdopen(fd, "r") : NULL;
        if (!fp || !fgets(buf, (int)size, fp)) {
                int e = fp ? 0 : errno;
                if (fp)
                        fclose(fp);
                else if (fd >= 0)
                        close(fd);
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

/* Sets conn's TLS options from conf's mysql.ssl_* over the URL's, and the
 * mode in effect into *modep. */
static kdelay_err_t tls_apply(const kdelay_conf_t *conf,
                              const kd_mysql_params_t *p, MYSQL *conn,
                              kd_mysql_ssl_mode_t *modep, char *errstr,
                              size_t errstr_size)
{
        kd_mysql_ssl_mode_t mode =
            conf->mysql_ssl_mode_id ? conf->mysql_ssl_mode_id : p->ssl_mode;
        if (mode == KD_MYSQL_SSL_UNSET)
                mode = KD_MYSQL_SSL_PREFERRED;
        *modep = mode;
        const char *ca = conf->mysql_ssl_ca ? conf->mysql_ssl_ca : p->ssl_ca;
        const char *cert =
            conf->mysql_ssl_cert ? conf->mysql_ssl_cert : p->ssl_cert;
        const char *key =
            conf->mysql_ssl_key ? conf->mysql_ssl_key : p->ssl_key;
        if (mode == KD_MYSQL_SSL_DISABLED)
                return KDELAY_OK;
        if (mode >= KD_MYSQL_SSL_VERIFY_CA && !ca)
                return kd_fail(KDELAY_ERR_CONFIG, errstr, errstr_size,
                               "mysql.ssl_mode %s needs a CA: set "
                               "mysql.ssl_ca or ssl-ca= in the URL",
                               kd_ssl_mode_names[mode]);
        if (!cert != !key)
                return kd_fail(KDELAY_ERR_CONFIG, errstr, errstr_size,
                               "a MySQL client certificate needs both "
                               "mysql.ssl_cert and mysql.ssl_key");
        /* A certificate file must be readable now: the connector's own
         * error for a missing file is vague. */
        const char *files[] = {ca, cert, key};
        const char *what[] = {"mysql.ssl_ca", "mysql.ssl_cert",
                              "mysql.ssl_key"};
        for (size_t i = 0; i < KD_ARRAY_LEN(files); i++) {
                char q[600];
                if (files[i] && access(files[i], R_OK))
                        return kd_fail(KDELAY_ERR_CONFIG, errstr, errstr_size,
                                       "%s %s: %s", what[i],
                                       kd_log_quote(files[i], q, sizeof(q)),
                                       strerror(errno));
        }
        /* Connector/C 3.3: "enforce" only asks for TLS (it falls back to
         * plaintext when the server offers none: kd_mysql_connect checks);
         * a CA given is always checked against the server's chain, in every
         * mode, as MySQL's clients do; verify_server_cert adds the host
         * name. */
        my_bool enforce = 1;
        my_bool verify = mode == KD_MYSQL_SSL_VERIFY_IDENTITY;
        if (mysql_ssl_set(conn, key, cert, ca, NULL, NULL) ||
            mysql_optionsv(conn, MYSQL_OPT_SSL_ENFORCE, &enforce) ||
            mysql_optionsv(conn, MYSQL_OPT_SSL_VERIFY_SERVER_CERT, &verify))
                return kd_fail(KDELAY_ERR_CONFIG, errstr, errstr_size,
                               "the MySQL connector refuses the TLS settings "
                               "(ssl_mode %s)",
                               kd_ssl_mode_names[mode]);
        return KDELAY_OK;
}

/* p's host as a URL writes it: an IPv6 address in brackets. */
static const char *host_text(const kd_mysql_params_t *p, char *buf, size_t size)
{
        if (!strchr(p->host, ':'))
                return p->host;
        snprintf(buf, size, "[%s]", p->host);
        return buf;
}

kdelay_err_t kd_mysql_connect(const kdelay_conf_t *conf, MYSQL **connp,
                              char *errstr, size_t errstr_size)
{
        char from_file[512] = "", hbuf[300];
        kdelay_err_t err;

        if (!conf->mysql_url)
                return kd_fail(KDELAY_ERR_NOT_CONFIGURED, errstr, errstr_size,
                               "no MySQL configured (set mysql.url or pass "
                               "--mysql mysql://user@host:port/db)");
        const kd_mysql_params_t *p = &conf->mysql_params; /* parsed when set */
        const char *password = conf->mysql_password;
        if (!password)
                password = p->password;
        if (!password && conf->mysql_password_file) {
                if (password_file(conf->mysql_password_file, from_file,
                                  sizeof(from_file), errstr, errstr_size))
                        return KDELAY_ERR_CONFIG;
                password = from_file;
        }
        if (!password && conf->mysql_password_env)
                password = getenv(conf->mysql_password_env);

        MYSQL *conn = mysql_init(NULL);
        if (!conn)
                return kd_fail(KDELAY_ERR_NO_MEMORY, errstr, errstr_size,
                               "cannot start a MySQL connection: out of "
                               "memory");
        kd_mysql_ssl_mode_t mode = KD_MYSQL_SSL_PREFERRED;
        if ((err = tls_apply(conf, p, conn, &mode, errstr, errstr_size))) {
                mysql_close(conn);
                return err;
        }
        unsigned timeout = (unsigned)conf->mysql_connect_timeout_s;
        unsigned rw_timeout = 30;
        mysql_optionsv(conn, MYSQL_OPT_CONNECT_TIMEOUT, &timeout);
        mysql_optionsv(conn, MYSQL_OPT_READ_TIMEOUT, &rw_timeout);
        mysql_optionsv(conn, MYSQL_OPT_WRITE_TIMEOUT, &rw_timeout);
        mysql_optionsv(conn, MYSQL_SET_CHARSET_NAME, "utf8mb4");
        /* kdelay's statements are written for REPEATABLE READ, the
         * servers' default: a cancel's INSERT ... SELECT then locks the
         * kdelay_reconcile rows it reads (docs/fate-protocol.md). A server
         * set to READ COMMITTED gets it for these sessions all the same. */
        mysql_optionsv(conn, MYSQL_INIT_COMMAND,
                       "SET SESSION TRANSACTION ISOLATION LEVEL REPEATABLE "
                       "READ");
        /* Force TCP even for "localhost": the URL names a host and port. */
        unsigned proto = MYSQL_PROTOCOL_TCP;
        mysql_optionsv(conn, MYSQL_OPT_PROTOCOL, &proto);
        int connected = mysql_real_connect(conn, p->host, p->user, password,
                                           p->db, p->port, NULL, 0) != NULL;
        /* The file's copy of the secret is not kept. */
        for (volatile char *c = from_file; c < from_file + sizeof(from_file);
             c++)
                *c = '\0';
        if (!connected) {
                err =
                    kd_fail(KDELAY_ERR_MYSQL, errstr, errstr_size,
                            "cannot connect to MySQL at %s:%u as %s "
                            "(db %s, ssl_mode %s): %s",
                            host_text(p, hbuf, sizeof(hbuf)), p->port, p->user,
                            p->db, kd_ssl_mode_names[mode], mysql_error(conn));
                mysql_close(conn);
                return err;
        }
        /* The connector may fall back to plaintext when the server offers
         * no TLS; from REQUIRED up that is refused here. */
        if (mode >= KD_MYSQL_SSL_REQUIRED && !mysql_get_ssl_cipher(conn)) {
                err = kd_fail(KDELAY_ERR_MYSQL, errstr, errstr_size,
                              "cannot connect to MySQL at %s:%u: ssl_mode "
                              "%s, but the server offers no TLS",
                              host_text(p, hbuf, sizeof(hbuf)), p->port,
                              kd_ssl_mode_names[mode]);
                mysql_close(conn);
                return err;
        }
        /* Each fate statement must be durable on its own, whatever the
         * server's default (a DBA may set autocommit=0). */
        if (mysql_autocommit(conn, 1)) {
                err = kd_mysql_fail(conn, "enable autocommit", errstr,
                                    errstr_size);
                mysql_close(conn);
                return err;
        }
        char qhost[300], qdb[200];
        kd_log(conf, KDELAY_LOG_DEBUG,
               "event=mysql_connected host=%s port=%u db=%s",
               kd_log_quote(p->host, qhost, sizeof(qhost)), p->port,
               kd_log_quote(p->db, qdb, sizeof(qdb)));
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
