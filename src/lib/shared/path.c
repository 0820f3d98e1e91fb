/* SPDX-License-Identifier: Apache-2.0 */
/* A task's path through the tiers (kd_path.h). */
#include "kd_path.h"

#include <string.h>

int64_t kd_path_due(int64_t fire_at_ms, int64_t append_ms, int64_t tier_ms,
                    int64_t hold_horizon_ms)
{
        int64_t due = fire_at_ms - hold_horizon_ms;
        int64_t tier_due = append_ms + tier_ms;
        return tier_due < due ? tier_due : due;
}

int kd_path_hops(int64_t fire_at_ms, int64_t now_ms, int64_t hold_horizon_ms,
                 int64_t lookahead_ms)
{
        return fire_at_ms - now_ms > hold_horizon_ms + lookahead_ms;
}

void kd_path_plan(const kd_path_rules_t *r, int64_t delay_ms, kd_path_t *out)
{
        const int64_t fire_at = delay_ms, lag = r->lag_ms > 0 ? r->lag_ms : 0;
        int64_t now = 0;
        memset(out, 0, sizeof(*out));
        size_t tier = kd_tiers_choose(r->tiers, fire_at - now);
        int64_t append = now;
        out->writes = 1;
        out->writes_by_tier[tier]++;
        /* Each hop lands in a tier no larger than the remaining delay, and
         * the remaining delay shrinks by at least the smallest tier or to
         * the hold horizon, so this ends; the bound is a guard. */
        for (unsigned guard = 0; guard < 1u << 20; guard++) {
                int64_t due =
                    kd_path_due(fire_at, append, r->tiers->v[tier].delay_ms,
                                r->hold_horizon_ms);
                int64_t wake = due - r->lookahead_ms + lag;
                if (wake > now)
                        now = wake;
                if (!kd_path_hops(fire_at, now, r->hold_horizon_ms,
                                  r->lookahead_ms))
                        break;
                tier = kd_tiers_choose(r->tiers, fire_at - now);
                append = now;
                out->writes++;
                out->hops++;
                out->writes_by_tier[tier]++;
                out->hops_by_tier[tier]++;
        }
        out->held_ms = fire_at > now ? fire_at - now : 0;
        out->writes++; /* the fire */
}
