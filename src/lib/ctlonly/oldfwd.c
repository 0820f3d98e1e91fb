/* SPDX-License-Identifier: Apache-2.0 */
/* Forwarder group members older than a release (kd_oldfwd.h). */
#include "kd_oldfwd.h"

#include <stdio.h>
#include <string.h>

#include "kd_fwdid.h"
#include "kd_grouppos.h"
#include "kd_schema_steps.h"
#include "kd_util.h"

#define KD_OLDFWD_TIMEOUT_MS 10000

/* Appends "client.id@host" of member mi to o->list. */
static void list_add(kd_oldfwd_t *o,
                     const struct rd_kafka_group_member_info *mi)
{
        size_t len = strlen(o->list);
        if (len + 4 >= sizeof(o->list))
                return; /* "..." already there */
        int w = snprintf(o->list + len, sizeof(o->list) - len, "%s%s@%s",
                         len ? "," : "", mi->client_id ? mi->client_id : "",
                         mi->client_host ? mi->client_host : "?");
        if (w < 0 || (size_t)w >= sizeof(o->list) - len)
                memcpy(o->list + sizeof(o->list) - 4, "...", 4);
}

kdelay_err_t kd_oldfwd_scan(const kdelay_conf_t *conf, const char *min_release,
                            kd_oldfwd_t *o, char *errstr, size_t errstr_size)
{
        int min[3], v[3];
        memset(o, 0, sizeof(*o));
        if (kd_release_parse(min_release, min))
                return kd_fail(KDELAY_ERR_INVALID_ARG, errstr, errstr_size,
                               "release \"%s\" is not X.Y.Z", min_release);
        kd_rk_owner_t owner = {conf};
        rd_kafka_t *rk = kd_grouppos_client(&owner, errstr, errstr_size);
        if (!rk)
                return KDELAY_ERR_KAFKA;
        const struct rd_kafka_group_list *gl = NULL;
        rd_kafka_resp_err_t err = rd_kafka_list_groups(
            rk, conf->fwd_group_id, &gl, KD_OLDFWD_TIMEOUT_MS);
        kdelay_err_t rc = KDELAY_OK;
        if (err)
                rc = kd_fail(KDELAY_ERR_KAFKA, errstr, errstr_size,
                             "group %s: %s", conf->fwd_group_id,
                             rd_kafka_err2str(err));
        for (int g = 0; !rc && g < gl->group_cnt; g++) {
                const struct rd_kafka_group_info *gi = &gl->groups[g];
                if (strcmp(gi->group, conf->fwd_group_id))
                        continue;
                if (gi->err) {
                        rc = kd_fail(KDELAY_ERR_KAFKA, errstr, errstr_size,
                                     "group %s: %s", conf->fwd_group_id,
                                     rd_kafka_err2str(gi->err));
                        break;
                }
                for (int i = 0; i < gi->member_cnt; i++) {
                        const struct rd_kafka_group_member_info *mi =
                            &gi->members[i];
                        const char *inst;
                        o->members++;
                        if (mi->client_id &&
                            kd_fwdid_parse(mi->client_id, &inst, v) == 1 &&
                            kd_release_cmp(v, min) >= 0)
                                continue;
                        o->older++;
                        list_add(o, mi);
                }
        }
        if (gl)
                rd_kafka_group_list_destroy(gl);
        rd_kafka_destroy(rk);
        return rc;
}
