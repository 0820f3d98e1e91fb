/* Per-partition offset tracker: which records read from a partition are
 * fully handled, and so up to where the partition may be committed.
 *
 * Records are added in offset order as they are read (gaps allowed:
 * compaction, transaction markers); each is later marked done in any order.
 * The commit point is the lowest offset not yet done, or, when everything
 * read is done, the offset after the last one read. Memory is one slot per
 * record between the commit point and the last read offset. */
#ifndef KD_OFFTRACK_H
#define KD_OFFTRACK_H

#include <stddef.h>
#include <stdint.h>

typedef struct kd_offtrack {
        int64_t *off; /* ring of offsets, oldest first */
        unsigned char *done;
        size_t head, len, cap;
        int64_t next;      /* offset after the last added; -1 = none yet */
        int64_t committed; /* last commit point handed out, -1 = none */
} kd_offtrack_t;

void kd_offtrack_init(kd_offtrack_t *t);
void kd_offtrack_clear(kd_offtrack_t *t);

/* Records that offset was read. It must exceed every offset added before;
 * -1 when it does not, or out of memory. */
int kd_offtrack_add(kd_offtrack_t *t, int64_t offset);

/* Marks offset done; -1 when it is not tracked (never added, or below the
 * commit point already). */
int kd_offtrack_done(kd_offtrack_t *t, int64_t offset);

/* Lowest offset not done, or the offset after the last added when all are
 * done; -1 before anything was added. */
int64_t kd_offtrack_commit_point(const kd_offtrack_t *t);

/* Number of records read and not yet done. */
size_t kd_offtrack_pending(const kd_offtrack_t *t);

#endif
