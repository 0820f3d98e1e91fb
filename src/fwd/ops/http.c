/* SPDX-License-Identifier: Apache-2.0 */
/* The forwarder's HTTP endpoint (kd_http.h), on libmicrohttpd's own
 * polling thread. */
#include "kd_http.h"

#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <netdb.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/kd_timer.h"
#include "kd_listen.h"
#include "kd_util.h"

struct kd_http {
        struct MHD_Daemon *daemon; /* owned */
        unsigned port;
        _Atomic int64_t alive_mono;    /* the loop's last turn */
        const kd_clocksrc_t *clock;    /* borrowed: the forwarder's */
        atomic_uint connections;       /* open now (MHD's notices) */
        atomic_uint_least64_t refused; /* by accept_policy */
        pthread_mutex_t lock;          /* the fields below */
        char *metrics;                 /* owned; NULL until published */
        size_t metrics_len;
        int ready;
        char why[KD_HTTP_WHY_MAX]; /* why not ready */
};

#define KD_PROM_TYPE "text/plain; version=0.0.4; charset=utf-8"

static enum MHD_Result answer(struct MHD_Connection *c, unsigned status,
                              const char *type, const char *body, size_t len)
{
        struct MHD_Response *r = MHD_create_response_from_buffer(
            len, (void *)body, MHD_RESPMEM_MUST_COPY);
        if (!r)
                return MHD_NO;
        enum MHD_Result ok = MHD_add_response_header(r, "Content-Type", type);
        if (ok == MHD_YES)
                ok = MHD_queue_response(c, status, r);
        MHD_destroy_response(r);
        return ok;
}

static enum MHD_Result text(struct MHD_Connection *c, unsigned status,
                            const char *body)
{
        return answer(c, status, "text/plain; charset=utf-8", body,
                      strlen(body));
}

static enum MHD_Result metrics(kd_http_t *h, struct MHD_Connection *c)
{
        pthread_mutex_lock(&h->lock);
        enum MHD_Result r =
            h->metrics ? answer(c, MHD_HTTP_OK, KD_PROM_TYPE, h->metrics,
                                h->metrics_len)
                       : text(c, MHD_HTTP_SERVICE_UNAVAILABLE, "starting\n");
        pthread_mutex_unlock(&h->lock);
        return r;
}

static enum MHD_Result healthz(kd_http_t *h, struct MHD_Connection *c)
{
        int64_t idle =
            kd_clocksrc_mono_ms(h->clock) - atomic_load(&h->alive_mono);
        char body[96];
        if (idle < KD_HTTP_STUCK_MS)
                return text(c, MHD_HTTP_OK, "ok\n");
        snprintf(body, sizeof(body),
                 "stuck: the loop has not turned for %lld "
                 "ms\n",
                 (long long)idle);
        return text(c, MHD_HTTP_SERVICE_UNAVAILABLE, body);
}

static enum MHD_Result readyz(kd_http_t *h, struct MHD_Connection *c)
{
        char body[KD_HTTP_WHY_MAX + 8]; /* "ready; " + why + "\n" */
        pthread_mutex_lock(&h->lock);
        int ready = h->ready;
        /* Ready with a note (firing without claims): "ready; <note>". */
        if (ready && h->why[0])
                snprintf(body, sizeof(body), "ready; %s\n", h->why);
        else
                snprintf(body, sizeof(body), "%s\n", ready ? "ready" : h->why);
        pthread_mutex_unlock(&h->lock);
        return text(c, ready ? MHD_HTTP_OK : MHD_HTTP_SERVICE_UNAVAILABLE,
                    body);
}

static enum MHD_Result handle(void *cls, struct MHD_Connection *c,
                              const char *url, const char *method,
                              const char *version, const char *upload_data,
                              size_t *upload_data_size, void **req_cls)
{
        (void)version;
        (void)upload_data;
        (void)upload_data_size;
        (void)req_cls;
        kd_http_t *h = cls;
        if (strcmp(method, MHD_HTTP_METHOD_GET) &&
            strcmp(method, MHD_HTTP_METHOD_HEAD))
                return text(c, MHD_HTTP_METHOD_NOT_ALLOWED, "GET only\n");
        if (!strcmp(url, "/metrics"))
                return metrics(h, c);
        if (!strcmp(url, "/healthz"))
                return healthz(h, c);
        if (!strcmp(url, "/readyz"))
                return readyz(h, c);
        return text(c, MHD_HTTP_NOT_FOUND,
                    "not found: /metrics, /healthz, /readyz\n");
}

/* forwarder.http_listen, parsed (at) and as written (listen), into a
 * socket address (a name is resolved). */
static int listen_addr(const kd_listen_t *at, const char *listen,
                       struct sockaddr_storage *ss, char *errstr,
                       size_t errstr_size)
{
        char port[8];
        snprintf(port, sizeof(port), "%u", at->port);
        struct addrinfo hints = {0}, *res = NULL;
        hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
        hints.ai_socktype = SOCK_STREAM;
        int rc = getaddrinfo(at->host, port, &hints, &res);
        if (rc || !res) {
                kd_fail(KDELAY_ERR_CONFIG, errstr, errstr_size,
                        "forwarder.http_listen: \"%s\": %s", listen,
                        gai_strerror(rc));
                return -1;
        }
        memcpy(ss, res->ai_addr, res->ai_addrlen);
        freeaddrinfo(res);
        return 0;
}

/* 1 when the client is this host's loopback address (127.0.0.1, ::1 or
 * ::ffff:127.0.0.1): the probes a pod or container runs on itself. */
static int client_is_loopback(const struct sockaddr *sa)
{
        if (sa->sa_family == AF_INET) {
                const struct sockaddr_in *in = (const void *)sa;
                return ntohl(in->sin_addr.s_addr) == INADDR_LOOPBACK;
        }
        if (sa->sa_family != AF_INET6)
                return 0;
        const struct in6_addr *a =
            &((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr;
        static const unsigned char mapped_loopback[16] = {
            0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 127, 0, 0, 1};
        return IN6_IS_ADDR_LOOPBACK(a) ||
               !memcmp(a->s6_addr, mapped_loopback, sizeof(mapped_loopback));
}

/* MHD's accept policy: other clients than the loopback address are
 * refused once they would leave fewer than KD_HTTP_LOCAL_RESERVE
 * connections free, which stay for the probes run on this host. (MHD
 * itself holds every client to KD_HTTP_MAX_PER_CLIENT and all to
 * KD_HTTP_MAX_CONNECTIONS.) */
static enum MHD_Result accept_policy(void *cls, const struct sockaddr *addr,
                                     socklen_t addrlen)
{
        kd_http_t *h = cls;
        (void)addrlen;
        if (client_is_loopback(addr))
                return MHD_YES;
        if (atomic_load(&h->connections) >=
            KD_HTTP_MAX_CONNECTIONS - KD_HTTP_LOCAL_RESERVE) {
                atomic_fetch_add(&h->refused, 1);
                return MHD_NO;
        }
        return MHD_YES;
}

/* MHD's connection notices: the count accept_policy goes by. */
static void connection_notice(void *cls, struct MHD_Connection *c,
                              void **socket_context,
                              enum MHD_ConnectionNotificationCode code)
{
        kd_http_t *h = cls;
        (void)c;
        (void)socket_context;
        if (code == MHD_CONNECTION_NOTIFY_STARTED)
                atomic_fetch_add(&h->connections, 1);
        else if (code == MHD_CONNECTION_NOTIFY_CLOSED)
                atomic_fetch_sub(&h->connections, 1);
}

/* The daemon on ss: MHD's own thread (epoll where there is one), its
 * limits (kd_http.h) and our accept policy. NULL with errno set. */
static struct MHD_Daemon *daemon_start(kd_http_t *h,
                                       const struct sockaddr_storage *ss)
{
        unsigned flags = MHD_USE_AUTO_INTERNAL_THREAD;
        if (ss->ss_family == AF_INET6)
                flags |= MHD_USE_IPv6;
        return MHD_start_daemon(
            flags, 0, accept_policy, h, handle, h, MHD_OPTION_SOCK_ADDR,
            (const struct sockaddr *)ss, MHD_OPTION_CONNECTION_LIMIT,
            (unsigned)KD_HTTP_MAX_CONNECTIONS,
            MHD_OPTION_PER_IP_CONNECTION_LIMIT,
            (unsigned)KD_HTTP_MAX_PER_CLIENT, MHD_OPTION_CONNECTION_TIMEOUT,
            (unsigned)KD_HTTP_IDLE_TIMEOUT_S, MHD_OPTION_NOTIFY_CONNECTION,
            connection_notice, h, MHD_OPTION_END);
}

kdelay_err_t kd_http_start(kd_http_t **hp, const kd_listen_t *at,
                           const char *listen, const kd_clocksrc_t *clock,
                           char *errstr, size_t errstr_size)
{
        struct sockaddr_storage ss;
        if (listen_addr(at, listen, &ss, errstr, errstr_size))
                return KDELAY_ERR_CONFIG;
        kd_http_t *h = calloc(1, sizeof(*h));
        if (!h)
                return kd_fail(KDELAY_ERR_NO_MEMORY, errstr, errstr_size,
                               "out of memory");
        pthread_mutex_init(&h->lock, NULL);
        h->clock = clock;
        atomic_store(&h->alive_mono, kd_clocksrc_mono_ms(clock));
        kd_strlcpy(h->why, "starting", sizeof(h->why));
        errno = 0;
        h->daemon = daemon_start(h, &ss);
        if (!h->daemon) {
                int e = errno;
                kd_http_stop(h);
                kd_fail(KDELAY_ERR_SYSTEM, errstr, errstr_size,
                        "forwarder.http_listen: cannot listen on \"%s\": %s",
                        listen, e ? strerror(e) : "refused");
                errno = e; /* for the caller's advice */
                return KDELAY_ERR_SYSTEM;
        }
        const union MHD_DaemonInfo *info =
            MHD_get_daemon_info(h->daemon, MHD_DAEMON_INFO_BIND_PORT);
        h->port = info ? info->port : 0;
        *hp = h;
        return KDELAY_OK;
}

uint64_t kd_http_refused(kd_http_t *h)
{
        return atomic_load(&h->refused);
}

unsigned kd_http_port(const kd_http_t *h)
{
        return h->port;
}

int kd_http_publish(kd_http_t *h, const char *text_, size_t len)
{
        char *copy = kd_memdup(text_, len);
        if (!copy)
                return -1;
        pthread_mutex_lock(&h->lock);
        char *old = h->metrics;
        h->metrics = copy;
        h->metrics_len = len;
        pthread_mutex_unlock(&h->lock);
        free(old);
        return 0;
}

void kd_http_alive(kd_http_t *h, int64_t mono_ms)
{
        atomic_store_explicit(&h->alive_mono, mono_ms, memory_order_relaxed);
}

void kd_http_ready(kd_http_t *h, int ready, const char *why)
{
        pthread_mutex_lock(&h->lock);
        h->ready = ready;
        kd_strlcpy(h->why,
                   why     ? why
                   : ready ? ""
                           : "not ready",
                   sizeof(h->why));
        pthread_mutex_unlock(&h->lock);
}

void kd_http_stop(kd_http_t *h)
{
        if (!h)
                return;
        if (h->daemon)
                MHD_stop_daemon(h->daemon);
        free(h->metrics);
        pthread_mutex_destroy(&h->lock);
        free(h);
}
