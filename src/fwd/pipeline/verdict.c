/* SPDX-License-Identifier: Apache-2.0 */
/* What a claim's answer means (kd_verdict.h). */
#include "kd_pipeline_state.h"
#include "kd_verdict.h"

#include <stdlib.h>
#include <string.h>

int kd_verdict_own_earlier(const kd_fwd_claim_t *c, int static_member,
                           const char *owner)
{
        size_t n = strlen(c->own_tag), b = strlen(c->boot_tag);
        if (strncmp(owner, c->own_tag, n))
                return 0; /* another instance */
        if (strncmp(owner + n, c->boot_tag, b))
                return static_member; /* an earlier process of this one */
        if (!c->gone_upto)
                return 0;
        char *end;
        unsigned long g = strtoul(owner + n + b, &end, 10);
        return *end == ':' && g <= c->gone_upto;
}

kd_verdict_t kd_verdict(const kd_verdict_in_t *in)
{
        const kd_fate_claim_t *c = in->answer;
        switch (c->fate) {
        case KDELAY_FATE_CANCELLED:
                return KD_VERDICT_CANCELLED;
        case KDELAY_FATE_FIRED:
        case KDELAY_FATE_DEAD: /* dead-lettered already: re-read */
                return KD_VERDICT_DONE;
        case KDELAY_FATE_FIRING:
                break;
        default:
                return KD_VERDICT_UNDECIDED;
        }
        if (!strcmp(c->row_owner, in->token))
                return KD_VERDICT_MINE;
        /* Another copy of this task (a hop repeated after a rebalance or
         * crash) holds the claim in this assignment: it fires, not this
         * one. */
        if (!strncmp(c->row_owner, in->assignment, strlen(in->assignment)))
                return KD_VERDICT_OTHER_COPY;
        /* Claimed by this instance's previous process (a static member
         * restarted under its stable instance: the broker lets one member
         * of an instance in, and exactly_once's transactional id fences the
         * old producer), or by a generation of this process that has no
         * task left: at once, no lease wait. */
        if (in->own_earlier && !in->after_takeover)
                return KD_VERDICT_TAKEOVER_OWN;
        /* Claimed by another process. Its lease, by MySQL's clock, says how
         * long that claim surely holds: a live claimer renews it, so it is
         * never taken over; one that died is taken over once it passed. */
        if (c->lease_left_ms > 0)
                return KD_VERDICT_WAIT_LEASE;
        /* A lease that passed: the claimer is dead or stalled — or it
         * delivered the task and its FIRED mark is late (after a MySQL
         * outage every lease has passed and marks wait for the store's
         * backoff), as leases are not renewed past delivery. At least
         * once, give the mark the foreign-claim wait first. */
        if (c->lease_left_ms == 0 && !in->after_takeover)
                return in->takeover_at_once || in->waited_foreign
                           ? KD_VERDICT_TAKEOVER
                           : KD_VERDICT_WAIT_FOREIGN;
        /* A claim without a lease (from before schema 3, or with
         * forwarder.claim_lease=0): its claimer is alive and about to mark
         * it FIRED, or died: look again a little later, then take it over.
         * Exactly-once takes it over at once: a committed transaction would
         * have marked this record done in its offsets. */
        if ((!in->takeover_at_once && !in->waited_foreign) ||
            in->after_takeover)
                return KD_VERDICT_WAIT_FOREIGN;
        return KD_VERDICT_TAKEOVER;
}
