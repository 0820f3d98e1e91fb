/* SPDX-License-Identifier: Apache-2.0 */
/* The fault schedule and its injector thread (docs/torture.md, "Faults"). */
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "faults.h"
#include "it_env.h"
#include "kd_util.h"
#include "verify.h"

#define SEC 1000LL

static const char *const tt_fault_names[TT_F_KINDS] = {"kill9",
                                                       "sigterm",
                                                       "restart",
                                                       "mysql_stop",
                                                       "mysql_start",
                                                       "kafka_stop",
                                                       "kafka_start",
                                                       "forwarder_add",
                                                       "forwarder_remove",
                                                       "outage_begin",
                                                       "outage_end",
                                                       "mysql_pause",
                                                       "mysql_resume",
                                                       "clock_off",
                                                       "clock_on",
                                                       "mysql_readonly",
                                                       "mysql_writable",
                                                       "dead_topic_delete",
                                                       "dead_topic_create"};

const char *tt_fault_name(tt_fault_kind_t kind)
{
        return tt_fault_names[kind];
}

static int add(tt_faults_t *fs, size_t *cap, int64_t at, tt_fault_kind_t kind,
               int slot, int ref)
{
        if (fs->n == *cap) {
                size_t ncap = *cap ? *cap * 2 : 64;
                tt_fault_t *nv = realloc(fs->v, ncap * sizeof(*nv));
                if (!nv)
                        return -1;
                fs->v = nv;
                *cap = ncap;
        }
        tt_fault_t *f = &fs->v[fs->n];
        memset(f, 0, sizeof(*f));
        f->at_rel = at;
        f->kind = kind;
        f->slot = slot;
        f->id = (int)fs->n;
        f->ref = ref;
        f->done_slot = -1;
        return (int)fs->n++;
}

static int cmp_fault(const void *a, const void *b)
{
        const tt_fault_t *x = a, *y = b;
        if (x->at_rel != y->at_rel)
                return x->at_rel < y->at_rel ? -1 : 1;
        return x->kind < y->kind ? -1 : x->kind > y->kind;
}

/* A stop at `at` and its restart after a pause of 1..3 s. The restart
 * refers to the stop by its planned time (unique: ties are nudged). */
static int add_stop_restart(tt_faults_t *fs, size_t *cap, tt_rng_t *r,
                            int64_t at, tt_fault_kind_t kind, int slot)
{
        int k = add(fs, cap, at, kind, slot, -1);
        if (k < 0)
                return -1;
        return add(fs, cap, at + tt_rng_range(r, 1 * SEC, 3 * SEC),
                   TT_F_RESTART, slot, k);
}

int tt_faults_plan(tt_faults_t *fs, const tt_opts_t *o)
{
        tt_rng_t r;
        size_t cap = 0;
        int64_t w = o->window_ms;
        int base = o->forwarders;
        tt_rng_seed(&r, o->seed, 2);
        fs->v = NULL;
        fs->n = 0;
        /* Process faults in [5%, 66%] of the window; the outage after. */
        int64_t lo = w / 20, hi = w * 66 / 100;
        int n_kill = (int)(w / (30 * SEC)) > 5 ? (int)(w / (30 * SEC)) : 5;
        int n_term = (int)(w / (120 * SEC)) > 1 ? (int)(w / (120 * SEC)) : 1;
        int n_mysql = (int)(w / (300 * SEC)) > 1 ? (int)(w / (300 * SEC)) : 1;
        int n_kafka = (int)(w / (600 * SEC)) > 1 ? (int)(w / (600 * SEC)) : 1;
        int64_t mysql_down = o->full ? 15 * SEC : 5 * SEC;
        /* Longer than the MySQL client's read timeout (30 s) in full. */
        int64_t mysql_pause = o->full ? 40 * SEC : 10 * SEC;
        int64_t mysql_ro = o->full ? 20 * SEC : 6 * SEC;
        /* The fire variant: windows long enough for the forwarders to
         * fire through them (fate_outage_after, then a rebalance's
         * worth of tasks due). */
        if (tt_policy_fire(o) && !o->full) {
                mysql_down = 15 * SEC;
                mysql_ro = 12 * SEC;
        }
        int64_t outage = o->full ? 20 * SEC : 12 * SEC;
        int rc = 0;
        for (int i = 0; i < n_kill && !rc; i++)
                rc = add_stop_restart(fs, &cap, &r, tt_rng_range(&r, lo, hi),
                                      TT_F_KILL9,
                                      (int)tt_rng_range(&r, 0, base - 1)) < 0;
        for (int i = 0; i < n_term && !rc; i++)
                rc = add_stop_restart(fs, &cap, &r, tt_rng_range(&r, lo, hi),
                                      TT_F_TERM,
                                      (int)tt_rng_range(&r, 0, base - 1)) < 0;
        /* The MySQL faults act on one server: read-only is set while it
         * runs, so its window is moved past every stop's. */
        int64_t stop_at[64];
        int n_stops = 0;
        for (int i = 0; i < n_mysql && !rc; i++) {
                int64_t at = w * (50 + 40 * i / n_mysql) / 100 +
                             tt_rng_range(&r, 0, w / 25);
                if (n_stops < 64)
                        stop_at[n_stops++] = at;
                int k = add(fs, &cap, at, TT_F_MYSQL_STOP, -1, -1);
                rc = k < 0 || add(fs, &cap, at + mysql_down, TT_F_MYSQL_START,
                                  -1, k) < 0;
        }
        if (!rc) {
                int64_t at = w * 30 / 100 + tt_rng_range(&r, 0, w / 50);
                int k = add(fs, &cap, at, TT_F_MYSQL_PAUSE, -1, -1);
                rc = k < 0 || add(fs, &cap, at + mysql_pause, TT_F_MYSQL_RESUME,
                                  -1, k) < 0;
        }
        if (!rc) {
                int64_t at = w * 60 / 100 + tt_rng_range(&r, 0, w / 50);
                for (int moved = 1; moved;) {
                        moved = 0;
                        for (int i = 0; i < n_stops; i++)
                                if (at + mysql_ro + SEC > stop_at[i] &&
                                    at < stop_at[i] + mysql_down + SEC) {
                                        at = stop_at[i] + mysql_down + SEC;
                                        moved = 1;
                                }
                }
                int k = add(fs, &cap, at, TT_F_MYSQL_RO, -1, -1);
                rc = k < 0 ||
                     add(fs, &cap, at + mysql_ro, TT_F_MYSQL_RW, -1, k) < 0;
        }
        if (!rc) {
                /* A forwarder host's clock an hour off (full: ahead, then
                 * behind on another slot), 15 s each. */
                int64_t at = w * 40 / 100 + tt_rng_range(&r, 0, w / 50);
                int slot = (int)tt_rng_range(&r, 0, base - 1);
                int k = add(fs, &cap, at, TT_F_CLOCK_OFF, slot, -1);
                if (k >= 0)
                        fs->v[k].arg = 3600000;
                rc = k < 0 ||
                     add(fs, &cap, at + 15 * SEC, TT_F_CLOCK_ON, slot, k) < 0;
                if (!rc && o->full) {
                        at = w * 45 / 100;
                        slot = (slot + 1) % base;
                        k = add(fs, &cap, at, TT_F_CLOCK_OFF, slot, -1);
                        if (k >= 0)
                                fs->v[k].arg = -3600000;
                        rc = k < 0 || add(fs, &cap, at + 15 * SEC,
                                          TT_F_CLOCK_ON, slot, k) < 0;
                }
        }
        for (int i = 0; i < n_kafka && !rc; i++) {
                int64_t at = w * (20 + 40 * i / n_kafka) / 100 +
                             tt_rng_range(&r, 0, w / 25);
                /* Started 2 s after the stop has finished. */
                int k = add(fs, &cap, at, TT_F_KAFKA_STOP, -1, -1);
                rc = k < 0 ||
                     add(fs, &cap, at + 2 * SEC, TT_F_KAFKA_START, -1, k) < 0;
        }
        if (!rc) {
                int64_t at = tt_dead_gone_at(o);
                int k = add(fs, &cap, at, TT_F_DEAD_DELETE, -1, -1);
                rc = k < 0 || add(fs, &cap, at + TT_DEAD_GONE_MS,
                                  TT_F_DEAD_CREATE, -1, k) < 0;
        }
        if (!rc)
                rc = add(fs, &cap, w / 10 + tt_rng_range(&r, 0, w * 3 / 100),
                         TT_F_ADD, base, -1) < 0 ||
                     add(fs, &cap, w * 55 / 100 + tt_rng_range(&r, 0, w / 20),
                         TT_F_REMOVE, base, -1) < 0;
        if (!rc) {
                int64_t at = w * 72 / 100 + tt_rng_range(&r, 0, w * 3 / 100);
                int k = add(fs, &cap, at, TT_F_OUTAGE_BEGIN, -1, -1);
                rc = k < 0 ||
                     add(fs, &cap, at + outage, TT_F_OUTAGE_END, -1, k) < 0;
        }
        if (rc)
                return -1;
        /* Sort by time, then point each ref at its beginning's new index. */
        qsort(fs->v, fs->n, sizeof(*fs->v), cmp_fault);
        int *at_index = calloc(fs->n ? fs->n : 1, sizeof(*at_index));
        if (!at_index)
                return -1;
        for (size_t i = 0; i < fs->n; i++)
                at_index[fs->v[i].id] = (int)i;
        for (size_t i = 0; i < fs->n; i++)
                if (fs->v[i].ref >= 0)
                        fs->v[i].ref = at_index[fs->v[i].ref];
        free(at_index);
        return 0;
}

void tt_faults_print(const tt_faults_t *fs, FILE *out)
{
        fprintf(out, "fault schedule (seconds after T0, planned):\n");
        for (size_t i = 0; i < fs->n; i++) {
                const tt_fault_t *f = &fs->v[i];
                fprintf(out, "  %8.3f  %-16s", (double)f->at_rel / 1000.0,
                        tt_fault_name(f->kind));
                if (f->slot >= 0)
                        fprintf(out, " forwarder slot %d", f->slot);
                fprintf(out, "\n");
        }
        fflush(out);
}

/* Runs deploy/local/stack.sh verb; its output goes to the stack log. */
/* Runs stack.sh VERB [ARG] ("verb arg": split at the space). */
/* The MySQL fault that f ends (its ref) as a window of the counts. */
static void mysql_window(tt_faults_t *fs, const tt_fault_t *f)
{
        tt_fault_counts_t *c = &fs->counts;
        if (f->ref < 0 || c->mysql_wins >= TT_MYSQL_WINS_MAX)
                return;
        c->mysql_win[c->mysql_wins][0] = fs->t0 + fs->v[f->ref].began_rel;
        c->mysql_win[c->mysql_wins][1] = kd_now_ms();
        c->mysql_wins++;
}

/* One `stack.sh VERB [ARG]` ("verb arg": split at the space); its output
 * goes to the stack log. */
static int stack_once(tt_faults_t *fs, const char *verb)
{
        char *out = NULL, *err = NULL, word[64];
        kd_strlcpy(word, verb, sizeof(word));
        char *arg = strchr(word, ' ');
        if (arg)
                *arg++ = '\0';
        char *argv[] = {(char *)fs->stack, word, arg, NULL};
        int rc = it_run(argv, NULL, &out, &err);
        if (fs->stack_log) {
                fprintf(fs->stack_log, "--- stack.sh %s: rc=%d\n%s%s", verb, rc,
                        out ? out : "", err ? err : "");
                fflush(fs->stack_log);
        }
        free(out);
        free(err);
        return rc;
}

/* 1 while the run's retry budget (TT_FAULT_RETRY_BUDGET_MS) lasts. */
static int budget_left(tt_faults_t *fs)
{
        if (fs->budget_off ||
            atomic_load(&fs->retry_spent_ms) < TT_FAULT_RETRY_BUDGET_MS)
                return 1;
        if (!atomic_exchange(&fs->budget_logged, 1))
                tt_log("event=fault_retry_budget_spent budget_s=%d "
                       "whose=harness",
                       TT_FAULT_RETRY_BUDGET_MS / 1000);
        return 0;
}

static void budget_spend(tt_faults_t *fs, int64_t ms)
{
        atomic_fetch_add(&fs->retry_spent_ms, ms);
}

/* Runs op until it returns 0, every TT_FAULT_RETRY_EVERY_MS for up to
 * TT_FAULT_RETRY_BOUND_MS (or the run's stop, or the end of the run's
 * retry budget, which the failed tries spend); each failed try logged. */
static int retry_bounded(tt_faults_t *fs, const char *what,
                         int (*op)(tt_faults_t *fs, const void *arg),
                         const void *arg)
{
        int64_t end = kd_mono_ms() + TT_FAULT_RETRY_BOUND_MS;
        for (int attempt = 1;; attempt++) {
                int64_t began = kd_mono_ms();
                int rc = op(fs, arg);
                if (!rc)
                        return 0;
                int over = kd_mono_ms() >= end || !budget_left(fs) ||
                           tt_sleep_ms(TT_FAULT_RETRY_EVERY_MS, fs->stop);
                budget_spend(fs, kd_mono_ms() - began);
                if (over)
                        return rc;
                atomic_fetch_add(&fs->counts.retried, 1);
                tt_log("event=fault_retry what=\"%s\" attempt=%d rc=%d "
                       "whose=harness",
                       what, attempt, rc);
        }
}

static int stack_op(tt_faults_t *fs, const void *verb)
{
        return stack_once(fs, verb);
}

/* stack.sh verb, tried again within the bound (a stop slow under load, a
 * start while the previous stop still holds the stack's lock). */
static int stack(tt_faults_t *fs, const char *verb)
{
        return retry_bounded(fs, verb, stack_op, verb);
}

/* The planned slot when running, else the next running regular one. */
static int pick_running(const tt_fleet_t *fl, int slot)
{
        for (int k = 0; k < fl->base; k++) {
                int s = (slot + k) % fl->base;
                if (tt_fleet_running(fl, s))
                        return s;
        }
        return -1;
}

/* 1 when Kafka was down, or started less than TT_KAFKA_SETTLE_MS before,
 * at some moment of the shutdown that began at term_ms (epoch ms; it
 * takes at most forwarder.shutdown_timeout, 10 s, plus the restart's
 * wait). */
static int kafka_near(const tt_faults_t *fs, int64_t term_ms)
{
        int64_t stop = atomic_load(&fs->kafka_stop_ms);
        int64_t start = atomic_load(&fs->kafka_start_ms);
        if (!stop || stop > term_ms + 20000) /* after that shutdown */
                return 0;
        int down_now = start < stop;
        return down_now || start + TT_KAFKA_SETTLE_MS >= term_ms;
}

/* Counts how a forwarder stopped with SIGTERM at term_ms (wall) exited:
 * cleanly, with exit 1 near a Kafka stop (the documented exit with a
 * transaction unresolved, or a second fatal producer error while the
 * coordinators load), or uncleanly. */
static void note_term(tt_faults_t *fs, int slot, int rc, int64_t term_ms)
{
        tt_fault_counts_t *c = &fs->counts;
        if (tt_fleet_clean_term(fs->fleet, slot, rc))
                return;
        int down = rc == 1 && kafka_near(fs, term_ms);
        if (down)
                c->terms_kafka_down++;
        else
                c->unclean_terms++;
        tt_log("event=forwarder_unclean_exit slot=%d rc=%d kafka_down=%d", slot,
               rc, down);
}

/* When the last SIGTERM fault on slot began (epoch ms); now if none. */
static int64_t term_began(const tt_faults_t *fs, int slot)
{
        int64_t at = 0;
        for (size_t i = 0; i < fs->n; i++)
                if (fs->v[i].kind == TT_F_TERM && fs->v[i].done_slot == slot &&
                    fs->v[i].began_rel > 0)
                        at = fs->t0 + fs->v[i].began_rel;
        return at ? at : kd_now_ms();
}

static int start_op(tt_faults_t *fs, const void *slot)
{
        return tt_fleet_start(fs->fleet, *(const int *)slot);
}

/* Starts slot's forwarder, tried again within the bound. */
static int start_slot(tt_faults_t *fs, int slot)
{
        return retry_bounded(fs, "forwarder start", start_op, &slot);
}

/* 1 while Kafka is stopped by the stack thread and not started again. */
static int kafka_stopped(const tt_faults_t *fs)
{
        return atomic_load(&fs->kafka_stop_ms) >
               atomic_load(&fs->kafka_start_ms);
}

static int dead_create_op(tt_faults_t *fs, const void *arg)
{
        (void)arg;
        return fs->dead_create(fs->dead_create_arg);
}

/* The dead-letter topic made again once Kafka is back (its precondition:
 * a restart of the stack thread may be under way), tried again within
 * the bound; then the verifier reads it from its beginning. The fault's
 * result is the topic's: a seek the verifier could not make is its own
 * failure (counted there), and is not tried again here (a second seek
 * of the same topic would start its count again). */
static int dead_topic_create(tt_faults_t *fs)
{
        for (int64_t end = kd_mono_ms() + TT_FAULT_RETRY_BOUND_MS;
             kafka_stopped(fs) && kd_mono_ms() < end;)
                if (tt_sleep_ms(500, fs->stop))
                        return -1;
        int rc =
            retry_bounded(fs, "kdelayctl topics create", dead_create_op, NULL);
        if (!rc)
                tt_verifier_dead_back(fs->verifier);
        return rc;
}

/* Test hook of the harness's own failure paths (docs/torture.md,
 * "Verdict"): KDELAY_TORTURE_FAULT_FAIL=KIND:N makes the first N tries of
 * every fault of kind KIND fail as if the harness could not inject it
 * (nothing is done). 1 when this try of f is to fail so. */
static int hook_fails(const tt_fault_t *f)
{
        const char *spec = getenv("KDELAY_TORTURE_FAULT_FAIL");
        const char *name = tt_fault_name(f->kind);
        size_t len = strlen(name);
        if (!spec || strncmp(spec, name, len) || spec[len] != ':')
                return 0;
        return f->defers < atoi(spec + len + 1);
}

/* Test hook (docs/torture.md, "Verdict"):
 * KDELAY_TORTURE_DEAD_DELETE_LATE_MS=N waits N ms between the verifier's
 * pause of the dead-letter topic and its delete, as a slow delete would:
 * the dead letters delivered meanwhile go with the topic. */
static void dead_delete_late(tt_faults_t *fs)
{
        const char *v = getenv("KDELAY_TORTURE_DEAD_DELETE_LATE_MS");
        int ms = v ? atoi(v) : 0;
        if (ms <= 0)
                return;
        tt_log("event=fault_hook kind=dead_topic_delete late_ms=%d", ms);
        tt_sleep_ms(ms, fs->stop);
}

static void run_one(tt_faults_t *fs, tt_fault_t *f, int *in_outage)
{
        tt_fleet_t *fl = fs->fleet;
        tt_fault_counts_t *c = &fs->counts;
        if (hook_fails(f)) {
                tt_log("event=fault_hook kind=%s try=%d action=fail",
                       tt_fault_name(f->kind), f->defers + 1);
                f->rc = -1;
                return;
        }
        switch (f->kind) {
        case TT_F_KILL9:
        case TT_F_TERM:
                /* Signal only: the restart collects the exit, so a slow
                 * shutdown does not hold up the schedule. */
                f->done_slot = pick_running(fl, f->slot);
                if (f->done_slot < 0)
                        break;
                tt_fleet_signal(fl, f->done_slot,
                                f->kind == TT_F_KILL9 ? SIGKILL : SIGTERM);
                if (f->kind == TT_F_KILL9)
                        c->kill9++;
                else
                        c->sigterm++;
                break;
        case TT_F_RESTART:
                /* The outage's end restarts every slot itself. */
                if (f->ref < 0 || fs->v[f->ref].done_slot < 0 || *in_outage ||
                    tt_fleet_running(fl, fs->v[f->ref].done_slot))
                        break;
                f->done_slot = fs->v[f->ref].done_slot;
                /* A retry (the start failed) finds the exit collected:
                 * counting it again would count the harness's failure
                 * (no process: -1) as an unclean exit. */
                if (!f->reaped) {
                        /* Only the SIGTERM fault's own process counts as
                         * its exit: a late schedule may have restarted
                         * the slot since (clock_on collects that exit)
                         * and a kill9 then killed the new process, whose
                         * 137 is no shutdown of the SIGTERM's. */
                        int termed =
                            fl->slots[f->done_slot].stopping == SIGTERM;
                        int rc = tt_fleet_wait(fl, f->done_slot, 30000);
                        f->reaped = 1;
                        if (fs->v[f->ref].kind == TT_F_TERM && termed &&
                            rc >= 0)
                                note_term(fs, f->done_slot, rc,
                                          fs->t0 + fs->v[f->ref].began_rel);
                }
                f->rc = start_slot(fs, f->done_slot);
                break;
        case TT_F_MYSQL_STOP:
                f->rc = stack(fs, "mysql-stop");
                fs->mysql_down = 1;
                c->mysql += f->rc == 0;
                break;
        case TT_F_MYSQL_START:
                f->rc = stack(fs, "mysql-start");
                fs->mysql_down = f->rc != 0;
                mysql_window(fs, f);
                break;
        case TT_F_CLOCK_OFF:
        case TT_F_CLOCK_ON:
                /* A clock step as a restart on a host whose clock is off
                 * (the forwarder reads its offset at start). */
                fl->slots[f->slot].clock_offset_ms =
                    f->kind == TT_F_CLOCK_OFF ? f->arg : 0;
                if (*in_outage)
                        break;
                f->done_slot = f->slot;
                f->rc = 0;
                if (tt_fleet_running(fl, f->slot)) {
                        int64_t at = kd_now_ms();
                        note_term(fs, f->slot,
                                  tt_fleet_stop(fl, f->slot, SIGTERM), at);
                } else {
                        /* A SIGTERM fault's forwarder, not yet collected:
                         * its exit is counted here (the restart that
                         * follows finds the slot running, and skips). */
                        int termed = fl->slots[f->slot].stopping == SIGTERM;
                        int rc = tt_fleet_wait(fl, f->slot, 30000);
                        if (termed && rc >= 0)
                                note_term(fs, f->slot, rc,
                                          term_began(fs, f->slot));
                }
                f->rc = start_slot(fs, f->slot);
                c->clock += f->kind == TT_F_CLOCK_OFF && f->rc == 0;
                break;
        case TT_F_MYSQL_RO:
                f->rc = stack(fs, "mysql-readonly on");
                fs->mysql_ro = f->rc == 0;
                c->mysql_ro += f->rc == 0;
                break;
        case TT_F_MYSQL_RW:
                f->rc = stack(fs, "mysql-readonly off");
                fs->mysql_ro = f->rc != 0;
                mysql_window(fs, f);
                break;
        case TT_F_MYSQL_PAUSE:
                f->rc = stack(fs, "mysql-pause");
                fs->mysql_paused = f->rc == 0;
                c->mysql_pause += f->rc == 0;
                break;
        case TT_F_MYSQL_RESUME:
                f->rc = stack(fs, "mysql-resume");
                fs->mysql_paused = f->rc != 0;
                mysql_window(fs, f);
                break;
        case TT_F_KAFKA_STOP:
                atomic_store(&fs->kafka_stop_ms, kd_now_ms());
                f->rc = stack(fs, "kafka-stop");
                fs->kafka_down = 1;
                c->kafka += f->rc == 0;
                break;
        case TT_F_KAFKA_START:
                f->rc = stack(fs, "kafka-start");
                /* Only a start that worked: Kafka is still down after a
                 * failed one (kafka_stopped, kafka_near). */
                if (!f->rc)
                        atomic_store(&fs->kafka_start_ms, kd_now_ms());
                fs->kafka_down = f->rc != 0;
                break;
        case TT_F_ADD:
                f->done_slot = f->slot;
                f->rc = start_slot(fs, f->slot);
                c->added += f->rc == 0;
                break;
        case TT_F_REMOVE:
                if (!tt_fleet_running(fl, f->slot))
                        break;
                f->done_slot = f->slot;
                /* Its exit status is the product's (note_term), not a
                 * fault the harness failed to inject. */
                note_term(fs, f->slot, tt_fleet_stop(fl, f->slot, SIGTERM),
                          kd_now_ms());
                c->removed++;
                break;
        case TT_F_OUTAGE_BEGIN:
                c->outage_begin = kd_now_ms();
                c->unclean_terms += tt_fleet_stop_all(fl);
                *in_outage = 1;
                c->outage++;
                f->done_slot = 0;
                break;
        case TT_F_OUTAGE_END:
                for (int s = 0; s < fl->base; s++)
                        if (!tt_fleet_running(fl, s)) {
                                tt_fleet_wait(fl, s, 30000);
                                f->rc |= start_slot(fs, s);
                        }
                c->outage_end = kd_now_ms();
                *in_outage = 0;
                f->done_slot = 0;
                break;
        case TT_F_DEAD_DELETE:
                /* What the verifier has not read goes with the topic: it
                 * reads to the end first (no malformed task was written
                 * in the seconds before, TT_DEAD_QUIET_BEFORE); a dead
                 * letter delivered from its look at the ends to the
                 * delete's end goes with the topic (dead_doomed: the
                 * report does not count it as missing). */
                int64_t doomed_from = kd_now_ms();
                if (tt_verifier_dead_gone(fs->verifier, 10000)) {
                        /* Unread first copies would go with the topic: a
                         * product failure for the harness's reason. Not
                         * deleted (not injected); the verifier reads on. */
                        c->dead_unread++;
                        tt_verifier_dead_resume(fs->verifier);
                        f->rc = -1;
                        fs->dead_gone = 0;
                        break;
                }
                dead_delete_late(fs);
                /* Kafka may be starting again: tried for a minute. */
                for (int64_t end = kd_mono_ms() + 60000;
                     (f->rc = it_delete_topic(fs->dead_topic)) &&
                     kd_mono_ms() < end && !tt_sleep_ms(1000, fs->stop);)
                        ;
                fs->dead_gone = f->rc == 0;
                c->dead_topic += f->rc == 0;
                /* Deleted or not (the delete may have gone through before
                 * its answer failed), what came meanwhile may be gone. */
                c->dead_doomed[0] = doomed_from;
                c->dead_doomed[1] = kd_now_ms();
                break;
        case TT_F_DEAD_CREATE:
                if (!fs->dead_gone) {
                        /* Its delete was not injected: the same topic,
                         * read on from where the verifier paused it. */
                        f->rc = tt_verifier_dead_resume(fs->verifier);
                        break;
                }
                f->rc = dead_topic_create(fs);
                fs->dead_gone = f->rc != 0;
                break;
        case TT_F_KINDS:
                break;
        }
}

static int needs_slot(tt_fault_kind_t k)
{
        return k == TT_F_KILL9 || k == TT_F_TERM || k == TT_F_RESTART ||
               k == TT_F_REMOVE || k == TT_F_CLOCK_OFF || k == TT_F_CLOCK_ON;
}

/* A forwarder that died on its own is counted and started again. */
static void restart_crashed(tt_faults_t *fs, int in_outage)
{
        int was[TT_MAX_SLOTS];
        for (int s = 0; s < TT_MAX_SLOTS; s++)
                was[s] = tt_fleet_running(fs->fleet, s);
        int n = tt_fleet_reap(fs->fleet);
        fs->counts.crashes += n;
        for (int s = 0; n && !in_outage && s < TT_MAX_SLOTS; s++)
                if (was[s] && !tt_fleet_running(fs->fleet, s))
                        start_slot(fs, s);
}

/* The injector thread of a fault kind (TT_LANE_*). */
static int lane_of(tt_fault_kind_t k)
{
        if (k == TT_F_DEAD_DELETE || k == TT_F_DEAD_CREATE)
                return TT_LANE_TOPIC;
        return k == TT_F_MYSQL_STOP || k == TT_F_MYSQL_START ||
                       k == TT_F_KAFKA_STOP || k == TT_F_KAFKA_START ||
                       k == TT_F_MYSQL_PAUSE || k == TT_F_MYSQL_RESUME ||
                       k == TT_F_MYSQL_RO || k == TT_F_MYSQL_RW
                   ? TT_LANE_STACK
                   : TT_LANE_PROCESS;
}

/* When f may run, ms after T0: its planned time (or the later one it was
 * put off to); an ending fault keeps its planned gap after its
 * beginning's end. */
static int64_t due_rel(const tt_faults_t *fs, const tt_fault_t *f)
{
        int64_t at = f->retry_rel > f->at_rel ? f->retry_rel : f->at_rel;
        if (f->ref >= 0) {
                const tt_fault_t *b = &fs->v[f->ref];
                int64_t kept = b->ended_rel + (f->at_rel - b->at_rel);
                at = kept > at ? kept : at;
        }
        return at;
}

/* f not injected: the harness's failure, counted by kind. */
static void give_up(tt_faults_t *fs, tt_fault_t *f, int tries, const char *why)
{
        f->done = 1;
        fs->kind_failed[f->kind] = 1;
        atomic_fetch_add(&fs->counts.failed, 1);
        fs->counts.not_injected[f->kind]++;
        tt_log("event=fault_not_injected kind=%s planned_s=%.3f tries=%d "
               "why=%s whose=harness",
               tt_fault_name(f->kind), (double)f->at_rel / 1000.0, tries, why);
}

/* After a run of f: done, put off for later, or (out of tries or out of
 * the run's retry budget) not injected. */
static void settle(tt_faults_t *fs, tt_fault_t *f)
{
        if (!f->rc) {
                f->done = 1;
                return;
        }
        /* The dead-letter topic goes at its planned time or not at all:
         * the plan keeps malformed tasks out of the seconds before it. */
        if (f->defers < TT_FAULT_DEFERS && f->kind != TT_F_DEAD_DELETE &&
            !atomic_load(fs->stop) && budget_left(fs)) {
                budget_spend(fs, TT_FAULT_DEFER_MS);
                f->defers++;
                f->retry_rel = f->ended_rel + TT_FAULT_DEFER_MS;
                fs->counts.deferred++;
                tt_log("event=fault_deferred kind=%s defers=%d retry_s=%.3f "
                       "whose=harness",
                       tt_fault_name(f->kind), f->defers,
                       (double)f->retry_rel / 1000.0);
                return;
        }
        give_up(fs, f, f->defers + 1, "tries_out");
}

/* A beginning (a stop, a kill, a pause: no ref) given up at once, without
 * a try, once the retry budget is spent or its kind was given up before;
 * an ending is still tried (once, when the budget is spent). */
static int give_up_at_once(tt_faults_t *fs, tt_fault_t *f)
{
        if (f->ref >= 0)
                return 0;
        if (fs->kind_failed[f->kind])
                give_up(fs, f, 0, "kind_given_up");
        else if (!budget_left(fs))
                give_up(fs, f, 0, "retry_budget_spent");
        else
                return 0;
        return 1;
}

/* Runs the lane's faults in their planned order (a stop of MySQL never
 * overtakes the end of a pause that ran late); a fault put off for later
 * holds up the lane's next ones, which keep their order and gaps. */
static void *injector(void *arg)
{
        tt_faults_t *fs = ((tt_injector_t *)arg)->fs;
        int lane = ((tt_injector_t *)arg)->lane;
        int in_outage = 0;
        for (size_t i = 0; i < fs->n;) {
                tt_fault_t *f = &fs->v[i];
                if (lane_of(f->kind) != lane || give_up_at_once(fs, f)) {
                        i++;
                        continue;
                }
                if (tt_sleep_until(fs->t0 + due_rel(fs, f), fs->stop))
                        break;
                if (lane == TT_LANE_PROCESS)
                        restart_crashed(fs, in_outage);
                f->rc = 0;
                f->began_rel = kd_now_ms() - fs->t0;
                run_one(fs, f, &in_outage);
                f->ended_rel = kd_now_ms() - fs->t0;
                if (needs_slot(f->kind) && f->done_slot < 0)
                        fs->counts.skipped++;
                tt_log("event=fault kind=%s slot=%d planned_s=%.3f "
                       "began_s=%.3f ended_s=%.3f rc=%d try=%d%s",
                       tt_fault_name(f->kind), f->done_slot,
                       (double)f->at_rel / 1000.0,
                       (double)f->began_rel / 1000.0,
                       (double)f->ended_rel / 1000.0, f->rc, f->defers + 1,
                       needs_slot(f->kind) && f->done_slot < 0 ? " skipped=1"
                                                               : "");
                settle(fs, f);
                i += f->done;
        }
        return NULL;
}

int tt_faults_start(tt_faults_t *fs, int64_t t0)
{
        fs->t0 = t0;
        for (int k = 0; k < TT_LANES; k++) {
                tt_injector_t *in = &fs->inj[k];
                in->fs = fs;
                in->lane = k;
                if (pthread_create(&in->thread, NULL, injector, in))
                        return -1;
                in->started = 1;
        }
        return 0;
}

void tt_faults_join(tt_faults_t *fs)
{
        for (int k = 0; k < TT_LANES; k++)
                if (fs->inj[k].started)
                        pthread_join(fs->inj[k].thread, NULL);
        /* The stack and fleet put back for the drain, whatever the
         * budget. */
        fs->budget_off = 1;
        if (fs->mysql_ro && stack(fs, "mysql-readonly off") == 0)
                fs->mysql_ro = 0;
        if (fs->mysql_paused && stack(fs, "mysql-resume") == 0)
                fs->mysql_paused = 0;
        if (fs->mysql_down && stack(fs, "mysql-start") == 0)
                fs->mysql_down = 0;
        if (fs->kafka_down && stack(fs, "kafka-start") == 0) {
                atomic_store(&fs->kafka_start_ms, kd_now_ms());
                fs->kafka_down = 0;
        }
        if (fs->dead_gone && dead_topic_create(fs) == 0)
                fs->dead_gone = 0;
        fs->counts.crashes += tt_fleet_reap(fs->fleet);
        for (int s = 0; s < fs->fleet->base; s++)
                if (!tt_fleet_running(fs->fleet, s)) {
                        tt_fleet_wait(fs->fleet, s, 30000);
                        start_slot(fs, s);
                }
}

void tt_faults_free(tt_faults_t *fs)
{
        free(fs->v);
        fs->v = NULL;
        fs->n = 0;
}
