/* SPDX-License-Identifier: Apache-2.0 */
/* The delivery modes: at_least_once (mode_alo.c) and exactly_once
 * (mode_eos.c), the two implementations of the mode seam's table of
 * operations (core/kd_mode_ops.h), and the choice between them. */
#ifndef KD_MODE_H
#define KD_MODE_H

#include "core/kd_mode_ops.h"
#include "kd_mode_ctx.h"

extern const kd_mode_ops_t kd_mode_alo;
extern const kd_mode_ops_t kd_mode_eos;

/* The ops of conf's forwarder.delivery. */
const kd_mode_ops_t *kd_mode_select(const kdelay_conf_t *conf);

#endif
