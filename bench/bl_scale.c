/* SPDX-License-Identifier: Apache-2.0 */
/* bench_limit's scale sections (issue 24; docs/performance.md):
 *
 *   pending  P tasks due 6..30 h ahead, written straight to tier.6h in
 *            bulk, and two probes: one due as the forwarder starts, one
 *            due 10 s later. The forwarder's RSS 15 s after its start,
 *            the time from its start to its first fire, and the second
 *            probe's lateness.
 *   rows     R fate rows bulk-loaded (MariaDB's sequence engine, in
 *            chunks), nine in ten decided 40 days ago and due for gc:
 *            status and cancel latency on the empty table and on the
 *            full one; then a forwarder fires a spread of N tasks, once
 *            alone and once while `kdelayctl db gc` deletes the old rows
 *            (its rate, its progress lines, and the lateness p99 of the
 *            two spreads). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <mysql.h>

#include "bl.h"
#include "kd_util.h"

/* --- pending ------------------------------------------------------------ */

void bl_pending_run(int pending, long long *rss_kb, long long *peak_kb)
{
        char grp[96], rgrp[96], tier[128], probe_tier[128];
        *rss_kb = *peak_kb = -1;
        if (bl_section(NULL, grp, sizeof(grp), rgrp, sizeof(rgrp)))
                return;
        snprintf(tier, sizeof(tier), "%s.tier.6h", bl_prefix);
        bl_spread_t sp = {kd_now_ms() + 6 * 3600 * SEC, 24 * 3600 * SEC,
                          pending};
        int64_t t0 = kd_mono_ms();
        bl_check(bl_produce(tier, pending, 0, bl_at_spread, &sp, "p") == 0,
                 "pending produce");
        int64_t produce_ms = kd_mono_ms() - t0;
        long long disk = bl_topic_disk_bytes(tier);
        /* Probe 0 is due when the forwarder starts (in tier.1s); probe 1
         * 10 s later, in the tier the library would pick. */
        int64_t start = kd_now_ms() + SEC, due1 = start + 10 * SEC;
        snprintf(probe_tier, sizeof(probe_tier), "%s.tier.1s", bl_prefix);
        bl_check(bl_produce(probe_tier, 1, 0, bl_at_fixed, &start, "q") == 0,
                 "probe produce");
        snprintf(probe_tier, sizeof(probe_tier), "%s.tier.%s", bl_prefix,
                 bl_tier_for(due1 - kd_now_ms()));
        bl_check(bl_produce(probe_tier, 1, 1, bl_at_fixed, &due1, "q") == 0,
                 "probe produce");
        it_sleep_until(start);
        bl_fwd_t r;
        bl_seen_t s;
        bl_check(bl_fwd_start(&r, "blR", "at_least_once", grp, NULL, 0) == 0,
                 "start");
        bl_check(bl_read_target(rgrp, 2, 120000, 0, &s) == 0,
                 "probes delivered");
        bl_check(s.early == 0, "probe early");
        it_sleep_until(start + 15 * SEC);
        *rss_kb = bl_rss_kb_of(r.f.pid, "VmRSS");
        bl_check(bl_fwd_stop(&r) == 0, "forwarder exit");
        *peak_kb = r.hwm_kb;
        printf("pending_%d_produce_per_s %.0f\n", pending,
               produce_ms > 0 ? pending * 1000.0 / (double)produce_ms : 0);
        printf("pending_%d_rss_mb %.1f peak_mb %.1f\n", pending,
               (double)*rss_kb / 1024.0, r.hwm_kb / 1024.0);
        /* What a pending task costs the broker's disk (its one record in
         * its tier: key, value, headers, batch overhead; one replica). */
        if (disk >= 0)
                printf("pending_%d_disk_bytes_per_task %.1f\n", pending,
                       (double)disk / pending);
        else
                printf("pending_%d_disk_bytes_per_task unknown\n", pending);
        /* Probe 0 fires first, probe 1 last. */
        printf("pending_%d_first_fire_ms %lld\n", pending,
               (long long)(s.first_ts - start));
        printf("pending_%d_probe_lateness_ms %lld\n", pending,
               (long long)(s.last_ts - due1));
        it_db_drop(bl_db);
}

/* --- rows --------------------------------------------------------------- */

#define ROWS_CHUNK  100000
#define ROWS_PROBES 1000
#define DAY         (24 * 3600 * SEC)

static MYSQL *section_db(void)
{
        char sql[128];
        MYSQL *conn = it_mysql_connect();
        snprintf(sql, sizeof(sql), "USE `%s`", bl_db);
        if (conn && mysql_query(conn, sql)) {
                fprintf(stderr, "bench_limit: %s\n", mysql_error(conn));
                mysql_close(conn);
                conn = NULL;
        }
        return conn;
}

/* rows FIRED rows "<prefix>-old-<n>": nine in ten decided (and due) 40
 * days ago, the rest an hour ago; 0 on success. Progress on stderr. */
static int rows_load(int rows, int64_t *ms)
{
        MYSQL *conn = section_db();
        if (!conn)
                return -1;
        int64_t t0 = kd_mono_ms(), old = kd_now_ms() - 40 * DAY,
                recent = kd_now_ms() - 3600 * SEC;
        int rc = 0, old_rows = rows / 10 * 9;
        for (int lo = 0; lo < rows && !rc; lo += ROWS_CHUNK) {
                int hi = lo + ROWS_CHUNK < rows ? lo + ROWS_CHUNK : rows;
                char sql[768];
                snprintf(sql, sizeof(sql),
                         "INSERT INTO kdelay_fate (task_id, state, "
                         "fire_at_ms, owner, decided_at_ms, updated_at_ms) "
                         "SELECT CONCAT('%s-old-', seq), 'FIRED', t, 'bl', "
                         "t, t FROM (SELECT seq, IF(seq < %d, %lld, %lld) + "
                         "seq AS t FROM seq_%d_to_%d) s",
                         bl_prefix, old_rows, (long long)old, (long long)recent,
                         lo, hi - 1);
                if (mysql_query(conn, sql)) {
                        fprintf(stderr, "bench_limit: load: %s\n",
                                mysql_error(conn));
                        rc = -1;
                } else if (hi % 1000000 == 0 || hi == rows) {
                        fprintf(stderr,
                                "bench_limit: event=rows_load loaded=%d "
                                "of=%d\n",
                                hi, rows);
                }
        }
        *ms = kd_mono_ms() - t0;
        mysql_close(conn);
        return rc;
}

/* MariaDB's row-lock waits and their total time (ms) so far, server-wide
 * (Innodb_row_lock_waits, Innodb_row_lock_time); 0 on success. */
static int row_locks(long long *waits, long long *ms)
{
        static const char *const names[] = {"Innodb_row_lock_waits",
                                            "Innodb_row_lock_time"};
        long long v[2];
        if (bl_mysql_status("Innodb_row_lock_%", names, v, 2))
                return -1;
        *waits = v[0];
        *ms = v[1];
        return 0;
}

/* Prints the row-lock waits since *waits / *ms, and takes the new counts. */
static void row_locks_print(const char *name, long long *waits, long long *ms)
{
        long long w = 0, t = 0;
        if (row_locks(&w, &t)) {
                printf("rows_spread_%s_row_lock_waits unknown\n", name);
                return;
        }
        printf("rows_spread_%s_row_lock_waits %lld ms %lld\n", name, w - *waits,
               t - *ms);
        *waits = w;
        *ms = t;
}

static int64_t mono_us(void)
{
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static int cmp_ms(const void *a, const void *b)
{
        int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
        return (x > y) - (x < y);
}

/* Latency of status (an existing row when rows > 0) and of cancel (a new
 * id: an insert) through the library, ROWS_PROBES calls each; label
 * "empty" or "full". */
static void rows_latency(int rows, const char *label)
{
        char errstr[512], id[128];
        kdelay_client_t *c = NULL;
        kdelay_conf_t *conf = it_conf_new(bl_prefix, bl_url);
        if (!conf || kdelay_client_new(&c, conf, errstr, sizeof(errstr))) {
                kdelay_conf_destroy(conf);
                bl_check(0, "client");
                return;
        }
        static int64_t lat[2][ROWS_PROBES];
        srand(7);
        for (int i = 0; i < ROWS_PROBES; i++) {
                kdelay_status_t st;
                snprintf(id, sizeof(id), "%s-old-%d", bl_prefix,
                         rows > 0 ? rand() % rows : i);
                int64_t t = mono_us();
                kdelay_err_t err =
                    kdelay_status(c, id, &st, errstr, sizeof(errstr));
                lat[0][i] = mono_us() - t;
                bl_check(!err && (rows == 0 || st.fate == KDELAY_FATE_FIRED),
                         "status");
                snprintf(id, sizeof(id), "%s-%s-cancel-%d", bl_prefix, label,
                         i);
                t = mono_us();
                err = kdelay_cancel(c, id, errstr, sizeof(errstr));
                lat[1][i] = mono_us() - t;
                bl_check(!err, "cancel");
        }
        kdelay_client_destroy(c);
        static const char *const what[] = {"status", "cancel"};
        for (int k = 0; k < 2; k++) {
                qsort(lat[k], ROWS_PROBES, sizeof(lat[k][0]), cmp_ms);
                printf("rows_%s_%s_us p50 %lld p99 %lld\n", label, what[k],
                       (long long)lat[k][ROWS_PROBES / 2],
                       (long long)lat[k][ROWS_PROBES * 99 / 100]);
        }
}

/* How far ahead a rows spread's first task is due: tier 5s, then held. */
#define ROWS_LEAD (6 * SEC)

/* A spread of n tasks due over spread_s s, ROWS_LEAD ahead, to a target of
 * its own (the reader tells tasks apart by number only); its lateness. */
static int rows_spread(const char *name, int n, int spread_s, bl_seen_t *s)
{
        char rgrp[128], tier[128];
        snprintf(bl_target, sizeof(bl_target), "%s.target-%s", bl_prefix, name);
        snprintf(rgrp, sizeof(rgrp), "%s-read-%s", bl_prefix, name);
        if (it_create_topic(bl_target, BL_PARTITIONS))
                return -1;
        bl_spread_t sp = {kd_now_ms() + ROWS_LEAD, (int64_t)spread_s * SEC, n};
        snprintf(tier, sizeof(tier), "%s.tier.%s", bl_prefix,
                 bl_tier_for(ROWS_LEAD));
        if (bl_produce(tier, n, 0, bl_at_spread, &sp, name) ||
            bl_read_target(rgrp, n, (spread_s + 600) * 1000, 0, s))
                return -1;
        printf("rows_spread_%s_lateness_ms p50 %lld p99 %lld max %lld\n", name,
               (long long)s->p50, (long long)s->p99, (long long)s->max);
        return s->early ? -1 : 0;
}

/* The figures of gc's closing line (event=gc_done deleted=N ...
 * seconds=S) in the log at path. */
static void gc_done_of(const char *path, long long *deleted, double *seconds)
{
        char line[1024];
        FILE *f = fopen(path, "r");
        while (f && fgets(line, sizeof(line), f)) {
                const char *d = strstr(line, "event=gc_done deleted=");
                const char *s = strstr(line, " seconds=");
                if (d && s) {
                        *deleted = atoll(d + strlen("event=gc_done deleted="));
                        *seconds = atof(s + strlen(" seconds="));
                }
        }
        if (f)
                fclose(f);
}

void bl_rows_run(int rows, int tasks, int spread_s, const char *gc_pause)
{
        char grp[96], rgrp[96];
        if (bl_section(NULL, grp, sizeof(grp), rgrp, sizeof(rgrp)))
                return;
        rows_latency(0, "empty");
        int64_t load_ms = 0;
        bl_check(rows_load(rows, &load_ms) == 0, "rows load");
        printf("rows_%d_load_per_s %.0f\n", rows,
               load_ms > 0 ? rows * 1000.0 / (double)load_ms : 0);
        rows_latency(rows, "full");

        bl_fwd_t r;
        bl_seen_t before, during;
        bl_check(bl_fwd_start(&r, "blG", "at_least_once", grp, NULL, 1) == 0,
                 "start");
        /* Whether gc holds locks that stall claims: MariaDB's row-lock
         * waits over each spread. */
        long long lock_waits = 0, lock_ms = 0;
        bl_check(row_locks(&lock_waits, &lock_ms) == 0, "row-lock counters");
        bl_check(rows_spread("before", tasks, spread_s, &before) == 0,
                 "spread before gc");
        row_locks_print("before", &lock_waits, &lock_ms);

        /* gc of the old rows in its own process, as an operator runs it. */
        char log[256], pfx[128];
        snprintf(log, sizeof(log), "%s-gc.log", bl_prefix);
        snprintf(pfx, sizeof(pfx), "topic_prefix=%s", bl_prefix);
        char *argv[] = {KDELAYCTL,
                        "db",
                        "gc",
                        "--older-than",
                        "30d",
                        "--brokers",
                        (char *)it_brokers(),
                        "--mysql",
                        bl_url,
                        "-X",
                        pfx,
                        gc_pause ? "--pause" : NULL,
                        (char *)gc_pause,
                        NULL};
        int64_t t0 = kd_mono_ms();
        pid_t gc = it_spawn(argv, log);
        bl_check(gc > 0, "gc start");
        int spread_ok = rows_spread("during", tasks, spread_s, &during) == 0;
        int64_t spread_end = kd_mono_ms();
        row_locks_print("during", &lock_waits, &lock_ms);
        int gc_rc = gc > 0 ? it_wait_pid(gc, 3600 * 1000) : -1;
        bl_check(spread_ok, "spread during gc");
        bl_check(gc_rc == 0, "gc exit");
        bl_check(bl_fwd_stop(&r) == 0, "forwarder exit");
        long long deleted = -1;
        double gc_s = -1;
        gc_done_of(log, &deleted, &gc_s);
        int progress = it_log_count(log, "event=gc_progress");
        printf("rows_gc_deleted %lld seconds %.1f rows_per_s %.0f "
               "progress_lines %d\n",
               deleted, gc_s, gc_s > 0 ? (double)deleted / gc_s : 0, progress);
        /* The spread's tasks fell due from ROWS_LEAD after gc started. */
        printf("rows_gc_outlived_spread %s\n",
               gc_s * 1000 > (double)(spread_end - t0) ? "yes" : "no");
        printf("rows_spread_p99_ratio_during_to_before %.2f\n",
               before.p99 > 0 ? (double)during.p99 / (double)before.p99 : 0);
        it_db_drop(bl_db);
}
