/* SPDX-License-Identifier: Apache-2.0 */
/* Absolute times typed on kdelayctl's command line. */
#include "ctl_time.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

/* Days from 1970-01-01 to y-m-d (proleptic Gregorian), without time_t:
 * timegm's error value -1 is also 1969-12-31T23:59:59. */
static int64_t days_from_civil(int64_t y, int m, int d)
{
        y -= m <= 2;
        int64_t era = (y >= 0 ? y : y - 399) / 400;
        int64_t yoe = y - era * 400;
        int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
        return era * 146097 + yoe * 365 + yoe / 4 - yoe / 100 + doy - 719468;
}

static int days_in_month(int y, int m)
{
        static const int days[] = {31, 28, 31, 30, 31, 30,
                                   31, 31, 30, 31, 30, 31};
        int leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
        return days[m - 1] + (m == 2 && leap);
}

static int digits(const char *s, int n, int *out)
{
        int v = 0;
        for (int i = 0; i < n; i++) {
                if (s[i] < '0' || s[i] > '9')
                        return -1;
                v = v * 10 + (s[i] - '0');
        }
        *out = v;
        return 0;
}

int kd_ctl_time_parse(const char *s, int64_t *msp)
{
        size_t len = strlen(s);
        if (len > 0 && strspn(s, "0123456789") == len) {
                if (len > 15)
                        return -1;
                long long v = 0;
                sscanf(s, "%lld", &v);
                /* 1e11 ms is 1973: a smaller number is almost surely
                 * seconds (date +%s), which would fire at once. */
                if (v < 100000000000LL)
                        return -1;
                *msp = v;
                return 0;
        }
        /* YYYY-MM-DDTHH:MM:SS[.fff]Z|(+|-)HH:MM */
        int y, mo, d, h, mi, sec;
        if (len < 20 || digits(s, 4, &y) || s[4] != '-' ||
            digits(s + 5, 2, &mo) || s[7] != '-' || digits(s + 8, 2, &d) ||
            (s[10] != 'T' && s[10] != 't' && s[10] != ' ') ||
            digits(s + 11, 2, &h) || s[13] != ':' || digits(s + 14, 2, &mi) ||
            s[16] != ':' || digits(s + 17, 2, &sec))
                return -1;
        /* A leap second (60) may not carry into the next day. */
        if (mo < 1 || mo > 12 || d < 1 || d > days_in_month(y, mo) || h > 23 ||
            mi > 59 || sec > 60 || (sec == 60 && h == 23 && mi == 59))
                return -1;
        const char *p = s + 19;
        int ms = 0;
        if (*p == '.') {
                int scale = 100;
                p++;
                if (*p < '0' || *p > '9')
                        return -1;
                for (; *p >= '0' && *p <= '9'; p++) {
                        ms += (*p - '0') * scale;
                        scale /= 10;
                }
        }
        int offset_min = 0;
        if (*p == 'Z' || *p == 'z') {
                p++;
        } else if (*p == '+' || *p == '-') {
                int oh, om;
                if (digits(p + 1, 2, &oh) || p[3] != ':' ||
                    digits(p + 4, 2, &om) || oh > 23 || om > 59)
                        return -1;
                offset_min = (oh * 60 + om) * (*p == '-' ? -1 : 1);
                p += 6;
        } else {
                return -1;
        }
        if (*p)
                return -1;
        int64_t t =
            days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + sec;
        *msp = (t - (int64_t)offset_min * 60) * 1000 + ms;
        return 0;
}

char *kd_ctl_time_format(int64_t ms, char *buf, size_t size)
{
        time_t t = (time_t)(ms / 1000);
        struct tm tm;
        char base[32];
        gmtime_r(&t, &tm);
        strftime(base, sizeof(base), "%Y-%m-%dT%H:%M:%S", &tm);
        snprintf(buf, size, "%s.%03dZ", base, (int)(ms % 1000));
        return buf;
}
