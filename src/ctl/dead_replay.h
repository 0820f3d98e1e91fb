/* SPDX-License-Identifier: Apache-2.0 */
/* kdelayctl dead replay: dead-lettered tasks scheduled again, once. */
#ifndef KD_DEAD_REPLAY_H
#define KD_DEAD_REPLAY_H

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

/* The replay's id of item: fixed by its dead letter's place
 * (<id>~replay-<partition>-<offset>, a replay's own suffix replaced, or a
 * hash when that is too long: kd_replay_id); and the id earlier releases
 * gave it (kd_replay_id_nested), looked up too. */
void kd_replay_item_id(const kd_replay_item_t *it, char *buf, size_t size);
void kd_replay_item_id_nested(const kd_replay_item_t *it, char *buf,
                              size_t size);

/* The replayed copies still pending in the tier topics: the ids of the
 * records with kdelay-replay-of, and where each waits. */
typedef struct kd_replay_pending {
        char id[KDELAY_ID_MAX + 32];
        char tier_topic[256];
} kd_replay_pending_t;

typedef struct kd_replay_pendings {
        kd_replay_pending_t *v; /* owned: free() it */
        size_t cnt, cap;
        int complete; /* every tier partition read */
        int oom;
} kd_replay_pendings_t;

/* Reads conf's tier topics' pending records once (at most 30 s) for
 * replayed copies into *p; a scan cut short or failed is said on stderr
 * (p->complete 0). */
void kd_replay_pending_read(const kdelay_conf_t *conf, kd_replay_pendings_t *p);
/* The pending copy with this id, or NULL. */
const kd_replay_pending_t *kd_replay_pending_find(const kd_replay_pendings_t *p,
                                                  const char *id);

typedef struct kd_replay_counts {
        size_t replayed;       /* or would be, in a dry run */
        size_t skipped;        /* decided otherwise, or replayed before */
        size_t refused;        /* malformed, a reason no replay fixes, or the
                                  target would refuse it (WOULD_FAIL) */
        size_t target_refused; /* of refused: by the target check */
        size_t errors;
} kd_replay_counts_t;

/* Replays each item of r through c, due at fire_at_ms: an answer per item
 * on stdout (a line "ID RESULT [NEW_ID] [WHY]", or a JSON object), the
 * totals in *counts. Each target is described once first (an admin
 * client of c's conf): an item its target would refuse as it did (the topic
 * missing, compacted and the record keyless, or the record larger than its
 * max.message.bytes) is not replayed: WOULD_FAIL in a dry run, REFUSED
 * otherwise. What cannot be read is not checked, and the answer says so.
 * 0, or -1 when out of memory (nothing done). */
int kd_replay_run(kdelay_client_t *c, const kd_replay_items_t *r,
                  int64_t fire_at_ms, int dry_run, int json,
                  kd_replay_counts_t *counts);

#endif
