/* SPDX-License-Identifier: Apache-2.0 */
/* kdelayctl stats: the forwarder group's backlog per tier, its members,
 * and the fate table's rows by state. */
#include <stdio.h>

#include <cjson/cJSON.h>

#include <kdelay/kdelay.h>

#include "cli.h"
#include "ctl.h"
#include "ctl_json.h"
#include "ctl_scan.h"
#include "kd_ratelimits.h"
#include "kd_stats.h"
#include "kd_targetlate.h"
#include "kd_util.h"

static const char kd_stats_help[] =
    "Usage: kdelayctl stats [--json] [OPTIONS]\n"
    "\n"
    "Shows, for forwarder.group_id and topic_prefix: the records each tier\n"
    "of the ladder holds that the group has not committed yet (end offset\n"
    "minus committed offset, over the tier's partitions; held tasks are\n"
    "never committed, so they count), and of the records at the committed\n"
    "offsets (the heads, read back for at most 5 s a tier) the oldest one's\n"
    "age and the largest time past its due time (a stuck tier shows\n"
    "there), the group's state and members, and\n"
    "the fate table's rows by state (mysql.url; skipped without it) as\n"
    "status reads them: FIRED includes the FIRING rows a run of delivered\n"
    "claims covers (\"N recorded by runs\"; in JSON FIRED_by_runs), FIRING\n"
    "is the rows no run covers (in flight, or stuck: kdelayctl audit), and\n"
    "the dead letters of the last --dead-window by reason (read from the\n"
    "dead-letter topic, for at most 10 s; \"complete\": false when cut),\n"
    "and with forwarder.target_rate_limits, for each topic a limit\n"
    "matches, how late its fires of the last --targets-window came (record\n"
    "timestamp minus kdelay-fire-at, read from the topic for at most 5 s).\n"
    "Exit codes: 0, 1 when the group has no member (nothing forwards) or\n"
    "Kafka or MySQL failed, 2 usage error.\n"
    "\n"
    "  --json               one JSON document on stdout\n"
    "  --dead-window D      the dead letters' window (default 24h)\n"
    "  --targets-window D   the rate-limited targets' window (default 10m)\n"
    "\n";

enum { OPT_JSON = 0x200, OPT_DEAD_WINDOW, OPT_TARGETS_WINDOW };

typedef struct stats_args {
        kd_cli_t *cli;
        int json;
        int64_t window_ms;
        int64_t targets_window_ms;
} stats_args_t;

static int on_opt(int opt, const char *arg, void *ctx)
{
        stats_args_t *a = ctx;
        if (opt == OPT_JSON) {
                a->json = 1;
                return KD_EXIT_OK;
        }
        if (opt == OPT_DEAD_WINDOW) {
                if (kdelay_duration_parse(arg, &a->window_ms) ||
                    a->window_ms <= 0)
                        return kd_cli_usage_error(
                            a->cli, "bad --dead-window \"%s\": a duration",
                            arg);
                return KD_EXIT_OK;
        }
        if (opt == OPT_TARGETS_WINDOW) {
                if (kdelay_duration_parse(arg, &a->targets_window_ms) ||
                    a->targets_window_ms <= 0)
                        return kd_cli_usage_error(
                            a->cli, "bad --targets-window \"%s\": a duration",
                            arg);
                return KD_EXIT_OK;
        }
        return KD_EXIT_USAGE;
}

/* The rate-limited targets' recent lateness (kd_targetlate.h). */
typedef struct stats_targets {
        const kd_ratelimits_t *rules; /* the conf's */
        kd_target_late_t v[64];
        size_t cnt;
        int64_t window_ms;
} stats_targets_t;

/* The dead letters of the window, by reason. */
typedef struct stats_dead {
        kd_ctl_reasons_t counts;
        int64_t window_ms;
        int complete;
} stats_dead_t;

static int count_dead(const kd_scan_rec_t *r, void *opaque)
{
        char reason[40];
        kd_ctl_dead_reason(r, reason, sizeof(reason));
        kd_ctl_reasons_add(opaque, reason);
        return 0;
}

static const char *tier_name(const kdelay_conf_t *conf, size_t i)
{
        return conf->tiers.v[i].name;
}

static void print_json(const kdelay_conf_t *conf, const kd_stats_t *s, int fate,
                       const stats_dead_t *d, const stats_targets_t *tg)
{
        cJSON *o = cJSON_CreateObject();
        cJSON *g = cJSON_AddObjectToObject(o, "group");
        cJSON_AddStringToObject(g, "id", conf->fwd_group_id);
        cJSON_AddStringToObject(g, "state", s->group_state);
        cJSON_AddNumberToObject(g, "member_count", s->members);
        cJSON *ms = cJSON_AddArrayToObject(g, "members");
        for (int m = 0; m < s->members && m < 16; m++)
                cJSON_AddItemToArray(ms, cJSON_CreateString(s->member[m]));
        cJSON *ts = cJSON_AddArrayToObject(o, "tiers");
        for (size_t i = 0; i < s->tier_cnt; i++) {
                const kd_tier_stats_t *t = &s->tiers[i];
                cJSON *j = cJSON_CreateObject();
                cJSON_AddStringToObject(j, "tier", tier_name(conf, i));
                cJSON_AddStringToObject(j, "topic", t->topic);
                cJSON_AddNumberToObject(j, "partitions", t->partitions);
                cJSON_AddNumberToObject(j, "end", (double)t->end);
                cJSON_AddNumberToObject(j, "committed", (double)t->committed);
                cJSON_AddNumberToObject(j, "pending", (double)t->pending);
                if (t->head_age_ms >= 0) {
                        cJSON_AddNumberToObject(j, "oldest_head_age_ms",
                                                (double)t->head_age_ms);
                        cJSON_AddNumberToObject(j, "oldest_head_overdue_ms",
                                                (double)t->head_overdue_ms);
                } else {
                        cJSON_AddNullToObject(j, "oldest_head_age_ms");
                        cJSON_AddNullToObject(j, "oldest_head_overdue_ms");
                }
                cJSON_AddItemToArray(ts, j);
        }
        cJSON_AddNumberToObject(o, "pending", (double)s->pending);
        if (fate) {
                cJSON *f = cJSON_AddObjectToObject(o, "fate");
                cJSON_AddNumberToObject(f, "FIRING", (double)s->fate.firing);
                cJSON_AddNumberToObject(f, "FIRED", (double)s->fate.fired);
                cJSON_AddNumberToObject(f, "FIRED_by_runs",
                                        (double)s->fate.fired_by_runs);
                cJSON_AddNumberToObject(f, "CANCELLED",
                                        (double)s->fate.cancelled);
                cJSON_AddNumberToObject(f, "DEAD", (double)s->fate.dead);
        } else {
                cJSON_AddNullToObject(o, "fate");
        }
        char w[32];
        cJSON *dl = cJSON_AddObjectToObject(o, "dead_letters");
        cJSON_AddStringToObject(
            dl, "window", kdelay_duration_format(d->window_ms, w, sizeof(w)));
        cJSON_AddNumberToObject(dl, "total", (double)d->counts.total);
        cJSON_AddBoolToObject(dl, "complete", d->complete);
        kd_ctl_reasons_json(&d->counts, dl, "by_reason");
        if (tg->rules->cnt) {
                cJSON *ta = cJSON_AddArrayToObject(o, "rate_limited_targets");
                for (size_t i = 0; i < tg->cnt; i++) {
                        const kd_target_late_t *t = &tg->v[i];
                        const kd_ratelimit_t *r = &tg->rules->v[t->rule];
                        cJSON *j = cJSON_CreateObject();
                        cJSON_AddStringToObject(j, "limit", r->as);
                        cJSON_AddNumberToObject(j, "rate", r->rate);
                        cJSON_AddNumberToObject(j, "burst", r->burst);
                        cJSON_AddStringToObject(j, "topic", t->topic);
                        cJSON_AddStringToObject(
                            j, "window",
                            kdelay_duration_format(tg->window_ms, w,
                                                   sizeof(w)));
                        cJSON_AddNumberToObject(j, "fires", (double)t->fires);
                        const struct {
                                const char *name;
                                int64_t v;
                        } late[] = {{"late_p50_ms", t->p50_ms},
                                    {"late_p99_ms", t->p99_ms},
                                    {"late_max_ms", t->max_ms}};
                        for (size_t k = 0; k < 3; k++)
                                if (late[k].v < 0 && !t->fires)
                                        cJSON_AddNullToObject(j, late[k].name);
                                else
                                        cJSON_AddNumberToObject(
                                            j, late[k].name, (double)late[k].v);
                        cJSON_AddBoolToObject(j, "complete", t->complete);
                        cJSON_AddItemToArray(ta, j);
                }
        }
        kd_ctl_json_print(o);
}

static void print_text(const kdelay_conf_t *conf, const kd_stats_t *s, int fate,
                       const stats_dead_t *d, const stats_targets_t *tg)
{
        printf("group %s: %s, %d member%s", conf->fwd_group_id, s->group_state,
               s->members, s->members == 1 ? "" : "s");
        for (int m = 0; m < s->members && m < 16; m++)
                printf("%s%s", m ? ", " : ": ", s->member[m]);
        printf("\n\n");
        if (kd_cli_headers())
                printf("%-8s %-36s %10s %12s %12s %12s\n", "TIER", "TOPIC",
                       "PARTITIONS", "PENDING", "HEAD_AGE_MS", "OVERDUE_MS");
        for (size_t i = 0; i < s->tier_cnt; i++) {
                const kd_tier_stats_t *t = &s->tiers[i];
                char age[24] = "-", over[24] = "-";
                if (t->head_age_ms >= 0) {
                        snprintf(age, sizeof(age), "%lld",
                                 (long long)t->head_age_ms);
                        snprintf(over, sizeof(over), "%lld",
                                 (long long)t->head_overdue_ms);
                }
                if (t->partitions < 0)
                        printf("%-8s %-36s %10s %12s\n", tier_name(conf, i),
                               t->topic, "missing", "-");
                else
                        printf("%-8s %-36s %10d %12lld %12s %12s\n",
                               tier_name(conf, i), t->topic, t->partitions,
                               (long long)t->pending, age, over);
        }
        printf("%-8s %-36s %10s %12lld\n", "all", "", "",
               (long long)s->pending);
        if (fate) {
                const kd_fate_counts_t *c = &s->fate;
                printf("\nfate rows: FIRING %llu, FIRED %llu",
                       (unsigned long long)c->firing,
                       (unsigned long long)c->fired);
                if (c->fired_by_runs)
                        printf(" (%llu recorded by runs)",
                               (unsigned long long)c->fired_by_runs);
                printf(", CANCELLED %llu, DEAD %llu\n",
                       (unsigned long long)c->cancelled,
                       (unsigned long long)c->dead);
        }
        char w[32];
        printf("\ndead letters in the last %s: %zu",
               kdelay_duration_format(d->window_ms, w, sizeof(w)),
               d->counts.total);
        kd_ctl_reasons_print(&d->counts);
        printf("%s\n", d->complete ? "" : " (incomplete)");
        if (!tg->rules->cnt)
                return;
        printf("\nrate-limited targets, fires of the last %s:\n",
               kdelay_duration_format(tg->window_ms, w, sizeof(w)));
        if (kd_cli_headers())
                printf("%-20s %10s %-36s %8s %12s %12s %12s\n", "LIMIT",
                       "PER_SECOND", "TOPIC", "FIRES", "LATE_P50_MS",
                       "LATE_P99_MS", "LATE_MAX_MS");
        for (size_t i = 0; i < tg->cnt; i++) {
                const kd_target_late_t *t = &tg->v[i];
                const kd_ratelimit_t *r = &tg->rules->v[t->rule];
                printf("%-20s %10g %-36s %8llu %12lld %12lld %12lld%s\n", r->as,
                       r->rate, t->topic, (unsigned long long)t->fires,
                       (long long)t->p50_ms, (long long)t->p99_ms,
                       (long long)t->max_ms,
                       t->complete ? "" : " (incomplete)");
        }
}

int kd_ctl_stats(int argc, char **argv)
{
        static const struct option opts[] = {
            {"json", no_argument, NULL, OPT_JSON},
            {"dead-window", required_argument, NULL, OPT_DEAD_WINDOW},
            {"targets-window", required_argument, NULL, OPT_TARGETS_WINDOW},
            {NULL, 0, NULL, 0}};
        kd_cli_t cli;
        int argi;
        char errstr[512];
        kd_cli_init(&cli, "kdelayctl stats");
        stats_args_t a = {.cli = &cli,
                          .window_ms = 86400000LL,
                          .targets_window_ms = 600000LL};
        int rc = kd_cli_parse(&cli, argc, argv, "", opts, on_opt, &a,
                              kd_stats_help, &argi);
        if (rc == KD_EXIT_OK && argi < argc)
                rc = kd_cli_usage_error(&cli, "unexpected argument \"%s\"",
                                        argv[argi]);
        if (rc != KD_EXIT_OK) {
                kd_cli_clear(&cli);
                return rc == KD_CLI_HELP_SHOWN ? KD_EXIT_OK : rc;
        }
        static kd_stats_t s; /* large */
        kdelay_err_t err = kd_stats_kafka(cli.conf, &s, errstr, sizeof(errstr));
        int fate = 0;
        if (!err && cli.conf->mysql_url) {
                err = kd_stats_fate(cli.conf, &s, errstr, sizeof(errstr));
                fate = !err;
        }
        static stats_dead_t d; /* large */
        d.window_ms = a.window_ms;
        kd_scan_opts_t so = {.budget_ms = 10000};
        kd_scan_progress_t prog;
        if (!err) {
                /* Not fatal: the backlog and members are the point. */
                char why[512];
                kdelay_err_t derr = kd_scan_dead(
                    cli.conf, kd_now_ms() - a.window_ms, &so, count_dead,
                    &d.counts, &prog, why, sizeof(why));
                if (derr)
                        kd_cli_log(&cli, KDELAY_LOG_WARNING,
                                   "event=dead_letters_unread err=%s",
                                   kdelay_err_name(derr));
                if (derr)
                        fprintf(stderr, "%s: dead letters: %s\n", cli.prog,
                                why);
                d.complete = !derr && prog.complete;
        }
        static stats_targets_t tg; /* large */
        tg.window_ms = a.targets_window_ms;
        tg.rules = &cli.conf->fwd_rate_rules;
        if (!err)
                err = kd_target_late_read(cli.conf, tg.rules, tg.window_ms,
                                          5000, tg.v, 64, &tg.cnt, errstr,
                                          sizeof(errstr));
        if (err) {
                fprintf(stderr, "%s: %s: %s\n", cli.prog, kdelay_err_str(err),
                        errstr);
                rc = KD_EXIT_ERROR;
        } else {
                if (a.json)
                        print_json(cli.conf, &s, fate, &d, &tg);
                else
                        print_text(cli.conf, &s, fate, &d, &tg);
                if (s.members == 0) {
                        fprintf(
                            stderr,
                            "%s: group %s has no member: nothing forwards\n",
                            cli.prog, cli.conf->fwd_group_id);
                        rc = KD_EXIT_ERROR;
                }
        }
        kd_cli_clear(&cli);
        return rc;
}
