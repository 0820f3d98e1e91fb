/* SPDX-License-Identifier: Apache-2.0 */
/* The metric table's rows and its values (kd_metrics.h). */
#include "kd_metrics.h"

#include <stdio.h>
#include <string.h>

const kd_metric_info_t kd_metric_info[KD_M__COUNT] = {
#define KD_METRIC_ROW(id, name, type, unit, help)                              \
        {name, KD_METRIC_##type, unit, help},
    KD_METRICS(KD_METRIC_ROW)
#undef KD_METRIC_ROW
};

const int64_t kd_metric_bounds[KD_HIST_BUCKETS] = {
    1,   2,    5,    10,   20,    50,    100,   200,
    500, 1000, 2000, 5000, 10000, 20000, 30000, 60000};

void kd_metric_add(kd_metrics_t *m, kd_metric_id_t id, uint64_t n)
{
        m->v[id] += (int64_t)n;
}

void kd_metric_set(kd_metrics_t *m, kd_metric_id_t id, int64_t v)
{
        m->v[id] = v;
}

void kd_metric_max(kd_metrics_t *m, kd_metric_id_t id, int64_t v)
{
        if (v > m->v[id])
                m->v[id] = v;
}

int64_t kd_metric_get(const kd_metrics_t *m, kd_metric_id_t id)
{
        return kd_metric_info[id].type == KD_METRIC_HISTOGRAM
                   ? (int64_t)m->hist[id].count
                   : m->v[id];
}

void kd_metric_observe(kd_metrics_t *m, kd_metric_id_t id, int64_t v)
{
        kd_hist_t *h = &m->hist[id];
        size_t b = 0;
        while (b < KD_HIST_BUCKETS && v > kd_metric_bounds[b])
                b++;
        h->bucket[b]++;
        h->count++;
        h->sum += v;
}

int64_t kd_metric_quantile(const kd_metrics_t *m, kd_metric_id_t id, double q)
{
        const kd_hist_t *h = &m->hist[id];
        if (!h->count)
                return -1;
        uint64_t want = (uint64_t)(q * (double)h->count + 0.5), seen = 0;
        if (want < 1)
                want = 1;
        for (size_t b = 0; b < KD_HIST_BUCKETS; b++) {
                seen += h->bucket[b];
                if (seen >= want)
                        return kd_metric_bounds[b];
        }
        return INT64_MAX;
}

/* A quantile as text: its bucket's bound, "inf" past the last, -1 for an
 * empty histogram. */
static void quantile_text(const kd_metrics_t *m, kd_metric_id_t id, double q,
                          char *buf, size_t size)
{
        int64_t v = kd_metric_quantile(m, id, q);
        if (v == INT64_MAX)
                snprintf(buf, size, "inf");
        else
                snprintf(buf, size, "%lld", (long long)v);
}

int kd_metrics_format(const kd_metrics_t *m, char *buf, size_t size)
{
        size_t len = 0;
        for (size_t i = 0; i < KD_M__COUNT; i++) {
                const kd_metric_info_t *row = &kd_metric_info[i];
                char *at = len < size ? buf + len : NULL;
                size_t room = len < size ? size - len : 0;
                int n;
                if (row->type != KD_METRIC_HISTOGRAM) {
                        n = snprintf(at, room, " %s=%lld", row->name,
                                     (long long)m->v[i]);
                } else {
                        const kd_hist_t *h = &m->hist[i];
                        char p50[24], p99[24];
                        quantile_text(m, (kd_metric_id_t)i, 0.5, p50,
                                      sizeof(p50));
                        quantile_text(m, (kd_metric_id_t)i, 0.99, p99,
                                      sizeof(p99));
                        n = snprintf(at, room,
                                     " %s_count=%llu %s_sum=%lld %s_p50=%s "
                                     "%s_p99=%s",
                                     row->name, (unsigned long long)h->count,
                                     row->name, (long long)h->sum, row->name,
                                     p50, row->name, p99);
                }
                if (n < 0)
                        return -1;
                len += (size_t)n;
        }
        return (int)len;
}

void kd_metric_dead(kd_metrics_t *m, const char *reason)
{
        kd_metric_inc(m, KD_M_DEAD);
        size_t i = 0;
        while (i < m->dead_reasons && strcmp(m->dead_reason[i], reason))
                i++;
        if (i == m->dead_reasons) { /* a reason not seen before */
                if (i < KD_METRIC_REASONS - 1) {
                        m->dead_reason[i] = reason;
                        m->dead_reasons++;
                } else {
                        i = KD_METRIC_REASONS - 1;
                        m->dead_reason[i] = "other";
                        m->dead_reasons = KD_METRIC_REASONS;
                }
        }
        m->dead_by_reason[i]++;
}

void kd_metric_hop(kd_metrics_t *m, size_t idx)
{
        kd_metric_inc(m, KD_M_HOPPED);
        if (idx < KD_METRIC_TIERS)
                m->hopped_to[idx]++;
}

int kd_metrics_format_tiers(const kd_metrics_t *m, const char *const *names,
                            size_t cnt, char *buf, size_t size)
{
        size_t len = 0;
        if (size)
                buf[0] = '\0';
        for (size_t i = 0; i < cnt && i < KD_METRIC_TIERS; i++) {
                int n = snprintf(
                    len < size ? buf + len : NULL, len < size ? size - len : 0,
                    " hopped_to_%s=%lld", names[i], (long long)m->hopped_to[i]);
                if (n < 0)
                        return -1;
                len += (size_t)n;
        }
        return (int)len;
}
