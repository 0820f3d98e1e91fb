/* SPDX-License-Identifier: Apache-2.0 */
/* The librdkafka properties a forwarder refuses: those whose value would
 * break a guarantee of docs/design.md ("Invariants"), and those kdelay sets
 * itself from its own properties. Checked once, at kd_fwd_new, so a
 * misconfigured forwarder exits at start with the reason instead of
 * running with the property silently overridden or, worse, obeyed. */
#ifndef KD_GUARD_H
#define KD_GUARD_H

#include <stddef.h>

#include <kdelay/kdelay.h>

/* KDELAY_OK, or KDELAY_ERR_CONFIG with errstr naming the first refused
 * property, its value and why. */
kdelay_err_t kd_guard_check(const kdelay_conf_t *conf, char *errstr,
                            size_t errstr_size);

#endif
