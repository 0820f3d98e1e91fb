/* SPDX-License-Identifier: Apache-2.0 */
/* A forwarder's client.id: its instance and release (kd_fwdid.h). */
#include "kd_fwdid.h"

#include <stdio.h>
#include <string.h>

#include <kdelay/kdelay.h>

/* "X.Y.Z" (digits only, each below 100000) of len bytes at s into v: 0,
 * or -1. */
static int release_of(const char *s, size_t len, int v[3])
{
        size_t i = 0;
        for (int k = 0; k < 3; k++) {
                long n = 0;
                size_t start = i;
                while (i < len && s[i] >= '0' && s[i] <= '9' && n < 100000)
                        n = n * 10 + (s[i++] - '0');
                if (i == start || n >= 100000)
                        return -1;
                if (k < 2 && (i >= len || s[i++] != '.'))
                        return -1;
                v[k] = (int)n;
        }
        return i == len ? 0 : -1;
}

int kd_fwdid_make(const char *instance, char *out, size_t size)
{
        int n = snprintf(out, size, "%s%s/%s", KD_FWDID_PREFIX,
                         KDELAY_VERSION_STR, instance);
        return n < 0 || (size_t)n >= size ? -1 : 0;
}

int kd_fwdid_parse(const char *client_id, const char **instancep, int v[3])
{
        size_t plen = strlen(KD_FWDID_PREFIX);
        *instancep = client_id;
        if (strncmp(client_id, KD_FWDID_PREFIX, plen))
                return 0;
        const char *rel = client_id + plen;
        const char *slash = strchr(rel, '/');
        if (!slash || release_of(rel, (size_t)(slash - rel), v))
                return 0;
        *instancep = slash + 1;
        return 1;
}
