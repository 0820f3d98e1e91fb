/* SPDX-License-Identifier: Apache-2.0 */
/* The ops room's state as a whole (kd_ops.h). */
#include <stdlib.h>

#include "kd_ops.h"
#include "kd_ops_state.h"

kdelay_err_t kd_ops_state_new(kd_fwd_t *f)
{
        kd_fwd_ops_t *o = calloc(1, sizeof(*o));
        if (!o)
                return KDELAY_ERR_NO_MEMORY;
        kd_timer_init(&o->tiercheck_timer, NULL, f);
        kd_timer_init(&o->watchdog, NULL, f);
        f->ops = o;
        return KDELAY_OK;
}

void kd_ops_state_free(kd_fwd_t *f)
{
        free(f->ops);
        f->ops = NULL;
}
