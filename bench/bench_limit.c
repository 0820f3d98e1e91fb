/* SPDX-License-Identifier: Apache-2.0 */
/* bench_limit: the forwarder against the limit of this design on this
 * machine (issue 9; docs/performance.md). In one run, on the stack named
 * by KDELAY_BROKERS / KDELAY_MYSQL_URL (and KDELAY_STACK_DIR, for the
 * broker's and MariaDB's CPU time):
 *
 *   copy     (after one more, not counted, that warms the broker up)
 *            the median of three plain consume->produce copies of D
 *            records of the same size and headers with librdkafka
 *            (idempotent, acks=all): records/s and CPU per record (a
 *            child process, its rusage). The limit.
 *   drain    (after one of D/2 per mode, not counted, that warms the
 *            broker's paths for small produces and transactions)
 *            D already-due tasks in a tier when one forwarder starts, per
 *            delivery mode: fires/s (first to last delivery), its ratio to
 *            the copy, forwarder CPU per fire and its ratio to the copy's
 *            per record, MySQL statements per fire, Kafka writes per task;
 *            the broker's and MariaDB's CPU per fire beside the copy's.
 *   burst    B tasks due at one millisecond, the forwarder running:
 *            lateness p50/p99/max, fires/s, lost, early, and whether the
 *            burst finished within B / (the at_least_once drain's rate of
 *            the same run) + 1 s.
 *   spread   N tasks due evenly over SPREAD s, scheduled LEAD s ahead:
 *            lateness, Kafka writes per task (schedule + hops + fire).
 *   pending  P1 and P2 tasks pending 6..30 h ahead, written in bulk
 *            (bl_scale.c): the forwarder's RSS (flat is the goal: P2's
 *            within 10% of P1's), the time from its start to its first
 *            fire, and the lateness of a task due 10 s after its start.
 *   rows     R fate rows bulk-loaded (bl_scale.c): status and cancel
 *            latency, and a spread's lateness p99 alone and while
 *            `kdelayctl db gc` deletes nine in ten of them.
 *   crash    two static-member forwarders, one SIGKILLed every 3-6 s for
 *            CRASH_LOOP s and restarted 0-2 s later (bl_crash.c):
 *            lateness, lost, early, duplicates.
 *   ladder   (only when --only names it: about 6 minutes) the default
 *            ladder scaled by 1/FACTOR and LADDER_TASKS tasks log-uniform
 *            over 1 s .. 7 d scaled alike (bl_ladder.c): Kafka writes per
 *            task against kd_path_plan's at the run's read lag and the
 *            full-scale plan, lateness, lost, early.
 *
 * Figures are printed as `name value` lines; nothing is asserted but that
 * every task was delivered, none early, and every forwarder exited 0
 * (exit 1 otherwise): targets are ratios to the copy of the same run
 * (docs/performance.md), never timed assertions.
 *
 * Usage: bench_limit [--tasks N] [--burst-tasks B] [--drain-tasks D]
 *                    [--pending P1,P2] [--rows R] [--gc-pause G]
 *                    [--spread S] [--lead L] [--crash-tasks N]
 *                    [--crash-loop S] [--crash-static 0|1]
 *                    [--ladder-tasks N] [--ladder-factor F]
 *                    [--only LIST] [-X name=value ...]
 *   defaults 200000 tasks (burst, spread; --burst-tasks sets the burst's
 *   alone: due 10 s after its produce began, 15 s above 200,000, time
 *   enough to write 1M), 1000000 for the copy and the
 *   drains (a copy of fewer finishes in under a second and its rate
 *   swings), pending 100000,10000000, rows 10000000 (gc with its own
 *   --pause unless --gc-pause gives one), spread 10 s,
 *   lead 45 s
 *   (the spread's tasks are due LEAD..LEAD+SPREAD s after scheduling),
 *   crash 20000 tasks and a 60 s loop, static members (0: dynamic, for
 *   comparison), ladder 20000 tasks at 1/2000 (7 d -> 5m2.4s); --only
 *   runs the named sections (comma-separated:
 *   copy,drain,burst,spread,pending,rows,crash,ladder; default all but
 *   ladder);
 *   -X gives every forwarder a property (up to 8), for experiments. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bl.h"
#include "kd_util.h"

#ifdef BL_JEMALLOC
/* The forwarder's jemalloc options (src/fwd/top/main.c), for the copy too. */
const char *malloc_conf = "background_thread:true";
#endif

typedef struct opts {
        int tasks;
        int burst_tasks; /* 0 = tasks */
        int drain_tasks; /* the copy's and the drains' */
        int pending[2];
        int rows;
        const char *gc_pause; /* rows: db gc --pause; NULL = its default */
        int spread_s, lead_s;
        int crash_tasks, crash_loop_s, crash_static;
        int ladder_tasks, ladder_factor;
        const char *only; /* NULL = every section but ladder */
} opts_t;

static int wanted(const opts_t *o, const char *section)
{
        if (!o->only)
                return strcmp(section, "ladder") != 0;
        size_t n = strlen(section);
        for (const char *p = o->only; (p = strstr(p, section)); p += n)
                if ((p == o->only || p[-1] == ',') &&
                    (p[n] == ',' || p[n] == '\0'))
                        return 1;
        return 0;
}

/* --- the copy (the limit) ------------------------------------------------
 */

/* Copies n records from src to dst (idempotent, acks=all, headers
 * copied); in a child process so that its CPU time is its own. */
static void copy_child(const char *src, const char *dst, int n, int fd)
{
        char grp[128];
        snprintf(grp, sizeof(grp), "%s-copy", bl_prefix);
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
        if (!c || !p || bl_subscribe(c, src))
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

#define COPY_RUNS 3

static int cmp_double(const void *a, const void *b)
{
        double x = *(const double *)a, y = *(const double *)b;
        return (x > y) - (x < y);
}

/* The median of n values (n odd); sorts v. */
static double median(double *v, int n)
{
        qsort(v, (size_t)n, sizeof(*v), cmp_double);
        return v[n / 2];
}

/* The copy of n records: its rate, its CPU per record, and the broker's
 * CPU per record meanwhile (-1 when the broker's pid is unknown). */
static int run_copy(int n, double *rate, double *cpu_us, double *kafka_us)
{
        char src[96], dst[96];
        snprintf(src, sizeof(src), "%s.copy-src", bl_prefix);
        snprintf(dst, sizeof(dst), "%s.copy-dst", bl_prefix);
        int64_t now = kd_now_ms();
        if (it_create_topic(src, BL_PARTITIONS) ||
            it_create_topic(dst, BL_PARTITIONS) ||
            bl_produce(src, n, 0, bl_at_fixed, &now, "copy"))
                return -1;
        int fds[2];
        if (pipe(fds))
                return -1;
        pid_t kafka = bl_stack_pid("kafka");
        double kafka0 = kafka > 0 ? bl_cpu_us_of(kafka) : -1;
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
        *kafka_us = kafka0 >= 0 ? (bl_cpu_us_of(kafka) - kafka0) / n : -1;
        return 0;
}

/* The stack's CPU time (broker, MariaDB) over a window. */
typedef struct stack_cpu {
        pid_t pid[2];
        double at[2];
} stack_cpu_t;

static void stack_cpu_start(stack_cpu_t *c)
{
        c->pid[0] = bl_stack_pid("kafka");
        c->pid[1] = bl_stack_pid("mysql");
        for (int k = 0; k < 2; k++)
                c->at[k] = c->pid[k] > 0 ? bl_cpu_us_of(c->pid[k]) : -1;
}

/* CPU per unit of the broker [0] and MariaDB [1] since the start; -1
 * when unknown. */
static void stack_cpu_per(const stack_cpu_t *c, double units, double out[2])
{
        for (int k = 0; k < 2; k++)
                out[k] = c->at[k] >= 0 && units > 0
                             ? (bl_cpu_us_of(c->pid[k]) - c->at[k]) / units
                             : -1;
}

/* Waits until InnoDB has purged the undo history (at most 120 s) and
 * returns how long that took in ms, -1 when it could not tell. Every
 * FIRED mark leaves history that InnoDB's purge threads remove later: a
 * drain's MariaDB CPU counts the purge it caused, and the next section
 * starts without it. */
static int64_t mysql_purged(void)
{
        MYSQL *conn = it_mysql_connect();
        if (!conn)
                return -1;
        int64_t t0 = kd_mono_ms(), waited = -1;
        while (kd_mono_ms() - t0 < 120 * SEC) {
                MYSQL_RES *res = NULL;
                if (mysql_query(conn, "SELECT COUNT FROM "
                                      "information_schema.INNODB_METRICS "
                                      "WHERE NAME = 'trx_rseg_history_len'") ||
                    !(res = mysql_store_result(conn)))
                        break;
                MYSQL_ROW row = mysql_fetch_row(res);
                long long len = row && row[0] ? atoll(row[0]) : -1;
                mysql_free_result(res);
                if (len < 0)
                        break;
                if (len < 100) {
                        waited = kd_mono_ms() - t0;
                        break;
                }
                it_sleep_until(kd_now_ms() + 200);
        }
        mysql_close(conn);
        return waited;
}

/* copy_sys: the copy's system CPU per record (copy program + broker),
 * 0 when unknown. */
/* The drain of n due tasks in mode; a warm-up prints its rate and the
 * broker's CPU only, under warmup_<mode>, and gives no ratios. */
static void run_drain(int n, const char *mode, int warmup, double copy_rate,
                      double copy_cpu, double copy_sys, double *rate)
{
        char grp[96], rgrp[96], tier[128];
        if (bl_section(NULL, grp, sizeof(grp), rgrp, sizeof(rgrp)))
                return;
        snprintf(tier, sizeof(tier), "%s.tier.1s", bl_prefix);
        int64_t due = kd_now_ms() - SEC;
        bl_check(bl_produce(tier, n, 0, bl_at_fixed, &due, "d") == 0,
                 "drain produce");
        bl_fwd_t r;
        bl_seen_t s;
        stack_cpu_t sc;
        mysql_purged();
        long long w0[3], w1[3];
        int rows_known = !bl_mysql_row_writes(w0);
        stack_cpu_start(&sc);
        bl_check(bl_fwd_start(&r, "blA", mode, grp, NULL, 1) == 0, "start");
        bl_check(bl_read_target(rgrp, n, 600000, 0, &s) == 0,
                 "drain delivered");
        bl_check(bl_fwd_stop(&r) == 0, "forwarder exit");
        rows_known = rows_known && !bl_mysql_row_writes(w1);
        int64_t purge_ms = mysql_purged();
        double stack[2];
        stack_cpu_per(&sc, (double)r.fired, stack);
        double span = (double)(s.last_ts - s.first_ts);
        *rate = span > 0 ? s.n * 1000.0 / span : 0;
        double cpu = r.fired > 0 ? r.cpu_us / (double)r.fired : 0;
        bl_check(s.early == 0, "drain early");
        it_db_drop(bl_db);
        if (warmup) {
                printf("warmup_%s_drain_fires_per_s %.0f\n"
                       "warmup_%s_kafka_cpu_us_per_fire %.2f\n",
                       mode, *rate, mode, stack[0]);
                return;
        }
        printf("%s_drain_fires_per_s %.0f\n", mode, *rate);
        printf("%s_drain_ratio_to_copy %.3f\n", mode,
               copy_rate > 0 ? *rate / copy_rate : 0);
        printf("%s_cpu_us_per_fire %.2f\n", mode, cpu);
        printf("%s_cpu_ratio_to_copy %.2f\n", mode,
               copy_cpu > 0 ? cpu / copy_cpu : 0);
        printf("%s_kafka_cpu_us_per_fire %.2f\n", mode, stack[0]);
        printf("%s_mysql_cpu_us_per_fire %.2f\n", mode, stack[1]);
        printf("%s_mysql_purge_after_ms %lld\n", mode, (long long)purge_ms);
        /* The machine's CPU per fire: forwarder + broker + MariaDB. */
        double sys =
            stack[0] >= 0 && stack[1] >= 0 ? cpu + stack[0] + stack[1] : -1;
        printf("%s_system_cpu_us_per_fire %.2f\n", mode, sys);
        printf("%s_system_cpu_ratio_to_copy %.2f\n", mode,
               sys > 0 && copy_sys > 0 ? sys / copy_sys : 0);
        printf("%s_drain_statements_per_fire %.4f\n", mode,
               r.fired > 0 ? (double)r.statements / (double)r.fired : 0);
        printf("%s_drain_kafka_writes_per_task %.3f\n", mode,
               (double)(n + r.hopped + r.fired) / n);
        /* Every row the server wrote, updated or deleted over the drain
         * (the fate table's and any other: issue 44's measure). */
        if (rows_known && r.fired > 0) {
                double d[3];
                for (int i = 0; i < 3; i++)
                        d[i] = (double)(w1[i] - w0[i]) / (double)r.fired;
                printf("%s_mysql_row_writes_per_fire %.3f inserts %.3f "
                       "updates %.3f deletes %.3f\n",
                       mode, d[0] + d[1] + d[2], d[0], d[1], d[2]);
        } else {
                printf("%s_mysql_row_writes_per_fire unknown\n", mode);
        }
}

/* Burst (B due at one millisecond) or spread (N due over SPREAD s,
 * LEAD s ahead), at_least_once, one forwarder running. */
static void run_due(const opts_t *o, int burst, double drain_rate)
{
        char grp[96], rgrp[96], tier[128];
        int n = burst ? o->burst_tasks : o->tasks;
        if (bl_section(NULL, grp, sizeof(grp), rgrp, sizeof(rgrp)))
                return;
        bl_fwd_t r;
        bl_seen_t s;
        bl_check(bl_fwd_start(&r, burst ? "blB" : "blS", "at_least_once", grp,
                              NULL, 1) == 0,
                 "start");
        /* The burst: due 10 s after its produce began (15 s above
         * 200,000 tasks: 1M take 2-5 s to write), in the tier the
         * library would pick (1s of the default ladder; due at once,
         * then held). The spread: due LEAD..LEAD+SPREAD s ahead, in the
         * tier the library would pick, hopping down. */
        int64_t lead = burst && n > 200000 ? 15 * SEC : 10 * SEC;
        int64_t t0 = kd_now_ms(), due = t0 + lead;
        bl_spread_t sp = {kd_now_ms() + o->lead_s * SEC,
                          (int64_t)o->spread_s * SEC, n};
        snprintf(tier, sizeof(tier), "%s.tier.%s", bl_prefix,
                 bl_tier_for(burst ? lead : o->lead_s * SEC));
        bl_check(burst ? bl_produce(tier, n, 0, bl_at_fixed, &due, "b") == 0
                       : bl_produce(tier, n, 0, bl_at_spread, &sp, "s") == 0,
                 "produce");
        int64_t written = kd_now_ms();
        int rc = bl_read_target(rgrp, n, (o->lead_s + o->spread_s + 600) * 1000,
                                0, &s);
        bl_check(bl_fwd_stop(&r) == 0, "forwarder exit");
        const char *w = burst ? "burst" : "spread";
        int lost = n - (int)s.n;
        bl_check(rc == 0 && lost == 0, "delivered");
        bl_check(s.early == 0, "early");
        printf("%s_lateness_ms p50 %lld p99 %lld max %lld\n", w,
               (long long)s.p50, (long long)s.p99, (long long)s.max);
        printf("%s_kafka_writes_per_task %.3f\n", w,
               (double)(n + r.hopped + r.fired) / n);
        printf("%s_statements_per_fire %.4f\n", w,
               r.fired > 0 ? (double)r.statements / (double)r.fired : 0);
        if (burst) {
                double span = (double)(s.last_ts - due);
                printf("burst_tasks %d written_ms %lld before_due_ms %lld\n", n,
                       (long long)(written - t0), (long long)(due - written));
                printf("burst_lost %d early %d duplicates %zu\n", lost, s.early,
                       s.dups);
                printf("burst_fires_per_s %.0f\n",
                       span > 0 ? s.n * 1000.0 / span : 0);
                /* The bound needs the at_least_once drain of this run. */
                if (drain_rate > 0) {
                        double bound = n * 1000.0 / drain_rate + 1000;
                        printf("burst_done_ms %.0f bound_ms %.0f within %s\n",
                               span, bound, span <= bound ? "yes" : "no");
                } else {
                        printf("burst_done_ms %.0f bound_ms unknown (no "
                               "drain in this run)\n",
                               span);
                }
                /* What the fired tasks' rows take in the fate table,
                 * until gc. */
                long long rows, data, index;
                if (!bl_fate_table_bytes(&rows, &data, &index) && rows > 0)
                        printf("burst_fate_rows %lld bytes_per_row data %.0f "
                               "index %.0f\n",
                               rows, (double)data / (double)rows,
                               (double)index / (double)rows);
                else
                        printf("burst_fate_rows unknown\n");
        }
        it_db_drop(bl_db);
}

int main(int argc, char **argv)
{
        opts_t o = {.tasks = 200000,
                    .drain_tasks = 1000000,
                    .pending = {100000, 10000000},
                    .rows = 10000000,
                    .spread_s = 10,
                    .lead_s = 45,
                    .crash_tasks = 20000,
                    .crash_loop_s = 60,
                    .crash_static = 1,
                    .ladder_tasks = 20000,
                    .ladder_factor = 2000};
        size_t nprops = 0;
        for (int i = 1; i + 1 < argc; i += 2) {
                const char *a = argv[i], *v = argv[i + 1];
                if (!strcmp(a, "-X") && nprops < BL_FWD_PROPS_MAX)
                        bl_fwd_props[nprops++] = v;
                else if (!strcmp(a, "--tasks"))
                        o.tasks = atoi(v);
                else if (!strcmp(a, "--burst-tasks"))
                        o.burst_tasks = atoi(v);
                else if (!strcmp(a, "--ladder-tasks"))
                        o.ladder_tasks = atoi(v);
                else if (!strcmp(a, "--ladder-factor"))
                        o.ladder_factor = atoi(v);
                else if (!strcmp(a, "--drain-tasks"))
                        o.drain_tasks = atoi(v);
                else if (!strcmp(a, "--pending"))
                        sscanf(v, "%d,%d", &o.pending[0], &o.pending[1]);
                else if (!strcmp(a, "--rows"))
                        o.rows = atoi(v);
                else if (!strcmp(a, "--gc-pause"))
                        o.gc_pause = v;
                else if (!strcmp(a, "--spread"))
                        o.spread_s = atoi(v);
                else if (!strcmp(a, "--lead"))
                        o.lead_s = atoi(v);
                else if (!strcmp(a, "--crash-tasks"))
                        o.crash_tasks = atoi(v);
                else if (!strcmp(a, "--crash-loop"))
                        o.crash_loop_s = atoi(v);
                else if (!strcmp(a, "--crash-static"))
                        o.crash_static = atoi(v);
                else if (!strcmp(a, "--only"))
                        o.only = v;
                else
                        return 2;
        }
        if (!o.burst_tasks)
                o.burst_tasks = o.tasks;
        if (argc % 2 == 0 || o.tasks < 1 || o.burst_tasks < 1 ||
            o.drain_tasks < 1 || o.rows < 10 || o.spread_s < 1 ||
            o.lead_s < 1 || o.crash_tasks < 1 || o.crash_loop_s < 1 ||
            o.ladder_tasks < 1 || o.ladder_factor < 1 || it_env_init())
                return 2;
        setvbuf(stdout, NULL, _IOLBF, 0);
        printf("tasks %d burst_tasks %d drain_tasks %d value_bytes %d "
               "partitions %d allocator %s\n",
               o.tasks, o.burst_tasks, o.drain_tasks, BL_VALUE_LEN,
               BL_PARTITIONS, BL_ALLOCATOR);

        /* A fresh broker spends its first minute compiling (its CPU per
         * record falls about fourfold): a first copy, not counted, so that
         * what follows meets a warm one. A copy of 1M records takes 2-5 s
         * and its rate swings by 2x from run to run: the limit is the
         * median of COPY_RUNS copies (each figure's own median). */
        double copy_rate = 0, copy_cpu = 0, copy_kafka = -1;
        if (wanted(&o, "copy") || wanted(&o, "drain")) {
                it_unique(bl_prefix, sizeof(bl_prefix), "bl");
                bl_check(run_copy(o.drain_tasks, &copy_rate, &copy_cpu,
                                  &copy_kafka) == 0,
                         "warmup_copy");
                printf("warmup_copy_records_per_s %.0f\n"
                       "warmup_copy_cpu_us_per_record %.2f\n"
                       "warmup_copy_kafka_cpu_us_per_record %.2f\n",
                       copy_rate, copy_cpu, copy_kafka);
        }
        if (wanted(&o, "copy")) {
                double runs[3][COPY_RUNS];
                for (int k = 0; k < COPY_RUNS; k++) {
                        it_unique(bl_prefix, sizeof(bl_prefix), "bl");
                        bl_check(run_copy(o.drain_tasks, &runs[0][k],
                                          &runs[1][k], &runs[2][k]) == 0,
                                 "copy");
                }
                printf("copy_runs_records_per_s");
                for (int k = 0; k < COPY_RUNS; k++)
                        printf(" %.0f", runs[0][k]);
                printf("\ncopy_runs_cpu_us_per_record");
                for (int k = 0; k < COPY_RUNS; k++)
                        printf(" %.2f", runs[1][k]);
                printf("\n");
                copy_rate = median(runs[0], COPY_RUNS);
                copy_cpu = median(runs[1], COPY_RUNS);
                copy_kafka = median(runs[2], COPY_RUNS);
                printf("copy_records_per_s %.0f\ncopy_cpu_us_per_record %.2f\n"
                       "copy_kafka_cpu_us_per_record %.2f\n",
                       copy_rate, copy_cpu, copy_kafka);
        }
        if (!wanted(&o, "copy"))
                copy_rate = copy_cpu = 0; /* no ratios to a warm-up */
        double copy_sys =
            copy_kafka >= 0 && copy_cpu > 0 ? copy_cpu + copy_kafka : 0;
        if (copy_sys > 0)
                printf("copy_system_cpu_us_per_record %.2f\n", copy_sys);
        static const char *const modes[] = {"at_least_once", "exactly_once"};
        double drain_rate[2] = {0, 0};
        /* The copy warms the broker's paths for large batches; a drain's
         * small produces, fetches and transactions take their own
         * compiling (the first measured drain paid 3x the broker's CPU
         * per fire of the next): a half-size drain of each mode first,
         * not counted. */
        for (int m = 0; m < 2 && wanted(&o, "drain"); m++)
                run_drain(o.drain_tasks / 2 + 1, modes[m], 1, 0, 0, 0,
                          &drain_rate[m]);
        for (int m = 0; m < 2 && wanted(&o, "drain"); m++)
                run_drain(o.drain_tasks, modes[m], 0, copy_rate, copy_cpu,
                          copy_sys, &drain_rate[m]);
        if (wanted(&o, "burst"))
                run_due(&o, 1, drain_rate[0]);
        if (wanted(&o, "spread"))
                run_due(&o, 0, 0);
        long long rss[2] = {-1, -1}, peak[2] = {-1, -1};
        for (int k = 0; k < 2 && wanted(&o, "pending"); k++)
                if (o.pending[k] > 0)
                        bl_pending_run(o.pending[k], &rss[k], &peak[k]);
        if (rss[0] > 0 && rss[1] > 0)
                printf("pending_rss_ratio %.2f within_10pct %s\n",
                       (double)rss[1] / (double)rss[0],
                       rss[1] <= rss[0] * 11 / 10 ? "yes" : "no");
        /* The peak (VmHWM) too: RSS at one instant swings by what the
         * allocator has not yet given back (the first fetches' buffers,
         * freed at the pause). */
        if (peak[0] > 0 && peak[1] > 0)
                printf("pending_peak_ratio %.2f within_10pct %s\n",
                       (double)peak[1] / (double)peak[0],
                       peak[1] <= peak[0] * 11 / 10 ? "yes" : "no");
        if (wanted(&o, "rows"))
                bl_rows_run(o.rows, o.tasks, o.spread_s, o.gc_pause);
        if (wanted(&o, "crash"))
                bl_crash_run(o.crash_tasks, o.crash_loop_s, o.crash_static);
        if (wanted(&o, "ladder"))
                bl_ladder_run(o.ladder_tasks, o.ladder_factor);
        printf("result %s\n", bl_failed() ? "FAILED" : "ok");
        return bl_failed() ? 1 : 0;
}
