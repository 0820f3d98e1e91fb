/* SPDX-License-Identifier: Apache-2.0 */
/* Reading the tasks still pending in the tier topics: every record the
 * forwarder group has not handled (kd_grouppos.h), from its committed
 * offsets to the end each partition had when the scan began, committed
 * records only. The scan never joins the group and commits nothing. */
#ifndef KD_SCAN_H
#define KD_SCAN_H

#include <stddef.h>
#include <stdint.h>

#include "kd_grouppos.h"
#include "kd_wire.h"

/* One record read: its place and the task decoded from it. Every pointer
 * lives during the callback only. */
typedef struct kd_scan_rec {
        const kd_grouppos_part_t *part;
        int64_t offset;
        const rd_kafka_message_t *msg;  /* key, value; headers in hdrs */
        const rd_kafka_headers_t *hdrs; /* NULL: none */
        kd_wire_defect_t defect;        /* KD_WIRE_OK: task is a valid task */
        kd_wire_task_t task;
} kd_scan_rec_t;

/* 0: go on; 1: stop (found what it wanted); -1: stop, failed (out of
 * memory: the callback says what failed through its own state). */
typedef int(kd_scan_cb_t)(const kd_scan_rec_t *rec, void *opaque);

/* How far a scan got. */
typedef struct kd_scan_progress {
        size_t parts, parts_done; /* partitions with records to read */
        uint64_t records;         /* read (handled ones not counted) */
        uint64_t to_read;         /* at most this many in all */
        int64_t elapsed_ms;
        int complete; /* every partition read to its end */
        /* The positions were read: to_read is all the scan had to read
         * (kd_scan_dead: the window's dead letters), whatever came of the
         * reading. 0: the scan failed before. */
        int counted;
} kd_scan_progress_t;

typedef struct kd_scan_opts {
        int64_t budget_ms; /* stop after this long; 0 = no bound */
        /* Called about once a second while the scan runs (may be NULL). */
        void (*progress)(const kd_scan_progress_t *p, void *opaque);
        void *opaque;
        /* kd_scan_dead, kd_scan_since: a topic that is missing (or has an
         * error other than authorization) reads as one without records,
         * not as an error; one kept from us stays an error. */
        int missing_empty;
} kd_scan_opts_t;

/* Scans conf's tier topics, calling cb for each record not handled.
 * *progp (may be NULL) gets how far it got: complete is 0 when the
 * budget ran out or cb stopped it. cb returning -1 is KDELAY_ERR_NO_MEMORY. */
kdelay_err_t kd_scan_run(const kdelay_conf_t *conf, const kd_scan_opts_t *opts,
                         kd_scan_cb_t *cb, void *opaque,
                         kd_scan_progress_t *progp, char *errstr,
                         size_t errstr_size);

/* The same over the dead-letter topic: every record appended at or after
 * since_ms (the record's timestamp: when it was dead-lettered), up to the
 * end each partition had when the scan began. rec->part->tier_ms is 0;
 * the reason is the record's kdelay-dead-reason header. */
kdelay_err_t kd_scan_dead(const kdelay_conf_t *conf, int64_t since_ms,
                          const kd_scan_opts_t *opts, kd_scan_cb_t *cb,
                          void *opaque, kd_scan_progress_t *progp, char *errstr,
                          size_t errstr_size);

/* The same over any topic: every record appended at or after since_ms, up
 * to the end each partition had when the scan began (kdelayctl stats reads
 * rate-limited targets with it). */
kdelay_err_t kd_scan_since(const kdelay_conf_t *conf, const char *topic,
                           int64_t since_ms, const kd_scan_opts_t *opts,
                           kd_scan_cb_t *cb, void *opaque,
                           kd_scan_progress_t *progp, char *errstr,
                           size_t errstr_size);

#endif
