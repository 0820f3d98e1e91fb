/* SPDX-License-Identifier: Apache-2.0 */
/* Pending tasks, found by scanning the tier topics (kd_scan.h) and
 * keeping those whose fate is not decided: what kdelayctl tasks
 * find/list, status --scan, kdelay_find and kdelay_reschedule read. */
#ifndef KD_TASKS_H
#define KD_TASKS_H

#include <stddef.h>
#include <stdint.h>

#include <kdelay/kdelay.h>

#include "kd_scan.h"

typedef struct kd_tasks_query {
        const char *id;        /* only this id (the scan stops at its first
                                  record); NULL = every task */
        const char *target;    /* only tasks for this topic; NULL = any */
        int64_t due_after_ms;  /* fire-at >= this (INT64_MIN: any) */
        int64_t due_before_ms; /* fire-at < this (INT64_MAX: any) */
        size_t limit;          /* stop after this many; 0 = no bound */
        int any_fate;          /* keep FIRED and CANCELLED tasks too */
        int keep_record;       /* copy the first match's key, value, headers */
        kd_scan_opts_t scan;
} kd_tasks_query_t;

/* One task found; tier_ms is its tier topic's delay. */
typedef struct kd_tasks_item {
        kdelay_pending_t p;
        int64_t tier_ms;
} kd_tasks_item_t;

typedef struct kd_tasks_found {
        kd_tasks_item_t *items; /* owned: by fire-at, then id; one per id
                                   (a task in two tiers while it hops is
                                   shown where it goes: the shorter) */
        size_t cnt, cap;
        size_t matched; /* records that matched, before the fates */
        kd_scan_progress_t prog;
        /* keep_record: the first match's record (owned). */
        void *key, *value; /* NULL: null key / value */
        size_t key_len, value_len;
        rd_kafka_headers_t *user_hdrs; /* its headers not named kdelay-*,
                                          NULL when none */
} kd_tasks_found_t;

/* Runs q through client's conf and fate store into *out (zeroed first).
 * An incomplete scan (budget spent) is not an error: out->prog says. */
kdelay_err_t kd_tasks_find(kdelay_client_t *client, const kd_tasks_query_t *q,
                           kd_tasks_found_t *out, char *errstr,
                           size_t errstr_size);

void kd_tasks_found_clear(kd_tasks_found_t *out);

/* A query for every task: no bounds, no limit. */
void kd_tasks_query_init(kd_tasks_query_t *q);

#endif
