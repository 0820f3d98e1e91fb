/* Under the claim and settle stages, fate-store access (kd_store.h): owns
 * f->store's backoff and availability state. */
#include "kd_store.h"

#include "kd_log.h"
#include "kd_util.h"

int kd_store_ready(const kd_fwd_t *f)
{
        return kd_mono_ms() >= f->store.retry_mono;
}

int64_t kd_store_retry_mono(const kd_fwd_t *f)
{
        return f->store.retry_mono;
}

void kd_store_failed(kd_fwd_t *f, const char *what, const char *errstr)
{
        kd_fwd_store_t *s = &f->store;
        int64_t b = s->backoff_ms ? s->backoff_ms * 2 : 100;
        if (b > f->conf->fwd_retry_max_ms)
                b = f->conf->fwd_retry_max_ms;
        s->backoff_ms = b;
        s->retry_mono = kd_mono_ms() + b;
        kd_metric_set(&f->metrics, KD_M_MYSQL_UP, 0);
        if (!s->down) {
                char q[512];
                s->down = 1;
                kd_log(f->conf, KDELAY_LOG_ERROR,
                       "event=mysql_unavailable what=%s err=%s held=%zu "
                       "action=hold_and_retry",
                       what, kd_log_quote(errstr, q, sizeof(q)), f->held.cnt);
        }
}

void kd_store_ok(kd_fwd_t *f)
{
        kd_fwd_store_t *s = &f->store;
        s->backoff_ms = 0;
        s->retry_mono = 0;
        kd_metric_set(&f->metrics, KD_M_MYSQL_UP, 1);
        if (s->down) {
                s->down = 0;
                kd_log(f->conf, KDELAY_LOG_NOTICE,
                       "event=mysql_available held=%zu claim_queue=%zu",
                       f->held.cnt, f->claim.q.len);
        }
}

/* Adds the statements sent since `before` to metric id. */
static void count(kd_fwd_t *f, kd_metric_id_t id, uint64_t before)
{
        kd_metric_add(&f->metrics, id,
                      kd_fate_statements(f->store.fate) - before);
}

kdelay_err_t kd_store_claim(kd_fwd_t *f, kd_fate_claim_t *items, size_t n,
                            char *errstr, size_t errstr_size)
{
        uint64_t before = kd_fate_statements(f->store.fate);
        kdelay_err_t err =
            kd_fate_claim(f->store.fate, items, n, NULL, errstr, errstr_size);
        count(f, KD_M_CLAIM_STATEMENTS, before);
        return err;
}

kdelay_err_t kd_store_takeover(kd_fwd_t *f, kd_fate_claim_t *items, size_t n,
                               char *errstr, size_t errstr_size)
{
        uint64_t before = kd_fate_statements(f->store.fate);
        kdelay_err_t err =
            kd_fate_takeover(f->store.fate, items, n, errstr, errstr_size);
        count(f, KD_M_CLAIM_STATEMENTS, before);
        return err;
}

kdelay_err_t kd_store_mark_fired(kd_fwd_t *f, const char *const *ids,
                                 const size_t *lens, size_t n, char *errstr,
                                 size_t errstr_size)
{
        uint64_t before = kd_fate_statements(f->store.fate);
        kdelay_err_t err = kd_fate_mark_fired(f->store.fate, ids, lens, n,
                                              errstr, errstr_size);
        count(f, KD_M_MARK_STATEMENTS, before);
        return err;
}

kdelay_err_t kd_store_note_cancelled(kd_fwd_t *f, const char *const *ids,
                                     const size_t *lens, const int64_t *vals,
                                     size_t n, char *errstr, size_t errstr_size)
{
        uint64_t before = kd_fate_statements(f->store.fate);
        kdelay_err_t err = kd_fate_note_cancelled(f->store.fate, ids, lens,
                                                  vals, n, errstr, errstr_size);
        count(f, KD_M_MARK_STATEMENTS, before);
        return err;
}
