/* SPDX-License-Identifier: Apache-2.0 */
/* forwarder.target_rate_limits: parse the list, match a target
 * (kd_ratelimits.h). */
#include "kd_ratelimits.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kd_log.h"
#include "kd_util.h"
#include "kd_wire.h"

#define KD_RATE_MAX 1000000.0

void kd_ratelimits_clear(kd_ratelimits_t *l)
{
        free(l->buf);
        free(l->v);
        memset(l, 0, sizeof(*l));
}

/* A whole number in 1 .. KD_RATE_MAX, the whole of s. */
static int number(const char *s, double *v)
{
        char *end;
        long n = *s >= '0' && *s <= '9' ? strtol(s, &end, 10) : 0;
        if (n < 1 || n > (long)KD_RATE_MAX || *end)
                return -1;
        *v = (double)n;
        return 0;
}

/* One entry "TARGET=RATE[/BURST]" (e, trimmed, NUL-ended, in l->buf). */
static int entry(kd_ratelimits_t *l, char *e)
{
        size_t all = strlen(e);
        while (all && (e[all - 1] == ' ' || e[all - 1] == '\t'))
                e[--all] = '\0';
        char *eq = strchr(e, '=');
        if (!eq)
                return -1;
        *eq = '\0';
        char *rate = eq + 1, *slash = strchr(rate, '/');
        size_t len = strlen(e);
        while (len && (e[len - 1] == ' ' || e[len - 1] == '\t'))
                e[--len] = '\0';
        while (*rate == ' ' || *rate == '\t')
                rate++;
        kd_ratelimit_t r = {.name = e, .as = e};
        r.prefix = len && e[len - 1] == '*';
        r.len = len - (size_t)r.prefix;
        if (slash)
                *slash = '\0';
        if (!len ||
            (r.prefix ? strspn(e, "abcdefghijklmnopqrstuvwxyz"
                                  "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                  "0123456789._-") != r.len
                      : !kd_wire_topic_valid(e, len)) ||
            number(rate, &r.rate) || (slash && number(slash + 1, &r.burst)))
                return -1;
        if (!slash)
                r.burst = r.rate / 10.0 < 1.0 ? 1.0 : r.rate / 10.0;
        for (size_t i = 0; i < l->cnt; i++)
                if (l->v[i].prefix == r.prefix && l->v[i].len == r.len &&
                    !memcmp(l->v[i].name, r.name, r.len))
                        return -2;
        l->v[l->cnt++] = r;
        return 0;
}

kdelay_err_t kd_ratelimits_parse(kd_ratelimits_t *l, const char *list,
                                 char *errstr, size_t errstr_size)
{
        memset(l, 0, sizeof(*l));
        if (!list || !*list)
                return KDELAY_OK;
        size_t n = 1;
        for (const char *c = list; *c; c++)
                n += *c == ',';
        if (n > KD_RATELIMITS_MAX)
                return kd_fail(KDELAY_ERR_CONFIG, errstr, errstr_size,
                               "forwarder.target_rate_limits: more than %d "
                               "entries",
                               KD_RATELIMITS_MAX);
        l->buf = strdup(list);
        l->v = calloc(n, sizeof(*l->v));
        if (!l->buf || !l->v) {
                kd_ratelimits_clear(l);
                return kd_fail(KDELAY_ERR_NO_MEMORY, errstr, errstr_size,
                               "forwarder.target_rate_limits: out of memory");
        }
        char *save = NULL;
        for (char *e = strtok_r(l->buf, ",", &save); e;
             e = strtok_r(NULL, ",", &save)) {
                while (*e == ' ' || *e == '\t')
                        e++;
                char q[300];
                kd_log_quote(e, q, sizeof(q)); /* before entry() cuts it */
                int rc = entry(l, e);
                if (rc) {
                        kd_ratelimits_clear(l);
                        return kd_fail(
                            KDELAY_ERR_CONFIG, errstr, errstr_size,
                            rc == -2 ? "forwarder.target_rate_limits: %s "
                                       "limits a target given before"
                                     : "forwarder.target_rate_limits: %s is "
                                       "not TARGET=RATE[/BURST] (TARGET a "
                                       "topic or `prefix*`, RATE and BURST "
                                       "whole numbers 1 .. 1000000)",
                            q);
                }
        }
        if (!l->cnt) {
                kd_ratelimits_clear(l);
                return kd_fail(KDELAY_ERR_CONFIG, errstr, errstr_size,
                               "forwarder.target_rate_limits: no entry");
        }
        return KDELAY_OK;
}

int kd_ratelimits_match(const kd_ratelimits_t *l, const char *topic, size_t len)
{
        int best = -1;
        for (size_t i = 0; i < l->cnt; i++) {
                const kd_ratelimit_t *r = &l->v[i];
                if (!r->prefix) {
                        if (len == r->len && !memcmp(topic, r->name, len))
                                return (int)i;
                } else if (len >= r->len && !memcmp(topic, r->name, r->len) &&
                           (best < 0 || r->len > l->v[best].len)) {
                        best = (int)i;
                }
        }
        return best;
}
