/* SPDX-License-Identifier: Apache-2.0 */
/* Intake stage: the record path of the assigned tier partitions — records
 * read into each partition's backlog, pause until the backlog head is due
 * (or room appears), resume. It hands backlog heads to the schedule
 * stage. Which partitions are assigned is the rebalance stage's
 * (kd_rebalance.h), which opens them here. */
#ifndef KD_INTAKE_H
#define KD_INTAKE_H

#include "core/kd_fwd_core.h"

/* A consumed message (not destroyed here). */
void kd_intake_message(kd_fwd_t *f, rd_kafka_message_t *m);
/* Room appeared for paused partitions (the held set shrank, or a commit
 * point moved: held.c, settle.c, the modes). */
void kd_intake_room(kd_fwd_t *f);
/* A partition of topic (a tier of delay tier_ms), flowing, with its mode
 * block zeroed, linked into f->intake->parts; NULL when out of memory
 * (the forwarder stops). The rebalance stage fills and drops it. */
kd_part_t *kd_intake_part_open(kd_fwd_t *f, const char *topic,
                               int32_t partition, int64_t tier_ms);
/* p flows again (resumed if paused: the pause flag outlives the
 * assignment). */
void kd_intake_part_flowing(kd_fwd_t *f, kd_part_t *p);

/* What other rooms read of the intake: the assigned partitions (the
 * list's head; NULL none), whether an assignment is settled (no revoke
 * since), and the revoke that ended the last one (monotonic; 0 never). */
const kd_part_t *kd_intake_parts(const kd_fwd_t *f);
int kd_intake_settled(const kd_fwd_t *f);
int64_t kd_intake_revoked_at(const kd_fwd_t *f);

#endif
