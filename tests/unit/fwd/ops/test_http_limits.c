/* SPDX-License-Identifier: Apache-2.0 */
/* The forwarder's HTTP endpoint without Kafka (src/fwd/ops/http.c): the
 * forwarder.http_listen parser and its refusals (the property, and the
 * forwarder exiting 2 at startup), and probes that slow clients cannot
 * starve. Slow clients connect to 127.0.0.1 from loopback addresses
 * (127.0.0.1, 127.0.0.2 and up: one "client" each) and send a byte of a
 * request now and then; meanwhile /healthz, /readyz and /metrics must
 * answer within KD_PROBE_MS, and connections left silent are closed by
 * the idle timeout. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <kdelay/kdelay.h>

#include "core/kd_timer.h"
#include "kd_listen.h"
#include "kd_test.h"
#include "kd_util.h"
#include "ops/kd_http.h"

/* A probe must answer within this long while slow clients hold
 * connections (a behaviour bound: kubelet's default probe timeout is 1 s;
 * seen: a few ms). */
#define KD_PROBE_MS 3000
#define N_SLOW      32

static void test_listen_parse(void)
{
        static const struct {
                const char *text;
                const char *host;
                unsigned port;
                int v6;
        } good[] = {
            {"127.0.0.1:9464", "127.0.0.1", 9464, 0},
            {"0.0.0.0:1", "0.0.0.0", 1, 0},
            {"localhost:65535", "localhost", 65535, 0},
            {"127.0.0.1:0", "127.0.0.1", 0, 0},
            {"[::1]:9464", "::1", 9464, 1},
            {"[::]:9464", "::", 9464, 1},
            {"[fe80::1%eth0]:80", "fe80::1%eth0", 80, 1},
        };
        for (size_t i = 0; i < KD_ARRAY_LEN(good); i++) {
                kd_listen_t l;
                char why[256] = "";
                CU_ASSERT_EQUAL(
                    kd_listen_parse(&l, good[i].text, why, sizeof(why)),
                    KDELAY_OK);
                CU_ASSERT_STRING_EQUAL(l.host, good[i].host);
                CU_ASSERT_EQUAL(l.port, good[i].port);
                CU_ASSERT_EQUAL(l.v6, good[i].v6);
        }
        static const char *const bad[] = {
            ":9464",
            "127.0.0.1:99999",
            "127.0.0.1:65536",
            "127.0.0.1:",
            "127.0.0.1",
            "127.0.0.1:abc",
            "127.0.0.1:-1",
            "127.0.0.1:+80",
            "127.0.0.1:80x",
            "127.0.0.1:000080",
            "::1:9464",
            "[::1]",
            "[::1]:",
            "[]:9464",
            "[127.0.0.1]:9464",
            "a b:80",
            "",
            ":",
            "[::1]9464",
            "host]:80",
        };
        for (size_t i = 0; i < KD_ARRAY_LEN(bad); i++) {
                kd_listen_t l;
                char why[256] = "", quoted[64];
                snprintf(quoted, sizeof(quoted), "\"%s\"", bad[i]);
                kdelay_err_t err =
                    kd_listen_parse(&l, bad[i], why, sizeof(why));
                if (err != KDELAY_ERR_CONFIG || !strstr(why, quoted))
                        printf("\n  %s: %s (%s)", quoted, why,
                               kdelay_err_name(err));
                CU_ASSERT_EQUAL(err, KDELAY_ERR_CONFIG);
                CU_ASSERT_PTR_NOT_NULL(strstr(why, quoted));
                CU_ASSERT_PTR_NOT_NULL(strstr(why, "forwarder.http_listen"));
        }
}

/* The property refuses what the parser refuses, and keeps its value. */
static void test_conf_refuses_bad_listen(void)
{
        kdelay_conf_t *c = kdelay_conf_new();
        CU_ASSERT_PTR_NOT_NULL_FATAL(c);
        char why[256], val[64];
        CU_ASSERT_EQUAL(kdelay_conf_set(c, "forwarder.http_listen",
                                        "[::1]:9464", why, sizeof(why)),
                        KDELAY_OK);
        CU_ASSERT_EQUAL(kdelay_conf_set(c, "forwarder.http_listen", ":9464",
                                        why, sizeof(why)),
                        KDELAY_ERR_CONFIG);
        CU_ASSERT_PTR_NOT_NULL(strstr(why, "\":9464\""));
        CU_ASSERT_EQUAL(
            kdelay_conf_get(c, "forwarder.http_listen", val, sizeof(val)),
            KDELAY_OK);
        CU_ASSERT_STRING_EQUAL(val, "[::1]:9464");
        CU_ASSERT_EQUAL(
            kdelay_conf_set(c, "forwarder.http_listen", "", why, sizeof(why)),
            KDELAY_OK); /* off */
        kdelay_conf_destroy(c);
}

/* kdelay-forwarder -X forwarder.http_listen=value: exit code, and whether
 * its stderr quotes the value. */
static int forwarder_run(const char *value, int *quoted)
{
        char cmd[512], want[64], out[2048] = "";
        snprintf(cmd, sizeof(cmd),
                 "'%s' -X "
                 "'forwarder.http_listen=%s' 2>&1",
                 KDELAY_FORWARDER, value);
        snprintf(want, sizeof(want), "\"%s\"", value);
        FILE *p = popen(cmd, "r");
        if (!p)
                return -1;
        size_t n = fread(out, 1, sizeof(out) - 1, p);
        out[n] = '\0';
        int st = pclose(p);
        *quoted = strstr(out, want) != NULL;
        printf("\n  http_listen=%s: %s", value, out);
        return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static void test_forwarder_refuses_bad_listen(void)
{
        static const char *const bad[] = {":9464", "127.0.0.1:99999",
                                          "127.0.0.1:x", "127.0.0.1"};
        for (size_t i = 0; i < KD_ARRAY_LEN(bad); i++) {
                int quoted = 0;
                CU_ASSERT_EQUAL(forwarder_run(bad[i], &quoted), 2);
                CU_ASSERT(quoted);
        }
}

/* A TCP connection to 127.0.0.1:port from address src; -1 on failure. */
static int connect_from(const char *src, unsigned port)
{
        int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return -1;
        struct sockaddr_in from = {.sin_family = AF_INET};
        struct sockaddr_in to = {.sin_family = AF_INET,
                                 .sin_port = htons((uint16_t)port)};
        inet_pton(AF_INET, src, &from.sin_addr);
        inet_pton(AF_INET, "127.0.0.1", &to.sin_addr);
        if (bind(fd, (struct sockaddr *)&from, sizeof(from)) ||
            connect(fd, (struct sockaddr *)&to, sizeof(to))) {
                close(fd);
                return -1;
        }
        return fd;
}

/* 1 when the server closed fd within timeout_ms (end of stream or a
 * reset), 0 when it is still open. */
static int closed_by_server(int fd, int timeout_ms)
{
        struct pollfd p = {.fd = fd, .events = POLLIN};
        if (poll(&p, 1, timeout_ms) <= 0)
                return 0;
        char c;
        ssize_t n = recv(fd, &c, 1, MSG_DONTWAIT);
        return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK);
}

/* GET path from address src: the status (0 when there was no answer
 * within KD_PROBE_MS), the time it took in *ms. */
static int probe(const char *src, unsigned port, const char *path, int64_t *ms)
{
        int64_t t0 = kd_mono_ms();
        int fd = connect_from(src, port);
        int status = 0;
        char req[128], resp[256];
        snprintf(req, sizeof(req),
                 "GET %s HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
                 path);
        if (fd >= 0 && send(fd, req, strlen(req), MSG_NOSIGNAL) > 0) {
                struct pollfd p = {.fd = fd, .events = POLLIN};
                ssize_t n = 0;
                if (poll(&p, 1, KD_PROBE_MS) > 0)
                        n = recv(fd, resp, sizeof(resp) - 1, 0);
                resp[n > 0 ? n : 0] = '\0';
                if (!strncmp(resp, "HTTP/1.1 ", 9))
                        status = atoi(resp + 9);
        }
        if (fd >= 0)
                close(fd);
        *ms = kd_mono_ms() - t0;
        return status;
}

/* The three paths from src, each within KD_PROBE_MS; the slowest answer's
 * time in *max_ms. 1 when all three said 200. */
static int probes_answer(const char *src, unsigned port, int64_t *max_ms)
{
        static const char *const paths[] = {"/healthz", "/readyz", "/metrics"};
        int ok = 1;
        for (size_t i = 0; i < KD_ARRAY_LEN(paths); i++) {
                int64_t ms;
                int status = probe(src, port, paths[i], &ms);
                if (status != 200) {
                        printf("\n  %s from %s: status %d after %lld ms",
                               paths[i], src, status, (long long)ms);
                        ok = 0;
                }
                if (ms > *max_ms)
                        *max_ms = ms;
        }
        return ok;
}

static kd_http_t *serve(unsigned *port)
{
        static kd_clocksrc_t clock;
        kd_http_t *h = NULL;
        char why[256];
        kd_listen_t at;
        kd_clocksrc_real(&clock);
        if (kd_listen_parse(&at, "127.0.0.1:0", why, sizeof(why)) ||
            kd_http_start(&h, &at, "127.0.0.1:0", &clock, why, sizeof(why))) {
                printf("\n  %s", why);
                return NULL;
        }
        kd_http_ready(h, 1, NULL);
        kd_http_alive(h, kd_mono_ms());
        static const char scrape[] = "kdelay_build_info{version=\"t\"} 1\n";
        kd_http_publish(h, scrape, sizeof(scrape) - 1);
        *port = kd_http_port(h);
        return h;
}

/* n slow clients from src, each sending "G" now: their fds in fd[]. */
static void slow_connect(const char *src, unsigned port, int *fd, int n)
{
        for (int i = 0; i < n; i++) {
                fd[i] = connect_from(src, port);
                if (fd[i] >= 0)
                        send(fd[i], "G", 1, MSG_NOSIGNAL);
        }
}

/* How many of the n fds the server kept open, 200 ms after slow_connect
 * (those it refused it closes at once: they are closed here). */
static int slow_held(int *fd, int n)
{
        usleep(200 * 1000);
        int held = 0;
        for (int i = 0; i < n; i++) {
                if (fd[i] >= 0 && closed_by_server(fd[i], 0)) {
                        close(fd[i]);
                        fd[i] = -1;
                }
                held += fd[i] >= 0;
        }
        return held;
}

/* One more byte of the request on each open fd (a trickle). */
static void slow_trickle(int *fd, int n)
{
        for (int i = 0; i < n; i++)
                if (fd[i] >= 0)
                        send(fd[i], "E", 1, MSG_NOSIGNAL);
}

/* Waits (at most timeout_ms) until the server closed every open fd; how
 * many it did. */
static int slow_closed(int *fd, int n, int timeout_ms)
{
        int64_t end = kd_mono_ms() + timeout_ms;
        int closed = 0;
        for (int i = 0; i < n; i++) {
                if (fd[i] < 0)
                        continue;
                int64_t left = end - kd_mono_ms();
                closed += closed_by_server(fd[i], left > 0 ? (int)left : 0);
                close(fd[i]);
                fd[i] = -1;
        }
        return closed;
}

/* 32 slow clients from one address: the server keeps
 * KD_HTTP_MAX_PER_CLIENT of them; the probes, from another address,
 * answer at once while the slow ones trickle a byte a second (faster than
 * the idle timeout) for longer than the timeout; once they stop, the
 * timeout closes them all. */
static void test_probes_answer_under_slow_clients(void)
{
        unsigned port = 0;
        kd_http_t *h = serve(&port);
        CU_ASSERT_PTR_NOT_NULL_FATAL(h);
        int fd[N_SLOW];
        slow_connect("127.0.0.1", port, fd, N_SLOW);
        int held = slow_held(fd, N_SLOW);
        int64_t max_ms = 0;
        int answered = 1;
        int64_t t0 = 0;
        for (int s = 0; s <= KD_HTTP_IDLE_TIMEOUT_S + 1; s++) {
                usleep(1000 * 1000);
                answered &= probes_answer("127.0.0.3", port, &max_ms);
                answered &= probes_answer("127.0.0.2", port, &max_ms);
                slow_trickle(fd, N_SLOW);
                t0 = kd_mono_ms();
        }
        int still = 0;
        for (int i = 0; i < N_SLOW; i++)
                still += fd[i] >= 0 && !closed_by_server(fd[i], 0);
        int closed =
            slow_closed(fd, N_SLOW, (KD_HTTP_IDLE_TIMEOUT_S + 2) * 1000);
        int64_t close_ms = kd_mono_ms() - t0;
        printf("\n  %d slow clients from one address: %d kept, %d still "
               "open after %d s of trickle; probes from two other "
               "addresses: slowest answer %lld ms; %d of them closed "
               "%lld ms after their last byte\n",
               N_SLOW, held, still, KD_HTTP_IDLE_TIMEOUT_S + 2,
               (long long)max_ms, closed, (long long)close_ms);
        CU_ASSERT_EQUAL(held, KD_HTTP_MAX_PER_CLIENT);
        CU_ASSERT_EQUAL(still, held);
        CU_ASSERT(answered);
        CU_ASSERT(max_ms < KD_PROBE_MS);
        CU_ASSERT_EQUAL(closed, held);
        kd_http_stop(h);
}

/* Slow clients from so many addresses that they reach the total limit:
 * other clients are refused beyond KD_HTTP_MAX_CONNECTIONS -
 * KD_HTTP_LOCAL_RESERVE, and the loopback address still gets its
 * probes answered. */
static void test_loopback_reserve(void)
{
        enum { ADDRS = 12 };
        unsigned port = 0;
        kd_http_t *h = serve(&port);
        CU_ASSERT_PTR_NOT_NULL_FATAL(h);
        int fd[ADDRS * KD_HTTP_MAX_PER_CLIENT];
        for (int a = 0; a < ADDRS; a++) {
                char src[32];
                snprintf(src, sizeof(src), "127.0.0.%d", 10 + a);
                slow_connect(src, port, fd + a * KD_HTTP_MAX_PER_CLIENT,
                             KD_HTTP_MAX_PER_CLIENT);
        }
        int held = slow_held(fd, ADDRS * KD_HTTP_MAX_PER_CLIENT);
        slow_trickle(fd, ADDRS * KD_HTTP_MAX_PER_CLIENT);
        int64_t max_ms = 0, other_ms = 0;
        int answered = probes_answer("127.0.0.1", port, &max_ms);
        int other = probe("127.0.0.99", port, "/healthz", &other_ms);
        uint64_t refused = kd_http_refused(h);
        int closed = slow_closed(fd, ADDRS * KD_HTTP_MAX_PER_CLIENT,
                                 (KD_HTTP_IDLE_TIMEOUT_S + 2) * 1000);
        printf("\n  %d slow clients from %d addresses: %d kept, %llu "
               "refused; probes from 127.0.0.1: slowest %lld ms; another "
               "address: status %d; %d closed by the idle timeout\n",
               ADDRS * KD_HTTP_MAX_PER_CLIENT, ADDRS, held,
               (unsigned long long)refused, (long long)max_ms, other, closed);
        CU_ASSERT_EQUAL(held, KD_HTTP_MAX_CONNECTIONS - KD_HTTP_LOCAL_RESERVE);
        CU_ASSERT(refused >= (uint64_t)(ADDRS * KD_HTTP_MAX_PER_CLIENT - held));
        CU_ASSERT(answered);
        CU_ASSERT(max_ms < KD_PROBE_MS);
        CU_ASSERT_EQUAL(other, 0);
        CU_ASSERT_EQUAL(closed, held);
        kd_http_stop(h);
}

int main(void)
{
        static const kd_test_case_t cases[] = {
            KD_TEST(test_listen_parse),
            KD_TEST(test_conf_refuses_bad_listen),
            KD_TEST(test_forwarder_refuses_bad_listen),
            KD_TEST(test_probes_answer_under_slow_clients),
            KD_TEST(test_loopback_reserve),
            KD_TEST_END};
        return kd_test_run("http_limits", cases, NULL, NULL);
}
