/* SPDX-License-Identifier: Apache-2.0 */
/* The fate store as the pipeline uses it: requests run on the store's
 * thread (kd_fate_worker.h) and come back to the loop, where their
 * statements are counted into the metric table and one backoff covers
 * every failure, so that claims and FIRED marks wait together and an
 * outage is logged once. Nothing here blocks the loop (revoke and
 * shutdown wait for answers through kd_loop_pump). */
#ifndef KD_STORE_H
#define KD_STORE_H

#include "core/kd_fwd_core.h"
#include "kd_fate_worker.h"

typedef struct kd_store_req kd_store_req_t;

/* Runs on the loop when r is back; r->fw.err says how it went; the
 * callback owns r (kd_store_req_free). */
typedef void(kd_store_done_fn)(kd_fwd_t *f, kd_store_req_t *r);

struct kd_store_req {
        kd_fw_req_t fw;
        kd_store_done_fn *done;
        /* CLAIM, TAKEOVER: the task of each item (borrowed);
         * APPLY_UNCLAIMED: the task waiting for each fire's apply, if any
         * (kd_settle_fired_held); NULL once the task went away
         * (kd_store_req_detach). */
        kd_task_t **tasks;
        size_t cap; /* items and tasks, or ids, lens and vals: room for */
        /* CLAIM, TAKEOVER: the items' ids, tokens and source topics, one
         * block (owned) that the items point into. */
        char *strs;
        size_t strs_len, strs_cap;
};

/* What the store tells the room that gave it, on the loop (as a request's
 * done callback): kd_store_down says what changed. */
typedef void(kd_store_event_fn)(kd_fwd_t *f);
/* What waits for the store, for its log lines: tasks held, claims
 * queued (the caller of kd_store_start's). */
typedef void(kd_store_load_fn)(const kd_fwd_t *f, size_t *held,
                               size_t *claim_queue);

/* f->store made, zeroed (the room's state, kd_store_state.h): -1 when out
 * of memory, else 0. */
int kd_store_state_new(kd_fwd_t *f);
/* Frees f->store and the fate store attached (NULL handle: nothing); the
 * handle NULL. After kd_store_stop. */
void kd_store_state_free(kd_fwd_t *f);
/* The fate store the store room runs its requests on: f's from now on
 * (kd_store_state_free destroys it). kd_store_detach gives it back to the
 * caller (a kd_fwd_new that failed leaves the caller's store the
 * caller's); kd_store_fate reads it. */
void kd_store_attach(kd_fwd_t *f, kd_fate_store_t *fate);
kd_fate_store_t *kd_store_detach(kd_fwd_t *f);
kd_fate_store_t *kd_store_fate(const kd_fwd_t *f);

/* Starts the store's thread on the fate store attached. changed(f) runs
 * whenever the store goes down or comes back (kd_store_down); load, what
 * its log lines say waits (NULL: none said). */
kdelay_err_t kd_store_start(kd_fwd_t *f, kd_store_event_fn *changed,
                            kd_store_load_fn *load, char *errstr,
                            size_t errstr_size);
/* Stops it, interrupting a call in progress; requests still out are freed
 * (their tasks must have been detached). */
void kd_store_stop(kd_fwd_t *f);
/* Readable when finished requests wait for kd_store_serve; -1 before
 * kd_store_start. */
int kd_store_fd(const kd_fwd_t *f);

/* A request for op with room for n items (claims) or n ids (marks), all
 * zero; NULL when out of memory. One that came back before and was kept
 * (kd_store_req_done) is used again: a catch-up's batches then cost no
 * allocation of their arrays (tens of KB each, which glibc consolidates
 * its free lists for). */
kd_store_req_t *kd_store_req_new(kd_fwd_t *f, kd_fw_op_t op, size_t n);
/* Copies id and token into item i of a claim or takeover request, and
 * links task t to it (t->req). -1 when out of memory. */
int kd_store_req_item(kd_store_req_t *r, size_t i, kd_task_t *t,
                      const char *row_owner);
/* Unlinks t from the request carrying its claim, if any. */
void kd_store_req_detach(kd_task_t *t);
/* Frees r with what it owns (item strings, ids). */
void kd_store_req_free(kd_store_req_t *r);
/* Done with r on the loop: what it owns is freed, r itself is kept for a
 * later kd_store_req_new (a few; the others are freed). */
void kd_store_req_done(kd_fwd_t *f, kd_store_req_t *r);

/* Sends r; done(f, r) runs on the loop when it is back. */
void kd_store_submit(kd_fwd_t *f, kd_store_req_t *r, kd_store_done_fn *done);
/* Runs the done callbacks of the requests that are back. */
void kd_store_serve(kd_fwd_t *f);

/* From now on, every request is sent after a mark of journal (the topic;
 * the caller's, as long as f lives) pending (kd_fate_pending_mark by the
 * instance),
 * until one such mark succeeds: the first statement MySQL answers after
 * an outage fired through is that mark (docs/fate-protocol.md), and
 * marked(f) runs when it succeeded (NULL: none). While gated, a down
 * store is tried every KD_STORE_GATE_RETRY_MS at most. */
void kd_store_gate(kd_fwd_t *f, const char *journal, kd_store_event_fn *marked);
/* 1 while gated (the mark not yet made). */
int kd_store_gated(const kd_fwd_t *f);

/* 1 while the store is down (logged as unavailable; mysql_up 0), and since
 * when (monotonic; meaningful while down). */
int kd_store_down(const kd_fwd_t *f);
int64_t kd_store_down_since(const kd_fwd_t *f);
/* Requests out on the store's thread. */
size_t kd_store_inflight(const kd_fwd_t *f);

/* 1 when a request may be sent now (not backing off after a failure). */
int kd_store_ready(const kd_fwd_t *f);
/* When the store may be tried again (monotonic ms); 0 = now. */
int64_t kd_store_retry_mono(const kd_fwd_t *f);
/* Something failed before a request could be sent (out of memory): back
 * off as for a failed statement. */
void kd_store_failed(kd_fwd_t *f, const char *what, const char *errstr);

#endif
