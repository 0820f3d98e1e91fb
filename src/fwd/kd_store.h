/* The fate store as the pipeline uses it: statements counted into the
 * metric table, and one backoff while the store fails, so that claims and
 * FIRED marks wait together and an outage is logged once. */
#ifndef KD_STORE_H
#define KD_STORE_H

#include "kd_fwd_state.h"

/* 1 when a statement may be sent now (not backing off). */
int kd_store_ready(const kd_fwd_t *f);
/* When the store may be tried again (monotonic ms); 0 = now. */
int64_t kd_store_retry_mono(const kd_fwd_t *f);
/* A statement failed: back off, and say so once per outage. */
void kd_store_failed(kd_fwd_t *f, const char *what, const char *errstr);
/* A statement succeeded: the outage, if any, is over. */
void kd_store_ok(kd_fwd_t *f);

/* The store's statements counted into metric id around each call. */
kdelay_err_t kd_store_claim(kd_fwd_t *f, kd_fate_claim_t *items, size_t n,
                            char *errstr, size_t errstr_size);
kdelay_err_t kd_store_takeover(kd_fwd_t *f, kd_fate_claim_t *items, size_t n,
                               char *errstr, size_t errstr_size);
kdelay_err_t kd_store_mark_fired(kd_fwd_t *f, const char *const *ids,
                                 const size_t *lens, size_t n, char *errstr,
                                 size_t errstr_size);
kdelay_err_t kd_store_note_cancelled(kd_fwd_t *f, const char *const *ids,
                                     const size_t *lens, const int64_t *vals,
                                     size_t n, char *errstr,
                                     size_t errstr_size);

#endif
