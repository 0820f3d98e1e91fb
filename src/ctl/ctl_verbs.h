/* SPDX-License-Identifier: Apache-2.0 */
/* kdelayctl's verbs and sub-verbs, from one table (ctl_verbs.c): main's
 * dispatch, its usage listing and its "unknown verb" error, and each
 * verb's sub-verb choice (kd_ctl_subverb) read it; tools/kd_clidoc.sh
 * builds the man page and the completions from the --help it prints. */
#ifndef KD_CTL_VERBS_H
#define KD_CTL_VERBS_H

#include <stddef.h>
#include <stdio.h>

#include "cli.h"

typedef struct kd_ctl_verb {
        const char *verb;
        const char *sub; /* NULL: the verb's own row */
        /* The verb's row: its handler, given the verb's own argv (argv[0]
         * = the verb); it picks its sub-verb with kd_ctl_subverb. NULL on
         * a sub-verb's row. */
        int (*run)(int argc, char **argv);
        /* The verb's row: its line in `kdelayctl --help`'s verb table.
         * A sub-verb's row: NULL (the verb's --help describes it). */
        const char *summary;
} kd_ctl_verb_t;

/* The verb row of name, or NULL when there is none. */
const kd_ctl_verb_t *kd_ctl_verb_find(const char *name);

/* The verb table of `kdelayctl --help`: "  VERB  SUMMARY" per verb. */
void kd_ctl_verbs_print(FILE *out);

/* The sub-verb of `kdelayctl VERB SUB [OPTIONS]` among verb's rows
 * (kd_cli_subverb: cli gets prog "kdelayctl VERB SUB"). Returns SUB's
 * name as the table spells it, or NULL with *rcp the exit code (help
 * shown, or a usage error said). */
const char *kd_ctl_subverb(kd_cli_t *cli, const char *verb, const char *help,
                           int argc, char **argv, int *rcp);

#endif
