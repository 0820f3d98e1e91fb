/* SPDX-License-Identifier: Apache-2.0 */
/* kdelayctl: the admin CLI. Data goes to stdout, diagnostics to stderr.
 * Exit codes: 0 ok, 1 error (audit: findings), 2 usage, 3 too late,
 * 4 no such pending task, 5 dead-lettered (cancel). */
#include <stdio.h>
#include <string.h>

#include <kdelay/kdelay.h>

#include "buildinfo.h"
#include "cli.h"
#include "ctl_verbs.h"

static void usage(FILE *out)
{
        fprintf(out, "Usage: kdelayctl [COMMON OPTIONS] VERB [OPTIONS] "
                     "[ARGS]\n\n"
                     "Verbs:\n");
        kd_ctl_verbs_print(out);
        fprintf(out, "\n'kdelayctl VERB --help' describes a verb and the "
                     "common options\n"
                     "(-c, -b/--brokers, --mysql, --kafka-config, -X, -v, "
                     "-q, --no-headers),\n"
                     "taken before or after the verb; a setting comes from "
                     "the command line,\n"
                     "else $KDELAY_BROKERS, $KDELAY_MYSQL_URL, "
                     "$KDELAY_KAFKA_CONFIG, else the\n"
                     "config file (-c, else $KDELAY_CONFIG), else the "
                     "default.\n"
                     "Every verb takes --json: one JSON document on stdout "
                     "for one answer,\n"
                     "JSON lines (one object per item) for a listing; the "
                     "verb's --help says\n"
                     "which. JSON is always valid UTF-8: each byte that is "
                     "not part of a\n"
                     "well-formed UTF-8 character is written \\ufffd. "
                     "Listings are tables with an\n"
                     "upper-case header row (--no-headers: none). -q: no "
                     "informational lines on\n"
                     "stderr, warnings and errors still.\n"
                     "Exit codes: 0 ok, 1 error (audit: findings), 2 usage "
                     "error, 3 too late\n"
                     "(cancel, reschedule), 4 no pending task has that id "
                     "(tasks find),\n5 the task was dead-lettered "
                     "(cancel).\n");
}

int main(int argc, char **argv)
{
        if (argc < 2) {
                fprintf(stderr, "kdelayctl: a verb is required\n");
                usage(stderr);
                return KD_EXIT_USAGE;
        }
        if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help") ||
            !strcmp(argv[1], "help")) {
                usage(stdout);
                return KD_EXIT_OK;
        }
        if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "version")) {
                kd_build_print(stdout, "kdelayctl");
                return KD_EXIT_OK;
        }
        /* Common options may come before the verb: kdelayctl -b B VERB. */
        int v;
        int rc = kd_cli_leading(argc, argv, &v);
        if (rc == KD_CLI_HELP_SHOWN) {
                usage(stdout);
                return KD_EXIT_OK;
        }
        if (rc != KD_EXIT_OK)
                return rc;
        if (v >= argc) {
                fprintf(stderr, "kdelayctl: a verb is required\n");
                usage(stderr);
                return KD_EXIT_USAGE;
        }
        const kd_ctl_verb_t *verb = kd_ctl_verb_find(argv[v]);
        if (verb)
                return verb->run(argc - v, argv + v);
        fprintf(stderr, "kdelayctl: unknown verb \"%s\"\n", argv[v]);
        usage(stderr);
        return KD_EXIT_USAGE;
}
