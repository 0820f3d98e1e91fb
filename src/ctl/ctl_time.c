/* Absolute times typed on kdelayctl's command line. */
#include "ctl_time.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

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
        struct tm tm = {0};
        int y, mo, d, h, mi, sec;
        if (len < 20 || digits(s, 4, &y) || s[4] != '-' ||
            digits(s + 5, 2, &mo) || s[7] != '-' || digits(s + 8, 2, &d) ||
            (s[10] != 'T' && s[10] != 't' && s[10] != ' ') ||
            digits(s + 11, 2, &h) || s[13] != ':' || digits(s + 14, 2, &mi) ||
            s[16] != ':' || digits(s + 17, 2, &sec))
                return -1;
        if (mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 ||
            sec > 60)
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
        tm.tm_year = y - 1900;
        tm.tm_mon = mo - 1;
        tm.tm_mday = d;
        tm.tm_hour = h;
        tm.tm_min = mi;
        tm.tm_sec = sec;
        time_t t = timegm(&tm);
        if (t == (time_t)-1 || tm.tm_mday != d)
                return -1;
        *msp = ((int64_t)t - (int64_t)offset_min * 60) * 1000 + ms;
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
