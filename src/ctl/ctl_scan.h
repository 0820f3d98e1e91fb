/* SPDX-License-Identifier: Apache-2.0 */
/* What the kdelayctl verbs that scan the tier topics share (tasks,
 * status --scan, reschedule): printing a pending task, and the scan's
 * progress line on stderr. */
#ifndef KD_CTL_SCAN_H
#define KD_CTL_SCAN_H

#include <stdint.h>

#include <kdelay/kdelay.h>

#include "cli.h"
#include "kd_scan.h"

/* The default bound of a scan (--budget). */
#define KD_CTL_SCAN_BUDGET_MS 60000

/* "PENDING" (no fate yet) or "FIRING". */
const char *kd_ctl_pending_state(const kdelay_pending_t *p);

/* One task as a JSON object on one line of stdout. */
void kd_ctl_pending_json(const kdelay_pending_t *p);

/* One task as "name value" lines on stdout (as status prints). */
void kd_ctl_pending_text(const kdelay_pending_t *p);

/* kd_scan_opts_t.progress: logs the scan's progress (opaque: the
 * kd_cli_t) as an event line on stderr. */
void kd_ctl_scan_progress(const kd_scan_progress_t *p, void *opaque);

/* Dead letters counted by reason. */
#define KD_CTL_REASONS_MAX 32
typedef struct kd_ctl_reasons {
        char name[KD_CTL_REASONS_MAX][40]; /* the last one may be "other" */
        size_t count[KD_CTL_REASONS_MAX];
        size_t n, total;
} kd_ctl_reasons_t;

/* A dead letter's kdelay-dead-reason into buf ("-" when it has none). */
void kd_ctl_dead_reason(const kd_scan_rec_t *r, char *buf, size_t size);
void kd_ctl_reasons_add(kd_ctl_reasons_t *c, const char *reason);
/* " reason=count" for each, on stdout. */
void kd_ctl_reasons_print(const kd_ctl_reasons_t *c);
/* {reason: count, ...} as member `name` of JSON object o (a cJSON *). */
void kd_ctl_reasons_json(const kd_ctl_reasons_t *c, void *o, const char *name);

#endif
