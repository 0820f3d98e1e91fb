/* SPDX-License-Identifier: Apache-2.0 */
/* kdelayctl dead replay, the copies replayed before and still pending in
 * the tier topics (no fate yet: not due, or no forwarder fired them). */
#ifndef REPLAY_PENDING_H
#define REPLAY_PENDING_H

#include <stddef.h>

#include <kdelay/kdelay.h>

/* The replayed copies still pending in the tier topics: the ids of the
 * records with kdelay-replay-of, and where each waits. */
typedef struct kd_replay_pending {
        char id[KDELAY_ID_MAX + 32];
        char tier_topic[256];
} kd_replay_pending_t;

typedef struct kd_replay_pendings {
        kd_replay_pending_t *v; /* owned: free() it */
        size_t cnt, cap;
        int complete; /* every tier partition read */
        int oom;
} kd_replay_pendings_t;

/* Reads conf's tier topics' pending records once (at most 30 s) for
 * replayed copies into *p; a scan cut short or failed is said on stderr
 * (p->complete 0). */
void kd_replay_pending_read(const kdelay_conf_t *conf, kd_replay_pendings_t *p);
/* The pending copy with this id, or NULL. */
const kd_replay_pending_t *kd_replay_pending_find(const kd_replay_pendings_t *p,
                                                  const char *id);

#endif
