/* SPDX-License-Identifier: Apache-2.0 */
/* This process's name (kd_instance.h). */
#include <stdio.h>
#include <unistd.h>

#include "kd_instance.h"
#include "kd_util.h"

void kd_instance_name(const kdelay_conf_t *conf, char *out, size_t out_size)
{
        if (conf->fwd_instance) {
                kd_strlcpy(out, conf->fwd_instance, out_size);
        } else {
                char host[48] = "host";
                if (gethostname(host, sizeof(host) - 1))
                        kd_strlcpy(host, "host", sizeof(host));
                snprintf(out, out_size, "%s-%d", host, (int)getpid());
        }
        for (char *ch = out; *ch; ch++)
                if (!((*ch >= 'a' && *ch <= 'z') ||
                      (*ch >= 'A' && *ch <= 'Z') ||
                      (*ch >= '0' && *ch <= '9') || *ch == '.' || *ch == '_' ||
                      *ch == '-'))
                        *ch = '_';
}
