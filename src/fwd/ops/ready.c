/* SPDX-License-Identifier: Apache-2.0 */
/* Readiness (kd_ready.h). */
#include "kd_ready.h"

const char *kd_ready_why(const kd_fwd_t *f, int64_t now_ms)
{
        const kd_fwd_intake_t *in = &f->intake;
        int rebalance_long =
            !in->settled && (!in->revoked_at ||
                             now_ms - in->revoked_at > KD_READY_REBALANCE_MS);
        if (f->tiers_why[0])
                return f->tiers_why; /* the cause, first */
        if (rebalance_long)
                return in->revoked_at ? "rebalance running for over 60 s"
                                      : "not in a settled group";
        if (f->store.down)
                return "MySQL does not answer";
        if (f->metrics.v[KD_M_TXN_ABORT_STREAK] >= KD_READY_ABORT_STREAK)
                return "transactions keep aborting";
        if (*f->stop)
                return "stopping";
        return NULL;
}
