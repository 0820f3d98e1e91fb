/* SPDX-License-Identifier: Apache-2.0 */
/* A forwarder made but never run (fwd_offline.h). */
#include "fwd_offline.h"

#include <poll.h>
#include <stdlib.h>
#include <string.h>

#include <kdelay/conf.h>

#include "core/kd_timer.h"
#include "kd_fate_mem.h"
#include "pipeline/kd_held.h"
#include "pipeline/kd_lifecycle.h"
#include "pipeline/kd_pace.h"
#include "store/kd_store.h"

static int born(kd_fwd_t **fp, const char *instance, const kd_clocksrc_t *clock,
                const char *const *kv, kdelay_log_cb_t *log_cb,
                void *log_opaque)
{
        kdelay_conf_t *c = kdelay_conf_new();
        kd_fate_store_t *store = NULL;
        char errstr[256];
        if (!c ||
            kdelay_conf_set(c, "brokers", "127.0.0.1:1", errstr,
                            sizeof(errstr)) ||
            kdelay_conf_set(c, "forwarder.instance", instance, errstr,
                            sizeof(errstr)))
                return -1;
        for (size_t i = 0; kv && kv[i] && kv[i + 1]; i += 2)
                if (kdelay_conf_set(c, kv[i], kv[i + 1], errstr,
                                    sizeof(errstr)))
                        return -1;
        if (log_cb)
                kdelay_conf_set_log_cb(c, log_cb, KDELAY_LOG_INFO, log_opaque);
        if (kd_fate_mem_new(&store))
                return -1;
        return kd_fwd_new(fp, c, store, clock, errstr, sizeof(errstr)) ? -1 : 0;
}

int kd_test_fwd_offline(kd_fwd_t **fp, const char *instance)
{
        return born(fp, instance, NULL, NULL, NULL, NULL);
}

/* The forwarder's monotonic clock, for the store's leases. */
static int64_t fwd_mono(void *arg)
{
        return kd_clocksrc_mono_ms(arg);
}

int kd_test_fwd_vt(kd_fwd_t **fp, const char *instance, int64_t mono_ms,
                   int64_t wall_ms, const char *const *kv)
{
        return kd_test_fwd_vt_log(fp, instance, mono_ms, wall_ms, kv, NULL,
                                  NULL);
}

int kd_test_fwd_vt_log(kd_fwd_t **fp, const char *instance, int64_t mono_ms,
                       int64_t wall_ms, const char *const *kv,
                       kdelay_log_cb_t *log_cb, void *log_opaque)
{
        kd_clocksrc_t clock;
        kd_clocksrc_manual(&clock, mono_ms, wall_ms);
        if (born(fp, instance, &clock, kv, log_cb, log_opaque))
                return -1;
        /* The store's leases pass in the forwarder's time. */
        kd_fate_mem_set_lease_clock(kd_store_fate(*fp), fwd_mono,
                                    &(*fp)->timers.clock);
        return 0;
}

kd_task_t *kd_test_task(const char *id, const char *target, int64_t fire_at_ms)
{
        kd_task_t *t = calloc(1, sizeof(*t));
        if (!t)
                return NULL;
        kd_timer_init(&t->timer, NULL, NULL);
        if (kd_task_set_ids(t, id, strlen(id), target, strlen(target))) {
                free(t);
                return NULL;
        }
        t->rec.fire_at_ms = fire_at_ms;
        t->rec.append_ms = fire_at_ms - 60000;
        t->state = KD_TASK_QUEUED;
        t->bytes = 100;
        return t;
}

kd_task_t *kd_test_task_of(const kd_fwd_t *f, const char *id,
                           const char *target, int64_t fire_at_ms)
{
        kd_task_t *t = kd_test_task(id, target, fire_at_ms);
        if (t)
                kd_pace_rule_find(f, t);
        return t;
}

void kd_test_task_drop(kd_fwd_t *f, kd_task_t *t)
{
        kd_task_detach(f, t);
        kd_held_remove(f, t);
        kd_task_free(t);
}

int kd_test_store_answers(kd_fwd_t *f)
{
        while (kd_store_inflight(f) > 0) {
                struct pollfd pfd = {.fd = kd_store_fd(f), .events = POLLIN};
                if (poll(&pfd, 1, 10000) != 1)
                        return -1;
                kd_store_serve(f);
        }
        return 0;
}

int64_t kd_test_since(const kd_fwd_t *f, int64_t mono0)
{
        return kd_clocksrc_mono_ms(&f->timers.clock) - mono0;
}

int kd_test_step(kd_fwd_t *f, int64_t ms)
{
        for (int64_t i = 0; i < ms; i++) {
                if (kd_clocksrc_advance(&f->timers.clock, 1))
                        return -1;
                kd_timers_run(&f->timers, 1000);
        }
        return 0;
}

kd_task_t *kd_test_task_in(kd_part_t *part, const char *id, const char *target,
                           int64_t fire_at_ms, kd_task_state_t state)
{
        kd_task_t *t = kd_test_task(id, target, fire_at_ms);
        if (!t)
                return NULL;
        t->rec.offset = 7;
        if (kd_offtrack_add(&part->track, 7)) {
                kd_task_free(t);
                return NULL;
        }
        t->part = part;
        part->tasks = t;
        t->state = state;
        return t;
}

int kd_test_step_serving(kd_fwd_t *f, int64_t ms)
{
        for (int64_t i = 0; i < ms; i++)
                if (kd_test_step(f, 1) || kd_test_store_answers(f))
                        return -1;
        return 0;
}

int kd_test_step_to(kd_fwd_t *f, int64_t mono0, int64_t ms)
{
        int64_t left = ms - kd_test_since(f, mono0);
        return left > 0 ? kd_test_step(f, left) : 0;
}
