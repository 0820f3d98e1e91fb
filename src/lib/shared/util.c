/* SPDX-License-Identifier: Apache-2.0 */
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

void kd_sleep_ms(int64_t ms)
{
        if (ms <= 0)
                return;
        struct timespec ts = {(time_t)(ms / 1000),
                              (long)(ms % 1000) * 1000000L};
        while (nanosleep(&ts, &ts))
                ;
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

size_t kd_utf8_seq(const unsigned char *s, size_t n, uint32_t *cp)
{
        unsigned char lo = 0x80, hi = 0xBF;
        size_t len;
        uint32_t v;
        if (s[0] < 0x80) {
                *cp = s[0];
                return 1;
        } else if (s[0] >= 0xC2 && s[0] <= 0xDF) {
                len = 2, v = s[0] & 0x1F;
        } else if (s[0] >= 0xE0 && s[0] <= 0xEF) {
                len = 3, v = s[0] & 0x0F;
                lo = s[0] == 0xE0 ? 0xA0 : lo;
                hi = s[0] == 0xED ? 0x9F : hi; /* no surrogates */
        } else if (s[0] >= 0xF0 && s[0] <= 0xF4) {
                len = 4, v = s[0] & 0x07;
                lo = s[0] == 0xF0 ? 0x90 : lo;
                hi = s[0] == 0xF4 ? 0x8F : hi; /* <= U+10FFFF */
        } else {
                return 0;
        }
        for (size_t i = 1; i < len; i++) {
                /* Checked one by one, so a NUL stops the reading. */
                if (i >= n || s[i] < (i == 1 ? lo : 0x80) ||
                    s[i] > (i == 1 ? hi : 0xBF))
                        return 0;
                v = v << 6 | (s[i] & 0x3F);
        }
        *cp = v;
        return len;
}
