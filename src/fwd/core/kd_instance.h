/* SPDX-License-Identifier: Apache-2.0 */
/* This process's name (f->instance): forwarder.instance, else
 * "<host>-<pid>", every character outside [A-Za-z0-9._-] made '_' (claim
 * tokens keep to those). */
#ifndef KD_INSTANCE_H
#define KD_INSTANCE_H

#include <stddef.h>

#include "kd_conf.h"

void kd_instance_name(const kdelay_conf_t *conf, char *out, size_t out_size);

#endif
