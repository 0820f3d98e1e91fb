/* SPDX-License-Identifier: Apache-2.0 */
/* kdelayctl stats's view of forwarder.target_rate_limits: for every topic
 * a rule limits, how late the recent fires to it came (record timestamp
 * minus kdelay-fire-at), read from the topic itself — what the limit
 * costs, as the consumers see it, whichever forwarder fired. */
#ifndef KD_TARGETLATE_H
#define KD_TARGETLATE_H

#include <stddef.h>
#include <stdint.h>

#include "kd_conf.h"
#include "kd_ratelimits.h"

typedef struct kd_target_late {
        int rule;        /* its rule in the kd_ratelimits_t */
        char topic[256]; /* a topic the rule matches */
        uint64_t fires;  /* records with kdelay-fire-at in the window */
        int64_t p50_ms, p99_ms, max_ms; /* lateness; -1 without fires */
        int complete;                   /* read to the end within the budget */
} kd_target_late_t;

/* Fills out (at most max entries, *cntp of them) with the topics rules
 * match (metadata; internal topics left out) and the lateness of the
 * records appended to each in the last window_ms, each topic read for at
 * most budget_ms. */
kdelay_err_t
kd_target_late_read(const kdelay_conf_t *conf, const kd_ratelimits_t *rules,
                    int64_t window_ms, int64_t budget_ms, kd_target_late_t *out,
                    size_t max, size_t *cntp, char *errstr, size_t errstr_size);

#endif
