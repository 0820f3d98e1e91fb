/* SPDX-License-Identifier: Apache-2.0 */
/* kdelayctl tiers plan: what the ladder costs in Kafka writes per task. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <kdelay/kdelay.h>

#include "cli.h"
#include "ctl.h"
#include "ctl_json.h"
#include "ctl_verbs.h"
#include "kd_conf.h"
#include "kd_plan.h"

static const char kd_tiers_help[] =
    "Usage: kdelayctl tiers plan [--dist SPEC] [--samples N] [--seed S]\n"
    "                            [--lag DURATION] [--target W] [--json]\n"
    "\n"
    "Prints what the configured ladder (tiers, forwarder.hold_horizon,\n"
    "forwarder.lookahead; -X tiers=... to try another) costs for a\n"
    "distribution of delays (fire-at minus schedule time): Kafka writes per\n"
    "task (the schedule, every hop and the fire) as mean, p50, p99 and max,\n"
    "and the writes and hops into each tier. Each path is computed with the\n"
    "forwarder's own rules. Needs no broker and no database.\n"
    "\n"
    "  --dist SPEC    loguniform:MIN:MAX (default loguniform:1s:7d),\n"
    "                 uniform:MIN:MAX, or file:PATH (one delay a line: a\n"
    "                 duration or milliseconds)\n"
    "  --samples N    delays drawn from a random distribution (default\n"
    "                 100000; a file is taken whole)\n"
    "  --seed S       the draw's seed (default 1: the same plan each run)\n"
    "  --lag DURATION each read this late after its record is due (default\n"
    "                 0ms; a lagging forwarder hops later, sometimes more)\n"
    "  --target W     the mean writes per task to compare with (default 4,\n"
    "                 the default ladder's bound for loguniform:1s:7d); the\n"
    "                 exit status is 0 either way\n"
    "  --json         one JSON document on stdout\n"
    "\n";

enum { OPT_DIST = 0x200, OPT_SAMPLES, OPT_SEED, OPT_LAG, OPT_TARGET, OPT_JSON };

typedef struct plan_args {
        kd_cli_t *cli;
        const char *dist;
        long long samples;
        unsigned long long seed;
        int64_t lag_ms;
        double target;
        int json;
} plan_args_t;

static int parse_count(kd_cli_t *cli, const char *opt, const char *arg,
                       long long min, long long max, long long *out)
{
        char *end;
        long long v = strtoll(arg, &end, 10);
        if (end == arg || *end || v < min || v > max)
                return kd_cli_usage_error(
                    cli, "%s: \"%s\" is not an integer in %lld..%lld", opt, arg,
                    min, max);
        *out = v;
        return KD_EXIT_OK;
}

static int on_opt(int opt, const char *arg, void *ctx)
{
        plan_args_t *a = ctx;
        long long v = 0;
        int rc;
        switch (opt) {
        case OPT_DIST:
                a->dist = arg;
                return KD_EXIT_OK;
        case OPT_SAMPLES:
                return parse_count(a->cli, "--samples", arg, 1, 100000000,
                                   &a->samples);
        case OPT_SEED:
                rc = parse_count(a->cli, "--seed", arg, 0, INT64_MAX, &v);
                if (rc == KD_EXIT_OK) /* v is only set on success */
                        a->seed = (unsigned long long)v;
                return rc;
        case OPT_LAG:
                if (kdelay_duration_parse(arg, &a->lag_ms) || a->lag_ms < 0 ||
                    a->lag_ms > KDELAY_MAX_DELAY_MS)
                        return kd_cli_usage_error(
                            a->cli,
                            "--lag: \"%s\" is not a duration (e.g. "
                            "50ms, 1s)",
                            arg);
                return KD_EXIT_OK;
        case OPT_TARGET: {
                char *end;
                double t = strtod(arg, &end);
                if (end == arg || *end || !(t >= 1.0 && t <= 1000.0))
                        return kd_cli_usage_error(
                            a->cli,
                            "--target: \"%s\" is not a number in 1..1000", arg);
                a->target = t;
                return KD_EXIT_OK;
        }
        case OPT_JSON:
                a->json = 1;
                return KD_EXIT_OK;
        }
        return KD_EXIT_USAGE;
}

static void print_text(const kdelay_conf_t *c, const plan_args_t *a,
                       const kd_plan_result_t *r)
{
        char ladder[512], hold[32], look[32], lag[32];
        kd_tiers_format(&c->tiers, ladder, sizeof(ladder));
        printf("ladder        %s (%zu tiers)\n", ladder, c->tiers.cnt);
        printf(
            "hold_horizon  %s  lookahead %s\n",
            kdelay_duration_format(c->fwd_hold_horizon_ms, hold, sizeof(hold)),
            kdelay_duration_format(c->fwd_lookahead_ms, look, sizeof(look)));
        printf("delays        %s, %zu tasks, read lag %s\n", a->dist,
               r->samples, kdelay_duration_format(a->lag_ms, lag, sizeof(lag)));
        printf("writes/task   mean %.2f  p50 %u  p99 %u  max %u\n",
               r->mean_writes, r->p50_writes, r->p99_writes, r->max_writes);
        printf("target        mean <= %.2f: %s by %.2f\n", a->target,
               r->mean_writes <= a->target ? "met" : "MISSED",
               r->mean_writes <= a->target ? a->target - r->mean_writes
                                           : r->mean_writes - a->target);
        printf("hops/task     mean %.2f\n\n", r->mean_hops);
        if (kd_cli_headers())
                printf("%-10s %14s %14s %12s\n", "TIER", "WRITES", "HOPS_INTO",
                       "PER_TASK");
        for (size_t i = 0; i < c->tiers.cnt; i++)
                printf("%-10s %14llu %14llu %12.3f\n", c->tiers.v[i].name,
                       (unsigned long long)r->writes_by_tier[i],
                       (unsigned long long)r->hops_by_tier[i],
                       (double)r->writes_by_tier[i] / (double)r->samples);
}

static int print_json(const kdelay_conf_t *c, const plan_args_t *a,
                      const kd_plan_result_t *r)
{
        cJSON *o = cJSON_CreateObject(), *tiers = cJSON_CreateArray();
        int ok = o && tiers;
        if (ok)
                cJSON_AddItemToObject(o, "tiers", tiers);
        else
                cJSON_Delete(tiers);
        for (size_t i = 0; ok && i < c->tiers.cnt; i++) {
                cJSON *t = cJSON_CreateObject();
                ok = t && cJSON_AddItemToArray(tiers, t) &&
                     cJSON_AddStringToObject(t, "tier", c->tiers.v[i].name) &&
                     cJSON_AddNumberToObject(t, "delay_ms",
                                             (double)c->tiers.v[i].delay_ms) &&
                     cJSON_AddNumberToObject(t, "writes",
                                             (double)r->writes_by_tier[i]) &&
                     cJSON_AddNumberToObject(t, "hops_into",
                                             (double)r->hops_by_tier[i]);
        }
        ok = ok && cJSON_AddStringToObject(o, "dist", a->dist) &&
             cJSON_AddNumberToObject(o, "samples", (double)r->samples) &&
             cJSON_AddNumberToObject(o, "hold_horizon_ms",
                                     (double)c->fwd_hold_horizon_ms) &&
             cJSON_AddNumberToObject(o, "lookahead_ms",
                                     (double)c->fwd_lookahead_ms) &&
             cJSON_AddNumberToObject(o, "lag_ms", (double)a->lag_ms) &&
             cJSON_AddNumberToObject(o, "writes_mean", r->mean_writes) &&
             cJSON_AddNumberToObject(o, "writes_target", a->target) &&
             cJSON_AddBoolToObject(o, "target_met",
                                   r->mean_writes <= a->target) &&
             cJSON_AddNumberToObject(o, "writes_p50", r->p50_writes) &&
             cJSON_AddNumberToObject(o, "writes_p99", r->p99_writes) &&
             cJSON_AddNumberToObject(o, "writes_max", r->max_writes) &&
             cJSON_AddNumberToObject(o, "hops_mean", r->mean_hops);
        if (!ok) {
                cJSON_Delete(o);
                return -1;
        }
        return kd_ctl_json_print(o);
}

int kd_ctl_tiers(int argc, char **argv)
{
        static const struct option opts[] = {
            {"dist", required_argument, NULL, OPT_DIST},
            {"samples", required_argument, NULL, OPT_SAMPLES},
            {"seed", required_argument, NULL, OPT_SEED},
            {"lag", required_argument, NULL, OPT_LAG},
            {"target", required_argument, NULL, OPT_TARGET},
            {"json", no_argument, NULL, OPT_JSON},
            {NULL, 0, NULL, 0}};
        kd_cli_t cli;
        plan_args_t a = {.cli = &cli,
                         .dist = "loguniform:1s:7d",
                         .samples = 100000,
                         .seed = 1,
                         .target = 4.0};
        char errstr[512];
        int argi, rc;
        if (!kd_ctl_subverb(&cli, "tiers", kd_tiers_help, argc, argv, &rc))
                return rc;
        rc = kd_cli_parse(&cli, argc - 1, argv + 1, "", opts, on_opt, &a,
                          kd_tiers_help, &argi);
        if (rc == KD_EXIT_OK && argi < argc - 1)
                rc = kd_cli_usage_error(&cli, "unexpected argument \"%s\"",
                                        argv[argi + 1]);
        kd_dist_t dist;
        if (rc == KD_EXIT_OK &&
            kd_dist_parse(&dist, a.dist, errstr, sizeof(errstr)))
                rc = kd_cli_usage_error(&cli, "--dist: %s", errstr);
        if (rc != KD_EXIT_OK) {
                kd_cli_clear(&cli);
                return rc == KD_CLI_HELP_SHOWN ? KD_EXIT_OK : rc;
        }
        const kdelay_conf_t *c = cli.conf;
        kd_path_rules_t rules = {.tiers = &c->tiers,
                                 .hold_horizon_ms = c->fwd_hold_horizon_ms,
                                 .lookahead_ms = c->fwd_lookahead_ms,
                                 .lag_ms = a.lag_ms};
        kd_plan_result_t r;
        kdelay_err_t err = kd_plan_run(&rules, &dist, (size_t)a.samples, a.seed,
                                       &r, errstr, sizeof(errstr));
        kd_dist_clear(&dist);
        if (err) {
                fprintf(stderr, "%s: %s\n", cli.prog, errstr);
                rc = KD_EXIT_ERROR;
        } else if (a.json) {
                if (print_json(c, &a, &r)) {
                        fprintf(stderr, "%s: out of memory\n", cli.prog);
                        rc = KD_EXIT_ERROR;
                }
        } else {
                print_text(c, &a, &r);
        }
        kd_cli_clear(&cli);
        return rc;
}
