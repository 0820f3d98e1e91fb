/* SPDX-License-Identifier: Apache-2.0 */
/* forwarder.http_listen: where the forwarder's HTTP endpoint listens,
 * "host:port" or "[v6]:port" (docs/forwarder.md). Checked when the
 * property is set, so a bad value stops a binary at startup as a
 * configuration error. */
#ifndef KD_LISTEN_H
#define KD_LISTEN_H

#include <stddef.h>

#include <kdelay/error.h>

/* The longest host a listen address may name (a DNS name's limit). */
#define KD_LISTEN_HOST_MAX 253

typedef struct kd_listen {
        char host[KD_LISTEN_HOST_MAX + 1]; /* without the brackets */
        unsigned port;                     /* 0 = any free port */
        int v6;                            /* the host was "[...]" */
} kd_listen_t;

/* Parses text into *l: a host (a name, an IPv4 address or a bracketed
 * IPv6 address; never empty: "0.0.0.0" says every address), a colon and a
 * port of 0..65535 in decimal (0 = any free port). KDELAY_ERR_CONFIG with
 * the value quoted and what is wrong in errstr. */
kdelay_err_t kd_listen_parse(kd_listen_t *l, const char *text, char *errstr,
                             size_t errstr_size);

#endif
