/* The forwarder's HTTP endpoint (kd_http.h), on libmicrohttpd's own
 * polling thread. */
#include "kd_http.h"

#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <netdb.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kd_util.h"

struct kd_http {
        struct MHD_Daemon *daemon; /* owned */
        unsigned port;
        _Atomic int64_t alive_mono; /* the loop's last turn */
        pthread_mutex_t lock;       /* the fields below */
        char *metrics;              /* owned; NULL until published */
        size_t metrics_len;
        int ready;
        const char *why; /* static: why not ready */
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
        int64_t idle = kd_mono_ms() - atomic_load(&h->alive_mono);
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
        char body[128];
        pthread_mutex_lock(&h->lock);
        int ready = h->ready;
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

/* "host:port" or "[v6]:port" into a socket address. */
static int parse_listen(const char *listen, struct sockaddr_storage *ss,
                        char *errstr, size_t errstr_size)
{
        char host[256];
        const char *colon = strrchr(listen, ':');
        size_t hlen = colon ? (size_t)(colon - listen) : 0;
        if (!colon || !colon[1] || hlen >= sizeof(host)) {
                kd_fail(KDELAY_ERR_CONFIG, errstr, errstr_size,
                        "forwarder.http_listen: expected host:port");
                return -1;
        }
        memcpy(host, listen, hlen);
        host[hlen] = '\0';
        char *h = host;
        if (hlen >= 2 && host[0] == '[' && host[hlen - 1] == ']') {
                host[hlen - 1] = '\0';
                h++;
        }
        struct addrinfo hints = {0}, *res = NULL;
        hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
        hints.ai_socktype = SOCK_STREAM;
        int rc = getaddrinfo(*h ? h : NULL, colon + 1, &hints, &res);
        if (rc || !res) {
                kd_fail(KDELAY_ERR_CONFIG, errstr, errstr_size,
                        "forwarder.http_listen: %s", gai_strerror(rc));
                return -1;
        }
        memcpy(ss, res->ai_addr, res->ai_addrlen);
        freeaddrinfo(res);
        return 0;
}

kdelay_err_t kd_http_start(kd_http_t **hp, const char *listen, char *errstr,
                           size_t errstr_size)
{
        struct sockaddr_storage ss;
        if (parse_listen(listen, &ss, errstr, errstr_size))
                return KDELAY_ERR_CONFIG;
        kd_http_t *h = calloc(1, sizeof(*h));
        if (!h)
                return kd_fail(KDELAY_ERR_NO_MEMORY, errstr, errstr_size,
                               "out of memory");
        pthread_mutex_init(&h->lock, NULL);
        atomic_store(&h->alive_mono, kd_mono_ms());
        h->why = "starting";
        unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD;
        if (ss.ss_family == AF_INET6)
                flags |= MHD_USE_IPv6;
        h->daemon = MHD_start_daemon(
            flags, 0, NULL, NULL, handle, h, MHD_OPTION_SOCK_ADDR,
            (struct sockaddr *)&ss, MHD_OPTION_CONNECTION_LIMIT, 32u,
            MHD_OPTION_CONNECTION_TIMEOUT, 10u, MHD_OPTION_END);
        if (!h->daemon) {
                int e = errno;
                kd_http_stop(h);
                return kd_fail(KDELAY_ERR_SYSTEM, errstr, errstr_size,
                               "forwarder.http_listen: cannot listen on %s: "
                               "%s",
                               listen, e ? strerror(e) : "refused");
        }
        const union MHD_DaemonInfo *info =
            MHD_get_daemon_info(h->daemon, MHD_DAEMON_INFO_BIND_PORT);
        h->port = info ? info->port : 0;
        *hp = h;
        return KDELAY_OK;
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
        h->why = why ? why : "not ready";
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
