/* SPDX-License-Identifier: Apache-2.0 */
/* What the library's other modules (tasks.c, reschedule.c) need of a
 * kdelay_client_t beyond the public API. */
#ifndef KD_CLIENT_H
#define KD_CLIENT_H

#include <librdkafka/rdkafka.h>

#include <kdelay/kdelay.h>

#include "kd_fate.h"

/* The client's configuration. Borrowed from c. */
const kdelay_conf_t *kd_client_conf(const kdelay_client_t *c);

/* kdelay_schedule, the record carrying the header link_name (a reserved
 * kdelay-* name: KDELAY_HDR_RESCHEDULED_FROM, KDELAY_HDR_REPLAY_OF) with
 * the value from_id (NULL: no such header). */
kdelay_err_t kd_client_schedule_from(kdelay_client_t *c,
                                     const kdelay_task_t *task,
                                     const char *link_name, const char *from_id,
                                     char *id_out, size_t id_out_size,
                                     char *errstr, size_t errstr_size);

/* The headers of h (NULL: none) as kdelay_header_t entries, for a
 * kdelay_task_t: *arrp (caller frees; NULL when none) points into h, which
 * must outlive it. KDELAY_ERR_NO_MEMORY on failure. */
kdelay_err_t kd_client_headers_array(const rd_kafka_headers_t *h,
                                     kdelay_header_t **arrp, size_t *cntp);

/* kd_fate_lookup on the client's fate store (thread-safe). */
kdelay_err_t kd_client_fate_lookup(kdelay_client_t *c, const char *const *ids,
                                   const size_t *id_lens, size_t n,
                                   kdelay_fate_t *fates, char *errstr,
                                   size_t errstr_size);

/* The longest-pending journal's reconciliation marker into *p (since_ms
 * -1: none pending): while one is, cancels answer KDELAY_ERR_RECONCILING.
 * Thread-safe. */
kdelay_err_t kd_client_pending(kdelay_client_t *c, kd_fate_pending_t *p,
                               char *errstr, size_t errstr_size);

/* The kdelay_unclaimed row of id into *row (*np 1), if any (*np 0): a
 * fire made without a claim through a fate-store outage. Thread-safe. */
kdelay_err_t kd_client_unclaimed(kdelay_client_t *c, const char *id,
                                 kd_fate_unclaimed_row_t *row, size_t *np,
                                 char *errstr, size_t errstr_size);

#endif
