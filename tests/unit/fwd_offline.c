/* SPDX-License-Identifier: Apache-2.0 */
/* A forwarder made but never run (fwd_offline.h). */
#include "fwd_offline.h"

#include <kdelay/conf.h>

#include "kd_fate_mem.h"

int kd_test_fwd_offline(kd_fwd_t **fp, const char *instance)
{
        kdelay_conf_t *c = kdelay_conf_new();
        kd_fate_store_t *store = NULL;
        char errstr[256];
        if (!c ||
            kdelay_conf_set(c, "brokers", "127.0.0.1:1", errstr,
                            sizeof(errstr)) ||
            kdelay_conf_set(c, "forwarder.instance", instance, errstr,
                            sizeof(errstr)) ||
            kd_fate_mem_new(&store))
                return -1;
        return kd_fwd_new(fp, c, store, NULL, errstr, sizeof(errstr)) ? -1 : 0;
}
