/* SPDX-License-Identifier: Apache-2.0 */
/* Integration: how kdelay reaches MySQL.
 *
 * - TLS: on a stack that serves TLS only (stack.sh --mysql-tls on, which
 *   exports KDELAY_MYSQL_CA), the stack's URL (VERIFY_IDENTITY with the
 *   CA) connects; a wrong CA fails with the TLS error; plaintext is
 *   refused; mysql.ssl_mode overrides the URL. On a plaintext stack,
 *   REQUIRED is refused with "offers no TLS".
 * - Least privilege: each binary runs as a user holding only what
 *   `kdelayctl db grants --role R` prints (migrate, forwarder, admin, gc):
 *   migrate, schedule, cancel, fire, status and gc all work, and a role
 *   doing another's work is denied.
 * - Secrets: kdelayctl gets its password from KDELAY_MYSQL_PASSWORD, the
 *   forwarder from mysql.password=file:PATH (mode 0600); its password is
 *   neither in /proc/PID/cmdline nor in its log. */
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "it_env.h"
#include "kd_test.h"
#include "kd_util.h"

static char *out, *err;

/* Runs kdelayctl with the args (NULL-ended), then --brokers, --mysql url
 * and -X topic_prefix=prefix (default "kd"), with
 * KDELAY_MYSQL_PASSWORD=password when password is set. Output in out/err;
 * its exit status. */
static int ctl_as(const char *url, const char *password, const char *prefix,
                  ...)
{
        char pw[128];
        char *env[] = {pw, NULL};
        snprintf(pw, sizeof(pw), "KDELAY_MYSQL_PASSWORD=%s",
                 password ? password : "");
        it_ctl_opts_t o = {.bin = KDELAY_CTL,
                           .prefix = prefix ? prefix : "kd",
                           .url = url,
                           .env = password ? env : NULL};
        va_list ap;
        va_start(ap, prefix);
        int rc = it_ctl_withv(&o, &out, &err, ap);
        va_end(ap);
        return rc;
}

/* ctl_as with the NULL that ends the arguments. */
#define CTL(url, password, prefix, ...)                                        \
        ctl_as(url, password, prefix, __VA_ARGS__, (const char *)NULL)

/* s holds needle (s may be NULL: nothing printed). */
static int has(const char *s, const char *needle)
{
        return s && strstr(s, needle);
}

/* The stack's URL without its query, with `query` ("" or "?...") added. */
static void url_with_query(const char *query, char *buf, size_t size)
{
        const char *url = it_mysql_url();
        const char *at = strrchr(url, '@');
        const char *q = strchr(at ? at : url, '?');
        snprintf(buf, size, "%.*s%s", (int)(q ? q - url : (long)strlen(url)),
                 url, query);
}

static void test_tls_modes(void)
{
        const char *ca = getenv("KDELAY_MYSQL_CA");
        char url[1024], q[700];
        if (!ca) {
                /* A plaintext server: TLS demanded is refused, never a
                 * silent plaintext connection. */
                printf("\n  plaintext stack: REQUIRED and VERIFY_CA refused\n");
                url_with_query("?ssl-mode=REQUIRED", url, sizeof(url));
                CU_ASSERT_EQUAL(CTL(url, NULL, NULL, "db", "version"), 1);
                CU_ASSERT(has(err, "offers no TLS"));
                url_with_query("?ssl-mode=VERIFY_CA", url, sizeof(url));
                CU_ASSERT_NOT_EQUAL(CTL(url, NULL, NULL, "db", "version"), 0);
                CU_ASSERT(has(err, "needs a CA"));
                return;
        }
        printf("\n  TLS stack, CA %s\n", ca);
        /* The stack's URL: VERIFY_IDENTITY with its CA. */
        CU_ASSERT_PTR_NOT_NULL(strstr(it_mysql_url(), "VERIFY_IDENTITY"));
        CU_ASSERT_EQUAL(CTL(it_mysql_url(), NULL, NULL, "db", "version"), 0);
        /* Another CA: the server's chain does not verify. */
        char other[600];
        snprintf(other, sizeof(other), "%.*s/other-ca.pem",
                 (int)(strrchr(ca, '/') - ca), ca);
        snprintf(q, sizeof(q), "?ssl-mode=VERIFY_CA&ssl-ca=%s", other);
        url_with_query(q, url, sizeof(url));
        CU_ASSERT_EQUAL(CTL(url, NULL, NULL, "db", "version"), 1);
        CU_ASSERT(has(err, "ssl_mode VERIFY_CA"));
        CU_ASSERT(has(err, "certificate"));
        printf("  wrong CA: %s", err ? err : "(nothing)\n");
        /* Plaintext: the server requires secure transport. */
        url_with_query("?ssl-mode=DISABLED", url, sizeof(url));
        CU_ASSERT_EQUAL(CTL(url, NULL, NULL, "db", "version"), 1);
        printf("  plaintext: %s", err ? err : "(nothing)\n");
        /* REQUIRED without a CA: encrypted, unverified. */
        url_with_query("?ssl-mode=REQUIRED", url, sizeof(url));
        CU_ASSERT_EQUAL(CTL(url, NULL, NULL, "db", "version"), 0);
        /* mysql.ssl_mode overrides the URL's. */
        CU_ASSERT_EQUAL(CTL(it_mysql_url(), NULL, NULL, "db", "version", "-X",
                            "mysql.ssl_mode=DISABLED"),
                        1);
        /* A CA file that cannot be read is named. */
        url_with_query("?ssl-mode=VERIFY_CA&ssl-ca=/nonexistent/ca.pem", url,
                       sizeof(url));
        CU_ASSERT_NOT_EQUAL(CTL(url, NULL, NULL, "db", "version"), 0);
        CU_ASSERT(has(err, "/nonexistent/ca.pem"));
}

/* The grants of role for user, run as the stack's user on db. */
static int grant(MYSQL *conn, const char *db_url, const char *role,
                 const char *user)
{
        char spec[128];
        snprintf(spec, sizeof(spec), "%s@127.0.0.1", user);
        if (CTL(db_url, NULL, NULL, "db", "grants", "--role", role, "--user",
                spec) != 0)
                return -1;
        int grants = 0;
        for (char *line = strtok(out, "\n"); line; line = strtok(NULL, "\n")) {
                if (!strncmp(line, "--", 2))
                        continue;
                if (mysql_query(conn, line)) {
                        fprintf(stderr, "%s: %s\n", line, mysql_error(conn));
                        return -1;
                }
                grants++;
        }
        printf("  role %s: %d GRANT statements\n", role, grants);
        return grants > 0 ? 0 : -1;
}

static void test_least_privilege(void)
{
        enum { MIGRATE, FWD, ADMIN, GC, ROLES };
        static const char *const roles[] = {"migrate", "forwarder", "admin",
                                            "gc"};
        char prefix[40], group[64], db[64], root_url[1024], target[96];
        char user[ROLES][40], pw[ROLES][40], url[ROLES][1024], sql[256];
        it_unique(prefix, sizeof(prefix), "itlp");
        it_unique(db, sizeof(db), "kdit_lp");
        snprintf(group, sizeof(group), "%s-group", prefix);
        snprintf(target, sizeof(target), "%s.target", prefix);
        CU_ASSERT_EQUAL_FATAL(it_db_create(db, 0, root_url, sizeof(root_url)),
                              0);
        MYSQL *conn = it_mysql_connect();
        CU_ASSERT_PTR_NOT_NULL_FATAL(conn);
        for (int r = 0; r < ROLES; r++) {
                snprintf(user[r], sizeof(user[r]), "kdlp%d_%s", (int)getpid(),
                         roles[r]);
                snprintf(pw[r], sizeof(pw[r]), "pw-%s-%d", roles[r],
                         (int)getpid());
                CU_ASSERT_EQUAL_FATAL(
                    it_mysql_url_as(user[r], NULL, db, url[r], sizeof(url[r])),
                    0);
                snprintf(sql, sizeof(sql),
                         "CREATE USER '%s'@'127.0.0.1' IDENTIFIED BY '%s'",
                         user[r], pw[r]);
                CU_ASSERT_EQUAL_FATAL(mysql_query(conn, sql), 0);
        }
        /* The schema, by the migrate role; the others' grants name its
         * tables, so they come after. */
        CU_ASSERT_EQUAL_FATAL(grant(conn, root_url, "migrate", user[MIGRATE]),
                              0);
        CU_ASSERT_EQUAL(CTL(url[MIGRATE], pw[MIGRATE], prefix, "db", "migrate"),
                        0);
        CU_ASSERT_EQUAL(CTL(url[FWD], pw[FWD], prefix, "db", "migrate"), 1);
        for (int r = FWD; r < ROLES; r++)
                CU_ASSERT_EQUAL_FATAL(grant(conn, root_url, roles[r], user[r]),
                                      0);

        CU_ASSERT_EQUAL_FATAL(it_tiers_create(prefix, root_url, 2), 0);
        CU_ASSERT_EQUAL_FATAL(it_create_topic(target, 2), 0);
        /* The forwarder as documented (docs/security.md): its password by
         * reference to a file only its user may read. */
        char pw_file[64], pw_ref[96];
        snprintf(pw_file, sizeof(pw_file), "/tmp/kdit-fwpw-%d", (int)getpid());
        FILE *fp = fopen(pw_file, "w");
        CU_ASSERT_PTR_NOT_NULL_FATAL(fp);
        fprintf(fp, "%s\n", pw[FWD]);
        fclose(fp);
        CU_ASSERT_EQUAL(chmod(pw_file, 0600), 0);
        snprintf(pw_ref, sizeof(pw_ref), "mysql.password=file:%s", pw_file);
        it_fwd_t f = {.instance = "fwLp", .pid = -1};
        const char *props[] = {"forwarder.hold_horizon=2s", pw_ref, NULL};
        CU_ASSERT_EQUAL_FATAL(
            it_fwd_start(&f, KDELAY_FORWARDER, prefix, group, url[FWD], props),
            0);
        CU_ASSERT_EQUAL_FATAL(
            it_wait_log(f.log, "event=partitions_assigned", 30000), 0);
        /* Nothing of the password on its command line. */
        char proc[64], cmdline[4096];
        snprintf(proc, sizeof(proc), "/proc/%d/cmdline", (int)f.pid);
        fp = fopen(proc, "r");
        CU_ASSERT_PTR_NOT_NULL_FATAL(fp);
        size_t n = fread(cmdline, 1, sizeof(cmdline) - 1, fp);
        fclose(fp);
        CU_ASSERT(n > 0);
        CU_ASSERT_PTR_NULL(memmem(cmdline, n, pw[FWD], strlen(pw[FWD])));
        CU_ASSERT_PTR_NOT_NULL(memmem(cmdline, n, pw_file, strlen(pw_file)));

        /* The admin schedules two tasks and cancels one. */
        char id_fire[80], id_cancel[80];
        snprintf(id_fire, sizeof(id_fire), "%s-fire", prefix);
        snprintf(id_cancel, sizeof(id_cancel), "%s-cancel", prefix);
        CU_ASSERT_EQUAL(CTL(url[ADMIN], pw[ADMIN], prefix, "schedule",
                            "--topic", target, "--value", "v", "--delay", "3s",
                            "--id", id_fire),
                        0);
        CU_ASSERT_EQUAL(CTL(url[ADMIN], pw[ADMIN], prefix, "schedule",
                            "--topic", target, "--value", "v", "--delay", "3s",
                            "--id", id_cancel),
                        0);
        CU_ASSERT_EQUAL(CTL(url[ADMIN], pw[ADMIN], prefix, "cancel", id_cancel),
                        0);
        const char *topics[] = {target, NULL};
        CU_ASSERT_EQUAL(it_wait_records(topics, 1, 40000), 1);
        /* The fire is recorded before the FIRED mark is batched: wait for
         * the mark through status. */
        int64_t deadline = kd_now_ms() + 20000;
        int fired = 0;
        while (!fired && kd_now_ms() < deadline) {
                if (CTL(url[ADMIN], pw[ADMIN], prefix, "status", id_fire) ==
                        0 &&
                    has(out, "FIRED"))
                        fired = 1;
                else
                        usleep(200 * 1000);
        }
        CU_ASSERT(fired);
        CU_ASSERT_EQUAL(CTL(url[ADMIN], pw[ADMIN], prefix, "status", id_cancel),
                        0);
        CU_ASSERT(has(out, "CANCELLED"));
        CU_ASSERT_EQUAL(it_wait_records(topics, 2, 3000), 1);

        /* gc by its own role; the admin may not delete. */
        CU_ASSERT_EQUAL(CTL(url[GC], pw[GC], prefix, "db", "gc"), 0);
        CU_ASSERT_EQUAL(CTL(url[ADMIN], pw[ADMIN], prefix, "db", "gc"), 1);
        CU_ASSERT(has(err, "DELETE command denied"));
        /* The forwarder met no denial, and never logged its password. */
        CU_ASSERT_EQUAL(it_log_count(f.log, "denied"), 0);
        CU_ASSERT_EQUAL(it_fwd_stop(&f, SIGTERM), 0);
        CU_ASSERT_EQUAL(it_log_count(f.log, pw[FWD]), 0);
        CU_ASSERT(it_log_count(f.log, "event=") > 0);
        unlink(pw_file);

        for (int r = 0; r < ROLES; r++) {
                snprintf(sql, sizeof(sql), "DROP USER '%s'@'127.0.0.1'",
                         user[r]);
                CU_ASSERT_EQUAL(mysql_query(conn, sql), 0);
        }
        mysql_close(conn);
        it_db_drop(db);
}

int main(void)
{
        static const kd_test_case_t cases[] = {KD_TEST(test_tls_modes),
                                               KD_TEST(test_least_privilege),
                                               KD_TEST_END};
        int rc = kd_test_run("mysql_access", cases, it_env_init, NULL);
        free(out);
        free(err);
        return rc;
}
