/* SPDX-License-Identifier: Apache-2.0 */
/* An assigned tier partition: the data the pipeline's stages share about
 * it. rebalance.c opens (through intake.c) and drops partitions, intake.c
 * pauses and resumes them; the settle stage moves their offset trackers,
 * the mode keeps its own state of each (p->mode). */
#ifndef KD_PART_H
#define KD_PART_H

#include <stddef.h>
#include <stdint.h>

#include "kd_offtrack.h"
#include "kd_task.h"
#include "kd_timer.h"

typedef enum kd_part_state {
        KD_PART_FLOWING,
        KD_PART_WAITING, /* paused until its wake timer: head not due */
        KD_PART_FULL     /* paused: no room (held set, done-set span) */
} kd_part_state_t;

struct kd_part {
        char topic[256];
        size_t topic_len;
        int32_t partition;
        int64_t tier_ms;      /* the tier's delay, from the topic's name */
        kd_part_state_t flow; /* flowing or paused, and why */
        kd_timer_t wake;      /* KD_PART_WAITING: wall clock, head due */
        kd_taskq_t backlog;   /* read, not yet processed */
        kd_task_t *tasks;     /* every live task from here */
        kd_offtrack_t track;
        int create_time;       /* a record without LogAppendTime was logged */
        int not_before_logged; /* an ignored kdelay-not-before was logged */
        int revoking;          /* in the revoke being handled */
        /* The delivery mode's state of this partition: part_size bytes
         * (kd_mode_ops.h), zeroed; the block is intake's, its contents the
         * mode's (opened/closed). NULL when the mode keeps none. */
        void *mode;
        struct kd_part *next;
};

#endif
