/* SPDX-License-Identifier: Apache-2.0 */
/* kdelayctl audit: fires after a cancel (audit_unclaimed.h). */
#include "audit_unclaimed.h"

#include <stdio.h>
#include <stdlib.h>

#include "audit.h"
#include "ctl_time.h"
#include "kd_fate.h"
#include "kd_util.h"

/* "yes" when the task's delivery is on record (its row FIRED), "maybe"
 * when only a record of intent was (its row still CANCELLED: the
 * forwarder stopped between its fire and the record of its delivery). */
static const char *delivered_str(kdelay_fate_t fate)
{
        return fate == KDELAY_FATE_CANCELLED ? "maybe" : "yes";
}

#define UNCLAIMED_COLUMNS "%-40s %-24s %-24s %-20s %-40s %-9s "

static void row_text(const kd_fate_unclaimed_row_t *r, kdelay_fate_t fate)
{
        char fa[40], fd[40], src[300];
        snprintf(src, sizeof(src), "%s:%d:%lld",
                 r->src_topic[0] ? r->src_topic : "-", (int)r->src_partition,
                 (long long)r->src_offset);
        const char *when =
            kd_unclaimed_cancel_when(r->cancelled_at_ms, r->fired_at_ms);
        printf(UNCLAIMED_COLUMNS "%s\n", r->id,
               kd_ctl_time_format(r->fire_at_ms, fa, sizeof(fa)),
               kd_ctl_time_format(r->fired_at_ms, fd, sizeof(fd)),
               r->forwarder[0] ? r->forwarder : "-", src, delivered_str(fate),
               when ? when : "-");
}

static int row_json(cJSON *rows_json, const kd_fate_unclaimed_row_t *r,
                    kdelay_fate_t fate)
{
        cJSON *o = kd_audit_json_row(rows_json);
        if (!o)
                return -1;
        cJSON_AddStringToObject(o, "id", r->id);
        cJSON_AddNumberToObject(o, "fire_at_ms", (double)r->fire_at_ms);
        cJSON_AddNumberToObject(o, "fired_at_ms", (double)r->fired_at_ms);
        cJSON_AddNumberToObject(o, "applied_at_ms", (double)r->applied_at_ms);
        cJSON_AddStringToObject(o, "forwarder", r->forwarder);
        cJSON_AddStringToObject(o, "src_topic", r->src_topic);
        cJSON_AddNumberToObject(o, "src_partition", r->src_partition);
        cJSON_AddNumberToObject(o, "src_offset", (double)r->src_offset);
        cJSON_AddStringToObject(o, "delivered", delivered_str(fate));
        const char *when =
            kd_unclaimed_cancel_when(r->cancelled_at_ms, r->fired_at_ms);
        if (when) {
                cJSON_AddNumberToObject(o, "cancelled_at_ms",
                                        (double)r->cancelled_at_ms);
                cJSON_AddStringToObject(o, "cancelled", when);
        } else {
                cJSON_AddNullToObject(o, "cancelled_at_ms");
                cJSON_AddNullToObject(o, "cancelled");
        }
        return 0;
}

/* The fate rows of rows[0..n) into *fatesp (allocated, the caller's). */
static kdelay_err_t lookup_fates(kd_fate_store_t *store,
                                 const kd_fate_unclaimed_row_t *rows, size_t n,
                                 kdelay_fate_t **fatesp, char *errstr,
                                 size_t errstr_size)
{
        const char **ids = calloc(n, sizeof(*ids));
        size_t *lens = calloc(n, sizeof(*lens));
        *fatesp = calloc(n, sizeof(**fatesp));
        kdelay_err_t err = KDELAY_OK;
        if (!ids || !lens || !*fatesp) {
                err = kd_fail(KDELAY_ERR_NO_MEMORY, errstr, errstr_size,
                              "out of memory");
        } else {
                for (size_t i = 0; i < n; i++) {
                        ids[i] = rows[i].id;
                        lens[i] = rows[i].id_len;
                }
                err = kd_fate_lookup(store, ids, lens, n, *fatesp, errstr,
                                     errstr_size);
        }
        free(ids);
        free(lens);
        return err;
}

kdelay_err_t kd_audit_unclaimed(const kdelay_conf_t *conf, int64_t since_ms,
                                cJSON *rows_json, int shown_before, size_t *np,
                                int *morep, char *errstr, size_t errstr_size)
{
        kd_fate_store_t *store = NULL;
        *np = 0;
        *morep = 0;
        kdelay_err_t err = kd_fate_store_new(&store, conf);
        if (err)
                return kd_fail(err, errstr, errstr_size,
                               "cannot create the fate store");
        kd_fate_unclaimed_row_t *rows =
            calloc(KD_AUDIT_UNCLAIMED_MAX, sizeof(*rows));
        size_t n = 0;
        if (!rows)
                err = kd_fail(KDELAY_ERR_NO_MEMORY, errstr, errstr_size,
                              "out of memory");
        if (!err)
                err = kd_fate_unclaimed_list(
                    store, NULL, 0, KD_PRIOR_CANCELLED, since_ms, rows,
                    KD_AUDIT_UNCLAIMED_MAX, &n, errstr, errstr_size);
        kdelay_fate_t *fates = NULL;
        if (!err && n > 0)
                err = lookup_fates(store, rows, n, &fates, errstr, errstr_size);
        if (!err && !rows_json && n > 0)
                kd_audit_table_start(shown_before, UNCLAIMED_COLUMNS "%s\n",
                                     "FIRED_AFTER_CANCEL_ID", "FIRE_AT",
                                     "FIRED_AT", "FORWARDER", "SOURCE",
                                     "DELIVERED", "CANCELLED");
        for (size_t i = 0; !err && i < n; i++) {
                if (!rows_json)
                        row_text(&rows[i], fates[i]);
                else if (row_json(rows_json, &rows[i], fates[i]))
                        err = kd_fail(KDELAY_ERR_NO_MEMORY, errstr, errstr_size,
                                      "out of memory");
        }
        *np = n;
        *morep = n == KD_AUDIT_UNCLAIMED_MAX;
        free(fates);
        free(rows);
        kd_fate_store_destroy(store);
        return err;
}
