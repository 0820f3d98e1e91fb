/* SPDX-License-Identifier: Apache-2.0 */
/* kdelayctl dead replay, its answer for each dead letter on stdout: a
 * line "ID RESULT [NEW_ID] [WHY]", or a JSON object. */
#ifndef REPLAY_ANSWER_H
#define REPLAY_ANSWER_H

#include "replay_items.h"
#include "replay_target.h"

/* The answer result (REPLAYED, SKIPPED, ...) for it: a line, or a JSON
 * object (json) with the target check's fields when chk checked. new_id,
 * why and chk may be NULL. */
void kd_replay_answer(int json, const kd_replay_item_t *it, const char *result,
                      const char *new_id, const char *why,
                      const kd_replay_check_t *chk);

#endif
