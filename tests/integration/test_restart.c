/* SPDX-License-Identifier: Apache-2.0 */
/* Integration: recovery from a crash in seconds with static membership
 * (forwarder.static_membership=1, group.instance.id = forwarder.instance).
 *
 * One forwarder (at_least_once, hold horizon 2 s) holds 150 tasks due
 * 4..14 s ahead and 50 due 300 ms after the moment it is killed with
 * SIGKILL (so their claims are FIRING when it dies). It is restarted 1 s
 * later under the same instance. The broker hands the static member its
 * partitions back at once (no session timeout, no rebalance), and the
 * restarted process takes its previous process's FIRING claims over at
 * once instead of waiting out their leases: every task is delivered, none
 * early, each within 5 s of the restart or of its fire-at, whichever is
 * later, and the 50 claimed at the kill within 2 s of the restart (their
 * leases alone would hold them until about 4 s after it).
 *
 * A replay after gc cannot resurrect a cancelled task: X is cancelled,
 * then scheduled with a fire-at 31 days in the past (so its due time alone
 * is older than gc's 30-day retention), beside Y, which fires. The
 * forwarder drops X and fires Y; gc deletes neither row (X's decision is
 * new); a forwarder of a new group (the group's offsets reset to the
 * beginning) reads both again: X is dropped as cancelled, Y skipped as
 * already fired, and the target holds Y once and never X. */
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "it_env.h"
#include "kd_test.h"
#include "kd_util.h"

#define SEC        1000LL
#define N_SPREAD   150
#define N_AT_KILL  50
#define N_TASKS    (N_SPREAD + N_AT_KILL)
#define KILL_AT    (6 * SEC)
#define RESTART_IN (1 * SEC)

static void test_static_member_recovers_in_seconds(void)
{
        char prefix[40], group[64], db[64], url[256], target[96];
        it_unique(prefix, sizeof(prefix), "itrst");
        it_unique(db, sizeof(db), "kdit_rst");
        snprintf(group, sizeof(group), "%s-group", prefix);
        snprintf(target, sizeof(target), "%s.target", prefix);
        CU_ASSERT_EQUAL_FATAL(it_db_create(db, 1, url, sizeof(url)), 0);
        CU_ASSERT_EQUAL_FATAL(it_tiers_create(prefix, url, 2), 0);
        CU_ASSERT_EQUAL_FATAL(it_create_topic(target, 2), 0);

        it_fwd_t f = {.instance = "fwSTATIC", .pid = -1};
        const char *props[] = {"forwarder.static_membership=1",
                               "forwarder.hold_horizon=2s", NULL};
        CU_ASSERT_EQUAL_FATAL(
            it_fwd_start(&f, KDELAY_FORWARDER, prefix, group, url, props), 0);
        CU_ASSERT_EQUAL_FATAL(
            it_wait_log(f.log, "event=partitions_assigned", 30000), 0);

        kdelay_client_t *c = NULL;
        char errstr[512];
        CU_ASSERT_EQUAL_FATAL(kdelay_client_new(&c, it_conf_new(prefix, url),
                                                errstr, sizeof(errstr)),
                              KDELAY_OK);
        int64_t t0 = kd_now_ms(), fire_at[N_TASKS];
        for (int i = 0; i < N_TASKS; i++) {
                fire_at[i] = i < N_SPREAD
                                 ? t0 + 4 * SEC + i * (10 * SEC) / N_SPREAD
                                 : t0 + KILL_AT + 300;
                CU_ASSERT_EQUAL_FATAL(it_schedule_v(c, target, prefix, i,
                                                    fire_at[i], errstr,
                                                    sizeof(errstr)),
                                      KDELAY_OK);
        }
        CU_ASSERT_EQUAL(kdelay_flush(c, 30000), KDELAY_OK);
        kdelay_client_destroy(c);

        it_sleep_until(t0 + KILL_AT);
        int64_t killed = kd_now_ms();
        CU_ASSERT_EQUAL(it_fwd_stop(&f, SIGKILL), 128 + SIGKILL);
        it_sleep_until(killed + RESTART_IN);
        int64_t restarted = kd_now_ms();
        CU_ASSERT_EQUAL_FATAL(
            it_fwd_start(&f, KDELAY_FORWARDER, prefix, group, url, props), 0);

        const char *topics[] = {target, NULL};
        it_msg_t *msgs = NULL;
        CU_ASSERT_EQUAL(it_wait_records(topics, N_TASKS, 40000), N_TASKS);
        size_t cnt = it_consume_all(topics, &msgs, 3000, 30000);
        int seen[N_TASKS] = {0}, early = 0, late = 0, at_kill_late = 0;
        int64_t worst = 0, worst_at_kill = 0;
        for (size_t k = 0; k < cnt; k++) {
                char *id = it_header(&msgs[k], KDELAY_HDR_ID);
                const char *dash = id ? strrchr(id, '-') : NULL;
                int i = dash ? atoi(dash + 1) : -1;
                if (i >= 0 && i < N_TASKS) {
                        seen[i]++;
                        int64_t ts = msgs[k].ts;
                        int64_t from =
                            fire_at[i] > restarted ? fire_at[i] : restarted;
                        early += ts < fire_at[i];
                        late += ts > from + 5 * SEC;
                        if (ts - from > worst)
                                worst = ts - from;
                        if (i >= N_SPREAD) {
                                at_kill_late += ts > restarted + 2 * SEC;
                                if (ts - restarted > worst_at_kill)
                                        worst_at_kill = ts - restarted;
                        }
                }
                free(id);
                it_msg_free(&msgs[k]);
        }
        free(msgs);
        int missing = 0, dups = 0;
        for (int i = 0; i < N_TASKS; i++) {
                missing += !seen[i];
                dups += seen[i] > 1 ? seen[i] - 1 : 0;
        }
        CU_ASSERT_EQUAL(it_fwd_stop(&f, SIGTERM), 0);
        int64_t own =
            it_log_sum(f.log, "event=forwarder_stopped ", "own_takeovers");
        printf("\n  killed at +%lld ms, restarted 1 s later: %zu records, "
               "missing %d, duplicates %d, early %d; worst lateness after "
               "max(fire-at, restart) %lld ms (over 5 s: %d); the %d claimed "
               "at the kill fired by restart + %lld ms (over 2 s: %d); own "
               "claims taken over at once: %lld\n",
               (long long)(killed - t0), cnt, missing, dups, early,
               (long long)worst, late, N_AT_KILL, (long long)worst_at_kill,
               at_kill_late, (long long)own);
        CU_ASSERT_EQUAL(missing, 0);
        CU_ASSERT_EQUAL(early, 0);
        CU_ASSERT_EQUAL(late, 0);
        CU_ASSERT_EQUAL(at_kill_late, 0);
        CU_ASSERT(own >= 1);
        it_db_drop(db);
}

/* Runs kdelayctl with the args (NULL-ended) on prefix and url; its exit
 * status, stdout into *out (caller frees). */
static int ctl(const char *prefix, const char *url, char **out, ...)
{
        it_ctl_opts_t o = {.bin = KDELAY_CTL, .prefix = prefix, .url = url};
        char *err = NULL;
        va_list ap;
        *out = NULL;
        va_start(ap, out);
        int rc = it_ctl_withv(&o, out, &err, ap);
        va_end(ap);
        if (rc)
                fprintf(stderr, "kdelayctl: exit %d: %s", rc, err ? err : "");
        free(err);
        return rc;
}

static int fate_is(const char *prefix, const char *url, const char *id,
                   const char *state)
{
        char *out = NULL;
        int ok =
            ctl(prefix, url, &out, "status", id, (const char *)NULL) == 0 &&
            out && strstr(out, state);
        free(out);
        return ok;
}

static void test_replay_after_gc_keeps_cancel(void)
{
        char prefix[40], group[80], db[64], url[256], target[96];
        char x[80], y[80], at[32], *out = NULL;
        it_unique(prefix, sizeof(prefix), "itrpl");
        it_unique(db, sizeof(db), "kdit_rpl");
        snprintf(target, sizeof(target), "%s.target", prefix);
        snprintf(x, sizeof(x), "%s-x", prefix);
        snprintf(y, sizeof(y), "%s-y", prefix);
        CU_ASSERT_EQUAL_FATAL(it_db_create(db, 1, url, sizeof(url)), 0);
        CU_ASSERT_EQUAL_FATAL(it_tiers_create(prefix, url, 2), 0);
        CU_ASSERT_EQUAL_FATAL(it_create_topic(target, 2), 0);
        snprintf(at, sizeof(at), "%lld",
                 (long long)(kd_now_ms() - 31LL * 86400 * SEC));
        CU_ASSERT_EQUAL(ctl(prefix, url, &out, "cancel", x, (const char *)NULL),
                        0);
        free(out);
        CU_ASSERT_EQUAL(ctl(prefix, url, &out, "schedule", "--topic", target,
                            "--value", "x", "--at", at, "--id", x,
                            (const char *)NULL),
                        0);
        free(out);
        CU_ASSERT_EQUAL(ctl(prefix, url, &out, "schedule", "--topic", target,
                            "--value", "y", "--at", at, "--id", y,
                            (const char *)NULL),
                        0);
        free(out);

        const char *props[] = {"forwarder.stats_interval=1s", NULL};
        const char *topics[] = {target, NULL};
        for (int round = 0; round < 2; round++) {
                /* Round 1 is the replay: a new group starts at the
                 * beginning of every tier partition. */
                snprintf(group, sizeof(group), "%s-group%d", prefix, round);
                it_fwd_t f = {.instance = round ? "fwReplay" : "fwFirst",
                              .pid = -1};
                CU_ASSERT_EQUAL_FATAL(it_fwd_start(&f, KDELAY_FORWARDER, prefix,
                                                   group, url, props),
                                      0);
                CU_ASSERT_EQUAL(it_wait_log(f.log, " cancelled=1 ", 30000), 0);
                if (round == 0) {
                        CU_ASSERT_EQUAL(it_wait_records(topics, 1, 30000), 1);
                        int64_t deadline = kd_now_ms() + 20 * SEC;
                        while (!fate_is(prefix, url, y, "FIRED") &&
                               kd_now_ms() < deadline)
                                usleep(200 * 1000);
                } else {
                        CU_ASSERT_EQUAL(
                            it_wait_log(f.log, " already_fired=1 ", 30000), 0);
                }
                CU_ASSERT_EQUAL(it_fwd_stop(&f, SIGTERM), 0);
                if (round == 0) {
                        /* gc as an operator runs it: the default retention
                         * (30 days). Both rows stay. */
                        CU_ASSERT_EQUAL(ctl(prefix, url, &out, "db", "gc",
                                            (const char *)NULL),
                                        0);
                        CU_ASSERT_PTR_NOT_NULL(out &&
                                               strstr(out, "deleted 0 rows"));
                        free(out);
                }
                CU_ASSERT(fate_is(prefix, url, x, "CANCELLED"));
                CU_ASSERT(fate_is(prefix, url, y, "FIRED"));
        }
        /* On the target: Y once, X never. */
        it_msg_t *msgs = NULL;
        size_t n = it_consume_all(topics, &msgs, 2000, 20000);
        int xs = 0, ys = 0;
        for (size_t i = 0; i < n; i++) {
                xs += msgs[i].len == 1 && !memcmp(msgs[i].value, "x", 1);
                ys += msgs[i].len == 1 && !memcmp(msgs[i].value, "y", 1);
                it_msg_free(&msgs[i]);
        }
        free(msgs);
        printf("\n  replay after gc: on the target x=%d y=%d of %zu\n", xs, ys,
               n);
        CU_ASSERT_EQUAL(xs, 0);
        CU_ASSERT_EQUAL(ys, 1);
        CU_ASSERT_EQUAL(n, 1);
        it_db_drop(db);
}

int main(void)
{
        static const kd_test_case_t cases[] = {
            KD_TEST(test_static_member_recovers_in_seconds),
            KD_TEST(test_replay_after_gc_keeps_cancel), KD_TEST_END};
        return kd_test_run("restart", cases, it_env_init, NULL);
}
