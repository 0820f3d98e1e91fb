/* bench_limit: the forwarder against the limit of this design on this
 * machine (issue 9; docs/performance.md). In one run, on the stack named
 * by KDELAY_BROKERS / KDELAY_MYSQL_URL:
 *
 *   copy     a plain consume->produce copy of N records of the same size
 *            and headers with librdkafka (idempotent, acks=all): records/s
 *            and CPU per record (a child process, its rusage). The limit.
 *   drain    N already-due tasks in a tier when one forwarder starts, per
 *            delivery mode: fires/s (first to last delivery), its ratio to
 *            the copy, forwarder CPU per fire and its ratio to the copy's
 *            per record, MySQL statements per fire, Kafka writes per task.
 *   burst    N tasks due at one millisecond, the forwarder running:
 *            lateness p50/p99/max, fires/s, and whether the burst finished
 *            within N / drain rate + 1 s.
 *   spread   N tasks due evenly over SPREAD s, scheduled LEAD s ahead:
 *            lateness, Kafka writes per task (schedule + hops + fire).
 *   rss      the forwarder's peak RSS with P1 and P2 tasks pending over
 *            the next 24 h (flat is the goal).
 *
 * Figures are printed as `name value` lines; nothing is asserted but that
 * every task was delivered and every forwarder exited 0 (exit 1
 * otherwise): targets are ratios to the copy of the same run
 * (docs/performance.md), never timed assertions.
 *
 * Usage: bench_limit [--tasks N] [--pending P1,P2] [--spread S] [--lead L]
 *   defaults 200000 tasks, pending 100000,1000000, spread 10 s, lead 45 s
 *   (the spread's tasks are due LEAD..LEAD+SPREAD s after scheduling). */
#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <kdelay/kdelay.h>

#include "it_env.h"
#include "kd_tiers.h"
#include "kd_util.h"
#include "kd_wire.h"

#define SEC        1000LL
#define PARTITIONS 4
#define VALUE_LEN  100

typedef struct opts {
        int tasks;
        int pending[2];
        int spread_s, lead_s;
} opts_t;

static char prefix[40], db[64], url[256], target[96];
static int failed;

/* --- producing wire-format records ---------------------------------------
 */

static void dr_count(rd_kafka_t *rk, const rd_kafka_message_t *m, void *op)
{
        (void)rk;
        int *errors = op;
        if (m->err)
                (*errors)++;
}

/* Produces n task records to topic: fire-at of task i is fire_at(i). 0
 * when all were acknowledged. */
static int produce_tasks(const char *topic, int n,
                         int64_t (*fire_at)(int, void *), void *arg,
                         const char *stem)
{
        int errors = 0;
        char errstr[512];
        rd_kafka_conf_t *c = rd_kafka_conf_new();
        const char *props[] = {"bootstrap.servers",
                               it_brokers(),
                               "enable.idempotence",
                               "true",
                               "linger.ms",
                               "20",
                               "batch.num.messages",
                               "10000",
                               "queue.buffering.max.messages",
                               "1000000",
                               NULL};
        for (int i = 0; props[i]; i += 2)
                if (rd_kafka_conf_set(c, props[i], props[i + 1], errstr,
                                      sizeof(errstr))) {
                        rd_kafka_conf_destroy(c);
                        return -1;
                }
        rd_kafka_conf_set_dr_msg_cb(c, dr_count);
        rd_kafka_conf_set_opaque(c, &errors);
        rd_kafka_t *rk =
            rd_kafka_new(RD_KAFKA_PRODUCER, c, errstr, sizeof(errstr));
        if (!rk) {
                rd_kafka_conf_destroy(c); /* not taken on failure */
                return -1;
        }
        char value[VALUE_LEN];
        memset(value, 'v', sizeof(value));
        for (int i = 0; i < n; i++) {
                char id[64], fa[24];
                snprintf(id, sizeof(id), "%s-%s-%d", prefix, stem, i);
                snprintf(fa, sizeof(fa), "%lld", (long long)fire_at(i, arg));
                rd_kafka_headers_t *h = rd_kafka_headers_new(4);
                rd_kafka_header_add(h, KDELAY_HDR_ID, -1, id, -1);
                rd_kafka_header_add(h, KDELAY_HDR_TARGET, -1, target, -1);
                rd_kafka_header_add(h, KDELAY_HDR_FIRE_AT, -1, fa, -1);
                rd_kafka_header_add(h, KDELAY_HDR_VERSION, -1,
                                    KDELAY_WIRE_VERSION, -1);
                rd_kafka_resp_err_t err;
                while ((err = rd_kafka_producev(
                            rk, RD_KAFKA_V_TOPIC(topic),
                            RD_KAFKA_V_KEY(id, strlen(id)),
                            RD_KAFKA_V_VALUE(value, sizeof(value)),
                            RD_KAFKA_V_HEADERS(h),
                            RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
                            RD_KAFKA_V_END)) == RD_KAFKA_RESP_ERR__QUEUE_FULL)
                        rd_kafka_poll(rk, 10);
                if (err) {
                        rd_kafka_headers_destroy(h);
                        errors++;
                        break;
                }
                if (i % 1000 == 0)
                        rd_kafka_poll(rk, 0);
        }
        if (rd_kafka_flush(rk, 120000))
                errors++;
        rd_kafka_destroy(rk);
        return errors ? -1 : 0;
}

static int64_t at_fixed(int i, void *arg)
{
        (void)i;
        return *(int64_t *)arg;
}

/* The spread: LEAD s ahead, then evenly over SPREAD s. */
typedef struct spread {
        int64_t first, span;
        int n;
} spread_t;

static int64_t at_spread(int i, void *arg)
{
        const spread_t *s = arg;
        return s->first + (int64_t)i * s->span / s->n;
}

/* --- reading the target back ---------------------------------------------
 */

static int cmp_i64(const void *a, const void *b)
{
        int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
        return x < y ? -1 : x > y;
}

typedef struct seen {
        size_t n;
        int64_t first_ts, last_ts;
        int64_t p50, p99, max; /* lateness by record timestamp, ms */
        int early;
} seen_t;

/* Subscribes consumer rk to topic, its messages on the consumer queue. 0
 * on success. */
static int subscribe_one(rd_kafka_t *rk, const char *topic)
{
        rd_kafka_poll_set_consumer(rk);
        rd_kafka_topic_partition_list_t *l =
            rd_kafka_topic_partition_list_new(1);
        rd_kafka_topic_partition_list_add(l, topic, RD_KAFKA_PARTITION_UA);
        rd_kafka_resp_err_t err = rd_kafka_subscribe(rk, l);
        rd_kafka_topic_partition_list_destroy(l);
        if (err)
                fprintf(stderr, "subscribe %s: %s\n", topic,
                        rd_kafka_err2str(err));
        return err ? -1 : 0;
}

/* Reads `want` records of the target (read_committed, from the start)
 * within timeout_ms, with their timestamps against their fire-at. */
static int read_target(const char *grp, int want, int timeout_ms, seen_t *s)
{
        const char *props[] = {"group.id",
                               grp,
                               "auto.offset.reset",
                               "earliest",
                               "isolation.level",
                               "read_committed",
                               "enable.auto.commit",
                               "false",
                               NULL};
        rd_kafka_t *rk = it_kafka_new(RD_KAFKA_CONSUMER, props);
        int64_t *late = malloc((size_t)want * sizeof(*late));
        if (!rk || !late || subscribe_one(rk, target)) {
                free(late);
                if (rk)
                        rd_kafka_destroy(rk);
                return -1;
        }
        memset(s, 0, sizeof(*s));
        s->first_ts = INT64_MAX;
        int64_t end = kd_mono_ms() + timeout_ms;
        while (s->n < (size_t)want && kd_mono_ms() < end) {
                rd_kafka_message_t *m = rd_kafka_consumer_poll(rk, 200);
                if (!m)
                        continue;
                if (!m->err) {
                        rd_kafka_headers_t *h = NULL;
                        const void *v;
                        size_t len;
                        char fa[24] = "0";
                        if (!rd_kafka_message_headers(m, &h) &&
                            !rd_kafka_header_get_last(h, KDELAY_HDR_FIRE_AT, &v,
                                                      &len) &&
                            len < sizeof(fa)) {
                                memcpy(fa, v, len);
                                fa[len] = '\0';
                        }
                        int64_t ts = rd_kafka_message_timestamp(m, NULL);
                        late[s->n++] = ts - atoll(fa);
                        s->early += ts < atoll(fa);
                        if (ts < s->first_ts)
                                s->first_ts = ts;
                        if (ts > s->last_ts)
                                s->last_ts = ts;
                }
                rd_kafka_message_destroy(m);
        }
        rd_kafka_consumer_close(rk);
        rd_kafka_destroy(rk);
        qsort(late, s->n, sizeof(*late), cmp_i64);
        if (s->n) {
                s->p50 = late[(s->n - 1) / 2];
                s->p99 = late[(s->n * 99 + 99) / 100 - 1];
                s->max = late[s->n - 1];
        }
        free(late);
        return s->n == (size_t)want ? 0 : -1;
}

/* --- the copy (the limit) ------------------------------------------------
 */

/* Copies n records from src to dst (idempotent, acks=all, headers
 * copied); in a child process so that its CPU time is its own. */
static void copy_child(const char *src, const char *dst, int n, int fd)
{
        char grp[128];
        snprintf(grp, sizeof(grp), "%s-copy", prefix);
        const char *cp[] = {"group.id",
                            grp,
                            "auto.offset.reset",
                            "earliest",
                            "enable.auto.commit",
                            "false",
                            NULL};
        const char *pp[] = {"enable.idempotence",
                            "true",
                            "acks",
                            "all",
                            "linger.ms",
                            "5",
                            "batch.num.messages",
                            "10000",
                            "queue.buffering.max.messages",
                            "1000000",
                            NULL};
        rd_kafka_t *c = it_kafka_new(RD_KAFKA_CONSUMER, cp);
        rd_kafka_t *p = it_kafka_new(RD_KAFKA_PRODUCER, pp);
        if (!c || !p || subscribe_one(c, src))
                _exit(1);
        /* Batches of up to 10,000 from the consumer queue, the
         * producer's reports served once per batch: as fast as this
         * client library goes. */
        rd_kafka_queue_t *q = rd_kafka_queue_get_consumer(c);
        rd_kafka_message_t **batch = malloc(10000 * sizeof(*batch));
        if (!q || !batch)
                _exit(1);
        int got = 0;
        int64_t first = 0;
        while (got < n) {
                ssize_t k = rd_kafka_consume_batch_queue(q, 1000, batch, 10000);
                for (ssize_t j = 0; j < k; j++) {
                        rd_kafka_message_t *m = batch[j];
                        if (m->err) {
                                rd_kafka_message_destroy(m);
                                continue;
                        }
                        if (!got)
                                first = kd_now_ms();
                        rd_kafka_headers_t *h = NULL;
                        rd_kafka_message_detach_headers(m, &h);
                        while (rd_kafka_producev(
                                   p, RD_KAFKA_V_TOPIC(dst),
                                   RD_KAFKA_V_KEY(m->key, m->key_len),
                                   RD_KAFKA_V_VALUE(m->payload, m->len),
                                   RD_KAFKA_V_HEADERS(h),
                                   RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
                                   RD_KAFKA_V_END) ==
                               RD_KAFKA_RESP_ERR__QUEUE_FULL)
                                rd_kafka_poll(p, 10);
                        rd_kafka_message_destroy(m);
                        got++;
                }
                rd_kafka_poll(p, 0);
        }
        free(batch);
        rd_kafka_queue_destroy(q);
        int rc = rd_kafka_flush(p, 60000) ? 1 : 0;
        int64_t ms = kd_now_ms() - first;
        if (write(fd, &ms, sizeof(ms)) != sizeof(ms))
                rc = 1;
        rd_kafka_consumer_close(c);
        rd_kafka_destroy(c);
        rd_kafka_destroy(p);
        _exit(rc);
}

static int run_copy(int n, double *rate, double *cpu_us)
{
        char src[96], dst[96];
        snprintf(src, sizeof(src), "%s.copy-src", prefix);
        snprintf(dst, sizeof(dst), "%s.copy-dst", prefix);
        int64_t now = kd_now_ms();
        if (it_create_topic(src, PARTITIONS) ||
            it_create_topic(dst, PARTITIONS) ||
            produce_tasks(src, n, at_fixed, &now, "copy"))
                return -1;
        int fds[2];
        if (pipe(fds))
                return -1;
        pid_t pid = fork();
        if (pid < 0)
                return -1;
        if (pid == 0) {
                close(fds[0]);
                copy_child(src, dst, n, fds[1]);
        }
        close(fds[1]);
        int64_t ms = 0;
        ssize_t r = read(fds[0], &ms, sizeof(ms));
        close(fds[0]);
        int status;
        struct rusage ru;
        if (wait4(pid, &status, 0, &ru) != pid || r != sizeof(ms) ||
            !WIFEXITED(status) || WEXITSTATUS(status))
                return -1;
        double cpu = (double)ru.ru_utime.tv_sec * 1e6 + ru.ru_utime.tv_usec +
                     (double)ru.ru_stime.tv_sec * 1e6 + ru.ru_stime.tv_usec;
        *rate = ms > 0 ? n * 1000.0 / (double)ms : 0;
        *cpu_us = cpu / n;
        return 0;
}

/* --- forwarder runs ------------------------------------------------------
 */

/* CPU time of every thread of pid in microseconds (schedstat, ns); -1
 * unreadable. */
static double cpu_us_of(pid_t pid)
{
        char path[64];
        snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
        DIR *d = opendir(path);
        if (!d)
                return -1;
        double ns = 0;
        struct dirent *e;
        while ((e = readdir(d))) {
                if (e->d_name[0] == '.')
                        continue;
                char f[400];
                unsigned long long run = 0;
                snprintf(f, sizeof(f), "%s/%s/schedstat", path, e->d_name);
                FILE *fp = fopen(f, "r");
                if (fp && fscanf(fp, "%llu", &run) == 1)
                        ns += (double)run;
                if (fp)
                        fclose(fp);
        }
        closedir(d);
        return ns / 1000.0;
}

static long long rss_kb_of(pid_t pid, const char *key)
{
        char path[64], line[256], fmt[32];
        long long kb = -1;
        snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
        snprintf(fmt, sizeof(fmt), "%s: %%lld kB", key);
        FILE *fp = fopen(path, "r");
        while (fp && fgets(line, sizeof(line), fp))
                if (sscanf(line, fmt, &kb) == 1)
                        break;
        if (fp)
                fclose(fp);
        return kb;
}

/* The value of key= in the forwarder's event=forwarder_stopped line. */
static long long stat_of(const char *log, const char *key)
{
        return it_log_sum(log, "event=forwarder_stopped ", key);
}

typedef struct fwd_run {
        it_fwd_t f;
        char instance[32];
        double cpu_us;
        long long hwm_kb;
        long long fired, hopped, statements;
} fwd_run_t;

static int fwd_start(fwd_run_t *r, const char *name, const char *mode,
                     const char *grp)
{
        static char xm[64];
        snprintf(r->instance, sizeof(r->instance), "%s", name);
        snprintf(xm, sizeof(xm), "forwarder.delivery=%s", mode);
        const char *props[] = {xm, "forwarder.stats_interval=0s", NULL};
        memset(&r->f, 0, sizeof(r->f));
        r->f.instance = r->instance;
        r->f.pid = -1;
        if (it_fwd_start(&r->f, KDELAY_FORWARDER, prefix, grp, url, props))
                return -1;
        return it_wait_log(r->f.log, "event=partitions_assigned", 60000);
}

static int fwd_stop(fwd_run_t *r)
{
        r->cpu_us = cpu_us_of(r->f.pid);
        r->hwm_kb = rss_kb_of(r->f.pid, "VmHWM");
        int rc = it_fwd_stop(&r->f, SIGTERM);
        r->fired = stat_of(r->f.log, "fired");
        r->hopped = stat_of(r->f.log, "hopped");
        r->statements = stat_of(r->f.log, "claim_statements") +
                        stat_of(r->f.log, "mark_statements");
        return rc;
}

/* The tier of the default ladder a task remaining_ms ahead goes to. */
static const char *tier_for(int64_t remaining_ms)
{
        static kd_tiers_t tiers;
        static char name[KD_TIER_NAME_MAX];
        kdelay_conf_t *c = kdelay_conf_new();
        char list[512] = "";
        if (!c || kdelay_conf_get(c, "tiers", list, sizeof(list)) ||
            kd_tiers_parse(&tiers, list, NULL, 0)) {
                kdelay_conf_destroy(c);
                return "1s";
        }
        kdelay_conf_destroy(c);
        kd_strlcpy(name, tiers.v[kd_tiers_choose(&tiers, remaining_ms)].name,
                   sizeof(name));
        return name;
}

static void check(int ok, const char *what)
{
        if (!ok) {
                printf("FAILED %s\n", what);
                failed = 1;
        }
}

/* A fresh section: new prefix, database, tier and target topics; the
 * forwarders' group and a reader's group of it into grp / rgrp. 0 on
 * success. */
static int section(char *grp, size_t grp_size, char *rgrp, size_t rgrp_size)
{
        it_unique(prefix, sizeof(prefix), "bl");
        it_unique(db, sizeof(db), "kdbl");
        snprintf(target, sizeof(target), "%s.target", prefix);
        snprintf(grp, grp_size, "%s-fwd", prefix);
        snprintf(rgrp, rgrp_size, "%s-read", prefix);
        if (it_db_create(db, 1, url, sizeof(url)) ||
            it_tiers_create(prefix, url, PARTITIONS) ||
            it_create_topic(target, PARTITIONS)) {
                check(0, "setup");
                return -1;
        }
        return 0;
}

int main(int argc, char **argv)
{
        opts_t o = {200000, {100000, 1000000}, 10, 45};
        for (int i = 1; i + 1 < argc; i += 2) {
                if (!strcmp(argv[i], "--tasks"))
                        o.tasks = atoi(argv[i + 1]);
                else if (!strcmp(argv[i], "--pending"))
                        sscanf(argv[i + 1], "%d,%d", &o.pending[0],
                               &o.pending[1]);
                else if (!strcmp(argv[i], "--spread"))
                        o.spread_s = atoi(argv[i + 1]);
                else if (!strcmp(argv[i], "--lead"))
                        o.lead_s = atoi(argv[i + 1]);
                else
                        return 2;
        }
        if (o.tasks < 1 || o.spread_s < 1 || o.lead_s < 1 || it_env_init())
                return 2;
        setvbuf(stdout, NULL, _IOLBF, 0);
        printf("tasks %d value_bytes %d partitions %d\n", o.tasks, VALUE_LEN,
               PARTITIONS);

        /* The limit. */
        it_unique(prefix, sizeof(prefix), "bl");
        double copy_rate = 0, copy_cpu = 0;
        check(run_copy(o.tasks, &copy_rate, &copy_cpu) == 0, "copy");
        printf("copy_records_per_s %.0f\ncopy_cpu_us_per_record %.2f\n",
               copy_rate, copy_cpu);

        static const char *const modes[] = {"at_least_once", "exactly_once"};
        double drain_rate[2] = {0, 0};
        for (int m = 0; m < 2; m++) {
                char grp[96], rgrp[96], tier[128];
                if (section(grp, sizeof(grp), rgrp, sizeof(rgrp)))
                        return 1;
                snprintf(tier, sizeof(tier), "%s.tier.1s", prefix);
                int64_t due = kd_now_ms() - SEC;
                check(produce_tasks(tier, o.tasks, at_fixed, &due, "d") == 0,
                      "drain produce");
                fwd_run_t r;
                seen_t s;
                check(fwd_start(&r, "blA", modes[m], grp) == 0, "start");
                check(read_target(rgrp, o.tasks, 600000, &s) == 0,
                      "drain delivered");
                check(fwd_stop(&r) == 0, "forwarder exit");
                double span = (double)(s.last_ts - s.first_ts);
                drain_rate[m] = span > 0 ? s.n * 1000.0 / span : 0;
                printf("%s_drain_fires_per_s %.0f\n", modes[m], drain_rate[m]);
                printf("%s_drain_ratio_to_copy %.3f\n", modes[m],
                       copy_rate > 0 ? drain_rate[m] / copy_rate : 0);
                printf("%s_cpu_us_per_fire %.2f\n", modes[m],
                       r.fired > 0 ? r.cpu_us / (double)r.fired : 0);
                printf("%s_cpu_ratio_to_copy %.2f\n", modes[m],
                       r.fired > 0 && copy_cpu > 0
                           ? r.cpu_us / (double)r.fired / copy_cpu
                           : 0);
                printf("%s_drain_statements_per_fire %.4f\n", modes[m],
                       r.fired > 0 ? (double)r.statements / (double)r.fired
                                   : 0);
                printf("%s_drain_kafka_writes_per_task %.3f\n", modes[m],
                       (double)(o.tasks + r.hopped + r.fired) / o.tasks);
                check(s.early == 0, "drain early");
                it_db_drop(db);
        }

        /* Burst and spread, at_least_once, one forwarder running each. */
        for (int k = 0; k < 2; k++) {
                const int burst = k == 0;
                char grp[96], rgrp[96], tier[128];
                if (section(grp, sizeof(grp), rgrp, sizeof(rgrp)))
                        return 1;
                fwd_run_t r;
                seen_t s;
                check(fwd_start(&r, burst ? "blB" : "blS", "at_least_once",
                                grp) == 0,
                      "start");
                /* The burst: due 10 s after its produce began (tier 5s,
                 * then held). The spread: due LEAD..LEAD+SPREAD s ahead,
                 * in the tier the library would pick, hopping down. */
                int64_t due = kd_now_ms() + 10 * SEC;
                spread_t sp = {kd_now_ms() + o.lead_s * SEC,
                               (int64_t)o.spread_s * SEC, o.tasks};
                snprintf(tier, sizeof(tier), "%s.tier.%s", prefix,
                         burst ? "5s" : tier_for(o.lead_s * SEC));
                check(burst ? produce_tasks(tier, o.tasks, at_fixed, &due,
                                            "b") == 0
                            : produce_tasks(tier, o.tasks, at_spread, &sp,
                                            "s") == 0,
                      "produce");
                check(read_target(rgrp, o.tasks,
                                  (o.lead_s + o.spread_s + 600) * 1000,
                                  &s) == 0,
                      "delivered");
                check(fwd_stop(&r) == 0, "forwarder exit");
                check(s.early == 0, "early");
                const char *w = burst ? "burst" : "spread";
                printf("%s_lateness_ms p50 %lld p99 %lld max %lld\n", w,
                       (long long)s.p50, (long long)s.p99, (long long)s.max);
                printf("%s_kafka_writes_per_task %.3f\n", w,
                       (double)(o.tasks + r.hopped + r.fired) / o.tasks);
                printf("%s_statements_per_fire %.4f\n", w,
                       r.fired > 0 ? (double)r.statements / (double)r.fired
                                   : 0);
                if (burst) {
                        double span = (double)(s.last_ts - due);
                        double bound =
                            drain_rate[0] > 0
                                ? o.tasks * 1000.0 / drain_rate[0] + 1000
                                : 0;
                        printf("burst_fires_per_s %.0f\n",
                               span > 0 ? s.n * 1000.0 / span : 0);
                        printf("burst_done_ms %.0f bound_ms %.0f within %s\n",
                               span, bound, span <= bound ? "yes" : "no");
                }
                it_db_drop(db);
        }

        /* RSS with tasks pending over the next 24 h. */
        for (int k = 0; k < 2; k++) {
                if (o.pending[k] <= 0)
                        continue;
                char grp[96], rgrp[96], tier[128];
                if (section(grp, sizeof(grp), rgrp, sizeof(rgrp)))
                        return 1;
                /* All in the 6h tier: due 6..30 h ahead. */
                snprintf(tier, sizeof(tier), "%s.tier.6h", prefix);
                spread_t sp = {kd_now_ms() + 6 * 3600 * SEC, 24 * 3600 * SEC,
                               o.pending[k]};
                check(produce_tasks(tier, o.pending[k], at_spread, &sp, "p") ==
                          0,
                      "pending produce");
                fwd_run_t r;
                check(fwd_start(&r, "blR", "at_least_once", grp) == 0, "start");
                it_sleep_until(kd_now_ms() + 15 * SEC);
                long long rss = rss_kb_of(r.f.pid, "VmRSS");
                check(fwd_stop(&r) == 0, "forwarder exit");
                printf("pending_%d_rss_mb %.1f peak_mb %.1f\n", o.pending[k],
                       rss / 1024.0, r.hwm_kb / 1024.0);
                it_db_drop(db);
        }
        printf("result %s\n", failed ? "FAILED" : "ok");
        return failed ? 1 : 0;
}
