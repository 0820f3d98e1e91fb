/* SPDX-License-Identifier: Apache-2.0 */
/* Durations as people type them: "250ms", "30s", "5m", "2h", "7d",
 * combined largest unit first ("1h30m"). */
#include <kdelay/kdelay.h>

#include <stdio.h>
#include <string.h>

#include "kd_util.h"

static const struct {
        const char *suffix;
        int64_t ms;
} kd_units[] = {
    /* Order: largest first, which is also the order a combined duration
     * must follow. "ms" precedes "m" when matching, see unit_at(). */
    {"d", 86400000LL}, {"h", 3600000LL}, {"m", 60000LL},
    {"s", 1000LL},     {"ms", 1LL},
};

/* Index of the unit at s (longest match), or -1. */
static int unit_at(const char *s, size_t *lenp)
{
        if (s[0] == 'm' && s[1] == 's') {
                *lenp = 2;
                return 4;
        }
        for (int i = 0; i < 4; i++) {
                if (s[0] == kd_units[i].suffix[0]) {
                        *lenp = 1;
                        return i;
                }
        }
        return -1;
}

kdelay_err_t kdelay_duration_parse(const char *text, int64_t *msp)
{
        if (!text || !msp || !*text)
                return KDELAY_ERR_INVALID_DURATION;
        const char *p = text;
        int64_t total = 0;
        int last_unit = -1;
        while (*p) {
                const char *digits = p;
                /* Leading zeros do not count against the 19 digits
                 * kd_parse_i64 takes (one stays: "0s" is a number). */
                while (digits[0] == '0' && digits[1] >= '0' && digits[1] <= '9')
                        digits++;
                p = digits;
                while (*p >= '0' && *p <= '9')
                        p++;
                int64_t n;
                if (kd_parse_i64(digits, (size_t)(p - digits), &n) != 0)
                        return KDELAY_ERR_INVALID_DURATION;
                size_t ulen;
                int u = unit_at(p, &ulen);
                if (u < 0 || u <= last_unit)
                        return KDELAY_ERR_INVALID_DURATION;
                if (n > (INT64_MAX - total) / kd_units[u].ms)
                        return KDELAY_ERR_INVALID_DURATION;
                total += n * kd_units[u].ms;
                last_unit = u;
                p += ulen;
        }
        *msp = total;
        return KDELAY_OK;
}

char *kdelay_duration_format(int64_t ms, char *buf, size_t buf_size)
{
        if (!buf || buf_size == 0)
                return buf;
        if (ms == 0) {
                snprintf(buf, buf_size, "0s");
                return buf;
        }
        if (ms < 0) {
                if (buf_size < 2) {
                        buf[0] = '\0';
                        return buf;
                }
                buf[0] = '-';
                kdelay_duration_format(ms == INT64_MIN ? INT64_MAX : -ms,
                                       buf + 1, buf_size - 1);
                return buf;
        }
        size_t off = 0;
        buf[0] = '\0';
        for (size_t i = 0; i < KD_ARRAY_LEN(kd_units) && ms > 0; i++) {
                int64_t n = ms / kd_units[i].ms;
                if (n == 0)
                        continue;
                ms -= n * kd_units[i].ms;
                int w = snprintf(buf + off, buf_size - off, "%lld%s",
                                 (long long)n, kd_units[i].suffix);
                if (w < 0 || (size_t)w >= buf_size - off)
                        break;
                off += (size_t)w;
        }
        return buf;
}
