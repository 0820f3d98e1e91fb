/* SPDX-License-Identifier: Apache-2.0 */
/* kdelayctl audit, the fires after a cancel: tasks cancelled before a
 * fate-store outage and fired through it without a claim
 * (forwarder.fate_outage_policy=fire), as the journal's application
 * recorded them in kdelay_unclaimed. */
#ifndef AUDIT_UNCLAIMED_H
#define AUDIT_UNCLAIMED_H

#include <stddef.h>
#include <stdint.h>

#include <kdelay/kdelay.h>

#include <cjson/cJSON.h>

/* Most rows listed per audit run. */
#define KD_AUDIT_UNCLAIMED_MAX 1000

/* Lists the rows applied since since_ms: a table on stdout
 * (FIRED_AFTER_CANCEL_ID FIRE_AT FIRED_AT FORWARDER SOURCE DELIVERED
 * CANCELLED; a blank line first when shown_before), or an object each in
 * the JSON array rows_json (not NULL). *np gets how many; *morep 1 when
 * there may be more. */
kdelay_err_t kd_audit_unclaimed(const kdelay_conf_t *conf, int64_t since_ms,
                                cJSON *rows_json, int shown_before, size_t *np,
                                int *morep, char *errstr, size_t errstr_size);

#endif
