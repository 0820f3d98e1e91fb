/* SPDX-License-Identifier: Apache-2.0 */
/* kdelayctl audit, the dead letters of the window: those not replayed yet
 * are findings; those `dead replay` replayed are history, and those whose
 * task was cancelled are listed, not findings. */
#ifndef AUDIT_DEAD_LETTERS_H
#define AUDIT_DEAD_LETTERS_H

#include <stddef.h>
#include <stdint.h>

#include <kdelay/kdelay.h>

#include <cjson/cJSON.h>

#include "cli.h"

typedef struct kd_audit_dead_counts {
        int64_t records;   /* in the dead-letter topic since the window */
        int64_t replayed;  /* of records: history, replayed before */
        int64_t cancelled; /* of records: their task cancelled */
} kd_audit_dead_counts_t;

/* Counts the records of the dead-letter topic (dead_topic, for the table)
 * since since_ms and which were replayed: their copy's id
 * (kd_replay_item_id, or the nested id of earlier releases) has a fate,
 * or is pending in a tier topic. Lists the others: a table on stdout
 * (DEAD_ID STATE REASON SOURCE, STATE `open` or `cancelled`; a blank line
 * first when shown_before), or an object each in the JSON array rows_json
 * (not NULL). A missing dead-letter topic has none; what cannot be
 * counted is an error; what cannot be read then leaves them all findings
 * (replayed and cancelled 0), said on stderr (cli->prog). */
kdelay_err_t kd_audit_dead_letters(const kd_cli_t *cli, int64_t since_ms,
                                   const char *dead_topic, cJSON *rows_json,
                                   int shown_before,
                                   kd_audit_dead_counts_t *counts, char *errstr,
                                   size_t errstr_size);

#endif
