/* SPDX-License-Identifier: Apache-2.0 */
/* bench_forwarder: the forwarder's firing cost and precision on the real
 * local stack. For each delivery mode (at_least_once, then exactly_once)
 * it schedules N tasks due within a window, runs one kdelay-forwarder,
 * reads the target topic back with a read_committed consumer, and reports
 *   - MySQL statements per fired task, and its ratio to the baseline of a
 *     forwarder without batching (claim INSERT + read-back SELECT + FIRED
 *     UPDATE per task = 3 statements per task), from the same counters;
 *   - lateness (record timestamp - kdelay-fire-at) and visible lateness
 *     (when the read_committed consumer got it - kdelay-fire-at), p50 /
 *     p99 / max; exactly-once's visible lateness against at-least-once's,
 *     measured in the same run, is the cost of the transaction commits.
 *
 * Usage: bench_forwarder [N [WINDOW_MS [MODE]]]
 *   defaults 5000 tasks, 2000 ms, MODE both (or at_least_once,
 *   exactly_once). Needs KDELAY_BROKERS and KDELAY_MYSQL_URL
 *   (eval "$(deploy/local/stack.sh env)"). */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "it_env.h"
#include "kd_util.h"

static int cmp_i64(const void *a, const void *b)
{
        int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
        return x < y ? -1 : x > y;
}

/* The value of key= in the forwarder's last "event=forwarder_stopped". */
static long long stat_of(const char *log, const char *key)
{
        FILE *fp = fopen(log, "r");
        char line[8192], needle[64];
        long long v = -1;
        snprintf(needle, sizeof(needle), " %s=", key);
        while (fp && fgets(line, sizeof(line), fp)) {
                const char *p;
                if (strstr(line, "event=forwarder_stopped") &&
                    (p = strstr(line, needle)))
                        v = atoll(p + strlen(needle));
        }
        if (fp)
                fclose(fp);
        return v;
}

typedef struct figures {
        size_t delivered;
        int exit_code;
        long long statements, fired;
        int64_t late[3], visible[3]; /* p50, p99, max */
} figures_t;

static void percentiles(int64_t *v, size_t n, int64_t out[3])
{
        qsort(v, n, sizeof(*v), cmp_i64);
        out[0] = n ? v[n / 2] : -1;
        out[1] = n ? v[(n * 99) / 100] : -1;
        out[2] = n ? v[n - 1] : -1;
}

/* One run in `mode` with fresh topics, group and database. */
static int run_mode(const char *mode, int n, int window, figures_t *fig)
{
        char pfx[40], db[64], url[256], target[96], errstr[512];
        char grp[96], xm[64];
        it_unique(pfx, sizeof(pfx), "bench");
        it_unique(db, sizeof(db), "kdbench");
        snprintf(target, sizeof(target), "%s.target", pfx);
        snprintf(grp, sizeof(grp), "%s-group", pfx);
        if (it_db_create(db, 1, url, sizeof(url)))
                return -1;
        kdelay_conf_t *conf = it_conf_new(pfx, url); /* the client's */
        kdelay_client_t *c = NULL;
        if (it_tiers_create(pfx, url, 4) || it_create_topic(target, 4) ||
            kdelay_client_new(&c, conf, errstr, sizeof(errstr))) {
                fprintf(stderr, "setup: %s\n", errstr);
                return -1;
        }
        int64_t first = kd_now_ms() + 8000;
        char id[KDELAY_ID_MAX + 1];
        for (int i = 0; i < n; i++) {
                kdelay_task_t t;
                kdelay_task_init(&t);
                t.topic = target;
                t.value = "bench";
                t.value_len = 5;
                t.fire_at_ms = first + (int64_t)i * window / n;
                if (kdelay_schedule_async(c, &t, NULL, NULL, id, sizeof(id),
                                          errstr, sizeof(errstr))) {
                        fprintf(stderr, "schedule: %s\n", errstr);
                        return -1;
                }
        }
        if (kdelay_flush(c, 60000)) {
                fprintf(stderr, "flush timed out\n");
                return -1;
        }
        kdelay_client_destroy(c);

        snprintf(xm, sizeof(xm), "forwarder.delivery=%s", mode);
        const char *props[] = {xm, "forwarder.stats_interval=0s", NULL};
        it_fwd_t fwd = {pfx, -1, ""};
        if (it_fwd_start(&fwd, KDELAY_FORWARDER, pfx, grp, url, props))
                return -1;
        const char *tl[] = {target, NULL};
        it_msg_t *msgs = NULL;
        /* The first task is due 8 s out: stop after 15 s without a record
         * (before the first, or after the last). */
        size_t got = it_consume_all(tl, &msgs, 15000, 120000);
        fig->exit_code = it_fwd_stop(&fwd, SIGTERM);

        int64_t *late = calloc(got ? got : 1, sizeof(*late));
        int64_t *vis = calloc(got ? got : 1, sizeof(*vis));
        size_t nl = 0;
        for (size_t k = 0; k < got; k++) {
                char *fa = it_header(&msgs[k], KDELAY_HDR_FIRE_AT);
                if (fa) {
                        late[nl] = msgs[k].ts - atoll(fa);
                        vis[nl++] = msgs[k].recv_ms - atoll(fa);
                }
                free(fa);
                it_msg_free(&msgs[k]);
        }
        free(msgs);
        percentiles(late, nl, fig->late);
        percentiles(vis, nl, fig->visible);
        fig->delivered = got;
        fig->fired = stat_of(fwd.log, "fired");
        fig->statements = stat_of(fwd.log, "claim_statements") +
                          stat_of(fwd.log, "mark_statements");
        it_db_drop(db);
        free(late);
        free(vis);
        return 0;
}

static void report(const char *mode, int n, int window, const figures_t *f)
{
        double per =
            f->fired > 0 ? (double)f->statements / (double)f->fired : 0;
        printf("mode=%s tasks=%d window_ms=%d delivered=%zu "
               "forwarder_exit=%d\n",
               mode, n, window, f->delivered, f->exit_code);
        printf("  statements=%lld fired=%lld statements_per_fire=%.4f "
               "baseline_per_fire=3 ratio_to_baseline=%.4f\n",
               f->statements, f->fired, per, per / 3.0);
        printf("  lateness_ms p50=%lld p99=%lld max=%lld\n",
               (long long)f->late[0], (long long)f->late[1],
               (long long)f->late[2]);
        printf("  visible_lateness_ms p50=%lld p99=%lld max=%lld\n",
               (long long)f->visible[0], (long long)f->visible[1],
               (long long)f->visible[2]);
}

int main(int argc, char **argv)
{
        int n = argc > 1 ? atoi(argv[1]) : 5000;
        int window = argc > 2 ? atoi(argv[2]) : 2000;
        const char *which = argc > 3 ? argv[3] : "both";
        static const char *const modes[] = {"at_least_once", "exactly_once"};
        figures_t fig[2];
        int ran[2] = {0, 0}, ok = 1;
        if (n < 1 || window < 0 || it_env_init())
                return 2;
        for (int m = 0; m < 2; m++) {
                if (strcmp(which, "both") && strcmp(which, modes[m]))
                        continue;
                memset(&fig[m], 0, sizeof(fig[m]));
                if (run_mode(modes[m], n, window, &fig[m]))
                        return 1;
                ran[m] = 1;
                report(modes[m], n, window, &fig[m]);
                ok &= fig[m].delivered == (size_t)n && fig[m].exit_code == 0;
        }
        if (ran[0] && ran[1] && fig[0].visible[0] >= 0)
                printf("exactly_once vs at_least_once visible lateness: "
                       "p50 %+lld ms, p99 %+lld ms (same run)\n",
                       (long long)(fig[1].visible[0] - fig[0].visible[0]),
                       (long long)(fig[1].visible[1] - fig[0].visible[1]));
        return ok ? 0 : 1;
}
