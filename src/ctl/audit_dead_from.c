/* SPDX-License-Identifier: Apache-2.0 */
/* Where a FIRING row's dead letter is looked for (audit_dead_from.h). */
#include "audit_dead_from.h"

int64_t kd_audit_dead_from(int64_t updated_at_ms, int64_t fire_at_ms)
{
        int64_t from = updated_at_ms;
        if (fire_at_ms >= 0 && fire_at_ms < from)
                from = fire_at_ms;
        /* Never below 0: a negative time means "the end" (-1) or
         * another special position to a Kafka offsets-for-times lookup. */
        return from > KD_AUDIT_SLACK_MS ? from - KD_AUDIT_SLACK_MS : 0;
}
