/* SPDX-License-Identifier: Apache-2.0 */
/* The topics a client has found to exist (kdelay_schedule's topic check):
 * a bounded set of names, open addressing, so a lookup per schedule costs
 * one hash whatever the number of targets. When it holds
 * KD_TOPICSET_MAX names it forgets them all before adding one more (each
 * is asked of the broker's metadata once again): the memory stays bounded
 * for an application with ever new target names. Not thread-safe: the
 * caller locks. */
#ifndef KD_TOPICSET_H
#define KD_TOPICSET_H

#include <stddef.h>

#define KD_TOPICSET_MAX 4096 /* names kept; twice as many slots */

typedef struct kd_topicset {
        char **slot; /* owned, KD_TOPICSET_MAX * 2 of them, NULL = empty */
        size_t cnt;
} kd_topicset_t;

/* 1 when name is in the set. */
int kd_topicset_has(const kd_topicset_t *s, const char *name);

/* Adds a copy of name: 0, or -1 out of memory (then not added: the caller
 * asks again next time). */
int kd_topicset_add(kd_topicset_t *s, const char *name);

/* Frees every name and the slots; the set is empty and usable again. */
void kd_topicset_clear(kd_topicset_t *s);

#endif
