/* SPDX-License-Identifier: Apache-2.0 */
/* Rebalance stage: which tier partitions this forwarder holds —
 * assignment, revoke (last fires, hand-over, commit), rewind after an
 * aborted transaction, and the drop at destroy. Called from librdkafka's
 * rebalance callback (fwd.c), the rewind hook and the loop. */
#ifndef KD_REBALANCE_H
#define KD_REBALANCE_H

#include "core/kd_fwd_core.h"

/* Partitions assigned / revoked (fwd.c's rebalance callback). */
void kd_rebalance_assign(kd_fwd_t *f, rd_kafka_topic_partition_list_t *parts);
void kd_rebalance_revoke(kd_fwd_t *f, rd_kafka_topic_partition_list_t *parts);
/* A transaction aborted (exactly_once): every partition is read again
 * from its committed offsets. Inside the nested pump it only marks
 * f->intake->rewind_due, done on the loop's next turn. */
void kd_rebalance_rewind(kd_fwd_t *f);
/* Drops every partition and its tasks without committing (destroy). */
void kd_rebalance_clear(kd_fwd_t *f);

/* 1 when a rewind was asked for inside the pump (kd_rebalance_rewind
 * then waits for the loop's next turn). */
int kd_rebalance_rewind_due(const kd_fwd_t *f);

#endif
