/* Small helpers shared by every libkdelay module. */
#define _POSIX_C_SOURCE 200809L
#include "kd_util.h"

#include <limits.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

kdelay_err_t kd_fail(kdelay_err_t err, char *errstr, size_t errstr_size,
                     const char *fmt, ...)
{
        if (errstr && errstr_size > 0) {
                va_list ap;
                va_start(ap, fmt);
                vsnprintf(errstr, errstr_size, fmt, ap);
                va_end(ap);
        }
        return err;
}

static int64_t clock_ms(clockid_t id)
{
        struct timespec ts;
        clock_gettime(id, &ts);
        return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Added to the wall clock (kd_clock_offset_set); atomic because library
 * threads read it too. */
static _Atomic int64_t kd_clock_offset_ms;

void kd_clock_offset_set(int64_t ms)
{
        kd_clock_offset_ms = ms;
}

int64_t kd_now_ms(void)
{
        return clock_ms(CLOCK_REALTIME) + kd_clock_offset_ms;
}

int64_t kd_mono_ms(void)
{
        return clock_ms(CLOCK_MONOTONIC);
}

void *kd_memdup(const void *p, size_t n)
{
        if (!p)
                return NULL;
        void *d = malloc(n ? n : 1);
        if (d && n)
                memcpy(d, p, n);
        return d;
}

void kd_strlcpy(char *dst, const char *src, size_t dst_size)
{
        if (dst_size == 0)
                return;
        size_t n = strlen(src);
        if (n >= dst_size)
                n = dst_size - 1;
        memcpy(dst, src, n);
        dst[n] = '\0';
}

int kd_parse_i64(const char *s, size_t len, int64_t *out)
{
        int64_t v = 0;
        if (len == 0 || len > 19)
                return -1;
        for (size_t i = 0; i < len; i++) {
                if (s[i] < '0' || s[i] > '9')
                        return -1;
                int d = s[i] - '0';
                if (v > (INT64_MAX - d) / 10)
                        return -1;
                v = v * 10 + d;
        }
        *out = v;
        return 0;
}
