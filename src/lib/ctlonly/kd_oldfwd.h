/* SPDX-License-Identifier: Apache-2.0 */
/* The members of the forwarder group (forwarder.group_id) that do not say
 * they run a given release or a newer one (their client.id, kd_fwdid.h):
 * what `kdelayctl db migrate --enable lean-fate` refuses while any is
 * there (docs/upgrading.md). A member of a release before 0.4.0 gives its
 * instance alone as client.id: it counts as older. */
#ifndef KD_OLDFWD_H
#define KD_OLDFWD_H

#include <stddef.h>

#include <kdelay/kdelay.h>

#include "kd_conf.h"

typedef struct kd_oldfwd {
        int members; /* in the group */
        int older;   /* of them, not saying min_release or newer */
        /* "client.id@host" of the older ones, comma separated, cut short
         * with "..." when long. */
        char list[512];
} kd_oldfwd_t;

/* Describes conf's forwarder group and counts into *o the members older
 * than min_release ("X.Y.Z"). KDELAY_ERR_KAFKA when the group cannot be
 * described (errstr says why); KDELAY_ERR_INVALID_ARG for a malformed
 * min_release. */
kdelay_err_t kd_oldfwd_scan(const kdelay_conf_t *conf, const char *min_release,
                            kd_oldfwd_t *o, char *errstr, size_t errstr_size);

#endif
