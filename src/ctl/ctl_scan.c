/* SPDX-License-Identifier: Apache-2.0 */
/* Pending tasks on kdelayctl's stdout, scan progress on its stderr;
 * dead letters counted by reason. */
#include "ctl_scan.h"

#include <stdio.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "ctl_json.h"
#include "ctl_time.h"
#include "kd_util.h"

const char *kd_ctl_pending_state(const kdelay_pending_t *p)
{
        return p->fate == KDELAY_FATE_FIRING ? "FIRING" : "PENDING";
}

void kd_ctl_pending_json(const kdelay_pending_t *p)
{
        char t[40];
        cJSON *o = cJSON_CreateObject();
        if (!o)
                return;
        cJSON_AddStringToObject(o, "id", p->id);
        cJSON_AddStringToObject(o, "state", kd_ctl_pending_state(p));
        cJSON_AddStringToObject(o, "target", p->target);
        cJSON_AddNumberToObject(o, "fire_at_ms", (double)p->fire_at_ms);
        cJSON_AddStringToObject(
            o, "fire_at", kd_ctl_time_format(p->fire_at_ms, t, sizeof(t)));
        cJSON_AddStringToObject(o, "tier_topic", p->tier_topic);
        cJSON_AddNumberToObject(o, "partition", p->partition);
        cJSON_AddNumberToObject(o, "offset", (double)p->offset);
        kd_ctl_json_print(o);
}

void kd_ctl_pending_text(const kdelay_pending_t *p)
{
        char t[40];
        printf("id         %s\n", p->id);
        printf("state      %s\n", kd_ctl_pending_state(p));
        printf("target     %s\n", p->target);
        printf("fire-at    %s\n",
               kd_ctl_time_format(p->fire_at_ms, t, sizeof(t)));
        printf("tier-topic %s\n", p->tier_topic);
        printf("partition  %d\n", (int)p->partition);
        printf("offset     %lld\n", (long long)p->offset);
}

void kd_ctl_scan_progress(const kd_scan_progress_t *p, void *opaque)
{
        kd_cli_log(opaque, KDELAY_LOG_INFO,
                   "event=scan_progress records=%llu of_at_most=%llu "
                   "partitions_done=%zu/%zu elapsed_ms=%lld",
                   (unsigned long long)p->records,
                   (unsigned long long)p->to_read, p->parts_done, p->parts,
                   (long long)p->elapsed_ms);
}

void kd_ctl_dead_reason(const kd_scan_rec_t *r, char *buf, size_t size)
{
        const void *v = NULL;
        size_t len = 0;
        kd_strlcpy(buf, "-", size);
        if (r->hdrs &&
            !rd_kafka_header_get_last(r->hdrs, KDELAY_HDR_DEAD_REASON, &v,
                                      &len) &&
            v && len)
                snprintf(buf, size, "%.*s", (int)len, (const char *)v);
}

void kd_ctl_reasons_add(kd_ctl_reasons_t *c, const char *reason)
{
        size_t i = 0;
        while (i < c->n && strcmp(c->name[i], reason))
                i++;
        if (i == c->n) {
                if (c->n == KD_CTL_REASONS_MAX)
                        i = KD_CTL_REASONS_MAX - 1; /* the rest: "other" */
                else
                        c->n++;
                kd_strlcpy(c->name[i],
                           i == KD_CTL_REASONS_MAX - 1 ? "other" : reason,
                           sizeof(c->name[i]));
        }
        c->count[i]++;
        c->total++;
}

void kd_ctl_reasons_print(const kd_ctl_reasons_t *c)
{
        for (size_t i = 0; i < c->n; i++)
                printf(" %s=%zu", c->name[i], c->count[i]);
}

void kd_ctl_reasons_json(const kd_ctl_reasons_t *c, void *o, const char *name)
{
        cJSON *b = cJSON_AddObjectToObject(o, name);
        for (size_t i = 0; b && i < c->n; i++)
                cJSON_AddNumberToObject(b, c->name[i], (double)c->count[i]);
}
