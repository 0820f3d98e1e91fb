/* SPDX-License-Identifier: Apache-2.0 */
/* kdelayctl topics: create / check the tier topics and the dead topic. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <kdelay/kdelay.h>

#include "cli.h"
#include "ctl.h"
#include "ctl_json.h"
#include "ctl_verbs.h"
#include "kd_topics.h"

static const char kd_topics_help[] =
    "Usage: kdelayctl topics create [--partitions N] [--replication-factor "
    "R]\n"
    "                               [--json]\n"
    "       kdelayctl topics check [--json]\n"
    "\n"
    "create  creates every tier topic (<prefix>.tier.<tier>), the dead-\n"
    "        letter topic (<prefix>.dead) and the journal (<prefix>.journal,\n"
    "        used under forwarder.fate_outage_policy=fire) that does not\n"
    "        exist yet, with message.timestamp.type=LogAppendTime,\n"
    "        cleanup.policy=delete, retention.bytes=-1 and retention.ms =\n"
    "        2 x tier delay + topics.retention_margin (dead topic and\n"
    "        journal: topics.dead_retention).\n"
    "        Topics that exist are reported and left alone. A topic this\n"
    "        principal may not create (no ACL Create: a least-privilege\n"
    "        identity such as the forwarder's) is only checked: FAILED,\n"
    "        naming the ACL it lacks (Create, or Describe when the topic\n"
    "        is hidden from it), and exit 1; the journal under\n"
    "        fate_outage_policy=hold is not needed: \"skipped\", exit 0.\n"
    "check   verifies that every topic exists with those settings (the\n"
    "        journal only under fate_outage_policy=fire); exit 1 and one\n"
    "        line per problem otherwise.\n"
    "\n"
    "  --partitions N          partitions of new topics (default\n"
    "                          topics.partitions, 6)\n"
    "  --replication-factor R  replicas of new topics (default\n"
    "                          topics.replication_factor; -1 = broker's)\n"
    "  --json                  one JSON document: {\"topics\": [{\"topic\",\n"
    "                          \"state\", \"partitions\", \"ok\", "
    "\"note\"}]};\n"
    "                          state: exists, created, missing, FAILED,\n"
    "                          skipped\n"
    "\n";

enum { OPT_PARTITIONS = 0x200, OPT_RF, OPT_JSON };

typedef struct topics_args {
        kd_cli_t *cli;
        int partitions;
        int rf;
        int json;
} topics_args_t;

static int parse_int(kd_cli_t *cli, const char *opt, const char *arg, int min,
                     int *out)
{
        char *end;
        long v = strtol(arg, &end, 10);
        if (end == arg || *end || v < min || v > 100000)
                return kd_cli_usage_error(cli,
                                          "%s: \"%s\" is not an "
                                          "integer >= %d",
                                          opt, arg, min);
        *out = (int)v;
        return KD_EXIT_OK;
}

static int on_opt(int opt, const char *arg, void *ctx)
{
        topics_args_t *a = ctx;
        if (opt == OPT_JSON) {
                a->json = 1;
                return KD_EXIT_OK;
        }
        if (opt == OPT_PARTITIONS)
                return parse_int(a->cli, "--partitions", arg, 1,
                                 &a->partitions);
        if (opt == OPT_RF) {
                int rc =
                    parse_int(a->cli, "--replication-factor", arg, -1, &a->rf);
                if (rc == KD_EXIT_OK && a->rf == 0)
                        return kd_cli_usage_error(
                            a->cli, "--replication-factor must be -1 or >= 1");
                return rc;
        }
        return KD_EXIT_USAGE;
}

static const char *state_name(kd_topic_state_t s)
{
        switch (s) {
        case KD_TOPIC_EXISTS:
                return "exists";
        case KD_TOPIC_CREATED:
                return "created";
        case KD_TOPIC_FAILED:
                return "FAILED";
        case KD_TOPIC_SKIPPED:
                return "skipped";
        default:
                return "missing";
        }
}

int kd_ctl_topics(int argc, char **argv)
{
        static const struct option opts[] = {
            {"partitions", required_argument, NULL, OPT_PARTITIONS},
            {"replication-factor", required_argument, NULL, OPT_RF},
            {"json", no_argument, NULL, OPT_JSON},
            {NULL, 0, NULL, 0}};
        static const struct option check_opts[] = {
            {"json", no_argument, NULL, OPT_JSON}, {NULL, 0, NULL, 0}};
        kd_cli_t cli;
        topics_args_t a = {.cli = &cli};
        kd_topic_report_t reports[KD_TOPICS_MAX];
        size_t n = 0;
        char errstr[512] = "";
        int argi;

        int rc;
        const char *sub =
            kd_ctl_subverb(&cli, "topics", kd_topics_help, argc, argv, &rc);
        if (!sub)
                return rc;
        int create = !strcmp(sub, "create");
        rc = kd_cli_parse(&cli, argc - 1, argv + 1, "",
                          create ? opts : check_opts, on_opt, &a,
                          kd_topics_help, &argi);
        if (rc == KD_EXIT_OK && argi < argc - 1)
                rc = kd_cli_usage_error(&cli, "unexpected argument \"%s\"",
                                        argv[argi + 1]);
        if (rc != KD_EXIT_OK) {
                kd_cli_clear(&cli);
                return rc == KD_CLI_HELP_SHOWN ? KD_EXIT_OK : rc;
        }

        kdelay_err_t err =
            create ? kd_topics_create(cli.conf, a.partitions, a.rf, reports, &n,
                                      errstr, sizeof(errstr))
                   : kd_topics_check(cli.conf, reports, &n, errstr,
                                     sizeof(errstr));
        /* Without metadata the reports say nothing: print no table. */
        int known = !err || err == KDELAY_ERR_CONFIG ||
                    (create && err == KDELAY_ERR_KAFKA);
        /* One answer: one document, {"topics": [...]}. */
        cJSON *doc = a.json && known ? cJSON_CreateObject() : NULL;
        cJSON *arr = doc ? cJSON_AddArrayToObject(doc, "topics") : NULL;
        for (size_t i = 0; arr && i < n; i++) {
                cJSON *o = cJSON_CreateObject();
                cJSON_AddStringToObject(o, "topic", reports[i].name);
                cJSON_AddStringToObject(o, "state",
                                        state_name(reports[i].state));
                if (reports[i].partitions >= 0)
                        cJSON_AddNumberToObject(o, "partitions",
                                                reports[i].partitions);
                else
                        cJSON_AddNullToObject(o, "partitions");
                cJSON_AddBoolToObject(o, "ok", reports[i].ok);
                cJSON_AddStringToObject(o, "note", reports[i].problem);
                cJSON_AddItemToArray(arr, o);
        }
        if (doc)
                kd_ctl_json_print(doc);
        if (n > 0 && known && !a.json) {
                if (kd_cli_headers())
                        printf("%-32s %-8s %-10s %s\n", "TOPIC", "STATE",
                               "PARTITIONS", create ? "NOTE" : "CHECK");
                for (size_t i = 0; i < n; i++) {
                        char parts[16] = "-";
                        if (reports[i].partitions >= 0)
                                snprintf(parts, sizeof(parts), "%d",
                                         reports[i].partitions);
                        const char *note = reports[i].problem;
                        if (!create && reports[i].ok)
                                note = "ok";
                        printf("%-32s %-8s %-10s %s\n", reports[i].name,
                               state_name(reports[i].state), parts, note);
                }
        }
        if (err) {
                fprintf(stderr, "%s: %s\n", cli.prog, errstr);
                rc = KD_EXIT_ERROR;
        }
        kd_cli_clear(&cli);
        return rc;
}
