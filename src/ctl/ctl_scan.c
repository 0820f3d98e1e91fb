/* Pending tasks on kdelayctl's stdout, scan progress on its stderr. */
#include "ctl_scan.h"

#include <stdio.h>

#include <cjson/cJSON.h>

#include "ctl_time.h"

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
        char *text = cJSON_PrintUnformatted(o);
        if (text)
                printf("%s\n", text);
        cJSON_free(text);
        cJSON_Delete(o);
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
