/* SPDX-License-Identifier: Apache-2.0 */
/* The configuration object: kdelay properties, librdkafka pass-through,
 * libconfig file loading. The reference, docs/configuration.md, is
 * generated from the property table below. */
#define _POSIX_C_SOURCE 200809L
#include "kd_conf.h"

#include <errno.h>
#include <libconfig.h>
#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <kdelay/kdelay.h>

#include "kd_kprops.h"
#include "kd_listen.h"
#include "kd_log.h"
#include "kd_mysql.h"
#include "kd_ratelimits.h"
#include "kd_secret.h"
#include "kd_targets.h"
#include "kd_util.h"
#include "kd_wire.h"

typedef enum kd_prop_type {
        KD_PROP_STRING,   /* char * */
        KD_PROP_SECRET,   /* char *, read back as "***" */
        KD_PROP_TOPICPFX, /* char *, must make valid topic names */
        KD_PROP_SSLMODE,  /* char *, a kd_mysql_ssl_mode_t name */
        KD_PROP_TARGETS,  /* char *, a kd_targets_t list */
        KD_PROP_RATES,    /* char *, a kd_ratelimits_t list */
        KD_PROP_LISTEN,   /* char *, a kd_listen_t host:port */
        KD_PROP_KFILE,    /* char *, a Kafka client properties file, read */
        KD_PROP_MYSQLURL, /* char *, parsed when set */
        KD_PROP_INT,      /* int, >= min */
        KD_PROP_BYTES,    /* int64_t, >= min */
        KD_PROP_DURATION, /* int64_t ms */
        KD_PROP_TIERS,    /* kd_tiers_t */
        KD_PROP_DELIVERY, /* kd_delivery_t */
        KD_PROP_OUTAGE    /* kd_outage_policy_t */
} kd_prop_type_t;

typedef struct kd_prop {
        const char *name;
        kd_prop_type_t type;
        size_t offset;
        const char *def;   /* default as text; NULL = unset */
        int min;           /* KD_PROP_INT and KD_PROP_BYTES only */
        const char *help;  /* one line of markdown, no '|', for the reference */
        const char *unset; /* reference's default cell when def is NULL;
                              NULL = "—" */
} kd_prop_t;

/* What prop_set accepts, and what the reference says it does. */
#define KD_PROP_INT_MAX     1000000
#define KD_PROP_BYTES_MAX   (1LL << 40) /* "2^40" in messages */
#define KD_TOPIC_PREFIX_MAX 200         /* room for "<prefix>.tier.<tier>" */

#define KD_OFF(field) offsetof(struct kdelay_conf_s, field)

/* Every kdelay property: name, type, field, default, minimum, help text and
 * what the reference shows as default when there is none. The reference in
 * docs/configuration.md is generated from this table (kd_conf_write_reference;
 * docs/development.md says how to refresh it). */
static const kd_prop_t kd_props[] = {
    {"brokers", KD_PROP_STRING, KD_OFF(brokers), "127.0.0.1:9092", 0,
     "Kafka bootstrap servers, `HOST:PORT[,...]` (librdkafka "
     "`bootstrap.servers`)"},
    {"kafka_config", KD_PROP_KFILE, KD_OFF(kafka_config), NULL, 0,
     "a Kafka client properties file (`name=value` lines, as Kafka tools' "
     "`--command-config` and `kcat -F` take) whose librdkafka properties "
     "apply to every Kafka client; `-X` and `kafka` win over them; its "
     "`bootstrap.servers` is the broker list when `brokers` is not set; "
     "read when set, an error names its line",
     "— (none)"},
    {"topic_prefix", KD_PROP_TOPICPFX, KD_OFF(topic_prefix), "kdelay", 0,
     "topics are `<prefix>.tier.<tier>` and `<prefix>.dead`"},
    {"tiers", KD_PROP_TIERS, KD_OFF(tiers),
     "1s,5s,15s,1m,5m,10m,30m,2h,6h,1d,3d,7d", 0,
     "tier delays; in the file a list `[ \"1s\", \"1m\" ]`, on `-X` "
     "comma-separated"},
    {"mysql.url", KD_PROP_MYSQLURL, KD_OFF(mysql_url), NULL, 0,
     "the MySQL database of the fate table; needed by cancel, status, db and "
     "the forwarder",
     "— (unset)"},
    {"mysql.password", KD_PROP_SECRET, KD_OFF(mysql_password), NULL, 0,
     "password, overriding the URL's (prefer the environment variable)"},
    {"mysql.password_file", KD_PROP_STRING, KD_OFF(mysql_password_file), NULL,
     0,
     "file whose first line is the password (systemd: `LoadCredential=` and "
     "`${CREDENTIALS_DIRECTORY}/<name>`), read at each connect when neither "
     "`mysql.password` nor the URL gives one, before `mysql.password_env`"},
    {"mysql.password_env", KD_PROP_STRING, KD_OFF(mysql_password_env),
     KDELAY_MYSQL_PASSWORD_ENV_DEFAULT, 0,
     "environment variable read for the password when neither "
     "`mysql.password` nor the URL gives one"},
    {"mysql.ssl_mode", KD_PROP_SSLMODE, KD_OFF(mysql_ssl_mode), NULL, 0,
     "TLS to MySQL: `DISABLED`, `PREFERRED` (TLS when offered, unverified), "
     "`REQUIRED` (TLS or no connection, unverified), `VERIFY_CA` (the "
     "server's chain checked against `mysql.ssl_ca`), `VERIFY_IDENTITY` (and "
     "its host name); overrides the URL's `ssl-mode`",
     "the URL's, else `PREFERRED`"},
    {"mysql.ssl_ca", KD_PROP_STRING, KD_OFF(mysql_ssl_ca), NULL, 0,
     "PEM file of the CA(s) that sign the MySQL server's certificate; "
     "overrides the URL's `ssl-ca`",
     "the URL's, else none"},
    {"mysql.ssl_cert", KD_PROP_STRING, KD_OFF(mysql_ssl_cert), NULL, 0,
     "PEM file of a client certificate (with `mysql.ssl_key`); overrides the "
     "URL's `ssl-cert`",
     "the URL's, else none"},
    {"mysql.ssl_key", KD_PROP_STRING, KD_OFF(mysql_ssl_key), NULL, 0,
     "PEM file of the client certificate's private key; overrides the URL's "
     "`ssl-key`",
     "the URL's, else none"},
    {"mysql.connect_timeout", KD_PROP_INT, KD_OFF(mysql_connect_timeout_s), "5",
     1, "how long connecting to MySQL may take, in seconds"},
    {"mysql.fate_retention", KD_PROP_DURATION, KD_OFF(fate_retention_ms), "30d",
     0,
     "`kdelayctl db gc` deletes rows of tasks due longer ago than this (keep "
     "it above the tier topics' retention)"},
    {"topics.partitions", KD_PROP_INT, KD_OFF(topics_partitions), "6", 1,
     "partitions of topics created by `kdelayctl topics create`"},
    {"topics.replication_factor", KD_PROP_INT,
     KD_OFF(topics_replication_factor), "-1", -1,
     "replicas of created topics; -1 = the broker's "
     "`default.replication.factor`"},
    {"topics.retention_margin", KD_PROP_DURATION,
     KD_OFF(topics_retention_margin_ms), "7d", 0,
     "tier topic retention = 2 × tier delay + this margin; `topics check` "
     "requires at least tier delay + margin"},
    {"topics.dead_retention", KD_PROP_DURATION, KD_OFF(dead_retention_ms),
     "14d", 0, "retention of the dead-letter topic"},
    {"producer.check_target", KD_PROP_INT, KD_OFF(producer_check_target), "0",
     0,
     "1: schedule refuses a target topic that does not exist (`target topic "
     "'T' does not exist`), from one metadata request per topic and client; "
     "`kdelayctl schedule` sets 1 (`--no-target-check`: 0, for topics created "
     "later); a missing tier topic always fails at once, naming it"},
    {"forwarder.group_id", KD_PROP_STRING, KD_OFF(fwd_group_id),
     "kdelay-forwarder", 0, "consumer group of the forwarders"},
    {"forwarder.instance", KD_PROP_STRING, KD_OFF(fwd_instance), NULL, 0,
     "name in logs and in claim owner tokens ([A-Za-z0-9._-]; other "
     "characters become `_`); give each forwarder a stable one (required for "
     "`exactly_once` unless `forwarder.transactional_id` is set)",
     "`<hostname>-<pid>`"},
    {"forwarder.static_membership", KD_PROP_INT, KD_OFF(fwd_static_membership),
     "0", 0,
     "1: join the consumer group as a static member (`group.instance.id` = "
     "`forwarder.instance`, which must be set): a restart within "
     "`session.timeout.ms` gets its partitions back without a rebalance, and "
     "the FIRING claims of this instance's previous process are taken over "
     "at once; but a stopped member's partitions wait for the session "
     "timeout (docs/forwarder.md)"},
    {"forwarder.hold_horizon", KD_PROP_DURATION, KD_OFF(fwd_hold_horizon_ms),
     "30s", 0,
     "a due task firing within this is held in memory; further away it hops "
     "to a smaller tier"},
    {"forwarder.lookahead", KD_PROP_DURATION, KD_OFF(fwd_lookahead_ms), "200ms",
     0,
     "a partition's head is read this long before it is due (covers fetch "
     "latency)"},
    {"forwarder.claim_ahead", KD_PROP_DURATION, KD_OFF(fwd_claim_ahead_ms),
     "500ms", 0,
     "held tasks are claimed in MySQL this long before `fire-at` (a cancel in "
     "that last moment answers \"too late\"); claims batch for up to half of "
     "it"},
    {"forwarder.foreign_claim_wait", KD_PROP_DURATION,
     KD_OFF(fwd_foreign_wait_ms), "2s", 0,
     "a task found `FIRING` under another forwarder's claim is checked again "
     "after this, and fired only if still not `FIRED` (0 = fire at once)"},
    {"forwarder.claim_lease", KD_PROP_DURATION, KD_OFF(fwd_claim_lease_ms),
     "5s", 0,
     "a claim holds this long by MySQL's clock, renewed while its task is "
     "held or fired; another forwarder takes it over only after it passed "
     "(0 = no lease: forwarder.foreign_claim_wait, then take over)"},
    {"forwarder.max_clock_skew", KD_PROP_DURATION,
     KD_OFF(fwd_max_clock_skew_ms), "250ms", 0,
     "this host's clock found off the broker's by more than this (from the "
     "append times of its own hops) is logged and counted; the forwarder "
     "always runs on the broker's time as far as it can tell, so no fire is "
     "early by the broker's clock"},
    {"forwarder.fate_outage_policy", KD_PROP_OUTAGE, KD_OFF(fwd_outage_policy),
     "hold", 0,
     "what due tasks do while MySQL is unreachable or failing: `hold` "
     "(wait: no task fires without its claim, so a cancel that answered OK "
     "is never delivered) or `fire` (after `forwarder.fate_outage_after`, "
     "fire without a claim and write each such fire to the journal topic "
     "`<topic_prefix>.journal`, applied to the fate table when MySQL "
     "answers again; a cancel from before the outage may then be "
     "delivered, and cancels answer UNKNOWN, retry until the journal is "
     "applied: docs/reliability.md)"},
    {"forwarder.fate_outage_after", KD_PROP_DURATION,
     KD_OFF(fwd_outage_after_ms), "30s", 0,
     "`fire`: how long MySQL must be unreachable or failing (no request "
     "answered; a slow answer is not an outage) before due tasks fire "
     "without a claim"},
    {"forwarder.claim_batch", KD_PROP_INT, KD_OFF(fwd_claim_batch), "500", 1,
     "ids per claim / mark-fired statement"},
    {"forwarder.fault.kill_after_commit", KD_PROP_INT,
     KD_OFF(fwd_fault_kill_after_commit), "0", 0,
     "for tests of crash recovery only: in exactly_once, the forwarder kills "
     "itself (SIGKILL) right after its Nth committed transaction that fired "
     "tasks, before it marks them `FIRED` — the window `kdelayctl audit` "
     "closes; 0 = never"},
    {"forwarder.max_held", KD_PROP_INT, KD_OFF(fwd_max_held), "100000", 1,
     "held tasks at most, with hops and dead letters not yet delivered (at "
     "most a quarter); past it partitions pause (back-pressure), all of "
     "them until the held set is down to half or for 1 s"},
    {"forwarder.max_held_bytes", KD_PROP_BYTES, KD_OFF(fwd_max_held_bytes),
     "268435456", 1024,
     "bytes of held tasks at most, hops and dead letters not yet delivered "
     "included (at most a quarter)"},
    {"forwarder.commit_interval", KD_PROP_DURATION,
     KD_OFF(fwd_commit_interval_ms), "1s", 0,
     "offsets are committed this often (and on revoke and shutdown)"},
    {"forwarder.stats_interval", KD_PROP_DURATION,
     KD_OFF(fwd_stats_interval_ms), "10s", 0,
     "an `event=stats` log line this often; 0 = never"},
    {"forwarder.allowed_targets", KD_PROP_TARGETS, KD_OFF(fwd_allowed_targets),
     NULL, 0,
     "the topics a task may name as its target: topic names and `prefix*` "
     "patterns, comma-separated (in the file also a list); a task for any "
     "other topic goes to the dead-letter topic with reason "
     "`target-forbidden`",
     "— (every topic; a warning at startup)"},
    {"forwarder.http_listen", KD_PROP_LISTEN, KD_OFF(fwd_http_listen), NULL, 0,
     "`host:port` of the forwarder's HTTP endpoint: `/metrics` (Prometheus "
     "text format), `/healthz` (the loop turns), `/readyz` (joined its "
     "group, MySQL answering; a rebalance is not unreadiness for 60 s); unset "
     "or empty = off; port 0 = any free port "
     "(logged as `event=http_listening`); no host (`:9464`), no port or a "
     "port past 65535 stop the binary at startup; 8 connections per client "
     "address, 64 in all of which 8 only for 127.0.0.1 and ::1 (probes), "
     "closed after 3 s without a byte (docs/security.md)",
     "off"},
    {"forwarder.retry_max", KD_PROP_DURATION, KD_OFF(fwd_retry_max_ms), "5s", 0,
     "longest backoff for MySQL and produce retries"},
    {"forwarder.shutdown_timeout", KD_PROP_DURATION,
     KD_OFF(fwd_shutdown_timeout_ms), "10s", 0,
     "how long shutdown and revoke wait for produces in flight"},
    {"forwarder.delivery", KD_PROP_DELIVERY, KD_OFF(fwd_delivery),
     "at_least_once", 0,
     "the forwarder's delivery guarantee; `exactly_once` uses Kafka "
     "transactions (docs/reliability.md)"},
    {"forwarder.transactional_id", KD_PROP_STRING, KD_OFF(fwd_txn_id), NULL, 0,
     "`exactly_once`: the producer's `transactional.id`; stable per "
     "forwarder, so that a restarted one fences its predecessor and aborts "
     "its open transaction at once",
     "`<group_id>-<instance>`"},
    {"forwarder.transaction_interval", KD_PROP_DURATION,
     KD_OFF(fwd_txn_interval_ms), "100ms", 0,
     "`exactly_once`: longest a transaction holding only hops, dead letters, "
     "offsets and a catch-up's fires (each more than 1 s late when "
     "produced) stays open; one holding an on-time fire commits at the next "
     "loop turn (at least 20 ms after the previous commit)"},
    {"forwarder.abort_limit", KD_PROP_INT, KD_OFF(fwd_abort_limit), "3", 1,
     "`exactly_once`: a task whose transactions keep aborting is produced "
     "alone, in a transaction of its own; after this many such "
     "transactions abort (only one when the broker refused the record "
     "itself) it goes to the dead-letter topic with the error as its "
     "reason, so that it cannot stop the others"},
    {"forwarder.max_fire_rate", KD_PROP_INT, KD_OFF(fwd_max_fire_rate), "0", 0,
     "most fires per second per forwarder (0 = no limit); smooths the "
     "catch-up after an outage, in due order"},
    {"forwarder.target_rate_limits", KD_PROP_RATES,
     KD_OFF(fwd_target_rate_limits), NULL, 0,
     "most fires per second to a target topic or to the topics of a "
     "`prefix*`, for the whole group: `TARGET=RATE[/BURST]`, "
     "comma-separated (in the file also a list); each forwarder takes its "
     "share by the tier partitions it holds; fires to a limited target "
     "wait, in due order, never early",
     "— (no target limited)"},
};

const char *const kd_producer_forced[] = {"enable.idempotence", "true", "acks",
                                          "all", NULL};

static const char *const kd_delivery_names[] = {"at_least_once",
                                                "exactly_once"};
static const char *const kd_outage_names[] = {"hold", "fire"};

/* The names a KD_PROP_DELIVERY or KD_PROP_OUTAGE property takes, in its
 * enum's order (two each). */
static const char *const *choice_names(kd_prop_type_t type)
{
        return type == KD_PROP_DELIVERY ? kd_delivery_names : kd_outage_names;
}

static kdelay_err_t kv_put(kdelay_conf_t *conf, const char *name,
                           const char *value);
static kdelay_err_t kfile_load(kdelay_conf_t *conf, const char *path,
                               char *errstr, size_t errstr_size);
static void kv_free(char **kv, size_t cnt);
static kdelay_err_t set_kafka(kdelay_conf_t *conf, const char *name,
                              const char *value, char *why, size_t why_size);

static const kd_prop_t *prop_find(const char *name)
{
        for (size_t i = 0; i < KD_ARRAY_LEN(kd_props); i++)
                if (strcmp(kd_props[i].name, name) == 0)
                        return &kd_props[i];
        return NULL;
}

static kdelay_err_t prop_set(kdelay_conf_t *conf, const kd_prop_t *p,
                             const char *value, char *errstr,
                             size_t errstr_size)
{
        void *field = (char *)conf + p->offset;
        switch (p->type) {
        case KD_PROP_TOPICPFX:
                /* The longest generated name is "<prefix>.tier.<tier>". */
                if (!kd_wire_topic_valid(value, strlen(value)) ||
                    strlen(value) > KD_TOPIC_PREFIX_MAX)
                        return kd_fail(KDELAY_ERR_INVALID_TOPIC, errstr,
                                       errstr_size,
                                       "%s: \"%s\" does not make valid "
                                       "Kafka topic names ([A-Za-z0-9._-], "
                                       "at most %d chars)",
                                       p->name, value, KD_TOPIC_PREFIX_MAX);
                /* fallthrough */
        case KD_PROP_TARGETS:
                if (p->type == KD_PROP_TARGETS && *value) {
                        kd_targets_t t;
                        kdelay_err_t err =
                            kd_targets_parse(&t, value, errstr, errstr_size);
                        if (err)
                                return err;
                        kd_targets_clear(&t);
                }
                /* fallthrough */
        case KD_PROP_RATES:
                if (p->type == KD_PROP_RATES && *value) {
                        kd_ratelimits_t l;
                        kdelay_err_t err =
                            kd_ratelimits_parse(&l, value, errstr, errstr_size);
                        if (err)
                                return err;
                        kd_ratelimits_clear(&l);
                }
                /* fallthrough */
        case KD_PROP_LISTEN:
                if (p->type == KD_PROP_LISTEN && *value) {
                        kd_listen_t l;
                        kdelay_err_t err =
                            kd_listen_parse(&l, value, errstr, errstr_size);
                        if (err)
                                return err;
                }
                /* fallthrough */
        case KD_PROP_SSLMODE:
                if (p->type == KD_PROP_SSLMODE && *value) {
                        kd_mysql_ssl_mode_t m;
                        if (kd_mysql_ssl_mode_parse(value, &m))
                                return kd_fail(
                                    KDELAY_ERR_CONFIG, errstr, errstr_size,
                                    "%s: \"%s\" is not DISABLED, PREFERRED, "
                                    "REQUIRED, VERIFY_CA or VERIFY_IDENTITY",
                                    p->name, value);
                }
                /* fallthrough */
        case KD_PROP_KFILE:
                if (p->type == KD_PROP_KFILE) {
                        kdelay_err_t err =
                            kfile_load(conf, value, errstr, errstr_size);
                        if (err)
                                return err;
                }
                /* fallthrough */
        case KD_PROP_MYSQLURL:
                if (p->type == KD_PROP_MYSQLURL && *value) {
                        kd_mysql_params_t mp;
                        kdelay_err_t err =
                            kd_mysql_url_parse(value, &mp, errstr, errstr_size);
                        if (err)
                                return err;
                        kd_mysql_params_clear(&mp);
                }
                /* fallthrough */
        case KD_PROP_STRING:
        case KD_PROP_SECRET: {
                if (!*value && p->def)
                        return kd_fail(KDELAY_ERR_CONFIG, errstr, errstr_size,
                                       "%s must not be empty", p->name);
                char *copy = *value ? strdup(value) : NULL;
                if (*value && !copy)
                        return KDELAY_ERR_NO_MEMORY;
                free(*(char **)field);
                *(char **)field = copy;
                return KDELAY_OK;
        }
        case KD_PROP_INT: {
                char *end;
                errno = 0;
                long v = strtol(value, &end, 10);
                if (errno || end == value || *end || v < p->min ||
                    v > KD_PROP_INT_MAX)
                        return kd_fail(KDELAY_ERR_CONFIG, errstr, errstr_size,
                                       "%s: \"%s\" is not an integer in "
                                       "[%d, %d]",
                                       p->name, value, p->min, KD_PROP_INT_MAX);
                *(int *)field = (int)v;
                return KDELAY_OK;
        }
        case KD_PROP_BYTES: {
                char *end;
                errno = 0;
                long long v = strtoll(value, &end, 10);
                if (errno || end == value || *end || v < p->min ||
                    v > KD_PROP_BYTES_MAX)
                        return kd_fail(KDELAY_ERR_CONFIG, errstr, errstr_size,
                                       "%s: \"%s\" is not a byte count in "
                                       "[%d, 2^40]",
                                       p->name, value, p->min);
                *(int64_t *)field = v;
                return KDELAY_OK;
        }
        case KD_PROP_DURATION: {
                int64_t ms;
                if (kdelay_duration_parse(value, &ms) != KDELAY_OK)
                        return kd_fail(KDELAY_ERR_INVALID_DURATION, errstr,
                                       errstr_size,
                                       "%s: \"%s\" is not a duration (e.g. "
                                       "250ms, 30s, 5m, 2h, 7d)",
                                       p->name, value);
                *(int64_t *)field = ms;
                return KDELAY_OK;
        }
        case KD_PROP_DELIVERY:
        case KD_PROP_OUTAGE: {
                const char *const *names = choice_names(p->type);
                for (int i = 0; i < 2; i++) {
                        if (!strcmp(value, names[i])) {
                                *(int *)field = i;
                                return KDELAY_OK;
                        }
                }
                return kd_fail(KDELAY_ERR_CONFIG, errstr, errstr_size,
                               "%s: \"%s\" is not %s or %s", p->name, value,
                               names[0], names[1]);
        }
        case KD_PROP_TIERS: {
                char why[200];
                kd_tiers_t t;
                if (kd_tiers_parse(&t, value, why, sizeof(why)) != KDELAY_OK)
                        return kd_fail(KDELAY_ERR_INVALID_TIERS, errstr,
                                       errstr_size, "%s: %s", p->name, why);
                *(kd_tiers_t *)field = t;
                return KDELAY_OK;
        }
        }
        return KDELAY_ERR_INVALID_ARG;
}

kdelay_conf_t *kdelay_conf_new(void)
{
        kdelay_conf_t *conf = calloc(1, sizeof(*conf));
        if (!conf)
                return NULL;
        conf->log_level = KDELAY_LOG_INFO;
        conf->rk_conf = rd_kafka_conf_new();
        if (!conf->rk_conf)
                goto fail;
        for (size_t i = 0; i < KD_ARRAY_LEN(kd_props); i++) {
                if (kd_props[i].def &&
                    prop_set(conf, &kd_props[i], kd_props[i].def, NULL, 0))
                        goto fail;
        }
        conf->brokers_set = 0; /* the default is not a setting */
        return conf;
fail:
        kdelay_conf_destroy(conf);
        return NULL;
}

kdelay_conf_t *kdelay_conf_dup(const kdelay_conf_t *src)
{
        kdelay_conf_t *conf = calloc(1, sizeof(*conf));
        if (!conf)
                return NULL;
        *conf = *src;
        conf->rk_conf = NULL;
        conf->kafka_kv = NULL;
        conf->kafka_kv_cnt = 0;
        conf->kafka_file_kv = NULL;
        conf->kafka_file_kv_cnt = 0;
        conf->kafka_file_brokers = NULL;
        for (size_t i = 0; i < KD_ARRAY_LEN(kd_props); i++) {
                const kd_prop_t *p = &kd_props[i];
                if (p->type > KD_PROP_MYSQLURL)
                        continue;
                char **field = (char **)((char *)conf + p->offset);
                *field = NULL;
        }
        for (size_t i = 0; i < KD_ARRAY_LEN(kd_props); i++) {
                const kd_prop_t *p = &kd_props[i];
                if (p->type > KD_PROP_MYSQLURL)
                        continue;
                const char *s = *(char *const *)((const char *)src + p->offset);
                char **field = (char **)((char *)conf + p->offset);
                if (s && !(*field = strdup(s)))
                        goto fail;
        }
        if (!(conf->rk_conf = rd_kafka_conf_dup(src->rk_conf)))
                goto fail;
        for (size_t i = 0; i < src->kafka_kv_cnt; i += 2)
                if (kv_put(conf, src->kafka_kv[i], src->kafka_kv[i + 1]))
                        goto fail;
        if (src->kafka_file_kv_cnt &&
            !(conf->kafka_file_kv =
                  calloc(src->kafka_file_kv_cnt, sizeof(char *))))
                goto fail;
        for (; conf->kafka_file_kv_cnt < src->kafka_file_kv_cnt;
             conf->kafka_file_kv_cnt++) {
                size_t i = conf->kafka_file_kv_cnt;
                if (!(conf->kafka_file_kv[i] = strdup(src->kafka_file_kv[i])))
                        goto fail;
        }
        if (src->kafka_file_brokers &&
            !(conf->kafka_file_brokers = strdup(src->kafka_file_brokers)))
                goto fail;
        return conf;
fail:
        kdelay_conf_destroy(conf);
        return NULL;
}

void kdelay_conf_destroy(kdelay_conf_t *conf)
{
        if (!conf)
                return;
        for (size_t i = 0; i < KD_ARRAY_LEN(kd_props); i++) {
                const kd_prop_t *p = &kd_props[i];
                if (p->type <= KD_PROP_MYSQLURL)
                        free(*(char **)((char *)conf + p->offset));
        }
        if (conf->rk_conf)
                rd_kafka_conf_destroy(conf->rk_conf);
        kv_free(conf->kafka_kv, conf->kafka_kv_cnt);
        kv_free(conf->kafka_file_kv, conf->kafka_file_kv_cnt);
        free(conf->kafka_file_brokers);
        free(conf);
}

kdelay_err_t kdelay_conf_set(kdelay_conf_t *conf, const char *name,
                             const char *value, char *errstr,
                             size_t errstr_size)
{
        if (!conf || !name || !value)
                return kd_fail(KDELAY_ERR_INVALID_ARG, errstr, errstr_size,
                               "conf, name and value are required");
        const kd_prop_t *p = prop_find(name);
        if (!p)
                return kd_fail(KDELAY_ERR_UNKNOWN_PROPERTY, errstr, errstr_size,
                               "unknown kdelay property \"%s\"", name);
        char *resolved = NULL; /* owned; wiped when freed */
        if (kd_secret_is_ref(value)) {
                kdelay_err_t err = kd_secret_resolve(name, value, &resolved,
                                                     errstr, errstr_size);
                if (err)
                        return err;
                value = resolved;
        }
        kdelay_err_t err = prop_set(conf, p, value, errstr, errstr_size);
        kd_secret_free(resolved);
        if (!err && !strcmp(p->name, "brokers"))
                conf->brokers_set = 1;
        return err;
}

/* Records a pass-through property, replacing an earlier value. */
static kdelay_err_t kv_put(kdelay_conf_t *conf, const char *name,
                           const char *value)
{
        char *v = strdup(value);
        if (!v)
                return KDELAY_ERR_NO_MEMORY;
        for (size_t i = 0; i < conf->kafka_kv_cnt; i += 2) {
                if (strcmp(conf->kafka_kv[i], name) == 0) {
                        free(conf->kafka_kv[i + 1]);
                        conf->kafka_kv[i + 1] = v;
                        return KDELAY_OK;
                }
        }
        char *n = strdup(name);
        char **kv =
            realloc(conf->kafka_kv, (conf->kafka_kv_cnt + 2) * sizeof(*kv));
        if (!n || !kv) {
                free(n);
                free(v);
                if (kv)
                        conf->kafka_kv = kv;
                return KDELAY_ERR_NO_MEMORY;
        }
        kv[conf->kafka_kv_cnt++] = n;
        kv[conf->kafka_kv_cnt++] = v;
        conf->kafka_kv = kv;
        return KDELAY_OK;
}

static void kv_free(char **kv, size_t cnt)
{
        for (size_t i = 0; i < cnt; i++)
                free(kv[i]);
        free(kv);
}

/* What kfile_load gathers from a Kafka client properties file. */
typedef struct kfile {
        rd_kafka_conf_t *check; /* validates the properties */
        char **kv;              /* name,value,... (last value of a name) */
        size_t cnt;
        char *brokers; /* its bootstrap.servers */
        unsigned mode; /* the file's st_mode */
} kfile_t;

static kdelay_err_t kfile_put(kfile_t *kf, const char *name, const char *value)
{
        char *v = strdup(value);
        if (!v)
                return KDELAY_ERR_NO_MEMORY;
        for (size_t i = 0; i < kf->cnt; i += 2) {
                if (!strcmp(kf->kv[i], name)) {
                        free(kf->kv[i + 1]);
                        kf->kv[i + 1] = v;
                        return KDELAY_OK;
                }
        }
        char *n = strdup(name);
        char **kv = n ? realloc(kf->kv, (kf->cnt + 2) * sizeof(*kv)) : NULL;
        if (!kv) {
                free(n);
                free(v);
                return KDELAY_ERR_NO_MEMORY;
        }
        kv[kf->cnt++] = n;
        kv[kf->cnt++] = v;
        kf->kv = kv;
        return KDELAY_OK;
}

/* kd_kprops_fn: one property of the file, checked against librdkafka. */
static kdelay_err_t kfile_prop(const char *name, const char *value, int line,
                               void *opaque, char *errstr, size_t errstr_size)
{
        kfile_t *kf = opaque;
        char why[512] = "";
        char *resolved = NULL; /* an env: or file: value's */
        (void)line;
        /* A secret by value is refused in a file others may read, as a
         * file: reference to such a file is; never the value shown. */
        if (*value && !kd_secret_is_ref(value) && kd_secret_name(name) &&
            kd_secret_mode_shared(kf->mode))
                return kd_fail(KDELAY_ERR_CONFIG, errstr, errstr_size,
                               "%s holds a secret but the file's mode is "
                               "%04o: group and others may not read or "
                               "write it (chmod 600 or 400, or give %s as "
                               "file:PATH or env:NAME)",
                               name, kf->mode & 07777u, name);
        if (kd_secret_is_ref(value)) {
                kdelay_err_t err =
                    kd_secret_resolve(name, value, &resolved, why, sizeof(why));
                if (err)
                        return kd_fail(err, errstr, errstr_size, "%s", why);
                value = resolved;
        }
        kdelay_err_t err = KDELAY_OK;
        if (!strcmp(name, "bootstrap.servers")) {
                char *b = *value ? strdup(value) : NULL;
                if (*value && !b)
                        err = KDELAY_ERR_NO_MEMORY;
                else {
                        free(kf->brokers);
                        kf->brokers = b;
                }
        } else {
                rd_kafka_conf_res_t res =
                    rd_kafka_conf_set(kf->check, name, value, why, sizeof(why));
                if (res == RD_KAFKA_CONF_OK)
                        err = kfile_put(kf, name, value);
                else if (res == RD_KAFKA_CONF_UNKNOWN)
                        err = kd_fail(KDELAY_ERR_UNKNOWN_PROPERTY, errstr,
                                      errstr_size,
                                      "unknown librdkafka property %s", name);
                else if (resolved || kd_conf_name_is_secret(name))
                        /* librdkafka's reason quotes the value */
                        err = kd_fail(
                            KDELAY_ERR_CONFIG, errstr, errstr_size,
                            "invalid value for %s (not shown: %s)", name,
                            resolved ? "given by reference" : "a secret");
                else
                        err = kd_fail(KDELAY_ERR_CONFIG, errstr, errstr_size,
                                      "%s", why);
        }
        if (err == KDELAY_ERR_NO_MEMORY)
                kd_fail(err, errstr, errstr_size, "out of memory");
        kd_secret_free(resolved);
        return err;
}

/* Reads the Kafka client properties file at path (none when "") in place
 * of the one read before. */
static kdelay_err_t kfile_load(kdelay_conf_t *conf, const char *path,
                               char *errstr, size_t errstr_size)
{
        kfile_t kf = {NULL, NULL, 0, NULL, 0};
        kdelay_err_t err = KDELAY_OK;
        if (*path) {
                char why[700] = "";
                kf.check = rd_kafka_conf_new();
                err = kf.check ? kd_kprops_load(path, &kf.mode, kfile_prop, &kf,
                                                why, sizeof(why))
                               : KDELAY_ERR_NO_MEMORY;
                if (kf.check)
                        rd_kafka_conf_destroy(kf.check);
                if (err) {
                        kv_free(kf.kv, kf.cnt);
                        free(kf.brokers);
                        return kd_fail(err, errstr, errstr_size,
                                       "kafka_config: %s",
                                       kf.check ? why : "out of memory");
                }
        }
        kv_free(conf->kafka_file_kv, conf->kafka_file_kv_cnt);
        free(conf->kafka_file_brokers);
        conf->kafka_file_kv = kf.kv;
        conf->kafka_file_kv_cnt = kf.cnt;
        conf->kafka_file_brokers = kf.brokers;
        return KDELAY_OK;
}

const char *kd_conf_brokers(const kdelay_conf_t *conf)
{
        return conf->brokers_set || !conf->kafka_file_brokers
                   ? conf->brokers
                   : conf->kafka_file_brokers;
}

const char *kd_conf_kafka_value(const kdelay_conf_t *conf, const char *name)
{
        for (size_t i = 0; i + 1 < conf->kafka_kv_cnt; i += 2)
                if (!strcmp(conf->kafka_kv[i], name))
                        return conf->kafka_kv[i + 1];
        for (size_t i = 0; i + 1 < conf->kafka_file_kv_cnt; i += 2)
                if (!strcmp(conf->kafka_file_kv[i], name))
                        return conf->kafka_file_kv[i + 1];
        return NULL;
}

int kd_conf_name_is_secret(const char *name)
{
        static const char *const words[] = {"password", "secret", ".pem",
                                            "key"};
        for (size_t i = 0; i < KD_ARRAY_LEN(words); i++)
                if (strstr(name, words[i]))
                        return 1;
        return 0;
}

kdelay_err_t kdelay_conf_set_kafka(kdelay_conf_t *conf, const char *name,
                                   const char *value, char *errstr,
                                   size_t errstr_size)
{
        char why[512];
        char *resolved = NULL; /* owned: an env: or file: value's */
        if (!conf || !name || !value)
                return kd_fail(KDELAY_ERR_INVALID_ARG, errstr, errstr_size,
                               "conf, name and value are required");
        if (kd_secret_is_ref(value)) {
                kdelay_err_t err = kd_secret_resolve(name, value, &resolved,
                                                     errstr, errstr_size);
                if (err)
                        return err;
                value = resolved;
        }
        kdelay_err_t err = set_kafka(conf, name, value, why, sizeof(why));
        /* librdkafka's reason quotes the value: not one by reference. */
        if (err == KDELAY_ERR_CONFIG && resolved)
                snprintf(why, sizeof(why),
                         "invalid value for %s (given by reference, not "
                         "shown)",
                         name);
        kd_secret_free(resolved);
        return err ? kd_fail(err, errstr, errstr_size, "%s", why) : KDELAY_OK;
}

/* kdelay_conf_set_kafka of a plain value; the reason into why. */
static kdelay_err_t set_kafka(kdelay_conf_t *conf, const char *name,
                              const char *value, char *why, size_t why_size)
{
        rd_kafka_conf_res_t res =
            rd_kafka_conf_set(conf->rk_conf, name, value, why, why_size);
        /* librdkafka's reason quotes the value: not for a secret. */
        if (res == RD_KAFKA_CONF_INVALID && kd_conf_name_is_secret(name))
                snprintf(why, why_size,
                         "invalid value for %s (not shown: a secret)", name);
        switch (res) {
        case RD_KAFKA_CONF_OK: {
                kdelay_err_t err = kv_put(conf, name, value);
                if (err)
                        snprintf(why, why_size, "%s: out of memory", name);
                return err;
        }
        case RD_KAFKA_CONF_UNKNOWN:
                return KDELAY_ERR_UNKNOWN_PROPERTY;
        default:
                return KDELAY_ERR_CONFIG;
        }
}

kdelay_err_t kdelay_conf_set_pair(kdelay_conf_t *conf, const char *pair,
                                  char *errstr, size_t errstr_size)
{
        const char *eq = pair ? strchr(pair, '=') : NULL;
        char name[256];
        if (!eq || eq == pair || (size_t)(eq - pair) >= sizeof(name))
                return kd_fail(KDELAY_ERR_INVALID_ARG, errstr, errstr_size,
                               "expected name=value, got \"%s\"",
                               pair ? pair : "");
        memcpy(name, pair, (size_t)(eq - pair));
        name[eq - pair] = '\0';
        if (prop_find(name))
                return kdelay_conf_set(conf, name, eq + 1, errstr, errstr_size);
        return kdelay_conf_set_kafka(conf, name, eq + 1, errstr, errstr_size);
}

/* url with the password of its user part read back as "***" (into buf,
 * cut to it); "" for NULL. */
static const char *url_masked(const char *url, char *buf, size_t size)
{
        if (!url)
                return "";
        const char *user = strstr(url, "://");
        user = user ? user + 3 : url;
        size_t host_at = strcspn(user, "/?#");
        const char *at = NULL;
        for (const char *p = user; p < user + host_at; p++)
                if (*p == '@')
                        at = p; /* the last one: a password may hold '@' */
        const char *colon = at ? memchr(user, ':', (size_t)(at - user)) : NULL;
        if (!colon)
                return url;
        int n =
            snprintf(buf, size, "%.*s***%s", (int)(colon + 1 - url), url, at);
        return n >= 0 && (size_t)n < size ? buf : "***";
}

kdelay_err_t kdelay_conf_get(const kdelay_conf_t *conf, const char *name,
                             char *buf, size_t buf_size)
{
        const kd_prop_t *p = name ? prop_find(name) : NULL;
        if (!conf || !p)
                return KDELAY_ERR_UNKNOWN_PROPERTY;
        const void *field = (const char *)conf + p->offset;
        char tmp[1024] = "";
        const char *text = tmp; /* strings are read in place, whole */
        switch (p->type) {
        case KD_PROP_SECRET:
                text = *(char *const *)field ? "***" : "";
                break;
        case KD_PROP_MYSQLURL:
                text = url_masked(*(char *const *)field, tmp, sizeof(tmp));
                break;
        case KD_PROP_STRING:
        case KD_PROP_SSLMODE:
        case KD_PROP_TARGETS:
        case KD_PROP_RATES:
        case KD_PROP_LISTEN:
        case KD_PROP_KFILE:
        case KD_PROP_TOPICPFX: {
                const char *s = *(char *const *)field;
                text = s ? s : "";
                break;
        }
        case KD_PROP_INT:
                snprintf(tmp, sizeof(tmp), "%d", *(const int *)field);
                break;
        case KD_PROP_BYTES:
                snprintf(tmp, sizeof(tmp), "%lld",
                         (long long)*(const int64_t *)field);
                break;
        case KD_PROP_DURATION:
                kdelay_duration_format(*(const int64_t *)field, tmp,
                                       sizeof(tmp));
                break;
        case KD_PROP_TIERS:
                kd_tiers_format((const kd_tiers_t *)field, tmp, sizeof(tmp));
                break;
        case KD_PROP_DELIVERY:
        case KD_PROP_OUTAGE:
                kd_strlcpy(tmp, choice_names(p->type)[*(const int *)field],
                           sizeof(tmp));
                break;
        }
        if (strlen(text) >= buf_size)
                return KDELAY_ERR_INVALID_ARG;
        kd_strlcpy(buf, text, buf_size);
        return KDELAY_OK;
}

void kdelay_conf_set_log_cb(kdelay_conf_t *conf, kdelay_log_cb_t *cb,
                            kdelay_log_level_t max_level, void *opaque)
{
        conf->log_cb = cb;
        conf->log_level = max_level;
        conf->log_opaque = opaque;
}

/* --- the reference (docs/configuration.md) ------------------------------ */

/* The "values" cell of p: what prop_set accepts. */
static void prop_values(const kd_prop_t *p, char *buf, size_t size)
{
        switch (p->type) {
        case KD_PROP_STRING:
                snprintf(buf, size, "text");
                break;
        case KD_PROP_SECRET:
                snprintf(buf, size, "text, read back as `***`");
                break;
        case KD_PROP_TOPICPFX:
                snprintf(buf, size, "`[A-Za-z0-9._-]`, at most %d chars",
                         KD_TOPIC_PREFIX_MAX);
                break;
        case KD_PROP_MYSQLURL:
                snprintf(buf, size,
                         "`mysql://user[:password]@host[:port]/db[?ssl-mode="
                         "M&ssl-ca=F&ssl-cert=F&ssl-key=F]`, percent-encoded; "
                         "an IPv6 host in brackets (`[::1]`)");
                break;
        case KD_PROP_SSLMODE:
                snprintf(buf, size, "a TLS mode");
                break;
        case KD_PROP_TARGETS:
                snprintf(buf, size, "topic names and `prefix*` patterns");
                break;
        case KD_PROP_RATES:
                snprintf(buf, size,
                         "`TARGET=RATE[/BURST]` entries: a topic or "
                         "`prefix*`, fires per second 1 .. 1000000, burst "
                         "(default a tenth of the rate, at least 1)");
                break;
        case KD_PROP_LISTEN:
                snprintf(buf, size,
                         "`host:port`, `[v6]:port`; port 0 .. 65535");
                break;
        case KD_PROP_KFILE:
                snprintf(buf, size,
                         "a path; `name=value` lines, values may be "
                         "`env:`/`file:` references");
                break;
        case KD_PROP_INT:
                snprintf(buf, size, "integer, %d .. %d", p->min,
                         KD_PROP_INT_MAX);
                break;
        case KD_PROP_BYTES:
                snprintf(buf, size, "bytes, %d .. 2^40", p->min);
                break;
        case KD_PROP_DURATION:
                snprintf(buf, size, "duration");
                break;
        case KD_PROP_TIERS:
                snprintf(buf, size,
                         "durations, each > 0 and <= 10 years, no duplicates, "
                         "at most %d",
                         KD_TIERS_MAX);
                break;
        case KD_PROP_DELIVERY:
        case KD_PROP_OUTAGE:
                snprintf(buf, size, "`%s` or `%s`", choice_names(p->type)[0],
                         choice_names(p->type)[1]);
                break;
        }
        /* Text without a default: "" unsets it (prop_set). */
        if (p->type <= KD_PROP_MYSQLURL && !p->def) {
                size_t n = strlen(buf);
                snprintf(buf + n, size - n, "; empty = unset");
        }
}

/* Non-zero when s cannot stand in a table cell. */
static int cell_bad(const char *s)
{
        return !s || !*s || strpbrk(s, "|\n");
}

int kd_conf_write_reference(FILE *out)
{
        fputs("| property | default | values | meaning |\n"
              "|---|---|---|---|\n",
              out);
        for (size_t i = 0; i < KD_ARRAY_LEN(kd_props); i++) {
                const kd_prop_t *p = &kd_props[i];
                char values[256], def[128];
                prop_values(p, values, sizeof(values));
                if (p->def)
                        snprintf(def, sizeof(def), "`%s`", p->def);
                else
                        snprintf(def, sizeof(def), "%s",
                                 p->unset ? p->unset : "—");
                if (cell_bad(p->help) || cell_bad(def))
                        return -1;
                fprintf(out, "| `%s` | %s | %s | %s |\n", p->name, def, values,
                        p->help);
        }
        return ferror(out) ? -1 : 0;
}

/* --- libconfig files ---------------------------------------------------- */

static kdelay_err_t load_setting(kdelay_conf_t *conf, config_setting_t *s,
                                 const char *path, const char *file,
                                 char *errstr, size_t errstr_size);

static kdelay_err_t load_group(kdelay_conf_t *conf, config_setting_t *g,
                               const char *prefix, const char *file,
                               char *errstr, size_t errstr_size)
{
        int n = config_setting_length(g);
        for (int i = 0; i < n; i++) {
                config_setting_t *s = config_setting_get_elem(g, (unsigned)i);
                char path[256];
                snprintf(path, sizeof(path), "%s%s%s", prefix,
                         *prefix ? "." : "", config_setting_name(s));
                kdelay_err_t err =
                    load_setting(conf, s, path, file, errstr, errstr_size);
                if (err)
                        return err;
        }
        return KDELAY_OK;
}

/* Text form of a scalar setting; NULL for aggregates. */
static const char *scalar_text(config_setting_t *s, char *buf, size_t size)
{
        switch (config_setting_type(s)) {
        case CONFIG_TYPE_STRING:
                return config_setting_get_string(s);
        case CONFIG_TYPE_INT:
                snprintf(buf, size, "%d", config_setting_get_int(s));
                return buf;
        case CONFIG_TYPE_INT64:
                snprintf(buf, size, "%lld",
                         (long long)config_setting_get_int64(s));
                return buf;
        case CONFIG_TYPE_BOOL:
                return config_setting_get_bool(s) ? "true" : "false";
        case CONFIG_TYPE_FLOAT:
                snprintf(buf, size, "%g", config_setting_get_float(s));
                return buf;
        default:
                return NULL;
        }
}

static kdelay_err_t load_setting(kdelay_conf_t *conf, config_setting_t *s,
                                 const char *path, const char *file,
                                 char *errstr, size_t errstr_size)
{
        char why[512];
        char num[64];
        int line = config_setting_source_line(s);
        kdelay_err_t err = KDELAY_OK;

        if (config_setting_is_group(s))
                return load_group(conf, s, path, file, errstr, errstr_size);

        if (strcmp(path, "kafka") == 0 && config_setting_is_aggregate(s)) {
                /* librdkafka properties: [ "linger.ms=5", ... ] */
                for (int i = 0; i < config_setting_length(s); i++) {
                        const char *pair = config_setting_get_string_elem(s, i);
                        const char *eq = pair ? strchr(pair, '=') : NULL;
                        if (!eq || eq == pair) {
                                return kd_fail(KDELAY_ERR_CONFIG, errstr,
                                               errstr_size,
                                               "%s:%d: kafka: each entry "
                                               "must be \"property=value\"",
                                               file, line);
                        }
                        char name[256];
                        snprintf(name, sizeof(name), "%.*s", (int)(eq - pair),
                                 pair);
                        err = kdelay_conf_set_kafka(conf, name, eq + 1, why,
                                                    sizeof(why));
                        if (err)
                                return kd_fail(err, errstr, errstr_size,
                                               "%s:%d: kafka: %s", file, line,
                                               why);
                }
                return KDELAY_OK;
        }

        if ((!strcmp(path, "tiers") ||
             !strcmp(path, "forwarder.allowed_targets") ||
             !strcmp(path, "forwarder.target_rate_limits")) &&
            config_setting_is_aggregate(s)) {
                /* [ "1s", "1m", ... ] */
                kdelay_err_t list_err = strcmp(path, "tiers")
                                            ? KDELAY_ERR_CONFIG
                                            : KDELAY_ERR_INVALID_TIERS;
                char list[1024] = "";
                size_t off = 0;
                for (int i = 0; i < config_setting_length(s); i++) {
                        const char *t = config_setting_get_string_elem(s, i);
                        if (!t)
                                return kd_fail(list_err, errstr, errstr_size,
                                               "%s:%d: %s: each entry must "
                                               "be a string",
                                               file, line, path);
                        int w = snprintf(list + off, sizeof(list) - off, "%s%s",
                                         i ? "," : "", t);
                        if (w < 0 || (size_t)w >= sizeof(list) - off)
                                return kd_fail(list_err, errstr, errstr_size,
                                               "%s:%d: %s: list too long", file,
                                               line, path);
                        off += (size_t)w;
                }
                err = kdelay_conf_set(conf, path, list, why, sizeof(why));
        } else {
                const char *text = scalar_text(s, num, sizeof(num));
                if (!text)
                        return kd_fail(KDELAY_ERR_CONFIG, errstr, errstr_size,
                                       "%s:%d: %s: expected a single value",
                                       file, line, path);
                err = kdelay_conf_set(conf, path, text, why, sizeof(why));
        }
        if (err)
                return kd_fail(err, errstr, errstr_size, "%s:%d: %s", file,
                               line, why);
        return KDELAY_OK;
}

/* --- 64-bit integers in libconfig text ------------------------------------
 * libconfig 1.5 reads an integer written without an L suffix as an int and
 * wraps one that does not fit (5368709120 becomes 1073741824). Before
 * parsing, the text gets an L after each such integer, so that libconfig
 * reads it as a 64-bit one and its property's range check sees the value
 * written; an integer that does not fit 64 bits is refused. The scan skips
 * what libconfig's scanner skips (strings, comments, names) and tells
 * integers from floats as it does. Files read by `@include` are parsed by
 * libconfig alone. */

/* The longest config file read. */
#define KD_CONF_TEXT_MAX (4 * 1024 * 1024)

typedef struct int_scan {
        const char *s; /* the text */
        size_t n;      /* its length */
        size_t i;      /* the position */
        int line;      /* of s[i], from 1 */
        char *out;     /* the text with the suffixes added */
        size_t out_len;
} int_scan_t;

static int is_digit(char c)
{
        return c >= '0' && c <= '9';
}

static int is_hex_digit(char c)
{
        return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

static int is_name_start(char c)
{
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '*';
}

static int is_name_char(char c)
{
        return is_name_start(c) || is_digit(c) || c == '-' || c == '_';
}

/* Copies s[i, to) to the output, counting lines. */
static void scan_copy_to(int_scan_t *sc, size_t to)
{
        for (; sc->i < to; sc->i++) {
                sc->line += sc->s[sc->i] == '\n';
                sc->out[sc->out_len++] = sc->s[sc->i];
        }
}

/* The end of what starts at s[i], a string, a comment or a name; i when
 * nothing of the kind starts there. */
static size_t scan_skip_end(const int_scan_t *sc)
{
        const char *s = sc->s;
        size_t i = sc->i, n = sc->n;
        if (s[i] == '"') {
                for (i++; i < n && s[i] != '"'; i++)
                        if (s[i] == '\\' && i + 1 < n)
                                i++;
                return i < n ? i + 1 : n;
        }
        if (s[i] == '#' || (s[i] == '/' && i + 1 < n && s[i + 1] == '/')) {
                while (i < n && s[i] != '\n')
                        i++;
                return i;
        }
        if (s[i] == '/' && i + 1 < n && s[i + 1] == '*') {
                for (i += 2; i + 1 < n; i++)
                        if (s[i] == '*' && s[i + 1] == '/')
                                return i + 2;
                return n;
        }
        if (is_name_start(s[i])) {
                while (i < n && is_name_char(s[i]))
                        i++;
                return i;
        }
        return sc->i;
}

/* The end of the float whose digits before the point end at i (at '.',
 * 'e' or 'E'); i when no float continues there. */
static size_t scan_float_end(const char *s, size_t n, size_t i)
{
        size_t j = i;
        if (j < n && s[j] == '.')
                for (j++; j < n && is_digit(s[j]); j++)
                        ;
        if (j < n && (s[j] == 'e' || s[j] == 'E')) {
                size_t k = j + 1;
                if (k < n && (s[k] == '+' || s[k] == '-'))
                        k++;
                if (k < n && is_digit(s[k])) {
                        while (k < n && is_digit(s[k]))
                                k++;
                        j = k;
                }
        }
        return j;
}

/* 1 when a number starts at s[i]: a digit, or a sign or '.' before one
 * (a sign may also come before ".5"). */
static int scan_number_starts(const char *s, size_t n, size_t i)
{
        if (s[i] == '+' || s[i] == '-')
                i++;
        if (i < n && s[i] == '.')
                i++;
        return i < n && is_digit(s[i]);
}

/* The integer at s[start, end) (hex with 0x) into *v; -1 when it does not
 * fit 64 bits. */
static int scan_integer_value(const char *s, size_t start, size_t end, int hex,
                              long long *v)
{
        char digits[64];
        size_t len = end - start;
        if (len >= sizeof(digits))
                return -1;
        memcpy(digits, s + start, len);
        digits[len] = '\0';
        errno = 0;
        if (hex) {
                unsigned long long u = strtoull(digits, NULL, 16);
                if (errno || u > (unsigned long long)INT64_MAX)
                        return -1;
                *v = (long long)u;
                return 0;
        }
        *v = strtoll(digits, NULL, 10);
        return errno ? -1 : 0;
}

/* Copies the number starting at s[i] (scan_number_starts), with an L added
 * to an integer that needs 64 bits; -1 for an integer that does not fit
 * them. */
static int scan_number(int_scan_t *sc)
{
        const char *s = sc->s;
        size_t n = sc->n, start = sc->i, j = start;
        int hex = s[j] == '0' && j + 2 < n &&
                  (s[j + 1] == 'x' || s[j + 1] == 'X') &&
                  is_hex_digit(s[j + 2]);
        if (hex) {
                for (j += 2; j < n && is_hex_digit(s[j]); j++)
                        ;
        } else {
                if (s[j] == '+' || s[j] == '-')
                        j++;
                while (j < n && is_digit(s[j]))
                        j++;
                size_t f = scan_float_end(s, n, j);
                if (f > j) { /* a float: as libconfig, the longest token */
                        scan_copy_to(sc, f);
                        return 0;
                }
        }
        long long v;
        if (scan_integer_value(s, start, j, hex, &v))
                return -1;
        scan_copy_to(sc, j);
        if ((j >= n || s[j] != 'L') && (v < INT_MIN || v > INT_MAX))
                sc->out[sc->out_len++] = 'L';
        return 0;
}

/* text with an L after each integer that needs 64 bits, into *outp (caller
 * frees); an error naming `name` and the line for one that does not fit
 * them. */
static kdelay_err_t mark_int64(const char *text, const char *name, char **outp,
                               char *errstr, size_t errstr_size)
{
        size_t n = strlen(text);
        /* An L follows an integer of at least 10 characters. */
        int_scan_t sc = {text, n, 0, 1, malloc(n + n / 10 + 2), 0};
        if (!sc.out)
                return kd_fail(KDELAY_ERR_NO_MEMORY, errstr, errstr_size,
                               "out of memory");
        while (sc.i < n) {
                size_t i = sc.i, end = scan_skip_end(&sc);
                if (end > i) {
                        scan_copy_to(&sc, end);
                } else if (!scan_number_starts(text, n, i)) {
                        scan_copy_to(&sc, i + 1);
                } else if (scan_number(&sc)) {
                        size_t len =
                            strspn(text + i, "+-0123456789abcdefABCDEFxX");
                        kdelay_err_t err = kd_fail(
                            KDELAY_ERR_CONFIG, errstr, errstr_size,
                            "%s:%d: integer %.*s%s does not fit 64 bits", name,
                            sc.line, (int)(len > 40 ? 40 : len), text + i,
                            len > 40 ? "..." : "");
                        free(sc.out);
                        return err;
                }
        }
        sc.out[sc.out_len] = '\0';
        *outp = sc.out;
        return KDELAY_OK;
}

/* Applies the settings of cfg, read (ok) from `name`, to conf. */
static kdelay_err_t load_config(kdelay_conf_t *conf, config_t *cfg, int ok,
                                const char *name, char *errstr,
                                size_t errstr_size)
{
        if (!ok)
                return kd_fail(KDELAY_ERR_CONFIG, errstr, errstr_size,
                               "%s:%d: %s", name, config_error_line(cfg),
                               config_error_text(cfg));
        return load_group(conf, config_root_setting(cfg), "", name, errstr,
                          errstr_size);
}

/* Parses text, read from `name`, and applies its settings to conf. */
static kdelay_err_t load_marked_text(kdelay_conf_t *conf, const char *text,
                                     const char *name, char *errstr,
                                     size_t errstr_size)
{
        char *marked = NULL;
        kdelay_err_t err = mark_int64(text, name, &marked, errstr, errstr_size);
        if (err)
                return err;
        config_t cfg;
        config_init(&cfg);
        int ok = config_read_string(&cfg, marked);
        err = load_config(conf, &cfg, ok, name, errstr, errstr_size);
        config_destroy(&cfg);
        free(marked);
        return err;
}

/* The whole of f into *textp (caller frees), its length into *lenp; -1
 * with errno, or with errno EFBIG past KD_CONF_TEXT_MAX. */
static int read_text(FILE *f, char **textp, size_t *lenp)
{
        size_t len = 0, cap = 4096;
        char *text = malloc(cap);
        while (text) {
                len += fread(text + len, 1, cap - len - 1, f);
                if (ferror(f)) {
                        free(text);
                        return -1;
                }
                if (feof(f)) {
                        text[len] = '\0';
                        *textp = text;
                        *lenp = len;
                        return 0;
                }
                if (cap >= KD_CONF_TEXT_MAX) {
                        free(text);
                        errno = EFBIG;
                        return -1;
                }
                char *bigger = realloc(text, cap * 2);
                if (!bigger)
                        free(text);
                text = bigger;
                cap *= 2;
        }
        errno = ENOMEM;
        return -1;
}

kdelay_err_t kdelay_conf_load_file(kdelay_conf_t *conf, const char *path,
                                   char *errstr, size_t errstr_size)
{
        if (!conf || !path)
                return kd_fail(KDELAY_ERR_INVALID_ARG, errstr, errstr_size,
                               "conf and path are required");
        FILE *f = fopen(path, "r");
        char *text = NULL;
        size_t len = 0;
        if (!f || read_text(f, &text, &len)) {
                int e = errno;
                if (f)
                        fclose(f);
                return kd_fail(KDELAY_ERR_CONFIG, errstr, errstr_size, "%s: %s",
                               path,
                               e == EFBIG ? "larger than 4 MiB" : strerror(e));
        }
        fclose(f);
        kdelay_err_t err =
            strlen(text) != len
                ? kd_fail(KDELAY_ERR_CONFIG, errstr, errstr_size,
                          "%s: holds a NUL byte", path)
                : load_marked_text(conf, text, path, errstr, errstr_size);
        free(text);
        return err;
}

kdelay_err_t kd_conf_load_text(kdelay_conf_t *conf, const char *text,
                               const char *name, char *errstr,
                               size_t errstr_size)
{
        if (!conf || !text || !name)
                return kd_fail(KDELAY_ERR_INVALID_ARG, errstr, errstr_size,
                               "conf, text and name are required");
        return load_marked_text(conf, text, name, errstr, errstr_size);
}

/* --- helpers for the modules -------------------------------------------- */

void kd_conf_dead_topic(const kdelay_conf_t *conf, char *buf, size_t size)
{
        snprintf(buf, size, "%s.dead", conf->topic_prefix);
}

void kd_conf_journal_topic(const kdelay_conf_t *conf, char *buf, size_t size)
{
        snprintf(buf, size, "%s.journal", conf->topic_prefix);
}

int kd_conf_is_own_topic(const kdelay_conf_t *conf, const char *topic)
{
        /* Each is "<prefix>.<name>": most targets are not (checked per task
         * read, so without formatting a name first). */
        size_t n = strlen(conf->topic_prefix);
        if (strncmp(topic, conf->topic_prefix, n) != 0 || topic[n] != '.')
                return 0;
        char name[256];
        kd_conf_dead_topic(conf, name, sizeof(name));
        if (strcmp(name, topic) == 0)
                return 1;
        kd_conf_journal_topic(conf, name, sizeof(name));
        if (strcmp(name, topic) == 0)
                return 1;
        /* Any tier topic, in the ladder or not: the forwarders read them
         * all. */
        int64_t ms;
        return kd_tiers_topic_delay(conf->topic_prefix, topic, &ms) == 0;
}

int64_t kd_conf_tier_retention_ms(const kdelay_conf_t *conf, size_t idx)
{
        return conf->tiers.v[idx].delay_ms * 2 +
               conf->topics_retention_margin_ms;
}

int kd_conf_rk_log_level(int level, const char *fac, const char *msg)
{
        static const char failed[] = "Failed to acquire idempotence PID ";
        static const char retrying[] = ": retrying";
        size_t n = msg ? strlen(msg) : 0;
        /* After librdkafka's "[thrd:NAME]: " (log.thread.name) */
        if (n && msg[0] == '[' && strstr(msg, "]: ")) {
                const char *rest = strstr(msg, "]: ") + 3;
                n -= (size_t)(rest - msg);
                msg = rest;
        }
        if (level >= KDELAY_LOG_WARNING && level < KDELAY_LOG_INFO && fac &&
            !strcmp(fac, "GETPID") &&
            !strncmp(msg, failed, sizeof(failed) - 1) &&
            (strstr(msg, ": Coordinator load in progress") ||
             strstr(msg, ": Coordinator not available")) &&
            n >= sizeof(retrying) - 1 &&
            !strcmp(msg + n - (sizeof(retrying) - 1), retrying))
                return KDELAY_LOG_INFO;
        return level;
}

static void rk_log_cb(const rd_kafka_t *rk, int level, const char *fac,
                      const char *buf)
{
        const kd_rk_owner_t *owner = rd_kafka_opaque(rk);
        const kdelay_conf_t *conf = owner ? owner->conf : NULL;
        char qname[300], qfac[64], qmsg[640];
        level = kd_conf_rk_log_level(level, fac, buf);
        if (level > KDELAY_LOG_DEBUG)
                level = KDELAY_LOG_DEBUG;
        if (level < KDELAY_LOG_ERROR)
                level = KDELAY_LOG_ERROR;
        kd_log(conf, (kdelay_log_level_t)level,
               "event=rdkafka client=%s fac=%s msg=%s",
               kd_log_quote(rd_kafka_name(rk), qname, sizeof(qname)),
               kd_log_quote(fac, qfac, sizeof(qfac)),
               kd_log_quote(buf, qmsg, sizeof(qmsg)));
}

/* Applies NULL-terminated name,value pairs to rkc. */
static int rk_apply(rd_kafka_conf_t *rkc, const char *const *kv,
                    const char *what, char *errstr, size_t errstr_size)
{
        char why[512];
        for (size_t i = 0; kv && kv[i]; i += 2) {
                if (rd_kafka_conf_set(rkc, kv[i], kv[i + 1], why,
                                      sizeof(why)) != RD_KAFKA_CONF_OK) {
                        kd_fail(KDELAY_ERR_CONFIG, errstr, errstr_size,
                                "%s property %s=%s: %s", what, kv[i], kv[i + 1],
                                why);
                        return -1;
                }
        }
        return 0;
}

rd_kafka_conf_t *kd_conf_rk_conf(const kdelay_conf_t *conf,
                                 kd_rk_owner_t *owner,
                                 const char *const *defaults,
                                 const char *const *forced, char *errstr,
                                 size_t errstr_size)
{
        rd_kafka_conf_t *rkc = rd_kafka_conf_new();
        const char *brokers[] = {"bootstrap.servers", kd_conf_brokers(conf),
                                 NULL};
        if (!rkc) {
                kd_fail(KDELAY_ERR_NO_MEMORY, errstr, errstr_size,
                        "out of memory");
                return NULL;
        }
        /* User properties are NULL-terminated by construction below. */
        char **user = calloc(conf->kafka_kv_cnt + 1, sizeof(*user));
        if (!user) {
                rd_kafka_conf_destroy(rkc);
                kd_fail(KDELAY_ERR_NO_MEMORY, errstr, errstr_size,
                        "out of memory");
                return NULL;
        }
        for (size_t i = 0; i < conf->kafka_kv_cnt; i++)
                user[i] = conf->kafka_kv[i];
        char **file = calloc(conf->kafka_file_kv_cnt + 1, sizeof(*file));
        for (size_t i = 0; file && i < conf->kafka_file_kv_cnt; i++)
                file[i] = conf->kafka_file_kv[i];
        if (!file) {
                free(user);
                rd_kafka_conf_destroy(rkc);
                kd_fail(KDELAY_ERR_NO_MEMORY, errstr, errstr_size,
                        "out of memory");
                return NULL;
        }
        int bad = rk_apply(rkc, defaults, "default", errstr, errstr_size) ||
                  rk_apply(rkc, brokers, "brokers", errstr, errstr_size) ||
                  rk_apply(rkc, (const char *const *)file, "kafka_config",
                           errstr, errstr_size) ||
                  rk_apply(rkc, (const char *const *)user, "kafka", errstr,
                           errstr_size) ||
                  rk_apply(rkc, forced, "required", errstr, errstr_size);
        free(user);
        free(file);
        if (bad) {
                rd_kafka_conf_destroy(rkc);
                return NULL;
        }
        rd_kafka_conf_set_opaque(rkc, owner);
        rd_kafka_conf_set_log_cb(rkc, rk_log_cb);
        return rkc;
}

rd_kafka_t *kd_conf_rk_new(kd_rk_owner_t *owner, rd_kafka_type_t type,
                           const char *const *forced, char *errstr,
                           size_t errstr_size)
{
        char why[512];
        rd_kafka_conf_t *rkc = kd_conf_rk_conf(owner->conf, owner, NULL, forced,
                                               errstr, errstr_size);
        if (!rkc)
                return NULL;
        rd_kafka_t *rk = rd_kafka_new(type, rkc, why, sizeof(why));
        if (!rk) {
                rd_kafka_conf_destroy(rkc);
                kd_fail(KDELAY_ERR_KAFKA, errstr, errstr_size,
                        "cannot create Kafka client: %s", why);
        }
        return rk;
}
