/* SPDX-License-Identifier: Apache-2.0 */
/* kdelayctl dead replay, the copies still pending (replay_pending.h). */
#include "replay_pending.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kd_scan.h"
#include "kd_util.h"
#include "kd_wire.h"

static int pending_cb(const kd_scan_rec_t *rec, void *opaque)
{
        kd_replay_pendings_t *p = opaque;
        const void *v;
        size_t n;
        if (rec->defect != KD_WIRE_OK || !rec->hdrs ||
            rd_kafka_header_get_last(rec->hdrs, KDELAY_HDR_REPLAY_OF, &v, &n))
                return 0;
        if (p->cnt == p->cap) {
                size_t cap = p->cap ? 2 * p->cap : 16;
                kd_replay_pending_t *g = realloc(p->v, cap * sizeof(*g));
                if (!g) {
                        p->oom = 1;
                        return -1;
                }
                p->v = g;
                p->cap = cap;
        }
        kd_replay_pending_t *e = &p->v[p->cnt++];
        snprintf(e->id, sizeof(e->id), "%.*s", (int)rec->task.id_len,
                 rec->task.id);
        kd_strlcpy(e->tier_topic, rec->part->topic, sizeof(e->tier_topic));
        return 0;
}

const kd_replay_pending_t *kd_replay_pending_find(const kd_replay_pendings_t *p,
                                                  const char *id)
{
        for (size_t i = 0; i < p->cnt; i++)
                if (!strcmp(p->v[i].id, id))
                        return &p->v[i];
        return NULL;
}

/* How long the look for replayed copies still pending may take. */
#define KD_REPLAY_SCAN_BUDGET_MS 30000

/* Reads the tier topics' pending records once for replayed copies, so a
 * second replay of a dead letter whose copy has no fate yet (not fired:
 * no forwarder, or due later) says SKIPPED too. A scan cut short or
 * failed is said on stderr; the fate table still lets one copy fire. */
void kd_replay_pending_read(const kdelay_conf_t *conf, kd_replay_pendings_t *p)
{
        char errstr[512];
        kd_scan_progress_t prog;
        kd_scan_opts_t opts = {.budget_ms = KD_REPLAY_SCAN_BUDGET_MS};
        memset(p, 0, sizeof(*p));
        kdelay_err_t err = kd_scan_run(conf, &opts, pending_cb, p, &prog,
                                       errstr, sizeof(errstr));
        p->complete = !err && prog.complete;
        if (err)
                fprintf(stderr,
                        "kdelayctl dead replay: warning: could not read the "
                        "tier topics for copies replayed before: %s; a copy "
                        "still pending is written again (it fires once)\n",
                        p->oom ? "out of memory" : errstr);
        else if (!prog.complete)
                fprintf(stderr,
                        "kdelayctl dead replay: warning: the tier topics "
                        "were not all read within %d s; a copy replayed "
                        "before and still pending may be written again (it "
                        "fires once)\n",
                        KD_REPLAY_SCAN_BUDGET_MS / 1000);
}
