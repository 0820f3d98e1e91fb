/* SPDX-License-Identifier: Apache-2.0 */
/* Clock probes, under the fire stage: the forwarder learns how far its
 * wall clock is off the broker's (kd_skew.h) from the LogAppendTime in the
 * delivery reports of its own hops and dead letters, and of a small probe
 * record it writes to the smallest tier when those are rare (at start, and
 * every KD_PROBE_INTERVAL_MS without a sample). Until the first sample no
 * task fires (a host clock an hour ahead would fire everything early);
 * when no sample can come (the topic has no LogAppendTime, as on
 * librdkafka's mock cluster; or none within KD_PROBE_GATE_MS) this is
 * logged and fires go ahead unchecked. Probe records (header kdelay-probe,
 * no kdelay-id) are skipped by every forwarder that reads them. */
#ifndef KD_PROBE_H
#define KD_PROBE_H

#include "core/kd_fwd_core.h"

#define KD_PROBE_HDR         "kdelay-probe"
#define KD_PROBE_INTERVAL_MS 10000
#define KD_PROBE_GATE_MS     30000

/* Arms the probe timer to run at once (from the loop's start). */
void kd_probe_start(kd_fwd_t *f);
/* 1 when a delivery report's opaque is a probe's. */
int kd_probe_is(const kd_fwd_t *f, const void *opaque);
/* A probe's delivery report. */
void kd_probe_reported(kd_fwd_t *f, const rd_kafka_message_t *m);
/* A record of ours sent at local wall time sent_ms was appended at broker
 * time broker_ms (LogAppendTime): a clock sample. -1 when not believed
 * (kd_skew_observe). */
int kd_probe_sample(kd_fwd_t *f, int64_t sent_ms, int64_t broker_ms);
/* 1 when consumed record m is a probe (to be skipped): kdelay-probe and
 * no kdelay-id. */
int kd_probe_record(const rd_kafka_message_t *m);

#endif
