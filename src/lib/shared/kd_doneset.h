/* SPDX-License-Identifier: Apache-2.0 */
/* The done set that exactly_once commits as offset metadata: which
 * records after a partition's commit point are handled already, so that
 * the next owner of the partition skips exactly those. The forwarder
 * writes it (kd_offtrack_encode, src/lib/fwdonly/offtrack.c); the
 * forwarder taking a partition over and kdelayctl (client/grouppos: stats,
 * audit) read it here. Two forms; the writer writes the shorter:
 *   "kd1" then one ";<gap>.<len>" per run of done offsets, in base 36
 *     (0-9a-z): the run starts <gap> offsets after the end of the previous
 *     run (or after the commit point) and spans <len> + 1 offsets;
 *   "kdb;" then a bitmap, 6 offsets per character (kd_doneset_b64:
 *     A-Za-z0-9-_ = 0..63, lowest bit first): bit i says whether
 *     commit + 1 + i is done.
 * The bitmap's size depends only on the span from the commit point to the
 * last done offset, never on the order records completed in. */
#ifndef KD_DONESET_H
#define KD_DONESET_H

#include <stddef.h>
#include <stdint.h>

/* A closed range of offsets [first, last]. */
typedef struct kd_offrange {
        int64_t first, last;
} kd_offrange_t;

/* The bitmap form's 64 digits, value 0 first. */
extern const char kd_doneset_b64[65];

/* Parses a done set written for commit point `commit` into *ranges
 * (owned by the caller, free()), *cnt ranges in increasing order. NULL or
 * "" give none. -1 when the text is not a valid encoding or commit is
 * negative (then nothing is returned). */
int kd_doneset_decode(const char *text, size_t len, int64_t commit,
                      kd_offrange_t **ranges, size_t *cnt);

#endif
