/* SPDX-License-Identifier: Apache-2.0 */
/* kdelayctl dead replay, the dead letters to replay: each copied out of
 * the scan, whether its reason is one a replay can fix, and the ids its
 * replay gets (replay_id.h). */
#ifndef REPLAY_ITEMS_H
#define REPLAY_ITEMS_H

#include <stddef.h>
#include <stdint.h>

#include <kdelay/kdelay.h>

#include "kd_scan.h"

/* A dead letter to replay, copied out of the scan. */
typedef struct kd_replay_item {
        int valid; /* its kdelay headers decode: id and target are set */
        char id[KDELAY_ID_MAX + 1];
        char target[256];
        char reason[40];
        int32_t partition; /* in the dead-letter topic */
        int64_t offset;
        void *key; /* owned; NULL = null key */
        size_t key_len;
        void *value; /* owned; NULL = null value */
        size_t value_len;
        rd_kafka_headers_t *user_hdrs; /* owned: its non-kdelay headers */
} kd_replay_item_t;

typedef struct kd_replay_items {
        kd_replay_item_t *v; /* owned */
        size_t cnt, cap;
} kd_replay_items_t;

/* Copies the dead letter rec (its kdelay-dead-reason: reason) into r; -1
 * when out of memory. */
int kd_replay_items_add(kd_replay_items_t *r, const kd_scan_rec_t *rec,
                        const char *reason);
void kd_replay_items_clear(kd_replay_items_t *r);

/* 1 when reason (kdelay-dead-reason) is one a user can fix (create the
 * topic, allow it, raise a limit), so that a replay may succeed; else 0. */
int kd_replay_reason_fixable(const char *reason);

/* The replay's id of item: fixed by its dead letter's place
 * (<id>~replay-<partition>-<offset>, a replay's own suffix replaced, or a
 * hash when that is too long: kd_replay_id); and the id earlier releases
 * gave it (kd_replay_id_nested), looked up too. */
void kd_replay_item_id(const kd_replay_item_t *it, char *buf, size_t size);
void kd_replay_item_id_nested(const kd_replay_item_t *it, char *buf,
                              size_t size);

#endif
