/* bench_forwarder: the forwarder's firing cost and precision on the real
 * local stack. Schedules N tasks due within a window, runs one
 * kdelay-forwarder, reads the target topic back, and reports
 *   - MySQL statements per fired task, and its ratio to the baseline of a
 *     forwarder without batching (claim INSERT + read-back SELECT + FIRED
 *     UPDATE per task = 3 statements per task), measured in the same run
 *     from the same counters;
 *   - lateness (record timestamp - kdelay-fire-at) p50 / p99 / max.
 *
 * Usage: bench_forwarder [N [WINDOW_MS]]   (defaults 5000 tasks, 2000 ms)
 * Needs KDELAY_BROKERS and KDELAY_MYSQL_URL (eval "$(stack.sh env)"). */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "it_env.h"
#include "kd_topics.h"
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

int main(int argc, char **argv)
{
        int n = argc > 1 ? atoi(argv[1]) : 5000;
        int window = argc > 2 ? atoi(argv[2]) : 2000;
        char pfx[40], db[64], url[256], target[96], errstr[512];
        char grp[96], log[128], xp[96], xg[128];
        kd_topic_report_t reports[KD_TOPICS_MAX];
        size_t nr;
        if (n < 1 || window < 0 || it_env_init())
                return 2;
        it_unique(pfx, sizeof(pfx), "bench");
        it_unique(db, sizeof(db), "kdbench");
        snprintf(target, sizeof(target), "%s.target", pfx);
        snprintf(grp, sizeof(grp), "%s-group", pfx);
        snprintf(log, sizeof(log), "bench-%s.log", pfx);
        if (it_db_create(db, 1, url, sizeof(url)))
                return 1;
        kdelay_conf_t *conf = it_conf_new(pfx, url); /* the client's */
        kdelay_client_t *c = NULL;
        if (kd_topics_create(conf, 4, 1, reports, &nr, errstr,
                             sizeof(errstr)) ||
            it_create_topic(target, 4) ||
            kdelay_client_new(&c, conf, errstr, sizeof(errstr))) {
                fprintf(stderr, "setup: %s\n", errstr);
                return 1;
        }
        int64_t *fire_at = calloc((size_t)n, sizeof(*fire_at));
        char(*ids)[KDELAY_ID_MAX + 1] = calloc((size_t)n, sizeof(*ids));
        int64_t first = kd_now_ms() + 8000;
        for (int i = 0; i < n; i++) {
                kdelay_task_t t;
                kdelay_task_init(&t);
                t.topic = target;
                t.value = "bench";
                t.value_len = 5;
                fire_at[i] = first + (int64_t)i * window / n;
                t.fire_at_ms = fire_at[i];
                if (kdelay_schedule_async(c, &t, NULL, NULL, ids[i],
                                          sizeof(ids[i]), errstr,
                                          sizeof(errstr))) {
                        fprintf(stderr, "schedule: %s\n", errstr);
                        return 1;
                }
        }
        if (kdelay_flush(c, 60000)) {
                fprintf(stderr, "flush timed out\n");
                return 1;
        }
        kdelay_client_destroy(c);

        snprintf(xp, sizeof(xp), "topic_prefix=%s", pfx);
        snprintf(xg, sizeof(xg), "forwarder.group_id=%s", grp);
        char *fargv[] = {KDELAY_FORWARDER,
                         "--brokers",
                         (char *)it_brokers(),
                         "--mysql",
                         url,
                         "-X",
                         xp,
                         "-X",
                         xg,
                         NULL};
        pid_t pid = it_spawn(fargv, log);
        const char *tl[] = {target, NULL};
        it_msg_t *msgs = NULL;
        /* The first task is due 8 s out: stop after 15 s without a record
         * (before the first, or after the last). */
        size_t got = it_consume_all(tl, &msgs, 15000, 120000);
        kill(pid, SIGTERM);
        int rc = it_wait_pid(pid, 30000);

        int64_t *late = calloc(got ? got : 1, sizeof(*late));
        size_t nl = 0;
        for (size_t k = 0; k < got; k++) {
                char *fa = it_header(&msgs[k], KDELAY_HDR_FIRE_AT);
                if (fa)
                        late[nl++] = msgs[k].ts - atoll(fa);
                free(fa);
                it_msg_free(&msgs[k]);
        }
        free(msgs);
        qsort(late, nl, sizeof(*late), cmp_i64);
        long long fired = stat_of(log, "fired");
        long long st =
            stat_of(log, "claim_statements") + stat_of(log, "mark_statements");
        double per = fired > 0 ? (double)st / (double)fired : 0;
        printf("tasks=%d window_ms=%d delivered=%zu forwarder_exit=%d\n", n,
               window, got, rc);
        printf("statements=%lld fired=%lld statements_per_fire=%.4f "
               "baseline_per_fire=3 ratio_to_baseline=%.4f\n",
               st, fired, per, per / 3.0);
        if (nl)
                printf("lateness_ms p50=%lld p99=%lld max=%lld\n",
                       (long long)late[nl / 2],
                       (long long)late[(nl * 99) / 100],
                       (long long)late[nl - 1]);
        it_db_drop(db);
        free(late);
        free(fire_at);
        free(ids);
        return got == (size_t)n && rc == 0 ? 0 : 1;
}
