/* SPDX-License-Identifier: Apache-2.0 */
/* Checks of the deployment, at start and after each assignment, then
 * every KD_TIERCHECK_MS while something is wrong, every
 * KD_TIERCHECK_IDLE_MS while all is well: each check is a blocking
 * metadata request and a group listing (at most KD_TIERCHECK_TIMEOUT_MS
 * each) on the loop, which a healthy forwarder should pay rarely.
 *
 * Another member of the group with this forwarder's instance name
 * (client.id): event=instance_in_use and gauge instance_in_use (warned
 * and counted: a dynamic member's stale session looks the same; a
 * static member is fenced by the broker instead, intake.c).
 *
 * Tier topics that do not exist: the forwarder asks the broker's metadata
 * at start and every KD_TIERCHECK_MS whether each tier topic of its ladder
 * exists. While some do not, it logs one line naming them and the command
 * that creates them (event=tier_topics_missing), /readyz answers 503 with
 * that reason and gauge tier_topics_missing counts them; once they all
 * exist, event=tier_topics_found. A metadata request without answer
 * changes nothing (the broker's unreachability shows elsewhere). */
#ifndef KD_TIERCHECK_H
#define KD_TIERCHECK_H

#include "core/kd_fwd_core.h"

#define KD_TIERCHECK_MS         30000
#define KD_TIERCHECK_IDLE_MS    600000
#define KD_TIERCHECK_SOON_MS    1000
#define KD_TIERCHECK_TIMEOUT_MS 2000

/* Checks at once and arms the timer (from the loop's start). */
void kd_tiercheck_start(kd_fwd_t *f);
/* Checks again KD_TIERCHECK_SOON_MS from now (an assignment: a member
 * may have joined). */
void kd_tiercheck_soon(kd_fwd_t *f);

/* The ladder's tier topics (and under forwarder.fate_outage_policy=fire
 * the journal) missing from md's topics into missing
 * (comma-separated, cut at missing_size), their count as the result;
 * *matching gets how many of md's topics are tier topics of the prefix
 * (the subscription's pattern). Pure, for tests. */
int kd_tiercheck_missing(const kdelay_conf_t *conf,
                         const struct rd_kafka_metadata *md, char *missing,
                         size_t missing_size, int *matching);

#endif
