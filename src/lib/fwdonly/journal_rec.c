/* SPDX-License-Identifier: Apache-2.0 */
/* Journal record values (kd_journal_rec.h). */
#include "kd_journal_rec.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kd_util.h"

/* 1 when s can stand in a field: non-empty, no space, '=' or control. */
static int plain(const char *s)
{
        if (!*s)
                return 0;
        for (; *s; s++)
                if ((unsigned char)*s <= ' ' || *s == '=' || *s == 0x7f)
                        return 0;
        return 1;
}

int kd_journal_rec_format(const kd_journal_rec_t *r, char *buf, size_t size)
{
        if (!plain(r->src_topic) || !plain(r->forwarder) ||
            (r->dead[0] && !plain(r->dead)) || (r->intent && r->dead[0]))
                return -1;
        int n = snprintf(buf, size,
                         "v=%d fire_at=%" PRId64 " fired_at=%" PRId64
                         " topic=%s partition=%" PRId32 " offset=%" PRId64
                         " forwarder=%s%s%s%s",
                         r->intent ? 2 : 1, r->fire_at_ms, r->fired_at_ms,
                         r->src_topic, r->src_partition, r->src_offset,
                         r->forwarder, r->dead[0] ? " dead=" : "", r->dead,
                         r->intent ? " intent=1" : "");
        return n < 0 || (size_t)n >= size ? -1 : n;
}

/* A decimal integer, the whole of [s, s + len). */
static int num(const char *s, size_t len, int64_t *v)
{
        char tmp[24];
        if (len == 0 || len >= sizeof(tmp))
                return -1;
        memcpy(tmp, s, len);
        tmp[len] = '\0';
        char *end;
        long long x = strtoll(tmp, &end, 10);
        if (*end || (tmp[0] != '-' && (tmp[0] < '0' || tmp[0] > '9')))
                return -1;
        *v = x;
        return 0;
}

static int str(const char *s, size_t len, char *out, size_t size)
{
        if (len == 0 || len >= size)
                return -1;
        memcpy(out, s, len);
        out[len] = '\0';
        return 0;
}

int kd_journal_rec_parse(const char *value, size_t len, kd_journal_rec_t *r)
{
        memset(r, 0, sizeof(*r));
        unsigned seen = 0;
        int64_t v = 0, part = -1, intent = 0;
        const char *p = value, *end = value + len;
        while (p < end) {
                const char *f = p;
                while (p < end && *p != ' ')
                        p++;
                const char *eq = memchr(f, '=', (size_t)(p - f));
                if (!eq)
                        return -1;
                size_t nl = (size_t)(eq - f), vl = (size_t)(p - eq - 1);
                const char *val = eq + 1;
                int rc = 0;
#define FIELD(name) (nl == sizeof(name) - 1 && !memcmp(f, name, nl))
                if (FIELD("v"))
                        rc = num(val, vl, &v), seen |= 1;
                else if (FIELD("fire_at"))
                        rc = num(val, vl, &r->fire_at_ms), seen |= 2;
                else if (FIELD("fired_at"))
                        rc = num(val, vl, &r->fired_at_ms), seen |= 4;
                else if (FIELD("topic"))
                        rc = str(val, vl, r->src_topic, sizeof(r->src_topic)),
                        seen |= 8;
                else if (FIELD("partition"))
                        rc = num(val, vl, &part), seen |= 16;
                else if (FIELD("offset"))
                        rc = num(val, vl, &r->src_offset), seen |= 32;
                else if (FIELD("forwarder"))
                        rc = str(val, vl, r->forwarder, sizeof(r->forwarder)),
                        seen |= 64;
                else if (FIELD("dead"))
                        rc = str(val, vl, r->dead, sizeof(r->dead));
                else if (FIELD("intent"))
                        rc = num(val, vl, &intent);
#undef FIELD
                if (rc)
                        return -1;
                while (p < end && *p == ' ')
                        p++;
        }
        if (seen != 127 || part < 0 || part > INT32_MAX)
                return -1;
        /* Version 2 is a record of intent, and only that. */
        if (!(v == 1 && intent == 0) && !(v == 2 && intent == 1 && !r->dead[0]))
                return -1;
        r->intent = (int)intent;
        /* A dead-letter reason as the fate table takes one: [a-z0-9-]. */
        if (strspn(r->dead, "abcdefghijklmnopqrstuvwxyz0123456789-") !=
            strlen(r->dead))
                return -1;
        r->src_partition = (int32_t)part;
        return 0;
}
