/* SPDX-License-Identifier: Apache-2.0 */
/* Integration: kdelay on a secured Kafka (stack.sh --security sasl_ssl or
 * mtls), every binary as its own principal holding exactly the ACLs of
 * docs/security.md, granted with `stack.sh acl`:
 *
 * - the producer (kdelayctl schedule as User:producer) without an ACL is
 *   refused with "Topic authorization failed" (exit 1); with Write and
 *   Describe on the prefix's tier topics it schedules; a forwarder
 *   without ACLs exits 1 at start (producer_fatal, why=denied);
 * - a forwarder as User:forwarder (group Read; tier topics Read, Write,
 *   Describe; dead-letter and target topics Write, Describe; exactly_once
 *   also TransactionalId Write, Describe on "<group>-") fires one task and
 *   drops one cancelled (kdelayctl cancel needs no Kafka), in both
 *   delivery modes, and logs no authorization failure;
 * - the same forwarder, in both modes, fires 20 tasks for its target and
 *   one for an existing topic it may not write (no ACL, or Describe
 *   only), all due at once: the 20 are delivered, each at most 10 s late
 *   (lateness printed), the other is dead-lettered target-unavailable
 *   with kdelay-dead-error TOPIC_AUTHORIZATION_FAILED within 60 s and its
 *   fate is DEAD, the forwarder keeps running, and in exactly_once its
 *   aborts are bounded (fewer than 15 event=txn_aborted) and the record
 *   went alone (event=txn_solo);
 * - an administrator that is no super user (User:producer again, on a
 *   prefix of its own) is refused `topics create` without ACLs; with
 *   Create, Describe, DescribeConfigs, Read and Write on the prefix and
 *   Describe on the group it runs topics create and check, schedule,
 *   tasks list, reschedule, audit and stats; dead replay of a dead letter
 *   for a target outside the prefix (no DescribeConfigs on it) is not
 *   blocked and says what it could not check;
 * - deploy/docker/entrypoint.sh init as User:forwarder with exactly its
 *   ACLs for fate_outage_policy hold and fire (and the forwarder role's
 *   MySQL grants): a missing needed topic is named with the ACL it lacks
 *   (exit 1), then exit 0 once the admin created it; the forwarder with
 *   the same identity answers /readyz 200.
 *
 * Other helpers (it_create_topic, it_tiers_create, it_wait_records)
 * connect as the admin, through $KDELAY_CLIENT_CONFIG. On a plaintext
 * stack the program says why it skips and exits 77 (ctest: Skipped);
 * scripts/test.sh runs it on a sasl_ssl (Kafka 3.9) and an mtls (Kafka
 * 4.x) stack. */
#include <libgen.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "it_env.h"
#include "kd_schema.h"
#include "kd_test.h"
#include "kd_util.h"

#define SKIP_RC 77

static char tls_dir[512];
static char *out, *err;

/* "name=value" properties of principal p (kafka-tls/client-<p>.properties);
 * the caller frees them (it_props_free). */
static char **props_of(const char *p)
{
        char path[600];
        snprintf(path, sizeof(path), "%s/client-%s.properties", tls_dir, p);
        return it_props_read(path);
}

/* Runs deploy/local/stack.sh acl with the args (NULL-ended). 0 on
 * success, else its output is printed. */
static int acl(const char *first, ...)
{
        char *argv[40];
        int n = 0;
        va_list ap;
        argv[n++] = KDELAY_SOURCE_DIR "/deploy/local/stack.sh";
        argv[n++] = "acl";
        argv[n++] = (char *)first;
        va_start(ap, first);
        for (const char *a; n < 38 && (a = va_arg(ap, const char *));)
                argv[n++] = (char *)a;
        va_end(ap);
        argv[n] = NULL;
        char *o = NULL, *e = NULL;
        int rc = it_run(argv, NULL, &o, &e);
        if (rc)
                printf("\n  stack.sh acl %s ...: exit %d: %s%s", first, rc,
                       o ? o : "", e ? e : "");
        free(o);
        free(e);
        return rc;
}
#define ACL(...) acl(__VA_ARGS__, (const char *)NULL)

/* Runs kdelayctl with the args (NULL-ended), then --brokers, --mysql url,
 * -X topic_prefix=prefix and one -X per property of props (may be NULL:
 * no Kafka identity). Output in out/err; its exit status. */
static int ctl_as(char **props, const char *url, const char *prefix, ...)
{
        static const char *const none[] = {NULL};
        it_ctl_opts_t o = {.bin = KDELAY_CTL,
                           .prefix = prefix,
                           .url = url,
                           .props = props ? (const char *const *)props : none};
        va_list ap;
        va_start(ap, prefix);
        int rc = it_ctl_withv(&o, &out, &err, ap);
        va_end(ap);
        return rc;
}
#define CTL(props, url, prefix, ...)                                           \
        ctl_as(props, url, prefix, __VA_ARGS__, (const char *)NULL)

static int has(const char *s, const char *needle)
{
        return s && strstr(s, needle);
}

/* The forwarder's ACLs of docs/security.md for `delivery`: group Read;
 * tier topics Read, Write, Describe; the dead-letter topic and target
 * Write, Describe; exactly_once also the transactional ids "<group>-". */
static void grant_forwarder(const char *delivery, const char *group,
                            const char *tiers, const char *dead,
                            const char *target)
{
        char txn[80];
        snprintf(txn, sizeof(txn), "%s-", group);
        CU_ASSERT_EQUAL_FATAL(ACL("--add", "--allow-principal",
                                  "User:forwarder", "--operation", "Read",
                                  "--group", group),
                              0);
        CU_ASSERT_EQUAL_FATAL(
            ACL("--add", "--allow-principal", "User:forwarder", "--operation",
                "Read", "--operation", "Write", "--operation", "Describe",
                "--topic", tiers, "--resource-pattern-type", "prefixed"),
            0);
        CU_ASSERT_EQUAL_FATAL(ACL("--add", "--allow-principal",
                                  "User:forwarder", "--operation", "Write",
                                  "--operation", "Describe", "--topic", dead,
                                  "--topic", target),
                              0);
        if (!strcmp(delivery, "exactly_once"))
                CU_ASSERT_EQUAL_FATAL(
                    ACL("--add", "--allow-principal", "User:forwarder",
                        "--operation", "Write", "--operation", "Describe",
                        "--transactional-id", txn, "--resource-pattern-type",
                        "prefixed"),
                    0);
}

/* Starts f as User:forwarder in `delivery` mode for prefix and group,
 * allowed to fire to `allowed` (a forwarder.allowed_targets list), and
 * waits for its assignment. Its Kafka identity comes from its client
 * properties file as it is (kafka_config, the property behind
 * --kafka-config; the file gives the password as a file: reference). */
static void fwd_start_as_forwarder(it_fwd_t *f, const char *delivery,
                                   const char *allowed, const char *prefix,
                                   const char *group, const char *url)
{
        char mode[64], targets[450], kprops[700];
        snprintf(mode, sizeof(mode), "forwarder.delivery=%s", delivery);
        snprintf(targets, sizeof(targets), "forwarder.allowed_targets=%s",
                 allowed);
        snprintf(kprops, sizeof(kprops),
                 "kafka_config=%s/client-forwarder.properties", tls_dir);
        const char *props[] = {"forwarder.hold_horizon=2s", mode, targets,
                               kprops, NULL};
        CU_ASSERT_EQUAL_FATAL(
            it_fwd_start(f, KDELAY_FORWARDER, prefix, group, url, props), 0);
        CU_ASSERT_EQUAL_FATAL(
            it_wait_log(f->log, "event=partitions_assigned", 40000), 0);
}

/* schedule -> fire -> cancel with `delivery`, each binary as its own
 * principal with the documented ACLs. */
static void run_flow(const char *delivery)
{
        char prefix[40], group[64], db[64], url[1024], target[96];
        char tiers[64], dead[96];
        it_unique(prefix, sizeof(prefix), "itacl");
        it_unique(db, sizeof(db), "kdit_acl");
        snprintf(group, sizeof(group), "%s-group", prefix);
        snprintf(target, sizeof(target), "%s.target", prefix);
        snprintf(tiers, sizeof(tiers), "%s.tier.", prefix);
        snprintf(dead, sizeof(dead), "%s.dead", prefix);
        printf("\n  %s, prefix %s\n", delivery, prefix);
        CU_ASSERT_EQUAL_FATAL(it_db_create(db, 1, url, sizeof(url)), 0);
        CU_ASSERT_EQUAL_FATAL(it_tiers_create(prefix, url, 2), 0);
        CU_ASSERT_EQUAL_FATAL(it_create_topic(target, 2), 0);
        char **producer = props_of("producer");
        char **forwarder = props_of("forwarder");
        CU_ASSERT_PTR_NOT_NULL_FATAL(producer);
        CU_ASSERT_PTR_NOT_NULL_FATAL(forwarder);

        /* No ACL yet: the producer is refused, clearly. */
        CU_ASSERT_EQUAL(CTL(producer, url, prefix, "schedule", "--topic",
                            target, "--value", "v", "--delay", "3s", "--id",
                            "refused"),
                        1);
        /* Refused at once: its idempotent producer gets no id (no Write
         * on any topic), or its topic is refused. */
        CU_ASSERT(has(err, "Topic authorization failed") ||
                  has(err, "Cluster authorization failed"));
        printf("  producer without ACLs: %s", err ? err : "(nothing)\n");

        /* So is a forwarder: its idempotent producer gets no producer id
         * (CLUSTER_AUTHORIZATION_FAILED without Write on any topic). */
        if (!strcmp(delivery, "at_least_once")) {
                const char *bare[24];
                int nb = 0;
                for (int i = 0; forwarder[i] && nb < 20; i++)
                        bare[nb++] = forwarder[i];
                bare[nb] = NULL;
                it_fwd_t d = {.instance = "fwDenied", .pid = -1};
                CU_ASSERT_EQUAL_FATAL(it_fwd_start(&d, KDELAY_FORWARDER, prefix,
                                                   group, url, bare),
                                      0);
                int rc = it_wait_pid(d.pid, 30000);
                CU_ASSERT_EQUAL(rc, 1);
                if (rc == -1) /* still running: not left behind */
                        it_fwd_stop(&d, SIGKILL);
                CU_ASSERT_EQUAL(it_log_count(d.log, "why=denied"), 1);
        }

        /* The ACLs of docs/security.md. */
        CU_ASSERT_EQUAL_FATAL(ACL("--add", "--allow-principal", "User:producer",
                                  "--operation", "Write", "--operation",
                                  "Describe", "--topic", tiers,
                                  "--resource-pattern-type", "prefixed"),
                              0);
        grant_forwarder(delivery, group, tiers, dead, target);

        /* The forwarder as User:forwarder. */
        it_fwd_t f = {.instance = "fwAcl", .pid = -1};
        fwd_start_as_forwarder(&f, delivery, target, prefix, group, url);

        /* Schedule two as User:producer, cancel one (MySQL only). */
        char id_fire[80], id_cancel[80];
        snprintf(id_fire, sizeof(id_fire), "%s-fire", prefix);
        snprintf(id_cancel, sizeof(id_cancel), "%s-cancel", prefix);
        CU_ASSERT_EQUAL(CTL(producer, url, prefix, "schedule", "--topic",
                            target, "--value", "v", "--delay", "3s", "--id",
                            id_fire),
                        0);
        CU_ASSERT_EQUAL(CTL(producer, url, prefix, "schedule", "--topic",
                            target, "--value", "v", "--delay", "4s", "--id",
                            id_cancel),
                        0);
        CU_ASSERT_EQUAL(CTL(NULL, url, prefix, "cancel", id_cancel), 0);
        CU_ASSERT(has(out, "CANCELLED"));

        const char *topics[] = {target, NULL};
        CU_ASSERT_EQUAL(it_wait_records(topics, 1, 40000), 1);
        /* The cancelled one is due a second later: it never comes. */
        CU_ASSERT_EQUAL(it_wait_records(topics, 2, 4000), 1);
        int64_t deadline = kd_now_ms() + 20000;
        int fired = 0;
        while (!fired && kd_now_ms() < deadline) {
                if (CTL(NULL, url, prefix, "status", id_fire) == 0 &&
                    has(out, "FIRED"))
                        fired = 1;
                else
                        usleep(200 * 1000);
        }
        CU_ASSERT(fired);
        CU_ASSERT_EQUAL(CTL(NULL, url, prefix, "status", id_cancel), 0);
        CU_ASSERT(has(out, "CANCELLED"));

        /* No denial met on the way. */
        CU_ASSERT_EQUAL(it_log_count(f.log, "authorization failed"), 0);
        CU_ASSERT_EQUAL(it_log_count(f.log, "AUTHORIZATION_FAILED"), 0);
        CU_ASSERT_EQUAL(it_fwd_stop(&f, SIGTERM), 0);
        CU_ASSERT_EQUAL(it_log_sum(f.log, "event=forwarder_stopped", "fired"),
                        1);
        it_props_free(producer);
        it_props_free(forwarder);
        it_db_drop(db);
}

/* The forbidden-target case: innocent tasks for the allowed target and
 * one for an existing topic on which User:forwarder has no Write (no ACL
 * at all, or Describe only), all due at once. */
enum { N_INNOCENT = 20, N_FORBIDDEN = 1 };
/* exactly_once with Describe only is the slow case: one shared abort,
 * then each of its records in a transaction of its own (1.3-2 s late).
 * It was 2-5.7 s while an abort that named only the producer's state
 * (_STATE, INVALID_TXN_STATE) blamed no record and the same refusal
 * aborted up to 15 transactions; EOS_ABORTS_MAX is one shared abort, the
 * culprit's solo aborts (forwarder.abort_limit, 3) and slack for a
 * renewal's or a commit's race. */
#define INNOCENT_LATE_MAX_MS 5000
#define DEAD_LATE_MAX_MS     60000
#define EOS_ABORTS_MAX       8

/* A forwarder as User:forwarder with only its documented ACLs fires
 * N_INNOCENT tasks for the allowed target and N_FORBIDDEN for topics it
 * may not write (in forwarder.allowed_targets: kdelay's allow-list is not
 * what refuses them, Kafka's ACLs are), all due at the same time: every
 * innocent task is delivered, each at most INNOCENT_LATE_MAX_MS late; each
 * forbidden one is dead-lettered target-unavailable with
 * kdelay-dead-error TOPIC_AUTHORIZATION_FAILED within DEAD_LATE_MAX_MS of
 * its due time and its fate is DEAD; the forwarder keeps running; in
 * exactly_once the aborts are bounded (forwarder.abort_limit) and the
 * forbidden records went alone (event=txn_solo) -- unless the producer
 * refused them before they joined a transaction: with no ACL at all the
 * metadata of the target's handle (asked for at the claim,
 * kd_producer.h) already says TOPIC_AUTHORIZATION_FAILED, the produce
 * fails at once and nothing aborts. With Describe only the topic looks
 * writable until the broker answers the produce, so that case still
 * aborts and goes solo. */
static void run_forbidden(const char *delivery, int describe)
{
        char prefix[40], group[64], db[64], url[1024], target[96];
        char tiers[64], dead[96], forb[N_FORBIDDEN][96], errstr[512];
        it_unique(prefix, sizeof(prefix), "itaclf");
        it_unique(db, sizeof(db), "kdit_aclf");
        snprintf(group, sizeof(group), "%s-group", prefix);
        snprintf(target, sizeof(target), "%s.target", prefix);
        snprintf(tiers, sizeof(tiers), "%s.tier.", prefix);
        snprintf(dead, sizeof(dead), "%s.dead", prefix);
        /* Outside "<prefix>.": no prefixed ACL of this test covers it. */
        snprintf(forb[0], sizeof(forb[0]), "%s-%s",
                 describe ? "describeonly" : "noacl", prefix);
        printf("\n  %s, forbidden target %s (%s), prefix %s\n", delivery,
               forb[0], describe ? "Describe only" : "no ACL", prefix);
        CU_ASSERT_EQUAL_FATAL(it_db_create(db, 1, url, sizeof(url)), 0);
        CU_ASSERT_EQUAL_FATAL(it_tiers_create(prefix, url, 2), 0);
        CU_ASSERT_EQUAL_FATAL(it_create_topic(target, 2), 0);
        for (int i = 0; i < N_FORBIDDEN; i++)
                CU_ASSERT_EQUAL_FATAL(it_create_topic(forb[i], 1), 0);
        char **forwarder = props_of("forwarder");
        CU_ASSERT_PTR_NOT_NULL_FATAL(forwarder);
        grant_forwarder(delivery, group, tiers, dead, target);
        if (describe)
                CU_ASSERT_EQUAL_FATAL(ACL("--add", "--allow-principal",
                                          "User:forwarder", "--operation",
                                          "Describe", "--topic", forb[0]),
                                      0);

        char allowed[400];
        snprintf(allowed, sizeof(allowed), "%s,%s", target, forb[0]);
        it_fwd_t f = {.instance = "fwForb", .pid = -1};
        fwd_start_as_forwarder(&f, delivery, allowed, prefix, group, url);

        /* Scheduled by the admin through the library (who schedules does
         * not matter here), all due at `due`. */
        kdelay_conf_t *conf = it_conf_new(prefix, url);
        CU_ASSERT_PTR_NOT_NULL_FATAL(conf);
        kdelay_client_t *c = NULL;
        CU_ASSERT_EQUAL_FATAL(
            kdelay_client_new(&c, conf, errstr, sizeof(errstr)), KDELAY_OK);
        char ids[N_INNOCENT][KDELAY_ID_MAX + 1];
        char bad[N_FORBIDDEN][KDELAY_ID_MAX + 1];
        int64_t due = kd_now_ms() + 8000;
        kdelay_task_t t;
        for (int i = 0; i < N_INNOCENT + N_FORBIDDEN; i++) {
                char key[16];
                snprintf(key, sizeof(key), "k%d", i);
                kdelay_task_init(&t);
                t.topic = i < N_INNOCENT ? target : forb[i - N_INNOCENT];
                t.key = key;
                t.key_len = strlen(key);
                t.value = "v";
                t.value_len = 1;
                t.fire_at_ms = due;
                char *id = i < N_INNOCENT ? ids[i] : bad[i - N_INNOCENT];
                CU_ASSERT_EQUAL_FATAL(kdelay_schedule(c, &t, id,
                                                      KDELAY_ID_MAX + 1, errstr,
                                                      sizeof(errstr)),
                                      KDELAY_OK);
        }
        CU_ASSERT_EQUAL_FATAL(kdelay_flush(c, 30000), KDELAY_OK);
        printf("  scheduled %d + %d, due in %lld ms\n", N_INNOCENT, N_FORBIDDEN,
               (long long)(due - kd_now_ms()));

        /* The innocent ones as a read_committed consumer sees them. */
        const char *tl[] = {target, NULL};
        it_msg_t msgs[N_INNOCENT + 8];
        size_t got =
            it_consume(tl, msgs, N_INNOCENT, (int)(due + 60000 - kd_now_ms()));
        int seen[N_INNOCENT] = {0}, dups = 0, unknown = 0, over = 0;
        int64_t late_vis[N_INNOCENT], late_ts[N_INNOCENT];
        size_t nl = 0;
        for (size_t k = 0; k < got; k++) {
                char *id = it_header(&msgs[k], KDELAY_HDR_ID);
                int i = 0;
                while (id && i < N_INNOCENT && strcmp(id, ids[i]))
                        i++;
                if (!id || i == N_INNOCENT) {
                        unknown++;
                } else if (seen[i]++) {
                        dups++;
                } else {
                        late_vis[nl] = msgs[k].recv_ms - due;
                        late_ts[nl] = msgs[k].ts - due;
                        if (late_vis[nl] > INNOCENT_LATE_MAX_MS) {
                                over++;
                                printf("  LATE %s: %lld ms\n", id,
                                       (long long)late_vis[nl]);
                        }
                        nl++;
                }
                free(id);
                it_msg_free(&msgs[k]);
        }
        int64_t p99, max, p99_ts, max_ts;
        it_report_lateness("innocent (visible)", late_vis, nl, &p99, &max);
        it_report_lateness("innocent (record timestamp)", late_ts, nl, &p99_ts,
                           &max_ts);
        printf("\n  innocent: delivered %zu/%d duplicates=%d unknown=%d "
               "over %d ms late=%d\n",
               nl, N_INNOCENT, dups, unknown, INNOCENT_LATE_MAX_MS, over);
        CU_ASSERT_EQUAL(nl, N_INNOCENT);
        CU_ASSERT_EQUAL(dups, 0);
        CU_ASSERT_EQUAL(unknown, 0);
        CU_ASSERT_EQUAL(over, 0);

        /* The forbidden ones: dead letters with the reason and error. */
        const char *dl[] = {dead, NULL};
        it_msg_t d[N_FORBIDDEN + 4];
        int64_t wait = due + DEAD_LATE_MAX_MS + 5000 - kd_now_ms();
        size_t nd = it_consume(dl, d, N_FORBIDDEN, wait > 0 ? (int)wait : 1);
        int dead_ok[N_FORBIDDEN] = {0};
        for (size_t k = 0; k < nd; k++) {
                char *id = it_header(&d[k], KDELAY_HDR_ID);
                char *reason = it_header(&d[k], KDELAY_HDR_DEAD_REASON);
                char *e = it_header(&d[k], KDELAY_HDR_DEAD_ERROR);
                int i = 0;
                while (id && i < N_FORBIDDEN && strcmp(id, bad[i]))
                        i++;
                int64_t late = d[k].ts - due;
                printf("  dead letter %s (%s): reason=%s error=%s %lld ms "
                       "after due\n",
                       id ? id : "-", i < N_FORBIDDEN ? forb[i] : "unknown",
                       reason ? reason : "-", e ? e : "-", (long long)late);
                CU_ASSERT(i < N_FORBIDDEN);
                CU_ASSERT_STRING_EQUAL(reason ? reason : "",
                                       "target-unavailable");
                CU_ASSERT_STRING_EQUAL(e ? e : "",
                                       "TOPIC_AUTHORIZATION_FAILED");
                CU_ASSERT(late <= DEAD_LATE_MAX_MS);
                if (i < N_FORBIDDEN)
                        dead_ok[i]++;
                free(id);
                free(reason);
                free(e);
                it_msg_free(&d[k]);
        }
        CU_ASSERT_EQUAL(nd, N_FORBIDDEN);
        for (int i = 0; i < N_FORBIDDEN; i++) {
                CU_ASSERT_EQUAL(dead_ok[i], 1);
                /* Its fate: DEAD (settled once its dead letter is). */
                int64_t deadline = kd_now_ms() + 15000;
                int is_dead = 0;
                while (!is_dead && kd_now_ms() < deadline) {
                        if (CTL(NULL, url, prefix, "status", bad[i]) == 0 &&
                            has(out, "DEAD"))
                                is_dead = 1;
                        else
                                usleep(200 * 1000);
                }
                printf("  status %s: %s", bad[i], out ? out : "-\n");
                CU_ASSERT(is_dead);
                CU_ASSERT(has(out, "target-unavailable"));
        }

        /* The forwarder is still running, and what its log says. */
        int alive = it_wait_pid(f.pid, 100) == -1;
        int aborts = it_log_count(f.log, "event=txn_aborted");
        int solos = it_log_count(f.log, "event=txn_solo how=");
        int solo_aborts = it_log_count(f.log, "event=txn_solo_aborted");
        int renewed = it_log_count(f.log, "event=producer_renewed");
        int dead_lettered = it_log_count(f.log, "event=dead_lettered");
        int fire_failed = it_log_count(f.log, "event=fire_failed");
        int denied = it_log_count(f.log, "TOPIC_AUTHORIZATION_FAILED");
        int fatal = it_log_count(f.log, "action=exit");
        /* Refused by the producer itself (the handle's metadata). */
        int refused = it_log_count(f.log, "event=produce_failed as=fire ");
        printf("  forwarder: running=%d txn_aborted=%d txn_solo=%d "
               "txn_solo_aborted=%d producer_renewed=%d dead_lettered=%d "
               "fire_failed=%d refused_at_produce=%d "
               "lines_with_TOPIC_AUTHORIZATION_FAILED=%d action=exit=%d\n",
               alive, aborts, solos, solo_aborts, renewed, dead_lettered,
               fire_failed, refused, denied, fatal);
        CU_ASSERT(alive);
        CU_ASSERT_EQUAL(fatal, 0);
        if (!strcmp(delivery, "exactly_once")) {
                int isolated = aborts >= 1 && solos >= N_FORBIDDEN;
                int early = aborts == 0 && refused >= N_FORBIDDEN;
                printf("  exactly_once: the forbidden task %s\n",
                       early      ? "was refused before any transaction"
                       : isolated ? "aborted a transaction and went solo"
                                  : "left no trace of either mechanism");
                CU_ASSERT(aborts <= EOS_ABORTS_MAX);
                /* Describe only: the broker's answer to the produce is
                 * the first refusal. No ACL: the handle's metadata
                 * usually is (when it came before the fire). */
                CU_ASSERT(describe ? isolated : early || isolated);
        }
        if (alive)
                CU_ASSERT_EQUAL(it_fwd_stop(&f, SIGTERM), 0);
        kdelay_client_destroy(c);
        it_props_free(forwarder);
        it_db_drop(db);
}

static void test_at_least_once(void)
{
        run_flow("at_least_once");
}

static void test_exactly_once(void)
{
        run_flow("exactly_once");
}

static void test_forbidden_at_least_once(void)
{
        run_forbidden("at_least_once", 0);
}

static void test_forbidden_exactly_once(void)
{
        run_forbidden("exactly_once", 0);
}

static void test_describe_only_at_least_once(void)
{
        run_forbidden("at_least_once", 1);
}

static void test_describe_only_exactly_once(void)
{
        run_forbidden("exactly_once", 1);
}

/* dead replay by the administrator p (ACLs on "<prefix>." only) of a dead
 * letter for a target outside the prefix: without Describe and
 * DescribeConfigs on it the check cannot read it, and the replay is not
 * blocked but says so (docs/security.md). */
static void dead_replay_unchecked(char **p, const char *url, const char *gx,
                                  const char *prefix)
{
        char target[96], dead[96], id[96], fire_at[32];
        snprintf(target, sizeof(target), "%s-elsewhere", prefix);
        snprintf(dead, sizeof(dead), "%s.dead", prefix);
        snprintf(id, sizeof(id), "%s-dead", prefix);
        snprintf(fire_at, sizeof(fire_at), "%lld", (long long)kd_now_ms());
        CU_ASSERT_EQUAL_FATAL(it_create_topic(target, 1), 0);
        rd_kafka_t *rk = it_kafka_new(RD_KAFKA_PRODUCER, NULL);
        CU_ASSERT_PTR_NOT_NULL_FATAL(rk);
        CU_ASSERT_EQUAL(
            rd_kafka_producev(
                rk, RD_KAFKA_V_TOPIC(dead), RD_KAFKA_V_VALUE("v", 1),
                RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
                RD_KAFKA_V_HEADER(KDELAY_HDR_ID, id, -1),
                RD_KAFKA_V_HEADER(KDELAY_HDR_TARGET, target, -1),
                RD_KAFKA_V_HEADER(KDELAY_HDR_FIRE_AT, fire_at, -1),
                RD_KAFKA_V_HEADER(KDELAY_HDR_VERSION, KDELAY_WIRE_VERSION, -1),
                RD_KAFKA_V_HEADER(KDELAY_HDR_DEAD_REASON, "target-unavailable",
                                  -1),
                RD_KAFKA_V_END),
            0);
        CU_ASSERT_EQUAL(rd_kafka_flush(rk, 30000), 0);
        rd_kafka_destroy(rk);
        CU_ASSERT_EQUAL(CTL(p, url, prefix, "dead", "replay", "--dry-run",
                            "--json", "--id", id, "-X", gx),
                        0);
        printf("  dead replay --dry-run, no ACL on the target: %s%s",
               out ? out : "", err ? err : "");
        CU_ASSERT(has(out, "\"WOULD_REPLAY\""));
        CU_ASSERT(has(out, "\"target_check\":\"incomplete\""));
        CU_ASSERT(has(out, "\"target_exists\":null"));
        CU_ASSERT(has(out, "existence, key and size not checked"));
        /* With Describe: it exists; its configuration is still unread. */
        CU_ASSERT_EQUAL_FATAL(ACL("--add", "--allow-principal", "User:producer",
                                  "--operation", "Describe", "--topic", target),
                              0);
        CU_ASSERT_EQUAL(
            CTL(p, url, prefix, "dead", "replay", "--id", id, "-X", gx), 0);
        printf("  dead replay, Describe on the target: %s", out ? out : "");
        CU_ASSERT(has(out, " REPLAYED "));
        CU_ASSERT(has(out, "key and size not checked"));
        CU_ASSERT(!has(out, "existence"));
}

/* kdelayctl's Kafka verbs by an administrator that is no super user
 * (User:producer, on a prefix of its own): topics create and check, tasks
 * list, reschedule, audit and stats with the ACLs of docs/security.md. */
static void test_admin(void)
{
        char prefix[40], topics[64], group[64], target[96], id[80];
        it_unique(prefix, sizeof(prefix), "itacla");
        snprintf(topics, sizeof(topics), "%s.", prefix);
        snprintf(group, sizeof(group), "%s-group", prefix);
        snprintf(target, sizeof(target), "%s.target", prefix);
        snprintf(id, sizeof(id), "%s-task", prefix);
        char db[64], url[1024];
        it_unique(db, sizeof(db), "kdit_acla");
        CU_ASSERT_EQUAL_FATAL(it_db_create(db, 1, url, sizeof(url)), 0);
        char gx[96];
        snprintf(gx, sizeof(gx), "forwarder.group_id=%s", group);
        char **p = props_of("producer");
        CU_ASSERT_PTR_NOT_NULL_FATAL(p);
        CU_ASSERT_EQUAL(CTL(p, url, prefix, "topics", "create"), 1);
        CU_ASSERT(has(out, "Authorization failed"));
        CU_ASSERT_EQUAL_FATAL(ACL("--add", "--allow-principal", "User:producer",
                                  "--operation", "Create", "--operation",
                                  "Describe", "--operation", "DescribeConfigs",
                                  "--operation", "Read", "--operation", "Write",
                                  "--topic", topics, "--resource-pattern-type",
                                  "prefixed"),
                              0);
        CU_ASSERT_EQUAL(
            CTL(p, url, prefix, "topics", "create", "--partitions", "1"), 0);
        CU_ASSERT_EQUAL(CTL(p, url, prefix, "topics", "check"), 0);
        /* The target is never created here (the task is only listed and
         * rescheduled): the check that it exists is skipped. */
        CU_ASSERT_EQUAL(CTL(p, url, prefix, "schedule", "--topic", target,
                            "--value", "v", "--delay", "1h", "--id", id,
                            "--no-target-check"),
                        0);
        /* Without Describe on the group, tasks list fails after 10 s with
         * "committed offsets of the tier topics: Local: Timed out"
         * (docs/security.md); not waited for here. */
        CU_ASSERT_EQUAL_FATAL(ACL("--add", "--allow-principal", "User:producer",
                                  "--operation", "Describe", "--group", group),
                              0);
        CU_ASSERT_EQUAL(CTL(p, url, prefix, "tasks", "list", "-X", gx), 0);
        CU_ASSERT(has(out, id));
        CU_ASSERT_EQUAL(
            CTL(p, url, prefix, "reschedule", "--delay", "2h", id, "-X", gx),
            0);
        CU_ASSERT_EQUAL(CTL(p, url, prefix, "audit", "-X", gx), 0);
        CU_ASSERT(has(out, "summary"));
        /* stats: exit 1 for a group without members, but no denial. */
        CU_ASSERT_EQUAL(CTL(p, url, prefix, "stats", "-X", gx), 1);
        CU_ASSERT(has(out, "PENDING"));
        CU_ASSERT(!has(err, "authorization"));
        dead_replay_unchecked(p, url, gx, prefix);
        it_props_free(p);
        it_db_drop(db);
}

/* A MySQL user of this test with the forwarder role's grants
 * (`kdelayctl db grants --role forwarder`) on db; its URL into url. */
static int mysql_forwarder_user(const char *db, const char *user,
                                const char *password, char *url, size_t size)
{
        char sql[512], spec[128], dburl[1024];
        MYSQL *conn = it_mysql_connect();
        if (!conn || it_mysql_url_as(NULL, NULL, db, dburl, sizeof(dburl)))
                return -1;
        snprintf(sql, sizeof(sql), "DROP USER IF EXISTS '%s'@'127.0.0.1'",
                 user);
        int rc = mysql_query(conn, sql);
        snprintf(sql, sizeof(sql),
                 "CREATE USER '%s'@'127.0.0.1' IDENTIFIED BY '%s'", user,
                 password);
        rc = rc || mysql_query(conn, sql);
        snprintf(spec, sizeof(spec), "%s@127.0.0.1", user);
        rc = rc || CTL(NULL, dburl, NULL, "db", "grants", "--role", "forwarder",
                       "--user", spec) != 0;
        for (char *line = rc ? NULL : strtok(out, "\n"); line;
             line = strtok(NULL, "\n"))
                if (strncmp(line, "--", 2) && mysql_query(conn, line)) {
                        printf("\n  %s: %s", line, mysql_error(conn));
                        rc = -1;
                }
        mysql_close(conn);
        return rc || it_mysql_url_as(user, NULL, db, url, size) ? -1 : 0;
}

/* Runs deploy/docker/entrypoint.sh init as a Kubernetes init container
 * or compose's init would: kdelayctl from the build, the configuration
 * file conf, Kafka as User:forwarder (KDELAY_KAFKA_CONFIG: its client
 * properties file as it is), MySQL as url's user (its password by
 * KDELAY_MYSQL_PASSWORD). Output in out/err; its exit status. */
static int entrypoint_init(const char *conf, const char *prefix,
                           const char *url, const char *password)
{
        char bindir[600], e_bin[620], e_conf[600], e_brokers[600], e_url[1100],
            e_kafka[700], e_prefix[100], e_pw[100];
        kd_strlcpy(bindir, KDELAY_CTL, sizeof(bindir));
        snprintf(e_bin, sizeof(e_bin), "KDELAY_BINDIR=%s", dirname(bindir));
        snprintf(e_conf, sizeof(e_conf), "KDELAY_CONFIG=%s", conf);
        snprintf(e_brokers, sizeof(e_brokers), "KDELAY_BROKERS=%s",
                 it_brokers());
        snprintf(e_url, sizeof(e_url), "KDELAY_MYSQL_URL=%s", url);
        snprintf(e_kafka, sizeof(e_kafka),
                 "KDELAY_KAFKA_CONFIG=%s/client-forwarder.properties", tls_dir);
        snprintf(e_prefix, sizeof(e_prefix), "KDELAY_TOPIC_PREFIX=%s", prefix);
        snprintf(e_pw, sizeof(e_pw), "KDELAY_MYSQL_PASSWORD=%s", password);
        /* env(1) replaces what the test's environment has (the stack's
         * URL); the password only through the environment. */
        char *env[] = {e_pw, NULL};
        char *argv[] = {
            "/usr/bin/env", e_bin,
            e_conf,         e_brokers,
            e_url,          e_kafka,
            e_prefix,       KDELAY_SOURCE_DIR "/deploy/docker/entrypoint.sh",
            "init",         NULL};
        free(out);
        free(err);
        out = err = NULL;
        int rc = it_run(argv, env, &out, &err);
        printf("  entrypoint.sh init: exit %d\n%s%s", rc, out ? out : "",
               err ? err : "");
        return rc;
}

/* The init step under least privilege (issue 36): deploy/docker/
 * entrypoint.sh init as User:forwarder holding exactly its ACLs of
 * docs/security.md for `policy` (forwarder.fate_outage_policy, from the
 * configuration file as in Kubernetes), and as a MySQL user with the
 * forwarder role's grants:
 * - with a topic the policy needs missing (the dead-letter topic; under
 *   fire the journal), init exits 1 naming the topic and the ACL it
 *   lacks (Create on topic ...), and creates nothing;
 * - once the admin (a super user: topics create) made them, init exits 0
 *   (under hold the journal, hidden from the forwarder, is "skipped"),
 *   the schema being current needs no CREATE; (hold) with the schema a
 *   version behind, init exits 1 saying the user may not migrate it and
 *   naming the migrate role;
 * - the forwarder with the same identity and configuration gets its
 *   partitions and answers /readyz 200. */
static void run_init(const char *policy)
{
        char prefix[40], group[64], db[64], url[1024], fwd_url[1024];
        char tiers[64], dead[96], journal[96], conf[128], user[64];
        int fire = !strcmp(policy, "fire");
        it_unique(prefix, sizeof(prefix), "itacli");
        it_unique(db, sizeof(db), "kdit_acli");
        snprintf(user, sizeof(user), "kdfwd_%s", prefix);
        snprintf(group, sizeof(group), "%s-group", prefix);
        snprintf(tiers, sizeof(tiers), "%s.tier.", prefix);
        snprintf(dead, sizeof(dead), "%s.dead", prefix);
        snprintf(journal, sizeof(journal), "%s.journal", prefix);
        snprintf(conf, sizeof(conf), "%s.conf", prefix);
        printf("\n  fate_outage_policy=%s, prefix %s\n", policy, prefix);
        FILE *cf = fopen(conf, "w");
        CU_ASSERT_PTR_NOT_NULL_FATAL(cf);
        fprintf(cf,
                "forwarder = { group_id = \"%s\"; fate_outage_policy = "
                "\"%s\"; hold_horizon = \"2s\"; http_listen = "
                "\"127.0.0.1:0\"; };\n",
                group, policy);
        fclose(cf);
        CU_ASSERT_EQUAL_FATAL(it_db_create(db, 1, url, sizeof(url)), 0);
        CU_ASSERT_EQUAL_FATAL(
            mysql_forwarder_user(db, user, "pw-init", fwd_url, sizeof(fwd_url)),
            0);
        /* The admin's topics create (a super user) makes them all; then
         * the one the test wants missing goes. */
        CU_ASSERT_EQUAL_FATAL(it_tiers_create(prefix, url, 1), 0);
        const char *gone = fire ? journal : dead;
        CU_ASSERT_EQUAL_FATAL(it_delete_topic(gone), 0);
        /* Exactly the forwarder's ACLs of docs/security.md. */
        grant_forwarder("at_least_once", group, tiers, dead, dead);
        if (fire) {
                CU_ASSERT_EQUAL_FATAL(
                    ACL("--add", "--allow-principal", "User:forwarder",
                        "--operation", "Read", "--operation", "Write",
                        "--operation", "Describe", "--topic", journal),
                    0);
                char jg[96];
                snprintf(jg, sizeof(jg), "%s.journal", group);
                CU_ASSERT_EQUAL_FATAL(ACL("--add", "--allow-principal",
                                          "User:forwarder", "--operation",
                                          "Read", "--group", jg),
                                      0);
        }

        /* A needed topic missing: named, with the ACL. */
        char want[200];
        snprintf(want, sizeof(want), "lacks ACL Create on topic %s", gone);
        /* e.g. "kdelayctl topics create: topic p.dead: Authorization
         * failed: missing, and this principal lacks ACL Create on topic
         * p.dead (...)" */
        CU_ASSERT_EQUAL(entrypoint_init(conf, prefix, fwd_url, "pw-init"), 1);
        CU_ASSERT(has(err, gone) && has(err, want));
        CU_ASSERT(has(err, "missing"));
        CU_ASSERT(!has(out, "created "));

        /* The admin creates it: init checks and exits 0. */
        CU_ASSERT_EQUAL_FATAL(it_tiers_create(prefix, url, 1), 0);
        CU_ASSERT_EQUAL(entrypoint_init(conf, prefix, fwd_url, "pw-init"), 0);
        CU_ASSERT(has(out, dead) && has(out, " exists "));
        CU_ASSERT(has(out, "schema version"));
        if (fire) {
                CU_ASSERT(!has(out, "skipped"));
        } else {
                char skip[200];
                snprintf(skip, sizeof(skip), "%s", journal);
                CU_ASSERT(has(out, skip) && has(out, "skipped") &&
                          has(out, "fate_outage_policy=fire"));
        }
        CU_ASSERT(!has(out, "FAILED") && !has(err, "FAILED"));
        if (!fire) {
                /* A schema one required version behind: the forwarder's
                 * MySQL user may not migrate it, and init says which role
                 * may. A fresh database is at 11, an opt-in step (a
                 * database at 10 is current): 11 and 10 go. */
                char sql[200];
                snprintf(sql, sizeof(sql),
                         "DELETE FROM `%s`.kdelay_schema ORDER BY version "
                         "DESC LIMIT 2",
                         db);
                MYSQL *conn = it_mysql_connect();
                CU_ASSERT_PTR_NOT_NULL_FATAL(conn);
                CU_ASSERT_EQUAL(mysql_query(conn, sql), 0);
                mysql_close(conn);
                CU_ASSERT_EQUAL(
                    entrypoint_init(conf, prefix, fwd_url, "pw-init"), 1);
                CU_ASSERT(has(err, "may not migrate it") &&
                          has(err, "--role migrate"));
                /* The version it needs (10), not the latest (11: an
                 * opt-in step). */
                char needs[96];
                snprintf(needs, sizeof(needs),
                         "schema version %d, this kdelay needs %d,",
                         kd_schema_needed() - 1, kd_schema_needed());
                CU_ASSERT(has(err, needs));
                /* The migrate role's db migrate (root here) completes it. */
                CU_ASSERT_EQUAL(CTL(NULL, url, prefix, "db", "migrate"), 0);
        }

        /* The forwarder, same identity and configuration: ready. */
        char cprop[160], kprops[700];
        snprintf(cprop, sizeof(cprop), "forwarder.fate_outage_policy=%s",
                 policy);
        snprintf(kprops, sizeof(kprops),
                 "kafka_config=%s/client-forwarder.properties", tls_dir);
        char e_pw[] = "KDELAY_MYSQL_PASSWORD=pw-init";
        const char *fenv[] = {e_pw, NULL};
        const char *props[] = {cprop, kprops, "forwarder.hold_horizon=2s",
                               "forwarder.http_listen=127.0.0.1:0", NULL};
        it_fwd_t f = {.instance = "fwInit", .pid = -1, .env = fenv};
        CU_ASSERT_EQUAL_FATAL(
            it_fwd_start(&f, KDELAY_FORWARDER, prefix, group, fwd_url, props),
            0);
        CU_ASSERT_EQUAL(it_wait_log(f.log, "event=partitions_assigned", 40000),
                        0);
        CU_ASSERT_EQUAL(it_wait_log(f.log, "event=http_listening", 5000), 0);
        unsigned port =
            (unsigned)it_log_sum(f.log, "event=http_listening", "port");
        /* The readiness probe's command (deploy/kubernetes), until it
         * passes: /readyz 200 once the forwarder is ready. */
        char rurl[64];
        snprintf(rurl, sizeof(rurl), "http://127.0.0.1:%u/readyz", port);
        char *const probe[] = {"/usr/bin/curl", "-fsS", "-m", "2", "-o",
                               "/dev/null",     rurl,   NULL};
        int ready = 0;
        for (int64_t end = kd_now_ms() + 30000;
             port && !ready && kd_now_ms() < end;) {
                char *po = NULL, *pe = NULL;
                ready = it_run(probe, NULL, &po, &pe) == 0;
                free(po);
                free(pe);
                if (!ready)
                        usleep(200 * 1000);
        }
        printf("  forwarder as User:forwarder: /readyz %s\n",
               ready ? "200" : "never 200 within 30 s");
        CU_ASSERT(ready);
        CU_ASSERT_EQUAL(it_log_count(f.log, "authorization failed"), 0);
        CU_ASSERT_EQUAL(it_log_count(f.log, "AUTHORIZATION_FAILED"), 0);
        CU_ASSERT_EQUAL(it_fwd_stop(&f, SIGTERM), 0);
        unlink(conf);
        it_db_drop(db);
}

static void test_init_hold(void)
{
        run_init("hold");
}

static void test_init_fire(void)
{
        run_init("fire");
}

int main(void)
{
        const char *sec = getenv("KDELAY_KAFKA_SECURITY");
        const char *cfg = getenv("KDELAY_CLIENT_CONFIG");
        if (!sec || (strcmp(sec, "sasl_ssl") && strcmp(sec, "mtls")) || !cfg ||
            !*cfg) {
                printf("test_kafka_acl: skipped: needs a secured stack "
                       "(stack.sh --security sasl_ssl or mtls, which sets "
                       "KDELAY_KAFKA_SECURITY and KDELAY_CLIENT_CONFIG); "
                       "KDELAY_KAFKA_SECURITY=%s\n",
                       sec ? sec : "(unset)");
                return SKIP_RC;
        }
        /* The binaries run as the principal each test gives them, or as
         * none: not as the admin that stack.sh env's KDELAY_KAFKA_CONFIG
         * names. */
        unsetenv("KDELAY_KAFKA_CONFIG");
        char buf[512];
        kd_strlcpy(buf, cfg, sizeof(buf));
        kd_strlcpy(tls_dir, dirname(buf), sizeof(tls_dir));
        printf("test_kafka_acl: %s, principals' properties in %s\n", sec,
               tls_dir);
        static const kd_test_case_t cases[] = {
            KD_TEST(test_at_least_once),
            KD_TEST(test_exactly_once),
            KD_TEST(test_forbidden_at_least_once),
            KD_TEST(test_forbidden_exactly_once),
            KD_TEST(test_describe_only_at_least_once),
            KD_TEST(test_describe_only_exactly_once),
            KD_TEST(test_admin),
            KD_TEST(test_init_hold),
            KD_TEST(test_init_fire),
            KD_TEST_END};
        int rc = kd_test_run("kafka_acl", cases, it_env_init, NULL);
        free(out);
        free(err);
        return rc;
}
