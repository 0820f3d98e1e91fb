/* SPDX-License-Identifier: Apache-2.0 */
/* Per-partition offset tracker: which records read from a partition are
 * fully handled, and so up to where the partition may be committed.
 *
 * Records are added in offset order as they are read (gaps allowed:
 * compaction, transaction markers); each is later marked done in any order.
 * The commit point is the lowest offset not yet done, or, when everything
 * read is done, the offset after the last one read. Memory is one slot per
 * record between the commit point and the last read offset. The
 * forwarder's alone (src/lib/fwdonly/: not in libkdelay). */
#ifndef KD_OFFTRACK_H
#define KD_OFFTRACK_H

#include <stddef.h>
#include <stdint.h>

#include "kd_doneset.h"

typedef struct kd_offtrack {
        int64_t *off; /* ring of offsets, oldest first */
        unsigned char *done;
        size_t head, len, cap;
        int64_t next; /* offset after the last added; -1 = none yet */
} kd_offtrack_t;

void kd_offtrack_init(kd_offtrack_t *t);
void kd_offtrack_clear(kd_offtrack_t *t);

/* Records that offset was read. It must exceed every offset added before;
 * -1 when it does not, or out of memory. */
int kd_offtrack_add(kd_offtrack_t *t, int64_t offset);

/* Marks offset done (again is a no-op); -1 when it is not tracked (never
 * added, or below the commit point already). */
int kd_offtrack_done(kd_offtrack_t *t, int64_t offset);

/* Lowest offset not done, or the offset after the last added when all are
 * done; -1 before anything was added. */
int64_t kd_offtrack_commit_point(const kd_offtrack_t *t);

/* Number of records read and not yet done. */
size_t kd_offtrack_pending(const kd_offtrack_t *t);

/* The done set above the commit point, for exactly-once commits: which
 * records after the first unhandled one are handled already, so that the
 * next owner of the partition skips exactly those; the shorter of
 * kd_doneset.h's two forms is written (kd_doneset_decode reads it).
 * `commit` is the commit point (see kd_offtrack_commit_after); `tail`
 * (tail_cnt ranges, increasing, all above commit and at or after the next
 * offset to read) are done records not read yet, included. Writes at most
 * size - 1 chars; -1 when neither form fits or commit is negative. */
int kd_offtrack_encode(const kd_offtrack_t *t, int64_t commit,
                       const kd_offrange_t *tail, size_t tail_cnt, char *buf,
                       size_t size);

/* The offset to commit: the commit point, or `fallback` when nothing was
 * read, moved past tail ranges (done, not read yet) that start at it;
 * *tail and *tail_cnt are advanced past those. -1 when there is none. */
int64_t kd_offtrack_commit_after(const kd_offtrack_t *t, int64_t fallback,
                                 const kd_offrange_t **tail, size_t *tail_cnt);

#endif
