/* The held set's accounting: tasks kept in memory until due, bounded by
 * forwarder.max_held and forwarder.max_held_bytes. Every stage that lets a
 * task go updates it; a shrinking set calls the room hook. */
#ifndef KD_HELD_H
#define KD_HELD_H

#include "kd_fwd_state.h"

void kd_held_add(kd_fwd_t *f, kd_task_t *t);
void kd_held_remove(kd_fwd_t *f, kd_task_t *t);
/* 1 when t does not fit into the held set now. */
int kd_held_full(const kd_fwd_t *f, const kd_task_t *t);

#endif
