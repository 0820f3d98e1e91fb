/* Intake stage: the assigned tier partitions — assignment and revoke,
 * records read into each partition's backlog, pause until the backlog
 * head is due (or room appears), resume. The top of the pipeline: it
 * hands backlog heads to the schedule stage. */
#ifndef KD_INTAKE_H
#define KD_INTAKE_H

#include "kd_fwd_state.h"

/* Rebalance: partitions assigned / revoked (fwd.c's rebalance callback). */
void kd_intake_assign(kd_fwd_t *f, rd_kafka_topic_partition_list_t *parts);
void kd_intake_revoke(kd_fwd_t *f, rd_kafka_topic_partition_list_t *parts);
/* A consumed message (not destroyed here). */
void kd_intake_message(kd_fwd_t *f, rd_kafka_message_t *m);
/* Hooks (kd_fwd_hooks_t). */
void kd_intake_room(kd_fwd_t *f);
void kd_intake_rewind(kd_fwd_t *f);
/* Drops every partition and its tasks without committing (destroy). */
void kd_intake_clear(kd_fwd_t *f);

#endif
