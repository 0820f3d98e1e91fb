/* SPDX-License-Identifier: Apache-2.0 */
/* What the fate store's answer to a claim means for the task that asked
 * (claim.c acts on it). Pure: every case is a unit test
 * (tests/unit/fwd/pipeline/test_verdict.c). */
#ifndef KD_VERDICT_H
#define KD_VERDICT_H

#include "core/kd_fwd_core.h"
#include "kd_fate.h"

typedef enum kd_verdict {
        KD_VERDICT_CANCELLED,    /* cancelled: dropped, its due time noted */
        KD_VERDICT_DONE,         /* fired or dead-lettered already: dropped */
        KD_VERDICT_UNDECIDED,    /* no row (removed meanwhile): asked again a
                                    little later */
        KD_VERDICT_MINE,         /* this copy's claim: it fires */
        KD_VERDICT_OTHER_COPY,   /* another copy of the task in this
                                    assignment holds it: dropped */
        KD_VERDICT_TAKEOVER_OWN, /* this instance's previous process, or a
                                    generation of this process with no task
                                    left, holds it: taken over at once */
        KD_VERDICT_WAIT_LEASE,   /* another claimer's lease still runs: asked
                                    again when it passes */
        KD_VERDICT_TAKEOVER,     /* its claimer seems gone: taken over */
        KD_VERDICT_WAIT_FOREIGN  /* asked again after
                                    forwarder.foreign_claim_wait */
} kd_verdict_t;

/* What a verdict depends on. */
typedef struct kd_verdict_in {
        const kd_fate_claim_t *answer; /* fate, row_owner, lease_left_ms */
        const char *token;             /* the asking copy's claim token */
        const char *assignment;        /* prefix of this assignment's tokens */
        int own_earlier;               /* kd_verdict_own_earlier of the owner */
        int after_takeover;            /* the answer to a takeover */
        int takeover_at_once;          /* the mode's (kd_mode_ops.h) */
        int waited_foreign; /* the task waited the foreign wait once */
} kd_verdict_in_t;

kd_verdict_t kd_verdict(const kd_verdict_in_t *in);

/* 1 when owner is a token of this instance from an earlier process while
 * this forwarder is a static member (without static membership two
 * processes may share an instance name), or of this process from a
 * generation whose tasks are all gone (c->gone_upto). */
int kd_verdict_own_earlier(const kd_fwd_claim_t *c, int static_member,
                           const char *owner);

#endif
