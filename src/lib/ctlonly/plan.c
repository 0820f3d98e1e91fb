/* SPDX-License-Identifier: Apache-2.0 */
/* Tier plans (kd_plan.h). */
#include "kd_plan.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <kdelay/kdelay.h>

#include "kd_util.h"

static kdelay_err_t delay_parse(const char *text, int64_t *ms)
{
        size_t n = strlen(text);
        if (n && strspn(text, "0123456789") == n)
                return kd_parse_i64(text, n, ms) ? KDELAY_ERR_INVALID_DURATION
                                                 : KDELAY_OK;
        return kdelay_duration_parse(text, ms);
}

static kdelay_err_t range_parse(kd_dist_t *d, const char *spec,
                                const char *range, char *errstr, size_t size)
{
        char lo[64], hi[64];
        const char *colon = strchr(range, ':');
        size_t n = colon ? (size_t)(colon - range) : 0;
        if (!colon || n >= sizeof(lo) || strlen(colon + 1) >= sizeof(hi))
                return kd_fail(KDELAY_ERR_INVALID_ARG, errstr, size,
                               "distribution \"%s\" needs MIN:MAX, e.g. "
                               "loguniform:1s:7d",
                               spec);
        memcpy(lo, range, n);
        lo[n] = '\0';
        kd_strlcpy(hi, colon + 1, sizeof(hi));
        if (delay_parse(lo, &d->lo_ms) || delay_parse(hi, &d->hi_ms) ||
            d->lo_ms <= 0 || d->hi_ms < d->lo_ms ||
            d->hi_ms > KDELAY_MAX_DELAY_MS)
                return kd_fail(KDELAY_ERR_INVALID_ARG, errstr, size,
                               "distribution \"%s\": MIN and MAX must be "
                               "durations with 0 < MIN <= MAX <= 10 years",
                               spec);
        return KDELAY_OK;
}

static kdelay_err_t list_push(kd_dist_t *d, size_t *cap, int64_t ms)
{
        if (d->cnt == *cap) {
                size_t ncap = *cap ? *cap * 2 : 1024;
                int64_t *nv = realloc(d->delays, ncap * sizeof(*nv));
                if (!nv)
                        return KDELAY_ERR_NO_MEMORY;
                d->delays = nv;
                *cap = ncap;
        }
        d->delays[d->cnt++] = ms;
        return KDELAY_OK;
}

static kdelay_err_t file_parse(kd_dist_t *d, const char *path, char *errstr,
                               size_t size)
{
        FILE *fp = fopen(path, "r");
        if (!fp)
                return kd_fail(KDELAY_ERR_INVALID_ARG, errstr, size,
                               "cannot read \"%s\": %s", path, strerror(errno));
        char line[256];
        size_t cap = 0, lineno = 0;
        kdelay_err_t err = KDELAY_OK;
        while (!err && fgets(line, sizeof(line), fp)) {
                lineno++;
                line[strcspn(line, "#\r\n")] = '\0';
                char *s = line + strspn(line, " \t");
                size_t n = strlen(s);
                while (n && (s[n - 1] == ' ' || s[n - 1] == '\t'))
                        s[--n] = '\0';
                if (!n)
                        continue;
                int64_t ms;
                if (delay_parse(s, &ms) || ms < 0 || ms > KDELAY_MAX_DELAY_MS)
                        err = kd_fail(KDELAY_ERR_INVALID_ARG, errstr, size,
                                      "%s:%zu: \"%.64s\" is not a delay "
                                      "(a duration or milliseconds)",
                                      path, lineno, s);
                else if (list_push(d, &cap, ms))
                        err = kd_fail(KDELAY_ERR_NO_MEMORY, errstr, size,
                                      "out of memory reading \"%s\"", path);
        }
        if (!err && ferror(fp))
                err = kd_fail(KDELAY_ERR_INVALID_ARG, errstr, size,
                              "error reading \"%s\"", path);
        fclose(fp);
        if (!err && d->cnt == 0)
                err = kd_fail(KDELAY_ERR_INVALID_ARG, errstr, size,
                              "\"%s\" holds no delay", path);
        return err;
}

kdelay_err_t kd_dist_parse(kd_dist_t *d, const char *spec, char *errstr,
                           size_t errstr_size)
{
        memset(d, 0, sizeof(*d));
        kdelay_err_t err;
        if (!strncmp(spec, "loguniform:", 11)) {
                d->kind = KD_DIST_LOGUNIFORM;
                err = range_parse(d, spec, spec + 11, errstr, errstr_size);
        } else if (!strncmp(spec, "uniform:", 8)) {
                d->kind = KD_DIST_UNIFORM;
                err = range_parse(d, spec, spec + 8, errstr, errstr_size);
        } else if (!strncmp(spec, "file:", 5) && spec[5]) {
                d->kind = KD_DIST_LIST;
                err = file_parse(d, spec + 5, errstr, errstr_size);
        } else {
                err = kd_fail(KDELAY_ERR_INVALID_ARG, errstr, errstr_size,
                              "unknown distribution \"%s\" (loguniform:MIN:"
                              "MAX, uniform:MIN:MAX or file:PATH)",
                              spec);
        }
        if (err)
                kd_dist_clear(d);
        return err;
}

void kd_dist_clear(kd_dist_t *d)
{
        free(d->delays);
        d->delays = NULL;
        d->cnt = 0;
}

/* xorshift64*: a fixed sequence per seed, so a plan reads the same twice. */
static double uniform01(uint64_t *s)
{
        *s ^= *s >> 12;
        *s ^= *s << 25;
        *s ^= *s >> 27;
        return (double)((*s * 2685821657736338717ULL) >> 11) * 0x1.0p-53;
}

static int64_t draw(const kd_dist_t *d, size_t i, uint64_t *s)
{
        double u = uniform01(s);
        switch (d->kind) {
        case KD_DIST_LOGUNIFORM: {
                double a = log((double)d->lo_ms), b = log((double)d->hi_ms);
                return (int64_t)llround(exp(a + u * (b - a)));
        }
        case KD_DIST_UNIFORM:
                return d->lo_ms +
                       (int64_t)llround(u * (double)(d->hi_ms - d->lo_ms));
        case KD_DIST_LIST:
                break;
        }
        return d->delays[i];
}

static int cmp_unsigned(const void *a, const void *b)
{
        unsigned x = *(const unsigned *)a, y = *(const unsigned *)b;
        return x < y ? -1 : x > y;
}

kdelay_err_t kd_plan_run(const kd_path_rules_t *rules, const kd_dist_t *d,
                         size_t samples, uint64_t seed, kd_plan_result_t *out,
                         char *errstr, size_t errstr_size)
{
        size_t n = d->kind == KD_DIST_LIST ? d->cnt : samples;
        memset(out, 0, sizeof(*out));
        if (n == 0)
                return kd_fail(KDELAY_ERR_INVALID_ARG, errstr, errstr_size,
                               "a plan needs at least one delay");
        unsigned *writes = malloc(n * sizeof(*writes));
        if (!writes)
                return kd_fail(KDELAY_ERR_NO_MEMORY, errstr, errstr_size,
                               "out of memory for %zu samples", n);
        uint64_t s = seed ? seed : 0x9E3779B97F4A7C15ULL;
        double sum_w = 0, sum_h = 0;
        for (size_t i = 0; i < n; i++) {
                kd_path_t p;
                kd_path_plan(rules, draw(d, i, &s), &p);
                writes[i] = p.writes;
                sum_w += p.writes;
                sum_h += p.hops;
                for (size_t k = 0; k < rules->tiers->cnt; k++) {
                        out->writes_by_tier[k] += p.writes_by_tier[k];
                        out->hops_by_tier[k] += p.hops_by_tier[k];
                }
        }
        qsort(writes, n, sizeof(*writes), cmp_unsigned);
        out->samples = n;
        out->mean_writes = sum_w / (double)n;
        out->mean_hops = sum_h / (double)n;
        /* Nearest rank: the smallest value at or above the quantile. */
        out->p50_writes = writes[(n - 1) / 2];
        out->p99_writes = writes[(size_t)ceil(0.99 * (double)n) - 1];
        out->max_writes = writes[n - 1];
        free(writes);
        return KDELAY_OK;
}
