/* SPDX-License-Identifier: Apache-2.0 */
/* Under the claim and settle stages, fate-store access (kd_store.h): owns
 * f->store: the store's thread, the requests out, the backoff and the
 * availability state. */
#include "kd_store.h"
#include "kd_store_state.h"

#include <stdlib.h>
#include <string.h>

#include "kd_log.h"
#include "kd_util.h"

static const char *const op_name[] = {
    [KD_FW_CLAIM] = "claim",
    [KD_FW_TAKEOVER] = "takeover",
    [KD_FW_MARK_FIRED] = "mark_fired",
    [KD_FW_MARK_DEAD] = "mark_dead",
    [KD_FW_NOTE_CANCELLED] = "note_cancelled",
    [KD_FW_PING] = "ping",
    [KD_FW_MARK_PENDING] = "reconcile_mark",
    [KD_FW_CLEAR_PENDING] = "reconcile_clear",
    [KD_FW_RENEW_PENDING] = "reconcile_renew",
    [KD_FW_APPLY_UNCLAIMED] = "apply_unclaimed",
    [KD_FW_MARK_RUNS] = "mark_runs",
};

/* While nothing goes to the store, a ping every KD_STORE_PING_MS keeps
 * mysql_up (and /readyz) true to it; checked every KD_STORE_PING_CHECK_MS.
 */
#define KD_STORE_PING_MS       5000
#define KD_STORE_PING_CHECK_MS 1000
/* Requests out and none back for this long: the store is down (logged,
 * mysql_up 0) though no statement failed yet (a hung server fails one only
 * after the client's 30 s read timeout). */
#define KD_STORE_STALL_MS 5000
/* While gated (kd_store_gate): the longest backoff, and how often a ping
 * (which carries the mark) is looked at: MySQL's return is found this
 * soon, and the mark is its first statement. */
#define KD_STORE_GATE_RETRY_MS 50
#define KD_STORE_GATE_CHECK_MS 25

static void store_down(kd_fwd_t *f, int64_t since_mono);
static void req_destroy(kd_store_req_t *r);
static void check_stalled(kd_fwd_t *f, int64_t now);

static void ping_done(kd_fwd_t *f, kd_store_req_t *r)
{
        kd_store_req_done(f, r);
}

static void ping_cb(kd_timer_t *tm, void *arg)
{
        kd_fwd_t *f = arg;
        kd_fwd_store_t *s = f->store;
        int64_t now = kd_fwd_mono_ms(f);
        check_stalled(f, now);
        /* While down, a ping as soon as the backoff allows: nothing else
         * may be sent (fires without a claim), and its answer ends the
         * outage. */
        if (s->inflight == 0 && kd_store_ready(f) &&
            (s->down || s->gate ||
             now - s->last_done_mono >= KD_STORE_PING_MS)) {
                kd_store_req_t *r = kd_store_req_new(f, KD_FW_PING, 0);
                if (r)
                        kd_store_submit(f, r, ping_done);
        }
        if (kd_timer_arm(&f->timers, tm, KD_CLOCK_MONO,
                         now + (s->gate ? KD_STORE_GATE_CHECK_MS
                                        : KD_STORE_PING_CHECK_MS),
                         ping_cb, f))
                kd_fwd_oom(f, "store_ping");
}

int kd_store_state_new(kd_fwd_t *f)
{
        f->store = calloc(1, sizeof(*f->store));
        return f->store ? 0 : -1;
}

void kd_store_state_free(kd_fwd_t *f)
{
        if (!f->store)
                return;
        kd_fate_store_destroy(f->store->fate);
        free(f->store);
        f->store = NULL;
}

void kd_store_attach(kd_fwd_t *f, kd_fate_store_t *fate)
{
        f->store->fate = fate;
}

kd_fate_store_t *kd_store_detach(kd_fwd_t *f)
{
        kd_fate_store_t *fate = f->store->fate;
        f->store->fate = NULL;
        return fate;
}

kd_fate_store_t *kd_store_fate(const kd_fwd_t *f)
{
        return f->store->fate;
}

int kd_store_down(const kd_fwd_t *f)
{
        return f->store->down;
}

int64_t kd_store_down_since(const kd_fwd_t *f)
{
        return f->store->down_since_mono;
}

int kd_store_gated(const kd_fwd_t *f)
{
        return f->store->gate;
}

size_t kd_store_inflight(const kd_fwd_t *f)
{
        return f->store->inflight;
}

/* What waits for the store, as its caller said (0 and 0: nothing said). */
static void load(const kd_fwd_t *f, size_t *held, size_t *claim_queue)
{
        *held = *claim_queue = 0;
        if (f->store->load)
                f->store->load(f, held, claim_queue);
}

kdelay_err_t kd_store_start(kd_fwd_t *f, kd_store_event_fn *changed,
                            kd_store_load_fn *load_fn, char *errstr,
                            size_t errstr_size)
{
        kd_fwd_store_t *s = f->store;
        s->changed = changed;
        s->load = load_fn;
        s->last_done_mono = kd_fwd_mono_ms(f);
        if (!s->gate_req && !(s->gate_req = calloc(1, sizeof(*s->gate_req))))
                return kd_fail(KDELAY_ERR_NO_MEMORY, errstr, errstr_size,
                               "out of memory");
        kd_timer_init(&s->ping, ping_cb, f);
        if (kd_timer_arm(&f->timers, &s->ping, KD_CLOCK_MONO,
                         kd_fwd_mono_ms(f) + KD_STORE_PING_CHECK_MS, ping_cb,
                         f))
                return kd_fail(KDELAY_ERR_NO_MEMORY, errstr, errstr_size,
                               "out of memory");
        return kd_fate_worker_start(&s->worker, f->store->fate, errstr,
                                    errstr_size);
}

static void free_req(kd_fw_req_t *fw)
{
        kd_store_req_free((kd_store_req_t *)fw);
}

void kd_store_stop(kd_fwd_t *f)
{
        kd_fate_worker_stop(f->store->worker, free_req);
        f->store->worker = NULL;
        if (!f->store->gate_out) /* else freed with the requests out */
                free(f->store->gate_req);
        f->store->gate_req = NULL;
        f->store->gate_out = 0;
        f->store->inflight = 0;
        for (int k = 0; k < 2; k++)
                while (f->store->spares[k] > 0)
                        req_destroy(f->store->spare[k][--f->store->spares[k]]);
}

int kd_store_fd(const kd_fwd_t *f)
{
        return f->store->worker ? kd_fate_worker_fd(f->store->worker) : -1;
}

/* The arrays a request of op needs: 0 none kept (ping; MARK_RUNS, a few
 * a second, allocates its lo and hi each time), 1 items and tasks, 2 ids,
 * lens, vals and tasks (APPLY_UNCLAIMED's). */
static int req_kind(kd_fw_op_t op)
{
        if (op == KD_FW_PING || op == KD_FW_MARK_PENDING ||
            op == KD_FW_CLEAR_PENDING || op == KD_FW_RENEW_PENDING ||
            op == KD_FW_MARK_RUNS)
                return 0;
        return op == KD_FW_CLAIM || op == KD_FW_TAKEOVER ? 1 : 2;
}

/* r made ready for op with n items or ids (n <= r->cap), all zero. */
static void req_reset(kd_store_req_t *r, kd_fw_op_t op, size_t n)
{
        kd_store_req_t keep = *r;
        memset(r, 0, sizeof(*r));
        r->fw.op = op;
        r->fw.n = n;
        r->cap = keep.cap;
        r->strs = keep.strs;
        r->strs_cap = keep.strs_cap;
        if ((r->fw.items = keep.fw.items))
                memset(r->fw.items, 0, n * sizeof(*r->fw.items));
        if ((r->tasks = keep.tasks))
                memset(r->tasks, 0, n * sizeof(*r->tasks));
        if ((r->fw.ids = keep.fw.ids))
                memset(r->fw.ids, 0, n * sizeof(*r->fw.ids));
        if ((r->fw.lens = keep.fw.lens))
                memset(r->fw.lens, 0, n * sizeof(*r->fw.lens));
        if ((r->fw.vals = keep.fw.vals))
                memset(r->fw.vals, 0, n * sizeof(*r->fw.vals));
}

/* The smallest kept request fit for op with n entries, taken from the
 * spares; NULL = none. */
static kd_store_req_t *spare_take(kd_fwd_store_t *s, kd_fw_op_t op, size_t n)
{
        int k = req_kind(op);
        if (k == 0)
                return NULL;
        kd_store_req_t **v = s->spare[k - 1];
        size_t *cnt = &s->spares[k - 1], best = *cnt;
        for (size_t i = 0; i < *cnt; i++)
                if (v[i]->cap >= n &&
                    (best == *cnt || v[i]->cap < v[best]->cap))
                        best = i;
        if (best == *cnt)
                return NULL;
        kd_store_req_t *r = v[best];
        v[best] = v[--*cnt];
        v[*cnt] = NULL;
        req_reset(r, op, n);
        return r;
}

kd_store_req_t *kd_store_req_new(kd_fwd_t *f, kd_fw_op_t op, size_t n)
{
        kd_store_req_t *r = spare_take(f->store, op, n);
        if (r)
                return r;
        if (!(r = calloc(1, sizeof(*r))))
                return NULL;
        r->fw.op = op;
        r->fw.n = n;
        r->cap = n;
        int ok = 1;
        if (req_kind(op) == 1) {
                r->fw.items = calloc(n, sizeof(*r->fw.items));
                r->tasks = calloc(n, sizeof(*r->tasks));
                ok = r->fw.items && r->tasks;
        } else if (req_kind(op) == 2) {
                r->fw.ids = calloc(n, sizeof(*r->fw.ids));
                r->fw.lens = calloc(n, sizeof(*r->fw.lens));
                r->fw.vals = calloc(n, sizeof(*r->fw.vals));
                r->tasks = calloc(n, sizeof(*r->tasks));
                ok = r->fw.ids && r->fw.lens && r->fw.vals && r->tasks;
        } else if (op == KD_FW_MARK_RUNS) {
                r->fw.lo = calloc(n, sizeof(*r->fw.lo));
                r->fw.hi = calloc(n, sizeof(*r->fw.hi));
                ok = r->fw.lo && r->fw.hi;
        }
        if (!ok) {
                kd_store_req_free(r);
                return NULL;
        }
        return r;
}

/* Room for need more bytes in r's string block; -1 when out of memory.
 * A new block takes the items' strings along (they point into it). */
static int strs_room(kd_store_req_t *r, size_t need)
{
        if (r->strs_len + need <= r->strs_cap)
                return 0;
        size_t cap = r->strs_cap ? r->strs_cap * 2 : 64 * (r->cap ? r->cap : 1);
        if (cap < r->strs_len + need)
                cap = r->strs_len + need;
        char *b = malloc(cap);
        if (!b)
                return -1;
        if (r->strs_len)
                memcpy(b, r->strs, r->strs_len);
        for (size_t i = 0; i < r->fw.n; i++) {
                kd_fate_claim_t *it = &r->fw.items[i];
                if (!it->id)
                        continue;
                it->id = b + (it->id - r->strs);
                it->token = b + (it->token - r->strs);
                if (it->src_topic)
                        it->src_topic = b + (it->src_topic - r->strs);
        }
        free(r->strs);
        r->strs = b;
        r->strs_cap = cap;
        return 0;
}

int kd_store_req_item(kd_store_req_t *r, size_t i, kd_task_t *t,
                      const char *row_owner)
{
        kd_fate_claim_t *it = &r->fw.items[i];
        size_t id_len = t->rec.id_len, tok_len = strlen(t->token);
        size_t top_len = t->part ? t->part->topic_len : 0;
        /* Copies: the id, the token, the source topic (the task may be gone
         * before the worker is done with the item). */
        if (strs_room(r, id_len + tok_len + top_len + 3))
                return -1;
        char *buf = r->strs + r->strs_len;
        r->strs_len += id_len + tok_len + top_len + 3;
        memcpy(buf, t->rec.id, id_len + 1);
        memcpy(buf + id_len + 1, t->token, tok_len + 1);
        it->id = buf;
        it->id_len = id_len;
        it->token = buf + id_len + 1;
        it->fire_at_ms = t->rec.fire_at_ms;
        it->src_topic = NULL;
        if (t->part) {
                char *topic = buf + id_len + tok_len + 2;
                memcpy(topic, t->part->topic, top_len + 1);
                it->src_topic = topic;
                it->src_partition = t->part->partition;
                it->src_offset = t->rec.offset;
        }
        if (row_owner)
                kd_strlcpy(it->row_owner, row_owner, sizeof(it->row_owner));
        r->tasks[i] = t;
        t->req = r;
        t->req_slot = i;
        return 0;
}

void kd_store_req_detach(kd_task_t *t)
{
        if (t->req) {
                t->req->tasks[t->req_slot] = NULL;
                t->req = NULL;
        }
}

/* Frees what r's entries own and unlinks its tasks; r keeps its arrays. */
static void req_clear(kd_store_req_t *r)
{
        kd_fw_req_t *fw = &r->fw;
        for (size_t i = 0; r->tasks && i < fw->n; i++)
                if (r->tasks[i])
                        r->tasks[i]->req = NULL;
        for (size_t i = 0; fw->ids && i < fw->n; i++) {
                free(fw->ids[i]);
                fw->ids[i] = NULL;
        }
        free(fw->uitems);
        fw->uitems = NULL;
        r->strs_len = 0;
}

static void req_destroy(kd_store_req_t *r)
{
        free(r->fw.items);
        free(r->fw.ids);
        free(r->fw.lens);
        free(r->fw.vals);
        free(r->fw.lo);
        free(r->fw.hi);
        free(r->tasks);
        free(r->strs);
        free(r);
}

void kd_store_req_free(kd_store_req_t *r)
{
        if (!r)
                return;
        req_clear(r);
        req_destroy(r);
}

void kd_store_req_done(kd_fwd_t *f, kd_store_req_t *r)
{
        if (!r)
                return;
        req_clear(r);
        int k = req_kind(r->fw.op);
        if (k == 0) {
                req_destroy(r);
                return;
        }
        kd_store_req_t **v = f->store->spare[k - 1];
        size_t *cnt = &f->store->spares[k - 1];
        if (*cnt < KD_STORE_SPARES) {
                v[(*cnt)++] = r;
                return;
        }
        /* Full: the largest are kept (a catch-up's batches). */
        size_t small = 0;
        for (size_t i = 1; i < *cnt; i++)
                if (v[i]->cap < v[small]->cap)
                        small = i;
        if (v[small]->cap < r->cap) {
                kd_store_req_t *out = v[small];
                v[small] = r;
                r = out;
        }
        req_destroy(r);
}

static void submit(kd_fwd_t *f, kd_store_req_t *r, kd_store_done_fn *done);

/* r is s->gate_req: the store keeps it for the next mark (not freed). */
static void gate_done(kd_fwd_t *f, kd_store_req_t *r)
{
        kd_fwd_store_t *s = f->store;
        s->gate_out = 0;
        if (!r->fw.err) {
                char q[300];
                s->gate = 0;
                kd_log(f->conf, KDELAY_LOG_NOTICE,
                       "event=reconcile_pending_marked journal=%s "
                       "action=cancels_answer_unknown_until_applied",
                       kd_log_quote(s->gate_journal, q, sizeof(q)));
                /* the stages that waited for the store look again */
                if (s->gate_marked)
                        s->gate_marked(f);
        }
}

void kd_store_gate(kd_fwd_t *f, const char *journal, kd_store_event_fn *marked)
{
        f->store->gate = 1;
        f->store->gate_journal = journal;
        f->store->gate_marked = marked;
}

void kd_store_submit(kd_fwd_t *f, kd_store_req_t *r, kd_store_done_fn *done)
{
        kd_fwd_store_t *s = f->store;
        if (s->gate && !s->gate_out) {
                kd_store_req_t *m = s->gate_req;
                memset(m, 0, sizeof(*m));
                m->fw.op = KD_FW_MARK_PENDING;
                m->fw.journal = s->gate_journal;
                m->fw.by = f->instance;
                s->gate_out = 1;
                submit(f, m, gate_done);
        }
        submit(f, r, done);
}

static void submit(kd_fwd_t *f, kd_store_req_t *r, kd_store_done_fn *done)
{
        r->done = done;
        r->fw.submitted_mono = kd_fwd_mono_ms(f);
        if (f->store->inflight == 0)
                f->store->waiting_since_mono = r->fw.submitted_mono;
        f->store->inflight++;
        kd_metric_set(&f->metrics, KD_M_STORE_INFLIGHT,
                      (int64_t)f->store->inflight);
        kd_fate_worker_submit(f->store->worker, &r->fw);
}

int kd_store_ready(const kd_fwd_t *f)
{
        return !f->store->halted && kd_fwd_mono_ms(f) >= f->store->retry_mono;
}

int64_t kd_store_retry_mono(const kd_fwd_t *f)
{
        return f->store->retry_mono;
}

void kd_store_failed(kd_fwd_t *f, const char *what, const char *errstr)
{
        kd_fwd_store_t *s = f->store;
        int64_t b = s->backoff_ms ? s->backoff_ms * 2 : 100;
        if (b > f->conf->fwd_retry_max_ms)
                b = f->conf->fwd_retry_max_ms;
        if (s->gate && b > KD_STORE_GATE_RETRY_MS)
                b = KD_STORE_GATE_RETRY_MS;
        s->backoff_ms = b;
        s->retry_mono = kd_fwd_mono_ms(f) + b;
        kd_metric_set(&f->metrics, KD_M_MYSQL_UP, 0);
        if (!s->down) {
                char q[600];
                size_t held, claims;
                store_down(f, kd_fwd_mono_ms(f));
                load(f, &held, &claims);
                kd_log(f->conf, KDELAY_LOG_ERROR,
                       "event=mysql_unavailable what=%s err=%s held=%zu "
                       "action=hold_and_retry",
                       what, kd_log_quote(errstr, q, sizeof(q)), held);
        }
}

/* The store is down since since_mono: mysql_up 0, /readyz not ready; the
 * caller logs why, once. */
static void store_down(kd_fwd_t *f, int64_t since_mono)
{
        f->store->down = 1;
        f->store->down_since_mono = since_mono;
        kd_metric_set(&f->metrics, KD_M_MYSQL_UP, 0);
        if (f->store->changed)
                f->store->changed(f);
}

/* Logs the store down once its requests out have had no answer for
 * KD_STORE_STALL_MS (a hung server: nothing fails for a while). */
static void check_stalled(kd_fwd_t *f, int64_t now)
{
        kd_fwd_store_t *s = f->store;
        int64_t waited = now - s->waiting_since_mono;
        if (s->down || s->inflight == 0 || waited < KD_STORE_STALL_MS)
                return;
        size_t held, claims;
        store_down(f, s->waiting_since_mono);
        load(f, &held, &claims);
        kd_log(f->conf, KDELAY_LOG_WARNING,
               "event=mysql_unavailable what=no_answer since_ms=%lld "
               "requests_out=%zu held=%zu action=wait",
               (long long)waited, s->inflight, held);
}

static void store_ok(kd_fwd_t *f)
{
        kd_fwd_store_t *s = f->store;
        s->backoff_ms = 0;
        s->retry_mono = 0;
        kd_metric_set(&f->metrics, KD_M_MYSQL_UP, 1);
        if (s->down) {
                size_t held, claims;
                s->down = 0;
                load(f, &held, &claims);
                kd_log(f->conf, KDELAY_LOG_NOTICE,
                       "event=mysql_available down_ms=%lld held=%zu "
                       "claim_queue=%zu",
                       (long long)(kd_fwd_mono_ms(f) - s->down_since_mono),
                       held, claims);
                if (s->changed)
                        s->changed(f);
        }
}

/* Counts r's statements and round trip, and keeps the availability state:
 * a failed statement backs off and halts sending until every request out
 * is back (those after it come back unsent). */
static void account(kd_fwd_t *f, kd_store_req_t *r)
{
        kd_fwd_store_t *s = f->store;
        kd_fw_req_t *fw = &r->fw;
        s->inflight--;
        kd_metric_set(&f->metrics, KD_M_STORE_INFLIGHT, (int64_t)s->inflight);
        s->last_done_mono = kd_fwd_mono_ms(f);
        s->waiting_since_mono = s->last_done_mono; /* for the next one */
        if (fw->op == KD_FW_PING)
                kd_metric_inc(&f->metrics, KD_M_STORE_PINGS);
        else
                kd_metric_add(&f->metrics,
                              fw->op == KD_FW_CLAIM || fw->op == KD_FW_TAKEOVER
                                  ? KD_M_CLAIM_STATEMENTS
                                  : KD_M_MARK_STATEMENTS,
                              fw->statements);
        if (fw->sent)
                kd_metric_observe(&f->metrics, KD_M_STORE_MS,
                                  kd_fwd_mono_ms(f) - fw->submitted_mono);
        if (fw->err && fw->sent) {
                s->halted = 1;
                kd_store_failed(f, op_name[fw->op], fw->errstr);
        } else if (!fw->err) {
                store_ok(f);
        }
        if (s->halted && s->inflight == 0) {
                s->halted = 0;
                kd_fate_worker_resume(s->worker);
        }
}

void kd_store_serve(kd_fwd_t *f)
{
        if (!f->store->worker)
                return;
        kd_fw_req_t *fw;
        while ((fw = kd_fate_worker_done(f->store->worker))) {
                kd_store_req_t *r = (kd_store_req_t *)fw;
                account(f, r);
                r->done(f, r);
        }
}
