/* SPDX-License-Identifier: Apache-2.0 */
/* Readiness (kd_ready.h). */
#include "kd_ops_state.h"
#include "kd_ready.h"
#include "pipeline/kd_intake.h"
#include "store/kd_store.h"

const char *kd_ready_why(const kd_fwd_t *f, int64_t now_ms)
{
        int64_t revoked_at = kd_intake_revoked_at(f);
        int rebalance_long =
            !kd_intake_settled(f) &&
            (!revoked_at || now_ms - revoked_at > KD_READY_REBALANCE_MS);
        if (f->ops->tiers_why[0])
                return f->ops->tiers_why; /* the cause, first */
        if (rebalance_long)
                return revoked_at ? "rebalance running for over 60 s"
                                  : "not in a settled group";
        if (kd_store_down(f))
                return "MySQL does not answer";
        if (f->metrics.v[KD_M_TXN_ABORT_STREAK] >= KD_READY_ABORT_STREAK)
                return "transactions keep aborting";
        if (*f->stop)
                return "stopping";
        return NULL;
}
