/* SPDX-License-Identifier: Apache-2.0 */
/* Integration: the forwarder's HTTP endpoint (forwarder.http_listen).
 *
 * One forwarder listens on 127.0.0.1, port 0 (any free port, read from its
 * `event=http_listening` line). Scraped with curl: /metrics passes
 * `promtool check metrics`; /healthz and /readyz answer 200 once it is
 * assigned. N tasks due 2..4 s ahead are fired, and a scrape afterwards
 * shows kdelay_forwarder_fired_total up by exactly N from the scrape
 * before them, and the lateness histogram's count up by N too; a raw
 * record without kdelay-target shows as
 * kdelay_forwarder_dead_by_reason_total{reason="missing-target"} 1. MySQL is
 * then stopped (`stack.sh mysql-stop`): /readyz answers 503 saying why
 * while /healthz stays 200; after `mysql-start` /readyz is 200 again.
 * Unknown paths answer 404, other methods 405. 32 slow clients from
 * 127.0.0.1, each trickling a request a byte a second, do not keep
 * /healthz, /readyz and /metrics from answering 200 from 127.0.0.2 within
 * 3 s, and once they stop the server closes them (issue 19; the bounds
 * themselves are test_http_limits'). `kdelayctl stats --json`
 * meanwhile shows the group with this one member (its client.id names
 * the release and the instance: kdelay-forwarder/<version>/<instance>),
 * no record pending once all are handled, every task's row FIRED as
 * status reads it (a FIRING row a run of delivered claims covers counts
 * FIRED, FIRED_by_runs of them) and none FIRING; after the stop it exits
 * 1 (no member).
 *
 * And systemd's notifications (Type=notify): a forwarder started with
 * NOTIFY_SOCKET naming a datagram socket of the test, as systemd would,
 * and WATCHDOG_USEC=1 s sends READY=1 (with a STATUS naming its
 * instance) after subscribing, WATCHDOG=1 every half second from its
 * loop, and STOPPING=1 on SIGTERM; it exits 0. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "it_env.h"
#include "kd_test.h"
#include "kd_util.h"

#define SEC     1000LL
#define N_TASKS 40
#define N_SLOW  32

/* GET (or `method`) http://127.0.0.1:port/path with curl: the status
 * (0 when curl failed), the body in *body (caller frees; may be NULL). */
static int get(unsigned port, const char *method, const char *path, char **body)
{
        char url[128];
        snprintf(url, sizeof(url), "http://127.0.0.1:%u%s", port, path);
        char *const argv[] = {
            "/usr/bin/curl",  "-s", "-X", (char *)method, "-w",
            "\n%{http_code}", url,  NULL};
        char *out = NULL, *err = NULL;
        int rc = it_run(argv, NULL, &out, &err);
        int status = 0;
        char *nl = out ? strrchr(out, '\n') : NULL;
        if (!rc && nl) {
                status = atoi(nl + 1);
                *nl = '\0';
        }
        free(err);
        if (body)
                *body = out;
        else
                free(out);
        return status;
}

/* GET path from address src with curl, waiting at most 3 s: the status
 * (0 when there was none), the time it took in *ms. */
static int get_from(const char *src, unsigned port, const char *path,
                    int64_t *ms)
{
        char url[128];
        snprintf(url, sizeof(url), "http://127.0.0.1:%u%s", port, path);
        char *const argv[] = {
            "/usr/bin/curl", "-s",        "-o", "/dev/null",    "-m", "3",
            "--interface",   (char *)src, "-w", "%{http_code}", url,  NULL};
        char *out = NULL, *err = NULL;
        int64_t t0 = kd_mono_ms();
        it_run(argv, NULL, &out, &err);
        *ms = kd_mono_ms() - t0;
        int status = out ? atoi(out) : 0;
        free(out);
        free(err);
        return status;
}

/* 1 when the server closed fd within timeout_ms. */
static int closed_by_server(int fd, int timeout_ms)
{
        struct pollfd p = {.fd = fd, .events = POLLIN};
        if (poll(&p, 1, timeout_ms) <= 0)
                return 0;
        char c;
        return recv(fd, &c, 1, MSG_DONTWAIT) <= 0;
}

/* N_SLOW connections from 127.0.0.1 trickling a request a byte a second
 * for 5 s while the three paths are asked from 127.0.0.2; then they stop.
 * 1 when every probe answered 200 within 3 s; the slowest in *max_ms,
 * how many slow ones the server closed within 10 s after in *closed and
 * how many it kept in *held. */
static int probes_under_slow_clients(unsigned port, int64_t *max_ms, int *held,
                                     int *closed)
{
        static const char *const paths[] = {"/healthz", "/readyz", "/metrics"};
        int fd[N_SLOW], ok = 1;
        struct sockaddr_in to = {.sin_family = AF_INET,
                                 .sin_port = htons((uint16_t)port)};
        inet_pton(AF_INET, "127.0.0.1", &to.sin_addr);
        for (int i = 0; i < N_SLOW; i++) {
                fd[i] = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
                if (fd[i] >= 0 &&
                    connect(fd[i], (struct sockaddr *)&to, sizeof(to)) == 0)
                        send(fd[i], "G", 1, MSG_NOSIGNAL);
        }
        *max_ms = 0;
        for (int s = 0; s < 5; s++) {

                it_sleep_until(kd_now_ms() + 1000);
                for (size_t i = 0; i < 3; i++) {
                        int64_t ms;
                        int st = get_from("127.0.0.2", port, paths[i], &ms);
                        ok &= st == 200 && ms < 3000;
                        if (ms > *max_ms)
                                *max_ms = ms;
                }
                for (int i = 0; i < N_SLOW; i++)
                        if (fd[i] >= 0)
                                send(fd[i], "E", 1, MSG_NOSIGNAL);
        }
        *held = *closed = 0;
        int gone[N_SLOW];
        for (int i = 0; i < N_SLOW; i++) {
                gone[i] = fd[i] < 0 || closed_by_server(fd[i], 0);
                *held += !gone[i];
        }
        for (int i = 0; i < N_SLOW; i++) {
                *closed += !gone[i] && closed_by_server(fd[i], 10000);
                if (fd[i] >= 0)
                        close(fd[i]);
        }
        return ok;
}

/* The value of the sample line starting "name " in a scrape; -1 if
 * absent. */
static double sample(const char *scrape, const char *name)
{
        size_t n = strlen(name);
        for (const char *l = scrape; l && *l; l = strchr(l, '\n')) {
                if (*l == '\n')
                        l++;
                if (!strncmp(l, name, n) && l[n] == ' ')
                        return strtod(l + n + 1, NULL);
        }
        return -1;
}

/* A raw record without kdelay-target into the 1 s tier: dead-lettered
 * as missing-target when read. 0 when acknowledged. */
static int produce_malformed(const char *prefix)
{
        char topic[96], fire_at[24];
        snprintf(topic, sizeof(topic), "%s.tier.1s", prefix);
        snprintf(fire_at, sizeof(fire_at), "%lld",
                 (long long)kd_now_ms() + 1000);
        rd_kafka_t *rk = it_kafka_new(RD_KAFKA_PRODUCER, NULL);
        if (!rk)
                return -1;
        rd_kafka_resp_err_t err = rd_kafka_producev(
            rk, RD_KAFKA_V_TOPIC(topic), RD_KAFKA_V_VALUE("x", 1),
            RD_KAFKA_V_HEADER(KDELAY_HDR_ID, "no-target", -1),
            RD_KAFKA_V_HEADER(KDELAY_HDR_FIRE_AT, fire_at, -1),
            RD_KAFKA_V_HEADER(KDELAY_HDR_VERSION, KDELAY_WIRE_VERSION, -1),
            RD_KAFKA_V_END);
        int left = err ? 1 : rd_kafka_flush(rk, 10000) ? 1 : 0;
        rd_kafka_destroy(rk);
        return left ? -1 : 0;
}

/* A scrape's sample `name` once it is at least want (20 s at most). */
static double wait_sample(unsigned port, const char *name, double want)
{
        int64_t end = kd_mono_ms() + 20000;
        double v;
        do {
                char *body = NULL;
                get(port, "GET", "/metrics", &body);
                v = sample(body, name);
                free(body);
                if (v >= want)
                        break;
                it_sleep_until(kd_now_ms() + 250);
        } while (kd_mono_ms() < end);
        return v;
}

/* kdelayctl stats --json for prefix/group: its exit code, the parsed
 * object in *json (caller deletes; NULL when not JSON). */
static int ctl_stats(const char *prefix, const char *group, const char *url,
                     cJSON **json)
{
        char xp[96], xg[96];
        snprintf(xp, sizeof(xp), "topic_prefix=%s", prefix);
        snprintf(xg, sizeof(xg), "forwarder.group_id=%s", group);
        char *const argv[] = {KDELAY_CTL,
                              "stats",
                              "--json",
                              "--brokers",
                              (char *)it_brokers(),
                              "--mysql",
                              (char *)url,
                              "-X",
                              xp,
                              "-X",
                              xg,
                              NULL};
        char *out = NULL, *err = NULL;
        int rc = it_run(argv, NULL, &out, &err);
        *json = out ? cJSON_Parse(out) : NULL;
        free(out);
        free(err);
        return rc;
}

static double num(const cJSON *o, const char *path1, const char *path2)
{
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, path1);
        if (path2)
                v = cJSON_GetObjectItemCaseSensitive(v, path2);
        return cJSON_IsNumber(v) ? v->valuedouble : -1;
}

/* How many kdelay_* names (kdelay_forwarder_*, kdelay_build_info) the
 * file at path uses that scrape lacks (histograms by their base name);
 * each one printed. -1 when the file cannot be read. Other names (up, and
 * the recording rule kdelay:forwarder_up) are Prometheus's. */
static int names_missing(const char *path, const char *scrape)
{
        static const char stem[] = "kdelay_";
        FILE *fp = fopen(path, "r");
        if (!fp)
                return -1;
        char text[65536];
        size_t n = fread(text, 1, sizeof(text) - 1, fp);
        fclose(fp);
        text[n] = '\0';
        int missing = 0;
        for (const char *p = strstr(text, stem); p; p = strstr(p + 1, stem)) {
                char name[128];
                size_t len = strspn(p, "abcdefghijklmnopqrstuvwxyz_");
                if (len >= sizeof(name) || len < sizeof(stem))
                        continue; /* "kdelay_*" in a comment: no name */
                static const char ext[] = "$externalLabels.";
                if ((size_t)(p - text) >= sizeof(ext) - 1 &&
                    !memcmp(p - (sizeof(ext) - 1), ext, sizeof(ext) - 1))
                        continue; /* a Prometheus external label, no metric */
                memcpy(name, p, len);
                name[len] = '\0';
                static const char *const sfx[] = {"_bucket", "_sum", "_count"};
                for (size_t i = 0; i < 3; i++) {
                        size_t sl = strlen(sfx[i]);
                        if (len > sl && !strcmp(name + len - sl, sfx[i]))
                                name[len - sl] = '\0';
                }
                char with_space[140], with_brace[140], with_bucket[140];
                snprintf(with_space, sizeof(with_space), "\n%s ", name);
                snprintf(with_brace, sizeof(with_brace), "\n%s{", name);
                snprintf(with_bucket, sizeof(with_bucket), "\n%s_bucket{",
                         name);
                if (!strstr(scrape, with_space) &&
                    !strstr(scrape, with_brace) &&
                    !strstr(scrape, with_bucket)) {
                        printf("\n  %s uses %s, not in a scrape", path, name);
                        missing++;
                }
        }
        return missing;
}

/* promtool check metrics on a scrape: 0 when clean. */
static int promtool_clean(unsigned port)
{
        char cmd[256];
        snprintf(cmd, sizeof(cmd),
                 "curl -s http://127.0.0.1:%u/metrics | promtool check metrics",
                 port);
        char *const argv[] = {"/bin/sh", "-c", cmd, NULL};
        char *out = NULL, *err = NULL;
        int rc = it_run(argv, NULL, &out, &err);
        if (rc)
                printf("\n  promtool: %s%s", out ? out : "", err ? err : "");
        free(out);
        free(err);
        return rc;
}

/* Polls path until it answers want (at most timeout_ms); the last status. */
static int wait_status(unsigned port, const char *path, int want,
                       int timeout_ms)
{
        int64_t end = kd_mono_ms() + timeout_ms;
        int status;
        while ((status = get(port, "GET", path, NULL)) != want &&
               kd_mono_ms() < end)
                it_sleep_until(kd_now_ms() + 200);
        return status;
}

/* A scrape's fired_total and lateness count once they are at least
 * fired (the endpoint is refreshed every second). */
static void wait_fired(unsigned port, double want, double *fired, double *late)
{
        int64_t end = kd_mono_ms() + 20000;
        do {
                char *body = NULL;
                get(port, "GET", "/metrics", &body);
                *fired = sample(body, "kdelay_forwarder_fired_total");
                *late = sample(body, "kdelay_forwarder_late_seconds_count");
                free(body);
                if (*fired >= want)
                        return;
                it_sleep_until(kd_now_ms() + 250);
        } while (kd_mono_ms() < end);
}

static void test_metrics_health_and_readiness(void)
{
        char prefix[40], group[64], db[64], url[256], target[96];
        it_unique(prefix, sizeof(prefix), "ithttp");
        it_unique(db, sizeof(db), "kdit_http");
        snprintf(group, sizeof(group), "%s-group", prefix);
        snprintf(target, sizeof(target), "%s.target", prefix);
        CU_ASSERT_EQUAL_FATAL(it_db_create(db, 1, url, sizeof(url)), 0);
        CU_ASSERT_EQUAL_FATAL(it_tiers_create(prefix, url, 2), 0);
        CU_ASSERT_EQUAL_FATAL(it_create_topic(target, 2), 0);

        it_fwd_t f = {.instance = "fwHTTP", .pid = -1};
        /* A target rate limit no fire here reaches: its families are in
         * the scrape (promtool, the alert rules' names). */
        char limits[160];
        snprintf(limits, sizeof(limits),
                 "forwarder.target_rate_limits=%s=100000", target);
        const char *props[] = {"forwarder.http_listen=127.0.0.1:0", limits,
                               NULL};
        CU_ASSERT_EQUAL_FATAL(
            it_fwd_start(&f, KDELAY_FORWARDER, prefix, group, url, props), 0);
        CU_ASSERT_EQUAL_FATAL(
            it_wait_log(f.log, "event=partitions_assigned", 30000), 0);
        CU_ASSERT_EQUAL_FATAL(it_wait_log(f.log, "event=http_listening", 1000),
                              0);
        unsigned port =
            (unsigned)it_log_sum(f.log, "event=http_listening", "port");
        CU_ASSERT_FATAL(port > 0);

        CU_ASSERT_EQUAL(wait_status(port, "/readyz", 200, 5000), 200);
        CU_ASSERT_EQUAL(get(port, "GET", "/healthz", NULL), 200);
        CU_ASSERT_EQUAL(get(port, "GET", "/nothing", NULL), 404);
        CU_ASSERT_EQUAL(get(port, "POST", "/metrics", NULL), 405);
        int64_t slow_ms;
        int slow_held, slow_closed;
        int slow_ok =
            probes_under_slow_clients(port, &slow_ms, &slow_held, &slow_closed);
        printf("\n  %d slow clients from 127.0.0.1: %d kept; probes from "
               "127.0.0.2 all 200 within 3 s: %s (slowest %lld ms); %d of "
               "the kept closed by the idle timeout",
               N_SLOW, slow_held, slow_ok ? "yes" : "no", (long long)slow_ms,
               slow_closed);
        CU_ASSERT(slow_ok);
        CU_ASSERT(slow_held > 0 && slow_held < N_SLOW);
        CU_ASSERT_EQUAL(slow_closed, slow_held);
        char *body = NULL;
        CU_ASSERT_EQUAL(get(port, "GET", "/metrics", &body), 200);
        CU_ASSERT(body && strstr(body, "kdelay_build_info{version=\""));
        double fired0 = sample(body, "kdelay_forwarder_fired_total");
        double late0 = sample(body, "kdelay_forwarder_late_seconds_count");
        free(body);
        CU_ASSERT(fired0 >= 0);
        CU_ASSERT(late0 >= 0);

        kdelay_client_t *c = NULL;
        char errstr[512];
        CU_ASSERT_EQUAL_FATAL(kdelay_client_new(&c, it_conf_new(prefix, url),
                                                errstr, sizeof(errstr)),
                              KDELAY_OK);
        int64_t t0 = kd_now_ms();
        for (int i = 0; i < N_TASKS; i++) {
                CU_ASSERT_EQUAL_FATAL(
                    it_schedule_v(c, target, prefix, i,
                                  t0 + 2 * SEC + i * (2 * SEC) / N_TASKS,
                                  errstr, sizeof(errstr)),
                    KDELAY_OK);
        }
        CU_ASSERT_EQUAL(kdelay_flush(c, 30000), KDELAY_OK);
        kdelay_client_destroy(c);
        const char *topics[] = {target, NULL};
        CU_ASSERT_EQUAL(it_wait_records(topics, N_TASKS, 30000), N_TASKS);
        double fired, late;
        wait_fired(port, fired0 + N_TASKS, &fired, &late);
        CU_ASSERT_EQUAL(produce_malformed(prefix), 0);
        double dead = wait_sample(
            port,
            "kdelay_forwarder_dead_by_reason_total{reason=\"missing-target\"}",
            1);
        CU_ASSERT_EQUAL(dead, 1);
        CU_ASSERT_EQUAL(promtool_clean(port), 0);
        /* Claims came in batches; per tier partition, its consumer lag
         * (nothing left once committed) and no task overdue. */
        double batches =
            wait_sample(port, "kdelay_forwarder_claim_batch_count", 1);
        /* A partition no record went to has no commit point, and so no
         * lag sample (keyless tasks stick to one partition for a while):
         * the lag is the larger of the two partitions' samples, -1 when
         * neither has one. */
        char lag_name[2][200], overdue_name[200];
        for (int i = 0; i < 2; i++)
                snprintf(lag_name[i], sizeof(lag_name[i]),
                         "kdelay_forwarder_consumer_lag{topic=\"%s.tier.1s\","
                         "partition=\"%d\"}",
                         prefix, i);
        snprintf(overdue_name, sizeof(overdue_name),
                 "kdelay_forwarder_overdue_head_seconds{topic=\"%s.tier.1s\","
                 "partition=\"0\"}",
                 prefix);
        char *scrape = NULL;
        double lag = -1, overdue = -1;
        for (int64_t end = kd_mono_ms() + 10000; kd_mono_ms() < end;) {
                free(scrape);
                scrape = NULL;
                get(port, "GET", "/metrics", &scrape);
                lag = -1;
                for (int i = 0; scrape && i < 2; i++) {
                        double l = sample(scrape, lag_name[i]);
                        if (l > lag)
                                lag = l;
                }
                overdue = scrape ? sample(scrape, overdue_name) : -1;
                if (lag == 0 && overdue == 0)
                        break;
                it_sleep_until(kd_now_ms() + 250);
        }
        /* The dashboard and the alert rules use only exported names. */
        CU_ASSERT_EQUAL(
            names_missing(KDELAY_SOURCE_DIR
                          "/deploy/observability/kdelay-dashboard.json",
                          scrape ? scrape : ""),
            0);
        CU_ASSERT_EQUAL(names_missing(KDELAY_SOURCE_DIR
                                      "/deploy/observability/kdelay-alerts.yml",
                                      scrape ? scrape : ""),
                        0);
        free(scrape);
        printf("\n  claim batches %.0f for %d tasks; tier.1s lag %.0f, "
               "overdue head %.3f s",
               batches, N_TASKS, lag, overdue);
        CU_ASSERT(batches >= 1 && batches <= N_TASKS);
        CU_ASSERT_EQUAL(lag, 0);
        CU_ASSERT_EQUAL(overdue, 0);

        /* kdelayctl stats: one member, named; nothing pending once the
         * commits caught up; every task's fate row FIRED as status reads
         * it (a FIRING row a run covers counts FIRED), none FIRING once
         * the runs or marks are in. */
        cJSON *st = NULL;
        int st_rc = -1;
        double pending = -1, fate = -1, firing = -1, by_runs = -1;
        for (int64_t end = kd_mono_ms() + 15000; kd_mono_ms() < end;) {
                cJSON_Delete(st);
                st_rc = ctl_stats(prefix, group, url, &st);
                pending = num(st, "pending", NULL);
                fate = num(st, "fate", "FIRED");
                firing = num(st, "fate", "FIRING");
                by_runs = num(st, "fate", "FIRED_by_runs");
                if (st_rc == 0 && pending == 0 && fate == N_TASKS &&
                    firing == 0)
                        break;
                it_sleep_until(kd_now_ms() + 500);
        }
        const cJSON *members = cJSON_GetObjectItemCaseSensitive(
            cJSON_GetObjectItemCaseSensitive(st, "group"), "members");
        const cJSON *m0 = cJSON_GetArrayItem(members, 0);
        printf("\n  kdelayctl stats: exit %d, members %.0f (%s), pending %.0f, "
               "fate rows FIRED %.0f (by runs %.0f), FIRING %.0f",
               st_rc, num(st, "group", "member_count"),
               cJSON_IsString(m0) ? m0->valuestring : "-", pending, fate,
               by_runs, firing);
        CU_ASSERT_EQUAL(st_rc, 0);
        /* The one malformed record, by its reason; all of the window
         * read. */
        CU_ASSERT_EQUAL(num(st, "dead_letters", "total"), 1);
        CU_ASSERT_EQUAL(
            num(cJSON_GetObjectItemCaseSensitive(st, "dead_letters"),
                "by_reason", "missing-target"),
            1);
        CU_ASSERT(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(
            cJSON_GetObjectItemCaseSensitive(st, "dead_letters"), "complete")));
        CU_ASSERT_EQUAL(num(st, "group", "member_count"), 1);
        CU_ASSERT(cJSON_IsString(m0) &&
                  !strcmp(m0->valuestring,
                          "kdelay-forwarder/" KDELAY_VERSION_STR "/fwHTTP"));
        CU_ASSERT_EQUAL(pending, 0);
        CU_ASSERT_EQUAL(fate, N_TASKS);
        CU_ASSERT_EQUAL(firing, 0);
        CU_ASSERT(by_runs >= 0 && by_runs <= fate);
        CU_ASSERT_EQUAL(num(st, "fate", "CANCELLED"), 0);
        CU_ASSERT_EQUAL(num(st, "fate", "DEAD"), 0);
        cJSON_Delete(st);

        /* MySQL stopped: not ready (and why), still alive. */
        CU_ASSERT_EQUAL_FATAL(it_stack("mysql-stop"), 0);
        int down = wait_status(port, "/readyz", 503, 20000);
        body = NULL;
        get(port, "GET", "/readyz", &body);
        char *nl = body ? strchr(body, '\n') : NULL;
        if (nl)
                *nl = '\0';
        int healthy = get(port, "GET", "/healthz", NULL);
        int started = it_stack("mysql-start");
        int up = wait_status(port, "/readyz", 200, 30000);
        CU_ASSERT_EQUAL(it_fwd_stop(&f, SIGTERM), 0);
        st = NULL;
        CU_ASSERT_EQUAL(ctl_stats(prefix, group, url, &st), 1); /* no member */
        cJSON_Delete(st);
        printf("\n  scrapes: fired_total %.0f -> %.0f, late_seconds_count "
               "%.0f -> %.0f for %d tasks; MySQL stopped: /readyz %d (\"%s\"), "
               "/healthz %d; started again: /readyz %d\n",
               fired0, fired, late0, late, N_TASKS, down, body ? body : "",
               healthy, up);
        CU_ASSERT_EQUAL(fired - fired0, N_TASKS);
        CU_ASSERT_EQUAL(late - late0, N_TASKS);
        CU_ASSERT_EQUAL(down, 503);
        CU_ASSERT(body && strstr(body, "MySQL"));
        CU_ASSERT_EQUAL(healthy, 200);
        CU_ASSERT_EQUAL(started, 0);
        CU_ASSERT_EQUAL(up, 200);
        free(body);
        it_db_drop(db);
}

/* What the forwarder told the notify socket fd until `until` appears
 * (or timeout_ms): counts of READY=1, WATCHDOG=1, STOPPING=1, and whether
 * a STATUS= named `instance`. */
typedef struct notes {
        int ready, watchdog, stopping, status_named;
} notes_t;

static void read_notes(int fd, notes_t *n, const char *instance,
                       const char *until, int want, int timeout_ms)
{
        int64_t end = kd_mono_ms() + timeout_ms;
        while (kd_mono_ms() < end) {
                char buf[512];
                ssize_t len = recv(fd, buf, sizeof(buf) - 1, 0);
                if (len <= 0)
                        continue; /* SO_RCVTIMEO */
                buf[len] = '\0';
                n->ready += strstr(buf, "READY=1") != NULL;
                n->watchdog += strstr(buf, "WATCHDOG=1") != NULL;
                n->stopping += strstr(buf, "STOPPING=1") != NULL;
                n->status_named |=
                    strstr(buf, "STATUS=") && strstr(buf, instance);
                if ((!strcmp(until, "READY=1") && n->ready >= want) ||
                    (!strcmp(until, "WATCHDOG=1") && n->watchdog >= want) ||
                    (!strcmp(until, "STOPPING=1") && n->stopping >= want))
                        return;
        }
}

/* A tier of the ladder without its topic: said at start (one line naming
 * it and kdelayctl topics create), /readyz 503 with that reason, gauge
 * tier_topics_missing; the other tier's topic exists. */
static void test_missing_tier_topic_named(void)
{
        char prefix[40], group[64], db[64], url[256], t1m[96], t5s[96];
        it_unique(prefix, sizeof(prefix), "ithttpmiss");
        it_unique(db, sizeof(db), "kdit_httpm");
        snprintf(group, sizeof(group), "%s-group", prefix);
        snprintf(t1m, sizeof(t1m), "%s.tier.1m", prefix);
        snprintf(t5s, sizeof(t5s), "%s.tier.5s", prefix);
        CU_ASSERT_EQUAL_FATAL(it_db_create(db, 1, url, sizeof(url)), 0);
        CU_ASSERT_EQUAL_FATAL(it_create_topic(t1m, 1), 0);

        it_fwd_t f = {.instance = "fwMISS", .pid = -1};
        const char *props[] = {"forwarder.http_listen=127.0.0.1:0",
                               "tiers=5s,1m", NULL};
        CU_ASSERT_EQUAL_FATAL(
            it_fwd_start(&f, KDELAY_FORWARDER, prefix, group, url, props), 0);
        CU_ASSERT_EQUAL_FATAL(it_wait_log(f.log, "event=http_listening", 10000),
                              0);
        CU_ASSERT_EQUAL(it_wait_log(f.log,
                                    "event=tier_topics_missing missing=1 of=2",
                                    10000),
                        0);
        CU_ASSERT_EQUAL(it_log_count(f.log, t5s), 1);
        CU_ASSERT_EQUAL(it_log_count(f.log, "fix=\"kdelayctl topics create\""),
                        1);
        unsigned port =
            (unsigned)it_log_sum(f.log, "event=http_listening", "port");
        CU_ASSERT_FATAL(port > 0);
        /* Published every second: the reason is there at the latest then. */
        it_sleep_until(kd_now_ms() + 1500);
        char *body = NULL;
        CU_ASSERT_EQUAL(get(port, "GET", "/readyz", &body), 503);
        char want[160];
        snprintf(want, sizeof(want),
                 "tier topics missing: %s (create them: "
                 "kdelayctl topics create)",
                 t5s);
        CU_ASSERT(body && strstr(body, want));
        if (!body || !strstr(body, want))
                printf("\n  /readyz: %s", body ? body : "(none)");
        free(body);
        body = NULL;
        CU_ASSERT_EQUAL(get(port, "GET", "/metrics", &body), 200);
        CU_ASSERT_EQUAL(sample(body, "kdelay_forwarder_tier_topics_missing"),
                        1);
        free(body);
        CU_ASSERT_EQUAL(it_fwd_stop(&f, SIGTERM), 0);
        it_db_drop(db);
}

/* Two live forwarders with one forwarder.instance: a dynamic member that
 * finds another member with its name (client.id) says so at start and
 * counts it (instance_in_use); of static members (group.instance.id) the
 * broker fences the older one, which says why and exits 1, and the newer
 * one logs no instance_in_use. */
static void test_instance_in_use(void)
{
        char prefix[40], group[64], sgroup[64], db[64], url[256];
        it_unique(prefix, sizeof(prefix), "ithttpdup");
        it_unique(db, sizeof(db), "kdit_httpd");
        snprintf(group, sizeof(group), "%s-group", prefix);
        snprintf(sgroup, sizeof(sgroup), "%s-static", prefix);
        CU_ASSERT_EQUAL_FATAL(it_db_create(db, 1, url, sizeof(url)), 0);
        CU_ASSERT_EQUAL_FATAL(it_tiers_create(prefix, url, 1), 0);

        /* The log files by it_fwd_t's instance; the name by the -X after. */
        const char *props[] = {"forwarder.instance=fwDUP",
                               "forwarder.http_listen=127.0.0.1:0", NULL};
        it_fwd_t a = {.instance = "fwDupA", .pid = -1};
        it_fwd_t b = {.instance = "fwDupB", .pid = -1};
        CU_ASSERT_EQUAL_FATAL(
            it_fwd_start(&a, KDELAY_FORWARDER, prefix, group, url, props), 0);
        CU_ASSERT_EQUAL(it_wait_log(a.log, "event=partitions_assigned", 30000),
                        0);
        CU_ASSERT_EQUAL(it_log_count(a.log, "event=instance_in_use"), 0);
        CU_ASSERT_EQUAL_FATAL(
            it_fwd_start(&b, KDELAY_FORWARDER, prefix, group, url, props), 0);
        CU_ASSERT_EQUAL(
            it_wait_log(b.log,
                        "event=instance_in_use instance=fwDUP group=", 15000),
            0);
        CU_ASSERT_EQUAL(it_log_count(b.log, "others=1 "), 1);
        unsigned port =
            (unsigned)it_log_sum(b.log, "event=http_listening", "port");
        CU_ASSERT(port > 0);
        it_sleep_until(kd_now_ms() + 1500); /* published every second */
        char *body = NULL;
        CU_ASSERT_EQUAL(get(port, "GET", "/metrics", &body), 200);
        CU_ASSERT_EQUAL(sample(body, "kdelay_forwarder_instance_in_use"), 1);
        free(body);
        CU_ASSERT_EQUAL(it_fwd_stop(&b, SIGTERM), 0);
        CU_ASSERT_EQUAL(it_fwd_stop(&a, SIGTERM), 0);

        /* Static members: the older one is fenced, says so, exits 1. */
        const char *sprops[] = {"forwarder.instance=fwSTATIC",
                                "forwarder.static_membership=1", NULL};
        it_fwd_t c = {.instance = "fwStatC", .pid = -1};
        it_fwd_t d = {.instance = "fwStatD", .pid = -1};
        CU_ASSERT_EQUAL_FATAL(
            it_fwd_start(&c, KDELAY_FORWARDER, prefix, sgroup, url, sprops), 0);
        CU_ASSERT_EQUAL(it_wait_log(c.log, "event=partitions_assigned", 30000),
                        0);
        CU_ASSERT_EQUAL_FATAL(
            it_fwd_start(&d, KDELAY_FORWARDER, prefix, sgroup, url, sprops), 0);
        CU_ASSERT_EQUAL(it_wait_log(c.log, "event=instance_fenced", 30000), 0);
        CU_ASSERT_EQUAL(it_wait_pid(c.pid, 30000), 1);
        c.pid = -1;
        CU_ASSERT_EQUAL(
            it_log_count(c.log, "same forwarder.instance (group.instance.id)"),
            1);
        /* The newer static member makes no instance check: the listing
         * it would take shows its fenced predecessor for a moment. */
        CU_ASSERT_EQUAL(it_log_count(d.log, "event=instance_in_use"), 0);
        CU_ASSERT_EQUAL(it_fwd_stop(&d, SIGTERM), 0);
        it_db_drop(db);
}

/* A second forwarder on a host with the first one's forwarder.http_listen
 * (a systemd instance without its environment file): it stops at once
 * with exit 6, which the unit does not restart (RestartPreventExitStatus=),
 * and its line names the address and the file that gives it a port of
 * its own. The first one keeps serving. */
static void test_http_listen_taken(void)
{
        char prefix[40], group[64], db[64], url[256], listen[64], prop[96];
        it_unique(prefix, sizeof(prefix), "ithttptaken");
        it_unique(db, sizeof(db), "kdit_httpt");
        snprintf(group, sizeof(group), "%s-group", prefix);
        CU_ASSERT_EQUAL_FATAL(it_db_create(db, 1, url, sizeof(url)), 0);
        CU_ASSERT_EQUAL_FATAL(it_tiers_create(prefix, url, 1), 0);
        const char *props[] = {"forwarder.http_listen=127.0.0.1:0", NULL};
        it_fwd_t a = {.instance = "fwTakenA", .pid = -1};
        it_fwd_t b = {.instance = "fwTakenB", .pid = -1};
        CU_ASSERT_EQUAL_FATAL(
            it_fwd_start(&a, KDELAY_FORWARDER, prefix, group, url, props), 0);
        CU_ASSERT_EQUAL_FATAL(it_wait_log(a.log, "event=http_listening", 30000),
                              0);
        unsigned port =
            (unsigned)it_log_sum(a.log, "event=http_listening", "port");
        CU_ASSERT_FATAL(port > 0);
        snprintf(listen, sizeof(listen), "127.0.0.1:%u", port);
        snprintf(prop, sizeof(prop), "forwarder.http_listen=%s", listen);
        const char *bprops[] = {prop, NULL};
        CU_ASSERT_EQUAL_FATAL(
            it_fwd_start(&b, KDELAY_FORWARDER, prefix, group, url, bprops), 0);
        int rc = it_wait_pid(b.pid, 30000);
        b.pid = rc < 0 ? b.pid : -1;
        char want[160];
        snprintf(want, sizeof(want),
                 "event=startup_failed what=http listen=%s err=", listen);
        int named = it_log_count(b.log, want);
        int in_use = it_log_count(b.log, "Address already in use");
        int file = it_log_count(
            b.log, "KDELAY_HTTP_LISTEN=HOST:PORT in "
                   "/etc/default/kdelay-forwarder-fwTakenB\" exit=6");
        printf("\n  a second forwarder on %s: exit %d, its line names the "
               "address %d, in use %d, the env file %d\n",
               listen, rc, named, in_use, file);
        CU_ASSERT_EQUAL(rc, 6);
        CU_ASSERT_EQUAL(named, 1);
        CU_ASSERT_EQUAL(in_use, 1);
        CU_ASSERT_EQUAL(file, 1);
        CU_ASSERT_EQUAL(it_log_count(b.log, "event=forwarder_exit"), 1);
        if (b.pid > 0)
                it_fwd_stop(&b, SIGKILL);
        char *body = NULL;
        CU_ASSERT_EQUAL(get(port, "GET", "/healthz", &body), 200);
        free(body);
        CU_ASSERT_EQUAL(it_fwd_stop(&a, SIGTERM), 0);
        it_db_drop(db);
}

static void test_systemd_notifications(void)
{
        char prefix[40], group[64], db[64], url[256], sock[108], env_sock[128];
        it_unique(prefix, sizeof(prefix), "itsdn");
        it_unique(db, sizeof(db), "kdit_sdn");
        snprintf(group, sizeof(group), "%s-group", prefix);
        snprintf(sock, sizeof(sock), "/tmp/kdit-notify-%d.sock", (int)getpid());
        snprintf(env_sock, sizeof(env_sock), "NOTIFY_SOCKET=%s", sock);
        CU_ASSERT_EQUAL_FATAL(it_db_create(db, 1, url, sizeof(url)), 0);
        CU_ASSERT_EQUAL_FATAL(it_tiers_create(prefix, url, 1), 0);

        int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        CU_ASSERT_FATAL(fd >= 0);
        struct sockaddr_un sa = {.sun_family = AF_UNIX};
        kd_strlcpy(sa.sun_path, sock, sizeof(sa.sun_path));
        unlink(sock);
        CU_ASSERT_EQUAL_FATAL(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
        struct timeval tv = {0, 200000};
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));

        const char *env[] = {env_sock, "WATCHDOG_USEC=1000000", NULL};
        it_fwd_t f = {.instance = "fwSDN", .pid = -1, .env = env};
        CU_ASSERT_EQUAL_FATAL(
            it_fwd_start(&f, KDELAY_FORWARDER, prefix, group, url, NULL), 0);
        notes_t n = {0};
        read_notes(fd, &n, "fwSDN", "READY=1", 1, 30000);
        read_notes(fd, &n, "fwSDN", "WATCHDOG=1", 3, 5000);
        CU_ASSERT_EQUAL(kill(f.pid, SIGTERM), 0);
        read_notes(fd, &n, "fwSDN", "STOPPING=1", 1, 15000);
        int rc = it_wait_pid(f.pid, 60000); /* a second signal exits 130 */
        close(fd);
        unlink(sock);
        printf("\n  notify socket: READY=1 x%d (status names the instance: "
               "%d), WATCHDOG=1 x%d, STOPPING=1 x%d; exit %d\n",
               n.ready, n.status_named, n.watchdog, n.stopping, rc);
        CU_ASSERT_EQUAL(n.ready, 1);
        CU_ASSERT(n.status_named);
        CU_ASSERT(n.watchdog >= 3);
        CU_ASSERT_EQUAL(n.stopping, 1);
        CU_ASSERT_EQUAL(rc, 0);
        it_db_drop(db);
}

int main(void)
{
        static const kd_test_case_t cases[] = {
            KD_TEST(test_metrics_health_and_readiness),
            KD_TEST(test_systemd_notifications),
            KD_TEST(test_missing_tier_topic_named),
            KD_TEST(test_instance_in_use),
            KD_TEST(test_http_listen_taken),
            KD_TEST_END};
        return kd_test_run("http", cases, it_env_init, NULL);
}
