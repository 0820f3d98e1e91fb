/* SPDX-License-Identifier: Apache-2.0 */
/* forwarder.allowed_targets: the topics a task may name as its target —
 * topic names and `prefix*` patterns (docs/security.md). */
#ifndef KD_TARGETS_H
#define KD_TARGETS_H

#include <stddef.h>

#include <kdelay/error.h>

typedef struct kd_target_pat {
        const char *name; /* points into kd_targets_t.buf */
        size_t len;
        int prefix; /* 1: name is a prefix (the entry ended in '*') */
} kd_target_pat_t;

typedef struct kd_targets {
        char *buf;            /* owned: the entries, NUL-separated */
        kd_target_pat_t *pat; /* owned */
        size_t cnt;           /* 0 = every topic is allowed */
} kd_targets_t;

/* Parses list ("a, b.c, orders.*"; NULL or "" = everything) into *t
 * (cleared first; caller clears it). KDELAY_ERR_CONFIG with the entry at
 * fault in errstr. */
kdelay_err_t kd_targets_parse(kd_targets_t *t, const char *list, char *errstr,
                              size_t errstr_size);

/* Non-zero when topic (len bytes) is allowed by t. */
int kd_targets_allow(const kd_targets_t *t, const char *topic, size_t len);

void kd_targets_clear(kd_targets_t *t);

#endif
