/* SPDX-License-Identifier: Apache-2.0 */
/* kdelayctl dead replay, its answers (replay_answer.h). */
#include "replay_answer.h"

#include <stdio.h>

#include <cjson/cJSON.h>

#include "ctl_json.h"

/* The check's fields of an answer in JSON. */
static void answer_check_json(cJSON *o, const kd_replay_check_t *k)
{
        const kd_target_info_t *ti = k->ti;
        cJSON_AddStringToObject(o, "target_check",
                                k->failure        ? "failed"
                                : ti->config_read ? "ok"
                                                  : "incomplete");
        if (k->failure)
                cJSON_AddStringToObject(o, "failure", k->failure);
        if (ti->exists >= 0)
                cJSON_AddBoolToObject(o, "target_exists", ti->exists);
        else
                cJSON_AddNullToObject(o, "target_exists");
        cJSON_AddNumberToObject(o, "size_estimate", (double)k->size);
        if (ti->config_read) {
                cJSON_AddStringToObject(o, "cleanup_policy",
                                        ti->cleanup_policy);
                cJSON_AddNumberToObject(o, "max_message_bytes",
                                        (double)ti->max_message_bytes);
        } else if (ti->exists != 0) {
                cJSON_AddStringToObject(o, "config_error", ti->problem);
        }
}

void kd_replay_answer(int json, const kd_replay_item_t *it, const char *result,
                      const char *new_id, const char *why,
                      const kd_replay_check_t *chk)
{
        if (json) {
                cJSON *o = cJSON_CreateObject();
                if (!o) {
                        fprintf(stderr, "kdelayctl dead replay: out of "
                                        "memory\n");
                        return;
                }
                if (it->valid) {
                        cJSON_AddStringToObject(o, "id", it->id);
                        cJSON_AddStringToObject(o, "target", it->target);
                } else {
                        cJSON_AddNullToObject(o, "id");
                        cJSON_AddNullToObject(o, "target");
                }
                cJSON_AddStringToObject(o, "reason", it->reason);
                cJSON_AddNumberToObject(o, "partition", it->partition);
                cJSON_AddNumberToObject(o, "offset", (double)it->offset);
                cJSON_AddStringToObject(o, "result", result);
                if (new_id)
                        cJSON_AddStringToObject(o, "new_id", new_id);
                if (why)
                        cJSON_AddStringToObject(o, "why", why);
                if (chk && chk->ti)
                        answer_check_json(o, chk);
                kd_ctl_json_print(o);
                return;
        }
        printf("%s %s%s%s%s%s\n", it->valid ? it->id : "-", result,
               new_id ? " " : "", new_id ? new_id : "", why ? " " : "",
               why ? why : "");
}
