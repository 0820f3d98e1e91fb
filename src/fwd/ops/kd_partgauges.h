/* SPDX-License-Identifier: Apache-2.0 */
/* The per-partition gauges of /metrics, computed from the assigned
 * partitions when metrics are published (not kept in the metric table:
 * their rows come and go with the assignment). */
#ifndef KD_PARTGAUGES_H
#define KD_PARTGAUGES_H

#include <stddef.h>

#include "core/kd_fwd_core.h"

/* Appends to buf (size bytes, text at *len) in the Prometheus text
 * format, per assigned tier partition: the consumer lag (the high
 * watermark librdkafka last fetched minus the commit point) and the age of
 * its oldest overdue task (due to leave the tier, not yet handled; 0 when
 * none). *len grows by what the whole text needs, also past size (then
 * nothing more is written: call again with more room). */
void kd_partgauges_format(const kd_fwd_t *f, char *buf, size_t size,
                          size_t *len);

#endif
