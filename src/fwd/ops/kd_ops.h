/* SPDX-License-Identifier: Apache-2.0 */
/* The ops room's state as a whole (ops_state.c): made and freed by top
 * (fwd.c); its fields are private (kd_ops_state.h). */
#ifndef KD_OPS_H
#define KD_OPS_H

#include "core/kd_fwd_core.h"

/* f->ops made, zeroed, its timers initialised: KDELAY_ERR_NO_MEMORY,
 * else KDELAY_OK. */
kdelay_err_t kd_ops_state_new(kd_fwd_t *f);
/* Frees f->ops (NULL: nothing); the handle NULL. */
void kd_ops_state_free(kd_fwd_t *f);

#endif
