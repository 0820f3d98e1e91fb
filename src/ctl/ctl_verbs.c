/* SPDX-License-Identifier: Apache-2.0 */
/* kdelayctl's verbs and sub-verbs (ctl_verbs.h): the one table. */
#include "ctl_verbs.h"

#include <string.h>

#include "ctl.h"

/* A verb's row, then its sub-verbs' rows in the order its --help and
 * "expected ..." errors name them. */
static const kd_ctl_verb_t kd_ctl_verbs[] = {
    {"schedule", NULL, kd_ctl_schedule, "schedule a task, print its id"},
    {"cancel", NULL, kd_ctl_cancel, "cancel a task (exit 3 when too late)"},
    {"status", NULL, kd_ctl_status, "show a task's fate"},
    {"tasks", NULL, kd_ctl_tasks,
     "find or list pending tasks in the tier topics"},
    {"tasks", "find", NULL, NULL},
    {"tasks", "list", NULL, NULL},
    {"reschedule", NULL, kd_ctl_reschedule,
     "move a pending task to another time"},
    {"audit", NULL, kd_ctl_audit,
     "resolve stuck claims, find stalled partitions"},
    {"topics", NULL, kd_ctl_topics, "create or check the tier and dead topics"},
    {"topics", "create", NULL, NULL},
    {"topics", "check", NULL, NULL},
    {"db", NULL, kd_ctl_db, "migrate or show the MySQL schema, gc, grants"},
    {"db", "migrate", NULL, NULL},
    {"db", "version", NULL, NULL},
    {"db", "gc", NULL, NULL},
    {"db", "grants", NULL, NULL},
    {"tiers", NULL, kd_ctl_tiers, "plan: Kafka writes per task of the ladder"},
    {"tiers", "plan", NULL, NULL},
    {"stats", NULL, kd_ctl_stats, "backlog per tier, group members, fate rows"},
    {"dead", NULL, kd_ctl_dead, "list dead letters of a window, by reason"},
    {"dead", "list", NULL, NULL},
    {"dead", "replay", NULL, NULL},
};

#define KD_CTL_VERB_CNT (sizeof(kd_ctl_verbs) / sizeof(kd_ctl_verbs[0]))

/* The most sub-verbs a verb has, plus the terminating NULL. */
#define KD_CTL_SUBS_MAX 8

const kd_ctl_verb_t *kd_ctl_verb_find(const char *name)
{
        for (size_t i = 0; i < KD_CTL_VERB_CNT; i++)
                if (!kd_ctl_verbs[i].sub && !strcmp(name, kd_ctl_verbs[i].verb))
                        return &kd_ctl_verbs[i];
        return NULL;
}

void kd_ctl_verbs_print(FILE *out)
{
        for (size_t i = 0; i < KD_CTL_VERB_CNT; i++)
                if (!kd_ctl_verbs[i].sub)
                        fprintf(out, "  %-10s %s\n", kd_ctl_verbs[i].verb,
                                kd_ctl_verbs[i].summary);
}

const char *kd_ctl_subverb(kd_cli_t *cli, const char *verb, const char *help,
                           int argc, char **argv, int *rcp)
{
        /* cli keeps its prog: "kdelayctl VERB" outlives the call. */
        static char progs[KD_CTL_VERB_CNT][32];
        const char *subs[KD_CTL_SUBS_MAX];
        const kd_ctl_verb_t *v = kd_ctl_verb_find(verb);
        char *prog = progs[v ? v - kd_ctl_verbs : 0];
        size_t n = 0;
        for (size_t i = 0; i < KD_CTL_VERB_CNT && n + 1 < KD_CTL_SUBS_MAX; i++)
                if (kd_ctl_verbs[i].sub && !strcmp(verb, kd_ctl_verbs[i].verb))
                        subs[n++] = kd_ctl_verbs[i].sub;
        subs[n] = NULL;
        snprintf(prog, sizeof(progs[0]), "kdelayctl %s", verb);
        int sub = kd_cli_subverb(cli, prog, subs, help, argc, argv, rcp);
        return sub < 0 ? NULL : subs[sub];
}
