/* SPDX-License-Identifier: Apache-2.0 */
/* The binaries' shared command-line helpers (src/common/cli.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "kd_test.h"

static const char *const subs[] = {"migrate", "version", "gc", NULL};

/* Runs kd_cli_subverb on argv, with stdout and stderr going to a temporary
 * file whose text lands in out. Returns its result; *rcp its exit code. */
static int subverb(int argc, char **argv, kd_cli_t *cli, int *rcp, char *out,
                   size_t out_size)
{
        FILE *tmp = tmpfile();
        CU_ASSERT_PTR_NOT_NULL_FATAL(tmp);
        fflush(stdout);
        fflush(stderr);
        int saved_out = dup(1), saved_err = dup(2);
        dup2(fileno(tmp), 1);
        dup2(fileno(tmp), 2);
        *rcp = -100;
        int sub = kd_cli_subverb(cli, "kdelayctl db", subs, "HELP TEXT\n", argc,
                                 argv, rcp);
        fflush(stdout);
        fflush(stderr);
        dup2(saved_out, 1);
        dup2(saved_err, 2);
        close(saved_out);
        close(saved_err);
        rewind(tmp);
        size_t n = fread(out, 1, out_size - 1, tmp);
        out[n] = '\0';
        fclose(tmp);
        return sub;
}

static void test_subverb_known(void)
{
        char out[4096];
        int rc;
        kd_cli_t cli;
        char *argv[] = {"db", "gc", "--batch", "5", NULL};
        CU_ASSERT_EQUAL(subverb(4, argv, &cli, &rc, out, sizeof(out)), 2);
        CU_ASSERT_STRING_EQUAL(cli.prog, "kdelayctl db gc");
        CU_ASSERT_STRING_EQUAL(out, "");
        CU_ASSERT_EQUAL(rc, -100); /* untouched */
        kd_cli_clear(&cli);

        char *first[] = {"db", "migrate", NULL};
        CU_ASSERT_EQUAL(subverb(2, first, &cli, &rc, out, sizeof(out)), 0);
        CU_ASSERT_STRING_EQUAL(cli.prog, "kdelayctl db migrate");
        kd_cli_clear(&cli);
}

static void test_subverb_help(void)
{
        char out[4096];
        int rc;
        kd_cli_t cli;
        char *argv[] = {"db", "--help", NULL};
        CU_ASSERT_EQUAL(subverb(2, argv, &cli, &rc, out, sizeof(out)), -1);
        CU_ASSERT_EQUAL(rc, KD_EXIT_OK);
        CU_ASSERT_EQUAL(strncmp(out, "HELP TEXT\nCommon options", 24), 0);

        char *shrt[] = {"db", "-h", NULL};
        CU_ASSERT_EQUAL(subverb(2, shrt, &cli, &rc, out, sizeof(out)), -1);
        CU_ASSERT_EQUAL(rc, KD_EXIT_OK);
        CU_ASSERT_PTR_NOT_NULL(strstr(out, "HELP TEXT"));
}

static void test_subverb_usage_errors(void)
{
        char out[4096];
        int rc;
        kd_cli_t cli;
        char *none[] = {"db", NULL};
        CU_ASSERT_EQUAL(subverb(1, none, &cli, &rc, out, sizeof(out)), -1);
        CU_ASSERT_EQUAL(rc, KD_EXIT_USAGE);
        CU_ASSERT_PTR_NOT_NULL(strstr(
            out, "kdelayctl db: expected 'migrate', 'version' or 'gc'\n"));

        char *opt[] = {"db", "--batch", "5", NULL};
        CU_ASSERT_EQUAL(subverb(3, opt, &cli, &rc, out, sizeof(out)), -1);
        CU_ASSERT_EQUAL(rc, KD_EXIT_USAGE);
        CU_ASSERT_PTR_NOT_NULL(strstr(out, "expected 'migrate'"));

        char *unknown[] = {"db", "drop", NULL};
        CU_ASSERT_EQUAL(subverb(2, unknown, &cli, &rc, out, sizeof(out)), -1);
        CU_ASSERT_EQUAL(rc, KD_EXIT_USAGE);
        CU_ASSERT_PTR_NOT_NULL(
            strstr(out, "kdelayctl db: unknown subcommand \"drop\" (expected "
                        "'migrate', 'version' or 'gc')\n"));
        CU_ASSERT_PTR_NOT_NULL(strstr(out, "Try 'kdelayctl db --help'."));
}

/* kdelayctl's common options before the verb, then the verb's own: the
 * later of two wins; the environment below both. */
static void test_leading_options(void)
{
        unsetenv("KDELAY_CONFIG");
        unsetenv("KDELAY_KAFKA_CONFIG");
        setenv("KDELAY_BROKERS", "env-host:1", 1);
        setenv("KDELAY_MYSQL_URL", "mysql://env@env-host/db", 1);
        char *argv[] = {"kdelayctl",         "-b", "lead-host:1", "-X",
                        "topic_prefix=lead", "-v", "status",      "--brokers",
                        "verb-host:1",       "ID", NULL};
        int v = -1;
        CU_ASSERT_EQUAL_FATAL(kd_cli_leading(10, argv, &v), KD_EXIT_OK);
        CU_ASSERT_EQUAL_FATAL(v, 6);
        kd_cli_t cli;
        int argi = -1;
        char buf[256];
        kd_cli_init(&cli, "kdelayctl status");
        CU_ASSERT_EQUAL_FATAL(kd_cli_parse(&cli, 4, argv + 6, "", NULL, NULL,
                                           NULL, "HELP\n", &argi),
                              KD_EXIT_OK);
        CU_ASSERT_EQUAL(argi, 3); /* ID, after the options */
        CU_ASSERT_EQUAL(cli.verbose, 1);
        kdelay_conf_get(cli.conf, "brokers", buf, sizeof(buf));
        CU_ASSERT_STRING_EQUAL(buf, "verb-host:1");
        kdelay_conf_get(cli.conf, "topic_prefix", buf, sizeof(buf));
        CU_ASSERT_STRING_EQUAL(buf, "lead");
        /* The environment's, no option setting it. */
        kdelay_conf_get(cli.conf, "mysql.url", buf, sizeof(buf));
        CU_ASSERT_STRING_EQUAL(buf, "mysql://env@env-host/db");
        kd_cli_clear(&cli);

        /* Only the environment: its broker list. */
        char *plain[] = {"kdelayctl", "status", "ID", NULL};
        CU_ASSERT_EQUAL_FATAL(kd_cli_leading(3, plain, &v), KD_EXIT_OK);
        CU_ASSERT_EQUAL(v, 1);
        kd_cli_init(&cli, "kdelayctl status");
        CU_ASSERT_EQUAL_FATAL(kd_cli_parse(&cli, 2, plain + 1, "", NULL, NULL,
                                           NULL, "HELP\n", &argi),
                              KD_EXIT_OK);
        kdelay_conf_get(cli.conf, "brokers", buf, sizeof(buf));
        CU_ASSERT_STRING_EQUAL(buf, "env-host:1");
        kd_cli_clear(&cli);

        /* Not a common option before the verb; -h; no verb. */
        char *bad[] = {"kdelayctl", "--json", "status", NULL};
        fflush(stderr);
        CU_ASSERT_EQUAL(kd_cli_leading(3, bad, &v), KD_EXIT_USAGE);
        char *help[] = {"kdelayctl", "-b", "h:1", "--help", NULL};
        CU_ASSERT_EQUAL(kd_cli_leading(4, help, &v), KD_CLI_HELP_SHOWN);
        char *none[] = {"kdelayctl", "-b", "h:1", NULL};
        CU_ASSERT_EQUAL(kd_cli_leading(3, none, &v), KD_EXIT_OK);
        CU_ASSERT_EQUAL(v, 3);
        unsetenv("KDELAY_BROKERS");
        unsetenv("KDELAY_MYSQL_URL");
}

/* kd_cli_parse of argv (argv[0] the verb) with stderr going into err;
 * its result. */
static int parse_err(int argc, char **argv, char *err, size_t err_size)
{
        FILE *tmp = tmpfile();
        CU_ASSERT_PTR_NOT_NULL_FATAL(tmp);
        fflush(stderr);
        int saved_err = dup(2);
        dup2(fileno(tmp), 2);
        kd_cli_t cli;
        int argi = -1;
        kd_cli_init(&cli, "kdelayctl status");
        int rc = kd_cli_parse(&cli, argc, argv, "", NULL, NULL, NULL, "HELP\n",
                              &argi);
        kd_cli_clear(&cli);
        fflush(stderr);
        dup2(saved_err, 2);
        close(saved_err);
        rewind(tmp);
        size_t n = fread(err, 1, err_size - 1, tmp);
        err[n] = '\0';
        fclose(tmp);
        return rc;
}

/* --kafka-config and $KDELAY_KAFKA_CONFIG: a file others may read that
 * holds a password is a configuration error (exit 2) naming the file, its
 * mode and the property, never the password; 0600 is read. */
static void test_kafka_config_mode(void)
{
        unsetenv("KDELAY_CONFIG");
        unsetenv("KDELAY_KAFKA_CONFIG");
        char path[] = "/tmp/kdelay-test-cli-XXXXXX", err[1024];
        int fd = mkstemp(path);
        CU_ASSERT_FATAL(fd >= 0);
        static const char text[] = "sasl.mechanisms=PLAIN\n"
                                   "sasl.password=hunter2\n";
        CU_ASSERT_EQUAL_FATAL(write(fd, text, sizeof(text) - 1),
                              (ssize_t)(sizeof(text) - 1));
        close(fd);
        CU_ASSERT_EQUAL_FATAL(chmod(path, 0644), 0);
        char *argv[] = {"status", "--kafka-config", path, "ID", NULL};
        CU_ASSERT_EQUAL(parse_err(4, argv, err, sizeof(err)), KD_EXIT_USAGE);
        CU_ASSERT_PTR_NOT_NULL(strstr(err, path));
        CU_ASSERT_PTR_NOT_NULL(strstr(err, "line 2: sasl.password holds a "
                                           "secret but the file's mode is "
                                           "0644"));
        CU_ASSERT_PTR_NULL(strstr(err, "hunter2"));
        char *plain[] = {"status", "ID", NULL};
        setenv("KDELAY_KAFKA_CONFIG", path, 1);
        CU_ASSERT_EQUAL(parse_err(2, plain, err, sizeof(err)), KD_EXIT_USAGE);
        CU_ASSERT_PTR_NOT_NULL(strstr(err, "$KDELAY_KAFKA_CONFIG: "));
        CU_ASSERT_PTR_NOT_NULL(strstr(err, "0644"));
        CU_ASSERT_PTR_NULL(strstr(err, "hunter2"));
        CU_ASSERT_EQUAL_FATAL(chmod(path, 0600), 0);
        CU_ASSERT_EQUAL(parse_err(2, plain, err, sizeof(err)), KD_EXIT_OK);
        CU_ASSERT_STRING_EQUAL(err, "");
        unsetenv("KDELAY_KAFKA_CONFIG");
        unlink(path);
}

static const kd_test_case_t cases[] = {
    KD_TEST(test_subverb_known),        KD_TEST(test_subverb_help),
    KD_TEST(test_subverb_usage_errors), KD_TEST(test_leading_options),
    KD_TEST(test_kafka_config_mode),    KD_TEST_END,
};

int main(void)
{
        return kd_test_run("cli", cases, NULL, NULL);
}
