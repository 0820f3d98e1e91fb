/* SPDX-License-Identifier: Apache-2.0 */
/* Absolute times typed on kdelayctl's command line. */
#ifndef KD_CTL_TIME_H
#define KD_CTL_TIME_H

#include <stddef.h>
#include <stdint.h>

/* Parses epoch milliseconds ("1764489600000") or RFC 3339
 * ("2026-12-01T08:00:00Z", "...T08:00:00.250+01:00"). 0 on success. */
int kd_ctl_time_parse(const char *s, int64_t *msp);

/* Formats epoch ms as RFC 3339 UTC with milliseconds. Returns buf. */
char *kd_ctl_time_format(int64_t ms, char *buf, size_t size);

#endif
