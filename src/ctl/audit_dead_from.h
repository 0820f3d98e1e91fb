/* SPDX-License-Identifier: Apache-2.0 */
/* kdelayctl audit: where in the dead-letter topic a FIRING row's dead
 * letter is looked for (a claimed task whose target refused it, its DEAD
 * mark lost with its forwarder). */
#ifndef AUDIT_DEAD_FROM_H
#define AUDIT_DEAD_FROM_H

#include <stdint.h>

/* The dead letters of rows judged handled are looked for from this long
 * before the earliest time below (clocks). */
#define KD_AUDIT_SLACK_MS 60000

/* The earliest record timestamp the dead letter of a FIRING row can
 * carry, give or take KD_AUDIT_SLACK_MS: before its claim (updated_at_ms,
 * stamped by the claimer's clock) and before its fire-at (fire_at_ms, the
 * producer's; -1 when not recorded), whichever is earlier, less the
 * slack. A claimer whose clock ran ahead stamps its claim that far in the
 * future, while its fire, and so its dead letter, still comes at fire-at
 * by the broker's clock: from the claim alone, the read would start after
 * the dead letter and judge the row delivered (FIRED). Never below 0
 * (a negative time is a special position to Kafka's offsets-for-times). */
int64_t kd_audit_dead_from(int64_t updated_at_ms, int64_t fire_at_ms);

#endif
