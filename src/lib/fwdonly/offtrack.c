/* SPDX-License-Identifier: Apache-2.0 */
/* Per-partition offset tracker: the lowest offset not yet fully handled,
 * and the done set above it written as offset metadata (kd_doneset.h
 * says its two forms; kd_doneset_decode reads them back). */
#include "kd_offtrack.h"

#include <stdlib.h>
#include <string.h>

void kd_offtrack_init(kd_offtrack_t *t)
{
        memset(t, 0, sizeof(*t));
        t->next = -1;
}

void kd_offtrack_clear(kd_offtrack_t *t)
{
        free(t->off);
        free(t->done);
        kd_offtrack_init(t);
}

/* Drops done records from the front. */
static void advance(kd_offtrack_t *t)
{
        while (t->len > 0 && t->done[t->head]) {
                t->head = (t->head + 1) % t->cap;
                t->len--;
        }
}

static int grow(kd_offtrack_t *t)
{
        size_t cap = t->cap ? t->cap * 2 : 64;
        int64_t *off = malloc(cap * sizeof(*off));
        unsigned char *done = malloc(cap);
        if (!off || !done) {
                free(off);
                free(done);
                return -1;
        }
        for (size_t i = 0; i < t->len; i++) {
                off[i] = t->off[(t->head + i) % t->cap];
                done[i] = t->done[(t->head + i) % t->cap];
        }
        free(t->off);
        free(t->done);
        t->off = off;
        t->done = done;
        t->head = 0;
        t->cap = cap;
        return 0;
}

int kd_offtrack_add(kd_offtrack_t *t, int64_t offset)
{
        if (offset < 0 || (t->next >= 0 && offset < t->next))
                return -1;
        if (t->len == t->cap && grow(t))
                return -1;
        size_t i = (t->head + t->len) % t->cap;
        t->off[i] = offset;
        t->done[i] = 0;
        t->len++;
        t->next = offset + 1;
        return 0;
}

int kd_offtrack_done(kd_offtrack_t *t, int64_t offset)
{
        /* Offsets in the ring are increasing: binary search. */
        size_t lo = 0, hi = t->len;
        while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;
                int64_t o = t->off[(t->head + mid) % t->cap];
                if (o < offset)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        if (lo == t->len || t->off[(t->head + lo) % t->cap] != offset)
                return -1;
        if (t->done[(t->head + lo) % t->cap])
                return 0;
        t->done[(t->head + lo) % t->cap] = 1;
        advance(t);
        return 0;
}

int64_t kd_offtrack_commit_point(const kd_offtrack_t *t)
{
        if (t->len > 0)
                return t->off[t->head];
        return t->next;
}

size_t kd_offtrack_pending(const kd_offtrack_t *t)
{
        size_t n = 0;
        for (size_t i = 0; i < t->len; i++)
                n += !t->done[(t->head + i) % t->cap];
        return n;
}

/* Appends v in base 36 at *pos; -1 when it does not fit. */
static int put36(char *buf, size_t size, size_t *pos, uint64_t v)
{
        char tmp[16];
        size_t n = 0;
        do {
                tmp[n++] = "0123456789abcdefghijklmnopqrstuvwxyz"[v % 36];
                v /= 36;
        } while (v);
        if (*pos + n + 1 > size)
                return -1;
        while (n)
                buf[(*pos)++] = tmp[--n];
        buf[*pos] = '\0';
        return 0;
}

static int putc1(char *buf, size_t size, size_t *pos, char c)
{
        if (*pos + 2 > size)
                return -1;
        buf[(*pos)++] = c;
        buf[*pos] = '\0';
        return 0;
}

/* Appends the run [first, last] after prev. */
static int put_run(char *buf, size_t size, size_t *pos, int64_t prev,
                   int64_t first, int64_t last)
{
        return putc1(buf, size, pos, ';') ||
                       put36(buf, size, pos, (uint64_t)(first - prev)) ||
                       putc1(buf, size, pos, '.') ||
                       put36(buf, size, pos, (uint64_t)(last - first))
                   ? -1
                   : 0;
}

int64_t kd_offtrack_commit_after(const kd_offtrack_t *t, int64_t fallback,
                                 const kd_offrange_t **tail, size_t *tail_cnt)
{
        int64_t cp = kd_offtrack_commit_point(t);
        if (cp < 0)
                cp = fallback;
        if (cp < 0)
                return -1;
        /* Only when everything read is done can a tail range start at (or
         * before) the commit point. */
        while (*tail_cnt > 0 && (*tail)->first <= cp) {
                if ((*tail)->last >= cp)
                        cp = (*tail)->last + 1;
                (*tail)++;
                (*tail_cnt)--;
        }
        return cp;
}

/* The runs form ("kd1"); -1 when it does not fit. */
static int encode_runs(const kd_offtrack_t *t, int64_t commit,
                       const kd_offrange_t *tail, size_t tail_cnt, char *buf,
                       size_t size)
{
        size_t pos = 3;
        memcpy(buf, "kd1", 4);
        int64_t prev = commit; /* end of the last run */
        for (size_t i = 0; i < t->len; i++) {
                if (!t->done[(t->head + i) % t->cap])
                        continue;
                int64_t first = t->off[(t->head + i) % t->cap];
                while (i + 1 < t->len && t->done[(t->head + i + 1) % t->cap])
                        i++;
                int64_t last = t->off[(t->head + i) % t->cap];
                if (put_run(buf, size, &pos, prev, first, last))
                        return -1;
                prev = last;
        }
        for (size_t i = 0; i < tail_cnt; i++) {
                int64_t first = tail[i].first > prev ? tail[i].first : prev + 1;
                if (tail[i].last < first)
                        continue;
                if (put_run(buf, size, &pos, prev, first, tail[i].last))
                        return -1;
                prev = tail[i].last;
        }
        return 0;
}

/* Sets bit (offset - commit - 1) of the bitmap text after "kdb;". */
static void set_bit(char *bits, int64_t commit, int64_t offset)
{
        int64_t i = offset - commit - 1;
        bits[i / 6] |= (char)(1 << (i % 6));
}

/* The bitmap form ("kdb;"); -1 when it does not fit. */
static int encode_bitmap(const kd_offtrack_t *t, int64_t commit,
                         const kd_offrange_t *tail, size_t tail_cnt, char *buf,
                         size_t size)
{
        int64_t last = commit; /* the last done offset */
        for (size_t i = 0; i < t->len; i++)
                if (t->done[(t->head + i) % t->cap] &&
                    t->off[(t->head + i) % t->cap] > last)
                        last = t->off[(t->head + i) % t->cap];
        if (tail_cnt > 0 && tail[tail_cnt - 1].last > last)
                last = tail[tail_cnt - 1].last;
        /* Unsigned: a tail range may end at INT64_MAX (decoded from
         * metadata someone else committed). */
        uint64_t chars = ((uint64_t)last - (uint64_t)commit + 5) / 6;
        if (chars + 5 > size)
                return -1;
        memcpy(buf, "kdb;", 4);
        char *bits = buf + 4;
        memset(bits, 0, (size_t)chars);
        for (size_t i = 0; i < t->len; i++)
                if (t->done[(t->head + i) % t->cap] &&
                    t->off[(t->head + i) % t->cap] > commit)
                        set_bit(bits, commit, t->off[(t->head + i) % t->cap]);
        for (size_t i = 0; i < tail_cnt; i++) {
                if (tail[i].last <= commit)
                        continue;
                /* Stops at last without stepping past it (INT64_MAX). */
                int64_t o = tail[i].first > commit ? tail[i].first : commit + 1;
                for (;; o++) {
                        set_bit(bits, commit, o);
                        if (o == tail[i].last)
                                break;
                }
        }
        for (uint64_t i = 0; i < chars; i++)
                bits[i] = kd_doneset_b64[(unsigned char)bits[i]];
        bits[chars] = '\0';
        return 0;
}

int kd_offtrack_encode(const kd_offtrack_t *t, int64_t commit,
                       const kd_offrange_t *tail, size_t tail_cnt, char *buf,
                       size_t size)
{
        if (size < 5 || commit < 0)
                return -1;
        char *runs = malloc(size);
        if (!runs)
                return -1;
        int r = encode_runs(t, commit, tail, tail_cnt, runs, size);
        int b = encode_bitmap(t, commit, tail, tail_cnt, buf, size);
        if (r == 0 && (b != 0 || strlen(runs) <= strlen(buf)))
                memcpy(buf, runs, strlen(runs) + 1);
        free(runs);
        return r == 0 || b == 0 ? 0 : -1;
}
