/* SPDX-License-Identifier: Apache-2.0 */
/* forwarder.http_listen values (kd_listen.h). */
#include "kd_listen.h"

#include <string.h>

#include "kd_util.h"

#define KD_LISTEN_WHAT "forwarder.http_listen"

static kdelay_err_t refuse(const char *text, const char *why, char *errstr,
                           size_t errstr_size)
{
        return kd_fail(KDELAY_ERR_CONFIG, errstr, errstr_size,
                       KD_LISTEN_WHAT ": \"%s\": %s", text, why);
}

/* port: 1 to 5 decimal digits, at most 65535. 0 when it is one. */
static int port_parse(const char *s, unsigned *port)
{
        size_t n = strspn(s, "0123456789");
        if (n == 0 || n > 5 || s[n])
                return -1;
        unsigned v = 0;
        for (size_t i = 0; i < n; i++)
                v = v * 10 + (unsigned)(s[i] - '0');
        if (v > 65535)
                return -1;
        *port = v;
        return 0;
}

/* The host part (hlen bytes at s) into l: "[v6]" or a name/IPv4 address
 * without a colon. 0 when it is one. */
static int host_parse(kd_listen_t *l, const char *s, size_t hlen)
{
        l->v6 = hlen >= 2 && s[0] == '[' && s[hlen - 1] == ']';
        if (l->v6) {
                s++;
                hlen -= 2;
        }
        if (hlen == 0 || hlen > KD_LISTEN_HOST_MAX || memchr(s, '[', hlen) ||
            memchr(s, ']', hlen) || (!l->v6 && memchr(s, ':', hlen)) ||
            (l->v6 && !memchr(s, ':', hlen)))
                return -1;
        for (size_t i = 0; i < hlen; i++)
                if ((unsigned char)s[i] <= ' ' || (unsigned char)s[i] >= 0x7f)
                        return -1;
        memcpy(l->host, s, hlen);
        l->host[hlen] = '\0';
        return 0;
}

kdelay_err_t kd_listen_parse(kd_listen_t *l, const char *text, char *errstr,
                             size_t errstr_size)
{
        memset(l, 0, sizeof(*l));
        const char *colon = strrchr(text, ':');
        if (!colon || (text[0] == '[' && colon[-1] != ']'))
                return refuse(text, "want host:port (no port)", errstr,
                              errstr_size);
        if (colon == text)
                return refuse(text,
                              "want host:port (no host: 0.0.0.0:PORT "
                              "listens on every address, 127.0.0.1:PORT on "
                              "this host only)",
                              errstr, errstr_size);
        if (port_parse(colon + 1, &l->port))
                return refuse(text,
                              "the port must be a number from 1 to 65535 "
                              "(or 0: any free port)",
                              errstr, errstr_size);
        if (host_parse(l, text, (size_t)(colon - text)))
                return refuse(text,
                              "the host is not a name, an IPv4 address or "
                              "an IPv6 address in brackets",
                              errstr, errstr_size);
        return KDELAY_OK;
}
