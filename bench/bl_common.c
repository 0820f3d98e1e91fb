/* SPDX-License-Identifier: Apache-2.0 */
/* bench_limit's common parts (bl.h): sections of the stack, tasks in,
 * the target read back, forwarders started, stopped and measured. */
#include "bl.h"

#include <dirent.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <kdelay/kdelay.h>
#include <mysql.h>

#include "kd_tiers.h"
#include "kd_topics.h"
#include "kd_util.h"
#include "kd_wire.h"

char bl_prefix[40], bl_db[64], bl_url[256], bl_target[96];
const char *bl_fwd_props[BL_FWD_PROPS_MAX + 1];
const char *bl_fwd_bin = KDELAY_FORWARDER;
static int failed;

void bl_check(int ok, const char *what)
{
        if (!ok) {
                printf("FAILED %s\n", what);
                failed = 1;
        }
}

int bl_failed(void)
{
        return failed;
}

/* The section's tier topics: the default ladder's, or those of tiers (a
 * `tiers` value) when it is not NULL. 0 on success. */
static int section_tiers(const char *tiers)
{
        if (!tiers)
                return it_tiers_create(bl_prefix, bl_url, BL_PARTITIONS);
        char errstr[512];
        kd_topic_report_t reports[KD_TOPICS_MAX];
        size_t nrep;
        kdelay_conf_t *conf = it_conf_new(bl_prefix, bl_url);
        int rc =
            !conf ||
            kdelay_conf_set(conf, "tiers", tiers, errstr, sizeof(errstr)) ||
            kd_topics_create(conf, BL_PARTITIONS, 1, reports, &nrep, errstr,
                             sizeof(errstr));
        if (rc)
                fprintf(stderr, "bench_limit: ladder topics: %s\n",
                        conf ? errstr : "no conf");
        kdelay_conf_destroy(conf);
        return rc ? -1 : 0;
}

int bl_section(const char *tiers, char *grp, size_t grp_size, char *rgrp,
               size_t rgrp_size)
{
        it_unique(bl_prefix, sizeof(bl_prefix), "bl");
        it_unique(bl_db, sizeof(bl_db), "kdbl");
        snprintf(bl_target, sizeof(bl_target), "%s.target", bl_prefix);
        snprintf(grp, grp_size, "%s-fwd", bl_prefix);
        snprintf(rgrp, rgrp_size, "%s-read", bl_prefix);
        if (it_db_create(bl_db, 1, bl_url, sizeof(bl_url)) ||
            section_tiers(tiers) || it_create_topic(bl_target, BL_PARTITIONS)) {
                bl_check(0, "setup");
                return -1;
        }
        return 0;
}

/* --- producing wire-format records -------------------------------------- */

static void dr_count(rd_kafka_t *rk, const rd_kafka_message_t *m, void *op)
{
        (void)rk;
        int *errors = op;
        if (m->err)
                (*errors)++;
}

rd_kafka_t *bl_producer_new(int linger_ms, int *errors)
{
        char errstr[512], linger[16];
        snprintf(linger, sizeof(linger), "%d", linger_ms);
        rd_kafka_conf_t *c = rd_kafka_conf_new();
        const char *props[] = {"bootstrap.servers",
                               it_brokers(),
                               "enable.idempotence",
                               "true",
                               "linger.ms",
                               linger,
                               "batch.num.messages",
                               "10000",
                               "queue.buffering.max.messages",
                               "1000000",
                               NULL};
        for (int i = 0; props[i]; i += 2)
                if (rd_kafka_conf_set(c, props[i], props[i + 1], errstr,
                                      sizeof(errstr))) {
                        rd_kafka_conf_destroy(c);
                        return NULL;
                }
        rd_kafka_conf_set_dr_msg_cb(c, dr_count);
        rd_kafka_conf_set_opaque(c, errors);
        rd_kafka_t *rk =
            rd_kafka_new(RD_KAFKA_PRODUCER, c, errstr, sizeof(errstr));
        if (!rk)
                rd_kafka_conf_destroy(c); /* not taken on failure */
        return rk;
}

int bl_produce_task(rd_kafka_t *rk, const char *topic, const char *id,
                    int64_t fire_at)
{
        static char value[BL_VALUE_LEN];
        char fa[24];
        if (!value[0])
                memset(value, 'v', sizeof(value));
        snprintf(fa, sizeof(fa), "%lld", (long long)fire_at);
        rd_kafka_headers_t *h = rd_kafka_headers_new(4);
        rd_kafka_header_add(h, KDELAY_HDR_ID, -1, id, -1);
        rd_kafka_header_add(h, KDELAY_HDR_TARGET, -1, bl_target, -1);
        rd_kafka_header_add(h, KDELAY_HDR_FIRE_AT, -1, fa, -1);
        rd_kafka_header_add(h, KDELAY_HDR_VERSION, -1, KDELAY_WIRE_VERSION, -1);
        rd_kafka_resp_err_t err;
        while (
            (err = rd_kafka_producev(
                 rk, RD_KAFKA_V_TOPIC(topic), RD_KAFKA_V_KEY(id, strlen(id)),
                 RD_KAFKA_V_VALUE(value, sizeof(value)), RD_KAFKA_V_HEADERS(h),
                 RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_END)) ==
            RD_KAFKA_RESP_ERR__QUEUE_FULL)
                rd_kafka_poll(rk, 10);
        if (err) {
                rd_kafka_headers_destroy(h); /* not taken on failure */
                return -1;
        }
        return 0;
}

int bl_produce(const char *topic, int n, int base,
               int64_t (*fire_at)(int, void *), void *arg, const char *stem)
{
        int errors = 0;
        rd_kafka_t *rk = bl_producer_new(20, &errors);
        if (!rk)
                return -1;
        for (int i = base; i < base + n; i++) {
                char id[64];
                snprintf(id, sizeof(id), "%s-%s-%d", bl_prefix, stem, i);
                if (bl_produce_task(rk, topic, id, fire_at(i, arg))) {
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

int64_t bl_at_fixed(int i, void *arg)
{
        (void)i;
        return *(int64_t *)arg;
}

int64_t bl_at_spread(int i, void *arg)
{
        const bl_spread_t *s = arg;
        return s->first + (int64_t)i * s->span / s->n;
}

/* --- reading the target back -------------------------------------------- */

static int cmp_i64(const void *a, const void *b)
{
        int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
        return x < y ? -1 : x > y;
}

int bl_subscribe(rd_kafka_t *rk, const char *topic)
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

long bl_task_no(const rd_kafka_message_t *m)
{
        const char *k = m->key;
        size_t len = m->key_len, i = len;
        while (i > 0 && k[i - 1] >= '0' && k[i - 1] <= '9')
                i--;
        if (i == len || len - i > 9)
                return -1;
        long v = 0;
        for (; i < len; i++)
                v = v * 10 + (k[i] - '0');
        return v;
}

int64_t bl_fire_at_of(const rd_kafka_message_t *m)
{
        rd_kafka_headers_t *h = NULL;
        const void *v;
        size_t len;
        char fa[24] = "0";
        if (!rd_kafka_message_headers(m, &h) &&
            !rd_kafka_header_get_last(h, KDELAY_HDR_FIRE_AT, &v, &len) &&
            len < sizeof(fa)) {
                memcpy(fa, v, len);
                fa[len] = '\0';
        }
        return atoll(fa);
}

int bl_read_target(const char *grp, int want, int timeout_ms, int idle_ms,
                   bl_seen_t *s)
{
        return bl_read_target_ts(grp, want, timeout_ms, idle_ms, s, NULL);
}

int bl_read_target_ts(const char *grp, int want, int timeout_ms, int idle_ms,
                      bl_seen_t *s, int64_t *ts_of)
{
        return bl_read_topic(bl_target, grp, want, timeout_ms, idle_ms, s,
                             ts_of);
}

int bl_read_topic(const char *topic, const char *grp, int want, int timeout_ms,
                  int idle_ms, bl_seen_t *s, int64_t *ts_of)
{
        /* Fetches of 1 MB or 0.5 s, not one per produce: lateness is read
         * from the records' timestamps, and the copy's reader fetches
         * alike. */
        const char *props[] = {"group.id",
                               grp,
                               "auto.offset.reset",
                               "earliest",
                               "isolation.level",
                               "read_committed",
                               "enable.auto.commit",
                               "false",
                               "fetch.min.bytes",
                               "1048576",
                               "fetch.wait.max.ms",
                               "500",
                               NULL};
        rd_kafka_t *rk = it_kafka_new(RD_KAFKA_CONSUMER, props);
        int64_t *late = malloc((size_t)want * sizeof(*late));
        unsigned char *got = calloc((size_t)want, 1);
        if (!rk || !late || !got || bl_subscribe(rk, topic)) {
                free(late);
                free(got);
                if (rk)
                        rd_kafka_destroy(rk);
                return -1;
        }
        memset(s, 0, sizeof(*s));
        s->first_ts = INT64_MAX;
        int64_t end = kd_mono_ms() + timeout_ms, idle_end = INT64_MAX;
        while (kd_mono_ms() < end && kd_mono_ms() < idle_end) {
                rd_kafka_message_t *m = rd_kafka_consumer_poll(rk, 200);
                if (!m)
                        continue;
                long no = m->err ? -1 : bl_task_no(m);
                if (no >= 0 && no < want) {
                        int64_t ts = rd_kafka_message_timestamp(m, NULL);
                        int64_t fa = bl_fire_at_of(m);
                        s->early += ts < fa;
                        if (got[no]) {
                                s->dups++;
                        } else {
                                got[no] = 1;
                                late[s->n++] = ts - fa;
                                if (ts_of)
                                        ts_of[no] = ts;
                                if (s->n == (size_t)want)
                                        idle_end = kd_mono_ms() + idle_ms;
                        }
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
        free(got);
        return s->n == (size_t)want ? 0 : -1;
}

/* --- processes ---------------------------------------------------------- */

/* utime + stime of /proc/PID/stat: the kernel's sum over the process's
 * threads, those that have exited included (a MariaDB connection's thread
 * ends with its connection; summing the live threads' schedstat lost
 * their time and once gave MariaDB a negative CPU per fire). */
double bl_cpu_us_of(pid_t pid)
{
        char path[64], buf[1024];
        snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
        FILE *fp = fopen(path, "r");
        if (!fp)
                return -1;
        size_t n = fread(buf, 1, sizeof(buf) - 1, fp);
        fclose(fp);
        buf[n] = '\0';
        /* After the command's ')': state (field 3) ... utime (14), stime
         * (15), in clock ticks. */
        const char *p = strrchr(buf, ')');
        unsigned long long ut = 0, st = 0;
        long hz = sysconf(_SC_CLK_TCK);
        if (!p || hz <= 0 ||
            sscanf(p + 1,
                   " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu",
                   &ut, &st) != 2)
                return -1;
        return (double)(ut + st) * 1e6 / (double)hz;
}

long long bl_rss_kb_of(pid_t pid, const char *key)
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

pid_t bl_stack_pid(const char *what)
{
        const char *dir = getenv("KDELAY_STACK_DIR");
        char path[512];
        long pid = -1;
        if (!dir || !*dir)
                return -1;
        snprintf(path, sizeof(path), "%s/%s/%s", dir, what,
                 strcmp(what, "mysql") ? "kafka.pid" : "server.pid");
        FILE *fp = fopen(path, "r");
        if (!fp)
                return -1;
        if (fscanf(fp, "%ld", &pid) != 1)
                pid = -1;
        fclose(fp);
        return pid > 0 && bl_cpu_us_of((pid_t)pid) >= 0 ? (pid_t)pid : -1;
}

/* The bytes of the files in dir; -1 when it cannot be read. */
static long long dir_bytes(const char *dir)
{
        DIR *d = opendir(dir);
        if (!d)
                return -1;
        long long sum = 0;
        for (struct dirent *e; (e = readdir(d));) {
                char path[PATH_MAX];
                struct stat st;
                if (snprintf(path, sizeof(path), "%s/%s", dir, e->d_name) >=
                    (int)sizeof(path))
                        continue;
                if (!stat(path, &st) && S_ISREG(st.st_mode))
                        sum += (long long)st.st_blocks * 512;
        }
        closedir(d);
        return sum;
}

long long bl_topic_disk_bytes(const char *topic)
{
        const char *stack = getenv("KDELAY_STACK_DIR");
        char data[512];
        if (!stack || !*stack)
                return -1;
        snprintf(data, sizeof(data), "%s/kafka/data", stack);
        DIR *d = opendir(data);
        if (!d)
                return -1;
        size_t n = strlen(topic);
        long long sum = 0;
        int found = 0;
        for (struct dirent *e; (e = readdir(d));) {
                const char *p = e->d_name + n;
                if (strncmp(e->d_name, topic, n) || *p != '-' || !p[1] ||
                    strspn(p + 1, "0123456789") != strlen(p + 1))
                        continue;
                char dir[sizeof(data) + sizeof(e->d_name) + 1];
                snprintf(dir, sizeof(dir), "%s/%s", data, e->d_name);
                long long b = dir_bytes(dir);
                if (b >= 0) {
                        sum += b;
                        found++;
                }
        }
        closedir(d);
        return found ? sum : -1;
}

/* The sum of key= over the forwarder's event=forwarder_stopped lines. */
static long long stat_of(const char *log, const char *key)
{
        return it_log_sum(log, "event=forwarder_stopped ", key);
}

int bl_fwd_start(bl_fwd_t *r, const char *name, const char *mode,
                 const char *grp, const char *const *extra, int wait)
{
        char xm[64];
        const char *props[20] = {xm, "forwarder.stats_interval=0s"};
        size_t n = 2;
        if (name != r->instance) /* a restart passes its own */
                snprintf(r->instance, sizeof(r->instance), "%s", name);
        snprintf(xm, sizeof(xm), "forwarder.delivery=%s", mode);
        for (size_t i = 0; extra && extra[i] && n < 10; i++)
                props[n++] = extra[i];
        for (size_t i = 0; bl_fwd_props[i]; i++)
                props[n++] = bl_fwd_props[i];
        props[n] = NULL;
        memset(&r->f, 0, sizeof(r->f));
        r->f.instance = r->instance;
        r->f.pid = -1;
        if (it_fwd_start(&r->f, bl_fwd_bin, bl_prefix, grp, bl_url, props))
                return -1;
        return wait ? it_wait_log(r->f.log, "event=partitions_assigned", 60000)
                    : 0;
}

int bl_fwd_stop(bl_fwd_t *r)
{
        r->cpu_us = bl_cpu_us_of(r->f.pid);
        r->hwm_kb = bl_rss_kb_of(r->f.pid, "VmHWM");
        int rc = it_fwd_stop(&r->f, SIGTERM);
        r->fired = stat_of(r->f.log, "fired");
        r->hopped = stat_of(r->f.log, "hopped");
        r->statements = stat_of(r->f.log, "claim_statements") +
                        stat_of(r->f.log, "mark_statements");
        return rc;
}

const char *bl_tier_for(int64_t remaining_ms)
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

int bl_mysql_status(const char *like, const char *const *names, long long *vals,
                    int n)
{
        MYSQL *conn = it_mysql_connect();
        MYSQL_RES *res = NULL;
        char sql[128];
        int found = 0;
        snprintf(sql, sizeof(sql), "SHOW GLOBAL STATUS LIKE '%s'", like);
        if (conn && !mysql_query(conn, sql))
                res = mysql_store_result(conn);
        for (MYSQL_ROW row; res && (row = mysql_fetch_row(res));)
                for (int i = 0; i < n; i++)
                        if (row[0] && row[1] && !strcmp(row[0], names[i])) {
                                vals[i] = atoll(row[1]);
                                found++;
                        }
        if (res)
                mysql_free_result(res);
        if (conn)
                mysql_close(conn);
        return found == n ? 0 : -1;
}

int bl_mysql_row_writes(long long w[3])
{
        static const char *const names[] = {"Handler_write", "Handler_update",
                                            "Handler_delete"};
        return bl_mysql_status("Handler_%", names, w, 3);
}

/* The first column of sql's first row as a number; -1 when none. */
static long long query_ll(MYSQL *conn, const char *sql)
{
        MYSQL_RES *res = NULL;
        long long v = -1;
        if (mysql_query(conn, sql) || !(res = mysql_store_result(conn))) {
                fprintf(stderr, "bench_limit: %s: %s\n", sql,
                        mysql_error(conn));
                return -1;
        }
        MYSQL_ROW row = mysql_fetch_row(res);
        if (row && row[0])
                v = atoll(row[0]);
        mysql_free_result(res);
        return v;
}

int bl_fate_table_bytes(long long *rows, long long *data, long long *index)
{
        MYSQL *conn = it_mysql_connect();
        char sql[512];
        int rc = conn ? 0 : -1;
        /* ANALYZE first: InnoDB's sizes are its persistent statistics. */
        snprintf(sql, sizeof(sql), "ANALYZE TABLE `%s`.kdelay_fate", bl_db);
        if (!rc && mysql_query(conn, sql))
                rc = -1;
        MYSQL_RES *res = rc ? NULL : mysql_store_result(conn);
        if (res)
                mysql_free_result(res);
        snprintf(sql, sizeof(sql), "SELECT COUNT(*) FROM `%s`.kdelay_fate",
                 bl_db);
        if (!rc && (*rows = query_ll(conn, sql)) < 0)
                rc = -1;
        snprintf(sql, sizeof(sql),
                 "SELECT DATA_LENGTH FROM information_schema.TABLES WHERE "
                 "TABLE_SCHEMA = '%s' AND TABLE_NAME = 'kdelay_fate'",
                 bl_db);
        if (!rc && (*data = query_ll(conn, sql)) < 0)
                rc = -1;
        snprintf(sql, sizeof(sql),
                 "SELECT INDEX_LENGTH FROM information_schema.TABLES WHERE "
                 "TABLE_SCHEMA = '%s' AND TABLE_NAME = 'kdelay_fate'",
                 bl_db);
        if (!rc && (*index = query_ll(conn, sql)) < 0)
                rc = -1;
        if (conn)
                mysql_close(conn);
        return rc;
}
