/* SPDX-License-Identifier: Apache-2.0 */
/* Delay tiers: the sorted list of tier delays and the choice of a tier. */
#include "kd_tiers.h"

#include <stdio.h>
#include <string.h>

#include <kdelay/kdelay.h>

#include "kd_util.h"

kdelay_err_t kd_tiers_add(kd_tiers_t *tiers, const char *text, char *errstr,
                          size_t errstr_size)
{
        int64_t ms;
        if (kdelay_duration_parse(text, &ms) != KDELAY_OK)
                return kd_fail(KDELAY_ERR_INVALID_TIERS, errstr, errstr_size,
                               "tier \"%s\" is not a duration (e.g. 30s, 5m)",
                               text);
        if (ms <= 0 || ms > KDELAY_MAX_DELAY_MS)
                return kd_fail(KDELAY_ERR_INVALID_TIERS, errstr, errstr_size,
                               "tier \"%s\" must be above 0 and at most 10 "
                               "years",
                               text);
        if (tiers->cnt == KD_TIERS_MAX)
                return kd_fail(KDELAY_ERR_INVALID_TIERS, errstr, errstr_size,
                               "more than %d tiers", KD_TIERS_MAX);
        size_t at = 0;
        while (at < tiers->cnt && tiers->v[at].delay_ms < ms)
                at++;
        if (at < tiers->cnt && tiers->v[at].delay_ms == ms)
                return kd_fail(KDELAY_ERR_INVALID_TIERS, errstr, errstr_size,
                               "tier \"%s\" is listed twice", text);
        memmove(&tiers->v[at + 1], &tiers->v[at],
                (tiers->cnt - at) * sizeof(tiers->v[0]));
        tiers->v[at].delay_ms = ms;
        kdelay_duration_format(ms, tiers->v[at].name,
                               sizeof(tiers->v[at].name));
        tiers->cnt++;
        return KDELAY_OK;
}

kdelay_err_t kd_tiers_parse(kd_tiers_t *out, const char *list, char *errstr,
                            size_t errstr_size)
{
        kd_tiers_t t = {.cnt = 0};
        const char *p = list ? list : "";
        while (*p) {
                while (*p == ',' || *p == ' ')
                        p++;
                size_t n = strcspn(p, ", ");
                if (n == 0)
                        break;
                char item[64];
                if (n >= sizeof(item))
                        return kd_fail(KDELAY_ERR_INVALID_TIERS, errstr,
                                       errstr_size, "tier \"%.*s...\" too long",
                                       20, p);
                memcpy(item, p, n);
                item[n] = '\0';
                kdelay_err_t err = kd_tiers_add(&t, item, errstr, errstr_size);
                if (err)
                        return err;
                p += n;
        }
        if (t.cnt == 0)
                return kd_fail(KDELAY_ERR_INVALID_TIERS, errstr, errstr_size,
                               "the tier list is empty");
        *out = t;
        return KDELAY_OK;
}

size_t kd_tiers_choose(const kd_tiers_t *tiers, int64_t remaining_ms)
{
        size_t idx = 0;
        for (size_t i = 0; i < tiers->cnt; i++) {
                if (tiers->v[i].delay_ms <= remaining_ms)
                        idx = i;
                else
                        break;
        }
        return idx;
}

int kd_tiers_find(const kd_tiers_t *tiers, const char *name)
{
        for (size_t i = 0; i < tiers->cnt; i++)
                if (strcmp(tiers->v[i].name, name) == 0)
                        return (int)i;
        return -1;
}

void kd_tiers_topic(const kd_tiers_t *tiers, size_t idx, const char *prefix,
                    char *buf, size_t buf_size)
{
        snprintf(buf, buf_size, "%s.tier.%s", prefix, tiers->v[idx].name);
}

int kd_tiers_topic_delay(const char *prefix, const char *topic,
                         int64_t *delay_ms)
{
        size_t n = strlen(prefix);
        static const char mid[] = ".tier.";
        if (strncmp(topic, prefix, n) ||
            strncmp(topic + n, mid, sizeof(mid) - 1))
                return -1;
        const char *d = topic + n + sizeof(mid) - 1;
        int64_t ms;
        /* Digits first: the pattern's form ("30m", "1m30s"). */
        if (*d < '0' || *d > '9' ||
            kdelay_duration_parse(d, &ms) != KDELAY_OK || ms <= 0 ||
            ms > KDELAY_MAX_DELAY_MS)
                return -1;
        *delay_ms = ms;
        return 0;
}

int kd_tiers_pattern(const char *prefix, char *buf, size_t buf_size)
{
        /* A prefix is made of [a-zA-Z0-9._-]; only '.' needs escaping. */
        static const char tail[] = "\\.tier\\.[0-9][0-9a-z]*$";
        size_t off = 0;
        if (buf_size == 0)
                return -1;
        buf[off++] = '^';
        const char *c = prefix;
        for (; *c && off + 2 < buf_size; c++) {
                if (*c == '.')
                        buf[off++] = '\\';
                buf[off++] = *c;
        }
        if (*c || !prefix[0] || off + sizeof(tail) > buf_size) {
                buf[0] = '\0'; /* cut short */
                return -1;
        }
        memcpy(buf + off, tail, sizeof(tail));
        return 0;
}

void kd_tiers_format(const kd_tiers_t *tiers, char *buf, size_t buf_size)
{
        size_t off = 0;
        if (buf_size == 0)
                return;
        buf[0] = '\0';
        for (size_t i = 0; i < tiers->cnt && off < buf_size; i++) {
                int w = snprintf(buf + off, buf_size - off, "%s%s",
                                 i ? "," : "", tiers->v[i].name);
                if (w < 0)
                        return;
                off += (size_t)w;
        }
}
