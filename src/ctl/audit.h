/* SPDX-License-Identifier: Apache-2.0 */
/* kdelayctl audit: what its audits share. The verb's front (cmd_audit.c:
 * options, the summary, the exit code) runs them in turn, one file each:
 * the FIRING rows (audit_firing), the overdue tier heads (audit_overdue),
 * the dead letters of the window (audit_dead_letters) and the fires after
 * a cancel (audit_unclaimed). Each prints its rows as a table on stdout,
 * or adds them to its array of the --json document it is given; these
 * two write that output the same way for all (audit_output.c). */
#ifndef AUDIT_H
#define AUDIT_H

#include <cjson/cJSON.h>

#include "kd_util.h"

/* A read of the dead-letter topic stops after this long. */
#define KD_AUDIT_DEAD_BUDGET_MS 30000

/* Starts a table on stdout: a blank line when another was printed before
 * it (shown_before), then its header row (fmt and the column names,
 * printf's) unless --no-headers. */
void kd_audit_table_start(int shown_before, const char *fmt, ...)
    KD_PRINTF(2, 3);

/* A new object for one row at the end of the JSON array rows (owned by
 * rows); NULL when out of memory. */
cJSON *kd_audit_json_row(cJSON *rows);

#endif
