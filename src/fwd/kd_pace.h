/* Fire stage, part one: claimed tasks wait for their fire time, then for
 * forwarder.max_fire_rate. After a long outage many tasks are due at
 * once; a token bucket spreads their fires so targets and their consumers
 * are not flooded. Tasks wait in a FIFO in the order their timers came
 * due, which is due order, so firing keeps it. */
#ifndef KD_PACE_H
#define KD_PACE_H

#include "kd_fwd_state.h"

/* t's claim is won: it fires at its fire time (through the rate limit). */
void kd_pace_claimed(kd_fwd_t *f, kd_task_t *t);

#endif
