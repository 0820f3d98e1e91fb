/* The binaries' shared command-line helpers (src/common/cli.c). */
#include <stdio.h>
#include <string.h>
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
        CU_ASSERT_EQUAL(strncmp(out, "HELP TEXT\nCommon options:", 25), 0);

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

static const kd_test_case_t cases[] = {
    KD_TEST(test_subverb_known),
    KD_TEST(test_subverb_help),
    KD_TEST(test_subverb_usage_errors),
    KD_TEST_END,
};

int main(void)
{
        return kd_test_run("cli", cases, NULL, NULL);
}
