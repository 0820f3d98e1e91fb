/* SPDX-License-Identifier: Apache-2.0 */
/* kdelayctl audit: the overdue partitions (audit_overdue.h). */
#include "audit_overdue.h"

#include <stdio.h>

#include "audit.h"
#include "ctl_time.h"
#include "kd_grouppos_heads.h"
#include "kd_util.h"
#include "kd_wire.h"

/* How long the heads are read for. */
#define KD_AUDIT_HEADS_MS 10000

#define OVERDUE_COLUMNS "%-40s %12s %-24s %12s\n"

typedef struct overdue_audit {
        const kd_grouppos_t *pos;
        int64_t overdue_ms;
        cJSON *rows_json; /* NULL: the table */
        int shown_before;
        size_t n;
        int oom; /* a row not added to rows_json */
} overdue_audit_t;

/* One partition's head (kd_grouppos_heads): a finding when due more than
 * the bound ago. */
static void head_seen(const rd_kafka_message_t *m, void *opaque)
{
        overdue_audit_t *au = opaque;
        const kd_grouppos_part_t *p = kd_grouppos_find(
            au->pos, rd_kafka_topic_name(m->rkt), m->partition);
        rd_kafka_headers_t *h = NULL;
        kd_wire_task_t t;
        int64_t now = kd_now_ms();
        if (!p || rd_kafka_message_headers((rd_kafka_message_t *)m, &h) ||
            kd_wire_decode(h, now, &t) != KD_WIRE_OK ||
            now - t.fire_at_ms <= au->overdue_ms)
                return;
        char ts[40];
        if (au->rows_json) {
                cJSON *o = kd_audit_json_row(au->rows_json);
                if (!o) {
                        au->oom = 1;
                        return;
                }
                cJSON_AddStringToObject(o, "tier_topic", p->topic);
                cJSON_AddNumberToObject(o, "partition", p->partition);
                cJSON_AddNumberToObject(o, "offset", (double)m->offset);
                cJSON_AddNumberToObject(o, "overdue_ms",
                                        (double)(now - t.fire_at_ms));
        } else {
                char where[300];
                if (!au->n)
                        kd_audit_table_start(au->shown_before, OVERDUE_COLUMNS,
                                             "OVERDUE_PARTITION", "OFFSET",
                                             "DUE", "OVERDUE_MS");
                snprintf(where, sizeof(where), "%s/%d", p->topic,
                         (int)p->partition);
                printf("%-40s %12lld %-24s %12lld\n", where,
                       (long long)m->offset,
                       kd_ctl_time_format(t.fire_at_ms, ts, sizeof(ts)),
                       (long long)(now - t.fire_at_ms));
        }
        au->n++;
}

kdelay_err_t kd_audit_overdue(rd_kafka_t *rk, const kd_grouppos_t *pos,
                              int64_t overdue_ms, cJSON *rows_json,
                              int shown_before, size_t *np, char *errstr,
                              size_t errstr_size)
{
        overdue_audit_t au = {.pos = pos,
                              .overdue_ms = overdue_ms,
                              .rows_json = rows_json,
                              .shown_before = shown_before};
        *np = 0;
        rd_kafka_topic_partition_list_t *l =
            rd_kafka_topic_partition_list_new((int)pos->cnt + 1);
        if (!l)
                return kd_fail(KDELAY_ERR_NO_MEMORY, errstr, errstr_size,
                               "out of memory");
        for (size_t i = 0; i < pos->cnt; i++) {
                const kd_grouppos_part_t *p = &pos->parts[i];
                if (kd_grouppos_start(p) < p->high)
                        rd_kafka_topic_partition_list_add(l, p->topic,
                                                          p->partition)
                            ->offset = kd_grouppos_start(p);
        }
        rd_kafka_resp_err_t kerr =
            kd_grouppos_heads(rk, l, KD_AUDIT_HEADS_MS, head_seen, &au);
        rd_kafka_topic_partition_list_destroy(l);
        *np = au.n;
        if (kerr)
                return kd_fail(KDELAY_ERR_KAFKA, errstr, errstr_size,
                               "assign: %s", rd_kafka_err2str(kerr));
        if (au.oom)
                return kd_fail(KDELAY_ERR_NO_MEMORY, errstr, errstr_size,
                               "out of memory");
        return KDELAY_OK;
}
