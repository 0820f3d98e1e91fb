/* SPDX-License-Identifier: Apache-2.0 */
/* A queue of task ids, each with a value, waiting for one batched
 * fate-store statement (FIRED marks, due times of cancelled tasks). A
 * FIFO: taking the first n costs n, whatever waits behind them (a drain
 * queues tens of thousands of marks).
 *
 * And a batch of ids (kd_idbatch_t), each with two values, appended, read
 * in order and emptied as a whole (exactly_once's fires and dead letters
 * of the open transaction): the ids are copied into one buffer, so that
 * once the buffer and the entries have grown to a transaction's size, an
 * id costs no allocation. */
#ifndef KD_IDQ_H
#define KD_IDQ_H

#include <stddef.h>
#include <stdint.h>

typedef struct kd_idq {
        char **ids;    /* owned strings, entries head .. head + len - 1 */
        int64_t *vals; /* parallel to ids */
        size_t head;   /* the first entry */
        size_t len, cap;
} kd_idq_t;

void kd_idq_clear(kd_idq_t *q);
/* Appends a copy of id; -1 when out of memory (nothing queued). */
int kd_idq_push(kd_idq_t *q, const char *id, int64_t val);
/* Moves the first n entries (n <= len) into ids and vals: the strings
 * are the caller's then. */
void kd_idq_take(kd_idq_t *q, size_t n, char **ids, int64_t *vals);
/* Appends id itself (taken on success); -1 when out of memory (id stays
 * the caller's). */
int kd_idq_give(kd_idq_t *q, char *id, int64_t val);

/* Entry i (i < len) from the first: its id (the queue's) and value. */
static inline const char *kd_idq_id(const kd_idq_t *q, size_t i)
{
        return q->ids[q->head + i];
}
static inline int64_t kd_idq_val(const kd_idq_t *q, size_t i)
{
        return q->vals[q->head + i];
}

/* One entry of a kd_idbatch_t: its id at off in the buffer. */
typedef struct kd_idbatch_ent {
        size_t off;
        int64_t val, aux;
} kd_idbatch_ent_t;

typedef struct kd_idbatch {
        char *buf; /* owned: the ids, each with its NUL, back to back */
        size_t used, buf_cap;
        kd_idbatch_ent_t *ents; /* owned */
        size_t len, cap;
} kd_idbatch_t;

/* A batch that held more than this many bytes (ids and entries) gives
 * its memory back when emptied; a smaller one keeps it for the next. */
#define KD_IDBATCH_KEEP_BYTES (1u << 20)

/* Appends a copy of id with val and aux; -1 when out of memory (nothing
 * appended). */
int kd_idbatch_push(kd_idbatch_t *b, const char *id, int64_t val, int64_t aux);
/* Empties b (the memory kept, up to KD_IDBATCH_KEEP_BYTES). */
void kd_idbatch_reset(kd_idbatch_t *b);
/* Empties b and frees its memory. */
void kd_idbatch_free(kd_idbatch_t *b);

/* Entry i (i < len): its id (the batch's, valid until the next push,
 * reset or free) and values. */
static inline const char *kd_idbatch_id(const kd_idbatch_t *b, size_t i)
{
        return b->buf + b->ents[i].off;
}
static inline int64_t kd_idbatch_val(const kd_idbatch_t *b, size_t i)
{
        return b->ents[i].val;
}
static inline int64_t kd_idbatch_aux(const kd_idbatch_t *b, size_t i)
{
        return b->ents[i].aux;
}

#endif
