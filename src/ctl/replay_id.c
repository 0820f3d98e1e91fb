/* SPDX-License-Identifier: Apache-2.0 */
/* The id of a replayed task (replay_id.h). */
#include "replay_id.h"

#include <stdio.h>
#include <string.h>

#include <kdelay/kdelay.h>

#define KD_REPLAY_SUFFIX "~replay-"

/* The length of the decimal digits that end s[0..n) (none: 0). */
static size_t digits_before(const char *s, size_t n)
{
        size_t d = 0;
        while (d < n && s[n - 1 - d] >= '0' && s[n - 1 - d] <= '9')
                d++;
        return d;
}

size_t kd_replay_stem_len(const char *id)
{
        size_t n = strlen(id), sl = strlen(KD_REPLAY_SUFFIX);
        size_t d = digits_before(id, n); /* the offset */
        if (!d || d == n || id[n - d - 1] != '-')
                return n;
        size_t m = n - d - 1;
        size_t p = digits_before(id, m); /* the partition */
        if (!p || p + sl > m || memcmp(id + m - p - sl, KD_REPLAY_SUFFIX, sl))
                return n;
        return m - p - sl;
}

/* id[0..n) followed by "~replay-P-O", or the hash form when too long. */
static void replay_id(const char *id, size_t n, int32_t partition,
                      int64_t offset, char *buf, size_t size)
{
        char tail[64];
        snprintf(tail, sizeof(tail), KD_REPLAY_SUFFIX "%d-%lld", (int)partition,
                 (long long)offset);
        size_t t = strlen(tail);
        if (n + t <= KDELAY_ID_MAX && n + t < size) {
                memcpy(buf, id, n);
                memcpy(buf + n, tail, t + 1);
                return;
        }
        uint64_t h = 1469598103934665603ULL; /* FNV-1a of the id */
        for (size_t i = 0; i < n; i++)
                h = (h ^ (unsigned char)id[i]) * 1099511628211ULL;
        snprintf(buf, size, "replay-%016llx%s", (unsigned long long)h, tail);
}

void kd_replay_id(const char *id, int32_t partition, int64_t offset, char *buf,
                  size_t size)
{
        replay_id(id, kd_replay_stem_len(id), partition, offset, buf, size);
}

void kd_replay_id_nested(const char *id, int32_t partition, int64_t offset,
                         char *buf, size_t size)
{
        replay_id(id, strlen(id), partition, offset, buf, size);
}
