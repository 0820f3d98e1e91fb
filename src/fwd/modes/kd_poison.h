/* SPDX-License-Identifier: Apache-2.0 */
/* The records of aborted transactions (exactly_once): which source
 * records went into the open transaction, and, for each record of an
 * aborted one, how often that happened and why. A record whose
 * transaction keeps aborting is produced alone, in a transaction of its
 * own (a solo transaction), so that its innocent companions commit
 * without it; one whose solo transaction aborts is the culprit and is
 * dead-lettered. Records are keyed by a 64-bit hash of (tier topic,
 * partition, offset, produce kind): a collision only makes an innocent
 * record go solo once, which costs time, never a fate. */
#ifndef KD_POISON_H
#define KD_POISON_H

#include <stddef.h>
#include <stdint.h>

#include <librdkafka/rdkafka.h>

#include "core/kd_task.h"

#define KD_POISON_MAX     4096 /* records remembered, oldest replaced */
#define KD_POISON_BUCKETS 8192
/* How long the records of a refused batch wait for its likeliest culprit
 * to go alone first (it may never come: read by another forwarder, or
 * dead-lettered as a known refusal); then each goes alone. */
#define KD_POISON_FIRST_WAIT_MS 1000

typedef struct kd_poison_entry {
        uint64_t key;            /* 0 = free */
        int aborts;              /* shared transactions of it that aborted */
        int solo_tries;          /* its own (solo) transactions */
        int solo_fails;          /* of those, aborts that counted */
        rd_kafka_resp_err_t err; /* the last abort's cause */
        int64_t not_before_mono; /* no solo attempt before then */
        uint64_t commits_seen;   /* commits counted at its last solo abort */
        uint64_t group;          /* the abort that last blamed it (its refused
                                    batch's records share it); 0 = none */
        uint64_t first;          /* of its group, the likeliest culprit's key */
        int64_t first_until;     /* monotonic: until then the others of its
                                    group wait for the first to go alone */
        int forgiven;            /* known a victim (kd_refusals_explains):
                                    shared again, until it aborts again */
        uint64_t where;          /* its destination at its last abort
                                    (kd_poison_where) */
        struct kd_poison_entry *chain; /* same bucket */
} kd_poison_entry_t;

typedef struct kd_poison {
        kd_poison_entry_t *bucket[KD_POISON_BUCKETS]; /* into ring */
        kd_poison_entry_t ring[KD_POISON_MAX];
        size_t used, next;
        uint64_t *members; /* owned: keys produced into the open txn */
        uint64_t *where;   /* owned, per member: its destination */
        size_t members_len, members_cap;
        uint64_t *blamed; /* owned: members whose own delivery failed */
        int64_t *likely;  /* owned, per blamed: how likely the culprit */
        size_t blamed_len, blamed_cap, likely_cap;
        uint64_t groups; /* aborts that blamed records */
} kd_poison_t;

/* The key of t's source record produced as `as`; 0 when t has no
 * partition (revoked: never produced in a transaction again). */
uint64_t kd_poison_key(const kd_task_t *t, kd_task_state_t as);

/* The entry of key, or NULL. */
kd_poison_entry_t *kd_poison_find(kd_poison_t *p, uint64_t key);

/* The entry of key, made (zeroed) when missing; replaces the oldest
 * when full. */
kd_poison_entry_t *kd_poison_get(kd_poison_t *p, uint64_t key);

/* The destination of a produce to topic, as members name it: never 0,
 * which stands for a tier or the dead-letter topic (kdelay's own). */
uint64_t kd_poison_where(const char *topic);

/* Records key as produced into the open transaction, to destination
 * where; -1 when out of memory (the record is then not accounted if the
 * transaction aborts). */
int kd_poison_member(kd_poison_t *p, uint64_t key, uint64_t where);

/* Member key's own delivery failed for a cause that names it or its
 * target (a refused batch reports every record of that batch): when the
 * transaction aborts, only such members count, the others were its
 * victims. -1 when out of memory (then every member counts). */
int kd_poison_blame(kd_poison_t *p, uint64_t key, int64_t likely);

/* How likely t (produced as the cause err names) is the culprit of its
 * refused batch: a keyless record for INVALID_RECORD (a compacted
 * topic's refusal) above all, else the larger the likelier. */
int64_t kd_poison_likely(const kd_task_t *t, rd_kafka_resp_err_t err);

/* The culprit of group (key) was found alone: the other records blamed
 * with it were its victims and go back to shared batches. */
void kd_poison_forgive(kd_poison_t *p, uint64_t group, uint64_t key);

/* Record key of group was refused alone by its destination where (a
 * target refusal): the others of its group that went elsewhere were
 * victims and go back to shared transactions. */
void kd_poison_forgive_elsewhere(kd_poison_t *p, uint64_t group, uint64_t key,
                                 uint64_t where);

/* The open transaction aborted (at now_mono) because of cause: the abort
 * count of each blamed member, or of every member when none was blamed (a
 * refusal of the whole transaction), goes up; none when the cause is the
 * cluster's or the producer's own (kd_perr.h). Blamed members become a
 * group whose likeliest culprit goes alone first; so do the members of a
 * transaction a target refused as a whole (AddPartitionsToTxn: no record
 * named) when they went to more than one destination, the likeliest
 * culprit being one of the destination fewest of them went to. The
 * members are forgotten. */
void kd_poison_aborted(kd_poison_t *p, rd_kafka_resp_err_t cause,
                       int64_t now_mono);

/* Forgets the open transaction's members, entries kept (a solo one's
 * abort is accounted by its mode). */
void kd_poison_members_clear(kd_poison_t *p);

/* The open transaction committed: its members' entries go. */
void kd_poison_committed(kd_poison_t *p);

/* Frees the member list (the table itself is plain memory). */
void kd_poison_destroy(kd_poison_t *p);

#endif
