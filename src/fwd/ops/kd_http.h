/* SPDX-License-Identifier: Apache-2.0 */
/* The forwarder's HTTP endpoint (forwarder.http_listen), served by
 * libmicrohttpd on a thread of its own: /metrics (the Prometheus text
 * format), /healthz and /readyz. The event loop owns every metric; it
 * publishes a rendered copy and its liveness and readiness here, and the
 * HTTP thread only serves what was published (under the endpoint's lock),
 * so no request ever reads the loop's state. */
#ifndef KD_HTTP_H
#define KD_HTTP_H

#include <stddef.h>
#include <stdint.h>

#include "kd_listen.h"

#include <kdelay/kdelay.h>

/* /healthz answers 503 once the loop has not turned for this long (a
 * transactional call blocks it for at most 10 s). */
#define KD_HTTP_STUCK_MS 30000

/* What a client can hold, so that none can starve the probes (docs/
 * security.md): connections per client address and in all; of those, the
 * last KD_HTTP_LOCAL_RESERVE only for the loopback address (127.0.0.1,
 * ::1), where the probes of a pod or a container come from; a connection
 * that sends nothing for KD_HTTP_IDLE_TIMEOUT_S seconds is closed. A
 * request comes in one packet or a few at once, so a client trickling
 * slower than that loses its connection, and one trickling faster holds
 * at most its own KD_HTTP_MAX_PER_CLIENT. */
#define KD_HTTP_MAX_CONNECTIONS 64
#define KD_HTTP_MAX_PER_CLIENT  8
#define KD_HTTP_LOCAL_RESERVE   KD_HTTP_MAX_PER_CLIENT
#define KD_HTTP_IDLE_TIMEOUT_S  3

/* The longest readiness reason kept (a longer one is cut). */
#define KD_HTTP_WHY_MAX 512

typedef struct kd_http kd_http_t;
typedef struct kd_clocksrc kd_clocksrc_t;

/* Listens on at (forwarder.http_listen as kd_listen_parse made it when the
 * property was set, written as listen: "host:port", "[v6]:port"; port 0 =
 * any free one): KDELAY_ERR_CONFIG when its host name does not resolve,
 * KDELAY_ERR_SYSTEM when it cannot listen there (errno
 * says why: EADDRINUSE when another process has the port). *hp owned by
 * the caller (kd_http_stop). clock (borrowed, outliving *hp): the
 * forwarder's, that /healthz measures the loop's last turn with, from the
 * server's thread. */
kdelay_err_t kd_http_start(kd_http_t **hp, const kd_listen_t *at,
                           const char *listen, const kd_clocksrc_t *clock,
                           char *errstr, size_t errstr_size);
/* The port listened on. */
unsigned kd_http_port(const kd_http_t *h);
/* Connections refused so far to keep the loopback reserve. */
uint64_t kd_http_refused(kd_http_t *h);
/* The /metrics body from now on: text (len bytes) is copied. -1 out of
 * memory (the previous body stays). */
int kd_http_publish(kd_http_t *h, const char *text, size_t len);
/* The loop turned at mono_ms (on the clock given to kd_http_start). */
void kd_http_alive(kd_http_t *h, int64_t mono_ms);
/* Ready or not, and why not (copied, for the 503 body); when ready, why
 * may be a note for the 200 body ("ready; <note>"), NULL or "" = none. */
void kd_http_ready(kd_http_t *h, int ready, const char *why);
/* Stops serving and frees h (NULL is fine). */
void kd_http_stop(kd_http_t *h);

#endif
