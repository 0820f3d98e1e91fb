/* SPDX-License-Identifier: Apache-2.0 */
/* The fate store on its own thread, so that a slow or hung MySQL never
 * blocks the event loop: the loop submits requests, one worker thread runs
 * them in submission order on the store, and finished requests come back
 * through a queue whose eventfd the loop polls.
 *
 * Why a thread and not MariaDB Connector/C's non-blocking API
 * (mysql_real_query_start/_cont): the thread keeps every store behind one
 * interface (the in-memory store of the tests hangs the same way), keeps
 * connect, schema check and reconnect inside the store, and adds one
 * thread, one mutex and one eventfd; the loop only ever touches finished
 * requests. docs/forwarder.md says more.
 *
 * Order: after a request fails, the worker fails every later one without
 * sending it ("not sent") until kd_fate_worker_resume, so a statement never
 * overtakes one that failed before it (FIRED marks before the claims
 * queued after them). */
#ifndef KD_FATE_WORKER_H
#define KD_FATE_WORKER_H

#include <stddef.h>
#include <stdint.h>

#include "kd_fate.h"

typedef struct kd_fate_worker kd_fate_worker_t;

typedef enum kd_fw_op {
        KD_FW_CLAIM,          /* kd_fate_claim(items) */
        KD_FW_TAKEOVER,       /* kd_fate_takeover(items) */
        KD_FW_MARK_FIRED,     /* kd_fate_mark_fired(ids) */
        KD_FW_MARK_DEAD,      /* kd_fate_mark_dead(ids, reason) */
        KD_FW_NOTE_CANCELLED, /* kd_fate_note_cancelled(ids, vals) */
        KD_FW_PING, /* kd_fate_status of the empty id, which no task has: a
                       primary-key lookup, the cheapest statement there is */
        KD_FW_MARK_PENDING,    /* kd_fate_pending_mark(journal, by) */
        KD_FW_CLEAR_PENDING,   /* kd_fate_pending_clear(journal, epoch, by,
                                 stale_ms) into pending */
        KD_FW_RENEW_PENDING,   /* kd_fate_pending_renew(journal, by) */
        KD_FW_APPLY_UNCLAIMED, /* kd_fate_apply_unclaimed(uitems) */
        KD_FW_MARK_RUNS        /* kd_fate_mark_runs(prefix, lo, hi) */
} kd_fw_op_t;

/* One request: what to send, and what came back. Made and freed by the
 * submitter; the worker owns it between submit and done. */
typedef struct kd_fw_req {
        struct kd_fw_req *next; /* the worker's queues */
        kd_fw_op_t op;
        size_t n;
        kd_fate_claim_t *items;      /* CLAIM, TAKEOVER: n items */
        char **ids;                  /* MARK_*, NOTE_CANCELLED: n ids */
        const char *reason;          /* MARK_DEAD: static */
        size_t *lens;                /* their lengths */
        int64_t *vals;               /* NOTE_CANCELLED: due times */
        const char *journal;         /* *_PENDING: borrowed (outlives r) */
        const char *by;              /* *_PENDING: borrowed */
        uint64_t epoch;              /* CLEAR_PENDING */
        int64_t stale_ms;            /* CLEAR_PENDING */
        kd_fate_pending_t pending;   /* CLEAR_PENDING: the marker after */
        kd_fate_unclaimed_t *uitems; /* APPLY_UNCLAIMED: n (owned by the
                                        submitter; ids point into ids) */
        char prefix[KD_FATE_RUN_PREFIX_MAX + 1]; /* MARK_RUNS */
        uint64_t *lo, *hi; /* MARK_RUNS: n runs (owned by the request) */
        /* Filled by the worker: */
        kdelay_err_t err;
        char errstr[512];
        int sent;            /* 0: failed unsent (see Order above) */
        uint64_t statements; /* sent for this request */
        /* For the submitter (untouched by the worker): */
        int64_t submitted_mono;
} kd_fw_req_t;

/* Starts the worker thread on store (borrowed: used only by the worker
 * until kd_fate_worker_stop returns). */
kdelay_err_t kd_fate_worker_start(kd_fate_worker_t **wp, kd_fate_store_t *store,
                                  char *errstr, size_t errstr_size);

/* Readable while finished requests wait for kd_fate_worker_done. */
int kd_fate_worker_fd(const kd_fate_worker_t *w);

/* Queues r (taken until it comes back from kd_fate_worker_done). */
void kd_fate_worker_submit(kd_fate_worker_t *w, kd_fw_req_t *r);

/* The next finished request (the caller owns it again), or NULL. */
kd_fw_req_t *kd_fate_worker_done(kd_fate_worker_t *w);

/* 1 when a request failed and later ones are failed unsent. */
int kd_fate_worker_failed(kd_fate_worker_t *w);
/* Sends requests again (after the submitter's backoff). */
void kd_fate_worker_resume(kd_fate_worker_t *w);

/* Stops the thread: a request in progress is interrupted
 * (kd_fate_store_interrupt), queued ones are not sent; then every
 * request not taken back is freed with free_req. The store is then the
 * caller's again, fit only to be destroyed. NULL is a no-op. */
void kd_fate_worker_stop(kd_fate_worker_t *w, void (*free_req)(kd_fw_req_t *r));

#endif
