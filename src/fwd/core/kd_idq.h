/* SPDX-License-Identifier: Apache-2.0 */
/* A queue of task ids, each with a value, waiting for one batched
 * fate-store statement (FIRED marks, due times of cancelled tasks). A
 * FIFO: taking the first n costs n, whatever waits behind them (a drain
 * queues tens of thousands of marks). */
#ifndef KD_IDQ_H
#define KD_IDQ_H

#include <stddef.h>
#include <stdint.h>

typedef struct kd_idq {
        char **ids;    /* owned strings, entries head .. head + len - 1 */
        int64_t *vals; /* parallel to ids */
        int64_t *aux;  /* a second value, parallel to ids; NULL until the
                          first kd_idq_push2 (then 0 for entries before) */
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
/* kd_idq_push with a second value, aux. */
int kd_idq_push2(kd_idq_t *q, const char *id, int64_t val, int64_t aux);

/* Entry i (i < len) from the first: its id (the queue's) and value. */
static inline const char *kd_idq_id(const kd_idq_t *q, size_t i)
{
        return q->ids[q->head + i];
}
static inline int64_t kd_idq_val(const kd_idq_t *q, size_t i)
{
        return q->vals[q->head + i];
}
static inline int64_t kd_idq_aux(const kd_idq_t *q, size_t i)
{
        return q->aux ? q->aux[q->head + i] : 0;
}

#endif
