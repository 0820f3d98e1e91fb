/* SPDX-License-Identifier: Apache-2.0 */
/* The metric table in the Prometheus text exposition format (kd_metrics.h):
 * counters as kdelay_forwarder_<name>_total, gauges as
 * kdelay_forwarder_<name>, histograms with cumulative buckets; a metric in
 * ms is exported in seconds (its name's "_ms" becomes "_seconds"). */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "core/kd_metrics.h"

#define KD_PROM_PREFIX "kdelay_forwarder_"

/* snprintf into buf at *len, counting what did not fit. */
typedef struct out {
        char *buf;
        size_t size, len;
        int failed;
} out_t;

static void put(out_t *o, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void put(out_t *o, const char *fmt, ...)
{
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(o->len < o->size ? o->buf + o->len : NULL,
                          o->len < o->size ? o->size - o->len : 0, fmt, ap);
        va_end(ap);
        if (n < 0)
                o->failed = 1;
        else
                o->len += (size_t)n;
}

/* The exported name of row (without _total or histogram suffixes). */
static void prom_name(const kd_metric_info_t *row, char *name, size_t size)
{
        size_t n = strlen(row->name);
        int ms = !strcmp(row->unit, "ms");
        if (ms && n > 3 && !strcmp(row->name + n - 3, "_ms"))
                n -= 3;
        snprintf(name, size, KD_PROM_PREFIX "%.*s%s", (int)n, row->name,
                 ms ? "_seconds" : "");
}

static void histogram(out_t *o, const char *name, const kd_hist_t *h,
                      double scale)
{
        uint64_t seen = 0;
        for (size_t b = 0; b < KD_HIST_BUCKETS; b++) {
                seen += h->bucket[b];
                put(o, "%s_bucket{le=\"%g\"} %llu\n", name,
                    (double)kd_metric_bounds[b] * scale,
                    (unsigned long long)seen);
        }
        put(o, "%s_bucket{le=\"+Inf\"} %llu\n", name,
            (unsigned long long)h->count);
        put(o, "%s_sum %.17g\n", name, (double)h->sum * scale);
        put(o, "%s_count %llu\n", name, (unsigned long long)h->count);
}

int kd_metrics_format_prometheus(const kd_metrics_t *m,
                                 const char *const *tiers, size_t tier_cnt,
                                 const kd_build_labels_t *build, char *buf,
                                 size_t size)
{
        out_t o = {buf, size, 0, 0};
        char name[128];
        if (size)
                buf[0] = '\0';
        put(&o,
            "# HELP kdelay_build_info The forwarder's version, commit and "
            "schema version\n"
            "# TYPE kdelay_build_info gauge\n"
            "kdelay_build_info{version=\"%s\",revision=\"%s\",schema=\"%d\"} "
            "1\n",
            build->version, build->revision, build->schema);
        for (size_t i = 0; i < KD_M__COUNT; i++) {
                const kd_metric_info_t *row = &kd_metric_info[i];
                double scale = !strcmp(row->unit, "ms") ? 0.001 : 1.0;
                prom_name(row, name, sizeof(name));
                const char *suffix =
                    row->type == KD_METRIC_COUNTER ? "_total" : "";
                const char *type = row->type == KD_METRIC_COUNTER ? "counter"
                                   : row->type == KD_METRIC_GAUGE ? "gauge"
                                                                  : "histogram";
                put(&o, "# HELP %s%s %s\n# TYPE %s%s %s\n", name, suffix,
                    row->help, name, suffix, type);
                if (row->type == KD_METRIC_HISTOGRAM)
                        histogram(&o, name, &m->hist[i], scale);
                else
                        put(&o, "%s%s %.17g\n", name, suffix,
                            (double)m->v[i] * scale);
        }
        put(&o, "# HELP " KD_PROM_PREFIX "hopped_to_total Hops delivered into "
                "each tier of the ladder\n"
                "# TYPE " KD_PROM_PREFIX "hopped_to_total counter\n");
        for (size_t i = 0; i < tier_cnt && i < KD_METRIC_TIERS; i++)
                put(&o, KD_PROM_PREFIX "hopped_to_total{tier=\"%s\"} %lld\n",
                    tiers[i], (long long)m->hopped_to[i]);
        put(&o, "# HELP " KD_PROM_PREFIX "dead_by_reason_total Records "
                "dead-lettered (or dropped), by kdelay-dead-reason\n"
                "# TYPE " KD_PROM_PREFIX "dead_by_reason_total counter\n");
        for (size_t i = 0; i < m->dead_reasons; i++)
                put(&o,
                    KD_PROM_PREFIX "dead_by_reason_total{reason=\"%s\"} %lld\n",
                    m->dead_reason[i], (long long)m->dead_by_reason[i]);
        return o.failed ? -1 : (int)o.len;
}
