/* SPDX-License-Identifier: Apache-2.0 */
/* Reading the done set exactly_once commits as offset metadata
 * (kd_doneset.h): any text, from whoever committed it. */
#include "kd_doneset.h"

#include <stdlib.h>
#include <string.h>

const char kd_doneset_b64[65] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/* Reads a base-36 number at *p (at least one digit); -1 on none/overflow. */
static int get36(const char **p, const char *end, int64_t *out)
{
        uint64_t v = 0;
        const char *s = *p;
        while (s < end) {
                int d;
                if (*s >= '0' && *s <= '9')
                        d = *s - '0';
                else if (*s >= 'a' && *s <= 'z')
                        d = *s - 'a' + 10;
                else
                        break;
                if (v > (uint64_t)(INT64_MAX - d) / 36)
                        return -1;
                v = v * 36 + (uint64_t)d;
                s++;
        }
        if (s == *p)
                return -1;
        *p = s;
        *out = (int64_t)v;
        return 0;
}

/* Appends [first, last] to *v (n used, cap allocated); -1 out of memory. */
static int range_push(kd_offrange_t **v, size_t *n, size_t *cap, int64_t first,
                      int64_t last)
{
        if (*n == *cap) {
                size_t c = *cap ? *cap * 2 : 16;
                kd_offrange_t *w = realloc(*v, c * sizeof(**v));
                if (!w)
                        return -1;
                *v = w;
                *cap = c;
        }
        (*v)[*n].first = first;
        (*v)[(*n)++].last = last;
        return 0;
}

static int decode_bitmap(const char *bits, size_t len, int64_t commit,
                         kd_offrange_t **ranges, size_t *cnt)
{
        kd_offrange_t *v = NULL;
        size_t n = 0, cap = 0;
        /* Offsets above commit there are room for; bits past the last
         * one (in the last character) must be 0. */
        const uint64_t room = (uint64_t)(INT64_MAX - commit);
        if (len > room / 6 + 1)
                return -1;
        for (size_t k = 0; k < len; k++) {
                const char *d = memchr(kd_doneset_b64, bits[k], 64);
                if (!bits[k] || !d)
                        goto bad;
                int x = (int)(d - kd_doneset_b64);
                for (int j = 0; j < 6; j++) {
                        if (!(x & (1 << j)))
                                continue;
                        uint64_t idx = (uint64_t)k * 6 + (uint64_t)j + 1;
                        if (idx > room)
                                goto bad;
                        int64_t o = commit + (int64_t)idx;
                        if (n > 0 && v[n - 1].last == o - 1)
                                v[n - 1].last = o;
                        else if (range_push(&v, &n, &cap, o, o))
                                goto bad;
                }
        }
        *ranges = v;
        *cnt = n;
        return 0;
bad:
        free(v);
        return -1;
}

int kd_doneset_decode(const char *text, size_t len, int64_t commit,
                      kd_offrange_t **ranges, size_t *cnt)
{
        *ranges = NULL;
        *cnt = 0;
        if (!text || len == 0)
                return 0;
        if (commit < 0)
                return -1; /* no commit point: no done set can follow it */
        if (len >= 4 && !memcmp(text, "kdb;", 4))
                return decode_bitmap(text + 4, len - 4, commit, ranges, cnt);
        if (len < 3 || memcmp(text, "kd1", 3))
                return -1;
        const char *p = text + 3, *end = text + len;
        kd_offrange_t *v = NULL;
        size_t n = 0, cap = 0;
        int64_t prev = commit;
        while (p < end) {
                int64_t gap, span;
                if (*p++ != ';' || get36(&p, end, &gap) || p >= end ||
                    *p++ != '.' || get36(&p, end, &span) || gap < 1 ||
                    gap > INT64_MAX - prev || span > INT64_MAX - prev - gap)
                        goto bad;
                if (range_push(&v, &n, &cap, prev + gap, prev + gap + span))
                        goto bad;
                prev = prev + gap + span;
        }
        *ranges = v;
        *cnt = n;
        return 0;
bad:
        free(v);
        return -1;
}
