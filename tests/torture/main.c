/* SPDX-License-Identifier: Apache-2.0 */
/* kdelay-torture: options and the run's orchestration (docs/torture.md).
 *
 *   setup -> plan (tasks, faults; printed) -> verifier, forwarders ->
 *   producers, cancels, fault injector from T0 -> drain -> stop the
 *   forwarders -> read to the end -> fate table -> the table. */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cancels.h"
#include "faults.h"
#include "fleet.h"
#include "it_env.h"
#include "kd_mysql.h"
#include "kd_util.h"
#include "producers.h"
#include "report.h"
#include "torture.h"
#include "verify.h"

#define EXIT_USAGE 2

/* Set by SIGINT/SIGTERM: every thread winds down, the run is reported. A
 * signal handler can only reach a global. */
static atomic_int tt_stop;

static void on_signal(int sig)
{
        (void)sig;
        atomic_store(&tt_stop, 1);
}

static const char tt_usage[] =
    "Usage: kdelay-torture [OPTIONS]\n"
    "\n"
    "Schedules many tasks, cancels some, kills and restarts forwarders,\n"
    "MySQL and Kafka meanwhile, and checks with an independent\n"
    "read_committed consumer that nothing was lost, early, delivered\n"
    "after an acknowledged cancel, or (exactly_once) duplicated. Runs\n"
    "against the local stack (deploy/local/stack.sh): KDELAY_BROKERS,\n"
    "KDELAY_MYSQL_URL and KDELAY_STACK_DIR must be set. Prints one table;\n"
    "exit 0 pass, 1 fail, 2 usage. See docs/torture.md.\n"
    "\n"
    "  --profile fast|full  fast: 10000 tasks over 70s, hold horizon 5s\n"
    "                       (about 100 s); full (default): 100000 tasks\n"
    "                       over 32m, default hold horizon\n"
    "  --tasks N            number of tasks (profile's by default)\n"
    "  --window DURATION    spread of due times after T0 (\"70s\", \"32m\")\n"
    "  --mode MODE          at_least_once (default) or exactly_once\n"
    "  --forwarders K       forwarder processes, 1..16 (default 3)\n"
    "  --seed S             seed of the task plan and fault schedule\n"
    "                       (default: from the clock; printed)\n"
    "  --max-fire-rate N    pass -X forwarder.max_fire_rate=N\n"
    "  --poison-every N     one raw task in N is poison (default 89)\n"
    "  -X name=value        pass a property to every forwarder (up to 8;\n"
    "                       e.g. partition.assignment.strategy=\n"
    "                       cooperative-sticky)\n"
    "  --forwarder PATH     kdelay-forwarder binary (default: this build's)\n"
    "  --kdelayctl PATH     kdelayctl binary (default: this build's)\n"
    "  --stack PATH         deploy/local/stack.sh (default: source tree's)\n"
    "  --run-dir DIR        where run directories go (default: build's)\n"
    "  -h, --help           this help\n";

static int usage_error(const char *fmt, const char *arg)
{
        fprintf(stderr, "kdelay-torture: ");
        fprintf(stderr, fmt, arg);
        fprintf(stderr, "\n(see kdelay-torture --help)\n");
        return EXIT_USAGE;
}

static int parse_u64(const char *s, uint64_t lo, uint64_t hi, uint64_t *out)
{
        char *end;
        errno = 0;
        unsigned long long v = strtoull(s, &end, 10);
        if (errno || !*s || *end || *s == '-' || v < lo || v > hi)
                return -1;
        *out = v;
        return 0;
}

/* 0 ok, EXIT_USAGE on a usage error, -1 when help was shown. */
static int parse_opts(int argc, char **argv, tt_opts_t *o)
{
        static const struct option longs[] = {
            {"tasks", required_argument, NULL, 't'},
            {"profile", required_argument, NULL, 'p'},
            {"window", required_argument, NULL, 'w'},
            {"mode", required_argument, NULL, 'm'},
            {"forwarders", required_argument, NULL, 'k'},
            {"seed", required_argument, NULL, 's'},
            {"forwarder", required_argument, NULL, 'F'},
            {"kdelayctl", required_argument, NULL, 'C'},
            {"stack", required_argument, NULL, 'S'},
            {"run-dir", required_argument, NULL, 'R'},
            {"max-fire-rate", required_argument, NULL, 'r'},
            {"poison-every", required_argument, NULL, 'P'},
            {"help", no_argument, NULL, 'h'},
            {NULL, 0, NULL, 0}};
        uint64_t v;
        int have_tasks = 0, have_window = 0, have_seed = 0, c;
        memset(o, 0, sizeof(*o));
        o->full = 1;
        o->mode = "at_least_once";
        o->forwarders = 3;
        o->forwarder_path = TT_FORWARDER;
        o->kdelayctl_path = TT_KDELAYCTL;
        o->stack_path = TT_SOURCE_DIR "/deploy/local/stack.sh";
        o->run_base = TT_RUNS_DIR;
        o->max_fire_rate = -1;
        o->poison_every = TT_POISON_EVERY;
        opterr = 0;
        while ((c = getopt_long(argc, argv, "hX:", longs, NULL)) != -1) {
                switch (c) {
                case 'X':
                        if (!strchr(optarg, '=') || *optarg == '=' ||
                            o->fwd_props_cnt >= TT_FWD_PROPS_MAX)
                                return usage_error("-X: want name=value (at "
                                                   "most 8), got \"%s\"",
                                                   optarg);
                        o->fwd_props[o->fwd_props_cnt++] = optarg;
                        break;
                case 't':
                        if (parse_u64(optarg, 1, 10000000, &v))
                                return usage_error("--tasks: want 1..10000000, "
                                                   "got \"%s\"",
                                                   optarg);
                        o->tasks = (size_t)v;
                        have_tasks = 1;
                        break;
                case 'p':
                        if (strcmp(optarg, "fast") && strcmp(optarg, "full"))
                                return usage_error("--profile: want fast or "
                                                   "full, got \"%s\"",
                                                   optarg);
                        o->full = !strcmp(optarg, "full");
                        break;
                case 'w':
                        if (kdelay_duration_parse(optarg, &o->window_ms) ||
                            o->window_ms < 5000)
                                return usage_error("--window: want a duration "
                                                   "of at least 5s, got "
                                                   "\"%s\"",
                                                   optarg);
                        have_window = 1;
                        break;
                case 'm':
                        if (strcmp(optarg, "at_least_once") &&
                            strcmp(optarg, "exactly_once"))
                                return usage_error("--mode: want "
                                                   "at_least_once or "
                                                   "exactly_once, got \"%s\"",
                                                   optarg);
                        o->mode = optarg;
                        break;
                case 'k':
                        if (parse_u64(optarg, 1, TT_MAX_SLOTS - 1, &v))
                                return usage_error("--forwarders: want 1..16, "
                                                   "got \"%s\"",
                                                   optarg);
                        o->forwarders = (int)v;
                        break;
                case 's':
                        if (parse_u64(optarg, 0, UINT64_MAX, &v))
                                return usage_error("--seed: want a "
                                                   "non-negative integer, got "
                                                   "\"%s\"",
                                                   optarg);
                        o->seed = v;
                        have_seed = 1;
                        break;
                case 'r':
                        if (parse_u64(optarg, 1, 100000000, &v))
                                return usage_error("--max-fire-rate: want a "
                                                   "positive integer, got "
                                                   "\"%s\"",
                                                   optarg);
                        o->max_fire_rate = (long)v;
                        break;
                case 'P':
                        if (parse_u64(optarg, 31, 100000000, &v))
                                return usage_error("--poison-every: want "
                                                   "31..100000000, got \"%s\"",
                                                   optarg);
                        o->poison_every = (size_t)v;
                        break;
                case 'F':
                        o->forwarder_path = optarg;
                        break;
                case 'C':
                        o->kdelayctl_path = optarg;
                        break;
                case 'S':
                        o->stack_path = optarg;
                        break;
                case 'R':
                        o->run_base = optarg;
                        break;
                case 'h':
                        fputs(tt_usage, stdout);
                        return -1;
                default:
                        return usage_error("unknown or incomplete option "
                                           "\"%s\"",
                                           argv[optind - 1]);
                }
        }
        if (optind < argc)
                return usage_error("unexpected argument \"%s\"", argv[optind]);
        o->exactly_once = !strcmp(o->mode, "exactly_once");
        if (!have_tasks)
                o->tasks = o->full ? 100000 : 10000;
        if (!have_window)
                o->window_ms = o->full ? 32 * 60000 : 70000;
        if (!have_seed)
                o->seed = (uint64_t)kd_now_ms() ^ ((uint64_t)getpid() << 40);
        o->hold_horizon_ms = o->full ? 0 : 5000;
        o->drain_idle_ms = o->full ? 120000 : 45000;
        o->drain_cap_ms = o->full ? 1200000 : 240000;
        return 0;
}

static int mkdirs(const char *path)
{
        char buf[600];
        kd_strlcpy(buf, path, sizeof(buf));
        for (char *p = buf + 1; *p; p++) {
                if (*p != '/')
                        continue;
                *p = '\0';
                if (mkdir(buf, 0755) && errno != EEXIST)
                        return -1;
                *p = '/';
        }
        return mkdir(buf, 0755) && errno != EEXIST ? -1 : 0;
}

/* Runs kdelayctl with args; its output goes to the run's setup log. */
static int ctl(const tt_opts_t *o, const tt_names_t *nm, FILE *log,
               const char *const *args)
{
        const char *argv[16];
        size_t a = 0;
        char pfx[96];
        snprintf(pfx, sizeof(pfx), "topic_prefix=%s", nm->prefix);
        argv[a++] = o->kdelayctl_path;
        for (size_t i = 0; args[i]; i++)
                argv[a++] = args[i];
        argv[a++] = "--brokers";
        argv[a++] = nm->brokers;
        argv[a++] = "--mysql";
        argv[a++] = nm->mysql_url;
        argv[a++] = "-X";
        argv[a++] = pfx;
        argv[a] = NULL;
        char *out = NULL, *err = NULL;
        int rc = it_run((char *const *)argv, NULL, &out, &err);
        fprintf(log, "--- kdelayctl %s %s: rc=%d\n%s%s", args[0], args[1], rc,
                out ? out : "", err ? err : "");
        fflush(log);
        if (rc)
                tt_log("event=setup_failed what=\"kdelayctl %s %s\" rc=%d "
                       "err=\"%.200s\"",
                       args[0], args[1], rc, err ? err : "");
        free(out);
        free(err);
        return rc;
}

/* kdelayctl audit --fix once the forwarders stopped: the FIRING rows a
 * crash left between a commit and its FIRED marks are delivered (their
 * offsets committed) and marked; any other would be a finding. Its output
 * goes to the setup log, its summary into in. */
static void audit(const tt_opts_t *o, const tt_names_t *nm, FILE *log,
                  tt_report_in_t *in)
{
        char pfx[96], grp[96];
        snprintf(pfx, sizeof(pfx), "topic_prefix=%s", nm->prefix);
        snprintf(grp, sizeof(grp), "forwarder.group_id=%s", nm->group);
        const char *argv[] = {o->kdelayctl_path,
                              "audit",
                              "--fix",
                              "--older-than",
                              "0s",
                              "--brokers",
                              nm->brokers,
                              "--mysql",
                              nm->mysql_url,
                              "-X",
                              pfx,
                              "-X",
                              grp,
                              NULL};
        char *out = NULL, *err = NULL;
        int rc = it_run((char *const *)argv, NULL, &out, &err);
        fprintf(log, "--- kdelayctl audit --fix: rc=%d\n%s%s", rc,
                out ? out : "", err ? err : "");
        fflush(log);
        const char *sum = out ? strstr(out, "summary ") : NULL;
        in->audit_ok =
            (rc == 0 || rc == 1) && sum &&
            sscanf(sum,
                   "summary firing=%ld delivered=%*d fixed=%ld pending=%ld "
                   "unknown=%ld",
                   &in->audit_firing, &in->audit_fixed, &in->audit_pending,
                   &in->audit_unknown) == 4;
        tt_log("event=audit rc=%d firing=%ld fixed=%ld pending=%ld "
               "unknown=%ld",
               rc, in->audit_firing, in->audit_fixed, in->audit_pending,
               in->audit_unknown);
        free(out);
        free(err);
}

/* The forwarders' MySQL user: the least a forwarder needs (read the
 * schema version, claim, mark, take over), so that read_only applies to it
 * as to any application user (root keeps writing: the tool's cancels). */
static int fw_user_create(tt_names_t *nm)
{
        char sql[512], pw[64], user[64];
        snprintf(pw, sizeof(pw), "fw-%s", nm->prefix);
        snprintf(user, sizeof(user), "kdfw_%s", nm->prefix); /* per run */
        if (it_mysql_url_as(user, NULL, nm->db, nm->fw_mysql_url,
                            sizeof(nm->fw_mysql_url)))
                return -1;
        MYSQL *conn = it_mysql_connect();
        if (!conn)
                return -1;
        int rc = 0;
        for (int i = 0; i < 2 && !rc; i++) {
                if (i == 0)
                        snprintf(sql, sizeof(sql),
                                 "CREATE USER '%s'@'127.0.0.1' IDENTIFIED BY "
                                 "'%s'",
                                 user, pw);
                else
                        snprintf(sql, sizeof(sql),
                                 "GRANT SELECT, INSERT, UPDATE, DELETE ON "
                                 "`%s`.* TO '%s'@'127.0.0.1'",
                                 nm->db, user);
                if (mysql_query(conn, sql)) {
                        tt_log("event=setup_failed what=forwarder_user "
                               "err=\"%s\"",
                               mysql_error(conn));
                        rc = -1;
                }
        }
        mysql_close(conn);
        return rc || setenv(KD_TT_FW_PASSWORD_ENV, pw, 1) ? -1 : 0;
}

static const char *const topics_create[] = {"topics", "create", "--partitions",
                                            "6", NULL};

/* The dead-letter topic fault's way back: `kdelayctl topics create`, as
 * an operator would (it makes what is missing, leaves the rest). */
typedef struct dead_create_arg {
        const tt_opts_t *o;
        const tt_names_t *nm;
        FILE *log;
} dead_create_arg_t;

static int dead_create(void *arg)
{
        dead_create_arg_t *a = arg;
        return ctl(a->o, a->nm, a->log, topics_create);
}

/* A target topic of 3 partitions with one topic property (name = NULL:
 * the broker's defaults), waited for until its metadata shows it. */
static int target_create(const char *topic, const char *name, const char *value)
{
        char errstr[256];
        if (!name)
                return it_create_topic(topic, 3);
        rd_kafka_t *rk = it_kafka_new(RD_KAFKA_PRODUCER, NULL);
        if (!rk)
                return -1;
        rd_kafka_NewTopic_t *nt =
            rd_kafka_NewTopic_new(topic, 3, 1, errstr, sizeof(errstr));
        rd_kafka_queue_t *q = rd_kafka_queue_new(rk);
        int rc = -1;
        if (nt && !rd_kafka_NewTopic_set_config(nt, name, value)) {
                rd_kafka_CreateTopics(rk, &nt, 1, NULL, q);
                rd_kafka_event_t *ev = rd_kafka_queue_poll(q, 30000);
                if (ev) {
                        size_t cnt;
                        const rd_kafka_topic_result_t **res =
                            rd_kafka_CreateTopics_result_topics(
                                rd_kafka_event_CreateTopics_result(ev), &cnt);
                        rc = cnt == 1 && !rd_kafka_topic_result_error(res[0])
                                 ? 0
                                 : -1;
                        rd_kafka_event_destroy(ev);
                }
        }
        rd_kafka_queue_destroy(q);
        if (nt)
                rd_kafka_NewTopic_destroy(nt);
        rd_kafka_destroy(rk);
        return rc ? rc : it_wait_topic(topic);
}

/* Names, database, topics and log files of this run. */
static int setup(const tt_opts_t *o, tt_names_t *nm, FILE **setup_log)
{
        static const char *const migrate[] = {"db", "migrate", NULL};
        const char *const *topics = topics_create;
        char path[700];
        memset(nm, 0, sizeof(*nm));
        nm->brokers = it_brokers();
        it_unique(nm->prefix, sizeof(nm->prefix), "tort");
        snprintf(nm->group, sizeof(nm->group), "%s-forwarders", nm->prefix);
        snprintf(nm->db, sizeof(nm->db), "kd%s", nm->prefix);
        snprintf(nm->dead, sizeof(nm->dead), "%s.dead", nm->prefix);
        for (int i = 0; i < TT_TARGETS; i++)
                snprintf(nm->targets[i], sizeof(nm->targets[i]), "%s.target%d",
                         nm->prefix, i);
        snprintf(nm->run_dir, sizeof(nm->run_dir), "%s/%s", o->run_base,
                 nm->prefix);
        if (mkdirs(nm->run_dir)) {
                tt_log("event=setup_failed what=run_dir path=%s err=\"%s\"",
                       nm->run_dir, strerror(errno));
                return -1;
        }
        snprintf(path, sizeof(path), "%s/setup.log", nm->run_dir);
        if (!(*setup_log = fopen(path, "a")))
                return -1;
        /* A tier topic created by hand with the broker's defaults
         * (CreateTime) before `topics create`, which leaves it alone: the
         * forwarders must cope with the producers' timestamps in it. */
        char create_time_tier[128];
        snprintf(create_time_tier, sizeof(create_time_tier), "%s.tier.%s",
                 nm->prefix, TT_CREATE_TIME_TIER);
        if (it_create_topic(create_time_tier, 6)) {
                tt_log("event=setup_failed what=create_time_tier topic=%s",
                       create_time_tier);
                return -1;
        }
        if (it_db_create(nm->db, 0, nm->mysql_url, sizeof(nm->mysql_url)) ||
            ctl(o, nm, *setup_log, migrate) || ctl(o, nm, *setup_log, topics) ||
            fw_user_create(nm))
                return -1;
        char small[16];
        snprintf(small, sizeof(small), "%d", TT_SMALL_MAX_BYTES);
        for (int i = 0; i < TT_TARGETS; i++)
                if (target_create(nm->targets[i],
                                  i == TT_TARGET_COMPACT ? "cleanup.policy"
                                  : i == TT_TARGET_SMALL ? "max.message.bytes"
                                                         : NULL,
                                  i == TT_TARGET_COMPACT ? "compact" : small)) {
                        tt_log("event=setup_failed what=target topic=%s",
                               nm->targets[i]);
                        return -1;
                }
        tt_log("event=setup_done prefix=%s group=%s db=%s run_dir=%s",
               nm->prefix, nm->group, nm->db, nm->run_dir);
        return 0;
}

/* Whether task t is expected on its target: acknowledged, not
 * acknowledged cancelled, no unresolved cancel (the fate table decides
 * those at the end). Fixed once producers and cancels are joined. */
static int expected(const tt_task_t *t)
{
        return atomic_load(&t->sched_state) == TT_SCHED_ACKED &&
               t->answer != TT_ANS_OK && t->answer != TT_ANS_ERROR;
}

/* An expected task has arrived: in its target, or (malformed, poison) in
 * the dead-letter topic. */
static int arrived(const tt_task_t *t)
{
        return t->malformed || t->poison ? atomic_load(&t->dead_copies) > 0
                                         : atomic_load(&t->copies) > 0;
}

/* Until last_due: a progress line every 10 s (a timed report, not a
 * synchronisation). */
static void progress(const tt_task_t *tasks, size_t n, int64_t t0,
                     int64_t last_due)
{
        while (!tt_sleep_until(kd_now_ms() + 10000 < last_due
                                   ? kd_now_ms() + 10000
                                   : last_due,
                               &tt_stop) &&
               kd_now_ms() < last_due) {
                size_t acked = 0, seen = 0;
                for (size_t i = 0; i < n; i++) {
                        acked += atomic_load(&tasks[i].sched_state) ==
                                 TT_SCHED_ACKED;
                        seen += atomic_load(&tasks[i].copies) > 0;
                }
                tt_log("event=progress t_s=%lld acked=%zu delivered=%zu",
                       (long long)((kd_now_ms() - t0) / 1000), acked, seen);
        }
}

/* How a drain ended (the report shows it). */
static const char *const drain_whys[] = {"all_arrived", "no_progress", "cap",
                                         "stopped"};

/* The expected tasks of miss[0..left) that have still not arrived, kept
 * in miss; their count. */
static size_t still_missing(const tt_task_t *tasks, size_t *miss, size_t left)
{
        size_t k = 0;
        for (size_t j = 0; j < left; j++)
                if (!arrived(&tasks[miss[j]]))
                        miss[k++] = miss[j];
        return k;
}

/* Waits while tasks are still being delivered: until every expected task
 * arrived, or none arrived for o->drain_idle_ms, or o->drain_cap_ms after
 * `from` (the later of now and the last due time). The idle clock starts
 * at the later of now and idle_from (epoch ms: when Kafka has settled
 * after its last start). The missing list only shrinks: each wake-up
 * re-checks just those. Fills *waited_ms and *why (an index of
 * drain_whys). */
static void drain(tt_verifier_t *v, const tt_opts_t *o, const tt_task_t *tasks,
                  size_t n, int64_t from, int64_t idle_from, int64_t *waited_ms,
                  int *why)
{
        size_t *miss = malloc((n ? n : 1) * sizeof(*miss)), left = 0, seen = 0;
        int64_t start = kd_now_ms(), next_log = 0;
        int64_t cap = from + o->drain_cap_ms;
        int64_t last_progress = idle_from > start ? idle_from : start;
        *waited_ms = 0;
        *why = 0;
        if (!miss)
                return;
        for (size_t i = 0; i < n; i++)
                if (expected(&tasks[i]) && !arrived(&tasks[i]))
                        miss[left++] = i;
        for (;;) {
                int64_t now = kd_now_ms();
                *why = left == 0                                 ? 0
                       : atomic_load(&tt_stop)                   ? 3
                       : now >= cap                              ? 2
                       : now - last_progress >= o->drain_idle_ms ? 1
                                                                 : -1;
                if (*why >= 0)
                        break;
                if (now >= next_log) {
                        tt_log("event=draining missing=%zu idle_s=%lld "
                               "cap_in_s=%lld",
                               left, (long long)(now - last_progress) / 1000,
                               (long long)(cap - now) / 1000);
                        next_log = now + 5000;
                }
                seen = tt_verifier_wait(v, seen,
                                        now + 1000 < cap ? now + 1000 : cap);
                size_t k = still_missing(tasks, miss, left);
                if (k < left)
                        last_progress = kd_now_ms();
                left = k;
        }
        *waited_ms = kd_now_ms() - start;
        tt_log(
            "event=drained missing=%zu waited_s=%.1f why=%s idle_limit_s=%lld "
            "cap_s=%lld",
            left, (double)*waited_ms / 1000.0, drain_whys[*why],
            (long long)o->drain_idle_ms / 1000,
            (long long)o->drain_cap_ms / 1000);
        free(miss);
}

int main(int argc, char **argv)
{
        tt_opts_t o;
        tt_names_t nm;
        FILE *setup_log = NULL, *lib_log = NULL, *stack_log = NULL;
        int64_t wall0 = kd_mono_ms();
        int rc = parse_opts(argc, argv, &o);
        if (rc)
                return rc < 0 ? 0 : rc;
        if (it_env_init())
                return EXIT_USAGE;
        if (!getenv("KDELAY_STACK_DIR") || !*getenv("KDELAY_STACK_DIR")) {
                fprintf(stderr, "kdelay-torture: export KDELAY_STACK_DIR (eval "
                                "\"$(deploy/local/stack.sh env)\"), so the "
                                "faults stop and start the same stack\n");
                return EXIT_USAGE;
        }
        if (access(o.stack_path, X_OK) || access(o.forwarder_path, X_OK) ||
            access(o.kdelayctl_path, X_OK)) {
                fprintf(stderr,
                        "kdelay-torture: not executable: %s, %s or %s\n",
                        o.stack_path, o.forwarder_path, o.kdelayctl_path);
                return EXIT_USAGE;
        }
        struct sigaction sa;
        memset(&sa, 0, sizeof(sa));
        sa.sa_handler = on_signal;
        sigaction(SIGINT, &sa, NULL);
        sigaction(SIGTERM, &sa, NULL);
        signal(SIGPIPE, SIG_IGN);

        tt_log("event=start mode=%s profile=%s tasks=%zu window_ms=%lld "
               "forwarders=%d seed=%llu",
               o.mode, o.full ? "full" : "fast", o.tasks,
               (long long)o.window_ms, o.forwarders,
               (unsigned long long)o.seed);
        if (setup(&o, &nm, &setup_log))
                return 1;
        char path[700];
        snprintf(path, sizeof(path), "%s/clients.log", nm.run_dir);
        lib_log = fopen(path, "a");
        snprintf(path, sizeof(path), "%s/stack.log", nm.run_dir);
        stack_log = fopen(path, "a");
        tt_task_t *tasks = calloc(o.tasks, sizeof(*tasks));
        if (!tasks || !lib_log || !stack_log) {
                tt_log("event=setup_failed what=memory_or_logs");
                return 1;
        }

        tt_fleet_t fleet;
        tt_fleet_init(&fleet, &o, &nm);
        tt_faults_t faults;
        memset(&faults, 0, sizeof(faults));
        faults.fleet = &fleet;
        faults.stack = o.stack_path;
        faults.stack_log = stack_log;
        faults.stop = &tt_stop;
        if (tt_faults_plan(&faults, &o))
                return 1;

        tt_verifier_t ver;
        memset(&ver, 0, sizeof(ver));
        ver.tasks = tasks;
        ver.n = o.tasks;
        ver.names = &nm;
        ver.client_log = lib_log;
        if (tt_verifier_start(&ver)) {
                tt_verifier_stop(&ver);
                return 1;
        }
        dead_create_arg_t dca = {&o, &nm, setup_log};
        faults.verifier = &ver;
        faults.dead_topic = nm.dead;
        faults.dead_create = dead_create;
        faults.dead_create_arg = &dca;
        for (int s = 0; s < o.forwarders; s++)
                if (tt_fleet_start(&fleet, s)) {
                        tt_fleet_stop_all(&fleet);
                        tt_verifier_stop(&ver);
                        return 1;
                }

        /* T0 a moment ahead: the plan is made before anything runs. */
        int64_t t0 = kd_now_ms() + 1000, last_due = t0;
        tt_plan_tasks(tasks, o.tasks, &o, &nm, t0);
        for (size_t i = 0; i < o.tasks; i++)
                if (tasks[i].fire_at > last_due)
                        last_due = tasks[i].fire_at;
        printf("kdelay-torture: mode=%s profile=%s seed=%llu tasks=%zu "
               "forwarders=%d window=%llds hold_horizon=%llds prefix=%s\n"
               "run dir: %s\n",
               o.mode, o.full ? "full" : "fast", (unsigned long long)o.seed,
               o.tasks, o.forwarders, (long long)o.window_ms / 1000,
               (long long)tt_hold_horizon(&o) / 1000, nm.prefix, nm.run_dir);
        tt_faults_print(&faults, stdout);

        tt_producers_t prod = {tasks, o.tasks, &nm, &tt_stop, lib_log, NULL};
        tt_cancels_t can = {tasks, o.tasks, &nm, &tt_stop, lib_log, NULL};
        if (tt_producers_start(&prod) || tt_cancels_start(&can) ||
            tt_faults_start(&faults, t0)) {
                tt_log("event=start_failed");
                atomic_store(&tt_stop, 1);
        }
        progress(tasks, o.tasks, t0, last_due);
        tt_producers_join(&prod);
        tt_cancels_join(&can);
        tt_faults_join(&faults);
        tt_log("event=schedule_over t_s=%lld",
               (long long)(kd_now_ms() - t0) / 1000);
        int64_t drain_ms = 0;
        int drain_why = 0;
        /* No idle time counts while Kafka settles after its last start
         * (exactly_once: the transaction coordinator, then a session
         * timeout and a rebalance). */
        int64_t kafka_start = atomic_load(&faults.kafka_start_ms);
        drain(&ver, &o, tasks, o.tasks,
              kd_now_ms() > last_due ? kd_now_ms() : last_due,
              kafka_start ? kafka_start + TT_KAFKA_SETTLE_MS : 0, &drain_ms,
              &drain_why);

        /* Stopped forwarders have flushed and committed everything: what
         * is on the topics now is all there will be. */
        int unclean = tt_fleet_stop_all(&fleet);
        /* Bounded, generous: a slow read is the harness's, and a run
         * that could not read to the end is incomplete, not failed. */
        int caught_up = tt_verifier_catch_up(&ver, 90000) == 0;
        tt_verifier_stop(&ver);
        tt_report_in_t in = {&o,     &nm,    tasks, o.tasks, &faults.counts,
                             &fleet, &ver,   t0,    0,       caught_up,
                             -1,     unclean};
        in.drain_ms = drain_ms;
        in.drain_why = drain_whys[drain_why];
        in.interrupted = atomic_load(&tt_stop);
        audit(&o, &nm, setup_log, &in);
        /* Retried, bounded (MySQL may be slow after its faults); an
         * unread table is the harness's (report.c: fate_unread). */
        in.fate_rows = tt_fate_read(tasks, o.tasks, &nm);
        for (int64_t end = kd_mono_ms() + 60000; in.fate_rows < 0 &&
                                                 kd_mono_ms() < end &&
                                                 !tt_sleep_ms(3000, &tt_stop);)
                in.fate_rows = tt_fate_read(tasks, o.tasks, &nm);
        in.wall_ms = kd_mono_ms() - wall0;
        rc = tt_report(&in, stdout);
        snprintf(path, sizeof(path), "%s/tasks.csv", nm.run_dir);
        if (tt_report_dump(&in, path))
                tt_log("event=dump_failed path=%s", path);
        if (atomic_load(&tt_stop))
                rc = 1;
        if (rc == 0)
                it_db_drop(nm.db);
        else
                tt_log("event=kept what=database db=%s", nm.db);
        tt_faults_free(&faults);
        free(tasks);
        fclose(lib_log);
        fclose(stack_log);
        fclose(setup_log);
        return rc;
}
