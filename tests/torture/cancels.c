/* SPDX-License-Identifier: Apache-2.0 */
/* Cancel threads (cancels.h). */
#include <stdlib.h>

#include "cancels.h"
#include "kd_util.h"

struct tt_cancel_thread {
        tt_cancels_t *c;
        int no;
        size_t *idx; /* owned: this thread's cancels by cancel time */
        size_t cnt;
        pthread_t thread;
        int started;
};

static int cmp_cancel(const void *a, const void *b, void *tasks)
{
        int64_t x = ((const tt_task_t *)tasks)[*(const size_t *)a].cancel_at;
        int64_t y = ((const tt_task_t *)tasks)[*(const size_t *)b].cancel_at;
        return x < y ? -1 : x > y;
}

static tt_answer_t answer_of(kdelay_err_t err)
{
        return err == KDELAY_OK             ? TT_ANS_OK
               : err == KDELAY_ERR_TOO_LATE ? TT_ANS_TOO_LATE
                                            : TT_ANS_ERROR;
}

static void cancel_one(tt_cancel_thread_t *th, kdelay_client_t *cl,
                       tt_task_t *t)
{
        char errstr[512];
        int64_t give_up = kd_now_ms() + 30000;
        t->cancel_sent_at = kd_now_ms();
        kdelay_err_t err = kdelay_cancel(cl, t->id, errstr, sizeof(errstr));
        t->first_answer = (uint8_t)answer_of(err);
        while (answer_of(err) == TT_ANS_ERROR && kd_now_ms() < give_up &&
               !tt_sleep_ms(200, th->c->stop))
                err = kdelay_cancel(cl, t->id, errstr, sizeof(errstr));
        t->answer = (uint8_t)answer_of(err);
        if (t->answer == TT_ANS_ERROR)
                tt_log("event=cancel_unresolved id=%s err=%s detail=\"%s\"",
                       t->id, kdelay_err_name(err), errstr);
}

static void *cancel_main(void *arg)
{
        tt_cancel_thread_t *th = arg;
        tt_cancels_t *c = th->c;
        char errstr[512];
        kdelay_client_t *cl = NULL;
        kdelay_conf_t *conf = tt_conf_new(c->names, c->lib_log);
        if (!conf || kdelay_client_new(&cl, conf, errstr, sizeof(errstr))) {
                tt_log("event=client_failed role=cancel err=\"%s\"",
                       conf ? errstr : "conf");
                kdelay_conf_destroy(conf);
                return NULL;
        }
        size_t done = 0;
        for (size_t k = 0; k < th->cnt; k++) {
                tt_task_t *t = &c->tasks[th->idx[k]];
                if (tt_sleep_until(t->cancel_at, c->stop))
                        break;
                cancel_one(th, cl, t);
                done++;
        }
        kdelay_client_destroy(cl);
        tt_log("event=cancels_done thread=%d cancels=%zu", th->no, done);
        return NULL;
}

int tt_cancels_start(tt_cancels_t *c)
{
        size_t all = 0;
        size_t *idx = malloc((c->n ? c->n : 1) * sizeof(*idx));
        c->threads = calloc(TT_CANCEL_THREADS, sizeof(*c->threads));
        if (!idx || !c->threads) {
                free(idx);
                return -1;
        }
        for (size_t i = 0; i < c->n; i++)
                if (c->tasks[i].cancel_kind != TT_CANCEL_NONE)
                        idx[all++] = i;
        qsort_r(idx, all, sizeof(*idx), cmp_cancel, c->tasks);
        /* Round robin, so both threads cover the whole timeline. */
        for (int k = 0; k < TT_CANCEL_THREADS; k++) {
                tt_cancel_thread_t *th = &c->threads[k];
                th->c = c;
                th->no = k;
                th->idx =
                    malloc((all / TT_CANCEL_THREADS + 1) * sizeof(*th->idx));
                if (!th->idx) {
                        free(idx);
                        return -1;
                }
                for (size_t j = (size_t)k; j < all; j += TT_CANCEL_THREADS)
                        th->idx[th->cnt++] = idx[j];
        }
        free(idx);
        for (int k = 0; k < TT_CANCEL_THREADS; k++) {
                if (pthread_create(&c->threads[k].thread, NULL, cancel_main,
                                   &c->threads[k]))
                        return -1;
                c->threads[k].started = 1;
        }
        return 0;
}

void tt_cancels_join(tt_cancels_t *c)
{
        if (!c->threads)
                return;
        for (int k = 0; k < TT_CANCEL_THREADS; k++) {
                if (c->threads[k].started)
                        pthread_join(c->threads[k].thread, NULL);
                free(c->threads[k].idx);
        }
        free(c->threads);
        c->threads = NULL;
}
