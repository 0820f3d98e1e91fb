/* SPDX-License-Identifier: Apache-2.0 */
/* Under the store stage, the fate store's thread (kd_fate_worker.h): owns
 * the worker, its two queues and its eventfd. Touches no forwarder
 * state. */
#include "kd_fate_worker.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "kd_util.h"

struct kd_fate_worker {
        kd_fate_store_t *store; /* borrowed */
        pthread_t thread;
        pthread_mutex_t lock;
        pthread_cond_t cond;
        /* Guarded by lock: */
        kd_fw_req_t *todo, *todo_tail; /* submitted, not yet run */
        kd_fw_req_t *done, *done_tail; /* finished, not yet taken */
        int failed;                    /* fail what follows, unsent */
        int stopping;
        int efd; /* eventfd: readable while done is not empty */
};

static void push(kd_fw_req_t **head, kd_fw_req_t **tail, kd_fw_req_t *r)
{
        r->next = NULL;
        if (*tail)
                (*tail)->next = r;
        else
                *head = r;
        *tail = r;
}

static kd_fw_req_t *pop(kd_fw_req_t **head, kd_fw_req_t **tail)
{
        kd_fw_req_t *r = *head;
        if (r) {
                *head = r->next;
                if (!*head)
                        *tail = NULL;
                r->next = NULL;
        }
        return r;
}

/* Runs r on the store (worker thread, lock not held). */
static void run(kd_fate_worker_t *w, kd_fw_req_t *r)
{
        uint64_t before = kd_fate_statements(w->store);
        char *e = r->errstr;
        size_t es = sizeof(r->errstr);
        switch (r->op) {
        case KD_FW_CLAIM:
                r->err = kd_fate_claim(w->store, r->items, r->n, NULL, e, es);
                break;
        case KD_FW_TAKEOVER:
                r->err = kd_fate_takeover(w->store, r->items, r->n, e, es);
                break;
        case KD_FW_MARK_FIRED:
                r->err =
                    kd_fate_mark_fired(w->store, (const char *const *)r->ids,
                                       r->lens, r->n, e, es);
                break;
        case KD_FW_MARK_DEAD:
                r->err =
                    kd_fate_mark_dead(w->store, (const char *const *)r->ids,
                                      r->lens, r->n, r->reason, e, es);
                break;
        case KD_FW_NOTE_CANCELLED:
                r->err = kd_fate_note_cancelled(w->store,
                                                (const char *const *)r->ids,
                                                r->lens, r->vals, r->n, e, es);
                break;
        case KD_FW_PING: {
                kdelay_status_t st;
                r->err = kd_fate_status(w->store, "", 0, &st, e, es);
                break;
        }
        case KD_FW_MARK_PENDING:
                r->err =
                    kd_fate_pending_mark(w->store, r->journal, r->by, e, es);
                break;
        case KD_FW_APPLY_UNCLAIMED:
                r->err =
                    kd_fate_apply_unclaimed(w->store, r->uitems, r->n, e, es);
                break;
        case KD_FW_CLEAR_PENDING:
                r->err =
                    kd_fate_pending_clear(w->store, r->journal, r->epoch, r->by,
                                          r->stale_ms, &r->pending, e, es);
                break;
        case KD_FW_MARK_RUNS:
                r->err = kd_fate_mark_runs(w->store, r->prefix, r->lo, r->hi,
                                           r->n, e, es);
                break;
        case KD_FW_RENEW_PENDING:
                r->err =
                    kd_fate_pending_renew(w->store, r->journal, r->by, e, es);
                break;
        }
        r->statements = kd_fate_statements(w->store) - before;
}

/* Puts r on the done queue and wakes the loop (lock held). */
static void finish(kd_fate_worker_t *w, kd_fw_req_t *r)
{
        push(&w->done, &w->done_tail, r);
        uint64_t one = 1;
        /* Cannot fail short of a full counter; the loop also polls. */
        while (write(w->efd, &one, sizeof(one)) < 0 && errno == EINTR)
                ;
}

static void unsent(kd_fw_req_t *r, const char *why)
{
        r->sent = 0;
        r->err = KDELAY_ERR_MYSQL;
        r->statements = 0;
        kd_strlcpy(r->errstr, why, sizeof(r->errstr));
}

static void *main_loop(void *arg)
{
        kd_fate_worker_t *w = arg;
        pthread_mutex_lock(&w->lock);
        for (;;) {
                kd_fw_req_t *r = pop(&w->todo, &w->todo_tail);
                if (!r) {
                        if (w->stopping)
                                break;
                        pthread_cond_wait(&w->cond, &w->lock);
                        continue;
                }
                if (w->stopping) {
                        unsent(r, "not sent: the forwarder is stopping");
                } else if (w->failed) {
                        unsent(r, "not sent: an earlier statement failed");
                } else {
                        pthread_mutex_unlock(&w->lock);
                        r->sent = 1;
                        run(w, r);
                        pthread_mutex_lock(&w->lock);
                        if (r->err)
                                w->failed = 1;
                }
                finish(w, r);
        }
        pthread_mutex_unlock(&w->lock);
        return NULL;
}

kdelay_err_t kd_fate_worker_start(kd_fate_worker_t **wp, kd_fate_store_t *store,
                                  char *errstr, size_t errstr_size)
{
        kd_fate_worker_t *w = calloc(1, sizeof(*w));
        if (!w)
                return kd_fail(KDELAY_ERR_NO_MEMORY, errstr, errstr_size,
                               "out of memory");
        w->store = store;
        w->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
        int locks = 0, rc = w->efd < 0 ? errno : 0;
        if (!rc && !(rc = pthread_mutex_init(&w->lock, NULL)))
                locks++;
        if (!rc && !(rc = pthread_cond_init(&w->cond, NULL)))
                locks++;
        if (!rc)
                rc = pthread_create(&w->thread, NULL, main_loop, w);
        if (rc) {
                if (locks > 1)
                        pthread_cond_destroy(&w->cond);
                if (locks > 0)
                        pthread_mutex_destroy(&w->lock);
                if (w->efd >= 0)
                        close(w->efd);
                free(w);
                return kd_fail(KDELAY_ERR_SYSTEM, errstr, errstr_size,
                               "cannot start the fate-store thread: %s",
                               strerror(rc));
        }
        *wp = w;
        return KDELAY_OK;
}

int kd_fate_worker_fd(const kd_fate_worker_t *w)
{
        return w->efd;
}

void kd_fate_worker_submit(kd_fate_worker_t *w, kd_fw_req_t *r)
{
        pthread_mutex_lock(&w->lock);
        push(&w->todo, &w->todo_tail, r);
        pthread_cond_signal(&w->cond);
        pthread_mutex_unlock(&w->lock);
}

kd_fw_req_t *kd_fate_worker_done(kd_fate_worker_t *w)
{
        pthread_mutex_lock(&w->lock);
        kd_fw_req_t *r = pop(&w->done, &w->done_tail);
        if (!w->done) {
                uint64_t v;
                while (read(w->efd, &v, sizeof(v)) < 0 && errno == EINTR)
                        ;
        }
        pthread_mutex_unlock(&w->lock);
        return r;
}

int kd_fate_worker_failed(kd_fate_worker_t *w)
{
        pthread_mutex_lock(&w->lock);
        int failed = w->failed;
        pthread_mutex_unlock(&w->lock);
        return failed;
}

void kd_fate_worker_resume(kd_fate_worker_t *w)
{
        pthread_mutex_lock(&w->lock);
        w->failed = 0;
        pthread_mutex_unlock(&w->lock);
}

void kd_fate_worker_stop(kd_fate_worker_t *w, void (*free_req)(kd_fw_req_t *r))
{
        if (!w)
                return;
        pthread_mutex_lock(&w->lock);
        w->stopping = 1;
        pthread_cond_signal(&w->cond);
        pthread_mutex_unlock(&w->lock);
        /* A call in progress may be blocked on a hung server. */
        kd_fate_store_interrupt(w->store);
        pthread_join(w->thread, NULL);
        for (kd_fw_req_t *r; (r = pop(&w->todo, &w->todo_tail));)
                free_req(r);
        for (kd_fw_req_t *r; (r = pop(&w->done, &w->done_tail));)
                free_req(r);
        pthread_cond_destroy(&w->cond);
        pthread_mutex_destroy(&w->lock);
        close(w->efd);
        free(w);
}
