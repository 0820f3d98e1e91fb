/* SPDX-License-Identifier: Apache-2.0 */
/* kdelayctl audit, the overdue partitions: tier partitions whose next
 * record to handle was due too long ago (no forwarder runs, or one is
 * stuck). */
#ifndef AUDIT_OVERDUE_H
#define AUDIT_OVERDUE_H

#include <stddef.h>
#include <stdint.h>

#include <librdkafka/rdkafka.h>

#include <kdelay/kdelay.h>

#include <cjson/cJSON.h>

#include "kd_grouppos.h"

/* Reads through rk (a kd_grouppos_client) the head of every partition of
 * pos (the group's position) that has one, and lists those due more than
 * overdue_ms ago: a table on stdout (OVERDUE_PARTITION OFFSET DUE
 * OVERDUE_MS; a blank line first when shown_before), or an object each in
 * the JSON array rows_json (not NULL). *np gets how many. */
kdelay_err_t kd_audit_overdue(rd_kafka_t *rk, const kd_grouppos_t *pos,
                              int64_t overdue_ms, cJSON *rows_json,
                              int shown_before, size_t *np, char *errstr,
                              size_t errstr_size);

#endif
