/* SPDX-License-Identifier: Apache-2.0 */
/* Per-partition gauges of /metrics (kd_partgauges.h). */
#include "kd_partgauges.h"

#include <stdarg.h>
#include <stdio.h>

#include "core/kd_part.h"
#include "kd_path.h"
#include "pipeline/kd_intake.h"

#define KD_PG_PREFIX "kdelay_forwarder_"

static void put(char *buf, size_t size, size_t *len, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static void put(char *buf, size_t size, size_t *len, const char *fmt, ...)
{
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(*len < size ? buf + *len : NULL,
                          *len < size ? size - *len : 0, fmt, ap);
        va_end(ap);
        if (n > 0)
                *len += (size_t)n;
}

/* The oldest due time among p's tasks that are due by now, or now. */
static int64_t oldest_due(const kd_fwd_t *f, const kd_part_t *p, int64_t now)
{
        int64_t oldest = now;
        for (const kd_task_t *t = p->tasks; t; t = t->next) {
                if (t->dead_reason) /* due at once, not by its fire-at */
                        continue;
                int64_t due =
                    kd_path_due(kd_task_due_at(t), t->rec.append_ms, p->tier_ms,
                                f->conf->fwd_hold_horizon_ms);
                if (due < oldest)
                        oldest = due;
        }
        return oldest;
}

void kd_partgauges_format(const kd_fwd_t *f, char *buf, size_t size,
                          size_t *len)
{
        int64_t now = kd_fwd_now(f);
        put(buf, size, len,
            "# HELP " KD_PG_PREFIX "consumer_lag Records of the tier "
            "partition above this forwarder's commit point (high watermark "
            "last fetched minus commit point)\n"
            "# TYPE " KD_PG_PREFIX "consumer_lag gauge\n");
        for (const kd_part_t *p = kd_intake_parts(f); p; p = p->next) {
                int64_t lo = -1, hi = -1;
                int64_t commit = kd_offtrack_commit_point(&p->track);
                if (!f->consumer.rk ||
                    rd_kafka_get_watermark_offsets(f->consumer.rk, p->topic,
                                                   p->partition, &lo, &hi) ||
                    hi < 0 || commit < 0)
                        continue;
                put(buf, size, len,
                    KD_PG_PREFIX "consumer_lag{topic=\"%s\",partition=\"%d\"} "
                                 "%lld\n",
                    p->topic, (int)p->partition,
                    (long long)(hi > commit ? hi - commit : 0));
        }
        put(buf, size, len,
            "# HELP " KD_PG_PREFIX "overdue_head_seconds Age of the tier "
            "partition's oldest task that is due and not yet handled (0: "
            "none)\n"
            "# TYPE " KD_PG_PREFIX "overdue_head_seconds gauge\n");
        for (const kd_part_t *p = kd_intake_parts(f); p; p = p->next)
                put(buf, size, len,
                    KD_PG_PREFIX "overdue_head_seconds{topic=\"%s\","
                                 "partition=\"%d\"} %.3f\n",
                    p->topic, (int)p->partition,
                    (double)(now - oldest_due(f, p, now)) / 1000.0);
}
