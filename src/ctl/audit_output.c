/* SPDX-License-Identifier: Apache-2.0 */
/* kdelayctl audit: the output its audits share (audit.h), below the
 * verb's front and every audit, so that none calls back up into it. */
#include <stdarg.h>
#include <stdio.h>

#include <cjson/cJSON.h>

#include "audit.h"
#include "cli.h"

void kd_audit_table_start(int shown_before, const char *fmt, ...)
{
        if (shown_before)
                printf("\n");
        if (!kd_cli_headers())
                return;
        va_list ap;
        va_start(ap, fmt);
        vprintf(fmt, ap);
        va_end(ap);
}

cJSON *kd_audit_json_row(cJSON *rows)
{
        cJSON *o = cJSON_CreateObject();
        if (!o || !cJSON_AddItemToArray(rows, o)) {
                cJSON_Delete(o);
                return NULL;
        }
        return o;
}
