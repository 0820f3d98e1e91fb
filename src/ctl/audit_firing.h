/* SPDX-License-Identifier: Apache-2.0 */
/* kdelayctl audit, the stuck claims: FIRING fate rows resolved exactly by
 * where the forwarder group stands (delivered, pending, unknown) and by
 * the dead-letter topic (dead_lettered); --fix marks the delivered ones
 * FIRED and the dead-lettered ones DEAD. */
#ifndef AUDIT_FIRING_H
#define AUDIT_FIRING_H

#include <stddef.h>
#include <stdint.h>

#include <kdelay/kdelay.h>

#include <cjson/cJSON.h>

#include "cli.h"
#include "kd_grouppos.h"

/* Most FIRING rows read per audit run. */
#define KD_AUDIT_FIRING_MAX 10000

typedef enum kd_audit_verdict {
        KD_AUDIT_DELIVERED,
        KD_AUDIT_PENDING,
        KD_AUDIT_UNKNOWN,
        KD_AUDIT_DEAD_LETTERED, /* handled by a dead letter, not a fire */
        KD_AUDIT_VERDICT__N
} kd_audit_verdict_t;

/* "delivered", "pending", "unknown", "dead_lettered". */
const char *kd_audit_verdict_name(kd_audit_verdict_t v);

typedef struct kd_audit_firing_counts {
        size_t rows;                          /* FIRING rows read */
        size_t verdicts[KD_AUDIT_VERDICT__N]; /* of rows, by verdict */
        size_t fixed;                         /* marked by --fix */
        int more;                             /* KD_AUDIT_FIRING_MAX read */
} kd_audit_firing_counts_t;

/* Judges the FIRING rows last changed more than older_ms ago, or stamped
 * more than older_ms ahead of this clock (0: every FIRING row), by pos (the
 * group's position, read before them), fixes them when fix, and lists
 * them: a table on stdout (FIRING_ID VERDICT ACTION OWNER UPDATED SOURCE),
 * or an object each in the JSON array rows_json (not NULL). A dead-letter
 * read that cannot finish is a warning on stderr (cli->prog): the rows it
 * leaves in doubt are `unknown`. */
kdelay_err_t kd_audit_firing(const kd_cli_t *cli, const kd_grouppos_t *pos,
                             int64_t older_ms, int fix, cJSON *rows_json,
                             kd_audit_firing_counts_t *counts, char *errstr,
                             size_t errstr_size);

#endif
