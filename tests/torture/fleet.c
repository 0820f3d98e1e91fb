/* SPDX-License-Identifier: Apache-2.0 */
/* Forwarder processes: start, signal, reap, read their last statistics. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>

#include "fleet.h"
#include "it_env.h"
#include "kd_util.h"

void tt_fleet_init(tt_fleet_t *f, const tt_opts_t *o, const tt_names_t *n)
{
        memset(f, 0, sizeof(*f));
        f->opts = o;
        f->names = n;
        f->base = o->forwarders;
        for (int i = 0; i < TT_MAX_SLOTS; i++) {
                f->slots[i].pid = -1;
                f->slots[i].peak_rss_kb = -1;
                snprintf(f->slots[i].log, sizeof(f->slots[i].log),
                         "%s/forwarder-%d.log", n->run_dir, i);
        }
}

int tt_fleet_running(const tt_fleet_t *f, int slot)
{
        return f->slots[slot].pid > 0 && !f->slots[slot].stopping;
}

int tt_fleet_start(tt_fleet_t *f, int slot)
{
        const tt_opts_t *o = f->opts;
        tt_slot_t *s = &f->slots[slot];
        char pfx[96], grp[128], inst[64], hold[64], mode[64], rate[64];
        const char *argv[32 + 2 * TT_FWD_PROPS_MAX];
        size_t a = 0;
        snprintf(pfx, sizeof(pfx), "topic_prefix=%s", f->names->prefix);
        snprintf(grp, sizeof(grp), "forwarder.group_id=%s", f->names->group);
        snprintf(inst, sizeof(inst), "forwarder.instance=torture-%d", slot);
        char off[64];
        if (s->clock_offset_ms) { /* the forwarder's test aid */
                snprintf(off, sizeof(off), "KDELAY_TEST_CLOCK_OFFSET_MS=%lld",
                         (long long)s->clock_offset_ms);
                argv[a++] = "/usr/bin/env";
                argv[a++] = off;
        }
        argv[a++] = o->forwarder_path;
        argv[a++] = "--brokers";
        argv[a++] = f->names->brokers;
        argv[a++] = "--mysql";
        argv[a++] = f->names->fw_mysql_url;
        argv[a++] = "-X";
        argv[a++] = "mysql.password_env=" KD_TT_FW_PASSWORD_ENV;
        argv[a++] = "-X";
        argv[a++] = pfx;
        argv[a++] = "-X";
        argv[a++] = grp;
        argv[a++] = "-X";
        argv[a++] = inst;
        argv[a++] = "-X";
        argv[a++] = "forwarder.stats_interval=5s";
        char held_bytes[64];
        snprintf(held_bytes, sizeof(held_bytes),
                 "forwarder.max_held_bytes=%lld", TT_MAX_HELD_BYTES);
        argv[a++] = "-X";
        argv[a++] = held_bytes;
        if (o->hold_horizon_ms > 0) {
                snprintf(hold, sizeof(hold), "forwarder.hold_horizon=%lldms",
                         (long long)o->hold_horizon_ms);
                argv[a++] = "-X";
                argv[a++] = hold;
        }
        /* Only what differs from the forwarder's defaults, so the tool
         * also runs against forwarders that predate these properties. */
        if (o->exactly_once) {
                snprintf(mode, sizeof(mode), "forwarder.delivery=%s", o->mode);
                argv[a++] = "-X";
                argv[a++] = mode;
                /* exactly_once records deliveries as runs of delivered
                 * claims (docs/fate-protocol.md); at_least_once keeps the
                 * default FIRED marks. A -X below overrides it. */
                argv[a++] = "-X";
                argv[a++] = "forwarder.fate_marks=runs";
        }
        if (o->max_fire_rate >= 0) {
                snprintf(rate, sizeof(rate), "forwarder.max_fire_rate=%ld",
                         o->max_fire_rate);
                argv[a++] = "-X";
                argv[a++] = rate;
        }
        for (size_t i = 0; i < o->fwd_props_cnt; i++) {
                argv[a++] = "-X";
                argv[a++] = o->fwd_props[i];
        }
        argv[a] = NULL;
        s->pid = it_spawn((char *const *)argv, s->log);
        if (s->pid <= 0) {
                tt_log("event=forwarder_start_failed slot=%d", slot);
                s->pid = -1;
                return -1;
        }
        s->starts++;
        s->started_ms = kd_mono_ms();
        tt_log("event=forwarder_started slot=%d pid=%d start=%d log=%s", slot,
               (int)s->pid, s->starts, s->log);
        return 0;
}

/* VmHWM of pid in kB from /proc; -1 when unreadable. */
static int64_t peak_rss_kb(pid_t pid)
{
        char path[64], line[256];
        long long kb = -1;
        snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
        FILE *fp = fopen(path, "r");
        while (fp && fgets(line, sizeof(line), fp))
                if (sscanf(line, "VmHWM: %lld kB", &kb) == 1)
                        break;
        if (fp)
                fclose(fp);
        return kb;
}

int tt_fleet_log_count(const tt_fleet_t *f, const char *needle)
{
        int n = 0;
        for (int i = 0; i < TT_MAX_SLOTS; i++) {
                int k = f->slots[i].starts
                            ? it_log_count(f->slots[i].log, needle)
                            : 0;
                n += k > 0 ? k : 0;
        }
        return n;
}

/* The value of field name in line (" name=value", up to a space) into
 * buf; -1 when absent or too long. */
static int log_field(const char *line, const char *name, char *buf, size_t size)
{
        char key[32];
        snprintf(key, sizeof(key), " %s=", name);
        const char *v = strstr(line, key);
        if (!v)
                return -1;
        v += strlen(key);
        size_t n = strcspn(v, " \n");
        if (n == 0 || n >= size)
                return -1;
        memcpy(buf, v, n);
        buf[n] = '\0';
        return 0;
}

/* A log line's ts=YYYY-MM-DDTHH:MM:SS.mmmZ (UTC) in epoch ms; -1 when
 * it has none. */
static int64_t log_ts_ms(const char *line)
{
        struct tm tm;
        int ms = 0;
        memset(&tm, 0, sizeof(tm));
        if (sscanf(line, "ts=%4d-%2d-%2dT%2d:%2d:%2d.%3dZ", &tm.tm_year,
                   &tm.tm_mon, &tm.tm_mday, &tm.tm_hour, &tm.tm_min, &tm.tm_sec,
                   &ms) != 7)
                return -1;
        tm.tm_year -= 1900;
        tm.tm_mon -= 1;
        time_t t = timegm(&tm);
        return t == (time_t)-1 ? -1 : (int64_t)t * 1000 + ms;
}

void tt_fleet_dead_lettered(const tt_fleet_t *f, int64_t from_ms, int64_t to_ms,
                            void (*fn)(const tt_dead_line_t *l, void *ctx),
                            void *ctx)
{
        char line[8192], part[16], off[32];
        for (int i = 0; i < TT_MAX_SLOTS; i++) {
                FILE *fp =
                    f->slots[i].starts ? fopen(f->slots[i].log, "r") : NULL;
                while (fp && fgets(line, sizeof(line), fp)) {
                        tt_dead_line_t l;
                        if (!strstr(line, " event=dead_lettered "))
                                continue;
                        l.ts_ms = log_ts_ms(line);
                        if (l.ts_ms < from_ms || l.ts_ms > to_ms ||
                            log_field(line, "id", l.id, sizeof(l.id)) ||
                            log_field(line, "topic", l.topic,
                                      sizeof(l.topic)) ||
                            log_field(line, "partition", part, sizeof(part)) ||
                            log_field(line, "offset", off, sizeof(off)))
                                continue;
                        l.partition = atoi(part);
                        l.offset = atoll(off);
                        fn(&l, ctx);
                }
                if (fp)
                        fclose(fp);
        }
}

int64_t tt_fleet_peak_rss_kb(const tt_fleet_t *f)
{
        int64_t max = -1;
        for (int i = 0; i < TT_MAX_SLOTS; i++)
                if (f->slots[i].peak_rss_kb > max)
                        max = f->slots[i].peak_rss_kb;
        return max;
}

int tt_fleet_signal(tt_fleet_t *f, int slot, int sig)
{
        tt_slot_t *s = &f->slots[slot];
        if (!tt_fleet_running(f, slot))
                return -1;
        int64_t hwm = peak_rss_kb(s->pid);
        if (hwm > s->peak_rss_kb)
                s->peak_rss_kb = hwm;
        kill(s->pid, sig);
        s->stopping = sig;
        s->young = sig == SIGTERM && kd_mono_ms() - s->started_ms < 200;
        return 0;
}

int tt_fleet_clean_term(const tt_fleet_t *f, int slot, int rc)
{
        return rc == 0 || (rc == 128 + SIGTERM && f->slots[slot].young);
}

int tt_fleet_wait(tt_fleet_t *f, int slot, int timeout_ms)
{
        tt_slot_t *s = &f->slots[slot];
        if (s->pid <= 0)
                return -1;
        int rc = it_wait_pid(s->pid, timeout_ms);
        if (rc < 0) {
                tt_log("event=forwarder_stuck slot=%d pid=%d sig=%d "
                       "action=sigkill log=%s",
                       slot, (int)s->pid, s->stopping, s->log);
                kill(s->pid, SIGKILL);
                f->stuck++;
                rc = it_wait_pid(s->pid, 30000);
        }
        s->pid = -1;
        s->stopping = 0;
        return rc;
}

int tt_fleet_stop(tt_fleet_t *f, int slot, int sig)
{
        if (tt_fleet_signal(f, slot, sig))
                return -1;
        return tt_fleet_wait(f, slot, 30000);
}

int tt_fleet_stop_all(tt_fleet_t *f)
{
        int bad = 0, termed[TT_MAX_SLOTS];
        for (int i = 0; i < TT_MAX_SLOTS; i++) {
                termed[i] = f->slots[i].stopping == SIGTERM;
                if (tt_fleet_running(f, i)) {
                        tt_fleet_signal(f, i, SIGTERM);
                        termed[i] = 1;
                }
        }
        for (int i = 0; i < TT_MAX_SLOTS; i++) {
                if (f->slots[i].pid <= 0)
                        continue;
                int rc = tt_fleet_wait(f, i, 30000);
                if (termed[i] && !tt_fleet_clean_term(f, i, rc)) {
                        tt_log("event=forwarder_unclean_exit slot=%d rc=%d "
                               "log=%s",
                               i, rc, f->slots[i].log);
                        bad++;
                }
        }
        return bad;
}

int tt_fleet_reap(tt_fleet_t *f)
{
        int found = 0;
        for (int i = 0; i < TT_MAX_SLOTS; i++) {
                tt_slot_t *s = &f->slots[i];
                int status;
                if (s->pid <= 0 || s->stopping ||
                    waitpid(s->pid, &status, WNOHANG) != s->pid)
                        continue;
                int rc = WIFEXITED(status) ? WEXITSTATUS(status)
                                           : 128 + WTERMSIG(status);
                tt_log("event=forwarder_died slot=%d pid=%d rc=%d log=%s", i,
                       (int)s->pid, rc, s->log);
                s->pid = -1;
                s->unexpected_exits++;
                found++;
        }
        return found;
}

int tt_fleet_last_stats(const tt_fleet_t *f, int slot, double *spf,
                        long long *fired)
{
        FILE *fp = fopen(f->slots[slot].log, "r");
        char line[4096];
        int found = -1;
        if (!fp)
                return -1;
        while (fgets(line, sizeof(line), fp)) {
                if (!strstr(line, "event=forwarder_stopped"))
                        continue;
                const char *p = strstr(line, " statements_per_fire=");
                const char *q = strstr(line, " fired=");
                if (!p || !q)
                        continue;
                *spf = strtod(p + 21, NULL);
                *fired = strtoll(q + 7, NULL, 10);
                found = 0;
        }
        fclose(fp);
        return found;
}
