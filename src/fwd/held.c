/* Schedule stage, held set (kd_held.h): owns the count and bytes in
 * f->held. */
#include "kd_held.h"

void kd_held_add(kd_fwd_t *f, kd_task_t *t)
{
        if (t->held)
                return;
        t->held = 1;
        f->held.cnt++;
        f->held.bytes += (int64_t)t->bytes;
        kd_metric_max(&f->metrics, KD_M_HELD_MAX, (int64_t)f->held.cnt);
}

void kd_held_remove(kd_fwd_t *f, kd_task_t *t)
{
        if (!t->held)
                return;
        t->held = 0;
        f->held.cnt--;
        f->held.bytes -= (int64_t)t->bytes;
        f->hooks.room(f);
}

int kd_held_full(const kd_fwd_t *f, const kd_task_t *t)
{
        return f->held.cnt + 1 > (size_t)f->conf->fwd_max_held ||
               f->held.bytes + (int64_t)t->bytes > f->conf->fwd_max_held_bytes;
}
