/* SPDX-License-Identifier: Apache-2.0 */
/* kdelay_find and kdelay_reschedule: a pending task looked up by a scan
 * of the tier topics (kd_tasks.h), and moved to another time. */
#include <kdelay/kdelay.h>

#include <stdlib.h>
#include <string.h>

#include "kd_client.h"
#include "kd_taskid.h"
#include "kd_tasks.h"
#include "kd_util.h"
#include "kd_wire.h"

/* Finds id's first pending record (any fate when any_fate), keeping its
 * record when keep. KDELAY_ERR_NOT_FOUND / _TIMED_OUT as kdelay_find. */
static kdelay_err_t find(kdelay_client_t *c, const char *id, int64_t budget_ms,
                         int any_fate, int keep, kd_tasks_found_t *out,
                         char *errstr, size_t errstr_size)
{
        kd_tasks_query_t q;
        kd_tasks_query_init(&q);
        q.id = id;
        q.any_fate = any_fate;
        q.keep_record = keep;
        q.scan.budget_ms = budget_ms;
        kdelay_err_t err = kd_tasks_find(c, &q, out, errstr, errstr_size);
        if (err)
                return err;
        if (out->cnt)
                return KDELAY_OK;
        if (out->matched || out->prog.complete)
                err = kd_fail(KDELAY_ERR_NOT_FOUND, errstr, errstr_size,
                              "no pending task has id %s: it fired, was "
                              "cancelled or never existed",
                              id);
        else
                err = kd_fail(KDELAY_ERR_TIMED_OUT, errstr, errstr_size,
                              "task %s not found in the %llu records read "
                              "within %lld ms",
                              id, (unsigned long long)out->prog.records,
                              (long long)budget_ms);
        kd_tasks_found_clear(out);
        return err;
}

static kdelay_err_t args_check(kdelay_client_t *c, const char *id, char *errstr,
                               size_t errstr_size)
{
        if (!c)
                return kd_fail(KDELAY_ERR_INVALID_ARG, errstr, errstr_size,
                               "client is NULL");
        if (!id || !kd_wire_id_valid(id, strlen(id)))
                return kd_fail(KDELAY_ERR_INVALID_ID, errstr, errstr_size,
                               "task id must be 1..%d bytes of UTF-8",
                               KDELAY_ID_MAX);
        return KDELAY_OK;
}

kdelay_err_t kdelay_find(kdelay_client_t *c, const char *id, int64_t budget_ms,
                         kdelay_pending_t *found, char *errstr,
                         size_t errstr_size)
{
        kdelay_err_t err = args_check(c, id, errstr, errstr_size);
        if (err)
                return err;
        if (!found)
                return kd_fail(KDELAY_ERR_INVALID_ARG, errstr, errstr_size,
                               "found is NULL");
        kd_tasks_found_t out;
        if ((err = find(c, id, budget_ms, 0, 0, &out, errstr, errstr_size)))
                return err;
        *found = out.items[0].p;
        kd_tasks_found_clear(&out);
        return KDELAY_OK;
}

/* The user headers of rec as an array borrowed from it (*arrp owned). */
/* Schedules rec's task anew under new_id, due as asked. */
static kdelay_err_t schedule_copy(kdelay_client_t *c, const char *id,
                                  const kd_tasks_found_t *rec,
                                  int64_t fire_at_ms, int64_t delay_ms,
                                  const char *new_id, char *new_id_out,
                                  size_t new_id_out_size, char *errstr,
                                  size_t errstr_size)
{
        kdelay_header_t *hdrs;
        size_t hdr_cnt;
        if (kd_client_headers_array(rec->user_hdrs, &hdrs, &hdr_cnt))
                return kd_fail(KDELAY_ERR_NO_MEMORY, errstr, errstr_size,
                               "out of memory");
        kdelay_task_t t;
        kdelay_task_init(&t);
        t.topic = rec->items[0].p.target;
        t.key = rec->key;
        t.key_len = rec->key_len;
        t.value = rec->value;
        t.value_len = rec->value_len;
        t.headers = hdrs;
        t.header_cnt = hdr_cnt;
        t.fire_at_ms = fire_at_ms;
        t.delay_ms = delay_ms;
        t.id = new_id;
        kdelay_err_t err = kd_client_schedule_from(
            c, &t, KDELAY_HDR_RESCHEDULED_FROM, id, new_id_out, new_id_out_size,
            errstr, errstr_size);
        free(hdrs);
        return err;
}

/* Why id has no pending record: it fired (TOO_LATE) or not (NOT_FOUND,
 * errstr kept). */
static kdelay_err_t not_pending(kdelay_client_t *c, const char *id,
                                char *errstr, size_t errstr_size)
{
        kdelay_status_t st;
        char why[256];
        if (kdelay_status(c, id, &st, why, sizeof(why)) == KDELAY_OK &&
            (st.fate == KDELAY_FATE_FIRED || st.fate == KDELAY_FATE_FIRING))
                return kd_fail(KDELAY_ERR_TOO_LATE, errstr, errstr_size,
                               "task %s is %s", id, kdelay_fate_str(st.fate));
        return KDELAY_ERR_NOT_FOUND;
}

kdelay_err_t kdelay_reschedule(kdelay_client_t *c, const char *id,
                               int64_t fire_at_ms, int64_t delay_ms,
                               const char *new_id, int64_t budget_ms,
                               char *new_id_out, size_t new_id_out_size,
                               char *errstr, size_t errstr_size)
{
        kdelay_err_t err = args_check(c, id, errstr, errstr_size);
        if (err)
                return err;
        if ((fire_at_ms == KDELAY_TIME_UNSET) ==
            (delay_ms == KDELAY_TIME_UNSET))
                return kd_fail(KDELAY_ERR_INVALID_TIME, errstr, errstr_size,
                               "set exactly one of fire_at_ms and delay_ms");
        if (!new_id_out || new_id_out_size < KDELAY_ID_MAX + 1)
                return kd_fail(KDELAY_ERR_INVALID_ARG, errstr, errstr_size,
                               "new_id_out must hold %d bytes",
                               KDELAY_ID_MAX + 1);
        if (new_id && !kd_wire_id_valid(new_id, strlen(new_id)))
                return kd_fail(KDELAY_ERR_INVALID_ID, errstr, errstr_size,
                               "new id must be 1..%d bytes of UTF-8",
                               KDELAY_ID_MAX);
        if (new_id && !strcmp(new_id, id))
                return kd_fail(KDELAY_ERR_INVALID_ID, errstr, errstr_size,
                               "the new id must differ from %s", id);
        /* A given new id may finish an earlier reschedule: the task is
         * cancelled already and its record still pending. */
        kd_tasks_found_t rec;
        if ((err = find(c, id, budget_ms, 1, 1, &rec, errstr, errstr_size)))
                return err == KDELAY_ERR_NOT_FOUND
                           ? not_pending(c, id, errstr, errstr_size)
                           : err;
        kdelay_fate_t fate = rec.items[0].p.fate;
        if (fate == KDELAY_FATE_FIRING || fate == KDELAY_FATE_FIRED ||
            (fate == KDELAY_FATE_CANCELLED && !new_id)) {
                kd_tasks_found_clear(&rec);
                return kd_fail(fate == KDELAY_FATE_CANCELLED
                                   ? KDELAY_ERR_NOT_FOUND
                                   : KDELAY_ERR_TOO_LATE,
                               errstr, errstr_size, "task %s is %s", id,
                               kdelay_fate_str(fate));
        }
        /* The new id is fixed before the cancel, so a retry after a
         * failure writes the same task. */
        char gen[KDELAY_ID_GEN_LEN + 1];
        if (!new_id) {
                if ((err = kd_taskid_generate(gen, sizeof(gen)))) {
                        kd_tasks_found_clear(&rec);
                        return kd_fail(err, errstr, errstr_size,
                                       "cannot generate an id");
                }
                new_id = gen;
        }
        kd_strlcpy(new_id_out, new_id, new_id_out_size);
        if (fate == KDELAY_FATE_UNDECIDED &&
            (err = kdelay_cancel(c, id, errstr, errstr_size))) {
                kd_tasks_found_clear(&rec);
                return err; /* TOO_LATE: it fired first */
        }
        char why[512];
        err = schedule_copy(c, id, &rec, fire_at_ms, delay_ms, new_id,
                            new_id_out, new_id_out_size, why, sizeof(why));
        kd_tasks_found_clear(&rec);
        if (err)
                kd_fail(err, errstr, errstr_size,
                        "task %s is cancelled but its replacement %s was not "
                        "written: %s; reschedule again with new id %s to "
                        "finish",
                        id, new_id, why, new_id);
        return err;
}
